//! The umad2sim preload only interposes plain libc symbols. If the crate's own code ever
//! called `open64`, `openat`, `fopen`, `dup`, `fcntl` or `epoll_*`, it would silently see
//! the real (empty) /dev and /sys under ibsim. This test inspects the undefined symbols of
//! the crate's compiled objects.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn crate_objects_use_only_interposed_syscalls() {
    let exe = std::env::current_exe().expect("test path");
    let deps: PathBuf = exe.parent().expect("deps dir").to_path_buf();
    let rlibs: Vec<PathBuf> = std::fs::read_dir(&deps)
        .expect("read deps")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libibsm_umad-") && n.ends_with(".rlib"))
        })
        .collect();
    assert!(
        !rlibs.is_empty(),
        "no libibsm_umad rlib next to {}",
        exe.display()
    );
    let Ok(probe) = Command::new("nm").arg("--version").output() else {
        panic!("nm (binutils) is needed to inspect the rlib");
    };
    assert!(probe.status.success());
    for rlib in rlibs {
        let out = Command::new("nm")
            .args(["-u", "--format=just-symbols"])
            .arg(&rlib)
            .output()
            .expect("run nm");
        let text = String::from_utf8_lossy(&out.stdout);
        let syms: Vec<&str> = text.lines().map(str::trim).collect();
        for bad in [
            "open64",
            "openat",
            "openat64",
            "fopen",
            "fopen64",
            "dup",
            "dup2",
            "fcntl",
            "fcntl64",
            "epoll_create1",
            "epoll_wait",
        ] {
            assert!(!syms.contains(&bad), "{} imports {bad}", rlib.display());
        }
        for good in ["open", "read", "write", "ioctl", "poll", "close", "opendir"] {
            assert!(
                syms.contains(&good),
                "{} does not import {good}: inspection is broken",
                rlib.display()
            );
        }
    }
}
