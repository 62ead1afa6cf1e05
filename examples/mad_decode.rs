//! Decodes one MAD given as hex and prints it like `smpquery` does.
//!
//! ```text
//! cargo run --example mad_decode -- 01 81 01 81 80 00 00 02 ...      # hex as arguments
//! cargo run --example mad_decode < tests/fixtures/golden/nodeinfo.resp.hex
//! cargo run --example mad_decode -- --json <hex>                      # one JSON object
//! ```
//!
//! Whitespace, `:`/`-` separators, a `0x` prefix and `#` comments are ignored. The MAD
//! is split into the common header, the class-specific header (directed-route or
//! LID-routed SMP, SA, general services) and the attribute, picked by class and
//! AttributeID (PerfMgt: ClassPortInfo, PortCounters, PortCountersExtended and the
//! detail counters). Bad input prints one line naming the problem and exits with
//! status 2.

use std::io::Read;
use std::process::ExitCode;

use ibsm_examples::decode::{decode_mad, strip_comments};
use ibsm_examples::parse_hex;

const USAGE: &str = "usage: mad_decode [--json] [HEX...]   (no HEX: read hex from stdin)";

fn fail(msg: &str) -> ExitCode {
    eprintln!("mad_decode: {msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut json = false;
    let mut hex = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--json" => json = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            a if a.starts_with("--") => return fail(&format!("unknown option {a}; {USAGE}")),
            a => hex.push(a.to_string()),
        }
    }
    let text = if hex.is_empty() {
        let mut s = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut s) {
            return fail(&format!("reading stdin: {e}"));
        }
        s
    } else {
        hex.join(" ")
    };
    let bytes = match parse_hex(&strip_comments(&text)) {
        Ok(b) if b.is_empty() => return fail("no hex digits given"),
        Ok(b) => b,
        Err(e) => return fail(&format!("bad hex: {e}")),
    };
    match decode_mad(&bytes) {
        Ok(d) if json => println!("{}", d.to_json()),
        Ok(d) => print!("{}", d.to_text()),
        Err(e) => return fail(&e.to_string()),
    }
    ExitCode::SUCCESS
}
