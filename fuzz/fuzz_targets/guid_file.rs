//! OpenSM's GUID list files (`root_guid_file`, `cn_guid_file`, `io_guid_file`,
//! `guid_routing_order_file`) on arbitrary text: never panics, an error names a line of
//! the text and a token on it, and whatever parses prints back (one `0x` GUID a line)
//! to the same GUIDs.
#![no_main]

use ibsm_routing::parse_guid_file;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_guid_file("fuzz", &text) {
        Ok(guids) => {
            let printed: String = guids.iter().map(|g| format!("{:#x}\n", g.0)).collect();
            assert_eq!(parse_guid_file("printed", &printed).unwrap(), guids);
        }
        Err(e) => {
            let line = text.lines().nth(e.line - 1).expect("the error's line exists");
            assert!(line.contains(&e.token), "{e}");
        }
    }
});
