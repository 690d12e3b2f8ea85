//! `hopsync calibrate` (issue 13 sections 2 and 4): the committed fidelity report regenerates
//! identically from the committed silicon records and `sim/configs/sm90.toml`; the records belong
//! to the current calibration programs; the programs split into a fit set and a validation set of
//! at least a third of the figures; the fit sees the fit set only, is deterministic and writes
//! each key's program and figure; a `calibrate_all.sh` results folder (here the golden engine's,
//! written as the GPU runner writes them) imports into records and whole-program durations;
//! timing buffers are validated in the manifest.

use hopsync_firmware::manifest::Manifest;
use hopsync_sim::calib::{self, whole, FitParam, Set, Workload};
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

/// The committed docs/FIDELITY.md in three parts: the calibration figures (fit and validation
/// sets), the whole programs, the per-instruction clocks.
fn fidelity_md_parts() -> (String, String, String) {
    let committed = std::fs::read_to_string(root().join("docs/FIDELITY.md")).expect("docs/FIDELITY.md");
    let w = committed.find(&format!("\n{}", whole::HEADING)).map(|i| i + 1).expect("docs/FIDELITY.md has the whole-program section");
    let t = committed.find(&format!("\n{}", calib::TRACE_TIMING_HEADING)).expect("docs/FIDELITY.md has the per-instruction section");
    (committed[..w].to_string(), committed[w..t + 1].to_string(), committed[t + 1..].to_string())
}

#[test]
fn fidelity_md_regenerates_identically() {
    let w = workload();
    let rows = calib::fidelity(&w, &SmConfig::sm90());
    let md = calib::fidelity_markdown(w.records(), &rows);
    let (committed, _, _) = fidelity_md_parts();
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
    let (_, _, section) = fidelity_md_parts();
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

/// The whole-program and per-instruction sections regenerate (replay every trace on the RTL
/// engine: minutes).
#[test]
#[ignore]
fn long_fidelity_trace_sections_regenerate() {
    let sm = SmConfig::sm90();
    let memo = whole::ReplayMemo::default();
    let (reports, rows) = calib::trace_timing(&root().join("cosim/traces/sm90"), &root(), &sm, &memo);
    let rec = whole::read_record(&records_dir()).unwrap();
    let whole_rows = rec.as_ref().map(|r| whole::whole_fidelity(r, &root(), &sm, &memo, calib::TRACE_TIMING_SKIPPED)).unwrap_or_default();
    let (_, committed_whole, committed_trace) = fidelity_md_parts();
    let md = whole::whole_markdown(rec.as_ref(), &whole_rows, calib::TRACE_TIMING_SKIPPED) + "\n";
    assert!(md == committed_whole, "docs/FIDELITY.md's whole-program section is out of date: run `hopsync calibrate fidelity`\n--- generated ---\n{md}");
    let md = calib::trace_timing_markdown(&reports, &rows);
    assert!(md == committed_trace, "docs/FIDELITY.md's per-instruction section is out of date: run `hopsync calibrate fidelity`\n--- generated ---\n{md}");
}

#[test]
fn records_belong_to_the_current_programs() {
    let w = workload();
    for r in w.records() {
        let p = hopsync_firmware::Program::load(&root().join(&r.program)).unwrap_or_else(|d| panic!("{}: {d}", r.program));
        assert_eq!(hopsync_cosim::gpu::fnv64_hex(&p.portable_source()), r.provenance.program_fnv64, "{}: stale record (program changed since it ran on silicon)", r.program);
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
    // quantiles interpolate between ranks: 0..=10, q = 0.9 is 9; of 1, 2, 3, 4 it is 3.7
    let v: Vec<f64> = (0..=10).map(f64::from).collect();
    assert_eq!(calib::quantile(&v, 0.9), 9.0);
    assert!((calib::quantile(&[4.0, 1.0, 3.0, 2.0], 0.9) - 3.7).abs() < 1e-12);
}

/// Every `val_*` program is the validation set, the rest the fit set; the validation set has at
/// least a third of the figures, and the calibration has at least 40 programs and 150 figures
/// (issue 13).
#[test]
fn calibration_programs_split_into_fit_and_validation_sets() {
    assert_eq!(calib::set_of("firmware/programs/calibration/val_bar_loops.ptx"), Set::Validation);
    assert_eq!(calib::set_of("firmware/programs/calibration/tma/val_tma_sizes.ptx"), Set::Validation);
    assert_eq!(calib::set_of("firmware/programs/calibration/bar_warps.ptx"), Set::Fit);
    assert_eq!(calib::set_of("firmware/programs/calibration/interval_test.ptx"), Set::Fit);
    let progs = hopsync_cosim::gpu::pack::collect_programs(&[root().join(calib::PROGRAMS)]);
    let mut figures = [0usize; 2];
    let mut programs = [0usize; 2];
    for p in &progs {
        let prog = hopsync_firmware::Program::load(p).unwrap_or_else(|d| panic!("{}: {d}", p.display()));
        let n: usize = prog.manifest.buffers.iter().filter(|b| b.timing).map(|b| b.figures.len().max(1)).sum();
        assert!(n > 0, "{}: a calibration program without figures", p.display());
        let k = calib::set_of(&p.to_string_lossy()) as usize;
        figures[k] += n;
        programs[k] += 1;
    }
    assert!(programs[0] + programs[1] >= 40 && figures[0] + figures[1] >= 150, "{programs:?} programs, {figures:?} figures");
    assert!(figures[1] * 3 >= figures[0] + figures[1], "validation figures {} of {}", figures[1], figures[0] + figures[1]);
}

#[test]
fn fit_is_deterministic_and_improves() {
    let recs: Vec<_> = calib::read_records(&records_dir()).unwrap().into_iter().filter(|r| r.program.ends_with("cluster_barrier_2.ptx") || r.program.ends_with("remote_arrive.ptx")).collect();
    assert_eq!(recs.len(), 2);
    let w = Workload::new(recs, &root());
    let params = [FitParam { key: "sync.cluster_barrier_cycles", min: 1.0, max: 1000.0 }, FitParam { key: "dsmem.sync_latency", min: 1.0, max: 2000.0 }];
    let start = SmConfig::sm90();
    let a = calib::fit(&w, &start, &params, 2).unwrap();
    let b = calib::fit(&w, &start, &params, 2).unwrap();
    assert_eq!(a, b, "two fits from the same start differ");
    assert!(a.after.0 <= a.before.0 && a.after.1 <= a.before.1 + 1e-12, "the fit made things worse: {:?} -> {:?}", a.before, a.after);
    // Each key names the figure that moves most with it: the cluster barrier's figure for the
    // barrier's cycles, the remote arrive's for the DSMEM latency of a remote mbarrier operation.
    let figure = |k: &str| a.provenance.iter().find(|p| p.key == k).and_then(|p| p.figure.clone()).unwrap();
    assert_eq!(figure("sync.cluster_barrier_cycles").0, "firmware/programs/calibration/cluster_barrier_2.ptx");
    assert_eq!(figure("dsmem.sync_latency").0, "firmware/programs/calibration/remote_arrive.ptx");
    // Written into the TOML: new value, provenance sentence naming the program and figure, the
    // placeholder gone, every other line unchanged.
    let text = std::fs::read_to_string(root().join("sim/configs/sm90.toml")).unwrap();
    let out = calib::apply_fit(&text, &a.changes, &a.provenance, "GPU, 2026-01-01").unwrap();
    assert_eq!(out, calib::apply_fit(&text, &a.changes, &a.provenance, "GPU, 2026-01-01").unwrap());
    let parsed = SmConfig::parse(&out).expect("the fitted TOML parses");
    for (k, _, after) in &a.changes {
        assert_eq!(calib::param(&parsed, k).unwrap(), *after, "{k}");
    }
    let flat = out.lines().map(|l| l.trim_start_matches('#').trim()).collect::<Vec<_>>().join(" ");
    // (the values the fit started from, sm90.toml's today)
    let was = |k: &str| calib::param(&start, k).unwrap() as u64;
    let (cb, dl) = (was("sync.cluster_barrier_cycles"), was("dsmem.sync_latency"));
    assert!(flat.contains(&format!("to calibration/cluster_barrier_2.ptx \"barrier.cluster arrive+wait, 2 CTAs\", GPU, 2026-01-01 (was {cb}).")), "{out}");
    assert!(flat.contains(&format!("to calibration/remote_arrive.ptx \"remote arrive ping-pong round trip, 2 CTAs\", GPU, 2026-01-01 (was {dl}).")), "{out}");
    assert!(out.lines().filter(|l| l.starts_with("# Fitted by")).all(|l| l.len() <= 100), "a provenance line over 100 columns");
    // Applying twice replaces the earlier fit's sentence instead of adding one.
    let twice = calib::apply_fit(&out, &a.changes, &a.provenance, "GPU, 2026-01-01").unwrap();
    assert_eq!(twice.matches("Fitted by").count(), out.matches("Fitted by").count());
    // Keys the fit did not search keep their lines.
    let kept = |t: &str| t.lines().filter(|l| l.starts_with("mhz") || l.starts_with("alu =")).map(String::from).collect::<Vec<_>>();
    assert_eq!(kept(&out), kept(&text));
}

/// A validation record beside a fit record: the fit runs and scores the fit record's program only.
#[test]
fn fit_leaves_the_validation_set_out() {
    let mut recs: Vec<_> = calib::read_records(&records_dir()).unwrap().into_iter().filter(|r| r.program.ends_with("cluster_barrier_2.ptx")).collect();
    // A made-up validation record of a val_ program whose silicon figures are far off: if the fit
    // saw it, the max error would be dominated by it.
    let val = "firmware/programs/calibration/val_cluster_3x4.ptx";
    let prog = hopsync_firmware::Program::load(&root().join(val)).unwrap();
    let mut rec = recs[0].clone();
    rec.program = val.into();
    rec.provenance.program_fnv64 = hopsync_cosim::gpu::fnv64_hex(&prog.portable_source());
    rec.figures = prog
        .manifest
        .buffers
        .iter()
        .filter(|b| b.timing)
        .flat_map(|b| b.figures.iter().map(move |f| calib::FigureSamples { buffer: b.name.clone(), name: f.clone(), samples: vec![1], median: 1.0, run_medians: vec![] }))
        .collect();
    recs.push(rec);
    let w = Workload::new(recs, &root());
    assert_eq!(w.only(Set::Validation).records().len(), 1);
    let params = [FitParam { key: "sync.cluster_barrier_cycles", min: 1.0, max: 1000.0 }];
    let r = calib::fit(&w, &SmConfig::sm90(), &params, 1).unwrap();
    assert_eq!(r.figures, 1, "the fit scored a validation figure");
    let fit_only = Workload::new(w.only(Set::Fit).records().to_vec(), &root());
    assert_eq!(r, calib::fit(&fit_only, &SmConfig::sm90(), &params, 1).unwrap(), "the validation record changed the fit");
    assert!(r.before.0 < 1.0, "the far-off validation figure was scored: {:?}", r.before);
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
fn import_reads_a_run_batch_results_folder() {
    let d = std::env::temp_dir().join(format!("hopsync_calib_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let (batch, results) = (d.join("batch"), d.join("results"));
    let prog = PathBuf::from("firmware/programs/calibration/cluster_barrier_2.ptx");
    let cwd = std::env::current_dir().unwrap();
    std::env::set_current_dir(root()).unwrap();
    assert_eq!(hopsync_cosim::gpu::cli::pack(&[prog.clone()], &batch, &Default::default()), 0);
    assert_eq!(hopsync_cosim::gpu::cli::golden_cmd(&batch, &results, hopsync_cosim::budget::DEFAULT_MEM_LIMIT), 0);
    let imported = calib::import(&results, Path::new("."));
    std::env::set_current_dir(cwd).unwrap();
    let imported = imported.unwrap();
    assert!(imported.failed.is_empty() && imported.whole.is_none(), "{:?}", imported.failed);
    let recs = imported.records;
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].program, prog.display().to_string());
    assert_eq!(recs[0].figures.len(), 1);
    assert_eq!(recs[0].figures[0].samples.len(), 16);
    assert!(recs[0].figures[0].run_medians.is_empty(), "one run");
    assert!(recs[0].figures[0].median > 0.0);
    let _ = std::fs::remove_dir_all(&d);
}

/// The layout of `calibrate_all.sh`: `hopsync calibrate pack` of a fit program, a validation
/// program and a traced program, the unchanged launches run twice (run1, run2) and the
/// instrumented launch once, on the golden engine; import gives one record per calibration
/// program with both runs' samples and medians, the clocks of env.txt, and per-CTA whole-program
/// durations equal to the golden run's own clock spans.
#[test]
fn import_reads_a_calibrate_all_results_folder() {
    let d = std::env::temp_dir().join(format!("hopsync_calib_all_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let (batch, results) = (d.join("batch"), d.join("calibration_results"));
    let calib_progs = [PathBuf::from("firmware/programs/calibration/cluster_barrier_2.ptx"), PathBuf::from("firmware/programs/calibration/val_cluster_3x4.ptx")];
    let traced = ("firmware/programs/seeds/mbarrier_ex4_cluster.ptx".to_string(), 64u32);
    let cwd = std::env::current_dir().unwrap();
    std::env::set_current_dir(root()).unwrap();
    let packed = calib::pack_programs(Path::new("."), &calib_progs, &[traced.clone()], &batch, hopsync_cosim::budget::DEFAULT_MEM_LIMIT);
    let run = |list: &str, sub: &str, out: &str| hopsync_cosim::gpu::pack::run_list_golden(&batch.join(sub), list, &results.join(out), hopsync_cosim::budget::DEFAULT_MEM_LIMIT).unwrap();
    let imported = packed.map(|(c, w)| {
        assert_eq!((c, w), (2, 1));
        assert_eq!(run("plain.txt", "calibration", "calibration/run1"), 2);
        assert_eq!(run("plain.txt", "calibration", "calibration/run2"), 2);
        assert_eq!(run("traced.txt", "whole", "whole"), 1);
        for sub in ["calibration", "whole"] {
            for f in std::fs::read_dir(batch.join(sub)).unwrap().flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(".pack.json")) {
                std::fs::copy(&f, results.join(sub).join(f.file_name().unwrap())).unwrap();
            }
        }
        std::fs::write(results.join("env.txt"), "date_utc 2026-01-01T00:00:00Z\nnvidia_smi GPU X, 1.0\nclocks_start 1980 MHz\nclocks_end 1755 MHz\n").unwrap();
        calib::import(&results, Path::new("."))
    });
    std::env::set_current_dir(cwd).unwrap();
    let imported = imported.unwrap().unwrap();
    assert!(imported.failed.is_empty(), "{:?}", imported.failed);
    assert_eq!(imported.records.len(), 2);
    for r in &imported.records {
        assert_eq!(r.format, calib::FORMAT);
        assert_eq!(r.provenance.gpu, "GPU X");
        assert_eq!(r.provenance.clocks, "start: 1980 MHz; end: 1755 MHz");
        let prog = hopsync_firmware::Program::load(&root().join(&r.program)).unwrap();
        let per_run: usize = prog.manifest.buffers.iter().filter(|b| b.timing).map(|b| b.bytes as usize / 8 / b.figures.len().max(1)).max().unwrap();
        for f in &r.figures {
            assert_eq!(f.samples.len(), 2 * per_run, "{}", f.name);
            assert_eq!(f.run_medians.len(), 2, "{}", f.name);
            // the golden engine is deterministic: both runs agree
            assert_eq!(f.run_medians[0], f.run_medians[1], "{}", f.name);
            assert_eq!(f.median, calib::median(&f.samples));
        }
    }
    assert_eq!(calib::set_of(&imported.records[1].program), Set::Validation);
    let w = imported.whole.expect("whole-program record");
    assert_eq!(w.programs.len(), 1);
    let wp = &w.programs[0];
    assert_eq!(wp.program, traced.0);
    // the golden engine's own clock spans of the same instrumented program
    let prog = hopsync_firmware::Program::load(&root().join(&traced.0)).unwrap();
    let packed = hopsync_cosim::gpu::pack::pack_with(&prog, traced.1).unwrap();
    let g = hopsync_cosim::gpu::replay::run_golden(&packed.program);
    let expect = whole::cta_cycles(&packed, &g.buffers[hopsync_cosim::gpu::TRACE_BUFFER]).unwrap();
    assert_eq!(wp.cta_cycles, expect);
    assert_eq!(wp.cta_cycles.len(), prog.manifest.launch.grid.iter().product::<u32>() as usize);
    assert!(wp.cta_cycles.iter().all(|c| c.is_some_and(|c| c > 0)), "{:?}", wp.cta_cycles);
    let _ = std::fs::remove_dir_all(&d);
}

/// `calibrate_all.sh` end to end on this machine: `hopsync calibrate pack` of two calibration
/// programs and a traced one, the script with the golden engine as its runner
/// (`golden_runner.sh`; no nvidia-smi or nvcc needed), its archive unpacked and imported.
#[test]
fn calibrate_all_runs_end_to_end_with_the_golden_runner() {
    let d = std::env::temp_dir().join(format!("hopsync_calibrate_all_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let (batch, out, unpacked) = (d.join("batch"), d.join("out"), d.join("unpacked"));
    let cwd = std::env::current_dir().unwrap();
    std::env::set_current_dir(root()).unwrap();
    let calib_progs = [PathBuf::from("firmware/programs/calibration/cluster_barrier_4.ptx"), PathBuf::from("firmware/programs/calibration/val_mbar_gather.ptx")];
    let packed = calib::pack_programs(Path::new("."), &calib_progs, &[("firmware/programs/seeds/bar_sync.ptx".into(), 64)], &batch, hopsync_cosim::budget::DEFAULT_MEM_LIMIT);
    std::env::set_current_dir(&cwd).unwrap();
    assert_eq!(packed.unwrap(), (2, 1));
    let status = std::process::Command::new("bash")
        .arg(root().join("cosim/gpu/runner/calibrate_all.sh"))
        .arg(&batch)
        .env("OUT", &out)
        .env("RUNS", "3")
        .env("RUNNER", root().join("cosim/gpu/runner/golden_runner.sh"))
        .env("HOPSYNC", env!("CARGO_BIN_EXE_hopsync"))
        .current_dir(root())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let log = std::fs::read_to_string(out.join("log.txt")).unwrap();
    assert!(log.contains("plain.txt -> ") && log.contains(": 2 of 2 launches ok") && log.contains(": 1 of 1 launches ok"), "{log}");
    std::fs::create_dir_all(&unpacked).unwrap();
    let tar = std::process::Command::new("tar").arg("-xzf").arg(out.join("calibration_results.tar.gz")).arg("-C").arg(&unpacked).status().unwrap();
    assert!(tar.success());
    let results = unpacked.join("calibration_results");
    for f in ["env.txt", "log.txt", "calibration/run1", "calibration/run3", "whole/bar_sync.pack.json"] {
        assert!(results.join(f).exists(), "{f} missing from the archive");
    }
    let env = std::fs::read_to_string(results.join("env.txt")).unwrap();
    assert!(env.contains("date_utc ") && env.contains("clocks_start ") && env.contains("clocks_end "), "{env}");
    std::env::set_current_dir(root()).unwrap();
    let imported = calib::import(&results, Path::new("."));
    std::env::set_current_dir(&cwd).unwrap();
    let imported = imported.unwrap();
    assert!(imported.failed.is_empty(), "{:?}", imported.failed);
    assert_eq!(imported.records.len(), 2);
    assert!(imported.records.iter().all(|r| r.figures.iter().all(|f| f.run_medians.len() == 3)));
    assert_eq!(imported.whole.map(|w| w.programs.len()), Some(1));
    let _ = std::fs::remove_dir_all(&d);
}

/// Whole-program statistics over CTAs: errors 0%, +10%, -20%, +50% (hand-computed median 15%,
/// 90th percentile 41%), a CTA without a silicon clock left out, a failed RTL run counted as no CTAs.
#[test]
fn whole_program_stats_are_per_cta() {
    let rows = [
        whole::WholeRow { name: "a".into(), card: "c".into(), silicon: vec![Some(100), Some(100), None], rtl: Ok(vec![Some(100), Some(110), Some(5)]) },
        whole::WholeRow { name: "b".into(), card: "c".into(), silicon: vec![Some(1000), Some(10)], rtl: Ok(vec![Some(800), Some(15)]) },
        whole::WholeRow { name: "x".into(), card: "c".into(), silicon: vec![Some(1)], rtl: Err("unsupported".into()) },
    ];
    let st = whole::whole_stats(&rows);
    assert_eq!((st.programs, st.ctas, st.within_10, st.within_20), (2, 4, 2, 3));
    assert!((st.median - 0.15).abs() < 1e-12, "{st:?}");
    assert!((st.p90 - 0.41).abs() < 1e-12, "{st:?}");
    assert!((st.max - 0.5).abs() < 1e-12);
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
