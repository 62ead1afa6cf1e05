//! The isolation file: the ports the health policy isolates ([`crate::health`]),
//! kept so that an isolation survives an SM restart and a failover.
//!
//! The master writes the file whenever the set of isolated ports changes (a port
//! marked with an action that isolates, taken back, isolated or cleared by the
//! operator); the engine reads it at start and when it takes over as master, and marks
//! what it lists again ([`crate::health::Health::restore`]). ibsmd keeps it beside
//! `guid2lid` (the dump directory), so a standby reading the same directory takes the
//! isolations over with the LIDs.
//!
//! One port per line, `#` comments, fields separated by white space:
//!
//! ```text
//! # node GUID          port condition action  since (Unix seconds)
//! 0x0002c90300001234   7    manual    isolate 1764700000
//! 0x0002c90300005678   1    flapping  disable 1764700123
//! ```
//!
//! The condition and action are [`Condition::name`] and [`Action::name`]; the time is
//! when the port was first written to the file (the engine's clock is not the wall
//! clock, so [`FileIsolationStore`] stamps new entries as it writes them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::health::{Action, Condition, PortKey};

/// One isolated port, as the file keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsolatedPort {
    /// The port.
    pub port: PortKey,
    /// What it was isolated for.
    pub condition: Condition,
    /// What was done with it.
    pub action: Action,
    /// When it was first written to the file, in seconds since the Unix epoch (0:
    /// not yet stamped; [`FileIsolationStore`] stamps it when it writes it).
    pub since: u64,
}

/// What is wrong with a line of an isolation file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IsolationErrorKind {
    /// Not five fields.
    #[error("{found} fields, expected `0x<node guid> <port> <condition> <action> <since>`")]
    FieldCount {
        /// Fields found.
        found: usize,
    },
    /// The node GUID is not a `0x` hexadecimal 64-bit number.
    #[error("bad node GUID")]
    BadGuid,
    /// The port is not a number from 1 to 254.
    #[error("bad port number (1..=254)")]
    BadPort,
    /// No such condition.
    #[error(
        "unknown condition (reboot, flapping, unresponsive, noisy_traps, set_err, manual, high_ber)"
    )]
    BadCondition,
    /// No such action, or one that does not isolate.
    #[error("bad action (isolate, disable, no_discover)")]
    BadAction,
    /// The time is not a decimal number of seconds.
    #[error("bad time (seconds since the Unix epoch)")]
    BadTime,
    /// The port is listed twice.
    #[error("port listed twice")]
    Duplicate,
}

/// Why the isolation file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IsolationError {
    /// A line the parser refused.
    #[error("{file}:{line}: {kind}: {token:?}")]
    Parse {
        /// The file (or whatever name the text was given).
        file: String,
        /// 1-based line number.
        line: usize,
        /// The offending field (the whole line when the field count is wrong).
        token: String,
        /// What is wrong.
        kind: IsolationErrorKind,
    },
    /// Reading or writing the file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Parses an isolation file's text; `source` names it in errors.
///
/// # Errors
/// [`IsolationError::Parse`] naming the line, the offending field and what is wrong.
pub fn parse_isolated(text: &str, source: &str) -> Result<Vec<IsolatedPort>, IsolationError> {
    let mut out: Vec<IsolatedPort> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (n, line) in ibsm_topology::lines::content_lines(text) {
        let err = |kind: IsolationErrorKind, token: &str| IsolationError::Parse {
            file: source.to_owned(),
            line: n,
            token: token.chars().take(64).collect(),
            kind,
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        let &[guid_s, port_s, cond_s, action_s, since_s] = fields.as_slice() else {
            return Err(err(
                IsolationErrorKind::FieldCount {
                    found: fields.len(),
                },
                line,
            ));
        };
        let guid = guid_s
            .strip_prefix("0x")
            .or_else(|| guid_s.strip_prefix("0X"))
            .filter(|h| !h.is_empty() && h.len() <= 16)
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| err(IsolationErrorKind::BadGuid, guid_s))?;
        let port = port_s
            .parse::<u8>()
            .ok()
            .filter(|p| (1..=254).contains(p))
            .ok_or_else(|| err(IsolationErrorKind::BadPort, port_s))?;
        let condition = Condition::from_name(cond_s)
            .ok_or_else(|| err(IsolationErrorKind::BadCondition, cond_s))?;
        let action = Action::from_name(action_s)
            .filter(|a| a.isolates())
            .ok_or_else(|| err(IsolationErrorKind::BadAction, action_s))?;
        let since = Some(since_s)
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| err(IsolationErrorKind::BadTime, since_s))?;
        let port = PortKey::new(guid, port);
        if !seen.insert(port) {
            return Err(err(IsolationErrorKind::Duplicate, line));
        }
        out.push(IsolatedPort {
            port,
            condition,
            action,
            since,
        });
    }
    Ok(out)
}

/// The text of an isolation file listing `ports` (what [`parse_isolated`] reads back).
#[must_use]
pub fn format_isolated(ports: &[IsolatedPort]) -> String {
    let mut s = String::from(
        "# ibsm isolated ports: node GUID, port, condition, action, since (Unix seconds)\n",
    );
    for p in ports {
        s.push_str(&format!(
            "0x{:016x} {} {} {} {}\n",
            p.port.node,
            p.port.port,
            p.condition.name(),
            p.action.name(),
            p.since
        ));
    }
    s
}

/// Where the engine keeps its isolated ports
/// ([`SubnetManager::set_isolation_store`](crate::SubnetManager::set_isolation_store)).
pub trait IsolationStore: std::fmt::Debug {
    /// Every stored isolation.
    ///
    /// # Errors
    /// [`IsolationError`] when the store cannot be read or holds something invalid.
    fn load(&mut self) -> Result<Vec<IsolatedPort>, IsolationError>;

    /// Replaces what is stored with `ports` (their `since` 0 where the engine does not
    /// know it: a store with a clock stamps them, and keeps the stamps it has).
    ///
    /// # Errors
    /// [`IsolationError`] when the store cannot be written.
    fn save(&mut self, ports: &[IsolatedPort]) -> Result<(), IsolationError>;
}

/// A store in memory (the default): isolations last as long as the engine. Clones
/// share the same store, so tests can hand one to two engines (a master and the
/// standby that takes over).
#[derive(Debug, Default, Clone)]
pub struct MemoryIsolationStore {
    ports: std::sync::Arc<std::sync::Mutex<Vec<IsolatedPort>>>,
}

impl IsolationStore for MemoryIsolationStore {
    fn load(&mut self) -> Result<Vec<IsolatedPort>, IsolationError> {
        Ok(self.ports.lock().map(|p| p.clone()).unwrap_or_default())
    }

    fn save(&mut self, ports: &[IsolatedPort]) -> Result<(), IsolationError> {
        if let Ok(mut p) = self.ports.lock() {
            *p = ports.to_vec();
        }
        Ok(())
    }
}

/// The isolation file ([module docs](self)), written atomically
/// ([`crate::persist::write_atomic`]: no half file, no planted link written through).
#[derive(Debug)]
pub struct FileIsolationStore {
    path: PathBuf,
    /// The time each port was first written, as read or stamped.
    stamps: BTreeMap<PortKey, u64>,
}

impl FileIsolationStore {
    /// A store in `path` (created at the first save; a missing file reads as empty).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            stamps: BTreeMap::new(),
        }
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl IsolationStore for FileIsolationStore {
    fn load(&mut self) -> Result<Vec<IsolatedPort>, IsolationError> {
        let ports = match std::fs::read_to_string(&self.path) {
            Ok(text) => parse_isolated(&text, &self.path.display().to_string())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => {
                return Err(IsolationError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        for p in &ports {
            self.stamps.insert(p.port, p.since);
        }
        Ok(ports)
    }

    fn save(&mut self, ports: &[IsolatedPort]) -> Result<(), IsolationError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let stamped: Vec<IsolatedPort> = ports
            .iter()
            .map(|p| {
                let since = match (p.since, self.stamps.get(&p.port)) {
                    (0, Some(&t)) => t,
                    (0, None) => now,
                    (t, _) => t,
                };
                IsolatedPort { since, ..*p }
            })
            .collect();
        crate::persist::write_atomic(&self.path, format_isolated(&stamped).as_bytes()).map_err(
            |e| IsolationError::Io {
                path: e.path,
                source: e.source,
            },
        )?;
        self.stamps = stamped.iter().map(|p| (p.port, p.since)).collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_error(line: &str) -> (IsolationErrorKind, String) {
        match parse_isolated(&format!("# x\n{line}\n"), "iso") {
            Err(IsolationError::Parse {
                file,
                line: 2,
                token,
                kind,
            }) if file == "iso" => (kind, token),
            other => panic!("{line:?}: {other:?}"),
        }
    }

    #[test]
    fn errors_name_line_and_field() {
        let cases = [
            (
                "0x1 2 manual isolate",
                IsolationErrorKind::FieldCount { found: 4 },
                "0x1 2 manual isolate",
            ),
            ("1 2 manual isolate 0", IsolationErrorKind::BadGuid, "1"),
            ("0x 2 manual isolate 0", IsolationErrorKind::BadGuid, "0x"),
            (
                "0x11111111111111111 2 manual isolate 0",
                IsolationErrorKind::BadGuid,
                "0x11111111111111111",
            ),
            ("0x1 0 manual isolate 0", IsolationErrorKind::BadPort, "0"),
            (
                "0x1 255 manual isolate 0",
                IsolationErrorKind::BadPort,
                "255",
            ),
            (
                "0x1 2 sunspots isolate 0",
                IsolationErrorKind::BadCondition,
                "sunspots",
            ),
            (
                "0x1 2 manual report 0",
                IsolationErrorKind::BadAction,
                "report",
            ),
            ("0x1 2 manual isolate -1", IsolationErrorKind::BadTime, "-1"),
            ("0x1 2 manual isolate +1", IsolationErrorKind::BadTime, "+1"),
        ];
        for (line, kind, token) in cases {
            assert_eq!(parse_error(line), (kind, token.to_owned()), "{line:?}");
        }
        let twice = "0x1 2 manual isolate 0\n0x1 2 flapping disable 5\n";
        assert!(matches!(
            parse_isolated(twice, "f"),
            Err(IsolationError::Parse {
                line: 2,
                kind: IsolationErrorKind::Duplicate,
                ..
            })
        ));
    }

    #[test]
    fn file_store_stamps_new_ports_and_keeps_old_stamps() {
        let d = std::env::temp_dir().join(format!("ibsm-isolation-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let path = d.join("isolated");
        let victim = d.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let mut s = FileIsolationStore::new(&path);
        let p = |n: u64, since: u64| IsolatedPort {
            port: PortKey::new(n, 1),
            condition: Condition::Manual,
            action: Action::Isolate,
            since,
        };
        s.save(&[p(1, 0)]).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep", "no link followed");
        let first = FileIsolationStore::new(&path).load().unwrap();
        assert!(first[0].since > 0, "stamped");
        let mut again = FileIsolationStore::new(&path);
        again.load().unwrap();
        again.save(&[p(1, 0), p(2, 0)]).unwrap();
        let second = again.load().unwrap();
        assert_eq!(second[0].since, first[0].since, "old stamp kept");
        assert_eq!(second.len(), 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn port() -> impl Strategy<Value = IsolatedPort> {
        let isolating = [Action::Isolate, Action::Disable, Action::NoDiscover];
        (
            any::<u64>(),
            1u8..=254,
            0..Condition::ALL.len(),
            0..isolating.len(),
            any::<u64>(),
        )
            .prop_map(move |(node, port, c, a, since)| IsolatedPort {
                port: PortKey::new(node, port),
                condition: Condition::ALL[c],
                action: isolating[a],
                since,
            })
    }

    proptest! {
        /// Whatever is written is read back the same (ports unique, in any order).
        #[test]
        fn round_trip(ports in proptest::collection::vec(port(), 0..20)) {
            let mut seen = std::collections::BTreeSet::new();
            let ports: Vec<IsolatedPort> =
                ports.into_iter().filter(|p| seen.insert(p.port)).collect();
            let text = format_isolated(&ports);
            prop_assert_eq!(parse_isolated(&text, "p").unwrap(), ports);
        }

        /// Any text is parsed or refused with a typed error, never a panic.
        #[test]
        fn any_text(text in ".{0,200}") {
            let _ = parse_isolated(&text, "p");
        }
    }
}
