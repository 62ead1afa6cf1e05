use ibsm_routing::EngineKind;
use ibsm_sim::{Sim, SimConfig, SmaAgent};
use ibsm_topology::{Fabric, generate};
use ibsm_transport::{Instant, Transport};

use super::*;
use crate::{SmConfig, SmEvent, driver};

/// Brings `fabric` up in the simulator with our SM on its first CA.
fn up(fabric: &Fabric, cfg: SmConfig) -> (Sim<SmaAgent>, SubnetManager) {
    let mut sim: Sim<SmaAgent> = Sim::from_fabric(fabric, SimConfig::default()).unwrap();
    let (_, ca) = fabric.cas().next().unwrap();
    let mut port = sim
        .attach_sm(sim.node_by_guid(ca.guid().0).unwrap(), 1)
        .unwrap();
    let mut sm = SubnetManager::new(cfg, port.local_port()).unwrap();
    sm.start(port.now()).unwrap();
    let mut up = false;
    driver::run(&mut sm, &mut port, Instant::from_secs(60), |ev| {
        up = matches!(ev, SmEvent::SubnetUp { .. });
        up
    })
    .unwrap();
    assert!(up);
    (sim, sm)
}

#[test]
fn lft_dump_is_what_the_switches_hold_and_reads_back() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let (sim, sm) = up(&fabric, SmConfig::default());
    let dumps = Dumps::of(&sm);
    let read = LftDump::parse(&dumps.lfts).unwrap();
    assert_eq!(read, LftDump::of(&sm), "round trip");
    assert_eq!(read.to_string(), dumps.lfts);
    assert_eq!(read.switches.len(), sm.subnet().switch_count());
    let top = read.switches[0].top;
    assert!(top > 0);
    for sw in &read.switches {
        let node = sim.node_by_guid(sw.guid).unwrap();
        let held = sim.with_agent(node, |a| a.sma().lft().to_vec());
        let held: BTreeMap<u16, u8> = (0..=top)
            .filter(|&l| held[usize::from(l)] != 0xFF)
            .map(|l| (l, held[usize::from(l)]))
            .collect();
        assert_eq!(sw.ports(), held, "switch {:#x}", sw.guid);
        assert_eq!(sw.lid, sm.lids()[&sw.guid].0);
        // Every routed LID is named by its owner's port GUID (what OpenSM's file engine
        // keys on), and the switch's own LID leaves through port 0.
        for r in &sw.routes {
            let d = r.dest.as_ref().unwrap();
            let (base, lmc) = sm.lids()[&d.port_guid];
            assert!(r.lid >= base && r.lid < base + (1 << lmc), "{r:?}");
        }
        let own = sw.routes.iter().find(|r| r.lid == sw.lid).unwrap();
        assert_eq!(
            (own.port, own.dest.as_ref().unwrap().node_type.as_str()),
            (0, "Switch")
        );
    }
    let line = dumps.lfts.lines().nth(1).unwrap();
    assert!(line.starts_with("0x0001 0"), "{line}");
    assert!(
        dumps
            .lfts
            .lines()
            .any(|l| l.contains("# Channel Adapter portguid 0x"))
    );
}

#[test]
fn subnet_lst_lists_every_cable_from_both_ends() {
    let fabric = generate::k_ary_n_tree(4, 2).unwrap();
    let (_sim, sm) = up(&fabric, SmConfig::default());
    let lst = Dumps::of(&sm).subnet;
    assert_eq!(lst.lines().count(), 2 * fabric.link_count(), "{lst}");
    assert!(
        lst.lines()
            .all(|l| l.ends_with("LOG=ACT SPD=2.5") || l.contains("LOG=ACT")),
        "{lst}"
    );
    // The SM's own port is marked on both sides of its cable.
    assert_eq!(lst.matches("{ CA-SM ").count(), 2, "{lst}");
    let sm_lid = sm.sm_lid();
    assert!(lst.contains(&format!("LID:{sm_lid:04X} PN:01 }}")), "{lst}");
}

#[test]
fn sl2vl_dump_shows_the_maps_written() {
    let fabric = generate::grid(&generate::Grid {
        dims: vec![3, 3],
        torus: true,
        cas_per_switch: 1,
    })
    .unwrap();
    let cfg = SmConfig {
        routing: EngineKind::Dor.into(),
        ..SmConfig::default()
    };
    let (sim, sm) = up(&fabric, cfg);
    let text = Dumps::of(&sm).sl2vl;
    assert_eq!(text.matches("Switch 0x").count(), 9, "{text}");
    // One row per (input, output) pair: check a row against the switch's table.
    let (_, sw) = fabric.switches().next().unwrap();
    let guid = sw.guid().0;
    let (out, vls) = sm.programmed_sl2vl(guid)[0];
    let row: String = vls.iter().map(|v| format!(" {v:<2}")).collect();
    let section = after_line(&text, &format!("Switch 0x{guid:016x}"));
    assert!(
        section.contains(&format!("0   {out:<3} :{row}\n")),
        "{section}"
    );
    let node = sim.node_by_guid(guid).unwrap();
    let held = sim.with_agent(node, |a| a.sma().sl2vl(0, out));
    assert_eq!(held, Some(ibsm_wire::SlToVlMap::from_vls(vls).0));
    // A single-VL engine writes none.
    let (_sim, plain) = up(&generate::k_ary_n_tree(2, 2).unwrap(), SmConfig::default());
    assert!(Dumps::of(&plain).sl2vl.starts_with("# no SL2VL"));
}

fn after_line<'a>(text: &'a str, mark: &str) -> &'a str {
    let at = text.find(mark).unwrap();
    &text[at..]
}

#[test]
fn mfts_dump_layout() {
    let text = mfts_dump(&[
        (0x10, 0xC000, vec![1, 3]),
        (0x10, 0xC001, vec![2]),
        (0x20, 0xC000, vec![17]),
    ]);
    assert_eq!(
        text,
        "\nSwitch 0x0000000000000010\nLID    : Out Port(s)\n0xC000 : 0x001  0x003 \n0xC001 : 0x002 \n\
         \nSwitch 0x0000000000000020\nLID    : Out Port(s)\n0xC000 : 0x011 \n"
    );
}

#[test]
fn write_to_replaces_every_file_whole() {
    let fabric = generate::k_ary_n_tree(2, 2).unwrap();
    let (_sim, sm) = up(&fabric, SmConfig::default());
    let dir = std::env::temp_dir().join(format!("ibsm-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dumps = Dumps::of(&sm);
    let written = dumps.write_to(&dir.join("sub")).unwrap();
    assert_eq!(written.len(), 6);
    for (name, text) in dumps.files() {
        assert_eq!(
            std::fs::read_to_string(dir.join("sub").join(name)).unwrap(),
            text
        );
    }
    let names: Vec<String> = std::fs::read_dir(dir.join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 6, "temporary files left: {names:?}");
    let g2l = crate::store::parse_guid2lid(&dumps.guid2lid, "g").unwrap();
    assert_eq!(&g2l, sm.lids());
    // A file where the directory should be: the error names it.
    std::fs::write(dir.join("file"), "x").unwrap();
    let e = dumps.write_to(&dir.join("file")).unwrap_err();
    assert_eq!(e.path, dir.join("file"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A symlink planted where a temporary file goes is not followed: that name is
/// refused and another taken; nothing is left behind.
#[test]
fn a_link_at_the_temporary_name_is_not_followed() {
    let dir = std::env::temp_dir().join(format!("ibsm-dump-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    // The first name tried for every file is the planted one; then fresh ones.
    std::os::unix::fs::symlink(&victim, dir.join("planted")).unwrap();
    let mut n = 0;
    let mut names = |_: &str| {
        n += 1;
        if n % 2 == 1 {
            "planted".to_string()
        } else {
            format!("fresh{n}")
        }
    };
    let dumps = Dumps {
        lfts: "lfts".into(),
        subnet: "subnet".into(),
        mfts: "mfts".into(),
        sl2vl: "sl2vl".into(),
        guid2lid: "g2l".into(),
        slurm: "slurm".into(),
    };
    dumps.write_with(&dir, &mut names).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    for (name, text) in dumps.files() {
        assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), text);
    }
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.starts_with("fresh"))
        .collect();
    left.sort();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    // Two names for one file differ.
    assert_ne!(
        crate::persist::temp_name(LFTS_FILE),
        crate::persist::temp_name(LFTS_FILE)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

const GOOD: &str = "\
Unicast lids [0-3] of switch Lid 2 guid 0x0000000000000010 ('sw one'):
0x0001 001 # Channel Adapter portguid 0x0000000000000021: 'host a'
0x0002 000 # Switch portguid 0x0000000000000010: 'sw one'
0x0003 002 # unknown node and type
3 lids dumped
";

#[test]
fn reads_opensm_layout() {
    let d = LftDump::parse(GOOD).unwrap();
    assert_eq!(d.switches.len(), 1);
    let sw = &d.switches[0];
    assert_eq!(
        (sw.guid, sw.lid, sw.top, sw.desc.as_str()),
        (0x10, 2, 3, "sw one")
    );
    assert_eq!(sw.ports(), BTreeMap::from([(1, 1), (2, 0), (3, 2)]));
    assert_eq!(sw.routes[0].dest.as_ref().unwrap().port_guid, 0x21);
    assert_eq!(
        sw.routes[0].dest.as_ref().unwrap().node_type,
        "Channel Adapter"
    );
    assert_eq!(sw.routes[2].dest, None);
    assert_eq!(d.to_string(), GOOD);
    // Comments, blank lines and a route without comment (OpenSM's loader takes it).
    let loose =
        "# by hand\n\nUnicast lids [0-1] of switch Lid 1 guid 0x1 (''):\n  0x1 0\n1 lids dumped\n";
    let d = LftDump::parse(loose).unwrap();
    assert_eq!(d.switches[0].ports(), BTreeMap::from([(1, 0)]));
}

#[test]
fn errors_name_the_line_and_token() {
    let head = "Unicast lids [0-3] of switch Lid 2 guid 0x10 ('s'):\n";
    let cases: Vec<(String, usize, LftErrorKind, &str)> = vec![
        (
            "0x0001 001\n".into(),
            1,
            LftErrorKind::RouteOutsideSwitch,
            "0x0001 001",
        ),
        (
            "Unicast lids [0-x] of switch Lid 2 guid 0x10 ('s'):\n".into(),
            1,
            LftErrorKind::BadNumber,
            "",
        ),
        (
            "Unicast lids [0-3] of switch guid 0x10 ('s'):\n".into(),
            1,
            LftErrorKind::BadHeader,
            "",
        ),
        (
            "Unicast lids [0-3] of switch Lid 2 guid 0x10 ('s')\n".into(),
            1,
            LftErrorKind::BadHeader,
            "",
        ),
        (
            format!("{head}0x0001 abc\n3 lids dumped\n"),
            2,
            LftErrorKind::BadNumber,
            "",
        ),
        (
            format!("{head}0x00zz 1\n3 lids dumped\n"),
            2,
            LftErrorKind::BadNumber,
            "",
        ),
        (
            format!("{head}0x10000 1\n3 lids dumped\n"),
            2,
            LftErrorKind::BadNumber,
            "10000",
        ),
        (
            format!("{head}0x0001 256\n3 lids dumped\n"),
            2,
            LftErrorKind::BadNumber,
            "256",
        ),
        (
            format!("{head}0x0004 1\n3 lids dumped\n"),
            2,
            LftErrorKind::LidAboveTop { top: 3 },
            "",
        ),
        (
            format!("{head}0x0002 1\n0x0002 1\n3 lids dumped\n"),
            3,
            LftErrorKind::LidOutOfOrder,
            "",
        ),
        (
            format!("{head}0x0001 1 # Switch portguid 0xq: 'x'\n3 lids dumped\n"),
            2,
            LftErrorKind::BadComment,
            "",
        ),
        (
            format!("{head}0x0001 1 x\n3 lids dumped\n"),
            2,
            LftErrorKind::BadComment,
            "x",
        ),
        (
            format!("{head}4 lids dumped\n"),
            2,
            LftErrorKind::CountMismatch { top: 3 },
            "",
        ),
        (
            format!("# c\n{head}0x0001 1\n"),
            2,
            LftErrorKind::Unterminated,
            "",
        ),
        (
            format!("{head}{head}3 lids dumped\n"),
            1,
            LftErrorKind::Unterminated,
            "",
        ),
        (
            format!("{head}3 lids dumped\nMulticast mlids [0xc000-0xc3ff]\n"),
            3,
            LftErrorKind::UnknownLine,
            "",
        ),
        (
            "3 lids dumped\n".into(),
            1,
            LftErrorKind::RouteOutsideSwitch,
            "",
        ),
    ];
    for (text, line, kind, token) in cases {
        let e = LftDump::parse(&text).unwrap_err();
        assert_eq!((e.line, e.kind), (line, kind), "{text:?}: {e}");
        if !token.is_empty() {
            assert_eq!(e.token, token, "{text:?}");
        }
        assert!(e.to_string().starts_with(&format!("line {line}: ")));
    }
}

#[test]
fn the_slurm_topology_is_that_of_the_fabric_brought_up() {
    let mut fabric = generate::k_ary_n_tree(2, 2).unwrap();
    let cas: Vec<_> = fabric.cas().map(|(id, _)| id).collect();
    for (i, id) in cas.into_iter().enumerate() {
        fabric.node_mut(id).unwrap().description = format!("node{i:02} HCA-1");
    }
    let (_sim, sm) = up(&fabric, SmConfig::default());
    let dumps = Dumps::of(&sm);
    let want = ibsm_topology::slurm::tree_topology(&fabric, |_, n| n.description.clone());
    assert_eq!(dumps.slurm, want);
    assert!(dumps.slurm.contains("Nodes=node[00-01]"), "{}", dumps.slurm);
    assert_eq!(
        dumps.slurm.lines().count(),
        fabric.switch_count(),
        "{}",
        dumps.slurm
    );
}
