//! What the engine tells its host.

use std::time::Duration;

use crate::error::SharedError;

/// A stage of a sweep (the heavy sweep's four, and the light sweep's one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Heavy: NodeInfo, SwitchInfo, PortInfo (and P_KeyTable) Gets over directed routes.
    Discover,
    /// Heavy: the election decides whether this SM configures.
    Elect,
    /// Heavy: LIDs, routes, switch tables, P_Key tables and PortInfo Sets.
    Program,
    /// Heavy: the armed ports' activation.
    Activate,
    /// The light sweep: every switch's PortStateChange latch.
    Light,
}

impl Phase {
    /// Its name in logs: `discover`, `elect`, `program`, `activate`, `light sweep`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Discover => "discover",
            Phase::Elect => "elect",
            Phase::Program => "program",
            Phase::Activate => "activate",
            Phase::Light => "light sweep",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Counters and timings of one sweep.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepStats {
    /// Heavy (full discovery and configuration) or light (change detection only).
    pub heavy: bool,
    /// SMPs sent, including retries.
    pub smps: u64,
    /// Retries among them.
    pub retries: u64,
    /// Requests that got no answer after all retries.
    pub timeouts: u64,
    /// SMPs per attribute name (Get and Set together), sorted by name.
    pub by_attribute: Vec<(&'static str, u64)>,
    /// Time per phase on the transport's clock (virtual in the simulator), in order.
    pub phases: Vec<(Phase, Duration)>,
    /// Time of the whole sweep on the transport's clock.
    pub total: Duration,
    /// Wall time spent computing routes.
    pub routing_wall: Duration,
    /// Nodes found.
    pub nodes: usize,
    /// Switches among them.
    pub switches: usize,
    /// Cables found.
    pub links: usize,
    /// LIDs in use (sum of 2^LMC over all ports).
    pub lids: usize,
    /// LFT blocks written.
    pub lft_blocks: u64,
    /// LFT entries those blocks change on the switches (relative to what the SM last
    /// wrote there; every entry of a block sent to a switch with no such record): the
    /// destinations whose traffic moves.
    pub lft_entries: u64,
    /// The routes repair the previous ones after links or nodes were lost
    /// (`SmConfig::reroute_on_loss`) rather than being recomputed from scratch.
    pub rerouted: bool,
    /// PortInfo Sets written.
    pub port_sets: u64,
    /// P_KeyTable blocks written by the partition policy (`SmConfig::partitions`): only
    /// blocks that differ from what the ports held.
    pub pkey_blocks: u64,
    /// The engine that produced the routes.
    pub routing_engine: String,
    /// Largest window of SMPs in flight reached.
    pub max_window: usize,
}

/// One SMP a heavy sweep lost (no answer after all retries), and what it was for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The attribute (as in [`SweepStats::by_attribute`]).
    pub attribute: &'static str,
    /// A Set (configuration) rather than a Get (discovery).
    pub set: bool,
    /// The node GUID it was for; for a lost NodeInfo, the node whose port leads to the
    /// node never found (0: the SM's own node).
    pub node: u64,
    /// The port it was for (0: the node itself, or a switch's port 0); for a lost
    /// NodeInfo, the port of `node` that leads to the node never found.
    pub port: u8,
    /// The directed route the SMP took.
    pub path: ibsm_wire::DrPath,
}

/// The SM's role in the subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Looking for other SMs.
    Discovering,
    /// Another SM is master; this one polls it.
    Standby,
    /// This SM configures the subnet.
    Master,
    /// Disabled by the master.
    NotActive,
}

/// Something the host may want to know.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SmEvent {
    /// A sweep began.
    SweepStarted {
        /// Heavy or light.
        heavy: bool,
    },
    /// A phase of a sweep ended (progress for long sweeps).
    PhaseDone {
        /// Which.
        phase: Phase,
        /// Nodes found so far in this sweep.
        nodes: usize,
        /// SMPs sent so far in this sweep.
        smps: u64,
        /// How long the phase took on the transport's clock.
        elapsed: Duration,
    },
    /// A node appeared since the previous sweep.
    NodeAdded {
        /// Its GUID.
        guid: u64,
        /// Whether it is a switch.
        switch: bool,
    },
    /// A node of the previous sweep is gone.
    NodeRemoved {
        /// Its GUID.
        guid: u64,
    },
    /// The subnet is configured: every reachable port has its LID, routes and state.
    SubnetUp {
        /// What it took.
        stats: SweepStats,
    },
    /// A heavy sweep ended without configuring the whole subnet: SMPs of it got no
    /// answer after all retries, so nodes may be undiscovered or ports unconfigured
    /// (OpenSM's "errors during initialization"). It is not SUBNET UP: the next heavy
    /// sweep starts at once, each one in a row with twice the attempts per SMP, until
    /// one is complete ([`SmEvent::SubnetUp`]); after 8 in a row the next periodic
    /// sweep is heavy instead.
    SweepIncomplete {
        /// Incomplete heavy sweeps in a row, this one included (1: the first).
        sweep: u32,
        /// SMPs lost.
        lost: u64,
        /// The same per attribute name, sorted by name.
        by_attribute: Vec<(&'static str, u64)>,
        /// The first 64 of them.
        missing: Vec<Missing>,
    },
    /// A light sweep found nothing to do.
    LightSweepDone {
        /// What it took.
        stats: SweepStats,
    },
    /// A trap arrived (it was answered with TrapRepress).
    Trap {
        /// Trap number.
        number: u16,
        /// LID of the issuer.
        issuer_lid: u16,
    },
    /// A port reported a bad M_Key (trap 256).
    MKeyViolation {
        /// LID of the port that saw it.
        lid: u16,
        /// The key that was presented.
        key: u64,
    },
    /// A port ignores our M_Key (another SM's key, or a lease that never expired): the
    /// engine stops configuring it. Reported once per port.
    PortLocked {
        /// Port GUID (switches: node GUID).
        guid: u64,
    },
    /// Two nodes (or two ports) answered discovery with one GUID (a cloned board, a
    /// broken SMA). The one reached first is kept; the other is left out of the model:
    /// not linked, not explored past, given no LID and not configured, so the rest of
    /// the subnet comes up (OpenSM stops unless told to allow duplicates). Reported in
    /// every heavy sweep that meets it.
    DuplicateGuid {
        /// The GUID both answered with.
        guid: u64,
        /// A port GUID (else a node GUID).
        port: bool,
        /// The directed route to the one kept.
        first: ibsm_wire::DrPath,
        /// The directed route that reached the one left out.
        second: ibsm_wire::DrPath,
    },
    /// A multicast group's MLID lies beyond the MulticastFDBCap of a switch some of
    /// its members hang off (a switch with a smaller cap joined after the MLID was
    /// given): no MFT entry is written there, the group's tree routes around the
    /// switch and keeps its MLID (see `ibsm_sa::SaServer::mlids_beyond_cap`).
    /// Reported once per group, MLID and switch.
    MlidBeyondCap {
        /// The group.
        mgid: ibsm_wire::Gid,
        /// Its MLID.
        mlid: u16,
        /// Node GUID of the switch.
        switch_guid: u64,
    },
    /// A MulticastForwardingTable block Set of a multicast change got no answer (or
    /// was refused) through every re-send: the switch may still hold the block as it
    /// was before, so the change's next step, and every later multicast change, is
    /// held (sending it could close a forwarding loop between the old and the new
    /// tree). The next periodic sweep is heavy; the heavy sweep that next brings the
    /// subnet up sends the block again (held until confirmed), or stops waiting for it
    /// when it no longer finds the switch. Reported each time a block is given up on.
    MftSetUnconfirmed {
        /// Node GUID of the switch.
        switch_guid: u64,
        /// MFT block (MLIDs `0xC000 + 32 * block ..`).
        block: u16,
        /// Port group (ports `16 * position ..`).
        position: u8,
        /// The MLIDs of the block with ports in what was sent or in what the switch
        /// last confirmed: the groups whose forwarding there is unknown.
        mlids: Vec<u16>,
        /// Attempts made in all.
        attempts: u32,
    },
    /// A heavy sweep that brought the subnet up found the fabric differing from the
    /// reference topology (`SmConfig::topology_ref`, [`crate::topo_ref`]) otherwise
    /// than the last such sweep did: sent once per change, never for a sweep that
    /// finds the same differences again.
    TopologyChanged {
        /// Differences found now that the last report did not have.
        appeared: Vec<crate::topo_ref::Difference>,
        /// Differences of the last report that are gone.
        resolved: Vec<crate::topo_ref::Difference>,
        /// How many differences there are now.
        total: usize,
    },
    /// A port was marked unhealthy (`SmConfig::health`, [`crate::health`]), and
    /// `action` is what is done with it from the next heavy sweep on: `report` only,
    /// or its cable routed around (`isolate`; its traps ignored for a trap flood),
    /// discovery not exploring across it (`no_discover`) or its link disabled
    /// (`disable`). Sent once per mark, and once more for a port the isolation cap
    /// held back when an isolation ends and it takes its place (`capped` false).
    PortUnhealthy {
        /// Node GUID.
        node: u64,
        /// Port number (0: a switch's management port, which is only reported or
        /// silenced).
        port: u8,
        /// Why.
        reason: crate::health::Reason,
        /// What is done with it.
        action: crate::health::Action,
        /// Its condition's action would isolate it, but the isolation cap
        /// ([`HealthConfig::isolation_cap`](crate::health::HealthConfig::isolation_cap))
        /// was reached: only reported.
        capped: bool,
    },
    /// An unhealthy port was quiet for the quiet period (or cleared by the operator)
    /// and is taken back: routed,
    /// heard and (if this SM disabled it) enabled again from the next heavy sweep on.
    PortHealthy {
        /// Node GUID.
        node: u64,
        /// Port number.
        port: u8,
        /// Why it had been unhealthy.
        reason: crate::health::Reason,
    },
    /// A heavy sweep could not configure anything (e.g. the local port did not answer);
    /// the next periodic sweep is heavy again.
    SweepFailed {
        /// Why.
        reason: SweepFailure,
    },
    /// The heavy sweep could not program the subnet (every engine of the routing list
    /// failed and it says `no_fallback`, the LID space is exhausted, the LID store could not be written); the
    /// previous routes (if any) stay programmed.
    RoutingFailed {
        /// Why: [`SmError::Routing`](crate::SmError::Routing) with the routing
        /// engine's error, or what else stopped the programming.
        error: SharedError,
    },
    /// The first engines of `SmConfig::routing` could not route this fabric; a later
    /// one (minhop, unless the list says `no_fallback`) did, and its tables are the ones
    /// programmed by this sweep. Emitted before the sweep's [`SmEvent::SubnetUp`].
    RoutingFallback {
        /// The engine whose tables are in force.
        engine: ibsm_routing::EngineKind,
        /// Each engine tried before it, in order, and why it failed.
        failed: Vec<(ibsm_routing::EngineKind, ibsm_routing::RoutingError)>,
    },
    /// The SM's role changed.
    RoleChanged {
        /// New role.
        role: Role,
    },
    /// The partition policy could not be programmed in full (a P_Key table too small
    /// for a port's partitions). Reported by the heavy sweep that first meets it, and
    /// again only after a sweep without it (or with it changed).
    PartitionWarning {
        /// What was left out where.
        warning: crate::partition::PartitionWarning,
    },
    /// Another SM with a higher claim but a different SM_Key was seen; it is never handed
    /// control.
    UnauthenticatedSm {
        /// Its port GUID.
        guid: u64,
    },
    /// A counter sweep read a port (`SmConfig::perfmgr`): its counters, their growth
    /// since the port's previous reading and its error rates. One per port per sweep,
    /// before the sweep's [`SmEvent::PerfSweepDone`].
    PortCounters(Box<crate::perfmgr::PortPerf>),
    /// A counter of a port grew by more than its threshold
    /// (`PerfMgrConfig::thresholds`) in one counter sweep: what an unhealthy-port
    /// policy acts on. Emitted just before that port's [`SmEvent::PortCounters`].
    PortErrorThreshold(crate::perfmgr::ThresholdExceeded),
    /// A counter sweep ended.
    PerfSweepDone {
        /// What it did.
        stats: crate::perfmgr::PerfSweepStats,
    },
}

/// Why a heavy sweep could not configure anything ([`SmEvent::SweepFailed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SweepFailure {
    /// Discovery found no node: the SM's own port did not answer its NodeInfo (its M_Key
    /// is someone else's, or the port is down).
    #[error("discovery found no node: the local port did not answer")]
    LocalPortSilent,
}
