//! "SUBNET UP" only for a complete subnet. A heavy sweep in which one of its own SMPs
//! got no answer after all retries may have missed nodes (a lost NodeInfo), left ports
//! unread or half-configured (a lost Get or Set): it ends without SUBNET UP, reports
//! what it lost ([`SmEvent::SweepIncomplete`]) and the next heavy sweep starts at once,
//! as OpenSM re-sweeps after "errors during initialization".
//!
//! Each re-sweep in a row doubles the attempts per SMP (up to [`MAX_ATTEMPTS`]): loss
//! that is random gets through in a sweep or two even on deep fabrics, where the same
//! number of attempts would lose about as much in every sweep. After
//! [`MAX_RESWEEPS`] incomplete sweeps in a row the SM stops re-sweeping back to back and
//! makes the next periodic sweep heavy instead, still without SUBNET UP.

use ibsm_wire::DrPath;

use super::ops::Op;
use super::{Outbox, SubnetManager};
use crate::event::{Missing, SmEvent};
use crate::model::Discovered;

/// Most attempts (first send and retries) an SMP gets in a re-sweep.
pub(super) const MAX_ATTEMPTS: u32 = 64;

/// Incomplete heavy sweeps in a row after which the SM waits for the periodic sweep.
pub(super) const MAX_RESWEEPS: u32 = 8;

/// Lost SMPs listed in one [`SmEvent::SweepIncomplete`] (all are counted).
const LISTED: usize = 64;

/// What one heavy sweep lost.
#[derive(Debug, Default)]
pub(super) struct Losses {
    /// SMPs without an answer after all retries.
    total: u64,
    /// The same by attribute name, sorted by name.
    by_attribute: Vec<(&'static str, u64)>,
    /// The first [`LISTED`] of them.
    missing: Vec<Missing>,
}

impl Losses {
    pub(super) fn is_empty(&self) -> bool {
        self.total == 0
    }

    fn add(&mut self, m: Missing) {
        self.total += 1;
        match self
            .by_attribute
            .binary_search_by(|(a, _)| a.cmp(&m.attribute))
        {
            Ok(i) => self.by_attribute[i].1 += 1,
            Err(i) => self.by_attribute.insert(i, (m.attribute, 1)),
        }
        if self.missing.len() < LISTED {
            self.missing.push(m);
        }
    }
}

/// The incomplete heavy sweeps in a row (outlives each sweep).
#[derive(Debug, Default)]
pub(super) struct Resweeps {
    /// Incomplete heavy sweeps since the last complete one.
    pub(super) in_a_row: u32,
}

impl Resweeps {
    /// The retries an SMP of the next heavy sweep gets: the configured ones for a first
    /// sweep (`None`), doubled attempts for each incomplete sweep before it.
    pub(super) fn retries(&self, configured: u32) -> Option<u32> {
        if self.in_a_row == 0 {
            return None;
        }
        Some(doubled_retries(configured, self.in_a_row))
    }
}

/// The retries of an SMP whose attempts (`configured` retries + 1) are doubled
/// `doublings` times, at most [`MAX_ATTEMPTS`] (more configured than that: kept).
pub(super) fn doubled_retries(configured: u32, doublings: u32) -> u32 {
    let attempts = u64::from(configured) + 1;
    let doubled = (attempts << doublings.min(32)).min(u64::from(MAX_ATTEMPTS).max(attempts));
    u32::try_from(doubled - 1).unwrap_or(u32::MAX)
}

impl SubnetManager {
    /// A request of the running heavy sweep got no answer after all retries: noted for
    /// [`SmEvent::SweepIncomplete`]. SMPs that are not the sweep's own (a trap's latch
    /// check, the SA's MFT blocks) or tell nothing when lost (a light sweep's) are not.
    pub(super) fn note_lost(&mut self, op: &Op) {
        if self.sweep.heavy().is_none() {
            return;
        }
        let found = self.sweep.found(&self.last);
        let Some(m) = missing(&found.subnet, op) else {
            return;
        };
        self.health.lost(found.latches.sweep(), &m);
        self.sweep.lost(|l| l.add(m));
    }
}

impl Resweeps {
    /// A heavy sweep that found the subnet is over, having lost `lost` (`None`: not a
    /// heavy sweep): `true` when it was complete (say SUBNET UP). Otherwise reports
    /// what it lost to `out` and counts it in the re-sweeps in a row; the caller starts
    /// the next heavy sweep at once when [`Self::resweep_now`].
    pub(super) fn sweep_ended(&mut self, lost: Option<Losses>, out: &mut Outbox) -> bool {
        let Some(lost) = lost else {
            return true;
        };
        if lost.is_empty() {
            self.in_a_row = 0;
            return true;
        }
        self.in_a_row = self.in_a_row.saturating_add(1);
        tracing::warn!(
            sweep = self.in_a_row,
            lost = lost.total,
            "errors during initialization: heavy sweep incomplete"
        );
        out.event(SmEvent::SweepIncomplete {
            sweep: self.in_a_row,
            lost: lost.total,
            by_attribute: lost.by_attribute,
            missing: lost.missing,
        });
        false
    }

    /// Whether an incomplete sweep is followed by another at once (not yet
    /// [`MAX_RESWEEPS`] in a row).
    pub(super) fn resweep_now(&self) -> bool {
        self.in_a_row < MAX_RESWEEPS
    }
}

/// What a lost `op` leaves missing: the attribute, and the node or port of `subnet`
/// it was for.
fn missing(subnet: &Discovered, op: &Op) -> Option<Missing> {
    let node_guid = |n: usize| subnet.nodes.get(n).map_or(0, |r| r.info.node_guid);
    let path_of = |n: usize, p: u8| {
        subnet
            .nodes
            .get(n)
            .map_or_else(DrPath::local, |r| r.path_for(p))
    };
    let (node, port, path) = match *op {
        // The node at the end of the route was never found: named by the port
        // that leads to it.
        Op::NodeInfo { ref path, from } => match from {
            Some((n, p)) => (node_guid(n), p, **path),
            None => (0, 0, **path),
        },
        Op::NodeDesc { node }
        | Op::SwitchInfo { node }
        | Op::SetSwitchInfo { node }
        | Op::ClearPortStateChange { node }
        | Op::SetLft { node, .. } => (node_guid(node), 0, path_of(node, 0)),
        Op::PortInfo { node, port }
        | Op::SetPortInfo { node, port }
        | Op::SetSl2Vl { node, port }
        | Op::SetVlArb { node, port }
        | Op::PKeyTable { node, port, .. }
        | Op::SetPKeyTable { node, port, .. } => (node_guid(node), port, path_of(node, port)),
        Op::LightSwitchInfo { .. } | Op::CheckSwitchInfo { .. } | Op::SetMft { .. } => {
            return None;
        }
    };
    let (attribute, set) = op.describe();
    Some(Missing {
        attribute,
        set,
        node,
        port,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_double_per_incomplete_sweep_up_to_the_cap() {
        let r = |in_a_row| Resweeps { in_a_row }.retries(3);
        assert_eq!(r(0), None);
        assert_eq!(r(1), Some(7));
        assert_eq!(r(2), Some(15));
        assert_eq!(r(3), Some(31));
        assert_eq!(r(4), Some(63));
        assert_eq!(r(5), Some(63));
        assert_eq!(r(40), Some(63));
        // More configured than the cap: kept.
        assert_eq!(Resweeps { in_a_row: 2 }.retries(99), Some(99));
    }
}
