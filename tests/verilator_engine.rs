//! `--engine verilator` (issue 6 §2): the SM engine with the units' generated Verilog simulated
//! by Verilator (hopsync-verilator's backend) behaves exactly as with the rust-hdl units. Every
//! seed program gives the same report (outputs, cycles, phases, instructions, findings) under
//! both, and passes the lockstep against the golden model with no divergence; bad programs stop
//! with the same first finding; the TMA programs (the TmaEngine on Verilator) give the same
//! report and the same retire / event stream as on rust-hdl and cosim with no divergence;
//! Verilator's own VCD is written on request; the CLI reports engine `verilator`.
//!
//! Needs Verilator 5 at build time (hopsync-verilator's build script says how to install it).
#![cfg(feature = "verilator")]

use hopsync_cosim::machine::Config;
use hopsync_cosim::report::RunReport;
use hopsync_firmware::Program;
use hopsync_sim::{lockstep::run_cosim, run_rtl, SmConfig};
use hopsync_verilator::engine::VerilatorBackend;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load(p: &Path) -> Program {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    Program::parse(&p.display().to_string(), &text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn verilator(vcd: Option<PathBuf>) -> SmConfig {
    VerilatorBackend::configure(SmConfig::sm90(), vcd).unwrap()
}

/// The report as JSON with the engine name blanked (the one field that must differ).
fn comparable(r: &RunReport) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v["engine"] = "-".into();
    v
}

fn ptx_in(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    v.sort();
    v
}

#[test]
fn seed_programs_match_the_rtl_engine_and_the_golden_model() {
    let seeds = ptx_in("firmware/programs/seeds");
    assert!(seeds.len() >= 20, "{} seed programs", seeds.len());
    let mut failures = vec![];
    for p in &seeds {
        let prog = load(p);
        let a = run_rtl(&prog, Config::default(), SmConfig::sm90());
        let b = run_rtl(&prog, Config::default(), verilator(None));
        assert_eq!(a.engine, "rtl");
        assert_eq!(b.engine, "verilator");
        if a.status != "ok" {
            failures.push(format!("{}: rtl engine: {}", p.display(), a.summary()));
        }
        if comparable(&a) != comparable(&b) {
            failures.push(format!("{}: rtl and verilator reports differ:\n{}\n{}", p.display(), a.summary(), b.summary()));
        }
        let c = run_cosim(&prog, Config::default(), verilator(None));
        if c.run.status != "ok" || !c.divergences.is_empty() || c.compared == 0 {
            failures.push(format!("{}: cosim on verilator: {} {:?}", p.display(), c.run.status, c.divergences.first().map(|d| d.to_string())));
        }
        println!("{:<48} {} cycles, cosim {} compared", p.file_name().unwrap().to_string_lossy(), b.cycles.unwrap_or(0), c.compared);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Findings raised by the units' simulation assertions come out of the Verilator models the same.
#[test]
fn unit_findings_match_the_rtl_engine() {
    for name in [
        "mbar_pending_underflow",
        "mbar_not_shared",
        "mbar_init_on_valid",
        "bar_count_mismatch",
        "bar_warp_arrived_twice",
        "cluster_barrier_arrive_twice",
        "cluster_barrier_wait_without_arrive",
    ] {
        let p = root().join(format!("firmware/programs/bad/{name}.ptx"));
        let prog = load(&p);
        let a = run_rtl(&prog, Config::default(), SmConfig::sm90());
        let b = run_rtl(&prog, Config::default(), verilator(None));
        assert_eq!(a.status, "fault", "{name}: {}", a.summary());
        assert!(!a.findings.is_empty(), "{name}");
        assert_eq!(comparable(&a), comparable(&b), "{name}:\n{}\n{}", a.summary(), b.summary());
        let c = run_cosim(&prog, Config::default(), verilator(None));
        assert!(c.divergences.is_empty(), "{name}: {:?}", c.divergences.first().map(|d| d.to_string()));
    }
}

/// One TMA program on rust-hdl and on Verilator: same report, same event stream (retires,
/// TMA landings, complete-tx...), the same commands on the TmaEngine unit, and a cosim on
/// Verilator with no divergence. Returns the failures and the commands the unit took.
fn tma_program_matches(p: &Path) -> (Vec<String>, u64) {
    use hopsync_sim::engine::Engine;
    let prog = load(p);
    let run = |sm: SmConfig| {
        let mut e = Engine::new(&prog, Config::default(), sm);
        e.record_events();
        let outcome = e.run();
        let r = e.report(&outcome);
        let events: Vec<String> = e.take_events().iter().map(|ev| format!("{ev:?}")).collect();
        (r, events, e.tma_unit_commands)
    };
    let (a, ea, na) = run(SmConfig::sm90());
    let (b, eb, nb) = run(verilator(None));
    let mut failures = vec![];
    let name = p.display();
    if a.status != "ok" {
        failures.push(format!("{name}: rtl engine: {}", a.summary()));
    }
    if comparable(&a) != comparable(&b) {
        failures.push(format!("{name}: rtl and verilator reports differ:\n{}\n{}", a.summary(), b.summary()));
    }
    if let Some(k) = (0..ea.len().max(eb.len())).find(|&k| ea.get(k) != eb.get(k)) {
        failures.push(format!("{name}: event {k} of {} differs:\nrtl:       {:?}\nverilator: {:?}", ea.len(), ea.get(k), eb.get(k)));
    }
    if na != nb {
        failures.push(format!("{name}: the TmaEngine took {na} commands on rust-hdl, {nb} on Verilator"));
    }
    let c = run_cosim(&prog, Config::default(), verilator(None));
    if c.run.status != "ok" || !c.divergences.is_empty() || c.compared == 0 {
        failures.push(format!("{name}: cosim on verilator: {} {:?}", c.run.status, c.divergences.first().map(|d| d.to_string())));
    }
    println!("{:<40} {} cycles, {} events, {nb} TmaEngine commands, cosim {} compared", p.file_name().unwrap().to_string_lossy(), b.cycles.unwrap_or(0), eb.len(), c.compared);
    (failures, nb)
}

/// Every program of firmware/programs/tma (about 2 s: no subset needed).
#[test]
fn tma_programs_match_the_rtl_engine() {
    let programs = ptx_in("firmware/programs/tma");
    assert!(programs.len() >= 20, "{} TMA programs", programs.len());
    let mut failures = vec![];
    let mut commands = 0;
    for p in &programs {
        let (e, n) = tma_program_matches(p);
        failures.extend(e);
        commands += n;
    }
    assert!(commands > 0, "no TMA command ran on the Verilator TmaEngine");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_backend_models_every_unit_the_engine_uses() {
    let cfg = verilator(None);
    for unit in ["mbarrier_unit", "named_barrier_unit", "cluster_barrier_unit", "tma_engine"] {
        assert_eq!(cfg.backend.unsupported(unit), None, "{unit}");
    }
}

#[test]
fn writes_verilator_vcds_on_request() {
    let dir = std::env::temp_dir().join(format!("hopsync_vl_engine_vcd_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // the TMA program first: the second run's units write mbarrier_0.vcd etc. again, and it
    // has no TMA engine
    for p in ["tma/bulk_add_one_1d.ptx", "seeds/mbarrier_ex4_cluster.ptx"] {
        let prog = load(&root().join("firmware/programs").join(p));
        let r = run_rtl(&prog, Config::default(), verilator(Some(dir.clone())));
        assert_eq!(r.status, "ok", "{p}: {}", r.summary());
    }
    for f in ["mbarrier_0.vcd", "named_0.vcd", "cluster_0.vcd", "tma_0.vcd"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(text.contains("$enddefinitions") && text.contains("#10"), "{f} holds no samples");
    }
    let vcd = std::fs::read_to_string(dir.join("mbarrier_0.vcd")).unwrap();
    assert!(vcd.contains("local_req") && vcd.contains("resp"), "the VCD names the unit's ports");
    let vcd = std::fs::read_to_string(dir.join("tma_0.vcd")).unwrap();
    assert!(vcd.contains("gmem_req") && vcd.contains("smem_wr"), "the TMA VCD names the engine's ports");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_run_and_cosim_report_engine_verilator() {
    let exe = env!("CARGO_BIN_EXE_hopsync");
    let p = root().join("firmware/programs/seeds/mbarrier_ex2_phase_parity.ptx");
    let json = std::env::temp_dir().join(format!("hopsync_vl_engine_{}.json", std::process::id()));
    let o = Command::new(exe).arg("run").arg(&p).args(["--engine", "verilator", "--json"]).arg(&json).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["engine"], "verilator");
    assert_eq!(v["status"], "ok");
    assert!(v["cycles"].as_u64().unwrap() > 0);
    let o = Command::new(exe).arg("cosim").arg(&p).args(["--engine", "verilator", "--json"]).arg(&json).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["engine"], "verilator");
    assert_eq!(v["divergences"].as_array().map(|a| a.len()), Some(0));
    let _ = std::fs::remove_file(&json);
}
