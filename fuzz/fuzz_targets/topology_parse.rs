//! The topology file parsers (`ibnetdiscover` / ibsim net files and the `-p` port report)
//! on arbitrary text: never panic, errors name a real line, and whatever parses writes
//! back out and parses again to the same nodes and links.
#![no_main]

use ibsm_topology::{Fabric, ibnet};
use libfuzzer_sys::fuzz_target;

fn shape(f: &Fabric) -> Vec<(u64, u8, u64, u8)> {
    f.links()
        .map(|(_, l)| (f.guid_of(l.a.node).0, l.a.port, f.guid_of(l.b.node).0, l.b.port))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count().max(1);
    match ibnet::parse(&text) {
        Ok(parsed) => {
            let f = parsed.fabric;
            let out = ibnet::write(&f, &ibnet::WriteOptions::default()).expect("full dialect");
            let back = ibnet::parse(&out).expect("our own output parses").fabric;
            assert_eq!(back.node_count(), f.node_count());
            assert_eq!(shape(&back), shape(&f));
            let _ = ibsm_topology::Csr::new(&f);
        }
        Err(e) => assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line),
    }
    match ibnet::parse_ports_report(&text) {
        Ok(p) => {
            let _ = ibnet::write(&p.fabric, &ibnet::WriteOptions::default());
        }
        Err(e) => assert!(e.line >= 1 && e.line <= lines),
    }
});
