//! `ibsm-mad-decode`: one MAD given as hex, printed field by field as `smpquery` prints
//! an attribute (or as one JSON object).
//!
//! ```text
//! ibsm-mad-decode 01 81 01 81 80 00 00 02 ...          # hex as arguments
//! ibsm-mad-decode < tests/fixtures/golden/nodeinfo.resp.hex
//! ibsm-mad-decode --json HEX...                        # one JSON object
//! ```
//!
//! Whitespace, `:`/`-` separators, a `0x` prefix and `#` comments are ignored. The MAD
//! is split into the common header, the class-specific header (directed-route or
//! LID-routed SMP, SA, general services) and the attribute, picked by class and
//! AttributeID (PerfMgt: ClassPortInfo, PortCounters, PortCountersExtended and the
//! detail counters). Bad input prints one line naming the problem and exits with
//! status 2, as a bad argument does for the other tools.

use std::io::Read;
use std::process::ExitCode;

use clap::Parser;
use ibsm_tools::ToolError;
use ibsm_tools::decode::{decode_mad, parse_hex, strip_comments};

/// Decode one MAD given as hex (arguments, or standard input when there are none).
#[derive(Debug, Parser)]
#[command(name = "ibsm-mad-decode", version)]
struct Args {
    /// Print one JSON object instead of the listing.
    #[arg(long)]
    json: bool,
    /// The MAD's bytes in hex; none: read them from standard input.
    hex: Vec<String>,
}

const TOOL: &str = "ibsm-mad-decode";

fn main() -> ExitCode {
    match decode(&Args::parse()) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => e.report(TOOL),
    }
}

fn decode(args: &Args) -> Result<String, ToolError> {
    let text = if args.hex.is_empty() {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| ToolError::Usage(format!("reading stdin: {e}")))?;
        s
    } else {
        args.hex.join(" ")
    };
    let bytes = match parse_hex(&strip_comments(&text)) {
        Ok(b) if b.is_empty() => return Err(ToolError::Usage("no hex digits given".into())),
        Ok(b) => b,
        Err(e) => return Err(ToolError::Usage(format!("bad hex: {e}"))),
    };
    let d = decode_mad(&bytes).map_err(|e| ToolError::Usage(e.to_string()))?;
    Ok(if args.json {
        format!("{}\n", d.to_json())
    } else {
        d.to_text()
    })
}
