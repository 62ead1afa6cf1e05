//! ServiceRecord (0x0031), IBA Vol. 1 §15.2.5 (ServiceRecord).

use crate::gid::Gid;

wire_struct! {
    /// ServiceRecord (176 bytes): a service registered with the SA.
    pub struct ServiceRecord, view ServiceRecordView, size 176, label "ServiceRecord";
    fields {
        /// Service ID.
        service_id, set_service_id: u64 = (0, 0, 64), "IB_SA_SR_ID_F";
        /// GID of the port offering the service.
        service_gid, set_service_gid: Gid = (8, 0, 128), "IB_SA_SR_GID_F";
        /// P_Key of the service.
        service_pkey, set_service_pkey: u16 = (24, 0, 16), "IB_SA_SR_PKEY_F";
        /// Lease in seconds; 0xFFFFFFFF = infinite.
        service_lease, set_service_lease: u32 = (28, 0, 32), "IB_SA_SR_LEASE_F";
        /// Service key.
        service_key, set_service_key: [u8; 16] = (32, 0, 128), "IB_SA_SR_KEY_F";
        /// Service name: 64 bytes of UTF-8, NUL-padded.
        service_name, set_service_name: [u8; 64] = (48, 0, 512), "IB_SA_SR_NAME_F";
        /// Service data: 16 x 8-bit, 8 x 16-bit, 4 x 32-bit, 2 x 64-bit values
        /// ([`ServiceRecord::data8`], [`ServiceRecord::data16`], [`ServiceRecord::data32`],
        /// [`ServiceRecord::data64`]).
        service_data, set_service_data: [u8; 64] = (112, 0, 512), "IB_SA_SR_DATA_F";
    }
}

impl ServiceRecord {
    /// `service_lease` value meaning "never expires".
    pub const INFINITE_LEASE: u32 = 0xFFFF_FFFF;

    /// ComponentMask bit of `ServiceData8[i]` (0..16).
    #[must_use]
    pub const fn cm_data8(i: u8) -> crate::sa::ComponentMask {
        crate::sa::ComponentMask::bit(7 + (i & 15))
    }
    /// ComponentMask bit of `ServiceData16[i]` (0..8).
    #[must_use]
    pub const fn cm_data16(i: u8) -> crate::sa::ComponentMask {
        crate::sa::ComponentMask::bit(23 + (i & 7))
    }
    /// ComponentMask bit of `ServiceData32[i]` (0..4).
    #[must_use]
    pub const fn cm_data32(i: u8) -> crate::sa::ComponentMask {
        crate::sa::ComponentMask::bit(31 + (i & 3))
    }
    /// ComponentMask bit of `ServiceData64[i]` (0..2).
    #[must_use]
    pub const fn cm_data64(i: u8) -> crate::sa::ComponentMask {
        crate::sa::ComponentMask::bit(35 + (i & 1))
    }

    /// Byte offset in `service_data` of the `i`th `n`-byte value: the 64 bytes are four
    /// 16-byte arrays of 1-, 2-, 4- and 8-byte values, in that order. `None` past the
    /// end of the array.
    fn data_at(n: usize, i: usize) -> Option<usize> {
        (i < 16 / n).then(|| 16 * n.trailing_zeros() as usize + n * i)
    }

    fn data_be(&self, n: usize, i: usize) -> Option<u64> {
        let at = Self::data_at(n, i)?;
        let b = self.service_data.get(at..at + n)?;
        Some(b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    fn set_data_be(&mut self, n: usize, i: usize, v: u64) -> bool {
        let Some(b) = Self::data_at(n, i).and_then(|at| self.service_data.get_mut(at..at + n))
        else {
            return false;
        };
        for (k, x) in b.iter_mut().enumerate() {
            *x = (v >> (8 * (n - 1 - k))) as u8;
        }
        true
    }

    /// `ServiceData8[i]` (0..16).
    #[must_use]
    pub fn data8(&self, i: usize) -> Option<u8> {
        self.data_be(1, i).map(|v| v as u8)
    }
    /// `ServiceData16[i]` (0..8).
    #[must_use]
    pub fn data16(&self, i: usize) -> Option<u16> {
        self.data_be(2, i).map(|v| v as u16)
    }
    /// `ServiceData32[i]` (0..4).
    #[must_use]
    pub fn data32(&self, i: usize) -> Option<u32> {
        self.data_be(4, i).map(|v| v as u32)
    }
    /// `ServiceData64[i]` (0..2).
    #[must_use]
    pub fn data64(&self, i: usize) -> Option<u64> {
        self.data_be(8, i)
    }
    /// Sets `ServiceData8[i]`; `false` if `i` is out of range.
    pub fn set_data8(&mut self, i: usize, v: u8) -> bool {
        self.set_data_be(1, i, u64::from(v))
    }
    /// Sets `ServiceData16[i]`; `false` if `i` is out of range.
    pub fn set_data16(&mut self, i: usize, v: u16) -> bool {
        self.set_data_be(2, i, u64::from(v))
    }
    /// Sets `ServiceData32[i]`; `false` if `i` is out of range.
    pub fn set_data32(&mut self, i: usize, v: u32) -> bool {
        self.set_data_be(4, i, u64::from(v))
    }
    /// Sets `ServiceData64[i]`; `false` if `i` is out of range.
    pub fn set_data64(&mut self, i: usize, v: u64) -> bool {
        self.set_data_be(8, i, v)
    }

    /// The service name up to the first NUL, if it is valid UTF-8.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        let end = self.service_name.iter().position(|&b| b == 0).unwrap_or(64);
        core::str::from_utf8(&self.service_name[..end]).ok()
    }

    /// Sets the service name, truncated to 64 bytes at a character boundary.
    pub fn set_name(&mut self, name: &str) {
        let mut end = name.len().min(64);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        self.service_name = [0; 64];
        self.service_name[..end].copy_from_slice(&name.as_bytes()[..end]);
    }
}

sa_record! {
    ServiceRecord, ServiceRecord;
    CM_SERVICE_ID = 0, "service_id";
    CM_SERVICE_GID = 1, "service_gid";
    CM_SERVICE_PKEY = 2, "service_pkey";
    CM_RESERVED3 = 3, "reserved", (26, 0, 16);
    CM_SERVICE_LEASE = 4, "service_lease";
    CM_SERVICE_KEY = 5, "service_key";
    CM_SERVICE_NAME = 6, "service_name";
    CM_DATA8_0 = 7, "service_data[data8.0]", (112, 0, 8);
    CM_DATA8_1 = 8, "service_data[data8.1]", (113, 0, 8);
    CM_DATA8_2 = 9, "service_data[data8.2]", (114, 0, 8);
    CM_DATA8_3 = 10, "service_data[data8.3]", (115, 0, 8);
    CM_DATA8_4 = 11, "service_data[data8.4]", (116, 0, 8);
    CM_DATA8_5 = 12, "service_data[data8.5]", (117, 0, 8);
    CM_DATA8_6 = 13, "service_data[data8.6]", (118, 0, 8);
    CM_DATA8_7 = 14, "service_data[data8.7]", (119, 0, 8);
    CM_DATA8_8 = 15, "service_data[data8.8]", (120, 0, 8);
    CM_DATA8_9 = 16, "service_data[data8.9]", (121, 0, 8);
    CM_DATA8_10 = 17, "service_data[data8.10]", (122, 0, 8);
    CM_DATA8_11 = 18, "service_data[data8.11]", (123, 0, 8);
    CM_DATA8_12 = 19, "service_data[data8.12]", (124, 0, 8);
    CM_DATA8_13 = 20, "service_data[data8.13]", (125, 0, 8);
    CM_DATA8_14 = 21, "service_data[data8.14]", (126, 0, 8);
    CM_DATA8_15 = 22, "service_data[data8.15]", (127, 0, 8);
    CM_DATA16_0 = 23, "service_data[data16.0]", (128, 0, 16);
    CM_DATA16_1 = 24, "service_data[data16.1]", (130, 0, 16);
    CM_DATA16_2 = 25, "service_data[data16.2]", (132, 0, 16);
    CM_DATA16_3 = 26, "service_data[data16.3]", (134, 0, 16);
    CM_DATA16_4 = 27, "service_data[data16.4]", (136, 0, 16);
    CM_DATA16_5 = 28, "service_data[data16.5]", (138, 0, 16);
    CM_DATA16_6 = 29, "service_data[data16.6]", (140, 0, 16);
    CM_DATA16_7 = 30, "service_data[data16.7]", (142, 0, 16);
    CM_DATA32_0 = 31, "service_data[data32.0]", (144, 0, 32);
    CM_DATA32_1 = 32, "service_data[data32.1]", (148, 0, 32);
    CM_DATA32_2 = 33, "service_data[data32.2]", (152, 0, 32);
    CM_DATA32_3 = 34, "service_data[data32.3]", (156, 0, 32);
    CM_DATA64_0 = 35, "service_data[data64.0]", (160, 0, 64);
    CM_DATA64_1 = 36, "service_data[data64.1]", (168, 0, 64);
}
