//! `hopsync calibrate` (issue 5 section 4): the committed fidelity table regenerates identically
//! from the committed silicon records and `sim/configs/sm90.toml`; the records belong to the
//! current calibration programs; the fit is deterministic and writes its provenance; a results
//! folder (here the golden engine's, written as the GPU runner writes them) imports into records;
//! timing buffers are validated in the manifest.

use hopsync_firmware::manifest::Manifest;
use hopsync_sim::calib::{self, FitParam, Workload};
use hopsync_sim::SmConfig;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn records_dir() -> PathBuf {
    root().join("cosim/traces/sm90/calibration")
}

fn workload() -> Workload {
    let recs = calib::read_records(&records_dir()).expect("records read");
    assert!(!recs.is_empty(), "no calibration records");
    Workload::new(recs, &root())
}

/// The committed docs/FIDELITY.md split at its per-instruction section.
fn fidelity_md_parts() -> (String, String) {
    let committed = std::fs::read_to_string(root().join("docs/FIDELITY.md")).expect("docs/FIDELITY.md");
    let at = committed.find(&format!("\n{}", calib::TRACE_TIMING_HEADING)).expect("docs/FIDELITY.md has the per-instruction section");
    (committed[..at].to_string(), committed[at + 1..].to_string())
}

#[test]
fn fidelity_md_regenerates_identically() {
    let w = workload();
    let rows = calib::fidelity(&w, &SmConfig::sm90());
    let md = calib::fidelity_markdown(w.records(), &rows);
    let (committed, _) = fidelity_md_parts();
    assert!(md == committed, "docs/FIDELITY.md is out of date: run `hopsync calibrate fidelity`\n--- generated ---\n{md}");
}

/// The per-instruction section's silicon columns are the committed traces' clocks (fast: no
/// engine runs; the RTL columns are checked by `long_fidelity_trace_section_regenerates`).
#[test]
fn fidelity_md_trace_section_matches_the_traces() {
    use hopsync_cosim::gpu::trace::{read_trace, Histogram};
    let mut by: std::collections::BTreeMap<String, Histogram> = Default::default();
    for f in hopsync_cosim::gpu::replay::trace_files(&root().join("cosim/traces/sm90")) {
        let t = read_trace(&f).unwrap();
        if calib::TRACE_TIMING_SKIPPED.iter().any(|(n, _)| *n == t.name) {
            continue;
        }
        for c in t.trace.iter().flat_map(|d| d.clocks.iter()) {
            by.entry(c.opcode.trim_end_matches(';').to_string()).or_default().merge(&c.histogram().unwrap());
        }
    }
    assert!(!by.is_empty());
    let (_, section) = fidelity_md_parts();
    let mut seen = 0;
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let op = cells[1].trim_matches('`');
        let h = by.get(op).unwrap_or_else(|| panic!("`{op}` in docs/FIDELITY.md but in no trace"));
        assert_eq!(cells[3], h.samples().to_string(), "{op}");
        assert_eq!(cells[4], format!("{:.1}", h.median()), "{op}");
        seen += 1;
    }
    assert_eq!(seen, by.len(), "docs/FIDELITY.md lists every traced opcode");
}

/// The whole per-instruction section regenerates (replays every trace on the RTL engine: minutes).
#[test]
#[ignore]
fn long_fidelity_trace_section_regenerates() {
    let (reports, rows) = calib::trace_timing(&root().join("cosim/traces/sm90"), &root(), &SmConfig::sm90());
    let md = calib::trace_timing_markdown(&reports, &rows);
    let (_, committed) = fidelity_md_parts();
    assert!(md == committed, "docs/FIDELITY.md's per-instruction section is out of date: run `hopsync calibrate fidelity`\n--- generated ---\n{md}");
}

#[test]
fn records_belong_to_the_current_programs() {
    let w = workload();
    for r in w.records() {
        let p = hopsync_firmware::Program::load(&root().join(&r.program)).unwrap_or_else(|d| panic!("{}: {d}", r.program));
        assert_eq!(hopsync_cosim::gpu::fnv64_hex(&p.source), r.provenance.program_fnv64, "{}: stale record (program changed since it ran on silicon)", r.program);
        assert!(!r.provenance.gpu.is_empty() && !r.provenance.date_utc.is_empty(), "{}: provenance missing", r.program);
        // The figures are those of the manifest, each with its samples and their median.
        let names: Vec<String> = p.manifest.buffers.iter().filter(|b| b.timing).flat_map(|b| if b.figures.is_empty() { vec![b.name.clone()] } else { b.figures.clone() }).collect();
        assert_eq!(r.figures.iter().map(|f| f.name.clone()).collect::<Vec<_>>(), names, "{}", r.program);
        for f in &r.figures {
            assert!(!f.samples.is_empty());
            assert_eq!(f.median, calib::median(&f.samples), "{}: {}", r.program, f.name);
        }
    }
}

#[test]
fn median_is_the_middle() {
    assert_eq!(calib::median(&[5, 1, 3]), 3.0);
    assert_eq!(calib::median(&[4, 1, 3, 2]), 2.5);
    assert_eq!(calib::median(&[]), 0.0);
}

#[test]
fn fit_is_deterministic_and_improves() {
    let recs: Vec<_> = calib::read_records(&records_dir()).unwrap().into_iter().filter(|r| r.program.ends_with("cluster_barrier_2.ptx") || r.program.ends_with("remote_arrive.ptx")).collect();
    assert_eq!(recs.len(), 2);
    let w = Workload::new(recs, &root());
    let params = [FitParam { key: "sync.cluster_barrier_cycles", min: 1.0, max: 1000.0 }, FitParam { key: "dsmem.latency", min: 1.0, max: 2000.0 }];
    let start = SmConfig::sm90();
    let a = calib::fit(&w, &start, &params, 2).unwrap();
    let b = calib::fit(&w, &start, &params, 2).unwrap();
    assert_eq!(a, b, "two fits from the same start differ");
    assert!(a.after.0 <= a.before.0 && a.after.1 <= a.before.1 + 1e-12, "the fit made things worse: {:?} -> {:?}", a.before, a.after);
    // Written into the TOML: new value, provenance comment, the rest unchanged.
    let text = std::fs::read_to_string(root().join("sim/configs/sm90.toml")).unwrap();
    let out = calib::apply_fit(&text, &a.changes, "calibration/{x} on GPU 2026-01-01 by `hopsync calibrate fit`").unwrap();
    assert_eq!(out, calib::apply_fit(&text, &a.changes, "calibration/{x} on GPU 2026-01-01 by `hopsync calibrate fit`").unwrap());
    let parsed = SmConfig::parse(&out).expect("the fitted TOML parses");
    for (k, before, after) in &a.changes {
        assert_eq!(calib::param(&parsed, k).unwrap(), *after, "{k}");
        if before != after {
            assert!(out.contains("by `hopsync calibrate fit` (was"), "no provenance line for {k}");
        }
    }
}

#[test]
fn with_param_sets_one_key() {
    let sm = SmConfig::sm90();
    let c = calib::with_param(&sm, "dsmem.latency", 321.0).unwrap();
    assert_eq!(c.dsmem.latency, 321);
    assert_eq!(calib::with_param(&sm, "dsmem.latency", 321.0).unwrap().sync, sm.sync);
    assert!(calib::with_param(&sm, "dsmem.nonsense", 1.0).is_err());
}

/// Packs one calibration program, runs the batch on the golden engine (written as the GPU runner
/// writes results) and imports it: the figures are the golden engine's step deltas.
#[test]
fn import_reads_a_results_folder() {
    let d = std::env::temp_dir().join(format!("hopsync_calib_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let (batch, results) = (d.join("batch"), d.join("results"));
    let prog = PathBuf::from("firmware/programs/calibration/cluster_barrier_2.ptx");
    let cwd = std::env::current_dir().unwrap();
    std::env::set_current_dir(root()).unwrap();
    assert_eq!(hopsync_cosim::gpu::cli::pack(&[prog.clone()], &batch, hopsync_cosim::budget::DEFAULT_MEM_LIMIT), 0);
    assert_eq!(hopsync_cosim::gpu::cli::golden_cmd(&batch, &results, hopsync_cosim::budget::DEFAULT_MEM_LIMIT), 0);
    let recs = calib::import(&results, Path::new("."));
    std::env::set_current_dir(cwd).unwrap();
    let recs = recs.unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].program, prog.display().to_string());
    assert_eq!(recs[0].figures.len(), 1);
    assert_eq!(recs[0].figures[0].samples.len(), 16);
    assert!(recs[0].figures[0].median > 0.0);
    let _ = std::fs::remove_dir_all(&d);
}

fn manifest_err(extra: &str) -> String {
    let src = format!("//! [launch]\n//! grid = [1, 1, 1]\n//! block = [32, 1, 1]\n//! [[buffer]]\n//! name = \"t\"\n//! bytes = 64\n{extra}.version 8.0\n");
    match Manifest::from_source(&src) {
        Ok(_) => String::new(),
        Err(d) => d.to_string(),
    }
}

#[test]
fn timing_buffers_are_validated() {
    assert_eq!(manifest_err("//! type = \"u64\"\n//! output = true\n//! timing = true\n//! figures = [\"a\", \"b\"]\n"), "");
    assert!(manifest_err("//! type = \"u64\"\n//! output = true\n//! timing = true\n//! expect = [1]\n").contains("cannot be expected"));
    assert!(manifest_err("//! type = \"u32\"\n//! output = true\n//! timing = true\n").contains("must be an output of type"));
    assert!(manifest_err("//! type = \"u64\"\n//! timing = true\n").contains("must be an output of type"));
    assert!(manifest_err("//! type = \"u64\"\n//! output = true\n//! timing = true\n//! figures = [\"a\", \"b\", \"c\"]\n").contains("equal groups"));
    assert!(manifest_err("//! output = true\n//! figures = [\"a\"]\n").contains("needs `timing = true`"));
}
