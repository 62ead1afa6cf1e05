//! The simulator's seeded PRNG: splitmix64, small, fast and identical on every platform,
//! so one seed always gives one run.

/// A splitmix64 generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator from `seed` (any value, 0 included).
    #[must_use]
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True with probability `ppm` parts per million (0 never draws, so a fault-free run
    /// consumes no randomness and adding a drop rate elsewhere does not shift it).
    pub fn chance_ppm(&mut self, ppm: u32) -> bool {
        if ppm == 0 {
            return false;
        }
        if ppm >= 1_000_000 {
            return true;
        }
        self.next_u64() % 1_000_000 < u64::from(ppm)
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
}

/// A probability in parts per million, from a fraction (clamped to 0..=1).
#[must_use]
pub fn ppm(fraction: f64) -> u32 {
    if fraction.is_nan() || fraction <= 0.0 {
        0
    } else if fraction >= 1.0 {
        1_000_000
    } else {
        (fraction * 1e6).round() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequence_and_rates() {
        // Reference values of splitmix64 seeded with 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut r = SplitMix64::new(42);
        let hits = (0..100_000).filter(|_| r.chance_ppm(250_000)).count();
        assert!((23_000..27_000).contains(&hits), "{hits}");
        assert!(!r.chance_ppm(0));
        assert!(r.chance_ppm(1_000_000));
        assert_eq!(ppm(0.5), 500_000);
        assert_eq!(ppm(2.0), 1_000_000);
        assert_eq!(ppm(f64::NAN), 0);
    }
}
