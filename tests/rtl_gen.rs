//! Random programs (`hopsync gen`, cosim/src/gen.rs) through the RTL engine in lockstep with the
//! golden model: legal programs finish with the golden engine's outputs and no divergence; UB
//! programs stop with their injected finding first on both engines, with no divergence before it.
//!
//! The default run cosims 1000 programs (issue 3 §5), mostly small: 700 small legal, 250 small UB,
//! 40 of every size (1-32 warps, 1-16 CTAs) legal and 10 UB. Measured in the test profile on the
//! 2-core CI machine class: a small legal program takes about 35 ms of CPU through `run_cosim` plus
//! the golden run, a small UB program about 100 ms (the deadlocking ones spin 50,000 cycles before
//! the deadlock is named), so the whole default run is about a minute of test time on 2 cores.
//!
//! `long_rtl_generated_programs` (ignored by default: `scripts/test --profile long --run-ignored
//! only`) cosims 1e5 programs in 100 chunks of 1000 (the same mix, plus large programs: 16-32
//! warps, 8-16 CTAs); `HOPSYNC_RTL_GEN_CHUNKS=a..b` runs chunks a..b only (one chunk is a
//! 1000-program slice).
//!
//! Fixed races the long run found: a try_wait whose suspend-time limit expired while the
//! complete_tx that completes its phase was in the unit's pipeline (gen seeds 1001623 --small,
//! 1026960, 1020997 --large, ...): the MbarrierUnit now wakes a timed-out waiter as completed when
//! the completion lands before it leaves, so its answer is what the word shows where the engine
//! retires it (hdl/src/mbarrier_unit/mod.rs
//! `try_wait_timeout_racing_a_completion_answers_what_the_word_shows`); and a named-barrier count
//! above the CTA (ub seed 1074980), which both engines now name `BarrierCountAboveCta` at issue.
//!
//! A failure names the seed and options: `hopsync gen --seed N [--ub] [--small|--large] --out
//! x.ptx && hopsync cosim x.ptx` reproduces it.

use hopsync_cosim::gen::{generate, GenOptions};
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::Program;
use hopsync_sim::{lockstep::run_cosim, SmConfig};
use std::time::Instant;

/// Generated deadlocks spin on mbarrier polls: name them after 50,000 cycles without progress
/// (every legitimate wait of these programs is far shorter).
fn sm() -> SmConfig {
    let mut c = SmConfig::sm90();
    c.run.deadlock_spin_cycles = 50_000;
    c
}

/// A program size class and its `hopsync gen` flag.
#[derive(Debug, Clone, Copy)]
enum Size {
    Small,
    Any,
    Large,
}

impl Size {
    fn options(self, ub: bool) -> GenOptions {
        match self {
            Size::Small => GenOptions::small(),
            Size::Any => GenOptions::default(),
            Size::Large => GenOptions::large(),
        }
        .with_ub(ub)
    }
    fn flag(self) -> &'static str {
        match self {
            Size::Small => " --small",
            Size::Any => "",
            Size::Large => " --large",
        }
    }
}

fn check(seed: u64, size: Size, ub: bool) -> Result<(), String> {
    let opts = size.options(ub);
    let g = generate(seed, &opts);
    let name = format!("gen_{}{seed}.ptx", if ub { "ub_" } else { "" });
    let repro = format!("hopsync gen --seed {seed}{}{} --out {name} && hopsync cosim {name}", if ub { " --ub" } else { "" }, size.flag());
    let prog = Program::parse(&name, &g.text).map_err(|d| format!("{name}: does not parse:\n{d}\n  reproduce: {repro}"))?;
    let golden = run_golden(&prog, Config::default());
    let c = run_cosim(&prog, Config::default(), sm());
    let fail = |what: String| Err(format!("{name}: {what}\n  {}\n  reproduce: {repro}", g.description));
    if let Some(d) = c.divergences.first() {
        return fail(format!("{d}"));
    }
    match g.expect_finding {
        None => {
            if c.run.status != "ok" || golden.status != "ok" {
                return fail(format!("status rtl {} {:?} {:?}, golden {}", c.run.status, c.run.error, c.run.findings.first().map(|f| f.to_string()), golden.status));
            }
            if c.run.outputs != golden.outputs {
                return fail("outputs differ from the golden engine's".into());
            }
        }
        Some(k) => {
            let (gk, rk) = (golden.findings.first().map(|f| f.kind), c.run.findings.first().map(|f| f.kind));
            if gk != Some(k) || rk != Some(k) {
                return fail(format!("expected {}: golden {gk:?}, rtl {rk:?} {:?}", k.name(), c.run.error));
            }
        }
    }
    Ok(())
}

/// Cosims every (seed, size, ub) job on all cores; returns the failures.
fn run_jobs(jobs: &[(u64, Size, bool)]) -> Vec<String> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(jobs.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let errs = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(seed, size, ub)) = jobs.get(k) else { break };
                if let Err(e) = check(seed, size, ub) {
                    errs.lock().unwrap().push(e);
                }
            });
        }
    });
    errs.into_inner().unwrap()
}

fn run(what: &str, jobs: Vec<(u64, Size, bool)>) {
    let t = Instant::now();
    let errs = run_jobs(&jobs);
    eprintln!("{what}: {} programs in {:.1} s", jobs.len(), t.elapsed().as_secs_f64());
    assert!(errs.is_empty(), "{} of {} programs failed:\n{}", errs.len(), jobs.len(), errs.join("\n"));
}

fn seeds(r: std::ops::Range<u64>, size: Size, ub: bool) -> Vec<(u64, Size, bool)> {
    r.map(|s| (s, size, ub)).collect()
}

#[test]
fn rtl_generated_small_programs_pass_cosim() {
    run("small legal", seeds(5000..5700, Size::Small, false));
}

#[test]
fn rtl_generated_small_ub_programs_give_their_finding() {
    run("small UB", seeds(5000..5250, Size::Small, true));
}

#[test]
fn rtl_generated_programs_of_every_size_pass_cosim() {
    let mut jobs = seeds(5000..5040, Size::Any, false);
    jobs.extend(seeds(5000..5010, Size::Any, true));
    run("every size", jobs);
}

/// Programs per chunk of the long run, and chunks (1e5 programs).
const CHUNK: u64 = 1000;
const CHUNKS: u64 = 100;

/// Chunk `c` of the long run: seeds `c*1000..`, the default run's mix (700 small, 200 small UB,
/// 70 of every size, 25 of every size with UB) plus 5 large. Seeds start at 1,000,000, clear of
/// the default run's.
fn chunk(c: u64) -> Vec<(u64, Size, bool)> {
    let base = 1_000_000 + c * CHUNK;
    let mut jobs = Vec::new();
    let mut add = |n: u64, size: Size, ub: bool, off: &mut u64| {
        jobs.extend(seeds(base + *off..base + *off + n, size, ub));
        *off += n;
    };
    let mut off = 0;
    add(700, Size::Small, false, &mut off);
    add(200, Size::Small, true, &mut off);
    add(70, Size::Any, false, &mut off);
    add(25, Size::Any, true, &mut off);
    add(5, Size::Large, false, &mut off);
    assert_eq!(off, CHUNK);
    jobs
}

#[test]
#[ignore]
fn long_rtl_generated_programs() {
    let range = match std::env::var("HOPSYNC_RTL_GEN_CHUNKS") {
        Ok(s) => {
            let (a, b) = s.split_once("..").unwrap_or_else(|| panic!("HOPSYNC_RTL_GEN_CHUNKS={s}: expected a..b"));
            a.parse::<u64>().unwrap()..b.parse::<u64>().unwrap().min(CHUNKS)
        }
        Err(_) => 0..CHUNKS,
    };
    let mut errs = Vec::new();
    let t = Instant::now();
    for c in range.clone() {
        let e = run_jobs(&chunk(c));
        eprintln!("chunk {c}: {} failures, {:.0} s so far", e.len(), t.elapsed().as_secs_f64());
        errs.extend(e);
    }
    let n = (range.end - range.start) * CHUNK;
    assert!(errs.is_empty(), "{} of {n} programs failed:\n{}", errs.len(), errs.join("\n"));
}
