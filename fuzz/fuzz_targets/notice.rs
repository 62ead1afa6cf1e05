//! Notice (SMP and SA forms) and every trap's DataDetails: round trips, and the typed
//! DataDetails of any Notice re-encode to the same bytes.
#![no_main]

use ibsm_wire::{
    Notice, SaNotice, Trap128Details, Trap129Details, Trap144Details, Trap145Details,
    Trap256Details, Trap257Details, Trap259Details, TrapData, TrapGidDetails,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ibsm_fuzz::check_struct::<Notice>(data);
    ibsm_fuzz::check_struct::<SaNotice>(data);
    ibsm_fuzz::dispatch!(data;
        TrapGidDetails, Trap128Details, Trap129Details, Trap144Details, Trap145Details,
        Trap256Details, Trap257Details, Trap259Details);
    if let Ok(n) = Notice::parse(data) {
        let _ = (n.producer(), n.vendor_id(), n.trap(), n.device_id());
        let mut again = n;
        match n.trap_data() {
            TrapData::Gid(d) => again.set_details(&d),
            TrapData::LinkStateChange(d) => again.set_details(&d),
            TrapData::PortThreshold(d) => again.set_details(&d),
            TrapData::LocalChanges(d) => again.set_details(&d),
            TrapData::SystemImageGuidChange(d) => again.set_details(&d),
            TrapData::BadMKey(d) => again.set_details(&d),
            TrapData::BadKey(d) => again.set_details(&d),
            TrapData::BadPKeySwitchExternalPort(d) => again.set_details(&d),
            TrapData::Raw(raw) => assert_eq!(raw, n.data_details),
        }
        // Typed details keep only their fields; their encoding must be stable.
        let once = again;
        if let TrapData::Raw(_) = n.trap_data() {
            assert_eq!(once, n);
        }
        assert_eq!(Notice::parse(&once.to_bytes()).expect("64 bytes"), once);
    }
});
