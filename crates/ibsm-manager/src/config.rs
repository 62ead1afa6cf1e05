//! Configuration of the SM engine. Field names follow OpenSM's options (given beside
//! each field) so its users feel at home.

use std::time::Duration;

use ibsm_routing::EngineKind;

/// How M_Keys are chosen for the ports the SM configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MKeyMode {
    /// Leave M_Keys alone (OpenSM `m_key 0`).
    Off,
    /// The same key on every port (OpenSM `m_key <key>`).
    Single(u64),
    /// A different key per port: SipHash-2-4 of the port GUID under this 128-bit secret,
    /// so a key leaked from one port opens no other (beyond OpenSM).
    PerPort {
        /// The secret (two 64-bit halves).
        secret: [u64; 2],
    },
}

/// Everything the engine can be told.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SmConfig {
    /// SM priority 0..=15 (OpenSM `sm_priority`, default 0).
    pub priority: u8,
    /// SM_Key guarding SMInfo exchanges and SA secrets (OpenSM `sm_key`, default 1).
    pub sm_key: u64,
    /// LID mask control 0..=7 for CA and router ports (OpenSM `lmc`).
    pub lmc: u8,
    /// Routing engine (OpenSM `routing_engine`).
    pub routing: EngineKind,
    /// Engines to try when the first fails, in order; empty = fail loudly.
    pub routing_fallback: Vec<EngineKind>,
    /// Worker threads for routing (1 = single-threaded).
    pub routing_threads: usize,
    /// When a heavy sweep finds the fabric only lost links or nodes since the routes in
    /// force were computed (same switches or fewer, every surviving port on its old LID,
    /// no new cable), repair the previous routes with the engine's incremental re-route
    /// instead of recomputing them: only LIDs whose routes used a dead port move, so
    /// traffic elsewhere stays put and far fewer LFT blocks are written. Any growth (a
    /// cable or node back or new) recomputes from scratch, which also rebalances. Until
    /// then the repaired tables stay as they are, however unbalanced the repairs left
    /// them; [`SubnetManager::request_rebalance`](crate::SubnetManager::request_rebalance)
    /// forces a recompute (ibsmd does it on SIGHUP). Only minhop, updn, dnup and ftree
    /// re-route incrementally; the others always recompute. Default on (beyond OpenSM,
    /// which always recomputes).
    pub reroute_on_loss: bool,
    /// Rebalance on its own once things are quiet: when the routes in force were
    /// repaired by re-routing (`reroute_on_loss`) and no topology change has been seen
    /// for this long, the Master recomputes every route from scratch, as
    /// [`SubnetManager::request_rebalance`](crate::SubnetManager::request_rebalance)
    /// does; a new change (another loss, re-routed too) restarts the wait, a recompute
    /// for any other reason ends it. Default `None`: repaired routes stay until growth
    /// or an explicit rebalance, because a recompute moves traffic all over the fabric
    /// and rewrites many LFT blocks (on the 11,664-CA tree, ~4,900 blocks and ~226,000
    /// entries for minhop against ~1,000 blocks and ~2,000 entries for the re-route it
    /// undoes), which an operator may rather schedule. ibsmd: `--rebalance-after SECS`.
    pub rebalance_after: Option<Duration>,
    /// M_Key policy (OpenSM `m_key`).
    pub m_key: MKeyMode,
    /// M_KeyProtectBits written with the key (OpenSM `m_key_protection_level`, 0..=3).
    pub m_key_protect: u8,
    /// M_KeyLeasePeriod in seconds (OpenSM `m_key_lease_period`; 0 = never expires).
    pub m_key_lease: u16,
    /// Time between light sweeps (OpenSM `sweep_interval`, 10 s; zero = no periodic sweep).
    pub sweep_interval: Duration,
    /// Standby: time between polls of the master (OpenSM `sminfo_polling_timeout`, 10 s).
    pub polling_timeout: Duration,
    /// Standby: failed polls before the master is declared dead (OpenSM
    /// `polling_retry_number`, 4).
    pub polling_retries: u32,
    /// Most SMPs in flight at once at the start of a sweep (OpenSM `max_wire_smps`, 4;
    /// ours adapts upwards from here up to `max_wire_smps_limit`).
    pub max_wire_smps: usize,
    /// Ceiling of the adaptive window.
    pub max_wire_smps_limit: usize,
    /// Per-attempt timeout of an SMP (OpenSM `transaction_timeout`, 200 ms).
    pub transaction_timeout: Duration,
    /// Re-sends of an SMP (OpenSM `transaction_retries`, 3).
    pub transaction_retries: u32,
    /// Subnet prefix written to every port (OpenSM `subnet_prefix`).
    pub subnet_prefix: u64,
    /// PortInfo.SubnetTimeout exponent (OpenSM `subnet_timeout`, 18).
    pub subnet_timeout: u8,
    /// SwitchInfo.LifeTimeValue (OpenSM `packet_life_time`, 0x12).
    pub packet_life_time: u8,
    /// SL the ports use to reach the SM (OpenSM `sm_sl`, 0).
    pub sm_sl: u8,
    /// Ask ports to re-register with the SA when their configuration changed.
    pub client_reregister: bool,
    /// Serve Subnet Administration (class 0x03) from the SM's view of the subnet
    /// (`ibsm-sa`); off by default. The heavy sweep then also reads the P_Key tables
    /// the SA serves (CA ports, switch port 0, enforcing switch ports). The SA's own
    /// sends (RMPP windows, Reports) wait `transaction_timeout` and retry
    /// `transaction_retries` times.
    pub sa: bool,
    /// How SA tables leave: RMPP segments under the RMPP sender protocol (simulator) or
    /// one message for a umad agent with kernel RMPP.
    pub sa_rmpp: ibsm_sa::RmppMode,
    /// Partition policy (OpenSM's partition manager, `partitions.conf`): when set, every
    /// heavy sweep reads the P_Key tables of CA and router ports, switch port 0 and
    /// enforcing switch ports, writes the 32-entry blocks that differ from the policy's
    /// tables, and turns partition enforcement on in switch ports cabled to end ports
    /// where the switch can (see [`crate::partition`]). `None` (default): P_Key tables
    /// and enforcement bits are left as they are.
    /// [`PartitionConfig::opensm_default`](crate::partition::PartitionConfig::opensm_default)
    /// is what OpenSM does without a partition file.
    pub partitions: Option<crate::partition::PartitionConfig>,
}

impl Default for SmConfig {
    fn default() -> Self {
        Self {
            priority: 0,
            sm_key: 1,
            lmc: 0,
            routing: EngineKind::MinHop,
            routing_fallback: Vec::new(),
            routing_threads: 1,
            reroute_on_loss: true,
            rebalance_after: None,
            m_key: MKeyMode::Off,
            m_key_protect: 0,
            m_key_lease: 0,
            sweep_interval: Duration::from_secs(10),
            polling_timeout: Duration::from_secs(10),
            polling_retries: 4,
            max_wire_smps: 4,
            max_wire_smps_limit: 256,
            transaction_timeout: Duration::from_millis(200),
            transaction_retries: 3,
            subnet_prefix: ibsm_wire::DEFAULT_SUBNET_PREFIX,
            subnet_timeout: 18,
            packet_life_time: 0x12,
            sm_sl: 0,
            client_reregister: true,
            sa: false,
            sa_rmpp: ibsm_sa::RmppMode::Segments,
            partitions: None,
        }
    }
}
