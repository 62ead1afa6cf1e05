use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;

use super::*;
use crate::addr::{LidAddress, LocalPort, Received};

const MS: Duration = Duration::from_millis(1);

/// A port on virtual time: answers every MAD (class 0x04, its tag in byte 15) after
/// the tag's latency, refuses the tags in `refuse` with their error, and records
/// every send and every wait. With `paced`, a wait that times out also sleeps (at
/// most 1 ms) on the wall clock, so that virtual time runs about as fast as real
/// time while a worker thread computes.
struct Fake {
    now: Instant,
    latency: HashMap<u8, Duration>,
    refuse: HashMap<u8, TransportError>,
    queue: Vec<(Instant, Incoming)>,
    sent: Vec<(Instant, u8)>,
    waits: Vec<(Instant, Instant)>,
    paced: bool,
}

impl Fake {
    fn new() -> Self {
        Self {
            now: Instant::ZERO,
            latency: HashMap::new(),
            refuse: HashMap::new(),
            queue: Vec::new(),
            sent: Vec::new(),
            waits: Vec::new(),
            paced: false,
        }
    }
}

impl Transport for Fake {
    fn now(&self) -> Instant {
        self.now
    }
    fn local_port(&self) -> LocalPort {
        LocalPort::default()
    }
    fn send(&mut self, addr: &Address, mad: &[u8]) -> Result<(), TransportError> {
        addr.check(mad)?;
        let tag = mad[15];
        if let Some(e) = self.refuse.get(&tag) {
            return Err(e.clone());
        }
        self.sent.push((self.now, tag));
        let mut resp = mad.to_vec();
        resp[3] |= 0x80;
        let at = self.now + self.latency.get(&tag).copied().unwrap_or(MS);
        self.queue.push((
            at,
            Incoming::Mad(Received {
                mad: resp,
                slid: 1,
                sl: 0,
                qpn: 1,
                pkey_index: 0,
                at,
            }),
        ));
        Ok(())
    }
    fn recv(&mut self, deadline: Instant) -> Result<Incoming, TransportError> {
        self.waits.push((self.now, deadline));
        let best = self
            .queue
            .iter()
            .enumerate()
            .min_by_key(|(i, (t, _))| (*t, *i))
            .map(|(i, (t, _))| (i, *t));
        match best {
            Some((i, t)) if t <= deadline => {
                self.now = self.now.max(t);
                Ok(self.queue.remove(i).1)
            }
            _ => {
                if self.paced {
                    thread::sleep(deadline.saturating_duration_since(self.now).min(MS));
                }
                self.now = self.now.max(deadline);
                Err(TransportError::Timeout)
            }
        }
    }
}

/// A job of the test core: sleeps (on a worker, to be slow), then hands back its
/// value and a tag to send.
#[derive(Debug)]
struct Work {
    value: u64,
    sleep: Duration,
    then_send: Option<u8>,
}

impl Job for Work {
    type Output = (u64, Option<u8>);
    fn run(self) -> Self::Output {
        thread::sleep(self.sleep);
        (self.value, self.then_send)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Answer(u8, Instant),
    Refused(u8, TransportError),
    Timer(Instant),
    Job(u64),
}

/// A core that sends tagged requests, reports answers, send errors, one timer and
/// job outputs as events, and logs every input and output in order.
#[derive(Default)]
struct Core {
    out: VecDeque<Outgoing>,
    pending: BTreeSet<u8>,
    timer: Option<Instant>,
    events: VecDeque<Ev>,
    jobs: VecDeque<Work>,
    /// On the answer (or send error) of this tag: queue this tag at once, and this job.
    react: HashMap<u8, (Option<u8>, Work)>,
    log: Vec<String>,
}

impl Core {
    fn send(&mut self, tag: u8) {
        let mut mad = vec![0u8; 24];
        mad[0] = 1;
        mad[1] = 0x04;
        mad[2] = 1;
        mad[3] = 0x01;
        mad[15] = tag;
        self.out.push_back(Outgoing {
            id: Some(TxId(u64::from(tag))),
            addr: Address::Lid(LidAddress::gsi(2, 0)),
            mad,
        });
        self.pending.insert(tag);
    }

    fn react(&mut self, tag: u8) {
        if let Some((send, work)) = self.react.remove(&tag) {
            if let Some(t) = send {
                self.send(t);
            }
            self.jobs.push_back(work);
        }
    }
}

impl SansIo for Core {
    type Event = Ev;
    type Job = Work;

    fn handle_incoming(&mut self, now: Instant, incoming: Incoming) {
        let Incoming::Mad(rx) = incoming else {
            return;
        };
        let tag = rx.mad[15];
        if self.pending.remove(&tag) {
            self.log.push(format!("rx {tag}"));
            self.events.push_back(Ev::Answer(tag, now));
            self.react(tag);
        }
    }

    fn handle_send_error(&mut self, _now: Instant, id: TxId, error: TransportError) {
        let tag = u8::try_from(id.0).unwrap();
        if self.pending.remove(&tag) {
            self.log.push(format!("err {tag}"));
            self.events.push_back(Ev::Refused(tag, error));
            self.react(tag);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.timer.is_some_and(|t| t <= now) {
            self.timer = None;
            self.log.push("timer".into());
            self.events.push_back(Ev::Timer(now));
        }
    }

    fn poll_transmit(&mut self, _now: Instant) -> Option<Outgoing> {
        let out = self.out.pop_front()?;
        self.log.push(format!("tx {}", out.mad[15]));
        Some(out)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.timer
    }

    fn poll_event(&mut self) -> Option<Ev> {
        self.events.pop_front()
    }

    fn is_idle(&self) -> bool {
        self.pending.is_empty() && self.out.is_empty() && self.jobs.is_empty()
    }

    fn poll_job(&mut self) -> Option<Work> {
        self.jobs.pop_front()
    }

    fn handle_job(&mut self, _now: Instant, (value, then): (u64, Option<u8>)) {
        self.log.push(format!("job {value}"));
        self.events.push_back(Ev::Job(value));
        if let Some(t) = then {
            self.send(t);
        }
    }
}

fn work(value: u64, then_send: Option<u8>) -> Work {
    Work {
        value,
        sleep: Duration::ZERO,
        then_send,
    }
}

/// Drives to idle (at most 10 s of virtual time) with an inline runner; the events.
fn run(core: &mut Core, port: &mut Fake) -> (Result<Stopped, TransportError>, Vec<Ev>) {
    let mut events = Vec::new();
    let stop = Stop::when_idle(Instant::from_secs(10));
    let r = drive(core, port, &mut JobRunner::inline(), stop, |e| {
        events.push(e);
        ControlFlow::Continue(())
    });
    (r, events)
}

#[test]
fn events_in_the_order_the_core_emits_them() {
    let mut port = Fake::new();
    port.latency.insert(1, MS * 30);
    port.latency.insert(2, MS * 10);
    port.latency.insert(3, MS * 20);
    let mut core = Core::default();
    for t in 1..=3 {
        core.send(t);
    }
    let (r, events) = run(&mut core, &mut port);
    assert_eq!(r, Ok(Stopped::Idle));
    assert_eq!(
        events,
        vec![
            Ev::Answer(2, Instant::from_millis(10)),
            Ev::Answer(3, Instant::from_millis(20)),
            Ev::Answer(1, Instant::from_millis(30)),
        ]
    );
    // Idle at the last answer: no wait for the deadline.
    assert_eq!(port.now, Instant::from_millis(30));
}

#[test]
fn send_errors_go_back_to_the_core_and_fatal_ones_end_the_drive() {
    let mut port = Fake::new();
    port.refuse.insert(
        2,
        TransportError::Unreachable {
            reason: "no route".into(),
        },
    );
    let mut core = Core::default();
    core.send(1);
    core.send(2);
    core.send(3);
    let (r, events) = run(&mut core, &mut port);
    assert_eq!(r, Ok(Stopped::Idle));
    assert_eq!(
        events[0],
        Ev::Refused(
            2,
            TransportError::Unreachable {
                reason: "no route".into()
            }
        )
    );
    assert_eq!(events.len(), 3);
    assert_eq!(port.sent.iter().map(|s| s.1).collect::<Vec<_>>(), [1, 3]);

    let mut port = Fake::new();
    port.refuse.insert(5, TransportError::Closed);
    let mut core = Core::default();
    core.send(5);
    core.send(6);
    let (r, events) = run(&mut core, &mut port);
    assert_eq!(r, Err(TransportError::Closed));
    assert!(events.is_empty());
    // The core keeps what it had not sent yet.
    assert_eq!(core.out.len(), 1);
}

#[test]
fn stops_on_break_deadline_and_idle() {
    // Break: at once, the other events stay in the core.
    let mut port = Fake::new();
    for t in [1, 2] {
        port.refuse.insert(
            t,
            TransportError::Unreachable {
                reason: "no route".into(),
            },
        );
    }
    let mut core = Core::default();
    core.send(1);
    core.send(2);
    let mut seen = 0;
    let r = drive(
        &mut core,
        &mut port,
        &mut JobRunner::inline(),
        Stop::when_idle(Instant::from_secs(10)),
        |_| {
            seen += 1;
            ControlFlow::Break(())
        },
    );
    assert_eq!((r, seen), (Ok(Stopped::Break), 1));
    assert_eq!(core.events.len(), 1);

    // Deadline: a core that is never idle (an answer never comes) and a timer beyond
    // the deadline; the timer before it fires on time.
    let mut port = Fake::new();
    port.latency.insert(1, Duration::from_secs(60));
    let mut core = Core::default();
    core.send(1);
    core.timer = Some(Instant::from_millis(400));
    let mut events = Vec::new();
    let r = drive(
        &mut core,
        &mut port,
        &mut JobRunner::inline(),
        Stop::when_idle(Instant::from_secs(1)),
        |e| {
            events.push(e);
            ControlFlow::Continue(())
        },
    );
    assert_eq!(r, Ok(Stopped::Deadline));
    assert_eq!(port.now, Instant::from_secs(1));
    assert_eq!(events, vec![Ev::Timer(Instant::from_millis(400))]);

    // Stop::at ignores idleness: an idle core runs to the deadline.
    let mut port = Fake::new();
    let mut core = Core::default();
    let r = drive(
        &mut core,
        &mut port,
        &mut JobRunner::inline(),
        Stop::at(Instant::from_secs(2)),
        |_| ControlFlow::Continue(()),
    );
    assert_eq!(r, Ok(Stopped::Deadline));
    assert_eq!(port.now, Instant::from_secs(2));
}

#[test]
fn inline_jobs_are_applied_before_the_next_transmit() {
    // The answer to 1 queues MAD 2 at once and a job whose output sends 3: the job's
    // output is in before MAD 2 leaves.
    let mut port = Fake::new();
    let mut core = Core::default();
    core.send(1);
    core.react.insert(1, (Some(2), work(7, Some(3))));
    let (r, events) = run(&mut core, &mut port);
    assert_eq!(r, Ok(Stopped::Idle));
    assert_eq!(
        core.log,
        ["tx 1", "rx 1", "job 7", "tx 2", "tx 3", "rx 2", "rx 3"]
    );
    assert_eq!(events[1], Ev::Job(7));

    // The same after a send error, an input in the middle of the transmit loop.
    let mut port = Fake::new();
    port.refuse.insert(
        1,
        TransportError::Unreachable {
            reason: "no route".into(),
        },
    );
    let mut core = Core::default();
    core.send(1);
    core.send(2);
    core.react.insert(1, (None, work(9, Some(4))));
    let (r, _) = run(&mut core, &mut port);
    assert_eq!(r, Ok(Stopped::Idle));
    assert_eq!(core.log[..5], ["tx 1", "err 1", "job 9", "tx 2", "tx 4"]);
}

#[test]
fn a_threaded_job_runs_while_mads_flow_and_its_output_is_applied() {
    let mut port = Fake::new();
    port.paced = true;
    port.latency.insert(1, MS * 5);
    let mut core = Core::default();
    core.send(1);
    core.jobs.push_back(Work {
        value: 42,
        sleep: MS * 200,
        then_send: Some(2),
    });
    let mut jobs = JobRunner::new(JobPolicy::Threads(NonZeroUsize::new(2).unwrap()));
    let mut events = Vec::new();
    let r = drive(
        &mut core,
        &mut port,
        &mut jobs,
        Stop::when_idle(Instant::from_secs(100)),
        |e| {
            events.push(e);
            ControlFlow::Continue(())
        },
    );
    // Idle only once the job's output was in and the MAD it asked for answered; not
    // at the deadline, which an uncapped wait would have jumped to.
    assert_eq!(r, Ok(Stopped::Idle));
    assert!(port.now < Instant::from_secs(100), "{:?}", port.now);
    assert_eq!(jobs.running(), 0);
    assert!(matches!(events[0], Ev::Answer(1, _)), "{events:?}");
    assert_eq!(events[1], Ev::Job(42));
    assert!(matches!(events[2], Ev::Answer(2, _)), "{events:?}");
    assert_eq!(core.log, ["tx 1", "rx 1", "job 42", "tx 2", "rx 2"]);
    // Every wait while the job ran was at most JOB_POLL.
    let job_in = port.sent.iter().find(|s| s.1 == 2).unwrap().0;
    assert!(
        port.waits
            .iter()
            .filter(|(at, _)| *at < job_in)
            .all(|&(at, until)| until.saturating_duration_since(at) <= JOB_POLL)
    );
}

#[test]
fn a_job_still_running_at_the_deadline_is_applied_by_the_next_drive() {
    let mut port = Fake::new();
    port.paced = true;
    let mut core = Core::default();
    core.jobs.push_back(Work {
        value: 5,
        sleep: MS * 50,
        then_send: None,
    });
    let mut jobs = JobRunner::new(JobPolicy::Threads(NonZeroUsize::MIN));
    let mut events = Vec::new();
    let mut on = |e: Ev| {
        events.push(e);
        ControlFlow::Continue(())
    };
    let r = drive(
        &mut core,
        &mut port,
        &mut jobs,
        Stop::at(Instant::ZERO),
        &mut on,
    );
    assert_eq!(r, Ok(Stopped::Deadline));
    assert_eq!(jobs.running(), 1);
    thread::sleep(MS * 100);
    let r = drive(
        &mut core,
        &mut port,
        &mut jobs,
        Stop::when_idle(Instant::from_secs(100)),
        &mut on,
    );
    assert_eq!(r, Ok(Stopped::Idle));
    assert_eq!(events, [Ev::Job(5)]);
}

/// A job that counts its runs.
struct Count(Arc<AtomicUsize>, Duration, usize);

impl Job for Count {
    type Output = usize;
    fn run(self) -> usize {
        thread::sleep(self.1);
        self.0.fetch_add(1, Ordering::SeqCst);
        self.2
    }
}

#[test]
fn inline_runner_runs_at_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut r = JobRunner::inline();
    assert_eq!(
        r.start(Count(Arc::clone(&runs), Duration::ZERO, 3)),
        Some(3)
    );
    assert_eq!((r.running(), r.poll_done()), (0, None));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn threaded_runner_uses_at_most_its_workers_and_returns_every_output() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut r = JobRunner::new(JobPolicy::Threads(NonZeroUsize::new(2).unwrap()));
    for i in 0..6 {
        assert_eq!(r.start(Count(Arc::clone(&runs), MS * 5, i)), None);
    }
    assert_eq!(r.running(), 6);
    let mut got = Vec::new();
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while got.len() < 6 && std::time::Instant::now() < end {
        match r.poll_done() {
            Some(v) => got.push(v),
            None => thread::sleep(MS),
        }
    }
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3, 4, 5]);
    assert_eq!(r.running(), 0);
    assert_eq!(r.pool.as_ref().unwrap().workers, 2);
    assert!(format!("{r:?}").contains("workers: 2"));
}

#[test]
fn dropping_the_runner_does_not_wait_and_drops_queued_jobs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut r = JobRunner::new(JobPolicy::Threads(NonZeroUsize::MIN));
    r.start(Count(Arc::clone(&runs), MS * 200, 0));
    r.start(Count(Arc::clone(&runs), Duration::ZERO, 1));
    // Let the worker take the first job.
    thread::sleep(MS * 20);
    let t = std::time::Instant::now();
    drop(r);
    assert!(t.elapsed() < MS * 100, "{:?}", t.elapsed());
    // The running one finishes on its detached thread; the queued one never runs.
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while runs.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < end {
        thread::sleep(MS);
    }
    thread::sleep(MS * 100);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

struct Boom;

impl Job for Boom {
    type Output = ();
    fn run(self) {
        panic!("boom");
    }
}

#[test]
#[should_panic(expected = "boom")]
fn a_threaded_jobs_panic_reaches_the_driver() {
    let mut r = JobRunner::new(JobPolicy::Threads(NonZeroUsize::MIN));
    r.start(Boom);
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < end {
        if r.poll_done().is_some() {
            return;
        }
        thread::sleep(MS);
    }
}
