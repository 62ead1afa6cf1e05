//! [`LidAssignment`]: which LIDs every switch and terminal answers to.

use ibsm_topology::Csr;

use crate::error::{Result, RoutingError};
use crate::net::{Net, NetInput};

/// The highest unicast LID.
pub const MAX_UNICAST_LID: u16 = 0xBFFF;

/// LIDs of every switch (port 0) and every terminal (CA/router port), indexed like the
/// [`Csr`] snapshot they belong to (`switch index`, `terminal index`).
///
/// A terminal with LMC `l` answers to `base .. base + 2^l`; its base must be a multiple
/// of `2^l`. 0 means "no LID" (not a destination). The manager can fill one from its own
/// LID manager with [`LidAssignment::set_switch`] / [`LidAssignment::set_terminal`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LidAssignment {
    switch_lid: Vec<u16>,
    term_lid: Vec<u16>,
    term_lmc: Vec<u8>,
}

impl LidAssignment {
    /// No LIDs at all, shaped for `csr`.
    #[must_use]
    pub fn empty(csr: &Csr) -> Self {
        LidAssignment {
            switch_lid: vec![0; csr.switch_count()],
            term_lid: vec![0; csr.terminal_count()],
            term_lmc: vec![0; csr.terminal_count()],
        }
    }

    /// The LIDs recorded in the fabric the snapshot was taken from (e.g. after discovery).
    #[must_use]
    pub fn from_snapshot(csr: &Csr) -> Self {
        LidAssignment {
            switch_lid: csr.switch_lid.clone(),
            term_lid: csr.term_lid.clone(),
            term_lmc: csr.term_lmc.clone(),
        }
    }

    /// A deterministic packed assignment: switches get `1, 2, ...` in snapshot order, then
    /// every terminal cabled to a switch gets `2^lmc` LIDs, aligned, grouped by switch.
    ///
    /// # Errors
    /// [`RoutingError::InvalidInput`] if `lmc > 7` or the LIDs do not fit below 0xC000.
    pub fn sequential(csr: &Csr, lmc: u8) -> Result<Self> {
        if lmc > 7 {
            return Err(RoutingError::InvalidInput(format!("LMC {lmc} > 7")));
        }
        let mut a = Self::empty(csr);
        let mut next: u32 = 1;
        for s in 0..csr.switch_count() {
            a.switch_lid[s] = u16::try_from(next).unwrap_or(0);
            next += 1;
        }
        let step = 1u32 << lmc;
        for t in 0..csr.terminal_count() {
            if csr.term_switch[t] == ibsm_topology::csr::NO_SWITCH {
                continue;
            }
            next = next.div_ceil(step) * step;
            a.term_lid[t] = u16::try_from(next).unwrap_or(0);
            a.term_lmc[t] = lmc;
            next += step;
        }
        if next - 1 > u32::from(MAX_UNICAST_LID) {
            return Err(RoutingError::InvalidInput(format!(
                "{} LIDs needed, the unicast space has {MAX_UNICAST_LID}",
                next - 1
            )));
        }
        Ok(a)
    }

    /// Sets the LID of switch `s` (0 = none).
    pub fn set_switch(&mut self, s: usize, lid: u16) {
        if s < self.switch_lid.len() {
            self.switch_lid[s] = lid;
        }
    }

    /// Sets the base LID and LMC of terminal `t` (base 0 = none).
    pub fn set_terminal(&mut self, t: usize, base: u16, lmc: u8) {
        if t < self.term_lid.len() {
            self.term_lid[t] = base;
            self.term_lmc[t] = lmc;
        }
    }

    /// LID of switch `s` (0 = none).
    #[must_use]
    pub fn switch_lid(&self, s: usize) -> u16 {
        self.switch_lid.get(s).copied().unwrap_or(0)
    }

    /// Base LID and LMC of terminal `t` (base 0 = none).
    #[must_use]
    pub fn terminal_lid(&self, t: usize) -> (u16, u8) {
        (
            self.term_lid.get(t).copied().unwrap_or(0),
            self.term_lmc.get(t).copied().unwrap_or(0),
        )
    }

    /// Highest LID in use.
    #[must_use]
    pub fn max_lid(&self) -> u16 {
        let s = self.switch_lid.iter().copied().max().unwrap_or(0);
        let t = self
            .term_lid
            .iter()
            .zip(&self.term_lmc)
            .filter(|(b, _)| **b != 0)
            .map(|(&b, &l)| b.saturating_add((1u16 << l.min(7)) - 1))
            .max()
            .unwrap_or(0);
        s.max(t)
    }

    /// Builds the engines' compact picture, checking the assignment against the snapshot.
    pub(crate) fn net(&self, csr: &Csr) -> Result<Net> {
        if self.switch_lid.len() != csr.switch_count()
            || self.term_lid.len() != csr.terminal_count()
        {
            return Err(RoutingError::InvalidInput(
                "LID assignment was made for another snapshot".into(),
            ));
        }
        let n = csr.switch_count();
        let mut inp = NetInput {
            nports: (0..n as u32).map(|s| csr.num_ports(s)).collect(),
            sw_lid: self.switch_lid.clone(),
            ..NetInput::default()
        };
        for s in 0..n as u32 {
            for (p, tgt, rp) in csr.ports_of(s) {
                if let Some(x) = tgt.as_switch() {
                    if (s, p) < (x, rp) {
                        inp.links.push((s, p, x, rp));
                    }
                }
            }
            for t in csr.terminals_of(s) {
                let t = t as usize;
                let (b, l) = (self.term_lid[t], self.term_lmc[t]);
                if b != 0 && (b & ((1u16 << l.min(7)) - 1)) != 0 {
                    return Err(RoutingError::InvalidInput(format!(
                        "terminal {} port {}: base LID {b} is not aligned to LMC {l}",
                        csr.term_guid[t], csr.term_port[t]
                    )));
                }
                inp.terms.push((s, csr.term_switch_port[t], b, l));
            }
        }
        Net::build(&inp)
    }
}
