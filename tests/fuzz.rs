//! Fuzz targets (proptest; stable Rust, so no `cargo fuzz`): the parser, the launch manifest and
//! the tensor-map decoder take mutated and random input and must answer with a value or a
//! located error, never a panic, and in time proportional to the input. Programs that load and
//! fit a small memory budget also run on the golden engine and on the RTL engine in lockstep
//! with it, under a small step budget, which must end in a report (status ok, fault or error),
//! never a panic.
//!
//! The default profile runs a few hundred cases per target; `long_*` (profile `long`:
//! `cargo nextest run --profile long --run-ignored only long_fuzz`) runs 100 times more.
//! `PROPTEST_CASES=N` overrides both; a failure prints the input that broke it (shrunk).

use hopsync_cosim::budget::Footprint;
use hopsync_cosim::machine::Config;
use hopsync_cosim::race::RaceMode;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::manifest::Manifest;
use hopsync_firmware::tensormap::{TensorMap, TENSOR_MAP_BYTES};
use hopsync_firmware::Program;
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestRunner};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Cases per target in the default profile.
const SHORT: u32 = 300;
/// Cases per target in the long profile.
const LONG: u32 = 30_000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every program of the repository, as text (the mutation corpus): the PTX programs, and the
/// CUDA C++ clients as nvcc's PTX under their manifest (when nvcc or hopsync's PTX cache has
/// them). `HOPSYNC_FUZZ_ONLY=a,b` keeps the programs whose path contains one of the words (a
/// campaign over some programs).
fn corpus() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for d in ["seeds", "tma", "nvcc", "demo", "gen", "calibration", "calibration/tma", "calls", "sched", "bench", "bad"] {
        let Ok(rd) = std::fs::read_dir(root().join("firmware/programs").join(d)) else { continue };
        let mut files: Vec<PathBuf> = rd.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "ptx")).collect();
        files.sort();
        // Programs that fail to load already teach the mutator nothing new.
        v.extend(files.into_iter().map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap())).filter(|(_, s)| !s.contains("// expect-error:")));
    }
    assert!(v.len() > 100, "the corpus is the repository's programs");
    let clients = root().join("firmware/programs/clients");
    let mut cus: Vec<PathBuf> = std::fs::read_dir(&clients).map(|rd| rd.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "cu")).collect()).unwrap_or_default();
    cus.sort();
    for cu in cus {
        let Ok(p) = Program::load(&cu) else { continue };
        let manifest: String = std::fs::read_to_string(&cu).unwrap().lines().filter(|l| l.trim_start().starts_with("//!")).map(|l| format!("{l}\n")).collect();
        v.push((cu.with_extension("ptx").display().to_string(), manifest + &p.source));
    }
    if let Ok(only) = std::env::var("HOPSYNC_FUZZ_ONLY") {
        v.retain(|(n, _)| only.split(',').any(|w| n.contains(w)));
    }
    v
}

/// Bytes and words PTX and TOML give meaning to, and values at the edges of every limit.
const SPICE: &[&str] = &[
    ";", ",", "{", "}", "[", "]", "(", ")", "<", ">", "@", "!", "|", ":", ".", "%", "_", "-", "+", "=", "\"", "'", "/", "*", "#", "\n", "//!",
    "/*", "*/", "0", "-1", "1", "8", "16", "1024", "65536", "65537", "4294967296", "-2147483648", "9223372036854775807", "18446744073709551615", "0x",
    "0f7fc00000", "1e308", "nan", "inf", ".reg", ".shared", ".local", ".global", ".const", ".param", ".entry", ".b64", ".pred", ".align", ".extern",
    "%r", "%r<65536>", "mbarrier.init.shared::cta.b64", "bra", "@%p1", "[[buffer]]", "[[param]]", "[[tensormap]]", "[launch]", "grid", "block",
    "cluster", "dynamic_smem", "bytes", "[1, 1, 1]", "[4096, 1, 1]", "[1024, 1, 1]", "[16, 1, 1]", "232448", "49153", "524289",
    ".func", ".visible .func (.param .b32 r) f(.param .b32 a)", "call.uni", "call", "(", "ret;", "= {", "{{{{", "generic(", ".loc 1 2 3",
    "$L__BB0_1:", "$L__BB0_1", "vprintf", "malloc", "free", "__assertfail", "kernel", ".reqntid", ".maxnreg", ".callprototype",
];

/// One edit of a source text.
#[derive(Debug, Clone)]
enum Edit {
    /// Overwrite the byte at (a fraction of the length) with a byte.
    Byte(f64, u8),
    /// Delete `n` bytes at.
    Delete(f64, usize),
    /// Insert a spice word at.
    Insert(f64, usize),
    /// Copy `n` bytes from one place to another (duplicates lines, braces, directives).
    Copy(f64, usize, f64),
    /// Repeat `n` bytes at `k` times (deep nesting, long lines, many declarations).
    Repeat(f64, usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = 0.0..1.0f64;
    prop_oneof![
        (at.clone(), any::<u8>()).prop_map(|(a, b)| Edit::Byte(a, b)),
        (at.clone(), 1..40usize).prop_map(|(a, n)| Edit::Delete(a, n)),
        (at.clone(), 0..SPICE.len()).prop_map(|(a, k)| Edit::Insert(a, k)),
        (at.clone(), 1..200usize, at.clone()).prop_map(|(a, n, b)| Edit::Copy(a, n, b)),
        (at, 1..8usize, 2..3000usize).prop_map(|(a, n, k)| Edit::Repeat(a, n, k)),
    ]
}

/// Applies `edits` to `src` (bytes; the result is read as lossy UTF-8, as a file would be).
fn mutate(src: &str, edits: &[Edit]) -> String {
    let mut b = src.as_bytes().to_vec();
    let pos = |b: &Vec<u8>, f: f64| ((b.len() as f64 * f) as usize).min(b.len());
    for e in edits {
        match *e {
            Edit::Byte(a, x) => {
                let i = pos(&b, a);
                if i < b.len() {
                    b[i] = x;
                }
            }
            Edit::Delete(a, n) => {
                let i = pos(&b, a);
                b.drain(i..(i + n).min(b.len()));
            }
            Edit::Insert(a, k) => {
                let i = pos(&b, a);
                b.splice(i..i, SPICE[k].bytes());
            }
            Edit::Copy(a, n, to) => {
                let i = pos(&b, a);
                let piece: Vec<u8> = b[i..(i + n).min(b.len())].to_vec();
                let j = pos(&b, to);
                b.splice(j..j, piece);
            }
            Edit::Repeat(a, n, k) => {
                let i = pos(&b, a);
                let piece: Vec<u8> = b[i..(i + n).min(b.len())].to_vec();
                let rep: Vec<u8> = piece.iter().copied().cycle().take(piece.len() * k).collect();
                b.splice(i..i, rep);
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// A parse must take at most this long per KiB of input (plus a floor): linear time, with a
/// wide margin for a loaded 2-core machine and the test profile.
fn time_allowed(len: usize) -> Duration {
    Duration::from_millis(2000 + 20 * (len as u64 / 1024))
}

/// Mutants that loaded, and that ran on both engines (printed at the end of a campaign).
static TRIED: AtomicUsize = AtomicUsize::new(0);
static LOADED: AtomicUsize = AtomicUsize::new(0);
static RAN: AtomicUsize = AtomicUsize::new(0);

/// Loads a mutated program and, when it loads and fits 256 MiB, runs it briefly on the golden
/// engine and in cosim (half of them with `--race global`). Any panic fails the case (proptest catches it and shrinks the edits).
fn load_and_run(name: &str, text: &str) -> Result<(), TestCaseError> {
    TRIED.fetch_add(1, Relaxed);
    let t = Instant::now();
    let parsed = Program::parse(name, text);
    let took = t.elapsed();
    prop_assert!(took <= time_allowed(text.len()), "parsing {} bytes took {took:?}", text.len());
    match parsed {
        Err(d) => {
            let shown = d.to_string();
            prop_assert!(shown.starts_with("error: ") && shown.contains(&format!("--> {name}:")), "an error without its location:\n{shown}");
        }
        Ok(p) => {
            LOADED.fetch_add(1, Relaxed);
            // Half the inputs (by length) run the race detector over global memory too.
            let race = if text.len() % 2 == 0 { RaceMode::Global } else { RaceMode::Shared };
            let cfg = Config { max_steps: 20_000, spin_limit: 2_000, race, ..Config::default() };
            if Footprint::golden_with_race(&p, race).check(&p, "golden", 256 << 20).is_ok() {
                let r = run_golden(&p, cfg.clone());
                prop_assert!(["ok", "fault", "error"].contains(&r.status.as_str()), "status {}", r.status);
            }
            // The RTL engine (the RTL units, cycle by cycle) in lockstep with the golden model.
            let sm = hopsync_sim::SmConfig::sm90();
            if hopsync_sim::lockstep::footprint(&p, &sm, race).check(&p, "cosim", 256 << 20).is_ok() {
                RAN.fetch_add(1, Relaxed);
                let r = hopsync_sim::lockstep::run_cosim(&p, cfg, sm);
                prop_assert!(["ok", "fault", "error"].contains(&r.run.status.as_str()), "status {}", r.run.status);
            }
        }
    }
    Ok(())
}

fn runner(cases: u32) -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(cases);
    // Shrinking replays many mutations of large programs; a few hundred steps find the edit.
    TestRunner::new(PtConfig { cases, max_shrink_iters: 300, failure_persistence: None, ..PtConfig::default() })
}

fn fuzz_programs(cases: u32) {
    let corpus = corpus();
    let strategy = (0..corpus.len(), prop::collection::vec(edit(), 1..4));
    runner(cases)
        .run(&strategy, |(k, edits)| {
            let (name, src) = &corpus[k];
            load_and_run(name, &mutate(src, &edits))
        })
        .unwrap();
    eprintln!("{} mutants: {} loaded, {} ran on the golden engine and in cosim", TRIED.load(Relaxed), LOADED.load(Relaxed), RAN.load(Relaxed));
}

/// Manifest lines only: the TOML parse, the field checks, the tensor-map encoder's rules.
fn fuzz_manifests(cases: u32) {
    let corpus: Vec<(String, String)> = corpus().into_iter().filter(|(_, s)| s.contains("[[tensormap]]") || s.contains("[[buffer]]")).collect();
    let strategy = (0..corpus.len(), prop::collection::vec(edit(), 1..6));
    runner(cases)
        .run(&strategy, |(k, edits)| {
            let (_, src) = &corpus[k];
            let manifest: String = src.lines().filter(|l| l.trim_start().starts_with("//!")).map(|l| format!("{l}\n")).collect();
            let text = mutate(&manifest, &edits);
            let t = Instant::now();
            let _ = Manifest::from_source(&text);
            prop_assert!(t.elapsed() <= time_allowed(text.len()));
            Ok(())
        })
        .unwrap();
}

/// Arbitrary 128-byte images, and valid images with a few bits flipped: decode answers a map
/// or the rule it breaks; a map it returns encodes back to an image that decodes to it.
fn fuzz_tensormap_images(cases: u32) {
    let valid: Vec<[u8; TENSOR_MAP_BYTES]> = corpus()
        .iter()
        .filter_map(|(n, s)| Program::parse(n, s).ok())
        .flat_map(|p| p.manifest.tensormaps.iter().map(|t| p.manifest.tensormap_image(&t.name)).collect::<Vec<_>>())
        .flatten()
        .collect();
    assert!(!valid.is_empty(), "the corpus has tensor maps");
    let image = prop_oneof![
        prop::collection::vec(any::<u8>(), TENSOR_MAP_BYTES),
        (0..valid.len(), prop::collection::vec(0..TENSOR_MAP_BYTES * 8, 1..8)).prop_map(move |(k, flips)| {
            let mut img = valid[k].to_vec();
            for bit in flips {
                img[bit / 8] ^= 1 << (bit % 8);
            }
            img
        }),
    ];
    runner(cases)
        .run(&image, |img| {
            let img: [u8; TENSOR_MAP_BYTES] = img.try_into().unwrap();
            if let Ok(m) = TensorMap::decode(&img) {
                let again = TensorMap::decode(&m.encode());
                prop_assert!(again.as_ref().is_ok_and(|a| a.spec() == m.spec()), "decode(encode(decode(x))) differs: {again:?}");
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_programs_short() {
    fuzz_programs(SHORT);
}

#[test]
fn fuzz_manifests_short() {
    fuzz_manifests(SHORT);
}

#[test]
fn fuzz_tensormap_images_short() {
    fuzz_tensormap_images(SHORT * 10);
}

#[test]
#[ignore]
fn long_fuzz_programs() {
    fuzz_programs(LONG);
}

#[test]
#[ignore]
fn long_fuzz_manifests() {
    fuzz_manifests(LONG);
}

#[test]
#[ignore]
fn long_fuzz_tensormap_images() {
    fuzz_tensormap_images(LONG * 10);
}
