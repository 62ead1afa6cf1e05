//! Who sent a request, and why it is refused: what the server and the multicast groups
//! both take.

use ibsm_wire::Status;
use ibsm_wire::sa::SaStatus;

/// Who sent a request (from the receive path: LRH SLID and source QP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Requester {
    /// Source LID.
    pub lid: u16,
    /// Source QP.
    pub qpn: u32,
}

/// Why a request gets an error status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SaError {
    Sa(SaStatus),
    Mad(Status),
}

impl From<SaStatus> for SaError {
    fn from(s: SaStatus) -> Self {
        SaError::Sa(s)
    }
}
