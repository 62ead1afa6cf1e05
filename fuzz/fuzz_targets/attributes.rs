//! Every SM attribute: the first byte picks the structure, the rest is its bytes.
#![no_main]

use ibsm_wire::{
    GuidInfo, LedInfo, LinearForwardingTable, LinkSpeedWidthPairsTable, MlnxExtPortInfo,
    MulticastForwardingTable, NodeDescription, NodeInfo, Notice, PKeyTable, PortInfo,
    PortInfoExtended, RandomForwardingTable, SaNotice, SlToVlMappingTable, SmInfo, SwitchInfo,
    Trap128Details, Trap129Details, Trap144Details, Trap145Details, Trap256Details,
    Trap257Details, Trap259Details, TrapGidDetails, VendorDiag, VlArbitrationTable,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ibsm_fuzz::dispatch!(data;
        NodeInfo, NodeDescription, PortInfo, SwitchInfo, SmInfo, GuidInfo, PKeyTable,
        SlToVlMappingTable, VlArbitrationTable, LinearForwardingTable, RandomForwardingTable,
        MulticastForwardingTable, LinkSpeedWidthPairsTable, VendorDiag, LedInfo,
        MlnxExtPortInfo, PortInfoExtended, Notice, SaNotice, TrapGidDetails, Trap128Details,
        Trap129Details, Trap144Details, Trap145Details, Trap256Details, Trap257Details,
        Trap259Details,
    );
    // Typed trap details from any notice bytes.
    if let Ok(n) = Notice::parse(data) {
        let _ = n.trap_data();
    }
});
