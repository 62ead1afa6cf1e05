//! Peer test: `ibsmd --partitions FILE` on an ibsim fabric programs every CA's and switch
//! port 0's P_Key table from an OpenSM-syntax partition file (read back with
//! infiniband-diags' `smpquery pkeys`), a second SM run writes no P_Key block, and with
//! `--sa` the PathRecords `saquery` gets exist only between CAs that share a partition;
//! the IPoIB broadcast groups of the `ipoib` partitions are listed by `saquery -g`;
//! SIGHUP re-reads the file and the tables and groups follow.
//!
//! ibsim's switches report no partition enforcement capability (SwitchInfo
//! Inbound/OutboundEnforcementCap 0), so here switch ports must stay unenforced with
//! their tables untouched; enforcement itself is proved over ibsm-sim
//! (crates/ibsm-manager/tests/partitions_sim.rs). If a future ibsim reports the
//! capability, this test checks the enforcement instead.

use std::process::Command;
use std::time::Duration;

use ibsm_tests::peer::{
    PeerFabric, after, bring_up, diag_at, dotted_field, start_ibsmd, stop_ibsmd,
};
use ibsm_tests::{IBSIM, PRELOAD, peers_present, wait_for};

const IBSMD: &str = env!("CARGO_BIN_EXE_ibsmd");
const SMPQUERY: &str = "/usr/sbin/smpquery";
const SAQUERY: &str = "/usr/sbin/saquery";

const NET: &str = "Switch\t8 \"Sw1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca2\"[1]\n[3]\t\"Sw2\"[3]\n\n\
Switch\t8 \"Sw2\"\n[1]\t\"Hca3\"[1]\n[2]\t\"Hca4\"[1]\n[3]\t\"Sw1\"[3]\n\n\
Hca\t1 \"Hca1\"\n[1]\t\"Sw1\"[1]\n\nHca\t1 \"Hca2\"\n[1]\t\"Sw1\"[2]\n\n\
Hca\t1 \"Hca3\"\n[1]\t\"Sw2\"[1]\n\nHca\t1 \"Hca4\"\n[1]\t\"Sw2\"[2]\n";

/// The entries `smpquery pkeys` printed, in index order.
fn pkeys(text: &str) -> Vec<u16> {
    text.lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()) && l.contains(':'))
        .flat_map(|l| l.split_once(':').map_or("", |(_, r)| r).split_whitespace())
        .filter_map(|w| u16::from_str_radix(w.trim_start_matches("0x"), 16).ok())
        .collect()
}

fn valid(t: &[u16]) -> Vec<u16> {
    t.iter().copied().filter(|k| k & 0x7fff != 0).collect()
}

#[test]
fn ibsmd_rejects_a_bad_partition_file_with_line_and_column() {
    let dir = std::env::temp_dir().join(format!("ibsm_partitions_bad_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.conf");
    // ibsmd on a file holding `text`: its exit code and stderr.
    let run = |text: &str| {
        std::fs::write(&file, text).unwrap();
        let out = Command::new(IBSMD)
            .arg("--partitions")
            .arg(&file)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let cases = [
        (
            "Default=0x7fff : ALL ;\nbad=0x8001 : ALL=full ;\n",
            "bad.conf: line 2, column 5: P_Key `0x8001`",
        ),
        (
            "x=0x1 : ALL, SOMEONE ;\n",
            "line 1, column 14: unknown member `SOMEONE`",
        ),
        (
            "x=0x1 :\n  mgid=fe80::1 ;\n",
            "line 2, column 8: MGID `fe80::1` is not multicast",
        ),
    ];
    for (text, want) in cases {
        let (code, err) = run(text);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(want), "{want}:\n{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ibsmd_programs_partitions_on_ibsim() {
    if !peers_present("partitions_ibsim", &[IBSIM, PRELOAD, SMPQUERY, SAQUERY]) {
        return;
    }
    let f = PeerFabric::start("partitions", NET);
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
    // Hca1 (the SM) and Hca2 in tenant_a, Hca3 and Hca4 in tenant_b; everyone a limited
    // member of the default partition except the switches and the SM.
    let conf = format!(
        "# two tenants\n\
         Default=0x7fff : ALL=limited, ALL_SWITCHES=full, SELF=full ;\n\
         tenant_a=0x0001, ipoib : {:#018x}=full,\n    {:#018x}=full\n\
         \x20   mgid=ff12:a01b::1234, sl=0, Q_Key=0x1234 # a group of tenant_a's own\n    ;\n\
         tenant_b=0x0002, ipoib, defmember=full : {:#x}, {:#x} ;\n",
        guid[0], guid[1], guid[2], guid[3]
    );
    let path = f.path("partitions.conf");
    std::fs::write(&path, conf).unwrap();
    let path = path.to_str().unwrap().to_owned();

    let json = bring_up(&f, IBSMD, Some("Hca1"), &["--partitions", &path]);
    assert_eq!(json["pkey_blocks"], 4, "one block per CA: {json}");

    let lid: Vec<u64> = hosts
        .iter()
        .map(|h| {
            dotted_field(
                &diag_at(&f, h, SMPQUERY, &["-D", "portinfo", "0", "1"]),
                "Lid",
            )
        })
        .collect();
    let want: [&[u16]; 4] = [
        &[0xffff, 0x8001],
        &[0x7fff, 0x8001],
        &[0x7fff, 0x8002],
        &[0x7fff, 0x8002],
    ];
    for (i, h) in hosts.iter().enumerate() {
        let t = pkeys(&diag_at(
            &f,
            "Hca4",
            SMPQUERY,
            &["pkeys", &lid[i].to_string()],
        ));
        assert!(t.len() >= 32, "{h}: {t:x?}");
        assert_eq!(&t[..2], want[i], "{h}: {t:x?}");
        assert_eq!(valid(&t), want[i], "{h}: nothing else in the table");
    }
    // Switches: port 0 a full default member; external ports as the capability says.
    for (host, dr) in [("Hca1", "0,1"), ("Hca4", "0,1")] {
        let sw_lid = dotted_field(
            &diag_at(&f, host, SMPQUERY, &["-D", "portinfo", dr, "0"]),
            "Lid",
        );
        let t = pkeys(&diag_at(
            &f,
            "Hca4",
            SMPQUERY,
            &["pkeys", &sw_lid.to_string(), "0"],
        ));
        assert_eq!(valid(&t), [0xffff], "switch LID {sw_lid} port 0: {t:x?}");
        let si = diag_at(&f, "Hca4", SMPQUERY, &["switchinfo", &sw_lid.to_string()]);
        let can =
            dotted_field(&si, "InboundPartEnf") != 0 || dotted_field(&si, "OutboundPartEnf") != 0;
        for port in [1u8, 2] {
            let pi = diag_at(
                &f,
                "Hca4",
                SMPQUERY,
                &["portinfo", &sw_lid.to_string(), &port.to_string()],
            );
            let on = dotted_field(&pi, "PartEnforceInb") != 0
                || dotted_field(&pi, "PartEnforceOutb") != 0;
            assert_eq!(on, can, "switch LID {sw_lid} port {port}:\n{pi}");
            if can {
                let t = pkeys(&diag_at(
                    &f,
                    "Hca4",
                    SMPQUERY,
                    &["pkeys", &sw_lid.to_string(), &port.to_string()],
                ));
                let ca = if host == "Hca1" { port - 1 } else { port + 1 };
                assert_eq!(valid(&t), want[usize::from(ca)]);
            }
        }
        if !can {
            eprintln!(
                "partitions_ibsim: ibsim switch LID {sw_lid} cannot enforce partitions; \
                 enforcement is checked over ibsm-sim only"
            );
        }
    }

    // A second SM run finds every table as the policy wants it.
    let json = bring_up(&f, IBSMD, Some("Hca1"), &["--partitions", &path]);
    assert_eq!(json["pkey_blocks"], 0, "{json}");

    // The SA: PathRecords only within a partition.
    let sm = start_ibsmd(&f, IBSMD, "Hca1", 0, &["--sa", "--partitions", &path]);
    wait_for(&f.path("ibsmd.err"), "SUBNET UP", Duration::from_secs(30));
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
        path_pkey(1, 0),
        Some(0x7fff),
        "Hca2 -> SM: default partition"
    );
    assert_eq!(
        path_pkey(0, 2),
        Some(0xffff),
        "SM -> Hca3: default partition"
    );
    assert_eq!(path_pkey(2, 3), Some(0x8002), "Hca3 -> Hca4: tenant_b");
    assert_eq!(path_pkey(1, 2), None, "Hca2 -> Hca3 share no partition");
    assert_eq!(path_pkey(3, 1), None, "Hca4 -> Hca2 share no partition");
    // The IPoIB broadcast groups of the two `ipoib` partitions exist before anyone
    // joins (the SM keeps them, as OpenSM does).
    let groups = diag_at(&f, "Hca4", SAQUERY, &["--smkey", "1", "-g"]);
    for k in ["401b:8001", "401b:8002"] {
        assert!(groups.to_lowercase().contains(k), "no {k} group:\n{groups}");
    }
    assert!(!groups.to_lowercase().contains("401b:ffff"), "{groups}");
    // The `mgid=` line's group too, in tenant_a's P_Key.
    let rec = groups
        .split("MCMemberRecord")
        .find(|r| r.to_lowercase().contains("ff12:a01b::1234"))
        .unwrap_or_else(|| panic!("no mgid= group:\n{groups}"));
    assert_eq!(dotted_field(rec, "pkey"), 0x8001, "{rec}");

    // SIGHUP re-reads the file: Hca2 moves to tenant_b.
    let moved = format!(
        "Default=0x7fff : ALL=limited, ALL_SWITCHES=full, SELF=full ;\n\
         tenant_a=0x0001 : {:#x}=full ;\n\
         tenant_b=0x0002, defmember=full : {:#x}, {:#x}, {:#x} ;\n",
        guid[0], guid[1], guid[2], guid[3]
    );
    std::fs::write(&path, moved).unwrap();
    let pid = sm.0.as_ref().expect("running").id().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let log = f.read("ibsmd.err");
        if after(&log, "SIGHUP: partitions re-read").contains("SUBNET UP (") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no sweep after SIGHUP:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let t = pkeys(&diag_at(
        &f,
        "Hca4",
        SMPQUERY,
        &["pkeys", &lid[1].to_string()],
    ));
    assert_eq!(valid(&t), [0x7fff, 0x8002], "Hca2 after SIGHUP: {t:x?}");
    assert_eq!(
        path_pkey(1, 2),
        Some(0x8002),
        "Hca2 -> Hca3 now share tenant_b"
    );
    assert_eq!(
        path_pkey(0, 1),
        Some(0xffff),
        "SM -> Hca2: default partition"
    );
    // No `ipoib` partition any more: the empty broadcast groups are gone.
    let groups = diag_at(&f, "Hca4", SAQUERY, &["--smkey", "1", "-g"]);
    assert!(!groups.to_lowercase().contains("401b:"), "{groups}");
    assert!(!groups.to_lowercase().contains("a01b:"), "{groups}");
    let json = stop_ibsmd(&f, sm);
    assert_eq!(json["pkey_blocks"], 0, "{json}");
}
