//! Notice (0x0002) in its 64-byte SMP form and its 80-byte SA form, and the typed
//! DataDetails of the generic traps (IBA Vol. 1 §13.4.8.2 for Notice, §14.2.5.1 for the SMA's traps).
//!
//! The trap structures are laid out relative to the start of DataDetails. libibmad
//! names its two trap fields relative to the Notice, i.e.
//! [`NOTICE_DATA_DETAILS_OFFSET`] bytes further; the libibmad names in their `FIELDS`
//! tables refer to that shifted position.

use crate::error::{Error, Result};
use crate::field::WireStruct;
use crate::gid::Gid;

use super::port::{CapabilityMask, CapabilityMask2};

/// Offset of DataDetails inside the Notice attribute.
pub const NOTICE_DATA_DETAILS_OFFSET: u16 = 10;
/// Size of DataDetails.
pub const NOTICE_DATA_DETAILS_SIZE: usize = 54;

code_enum! {
    /// Notice.Type.
    pub enum NoticeType: u8 {
        /// Fatal.
        Fatal = 0,
        /// Urgent.
        Urgent = 1,
        /// Security.
        Security = 2,
        /// Subnet management.
        SubnetManagement = 3,
        /// Informational.
        Informational = 4,
        /// Empty notice (nothing queued).
        Empty = 0x7F,
    }
}

code_enum! {
    /// Notice.ProducerType of a generic notice.
    pub enum ProducerType: u32 {
        /// Channel adapter.
        Ca = 1,
        /// Switch.
        Switch = 2,
        /// Router.
        Router = 3,
        /// Class manager (for example the SM).
        ClassManager = 4,
    }
}

code_enum! {
    /// Generic trap numbers.
    pub enum TrapNumber: u16 {
        /// GID now in service.
        GidInService = 64,
        /// GID out of service.
        GidOutOfService = 65,
        /// Multicast group created.
        McGroupCreated = 66,
        /// Multicast group deleted.
        McGroupDeleted = 67,
        /// Paths no longer valid.
        Unpath = 68,
        /// Paths recomputed.
        Repath = 69,
        /// Link state of at least one switch port changed.
        LinkStateChange = 128,
        /// Local link integrity threshold reached.
        LocalLinkIntegrity = 129,
        /// Excessive buffer overrun threshold reached.
        ExcessiveBufferOverrun = 130,
        /// Flow-control update watchdog expired.
        FlowControlWatchdog = 131,
        /// CapabilityMask, NodeDescription or other local attributes changed.
        LocalChanges = 144,
        /// SystemImageGUID changed.
        SystemImageGuidChange = 145,
        /// Bad M_Key.
        BadMKey = 256,
        /// Bad P_Key.
        BadPKey = 257,
        /// Bad Q_Key.
        BadQKey = 258,
        /// Bad P_Key at a switch external port.
        BadPKeySwitchExternalPort = 259,
    }
}

impl TrapNumber {
    /// The notice type this trap is sent with.
    #[must_use]
    pub fn notice_type(self) -> Option<NoticeType> {
        match u16::from(self) {
            64..=69 | 144 | 145 => Some(NoticeType::Informational),
            128..=131 => Some(NoticeType::Urgent),
            256..=259 => Some(NoticeType::Security),
            _ => None,
        }
    }
}

wire_struct! {
    /// Notice (0x0002), the 64-byte form carried by SMPs (traps, the notice queue).
    ///
    /// Generic and vendor notices share one layout. `producer_type` holds the
    /// ProducerType of a generic notice or the VendorID of a vendor notice
    /// ([`Notice::vendor_id`]); `trap_number` holds the trap number or the vendor's
    /// DeviceID ([`Notice::device_id`]).
    pub struct Notice, view NoticeView, size 64, label "Notice";
    fields {
        /// Generic (defined trap numbers) rather than vendor specific.
        is_generic, set_is_generic: bool = (0, 0, 1), "IB_NOTICE_IS_GENERIC_F";
        /// Notice type.
        notice_type, set_notice_type: NoticeType = (0, 1, 7), "IB_NOTICE_TYPE_F";
        /// Generic: ProducerType ([`ProducerType`]). Vendor: VendorID (OUI).
        producer_type, set_producer_type: u32 = (1, 0, 24), "IB_NOTICE_PRODUCER_F";
        /// Generic: trap number ([`TrapNumber`]). Vendor: DeviceID.
        trap_number, set_trap_number: u16 = (4, 0, 16), "IB_NOTICE_TRAP_NUMBER_F";
        /// LID of the port that raised the notice.
        issuer_lid, set_issuer_lid: u16 = (6, 0, 16), "IB_NOTICE_ISSUER_LID_F";
        /// Notice-queue handshake bit.
        notice_toggle, set_notice_toggle: bool = (8, 0, 1), "IB_NOTICE_TOGGLE_F";
        /// Notice-queue counter.
        notice_count, set_notice_count: u16 = (8, 1, 15), "IB_NOTICE_COUNT_F";
        /// 54 bytes whose layout depends on the trap number (see [`Notice::details`]).
        data_details, set_data_details: [u8; 54] = (10, 0, 432), "IB_NOTICE_DATA_DETAILS_F";
    }
}

wire_struct! {
    /// Notice in the 80-byte SA form (SubnAdmReport): the SMP form plus IssuerGID.
    pub struct SaNotice, view SaNoticeView, size 80, label "Notice (SA form)";
    fields {
        /// The first 64 bytes, as in an SMP.
        notice, set_notice: Notice = (0, 0, 512);
        /// GID of the issuer.
        issuer_gid, set_issuer_gid: Gid = (64, 0, 128);
    }
}

/// A DataDetails layout for one or more generic trap numbers.
pub trait TrapDetails: WireStruct {
    /// The generic trap numbers whose DataDetails have this layout.
    const TRAP_NUMBERS: &'static [u16];
}

impl Notice {
    /// A generic notice with the type the trap number implies (Informational for
    /// unknown numbers), zero count and empty DataDetails.
    #[must_use]
    pub fn generic(trap: TrapNumber, producer: ProducerType, issuer_lid: u16) -> Self {
        Self {
            is_generic: true,
            notice_type: trap.notice_type().unwrap_or(NoticeType::Informational),
            producer_type: u32::from(producer) & 0x00FF_FFFF,
            trap_number: trap.into(),
            issuer_lid,
            ..Self::default()
        }
    }

    /// A generic notice carrying `details`, whose first trap number is used.
    #[must_use]
    pub fn generic_with<D: TrapDetails>(
        producer: ProducerType,
        issuer_lid: u16,
        details: &D,
    ) -> Self {
        let trap = D::TRAP_NUMBERS.first().copied().unwrap_or(0);
        let mut n = Self::generic(TrapNumber::from(trap), producer, issuer_lid);
        n.set_details(details);
        n
    }

    /// ProducerType of a generic notice.
    #[must_use]
    pub fn producer(&self) -> Option<ProducerType> {
        self.is_generic
            .then(|| ProducerType::from(self.producer_type))
    }

    /// VendorID of a vendor notice (the same bits as ProducerType).
    #[must_use]
    pub fn vendor_id(&self) -> Option<u32> {
        (!self.is_generic).then_some(self.producer_type)
    }

    /// Trap number of a generic notice.
    #[must_use]
    pub fn trap(&self) -> Option<TrapNumber> {
        self.is_generic.then(|| TrapNumber::from(self.trap_number))
    }

    /// DeviceID of a vendor notice (the same bits as TrapNumber).
    #[must_use]
    pub fn device_id(&self) -> Option<u16> {
        (!self.is_generic).then_some(self.trap_number)
    }

    /// DataDetails decoded as `D`.
    ///
    /// # Errors
    /// [`Error::Unexpected`] when the notice is not generic or its trap number is not one
    /// of `D::TRAP_NUMBERS`.
    pub fn details<D: TrapDetails>(&self) -> Result<D> {
        if !self.is_generic || !D::TRAP_NUMBERS.contains(&self.trap_number) {
            return Err(Error::Unexpected {
                what: D::LABEL,
                field: "trap_number",
                value: u64::from(self.trap_number),
            });
        }
        D::parse(&self.data_details)
    }

    /// Replaces DataDetails with the encoding of `details` (bytes it does not cover become
    /// zero). Trap number and the other header fields are left alone.
    pub fn set_details<D: TrapDetails>(&mut self, details: &D) {
        let mut buf = [0u8; NOTICE_DATA_DETAILS_SIZE];
        // Every TrapDetails is at most 54 bytes (checked by the tests).
        if details.emit_into(&mut buf).is_ok() {
            self.data_details = buf;
        }
    }

    /// DataDetails decoded according to the trap number.
    #[must_use]
    pub fn trap_data(&self) -> TrapData {
        fn get<D: TrapDetails>(n: &Notice) -> Option<D> {
            n.details::<D>().ok()
        }
        let d = |n: &Self| -> Option<TrapData> {
            Some(match n.trap()? {
                TrapNumber::GidInService
                | TrapNumber::GidOutOfService
                | TrapNumber::McGroupCreated
                | TrapNumber::McGroupDeleted => TrapData::Gid(get(n)?),
                TrapNumber::LinkStateChange => TrapData::LinkStateChange(get(n)?),
                TrapNumber::LocalLinkIntegrity
                | TrapNumber::ExcessiveBufferOverrun
                | TrapNumber::FlowControlWatchdog => TrapData::PortThreshold(get(n)?),
                TrapNumber::LocalChanges => TrapData::LocalChanges(get(n)?),
                TrapNumber::SystemImageGuidChange => TrapData::SystemImageGuidChange(get(n)?),
                TrapNumber::BadMKey => TrapData::BadMKey(get(n)?),
                TrapNumber::BadPKey | TrapNumber::BadQKey => TrapData::BadKey(get(n)?),
                TrapNumber::BadPKeySwitchExternalPort => {
                    TrapData::BadPKeySwitchExternalPort(get(n)?)
                }
                _ => return None,
            })
        };
        d(self).unwrap_or(TrapData::Raw(self.data_details))
    }
}

/// The DataDetails of a notice, typed by its trap number (see [`Notice::trap_data`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrapData {
    /// Traps 64-67.
    Gid(TrapGidDetails),
    /// Trap 128.
    LinkStateChange(Trap128Details),
    /// Traps 129-131.
    PortThreshold(Trap129Details),
    /// Trap 144.
    LocalChanges(Trap144Details),
    /// Trap 145.
    SystemImageGuidChange(Trap145Details),
    /// Trap 256.
    BadMKey(Trap256Details),
    /// Traps 257 and 258.
    BadKey(Trap257Details),
    /// Trap 259.
    BadPKeySwitchExternalPort(Trap259Details),
    /// Vendor notices and traps without a typed layout (68, 69, unknown numbers).
    Raw([u8; NOTICE_DATA_DETAILS_SIZE]),
}

wire_struct! {
    /// DataDetails of traps 64-67 (GID in/out of service, multicast group
    /// created/deleted).
    pub struct TrapGidDetails, view TrapGidDetailsView, size 54, label "Notice trap 64-67";
    fields {
        /// 64/65: the port GID; 66/67: the multicast GID.
        gid, set_gid: Gid = (6, 0, 128);
    }
}

impl TrapDetails for TrapGidDetails {
    const TRAP_NUMBERS: &'static [u16] = &[64, 65, 66, 67];
}

wire_struct! {
    /// DataDetails of trap 128 (link state change).
    pub struct Trap128Details, view Trap128DetailsView, size 54, label "Notice trap 128";
    fields {
        /// LID of the switch whose port changed state.
        lid, set_lid: u16 = (0, 0, 16), "IB_NOTICE_DATA_LID_F";
    }
}

impl TrapDetails for Trap128Details {
    const TRAP_NUMBERS: &'static [u16] = &[128];
}

wire_struct! {
    /// DataDetails of traps 129, 130 and 131 (port error thresholds).
    pub struct Trap129Details, view Trap129DetailsView, size 54, label "Notice trap 129-131";
    fields {
        /// LID of the node.
        lid, set_lid: u16 = (2, 0, 16);
        /// Port where the threshold was hit.
        port_num, set_port_num: u8 = (4, 0, 8);
    }
}

impl TrapDetails for Trap129Details {
    const TRAP_NUMBERS: &'static [u16] = &[129, 130, 131];
}

bit_flags! {
    /// Trap 144 ChangeFlags: which local attribute changed.
    pub struct Trap144ChangeFlags: u16 {
        /// NodeDescription changed.
        const NODE_DESCRIPTION = 0x0001;
        /// LinkWidthEnabled changed.
        const LINK_WIDTH_ENABLED = 0x0002;
        /// LinkSpeedEnabled changed.
        const LINK_SPEED_ENABLED = 0x0004;
        /// SM priority changed (OpenSM naming; not confirmed by a second source).
        const SM_PRIORITY = 0x0008;
        /// HierarchyInfo changed (OpenSM naming).
        const HIERARCHY_INFO = 0x0010;
        /// CapabilityMask2 changed (OpenSM naming).
        const CAPABILITY_MASK2 = 0x0020;
    }
}

wire_struct! {
    /// DataDetails of trap 144 (local changes).
    pub struct Trap144Details, view Trap144DetailsView, size 54, label "Notice trap 144";
    fields {
        /// LID of the port.
        lid, set_lid: u16 = (2, 0, 16), "IB_NOTICE_DATA_144_LID_F";
        /// Something other than CapabilityMask changed (see `change_flags`).
        other_local_changes, set_other_local_changes: bool = (5, 7, 1);
        /// The port's new CapabilityMask.
        capability_mask, set_capability_mask: CapabilityMask = (6, 0, 32), "IB_NOTICE_DATA_144_CAPMASK_F";
        /// Which attribute changed.
        change_flags, set_change_flags: Trap144ChangeFlags = (10, 0, 16);
        /// The port's new CapabilityMask2.
        capability_mask2, set_capability_mask2: CapabilityMask2 = (12, 0, 16);
    }
}

impl TrapDetails for Trap144Details {
    const TRAP_NUMBERS: &'static [u16] = &[144];
}

wire_struct! {
    /// DataDetails of trap 145 (SystemImageGUID changed).
    pub struct Trap145Details, view Trap145DetailsView, size 54, label "Notice trap 145";
    fields {
        /// LID of the port.
        lid, set_lid: u16 = (2, 0, 16);
        /// New SystemImageGUID.
        system_image_guid, set_system_image_guid: u64 = (6, 0, 64);
    }
}

impl TrapDetails for Trap145Details {
    const TRAP_NUMBERS: &'static [u16] = &[145];
}

wire_struct! {
    /// DataDetails of trap 256 (bad M_Key).
    pub struct Trap256Details, view Trap256DetailsView, size 54, label "Notice trap 256";
    fields {
        /// Source LID of the offending SMP.
        lid, set_lid: u16 = (2, 0, 16);
        /// DrSLID of the offending SMP (directed route).
        dr_slid, set_dr_slid: u16 = (4, 0, 16);
        /// Method of the offending SMP.
        method, set_method: u8 = (6, 0, 8);
        /// Its AttributeID.
        attribute_id, set_attribute_id: u16 = (8, 0, 16);
        /// Its AttributeModifier.
        attribute_modifier, set_attribute_modifier: u32 = (10, 0, 32);
        /// The M_Key it presented.
        m_key, set_m_key: u64 = (14, 0, 64);
        /// The offending SMP was directed route and the path below is valid.
        dr_notice, set_dr_notice: bool = (23, 0, 1);
        /// Its return path was longer than 30 hops and was cut.
        dr_path_truncated, set_dr_path_truncated: bool = (23, 1, 1);
        /// Its HopCount.
        dr_hop_count, set_dr_hop_count: u8 = (23, 2, 6);
        /// First 30 bytes of its ReturnPath (entry k at byte k).
        dr_notice_return_path, set_dr_notice_return_path: [u8; 30] = (24, 0, 240);
    }
}

impl TrapDetails for Trap256Details {
    const TRAP_NUMBERS: &'static [u16] = &[256];
}

wire_struct! {
    /// DataDetails of traps 257 (bad P_Key) and 258 (bad Q_Key).
    pub struct Trap257Details, view Trap257DetailsView, size 54, label "Notice trap 257-258";
    fields {
        /// Source LID of the bad packet.
        lid1, set_lid1: u16 = (2, 0, 16);
        /// Destination LID.
        lid2, set_lid2: u16 = (4, 0, 16);
        /// 258: the Q_Key. 257: the P_Key in the low 16 bits.
        key, set_key: u32 = (6, 0, 32);
        /// SL of the packet.
        sl, set_sl: u8 = (10, 0, 4);
        /// Source QP.
        qp1, set_qp1: u32 = (11, 0, 24);
        /// Destination QP.
        qp2, set_qp2: u32 = (15, 0, 24);
        /// Source GID (if the packet had a GRH).
        gid1, set_gid1: Gid = (18, 0, 128);
        /// Destination GID.
        gid2, set_gid2: Gid = (34, 0, 128);
    }
}

impl TrapDetails for Trap257Details {
    const TRAP_NUMBERS: &'static [u16] = &[257, 258];
}

wire_struct! {
    /// DataDetails of trap 259 (bad P_Key at a switch external port).
    pub struct Trap259Details, view Trap259DetailsView, size 54, label "Notice trap 259";
    fields {
        /// Which of the following fields hold data (bit assignment not confirmed).
        data_valid, set_data_valid: u16 = (0, 0, 16);
        /// Source LID.
        lid1, set_lid1: u16 = (2, 0, 16);
        /// Destination LID.
        lid2, set_lid2: u16 = (4, 0, 16);
        /// P_Key of the packet.
        pkey, set_pkey: u16 = (6, 0, 16);
        /// SL of the packet.
        sl, set_sl: u8 = (8, 0, 4);
        /// Source QP.
        qp1, set_qp1: u32 = (9, 0, 24);
        /// Destination QP.
        qp2, set_qp2: u32 = (13, 0, 24);
        /// Source GID.
        gid1, set_gid1: Gid = (16, 0, 128);
        /// Destination GID.
        gid2, set_gid2: Gid = (32, 0, 128);
        /// LID of the switch.
        sw_lid, set_sw_lid: u16 = (48, 0, 16);
        /// Switch port where the packet was dropped.
        port_no, set_port_no: u8 = (50, 0, 8);
    }
}

impl TrapDetails for Trap259Details {
    const TRAP_NUMBERS: &'static [u16] = &[259];
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testutil::check;

    #[test]
    fn trap128_bytes() {
        // Trap 128 from switch LID 0x0012, as an SMA sends it.
        let n = Notice::generic_with(
            ProducerType::Switch,
            0x0012,
            &Trap128Details { lid: 0x0012 },
        );
        let b = n.to_bytes();
        assert_eq!(&b[..12], &[0x81, 0, 0, 2, 0, 128, 0, 0x12, 0, 0, 0, 0x12]);
        assert!(b[12..].iter().all(|&x| x == 0));
        let back = Notice::parse(&b).unwrap();
        assert_eq!(back, n);
        assert_eq!(back.trap(), Some(TrapNumber::LinkStateChange));
        assert_eq!(back.producer(), Some(ProducerType::Switch));
        assert_eq!(back.vendor_id(), None);
        assert_eq!(
            back.trap_data(),
            TrapData::LinkStateChange(Trap128Details { lid: 0x12 })
        );
        assert!(back.details::<Trap144Details>().is_err());
    }

    #[test]
    fn trap256_bytes() {
        let mut path = [0u8; 30];
        path[..3].copy_from_slice(&[0, 1, 7]);
        let d = Trap256Details {
            lid: 0xFFFF,
            dr_slid: 0xFFFF,
            method: 0x02,
            attribute_id: 0x0015,
            attribute_modifier: 3,
            m_key: 0x1122_3344_5566_7788,
            dr_notice: true,
            dr_path_truncated: false,
            dr_hop_count: 2,
            dr_notice_return_path: path,
        };
        let mut n = Notice::generic_with(ProducerType::Ca, 7, &d);
        n.notice_toggle = true;
        n.notice_count = 0x1234;
        let b = n.to_bytes();
        assert_eq!(b[0], 0x82); // generic, Security
        assert_eq!(&b[4..6], &[0x01, 0x00]);
        assert_eq!(&b[8..10], &[0x92, 0x34]);
        assert_eq!(&b[12..16], &[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(&b[16..18], &[0x02, 0x00]);
        assert_eq!(&b[18..24], &[0x00, 0x15, 0, 0, 0, 3]);
        assert_eq!(
            &b[24..32],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(b[33], 0x82);
        assert_eq!(&b[34..37], &[0, 1, 7]);
        let back = Notice::parse(&b).unwrap();
        assert_eq!(back.details::<Trap256Details>(), Ok(d));
        assert_eq!(back.trap_data(), TrapData::BadMKey(d));
    }

    #[test]
    fn vendor_notice_and_positions() {
        let n = Notice {
            is_generic: false,
            notice_type: NoticeType::Urgent,
            producer_type: 0x02c9,
            trap_number: 0x1003,
            ..Notice::default()
        };
        assert_eq!(n.vendor_id(), Some(0x02c9));
        assert_eq!(n.device_id(), Some(0x1003));
        assert_eq!(n.trap(), None);
        assert!(matches!(n.trap_data(), TrapData::Raw(_)));
        assert_eq!(n.to_bytes()[..4], [0x01, 0x00, 0x02, 0xc9]);
        // Trap 144: CapabilityMask at Notice byte 16, ChangeFlags at 20.
        let d = Trap144Details {
            lid: 9,
            other_local_changes: true,
            capability_mask: CapabilityMask::IS_SM,
            change_flags: Trap144ChangeFlags::NODE_DESCRIPTION,
            capability_mask2: CapabilityMask2(0),
        };
        let b = Notice::generic_with(ProducerType::Ca, 9, &d).to_bytes();
        assert_eq!(&b[12..24], &[0, 9, 0, 1, 0, 0, 0, 2, 0, 1, 0, 0]);
        // Every trap layout fits in DataDetails.
        for size in [
            TrapGidDetails::SIZE,
            Trap128Details::SIZE,
            Trap129Details::SIZE,
            Trap144Details::SIZE,
            Trap145Details::SIZE,
            Trap256Details::SIZE,
            Trap257Details::SIZE,
            Trap259Details::SIZE,
        ] {
            assert_eq!(size, NOTICE_DATA_DETAILS_SIZE);
        }
    }

    #[test]
    fn sa_form() {
        let gid = Gid::new(crate::DEFAULT_SUBNET_PREFIX, 0x1234);
        let s = SaNotice {
            notice: Notice::generic_with(ProducerType::ClassManager, 1, &TrapGidDetails { gid }),
            issuer_gid: gid,
        };
        let b = s.to_bytes();
        assert_eq!(&b[16..32], &gid.0);
        assert_eq!(&b[64..80], &gid.0);
        assert_eq!(SaNotice::parse(&b), Ok(s));
        assert_eq!(s.notice.trap_data(), TrapData::Gid(TrapGidDetails { gid }));
        assert!(SaNotice::parse(&b[..64]).is_err());
    }

    #[test]
    fn generic_properties() {
        check::<Notice>();
        check::<SaNotice>();
        check::<TrapGidDetails>();
        check::<Trap128Details>();
        check::<Trap129Details>();
        check::<Trap144Details>();
        check::<Trap145Details>();
        check::<Trap256Details>();
        check::<Trap257Details>();
        check::<Trap259Details>();
    }
}
