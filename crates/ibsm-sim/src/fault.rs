//! Faults on the virtual timeline, applied at once or scheduled, and a small text
//! format to script them.

use std::time::Duration;

use crate::NodeIdx;
use crate::error::SimError;

/// Something that goes wrong (or gets fixed) in the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Pull the cable at (node, port): both ends see the link go down; the SMAs raise
    /// their PortStateChange / trap 128.
    LinkDown {
        /// Node.
        node: NodeIdx,
        /// Port.
        port: u8,
    },
    /// Plug it back: the link trains again.
    LinkUp {
        /// Node.
        node: NodeIdx,
        /// Port.
        port: u8,
    },
    /// Power-cycle a node: volatile SMA state is lost (non-volatile survives), its links
    /// retrain.
    NodeReset {
        /// Node.
        node: NodeIdx,
    },
    /// Remove a node: its links go down for good; packets to it are lost.
    NodeRemove {
        /// Node.
        node: NodeIdx,
    },
    /// Replace a node by another board of the same model with a new node GUID (port
    /// GUIDs keep their offset); state is lost and links retrain.
    GuidChange {
        /// Node.
        node: NodeIdx,
        /// The new node GUID.
        guid: u64,
    },
    /// Drop rate of every link, parts per million.
    DropRate {
        /// Parts per million.
        ppm: u32,
    },
    /// Drop rate of the link at (node, port), parts per million (both directions).
    LinkDropRate {
        /// Node.
        node: NodeIdx,
        /// Port.
        port: u8,
        /// Parts per million.
        ppm: u32,
    },
    /// Latency of every hop.
    HopLatency {
        /// Per hop.
        latency: Duration,
    },
    /// Latency of the link at (node, port), both directions.
    LinkLatency {
        /// Node.
        node: NodeIdx,
        /// Port.
        port: u8,
        /// Per traversal.
        latency: Duration,
    },
    /// Time every SMA takes to answer.
    SmaTime {
        /// Per SMP.
        time: Duration,
    },
    /// A babbling port: sends `count` garbage SMPs, one every `interval`.
    Babble {
        /// Node.
        node: NodeIdx,
        /// Port.
        port: u8,
        /// Gap between packets.
        interval: Duration,
        /// Packets to send.
        count: u32,
    },
}

/// Parses a duration such as `1.5s`, `200ms`, `10us`, `300ns` (a bare number is seconds).
///
/// # Errors
/// [`SimError::Script`] naming the text.
pub fn parse_duration(s: &str, line: usize) -> Result<Duration, SimError> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1e-9)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.parse().map_err(|_| SimError::Script {
        line,
        msg: format!("bad duration {s:?}"),
    })?;
    if !v.is_finite() || v < 0.0 {
        return Err(SimError::Script {
            line,
            msg: format!("bad duration {s:?}"),
        });
    }
    Ok(Duration::from_nanos((v * scale * 1e9).round() as u64))
}

/// One line of a fault script, before node names are resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScriptLine {
    pub(crate) line: usize,
    pub(crate) at: Duration,
    pub(crate) action: String,
    pub(crate) args: Vec<String>,
}

/// Splits a script into lines: `<time> <action> <args...>`, `#` comments.
pub(crate) fn split_script(text: &str) -> Result<Vec<ScriptLine>, SimError> {
    let mut out = Vec::new();
    for (line, body) in ibsm_topology::lines::content_lines(text) {
        let mut words = body.split_whitespace();
        let at = parse_duration(words.next().unwrap_or(""), line)?;
        let action = words
            .next()
            .ok_or(SimError::Script {
                line,
                msg: "missing action".into(),
            })?
            .to_string();
        out.push(ScriptLine {
            line,
            at,
            action,
            args: words.map(str::to_string).collect(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("1.5s", 1).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            parse_duration("200ms", 1).unwrap(),
            Duration::from_millis(200)
        );
        assert_eq!(
            parse_duration("10us", 1).unwrap(),
            Duration::from_micros(10)
        );
        assert_eq!(parse_duration("7ns", 1).unwrap(), Duration::from_nanos(7));
        assert_eq!(parse_duration("3", 1).unwrap(), Duration::from_secs(3));
        assert!(matches!(
            parse_duration("x", 4),
            Err(SimError::Script { line: 4, .. })
        ));
        assert!(parse_duration("-1s", 1).is_err());
    }

    #[test]
    fn script_lines() {
        let s = split_script("# c\n1s link-down 0x10 3 # cut\n\n2ms reset n4\n").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].line, 2);
        assert_eq!(s[0].action, "link-down");
        assert_eq!(s[0].args, ["0x10", "3"]);
        assert_eq!(s[1].at, Duration::from_millis(2));
        assert!(split_script("1s").is_err());
    }
}
