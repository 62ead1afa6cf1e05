//! Typed AttributeModifier encodings of the SM attributes
//! (IBA Vol. 1 §14.2.5, the attribute table and each attribute's section).
//!
//! Each modifier is a small `Copy` struct with `encode` (to the 32-bit wire value) and
//! `decode`, which rejects set reserved bits or out-of-range values with
//! [`Error::InvalidValue`] — what an SMA answers with status 0x001C.

use crate::error::{Error, Result};

pub use super::sm_info::SmInfoControl;

fn bad(what: &'static str, field: &'static str, value: impl Into<u64>) -> Error {
    Error::InvalidValue {
        what,
        field,
        value: value.into(),
    }
}

/// PortInfo (and PortInfoExtended, LedInfo, MlnxExtPortInfo use the port part):
/// bits 7..0 port number, bit 31 "SM supports extended speeds" (Set only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortMod {
    /// Port number (switch: 0 = management port; CA/router: 0 = the receiving port).
    pub port: u8,
    /// Bit 31: the SM understands LinkSpeedExt* (OpenSM sets it in Sets when the port
    /// advertises IsExtendedSpeedsSupported).
    pub sm_supports_extended_speeds: bool,
}

impl PortMod {
    const EXT_SPEEDS: u32 = 1 << 31;

    /// A plain port selector.
    #[must_use]
    pub const fn port(port: u8) -> Self {
        Self {
            port,
            sm_supports_extended_speeds: false,
        }
    }

    /// The wire value.
    #[must_use]
    pub const fn encode(self) -> u32 {
        self.port as u32
            | if self.sm_supports_extended_speeds {
                Self::EXT_SPEEDS
            } else {
                0
            }
    }

    /// Decodes, rejecting set bits 30..8.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] when reserved bits are set.
    pub fn decode(v: u32) -> Result<Self> {
        if v & 0x7FFF_FF00 != 0 {
            return Err(bad("PortInfo modifier", "reserved", v));
        }
        Ok(Self {
            port: (v & 0xFF) as u8,
            sm_supports_extended_speeds: v & Self::EXT_SPEEDS != 0,
        })
    }
}

/// A modifier that is a block number and nothing else, `N` entries per block; every
/// value is a block, the attribute's capability bounds it (PortInfo.GUIDCap,
/// SwitchInfo.RandomFDBCap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BlockMod<const N: u32> {
    /// Block b holds entries `N * b..N * b + N`.
    pub block: u32,
}

impl<const N: u32> BlockMod<N> {
    /// Entries per block.
    pub const PER_BLOCK: u32 = N;

    /// The block holding entry `index`, and the entry inside it.
    #[must_use]
    pub const fn for_index(index: u32) -> (Self, usize) {
        (Self { block: index / N }, (index % N) as usize)
    }

    /// The wire value.
    #[must_use]
    pub const fn encode(self) -> u32 {
        self.block
    }

    /// Decodes (every value is a block number).
    #[must_use]
    pub const fn decode(v: u32) -> Self {
        Self { block: v }
    }
}

/// GUIDInfo: block number (8 GUIDs per block).
pub type GuidInfoMod = BlockMod<8>;

/// P_KeyTable: bits 15..0 block number (32 P_Keys per block), bits 31..16 the switch
/// port (0 = port 0; CAs and routers ignore it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PKeyMod {
    /// Block b holds P_Key indexes 32b..32b+31.
    pub block: u16,
    /// Switch port whose table is meant.
    pub port: u16,
}

impl PKeyMod {
    /// P_Keys per block.
    pub const PER_BLOCK: u16 = 32;

    /// The block holding P_Key index `index` on `port`, and the entry inside it.
    #[must_use]
    pub const fn for_index(port: u16, index: u16) -> (Self, usize) {
        (
            Self {
                block: index / Self::PER_BLOCK,
                port,
            },
            (index % Self::PER_BLOCK) as usize,
        )
    }

    /// The wire value.
    #[must_use]
    pub const fn encode(self) -> u32 {
        (self.port as u32) << 16 | self.block as u32
    }

    /// Decodes (all 32 bits are meaningful).
    #[must_use]
    pub const fn decode(v: u32) -> Self {
        Self {
            block: (v & 0xFFFF) as u16,
            port: (v >> 16) as u16,
        }
    }
}

/// SLtoVLMappingTable (switches): bits 7..0 output port, 15..8 input port, bit 16 all
/// output ports, bit 17 all input ports (the wildcards need
/// SwitchInfo.OptimizedSLtoVLMappingProgramming).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SlToVlMod {
    /// Output port (ignored when `all_outputs`).
    pub output_port: u8,
    /// Input port (ignored when `all_inputs`).
    pub input_port: u8,
    /// Bit 16: apply to every output port.
    pub all_outputs: bool,
    /// Bit 17: apply to every input port.
    pub all_inputs: bool,
}

impl SlToVlMod {
    /// One input/output port pair.
    #[must_use]
    pub const fn pair(input_port: u8, output_port: u8) -> Self {
        Self {
            output_port,
            input_port,
            all_outputs: false,
            all_inputs: false,
        }
    }

    /// Every input to every output (0x30000, as OpenSM sends it).
    pub const ALL_TO_ALL: Self = Self {
        output_port: 0,
        input_port: 0,
        all_outputs: true,
        all_inputs: true,
    };

    /// Every input port to one output port (0x20000 | out).
    #[must_use]
    pub const fn all_inputs_to(output_port: u8) -> Self {
        Self {
            output_port,
            input_port: 0,
            all_outputs: false,
            all_inputs: true,
        }
    }

    /// The wire value.
    #[must_use]
    pub const fn encode(self) -> u32 {
        (self.output_port as u32)
            | (self.input_port as u32) << 8
            | (self.all_outputs as u32) << 16
            | (self.all_inputs as u32) << 17
    }

    /// Decodes, rejecting set bits 31..18.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] when reserved bits are set.
    pub fn decode(v: u32) -> Result<Self> {
        if v >> 18 != 0 {
            return Err(bad("SLtoVLMappingTable modifier", "reserved", v));
        }
        Ok(Self {
            output_port: (v & 0xFF) as u8,
            input_port: (v >> 8 & 0xFF) as u8,
            all_outputs: v & 1 << 16 != 0,
            all_inputs: v & 1 << 17 != 0,
        })
    }
}

code_enum! {
    /// VLArbitrationTable part (AttributeModifier bits 31..16).
    pub enum VlArbPart: u16 {
        /// Low-priority entries 0..31.
        Low0To31 = 1,
        /// Low-priority entries 32..63.
        Low32To63 = 2,
        /// High-priority entries 0..31.
        High0To31 = 3,
        /// High-priority entries 32..63.
        High32To63 = 4,
    }
}

/// VLArbitrationTable: bits 31..16 table part, 15..0 output port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlArbMod {
    /// Which 32 entries.
    pub part: VlArbPart,
    /// Output port (switches; CAs/routers: implied).
    pub port: u16,
}

impl VlArbMod {
    /// The wire value.
    #[must_use]
    pub fn encode(self) -> u32 {
        u32::from(u16::from(self.part)) << 16 | u32::from(self.port)
    }

    /// Decodes, rejecting parts other than 1..=4.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for an unknown part.
    pub fn decode(v: u32) -> Result<Self> {
        let part = VlArbPart::from((v >> 16) as u16);
        if !part.is_known() {
            return Err(bad("VLArbitrationTable modifier", "part", v >> 16));
        }
        Ok(Self {
            part,
            port: (v & 0xFFFF) as u16,
        })
    }
}

/// LinearForwardingTable: block number (64 LIDs per block).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LftMod {
    /// Block b maps LIDs 64b..64b+63.
    pub block: u16,
}

impl LftMod {
    /// LIDs per block.
    pub const PER_BLOCK: u16 = 64;
    /// Blocks covering every LID 0..=0xFFFF.
    pub const MAX_BLOCKS: u32 = 1024;

    /// The block holding `lid`, and its entry inside the block.
    #[must_use]
    pub const fn for_lid(lid: u16) -> (Self, usize) {
        (
            Self {
                block: lid / Self::PER_BLOCK,
            },
            (lid % Self::PER_BLOCK) as usize,
        )
    }

    /// First LID of the block.
    #[must_use]
    pub const fn first_lid(self) -> u16 {
        self.block.wrapping_mul(Self::PER_BLOCK)
    }

    /// Blocks needed to cover LIDs 0..=`top` (SwitchInfo.LinearFDBTop).
    #[must_use]
    pub const fn blocks_for_top(top: u16) -> u32 {
        top as u32 / Self::PER_BLOCK as u32 + 1
    }

    /// The wire value.
    #[must_use]
    pub const fn encode(self) -> u32 {
        self.block as u32
    }

    /// Decodes, rejecting blocks beyond LID 0xFFFF.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for a block >= 1024.
    pub fn decode(v: u32) -> Result<Self> {
        if v >= Self::MAX_BLOCKS {
            return Err(bad("LinearForwardingTable modifier", "block", v));
        }
        Ok(Self { block: v as u16 })
    }
}

/// RandomForwardingTable: block number (16 entries per block).
pub type RftMod = BlockMod<16>;

/// First multicast LID.
pub const MLID_BASE: u16 = 0xC000;

/// MulticastForwardingTable: bits 31..28 port position (ports 16p..16p+15), bits 8..0
/// block number (MLIDs 0xC000 + 32b .. + 31).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MftMod {
    /// Port position 0..15.
    pub position: u8,
    /// Block 0..511.
    pub block: u16,
}

impl MftMod {
    /// MLIDs per block.
    pub const PER_BLOCK: u16 = 32;
    /// Ports per position.
    pub const PORTS_PER_POSITION: u16 = 16;

    /// The block and position holding `mlid`'s bit for `port`, with the mask index
    /// inside the block and the bit inside the mask; `None` if `mlid` is not multicast.
    #[must_use]
    pub const fn for_mlid_port(mlid: u16, port: u8) -> Option<(Self, usize, u16)> {
        if mlid < MLID_BASE {
            return None;
        }
        let off = mlid - MLID_BASE;
        Some((
            Self {
                position: port / 16,
                block: off / Self::PER_BLOCK,
            },
            (off % Self::PER_BLOCK) as usize,
            1 << (port % 16),
        ))
    }

    /// First MLID of the block.
    #[must_use]
    pub const fn first_mlid(self) -> u16 {
        MLID_BASE + (self.block & 0x1FF) * Self::PER_BLOCK
    }

    /// Positions needed for a switch with `num_ports` ports (NumPorts / 16 + 1).
    #[must_use]
    pub const fn positions_for_ports(num_ports: u8) -> u8 {
        num_ports / 16 + 1
    }

    /// The wire value (fields masked to their widths).
    #[must_use]
    pub const fn encode(self) -> u32 {
        ((self.position & 0x0F) as u32) << 28 | (self.block & 0x1FF) as u32
    }

    /// Decodes, rejecting set bits 27..9.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] when reserved bits are set.
    pub fn decode(v: u32) -> Result<Self> {
        if v & 0x0FFF_FE00 != 0 {
            return Err(bad("MulticastForwardingTable modifier", "reserved", v));
        }
        Ok(Self {
            position: (v >> 28) as u8,
            block: (v & 0x1FF) as u16,
        })
    }
}

/// Decodes the SubnSet(SMInfo) control code; `Get` uses 0.
///
/// # Errors
/// [`Error::InvalidValue`] for a value that is not one of the five codes.
pub fn decode_sm_info_control(v: u32) -> Result<SmInfoControl> {
    let c = SmInfoControl::from(v);
    if c.is_known() {
        Ok(c)
    } else {
        Err(bad("SMInfo modifier", "control", v))
    }
}

/// Encodes a SubnSet(SMInfo) control code.
#[must_use]
pub fn encode_sm_info_control(c: SmInfoControl) -> u32 {
    c.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn port_info() {
        let m = PortMod {
            port: 7,
            sm_supports_extended_speeds: true,
        };
        assert_eq!(m.encode(), 0x8000_0007);
        assert_eq!(PortMod::decode(0x8000_0007), Ok(m));
        assert_eq!(PortMod::decode(3), Ok(PortMod::port(3)));
        assert!(PortMod::decode(0x100).is_err());
    }

    #[test]
    fn pkey_guid_rft() {
        let (m, i) = PKeyMod::for_index(5, 33);
        assert_eq!((m, i), (PKeyMod { block: 1, port: 5 }, 1));
        assert_eq!(m.encode(), 0x0005_0001);
        assert_eq!(PKeyMod::decode(0x0005_0001), m);
        assert_eq!(GuidInfoMod::for_index(17), (GuidInfoMod { block: 2 }, 1));
        assert_eq!(GuidInfoMod::decode(2).encode(), 2);
        assert_eq!(RftMod::for_index(33), (RftMod { block: 2 }, 1));
        assert_eq!(RftMod::decode(9).encode(), 9);
    }

    #[test]
    fn sl2vl() {
        assert_eq!(SlToVlMod::ALL_TO_ALL.encode(), 0x30000);
        assert_eq!(SlToVlMod::all_inputs_to(5).encode(), 0x20005);
        assert_eq!(SlToVlMod::pair(3, 9).encode(), 0x0309);
        assert_eq!(SlToVlMod::decode(0x0309), Ok(SlToVlMod::pair(3, 9)));
        assert_eq!(SlToVlMod::decode(0x30000), Ok(SlToVlMod::ALL_TO_ALL));
        assert!(SlToVlMod::decode(0x40000).is_err());
    }

    #[test]
    fn vlarb() {
        let m = VlArbMod {
            part: VlArbPart::High0To31,
            port: 12,
        };
        assert_eq!(m.encode(), 0x0003_000c);
        assert_eq!(VlArbMod::decode(0x0003_000c), Ok(m));
        assert!(VlArbMod::decode(0x0005_0001).is_err());
        assert!(VlArbMod::decode(0x0000_0001).is_err());
    }

    #[test]
    fn lft() {
        assert_eq!(LftMod::for_lid(129), (LftMod { block: 2 }, 1));
        assert_eq!(LftMod { block: 2 }.first_lid(), 128);
        assert_eq!(LftMod::blocks_for_top(127), 2);
        assert_eq!(LftMod::blocks_for_top(0xBFFF), 768);
        assert_eq!(LftMod::decode(1023), Ok(LftMod { block: 1023 }));
        assert!(LftMod::decode(1024).is_err());
        assert_eq!(LftMod::for_lid(0xFFFF).0.encode(), 1023);
    }

    #[test]
    fn mft() {
        let (m, i, bit) = MftMod::for_mlid_port(0xC021, 17).unwrap();
        assert_eq!(
            m,
            MftMod {
                position: 1,
                block: 1
            }
        );
        assert_eq!((i, bit), (1, 2));
        assert_eq!(m.encode(), 0x1000_0001);
        assert_eq!(MftMod::decode(0x1000_0001), Ok(m));
        assert_eq!(m.first_mlid(), 0xC020);
        assert!(MftMod::for_mlid_port(0xBFFF, 1).is_none());
        assert_eq!(
            MftMod::for_mlid_port(0xFFFF, 255).unwrap().0.encode(),
            0xF000_01FF
        );
        assert!(MftMod::decode(0x200).is_err());
        assert_eq!(MftMod::positions_for_ports(36), 3);
    }

    #[test]
    fn sm_info_control() {
        assert_eq!(decode_sm_info_control(1), Ok(SmInfoControl::Handover));
        assert_eq!(decode_sm_info_control(5), Ok(SmInfoControl::Discover));
        assert!(decode_sm_info_control(0).is_err());
        assert!(decode_sm_info_control(6).is_err());
        assert_eq!(encode_sm_info_control(SmInfoControl::Standby), 4);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn decode_encode_roundtrip(v: u32) {
            // Whatever decodes successfully encodes back to the same value.
            if let Ok(m) = PortMod::decode(v) { prop_assert_eq!(m.encode(), v); }
            prop_assert_eq!(PKeyMod::decode(v).encode(), v);
            prop_assert_eq!(GuidInfoMod::decode(v).encode(), v);
            prop_assert_eq!(RftMod::decode(v).encode(), v);
            if let Ok(m) = SlToVlMod::decode(v) { prop_assert_eq!(m.encode(), v); }
            if let Ok(m) = VlArbMod::decode(v) { prop_assert_eq!(m.encode(), v); }
            if let Ok(m) = LftMod::decode(v) { prop_assert_eq!(m.encode(), v); }
            if let Ok(m) = MftMod::decode(v) { prop_assert_eq!(m.encode(), v); }
            if let Ok(c) = decode_sm_info_control(v) { prop_assert_eq!(encode_sm_info_control(c), v); }
        }

        #[test]
        fn lid_block_roundtrip(lid: u16, port: u8) {
            let (m, i) = LftMod::for_lid(lid);
            prop_assert_eq!(m.first_lid() + i as u16, lid);
            prop_assert_eq!(LftMod::decode(m.encode()), Ok(m));
            if let Some((m, i, bit)) = MftMod::for_mlid_port(lid, port) {
                prop_assert_eq!(m.first_mlid() + i as u16, lid);
                prop_assert_eq!(u16::from(m.position) * 16 + bit.trailing_zeros() as u16, u16::from(port));
                prop_assert_eq!(MftMod::decode(m.encode()), Ok(m));
            }
        }
    }
}
