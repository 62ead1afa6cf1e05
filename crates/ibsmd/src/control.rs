//! The control socket: a local Unix stream socket, owner-only (0600), on which a client
//! sends one request per line ([`proto`]) and gets one JSON [`Response`] line back.
//!
//! The daemon's run loop calls [`ControlServer::poll`] once per slice: it accepts, reads
//! what arrived without blocking, and answers every complete line through [`answer`] and
//! the daemon's [`Host`]. A line that is not a request gets an error response; the
//! connection and the daemon carry on. The client side ([`request`]) is what
//! `ibsmd status | sweep [--heavy] | rebalance | dump | log-level LEVEL` run.

use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::status::Status;

pub(crate) mod proto;

pub(crate) use proto::{Level, ParseError, Request};

/// Most clients connected at once; more are told so and disconnected.
const MAX_CLIENTS: usize = 16;

/// How long writing a response to a client that does not read may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// One response line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Response {
    /// Whether the request was carried out.
    pub(crate) ok: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// What was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    /// The status (`status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<Box<Status>>,
}

impl Response {
    /// Done, with a message.
    #[must_use]
    pub(crate) fn done(message: impl Into<String>) -> Self {
        Self {
            ok: true,
            message: Some(message.into()),
            ..Self::default()
        }
    }

    /// Refused or failed.
    #[must_use]
    pub(crate) fn failed(error: impl Into<String>) -> Self {
        Self {
            ok: false,
            error: Some(error.into()),
            ..Self::default()
        }
    }

    /// The JSON line, newline included.
    #[must_use]
    pub(crate) fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"ok\":false,\"error\":\"response: {e}\"}}"));
        s.push('\n');
        s
    }
}

/// What the daemon does for the requests.
pub(crate) trait Host {
    /// The status now.
    fn status(&mut self) -> Status;
    /// Starts a sweep (heavy or light); `Err` says why not.
    ///
    /// # Errors
    /// Why no sweep is started (not Master, a sweep runs).
    fn sweep(&mut self, heavy: bool) -> Result<String, String>;
    /// Asks for a rebalance.
    ///
    /// # Errors
    /// Why not (not Master).
    fn rebalance(&mut self) -> Result<String, String>;
    /// Writes the dumps now.
    ///
    /// # Errors
    /// No dump directory, or writing failed.
    fn dump(&mut self) -> Result<String, String>;
    /// Sets the log level.
    ///
    /// # Errors
    /// The logger cannot be changed.
    fn set_log_level(&mut self, level: Level) -> Result<String, String>;
}

/// The response to one parsed line.
pub(crate) fn answer(host: &mut impl Host, req: Result<Request, ParseError>) -> Response {
    let done = |r: Result<String, String>| r.map_or_else(Response::failed, Response::done);
    match req {
        Err(e) => Response::failed(e.to_string()),
        Ok(Request::Status) => Response {
            ok: true,
            status: Some(Box::new(host.status())),
            ..Response::default()
        },
        Ok(Request::Sweep { heavy }) => done(host.sweep(heavy)),
        Ok(Request::Rebalance) => done(host.rebalance()),
        Ok(Request::Dump) => done(host.dump()),
        Ok(Request::LogLevel(l)) => done(host.set_log_level(l)),
    }
}

/// The socket's path when `--control-socket` is not given: `$XDG_RUNTIME_DIR/ibsmd.sock`
/// for a user with a runtime directory, else `/run/ibsmd.sock` (root, systemd services).
#[must_use]
pub(crate) fn default_path() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("ibsmd.sock"),
        _ => PathBuf::from("/run/ibsmd.sock"),
    }
}

/// The control socket could not be opened.
#[derive(Debug)]
pub(crate) struct BindError {
    /// The socket's path.
    pub(crate) path: PathBuf,
    /// What failed.
    pub(crate) source: io::Error,
}

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "control socket {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for BindError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

struct Conn {
    stream: UnixStream,
    buf: Vec<u8>,
    /// Skipping the rest of a line that was too long (already answered).
    discarding: bool,
}

/// The daemon's side of the socket.
pub(crate) struct ControlServer {
    path: PathBuf,
    listener: UnixListener,
    clients: Vec<Conn>,
}

impl std::fmt::Debug for ControlServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlServer")
            .field("path", &self.path)
            .field("clients", &self.clients.len())
            .finish()
    }
}

impl ControlServer {
    /// Creates the socket at `path`, mode 0600. A stale socket there (no daemon answers
    /// on it) is replaced; a live one is an error, as is any other file.
    ///
    /// The socket is bound inside a fresh 0700 directory beside `path`, made 0600, then
    /// renamed into place: no other user can connect in between.
    ///
    /// # Errors
    /// [`BindError`] naming the path.
    pub(crate) fn bind(path: &Path) -> Result<Self, BindError> {
        let err = |source| BindError {
            path: path.to_owned(),
            source,
        };
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            use std::os::unix::fs::FileTypeExt;
            if !meta.file_type().is_socket() {
                return Err(err(io::Error::new(
                    ErrorKind::AlreadyExists,
                    "exists and is not a socket",
                )));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(err(io::Error::new(
                    ErrorKind::AddrInUse,
                    "another ibsmd answers on it",
                )));
            }
            std::fs::remove_file(path).map_err(err)?;
        }
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .ok_or_else(|| err(io::Error::new(ErrorKind::InvalidInput, "no file name")))?;
        let private = parent.join(format!(
            ".{}.{}.d",
            name.to_string_lossy(),
            std::process::id()
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&private)
            .map_err(err)?;
        let inner = private.join("s");
        let bound = (|| {
            let listener = UnixListener::bind(&inner)?;
            std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o600))?;
            std::fs::rename(&inner, path)?;
            listener.set_nonblocking(true)?;
            Ok(listener)
        })();
        let _ = std::fs::remove_file(&inner);
        let _ = std::fs::remove_dir(&private);
        Ok(Self {
            path: path.to_owned(),
            listener: bound.map_err(err)?,
            clients: Vec::new(),
        })
    }

    /// The socket's path.
    #[must_use]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Accepts new clients, reads what they sent without blocking and answers each
    /// complete line with `handle`'s response. Never fails: a client that misbehaves
    /// (closes, stops reading) is dropped.
    pub(crate) fn poll(&mut self, mut handle: impl FnMut(Result<Request, ParseError>) -> Response) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if self.clients.len() >= MAX_CLIENTS {
                        let mut c = Conn::new(stream);
                        let _ = c.send(&Response::failed("too many clients"));
                        continue;
                    }
                    if stream.set_nonblocking(true).is_ok() {
                        self.clients.push(Conn::new(stream));
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    if e.kind() != ErrorKind::WouldBlock {
                        tracing::warn!("control socket: accept: {e}");
                    }
                    break;
                }
            }
        }
        self.clients.retain_mut(|c| c.serve(&mut handle));
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Conn {
    fn new(stream: UnixStream) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            discarding: false,
        }
    }

    fn send(&mut self, r: &Response) -> io::Result<()> {
        self.stream.set_nonblocking(false)?;
        self.stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
        let res = self.stream.write_all(r.to_line().as_bytes());
        self.stream.set_nonblocking(true)?;
        res
    }

    /// Reads and answers; `false` when the client is gone.
    fn serve(&mut self, handle: &mut impl FnMut(Result<Request, ParseError>) -> Response) -> bool {
        let mut chunk = [0u8; 1024];
        let mut open = true;
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    open = false;
                    break;
                }
                Ok(n) => {
                    if !self.take(&chunk[..n], handle) {
                        return false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => return false,
            }
        }
        open
    }

    /// Answers the complete lines in `bytes` (after what is buffered); `false` when a
    /// response could not be written.
    fn take(
        &mut self,
        bytes: &[u8],
        handle: &mut impl FnMut(Result<Request, ParseError>) -> Response,
    ) -> bool {
        for &b in bytes {
            if b != b'\n' {
                if self.discarding {
                    continue;
                }
                self.buf.push(b);
                if self.buf.len() > proto::MAX_LINE {
                    let len = self.buf.len();
                    self.buf.clear();
                    self.discarding = true;
                    if self
                        .send(&handle(Err(ParseError::TooLong { len })))
                        .is_err()
                    {
                        return false;
                    }
                }
                continue;
            }
            if std::mem::take(&mut self.discarding) {
                continue;
            }
            let line = std::mem::take(&mut self.buf);
            if self.send(&handle(proto::parse(&line))).is_err() {
                return false;
            }
        }
        true
    }
}

/// The client could not get an answer.
#[derive(Debug)]
pub(crate) enum ClientError {
    /// Connecting failed (no daemon there, or no permission).
    Connect(PathBuf, io::Error),
    /// Sending or receiving failed (the daemon went away, or took too long).
    Io(PathBuf, io::Error),
    /// The answer is not a response line.
    BadResponse(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Connect(p, e) => write!(
                f,
                "cannot connect to {} ({e}): is ibsmd running with this --control-socket?",
                p.display()
            ),
            ClientError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            ClientError::BadResponse(l) => write!(f, "not a response: {l:?}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Sends `req` to the daemon at `path` and waits up to `timeout` for its response.
///
/// # Errors
/// [`ClientError`].
pub(crate) fn request(
    path: &Path,
    req: Request,
    timeout: Duration,
) -> Result<Response, ClientError> {
    let stream = UnixStream::connect(path).map_err(|e| ClientError::Connect(path.to_owned(), e))?;
    let io = |e| ClientError::Io(path.to_owned(), e);
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    (&stream)
        .write_all(format!("{req}\n").as_bytes())
        .map_err(io)?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).map_err(io)?;
    serde_json::from_str(line.trim_end()).map_err(|_| ClientError::BadResponse(line))
}

/// Runs a client command: prints the response (its JSON line with `json`, else for a
/// person) and returns the exit code: 0 done, 1 refused or failed, 2 no answer.
#[must_use]
pub(crate) fn run_client(path: &Path, req: Request, json: bool) -> i32 {
    // A dump or a sweep request is answered between two slices of the run loop.
    match request(path, req, Duration::from_secs(30)) {
        Ok(r) => {
            if json {
                print!("{}", r.to_line());
            } else if let Some(s) = &r.status {
                print!("{}", s.human());
            } else if let Some(m) = &r.message {
                println!("{m}");
            }
            if let (false, Some(e)) = (json, &r.error) {
                eprintln!("ibsmd: {req}: {e}");
            }
            i32::from(!r.ok)
        }
        Err(e) => {
            eprintln!("ibsmd: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests;
