//! MAD header and both SMP forms: round trips, view accessors, DrPath and the
//! directed-route forwarding rules on arbitrary bytes.
#![no_main]

use ibsm_fuzz::check_struct;
use ibsm_wire::{
    DrNode, DrPath, DrSmp, DrSmpView, LidSmp, LidSmpView, MadHeader, MadHeaderView, dr_outbound,
    dr_returning, dr_turn_around,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    check_struct::<MadHeader>(data);
    check_struct::<LidSmp>(data);
    check_struct::<DrSmp>(data);
    if let Ok(h) = MadHeaderView::new_checked(data) {
        let _ = (
            h.method_byte(),
            h.status().invalid_field(),
            h.mgmt_class().is_smp(),
        );
    }
    if let Ok(v) = LidSmpView::new_checked(data) {
        assert_eq!(v.attr_data(), &data[64..128]);
    }
    if data.len() >= 256 {
        let mut buf = data[..256].to_vec();
        let mut v = DrSmpView::new_checked(&mut buf[..]).expect("256 bytes");
        if let Ok(p) = DrPath::from_smp(&v) {
            assert_eq!(DrPath::parse_str(&p.to_string()), Ok(p));
        }
        // The last bytes pick the node applying the rules.
        let node = DrNode {
            is_switch: data[255] & 1 != 0,
            num_ports: data[254],
            in_port: (data[253] != 0).then_some(data[253]),
            via_lid: data[255] & 2 != 0,
        };
        let _ = dr_outbound(&mut v, node);
        let _ = dr_returning(&mut v, node);
        dr_turn_around(&mut v, u16::from_be_bytes([data[252], data[251]]));
        assert!(v.direction() && v.response());
    }
});
