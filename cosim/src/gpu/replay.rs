//! `hopsync gpu replay`: every committed trace against the golden engine (or, through
//! [`replay_trace_on`], any engine: `hopsync gpu replay --engine rtl` runs the RTL engine).
//!
//! Per trace: re-pack the program from the repository with the trace's slot count (its hash must
//! match the trace's, else the trace is *stale*), run the instrumented program on the engine,
//! compare the output buffers and then, unless the manifest says
//! `interleaving_dependent = true`, the value slots thread by thread.
//!
//! ## Timing
//!
//! The `%clock64` slots (instrument.rs) are never compared for equality: they are timing. Replay
//! sets the engine's `clock_delta` distribution beside the silicon one, per program and opcode
//! ([`TimingRow`]; the golden engine's clock is its scheduler step, so only the RTL engine's
//! figures are cycles). [`timing_by_opcode`] merges them over all programs.
//!
//! ## Mismatch classes
//!
//! | class | expected | meaning |
//! | --- | --- | --- |
//! | `output` | no | an output buffer differs |
//! | `plain-output` | no | the GPU's outputs with and without instrumentation differ |
//! | `sequence` | no | a thread's slot names another instruction, or the threads wrote different numbers of slots |
//! | `overflow` | no | a thread wrote more slots than it has |
//! | `wait-result` | no | test_wait / try_wait answered differently (after collapsing polling runs, within one wait instruction and across consecutive ones: [`collapse_wait_runs`]) |
//! | `pending-count` | no | `mbarrier.pending_count` differs |
//! | `value` | no | bar.red / elect / vote / match / redux / activemask differ |
//! | `token-parity` | no | the phase parity (bit 63) of an arrive token differs |
//! | `token-encoding` | yes | token bits differ with equal parity while the golden model's mbarrier word layout is not sm_90's (docs/MBARRIER_ENCODING.md); for `.noComplete` low halves: sm_90 returns the lane-group mask there |
//! | `token-order` | yes | with sm_90's layout on both sides, equal parity but other pending/tx bits: the order in which arrivals reached the barrier differs (warps and async completions interleave differently; on silicon this order changes from run to run, and a warp's plain arrives merge into one operation) |

use crate::gpu::instrument::{slot_field, slot_value, Field, FieldKind};
use crate::gpu::pack::pack_with;
use crate::gpu::trace::{read_trace, split_clocks, ClockInstr, Histogram, TraceFile};
use crate::gpu::{fnv64_hex, FORMAT, TRACE_BUFFER};
use crate::machine::{Config, Machine, Outcome};
use crate::report::hex;
use hopsync_firmware::Program;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Mismatches listed per program (all are counted).
pub const LISTED: usize = 12;
/// Mismatches listed per class.
pub const LISTED_PER_CLASS: u64 = 4;

/// One mismatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    /// Class (module doc).
    pub class: String,
    /// Whether the class is expected.
    pub expected: bool,
    /// Linear thread id in the grid (None for output mismatches).
    pub thread: Option<u32>,
    /// CTA linear id and linear thread id in it.
    pub cta: Option<u32>,
    /// Thread id in its CTA.
    pub tid: Option<u32>,
    /// Slot index.
    pub slot: Option<u32>,
    /// Original instruction index.
    pub pc: Option<u32>,
    /// Source line.
    pub line: Option<u32>,
    /// Instruction text.
    pub instr: Option<String>,
    /// Field (or buffer) compared.
    pub field: String,
    /// The GPU's value.
    pub gpu: String,
    /// The golden engine's value.
    pub golden: String,
}

impl Mismatch {
    /// One line for humans.
    pub fn text(&self) -> String {
        let mut s = format!("[{}{}] ", self.class, if self.expected { ", expected" } else { "" });
        if let (Some(pc), Some(instr)) = (self.pc, &self.instr) {
            s.push_str(&format!("pc {pc} line {} `{instr}` ", self.line.unwrap_or(0)));
        }
        if let Some(t) = self.thread {
            s.push_str(&format!("thread {t} (cta {} tid {}) ", self.cta.unwrap_or(0), self.tid.unwrap_or(0)));
        }
        if let Some(k) = self.slot {
            s.push_str(&format!("slot {k} "));
        }
        s.push_str(&format!("{}: gpu {} golden {}", self.field, self.gpu, self.golden));
        s
    }
}

/// Count of one class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClassCount {
    /// Mismatches.
    pub count: u64,
    /// Whether the class is expected.
    pub expected: bool,
}

/// The replay of one trace.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProgramReplay {
    /// Program name.
    pub name: String,
    /// Program path.
    pub program: String,
    /// The engine replayed on (`golden`, `rtl`).
    pub engine: String,
    /// `equal`, `expected-mismatches`, `mismatch`, `stale`, `gpu-error`, `ENGINE-error`
    /// (`golden-error`, `rtl-error`), `error`.
    pub status: String,
    /// Why (stale, errors).
    pub detail: Option<String>,
    /// The trace's GPU.
    pub gpu: String,
    /// Only outputs compared.
    pub interleaving_dependent: bool,
    /// Output buffers compared.
    pub outputs_compared: usize,
    /// Threads whose slots were compared.
    pub threads_compared: u32,
    /// Slots compared (pairs).
    pub slots_compared: u64,
    /// Distinct instructions whose slots were compared.
    pub instructions_compared: usize,
    /// Distinct trace fields whose slots were compared.
    pub fields_compared: usize,
    /// Trace fields of the program.
    pub fields: usize,
    /// Mismatches by class.
    pub classes: BTreeMap<String, ClassCount>,
    /// The first mismatches.
    pub mismatches: Vec<Mismatch>,
    /// Remarks (golden findings, polling, ...).
    pub notes: Vec<String>,
    /// Per opcode: silicon's and the engine's `clock_delta` cycles.
    pub timing: Vec<TimingRow>,
    /// Per traced instruction (by program counter): silicon's and the engine's `clock_delta`
    /// medians, so a gap can be traced to its source line.
    #[serde(default)]
    pub by_line: Vec<LineTiming>,
}

/// One traced instruction's `clock_delta` medians, silicon beside an engine.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LineTiming {
    /// Instruction index in the original program.
    pub pc: u32,
    /// Source line.
    pub line: u32,
    /// The instruction as PTX text.
    pub instr: String,
    /// Silicon: number of samples.
    pub silicon_samples: u64,
    /// Silicon: median cycles.
    pub silicon_median: f64,
    /// Engine: number of samples (0: the engine never ran the instruction).
    pub engine_samples: u64,
    /// Engine: median (cycles for the RTL engine, scheduler steps for the golden one).
    pub engine_median: f64,
}

/// One opcode's `clock_delta` samples of one program (or, from [`timing_by_opcode`], of all),
/// silicon beside an engine.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TimingRow {
    /// Mnemonic with modifiers (`trace::opcode_of`).
    pub opcode: String,
    /// Programs the samples come from.
    pub programs: u32,
    /// Silicon: number of samples.
    pub silicon_samples: u64,
    /// Silicon: median cycles.
    pub silicon_median: f64,
    /// Engine: number of samples.
    pub engine_samples: u64,
    /// Engine: median (cycles for the RTL engine, scheduler steps for the golden one).
    pub engine_median: f64,
    /// Silicon samples, `DELTA*COUNT`.
    pub silicon_deltas: String,
    /// Engine samples, `DELTA*COUNT`.
    pub engine_deltas: String,
}

impl TimingRow {
    /// (engine - silicon) / silicon of the medians (None without samples on either side).
    pub fn rel_error(&self) -> Option<f64> {
        (self.silicon_samples > 0 && self.engine_samples > 0 && self.silicon_median > 0.0).then(|| (self.engine_median - self.silicon_median) / self.silicon_median)
    }
}

fn by_opcode(clocks: &[ClockInstr]) -> BTreeMap<String, Histogram> {
    let mut m: BTreeMap<String, Histogram> = BTreeMap::new();
    for c in clocks {
        if let Ok(h) = c.histogram() {
            // Format-2 traces recorded before `opcode_of` dropped a trailing `;` (operand-less
            // instructions) carry it: one name per opcode either way.
            m.entry(c.opcode.trim_end_matches(';').to_string()).or_default().merge(&h);
        }
    }
    m
}

fn timing_rows(silicon: &[ClockInstr], engine: &[ClockInstr]) -> Vec<TimingRow> {
    let (s, e) = (by_opcode(silicon), by_opcode(engine));
    let mut keys: Vec<&String> = s.keys().chain(e.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let empty = Histogram::default();
            let (hs, he) = (s.get(k).unwrap_or(&empty), e.get(k).unwrap_or(&empty));
            TimingRow::of(k.clone(), 1, hs, he)
        })
        .collect()
}

/// One row per instruction silicon traced, the engine's figures matched by program counter (the
/// per-opcode rows mix every instance of an opcode: a gap's source line is only seen here).
fn line_rows(silicon: &[ClockInstr], engine: &[ClockInstr]) -> Vec<LineTiming> {
    let engine: BTreeMap<u32, &ClockInstr> = engine.iter().map(|c| (c.pc, c)).collect();
    silicon
        .iter()
        .map(|s| {
            let e = engine.get(&s.pc);
            LineTiming {
                pc: s.pc,
                line: s.line,
                instr: s.instr.clone(),
                silicon_samples: s.samples,
                silicon_median: s.median,
                engine_samples: e.map_or(0, |e| e.samples),
                engine_median: e.map_or(0.0, |e| e.median),
            }
        })
        .collect()
}

/// Merges the per-program timing rows of replays into one row per opcode (medians over all
/// samples of all programs).
pub fn timing_by_opcode(reports: &[ProgramReplay]) -> Vec<TimingRow> {
    let mut m: BTreeMap<String, (u32, Histogram, Histogram)> = BTreeMap::new();
    for r in reports {
        for t in &r.timing {
            let e = m.entry(t.opcode.clone()).or_default();
            e.0 += 1;
            e.1.merge(&Histogram::parse(&t.silicon_deltas).unwrap_or_default());
            e.2.merge(&Histogram::parse(&t.engine_deltas).unwrap_or_default());
        }
    }
    m.into_iter()
        .map(|(opcode, (programs, hs, he))| TimingRow::of(opcode, programs, &hs, &he))
        .collect()
}

impl TimingRow {
    /// The row of `opcode` over `programs` programs from its silicon and engine histograms.
    fn of(opcode: String, programs: u32, hs: &Histogram, he: &Histogram) -> TimingRow {
        TimingRow {
            opcode,
            programs,
            silicon_samples: hs.samples(),
            silicon_median: hs.median(),
            engine_samples: he.samples(),
            engine_median: he.median(),
            silicon_deltas: hs.text(),
            engine_deltas: he.text(),
        }
    }
}

/// What an engine's run of an instrumented program gives replay.
#[derive(Debug, Clone, Default)]
pub struct EngineRun {
    /// Buffers by name: the manifest's output buffers and the trace buffer.
    pub buffers: BTreeMap<String, Vec<u8>>,
    /// Why the run did not complete (a fault finding, `unsupported: ...`).
    pub error: Option<String>,
    /// Findings, as text.
    pub findings: Vec<String>,
}

/// Runs an instrumented program on the golden engine, under the undefined-behaviour mode of its
/// manifest (`ub = "warn"`: a program known to do something undefined runs to the end, its
/// findings become notes of the replay).
pub fn run_golden(p: &Program) -> EngineRun {
    let mut m = Machine::new(p, Config::of_program(p));
    let outcome = m.run();
    let mut run = EngineRun::default();
    match &outcome {
        Outcome::Completed => {}
        Outcome::Fault => {
            let f = m.findings.last().map(|f| f.to_string()).unwrap_or_default();
            run.error = Some(format!("the golden engine stopped with a finding: {f}"));
        }
        Outcome::Unsupported(s) => run.error = Some(format!("the golden engine cannot run it: {s}")),
    }
    run.findings = m.findings.iter().map(|f| f.to_string()).collect();
    for b in p.manifest.buffers.iter().filter(|b| b.output) {
        if let Some(v) = m.buffer(&b.name) {
            run.buffers.insert(b.name.clone(), v.to_vec());
        }
    }
    run
}

impl ProgramReplay {
    fn add(&mut self, m: Mismatch) {
        let c = self.classes.entry(m.class.clone()).or_default();
        c.count += 1;
        c.expected = m.expected;
        if self.mismatches.len() < LISTED && c.count <= LISTED_PER_CLASS {
            self.mismatches.push(m);
        }
    }
    /// Whether something unexpected happened (stale, errors, unexpected mismatches).
    pub fn failed(&self) -> bool {
        !matches!(self.status.as_str(), "equal" | "expected-mismatches")
    }
    /// Human summary.
    pub fn summary(&self) -> String {
        let mut s = format!("{}: {}", self.name, self.status);
        if let Some(d) = &self.detail {
            s.push_str(&format!(": {d}"));
        }
        s.push('\n');
        if matches!(self.status.as_str(), "stale" | "error" | "gpu-error") {
            return s;
        }
        s.push_str(&format!("  {} output buffer(s) compared", self.outputs_compared));
        if self.interleaving_dependent {
            s.push_str("; trace slots not compared (interleaving_dependent = true: outputs only)\n");
        } else {
            s.push_str(&format!(
                "; {} slots of {} threads compared ({} of {} trace fields, {} instructions)\n",
                self.slots_compared, self.threads_compared, self.fields_compared, self.fields, self.instructions_compared
            ));
        }
        for (c, n) in &self.classes {
            s.push_str(&format!("  {c}: {} mismatch(es){}\n", n.count, if n.expected { " (expected class)" } else { "" }));
        }
        for m in &self.mismatches {
            s.push_str(&format!("    {}\n", m.text()));
        }
        for n in &self.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
        if !self.timing.is_empty() {
            s.push_str(&format!("  clock_delta medians, silicon vs {} engine (samples):\n", self.engine));
            for t in &self.timing {
                s.push_str(&format!("    {:<52} {:>9.1} ({:>6})  {:>9.1} ({:>6})\n", t.opcode, t.silicon_median, t.silicon_samples, t.engine_median, t.engine_samples));
            }
        }
        s
    }
}

/// Whether the golden model's mbarrier word uses sm_90's layout: the token of the first arrive
/// after `mbarrier.init 1` has sm_90's high half `0x7ffff800` (docs/MBARRIER_ENCODING.md). Asked
/// of the engine itself, by running a three-instruction program.
pub fn golden_uses_silicon_encoding() -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| {
        const SRC: &str = "//! [launch]\n//! grid = [1, 1, 1]\n//! block = [1, 1, 1]\n//! [[buffer]]\n//! name = \"out\"\n//! bytes = 8\n//! output = true\n//! [[param]]\n//! name = \"out\"\n//! buffer = \"out\"\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n.reg .b64 %rd<3>;\n.shared .align 8 .b64 bar;\nmbarrier.init.shared::cta.b64 [bar], 1;\nmbarrier.arrive.shared::cta.b64 %rd1, [bar];\nld.param.u64 %rd2, [out];\nst.global.u64 [%rd2], %rd1;\nret;\n}\n";
        let Ok(p) = Program::parse("encoding-check.ptx", SRC) else { return false };
        let mut m = Machine::new(&p, Config::default());
        let _ = m.run();
        m.buffer("out").and_then(|b| b.get(4..8)).map(|b| u32::from_le_bytes(b.try_into().unwrap())) == Some(0x7fff_f800)
    })
}

fn hex32(v: u32) -> String {
    format!("0x{v:08x}")
}

/// Replays one trace on the golden engine; `root` is the repository root.
pub fn replay_trace(t: &TraceFile, root: &Path) -> ProgramReplay {
    replay_trace_on(t, root, "golden", &run_golden)
}

/// Replays one trace on an engine: `run` runs the instrumented program.
pub fn replay_trace_on(t: &TraceFile, root: &Path, engine: &str, run: &dyn Fn(&Program) -> EngineRun) -> ProgramReplay {
    let mut r = ProgramReplay {
        name: t.name.clone(),
        program: t.program.clone(),
        engine: engine.into(),
        gpu: t.provenance.gpu.clone(),
        interleaving_dependent: t.interleaving_dependent,
        ..Default::default()
    };
    if t.format != FORMAT {
        r.status = "stale".into();
        r.detail = Some(format!("trace format {} (this hopsync writes {FORMAT})", t.format));
        return r;
    }
    let mut prog = match Program::load(&root.join(&t.program)) {
        Ok(p) => p,
        Err(d) => {
            r.status = "stale".into();
            r.detail = Some(format!("stale trace: the program does not load: {d}"));
            return r;
        }
    };
    prog.path = t.program.clone();
    let h = fnv64_hex(&prog.portable_source());
    if h != t.provenance.program_fnv64 {
        r.status = "stale".into();
        r.detail = Some(format!("stale trace: {} has fnv64 {h}, the trace was recorded from {}", t.program, t.provenance.program_fnv64));
        return r;
    }
    if t.status != "ok" {
        r.status = "gpu-error".into();
        r.detail = Some(format!("the GPU run failed: {}", t.error.clone().unwrap_or_else(|| t.status.clone())));
        return r;
    }
    let slots = t.trace.as_ref().map(|d| d.layout.slots).unwrap_or(16);
    let packed = match pack_with(&prog, slots) {
        Ok(p) => p,
        Err(e) => {
            r.status = "error".into();
            r.detail = Some(format!("cannot pack: {e}"));
            return r;
        }
    };
    if packed.instrumented_fnv64 != t.provenance.instrumented_fnv64 {
        r.status = "stale".into();
        r.detail = Some(format!(
            "stale trace: the instrumented program is now fnv64 {}, the GPU ran {} (the instrumentation changed)",
            packed.instrumented_fnv64, t.provenance.instrumented_fnv64
        ));
        return r;
    }
    r.fields = packed.fields.len();
    let run = run(&packed.program);
    let golden_error = run.error.clone();
    for f in &run.findings {
        r.notes.push(format!("{engine} finding: {f}"));
    }
    // ---- outputs ----
    // Timing buffers (%clock64 samples) are calibration data, never compared (`hopsync calibrate`).
    for b in prog.manifest.buffers.iter().filter(|b| b.output && !b.timing) {
        let Some(gold) = run.buffers.get(&b.name) else {
            continue;
        };
        let gold = hex(gold);
        r.outputs_compared += 1;
        match t.outputs.get(&b.name) {
            Some(g) if *g == gold => {}
            Some(g) => r.add(output_mismatch("output", &b.name, g, &gold)),
            None => r.add(output_mismatch("output", &b.name, "(missing)", &gold)),
        }
        if t.plain.status == "ok" {
            if let (Some(p), Some(g)) = (t.plain.outputs.get(&b.name), t.outputs.get(&b.name)) {
                if p != g {
                    if t.interleaving_dependent {
                        r.notes.push(format!("output `{}` differs between the GPU runs with and without instrumentation (interleaving_dependent)", b.name));
                    } else {
                        r.add(output_mismatch("plain-output", &b.name, p, g));
                    }
                }
            }
        }
    }
    if t.plain.status != "ok" {
        r.notes.push(format!("the unchanged program's GPU run: {}", t.plain.error.clone().unwrap_or_else(|| t.plain.status.clone())));
    }
    // ---- slots ----
    let gbuf = run.buffers.get(TRACE_BUFFER).map(|b| b.as_slice()).unwrap_or(&[]);
    let (gcounts, gold) = packed.layout.decode(gbuf);
    let (gold, gold_clocks) = match split_clocks(&packed.fields, &gold) {
        Ok(x) => x,
        Err(e) => {
            r.status = "error".into();
            r.detail = Some(format!("the {engine} engine's trace: {e}"));
            return r;
        }
    };
    if let Some(td) = &t.trace {
        r.timing = timing_rows(&td.clocks, &gold_clocks);
        r.by_line = line_rows(&td.clocks, &gold_clocks);
    }
    if !t.interleaving_dependent {
        match &t.trace {
            None => r.notes.push("the trace holds no slots".into()),
            Some(td) => match td.threads() {
                Err(e) => {
                    r.status = "error".into();
                    r.detail = Some(format!("bad trace: {e}"));
                    return r;
                }
                Ok(mut gpu) => {
                    let mut gold = gold;
                    for t in gpu.iter_mut().chain(gold.iter_mut()) {
                        collapse_wait_runs(&packed.fields, t);
                    }
                    compare_slots(&mut r, &packed.fields, &td.counts, &gpu, &gcounts, &gold, packed.layout.slots, prog.manifest.threads_per_cta());
                }
            },
        }
    }
    let unexpected = r.classes.values().any(|c| !c.expected);
    r.status = if let Some(e) = golden_error {
        r.detail = Some(e);
        format!("{engine}-error")
    } else if unexpected {
        "mismatch".into()
    } else if r.classes.is_empty() {
        "equal".into()
    } else {
        "expected-mismatches".into()
    };
    r
}

fn output_mismatch(class: &str, buf: &str, gpu: &str, golden: &str) -> Mismatch {
    let first = gpu.bytes().zip(golden.bytes()).position(|(a, b)| a != b).unwrap_or(gpu.len().min(golden.len()));
    let byte = first / 2;
    let s = (byte.saturating_sub(4) & !3) * 2;
    let cut = |h: &str| h.get(s..(s + 32).min(h.len())).unwrap_or("").to_string();
    Mismatch {
        class: class.into(),
        expected: false,
        thread: None,
        cta: None,
        tid: None,
        slot: None,
        pc: None,
        line: None,
        instr: None,
        field: format!("buffer `{buf}` from byte {} (first difference at byte {byte})", s / 2),
        gpu: cut(gpu),
        golden: cut(golden),
    }
}

/// A polling run that spans several wait instructions keeps one value slot: the answer of its
/// last poll, under the field of its first wait. CUTLASS's `ClusterBarrier::wait` polls once with
/// `try_wait`, then loops on a `try_wait` with a suspend-time hint: whether the first poll already
/// answered `true` is timing, like how often one wait polls (the instrumentation collapses a run
/// of one instruction in the kernel already, instrument.rs "Polling loops"). A run is a `false`
/// test_wait / try_wait answer followed by the next wait answer of the same thread.
pub fn collapse_wait_runs(fields: &[Field], slots: &mut Vec<u64>) {
    const VALUE_BITS: u64 = (1 << 48) - 1;
    let is_wait = |s: u64| slot_field(s).and_then(|i| fields.get(i as usize)).is_some_and(|f| f.kind == FieldKind::WaitComplete);
    let mut out = Vec::with_capacity(slots.len());
    // The field bits of the first wait of an open run of `false` answers.
    let mut run: Option<u64> = None;
    for &s in slots.iter() {
        if !is_wait(s) {
            run = None;
            out.push(s);
            continue;
        }
        let s = match run {
            Some(tag) => {
                out.pop();
                tag | (s & VALUE_BITS)
            }
            None => s,
        };
        run = (slot_value(s) == 0).then_some(s & !VALUE_BITS);
        out.push(s);
    }
    *slots = out;
}

#[allow(clippy::too_many_arguments)]
fn compare_slots(r: &mut ProgramReplay, fields: &[Field], gcounts: &[u32], gpu: &[Vec<u64>], ocounts: &[u32], gold: &[Vec<u64>], slots: u32, tpc: u32) {
    let silicon = golden_uses_silicon_encoding();
    let mut seen = std::collections::BTreeSet::new();
    let mut seen_fields = std::collections::BTreeSet::new();
    let threads = gpu.len().min(gold.len());
    if gpu.len() != gold.len() {
        r.notes.push(format!("the GPU trace has {} threads, the golden {}", gpu.len(), gold.len()));
    }
    for t in 0..threads {
        let base = |slot: Option<u32>, f: Option<&Field>| Mismatch {
            class: String::new(),
            expected: false,
            thread: Some(t as u32),
            cta: Some(t as u32 / tpc.max(1)),
            tid: Some(t as u32 % tpc.max(1)),
            slot,
            pc: f.map(|f| f.pc),
            line: f.map(|f| f.line),
            instr: f.map(|f| f.instr.clone()),
            field: f.map(|f| f.kind.name().to_string()).unwrap_or_default(),
            gpu: String::new(),
            golden: String::new(),
        };
        for (who, c) in [("gpu", gcounts.get(t)), ("golden", ocounts.get(t))] {
            if let Some(&c) = c {
                if c > slots {
                    let mut m = base(None, None);
                    m.class = "overflow".into();
                    m.field = format!("{who} trace wrote {c} slots, {slots} exist");
                    m.gpu = gcounts.get(t).map(|c| c.to_string()).unwrap_or_default();
                    m.golden = ocounts.get(t).map(|c| c.to_string()).unwrap_or_default();
                    r.add(m);
                }
            }
        }
        let (a, b) = (&gpu[t], &gold[t]);
        if !a.is_empty() || !b.is_empty() {
            r.threads_compared += 1;
        }
        for k in 0..a.len().max(b.len()) {
            let (ga, gb) = (a.get(k).copied(), b.get(k).copied());
            let fa = ga.and_then(slot_field);
            let fb = gb.and_then(slot_field);
            let field = fa.or(fb).and_then(|i| fields.get(i as usize));
            if fa != fb || ga.is_none() || gb.is_none() {
                let mut m = base(Some(k as u32), field);
                m.class = "sequence".into();
                let name = |x: Option<u64>| match x {
                    None => "(no slot)".to_string(),
                    Some(v) => match slot_field(v).and_then(|i| fields.get(i as usize)) {
                        Some(f) => format!("pc {} `{}` {} = {}", f.pc, f.instr, f.kind.name(), hex32(slot_value(v))),
                        None => format!("bad slot 0x{v:016x}"),
                    },
                };
                m.field = "slot sequence".into();
                m.gpu = name(ga);
                m.golden = name(gb);
                m.pc = None;
                m.instr = None;
                m.line = None;
                r.add(m);
                break;
            }
            let (va, vb) = (slot_value(ga.unwrap()), slot_value(gb.unwrap()));
            let f = field.expect("field of a matching tag");
            r.slots_compared += 1;
            seen.insert(f.pc);
            seen_fields.insert(f.id);
            if va == vb {
                continue;
            }
            let (class, expected) = classify(f.kind, va, vb, silicon);
            let mut m = base(Some(k as u32), Some(f));
            m.class = class.into();
            m.expected = expected;
            m.gpu = hex32(va);
            m.golden = hex32(vb);
            if f.kind == FieldKind::TokenHi {
                m.gpu = format!("{} ({})", m.gpu, describe_token_hi(va));
                if silicon {
                    m.golden = format!("{} ({})", m.golden, describe_token_hi(vb));
                }
            }
            r.add(m);
        }
    }
    r.instructions_compared = seen.len();
    r.fields_compared = seen_fields.len();
}

/// Reads bits 63..32 of an arrive token with sm_90's layout (docs/MBARRIER_ENCODING.md): parity
/// (bit 63), pending arrivals before the arrive (`2^20 - P`, P = bits 62..43) and the top ten
/// bits of the tx field F = -tx (bits 41..32).
pub fn describe_token_hi(hi: u32) -> String {
    let parity = hi >> 31;
    let p = (hi >> 11) & 0xf_ffff;
    let pending = if p == 0 { 0 } else { (1u32 << 20) - p };
    let f_hi = hi & 0x3ff;
    let tx = match f_hi {
        0 => "tx in [-2047, 0]".to_string(),
        0x3ff => "tx in [1, 2048]".to_string(),
        f => format!("F[20:11] = 0x{f:03x}"),
    };
    let b42 = if hi >> 10 & 1 == 1 { ", bit 42 set" } else { "" };
    format!("sm_90 layout: parity {parity}, pending {pending}, {tx}{b42}")
}

/// Classifies a differing value of a field.
pub fn classify(kind: FieldKind, gpu: u32, golden: u32, golden_silicon: bool) -> (&'static str, bool) {
    match kind {
        FieldKind::TokenHi => {
            if (gpu >> 31) != (golden >> 31) {
                ("token-parity", false)
            } else if golden_silicon {
                ("token-order", true)
            } else {
                ("token-encoding", true)
            }
        }
        FieldKind::TokenLo => ("token-encoding", true),
        FieldKind::WaitComplete => ("wait-result", false),
        FieldKind::PendingCount => ("pending-count", false),
        _ => ("value", false),
    }
}

/// Replays one trace file on the golden engine.
pub fn replay_file(path: &Path, root: &Path) -> ProgramReplay {
    replay_file_on(path, root, "golden", &run_golden)
}

/// Replays one trace file on an engine ([`replay_trace_on`]).
pub fn replay_file_on(path: &Path, root: &Path, engine: &str, run: &dyn Fn(&Program) -> EngineRun) -> ProgramReplay {
    match read_trace(path) {
        Ok(t) => replay_trace_on(&t, root, engine, run),
        Err(e) => ProgramReplay {
            name: path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
            engine: engine.into(),
            status: "error".into(),
            detail: Some(e),
            ..Default::default()
        },
    }
}

/// The trace files of a folder (`*.json`, not descending into `probe/` or any other folder).
pub fn trace_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> =
        std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json")).collect()).unwrap_or_default();
    v.sort();
    v
}

/// Replays every trace in `dir`.
pub fn replay_dir(dir: &Path, root: &Path) -> Vec<ProgramReplay> {
    trace_files(dir).iter().map(|p| replay_file(p, root)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(pc: u32, median: f64, samples: u64) -> ClockInstr {
        let deltas = format!("{}*{samples}", median as u64);
        ClockInstr { pc, line: pc + 100, instr: format!("i{pc}"), opcode: "op".into(), samples, median, min: median as u64, max: median as u64, deltas }
    }

    /// Each instruction silicon traced gets a row with the engine's figure of the same pc, and
    /// none (0 samples) where the engine never ran it.
    #[test]
    fn line_rows_match_the_engines_figures_by_program_counter() {
        let silicon = [clock(3, 40.0, 32), clock(7, 12.0, 64)];
        let engine = [clock(7, 9.0, 64), clock(9, 5.0, 32)];
        let rows = line_rows(&silicon, &engine);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].pc, rows[0].line, rows[0].silicon_median, rows[0].engine_samples), (3, 103, 40.0, 0));
        assert_eq!((rows[1].pc, rows[1].silicon_median, rows[1].engine_median, rows[1].engine_samples), (7, 12.0, 9.0, 64));
    }

    fn field(id: u32, pc: u32, kind: FieldKind) -> Field {
        Field { id, pc, line: pc, instr: format!("i{pc}"), kind, reg: "%r".into() }
    }
    fn slot(f: u32, v: u32) -> u64 {
        ((f as u64 + 1) << 48) | v as u64
    }

    /// A `false` poll of one wait followed by a `true` poll of another is one slot, under the
    /// first wait's field, with the last answer; a `false` answer followed by another kind of
    /// slot stays, and so does a `true` answer followed by a wait.
    #[test]
    fn polling_runs_across_wait_instructions_collapse_to_their_last_answer() {
        let fields = [field(0, 10, FieldKind::WaitComplete), field(1, 12, FieldKind::WaitComplete), field(2, 20, FieldKind::TokenHi)];
        // golden: first try_wait false, the hinted loop true; silicon: the first try_wait true
        let mut golden = vec![slot(0, 0), slot(1, 1), slot(2, 7)];
        let mut gpu = vec![slot(0, 1), slot(2, 7)];
        collapse_wait_runs(&fields, &mut golden);
        collapse_wait_runs(&fields, &mut gpu);
        assert_eq!(golden, vec![slot(0, 1), slot(2, 7)]);
        assert_eq!(gpu, golden);
        // a run of three, then a false answer that a value slot ends
        let mut s = vec![slot(1, 0), slot(0, 0), slot(1, 1), slot(0, 0), slot(2, 3)];
        collapse_wait_runs(&fields, &mut s);
        assert_eq!(s, vec![slot(1, 1), slot(0, 0), slot(2, 3)]);
        // two true answers are two waits
        let mut s = vec![slot(0, 1), slot(1, 1)];
        collapse_wait_runs(&fields, &mut s);
        assert_eq!(s, vec![slot(0, 1), slot(1, 1)]);
    }
}
