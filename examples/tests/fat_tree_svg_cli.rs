//! The `fat_tree_svg` example as a user runs it: `--help` is help (it once wrote a file
//! called `--help`), and the picture it writes is the shared SVG writer's.
//!
//! `cargo test` builds the examples before running tests; the binary sits in
//! `target/<profile>/examples/` next to this test's `deps/` directory.

use std::path::PathBuf;
use std::process::Command;

fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let bin = profile_dir
        .join("examples")
        .join(format!("fat_tree_svg{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.exists(), "{} not built", bin.display());
    bin
}

#[test]
fn help_is_help_and_the_picture_is_drawn() {
    let dir = std::env::temp_dir().join(format!("fat_tree_svg_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(example())
        .arg("--help")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage:"));
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "--help wrote a file"
    );
    let out = Command::new(example())
        .args(["pic.svg", "--radix", "8", "--levels", "2", "--dot"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let svg = std::fs::read_to_string(dir.join("pic.svg")).unwrap();
    // 4 spines and 8 leaves, links coloured by load.
    assert_eq!(svg.matches("class=\"switch\"").count(), 12);
    assert!(svg.contains("all-to-all load"));
    assert!(dir.join("pic.dot").exists());
    let bad = Command::new(example())
        .args(["--radix", "x"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
