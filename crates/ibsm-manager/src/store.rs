//! Persistence of GUID -> LID assignments, so LIDs survive SM restarts and failovers.
//!
//! [`FileLidStore`] reads and writes OpenSM's `guid2lid` format: one port per line,
//! `0x<port GUID> 0x<min LID> 0x<max LID>`, `#` comments.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What is wrong with a line of a `guid2lid` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Guid2LidErrorKind {
    /// Not three fields.
    #[error("{found} fields, expected `0x<guid> 0x<min lid> 0x<max lid>`")]
    FieldCount {
        /// Fields found.
        found: usize,
    },
    /// The GUID is not a hexadecimal 64-bit number.
    #[error("bad GUID")]
    BadGuid,
    /// A LID is not a hexadecimal number.
    #[error("bad LID")]
    BadLid,
    /// A LID is 0 or above the unicast range.
    #[error("LID outside the unicast range 0x1..=0xBFFF")]
    LidOutOfRange,
    /// The max LID is below the min LID.
    #[error("max LID below min LID")]
    EmptyRange,
    /// The range is not `2^lmc` LIDs (LMC 0..=7) starting at a multiple of its size.
    #[error("LID range is not an aligned power of two (LMC)")]
    NotAligned,
}

/// Why a [`LidStore`] could not load or save.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A `guid2lid` line the parser refused.
    #[error("{file}:{line}: {kind}: {token:?}")]
    Parse {
        /// The file (or whatever name the text was given).
        file: String,
        /// 1-based line number.
        line: usize,
        /// The offending token (the whole line when the field count is wrong, both
        /// LIDs when the range as a whole is wrong).
        token: String,
        /// What is wrong.
        kind: Guid2LidErrorKind,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Another store's own failure (a database, a remote service, ...).
    #[error("{0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Where the engine keeps GUID -> (base LID, LMC).
pub trait LidStore {
    /// Every stored assignment.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be read or holds something invalid.
    fn load(&mut self) -> Result<BTreeMap<u64, (u16, u8)>, StoreError>;
    /// Replaces the stored assignments.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be written.
    fn save(&mut self, map: &BTreeMap<u64, (u16, u8)>) -> Result<(), StoreError>;
}

/// A store that lives in memory only (the default; tests and simulations).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryLidStore {
    /// The current content.
    pub map: BTreeMap<u64, (u16, u8)>,
}

impl LidStore for MemoryLidStore {
    fn load(&mut self) -> Result<BTreeMap<u64, (u16, u8)>, StoreError> {
        Ok(self.map.clone())
    }
    fn save(&mut self, map: &BTreeMap<u64, (u16, u8)>) -> Result<(), StoreError> {
        self.map.clone_from(map);
        Ok(())
    }
}

/// OpenSM's `guid2lid` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLidStore {
    path: PathBuf,
}

impl FileLidStore {
    /// A store at `path` (it need not exist yet).
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Parses `guid2lid` text; `source` names it in errors (usually the file's path).
///
/// # Errors
/// [`StoreError::Parse`] naming the line, the offending token and what is wrong: not
/// three fields, a field that is not a hexadecimal number, a LID outside the unicast
/// range, a max LID below the min, or a range that is not an aligned power of two.
pub fn parse_guid2lid(text: &str, source: &str) -> Result<BTreeMap<u64, (u16, u8)>, StoreError> {
    let mut map = BTreeMap::new();
    for (n, line) in ibsm_topology::lines::content_lines(text) {
        let err = |kind: Guid2LidErrorKind, token: &str| StoreError::Parse {
            file: source.to_owned(),
            line: n,
            token: token.to_owned(),
            kind,
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        let &[guid_s, min_s, max_s] = fields.as_slice() else {
            return Err(err(
                Guid2LidErrorKind::FieldCount {
                    found: fields.len(),
                },
                line,
            ));
        };
        let hex =
            |s: &str| u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16);
        let guid = hex(guid_s).map_err(|_| err(Guid2LidErrorKind::BadGuid, guid_s))?;
        let min = hex(min_s).map_err(|_| err(Guid2LidErrorKind::BadLid, min_s))?;
        let max = hex(max_s).map_err(|_| err(Guid2LidErrorKind::BadLid, max_s))?;
        for (lid, token) in [(min, min_s), (max, max_s)] {
            if lid == 0 || lid >= 0xC000 {
                return Err(err(Guid2LidErrorKind::LidOutOfRange, token));
            }
        }
        let range = || format!("{min_s} {max_s}");
        if max < min {
            return Err(err(Guid2LidErrorKind::EmptyRange, &range()));
        }
        let count = max - min + 1;
        if !count.is_power_of_two() || count > 128 || min % count != 0 {
            return Err(err(Guid2LidErrorKind::NotAligned, &range()));
        }
        map.insert(guid, (min as u16, count.trailing_zeros() as u8));
    }
    Ok(map)
}

/// Formats `guid2lid` text.
#[must_use]
pub fn format_guid2lid(map: &BTreeMap<u64, (u16, u8)>) -> String {
    let mut s = String::with_capacity(map.len() * 36);
    for (guid, (lid, lmc)) in map {
        let max = u32::from(*lid) + (1u32 << lmc) - 1;
        s.push_str(&format!("0x{guid:016x} 0x{lid:04x} 0x{max:04x}\n"));
    }
    s
}

impl LidStore for FileLidStore {
    fn load(&mut self) -> Result<BTreeMap<u64, (u16, u8)>, StoreError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => parse_guid2lid(&text, &self.path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(source) => Err(StoreError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }

    fn save(&mut self, map: &BTreeMap<u64, (u16, u8)>) -> Result<(), StoreError> {
        // Through a new temporary file under an unguessable name, then a rename: no
        // half file after a crash, and no link planted at either name is written
        // through (`crate::persist`).
        crate::persist::write_atomic(&self.path, format_guid2lid(map).as_bytes()).map_err(|e| {
            StoreError::Io {
                path: e.path,
                source: e.source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Links planted at the old predictable temporary name (`guid2lid.tmp`) and at the
    /// file's own name redirect no write: their targets keep their bytes and guid2lid
    /// becomes a regular file. (Planted: `std::fs::write` to `with_extension("tmp")`
    /// -> the victim behind `guid2lid.tmp` is overwritten.)
    #[test]
    fn save_writes_through_no_planted_link() {
        let d = std::env::temp_dir().join(format!("ibsm-store-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let (v1, v2) = (d.join("victim1"), d.join("victim2"));
        std::fs::write(&v1, b"one").unwrap();
        std::fs::write(&v2, b"two").unwrap();
        let path = d.join("guid2lid");
        std::os::unix::fs::symlink(&v1, d.join("guid2lid.tmp")).unwrap();
        std::os::unix::fs::symlink(&v2, &path).unwrap();
        let mut store = FileLidStore::new(&path);
        let map = BTreeMap::from([(0x11u64, (5u16, 0u8))]);
        store.save(&map).unwrap();
        assert_eq!(std::fs::read(&v1).unwrap(), b"one");
        assert_eq!(std::fs::read(&v2).unwrap(), b"two");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(store.load().unwrap(), map);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn guid2lid_roundtrip_and_errors() {
        let text = "# comment\n0x0002c90300001234 0x0001 0x0001\n0x0002c90300005678 0x0004 0x0007 # lmc 2\n";
        let map = parse_guid2lid(text, "g").unwrap();
        assert_eq!(map[&0x0002_c903_0000_1234], (1, 0));
        assert_eq!(map[&0x0002_c903_0000_5678], (4, 2));
        assert_eq!(parse_guid2lid(&format_guid2lid(&map), "g").unwrap(), map);
        let e = parse_guid2lid("0x1 0x5 0x7\n", "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("f:1") && e.contains("aligned"), "{e}");
    }

    /// The kind and the offending token of a one-line file's error, from line 2 (a
    /// comment line first, so the line number is checked too).
    fn parse_error(line: &str) -> (Guid2LidErrorKind, String) {
        match parse_guid2lid(&format!("# x\n{line}\n"), "g2l") {
            Err(StoreError::Parse {
                file,
                line: 2,
                token,
                kind,
            }) if file == "g2l" => (kind, token),
            other => panic!("{line:?}: {other:?}"),
        }
    }

    #[test]
    fn guid2lid_errors_name_the_token() {
        let cases = [
            (
                "0x1 0x5",
                Guid2LidErrorKind::FieldCount { found: 2 },
                "0x1 0x5",
            ),
            (
                "0x1 0x4 0x4 0x4",
                Guid2LidErrorKind::FieldCount { found: 4 },
                "0x1 0x4 0x4 0x4",
            ),
            ("zz 0x1 0x1", Guid2LidErrorKind::BadGuid, "zz"),
            ("0x1 0xg 0x1", Guid2LidErrorKind::BadLid, "0xg"),
            ("0x1 0x1 0xg", Guid2LidErrorKind::BadLid, "0xg"),
            ("0x1 0x0 0x1", Guid2LidErrorKind::LidOutOfRange, "0x0"),
            ("0x1 0x8 0xC000", Guid2LidErrorKind::LidOutOfRange, "0xC000"),
            ("0x1 0x8 0x7", Guid2LidErrorKind::EmptyRange, "0x8 0x7"),
            ("0x1 0x5 0x7", Guid2LidErrorKind::NotAligned, "0x5 0x7"),
            ("0x1 0x4 0x6", Guid2LidErrorKind::NotAligned, "0x4 0x6"),
            (
                "0x1 0x100 0x1ff",
                Guid2LidErrorKind::NotAligned,
                "0x100 0x1ff",
            ),
        ];
        for (line, kind, token) in cases {
            assert_eq!(parse_error(line), (kind, token.to_owned()), "{line:?}");
        }
    }

    #[test]
    fn file_store_io_error_names_the_path() {
        // A directory where the file should be: reading it fails with something other
        // than NotFound, writing it fails on the rename.
        let dir = std::env::temp_dir().join(format!("ibsm-guid2lid-dir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = FileLidStore::new(&dir);
        match s.load() {
            Err(StoreError::Io { path, .. }) => assert_eq!(path, dir),
            other => panic!("{other:?}"),
        }
        match s.save(&BTreeMap::new()) {
            Err(StoreError::Io { path, .. }) => assert_eq!(path, dir),
            other => panic!("{other:?}"),
        }
        std::fs::remove_file(dir.with_extension("tmp")).ok();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn file_store() {
        let dir = std::env::temp_dir().join(format!("ibsm-guid2lid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = FileLidStore::new(dir.join("guid2lid"));
        assert!(s.load().unwrap().is_empty());
        let mut m = BTreeMap::new();
        m.insert(7u64, (8u16, 3u8));
        s.save(&m).unwrap();
        assert_eq!(s.load().unwrap(), m);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
