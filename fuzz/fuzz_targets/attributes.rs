//! Every SM attribute: the first byte picks the structure, the rest is its bytes.
#![no_main]

use ibsm_wire::{
    GuidInfo, LedInfo, LinearForwardingTable, LinkSpeedWidthPairsTable, MlnxExtPortInfo,
    MulticastForwardingTable, NodeDescription, NodeInfo, PKeyTable, PortInfo, PortInfoExtended,
    RandomForwardingTable, RftEntry, SaNotice, SlToVlMappingTable, SmInfo, SwitchInfo, VendorDiag,
    VlArbitrationTable,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ibsm_fuzz::dispatch!(data;
        NodeInfo, NodeDescription, PortInfo, SwitchInfo, SmInfo, GuidInfo, PKeyTable,
        SlToVlMappingTable, VlArbitrationTable, LinearForwardingTable, RftEntry,
        RandomForwardingTable, MulticastForwardingTable, LinkSpeedWidthPairsTable,
        VendorDiag, LedInfo, MlnxExtPortInfo, PortInfoExtended, SaNotice);
    // Notice and the trap details have their own target (notice.rs).
    // Helpers beyond the field table read every byte of an SMP data area.
    if data.len() >= 64 {
        let pi = PortInfo::parse(data).expect("64 bytes");
        let _ = (pi.lid_count(), pi.active_lane_mbps(), pi.active_link_mbps());
        for lid in [0u16, 1, pi.lid, 0xbfff, 0xffff] {
            let _ = pi.owns_lid(lid);
        }
        let lft = LinearForwardingTable::parse(data).expect("64 bytes");
        let block = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        for lid in [
            0u16,
            63,
            64,
            0xbfff,
            0xffff,
            u16::from_be_bytes([data[4], data[5]]),
        ] {
            let _ = lft.port_for_lid(block, lid);
        }
    }
});
