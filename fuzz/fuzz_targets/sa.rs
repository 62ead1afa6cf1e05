//! Subnet Administration: the SA MAD header, every record, record tables and RMPP.
//!
//! The first byte picks a record type for the round-trip check; the whole input is also
//! read as an SA MAD (record accessors, payload, tables), fed to the RMPP reassembler in
//! 256-byte pieces, and used as a payload that the segmenter cuts and the reassembler
//! must put back together byte for byte.
#![no_main]

use ibsm_wire::sa::rmpp::{Progress, Reassembler, Segmenter, VecBuffer};
use ibsm_wire::sa::{
    GuidInfoRecord, InformInfo, InformInfoRecord, LinearForwardingTableRecord, LinkRecord,
    McMemberRecord, MultiPathRecord, MulticastForwardingTableRecord, NodeRecord, PKeyTableRecord,
    PathRecord, PortInfoRecord, RandomForwardingTableRecord, SaMad, SaMadView, ServiceRecord,
    SlToVlMappingTableRecord, SmInfoRecord, SwitchInfoRecord, VlArbitrationTableRecord, records,
};
use ibsm_wire::{ClassPortInfo, GsMad, RmppHeader, Vendor2Mad};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ibsm_fuzz::dispatch!(data;
        PathRecord, MultiPathRecord, NodeRecord, PortInfoRecord, LinkRecord, SwitchInfoRecord,
        SmInfoRecord, GuidInfoRecord, InformInfo, InformInfoRecord, PKeyTableRecord,
        SlToVlMappingTableRecord, VlArbitrationTableRecord, LinearForwardingTableRecord,
        RandomForwardingTableRecord, MulticastForwardingTableRecord, McMemberRecord,
        ServiceRecord, ClassPortInfo);
    ibsm_fuzz::check_struct::<SaMad>(data);
    ibsm_fuzz::check_struct::<RmppHeader>(data);
    ibsm_fuzz::check_struct::<GsMad>(data);
    ibsm_fuzz::check_struct::<Vendor2Mad>(data);

    if let Ok(sa) = SaMad::parse(data) {
        let _ = sa.payload();
        for k in 0..4 {
            let _ = sa.record::<NodeRecord>(k);
            let _ = sa.record::<PathRecord>(k);
        }
        if let Ok(mp) = MultiPathRecord::parse(&sa.data) {
            assert!(mp.gids().count() <= ibsm_wire::sa::MULTI_PATH_MAX_GIDS);
            for i in 0..12 {
                assert_eq!(mp.gid(i).is_some(), i < ibsm_wire::sa::MULTI_PATH_MAX_GIDS);
            }
        }
        let v = SaMadView::new_checked(data).expect("256 bytes");
        for k in 0..30 {
            if let Some(b) = v.record_bytes(k) {
                assert_eq!(b.len(), usize::from(v.attribute_offset()) * 8);
            }
        }
        if let Ok(it) = records::<LinkRecord>(&data[56..], sa.attribute_offset) {
            let n = it.count();
            assert!(n * usize::from(sa.attribute_offset) * 8 <= data.len() - 56);
        }

        // Arbitrary MADs into a reassembler: errors, never panics.
        let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 16));
        for mad in data.chunks(256) {
            let _ = rx.push(mad);
        }
        let _ = (rx.data(), rx.header());

        // Segment the rest of the input behind this header; reassembly gives it back.
        let payload = &data[256..];
        if let Ok(seg) = Segmenter::sa(&sa, payload) {
            let mut rx = Reassembler::sa(VecBuffer::with_limit(1 << 20));
            let mut done = false;
            for mad in seg.iter() {
                assert!(!done, "segments after the last one");
                match rx.push(&mad) {
                    Ok(Progress::Complete) => done = true,
                    Ok(Progress::NeedMore { .. }) => {}
                    Err(e) => panic!("reassembling our own segments: {e:?}"),
                }
            }
            assert!(done, "the last segment did not complete the message");
            assert_eq!(rx.data(), payload);
        }
    }
});
