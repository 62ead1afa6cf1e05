use super::*;
use crate::model::{Discovered, FoundNode, FoundPort};
use ibsm_wire::{DrPath, NodeInfo, NodeType, PortInfo, SwitchInfo};

mod generated;

fn parse(s: &str) -> PartitionConfig {
    s.parse().unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn err(s: &str) -> ParseError {
    s.parse::<PartitionConfig>().expect_err(s)
}

#[test]
fn opensm_examples_parse() {
    let cfg = parse(
        "Default=0x7fff : ALL, SELF=full ;
         Default=0x7fff : ALL, ALL_SWITCHES=full, SELF=full ;
         NewPartition , ipoib : 0x123456=full, 0x3456789034=limited, 0x2134af2306 ;
         YetAnotherOne = 0x300 : SELF=full ;
         YetAnotherOne = 0x300 : ALL=limited ;
         ShareIO = 0x80 , defmember=full : 0x123451, 0x123452;
         # 0x123453, 0x123454 will be limited
         ShareIO = 0x80 : 0x123453, 0x123454, 0x123455=full;
         ShareIO = 0x80 , defmember=full : 0x12345b, 0x12345c=limited, 0x12345d;
         Empty=0x0042 : ;",
    );
    assert_eq!(cfg.statements.len(), 9);
    let parts = cfg.partitions();
    // Default (merged), NewPartition (generated key), YetAnotherOne, ShareIO, Empty.
    let keys: Vec<u16> = parts.iter().map(|p| p.pkey).collect();
    assert_eq!(keys, [0x7fff, 0x0001, 0x0300, 0x0080, 0x0042]);
    assert_eq!(parts[0].members.len(), 5);
    assert!(parts[1].flags.ipoib);
    let share = &parts[3];
    assert_eq!(share.members.len(), 8);
    assert_eq!(share.members[0], (Member::Guid(0x123451), Membership::Full));
    assert_eq!(
        share.members[2],
        (Member::Guid(0x123453), Membership::Limited)
    );
    assert_eq!(
        share.members[6],
        (Member::Guid(0x12345c), Membership::Limited)
    );
    assert_eq!(share.members[7], (Member::Guid(0x12345d), Membership::Full));
    assert!(parts[4].members.is_empty());
}

#[test]
fn flags_and_multiline_statements() {
    let cfg = parse(
        "storage net = 0x10, ipoib, indx0, mtu=4, rate=7, sl=2, scope=2, scope=5,
            Q_Key=0x0b1b, TClass=3, FlowLabel=0x12, defmember=both # comment : ; ,
         :
            ALL_CAS,   # the hosts
            ALL_ROUTERS=full,
            SELF=full
         ;",
    );
    let st = &cfg.statements[0];
    assert_eq!(st.name, "storage net");
    assert_eq!(st.pkey, Some(0x10));
    assert!(st.flags.ipoib && st.flags.indx0);
    let f = &st.flags.group;
    assert_eq!((f.mtu, f.rate, f.sl), (Some(4), Some(7), Some(2)));
    assert_eq!(f.scope, [2, 5]);
    assert_eq!(
        (f.q_key, f.tclass, f.flow_label),
        (Some(0xb1b), Some(3), Some(0x12))
    );
    assert_eq!(st.flags.defmember, Some(Membership::Both));
    assert_eq!(
        cfg.partitions()[1].members,
        [
            (Member::AllCas, Membership::Both),
            (Member::AllRouters, Membership::Full),
            (Member::SelfPort, Membership::Full)
        ]
    );
}

#[test]
fn default_rules_follow_opensm() {
    // No file: everyone full.
    let d = PartitionConfig::opensm_default().partitions();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].pkey, DEFAULT_PKEY);
    assert_eq!(d[0].members, [(Member::All, Membership::Full)]);
    assert!(d[0].flags.ipoib);
    assert_eq!(
        PartitionConfig::opensm_default().to_string(),
        "Default=0x7fff, ipoib : ALL=full ;\n"
    );
    // A file without a default rule: everyone limited, the SM full.
    let p = parse("a=0x1 : ALL=full ;").partitions();
    assert_eq!(p[0].pkey, DEFAULT_PKEY);
    assert_eq!(
        p[0].members,
        [
            (Member::All, Membership::Limited),
            (Member::SelfPort, Membership::Full)
        ]
    );
    // "Default" without a P_Key is the default partition.
    let p = parse("Default : ALL=full ; x : SELF ;").partitions();
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].pkey, p[1].pkey), (DEFAULT_PKEY, 1));
    // Generated keys skip the explicit ones.
    let p = parse("a=0x1:; b:; c=0x2:; d:;").partitions();
    let keys: Vec<u16> = p.iter().map(|p| p.pkey).collect();
    assert_eq!(keys, [DEFAULT_PKEY, 1, 3, 2, 4]);
}

#[test]
fn errors_name_line_column_and_token() {
    let cases: &[(&str, usize, usize, &str, ParseErrorKind)] = &[
        (
            "p=0x8000 : ALL ;",
            1,
            3,
            "0x8000",
            ParseErrorKind::ReservedPKey,
        ),
        ("p=0 : ALL ;", 1, 3, "0", ParseErrorKind::ReservedPKey),
        (
            "p=0xFFFF : ALL ;",
            1,
            3,
            "0xFFFF",
            ParseErrorKind::MembershipBitInPKey,
        ),
        (
            "p=0x10000 : ALL ;",
            1,
            3,
            "0x10000",
            ParseErrorKind::BadPKey,
        ),
        ("p=zz : ALL ;", 1, 3, "zz", ParseErrorKind::BadPKey),
        (
            "\n  p=0x1 : ALL, EVERYONE ;",
            2,
            16,
            "EVERYONE",
            ParseErrorKind::UnknownMember,
        ),
        ("p=0x1 : 0xg1 ;", 1, 9, "0xg1", ParseErrorKind::BadGuid),
        ("p=0x1 : 0 ;", 1, 9, "0", ParseErrorKind::BadGuid),
        (
            "p=0x1 : 0x1ffffffffffffffff ;",
            1,
            9,
            "0x1ffffffffffffffff",
            ParseErrorKind::BadGuid,
        ),
        (
            "p=0x1 : ALL=limi ;",
            1,
            13,
            "limi",
            ParseErrorKind::BadMembership,
        ),
        (
            "p=0x1, fast : ALL ;",
            1,
            8,
            "fast",
            ParseErrorKind::UnknownFlag,
        ),
        (
            "p=0x1, mtu=9 : ALL ;",
            1,
            12,
            "9",
            ParseErrorKind::BadFlagValue,
        ),
        (
            "p=0x1, ipoib=1 : ALL ;",
            1,
            14,
            "1",
            ParseErrorKind::BadFlagValue,
        ),
        (
            "p=0x1, mtu : ALL ;",
            1,
            8,
            "mtu",
            ParseErrorKind::BadFlagValue,
        ),
        (
            "p=0x1, defmember=most : ALL ;",
            1,
            18,
            "most",
            ParseErrorKind::BadMembership,
        ),
        ("p=0x1 ALL ;", 1, 7, "ALL", ParseErrorKind::MissingColon),
        ("p=0x1 ; ALL ;", 1, 7, ";", ParseErrorKind::MissingColon),
        ("p=0x1 : ALL", 1, 12, "", ParseErrorKind::MissingSemicolon),
        (
            "p=0x1 : ALL\nq=0x2 : ALL ;",
            2,
            1,
            "q",
            ParseErrorKind::MissingSemicolon,
        ),
        (
            "p=0x1 : ALL, ;",
            1,
            14,
            ";",
            ParseErrorKind::Unexpected {
                expected: "a member",
            },
        ),
        (
            ";",
            1,
            1,
            ";",
            ParseErrorKind::Unexpected {
                expected: "a partition definition",
            },
        ),
        (
            "p=0x1 : mgid=ff12:401b::1 ALL ;",
            1,
            27,
            "ALL",
            ParseErrorKind::MissingSemicolon,
        ),
        (
            "p=0x1 :\n mgid=zz12::1\n ALL ;",
            2,
            7,
            "zz12::1",
            ParseErrorKind::BadMgid,
        ),
        (
            "p=0x1 : mgid=ff12:::1 ;",
            1,
            14,
            "ff12:::1",
            ParseErrorKind::BadMgid,
        ),
        (
            "p=0x1 : mgid=fe80::1 ;",
            1,
            14,
            "fe80::1",
            ParseErrorKind::NotMulticast,
        ),
        (
            "p=0x1 : mgid=ff12:401b:8002::1 ;",
            1,
            14,
            "ff12:401b:8002::1",
            ParseErrorKind::MgidPKeyMismatch { pkey: 0x8001 },
        ),
        (
            "p=0x1 : mgid=ff12::1, mtu=9 ;",
            1,
            27,
            "9",
            ParseErrorKind::BadFlagValue,
        ),
        (
            "p=0x1 : mgid=ff12::1, sl=16 ;",
            1,
            26,
            "16",
            ParseErrorKind::BadFlagValue,
        ),
        (
            "p=0x1 : mgid=ff12::1, FlowLabel=0x100000 ;",
            1,
            33,
            "0x100000",
            ParseErrorKind::BadFlagValue,
        ),
        (
            "p=0x1 : mgid=ff12::1, ipoib ;",
            1,
            23,
            "ipoib",
            ParseErrorKind::UnknownGroupFlag,
        ),
        (
            "p=0x1 : mgid=ff12::1, fast=1 ;",
            1,
            23,
            "fast",
            ParseErrorKind::UnknownGroupFlag,
        ),
        (
            "p=0x1, mtu=5 : mgid=ff12:401b::1, mtu=4 ;",
            1,
            39,
            "4",
            ParseErrorKind::IpGroupMismatch {
                flag: "mtu",
                broadcast: 5,
            },
        ),
        (
            "p=0x1 : mgid=ff12:401b::1, rate=6 ;",
            1,
            33,
            "6",
            ParseErrorKind::IpGroupMismatch {
                flag: "rate",
                broadcast: 3,
            },
        ),
        (
            "p=0x1 : mgid= ;",
            1,
            15,
            ";",
            ParseErrorKind::Unexpected {
                expected: "an MGID",
            },
        ),
        (
            "p=0x1 : mgid ;",
            1,
            9,
            "mgid",
            ParseErrorKind::UnknownMember,
        ),
        (
            "p=0x1 : ALL=full=full ;",
            1,
            17,
            "=",
            ParseErrorKind::MissingSemicolon,
        ),
        (
            "ä=0x1 : ALL, böse ;",
            1,
            14,
            "böse",
            ParseErrorKind::UnknownMember,
        ),
    ];
    for (text, line, column, token, kind) in cases {
        let e = err(text);
        assert_eq!(
            (e.line, e.column, e.token.as_str(), &e.kind),
            (*line, *column, *token, kind),
            "{text:?}: {e}"
        );
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("line {line}, column {column}: ")),
            "{msg}"
        );
    }
}

#[test]
fn place_keeps_indexes_and_truncates() {
    // Index 0 first; the rest where the port has them.
    let cur = [0xffff, 0, 0x8005, 0x0003];
    let (t, d) = place(&[0xffff, 0x0003, 0x8005, 0x8009], &cur, 6);
    assert_eq!(t, [0xffff, 0x8009, 0x8005, 0x0003, 0, 0]);
    assert!(d.is_empty());
    // A membership change keeps the index.
    let (t, _) = place(&[0xffff, 0x0005], &cur, 4);
    assert_eq!(t, [0xffff, 0, 0x0005, 0]);
    // Duplicates and invalid entries vanish; what does not fit is reported.
    let (t, d) = place(&[0x7fff, 0x7fff, 0x8000, 0x0001, 0x0002], &[], 2);
    assert_eq!(t, [0x7fff, 0x0001]);
    assert_eq!(d, [0x0002]);
    let (t, d) = place(&[0x7fff], &[], 0);
    assert!(t.is_empty());
    assert_eq!(d, [0x7fff]);
}

/// A switch (3 ports) with a CA on ports 1 and 2 (the SM on the first) and a second
/// switch on port 3.
fn subnet(enforce_cap: u16) -> Discovered {
    subnet_caps(4, 8, enforce_cap)
}

fn subnet_caps(ca_cap: u16, sw_cap: u16, enforce_cap: u16) -> Discovered {
    let sw_info = |guid, ports| NodeInfo {
        node_type: NodeType::Switch,
        num_ports: ports,
        node_guid: guid,
        port_guid: guid,
        partition_cap: sw_cap,
        ..NodeInfo::default()
    };
    let ca_info = |guid| NodeInfo {
        node_type: NodeType::Ca,
        num_ports: 1,
        node_guid: guid,
        port_guid: guid + 1,
        partition_cap: ca_cap,
        ..NodeInfo::default()
    };
    let port = |guid, path: bool| FoundPort {
        guid,
        info: Some(PortInfo::default()),
        path: path.then(|| Box::new(DrPath::local())),
        peer: None,
        pkeys: vec![0xffff, 0, 0, 0],
        ext_speeds: false,
        error: None,
    };
    let si = SwitchInfo {
        partition_enforcement_cap: enforce_cap,
        inbound_enforcement_cap: true,
        outbound_enforcement_cap: true,
        ..SwitchInfo::default()
    };
    let mut s = Discovered::default();
    s.nodes.push(FoundNode {
        info: sw_info(0x100, 3),
        description: String::new(),
        path: DrPath::local(),
        switch_info: Some(si),
        ports: (0..=3).map(|_| port(0x100, false)).collect(),
        error: None,
    });
    for ca in [0x200u64, 0x300] {
        s.nodes.push(FoundNode {
            info: ca_info(ca),
            description: String::new(),
            path: DrPath::local(),
            switch_info: None,
            ports: vec![FoundPort::default(), port(ca + 1, true)],
            error: None,
        });
    }
    s.nodes.push(FoundNode {
        info: sw_info(0x400, 1),
        description: String::new(),
        path: DrPath::local(),
        switch_info: Some(si),
        ports: (0..=1).map(|_| port(0x400, false)).collect(),
        error: None,
    });
    s.link((0, 1), (1, 1));
    s.link((0, 2), (2, 1));
    s.link((0, 3), (3, 1));
    s
}

#[test]
fn plan_programs_members_and_enforcement() {
    let cfg = parse(
        "Default=0x7fff : ALL=limited, ALL_SWITCHES=full ;
         a=0x0a : 0x201=full, 0x301 ;
         b=0x0b, defmember=both : 0x301 ;
         c=0x0c : 0x301 ; d=0x0d : 0x301 ;",
    );
    let plan = cfg.plan(&subnet(2), 0x201);
    // OpenSM's default (no allow_both_pkeys): `both` is a full membership, one entry.
    assert_eq!(plan.tables[&(2, 1)], [0x7fff, 0x000a, 0x800b, 0x000c]);
    let mut cfg = cfg;
    cfg.allow_both_pkeys = true;
    let plan = cfg.plan(&subnet(2), 0x201);
    // The SM's port is a full member of the default partition whatever the file says.
    assert_eq!(plan.tables[&(1, 1)], [0xffff, 0x800a, 0, 0]);
    // 0x301: 5 entries for 4 slots, the last in priority order left out.
    assert_eq!(plan.tables[&(2, 1)], [0x7fff, 0x000a, 0x800b, 0x000b]);
    assert_eq!(plan.tables[&(0, 0)].len(), 8);
    assert_eq!(plan.tables[&(0, 0)][..2], [0xffff, 0]);
    assert_eq!(plan.tables[&(3, 0)][0], 0xffff);
    // Enforcing switch ports carry the CA's table, cut to PartitionEnforcementCap.
    assert_eq!(plan.tables[&(0, 1)], [0xffff, 0x800a]);
    assert_eq!(plan.tables[&(0, 2)], [0x7fff, 0x000a]);
    let on = Enforce {
        inbound: true,
        outbound: true,
    };
    assert_eq!(plan.enforcement[&(0, 1)], on);
    assert_eq!(plan.enforcement[&(0, 3)], Enforce::default());
    assert_eq!(plan.enforcement[&(3, 1)], Enforce::default());
    assert!(!plan.tables.contains_key(&(0, 3)));
    assert_eq!(
        plan.warnings,
        [
            PartitionWarning::Truncated {
                node_guid: 0x300,
                port: 1,
                capacity: 4,
                dropped: vec![0x000c, 0x000d],
            },
            PartitionWarning::Truncated {
                node_guid: 0x100,
                port: 2,
                capacity: 2,
                dropped: vec![0x800b, 0x000b],
            }
        ]
    );
    assert!(plan.warnings[0].to_string().contains("0x000c 0x000d"));
    // No enforcement capacity, or enforcement off: no switch tables, bits off.
    for (sub, mut cfg) in [(subnet(0), cfg.clone()), (subnet(2), cfg)] {
        if sub.nodes[0].switch_info.unwrap().partition_enforcement_cap != 0 {
            cfg.enforcement = Enforcement::Off;
        }
        let plan = cfg.plan(&sub, 0x201);
        assert!(!plan.tables.contains_key(&(0, 1)));
        assert_eq!(plan.enforcement[&(0, 1)], Enforce::default());
    }
    // indx0 moves a partition to index 0.
    let plan = parse("a=0x0a, indx0 : ALL=full ;").plan(&subnet(2), 0x201);
    assert_eq!(plan.tables[&(2, 1)], [0x800a, 0x7fff, 0, 0]);
}

#[test]
fn ipoib_partitions_give_broadcast_groups() {
    let cfg = parse(
        "Default=0x7fff, ipoib : ALL=full ;
         storage=0x0012, ipoib, mtu=5, rate=7, sl=3, scope=2, scope=5, Q_Key=0x1234 : ALL ;
         plain=0x0013 : ALL ;",
    );
    let groups = cfg.ipoib_broadcast_groups(0x12);
    let mgids: Vec<String> = groups.iter().map(|g| g.mgid.to_string()).collect();
    assert_eq!(
        mgids,
        [
            "ff12:401b:ffff:0000:0000:0000:ffff:ffff",
            "ff12:401b:8012:0000:0000:0000:ffff:ffff",
            "ff15:401b:8012:0000:0000:0000:ffff:ffff",
        ]
    );
    let d = &groups[0];
    assert_eq!(
        (d.pkey, d.qkey, u8::from(d.mtu), d.sl, d.scope),
        (0xffff, 0x0b1b, 4, 0, 2)
    );
    assert_eq!(u8::from(d.rate), 3);
    assert_eq!(d.packet_life_time, 0x12);
    let s = &groups[2];
    assert_eq!(
        (s.pkey, s.qkey, u8::from(s.mtu), s.sl, s.scope),
        (0x8012, 0x1234, 5, 3, 5)
    );
    assert_eq!(u8::from(s.rate), 7);
}

#[test]
fn generated_p_keys_run_out_quietly() {
    // Every P_Key but 0x7ffe taken explicitly: one generated, the next has none left.
    let mut text: String = (1..0x7ffe).map(|k| format!("={k:#x}:;")).collect();
    text.push_str("a:; b:;");
    let parts = parse(&text).partitions();
    // 0x7ffd explicit, the implicit default, and "a".
    assert_eq!(parts.len(), 0x7fff);
    assert_eq!(
        parts.last().map(|p| (p.name.as_str(), p.pkey)),
        Some(("a", 0x7ffe))
    );
}

#[test]
fn multicast_group_lines_follow_opensm() {
    // OpenSM's own example (opensm(8)), and a group line after a member.
    let cfg = parse(
        "# multicast groups added to default
        Default=0x7fff,ipoib:
               mgid=ff12:401b::0707,sl=1 # random IPv4 group
               mgid=ff12:601b::16    # MLDv2-capable routers
               mgid=ff12:401b::16    # IGMP
               mgid=ff12:601b::2     # All routers
               mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2 # random group
               ALL=full;
        store=0x0012, sl=2, Q_Key=0x77, scope=5 : ALL_CAS=full,
               0x1234
               mgid=ff15::abcd, scope=2, scope=8, TClass=4, FlowLabel=0x12
               mgid=ff12:401b:8012::9 ;",
    );
    let st = &cfg.statements[0];
    assert_eq!(st.mgroups.len(), 5);
    assert_eq!(st.members.len(), 1);
    assert_eq!(
        st.mgroups[0].mgid,
        "ff12:401b::707".parse::<std::net::Ipv6Addr>().unwrap()
    );
    assert_eq!(st.mgroups[0].flags.sl, Some(1));
    let g = &st.mgroups[4].flags;
    assert_eq!(
        (g.sl, g.q_key, g.rate, g.mtu, g.scope.as_slice()),
        (Some(1), Some(0xDEAD_BEEF), Some(3), Some(2), &[][..])
    );
    let st = &cfg.statements[1];
    assert_eq!(st.members.len(), 2);
    assert_eq!(st.mgroups.len(), 2);
    assert_eq!(st.mgroups[0].flags.scope, [2, 8]);
    // Printed and read back.
    let back: PartitionConfig = cfg.to_string().parse().unwrap();
    assert_eq!(back, cfg);

    let groups = cfg.multicast_groups(0x12);
    let by = |m: &str| {
        groups
            .iter()
            .find(|g| g.mgid.to_string() == m)
            .unwrap_or_else(|| panic!("{m} in {groups:?}"))
    };
    // The broadcast group, then the lines'; the IPv4 group gets the P_Key bits and the
    // IP Q_Key; a non-IP group Q_Key 0 unless given.
    assert_eq!(
        groups[0].mgid.to_string(),
        "ff12:401b:ffff:0000:0000:0000:ffff:ffff"
    );
    let ip = by("ff12:401b:ffff:0000:0000:0000:0000:0707");
    assert_eq!(
        (ip.pkey, ip.qkey, ip.sl, ip.scope, ip.hop_limit),
        (0xffff, 0x0b1b, 1, 2, 0)
    );
    assert_eq!((u8::from(ip.mtu), u8::from(ip.rate)), (4, 3));
    let v6 = by("ff12:601b:ffff:0000:0000:0000:0000:0016");
    assert_eq!(v6.qkey, 0x0b1b);
    let r = by("ff12:0000:0000:0000:0000:0000:0000:0001");
    assert_eq!(
        (r.qkey, r.sl, u8::from(r.mtu), u8::from(r.rate)),
        (0xDEAD_BEEF, 1, 2, 3)
    );
    // Flags not on the line come from the statement (TClass excepted), one group per
    // scope, the scope nibble replaced.
    let s2 = by("ff12:0000:0000:0000:0000:0000:0000:abcd");
    let s8 = by("ff18:0000:0000:0000:0000:0000:0000:abcd");
    assert_eq!(
        (s2.pkey, s2.sl, s2.qkey, s2.tclass, s2.flow_label),
        (0x8012, 2, 0x77, 4, 0x12)
    );
    assert_eq!((s8.scope, s8.hop_limit), (8, 0xff));
    // The statement's scope applies to a line without one.
    let ip2 = by("ff15:401b:8012:0000:0000:0000:0000:0009");
    assert_eq!((ip2.qkey, ip2.scope), (0x77, 5));
    assert_eq!(groups.len(), 1 + 5 + 3);
    // A P_Key filled in when the line has 0, and a repeated MGID defined once.
    let cfg = parse(
        "p=0x5 : mgid=ff12:401b::1\n mgid=ff12:401b:8005::1 ;\n q=0x6 : mgid=ff12::7 ;\n r=0x7 : mgid=ff12::7 ;",
    );
    let groups = cfg.multicast_groups(0);
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert_eq!(
        groups[0].mgid.to_string(),
        "ff12:401b:8005:0000:0000:0000:0000:0001"
    );
    assert_eq!(groups[1].pkey, 0x8006);
    // Generated P_Keys reach the groups too.
    let cfg = parse("anon : mgid=ff12:401b::1 ;");
    assert_eq!(
        cfg.multicast_groups(0)[0].mgid.to_string(),
        "ff12:401b:8001:0000:0000:0000:0000:0001"
    );
}

#[test]
fn both_needs_allow_both_pkeys() {
    let mut cfg = parse("a=0x0a : 0x301=both ; b=0x0b, defmember=both : ALL_CAS ;");
    assert!(!cfg.allow_both_pkeys, "OpenSM's default");
    let sub = subnet(2);
    let valid = |plan: &PKeyPlan| -> Vec<u16> {
        plan.tables[&(2, 1)]
            .iter()
            .copied()
            .filter(|&k| k != 0)
            .collect()
    };
    assert_eq!(valid(&cfg.plan(&sub, 0x201)), [0x7fff, 0x800a, 0x800b]);
    cfg.allow_both_pkeys = true;
    // Both entries each (the table holds 4: 0x000b left out).
    assert_eq!(
        valid(&cfg.plan(&sub, 0x201)),
        [0x7fff, 0x800a, 0x000a, 0x800b]
    );
}

#[test]
fn load_names_the_file() {
    let dir = std::env::temp_dir().join(format!("ibsm-partitions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.conf");
    match PartitionConfig::load(&missing) {
        Err(PartitionLoadError::Io { path, source }) => {
            assert_eq!(path, missing);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("{other:?}"),
    }
    let bad = dir.join("bad.conf");
    std::fs::write(&bad, "Default=0x7fff : ALL ;\nx=0x8001 : ALL ;\n").unwrap();
    match PartitionConfig::load(&bad) {
        Err(e @ PartitionLoadError::Parse { .. }) => {
            let text = e.to_string();
            let PartitionLoadError::Parse { path, source } = e else {
                unreachable!()
            };
            assert_eq!((path, source.line), (bad.clone(), 2));
            assert!(
                text.contains("bad.conf") && text.contains("line 2"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    let good = dir.join("good.conf");
    std::fs::write(&good, "Default=0x7fff : ALL ;\n").unwrap();
    assert_eq!(
        PartitionConfig::load(&good).unwrap(),
        parse("Default=0x7fff : ALL ;")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
