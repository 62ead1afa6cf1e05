//! The common 24-byte MAD header, management classes, methods and the status word
//! (IBA Vol. 1 §13.4).

use crate::attr::bit_flags;
use crate::field::{Field, FieldType, FieldValue, get_uint, set_uint};
use crate::gid::Gid;

/// Size of every MAD handled here (base version 1).
pub const MAD_SIZE: usize = 256;
/// Size of the common header.
pub const MAD_HEADER_SIZE: usize = 24;
/// Well-known Q_Key of QP1.
pub const QP1_QKEY: u32 = 0x8001_0000;
/// Default (full-member) P_Key.
pub const DEFAULT_PKEY: u16 = 0xFFFF;

code_enum! {
    /// Management class (byte 1 of every MAD).
    pub enum MgmtClass: u8 {
        /// Subnet management, LID routed (0x01).
        SubnLid = 0x01,
        /// Subnet administration (0x03).
        SubnAdm = 0x03,
        /// Performance management (0x04).
        PerfMgt = 0x04,
        /// Baseboard management (0x05).
        BoardMgt = 0x05,
        /// Device management (0x06).
        DevMgt = 0x06,
        /// Communication management (0x07).
        ComMgt = 0x07,
        /// SNMP tunnelling (0x08).
        Snmp = 0x08,
        /// Congestion control (0x21).
        CongestionControl = 0x21,
        /// Subnet management, directed route (0x81).
        SubnDirected = 0x81,
    }
}

impl MgmtClass {
    /// Whether this is one of the two subnet-management (SMP) classes.
    #[must_use]
    pub fn is_smp(self) -> bool {
        matches!(self, Self::SubnLid | Self::SubnDirected)
    }

    /// Vendor range 1 (0x09..=0x0F) or range 2 (0x30..=0x4F).
    #[must_use]
    pub fn is_vendor(self) -> bool {
        let v = u8::from(self);
        (0x09..=0x0F).contains(&v) || (0x30..=0x4F).contains(&v)
    }
}

code_enum! {
    /// Method code without the response bit (the 7 low bits of byte 3).
    ///
    /// A response is the request's method with the R bit set: GetResp is `Get` with
    /// `response = true`, GetTableResp is `GetTable` with it, and so on.
    pub enum Method: u8 {
        /// Get (SubnGet / SubnAdmGet).
        Get = 0x01,
        /// Set (SubnSet / SubnAdmSet).
        Set = 0x02,
        /// Send: datagram without response.
        Send = 0x03,
        /// Trap: unsolicited notice.
        Trap = 0x05,
        /// Report: the SA forwarding a notice.
        Report = 0x06,
        /// TrapRepress: stop re-sending a trap (R bit clear).
        TrapRepress = 0x07,
        /// GetTable (SA).
        GetTable = 0x12,
        /// GetTraceTable (SA).
        GetTraceTable = 0x13,
        /// GetMulti (SA).
        GetMulti = 0x14,
        /// Delete (SA).
        Delete = 0x15,
    }
}

impl Method {
    /// The whole method byte: `R << 7 | method`.
    #[must_use]
    pub fn byte(self, response: bool) -> u8 {
        (u8::from(self) & 0x7F) | if response { 0x80 } else { 0 }
    }
}

/// Method byte of GetResp (the answer to Get and Set).
pub const METHOD_GET_RESP: u8 = 0x81;
/// Method byte of ReportResp.
pub const METHOD_REPORT_RESP: u8 = 0x86;
/// Method byte of GetTableResp.
pub const METHOD_GET_TABLE_RESP: u8 = 0x92;

code_enum! {
    /// The "invalid field" code of the status word (bits 2..4).
    pub enum InvalidField: u8 {
        /// No invalid field.
        None = 0,
        /// BaseVersion or ClassVersion not supported.
        BadVersion = 1,
        /// Method not supported.
        MethodUnsupported = 2,
        /// Method/attribute combination not supported.
        MethodAttrUnsupported = 3,
        /// A field of the attribute or the AttributeModifier is invalid.
        InvalidAttrValue = 7,
    }
}

/// The 16-bit MAD status word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Status(pub u16);

impl Status {
    /// Success.
    pub const OK: Self = Self(0);
    /// Busy (bit 0).
    pub const BUSY: Self = Self(0x0001);
    /// Redirect required (bit 1).
    pub const REDIRECT: Self = Self(0x0002);
    /// Bad base or class version.
    pub const BAD_VERSION: Self = Self(0x0004);
    /// Method not supported.
    pub const METHOD_UNSUPPORTED: Self = Self(0x0008);
    /// Method/attribute combination not supported.
    pub const METHOD_ATTR_UNSUPPORTED: Self = Self(0x000C);
    /// Invalid attribute field or modifier.
    pub const INVALID_VALUE: Self = Self(0x001C);

    /// Busy bit.
    #[must_use]
    pub const fn busy(self) -> bool {
        self.0 & 0x0001 != 0
    }
    /// Redirect bit.
    #[must_use]
    pub const fn redirect(self) -> bool {
        self.0 & 0x0002 != 0
    }
    /// Invalid-field code (bits 2..4).
    #[must_use]
    pub fn invalid_field(self) -> InvalidField {
        InvalidField::from(((self.0 >> 2) & 0x7) as u8)
    }
    /// Class-specific bits 8..15 (the SA error code for class 0x03).
    #[must_use]
    pub const fn class_specific(self) -> u8 {
        (self.0 >> 8) as u8
    }
    /// Whether the status means success (busy alone counts as success, as the spec says).
    #[must_use]
    pub const fn is_ok(self) -> bool {
        self.0 & !0x0001 == 0
    }
}

impl FieldType for Status {
    #[inline(always)]
    fn read(buf: &[u8], f: Field) -> Self {
        Self(get_uint(buf, f) as u16)
    }
    #[inline(always)]
    fn write(self, buf: &mut [u8], f: Field) {
        set_uint(buf, f, u64::from(self.0));
    }
    fn to_value(&self) -> FieldValue<'_> {
        FieldValue::Uint(u64::from(self.0))
    }
    fn from_value(v: FieldValue<'_>, f: Field) -> Option<Self> {
        u16::from_value(v, f).map(Self)
    }
}

wire_struct! {
    /// The common MAD header (bytes 0..24 of every MAD).
    pub struct MadHeader, view MadHeaderView, size 24, label "MAD header";
    fields {
        /// Base version, 1 for InfiniBand MADs.
        base_version, set_base_version: u8 = (0, 0, 8), "IB_MAD_BASEVER_F";
        /// Management class.
        mgmt_class, set_mgmt_class: MgmtClass = (1, 0, 8), "IB_MAD_MGMTCLASS_F";
        /// Class version (1 for SMPs, 2 for SA).
        class_version, set_class_version: u8 = (2, 0, 8), "IB_MAD_CLASSVER_F";
        /// R bit: this MAD is a response.
        response, set_response: bool = (3, 0, 1), "IB_MAD_RESPONSE_F";
        /// Method without the R bit.
        method, set_method: Method = (3, 1, 7), "IB_MAD_METHOD_F";
        /// Status word (for directed-route SMPs the top bit is the D bit).
        status, set_status: Status = (4, 0, 16), "IB_MAD_STATUS_F";
        /// Class-specific word (HopPointer/HopCount for directed-route SMPs).
        class_specific, set_class_specific: u16 = (6, 0, 16);
        /// Transaction ID (receivers and kernels may overwrite the upper 32 bits).
        transaction_id, set_transaction_id: u64 = (8, 0, 64), "IB_MAD_TRID_F";
        /// Attribute ID (meaning depends on the class).
        attribute_id, set_attribute_id: u16 = (16, 0, 16), "IB_MAD_ATTRID_F";
        /// Attribute modifier.
        attribute_modifier, set_attribute_modifier: u32 = (20, 0, 32), "IB_MAD_ATTRMOD_F";
    }
}

impl<T: AsRef<[u8]>> MadHeaderView<T> {
    /// The whole method byte (R bit included).
    #[must_use]
    pub fn method_byte(&self) -> u8 {
        self.as_bytes()[3]
    }
}

impl MadHeader {
    /// The whole method byte (R bit included).
    #[must_use]
    pub fn method_byte(&self) -> u8 {
        self.method.byte(self.response)
    }
}

/// Gives a MAD form that nests [`MadHeader`] as its `header` field the header's fields
/// directly, so that the 24 header bytes are declared once (in `MadHeader`): the owned
/// value dereferences to its header (`smp.transaction_id`), and the view reads and
/// writes them through a [`MadHeaderView`] of its first 24 bytes. `$attr` is the type
/// the view's `attribute_id` speaks (a class's own attribute ID enum, or `u16`).
macro_rules! mad_form {
    // One form for the forwarding: each header field of a view is read (and, where it
    // has a setter, written) through the view's `MadHeaderView`.
    (@header $view:ident, $($(#[$doc:meta])* $field:ident $(, $setter:ident)?: $ty:ty;)*) => {
        impl<T: AsRef<[u8]>> $view<T> {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $field(&self) -> $ty {
                    self.mad_header().$field()
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            $($(
                #[doc = concat!("Sets [`Self::", stringify!($field), "`].")]
                pub fn $setter(&mut self, v: $ty) {
                    self.mad_header_mut().$setter(v);
                }
            )?)*
        }
    };
    ($name:ident, $view:ident, $attr:ty) => {
        impl core::ops::Deref for $name {
            type Target = $crate::mad::MadHeader;
            fn deref(&self) -> &Self::Target {
                &self.header
            }
        }

        impl core::ops::DerefMut for $name {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.header
            }
        }

        $crate::mad::mad_form! { @header $view,
            /// Base version (1).
            base_version, set_base_version: u8;
            /// Management class.
            mgmt_class, set_mgmt_class: $crate::mad::MgmtClass;
            /// Class version.
            class_version, set_class_version: u8;
            /// R bit: this MAD is a response.
            response, set_response: bool;
            /// Method without the R bit.
            method, set_method: $crate::mad::Method;
            /// The whole method byte (R bit included).
            method_byte: u8;
            /// Status word.
            status, set_status: $crate::mad::Status;
            /// Class-specific word.
            class_specific, set_class_specific: u16;
            /// Transaction ID.
            transaction_id, set_transaction_id: u64;
            /// Attribute modifier.
            attribute_modifier, set_attribute_modifier: u32;
        }

        impl<T: AsRef<[u8]>> $view<T> {
            // Over the whole buffer, not `as_bytes` (cut at the form's size, so it would
            // need all of it): a header reads on a MAD shorter than its form, as the
            // form's own accessors do.
            fn mad_header(&self) -> $crate::mad::MadHeaderView<&[u8]> {
                $crate::mad::MadHeaderView::new_unchecked(self.buffer.as_ref())
            }
            /// Attribute ID.
            #[must_use]
            pub fn attribute_id(&self) -> $attr {
                <$attr>::from(self.mad_header().attribute_id())
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            fn mad_header_mut(&mut self) -> $crate::mad::MadHeaderView<&mut [u8]> {
                $crate::mad::MadHeaderView::new_unchecked(self.buffer.as_mut())
            }
            /// Sets [`Self::attribute_id`].
            pub fn set_attribute_id(&mut self, v: $attr) {
                self.mad_header_mut().set_attribute_id(u16::from(v));
            }
        }
    };
}
pub(crate) use mad_form;

/// Offset of the RMPP header in every class that can use RMPP (SA, vendor range 2).
pub const RMPP_HEADER_OFFSET: usize = 24;
/// Size of the RMPP header.
pub const RMPP_HEADER_SIZE: usize = 12;

code_enum! {
    /// RMPPType: what an RMPP segment is (byte 25 of SA and vendor range-2 MADs).
    pub enum RmppType: u8 {
        /// No RMPP: a single-packet MAD.
        None = 0,
        /// A data segment.
        Data = 1,
        /// Acknowledgement of the segments received so far.
        Ack = 2,
        /// The receiver stops the transfer (RMPPStatus says why).
        Stop = 3,
        /// Either side aborts the transfer (RMPPStatus says why).
        Abort = 4,
    }
}

bit_flags! {
    /// The three RMPP flags (low 3 bits of byte 26): Active, First, Last.
    pub struct RmppFlags: u8 {
        /// RMPP is in use for this MAD.
        const ACTIVE = 0x1;
        /// First segment of a transfer.
        const FIRST = 0x2;
        /// Last segment of a transfer.
        const LAST = 0x4;
    }
}

impl RmppFlags {
    /// No flag set (RMPP not in use).
    pub const NONE: Self = Self::EMPTY;

    /// Active flag.
    #[must_use]
    pub const fn active(self) -> bool {
        self.contains(Self::ACTIVE)
    }
    /// First flag.
    #[must_use]
    pub const fn first(self) -> bool {
        self.contains(Self::FIRST)
    }
    /// Last flag.
    #[must_use]
    pub const fn last(self) -> bool {
        self.contains(Self::LAST)
    }
}

code_enum! {
    /// RMPPStatus (byte 27): why a transfer was stopped or aborted.
    pub enum RmppStatus: u8 {
        /// Normal.
        Normal = 0,
        /// STOP: the receiver ran out of resources.
        ResourcesExhausted = 1,
        /// ABORT: the whole transfer took too long.
        TotalTimeTooLong = 118,
        /// ABORT: Last flag and PayloadLength inconsistent.
        InconsistentLastAndLength = 119,
        /// ABORT: First flag and SegmentNumber inconsistent.
        InconsistentFirstAndSegment = 120,
        /// ABORT: bad RMPPType.
        BadRmppType = 121,
        /// ABORT: NewWindowLast too small.
        NewWindowLastTooSmall = 122,
        /// ABORT: SegmentNumber too big.
        SegmentNumberTooBig = 123,
        /// ABORT: illegal status.
        IllegalStatus = 124,
        /// ABORT: unsupported RMPPVersion.
        UnsupportedVersion = 125,
        /// ABORT: too many retries.
        TooManyRetries = 126,
        /// ABORT: unspecified error.
        Unspecified = 127,
    }
}

wire_struct! {
    /// The 12-byte RMPP header at bytes 24..36 of SA and vendor range-2 MADs
    /// (IBA Vol. 1 §13.6); used by [`crate::sa::rmpp`] for either class.
    pub struct RmppHeader, view RmppHeaderView, size 12, label "RMPP header";
    fields {
        /// RMPPVersion (1 when RMPP is in use).
        version, set_version: u8 = (0, 0, 8);
        /// RMPPType.
        rmpp_type, set_rmpp_type: RmppType = (1, 0, 8);
        /// RRespTime: 4.096 us * 2^value, 0x1F = none given.
        resp_time, set_resp_time: u8 = (2, 0, 5);
        /// RMPP flags.
        flags, set_flags: RmppFlags = (2, 5, 3);
        /// RMPPStatus.
        status, set_status: RmppStatus = (3, 0, 8);
        /// Data1: SegmentNumber of DATA and ACK.
        data1, set_data1: u32 = (4, 0, 32);
        /// Data2: PayloadLength of DATA, NewWindowLast of ACK.
        data2, set_data2: u32 = (8, 0, 32);
    }
}

wire_struct! {
    /// ClassPortInfo (AttributeID 0x0001, 72 bytes): capabilities, response time,
    /// redirection and trap destination of a GMP class agent (IBA Vol. 1 §13.4.8.1).
    pub struct ClassPortInfo, view ClassPortInfoView, size 72, label "ClassPortInfo";
    fields {
        /// Base version (1).
        base_version, set_base_version: u8 = (0, 0, 8), "IB_CPI_BASEVER_F";
        /// Highest class version supported.
        class_version, set_class_version: u8 = (1, 0, 8), "IB_CPI_CLASSVER_F";
        /// Capability bits: 0 traps, 1 Get/Set(Notice), 2 CapabilityMask2 valid, 8..15
        /// class specific (SA: [`crate::sa::SaCapabilityMask`]).
        capability_mask, set_capability_mask: u16 = (2, 0, 16), "IB_CPI_CAPMASK_F";
        /// Class-specific extension bits (SA: [`crate::sa::SaCapabilityMask2`]).
        capability_mask2, set_capability_mask2: u32 = (4, 0, 27), "IB_CPI_CAPMASK2_F";
        /// Expected response time: 4.096 us * 2^value.
        resp_time_value, set_resp_time_value: u8 = (7, 3, 5), "IB_CPI_RESP_TIME_VALUE_F";
        /// GID to redirect requests to (0 if none).
        redirect_gid, set_redirect_gid: Gid = (8, 0, 128), "IB_CPI_REDIRECT_GID_F";
        /// Traffic class for redirected requests.
        redirect_tc, set_redirect_tc: u8 = (24, 0, 8), "IB_CPI_REDIRECT_TC_F";
        /// SL for redirected requests.
        redirect_sl, set_redirect_sl: u8 = (25, 0, 4), "IB_CPI_REDIRECT_SL_F";
        /// Flow label for redirected requests.
        redirect_fl, set_redirect_fl: u32 = (25, 4, 20), "IB_CPI_REDIRECT_FL_F";
        /// LID to redirect to (0 = no redirection).
        redirect_lid, set_redirect_lid: u16 = (28, 0, 16), "IB_CPI_REDIRECT_LID_F";
        /// P_Key for redirected requests.
        redirect_pkey, set_redirect_pkey: u16 = (30, 0, 16), "IB_CPI_REDIRECT_PKEY_F";
        /// QP to redirect to.
        redirect_qp, set_redirect_qp: u32 = (33, 0, 24), "IB_CPI_REDIRECT_QP_F";
        /// Q_Key for redirected requests.
        redirect_qkey, set_redirect_qkey: u32 = (36, 0, 32), "IB_CPI_REDIRECT_QKEY_F";
        /// Where this class's traps go.
        trap_gid, set_trap_gid: Gid = (40, 0, 128), "IB_CPI_TRAP_GID_F";
        /// Traffic class for traps.
        trap_tc, set_trap_tc: u8 = (56, 0, 8), "IB_CPI_TRAP_TC_F";
        /// SL for traps.
        trap_sl, set_trap_sl: u8 = (57, 0, 4), "IB_CPI_TRAP_SL_F";
        /// Flow label for traps.
        trap_fl, set_trap_fl: u32 = (57, 4, 20), "IB_CPI_TRAP_FL_F";
        /// LID traps go to.
        trap_lid, set_trap_lid: u16 = (60, 0, 16), "IB_CPI_TRAP_LID_F";
        /// P_Key for traps.
        trap_pkey, set_trap_pkey: u16 = (62, 0, 16), "IB_CPI_TRAP_PKEY_F";
        /// Hop limit for traps.
        trap_hl, set_trap_hl: u8 = (64, 0, 8), "IB_CPI_TRAP_HL_F";
        /// QP traps go to.
        trap_qp, set_trap_qp: u32 = (65, 0, 24), "IB_CPI_TRAP_QP_F";
        /// Q_Key for traps.
        trap_qkey, set_trap_qkey: u32 = (68, 0, 32), "IB_CPI_TRAP_QKEY_F";
    }
}

/// ClassPortInfo.CapabilityMask bits common to every class (the classes' own masks,
/// such as [`crate::sa::SaCapabilityMask`] and [`crate::perf::PmCapabilityMask`], take
/// theirs from here).
pub mod cpi_cap {
    /// The agent generates traps.
    pub const TRAP: u16 = 0x0001;
    /// Get/Set(Notice) supported.
    pub const GET_SET_NOTICE: u16 = 0x0002;
    /// CapabilityMask2 is valid.
    pub const CAP_MASK2: u16 = 0x0004;
}

wire_struct! {
    /// A vendor range-2 MAD (classes 0x30..=0x4F), all 256 bytes (IBA Vol. 1 §13.4, the
    /// vendor MAD format): common header, RMPP header, OUI and 216 data bytes.
    pub struct Vendor2Mad, view Vendor2MadView, size 256, label "vendor range-2 MAD";
    fields {
        /// The common MAD header.
        header, set_header: MadHeader = (0, 0, 192);
        /// The RMPP header.
        rmpp, set_rmpp: RmppHeader = (24, 0, 96);
        /// IEEE OUI of the vendor class owner.
        oui, set_oui: u32 = (37, 0, 24), "IB_VEND2_OUI_F";
        /// The 216 vendor data bytes.
        data, set_data: [u8; 216] = (40, 0, 1728), "IB_VEND2_DATA_F";
    }
}

/// Offset of the data area of a vendor range-2 MAD (also its RMPP header length).
pub const VENDOR2_DATA_OFFSET: usize = 40;

mad_form!(Vendor2Mad, Vendor2MadView, u16);

wire_struct! {
    /// A general-services MAD of the PerfMgt / DevMgt / BM kind (IBA Vol. 1 §13.4, the
    /// GS data area): common header, 40 class-specific bytes and 192 data bytes.
    pub struct GsMad, view GsMadView, size 256, label "GS MAD";
    fields {
        /// The common MAD header.
        header, set_header: MadHeader = (0, 0, 192);
        /// Bytes 24..63: class-specific (BM: B_Key at 24), reserved for PerfMgt/DevMgt.
        class_header, set_class_header: [u8; 40] = (24, 0, 320);
        /// The 192 bytes of class data.
        data, set_data: [u8; 192] = (64, 0, 1536), "IB_GS_DATA_F";
    }
}

/// Offset of the data area of a [`GsMad`].
pub const GS_DATA_OFFSET: usize = 64;

mad_form!(GsMad, GsMadView, u16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_vector() {
        let bytes: [u8; 24] = [
            0x01, 0x81, 0x01, 0x81, 0x80, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x12, 0x34,
            0x56, 0x78, 0x00, 0x15, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03,
        ];
        let h = MadHeader::parse(&bytes).unwrap();
        assert_eq!(h.mgmt_class, MgmtClass::SubnDirected);
        assert!(h.response);
        assert_eq!(h.method, Method::Get);
        assert_eq!(h.method_byte(), METHOD_GET_RESP);
        assert_eq!(h.status, Status(0x8000));
        assert_eq!(h.class_specific, 0x0002);
        assert_eq!(h.transaction_id, 0x1234_5678);
        assert_eq!(h.attribute_id, 0x0015);
        assert_eq!(h.attribute_modifier, 3);
        assert_eq!(h.to_bytes(), bytes);
    }

    #[test]
    fn unknown_values_are_kept() {
        assert_eq!(MgmtClass::from(0x42), MgmtClass::Unknown(0x42));
        assert_eq!(u8::from(MgmtClass::Unknown(0x42)), 0x42);
        assert!(MgmtClass::from(0x42).is_vendor());
        assert!(!MgmtClass::Unknown(0x42).is_known());
        assert!(MgmtClass::Unknown(0x81).is_known());
    }

    #[test]
    fn status_bits() {
        assert_eq!(
            Status(0x001C).invalid_field(),
            InvalidField::InvalidAttrValue
        );
        assert_eq!(Status(0x0300).class_specific(), 3);
        assert!(Status::BUSY.is_ok());
        assert!(!Status::METHOD_ATTR_UNSUPPORTED.is_ok());
    }

    #[test]
    fn truncated() {
        assert_eq!(
            MadHeader::parse(&[0u8; 23]),
            Err(crate::Error::Truncated {
                what: "MAD header",
                need: 24,
                got: 23
            })
        );
    }

    #[test]
    fn class_port_info_vector() {
        let mut b = [0u8; 72];
        b[0] = 1;
        b[1] = 2;
        b[2..4].copy_from_slice(&0x2602u16.to_be_bytes());
        // CapabilityMask2 = 0x1F, RespTimeValue = 18 share bytes 4..7.
        b[4..8].copy_from_slice(&((0x1Fu32 << 5) | 18).to_be_bytes());
        b[25] = 0x3A;
        b[26] = 0xBC;
        b[27] = 0xDE;
        b[33..36].copy_from_slice(&[0x00, 0x00, 0x01]);
        b[36..40].copy_from_slice(&QP1_QKEY.to_be_bytes());
        b[60..62].copy_from_slice(&0x0001u16.to_be_bytes());
        b[64] = 0xFF;
        b[65..68].copy_from_slice(&[0x12, 0x34, 0x56]);
        let c = ClassPortInfo::parse(&b).unwrap();
        assert_eq!(c.capability_mask, 0x2602);
        assert_eq!(c.capability_mask2, 0x1F);
        assert_eq!(c.resp_time_value, 18);
        assert_eq!(c.redirect_sl, 3);
        assert_eq!(c.redirect_fl, 0xA_BCDE);
        assert_eq!(c.redirect_qp, 1);
        assert_eq!(c.redirect_qkey, QP1_QKEY);
        assert_eq!(c.trap_lid, 1);
        assert_eq!(c.trap_hl, 0xFF);
        assert_eq!(c.trap_qp, 0x12_3456);
        assert_eq!(c.to_bytes(), b);
    }

    #[test]
    fn rmpp_flags() {
        let f = RmppFlags::ACTIVE | RmppFlags::FIRST;
        assert!(f.active() && f.first() && !f.last());
        assert!(f.contains(RmppFlags::FIRST));
        assert!(!f.contains(RmppFlags::LAST));
        assert_eq!(RmppStatus::from(121), RmppStatus::BadRmppType);
        assert_eq!(RmppType::from(9), RmppType::Unknown(9));
    }

    #[test]
    fn vendor2_and_gs_layouts() {
        let mut b = [0u8; 256];
        b[1] = 0x30;
        b[25] = 1;
        b[26] = 0x07;
        b[37..40].copy_from_slice(&[0x00, 0x14, 0x05]);
        b[40] = 0xAA;
        b[255] = 0xBB;
        let v = Vendor2Mad::parse(&b).unwrap();
        assert!(v.mgmt_class.is_vendor());
        assert_eq!(v.rmpp.rmpp_type, RmppType::Data);
        assert_eq!(
            v.rmpp.flags,
            RmppFlags::ACTIVE | RmppFlags::FIRST | RmppFlags::LAST
        );
        assert_eq!(v.oui, 0x001405);
        assert_eq!((v.data[0], v.data[215]), (0xAA, 0xBB));
        assert_eq!(v.to_bytes(), b);
        let g = GsMad::parse(&b).unwrap();
        assert_eq!(g.data[0], b[GS_DATA_OFFSET]);
        assert_eq!(g.class_header[13], 0x00);
        assert_eq!(g.to_bytes(), b);
    }
}
