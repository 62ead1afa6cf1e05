//! Every PerfMgt attribute: the first byte picks the structure, the rest is its bytes.
#![no_main]

use ibsm_wire::perf::{
    PortCounters, PortCountersExtended, PortExtendedSpeedsCounters, PortRcvErrorDetails,
    PortXmitDiscardDetails,
};
use ibsm_wire::{ClassPortInfo, GsMad};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ibsm_fuzz::dispatch!(data;
        PortCounters, PortCountersExtended, PortRcvErrorDetails, PortXmitDiscardDetails,
        PortExtendedSpeedsCounters, ClassPortInfo, GsMad);
    // The helpers beyond the field tables read any bytes.
    if let Ok(cpi) = ClassPortInfo::parse(data) {
        let _ = (cpi.pm_capabilities(), cpi.pm_capabilities2());
    }
    if let Ok(pc) = PortCounters::parse(data) {
        let _ = pc.qp1_dropped();
    }
});
