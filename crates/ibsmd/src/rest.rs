//! `--rest ADDR`: the partition API, UFM's REST routes that orchestrators use to add
//! and remove port GUIDs from P_Keys at run time (Mellanox/ib-kubernetes's UFM plugin,
//! `docs/ibsmd.md` "Partition API"), over HTTPS (rustls) or, when asked for
//! explicitly, plain HTTP, with HTTP basic auth.
//!
//! Threads: one accepts connections, one more per connection (at most
//! [`MAX_CONNECTIONS`]) reads one request, answers it and closes. None touches the
//! engine. A change is made to the partitions file's text ([`edit`]) and written
//! through `persist::write_atomic` under [`Shared`]'s lock, and the policy the file now
//! holds is left there for the run loop, which takes it between two slices
//! ([`RestServer::take_pending`], which only tries the lock: a slow disk under the
//! API never holds the engine) and hands it to `SubnetManager::set_partitions`: the
//! changes that arrived meanwhile are one policy and one heavy sweep. A SIGHUP's re-read
//! of the file runs under the same lock ([`RestServer::reload`]) and, when it reads,
//! drops the policy left there: what it read holds every change written before, and no
//! change can be written between its read and the drop.
//!
//! Sans-IO parts: [`http`] (request heads, basic auth, responses), [`api`] (routes and
//! JSON bodies into a checked change), [`edit`] (the file's text), [`auth`] (the
//! credentials file).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::thread::JoinHandle;
use std::time::Duration;

use ibsm::manager::partition::PartitionConfig;
use serde_json::{Value, json};
use tracing::{debug, info, warn};

pub(crate) mod api;
pub(crate) mod auth;
pub(crate) mod edit;
pub(crate) mod http;
#[cfg(test)]
mod tests;

use api::{ApiError, Change, Route};
use auth::{Credentials, CredentialsError};
use edit::{PartitionFile, PartitionView};

/// Most connections served at once; more are answered 503 and closed.
pub(crate) const MAX_CONNECTIONS: usize = 32;

/// How long one read or write on a connection may wait.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection may take to send its whole request: a client that trickles
/// bytes cannot hold one of the [`MAX_CONNECTIONS`] for longer.
const REQUEST_DEADLINE: Duration = Duration::from_secs(30);

/// The API's options (`rest_*` in the option table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RestSettings {
    /// `--rest ADDR` (`HOST:PORT`; port 0 picks one, logged): none, no API.
    pub(crate) address: Option<String>,
    /// `--rest-credentials FILE`: `user:password` lines, owner-only.
    pub(crate) credentials: Option<PathBuf>,
    /// `--rest-cert FILE`: the server's certificate chain (PEM).
    pub(crate) cert: Option<PathBuf>,
    /// `--rest-key FILE`: its private key (PEM: PKCS#8, PKCS#1 or SEC1), owner-only.
    pub(crate) key: Option<PathBuf>,
    /// `--rest-insecure`: plain HTTP, without a certificate.
    pub(crate) insecure: bool,
}

/// Why the API cannot start (ibsmd exits 2, a configuration error).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RestError {
    /// The API writes its changes to the partitions file: one must be given.
    #[error(
        "--rest needs a partitions file (--partitions FILE / partition_config_file): the API's changes are written to it"
    )]
    NoPartitionFile,
    /// No credentials file.
    #[error("--rest needs --rest-credentials FILE (user:password lines, chmod 600)")]
    NoCredentials,
    /// Neither a certificate nor `--rest-insecure`.
    #[error(
        "--rest needs --rest-cert and --rest-key for HTTPS, or --rest-insecure for plain HTTP (passwords in clear)"
    )]
    NoTls,
    /// A certificate without a key or the other way round, or both and `--rest-insecure`.
    #[error("--rest-cert and --rest-key go together, and not with --rest-insecure")]
    TlsHalf,
    /// The credentials file.
    #[error("--rest-credentials {0}")]
    Credentials(#[from] CredentialsError),
    /// The private key file lets group or others read it.
    #[error(
        "--rest-key {}: mode {mode:04o} lets group or others read the key: chmod 600",
        path.display()
    )]
    KeyPermissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A certificate or key file that does not read.
    #[error("{flag} {}: {reason}", path.display())]
    Pem {
        /// `--rest-cert` or `--rest-key`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// rustls refused the certificate and key.
    #[error("--rest-cert/--rest-key: {0}")]
    Tls(#[from] rustls::Error),
    /// The address cannot be bound.
    #[error("--rest {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The accepting thread cannot be started.
    #[error("--rest: thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// What the run loop and the API's threads share under the lock.
#[derive(Debug)]
struct State {
    /// The partitions file the API edits.
    file: PathBuf,
    /// The policy the API last wrote, not yet taken by the run loop.
    pending: Option<PartitionConfig>,
}

/// What every thread of the API shares.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Replaced whole when a SIGHUP reads the credentials file again.
    users: std::sync::RwLock<Credentials>,
    /// The credentials file, read again at a SIGHUP.
    users_file: PathBuf,
    tls: Option<Arc<rustls::ServerConfig>>,
    connections: AtomicUsize,
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A thread that panicked holding it left the file written or not, never half
        // (write_atomic), and `pending` a whole value.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The running API.
#[derive(Debug)]
pub(crate) struct RestServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    https: bool,
    thread: Option<JoinHandle<()>>,
}

/// `path`'s permission bits.
fn mode_of(path: &Path) -> std::io::Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o7777)
}

/// The rustls configuration of a certificate chain and key in PEM files.
fn tls_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, RestError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let pem = |flag, path: &Path, reason: String| RestError::Pem {
        flag,
        path: path.to_owned(),
        reason,
    };
    let mode = mode_of(key).map_err(|e| pem("--rest-key", key, e.to_string()))?;
    if mode & 0o077 != 0 {
        return Err(RestError::KeyPermissions {
            path: key.to_owned(),
            mode,
        });
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect::<Result<_, _>>)
        .map_err(|e| pem("--rest-cert", cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(pem("--rest-cert", cert, "no CERTIFICATE in it".into()));
    }
    let key_der =
        PrivateKeyDer::from_pem_file(key).map_err(|e| pem("--rest-key", key, e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)?)
}

/// The API's options checked and its files read, before anything is opened: what
/// [`RestServer::start`] binds.
#[derive(Debug)]
pub(crate) struct Prepared {
    addr: String,
    file: PathBuf,
    users: Credentials,
    users_file: PathBuf,
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl RestServer {
    /// Checks the options and reads the credentials (and certificate and key): `None`
    /// without `--rest`. Run before the port is opened, and by `--validate`.
    ///
    /// # Errors
    /// [`RestError`]: an option missing or contradicting another, a file that does
    /// not read or that others may read.
    pub(crate) fn prepare(
        opts: &RestSettings,
        partitions: Option<&Path>,
    ) -> Result<Option<Prepared>, RestError> {
        let Some(addr) = &opts.address else {
            return Ok(None);
        };
        let file = partitions.ok_or(RestError::NoPartitionFile)?;
        let creds = opts
            .credentials
            .as_deref()
            .ok_or(RestError::NoCredentials)?;
        let tls = match (&opts.cert, &opts.key, opts.insecure) {
            (Some(c), Some(k), false) => Some(Arc::new(tls_config(c, k)?)),
            (None, None, true) => None,
            (None, None, false) => return Err(RestError::NoTls),
            _ => return Err(RestError::TlsHalf),
        };
        Ok(Some(Prepared {
            addr: addr.clone(),
            file: file.to_owned(),
            users: Credentials::load(creds)?,
            users_file: creds.to_owned(),
            tls,
        }))
    }

    /// Binds the prepared API's address and starts accepting.
    ///
    /// # Errors
    /// [`RestError::Bind`], [`RestError::Thread`].
    pub(crate) fn start(p: Prepared) -> Result<Self, RestError> {
        let Prepared {
            addr,
            file,
            users,
            users_file,
            tls,
        } = p;
        let bind = |source| RestError::Bind {
            addr: addr.clone(),
            source,
        };
        let listener = TcpListener::bind(addr.as_str()).map_err(bind)?;
        let bound = listener.local_addr().map_err(bind)?;
        let https = tls.is_some();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                file,
                pending: None,
            }),
            users: std::sync::RwLock::new(users),
            users_file,
            tls,
            connections: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("ibsmd-rest".into())
            .spawn(move || accept(&listener, &theirs))
            .map_err(RestError::Thread)?;
        Ok(Self {
            shared,
            addr: bound,
            https,
            thread: Some(thread),
        })
    }

    /// Reads the credentials file again (a SIGHUP: users added, removed or given a new
    /// password without a restart). A file that does not read, or that others may
    /// read, changes nothing: the users in force stay.
    ///
    /// # Errors
    /// [`CredentialsError`], naming the file.
    pub(crate) fn reload_credentials(&self) -> Result<(), CredentialsError> {
        let users = Credentials::load(&self.shared.users_file)?;
        *self
            .shared
            .users
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = users;
        Ok(())
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https` or `http`.
    pub(crate) fn scheme(&self) -> &'static str {
        if self.https { "https" } else { "http" }
    }

    /// The policy the API wrote since the last call (every change since, merged), if
    /// any. Never waits: while a change is being written (a slow disk) it says `None`
    /// and the run loop takes the policy at a later slice.
    pub(crate) fn take_pending(&self) -> Option<PartitionConfig> {
        match self.shared.state.try_lock() {
            Ok(mut st) => st.pending.take(),
            Err(TryLockError::Poisoned(p)) => p.into_inner().pending.take(),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Runs `read` (a SIGHUP's re-read of the configuration and the partitions file)
    /// with the API's changes held off. When it reads, the policy the API left for the
    /// run loop is dropped (the re-read holds it), and the API edits the file `file_of`
    /// names from then on (a SIGHUP may name another).
    pub(crate) fn reload<T, E>(
        &self,
        read: impl FnOnce() -> Result<T, E>,
        file_of: impl FnOnce(&T) -> Option<PathBuf>,
    ) -> Result<T, E> {
        let mut st = self.shared.lock();
        let r = read()?;
        st.pending = None;
        match file_of(&r) {
            Some(f) => st.file = f,
            None => warn!(
                "SIGHUP: no partitions file any more; the REST API goes on editing {}",
                st.file.display()
            ),
        }
        Ok(r)
    }
}

impl Drop for RestServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which sees the flag (a wildcard address through
        // the loopback of its family). If nothing connects, the thread is left to the
        // process's end rather than waited for.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        if TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok() {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// The accepting thread.
fn accept(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut stream) = stream else { continue };
        if shared.connections.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            shared.connections.fetch_sub(1, Ordering::SeqCst);
            if shared.tls.is_none() {
                let busy = http::response(503, &[], &api::error_body("too many connections"));
                let _ = stream.write_all(&busy);
            }
            continue;
        }
        let theirs = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name("ibsmd-rest-conn".into())
            .spawn(move || {
                connection(stream, &theirs);
                theirs.connections.fetch_sub(1, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            shared.connections.fetch_sub(1, Ordering::SeqCst);
            warn!("REST: connection thread: {e}");
        }
    }
}

/// One connection: a request, its answer, close.
fn connection(stream: TcpStream, shared: &Shared) {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string());
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_nodelay(true);
    match &shared.tls {
        Some(cfg) => {
            let conn = match rustls::ServerConnection::new(Arc::clone(cfg)) {
                Ok(c) => c,
                Err(e) => {
                    warn!("REST {peer}: TLS: {e}");
                    return;
                }
            };
            let mut tls = rustls::StreamOwned::new(conn, stream);
            serve(&mut tls, shared, &peer);
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
        None => {
            let mut s = stream;
            serve(&mut s, shared, &peer);
        }
    }
}

/// Reads one request from `s` and writes its answer.
fn serve(s: &mut (impl Read + Write), shared: &Shared, peer: &str) {
    let deadline = std::time::Instant::now() + REQUEST_DEADLINE;
    let read = |s: &mut dyn Read, chunk: &mut [u8]| -> Option<usize> {
        if std::time::Instant::now() > deadline {
            debug!("REST {peer}: request not complete within {REQUEST_DEADLINE:?}");
            return None;
        }
        match s.read(chunk) {
            Ok(0) => None,
            Ok(n) => Some(n),
            Err(e) => {
                debug!("REST {peer}: {e}");
                None
            }
        }
    };
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let (head, at) = loop {
        match http::parse_head(&buf) {
            Ok(Some(h)) => break h,
            Ok(None) => {}
            Err(e) => {
                debug!("REST {peer}: {e}");
                let _ = s.write_all(&http::response(
                    e.status(),
                    &[],
                    &api::error_body(&e.to_string()),
                ));
                return;
            }
        }
        let Some(n) = read(s, &mut chunk) else { return };
        buf.extend_from_slice(&chunk[..n]);
    };
    let mut body = buf.split_off(at);
    while body.len() < head.content_length {
        let Some(n) = read(s, &mut chunk) else { return };
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(head.content_length);
    let (status, extra, text) = answer(shared, &head, &body, peer);
    let extra: Vec<(&str, &str)> = extra.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let _ = s.write_all(&http::response(status, &extra, &text));
    let _ = s.flush();
}

/// An answer: status, extra header lines, JSON body.
type Answer = (u16, Vec<(&'static str, String)>, String);

fn refused(e: &ApiError) -> Answer {
    (e.status(), Vec::new(), e.body())
}

fn failed(message: &str) -> Answer {
    (500, Vec::new(), api::error_body(message))
}

/// The answer to one request: the user checked first, then the route.
fn answer(shared: &Shared, head: &http::Head, body: &[u8], peer: &str) -> Answer {
    let user = match head.basic_auth() {
        Some((u, p))
            if shared
                .users
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .check(&u, &p) =>
        {
            u
        }
        other => {
            warn!(
                "REST {peer}: {} {}: 401 ({})",
                head.method,
                head.target,
                if other.is_some() {
                    "wrong user or password"
                } else {
                    "no basic auth"
                }
            );
            return (
                401,
                vec![("WWW-Authenticate", "Basic realm=\"ibsmd\"".into())],
                api::error_body("wrong user or password"),
            );
        }
    };
    let route = match api::route(&head.method, &head.target) {
        Ok(r) => r,
        Err(e) => return refused(&e),
    };
    match route {
        Route::Version => (
            200,
            Vec::new(),
            json!({ "ufm_release_version": concat!("ibsmd ", env!("CARGO_PKG_VERSION")) })
                .to_string(),
        ),
        Route::Add | Route::Remove => {
            let parsed = if route == Route::Add {
                api::parse_add(body)
            } else {
                api::parse_remove(body)
            };
            match parsed {
                Ok(change) => change_file(shared, &change, &user, peer),
                Err(e) => {
                    info!("REST {peer} {user}: {} refused: {e}", head.target);
                    refused(&e)
                }
            }
        }
        Route::List { guids } => read_file(shared, |f| {
            let all: serde_json::Map<String, Value> = f
                .views()
                .iter()
                .map(|v| (format!("{:#x}", v.pkey), view_json(v, guids)))
                .collect();
            (200, Vec::new(), Value::Object(all).to_string())
        }),
        Route::One { pkey } => read_file(shared, |f| match f.view(pkey) {
            Some(v) => (200, Vec::new(), view_json(&v, true).to_string()),
            None => refused(&ApiError::UnknownPKey(pkey)),
        }),
    }
}

/// A partition as the GETs show it (UFM's fields, `pkey` and `index0` besides).
fn view_json(v: &PartitionView, guids: bool) -> Value {
    let mut o = json!({
        "partition": v.name,
        "pkey": format!("{:#x}", v.pkey),
        "ip_over_ib": v.ipoib,
        "index0": v.index0,
    });
    if guids {
        o["guids"] = v
            .guids
            .iter()
            .map(|m| {
                json!({
                    "guid": api::guid_text(m.guid),
                    "membership": m.membership,
                    "index0": v.index0,
                })
            })
            .collect();
    }
    o
}

/// The partitions file read and parsed, with the lock held while `f` looks at it.
fn read_file(shared: &Shared, f: impl FnOnce(&PartitionFile) -> Answer) -> Answer {
    let st = shared.lock();
    match load(&st.file) {
        Ok(file) => f(&file),
        Err(e) => failed(&e.to_string()),
    }
}

/// Why the partitions file could not be read for the API; the text is a 500 answer's.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not one the API can edit.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Where and what.
        #[source]
        source: edit::FileError,
    },
}

/// The file at `path` as the API edits it.
fn load(path: &Path) -> Result<PartitionFile, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    PartitionFile::parse(&text).map_err(|source| LoadError::File {
        path: path.to_path_buf(),
        source,
    })
}

/// Applies `change` to the file and leaves the policy for the run loop; the answer.
fn change_file(shared: &Shared, change: &Change, user: &str, peer: &str) -> Answer {
    let mut st = shared.lock();
    let mut file = match load(&st.file) {
        Ok(f) => f,
        Err(e) => {
            warn!("REST {peer} {user}: {e}");
            return failed(&e.to_string());
        }
    };
    let what = describe(change);
    if !file.apply(change) {
        debug!("REST {peer} {user}: {what}: nothing to change");
        return done(change, false);
    }
    let text = file.render();
    // What was rendered must read back as the policy the edit made (a statement's
    // spelling that did not would otherwise surface only at the next start).
    let cfg = match PartitionConfig::parse(&text) {
        Ok(c) if c.statements == file.config().statements => c,
        Ok(_) => return failed("the edited partitions file reads back differently; not written"),
        Err(e) => {
            return failed(&format!(
                "the edited partitions file does not parse ({e}); not written"
            ));
        }
    };
    if let Err(e) = ibsm::manager::persist::write_atomic(&st.file, text.as_bytes()) {
        warn!("REST {peer} {user}: {what}: {e}");
        return failed(&e.to_string());
    }
    info!("REST {peer} {user}: {what}");
    st.pending = Some(cfg);
    done(change, true)
}

fn done(change: &Change, changed: bool) -> Answer {
    (
        200,
        Vec::new(),
        json!({ "pkey": format!("0x{:04x}", change.pkey()), "changed": changed }).to_string(),
    )
}

/// A change for the log.
fn describe(c: &Change) -> String {
    let guids: Vec<String> = c.guids().iter().map(|g| format!("{g:#018x}")).collect();
    match c {
        Change::Add { membership, .. } => format!(
            "{} added to P_Key {:#06x} ({})",
            guids.join(", "),
            c.pkey(),
            membership.word()
        ),
        Change::Remove { .. } => {
            format!("{} removed from P_Key {:#06x}", guids.join(", "), c.pkey())
        }
    }
}
