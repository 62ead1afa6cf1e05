//! Readers of what infiniband-diags (and `ibsm-perfquery`, which prints as `perfquery`
//! does) write: libibmad's `Name:.....value` field lines and perfquery's blocks.
//!
//! ```
//! use ibsm_tests::diags::{fields, perfquery_blocks};
//!
//! let text = "# Port counters: Lid 5 port 3 (CapMask: 0x5A00)\n\
//!             PortSelect:......................3\n\
//!             CounterSelect:...................0x1b01\n\
//!             SymbolErrorCounter:..............17\n";
//! assert_eq!(fields(text)["CounterSelect"], 0x1b01);
//! let blocks = perfquery_blocks(text)?;
//! let b = &blocks[&(5, 3)];
//! assert_eq!(b.names, ["PortSelect", "CounterSelect", "SymbolErrorCounter"]);
//! assert_eq!(b.values["SymbolErrorCounter"], 17);
//! # Ok::<(), ibsm_tests::diags::BlockError>(())
//! ```

use std::collections::BTreeMap;

/// A field value as libibmad prints a number: decimal, or hex after `0x`.
fn number(value: &str) -> Option<u64> {
    match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => value.parse().ok(),
    }
}

/// One `Name:.....value` line: the name and what follows the dots.
fn field(line: &str) -> Option<(&str, &str)> {
    let (name, rest) = line.split_once(':')?;
    Some((name, rest.trim_start_matches('.')))
}

/// The numeric fields of a dump (`perfquery`, `smpquery`): name -> value. `#` header
/// lines, lines without a `:`, and fields whose value is not a number (smpquery's
/// `LinkState:......Active`) are passed over; a name seen twice keeps its last value.
#[must_use]
pub fn fields(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(field)
        .filter_map(|(name, value)| Some((name.to_owned(), number(value)?)))
        .collect()
}

/// The text of field `name` in a dump (`smpquery portinfo`'s `PhysLinkState:...LinkUp`
/// gives `LinkUp`), the first line that holds it; `None` if no line does.
#[must_use]
pub fn text_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(field)
        .find(|&(n, _)| n == name)
        .map(|(_, v)| v.trim())
}

/// One perfquery block: the fields after a `# Port ...: Lid L port P ...` header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    /// The field names, in the order printed.
    pub names: Vec<String>,
    /// Each field's value.
    pub values: BTreeMap<String, u64>,
}

/// A perfquery block that does not read as one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("perfquery output line {line}: {what}: {text:?}")]
pub struct BlockError {
    /// The line number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub what: &'static str,
    /// The line itself.
    pub text: String,
}

/// perfquery's blocks by `(LID, port)`, from their headers (`# Port counters: Lid 5
/// port 3 ...`, `# PortRcvErrorDetails counters: Lid 5 port 3`, ...). Lines before the
/// first header and lines without a `:` (an `ibwarn` on stdout before any block) are
/// passed over.
///
/// # Errors
/// A header without `Lid N port N`, or a field in a block whose value is not a number.
pub fn perfquery_blocks(text: &str) -> Result<BTreeMap<(u16, u8), Block>, BlockError> {
    let mut out: BTreeMap<(u16, u8), Block> = BTreeMap::new();
    let mut key = None;
    for (i, line) in text.lines().enumerate() {
        let fail = |what| BlockError {
            line: i + 1,
            what,
            text: line.to_owned(),
        };
        if line.starts_with("# Port") {
            let words: Vec<&str> = line.split_whitespace().collect();
            let after = |w: &str| {
                let at = words.iter().position(|x| *x == w)?;
                words.get(at + 1)?.parse::<u32>().ok()
            };
            let (Some(lid), Some(port)) = (after("Lid"), after("port")) else {
                return Err(fail("a header without `Lid N port N`"));
            };
            let port = u8::try_from(port).map_err(|_| fail("a port above 255"))?;
            let lid = u16::try_from(lid).map_err(|_| fail("a LID above 65535"))?;
            key = Some((lid, port));
            out.insert((lid, port), Block::default());
            continue;
        }
        let (Some(k), Some((name, value))) = (key, field(line)) else {
            continue;
        };
        let value = number(value).ok_or_else(|| fail("a field whose value is no number"))?;
        let block = out.entry(k).or_default();
        block.names.push(name.to_owned());
        block.values.insert(name.to_owned(), value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "\
ibwarn: [42] mad_rpc: _do_madrpc failed; dport (Lid 9)
# Port extended counters: Lid 5 port 3 (CapMask: 0x1600 CapMask2: 0x0000002)
PortSelect:......................3
CounterSelect:...................0xabcd
PortXmitData:....................18446744073709551615
# PortRcvErrorDetails counters: Lid 12 port 1
PortSelect:......................1
PortLocalPhysicalErrors:.........0
";

    #[test]
    fn blocks_by_lid_and_port_with_names_in_order() {
        let b = perfquery_blocks(TWO).unwrap();
        assert_eq!(b.len(), 2);
        let ext = &b[&(5, 3)];
        assert_eq!(ext.names, ["PortSelect", "CounterSelect", "PortXmitData"]);
        assert_eq!(ext.values["CounterSelect"], 0xabcd);
        assert_eq!(ext.values["PortXmitData"], u64::MAX);
        let det = &b[&(12, 1)];
        assert_eq!(det.names, ["PortSelect", "PortLocalPhysicalErrors"]);
        assert_eq!(det.values["PortSelect"], 1);
    }

    #[test]
    fn fields_keep_numbers_and_pass_over_text() {
        let smpquery = "# Port info: DR path slid 0; dlid 0; 0,1 port 0\n\
                        Lid:.............................7\n\
                        LinkState:.......................Active\n\
                        CapMask:.........................0x2251086a\n";
        let f = fields(smpquery);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!((f["Lid"], f["CapMask"]), (7, 0x2251_086a));
        assert_eq!(fields(TWO)["PortLocalPhysicalErrors"], 0);
    }

    #[test]
    fn text_fields_are_read_by_name() {
        let smpquery = "# Port info: Lid 3 port 5\n\
                        LinkState:.......................Initialize\n\
                        PhysLinkState:...................Disabled\n";
        assert_eq!(text_field(smpquery, "PhysLinkState"), Some("Disabled"));
        assert_eq!(text_field(smpquery, "LinkState"), Some("Initialize"));
        assert_eq!(
            text_field(smpquery, "Port info"),
            None,
            "header lines are not fields"
        );
        assert_eq!(text_field(smpquery, "Lid"), None);
    }

    #[test]
    fn malformed_blocks_are_typed_errors_with_their_line() {
        let cases = [
            ("# Port counters: port 3", "a header without `Lid N port N`"),
            (
                "# Port counters: Lid x port 3",
                "a header without `Lid N port N`",
            ),
            ("# Port counters: Lid 5 port 300", "a port above 255"),
            ("# Port counters: Lid 70000 port 3", "a LID above 65535"),
            (
                "SymbolErrorCounter:..............many",
                "a field whose value is no number",
            ),
            (
                "CounterSelect:...................0xzz",
                "a field whose value is no number",
            ),
        ];
        for (line, what) in cases {
            let text = format!("# Port counters: Lid 1 port 1\nPortSelect:....1\n{line}\n");
            let e = perfquery_blocks(&text).unwrap_err();
            assert_eq!(
                e,
                BlockError {
                    line: 3,
                    what,
                    text: line.to_owned()
                }
            );
        }
    }
}
