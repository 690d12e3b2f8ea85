//! The RTL engine with the units' generated straight-line models (the default,
//! `HOPSYNC_UNIT_SIM=generated`: MbarrierUnit, NamedBarrierUnit, ClusterBarrierUnit, TmaEngine) and with
//! rust-hdl's own simulation of them (`rust-hdl`) gives the same run: cycle count, status,
//! findings and every retire / completion / release with its cycle, on programs that exercise
//! the units (pipelines, try_wait suspension and timeouts, named barriers with bar.red, cluster
//! barriers, TMA completions, findings of each unit), and on every program of
//! `firmware/programs/tma/` (each TMA form: bulk, tiled, im2col, multicast, swizzles, OOB
//! fills, stores, reductions, prefetches, shared::cta -> shared::cluster, bulk async-groups).

use hopsync_cosim::machine::Config;
use hopsync_firmware::Program;
use hopsync_sim::engine::Engine;
use hopsync_sim::units::UnitSim;
use hopsync_sim::SmConfig;
use std::path::PathBuf;

/// Everything a run says about timing and outcome.
fn run(prog: &Program, sim: UnitSim) -> String {
    let mut sm = SmConfig::sm90();
    sm.backend.1 = sim;
    let mut e = Engine::new(prog, Config::default(), sm);
    e.record_events();
    let outcome = e.run();
    let r = e.report(&outcome);
    let findings: Vec<String> = r.findings.iter().map(|f| format!("{}", f.kind.name())).collect();
    let events: Vec<String> = e.take_events().iter().map(|ev| format!("{ev:?}")).collect();
    format!("{:?} cycles, {} {findings:?}\n{}", r.cycles, r.status, events.join("\n"))
}

#[test]
fn generated_and_rust_hdl_units_give_the_same_runs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("firmware/programs");
    for p in [
        "demo/pipeline.ptx",
        "calibration/mbar_suspend.ptx",
        "calibration/mbar_wake.ptx",
        "calibration/mbar_ops.ptx",
        "calibration/remote_arrive.ptx",
        "calibration/val_cluster_3x4.ptx",
        "tma/pipeline_3stage_warp_specialized.ptx",
        "tma/multicast_4cta.ptx",
        "bad/mbar_init_on_valid.ptx",
        "bad/deadlock_mbarrier_wait.ptx",
        "calibration/val_bar_loops.ptx",
        "calibration/val_sync_mix.ptx",
        "bad/bar_red_mixed.ptx",
        "bad/bar_count_mismatch.ptx",
        "bad/deadlock_named_barrier.ptx",
        "bad/cluster_barrier_arrive_twice.ptx",
        "bad/cluster_barrier_wait_without_arrive.ptx",
    ] {
        let prog = Program::load(&root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        let (g, h) = (run(&prog, UnitSim::Generated), run(&prog, UnitSim::RustHdl));
        assert!(g == h, "{p}: the generated model's run differs from rust-hdl's:\n{}\n---\n{}", &g[..g.len().min(2000)], &h[..h.len().min(2000)]);
    }
}

#[test]
fn generated_and_rust_hdl_tma_engines_give_the_same_runs() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("firmware/programs/tma");
    let mut progs: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "ptx")).collect();
    progs.sort();
    assert!(progs.len() > 20, "{} programs", progs.len());
    for p in progs {
        let prog = Program::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let (g, h) = (run(&prog, UnitSim::Generated), run(&prog, UnitSim::RustHdl));
        assert!(g == h, "{}: the generated model's run differs from rust-hdl's:\n{}\n---\n{}", p.display(), &g[..g.len().min(2000)], &h[..h.len().min(2000)]);
    }
}
