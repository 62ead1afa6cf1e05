//! Helpers for the cross-crate and peer tests in `tests/tests/`.
//!
//! Peer tests need programs and libraries from Debian packages (libibmad, ibsim,
//! OpenSM, infiniband-diags). Without them a test prints a loud `SKIP` line and passes,
//! unless `IBSM_REQUIRE_PEERS=1` is set (as `.ci/run` does), in which case it fails.

use std::path::Path;
use std::time::{Duration, Instant};

/// Whether `IBSM_REQUIRE_PEERS=1` is set.
#[must_use]
pub fn peers_required() -> bool {
    std::env::var("IBSM_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Checks that every path in `needed` exists. Returns `true` when the test may run; when
/// something is missing it prints a loud SKIP and returns `false`, or panics when peers
/// are required.
///
/// # Panics
/// When a peer is missing and `IBSM_REQUIRE_PEERS=1`.
#[must_use]
pub fn peers_present(test: &str, needed: &[&str]) -> bool {
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|p| !Path::new(p).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!(
        "SKIP {test}: peer missing: {} (install: apt-get install ibsim-utils opensm infiniband-diags libibmad-dev libibumad-dev)",
        missing.join(", ")
    );
    assert!(
        !peers_required(),
        "{msg} -- and IBSM_REQUIRE_PEERS=1 forbids skipping"
    );
    eprintln!("\n!!!!!!!! {msg}\n");
    false
}

/// Waits until the file at `path` (a peer's log) contains `needle`, polling every 50 ms,
/// and returns its text.
///
/// # Panics
/// When `limit` passes first; the message shows the log's last 30 lines.
pub fn wait_for(path: &Path, needle: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{needle:?} not seen in {} within {limit:?}:\n{}",
            path.display(),
            text.lines().rev().take(30).collect::<Vec<_>>().join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
