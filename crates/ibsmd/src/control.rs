//! The control socket: a local Unix stream socket, owner-only (0600), on which a client
//! sends one request per line ([`proto`]) and gets one JSON [`Response`] line back.
//!
//! The daemon's run loop calls [`ControlServer::poll`] once per slice: it accepts, reads
//! what arrived and answers every complete line through [`answer`] and the daemon's
//! [`Host`], without ever blocking: each connection keeps its answers in order and
//! hands the socket what it accepts, so a client that does not read stalls nobody but
//! itself (it is dropped after [`CLIENT_STALL`]), and its next request is read only
//! once the answers before it are out. An answer another thread works out (a dump
//! being written) waits in its place until it comes. A line that is not a request
//! gets an error response; the connection and the daemon carry on. The client side
//! ([`request`]) is what `ibsmd status | sweep [--heavy] | rebalance | dump |
//! log-level LEVEL | port isolate|clear GUID/PORT` run.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::status::Status;

pub(crate) mod proto;

pub(crate) use proto::{Level, ParseError, PortOp, PortTarget, Request};

/// Most clients connected at once; more are told so and disconnected.
const MAX_CLIENTS: usize = 16;

/// How long a client may leave an answer unread (taking none of its bytes) before it
/// is dropped.
pub(crate) const CLIENT_STALL: Duration = Duration::from_secs(10);

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

/// Why the daemon did not do what a client asked: the response's `error`.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum Refusal {
    /// Only the Master sweeps and rebalances (the role it has instead).
    #[error("not Master ({0}): the master sweeps")]
    NotMaster(&'static str),
    /// A light sweep asked for while a sweep runs.
    #[error("a sweep is running; no light sweep started")]
    SweepRunning,
    /// A dump asked for without a dump directory.
    #[error("no dump directory (--dump-dir or dump_files_dir)")]
    NoDumpDir,
    /// Writing the dumps failed (shared: every client waiting for the set gets it).
    #[error("dump: {0}")]
    Dump(std::sync::Arc<ibsm::manager::dump::DumpError>),
    /// The log level cannot be changed.
    #[error(transparent)]
    Log(std::sync::Arc<crate::logging::LogError>),
    /// The worker that was to tell the outcome is gone.
    #[error("no outcome (worker gone)")]
    WorkerGone,
    /// The engine refused `port isolate` / `port clear` (not master, an unknown node
    /// or port).
    #[error("port: {0}")]
    Port(#[from] ibsm::manager::health::PortCommandError),
}

/// What the daemon did (its message) or why not.
pub(crate) type Outcome = Result<String, Refusal>;

/// What the daemon does for the requests.
pub(crate) trait Host {
    /// The status now.
    fn status(&mut self) -> Status;
    /// Starts a sweep (heavy or light); `Err` says why not.
    ///
    /// # Errors
    /// Why no sweep is started (not Master, a sweep runs).
    fn sweep(&mut self, heavy: bool) -> Outcome;
    /// Asks for a rebalance.
    ///
    /// # Errors
    /// Why not (not Master).
    fn rebalance(&mut self) -> Outcome;
    /// Starts writing the dumps; the receiver gets the outcome (what was written, or
    /// why not) once they are on disk.
    ///
    /// # Errors
    /// Why no dump is written (no dump directory).
    fn dump(&mut self) -> Result<Receiver<Outcome>, Refusal>;
    /// Sets the log level.
    ///
    /// # Errors
    /// The logger cannot be changed.
    fn set_log_level(&mut self, level: Level) -> Outcome;
    /// Isolates or clears a port.
    ///
    /// # Errors
    /// Why not (not master, no such node or port).
    fn port(&mut self, op: PortOp, target: PortTarget) -> Outcome;
}

/// The answer to one request: now, or later from another thread.
pub(crate) enum Reply {
    /// The response.
    Now(Response),
    /// What the response will say, once the work it waits for is done.
    Later(Receiver<Outcome>),
}

/// The response to one outcome.
fn done(r: Outcome) -> Response {
    r.map_or_else(|e| Response::failed(e.to_string()), Response::done)
}

/// The answer to one parsed line.
pub(crate) fn answer(host: &mut impl Host, req: Result<Request, ParseError>) -> Reply {
    let now = |r| Reply::Now(done(r));
    match req {
        Err(e) => Reply::Now(Response::failed(e.to_string())),
        Ok(Request::Status) => Reply::Now(Response {
            ok: true,
            status: Some(Box::new(host.status())),
            ..Response::default()
        }),
        Ok(Request::Sweep { heavy }) => now(host.sweep(heavy)),
        Ok(Request::Rebalance) => now(host.rebalance()),
        Ok(Request::Dump) => host.dump().map_or_else(
            |e| Reply::Now(Response::failed(e.to_string())),
            Reply::Later,
        ),
        Ok(Request::LogLevel(l)) => now(host.set_log_level(l)),
        Ok(Request::Port { op, target }) => now(host.port(op, target)),
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

/// One answer waiting to be written.
enum Out {
    /// The response line.
    Line(Vec<u8>),
    /// Still being worked out.
    Later(Receiver<Outcome>),
}

struct Conn {
    stream: UnixStream,
    /// Bytes read and not answered yet.
    inbuf: Vec<u8>,
    /// Skipping the rest of a line that was too long (already answered).
    discarding: bool,
    /// Answers not written yet, in order; the front one may be partly written.
    out: VecDeque<Out>,
    /// Bytes of the front answer already written.
    written: usize,
    /// Since when the client has taken none of the bytes waiting for it.
    stalled_since: Option<Instant>,
    /// The client closed its side: answer what it sent, then let it go.
    eof: bool,
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

    /// Accepts new clients, reads what they sent and answers each complete line with
    /// `handle`'s reply, writing only what each socket accepts now. Never blocks and
    /// never fails: a client that misbehaves (closes, stops reading for
    /// [`CLIENT_STALL`]) is dropped.
    pub(crate) fn poll(&mut self, handle: impl FnMut(Result<Request, ParseError>) -> Reply) {
        self.poll_at(Instant::now(), handle);
    }

    /// [`Self::poll`] at wall time `now` (what a stalled client is measured against).
    pub(crate) fn poll_at(
        &mut self,
        now: Instant,
        mut handle: impl FnMut(Result<Request, ParseError>) -> Reply,
    ) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if self.clients.len() >= MAX_CLIENTS {
                        // Best effort: a short line into a new socket's empty buffer.
                        let line = Response::failed("too many clients").to_line();
                        let _ = (&stream).write(line.as_bytes());
                        continue;
                    }
                    self.clients.push(Conn::new(stream));
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
        self.clients.retain_mut(|c| c.serve(now, &mut handle));
    }

    /// Bytes of answers each client has not taken yet (for tests).
    #[cfg(test)]
    pub(crate) fn unwritten(&self) -> Vec<usize> {
        self.clients.iter().map(Conn::unwritten).collect()
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
            inbuf: Vec::new(),
            discarding: false,
            out: VecDeque::new(),
            written: 0,
            stalled_since: None,
            eof: false,
        }
    }

    #[cfg(test)]
    fn unwritten(&self) -> usize {
        self.out
            .iter()
            .map(|o| match o {
                Out::Line(b) => b.len(),
                Out::Later(_) => 0,
            })
            .sum::<usize>()
            - self.written
    }

    /// Writes what it can, answers what was read, reads more; `false` when the client
    /// is gone or has stalled too long.
    fn serve(
        &mut self,
        now: Instant,
        handle: &mut impl FnMut(Result<Request, ParseError>) -> Reply,
    ) -> bool {
        let mut chunk = [0u8; 1024];
        loop {
            match self.flush(now) {
                Ok(true) => {}
                // Waiting: for the client to read, or for a reply being worked out.
                Ok(false) => break,
                Err(_) => return false,
            }
            // The next request only once every answer before it is out: a client
            // that sends and never reads holds one answer here, not a pile.
            if let Some(req) = self.next_request() {
                self.out.push_back(match handle(req) {
                    Reply::Now(r) => Out::Line(r.to_line().into_bytes()),
                    Reply::Later(rx) => Out::Later(rx),
                });
                continue;
            }
            if self.eof {
                return false;
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => self.eof = true,
                Ok(n) => self.inbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => return false,
            }
        }
        if let Some(since) = self.stalled_since {
            if now.saturating_duration_since(since) >= CLIENT_STALL {
                tracing::warn!(
                    "control socket: a client left its answer unread for {} s: dropped",
                    CLIENT_STALL.as_secs()
                );
                return false;
            }
        }
        true
    }

    /// Hands the socket what it accepts of the answers in order. `Ok(true)`: all are
    /// out; `Ok(false)`: the socket is full or the front reply is not ready.
    fn flush(&mut self, now: Instant) -> io::Result<bool> {
        loop {
            let Some(front) = self.out.front_mut() else {
                self.stalled_since = None;
                return Ok(true);
            };
            let line = match front {
                Out::Line(line) => line,
                Out::Later(rx) => {
                    let r = match rx.try_recv() {
                        Ok(r) => r,
                        Err(TryRecvError::Empty) => return Ok(false),
                        Err(TryRecvError::Disconnected) => Err(Refusal::WorkerGone),
                    };
                    *front = Out::Line(done(r).to_line().into_bytes());
                    continue;
                }
            };
            match self.stream.write(&line[self.written..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.stalled_since = None;
                    self.written += n;
                    if self.written == line.len() {
                        self.out.pop_front();
                        self.written = 0;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.stalled_since.get_or_insert(now);
                    return Ok(false);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The next complete line read, parsed; `None` until one is there.
    fn next_request(&mut self) -> Option<Result<Request, ParseError>> {
        loop {
            let nl = self.inbuf.iter().position(|&b| b == b'\n');
            if self.discarding {
                match nl {
                    Some(i) => {
                        self.inbuf.drain(..=i);
                        self.discarding = false;
                        continue;
                    }
                    None => {
                        self.inbuf.clear();
                        return None;
                    }
                }
            }
            return match nl {
                Some(i) if i <= proto::MAX_LINE => {
                    let line: Vec<u8> = self.inbuf.drain(..=i).collect();
                    Some(proto::parse(&line[..i]))
                }
                // Answered as soon as it is too long; the rest of it is skipped.
                Some(_) => self.too_long(),
                None if self.inbuf.len() > proto::MAX_LINE => self.too_long(),
                None => None,
            };
        }
    }

    fn too_long(&mut self) -> Option<Result<Request, ParseError>> {
        self.discarding = true;
        Some(Err(ParseError::TooLong {
            len: proto::MAX_LINE + 1,
        }))
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
