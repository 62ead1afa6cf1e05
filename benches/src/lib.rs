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
