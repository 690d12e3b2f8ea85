//! The README's first command on a machine with only Rust: `cargo run --release -- demo` builds
//! and runs with Verilator hidden (`VERILATOR` pointing nowhere), the demo runs the golden and
//! the RTL engine and writes its waves, and `--engine verilator` then says what to install.
//!
//! The build goes into its own target folder (`target/fresh-machine`), so the workspace's own
//! builds keep their Verilator models. It is the README's command with the release profile's
//! optimizer turned off (`--config`, [`UNOPTIMIZED`]): the same features, build scripts and
//! Verilator detection, in a third of the time (~110 s instead of ~360 s from nothing on 2 cores,
//! which CI would otherwise spend with both cores on this test).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `cargo run --release` settings that only change how hard rustc optimizes: what the test
/// checks (the build without Verilator, the demo's output and waves) does not depend on them.
const UNOPTIMIZED: [&str; 6] =
    ["--config", "profile.release.opt-level=0", "--config", "profile.release.debug=false", "--config", "profile.release.codegen-units=256"];

/// `cargo` as the test harness was started with it.
fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root())
        .args(UNOPTIMIZED)
        .env("CARGO_TARGET_DIR", root().join("target/fresh-machine"))
        .env("VERILATOR", "/nonexistent/verilator")
        .env_remove("VERILATOR_ROOT")
        // the test harness's own build settings must not leak into the user's build
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    c
}

#[test]
fn demo_builds_and_runs_without_verilator() {
    let waves = root().join("target/fresh-machine/demo-waves");
    let _ = std::fs::remove_dir_all(&waves);
    let o = cargo()
        .args(["run", "--release", "--", "demo", "--waves-dir"])
        .arg(&waves)
        .output()
        .expect("cargo runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "the demo failed without Verilator:\n{out}\n{err}");
    // the golden run, then the RTL run with its cycle count and waves
    assert!(out.contains("on the golden engine"), "{out}");
    assert!(out.contains("Every consumer sum matches"), "{out}");
    let cycles_line = out.lines().find(|l| l.contains(" cycles (")).unwrap_or_else(|| panic!("no cycle count:\n{out}"));
    let cycles: u64 = cycles_line.split_whitespace().next().unwrap().parse().unwrap();
    assert!(cycles > 100, "{cycles_line}");
    assert!(cycles_line.contains(" 0 divergences"), "{cycles_line}");
    assert!(cycles_line.contains("outputs as expected"), "{cycles_line}");
    let vcd = waves.join("pipeline.vcd");
    let gtkw = waves.join("pipeline.gtkw");
    assert!(out.contains(&format!("gtkwave {} {}", vcd.display(), gtkw.display())), "{out}");
    let v = std::fs::read_to_string(&vcd).expect("the VCD is written");
    assert!(v.contains("$enddefinitions") && v.contains("mbarrier"), "not a VCD of the units");
    let g = std::fs::read_to_string(&gtkw).expect("the save file is written");
    assert!(g.contains(&vcd.display().to_string()), "the save file names its VCD:\n{g}");

    // the same build: `--engine verilator` names what is missing and how to get it
    let o = cargo()
        .args(["run", "--release", "--quiet", "--", "run", "firmware/programs/demo/pipeline.ptx", "--engine", "verilator"])
        .output()
        .expect("cargo runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("unsupported: this build has no Verilator models") && err.contains("install verilator g++ make") && err.contains("rebuild"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(Path::new(&root().join("target/fresh-machine")).is_dir());
}
