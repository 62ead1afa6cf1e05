//! The HTTP/1.1 the partition API speaks, sans-IO: a request head read from the bytes
//! that arrived ([`parse_head`]), HTTP basic credentials ([`Head::basic_auth`]), and a
//! response written as bytes ([`response`]).
//!
//! Only what its clients send is taken (RFC 9112): one request per connection (every
//! answer says `Connection: close`), a body by `Content-Length` (a chunked body is
//! refused with 411, which Go's and curl's clients never send for a known-size body),
//! a head of at most [`MAX_HEAD`] bytes and a body of at most [`MAX_BODY`]. Standard
//! library only, so the fuzz crate builds this file as a module of its own.

/// Most bytes of a request head (request line and headers).
pub(crate) const MAX_HEAD: usize = 16 * 1024;

/// Most bytes of a request body (a change of ~25,000 GUIDs).
pub(crate) const MAX_BODY: usize = 1 << 20;

/// Most header lines.
const MAX_HEADERS: usize = 64;

/// Why a request head is refused; each maps to a status ([`HttpError::status`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HttpError {
    /// No blank line within [`MAX_HEAD`] bytes, or more than [`MAX_HEADERS`] lines.
    #[error("request head longer than {MAX_HEAD} bytes or {MAX_HEADERS} header lines")]
    HeadTooLarge,
    /// The head is not UTF-8 text.
    #[error("request head is not UTF-8")]
    NotText,
    /// Not `METHOD TARGET HTTP/1.x`.
    #[error("bad request line {0:?}")]
    RequestLine(String),
    /// A header line without `:`, or with a name that is not a token.
    #[error("bad header line {0:?}")]
    Header(String),
    /// `Content-Length` not a number, or given twice with different values.
    #[error("bad Content-Length {0:?}")]
    ContentLength(String),
    /// A body larger than [`MAX_BODY`].
    #[error("body of {0} bytes is larger than {MAX_BODY}")]
    BodyTooLarge(usize),
    /// `Transfer-Encoding` (a chunked body): send `Content-Length`.
    #[error("Transfer-Encoding is not supported: send Content-Length")]
    Chunked,
}

impl HttpError {
    /// The status the error is answered with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::HeadTooLarge => 431,
            Self::BodyTooLarge(_) => 413,
            Self::Chunked => 411,
            _ => 400,
        }
    }
}

/// A request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The method, as sent (methods are case-sensitive).
    pub(crate) method: String,
    /// The request target (origin form: path and query).
    pub(crate) target: String,
    /// Header fields in order, names as sent.
    pub(crate) headers: Vec<(String, String)>,
    /// The body's length (0 without `Content-Length`).
    pub(crate) content_length: usize,
}

impl Head {
    /// The first value of header `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The user and password of an `Authorization: Basic` header (RFC 7617), if one
    /// is there and decodes.
    pub(crate) fn basic_auth(&self) -> Option<(String, String)> {
        let v = self.header("authorization")?.trim();
        let (scheme, creds) = v.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("basic") {
            return None;
        }
        let text = String::from_utf8(base64_decode(creds.trim())?).ok()?;
        let (user, pass) = text.split_once(':')?;
        Some((user.to_owned(), pass.to_owned()))
    }
}

/// A token character of a method or header name (RFC 9110 5.6.2).
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Reads a request head from the start of `buf`: `Ok(None)` while its blank line has
/// not arrived, else the head and the bytes it took (the body starts there).
///
/// # Errors
/// [`HttpError`] for a head that is too long, not text, or malformed, and for a body
/// that is too large or chunked.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, HttpError> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        // A head that cannot end within the limit is refused before it all arrived.
        return if buf.len() > MAX_HEAD {
            Err(HttpError::HeadTooLarge)
        } else {
            Ok(None)
        };
    };
    if end + 4 > MAX_HEAD {
        return Err(HttpError::HeadTooLarge);
    }
    let text = std::str::from_utf8(&buf[..end]).map_err(|_| HttpError::NotText)?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("");
    let bad_line = || HttpError::RequestLine(line.chars().take(80).collect());
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad_line());
    };
    if method.is_empty()
        || !method.chars().all(is_tchar)
        || !target.starts_with('/')
        || !matches!(version, "HTTP/1.1" | "HTTP/1.0")
    {
        return Err(bad_line());
    }
    let mut headers = Vec::new();
    let mut content_length: Option<usize> = None;
    for l in lines {
        if headers.len() == MAX_HEADERS {
            return Err(HttpError::HeadTooLarge);
        }
        let bad = || HttpError::Header(l.chars().take(80).collect());
        let (name, value) = l.split_once(':').ok_or_else(bad)?;
        if name.is_empty() || !name.chars().all(is_tchar) {
            return Err(bad());
        }
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HttpError::Chunked);
        }
        if name.eq_ignore_ascii_case("content-length") {
            let bad_len = || HttpError::ContentLength(value.chars().take(40).collect());
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad_len());
            }
            let n: usize = value.parse().map_err(|_| bad_len())?;
            if content_length.is_some_and(|m| m != n) {
                return Err(bad_len());
            }
            content_length = Some(n);
        }
        headers.push((name.to_owned(), value.to_owned()));
    }
    let content_length = content_length.unwrap_or(0);
    if content_length > MAX_BODY {
        return Err(HttpError::BodyTooLarge(content_length));
    }
    Ok(Some((
        Head {
            method: method.to_owned(),
            target: target.to_owned(),
            headers,
            content_length,
        },
        end + 4,
    )))
}

/// The reason phrase of the statuses the API answers with.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// A whole response: status line, `Content-Type: application/json`, the length,
/// `Connection: close`, the `extra` header lines, and `body`.
pub(crate) fn response(status: u16, extra: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(status),
        body.len()
    );
    for (n, v) in extra {
        head.push_str(n);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Standard base64 (RFC 4648 section 4, with padding) decoded, or `None`.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// Standard base64 with padding (the tests' and the fuzz target's `Authorization`).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn base64_encode(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}
