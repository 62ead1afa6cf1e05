//! Draws a small, slightly damaged fat tree with link load as colour and width.
//!
//! ```text
//! cargo run --example fat_tree_svg [-- [OUT.svg] [--radix 8] [--levels 2] [--degrade 0.15] [--dot]]
//! ```
//! Builds a fat tree (by default radix 8, two levels: 4 spines, 8 leaves, 32 CAs),
//! removes a share of the switch-to-switch cables, estimates each cable's load under
//! uniform all-to-all traffic spread evenly over all shortest paths (edge betweenness on
//! the [`Csr`] snapshot), and draws it with `ibsm_topology::svg` (the writer behind
//! `ibsm-netdiscover --svg` and ibsmd's `/fabric.svg`) to `OUT.svg`; `--dot` also writes
//! Graphviz input to `OUT.dot`.

use std::process::ExitCode;

use clap::Parser;
use ibsm_topology::svg::{self, SvgOptions};
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

/// Draw a damaged fat tree, its links coloured by all-to-all load.
#[derive(Debug, Parser)]
#[command(name = "fat_tree_svg")]
struct Args {
    /// Where to write the picture.
    #[arg(default_value = "fat_tree.svg")]
    out: std::path::PathBuf,
    /// Switch radix.
    #[arg(long, default_value_t = 8)]
    radix: u8,
    /// Switch levels.
    #[arg(long, default_value_t = 2)]
    levels: usize,
    /// Share of switch-to-switch cables removed.
    #[arg(long, default_value_t = 0.15)]
    degrade: f64,
    /// Also write Graphviz input beside it (OUT with .dot).
    #[arg(long)]
    dot: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let fail = |what: String| {
        eprintln!("fat_tree_svg: {what}");
        ExitCode::FAILURE
    };
    let mut fabric = match generate::fat_tree(args.radix, args.levels) {
        Ok(f) => f,
        Err(e) => return fail(e.to_string()),
    };
    let removed = match fabric.degrade(args.degrade, 3) {
        Ok(n) => n,
        Err(e) => return fail(e.to_string()),
    };
    let mut loads = loads(&fabric);
    loads.sort_by_key(|x| x.0);
    let lookup = |l: LinkId| {
        loads
            .binary_search_by_key(&l, |x| x.0)
            .ok()
            .map(|i| loads[i].1)
    };
    let title = format!(
        "radix-{} {}-level fat tree, {removed} switch cables removed",
        args.radix, args.levels
    );
    let picture = svg::to_svg(
        &fabric,
        &SvgOptions {
            title: Some(title.clone()),
            link_weight: Some(&lookup),
            weight_unit: "all-to-all load".into(),
            ..SvgOptions::default()
        },
    );
    if let Err(e) = std::fs::write(&args.out, picture) {
        return fail(format!("{}: {e}", args.out.display()));
    }
    eprintln!("wrote {}", args.out.display());
    if args.dot {
        let path = args.out.with_extension("dot");
        let text = dot::to_dot(
            &fabric,
            &dot::DotOptions {
                link_weight: Some(&lookup),
                title: Some(format!("{title}; colour/width = all-to-all load")),
                ..Default::default()
            },
        );
        if let Err(e) = std::fs::write(&path, text) {
            return fail(format!("{}: {e}", path.display()));
        }
        eprintln!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
