//! Random programs (`hopsync gen`, cosim/src/gen.rs) through the RTL engine in lockstep with the
//! golden model: legal programs finish with the golden engine's outputs and no divergence; UB
//! programs stop with their injected finding first on both engines, with no divergence before it.
//! The default run checks a few dozen small programs; `long_rtl_generated_programs` (ignored by
//! default: `scripts/test --profile long --run-ignored only`) checks hundreds of every size.

use hopsync_cosim::gen::{generate, GenOptions};
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::Program;
use hopsync_sim::{lockstep::run_cosim, SmConfig};

/// Generated deadlocks spin on mbarrier polls: name them after 50,000 cycles without progress
/// (every legitimate wait of these programs is far shorter).
fn sm() -> SmConfig {
    let mut c = SmConfig::sm90();
    c.run.deadlock_spin_cycles = 50_000;
    c
}

fn check(seed: u64, opts: &GenOptions) -> Result<(), String> {
    let g = generate(seed, opts);
    let name = format!("gen_{}{seed}.ptx", if opts.ub { "ub_" } else { "" });
    let prog = Program::parse(&name, &g.text).map_err(|d| format!("{name}: does not parse:\n{d}"))?;
    let golden = run_golden(&prog, Config::default());
    let c = run_cosim(&prog, Config::default(), sm());
    let fail = |what: String| Err(format!("{name}: {what}\n  {}", g.description));
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

fn run(seeds: std::ops::Range<u64>, opts: GenOptions) {
    let seeds: Vec<u64> = seeds.collect();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(seeds.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let errs = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&seed) = seeds.get(k) else { break };
                if let Err(e) = check(seed, &opts) {
                    errs.lock().unwrap().push(e);
                }
            });
        }
    });
    let errs = errs.into_inner().unwrap();
    assert!(errs.is_empty(), "{} of {} programs failed:\n{}", errs.len(), seeds.len(), errs.join("\n"));
}

#[test]
fn rtl_generated_small_programs_pass_cosim() {
    run(5000..5024, GenOptions::small());
}

#[test]
fn rtl_generated_small_ub_programs_give_their_finding() {
    run(5000..5024, GenOptions::small().with_ub(true));
}

#[test]
#[ignore]
fn long_rtl_generated_programs() {
    run(0..300, GenOptions::small());
    run(0..200, GenOptions::small().with_ub(true));
    run(0..100, GenOptions::default());
    run(0..60, GenOptions::default().with_ub(true));
    run(0..20, GenOptions::large());
}
