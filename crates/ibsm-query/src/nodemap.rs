//! Node-name maps in the infiniband-diags format (`ibnetdiscover --node-name-map`,
//! `ibqueryerrors`, OpenSM's `node_name_map_name`): friendly names for node GUIDs.
//!
//! ```text
//! # comment
//! 0x0008f104003f125c "IB1 (Rack 11 slot 1) leaf"
//! 0x0008f104003f125d spine-2          # unquoted: the rest of the line
//! ```
//!
//! A GUID is read as C's `strtoull(.., 0)` reads it (`0x` hex, a leading `0` octal,
//! otherwise decimal) and must be followed by white space, `#` or the end of the line.
//! The name runs from its opening quote to the closing quote, or (unquoted) to the end
//! of the line; like the diags, a `"` or `#` ends it. Where the diags silently do
//! something surprising this parser says so instead: a line that is not `GUID name`
//! is an [`NodeMapError`] naming the line and the token (the diags reject the whole
//! file too, but only print the line), and a second entry for a GUID (the diags keep
//! the first), a GUID without a name, or an unterminated quote are
//! [`NodeMapWarning`]s.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What was wrong with a line of a node-name map.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeMapProblem {
    /// The line does not start with a number.
    #[error("expected a GUID, found {token:?}")]
    NotAGuid {
        /// The first word of the line.
        token: String,
    },
    /// The GUID does not fit 64 bits.
    #[error("GUID {token:?} does not fit 64 bits")]
    GuidOverflow {
        /// The GUID as written.
        token: String,
    },
    /// Something other than white space or `#` follows the GUID's digits.
    #[error(
        "GUID {token:?} is followed by {rest:?} (white space, `#` or the end of the line expected)"
    )]
    GuidTrailing {
        /// The digits that were read.
        token: String,
        /// What follows them (up to the next white space).
        rest: String,
    },
}

/// A line of a node-name map that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}line {line}: {problem}", file_prefix(.file))]
pub struct NodeMapError {
    /// The file, when the map was read from one.
    pub file: Option<PathBuf>,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub problem: NodeMapProblem,
}

fn file_prefix(file: &Option<PathBuf>) -> String {
    file.as_ref()
        .map(|p| format!("{}: ", p.display()))
        .unwrap_or_default()
}

/// Reading a node-name map from a file failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeMapFileError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is wrong.
    #[error(transparent)]
    Parse(#[from] NodeMapError),
}

/// Something a node-name map says that the diags accept but probably is a mistake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeMapWarning {
    /// A GUID named again; the first name is kept, as the diags keep it.
    Duplicate {
        /// Line of the ignored entry.
        line: usize,
        /// Line of the entry in force.
        first: usize,
        /// The GUID.
        guid: u64,
    },
    /// A GUID with no name after it; the line is ignored.
    NoName {
        /// The line.
        line: usize,
        /// The GUID.
        guid: u64,
    },
    /// A quoted name without its closing quote; the rest of the line is the name.
    Unterminated {
        /// The line.
        line: usize,
        /// The GUID.
        guid: u64,
    },
    /// A `#` inside a quoted name ends it there, as in the diags.
    Truncated {
        /// The line.
        line: usize,
        /// The GUID.
        guid: u64,
    },
}

impl std::fmt::Display for NodeMapWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::Duplicate { line, first, guid } => write!(
                f,
                "line {line}: GUID {guid:#018x} already named on line {first}; the first name is kept"
            ),
            Self::NoName { line, guid } => {
                write!(f, "line {line}: GUID {guid:#018x} has no name; ignored")
            }
            Self::Unterminated { line, guid } => write!(
                f,
                "line {line}: the name of GUID {guid:#018x} has no closing quote"
            ),
            Self::Truncated { line, guid } => write!(
                f,
                "line {line}: a `#` inside the name of GUID {guid:#018x} ends it"
            ),
        }
    }
}

/// A node-name map: GUID to name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeNameMap {
    names: HashMap<u64, (String, usize)>,
    warnings: Vec<NodeMapWarning>,
}

impl NodeNameMap {
    /// An empty map (every lookup falls back to the node description).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a map's text.
    ///
    /// # Errors
    /// The first line that is not `GUID name`, a comment or blank.
    pub fn parse(text: &str) -> Result<Self, NodeMapError> {
        let mut map = Self::new();
        for (i, line) in text.lines().enumerate() {
            map.parse_line(i + 1, line)
                .map_err(|problem| NodeMapError {
                    file: None,
                    line: i + 1,
                    problem,
                })?;
        }
        Ok(map)
    }

    /// Reads and parses a map file.
    ///
    /// # Errors
    /// [`NodeMapFileError::Io`] when the file cannot be read (or is not UTF-8),
    /// [`NodeMapFileError::Parse`] with the file and line of a bad line.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, NodeMapFileError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| NodeMapFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|mut e| {
            e.file = Some(path.to_path_buf());
            NodeMapFileError::Parse(e)
        })
    }

    fn parse_line(&mut self, line: usize, text: &str) -> Result<(), NodeMapProblem> {
        let p = text.trim_start();
        if p.is_empty() || p.starts_with('#') {
            return Ok(());
        }
        let (guid, rest) = parse_guid(p)?;
        let rest = rest.trim_start();
        let (name, doubt) = if let Some(quoted) = rest.strip_prefix('"') {
            match quoted.find(['"', '#']) {
                Some(end) if quoted.as_bytes()[end] == b'#' => (
                    &quoted[..end],
                    Some(NodeMapWarning::Truncated { line, guid }),
                ),
                Some(end) => (&quoted[..end], None),
                None => (
                    quoted.trim_end(),
                    Some(NodeMapWarning::Unterminated { line, guid }),
                ),
            }
        } else {
            let end = rest.find(['"', '#']).unwrap_or(rest.len());
            (rest[..end].trim_end(), None)
        };
        if name.is_empty() {
            self.warnings.push(NodeMapWarning::NoName { line, guid });
            return Ok(());
        }
        self.warnings.extend(doubt);
        match self.names.get(&guid) {
            Some(&(_, first)) => {
                self.warnings
                    .push(NodeMapWarning::Duplicate { line, first, guid });
            }
            None => {
                self.names.insert(guid, (name.to_owned(), line));
            }
        }
        Ok(())
    }

    /// Adds (or replaces) a name.
    pub fn insert(&mut self, guid: u64, name: impl Into<String>) {
        self.names.insert(guid, (name.into(), 0));
    }

    /// The name given to `guid`, if any.
    #[must_use]
    pub fn get(&self, guid: u64) -> Option<&str> {
        self.names.get(&guid).map(|(n, _)| n.as_str())
    }

    /// What the diags print for a node: its mapped name, else its NodeDescription
    /// cleaned as the diags clean it (see [`clean_description`]).
    #[must_use]
    pub fn name_or(&self, guid: u64, description: &[u8]) -> String {
        self.get(guid)
            .map_or_else(|| clean_description(description), str::to_owned)
    }

    /// Number of names.
    #[must_use]
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no name is given.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The doubtful lines found while parsing.
    #[must_use]
    pub fn warnings(&self) -> &[NodeMapWarning] {
        &self.warnings
    }

    /// Every `(guid, name)`, in GUID order.
    #[must_use]
    pub fn entries(&self) -> Vec<(u64, &str)> {
        let mut v: Vec<(u64, &str)> = self
            .names
            .iter()
            .map(|(g, (n, _))| (*g, n.as_str()))
            .collect();
        v.sort_unstable_by_key(|e| e.0);
        v
    }

    /// The map in its file format, one quoted entry per line in GUID order; it parses
    /// back to the same names (names holding `"`, `#` or a line break cannot be
    /// written and are skipped, as the format has no escape).
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (guid, name) in self.entries() {
            if !name.contains(['"', '#', '\n', '\r']) {
                out.push_str(&format!("{guid:#018x} \"{name}\"\n"));
            }
        }
        out
    }
}

/// A NodeDescription as the diags print it: up to the first NUL, at most 63 bytes,
/// every byte that is not printable ASCII shown as a space.
#[must_use]
pub fn clean_description(description: &[u8]) -> String {
    description
        .iter()
        .take(63)
        .take_while(|&&b| b != 0)
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                ' '
            }
        })
        .collect()
}

/// Reads a GUID as `strtoull(p, &end, 0)` does; returns it and the rest of the line.
fn parse_guid(p: &str) -> Result<(u64, &str), NodeMapProblem> {
    let bytes = p.as_bytes();
    let (radix, start) = if bytes.len() > 2
        && bytes[0] == b'0'
        && (bytes[1] == b'x' || bytes[1] == b'X')
        && bytes[2].is_ascii_hexdigit()
    {
        (16, 2)
    } else if bytes.first() == Some(&b'0') {
        (8, 0)
    } else {
        (10, 0)
    };
    let digits = bytes[start..]
        .iter()
        .take_while(|b| char::from(**b).is_digit(radix))
        .count();
    let end = start + digits;
    let word_end = p
        .find(|c: char| c.is_whitespace() || c == '#')
        .unwrap_or(p.len());
    if digits == 0 {
        return Err(NodeMapProblem::NotAGuid {
            token: p[..word_end].to_owned(),
        });
    }
    let token = &p[..end];
    let guid =
        u64::from_str_radix(&p[start..end], radix).map_err(|_| NodeMapProblem::GuidOverflow {
            token: token.to_owned(),
        })?;
    let rest = &p[end..];
    match rest.chars().next() {
        None | Some('#') => Ok((guid, rest)),
        Some(c) if c.is_whitespace() => Ok((guid, rest)),
        Some(_) => Err(NodeMapProblem::GuidTrailing {
            token: token.to_owned(),
            rest: p[end..word_end.max(end)].to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_the_documented_example() {
        let map = NodeNameMap::parse(
            "# IB1\n# Line cards\n0x0008f104003f125c \"IB1 (Rack 11 slot 1   ) ISR9288/ISR9096 Voltaire sLB-24D\"\n\
             \t 0x0008f104003f10d2   \"IB1 (Rack 11 slot 2   ) ISR9288/ISR9096 Voltaire sLB-24D\"  # trailing\n\n",
        )
        .unwrap();
        assert_eq!(map.len(), 2);
        assert_eq!(
            map.get(0x0008_f104_003f_125c),
            Some("IB1 (Rack 11 slot 1   ) ISR9288/ISR9096 Voltaire sLB-24D")
        );
        assert_eq!(
            map.get(0x0008_f104_003f_10d2),
            Some("IB1 (Rack 11 slot 2   ) ISR9288/ISR9096 Voltaire sLB-24D")
        );
        assert!(map.warnings().is_empty());
    }

    #[test]
    fn guids_are_read_as_strtoull_base_0() {
        let map = NodeNameMap::parse("0X1F hex\n017 octal\n42 decimal\n0 zero\n").unwrap();
        assert_eq!(map.get(0x1f), Some("hex"));
        assert_eq!(map.get(0o17), Some("octal"));
        assert_eq!(map.get(42), Some("decimal"));
        assert_eq!(map.get(0), Some("zero"));
    }

    #[test]
    fn unquoted_names_run_to_the_end_or_a_comment() {
        let map = NodeNameMap::parse("0x10 spine 1  \n0x11 leaf#3 here\n").unwrap();
        assert_eq!(map.get(0x10), Some("spine 1"));
        assert_eq!(map.get(0x11), Some("leaf"));
    }

    #[test]
    fn bad_lines_name_the_line_and_token() {
        let e = err("0x1 a\nswitch-a \"x\"\n");
        assert_eq!(e.line, 2);
        assert_eq!(
            e.problem,
            NodeMapProblem::NotAGuid {
                token: "switch-a".into()
            }
        );
        let e = err("\n\n0x12g4 \"x\"\n");
        assert_eq!(e.line, 3);
        assert_eq!(
            e.problem,
            NodeMapProblem::GuidTrailing {
                token: "0x12".into(),
                rest: "g4".into()
            }
        );
        let e = err("0x1ffffffffffffffff big\n");
        assert_eq!(
            e.problem,
            NodeMapProblem::GuidOverflow {
                token: "0x1ffffffffffffffff".into()
            }
        );
        let e = err("09 \"not octal\"\n");
        assert!(matches!(e.problem, NodeMapProblem::GuidTrailing { .. }));
        assert_eq!(
            e.to_string(),
            "line 1: GUID \"0\" is followed by \"9\" (white space, `#` or the end of the line expected)"
        );
    }

    fn err(text: &str) -> NodeMapError {
        NodeNameMap::parse(text).expect_err("must be rejected")
    }

    #[test]
    fn doubtful_lines_are_warnings() {
        let map = NodeNameMap::parse(
            "0x1 \"first\"\n0x1 \"second\"\n0x2\n0x3 # only a comment\n0x4 \"open\n0x5 \"a#b\"\n",
        )
        .unwrap();
        assert_eq!(map.get(1), Some("first"));
        assert_eq!(map.get(2), None);
        assert_eq!(map.get(3), None);
        assert_eq!(map.get(4), Some("open"));
        assert_eq!(map.get(5), Some("a"));
        assert_eq!(
            map.warnings(),
            &[
                NodeMapWarning::Duplicate {
                    line: 2,
                    first: 1,
                    guid: 1
                },
                NodeMapWarning::NoName { line: 3, guid: 2 },
                NodeMapWarning::NoName { line: 4, guid: 3 },
                NodeMapWarning::Unterminated { line: 5, guid: 4 },
                NodeMapWarning::Truncated { line: 6, guid: 5 },
            ]
        );
    }

    #[test]
    fn files_errors_carry_the_path() {
        let dir = std::env::temp_dir().join(format!("ibsm_nodemap_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("map");
        std::fs::write(&f, "0x1 a\nbad\n").unwrap();
        let e = NodeNameMap::from_file(&f).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: line 2: expected a GUID, found \"bad\"", f.display())
        );
        let missing = NodeNameMap::from_file(dir.join("none")).unwrap_err();
        assert!(matches!(missing, NodeMapFileError::Io { .. }));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn descriptions_are_cleaned_as_the_diags_clean_them() {
        let mut d = [0u8; 64];
        d[..7].copy_from_slice(b"ab\tc\x7fd\0");
        assert_eq!(clean_description(&d), "ab c d");
        let long = [b'x'; 64];
        assert_eq!(clean_description(&long).len(), 63);
        let map = NodeNameMap::parse("0x5 mapped\n").unwrap();
        assert_eq!(map.name_or(5, b"desc"), "mapped");
        assert_eq!(map.name_or(6, b"desc"), "desc");
    }

    proptest! {
        #[test]
        fn written_maps_read_back(entries in proptest::collection::hash_map(
            any::<u64>(), "[ -!$-~]{0,40}", 0..20)) {
            let mut map = NodeNameMap::new();
            for (g, n) in &entries {
                map.insert(*g, n.clone());
            }
            let back = NodeNameMap::parse(&map.to_text()).unwrap();
            for (g, n) in &entries {
                if n.is_empty() {
                    prop_assert_eq!(back.get(*g), None);
                } else {
                    prop_assert_eq!(back.get(*g), Some(n.as_str()));
                }
            }
        }

        #[test]
        fn never_panics(text in "\\PC{0,200}") {
            let _ = NodeNameMap::parse(&text);
        }
    }
}
