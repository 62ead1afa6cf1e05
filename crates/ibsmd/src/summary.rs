//! What a run saw, and the `--json` summary built from it with serde.

use ibsm::manager::{SmEvent, SweepStats};
use serde::Serialize;

use crate::daemon::role_name;

/// Counts and firsts of a run.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// The port's device.
    pub(crate) ca: String,
    /// The port number.
    pub(crate) port: u8,
    /// The port GUID.
    pub(crate) port_guid: u64,
    /// The first SUBNET UP: when (ms since start) and what it took.
    pub(crate) first_up: Option<(f64, SweepStats)>,
    /// Heavy sweeps that reached SUBNET UP.
    pub(crate) heavy_sweeps: u64,
    /// Light sweeps that found nothing to do.
    pub(crate) light_sweeps: u64,
    /// Traps received.
    pub(crate) traps: u64,
    /// Role changes: when (ms) and to what.
    pub(crate) role_changes: Vec<(f64, &'static str)>,
    /// Ports that ignore our M_Key.
    pub(crate) locked_ports: u64,
    /// SMs with another SM_Key.
    pub(crate) unauthenticated: u64,
    /// Heavy sweeps whose programming failed.
    pub(crate) routing_failures: u64,
    /// The stop signal's name, when one ended the run.
    pub(crate) signal: Option<&'static str>,
    /// The role at the end.
    pub(crate) role: &'static str,
    /// The master's LID at the end.
    pub(crate) sm_lid: u16,
    /// The run's length in ms.
    pub(crate) wall_ms: f64,
}

impl Outcome {
    /// An empty outcome for a run on this port.
    pub(crate) fn new(ca: String, port: u8, port_guid: u64) -> Self {
        Self {
            ca,
            port,
            port_guid,
            ..Self::default()
        }
    }

    /// Counts `ev`, seen `ms` after the start.
    pub(crate) fn count(&mut self, ev: &SmEvent, ms: f64) {
        match ev {
            SmEvent::SubnetUp { stats } => {
                if stats.heavy {
                    self.heavy_sweeps += 1;
                }
                if self.first_up.is_none() {
                    self.first_up = Some((ms, stats.clone()));
                }
            }
            SmEvent::RoleChanged { role } => self.role_changes.push((ms, role_name(*role))),
            SmEvent::LightSweepDone { .. } => self.light_sweeps += 1,
            SmEvent::Trap { .. } => self.traps += 1,
            SmEvent::PortLocked { .. } => self.locked_ports += 1,
            SmEvent::UnauthenticatedSm { .. } => self.unauthenticated += 1,
            SmEvent::RoutingFailed { .. } => self.routing_failures += 1,
            _ => {}
        }
    }

    /// The `--json` object: the run and its first SUBNET UP (`null` fields when the
    /// subnet never came up).
    pub(crate) fn summary(&self) -> Summary<'_> {
        let st = self.first_up.as_ref().map(|(_, s)| s);
        Summary {
            ca: &self.ca,
            port: self.port,
            port_guid: format!("{:#018x}", self.port_guid),
            role: self.role,
            subnet_up: self.first_up.is_some(),
            up_ms: self.first_up.as_ref().map(|(ms, _)| round1(*ms)),
            smps: st.map(|s| s.smps),
            retries: st.map(|s| s.retries),
            timeouts: st.map(|s| s.timeouts),
            nodes: st.map(|s| s.nodes),
            switches: st.map(|s| s.switches),
            links: st.map(|s| s.links),
            lids: st.map(|s| s.lids),
            lft_blocks: st.map(|s| s.lft_blocks),
            pkey_blocks: st.map(|s| s.pkey_blocks),
            routing: st.map(|s| s.routing_engine.as_str()),
            heavy_sweeps: self.heavy_sweeps,
            light_sweeps: self.light_sweeps,
            traps: self.traps,
            role_changes: self
                .role_changes
                .iter()
                .map(|(ms, r)| (ms.round(), *r))
                .collect(),
            locked_ports: self.locked_ports,
            unauthenticated_sms: self.unauthenticated,
            routing_failures: self.routing_failures,
            sm_lid: self.sm_lid,
            signal: self.signal,
            wall_ms: round1(self.wall_ms),
        }
    }
}

fn round1(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

/// The `--json` summary line (field names are a stable interface for scripts).
#[derive(Debug, Serialize)]
pub(crate) struct Summary<'a> {
    ca: &'a str,
    port: u8,
    port_guid: String,
    role: &'a str,
    subnet_up: bool,
    up_ms: Option<f64>,
    smps: Option<u64>,
    retries: Option<u64>,
    timeouts: Option<u64>,
    nodes: Option<usize>,
    switches: Option<usize>,
    links: Option<usize>,
    lids: Option<usize>,
    lft_blocks: Option<u64>,
    pkey_blocks: Option<u64>,
    routing: Option<&'a str>,
    heavy_sweeps: u64,
    light_sweeps: u64,
    traps: u64,
    role_changes: Vec<(f64, &'a str)>,
    locked_ports: u64,
    unauthenticated_sms: u64,
    routing_failures: u64,
    sm_lid: u16,
    signal: Option<&'a str>,
    wall_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_before_and_after_subnet_up() {
        let mut o = Outcome::new("mlx5_0".into(), 1, 0x2c9);
        o.role = "DISCOVERING";
        let v = serde_json::to_value(o.summary()).unwrap();
        assert_eq!(v["subnet_up"], false);
        assert!(v["nodes"].is_null() && v["signal"].is_null());
        assert_eq!(v["port_guid"], "0x00000000000002c9");
        let stats = SweepStats {
            heavy: true,
            nodes: 5,
            routing_engine: "updn".into(),
            ..SweepStats::default()
        };
        o.count(&SmEvent::SubnetUp { stats }, 12.34);
        o.count(
            &SmEvent::RoleChanged {
                role: ibsm::manager::Role::Master,
            },
            3.0,
        );
        o.signal = Some("SIGTERM");
        let v = serde_json::to_value(o.summary()).unwrap();
        assert_eq!(v["subnet_up"], true);
        assert_eq!(v["nodes"], 5);
        assert_eq!(v["routing"], "updn");
        assert_eq!(v["up_ms"], 12.3);
        assert_eq!(v["heavy_sweeps"], 1);
        assert_eq!(v["role_changes"][0][1], "MASTER");
        assert_eq!(v["signal"], "SIGTERM");
    }
}
