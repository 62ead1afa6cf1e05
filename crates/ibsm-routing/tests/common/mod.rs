//! Fabrics the routing integration tests share (each test binary uses what it needs).
#![allow(dead_code)]

use ibsm_topology::{Fabric, generate};

/// XGFT(h; m; w) from the generator.
pub(crate) fn xgft(m: &[u32], w: &[u32]) -> Fabric {
    generate::xgft(&generate::Xgft {
        m: m.to_vec(),
        w: w.to_vec(),
        radix: None,
    })
    .unwrap()
}

/// A mesh or torus with `cas` CAs per switch.
pub(crate) fn grid(dims: &[u32], torus: bool, cas: u32) -> Fabric {
    generate::grid(&generate::Grid {
        dims: dims.to_vec(),
        torus,
        cas_per_switch: cas,
    })
    .unwrap()
}

/// fat_tree(8, 3) with 10 % of its cables cut (seed 7): the degraded tree of the tests.
pub(crate) fn degraded_ft8x3() -> Fabric {
    let mut deg = generate::fat_tree(8, 3).unwrap();
    generate::degrade(&mut deg, 0.1, 7).unwrap();
    deg
}
