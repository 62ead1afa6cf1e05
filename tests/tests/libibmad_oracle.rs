//! libibmad layout oracle: every field that `tests/fixtures/libibmad_fields.tsv` marks
//! `libibmad_verified` is written and read by our codec and by libibmad, both ways.
//!
//! The tests package has no `unsafe`, so libibmad is not linked: at run time a small C
//! program (generated from the TSV, built with `gcc ... -libmad`) serves `set`/`get`
//! requests over stdin/stdout:
//!
//! ```text
//! set <ENUM> <field|field64|array> <buffer-hex> <value-hex>  ->  <buffer-hex> | SPILL <hex>
//! get <ENUM> <field|field64|array> <buffer-hex>              ->  <value-hex>
//! ```
//!
//! For each row the TSV table name is mapped to our Rust types (`subjects()` and `ALIASES`),
//! our field at exactly the row's `(byte, bit, len)` is found by flattening nested
//! structures (there must be exactly one), and for several seeded random values:
//! * ours -> libibmad: parse a random buffer, `set_field`, `emit_into` the same buffer,
//!   libibmad's `mad_get_*` must return the value;
//! * libibmad -> ours: libibmad's `mad_set_*` into a random buffer, our `parse` +
//!   `get_field` must return the value, every field not overlapping it must be unchanged,
//!   and libibmad must not write past the end of our structure.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use ibsm_wire::perf::{
    PortCounters, PortCountersExtended, PortExtendedSpeedsCounters, PortRcvErrorDetails,
    PortXmitDiscardDetails,
};
use ibsm_wire::sa::{
    GuidInfoRecord, InformInfo, InformInfoRecord, LinearForwardingTableRecord, LinkRecord,
    McMemberRecord, MultiPathRecord, MulticastForwardingTableRecord, NodeRecord, PKeyTableRecord,
    PathRecord, PortInfoRecord, RandomForwardingTableRecord, SaMad, ServiceRecord,
    SlToVlMappingTableRecord, SmInfoRecord, SwitchInfoRecord, VlArbitrationTableRecord,
};
use ibsm_wire::{
    ClassPortInfo, DrSmp, Field, FieldDesc, FieldValue, Gid, GsMad, GuidInfo, LedInfo, LidSmp,
    LinearForwardingTable, LinkSpeedWidthPairsTable, MadHeader, MlnxExtPortInfo,
    MulticastForwardingTable, NodeDescription, NodeInfo, Notice, PKeyTable, PortInfo,
    PortInfoExtended, RandomForwardingTable, Reflect, RftEntry, RmppHeader, SaNotice,
    SlToVlMappingTable, SmInfo, SwitchInfo, Trap128Details, Trap129Details, Trap144Details,
    Trap145Details, Trap256Details, Trap257Details, Trap259Details, TrapGidDetails, Vendor2Mad,
    VendorDiag, VlArbitrationTable, WireStruct,
};

/// Random values tried per field and direction.
const VALUES_PER_FIELD: usize = 8;

// ---------------------------------------------------------------------------------------
// The Rust side: type-erased access to every structure that has a field table.

/// A leaf field of a (possibly nested) structure, positioned from the structure's start.
#[derive(Debug, Clone)]
struct Leaf {
    name: String,
    field: Field,
    bytes: bool,
    /// The libibmad enum the field table names for this field, if any.
    libibmad: Option<&'static str>,
}

/// Test values: the kind libibmad's accessor uses.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    Uint(u64),
    Bytes(Vec<u8>),
}

impl Val {
    fn hex(&self) -> String {
        match self {
            Self::Uint(v) => format!("{v:x}"),
            Self::Bytes(b) => hex(b),
        }
    }
}

/// What the oracle needs of one Rust structure, without its type.
trait Subject {
    fn label(&self) -> &'static str;
    fn size(&self) -> usize;
    fn leaves(&self) -> Vec<Leaf>;
    /// `parse(base)`, `set_field(name, v)`, `emit_into(base)`.
    fn set_emit(&self, base: &[u8], leaf: &Leaf, v: &Val) -> Result<Vec<u8>, String>;
    /// `parse(bytes)`, then every named field as bytes (Uint values big-endian).
    fn parse_get(&self, bytes: &[u8], names: &[&str]) -> Result<Vec<Option<Val>>, String>;
}

struct Ty<T>(PhantomData<T>);

fn flatten(prefix: &str, shift: u16, r: &dyn Reflect, out: &mut Vec<Leaf>) {
    r.visit(&mut |d, v| push_leaf(prefix, shift, d, v, out));
}

fn push_leaf(prefix: &str, shift: u16, d: &FieldDesc, v: FieldValue<'_>, out: &mut Vec<Leaf>) {
    let name = if prefix.is_empty() {
        d.name.to_string()
    } else {
        format!("{prefix}.{}", d.name)
    };
    let field = d.field.shifted(shift);
    match v {
        FieldValue::Uint(_) | FieldValue::Bytes(_) => out.push(Leaf {
            name,
            field,
            bytes: matches!(v, FieldValue::Bytes(_)),
            libibmad: d.libibmad,
        }),
        FieldValue::Struct(s) => flatten(&name, field.byte, s, out),
    }
}

fn to_field_value<'a>(leaf: &Leaf, v: &'a Val, scratch: &'a mut Vec<u8>) -> FieldValue<'a> {
    match (v, leaf.bytes) {
        (Val::Uint(x), false) => FieldValue::Uint(*x),
        (Val::Bytes(b), true) => FieldValue::Bytes(b),
        (Val::Uint(x), true) => {
            // A 64-bit libibmad integer stored as an 8-byte array on our side.
            let n = usize::from(leaf.field.len / 8);
            *scratch = x.to_be_bytes()[8 - n..].to_vec();
            FieldValue::Bytes(scratch)
        }
        (Val::Bytes(b), false) => {
            FieldValue::Uint(b.iter().fold(0u64, |acc, &x| acc << 8 | u64::from(x)))
        }
    }
}

fn from_field_value(v: FieldValue<'_>) -> Val {
    match v {
        FieldValue::Uint(x) => Val::Uint(x),
        FieldValue::Bytes(b) => Val::Bytes(b.to_vec()),
        FieldValue::Struct(s) => {
            let mut out = [0u8; 256];
            s.encode(&mut out);
            Val::Bytes(out.to_vec())
        }
    }
}

impl<T: WireStruct> Subject for Ty<T> {
    fn label(&self) -> &'static str {
        T::LABEL
    }
    fn size(&self) -> usize {
        T::SIZE
    }
    fn leaves(&self) -> Vec<Leaf> {
        let mut out = Vec::new();
        T::default().for_each_field(&mut |d, v| push_leaf("", 0, d, v, &mut out));
        out
    }
    fn set_emit(&self, base: &[u8], leaf: &Leaf, v: &Val) -> Result<Vec<u8>, String> {
        let mut t = T::parse(base).map_err(|e| format!("parse: {e}"))?;
        let mut scratch = Vec::new();
        t.set_field(&leaf.name, to_field_value(leaf, v, &mut scratch))
            .map_err(|e| format!("set_field({}): {e}", leaf.name))?;
        let mut out = base.to_vec();
        t.emit_into(&mut out)
            .map_err(|e| format!("emit_into: {e}"))?;
        Ok(out)
    }
    fn parse_get(&self, bytes: &[u8], names: &[&str]) -> Result<Vec<Option<Val>>, String> {
        let t = T::parse(bytes).map_err(|e| format!("parse: {e}"))?;
        Ok(names
            .iter()
            .map(|n| t.get_field(n).map(from_field_value))
            .collect())
    }
}

/// `Gid` is a value type, not a field table; these two fields stand for its accessors.
struct GidSubject;

impl Subject for GidSubject {
    fn label(&self) -> &'static str {
        "Gid"
    }
    fn size(&self) -> usize {
        16
    }
    fn leaves(&self) -> Vec<Leaf> {
        ["prefix", "interface_id"]
            .iter()
            .enumerate()
            .map(|(i, n)| Leaf {
                name: (*n).to_string(),
                field: Field::new(8 * i as u16, 0, 64),
                bytes: false,
                libibmad: Some(["IB_GID_PREFIX_F", "IB_GID_GUID_F"][i]),
            })
            .collect()
    }
    fn set_emit(&self, base: &[u8], leaf: &Leaf, v: &Val) -> Result<Vec<u8>, String> {
        let mut g = Gid(base[..16].try_into().map_err(|_| "short".to_string())?);
        let Val::Uint(x) = v else {
            return Err("GID parts are integers".into());
        };
        g = match leaf.name.as_str() {
            "prefix" => Gid::new(*x, g.interface_id()),
            _ => Gid::new(g.prefix(), *x),
        };
        Ok(g.0.to_vec())
    }
    fn parse_get(&self, bytes: &[u8], names: &[&str]) -> Result<Vec<Option<Val>>, String> {
        let g = Gid(bytes[..16].try_into().map_err(|_| "short".to_string())?);
        Ok(names
            .iter()
            .map(|n| match *n {
                "prefix" => Some(Val::Uint(g.prefix())),
                "interface_id" => Some(Val::Uint(g.interface_id())),
                _ => None,
            })
            .collect())
    }
}

fn ty<T: WireStruct + 'static>() -> Box<dyn Subject> {
    Box::new(Ty::<T>(PhantomData))
}

/// One mapping of a TSV table onto a Rust structure.
struct Mapping<'a> {
    subject: &'a dyn Subject,
    /// Where the Rust structure starts, in the TSV row's frame (MAD for base=mad, the
    /// attribute or record for base=attr). Trap data details start at Notice byte 10.
    offset: u16,
}

/// Every Rust structure with a field table (the list this test maintains). A TSV table
/// whose name equals a structure's label is checked against it automatically.
fn subjects() -> Vec<Box<dyn Subject>> {
    vec![
        ty::<MadHeader>(),
        ty::<LidSmp>(),
        ty::<DrSmp>(),
        ty::<NodeInfo>(),
        ty::<NodeDescription>(),
        ty::<PortInfo>(),
        ty::<SwitchInfo>(),
        ty::<SmInfo>(),
        ty::<GuidInfo>(),
        ty::<PKeyTable>(),
        ty::<SlToVlMappingTable>(),
        ty::<VlArbitrationTable>(),
        ty::<LinearForwardingTable>(),
        ty::<RftEntry>(),
        ty::<RandomForwardingTable>(),
        ty::<MulticastForwardingTable>(),
        ty::<LinkSpeedWidthPairsTable>(),
        ty::<Notice>(),
        ty::<SaNotice>(),
        ty::<TrapGidDetails>(),
        ty::<Trap128Details>(),
        ty::<Trap129Details>(),
        ty::<Trap144Details>(),
        ty::<Trap145Details>(),
        ty::<Trap256Details>(),
        ty::<Trap257Details>(),
        ty::<Trap259Details>(),
        ty::<VendorDiag>(),
        ty::<LedInfo>(),
        ty::<MlnxExtPortInfo>(),
        ty::<PortInfoExtended>(),
        ty::<ClassPortInfo>(),
        ty::<GsMad>(),
        ty::<Vendor2Mad>(),
        ty::<RmppHeader>(),
        ty::<SaMad>(),
        ty::<PathRecord>(),
        ty::<MultiPathRecord>(),
        ty::<NodeRecord>(),
        ty::<PortInfoRecord>(),
        ty::<LinkRecord>(),
        ty::<SwitchInfoRecord>(),
        ty::<SmInfoRecord>(),
        ty::<GuidInfoRecord>(),
        ty::<InformInfo>(),
        ty::<InformInfoRecord>(),
        ty::<PKeyTableRecord>(),
        ty::<SlToVlMappingTableRecord>(),
        ty::<VlArbitrationTableRecord>(),
        ty::<LinearForwardingTableRecord>(),
        ty::<RandomForwardingTableRecord>(),
        ty::<MulticastForwardingTableRecord>(),
        ty::<McMemberRecord>(),
        ty::<ServiceRecord>(),
        ty::<PortCounters>(),
        ty::<PortCountersExtended>(),
        ty::<PortRcvErrorDetails>(),
        ty::<PortXmitDiscardDetails>(),
        ty::<PortExtendedSpeedsCounters>(),
        Box::new(GidSubject),
    ]
}

/// TSV tables checked against a structure of another label: (table, label, offset).
/// The MAD header rows hold for every MAD form.
const ALIASES: &[(&str, &str, u16)] = &[
    ("MAD header", "LID-routed SMP", 0),
    ("MAD header", "directed-route SMP", 0),
    ("MAD header", "SA MAD", 0),
    ("MAD header", "GS MAD", 0),
    ("MAD header", "vendor range-2 MAD", 0),
    ("Vendor range 2 MAD", "vendor range-2 MAD", 0),
    ("DR SMP status word", "directed-route SMP", 0),
    ("DR SMP class-specific", "directed-route SMP", 0),
    ("Directed-route SMP", "directed-route SMP", 0),
    ("GID", "Gid", 0),
    ("GUIDInfo (legacy name)", "GUIDInfo", 0),
    // The RS-FEC names of libibmad read the same bits as the per-lane block counters.
    (
        "PortExtendedSpeedsCounters (RS-FEC form)",
        "PortExtendedSpeedsCounters",
        0,
    ),
];

/// Rows a structure of an aliased table legitimately lacks: (table, field, label, why).
const EXEMPT: &[(&str, &str, &str, &str)] = &[(
    "MAD header",
    "Status",
    "directed-route SMP",
    "DR SMPs split the status word into D + a 15-bit status (the DR SMP status word rows)",
)];

/// Structures that start inside their TSV table's frame: the trap data details begin at
/// Notice byte 10 (DataDetails), and the TSV numbers their fields from the Notice.
fn label_offset(label: &str) -> u16 {
    if label.starts_with("Notice trap") {
        10
    } else {
        0
    }
}

fn mappings<'a>(table: &str, subjects: &'a [Box<dyn Subject>]) -> Vec<Mapping<'a>> {
    let mut out: Vec<Mapping<'a>> = subjects
        .iter()
        .filter(|s| s.label() == table)
        .map(|s| Mapping {
            subject: s.as_ref(),
            offset: label_offset(s.label()),
        })
        .collect();
    for &(t, label, offset) in ALIASES {
        if t == table {
            let s = subjects
                .iter()
                .find(|s| s.label() == label)
                .unwrap_or_else(|| panic!("alias {t}: no structure labelled {label}"));
            out.push(Mapping {
                subject: s.as_ref(),
                offset,
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The TSV.

#[derive(Debug, Clone)]
struct Row {
    table: String,
    field: String,
    enum_name: String,
    kind: String,
    pos: Field,
    status: String,
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

fn load_rows() -> Vec<Row> {
    let path = fixture("libibmad_fields.tsv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("TSV header").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("TSV has no column {name}"))
    };
    let (c_table, c_field, c_enum, c_byte, c_bit, c_len, c_setter, c_status) = (
        col("attribute"),
        col("field"),
        col("libibmad_enum"),
        col("byte_offset"),
        col("bit_offset"),
        col("bit_length"),
        col("libibmad_setter"),
        col("status"),
    );
    lines
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let c: Vec<&str> = l.split('\t').collect();
            let num = |k: usize| -> u64 {
                c[k].parse()
                    .unwrap_or_else(|_| panic!("TSV line {}: column {k} not a number", i + 2))
            };
            Row {
                table: c[c_table].to_string(),
                field: c[c_field].to_string(),
                enum_name: c[c_enum].to_string(),
                kind: c[c_setter].trim_start_matches("mad_set_").to_string(),
                pos: if c[c_status].contains("libibmad_verified") {
                    Field::new(num(c_byte) as u16, num(c_bit) as u8, num(c_len) as u16)
                } else {
                    Field::new(0, 0, 0)
                },
                status: c[c_status].to_string(),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The C side.

struct Libibmad {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Libibmad {
    fn start(enums: &BTreeSet<String>) -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libibmad_oracle");
        std::fs::create_dir_all(&dir).expect("create oracle build dir");
        // Tests run in parallel threads: each server gets its own files.
        static SERIAL: AtomicUsize = AtomicUsize::new(0);
        let id = format!(
            "{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        );
        let src = dir.join(format!("oracle-{id}.c"));
        let exe = dir.join(format!("oracle-{id}"));
        std::fs::write(&src, c_source(enums)).expect("write oracle.c");
        let out = Command::new("gcc")
            .args(["-O1", "-Wall", "-Werror", "-o"])
            .arg(&exe)
            .arg(&src)
            .arg("-libmad")
            .output()
            .expect("run gcc");
        assert!(
            out.status.success(),
            "gcc failed on {}:\n{}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut child = Command::new(&exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start oracle program");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let _ = std::fs::remove_file(&exe);
        let _ = std::fs::remove_file(&src);
        Self {
            child,
            stdin,
            stdout,
        }
    }

    fn ask(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").expect("write to oracle");
        self.stdin.flush().expect("flush oracle");
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).expect("read oracle");
        assert!(!answer.is_empty(), "oracle program died on: {line}");
        answer.trim_end().to_string()
    }

    /// libibmad writes `v` into `buf`; `Err` when it wrote outside `buf`.
    fn set(&mut self, row: &Row, buf: &[u8], v: &Val) -> Result<Vec<u8>, String> {
        let a = self.ask(&format!(
            "set {} {} {} {}",
            row.enum_name,
            row.kind,
            hex(buf),
            v.hex()
        ));
        match a.strip_prefix("SPILL ") {
            Some(rest) => Err(format!("libibmad wrote past byte {}: {rest}", buf.len())),
            None => Ok(unhex(&a)),
        }
    }

    fn get(&mut self, row: &Row, buf: &[u8]) -> Val {
        let a = self.ask(&format!(
            "get {} {} {} {}",
            row.enum_name,
            row.kind,
            hex(buf),
            row.pos.len / 8
        ));
        if row.kind == "array" {
            Val::Bytes(unhex(&a))
        } else {
            Val::Uint(u64::from_str_radix(&a, 16).unwrap_or_else(|_| panic!("oracle said {a}")))
        }
    }
}

impl Drop for Libibmad {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The C server: a table of the enum names we use, and the set/get loop.
fn c_source(enums: &BTreeSet<String>) -> String {
    let table: String = enums
        .iter()
        .map(|e| format!("    {{\"{e}\", {e}}},\n"))
        .collect();
    format!(
        r#"/* Generated by tests/tests/libibmad_oracle.rs; see there. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/mad.h>

#define BUF 4096
static const struct {{ const char *name; enum MAD_FIELDS f; }} fields[] = {{
{table}}};

static int unhex(const char *s, uint8_t *out, int max) {{
    int n = 0;
    while (s[0] && s[1] && n < max) {{
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1) return -1;
        out[n++] = (uint8_t)v;
        s += 2;
    }}
    return n;
}}

static void puthex(const uint8_t *b, int n) {{
    for (int i = 0; i < n; i++) printf("%02x", b[i]);
}}

int main(void) {{
    static char line[4 * BUF + 256];
    static uint8_t buf[BUF], val[BUF];
    char op[8], name[128], kind[16], bufhex[2 * BUF + 2], valhex[2 * BUF + 2];
    while (fgets(line, sizeof line, stdin)) {{
        valhex[0] = 0;
        int k = sscanf(line, "%7s %127s %15s %8192s %8192s", op, name, kind, bufhex, valhex);
        if (k < 4) {{ printf("ERR parse\n"); fflush(stdout); continue; }}
        int f = -1;
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
            if (!strcmp(fields[i].name, name)) f = fields[i].f;
        if (f < 0) {{ printf("ERR enum\n"); fflush(stdout); continue; }}
        memset(buf, 0, sizeof buf);
        int len = unhex(bufhex, buf, BUF);
        if (!strcmp(op, "set")) {{
            if (!strcmp(kind, "field")) mad_set_field(buf, 0, f, (uint32_t)strtoull(valhex, 0, 16));
            else if (!strcmp(kind, "field64")) mad_set_field64(buf, 0, f, strtoull(valhex, 0, 16));
            else {{ memset(val, 0, sizeof val); unhex(valhex, val, BUF); mad_set_array(buf, 0, f, val); }}
            int spill = 0;
            for (int i = len; i < BUF; i++) spill |= buf[i] != 0;
            if (spill) {{ printf("SPILL "); puthex(buf + len, 64); }}
            else puthex(buf, len);
            printf("\n");
        }} else {{
            if (!strcmp(kind, "field")) printf("%x", mad_get_field(buf, 0, f));
            else if (!strcmp(kind, "field64")) printf("%llx", (unsigned long long)mad_get_field64(buf, 0, f));
            else {{
                memset(val, 0, sizeof val);
                mad_get_array(buf, 0, f, val);
                int n = 0;
                sscanf(valhex[0] ? valhex : "0", "%d", &n);
                puthex(val, n);
            }}
            printf("\n");
        }}
        fflush(stdout);
    }}
    return 0;
}}
"#
    )
}

// ---------------------------------------------------------------------------------------
// Helpers.

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| {
            u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or_else(|_| panic!("bad hex {s}"))
        })
        .collect()
}

/// xorshift64*: deterministic, seeded per field so a failure reproduces alone.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn seed_of(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The i-th test value of a row: all ones, MSB only, LSB only, then random.
fn value(row: &Row, i: usize, rng: &mut Rng) -> Val {
    let len = usize::from(row.pos.len);
    if row.kind == "array" {
        let n = len / 8;
        return Val::Bytes(match i {
            0 => vec![0xFF; n],
            1 => {
                let mut v = vec![0; n];
                v[0] = 0x80;
                v
            }
            2 => {
                let mut v = vec![0; n];
                v[n - 1] = 1;
                v
            }
            _ => rng.bytes(n),
        });
    }
    let mask = row.pos.mask();
    Val::Uint(match i {
        0 => mask,
        1 => 1u64 << (len - 1),
        2 => 1,
        _ => rng.next() & mask,
    })
}

fn overlaps(a: Field, b: Field) -> bool {
    let (a0, b0) = (a.abs_bit(), b.abs_bit());
    a0 < b0 + usize::from(b.len) && b0 < a0 + usize::from(a.len)
}

/// Checks one row against one mapping; returns the number of values checked.
fn check_row(
    lib: &mut Libibmad,
    row: &Row,
    map: &Mapping,
    leaf: &Leaf,
    leaves: &[Leaf],
) -> Result<usize, String> {
    let s = &map.subject;
    let off = usize::from(map.offset);
    let total = off + s.size();
    let others: Vec<&Leaf> = leaves
        .iter()
        .filter(|l| !overlaps(l.field, leaf.field))
        .collect();
    let other_names: Vec<&str> = others.iter().map(|l| l.name.as_str()).collect();
    let mut rng = Rng::new(seed_of(&format!(
        "{}/{}/{}",
        row.table,
        row.field,
        s.label()
    )));
    let ctx = |dir: &str, v: &Val| {
        format!(
            "{} {} [{}] {dir} value {}",
            row.table,
            row.field,
            leaf.name,
            v.hex()
        )
    };
    for i in 0..VALUES_PER_FIELD {
        let v = value(row, i, &mut rng);

        // Ours -> libibmad.
        let mut base = rng.bytes(total);
        base[..off].fill(0);
        let ours = s
            .set_emit(&base[off..], leaf, &v)
            .map_err(|e| format!("{}: {e}", ctx("ours->libibmad", &v)))?;
        base[off..].copy_from_slice(&ours);
        let got = lib.get(row, &base);
        if got != v {
            return Err(format!(
                "{}: libibmad reads {}",
                ctx("ours->libibmad", &v),
                got.hex()
            ));
        }

        // libibmad -> ours.
        let mut base = rng.bytes(total);
        base[..off].fill(0);
        let before = s.parse_get(&base[off..], &other_names)?;
        let written = lib
            .set(row, &base, &v)
            .map_err(|e| format!("{}: {e}", ctx("libibmad->ours", &v)))?;
        let mine = s.parse_get(&written[off..], &[leaf.name.as_str()])?;
        let want = match (&v, leaf.bytes) {
            (Val::Uint(x), true) => {
                let n = usize::from(leaf.field.len / 8);
                Val::Bytes(x.to_be_bytes()[8 - n..].to_vec())
            }
            _ => v.clone(),
        };
        if mine[0].as_ref() != Some(&want) {
            return Err(format!(
                "{}: we read {:?}",
                ctx("libibmad->ours", &v),
                mine[0]
            ));
        }
        let after = s.parse_get(&written[off..], &other_names)?;
        if let Some(k) = (0..others.len()).find(|&k| before[k] != after[k]) {
            return Err(format!(
                "{}: libibmad also changed our field {}",
                ctx("libibmad->ours", &v),
                others[k].name
            ));
        }
    }
    Ok(2 * VALUES_PER_FIELD)
}

#[test]
fn libibmad_agrees_on_every_verified_field() {
    if !ibsm_tests::peers_present(
        "libibmad_oracle",
        &["/usr/include/infiniband/mad.h", "/usr/bin/gcc"],
    ) {
        return;
    }
    let rows = load_rows();
    let verified: Vec<&Row> = rows
        .iter()
        .filter(|r| r.status.contains("libibmad_verified"))
        .collect();
    assert!(verified.len() >= 200, "TSV lost rows: {}", verified.len());
    // The 4 `libibmad_differs_from_spec` rows (PortInfoExtended HDR/NDR FEC fields) are
    // not checked: libibmad 44.0 misplaces them, our layout follows the spec there.
    let differs = rows
        .iter()
        .filter(|r| r.status.contains("libibmad_differs_from_spec"))
        .count();
    assert_eq!(differs, 4, "the TSV's known libibmad deviations changed");

    let subjects = subjects();
    let enums: BTreeSet<String> = verified.iter().map(|r| r.enum_name.clone()).collect();
    let mut lib = Libibmad::start(&enums);

    let mut agree_fields = 0usize;
    let mut rows_agreeing = 0usize;
    // (structure, field) -> the libibmad enums of the rows that matched it.
    let mut matched: BTreeMap<(&str, String), BTreeSet<&str>> = BTreeMap::new();
    let mut values = 0usize;
    let mut failures = Vec::new();
    let mut unmatched = Vec::new();
    let mut unmapped: BTreeMap<&str, usize> = BTreeMap::new();
    for row in &verified {
        let maps = mappings(&row.table, &subjects);
        if maps.is_empty() {
            *unmapped.entry(row.table.as_str()).or_default() += 1;
            continue;
        }
        let before = agree_fields;
        let maps: Vec<Mapping<'_>> = maps
            .into_iter()
            .filter(|m| {
                !EXEMPT
                    .iter()
                    .any(|&(t, f, l, _)| t == row.table && f == row.field && l == m.subject.label())
            })
            .collect();
        for map in &maps {
            let leaves = map.subject.leaves();
            let Some(pos_byte) = row.pos.byte.checked_sub(map.offset) else {
                unmatched.push(format!(
                    "{} {}: before {}",
                    row.table,
                    row.field,
                    map.subject.label()
                ));
                continue;
            };
            let pos = Field::new(pos_byte, row.pos.bit, row.pos.len);
            let hits: Vec<&Leaf> = leaves.iter().filter(|l| l.field == pos).collect();
            match hits.as_slice() {
                [leaf] => match check_row(&mut lib, row, map, leaf, &leaves) {
                    Ok(n) => {
                        matched
                            .entry((map.subject.label(), leaf.name.clone()))
                            .or_default()
                            .insert(row.enum_name.as_str());
                        agree_fields += 1;
                        values += n;
                    }
                    Err(e) => failures.push(e),
                },
                [] => unmatched.push(format!(
                    "{} {} ({}, {}, {}) {}: no field of {} there",
                    row.table,
                    row.field,
                    row.pos.byte,
                    row.pos.bit,
                    row.pos.len,
                    row.enum_name,
                    map.subject.label()
                )),
                many => unmatched.push(format!(
                    "{} {}: {} fields of {} at ({}, {}, {}): {:?}",
                    row.table,
                    row.field,
                    many.len(),
                    map.subject.label(),
                    row.pos.byte,
                    row.pos.bit,
                    row.pos.len,
                    many.iter().map(|l| &l.name).collect::<Vec<_>>()
                )),
            }
        }
        if agree_fields - before == maps.len() {
            rows_agreeing += 1;
        }
    }

    if !unmapped.is_empty() {
        println!("tables of verified rows without a Rust type yet (rows):");
        for (t, n) in &unmapped {
            println!("  {t} ({n})");
        }
    }
    for u in &unmatched {
        println!("UNMATCHED {u}");
    }
    for f in &failures {
        println!("DISAGREE {f}");
    }
    // The libibmad names written in our field tables must be the rows that matched
    // those fields: a name on the wrong field is a documentation bug the position
    // check alone would not see.
    let verified_enums: BTreeSet<&str> = verified.iter().map(|r| r.enum_name.as_str()).collect();
    let mut misnamed = Vec::new();
    for s in &subjects {
        for leaf in s.leaves() {
            let Some(name) = leaf.libibmad else { continue };
            if leaf.name.contains('.') {
                continue; // inside a nested structure: checked as that structure
            }
            if !verified_enums.contains(name) {
                continue; // not checkable (differs from spec, empty, or newer than 44.0)
            }
            let ok = matched
                .get(&(s.label(), leaf.name.clone()))
                .is_some_and(|m| m.contains(name));
            if !ok {
                misnamed.push(format!("{}.{} says {name}", s.label(), leaf.name));
            }
        }
    }
    for m in &misnamed {
        println!("MISNAMED {m}");
    }
    assert!(
        misnamed.is_empty(),
        "{} fields name the wrong libibmad field",
        misnamed.len()
    );

    // N counts (row, Rust type) pairs: the MAD header rows are checked in every MAD form.
    println!("libibmad oracle: {agree_fields} fields agree");
    println!(
        "  ({rows_agreeing} of {} verified rows fully agree, {values} values checked both ways)",
        verified.len()
    );
    assert!(
        failures.is_empty() && unmatched.is_empty(),
        "{} disagreements and {} verified rows without exactly one Rust field (see above)",
        failures.len(),
        unmatched.len()
    );
    // Every table of the spec has its Rust type now: a new table must be mapped here.
    assert!(
        unmapped.is_empty(),
        "verified rows of tables with no Rust type in this test's list: {unmapped:?}"
    );
    assert_eq!(rows_agreeing, verified.len());
}

/// A negative control: the oracle must notice a field at the wrong position.
#[test]
fn oracle_detects_a_wrong_position() {
    if !ibsm_tests::peers_present(
        "libibmad_oracle",
        &["/usr/include/infiniband/mad.h", "/usr/bin/gcc"],
    ) {
        return;
    }
    let row = Row {
        table: "NodeInfo".into(),
        field: "NumPorts (shifted on purpose)".into(),
        enum_name: "IB_NODE_NPORTS_F".into(),
        kind: "field".into(),
        pos: Field::new(3, 0, 8),
        status: "libibmad_verified".into(),
    };
    let enums = BTreeSet::from([row.enum_name.clone()]);
    let mut lib = Libibmad::start(&enums);
    let subject = ty::<NodeInfo>();
    let map = Mapping {
        subject: subject.as_ref(),
        offset: 0,
    };
    let leaves = map.subject.leaves();
    let right = leaves.iter().find(|l| l.name == "num_ports").unwrap();
    assert_eq!(check_row(&mut lib, &row, &map, right, &leaves), Ok(16));
    let wrong = leaves.iter().find(|l| l.name == "node_type").unwrap();
    assert!(check_row(&mut lib, &row, &map, wrong, &leaves).is_err());
}
