//! Reading OpenSM's `opensm-lfts.dump` (written with `-D 0x43` or `dump_files_dir`), so
//! OpenSM's tables can be judged by this crate's validators and metrics side by side with
//! ours on the same fabric and LIDs.

use std::collections::HashMap;

use ibsm_topology::{Csr, Guid};

use crate::lids::LidAssignment;
use crate::routes::Routes;

/// A problem in an LFT dump, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("opensm-lfts.dump line {line}: {message}")]
pub struct DumpError {
    /// 1-based line number (0 when the problem is not tied to a line).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// Position of each GUID in a snapshot list (switches or terminals), to match a dump's
/// GUIDs against the snapshot.
fn index_of(guids: &[Guid]) -> HashMap<Guid, usize> {
    guids.iter().enumerate().map(|(i, g)| (*g, i)).collect()
}

/// Parses an OpenSM LFT dump against the snapshot of the same fabric (matched by switch
/// and port GUIDs). Returns OpenSM's tables as [`Routes`] (engine name `"opensm"`) and
/// the LIDs OpenSM assigned, LMC inferred from consecutive LIDs of one port.
///
/// # Errors
/// [`DumpError`] for malformed lines, GUIDs the snapshot does not know, ports beyond the
/// switch or LIDs out of range.
pub fn read_opensm_lfts(text: &str, csr: &Csr) -> Result<(Routes, LidAssignment), DumpError> {
    let sw_of = index_of(&csr.switch_guid);
    let term_of = index_of(&csr.term_guid);
    let err = |line: usize, m: String| DumpError { line, message: m };
    let mut entries: Vec<(usize, u16, u8)> = Vec::new();
    let mut owner: HashMap<u16, Guid> = HashMap::new();
    let mut cur: Option<usize> = None;
    let mut max_lid = 0u16;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("Unicast lids") {
            let g = line
                .split_whitespace()
                .skip_while(|w| *w != "guid")
                .nth(1)
                .and_then(hex)
                .ok_or_else(|| err(ln, "switch header without guid".into()))?;
            let s = *sw_of
                .get(&Guid(g))
                .ok_or_else(|| err(ln, format!("switch {g:#018x} is not in the fabric")))?;
            cur = Some(s);
            continue;
        }
        if !line.starts_with("0x") {
            continue; // "N lids dumped", "Top of the LFT" and other notes
        }
        let s = cur.ok_or_else(|| err(ln, "entry before any switch header".into()))?;
        let mut w = line.split_whitespace();
        let lid = w
            .next()
            .and_then(hex)
            .and_then(|x| u16::try_from(x).ok())
            .ok_or_else(|| err(ln, "bad LID".into()))?;
        let port_s = w.next().ok_or_else(|| err(ln, "missing port".into()))?;
        let port: u8 = port_s
            .parse()
            .map_err(|_| err(ln, format!("bad port {port_s:?}")))?;
        if port != 0 && port > csr.num_ports(s as u32) {
            return Err(err(ln, format!("port {port} beyond switch #{s}")));
        }
        if let Some(pg) = line
            .split_whitespace()
            .skip_while(|w| *w != "portguid")
            .nth(1)
        {
            let g = hex(pg.trim_end_matches(':')).ok_or_else(|| err(ln, "bad portguid".into()))?;
            owner.insert(lid, Guid(g));
        }
        max_lid = max_lid.max(lid);
        entries.push((s, lid, port));
    }
    let mut lids = LidAssignment::empty(csr);
    // Group LIDs per owner: the base is the lowest, LMC from the count.
    let mut per: HashMap<Guid, Vec<u16>> = HashMap::new();
    for (l, g) in &owner {
        per.entry(*g).or_default().push(*l);
    }
    for (g, mut ls) in per {
        ls.sort_unstable();
        let lmc = (ls.len().next_power_of_two().trailing_zeros()).min(7) as u8;
        if let Some(&s) = sw_of.get(&g) {
            lids.set_switch(s, ls[0]);
        } else if let Some(&t) = term_of.get(&g) {
            lids.set_terminal(t, ls[0], lmc);
        } else {
            return Err(err(0, format!("port GUID {g} is not in the fabric")));
        }
    }
    let mut routes = Routes::new("opensm", csr.switch_count(), usize::from(max_lid) + 1);
    for (s, lid, port) in entries {
        routes.lft_mut(s)[usize::from(lid)] = port;
    }
    Ok((routes, lids))
}
