//! The control protocol's requests, sans-IO: one request per line, parsed into a
//! [`Request`] or a typed [`ParseError`]. Depends on `std` only, so the fuzz crate can
//! build this file on its own.
//!
//! ```text
//! status | sweep | sweep heavy | rebalance | dump | log-level LEVEL
//! port isolate GUID/PORT | port clear GUID/PORT
//! ```
//!
//! `GUID` is a node GUID in hexadecimal (`0x` optional, at most 16 digits), `PORT` a
//! decimal port number (0 to 254).
//!
//! Words are separated by spaces or tabs; case matters; a trailing `\r` is ignored.

use std::fmt;

/// Longest request line accepted, in bytes (newline excluded).
pub(crate) const MAX_LINE: usize = 256;

/// A log level `log-level` can set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Only errors.
    Error,
    /// Errors and warnings.
    Warn,
    /// The default: sweeps, roles, warnings.
    Info,
    /// Every event.
    Debug,
    /// Everything.
    Trace,
}

impl Level {
    /// Every level, quietest first.
    pub(crate) const ALL: [Level; 5] = [
        Level::Error,
        Level::Warn,
        Level::Info,
        Level::Debug,
        Level::Trace,
    ];

    /// Its name on the wire and in `tracing` filters.
    #[must_use]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }

    /// The level named `s`.
    #[must_use]
    pub(crate) fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// What `port` does to a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortOp {
    /// Isolate it (its link carries no routes) until cleared.
    Isolate,
    /// Take it back, whatever it was marked for.
    Clear,
}

impl PortOp {
    /// Its word on the wire.
    #[must_use]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PortOp::Isolate => "isolate",
            PortOp::Clear => "clear",
        }
    }
}

/// A port named by its node GUID and number (`GUID/PORT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PortTarget {
    /// Node GUID.
    pub(crate) node: u64,
    /// Port number.
    pub(crate) port: u8,
}

impl fmt::Display for PortTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}/{}", self.node, self.port)
    }
}

/// What is wrong with a `GUID/PORT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TargetError {
    /// No `/` between the GUID and the port.
    NoSlash,
    /// The GUID is not hexadecimal of at most 16 digits.
    BadGuid,
    /// The port is not a decimal number from 0 to 254.
    BadPort,
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TargetError::NoSlash => "expected GUID/PORT",
            TargetError::BadGuid => "the GUID is not hexadecimal (at most 16 digits)",
            TargetError::BadPort => "the port is not a number from 0 to 254",
        })
    }
}

/// Reads `GUID/PORT`.
///
/// # Errors
/// [`TargetError`]: which part does not read.
pub(crate) fn parse_target(s: &str) -> Result<PortTarget, TargetError> {
    let (guid, port) = s.split_once('/').ok_or(TargetError::NoSlash)?;
    let hex = guid
        .strip_prefix("0x")
        .or_else(|| guid.strip_prefix("0X"))
        .unwrap_or(guid);
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(TargetError::BadGuid);
    }
    let node = u64::from_str_radix(hex, 16).map_err(|_| TargetError::BadGuid)?;
    if port.is_empty() || port.len() > 3 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TargetError::BadPort);
    }
    let port = port
        .parse::<u8>()
        .ok()
        .filter(|&p| p <= 254)
        .ok_or(TargetError::BadPort)?;
    Ok(PortTarget { node, port })
}

/// One request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// The SM's status.
    Status,
    /// A sweep: light (`heavy: false`) or heavy.
    Sweep {
        /// Whether to sweep heavy (full discovery and configuration).
        heavy: bool,
    },
    /// A heavy sweep that recomputes every route.
    Rebalance,
    /// Write the dump files now.
    Dump,
    /// Change the log level.
    LogLevel(Level),
    /// Isolate or clear a port.
    Port {
        /// Which.
        op: PortOp,
        /// The port.
        target: PortTarget,
    },
}

/// Why a line is not a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// Nothing but white space.
    Empty,
    /// Longer than [`MAX_LINE`].
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// Not UTF-8.
    NotText,
    /// The first word is no command.
    UnknownCommand(String),
    /// A command with a word it does not take.
    UnexpectedArgument {
        /// The command.
        command: &'static str,
        /// The word.
        argument: String,
    },
    /// `log-level` without a level.
    MissingLevel,
    /// `log-level` with something else than a level.
    UnknownLevel(String),
    /// `port` without `isolate` or `clear`.
    MissingPortOp,
    /// `port` with another word than `isolate` or `clear`.
    UnknownPortOp(String),
    /// `port isolate` or `port clear` without `GUID/PORT`.
    MissingTarget,
    /// A `GUID/PORT` that does not read.
    BadTarget {
        /// What was given.
        target: String,
        /// What is wrong with it.
        why: TargetError,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => write!(f, "empty request"),
            ParseError::TooLong { len } => {
                write!(f, "request of {len} bytes, longest is {MAX_LINE}")
            }
            ParseError::NotText => write!(f, "request is not UTF-8 text"),
            ParseError::UnknownCommand(c) => write!(
                f,
                "unknown command {c:?} (status, sweep [heavy], rebalance, dump, log-level LEVEL, port isolate|clear GUID/PORT)"
            ),
            ParseError::UnexpectedArgument { command, argument } => {
                write!(f, "{command}: unexpected argument {argument:?}")
            }
            ParseError::MissingLevel => {
                write!(
                    f,
                    "log-level: missing level (error, warn, info, debug, trace)"
                )
            }
            ParseError::UnknownLevel(l) => write!(
                f,
                "log-level: unknown level {l:?} (error, warn, info, debug, trace)"
            ),
            ParseError::MissingPortOp => write!(f, "port: missing isolate or clear"),
            ParseError::UnknownPortOp(w) => {
                write!(f, "port: unknown action {w:?} (isolate, clear)")
            }
            ParseError::MissingTarget => write!(f, "port: missing GUID/PORT"),
            ParseError::BadTarget { target, why } => write!(f, "port: {target:?}: {why}"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Shortens what a client sent for an error message.
fn clip(s: &str) -> String {
    s.chars().take(32).collect()
}

/// Parses one request line (without its `\n`; a trailing `\r` is dropped).
///
/// # Errors
/// [`ParseError`]: what is wrong with the line.
pub(crate) fn parse(line: &[u8]) -> Result<Request, ParseError> {
    if line.len() > MAX_LINE {
        return Err(ParseError::TooLong { len: line.len() });
    }
    let text = std::str::from_utf8(line).map_err(|_| ParseError::NotText)?;
    let text = text.strip_suffix('\r').unwrap_or(text);
    let mut words = text.split([' ', '\t']).filter(|w| !w.is_empty());
    let Some(command) = words.next() else {
        return Err(ParseError::Empty);
    };
    let (name, req): (&'static str, Request) = match command {
        "status" => ("status", Request::Status),
        "rebalance" => ("rebalance", Request::Rebalance),
        "dump" => ("dump", Request::Dump),
        "sweep" => match words.next() {
            None => return Ok(Request::Sweep { heavy: false }),
            Some("heavy") => ("sweep heavy", Request::Sweep { heavy: true }),
            Some(other) => {
                return Err(ParseError::UnexpectedArgument {
                    command: "sweep",
                    argument: clip(other),
                });
            }
        },
        "log-level" => {
            let level = words.next().ok_or(ParseError::MissingLevel)?;
            let level =
                Level::from_name(level).ok_or_else(|| ParseError::UnknownLevel(clip(level)))?;
            ("log-level", Request::LogLevel(level))
        }
        "port" => {
            let (name, op) = match words.next() {
                None => return Err(ParseError::MissingPortOp),
                Some("isolate") => ("port isolate", PortOp::Isolate),
                Some("clear") => ("port clear", PortOp::Clear),
                Some(other) => return Err(ParseError::UnknownPortOp(clip(other))),
            };
            let t = words.next().ok_or(ParseError::MissingTarget)?;
            let target = parse_target(t).map_err(|why| ParseError::BadTarget {
                target: clip(t),
                why,
            })?;
            (name, Request::Port { op, target })
        }
        other => return Err(ParseError::UnknownCommand(clip(other))),
    };
    match words.next() {
        None => Ok(req),
        Some(extra) => Err(ParseError::UnexpectedArgument {
            command: name,
            argument: clip(extra),
        }),
    }
}

impl fmt::Display for Request {
    /// The request's line (without newline), as [`parse`] reads it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Status => f.write_str("status"),
            Request::Sweep { heavy: false } => f.write_str("sweep"),
            Request::Sweep { heavy: true } => f.write_str("sweep heavy"),
            Request::Rebalance => f.write_str("rebalance"),
            Request::Dump => f.write_str("dump"),
            Request::LogLevel(l) => write!(f, "log-level {}", l.as_str()),
            Request::Port { op, target } => write!(f, "port {} {target}", op.as_str()),
        }
    }
}
