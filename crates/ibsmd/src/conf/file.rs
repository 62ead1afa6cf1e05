//! The configuration file in OpenSM's `opensm.conf` format: `key value` lines and `#`
//! comments. The options are [`super::OPTIONS`]'s (those with a section); OpenSM's
//! options ibsmd does not implement are in [`crate::opensm_keys`].

use std::path::{Path, PathBuf};

use super::options::{Section, by_name};
use super::{At, Error, Key, OPTIONS, Settings};

/// Something a file said that ibsmd goes on without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileWarning {
    /// An OpenSM option ibsmd does not implement.
    Unimplemented {
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
        /// The key.
        key: String,
        /// Its value as written.
        value: String,
    },
    /// A key neither ibsmd nor OpenSM has.
    Unknown {
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
        /// The key.
        key: String,
    },
    /// `partition_config_file` names a file that is not there: OpenSM's default policy
    /// is in force.
    NoPartitionFile {
        /// The configuration file.
        file: PathBuf,
        /// The line that named it.
        line: usize,
        /// The partitions file named.
        path: PathBuf,
    },
}

impl std::fmt::Display for FileWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unimplemented {
                file,
                line,
                key,
                value,
            } => write!(
                f,
                "{}:{line}: {key} {value}: an OpenSM option ibsmd does not implement; ignored",
                file.display()
            ),
            Self::Unknown { file, line, key } => {
                write!(
                    f,
                    "{}:{line}: {key}: unknown option; ignored",
                    file.display()
                )
            }
            Self::NoPartitionFile { file, line, path } => write!(
                f,
                "{}:{line}: partition_config_file {}: no such file; OpenSM's default policy is in force",
                file.display(),
                path.display()
            ),
        }
    }
}

/// What reading a file found besides the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileReport {
    /// Options ibsmd does not implement, set to something else than OpenSM's default,
    /// and unknown keys.
    pub(crate) warnings: Vec<FileWarning>,
    /// Options ibsmd does not implement left at OpenSM's default (harmless).
    pub(crate) ignored: Vec<FileWarning>,
    /// The line each option was set on, with its value (a later line wins, as in
    /// OpenSM).
    pub(crate) lines: Vec<(Key, usize, String)>,
}

impl FileReport {
    /// The line and token that last set `key`, if the file did.
    pub(crate) fn line_of(&self, key: Key) -> Option<(usize, &str)> {
        self.lines
            .iter()
            .rev()
            .find(|(k, _, _)| *k == key)
            .map(|(_, l, t)| (*l, t.as_str()))
    }
}

/// Applies the text of a configuration file (`file` for messages) over `s`.
///
/// # Errors
/// The first value that does not read: file, line, key, token and why.
pub(crate) fn parse(text: &str, file: &Path, s: &mut Settings) -> Result<FileReport, Error> {
    let mut report = FileReport::default();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(k, v)| (k, v.trim()));
        if let Some(o) = by_name(key) {
            if value.is_empty() {
                return Err(Error::NoValue {
                    file: file.to_owned(),
                    line: n,
                    key: o.key,
                });
            }
            (o.access.set)(s, value).map_err(|source| Error::Value {
                at: Box::new(At::File {
                    file: file.to_owned(),
                    line: n,
                    key: o.key,
                    token: value.to_owned(),
                }),
                source,
            })?;
            report.lines.push((o.key, n, value.to_owned()));
        } else if let Some((_, default)) = crate::opensm_keys::UNIMPLEMENTED
            .iter()
            .find(|(k, _)| *k == key)
        {
            let w = FileWarning::Unimplemented {
                file: file.to_owned(),
                line: n,
                key: key.to_owned(),
                value: value.to_owned(),
            };
            if value == *default {
                report.ignored.push(w);
            } else {
                report.warnings.push(w);
            }
        } else {
            report.warnings.push(FileWarning::Unknown {
                file: file.to_owned(),
                line: n,
                key: key.to_owned(),
            });
        }
    }
    Ok(report)
}

/// The settings in OpenSM's configuration format, every option of the file with its
/// comment, by section in the table's order.
pub(crate) fn write(s: &Settings) -> String {
    let mut out = String::from(
        "# ibsmd configuration (OpenSM's opensm.conf format, read with ibsmd -F FILE)\n\n",
    );
    let mut section: Option<Section> = None;
    for o in OPTIONS {
        let Some(title) = o.section.title() else {
            continue;
        };
        if section != Some(o.section) {
            section = Some(o.section);
            out.push_str(&format!("#\n# {title}\n#\n"));
        }
        for l in o.help.lines() {
            out.push_str(&format!("# {l}\n"));
        }
        out.push_str(&format!("{} {}\n\n", o.name, (o.access.get)(s)));
    }
    out
}
