//! Issue 17, point 1: lanes that split at a branch reconverge at its join before an `.aligned`
//! barrier there. nvcc's PTX for `if (tid < 4) { cp.async ...; commit; wait_group 0; }
//! __syncthreads();` puts `bar.sync 0` at the join point; the lanes that waited in `wait_group`
//! reach it later than the others, and the warp must meet there (PTX 9.7.13.1: all threads of the
//! warp execute the same barrier instruction) instead of reporting `BarrierAlignedDivergent`.
//! The program runs clean on the golden engine (deterministic and 64 seeded interleavings), the
//! RTL engine, its lockstep with the golden model, and the Verilator engine. The misuse stays a
//! finding (firmware/programs/bad/bar_aligned_*.ptx, checked by tests/bad_programs.rs and
//! tests/rtl_programs.rs).

use hopsync_cosim::machine::Config;
use hopsync_cosim::report::{run_golden, RunReport};
use hopsync_firmware::Program;
use hopsync_sim::{lockstep::run_cosim, run_rtl, SmConfig};
use std::path::PathBuf;

fn program() -> Program {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("firmware/programs/nvcc/nvcc_cp_async_join_syncthreads.ptx");
    Program::load(&p).unwrap()
}

fn clean(r: &RunReport) -> Result<(), String> {
    if r.status == "ok" && r.findings.is_empty() && r.checks.iter().all(|c| c.matches) && !r.checks.is_empty() {
        Ok(())
    } else {
        Err(r.summary())
    }
}

#[test]
fn join_point_barrier_runs_clean_on_the_golden_engine_under_every_seed() {
    let prog = program();
    clean(&run_golden(&prog, Config::default())).unwrap();
    for seed in 1..=64 {
        clean(&run_golden(&prog, Config { seed: Some(seed), ..Config::default() })).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}

#[test]
fn join_point_barrier_runs_clean_on_the_rtl_engine_and_in_lockstep() {
    let prog = program();
    clean(&run_rtl(&prog, Config::default(), SmConfig::sm90())).unwrap();
    let c = run_cosim(&prog, Config::default(), SmConfig::sm90());
    assert!(c.clean() && c.compared > 0, "{}{}", c.run.summary(), c.summary());
}

#[cfg(feature = "verilator")]
#[test]
fn join_point_barrier_runs_clean_on_the_verilator_engine() {
    use hopsync_verilator::engine::VerilatorBackend;
    let prog = program();
    let sm = || VerilatorBackend::configure(SmConfig::sm90(), None).unwrap();
    let r = run_rtl(&prog, Config::default(), sm());
    assert_eq!(r.engine, "verilator");
    clean(&r).unwrap();
    let c = run_cosim(&prog, Config::default(), sm());
    assert!(c.clean(), "{}{}", c.run.summary(), c.summary());
}
