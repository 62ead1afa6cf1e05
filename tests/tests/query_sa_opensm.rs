//! Peer test: `ibsm-query`'s SA client asks OpenSM's SA (on ibsim, through the umad2sim
//! preload) for NodeRecords, PortInfoRecords and PathRecords, and gets exactly what
//! `saquery` gets from the same SA, from the same node.
//!
//! The preload carries no RMPP: OpenSM hands its tables to the kernel to segment, so
//! under ibsim both `saquery` and our client receive the first 200 data bytes of each
//! table as one MAD. The preload also leaves garbage in the last bytes of a MAD it
//! delivers (from about byte 224 on, differently in each process), so the records
//! compared are those lying wholly inside the first 168 data bytes (MAD bytes 56..224).
//! Multi-segment transfers are proven against the engine's SA in `query_sa_sim.rs`.

use std::net::Ipv6Addr;
use std::time::Duration;

use ibsm_tests::peer::{PeerFabric, client, run_bounded, start_opensm};
use ibsm_tests::{IBSIM, PRELOAD, peers_present};

const OPENSM: &str = "/usr/sbin/opensm";
const SAQUERY: &str = "/usr/sbin/saquery";
const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n[3]\t\"Sw2\"[3]\n\n\
Switch\t8 \"Sw2\"\n[1]\t\"Hca3\"[1]\n[2]\t\"Hca4\"[1]\n[3]\t\"Sw1\"[3]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n\n\
Hca\t1 \"Hca3\"\n[1]\t\"Sw2\"[1]\n\nHca\t1 \"Hca4\"\n[1]\t\"Sw2\"[2]\n";

/// `saquery ARGS` on Hca4; its stdout.
fn saquery(f: &PeerFabric, args: &[&str]) -> String {
    let mut c = client(f, SAQUERY, Some("Hca4"), "diag");
    c.args(args);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "saquery {args:?} failed:\n{err}\n{out}");
    out
}

/// The values of `keys` in each `<record> dump:` block of saquery's output, in order.
fn dumps(text: &str, keys: &[&str]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for line in text.lines() {
        if line.ends_with(" dump:") && !line.starts_with(char::is_whitespace) {
            out.push(vec![String::new(); keys.len()]);
            continue;
        }
        let t = line.trim();
        for (i, k) in keys.iter().enumerate() {
            if let (Some(rest), Some(rec)) = (t.strip_prefix(k), out.last_mut())
                && rest.starts_with('.')
            {
                rec[i] = rest.trim_start_matches(['.', ':']).trim().to_string();
            }
        }
    }
    out
}

/// Records of `stride` bytes lying wholly in the reliable first 168 data bytes.
fn reliable<T>(mut v: Vec<T>, stride: usize) -> Vec<T> {
    v.truncate(168 / stride);
    v
}

fn num(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => s.parse().unwrap(),
    }
}

#[test]
fn our_sa_client_reads_what_saquery_reads_from_opensm() {
    let peer = env!("CARGO_BIN_EXE_sa-query-peer");
    if !peers_present("query_sa_opensm", &[IBSIM, PRELOAD, OPENSM, SAQUERY]) {
        return;
    }
    let mut f = PeerFabric::start("query_sa", NET);
    start_opensm(&mut f, "Hca1", 0, &[]);

    let c = client(&f, peer, Some("Hca4"), "query");
    let (ok, out, err) = run_bounded(c, Duration::from_secs(60));
    assert!(ok, "sa-query-peer failed:\n{err}\n{out}");
    assert!(!out.contains("error"), "{out}");

    let ours = |kind: &str| -> Vec<Vec<String>> {
        out.lines()
            .filter_map(|l| l.strip_prefix(kind))
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect()
    };

    // NodeRecords: LID, node GUID, port GUID, description.
    let theirs: Vec<(u64, u64, u64, String)> = dumps(
        &saquery(&f, &[]),
        &["lid", "node_guid", "port_guid", "NodeDescription"],
    )
    .into_iter()
    .map(|r| (num(&r[0]), num(&r[1]), num(&r[2]), r[3].clone()))
    .collect();
    let mine: Vec<(u64, u64, u64, String)> = ours("node ")
        .into_iter()
        .map(|r| (num(&r[0]), num(&r[1]), num(&r[2]), r[3..].join(" ")))
        .collect();
    assert_eq!(mine.len(), theirs.len(), "NodeRecord counts differ");
    let (mine, theirs) = (reliable(mine, 112), reliable(theirs, 112));
    assert!(!mine.is_empty());
    assert_eq!(mine, theirs, "NodeRecords differ");

    // PortInfoRecords: end-port LID and port number.
    let theirs: Vec<(u64, u64)> = dumps(&saquery(&f, &["PIR"]), &["EndPortLid", "PortNum"])
        .into_iter()
        .map(|r| (num(&r[0]), num(&r[1])))
        .collect();
    let mine: Vec<(u64, u64)> = ours("portinfo ")
        .into_iter()
        .map(|r| (num(&r[0]), num(&r[1])))
        .collect();
    assert_eq!(mine.len(), theirs.len(), "PortInfoRecord counts differ");
    let (mine, theirs) = (reliable(mine, 72), reliable(theirs, 72));
    assert_eq!(mine.len(), 2);
    assert_eq!(mine, theirs, "PortInfoRecords differ");

    // PathRecords: SLID and DLID.
    let theirs: Vec<(u64, u64, String, String)> =
        dumps(&saquery(&f, &["-p"]), &["slid", "dlid", "sgid", "dgid"])
            .into_iter()
            .map(|r| (num(&r[0]), num(&r[1]), r[2].clone(), r[3].clone()))
            .collect();
    let mine: Vec<(u64, u64, String, String)> = ours("path ")
        .into_iter()
        .map(|r| (num(&r[0]), num(&r[1]), short_gid(&r[2]), short_gid(&r[3])))
        .collect();
    assert_eq!(mine.len(), theirs.len(), "PathRecord counts differ");
    let (mine, theirs) = (reliable(mine, 64), reliable(theirs, 64));
    assert_eq!(mine.len(), 2);
    assert_eq!(mine, theirs, "PathRecords differ");
}

/// A GID as saquery prints it (IPv6 shorthand).
fn short_gid(g: &str) -> String {
    g.parse::<Ipv6Addr>()
        .map_or_else(|_| g.to_string(), |a| a.to_string())
}
