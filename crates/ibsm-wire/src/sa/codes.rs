//! Code points of the SA class: attribute IDs, status codes, and the rate / MTU /
//! selector encodings of path-like records (IBA Vol. 1 §15.2.3 for the status, §15.2.5
//! for the attributes and PathRecord's selector and rate encodings).

use crate::attr::bit_flags;
use crate::mad::{ClassPortInfo, Status};

code_enum! {
    /// AttributeID of the SA class (0x03), IBA Vol. 1 §15.2.5.
    pub enum SaAttributeId: u16 {
        /// ClassPortInfo.
        ClassPortInfo = 0x0001,
        /// Notice (in SubnAdmReport).
        Notice = 0x0002,
        /// InformInfo (subscriptions).
        InformInfo = 0x0003,
        /// NodeRecord.
        NodeRecord = 0x0011,
        /// PortInfoRecord.
        PortInfoRecord = 0x0012,
        /// SLtoVLMappingTableRecord.
        SlToVlMappingTableRecord = 0x0013,
        /// SwitchInfoRecord.
        SwitchInfoRecord = 0x0014,
        /// LinearForwardingTableRecord.
        LinearForwardingTableRecord = 0x0015,
        /// RandomForwardingTableRecord.
        RandomForwardingTableRecord = 0x0016,
        /// MulticastForwardingTableRecord.
        MulticastForwardingTableRecord = 0x0017,
        /// SMInfoRecord.
        SmInfoRecord = 0x0018,
        /// LinkSpeedWidthPairsTableRecord.
        LinkSpeedWidthPairsTableRecord = 0x0019,
        /// LinkRecord.
        LinkRecord = 0x0020,
        /// GuidInfoRecord.
        GuidInfoRecord = 0x0030,
        /// ServiceRecord.
        ServiceRecord = 0x0031,
        /// P_KeyTableRecord.
        PKeyTableRecord = 0x0033,
        /// PathRecord.
        PathRecord = 0x0035,
        /// VLArbitrationTableRecord.
        VlArbitrationTableRecord = 0x0036,
        /// MCMemberRecord.
        McMemberRecord = 0x0038,
        /// TraceRecord.
        TraceRecord = 0x0039,
        /// MultiPathRecord.
        MultiPathRecord = 0x003A,
        /// ServiceAssociationRecord.
        ServiceAssociationRecord = 0x003B,
        /// HierarchyInfoRecord.
        HierarchyInfoRecord = 0x003C,
        /// CableInfoRecord.
        CableInfoRecord = 0x003D,
        /// PortInfoExtendedRecord.
        PortInfoExtendedRecord = 0x003E,
        /// InformInfoRecord.
        InformInfoRecord = 0x00F3,
    }
}

// A MAD header holds the attribute ID as a raw `u16` ([`crate::MadHeader`], nested in
// [`super::SaMad`]): comparing it with the SA's code needs no conversion at the call.
impl PartialEq<SaAttributeId> for u16 {
    fn eq(&self, other: &SaAttributeId) -> bool {
        *self == u16::from(*other)
    }
}

impl PartialEq<u16> for SaAttributeId {
    fn eq(&self, other: &u16) -> bool {
        u16::from(*self) == *other
    }
}

code_enum! {
    /// SA error code: bits 8..15 of the status word of an SA response (IBA Vol. 1
    /// §15.2.3; §13.4, the MAD status field).
    pub enum SaStatus: u8 {
        /// Success.
        Success = 0,
        /// ERR_NO_RESOURCES: the SA cannot allocate what is needed.
        NoResources = 1,
        /// ERR_REQ_INVALID: malformed or inconsistent request.
        ReqInvalid = 2,
        /// ERR_NO_RECORDS: no record matches a Get.
        NoRecords = 3,
        /// ERR_TOO_MANY_RECORDS: more than one record matches a Get.
        TooManyRecords = 4,
        /// ERR_REQ_INVALID_GID: a GID of the request is invalid or unknown.
        ReqInvalidGid = 5,
        /// ERR_REQ_INSUFFICIENT_COMPONENTS: the ComponentMask lacks required components.
        ReqInsufficientComponents = 6,
        /// ERR_REQ_DENIED: request refused.
        ReqDenied = 7,
        /// ERR_STATUS_PRIO_SUGGESTED: served with a suggested QoS priority.
        PrioSuggested = 8,
    }
}

impl SaStatus {
    /// The whole status word carrying this SA code (other bits clear).
    #[must_use]
    pub fn status(self) -> Status {
        Status(u16::from(u8::from(self)) << 8)
    }
}

impl From<SaStatus> for Status {
    fn from(s: SaStatus) -> Self {
        s.status()
    }
}

impl Status {
    /// The SA error code (bits 8..15) of an SA response.
    #[must_use]
    pub fn sa_status(self) -> SaStatus {
        SaStatus::from(self.class_specific())
    }
}

code_enum! {
    /// The 2-bit selector in front of MTU, Rate and PacketLifeTime (IBA Vol. 1 §15.2.5,
    /// PathRecord's selector encoding).
    pub enum Selector: u8 {
        /// Greater than the given value.
        GreaterThan = 0,
        /// Less than the given value.
        LessThan = 1,
        /// Exactly the given value.
        Exactly = 2,
        /// The largest available (MTU, Rate) or the smallest (PacketLifeTime).
        Best = 3,
    }
}

code_enum! {
    /// The 6-bit rate code of SA records (IBA Vol. 1 §15.2.5, PathRecord's rate
    /// encoding). Variant names are the rate in Gb/s (`G2_5` = 2.5 Gb/s).
    pub enum Rate: u8 {
        /// 2.5 Gb/s.
        G2_5 = 2,
        /// 10 Gb/s.
        G10 = 3,
        /// 30 Gb/s.
        G30 = 4,
        /// 5 Gb/s.
        G5 = 5,
        /// 20 Gb/s.
        G20 = 6,
        /// 40 Gb/s.
        G40 = 7,
        /// 60 Gb/s.
        G60 = 8,
        /// 80 Gb/s.
        G80 = 9,
        /// 120 Gb/s.
        G120 = 10,
        /// 14 Gb/s.
        G14 = 11,
        /// 56 Gb/s.
        G56 = 12,
        /// 112 Gb/s.
        G112 = 13,
        /// 168 Gb/s.
        G168 = 14,
        /// 25 Gb/s.
        G25 = 15,
        /// 100 Gb/s.
        G100 = 16,
        /// 200 Gb/s.
        G200 = 17,
        /// 300 Gb/s.
        G300 = 18,
        /// 28 Gb/s.
        G28 = 19,
        /// 50 Gb/s.
        G50 = 20,
        /// 400 Gb/s.
        G400 = 21,
        /// 600 Gb/s.
        G600 = 22,
        /// 800 Gb/s.
        G800 = 23,
        /// 1200 Gb/s.
        G1200 = 24,
    }
}

/// Rate code -> Mb/s, indexed by code (0 = no meaning).
const RATE_MBPS: [u32; 25] = [
    0, 0, 2_500, 10_000, 30_000, 5_000, 20_000, 40_000, 60_000, 80_000, 120_000, 14_000, 56_000,
    112_000, 168_000, 25_000, 100_000, 200_000, 300_000, 28_000, 50_000, 400_000, 600_000, 800_000,
    1_200_000,
];

impl Rate {
    /// The data rate in Mb/s, `None` for codes without a meaning.
    #[must_use]
    pub fn mbps(self) -> Option<u32> {
        RATE_MBPS
            .get(usize::from(u8::from(self)))
            .copied()
            .filter(|&r| r != 0)
    }

    /// The code of an exact rate in Mb/s.
    #[must_use]
    pub fn from_mbps(mbps: u32) -> Option<Self> {
        RATE_MBPS
            .iter()
            .position(|&r| r == mbps && r != 0)
            .map(|c| Self::from(c as u8))
    }
}

bit_flags! {
    /// ClassPortInfo.CapabilityMask of a subnet administrator: IBA Vol. 1 §15.2.5
    /// (ClassPortInfo, SA capability bits).
    pub struct SaCapabilityMask: u16 {
        /// The SA sends reports (common to every class).
        const TRAP = crate::mad::cpi_cap::TRAP;
        /// CapabilityMask2 is valid (common to every class).
        const CAP_MASK2 = crate::mad::cpi_cap::CAP_MASK2;
        /// Optional records supported.
        const OPTIONAL_RECORDS = 1 << 8;
        /// UD multicast supported.
        const UD_MULTICAST = 1 << 9;
        /// MultiPathRecord supported.
        const MULTI_PATH = 1 << 10;
        /// Reinit supported.
        const REINIT = 1 << 11;
        /// GID-scoped MultiPath supported.
        const GID_SCOPED_MULTI_PATH = 1 << 12;
        /// PortInfo CapabilityMask matching ("every template bit set") supported.
        const PORT_INFO_CAP_MASK_MATCH = 1 << 13;
        /// LinkSpeedWidthPairs records supported.
        const LINK_SPEED_WIDTH_PAIRS = 1 << 14;
        /// PA services supported.
        const PA_SERVICES = 1 << 15;
    }
}

bit_flags! {
    /// ClassPortInfo.CapabilityMask2 of a subnet administrator (27 bits): IBA Vol. 1
    /// §15.2.5 (ClassPortInfo, SA capability bits).
    pub struct SaCapabilityMask2: u32 {
        /// Unpath/repath.
        const UNPATH_REPATH = 1 << 0;
        /// QoS.
        const QOS = 1 << 1;
        /// Reverse-path P_Key member bit.
        const REVERSE_PATH_PKEY = 1 << 2;
        /// MulticastFDBTop.
        const MCAST_FDB_TOP = 1 << 3;
        /// HierarchyInfo.
        const HIERARCHY_INFO = 1 << 4;
        /// Additional (alias) GUIDs.
        const ALIAS_GUIDS = 1 << 5;
        /// Full PortInfoRecord.
        const FULL_PORT_INFO_RECORD = 1 << 6;
        /// Extended speeds.
        const EXTENDED_SPEEDS = 1 << 7;
        /// Multicast ServiceRecords.
        const MCAST_SERVICE_RECORDS = 1 << 8;
        /// CableInfo records.
        const CABLE_INFO = 1 << 9;
        /// PortInfo CapabilityMask2 matching.
        const PORT_INFO_CAP_MASK2_MATCH = 1 << 10;
        /// PortInfoExtended records.
        const PORT_INFO_EXTENDED = 1 << 11;
        /// MCMemberRecord joins with JoinState SendOnlyFullMember (0x8) create a group
        /// (IBA 1.3; Linux checks this bit before joining send-only).
        const SENDONLY_FULL_MEMBER = 1 << 12;
    }
}

impl ClassPortInfo {
    /// CapabilityMask read as a subnet administrator's.
    #[must_use]
    pub fn sa_capabilities(&self) -> SaCapabilityMask {
        SaCapabilityMask(self.capability_mask)
    }

    /// CapabilityMask2 read as a subnet administrator's.
    #[must_use]
    pub fn sa_capabilities2(&self) -> SaCapabilityMask2 {
        SaCapabilityMask2(self.capability_mask2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_mtus() {
        assert_eq!(Rate::G2_5.mbps(), Some(2_500));
        assert_eq!(Rate::G1200.mbps(), Some(1_200_000));
        assert_eq!(Rate::from(0).mbps(), None);
        assert_eq!(Rate::from(63).mbps(), None);
        for code in 2u8..=24 {
            let r = Rate::from(code);
            assert!(r.is_known());
            assert_eq!(Rate::from_mbps(r.mbps().unwrap()), Some(r));
        }
    }

    #[test]
    fn sa_capability_bits() {
        // The SA bits of CapabilityMask are its high byte; CapabilityMask2 numbers from 0.
        assert_eq!(SaCapabilityMask::OPTIONAL_RECORDS.bits(), 0x0100);
        assert_eq!(SaCapabilityMask::PA_SERVICES.bits(), 0x8000);
        assert_eq!(SaCapabilityMask2::SENDONLY_FULL_MEMBER.bits(), 0x1000);
        let cpi = ClassPortInfo {
            capability_mask: 0x0201,
            capability_mask2: 0x0400,
            ..ClassPortInfo::default()
        };
        assert_eq!(
            cpi.sa_capabilities(),
            SaCapabilityMask::TRAP | SaCapabilityMask::UD_MULTICAST
        );
        assert_eq!(
            cpi.sa_capabilities2(),
            SaCapabilityMask2::PORT_INFO_CAP_MASK2_MATCH
        );
    }

    #[test]
    fn sa_status_codes() {
        assert_eq!(SaStatus::NoRecords.status(), Status(0x0300));
        assert_eq!(Status(0x0400).sa_status(), SaStatus::TooManyRecords);
        assert_eq!(Status(0x0900).sa_status(), SaStatus::Unknown(9));
        assert!(!Status::from(SaStatus::ReqDenied).is_ok());
    }
}
