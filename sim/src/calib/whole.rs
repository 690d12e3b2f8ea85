//! Whole-program durations (issue 13 §4): for every GPU trace with clocks, each CTA's duration on
//! silicon, first to last `%clock64` of the instrumented launch (`cosim::gpu::trace::cta_clock_spans`),
//! beside the same program's on the RTL engine, which runs the same instrumented text and reads its
//! cycle count as `%clock64`.
//!
//! The device batch (`hopsync calibrate pack`, folder `whole/`) packs each traced program with the
//! committed trace's slot count, so the instrumented text is the trace's; `calibrate_all.sh` runs
//! the instrumented launches; [`import_whole`] reduces each trace buffer to per-CTA cycles
//! ([`WholeRecord`], `cosim/traces/sm90/calibration/whole/whole_programs.json`); [`whole_fidelity`]
//! sets the RTL engine's beside them.

use super::{load_checked, pack_metas, parallel_map, quantile, write_launch_list, Provenance, TARGET, TARGET_MAX};
use crate::SmConfig;
use hopsync_cosim::gpu::pack::{launch_description, pack_with, PackMeta};
use hopsync_cosim::gpu::replay::{trace_files, EngineRun};
use hopsync_cosim::gpu::trace::{cta_clock_spans, read_result, read_trace};
use hopsync_cosim::gpu::{FORMAT as PACK_FORMAT, TRACE_BUFFER};
use hopsync_firmware::Program;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Format tag of a [`WholeRecord`].
pub const FORMAT: &str = "hopsync-whole-program/1";

/// The record's path under the calibration records.
pub const FILE: &str = "whole/whole_programs.json";

/// One program's silicon durations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WholeProgram {
    /// Program name (the trace's).
    pub name: String,
    /// Program path, relative to the repository root.
    pub program: String,
    /// FNV-1a 64 of the program text.
    pub program_fnv64: String,
    /// FNV-1a 64 of the instrumented text that ran.
    pub instrumented_fnv64: String,
    /// Trace slots per thread it was packed with.
    pub slots: u32,
    /// Per CTA (linear id): last minus first `%clock64` its threads traced; None for a CTA that
    /// traced no clock.
    pub cta_cycles: Vec<Option<u64>>,
}

/// `cosim/traces/sm90/calibration/whole/whole_programs.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WholeRecord {
    /// [`FORMAT`].
    pub format: String,
    /// The card, driver, nvcc, clocks and date of the run (no program).
    pub provenance: Provenance,
    /// The programs, by name.
    pub programs: Vec<WholeProgram>,
}

/// Per CTA: `hi - lo` of its clock span.
fn durations(spans: &[Option<(u64, u64)>]) -> Vec<Option<u64>> {
    spans.iter().map(|s| s.map(|(lo, hi)| hi - lo)).collect()
}

/// Per-CTA cycles of an instrumented program's trace buffer (`bytes`), as `packed` lays it out.
pub fn cta_cycles(packed: &hopsync_cosim::gpu::pack::Packed, bytes: &[u8]) -> Result<Vec<Option<u64>>, String> {
    if bytes.len() as u64 != packed.layout.bytes() {
        return Err(format!("trace buffer of {} bytes, the layout has {}", bytes.len(), packed.layout.bytes()));
    }
    let (_, slots) = packed.layout.decode(bytes);
    let per_cta = packed.original.manifest.launch.block.iter().product::<u32>() as usize;
    Ok(durations(&cta_clock_spans(&packed.fields, &slots, per_cta)))
}

/// Every program of a committed GPU trace with clocks (format 2), with the trace's slot count.
pub fn traced_programs(traces: &Path) -> Result<Vec<(String, u32)>, String> {
    let mut out = Vec::new();
    for f in trace_files(traces) {
        let t = read_trace(&f)?;
        if let Some(d) = t.trace.as_ref().filter(|d| !d.clocks.is_empty()) {
            out.push((t.program.clone(), d.layout.slots));
        }
    }
    Ok(out)
}

/// Packs each traced program (path relative to `root`, slots) into `dir`: the instrumented launch
/// only (`NAME.ptx/.launch/.bin`, `NAME.pack.json`) and `traced.txt` listing the launches.
pub fn write_whole_batch(programs: &[(String, u32)], root: &Path, dir: &Path, mem_limit: u64) -> Result<usize, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let w = |name: &str, data: &[u8]| std::fs::write(dir.join(name), data).map_err(|e| format!("cannot write {}: {e}", dir.join(name).display()));
    let mut launches = Vec::new();
    for (path, slots) in programs {
        let mut prog = Program::load(&root.join(path)).map_err(|d| d.to_string())?;
        hopsync_cosim::budget::Footprint::golden(&prog).check(&prog, "golden", mem_limit).map_err(|d| d.to_string())?;
        prog.path = path.clone();
        let name = prog.name();
        let p = pack_with(&prog, *slots).map_err(|e| format!("{path}: {e}"))?;
        w(&format!("{name}.ptx"), p.source.as_bytes())?;
        let (d, data) = launch_description(&p.program, &name, &format!("{name}.ptx"), &format!("{name}.bin"))?;
        w(&format!("{name}.launch"), d.as_bytes())?;
        w(&format!("{name}.bin"), &data)?;
        let meta = PackMeta {
            format: PACK_FORMAT.into(),
            name: name.clone(),
            program: path.clone(),
            program_fnv64: p.program_fnv64.clone(),
            instrumented_fnv64: p.instrumented_fnv64.clone(),
            layout: p.layout,
            fields: p.fields.len(),
            traced_launch: name.clone(),
            plain_launch: String::new(),
        };
        w(&format!("{name}.pack.json"), serde_json::to_string_pretty(&meta).unwrap().as_bytes())?;
        launches.push(format!("{name}.launch"));
    }
    write_launch_list(&dir.join("traced.txt"), launches.into_iter())?;
    Ok(programs.len())
}

/// The instrumented program that ran, checked: `program` unchanged since (its FNV-1a 64) and its
/// instrumentation with `slots` slots the same text.
fn repack(program: &str, program_fnv64: &str, instrumented_fnv64: &str, slots: u32, root: &Path) -> Result<hopsync_cosim::gpu::pack::Packed, String> {
    let mut prog = load_checked(program, program_fnv64, root)?;
    prog.path = program.to_string();
    let p = pack_with(&prog, slots)?;
    if p.instrumented_fnv64 != instrumented_fnv64 {
        return Err(format!("the instrumentation of {program} changed since it ran: pack and run it again"));
    }
    Ok(p)
}

/// One program of a `whole/` results folder.
fn import_one(dir: &Path, meta: &PackMeta, root: &Path) -> Result<WholeProgram, String> {
    let packed = repack(&meta.program, &meta.program_fnv64, &meta.instrumented_fnv64, meta.layout.slots, root)?;
    let r = read_result(dir, &meta.traced_launch);
    if r.status != "ok" {
        return Err(format!("launch {} is `{}`: {}", meta.traced_launch, r.status, r.error_text().unwrap_or_default()));
    }
    let file = r.outputs.get(TRACE_BUFFER).ok_or("no trace buffer in the result")?;
    let bytes = std::fs::read(dir.join(file)).map_err(|e| format!("{file}: {e}"))?;
    Ok(WholeProgram {
        name: meta.name.clone(),
        program: meta.program.clone(),
        program_fnv64: meta.program_fnv64.clone(),
        instrumented_fnv64: meta.instrumented_fnv64.clone(),
        slots: meta.layout.slots,
        cta_cycles: cta_cycles(&packed, &bytes)?,
    })
}

/// Reads the `whole/` folder of a `calibrate_all.sh` results folder (runner results and the
/// `.pack.json` files): the record, and the programs left out with why.
pub fn import_whole(dir: &Path, root: &Path, provenance: Provenance) -> Result<(WholeRecord, Vec<(String, String)>), String> {
    let mut programs = Vec::new();
    let mut failed = Vec::new();
    for meta in pack_metas(dir)? {
        match import_one(dir, &meta, root) {
            Ok(p) => programs.push(p),
            Err(e) => failed.push((meta.program.clone(), e)),
        }
    }
    Ok((WholeRecord { format: FORMAT.into(), provenance: Provenance { launch: "instrumented launch (hopsync gpu pack), once".into(), ..provenance }, programs }, failed))
}

/// The record's JSON text (number arrays on one line).
pub fn record_json(r: &WholeRecord) -> String {
    hopsync_cosim::gpu::trace::compact_number_arrays(&serde_json::to_string_pretty(r).expect("serializable")) + "\n"
}

/// Reads the record under the calibration records folder, if there is one.
pub fn read_record(records: &Path) -> Result<Option<WholeRecord>, String> {
    let path = records.join(FILE);
    if !path.exists() {
        return Ok(None);
    }
    let t = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let r: WholeRecord = serde_json::from_str(&t).map_err(|e| format!("{}: {e}", path.display()))?;
    if r.format != FORMAT {
        return Err(format!("{}: format {} (this hopsync reads {FORMAT})", path.display(), r.format));
    }
    Ok(Some(r))
}

/// Runs of instrumented programs on the RTL engine, by the instrumented text's FNV-1a 64: the
/// per-instruction table and the whole-program table replay the same text once.
#[derive(Default)]
pub struct ReplayMemo(Mutex<HashMap<String, EngineRun>>);

impl ReplayMemo {
    /// The RTL engine's run of `p` (an instrumented program) with `sm`, remembered.
    pub fn run(&self, p: &Program, sm: &SmConfig) -> EngineRun {
        let key = hopsync_cosim::gpu::fnv64_hex(&p.portable_source());
        if let Some(r) = self.0.lock().unwrap().get(&key) {
            return r.clone();
        }
        let r = super::run_rtl_replay(p, sm);
        self.0.lock().unwrap().insert(key, r.clone());
        r
    }
}

/// One program: silicon's per-CTA cycles beside the RTL engine's.
#[derive(Debug, Clone, PartialEq)]
pub struct WholeRow {
    /// Program name.
    pub name: String,
    /// The card that gave the silicon figures.
    pub card: String,
    /// Silicon, per CTA.
    pub silicon: Vec<Option<u64>>,
    /// RTL engine, per CTA, or why there is none.
    pub rtl: Result<Vec<Option<u64>>, String>,
}

impl WholeRow {
    /// (RTL - silicon) / silicon of every CTA both traced.
    pub fn errors(&self) -> Vec<f64> {
        let Ok(rtl) = &self.rtl else { return Vec::new() };
        self.silicon
            .iter()
            .zip(rtl)
            .filter_map(|(s, r)| match (s, r) {
                (Some(s), Some(r)) if *s > 0 => Some((*r as f64 - *s as f64) / *s as f64),
                _ => None,
            })
            .collect()
    }
}

/// The RTL engine's per-CTA cycles of one recorded program.
fn rtl_cycles(wp: &WholeProgram, root: &Path, run: &dyn Fn(&Program) -> EngineRun) -> Result<Vec<Option<u64>>, String> {
    let packed = repack(&wp.program, &wp.program_fnv64, &wp.instrumented_fnv64, wp.slots, root).map_err(|e| format!("stale: {e}"))?;
    let r = run(&packed.program);
    if let Some(e) = r.error {
        return Err(e);
    }
    let bytes = r.buffers.get(TRACE_BUFFER).ok_or("the run has no trace buffer")?;
    cta_cycles(&packed, bytes)
}

/// Every recorded program but `skipped` (name, why) on the RTL engine with `memo`, on all cores.
pub fn whole_fidelity(rec: &WholeRecord, root: &Path, sm: &SmConfig, memo: &ReplayMemo, skipped: &[(&str, &str)]) -> Vec<WholeRow> {
    let todo: Vec<&WholeProgram> = rec.programs.iter().filter(|p| !skipped.iter().any(|(n, _)| *n == p.name)).collect();
    let card = rec.provenance.card();
    parallel_map(&todo, |wp| WholeRow { name: wp.name.clone(), card: card.clone(), silicon: wp.cta_cycles.clone(), rtl: rtl_cycles(wp, root, &|p| memo.run(p, sm)) })
}

/// Summary of the whole-program table.
#[derive(Debug, Clone, PartialEq)]
pub struct WholeStats {
    /// Programs with at least one CTA compared.
    pub programs: usize,
    /// CTAs compared.
    pub ctas: usize,
    /// Median |error| over the CTAs.
    pub median: f64,
    /// 90th percentile of |error| over the CTAs.
    pub p90: f64,
    /// Largest |error|.
    pub max: f64,
    /// CTAs within [`TARGET`].
    pub within_10: usize,
    /// CTAs within [`TARGET_MAX`].
    pub within_20: usize,
}

/// The statistics of every CTA of every row.
pub fn whole_stats(rows: &[WholeRow]) -> WholeStats {
    let e: Vec<f64> = rows.iter().flat_map(|r| r.errors()).map(f64::abs).collect();
    WholeStats {
        programs: rows.iter().filter(|r| !r.errors().is_empty()).count(),
        ctas: e.len(),
        median: quantile(&e, 0.5),
        p90: quantile(&e, 0.9),
        max: e.iter().cloned().fold(0.0, f64::max),
        within_10: e.iter().filter(|x| **x <= TARGET).count(),
        within_20: e.iter().filter(|x| **x <= TARGET_MAX).count(),
    }
}

/// Heading of the whole-program section of `docs/FIDELITY.md`.
pub const HEADING: &str = "## Whole programs";

/// The whole-program section of `docs/FIDELITY.md` (deterministic).
pub fn whole_markdown(rec: Option<&WholeRecord>, rows: &[WholeRow], skipped: &[(&str, &str)]) -> String {
    let mut s = format!("{HEADING}\n\n");
    s.push_str(
        "Every program of a committed GPU trace with clocks, instrumented as `hopsync gpu pack` writes it,
ran on silicon (`hopsync calibrate pack`, `cosim/gpu/runner/calibrate_all.sh`); per CTA, its duration
is the last `%clock64` its threads traced minus the first (cosim/src/gpu/trace.rs `cta_clock_spans`).
The RTL engine runs the same instrumented text; error = (RTL - silicon) / silicon per CTA. Target
(issue 13): median |error| at most 10%, 90th percentile at most 25%.

",
    );
    let Some(rec) = rec else {
        s.push_str("No whole-program record yet (`cosim/traces/sm90/calibration/whole/whole_programs.json`): run the calibration batch.\n");
        return s;
    };
    let st = whole_stats(rows);
    s.push_str(&format!(
        "Silicon: {}, driver {}, nvcc {}, cc {}, {}{}.\n\n",
        rec.provenance.gpu,
        rec.provenance.driver,
        rec.provenance.nvcc,
        rec.provenance.compute_capability,
        rec.provenance.date_utc,
        if rec.provenance.clocks.is_empty() { String::new() } else { format!("; clocks {}", rec.provenance.clocks) }
    ));
    s.push_str(&format!(
        "**Median error {:.1}%, 90th percentile {:.1}%**, max {:.1}%, over {} CTAs of {} programs; {} within 10%, {} within 20%.\n\n",
        st.median * 100.0,
        st.p90 * 100.0,
        st.max * 100.0,
        st.ctas,
        st.programs,
        st.within_10,
        st.within_20
    ));
    for (n, why) in skipped {
        s.push_str(&format!("Left out: `{n}` ({why}).\n"));
    }
    s.push_str("\n| program | card | CTAs | silicon median (cycles) | RTL median (cycles) | median error | worst CTA |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    let med = |v: &[Option<u64>]| quantile(&v.iter().flatten().map(|&x| x as f64).collect::<Vec<_>>(), 0.5);
    for r in rows {
        let si = med(&r.silicon);
        match &r.rtl {
            Ok(rtl) => {
                let e = r.errors();
                let worst = e.iter().cloned().fold(0.0, |a: f64, b| if b.abs() > a.abs() { b } else { a });
                let m = quantile(&e.iter().map(|x| x.abs()).collect::<Vec<_>>(), 0.5);
                s.push_str(&format!("| `{}` | {} | {} | {si:.0} | {:.0} | {:.1}% | {:+.1}% |\n", r.name, r.card, e.len(), med(rtl), m * 100.0, worst * 100.0));
            }
            Err(e) => s.push_str(&format!("| `{}` | {} | - | {si:.0} | {} | - | - |\n", r.name, r.card, e.lines().next().unwrap_or("").replace('|', "\\|"))),
        }
    }
    s
}

/// Where the whole-program record is read and written, under a records folder.
pub fn path_in(records: &Path) -> PathBuf {
    records.join(FILE)
}
