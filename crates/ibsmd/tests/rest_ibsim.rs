//! Peer test: `ibsmd --rest` on an ibsim fabric, driven with the requests
//! Mellanox/ib-kubernetes's UFM plugin (`pkg/sm/plugins/ufm/ufm.go`) makes: the same
//! method, path, headers (basic auth, `Content-Type: application/json;
//! charset=utf-8`) and bodies byte for byte, over HTTPS with a certificate the test
//! makes with `openssl` (plain HTTP with `--rest-insecure` where there is no openssl).
//!
//! A change shows in `smpquery pkeys` once the heavy sweep it asked for is done, and in
//! the PathRecords `saquery` answers; a wrong password gets 401 and a bad body 400,
//! with nothing changed; 100 changes in a row are applied by a few heavy sweeps
//! (counted, with their P_Key Sets, and printed); after 1,000 add/remove cycles, with
//! SIGHUPs and a hand edit of the file among them, the partitions file and every CA's
//! P_Key table say what the last requests and the hand edit said.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibsm_tests::peer::{PeerFabric, diag_at, dotted_field, start_ibsmd, stop_ibsmd};
use ibsm_tests::{IBSIM, PRELOAD, peers_present, wait_for};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");
const SMPQUERY: &str = "/usr/sbin/smpquery";
const SAQUERY: &str = "/usr/sbin/saquery";

const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n[3]\t\"Sw2\"[3]\n\n\
Switch\t8 \"Sw2\"\n[1]\t\"Hca3\"[1]\n[2]\t\"Hca4\"[1]\n[3]\t\"Sw1\"[3]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n\n\
Hca\t1 \"Hca3\"\n[1]\t\"Sw2\"[1]\n\nHca\t1 \"Hca4\"\n[1]\t\"Sw2\"[2]\n";

/// Every CA a limited member of the default partition (so two CAs share a partition
/// only through the API's), the switches and the SM full ones.
const START: &str = "# by hand: the default partition\n\
Default=0x7fff : ALL=limited, ALL_SWITCHES=full, SELF=full ;\n";

const USER: &str = "k8s";
const PASSWORD: &str = "s3cret-pw";

/// The mark ibsmd logs when it hands the API's changes to the engine.
const APPLIED: &str = "partition API: partitions changed";

/// The valid entries `smpquery pkeys` printed.
fn pkeys(text: &str) -> BTreeSet<u16> {
    text.lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()) && l.contains(':'))
        .flat_map(|l| l.split_once(':').map_or("", |(_, r)| r).split_whitespace())
        .filter_map(|w| u16::from_str_radix(w.trim_start_matches("0x"), 16).ok())
        .filter(|k| k & 0x7fff != 0)
        .collect()
}

/// A GUID as the plugin sends it: `net.HardwareAddr.String()` without the colons.
fn plugin_guid(g: u64) -> String {
    format!("{g:016x}")
}

/// ufm.go's AddGuidsToPKey body.
fn add_body(pkey: u16, guids: &[u64]) -> String {
    let g: Vec<String> = guids
        .iter()
        .map(|g| format!("\"{}\"", plugin_guid(*g)))
        .collect();
    format!(
        "{{\"pkey\": \"0x{pkey:04X}\", \"index0\": true, \"ip_over_ib\": true, \"membership\": \"full\", \"guids\": [{}]}}",
        g.join(",")
    )
}

/// ufm.go's RemoveGuidsFromPKey body.
fn remove_body(pkey: u16, guids: &[u64]) -> String {
    let g: Vec<String> = guids
        .iter()
        .map(|g| format!("\"{}\"", plugin_guid(*g)))
        .collect();
    format!(
        "{{\"pkey\": \"0x{pkey:04X}\", \"guids\": [{}]}}",
        g.join(",")
    )
}

/// The plugin's HTTP driver, as `pkg/drivers/http/client.go` makes its requests.
struct Plugin {
    agent: ureq::Agent,
    base: String,
}

impl Plugin {
    fn request(&self, method: &str, path: &str, body: Option<&str>, pw: &str) -> (u16, String) {
        // Go's SetBasicAuth: "Basic " and the base64 of "user:password".
        let auth = format!(
            "Basic {}",
            String::from_utf8(base64(format!("{USER}:{pw}").as_bytes())).unwrap()
        );
        let req = self
            .agent
            .request(method, &format!("{}{path}", self.base))
            .set("Authorization", &auth)
            .set("Content-Type", "application/json; charset=utf-8");
        let r = match body {
            Some(b) => req.send_string(b),
            None => req.call(),
        };
        match r {
            Ok(r) => (r.status(), r.into_string().unwrap()),
            Err(ureq::Error::Status(c, r)) => (c, r.into_string().unwrap()),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    fn add(&self, pkey: u16, guids: &[u64]) {
        let (c, b) = self.request(
            "POST",
            "/ufmRest/resources/pkeys",
            Some(&add_body(pkey, guids)),
            PASSWORD,
        );
        assert_eq!(c, 200, "{b}");
    }

    fn remove(&self, pkey: u16, guids: &[u64]) {
        let (c, b) = self.request(
            "POST",
            "/ufmRest/actions/remove_guids_from_pkey",
            Some(&remove_body(pkey, guids)),
            PASSWORD,
        );
        assert_eq!(c, 200, "{b}");
    }
}

fn base64(b: &[u8]) -> Vec<u8> {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = Vec::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            s.push(if i <= c.len() {
                A[(n >> (18 - 6 * i)) as usize & 63]
            } else {
                b'='
            });
        }
    }
    s
}

/// Waits until ibsmd has handed more than `marks` API changes to the engine and a
/// heavy sweep after the last of them was followed by a light sweep that found
/// nothing to do; returns (heavy sweeps, P_Key blocks written) after mark `marks`.
fn applied(f: &PeerFabric, marks: usize) -> (usize, u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let log = f.read("ibsmd.err");
        let n = log.matches(APPLIED).count();
        if n > marks {
            let last = log.rfind(APPLIED).unwrap();
            let rest = &log[last..];
            let settled = rest
                .find("SUBNET UP (")
                .is_some_and(|at| rest[at..].contains("light sweep: nothing to do"));
            if settled {
                let since = log.match_indices(APPLIED).nth(marks).unwrap().0;
                let ups: Vec<&str> = log[since..]
                    .lines()
                    .filter(|l| l.contains("SUBNET UP ("))
                    .collect();
                let blocks = ups
                    .iter()
                    .map(|l| {
                        let v = l.rsplit("P_Key blocks ").next().unwrap_or("0");
                        v.trim().parse::<u64>().unwrap_or_else(|_| panic!("{l}"))
                    })
                    .sum();
                return (ups.len(), blocks);
            }
        }
        assert!(Instant::now() < deadline, "changes not applied:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_ufm_plugins_requests_drive_partitions_on_ibsim() {
    if !peers_present("rest_ibsim", &[IBSIM, PRELOAD, SMPQUERY, SAQUERY]) {
        return;
    }
    let f = PeerFabric::start("rest", NET);
    let hosts = ["Hca1", "Hca2", "Hca3", "Hca4"];
    let guid: Vec<u64> = hosts
        .iter()
        .map(|h| {
            dotted_field(
                &diag_at(&f, h, SMPQUERY, &["-D", "nodeinfo", "0"]),
                "PortGuid",
            )
        })
        .collect();
    let file = f.path("partitions.conf");
    std::fs::write(&file, START).unwrap();
    let creds = f.path("rest-users");
    std::fs::write(&creds, format!("# the orchestrator\n{USER}:{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (cert, key) = (f.path("rest-cert.pem"), f.path("rest-key.pem"));
    let tls = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .output()
        .is_ok_and(|o| o.status.success());
    let p = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let mut args = vec![
        "--time-limit".to_owned(),
        "900".into(),
        "--partitions".into(),
        p(&file),
        "--rest".into(),
        "127.0.0.1:0".into(),
        "--rest-credentials".into(),
        p(&creds),
    ];
    if tls {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        args.extend(["--rest-cert".into(), p(&cert), "--rest-key".into(), p(&key)]);
    } else {
        eprintln!("rest_ibsim: no openssl command; plain HTTP (--rest-insecure)");
        args.push("--rest-insecure".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let sm = start_ibsmd(&f, IBSMD, "Hca1", 0, &args);
    let log = wait_for(
        &f.path("ibsmd.err"),
        "partition API on ",
        Duration::from_secs(30),
    );
    let url = log
        .split("partition API on ")
        .nth(1)
        .and_then(|r| r.split("/ufmRest/").next())
        .unwrap()
        .to_owned();
    wait_for(&f.path("ibsmd.err"), "SUBNET UP (", Duration::from_secs(30));
    let agent = if tls {
        use rustls_pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls_pki_types::CertificateDer::pem_file_iter(&cert).unwrap() {
            roots.add(c.unwrap()).unwrap();
        }
        let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        ureq::AgentBuilder::new().tls_config(Arc::new(cfg)).build()
    } else {
        ureq::AgentBuilder::new().build()
    };
    let plugin = Plugin { agent, base: url };
    assert!(
        plugin
            .base
            .starts_with(if tls { "https://" } else { "http://" })
    );

    let lid: Vec<u64> = hosts
        .iter()
        .map(|h| {
            dotted_field(
                &diag_at(&f, h, SMPQUERY, &["-D", "portinfo", "0", "1"]),
                "Lid",
            )
        })
        .collect();
    let table = |i: usize| {
        pkeys(&diag_at(
            &f,
            "Hca1",
            SMPQUERY,
            &["pkeys", &lid[i].to_string()],
        ))
    };
    let path_pkey = |s: usize, d: usize| -> Option<u64> {
        let out = diag_at(
            &f,
            "Hca4",
            SAQUERY,
            &[
                "PR",
                "--slid",
                &lid[s].to_string(),
                "--dlid",
                &lid[d].to_string(),
            ],
        );
        out.contains("PathRecord dump")
            .then(|| dotted_field(&out, "pkey"))
    };
    assert_eq!(
        path_pkey(1, 2),
        None,
        "Hca2 and Hca3 share no partition yet"
    );

    // Validate(): the version.
    let (c, body) = plugin.request("GET", "/ufmRest/app/ufm_version", None, PASSWORD);
    assert_eq!(c, 200, "{body}");

    // Refused: nothing changes.
    let tables: Vec<BTreeSet<u16>> = (0..4).map(table).collect();
    let add = add_body(0x000A, &[guid[1], guid[2]]);
    let (c, body) = plugin.request("POST", "/ufmRest/resources/pkeys", Some(&add), "wrong");
    assert_eq!(c, 401, "{body}");
    for bad in [
        add.replace("0x000A", "0x7FFF"),
        add.replace(&plugin_guid(guid[1]), "00:02:c9"),
        add.replace("\"full\"", "\"both\""),
        add.replace("true", "\"yes\""),
        add[..add.len() - 1].to_owned(),
    ] {
        let (c, body) = plugin.request("POST", "/ufmRest/resources/pkeys", Some(&bad), PASSWORD);
        assert_eq!(c, 400, "{bad}: {body}");
        let e: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(e["error"].is_string(), "{body}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), START);
    assert!(!f.read("ibsmd.err").contains(APPLIED));
    // (the heavy sweep a change would ask for is not waited for: no mark, no sweep.)
    let now: Vec<BTreeSet<u16>> = (0..4).map(table).collect();
    assert_eq!(now, tables, "a refused request changed a table");

    // AddGuidsToPKey(0x000A, [Hca2, Hca3]).
    plugin.add(0x000A, &[guid[1], guid[2]]);
    let (heavy, _) = applied(&f, 0);
    assert!(
        heavy <= 2,
        "the running sweep and the one asked for: {heavy}"
    );
    for i in [1, 2] {
        assert!(table(i).contains(&0x800A), "{}: {:x?}", hosts[i], table(i));
    }
    for i in [0, 3] {
        let t = table(i);
        assert!(
            !t.contains(&0x800A) && !t.contains(&0x000A),
            "{}: {t:x?}",
            hosts[i]
        );
    }
    assert_eq!(
        path_pkey(1, 2),
        Some(0x800A),
        "Hca2 -> Hca3 through the API's partition"
    );
    assert_eq!(path_pkey(2, 1), Some(0x800A));
    assert_eq!(path_pkey(1, 3), None);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(START),
        "the hand-written lines stay:\n{text}"
    );
    // GET of the P_Key's members, as UFM answers it.
    let (c, body) = plugin.request("GET", "/ufmRest/resources/pkeys/0xa", None, PASSWORD);
    assert_eq!(c, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let listed: Vec<&str> = v["guids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["guid"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [plugin_guid(guid[1]), plugin_guid(guid[2])]);

    // RemoveGuidsFromPKey(0x000A, [Hca2]).
    plugin.remove(0x000A, &[guid[1]]);
    let (heavy, _) = applied(&f, 1);
    assert!(heavy <= 2, "{heavy}");
    assert!(!table(1).contains(&0x800A), "{:x?}", table(1));
    assert!(table(2).contains(&0x800A));
    assert_eq!(path_pkey(1, 2), None, "Hca2 left the partition");

    // 100 changes in a row: Hca4 in and out of 0x000B 99 times, then Hca3 in.
    let marks = f.read("ibsmd.err").matches(APPLIED).count();
    for i in 0..99 {
        if i % 2 == 0 {
            plugin.add(0x000B, &[guid[3]]);
        } else {
            plugin.remove(0x000B, &[guid[3]]);
        }
    }
    plugin.add(0x000B, &[guid[2]]);
    let (heavy, blocks) = applied(&f, marks);
    let handed = f.read("ibsmd.err").matches(APPLIED).count() - marks;
    eprintln!(
        "rest_ibsim: 100 changes: handed to the engine {handed} times, {heavy} heavy sweeps, {blocks} P_Key block Sets"
    );
    assert!(heavy < 100, "one heavy sweep per change: {heavy}");
    assert!(table(3).contains(&0x800B) && table(2).contains(&0x800B));

    // 1,000 add/remove cycles over Hca2..Hca4 and two P_Keys.
    let mut model: BTreeMap<u16, BTreeSet<usize>> = BTreeMap::new();
    model.entry(0x000A).or_default().insert(2);
    model.entry(0x000B).or_default().extend([2, 3]);
    let marks = f.read("ibsmd.err").matches(APPLIED).count();
    let started = Instant::now();
    let pid = sm.0.as_ref().expect("running").id().to_string();
    let hangup = || {
        let st = std::process::Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap();
        assert!(st.success());
    };
    for i in 0..1000usize {
        if i == 300 {
            // A hand edit while no request is under way, then SIGHUP while the
            // requests go on: neither is lost.
            let mut text = std::fs::read_to_string(&file).unwrap();
            text.push_str(&format!(
                "# by hand, mid-run
hand=0x0020 : {:#x}=full ;
",
                guid[3]
            ));
            std::fs::write(&file, text).unwrap();
            hangup();
        }
        if i % 200 == 100 {
            hangup();
        }
        let pkey = 0x000A + (i % 2) as u16;
        let (a, r) = (1 + i % 3, 1 + (i / 2 + 1) % 3);
        plugin.add(pkey, &[guid[a]]);
        model.entry(pkey).or_default().insert(a);
        plugin.remove(pkey, &[guid[r]]);
        model.entry(pkey).or_default().remove(&r);
    }
    let took = started.elapsed();
    let (heavy, blocks) = applied(&f, marks);
    eprintln!(
        "rest_ibsim: 1,000 cycles (2,000 requests) in {:.1} s: {heavy} heavy sweeps, {blocks} P_Key block Sets",
        took.as_secs_f64()
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(START), "{text}");
    let (c, body) = plugin.request(
        "GET",
        "/ufmRest/resources/pkeys?guids_data=true",
        None,
        PASSWORD,
    );
    assert_eq!(c, 200);
    let all: serde_json::Value = serde_json::from_str(&body).unwrap();
    for (pkey, members) in &model {
        let listed: BTreeSet<String> = all[format!("{pkey:#x}")]["guids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["guid"].as_str().unwrap().to_owned())
            .collect();
        let want: BTreeSet<String> = members.iter().map(|&i| plugin_guid(guid[i])).collect();
        assert_eq!(listed, want, "{pkey:#x} in the file:\n{text}");
        for (i, host) in hosts.iter().enumerate().skip(1) {
            let t = table(i);
            let full = t.contains(&(0x8000 | pkey));
            assert_eq!(full, members.contains(&i), "{host} {pkey:#x}: {t:x?}");
            assert!(!t.contains(pkey), "{host} holds limited {pkey:#x}: {t:x?}");
        }
    }
    assert!(
        text.contains("# by hand, mid-run\nhand=0x0020 : "),
        "{text}"
    );
    assert!(table(3).contains(&0x8020), "the hand edit: {:x?}", table(3));
    assert!(
        f.read("ibsmd.err")
            .matches("SIGHUP: partitions re-read")
            .count()
            >= 5
    );
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json["subnet_up"], true, "{json}");
}

/// Without a fabric: `--validate` refuses what the API cannot start with (exit 2, the
/// reason on stderr) and accepts a complete set, as a start would, before any port is
/// opened; opensm.conf's `rest_*` keys read as the flags do.
#[test]
fn ibsmd_validate_checks_the_partition_apis_options_and_files() {
    let dir = std::env::temp_dir().join(format!("ibsmd_rest_validate_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (file, creds) = (dir.join("partitions.conf"), dir.join("users"));
    std::fs::write(&file, START).unwrap();
    std::fs::write(&creds, format!("{USER}:{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (f, c) = (file.to_str().unwrap(), creds.to_str().unwrap());
    let run = |args: &[&str]| {
        let out = std::process::Command::new(IBSMD)
            .arg("--validate")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let rest = ["--rest", "127.0.0.1:0"];
    let cases: [(Vec<&str>, &str); 4] = [
        (
            vec!["--rest-credentials", c, "--rest-insecure"],
            "needs a partitions file",
        ),
        (
            vec!["--partitions", f, "--rest-insecure"],
            "needs --rest-credentials",
        ),
        (
            vec!["--partitions", f, "--rest-credentials", c],
            "--rest-insecure for plain HTTP",
        ),
        (
            vec!["--partitions", f, "--rest-credentials", c, "--rest-cert", c],
            "go together",
        ),
    ];
    for (args, want) in cases {
        let all: Vec<&str> = rest.iter().copied().chain(args).collect();
        let (code, err) = run(&all);
        assert_eq!(code, Some(2), "{all:?}: {err}");
        assert!(err.contains(want), "{all:?}: {want}: {err}");
    }
    let ok = [
        "--rest",
        "127.0.0.1:0",
        "--partitions",
        f,
        "--rest-credentials",
        c,
        "--rest-insecure",
    ];
    assert_eq!(run(&ok).0, Some(0), "{}", run(&ok).1);
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (code, err) = run(&ok);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("chmod 600"), "{err}");
    // The same from opensm.conf.
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600)).unwrap();
    let conf = dir.join("opensm.conf");
    std::fs::write(
        &conf,
        format!("partition_config_file {f}\nrest_address 127.0.0.1:0\nrest_credentials_file {c}\nrest_insecure TRUE\n"),
    )
    .unwrap();
    let (code, err) = run(&["-F", conf.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
