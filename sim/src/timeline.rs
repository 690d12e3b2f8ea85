//! `hopsync run|cosim ... --timeline FILE.json`: a run as Chrome trace-event JSON, which Perfetto
//! (ui.perfetto.dev) and chrome://tracing open.
//!
//! One process per CTA, with these tracks:
//! - one per warp: what it was doing, as slices. On the RTL engine these are its stall reasons
//!   ([`Stall`]; `Issued` and `Ready` make one `Active` slice); on the golden engine, the state of
//!   its lanes after each step (`Active`, `BarrierWait`, `ClusterBarrierWait`, `AsyncWait`,
//!   `Reconverge`: its ready lanes wait at a join, `Exited`). On both, a warp whose last mbarrier
//!   test/try_wait failed is `MbarrierPoll` until one succeeds (RTL: unless try_wait suspended
//!   it, `TryWaitSuspended`), with the wait instruction;
//! - one per mbarrier (named by its shared variable): its phases as slices, and each arrival,
//!   expect-tx and complete-tx as an instant event, by a warp's instruction or by an asynchronous
//!   operation (cp.async's arrive-on, st.async, the TMA);
//! - one for the CTA's TMA unit: each copy from its issue to its last completion event (async
//!   slices, which may overlap), and a counter of the bytes in flight;
//! - flow arrows from the arrive or complete-tx that completed an mbarrier phase to each warp's
//!   first successful `test_wait`/`try_wait` on that mbarrier after it.
//!
//! Time: golden runs count scheduler steps, RTL runs cycles; one unit is written as 1 µs, the
//! format's unit, so what the viewer calls µs reads as steps or cycles (`otherData.time_unit`).
//!
//! Built only from what the engines produce anyway: retire records (with the asynchronous
//! operations each issued), the RTL engine's [`Event`] stream and [`Probe`] snapshots, and the
//! machine's state between steps (mbarrier words and phase counters, lanes, pending operations).

use crate::config::SmConfig;
use crate::engine::{Engine, Event};
use crate::probe::{Probe, Snapshot, Stall};
use hopsync_cosim::exec::{Stop, TmaOp};
use hopsync_cosim::lockstep::{CosimReport, TmaEffect};
use hopsync_cosim::machine::{AsyncOp, Config, Lane, Machine, Outcome, Place, Wait, Warp, WARP};
use hopsync_cosim::mbarrier::MbarrierState;
use hopsync_cosim::report::RunReport;
use hopsync_cosim::retire::{Retire, RetireSink, SyncEvent};
use hopsync_firmware::ir::{Instr, Module, Operand, Space};
use hopsync_firmware::{printer, Opcode, Program};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

/// Track id of the first mbarrier of a CTA (warps are 0..warps).
pub const MBAR_TID: u32 = 1000;
/// Track id of a CTA's TMA unit.
pub const TMA_TID: u32 = 2000;

/// One trace event (the Trace Event Format's fields; absent ones are left out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// Name (slice text, counter name, metadata kind).
    pub name: String,
    /// Category.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cat: String,
    /// Phase: `X` slice, `i` instant, `C` counter, `b`/`e` async slice, `s`/`f` flow, `M` metadata.
    pub ph: String,
    /// Time (steps or cycles).
    #[serde(default)]
    pub ts: u64,
    /// Duration of an `X` slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dur: Option<u64>,
    /// Process: CTA + 1.
    pub pid: u32,
    /// Track in the process: warp, [`MBAR_TID`] + k, [`TMA_TID`].
    #[serde(default)]
    pub tid: u32,
    /// Async slice or flow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Scope of an instant event (`t`: its track).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s: Option<String>,
    /// Binding point of a flow end (`e`: the enclosing slice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bp: Option<String>,
    /// Arguments shown with the event.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub args: serde_json::Value,
}

/// The file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// Every event, sorted by time (metadata first).
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<TraceEvent>,
    /// How the viewer shows times.
    #[serde(rename = "displayTimeUnit")]
    pub display_time_unit: String,
    /// `program`, `engine`, `time_unit` (`step` or `cycle`), `phases_completed`.
    #[serde(rename = "otherData")]
    pub other_data: serde_json::Value,
}

impl Trace {
    /// Writes the JSON file.
    pub fn write(&self, path: &std::path::Path) -> Result<(), String> {
        let f = std::fs::File::create(path).map_err(|e| format!("error: cannot write {}: {e}", path.display()))?;
        serde_json::to_writer(std::io::BufWriter::new(f), self).map_err(|e| format!("error: writing {}: {e}", path.display()))
    }
}

/// An open slice of a warp track.
#[derive(Debug, Clone)]
struct Open {
    state: &'static str,
    start: u64,
    pc: u32,
}

/// What the timeline knows of one mbarrier.
#[derive(Debug, Clone)]
struct Mbar {
    /// Its track.
    tid: u32,
    /// The word as last seen.
    word: u64,
    /// Phases completed (the machine's unbounded phase number).
    phase: u64,
    /// Start of the current phase's slice (None: not valid).
    since: Option<u64>,
    /// The flow of the last phase completion, and the warps that have woken from it.
    flow: Option<u64>,
    woken: HashSet<(u32, u32)>,
}

/// One TMA operation.
#[derive(Debug, Clone)]
struct Copy {
    cta: u32,
    name: String,
    issue: u64,
    done: Option<u64>,
    bytes: u64,
    args: serde_json::Value,
}

/// Whether time counts golden steps or RTL cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Golden engine: scheduler steps; TMA completions are found in the machine's pending list.
    Steps,
    /// RTL engine: cycles; TMA completions come as [`Event::TmaComplete`].
    Cycles,
}

/// The timeline being built.
pub struct Timeline {
    clock: Clock,
    events: Vec<TraceEvent>,
    warps: HashMap<(u32, u32), Open>,
    mbars: BTreeMap<(u32, u32), Mbar>,
    mbar_tracks: Vec<u32>,
    copies: BTreeMap<u64, Copy>,
    next_flow: u64,
    phases: u64,
    /// RTL engine: the probe's stall reasons of the last cycle (cycle, cta, warp, slice, pc).
    stalls: Vec<(u64, u32, u32, &'static str, u32)>,
}

impl Timeline {
    /// A timeline for a run of `m`'s program.
    pub fn new(m: &Machine<'_>, clock: Clock, engine: &str) -> Timeline {
        let mut t = Timeline { clock, events: Vec::new(), warps: HashMap::new(), mbars: BTreeMap::new(), mbar_tracks: vec![0; m.cta_count()], copies: BTreeMap::new(), next_flow: 0, phases: 0, stalls: Vec::new() };
        for c in 0..m.cta_count() as u32 {
            let pid = c + 1;
            t.meta("process_name", pid, 0, serde_json::json!({ "name": format!("CTA {c} (cluster {} rank {}) - {engine}", m.cta_cluster(c), m.cta_rank(c)) }));
            t.meta("process_sort_index", pid, 0, serde_json::json!({ "sort_index": c }));
            for w in 0..m.warp_count(c) as u32 {
                t.meta("thread_name", pid, w, serde_json::json!({ "name": format!("warp {w}") }));
                t.meta("thread_sort_index", pid, w, serde_json::json!({ "sort_index": w }));
            }
        }
        t
    }

    fn meta(&mut self, name: &str, pid: u32, tid: u32, args: serde_json::Value) {
        self.events.push(TraceEvent { name: name.into(), cat: String::new(), ph: "M".into(), ts: 0, dur: None, pid, tid, id: None, s: None, bp: None, args });
    }

    fn push(&mut self, name: String, cat: &str, ph: &str, ts: u64, pid: u32, tid: u32, args: serde_json::Value) -> &mut TraceEvent {
        self.events.push(TraceEvent { name, cat: cat.into(), ph: ph.into(), ts, dur: None, pid, tid, id: None, s: None, bp: None, args });
        self.events.last_mut().unwrap()
    }

    // ---- warps -------------------------------------------------------------------------------

    /// Warp (cta, warp) is in `state` at `t` (next pc `pc`): closes its slice when the state
    /// changed.
    pub fn warp_state(&mut self, t: u64, cta: u32, warp: u32, state: &'static str, pc: u32, module: &Module) {
        let key = (cta, warp);
        match self.warps.get(&key) {
            Some(o) if o.state == state => return,
            Some(o) => {
                let o = o.clone();
                self.close_warp(t, key, &o, module);
            }
            None => {}
        }
        self.warps.insert(key, Open { state, start: t, pc });
    }

    fn close_warp(&mut self, t: u64, (cta, warp): (u32, u32), o: &Open, module: &Module) {
        if t <= o.start {
            return;
        }
        let args = match module.kernel.body.get(o.pc as usize) {
            Some(i) => serde_json::json!({ "pc": o.pc, "line": i.loc.line, "instr": printer::print_instr(module, i) }),
            None => serde_json::json!({ "pc": o.pc }),
        };
        let e = self.push(o.state.into(), "warp", "X", o.start, cta + 1, warp, args);
        e.dur = Some(t - o.start);
    }

    /// Golden engine: every warp's state after a step.
    pub fn golden_warps(&mut self, t: u64, m: &Machine<'_>) {
        for c in 0..m.cta_count() as u32 {
            for w in 0..m.warp_count(c) as u32 {
                let (state, pc) = golden_state(m.warp(c, w));
                self.warp_state(t, c, w, state, pc, m.module());
            }
        }
    }

    // ---- instructions and completions ---------------------------------------------------------

    /// An instruction retired (at `rec.step`); `m` is the machine after it (its registers give
    /// the address of the mbarrier a wait tested).
    pub fn retire(&mut self, rec: &Retire, m: &mut Machine<'_>) {
        let t = rec.step;
        let Some(ins) = m.module().kernel.body.get(rec.pc as usize) else { return };
        for e in &rec.sync {
            if let SyncEvent::Mbarrier { cta, offset, old, new } = e {
                self.mbar_change(t, (*cta, *offset), *old, *new, Some((rec, ins)), m);
            }
        }
        if matches!(ins.op, Opcode::MbarrierTestWait | Opcode::MbarrierTryWait) {
            if let Some(obj) = woke_on(rec, ins, m) {
                // The completion it saw may have come in this very step or cycle.
                self.refresh(t, obj, m);
                self.wake(t, obj, (rec.cta, rec.warp));
            }
        }
        if is_tma(ins.op) {
            for &seq in &rec.issued {
                let bytes = m.pending_op(seq).map(op_bytes).unwrap_or(0);
                let args = serde_json::json!({ "seq": seq, "warp": rec.warp, "line": ins.loc.line, "instr": printer::print_instr(m.module(), ins) });
                self.copies.insert(seq, Copy { cta: rec.cta, name: mnemonic(m.module(), ins), issue: t, done: None, bytes, args });
            }
        }
    }

    /// RTL engine: (part of) TMA operation `seq` completed at `t`.
    pub fn tma_complete(&mut self, t: u64, seq: u64, effect: &TmaEffect) {
        if let Some(c) = self.copies.get_mut(&seq) {
            c.done = Some(t);
            if c.bytes == 0 {
                c.bytes = effect.complete_tx.map(|x| x.2 as u64).unwrap_or_else(|| effect.bytes.iter().map(|(_, b)| b.len() as u64).sum());
            }
        }
    }

    /// After a step or cycle ending at `t`: changes of known mbarriers that no instruction made
    /// (asynchronous arrive-ons and complete-tx), and on the golden engine the TMA operations that
    /// left the pending list.
    pub fn observe(&mut self, t: u64, m: &Machine<'_>) {
        let keys: Vec<(u32, u32)> = self.mbars.keys().copied().collect();
        for k in keys {
            self.refresh(t, k, m);
        }
        if self.clock == Clock::Steps {
            for c in self.copies.values_mut().filter(|c| c.done.is_none()) {
                let seq = c.args["seq"].as_u64().unwrap_or(0);
                if m.pending_op(seq).is_none() {
                    c.done = Some(t);
                }
            }
        }
    }

    /// The RTL engine's events of a cycle and its warps' stall reasons (the probe's), then
    /// [`Self::observe`]. A warp whose last mbarrier poll failed and that is not suspended by
    /// try_wait is `MbarrierPoll` (its wait loop: issue, unit round trip, predicate, branch) at
    /// the wait instruction, as on the golden engine.
    pub fn rtl_cycle(&mut self, cycle: u64, events: &[Event], m: &mut Machine<'_>) {
        for ev in events {
            match ev {
                Event::Retire { rec, .. } => self.retire(rec, m),
                Event::TmaComplete { cycle, seq, effect, .. } => self.tma_complete(*cycle, *seq, effect),
                Event::Complete { .. } | Event::Release { .. } | Event::AsyncFault { .. } | Event::MbarPart { .. } => {}
            }
        }
        for (t, c, w, state, pc) in std::mem::take(&mut self.stalls) {
            let poll = m.warp(c, w).polling;
            let (state, pc) = match poll {
                Some(p) if matches!(state, "Active" | "ScoreboardDep" | "Branch" | "MbarrierWait" | "UnitBackpressure") => ("MbarrierPoll", p.pc),
                _ => (state, pc),
            };
            self.warp_state(t, c, w, state, pc, m.module());
        }
        self.observe(cycle, m);
    }

    // ---- mbarriers ---------------------------------------------------------------------------

    /// Catches up with mbarrier `k` as the machine holds it now: a change since the last look
    /// that no instruction reported is asynchronous.
    fn refresh(&mut self, t: u64, k: (u32, u32), m: &Machine<'_>) {
        let Some(mb) = self.mbars.get(&k) else { return };
        let word = m.read_mbar_word(k.0, k.1);
        let phase = m.mbar_phase(k.0, k.1);
        if word != mb.word || phase > mb.phase {
            let old = mb.word;
            self.async_change(t, k, old, word, Some(phase), m);
        }
    }

    fn track(&mut self, k: (u32, u32), m: &Machine<'_>) -> u32 {
        if let Some(mb) = self.mbars.get(&k) {
            return mb.tid;
        }
        let tid = MBAR_TID + self.mbar_tracks[k.0 as usize];
        self.mbar_tracks[k.0 as usize] += 1;
        let name = format!("mbarrier {} (shared 0x{:x})", shared_name(m, k.1), k.1);
        self.meta("thread_name", k.0 + 1, tid, serde_json::json!({ "name": name }));
        self.meta("thread_sort_index", k.0 + 1, tid, serde_json::json!({ "sort_index": tid }));
        let word = m.read_mbar_word(k.0, k.1);
        self.mbars.insert(k, Mbar { tid, word, phase: 0, since: None, flow: None, woken: HashSet::new() });
        tid
    }

    /// The word of mbarrier `k` went from `old` to `new` at `t`, by an instruction (`by`) or not.
    fn mbar_change(&mut self, t: u64, k: (u32, u32), old: u64, new: u64, by: Option<(&Retire, &Instr)>, m: &Machine<'_>) {
        let tid = self.track(k, m);
        if self.mbars[&k].word != old && self.mbars[&k].since.is_some() {
            // Something else changed it since we last looked (within this step or cycle).
            let seen = self.mbars[&k].word;
            self.async_change(t, k, seen, old, None, m);
        }
        let (pid, op) = (k.0 + 1, by.map(|(_, i)| i.op));
        if op == Some(Opcode::MbarrierInit) {
            let s = MbarrierState::decode(new);
            self.push("init".into(), "mbarrier", "i", t, pid, tid, serde_json::json!({ "count": s.expected_arrivals, "warp": by.map(|(r, _)| r.warp) })).s = Some("t".into());
            let phase = m.mbar_phase(k.0, k.1);
            let mb = self.mbars.get_mut(&k).unwrap();
            (mb.word, mb.phase, mb.since, mb.flow) = (new, phase, Some(t), None);
            return;
        }
        if op == Some(Opcode::MbarrierInval) {
            self.end_phase(t, k, false);
            self.push("inval".into(), "mbarrier", "i", t, pid, tid, serde_json::json!({ "warp": by.map(|(r, _)| r.warp) })).s = Some("t".into());
            self.mbars.get_mut(&k).unwrap().since = None;
            self.mbars.get_mut(&k).unwrap().word = new;
            return;
        }
        let name = by.map(|(_, i)| mnemonic(m.module(), i)).unwrap_or_default();
        let args = change_args(old, new, by.map(|(r, _)| r.warp));
        self.push(name, "mbarrier", "i", t, pid, tid, args).s = Some("t".into());
        self.mbars.get_mut(&k).unwrap().word = new;
        if (old >> 63) != (new >> 63) {
            self.complete_phase(t, k);
        }
    }

    /// A change no instruction made: an asynchronous arrive-on or complete-tx (`phase`: the
    /// machine's phase number now, when known).
    fn async_change(&mut self, t: u64, k: (u32, u32), old: u64, new: u64, phase: Option<u64>, m: &Machine<'_>) {
        let tid = self.track(k, m);
        let (a, b) = (MbarrierState::decode(old), MbarrierState::decode(new));
        let flips = match phase {
            Some(p) => p.saturating_sub(self.mbars[&k].phase),
            None => (a.phase_parity != b.phase_parity) as u64,
        };
        let name = if b.tx_count < a.tx_count || flips > 0 && a.tx_count > 0 { "complete_tx" } else { "arrive (async)" };
        if old != new || flips > 0 {
            self.push(name.into(), "mbarrier", "i", t, k.0 + 1, tid, change_args(old, new, None)).s = Some("t".into());
        }
        self.mbars.get_mut(&k).unwrap().word = new;
        for _ in 0..flips {
            self.complete_phase(t, k);
        }
    }

    /// The current phase of `k` completed at `t`: its slice, and the flow to the wakes it causes.
    fn complete_phase(&mut self, t: u64, k: (u32, u32)) {
        self.end_phase(t, k, true);
        let tid = self.mbars[&k].tid;
        let id = self.next_flow;
        self.next_flow += 1;
        let e = self.push("wake".into(), "wake", "s", t, k.0 + 1, tid, serde_json::Value::Null);
        e.id = Some(id);
        let mb = self.mbars.get_mut(&k).unwrap();
        mb.phase += 1;
        mb.since = Some(t);
        mb.flow = Some(id);
        mb.woken.clear();
        self.phases += 1;
    }

    /// Closes the slice of the current phase of `k` at `t`.
    fn end_phase(&mut self, t: u64, k: (u32, u32), completed: bool) {
        let mb = &self.mbars[&k];
        let Some(since) = mb.since else { return };
        let (tid, phase) = (mb.tid, mb.phase);
        let name = if completed { format!("phase {phase}") } else { format!("phase {phase} (invalidated)") };
        let e = self.push(name, "phase", "X", since, k.0 + 1, tid, serde_json::json!({ "phase": phase, "completed": completed }));
        e.dur = Some(t - since);
    }

    /// Warp `who` saw mbarrier `k` complete at `t`: the flow from the completion ends here (once
    /// per warp and completion).
    fn wake(&mut self, t: u64, k: (u32, u32), who: (u32, u32)) {
        let Some(mb) = self.mbars.get_mut(&k) else { return };
        let Some(id) = mb.flow else { return };
        if !mb.woken.insert(who) {
            return;
        }
        let e = self.push("wake".into(), "wake", "f", t, who.0 + 1, who.1, serde_json::Value::Null);
        e.id = Some(id);
        e.bp = Some("e".into());
    }

    // ---- the end -----------------------------------------------------------------------------

    /// The trace, with every open slice closed at `t`.
    pub fn finish(mut self, t: u64, m: &Machine<'_>, engine: &str) -> Trace {
        let open: Vec<((u32, u32), Open)> = self.warps.iter().map(|(k, o)| (*k, o.clone())).collect();
        for (k, o) in open {
            self.close_warp(t, k, &o, m.module());
        }
        let keys: Vec<(u32, u32)> = self.mbars.keys().copied().collect();
        for k in keys {
            if let Some(since) = self.mbars[&k].since {
                let (tid, phase) = (self.mbars[&k].tid, self.mbars[&k].phase);
                let e = self.push(format!("phase {phase} (open)"), "phase", "X", since, k.0 + 1, tid, serde_json::json!({ "phase": phase, "completed": false }));
                e.dur = Some(t.saturating_sub(since));
            }
        }
        self.tma_tracks(t);
        let mut events = std::mem::take(&mut self.events);
        // Metadata first, then by time; the sort is stable, so each track stays in order.
        events.sort_by_key(|e| (e.ph != "M", e.ts));
        Trace {
            trace_events: events,
            display_time_unit: "ns".into(),
            other_data: serde_json::json!({
                "program": m.program().path,
                "engine": engine,
                "time_unit": if self.clock == Clock::Steps { "step" } else { "cycle" },
                "phases_completed": self.phases,
            }),
        }
    }

    /// The TMA unit tracks: each copy as an async slice, and the bytes in flight.
    fn tma_tracks(&mut self, t: u64) {
        let copies: Vec<(u64, Copy)> = std::mem::take(&mut self.copies).into_iter().collect();
        let mut ctas: Vec<u32> = copies.iter().map(|(_, c)| c.cta).collect();
        ctas.sort();
        ctas.dedup();
        for &c in &ctas {
            self.meta("thread_name", c + 1, TMA_TID, serde_json::json!({ "name": "TMA unit" }));
            self.meta("thread_sort_index", c + 1, TMA_TID, serde_json::json!({ "sort_index": TMA_TID }));
        }
        // (time, cta, +bytes / -bytes), in time order.
        let mut steps: Vec<(u64, u32, i64)> = Vec::new();
        for (seq, c) in &copies {
            let end = c.done.unwrap_or(t).max(c.issue);
            let mut args = c.args.clone();
            args["bytes"] = c.bytes.into();
            args["completed"] = c.done.is_some().into();
            self.push(c.name.clone(), "tma", "b", c.issue, c.cta + 1, TMA_TID, args).id = Some(*seq);
            self.push(c.name.clone(), "tma", "e", end, c.cta + 1, TMA_TID, serde_json::Value::Null).id = Some(*seq);
            steps.push((c.issue, c.cta, c.bytes as i64));
            steps.push((end, c.cta, -(c.bytes as i64)));
        }
        steps.sort();
        let mut level: HashMap<u32, i64> = HashMap::new();
        for (ts, c, d) in steps {
            let v = level.entry(c).or_default();
            *v += d;
            let v = *v;
            self.push("TMA bytes in flight".into(), "tma", "C", ts, c + 1, TMA_TID, serde_json::json!({ "bytes": v }));
        }
    }
}

/// A golden warp's state and the pc it runs next or waits in.
fn golden_state(w: &Warp) -> (&'static str, u32) {
    if w.exited() {
        return ("Exited", w.pc().iter().copied().max().unwrap_or(0));
    }
    if let Some((pc, _)) = w.next_group() {
        return match w.polling {
            Some(p) => ("MbarrierPoll", p.pc),
            None => ("Active", pc),
        };
    }
    for l in 0..WARP {
        if let Lane::Blocked(b) = w.lane()[l] {
            let s = match b {
                Wait::NamedBarrier(..) | Wait::NamedBarrierWarp(_) => "BarrierWait",
                Wait::ClusterBarrier(_) => "ClusterBarrierWait",
                Wait::CpAsyncGroups(_) | Wait::BulkGroups(..) | Wait::WgmmaGroups(_) => "AsyncWait",
            };
            // A blocked lane's pc points past the instruction it waits in.
            return (s, w.pc()[l].saturating_sub(1));
        }
    }
    let pc = (0..WARP).filter(|&l| w.lane()[l] != Lane::Done).map(|l| w.pc()[l]).min().unwrap_or(0);
    ("Reconverge", pc)
}

/// The slice an RTL stall reason belongs to.
pub fn stall_slice(s: Stall) -> &'static str {
    match s {
        Stall::Issued | Stall::Ready => "Active",
        other => other.name(),
    }
}

/// An instruction's mnemonic with its modifiers (`mbarrier.arrive.expect_tx.shared::cta.b64`).
fn mnemonic(module: &Module, i: &Instr) -> String {
    let text = printer::print_instr(module, i);
    text.split_whitespace().find(|t| !t.starts_with('@')).unwrap_or("").trim_end_matches(';').to_string()
}

/// Whether an opcode is a TMA operation (the TmaEngine's commands).
fn is_tma(op: Opcode) -> bool {
    matches!(op, Opcode::CpAsyncBulk | Opcode::CpAsyncBulkTensor | Opcode::CpReduceAsyncBulk | Opcode::CpReduceAsyncBulkTensor | Opcode::CpAsyncBulkPrefetch | Opcode::CpAsyncBulkPrefetchTensor)
}

/// Bytes an asynchronous operation moves.
fn op_bytes(op: &AsyncOp) -> u64 {
    match op {
        AsyncOp::Tma(t) => match &**t {
            TmaOp::ToShared { ctas, tx, .. } => *tx as u64 * ctas.len() as u64,
            TmaOp::ToGlobal { pieces, .. } => pieces.iter().map(|p| p.len as u64).sum(),
        },
        AsyncOp::CpAsync { data, .. } | AsyncOp::RemoteWrite { data, .. } => data.len() as u64,
        AsyncOp::CpAsyncArrive { .. } => 0,
    }
}

/// Arguments of an mbarrier change: the counts after it and what moved.
fn change_args(old: u64, new: u64, warp: Option<u32>) -> serde_json::Value {
    let (a, b) = (MbarrierState::decode(old), MbarrierState::decode(new));
    let flipped = a.phase_parity != b.phase_parity;
    let arrivals = if flipped { a.pending_arrivals } else { a.pending_arrivals.saturating_sub(b.pending_arrivals) };
    let mut v = serde_json::json!({
        "arrivals": arrivals,
        "pending_after": b.pending_arrivals,
        "tx_after": b.tx_count,
        "tx_change": b.tx_count as i64 - if flipped { 0 } else { a.tx_count as i64 },
        "completes_phase": flipped,
    });
    if let Some(w) = warp {
        v["warp"] = w.into();
    }
    v
}

/// The mbarrier a test_wait/try_wait retire found complete (its predicate true in some lane):
/// the object its address operand names for that lane.
fn woke_on(rec: &Retire, ins: &Instr, m: &mut Machine<'_>) -> Option<(u32, u32)> {
    let Some(Operand::Reg(d)) = ins.operands.first() else { return None };
    let w = rec.regs.iter().find(|r| r.reg == d.0)?;
    let lane = (0..32).find(|&l| w.mask >> l & 1 == 1 && w.values[l] & 1 == 1)? as u32;
    match m.place_of(rec.cta, rec.warp, rec.pc, lane, 1, 8, None) {
        Some(Place::Shared(c, o)) => Some((c, o as u32)),
        _ => None,
    }
}

/// The shared variable holding offset `off` (`name`, `name+0x10`), or `smem+0x..`.
fn shared_name(m: &Machine<'_>, off: u32) -> String {
    let module = m.module();
    let best = module
        .symbols
        .iter()
        .enumerate()
        .filter(|(_, s)| s.space == Space::Shared)
        .map(|(i, s)| (m.symbol_address(hopsync_firmware::ir::SymId(i as u32)), s))
        .filter(|(base, s)| *base <= off as u64 && (s.is_extern || (off as u64) < base + s.bytes().max(1)))
        .max_by_key(|(base, _)| *base);
    match best {
        Some((base, s)) if base == off as u64 => s.name.clone(),
        Some((base, s)) => format!("{}+0x{:x}", s.name, off as u64 - base),
        None => format!("smem+0x{off:x}"),
    }
}

// ---- drivers ---------------------------------------------------------------------------------

struct Log(Rc<RefCell<Vec<Retire>>>);
impl RetireSink for Log {
    fn retire(&mut self, r: Retire) {
        self.0.borrow_mut().push(r);
    }
}

/// `hopsync run --timeline` on the golden engine: the report and the trace.
pub fn run_golden(prog: &Program, cfg: Config) -> (RunReport, Trace) {
    let mut m = Machine::new(prog, cfg);
    let log = Rc::new(RefCell::new(Vec::new()));
    m.set_sink(Box::new(Log(log.clone())));
    let mut tl = Timeline::new(&m, Clock::Steps, "golden");
    tl.golden_warps(0, &m);
    let outcome = loop {
        let r = m.step_once();
        let recs: Vec<Retire> = std::mem::take(&mut *log.borrow_mut());
        for rec in &recs {
            tl.retire(rec, &mut m);
        }
        let t = m.now();
        tl.observe(t, &m);
        tl.golden_warps(t, &m);
        match r {
            Ok(true) => {}
            Ok(false) => break Outcome::Completed,
            Err(Stop::Finding) => break Outcome::Fault,
            Err(Stop::Unsupported(s)) => break Outcome::Unsupported(s),
        }
    };
    let report = RunReport::from_machine(&m, "golden", &outcome);
    let trace = tl.finish(m.now(), &m, "golden");
    (report, trace)
}

/// The RTL engine's probe: each warp's stall reason, into the shared timeline.
struct Stalls(Rc<RefCell<Timeline>>);

impl Probe for Stalls {
    fn cycle(&mut self, snap: &Snapshot<'_>) {
        let mut tl = self.0.borrow_mut();
        tl.stalls.clear();
        tl.stalls.extend(snap.warps.iter().map(|w| (snap.cycle, w.cta, w.warp, stall_slice(w.stall), w.pc)));
    }
}

/// `hopsync run --engine rtl|verilator --timeline`: the report and the trace. The probe makes
/// the engine simulate every cycle (no idle skipping), as `--waves` does.
pub fn run_rtl(prog: &Program, cfg: Config, sm: SmConfig) -> (RunReport, Trace) {
    let engine = sm.backend.name().to_string();
    let mut e = Engine::new(prog, cfg, sm);
    e.record_events();
    let tl = Rc::new(RefCell::new(Timeline::new(&e.m, Clock::Cycles, &engine)));
    e.set_probe(Box::new(Stalls(tl.clone())));
    let outcome = loop {
        let r = e.step();
        let evs = e.take_events();
        tl.borrow_mut().rtl_cycle(e.cycle, &evs, &mut e.m);
        match r {
            Ok(true) => {}
            Ok(false) => break Outcome::Completed,
            Err(Stop::Finding) => break Outcome::Fault,
            Err(Stop::Unsupported(s)) => break Outcome::Unsupported(s),
        }
    };
    if let Some(mut p) = e.take_probe() {
        let _ = p.finish();
    }
    let report = e.report(&outcome);
    let tl = Rc::try_unwrap(tl).ok().expect("the probe is gone").into_inner();
    let trace = tl.finish(e.cycle, &e.m, &engine);
    (report, trace)
}

/// `hopsync cosim --timeline`: the lockstep run, with the RTL engine's timeline.
pub fn cosim(prog: &Program, cfg: Config, sm: SmConfig) -> (CosimReport, Trace) {
    let engine = sm.backend.name().to_string();
    // A machine of the same launch, for the tracks' names and the instructions' text.
    let layout = Machine::new(prog, cfg.clone());
    let tl = Rc::new(RefCell::new(Timeline::new(&layout, Clock::Cycles, &engine)));
    let shared = tl.clone();
    let mut observe = move |cycle: u64, evs: &[Event], m: &mut Machine<'_>| shared.borrow_mut().rtl_cycle(cycle, evs, m);
    let (report, probe) = crate::lockstep::run_cosim_observed(prog, cfg, sm, Some(Box::new(Stalls(tl.clone()))), &mut observe);
    drop(probe);
    drop(observe);
    let tl = Rc::try_unwrap(tl).ok().expect("the probe and the observer are gone").into_inner();
    let trace = tl.finish(report.run.cycles.unwrap_or(0), &layout, &engine);
    (report, trace)
}
