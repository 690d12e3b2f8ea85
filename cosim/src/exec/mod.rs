//! Instruction bodies: one `impl Exec for op::X` per opcode, grouped by family in the files of
//! this module. The dispatch table is generated from the firmware crate's opcode table, so an
//! opcode without a body does not compile.

use crate::finding::FindingKind;
use crate::machine::{AsyncOp, Lane, Machine, Place, Wait, WARP};
use hopsync_firmware::ir::{AddrBase, Instr, Mod, Operand, RegId, Space};
use hopsync_firmware::ops::op;

mod alu;
pub use alu::{compare, compare_op};
mod asyncop;
mod barrier;
mod bits;
mod call;
mod ctrl;
mod cvt;
pub mod float;
mod fence;
pub mod fp;
mod mbarrier;
mod mem;
mod misc;
pub mod mma;
pub mod printf;
mod tma;
mod warp;
pub mod wgmma;

pub use asyncop::{apply_remote_write, complete_async};
pub use wgmma::WgmmaState;
pub use mbarrier::{describe, locate, on_phase_complete, MbarFamily, MbarOutcome, MbarStep, MbarStepOp, Obj};
pub use mbarrier::{apply as mbar_apply, plan as mbar_plan, step_early as mbar_step_early, EarlySteps};
pub use barrier::{runs_ahead_of_barrier, RunAhead, cluster_aligned_check, cluster_arrive_plan, apply_arrival as named_apply_arrival, exit_arrival as named_exit_arrival, named_plan, on_lanes_exit, red_value as named_red_value, release_waiters as named_release_waiters, ArrivingLane, NamedArrival};
pub use tma::tracks as tma_tracks;
pub use tma::{bulk_state, bulk_view, complete_written as tma_complete_written, im2col_offsets as tma_im2col_offsets, reduce_element as tma_reduce_element, reduce_into as tma_reduce_into, BulkState, BulkView, complete_in as tma_complete_in, land_data as tma_land_data, land_guard as tma_land_guard, modelled, signal_target_check as tma_signal_target_check, tensor_operand_address as tma_tensor_operand_address, tensor_operands as tma_tensor_operands, Piece as TmaPiece, TmaOp, TmaState};

/// Where control goes after an instruction (for the lanes whose guard held).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Fall through.
    Next,
    /// Branch to this instruction index.
    Jump(u32),
    /// The lanes exit.
    Exit,
    /// The body set the pc of every executing lane itself (`call`, `ret`: each lane to its own
    /// target); the group's other lanes fall through.
    Lanes,
}

/// Why a run stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A finding in error mode (it is in `Machine::findings`).
    Finding,
    /// Something hopsync does not model yet.
    Unsupported(String),
}

/// Result of a body.
pub type R = Result<Flow, Stop>;

/// The executing context of one warp-instruction.
pub struct Cx<'a, 'p> {
    /// The machine.
    pub m: &'a mut Machine<'p>,
    /// Linear CTA id.
    pub cta: u32,
    /// Warp index in the CTA.
    pub warp: u32,
    /// Instruction index.
    pub pc: u32,
    /// Lanes executing (guard true).
    pub mask: u32,
    /// Lanes of the warp's current group (guard true or false).
    pub group: u32,
}

/// One body per instruction.
pub trait Exec {
    /// Executes the instruction for the lanes in `cx.mask`.
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R;
}

macro_rules! exec_table {
    ($( ($v:ident, $name:literal, $ops:literal, [$($g:expr),*], $sm:literal) ),* $(,)?) => {
        static EXEC: &[fn(&mut Cx<'_, '_>, &Instr) -> R] = &[ $( <op::$v as Exec>::exec ),* ];
    };
}
hopsync_firmware::opcode_table!(exec_table);

/// Runs the body of `i` (after the wgmma register rules, exec/wgmma.rs, in kernels that use it).
#[inline]
pub fn dispatch(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
    if !cx.m.wgmma_idle() {
        wgmma::before(cx, i)?;
    }
    if cx.m.race.on() && crate::race::orders_lanes(i) {
        crate::race::lanes_ordered(cx.m, cx.cta, cx.warp, cx.mask);
    }
    EXEC[i.op as usize](cx, i)
}

/// The instruction at `pc` as text (for messages about another instruction).
pub fn instr_text_at(cx: &Cx<'_, '_>, pc: u32) -> String {
    cx.m.module().kernel.body.get(pc as usize).map(|i| cx.text(i)).unwrap_or_default()
}

/// Iterates the set bits of a lane mask.
#[inline]
pub fn lanes(mask: u32) -> impl Iterator<Item = u32> {
    let mut m = mask;
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros();
            m &= m - 1;
            Some(l)
        }
    })
}

/// One operand or result of a warp-instruction: a value per lane.
pub type Lanes = [u64; WARP];

/// `f` of each lane in `mask` (the other lanes 0): a plain loop over the 32 lanes when every lane
/// executes, so a whole-warp body compiles to straight-line code.
#[inline]
pub fn per_lane(mask: u32, mut f: impl FnMut(usize) -> u64) -> Lanes {
    if mask == u32::MAX {
        std::array::from_fn(f)
    } else {
        let mut out = [0; WARP];
        for l in lanes(mask) {
            out[l as usize] = f(l as usize);
        }
        out
    }
}

/// Width in bits of a type modifier.
#[inline]
pub fn bits(ty: Mod) -> u32 {
    ty.type_bytes().map(|b| if ty == Mod::Pred { 1 } else { b * 8 }).unwrap_or(64)
}

/// Truncates to a width.
#[inline]
pub fn trunc(v: u64, w: u32) -> u64 {
    if w >= 64 {
        v
    } else {
        v & ((1u64 << w) - 1)
    }
}

/// Sign-extends from a width.
#[inline]
pub fn sext(v: u64, w: u32) -> i64 {
    if w >= 64 {
        v as i64
    } else {
        let s = 64 - w;
        ((v << s) as i64) >> s
    }
}

impl<'a, 'p> Cx<'a, 'p> {
    /// The instruction's type or an internal error.
    pub fn ty(&self, i: &Instr) -> Mod {
        i.ty().unwrap_or(Mod::B64)
    }

    /// Register value of a lane.
    #[inline]
    pub fn reg(&self, r: RegId, lane: u32) -> u64 {
        self.m.ctas[self.cta as usize].warps[self.warp as usize].regs[r.0 as usize * WARP + lane as usize]
    }

    /// Writes a register of a lane, truncated to the register's declared width.
    #[inline]
    pub fn set_reg(&mut self, r: RegId, lane: u32, v: u64) {
        let v = v & self.m.reg_mask[r.0 as usize];
        self.m.ctas[self.cta as usize].warps[self.warp as usize].regs[r.0 as usize * WARP + lane as usize] = v;
        if self.m.rec.is_some() {
            self.m.log_reg(r, lane, v);
        }
    }

    /// Value of operand `k` for a lane (registers, immediates, special registers, symbol addresses).
    #[inline]
    pub fn src(&self, i: &Instr, k: usize, lane: u32) -> u64 {
        match &i.operands[k] {
            Operand::Reg(r) => self.reg(*r, lane),
            Operand::NotReg(r) => (self.reg(*r, lane) & 1) ^ 1,
            Operand::Imm(v) => *v as u64,
            Operand::FloatBits { bits, double } => {
                // An f32 literal used by an f64 instruction widens, and vice versa.
                match (double, i.ty()) {
                    (false, Some(Mod::F64)) => (f32::from_bits(*bits as u32) as f64).to_bits(),
                    (true, Some(Mod::F32)) => (f64::from_bits(*bits) as f32).to_bits() as u64,
                    _ => *bits,
                }
            }
            Operand::Special(s) => self.m.sreg(self.cta, self.warp, lane, *s),
            Operand::Sym(s) => self.m.symbol_address_of(*s, self.cta, self.warp, lane),
            Operand::Func(f) => crate::machine::FUNC_ADDR_BASE + 16 * f.0 as u64,
            _ => 0,
        }
    }

    /// The warp's register file (register `r`'s lanes at `r * 32 ..`).
    #[inline]
    fn regs(&self) -> &[u64] {
        &self.m.ctas[self.cta as usize].warps[self.warp as usize].regs
    }

    /// Register `r` of every lane, bounds-checked once.
    #[inline]
    pub fn reg_lanes(&self, r: RegId) -> Lanes {
        let b = r.0 as usize * WARP;
        self.regs()[b..b + WARP].try_into().expect("a register is 32 lanes")
    }

    /// Operand `k` of every lane of the executing mask, decoded once per warp-instruction: a
    /// register's 32 lanes as one slice, a lane-independent operand (immediate, float literal,
    /// function, variable outside a call frame) once; special registers and frame variables lane
    /// by lane. Lanes outside the mask read unspecified values: a body must not act on them.
    #[inline]
    pub fn src_lanes(&self, i: &Instr, k: usize) -> Lanes {
        match &i.operands[k] {
            Operand::Reg(r) => self.reg_lanes(*r),
            Operand::NotReg(r) => self.reg_lanes(*r).map(|v| (v & 1) ^ 1),
            Operand::Imm(v) => [*v as u64; WARP],
            Operand::Special(_) => per_lane(self.mask, |l| self.src(i, k, l as u32)),
            Operand::Sym(s) if self.m.sym_in_frame[s.0 as usize] => per_lane(self.mask, |l| self.src(i, k, l as u32)),
            _ => [self.src(i, k, self.first_lane()); WARP],
        }
    }

    /// Writes register `r` of the lanes in the executing mask, each truncated to the register's
    /// declared width (the lane-by-lane [`Self::set_reg`] over the mask).
    #[inline]
    pub fn set_reg_lanes(&mut self, r: RegId, v: &Lanes) {
        self.set_reg_lanes_in(r, self.mask, v)
    }

    /// [`Self::set_reg_lanes`] for the lanes in `mask` (a subset of the executing mask).
    #[inline]
    pub fn set_reg_lanes_in(&mut self, r: RegId, mask: u32, v: &Lanes) {
        let width = self.m.reg_mask[r.0 as usize];
        let b = r.0 as usize * WARP;
        let dst: &mut [u64; WARP] = (&mut self.m.ctas[self.cta as usize].warps[self.warp as usize].regs[b..b + WARP]).try_into().expect("a register is 32 lanes");
        if mask == u32::MAX {
            for (d, x) in dst.iter_mut().zip(v) {
                *d = x & width;
            }
        } else {
            for l in lanes(mask) {
                dst[l as usize] = v[l as usize] & width;
            }
        }
        if self.m.rec.is_some() {
            for l in lanes(mask) {
                self.m.log_reg(r, l, v[l as usize] & width);
            }
        }
    }

    /// Writes destination operand `k` (register) of the lanes in the executing mask; `_` discards
    /// (the lane-by-lane [`Self::dst`] over the mask).
    #[inline]
    pub fn dst_lanes(&mut self, i: &Instr, k: usize, v: &Lanes) {
        self.dst_lanes_in(i, k, self.mask, v)
    }

    /// [`Self::dst_lanes`] for the lanes in `mask` (a subset of the executing mask).
    #[inline]
    pub fn dst_lanes_in(&mut self, i: &Instr, k: usize, mask: u32, v: &Lanes) {
        match &i.operands[k] {
            Operand::Reg(r) => self.set_reg_lanes_in(*r, mask, v),
            Operand::Pair(d, _) if d.0 != u32::MAX => self.set_reg_lanes_in(*d, mask, v),
            _ => {}
        }
    }

    /// Value of operand `k` read as type `t` (an instruction whose operands have several types,
    /// like cvt's source): a float literal is widened or narrowed to `t` rather than to the
    /// instruction's first type.
    #[inline]
    pub fn src_as(&self, i: &Instr, k: usize, lane: u32, t: Mod) -> u64 {
        match &i.operands[k] {
            Operand::FloatBits { bits, double } => match (double, t) {
                (false, Mod::F64) => (f32::from_bits(*bits as u32) as f64).to_bits(),
                (true, Mod::F32) => (f64::from_bits(*bits) as f32).to_bits() as u64,
                _ => *bits,
            },
            _ => self.src(i, k, lane),
        }
    }

    /// Writes destination operand `k` (register) for a lane; `_` discards.
    #[inline]
    pub fn dst(&mut self, i: &Instr, k: usize, lane: u32, v: u64) {
        match &i.operands[k] {
            Operand::Reg(r) => self.set_reg(*r, lane, v),
            Operand::Pair(d, _) if d.0 != u32::MAX => self.set_reg(*d, lane, v),
            _ => {}
        }
    }

    /// The effective state space of address operand `k`: the instruction's space modifier, else
    /// the space of a variable used as the base, else generic (`None`).
    pub fn space(&self, i: &Instr, k: usize) -> Option<Mod> {
        if let Operand::Addr { base: AddrBase::Sym(s), .. } = &i.operands[k] {
            // A device function's `.param` variables live in its frame (PTX 5.1.6.4).
            if self.m.sym_in_frame[s.0 as usize] {
                return Some(Mod::Local);
            }
        }
        for m in [Mod::SharedCluster, Mod::SharedCta, Mod::Shared, Mod::Global, Mod::Local, Mod::Param, Mod::Const] {
            if i.has(m) {
                return Some(m);
            }
        }
        if let Operand::Addr { base: AddrBase::Sym(s), .. } = &i.operands[k] {
            return Some(match self.m.module().symbols[s.0 as usize].space {
                Space::Shared => Mod::SharedCta,
                Space::Global => Mod::Global,
                Space::Param => Mod::Param,
                Space::Local => Mod::Local,
                Space::Const => Mod::Const,
            });
        }
        None
    }

    /// The address of address operand `k` for a lane.
    #[inline]
    pub fn addr(&self, i: &Instr, k: usize, lane: u32) -> u64 {
        match &i.operands[k] {
            Operand::Addr { base, offset } => {
                let b = match base {
                    AddrBase::Reg(r) => self.reg(*r, lane),
                    AddrBase::Sym(s) => self.m.symbol_address_of(*s, self.cta, self.warp, lane),
                    AddrBase::Imm(v) => *v,
                };
                b.wrapping_add(*offset as u64)
            }
            _ => 0,
        }
    }

    /// Resolves address operand `k` of a lane to a place, reporting a finding when it is bad.
    pub fn place(&mut self, i: &Instr, k: usize, lane: u32, size: usize) -> Result<Place, Stop> {
        let sp = self.space(i, k);
        self.place_in(i, k, lane, size, sp)
    }

    /// Address operand `k` of every lane of the executing mask, decoded once per
    /// warp-instruction (lanes outside the mask: unspecified, as [`Self::src_lanes`]).
    #[inline]
    pub fn addr_lanes(&self, i: &Instr, k: usize) -> Lanes {
        match &i.operands[k] {
            Operand::Addr { base: AddrBase::Reg(r), offset } => self.reg_lanes(*r).map(|b| b.wrapping_add(*offset as u64)),
            Operand::Addr { base: AddrBase::Sym(s), .. } if self.m.sym_in_frame[s.0 as usize] => per_lane(self.mask, |l| self.addr(i, k, l as u32)),
            _ => [self.addr(i, k, self.first_lane()); WARP],
        }
    }

    /// [`Self::place`] in state space `sp` (None: generic), for instructions whose operands are
    /// in different spaces (`tensormap.cp_fenceproxy.global.shared::cta [dst], [src]`).
    pub fn place_in(&mut self, i: &Instr, k: usize, lane: u32, size: usize, sp: Option<Mod>) -> Result<Place, Stop> {
        let a = self.addr(i, k, lane);
        self.place_at(lane, a, size, sp)
    }

    /// Resolves address `a` of a lane in state space `sp` (None: generic) to a place, reporting a
    /// finding when it is bad ([`Self::place_in`] with the address already decoded).
    #[inline]
    pub fn place_at(&mut self, lane: u32, a: u64, size: usize, sp: Option<Mod>) -> Result<Place, Stop> {
        match self.m.resolve(self.cta, self.warp, lane, sp, a, size) {
            Ok(p) => Ok(p),
            Err(b) => {
                self.finding(b.kind, lane, b.msg)?;
                Err(Stop::Finding)
            }
        }
    }

    /// Reports a finding at this instruction and lane.
    pub fn finding(&mut self, kind: FindingKind, lane: u32, msg: String) -> Result<(), Stop> {
        self.m.report(kind, msg, Some((self.cta, self.warp, lane, self.pc)))
    }

    /// The instruction as text (for messages).
    pub fn text(&self, i: &Instr) -> String {
        hopsync_firmware::printer::print_instr(self.m.module(), i)
    }

    /// Blocks the lanes in `mask` on `w` (they resume after this instruction).
    pub fn block(&mut self, mask: u32, w: Wait) {
        let warp = &mut self.m.ctas[self.cta as usize].warps[self.warp as usize];
        for l in lanes(mask) {
            warp.set_lane(l as usize, Lane::Blocked(w));
        }
    }

    /// Lowest lane of the executing mask.
    pub fn first_lane(&self) -> u32 {
        self.mask.trailing_zeros()
    }

    /// Queues an asynchronous completion.
    pub fn push_async(&mut self, op: AsyncOp) {
        self.m.push_async(op)
    }
}

/// Fails with "unsupported: <instruction>".
pub fn unsupported(cx: &Cx<'_, '_>, i: &Instr, what: &str) -> R {
    Err(Stop::Unsupported(format!(
        "unsupported: {what} (`{}` at {}:{})",
        cx.text(i),
        cx.m.prog.path,
        i.loc
    )))
}
