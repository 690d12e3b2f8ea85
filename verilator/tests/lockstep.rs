//! Every unit's generated Verilog under Verilator in lockstep with its rust-hdl simulation:
//! same random stimulus, every output compared every cycle (before and after the clock edge).
//! 20000 cycles per unit here; 1e6 in the `long_*` tests (`--profile long --run-ignored only`).

use hopsync_verilator::lockstep::run_unit;

fn check(unit: &str, cycles: u64, seed: u64) {
    let r = run_unit(unit, cycles, seed).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{unit}: {} cycles, {} output values compared, {:.2} s ({:.0} cycles/s in lockstep)",
        r.cycles,
        r.compared,
        r.secs,
        r.cycles as f64 / r.secs
    );
    assert_eq!(r.cycles, cycles);
    eprintln!("{unit}: events {:?}", r.events);
    // the stimulus reaches every kind of outcome
    for (name, n) in &r.events {
        assert!(*n >= 5, "{unit}: `{name}` happened {n} times in {cycles} cycles");
    }
    // the stimulus makes the unit answer: outputs are not stuck at zero
    assert!(
        r.active_samples > cycles / 10,
        "{unit}: only {} of {} output samples were non-zero",
        r.active_samples,
        2 * cycles
    );
}

const CYCLES: u64 = 20_000;
const LONG: u64 = 1_000_000;

#[test]
fn lockstep_mbarrier_unit() {
    check("mbarrier_unit", CYCLES, 0x5EED_0001);
}

#[test]
fn lockstep_named_barrier_unit() {
    check("named_barrier_unit", CYCLES, 0x5EED_0002);
}

#[test]
fn lockstep_cluster_barrier_unit() {
    check("cluster_barrier_unit", CYCLES, 0x5EED_0003);
}

#[test]
fn lockstep_tma_engine() {
    check("tma_engine", CYCLES, 0x5EED_0006);
}

#[test]
fn lockstep_smem_port() {
    check("smem_port", CYCLES, 0x5EED_0004);
}

#[test]
fn lockstep_cta_top() {
    check("cta_top", CYCLES, 0x5EED_0005);
}

#[test]
#[ignore]
fn long_lockstep_mbarrier_unit() {
    check("mbarrier_unit", LONG, 0x10_0001);
}

#[test]
#[ignore]
fn long_lockstep_named_barrier_unit() {
    check("named_barrier_unit", LONG, 0x10_0002);
}

#[test]
#[ignore]
fn long_lockstep_cluster_barrier_unit() {
    check("cluster_barrier_unit", LONG, 0x10_0003);
}

#[test]
#[ignore]
fn long_lockstep_tma_engine() {
    check("tma_engine", LONG, 0x10_0006);
}

#[test]
#[ignore]
fn long_lockstep_smem_port() {
    check("smem_port", LONG, 0x10_0004);
}

#[test]
#[ignore]
fn long_lockstep_cta_top() {
    check("cta_top", LONG, 0x10_0005);
}

/// The comparison bites: one flipped input bit on the Verilator side is reported.
#[test]
fn a_flipped_input_bit_is_caught() {
    use hopsync_verilator::lockstep::{run_flipping, Dut, MbarrierDut};
    let k = MbarrierDut::INPUTS
        .iter()
        .position(|n| *n == "local_valid")
        .unwrap();
    let e = run_flipping::<MbarrierDut>(2_000, 0x5EED_0001, Some((1_000, k))).unwrap_err();
    assert!(e.contains("cycle 1000") && e.contains("local_ready"), "{e}");
}

/// Every unit of the Verilog flow has a model and a harness.
#[test]
fn every_unit_has_a_model_and_a_harness() {
    for u in hopsync_hdl::verilog::UNITS {
        assert!(
            hopsync_verilator::MODELS.iter().any(|m| m.unit == u.name),
            "no Verilator model of {}",
            u.name
        );
        run_unit(u.name, 10, 1).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Verilator's own VCD, on request.
#[test]
fn verilator_writes_a_vcd() {
    let dir = std::env::temp_dir().join(format!("hopsync_vvcd_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("smem.vcd");
    let mut m = hopsync_verilator::Model::new("smem_port");
    m.trace(&f).unwrap();
    for _ in 0..20 {
        m.cycle();
    }
    m.trace_close();
    let v = std::fs::read_to_string(&f).unwrap();
    assert!(v.contains("$enddefinitions") && v.contains("local_resp"), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}
