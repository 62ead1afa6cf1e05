//! The facade's names and its builder.

use ibsm::manager::{ConfigField, SmConfigError};
use ibsm::prelude::*;

type Port = sim::SimPort<sim::SmaAgent>;
/// A change made through the builder.
type Edit = fn(SmBuilder<Port>) -> SmBuilder<Port>;

fn sim_port() -> (sim::Sim<sim::SmaAgent>, sim::SimPort<sim::SmaAgent>) {
    let fabric = topology::generate::k_ary_n_tree(2, 2).expect("fabric");
    let mut s: sim::Sim<sim::SmaAgent> =
        sim::Sim::from_fabric(&fabric, sim::SimConfig::default()).expect("sim");
    let (_, ca) = fabric.cas().next().expect("a CA");
    let port = s
        .attach_sm(s.node_by_guid(ca.guid().0).expect("in sim"), 1)
        .expect("attach");
    (s, port)
}

/// `ibsm::SubnetManager` is the engine, not a second type of the same name: this
/// compiles only if the two paths name one type.
#[test]
fn subnet_manager_is_the_engine() {
    fn same(e: &ibsm::manager::SubnetManager) -> &ibsm::SubnetManager {
        e
    }
    let (_sim, port) = sim_port();
    let sm = Sm::builder().transport(port).build().expect("build");
    assert!(!same(sm.engine()).is_up());
}

/// The builder refuses what `SmConfig::validate` refuses, with the same typed error.
#[test]
fn builder_validates_with_the_engines_rule() {
    let cases: [(Edit, &str); 3] = [
        (|b| b.priority(16), "priority"),
        (|b| b.lmc(8), "lmc"),
        (|b| b.mkey(MKeyMode::Single(7), 4, 0), "m_key_protect"),
    ];
    for (edit, field) in cases {
        let (_sim, port) = sim_port();
        let err = edit(Sm::builder().transport(port))
            .build()
            .expect_err(field);
        assert!(
            matches!(err, SmError::Config(SmConfigError::OutOfRange { field: f, .. }) if f.name() == field),
            "{field}: {err:?}"
        );
    }
    // A field the builder has no setter for goes through `config` and the same check.
    let (_sim, port) = sim_port();
    let mut cfg = SmConfig::default();
    cfg.routing_threads = 0;
    let err = Sm::builder()
        .config(cfg)
        .transport(port)
        .build()
        .expect_err("zero threads");
    assert!(
        matches!(
            err,
            SmError::Config(SmConfigError::Zero {
                field: ConfigField::RoutingThreads,
                ..
            })
        ),
        "{err:?}"
    );
}

/// `jobs(Threads)` hands the engine's jobs to worker threads (the engine offloads them)
/// and the SM still brings the fabric up right; the default runs them inline.
/// (Planted: `build` ignoring the policy -> the engine does not offload.)
#[test]
fn threaded_jobs_bring_the_fabric_up() {
    let (_sim, port) = sim_port();
    let sm = Sm::builder().transport(port).build().expect("build");
    assert!(!sm.engine().job_offload());
    let (sim, port) = sim_port();
    let mut sm = Sm::builder()
        .transport(port)
        .jobs(JobPolicy::Threads(std::num::NonZeroUsize::MIN))
        .build()
        .expect("build");
    assert!(sm.engine().job_offload());
    let stats = sm
        .run_until_up(Instant::from_secs(60))
        .expect("run")
        .expect("subnet up");
    assert_eq!(stats.switches, 4);
    assert!(sim.verify().is_clean(), "{:?}", sim.verify());
}
