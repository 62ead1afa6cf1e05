//! The one error type of the crate.

/// What went wrong while decoding or encoding.
///
/// Small and `Copy` so it can be returned from hot paths without cost; every
/// variant names the structure or field it concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the structure needs.
    #[error("{what}: buffer holds {got} bytes, {need} needed")]
    Truncated {
        /// Structure being read or written.
        what: &'static str,
        /// Bytes the structure needs.
        need: usize,
        /// Bytes the buffer holds.
        got: usize,
    },
    /// A field holds a value the caller asked to reject.
    #[error("{what}: field {field} holds invalid value {value:#x}")]
    InvalidValue {
        /// Structure holding the field.
        what: &'static str,
        /// Field name.
        field: &'static str,
        /// The offending value.
        value: u64,
    },
    /// A value does not fit into the bits of its field.
    #[error("{what}: value {value:#x} does not fit field {field}")]
    Overflow {
        /// Structure holding the field.
        what: &'static str,
        /// Field name.
        field: &'static str,
        /// The value that was offered.
        value: u64,
    },
    /// A named field does not exist in this structure (reflective access).
    #[error("{what}: no field of that name")]
    NoSuchField {
        /// Structure searched.
        what: &'static str,
    },
    /// The MAD is not of the class or kind a view expects.
    #[error("{what}: unexpected {field} {value:#x}")]
    Unexpected {
        /// Structure being decoded.
        what: &'static str,
        /// Field that decided it.
        field: &'static str,
        /// Value found.
        value: u64,
    },
}

/// Result alias of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;
