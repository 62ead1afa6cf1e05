//! [`EngineList`]: the ordered engines of OpenSM's `routing_engine` option, tried in turn.

use ibsm_topology::Csr;

use crate::engine::{EngineKind, RouteOptions};
use crate::error::{Result, RoutingError};
use crate::lids::LidAssignment;
use crate::routes::Routes;

/// The engines to try, in order, as OpenSM's `routing_engine ftree,updn` lists them.
///
/// As in OpenSM (`osm_ucast_mgr_process`), the first engine that routes the fabric wins;
/// when every listed engine fails, `minhop` routes it unless the list says
/// `no_fallback`, so a fabric is never left unrouted because one engine did not fit.
/// An empty list is `minhop` alone.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct EngineList {
    engines: Vec<EngineKind>,
    no_fallback: bool,
}

/// Why a `routing_engine` string was refused: the token and its place in the list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "routing engine list: {token:?} (item {position}) is not an engine (one of {known}, or no_fallback)"
)]
pub struct EngineListError {
    /// The unknown name.
    pub token: String,
    /// Its 1-based position in the list.
    pub position: usize,
    /// The names that would have been accepted.
    pub known: String,
}

/// Routes and how they were found: which engine of the list produced them and why the
/// engines before it failed.
#[derive(Clone, Debug)]
pub struct Routed {
    /// The routes of the first engine that succeeded.
    pub routes: Routes,
    /// That engine.
    pub engine: EngineKind,
    /// Each engine tried before it, with its error, in order.
    pub failed: Vec<(EngineKind, RoutingError)>,
}

impl EngineList {
    /// The engines `engines`, in this order, with the minhop fallback.
    #[must_use]
    pub fn new(engines: Vec<EngineKind>) -> Self {
        Self {
            engines,
            no_fallback: false,
        }
    }

    /// Without (`true`) or with the minhop fallback (OpenSM's `no_fallback` item).
    #[must_use]
    pub fn with_no_fallback(mut self, no_fallback: bool) -> Self {
        self.no_fallback = no_fallback;
        self
    }

    /// The engines as listed.
    #[must_use]
    pub fn engines(&self) -> &[EngineKind] {
        &self.engines
    }

    /// Whether the list says `no_fallback`.
    #[must_use]
    pub fn no_fallback(&self) -> bool {
        self.no_fallback
    }

    /// The engine the operator wants most: the first listed (minhop for an empty list).
    #[must_use]
    pub fn preferred(&self) -> EngineKind {
        self.engines.first().copied().unwrap_or(EngineKind::MinHop)
    }

    /// Every engine in the order it is tried: the list without repeats (an engine that
    /// failed fails again on the same input), then minhop unless `no_fallback` or
    /// already tried.
    #[must_use]
    pub fn order(&self) -> Vec<EngineKind> {
        let mut out: Vec<EngineKind> = Vec::with_capacity(self.engines.len() + 1);
        for &k in &self.engines {
            if !out.contains(&k) {
                out.push(k);
            }
        }
        if out.is_empty() || (!self.no_fallback && !out.contains(&EngineKind::MinHop)) {
            out.push(EngineKind::MinHop);
        }
        out
    }

    /// Runs the engines of [`EngineList::order`] until one routes the fabric.
    ///
    /// # Errors
    /// [`RoutingError::AllFailed`] with every engine's error, in order, when none did.
    pub fn route(&self, csr: &Csr, lids: &LidAssignment, opts: &RouteOptions) -> Result<Routed> {
        let mut failed = Vec::new();
        for kind in self.order() {
            match kind.engine().route(csr, lids, opts) {
                Ok(routes) => {
                    return Ok(Routed {
                        routes,
                        engine: kind,
                        failed,
                    });
                }
                Err(e) => failed.push((kind, e)),
            }
        }
        Err(RoutingError::AllFailed(
            failed
                .into_iter()
                .map(|(k, e)| (k.name().to_owned(), e))
                .collect(),
        ))
    }
}

impl From<EngineKind> for EngineList {
    fn from(kind: EngineKind) -> Self {
        Self::new(vec![kind])
    }
}

impl std::str::FromStr for EngineList {
    type Err = EngineListError;

    /// OpenSM's syntax: names separated by commas or blanks, `no_fallback` anywhere.
    fn from_str(s: &str) -> std::result::Result<Self, EngineListError> {
        let mut list = EngineList::default();
        let items = s
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty());
        for (i, token) in items.enumerate() {
            if token == "no_fallback" {
                list.no_fallback = true;
            } else if let Some(k) = EngineKind::from_name(token) {
                list.engines.push(k);
            } else {
                let known: Vec<&str> = EngineKind::ALL.iter().map(|k| k.name()).collect();
                return Err(EngineListError {
                    token: token.to_owned(),
                    position: i + 1,
                    known: known.join(", "),
                });
            }
        }
        Ok(list)
    }
}

impl std::fmt::Display for EngineList {
    /// The list as OpenSM's `routing_engine` option writes it (`ftree,updn,no_fallback`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.engines.iter().map(|k| k.name()).collect();
        if names.is_empty() {
            names.push(EngineKind::MinHop.name());
        }
        if self.no_fallback {
            names.push("no_fallback");
        }
        f.write_str(&names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibsm_topology::generate;

    #[test]
    fn parse_order_and_display_follow_opensm() {
        let l: EngineList = "ftree,updn".parse().unwrap();
        assert_eq!(l.engines(), [EngineKind::FatTree, EngineKind::UpDn]);
        assert_eq!(
            l.order(),
            [EngineKind::FatTree, EngineKind::UpDn, EngineKind::MinHop]
        );
        assert_eq!(l.to_string(), "ftree,updn");
        let l: EngineList = "ftree, updn no_fallback".parse().unwrap();
        assert!(l.no_fallback());
        assert_eq!(l.order(), [EngineKind::FatTree, EngineKind::UpDn]);
        assert_eq!(l.to_string(), "ftree,updn,no_fallback");
        // minhop listed is tried where listed, not again; nothing listed is minhop.
        let l: EngineList = "minhop,dor,minhop".parse().unwrap();
        assert_eq!(l.order(), [EngineKind::MinHop, EngineKind::Dor]);
        assert_eq!(EngineList::default().order(), [EngineKind::MinHop]);
        let l: EngineList = "no_fallback".parse().unwrap();
        assert_eq!(l.order(), [EngineKind::MinHop]);
        let e = "updn,fattree".parse::<EngineList>().unwrap_err();
        assert_eq!((e.token.as_str(), e.position), ("fattree", 2));
        assert!(e.to_string().contains("\"fattree\" (item 2)"), "{e}");
    }

    #[test]
    fn failed_engines_fall_back_in_order_and_are_named() {
        // A torus is no fat tree and dor-less meshes aside, updn routes it.
        let f = generate::grid(&generate::Grid {
            dims: vec![4, 4],
            torus: true,
            cas_per_switch: 1,
        })
        .unwrap();
        let csr = Csr::new(&f);
        let lids = LidAssignment::sequential(&csr, 0).unwrap();
        let opts = RouteOptions::default();
        let r = EngineList::new(vec![EngineKind::FatTree, EngineKind::UpDn])
            .route(&csr, &lids, &opts)
            .unwrap();
        assert_eq!(r.engine, EngineKind::UpDn);
        assert_eq!(r.routes.engine(), "updn");
        assert!(matches!(
            r.failed.as_slice(),
            [(EngineKind::FatTree, RoutingError::NotAFatTree(_))]
        ));
        // Nothing listed fits: minhop takes over, unless told not to.
        let r = EngineList::from(EngineKind::FatTree)
            .route(&csr, &lids, &opts)
            .unwrap();
        assert_eq!((r.engine, r.failed.len()), (EngineKind::MinHop, 1));
        let e = EngineList::from(EngineKind::FatTree)
            .with_no_fallback(true)
            .route(&csr, &lids, &opts)
            .unwrap_err();
        assert!(matches!(&e, RoutingError::AllFailed(v) if v.len() == 1 && v[0].0 == "ftree"));
    }
}
