//! The selectors of PathRecord and MCMemberRecord components (MTU, rate,
//! PacketLifeTime): what a value asked for with a selector gives against what the
//! fabric has.

use ibsm_wire::sa::{Rate, Selector};

use crate::db::rate_code;

/// An MTU (or any "larger is better" code) under a selector.
pub(crate) fn select_up(avail: u8, sel: Option<Selector>, want: Option<u8>) -> Option<u8> {
    let Some(w) = want else {
        return Some(avail);
    };
    match sel.unwrap_or(Selector::Exactly) {
        Selector::GreaterThan => (avail > w).then_some(avail),
        Selector::LessThan => {
            if avail < w {
                Some(avail)
            } else {
                w.checked_sub(1).filter(|&v| v >= 1)
            }
        }
        Selector::Exactly => (avail >= w).then_some(w),
        _ => Some(avail),
    }
}

pub(crate) fn select_rate(
    avail_mbps: u32,
    sel: Option<Selector>,
    want: Option<Rate>,
) -> Option<Rate> {
    let have = rate_code(avail_mbps);
    let Some(w) = want else {
        return Some(have);
    };
    let wm = w.mbps()?;
    // The rate answered, not the path's capacity, must satisfy the selector: below
    // the lowest rate (a loopback port whose speed is not known) the answer is 2.5
    // Gb/s, which is not "less than 2.5".
    let answered = have.mbps()?;
    match sel.unwrap_or(Selector::Exactly) {
        Selector::GreaterThan => (answered > wm).then_some(have),
        Selector::LessThan => {
            if answered < wm {
                Some(have)
            } else {
                let r = rate_code(wm - 1);
                (r.mbps()? < wm).then_some(r)
            }
        }
        Selector::Exactly => (avail_mbps >= wm).then_some(w),
        _ => Some(have),
    }
}

/// PacketLifeTime: the SM's value is a floor; longer is always acceptable.
pub(crate) fn select_life(plt: u8, sel: Option<Selector>, want: Option<u8>) -> Option<u8> {
    let Some(w) = want else {
        return Some(plt);
    };
    match sel.unwrap_or(Selector::Exactly) {
        Selector::GreaterThan => Some(plt.max(w.saturating_add(1))).filter(|&v| v < 64),
        Selector::LessThan => (plt < w).then_some(plt),
        Selector::Exactly => (w >= plt).then_some(w),
        _ => Some(plt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever rate is answered satisfies the selector, also where the path's rate is
    /// below every defined rate (a loopback port whose speed is not known: 0).
    #[test]
    fn the_rate_answered_honours_the_selector() {
        use Selector::{Exactly, GreaterThan, LessThan};
        let g2_5 = Some(Rate::G2_5);
        assert_eq!(select_rate(0, Some(LessThan), g2_5), None);
        assert_eq!(select_rate(0, Some(GreaterThan), g2_5), None);
        assert_eq!(select_rate(0, Some(Exactly), g2_5), None);
        // Between two rates: 3,000 Mb/s answers 2.5 Gb/s, which is not above 2.5.
        assert_eq!(select_rate(3_000, Some(GreaterThan), g2_5), None);
        assert_eq!(
            select_rate(10_000, Some(GreaterThan), g2_5),
            Some(Rate::G10)
        );
        assert_eq!(
            select_rate(10_000, Some(LessThan), Some(Rate::G10)),
            Some(Rate::G5)
        );
        for avail in [0, 2_500, 3_000, 10_000, 56_000, 200_000] {
            for c in 2u8..=24 {
                let want = Rate::from(c);
                let Some(wm) = want.mbps() else { continue };
                if let Some(r) = select_rate(avail, Some(LessThan), Some(want)) {
                    assert!(r.mbps().unwrap() < wm, "{avail} < {wm}: {r:?}");
                }
                if let Some(r) = select_rate(avail, Some(GreaterThan), Some(want)) {
                    assert!(r.mbps().unwrap() > wm, "{avail} > {wm}: {r:?}");
                }
            }
        }
    }
}
