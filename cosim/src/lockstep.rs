//! Step-and-compare lockstep: the golden model checks another engine (the cycle-accurate RTL
//! engine of `hopsync-sim`) instruction by instruction, in that engine's own retire order, the
//! way Ibex is checked against Spike.
//!
//! The interface is narrow and typed. The engine under test hands over, in the order in which it
//! changed architectural state:
//! - [`Golden::complete_async`]: the nondeterministic input "asynchronous operation `seq`
//!   (cp.async, cp.async.mbarrier.arrive's arrive-on, st.async / red.async) completed now";
//! - [`Golden::complete_tma`]: "TMA operation `seq` delivered its data (into destination CTA
//!   `cta`, or the reads / writes of a store) now", with the engine's [`TmaEffect`]: the bytes it
//!   wrote, the complete-tx (target mbarrier, amount, resulting word) and the issuing thread's
//!   bulk async-group state. The golden model applies the same part of its pending operation and
//!   compares each of them byte for byte;
//! - [`Golden::expect_async_finding`]: the engine stopped with a finding while completing TMA
//!   operation `seq`;
//! - [`Golden::set_time`]: the cycle (what `%clock` reads);
//! - [`Golden::step`]: a retire record ([`Retire`]: CTA, warp, pc, executing lanes, register
//!   writes, memory writes, sync-unit changes). The golden model executes the same warp's next
//!   group (its ready lanes at the lowest pc, which must be the record's pc), then compares its
//!   own record with the one handed over;
//! - [`Golden::release`]: a barrier release the engine observed outside any instruction (a
//!   named barrier completed by the exit sweep of the RTL unit);
//! - [`Golden::mbar_part`]: one step of an mbarrier instruction (or the expect-tx half of a
//!   merged multi-lane `.expect_tx` arrive, which the unit performs as two operations) applied
//!   by the engine's unit before the instruction retires: the golden model applies it at that
//!   point, since another instruction may change the same word before the retire.
//!
//! Comparison rules ([`compare`]): same pc and lanes; same register writes (lanes and values);
//! the same memory writes once writes of mbarrier words are taken as the mbarrier changes they
//! carry; the same mbarrier word changes (old and new words, unchanged words ignored). Named- and
//! cluster-barrier releases are compared per barrier in order, not by the instruction they are
//! attached to: the RTL units register a completion a cycle or more after the arrival that caused
//! it (or after the exit sweep), the golden model applies it inside that instruction.
//!
//! The first difference is a [`Divergence`] naming the instruction (text and source line), both
//! values, the cycle and the waveform window to open.

use crate::exec::{MbarFamily, Stop, TmaOp};
use crate::finding::{Finding, FindingKind};
use crate::machine::{AsyncOp, Config, Machine, Place, UbMode};
use crate::report::{hex, RunReport};
use crate::retire::{MemSpace, MemWrite, RegWrite, Retire, RetireSink, SyncEvent};
use hopsync_firmware::Program;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// Cycles before a divergence that the waveform window shows.
pub const WAVE_BEFORE: u64 = 64;
/// Cycles after a divergence that the waveform window shows.
pub const WAVE_AFTER: u64 = 4;

/// The waveform window to open for a divergence (`--waves` VCD time = cycle x clock period).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaveWindow {
    /// First cycle.
    pub from_cycle: u64,
    /// Last cycle.
    pub to_cycle: u64,
    /// First VCD time, ps.
    pub from_ps: u64,
    /// Last VCD time, ps.
    pub to_ps: u64,
    /// The VCD that holds the window (`hopsync cosim --waves FILE.vcd`); None when none was
    /// written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl std::fmt::Display for WaveWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let span = format!("cycles {}..={} ({} ps .. {} ps)", self.from_cycle, self.to_cycle, self.from_ps, self.to_ps);
        match &self.file {
            Some(v) => {
                let save = std::path::Path::new(v).with_extension("gtkw");
                write!(f, "{span} in {v}: `gtkwave {v} {}` opens on it", save.display())
            }
            None => write!(f, "{span} (rerun with `--waves FILE.vcd` to record them)"),
        }
    }
}

/// The first difference between the engine under test and the golden model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Divergence {
    /// Cycle of the engine under test at which the record retired.
    pub cycle: u64,
    /// CTA (linear id).
    pub cta: u32,
    /// Warp in the CTA.
    pub warp: u32,
    /// Instruction index.
    pub pc: u32,
    /// The instruction as text.
    pub instr: String,
    /// Source file: the program, or for CUDA input the `.cu` file of nvcc's `.loc`
    /// ([`Machine::source_of`]).
    pub file: String,
    /// Source line in `file`.
    pub line: u32,
    /// CUDA input: the PTX instruction's `file:line:col`, beside the `.cu` line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ptx: String,
    /// What differs (`pc`, `mask`, `register %r3`, `memory`, `mbarrier`, `finding`, ...).
    pub what: String,
    /// The golden model's value.
    pub golden: String,
    /// The engine under test's value.
    pub rtl: String,
    /// Where to look in the waveforms.
    pub waves: WaveWindow,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ptx = if self.ptx.is_empty() { String::new() } else { format!(", PTX {}", self.ptx) };
        write!(
            f,
            "divergence at cycle {} in {}: cta {} warp {} pc {} `{}` ({}:{}{ptx})\n  golden: {}\n  rtl:    {}\n  waves: {}",
            self.cycle,
            self.what,
            self.cta,
            self.warp,
            self.pc,
            self.instr,
            self.file,
            self.line,
            self.golden,
            self.rtl,
            self.waves
        )
    }
}

/// The JSON report of `hopsync cosim`: the engine's run report plus the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CosimReport {
    /// The engine under test's run report.
    #[serde(flatten)]
    pub run: RunReport,
    /// Instructions compared.
    pub compared: u64,
    /// Divergences (the run stops at the first).
    pub divergences: Vec<Divergence>,
    /// Findings of the golden model while it followed the engine (under `--ub warn` it records
    /// them and goes on, as the engine does; a comparison after a finding checks that both sides
    /// do the same undefined thing, not that the program is right). Its races are among them,
    /// and in the run's findings too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub golden_findings: Vec<Finding>,
}

impl CosimReport {
    /// The report of a lockstep run from the engine's run report, the golden side and the first
    /// divergence. Races are findings of the run: only the golden model keeps happens-before
    /// clocks (the engine's machine runs without the detector), so its race findings join the
    /// run's findings, and under `--ub error` they make the run a fault, as `hopsync run` does;
    /// the golden side recorded them and went on comparing ([`Golden::new`]).
    pub fn new(mut run: RunReport, g: &Golden<'_>, divergence: Option<Divergence>) -> CosimReport {
        let races: Vec<Finding> = g.m.findings().iter().filter(|f| f.kind.is_race()).cloned().collect();
        if run.status == "ok" && (divergence.is_some() || (!races.is_empty() && g.m.cfg.ub == UbMode::Error)) {
            run.status = "fault".into();
        }
        run.findings.extend(races);
        CosimReport { run, compared: g.compared, divergences: divergence.into_iter().collect(), golden_findings: g.m.findings().to_vec() }
    }

    /// A clean run: the engine completed with the expected outputs, no divergence, and neither
    /// side found anything.
    pub fn clean(&self) -> bool {
        self.run.status == "ok" && self.divergences.is_empty() && self.run.findings.is_empty() && self.golden_findings.is_empty()
    }

    /// The lines `hopsync cosim` prints after the run's summary: the comparison, each
    /// divergence, and what the golden model found.
    pub fn summary(&self) -> String {
        let mut s = format!("  cosim: {} instructions compared, {} divergences
", self.compared, self.divergences.len());
        for d in &self.divergences {
            s.push_str(&format!("  {d}
"));
        }
        // Races are already listed with the run's findings.
        let other: Vec<&Finding> = self.golden_findings.iter().filter(|f| !f.kind.is_race()).collect();
        if let Some(f) = other.first() {
            s.push_str(&format!(
                "  golden model: {} finding(s), the first {} at {}:{}: not a clean run (the comparison after it only shows both sides went on alike)
",
                other.len(),
                f.kind.name(),
                f.location.file,
                f.location.line
            ));
        }
        s
    }
}

/// What the engine under test did when (part of) a TMA operation completed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TmaEffect {
    /// The bytes it holds afterwards in the operation's destination ranges (shared memory of the
    /// destination CTA, or global memory for a store's writes), in the operation's piece order.
    pub bytes: Vec<(Place, Vec<u8>)>,
    /// complete-tx: (CTA, mbarrier offset, bytes, the mbarrier word afterwards).
    pub complete_tx: Option<(u32, u32, u32, u64)>,
    /// The issuing thread's bulk async-groups afterwards as the engine's bulk-group unit answers
    /// `wait_group` (`exec::BulkView`; None: not observed at this event).
    pub bulk: Option<crate::exec::BulkView>,
}

struct Shared(Rc<RefCell<Vec<Retire>>>);
impl RetireSink for Shared {
    fn retire(&mut self, r: Retire) {
        self.0.borrow_mut().push(r);
    }
}

/// Which barrier a release belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum BarrierKey {
    Named(u32, u32),
    Cluster(u32),
}

fn key_of(e: &SyncEvent) -> Option<BarrierKey> {
    match e {
        SyncEvent::NamedBarrierRelease { cta, id, .. } => Some(BarrierKey::Named(*cta, *id)),
        SyncEvent::ClusterBarrierRelease { cluster, .. } => Some(BarrierKey::Cluster(*cluster)),
        SyncEvent::Mbarrier { .. } => None,
    }
}

/// The golden side of the lockstep.
pub struct Golden<'p> {
    /// The golden machine (public for inspection; drive it only through the methods).
    pub m: Machine<'p>,
    log: Rc<RefCell<Vec<Retire>>>,
    /// Records compared so far.
    pub compared: u64,
    /// Clock period in ps (waveform windows).
    pub period_ps: u64,
    cycle: u64,
    golden_rel: BTreeMap<BarrierKey, VecDeque<SyncEvent>>,
    rtl_rel: BTreeMap<BarrierKey, VecDeque<SyncEvent>>,
}

impl<'p> Golden<'p> {
    /// A golden machine for `prog` (only `cfg.ub` matters: the schedule comes from the engine
    /// under test).
    pub fn new(prog: &'p Program, cfg: Config, period_ps: u64) -> Golden<'p> {
        let mut m = Machine::new(prog, Config { seed: None, ..cfg });
        // A race is the golden model's own finding (the engine keeps no happens-before clocks):
        // recorded, and the comparison goes on.
        m.record_races_and_go_on();
        let log = Rc::new(RefCell::new(Vec::new()));
        m.set_sink(Box::new(Shared(log.clone())));
        Golden { m, log, compared: 0, period_ps, cycle: 0, golden_rel: BTreeMap::new(), rtl_rel: BTreeMap::new() }
    }

    /// Setter: the engine's cycle (what `%clock` / `%clock64` read in the golden model too).
    pub fn set_time(&mut self, cycle: u64) {
        self.cycle = cycle;
        self.m.step = cycle;
    }

    fn window(&self, cycle: u64) -> WaveWindow {
        let from = cycle.saturating_sub(WAVE_BEFORE);
        let to = cycle + WAVE_AFTER;
        WaveWindow { from_cycle: from, to_cycle: to, from_ps: from * self.period_ps, to_ps: to * self.period_ps, file: None }
    }

    /// A divergence at (cta, warp, pc).
    pub fn divergence(&self, cta: u32, warp: u32, pc: u32, what: &str, golden: String, rtl: String) -> Divergence {
        let src = self.m.source_of(pc);
        let (instr, file, line, ptx) = match src {
            Some(s) => (s.instr, s.file, s.line, s.ptx),
            None => ("(end of kernel)".into(), self.m.prog.path.clone(), 0, String::new()),
        };
        Divergence {
            cycle: self.cycle,
            cta,
            warp,
            pc,
            instr,
            file,
            line,
            ptx,
            what: what.into(),
            golden,
            rtl,
            waves: self.window(self.cycle),
        }
    }

    /// Where pending asynchronous operation `seq` was issued: (CTA, warp, pc); (0, 0, 0) when
    /// the golden model has no such operation.
    fn issued_at(&self, seq: u64) -> (u32, u32, u32) {
        self.m.pending.iter().find(|p| p.seq == seq).map(|p| p.issued_at).unwrap_or((0, 0, 0))
    }

    /// Setter: asynchronous operation `seq` completed now in the engine under test.
    pub fn complete_async(&mut self, seq: u64) -> Result<(), Divergence> {
        let (c, w, pc) = self.issued_at(seq);
        match self.m.complete_seq(seq) {
            Ok(true) => {
                self.log.borrow_mut().clear();
                Ok(())
            }
            Ok(false) => Err(self.divergence(c, w, pc, "asynchronous completion", "no pending operation with this issue number".into(), format!("operation {seq} completed"))),
            Err(Stop::Finding) => {
                let f = self.m.findings.last().map(|f| f.kind.name()).unwrap_or("?");
                Err(self.divergence(c, w, pc, "asynchronous completion", format!("finding {f}"), format!("operation {seq} completed without a finding")))
            }
            Err(Stop::Unsupported(s)) => Err(self.divergence(c, w, pc, "asynchronous completion", s, format!("operation {seq} completed"))),
        }
    }

    /// Takes TMA operation `seq`'s part for destination CTA `cta` (None: the whole operation)
    /// out of the pending list and applies it.
    fn apply_tma(&mut self, seq: u64, cta: Option<u32>) -> Result<Option<TmaOp>, Stop> {
        let Some(i) = self.m.pending.iter().position(|p| p.seq == seq) else { return Ok(None) };
        let AsyncOp::Tma(op) = &mut self.m.pending[i].op else { return Ok(None) };
        let whole = match (cta, &mut **op) {
            (Some(c), TmaOp::ToShared { ctas, .. }) => {
                let Some(k) = ctas.iter().position(|x| *x == c) else { return Ok(None) };
                ctas.remove(k);
                ctas.is_empty()
            }
            (None, _) => true,
            _ => return Ok(None),
        };
        let op: TmaOp = if whole {
            let AsyncOp::Tma(op) = self.m.pending.remove(i).op else { unreachable!() };
            *op
        } else {
            let AsyncOp::Tma(op) = &self.m.pending[i].op else { unreachable!() };
            (**op).clone()
        };
        self.m.progress();
        match (cta, &op) {
            (Some(c), TmaOp::ToShared { .. }) => crate::exec::tma_complete_in(&mut self.m, &op, c)?,
            _ => crate::exec::complete_async(&mut self.m, AsyncOp::Tma(Box::new(op.clone())))?,
        }
        Ok(Some(op))
    }

    /// Setter: TMA operation `seq` completed now in the engine under test, into destination CTA
    /// `cta` for a copy into shared memory (a multicast copy completes CTA by CTA), or as a whole
    /// (a store's read or write event); `rtl` is what the engine did. The golden model applies
    /// the same part and compares the destination bytes, the complete-tx and the bulk
    /// async-group state.
    pub fn complete_tma(&mut self, seq: u64, cta: Option<u32>, rtl: &TmaEffect) -> Result<(), Divergence> {
        let (c, w, pc) = self.issued_at(seq);
        let op = match self.apply_tma(seq, cta) {
            Ok(Some(op)) => op,
            Ok(None) => return Err(self.divergence(c, w, pc, "TMA completion", format!("no pending TMA operation {seq} for cta {cta:?}"), format!("operation {seq} completed into cta {cta:?}"))),
            Err(Stop::Finding) => {
                let f = self.m.findings.last().map(|f| f.kind.name()).unwrap_or("?");
                return Err(self.divergence(c, w, pc, "TMA completion", format!("finding {f}"), format!("operation {seq} completed without a finding")));
            }
            Err(Stop::Unsupported(s)) => return Err(self.divergence(c, w, pc, "TMA completion", s, format!("operation {seq} completed"))),
        };
        self.log.borrow_mut().clear();
        let (at, what) = match &op {
            TmaOp::ToShared { at, .. } => (*at, "copy into shared memory"),
            TmaOp::ToGlobal { at, data: Some(_), .. } => (*at, "store's global writes"),
            TmaOp::ToGlobal { at, .. } => (*at, "store's source reads"),
        };
        let (c0, w0, l0, pc) = at;
        for (p, bytes) in &rtl.bytes {
            let g = self.m.read(*p, bytes.len());
            if g != bytes.as_slice() {
                let k = g.iter().zip(bytes).position(|(a, b)| a != b).unwrap_or(0);
                let (s, e) = (k & !15, ((k & !15) + 16).min(bytes.len()));
                return Err(self.divergence(c0, w0, pc, &format!("TMA {what} (operation {seq}): {p:?} byte {k}"), hex(&g[s..e]), hex(&bytes[s..e])));
            }
        }
        if let Some((c, mbar, tx, word)) = rtl.complete_tx {
            let gold = match &op {
                TmaOp::ToShared { mbar: gm, tx: gt, .. } if cta == Some(c) => Some((c, *gm, *gt, self.m.read_mbar_word(c, *gm))),
                _ => None,
            };
            if gold != Some((c, mbar, tx, word)) {
                let show = |x: Option<(u32, u32, u32, u64)>| x.map(|(c, o, t, w)| format!("complete-tx of {t} bytes on cta {c} shared 0x{o:x} -> word {w:#018x}")).unwrap_or_else(|| "no complete-tx".into());
                return Err(self.divergence(c0, w0, pc, &format!("TMA complete-tx (operation {seq})"), show(gold), show(Some((c, mbar, tx, word)))));
            }
        } else if matches!(op, TmaOp::ToShared { .. }) {
            return Err(self.divergence(c0, w0, pc, &format!("TMA complete-tx (operation {seq})"), "a complete-tx".into(), "none".into()));
        }
        if let Some(b) = &rtl.bulk {
            let g = crate::exec::bulk_view(&self.m, c0, w0, l0);
            if &g != b {
                return Err(self.divergence(c0, w0, pc, &format!("bulk async-groups of lane {l0} (operation {seq})"), format!("{g:?}"), format!("{b:?}")));
            }
        }
        Ok(())
    }

    /// The engine under test stopped with finding `kind` while completing TMA operation `seq`
    /// (into `cta`): the golden model completes the same part and must stop with that finding.
    pub fn expect_async_finding(&mut self, seq: u64, cta: Option<u32>, kind: FindingKind) -> Result<(), Divergence> {
        let (c, w, pc) = self.issued_at(seq);
        let before = self.m.findings.len();
        let ub = self.m.cfg.ub;
        self.m.cfg.ub = UbMode::Error;
        let r = self.apply_tma(seq, cta);
        self.m.cfg.ub = ub;
        match (r, self.m.findings.get(before).map(|f| f.kind)) {
            (_, Some(k)) if k == kind => Ok(()),
            (_, got) => Err(self.divergence(c, w, pc, &format!("finding at the completion of TMA operation {seq}"), got.map(|k| k.name().to_string()).unwrap_or_else(|| "no finding".into()), kind.name().into())),
        }
    }

    /// Setter: the engine under test's unit applied step `part` of the mbarrier instruction (family
    /// `family`) that warp (cta, warp) executes at `pc`, before the instruction retires, with the
    /// word change `rtl` (None: the word did not change). The golden model applies that step now
    /// ([`crate::exec::mbar_step_early`]) and compares the change; the instruction's other steps,
    /// registers and record come with its retire ([`Golden::step`]). `half`: only the expect-tx
    /// half of a merged multi-lane `.expect_tx` arrive step.
    #[allow(clippy::too_many_arguments)]
    pub fn mbar_part(&mut self, cta: u32, warp: u32, pc: u32, family: MbarFamily, part: u32, half: bool, rtl: Option<&SyncEvent>) -> Result<(), Divergence> {
        let (c, w) = (cta, warp);
        if c as usize >= self.m.ctas.len() || w as usize >= self.m.ctas[c as usize].warps.len() {
            return Err(self.divergence(c, w, pc, "warp", "no such warp".into(), format!("cta {c} warp {w}")));
        }
        let group = match self.m.issue_group(c, w) {
            Some((gpc, group)) if gpc == pc => group,
            Some((gpc, _)) => return Err(self.divergence(c, w, pc, "pc", format!("next pc {gpc}"), format!("pc {pc} (mbarrier step {part})"))),
            None => {
                let why = self.m.describe_wait(c as usize, w as usize);
                return Err(self.divergence(c, w, pc, "schedule", format!("warp has no ready lane ({why})"), format!("applies step {part} of pc {pc}")));
            }
        };
        let gold = match crate::exec::mbar_step_early(&mut self.m, c, w, pc, group, family, part as usize, half) {
            Ok(changes) => changes,
            Err(Stop::Finding) => {
                let f = self.m.findings.last().cloned();
                let text = f.map(|f| format!("finding {}: {}", f.kind.name(), f.message)).unwrap_or_default();
                return Err(self.divergence(c, w, pc, &format!("mbarrier step {part}"), text, "applied without a finding".into()));
            }
            Err(Stop::Unsupported(s)) => return Err(self.divergence(c, w, pc, &format!("mbarrier step {part}"), s, "applied".into())),
        };
        let changed = |e: &&SyncEvent| matches!(e, SyncEvent::Mbarrier { old, new, .. } if old != new);
        let g: Vec<&SyncEvent> = gold.iter().filter(changed).collect();
        let r: Vec<&SyncEvent> = rtl.into_iter().filter(changed).collect();
        if g != r {
            let show = |x: &[&SyncEvent]| match x.first() {
                Some(SyncEvent::Mbarrier { cta, offset, old, new }) => format!("cta {cta} shared 0x{offset:x}: {old:#018x} -> {new:#018x}"),
                Some(e) => format!("{e:?}"),
                None => "no change".into(),
            };
            return Err(self.divergence(c, w, pc, &format!("mbarrier change of step {part}"), show(&g), show(&r)));
        }
        Ok(())
    }

    /// Executes the instruction of `rtl` in the golden model and compares the records.
    pub fn step(&mut self, rtl: &Retire) -> Result<(), Divergence> {
        let (c, w) = (rtl.cta, rtl.warp);
        if c as usize >= self.m.ctas.len() || w as usize >= self.m.ctas[c as usize].warps.len() {
            return Err(self.divergence(c, w, rtl.pc, "warp", "no such warp".into(), format!("cta {c} warp {w}")));
        }
        match self.m.issue_group(c, w) {
            None => {
                let why = self.m.describe_wait(c as usize, w as usize);
                return Err(self.divergence(c, w, rtl.pc, "schedule", format!("warp has no ready lane ({why})"), format!("executes pc {}", rtl.pc)));
            }
            Some((pc, _)) if pc != rtl.pc => {
                return Err(self.divergence(c, w, rtl.pc, "pc", format!("next pc {pc}"), format!("pc {}", rtl.pc)));
            }
            _ => {}
        }
        self.log.borrow_mut().clear();
        match self.m.step_warp(c, w) {
            Ok(_) => {}
            Err(Stop::Finding) => {
                let f = self.m.findings.last().cloned();
                let text = f.map(|f| format!("finding {}: {}", f.kind.name(), f.message)).unwrap_or_default();
                return Err(self.divergence(c, w, rtl.pc, "finding", text, "retired without a finding".into()));
            }
            Err(Stop::Unsupported(s)) => return Err(self.divergence(c, w, rtl.pc, "unsupported", s, "retired".into())),
        }
        let gold = self.log.borrow_mut().pop();
        let Some(gold) = gold else {
            // Falling off the end of the body retires nothing in the golden model.
            return Err(self.divergence(c, w, rtl.pc, "retire", "no instruction retired (implicit exit)".into(), "a retire record".into()));
        };
        self.compared += 1;
        let mut gold = gold;
        let is_exit = self.m.module().kernel.body.get(rtl.pc as usize).is_some_and(|i| matches!(i.op, hopsync_firmware::Opcode::Exit | hopsync_firmware::Opcode::Ret));
        let released = |r: &Retire| r.sync.iter().any(|e| matches!(e, SyncEvent::NamedBarrierRelease { .. }));
        if is_exit && released(&gold) && !released(rtl) {
            // The golden model completed a barrier inside this exit and delivered its bar.red
            // results; the engine under test does that later (its unit's exit sweep) and reports
            // the delivered values with the release (checked in `release`).
            gold.regs.clear();
        }
        if let Some((what, g, r)) = compare(&self.m, &gold, rtl) {
            return Err(self.divergence(c, w, rtl.pc, &what, g, r));
        }
        for e in gold.sync.iter().filter(|e| key_of(e).is_some()) {
            self.push_release(e, true, rtl)?;
        }
        for e in rtl.sync.iter().filter(|e| key_of(e).is_some()) {
            self.push_release(e, false, rtl)?;
        }
        Ok(())
    }

    /// A barrier release the engine under test observed outside an instruction (a named barrier
    /// completed by its unit's sweep after an exit), with the `bar.red` results it delivered:
    /// (cta, warp, register write). The golden model applied that release inside the exit
    /// instruction, so its registers must already hold those values.
    pub fn release(&mut self, e: &SyncEvent, regs: &[(u32, u32, RegWrite)]) -> Result<(), Divergence> {
        let r = Retire::default();
        self.push_release(e, false, &r)?;
        for (c, w, rw) in regs {
            let Some(warp) = self.m.ctas.get(*c as usize).and_then(|x| x.warps.get(*w as usize)) else { continue };
            let g = RegWrite { reg: rw.reg, mask: rw.mask, values: (0..32).map(|l| if rw.mask >> l & 1 == 1 { warp.regs[rw.reg as usize * 32 + l] } else { 0 }).collect() };
            if g.values != rw.values.iter().enumerate().map(|(l, v)| if rw.mask >> l & 1 == 1 { *v } else { 0 }).collect::<Vec<_>>() {
                let name = self.m.module().kernel.regs.get(rw.reg as usize).map(|d| d.name.clone()).unwrap_or_default();
                return Err(self.divergence(*c, *w, 0, &format!("bar.red result {name} delivered by {e:?}"), lanes_text(&g), lanes_text(rw)));
            }
        }
        Ok(())
    }

    fn push_release(&mut self, e: &SyncEvent, golden: bool, at: &Retire) -> Result<(), Divergence> {
        let Some(k) = key_of(e) else { return Ok(()) };
        if golden {
            self.golden_rel.entry(k).or_default().push_back(e.clone());
        } else {
            self.rtl_rel.entry(k).or_default().push_back(e.clone());
        }
        let (g, r) = (self.golden_rel.entry(k).or_default(), self.rtl_rel.get_mut(&k));
        if let (Some(ge), Some(re)) = (g.front().cloned(), r.and_then(|q| q.front().cloned())) {
            self.golden_rel.get_mut(&k).unwrap().pop_front();
            self.rtl_rel.get_mut(&k).unwrap().pop_front();
            if ge != re {
                return Err(self.divergence(at.cta, at.warp, at.pc, "barrier release", format!("{ge:?}"), format!("{re:?}")));
            }
        }
        Ok(())
    }

    /// At the end of a run that completed in the engine under test: every release matched, no
    /// asynchronous operation left, every warp done, and the same global memory.
    pub fn finish(&mut self, rtl: &Machine<'_>) -> Result<(), Divergence> {
        for (k, q) in &self.golden_rel {
            if let Some(e) = q.front() {
                return Err(self.divergence(0, 0, 0, "barrier release", format!("{e:?}"), format!("no matching release of {k:?}")));
            }
        }
        for (k, q) in &self.rtl_rel {
            if let Some(e) = q.front() {
                return Err(self.divergence(0, 0, 0, "barrier release", format!("no matching release of {k:?}"), format!("{e:?}")));
            }
        }
        if let Some(p) = self.m.pending.first() {
            let (c, w, pc) = p.issued_at;
            return Err(self.divergence(c, w, pc, "asynchronous operations", format!("operation {} still pending: {:?}", p.seq, p.op), "none pending".into()));
        }
        for (c, cta) in self.m.ctas.iter().enumerate() {
            for (w, warp) in cta.warps.iter().enumerate() {
                if !warp.exited() {
                    let why = self.m.describe_wait(c, w);
                    return Err(self.divergence(c as u32, w as u32, warp.pc().iter().copied().min().unwrap_or(0), "exit", format!("warp not done ({why})"), "every warp exited".into()));
                }
            }
        }
        for (g, r) in self.m.global.iter().zip(&rtl.global) {
            if g.bytes != r.bytes {
                let k = g.bytes.iter().zip(&r.bytes).position(|(a, b)| a != b).unwrap_or(0);
                let s = k & !15;
                let e = (s + 16).min(g.bytes.len());
                return Err(self.divergence(
                    0,
                    0,
                    0,
                    &format!("global memory `{}` at byte {k}", g.name),
                    hex(&g.bytes[s..e]),
                    hex(&r.bytes[s..e.min(r.bytes.len())]),
                ));
            }
        }
        Ok(())
    }

    /// At the end of a run: the golden model's findings against the engine's, per warp in order, by
    /// kind and instruction (CTA, warp, pc; 0 for findings outside an instruction). The engine's
    /// whole-machine findings (`Deadlock`, `StepLimit`) are its own: the golden model, driven in
    /// the engine's order, does not schedule and so cannot reach them.
    pub fn compare_findings(&self, rtl: &[Finding]) -> Result<(), Divergence> {
        let key = |f: &Finding| (f.kind, f.location.cta, f.location.warp, f.location.pc);
        // Findings of different warps in one cycle reach the two sides in different orders
        // (the engine records a CTA's finding when its unit answers): compare them as sets
        // ordered by place, which keeps each warp's own findings in program order.
        // Races are the golden model's own (the engine's units keep no happens-before clocks).
        let mut gold: Vec<_> = self.m.findings.iter().filter(|f| !f.kind.is_race()).map(key).collect();
        let mut rtl: Vec<_> = rtl.iter().filter(|f| !matches!(f.kind, FindingKind::Deadlock | FindingKind::StepLimit)).map(key).collect();
        gold.sort_by_key(|&(_, c, w, _)| (c, w));
        rtl.sort_by_key(|&(_, c, w, _)| (c, w));
        let Some(k) = (0..gold.len().max(rtl.len())).find(|&k| gold.get(k) != rtl.get(k)) else { return Ok(()) };
        let show = |x: Option<&(FindingKind, u32, u32, u32)>| match x {
            Some((kind, c, w, pc)) => format!("{} at cta {c} warp {w} pc {pc}", kind.name()),
            None => "no finding".into(),
        };
        let (c, w, pc) = gold.get(k).or(rtl.get(k)).map(|&(_, c, w, pc)| (c, w, pc)).unwrap_or_default();
        Err(self.divergence(c, w, pc, &format!("finding {k}"), show(gold.get(k)), show(rtl.get(k))))
    }

    /// The engine under test stopped with a finding at (cta, warp, pc) (`None`: not at an
    /// instruction): the golden model executes that warp's next group and must name the same
    /// finding kind. Findings outside instructions are not replayed (their asynchronous
    /// operation is not identified).
    pub fn expect_finding(&mut self, kind: FindingKind, at: Option<(u32, u32, u32)>) -> Result<(), Divergence> {
        let Some((c, w, pc)) = at else { return Ok(()) };
        if c as usize >= self.m.ctas.len() || w as usize >= self.m.ctas[c as usize].warps.len() {
            return Ok(());
        }
        let before = self.m.findings.len();
        let ub = self.m.cfg.ub;
        self.m.cfg.ub = UbMode::Error;
        let r = self.m.step_warp(c, w);
        self.m.cfg.ub = ub;
        let got = self.m.findings.get(before).map(|f| f.kind);
        match (r, got) {
            (_, Some(k)) if k == kind => Ok(()),
            (_, Some(k)) => Err(self.divergence(c, w, pc, "finding", k.name().into(), kind.name().into())),
            (_, None) => {
                // Deadlock and the step limit are whole-machine findings: not at an instruction.
                if matches!(kind, FindingKind::Deadlock | FindingKind::StepLimit) {
                    return Ok(());
                }
                Err(self.divergence(c, w, pc, "finding", "no finding".into(), kind.name().into()))
            }
        }
    }
}

/// Memory writes that are not the write of an mbarrier word carried by a sync event.
fn plain_writes<'a>(r: &'a Retire) -> Vec<&'a MemWrite> {
    r.mem
        .iter()
        .filter(|w| {
            !r.sync.iter().any(|e| match (e, w.space) {
                (SyncEvent::Mbarrier { cta, offset, new, .. }, MemSpace::Shared(c)) => *cta == c && *offset as u64 == w.addr && w.bytes == new.to_le_bytes(),
                _ => false,
            })
        })
        .collect()
}

/// mbarrier word changes (unchanged words dropped).
fn mbar_changes(r: &Retire) -> Vec<&SyncEvent> {
    r.sync.iter().filter(|e| matches!(e, SyncEvent::Mbarrier { old, new, .. } if old != new)).collect()
}

fn regs_sorted(r: &Retire) -> Vec<&RegWrite> {
    let mut v: Vec<&RegWrite> = r.regs.iter().filter(|w| w.mask != 0).collect();
    v.sort_by_key(|w| w.reg);
    v
}

fn lanes_text(w: &RegWrite) -> String {
    let vals: Vec<String> = (0..32).filter(|l| w.mask >> l & 1 == 1).map(|l| format!("{l}:{:#x}", w.values[l])).collect();
    format!("mask {:#010x} [{}]", w.mask, vals.join(" "))
}

/// The first difference between a golden record and the engine's: (what, golden, engine).
pub fn compare(m: &Machine<'_>, g: &Retire, r: &Retire) -> Option<(String, String, String)> {
    if g.pc != r.pc {
        return Some(("pc".into(), g.pc.to_string(), r.pc.to_string()));
    }
    if g.mask != r.mask {
        return Some(("executing lanes".into(), format!("{:#010x}", g.mask), format!("{:#010x}", r.mask)));
    }
    let (gr, rr) = (regs_sorted(g), regs_sorted(r));
    let name = |reg: u32| m.module().kernel.regs.get(reg as usize).map(|d| d.name.clone()).unwrap_or_else(|| format!("r{reg}"));
    for k in 0..gr.len().max(rr.len()) {
        match (gr.get(k), rr.get(k)) {
            (Some(a), Some(b)) if a.reg == b.reg => {
                let same = a.mask == b.mask && (0..32).all(|l| a.mask >> l & 1 == 0 || a.values[l] == b.values[l]);
                if !same {
                    return Some((format!("register {}", name(a.reg)), lanes_text(a), lanes_text(b)));
                }
            }
            (a, b) => {
                let reg = a.map(|x| x.reg).into_iter().chain(b.map(|x| x.reg)).min().unwrap_or(0);
                let show = |x: Option<&&RegWrite>| match x {
                    Some(w) if w.reg == reg => lanes_text(w),
                    _ => "not written".into(),
                };
                return Some((format!("register {}", name(reg)), show(a), show(b)));
            }
        }
    }
    let (gm, rm) = (plain_writes(g), plain_writes(r));
    if gm != rm {
        let k = (0..gm.len().max(rm.len())).find(|&k| gm.get(k) != rm.get(k)).unwrap_or(0);
        let show = |x: Option<&&MemWrite>| x.map(|w| format!("{:?} 0x{:x} <- {}", w.space, w.addr, hex(&w.bytes))).unwrap_or_else(|| "no write".into());
        return Some((format!("memory write {k}"), show(gm.get(k)), show(rm.get(k))));
    }
    let (gs, rs) = (mbar_changes(g), mbar_changes(r));
    if gs != rs {
        let k = (0..gs.len().max(rs.len())).find(|&k| gs.get(k) != rs.get(k)).unwrap_or(0);
        let show = |x: Option<&&SyncEvent>| match x {
            Some(SyncEvent::Mbarrier { cta, offset, old, new }) => format!("cta {cta} shared 0x{offset:x}: {old:#018x} -> {new:#018x}"),
            Some(e) => format!("{e:?}"),
            None => "no change".into(),
        };
        return Some((format!("mbarrier change {k}"), show(gs.get(k)), show(rs.get(k))));
    }
    None
}
