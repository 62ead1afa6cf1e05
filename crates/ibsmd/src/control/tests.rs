use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;

use super::*;

#[test]
fn requests_parse_and_print_back() {
    let all = [
        Request::Status,
        Request::Sweep { heavy: false },
        Request::Sweep { heavy: true },
        Request::Rebalance,
        Request::Dump,
        Request::LogLevel(Level::Error),
        Request::LogLevel(Level::Warn),
        Request::LogLevel(Level::Info),
        Request::LogLevel(Level::Debug),
        Request::LogLevel(Level::Trace),
        Request::Port {
            op: PortOp::Isolate,
            target: PortTarget {
                node: 0x0002_c903_0000_1234,
                port: 7,
            },
        },
        Request::Port {
            op: PortOp::Clear,
            target: PortTarget { node: 1, port: 254 },
        },
    ];
    for r in all {
        assert_eq!(proto::parse(r.to_string().as_bytes()), Ok(r), "{r}");
    }
    assert_eq!(
        proto::parse(b"  sweep\theavy \r"),
        Ok(Request::Sweep { heavy: true })
    );
}

#[test]
fn garbage_gets_a_typed_error() {
    let long = vec![b'a'; proto::MAX_LINE + 1];
    let cases: Vec<(&[u8], ParseError)> = vec![
        (b"", ParseError::Empty),
        (b" \t\r", ParseError::Empty),
        (b"stat", ParseError::UnknownCommand("stat".into())),
        (b"STATUS", ParseError::UnknownCommand("STATUS".into())),
        (
            b"status now",
            ParseError::UnexpectedArgument {
                command: "status",
                argument: "now".into(),
            },
        ),
        (
            b"sweep light",
            ParseError::UnexpectedArgument {
                command: "sweep",
                argument: "light".into(),
            },
        ),
        (
            b"sweep heavy twice",
            ParseError::UnexpectedArgument {
                command: "sweep heavy",
                argument: "twice".into(),
            },
        ),
        (b"log-level", ParseError::MissingLevel),
        (b"log-level loud", ParseError::UnknownLevel("loud".into())),
        (
            b"log-level info x",
            ParseError::UnexpectedArgument {
                command: "log-level",
                argument: "x".into(),
            },
        ),
        (b"port", ParseError::MissingPortOp),
        (b"port drop 0x1/1", ParseError::UnknownPortOp("drop".into())),
        (b"port isolate", ParseError::MissingTarget),
        (
            b"port isolate 0x1",
            ParseError::BadTarget {
                target: "0x1".into(),
                why: proto::TargetError::NoSlash,
            },
        ),
        (
            b"port clear 0xg/1",
            ParseError::BadTarget {
                target: "0xg/1".into(),
                why: proto::TargetError::BadGuid,
            },
        ),
        (
            b"port clear 11111111111111111/1",
            ParseError::BadTarget {
                target: "11111111111111111/1".into(),
                why: proto::TargetError::BadGuid,
            },
        ),
        (
            b"port isolate 0x1/255",
            ParseError::BadTarget {
                target: "0x1/255".into(),
                why: proto::TargetError::BadPort,
            },
        ),
        (
            b"port isolate 0x1/-1",
            ParseError::BadTarget {
                target: "0x1/-1".into(),
                why: proto::TargetError::BadPort,
            },
        ),
        (
            b"port isolate 0x1/2 now",
            ParseError::UnexpectedArgument {
                command: "port isolate",
                argument: "now".into(),
            },
        ),
        (b"\xff\xfe", ParseError::NotText),
        (&long, ParseError::TooLong { len: long.len() }),
    ];
    for (line, want) in cases {
        let got = proto::parse(line);
        assert_eq!(got, Err(want), "{:?}", String::from_utf8_lossy(line));
        let _ = got.unwrap_err().to_string();
    }
}

#[derive(Default)]
struct Mock {
    sweeps: Vec<bool>,
    levels: Vec<Level>,
    /// What `sweep` answers, when set (else `heavy {heavy}`).
    sweep_message: Option<String>,
    /// Where `dump`'s outcomes go, when set (else "dumped" at once).
    dump_outcome: Option<std::sync::mpsc::Receiver<Outcome>>,
}

impl Host for Mock {
    fn status(&mut self) -> Status {
        Status {
            role: "MASTER".into(),
            sm_lid: 7,
            ..Status::default()
        }
    }
    fn sweep(&mut self, heavy: bool) -> Outcome {
        self.sweeps.push(heavy);
        Ok(self
            .sweep_message
            .clone()
            .unwrap_or_else(|| format!("heavy {heavy}")))
    }
    fn rebalance(&mut self) -> Outcome {
        Err(Refusal::NotMaster("STANDBY"))
    }
    fn dump(&mut self) -> Result<std::sync::mpsc::Receiver<Outcome>, Refusal> {
        if let Some(rx) = self.dump_outcome.take() {
            return Ok(rx);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(Ok("dumped".into())).unwrap();
        Ok(rx)
    }
    fn set_log_level(&mut self, level: Level) -> Outcome {
        self.levels.push(level);
        Ok(level.as_str().into())
    }
    fn port(&mut self, op: PortOp, target: PortTarget) -> Outcome {
        Ok(format!("{} {target}", op.as_str()))
    }
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ibsmd-ctl-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Serves `server` with `host` until `client` (run on its own thread) returns.
fn serve_until<T: Send + 'static>(
    server: &mut ControlServer,
    host: &mut Mock,
    client: impl FnOnce() -> T + Send + 'static,
) -> T {
    let t = std::thread::spawn(client);
    while !t.is_finished() {
        server.poll(|req| answer(host, req));
        std::thread::sleep(Duration::from_millis(5));
    }
    t.join().unwrap()
}

#[test]
fn server_answers_every_line_and_survives_garbage() {
    let dir = tmp("serve");
    let path = dir.join("ibsmd.sock");
    let mut server = ControlServer::bind(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    // Only the socket is left beside it (the private directory is gone).
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    let mut host = Mock::default();
    let p = path.clone();
    let lines = serve_until(&mut server, &mut host, move || {
        let mut s = UnixStream::connect(&p).unwrap();
        // One request split over two writes, garbage, an over-long line, then more.
        s.write_all(b"swe").unwrap();
        std::thread::sleep(Duration::from_millis(30));
        s.write_all(b"ep heavy\nbogus\n\xff\n").unwrap();
        s.write_all(&vec![b'x'; 3 * proto::MAX_LINE]).unwrap();
        s.write_all(b"\nstatus\nlog-level debug\nrebalance\n")
            .unwrap();
        let mut r = BufReader::new(s);
        (0..7)
            .map(|_| {
                let mut l = String::new();
                r.read_line(&mut l).unwrap();
                serde_json::from_str::<Response>(&l).unwrap()
            })
            .collect::<Vec<_>>()
    });
    assert_eq!(lines[0], Response::done("heavy true"));
    assert!(!lines[1].ok && lines[1].error.as_ref().unwrap().contains("unknown command"));
    assert_eq!(lines[2].error.as_deref(), Some("request is not UTF-8 text"));
    assert!(
        lines[3].error.as_ref().unwrap().contains("longest is"),
        "{:?}",
        lines[3]
    );
    assert_eq!(lines[4].status.as_ref().unwrap().sm_lid, 7);
    assert_eq!(lines[5], Response::done("debug"));
    assert_eq!(
        lines[6],
        Response::failed("not Master (STANDBY): the master sweeps")
    );
    assert_eq!(host.sweeps, [true]);
    assert_eq!(host.levels, [Level::Debug]);
    // The client library against the same server, after that client left.
    let p = path.clone();
    let r = serve_until(&mut server, &mut host, move || {
        request(&p, Request::Dump, Duration::from_secs(5))
    })
    .unwrap();
    assert_eq!(r, Response::done("dumped"));
    drop(server);
    assert!(!path.exists(), "the socket is removed on drop");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bind_replaces_a_stale_socket_only() {
    let dir = tmp("bind");
    let path = dir.join("s.sock");
    // A socket nobody listens on any more.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let live = ControlServer::bind(&path).unwrap();
    let e = ControlServer::bind(&path).unwrap_err();
    assert_eq!(e.source.kind(), ErrorKind::AddrInUse, "{e}");
    assert!(e.to_string().contains("s.sock"));
    drop(live);
    std::fs::write(&path, "not a socket").unwrap();
    let e = ControlServer::bind(&path).unwrap_err();
    assert_eq!(e.source.kind(), ErrorKind::AlreadyExists, "{e}");
    let e = request(
        &dir.join("none.sock"),
        Request::Status,
        Duration::from_secs(1),
    )
    .unwrap_err();
    assert!(matches!(e, ClientError::Connect(..)), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One response line from `s` (read with a time-out, so a server that never answers
/// fails the test instead of hanging it).
fn read_response(mut s: &UnixStream) -> Response {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // Byte by byte: a buffered reader would take the next line with it.
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while line.last() != Some(&b'\n') {
        s.read_exact(&mut b).unwrap();
        line.push(b[0]);
    }
    serde_json::from_slice(&line).unwrap()
}

/// A client that sends requests and never reads, with an answer far larger than a
/// socket's buffer: each poll returns with that answer still queued (the socket takes
/// what it can), its next request waits behind it, another client is answered
/// meanwhile, and once it has taken nothing for `CLIENT_STALL` it is dropped.
#[test]
fn a_client_that_never_reads_holds_up_nobody() {
    let dir = tmp("stall");
    let path = dir.join("ibsmd.sock");
    let mut server = ControlServer::bind(&path).unwrap();
    let mut host = Mock {
        sweep_message: Some("x".repeat(8 << 20)),
        ..Mock::default()
    };
    let mut slow = UnixStream::connect(&path).unwrap();
    slow.write_all(b"sweep\nsweep heavy\n").unwrap();
    let start = std::time::Instant::now();
    server.poll_at(start, |req| answer(&mut host, req));
    let left = server.unwritten();
    assert_eq!(left.len(), 1, "the client is still served");
    assert!(left[0] > 0, "its answer waits for it: {left:?}");
    // Polling again takes nothing more from it: one answer at a time.
    server.poll_at(start, |req| answer(&mut host, req));
    assert_eq!(
        host.sweeps,
        [false],
        "the next request waits behind the answer"
    );
    // Another client gets its answer.
    let quick = UnixStream::connect(&path).unwrap();
    (&quick).write_all(b"status\n").unwrap();
    server.poll_at(start, |req| answer(&mut host, req));
    assert_eq!(read_response(&quick).status.unwrap().sm_lid, 7);
    // Still nothing taken after the bound: the slow client goes, the other stays.
    server.poll_at(start + CLIENT_STALL, |req| answer(&mut host, req));
    assert_eq!(server.unwritten(), [0]);
    let mut got = Vec::new();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    slow.read_to_end(&mut got).unwrap();
    assert!(got.len() < (8 << 20), "cut short: {}", got.len());
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An answer worked out elsewhere (a dump being written) is sent when it comes, and
/// the answers after it wait for it: one line per request, in order.
#[test]
fn a_later_answer_keeps_its_place() {
    let dir = tmp("later");
    let path = dir.join("ibsmd.sock");
    let mut server = ControlServer::bind(&path).unwrap();
    let (outcome, rx) = std::sync::mpsc::channel();
    let mut host = Mock {
        dump_outcome: Some(rx),
        ..Mock::default()
    };
    let client = UnixStream::connect(&path).unwrap();
    (&client).write_all(b"dump\nstatus\n").unwrap();
    server.poll(|req| answer(&mut host, req));
    server.poll(|req| answer(&mut host, req));
    client.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let e = (&client).read(&mut byte).unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::WouldBlock,
        "nothing before the dump's outcome"
    );
    client.set_nonblocking(false).unwrap();
    let full = ibsm::manager::dump::DumpError {
        path: PathBuf::from("/d/opensm-lfts.dump"),
        source: std::io::Error::other("disk full"),
    };
    outcome
        .send(Err(Refusal::Dump(std::sync::Arc::new(full))))
        .unwrap();
    server.poll(|req| answer(&mut host, req));
    assert_eq!(
        read_response(&client),
        Response::failed("dump: /d/opensm-lfts.dump: disk full")
    );
    server.poll(|req| answer(&mut host, req));
    assert_eq!(read_response(&client).status.unwrap().sm_lid, 7);
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}
