//! Configuration of the SM engine. Field names follow OpenSM's options (given beside
//! each field) so its users feel at home.

use std::time::Duration;

use ibsm_routing::{EngineKind, EngineList};
use ibsm_topology::Guid;

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

/// A field of [`SmConfig`] (or of a part of it: `perfmgr.`, `health.`) that a
/// [`SmConfigError`] is about; shown as its path (`lmc`, `perfmgr.timeout`), the name
/// the error text has always used, so a host maps a refusal to its own option by
/// matching this, not the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ConfigField {
    /// `priority`.
    Priority,
    /// `lmc`.
    Lmc,
    /// `m_key_protect`.
    MKeyProtect,
    /// `subnet_timeout`.
    SubnetTimeout,
    /// `packet_life_time`.
    PacketLifeTime,
    /// `sm_sl`.
    SmSl,
    /// `force_link_speed`.
    ForceLinkSpeed,
    /// `force_link_speed_ext`.
    ForceLinkSpeedExt,
    /// `force_link_width`.
    ForceLinkWidth,
    /// `polling_timeout`.
    PollingTimeout,
    /// `transaction_timeout`.
    TransactionTimeout,
    /// `max_wire_smps`.
    MaxWireSmps,
    /// `routing_threads`.
    RoutingThreads,
    /// `perfmgr.max_outstanding_queries`.
    PerfmgrMaxOutstandingQueries,
    /// `perfmgr.timeout`.
    PerfmgrTimeout,
    /// `perfmgr.sweep_time`.
    PerfmgrSweepTime,
    /// `health.flap_window`.
    HealthFlapWindow,
    /// `health.trap_window`.
    HealthTrapWindow,
    /// `health.quiet_period`.
    HealthQuietPeriod,
    /// `health.reboot_window`.
    HealthRebootWindow,
    /// `health.set_err_window`.
    HealthSetErrWindow,
}

impl ConfigField {
    /// The field's path in [`SmConfig`] (`perfmgr.timeout`: the `timeout` of
    /// [`SmConfig::perfmgr`]).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Priority => "priority",
            Self::Lmc => "lmc",
            Self::MKeyProtect => "m_key_protect",
            Self::SubnetTimeout => "subnet_timeout",
            Self::PacketLifeTime => "packet_life_time",
            Self::SmSl => "sm_sl",
            Self::ForceLinkSpeed => "force_link_speed",
            Self::ForceLinkSpeedExt => "force_link_speed_ext",
            Self::ForceLinkWidth => "force_link_width",
            Self::PollingTimeout => "polling_timeout",
            Self::TransactionTimeout => "transaction_timeout",
            Self::MaxWireSmps => "max_wire_smps",
            Self::RoutingThreads => "routing_threads",
            Self::PerfmgrMaxOutstandingQueries => "perfmgr.max_outstanding_queries",
            Self::PerfmgrTimeout => "perfmgr.timeout",
            Self::PerfmgrSweepTime => "perfmgr.sweep_time",
            Self::HealthFlapWindow => "health.flap_window",
            Self::HealthTrapWindow => "health.trap_window",
            Self::HealthQuietPeriod => "health.quiet_period",
            Self::HealthRebootWindow => "health.reboot_window",
            Self::HealthSetErrWindow => "health.set_err_window",
        }
    }
}

impl core::fmt::Display for ConfigField {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why [`SmConfig::validate`] refused a configuration: the field, the value and what
/// it must be. The engine is built only from a configuration that passed, so nothing
/// further down clamps, masks or panics on one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SmConfigError {
    /// A number outside what its field (usually a wire bit field) can hold.
    #[error("{field} {value} is outside {min}..={max} ({why})")]
    OutOfRange {
        /// The [`SmConfig`] field.
        field: ConfigField,
        /// The value given.
        value: u64,
        /// Smallest allowed value.
        min: u64,
        /// Largest allowed value.
        max: u64,
        /// Where the limit comes from.
        why: &'static str,
    },
    /// A period or count that must be positive is zero.
    #[error("{field} must be greater than zero ({why})")]
    Zero {
        /// The [`SmConfig`] field.
        field: ConfigField,
        /// What a zero would break.
        why: &'static str,
    },
    /// The SMP window would start above its own ceiling.
    #[error("max_wire_smps {start} is above max_wire_smps_limit {limit}")]
    WindowAboveLimit {
        /// `max_wire_smps`.
        start: usize,
        /// `max_wire_smps_limit`.
        limit: usize,
    },
    /// A partition statement of [`SmConfig::partitions`] carries a P_Key no table can
    /// hold (0x0000 is the empty slot; 0x8000 is the membership bit, given per member).
    #[error("partition {name:?}: P_Key {pkey:#06x} is outside 0x0001..=0x7fff")]
    PartitionPKey {
        /// The statement's name.
        name: String,
        /// The P_Key given.
        pkey: u16,
    },
}

/// The contents of OpenSM's routing input files, handed to the engines at every routing
/// (read them with [`ibsm_routing::read_guid_file`]; errors name file, line and token),
/// and `max_reverse_hops`, which goes with `io_guid_file`. Each list empty = the file
/// not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RoutingInputs {
    /// `root_guid_file`: the roots of updn, dnup, ftree and dfsssp's up-first pass
    /// (switch GUIDs, or CA port GUIDs naming their switch).
    pub roots: Vec<Guid>,
    /// `cn_guid_file`: ftree's compute nodes (port GUIDs).
    pub compute_nodes: Vec<Guid>,
    /// `io_guid_file`: ftree's I/O nodes (port GUIDs; never compute nodes).
    pub io_nodes: Vec<Guid>,
    /// `max_reverse_hops`: how many reverse hops (a switch used the wrong way round)
    /// ftree gives the I/O nodes' traffic where no up/down path exists
    /// ([`ibsm_routing::RouteOptions::max_reverse_hops`]). Default 0: none.
    pub max_reverse_hops: u16,
    /// `guid_routing_order_file`: port GUIDs minhop, updn, dnup and dfsssp route first,
    /// in this order.
    pub order: Vec<Guid>,
}

impl RoutingInputs {
    /// The route options carrying these lists.
    #[must_use]
    pub fn apply(&self, opts: ibsm_routing::RouteOptions) -> ibsm_routing::RouteOptions {
        opts.with_roots(self.roots.clone())
            .with_compute_nodes(self.compute_nodes.clone())
            .with_io_nodes(self.io_nodes.clone())
            .with_max_reverse_hops(self.max_reverse_hops)
            .with_routing_order(self.order.clone())
    }
}

/// Everything the engine can be told; [`SmConfig::validate`] says whether it can.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SmConfig {
    /// SM priority 0..=15 (OpenSM `sm_priority`, default 0).
    pub priority: u8,
    /// SM_Key guarding SMInfo exchanges and SA secrets (OpenSM `sm_key`, default 1).
    pub sm_key: u64,
    /// LID mask control 0..=7 for CA and router ports (OpenSM `lmc`).
    pub lmc: u8,
    /// Routing engines, tried in order (OpenSM `routing_engine`, e.g. `ftree,updn`;
    /// parse one with `str::parse`): the first that routes the fabric programs it, and
    /// minhop routes it when all listed fail, unless the list says `no_fallback`. Which
    /// engine's tables are in force is [`SweepStats::routing_engine`](crate::SweepStats);
    /// [`SmEvent::RoutingFallback`](crate::SmEvent::RoutingFallback) says why the ones
    /// before it failed. Default: minhop.
    pub routing: EngineList,
    /// Worker threads for routing (1 = single-threaded; at least 1).
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
    /// Standby: time between polls of the master (OpenSM `sminfo_polling_timeout`, 10 s;
    /// not zero).
    pub polling_timeout: Duration,
    /// Standby: OpenSM's `polling_retry_number` (4) with OpenSM 3.3's count: the master
    /// is declared dead after `polling_retries + 1` unanswered polls in a row, where an
    /// unanswered poll is re-probed at once, `transaction_timeout` after it went out (at
    /// most one period), rather than a period later (`ibsm_election::Config::polling_retries`
    /// has the rule). A dead master is declared lost
    /// `polling_timeout + (polling_retries + 1) x transaction_timeout` after the poll of
    /// its last answer at the latest.
    pub polling_retries: u32,
    /// Most SMPs in flight at once at the start of a sweep (OpenSM `max_wire_smps`, 4;
    /// ours adapts upwards from here up to `max_wire_smps_limit`; at least 1).
    pub max_wire_smps: usize,
    /// Ceiling of the adaptive window (at least `max_wire_smps`).
    pub max_wire_smps_limit: usize,
    /// Per-attempt timeout of an SMP (OpenSM `transaction_timeout`, 200 ms; not zero).
    pub transaction_timeout: Duration,
    /// Re-sends of an SMP (OpenSM `transaction_retries`, 3).
    pub transaction_retries: u32,
    /// Subnet prefix written to every port (OpenSM `subnet_prefix`).
    pub subnet_prefix: u64,
    /// PortInfo.SubnetTimeout exponent 0..=31 (OpenSM `subnet_timeout`, 18).
    pub subnet_timeout: u8,
    /// SwitchInfo.LifeTimeValue 0..=31 (OpenSM `packet_life_time`, 0x12).
    pub packet_life_time: u8,
    /// SL 0..=15 the ports use to reach the SM (OpenSM `sm_sl`, 0).
    pub sm_sl: u8,
    /// Ask ports to re-register with the SA when their configuration changed.
    pub client_reregister: bool,
    /// Serve Subnet Administration (class 0x03) from the SM's view of the subnet
    /// (`ibsm-sa`); on by default, as OpenSM always serves it: IPoIB, rdma_cm and the
    /// diagnostics need it. The heavy sweep then also reads the P_Key tables the SA
    /// serves (CA ports, switch port 0, enforcing switch ports). The SA's own sends
    /// (RMPP windows, Reports) wait `transaction_timeout` and retry
    /// `transaction_retries` times. Off: class 0x03 requests are ignored.
    pub sa: bool,
    /// How SA tables leave: RMPP segments under the RMPP sender protocol (simulator) or
    /// one message for a umad agent with kernel RMPP.
    pub sa_rmpp: ibsm_sa::RmppMode,
    /// Write SwitchInfo.MulticastFDBTop (the last MLID of the highest MFT block in
    /// use, 0xBFFF for none) on switches whose port 0 says IsMulticastFDBTopSupported
    /// (OpenSM `use_mfttop`, on by default): such a switch forwards no MLID above it.
    pub use_mfttop: bool,
    /// Partition policy (OpenSM's partition manager, `partitions.conf`): every heavy
    /// sweep reads the P_Key tables of CA and router ports, switch port 0 and enforcing
    /// switch ports, writes the 32-entry blocks that differ from the policy's tables,
    /// and turns partition enforcement on in switch ports cabled to end ports where the
    /// switch can (see [`crate::partition`]); the SA keeps the policy's IPoIB broadcast
    /// groups and `mgid=` groups. Default:
    /// [`PartitionConfig::opensm_default`](crate::partition::PartitionConfig::opensm_default),
    /// what OpenSM does without a partition file (`Default=0x7fff, ipoib : ALL=full ;`:
    /// every end port holds 0xFFFF, and the IPoIB broadcast group of the default
    /// partition exists before any host asks). `None`: P_Key tables and enforcement bits
    /// are left as they are, and no group is predefined.
    pub partitions: Option<crate::partition::PartitionConfig>,
    /// OpenSM's routing input files, read (`root_guid_file`, `cn_guid_file`,
    /// `io_guid_file`, `guid_routing_order_file`). Default: none.
    pub routing_inputs: RoutingInputs,
    /// PortInfo.LinkSpeedEnabled written to every port with a link (OpenSM
    /// `force_link_speed`): 0 leaves it alone, 1..=14 are those speed bits (1 SDR, 2 DDR,
    /// 4 QDR), 15 (the default) is "the port's LinkSpeedSupported", sent only where
    /// the port has fewer enabled. At most 15.
    pub force_link_speed: u8,
    /// PortInfo.LinkSpeedExtEnabled written where both ends of the link support
    /// extended speeds (OpenSM `force_link_speed_ext`): 0 leaves it alone, 1..=29 are
    /// those speed bits (1 FDR, 2 EDR, 4 HDR, 8 NDR, 16 XDR), 30 turns extended speeds
    /// off, 31 (the default) is "the port's LinkSpeedExtSupported", sent only where
    /// the port has fewer enabled. At most 31.
    pub force_link_speed_ext: u8,
    /// PortInfo.LinkWidthEnabled written to every port with a link (OpenSM
    /// `force_link_width`): 0 leaves it alone, 1..=31 are those width bits (1 1x,
    /// 2 4x, 4 8x, 8 12x, 16 2x), 255 (the default) is "the port's
    /// LinkWidthSupported", sent only where the port has fewer enabled. 32..=254 are
    /// reserved and refused.
    pub force_link_width: u8,
    /// The performance manager ([`crate::perfmgr`]): periodic counter sweeps as
    /// Master after SUBNET UP. Default `None` (off), as OpenSM's `perfmgr FALSE`.
    pub perfmgr: Option<crate::perfmgr::PerfMgrConfig>,
    /// Port health (UFM's unhealthy ports, NVIDIA's `hm_unhealthy_ports_checks`,
    /// OpenSM's trap aging and `babbling_port_policy`): a port whose node reboots
    /// repeatedly, whose link flaps, that stops answering, floods traps, refuses Sets
    /// or whose error counters pass their PerfMgr thresholds is marked unhealthy,
    /// reported ([`SmEvent::PortUnhealthy`](crate::SmEvent::PortUnhealthy)) and dealt
    /// with by its condition's action (report, isolate, disable, no_discover; automatic
    /// isolations capped), then taken back after a quiet period; the operator isolates
    /// and clears ports by hand; see [`crate::health`]. The defaults mark only ports
    /// far outside normal behaviour (more than 5 flaps a minute, 100 traps in 10 s, 3
    /// heavy sweeps in a row without an answer; reboots and failed Sets only
    /// reported) and never disable a link;
    /// [`HealthConfig::off`](crate::health::HealthConfig::off) turns the checks off.
    pub health: crate::health::HealthConfig,
    /// The reference topology every heavy sweep compares the fabric with
    /// ([`crate::topo_ref`]), by GUID and port; differences are reported once per
    /// change and, with [`TopoPolicy::Isolate`](crate::topo_ref::TopoPolicy::Isolate),
    /// miswired and extra cables carry no routes. Default `None` (no comparison).
    pub topology_ref: Option<crate::topo_ref::TopologyRef>,
}

/// `value` within `0..=max`, or the error naming `field`.
fn at_most(field: ConfigField, value: u8, max: u8, why: &'static str) -> Result<(), SmConfigError> {
    if value > max {
        return Err(SmConfigError::OutOfRange {
            field,
            value: u64::from(value),
            min: 0,
            max: u64::from(max),
            why,
        });
    }
    Ok(())
}

impl SmConfig {
    /// Checks every field the engine or its parts would reject or misbehave on: the
    /// wire bit fields (priority, LMC, protect bits, SubnetTimeout, LifeTimeValue,
    /// MasterSMSL), the periods the election and transactions divide by or wait on,
    /// the SMP window and routing threads, and the P_Keys of a partition policy.
    /// [`SubnetManager::new`](crate::SubnetManager::new) calls it; call it yourself to
    /// check a configuration before building anything.
    ///
    /// # Errors
    /// [`SmConfigError`] for the first field found wrong.
    pub fn validate(&self) -> Result<(), SmConfigError> {
        at_most(
            ConfigField::Priority,
            self.priority,
            15,
            "4-bit SMInfo.Priority",
        )?;
        at_most(ConfigField::Lmc, self.lmc, 7, "3-bit PortInfo.LMC")?;
        at_most(
            ConfigField::MKeyProtect,
            self.m_key_protect,
            3,
            "2-bit PortInfo.M_KeyProtectBits",
        )?;
        at_most(
            ConfigField::SubnetTimeout,
            self.subnet_timeout,
            31,
            "5-bit PortInfo.SubnetTimeout",
        )?;
        at_most(
            ConfigField::PacketLifeTime,
            self.packet_life_time,
            31,
            "5-bit SwitchInfo.LifeTimeValue",
        )?;
        at_most(
            ConfigField::SmSl,
            self.sm_sl,
            15,
            "4-bit PortInfo.MasterSMSL",
        )?;
        at_most(
            ConfigField::ForceLinkSpeed,
            self.force_link_speed,
            15,
            "4-bit PortInfo.LinkSpeedEnabled",
        )?;
        at_most(
            ConfigField::ForceLinkSpeedExt,
            self.force_link_speed_ext,
            31,
            "5-bit PortInfo.LinkSpeedExtEnabled",
        )?;
        if self.force_link_width != 0xFF {
            at_most(
                ConfigField::ForceLinkWidth,
                self.force_link_width,
                31,
                "PortInfo.LinkWidthEnabled: 32..=254 are reserved, 255 is \"supported\"",
            )?;
        }
        if self.polling_timeout.is_zero() {
            return Err(SmConfigError::Zero {
                field: ConfigField::PollingTimeout,
                why: "the election polls the master every polling_timeout",
            });
        }
        if self.transaction_timeout.is_zero() {
            return Err(SmConfigError::Zero {
                field: ConfigField::TransactionTimeout,
                why: "every SMP would time out as it is sent",
            });
        }
        if self.max_wire_smps == 0 {
            return Err(SmConfigError::Zero {
                field: ConfigField::MaxWireSmps,
                why: "no SMP could ever be in flight",
            });
        }
        if self.max_wire_smps > self.max_wire_smps_limit {
            return Err(SmConfigError::WindowAboveLimit {
                start: self.max_wire_smps,
                limit: self.max_wire_smps_limit,
            });
        }
        if self.routing_threads == 0 {
            return Err(SmConfigError::Zero {
                field: ConfigField::RoutingThreads,
                why: "routing needs at least one thread",
            });
        }
        if let Some(p) = &self.perfmgr {
            if p.max_outstanding_queries == 0 {
                return Err(SmConfigError::Zero {
                    field: ConfigField::PerfmgrMaxOutstandingQueries,
                    why: "no counter query could ever be in flight",
                });
            }
            if p.timeout.is_zero() {
                return Err(SmConfigError::Zero {
                    field: ConfigField::PerfmgrTimeout,
                    why: "every counter query would time out as it is sent",
                });
            }
            if p.sweep_time.is_zero() {
                return Err(SmConfigError::Zero {
                    field: ConfigField::PerfmgrSweepTime,
                    why: "counter sweeps would follow each other without a pause",
                });
            }
        }
        self.health.validate()?;
        for st in self.partitions.iter().flat_map(|p| &p.statements) {
            if let Some(pkey) = st.pkey.filter(|k| !(1..=0x7FFF).contains(k)) {
                return Err(SmConfigError::PartitionPKey {
                    name: st.name.clone(),
                    pkey,
                });
            }
        }
        Ok(())
    }
}

impl Default for SmConfig {
    fn default() -> Self {
        Self {
            priority: 0,
            sm_key: 1,
            lmc: 0,
            routing: EngineList::from(EngineKind::MinHop),
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
            sa: true,
            sa_rmpp: ibsm_sa::RmppMode::Segments,
            use_mfttop: true,
            partitions: Some(crate::partition::PartitionConfig::opensm_default()),
            routing_inputs: RoutingInputs::default(),
            force_link_speed: 15,
            force_link_speed_ext: 31,
            force_link_width: 0xFF,
            perfmgr: None,
            health: crate::health::HealthConfig::default(),
            topology_ref: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A change to the default configuration.
    type Edit = fn(&mut SmConfig);

    /// The error `validate` gives for the default configuration changed by `edit`.
    fn refused(edit: impl FnOnce(&mut SmConfig)) -> SmConfigError {
        let mut c = SmConfig::default();
        edit(&mut c);
        c.validate().expect_err("should be refused")
    }

    fn out_of_range(field: ConfigField, value: u64, max: u64) -> impl Fn(&SmConfigError) -> bool {
        move |e| {
            matches!(e, SmConfigError::OutOfRange { field: f, value: v, min: 0, max: m, .. }
                if *f == field && *v == value && *m == max)
        }
    }

    #[test]
    fn defaults_and_every_limit_itself_pass() {
        SmConfig::default().validate().unwrap();
        let c = SmConfig {
            priority: 15,
            lmc: 7,
            m_key_protect: 3,
            subnet_timeout: 31,
            packet_life_time: 31,
            sm_sl: 15,
            force_link_speed: 15,
            force_link_speed_ext: 31,
            force_link_width: 255,
            max_wire_smps: 1,
            max_wire_smps_limit: 1,
            routing_threads: 1,
            polling_timeout: Duration::from_nanos(1),
            transaction_timeout: Duration::from_nanos(1),
            partitions: Some(crate::partition::PartitionConfig::opensm_default()),
            ..SmConfig::default()
        };
        c.validate().unwrap();
    }

    #[test]
    fn bit_fields_one_above_their_width_are_refused() {
        let cases: [(ConfigField, Edit, u64, u64); 10] = [
            (ConfigField::Priority, |c| c.priority = 16, 16, 15),
            (ConfigField::Lmc, |c| c.lmc = 8, 8, 7),
            (ConfigField::MKeyProtect, |c| c.m_key_protect = 4, 4, 3),
            (
                ConfigField::SubnetTimeout,
                |c| c.subnet_timeout = 32,
                32,
                31,
            ),
            (
                ConfigField::PacketLifeTime,
                |c| c.packet_life_time = 32,
                32,
                31,
            ),
            (ConfigField::SmSl, |c| c.sm_sl = 16, 16, 15),
            (
                ConfigField::ForceLinkSpeed,
                |c| c.force_link_speed = 16,
                16,
                15,
            ),
            (
                ConfigField::ForceLinkSpeedExt,
                |c| c.force_link_speed_ext = 32,
                32,
                31,
            ),
            (
                ConfigField::ForceLinkWidth,
                |c| c.force_link_width = 32,
                32,
                31,
            ),
            (
                ConfigField::ForceLinkWidth,
                |c| c.force_link_width = 254,
                254,
                31,
            ),
        ];
        for (field, edit, value, max) in cases {
            let e = refused(edit);
            assert!(out_of_range(field, value, max)(&e), "{field}: {e:?}");
            let text = e.to_string();
            assert!(
                text.contains(field.name()) && text.contains(&value.to_string()),
                "{text}"
            );
        }
    }

    #[test]
    fn zero_periods_and_counts_are_refused() {
        let cases: [(ConfigField, Edit); 4] = [
            (ConfigField::PollingTimeout, |c| {
                c.polling_timeout = Duration::ZERO;
            }),
            (ConfigField::TransactionTimeout, |c| {
                c.transaction_timeout = Duration::ZERO;
            }),
            (ConfigField::MaxWireSmps, |c| c.max_wire_smps = 0),
            (ConfigField::RoutingThreads, |c| c.routing_threads = 0),
        ];
        for (field, edit) in cases {
            let e = refused(edit);
            assert!(
                matches!(e, SmConfigError::Zero { field: f, .. } if f == field),
                "{field}: {e:?}"
            );
        }
    }

    #[test]
    fn window_above_its_ceiling_is_refused() {
        let e = refused(|c| {
            c.max_wire_smps = 9;
            c.max_wire_smps_limit = 8;
        });
        assert_eq!(e, SmConfigError::WindowAboveLimit { start: 9, limit: 8 });
    }

    #[test]
    fn partition_pkeys_outside_15_bits_are_refused() {
        for pkey in [0x0000, 0x8000, 0x8001, 0xFFFF] {
            let e = refused(|c| {
                let mut p = crate::partition::PartitionConfig::opensm_default();
                p.statements[0].pkey = Some(pkey);
                p.statements[0].name = "bad".into();
                c.partitions = Some(p);
            });
            assert_eq!(
                e,
                SmConfigError::PartitionPKey {
                    name: "bad".into(),
                    pkey
                }
            );
        }
    }
}
