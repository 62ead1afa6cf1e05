//! Peer test: ibsmd run from an OpenSM configuration file on ibsim. It brings the fabric
//! up, warns by line about the options it does not implement, applies a SIGHUP's
//! changed `log_flags` and `sweep_interval` (light sweeps, logged at debug, appear and
//! come every second where the file first said every 100 s) and `sm_priority` (what
//! `sminfo` reads from another node), and reopens its log file
//! on SIGUSR1 after a rename. And without a fabric: a bad value is refused with file,
//! line and token.

use std::process::Command;
use std::time::Duration;

use ibsm_tests::peer::{Daemon, PeerFabric, after, client, needed, run_bounded, wait_within};
use ibsm_tests::{peers_present, wait_for, wait_until};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");
const PATIENCE: Duration = Duration::from_secs(60);

const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n";

fn signal(d: &Daemon, sig: &str) {
    let pid = d.0.as_ref().expect("running").id().to_string();
    assert!(
        Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success()
    );
}

fn conf(log: &str, flags: &str, sweep: u32, priority: u8) -> String {
    format!(
        "# from opensm -c, edited\nsm_priority {priority}\nsweep_interval {sweep}\n\
         log_flags {flags}\nreassign_lids TRUE\nno_such_option 3\nqos FALSE\n\
         log_file {log}\nsminfo_polling_timeout 500\n"
    )
}

#[test]
fn ibsmd_runs_from_opensm_conf_rereads_it_on_sighup_and_reopens_its_log() {
    if !peers_present("ibsmd_conf", &needed()) {
        return;
    }
    let f = PeerFabric::start("conf", NET);
    let log = f.path("ibsmd.log");
    let conf_path = f.path("opensm.conf");
    let log_s = log.display().to_string();
    std::fs::write(&conf_path, conf(&log_s, "0x03", 100, 1)).unwrap();
    let mut c = client(&f, IBSMD, Some("Hca1"), "sm");
    c.arg("-F")
        .arg(&conf_path)
        .args(["--time-limit", "120"])
        .stdout(std::fs::File::create(f.path("ibsmd.out")).unwrap())
        .stderr(std::fs::File::create(f.path("ibsmd.err")).unwrap());
    let mut d = Daemon(Some(c.spawn().expect("start ibsmd")));
    let text = wait_for(&log, "SUBNET UP", PATIENCE);
    let name = conf_path.display().to_string();
    assert!(
        text.contains(&format!(
            "{name}:5: reassign_lids TRUE: an OpenSM option ibsmd does not implement"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("{name}:6: no_such_option: unknown option")),
        "{text}"
    );
    // qos FALSE is OpenSM's default: nothing is lost, no warning.
    assert!(!text.contains("qos FALSE"), "{text}");
    assert!(text.contains("priority 1"), "{text}");
    assert!(
        !text.contains("light sweep:"),
        "info level logs no light sweep:\n{text}"
    );

    // More log and a sweep every second from now on.
    std::fs::write(&conf_path, conf(&log_s, "0x07", 1, 5)).unwrap();
    signal(&d, "-HUP");
    wait_until("three light sweeps after SIGHUP", PATIENCE, || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let since = after(&text, "SIGHUP: log_flags 0x03 -> 0x07");
        if since.matches("light sweep:").count() >= 3 {
            Ok(())
        } else {
            Err(text)
        }
    });
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("SIGHUP: sweep_interval 100 -> 1"), "{text}");
    assert!(text.contains("SIGHUP: sm_priority 1 -> 5"), "{text}");
    // The new priority is what the SM answers: sminfo from the other CA reads it.
    let (ok, out, err) = run_bounded(client(&f, "sminfo", Some("Hca2"), "sminfo"), PATIENCE);
    assert!(ok, "sminfo failed: {out}\n{err}");
    assert!(out.contains("priority 5 "), "sminfo after SIGHUP: {out}");

    // logrotate: rename, then SIGUSR1; new lines go to a new file of the old name.
    let rotated = f.path("ibsmd.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    signal(&d, "-USR1");
    wait_until("light sweeps in the reopened log", PATIENCE, || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("SIGUSR1: log file") && text.matches("light sweep:").count() >= 2 {
            Ok(())
        } else {
            Err(text)
        }
    });
    assert!(
        !std::fs::read_to_string(&rotated)
            .unwrap()
            .contains("SIGUSR1")
    );

    signal(&d, "-TERM");
    let mut child = d.0.take().unwrap();
    let st = wait_within(&mut child, Duration::from_secs(10)).expect("ibsmd ignored SIGTERM");
    assert!(st.success(), "exit {st}:\n{}", f.read("ibsmd.err"));
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("SIGTERM: stopping")
    );
}

#[test]
fn a_bad_value_in_the_file_stops_ibsmd_with_file_line_and_token() {
    let dir = std::env::temp_dir().join(format!("ibsmd_conf_bad_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.conf");
    for (text, want) in [
        (
            "lmc 1\nsweep_interval 1O\n",
            "bad.conf:2: sweep_interval 1O: ",
        ),
        (
            "# x\n\nsm_priority 16\n",
            "bad.conf:3: sm_priority 16: priority 16 is outside 0..=15",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        for extra in [&["--validate"][..], &[]] {
            let out = Command::new(IBSMD)
                .arg("-F")
                .arg(&path)
                .args(extra)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains(want), "{want:?} in {err}");
        }
    }
    std::fs::write(&path, "lmc 1\nreassign_lids TRUE\n").unwrap();
    let out = Command::new(IBSMD)
        .arg("-F")
        .arg(&path)
        .arg("--validate")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.conf:2: reassign_lids TRUE"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `key value` lines of an opensm.conf, in order.
fn keys_and_values(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            (k.to_owned(), v.trim().to_owned())
        })
        .collect()
}

/// `ibsmd -c` diffs cleanly against `opensm -c`: ibsmd reads OpenSM's default file
/// without a warning (every key is one it implements or one it knows to ignore) and
/// writes each key they share back with OpenSM's value as OpenSM spells it; its own
/// keys come in its own section, after OpenSM's.
#[test]
fn ibsmd_c_diffs_cleanly_against_opensm_c() {
    use ibsm_tests::peer::OPENSM;
    if !peers_present("ibsmd_c_vs_opensm_c", &[OPENSM]) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ibsmd_c_vs_opensm_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (osm, ours) = (dir.join("opensm.conf"), dir.join("ibsmd.conf"));
    let st = Command::new(OPENSM)
        .arg("-c")
        .arg(&osm)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success() || osm.exists(), "opensm -c: {st}");
    let out = Command::new(IBSMD)
        .arg("-F")
        .arg(&osm)
        .arg("-c")
        .arg(&ours)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The one warning: OpenSM's default names a partitions file this host may not have.
    for line in err.lines() {
        assert!(line.contains("partition_config_file"), "{err}");
    }
    let theirs = keys_and_values(&std::fs::read_to_string(&osm).unwrap());
    let written = std::fs::read_to_string(&ours).unwrap();
    let mine = keys_and_values(&written);
    assert!(mine.len() > 40, "{written}");
    for (k, v) in &mine {
        let Some((_, osm_v)) = theirs.iter().find(|(tk, _)| tk == k) else {
            continue;
        };
        if k == "partition_config_file" && !std::path::Path::new(osm_v).exists() {
            assert_eq!(v, "(null)");
            continue;
        }
        assert_eq!(v, osm_v, "{k}: ibsmd writes {v}, OpenSM {osm_v}");
    }
    let own = written
        .find("# IBSMD OPTIONS")
        .expect("ibsmd's own section");
    for (k, _) in mine
        .iter()
        .filter(|(k, _)| !theirs.iter().any(|(t, _)| t == k))
    {
        let at = written.find(&format!("\n{k} ")).unwrap();
        assert!(at > own, "{k} is not OpenSM's yet before ibsmd's section");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
