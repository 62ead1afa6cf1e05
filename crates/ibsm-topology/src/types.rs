//! Small value types shared by the whole crate: GUIDs, IDs, node types, port attributes.

use core::fmt;

/// A 64-bit EUI-64 globally unique identifier (node, port or system image GUID).
///
/// Displayed as `0x` followed by 16 hex digits, the form `ibnetdiscover` and OpenSM print.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Guid(pub u64);

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({:#018x})", self.0)
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

impl From<u64> for Guid {
    fn from(v: u64) -> Self {
        Guid(v)
    }
}

/// Identifies a node inside one [`Fabric`](crate::Fabric).
///
/// IDs are stable across removals of other nodes (the graph is a petgraph `StableGraph`)
/// but are not meaningful across fabrics: use the node GUID for that.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The raw index (the petgraph node index).
    #[must_use]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Identifies a link (cable) inside one [`Fabric`](crate::Fabric); stable across removals
/// of other links.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct LinkId(pub(crate) u32);

impl LinkId {
    /// The raw index (the petgraph edge index).
    #[must_use]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A physical port number. Port 0 is a switch's management port and never carries a link;
/// external ports are 1..=254 (255 is reserved by the spec).
pub type PortNum = u8;

/// The kind of a node, as in NodeInfo:NodeType.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum NodeKind {
    /// Channel adapter (HCA/TCA): a terminal with its own port GUIDs and LIDs.
    Ca,
    /// Switch: one LID (on port 0) for the whole node; forwards by LFT.
    Switch,
    /// Router: a terminal from the subnet's point of view.
    Router,
}

impl NodeKind {
    /// The NodeInfo:NodeType code (1 CA, 2 switch, 3 router).
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            NodeKind::Ca => 1,
            NodeKind::Switch => 2,
            NodeKind::Router => 3,
        }
    }

    /// The node for a NodeInfo:NodeType code.
    #[must_use]
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(NodeKind::Ca),
            2 => Some(NodeKind::Switch),
            3 => Some(NodeKind::Router),
            _ => None,
        }
    }

    /// Whether this node is an end point of routes (CA or router), not a switch.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        !matches!(self, NodeKind::Switch)
    }
}

/// PortInfo:PortState as far as the model tracks it.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
#[non_exhaustive]
pub enum LinkState {
    /// Not known (e.g. read from a file that does not say).
    #[default]
    Unknown,
    /// Down (no physical link).
    Down,
    /// Init (physical link up, not configured).
    Init,
    /// Armed.
    Armed,
    /// Active.
    Active,
}

impl LinkState {
    /// The PortInfo:PortState code (0 = no state change / unknown, 1..=4).
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            LinkState::Unknown => 0,
            LinkState::Down => 1,
            LinkState::Init => 2,
            LinkState::Armed => 3,
            LinkState::Active => 4,
        }
    }
}

/// Active link width.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
#[non_exhaustive]
pub enum ActiveWidth {
    /// Not known.
    #[default]
    Unknown,
    /// 1 lane.
    X1,
    /// 2 lanes.
    X2,
    /// 4 lanes (the common case).
    X4,
    /// 8 lanes.
    X8,
    /// 12 lanes.
    X12,
}

impl ActiveWidth {
    /// Number of lanes (0 when unknown).
    #[must_use]
    pub fn lanes(self) -> u8 {
        match self {
            ActiveWidth::Unknown => 0,
            ActiveWidth::X1 => 1,
            ActiveWidth::X2 => 2,
            ActiveWidth::X4 => 4,
            ActiveWidth::X8 => 8,
            ActiveWidth::X12 => 12,
        }
    }

    /// The width with that many lanes.
    #[must_use]
    pub fn from_lanes(lanes: u32) -> Option<Self> {
        Some(match lanes {
            1 => ActiveWidth::X1,
            2 => ActiveWidth::X2,
            4 => ActiveWidth::X4,
            8 => ActiveWidth::X8,
            12 => ActiveWidth::X12,
            _ => return None,
        })
    }
}

/// Active link speed (per lane), with the names `ibnetdiscover` prints.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
#[non_exhaustive]
pub enum ActiveSpeed {
    /// Not known.
    #[default]
    Unknown,
    /// 2.5 Gb/s.
    Sdr,
    /// 5 Gb/s.
    Ddr,
    /// 10 Gb/s.
    Qdr,
    /// 10.3125 Gb/s (Mellanox FDR10).
    Fdr10,
    /// 14.0625 Gb/s.
    Fdr,
    /// 25.78125 Gb/s.
    Edr,
    /// 50 Gb/s.
    Hdr,
    /// 100 Gb/s.
    Ndr,
    /// 200 Gb/s.
    Xdr,
}

impl ActiveSpeed {
    const NAMES: [(ActiveSpeed, &'static str); 9] = [
        (ActiveSpeed::Sdr, "SDR"),
        (ActiveSpeed::Ddr, "DDR"),
        (ActiveSpeed::Qdr, "QDR"),
        (ActiveSpeed::Fdr10, "FDR10"),
        (ActiveSpeed::Fdr, "FDR"),
        (ActiveSpeed::Edr, "EDR"),
        (ActiveSpeed::Hdr, "HDR"),
        (ActiveSpeed::Ndr, "NDR"),
        (ActiveSpeed::Xdr, "XDR"),
    ];

    /// The name `ibnetdiscover` prints (`"SDR"`, `"QDR"`, ...); `"?"` when unknown.
    #[must_use]
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("?", |(_, n)| n)
    }

    /// Parses a name as printed by `ibnetdiscover` (case-sensitive, upper case).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(s, _)| *s)
    }

    /// Lane rate in Mb/s (0 when unknown); with [`ActiveWidth::lanes`] gives link bandwidth.
    #[must_use]
    pub fn lane_mbps(self) -> u32 {
        match self {
            ActiveSpeed::Unknown => 0,
            ActiveSpeed::Sdr => 2_500,
            ActiveSpeed::Ddr => 5_000,
            ActiveSpeed::Qdr => 10_000,
            ActiveSpeed::Fdr10 => 10_312,
            ActiveSpeed::Fdr => 14_062,
            ActiveSpeed::Edr => 25_781,
            ActiveSpeed::Hdr => 50_000,
            ActiveSpeed::Ndr => 100_000,
            ActiveSpeed::Xdr => 200_000,
        }
    }
}

/// One end of a link: a node and one of its ports.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Endpoint {
    /// The node.
    pub node: NodeId,
    /// The port number on that node (never 0).
    pub port: PortNum,
}
