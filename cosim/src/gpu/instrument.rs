//! The instrumentation pass: a copy of a program's IR that records, per thread, the results of
//! its sync instructions in a global trace buffer. The golden engine and the GPU run the same
//! instrumented PTX, so their traces compare slot by slot.
//!
//! ## What is traced
//!
//! After each instruction below, each executing thread stores one slot per *field*:
//!
//! | instruction | fields |
//! | --- | --- |
//! | `mbarrier.arrive`, `mbarrier.arrive_drop` (plain, with count, `.expect_tx`) | `token_hi`: bits 63..32 of the state token |
//! | the same with `.noComplete` | `token_lo` (bits 31..0), `token_hi` |
//! | `mbarrier.test_wait`, `mbarrier.try_wait` (all forms) | `wait_complete` |
//! | `mbarrier.pending_count` | `pending_count` |
//! | `bar.red` / `barrier.red` | `bar_red` |
//! | `elect.sync` | `elect_leader` (unless `_`), `elect_pred` |
//! | `vote.sync` | `vote` |
//! | `match.sync` | `match_mask`, `match_pred` (`.all` with `d|p`) |
//! | `redux.sync` | `redux` |
//! | `activemask` | `activemask` |
//!
//! An arrive whose token goes to `_` records nothing. The low 32 bits of plain arrive tokens are
//! **not stored**: on sm_90 the instruction does not write them (docs/MBARRIER_ENCODING.md, "The
//! arrive token"); the `.noComplete` forms return the lane-group mask there and are stored.
//!
//! ## The trace buffer
//!
//! Buffer and kernel parameter `__hopsync_trace` (added last to the parameter list and to the
//! manifest). With `T` threads in the grid (thread `t` = linear CTA id * threads per CTA + linear
//! thread id in its CTA, x fastest) and `S` slots per thread:
//!
//! - bytes `[4t, 4t+4)`: `u32` count of slots thread `t` has written (it keeps counting past `S`:
//!   a count above `S` is a detected overflow; slots past `S` are not stored, nothing wraps);
//! - from `header_bytes = roundup(4T, 256)`: slot `k` of thread `t` is the `u64` at
//!   `header_bytes + (t * S + k) * 8`.
//!
//! A slot is `(field_id + 1) << 48 | value32`: bits 63..48 name the field (so a reader can align
//! the two traces and name the instruction), bits 47..32 are zero, bits 31..0 hold the value
//! (predicates as 0/1).
//!
//! **Polling loops.** A run of `false` results of one wait instruction followed by another
//! result of the same instruction occupies one slot: the thread overwrites the slot of a `false`
//! poll when its next slot would be the same wait field again. How often a wait polls is timing;
//! the trace keeps the final answer of each polling run.
//!
//! ## `%clock64` around each sync and async instruction
//!
//! Every traced instruction above, and every sync or async instruction without a traced value
//! ([`timed`]: `bar`/`barrier` (sync, arrive), `bar.warp.sync`, `barrier.cluster.*`, `mbarrier.*`,
//! `cp.async*`, `cp.reduce.async.bulk*`, `red.async`, `st.async`, `tensormap.cp_fenceproxy`),
//! gets two more fields after its value fields (not `bar.red` / `barrier.red`: see [`timed`]):
//!
//! - `clock_before`: `%clock64` read right before the instruction (bits 47..0 of it: the slot keeps
//!   bits 63..48 for the field tag; 2^48 cycles are days);
//! - `clock_delta`: `%clock64` read after the instruction **and after the first read of its
//!   result** (the trace code's first move of the result register), minus `clock_before`, bits
//!   31..0. On sm_90 a `%clock64` read does not wait for an outstanding result (the calibration
//!   programs read the clock right after a `try_wait` and measured 2 cycles), so the read of the
//!   result first makes the delta issue-to-result, not issue-to-issue. Value-less instructions
//!   have nothing to wait for: their delta is the issue cost (for `bar.sync` on sm_90,
//!   `BAR.SYNC.DEFER_BLOCKING`, the wait may land in a later instruction).
//!
//! The golden engine reads `%clock64` as its scheduler step counter, the RTL engine as its cycle
//! count (PTX 10.26 `%clock64`: a per-SM 64-bit cycle counter). Clock slots are timing, not
//! semantics: replay never compares their values, it reports them (`TraceData` keeps only the
//! per-instruction distribution of `clock_delta`, `trace::ClockData`).
//!
//! **Perturbation.** The trace code between traced instructions (about fifteen instructions and
//! one global store per slot) changes *when* things happen: a calibration figure measured in the
//! instrumented launch is slower than in the plain launch (H200, 2026-11-22: arrive -> try_wait
//! round trip 78 vs 233 cycles). A `clock_before`/`clock_delta` pair brackets only the instruction
//! and one move, so the per-instruction cost is not inflated by the trace code itself; what the
//! trace code does change is the interleaving around waits (how long a wait waits depends on
//! when the other threads' arrives come, and those are delayed by their own trace code). The
//! golden and RTL engines run the same instrumented text, so their figures are perturbed the same
//! way; the calibration figures (`hopsync calibrate`) keep coming from the plain launch.

use crate::gpu::TRACE_BUFFER;
use hopsync_firmware::ir::*;
use hopsync_firmware::manifest::Launch;
use serde::{Deserialize, Serialize};

/// What a trace field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// Bits 63..32 of an mbarrier arrive token.
    TokenHi,
    /// Bits 31..0 of a `.noComplete` arrive token.
    TokenLo,
    /// waitComplete of test_wait / try_wait.
    WaitComplete,
    /// `mbarrier.pending_count` result.
    PendingCount,
    /// `bar.red` result.
    BarRed,
    /// `elect.sync` leader lane.
    ElectLeader,
    /// `elect.sync` predicate.
    ElectPred,
    /// `vote.sync` result.
    Vote,
    /// `match.sync` mask.
    MatchMask,
    /// `match.all.sync` predicate.
    MatchPred,
    /// `redux.sync` result.
    Redux,
    /// `activemask` result.
    Activemask,
    /// `%clock64` right before the instruction, bits 47..0.
    ClockBefore,
    /// `%clock64` after the instruction and the first read of its result, minus `ClockBefore`.
    ClockDelta,
}

impl FieldKind {
    /// Snake-case name.
    pub fn name(self) -> &'static str {
        match self {
            FieldKind::TokenHi => "token_hi",
            FieldKind::TokenLo => "token_lo",
            FieldKind::WaitComplete => "wait_complete",
            FieldKind::PendingCount => "pending_count",
            FieldKind::BarRed => "bar_red",
            FieldKind::ElectLeader => "elect_leader",
            FieldKind::ElectPred => "elect_pred",
            FieldKind::Vote => "vote",
            FieldKind::MatchMask => "match_mask",
            FieldKind::MatchPred => "match_pred",
            FieldKind::Redux => "redux",
            FieldKind::Activemask => "activemask",
            FieldKind::ClockBefore => "clock_before",
            FieldKind::ClockDelta => "clock_delta",
        }
    }
    /// Whether the field holds a `%clock64` reading (timing: never compared for equality).
    pub fn is_clock(self) -> bool {
        matches!(self, FieldKind::ClockBefore | FieldKind::ClockDelta)
    }
}

/// One traced value of one instruction of the original program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    /// Field id (slot tag - 1).
    pub id: u32,
    /// Instruction index in the original program.
    pub pc: u32,
    /// Source line in the original program.
    pub line: u32,
    /// The instruction as PTX text.
    pub instr: String,
    /// What it holds.
    pub kind: FieldKind,
    /// The register it comes from.
    pub reg: String,
}

/// How a field's value is read out of its register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The whole register (predicates as 0/1, narrow registers zero-extended, 64-bit: low half).
    Low,
    /// Bits 63..32 of a 64-bit register.
    High,
}

/// The trace buffer's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Threads in the grid.
    pub threads: u32,
    /// Slots per thread.
    pub slots: u32,
    /// Bytes of the per-thread count header.
    pub header_bytes: u64,
}

impl Layout {
    /// The layout for a launch.
    pub fn new(launch: &Launch, slots: u32) -> Layout {
        let threads = launch.grid.iter().product::<u32>() * launch.block.iter().product::<u32>();
        Layout { threads, slots, header_bytes: (threads as u64 * 4).div_ceil(256) * 256 }
    }
    /// Total buffer bytes.
    pub fn bytes(&self) -> u64 {
        self.header_bytes + self.threads as u64 * self.slots as u64 * 8
    }
    /// Decodes a trace buffer: per thread, the raw count and the stored slots (at most `slots`).
    pub fn decode(&self, buf: &[u8]) -> (Vec<u32>, Vec<Vec<u64>>) {
        let mut counts = Vec::with_capacity(self.threads as usize);
        let mut slots = Vec::with_capacity(self.threads as usize);
        for t in 0..self.threads as usize {
            let c = buf.get(4 * t..4 * t + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).unwrap_or(0);
            counts.push(c);
            let n = c.min(self.slots) as usize;
            let base = self.header_bytes as usize + t * self.slots as usize * 8;
            let v = (0..n).map(|k| buf.get(base + 8 * k..base + 8 * k + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).unwrap_or(0)).collect();
            slots.push(v);
        }
        (counts, slots)
    }
}

/// The field id a slot names (None for an empty slot).
pub fn slot_field(slot: u64) -> Option<u32> {
    let tag = (slot >> 48) as u32;
    tag.checked_sub(1)
}

/// The 32-bit value of a slot.
pub fn slot_value(slot: u64) -> u32 {
    slot as u32
}

/// The 48-bit value of a slot (`clock_before` uses bits 47..0).
pub fn slot_value48(slot: u64) -> u64 {
    slot & 0xffff_ffff_ffff
}

/// Whether `%clock64` is read around the instruction: it has traced values, or it is a sync or
/// async instruction (module doc).
pub fn timed(ins: &Instr) -> bool {
    use Opcode as O;
    // Not `bar.red` / `barrier.red`: on sm_90 a warp whose threads reach two different
    // `barrier.red` instructions gets the result in the destination register of only one of them
    // (docs/SILICON_DISAGREEMENTS.md §4), so a register live across the other one is overwritten;
    // with the clock pair around it, ptxas put `%__hs_c0` there (gen/small_068, H200 2026-11-22).
    if matches!(ins.op, O::Bar | O::Barrier) && ins.has(Mod::Red) {
        return false;
    }
    !fields_of(ins).is_empty()
        || matches!(
            ins.op,
            O::Bar
                | O::Barrier
                | O::BarWarpSync
                | O::BarrierClusterArrive
                | O::BarrierClusterWait
                | O::RedAsync
                | O::StAsync
                | O::MbarrierInit
                | O::MbarrierInval
                | O::MbarrierExpectTx
                | O::MbarrierCompleteTx
                | O::MbarrierArrive
                | O::MbarrierArriveDrop
                | O::MbarrierTestWait
                | O::MbarrierTryWait
                | O::CpAsync
                | O::CpAsyncCommitGroup
                | O::CpAsyncWaitGroup
                | O::CpAsyncWaitAll
                | O::CpAsyncMbarrierArrive
                | O::CpAsyncBulk
                | O::CpAsyncBulkTensor
                | O::CpReduceAsyncBulk
                | O::CpReduceAsyncBulkTensor
                | O::CpAsyncBulkPrefetch
                | O::CpAsyncBulkPrefetchTensor
                | O::CpAsyncBulkCommitGroup
                | O::CpAsyncBulkWaitGroup
                | O::TensormapCpFenceproxy
        )
}

/// The fields an instruction produces, with the register and part each is read from.
fn fields_of(ins: &Instr) -> Vec<(FieldKind, RegId, Part)> {
    use Opcode as O;
    let reg0 = || match ins.operands.first() {
        Some(Operand::Reg(r)) => Some(*r),
        _ => None,
    };
    let mut v = Vec::new();
    match ins.op {
        O::MbarrierArrive | O::MbarrierArriveDrop => {
            if let Some(r) = reg0() {
                if ins.has(Mod::NoComplete) {
                    v.push((FieldKind::TokenLo, r, Part::Low));
                }
                v.push((FieldKind::TokenHi, r, Part::High));
            }
        }
        O::MbarrierTestWait | O::MbarrierTryWait => {
            if let Some(r) = reg0() {
                v.push((FieldKind::WaitComplete, r, Part::Low));
            }
        }
        O::MbarrierPendingCount => {
            if let Some(r) = reg0() {
                v.push((FieldKind::PendingCount, r, Part::Low));
            }
        }
        O::Bar | O::Barrier if ins.has(Mod::Red) => {
            if let Some(r) = reg0() {
                v.push((FieldKind::BarRed, r, Part::Low));
            }
        }
        O::Elect => match ins.operands.first() {
            Some(Operand::Pair(d, p)) => {
                if d.0 != u32::MAX {
                    v.push((FieldKind::ElectLeader, *d, Part::Low));
                }
                v.push((FieldKind::ElectPred, *p, Part::Low));
            }
            Some(Operand::Reg(p)) => v.push((FieldKind::ElectPred, *p, Part::Low)),
            _ => {}
        },
        O::Vote => {
            if let Some(r) = reg0() {
                v.push((FieldKind::Vote, r, Part::Low));
            }
        }
        O::Match => match ins.operands.first() {
            Some(Operand::Pair(d, p)) => {
                if d.0 != u32::MAX {
                    v.push((FieldKind::MatchMask, *d, Part::Low));
                }
                v.push((FieldKind::MatchPred, *p, Part::Low));
            }
            Some(Operand::Reg(d)) => v.push((FieldKind::MatchMask, *d, Part::Low)),
            _ => {}
        },
        O::Redux => {
            if let Some(r) = reg0() {
                v.push((FieldKind::Redux, r, Part::Low));
            }
        }
        O::Activemask => {
            if let Some(r) = reg0() {
                v.push((FieldKind::Activemask, r, Part::Low));
            }
        }
        _ => {}
    }
    v
}

/// Every trace field of a program, in program order (ids are dense from 0).
pub fn fields(m: &Module) -> Vec<Field> {
    let mut out = Vec::new();
    let (a, b) = m.funcs[m.entry.0 as usize].body.unwrap_or((0, 0));
    for (pc, ins) in m.kernel.body.iter().enumerate().take(b as usize).skip(a as usize) {
        let mut kinds: Vec<(FieldKind, String)> = fields_of(ins).into_iter().map(|(k, r, _)| (k, m.kernel.regs[r.0 as usize].name.clone())).collect();
        if timed(ins) {
            kinds.push((FieldKind::ClockBefore, "%clock64".into()));
            kinds.push((FieldKind::ClockDelta, "%clock64".into()));
        }
        for (kind, reg) in kinds {
            out.push(Field { id: out.len() as u32, pc: pc as u32, line: ins.loc.line, instr: hopsync_firmware::printer::print_instr(m, ins), kind, reg });
        }
    }
    out
}

struct Regs {
    g: RegId,
    q: RegId,
    c: RegId,
    k: RegId,
    last: RegId,
    v: RegId,
    h: RegId,
    t: RegId,
    t0: RegId,
    t1: RegId,
    t2: RegId,
    s: RegId,
    o: RegId,
    a: RegId,
    p: RegId,
    cnt: RegId,
    base: RegId,
    c0: RegId,
    c1: RegId,
}

fn ins(op: Opcode, mods: &[Mod], guard: Option<Guard>, operands: Vec<Operand>, loc: Loc) -> Instr {
    let mut set = ModSet::default();
    for m in mods {
        set.insert(*m);
    }
    Instr { op, mods: set, ty2: None, ty3: None, ty4: None, guard, operands, loc, src: SrcRef(None) }
}

fn r(x: RegId) -> Operand {
    Operand::Reg(x)
}
fn imm(v: i64) -> Operand {
    Operand::Imm(v)
}

/// Instruments a module for a launch with `slots` slots per thread. Returns the new module and
/// its fields (ids, original pcs and lines: see [`fields`]).
pub fn instrument(m: &Module, launch: &Launch, slots: u32) -> Result<(Module, Vec<Field>), String> {
    let layout = Layout::new(launch, slots);
    if slots == 0 || slots as u64 * 8 > u32::MAX as u64 {
        return Err(format!("slots per thread {slots} out of range"));
    }
    let fields = fields(m);
    if fields.len() >= 0xffff {
        return Err(format!("{} trace fields; at most 65534", fields.len()));
    }
    let mut out = m.clone();
    if out.symbols.iter().any(|s| s.name == TRACE_BUFFER) {
        return Err(format!("the program already declares `{TRACE_BUFFER}`"));
    }
    let mut add = |name: &str, ty: Mod| -> Result<RegId, String> {
        let name = format!("%__hs_{name}");
        if out.kernel.regs.iter().any(|r| r.name == name) {
            return Err(format!("the program already declares register `{name}`"));
        }
        out.kernel.regs.push(RegDecl { name, ty, range: None, loc: Default::default() });
        Ok(RegId(out.kernel.regs.len() as u32 - 1))
    };
    let rg = Regs {
        g: add("g", Mod::Pred)?,
        q: add("q", Mod::Pred)?,
        c: add("c", Mod::Pred)?,
        k: add("k", Mod::B32)?,
        last: add("last", Mod::B32)?,
        v: add("v", Mod::B32)?,
        h: add("h", Mod::B32)?,
        t: add("t", Mod::B32)?,
        t0: add("t0", Mod::B32)?,
        t1: add("t1", Mod::B32)?,
        t2: add("t2", Mod::B32)?,
        s: add("s", Mod::B64)?,
        o: add("o", Mod::B64)?,
        a: add("a", Mod::B64)?,
        p: add("p", Mod::B64)?,
        cnt: add("cnt", Mod::B64)?,
        base: add("base", Mod::B64)?,
        c0: add("c0", Mod::B64)?,
        c1: add("c1", Mod::B64)?,
    };
    let sym = SymId(out.symbols.len() as u32);
    out.symbols.push(Symbol {
        name: TRACE_BUFFER.into(),
        space: Space::Param,
        ty: Mod::U64,
        align: None,
        array: None,
        is_extern: false,
        attrs: Vec::new(),
        init: Vec::new(),
        module_scope: false,
        loc: Default::default(),
        func: Some(m.entry),
    });
    out.kernel.params.push(sym);
    out.funcs[m.entry.0 as usize].params.push(Formal::Param(sym));

    let old = &m.kernel.body;
    let loc0 = old.first().map(|i| i.loc).unwrap_or(Loc { line: 1, col: 1 });
    let mut body: Vec<Instr> = Vec::with_capacity(old.len() * 2 + 32);
    use Opcode as O;
    // ---- prologue: this thread's count word and first slot ----
    let l = &launch;
    let sreg = |s: Sreg| Operand::Special(s);
    let tpb = l.block.iter().product::<u32>() as i64;
    let p = [
        ins(O::Mov, &[Mod::U32], None, vec![r(rg.t0), sreg(Sreg::Tid(Dim::Z))], loc0),
        ins(O::Mov, &[Mod::U32], None, vec![r(rg.t1), sreg(Sreg::Tid(Dim::Y))], loc0),
        ins(O::Mad, &[Mod::Lo, Mod::U32], None, vec![r(rg.t0), r(rg.t0), imm(l.block[1] as i64), r(rg.t1)], loc0),
        ins(O::Mov, &[Mod::U32], None, vec![r(rg.t1), sreg(Sreg::Tid(Dim::X))], loc0),
        ins(O::Mad, &[Mod::Lo, Mod::U32], None, vec![r(rg.t0), r(rg.t0), imm(l.block[0] as i64), r(rg.t1)], loc0),
        ins(O::Mov, &[Mod::U32], None, vec![r(rg.t1), sreg(Sreg::Ctaid(Dim::Z))], loc0),
        ins(O::Mov, &[Mod::U32], None, vec![r(rg.t2), sreg(Sreg::Ctaid(Dim::Y))], loc0),
        ins(O::Mad, &[Mod::Lo, Mod::U32], None, vec![r(rg.t1), r(rg.t1), imm(l.grid[1] as i64), r(rg.t2)], loc0),
        ins(O::Mov, &[Mod::U32], None, vec![r(rg.t2), sreg(Sreg::Ctaid(Dim::X))], loc0),
        ins(O::Mad, &[Mod::Lo, Mod::U32], None, vec![r(rg.t1), r(rg.t1), imm(l.grid[0] as i64), r(rg.t2)], loc0),
        ins(O::Mad, &[Mod::Lo, Mod::U32], None, vec![r(rg.t0), r(rg.t1), imm(tpb), r(rg.t0)], loc0),
        ins(O::Ld, &[Mod::Param, Mod::U64], None, vec![r(rg.p), Operand::Addr { base: AddrBase::Sym(sym), offset: 0 }], loc0),
        ins(O::Cvta, &[Mod::To, Mod::Global, Mod::U64], None, vec![r(rg.p), r(rg.p)], loc0),
        ins(O::Mul, &[Mod::Wide, Mod::U32], None, vec![r(rg.o), r(rg.t0), imm(4)], loc0),
        ins(O::Add, &[Mod::S64], None, vec![r(rg.cnt), r(rg.p), r(rg.o)], loc0),
        ins(O::Mul, &[Mod::Wide, Mod::U32], None, vec![r(rg.o), r(rg.t0), imm(slots as i64 * 8)], loc0),
        ins(O::Add, &[Mod::S64], None, vec![r(rg.base), r(rg.p), r(rg.o)], loc0),
        ins(O::Add, &[Mod::S64], None, vec![r(rg.base), r(rg.base), imm(layout.header_bytes as i64)], loc0),
        ins(O::Mov, &[Mod::U32], None, vec![r(rg.k), imm(0)], loc0),
        ins(O::Mov, &[Mod::U32], None, vec![r(rg.last), imm(0)], loc0),
    ];
    let prologue = p.len() as u32;

    let mut new_pc = vec![0u32; old.len() + 1];
    let mut fid = 0u32;
    let clock = || Operand::Special(Sreg::Clock64);
    // Only the entry's own instructions are traced (the trace registers are the entry's; a
    // `.func` cannot name them).
    let (ea, eb) = m.funcs[m.entry.0 as usize].body.unwrap_or((0, 0));
    let mut p = Some(p);
    for (pc, i) in old.iter().enumerate() {
        if pc as u32 == ea {
            body.extend(p.take().into_iter().flatten());
        }
        new_pc[pc] = body.len() as u32;
        let in_entry = (ea..eb).contains(&(pc as u32));
        let fs = if in_entry { fields_of(i) } else { Vec::new() };
        let clocked = in_entry && timed(i);
        if fs.is_empty() && !clocked {
            body.push(i.clone());
            continue;
        }
        let loc = i.loc;
        // The instruction may overwrite its own guard (`@p mbarrier.test_wait p, ...`): the trace
        // code uses a copy taken before it.
        let g = i.guard.map(|gd| {
            body.push(ins(O::Mov, &[Mod::Pred], None, vec![r(rg.g), r(gd.reg)], loc));
            Guard { reg: rg.g, negated: gd.negated }
        });
        let gsrc = g.map(|g| if g.negated { Operand::NotReg(g.reg) } else { Operand::Reg(g.reg) });
        // `setp.CMP[.and].u32 d, a, b[, g]`: under the guard, or false.
        let setp = |cmp: Mod, d: RegId, a: Operand, b: Operand| {
            let mut mods = vec![cmp, Mod::U32];
            let mut ops = vec![r(d), a, b];
            if let Some(gs) = &gsrc {
                mods.push(Mod::And);
                ops.push(gs.clone());
            }
            ins(O::Setp, &mods, None, ops, loc)
        };
        // Slot `k` = {lo, hi} (hi already holds the tag), if `k < slots`; then `k += 1`.
        let store = |body: &mut Vec<Instr>, lo: RegId, hi: RegId| {
            body.push(ins(O::Mov, &[Mod::B64], g, vec![r(rg.s), Operand::Vector(vec![r(lo), r(hi)])], loc));
            body.push(setp(Mod::Lt, rg.q, r(rg.k), imm(slots as i64)));
            body.push(ins(O::Mul, &[Mod::Wide, Mod::U32], g, vec![r(rg.o), r(rg.k), imm(8)], loc));
            body.push(ins(O::Add, &[Mod::S64], g, vec![r(rg.a), r(rg.base), r(rg.o)], loc));
            body.push(ins(O::St, &[Mod::Global, Mod::U64], Some(Guard { reg: rg.q, negated: false }), vec![Operand::Addr { base: AddrBase::Reg(rg.a), offset: 0 }, r(rg.s)], loc));
            body.push(ins(O::Add, &[Mod::U32], g, vec![r(rg.k), r(rg.k), imm(1)], loc));
        };
        let decl = |x: RegId| m.kernel.regs[x.0 as usize].ty;
        // The field's value -> %__hs_v (or %__hs_h for the high half); returns which.
        let capture = |body: &mut Vec<Instr>, reg: RegId, part: Part| -> RegId {
            let ty = decl(reg);
            let width = ty.type_bytes().unwrap_or(4);
            if ty == Mod::Pred {
                body.push(ins(O::Selp, &[Mod::U32], g, vec![r(rg.v), imm(1), imm(0), r(reg)], loc));
                rg.v
            } else if width == 8 {
                body.push(ins(O::Mov, &[Mod::B64], g, vec![Operand::Vector(vec![r(rg.v), r(rg.h)]), r(reg)], loc));
                if part == Part::High {
                    rg.h
                } else {
                    rg.v
                }
            } else if width == 4 {
                body.push(ins(O::Mov, &[Mod::B32], g, vec![r(rg.v), r(reg)], loc));
                rg.v
            } else {
                let mut c = ins(O::Cvt, &[Mod::U32], g, vec![r(rg.v), r(reg)], loc);
                c.ty2 = Some(if width == 2 { Mod::U16 } else { Mod::U8 });
                body.push(c);
                rg.v
            }
        };
        // %clock64 right before the instruction (unguarded: reading it has no effect).
        if clocked {
            body.push(ins(O::Mov, &[Mod::U64], None, vec![r(rg.c0), clock()], loc));
        }
        body.push(i.clone());
        // The first value is read before the second %clock64, so the delta waits for the result.
        let first = fs.first().map(|&(_, reg, part)| capture(&mut body, reg, part));
        if clocked {
            body.push(ins(O::Mov, &[Mod::U64], None, vec![r(rg.c1), clock()], loc));
        }
        let is_wait = matches!(i.op, O::MbarrierTestWait | O::MbarrierTryWait) && !fs.is_empty();
        let first_tag = fid as i64 + 1;
        let nslots = fs.len() as i64 + if clocked { 2 } else { 0 };
        if is_wait {
            // Collapse a polling run: the previous slots were a `false` result of this same wait
            // (its value and clock slots).
            body.push(setp(Mod::Eq, rg.c, r(rg.last), imm(first_tag)));
            body.push(ins(O::Sub, &[Mod::U32], Some(Guard { reg: rg.c, negated: false }), vec![r(rg.k), r(rg.k), imm(nslots)], loc));
        }
        for (n, &(_, reg, part)) in fs.iter().enumerate() {
            let src = match (n, first) {
                (0, Some(src)) => src,
                _ => capture(&mut body, reg, part),
            };
            body.push(ins(O::Mov, &[Mod::B32], g, vec![r(rg.t), imm((fid as i64 + 1) << 16)], loc));
            store(&mut body, src, rg.t);
            fid += 1;
        }
        if clocked {
            // clock_before: bits 47..0 of the first reading under the tag.
            body.push(ins(O::Mov, &[Mod::B64], g, vec![Operand::Vector(vec![r(rg.v), r(rg.h)]), r(rg.c0)], loc));
            body.push(ins(O::And, &[Mod::B32], g, vec![r(rg.h), r(rg.h), imm(0xffff)], loc));
            body.push(ins(O::Or, &[Mod::B32], g, vec![r(rg.h), r(rg.h), imm((fid as i64 + 1) << 16)], loc));
            store(&mut body, rg.v, rg.h);
            fid += 1;
            // clock_delta: bits 31..0 of the difference.
            body.push(ins(O::Sub, &[Mod::S64], g, vec![r(rg.c1), r(rg.c1), r(rg.c0)], loc));
            body.push(ins(O::Mov, &[Mod::B64], g, vec![Operand::Vector(vec![r(rg.v), r(rg.h)]), r(rg.c1)], loc));
            body.push(ins(O::Mov, &[Mod::B32], g, vec![r(rg.t), imm((fid as i64 + 1) << 16)], loc));
            store(&mut body, rg.v, rg.t);
            fid += 1;
        }
        body.push(ins(O::St, &[Mod::Global, Mod::U32], g, vec![Operand::Addr { base: AddrBase::Reg(rg.cnt), offset: 0 }, r(rg.k)], loc));
        if is_wait {
            let (_, preg, _) = fs[0];
            body.push(ins(O::Selp, &[Mod::U32], g, vec![r(rg.last), imm(0), imm(first_tag), r(preg)], loc));
        } else {
            body.push(ins(O::Mov, &[Mod::U32], g, vec![r(rg.last), imm(0)], loc));
        }
    }
    new_pc[old.len()] = body.len() as u32;
    out.kernel.label_pc = m.kernel.label_pc.iter().map(|&p| new_pc[p as usize]).collect();
    out.kernel.pragmas = m.kernel.pragmas.iter().map(|(p, t)| (new_pc[*p as usize], t.clone())).collect();
    for f in &mut out.funcs {
        if let Some((a, b)) = f.body {
            // a function ending where the entry starts ends before the prologue
            let end = if b == ea && a != ea { new_pc[b as usize] - prologue } else { new_pc[b as usize] };
            f.body = Some((new_pc[a as usize], end));
        }
    }
    // The prologue opens the entry (labels at its first instruction stay after it).
    let entry = m.entry.0 as usize;
    if let Some((a, b)) = out.funcs[entry].body {
        out.funcs[entry].body = Some((a - prologue, b));
    }
    if let Some(p) = p {
        body.extend(p);
    }
    out.kernel.body = body;
    debug_assert_eq!(fid as usize, fields.len());
    Ok((out, fields))
}
