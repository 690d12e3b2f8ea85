//! The field's asynchronous-synchronization bugs (issue 17 section 2): every `X.cu` under
//! `firmware/programs/bugs/` reproduces one publicly reported bug class and declares what it must
//! produce, in plain comment lines:
//!
//! ```text
//! // expect-finding: <FindingKind the golden run must stop with first>
//! ... the source line the finding must name ends with  // expect-line
//! ```
//!
//! A race or misuse finding must be located at that `.cu` line on the default schedule and on
//! seeds 1-3; a `Deadlock` (no instruction location) must name that line in its wait-for graph.
//! `X_fixed.cu` beside it is the fix: it runs clean (no finding, expected outputs) on the golden
//! engine and on the RTL engine in lockstep with it (0 divergences).

use hopsync_cosim::finding::{Finding, FindingKind};
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::Program;
use hopsync_sim::{lockstep::run_cosim, SmConfig};
use std::path::PathBuf;

fn bugs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("firmware/programs/bugs")
}

/// Every bug program (not `_fixed`), sorted, with its expected kind and marked line.
fn bugs() -> Vec<(PathBuf, FindingKind, u32)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(bugs_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu") && !p.to_string_lossy().ends_with("_fixed.cu"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let src = std::fs::read_to_string(&p).unwrap();
            let kinds: Vec<&str> = src.lines().filter_map(|l| l.trim().strip_prefix("// expect-finding:")).map(str::trim).collect();
            assert_eq!(kinds.len(), 1, "{}: needs exactly one `// expect-finding:` line", p.display());
            let kind = FindingKind::from_name(kinds[0]).unwrap_or_else(|| panic!("{}: `{}` is not a FindingKind", p.display(), kinds[0]));
            let lines: Vec<u32> = src.lines().enumerate().filter(|(_, l)| l.trim_end().ends_with("// expect-line")).map(|(i, _)| i as u32 + 1).collect();
            assert_eq!(lines.len(), 1, "{}: needs exactly one line ending in `// expect-line`", p.display());
            (p, kind, lines[0])
        })
        .collect()
}

fn load(p: &PathBuf) -> Program {
    Program::load(p).unwrap_or_else(|d| panic!("{}: {d}", p.display()))
}

/// What is wrong with a bug program's first finding on one schedule, if anything.
fn wrong(p: &PathBuf, kind: FindingKind, line: u32, f: Option<&Finding>) -> Option<String> {
    let name = p.display();
    let Some(f) = f else { return Some(format!("{name}: no finding, expected {}", kind.name())) };
    if f.kind != kind {
        return Some(format!("{name}: first finding {}, expected {}:\n{f}", f.kind.name(), kind.name()));
    }
    let file = p.to_string_lossy();
    if kind == FindingKind::Deadlock {
        // The wait-for graph: the blocked warp at the marked line, what it waits on and that
        // object's state, and who could still arrive.
        let at = format!("{file}:{line},");
        let ok = f.message.lines().any(|l| l.contains(&at) && l.contains("pending") && l.contains("phase") && l.contains(" <- "));
        return (!ok).then(|| format!("{name}: the deadlock's wait-for graph does not show a warp blocked at {file}:{line} with its mbarrier's state and who could arrive:\n{f}"));
    }
    if !f.location.file.ends_with(&*file) || f.location.line != line {
        return Some(format!("{name}: finding at {}:{}, expected line {line}:\n{f}", f.location.file, f.location.line));
    }
    None
}

#[test]
fn every_bug_produces_its_finding_at_its_line() {
    let all = bugs();
    assert!(all.len() >= 8, "only {} bug programs", all.len());
    let mut failures = Vec::new();
    for (p, kind, line) in &all {
        let prog = load(p);
        let r = run_golden(&prog, Config::default());
        failures.extend(wrong(p, *kind, *line, r.findings.first()));
        // The same finding, at the same line, whatever the interleaving (deadlocks spin for
        // millions of steps before they are named: the default schedule suffices).
        if *kind != FindingKind::Deadlock {
            for seed in 1..=3 {
                let r = run_golden(&prog, Config { seed: Some(seed), ..Config::default() });
                failures.extend(wrong(p, *kind, *line, r.findings.first()).map(|e| format!("seed {seed}: {e}")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_fix_runs_clean_on_golden_and_rtl() {
    let mut failures = Vec::new();
    for (p, _, _) in bugs() {
        let fixed = PathBuf::from(p.to_string_lossy().replace(".cu", "_fixed.cu"));
        assert!(fixed.is_file(), "{} has no fixed version {}", p.display(), fixed.display());
        let prog = load(&fixed);
        let g = run_golden(&prog, Config::default());
        if g.status != "ok" || !g.findings.is_empty() || g.checks.iter().any(|c| !c.matches) || g.checks.is_empty() {
            failures.push(format!("{}: golden engine (must be ok with checked outputs):\n{}", fixed.display(), g.summary()));
            continue;
        }
        let c = run_cosim(&prog, Config::default(), SmConfig::sm90());
        if !c.clean() || c.run.outputs != g.outputs {
            failures.push(format!("{}: cosim not clean: {} divergences\n{}", fixed.display(), c.divergences.len(), c.run.summary()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The stage-reuse race of issue 17 point 2 names both accesses: the read of the stage and the
/// cp.async that refills it, each with its `.cu` line.
#[test]
fn stage_reuse_race_names_both_accesses() {
    let p = bugs_dir().join("stage_reuse_cp_async.cu");
    let r = run_golden(&load(&p), Config::default());
    let f = r.findings.first().expect("a finding");
    let src = std::fs::read_to_string(&p).unwrap();
    let cp_line = src.lines().position(|l| l.contains("refill stage s")).unwrap() + 1;
    assert!(f.message.contains(&format!("stage_reuse_cp_async.cu:{cp_line},")) && f.message.contains("cp.async"), "{f}");
    assert!(f.message.contains("the read at") && f.location.ptx.contains(".ptx:"), "{f}");
}

/// DeepEP 642's reader (`tma_load_read_before_wait.cu`) meant to consume the copy: on every
/// schedule its finding, whichever check names it (`TmaReadBeforeComplete` while the copy is in
/// flight, `SharedMemoryRace` when the read ran before the issue or after the landing), is at
/// the read and tells the reader to wait for the copy, never the issuer to wait for readers.
#[test]
fn read_before_wait_is_told_to_wait_on_every_seed() {
    let p = bugs_dir().join("tma_load_read_before_wait.cu");
    let prog = load(&p);
    let line = bugs().into_iter().find(|(q, _, _)| *q == p).unwrap().2;
    let mut kinds = std::collections::BTreeSet::new();
    for seed in [None, Some(1), Some(2), Some(3), Some(4), Some(5), Some(6), Some(7), Some(8)] {
        let r = run_golden(&prog, Config { seed, ..Config::default() });
        let f = r.findings.first().unwrap_or_else(|| panic!("seed {seed:?}: no finding"));
        kinds.insert(f.kind.name());
        assert_eq!(f.location.line, line, "seed {seed:?}: {f}");
        assert!(!f.message.contains("reuses the buffer"), "seed {seed:?}: the reader is the one that must wait: {f}");
        if f.kind == FindingKind::SharedMemoryRace {
            assert!(f.message.contains("must wait for the bulk/TMA copy") || f.message.contains("does not acquire the bulk/TMA copy's completion"), "seed {seed:?}: {f}");
        }
    }
    // Both schedules occur among these seeds (the read before the issue: seed 5).
    assert!(kinds.contains("SharedMemoryRace") && kinds.contains("TmaReadBeforeComplete"), "{kinds:?}");
}

/// The intra-warp reduction without `__syncwarp` names the two lanes of one warp.
#[test]
fn warp_reduction_race_names_two_lanes() {
    let p = bugs_dir().join("warp_reduce_no_syncwarp.cu");
    let r = run_golden(&load(&p), Config::default());
    let f = r.findings.first().expect("a finding");
    assert!(f.message.contains("of warp 0 of cta 0 are independent threads") && f.message.contains("__syncwarp"), "{f}");
}

/// A race is a finding of a lockstep run, not a divergence (only the golden side keeps
/// happens-before clocks): `hopsync cosim` names it as `hopsync run` does, with the run's
/// exit status 1, compares every instruction to the end (0 divergences, the RTL engine's
/// outputs equal to the golden model's run on under `--ub warn`), and is not a clean run. Two
/// races: between two lanes at an instruction, and a cp.async landing on a stage still read.
#[test]
fn cosim_reports_a_race_as_a_finding_not_a_divergence() {
    use hopsync_cosim::machine::UbMode;
    for (name, kind) in [("warp_reduce_no_syncwarp.cu", "SharedMemoryRace"), ("stage_reuse_cp_async.cu", "SharedMemoryRace")] {
        let p = bugs_dir().join(name);
        let prog = load(&p);
        let c = run_cosim(&prog, Config::default(), SmConfig::sm90());
        let text = format!("{}{}", c.run.summary(), c.summary());
        assert!(c.divergences.is_empty(), "{name}: {text}");
        assert_eq!(c.run.findings.first().map(|f| f.kind.name()), Some(kind), "{name}: {text}");
        assert_eq!(c.run.status, "fault", "{name}: {text}");
        assert!(!c.clean(), "{name}");
        let warn = run_golden(&prog, Config { ub: UbMode::Warn, ..Config::default() });
        assert_eq!(c.run.outputs, warn.outputs, "{name}: every instruction ran and was compared: {text}");
        assert!(c.compared >= warn.instructions - 1, "{name}: compared {} of {}", c.compared, warn.instructions);

        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hopsync")).args(["cosim", p.to_str().unwrap()]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{name}: {stdout}");
        assert!(stdout.contains(&format!("finding {kind}: ")) && stdout.contains(", 0 divergences") && !stdout.contains("divergence at"), "{name}: {stdout}");
        assert!(!stdout.contains("retired without a finding") && !stdout.contains("completed without a finding"), "{name}: {stdout}");
    }
}
