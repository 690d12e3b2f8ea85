//! The committed trace format (`cosim/traces/sm90/<program>.json`) and `hopsync gpu import`, which
//! builds it from the GPU runner's results.
//!
//! ```text
//! {
//!   "format": "hopsync-gpu-trace/2",
//!   "name": "pipeline", "program": "firmware/programs/demo/pipeline.ptx",
//!   "provenance": { "gpu", "driver", "nvcc", "cuda_driver_api", "compute_capability", "date_utc",
//!                   "program_fnv64", "instrumented_fnv64", "runner", "elapsed_ms" },
//!   "interleaving_dependent": false,
//!   "launch": { "grid", "block", "cluster", "dynamic_smem" },
//!   "status": "ok" | "error" | "timeout" | ..., "error": "CUDA_ERROR_... (phase): message",
//!   "outputs": { buffer: hex },          // the instrumented run's output buffers (trace excluded)
//!   "plain": { "status", "error", "outputs" },   // the same program run unchanged
//!   "trace": {
//!     "layout": { "threads", "slots", "header_bytes" },
//!     "counts": [u32 per thread],        // slots each thread wrote; > slots means overflow
//!     "values": ["0001000080000000", ...],   // distinct slot values (hex u64)
//!     "sequences": ["0 1 1 2", ...],     // distinct per-thread slot sequences: indices into values
//!     "thread_sequence": [0, 0, 1, ...], // per thread: its sequence
//!     "clocks": [                        // per timed instruction: its clock_delta distribution
//!       { "pc", "line", "instr", "opcode", "samples", "median", "min", "max",
//!         "deltas": "2*96 3*30 41*2" }   // DELTA*COUNT, ascending
//!     ]
//!   }
//! }
//! ```
//! Slot values are described in [`crate::gpu::instrument`]. `values` and `sequences` hold the
//! value slots only: the `%clock64` slots (`clock_before`, `clock_delta`) differ in every thread,
//! so they would defeat the deduplication. They are split off at import into `clocks`, one
//! histogram of `clock_delta` per instruction (format 2; format 1 had no clocks). The
//! `clock_before` slots are checked at import (non-decreasing along each thread: a thread's clock
//! never runs backwards) and not kept.

use crate::gpu::instrument::{slot_field, slot_value, slot_value48, Field, FieldKind, Layout};
use crate::gpu::pack::{pack_with, PackMeta};
use crate::gpu::{FORMAT, TRACE_BUFFER};
use crate::report::hex;
use hopsync_firmware::manifest::Launch;
use hopsync_firmware::Program;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Where and with what a trace was recorded.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Provenance {
    /// GPU name (nvidia-smi).
    pub gpu: String,
    /// Driver version (nvidia-smi).
    pub driver: String,
    /// nvcc version (`nvcc --version`), e.g. `V13.0.88`.
    pub nvcc: String,
    /// cuDriverGetVersion, as reported by the runner.
    #[serde(default)]
    pub cuda_driver_api: String,
    /// Compute capability, as reported by the runner.
    #[serde(default)]
    pub compute_capability: String,
    /// When the batch ran (UTC, ISO 8601).
    pub date_utc: String,
    /// FNV-1a 64 of the program's PTX text.
    pub program_fnv64: String,
    /// FNV-1a 64 of the instrumented PTX text the GPU ran.
    pub instrumented_fnv64: String,
    /// How it was run.
    pub runner: String,
    /// Kernel time of the instrumented launch (launch to synchronize, host clock).
    #[serde(default)]
    pub elapsed_ms: Option<f64>,
}

/// The unchanged program's run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlainRun {
    /// Runner status.
    pub status: String,
    /// Error text.
    #[serde(default)]
    pub error: Option<String>,
    /// Output buffers (hex).
    #[serde(default)]
    pub outputs: BTreeMap<String, String>,
}

/// The trace buffer, deduplicated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceData {
    /// Shape.
    pub layout: Layout,
    /// Per thread: slots written (the raw counter; above `layout.slots` is an overflow).
    pub counts: Vec<u32>,
    /// Distinct slot values, hex.
    pub values: Vec<String>,
    /// Distinct per-thread sequences: space-separated indices into `values`.
    pub sequences: Vec<String>,
    /// Per thread: index into `sequences`.
    pub thread_sequence: Vec<u32>,
    /// Per timed instruction: the distribution of its `clock_delta` slots.
    #[serde(default)]
    pub clocks: Vec<ClockInstr>,
}

/// One instruction's `clock_delta` samples over all threads (instrument.rs: `%clock64` before
/// the instruction to after the first read of its result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockInstr {
    /// Instruction index in the original program.
    pub pc: u32,
    /// Source line.
    pub line: u32,
    /// The instruction as PTX text.
    pub instr: String,
    /// Its mnemonic with modifiers (the text up to the first blank, guard left out): what
    /// per-opcode figures group by.
    pub opcode: String,
    /// Number of samples.
    pub samples: u64,
    /// Median cycles ([`Histogram::median`]).
    pub median: f64,
    /// Fewest cycles.
    pub min: u64,
    /// Most cycles.
    pub max: u64,
    /// `DELTA*COUNT` pairs, ascending by delta.
    pub deltas: String,
}

/// Cycle samples as counts per value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram(pub BTreeMap<u64, u64>);

impl Histogram {
    /// Adds one sample.
    pub fn add(&mut self, v: u64) {
        *self.0.entry(v).or_default() += 1;
    }
    /// Adds every sample of another histogram.
    pub fn merge(&mut self, o: &Histogram) {
        for (v, n) in &o.0 {
            *self.0.entry(*v).or_default() += n;
        }
    }
    /// Number of samples.
    pub fn samples(&self) -> u64 {
        self.0.values().sum()
    }
    /// The median: the middle sample, or the mean of the two middle ones (as `calib::median`).
    pub fn median(&self) -> f64 {
        let n = self.samples();
        if n == 0 {
            return 0.0;
        }
        let nth = |k: u64| {
            let mut seen = 0;
            for (v, c) in &self.0 {
                seen += c;
                if seen > k {
                    return *v;
                }
            }
            0
        };
        if n % 2 == 1 {
            nth(n / 2) as f64
        } else {
            (nth(n / 2 - 1) + nth(n / 2)) as f64 / 2.0
        }
    }
    /// `DELTA*COUNT` text.
    pub fn text(&self) -> String {
        self.0.iter().map(|(v, n)| format!("{v}*{n}")).collect::<Vec<_>>().join(" ")
    }
    /// Parses [`Histogram::text`].
    pub fn parse(s: &str) -> Result<Histogram, String> {
        let mut h = Histogram::default();
        for w in s.split_whitespace() {
            let (v, n) = w.split_once('*').ok_or_else(|| format!("bad histogram entry `{w}`"))?;
            let v: u64 = v.parse().map_err(|_| format!("bad histogram entry `{w}`"))?;
            let n: u64 = n.parse().map_err(|_| format!("bad histogram entry `{w}`"))?;
            *h.0.entry(v).or_default() += n;
        }
        Ok(h)
    }
}

impl ClockInstr {
    /// The samples.
    pub fn histogram(&self) -> Result<Histogram, String> {
        Histogram::parse(&self.deltas)
    }
}

/// The mnemonic of an instruction's text: up to the first blank, a leading guard left out.
pub fn opcode_of(instr: &str) -> String {
    let t = instr.trim();
    let t = if t.starts_with('@') { t.split_once(char::is_whitespace).map(|x| x.1).unwrap_or(t).trim_start() } else { t };
    t.split_whitespace().next().unwrap_or("").trim_end_matches(';').to_string()
}

/// Splits per-thread slots into the value slots and, per timed instruction, the `clock_delta`
/// distribution. Errors on a slot that names no field, and on a thread whose `clock_before`
/// readings run backwards (then the slots are not clocks).
pub fn split_clocks(fields: &[Field], slots: &[Vec<u64>]) -> Result<(Vec<Vec<u64>>, Vec<ClockInstr>), String> {
    let mut values = Vec::with_capacity(slots.len());
    let mut hist: BTreeMap<u32, Histogram> = BTreeMap::new();
    for (t, s) in slots.iter().enumerate() {
        let mut v = Vec::with_capacity(s.len());
        let mut last_before = 0u64;
        for (k, &slot) in s.iter().enumerate() {
            let f = slot_field(slot).and_then(|i| fields.get(i as usize));
            match f.map(|f| f.kind) {
                Some(FieldKind::ClockBefore) => {
                    let b = slot_value48(slot);
                    if b < last_before {
                        return Err(format!("thread {t} slot {k}: clock_before {b} after {last_before}: the clock runs backwards"));
                    }
                    last_before = b;
                }
                Some(FieldKind::ClockDelta) => hist.entry(f.unwrap().pc).or_default().add(slot_value(slot) as u64),
                // Value slots, and slots that name no field (kept: replay reports them as `sequence`).
                _ => v.push(slot),
            }
        }
        values.push(v);
    }
    let clocks = hist
        .into_iter()
        .map(|(pc, h)| {
            let f = fields.iter().find(|f| f.pc == pc).expect("field of a clock slot");
            ClockInstr {
                pc,
                line: f.line,
                instr: f.instr.clone(),
                opcode: opcode_of(&f.instr),
                samples: h.samples(),
                median: h.median(),
                min: h.0.keys().next().copied().unwrap_or(0),
                max: h.0.keys().next_back().copied().unwrap_or(0),
                deltas: h.text(),
            }
        })
        .collect();
    Ok((values, clocks))
}

/// Per CTA of the grid, the first and the last `%clock64` its threads traced: the smallest
/// `clock_before` and the largest `clock_before + clock_delta` (a timed instruction's start and
/// the read after its result). `slots` are per linear thread (instrument.rs layout), so thread `t`
/// belongs to CTA `t / threads_per_cta`; None for a CTA that traced no clock. This is the
/// whole-program duration `hopsync calibrate` sets beside the RTL engine's.
pub fn cta_clock_spans(fields: &[Field], slots: &[Vec<u64>], threads_per_cta: usize) -> Vec<Option<(u64, u64)>> {
    let ctas = slots.len().div_ceil(threads_per_cta.max(1));
    let mut spans: Vec<Option<(u64, u64)>> = vec![None; ctas];
    for (t, s) in slots.iter().enumerate() {
        let span = &mut spans[t / threads_per_cta.max(1)];
        let mut before = None;
        for &slot in s {
            match slot_field(slot).and_then(|i| fields.get(i as usize)).map(|f| f.kind) {
                Some(FieldKind::ClockBefore) => {
                    let b = slot_value48(slot);
                    before = Some(b);
                    *span = Some(span.map_or((b, b), |(lo, hi)| (lo.min(b), hi.max(b))));
                }
                Some(FieldKind::ClockDelta) => {
                    if let (Some(b), Some((lo, hi))) = (before, *span) {
                        *span = Some((lo, hi.max(b + slot_value(slot) as u64)));
                    }
                }
                _ => {}
            }
        }
    }
    spans
}

impl TraceData {
    /// Builds the deduplicated form from per-thread value slots (see [`split_clocks`]) and the
    /// clock distributions.
    pub fn new(layout: Layout, counts: Vec<u32>, slots: &[Vec<u64>], clocks: Vec<ClockInstr>) -> TraceData {
        let mut values = Vec::new();
        let mut vindex: HashMap<u64, usize> = HashMap::new();
        let mut sequences: Vec<String> = Vec::new();
        let mut sindex: HashMap<String, u32> = HashMap::new();
        let mut thread_sequence = Vec::new();
        for t in slots {
            let seq: Vec<String> = t
                .iter()
                .map(|v| {
                    let n = vindex.len();
                    let i = *vindex.entry(*v).or_insert_with(|| {
                        values.push(format!("{v:016x}"));
                        n
                    });
                    i.to_string()
                })
                .collect();
            let s = seq.join(" ");
            let n = sindex.len() as u32;
            let i = *sindex.entry(s.clone()).or_insert_with(|| {
                sequences.push(s);
                n
            });
            thread_sequence.push(i);
        }
        TraceData { layout, counts, values, sequences, thread_sequence, clocks }
    }

    /// Per thread: the stored slots.
    pub fn threads(&self) -> Result<Vec<Vec<u64>>, String> {
        let values: Vec<u64> = self.values.iter().map(|h| u64::from_str_radix(h, 16).map_err(|e| format!("bad value {h}: {e}"))).collect::<Result<_, _>>()?;
        let seqs: Vec<Vec<u64>> = self
            .sequences
            .iter()
            .map(|s| {
                s.split_whitespace()
                    .map(|i| i.parse::<usize>().ok().and_then(|i| values.get(i).copied()).ok_or_else(|| format!("bad sequence index {i}")))
                    .collect::<Result<Vec<u64>, String>>()
            })
            .collect::<Result<_, _>>()?;
        self.thread_sequence.iter().map(|&i| seqs.get(i as usize).cloned().ok_or_else(|| format!("bad sequence {i}"))).collect()
    }
}

/// One committed trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceFile {
    /// [`FORMAT`].
    pub format: String,
    /// Program name.
    pub name: String,
    /// Program path relative to the repository root.
    pub program: String,
    /// Provenance.
    pub provenance: Provenance,
    /// The manifest's `interleaving_dependent`: then only outputs are compared.
    pub interleaving_dependent: bool,
    /// Launch shape.
    pub launch: Launch,
    /// Runner status of the instrumented launch.
    pub status: String,
    /// Error text.
    #[serde(default)]
    pub error: Option<String>,
    /// Output buffers of the instrumented launch (hex), the trace buffer excluded.
    pub outputs: BTreeMap<String, String>,
    /// The unchanged program's launch.
    pub plain: PlainRun,
    /// The trace (absent when the launch failed).
    pub trace: Option<TraceData>,
}

/// One launch's result file, as the runner writes it (`cosim/gpu/runner/README.md`).
#[derive(Debug, Clone, Default)]
pub struct RunnerResult {
    /// `ok`, `error`, `timeout`, `crashed`, ...
    pub status: String,
    /// `CUDA_ERROR_...`.
    pub error: Option<String>,
    /// Failing phase.
    pub phase: Option<String>,
    /// cuGetErrorString.
    pub message: Option<String>,
    /// JIT log lines.
    pub jit: Vec<String>,
    /// Kernel milliseconds.
    pub elapsed_ms: Option<f64>,
    /// Output buffers: name -> file.
    pub outputs: BTreeMap<String, String>,
}

impl RunnerResult {
    /// Parses a result file.
    pub fn parse(text: &str) -> RunnerResult {
        let mut r = RunnerResult::default();
        for line in text.lines() {
            let (k, v) = line.split_once(' ').unwrap_or((line, ""));
            match k {
                "status" => r.status = v.trim().into(),
                "error" => r.error = Some(v.trim().into()),
                "phase" => r.phase = Some(v.trim().into()),
                "message" => r.message = Some(v.trim().into()),
                "jit" => r.jit.push(v.into()),
                "elapsed_ms" => r.elapsed_ms = v.trim().parse().ok(),
                "output" => {
                    let mut it = v.split_whitespace();
                    if let (Some(n), Some(f)) = (it.next(), it.next()) {
                        r.outputs.insert(n.into(), f.into());
                    }
                }
                _ => {}
            }
        }
        r
    }

    /// One-line error description.
    pub fn error_text(&self) -> Option<String> {
        if self.status == "ok" {
            return None;
        }
        let mut s = self.error.clone().unwrap_or_else(|| self.status.clone());
        if let Some(p) = &self.phase {
            s.push_str(&format!(" ({p})"));
        }
        if let Some(m) = &self.message {
            s.push_str(&format!(": {m}"));
        }
        if !self.jit.is_empty() {
            s.push_str(&format!("; JIT log: {}", self.jit.join(" | ")));
        }
        Some(s)
    }
}

/// Reads a result file (missing: status "missing").
pub fn read_result(dir: &Path, launch: &str) -> RunnerResult {
    match std::fs::read_to_string(dir.join(format!("{launch}.result"))) {
        Ok(t) => RunnerResult::parse(&t),
        Err(_) => RunnerResult { status: "missing".into(), ..Default::default() },
    }
}

/// Device provenance from `env.txt` and `device.txt` of a results folder (written by
/// `run_batch.sh` and the runner).
pub fn read_provenance(dir: &Path) -> Provenance {
    let mut p = Provenance { runner: "cosim/gpu/runner/runner.cpp (nvcc -O2 -arch=sm_90, CUDA driver API JIT)".into(), ..Default::default() };
    let kv = |file: &str| -> Vec<(String, String)> {
        std::fs::read_to_string(dir.join(file)).unwrap_or_default().lines().filter_map(|l| l.split_once(' ').map(|(k, v)| (k.to_string(), v.trim().to_string()))).collect()
    };
    for (k, v) in kv("env.txt") {
        match k.as_str() {
            "date_utc" => p.date_utc = v,
            "nvidia_smi" if !v.contains(": ") => {
                let mut it = v.split(',').map(|s| s.trim().to_string());
                p.gpu = it.next().unwrap_or_default();
                p.driver = it.next().unwrap_or_default();
            }
            "nvcc" => {
                p.nvcc = v
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .find(|w| w.starts_with('V') && w[1..].starts_with(|c: char| c.is_ascii_digit()))
                    .map(String::from)
                    .unwrap_or(v);
            }
            _ => {}
        }
    }
    for (k, v) in kv("device.txt") {
        match k.as_str() {
            "driver_api" => p.cuda_driver_api = v,
            "cc" => p.compute_capability = v,
            "device" if p.gpu.is_empty() => p.gpu = v,
            _ => {}
        }
    }
    p
}

fn read_outputs(dir: &Path, r: &RunnerResult, skip: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (name, file) in &r.outputs {
        if name == skip {
            continue;
        }
        let b = std::fs::read(dir.join(file)).map_err(|e| format!("cannot read {file}: {e}"))?;
        out.insert(name.clone(), hex(&b));
    }
    Ok(out)
}

/// Builds the trace file of one packed program from a results folder. `root` is the repository
/// root the program path is relative to.
pub fn import_one(results: &Path, meta: &PackMeta, root: &Path) -> Result<TraceFile, String> {
    if meta.format != FORMAT {
        return Err(format!("packed with format {}, this hopsync reads {FORMAT}", meta.format));
    }
    let mut prog = Program::load(&root.join(&meta.program)).map_err(|d| d.to_string())?;
    prog.path = meta.program.clone();
    let h = crate::gpu::fnv64_hex(&prog.portable_source());
    if h != meta.program_fnv64 {
        return Err(format!("{} changed since it was packed (fnv64 {h}, packed {}): pack and run it again", meta.program, meta.program_fnv64));
    }
    let p = pack_with(&prog, meta.layout.slots)?;
    if p.instrumented_fnv64 != meta.instrumented_fnv64 {
        return Err(format!("the instrumentation of {} changed since it was packed: pack and run it again", meta.program));
    }
    let mut prov = read_provenance(results);
    prov.program_fnv64 = meta.program_fnv64.clone();
    prov.instrumented_fnv64 = meta.instrumented_fnv64.clone();
    let r = read_result(results, &meta.traced_launch);
    prov.elapsed_ms = r.elapsed_ms;
    let plain_r = read_result(results, &meta.plain_launch);
    let outputs = read_outputs(results, &r, TRACE_BUFFER)?;
    let trace = match r.outputs.get(TRACE_BUFFER) {
        Some(f) if r.status == "ok" => {
            let b = std::fs::read(results.join(f)).map_err(|e| format!("cannot read {f}: {e}"))?;
            if b.len() as u64 != meta.layout.bytes() {
                return Err(format!("trace buffer {f} has {} bytes, expected {}", b.len(), meta.layout.bytes()));
            }
            let (counts, slots) = meta.layout.decode(&b);
            let (values, clocks) = split_clocks(&p.fields, &slots)?;
            Some(TraceData::new(meta.layout, counts, &values, clocks))
        }
        _ => None,
    };
    Ok(TraceFile {
        format: FORMAT.into(),
        name: meta.name.clone(),
        program: meta.program.clone(),
        provenance: prov,
        interleaving_dependent: prog.manifest.interleaving_dependent,
        launch: prog.manifest.launch.clone(),
        status: r.status.clone(),
        error: r.error_text(),
        outputs,
        plain: PlainRun { status: plain_r.status.clone(), error: plain_r.error_text(), outputs: read_outputs(results, &plain_r, "")? },
        trace,
    })
}

/// What import did with one packed program.
#[derive(Debug, Clone)]
pub struct Imported {
    /// Program name.
    pub name: String,
    /// The written file, or why none was written.
    pub result: Result<(String, TraceFile), String>,
}

/// `hopsync gpu import`: every `*.pack.json` in `results` becomes `traces/<name>.json`.
pub fn import(results: &Path, traces: &Path, root: &Path) -> Result<Vec<Imported>, String> {
    let mut metas: Vec<_> = std::fs::read_dir(results)
        .map_err(|e| format!("cannot read {}: {e}", results.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".pack.json"))
        .collect();
    metas.sort();
    if metas.is_empty() {
        return Err(format!("{} holds no *.pack.json (run_batch.sh copies them from the batch folder)", results.display()));
    }
    std::fs::create_dir_all(traces).map_err(|e| format!("cannot create {}: {e}", traces.display()))?;
    let mut out = Vec::new();
    for mp in metas {
        let text = std::fs::read_to_string(&mp).map_err(|e| format!("{}: {e}", mp.display()))?;
        let meta: PackMeta = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", mp.display()))?;
        let result = import_one(results, &meta, root).and_then(|t| {
            let file = traces.join(format!("{}.json", meta.name));
            std::fs::write(&file, to_json(&t)).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            Ok((file.display().to_string(), t))
        });
        out.push(Imported { name: meta.name.clone(), result });
    }
    Ok(out)
}

/// The committed JSON text of a trace.
pub fn to_json(t: &TraceFile) -> String {
    let mut s = compact_number_arrays(&serde_json::to_string_pretty(t).expect("trace serializes"));
    s.push('\n');
    s
}

/// Puts arrays of plain numbers of pretty-printed JSON on one line.
pub fn compact_number_arrays(pretty: &str) -> String {
    let lines: Vec<&str> = pretty.lines().collect();
    let mut out = String::with_capacity(pretty.len());
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.ends_with('[') {
            let mut j = i + 1;
            let mut items = Vec::new();
            while j < lines.len() {
                let t = lines[j].trim();
                let item = t.trim_end_matches(',');
                if !item.is_empty() && item.parse::<f64>().is_ok() && !t.starts_with(']') {
                    items.push(item);
                    j += 1;
                } else {
                    break;
                }
            }
            if j < lines.len() && !items.is_empty() && lines[j].trim().trim_end_matches(',') == "]" {
                out.push_str(l);
                out.push_str(&items.join(", "));
                out.push_str(lines[j].trim());
                out.push('\n');
                i = j + 1;
                continue;
            }
        }
        out.push_str(l);
        out.push('\n');
        i += 1;
    }
    out.pop();
    out
}

/// Reads a trace file.
pub fn read_trace(path: &Path) -> Result<TraceFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(id: u32, kind: FieldKind) -> Field {
        Field { id, pc: id, line: id, instr: "x".into(), kind, reg: "%r0".into() }
    }

    fn slot(id: u32, v: u64) -> u64 {
        ((id as u64 + 1) << 48) | v
    }

    /// Two CTAs of two threads: CTA 0's first clock_before is 100 and its last end 100 + 500
    /// (both thread 1; thread 0 ends at 400 + 35); value slots are ignored. CTA 1 traced no clock.
    #[test]
    fn cta_clock_spans_take_the_first_start_and_the_last_end() {
        let fields = [field(0, FieldKind::ClockBefore), field(1, FieldKind::ClockDelta), field(2, FieldKind::WaitComplete)];
        let slots = vec![
            vec![slot(0, 150), slot(1, 20), slot(2, 1), slot(0, 400), slot(1, 35)],
            vec![slot(0, 100), slot(1, 500)],
            vec![slot(2, 1)],
            vec![],
        ];
        assert_eq!(cta_clock_spans(&fields, &slots, 2), vec![Some((100, 600)), None]);
        // the earliest start and the latest end may come from different threads
        let slots = vec![vec![slot(0, 150), slot(1, 20)], vec![slot(0, 100), slot(1, 10)]];
        assert_eq!(cta_clock_spans(&fields, &slots, 2), vec![Some((100, 170))]);
    }
}
