//! Peer tests of what an operator uses around a running ibsmd, on ibsim:
//!
//! - the dumps: `ibsmd --once --dump-dir` writes OpenSM's files, and the LFT dump read
//!   back (`LftDump::parse`) equals what `ibroute` reads from every switch; on a fresh
//!   ibsim of the same fabric OpenSM's own `file` routing engine (`opensm -R file -U
//!   opensm-lfts.dump`) loads it ("file tables configured on all switches") and the
//!   diagnostics verify the fabric it configures, and its tables equal ours entry by
//!   entry once each of our LIDs is mapped to the LID OpenSM gave the same port (its file
//!   engine remaps a dumped route by the port GUID the dump names);
//! - the control socket and the metrics endpoint of a running ibsmd: `ibsmd status`
//!   and `/metrics` + `/status` report its sweeps and the fabric, `ibsmd sweep --heavy`
//!   makes it sweep, `ibsmd dump` writes the dumps, garbage on the socket gets an error
//!   line and the daemon carries on.
//!
//! Every wait is for a line in a log or an answer, with a generous deadline.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::Duration;

use ibsm::manager::dump::LftDump;
use ibsm_tests::exposition::Exposition;
use ibsm_tests::peer::{
    OPENSM, PeerFabric, bring_up, client, needed, net_file, run_bounded, start_ibsmd, stop_ibsmd,
    verify_topology,
};
use ibsm_tests::{peers_present, tail, wait_until};
use ibsm_topology::generate;

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");

const PATIENCE: Duration = Duration::from_secs(60);

/// The switches' tables of a dump: switch GUID -> (LID -> port).
fn tables(dump: &LftDump) -> BTreeMap<u64, BTreeMap<u16, u8>> {
    dump.switches.iter().map(|s| (s.guid, s.ports())).collect()
}

#[test]
fn our_lft_dump_loads_into_opensms_file_engine() {
    if !peers_present("ibsmd_ops", &needed()) {
        return;
    }
    let fab = generate::fat_tree(8, 2).unwrap();
    let net = net_file(&fab, "2-level radix-8 fat tree");
    let (_, sm_ca) = fab.cas().next().unwrap();
    let host = sm_ca.description.clone();

    // ibsmd configures the fabric once and dumps what it programmed.
    let ours = {
        let f = PeerFabric::start("dump_ibsmd", &net);
        let dir = f.path("dumps");
        let _ = bring_up(
            &f,
            IBSMD,
            Some(&host),
            &["--dump-dir", dir.to_str().unwrap()],
        );
        let text = std::fs::read_to_string(dir.join("opensm-lfts.dump")).unwrap();
        let dump = LftDump::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(dump.switches.len(), fab.switch_count(), "{text}");
        for name in ["opensm-subnet.lst", "opensm-mfts.dump", "opensm-sl2vl.dump"] {
            assert!(dir.join(name).exists(), "{name} missing");
        }
        // The subnet list has every cable from both ends, all Active.
        let lst = std::fs::read_to_string(dir.join("opensm-subnet.lst")).unwrap();
        assert_eq!(lst.lines().count(), 2 * fab.link_count(), "{lst}");
        assert!(lst.lines().all(|l| l.contains(" LOG=ACT ")), "{lst}");
        // Slurm's topology: one line per switch (each has CAs or switches below it).
        let slurm = std::fs::read_to_string(dir.join("slurm-topology.conf")).unwrap();
        assert_eq!(slurm.lines().count(), fab.switch_count(), "{slurm}");
        assert!(
            slurm.lines().all(|l| l.starts_with("SwitchName=")),
            "{slurm}"
        );
        // What the diagnostics read from the switches is the dump.
        let seen = verify_topology(&f, &fab, 0);
        assert_eq!(tables(&dump), seen.lfts, "ibsmd's dump vs ibroute");
        let guid2lid = std::fs::read_to_string(dir.join("guid2lid")).unwrap();
        (dump, guid2lid, seen.lids)
    };
    let (dump, guid2lid, lids) = ours;

    // A fresh fabric: OpenSM loads our tables with its file engine, our LIDs from the
    // guid2lid in its cache directory.
    let f = PeerFabric::start("dump_opensm", &net);
    let lfts = f.path("opensm-lfts.dump");
    std::fs::write(&lfts, dump.to_string()).unwrap();
    std::fs::create_dir_all(f.path("osm")).unwrap();
    std::fs::write(f.path("osm/guid2lid"), &guid2lid).unwrap();
    let mut c = client(&f, OPENSM, Some(&host), "osm");
    c.args(["-R", "file", "-U"])
        .arg(&lfts)
        .args(["--once", "--honor_guid2lid", "-f", "osm.log", "-d2"])
        .env("OSM_TMP_DIR", ".")
        .env("OSM_CACHE_DIR", ".");
    let (_, out, err) = run_bounded(c, PATIENCE);
    let log = f.read("osm/osm.log");
    assert!(
        log.contains("file tables configured on all switches"),
        "OpenSM did not use the file engine:\n{}\n{out}\n{err}",
        tail(&log, 40)
    );
    // OpenSM's tables are a working routing of the fabric (the diagnostics walk them),
    // and they are ours: OpenSM under ibsim picks its own LIDs despite our guid2lid, and
    // its file engine re-targets each dumped route at the LID its port has now, so every
    // (our LID -> port) must appear as (OpenSM's LID of that port -> the same port).
    let theirs = verify_topology(&f, &fab, 0);
    let expected = remap_tables(&tables(&dump), &lids, &theirs.lids);
    assert_eq!(
        expected.len(),
        fab.switch_count(),
        "our dump names switches OpenSM's fabric lacks"
    );
    for (sw, want) in &expected {
        let got = theirs
            .lfts
            .get(sw)
            .unwrap_or_else(|| panic!("ibroute found no switch {sw:#x}"));
        assert_eq!(
            got, want,
            "switch {sw:#x}: OpenSM's file-engine LFT vs our dump"
        );
    }
}

/// Our switch tables with each destination LID replaced by the LID the same port has
/// under the other SM (`ours` and `theirs` key ports the same way: node GUID, port).
fn remap_tables(
    tables: &BTreeMap<u64, BTreeMap<u16, u8>>,
    ours: &BTreeMap<(u64, u8), u16>,
    theirs: &BTreeMap<(u64, u8), u16>,
) -> BTreeMap<u64, BTreeMap<u16, u8>> {
    let port_of: BTreeMap<u16, (u64, u8)> = ours.iter().map(|(k, lid)| (*lid, *k)).collect();
    tables
        .iter()
        .map(|(sw, lft)| {
            let remapped = lft
                .iter()
                .map(|(lid, out)| {
                    let port = port_of
                        .get(lid)
                        .unwrap_or_else(|| panic!("our LID {lid} is no port's"));
                    let lid = theirs
                        .get(port)
                        .unwrap_or_else(|| panic!("OpenSM gave {port:x?} no LID"));
                    (*lid, *out)
                })
                .collect();
            (*sw, remapped)
        })
        .collect()
}

/// One request line on the control socket, one response line back.
fn raw_request(path: &std::path::Path, line: &[u8]) -> serde_json::Value {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(line).unwrap();
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

/// `ibsmd ARGS --control-socket PATH --json`: exit code and the JSON response.
fn ibsmd_client(path: &std::path::Path, args: &[&str]) -> (i32, serde_json::Value) {
    let mut c = Command::new(IBSMD);
    c.args(args).arg("--control-socket").arg(path).arg("--json");
    let (_, out, err) = run_bounded(c, PATIENCE);
    let line = out.lines().last().unwrap_or_default();
    let v = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {out:?} {err}"));
    let code = Command::new(IBSMD)
        .args(args)
        .arg("--control-socket")
        .arg(path)
        .output()
        .unwrap()
        .status
        .code()
        .unwrap_or(-1);
    (code, v)
}

#[test]
fn status_metrics_and_control_of_a_running_ibsmd() {
    if !peers_present("ibsmd_ops", &needed()) {
        return;
    }
    let fab = generate::fat_tree(8, 2).unwrap();
    let f = PeerFabric::start("ops", &net_file(&fab, "2-level radix-8 fat tree"));
    let (_, sm_ca) = fab.cas().next().unwrap();
    let sock = f.path("ibsmd.sock");
    let dumps = f.path("dumps");
    let daemon = start_ibsmd(
        &f,
        IBSMD,
        &sm_ca.description,
        0,
        &[
            "--control-socket",
            sock.to_str().unwrap(),
            "--metrics",
            "127.0.0.1:0",
            "--dump-dir",
            dumps.to_str().unwrap(),
        ],
    );
    let nodes = fab.switch_count() + fab.cas().count();
    // The status reports the first heavy sweep once it is done.
    let status = wait_until("ibsmd status after SUBNET UP", PATIENCE, || {
        if !sock.exists() {
            return Err(tail(&f.read("ibsmd.err"), 20));
        }
        let (code, v) = ibsmd_client(&sock, &["status"]);
        let s = &v["status"];
        if code == 0 && s["sweeps"]["heavy"].as_u64() >= Some(1) {
            Ok(v)
        } else {
            Err(format!("{v}"))
        }
    });
    let s = &status["status"];
    assert_eq!(s["role"], "MASTER", "{status}");
    assert_eq!(s["subnet_up"], true);
    assert_eq!(s["master"]["local"], true);
    assert_eq!(s["fabric"]["nodes"].as_u64(), Some(nodes as u64));
    assert_eq!(
        s["fabric"]["switches"].as_u64(),
        Some(fab.switch_count() as u64)
    );
    assert_eq!(s["fabric"]["links"].as_u64(), Some(fab.link_count() as u64));
    assert!(s["smps"]["by_attribute"]["NodeInfo"].as_u64() >= Some(nodes as u64));
    assert!(s["sweeps"]["last_heavy_ms"].as_f64().is_some());
    // The heavy sweep wrote the dumps.
    let text = std::fs::read_to_string(dumps.join("opensm-lfts.dump")).unwrap();
    assert_eq!(
        LftDump::parse(&text).unwrap().switches.len(),
        fab.switch_count()
    );

    // The metrics endpoint: its address is in the log.
    let err = f.read("ibsmd.err");
    let url = err
        .lines()
        .find_map(|l| l.split("metrics on ").nth(1))
        .unwrap_or_else(|| panic!("no metrics address in the log:\n{err}"))
        .trim()
        .to_owned();
    let text = ureq::get(&url).call().unwrap().into_string().unwrap();
    let exp = Exposition::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(
        exp.value("ibsm_sweeps_total", &[("kind", "heavy")]) >= 1.0,
        "{text}"
    );
    assert_eq!(exp.value("ibsm_role", &[("role", "MASTER")]), 1.0);
    assert_eq!(
        exp.value("ibsm_fabric_nodes", &[("type", "switch")]),
        fab.switch_count() as f64
    );
    assert_eq!(exp.value("ibsm_fabric_links", &[]), fab.link_count() as f64);
    assert!(
        exp.value("ibsm_smps_total", &[("attribute", "NodeInfo")]) >= nodes as f64,
        "{text}"
    );
    assert!(exp.value("ibsm_smps_sent_total", &[]) >= nodes as f64);
    // A clean fabric: nothing retried to death, nothing unhealthy, no partition warning,
    // and each family is there for a dashboard to find.
    assert_eq!(exp.value("ibsm_smp_timeouts_total", &[]), 0.0, "{text}");
    assert!(exp.value("ibsm_smp_retries_total", &[]) >= 0.0);
    assert_eq!(exp.value("ibsm_unhealthy_ports", &[]), 0.0);
    assert_eq!(exp.value("ibsm_partition_warnings", &[]), 0.0);
    assert_eq!(
        text.lines().last(),
        Some("# EOF"),
        "OpenMetrics ends with # EOF"
    );
    let status_url = url.replace("/metrics", "/status");
    let json: serde_json::Value = serde_json::from_str(
        &ureq::get(&status_url)
            .call()
            .unwrap()
            .into_string()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(json["role"], "MASTER");
    assert!(json["sweeps"]["heavy"].as_u64() >= Some(1));

    // Garbage gets an error line, and the daemon answers the next request.
    let bad = raw_request(&sock, b"\x00\x01 not a request\n");
    assert_eq!(bad["ok"], false, "{bad}");
    assert!(
        bad["error"].as_str().unwrap().contains("unknown command"),
        "{bad}"
    );
    let bad = raw_request(&sock, b"log-level shouting\n");
    assert_eq!(bad["ok"], false, "{bad}");
    // A level the client itself refuses never reaches the socket; a good one does.
    let out = Command::new(IBSMD)
        .args(["log-level", "bogus", "--control-socket"])
        .arg(&sock)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // The level set over the socket is in force at once: at `warn` a heavy sweep writes
    // no INFO or DEBUG line (at -v it writes both), at `debug` it writes DEBUG lines.
    let heavy_sweep = || {
        let (_, v) = ibsmd_client(&sock, &["status"]);
        let before = v["status"]["sweeps"]["heavy"].as_u64().unwrap();
        let (code, v) = ibsmd_client(&sock, &["sweep", "--heavy"]);
        assert_eq!(code, 0, "{v}");
        wait_until("a requested heavy sweep", PATIENCE, || {
            let (_, v) = ibsmd_client(&sock, &["status"]);
            let n = v["status"]["sweeps"]["heavy"].as_u64().unwrap_or(0);
            if n > before {
                Ok(())
            } else {
                Err(format!("{v}"))
            }
        });
    };
    let (code, v) = ibsmd_client(&sock, &["log-level", "warn"]);
    assert_eq!((code, &v["ok"]), (0, &serde_json::Value::Bool(true)), "{v}");
    let mark = f.read("ibsmd.err").len();
    heavy_sweep();
    let quiet = f.read("ibsmd.err")[mark..].to_owned();
    assert!(
        !quiet.contains(" INFO ") && !quiet.contains(" DEBUG "),
        "log-level warn not in force:\n{quiet}"
    );
    let (code, v) = ibsmd_client(&sock, &["log-level", "debug"]);
    assert_eq!((code, &v["ok"]), (0, &serde_json::Value::Bool(true)), "{v}");
    let mark = f.read("ibsmd.err").len();
    heavy_sweep();
    let loud = f.read("ibsmd.err")[mark..].to_owned();
    assert!(
        loud.contains(" DEBUG "),
        "log-level debug not in force:\n{loud}"
    );

    // A heavy sweep on request: the count goes up.
    let before = s["sweeps"]["heavy"].as_u64().unwrap();
    let (code, v) = ibsmd_client(&sock, &["sweep", "--heavy"]);
    assert_eq!(code, 0, "{v}");
    wait_until("the requested heavy sweep", PATIENCE, || {
        let (_, v) = ibsmd_client(&sock, &["status"]);
        let n = v["status"]["sweeps"]["heavy"].as_u64().unwrap_or(0);
        if n > before {
            Ok(())
        } else {
            Err(format!("{v}"))
        }
    });
    let (code, v) = ibsmd_client(&sock, &["sweep"]);
    assert!(
        code == 0 || v["error"].as_str().is_some_and(|e| e.contains("sweep")),
        "{v}"
    );
    let (code, v) = ibsmd_client(&sock, &["rebalance"]);
    assert_eq!(code, 0, "{v}");

    // `ibsmd dump` writes the files now. The daemon's dump thread may be writing the
    // dumps the rebalance made due meanwhile: remove until the directory is gone.
    wait_until(
        "the dump directory removed",
        PATIENCE,
        || match std::fs::remove_dir_all(&dumps) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.to_string()),
        },
    );
    let (code, v) = ibsmd_client(&sock, &["dump"]);
    assert_eq!(code, 0, "{v}");
    let text = std::fs::read_to_string(dumps.join("opensm-lfts.dump")).unwrap();
    assert_eq!(
        LftDump::parse(&text).unwrap().switches.len(),
        fab.switch_count()
    );
    assert!(dumps.join("guid2lid").exists());

    let _ = stop_ibsmd(&f, daemon);
    assert!(!sock.exists(), "the socket is removed at exit");
}
