//! [`IntHasher`]: a multiply-rotate hasher for maps keyed by integers, and the map and
//! set types that use it.
//!
//! The transaction maps are keyed by small integers the instance hands out itself
//! (request ids, TIDs), and the SM's mirror of the switches by GUIDs; both sit on the
//! per-MAD path of a sweep, where the default SipHash costs more than the lookup. A
//! multiply-rotate hash spreads sequential ids and GUIDs (which differ in their low bits)
//! well. It is not built to resist chosen keys: use it where the keys are the SM's own
//! (allocated in sequence, or discovered GUIDs), not for keys a peer picks freely.
//!
//! ```
//! use ibsm_transport::IntMap;
//!
//! let mut m: IntMap<u64, &str> = IntMap::default();
//! m.insert(0x0002_c903_0000_1234, "switch");
//! assert_eq!(m.get(&0x0002_c903_0000_1234), Some(&"switch"));
//! ```

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher for integer keys that are the program's own (ids it
/// allocates, GUIDs it discovered): fast, but not built to resist keys a peer picks
/// to make the buckets collide.
#[derive(Debug, Default, Clone, Copy)]
pub struct IntHasher(u64);

impl IntHasher {
    /// An odd constant with well mixed bits (2^64 / the golden ratio, rounded to odd).
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        // A product's low bits depend on the key's low bits alone, and the table picks
        // buckets by the low bits: fold in high ones, which depend on all below them
        // (GUIDs of one vendor may differ only above their low byte).
        self.0 ^ (self.0 >> 32)
    }
}

/// A `HashMap` with [`IntHasher`].
pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// A `HashSet` with [`IntHasher`].
pub type IntSet<K> = HashSet<K, BuildHasherDefault<IntHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn low_bytes(keys: impl Iterator<Item = u64>) -> usize {
        keys.map(|k| {
            let mut h = IntHasher::default();
            h.write_u64(k);
            h.finish() & 0xFF
        })
        .collect::<HashSet<_>>()
        .len()
    }

    #[test]
    fn sequential_ids_and_guids_spread() {
        // The low 8 bits pick a bucket in a small table: sequential ids, and GUIDs that
        // share their vendor bits, must not pile into few of them.
        assert!(low_bytes(0..256) > 150);
        for shift in [8, 16, 24] {
            let guids = (0..256).map(|i| 0x0002_c903_0000_0000 | (i << shift));
            assert!(
                low_bytes(guids) > 150,
                "GUIDs differing from bit {shift} on"
            );
        }
    }
}
