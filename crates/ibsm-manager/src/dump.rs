//! OpenSM's dump files, written from what the engine configured, and a reader for the
//! unicast one.
//!
//! OpenSM writes these into `dump_files_dir` after a heavy sweep; operators and tools
//! (OpenSM's own `file` routing engine, `-R file -U opensm-lfts.dump`) read them:
//!
//! | file | what |
//! |---|---|
//! | [`LFTS_FILE`] `opensm-lfts.dump` | every switch's LFT as this SM wrote it ([`LftDump`]), the format `ibroute` prints and OpenSM's `file` engine loads |
//! | [`SUBNET_FILE`] `opensm-subnet.lst` | every cable, both ends, with width, state and speed |
//! | [`MFTS_FILE`] `opensm-mfts.dump` | multicast forwarding per switch and MLID (OpenSM's `opensm.mcfdbs` format) |
//! | [`SL2VL_FILE`] `opensm-sl2vl.dump` | the SL -> VL maps written to switch ports |
//! | [`GUID2LID_FILE`] `guid2lid` | port GUID -> LID range ([`crate::store::format_guid2lid`]) |
//! | [`SLURM_FILE`] `slurm-topology.conf` | Slurm's tree topology of the subnet ([`ibsm_topology::slurm`]; nodes named by the first word of their NodeDescription) |
//!
//! [`Dumps::of`] renders them from a [`SubnetManager`] (read-only: no MAD, no event);
//! [`Dumps::write_to`] writes each through a temporary file (created new, under a name
//! nobody can guess, flushed to disk) and a rename, so a reader never sees half a file. [`LftDump::parse`] reads `opensm-lfts.dump` back with typed
//! errors naming the line; [`LftDump`]'s `Display` writes it.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use ibsm_wire::{LinkSpeed, LinkSpeedExt, LinkWidth, NodeType, PortState};

use crate::engine::SubnetManager;
use crate::model::{Discovered, FoundNode};

/// The unicast forwarding tables (OpenSM `opensm-lfts.dump`).
pub const LFTS_FILE: &str = "opensm-lfts.dump";
/// The cables (OpenSM `opensm-subnet.lst`).
pub const SUBNET_FILE: &str = "opensm-subnet.lst";
/// The multicast forwarding tables.
pub const MFTS_FILE: &str = "opensm-mfts.dump";
/// The SL -> VL maps (OpenSM `opensm-sl2vl.dump`).
pub const SL2VL_FILE: &str = "opensm-sl2vl.dump";
/// The LID assignments (OpenSM `guid2lid`).
pub const GUID2LID_FILE: &str = "guid2lid";
/// Slurm's `topology.conf` for `TopologyPlugin=topology/tree` (ours, not OpenSM's).
pub const SLURM_FILE: &str = "slurm-topology.conf";

/// The text of every dump file, rendered at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dumps {
    /// `opensm-lfts.dump`.
    pub lfts: String,
    /// `opensm-subnet.lst`.
    pub subnet: String,
    /// `opensm-mfts.dump`.
    pub mfts: String,
    /// `opensm-sl2vl.dump`.
    pub sl2vl: String,
    /// `guid2lid`.
    pub guid2lid: String,
    /// `slurm-topology.conf`.
    pub slurm: String,
}

/// A dump file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct DumpError {
    /// The file (or the directory) the failing operation was on.
    pub path: PathBuf,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

impl Dumps {
    /// Renders every file from what `sm` configured: the LFTs, SL2VL maps and LIDs it
    /// wrote, the subnet its last heavy sweep found, the MFTs its SA handed out.
    #[must_use]
    pub fn of(sm: &SubnetManager) -> Self {
        let mfts = sm
            .sa()
            .map(ibsm_sa::SaServer::mft_ports)
            .unwrap_or_default();
        Self {
            lfts: LftDump::of(sm).to_string(),
            subnet: subnet_lst(sm.subnet()),
            mfts: mfts_dump(&mfts),
            sl2vl: sl2vl_dump(sm),
            guid2lid: crate::store::format_guid2lid(sm.lids()),
            slurm: slurm_topology(sm.subnet()),
        }
    }

    /// `(file name, text)` of every file.
    #[must_use]
    pub fn files(&self) -> [(&'static str, &str); 6] {
        [
            (LFTS_FILE, &self.lfts),
            (SUBNET_FILE, &self.subnet),
            (MFTS_FILE, &self.mfts),
            (SL2VL_FILE, &self.sl2vl),
            (GUID2LID_FILE, &self.guid2lid),
            (SLURM_FILE, &self.slurm),
        ]
    }

    /// Writes every file into `dir` (created if missing), each to a temporary sibling
    /// first, flushed to disk and renamed over the old one, so a reader (or a crash)
    /// never leaves half a file. Each temporary file is created new (`O_EXCL`, which
    /// follows no symlink) under a name nobody can guess: a link planted where the
    /// temporary file goes cannot redirect the write. Returns the paths written.
    ///
    /// # Errors
    /// [`DumpError`] naming the path when creating the directory, writing or renaming
    /// fails; files before it are written, files after it are not.
    pub fn write_to(&self, dir: &Path) -> Result<Vec<PathBuf>, DumpError> {
        self.write_with(dir, &mut crate::persist::temp_name)
    }

    /// [`Self::write_to`] with the temporary names from `tmp_name` (given the file's).
    fn write_with(
        &self,
        dir: &Path,
        tmp_name: &mut dyn FnMut(&str) -> String,
    ) -> Result<Vec<PathBuf>, DumpError> {
        std::fs::create_dir_all(dir).map_err(|source| DumpError {
            path: dir.to_owned(),
            source,
        })?;
        let mut written = Vec::with_capacity(6);
        for (name, text) in self.files() {
            written.push(write_file(dir, name, text, tmp_name)?);
        }
        // The renames are in the directory: without this a crash could bring back
        // the old files (best effort: not every file system syncs a directory).
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(written)
    }
}

/// Writes `text` to `dir/name` (see [`Dumps::write_to`]).
fn write_file(
    dir: &Path,
    name: &str,
    text: &str,
    tmp_name: &mut dyn FnMut(&str) -> String,
) -> Result<PathBuf, DumpError> {
    let path = dir.join(name);
    crate::persist::write_atomic_with(&path, text.as_bytes(), tmp_name)
        .map(|()| path)
        .map_err(|e| DumpError {
            path: e.path,
            source: e.source,
        })
}

/// One `opensm-lfts.dump`: every switch's unicast table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LftDump {
    /// The switches, in file order.
    pub switches: Vec<SwitchLft>,
}

/// One switch's section: `Unicast lids [0-TOP] of switch Lid L guid 0xG ('desc'):`, its
/// routes, `TOP lids dumped`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchLft {
    /// Node GUID.
    pub guid: u64,
    /// The switch's own (port 0) LID.
    pub lid: u16,
    /// NodeDescription.
    pub desc: String,
    /// The highest LID the table covers (LinearFDBTop).
    pub top: u16,
    /// The LIDs that have an output port, ascending.
    pub routes: Vec<LftRoute>,
}

/// One route line: `0xLLLL PPP # <type> portguid 0xG: 'desc'`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LftRoute {
    /// Destination LID.
    pub lid: u16,
    /// Output port (0: the switch itself).
    pub port: u8,
    /// Who owns the LID (`None`: `unknown node and type`).
    pub dest: Option<LftDest>,
}

/// The owner of a destination LID, as the comment of a route line names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LftDest {
    /// OpenSM's node type text: `Channel Adapter`, `Switch`, `Router`.
    pub node_type: String,
    /// The port's GUID (what OpenSM's `file` engine matches LIDs by).
    pub port_guid: u64,
    /// Its node's description.
    pub desc: String,
}

impl SwitchLft {
    /// LID -> output port.
    #[must_use]
    pub fn ports(&self) -> BTreeMap<u16, u8> {
        self.routes.iter().map(|r| (r.lid, r.port)).collect()
    }
}

/// What is wrong with a line of an `opensm-lfts.dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LftErrorKind {
    /// A `Unicast lids` line that is not `Unicast lids [0-TOP] of switch Lid L guid 0xG ('desc'):`.
    #[error(
        "bad switch header, expected `Unicast lids [0-TOP] of switch Lid L guid 0xG ('desc'):`"
    )]
    BadHeader,
    /// A number that does not parse (or does not fit).
    #[error("bad number")]
    BadNumber,
    /// A route line before any switch header (or after its `lids dumped`).
    #[error("route outside a switch section")]
    RouteOutsideSwitch,
    /// A route's LID above the section's TOP.
    #[error("LID above the switch's top LID {top}")]
    LidAboveTop {
        /// The section's TOP.
        top: u16,
    },
    /// A route's LID not above the previous one.
    #[error("LID not above the previous route's")]
    LidOutOfOrder,
    /// A route comment that is neither `<type> portguid 0xG: 'desc'` nor `unknown node and type`.
    #[error("bad route comment, expected `<type> portguid 0xG: 'desc'` or `unknown node and type`")]
    BadComment,
    /// `N lids dumped` with N other than the section's TOP.
    #[error("count differs from the switch's top LID {top}")]
    CountMismatch {
        /// The section's TOP.
        top: u16,
    },
    /// A switch section without its `N lids dumped` line.
    #[error("switch section not closed by `N lids dumped`")]
    Unterminated,
    /// A line that is none of the above.
    #[error("unrecognised line")]
    UnknownLine,
}

/// A line of an `opensm-lfts.dump` the reader refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}: {token:?}")]
pub struct LftParseError {
    /// 1-based line number.
    pub line: usize,
    /// The offending text (the token, or the whole line).
    pub token: String,
    /// What is wrong.
    pub kind: LftErrorKind,
}

fn hex_u64(s: &str) -> Option<u64> {
    // from_str_radix takes a sign; the dumps never have one.
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn dec<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Splits `s` at the end of its leading hex digits.
fn take_hex(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(s.len());
    s.split_at(end)
}

impl LftDump {
    /// The tables `sm` wrote, with every LID's owner from its LID assignments and the
    /// subnet of its last heavy sweep; switches by GUID.
    #[must_use]
    pub fn of(sm: &SubnetManager) -> Self {
        let subnet = sm.subnet();
        let top = sm
            .lids()
            .values()
            .map(|&(l, m)| l.saturating_add((1 << m) - 1))
            .max()
            .unwrap_or(0);
        // LID -> owner, as the route comments name it.
        let mut owner: BTreeMap<u16, LftDest> = BTreeMap::new();
        let port_owner = port_owners(subnet);
        for (&guid, &(base, lmc)) in sm.lids() {
            let Some(node) = port_owner.get(&guid) else {
                continue;
            };
            let dest = LftDest {
                node_type: node_type_str(node).to_owned(),
                port_guid: guid,
                desc: print_desc(&node.description),
            };
            for lid in base..=base.saturating_add((1 << lmc) - 1) {
                owner.insert(lid, dest.clone());
            }
        }
        let mut switches: Vec<&FoundNode> = subnet.nodes.iter().filter(|n| n.is_switch()).collect();
        switches.sort_by_key(|n| n.info.node_guid);
        let mut out = Vec::with_capacity(switches.len());
        for node in switches {
            let guid = node.info.node_guid;
            let Some(lft) = sm.programmed_lft(guid) else {
                continue;
            };
            let routes = (0..=top)
                .filter_map(|lid| {
                    let port = *lft.get(usize::from(lid))?;
                    (port <= node.info.num_ports).then(|| LftRoute {
                        lid,
                        port,
                        dest: owner.get(&lid).cloned(),
                    })
                })
                .collect();
            out.push(SwitchLft {
                guid,
                lid: sm.lids().get(&guid).map_or(0, |l| l.0),
                desc: print_desc(&node.description),
                top,
                routes,
            });
        }
        Self { switches: out }
    }

    /// Reads `opensm-lfts.dump` text (ours or OpenSM's). Blank lines and lines starting
    /// with `#` are skipped; whitespace at either end of a line is ignored.
    ///
    /// # Errors
    /// [`LftParseError`] naming the line, the offending text and what is wrong.
    pub fn parse(text: &str) -> Result<Self, LftParseError> {
        let mut switches = Vec::new();
        // The open section and its header's line number.
        let mut open: Option<(SwitchLft, usize)> = None;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            let err = |kind, token: &str| LftParseError {
                line: n,
                token: token.to_owned(),
                kind,
            };
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.starts_with("Unicast lids") {
                if let Some((_, at)) = open {
                    return Err(LftParseError {
                        line: at,
                        token: String::new(),
                        kind: LftErrorKind::Unterminated,
                    });
                }
                let sw = parse_header(line).map_err(|kind| err(kind, line))?;
                open = Some((sw, n));
            } else if let Some(rest) = line.strip_prefix("0x") {
                let Some((sw, _)) = open.as_mut() else {
                    return Err(err(LftErrorKind::RouteOutsideSwitch, line));
                };
                let route = parse_route(rest).map_err(|(kind, tok)| err(kind, tok))?;
                if route.lid > sw.top {
                    let top = sw.top;
                    return Err(err(LftErrorKind::LidAboveTop { top }, line));
                }
                if sw.routes.last().is_some_and(|r| r.lid >= route.lid) {
                    return Err(err(LftErrorKind::LidOutOfOrder, line));
                }
                sw.routes.push(route);
            } else if let Some(count) = line.strip_suffix(" lids dumped") {
                let Some((sw, _)) = open.take() else {
                    return Err(err(LftErrorKind::RouteOutsideSwitch, line));
                };
                let count: u16 =
                    dec(count.trim()).ok_or_else(|| err(LftErrorKind::BadNumber, count))?;
                if count != sw.top {
                    let top = sw.top;
                    return Err(err(LftErrorKind::CountMismatch { top }, line));
                }
                switches.push(sw);
            } else {
                return Err(err(LftErrorKind::UnknownLine, line));
            }
        }
        if let Some((_, at)) = open {
            return Err(LftParseError {
                line: at,
                token: String::new(),
                kind: LftErrorKind::Unterminated,
            });
        }
        Ok(Self { switches })
    }
}

fn parse_header(line: &str) -> Result<SwitchLft, LftErrorKind> {
    let bad = LftErrorKind::BadHeader;
    let rest = line.strip_prefix("Unicast lids [0-").ok_or(bad)?;
    let (top, rest) = rest.split_once(']').ok_or(bad)?;
    let top = dec(top).ok_or(LftErrorKind::BadNumber)?;
    let rest = rest.strip_prefix(" of switch Lid ").ok_or(bad)?;
    let (lid, rest) = rest.split_once(' ').ok_or(bad)?;
    let lid = dec(lid).ok_or(LftErrorKind::BadNumber)?;
    let rest = rest.strip_prefix("guid 0x").ok_or(bad)?;
    let (guid, rest) = take_hex(rest);
    let guid = hex_u64(guid).ok_or(LftErrorKind::BadNumber)?;
    let desc = rest
        .strip_prefix(" ('")
        .and_then(|r| r.strip_suffix("'):"))
        .ok_or(bad)?;
    Ok(SwitchLft {
        guid,
        lid,
        desc: desc.to_owned(),
        top,
        routes: Vec::new(),
    })
}

/// A route line after its `0x`.
fn parse_route(rest: &str) -> Result<LftRoute, (LftErrorKind, &str)> {
    let (lid, rest) = take_hex(rest);
    let lid = u16::try_from(hex_u64(lid).unwrap_or(u64::MAX))
        .map_err(|_| (LftErrorKind::BadNumber, lid))?;
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (port, rest) = rest.split_at(end);
    let port = dec(port).ok_or((LftErrorKind::BadNumber, port))?;
    let rest = rest.trim_start();
    let dest = if rest.is_empty() {
        None
    } else {
        let comment = rest
            .strip_prefix('#')
            .ok_or((LftErrorKind::BadComment, rest))?;
        parse_dest(comment).ok_or((LftErrorKind::BadComment, comment))?
    };
    Ok(LftRoute { lid, port, dest })
}

/// `<type> portguid 0xG: 'desc'` or `unknown node and type` (`Some(None)`).
fn parse_dest(comment: &str) -> Option<Option<LftDest>> {
    if comment.trim() == "unknown node and type" {
        return Some(None);
    }
    let at = comment.find("portguid 0x")?;
    let node_type = comment[..at].trim().to_owned();
    let (guid, rest) = take_hex(&comment[at + "portguid 0x".len()..]);
    let port_guid = hex_u64(guid)?;
    let desc = rest.strip_prefix(": '")?.strip_suffix('\'')?;
    Some(Some(LftDest {
        node_type,
        port_guid,
        desc: desc.to_owned(),
    }))
}

impl fmt::Display for LftDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for sw in &self.switches {
            writeln!(
                f,
                "Unicast lids [0-{}] of switch Lid {} guid 0x{:016x} ('{}'):",
                sw.top, sw.lid, sw.guid, sw.desc
            )?;
            for r in &sw.routes {
                write!(f, "0x{:04x} {:03} # ", r.lid, r.port)?;
                match &r.dest {
                    Some(d) => writeln!(
                        f,
                        "{} portguid 0x{:016x}: '{}'",
                        d.node_type, d.port_guid, d.desc
                    )?,
                    None => writeln!(f, "unknown node and type")?,
                }
            }
            writeln!(f, "{} lids dumped", sw.top)?;
        }
        Ok(())
    }
}

/// Port GUID -> its node (switches: the node GUID, which is port 0's).
fn port_owners(subnet: &Discovered) -> BTreeMap<u64, &FoundNode> {
    let mut m = BTreeMap::new();
    for node in &subnet.nodes {
        if node.is_switch() {
            m.insert(node.info.node_guid, node);
        } else {
            for p in node.ports.iter().skip(1).filter(|p| p.guid != 0) {
                m.insert(p.guid, node);
            }
        }
    }
    m
}

/// OpenSM's node type names (`ib_get_node_type_str`).
fn node_type_str(node: &FoundNode) -> &'static str {
    match node.info.node_type {
        NodeType::Ca => "Channel Adapter",
        NodeType::Switch => "Switch",
        NodeType::Router => "Router",
        _ => "UNKNOWN",
    }
}

/// A NodeDescription fit for one line of a dump: control characters (a broken SMA's
/// newline would start a new line) become spaces.
fn print_desc(desc: &str) -> String {
    desc.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn short_type(node: &FoundNode) -> &'static str {
    match node.info.node_type {
        NodeType::Switch => "SW",
        NodeType::Ca => "CA",
        NodeType::Router => "Rt",
        _ => "**",
    }
}

/// `slurm-topology.conf` of the subnet the last heavy sweep found, each node named by
/// its NodeDescription (a CA by its first word); a subnet whose answers contradict
/// each other is a comment saying so.
fn slurm_topology(subnet: &Discovered) -> String {
    match subnet.to_fabric() {
        Ok(f) => ibsm_topology::slurm::tree_topology(&f, |_, n| n.description.clone()),
        Err(e) => format!("# no topology: the discovered subnet contradicts itself: {e}\n"),
    }
}

/// `opensm-subnet.lst`: for every node (by GUID) and every cabled port, `{ this end }
/// { far end } PHY=width LOG=state SPD=speed`, each end's LID that of its port (a
/// switch's port 0), `-SM` after the type where that port is the master SM's.
fn subnet_lst(subnet: &Discovered) -> String {
    let mut nodes: Vec<&FoundNode> = subnet.nodes.iter().collect();
    nodes.sort_by_key(|n| n.info.node_guid);
    let mut s = String::new();
    for node in nodes {
        for (p, port) in node.ports.iter().enumerate().skip(1) {
            let Some((rn, rp)) = port.peer else {
                continue;
            };
            let Some(remote) = subnet.nodes.get(rn) else {
                continue;
            };
            end(&mut s, node, p as u8, 6);
            end(&mut s, remote, rp, 8);
            let info = port.info.unwrap_or_default();
            let width = match info.link_width_active {
                LinkWidth::X1 => "1x",
                LinkWidth::X4 => "4x",
                LinkWidth::X8 => "8x",
                LinkWidth::X12 => "12x",
                _ => "??",
            };
            let state = match info.port_state {
                PortState::Active => "ACT",
                PortState::Armed => "ARM",
                PortState::Init => "INI",
                _ => "DWN",
            };
            let mut speed = match info.link_speed_active {
                LinkSpeed::Sdr => "2.5",
                LinkSpeed::Ddr => "5",
                LinkSpeed::Qdr => "10",
                _ => "??",
            };
            let ext = lid_port(node, p as u8).is_some_and(|i| {
                i.capability_mask
                    .contains(ibsm_wire::CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED)
            });
            if ext {
                speed = match info.link_speed_ext_active {
                    LinkSpeedExt::None => speed,
                    LinkSpeedExt::Fdr => "14",
                    LinkSpeedExt::Edr => "25",
                    _ => "??",
                };
            }
            let _ = writeln!(s, "PHY={width} LOG={state} SPD={speed}");
        }
    }
    s
}

/// The PortInfo that holds the LID of `port` (a switch's port 0).
fn lid_port(node: &FoundNode, port: u8) -> Option<ibsm_wire::PortInfo> {
    let p = if node.is_switch() { 0 } else { port };
    node.ports.get(usize::from(p))?.info
}

/// One `{ ... }` end of a cable; `ven_width` is 6 for the near end, 8 for the far end
/// (as OpenSM prints them).
fn end(s: &mut String, node: &FoundNode, port: u8, ven_width: usize) {
    let info = lid_port(node, port).unwrap_or_default();
    let sm = if info.lid != 0 && info.lid == info.master_sm_lid {
        "-SM"
    } else {
        ""
    };
    let port_guid = node.ports.get(usize::from(port)).map_or(0, |p| p.guid);
    let i = &node.info;
    let _ = write!(
        s,
        "{{ {}{sm} Ports:{:02X} SystemGUID:{:016x} NodeGUID:{:016x} PortGUID:{port_guid:016x} VenID:{:0ven_width$X} DevID:{:04X} Rev:{:08X} {{{}}} LID:{:04X} PN:{port:02X} }} ",
        short_type(node),
        i.num_ports,
        i.system_image_guid,
        i.node_guid,
        i.vendor_id,
        i.device_id,
        i.revision,
        print_desc(&node.description),
        info.lid,
    );
}

/// The multicast tables in OpenSM's `opensm.mcfdbs` layout: per switch with any entry,
/// `Switch 0xG`, `LID    : Out Port(s)`, then `0xMLID : 0xPPP  0xPPP ...` lines.
fn mfts_dump(ports: &[(u64, u16, Vec<u8>)]) -> String {
    let mut s = String::new();
    let mut current = None;
    for (sw, mlid, out) in ports {
        if current != Some(*sw) {
            let _ = write!(s, "\nSwitch 0x{sw:016x}\nLID    : Out Port(s)\n");
            current = Some(*sw);
        }
        let _ = write!(s, "0x{mlid:04X} :");
        for p in out {
            let _ = write!(s, " 0x{p:03X} ");
        }
        s.push('\n');
    }
    s
}

/// The SL -> VL maps written, in OpenSM's `opensm-sl2vl.dump` layout: per switch (by
/// GUID) with any, a header, then `in out : vl0 .. vl15` rows for every output port
/// written and the input ports the SM set for it (0 and every cabled one).
fn sl2vl_dump(sm: &SubnetManager) -> String {
    let subnet = sm.subnet();
    let mut nodes: Vec<&FoundNode> = subnet.nodes.iter().filter(|n| n.is_switch()).collect();
    nodes.sort_by_key(|n| n.info.node_guid);
    let mut s = String::new();
    for node in nodes {
        let guid = node.info.node_guid;
        let maps = sm.programmed_sl2vl(guid);
        if maps.is_empty() {
            continue;
        }
        let lid = sm.lids().get(&guid).map_or(0, |l| l.0);
        let _ = writeln!(
            s,
            "Switch 0x{guid:016x}, base LID {lid}, \"{}\"",
            print_desc(&node.description)
        );
        s.push_str("#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n");
        s.push_str("#--------------------------------------------------------\n");
        let inputs: Vec<u8> = (0..=node.info.num_ports)
            .filter(|&i| {
                i == 0
                    || node
                        .ports
                        .get(usize::from(i))
                        .is_some_and(|p| p.peer.is_some())
            })
            .collect();
        for (out, vls) in maps {
            for &inp in &inputs {
                let _ = write!(s, "{inp:<3} {out:<3} :");
                for vl in vls {
                    let _ = write!(s, " {vl:<2}");
                }
                s.push('\n');
            }
        }
        s.push_str("#--------------------------------------------------------\n\n");
    }
    if s.is_empty() {
        s.push_str("# no SL2VL maps written: the routing engine uses one VL\n");
    }
    s
}

#[cfg(test)]
mod tests;
