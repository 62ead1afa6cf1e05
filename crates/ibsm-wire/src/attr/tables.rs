//! The table attributes: GUIDInfo, P_KeyTable, SLtoVLMappingTable, VLArbitrationTable,
//! Linear/Random/MulticastForwardingTable and LinkSpeedWidthPairsTable
//! (IBA Vol. 1 §14.2.5.5 and §14.2.5.7 to §14.2.5.12).
//!
//! Tables whose entries are not whole bytes keep their single libibmad "whole block"
//! field as a byte block newtype with entry accessors; the entry layout is written once,
//! in those accessors.

use crate::error::{Error, Result};

use super::port::LinkWidthMask;

fn index_error(what: &'static str, index: usize) -> Error {
    Error::InvalidValue {
        what,
        field: "index",
        value: index as u64,
    }
}

wire_struct! {
    /// GUIDInfo (0x0014): one block of 8 GUIDs (block b holds GUID indexes 8b..8b+7).
    /// Entry 0 of block 0 is the read-only port GUID.
    pub struct GuidInfo, view GuidInfoView, size 64, label "GUIDInfo";
    fields {
        /// Entry 8b+0.
        guid0, set_guid0: u64 = (0, 0, 64), "IB_GI_GUID0_F";
        /// Entry 8b+1.
        guid1, set_guid1: u64 = (8, 0, 64), "IB_GI_GUID1_F";
        /// Entry 8b+2.
        guid2, set_guid2: u64 = (16, 0, 64), "IB_GI_GUID2_F";
        /// Entry 8b+3.
        guid3, set_guid3: u64 = (24, 0, 64), "IB_GI_GUID3_F";
        /// Entry 8b+4.
        guid4, set_guid4: u64 = (32, 0, 64), "IB_GI_GUID4_F";
        /// Entry 8b+5.
        guid5, set_guid5: u64 = (40, 0, 64), "IB_GI_GUID5_F";
        /// Entry 8b+6.
        guid6, set_guid6: u64 = (48, 0, 64), "IB_GI_GUID6_F";
        /// Entry 8b+7.
        guid7, set_guid7: u64 = (56, 0, 64), "IB_GI_GUID7_F";
    }
}

impl GuidInfo {
    /// GUIDs per block.
    pub const ENTRIES: usize = 8;

    /// The block as an array.
    #[must_use]
    pub fn guids(&self) -> [u64; 8] {
        [
            self.guid0, self.guid1, self.guid2, self.guid3, self.guid4, self.guid5, self.guid6,
            self.guid7,
        ]
    }

    /// A block from an array.
    #[must_use]
    pub fn from_guids(g: [u64; 8]) -> Self {
        Self {
            guid0: g[0],
            guid1: g[1],
            guid2: g[2],
            guid3: g[3],
            guid4: g[4],
            guid5: g[5],
            guid6: g[6],
            guid7: g[7],
        }
    }

    /// Entry `i` (0..8) of the block.
    #[must_use]
    pub fn guid(&self, i: usize) -> Option<u64> {
        self.guids().get(i).copied()
    }

    /// Sets entry `i` (0..8).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for `i >= 8`.
    pub fn set_guid(&mut self, i: usize, guid: u64) -> Result<()> {
        let mut g = self.guids();
        *g.get_mut(i).ok_or(index_error("GUIDInfo", i))? = guid;
        *self = Self::from_guids(g);
        Ok(())
    }
}

/// A P_Key: membership bit (MSB, 1 = full member) and 15-bit partition number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct PKey(pub u16);

impl PKey {
    /// The default partition, full member.
    pub const DEFAULT: Self = Self(0xFFFF);
    /// The default partition, limited member.
    pub const DEFAULT_LIMITED: Self = Self(0x7FFF);
    /// Membership bit.
    pub const FULL_MEMBER_BIT: u16 = 0x8000;

    /// A full-member P_Key of partition `base` (15 bits).
    #[must_use]
    pub const fn full(base: u16) -> Self {
        Self(Self::FULL_MEMBER_BIT | (base & 0x7FFF))
    }

    /// A limited-member P_Key of partition `base` (15 bits).
    #[must_use]
    pub const fn limited(base: u16) -> Self {
        Self(base & 0x7FFF)
    }

    /// Whether the membership bit says full member.
    #[must_use]
    pub const fn is_full_member(self) -> bool {
        self.0 & Self::FULL_MEMBER_BIT != 0
    }

    /// The partition number (low 15 bits).
    #[must_use]
    pub const fn base(self) -> u16 {
        self.0 & 0x7FFF
    }

    /// Whether the entry holds a partition (0x0000 and 0x8000 are empty entries).
    #[must_use]
    pub const fn is_valid(self) -> bool {
        self.base() != 0
    }

    /// Whether two packets' P_Keys match: same partition, not both limited.
    #[must_use]
    pub const fn matches(self, other: Self) -> bool {
        self.is_valid()
            && self.base() == other.base()
            && (self.is_full_member() || other.is_full_member())
    }
}

byte_block! {
    /// The 32 big-endian 16-bit entries of a P_KeyTable block.
    pub struct PKeyBlock([u8; 64]);
}

impl PKeyBlock {
    /// Entries per block.
    pub const ENTRIES: usize = 32;

    /// Entry `i` (0..32).
    #[must_use]
    pub fn get(&self, i: usize) -> Option<PKey> {
        be16(&self.0, i).map(PKey)
    }

    /// Sets entry `i` (0..32).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for `i >= 32`.
    pub fn set(&mut self, i: usize, pkey: PKey) -> Result<()> {
        set_be16(&mut self.0, i, pkey.0).ok_or(index_error("P_KeyTable", i))
    }

    /// All entries in order.
    pub fn iter(&self) -> impl Iterator<Item = PKey> + '_ {
        self.0
            .chunks_exact(2)
            .map(|c| PKey(u16::from_be_bytes([c[0], c[1]])))
    }
}

wire_struct! {
    /// P_KeyTable (0x0016): one block of 32 P_Keys (indexes 32b..32b+31).
    pub struct PKeyTable, view PKeyTableView, size 64, label "P_KeyTable";
    fields {
        /// The 32 entries.
        pkeys, set_pkeys: PKeyBlock = (0, 0, 512);
    }
}

impl<T: AsRef<[u8]>> PKeyTableView<T> {
    /// Entry `i` (0..32), read in place.
    #[must_use]
    pub fn pkey(&self, i: usize) -> Option<PKey> {
        be16(self.as_bytes(), i).map(PKey)
    }
}

byte_block! {
    /// The 16 four-bit SL -> VL entries of an SLtoVLMappingTable (SL 2k in the high
    /// nibble of byte k, SL 2k+1 in the low one).
    pub struct SlToVlMap([u8; 8]);
}

impl SlToVlMap {
    /// VL 15 as a target: drop packets of that SL.
    pub const DROP: u8 = 15;

    /// A map from the VL of each SL (values masked to 4 bits).
    #[must_use]
    pub fn from_vls(vls: [u8; 16]) -> Self {
        let mut b = [0u8; 8];
        for (k, byte) in b.iter_mut().enumerate() {
            *byte = (vls[2 * k] & 0x0F) << 4 | (vls[2 * k + 1] & 0x0F);
        }
        Self(b)
    }

    /// The VL of each SL.
    #[must_use]
    pub fn vls(&self) -> [u8; 16] {
        let mut v = [0u8; 16];
        for (k, byte) in self.0.iter().enumerate() {
            v[2 * k] = byte >> 4;
            v[2 * k + 1] = byte & 0x0F;
        }
        v
    }

    /// VL for `sl` (0..16).
    #[must_use]
    pub fn vl(&self, sl: u8) -> Option<u8> {
        let byte = *self.0.get(usize::from(sl / 2))?;
        Some(if sl % 2 == 0 { byte >> 4 } else { byte & 0x0F })
    }

    /// Maps `sl` (0..16) to `vl` (masked to 4 bits).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for `sl >= 16`.
    pub fn set_vl(&mut self, sl: u8, vl: u8) -> Result<()> {
        let byte = self
            .0
            .get_mut(usize::from(sl / 2))
            .ok_or(index_error("SLtoVLMappingTable", usize::from(sl)))?;
        *byte = if sl % 2 == 0 {
            (*byte & 0x0F) | (vl & 0x0F) << 4
        } else {
            (*byte & 0xF0) | (vl & 0x0F)
        };
        Ok(())
    }
}

wire_struct! {
    /// SLtoVLMappingTable (0x0017): 16 SL -> VL entries, 8 bytes.
    pub struct SlToVlMappingTable, view SlToVlMappingTableView, size 8, label "SLtoVLMappingTable";
    fields {
        /// The 16 entries.
        map, set_map: SlToVlMap = (0, 0, 64), "IB_SLTOVL_MAPPING_TABLE_F";
    }
}

/// One VLArbitrationTable entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbEntry {
    /// Data VL this entry serves (4 bits).
    pub vl: u8,
    /// Units of 64 bytes that may be sent; 0 = entry skipped.
    pub weight: u8,
}

byte_block! {
    /// The 32 two-byte (VL, Weight) entries of a VLArbitrationTable block: byte 2i holds
    /// the VL in its low nibble (high nibble reserved), byte 2i+1 the weight.
    pub struct VlArbBlock([u8; 64]);
}

impl VlArbBlock {
    /// Entries per block.
    pub const ENTRIES: usize = 32;

    /// Entry `i` (0..32); the reserved nibble is ignored.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<VlArbEntry> {
        let e = self.0.get(2 * i..2 * i + 2)?;
        Some(VlArbEntry {
            vl: e[0] & 0x0F,
            weight: e[1],
        })
    }

    /// Sets entry `i` (0..32); the VL is masked to 4 bits and the reserved nibble cleared.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for `i >= 32`.
    pub fn set(&mut self, i: usize, e: VlArbEntry) -> Result<()> {
        let slot = self
            .0
            .get_mut(2 * i..2 * i + 2)
            .ok_or(index_error("VLArbitrationTable", i))?;
        slot[0] = e.vl & 0x0F;
        slot[1] = e.weight;
        Ok(())
    }

    /// All entries in order.
    pub fn iter(&self) -> impl Iterator<Item = VlArbEntry> + '_ {
        self.0.chunks_exact(2).map(|c| VlArbEntry {
            vl: c[0] & 0x0F,
            weight: c[1],
        })
    }
}

wire_struct! {
    /// VLArbitrationTable (0x0018): one part of 32 (VL, Weight) entries.
    pub struct VlArbitrationTable, view VlArbitrationTableView, size 64, label "VLArbitrationTable";
    fields {
        /// The 32 entries.
        entries, set_entries: VlArbBlock = (0, 0, 512), "IB_VL_ARBITRATION_TABLE_F";
    }
}

/// LFT entry meaning "no route, drop" (the value OpenSM uses).
pub const LFT_NO_ROUTE: u8 = 0xFF;

wire_struct! {
    /// LinearForwardingTable (0x0019): output ports for the 64 LIDs 64b..64b+63.
    pub struct LinearForwardingTable, view LinearForwardingTableView, size 64, label "LinearForwardingTable";
    fields {
        /// Entry i: output port for LID 64b+i (0 = the switch itself, 0xFF = drop).
        ports, set_ports: [u8; 64] = (0, 0, 512), "IB_LINEAR_FORW_TBL_F";
    }
}

impl LinearForwardingTable {
    /// LIDs per block.
    pub const ENTRIES: usize = 64;

    /// A block with every entry [`LFT_NO_ROUTE`].
    #[must_use]
    pub fn unrouted() -> Self {
        Self {
            ports: [LFT_NO_ROUTE; 64],
        }
    }

    /// Output port for `lid` if it falls in this block (`block` = the AttributeModifier).
    #[must_use]
    pub fn port_for_lid(&self, block: u32, lid: u16) -> Option<u8> {
        (u32::from(lid) / 64 == block).then(|| self.ports[usize::from(lid % 64)])
    }
}

impl<T: AsRef<[u8]>> LinearForwardingTableView<T> {
    /// Entry `i` (0..64), read in place.
    #[must_use]
    pub fn port(&self, i: usize) -> Option<u8> {
        self.as_bytes().get(i).copied()
    }
}

wire_struct! {
    /// One RandomForwardingTable entry (4 bytes).
    pub struct RftEntry, view RftEntryView, size 4, label "RandomForwardingTable entry";
    fields {
        /// Base LID.
        lid, set_lid: u16 = (0, 0, 16);
        /// Entry in use.
        valid, set_valid: bool = (2, 0, 1);
        /// Number of LID bits ignored when matching.
        lmc, set_lmc: u8 = (2, 1, 3);
        /// Output port.
        port, set_port: u8 = (3, 0, 8);
    }
}

wire_struct! {
    /// RandomForwardingTable (0x001A): one block of 16 entries.
    pub struct RandomForwardingTable, view RandomForwardingTableView, size 64, label "RandomForwardingTable";
    fields {
        /// Entry 0.
        entry0, set_entry0: RftEntry = (0, 0, 32);
        /// Entry 1.
        entry1, set_entry1: RftEntry = (4, 0, 32);
        /// Entry 2.
        entry2, set_entry2: RftEntry = (8, 0, 32);
        /// Entry 3.
        entry3, set_entry3: RftEntry = (12, 0, 32);
        /// Entry 4.
        entry4, set_entry4: RftEntry = (16, 0, 32);
        /// Entry 5.
        entry5, set_entry5: RftEntry = (20, 0, 32);
        /// Entry 6.
        entry6, set_entry6: RftEntry = (24, 0, 32);
        /// Entry 7.
        entry7, set_entry7: RftEntry = (28, 0, 32);
        /// Entry 8.
        entry8, set_entry8: RftEntry = (32, 0, 32);
        /// Entry 9.
        entry9, set_entry9: RftEntry = (36, 0, 32);
        /// Entry 10.
        entry10, set_entry10: RftEntry = (40, 0, 32);
        /// Entry 11.
        entry11, set_entry11: RftEntry = (44, 0, 32);
        /// Entry 12.
        entry12, set_entry12: RftEntry = (48, 0, 32);
        /// Entry 13.
        entry13, set_entry13: RftEntry = (52, 0, 32);
        /// Entry 14.
        entry14, set_entry14: RftEntry = (56, 0, 32);
        /// Entry 15.
        entry15, set_entry15: RftEntry = (60, 0, 32);
    }
}

impl RandomForwardingTable {
    /// Entries per block.
    pub const ENTRIES: usize = 16;

    /// The 16 entries as an array.
    #[must_use]
    pub fn entries(&self) -> [RftEntry; 16] {
        [
            self.entry0,
            self.entry1,
            self.entry2,
            self.entry3,
            self.entry4,
            self.entry5,
            self.entry6,
            self.entry7,
            self.entry8,
            self.entry9,
            self.entry10,
            self.entry11,
            self.entry12,
            self.entry13,
            self.entry14,
            self.entry15,
        ]
    }

    /// A block from an array of entries.
    #[must_use]
    pub fn from_entries(e: [RftEntry; 16]) -> Self {
        let mut out = [0u8; 64];
        for (chunk, entry) in out.chunks_exact_mut(4).zip(e) {
            entry.emit(&mut RftEntryView::new_unchecked(chunk));
        }
        Self::from_view(&RandomForwardingTableView::new_unchecked(&out[..]))
    }

    /// The output port for `lid`: the first valid entry whose base LID matches it with
    /// the entry's low `lmc` bits ignored.
    #[must_use]
    pub fn lookup(&self, lid: u16) -> Option<u8> {
        self.entries()
            .into_iter()
            .find(|e| {
                let m = !((1u16 << e.lmc) - 1);
                e.valid && (e.lid & m) == (lid & m)
            })
            .map(|e| e.port)
    }
}

byte_block! {
    /// The 32 big-endian 16-bit port masks of a MulticastForwardingTable block; bit j of
    /// mask i is port 16p + j (p = the position of the AttributeModifier).
    pub struct PortMaskBlock([u8; 64]);
}

impl PortMaskBlock {
    /// Masks per block.
    pub const ENTRIES: usize = 32;

    /// Mask `i` (0..32).
    #[must_use]
    pub fn get(&self, i: usize) -> Option<u16> {
        be16(&self.0, i)
    }

    /// Sets mask `i` (0..32).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for `i >= 32`.
    pub fn set(&mut self, i: usize, mask: u16) -> Result<()> {
        set_be16(&mut self.0, i, mask).ok_or(index_error("MulticastForwardingTable", i))
    }

    /// All masks in order.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.0
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
    }
}

wire_struct! {
    /// MulticastForwardingTable (0x001B): port masks for 32 MLIDs and 16 ports.
    pub struct MulticastForwardingTable, view MulticastForwardingTableView, size 64, label "MulticastForwardingTable";
    fields {
        /// Mask i: ports to copy packets for MLID 0xC000 + 32b + i to.
        port_masks, set_port_masks: PortMaskBlock = (0, 0, 512), "IB_MULTICAST_FORW_TBL_F";
    }
}

impl MulticastForwardingTable {
    /// Whether the block (for `position`) sends MLID entry `i` out of `port`.
    #[must_use]
    pub fn has_port(&self, i: usize, position: u8, port: u16) -> bool {
        let first = u16::from(position) * 16;
        match self.port_masks.get(i) {
            Some(m) if port >= first && port < first + 16 => m & (1 << (port - first)) != 0,
            _ => false,
        }
    }
}

impl<T: AsRef<[u8]>> MulticastForwardingTableView<T> {
    /// Mask `i` (0..32), read in place.
    #[must_use]
    pub fn port_mask(&self, i: usize) -> Option<u16> {
        be16(self.as_bytes(), i)
    }
}

wire_struct! {
    /// LinkSpeedWidthPairsTable (0x001C). Layout from a single source (the Wireshark
    /// dissector), not cross-checked.
    pub struct LinkSpeedWidthPairsTable, view LinkSpeedWidthPairsTableView, size 64, label "LinkSpeedWidthPairsTable";
    fields {
        /// Number of tables the node implements.
        num_tables, set_num_tables: u8 = (0, 0, 8);
        /// Ports this table applies to, one bit per port.
        port_mask, set_port_mask: [u8; 32] = (1, 0, 256);
        /// Widths allowed at 2.5 Gb/s.
        speed_two_five, set_speed_two_five: LinkWidthMask = (33, 0, 8);
        /// Widths allowed at 5 Gb/s.
        speed_five, set_speed_five: LinkWidthMask = (34, 0, 8);
        /// Widths allowed at 10 Gb/s.
        speed_ten, set_speed_ten: LinkWidthMask = (35, 0, 8);
    }
}

impl LinkSpeedWidthPairsTable {
    /// Whether `port` is in PortMask, taking bit n (value `1 << n` of the big-endian
    /// 256-bit number, the convention of every other mask) as port n. The sources do not
    /// state the bit order; this is an assumption.
    #[must_use]
    pub fn applies_to_port(&self, port: u8) -> bool {
        self.port_mask[31 - usize::from(port / 8)] & (1 << (port % 8)) != 0
    }
}

fn be16(b: &[u8], i: usize) -> Option<u16> {
    let e = b.get(2 * i..2 * i + 2)?;
    Some(u16::from_be_bytes([e[0], e[1]]))
}

fn set_be16(b: &mut [u8], i: usize, v: u16) -> Option<()> {
    b.get_mut(2 * i..2 * i + 2)?
        .copy_from_slice(&v.to_be_bytes());
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testutil::check;

    #[test]
    fn lft_bytes() {
        let mut b = [LFT_NO_ROUTE; 64];
        b[0] = 0;
        b[1] = 3;
        b[63] = 36;
        let t = LinearForwardingTable::parse(&b).unwrap();
        assert_eq!(t.ports[1], 3);
        assert_eq!(t.port_for_lid(2, 129), Some(3));
        assert_eq!(t.port_for_lid(2, 191), Some(36));
        assert_eq!(t.port_for_lid(1, 129), None);
        assert_eq!(t.to_bytes(), b);
        let v = LinearForwardingTableView::new_checked(&b[..]).unwrap();
        assert_eq!(v.port(63), Some(36));
        assert_eq!(v.port(64), None);
        assert_eq!(LinearForwardingTable::unrouted().ports, [0xFF; 64]);
        assert!(LinearForwardingTable::parse(&b[..63]).is_err());
    }

    #[test]
    fn pkey_table() {
        let mut b = [0u8; 64];
        b[0..2].copy_from_slice(&[0xff, 0xff]);
        b[2..4].copy_from_slice(&[0x00, 0x05]);
        b[62..64].copy_from_slice(&[0x80, 0x05]);
        let t = PKeyTable::parse(&b).unwrap();
        assert_eq!(t.pkeys.get(0), Some(PKey::DEFAULT));
        let limited = t.pkeys.get(1).unwrap();
        assert!(!limited.is_full_member() && limited.base() == 5);
        let full = t.pkeys.get(31).unwrap();
        assert!(full.is_full_member() && full == PKey::full(5));
        assert!(full.matches(limited) && !limited.matches(limited));
        assert!(!PKey(0x8000).is_valid() && !PKey(0).matches(PKey(0x8000)));
        assert_eq!(t.pkeys.get(32), None);
        assert_eq!(t.pkeys.iter().filter(|p| p.is_valid()).count(), 3);
        let mut t2 = PKeyTable::default();
        t2.pkeys.set(0, PKey::DEFAULT).unwrap();
        t2.pkeys.set(1, PKey::limited(5)).unwrap();
        t2.pkeys.set(31, PKey::full(0x8005)).unwrap();
        assert!(t2.pkeys.set(32, PKey::DEFAULT).is_err());
        assert_eq!(t2.to_bytes(), b);
        let v = PKeyTableView::new_checked(&b[..]).unwrap();
        assert_eq!(v.pkey(31), Some(PKey(0x8005)));
    }

    #[test]
    fn sl2vl() {
        let b = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
        let t = SlToVlMappingTable::parse(&b).unwrap();
        for sl in 0..16u8 {
            assert_eq!(t.map.vl(sl), Some(sl));
        }
        assert_eq!(t.map.vl(16), None);
        let mut vls = [0u8; 16];
        for (i, v) in vls.iter_mut().enumerate() {
            *v = i as u8;
        }
        assert_eq!(SlToVlMap::from_vls(vls), t.map);
        assert_eq!(t.map.vls(), vls);
        let mut m = SlToVlMap::default();
        m.set_vl(3, 0x1f).unwrap();
        m.set_vl(2, 7).unwrap();
        assert_eq!(m.0[1], 0x7f);
        assert!(m.set_vl(16, 0).is_err());
        assert_eq!(t.to_bytes(), b);
    }

    #[test]
    fn vlarb() {
        let mut b = [0u8; 64];
        b[0..4].copy_from_slice(&[0xf1, 0x40, 0x02, 0xff]);
        let t = VlArbitrationTable::parse(&b).unwrap();
        assert_eq!(
            t.entries.get(0),
            Some(VlArbEntry {
                vl: 1,
                weight: 0x40
            })
        );
        assert_eq!(
            t.entries.get(1),
            Some(VlArbEntry {
                vl: 2,
                weight: 0xff
            })
        );
        assert_eq!(t.entries.get(32), None);
        assert_eq!(t.entries.iter().count(), 32);
        let mut e = VlArbBlock::default();
        e.set(
            0,
            VlArbEntry {
                vl: 0x11,
                weight: 0x40,
            },
        )
        .unwrap();
        assert_eq!(&e.0[..2], &[0x01, 0x40]);
        assert!(e.set(32, VlArbEntry::default()).is_err());
    }

    #[test]
    fn rft() {
        let mut b = [0u8; 64];
        b[4..8].copy_from_slice(&[0x00, 0x10, 0xa0, 0x05]); // LID 16, valid, LMC 2, port 5
        let t = RandomForwardingTable::parse(&b).unwrap();
        assert_eq!(
            t.entry1,
            RftEntry {
                lid: 16,
                valid: true,
                lmc: 2,
                port: 5
            }
        );
        assert_eq!(t.lookup(19), Some(5));
        assert_eq!(t.lookup(20), None);
        assert_eq!(RandomForwardingTable::from_entries(t.entries()), t);
        assert_eq!(t.to_bytes(), b);
        assert_eq!(t.get_field("entry1.lmc"), Some(crate::FieldValue::Uint(2)));
    }

    #[test]
    fn mft() {
        let mut b = [0u8; 64];
        b[0..2].copy_from_slice(&[0x80, 0x03]);
        let t = MulticastForwardingTable::parse(&b).unwrap();
        assert_eq!(t.port_masks.get(0), Some(0x8003));
        assert!(t.has_port(0, 0, 0) && t.has_port(0, 0, 1) && t.has_port(0, 0, 15));
        assert!(!t.has_port(0, 0, 2) && !t.has_port(0, 1, 1) && t.has_port(0, 1, 31));
        assert!(!t.has_port(32, 0, 0));
        let mut m = MulticastForwardingTable::default();
        m.port_masks.set(0, 0x8003).unwrap();
        assert_eq!(m.to_bytes(), b);
        assert!(m.port_masks.set(32, 1).is_err());
        assert_eq!(
            MulticastForwardingTableView::new_checked(&b[..])
                .unwrap()
                .port_mask(0),
            Some(0x8003)
        );
    }

    #[test]
    fn guid_info() {
        let mut g = GuidInfo::default();
        g.set_guid(7, 0x1122).unwrap();
        assert!(g.set_guid(8, 1).is_err());
        assert_eq!(g.guid(7), Some(0x1122));
        assert_eq!(g.guid(8), None);
        assert_eq!(&g.to_bytes()[56..64], &0x1122u64.to_be_bytes());
    }

    #[test]
    fn speed_width_pairs() {
        let mut t = LinkSpeedWidthPairsTable::default();
        t.port_mask[31] = 0b10;
        t.port_mask[0] = 0x80;
        assert!(t.applies_to_port(1) && t.applies_to_port(255) && !t.applies_to_port(0));
    }

    #[test]
    fn generic_properties() {
        check::<GuidInfo>();
        check::<PKeyTable>();
        check::<SlToVlMappingTable>();
        check::<VlArbitrationTable>();
        check::<LinearForwardingTable>();
        check::<RftEntry>();
        check::<RandomForwardingTable>();
        check::<MulticastForwardingTable>();
        check::<LinkSpeedWidthPairsTable>();
    }
}
