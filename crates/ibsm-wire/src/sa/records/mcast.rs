//! MCMemberRecord (0x0038), IBA Vol. 1 §15.2.5 (MCMemberRecord).

use crate::attr::Mtu;
use crate::gid::Gid;
use crate::sa::codes::{Rate, Selector};

wire_struct! {
    /// MCMemberRecord (52 bytes, 56 apart in a table): a port's membership of a
    /// multicast group. Join with SubnAdmSet, leave with SubnAdmDelete.
    pub struct McMemberRecord, view McMemberRecordView, size 52, label "MCMemberRecord";
    fields {
        /// Multicast GID (all zero in a create request: the SA picks one).
        mgid, set_mgid: Gid = (0, 0, 128), "IB_SA_MCM_MGID_F";
        /// GID of the joining port.
        port_gid, set_port_gid: Gid = (16, 0, 128), "IB_SA_MCM_PORTGID_F";
        /// Q_Key of the group.
        qkey, set_qkey: u32 = (32, 0, 32), "IB_SA_MCM_QKEY_F";
        /// Multicast LID assigned by the SM.
        mlid, set_mlid: u16 = (36, 0, 16), "IB_SA_MCM_MLID_F";
        /// Selector of `mtu`.
        mtu_selector, set_mtu_selector: Selector = (38, 0, 2);
        /// MTU code.
        mtu, set_mtu: Mtu = (38, 2, 6), "IB_SA_MCM_MTU_F";
        /// Traffic class.
        tclass, set_tclass: u8 = (39, 0, 8), "IB_SA_MCM_TCLASS_F";
        /// Partition of the group.
        pkey, set_pkey: u16 = (40, 0, 16), "IB_SA_MCM_PKEY_F";
        /// Selector of `rate`.
        rate_selector, set_rate_selector: Selector = (42, 0, 2);
        /// Rate code.
        rate, set_rate: Rate = (42, 2, 6), "IB_SA_MCM_RATE_F";
        /// Selector of `packet_life_time`.
        packet_life_time_selector, set_packet_life_time_selector: Selector = (43, 0, 2);
        /// Packet lifetime: 4.096 us * 2^value.
        packet_life_time, set_packet_life_time: u8 = (43, 2, 6);
        /// Service level.
        sl, set_sl: u8 = (44, 0, 4), "IB_SA_MCM_SL_F";
        /// Flow label.
        flow_label, set_flow_label: u32 = (44, 4, 20), "IB_SA_MCM_FLOW_LABEL_F";
        /// Hop limit.
        hop_limit, set_hop_limit: u8 = (47, 0, 8);
        /// Scope ([`mgid_scope`]).
        scope, set_scope: u8 = (48, 0, 4);
        /// Membership mask ([`join_state`]).
        join_state, set_join_state: u8 = (48, 4, 4), "IB_SA_MCM_JOIN_STATE_F";
        /// Join on behalf of another port.
        proxy_join, set_proxy_join: bool = (49, 0, 1), "IB_SA_MCM_PROXY_JOIN_F";
    }
}

sa_record! {
    McMemberRecord, McMemberRecord;
    CM_MGID = 0, "mgid";
    CM_PORT_GID = 1, "port_gid";
    CM_QKEY = 2, "qkey";
    CM_MLID = 3, "mlid";
    CM_MTU_SELECTOR = 4, "mtu_selector";
    CM_MTU = 5, "mtu";
    CM_TCLASS = 6, "tclass";
    CM_PKEY = 7, "pkey";
    CM_RATE_SELECTOR = 8, "rate_selector";
    CM_RATE = 9, "rate";
    CM_PACKET_LIFE_TIME_SELECTOR = 10, "packet_life_time_selector";
    CM_PACKET_LIFE_TIME = 11, "packet_life_time";
    CM_SL = 12, "sl";
    CM_FLOW_LABEL = 13, "flow_label";
    CM_HOP_LIMIT = 14, "hop_limit";
    CM_SCOPE = 15, "scope";
    CM_JOIN_STATE = 16, "join_state";
    CM_PROXY_JOIN = 17, "proxy_join";
}

/// MCMemberRecord.JoinState bits.
pub mod join_state {
    /// Full member.
    pub const FULL_MEMBER: u8 = 0x1;
    /// Non member.
    pub const NON_MEMBER: u8 = 0x2;
    /// Send-only non member.
    pub const SEND_ONLY_NON_MEMBER: u8 = 0x4;
    /// Send-only full member.
    pub const SEND_ONLY_FULL_MEMBER: u8 = 0x8;
}

/// Multicast scopes (MCMemberRecord.Scope, low nibble of MGID byte 1).
pub mod mgid_scope {
    /// Link-local.
    pub const LINK_LOCAL: u8 = 0x2;
    /// Site-local.
    pub const SITE_LOCAL: u8 = 0x5;
    /// Organization-local.
    pub const ORGANIZATION_LOCAL: u8 = 0x8;
    /// Global.
    pub const GLOBAL: u8 = 0xE;
}
