//! LID assignment: LMC-aligned ranges that keep every LID a port already had (from the
//! persistent store first, then the LID the port carries), resolve conflicts
//! deterministically, and pack new ports into the lowest free ranges.

use std::collections::BTreeMap;

use crate::error::SmError;

/// Highest unicast LID.
pub const MAX_UNICAST_LID: u16 = 0xBFFF;

/// What bounds the unicast LIDs a subnet can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LidBound {
    /// The unicast LID space itself, 0x0001..=0xBFFF.
    UnicastSpace,
    /// The smallest LinearFDBCap among the switches (entries 0..cap, LID 0 unused).
    LinearFdbCap(u16),
}

impl LidBound {
    /// The bound `assign` was given as a highest LID.
    fn of_limit(limit: u16) -> Self {
        if limit >= MAX_UNICAST_LID {
            Self::UnicastSpace
        } else {
            Self::LinearFdbCap(limit.saturating_add(1))
        }
    }
}

impl std::fmt::Display for LidBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnicastSpace => f.write_str("the unicast LID space 0x0001..=0xBFFF"),
            Self::LinearFdbCap(cap) => write!(f, "the smallest LinearFDBCap ({cap})"),
        }
    }
}

/// One port that needs LIDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LidRequest {
    /// Port GUID (a switch: its port-0 GUID).
    pub guid: u64,
    /// LMC the port should get (switch port 0: 0).
    pub lmc: u8,
    /// LID the port carries now (PortInfo.LID; 0 if none).
    pub current: u16,
}

/// Free/used map of the unicast LID space.
struct Space {
    used: Vec<u64>,
    limit: u16,
}

impl Space {
    fn new(limit: u16) -> Self {
        Self {
            used: vec![0; (usize::from(limit) + 64) / 64],
            limit,
        }
    }
    fn range_free(&self, base: u16, lmc: u8) -> bool {
        let n = 1u32 << lmc;
        let end = u32::from(base) + n - 1;
        base != 0
            && base % (n as u16) == 0
            && end <= u32::from(self.limit)
            && (u32::from(base)..=end).all(|l| self.used[l as usize / 64] & (1 << (l % 64)) == 0)
    }
    fn take(&mut self, base: u16, lmc: u8) {
        for l in u32::from(base)..u32::from(base) + (1u32 << lmc) {
            self.used[l as usize / 64] |= 1 << (l % 64);
        }
    }
    fn lowest_free(&self, lmc: u8, from: u16) -> Option<u16> {
        let n = 1u32 << lmc;
        let mut base = (u32::from(from.max(1))).div_ceil(n) * n;
        while base + n - 1 <= u32::from(self.limit) {
            if self.range_free(base as u16, lmc) {
                return Some(base as u16);
            }
            base += n;
        }
        None
    }
}

/// Assigns LIDs.
///
/// `stored` is what the persistent store (or the previous sweep) remembers; `limit` is
/// the highest LID every switch can forward (smallest LinearFDBCap - 1, capped at
/// 0xBFFF). Ports are processed in GUID order, so conflicts (two ports claiming the same
/// LID) always resolve the same way: the lower GUID keeps it.
///
/// # Errors
/// [`SmError::LidsExhausted`] when the ports do not fit below `limit`: at once when
/// they need more LIDs than there are, after packing when alignment or reserved LIDs
/// leave no room.
pub fn assign(
    requests: &[LidRequest],
    stored: &BTreeMap<u64, (u16, u8)>,
    limit: u16,
) -> Result<BTreeMap<u64, (u16, u8)>, SmError> {
    let limit = limit.min(MAX_UNICAST_LID);
    let mut reqs: Vec<LidRequest> = requests.to_vec();
    reqs.sort_by_key(|r| r.guid);
    reqs.dedup_by_key(|r| r.guid);
    let needed: usize = reqs.iter().map(|r| 1usize << r.lmc).sum();
    let exhausted = || SmError::LidsExhausted {
        needed,
        available: usize::from(limit),
        bound: LidBound::of_limit(limit),
    };
    if needed > usize::from(limit) {
        return Err(exhausted());
    }
    let mut space = Space::new(limit);
    let mut out = BTreeMap::new();
    let mut pending = Vec::new();
    // Pass 1: the store's LIDs (they survive restarts and failovers).
    for r in &reqs {
        match stored.get(&r.guid) {
            Some(&(lid, lmc)) if lmc == r.lmc && space.range_free(lid, lmc) => {
                space.take(lid, lmc);
                out.insert(r.guid, (lid, lmc));
            }
            _ => pending.push(*r),
        }
    }
    // LIDs the store remembers for ports absent from this sweep stay reserved: such a
    // port (behind a lost SMP, a flapping link, a switch being power-cycled) still
    // carries its LID and would clash with anyone handed it now (as OpenSM, which keeps
    // guid2lid entries reserved).
    let present = |guid: u64| reqs.binary_search_by_key(&guid, |r| r.guid).is_ok();
    for (&guid, &(lid, lmc)) in stored {
        if !present(guid) && space.range_free(lid, lmc) {
            space.take(lid, lmc);
        }
    }
    // Pass 2: LIDs the ports already carry (another SM configured them), aligned down
    // to the wanted LMC.
    let mut rest = Vec::new();
    for r in pending {
        let base = r.current & !((1u16 << r.lmc) - 1);
        if r.current != 0 && space.range_free(base, r.lmc) {
            space.take(base, r.lmc);
            out.insert(r.guid, (base, r.lmc));
        } else {
            rest.push(r);
        }
    }
    // Pass 3: everyone else, largest ranges first so alignment wastes least.
    rest.sort_by_key(|r| (std::cmp::Reverse(r.lmc), r.guid));
    let mut cursor = [1u16; 8];
    for r in rest {
        let Some(base) = space.lowest_free(r.lmc, cursor[usize::from(r.lmc)]) else {
            return Err(exhausted());
        };
        space.take(base, r.lmc);
        cursor[usize::from(r.lmc)] = base;
        out.insert(r.guid, (base, r.lmc));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn req(guid: u64, lmc: u8, current: u16) -> LidRequest {
        LidRequest { guid, lmc, current }
    }

    #[test]
    fn stored_lids_of_absent_ports_stay_reserved() {
        // Port 7 is absent from this sweep but still carries LID 1: nobody else may get
        // it, neither a new port nor one that happens to carry it.
        let stored: BTreeMap<u64, (u16, u8)> = [(7, (1u16, 0u8))].into();
        let out = assign(&[req(9, 0, 0), req(10, 0, 1)], &stored, 100).unwrap();
        assert!(out.values().all(|&(l, _)| l != 1), "{out:?}");
        // When it comes back it gets its LID.
        let out = assign(&[req(7, 0, 1), req(9, 0, 0)], &stored, 100).unwrap();
        assert_eq!(out[&7], (1, 0));
    }

    #[test]
    fn keeps_stored_then_current_then_packs() {
        let mut stored = BTreeMap::new();
        stored.insert(3, (8u16, 2u8));
        let r = [req(1, 0, 0), req(2, 0, 5), req(3, 2, 0), req(4, 2, 9)];
        let a = assign(&r, &stored, 100).unwrap();
        assert_eq!(a[&3], (8, 2));
        assert_eq!(a[&2], (5, 0));
        // 9 with LMC 2 aligns to 8, which is taken; 4..7 holds LID 5: 4 moves to 12.
        assert_eq!(a[&4], (12, 2));
        assert_eq!(a[&1], (1, 0));
    }

    #[test]
    fn conflicts_go_to_lower_guid_and_exhaustion_is_an_error() {
        let a = assign(&[req(9, 0, 7), req(2, 0, 7)], &BTreeMap::new(), 100).unwrap();
        assert_eq!(a[&2], (7, 0));
        assert_ne!(a[&9].0, 7);
        let many: Vec<_> = (0..10).map(|g| req(g, 0, 0)).collect();
        assert!(matches!(
            assign(&many, &BTreeMap::new(), 5),
            Err(SmError::LidsExhausted { .. })
        ));
    }

    #[test]
    fn more_lids_than_the_space_holds_is_refused_with_the_need_and_the_bound() {
        // The quickstart tree at LMC 7: 648 CA ports x 128 + 54 switches.
        let mut reqs: Vec<_> = (0..648).map(|g| req(1000 + g, 7, 0)).collect();
        reqs.extend((0..54).map(|g| req(g, 0, 0)));
        let e = assign(&reqs, &BTreeMap::new(), MAX_UNICAST_LID).unwrap_err();
        assert!(
            matches!(
                e,
                SmError::LidsExhausted {
                    needed: 82_998,
                    available: 49_151,
                    bound: LidBound::UnicastSpace
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "LID space exhausted: 82998 LIDs needed, the unicast LID space 0x0001..=0xBFFF holds 49151"
        );
        // A switch with a small LFT bounds it lower; a port asked twice counts once.
        let twice = [req(1, 0, 0), req(1, 0, 0), req(2, 0, 0)];
        let e = assign(&twice, &BTreeMap::new(), 1).unwrap_err();
        assert!(
            matches!(
                e,
                SmError::LidsExhausted {
                    needed: 2,
                    available: 1,
                    bound: LidBound::LinearFdbCap(2)
                }
            ),
            "{e:?}"
        );
    }

    proptest! {
        #[test]
        fn ranges_are_aligned_disjoint_and_in_range(
            ports in proptest::collection::vec((0u64..500, 0u8..4, 0u16..300), 1..120),
            stored in proptest::collection::vec((0u64..500, 1u16..300, 0u8..4), 0..40),
        ) {
            // One request per GUID (a port has one LMC).
            let unique: BTreeMap<u64, (u8, u16)> = ports.iter().map(|&(g, l, c)| (g, (l, c))).collect();
            let reqs: Vec<_> = unique.iter().map(|(&g, &(l, c))| req(g, l, c)).collect();
            let stored: BTreeMap<u64, (u16, u8)> = stored.into_iter().map(|(g, lid, l)| (g, (lid, l))).collect();
            let limit = 2000;
            let a = assign(&reqs, &stored, limit).unwrap();
            let mut seen = std::collections::HashSet::new();
            for r in &reqs {
                let (lid, lmc) = a[&r.guid];
                prop_assert!(lid != 0 && lid % (1 << lmc) == 0);
                for l in lid..lid + (1 << lmc) {
                    prop_assert!(l <= limit);
                    prop_assert!(seen.insert(l), "LID {l} given twice");
                }
            }
            // Deterministic.
            prop_assert_eq!(assign(&reqs, &stored, limit).unwrap(), a);
        }
    }
}
