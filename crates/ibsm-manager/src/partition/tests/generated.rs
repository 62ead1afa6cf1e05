//! Generated policies: the parser on arbitrary text, printed configurations read back,
//! and the planner against an oracle that resolves the statements itself.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

/// What one port of [`subnet_caps`] must hold under a policy, derived from the
/// statements as written and the rules of the module documentation, without the
/// crate's partition resolution (`partitions`), its member index or
/// `Membership::merge`/`entries`.
#[derive(Debug)]
struct Expected {
    /// Every entry, membership bit included, sorted.
    entries: Vec<u16>,
    /// The entry index 0 must hold: the first in priority order (the `indx0`
    /// partition, then the default one, then ascending P_Key; full before limited).
    first: Option<u16>,
}

fn expected(cfg: &PartitionConfig, guid: u64, kind: NodeType, is_sm: bool) -> Expected {
    // 0 named in the partition but not this port, 1 limited, 2 full, 3 both.
    fn strength(m: Membership) -> u8 {
        match m {
            Membership::Limited => 1,
            Membership::Full => 2,
            Membership::Both => 3,
        }
    }
    let mut strongest: BTreeMap<u16, u8> = BTreeMap::new();
    // P_Keys in the order their first statement comes, and those flagged indx0.
    let mut seen: Vec<u16> = Vec::new();
    let mut flagged: Vec<u16> = Vec::new();
    for st in &cfg.statements {
        let pkey = match st.pkey {
            Some(k) => k,
            None if st.name == "Default" => DEFAULT_PKEY,
            None => unreachable!("policy_statement always names a P_Key"),
        };
        if !seen.contains(&pkey) {
            seen.push(pkey);
        }
        if st.flags.indx0 {
            flagged.push(pkey);
        }
        let def = st.flags.defmember.unwrap_or(Membership::Limited);
        let slot = strongest.entry(pkey).or_insert(0);
        for e in &st.members {
            let hit = match e.member {
                Member::All => true,
                Member::AllCas => kind == NodeType::Ca,
                Member::AllSwitches => kind == NodeType::Switch,
                Member::AllRouters => kind == NodeType::Router,
                Member::SelfPort => is_sm,
                Member::Guid(g) => g == guid,
            };
            if hit {
                *slot = (*slot).max(strength(e.membership.unwrap_or(def)));
            }
        }
    }
    let default = strongest.entry(DEFAULT_PKEY).or_insert(0);
    if !seen.contains(&DEFAULT_PKEY) {
        // The rule added to a file without one: ALL=limited, SELF=full.
        *default = (*default).max(if is_sm { 2 } else { 1 });
    }
    if is_sm {
        *default = (*default).max(2);
    }
    let idx0 = seen.iter().copied().find(|k| flagged.contains(k));
    let mut ordered: Vec<u16> = strongest.keys().copied().collect();
    ordered.sort_by_key(|&k| (Some(k) != idx0, k != DEFAULT_PKEY, k));
    let mut in_order = Vec::new();
    for k in ordered {
        match strongest[&k] {
            0 => {}
            1 => in_order.push(k),
            3 if cfg.allow_both_pkeys => in_order.extend([k | 0x8000, k]),
            _ => in_order.push(k | 0x8000),
        }
    }
    let first = in_order.first().copied();
    in_order.sort_unstable();
    Expected {
        entries: in_order,
        first,
    }
}

fn policy_statement() -> impl Strategy<Value = Statement> {
    let member = prop_oneof![
        Just(Member::All),
        Just(Member::AllCas),
        Just(Member::AllSwitches),
        Just(Member::SelfPort),
        prop::sample::select(vec![0x100u64, 0x201, 0x301, 0x400, 0x999]).prop_map(Member::Guid),
    ];
    let entry = (member, proptest::option::of(membership()))
        .prop_map(|(member, membership)| MemberEntry { member, membership });
    (
        prop::sample::select(vec![1u16, 2, 3, 0x40, 0x7fff]),
        any::<bool>(),
        proptest::option::of(membership()),
        proptest::collection::vec(entry, 0..4),
    )
        .prop_map(|(pkey, indx0, defmember, members)| Statement {
            name: String::new(),
            pkey: Some(pkey),
            flags: Flags {
                indx0,
                defmember,
                ..Flags::default()
            },
            members,
            mgroups: Vec::new(),
        })
}

fn word() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.-]{0,8}"
}

fn membership() -> impl Strategy<Value = Membership> {
    prop_oneof![
        Just(Membership::Limited),
        Just(Membership::Full),
        Just(Membership::Both)
    ]
}

fn statement() -> impl Strategy<Value = Statement> {
    let member = prop_oneof![
        Just(Member::All),
        Just(Member::AllCas),
        Just(Member::AllSwitches),
        Just(Member::AllRouters),
        Just(Member::SelfPort),
        (1u64..).prop_map(Member::Guid),
    ];
    let entry = (member, proptest::option::of(membership()))
        .prop_map(|(member, membership)| MemberEntry { member, membership });
    let flags = (
        any::<(bool, bool)>(),
        proptest::option::of(1u8..=5),
        proptest::option::of(2u8..=63),
        proptest::option::of(0u8..=15),
        proptest::collection::btree_set(1u8..=15, 0..3),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u8>()),
        proptest::option::of(0u32..=0xF_FFFF),
        proptest::option::of(membership()),
    )
        .prop_map(
            |((ipoib, indx0), mtu, rate, sl, scope, q_key, tclass, flow_label, defmember)| Flags {
                ipoib,
                indx0,
                group: GroupFlags {
                    mtu,
                    rate,
                    sl,
                    scope: scope.into_iter().collect(),
                    q_key,
                    tclass,
                    flow_label,
                },
                defmember,
            },
        );
    (
        proptest::collection::vec(word(), 0..3),
        proptest::option::of(1u16..=0x7fff),
        flags,
        proptest::collection::vec(entry, 0..6),
        proptest::collection::vec(mgroup(), 0..3),
    )
        .prop_map(|(name, pkey, flags, members, mgroups)| Statement {
            name: name.join(" "),
            pkey,
            flags,
            members,
            mgroups,
        })
}

/// Group lines the parser accepts whatever the statement: an IP group's P_Key bits are
/// 0 and it takes the broadcast group's MTU and rate.
fn mgroup() -> impl Strategy<Value = McGroup> {
    (
        any::<[u8; 15]>(),
        any::<bool>(),
        proptest::option::of(1u8..=5),
        proptest::option::of(2u8..=63),
        proptest::option::of(0u8..=15),
        proptest::collection::btree_set(1u8..=15, 0..3),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u8>()),
        proptest::option::of(0u32..=0xF_FFFF),
    )
        .prop_map(
            |(rest, ip, mtu, rate, sl, scope, q_key, tclass, flow_label)| {
                let mut o = [0xFFu8; 16];
                o[1..].copy_from_slice(&rest);
                if ip {
                    o[2..6].copy_from_slice(&[0x40, 0x1B, 0, 0]);
                } else if o[3] == 0x1B {
                    o[3] = 0x1C;
                }
                let mut g = McGroup::new(std::net::Ipv6Addr::from(o));
                if !ip {
                    (g.flags.mtu, g.flags.rate) = (mtu, rate);
                }
                g.flags.sl = sl;
                g.flags.scope = scope.into_iter().collect();
                g.flags.q_key = q_key;
                g.flags.tclass = tclass;
                g.flags.flow_label = flow_label;
                g
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parser_never_panics(s in "\\PC{0,200}") {
        let _ = s.parse::<PartitionConfig>();
    }

    #[test]
    fn parser_never_panics_on_near_syntax(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("=".to_string()), Just(",".to_string()), Just(":".to_string()),
                Just(";".to_string()), Just("#".to_string()), Just("\n".to_string()),
                Just(" ".to_string()), Just("ALL".to_string()), Just("full".to_string()),
                Just("defmember".to_string()), Just("mgid".to_string()),
                "0x[0-9a-fA-F]{0,18}", "[0-9]{1,6}", "[a-zA-Z_]{1,6}",
            ],
            0..40,
        )
    ) {
        let text = parts.concat();
        if let Err(e) = text.parse::<PartitionConfig>() {
            prop_assert!(e.line >= 1 && e.column >= 1);
            prop_assert!(e.line <= text.lines().count().max(1) + 1);
        }
    }

    #[test]
    fn printed_configs_read_back(statements in proptest::collection::vec(statement(), 0..6)) {
        let cfg = PartitionConfig { statements, enforcement: Enforcement::Both, allow_both_pkeys: false };
        let text = cfg.to_string();
        let back: PartitionConfig = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(back, cfg);
    }

    /// With room enough, every end port holds exactly what the statements give it (by
    /// [`expected`], which resolves them itself), index 0 the entry of the `indx0` or
    /// the default partition, each enforcing switch port its CA's entries and no other
    /// port a table, and planning over the result writes nothing more.
    #[test]
    fn plan_matches_the_oracle(
        statements in proptest::collection::vec(policy_statement(), 0..6),
        allow_both_pkeys in any::<bool>(),
    ) {
        let cfg = PartitionConfig { statements, enforcement: Enforcement::Both, allow_both_pkeys };
        let mut sub = subnet_caps(32, 32, 32);
        let plan = cfg.plan(&sub, 0x201);
        prop_assert!(plan.warnings.is_empty());
        // subnet_caps: switch 0x100 (node 0) with CA ports 0x201 (the SM's) and 0x301
        // on ports 1 and 2 and switch 0x400 (node 3) on port 3.
        let ends = [
            ((0, 0), 0x100, NodeType::Switch),
            ((1, 1), 0x201, NodeType::Ca),
            ((2, 1), 0x301, NodeType::Ca),
            ((3, 0), 0x400, NodeType::Switch),
        ];
        let enforcing = [((0, 1), 0x201), ((0, 2), 0x301)];
        let ports: Vec<(usize, u8)> = plan.tables.keys().copied().collect();
        prop_assert_eq!(ports, [(0, 0), (0, 1), (0, 2), (1, 1), (2, 1), (3, 0)]);
        let entries = |at: (usize, u8)| -> Vec<u16> {
            let mut v: Vec<u16> = plan.tables[&at].iter().copied().filter(|&k| k != 0).collect();
            v.sort_unstable();
            v
        };
        for (at, guid, kind) in ends {
            let want = expected(&cfg, guid, kind, guid == 0x201);
            prop_assert_eq!(entries(at), want.entries, "port {:?}", at);
            prop_assert_eq!(plan.tables[&at].first().copied().filter(|&k| k != 0), want.first);
        }
        for (at, ca) in enforcing {
            prop_assert_eq!(entries(at), expected(&cfg, ca, NodeType::Ca, ca == 0x201).entries);
        }
        for (&(n, p), table) in &plan.tables {
            sub.nodes[n].ports[usize::from(p)].pkeys.clone_from(table);
        }
        prop_assert_eq!(cfg.plan(&sub, 0x201), plan);
    }

    #[test]
    fn place_is_stable(
        wanted in proptest::collection::vec(any::<u16>(), 0..40),
        current in proptest::collection::vec(any::<u16>(), 0..40),
        cap in 0usize..48,
    ) {
        let (t, dropped) = place(&wanted, &current, cap);
        prop_assert_eq!(t.len(), cap);
        let (again, d2) = place(&wanted, &t, cap);
        prop_assert_eq!(&again, &t);
        prop_assert_eq!(d2, dropped.clone());
        // Every valid wanted entry is in the table or dropped, once.
        for k in wanted.iter().filter(|&&k| k & 0x7fff != 0) {
            let n = t.iter().filter(|&&x| x == *k).count() + dropped.iter().filter(|&&x| x == *k).count();
            prop_assert_eq!(n, 1);
        }
        if let Some(first) = wanted.iter().find(|&&k| k & 0x7fff != 0) {
            if cap > 0 {
                prop_assert_eq!(t[0], *first);
            }
        }
    }
}
