//! Running as a service: the pid file and systemd's readiness protocol (`sd_notify`,
//! a datagram to `$NOTIFY_SOCKET`), written with std alone.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::{Path, PathBuf};

/// The pid file cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("pid file {}: {source}", path.display())]
pub(crate) struct PidFileError {
    /// The file.
    pub(crate) path: PathBuf,
    /// What the system said.
    #[source]
    pub(crate) source: std::io::Error,
}

/// systemd could not be told.
#[derive(Debug, thiserror::Error)]
#[error("sd_notify {state:?} to {socket}: {source}")]
pub(crate) struct NotifyError {
    /// What was to be told.
    pub(crate) state: String,
    /// `$NOTIFY_SOCKET`.
    pub(crate) socket: String,
    /// What failed.
    #[source]
    pub(crate) source: std::io::Error,
}

/// A pid file, removed when dropped.
#[derive(Debug)]
pub(crate) struct PidFile(PathBuf);

impl PidFile {
    /// Writes our PID (and a newline) to `path`, replacing what was there: through a new
    /// temporary file and a rename (`ibsm::manager::persist`), so a link planted at
    /// `path` (or at a temporary name) is replaced, never written through.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub(crate) fn create(path: &Path) -> Result<Self, PidFileError> {
        let pid = format!("{}\n", std::process::id());
        ibsm::manager::persist::write_atomic(path, pid.as_bytes()).map_err(|e| PidFileError {
            path: e.path,
            source: e.source,
        })?;
        Ok(Self(path.to_owned()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Where `$NOTIFY_SOCKET` points: a path, or an abstract name (`@name`).
fn notify_addr(spec: &str) -> std::io::Result<SocketAddr> {
    match spec.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
        None => SocketAddr::from_pathname(spec),
    }
}

/// Tells the service manager `state` (`READY=1`, `STOPPING=1`, `STATUS=...`) when it
/// asked to be told (`NOTIFY_SOCKET` set); does nothing otherwise.
///
/// # Errors
/// When the socket named cannot be reached.
pub(crate) fn notify(state: &str) -> Result<(), NotifyError> {
    let Some(spec) = std::env::var_os("NOTIFY_SOCKET") else {
        return Ok(());
    };
    let spec = spec.to_string_lossy();
    let send = || -> std::io::Result<()> {
        let addr = notify_addr(&spec)?;
        let sock = UnixDatagram::unbound()?;
        sock.send_to_addr(state.as_bytes(), &addr)?;
        Ok(())
    };
    send().map_err(|source| NotifyError {
        state: state.to_owned(),
        socket: spec.into_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link planted at the pid file's name is replaced by the pid file; its target
    /// keeps its bytes. (Planted: `std::fs::write(path, ...)` -> the victim holds our
    /// PID.)
    #[test]
    fn the_pid_file_replaces_a_planted_link() {
        let d = std::env::temp_dir().join(format!("ibsmd-pid-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let path = d.join("ibsmd.pid");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let pid = PidFile::create(&path).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        drop(pid);
        assert!(!path.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn notifications_reach_a_path_and_an_abstract_socket() {
        let dir = std::env::temp_dir().join(format!("ibsmd_notify_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let by_path = UnixDatagram::bind(&path).unwrap();
        let name = format!("ibsmd-test-{}", std::process::id());
        let by_name =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        let mut buf = [0u8; 64];
        for (spec, sock) in [
            (path.display().to_string(), &by_path),
            (format!("@{name}"), &by_name),
        ] {
            let addr = notify_addr(&spec).unwrap();
            let tx = UnixDatagram::unbound().unwrap();
            tx.send_to_addr(b"READY=1", &addr).unwrap();
            let n = sock.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"READY=1", "{spec}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_pid_file_holds_our_pid_until_dropped() {
        let path = std::env::temp_dir().join(format!("ibsmd_pid_{}", std::process::id()));
        let p = PidFile::create(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        drop(p);
        assert!(!path.exists());
    }
}
