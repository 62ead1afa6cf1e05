//! Partitions: a P_Key policy in OpenSM's `partitions.conf` syntax, and the P_Key
//! tables it gives every port.
//!
//! A partition file is a list of statements
//!
//! ```text
//! # comment
//! Name[=PKey][,flag[=value]]... : member[=full|limited|both], member ... ;
//! ```
//!
//! spanning as many lines as they like. Members are `ALL` (every end port: CA and
//! router ports, switch port 0), `ALL_CAS`, `ALL_SWITCHES`, `ALL_ROUTERS`, `SELF` (the
//! SM's own port) or a port GUID (`0x...` or decimal). A member without `=` gets the
//! statement's `defmember=` (default `limited`, as in OpenSM). Flags are `ipoib`,
//! `indx0`, `mtu=`, `rate=`, `sl=`, `scope=` (repeatable), `Q_Key=`, `TClass=`,
//! `FlowLabel=` and `defmember=`. `ipoib` and the multicast parameters give the IPoIB
//! broadcast group the SA keeps for the partition
//! ([`PartitionConfig::ipoib_broadcast_groups`]). Statements naming the same P_Key merge
//! (the first name wins); a statement without a P_Key gets the lowest unused one,
//! except one named `Default`, which means 0x7FFF.
//!
//! Membership follows OpenSM's partition manager:
//!
//! * With no file at all ([`PartitionConfig::opensm_default`]) the policy is
//!   `Default=0x7fff, ipoib : ALL=full ;`: every end port is a full member of the
//!   default partition.
//! * A file that has no rule for P_Key 0x7FFF gets `Default=0x7fff : ALL=limited,
//!   SELF=full ;` added: every end port is a limited member of the default partition
//!   and only the SM's port a full one.
//! * The SM's port is always a full member of the default partition.
//! * A port named twice in one partition with different memberships gets the stronger
//!   one (`both` over `full` over `limited`).
//! * `both` gives a port the full and the limited entry only with
//!   [`PartitionConfig::allow_both_pkeys`] (OpenSM's `allow_both_pkeys`, off by
//!   default); without it a `both` member is a full member and holds one entry.
//!
//! Among the members a statement may list multicast groups, one per line:
//!
//! ```text
//! mgid=ff12:401b::0707, sl=1, Q_Key=0x1234   # the rest of the line: group flags
//! ```
//!
//! The SA keeps each such group ([`PartitionConfig::multicast_groups`]) in the
//! partition's P_Key, as OpenSM does: flags not given are taken from the statement's
//! flags, then OpenSM's defaults. The MGID must be an IPv6 multicast address (first
//! byte 0xFF); for an IP group (signature 0x401B or 0x601B) the P_Key bits must be 0
//! (filled in) or the partition's, and its `mtu`/`rate` those of the broadcast group.
//!
//! Stricter than OpenSM, which silently takes the low 15 bits, assumes `limited` or
//! skips a bad group line: a P_Key with the membership bit (0x8000) set, P_Key 0, an
//! unknown membership word, an unknown member keyword or flag, and a bad or
//! non-multicast MGID or group flag are errors naming the line, column and token.
//!
//! [`PartitionConfig::plan`] turns a configuration and a [`Discovered`] subnet into the
//! table of every CA and router port and switch port 0 (index 0 holds the default
//! partition, or the partition flagged `indx0`; every P_Key a port already holds stays at
//! its index, so queue pairs bound to an index keep working when the policy changes), the
//! table each switch port attached to a CA or router enforces, and a
//! [`PartitionWarning`] for every table the port's capacity cuts short.
//!
//! ```
//! use ibsm_manager::partition::{Member, Membership, PartitionConfig};
//!
//! let cfg: PartitionConfig = "
//!     Default=0x7fff : ALL=limited, SELF=full ; # storage shared, compute split
//!     storage=0x0010, ipoib, mtu=4 : ALL_CAS=full
//!         mgid=ff12:401b::0707, sl=1       # an IPv4 group of the partition
//!         ;
//!     compute=0x0020 , defmember=full :
//!         0x0002c90300001001, 0x0002c90300001002,
//!         0x0002c90300001003=limited ;
//! ".parse()?;
//! let parts = cfg.partitions();
//! assert_eq!(parts.len(), 3);
//! assert_eq!(parts[2].name, "compute");
//! assert_eq!(parts[2].members[2], (Member::Guid(0x0002c90300001003), Membership::Limited));
//! // The SA keeps storage's broadcast group and the IPv4 group, in P_Key 0x8010.
//! let groups = cfg.multicast_groups(0x12);
//! assert_eq!(groups[1].mgid.to_string(), "ff12:401b:8010:0000:0000:0000:0000:0707");
//! assert_eq!((groups[1].pkey, groups[1].sl, groups[1].qkey), (0x8010, 1, 0x0b1b));
//!
//! // Errors say where.
//! let err = "p=0x8001 : ALL ;".parse::<PartitionConfig>().unwrap_err();
//! assert_eq!((err.line, err.column), (1, 3));
//! assert!(err.to_string().contains("0x8001"));
//! # Ok::<(), ibsm_manager::partition::ParseError>(())
//! ```
//!
//! [`Discovered`]: crate::model::Discovered

mod parse;
mod policy;
#[cfg(test)]
mod tests;

use std::fmt;

pub use parse::{ParseError, ParseErrorKind};

pub use policy::{Enforce, PKeyPlan, PartitionWarning, place};
use std::net::Ipv6Addr;

/// The default partition's P_Key (without the membership bit).
pub const DEFAULT_PKEY: u16 = 0x7FFF;

/// The membership bit of a P_Key table entry: set = full member.
pub const FULL_MEMBER: u16 = 0x8000;

/// Most P_Key entries a port's table is programmed with (64 blocks; the engine reads
/// no more either).
pub const MAX_TABLE_ENTRIES: usize = 2048;

/// How a port belongs to a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Membership {
    /// Limited member: may talk to full members only (the P_Key without 0x8000).
    Limited,
    /// Full member (the P_Key with 0x8000).
    Full,
    /// Both entries, full and limited, when the policy allows both
    /// ([`PartitionConfig::allow_both_pkeys`]); a full member otherwise.
    Both,
}

impl Membership {
    /// The stronger of two memberships of the same port: `both` over `full` over
    /// `limited`.
    #[must_use]
    pub fn merge(self, other: Self) -> Self {
        self.max(other)
    }

    /// The table entries this membership of partition `pkey` (15 bits) takes, the full
    /// one first.
    #[must_use]
    pub fn entries(self, pkey: u16) -> Vec<u16> {
        let k = pkey & !FULL_MEMBER;
        match self {
            Membership::Limited => vec![k],
            Membership::Full => vec![k | FULL_MEMBER],
            Membership::Both => vec![k | FULL_MEMBER, k],
        }
    }

    /// The word partitions.conf (and UFM's API) spells it with.
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            Membership::Limited => "limited",
            Membership::Full => "full",
            Membership::Both => "both",
        }
    }
}

impl fmt::Display for Membership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// Who a member entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Member {
    /// `ALL`: every end port (CA and router ports, switch port 0).
    All,
    /// `ALL_CAS`: every channel adapter port.
    AllCas,
    /// `ALL_SWITCHES`: every switch's port 0.
    AllSwitches,
    /// `ALL_ROUTERS`: every router port.
    AllRouters,
    /// `SELF`: the SM's own port.
    SelfPort,
    /// One port, by port GUID (a switch: its node GUID, the GUID of port 0).
    Guid(u64),
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Member::All => f.write_str("ALL"),
            Member::AllCas => f.write_str("ALL_CAS"),
            Member::AllSwitches => f.write_str("ALL_SWITCHES"),
            Member::AllRouters => f.write_str("ALL_ROUTERS"),
            Member::SelfPort => f.write_str("SELF"),
            Member::Guid(g) => write!(f, "{g:#018x}"),
        }
    }
}

/// One entry of a statement's member list, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemberEntry {
    /// Who.
    pub member: Member,
    /// The membership written after `=`; `None`: the statement's `defmember`.
    pub membership: Option<Membership>,
}

/// The flags that describe a multicast group, as written: on a statement they are its
/// IPoIB broadcast group's and the defaults of its group lines, on a group line
/// (`mgid=`) that group's own. What is not written anywhere takes OpenSM's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct GroupFlags {
    /// `mtu=`: MTU code (1..=5); default 4 (2048).
    pub mtu: Option<u8>,
    /// `rate=`: rate code (2..=63); default 3 (10 Gb/s).
    pub rate: Option<u8>,
    /// `sl=`: service level; default 0.
    pub sl: Option<u8>,
    /// `scope=` (repeatable): multicast scopes, one group per scope; default
    /// link-local (2).
    pub scope: Vec<u8>,
    /// `Q_Key=`: default 0x0B1B for an IP group (every broadcast group), 0 otherwise.
    pub q_key: Option<u32>,
    /// `TClass=`: traffic class; default 0 (a group line does not take the
    /// statement's, as OpenSM).
    pub tclass: Option<u8>,
    /// `FlowLabel=`: 20 bits; default 0.
    pub flow_label: Option<u32>,
}

impl GroupFlags {
    /// Adds `other`'s flags to these: the first value given wins, scopes join.
    fn absorb(&mut self, other: &GroupFlags) {
        self.mtu = self.mtu.or(other.mtu);
        self.rate = self.rate.or(other.rate);
        self.sl = self.sl.or(other.sl);
        for s in &other.scope {
            if !self.scope.contains(s) {
                self.scope.push(*s);
            }
        }
        self.q_key = self.q_key.or(other.q_key);
        self.tclass = self.tclass.or(other.tclass);
        self.flow_label = self.flow_label.or(other.flow_label);
    }
}

/// The flags given, each as `, name=value` (as they follow a P_Key or an MGID).
impl fmt::Display for GroupFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, v) in [("mtu", self.mtu), ("rate", self.rate), ("sl", self.sl)] {
            if let Some(v) = v {
                write!(f, ", {name}={v}")?;
            }
        }
        for s in &self.scope {
            write!(f, ", scope={s}")?;
        }
        if let Some(v) = self.q_key {
            write!(f, ", Q_Key={v:#x}")?;
        }
        if let Some(v) = self.tclass {
            write!(f, ", TClass={v}")?;
        }
        if let Some(v) = self.flow_label {
            write!(f, ", FlowLabel={v:#x}")?;
        }
        Ok(())
    }
}

/// A statement's flags (after the P_Key), as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Flags {
    /// `ipoib`: the partition carries IPoIB (the SA should create its broadcast group).
    pub ipoib: bool,
    /// `indx0`: put this P_Key at index 0 of block 0 instead of the default partition's.
    pub indx0: bool,
    /// The IPoIB broadcast group's flags, also the defaults of the statement's group
    /// lines.
    pub group: GroupFlags,
    /// `defmember=`: membership of the statement's members written without `=`
    /// (`None`: limited).
    pub defmember: Option<Membership>,
}

impl Flags {
    /// Adds `other`'s flags to these (a partition defined in several statements): the
    /// first value given wins, `ipoib` and `indx0` add up, scopes join. `defmember` is
    /// per statement and is not merged.
    fn absorb(&mut self, other: &Flags) {
        self.ipoib |= other.ipoib;
        self.indx0 |= other.indx0;
        self.group.absorb(&other.group);
    }
}

/// A multicast group line of a statement (`mgid=GID[,flag=value]...`), as written: the
/// SA predefines the group in the statement's partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct McGroup {
    /// The MGID (first byte 0xFF). Its scope nibble is replaced by each `scope`
    /// (default link-local), as OpenSM does; an IP group's P_Key bits get the
    /// partition's P_Key.
    pub mgid: Ipv6Addr,
    /// Its flags; one not given is the statement's (TClass excepted), else the default.
    pub flags: GroupFlags,
}

impl McGroup {
    /// A group with the MGID and every flag left to its default.
    #[must_use]
    pub fn new(mgid: Ipv6Addr) -> Self {
        Self {
            mgid,
            flags: GroupFlags::default(),
        }
    }

    /// Whether the MGID is an IPoIB one (signature 0x401B IPv4, 0x601B IPv6; RFC 4391).
    #[must_use]
    pub fn is_ip(&self) -> bool {
        let o = self.mgid.octets();
        o[2..4] == [0x40, 0x1B] || o[2..4] == [0x60, 0x1B]
    }
}

impl fmt::Display for McGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mgid={}{}", self.mgid, self.flags)
    }
}

/// One statement of a partition file, as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Statement {
    /// The partition's name (may be empty; words separated by single spaces).
    pub name: String,
    /// The P_Key (15 bits, 0x0001..=0x7FFF); `None`: generated.
    pub pkey: Option<u16>,
    /// Flags after the P_Key.
    pub flags: Flags,
    /// The member list (may be empty: no ports).
    pub members: Vec<MemberEntry>,
    /// The multicast group lines (`mgid=`), in file order.
    pub mgroups: Vec<McGroup>,
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(k) = self.pkey {
            write!(f, "={k:#06x}")?;
        }
        let fl = &self.flags;
        if fl.ipoib {
            f.write_str(", ipoib")?;
        }
        if fl.indx0 {
            f.write_str(", indx0")?;
        }
        write!(f, "{}", fl.group)?;
        if let Some(m) = fl.defmember {
            write!(f, ", defmember={m}")?;
        }
        f.write_str(" :")?;
        // A group line runs to the end of its line.
        for g in &self.mgroups {
            write!(f, "\n    {g}\n   ")?;
        }
        for (i, m) in self.members.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { ", " })?;
            write!(f, "{}", m.member)?;
            if let Some(ms) = m.membership {
                write!(f, "={ms}")?;
            }
        }
        f.write_str(" ;")
    }
}

/// Which directions switch ports attached to end ports filter P_Keys in (OpenSM
/// `part_enforce`; `no_partition_enforcement` is [`Enforcement::Off`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Enforcement {
    /// Inbound and outbound, where the switch can (default).
    #[default]
    Both,
    /// Packets entering the switch only.
    In,
    /// Packets leaving the switch only.
    Out,
    /// No switch enforcement: only end ports' tables are programmed.
    Off,
}

/// Why [`PartitionConfig::load`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PartitionLoadError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid partition file.
    #[error("{}: {source}", path.display())]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// Where and what.
        #[source]
        source: ParseError,
    },
}

/// A partition policy: the statements of a partition file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionConfig {
    /// The statements in file order.
    pub statements: Vec<Statement>,
    /// Switch enforcement on ports attached to end ports.
    pub enforcement: Enforcement,
    /// OpenSM's `allow_both_pkeys`: a `both` member holds the full and the limited
    /// entry of the partition. Off (OpenSM's default): a `both` member is a full
    /// member, one entry. Like [`Self::enforcement`], not part of the file.
    pub allow_both_pkeys: bool,
}

/// A partition after statements naming the same P_Key were merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// The first statement's name.
    pub name: String,
    /// P_Key, 15 bits.
    pub pkey: u16,
    /// Flags of all its statements.
    pub flags: Flags,
    /// Members in file order, each with its membership resolved (`defmember`).
    pub members: Vec<(Member, Membership)>,
    /// Multicast group lines of all its statements, in file order.
    pub mgroups: Vec<McGroup>,
}

impl PartitionConfig {
    /// OpenSM's policy when there is no partition file: `Default=0x7fff, ipoib :
    /// ALL=full ;`.
    #[must_use]
    pub fn opensm_default() -> Self {
        Self {
            statements: vec![Statement {
                name: "Default".into(),
                pkey: Some(DEFAULT_PKEY),
                flags: Flags {
                    ipoib: true,
                    ..Flags::default()
                },
                members: vec![MemberEntry {
                    member: Member::All,
                    membership: Some(Membership::Full),
                }],
                mgroups: Vec::new(),
            }],
            enforcement: Enforcement::Both,
            allow_both_pkeys: false,
        }
    }

    /// Parses a partition file.
    ///
    /// # Errors
    /// [`ParseError`] naming the line, column and token of the first mistake.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        Ok(Self {
            statements: parse::statements(text)?,
            enforcement: Enforcement::Both,
            allow_both_pkeys: false,
        })
    }

    /// Reads and parses a partition file.
    ///
    /// # Errors
    /// [`PartitionLoadError`] naming the file, with the line, column and token of a syntax error.
    pub fn load(path: &std::path::Path) -> Result<Self, PartitionLoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| PartitionLoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|source| PartitionLoadError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// The partitions: statements with the same P_Key merged (first name wins), P_Keys
    /// generated for statements without one (the lowest unused; a statement left without
    /// any when all 32,766 are taken is ignored), memberships resolved, and OpenSM's
    /// `Default=0x7fff : ALL=limited, SELF=full ;` first when no statement defines the
    /// default partition. Sorted by first appearance.
    #[must_use]
    pub fn partitions(&self) -> Vec<Partition> {
        let explicit: std::collections::HashSet<u16> = self
            .statements
            .iter()
            .filter_map(Self::explicit_pkey)
            .collect();
        let mut next_free = 1u16;
        let mut out: Vec<Partition> = Vec::new();
        // P_Key -> index in `out`.
        let mut at: std::collections::HashMap<u16, usize> = std::collections::HashMap::new();
        if !explicit.contains(&DEFAULT_PKEY) {
            at.insert(DEFAULT_PKEY, 0);
            out.push(Partition {
                name: "Default".into(),
                pkey: DEFAULT_PKEY,
                flags: Flags::default(),
                members: vec![
                    (Member::All, Membership::Limited),
                    (Member::SelfPort, Membership::Full),
                ],
                mgroups: Vec::new(),
            });
        }
        for st in &self.statements {
            let pkey = match Self::explicit_pkey(st) {
                Some(k) => k,
                None => {
                    // Every P_Key taken (32,766 partitions): nothing left to give.
                    let Some(k) = (next_free..DEFAULT_PKEY).find(|k| !explicit.contains(k)) else {
                        continue;
                    };
                    next_free = k + 1;
                    k
                }
            };
            let def = st.flags.defmember.unwrap_or(Membership::Limited);
            let members = st
                .members
                .iter()
                .map(|m| (m.member, m.membership.unwrap_or(def)));
            if let Some(p) = at.get(&pkey).and_then(|&i| out.get_mut(i)) {
                p.flags.absorb(&st.flags);
                p.members.extend(members);
                p.mgroups.extend(st.mgroups.iter().cloned());
            } else {
                at.insert(pkey, out.len());
                let mut flags = st.flags.clone();
                flags.defmember = None;
                out.push(Partition {
                    name: st.name.clone(),
                    pkey,
                    flags,
                    members: members.collect(),
                    mgroups: st.mgroups.clone(),
                });
            }
        }
        out
    }

    /// The IPoIB broadcast groups the SA keeps for the `ipoib` partitions, as OpenSM
    /// creates them (clients join them, they do not create them): one per scope
    /// (default link-local) with MGID `ff1S:401b:PPPP::ffff:ffff` (RFC 4391; PPPP the
    /// P_Key with the full-member bit), Q_Key 0x0b1b, MTU code 4 (2048), rate code 3
    /// (10 Gb/s) and SL 0 unless the partition's flags say otherwise, and
    /// `packet_life_time`.
    #[must_use]
    pub fn ipoib_broadcast_groups(
        &self,
        packet_life_time: u8,
    ) -> Vec<ibsm_wire::sa::McMemberRecord> {
        use ibsm_wire::sa::{McMemberRecord, Rate, Selector};
        let mut out = Vec::new();
        for p in self.partitions().iter().filter(|p| p.flags.ipoib) {
            let f = &p.flags.group;
            let pkey = p.pkey | FULL_MEMBER;
            let scopes = if f.scope.is_empty() {
                vec![ibsm_wire::sa::mgid_scope::LINK_LOCAL]
            } else {
                f.scope.clone()
            };
            for scope in scopes {
                let mut mgid = [0u8; 16];
                mgid[..4].copy_from_slice(&[0xFF, 0x10 | (scope & 0xF), 0x40, 0x1B]);
                mgid[4..6].copy_from_slice(&pkey.to_be_bytes());
                mgid[12..].copy_from_slice(&[0xFF; 4]);
                out.push(McMemberRecord {
                    mgid: ibsm_wire::Gid(mgid),
                    qkey: f.q_key.unwrap_or(0x0B1B),
                    mtu_selector: Selector::Exactly,
                    mtu: ibsm_wire::Mtu::from(f.mtu.unwrap_or(4)),
                    tclass: f.tclass.unwrap_or(0),
                    pkey,
                    rate_selector: Selector::Exactly,
                    rate: Rate::from(f.rate.unwrap_or(3)),
                    packet_life_time_selector: Selector::Exactly,
                    packet_life_time,
                    sl: f.sl.unwrap_or(0),
                    flow_label: f.flow_label.unwrap_or(0),
                    hop_limit: if scope == ibsm_wire::sa::mgid_scope::LINK_LOCAL {
                        0
                    } else {
                        0xFF
                    },
                    scope,
                    ..McMemberRecord::default()
                });
            }
        }
        out
    }

    /// Every multicast group the SA keeps for this policy: the IPoIB broadcast groups
    /// ([`Self::ipoib_broadcast_groups`]) and then the groups of the `mgid=` lines, as
    /// OpenSM creates them: P_Key the partition's (full-member bit set), one group per
    /// scope with the MGID's scope nibble replaced (default link-local), an IP group's
    /// P_Key bits set to the partition's, hop limit 0 for link-local scope and 0xFF
    /// otherwise, flags not on the line from the statement's flags (TClass excepted),
    /// then OpenSM's defaults (MTU code 4, rate code 3, SL 0, Q_Key 0x0B1B for IP
    /// groups and 0 for others). An MGID already defined is not defined again (the
    /// first wins).
    #[must_use]
    pub fn multicast_groups(&self, packet_life_time: u8) -> Vec<ibsm_wire::sa::McMemberRecord> {
        use ibsm_wire::sa::{McMemberRecord, Rate, Selector, mgid_scope};
        let mut out = self.ipoib_broadcast_groups(packet_life_time);
        let mut seen: std::collections::HashSet<[u8; 16]> = out.iter().map(|r| r.mgid.0).collect();
        for p in self.partitions() {
            let f = &p.flags.group;
            let pkey = p.pkey | FULL_MEMBER;
            for g in &p.mgroups {
                let scopes = if !g.flags.scope.is_empty() {
                    g.flags.scope.clone()
                } else if !f.scope.is_empty() {
                    f.scope.clone()
                } else {
                    vec![mgid_scope::LINK_LOCAL]
                };
                let q_key = g
                    .flags
                    .q_key
                    .or(f.q_key)
                    .filter(|&q| q != 0)
                    .unwrap_or(if g.is_ip() { 0x0B1B } else { 0 });
                for scope in scopes {
                    let mut mgid = g.mgid.octets();
                    mgid[1] = (mgid[1] & 0xF0) | (scope & 0xF);
                    if g.is_ip() {
                        mgid[4..6].copy_from_slice(&pkey.to_be_bytes());
                    }
                    if !seen.insert(mgid) {
                        continue;
                    }
                    out.push(McMemberRecord {
                        mgid: ibsm_wire::Gid(mgid),
                        qkey: q_key,
                        mtu_selector: Selector::Exactly,
                        mtu: ibsm_wire::Mtu::from(g.flags.mtu.or(f.mtu).unwrap_or(4)),
                        tclass: g.flags.tclass.unwrap_or(0),
                        pkey,
                        rate_selector: Selector::Exactly,
                        rate: Rate::from(g.flags.rate.or(f.rate).unwrap_or(3)),
                        packet_life_time_selector: Selector::Exactly,
                        packet_life_time,
                        sl: g.flags.sl.or(f.sl).unwrap_or(0),
                        flow_label: g.flags.flow_label.or(f.flow_label).unwrap_or(0),
                        hop_limit: if scope == mgid_scope::LINK_LOCAL {
                            0
                        } else {
                            0xFF
                        },
                        scope,
                        ..McMemberRecord::default()
                    });
                }
            }
        }
        out
    }

    fn explicit_pkey(st: &Statement) -> Option<u16> {
        st.pkey
            .or_else(|| (st.name == "Default").then_some(DEFAULT_PKEY))
    }
}

impl Default for PartitionConfig {
    fn default() -> Self {
        Self::opensm_default()
    }
}

impl std::str::FromStr for PartitionConfig {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Prints the statements one per line, in a form [`PartitionConfig::parse`] reads back
/// to the same statements.
impl fmt::Display for PartitionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for st in &self.statements {
            writeln!(f, "{st}")?;
        }
        Ok(())
    }
}
