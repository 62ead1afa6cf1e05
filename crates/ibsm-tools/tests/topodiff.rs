//! `ibsm-topodiff REF CURRENT` on files: the differences `ibsm_topology::diff` finds,
//! one line each, exit 1; none and exit 0 for the same fabric; exit 2 and the file and
//! line for a reference that does not read.

use std::path::{Path, PathBuf};
use std::process::Command;

use ibsm_topology::{Fabric, generate, ibnet};

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ibsm_topodiff_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, f: &Fabric) {
    std::fs::write(
        path,
        ibnet::write(f, &ibnet::WriteOptions::default()).unwrap(),
    )
    .unwrap();
}

fn topodiff(args: &[&Path]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibsm-topodiff"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_tool_prints_what_diff_finds_and_says_so_in_its_exit_code() {
    let dir = scratch();
    let plan = generate::k_ary_n_tree(2, 3).unwrap();
    let links: Vec<_> = plan.links().map(|(_, l)| *l).collect();
    // Two cables without a node in common, their far ends swapped; a third pulled.
    let x = links[0];
    let y = *links
        .iter()
        .find(|l| {
            ![x.a.node, x.b.node].contains(&l.a.node) && ![x.a.node, x.b.node].contains(&l.b.node)
        })
        .unwrap();
    let mut now = plan.clone();
    now.disconnect(x.a.node, x.a.port).unwrap();
    now.disconnect(y.a.node, y.a.port).unwrap();
    now.connect(x.a.node, x.a.port, y.b.node, y.b.port).unwrap();
    now.connect(y.a.node, y.a.port, x.b.node, x.b.port).unwrap();
    let z = *links
        .iter()
        .find(|l| {
            ![x.a.node, x.b.node, y.a.node, y.b.node].contains(&l.a.node)
                && ![x.a.node, x.b.node, y.a.node, y.b.node].contains(&l.b.node)
        })
        .unwrap();
    now.disconnect(z.a.node, z.a.port).unwrap();
    let (p, c) = (dir.join("plan.topo"), dir.join("now.topo"));
    write(&p, &plan);
    write(&c, &now);
    let want = ibsm_topology::diff::diff(&plan, &now);
    assert_eq!(
        want.iter()
            .map(ibsm_topology::diff::Difference::kind)
            .collect::<Vec<_>>(),
        ["missing_cable", "miswired", "miswired"]
    );
    let (code, out, err) = topodiff(&[&p, &c]);
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), want.len(), "{out}");
    for (line, d) in lines.iter().zip(&want) {
        // The difference as the SM logs it, then the nodes' names.
        assert!(line.starts_with(&d.to_string()), "{line} / {d}");
        assert!(line.contains("  # "), "{line}");
    }
    // The same fabric: nothing, exit 0.
    let (code, out, _) = topodiff(&[&p, &p]);
    assert_eq!((code, out.as_str()), (0, ""));
    // A reference that does not parse: exit 2, file and line.
    let bad = dir.join("bad.topo");
    std::fs::write(&bad, "Switch 8 \"S-1\n").unwrap();
    let (code, _, err) = topodiff(&[&bad, &c]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("{}: line 1: ", bad.display())),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
