//! Errors of the umad transport: each names the device or file and the errno.

use std::io;

/// What went wrong talking to the umad device.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call failed.
    #[error("{op} {path}: {source} (errno {errno})")]
    Io {
        /// The call (`open`, `read`, `ioctl REGISTER_AGENT`, ...).
        op: &'static str,
        /// The file or device it was made on.
        path: String,
        /// errno, 0 if none.
        errno: i32,
        /// The OS error.
        source: io::Error,
    },
    /// A sysfs file holds something unexpected.
    #[error("{path}: {what}")]
    Sysfs {
        /// The file.
        path: String,
        /// What was wrong.
        what: String,
    },
    /// The kernel's umad ABI is older than version 5.
    #[error("umad ABI version {0} is too old (need 5)")]
    Abi(u32),
    /// No port matches the selection.
    #[error("no matching InfiniBand umad port: {0}")]
    NoPort(String),
    /// The MAD cannot be sent (too short, unregistered class, ...).
    #[error("cannot send: {0}")]
    BadMad(String),
}

impl Error {
    pub(crate) fn io(op: &'static str, path: &str, e: &io::Error) -> Self {
        Self::Io {
            op,
            path: path.to_owned(),
            errno: e.raw_os_error().unwrap_or(0),
            source: io::Error::new(e.kind(), e.to_string()),
        }
    }

    pub(crate) fn sysfs(path: &str, what: String) -> Self {
        Self::Sysfs {
            path: path.to_owned(),
            what,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
