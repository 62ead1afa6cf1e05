//! `struct ib_user_mad_hdr` (the Linux kernel's `include/uapi/rdma/ib_user_mad.h` and
//! `Documentation/infiniband/user_mad.rst`): the header in front of every MAD read from
//! or written to a umad file, in its old 56-byte and new 64-byte forms.

/// The two header sizes the kernel ABI version 5 knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderLen {
    /// Without `pkey_index`: the default, and the only form the umad2sim preload speaks.
    Old56,
    /// With `pkey_index`, after `IB_USER_MAD_ENABLE_PKEY`.
    New64,
}

impl HeaderLen {
    /// Size in bytes.
    #[must_use]
    pub const fn bytes(self) -> usize {
        match self {
            Self::Old56 => 56,
            Self::New64 => 64,
        }
    }
}

// Offsets of `struct ib_user_mad_hdr`, the one place they are written.
const ID: usize = 0;
const STATUS: usize = 4;
const TIMEOUT_MS: usize = 8;
const RETRIES: usize = 12;
const LENGTH: usize = 16;
const QPN: usize = 20;
const QKEY: usize = 24;
const LID: usize = 28;
const SL: usize = 30;
const PATH_BITS: usize = 31;
const GRH_PRESENT: usize = 32;
const GID_INDEX: usize = 33;
const HOP_LIMIT: usize = 34;
const TRAFFIC_CLASS: usize = 35;
const GID: usize = 36;
const FLOW_LABEL: usize = 52;
const PKEY_INDEX: usize = 56;

/// The header's fields; host-order fields are native-endian, the rest big-endian, as
/// the kernel defines them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UmadHdr {
    /// Agent id (send: the sending agent; receive: the agent it was delivered to).
    pub agent_id: u32,
    /// Receive: 0, or 110 (ETIMEDOUT) when a request got no answer.
    pub status: u32,
    /// Send: how long the kernel tracks the request for its response.
    pub timeout_ms: u32,
    /// Send: kernel retries.
    pub retries: u32,
    /// Receive: header + MAD bytes received.
    pub length: u32,
    /// Destination (send) / source (receive) QP.
    pub qpn: u32,
    /// Q_Key.
    pub qkey: u32,
    /// Destination LID (send) / source LID (receive); 0xFFFF for directed route.
    pub lid: u16,
    /// Service level.
    pub sl: u8,
    /// Path bits.
    pub path_bits: u8,
    /// GRH present.
    pub grh_present: bool,
    /// Local GID index for the GRH.
    pub gid_index: u8,
    /// GRH hop limit.
    pub hop_limit: u8,
    /// GRH traffic class.
    pub traffic_class: u8,
    /// Remote GID.
    pub gid: [u8; 16],
    /// GRH flow label.
    pub flow_label: u32,
    /// P_Key index (64-byte form only).
    pub pkey_index: u16,
}

fn ne32(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

impl UmadHdr {
    /// Writes the header into the first `len.bytes()` bytes of `buf`.
    ///
    /// # Panics
    /// If `buf` is shorter than the header (callers size it).
    pub fn encode(&self, buf: &mut [u8], len: HeaderLen) {
        let b = &mut buf[..len.bytes()];
        b.fill(0);
        b[ID..ID + 4].copy_from_slice(&self.agent_id.to_ne_bytes());
        b[STATUS..STATUS + 4].copy_from_slice(&self.status.to_ne_bytes());
        b[TIMEOUT_MS..TIMEOUT_MS + 4].copy_from_slice(&self.timeout_ms.to_ne_bytes());
        b[RETRIES..RETRIES + 4].copy_from_slice(&self.retries.to_ne_bytes());
        b[LENGTH..LENGTH + 4].copy_from_slice(&self.length.to_ne_bytes());
        b[QPN..QPN + 4].copy_from_slice(&self.qpn.to_be_bytes());
        b[QKEY..QKEY + 4].copy_from_slice(&self.qkey.to_be_bytes());
        b[LID..LID + 2].copy_from_slice(&self.lid.to_be_bytes());
        b[SL] = self.sl;
        b[PATH_BITS] = self.path_bits;
        b[GRH_PRESENT] = u8::from(self.grh_present);
        b[GID_INDEX] = self.gid_index;
        b[HOP_LIMIT] = self.hop_limit;
        b[TRAFFIC_CLASS] = self.traffic_class;
        b[GID..GID + 16].copy_from_slice(&self.gid);
        b[FLOW_LABEL..FLOW_LABEL + 4].copy_from_slice(&self.flow_label.to_be_bytes());
        if len == HeaderLen::New64 {
            b[PKEY_INDEX..PKEY_INDEX + 2].copy_from_slice(&self.pkey_index.to_ne_bytes());
        }
    }

    /// Reads a header; `None` if `buf` is shorter than the header.
    #[must_use]
    pub fn decode(buf: &[u8], len: HeaderLen) -> Option<Self> {
        if buf.len() < len.bytes() {
            return None;
        }
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&buf[GID..GID + 16]);
        Some(Self {
            agent_id: ne32(buf, ID),
            status: ne32(buf, STATUS),
            timeout_ms: ne32(buf, TIMEOUT_MS),
            retries: ne32(buf, RETRIES),
            length: ne32(buf, LENGTH),
            qpn: be32(buf, QPN),
            qkey: be32(buf, QKEY),
            lid: u16::from_be_bytes([buf[LID], buf[LID + 1]]),
            sl: buf[SL],
            path_bits: buf[PATH_BITS],
            grh_present: buf[GRH_PRESENT] != 0,
            gid_index: buf[GID_INDEX],
            hop_limit: buf[HOP_LIMIT],
            traffic_class: buf[TRAFFIC_CLASS],
            gid,
            flow_label: be32(buf, FLOW_LABEL),
            pkey_index: if len == HeaderLen::New64 {
                u16::from_ne_bytes([buf[PKEY_INDEX], buf[PKEY_INDEX + 1]])
            } else {
                0
            },
        })
    }
}

/// `IB_USER_MAD_REGISTER_AGENT`.
pub const IOCTL_REGISTER_AGENT: u32 = 0xC01C_1B01;
/// `IB_USER_MAD_UNREGISTER_AGENT`.
pub const IOCTL_UNREGISTER_AGENT: u32 = 0x4004_1B02;
/// `IB_USER_MAD_ENABLE_PKEY`.
pub const IOCTL_ENABLE_PKEY: u32 = 0x0000_1B03;

/// `struct ib_user_mad_reg_req` (28 bytes): what to register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegReq {
    /// 0 for SMP classes, 1 for GMPs.
    pub qpn: u8,
    /// Class to receive unsolicited MADs of (0 = none).
    pub mgmt_class: u8,
    /// Class version.
    pub class_version: u8,
    /// Methods (0..127) to receive unsolicited.
    pub methods: u128,
    /// Vendor OUI for range-2 classes.
    pub oui: [u8; 3],
    /// 1 = kernel RMPP.
    pub rmpp_version: u8,
}

impl RegReq {
    /// The 28-byte argument; the method mask is two native unsigned longs at offset 4.
    #[must_use]
    pub fn encode(&self) -> [u8; 28] {
        let mut b = [0u8; 28];
        let lo = self.methods as u64;
        let hi = (self.methods >> 64) as u64;
        b[4..12].copy_from_slice(&lo.to_ne_bytes());
        b[12..20].copy_from_slice(&hi.to_ne_bytes());
        b[20] = self.qpn;
        b[21] = self.mgmt_class;
        b[22] = self.class_version;
        b[23..26].copy_from_slice(&self.oui);
        b[26] = self.rmpp_version;
        b
    }
}

/// Method mask with the given method numbers set.
#[must_use]
pub fn method_mask(methods: &[u8]) -> u128 {
    methods
        .iter()
        .fold(0u128, |m, &x| m | (1u128 << (x & 0x7F)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_both_sizes() {
        let h = UmadHdr {
            agent_id: 3,
            status: 110,
            timeout_ms: 200,
            retries: 0,
            length: 320,
            qpn: 1,
            qkey: 0x8001_0000,
            lid: 0xFFFF,
            sl: 2,
            path_bits: 1,
            grh_present: true,
            gid_index: 0,
            hop_limit: 64,
            traffic_class: 7,
            gid: [9; 16],
            flow_label: 0x12345,
            pkey_index: 4,
        };
        let mut b = [0u8; 64];
        h.encode(&mut b, HeaderLen::New64);
        assert_eq!(UmadHdr::decode(&b, HeaderLen::New64), Some(h));
        assert_eq!(&b[20..24], &[0, 0, 0, 1]);
        assert_eq!(&b[24..28], &[0x80, 0x01, 0, 0]);
        assert_eq!(&b[28..30], &[0xFF, 0xFF]);
        let mut b = [0u8; 56];
        h.encode(&mut b, HeaderLen::Old56);
        assert_eq!(
            UmadHdr::decode(&b, HeaderLen::Old56),
            Some(UmadHdr { pkey_index: 0, ..h })
        );
        assert_eq!(UmadHdr::decode(&b[..55], HeaderLen::Old56), None);
    }

    #[test]
    fn method_mask_matches_spec_example() {
        // The u64 method_mask of `ib_user_mad_reg_req2` (the kernel's `ib_user_mad.h`):
        // methods 1, 2, 5, 7 give word 0 = 0xA6.
        let r = RegReq {
            qpn: 0,
            mgmt_class: 0x81,
            class_version: 1,
            methods: method_mask(&[1, 2, 5, 7]),
            oui: [0; 3],
            rmpp_version: 0,
        };
        let b = r.encode();
        assert_eq!(u64::from_ne_bytes(b[4..12].try_into().unwrap()), 0xA6);
        assert_eq!(&b[20..23], &[0, 0x81, 1]);
    }

    #[test]
    fn ioctl_numbers_match_encoding() {
        // dir (2 bits) | size (14) | type 0x1B | nr
        let enc = |dir: u32, size: u32, nr: u32| dir << 30 | size << 16 | 0x1B << 8 | nr;
        assert_eq!(IOCTL_REGISTER_AGENT, enc(3, 28, 1));
        assert_eq!(IOCTL_UNREGISTER_AGENT, enc(1, 4, 2));
        assert_eq!(IOCTL_ENABLE_PKEY, enc(0, 0, 3));
    }
}
