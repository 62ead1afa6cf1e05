//! What the election tells its host.

use crate::mad::SmAddr;
use ibsm_wire::{SmInfoControl, SmState};

/// Something the host should know or act on, pulled with
/// [`Election::poll_event`](crate::Election::poll_event).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElectionEvent {
    /// The SM changed state. On `to == Master` the host starts configuring the subnet
    /// (a heavy sweep); on leaving Master it stops touching the fabric.
    StateChanged {
        /// Previous state.
        from: SmState,
        /// New state.
        to: SmState,
    },
    /// The host must sweep the subnet now: call [`begin_sweep`], [`probe`] every port
    /// whose PortInfo.CapabilityMask has IsSM, then [`sweep_complete`]. Emitted on entering
    /// Discovering, and to a Master that received mastership of a stepping-down Master's
    /// part of the subnet.
    ///
    /// [`begin_sweep`]: crate::Election::begin_sweep
    /// [`probe`]: crate::Election::probe
    /// [`sweep_complete`]: crate::Election::sweep_complete
    SweepNeeded,
    /// The Master this Standby followed stopped answering, or stopped advancing its
    /// ActCount, for `polling_retries` polls in a row (at least 1). The SM is now Discovering.
    MasterLost {
        /// Port GUID of the lost Master.
        guid: u64,
        /// Whether the Master still answered but its ActCount stood still (a hung SM).
        stalled: bool,
    },
    /// A Standby now follows (polls) this Master, or this higher SM that will become it.
    Following {
        /// Port GUID of the polled SM.
        guid: u64,
    },
    /// A peer outranks this SM but could not be authenticated: its SM_Key differs from
    /// ours, or it hid its key (read as 0) and was never seen with ours. It is never
    /// followed, never handed control, and its control Sets are refused.
    UnauthenticatedHigherPrioritySm {
        /// Its port GUID.
        guid: u64,
        /// Its priority.
        priority: u8,
        /// The SM_Key it showed (0 when hidden).
        sm_key: u64,
    },
    /// Another Master with a lower rank shares the subnet; this Master waits for its
    /// HANDOVER (it hands over on its next sweep). Hosts may prompt it with trap 144.
    OtherMasterDetected {
        /// Its port GUID.
        guid: u64,
    },
    /// This Master sent HANDOVER to a higher, authenticated SM.
    HandoverSent {
        /// Target port GUID.
        to: u64,
    },
    /// The HANDOVER was accepted (GetResp with status 0, or its ACKNOWLEDGE): this SM
    /// is now Standby, following the new Master.
    HandoverCompleted {
        /// The new Master.
        to: u64,
    },
    /// The HANDOVER was refused or never answered; this SM stays Master and tries
    /// again after its next sweep.
    HandoverFailed {
        /// Target port GUID.
        to: u64,
        /// The MAD status of a refusal; `None` when every resend went unanswered.
        status: Option<u16>,
    },
    /// The SM we handed over to acknowledged it with SubnSet(SMInfo, ACKNOWLEDGE).
    HandoverAcknowledged {
        /// The new Master.
        guid: u64,
    },
    /// An authenticated Master handed mastership to this SM.
    HandoverReceived {
        /// The SM that stepped down.
        from: u64,
    },
    /// A DISABLE, STANDBY or DISCOVER from the authenticated Master was obeyed.
    ControlObeyed {
        /// The Master that sent it.
        from: u64,
        /// What it asked.
        code: SmInfoControl,
    },
    /// A SubnSet(SMInfo) was refused (status 0x001C in the response).
    ControlRejected {
        /// The sender's GUID as given in its SMInfo.
        from: u64,
        /// The AttributeModifier.
        code: SmInfoControl,
        /// Why.
        reason: RejectReason,
    },
    /// Outcome of a [`send_control`](crate::Election::send_control).
    ControlCompleted {
        /// Where it was sent.
        to: SmAddr,
        /// What was sent.
        code: SmInfoControl,
        /// The response status; `None` when every resend went unanswered.
        status: Option<u16>,
    },
}

/// Why a SubnSet(SMInfo) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectReason {
    /// The AttributeModifier is not one of the five control codes.
    UnknownCode,
    /// The sender's SMInfo state does not allow this code (HANDOVER, DISABLE, STANDBY and
    /// DISCOVER come from a Master, ACKNOWLEDGE from a Standby or Discovering SM).
    SenderState,
    /// The sender's SM_Key is wrong, or hidden and never verified.
    Unauthenticated,
    /// The code makes no sense in this SM's state (HANDOVER while NotActive, an
    /// ACKNOWLEDGE for a handover that did not happen).
    OurState,
    /// This SM is Master and the sender does not outrank it.
    SenderOutranked,
}
