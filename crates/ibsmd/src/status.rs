//! What a running ibsmd reports about itself: one [`Status`] built by the run loop from
//! the engine and the events it saw ([`Tracker`]), served by the control socket
//! (`ibsmd status`) and the metrics endpoint (`/status`, `/metrics`).

use std::collections::BTreeMap;

use ibsm::manager::{Role, SmEvent, SubnetManager, SweepStats};
use ibsm::wire::{NodeType, SmState};
use serde::{Deserialize, Serialize};

pub(crate) use crate::daemon::role_name;

/// The SM's state at one moment (serialised as the JSON status).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Status {
    /// `MASTER`, `STANDBY`, `DISCOVERING` or `NOT ACTIVE`.
    pub(crate) role: String,
    /// This SM's port GUID (hex).
    pub(crate) port_guid: String,
    /// This SM's LID (0 until assigned).
    pub(crate) sm_lid: u16,
    /// The master SM, when known: this one, or the one this SM polls.
    pub(crate) master: Option<Master>,
    /// Whether the subnet was brought up at least once.
    pub(crate) subnet_up: bool,
    /// Whether a sweep runs now.
    pub(crate) sweeping: bool,
    /// Sweep counts and the last sweeps' durations.
    pub(crate) sweeps: Sweeps,
    /// SMPs over all sweeps.
    pub(crate) smps: Smps,
    /// Traps received, by trap number.
    pub(crate) traps: BTreeMap<u16, u64>,
    /// What the last heavy sweep found.
    pub(crate) fabric: FabricCounts,
    /// Ports the health policy marks unhealthy (`SmConfig::health`), each as
    /// `<node GUID>/<port>: <kind> (<reason>): <action>`, in GUID order; `isolation
    /// cap reached` after a port the cap kept from being isolated.
    pub(crate) unhealthy_ports: Vec<String>,
    /// Isolated ports (their link out of routing) per condition (`manual`,
    /// `flapping`, ...), and the isolation cap.
    #[serde(default)]
    pub(crate) isolation: Isolation,
    /// Partition warnings of the heavy sweeps, as logged.
    pub(crate) partition_warnings: Vec<String>,
    /// The reference topology check (`None` without `topology_ref_file`).
    pub(crate) topology: Option<Topology>,
    /// The routing engine of the routes in force (empty before any).
    pub(crate) routing_engine: String,
    /// Milliseconds since the daemon started.
    pub(crate) uptime_ms: f64,
    /// The performance manager's counter sweeps and the counters they read (`None`
    /// without `--perfmgr`).
    pub(crate) perfmgr: Option<Perf>,
    /// How long calls into the engine kept the daemon from reading its port.
    pub(crate) engine: EngineBusy,
}

/// The ports the health policy isolates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Isolation {
    /// Isolated ports per condition (only conditions with some).
    pub(crate) by_condition: BTreeMap<String, usize>,
    /// The most ports the automatic checks may isolate now.
    pub(crate) cap: usize,
    /// Whether the cap kept a port from being isolated (it is only reported).
    pub(crate) cap_reached: bool,
}

/// The wall time of the calls into the engine since the start: while one runs, no MAD
/// is read, so the longest is the longest an SMInfo poll or SA query can have waited
/// for the engine (on top of the transport and the machine).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct EngineBusy {
    /// Calls timed.
    pub(crate) calls: u64,
    /// Their time together, in ms.
    pub(crate) busy_ms: f64,
    /// The longest, in ms.
    pub(crate) longest_ms: f64,
    /// Which entry point the longest went through (`incoming`, `timeout`, `job`, ...).
    pub(crate) longest_call: String,
    /// 99.99 % of the calls took at most this long, in ms (a power-of-two bound).
    pub(crate) p9999_ms: Option<f64>,
}

impl EngineBusy {
    /// The figures of `meter`.
    pub(crate) fn of(meter: &ibsm::transport::BusyMeter) -> Self {
        use ibsm::transport::Call;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let (kind, longest) = meter.longest().unwrap_or((Call::Poll, Default::default()));
        Self {
            calls: Call::ALL.iter().map(|&k| meter.count(k)).sum(),
            busy_ms: Call::ALL.iter().map(|&k| ms(meter.total(k))).sum(),
            longest_ms: ms(longest),
            longest_call: if meter.longest().is_some() {
                kind.as_str().to_owned()
            } else {
                String::new()
            },
            p9999_ms: meter.quantile_bound(0.9999).map(ms),
        }
    }
}

/// What the performance manager found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Perf {
    /// Counter sweeps finished.
    pub(crate) sweeps: u64,
    /// Whether one runs now.
    pub(crate) sweeping: bool,
    /// The last one's figures.
    pub(crate) last: Option<PerfSweep>,
    /// Threshold reports over all sweeps.
    pub(crate) over_threshold: u64,
    /// Every port's counters as last read, sorted by node GUID and port.
    pub(crate) ports: Vec<PortCounters>,
}

/// One counter sweep's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PerfSweep {
    /// Agents asked.
    pub(crate) agents: usize,
    /// Ports read.
    pub(crate) ports_read: usize,
    /// Ports whose counters could not be read.
    pub(crate) ports_failed: usize,
    /// Queries sent.
    pub(crate) queries: u64,
    /// Queries failed.
    pub(crate) failures: u64,
    /// Of those, timeouts.
    pub(crate) timeouts: u64,
    /// Its duration, in ms.
    pub(crate) duration_ms: f64,
}

/// One port's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PortCounters {
    /// Node GUID (hex).
    pub(crate) node_guid: String,
    /// Port GUID (hex; a switch port's is its node's).
    pub(crate) guid: String,
    /// Port number.
    pub(crate) port: u8,
    /// The LID its agent answers at (a switch's port 0 LID; 0: not known).
    pub(crate) lid: u16,
    /// Whether the node is a switch.
    pub(crate) switch: bool,
    /// Counters by perfquery's names, as perfquery prints them (data in 4-byte words).
    pub(crate) counters: BTreeMap<String, u64>,
}

/// The fabric compared with the reference topology (`topology_ref_file`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Topology {
    /// The reference file.
    pub(crate) reference: String,
    /// `report` or `isolate`.
    pub(crate) policy: String,
    /// Whether a heavy sweep has compared the fabric yet.
    pub(crate) checked: bool,
    /// Reports so far (each a change of the differences).
    pub(crate) changes: u64,
    /// Differences now, by kind (`missing_node`, `miswired`, ...; every kind listed).
    pub(crate) by_kind: BTreeMap<String, usize>,
    /// The differences now, as logged, sorted; the first [`MAX_DIFFERENCES`] only.
    pub(crate) differences: Vec<String>,
}

/// Most differences listed in the status (the counts are complete): a status is built
/// after every slice, and a fabric wired against the wrong plan may differ everywhere.
pub(crate) const MAX_DIFFERENCES: usize = 256;

/// The master SM.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Master {
    /// Its port GUID (hex).
    pub(crate) guid: String,
    /// Its LID (0 when not known).
    pub(crate) lid: u16,
    /// Whether it is this SM.
    pub(crate) local: bool,
}

/// Sweep counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sweeps {
    /// Heavy sweeps that brought the subnet up (SUBNET UP).
    pub(crate) heavy: u64,
    /// Light sweeps that found nothing to do.
    pub(crate) light: u64,
    /// The last heavy sweep's duration on the transport's clock, in ms.
    pub(crate) last_heavy_ms: Option<f64>,
    /// The last light sweep's duration, in ms.
    pub(crate) last_light_ms: Option<f64>,
}

/// SMP counters over every sweep (heavy and light).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Smps {
    /// SMPs sent by sweeps, retries included.
    pub(crate) sweeps: u64,
    /// SMPs sent since start by anything (sweeps, election, trap checks, answers).
    pub(crate) total: u64,
    /// Retries.
    pub(crate) retries: u64,
    /// Requests that got no answer after all retries.
    pub(crate) timeouts: u64,
    /// SMPs by attribute name.
    pub(crate) by_attribute: BTreeMap<String, u64>,
}

/// Counts of the subnet found by the last heavy sweep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FabricCounts {
    /// Nodes.
    pub(crate) nodes: usize,
    /// Switches.
    pub(crate) switches: usize,
    /// Channel adapters.
    pub(crate) cas: usize,
    /// Routers.
    pub(crate) routers: usize,
    /// Cables.
    pub(crate) links: usize,
    /// LIDs assigned (2^LMC per port).
    pub(crate) lids: usize,
}

/// What the run loop counts from the engine's events between snapshots.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tracker {
    /// Set by the run loop after each slice.
    pub(crate) engine: EngineBusy,
    sweeps: Sweeps,
    smps: Smps,
    traps: BTreeMap<u16, u64>,
    partition_warnings: Vec<String>,
    perf_sweeps: u64,
    over_threshold: u64,
    topology_changes: u64,
}

/// Most partition warnings kept (the newest replace the oldest).
const MAX_WARNINGS: usize = 64;

impl Tracker {
    /// Counts one event.
    pub(crate) fn observe(&mut self, ev: &SmEvent) {
        match ev {
            SmEvent::SubnetUp { stats } => {
                self.sweeps.heavy += 1;
                self.sweeps.last_heavy_ms = Some(ms(stats));
                self.add(stats);
            }
            SmEvent::LightSweepDone { stats } => {
                self.sweeps.light += 1;
                self.sweeps.last_light_ms = Some(ms(stats));
                self.add(stats);
            }
            SmEvent::Trap { number, .. } => *self.traps.entry(*number).or_default() += 1,
            SmEvent::PerfSweepDone { .. } => self.perf_sweeps += 1,
            SmEvent::PortErrorThreshold(_) => self.over_threshold += 1,
            SmEvent::TopologyChanged { .. } => self.topology_changes += 1,
            SmEvent::PartitionWarning { warning } => {
                if self.partition_warnings.len() == MAX_WARNINGS {
                    self.partition_warnings.remove(0);
                }
                self.partition_warnings.push(warning.to_string());
            }
            _ => {}
        }
    }

    fn add(&mut self, s: &SweepStats) {
        self.smps.sweeps += s.smps;
        self.smps.retries += s.retries;
        self.smps.timeouts += s.timeouts;
        for (attr, n) in &s.by_attribute {
            *self
                .smps
                .by_attribute
                .entry((*attr).to_owned())
                .or_default() += n;
        }
    }

    /// The status of `sm` with what was counted so far.
    #[must_use]
    pub(crate) fn status(&self, sm: &SubnetManager, uptime_ms: f64) -> Status {
        let subnet = sm.subnet();
        let count = |t: NodeType| {
            subnet
                .nodes
                .iter()
                .filter(|n| n.info.node_type == t)
                .count()
        };
        let me = sm.sm_info().guid;
        let master = if sm.role() == Role::Master {
            Some(Master {
                guid: hex(me),
                lid: sm.sm_lid(),
                local: true,
            })
        } else {
            sm.known_sms()
                .find(|k| k.info.sm_state == SmState::Master)
                .map(|k| Master {
                    guid: hex(k.info.guid),
                    lid: match k.addr {
                        Some(ibsm::election::SmAddr::Lid(l)) => l,
                        _ => sm.lids().get(&k.info.guid).map_or(0, |l| l.0),
                    },
                    local: false,
                })
        };
        let mut smps = self.smps.clone();
        smps.total = sm.smps_sent();
        Status {
            role: role_name(sm.role()).to_owned(),
            port_guid: hex(me),
            sm_lid: sm.sm_lid(),
            master,
            subnet_up: sm.is_up(),
            sweeping: sm.is_sweeping(),
            sweeps: self.sweeps.clone(),
            smps,
            traps: self.traps.clone(),
            fabric: FabricCounts {
                nodes: subnet.nodes.len(),
                switches: count(NodeType::Switch),
                cas: count(NodeType::Ca),
                routers: count(NodeType::Router),
                links: subnet.link_count(),
                lids: sm.lids().values().map(|&(_, lmc)| 1usize << lmc).sum(),
            },
            unhealthy_ports: sm
                .health()
                .unhealthy()
                .map(|(k, u)| {
                    let capped = if u.capped {
                        ", isolation cap reached"
                    } else {
                        ""
                    };
                    format!(
                        "{k}: {} ({}): {}{capped}",
                        u.reason.kind(),
                        u.reason,
                        u.action
                    )
                })
                .collect(),
            isolation: isolation(sm.health()),
            partition_warnings: self.partition_warnings.clone(),
            topology: self.topology(sm),
            routing_engine: sm
                .routes()
                .map(|r| r.engine().to_owned())
                .unwrap_or_default(),
            uptime_ms,
            perfmgr: sm.config().perfmgr.is_some().then(|| self.perf(sm)),
            engine: self.engine.clone(),
        }
    }

    fn topology(&self, sm: &SubnetManager) -> Option<Topology> {
        let r = sm.config().topology_ref.as_ref()?;
        let found = sm.topology_differences();
        let mut by_kind: BTreeMap<String, usize> = ibsm::topology::diff::Difference::KINDS
            .iter()
            .map(|k| ((*k).to_owned(), 0))
            .collect();
        for d in found.unwrap_or_default() {
            *by_kind.entry(d.kind().to_owned()).or_default() += 1;
        }
        Some(Topology {
            reference: r.source.clone(),
            policy: r.policy.name().to_owned(),
            checked: found.is_some(),
            changes: self.topology_changes,
            by_kind,
            differences: found
                .unwrap_or_default()
                .iter()
                .take(MAX_DIFFERENCES)
                .map(ToString::to_string)
                .collect(),
        })
    }

    fn perf(&self, sm: &SubnetManager) -> Perf {
        let fabric = sm.fabric();
        let ports = sm
            .port_counters()
            .map(|((node, port), _, sample)| {
                let found = fabric
                    .and_then(|f| f.node_by_guid(ibsm::topology::Guid(node)))
                    .and_then(|id| fabric?.node(id));
                let switch = found.is_some_and(ibsm::topology::Node::is_switch);
                let ca_port = found.filter(|n| !n.is_switch()).and_then(|n| n.port(port));
                PortCounters {
                    node_guid: hex(node),
                    guid: hex(ca_port.map_or(node, |p| p.guid.0)),
                    port,
                    lid: ca_port
                        .map_or_else(|| found.map_or(0, ibsm::topology::Node::lid), |p| p.lid),
                    switch,
                    counters: sample
                        .iter()
                        .map(|(c, v)| (c.perfquery_name().to_owned(), v))
                        .collect(),
                }
            })
            .collect();
        Perf {
            sweeps: self.perf_sweeps,
            sweeping: sm.is_perf_sweeping(),
            last: sm.perf_sweep_stats().map(|s| PerfSweep {
                agents: s.agents,
                ports_read: s.ports_read,
                ports_failed: s.ports_failed,
                queries: s.queries,
                failures: s.failures,
                timeouts: s.timeouts,
                duration_ms: s.duration.as_secs_f64() * 1e3,
            }),
            over_threshold: self.over_threshold,
            ports,
        }
    }
}

fn ms(s: &SweepStats) -> f64 {
    s.total.as_secs_f64() * 1e3
}

fn hex(guid: u64) -> String {
    format!("{guid:#018x}")
}

impl Status {
    /// A few lines for a person (`ibsmd status` without `--json`).
    #[must_use]
    pub(crate) fn human(&self) -> String {
        let master = self.master.as_ref().map_or("unknown".to_owned(), |m| {
            if m.local {
                format!("this SM (LID {})", m.lid)
            } else {
                format!("{} (LID {})", m.guid, m.lid)
            }
        });
        let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.0} ms"));
        let f = &self.fabric;
        let traps: Vec<String> = self
            .traps
            .iter()
            .map(|(n, c)| format!("{n}: {c}"))
            .collect();
        let mut s = format!(
            "role: {} (port GUID {}, LID {})\nmaster: {master}\nsubnet up: {}{}\n\
             sweeps: {} heavy (last {}), {} light (last {})\n\
             SMPs: {} in sweeps ({} retries, {} timeouts), {} in all\n\
             fabric: {} nodes ({} switches, {} CAs, {} routers), {} links, {} LIDs, routing {}\n\
             traps: {}\n",
            self.role,
            self.port_guid,
            self.sm_lid,
            if self.subnet_up { "yes" } else { "no" },
            if self.sweeping { " (sweeping)" } else { "" },
            self.sweeps.heavy,
            ms(self.sweeps.last_heavy_ms),
            self.sweeps.light,
            ms(self.sweeps.last_light_ms),
            self.smps.sweeps,
            self.smps.retries,
            self.smps.timeouts,
            self.smps.total,
            f.nodes,
            f.switches,
            f.cas,
            f.routers,
            f.links,
            f.lids,
            if self.routing_engine.is_empty() {
                "-"
            } else {
                &self.routing_engine
            },
            if traps.is_empty() {
                "none".to_owned()
            } else {
                traps.join(", ")
            },
        );
        if let Some(t) = &self.topology {
            let total: usize = t.by_kind.values().sum();
            let state = if !t.checked {
                "not checked yet".to_owned()
            } else if total == 0 {
                "matches".to_owned()
            } else {
                let kinds: Vec<String> = t
                    .by_kind
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect();
                format!("{total} differences ({})", kinds.join(", "))
            };
            s.push_str(&format!(
                "reference topology: {} ({}): {state}\n",
                t.reference, t.policy
            ));
            for d in &t.differences {
                s.push_str(&format!("  {d}\n"));
            }
            if t.differences.len() < total {
                s.push_str(&format!("  ... {} more\n", total - t.differences.len()));
            }
        }
        for p in &self.unhealthy_ports {
            s.push_str(&format!("unhealthy port: {p}\n"));
        }
        let isolated: usize = self.isolation.by_condition.values().sum();
        if isolated > 0 || self.isolation.cap_reached {
            let by: Vec<String> = self
                .isolation
                .by_condition
                .iter()
                .map(|(c, n)| format!("{c} {n}"))
                .collect();
            s.push_str(&format!(
                "isolated ports: {isolated} ({}), cap {}{}\n",
                by.join(", "),
                self.isolation.cap,
                if self.isolation.cap_reached {
                    ": isolation cap reached"
                } else {
                    ""
                }
            ));
        }
        for w in &self.partition_warnings {
            s.push_str(&format!("partition warning: {w}\n"));
        }
        s
    }
}

/// What the health policy isolates now, for the status.
fn isolation(h: &ibsm::manager::health::Health) -> Isolation {
    let mut by_condition = BTreeMap::new();
    for (k, u) in h.unhealthy() {
        if k.port != 0 && u.isolated() {
            *by_condition
                .entry(u.reason.condition().name().to_owned())
                .or_insert(0) += 1;
        }
    }
    Isolation {
        by_condition,
        cap: h.isolation_cap(),
        cap_reached: h.cap_reached(),
    }
}
