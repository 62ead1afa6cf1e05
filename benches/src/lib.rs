//! Fixtures shared by the criterion benches in `benches/benches/`.
//!
//! Run them with `cargo bench -p ibsm-benches`; each bench file covers one crate.

/// Returns `n` pseudo-random bytes from a fixed seed (xorshift), so every bench run sees
/// the same inputs.
#[must_use]
pub fn seeded_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// This process's resident set size in KiB (`VmRSS` of `/proc/self/status`; 0 where
/// that cannot be read), for the benches that report what a model costs in memory.
#[must_use]
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
