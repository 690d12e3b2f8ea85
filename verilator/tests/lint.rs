//! Lint and structure checks of every unit's generated Verilog, at the sizes `hopsync verilog`
//! writes by default and at the lockstep test sizes:
//! - `verilator --lint-only -Wall` with only the waivers of `verilator/lint_waivers.vlt`
//!   (warning classes that come from rust-hdl's code style, each with its reason);
//! - yosys `hierarchy -check; proc` with no latch cell, then `flatten; check -assert` (no
//!   combinational loop, no multiple drivers, no undriven wire).
//! A missing tool fails with the command that installs it.

use hopsync_hdl::verilog::{generate, module_name, Sizes, UNITS};
use std::path::{Path, PathBuf};
use std::process::Command;

fn require(tool: &str, arg: &str, install: &str) {
    if Command::new(tool).arg(arg).output().is_err() {
        panic!("`{tool}` is not on PATH and this check needs it: run `{install}` (scripts/test does)");
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopsync_lint_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_unit(dir: &Path, unit: &str, sizes: &Sizes) -> PathBuf {
    let f = dir.join(format!("{}.v", module_name(unit)));
    std::fs::write(&f, generate(unit, sizes).unwrap()).unwrap();
    f
}

fn lint(unit: &str, sizes: &Sizes) {
    require("verilator", "--version", "apt-get install -y verilator g++ make");
    let dir = scratch(unit);
    let f = write_unit(&dir, unit, sizes);
    let waivers = Path::new(env!("CARGO_MANIFEST_DIR")).join("lint_waivers.vlt");
    let o = Command::new("verilator")
        .args(["--lint-only", "-Wall", "--top-module", &module_name(unit)])
        .arg(&waivers)
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "verilator --lint-only -Wall on {unit} ({}) reports warnings beyond the waivers of {}:\n{}",
        sizes.describe(),
        waivers.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn structure(unit: &str, sizes: &Sizes) {
    require("yosys", "-V", "apt-get install -y yosys");
    let dir = scratch(&format!("y_{unit}"));
    let f = write_unit(&dir, unit, sizes);
    let script = format!(
        "read_verilog {f}; hierarchy -check -top {m}; proc; \
         select -assert-none t:$dlatch t:$adlatch t:$dlatchsr t:$sr; \
         flatten; check -assert",
        f = f.display(),
        m = module_name(unit)
    );
    let o = Command::new("yosys")
        .args(["-q", "-p", &script])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "yosys structure check of {unit} ({}) failed (a latch, a combinational loop, a \
         multiply-driven or undriven net):\n{}\n{}",
        sizes.describe(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verilator_lint_wall_is_clean_but_for_the_waivers() {
    for u in UNITS {
        lint(u.name, &Sizes::default());
        lint(u.name, &Sizes::test());
    }
}

#[test]
fn yosys_finds_no_latch_and_no_combinational_loop() {
    for u in UNITS {
        structure(u.name, &Sizes::default());
    }
}

/// The checks catch what they are for: a latch and a combinational loop written by hand.
#[test]
fn the_structure_check_catches_a_latch_and_a_loop() {
    require("yosys", "-V", "apt-get install -y yosys");
    let dir = scratch("neg");
    for (name, body) in [
        ("latch", "module bad(input en, input d, output reg q); always @(*) if (en) q = d; endmodule"),
        ("loop", "module bad(input a, output y); wire b; assign b = y ^ a; assign y = b; endmodule"),
    ] {
        let f = dir.join(format!("{name}.v"));
        std::fs::write(&f, body).unwrap();
        let script = format!(
            "read_verilog {}; hierarchy -check -top bad; proc; \
             select -assert-none t:$dlatch t:$adlatch t:$dlatchsr t:$sr; flatten; check -assert",
            f.display()
        );
        let o = Command::new("yosys").args(["-q", "-p", &script]).output().unwrap();
        assert!(!o.status.success(), "yosys did not reject the {name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
