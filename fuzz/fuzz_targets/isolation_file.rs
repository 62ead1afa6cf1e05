//! The isolation file reader (`ibsm_manager::isolation`) on arbitrary text: never
//! panics, an error names a line of the text, and whatever parses prints back to text
//! that parses to the same ports.
#![no_main]

use ibsm_manager::isolation::{IsolationError, format_isolated, parse_isolated};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count();
    match parse_isolated(&text, "fuzz") {
        Ok(ports) => {
            let printed = format_isolated(&ports);
            let back = parse_isolated(&printed, "printed").expect("our own output parses");
            assert_eq!(back, ports);
        }
        Err(IsolationError::Parse { line, .. }) => {
            assert!(line >= 1 && line <= lines, "line {line} of {lines}");
        }
        Err(e) => panic!("a parser does no I/O: {e}"),
    }
});
