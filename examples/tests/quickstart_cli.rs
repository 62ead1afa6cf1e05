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
