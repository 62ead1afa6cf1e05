//! The log: `tracing` events (the daemon's and the library's) through
//! `tracing-subscriber`, at the level OpenSM's `log_flags` (or `RUST_LOG`) asks for,
//! to stderr, stdout or a file that SIGUSR1 reopens (logrotate renames it, then signals).

use std::fs::{File, OpenOptions};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

use crate::conf::{LogFormat, LogTarget};

/// The `tracing` level OpenSM's log flags stand for: errors (0x01) with warnings, info
/// (0x02), debug (0x04, OpenSM's VERBOSE), trace (0x08 and up); 0 turns logging off.
pub(crate) fn level(flags: u8) -> &'static str {
    match flags {
        0 => "off",
        f if f >= 0x08 => "trace",
        f if f >= 0x04 => "debug",
        f if f >= 0x02 => "info",
        _ => "warn",
    }
}

/// The filter for `flags`: the daemon's own lines at `level(flags)`; the library's at
/// warn up to info (its info lines are per sweep phase, the daemon's SUBNET UP says
/// it), at `level(flags)` from debug on.
pub(crate) fn directives(flags: u8) -> String {
    match level(flags) {
        "info" => "warn,ibsmd=info".to_owned(),
        l => l.to_owned(),
    }
}

/// A log file that can be swapped for a new one under the same name.
#[derive(Clone)]
struct LogFile {
    path: PathBuf,
    file: Arc<Mutex<File>>,
}

/// One log line's hold on the file.
struct LogFileWriter<'a>(MutexGuard<'a, File>);

impl Write for LogFileWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl<'a> MakeWriter<'a> for LogFile {
    type Writer = LogFileWriter<'a>;
    fn make_writer(&'a self) -> Self::Writer {
        // A line that panicked half-written must not silence the log for good.
        LogFileWriter(self.file.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Why the log cannot be set up or changed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LogError {
    /// The log file cannot be opened.
    #[error("log file {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// `RUST_LOG` does not parse.
    #[error("RUST_LOG={value}: {source}")]
    Env {
        /// Its value.
        value: String,
        /// Why it does not parse.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// A global subscriber is installed already.
    #[error("log: {0}")]
    Install(#[source] tracing_subscriber::util::TryInitError),
    /// `RUST_LOG` decides the level: neither `log_flags` nor `log-level` change it.
    #[error("RUST_LOG is set and decides the log level")]
    FromEnv,
    /// The subscriber is gone.
    #[error("log filter: {0}")]
    Reload(#[source] reload::Error),
}

fn open(path: &Path, append: bool) -> Result<File, LogError> {
    let mut o = OpenOptions::new();
    o.create(true);
    if append {
        o.append(true);
    } else {
        o.write(true).truncate(true);
    }
    o.open(path).map_err(|source| LogError::Open {
        path: path.to_owned(),
        source,
    })
}

/// The installed log: what a SIGHUP or SIGUSR1 can change.
pub(crate) struct Log {
    filter: reload::Handle<EnvFilter, Registry>,
    file: Option<LogFile>,
    /// `RUST_LOG` was set: it, not `log_flags`, says what is logged.
    from_env: bool,
}

impl Log {
    /// Installs the global subscriber.
    ///
    /// # Errors
    /// A log file that cannot be opened, a `RUST_LOG` that does not parse.
    pub(crate) fn init(
        flags: u8,
        target: &LogTarget,
        append: bool,
        format: LogFormat,
    ) -> Result<Self, LogError> {
        let env = std::env::var("RUST_LOG").ok().filter(|s| !s.is_empty());
        let filter = match &env {
            Some(d) => EnvFilter::try_new(d).map_err(|source| LogError::Env {
                value: d.clone(),
                source,
            })?,
            None => EnvFilter::new(directives(flags)),
        };
        let (filter, handle) = reload::Layer::new(filter);
        let mut file = None;
        let (writer, ansi) = match target {
            LogTarget::Stderr => (
                BoxMakeWriter::new(std::io::stderr),
                std::io::stderr().is_terminal(),
            ),
            LogTarget::Stdout => (
                BoxMakeWriter::new(std::io::stdout),
                std::io::stdout().is_terminal(),
            ),
            LogTarget::File(path) => {
                let f = LogFile {
                    path: path.clone(),
                    file: Arc::new(Mutex::new(open(path, append)?)),
                };
                file = Some(f.clone());
                (BoxMakeWriter::new(f), false)
            }
        };
        let layer: Box<dyn Layer<Registry> + Send + Sync> = match format {
            LogFormat::Text => tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_ansi(ansi)
                .boxed(),
            LogFormat::Json => tracing_subscriber::fmt::layer()
                .json()
                .with_writer(writer)
                .boxed(),
        };
        tracing_subscriber::registry()
            .with(layer.with_filter(filter))
            .try_init()
            .map_err(LogError::Install)?;
        Ok(Self {
            filter: handle,
            file,
            from_env: env.is_some(),
        })
    }

    /// Logs at what `flags` ask for from now on (unless `RUST_LOG` decides).
    ///
    /// # Errors
    /// When the subscriber is gone.
    pub(crate) fn set_flags(&self, flags: u8) -> Result<(), LogError> {
        if self.from_env {
            return Err(LogError::FromEnv);
        }
        self.filter
            .reload(EnvFilter::new(directives(flags)))
            .map_err(LogError::Reload)
    }

    /// Logs at `level` (`error` .. `trace`) from now on, the library included, until the
    /// next SIGHUP re-read of `log_flags` changes it (`ibsmd log-level`).
    ///
    /// # Errors
    /// When `RUST_LOG` decides the level, or the subscriber is gone.
    pub(crate) fn set_level(&self, level: &str) -> Result<(), LogError> {
        if self.from_env {
            return Err(LogError::FromEnv);
        }
        self.filter
            .reload(EnvFilter::new(level))
            .map_err(LogError::Reload)
    }

    /// Reopens the log file under its name (a no-op for stderr and stdout): lines from
    /// now on go to the file now at that path, created if it was renamed away.
    ///
    /// # Errors
    /// When the new file cannot be opened; the old one stays in use.
    pub(crate) fn reopen(&self) -> Result<Option<&Path>, LogError> {
        let Some(f) = &self.file else {
            return Ok(None);
        };
        let new = open(&f.path, true)?;
        let mut held = f.file.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = held.flush();
        *held = new;
        Ok(Some(&f.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opensm_flags_map_to_levels() {
        assert_eq!(level(0), "off");
        assert_eq!(level(0x01), "warn");
        assert_eq!(level(0x03), "info");
        assert_eq!(level(0x07), "debug");
        assert_eq!(level(0x0F), "trace");
        assert_eq!(level(0xFF), "trace");
        assert_eq!(directives(0x03), "warn,ibsmd=info");
        assert_eq!(directives(0x07), "debug");
    }

    #[test]
    fn a_reopened_log_file_takes_the_new_lines() {
        let dir = std::env::temp_dir().join(format!("ibsmd_log_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.log");
        let f = LogFile {
            path: path.clone(),
            file: Arc::new(Mutex::new(open(&path, false).unwrap())),
        };
        let log = Log {
            filter: reload::Layer::<EnvFilter, Registry>::new(EnvFilter::new("info")).1,
            file: Some(f.clone()),
            from_env: false,
        };
        writeln!(f.make_writer(), "one").unwrap();
        std::fs::rename(&path, dir.join("a.log.1")).unwrap();
        writeln!(f.make_writer(), "two").unwrap();
        assert_eq!(log.reopen().unwrap(), Some(path.as_path()));
        writeln!(f.make_writer(), "three").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("a.log.1")).unwrap(),
            "one\ntwo\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
