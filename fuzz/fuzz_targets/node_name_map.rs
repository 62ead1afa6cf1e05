//! The node-name-map parser on arbitrary text: never panics, an error names a real
//! line, and what parses writes back out and parses to the same names.
#![no_main]

use ibsm_query::nodemap::NodeNameMap;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count().max(1);
    match NodeNameMap::parse(&text) {
        Ok(map) => {
            let back = NodeNameMap::parse(&map.to_text()).expect("our own output parses");
            for (guid, name) in map.entries() {
                // The format has no escapes: to_text skips names it cannot write.
                if !name.contains(['"', '#', '\n', '\r']) {
                    assert_eq!(back.get(guid), Some(name));
                }
            }
        }
        Err(e) => assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line),
    }
});
