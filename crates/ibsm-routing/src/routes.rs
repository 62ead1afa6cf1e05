//! [`Routes`]: the output of every engine.

/// "No route" in an LFT (the value OpenSM and the hardware use).
pub const NO_ROUTE: u8 = 255;

/// Linear forwarding tables for every switch, plus SLs and SL-to-VL tables when the engine
/// needs virtual lanes for deadlock freedom.
///
/// Switches are numbered in the order of the snapshot the routes were computed from
/// (`0..switch_count()`). Each LFT is a dense array indexed by LID (`lft_len()` entries,
/// the highest assigned LID + 1) holding the output port, [`NO_ROUTE`] where there is none,
/// 0 for the switch's own LID. All tables live in one allocation (`switches x lft_len` bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routes {
    pub(crate) engine: String,
    pub(crate) n_sw: usize,
    pub(crate) lft_len: usize,
    pub(crate) lfts: Vec<u8>,
    /// SL per (source switch, destination LID), same layout as `lfts`.
    pub(crate) sl: Option<Vec<u8>>,
    /// Per switch, per output port (index = port), the VL for each SL.
    pub(crate) sl2vl: Option<Vec<Vec<[u8; 16]>>>,
    pub(crate) vls: u8,
    /// Up/down engines: the switch order used (so re-routing keeps the same directions).
    pub(crate) updown_pos: Option<Vec<u32>>,
}

impl Routes {
    /// Empty routes (every entry [`NO_ROUTE`], no SLs) for `switches` switches and LIDs
    /// `0..lft_len`, produced by the engine called `engine`. Custom engines start here.
    #[must_use]
    pub fn new(engine: impl Into<String>, switches: usize, lft_len: usize) -> Self {
        Routes {
            engine: engine.into(),
            n_sw: switches,
            lft_len,
            lfts: vec![NO_ROUTE; switches * lft_len],
            sl: None,
            sl2vl: None,
            vls: 1,
            updown_pos: None,
        }
    }

    /// [`Routes::new`] with the tables filled by `threads` threads: on a large fabric
    /// the first write of every page is what filling costs (188 MB of tables on a
    /// 45,056-CA tree), and the routing threads are idle until the tables exist. Small
    /// tables are filled on the calling thread.
    pub(crate) fn new_filled_by(
        engine: impl Into<String>,
        switches: usize,
        lft_len: usize,
        threads: usize,
    ) -> Self {
        /// Below this a thread's start costs more than the pages it would fill.
        const PER_THREAD: usize = 4 << 20;
        let len = switches * lft_len;
        let threads = threads.clamp(1, len / PER_THREAD + 1);
        if threads == 1 {
            return Self::new(engine, switches, lft_len);
        }
        // Zeroed memory comes from the kernel untouched; each thread writes its share.
        let mut lfts = vec![0u8; len];
        std::thread::scope(|sc| {
            for part in lfts.chunks_mut(len.div_ceil(threads)) {
                sc.spawn(move || part.fill(NO_ROUTE));
            }
        });
        Routes {
            n_sw: switches,
            lft_len,
            lfts,
            ..Self::new(engine, 0, 0)
        }
    }

    /// Name of the engine that produced these routes (after any fallback).
    #[must_use]
    pub fn engine(&self) -> &str {
        &self.engine
    }

    /// Number of switches.
    #[must_use]
    pub fn switch_count(&self) -> usize {
        self.n_sw
    }

    /// Length of every LFT (highest LID + 1).
    #[must_use]
    pub fn lft_len(&self) -> usize {
        self.lft_len
    }

    /// The LFT of switch `sw` (index in snapshot order).
    ///
    /// # Panics
    /// If `sw >= switch_count()`.
    #[must_use]
    pub fn lft(&self, sw: usize) -> &[u8] {
        &self.lfts[sw * self.lft_len..(sw + 1) * self.lft_len]
    }

    /// Mutable LFT of switch `sw`.
    ///
    /// # Panics
    /// If `sw >= switch_count()`.
    pub fn lft_mut(&mut self, sw: usize) -> &mut [u8] {
        &mut self.lfts[sw * self.lft_len..(sw + 1) * self.lft_len]
    }

    /// The output port of switch `sw` for `lid` ([`NO_ROUTE`] if none or out of range).
    #[must_use]
    pub fn port(&self, sw: usize, lid: u16) -> u8 {
        let l = usize::from(lid);
        if sw >= self.n_sw || l >= self.lft_len {
            return NO_ROUTE;
        }
        self.lfts[sw * self.lft_len + l]
    }

    /// The SL to use from a source on switch `src_sw` (a CA cabled there, or the switch
    /// itself) to `dlid`. 0 when the engine needs no SLs.
    #[must_use]
    pub fn sl(&self, src_sw: usize, dlid: u16) -> u8 {
        match &self.sl {
            Some(t) if src_sw < self.n_sw && usize::from(dlid) < self.lft_len => {
                t[src_sw * self.lft_len + usize::from(dlid)]
            }
            _ => 0,
        }
    }

    /// Whether the engine assigned SLs (`sl` is meaningful).
    #[must_use]
    pub fn has_sls(&self) -> bool {
        self.sl.is_some()
    }

    /// Sets the SL for (source switch, destination LID); allocates the SL table on first use.
    ///
    /// # Panics
    /// If `src_sw` or `dlid` is out of range, or `sl > 15`.
    pub fn set_sl(&mut self, src_sw: usize, dlid: u16, sl: u8) {
        assert!(sl < 16, "SL {sl} > 15");
        let len = self.n_sw * self.lft_len;
        let t = self.sl.get_or_insert_with(|| vec![0; len]);
        t[src_sw * self.lft_len + usize::from(dlid)] = sl;
    }

    /// The VL a packet with `sl` uses when switch `sw` sends it out of `out_port`.
    /// Without SL-to-VL tables the identity (VL = SL) applies.
    #[must_use]
    pub fn vl(&self, sw: usize, out_port: u8, sl: u8) -> u8 {
        match &self.sl2vl {
            Some(t) => t
                .get(sw)
                .and_then(|p| p.get(usize::from(out_port)))
                .map_or(sl, |m| m[usize::from(sl & 15)]),
            None => sl,
        }
    }

    /// The SL-to-VL table of switch `sw` for packets leaving by `out_port` (the same for
    /// every input port), if the engine programs SL-to-VL tables.
    #[must_use]
    pub fn sl2vl(&self, sw: usize, out_port: u8) -> Option<[u8; 16]> {
        self.sl2vl
            .as_ref()
            .and_then(|t| t.get(sw)?.get(usize::from(out_port)).copied())
    }

    /// Installs SL-to-VL tables: per switch, per output port (index = port number).
    pub fn set_sl2vl(&mut self, tables: Vec<Vec<[u8; 16]>>) {
        self.sl2vl = Some(tables);
    }

    /// Number of virtual lanes the routes need (1 for engines without SLs).
    #[must_use]
    pub fn vls_used(&self) -> u8 {
        self.vls
    }

    /// Records how many VLs the routes need.
    pub fn set_vls_used(&mut self, vls: u8) {
        self.vls = vls;
    }

    /// Renames the producing engine (used by fallback chains and wrappers).
    pub fn set_engine(&mut self, engine: impl Into<String>) {
        self.engine = engine.into();
    }

    /// Bytes held by the tables (LFTs, SLs, SL-to-VL).
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.lfts.len()
            + self.sl.as_ref().map_or(0, Vec::len)
            + self
                .sl2vl
                .as_ref()
                .map_or(0, |t| t.iter().map(|p| p.len() * 16).sum())
    }

    /// These routes carried onto a later snapshot of the same fabric, as the `previous`
    /// of [`crate::RoutingEngine::reroute`]: switch `s` of the new snapshot takes the
    /// tables of switch `old_index[s]` here (the caller maps switches by GUID; port
    /// numbers are physical and stay). LFTs are cut or padded to `lft_len`, and every
    /// LID `l` with `live[l] == false` (no longer assigned) becomes [`NO_ROUTE`], so that
    /// entries towards vanished ports are not kept as "still legal". The up/down order
    /// is kept for the switches that remain (re-ranked densely), so re-routing agrees with
    /// the old columns on what "up" means.
    ///
    /// # Panics
    /// If an index of `old_index` is `>= switch_count()`.
    #[must_use]
    pub fn carry_over(&self, old_index: &[u32], lft_len: usize, live: &[bool]) -> Routes {
        let n = old_index.len();
        let copy_rows = |src: &[u8], fill: u8| -> Vec<u8> {
            let mut out = vec![fill; n * lft_len];
            let keep = self.lft_len.min(lft_len);
            for (s, &o) in old_index.iter().enumerate() {
                let o = o as usize;
                assert!(o < self.n_sw, "switch index {o} out of range");
                out[s * lft_len..s * lft_len + keep]
                    .copy_from_slice(&src[o * self.lft_len..o * self.lft_len + keep]);
                for (l, e) in out[s * lft_len..(s + 1) * lft_len].iter_mut().enumerate() {
                    if !live.get(l).copied().unwrap_or(false) {
                        *e = fill;
                    }
                }
            }
            out
        };
        let lfts = copy_rows(&self.lfts, NO_ROUTE);
        let sl = self.sl.as_ref().map(|t| copy_rows(t, 0));
        let sl2vl = self.sl2vl.as_ref().map(|t| {
            old_index
                .iter()
                .map(|&o| t.get(o as usize).cloned().unwrap_or_default())
                .collect()
        });
        let updown_pos = self.updown_pos.as_ref().map(|pos| {
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&s| pos[old_index[s] as usize]);
            let mut dense = vec![0u32; n];
            for (rank, s) in order.into_iter().enumerate() {
                dense[s] = rank as u32;
            }
            dense
        });
        Routes {
            engine: self.engine.clone(),
            n_sw: n,
            lft_len,
            lfts,
            sl,
            sl2vl,
            vls: self.vls,
            updown_pos,
        }
    }

    /// Number of 64-entry LFT blocks (the unit of a LinearForwardingTable SMP) that differ
    /// between `self` and `other`, per switch summed. Both must have the same shape.
    #[must_use]
    pub fn changed_blocks(&self, other: &Routes) -> usize {
        let mut n = 0;
        for s in 0..self.n_sw.min(other.n_sw) {
            let a = self.lft(s);
            let b = other.lft(s);
            let len = a.len().max(b.len());
            for blk in (0..len).step_by(64) {
                let ea = blk + 64;
                let ra = &a[blk.min(a.len())..ea.min(a.len())];
                let rb = &b[blk.min(b.len())..ea.min(b.len())];
                if ra != rb {
                    n += 1;
                }
            }
        }
        n
    }

    /// Number of LFT entries that differ from `other` (same shape assumed).
    #[must_use]
    pub fn changed_entries(&self, other: &Routes) -> usize {
        self.lfts
            .iter()
            .zip(&other.lfts)
            .filter(|(a, b)| a != b)
            .count()
    }
}

#[cfg(test)]
mod carry_tests {
    use super::*;

    /// Filled by several threads or one, the tables are the same: every entry
    /// NO_ROUTE, the shape as asked (a share boundary inside a table or not).
    #[test]
    fn tables_filled_by_threads_are_those_of_new() {
        for (sw, len, threads) in [(3, 7, 4), (1000, 4097, 2), (997, 12_289, 3), (2, 5, 1)] {
            let r = Routes::new_filled_by("x", sw, len, threads);
            assert_eq!(r, Routes::new("x", sw, len), "{sw} x {len} on {threads}");
        }
    }

    #[test]
    fn carry_over_maps_switches_clears_dead_lids_and_reranks() {
        let mut r = Routes::new("updn", 3, 6);
        for s in 0..3 {
            for l in 0..6 {
                r.lft_mut(s)[l] = (10 * s + l) as u8;
            }
        }
        r.updown_pos = Some(vec![2, 0, 1]);
        r.set_sl2vl(vec![vec![[0; 16]], vec![[1; 16]], vec![[2; 16]]]);
        // Old switch 1 is gone; new order is (old 2, old 0); LID 3 vanished; LIDs 6..8
        // did not exist before.
        let live = [false, true, true, false, true, true, true, false];
        let c = r.carry_over(&[2, 0], 8, &live);
        assert_eq!(c.switch_count(), 2);
        assert_eq!(c.lft_len(), 8);
        assert_eq!(c.lft(0), &[255, 21, 22, 255, 24, 25, 255, 255]);
        assert_eq!(c.lft(1), &[255, 1, 2, 255, 4, 5, 255, 255]);
        // Old positions 1 (old 2) and 2 (old 0) re-rank to 0 and 1.
        assert_eq!(c.updown_pos, Some(vec![0, 1]));
        assert_eq!(c.sl2vl(0, 0), Some([2; 16]));
        assert_eq!(c.sl2vl(1, 0), Some([0; 16]));
        assert_eq!(c.engine(), "updn");
        // Shrinking cuts the tables.
        let c = r.carry_over(&[1], 3, &[true; 3]);
        assert_eq!(c.lft(0), &[10, 11, 12]);
    }
}
