//! The election behind the SM's own SMA: `ibsm-sma` serves the SMInfo copied from
//! `Election::sm_info` and reports SubnSet(SMInfo) as an event, which the host feeds to
//! `Election::handle_control`. A Standby elsewhere polls that SMA.

use ibsm_election::{Config, Election, ElectionEvent, Requester, SmAddr, SmState};
use ibsm_sma::{NodeConfig, Rx, Sma, SmaEvent};
use ibsm_wire::Instant;

const KEY: u64 = 0x5EC;

fn cfg(guid: u64, priority: u8) -> Config {
    let mut c = Config::fast(guid);
    c.priority = priority;
    c.sm_key = KEY;
    // ibsm-sma shows the SM_Key to a requester that presents it as the SMP's M_Key.
    c.m_key = KEY;
    c
}

/// The node hosting SM `a`: its SMA answers SMInfo from the last copy.
struct Host {
    sm: Election,
    sma: Sma,
    hung: bool,
}

impl Host {
    fn new(c: Config) -> Self {
        let mut sma = Sma::new(NodeConfig::ca(c.guid, 1)).expect("valid node");
        sma.link_up(Instant::ZERO, 1);
        let sm = Election::new(c, Instant::ZERO).expect("valid config");
        let mut h = Self {
            sm,
            sma,
            hung: false,
        };
        h.refresh();
        h
    }

    fn refresh(&mut self) {
        if !self.hung {
            self.sma.set_sm_info(Some(self.sm.sm_info()));
        }
    }

    /// An SMInfo SMP arrives at this node's port 1 from LID `from`.
    fn receive(&mut self, now: Instant, mad: &[u8], from: u16) -> Option<[u8; 256]> {
        let resp = self.sma.handle(
            now,
            Rx {
                port: 1,
                slid: from,
            },
            mad,
        );
        while let Some(ev) = self.sma.poll_event() {
            if let SmaEvent::SmInfoSet {
                control,
                sender,
                authenticated,
            } = ev
                && !self.hung
            {
                let req = Requester {
                    m_key_authenticated: authenticated,
                    guid: Some(sender.guid),
                    addr: Some(SmAddr::Lid(from)),
                };
                self.sm.handle_control(now, control, sender, &req);
            }
        }
        self.refresh();
        resp
    }
}

/// Standby `b` (LID 2) follows Master `a` (LID 1) through a's SMA.
fn setup() -> (Host, Election) {
    let mut a = Host::new(cfg(0x10, 9));
    a.sm.begin_sweep(Instant::ZERO);
    a.sm.sweep_complete(Instant::ZERO);
    a.refresh();
    assert_eq!(a.sm.state(), SmState::Master);
    let mut b = Election::new(cfg(0x20, 1), Instant::ZERO).expect("valid config");
    b.begin_sweep(Instant::ZERO);
    b.probe(Instant::ZERO, SmAddr::Lid(1));
    b.sweep_complete(Instant::ZERO);
    (a, b)
}

/// Runs both until `end`: b's MADs go to a's SMA, answers come straight back.
fn run(a: &mut Host, b: &mut Election, end: Instant) -> Vec<(Instant, ElectionEvent)> {
    let mut events = Vec::new();
    let mut now = Instant::ZERO;
    loop {
        while let Some(tx) = b.poll_transmit() {
            assert_eq!(tx.to, SmAddr::Lid(1));
            if let Some(resp) = a.receive(now, &tx.mad, 2) {
                b.handle_response(now, &resp).expect("SMInfo response");
            }
        }
        while let Some(tx) = a.sm.poll_transmit() {
            assert_eq!(tx.to, SmAddr::Lid(2), "only ACKNOWLEDGE goes back to b");
            let resp = b
                .handle_request(now, &tx.mad, &Requester::default())
                .expect("SMInfo request");
            a.sm.handle_response(now, &resp).expect("SMInfo response");
        }
        a.refresh();
        while let Some(e) = b.poll_event() {
            events.push((now, e));
        }
        let next = [
            b.poll_timeout(),
            (!a.hung).then(|| a.sm.poll_timeout()).flatten(),
        ]
        .into_iter()
        .flatten()
        .min();
        match next {
            Some(t) if t <= end => {
                now = t;
                b.handle_timeout(now);
                if !a.hung {
                    a.sm.handle_timeout(now);
                }
            }
            _ => return events,
        }
    }
}

#[test]
fn standby_polls_the_master_through_its_sma() {
    let (mut a, mut b) = setup();
    let ev = run(&mut a, &mut b, Instant::from_secs(5));
    assert_eq!(b.state(), SmState::Standby);
    assert_eq!(b.following(), Some(0x10));
    assert!(
        !ev.iter()
            .any(|(_, e)| matches!(e, ElectionEvent::MasterLost { .. }))
    );
}

#[test]
fn hung_master_behind_a_live_sma_is_detected_by_its_frozen_act_count() {
    let (mut a, mut b) = setup();
    run(&mut a, &mut b, Instant::from_secs(1));
    a.hung = true;
    let ev = run(&mut a, &mut b, Instant::from_secs(3));
    let lost = ev
        .iter()
        .find(|(_, e)| {
            matches!(
                e,
                ElectionEvent::MasterLost {
                    guid: 0x10,
                    stalled: true
                }
            )
        })
        .expect("stall detected");
    // A hung Master still answers, so no poll times out and none is re-probed: the
    // `polling_retries + 1`-th answer in a row with a frozen ActCount loses it, and the
    // first frozen answer can be to the second poll after the hang (the first may
    // still show the count moved). That is up to `(retries + 2) x period`, later than a
    // silent Master's `worst_case_detection` (the next poll, then `retries + 1` rounds
    // of `transaction_timeout`).
    let c = Config::fast(1);
    let hang_bound = c.polling_timeout * (c.polling_retries + 2);
    assert!(hang_bound > c.worst_case_detection());
    assert!(lost.0 <= Instant::from_secs(1) + hang_bound, "{:?}", lost.0);
    assert_eq!(b.state(), SmState::Discovering);
}

#[test]
fn handover_through_the_sma_reaches_the_election() {
    // b outranks a this time: a's sweep finds b and hands over; b acknowledges through
    // a's SMA, then, as Master, disables a through it.
    let mut a = Host::new(cfg(0x10, 1));
    a.sm.begin_sweep(Instant::ZERO);
    a.sm.sweep_complete(Instant::ZERO);
    a.refresh();
    let mut b = Election::new(cfg(0x20, 9), Instant::ZERO).expect("valid config");
    // b learns a from a sweep (a is Master, so b becomes Standby first).
    b.begin_sweep(Instant::ZERO);
    b.probe(Instant::ZERO, SmAddr::Lid(1));
    b.sweep_complete(Instant::ZERO);
    run(&mut a, &mut b, Instant::from_millis(10));
    assert_eq!(b.state(), SmState::Standby);
    // a's HANDOVER arrives at b (b answers directly; b is not behind an SMA here).
    let ho = {
        a.sm.begin_sweep(Instant::from_millis(20));
        a.sm.sm_found(Instant::from_millis(20), Some(SmAddr::Lid(2)), b.sm_info());
        a.sm.sweep_complete(Instant::from_millis(20));
        a.sm.poll_transmit().expect("HANDOVER to b")
    };
    let resp = b
        .handle_request(
            Instant::from_millis(20),
            &ho.mad,
            &Requester {
                m_key_authenticated: true,
                guid: Some(0x10),
                addr: Some(SmAddr::Lid(1)),
            },
        )
        .expect("SMInfo request");
    a.sm.handle_response(Instant::from_millis(20), &resp)
        .expect("SMInfo response");
    a.refresh();
    assert_eq!(b.state(), SmState::Master);
    assert_eq!(a.sm.state(), SmState::Standby);
    // b first reads a's SMInfo through a's SMA: a has stepped down, so b acknowledges.
    let check = b
        .poll_transmit()
        .expect("SubnGet(SMInfo) of the old Master");
    let r = a
        .receive(Instant::from_millis(21), &check.mad, 2)
        .expect("answered");
    assert!(
        b.handle_response(Instant::from_millis(21), &r)
            .expect("response")
    );
    // b's ACKNOWLEDGE goes through a's SMA and reaches a's election.
    let ack = b.poll_transmit().expect("ACKNOWLEDGE");
    assert_eq!(ack.attribute_modifier(), 2);
    let r = a
        .receive(Instant::from_millis(21), &ack.mad, 2)
        .expect("answered");
    assert_eq!(u16::from_be_bytes([r[4], r[5]]), 0);
    assert!(
        core::iter::from_fn(|| a.sm.poll_event())
            .any(|e| e == ElectionEvent::HandoverAcknowledged { guid: 0x20 })
    );
    // b, now Master, disables a through a's SMA.
    b.send_control(
        Instant::from_millis(22),
        SmAddr::Lid(1),
        ibsm_election::SmInfoControl::Disable,
    )
    .expect("Master may send DISABLE");
    let dis = b.poll_transmit().expect("DISABLE");
    let r = a
        .receive(Instant::from_millis(22), &dis.mad, 2)
        .expect("answered");
    b.handle_response(Instant::from_millis(22), &r)
        .expect("response");
    assert_eq!(a.sm.state(), SmState::NotActive);
    assert_eq!(
        ibsm_wire::SmInfo::parse(&r[64..128])
            .expect("SMInfo")
            .sm_state,
        SmState::Standby,
        "the SMA answered with the SMInfo it held when the Set arrived"
    );
}
