//! The ibnetdiscover / ibsim file formats: real captured outputs, round trips, errors.

use ibsm_topology::generate::{self, Dragonfly, GlobalArrangement, Grid};
use ibsm_topology::ibnet::{self, Dialect, WriteOptions};
use ibsm_topology::{ActiveSpeed, ActiveWidth, Fabric, Guid, NodeKind, ParseErrorKind};
use proptest::prelude::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).expect("fixture")
}

type NodeRow = (
    u64,
    NodeKind,
    u8,
    String,
    u64,
    u32,
    u16,
    Vec<(u8, u64, u16, u8)>,
);
type LinkRow = (u64, u8, u64, u8, ActiveWidth, ActiveSpeed);

/// Everything the formats carry, in a comparable form.
fn canon(f: &Fabric) -> (Vec<NodeRow>, Vec<LinkRow>) {
    let nodes = f
        .nodes()
        .map(|(_, n)| {
            let mut ports: Vec<(u8, u64, u16, u8)> = n
                .ports()
                .map(|(p, port)| (p, port.guid.0, port.lid, port.lmc))
                .collect();
            if n.is_switch() {
                let p0 = n.port(0).unwrap();
                ports.push((0, p0.guid.0, p0.lid, p0.lmc));
                // Switch external ports carry no LID of their own.
                for p in &mut ports[..usize::from(n.num_ports())] {
                    p.2 = 0;
                    p.3 = 0;
                }
            }
            (
                n.guid().0,
                n.node_type(),
                n.num_ports(),
                n.description.clone(),
                n.system_image_guid.0,
                n.vendor_id,
                n.device_id,
                ports,
            )
        })
        .collect();
    let links = f
        .links()
        .map(|(_, l)| {
            let p = f.port(l.a.node, l.a.port).unwrap();
            (
                f.guid_of(l.a.node).0,
                l.a.port,
                f.guid_of(l.b.node).0,
                l.b.port,
                p.width,
                p.speed,
            )
        })
        .collect();
    (nodes, links)
}

fn roundtrip(f: &Fabric) -> Fabric {
    let text = ibnet::write(f, &WriteOptions::default()).unwrap();
    ibnet::parse(&text).unwrap().fabric
}

/// Structure by description (for fabrics where ibsim chose the GUIDs).
fn by_description(f: &Fabric) -> Vec<(String, u8, String, u8)> {
    let mut v: Vec<_> = f
        .links()
        .map(|(_, l)| {
            let a = (f.node(l.a.node).unwrap().description.clone(), l.a.port);
            let b = (f.node(l.b.node).unwrap().description.clone(), l.b.port);
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            (a.0, a.1, b.0, b.1)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn real_ibnetdiscover_of_our_fat_tree_matches_the_generator() {
    // Our writer's output for k_ary_n_tree(4, 2) was loaded into ibsim, OpenSM assigned
    // LIDs, and ibnetdiscover walked it (see fixtures/capture.sh).
    let parsed = ibnet::parse(&fixture("kary4x2_opensm.ibnetdiscover")).unwrap();
    assert!(parsed.notes.is_empty(), "{:?}", parsed.notes);
    let real = parsed.fabric;
    let ours = generate::k_ary_n_tree(4, 2).unwrap();
    let (rn, rl) = canon(&real);
    let (on, ol) = canon(&ours);
    // Same GUIDs, descriptions, port counts and cables.
    assert_eq!(rl.len(), ol.len());
    let strip = |l: &Vec<LinkRow>| l.iter().map(|x| (x.0, x.1, x.2, x.3)).collect::<Vec<_>>();
    assert_eq!(strip(&rl), strip(&ol));
    let ids = |n: &Vec<NodeRow>| {
        n.iter()
            .map(|x| (x.0, x.1, x.2, x.3.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&rn), ids(&on));
    // OpenSM gave every switch and CA a distinct non-zero LID; ibsim links are 4x SDR.
    let mut lids: Vec<u16> = real.nodes().map(|(_, n)| n.lid()).collect();
    assert!(lids.iter().all(|&l| l != 0));
    lids.sort_unstable();
    lids.dedup();
    assert_eq!(lids.len(), real.node_count());
    assert!(
        rl.iter()
            .all(|l| l.4 == ActiveWidth::X4 && l.5 == ActiveSpeed::Sdr)
    );
    // And it round-trips through our writer unchanged.
    assert_eq!(canon(&roundtrip(&real)), canon(&real));
}

#[test]
fn real_ports_report_agrees_with_the_topology_file() {
    for name in [
        "kary4x2_opensm",
        "dragonfly_2_1_1_3",
        "ibsim_2sw2path4hca2port",
        "torus3x2_ibsim_names",
    ] {
        let topo = ibnet::parse(&fixture(&format!("{name}.ibnetdiscover")))
            .unwrap()
            .fabric;
        let ports = ibnet::parse_ports_report(&fixture(&format!("{name}.ports")))
            .unwrap()
            .fabric;
        assert_eq!(ports.node_count(), topo.node_count(), "{name}");
        assert_eq!(ports.link_count(), topo.link_count(), "{name}");
        assert_eq!(by_description(&ports), by_description(&topo), "{name}");
        let (pl, tl) = (canon(&ports).1, canon(&topo).1);
        assert_eq!(pl, tl, "{name}");
        for ((_, n), (_, m)) in ports.nodes().zip(topo.nodes()) {
            assert_eq!(n.guid(), m.guid());
            assert_eq!(n.lid(), m.lid(), "{name} {}", n.description);
        }
    }
}

#[test]
fn real_ibsim_example_captures() {
    // ibsim's own example net file (two switches, two parallel cables, four HCAs), walked
    // by ibnetdiscover without an SM: LIDs 0, GUIDs assigned by ibsim.
    let f = ibnet::parse(&fixture("ibsim_2sw2path4hca.ibnetdiscover"))
        .unwrap()
        .fabric;
    assert_eq!(
        (f.switch_count(), f.cas().count(), f.link_count()),
        (2, 4, 6)
    );
    assert_eq!(f.degree_stats().parallel_pairs, 1);
    let sw = f.node_by_guid(Guid(0x200000)).unwrap();
    assert_eq!(f.node(sw).unwrap().description, "Switch1");
    assert_eq!(f.node(sw).unwrap().num_ports(), 8);
    let hca = f.node_by_guid(Guid(0x100000)).unwrap();
    assert_eq!(f.port(hca, 1).unwrap().guid, Guid(0x100001));
    assert_eq!(f.neighbour(hca, 1), Some(sw));
    assert_eq!(canon(&roundtrip(&f)), canon(&f));

    // Dual-port HCAs, LIDs from OpenSM.
    let f = ibnet::parse(&fixture("ibsim_2sw2path4hca2port.ibnetdiscover"))
        .unwrap()
        .fabric;
    assert_eq!(
        (f.switch_count(), f.cas().count(), f.link_count()),
        (2, 2, 6)
    );
    for (_, n) in f.cas() {
        assert_eq!(n.degree(), 2);
        assert!(n.ports().all(|(_, p)| p.lid != 0));
    }
}

#[test]
fn ibsim_names_dialect_through_ibsim() {
    // Written with Dialect::IbsimNet (no GUIDs): ibsim assigned GUIDs, names survived.
    let real = ibnet::parse(&fixture("torus3x2_ibsim_names.ibnetdiscover"))
        .unwrap()
        .fabric;
    let ours = generate::grid(&Grid {
        dims: vec![3, 2],
        torus: true,
        cas_per_switch: 1,
    })
    .unwrap();
    assert_eq!(by_description(&real), by_description(&ours));
    // ibsim's GUID assignment is what our reader does for name-only files.
    let text = ibnet::write(
        &ours,
        &WriteOptions {
            dialect: Dialect::IbsimNet,
            title: None,
        },
    )
    .unwrap();
    let ours_read = ibnet::parse(&text).unwrap().fabric;
    let guids = |f: &Fabric| {
        let mut v: Vec<(String, u64)> = f
            .nodes()
            .map(|(_, n)| (n.description.clone(), n.guid().0))
            .collect();
        v.sort();
        v
    };
    assert_eq!(guids(&ours_read), guids(&real));
}

#[test]
fn dragonfly_capture_matches_generator() {
    let real = ibnet::parse(&fixture("dragonfly_2_1_1_3.ibnetdiscover"))
        .unwrap()
        .fabric;
    let ours = generate::dragonfly(&Dragonfly {
        a: 2,
        p: 1,
        h: 1,
        g: 3,
        arrangement: GlobalArrangement::Absolute,
    })
    .unwrap();
    assert_eq!(by_description(&real), by_description(&ours));
}

#[test]
fn ibsim_dialect_features() {
    let text = "\
# comment
include other.net
do Unlink \"Sw1\"[3]

Switch\t8 \"Sw1\"
[1]\t\"H1\"[1]\tw=12
[3]\t\"Sw2\"[3]   # a comment after the link
[4] \"Sw2\" [4]

Switch 8 \"Sw2\"
[3]\t\"Sw1\"[3]

Hca\t2 \"H1\"
[1]\t\"Sw1\"[1]

Rt 1 \"R1\"
";
    let p = ibnet::parse(text).unwrap();
    let f = &p.fabric;
    assert_eq!(p.notes.len(), 2);
    assert_eq!(p.notes[0].line, 2);
    assert_eq!(p.notes[0].message, r#"skipped include of "other.net""#);
    assert_eq!(
        p.notes[1].message,
        r#"skipped ibsim command "Unlink \"Sw1\"[3]""#
    );
    assert_eq!(
        (f.switch_count(), f.cas().count(), f.routers().count()),
        (2, 1, 1)
    );
    assert_eq!(f.link_count(), 3);
    // ibsim numbering: switches from 0x200000, CAs from 0x100000 (1 + ports each).
    let sw1 = f.node_by_guid(Guid(0x200000)).unwrap();
    let h1 = f.node_by_guid(Guid(0x100000)).unwrap();
    assert!(f.node_by_guid(Guid(0x300000)).is_some());
    assert_eq!(f.port(h1, 1).unwrap().width, ActiveWidth::X12);
    assert_eq!(f.port(sw1, 1).unwrap().width, ActiveWidth::X12);
    assert_eq!(f.node(h1).unwrap().description, "H1");
}

#[test]
fn header_attributes_and_comments() {
    let text = "\
vendid=0x2c9
devid=0xc738
sysimgguid=0x7cfe900300a5a2c0
switchguid=0x7cfe900300a5a2c0(7cfe900300a5a2c0)
Switch\t36 \"S-7cfe900300a5a2c0\"\t\t# \"MF0;sw-a:MSB7700/U1\" enhanced port 0 lid 3 lmc 0
[1]\t\"H-0000000000100000\"[2](100002) \t\t# \"host \"one\"\" lid 7 4xEDR
[35]\t\"S-7cfe900300a5a2c0\"[36]\t\t# loop

vendid=0x2c9
devid=0x1017
sysimgguid=0x100000
caguid=0x100000
Ca\t2 \"H-0000000000100000\"\t\t# \"host \"one\"\"
[2](100002) \t\"S-7cfe900300a5a2c0\"[1]\t\t# lid 7 lmc 2 \"MF0;sw-a:MSB7700/U1\" lid 3 4xEDR
";
    let err = ibnet::parse(text).unwrap_err();
    assert_eq!(err.line, 7);
    assert!(matches!(err.kind, ParseErrorKind::SelfLoop(_)), "{err}");
    let text = text.replace("[35]\t\"S-7cfe900300a5a2c0\"[36]\t\t# loop\n", "");
    let f = ibnet::parse(&text).unwrap().fabric;
    let sw = f
        .node(f.node_by_guid(Guid(0x7cfe900300a5a2c0)).unwrap())
        .unwrap();
    assert_eq!(sw.description, "MF0;sw-a:MSB7700/U1");
    assert_eq!((sw.vendor_id, sw.device_id, sw.lid()), (0x2c9, 0xc738, 3));
    let ca_id = f.node_by_guid(Guid(0x100000)).unwrap();
    let ca = f.node(ca_id).unwrap();
    assert_eq!(ca.description, "host \"one\"");
    let p2 = ca.port(2).unwrap();
    assert_eq!(
        (p2.guid, p2.lid, p2.lmc, p2.width, p2.speed),
        (Guid(0x100002), 7, 2, ActiveWidth::X4, ActiveSpeed::Edr)
    );
    assert!(!ca.port(1).unwrap().is_connected());
    assert_eq!(canon(&roundtrip(&f)), canon(&f));
}

fn kind_at(text: &str) -> (usize, ParseErrorKind) {
    let e = ibnet::parse(text).unwrap_err();
    // Every message names the line.
    assert!(
        e.to_string().starts_with(&format!("line {}: ", e.line)),
        "{e}"
    );
    (e.line, e.kind)
}

#[test]
fn errors_name_line_and_reason() {
    let (l, k) = kind_at("Switch 4 \"a\"\n\nBridge 2 \"b\"\n");
    assert_eq!(
        (l, k),
        (3, ParseErrorKind::UnknownNodeType("Bridge".into()))
    );

    let (l, k) = kind_at("Switch 4 \"a\"\nHca 2 \"a\"\n");
    assert_eq!(
        (l, k),
        (
            2,
            ParseErrorKind::DuplicateName {
                name: "a".into(),
                first_line: 1
            }
        )
    );

    let (l, k) = kind_at("Switch 4 \"a\"\n[5] \"b\"[1]\nHca 1 \"b\"\n");
    assert_eq!(l, 2);
    assert!(matches!(
        k,
        ParseErrorKind::PortOutOfRange {
            port: 5,
            num_ports: 4,
            ..
        }
    ));

    let (l, k) = kind_at("Switch 4 \"a\"\n[1] \"b\"[2]\nHca 1 \"b\"\n");
    assert_eq!(l, 2);
    assert!(
        matches!(k, ParseErrorKind::PortOutOfRange { port: 2, num_ports: 1, ref node, .. } if node == "b")
    );

    let (l, k) = kind_at("Switch 4 \"a\"\n[1] \"b\"[1]\n\nHca 1 \"b\"\n[1] \"a\"[2]\n");
    assert_eq!(l, 5);
    assert!(
        matches!(k, ParseErrorKind::LinkMismatch { other_line: 2, .. }),
        "{k:?}"
    );

    // Two nodes claim the same remote port.
    let (l, k) = kind_at("Switch 4 \"a\"\n[1] \"c\"[1]\n[2] \"c\"[1]\nHca 1 \"c\"\n");
    assert_eq!(l, 3);
    assert!(matches!(
        k,
        ParseErrorKind::LinkMismatch { other_line: 2, .. }
    ));

    let (l, k) = kind_at("Switch 4 \"a\"\n[1] \"a\"[2]\n");
    assert_eq!((l, k), (2, ParseErrorKind::SelfLoop("a".into())));

    let (l, k) = kind_at("Switch 4 \"a\"\n[1] \"nowhere\"[1]\n");
    assert_eq!((l, k), (2, ParseErrorKind::UnknownRemote("nowhere".into())));

    for (text, line) in [
        ("Switch 4 \"a\"\n[1] \"b", 2),
        ("Switch 4 \"a\"\n[1 \"b\"[1]", 2),
        ("Switch 4 \"a\"\n[1] \"b\"[1", 2),
        ("Switch 4 \"a\"\n[1] \"b\"", 2),
        ("Switch 4 \"a", 1),
        ("Switch", 1),
        ("Switch 4", 1),
        ("Ca 1 \"x\"\n[1](12 \"a\"[1]", 2),
    ] {
        let (l, k) = kind_at(text);
        assert_eq!(l, line, "{text:?}");
        assert!(matches!(k, ParseErrorKind::Truncated(_)), "{text:?}: {k:?}");
    }

    let (l, k) = kind_at("Switch 0 \"a\"\n");
    assert_eq!((l, k), (1, ParseErrorKind::BadPortCount("0".into())));
    let (_, k) = kind_at("Switch 255 \"a\"\n");
    assert_eq!(k, ParseErrorKind::BadPortCount("255".into()));
    let (_, k) = kind_at("Switch x \"a\"\n");
    assert_eq!(k, ParseErrorKind::BadPortCount("x".into()));
    let (l, k) = kind_at("[1] \"a\"[1]\n");
    assert_eq!((l, k), (1, ParseErrorKind::PortOutsideNode));
    let (l, k) = kind_at("Switch 4 \"a\"\n[1] \"b\"[1]\n[1] \"b\"[2]\nSwitch 4 \"b\"\n");
    assert_eq!((l, k), (3, ParseErrorKind::DuplicatePort(1)));
    let (l, k) = kind_at("switchguid=0xzz\n");
    assert_eq!((l, k), (1, ParseErrorKind::BadNumber("0xzz".into())));
    let (l, k) = kind_at("switchguid=0x10\nSwitch 4 \"a\"\nswitchguid=0x10\nSwitch 4 \"b\"\n");
    assert_eq!(
        (l, k),
        (
            4,
            ParseErrorKind::DuplicateGuid {
                guid: Guid(0x10),
                first_line: 2
            }
        )
    );
    let (_, k) = kind_at("Switch 4 \"a\"\n[1] \"b\"[1] w=3\nSwitch 4 \"b\"\n");
    assert!(matches!(k, ParseErrorKind::BadNumber(_)));
}

#[test]
fn read_file_names_the_file() {
    let dir = std::env::temp_dir().join(format!("ibsm_topo_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.net");
    std::fs::write(&path, "Switch 4 \"a\"\nBogus 1 \"b\"\n").unwrap();
    let e = ibnet::read_file(&path).unwrap_err().to_string();
    assert!(
        e.contains("bad.net: line 2: unknown node type \"Bogus\""),
        "{e}"
    );
    let e = ibnet::read_file(dir.join("missing.net"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.net"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ibsim_net_writer_needs_unique_names() {
    let mut f = generate::k_ary_n_tree(2, 2).unwrap();
    let id = f.node_ids().next().unwrap();
    let other = f.node_ids().nth(1).unwrap();
    let d = f.node(other).unwrap().description.clone();
    f.node_mut(id).unwrap().description = d;
    let opts = WriteOptions {
        dialect: Dialect::IbsimNet,
        title: None,
    };
    assert!(ibnet::write(&f, &opts).is_err());
    // The full dialect does not care.
    assert!(ibnet::write(&f, &WriteOptions::default()).is_ok());
}

fn small_fabric() -> impl Strategy<Value = Fabric> {
    prop_oneof![
        (1u32..4, 1usize..4).prop_map(|(k, n)| generate::k_ary_n_tree(k + 1, n).unwrap()),
        (prop::collection::vec(1u32..4, 1..4), any::<bool>(), 1u32..3).prop_map(
            |(dims, torus, c)| {
                generate::grid(&Grid {
                    dims,
                    torus,
                    cas_per_switch: c,
                })
                .unwrap()
            }
        ),
        (2u32..4, 0u32..3, 1u32..3, any::<bool>()).prop_map(|(a, p, h, palm)| {
            generate::dragonfly(&Dragonfly {
                a,
                p,
                h,
                g: a * h + 1,
                arrangement: if palm {
                    GlobalArrangement::Palmtree
                } else {
                    GlobalArrangement::Absolute
                },
            })
            .unwrap()
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn write_parse_round_trips(
        mut f in small_fabric(),
        lids in prop::collection::vec(1u16..0xbfff, 64),
        frac in 0.0f64..0.5,
        seed in any::<u64>(),
        speed in prop::sample::select(vec![ActiveSpeed::Sdr, ActiveSpeed::Qdr, ActiveSpeed::Fdr10, ActiveSpeed::Edr, ActiveSpeed::Ndr]),
    ) {
        generate::degrade(&mut f, frac, seed).unwrap();
        // Give ports LIDs, LMCs, widths and speeds the format can carry.
        let ids: Vec<_> = f.node_ids().collect();
        for (i, id) in ids.iter().enumerate() {
            let node = f.node_mut(*id).unwrap();
            let sw = node.is_switch();
            let n = node.num_ports();
            let lid = lids[i % lids.len()];
            if sw {
                node.port_mut(0).unwrap().lid = lid;
            }
            for p in 1..=n {
                let port = node.port_mut(p).unwrap();
                if !sw {
                    port.lid = lid.wrapping_add(u16::from(p));
                    port.lmc = p % 3;
                }
            }
        }
        let links: Vec<_> = f.links().map(|(_, l)| *l).collect();
        for l in links {
            for e in [l.a, l.b] {
                let port = f.node_mut(e.node).unwrap().port_mut(e.port).unwrap();
                port.width = ActiveWidth::X4;
                port.speed = speed;
            }
        }
        let text = ibnet::write(&f, &WriteOptions::default()).unwrap();
        let back = ibnet::parse(&text).unwrap().fabric;
        prop_assert_eq!(canon(&back), canon(&f));
        // The ibsim dialect keeps the structure (GUIDs are ibsim's).
        let text = ibnet::write(&f, &WriteOptions { dialect: Dialect::IbsimNet, title: None }).unwrap();
        let back = ibnet::parse(&text).unwrap().fabric;
        prop_assert_eq!(by_description(&back), by_description(&f));
    }

    #[test]
    fn parser_never_panics_on_damaged_files(
        cuts in prop::collection::vec((0usize..8000, 0usize..40, any::<u8>()), 1..6),
    ) {
        let mut bytes = fixture("kary4x2_opensm.ibnetdiscover").into_bytes();
        for (at, len, b) in cuts {
            let at = at % bytes.len();
            let end = (at + len).min(bytes.len());
            if b % 2 == 0 {
                bytes.drain(at..end);
            } else {
                for x in &mut bytes[at..end] { *x = b; }
            }
            if bytes.is_empty() { break; }
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = ibnet::parse(&text) {
            prop_assert!(e.line >= 1 && e.line <= text.lines().count().max(1));
        }
        let _ = ibnet::parse_ports_report(&text);
    }
}

#[test]
fn ibnetdiscover_output_variants_read_the_same() {
    // `-f` (s= w= v= in comments), `-g` (chassis headings), `-s` (discovery steps).
    let plain = ibnet::parse(&fixture("dragonfly_2_1_1_3.ibnetdiscover")).unwrap();
    assert!(plain.notes.is_empty());
    for v in ["f", "g", "s"] {
        let p = ibnet::parse(&fixture(&format!("dragonfly_2_1_1_3.ibnetdiscover-{v}")))
            .unwrap_or_else(|e| panic!("-{v}: {e}"));
        assert_eq!(canon(&p.fabric), canon(&plain.fabric), "-{v}");
        if v != "f" {
            assert!(!p.notes.is_empty(), "-{v} lines are noted");
        }
    }
}

#[test]
fn ports_report_lines_are_ibnetdiscovers_for_every_cable() {
    // The fabric read from ibnetdiscover's topology file, written as `ibnetdiscover -p`
    // prints it, against the same tool's `-p` capture: every line with a cable is the
    // same byte for byte (ports without one are not in the topology file).
    for name in [
        "kary4x2_opensm",
        "dragonfly_2_1_1_3",
        "ibsim_2sw2path4hca",
        "ibsim_2sw2path4hca2port",
        "torus3x2_ibsim_names",
    ] {
        let topo = ibnet::parse(&fixture(&format!("{name}.ibnetdiscover")))
            .unwrap()
            .fabric;
        let ours = ibnet::write_ports_report(&topo);
        let cabled = |t: &str| {
            let mut v: Vec<String> = t
                .lines()
                .filter(|l| l.contains(" - "))
                .map(str::to_owned)
                .collect();
            v.sort();
            v
        };
        let theirs = fixture(&format!("{name}.ports"));
        assert_eq!(cabled(&ours), cabled(&theirs), "{name}");
        assert!(!cabled(&ours).is_empty());
        // And it reads back as the same fabric.
        let back = ibnet::parse_ports_report(&ours).unwrap().fabric;
        assert_eq!(back.link_count(), topo.link_count(), "{name}");
    }
}

/// A switch whose port 0 is enhanced (SwitchInfo.EnhancedPort0) is printed
/// `enhanced port 0`, as ibnetdiscover prints it, and read back so; others `base port 0`.
#[test]
fn enhanced_port_0_is_read_and_written_as_ibnetdiscover_prints_it() {
    let mut f = generate::k_ary_n_tree(2, 2).unwrap();
    let (first, _) = f.switches().next().unwrap();
    f.node_mut(first).unwrap().enhanced_port0 = true;
    let text = ibnet::write(&f, &WriteOptions::default()).unwrap();
    let guid = f.guid_of(first).0;
    let header = text
        .lines()
        .find(|l| l.starts_with("Switch") && l.contains(&format!("S-{guid:016x}")))
        .unwrap();
    assert!(
        header.contains("# \"") && header.contains(" enhanced port 0 lid "),
        "{header}"
    );
    assert_eq!(
        text.matches(" base port 0 lid ").count(),
        f.switch_count() - 1,
        "{text}"
    );
    let back = ibnet::parse(&text).unwrap().fabric;
    for (_, n) in back.switches() {
        assert_eq!(n.enhanced_port0, n.guid().0 == guid, "{}", n.description);
    }
}
