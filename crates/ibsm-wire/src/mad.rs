//! The common 24-byte MAD header, management classes, methods and the status word
//! (`shared/spec/mad.md`).

use crate::field::{Field, FieldType, FieldValue, get_uint, set_uint};

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
}
