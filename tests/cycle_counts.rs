//! The RTL engine's timing fingerprint of every program: cycle count, status, first finding and a
//! hash of its event stream (each retire, completion and release with its cycle), for every
//! firmware program (bad ones included) and a fixed set of generated programs, compared with
//! `tests/cycle_counts.json`.
//!
//! A restructure of the engine must leave every fingerprint as it was; a deliberate timing change
//! regenerates the file (`HOPSYNC_BLESS=1 cargo nextest run --test cycle_counts`) in the same
//! commit, and its diff shows which programs moved.

use hopsync_cosim::gen::{generate, GenOptions};
use hopsync_cosim::machine::Config;
use hopsync_firmware::Program;
use hopsync_sim::engine::{Engine, Event};
use hopsync_sim::SmConfig;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn golden_path() -> PathBuf {
    root().join("tests/cycle_counts.json")
}

/// Every `.ptx` under `dir`, recursively, sorted.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "ptx") {
            out.push(p);
        }
    }
}

/// FNV-1a, stable across runs and platforms (std's SipHash keys are fixed too, but say nothing
/// about stability across Rust versions).
struct Fnv(u64);
impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// What an event says about timing: its cycle and what happened, by name and number (not by
/// the engine's type layout, which a restructure may change).
fn event_key(e: &Event) -> Option<String> {
    Some(match e {
        Event::Retire { cycle, rec } => format!("R{cycle}:{}:{}:{}:{:x}", rec.cta, rec.warp, rec.pc, rec.mask),
        Event::Complete { cycle, seq } => format!("C{cycle}:{seq}"),
        Event::TmaComplete { cycle, seq, cta, .. } => format!("T{cycle}:{seq}:{cta:?}"),
        Event::AsyncFault { cycle, seq, cta, kind } => format!("F{cycle}:{seq}:{cta:?}:{}", kind.name()),
        Event::Release { cycle, ev, .. } => format!("L{cycle}:{ev:?}"),
        // A lockstep view of a retire's parts; the retire that follows carries the timing.
        Event::MbarPart { .. } => return None,
    })
}

fn fingerprint(prog: &Program, cfg: SmConfig) -> String {
    // A program's own step budget (`// max-steps: N`, tests/bad_programs.rs).
    let max_steps = prog.source.lines().find_map(|l| l.strip_prefix("// max-steps:")).map(|n| n.trim().parse().unwrap());
    let mut e = Engine::new(prog, Config { max_steps: max_steps.unwrap_or(Config::default().max_steps), ..Config::default() }, cfg);
    e.record_events();
    let outcome = e.run();
    let r = e.report(&outcome);
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let mut n = 0u64;
    for key in e.take_events().iter().filter_map(event_key) {
        key.hash(&mut h);
        n += 1;
    }
    let finding = r.findings.first().map(|f| f.kind.name()).unwrap_or("-");
    format!("{} cycles, {} {finding}, {n} events {:016x}", r.cycles.unwrap_or(0), r.status, h.finish())
}

/// Generated programs deadlock after this many cycles without progress (as tests/rtl_gen.rs).
fn gen_sm() -> SmConfig {
    let mut c = SmConfig::sm90();
    c.run.deadlock_spin_cycles = 50_000;
    c
}

fn all_fingerprints() -> BTreeMap<String, String> {
    let mut jobs: Vec<(String, Program, SmConfig)> = Vec::new();
    let mut paths = Vec::new();
    collect(&root().join("firmware/programs"), &mut paths);
    for p in paths {
        // bad programs that do not parse, or that the memory budget refuses, have no timing
        let fits = |prog: &Program| hopsync_sim::footprint(prog, &SmConfig::sm90()).check(prog, "rtl", hopsync_cosim::budget::DEFAULT_MEM_LIMIT).is_ok();
        if let Some(prog) = Program::load(&p).ok().filter(fits) {
            let name = p.strip_prefix(root()).unwrap().display().to_string();
            jobs.push((name, prog, SmConfig::sm90()));
        }
    }
    let gens: [(&str, GenOptions, std::ops::Range<u64>); 4] = [
        ("small", GenOptions::small(), 0..160),
        ("small-ub", GenOptions::small().with_ub(true), 0..60),
        ("any", GenOptions::default(), 0..24),
        ("large", GenOptions::large(), 0..6),
    ];
    for (what, opts, seeds) in gens {
        for seed in seeds {
            let g = generate(seed, &opts);
            let prog = Program::parse(&format!("gen-{what}-{seed}.ptx"), &g.text).expect("generated programs parse");
            jobs.push((format!("gen --seed {seed} {what}"), prog, gen_sm()));
        }
    }
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out = std::sync::Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((name, prog, cfg)) = jobs.get(k) else { break };
                let f = fingerprint(prog, cfg.clone());
                out.lock().unwrap().insert(name.clone(), f);
            });
        }
    });
    out.into_inner().unwrap()
}

#[test]
fn rtl_timing_fingerprints_are_unchanged() {
    let now = all_fingerprints();
    if std::env::var_os("HOPSYNC_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&now).unwrap();
        std::fs::write(golden_path(), text + "\n").unwrap();
        return;
    }
    let text = std::fs::read_to_string(golden_path()).expect("tests/cycle_counts.json (HOPSYNC_BLESS=1 writes it)");
    let was: BTreeMap<String, String> = serde_json::from_str(&text).unwrap();
    let mut diffs = Vec::new();
    for (k, v) in &now {
        match was.get(k) {
            Some(w) if w == v => {}
            Some(w) => diffs.push(format!("{k}: was {w}, now {v}")),
            None => diffs.push(format!("{k}: new ({v})")),
        }
    }
    for k in was.keys().filter(|k| !now.contains_key(*k)) {
        diffs.push(format!("{k}: gone"));
    }
    assert!(
        diffs.is_empty(),
        "{} of {} timing fingerprints changed (a deliberate timing change: HOPSYNC_BLESS=1 cargo nextest run --test cycle_counts):\n{}",
        diffs.len(),
        now.len(),
        diffs.join("\n")
    );
}
