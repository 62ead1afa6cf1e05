//! Draws a small, slightly damaged fat tree with link load as colour and width.
//!
//! ```text
//! cargo run --example fat_tree_svg [-- out.svg]
//! ```
//! Builds the radix-8 two-level fat tree (4 spines, 8 leaves, 32 CAs), removes 15 % of
//! the switch-to-switch cables, estimates each cable's load under uniform all-to-all
//! traffic spread evenly over all shortest paths (edge betweenness on the [`Csr`]
//! snapshot), and writes `out.dot` and, when Graphviz `dot` is installed, `out.svg`.

use std::process::{Command, ExitCode};

use ibsm_topology::{Csr, Fabric, LinkId, dot, generate};

/// Load per switch-to-switch cable: for every ordered pair of CAs on different switches,
/// one unit split over all shortest switch paths (Brandes' accumulation, weighted by the
/// number of CAs behind each switch). CA cables carry `2 * (CAs - 1)` units.
fn loads(f: &Fabric) -> Vec<(LinkId, f64)> {
    let csr = Csr::new(f);
    let s = csr.switch_count();
    let terms: Vec<f64> = (0..s as u32)
        .map(|v| f64::from(csr.terminals_of(v).len() as u32))
        .collect();
    // Load per (switch, adjacency slot).
    let mut slot_load = vec![0.0f64; csr.adj_switch.len()];
    let mut dist = vec![u16::MAX; s];
    let mut queue = Vec::new();
    for src in 0..s as u32 {
        if terms[src as usize] == 0.0 {
            continue;
        }
        csr.bfs_into(src, &mut dist, &mut queue);
        let mut sigma = vec![0.0f64; s];
        sigma[src as usize] = 1.0;
        for &v in &queue {
            for (w, _) in csr.neighbours(v) {
                if dist[w as usize] == dist[v as usize] + 1 {
                    sigma[w as usize] += sigma[v as usize];
                }
            }
        }
        let mut delta = vec![0.0f64; s];
        for &v in queue.iter().rev() {
            let start = csr.adj_start[v as usize] as usize;
            for (k, (w, _)) in csr.neighbours(v).enumerate() {
                if dist[w as usize] == dist[v as usize] + 1 {
                    let share = sigma[v as usize] / sigma[w as usize]
                        * (terms[w as usize] + delta[w as usize]);
                    delta[v as usize] += share;
                    slot_load[start + k] += terms[src as usize] * share;
                }
            }
        }
    }
    let total_cas = f.cas().count() as f64;
    f.links()
        .map(|(id, link)| {
            let load = match (csr.switch_index(link.a.node), csr.switch_index(link.b.node)) {
                (Some(a), Some(_)) => {
                    let start = csr.adj_start[a as usize] as usize;
                    let k = csr
                        .neighbours(a)
                        .position(|(_, p)| p == link.a.port)
                        .unwrap_or(0);
                    // Both directions of the cable: the slot on each end.
                    let b = csr.switch_index(link.b.node).unwrap_or(0);
                    let start_b = csr.adj_start[b as usize] as usize;
                    let kb = csr
                        .neighbours(b)
                        .position(|(_, p)| p == link.b.port)
                        .unwrap_or(0);
                    slot_load[start + k] + slot_load[start_b + kb]
                }
                _ => 2.0 * (total_cas - 1.0),
            };
            (id, load)
        })
        .collect()
}

fn main() -> ExitCode {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fat_tree.svg".to_owned());
    let stem = out.strip_suffix(".svg").unwrap_or(&out).to_owned();
    let mut fabric = match generate::fat_tree(8, 2) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("fat_tree_svg: {e}");
            return ExitCode::FAILURE;
        }
    };
    let removed = fabric.degrade(0.15, 3).unwrap_or(0);
    let mut loads = loads(&fabric);
    loads.sort_by_key(|x| x.0);
    let lookup = |l: LinkId| {
        loads
            .binary_search_by_key(&l, |x| x.0)
            .ok()
            .map(|i| loads[i].1)
    };
    let text = dot::to_dot(
        &fabric,
        &dot::DotOptions {
            link_weight: Some(&lookup),
            title: Some(format!(
                "radix-8 fat tree, {removed} spine cables removed; colour/width = all-to-all load"
            )),
            ..Default::default()
        },
    );
    let dot_path = format!("{stem}.dot");
    if let Err(e) = std::fs::write(&dot_path, &text) {
        eprintln!("fat_tree_svg: {dot_path}: {e}");
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {dot_path}");
    match Command::new("dot")
        .args(["-Tsvg", "-o", &out, &dot_path])
        .status()
    {
        Ok(s) if s.success() => {
            eprintln!("wrote {out}");
            ExitCode::SUCCESS
        }
        Ok(s) => {
            eprintln!("fat_tree_svg: dot failed ({s})");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("Graphviz `dot` is not installed: render {dot_path} elsewhere");
            ExitCode::SUCCESS
        }
    }
}
