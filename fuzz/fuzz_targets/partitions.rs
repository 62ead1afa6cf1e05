//! The partition file parser (OpenSM `partitions.conf` syntax) on arbitrary text: never
//! panics, errors point inside the text, and whatever parses prints back to the same
//! statements (multicast group lines included); resolving the partitions and their
//! multicast groups never panics either, and every group is multicast in a partition
//! the policy defines.
#![no_main]

use ibsm_manager::partition::PartitionConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.split('\n').count();
    match PartitionConfig::parse(&text) {
        Ok(cfg) => {
            let printed = cfg.to_string();
            let back = PartitionConfig::parse(&printed).expect("our own output parses");
            assert_eq!(back, cfg);
            let parts = cfg.partitions();
            assert!(parts.iter().all(|p| p.pkey != 0 && p.pkey <= 0x7fff));
            let groups = cfg.multicast_groups(0x12);
            for g in &groups {
                assert!(g.mgid.is_multicast());
                assert!(parts.iter().any(|p| p.pkey | 0x8000 == g.pkey));
            }
            let mut mgids: Vec<_> = groups.iter().map(|g| g.mgid.0).collect();
            mgids.sort_unstable();
            mgids.dedup();
            assert_eq!(mgids.len(), groups.len(), "an MGID defined twice");
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line);
            assert!(e.column >= 1);
            let _ = e.to_string();
        }
    }
});
