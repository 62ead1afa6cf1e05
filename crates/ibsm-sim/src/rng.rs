//! The simulator's seeded PRNG: ibsm-topology's splitmix64 (small, fast and identical on
//! every platform, so one seed always gives one run), and fault rates in parts per
//! million.

pub use ibsm_topology::generate::SplitMix64;

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
