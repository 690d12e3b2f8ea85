//! Calibration of the RTL engine against silicon (issue 13 §2 and §4): `hopsync calibrate`.
//!
//! The microbenchmarks live in `firmware/programs/calibration/`. Each measures an operation with
//! `%clock64` around it, repeated, and stores the cycle deltas in output buffers marked
//! `timing = true` in its manifest (split into named `figures`). A *figure* is the median of one
//! such group of samples; the same program gives the same figure on silicon and on the RTL
//! engine (which reads its cycle counter as `%clock64`). The programs are split in two
//! ([`Set`]): the `val_*` programs are the **validation set**, left out of the fit; every other
//! program is the **fit set**.
//!
//! - [`pack`]: the device batch, `hopsync calibrate pack`: every calibration program (its unchanged
//!   launch, run several times) and every program of a GPU trace with clocks (its instrumented
//!   launch, for the whole-program durations); `cosim/gpu/runner/calibrate_all.sh` runs it.
//! - [`import`]: the silicon side. From the results folder, each calibration program's samples
//!   (of every run) go to `cosim/traces/sm90/calibration/NAME.json` ([`SiliconRecord`]), and each
//!   traced program's per-CTA duration (first to last `%clock64`) to
//!   `cosim/traces/sm90/calibration/whole/whole_programs.json` ([`whole::WholeRecord`]), with the
//!   card, driver, nvcc, clocks and date.
//! - [`fidelity`]: runs the recorded programs on the RTL engine and sets each silicon figure beside
//!   the engine's ([`fidelity::FidelityRow`]); `docs/FIDELITY.md` reports the fit set, the
//!   validation set and the whole programs separately ([`fidelity::fidelity_markdown`]).
//! - [`fit`]: a deterministic coordinate search over sm90.toml's timing keys on the fit set only;
//!   [`fit::apply_fit`] writes the values and, per key, the program and figure it was fitted to.
//!
//! Assumptions: one SM clock for every CTA of a cluster (the figures that span CTAs read
//! `%clock64` in one CTA only); a figure whose program the RTL engine cannot run is reported with
//! the reason and left out of the error statistics.

pub mod fidelity;
pub mod fit;
pub mod whole;

pub use fidelity::*;
pub use fit::*;

use crate::{run_rtl, SmConfig};
use hopsync_cosim::gpu::pack::{write_batch, PackMeta};
use hopsync_cosim::gpu::replay::EngineRun;
use hopsync_cosim::gpu::trace::{read_provenance, read_result, RunnerResult};
use hopsync_cosim::machine::Config;
use hopsync_firmware::manifest::Manifest;
use hopsync_firmware::Program;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Format tag of a [`SiliconRecord`] written now (several runs, clocks).
pub const FORMAT: &str = "hopsync-calibration/2";
/// Earlier format (one run), still read.
pub const FORMAT_V1: &str = "hopsync-calibration/1";

/// Within this relative error a figure is on target (issue 13: the fit set, and 90% of the
/// validation set).
pub const TARGET: f64 = 0.10;
/// No validation figure may be further off than this (issue 13).
pub const TARGET_MAX: f64 = 0.20;

/// Calibration programs, relative to the repository root.
pub const PROGRAMS: &str = "firmware/programs/calibration";
/// Where the records live, relative to the repository root.
pub const RECORDS: &str = "cosim/traces/sm90/calibration";

/// The part of the calibration a program belongs to (issue 13 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Set {
    /// Fitted: `hopsync calibrate fit` searches sm90.toml's keys against these figures.
    Fit,
    /// Judged only: the `val_*` programs, never seen by the fit.
    Validation,
}

impl Set {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Set::Fit => "fit set",
            Set::Validation => "validation set",
        }
    }
}

/// The set of a calibration program by its path: a file name starting with `val_` is the
/// validation set, anything else the fit set.
pub fn set_of(program: &str) -> Set {
    let stem = Path::new(program).file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if stem.starts_with("val_") {
        Set::Validation
    } else {
        Set::Fit
    }
}

/// One figure's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureSamples {
    /// The timing buffer.
    pub buffer: String,
    /// The figure's name (manifest `figures`, or the buffer name).
    pub name: String,
    /// The cycle samples, in program order (runs one after the other).
    pub samples: Vec<u64>,
    /// Their median ([`median`]).
    pub median: f64,
    /// With several runs: each run's median, in run order (how much a figure moves between
    /// launches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_medians: Vec<f64>,
}

/// Silicon provenance of a calibration record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Provenance {
    /// GPU name (nvidia-smi): the card that gave every figure of the record.
    pub gpu: String,
    /// Driver version.
    pub driver: String,
    /// nvcc release.
    pub nvcc: String,
    /// Compute capability reported by the runner.
    pub compute_capability: String,
    /// Date of the run (UTC, from the device's clock).
    pub date_utc: String,
    /// FNV-1a 64 of the program text the samples belong to.
    pub program_fnv64: String,
    /// Which launch the samples come from.
    pub launch: String,
    /// SM and memory clocks nvidia-smi reported before and after the batch (`env.txt`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub clocks: String,
}

impl Provenance {
    /// The card and day, for report columns (`NVIDIA H200, 2026-11-22`).
    pub fn card(&self) -> String {
        format!("{}, {}", self.gpu, self.date_utc.split('T').next().unwrap_or(""))
    }
}

/// `cosim/traces/sm90/calibration/NAME.json`: one program's silicon figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiliconRecord {
    /// [`FORMAT`] (or [`FORMAT_V1`]).
    pub format: String,
    /// Program path, relative to the repository root.
    pub program: String,
    /// Where and how it was recorded.
    pub provenance: Provenance,
    /// The figures, in manifest order.
    pub figures: Vec<FigureSamples>,
}

/// Median of `v` (mean of the two middle values for an even count); 0 for no samples.
pub fn median(v: &[u64]) -> f64 {
    quantile(&v.iter().map(|&x| x as f64).collect::<Vec<_>>(), 0.5)
}

/// The `q` quantile of `v` (0 <= q <= 1), linearly interpolated between the two nearest ranks
/// (q = 0.5 is the median, the mean of the two middle values for an even count); 0 for no values.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let pos = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
}

/// The figures of a program's timing buffers, from their contents (`bytes` by buffer name).
pub fn figures_of(m: &Manifest, bytes: &dyn Fn(&str) -> Option<Vec<u8>>) -> Result<Vec<FigureSamples>, String> {
    let mut out = Vec::new();
    for b in m.buffers.iter().filter(|b| b.timing) {
        let raw = bytes(&b.name).ok_or_else(|| format!("no contents for timing buffer `{}`", b.name))?;
        if raw.len() as u64 != b.bytes {
            return Err(format!("timing buffer `{}` has {} bytes, the manifest says {}", b.name, raw.len(), b.bytes));
        }
        let samples: Vec<u64> = raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        let names = if b.figures.is_empty() { vec![b.name.clone()] } else { b.figures.clone() };
        let per = samples.len() / names.len();
        for (i, name) in names.into_iter().enumerate() {
            let s = samples[i * per..(i + 1) * per].to_vec();
            out.push(FigureSamples { buffer: b.name.clone(), name, median: median(&s), samples: s, run_medians: Vec::new() });
        }
    }
    Ok(out)
}

/// The figures of several runs of one program merged: samples one run after the other, the
/// median of all, and each run's median.
pub fn merge_runs(runs: Vec<Vec<FigureSamples>>) -> Result<Vec<FigureSamples>, String> {
    let mut it = runs.into_iter();
    let Some(first) = it.next() else { return Ok(Vec::new()) };
    let mut merged: Vec<FigureSamples> = first.into_iter().map(|f| FigureSamples { run_medians: vec![f.median], ..f }).collect();
    for run in it {
        if run.len() != merged.len() {
            return Err("runs of one program have different figures".into());
        }
        for (m, f) in merged.iter_mut().zip(run) {
            m.samples.extend(f.samples);
            m.run_medians.push(f.median);
        }
    }
    for m in &mut merged {
        m.median = median(&m.samples);
        if m.run_medians.len() == 1 {
            m.run_medians.clear();
        }
    }
    Ok(merged)
}

/// The `.pack.json` files of a folder, sorted, parsed.
fn pack_metas(dir: &Path) -> Result<Vec<PackMeta>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".pack.json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))
        })
        .collect()
}

/// The run folders of a calibration results folder (`run1`, `run2`, ... in number order).
fn run_dirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut runs: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter_map(|p| p.file_name()?.to_str()?.strip_prefix("run")?.parse().ok().map(|n| (n, p.clone())))
        .collect();
    runs.sort();
    if runs.is_empty() {
        return Err(format!("{} holds no run folders (run1, run2, ...)", dir.display()));
    }
    Ok(runs.into_iter().map(|(_, p)| p).collect())
}

/// The clocks lines of a results folder's `env.txt` (`clocks_start`, `clocks_end`), joined.
fn read_clocks(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("env.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' ').filter(|(k, _)| k.starts_with("clocks_")).map(|(k, v)| format!("{}: {}", k.trim_start_matches("clocks_"), v.trim())))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A program loaded from `root` whose text is still the one that ran (FNV-1a 64 `fnv64`).
fn load_checked(program: &str, fnv64: &str, root: &Path) -> Result<Program, String> {
    let prog = Program::load(&root.join(program)).map_err(|d| d.to_string())?;
    let h = hopsync_cosim::gpu::fnv64_hex(&prog.portable_source());
    if h != fnv64 {
        return Err(format!("{program} changed since it was packed (fnv64 {h}, packed {fnv64}): pack and run it again"));
    }
    Ok(prog)
}

/// One run's figures of a program, its functional expectations checked (the timing means nothing
/// if the outputs are wrong).
fn run_figures(prog: &Program, run: &Path, r: &RunnerResult, launch: &str) -> Result<Vec<FigureSamples>, String> {
    if r.status != "ok" {
        return Err(format!("launch {launch} in {} is `{}`: {}", run.display(), r.status, r.error_text().unwrap_or_default()));
    }
    for b in prog.manifest.buffers.iter() {
        if let (Some(exp), Some(file)) = (b.expected_bytes(), r.outputs.get(&b.name)) {
            let got = std::fs::read(run.join(file)).map_err(|e| format!("{file}: {e}"))?;
            if !got.starts_with(&exp) {
                return Err(format!("output `{}` on silicon ({}) differs from its expectation", b.name, run.display()));
            }
        }
    }
    figures_of(&prog.manifest, &|name| r.outputs.get(name).and_then(|f| std::fs::read(run.join(f)).ok()))
}

/// What [`import`] read.
#[derive(Debug, Default)]
pub struct Imported {
    /// One record per calibration program that ran.
    pub records: Vec<SiliconRecord>,
    /// The whole-program durations, when the results have them.
    pub whole: Option<whole::WholeRecord>,
    /// Programs left out, with why (a failed launch, a changed program).
    pub failed: Vec<(String, String)>,
}

/// Reads a results folder and returns one record per packed calibration program (programs
/// without timing buffers are skipped). Two layouts: `calibrate_all.sh`'s (`env.txt`,
/// `calibration/` with the `.pack.json` files and `run1`, `run2`, ... runner folders, `whole/`), and
/// `run_batch.sh`'s (one runner folder holding everything). `root` is the repository root.
pub fn import(results: &Path, root: &Path) -> Result<Imported, String> {
    let mut prov = read_provenance(results);
    let clocks = read_clocks(results);
    let (metas_dir, runs) = if results.join("calibration").is_dir() {
        (results.join("calibration"), run_dirs(&results.join("calibration"))?)
    } else {
        (results.to_path_buf(), vec![results.to_path_buf()])
    };
    if prov.compute_capability.is_empty() {
        // calibrate_all.sh keeps the runner's device.txt in each run folder
        let first = read_provenance(&runs[0]);
        prov.compute_capability = first.compute_capability;
        prov.cuda_driver_api = first.cuda_driver_api;
    }
    let mut out = Imported::default();
    for meta in pack_metas(&metas_dir)? {
        let prog = match load_checked(&meta.program, &meta.program_fnv64, root) {
            Ok(p) => p,
            Err(e) => {
                out.failed.push((meta.program.clone(), e));
                continue;
            }
        };
        if !prog.manifest.buffers.iter().any(|b| b.timing) {
            continue;
        }
        let figures = runs
            .iter()
            .map(|run| run_figures(&prog, run, &read_result(run, &meta.plain_launch), &meta.plain_launch))
            .collect::<Result<Vec<_>, String>>()
            .and_then(merge_runs);
        match figures {
            Ok(figures) => out.records.push(SiliconRecord {
                format: FORMAT.into(),
                program: meta.program.clone(),
                provenance: Provenance {
                    gpu: prov.gpu.clone(),
                    driver: prov.driver.clone(),
                    nvcc: prov.nvcc.clone(),
                    compute_capability: prov.compute_capability.clone(),
                    date_utc: prov.date_utc.clone(),
                    program_fnv64: meta.program_fnv64.clone(),
                    launch: format!("{} x {} runs (the unchanged program; cosim/gpu/runner/runner.cpp)", meta.plain_launch, runs.len()),
                    clocks: clocks.clone(),
                },
                figures,
            }),
            Err(e) => out.failed.push((meta.program.clone(), e)),
        }
    }
    if results.join("whole").is_dir() {
        let (rec, failed) = whole::import_whole(&results.join("whole"), root, Provenance { clocks: clocks.clone(), ..provenance_of(&prov) })?;
        out.whole = Some(rec);
        out.failed.extend(failed);
    }
    Ok(out)
}

/// The card part of a runner provenance (no program).
fn provenance_of(p: &hopsync_cosim::gpu::trace::Provenance) -> Provenance {
    Provenance {
        gpu: p.gpu.clone(),
        driver: p.driver.clone(),
        nvcc: p.nvcc.clone(),
        compute_capability: p.compute_capability.clone(),
        date_utc: p.date_utc.clone(),
        ..Provenance::default()
    }
}

/// The record's JSON text (sample arrays on one line).
pub fn record_json(r: &SiliconRecord) -> String {
    hopsync_cosim::gpu::trace::compact_number_arrays(&serde_json::to_string_pretty(r).expect("serializable")) + "\n"
}

/// Every record directly under `dir` (`*.json`), sorted by file name.
pub fn read_records(dir: &Path) -> Result<Vec<SiliconRecord>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let t = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            let r: SiliconRecord = serde_json::from_str(&t).map_err(|e| format!("{}: {e}", f.display()))?;
            if r.format != FORMAT && r.format != FORMAT_V1 {
                return Err(format!("{}: format {} (this hopsync reads {FORMAT} and {FORMAT_V1})", f.display(), r.format));
            }
            Ok(r)
        })
        .collect()
}

/// The device batch of `hopsync calibrate pack`: every calibration program under `root` and every
/// program of a GPU trace with clocks in `traces` ([`pack_programs`]). Returns (calibration
/// programs, whole programs).
pub fn pack(root: &Path, traces: &Path, dir: &Path, mem_limit: u64) -> Result<(usize, usize), String> {
    let calib = hopsync_cosim::gpu::pack::collect_programs(&[root.join(PROGRAMS)]);
    let calib: Vec<PathBuf> = calib.iter().map(|p| p.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| p.clone())).collect();
    pack_programs(root, &calib, &whole::traced_programs(traces)?, dir, mem_limit)
}

/// Packs `calib` (calibration programs, paths relative to `root`) into `dir/calibration`
/// (`hopsync gpu pack`'s files and `plain.txt`, their unchanged launches only: each run folder runs
/// it once) and `whole` (traced programs with their trace's slot count) into `dir/whole`
/// (instrumented launches only, `traced.txt`). Each program must fit the memory budget
/// `mem_limit` on the golden engine.
pub fn pack_programs(root: &Path, calib: &[PathBuf], whole: &[(String, u32)], dir: &Path, mem_limit: u64) -> Result<(usize, usize), String> {
    let entries = write_batch(calib, &dir.join("calibration"), mem_limit)?;
    let mut plain = Vec::new();
    for e in &entries {
        match &e.result {
            Ok(meta) => plain.push(format!("{}.launch", meta.plain_launch)),
            Err(why) => return Err(format!("{}: {why}", e.program)),
        }
    }
    write_launch_list(&dir.join("calibration").join("plain.txt"), plain.into_iter())?;
    let n = whole::write_whole_batch(whole, root, &dir.join("whole"), mem_limit)?;
    Ok((entries.len(), n))
}

/// Writes a runner batch file: one launch description a line.
fn write_launch_list(path: &Path, launches: impl Iterator<Item = String>) -> Result<(), String> {
    let text: String = launches.map(|l| l + "\n").collect();
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Loaded programs of the records (program text checked against the recorded hash).
pub struct Workload {
    records: Vec<SiliconRecord>,
    programs: Vec<Result<Program, String>>,
}

impl Workload {
    /// Loads each record's program from `root`.
    pub fn new(records: Vec<SiliconRecord>, root: &Path) -> Workload {
        let programs = records
            .iter()
            .map(|r| {
                let p = Program::load(&root.join(&r.program)).map_err(|d| format!("does not load: {d}"))?;
                let h = hopsync_cosim::gpu::fnv64_hex(&p.portable_source());
                if h != r.provenance.program_fnv64 {
                    return Err(format!("stale: {} changed since it was recorded (fnv64 {h}, recorded {}); record it again", r.program, r.provenance.program_fnv64));
                }
                Ok(p)
            })
            .collect();
        Workload { records, programs }
    }

    /// The workload with every program the memory budget `limit` refuses on the RTL engine
    /// ([`crate::footprint`]) marked as not loading, with the budget's error.
    pub fn within(mut self, sm: &SmConfig, limit: u64) -> Workload {
        for p in &mut self.programs {
            if let Ok(prog) = p {
                if let Err(d) = crate::footprint(prog, sm).check(prog, "SM-engine", limit) {
                    *p = Err(format!("does not fit the memory budget: {d}"));
                }
            }
        }
        self
    }

    /// The records.
    pub fn records(&self) -> &[SiliconRecord] {
        &self.records
    }

    /// The same workload restricted to one set.
    pub fn only(&self, set: Set) -> Workload {
        let keep: Vec<usize> = (0..self.records.len()).filter(|&i| set_of(&self.records[i].program) == set).collect();
        Workload { records: keep.iter().map(|&i| self.records[i].clone()).collect(), programs: keep.iter().map(|&i| self.programs[i].clone()).collect() }
    }

    /// Program `k`'s figures on the RTL engine with `sm`, or why there are none.
    pub fn run(&self, k: usize, sm: &SmConfig) -> Result<Vec<FigureSamples>, String> {
        let p = self.programs[k].as_ref().map_err(|e| e.clone())?;
        let r = run_rtl(p, Config::default(), sm.clone());
        if r.status != "ok" {
            return Err(r.error.clone().unwrap_or_else(|| format!("status {}: {}", r.status, r.findings.first().map(|f| f.to_string()).unwrap_or_default())));
        }
        figures_of(&p.manifest, &|name| r.outputs.get(name).and_then(|h| hopsync_firmware::manifest::hex_bytes(h)))
    }

    /// [`Workload::run`] for the programs `ks`, on all cores (the result does not depend on the
    /// order), in the order of `ks`.
    pub fn run_many(&self, ks: &[usize], sm: &SmConfig) -> Vec<Result<Vec<FigureSamples>, String>> {
        parallel_map(ks, |&k| self.run(k, sm))
    }
}

/// `f` over `items` on all cores, results in the order of `items`.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(items.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> = items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(k) else { break };
                *results[k].lock().unwrap() = Some(f(item));
            });
        }
    });
    results.into_iter().map(|r| r.into_inner().unwrap().expect("every item ran")).collect()
}

/// Runs an instrumented program (`hopsync gpu pack`) on the RTL engine for `hopsync gpu replay
/// --engine rtl` (`cosim::gpu::replay::replay_trace_on`): its output buffers, the trace buffer
/// among them, whose `%clock64` slots are the engine's cycle count; under the
/// undefined-behaviour mode of the program's manifest, as the golden replay.
pub fn run_rtl_replay(p: &Program, sm: &SmConfig) -> EngineRun {
    run_rtl_replay_with(p, Config::of_program(p), sm)
}

/// [`run_rtl_replay`] with a machine configuration (`max_steps` bounds the cycles).
pub fn run_rtl_replay_with(p: &Program, cfg: Config, sm: &SmConfig) -> EngineRun {
    let r = run_rtl(p, cfg, sm.clone());
    let error = match r.status.as_str() {
        "ok" => None,
        "fault" => Some(format!("the RTL engine stopped with a finding: {}", r.findings.last().map(|f| f.to_string()).unwrap_or_default())),
        _ => Some(format!("the RTL engine cannot run it: {}", r.error.clone().unwrap_or_else(|| r.status.clone()))),
    };
    EngineRun {
        buffers: r.outputs.iter().filter_map(|(k, h)| hopsync_firmware::manifest::hex_bytes(h).map(|b| (k.clone(), b))).collect(),
        error,
        findings: r.findings.iter().map(|f| f.to_string()).collect(),
    }
}
