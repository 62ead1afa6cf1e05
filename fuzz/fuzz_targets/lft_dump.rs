//! The `opensm-lfts.dump` reader on arbitrary text: never panics, an error names a line
//! of the text, and whatever parses prints back to text that parses to the same tables.
#![no_main]

use ibsm_manager::dump::LftDump;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count();
    match LftDump::parse(&text) {
        Ok(dump) => {
            let printed = dump.to_string();
            let back = LftDump::parse(&printed).expect("our own output parses");
            assert_eq!(back, dump);
            for sw in &dump.switches {
                assert!(sw.routes.iter().all(|r| r.lid <= sw.top));
                assert!(sw.routes.windows(2).all(|w| w[0].lid < w[1].lid));
            }
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line);
            let _ = e.to_string();
        }
    }
});
