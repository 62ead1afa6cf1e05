//! `/fabric.svg` on the metrics address: the fabric as the SM configured it, drawn by
//! `ibsm_topology::svg`. Links are coloured by the counter rates PerfMgr measured
//! (bytes/s, the busier direction, between its last two sweeps) when it runs, else by
//! the CA-to-CA routes through them in the LFTs this SM programmed; links with a port
//! the health policy marks unhealthy, or an end not Active, or narrower or slower than
//! their bundle, are dashed red with why.
//!
//! The engine's thread only copies what the picture needs ([`Source::of`], at a heavy
//! sweep's SUBNET UP, a PerfMgr sweep's end, or a change of unhealthy ports); the HTTP
//! thread draws it when asked, once per copy.

use std::collections::HashMap;
use std::time::Instant;

use ibsm::manager::SubnetManager;
use ibsm::topology::svg::{self, SvgOptions};
use ibsm::topology::{Fabric, NodeId, PortNum};

use crate::status::Perf;

/// What the picture is drawn from, copied off the engine.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    fabric: Fabric,
    /// Programmed LFT per switch node, indexed by LID.
    lfts: HashMap<NodeId, Vec<u8>>,
    /// Unhealthy ports (node, port, why).
    unhealthy: Vec<(NodeId, PortNum, String)>,
    /// Bytes/s per (node, port), when PerfMgr has two sweeps.
    rates: Option<HashMap<(NodeId, PortNum), f64>>,
}

impl Source {
    /// The SM's fabric with the LIDs in force, its programmed tables and the health
    /// marks; `rates` by (node GUID, port). `None` before the first configured sweep.
    pub(crate) fn of(sm: &SubnetManager, rates: Option<&HashMap<(u64, u8), f64>>) -> Option<Self> {
        let mut fabric = sm.fabric()?.clone();
        let lids = sm.lids();
        let ids: Vec<NodeId> = fabric.node_ids().collect();
        let mut lfts = HashMap::new();
        for &id in &ids {
            let Some(n) = fabric.node_mut(id) else {
                continue;
            };
            let guid = n.guid().0;
            let ports: Vec<PortNum> = if n.is_switch() {
                vec![0]
            } else {
                n.ports().map(|(p, _)| p).collect()
            };
            for p in ports {
                if let Some(port) = n.port_mut(p) {
                    if let Some(&(lid, lmc)) = lids.get(&port.guid.0) {
                        port.lid = lid;
                        port.lmc = lmc;
                    }
                }
            }
            if n.is_switch() {
                if let Some(t) = sm.programmed_lft(guid) {
                    lfts.insert(id, t.to_vec());
                }
            }
        }
        let unhealthy = sm
            .health()
            .unhealthy()
            .filter_map(|(k, u)| {
                let id = fabric.node_by_guid(ibsm::topology::Guid(k.node))?;
                Some((id, k.port, u.reason.to_string()))
            })
            .collect();
        let rates = rates.map(|r| {
            r.iter()
                .filter_map(|(&(g, p), &v)| {
                    Some(((fabric.node_by_guid(ibsm::topology::Guid(g))?, p), v))
                })
                .collect()
        });
        Some(Self {
            fabric,
            lfts,
            unhealthy,
            rates,
        })
    }

    /// The SVG document.
    pub(crate) fn render(&self) -> String {
        let f = &self.fabric;
        // The model's port states are as discovered, before the SM activated the ports.
        let mut marks = svg::state_marks(f, false);
        for (l, why) in svg::links_of_ports(f, self.unhealthy.iter().cloned()) {
            marks
                .entry(l)
                .and_modify(|w| {
                    w.push_str(", ");
                    w.push_str(&why);
                })
                .or_insert(why);
        }
        let (weights, unit): (HashMap<_, f64>, &str) = match &self.rates {
            Some(rates) => {
                let w = f
                    .links()
                    .map(|(id, l)| {
                        let at = |e: ibsm::topology::Endpoint| {
                            rates.get(&(e.node, e.port)).copied().unwrap_or(0.0)
                        };
                        (id, at(l.a).max(at(l.b)))
                    })
                    .collect();
                (w, "bytes/s")
            }
            None => {
                let counts = svg::route_counts(f, |sw, lid| {
                    let p = *self.lfts.get(&sw)?.get(usize::from(lid))?;
                    (p != 0 && p != 0xFF).then_some(p)
                });
                (
                    counts.into_iter().map(|(l, c)| (l, c as f64)).collect(),
                    "routes",
                )
            }
        };
        let weight = |l| weights.get(&l).copied();
        svg::to_svg(
            f,
            &SvgOptions {
                title: Some("ibsmd".into()),
                link_weight: Some(&weight),
                weight_unit: unit.into(),
                unhealthy: marks,
                ..SvgOptions::default()
            },
        )
    }
}

/// Data words (transmitted + received) per (node GUID, port).
type Words = HashMap<(u64, u8), u64>;

/// Port data rates from PerfMgr's sweeps: the data counters' growth between the last
/// two sweeps this tracker saw end, over the time between them.
#[derive(Debug, Default)]
pub(crate) struct Rates {
    sweeps: u64,
    last: Option<(Instant, Words)>,
    rates: Option<HashMap<(u64, u8), f64>>,
}

impl Rates {
    /// Takes a sweep that ended since the last call; true when the rates changed.
    pub(crate) fn update(&mut self, perf: &Perf, now: Instant) -> bool {
        if perf.sweeps == self.sweeps || perf.sweeping {
            return false;
        }
        self.sweeps = perf.sweeps;
        let data: Words = perf
            .ports
            .iter()
            .filter_map(|p| {
                let g = u64::from_str_radix(p.node_guid.trim_start_matches("0x"), 16).ok()?;
                let words = p.counters.get("PortXmitData").copied().unwrap_or(0)
                    + p.counters.get("PortRcvData").copied().unwrap_or(0);
                Some(((g, p.port), words))
            })
            .collect();
        if let Some((then, before)) = &self.last {
            let secs = now.duration_since(*then).as_secs_f64().max(1e-3);
            self.rates = Some(
                data.iter()
                    .map(|(k, &v)| {
                        let grew = v.saturating_sub(before.get(k).copied().unwrap_or(v));
                        // Data counters count 4-byte words.
                        (*k, grew as f64 * 4.0 / secs)
                    })
                    .collect(),
            );
        }
        self.last = Some((now, data));
        self.rates.is_some()
    }

    /// The rates, once two sweeps were seen.
    pub(crate) fn get(&self) -> Option<&HashMap<(u64, u8), f64>> {
        self.rates.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::PortCounters;
    use std::time::Duration;

    fn perf(sweeps: u64, words: u64) -> Perf {
        let mut counters = std::collections::BTreeMap::new();
        counters.insert("PortXmitData".to_owned(), words);
        counters.insert("PortRcvData".to_owned(), words);
        Perf {
            sweeps,
            ports: vec![PortCounters {
                node_guid: "0x0000000000200000".into(),
                port: 3,
                counters,
                ..PortCounters::default()
            }],
            ..Perf::default()
        }
    }

    #[test]
    fn rates_come_from_the_last_two_sweeps_in_bytes_per_second() {
        let t0 = Instant::now();
        let mut r = Rates::default();
        assert!(!r.update(&perf(1, 100), t0), "one sweep is no rate");
        assert!(r.get().is_none());
        // The same sweep seen again changes nothing.
        assert!(!r.update(&perf(1, 100), t0 + Duration::from_secs(1)));
        assert!(r.update(&perf(2, 600), t0 + Duration::from_secs(2)));
        // (500 + 500) words of 4 bytes in 2 s.
        assert_eq!(r.get().unwrap()[&(0x20_0000, 3)], 2000.0);
        // A sweep still running is not taken.
        let mut running = perf(3, 700);
        running.sweeping = true;
        assert!(!r.update(&running, t0 + Duration::from_secs(3)));
    }
}
