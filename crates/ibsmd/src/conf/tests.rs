use std::path::PathBuf;
use std::time::Duration;

use ibsm::manager::MKeyMode;
use ibsm::manager::partition::Enforcement;
use ibsm::routing::{EngineKind, EngineList};
use proptest::prelude::*;

use super::*;

fn read(text: &str) -> Result<(Settings, FileReport), Error> {
    let mut s = Settings::default();
    let r = parse(text, "t.conf", &mut s)?;
    Ok((s, r))
}

#[test]
fn opensm_keys_set_the_settings_and_later_lines_win() {
    let (s, r) = read(
        "# comment\n\n  sm_priority 3\nsweep_interval 5\nrouting_engine updn,minhop\n\
         m_key 0x1234\nlog_file /tmp/x.log\nsm_priority 0x7\npart_enforce off\n",
    )
    .unwrap();
    assert_eq!(s.sm.priority, 7);
    assert_eq!(s.sm.sweep_interval, Duration::from_secs(5));
    assert_eq!(
        s.sm.routing.engines(),
        [EngineKind::UpDn, EngineKind::MinHop]
    );
    assert_eq!(s.sm.m_key, MKeyMode::Single(0x1234));
    assert_eq!(s.log_file, LogTarget::File(PathBuf::from("/tmp/x.log")));
    assert_eq!(s.part_enforce, Enforcement::Off);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.line_of("sm_priority"), Some((8, "0x7")));
}

#[test]
fn unimplemented_and_unknown_keys_are_warned_about_with_their_line() {
    let (s, r) = read("lmc 1\nreassign_lids TRUE\nqos FALSE\nno_such_key 3\n").unwrap();
    assert_eq!(s.sm.lmc, 1);
    assert_eq!(
        r.warnings,
        [
            "t.conf:2: reassign_lids TRUE: an OpenSM option ibsmd does not implement; ignored",
            "t.conf:4: no_such_key: unknown option; ignored",
        ]
    );
    // At OpenSM's default: nothing lost, only noted.
    assert_eq!(r.ignored.len(), 1);
    assert!(
        r.ignored[0].starts_with("t.conf:3: qos FALSE"),
        "{:?}",
        r.ignored
    );
}

#[test]
fn a_bad_value_is_refused_with_file_line_and_token() {
    let cases = [
        ("lmc 1\nsm_priority high\n", "t.conf:2: sm_priority high: "),
        ("sweep_interval -1\n", "t.conf:1: sweep_interval -1: "),
        (
            "\n\nlmc 300\n",
            "t.conf:3: lmc 300: 300 does not fit in 8 bits",
        ),
        (
            "accum_log_file yes\n",
            "t.conf:1: accum_log_file yes: is neither TRUE nor FALSE",
        ),
        (
            "routing_engine updn,nope\n",
            "t.conf:1: routing_engine updn,nope: routing engine list: \"nope\" (item 2)",
        ),
        (
            "part_enforce sideways\n",
            "t.conf:1: part_enforce sideways: ",
        ),
        ("sm_key\n", "t.conf:1: sm_key: no value"),
    ];
    for (text, want) in cases {
        let e = read(text).expect_err(text);
        assert!(e.msg.starts_with(want), "{want:?} in {:?}", e.msg);
    }
}

#[test]
fn a_value_validate_refuses_names_the_line_that_set_it() {
    let dir = std::env::temp_dir().join(format!("ibsmd_conf_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("o.conf");
    std::fs::write(&path, "# x\nsm_priority 16\n").unwrap();
    let cli = crate::cli::Cli {
        config: Some(path.clone()),
        ..crate::cli::Cli::default()
    };
    let e = load(&cli).unwrap_err();
    let want = format!(
        "{}:2: sm_priority 16: priority 16 is outside 0..=15",
        path.display()
    );
    assert!(e.msg.starts_with(&want), "{}", e.msg);
    // The flag overrides the file: then it is the command line that is wrong.
    let cli = crate::cli::Cli {
        lmc: Some(9),
        priority: Some(1),
        ..cli
    };
    let e = load(&cli).unwrap_err();
    assert!(e.msg.starts_with("command line: lmc 9"), "{}", e.msg);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_default_is_written_and_reads_back_as_it_was() {
    let d = Settings::default();
    let text = write(&d);
    assert!(text.contains("\nsm_priority 0\n") && text.contains("\nrouting_engine (null)\n"));
    let (s, r) = read(&text).unwrap();
    assert_eq!(s, d);
    assert!(r.warnings.is_empty());
    for o in options() {
        assert_eq!(
            r.line_of(o.key).map(|_| ()),
            Some(()),
            "{} not written",
            o.key
        );
    }
}

fn engine() -> impl Strategy<Value = EngineKind> {
    proptest::sample::select(EngineKind::ALL.to_vec())
}

prop_compose! {
    fn settings()(
        guid: u64, sm_key: u64, prefix: u64, m_key: u64, lease: u16,
        small in proptest::array::uniform6(any::<u8>()),
        sweep in 0u64..100_000, poll in 1u64..100_000, tx in 1u64..100_000,
        retries: u32, polls: u32, window in 1usize..5000, limit in 0usize..5000,
        threads in 0usize..64, rebalance in 0u64..100_000,
        engines in proptest::collection::vec(engine(), 1..4), no_fallback: bool,
        flags: [bool; 5], enforce in 0u8..4,
        file in proptest::option::of("/[a-z]{1,8}(/[a-z0-9._-]{1,8}){0,2}"),
        log in proptest::option::of("/var/log/[a-z]{1,8}\\.log"),
    ) -> Settings {
        let mut s = Settings { guid, ..Settings::default() };
        s.sm.sm_key = sm_key;
        s.sm.subnet_prefix = prefix;
        s.sm.m_key = if m_key == 0 { MKeyMode::Off } else { MKeyMode::Single(m_key) };
        s.sm.m_key_lease = lease;
        [s.sm.m_key_protect, s.sm.lmc, s.sm.sm_sl, s.sm.packet_life_time,
            s.sm.subnet_timeout, s.sm.priority] = small;
        s.sm.sweep_interval = Duration::from_secs(sweep);
        s.sm.polling_timeout = Duration::from_millis(poll);
        s.sm.transaction_timeout = Duration::from_millis(tx);
        s.sm.transaction_retries = retries;
        s.sm.polling_retries = polls;
        s.sm.max_wire_smps = window;
        s.max_wire_smps_limit = limit;
        s.routing_threads = threads;
        s.sm.rebalance_after = (rebalance > 0).then(|| Duration::from_secs(rebalance));
        s.sm.routing = EngineList::new(engines).with_no_fallback(no_fallback);
        let [reroute, both, rereg, sa, accum] = flags;
        s.sm.reroute_on_loss = reroute;
        s.allow_both_pkeys = both;
        s.sm.client_reregister = rereg;
        s.sm.sa = sa;
        s.accum_log_file = accum;
        s.part_enforce = [Enforcement::Both, Enforcement::In, Enforcement::Out, Enforcement::Off]
            [usize::from(enforce)];
        s.partition_file = file.clone().map(PathBuf::from);
        s.guid2lid = file.map(|f| PathBuf::from(format!("{f}.lids")));
        s.log_file = log.map_or(LogTarget::Stdout, |l| LogTarget::File(PathBuf::from(l)));
        s.log_flags = small[0];
        s
    }
}

proptest! {
    #[test]
    fn what_is_written_reads_back_as_it_was(s in settings()) {
        let (back, r) = read(&write(&s)).unwrap();
        prop_assert_eq!(back, s);
        prop_assert!(r.warnings.is_empty());
    }
}
