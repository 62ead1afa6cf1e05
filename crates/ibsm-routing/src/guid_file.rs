//! OpenSM's GUID list files: `root_guid_file` (updn, dnup, ftree, dfsssp's up-first
//! pass), `cn_guid_file` and `io_guid_file` (ftree) and `guid_routing_order_file`.
//!
//! One GUID per line, as OpenSM reads them with `strtoull(.., 0)`: `0x` hex, a leading
//! `0` octal, else decimal. Blank lines and `#` comments (whole line or after the GUID)
//! are skipped.

use ibsm_topology::Guid;

/// A line of a GUID file that is not a GUID: the file, the 1-based line and the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {token:?} is not a GUID ({why})")]
pub struct GuidFileError {
    /// The file's name as given (or what the caller called the text).
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// The offending token.
    pub token: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// Parses one GUID as `strtoull(.., 0)` would, refusing anything left over.
fn parse_guid(token: &str) -> Result<u64, &'static str> {
    let (digits, radix) = if let Some(h) = token
        .strip_prefix("0x")
        .or_else(|| token.strip_prefix("0X"))
    {
        (h, 16)
    } else if token.len() > 1 && token.starts_with('0') {
        (&token[1..], 8)
    } else {
        (token, 10)
    };
    if digits.is_empty() {
        return Err("no digits");
    }
    u64::from_str_radix(digits, radix).map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => "more than 64 bits",
        _ => "bad digit",
    })
}

/// Parses the text of a GUID file; `file` names it in errors.
///
/// # Errors
/// [`GuidFileError`] for the first line that holds something other than one GUID and an
/// optional comment.
pub fn parse_guid_file(file: &str, text: &str) -> Result<Vec<Guid>, GuidFileError> {
    let mut out = Vec::new();
    for (n, body) in ibsm_topology::lines::content_lines(text) {
        // `content_lines` gives trimmed, non-empty text: the first token is there.
        let (first, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let err = |token: &str, why| GuidFileError {
            file: file.to_owned(),
            line: n,
            token: token.to_owned(),
            why,
        };
        let g = parse_guid(first).map_err(|why| err(first, why))?;
        if let Some(extra) = rest.split_whitespace().next() {
            return Err(err(extra, "one GUID per line"));
        }
        out.push(Guid(g));
    }
    Ok(out)
}

/// A GUID file that could not be used: not readable, or a line that is not a GUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadGuidFileError {
    /// The file could not be read.
    #[error("{file}: {error}")]
    Io {
        /// The path as given.
        file: String,
        /// What the system said.
        error: String,
    },
    /// A line of it is not a GUID.
    #[error(transparent)]
    Parse(#[from] GuidFileError),
}

/// Reads and parses the GUID file at `path` ([`parse_guid_file`]).
///
/// # Errors
/// [`ReadGuidFileError::Io`] when it cannot be read, [`ReadGuidFileError::Parse`] with
/// the line and token of the first line that is not a GUID.
pub fn read_guid_file(path: &std::path::Path) -> Result<Vec<Guid>, ReadGuidFileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ReadGuidFileError::Io {
        file: file.clone(),
        error: e.to_string(),
    })?;
    Ok(parse_guid_file(&file, &text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_comments_and_blank_lines() {
        let text = "# roots\n0x0002c90300a1b2c3\n\n  0X10 # spine 2\n017\n42\n";
        assert_eq!(
            parse_guid_file("roots", text).unwrap(),
            [
                Guid(0x0002_c903_00a1_b2c3),
                Guid(0x10),
                Guid(0o17),
                Guid(42)
            ]
        );
        assert_eq!(parse_guid_file("empty", "").unwrap(), []);
    }

    #[test]
    fn a_bad_line_is_reported_with_its_number_and_token() {
        let e = parse_guid_file("roots.txt", "0x1\n\n0xzz12\n").unwrap_err();
        assert_eq!((e.line, e.token.as_str()), (3, "0xzz12"));
        assert_eq!(
            e.to_string(),
            "roots.txt:3: \"0xzz12\" is not a GUID (bad digit)"
        );
        let e = parse_guid_file("f", "0x1 0x2\n").unwrap_err();
        assert_eq!(
            (e.line, e.token.as_str(), e.why),
            (1, "0x2", "one GUID per line")
        );
        let e = parse_guid_file("f", "0x1ffffffffffffffff\n").unwrap_err();
        assert_eq!(e.why, "more than 64 bits");
        assert_eq!(parse_guid_file("f", "0x\n").unwrap_err().why, "no digits");
        assert!(parse_guid_file("f", "09\n").is_err(), "octal has no 9");
    }

    #[test]
    fn a_file_is_read_or_its_error_names_it() {
        let dir = std::env::temp_dir().join(format!("ibsm-guid-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("roots");
        std::fs::write(&good, "0x10\n0x20 # spine\n").unwrap();
        assert_eq!(read_guid_file(&good).unwrap(), [Guid(0x10), Guid(0x20)]);
        let bad = dir.join("bad");
        std::fs::write(&bad, "0x10\nspine1\n").unwrap();
        match read_guid_file(&bad).unwrap_err() {
            ReadGuidFileError::Parse(e) => {
                assert_eq!((e.line, e.token.as_str()), (2, "spine1"));
                assert_eq!(e.file, bad.display().to_string());
            }
            e => panic!("{e:?}"),
        }
        let missing = dir.join("missing");
        let e = read_guid_file(&missing).unwrap_err();
        assert!(matches!(e, ReadGuidFileError::Io { .. }), "{e:?}");
        assert!(e.to_string().starts_with(&missing.display().to_string()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
