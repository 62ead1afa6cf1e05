//! Persistence of GUID -> LID assignments, so LIDs survive SM restarts and failovers.
//!
//! [`FileLidStore`] reads and writes OpenSM's `guid2lid` format: one port per line,
//! `0x<port GUID> 0x<min LID> 0x<max LID>`, `#` comments.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::SmError;

/// Where the engine keeps GUID -> (base LID, LMC).
pub trait LidStore {
    /// Every stored assignment.
    fn load(&mut self) -> Result<BTreeMap<u64, (u16, u8)>, SmError>;
    /// Replaces the stored assignments.
    fn save(&mut self, map: &BTreeMap<u64, (u16, u8)>) -> Result<(), SmError>;
}

/// A store that lives in memory only (the default; tests and simulations).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryLidStore {
    /// The current content.
    pub map: BTreeMap<u64, (u16, u8)>,
}

impl LidStore for MemoryLidStore {
    fn load(&mut self) -> Result<BTreeMap<u64, (u16, u8)>, SmError> {
        Ok(self.map.clone())
    }
    fn save(&mut self, map: &BTreeMap<u64, (u16, u8)>) -> Result<(), SmError> {
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

/// Parses `guid2lid` text.
///
/// # Errors
/// [`SmError::Config`] naming the line and what is wrong: not three numbers, a max LID
/// below the min, a range that is not a power of two, or a LID outside the unicast range.
pub fn parse_guid2lid(text: &str, source: &str) -> Result<BTreeMap<u64, (u16, u8)>, SmError> {
    let mut map = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |what: &str| SmError::Config(format!("{source}:{}: {what}: {raw:?}", i + 1));
        let nums: Vec<&str> = line.split_whitespace().collect();
        if nums.len() != 3 {
            return Err(err("expected `0x<guid> 0x<min lid> 0x<max lid>`"));
        }
        let hex =
            |s: &str| u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16);
        let guid = hex(nums[0]).map_err(|_| err("bad GUID"))?;
        let min = hex(nums[1]).map_err(|_| err("bad min LID"))?;
        let max = hex(nums[2]).map_err(|_| err("bad max LID"))?;
        if min == 0 || max < min || max >= 0xC000 {
            return Err(err("LID range outside 0x1..0xBFFF"));
        }
        let count = max - min + 1;
        if !count.is_power_of_two() || count > 128 || min % count != 0 {
            return Err(err("LID range is not an aligned power of two (LMC)"));
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
    fn load(&mut self) -> Result<BTreeMap<u64, (u16, u8)>, SmError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => parse_guid2lid(&text, &self.path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(SmError::Config(format!("{}: {e}", self.path.display()))),
        }
    }

    fn save(&mut self, map: &BTreeMap<u64, (u16, u8)>) -> Result<(), SmError> {
        // Write a sibling file and rename it, so a crash never leaves half a file.
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, format_guid2lid(map))
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| SmError::Config(format!("{}: {e}", self.path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(parse_guid2lid("0x1 0x5\n", "f").is_err());
        assert!(parse_guid2lid("0x1 0xC000 0xC000\n", "f").is_err());
        assert!(parse_guid2lid("zz 0x1 0x1\n", "f").is_err());
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
