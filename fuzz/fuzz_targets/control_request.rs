//! ibsmd's control-socket request parser on arbitrary bytes: never panics, and whatever
//! parses prints back to a line that parses to the same request.
#![no_main]

use libfuzzer_sys::fuzz_target;

// The parser is std-only and lives in the ibsmd binary crate, which a fuzz crate cannot
// depend on: build its file here as a module of its own.
#[path = "../../crates/ibsmd/src/control/proto.rs"]
#[allow(dead_code)]
mod proto;

fuzz_target!(|data: &[u8]| {
    match proto::parse(data) {
        Ok(req) => {
            let line = req.to_string();
            assert_eq!(proto::parse(line.as_bytes()), Ok(req), "{line:?}");
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
        }
    }
});
