//! The `quickstart` example as a user runs it: configurations that fall back or cannot
//! work at all (issue 16, section 4).
//!
//! `cargo test` builds the examples before running tests; the binary sits in
//! `target/<profile>/examples/` next to this test's `deps/` directory.

use std::path::PathBuf;
use std::process::{Command, Output};

fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let bin = profile_dir
        .join("examples")
        .join(format!("quickstart{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} not built (cargo test builds examples first)",
        bin.display()
    );
    bin
}

fn run(args: &[&str]) -> (Output, String) {
    let out = Command::new(example())
        .args(args)
        .output()
        .expect("run quickstart");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, err)
}

/// `--routing ftree` on a torus comes up with minhop and says why ftree was not used.
#[test]
fn ftree_on_a_torus_comes_up_with_the_fallback() {
    let (out, err) = run(&["--torus", "4,4,2,1", "--routing", "ftree"]);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("routing minhop of ftree"), "{err}");
    assert!(
        err.contains("routing fell back: ftree failed: not a fat tree"),
        "{err}"
    );
}

/// LMC 7 on the 702-port quickstart tree needs 82,998 LIDs: the run stops at the first
/// sweep with that figure and the limit, and exits non-zero.
#[test]
fn lmc_7_on_702_ports_fails_at_once_with_the_need_and_the_limit() {
    let (out, err) = run(&["--lmc", "7"]);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("82998 LIDs needed"), "{err}");
    assert!(err.contains("unicast LID space"), "{err}");
    assert!(err.contains("49151"), "{err}");
    assert!(!err.contains("did not come up"), "{err}");
}

/// A misspelt engine is refused before anything runs, naming it.
#[test]
fn an_unknown_engine_in_the_list_is_a_usage_error() {
    let (out, err) = run(&["--routing", "ftree,fattree"]);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("\"fattree\" (item 2)"), "{err}");
}

/// The `--json` line of a run, parsed.
fn summary(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().expect("a JSON line on stdout");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}"))
}

/// A file under the temp dir holding `text`.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("quickstart_{name}_{}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn the_json_summary_is_one_object_with_the_run() {
    let (out, err) = run(&["--fat-tree", "2,8", "--json"]);
    assert!(out.status.success(), "{err}");
    let j = summary(&out);
    assert_eq!(j["topology"], "2-level radix-8 fat tree");
    assert_eq!(
        (j["switches"].as_u64(), j["cas"].as_u64()),
        (Some(12), Some(32))
    );
    assert_eq!(j["lids"], 44);
    assert_eq!(j["routing"], "minhop");
    assert_eq!(j["verified"], true);
    assert_eq!(j["sweeps"], 1);
    let by_attr = j["smps_by_attribute"].as_object().unwrap();
    let sum: u64 = by_attr.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(Some(sum), j["smps"].as_u64(), "{by_attr:?}");
    assert!(j["max_link_load"].as_u64().unwrap() > 0);
}

#[test]
fn routing_files_reach_the_engines_and_bad_lines_are_named() {
    // The spines of the radix-8 tree: the switches without CAs.
    let f = ibsm_topology::generate::fat_tree(8, 2).unwrap();
    let spine = f
        .switches()
        .find(|(id, n)| {
            n.ports()
                .filter_map(|(p, _)| f.neighbour(*id, p))
                .all(|x| f.node(x).is_some_and(ibsm_topology::Node::is_switch))
        })
        .map(|(_, n)| n.guid())
        .unwrap();
    let roots = temp_file("roots", &format!("# a spine\n{:#x}\n", spine.0));
    let path = roots.to_str().unwrap();
    let (out, err) = run(&[
        "--fat-tree",
        "2,8",
        "--routing",
        "updn,no_fallback",
        "--root-guid-file",
        path,
        "--json",
    ]);
    assert!(out.status.success(), "{err}");
    assert_eq!(summary(&out)["routing"], "updn");
    // A root file naming nothing in the fabric: updn refuses it, and without a fallback
    // the subnet cannot come up.
    std::fs::write(&roots, "0xdead\n").unwrap();
    let (out, err) = run(&[
        "--fat-tree",
        "2,8",
        "--routing",
        "updn,no_fallback",
        "--root-guid-file",
        path,
    ]);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("root GUIDs"), "{err}");
    // A line that is not a GUID: file, line and token, before anything runs.
    std::fs::write(&roots, "0x1\n\nspine-1\n").unwrap();
    let (out, err) = run(&["--cn-guid-file", path]);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{path}:3: \"spine-1\" is not a GUID")),
        "{err}"
    );
    let _ = std::fs::remove_file(&roots);
}

#[test]
fn forced_link_options_are_used_and_checked() {
    let (out, err) = run(&[
        "--fat-tree",
        "2,8",
        "--force-link-speed",
        "1",
        "--force-link-width",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{err}");
    assert_eq!(summary(&out)["verified"], true);
    // The links retrained to what both ends enable, and the SM's model says so.
    assert!(err.contains("link speeds (ports): 1x SDR 128"), "{err}");
    let (out, err) = run(&["--fat-tree", "2,8", "--force-link-width", "100"]);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("force_link_width 100 is outside 0..=31"),
        "{err}"
    );
}
