//! Reading switches' linear forwarding tables over directed routes (what `ibroute`
//! prints): one LinearForwardingTable Get per 64-LID block, every switch's blocks in
//! flight together, for `ibsm-netdiscover --svg --routes`.

use ibsm_query::smp::{SmpClient, SmpConfig, SmpError, SmpEvent, Target};
use ibsm_transport::SansIo;
use ibsm_wire::{DrPath, LinearForwardingTable};

/// The tables of some switches, filled as the answers come (a [`SansIo`] core with no
/// events: run it with [`crate::run`]).
#[derive(Debug)]
pub struct LftReader {
    smps: SmpClient<(usize, u16)>,
    /// Per switch asked, its table indexed by LID (0xFF where unknown or no route).
    pub tables: Vec<Vec<u8>>,
    /// Blocks that could not be read: (switch, block, why).
    pub errors: Vec<(usize, u16, SmpError)>,
}

impl LftReader {
    /// Asks every switch at `paths` for the blocks holding LIDs `0..=top`.
    #[must_use]
    pub fn new(cfg: SmpConfig, paths: &[DrPath], top: u16) -> Self {
        let blocks = top / 64 + 1;
        let mut r = Self {
            smps: SmpClient::new(cfg),
            tables: vec![vec![0xFF; usize::from(blocks) * 64]; paths.len()],
            errors: Vec::new(),
        };
        for (i, path) in paths.iter().enumerate() {
            for b in 0..blocks {
                if let Err(e) =
                    r.smps
                        .get::<LinearForwardingTable>(Target::Route(*path), u32::from(b), (i, b))
                {
                    r.errors.push((i, b, e));
                }
            }
        }
        r
    }

    fn collect(&mut self) {
        while let Some(ev) = self.smps.poll_event() {
            let (i, b) = match &ev {
                SmpEvent::Done { cookie, .. } | SmpEvent::Failed { cookie, .. } => *cookie,
                SmpEvent::Unsolicited(_) => continue,
            };
            match ev.decode::<LinearForwardingTable>() {
                Ok(t) => {
                    let at = usize::from(b) * 64;
                    if let Some(dst) = self.tables.get_mut(i).and_then(|v| v.get_mut(at..at + 64)) {
                        dst.copy_from_slice(&t.ports);
                    }
                }
                Err(e) => self.errors.push((i, b, e)),
            }
        }
    }
}

ibsm_query::sans_io_over_smps!(LftReader);
