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
//! `long_rtl_generated_programs_00` .. `_99` (ignored by default: `scripts/test --profile long
//! --run-ignored only long_rtl_generated_programs`) cosim 1e5 programs, one 1000-program chunk
//! each (the same mix, plus large programs: 16-32 warps, 8-16 CTAs); `HOPSYNC_GEN_SEED_BLOCK=k`
//! moves them to the k-th block of 1e5 seeds. Separate tests let nextest shard the campaign:
//! `--partition count:i/N` on machine i of N, over blocks 0..100 for 1e7 programs (README).
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

/// The seed block of the long run (`HOPSYNC_GEN_SEED_BLOCK=k`, default 0): block k's chunks take
/// the seeds after blocks 0..k, so blocks 0..100 are 10^7 distinct programs.
fn seed_block() -> u64 {
    std::env::var("HOPSYNC_GEN_SEED_BLOCK").map_or(0, |s| s.parse().unwrap_or_else(|_| panic!("HOPSYNC_GEN_SEED_BLOCK={s}: expected a number")))
}

/// Cosims chunk `c` of the current seed block.
fn long_chunk(c: u64) {
    let t = Instant::now();
    let errs = run_jobs(&chunk(seed_block() * CHUNKS + c));
    eprintln!("block {} chunk {c}: {} failures in {:.0} s", seed_block(), errs.len(), t.elapsed().as_secs_f64());
    assert!(errs.is_empty(), "{} of {CHUNK} programs failed:\n{}", errs.len(), errs.join("\n"));
}

/// One test per chunk, so that nextest shards the long run over machines by itself
/// (`--partition count:i/N`; README "Long randomized campaigns").
macro_rules! long_chunks {
    ($($name:ident = $c:expr),* $(,)?) => {
        $(
            #[test]
            #[ignore]
            fn $name() {
                long_chunk($c);
            }
        )*
    };
}

long_chunks!(
    long_rtl_generated_programs_00 = 0, long_rtl_generated_programs_01 = 1, long_rtl_generated_programs_02 = 2, long_rtl_generated_programs_03 = 3, long_rtl_generated_programs_04 = 4,
    long_rtl_generated_programs_05 = 5, long_rtl_generated_programs_06 = 6, long_rtl_generated_programs_07 = 7, long_rtl_generated_programs_08 = 8, long_rtl_generated_programs_09 = 9,
    long_rtl_generated_programs_10 = 10, long_rtl_generated_programs_11 = 11, long_rtl_generated_programs_12 = 12, long_rtl_generated_programs_13 = 13, long_rtl_generated_programs_14 = 14,
    long_rtl_generated_programs_15 = 15, long_rtl_generated_programs_16 = 16, long_rtl_generated_programs_17 = 17, long_rtl_generated_programs_18 = 18, long_rtl_generated_programs_19 = 19,
    long_rtl_generated_programs_20 = 20, long_rtl_generated_programs_21 = 21, long_rtl_generated_programs_22 = 22, long_rtl_generated_programs_23 = 23, long_rtl_generated_programs_24 = 24,
    long_rtl_generated_programs_25 = 25, long_rtl_generated_programs_26 = 26, long_rtl_generated_programs_27 = 27, long_rtl_generated_programs_28 = 28, long_rtl_generated_programs_29 = 29,
    long_rtl_generated_programs_30 = 30, long_rtl_generated_programs_31 = 31, long_rtl_generated_programs_32 = 32, long_rtl_generated_programs_33 = 33, long_rtl_generated_programs_34 = 34,
    long_rtl_generated_programs_35 = 35, long_rtl_generated_programs_36 = 36, long_rtl_generated_programs_37 = 37, long_rtl_generated_programs_38 = 38, long_rtl_generated_programs_39 = 39,
    long_rtl_generated_programs_40 = 40, long_rtl_generated_programs_41 = 41, long_rtl_generated_programs_42 = 42, long_rtl_generated_programs_43 = 43, long_rtl_generated_programs_44 = 44,
    long_rtl_generated_programs_45 = 45, long_rtl_generated_programs_46 = 46, long_rtl_generated_programs_47 = 47, long_rtl_generated_programs_48 = 48, long_rtl_generated_programs_49 = 49,
    long_rtl_generated_programs_50 = 50, long_rtl_generated_programs_51 = 51, long_rtl_generated_programs_52 = 52, long_rtl_generated_programs_53 = 53, long_rtl_generated_programs_54 = 54,
    long_rtl_generated_programs_55 = 55, long_rtl_generated_programs_56 = 56, long_rtl_generated_programs_57 = 57, long_rtl_generated_programs_58 = 58, long_rtl_generated_programs_59 = 59,
    long_rtl_generated_programs_60 = 60, long_rtl_generated_programs_61 = 61, long_rtl_generated_programs_62 = 62, long_rtl_generated_programs_63 = 63, long_rtl_generated_programs_64 = 64,
    long_rtl_generated_programs_65 = 65, long_rtl_generated_programs_66 = 66, long_rtl_generated_programs_67 = 67, long_rtl_generated_programs_68 = 68, long_rtl_generated_programs_69 = 69,
    long_rtl_generated_programs_70 = 70, long_rtl_generated_programs_71 = 71, long_rtl_generated_programs_72 = 72, long_rtl_generated_programs_73 = 73, long_rtl_generated_programs_74 = 74,
    long_rtl_generated_programs_75 = 75, long_rtl_generated_programs_76 = 76, long_rtl_generated_programs_77 = 77, long_rtl_generated_programs_78 = 78, long_rtl_generated_programs_79 = 79,
    long_rtl_generated_programs_80 = 80, long_rtl_generated_programs_81 = 81, long_rtl_generated_programs_82 = 82, long_rtl_generated_programs_83 = 83, long_rtl_generated_programs_84 = 84,
    long_rtl_generated_programs_85 = 85, long_rtl_generated_programs_86 = 86, long_rtl_generated_programs_87 = 87, long_rtl_generated_programs_88 = 88, long_rtl_generated_programs_89 = 89,
    long_rtl_generated_programs_90 = 90, long_rtl_generated_programs_91 = 91, long_rtl_generated_programs_92 = 92, long_rtl_generated_programs_93 = 93, long_rtl_generated_programs_94 = 94,
    long_rtl_generated_programs_95 = 95, long_rtl_generated_programs_96 = 96, long_rtl_generated_programs_97 = 97, long_rtl_generated_programs_98 = 98, long_rtl_generated_programs_99 = 99,
);
