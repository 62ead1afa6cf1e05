//! The control protocol's requests, sans-IO: one request per line, parsed into a
//! [`Request`] or a typed [`ParseError`]. Depends on `std` only, so the fuzz crate can
//! build this file on its own.
//!
//! ```text
//! status | sweep | sweep heavy | rebalance | dump | log-level LEVEL
//! ```
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
                "unknown command {c:?} (status, sweep [heavy], rebalance, dump, log-level LEVEL)"
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
        }
    }
}
