//! Unit tests: one or more per transition and per SM_Key rule.

use core::time::Duration;

use ibsm_wire::{
    DrPath, DrSmpView, Instant, LidSmpView, MAD_SIZE, Method, SmInfo, SmInfoControl, SmState,
    Status,
};
use proptest::prelude::*;

use crate::mad::{build_request, build_response};
use crate::{
    Config, Election, ElectionEvent, Error, KnownSm, RejectReason, Requester, SmAddr, Transmit,
};

const KEY: u64 = 0xABCD;
const ME: u64 = 0x100;

/// The instant `v` ms after the origin.
fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

const T0: Instant = Instant::ZERO;

fn cfg(guid: u64, priority: u8, key: u64) -> Config {
    let mut c = Config::fast(guid);
    c.priority = priority;
    c.sm_key = key;
    c
}

fn sm(priority: u8) -> Election {
    Election::new(cfg(ME, priority, KEY), T0).unwrap()
}

fn info(guid: u64, priority: u8, key: u64, state: SmState, act: u32) -> SmInfo {
    SmInfo {
        guid,
        sm_key: key,
        act_count: act,
        priority,
        sm_state: state,
    }
}

fn events(e: &mut Election) -> Vec<ElectionEvent> {
    core::iter::from_fn(|| e.poll_event()).collect()
}

fn txs(e: &mut Election) -> Vec<Transmit> {
    core::iter::from_fn(|| e.poll_transmit()).collect()
}

/// The GetResp a peer would send to `tx`.
fn reply(tx: &Transmit, status: u16, peer: &SmInfo) -> [u8; MAD_SIZE] {
    build_response(&tx.mad, Status(status), peer).unwrap()
}

/// A SubnSet(SMInfo) from `sender` with `code`, LID-routed.
fn set_from(sender: &SmInfo, code: u32) -> [u8; MAD_SIZE] {
    build_request(SmAddr::Lid(1), Method::Set, code, 0x77, 0, sender).mad
}

fn get_req() -> [u8; MAD_SIZE] {
    build_request(SmAddr::Lid(1), Method::Get, 0, 0x55, 0, &SmInfo::default()).mad
}

fn resp_status(r: &[u8]) -> u16 {
    LidSmpView::new_checked(r).unwrap().status().0
}

fn resp_info(r: &[u8]) -> SmInfo {
    SmInfo::parse(&r[64..128]).unwrap()
}

fn from_lid(lid: u16) -> Requester {
    Requester {
        m_key_authenticated: false,
        guid: None,
        addr: Some(SmAddr::Lid(lid)),
    }
}

/// Runs one sweep in which the SMs `peers` (LID i+10) answer the probes.
fn sweep_with(e: &mut Election, now: Instant, peers: &[SmInfo]) {
    e.begin_sweep(now);
    for i in 0..peers.len() {
        e.probe(now, SmAddr::Lid(10 + i as u16));
    }
    e.sweep_complete(now);
    for tx in txs(e) {
        let SmAddr::Lid(l) = tx.to else { panic!() };
        let peer = peers[usize::from(l - 10)];
        assert!(e.handle_response(now, &reply(&tx, 0, &peer)).unwrap());
    }
}

/// Drives `e` to Master by a sweep that finds nobody.
fn master(priority: u8) -> Election {
    let mut e = sm(priority);
    sweep_with(&mut e, T0, &[]);
    assert_eq!(e.state(), SmState::Master);
    events(&mut e);
    e
}

/// Drives `e` to Standby following the Master `m` at LID 10.
fn standby_under(priority: u8, m: &SmInfo) -> Election {
    let mut e = sm(priority);
    sweep_with(&mut e, T0, &[*m]);
    assert_eq!(e.state(), SmState::Standby);
    assert_eq!(e.following(), Some(m.guid));
    events(&mut e);
    e
}

#[test]
fn starts_discovering_and_asks_for_a_sweep() {
    let mut e = sm(3);
    assert_eq!(e.state(), SmState::Discovering);
    assert_eq!(events(&mut e), vec![ElectionEvent::SweepNeeded]);
    assert_eq!(e.sm_info().sm_state, SmState::Discovering);
    assert_eq!(e.sm_info().priority, 3);
    assert!(e.poll_timeout().is_none());
}

#[test]
fn config_is_validated() {
    assert!(Election::new(cfg(ME, 16, 0), T0).is_err());
    assert!(Election::new(cfg(0, 1, 0), T0).is_err());
    let mut c = cfg(ME, 1, 0);
    c.polling_timeout = Duration::ZERO;
    assert!(Election::new(c, T0).is_err());
}

#[test]
fn alone_becomes_master_and_heartbeats() {
    let mut e = sm(1);
    events(&mut e);
    sweep_with(&mut e, T0, &[]);
    assert_eq!(e.state(), SmState::Master);
    assert_eq!(
        events(&mut e),
        vec![ElectionEvent::StateChanged {
            from: SmState::Discovering,
            to: SmState::Master
        }]
    );
    let a0 = e.sm_info().act_count;
    let t = e.poll_timeout().unwrap();
    assert_eq!(t, T0 + Config::fast(ME).heartbeat_interval);
    e.handle_timeout(T0 + (t - T0) * 3);
    assert!(
        e.sm_info().act_count >= a0 + 3,
        "missed heartbeats are all counted"
    );
}

#[test]
fn discovering_follows_any_authenticated_master_even_a_lower_one() {
    let m = info(0x200, 0, KEY, SmState::Master, 5);
    let mut e = sm(9);
    events(&mut e);
    sweep_with(&mut e, T0, &[m]);
    assert_eq!(e.state(), SmState::Standby);
    let ev = events(&mut e);
    assert!(ev.contains(&ElectionEvent::Following { guid: 0x200 }));
    // The first poll goes out at once, to the Master's address.
    let polls = txs(&mut e);
    assert_eq!(polls.len(), 1);
    assert_eq!(polls[0].to, SmAddr::Lid(10));
    assert!(!polls[0].is_set());
}

#[test]
fn discovering_follows_a_higher_standby_but_not_a_lower_one() {
    let hi = info(0x200, 5, KEY, SmState::Standby, 1);
    let mut e = sm(4);
    sweep_with(&mut e, T0, &[hi]);
    assert_eq!(e.following(), Some(0x200));

    let lo = info(0x200, 3, KEY, SmState::Discovering, 1);
    let mut e = sm(4);
    sweep_with(&mut e, T0, &[lo]);
    assert_eq!(e.state(), SmState::Master);
}

#[test]
fn equal_priority_goes_to_the_lower_guid() {
    let lower_guid = info(ME - 1, 4, KEY, SmState::Standby, 1);
    let mut e = sm(4);
    sweep_with(&mut e, T0, &[lower_guid]);
    assert_eq!(e.state(), SmState::Standby);

    let higher_guid = info(ME + 1, 4, KEY, SmState::Standby, 1);
    let mut e = sm(4);
    sweep_with(&mut e, T0, &[higher_guid]);
    assert_eq!(e.state(), SmState::Master);
    assert!(crate::outranks(4, 1, 4, 2) && !crate::outranks(4, 2, 4, 1));
    assert!(crate::outranks(5, 9, 4, 1));
}

#[test]
fn wrong_key_master_is_reported_and_ignored() {
    let other = info(0x200, 15, 0x9999, SmState::Master, 1);
    let mut e = sm(1);
    events(&mut e);
    sweep_with(&mut e, T0, &[other]);
    assert_eq!(
        e.state(),
        SmState::Master,
        "a foreign-key Master is not followed"
    );
    let ev = events(&mut e);
    assert!(
        ev.contains(&ElectionEvent::UnauthenticatedHigherPrioritySm {
            guid: 0x200,
            priority: 15,
            sm_key: 0x9999
        })
    );
    // Reported once, not on every sweep.
    sweep_with(&mut e, ms(300), &[other]);
    assert!(
        !events(&mut e)
            .iter()
            .any(|x| matches!(x, ElectionEvent::UnauthenticatedHigherPrioritySm { .. }))
    );
}

#[test]
fn hidden_key_counts_only_once_verified() {
    // Key hidden (0) and never seen: not trusted.
    let hidden = info(0x200, 9, 0, SmState::Master, 1);
    let mut e = sm(1);
    events(&mut e);
    sweep_with(&mut e, T0, &[hidden]);
    assert_eq!(e.state(), SmState::Master);
    assert!(
        events(&mut e).contains(&ElectionEvent::UnauthenticatedHigherPrioritySm {
            guid: 0x200,
            priority: 9,
            sm_key: 0
        })
    );

    // Seen once with our key, later hiding it: still trusted.
    let mut e = sm(1);
    let shown = info(0x200, 0, KEY, SmState::Standby, 1);
    sweep_with(&mut e, T0, &[shown]);
    assert_eq!(e.state(), SmState::Master);
    e.disable(ms(1));
    e.enable(ms(2));
    sweep_with(&mut e, ms(3), &[hidden]);
    assert_eq!(e.following(), Some(0x200));
}

#[test]
fn no_key_configured_accepts_everyone() {
    let mut e = Election::new(cfg(ME, 1, 0), T0).unwrap();
    sweep_with(&mut e, T0, &[info(0x200, 0, 0x9999, SmState::Master, 1)]);
    assert_eq!(e.following(), Some(0x200));
}

#[test]
fn probes_are_resent_and_the_decision_waits_for_them() {
    let mut e = sm(1);
    e.begin_sweep(T0);
    e.probe(T0, SmAddr::Lid(7));
    e.sweep_complete(T0);
    let first = txs(&mut e);
    assert_eq!(first.len(), 1);
    let tt = e.config().transaction_timeout;
    let mut now = T0;
    for _ in 0..e.config().transaction_retries {
        now = e.poll_timeout().unwrap();
        assert_eq!(now, now.max(T0 + tt));
        e.handle_timeout(now);
        let again = txs(&mut e);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].tid(), first[0].tid(), "a resend keeps its TID");
        assert_eq!(e.state(), SmState::Discovering);
    }
    // The late answer to the first send still counts.
    let m = info(0x200, 0, KEY, SmState::Master, 1);
    assert!(e.handle_response(now, &reply(&first[0], 0, &m)).unwrap());
    assert_eq!(e.following(), Some(0x200));
}

#[test]
fn unanswered_probes_give_up_then_decide() {
    let mut e = sm(1);
    e.begin_sweep(T0);
    e.probe(T0, SmAddr::Lid(7));
    e.sweep_complete(T0);
    while e.state() == SmState::Discovering {
        let t = e.poll_timeout().expect("probe pending");
        e.handle_timeout(t);
    }
    assert_eq!(e.state(), SmState::Master);
    let retries = e.config().transaction_retries;
    assert_eq!(txs(&mut e).len() as u32, retries + 1);
}

#[test]
fn a_new_sweep_does_not_cancel_the_previous_decision() {
    let mut e = sm(1);
    e.begin_sweep(T0);
    e.probe(T0, SmAddr::Lid(7));
    e.sweep_complete(T0);
    let p1 = txs(&mut e);
    e.begin_sweep(ms(1));
    e.probe(ms(1), SmAddr::Lid(8));
    e.sweep_complete(ms(1));
    let p2 = txs(&mut e);
    let m = info(0x200, 0, KEY, SmState::Master, 1);
    e.handle_response(ms(2), &reply(&p1[0], 0, &m)).unwrap();
    assert_eq!(
        e.following(),
        Some(0x200),
        "first sweep decided on its own probe"
    );
    assert!(e.handle_response(ms(2), &reply(&p2[0], 0, &m)).unwrap());
}

fn answer_polls(e: &mut Election, now: Instant, m: &mut SmInfo, advance: bool) -> usize {
    let mut n = 0;
    for tx in txs(e) {
        if advance {
            m.act_count += 1;
        }
        e.handle_response(now, &reply(&tx, 0, m)).unwrap();
        n += 1;
    }
    n
}

fn run_polls(e: &mut Election, until: Instant, m: &mut SmInfo, answer: bool, advance: bool) {
    while let Some(t) = e.poll_timeout() {
        if t > until || e.state() != SmState::Standby {
            break;
        }
        e.handle_timeout(t);
        if answer {
            answer_polls(e, t, m, advance);
        } else {
            txs(e);
        }
    }
}

#[test]
fn answered_polls_keep_the_standby() {
    let mut m = info(0x200, 9, KEY, SmState::Master, 1);
    let mut e = standby_under(1, &m);
    answer_polls(&mut e, T0, &mut m, true);
    run_polls(&mut e, ms(10_000), &mut m, true, true);
    assert_eq!(e.state(), SmState::Standby);
    assert!(events(&mut e).is_empty());
}

/// How long after the origin, when the Master died, the Standby declared it lost, and
/// the Gets it sent after the origin: (when, how many at that instant).
fn detection(c: Config) -> (Duration, Vec<(Duration, usize)>) {
    let mut m = info(0x200, 9, c.sm_key, SmState::Master, 1);
    let mut e = Election::new(c, T0).unwrap();
    sweep_with(&mut e, T0, &[m]);
    answer_polls(&mut e, T0, &mut m, true);
    events(&mut e);
    // The Master dies right after answering the poll of t = 0.
    let mut now = T0;
    let mut sent = Vec::new();
    while e.state() == SmState::Standby {
        now = e.poll_timeout().unwrap();
        e.handle_timeout(now);
        let n = txs(&mut e).len();
        if n > 0 {
            sent.push((now - T0, n));
        }
    }
    let ev = events(&mut e);
    assert!(ev.contains(&ElectionEvent::MasterLost {
        guid: 0x200,
        stalled: false
    }));
    assert!(ev.contains(&ElectionEvent::SweepNeeded));
    assert_eq!(e.state(), SmState::Discovering);
    (now - T0, sent)
}

fn detection_time(c: Config) -> Duration {
    detection(c).0
}

fn d_ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn silent_master_is_lost_after_retries_plus_one_unanswered_rounds() {
    // OpenSM's defaults: polls every 10 s, 4 retries, 200 ms answers. The poll of 10 s
    // goes unanswered until 10.2 s, then four re-probes of three Gets each, 200 ms
    // apart: the fifth unanswered round ends at 11.0 s (OpenSM 3.3: the tick of 50 s).
    let c = Config::opensm_defaults(ME);
    let (t, sent) = detection(c.clone());
    assert_eq!(t, d_ms(11_000));
    assert_eq!(
        sent,
        vec![
            (d_ms(10_000), 1),
            (d_ms(10_200), 3),
            (d_ms(10_400), 3),
            (d_ms(10_600), 3),
            (d_ms(10_800), 3)
        ]
    );
    assert_eq!(c.worst_case_detection(), d_ms(11_000));
    // Fast profile: 200 ms, 2 retries, 50 ms answers -> 200 + 3 x 50 ms.
    let (t, sent) = detection(Config::fast(ME));
    assert_eq!(t, d_ms(350));
    assert_eq!(sent, vec![(d_ms(200), 1), (d_ms(250), 3), (d_ms(300), 3)]);
    // Sub-second and single-retry values work too; 0 retries is one unanswered poll;
    // the answer is never waited for longer than a period (200 ms transactions, 50 ms
    // polls).
    let c = Config::with_polling(ME, d_ms(50), 1);
    assert_eq!(detection_time(c.clone()), d_ms(150));
    assert_eq!(c.worst_case_detection(), d_ms(150));
    let c = Config::with_polling(ME, d_ms(50), 0);
    assert_eq!(detection(c.clone()), (d_ms(100), vec![(d_ms(50), 1)]));
    assert_eq!(c.worst_case_detection(), d_ms(100));
    // One Get a re-probe: the same instants, one Get each.
    let mut c = Config::fast(ME);
    c.reprobe_gets = 1;
    assert_eq!(
        detection(c),
        (
            d_ms(350),
            vec![(d_ms(200), 1), (d_ms(250), 1), (d_ms(300), 1)]
        )
    );
}

/// The Standby of `standby_under` with its first poll answered at `T0` (ActCount
/// moved), its events drained; `m` is the Master as it answered.
fn polling_standby() -> (Election, SmInfo) {
    let mut m = info(0x200, 9, KEY, SmState::Master, 1);
    let mut e = standby_under(1, &m);
    answer_polls(&mut e, T0, &mut m, true);
    events(&mut e);
    (e, m)
}

/// Runs the timer due at `t` (which must be the next one) and returns what it sent.
fn tick(e: &mut Election, t: Instant) -> Vec<Transmit> {
    assert_eq!(e.poll_timeout(), Some(t), "the next timer");
    e.handle_timeout(t);
    txs(e)
}

#[test]
fn one_lost_poll_or_re_probe_then_an_answer_is_no_takeover() {
    // Config::fast: polls every 200 ms, 50 ms answers, 2 retries (3 rounds), 3 Gets a
    // re-probe. Which round gets the answer: the 2nd (first re-probe) or the 3rd.
    for answered_round in [2, 3] {
        let (mut e, mut m) = polling_standby();
        let poll = tick(&mut e, ms(200));
        assert_eq!(poll.len(), 1, "a poll is one Get");
        let mut now = 250;
        let mut last = Vec::new();
        for round in 2..=answered_round {
            last = tick(&mut e, ms(now));
            assert_eq!(last.len(), 3, "round {round}: a re-probe is three Gets");
            assert_eq!(e.state(), SmState::Standby);
            now += 50;
        }
        // The second Get of the last re-probe is answered in time.
        m.act_count += 1;
        let at = ms(now - 10);
        assert!(e.handle_response(at, &reply(&last[1], 0, &m)).unwrap());
        // Its siblings answered too are no longer waited for; nothing was counted.
        for other in [&last[0], &last[2]] {
            assert!(!e.handle_response(at, &reply(other, 0, &m)).unwrap());
        }
        // The streak is over: the next poll comes a period after the last Get, and
        // the count starts again from zero (three more rounds to lose the Master).
        let resumed = now - 50 + 200;
        assert_eq!(tick(&mut e, ms(resumed)).len(), 1);
        assert_eq!(tick(&mut e, ms(resumed + 50)).len(), 3);
        assert_eq!(tick(&mut e, ms(resumed + 100)).len(), 3);
        assert_eq!(e.state(), SmState::Standby);
        assert!(
            events(&mut e).is_empty(),
            "round {answered_round}: no MasterLost"
        );
        tick(&mut e, ms(resumed + 150));
        assert_eq!(e.state(), SmState::Discovering);
    }
}

#[test]
fn re_probes_have_their_own_tids_and_any_outstanding_one_matches() {
    let (mut e, mut m) = polling_standby();
    let poll = tick(&mut e, ms(200));
    let re1 = tick(&mut e, ms(250));
    let mut tids: Vec<u64> = poll.iter().chain(&re1).map(Transmit::tid).collect();
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids.len(), 4, "one TID for each Get");
    // An answer to a TID the Standby never sent matches nothing and changes nothing.
    let mut stray = poll[0].clone();
    stray.mad[8..16].copy_from_slice(&0xDEAD_u64.to_be_bytes());
    m.act_count += 1;
    assert!(!e.handle_response(ms(260), &reply(&stray, 0, &m)).unwrap());
    // The poll's own answer, late (its round already failed, a re-probe out), is
    // matched and clears the count.
    assert!(e.handle_response(ms(270), &reply(&poll[0], 0, &m)).unwrap());
    assert!(
        !e.handle_response(ms(271), &reply(&poll[0], 0, &m)).unwrap(),
        "a TID is taken once"
    );
    // The re-probe's round is no longer open: the next timer is the regular poll.
    assert_eq!(e.poll_timeout(), Some(ms(450)));
    // Cleared, not merely paused: three more failed rounds (the poll of 450 ms and
    // two re-probes) lose the Master, two do not.
    tick(&mut e, ms(450));
    tick(&mut e, ms(500));
    tick(&mut e, ms(550));
    assert_eq!(e.state(), SmState::Standby);
    assert!(tick(&mut e, ms(600)).is_empty());
    assert_eq!(e.state(), SmState::Discovering, "three rounds failed");
}

#[test]
fn re_probe_answers_match_on_the_low_tid_half() {
    let (mut e, mut m) = polling_standby();
    tick(&mut e, ms(200));
    let re1 = tick(&mut e, ms(250));
    let mut r = reply(&re1[2], 0, &{
        m.act_count += 1;
        m
    });
    r[8..12].copy_from_slice(&[0xFF; 4]);
    assert!(e.handle_response(ms(260), &r).unwrap());
    assert_eq!(e.poll_timeout(), Some(ms(450)), "the streak is over");
}

#[test]
fn a_late_live_answer_clears_the_count_and_a_late_bad_one_is_not_counted_twice() {
    for late_answer_is_live in [true, false] {
        let (mut e, mut m) = polling_standby();
        let poll = tick(&mut e, ms(200));
        // Its answer time, not the next tick, ends the round: a re-probe goes out.
        assert_eq!(tick(&mut e, ms(250)).len(), 3);
        assert_eq!(e.state(), SmState::Standby, "one failed round of three");
        // The poll's answer comes late, while the re-probe's round is open.
        let who = if late_answer_is_live {
            m.act_count += 1;
            m
        } else {
            info(0x300, 9, KEY, SmState::Master, 1)
        };
        assert!(
            e.handle_response(ms(280), &reply(&poll[0], 0, &who))
                .unwrap()
        );
        assert_eq!(e.state(), SmState::Standby);
        if late_answer_is_live {
            // Cleared: the regular poll, a period after the re-probe.
            assert_eq!(e.poll_timeout(), Some(ms(450)));
        } else {
            // Its own round was counted already; the re-probe's round goes on and
            // fails at its own answer time, the second of three.
            assert_eq!(tick(&mut e, ms(300)).len(), 3);
            assert_eq!(e.state(), SmState::Standby, "two failed rounds, not three");
            tick(&mut e, ms(350));
            assert_eq!(e.state(), SmState::Discovering);
        }
    }
}

#[test]
fn a_bad_answer_fails_its_open_round_and_waits_for_the_next_poll() {
    // Answered by another SM at the Master's address: the path answers, so no quick
    // re-probe; each poll's round fails at once.
    let (mut e, _) = polling_standby();
    let other = info(0x300, 9, KEY, SmState::Master, 1);
    for (i, t) in [200, 400, 600].into_iter().enumerate() {
        let poll = tick(&mut e, ms(t));
        assert_eq!(poll.len(), 1);
        assert!(
            e.handle_response(ms(t + 1), &reply(&poll[0], 0, &other))
                .unwrap()
        );
        if i < 2 {
            assert_eq!(e.state(), SmState::Standby);
            assert_eq!(e.poll_timeout(), Some(ms(t + 200)), "no re-probe");
        }
    }
    assert_eq!(e.state(), SmState::Discovering);
}

/// The polling rule as rounds, written apart from the machine: every Get either
/// gets its answer within the answer time (`answered(i, sent)`, `i` counting Gets in
/// the order sent) or none at all. Returns each round's send instant and Gets, and
/// when the Master is declared lost (`None` when no streak that began with a poll
/// sent by `horizon` lost it).
fn reference_rounds(
    c: &Config,
    horizon: Duration,
    answered: impl Fn(usize, Duration) -> bool,
) -> (Vec<(Duration, usize)>, Option<Duration>) {
    let (p, w) = (
        c.polling_timeout,
        c.transaction_timeout.min(c.polling_timeout),
    );
    let needed = c.polling_retries + 1;
    let mut rounds = Vec::new();
    let (mut at, mut gets, mut failed, mut first) = (Duration::ZERO, 1, 0, 0);
    while at <= horizon || gets > 1 || failed > 0 {
        rounds.push((at, gets));
        let any = (first..first + gets).any(|i| answered(i, at));
        first += gets;
        if any {
            failed = 0;
            (at, gets) = (at + p, 1);
        } else {
            failed += 1;
            if failed == needed {
                return (rounds, Some(at + w));
            }
            (at, gets) = (at + w, c.reprobe_gets as usize);
        }
    }
    (rounds, None)
}

/// A Master whose answers each take `latency(i)` (less than the answer time) or are
/// lost (`lost(i)`), and which dies at `death`: the Standby's rounds and its
/// `MasterLost`, as the machine does them, until nothing is due before `horizon`.
fn machine_rounds(
    c: Config,
    horizon: Duration,
    death: Option<Duration>,
    lost: impl Fn(usize) -> bool,
    latency: impl Fn(usize) -> Duration,
) -> (Vec<(Duration, usize)>, Option<Duration>) {
    let mut m = info(0x200, 9, c.sm_key, SmState::Master, 1);
    let mut e = Election::new(c, T0).unwrap();
    e.begin_sweep(T0);
    e.probe(T0, SmAddr::Lid(10));
    e.sweep_complete(T0);
    let probe = txs(&mut e);
    e.handle_response(T0, &reply(&probe[0], 0, &m)).unwrap();
    assert_eq!(e.state(), SmState::Standby);
    events(&mut e);
    let mut rounds = Vec::new();
    let mut answers: Vec<(Instant, Transmit)> = Vec::new();
    let mut sent_so_far = 0usize;
    let mut now = T0;
    let end = T0 + horizon;
    loop {
        let out = txs(&mut e);
        if !out.is_empty() {
            rounds.push((now - T0, out.len()));
        }
        for tx in out {
            let i = sent_so_far;
            sent_so_far += 1;
            let alive = death.is_none_or(|d| now - T0 < d);
            if alive && !lost(i) {
                answers.push((now + latency(i), tx));
            }
        }
        if e.state() != SmState::Standby {
            let lost_at = events(&mut e)
                .iter()
                .any(|ev| matches!(ev, ElectionEvent::MasterLost { stalled: false, .. }))
                .then_some(now - T0);
            return (rounds, lost_at);
        }
        answers.sort_by_key(|(t, _)| *t);
        let timer = e.poll_timeout().unwrap();
        match answers.first() {
            Some((t, _)) if *t <= timer => {
                let (t, tx) = answers.remove(0);
                now = t;
                m.act_count += 1;
                e.handle_response(now, &reply(&tx, 0, &m)).unwrap();
            }
            _ if timer > end => return (rounds, None),
            _ => {
                now = timer;
                e.handle_timeout(now);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Model check of the poll and re-probe rule on virtual time: under random loss and
    /// latency below the answer time, and a Master that may die at any instant, the
    /// machine sends exactly the reference's rounds (instants and Gets) and declares
    /// the Master lost exactly when the reference does: at the end of the
    /// `polling_retries + 1`-th failed round in a row, never before.
    #[test]
    fn polls_and_re_probes_follow_the_reference_rule(
        p_ms in 20u64..=1000, t_ms in 1u64..=1500, retries in 0u32..=4,
        reprobe in 1u32..=4, loss_permille in 0u64..=700, seed: u64,
        death in proptest::option::of(0u64..=20_000),
    ) {
        let mut c = Config::with_polling(ME, d_ms(p_ms), retries);
        c.sm_key = KEY;
        c.transaction_timeout = d_ms(t_ms);
        c.reprobe_gets = reprobe;
        let w = c.transaction_timeout.min(c.polling_timeout);
        let horizon = c.polling_timeout * 40;
        // Past the reference's last poll, time for its streak to end and one more poll.
        let run_to = horizon + c.polling_timeout * 2 + w * (retries + 1);
        let death = death.map(d_ms);
        // Independent draws for each Get, from its index.
        let draw = |i: usize, salt: u64| {
            let mut z = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let lost = |i: usize| draw(i, 1) % 1000 < loss_permille;
        let latency = |i: usize| Duration::from_nanos(draw(i, 2) % w.as_nanos() as u64);
        let (want_rounds, want_lost) = reference_rounds(&c, horizon, |i, sent| {
            death.is_none_or(|d| sent < d) && !lost(i)
        });
        let (rounds, lost_at) = machine_rounds(c, run_to, death, lost, latency);
        prop_assert!(rounds.len() >= want_rounds.len());
        prop_assert_eq!(&rounds[..want_rounds.len()], &want_rounds[..]);
        match want_lost {
            Some(_) => {
                prop_assert_eq!(lost_at, want_lost);
                prop_assert_eq!(rounds.len(), want_rounds.len());
            }
            // Only a streak the reference did not follow (a poll after `horizon`).
            None => prop_assert!(lost_at.is_none_or(|t| t > horizon)),
        }
    }
}

#[test]
fn stalled_act_count_means_a_dead_master_which_stays_ignored_while_frozen() {
    let mut m = info(0x200, 9, KEY, SmState::Master, 40);
    let mut e = standby_under(1, &m);
    answer_polls(&mut e, T0, &mut m, false);
    run_polls(&mut e, ms(5_000), &mut m, true, false);
    assert_eq!(e.state(), SmState::Discovering);
    let ev = events(&mut e);
    assert!(ev.contains(&ElectionEvent::MasterLost {
        guid: 0x200,
        stalled: true
    }));
    // Its SMA still answers as Master with the frozen count: not followed again.
    sweep_with(&mut e, ms(5_000), &[m]);
    assert_eq!(e.state(), SmState::Master);
    // Once its count moves it is alive again, and as a higher Master it gets our handover.
    m.act_count += 1;
    sweep_with(&mut e, ms(6_000), &[m]);
    let ho = txs(&mut e);
    assert_eq!(ho.len(), 1);
    assert!(ho[0].is_set());
    assert_eq!(ho[0].attribute_modifier(), 1);
}

#[test]
fn polls_answered_by_something_else_are_failures() {
    for bad in [
        info(0x300, 9, KEY, SmState::Master, 1), // another GUID at that address
        info(0x200, 9, 0x9999, SmState::Master, 1), // wrong key
        info(0x200, 0, KEY, SmState::Standby, 1), // stepped down, lower than us
        info(0x200, 9, KEY, SmState::NotActive, 1), // disabled
    ] {
        let mut m = info(0x200, 9, KEY, SmState::Master, 1);
        let mut e = standby_under(1, &m);
        answer_polls(&mut e, T0, &mut m, true);
        let mut b = bad;
        run_polls(&mut e, ms(5_000), &mut b, true, true);
        assert_eq!(e.state(), SmState::Discovering, "{bad:?}");
    }
}

#[test]
fn error_status_poll_is_a_failure() {
    let mut m = info(0x200, 9, KEY, SmState::Master, 1);
    let mut e = standby_under(1, &m);
    let mut answered = 0;
    while e.state() == SmState::Standby {
        for tx in txs(&mut e) {
            m.act_count += 1;
            answered += 1;
            e.handle_response(T0, &reply(&tx, 0x001C, &m)).unwrap();
        }
        if let Some(t) = e.poll_timeout() {
            e.handle_timeout(t);
        }
    }
    assert_eq!(e.state(), SmState::Discovering);
    // One answered poll per failed round, none re-probed: retries + 1.
    assert_eq!(answered, e.config().polling_retries + 1);
}

#[test]
fn master_hands_over_to_a_higher_authenticated_standby() {
    let mut e = master(2);
    let hi = info(0x200, 7, KEY, SmState::Standby, 1);
    sweep_with(&mut e, ms(100), &[hi]);
    let ho = txs(&mut e);
    assert_eq!(ho.len(), 1);
    assert_eq!(ho[0].to, SmAddr::Lid(10));
    assert!(ho[0].is_set());
    assert_eq!(
        ho[0].attribute_modifier(),
        u32::from(SmInfoControl::Handover)
    );
    let sent = ho[0].sm_info().unwrap();
    assert_eq!(
        (sent.guid, sent.sm_state, sent.sm_key),
        (ME, SmState::Master, KEY)
    );
    assert!(events(&mut e).contains(&ElectionEvent::HandoverSent { to: 0x200 }));
    assert_eq!(
        e.state(),
        SmState::Master,
        "Master until the handover is accepted"
    );

    e.handle_response(ms(101), &reply(&ho[0], 0, &hi)).unwrap();
    assert_eq!(e.state(), SmState::Standby);
    assert_eq!(e.following(), Some(0x200));
    let ev = events(&mut e);
    assert!(ev.contains(&ElectionEvent::HandoverCompleted { to: 0x200 }));
    // The new Master's ACKNOWLEDGE is welcome afterwards.
    let ack = info(0x200, 7, KEY, SmState::Standby, 2);
    let r = e
        .handle_request(ms(102), &set_from(&ack, 2), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert!(events(&mut e).contains(&ElectionEvent::HandoverAcknowledged { guid: 0x200 }));
}

#[test]
fn master_never_hands_over_to_a_higher_sm_with_a_wrong_key() {
    let mut e = master(2);
    let foreign = info(0x200, 15, 0x9999, SmState::Standby, 1);
    sweep_with(&mut e, ms(100), &[foreign]);
    assert!(txs(&mut e).is_empty());
    assert_eq!(e.state(), SmState::Master);
    assert!(
        events(&mut e).contains(&ElectionEvent::UnauthenticatedHigherPrioritySm {
            guid: 0x200,
            priority: 15,
            sm_key: 0x9999
        })
    );
}

#[test]
fn master_does_not_hand_over_to_lower_or_discovering_sms() {
    let mut e = master(5);
    sweep_with(
        &mut e,
        ms(100),
        &[
            info(0x200, 4, KEY, SmState::Standby, 1),
            info(0x300, 9, KEY, SmState::Discovering, 1),
            info(0x400, 9, KEY, SmState::NotActive, 1),
        ],
    );
    assert!(txs(&mut e).is_empty());
    assert_eq!(e.state(), SmState::Master);
}

#[test]
fn unanswered_handover_fails_and_the_next_best_is_tried() {
    let mut e = master(2);
    let best = info(0x200, 9, KEY, SmState::Standby, 1);
    let next = info(0x300, 8, KEY, SmState::Master, 1);
    sweep_with(&mut e, ms(100), &[best, next]);
    let first = txs(&mut e);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].to, SmAddr::Lid(10));
    let mut now = ms(100);
    let mut to_next = None;
    while to_next.is_none() {
        now = e.poll_timeout().unwrap();
        e.handle_timeout(now);
        to_next = txs(&mut e).into_iter().find(|t| t.to == SmAddr::Lid(11));
    }
    let ev = events(&mut e);
    assert!(ev.contains(&ElectionEvent::HandoverFailed {
        to: 0x200,
        status: None
    }));
    assert!(ev.contains(&ElectionEvent::HandoverSent { to: 0x300 }));
    assert_eq!(e.state(), SmState::Master);
    e.handle_response(now, &reply(&to_next.unwrap(), 0, &next))
        .unwrap();
    assert_eq!(e.following(), Some(0x300));
}

#[test]
fn refused_handover_keeps_the_master() {
    let mut e = master(2);
    let hi = info(0x200, 9, KEY, SmState::Standby, 1);
    sweep_with(&mut e, ms(100), &[hi]);
    let ho = txs(&mut e);
    e.handle_response(ms(101), &reply(&ho[0], 0x001C, &hi))
        .unwrap();
    assert_eq!(e.state(), SmState::Master);
    assert!(events(&mut e).contains(&ElectionEvent::HandoverFailed {
        to: 0x200,
        status: Some(0x001C)
    }));
}

#[test]
fn acknowledge_completes_a_pending_handover() {
    let mut e = master(2);
    let hi = info(0x200, 9, KEY, SmState::Standby, 1);
    sweep_with(&mut e, ms(100), &[hi]);
    let ho = txs(&mut e);
    let r = e
        .handle_request(ms(101), &set_from(&hi, 2), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert_eq!(e.following(), Some(0x200));
    let ev = events(&mut e);
    assert!(ev.contains(&ElectionEvent::HandoverAcknowledged { guid: 0x200 }));
    assert!(ev.contains(&ElectionEvent::HandoverCompleted { to: 0x200 }));
    // The GetResp that comes later matches nothing any more.
    assert!(!e.handle_response(ms(102), &reply(&ho[0], 0, &hi)).unwrap());
    assert_eq!(e.state(), SmState::Standby);
}

#[test]
fn unexpected_or_ill_formed_acknowledge_is_refused() {
    let mut e = master(2);
    let hi = info(0x200, 9, KEY, SmState::Standby, 1);
    let r = e
        .handle_request(ms(1), &set_from(&hi, 2), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0x001C);
    assert!(events(&mut e).contains(&ElectionEvent::ControlRejected {
        from: 0x200,
        code: SmInfoControl::Acknowledge,
        reason: RejectReason::OurState
    }));
    let as_master = info(0x200, 9, KEY, SmState::Master, 1);
    let r = e
        .handle_request(ms(1), &set_from(&as_master, 2), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0x001C);
    assert!(events(&mut e).contains(&ElectionEvent::ControlRejected {
        from: 0x200,
        code: SmInfoControl::Acknowledge,
        reason: RejectReason::SenderState
    }));
}

#[test]
fn lower_master_is_detected_and_its_handover_received() {
    let mut e = master(9);
    let lo = info(0x200, 1, KEY, SmState::Master, 1);
    sweep_with(&mut e, ms(100), &[lo]);
    assert!(txs(&mut e).is_empty());
    assert!(events(&mut e).contains(&ElectionEvent::OtherMasterDetected { guid: 0x200 }));
    // Not re-reported on the next sweep.
    sweep_with(&mut e, ms(200), &[lo]);
    assert!(events(&mut e).is_empty());
    let r = e
        .handle_request(ms(201), &set_from(&lo, 1), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert_eq!(e.state(), SmState::Master);
    let ev = events(&mut e);
    assert!(ev.contains(&ElectionEvent::HandoverReceived { from: 0x200 }));
    assert!(ev.contains(&ElectionEvent::SweepNeeded));
    assert!(
        txs(&mut e).is_empty(),
        "no ACKNOWLEDGE when mastership did not move"
    );
}

#[test]
fn master_finding_a_higher_master_hands_over_to_it() {
    let mut e = master(2);
    let hi = info(0x200, 9, KEY, SmState::Master, 1);
    sweep_with(&mut e, ms(100), &[hi]);
    let ho = txs(&mut e);
    assert_eq!(ho.len(), 1);
    assert_eq!(ho[0].attribute_modifier(), 1);
}

#[test]
fn standby_takes_over_on_handover_and_acknowledges() {
    let m = info(0x200, 1, KEY, SmState::Master, 1);
    let mut e = standby_under(9, &m);
    txs(&mut e);
    let r = e
        .handle_request(ms(50), &set_from(&m, 1), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    let answered = resp_info(&r);
    assert_eq!(
        answered.sm_state,
        SmState::Standby,
        "the answer shows the state the HANDOVER found"
    );
    assert_eq!(
        answered.sm_key, KEY,
        "an authenticated Master reads our key"
    );
    assert_eq!(e.state(), SmState::Master);
    let ev = events(&mut e);
    assert!(ev.contains(&ElectionEvent::HandoverReceived { from: 0x200 }));
    // First the old Master is asked whether it has stepped down.
    let check = txs(&mut e);
    assert_eq!(check.len(), 1);
    assert_eq!(check[0].to, SmAddr::Lid(10));
    assert!(!check[0].is_set());
    let stepped_down = info(0x200, 1, KEY, SmState::Standby, 2);
    assert!(
        e.handle_response(ms(50), &reply(&check[0], 0, &stepped_down))
            .unwrap()
    );
    let ack = txs(&mut e);
    assert_eq!(ack.len(), 1);
    assert_eq!(ack[0].to, SmAddr::Lid(10));
    assert_eq!(
        ack[0].attribute_modifier(),
        u32::from(SmInfoControl::Acknowledge)
    );
    let a = ack[0].sm_info().unwrap();
    assert_eq!((a.guid, a.sm_state, a.sm_key), (ME, SmState::Standby, KEY));
    // The ACKNOWLEDGE is resent until answered, then forgotten.
    e.handle_response(ms(51), &reply(&ack[0], 0, &m)).unwrap();
    assert_eq!(
        e.poll_timeout(),
        Some(ms(50) + e.config().heartbeat_interval)
    );
}

/// The old Master as OpenSM behaves around a HANDOVER: it sends the HANDOVER, stays
/// Master for `steps_down_after` (OpenSM: until its sweeper thread runs again), then is
/// Standby; an ACKNOWLEDGE that reaches it while Master is refused (ERR 2F07, status 7),
/// and so is one whose SMInfo does not say Standby (ERR 2F04).
/// Drives the Standby `e` (under it at LID 10) through the handover in virtual time and
/// returns the times at which ACKNOWLEDGEs reached the old Master and whether each was
/// refused.
fn handover_from_stepping_down_master(
    steps_down_after: Option<Duration>,
    answers: bool,
) -> Vec<(Instant, bool)> {
    let m = info(0x200, 1, KEY, SmState::Master, 1);
    let mut e = standby_under(9, &m);
    txs(&mut e);
    handover_to(e, m, steps_down_after, answers)
}

/// [`handover_from_stepping_down_master`] for any `e` not yet Master: the HANDOVER comes
/// from `m` at LID 10.
fn handover_to(
    mut e: Election,
    m: SmInfo,
    steps_down_after: Option<Duration>,
    answers: bool,
) -> Vec<(Instant, bool)> {
    let sent = ms(50);
    let r = e
        .handle_request(sent, &set_from(&m, 1), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert_eq!(e.state(), SmState::Master);
    let mut acks = Vec::new();
    let mut now = sent;
    let end = sent + Duration::from_secs(5);
    let mut old = m;
    loop {
        old.sm_state = match steps_down_after {
            Some(d) if now >= sent + d => SmState::Standby,
            _ => SmState::Master,
        };
        old.act_count += 1;
        // Answers come back at once: drain until quiet before time moves.
        while let Some(tx) = e.poll_transmit() {
            assert_eq!(tx.to, SmAddr::Lid(10));
            let refused = if tx.is_set() {
                assert_eq!(
                    tx.attribute_modifier(),
                    u32::from(SmInfoControl::Acknowledge)
                );
                let ack = tx.sm_info().unwrap();
                let refused = old.sm_state != SmState::Standby || ack.sm_state != SmState::Standby;
                acks.push((now, refused));
                refused
            } else {
                false
            };
            if answers {
                let status = if refused { 0x1C } else { 0 };
                e.handle_response(now, &reply(&tx, status, &old)).unwrap();
            }
        }
        match e.poll_timeout() {
            Some(t) if t <= end => {
                now = t;
                e.handle_timeout(now);
            }
            _ => break,
        }
    }
    assert_eq!(e.state(), SmState::Master);
    acks
}

#[test]
fn acknowledge_waits_until_the_old_master_has_stepped_down() {
    // OpenSM steps down microseconds after sending its HANDOVER (seen 1.2 ms under ibsim
    // with verbose logging); a preempted sweeper thread makes it longer.
    // Any step-down within the check budget (fast profile: 3 x 50 ms) is waited for.
    for d in [0, 1, 30, 49, 50, 51, 99, 100, 101, 149, 150] {
        let acks = handover_from_stepping_down_master(Some(Duration::from_millis(d)), true);
        assert_eq!(
            acks.len(),
            1,
            "one ACKNOWLEDGE per handover ({d} ms): {acks:?}"
        );
        assert!(!acks[0].1, "refused after {d} ms: {acks:?}");
        assert!(acks[0].0 >= ms(50 + d));
    }
    // Later than that it is taken for an SM waiting for the ACKNOWLEDGE.
    let late = handover_from_stepping_down_master(Some(Duration::from_millis(151)), true);
    assert_eq!(late, vec![(ms(200), true)]);
}

#[test]
fn acknowledge_goes_anyway_to_a_master_waiting_for_it() {
    // An SM that stays Master until acknowledged gets the ACKNOWLEDGE after the checks:
    // transaction_retries more, transaction_timeout apart.
    let c = cfg(ME, 9, KEY);
    let acks = handover_from_stepping_down_master(None, true);
    assert_eq!(acks.len(), 1, "{acks:?}");
    assert_eq!(
        acks[0].0,
        ms(50) + c.transaction_timeout * c.transaction_retries
    );
}

#[test]
fn no_acknowledge_for_a_silent_old_master() {
    assert!(handover_from_stepping_down_master(Some(Duration::from_millis(0)), false).is_empty());
}

#[test]
fn a_resent_handover_owes_no_second_acknowledge() {
    // The old Master resends its HANDOVER (our answer was late): we are Master already.
    let m = info(0x200, 1, KEY, SmState::Master, 1);
    let mut e = standby_under(9, &m);
    txs(&mut e);
    e.handle_request(ms(50), &set_from(&m, 1), &from_lid(10))
        .unwrap();
    let check = txs(&mut e);
    assert_eq!(check.len(), 1);
    let r = e
        .handle_request(ms(60), &set_from(&m, 1), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert!(txs(&mut e).is_empty(), "nothing more for the resend");
    let standby = info(0x200, 1, KEY, SmState::Standby, 3);
    e.handle_response(ms(61), &reply(&check[0], 0, &standby))
        .unwrap();
    let ack = txs(&mut e);
    assert_eq!(ack.len(), 1);
    assert!(ack[0].is_set());
    // The ACKNOWLEDGE's answer is late: it is resent (legal, OpenSM ignores it in Standby),
    // never re-checked or re-owed.
    let mut sets = 1;
    let mut now = ms(61);
    while let Some(t) = e.poll_timeout().filter(|t| *t < ms(5_000)) {
        now = t;
        e.handle_timeout(now);
        for tx in txs(&mut e) {
            assert!(tx.is_set());
            sets += 1;
        }
    }
    assert!(now > ms(4_900), "ran to the end: {now:?}");
    assert_eq!(sets, 1 + e.config().transaction_retries);
}

#[test]
fn discovering_takes_over_on_handover() {
    let mut e = sm(9);
    let m = info(0x200, 1, KEY, SmState::Master, 1);
    let r = e
        .handle_request(ms(1), &set_from(&m, 1), &from_lid(3))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert_eq!(e.state(), SmState::Master);
    assert_eq!(txs(&mut e)[0].to, SmAddr::Lid(3));
}

#[test]
fn discovering_acknowledges_a_handover_as_a_standby() {
    // OpenSM accepts an ACKNOWLEDGE only from an SMInfo saying Standby (ERR 2F04
    // otherwise). A Discovering SM that takes over on a HANDOVER was eligible to be
    // handed to, as a Standby is: its ACKNOWLEDGE says Standby.
    let m = info(0x200, 1, KEY, SmState::Master, 1);
    for d in [0, 1, 49, 100, 150] {
        let e = sm(9);
        assert_eq!(e.state(), SmState::Discovering);
        let acks = handover_to(e, m, Some(Duration::from_millis(d)), true);
        assert_eq!(acks.len(), 1, "one ACKNOWLEDGE ({d} ms): {acks:?}");
        assert!(!acks[0].1, "refused after {d} ms: {acks:?}");
    }
    // The answer to the HANDOVER itself still tells the state it found.
    let mut e = sm(9);
    let r = e
        .handle_request(ms(1), &set_from(&m, 1), &from_lid(10))
        .unwrap();
    assert_eq!(resp_info(&r).sm_state, SmState::Discovering);
    let check = txs(&mut e);
    assert_eq!(check.len(), 1);
    let stepped_down = info(0x200, 1, KEY, SmState::Standby, 2);
    e.handle_response(ms(2), &reply(&check[0], 0, &stepped_down))
        .unwrap();
    let ack = txs(&mut e);
    assert_eq!(ack.len(), 1);
    let a = ack[0].sm_info().unwrap();
    assert_eq!((a.guid, a.sm_state, a.sm_key), (ME, SmState::Standby, KEY));
}

#[test]
fn handover_with_a_wrong_key_is_refused_and_reported() {
    let m = info(0x200, 15, 0x9999, SmState::Master, 1);
    let mut e = sm(1);
    events(&mut e);
    let r = e
        .handle_request(ms(1), &set_from(&m, 1), &from_lid(3))
        .unwrap();
    assert_eq!(resp_status(&r), 0x001C);
    assert_eq!(
        resp_info(&r).sm_key,
        0,
        "an unauthenticated sender does not read our key"
    );
    assert_eq!(e.state(), SmState::Discovering);
    let ev = events(&mut e);
    assert!(ev.contains(&ElectionEvent::ControlRejected {
        from: 0x200,
        code: SmInfoControl::Handover,
        reason: RejectReason::Unauthenticated
    }));
    assert!(
        ev.contains(&ElectionEvent::UnauthenticatedHigherPrioritySm {
            guid: 0x200,
            priority: 15,
            sm_key: 0x9999
        })
    );
    // A hidden key from a never-verified sender is refused too.
    let hidden = info(0x300, 1, 0, SmState::Master, 1);
    let r = e
        .handle_request(ms(2), &set_from(&hidden, 1), &from_lid(4))
        .unwrap();
    assert_eq!(resp_status(&r), 0x001C);
}

#[test]
fn handover_from_a_non_master_or_to_a_disabled_sm_is_refused() {
    let mut e = sm(1);
    let not_master = info(0x200, 5, KEY, SmState::Standby, 1);
    let r = e
        .handle_request(ms(1), &set_from(&not_master, 1), &from_lid(3))
        .unwrap();
    assert_eq!(resp_status(&r), 0x001C);
    assert!(events(&mut e).contains(&ElectionEvent::ControlRejected {
        from: 0x200,
        code: SmInfoControl::Handover,
        reason: RejectReason::SenderState
    }));
    e.disable(ms(2));
    let m = info(0x200, 5, KEY, SmState::Master, 1);
    let r = e
        .handle_request(ms(3), &set_from(&m, 1), &from_lid(3))
        .unwrap();
    assert_eq!(resp_status(&r), 0x001C);
    assert_eq!(e.state(), SmState::NotActive);
}

#[test]
fn disable_standby_discover_from_the_authenticated_master() {
    let m = info(0x200, 1, KEY, SmState::Master, 1);
    // DISABLE: Standby -> NotActive.
    let mut e = standby_under(9, &m);
    let r = e
        .handle_request(ms(1), &set_from(&m, 3), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert_eq!(e.state(), SmState::NotActive);
    assert!(events(&mut e).contains(&ElectionEvent::ControlObeyed {
        from: 0x200,
        code: SmInfoControl::Disable
    }));
    assert!(e.poll_timeout().is_none(), "NotActive polls nobody");
    // DISABLE again: no-op, accepted.
    let r = e
        .handle_request(ms(2), &set_from(&m, 3), &from_lid(10))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    // STANDBY: NotActive -> Standby polling the sender.
    txs(&mut e);
    let r = e
        .handle_request(ms(3), &set_from(&m, 4), &from_lid(12))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert_eq!(e.following(), Some(0x200));
    assert_eq!(txs(&mut e)[0].to, SmAddr::Lid(12));
    // DISCOVER: Standby -> Discovering, sweep requested.
    events(&mut e);
    let r = e
        .handle_request(ms(4), &set_from(&m, 5), &from_lid(12))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert_eq!(e.state(), SmState::Discovering);
    assert!(events(&mut e).contains(&ElectionEvent::SweepNeeded));
    // DISCOVER while Discovering: accepted, nothing changes.
    let n = e.state_changes();
    let r = e
        .handle_request(ms(5), &set_from(&m, 5), &from_lid(12))
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert_eq!(e.state_changes(), n);
    // DISABLE while Discovering.
    e.handle_request(ms(6), &set_from(&m, 3), &from_lid(12))
        .unwrap();
    assert_eq!(e.state(), SmState::NotActive);
    // DISCOVER while NotActive.
    e.handle_request(ms(7), &set_from(&m, 5), &from_lid(12))
        .unwrap();
    assert_eq!(e.state(), SmState::Discovering);
}

#[test]
fn standby_without_an_address_rediscovers() {
    let mut e = sm(1);
    e.disable(ms(1));
    let m = info(0x200, 9, KEY, SmState::Master, 1);
    let r = e
        .handle_request(ms(2), &set_from(&m, 4), &Requester::default())
        .unwrap();
    assert_eq!(resp_status(&r), 0);
    assert_eq!(e.state(), SmState::Discovering);
}

#[test]
fn controls_from_unauthenticated_or_non_master_senders_are_refused() {
    let m = info(0x200, 1, KEY, SmState::Master, 1);
    for (sender, reason) in [
        (
            info(0x300, 1, 0x9999, SmState::Master, 1),
            RejectReason::Unauthenticated,
        ),
        (
            info(0x300, 1, 0, SmState::Master, 1),
            RejectReason::Unauthenticated,
        ),
        (
            info(0x200, 1, KEY, SmState::Standby, 1),
            RejectReason::SenderState,
        ),
    ] {
        for code in [3u32, 4, 5] {
            let mut e = standby_under(9, &m);
            let r = e
                .handle_request(ms(1), &set_from(&sender, code), &from_lid(5))
                .unwrap();
            assert_eq!(resp_status(&r), 0x001C);
            assert_eq!(e.state(), SmState::Standby);
            assert!(events(&mut e).contains(&ElectionEvent::ControlRejected {
                from: sender.guid,
                code: SmInfoControl::from(code),
                reason
            }));
        }
    }
}

#[test]
fn master_obeys_controls_only_from_a_higher_master() {
    for code in [3u32, 4, 5] {
        let mut e = master(5);
        let lo = info(0x200, 1, KEY, SmState::Master, 1);
        let r = e
            .handle_request(ms(1), &set_from(&lo, code), &from_lid(5))
            .unwrap();
        assert_eq!(resp_status(&r), 0x001C);
        assert_eq!(e.state(), SmState::Master);
        assert!(events(&mut e).contains(&ElectionEvent::ControlRejected {
            from: 0x200,
            code: SmInfoControl::from(code),
            reason: RejectReason::SenderOutranked
        }));
        let hi = info(0x300, 9, KEY, SmState::Master, 1);
        let r = e
            .handle_request(ms(2), &set_from(&hi, code), &from_lid(6))
            .unwrap();
        assert_eq!(resp_status(&r), 0);
        let want = [SmState::NotActive, SmState::Standby, SmState::Discovering][code as usize - 3];
        assert_eq!(e.state(), want);
    }
}

#[test]
fn unknown_control_code_is_refused() {
    let mut e = sm(1);
    let m = info(0x200, 1, KEY, SmState::Master, 1);
    for code in [0u32, 6, 0xFFFF] {
        let r = e
            .handle_request(ms(1), &set_from(&m, code), &from_lid(5))
            .unwrap();
        assert_eq!(resp_status(&r), 0x001C);
        assert!(events(&mut e).contains(&ElectionEvent::ControlRejected {
            from: 0x200,
            code: SmInfoControl::from(code),
            reason: RejectReason::UnknownCode
        }));
    }
}

#[test]
fn sm_key_reads_as_zero_unless_authenticated_or_proven_master() {
    let m = info(0x200, 9, KEY, SmState::Master, 1);
    let mut e = standby_under(1, &m);
    let get = get_req();
    let anon = Requester::default();
    assert_eq!(
        resp_info(&e.handle_request(ms(1), &get, &anon).unwrap()).sm_key,
        0
    );
    let mkey = Requester {
        m_key_authenticated: true,
        ..Requester::default()
    };
    assert_eq!(
        resp_info(&e.handle_request(ms(1), &get, &mkey).unwrap()).sm_key,
        KEY
    );
    let master_asks = Requester {
        guid: Some(0x200),
        ..Requester::default()
    };
    assert_eq!(
        resp_info(&e.handle_request(ms(1), &get, &master_asks).unwrap()).sm_key,
        KEY,
        "the Master whose key we verified reads ours"
    );
    let stranger = Requester {
        guid: Some(0x999),
        ..Requester::default()
    };
    assert_eq!(
        resp_info(&e.handle_request(ms(1), &get, &stranger).unwrap()).sm_key,
        0
    );
    assert_eq!(e.sm_info_for(&anon).sm_key, 0);
    assert_eq!(e.sm_info().sm_key, KEY);
    // Without a configured key there is nothing to hide (and 0 is what is shown).
    let e0 = Election::new(cfg(ME, 1, 0), T0).unwrap();
    assert!(e0.reveals_key_to(&anon));
}

#[test]
fn answering_moves_act_count_and_reports_the_state() {
    let mut e = master(3);
    let a = resp_info(
        &e.handle_request(ms(1), &get_req(), &Requester::default())
            .unwrap(),
    );
    let b = resp_info(
        &e.handle_request(ms(2), &get_req(), &Requester::default())
            .unwrap(),
    );
    assert_eq!((a.guid, a.priority, a.sm_state), (ME, 3, SmState::Master));
    assert_ne!(a.act_count, b.act_count);
    e.record_smps_sent(10);
    assert_eq!(e.sm_info().act_count, b.act_count + 10);
}

#[test]
fn send_control_only_as_master() {
    let mut e = sm(1);
    assert!(matches!(
        e.send_control(ms(1), SmAddr::Lid(3), SmInfoControl::Disable),
        Err(Error::ControlNotAllowed { .. })
    ));
    let mut e = master(5);
    assert!(
        e.send_control(ms(1), SmAddr::Lid(3), SmInfoControl::Handover)
            .is_err()
    );
    assert!(
        e.send_control(ms(1), SmAddr::Lid(3), SmInfoControl::Acknowledge)
            .is_err()
    );
    e.send_control(ms(1), SmAddr::Lid(3), SmInfoControl::Standby)
        .unwrap();
    let tx = txs(&mut e);
    assert_eq!(tx[0].attribute_modifier(), 4);
    assert_eq!(tx[0].sm_info().unwrap().sm_state, SmState::Master);
    let peer = info(0x200, 1, KEY, SmState::Standby, 1);
    e.handle_response(ms(2), &reply(&tx[0], 0, &peer)).unwrap();
    assert!(events(&mut e).contains(&ElectionEvent::ControlCompleted {
        to: SmAddr::Lid(3),
        code: SmInfoControl::Standby,
        status: Some(0)
    }));
    // Unanswered: resent, then reported without a status.
    e.send_control(ms(3), SmAddr::Lid(4), SmInfoControl::Discover)
        .unwrap();
    while let Some(t) = e.poll_timeout() {
        if t > ms(2_000) {
            break;
        }
        e.handle_timeout(t);
    }
    assert!(events(&mut e).contains(&ElectionEvent::ControlCompleted {
        to: SmAddr::Lid(4),
        code: SmInfoControl::Discover,
        status: None
    }));
}

#[test]
fn sm_sent_from_our_own_sma_is_not_a_peer() {
    let mut e = sm(1);
    let me = e.sm_info();
    sweep_with(
        &mut e,
        T0,
        &[SmInfo {
            sm_state: SmState::Master,
            ..me
        }],
    );
    assert_eq!(
        e.state(),
        SmState::Master,
        "our own port answering a probe is ignored"
    );
}

#[test]
fn disable_and_enable() {
    let mut e = master(3);
    e.disable(ms(1));
    assert_eq!(e.state(), SmState::NotActive);
    e.enable(ms(2));
    assert_eq!(e.state(), SmState::Discovering);
    assert!(events(&mut e).contains(&ElectionEvent::SweepNeeded));
    let n = e.state_changes();
    e.enable(ms(3));
    assert_eq!(e.state_changes(), n, "enable only leaves NotActive");
}

#[test]
fn directed_route_requests_and_responses() {
    let path = DrPath::from_ports(&[1, 4, 2]).unwrap();
    let mut e = sm(1);
    e.begin_sweep(T0);
    e.probe(T0, SmAddr::Directed(path));
    let tx = txs(&mut e);
    let v = DrSmpView::new_checked(&tx[0].mad[..]).unwrap();
    assert_eq!(tx[0].mad[1], 0x81);
    assert_eq!(v.hop_count(), 3);
    assert_eq!(DrPath::from_smp(&v).unwrap(), path);
    assert_eq!(v.method(), Method::Get);
    assert_eq!(v.attribute_id(), 0x0020);
    // Our answer to a directed request carries the D bit and GetResp.
    let req = build_request(
        SmAddr::Directed(path),
        Method::Get,
        0,
        9,
        0,
        &SmInfo::default(),
    )
    .mad;
    let r = e
        .handle_request(ms(1), &req, &Requester::default())
        .unwrap();
    let rv = DrSmpView::new_checked(&r[..]).unwrap();
    assert!(rv.direction() && rv.response());
    assert_eq!(rv.status(), 0);
    assert_eq!(SmInfo::parse(rv.attr_data()).unwrap().guid, ME);
}

#[test]
fn responses_match_on_the_low_tid_half() {
    let mut c = cfg(ME, 1, KEY);
    c.tid_high = 0xDEAD;
    let mut e = Election::new(c, T0).unwrap();
    e.begin_sweep(T0);
    e.probe(T0, SmAddr::Lid(7));
    e.sweep_complete(T0);
    let tx = txs(&mut e);
    assert_eq!(tx[0].tid() >> 32, 0xDEAD);
    let mut r = reply(&tx[0], 0, &info(0x200, 1, KEY, SmState::Master, 1));
    r[8..12].copy_from_slice(&[0x12, 0x34, 0x56, 0x78]); // upper half rewritten in transit
    assert!(e.handle_response(ms(1), &r).unwrap());
    assert_eq!(e.following(), Some(0x200));
}

#[test]
fn malformed_input_is_an_error_and_changes_nothing() {
    let mut e = master(1);
    let before = e.sm_info();
    assert!(matches!(
        e.handle_request(ms(1), &[0u8; 10], &Requester::default()),
        Err(Error::NotSmp { .. } | Error::Wire(_))
    ));
    let mut m = get_req();
    m[1] = 0x03;
    assert_eq!(
        e.handle_request(ms(1), &m, &Requester::default()),
        Err(Error::NotSmp { class: 0x03 })
    );
    let mut m = get_req();
    m[16..18].copy_from_slice(&0x0015u16.to_be_bytes());
    assert_eq!(
        e.handle_request(ms(1), &m, &Requester::default()),
        Err(Error::NotSmInfo { attribute_id: 0x15 })
    );
    assert!(matches!(
        e.handle_request(ms(1), &get_req()[..200], &Requester::default()),
        Err(Error::Wire(_))
    ));
    let resp = build_response(&get_req(), Status::OK, &before).unwrap();
    assert_eq!(
        e.handle_request(ms(1), &resp, &Requester::default()),
        Err(Error::WrongDirection { response: true })
    );
    assert_eq!(
        e.handle_response(ms(1), &get_req()),
        Err(Error::WrongDirection { response: false })
    );
    assert_eq!(e.sm_info(), before);
    assert_eq!(e.state(), SmState::Master);
    // Other methods get a status, not an error.
    let mut m = get_req();
    m[3] = 0x05; // Trap
    let r = e.handle_request(ms(1), &m, &Requester::default()).unwrap();
    assert_eq!(resp_status(&r), 0x000C);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever bytes arrive, in whatever state, nothing panics and the state stays valid.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        smp in any::<bool>(),
        set in any::<bool>(),
        modifier in 0u32..8,
    ) {
        let mut e = master(3);
        let mut b = bytes;
        if smp && b.len() >= 24 {
            b[1] = 0x01;
            b[16] = 0;
            b[17] = 0x20;
            b[3] = if set { 0x02 } else { 0x01 };
            b[20..24].copy_from_slice(&modifier.to_be_bytes());
        }
        let _ = e.handle_request(ms(1), &b, &Requester::default());
        let _ = e.handle_response(ms(1), &b);
        prop_assert!(matches!(
            e.state(),
            SmState::Master | SmState::Standby | SmState::Discovering | SmState::NotActive
        ));
    }
}

#[test]
fn control_already_answered_by_the_sma() {
    let m = info(0x200, 1, KEY, SmState::Master, 1);
    let mut e = standby_under(9, &m);
    txs(&mut e);
    let st = e.handle_control(ms(1), 1, m, &from_lid(10));
    assert_eq!(st, Status::OK);
    assert_eq!(e.state(), SmState::Master);
    let check = txs(&mut e);
    let standby = info(0x200, 1, KEY, SmState::Standby, 2);
    e.handle_response(ms(1), &reply(&check[0], 0, &standby))
        .unwrap();
    assert_eq!(
        txs(&mut e)[0].attribute_modifier(),
        2,
        "ACKNOWLEDGE follows once the old Master is Standby"
    );
    let foreign = info(0x300, 15, 0x9999, SmState::Master, 1);
    assert_eq!(
        e.handle_control(ms(2), 3, foreign, &from_lid(11)),
        Status::INVALID_VALUE
    );
    assert_eq!(e.state(), SmState::Master);
}

#[test]
fn takeover_does_not_wait_for_a_probe_of_the_silent_master() {
    let mut m = info(0x200, 9, KEY, SmState::Master, 1);
    let mut e = standby_under(1, &m);
    answer_polls(&mut e, T0, &mut m, true);
    run_polls(&mut e, ms(5_000), &mut m, false, false);
    assert_eq!(e.state(), SmState::Discovering);
    let now = ms(5_000);
    // The host's sweep still sees the dead SM's port (IsSM set) and probes it.
    e.begin_sweep(now);
    e.probe(now, SmAddr::Lid(10));
    e.sweep_complete(now);
    assert_eq!(
        e.state(),
        SmState::Master,
        "decided at once, not after the probe's resends"
    );
    // Later sweeps wait for every probe again.
    e.begin_sweep(now);
    e.probe(now, SmAddr::Lid(10));
    e.probe(now, SmAddr::Lid(11));
    e.sweep_complete(now);
    let probes = txs(&mut e);
    let hi = info(0x300, 9, KEY, SmState::Standby, 1);
    let to11 = probes.iter().find(|t| t.to == SmAddr::Lid(11)).unwrap();
    e.handle_response(now, &reply(to11, 0, &hi)).unwrap();
    assert!(
        txs(&mut e).is_empty(),
        "no handover before the sweep's last probe is settled"
    );
}

#[test]
fn priority_change_takes_effect_at_the_next_sweep() {
    let mut e = master(9);
    let peer = info(0x200, 5, KEY, SmState::Standby, 1);
    sweep_with(&mut e, ms(100), &[peer]);
    assert!(txs(&mut e).is_empty());
    assert!(e.set_priority(16).is_err());
    e.set_priority(2).unwrap();
    assert_eq!(e.sm_info().priority, 2);
    assert_eq!(
        e.state(),
        SmState::Master,
        "nothing moves before the next sweep"
    );
    sweep_with(&mut e, ms(200), &[peer]);
    let ho = txs(&mut e);
    assert_eq!(ho.len(), 1);
    assert_eq!(ho[0].attribute_modifier(), 1);
}

#[test]
fn known_sms_lists_what_the_sweeps_found() {
    let mut e = sm(10);
    let a = info(0xA, 2, KEY, SmState::Standby, 7);
    let b = info(0xB, 1, KEY, SmState::Standby, 3);
    sweep_with(&mut e, T0, &[a, b]);
    assert_eq!(e.state(), SmState::Master);
    let mut k: Vec<KnownSm> = e.known_sms().collect();
    k.sort_by_key(|s| s.info.guid);
    assert_eq!(k.len(), 2);
    assert_eq!((k[0].info, k[0].addr), (a, Some(SmAddr::Lid(10))));
    assert_eq!((k[1].info, k[1].addr), (b, Some(SmAddr::Lid(11))));
    assert!(k.iter().all(|s| s.in_last_sweep));
    // B leaves: still known, no longer found.
    sweep_with(&mut e, ms(10), &[a]);
    let gone: Vec<u64> = e
        .known_sms()
        .filter(|s| !s.in_last_sweep)
        .map(|s| s.info.guid)
        .collect();
    assert_eq!(gone, [0xB]);
}

#[test]
fn master_refreshes_known_sms_without_deciding_anything() {
    // Alone: nothing to refresh, nothing sent.
    let mut lone = master(9);
    assert_eq!(lone.refresh_known_sms(ms(5)), 0);
    assert!(txs(&mut lone).is_empty());

    let mut e = master(9);
    let a = info(0xA, 2, KEY, SmState::Standby, 7);
    let b = info(0xB, 1, KEY, SmState::Standby, 3);
    sweep_with(&mut e, ms(10), &[a, b]);
    assert!(txs(&mut e).is_empty());
    events(&mut e);
    let changes = e.state_changes();
    // Light sweep: one SubnGet(SMInfo) per known SM, where the sweep reached it.
    assert_eq!(e.refresh_known_sms(ms(20)), 2);
    let gets = txs(&mut e);
    assert_eq!(gets.len(), 2);
    assert!(gets.iter().all(|t| !t.is_set()));
    let mut to: Vec<SmAddr> = gets.iter().map(|t| t.to).collect();
    to.sort_by_key(|a| format!("{a:?}"));
    assert_eq!(to, [SmAddr::Lid(10), SmAddr::Lid(11)]);
    // A request still unanswered is not doubled.
    assert_eq!(e.refresh_known_sms(ms(21)), 0);
    // A now outranks us and B went NotActive: the table shows it, nothing is decided
    // (no HANDOVER before the next sweep), no sweep is asked for.
    let a2 = info(0xA, 12, KEY, SmState::Standby, 40);
    let b2 = info(0xB, 1, KEY, SmState::NotActive, 9);
    for t in &gets {
        let peer = if t.to == SmAddr::Lid(10) { a2 } else { b2 };
        assert!(e.handle_response(ms(22), &reply(t, 0, &peer)).unwrap());
    }
    let mut k: Vec<KnownSm> = e.known_sms().collect();
    k.sort_by_key(|s| s.info.guid);
    assert_eq!((k[0].info, k[1].info), (a2, b2));
    assert!(k.iter().all(|s| s.in_last_sweep));
    assert!(txs(&mut e).is_empty());
    assert!(events(&mut e).is_empty());
    assert_eq!((e.state(), e.state_changes()), (SmState::Master, changes));
    // The next sweep decides on what it probes: HANDOVER to A.
    sweep_with(&mut e, ms(30), &[a2, b2]);
    let ho = txs(&mut e);
    assert_eq!(ho.len(), 1);
    assert_eq!(
        ho[0].attribute_modifier(),
        u32::from(SmInfoControl::Handover)
    );

    // Another SM now answering at a refreshed route is not taken for the one asked.
    let mut e = master(9);
    sweep_with(&mut e, ms(10), &[a]);
    assert_eq!(e.refresh_known_sms(ms(20)), 1);
    let get = txs(&mut e).remove(0);
    let stranger = info(0xC, 3, KEY, SmState::Standby, 1);
    assert!(
        e.handle_response(ms(21), &reply(&get, 0, &stranger))
            .unwrap()
    );
    let k: Vec<KnownSm> = e.known_sms().collect();
    assert_eq!(k.len(), 1);
    assert_eq!(k[0].info, a);
    // Unanswered: resent, then dropped; the SM stays listed as last seen.
    assert_eq!(e.refresh_known_sms(ms(30)), 1);
    let mut sent = 1;
    txs(&mut e);
    while let Some(t) = e.poll_timeout() {
        if t > ms(10_000) {
            break;
        }
        e.handle_timeout(t);
        sent += txs(&mut e).len();
    }
    assert_eq!(sent, 1 + e.config().transaction_retries as usize);
    assert_eq!(e.known_sms().next().unwrap().info, a);
    assert_eq!(e.state(), SmState::Master);

    // Not Master: nothing.
    let m = info(0x200, 12, KEY, SmState::Master, 1);
    let mut s = standby_under(3, &m);
    assert_eq!(s.refresh_known_sms(ms(5)), 0);
}

fn req(lid: u16, guid: Option<u64>) -> Requester {
    Requester {
        m_key_authenticated: false,
        guid,
        addr: Some(SmAddr::Lid(lid)),
    }
}

#[test]
fn an_unknown_requester_is_asked_once_and_listed() {
    let mut e = master(5);
    let r = req(20, None);
    assert!(e.learn(ms(1), &r));
    let get = txs(&mut e);
    assert_eq!(get.len(), 1);
    assert_eq!(get[0].to, SmAddr::Lid(20));
    assert!(!get[0].is_set());
    // Its probe resent while ours is unanswered: not asked twice.
    assert!(!e.learn(ms(2), &r));
    assert!(txs(&mut e).is_empty());
    let newcomer = info(0x200, 3, KEY, SmState::Discovering, 4);
    assert!(
        e.handle_response(ms(3), &reply(&get[0], 0, &newcomer))
            .unwrap()
    );
    let k: Vec<KnownSm> = e.known_sms().collect();
    assert_eq!(k.len(), 1);
    assert_eq!(
        (k[0].info, k[0].addr, k[0].in_last_sweep),
        (newcomer, Some(SmAddr::Lid(20)), true)
    );
    // Last seen Discovering: its next request (a Standby's poll) is worth another Get;
    // once it stands by, its polls cost nothing.
    assert!(e.learn(ms(10), &r));
    let get = txs(&mut e);
    let standby = info(0x200, 3, KEY, SmState::Standby, 9);
    assert!(
        e.handle_response(ms(11), &reply(&get[0], 0, &standby))
            .unwrap()
    );
    assert!(!e.learn(ms(20), &r));
    assert!(!e.learn(ms(20), &req(21, Some(0x200))));
    assert!(txs(&mut e).is_empty());
    // Lower priority: nothing decided, still Master.
    assert_eq!(e.state(), SmState::Master);
    assert!(
        !events(&mut e)
            .iter()
            .any(|ev| matches!(ev, ElectionEvent::HandoverSent { .. }))
    );
    // The next sweep that does not find it drops it from the last sweep's SMs.
    sweep_with(&mut e, ms(30), &[]);
    assert!(e.known_sms().all(|k| !k.in_last_sweep));
}

#[test]
fn a_master_hands_over_at_once_to_a_higher_standby_it_learns() {
    let mut e = master(5);
    assert!(e.learn(ms(1), &req(20, None)));
    let get = txs(&mut e).remove(0);
    let higher = info(0x200, 9, KEY, SmState::Standby, 4);
    assert!(e.handle_response(ms(2), &reply(&get, 0, &higher)).unwrap());
    let ho = txs(&mut e);
    assert_eq!(ho.len(), 1);
    assert_eq!(ho[0].to, SmAddr::Lid(20));
    assert_eq!(
        ho[0].attribute_modifier(),
        u32::from(SmInfoControl::Handover)
    );
    assert!(events(&mut e).contains(&ElectionEvent::HandoverSent { to: 0x200 }));
    // Another Master learnt: reported; one with a wrong key: never handed control.
    let mut e = master(5);
    assert!(e.learn(ms(1), &req(20, None)));
    let get = txs(&mut e).remove(0);
    let lower_master = info(0x300, 1, KEY, SmState::Master, 4);
    assert!(
        e.handle_response(ms(2), &reply(&get, 0, &lower_master))
            .unwrap()
    );
    assert!(events(&mut e).contains(&ElectionEvent::OtherMasterDetected { guid: 0x300 }));
    let mut e = master(5);
    assert!(e.learn(ms(1), &req(20, None)));
    let get = txs(&mut e).remove(0);
    let intruder = info(0x400, 15, 0xBAD, SmState::Standby, 4);
    assert!(
        e.handle_response(ms(2), &reply(&get, 0, &intruder))
            .unwrap()
    );
    assert!(txs(&mut e).is_empty());
    assert!(events(&mut e).iter().any(|ev| matches!(
        ev,
        ElectionEvent::UnauthenticatedHigherPrioritySm { guid: 0x400, .. }
    )));
    assert_eq!(e.state(), SmState::Master);
}

#[test]
fn learning_needs_an_address_and_skips_known_sms_ourselves_and_not_active() {
    let mut e = master(5);
    let known = info(0xA, 2, KEY, SmState::Standby, 7);
    sweep_with(&mut e, ms(1), &[known]);
    txs(&mut e);
    let none = Requester {
        m_key_authenticated: false,
        guid: None,
        addr: None,
    };
    assert!(!e.learn(ms(2), &none));
    assert!(!e.learn(ms(2), &req(10, None)), "known at that address");
    assert!(!e.learn(ms(2), &req(99, Some(0xA))), "known by GUID");
    assert!(!e.learn(ms(2), &req(99, Some(ME))), "ourselves");
    assert!(txs(&mut e).is_empty());
    e.disable(ms(3));
    assert!(!e.learn(ms(4), &req(30, None)));
    assert!(txs(&mut e).is_empty());
}

#[test]
fn a_discovering_sm_decides_on_what_it_learnt_during_its_sweep() {
    let mut e = sm(3);
    events(&mut e);
    e.begin_sweep(ms(0));
    // The Master polls or probes us while we discover; our sweep has not reached it.
    assert!(e.learn(ms(1), &req(40, None)));
    let get = txs(&mut e).remove(0);
    let m = info(0x500, 1, KEY, SmState::Master, 8);
    assert!(e.handle_response(ms(2), &reply(&get, 0, &m)).unwrap());
    e.sweep_complete(ms(3));
    assert_eq!(e.state(), SmState::Standby);
    assert_eq!(e.following(), Some(0x500));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Whatever the requests, answers and timeouts: at most one Get waits per address,
    /// an SM seen in any state but Discovering is never asked again, and what answered
    /// is known.
    #[test]
    fn learning_never_floods(
        steps in proptest::collection::vec((0u8..4, 0u8..4, any::<bool>()), 1..60),
    ) {
        let mut e = master(15);
        let states = [SmState::Discovering, SmState::Standby, SmState::NotActive, SmState::Master];
        let mut now = ms(1);
        let mut waiting: Vec<Transmit> = Vec::new();
        let mut settled: Vec<SmAddr> = Vec::new();
        for (who, state, answer) in steps {
            now += Duration::from_millis(1);
            let addr = SmAddr::Lid(20 + u16::from(who));
            let guid = if who % 2 == 0 { Some(0x200 + u64::from(who)) } else { None };
            let r = Requester { m_key_authenticated: false, guid, addr: Some(addr) };
            let sent = e.learn(now, &r);
            let out = txs(&mut e);
            prop_assert_eq!(out.len(), usize::from(sent));
            for t in out {
                prop_assert!(!waiting.iter().any(|w| w.to == t.to), "two Gets to {:?}", t.to);
                prop_assert!(!settled.contains(&t.to), "asked a settled SM at {:?}", t.to);
                waiting.push(t);
            }
            if answer && !waiting.is_empty() {
                let t = waiting.remove(0);
                let SmAddr::Lid(l) = t.to else { unreachable!() };
                let st = states[usize::from(state)];
                let peer = info(0x200 + u64::from(l - 20), 1, KEY, st, 1);
                prop_assert!(e.handle_response(now, &reply(&t, 0, &peer)).unwrap());
                prop_assert!(e.known_sms().any(|k| k.info == peer));
                if st != SmState::Discovering {
                    settled.push(t.to);
                }
                // Lower SMs only: a Master of priority 15 keeps the mastership.
                txs(&mut e);
            }
        }
        prop_assert_eq!(e.state(), SmState::Master);
    }
}
