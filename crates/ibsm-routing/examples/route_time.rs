//! Times one engine on a generated XGFT, 1 thread against N, alternating (a quick look
//! before the criterion bench `benches/benches/routing.rs`).
//!
//! `cargo run --release -p ibsm-routing --example route_time -- [ENGINE] [REPS] [THREADS] [M,M,M W,W,W]`

use std::time::Instant;

use ibsm_routing::{EngineKind, LidAssignment, RouteOptions};
use ibsm_topology::{Csr, generate};

fn list(s: &str) -> Vec<u32> {
    s.split(',').map(|x| x.parse().expect("a number")).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = EngineKind::from_name(args.first().map_or("minhop", String::as_str))
        .expect("an engine name");
    let reps: usize = args.get(1).map_or(3, |s| s.parse().expect("reps"));
    let threads: usize = args.get(2).map_or(2, |s| s.parse().expect("threads"));
    let m = args.get(3).map_or(vec![18, 18, 36], |s| list(s));
    let w = args.get(4).map_or(vec![1, 18, 18], |s| list(s));
    let t0 = Instant::now();
    let f = generate::xgft(&generate::Xgft { m, w, radix: None }).expect("valid XGFT");
    let csr = Csr::new(&f);
    let lids = LidAssignment::sequential(&csr, 0).expect("lids");
    eprintln!(
        "fabric + csr + lids: {:.1} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let eng = kind.engine();
    let mut first = None;
    for rep in 0..reps {
        for t in [1, threads] {
            let opts = RouteOptions::default().with_threads(t);
            let t0 = Instant::now();
            let r = eng.route(&csr, &lids, &opts).expect("routes");
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            let same = first.get_or_insert_with(|| r.clone()) == &r;
            let hash = (0..r.switch_count())
                .flat_map(|s| r.lft(s).iter().copied())
                .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
            println!("rep {rep} threads {t}: {ms:.1} ms (same tables: {same}, hash {hash:016x})");
        }
    }
}
