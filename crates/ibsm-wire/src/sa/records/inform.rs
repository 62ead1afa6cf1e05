//! InformInfo (0x0003, IBA Vol. 1 §13.4.8.3) and InformInfoRecord (0x00F3, IBA Vol. 1
//! §15.2.5, InformInfoRecord).

use crate::gid::Gid;

wire_struct! {
    /// InformInfo (36 bytes): subscribe to or unsubscribe from notices, with
    /// SubnAdmSet(InformInfo).
    pub struct InformInfo, view InformInfoView, size 36, label "InformInfo";
    fields {
        /// Port whose notices are wanted; all zero = use the LID range.
        gid, set_gid: Gid = (0, 0, 128);
        /// First LID of the range (0xFFFF = all ports).
        lid_range_begin, set_lid_range_begin: u16 = (16, 0, 16);
        /// Last LID of the range (0 = only `lid_range_begin`).
        lid_range_end, set_lid_range_end: u16 = (18, 0, 16);
        /// 1 = generic trap numbers, 0 = vendor specific.
        is_generic, set_is_generic: u8 = (22, 0, 8);
        /// 1 = subscribe, 0 = unsubscribe.
        subscribe, set_subscribe: u8 = (23, 0, 8);
        /// Notice type to forward (0..4), 0xFFFF = all.
        notice_type, set_notice_type: u16 = (24, 0, 16);
        /// Trap number (generic) or device ID (vendor); 0xFFFF = all.
        trap_number, set_trap_number: u16 = (26, 0, 16);
        /// QP that receives the Reports.
        qpn, set_qpn: u32 = (28, 0, 24);
        /// Subscriber's response time: 4.096 us * 2^value.
        resp_time_value, set_resp_time_value: u8 = (31, 3, 5);
        /// Producer type (1 CA, 2 switch, 3 router, 4 class manager) or vendor OUI;
        /// 0xFFFFFF = all.
        producer_type, set_producer_type: u32 = (33, 0, 24);
    }
}

impl InformInfo {
    /// `lid_range_begin` value meaning "every port".
    pub const ALL_LIDS: u16 = 0xFFFF;
    /// `notice_type` / `trap_number` value meaning "all".
    pub const ALL: u16 = 0xFFFF;
    /// `producer_type` value meaning "all".
    pub const ALL_PRODUCERS: u32 = 0xFF_FFFF;
}

// InformInfo is sent alone (SubnAdmSet), never matched: its ComponentMask bits exist
// only inside InformInfoRecord.
sa_record! {
    InformInfo, InformInfo;
}

wire_struct! {
    /// InformInfoRecord (60 bytes): a subscription as the SA stores it.
    pub struct InformInfoRecord, view InformInfoRecordView, size 60, label "InformInfoRecord";
    fields {
        /// GID of the subscriber.
        subscriber_gid, set_subscriber_gid: Gid = (0, 0, 128);
        /// Distinguishes several subscriptions of one subscriber.
        subscriber_enum, set_subscriber_enum: u16 = (16, 0, 16);
        /// The subscription.
        inform_info, set_inform_info: InformInfo = (24, 0, 288);
    }
}

sa_record! {
    InformInfoRecord, InformInfoRecord;
    CM_SUBSCRIBER_GID = 0, "subscriber_gid";
    CM_ENUM = 1, "subscriber_enum";
    CM_RESERVED2 = 2, "reserved", (18, 0, 48);
    CM_GID = 3, "inform_info.gid";
    CM_LID_RANGE_BEGIN = 4, "inform_info.lid_range_begin";
    CM_LID_RANGE_END = 5, "inform_info.lid_range_end";
    CM_RESERVED6 = 6, "reserved", (44, 0, 16);
    CM_IS_GENERIC = 7, "inform_info.is_generic";
    CM_SUBSCRIBE = 8, "inform_info.subscribe";
    CM_TYPE = 9, "inform_info.notice_type";
    CM_TRAP_NUMBER = 10, "inform_info.trap_number";
    CM_QPN = 11, "inform_info.qpn";
    CM_RESERVED12 = 12, "reserved", (55, 0, 3);
    CM_RESP_TIME_VALUE = 13, "inform_info.resp_time_value";
    CM_RESERVED14 = 14, "reserved", (56, 0, 8);
    CM_PRODUCER_TYPE = 15, "inform_info.producer_type";
}
