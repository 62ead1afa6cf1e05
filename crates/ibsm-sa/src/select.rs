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
    match sel.unwrap_or(Selector::Exactly) {
        Selector::GreaterThan => (avail_mbps > wm).then_some(have),
        Selector::LessThan => {
            if avail_mbps < wm {
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
