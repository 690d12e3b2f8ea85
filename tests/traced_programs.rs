//! Every program the committed GPU traces recorded (`cosim/traces/sm90/*.json`), instrumented as
//! `hopsync gpu pack` writes it (a trace store after every traced instruction, polls included),
//! finishes on the RTL engine with the golden engine's outputs: instrumentation adds
//! global-memory traffic, and the warp-specialized rings used to livelock under it (issue 13).
//!
//! One test per traced program, listed when the binary starts (libtest-mimic, `harness = false`
//! in Cargo.toml): a new trace is a new test without an edit here, each program gets nextest's
//! own timeout and a failure names its program. Both engines run under the undefined-behaviour
//! mode of the program's manifest (`ub = "warn"`: seed 000's init on a live barrier), as
//! `hopsync gpu replay` runs them.

use hopsync_cosim::machine::Config;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::Program;
use hopsync_sim::{run_rtl, SmConfig};
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Programs traced beside the committed traces: ones that livelocked instrumented (issue 13).
const ALSO: &[&str] = &["firmware/programs/sched/ws_ring_4stage.ptx"];

/// The programs of every trace file, relative to the repository root, sorted, without repeats.
fn traced_programs() -> Vec<String> {
    let dir = root().join("cosim/traces/sm90");
    let mut programs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| {
            let p = e.ok()?.path();
            let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            Some(t["program"].as_str()?.to_string())
        })
        .chain(ALSO.iter().map(|s| s.to_string()))
        .collect();
    programs.sort();
    programs.dedup();
    programs
}

/// The instrumented program runs to the end on both engines with the same outputs.
fn finishes_instrumented(path: &Path) -> Result<(), Failed> {
    let prog = Program::load(path).map_err(|d| format!("does not parse:\n{d}"))?;
    let packed = hopsync_cosim::gpu::pack::pack(&prog, None)?;
    let cfg = Config::of_program(&packed.program);
    let golden = run_golden(&packed.program, cfg.clone());
    let rtl = run_rtl(&packed.program, Config { max_steps: 5_000_000, ..cfg }, SmConfig::sm90());
    if rtl.status != "ok" || golden.status != "ok" {
        return Err(format!("instrumented: golden {}, rtl {} {:?}", golden.status, rtl.status, rtl.findings.first().map(|f| f.to_string())).into());
    }
    let differs = prog.manifest.buffers.iter().filter(|b| b.output && !prog.manifest.is_timing(&b.name)).map(|b| &b.name).find(|k| rtl.outputs.get(*k) != golden.outputs.get(*k));
    if let Some(k) = differs {
        if !prog.manifest.interleaving_dependent {
            return Err(format!("instrumented: output `{k}` differs from the golden engine's").into());
        }
    }
    println!("{} ok  instrumented, {} cycles", path.display(), rtl.cycles.unwrap_or(0));
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let programs = traced_programs();
    let count = programs.len();
    let mut trials = vec![Trial::test("traced_programs_are_listed", move || {
        if count > 100 {
            Ok(())
        } else {
            Err(format!("only {count} traced programs").into())
        }
    })];
    trials.extend(programs.into_iter().map(|p| {
        let name = format!("rtl_finishes_instrumented::{p}");
        Trial::test(name, move || finishes_instrumented(&root().join(&p)))
    }));
    libtest_mimic::run(&args, trials).exit();
}
