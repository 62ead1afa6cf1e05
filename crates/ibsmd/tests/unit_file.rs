//! The systemd unit in `contrib/` keeps its sandboxing: `systemd-analyze security`
//! rates its exposure at most 2.0 (the unit before the sandboxing: 9.6, UNSAFE). The
//! unit is analysed offline, so no systemd needs to run. (Planted: the unit without its
//! sandboxing block -> exposure 9.6, this fails.)

use std::path::Path;
use std::process::Command;

const ANALYZE: &str = "/usr/bin/systemd-analyze";

#[test]
fn the_unit_is_sandboxed() {
    if !ibsm_tests::peers_present("unit_file", &[ANALYZE]) {
        return;
    }
    let unit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/ibsmd.service");
    let out = Command::new(ANALYZE)
        .args(["security", "--offline=true", "--threshold=20", "--no-pager"])
        .arg(&unit)
        .output()
        .expect("systemd-analyze runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let overall = text
        .lines()
        .find(|l| l.contains("Overall exposure"))
        .unwrap_or("no overall line");
    eprintln!("{overall}");
    assert!(
        out.status.success(),
        "exposure above 2.0: {overall}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
