// Over 800 lines: reader, writer and `-p` report of one format share its token helpers.
//! The `ibnetdiscover` topology file format, and the ibsim net-file dialect of it.
//!
//! # What is read
//!
//! One parser reads both dialects (ibsim itself reads both with one parser):
//!
//! * **`ibnetdiscover` output**: attribute lines (`vendid=`, `devid=`, `sysimgguid=`,
//!   `switchguid=0x..(portguid)`, `caguid=`, `routerguid=`) that belong to the next node
//!   header; a header `Switch 36 "S-<guid>"  # "<description>" enhanced port 0 lid 3 lmc 0`
//!   (types `Switch`, `Ca`, `Rt`); port lines
//!   `[1](portguid)  "S-<guid>"[12](remote portguid)  # lid 5 lmc 0 "<remote description>" lid 3 4xEDR`.
//!   GUIDs come from the attribute lines, or else from an `S-`/`H-`/`R-` name; LIDs,
//!   LMC, width and speed from the comments. The variants `-f` (extra `s= w= v=` in
//!   comments), `-g` (chassis headings) and `-s` (discovery steps on stdout) read too.
//! * **ibsim net files** (`/usr/share/doc/ibsim-utils/net-examples/`): `Switch 8 "Switch1"`
//!   or `Hca 2 "Hca1"` headers with free names, `[1] "Hca1"[1] w=4` port lines (`w=` lane
//!   count), and the `include <file>` / `do <command>` extensions, which are skipped with a
//!   [`Note`]. Nodes without a GUID get one the way ibsim assigns them: switches
//!   `0x200000, 0x200001, ...`, CAs `0x100000` upwards with `1 + ports` GUIDs each (node, then
//!   ports), routers `0x300000` upwards, in file order, skipping GUIDs taken explicitly.
//!   The description is then the name.
//!
//! Each cable may be listed at one end or both; when both ends are listed they must agree.
//!
//! # Errors
//!
//! Every [`ParseError`] carries the 1-based line and a [`ParseErrorKind`]: unknown node
//! type, duplicate name or GUID, port out of range (local or remote), a port listed twice,
//! a link whose ends disagree (naming the other line), a link to an undeclared node, a
//! self-loop, a truncated line, a bad number. The parser never panics (fuzzed in
//! `fuzz/fuzz_targets/topology_parse.rs`).
//!
//! # What is written
//!
//! [`write()`] with [`Dialect::Ibnetdiscover`] produces the format `ibnetdiscover` prints
//! (switches, then CAs, then routers, each in GUID order), which ibsim loads with the
//! same GUIDs, descriptions and cables and which [`parse`] reads back to the same
//! fabric. [`Dialect::IbsimNet`] produces the short ibsim form with descriptions as names.
//!
//! ibsim's default limits are 2,048 nodes, 256 switches and 13,312 ports; load larger
//! files with `ibsim -N <nodes> -S <switches> -P <ports>`.
//!
//! ```
//! use ibsm_topology::{generate, ibnet};
//! let fabric = generate::k_ary_n_tree(2, 2)?;
//! let text = ibnet::write(&fabric, &ibnet::WriteOptions::default())?;
//! let back = ibnet::parse(&text)?.fabric;
//! assert_eq!(back.node_count(), fabric.node_count());
//! assert_eq!(back.link_count(), fabric.link_count());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::error::{FabricError, ParseError, ParseErrorKind};
use crate::fabric::{Fabric, MAX_PORTS, NodeSpec};
use crate::types::{ActiveSpeed, ActiveWidth, Guid, NodeId, NodeKind, PortNum};

/// Something the parser skipped or assumed, with its line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// 1-based line number.
    pub line: usize,
    /// What happened.
    pub message: String,
}

/// A parsed file: the fabric and the notes.
#[derive(Clone, Debug)]
pub struct Parsed {
    /// The fabric.
    pub fabric: Fabric,
    /// Skipped lines (`include`, `do`, unknown `key=value` options) and assumptions.
    pub notes: Vec<Note>,
}

/// Reading a file failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The contents are not a valid topology.
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// Reads and parses a topology file; errors name the file.
///
/// # Errors
/// [`LoadError::Io`] if it cannot be read, [`LoadError::Parse`] with file and line.
pub fn read_file(path: impl AsRef<Path>) -> Result<Parsed, LoadError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })?;
    parse(&text).map_err(|mut e| {
        e.file = Some(path.display().to_string());
        LoadError::Parse(e)
    })
}

/// Which flavour [`write()`] produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Dialect {
    /// Full `ibnetdiscover` output: GUID lines, `S-<guid>` names, LIDs and link
    /// width/speed in comments.
    #[default]
    Ibnetdiscover,
    /// ibsim's short form: descriptions as names, `w=` widths, no GUIDs (ibsim assigns
    /// its own). Needs unique descriptions without `"`.
    IbsimNet,
}

/// Options for [`write()`].
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Output flavour.
    pub dialect: Dialect,
    /// A first comment line (e.g. what generated the file); none when `None`.
    pub title: Option<String>,
}

/// Writing failed: the fabric cannot be expressed in the chosen dialect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// [`Dialect::IbsimNet`] needs unique descriptions without `"`.
    #[error("node {guid}: description {description:?} is empty, repeated or contains '\"'")]
    BadName {
        /// The node.
        guid: Guid,
        /// Its description.
        description: String,
    },
}

// ---------------------------------------------------------------- reading

/// A small multiplicative hasher (the FxHash scheme) for the parser's name and GUID
/// maps: file contents are not adversarial to a local tool, and SipHash dominated the
/// parse profile.
#[derive(Default, Clone, Copy)]
struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        let mut w = [0u8; 8];
        let rest = chunks.remainder();
        w[..rest.len()].copy_from_slice(rest);
        self.write_u64(u64::from_le_bytes(w) ^ (rest.len() as u64) << 56);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// Byte searches that beat `str::find` on the short strings of a topology line (the
/// generic memchr path costs more to set up than the scan).
trait FindByte {
    fn find_byte(&self, b: u8) -> Option<usize>;
    fn rfind_byte(&self, b: u8) -> Option<usize>;
}

impl FindByte for str {
    fn find_byte(&self, b: u8) -> Option<usize> {
        self.as_bytes().iter().position(|&c| c == b)
    }

    fn rfind_byte(&self, b: u8) -> Option<usize> {
        self.as_bytes().iter().rposition(|&c| c == b)
    }
}

/// The lines of `text` (split at `\n`; a `\r` before it is trimmed with the other
/// whitespace). A plain byte loop: lines are short, and `str::lines` spends more setting
/// up its memchr than scanning.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let end = bytes[start..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(bytes.len(), |p| start + p);
        // Splitting at an ASCII byte keeps both halves valid UTF-8.
        let line = text.get(start..end).unwrap_or("");
        start = end + 1;
        Some(line)
    })
}

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;

#[derive(Default)]
struct Pending {
    vendid: Option<u32>,
    devid: Option<u16>,
    sysimg: Option<u64>,
    guid: Option<u64>,
}

struct Record<'a> {
    line: usize,
    name: &'a str,
    node_type: NodeKind,
    ports: PortNum,
    description: Option<&'a str>,
    guid: Option<u64>,
    sysimg: Option<u64>,
    vendid: u32,
    devid: u16,
    lid: u16,
    lmc: u8,
    /// A switch header's `enhanced port 0` (rather than `base port 0`).
    enhanced: bool,
    /// Port GUIDs (CAs/routers) from `[p](guid)`, filled lazily.
    port_guids: Vec<u64>,
    /// Per-port LID/LMC from CA port comments, filled lazily.
    port_lids: Vec<(u16, u8)>,
}

struct Decl<'a> {
    line: usize,
    node: u32,
    port: PortNum,
    remote: &'a str,
    remote_port: u32,
    width: ActiveWidth,
    speed: ActiveSpeed,
}

fn err(line: usize, kind: ParseErrorKind) -> ParseError {
    ParseError {
        file: None,
        line,
        kind,
    }
}

fn trunc(line: usize, what: &str) -> ParseError {
    err(line, ParseErrorKind::Truncated(what.to_owned()))
}

fn parse_u64(s: &str, line: usize) -> Result<u64, ParseError> {
    let bad = || err(line, ParseErrorKind::BadNumber(s.to_owned()));
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() {
        return Err(bad());
    }
    u64::from_str_radix(digits, radix).map_err(|_| bad())
}

fn parse_hex(s: &str, line: usize) -> Result<u64, ParseError> {
    let d = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if d.is_empty() || d.len() > 16 {
        return Err(err(line, ParseErrorKind::BadNumber(s.to_owned())));
    }
    let mut v = 0u64;
    for &c in d.as_bytes() {
        let digit = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Err(err(line, ParseErrorKind::BadNumber(s.to_owned()))),
        };
        v = (v << 4) | u64::from(digit);
    }
    Ok(v)
}

fn parse_dec(s: &str, line: usize) -> Result<u32, ParseError> {
    s.parse::<u32>()
        .map_err(|_| err(line, ParseErrorKind::BadNumber(s.to_owned())))
}

/// `"name"` at the start of `s` (after whitespace): (name, rest).
fn quoted(s: &str, line: usize) -> Result<(&str, &str), ParseError> {
    let s = s.trim_start();
    let body = s
        .strip_prefix('"')
        .ok_or_else(|| trunc(line, "expected a quoted name"))?;
    let end = body
        .find_byte(b'"')
        .ok_or_else(|| trunc(line, "missing closing quote"))?;
    Ok((&body[..end], &body[end + 1..]))
}

/// `[n]` at the start of `s`: (n, rest).
fn bracket(s: &str, line: usize) -> Result<(u32, &str), ParseError> {
    let body = s
        .strip_prefix('[')
        .ok_or_else(|| trunc(line, "expected '[port]'"))?;
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    let start = i;
    while i < b.len() && b[i].is_ascii_alphanumeric() {
        i += 1;
    }
    let end = i;
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    if i >= b.len() || b[i] != b']' {
        // `[1 "b"[1]` or `[1`: the bracket was never closed.
        return Err(trunc(line, "missing ']'"));
    }
    Ok((parse_dec(&body[start..end], line)?, &body[i + 1..]))
}

/// Optional `(hexguid)` at the start of `s`.
fn paren_guid(s: &str, line: usize) -> Result<(Option<u64>, &str), ParseError> {
    match s.strip_prefix('(') {
        None => Ok((None, s)),
        Some(body) => {
            let end = body
                .find_byte(b')')
                .ok_or_else(|| trunc(line, "missing ')'"))?;
            Ok((Some(parse_hex(body[..end].trim(), line)?), &body[end + 1..]))
        }
    }
}

/// Skips an `[ext N]` annotation (Mellanox extended port numbers).
fn skip_ext(s: &str) -> &str {
    let t = s.trim_start();
    if let Some(body) = t.strip_prefix("[ext")
        && let Some(end) = body.find(']')
    {
        return &body[end + 1..];
    }
    s
}

/// `4xEDR` -> (X4, Edr).
fn width_speed(tok: &str) -> Option<(ActiveWidth, ActiveSpeed)> {
    let x = tok.find_byte(b'x')?;
    let lanes: u32 = tok[..x].parse().ok()?;
    Some((
        ActiveWidth::from_lanes(lanes)?,
        ActiveSpeed::from_name(&tok[x + 1..])?,
    ))
}

/// From a comment's `lid N lmc M` tokens.
fn lid_lmc(tokens: &str) -> (Option<u16>, Option<u8>) {
    let mut lid = None;
    let mut lmc = None;
    let mut it = tokens.split_ascii_whitespace();
    while let Some(t) = it.next() {
        match t {
            "lid" => lid = it.next().and_then(|v| v.parse().ok()),
            "lmc" => lmc = it.next().and_then(|v| v.parse().ok()),
            _ => {}
        }
    }
    (lid, lmc)
}

/// Splits a comment `pre "quoted" post` using the first and last quote (descriptions may
/// contain anything but are printed raw).
fn split_comment(c: &str) -> (&str, Option<&str>, &str) {
    match (c.find_byte(b'"'), c.rfind_byte(b'"')) {
        (Some(a), Some(b)) if b > a => (&c[..a], Some(&c[a + 1..b]), &c[b + 1..]),
        _ => (c, None, ""),
    }
}

fn node_type_of(word: &str) -> Option<NodeKind> {
    match word {
        "Switch" => Some(NodeKind::Switch),
        "Ca" | "Hca" | "CA" => Some(NodeKind::Ca),
        "Rt" | "Router" => Some(NodeKind::Router),
        _ => None,
    }
}

fn guid_from_name(name: &str) -> Option<u64> {
    let (prefix, hex) = name.split_at_checked(2)?;
    if matches!(prefix, "S-" | "H-" | "R-") && !hex.is_empty() && hex.len() <= 16 {
        u64::from_str_radix(hex, 16).ok()
    } else {
        None
    }
}

/// Parses a topology in either dialect; see the [module docs](self).
///
/// # Errors
/// A [`ParseError`] naming the line and the reason.
pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let mut notes = Vec::new();
    let mut records: Vec<Record<'_>> = Vec::new();
    let mut decls: Vec<Decl<'_>> = Vec::new();
    let mut by_name: FastMap<&str, u32> = FastMap::default();
    let mut pending = Pending::default();
    // Ports seen in the current record, to catch duplicates cheaply.
    let mut seen_ports = [false; 256];

    for (i, raw) in lines(text).enumerate() {
        let line = i + 1;
        let l = raw.trim_ascii();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if l.starts_with('[') {
            let rec_idx = records
                .len()
                .checked_sub(1)
                .ok_or_else(|| err(line, ParseErrorKind::PortOutsideNode))?;
            let (lport, rest) = bracket(l, line)?;
            let rec = &mut records[rec_idx];
            if lport == 0 || lport > u32::from(rec.ports) {
                return Err(err(
                    line,
                    ParseErrorKind::PortOutOfRange {
                        node: rec.name.to_owned(),
                        port: lport,
                        num_ports: u32::from(rec.ports),
                    },
                ));
            }
            let lport = lport as PortNum;
            if std::mem::replace(&mut seen_ports[usize::from(lport)], true) {
                return Err(err(line, ParseErrorKind::DuplicatePort(u32::from(lport))));
            }
            let (lguid, rest) = paren_guid(rest, line)?;
            let rest = skip_ext(rest);
            if let Some(g) = lguid {
                if rec.port_guids.is_empty() {
                    rec.port_guids = vec![0; usize::from(rec.ports) + 1];
                }
                rec.port_guids[usize::from(lport)] = g;
            }
            let (remote, rest) = quoted(rest, line)?;
            let (rport, rest) = bracket(rest.trim_start(), line)?;
            let (_rguid, rest) = paren_guid(rest, line)?;
            let rest = skip_ext(rest);
            // Only now look for the comment: names may contain '#'.
            let (rest, comment) = match rest.find_byte(b'#') {
                Some(h) => (&rest[..h], Some(&rest[h + 1..])),
                None => (rest, None),
            };
            let mut width = ActiveWidth::Unknown;
            let mut speed = ActiveSpeed::Unknown;
            for tok in rest.split_ascii_whitespace() {
                if let Some(w) = tok.strip_prefix("w=") {
                    width = ActiveWidth::from_lanes(parse_dec(w, line)?)
                        .ok_or_else(|| err(line, ParseErrorKind::BadNumber(tok.to_owned())))?;
                } else {
                    notes.push(Note {
                        line,
                        message: format!("ignored port option {tok:?}"),
                    });
                }
            }
            if let Some(c) = comment {
                let (pre, _desc, post) = split_comment(c);
                if rec.node_type != NodeKind::Switch {
                    let (lid, lmc) = lid_lmc(pre);
                    if lid.is_some() || lmc.is_some() {
                        if rec.port_lids.is_empty() {
                            rec.port_lids = vec![(0, 0); usize::from(rec.ports) + 1];
                        }
                        rec.port_lids[usize::from(lport)] = (lid.unwrap_or(0), lmc.unwrap_or(0));
                    }
                }
                if let Some((w, s)) = post.split_ascii_whitespace().find_map(width_speed) {
                    width = w;
                    speed = s;
                }
            }
            decls.push(Decl {
                line,
                node: rec_idx as u32,
                port: lport,
                remote,
                remote_port: rport,
                width,
                speed,
            });
            continue;
        }
        // The ibsim extensions: each `keyword [argument]` is noted, not followed.
        let skipped = [
            ("include", "skipped include of"),
            ("do", "skipped ibsim command"),
        ]
        .into_iter()
        .find_map(|(keyword, what)| {
            let rest = l.strip_prefix(keyword)?;
            (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| (what, rest.trim()))
        });
        if let Some((what, argument)) = skipped {
            notes.push(Note {
                line,
                message: format!("{what} {argument:?}"),
            });
            continue;
        }
        if let Some((key, value)) = l.split_once('=')
            && !key.contains(char::is_whitespace)
        {
            let value = value.trim();
            match key {
                "vendid" => pending.vendid = Some(parse_u64(value, line)? as u32 & 0xff_ffff),
                "devid" => pending.devid = Some(parse_u64(value, line)? as u16),
                "sysimgguid" => pending.sysimg = Some(parse_hex(value, line)?),
                "switchguid" | "caguid" | "routerguid" => {
                    let (g, rest) = match value.find('(') {
                        Some(p) => (&value[..p], &value[p..]),
                        None => (value, ""),
                    };
                    pending.guid = Some(parse_hex(g.trim(), line)?);
                    // Validated but not kept: a switch's port GUID is its node GUID here.
                    paren_guid(rest, line)?;
                }
                _ => notes.push(Note {
                    line,
                    message: format!("ignored attribute {key:?}"),
                }),
            }
            continue;
        }
        // A node header.
        let mut words = l.splitn(2, char::is_whitespace);
        let word = words.next().unwrap_or("");
        let Some(node_type) = node_type_of(word) else {
            // `ibnetdiscover -g` groups nodes under chassis headings, and `-s` prints
            // its discovery steps on stdout: neither describes the fabric.
            if l == "Non-Chassis Nodes" || l.contains("Chassis") || l.starts_with("DR path") {
                notes.push(Note {
                    line,
                    message: format!("skipped {l:?}"),
                });
                continue;
            }
            return Err(err(line, ParseErrorKind::UnknownNodeType(word.to_owned())));
        };
        let rest = words.next().unwrap_or("").trim_start();
        let count_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if count_end == 0 {
            return Err(if rest.is_empty() {
                trunc(line, "node header without port count and name")
            } else {
                err(
                    line,
                    ParseErrorKind::BadPortCount(
                        rest.split_whitespace().next().unwrap_or("").to_owned(),
                    ),
                )
            });
        }
        let ports = rest[..count_end]
            .parse::<u32>()
            .ok()
            .filter(|&n| (1..=u32::from(MAX_PORTS)).contains(&n))
            .ok_or_else(|| {
                err(
                    line,
                    ParseErrorKind::BadPortCount(rest[..count_end].to_owned()),
                )
            })? as PortNum;
        let (name, tail) = quoted(&rest[count_end..], line)?;
        let mut description = None;
        let mut lid = 0;
        let mut lmc = 0;
        let mut enhanced = false;
        if let Some(h) = tail.find_byte(b'#') {
            let (_, desc, post) = split_comment(&tail[h + 1..]);
            description = desc;
            enhanced = post.contains("enhanced port 0");
            let (l2, m2) = lid_lmc(post);
            lid = l2.unwrap_or(0);
            lmc = m2.unwrap_or(0);
        }
        let idx = records.len() as u32;
        if let Some(&first) = by_name.get(name) {
            return Err(err(
                line,
                ParseErrorKind::DuplicateName {
                    name: name.to_owned(),
                    first_line: records[first as usize].line,
                },
            ));
        }
        by_name.insert(name, idx);
        let p = std::mem::take(&mut pending);
        let rec = Record {
            line,
            name,
            node_type,
            ports,
            description,
            guid: p.guid.or_else(|| guid_from_name(name)),
            sysimg: p.sysimg,
            vendid: p.vendid.unwrap_or(0),
            devid: p.devid.unwrap_or(0),
            lid,
            lmc,
            enhanced,
            port_guids: Vec::new(),
            port_lids: Vec::new(),
        };
        records.push(rec);
        seen_ports = [false; 256];
    }

    build(&records, &decls, &by_name, notes)
}

fn build(
    records: &[Record<'_>],
    decls: &[Decl<'_>],
    by_name: &FastMap<&str, u32>,
    notes: Vec<Note>,
) -> Result<Parsed, ParseError> {
    // GUIDs: explicit ones first (checking duplicates), then ibsim-style assignment.
    let mut guid_line: FastMap<u64, usize> =
        FastMap::with_capacity_and_hasher(records.len(), Default::default());
    for r in records {
        if let Some(g) = r.guid {
            if let Some(&first_line) = guid_line.get(&g) {
                return Err(err(
                    r.line,
                    ParseErrorKind::DuplicateGuid {
                        guid: Guid(g),
                        first_line,
                    },
                ));
            }
            guid_line.insert(g, r.line);
        }
    }
    let mut next = [0x10_0000u64, 0x20_0000, 0x30_0000];
    let mut guids = Vec::with_capacity(records.len());
    for r in records {
        let g = match r.guid {
            Some(g) => g,
            None => {
                let slot = match r.node_type {
                    NodeKind::Ca => 0,
                    NodeKind::Switch => 1,
                    NodeKind::Router => 2,
                };
                let span = if r.node_type == NodeKind::Switch {
                    1
                } else {
                    1 + u64::from(r.ports)
                };
                let mut g = next[slot];
                while (0..span).any(|k| guid_line.contains_key(&(g + k))) {
                    g += 1;
                }
                next[slot] = g + span;
                guid_line.insert(g, r.line);
                g
            }
        };
        guids.push(g);
    }

    let link_estimate = decls.len() / 2 + 1;
    let mut fabric = Fabric::with_capacity(records.len(), link_estimate);
    let mut ids: Vec<NodeId> = Vec::with_capacity(records.len());
    for (r, &g) in records.iter().zip(&guids) {
        let mut spec = NodeSpec::new(
            Guid(g),
            r.node_type,
            r.ports,
            r.description.unwrap_or(r.name),
        );
        spec.system_image_guid = Guid(r.sysimg.unwrap_or(0));
        spec.vendor_id = r.vendid;
        spec.device_id = r.devid;
        if !r.port_guids.is_empty() && r.node_type != NodeKind::Switch {
            spec.port_guids = Some(
                (1..=u64::from(r.ports))
                    .map(|p| match r.port_guids[p as usize] {
                        0 => Guid(g.wrapping_add(p)),
                        x => Guid(x),
                    })
                    .collect(),
            );
        }
        let id = fabric
            .add_node(spec)
            .map_err(|e| fabric_err(r.line, e, r.name))?;
        let node = fabric
            .node_mut(id)
            .ok_or_else(|| trunc(r.line, "node vanished"))?;
        if r.node_type == NodeKind::Switch {
            node.enhanced_port0 = r.enhanced;
            if let Some(p0) = node.port_mut(0) {
                p0.lid = r.lid;
                p0.lmc = r.lmc;
            }
        } else {
            for (p, &(lid, lmc)) in r.port_lids.iter().enumerate().skip(1) {
                if let Some(port) = node.port_mut(p as PortNum) {
                    port.lid = lid;
                    port.lmc = lmc;
                }
            }
        }
        ids.push(id);
    }

    // Links: each (node, port) may be claimed by one peer only. Claims live in a dense
    // table indexed by (record, port): base[record] + port.
    const FREE: (u32, PortNum, u32) = (u32::MAX, 0, 0);
    let mut base = Vec::with_capacity(records.len() + 1);
    let mut total = 0usize;
    for r in records {
        base.push(total);
        total += usize::from(r.ports) + 1;
    }
    let mut claims: Vec<(u32, PortNum, u32)> = vec![FREE; total];
    let slot = |n: u32, p: PortNum| base[n as usize] + usize::from(p);
    for d in decls {
        let rec = &records[d.node as usize];
        let &r = by_name
            .get(d.remote)
            .ok_or_else(|| err(d.line, ParseErrorKind::UnknownRemote(d.remote.to_owned())))?;
        let rrec = &records[r as usize];
        if d.remote_port == 0 || d.remote_port > u32::from(rrec.ports) {
            return Err(err(
                d.line,
                ParseErrorKind::PortOutOfRange {
                    node: d.remote.to_owned(),
                    port: d.remote_port,
                    num_ports: u32::from(rrec.ports),
                },
            ));
        }
        if r == d.node {
            return Err(err(d.line, ParseErrorKind::SelfLoop(rec.name.to_owned())));
        }
        let rp = d.remote_port as PortNum;
        let describe = |n: u32, p: PortNum, m: u32, q: PortNum| {
            format!(
                "{:?}[{p}] <-> {:?}[{q}]",
                records[n as usize].name, records[m as usize].name
            )
        };
        let mut is_new = true;
        for (key, want) in [((d.node, d.port), (r, rp)), ((r, rp), (d.node, d.port))] {
            let (n, p, other_line) = claims[slot(key.0, key.1)];
            if n == u32::MAX {
                continue;
            }
            if (n, p) != want {
                return Err(err(
                    d.line,
                    ParseErrorKind::LinkMismatch {
                        this: describe(d.node, d.port, r, rp),
                        other: describe(key.0, key.1, n, p),
                        other_line: other_line as usize,
                    },
                ));
            }
            is_new = false;
        }
        if !is_new {
            continue;
        }
        let line32 = u32::try_from(d.line).unwrap_or(u32::MAX);
        claims[slot(d.node, d.port)] = (r, rp, line32);
        claims[slot(r, rp)] = (d.node, d.port, line32);
        fabric
            .connect(ids[d.node as usize], d.port, ids[r as usize], rp)
            .map_err(|e| fabric_err(d.line, e, rec.name))?;
        for (n, p) in [(d.node, d.port), (r, rp)] {
            if let Some(port) = fabric.node_mut(ids[n as usize]).and_then(|x| x.port_mut(p)) {
                port.width = d.width;
                port.speed = d.speed;
            }
        }
    }
    Ok(Parsed { fabric, notes })
}

fn fabric_err(line: usize, e: FabricError, name: &str) -> ParseError {
    let kind = match e {
        FabricError::DuplicateGuid(guid) => ParseErrorKind::DuplicateGuid {
            guid,
            first_line: 0,
        },
        FabricError::SelfLoop { .. } => ParseErrorKind::SelfLoop(name.to_owned()),
        FabricError::PortOutOfRange {
            port, num_ports, ..
        } => ParseErrorKind::PortOutOfRange {
            node: name.to_owned(),
            port: u32::from(port),
            num_ports: u32::from(num_ports),
        },
        other => ParseErrorKind::Unrecognised(other.to_string()),
    };
    err(line, kind)
}

// ---------------------------------------------------------------- writing

fn type_word(t: NodeKind, dialect: Dialect) -> &'static str {
    match (t, dialect) {
        (NodeKind::Switch, _) => "Switch",
        (NodeKind::Ca, Dialect::IbsimNet) => "Hca",
        (NodeKind::Ca, _) => "Ca",
        (NodeKind::Router, _) => "Rt",
    }
}

fn id_prefix(t: NodeKind) -> char {
    match t {
        NodeKind::Switch => 'S',
        NodeKind::Ca => 'H',
        NodeKind::Router => 'R',
    }
}

fn width_speed_str(out: &mut String, w: ActiveWidth, s: ActiveSpeed) {
    if w != ActiveWidth::Unknown && s != ActiveSpeed::Unknown {
        let _ = write!(out, " {}x{}", w.lanes(), s.name());
    }
}

/// Writes a fabric as text; see the [module docs](self).
///
/// # Errors
/// [`WriteError::BadName`] for [`Dialect::IbsimNet`] when descriptions cannot serve as
/// names.
pub fn write(fabric: &Fabric, opts: &WriteOptions) -> Result<String, WriteError> {
    // About 80 bytes per port line, 200 per node header.
    let lines: usize = fabric.link_count() * 2;
    let mut out = String::with_capacity(lines * 80 + fabric.node_count() * 200);
    write_into(fabric, opts, &mut out)?;
    Ok(out)
}

/// Writes a fabric to a file.
///
/// # Errors
/// I/O errors, or [`WriteError`] as `InvalidInput`.
pub fn write_file(
    fabric: &Fabric,
    opts: &WriteOptions,
    path: impl AsRef<Path>,
) -> std::io::Result<()> {
    let text = write(fabric, opts)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    std::fs::write(path, text)
}

/// Like [`write()`], appending to `out`.
///
/// # Errors
/// See [`write()`].
pub fn write_into(
    fabric: &Fabric,
    opts: &WriteOptions,
    out: &mut String,
) -> Result<(), WriteError> {
    let dialect = opts.dialect;
    if dialect == Dialect::IbsimNet {
        let mut seen = std::collections::HashSet::new();
        for (_, n) in fabric.nodes() {
            let d = n.description.as_str();
            if d.is_empty() || d.contains('"') || d.contains('\n') || !seen.insert(d) {
                return Err(WriteError::BadName {
                    guid: n.guid(),
                    description: n.description.clone(),
                });
            }
        }
    }
    out.push_str("#\n");
    if let Some(t) = &opts.title {
        for l in t.lines() {
            let _ = writeln!(out, "# {l}");
        }
    }
    let _ = writeln!(
        out,
        "# Topology file: {} nodes ({} switches), {} links\n#\n",
        fabric.node_count(),
        fabric.switch_count(),
        fabric.link_count()
    );
    // Node name as referenced from other records.
    let name = |id: NodeId, out: &mut String| {
        if let Some(n) = fabric.node(id) {
            match dialect {
                Dialect::IbsimNet => {
                    let _ = write!(out, "\"{}\"", n.description);
                }
                _ => {
                    let _ = write!(out, "\"{}-{:016x}\"", id_prefix(n.node_type()), n.guid().0);
                }
            }
        }
    };
    for pass in [NodeKind::Switch, NodeKind::Ca, NodeKind::Router] {
        for (id, n) in fabric.nodes().filter(|(_, n)| n.node_type() == pass) {
            let is_sw = n.is_switch();
            if dialect == Dialect::Ibnetdiscover {
                let g = n.guid().0;
                let kw = match pass {
                    NodeKind::Switch => "switchguid",
                    NodeKind::Ca => "caguid",
                    NodeKind::Router => "routerguid",
                };
                let _ = writeln!(
                    out,
                    "vendid={:#x}\ndevid={:#x}\nsysimgguid={:#x}",
                    n.vendor_id, n.device_id, n.system_image_guid.0
                );
                if is_sw {
                    let _ = writeln!(out, "{kw}={g:#x}({g:x})");
                } else {
                    let _ = writeln!(out, "{kw}={g:#x}");
                }
            }
            let _ = write!(out, "{}\t{} ", type_word(pass, dialect), n.num_ports());
            name(id, out);
            if dialect == Dialect::Ibnetdiscover {
                let _ = write!(out, "\t\t# \"{}\"", n.description);
                if is_sw {
                    let p0 = n.port(0);
                    let _ = write!(
                        out,
                        " {} port 0 lid {} lmc {}",
                        if n.enhanced_port0 { "enhanced" } else { "base" },
                        p0.map_or(0, |p| p.lid),
                        p0.map_or(0, |p| p.lmc)
                    );
                }
            }
            out.push('\n');
            for (p, port) in n.ports() {
                let Some(peer) = port.peer() else { continue };
                let Some(rn) = fabric.node(peer.node) else {
                    continue;
                };
                let _ = write!(out, "[{p}]");
                if dialect == Dialect::Ibnetdiscover && !is_sw {
                    let _ = write!(out, "({:x}) ", port.guid.0);
                }
                out.push('\t');
                name(peer.node, out);
                let _ = write!(out, "[{}]", peer.port);
                let rport = rn.port(peer.port);
                match dialect {
                    Dialect::IbsimNet => {
                        if port.width != ActiveWidth::Unknown {
                            let _ = write!(out, "\tw={}", port.width.lanes());
                        }
                    }
                    _ => {
                        if !rn.is_switch() {
                            let _ = write!(out, "({:x}) ", rport.map_or(0, |x| x.guid.0));
                        }
                        out.push_str("\t\t#");
                        if !is_sw {
                            let _ = write!(out, " lid {} lmc {}", port.lid, port.lmc);
                        }
                        let rlid = if rn.is_switch() {
                            rn.lid()
                        } else {
                            rport.map_or(0, |x| x.lid)
                        };
                        let _ = write!(out, " \"{}\" lid {rlid}", rn.description);
                        width_speed_str(out, port.width, port.speed);
                    }
                }
                out.push('\n');
            }
            out.push('\n');
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- `ibnetdiscover -p`

/// (line, one end, other end, width, speed) as listed in a port report.
type ReportLink = (
    usize,
    (u64, PortNum),
    (u64, PortNum),
    ActiveWidth,
    ActiveSpeed,
);

struct PortsNode<'a> {
    node_type: NodeKind,
    description: &'a str,
    max_port: PortNum,
    line: usize,
    /// (port, port GUID, LID) as listed.
    ports: Vec<(PortNum, u64, u16)>,
}

struct PortsEnd<'a> {
    node_type: NodeKind,
    lid: u16,
    port: PortNum,
    guid: u64,
    rest: &'a str,
}

/// Splits the first whitespace-separated token off `s`.
fn token(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

fn ports_end(s: &str, line: usize) -> Result<PortsEnd<'_>, ParseError> {
    let (t, s) = token(s).ok_or_else(|| trunc(line, "node type"))?;
    let node_type = match t {
        "SW" => NodeKind::Switch,
        "CA" => NodeKind::Ca,
        "RT" => NodeKind::Router,
        other => return Err(err(line, ParseErrorKind::UnknownNodeType(other.to_owned()))),
    };
    let (lid, s) = token(s).ok_or_else(|| trunc(line, "LID"))?;
    let lid = u16::try_from(parse_dec(lid, line)?)
        .map_err(|_| err(line, ParseErrorKind::BadNumber(lid.to_owned())))?;
    let (port, s) = token(s).ok_or_else(|| trunc(line, "port"))?;
    let pn = parse_dec(port, line)?;
    if pn == 0 || pn > u32::from(MAX_PORTS) {
        return Err(err(
            line,
            ParseErrorKind::PortOutOfRange {
                node: t.to_owned(),
                port: pn,
                num_ports: u32::from(MAX_PORTS),
            },
        ));
    }
    let (guid, rest) = token(s).ok_or_else(|| trunc(line, "GUID"))?;
    Ok(PortsEnd {
        node_type,
        lid,
        port: pn as PortNum,
        guid: parse_hex(guid, line)?,
        rest,
    })
}

/// The per-port report `ibnetdiscover -p` prints: one line per port, the local end
/// (`SW`/`CA`/`RT`, LID, port, port GUID, width, speed) and, for a port with a cable,
/// ` - ` and the remote end and both nodes' descriptions in quotes; a port without one
/// has its node's description after a 36-column gap. A switch's LID is its port 0's,
/// a terminal's its port's. Widths print as `4x` (`??` unknown), speeds as `SDR` ..
/// `NDR` (`???` unknown), as ibnetdiscover's compatibility names do. Every port of a
/// switch is listed, a terminal's ports only where something is known (a cable or a
/// state read); highest port first, switches then CAs then routers, each in GUID order.
/// [`parse_ports_report`] reads it back.
#[must_use]
pub fn write_ports_report(fabric: &Fabric) -> String {
    let mut out = String::with_capacity(fabric.node_count() * 4 * 120);
    let ty = |t: NodeKind| match t {
        NodeKind::Switch => "SW",
        NodeKind::Ca => "CA",
        NodeKind::Router => "RT",
    };
    let width = |w: ActiveWidth| {
        if w == ActiveWidth::Unknown {
            "??".to_owned()
        } else {
            format!("{}x", w.lanes())
        }
    };
    let speed = |s: ActiveSpeed| {
        if s == ActiveSpeed::Unknown {
            "???"
        } else {
            s.name()
        }
    };
    let mut order: Vec<(NodeKind, u64, NodeId)> = fabric
        .nodes()
        .map(|(id, n)| (n.node_type(), n.guid().0, id))
        .collect();
    order.sort_unstable_by_key(|&(t, g, _)| {
        let rank = match t {
            NodeKind::Switch => 0,
            NodeKind::Ca => 1,
            NodeKind::Router => 2,
        };
        (rank, g)
    });
    let lid_of = |n: &crate::fabric::Node, p: PortNum| {
        if n.is_switch() {
            n.lid()
        } else {
            n.port(p).map_or(0, |x| x.lid)
        }
    };
    for (t, _, id) in order {
        let Some(n) = fabric.node(id) else { continue };
        for (p, port) in n.ports().collect::<Vec<_>>().into_iter().rev() {
            let known = n.is_switch()
                || port.is_connected()
                || port.state != crate::types::LinkState::Unknown;
            if !known {
                continue;
            }
            let _ = write!(
                out,
                "{:>2} {:>5} {:>2} 0x{:016x} {} {}",
                ty(t),
                lid_of(n, p),
                p,
                port.guid.0,
                width(port.width),
                speed(port.speed)
            );
            match port.peer().and_then(|e| Some((e, fabric.node(e.node)?))) {
                Some((e, r)) => {
                    let _ = writeln!(
                        out,
                        " - {:>2} {:>5} {:>2} 0x{:016x} ( '{}' - '{}' )",
                        ty(r.node_type()),
                        lid_of(r, e.port),
                        e.port,
                        r.port(e.port).map_or(0, |x| x.guid.0),
                        n.description,
                        r.description
                    );
                }
                None => {
                    let _ = writeln!(out, "{:36}'{}'", "", n.description);
                }
            }
        }
    }
    out
}

/// Reads the per-port report of `ibnetdiscover -p` (`SW  2  3 0x.. 4x SDR - CA ...`).
///
/// That report names switches by node GUID but CA and router ports only by port GUID,
/// so a terminal's node GUID is taken as `port GUID - port number` (how ibsim and most
/// adapters number them); ports that agree on it form one node. Port counts are the
/// highest port listed. Switch LIDs go to port 0, terminal LIDs to their ports; widths and
/// speeds to both ends.
///
/// # Errors
/// A [`ParseError`] naming the line: unknown type, bad number, truncated line, or a
/// link whose two listings disagree.
pub fn parse_ports_report(text: &str) -> Result<Parsed, ParseError> {
    use std::collections::BTreeMap;
    let node_guid = |t: NodeKind, guid: u64, port: PortNum| {
        if t == NodeKind::Switch {
            guid
        } else {
            guid.wrapping_sub(u64::from(port))
        }
    };
    let mut nodes: BTreeMap<u64, PortsNode<'_>> = BTreeMap::new();
    let mut links: Vec<ReportLink> = Vec::new();
    let note = |n: &mut BTreeMap<u64, PortsNode<'_>>, line: usize, end: &PortsEnd<'_>| -> u64 {
        let g = node_guid(end.node_type, end.guid, end.port);
        let e = n.entry(g).or_insert(PortsNode {
            node_type: end.node_type,
            description: "",
            max_port: 0,
            line,
            ports: Vec::new(),
        });
        e.max_port = e.max_port.max(end.port);
        if !e.ports.iter().any(|p| p.0 == end.port) {
            e.ports.push((end.port, end.guid, end.lid));
        }
        g
    };
    for (i, raw) in lines(text).enumerate() {
        let line = i + 1;
        let l = raw.trim_ascii();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let local = ports_end(l, line)?;
        let (w, rest) = token(local.rest).ok_or_else(|| trunc(line, "width"))?;
        let (s, after) = token(rest).ok_or_else(|| trunc(line, "speed"))?;
        let width = w
            .strip_suffix('x')
            .and_then(|x| x.parse().ok())
            .and_then(ActiveWidth::from_lanes)
            .unwrap_or_default();
        let speed = ActiveSpeed::from_name(s).unwrap_or_default();
        let after = after.trim_start();
        let lg = note(&mut nodes, line, &local);
        if let Some(remote_text) = after.strip_prefix('-') {
            let remote = ports_end(remote_text, line)?;
            let rg = note(&mut nodes, line, &remote);
            // ( 'local desc' - 'remote desc' )
            let names = remote.rest.trim();
            let inner = names
                .strip_prefix("( '")
                .and_then(|x| x.strip_suffix("' )"))
                .ok_or_else(|| trunc(line, "expected ( 'desc' - 'desc' )"))?;
            let (ld, rd) = inner
                .split_once("' - '")
                .ok_or_else(|| trunc(line, "expected ( 'desc' - 'desc' )"))?;
            for (g, d) in [(lg, ld), (rg, rd)] {
                if let Some(n) = nodes.get_mut(&g)
                    && n.description.is_empty()
                {
                    n.description = d;
                }
            }
            links.push((line, (lg, local.port), (rg, remote.port), width, speed));
        } else {
            let d = after.trim();
            let d = d
                .strip_prefix('\'')
                .and_then(|x| x.strip_suffix('\''))
                .ok_or_else(|| trunc(line, "expected 'description'"))?;
            if let Some(n) = nodes.get_mut(&lg)
                && n.description.is_empty()
            {
                n.description = d;
            }
        }
    }
    let mut fabric = Fabric::with_capacity(nodes.len(), links.len() / 2 + 1);
    let mut ids: HashMap<u64, NodeId> = HashMap::with_capacity(nodes.len());
    for (&g, n) in &nodes {
        let mut spec = NodeSpec::new(Guid(g), n.node_type, n.max_port, n.description);
        if n.node_type != NodeKind::Switch {
            let mut pg: Vec<Guid> = (1..=u64::from(n.max_port))
                .map(|p| Guid(g.wrapping_add(p)))
                .collect();
            for &(p, guid, _) in &n.ports {
                pg[usize::from(p) - 1] = Guid(guid);
            }
            spec.port_guids = Some(pg);
        }
        let id = fabric
            .add_node(spec)
            .map_err(|e| fabric_err(n.line, e, n.description))?;
        if let Some(node) = fabric.node_mut(id) {
            for &(p, _, lid) in &n.ports {
                let p = if n.node_type == NodeKind::Switch {
                    0
                } else {
                    p
                };
                if let Some(port) = node.port_mut(p) {
                    port.lid = lid;
                }
            }
        }
        ids.insert(g, id);
    }
    let mut claims: HashMap<(u64, PortNum), ((u64, PortNum), usize)> = HashMap::new();
    for (line, a, b, width, speed) in links {
        let mut is_new = true;
        for (k, v) in [(a, b), (b, a)] {
            match claims.get(&k) {
                Some(&(other, other_line)) if other != v => {
                    return Err(err(
                        line,
                        ParseErrorKind::LinkMismatch {
                            this: format!("{:#x}[{}] <-> {:#x}[{}]", a.0, a.1, b.0, b.1),
                            other: format!("{:#x}[{}] <-> {:#x}[{}]", k.0, k.1, other.0, other.1),
                            other_line,
                        },
                    ));
                }
                Some(_) => is_new = false,
                None => {}
            }
        }
        if !is_new {
            continue;
        }
        if a.0 == b.0 {
            return Err(err(line, ParseErrorKind::SelfLoop(format!("{:#x}", a.0))));
        }
        claims.insert(a, (b, line));
        claims.insert(b, (a, line));
        let (ia, ib) = (ids[&a.0], ids[&b.0]);
        fabric
            .connect(ia, a.1, ib, b.1)
            .map_err(|e| fabric_err(line, e, "link"))?;
        for (id, p) in [(ia, a.1), (ib, b.1)] {
            if let Some(port) = fabric.node_mut(id).and_then(|n| n.port_mut(p)) {
                port.width = width;
                port.speed = speed;
            }
        }
    }
    Ok(Parsed {
        fabric,
        notes: Vec::new(),
    })
}
