//! The MAD decoder of `ibsm-mad-decode` on arbitrary bytes: never panics, renders text and
//! JSON for whatever it accepts.
#![no_main]

use ibsm_tools::decode::decode_mad;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match decode_mad(data) {
        Ok(d) => {
            let t = d.to_text();
            assert!(t.starts_with("# MAD header"));
            let j = d.to_json();
            assert!(j.starts_with('{') && j.ends_with('}') && !j.contains('\n'));
        }
        Err(e) => assert!(!e.0.contains('\n')),
    }
});
