//! Replays of the SA requests a Linux host sends, each with the ComponentMask and the
//! fields the kernel fills in (`drivers/infiniband/ulp/ipoib/ipoib_multicast.c`,
//! `ipoib_main.c`, `drivers/infiniband/core/multicast.c`, `sa_query.c`, `cma.c`):
//! IPoIB's broadcast join, the IPv4 / IPv6 group creates that copy the broadcast
//! group's parameters, send-only full-member joins that create their group, the leaves
//! `multicast.c` sends, the PathRecord queries of IPoIB and rdma_cm, and ServiceRecord
//! registration.

use super::*;

/// IPoIB's link-local broadcast MGID of the default partition (RFC 4391).
const BCAST: [u8; 16] = [
    0xFF, 0x12, 0x40, 0x1B, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF,
];

/// `ib_sa_comp_mask` bits IPoIB sets on every join (`ipoib_mcast_join`).
fn ipoib_base_mask() -> ComponentMask {
    McMemberRecord::CM_MGID
        | McMemberRecord::CM_PORT_GID
        | McMemberRecord::CM_PKEY
        | McMemberRecord::CM_JOIN_STATE
}

/// What IPoIB adds for any group but the broadcast one: every parameter, copied from
/// the broadcast group's record (RFC 4391: same P_Key, Q_Key, SL, MTU, HopLimit).
fn ipoib_group_mask() -> ComponentMask {
    ipoib_base_mask()
        | McMemberRecord::CM_QKEY
        | McMemberRecord::CM_MTU_SELECTOR
        | McMemberRecord::CM_MTU
        | McMemberRecord::CM_TCLASS
        | McMemberRecord::CM_RATE_SELECTOR
        | McMemberRecord::CM_RATE
        | McMemberRecord::CM_SL
        | McMemberRecord::CM_FLOW_LABEL
        | McMemberRecord::CM_HOP_LIMIT
}

/// IPoIB's send-only JoinState (`SENDONLY_FULLMEMBER_JOIN` in ipoib_multicast.c).
const SENDONLY_FULL: u8 = 0x8;

/// The broadcast group as OpenSM predefines it without a partition file
/// (`Default=0x7fff, ipoib : ALL=full ;`): Q_Key 0x0B1B, MTU 2048, 10 Gb/s, SL 0,
/// link-local, no TClass or FlowLabel.
fn opensm_broadcast() -> McMemberRecord {
    McMemberRecord {
        mgid: Gid(BCAST),
        qkey: 0x0B1B,
        mtu_selector: Selector::Exactly,
        mtu: Mtu::Mtu2048,
        pkey: 0xFFFF,
        rate_selector: Selector::Exactly,
        rate: Rate::from(3),
        packet_life_time_selector: Selector::Exactly,
        packet_life_time: 0x12,
        scope: 2,
        ..Default::default()
    }
}

/// The tree, the SA with the broadcast group predefined, and (LID, port GID) of every
/// terminal.
fn host_rig() -> (SaServer, Vec<(u16, Gid)>) {
    let f = tree();
    let mut sa = server(&f);
    assert!(sa.set_predefined_groups(&[opensm_broadcast()]).is_empty());
    let hosts = (0..f.csr.term_node.len())
        .map(|t| {
            let g = f
                .fabric
                .port(f.csr.term_node[t], f.csr.term_port[t])
                .unwrap()
                .guid
                .0;
            (f.lids.terminal_lid(t).0, Gid::new(PREFIX, g))
        })
        .collect();
    (sa, hosts)
}

/// Sends one request from `lid` and returns (status, method of the answer, record).
fn ask<R: SaRecord>(
    sa: &mut SaServer,
    m: Method,
    mask: ComponentMask,
    t: &R,
    lid: u16,
) -> (Status, Method, R) {
    let req = SaMad::request(m, 0x1234, mask, t).unwrap();
    let out = sa.handle(Instant::from_secs(1), &req.to_bytes(), &from(lid));
    assert_eq!(out.len(), 1, "one answer");
    let h = SaMad::parse(&out[0]).unwrap();
    assert!(h.response);
    assert_eq!(h.transaction_id, 0x1234);
    (h.status, h.method, h.record(0).unwrap())
}

/// IPoIB's join of the broadcast group (`ipoib_mcast_join` for `priv->broadcast`).
fn broadcast_join(port_gid: Gid) -> McMemberRecord {
    McMemberRecord {
        mgid: Gid(BCAST),
        port_gid,
        pkey: 0xFFFF,
        join_state: join_state::FULL_MEMBER,
        ..Default::default()
    }
}

/// IPoIB's join of another group: the broadcast group's parameters copied in, selectors
/// IB_SA_EQ.
fn group_join(mgid: [u8; 16], port_gid: Gid, bcast: &McMemberRecord, js: u8) -> McMemberRecord {
    McMemberRecord {
        mgid: Gid(mgid),
        port_gid,
        pkey: 0xFFFF,
        join_state: js,
        qkey: bcast.qkey,
        mtu_selector: Selector::Exactly,
        mtu: bcast.mtu,
        tclass: bcast.tclass,
        rate_selector: Selector::Exactly,
        rate: bcast.rate,
        sl: bcast.sl,
        flow_label: bcast.flow_label,
        hop_limit: bcast.hop_limit,
        ..Default::default()
    }
}

/// The fields a host copies from a group record it got back.
fn params(r: &McMemberRecord) -> (u32, Mtu, u8, u16, Rate, u8, u32, u8, u8) {
    (
        r.qkey,
        r.mtu,
        r.tclass,
        r.pkey,
        r.rate,
        r.sl,
        r.flow_label,
        r.hop_limit,
        r.scope,
    )
}

#[test]
fn ipoib_broadcast_join_gets_the_predefined_group() {
    let (mut sa, hosts) = host_rig();
    let (lid, gid) = hosts[3];
    let (st, m, r) = ask(
        &mut sa,
        Method::Set,
        ipoib_base_mask(),
        &broadcast_join(gid),
        lid,
    );
    assert!(st.is_ok(), "{st:?}");
    assert_eq!(m, Method::Get, "a Set is answered with GetResp");
    assert_eq!(r.mgid, Gid(BCAST));
    assert_eq!(r.port_gid, gid);
    assert_eq!(r.join_state, join_state::FULL_MEMBER);
    assert_eq!(r.mlid, crate::MLID_BASE);
    // What IPoIB takes from the answer: its datagram Q_Key, the interface MTU
    // (2048 - 4 bytes of encapsulation) and the parameters of every later group.
    assert_eq!(
        params(&r),
        (0x0B1B, Mtu::Mtu2048, 0, 0xFFFF, Rate::from(3), 0, 0, 0, 2)
    );
    assert_eq!(r.mtu_selector, Selector::Exactly);
    assert_eq!(r.rate_selector, Selector::Exactly);
    // The member port's switch now forwards the broadcast MLID to it.
    assert!(!sa.take_mft_updates().is_empty());
    // A rejoin (the kernel rejoins after a port event) is no error.
    let (st, _, _) = ask(
        &mut sa,
        Method::Set,
        ipoib_base_mask(),
        &broadcast_join(gid),
        lid,
    );
    assert!(st.is_ok());
}

#[test]
fn ipoib_broadcast_join_without_the_group_is_refused() {
    // No partition policy made the group: IPoIB's join names no Q_Key, so it cannot
    // create it, and must not get a group with made-up parameters.
    let f = tree();
    let mut sa = server(&f);
    let (lid, _) = f.lids.terminal_lid(0);
    let g = f
        .fabric
        .port(f.csr.term_node[0], f.csr.term_port[0])
        .unwrap()
        .guid
        .0;
    let (st, _, _) = ask(
        &mut sa,
        Method::Set,
        ipoib_base_mask(),
        &broadcast_join(Gid::new(PREFIX, g)),
        lid,
    );
    assert_eq!(st.sa_status(), SaStatus::ReqInsufficientComponents);
}

#[test]
fn ipoib_ipv4_and_ipv6_groups_are_created_with_the_broadcast_parameters() {
    let (mut sa, hosts) = host_rig();
    let (la, ga) = hosts[0];
    let (lb, gb) = hosts[9];
    let (_, _, bcast) = ask(
        &mut sa,
        Method::Set,
        ipoib_base_mask(),
        &broadcast_join(ga),
        la,
    );
    // 224.0.0.1 -> ff12:401b:ffff::1; ff02::1 -> ff12:601b:ffff::1; a site-local IPv6
    // group ff05::2 -> ff15:601b:ffff::2 (its scope is the MGID's).
    let mut v4 = BCAST;
    v4[12..].copy_from_slice(&[0, 0, 0, 1]);
    let mut v6 = v4;
    v6[2] = 0x60;
    let mut site = v6;
    site[1] = 0x15;
    site[15] = 2;
    let mut mlids = Vec::new();
    for (mgid, scope) in [(v4, 2), (v6, 2), (site, 5)] {
        let (st, _, r) = ask(
            &mut sa,
            Method::Set,
            ipoib_group_mask(),
            &group_join(mgid, ga, &bcast, join_state::FULL_MEMBER),
            la,
        );
        assert!(st.is_ok(), "{mgid:x?}: {st:?}");
        assert_eq!(r.mgid, Gid(mgid));
        let mut want = params(&bcast);
        want.8 = scope;
        assert_eq!(params(&r), want, "{mgid:x?}");
        assert_ne!(r.mlid, bcast.mlid);
        mlids.push(r.mlid);
        // Another host joins the group it finds (same parameters).
        let (st, _, r2) = ask(
            &mut sa,
            Method::Set,
            ipoib_group_mask(),
            &group_join(mgid, gb, &bcast, join_state::FULL_MEMBER),
            lb,
        );
        assert!(st.is_ok(), "{st:?}");
        assert_eq!((r2.mlid, params(&r2)), (r.mlid, params(&r)));
    }
    mlids.dedup();
    assert_eq!(mlids.len(), 3, "one MLID per group");
    // A join asking for other parameters than the group's is refused.
    let mut bad = group_join(v4, gb, &bcast, join_state::FULL_MEMBER);
    bad.qkey = 0x1111;
    let (st, _, _) = ask(&mut sa, Method::Set, ipoib_group_mask(), &bad, lb);
    assert_eq!(st.sa_status(), SaStatus::ReqInvalid);
    // A GetTable lists the broadcast group and the three new ones.
    let (st, recs) = table(&mut sa, 0, &McMemberRecord::default(), 0, la);
    assert!(st.is_ok());
    let mut mgids: Vec<[u8; 16]> = recs.iter().map(|r| r.mgid.0).collect();
    mgids.dedup();
    assert_eq!(mgids.len(), 4);
}

#[test]
fn send_only_full_member_joins_create_the_group() {
    let (mut sa, hosts) = host_rig();
    let (la, ga) = hosts[1];
    let (lb, gb) = hosts[12];
    let (_, _, bcast) = ask(
        &mut sa,
        Method::Set,
        ipoib_base_mask(),
        &broadcast_join(ga),
        la,
    );
    // The SA says it takes them (older kernels check before using 0x8).
    let mut cpi =
        SaMad::request(Method::Get, 1, ComponentMask::NONE, &NodeRecord::default()).unwrap();
    cpi.attribute_id = SaAttributeId::ClassPortInfo.into();
    let out = sa.handle(T0, &cpi.to_bytes(), &from(la));
    let cpi = ibsm_wire::mad::ClassPortInfo::parse(&SaMad::parse(&out[0]).unwrap().data).unwrap();
    assert!(
        cpi.sa_capabilities2()
            .contains(ibsm_wire::sa::SaCapabilityMask2::SENDONLY_FULL_MEMBER),
        "ClassPortInfo.CapabilityMask2 bit 12"
    );
    // A host sends to 239.1.1.1 without having joined it: IPoIB joins send-only.
    let mut mgid = BCAST;
    mgid[12..].copy_from_slice(&[0, 0x01, 0x01, 0x01]);
    mgid[11] = 0;
    let (st, _, r) = ask(
        &mut sa,
        Method::Set,
        ipoib_group_mask(),
        &group_join(mgid, ga, &bcast, SENDONLY_FULL),
        la,
    );
    assert!(st.is_ok(), "send-only join must create the group: {st:?}");
    assert_eq!(r.join_state, SENDONLY_FULL);
    assert_eq!(params(&r), params(&bcast));
    let mlid = r.mlid;
    // A receiver joins it later as a full member, on the same MLID.
    let (st, _, r) = ask(
        &mut sa,
        Method::Set,
        ipoib_group_mask(),
        &group_join(mgid, gb, &bcast, join_state::FULL_MEMBER),
        lb,
    );
    assert!(st.is_ok());
    assert_eq!((r.mlid, r.join_state), (mlid, join_state::FULL_MEMBER));
    // Neither NonMember nor SendOnlyNonMember may create one.
    let mut other = mgid;
    other[15] = 2;
    for js in [join_state::NON_MEMBER, join_state::SEND_ONLY_NON_MEMBER] {
        let (st, _, _) = ask(
            &mut sa,
            Method::Set,
            ipoib_group_mask(),
            &group_join(other, ga, &bcast, js),
            la,
        );
        assert_eq!(st.sa_status(), SaStatus::ReqInvalid, "JoinState {js:#x}");
    }
}

/// `multicast.c` `send_leave`: the record the join returned, JoinState the states
/// no local member holds any more, mask MGID | PortGID | JoinState.
fn leave_mask() -> ComponentMask {
    McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE
}

#[test]
fn leaves_as_the_kernel_sends_them() {
    let (mut sa, hosts) = host_rig();
    let (la, ga) = hosts[2];
    let (lb, gb) = hosts[5];
    let (_, _, bcast) = ask(
        &mut sa,
        Method::Set,
        ipoib_base_mask(),
        &broadcast_join(ga),
        la,
    );
    let mut v4 = BCAST;
    v4[12..].copy_from_slice(&[0, 0, 0, 0x16]);
    let (_, _, joined) = ask(
        &mut sa,
        Method::Set,
        ipoib_group_mask(),
        &group_join(v4, ga, &bcast, join_state::FULL_MEMBER),
        la,
    );
    // The same port also sends to it send-only (a second local user): states add up.
    let (st, _, both) = ask(
        &mut sa,
        Method::Set,
        ipoib_group_mask(),
        &group_join(v4, ga, &bcast, SENDONLY_FULL),
        la,
    );
    assert!(st.is_ok());
    assert_eq!(both.join_state, join_state::FULL_MEMBER | SENDONLY_FULL);
    let slot = usize::from(joined.mlid - crate::MLID_BASE) % 32;
    let ups = sa.take_mft_updates();
    assert!(
        ups.iter().any(|u| u.mft.port_masks.get(slot) != Some(0)),
        "a full member receives: the group has a tree"
    );
    // Leaving the full membership keeps the send-only one: the group stays.
    let leave = |rec: &McMemberRecord, js: u8| McMemberRecord {
        join_state: js,
        ..*rec
    };
    let (st, m, r) = ask(
        &mut sa,
        Method::Delete,
        leave_mask(),
        &leave(&joined, join_state::FULL_MEMBER),
        la,
    );
    assert!(st.is_ok(), "{st:?}");
    assert_eq!(m, Method::Delete, "DeleteResp");
    assert_eq!((r.mgid, r.port_gid), (Gid(v4), ga));
    let listed = |sa: &mut SaServer| {
        let (_, recs) = table(sa, 0, &McMemberRecord::default(), KEY, la);
        recs.iter()
            .filter(|r| r.mgid == Gid(v4))
            .map(|r| r.join_state)
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(&mut sa), [SENDONLY_FULL]);
    // A send-only member receives nothing: with nobody else in the group its tree
    // goes (the blocks holding it are rewritten with its entries cleared).
    let ups = sa.take_mft_updates();
    assert!(
        !ups.is_empty(),
        "the blocks holding the group are rewritten"
    );
    assert!(
        ups.iter().all(|u| u.mft.port_masks.get(slot) == Some(0)),
        "the group's MFT entries are cleared"
    );
    // The last state leaves: the group (not predefined) goes; nothing is left to
    // write for it.
    let (st, _, _) = ask(
        &mut sa,
        Method::Delete,
        leave_mask(),
        &leave(&joined, SENDONLY_FULL),
        la,
    );
    assert!(st.is_ok());
    assert!(listed(&mut sa).is_empty());
    assert!(sa.take_mft_updates().is_empty());
    // Someone else's membership cannot be left for it.
    let (_, _, bj) = ask(
        &mut sa,
        Method::Set,
        ipoib_base_mask(),
        &broadcast_join(gb),
        lb,
    );
    let (st, _, _) = ask(
        &mut sa,
        Method::Delete,
        leave_mask(),
        &leave(&bj, join_state::FULL_MEMBER),
        la,
    );
    assert_eq!(st.sa_status(), SaStatus::ReqDenied);
    // The broadcast group is predefined: it stays when its members leave.
    for (lid, rec) in [(la, bcast), (lb, bj)] {
        let (st, _, _) = ask(
            &mut sa,
            Method::Delete,
            leave_mask(),
            &leave(&rec, join_state::FULL_MEMBER),
            lid,
        );
        assert!(st.is_ok());
    }
    let (_, recs) = table(&mut sa, 0, &McMemberRecord::default(), KEY, la);
    assert_eq!(recs.len(), 1);
    assert_eq!((recs[0].mgid, recs[0].join_state), (Gid(BCAST), 0));
}

#[test]
fn rdma_cm_and_ipoib_path_queries() {
    let (mut sa, hosts) = host_rig();
    let (ls, gs) = hosts[0];
    let (ld, gd) = hosts[13];
    // rdma_cm (`cma_query_ib_route`), an AF_INET id to TCP port 18515: SubnAdmGet,
    // NumbPath 1, Reversible, the default P_Key, the RDMA_PS_TCP service ID and the
    // ToS as QoS class.
    let service_id = 0x0000_0000_0106_0000 | 18515;
    let cm = PathRecord {
        service_id,
        sgid: gs,
        dgid: gd,
        pkey: 0xFFFF,
        numb_path: 1,
        reversible: true,
        qos_class: 0,
        ..Default::default()
    };
    let cm_mask = PathRecord::CM_DGID
        | PathRecord::CM_SGID
        | PathRecord::CM_PKEY
        | PathRecord::CM_NUMB_PATH
        | PathRecord::CM_REVERSIBLE
        | PathRecord::CM_SERVICE_ID
        | PathRecord::CM_QOS_CLASS;
    // IPoIB (`path_rec_start`): DGID, SGID, NumbPath, TClass, P_Key.
    let ipoib = PathRecord {
        sgid: gs,
        dgid: gd,
        pkey: 0xFFFF,
        numb_path: 1,
        ..Default::default()
    };
    let ipoib_mask = PathRecord::CM_DGID
        | PathRecord::CM_SGID
        | PathRecord::CM_NUMB_PATH
        | PathRecord::CM_TCLASS
        | PathRecord::CM_PKEY;
    // An AF_INET6 id: the flow's traffic class instead of the QoS class.
    let v6 = PathRecord { tclass: 0x20, ..cm };
    let v6_mask = (cm_mask & !PathRecord::CM_QOS_CLASS) | PathRecord::CM_TCLASS;
    for (name, mask, t) in [
        ("rdma_cm AF_INET", cm_mask, cm),
        ("rdma_cm AF_INET6", v6_mask, v6),
        ("ipoib", ipoib_mask, ipoib),
    ] {
        let (st, m, r) = ask(&mut sa, Method::Get, mask, &t, ls);
        assert!(st.is_ok(), "{name}: {st:?}");
        assert_eq!(m, Method::Get, "{name}: GetResp");
        // What the kernel uses to build its address handle and connect.
        assert_eq!((r.sgid, r.dgid, r.slid, r.dlid), (gs, gd, ls, ld), "{name}");
        assert_eq!(r.pkey, 0xFFFF, "{name}");
        assert!(r.reversible, "{name}: the CM needs a reversible path");
        assert_eq!(r.mtu_selector, Selector::Exactly, "{name}");
        assert!(u8::from(r.mtu) >= u8::from(Mtu::Mtu256), "{name}");
        assert!(r.rate.mbps().is_some(), "{name}: a rate code");
        assert_eq!(r.packet_life_time, 0x12, "{name}");
        assert_eq!(r.tclass, t.tclass, "{name}: echoed");
        if mask.contains(PathRecord::CM_SERVICE_ID) {
            assert_eq!(r.service_id, service_id, "{name}: echoed");
        }
        // The same query back (the passive side resolves its route too).
        let back = PathRecord {
            sgid: gd,
            dgid: gs,
            ..t
        };
        let (st, _, r) = ask(&mut sa, Method::Get, mask, &back, ld);
        assert!(st.is_ok(), "{name} back: {st:?}");
        assert_eq!((r.slid, r.dlid), (ld, ls));
    }
    // A P_Key the two do not share: no path.
    let (st, _, _) = ask(
        &mut sa,
        Method::Get,
        cm_mask,
        &PathRecord { pkey: 0x8001, ..cm },
        ls,
    );
    assert_eq!(st.sa_status(), SaStatus::NoRecords);
    // An unknown destination GID is the requester's mistake.
    let (st, _, _) = ask(
        &mut sa,
        Method::Get,
        cm_mask,
        &PathRecord {
            dgid: Gid::new(PREFIX, 0xdead),
            ..cm
        },
        ls,
    );
    assert_eq!(st.sa_status(), SaStatus::ReqInvalidGid);
}

#[test]
fn service_records_register_query_and_delete() {
    let (mut sa, hosts) = host_rig();
    let (lid, gid) = hosts[4];
    let mut s = ServiceRecord {
        service_id: 0x0000_0000_0106_4242,
        service_gid: gid,
        service_pkey: 0xFFFF,
        service_lease: ServiceRecord::INFINITE_LEASE,
        ..Default::default()
    };
    s.set_name("ibsm.replay");
    s.set_data8(0, 7);
    // Registration as ib_sa_service_rec_query sends it: ID, GID, P_Key, lease, name
    // and the data it fills in.
    let set_mask = ServiceRecord::CM_SERVICE_ID
        | ServiceRecord::CM_SERVICE_GID
        | ServiceRecord::CM_SERVICE_PKEY
        | ServiceRecord::CM_SERVICE_LEASE
        | ServiceRecord::CM_SERVICE_NAME
        | ServiceRecord::cm_data8(0);
    let (st, m, r) = ask(&mut sa, Method::Set, set_mask, &s, lid);
    assert!(st.is_ok(), "{st:?}");
    assert_eq!(m, Method::Get, "GetResp");
    assert_eq!(r, s);
    // Another host finds it by name with a Get, and by ID with a GetTable.
    let (other, _) = hosts[10];
    let (st, _, r) = ask(
        &mut sa,
        Method::Get,
        ServiceRecord::CM_SERVICE_NAME,
        &s,
        other,
    );
    assert!(st.is_ok(), "{st:?}");
    assert_eq!(
        (r.service_gid, r.name(), r.data8(0)),
        (gid, Some("ibsm.replay"), Some(7))
    );
    let (st, recs) = table(&mut sa, ServiceRecord::CM_SERVICE_ID.0, &s, 0, other);
    assert!(st.is_ok());
    assert_eq!(recs.len(), 1);
    // Re-registering the same (ID, GID, P_Key) replaces it rather than adding one.
    s.set_data8(0, 8);
    assert!(ask(&mut sa, Method::Set, set_mask, &s, lid).0.is_ok());
    let (_, recs) = table(&mut sa, ServiceRecord::CM_SERVICE_ID.0, &s, 0, other);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].data8(0), Some(8));
    // Only its owner deletes it; then it is gone.
    let del_mask = ServiceRecord::CM_SERVICE_ID
        | ServiceRecord::CM_SERVICE_GID
        | ServiceRecord::CM_SERVICE_PKEY;
    let (st, _, _) = ask(&mut sa, Method::Delete, del_mask, &s, other);
    assert_eq!(st.sa_status(), SaStatus::NoRecords);
    let (st, m, _) = ask(&mut sa, Method::Delete, del_mask, &s, lid);
    assert!(st.is_ok());
    assert_eq!(m, Method::Delete, "DeleteResp");
    let (st, _, _) = ask(
        &mut sa,
        Method::Get,
        ServiceRecord::CM_SERVICE_NAME,
        &s,
        other,
    );
    assert_eq!(st.sa_status(), SaStatus::NoRecords);
}
