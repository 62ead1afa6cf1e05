//! The error type of the crate.

/// Why an input was refused. Bad bytes from the wire are reported, never fatal: the
/// machine's state is unchanged when a `handle_*` call returns an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The MAD could not be decoded (length, layout).
    #[error("SMInfo MAD: {0}")]
    Wire(#[from] ibsm_wire::Error),
    /// The MAD is not a subnet-management packet (class 0x01 or 0x81).
    #[error("not an SMP: management class {class:#04x}")]
    NotSmp {
        /// Byte 1 of the MAD.
        class: u8,
    },
    /// The SMP carries another attribute than SMInfo (0x0020).
    #[error("SMP attribute {attribute_id:#06x} is not SMInfo (0x0020)")]
    NotSmInfo {
        /// AttributeID found.
        attribute_id: u16,
    },
    /// A response was handed to `handle_request`, or a request to `handle_response`.
    #[error("SMInfo MAD has R bit {response}, the other kind was expected")]
    WrongDirection {
        /// The R bit of the MAD.
        response: bool,
    },
    /// `send_control` was called while this SM is not Master, or with a code only the
    /// election itself sends (HANDOVER, ACKNOWLEDGE).
    #[error("control {code} cannot be sent now: {why}")]
    ControlNotAllowed {
        /// The AttributeModifier asked for.
        code: u32,
        /// What forbids it.
        why: &'static str,
    },
}

/// Why the election's [`Config`](crate::Config) was refused (by `Config::validate` or a
/// run-time setter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElectionConfigError {
    /// `priority` (OpenSM `sm_priority`) is outside 0..=15.
    #[error("priority (sm_priority) {0} is outside 0..=15")]
    Priority(u8),
    /// The SM port GUID is 0.
    #[error("guid (the SM port GUID) must not be 0")]
    ZeroGuid,
    /// A period that must be positive is zero.
    #[error("{0} must be greater than zero")]
    ZeroDuration(&'static str),
    /// A count that must be positive is zero.
    #[error("{0} must be at least 1")]
    ZeroCount(&'static str),
}
