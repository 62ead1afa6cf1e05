//! The one error type of the crate.

use crate::tid::TidKey;

/// Why a transport or a transaction could not deliver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// Nothing arrived before the deadline (from `recv`), or a request got no answer
    /// after all its retries (from the transaction layer).
    #[error("timed out")]
    Timeout,
    /// The transport knows the MAD cannot reach its destination (no route, port down,
    /// a kernel/simulator "unroutable" status).
    #[error("destination unreachable: {reason}")]
    Unreachable {
        /// What made it unreachable, for the log.
        reason: String,
    },
    /// The transport was shut down (device removed, simulator gone); nothing more will
    /// be sent or received.
    #[error("transport closed")]
    Closed,
    /// The MAD handed to `send` is unusable (too short, a DR address on a non-SMP, ...).
    #[error("invalid MAD: {reason}")]
    InvalidMad {
        /// Which check failed.
        reason: &'static str,
    },
    /// An operating-system call failed.
    #[error("{op} failed: errno {errno}")]
    Os {
        /// The call (`"write"`, `"ioctl(REGISTER_AGENT)"`, ...).
        op: &'static str,
        /// The errno value.
        errno: i32,
    },
    /// A request was cancelled by its owner before it completed.
    #[error("cancelled")]
    Cancelled,
    /// The transaction layer already has a request outstanding with this key.
    #[error("transaction {key:?} already outstanding")]
    DuplicateTid {
        /// The (TID low 32 bits, class) pair in use.
        key: TidKey,
    },
}

impl TransportError {
    /// Whether the transport itself is unusable from now on.
    #[must_use]
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::Closed | Self::Os { .. })
    }
}
