//! `hopsync verilog` and `hopsync synth` (the FPGA flow's CLI; the flow itself is tested in
//! hopsync-hdl's `fpga` tests, the Verilog under Verilator in hopsync-verilator).

use std::process::Command;

fn hopsync(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hopsync"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn verilog_writes_one_file_per_unit_with_the_sizes_in_its_header() {
    let dir = std::env::temp_dir().join(format!("hopsync_cli_verilog_{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let o = hopsync(&["verilog", "--out", d, "--mbar-words-log2", "6", "--smem-beats-log2", "6"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for u in hopsync_hdl::verilog::UNITS {
        let m = hopsync_hdl::verilog::module_name(u.name);
        let v = std::fs::read_to_string(dir.join(format!("{m}.v"))).unwrap();
        assert!(v.contains(&format!("module {m}(")), "{}", u.name);
        assert!(v.contains("A=6 (64 mbarrier words), S=6"), "{}", u.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
    // a size the generator is not instantiated for is a usage error
    let o = hopsync(&["verilog", "--out", d, "--mbar-words-log2", "7"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not instantiated"));
}

#[test]
fn synth_rejects_unknown_units_and_targets() {
    let o = hopsync(&["synth", "nope", "--target", "xc7"]);
    assert_eq!(o.status.code(), Some(2));
    let o = hopsync(&["synth", "top", "--target", "gw1n"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ice40-up5k"));
}
