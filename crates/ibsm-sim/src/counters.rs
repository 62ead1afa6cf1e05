//! What the simulator counts: SMPs per node, per attribute, and drops by reason.

use std::collections::BTreeMap;

/// Per-node counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NodeCounters {
    /// Packets this node put on a link (each hop counts once, at its sender).
    pub forwarded: u64,
    /// Packets handed to this node's SMA or to an SM attached to it.
    pub delivered: u64,
    /// Packets this node discarded (or that were lost on a link it sent into).
    pub dropped: u64,
    /// SMPs this node's SMA answered.
    pub answered: u64,
}

/// Per-attribute counters (AttributeID of the SMP).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AttrCounters {
    /// SMPs injected (by an SM handle, an SMA response or trap).
    pub sent: u64,
    /// SMPs that reached their final recipient.
    pub delivered: u64,
    /// SMPs dropped on the way.
    pub dropped: u64,
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// The outbound port's link is down (or the port has no cable).
    PortDown,
    /// The port state does not let this traffic pass (data needs Active).
    PortState,
    /// Lost on a link by the configured drop rate.
    Loss,
    /// Directed route: HopPointer/HopCount match no rule.
    BadHopPointer,
    /// Directed route: a CA or router was asked to forward.
    NotASwitch,
    /// Directed route: the next port does not exist.
    NoSuchPort,
    /// LID routing: the switch's LFT has no entry for the DLID.
    NoRoute,
    /// LID routing: the packet reached a node that does not own its DLID.
    WrongEndpoint,
    /// LID routing: too many LID-routed hops (a forwarding loop).
    Loop,
    /// No SM is attached where the packet was delivered (responses, traps, SMInfo).
    NoSm,
    /// The SMA chose not to answer (M_Key violation, unsupported, ...).
    NoResponse,
    /// The node was removed or reset while the packet was there.
    NodeGone,
    /// Malformed bytes (e.g. a babbling port's garbage).
    Malformed,
}

impl DropReason {
    /// Every reason, in a stable order.
    pub const ALL: [Self; 13] = [
        Self::PortDown,
        Self::PortState,
        Self::Loss,
        Self::BadHopPointer,
        Self::NotASwitch,
        Self::NoSuchPort,
        Self::NoRoute,
        Self::WrongEndpoint,
        Self::Loop,
        Self::NoSm,
        Self::NoResponse,
        Self::NodeGone,
        Self::Malformed,
    ];
}

/// All counters of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Indexed by node index.
    pub nodes: Vec<NodeCounters>,
    /// By AttributeID.
    pub attrs: BTreeMap<u16, AttrCounters>,
    /// By reason.
    pub drops: BTreeMap<DropReason, u64>,
    /// Link traversals of directed-route SMPs.
    pub dr_hops: u64,
    /// Link traversals of LID-routed packets.
    pub lid_hops: u64,
    /// Events processed.
    pub events: u64,
}

impl Counters {
    /// Total drops.
    #[must_use]
    pub fn total_dropped(&self) -> u64 {
        self.drops.values().sum()
    }

    /// Drops of one reason.
    #[must_use]
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.drops.get(&reason).copied().unwrap_or(0)
    }

    /// Counters of one attribute.
    #[must_use]
    pub fn attr(&self, id: u16) -> AttrCounters {
        self.attrs.get(&id).copied().unwrap_or_default()
    }
}
