//! Every SM attribute: the first byte picks the structure, the rest is its bytes.
#![no_main]

use ibsm_wire::{NodeDescription, NodeInfo};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ibsm_fuzz::dispatch!(data; NodeInfo, NodeDescription);
});
