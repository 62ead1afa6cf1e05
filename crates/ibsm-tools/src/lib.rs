//! What the fabric tools (`ibsm-netdiscover`, `ibsm-perfquery`, `ibsm-exporter`) share:
//! the local-port and transaction options (one [`clap::Args`] each, `#[command(flatten)]`
//! into every tool), node-name map loading, number parsing, running a sans-IO client
//! to the end, and writing output files.
//!
//! The tools stay thin `main`s over this and `ibsm-query`; their exit codes are the
//! diags': 0 done, 1 a port, transport or fabric failure, 2 a bad argument or input file
//! ([`ToolError::exit_code`]).

pub mod decode;
pub mod exporter;
pub mod lft;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use ibsm_query::discover::Discovery;
use ibsm_query::nodemap::{NodeMapFileError, NodeNameMap, clean_description};
use ibsm_query::smp::SmpConfig;
use ibsm_transport::{JobRunner, NoJob, SansIo, Stop, Transport, TransportError, TxConfig, drive};
use ibsm_umad::{OpenOptions, Selector, UmadTransport};

/// Why a tool stops.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The local port could not be opened.
    #[error("opening the local port: {0}")]
    Open(#[source] ibsm_umad::Error),
    /// The transport failed while a client ran.
    #[error("{what}: {source}")]
    Transport {
        /// What was running.
        what: &'static str,
        /// The transport's error.
        #[source]
        source: TransportError,
    },
    /// The node-name map could not be read.
    #[error("node-name map {0}")]
    NodeMap(#[from] NodeMapFileError),
    /// An output file could not be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A bad argument the parser could not catch.
    #[error("{0}")]
    Usage(String),
    /// Anything else that makes the run fail, said in words.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// The exit code for this error: 2 for a bad argument or input file, else 1.
    #[must_use]
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ToolError::NodeMap(_) | ToolError::Usage(_) => ExitCode::from(2),
            _ => ExitCode::from(1),
        }
    }

    /// Prints `tool: error` (with its causes) on stderr and returns the exit code.
    #[must_use]
    pub fn report(&self, tool: &str) -> ExitCode {
        let mut line = format!("{tool}: {self}");
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            let text = c.to_string();
            // thiserror's transparent and `{0}`-formatted variants already say it.
            if !line.contains(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            cause = c.source();
        }
        eprintln!("{line}");
        self.exit_code()
    }
}

/// The local port a tool talks through (`-C`, `-P`, as the diags spell them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PortArgs {
    /// RDMA device to use (as the diags' -C).
    #[arg(short = 'C', long = "Ca")]
    pub ca: Option<String>,
    /// Port of that device (as the diags' -P).
    #[arg(short = 'P', long = "Port", id = "local_port")]
    pub port: Option<u8>,
}

impl PortArgs {
    /// The umad options for this port; `perf_agent` registers a PerfMgt client agent.
    #[must_use]
    pub fn options(&self, perf_agent: bool) -> OpenOptions {
        OpenOptions {
            selector: Selector {
                ca: self.ca.clone(),
                port: self.port,
                guid: None,
            },
            perf_agent,
            ..OpenOptions::default()
        }
    }

    /// Opens the port.
    ///
    /// # Errors
    /// [`ToolError::Open`] when no such port exists or it cannot be opened.
    pub fn open(&self, perf_agent: bool) -> Result<UmadTransport, ToolError> {
        UmadTransport::open(&self.options(perf_agent)).map_err(ToolError::Open)
    }
}

/// The discovery a fabric tool runs: the M_Key its SMPs carry and how long it may take.
#[derive(Debug, Clone, clap::Args)]
pub struct DiscoverArgs {
    /// M_Key sent with every SMP (hex with 0x, or decimal).
    #[arg(long = "m-key", value_parser = parse_u64, default_value = "0")]
    pub m_key: u64,
    /// Give the discovery (and each reading after it) up after this many seconds.
    #[arg(long = "time-limit", default_value_t = 120)]
    pub time_limit: u64,
}

impl DiscoverArgs {
    /// How long each stage may take.
    #[must_use]
    pub fn limit(&self) -> Duration {
        Duration::from_secs(self.time_limit)
    }

    /// The lean walk (what `ibsm-netdiscover` prints) of the fabric behind `port`, run
    /// until it is done or the time limit passes; see [`Discovery::is_done`].
    ///
    /// # Errors
    /// [`ToolError::Transport`] when the transport fails.
    pub fn discover<T: Transport>(
        &self,
        tx: &TxArgs,
        port: &mut T,
    ) -> Result<Discovery, ToolError> {
        let mut walk = Discovery::lean(tx.smp(self.m_key));
        run(&mut walk, port, self.limit(), "discovery")?;
        Ok(walk)
    }
}

/// How many MADs are in flight and how long each waits (OpenSM's 200 ms and 3 retries).
#[derive(Debug, Clone, clap::Args)]
pub struct TxArgs {
    /// Time to wait for each answer, in milliseconds.
    #[arg(short = 't', long = "timeout", default_value_t = 200)]
    pub timeout_ms: u64,
    /// Re-sends of a MAD before its target counts as unreachable.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// MADs in flight at once.
    #[arg(long, default_value_t = 64)]
    pub window: usize,
}

impl Default for TxArgs {
    fn default() -> Self {
        Self {
            timeout_ms: 200,
            retries: 3,
            window: 64,
        }
    }
}

impl TxArgs {
    /// Transaction settings for PerfMgt queries (a window of at least 1).
    #[must_use]
    pub fn tx(&self) -> TxConfig {
        TxConfig {
            timeout: Duration::from_millis(self.timeout_ms),
            retries: self.retries,
            window: self.window.max(1),
            ..ibsm_query::perf::default_tx()
        }
    }

    /// SMP settings for discovery with these transaction settings and `m_key`.
    #[must_use]
    pub fn smp(&self, m_key: u64) -> SmpConfig {
        let base = SmpConfig::default();
        SmpConfig {
            tx: TxConfig {
                timeout: Duration::from_millis(self.timeout_ms),
                retries: self.retries,
                window: self.window.max(1),
                ..base.tx
            },
            m_key,
        }
    }
}

/// What a tool that walks the fabric behind a local port takes (`ibsm-netdiscover`,
/// `ibsm-topodiff`): the port, the node-name map, the transactions and the walk.
#[derive(Debug, Clone, clap::Args)]
pub struct FabricArgs {
    /// The local port.
    #[command(flatten)]
    pub port: PortArgs,
    /// The node-name map.
    #[command(flatten)]
    pub names: NameArgs,
    /// How the MADs are sent.
    #[command(flatten)]
    pub tx: TxArgs,
    /// The walk's M_Key and time limit.
    #[command(flatten)]
    pub discover: DiscoverArgs,
}

impl FabricArgs {
    /// Opens the port and walks the fabric behind it ([`DiscoverArgs::discover`]); the
    /// port stays open for what the tool reads next.
    ///
    /// # Errors
    /// [`ToolError::Open`] when the port does not open, [`ToolError::Transport`] when
    /// the transport fails.
    pub fn walk(&self) -> Result<(UmadTransport, Discovery), ToolError> {
        let mut port = self.port.open(false)?;
        let walk = self.discover.discover(&self.tx, &mut port)?;
        Ok((port, walk))
    }
}

/// `--node-name-map FILE`: friendly names for node GUIDs (infiniband-diags' format).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct NameArgs {
    /// Node-name map (infiniband-diags format): names replace node descriptions.
    #[arg(long = "node-name-map")]
    pub node_name_map: Option<PathBuf>,
}

impl NameArgs {
    /// Reads the map, if one was given, printing its warnings (duplicate GUIDs, ...)
    /// on stderr as `FILE: warning`.
    ///
    /// # Errors
    /// [`ToolError::NodeMap`] when it cannot be read or a line is wrong.
    pub fn load(&self) -> Result<Names, ToolError> {
        let Some(path) = &self.node_name_map else {
            return Ok(Names::default());
        };
        let map = NodeNameMap::from_file(path)?;
        for w in map.warnings() {
            eprintln!("{}: {w}", path.display());
        }
        Ok(Names { map: Some(map) })
    }
}

/// Node names as the diags print them: the node-name map's where it has the GUID,
/// else the NodeDescription up to its first NUL, control characters replaced.
#[derive(Debug, Clone, Default)]
pub struct Names {
    map: Option<NodeNameMap>,
}

impl Names {
    /// Names from `map`.
    #[must_use]
    pub fn new(map: Option<NodeNameMap>) -> Self {
        Self { map }
    }

    /// The name of the node with `guid` and NodeDescription `description`.
    #[must_use]
    pub fn name(&self, guid: u64, description: &[u8]) -> String {
        match self.map.as_ref().and_then(|m| m.get(guid)) {
            Some(n) => n.to_owned(),
            None => clean_description(description),
        }
    }

    /// The map's own name for `guid`, if it has one.
    #[must_use]
    pub fn mapped(&self, guid: u64) -> Option<&str> {
        self.map.as_ref().and_then(|m| m.get(guid))
    }
}

/// A number argument that is not a 64-bit number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?}: {source}")]
pub struct NumberError {
    /// The text given.
    pub text: String,
    /// Why it is not a number.
    #[source]
    pub source: std::num::ParseIntError,
}

/// A number as the diags read one: `0x` hex, else decimal (a clap value parser).
///
/// # Errors
/// [`NumberError`]: the text and why it is not a 64-bit number.
pub fn parse_u64(s: &str) -> Result<u64, NumberError> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|source| NumberError {
        text: s.to_owned(),
        source,
    })
}

/// Runs a client with no events and no jobs (a discovery, a scrape) until it is idle or
/// `limit` has passed on the transport's clock; `what` names it in an error.
///
/// # Errors
/// [`ToolError::Transport`] when the transport fails.
pub fn run<C, T>(
    core: &mut C,
    port: &mut T,
    limit: Duration,
    what: &'static str,
) -> Result<(), ToolError>
where
    C: SansIo<Job = NoJob, Event = std::convert::Infallible>,
    T: Transport,
{
    let stop = Stop::when_idle(port.now() + limit);
    drive(core, port, &mut JobRunner::inline(), stop, |ev| match ev {})
        .map(|_| ())
        .map_err(|source| ToolError::Transport { what, source })
}

/// Writes `text` to `path` so that a reader sees the old file or the new one, never a
/// part: a temporary file beside it, renamed over it (node_exporter's textfile
/// collector). Not synced to disk: what the tools write is made again on the next run,
/// and a 4 MB exposition synced on a busy disk cost more than the whole scrape.
///
/// # Errors
/// [`ToolError::Write`] naming the file.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), ToolError> {
    let err = |source| ToolError::Write {
        path: path.to_owned(),
        source,
    };
    let mut tmp_name = path
        .file_name()
        .map(std::ffi::OsStr::to_os_string)
        .unwrap_or_default();
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = std::fs::File::create(&tmp).and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(err(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Both {
        #[command(flatten)]
        port: PortArgs,
        #[command(flatten)]
        tx: TxArgs,
        #[command(flatten)]
        names: NameArgs,
    }

    #[test]
    fn parse_u64_reads_hex_and_decimal_and_names_bad_text() {
        assert_eq!(parse_u64("0x10"), Ok(16));
        assert_eq!(parse_u64("0XfF"), Ok(255));
        assert_eq!(parse_u64("17"), Ok(17));
        assert_eq!(parse_u64("0xffffffffffffffff"), Ok(u64::MAX));
        let e = parse_u64("0xg").unwrap_err();
        assert_eq!(e.text, "0xg");
        assert!(e.to_string().starts_with("\"0xg\": "), "{e}");
        assert!(parse_u64("").is_err());
        assert!(parse_u64("0x1ffffffffffffffff").is_err());
    }

    #[test]
    fn flattened_options_keep_the_diags_spelling_and_reach_the_configs() {
        let a = Both::try_parse_from([
            "t",
            "-C",
            "mlx5_0",
            "-P",
            "2",
            "-t",
            "50",
            "--retries",
            "1",
            "--window",
            "0",
        ])
        .unwrap();
        assert_eq!(a.port.ca.as_deref(), Some("mlx5_0"));
        assert_eq!(a.port.options(true).selector.port, Some(2));
        assert!(a.port.options(true).perf_agent);
        let tx = a.tx.tx();
        assert_eq!(tx.timeout, Duration::from_millis(50));
        assert_eq!(tx.retries, 1);
        assert_eq!(tx.window, 1, "a zero window is one");
        let smp = a.tx.smp(7);
        assert_eq!(smp.m_key, 7);
        assert_eq!(smp.tx.timeout, Duration::from_millis(50));
        assert_eq!(smp.tx.retries, 1);
        // Each client keeps its own TID tag.
        assert_eq!(smp.tx.tid_high, SmpConfig::default().tx.tid_high);
        assert_eq!(tx.tid_high, ibsm_query::perf::default_tx().tid_high);
        let d = Both::try_parse_from(["t"]).unwrap();
        assert_eq!(d.tx.tx().timeout, Duration::from_millis(200));
        assert_eq!(d.tx.retries, TxArgs::default().retries);
        assert!(d.names.node_name_map.is_none());
    }

    #[test]
    fn names_come_from_the_map_else_the_description() {
        let mut map = NodeNameMap::new();
        map.insert(0x10, "leaf-1");
        let names = Names::new(Some(map));
        assert_eq!(names.name(0x10, b"MT4123 ConnectX6"), "leaf-1");
        assert_eq!(names.name(0x11, b"node07 HCA-1\0junk"), "node07 HCA-1");
        assert_eq!(Names::default().name(0x10, b"x"), "x");
    }

    #[test]
    fn a_bad_node_name_map_is_exit_code_2_with_file_and_line() {
        let dir = std::env::temp_dir().join(format!("ibsm-tools-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("map");
        std::fs::write(&path, "0x10 ok\nnot-a-guid name\n").unwrap();
        let e = NameArgs {
            node_name_map: Some(path.clone()),
        }
        .load()
        .unwrap_err();
        assert_eq!(e.exit_code(), ExitCode::from(2));
        let text = e.to_string();
        assert!(text.contains("line 2"), "{text}");
        let missing = NameArgs {
            node_name_map: Some(dir.join("absent")),
        }
        .load()
        .unwrap_err();
        assert!(missing.to_string().contains("absent"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn write_atomic_replaces_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("ibsm-tools-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.prom");
        write_atomic(&path, "a\n").unwrap();
        write_atomic(&path, "b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\n");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let e = write_atomic(&dir.join("no/such/dir"), "x").unwrap_err();
        assert!(e.to_string().contains("no/such/dir"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
