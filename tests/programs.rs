//! System test: every firmware program under `firmware/programs/` (except the deliberately broken
//! ones in `bad/`) parses, runs to completion on the golden engine with no finding, and produces its
//! manifest's expected outputs, in the deterministic schedule and under seeded random
//! interleavings 1..=8. A correct program gives the same outputs under every interleaving, so the
//! seeded runs must reproduce the deterministic outputs byte for byte unless the manifest says
//! `interleaving_dependent = true` (then only the expectations are checked). Every program outside
//! `demo/` must state at least one expectation: a program that checks nothing proves nothing.

use hopsync_cosim::machine::Config;
use hopsync_cosim::report::{run_golden, RunReport};
use hopsync_firmware::Program;
use std::path::{Path, PathBuf};
use std::time::Instant;

const SEEDS: std::ops::RangeInclusive<u64> = 1..=8;

fn programs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("firmware/programs")
}

/// Every `.ptx` under `dir`, recursively, skipping `bad/`, sorted.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "bad") {
                continue;
            }
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "ptx") {
            out.push(p);
        }
    }
}

/// Why a report is not a pass: status, failed checks, findings.
fn problems(r: &RunReport) -> Vec<String> {
    let mut v = Vec::new();
    if r.status != "ok" {
        v.push(format!("status {}{}", r.status, r.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()));
    }
    for c in r.checks.iter().filter(|c| !c.matches) {
        v.push(format!(
            "output `{}` differs at byte {} (expected {} got {})",
            c.buffer,
            c.first_difference.unwrap_or(0),
            c.expected,
            c.actual
        ));
    }
    for f in &r.findings {
        v.push(format!("{f}"));
    }
    v
}

/// Runs one program in every schedule; returns its summary line or the reasons it fails.
fn check_program(path: &Path) -> Result<String, Vec<String>> {
    let rel = path.strip_prefix(programs_dir()).unwrap_or(path).display().to_string();
    let prog = Program::load(path).map_err(|d| vec![format!("does not parse:\n{d}")])?;
    let demo = rel.starts_with("demo/");
    let mut errs = Vec::new();
    let expectations = prog.manifest.buffers.iter().filter(|b| b.expect.is_some() || b.expect_hex.is_some()).count();
    if expectations == 0 && !demo {
        errs.push("states no expected output (`expect` / `expect_hex` on an output buffer)".to_string());
    }
    let t0 = Instant::now();
    let base = run_golden(&prog, Config::default());
    errs.extend(problems(&base).into_iter().map(|p| format!("deterministic schedule: {p}")));
    let dependent = prog.manifest.interleaving_dependent;
    for s in SEEDS {
        let r = run_golden(&prog, Config { seed: Some(s), ..Default::default() });
        errs.extend(problems(&r).into_iter().map(|p| format!("seed {s}: {p}")));
        if !dependent && r.status == "ok" && base.status == "ok" {
            for (name, bytes) in &base.outputs {
                // Timing samples (%clock64 deltas) depend on the schedule by nature.
                if !prog.manifest.is_timing(name) && r.outputs.get(name) != Some(bytes) {
                    errs.push(format!(
                        "seed {s}: output `{name}` differs from the deterministic schedule's (manifest does not say interleaving_dependent)"
                    ));
                }
            }
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(format!(
        "{rel:<52} ok  {expectations} expected output(s), {} CTAs, {} warps, {} warp-instr, {} steps, {} mbarrier phases; {} seeds{}; {:.0} ms",
        base.ctas,
        base.warps,
        base.instructions,
        base.steps,
        base.phases_completed,
        SEEDS.count(),
        if dependent { " (interleaving-dependent: expectations only)" } else { " identical" },
        t0.elapsed().as_secs_f64() * 1e3
    ))
}

#[test]
fn every_program_runs_and_meets_its_expectations() {
    let mut paths = Vec::new();
    collect(&programs_dir(), &mut paths);
    assert!(!paths.is_empty(), "no programs under {}", programs_dir().display());
    assert!(
        paths.iter().any(|p| p.components().any(|c| c.as_os_str() == "seeds")),
        "no seed programs found under firmware/programs/seeds"
    );
    // Programs are independent: check them on all cores, report in path order.
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(paths.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<String, Vec<String>>>>> =
        paths.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(p) = paths.get(k) else { break };
                *results[k].lock().unwrap() = Some(check_program(p));
            });
        }
    });
    let mut failures = Vec::new();
    for (p, r) in paths.iter().zip(results) {
        match r.into_inner().unwrap().expect("every program was checked") {
            Ok(line) => println!("{line}"),
            Err(errs) => {
                let rel = p.strip_prefix(programs_dir()).unwrap_or(p).display().to_string();
                println!("{rel:<52} FAIL");
                failures.push(format!("{rel}:\n    {}", errs.join("\n    ")));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} programs failed:\n{}", failures.len(), paths.len(), failures.join("\n"));
}
