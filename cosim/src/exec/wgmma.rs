//! Warpgroup matrix multiply-accumulate (PTX 9.7.15): `wgmma.mma_async`, its sparse form
//! `wgmma.mma_async.sp` (PTX 9.7.15.6), `wgmma.fence`, `wgmma.commit_group`, `wgmma.wait_group`,
//! with the rules of their asynchrony as findings.
//!
//! A warpgroup is four consecutive warps (warp `w` is warp `w % 4` of group `w / 4`); warp `q`
//! owns rows `16q..16q+16` of the 64-row D and A, so each warp's part of the product needs only
//! its own registers and the shared-memory operands, and the golden model computes it when the
//! warp executes the instruction (the result is in its registers from then on; a program that
//! waits correctly cannot tell it from a later completion). The operation is the warpgroup's,
//! though: a warp's `wgmma.wait_group` returns only once every warp of its warpgroup has committed
//! the groups it waits for (`Wait::WgmmaGroups`; silicon holds it so, and CUTLASS's non-persistent
//! kernels reuse the operands' shared memory right after the wait). The shared-memory operands are read
//! through matrix descriptors ([`Desc`], PTX 9.7.15.5.1.2.2) in the canonical layouts of PTX
//! 9.7.15.5.1.2 (K-major, or MN-major with `imm-trans` for f16/bf16), with the 32/64/128-byte
//! swizzles of the TMA engine (`tensormap::swizzle_offset` on the absolute shared-memory
//! address, so a tile a TMA load wrote swizzled reads back in its logical order).
//!
//! Findings (PTX 9.7.15.5.2 "wgmma.mma_async", 9.7.15 "Async Proxy"):
//! * `WgmmaRegisterAccess`: an instruction reads or writes an accumulator or A-fragment register
//!   of a `wgmma.mma_async` that no `wgmma.wait_group` has waited for yet ("accessing the
//!   accumulator register or the input registers containing fragments of matrix A ... without
//!   first performing a wgmma.wait_group ... is undefined behavior"). Later `wgmma.mma_async`s of
//!   the same shape accumulating into the same registers are allowed.
//! * `WgmmaFenceMissing` (PTX 9.7.15 "wgmma.fence"): a `wgmma.mma_async` whose warp executed no `wgmma.fence` before it, or
//!   whose accumulator / A registers were accessed by another instruction since the warp's last
//!   `wgmma.fence` ("wgmma.fence must be used ... before the first wgmma.mma_async and between a
//!   register access ... and any wgmma.mma_async that accesses the same registers").
//! * `ProxyFenceMissing` / `TmaReadBeforeComplete` (exec/tma.rs): the shared-memory operands are
//!   read through the async proxy, so generic writes to them need a `fence.proxy.async` first, and
//!   a TMA load into them must have completed its mbarrier phase.
//! * `SharedMemoryRace` (race.rs): a write to the shared-memory operands by another warp or
//!   asynchronous agent not ordered before the read (the wgmma's `.sync.aligned` orders only the
//!   warp's own lanes); the reads are checked, not recorded (`race::Access::OperandRead`).
//! * `WgmmaSparseMetadataInvalid` (PTX 9.7.15.6.1): a metadata field of `wgmma.mma_async.sp` that
//!   places no valid pattern of its chunk's nonzero elements (undefined behavior).
//!
//! The sparse form is the dense one on the A it stands for: the warp's packed 16 x K/2 A (from
//! its registers or through the descriptor, in the dense layouts of K/2 columns) is spread to
//! 16 x K by the metadata of the threads the sparsity selector names ([`meta_place`]), and the
//! product, scaling, groups and findings are those of `wgmma.mma_async`.

use super::mma::{a16, c16, check_full_warp, elem, vec_regs, Acc, Mat, Val};
use super::{lanes, unsupported, Cx, Exec, Flow, Stop, R, WARP};
use crate::finding::FindingKind;
use crate::machine::{Lane, Machine, Wait};
use hopsync_firmware::ir::{Instr, Mod, Operand};
use hopsync_firmware::mma::{wgmma_form, Family, Form};
use hopsync_firmware::ops::op;
use hopsync_firmware::tensormap::{swizzle_offset, TensorMapSwizzle};
use hopsync_firmware::Opcode;
use std::collections::VecDeque;

// ---- matrix descriptors ---------------------------------------------------------------------------

/// A decoded matrix descriptor (PTX 9.7.15.5.1.2.2 "Matrix Descriptor Format").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Desc {
    /// Bits 0-13: start address >> 4.
    pub start: u32,
    /// Bits 16-29: leading dimension byte offset >> 4.
    pub lbo: u32,
    /// Bits 32-45: stride dimension byte offset >> 4.
    pub sbo: u32,
    /// Bits 49-51: matrix base offset.
    pub base_offset: u32,
    /// Bits 62-63: swizzle mode.
    pub swizzle: TensorMapSwizzle,
}

impl Desc {
    /// Decodes a 64-bit descriptor.
    pub fn decode(d: u64) -> Desc {
        let f = |lo: u32, bits: u32| ((d >> lo) & ((1 << bits) - 1)) as u32;
        Desc {
            start: f(0, 14) << 4,
            lbo: f(16, 14) << 4,
            sbo: f(32, 14) << 4,
            base_offset: f(49, 3),
            swizzle: match f(62, 2) {
                1 => TensorMapSwizzle::B128,
                2 => TensorMapSwizzle::B64,
                3 => TensorMapSwizzle::B32,
                _ => TensorMapSwizzle::None,
            },
        }
    }

    /// The shared-memory byte address of element (`mn`, `k`) of a matrix of `bits`-bit elements
    /// (`mn` the M row of A or the N column of B): K-major (`mn_major` false) or MN-major, in the
    /// canonical layout of the descriptor's swizzle (PTX 9.7.15.5.1.2, CUTLASS's GMMA layout
    /// atoms), swizzled by the TMA engine's rule. Returns (byte address, bit within the byte).
    pub fn address(&self, mn: u32, k: u32, bits: u32, mn_major: bool) -> (u32, u32) {
        let span = self.swizzle.span_bytes();
        let logical = if !mn_major {
            let kbit = k * bits;
            let kbyte = kbit / 8;
            let off = match span {
                None => (mn % 8) * 16 + (mn / 8) * self.sbo + (kbyte % 16) + (kbyte / 16) * self.lbo,
                Some(sw) => (mn % 8) * sw + (mn / 8) * self.sbo + kbyte,
            };
            return (self.swizzled(self.start + off), kbit % 8);
        } else {
            let eb = bits / 8;
            match span {
                None => (mn % 8) * eb + (mn / 8) * self.sbo + (k % 8) * 16 + (k / 8) * self.lbo,
                Some(sw) => {
                    let per_row = sw / eb;
                    (mn % per_row) * eb + (mn / per_row) * self.lbo + (k % 8) * sw + (k / 8) * self.sbo
                }
            }
        };
        (self.swizzled(self.start + logical), 0)
    }

    fn swizzled(&self, addr: u32) -> u32 {
        swizzle_offset(self.swizzle, addr as u64).expect("sm_90 swizzle") as u32
    }
}

// ---- per-warp bookkeeping ------------------------------------------------------------------------

/// The registers of one pending `wgmma.mma_async`.
#[derive(Debug, Clone)]
struct Pending {
    /// pc of the instruction.
    pc: u32,
    /// Its shape.
    shape: Mod,
    /// Accumulator registers.
    d: Vec<u32>,
    /// A-fragment registers (A in registers).
    a: Vec<u32>,
}

/// One warp's wgmma state.
#[derive(Debug, Clone, Default)]
struct WarpWg {
    /// A `wgmma.fence` ran.
    fence_seen: bool,
    /// Registers accessed since the last `wgmma.fence` (bit per register), with the pc of the last
    /// access.
    touched: Vec<Option<u32>>,
    /// Issued and not committed.
    open: Vec<Pending>,
    /// Committed groups not yet waited for, oldest first.
    groups: VecDeque<Vec<Pending>>,
    /// wgmma-groups committed so far.
    committed: u64,
}

impl WarpWg {
    fn pending(&self) -> impl Iterator<Item = &Pending> {
        self.open.iter().chain(self.groups.iter().flatten())
    }
}

/// The wgmma bookkeeping of a run (`Machine::wgmma`).
#[derive(Debug, Clone, Default)]
pub struct WgmmaState {
    scanned: bool,
    /// The kernel has a wgmma instruction (otherwise nothing is tracked).
    active: bool,
    /// Per (cta, warp).
    warps: Vec<WarpWg>,
    warps_per_cta: usize,
    /// Per pc: the registers the instruction reads or writes (guard included).
    regs: Vec<Vec<u32>>,
}

impl WgmmaState {
    /// Whether the run is known to have no wgmma instruction (nothing to check).
    pub fn idle(&self) -> bool {
        self.scanned && !self.active
    }
}

fn state<'a>(cx: &'a mut Cx<'_, '_>) -> &'a mut WgmmaState {
    if !cx.m.wgmma.scanned {
        let body = &cx.m.module().kernel.body;
        let active = body.iter().any(|i| is_wgmma(i.op));
        let regs = if active { body.iter().map(instr_regs).collect() } else { Vec::new() };
        let nregs = cx.m.module().kernel.regs.len();
        let wpc = cx.m.ctas.first().map(|c| c.warps.len()).unwrap_or(0);
        let n = cx.m.ctas.len() * wpc;
        let st = &mut cx.m.wgmma;
        st.scanned = true;
        st.active = active;
        st.regs = regs;
        st.warps_per_cta = wpc;
        if active {
            st.warps = vec![WarpWg { touched: vec![None; nregs], ..Default::default() }; n];
        }
    }
    &mut cx.m.wgmma
}

/// The wgmma family: the instructions whose register rules this module applies itself.
fn is_wgmma(op: Opcode) -> bool {
    matches!(op, Opcode::WgmmaMmaAsync | Opcode::WgmmaMmaAsyncSp | Opcode::WgmmaFence | Opcode::WgmmaCommitGroup | Opcode::WgmmaWaitGroup)
}

fn instr_regs(i: &Instr) -> Vec<u32> {
    fn walk(o: &Operand, out: &mut Vec<u32>) {
        match o {
            Operand::Reg(r) | Operand::NotReg(r) => out.push(r.0),
            Operand::Addr { base: hopsync_firmware::ir::AddrBase::Reg(r), .. } => out.push(r.0),
            Operand::Tensor { base, coords, .. } => {
                if let hopsync_firmware::ir::AddrBase::Reg(r) = base {
                    out.push(r.0);
                }
                coords.iter().for_each(|c| walk(c, out));
            }
            Operand::Vector(v) => v.iter().for_each(|x| walk(x, out)),
            Operand::Pair(d, p) => {
                if d.0 != u32::MAX {
                    out.push(d.0);
                }
                out.push(p.0);
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(g) = i.guard {
        out.push(g.reg.0);
    }
    i.operands.iter().for_each(|o| walk(o, &mut out));
    out.sort_unstable();
    out.dedup();
    out
}

/// Before any instruction other than the wgmma family executes (exec::dispatch): its registers
/// must not belong to a pending `wgmma.mma_async` (`WgmmaRegisterAccess`); they count as accessed
/// for the next `wgmma.fence` check.
pub fn before(cx: &mut Cx<'_, '_>, i: &Instr) -> Result<(), Stop> {
    if cx.m.wgmma.scanned && !cx.m.wgmma.active {
        return Ok(());
    }
    if is_wgmma(i.op) {
        state(cx);
        return Ok(());
    }
    let (pc, slot) = (cx.pc, cx.cta as usize * state(cx).warps_per_cta + cx.warp as usize);
    let st = &mut cx.m.wgmma;
    if !st.active {
        return Ok(());
    }
    let w = &mut st.warps[slot];
    let mut hit = None;
    for &r in &st.regs[pc as usize] {
        w.touched[r as usize] = Some(pc);
        if hit.is_none() {
            hit = w.pending().find(|p| p.d.contains(&r) || p.a.contains(&r)).map(|p| (r, p.pc, p.d.contains(&r)));
        }
    }
    if let Some((r, at, acc)) = hit {
        let name = cx.m.module().kernel.regs[r as usize].name.clone();
        let src = super::instr_text_at(cx, at);
        cx.finding(
            FindingKind::WgmmaRegisterAccess,
            cx.first_lane(),
            format!(
                "`{}` accesses {name}, {} of `{src}` (pc {at}), before a wgmma.wait_group waited for it (PTX 9.7.15.5.2: undefined behavior)",
                cx.text(i),
                if acc { "an accumulator register" } else { "an A-fragment register" }
            ),
        )?;
    }
    Ok(())
}

fn slot(cx: &Cx<'_, '_>) -> usize {
    cx.cta as usize * cx.m.wgmma.warps_per_cta + cx.warp as usize
}

/// wgmma.fence (PTX 9.7.15 "wgmma.fence"): orders the warp's prior register accesses before its
/// subsequent `wgmma.mma_async`s.
impl Exec for op::WgmmaFence {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_full_warp(cx, i)?;
        state(cx);
        let s = slot(cx);
        let w = &mut cx.m.wgmma.warps[s];
        w.fence_seen = true;
        w.touched.iter_mut().for_each(|t| *t = None);
        Ok(Flow::Next)
    }
}

/// wgmma.commit_group (PTX 9.7.15 "wgmma.commit_group"): the warp's uncommitted `wgmma.mma_async`s become one
/// wgmma-group (possibly empty).
impl Exec for op::WgmmaCommitGroup {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_full_warp(cx, i)?;
        state(cx);
        let s = slot(cx);
        let w = &mut cx.m.wgmma.warps[s];
        let g = std::mem::take(&mut w.open);
        w.groups.push_back(g);
        w.committed += 1;
        wake_warpgroup(cx.m, cx.cta, cx.warp);
        Ok(Flow::Next)
    }
}

/// The warps of `warp`'s warpgroup (four consecutive warps from a multiple of four) that are
/// launched and not exited.
fn warpgroup<'a>(m: &'a Machine<'_>, cta: u32, warp: u32) -> impl Iterator<Item = u32> + 'a {
    let first = warp & !3;
    (first..first + 4).filter(move |&w| (w as usize) < m.ctas[cta as usize].warps.len() && !m.warp(cta, w).exited())
}

/// Whether every warp of `warp`'s warpgroup has committed `groups` wgmma-groups: the groups up to
/// then are the warpgroup's, complete once all four warps issued them. Silicon (H100, 2026-11-27,
/// a warp held 4,000,000 cycles before its wgmma): no warp's `wgmma.wait_group 0` returned before
/// the held warp issued its wgmma (85 cycles after). CUTLASS's non-persistent kernels rely on it
/// (example 50's epilogue reuses the mainloop's shared memory with no barrier after its wait).
fn warpgroup_committed(m: &Machine<'_>, cta: u32, warp: u32, groups: u64) -> bool {
    let per = m.wgmma.warps_per_cta;
    warpgroup(m, cta, warp).all(|w| m.wgmma.warps.get(cta as usize * per + w as usize).is_some_and(|g| g.committed >= groups))
}

/// Wakes the warps of `warp`'s warpgroup blocked in `wgmma.wait_group` whose groups the warpgroup
/// has now committed.
fn wake_warpgroup(m: &mut Machine<'_>, cta: u32, warp: u32) {
    let first = warp & !3;
    for w in first..(first + 4).min(m.ctas[cta as usize].warps.len() as u32) {
        let lanes_waiting: Vec<(usize, u64)> = m.ctas[cta as usize].warps[w as usize]
            .lane()
            .iter()
            .enumerate()
            .filter_map(|(l, s)| if let Lane::Blocked(Wait::WgmmaGroups(g)) = s { Some((l, *g)) } else { None })
            .collect();
        for (l, g) in lanes_waiting {
            if warpgroup_committed(m, cta, w, g) {
                m.ctas[cta as usize].warps[w as usize].set_lane(l, Lane::Ready);
            }
        }
    }
}

/// wgmma.wait_group N (PTX 9.7.15 "wgmma.wait_group"): every wgmma-group but the N most recent has completed;
/// their registers may be accessed again.
impl Exec for op::WgmmaWaitGroup {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_full_warp(cx, i)?;
        let n = cx.src(i, 0, cx.first_lane()) as usize;
        state(cx);
        let s = slot(cx);
        let w = &mut cx.m.wgmma.warps[s];
        while w.groups.len() > n {
            w.groups.pop_front();
        }
        // the groups it waits for are the warpgroup's: the other warps must have issued them
        let need = w.committed.saturating_sub(n as u64);
        if !warpgroup_committed(cx.m, cx.cta, cx.warp, need) {
            cx.block(cx.mask, Wait::WgmmaGroups(need));
        }
        Ok(Flow::Next)
    }
}

/// The immediate operand `k` of a wgmma (0 when absent).
fn imm(i: &Instr, k: usize) -> i64 {
    match i.operands.get(k) {
        Some(Operand::Imm(v)) => *v,
        _ => 0,
    }
}

/// wgmma.mma_async (PTX 9.7.15.5.2): this warp's 16 rows of D = A * B + D (or A * B when
/// scale-d is false), A negated when imm-scale-a is -1, B when imm-scale-b is -1.
impl Exec for op::WgmmaMmaAsync {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        mma_async(cx, i)
    }
}

/// wgmma.mma_async.sp (PTX 9.7.15.6.3): wgmma.mma_async with a structured-sparse A, given as its
/// packed nonzero half and the metadata in sp-meta of the threads sp-sel names.
impl Exec for op::WgmmaMmaAsyncSp {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        mma_async(cx, i)
    }
}

/// The body of both forms: the operands at the form's positions (the sparse form has sp-meta and
/// sp-sel before scale-d), A spread by its metadata when sparse.
fn mma_async(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
    let f = match wgmma_form(i) {
        Ok(f) => f,
        Err(e) => return unsupported(cx, i, &e),
    };
    check_full_warp(cx, i)?;
    let lane0 = cx.first_lane();
    let a_in_regs = matches!(i.operands[1], Operand::Vector(_));
    let float = !matches!(f.family, Family::Int8 | Family::B1);
    let sd = f.scale_d_operand();
    let (neg_a, neg_b) = if float { (imm(i, sd + 1) == -1, imm(i, sd + 2) == -1) } else { (false, false) };
    let transposable = matches!(f.family, Family::F16 | Family::Bf16);
    let (trans_a, trans_b) = match (transposable, a_in_regs) {
        (true, false) => (imm(i, sd + 3) == 1, imm(i, sd + 4) == 1),
        (true, true) => (false, imm(i, sd + 3) == 1),
        _ => (false, false),
    };
    let scale_d = cx.src(i, sd, lane0) & 1 == 1;
    check_registers(cx, i, &f, a_in_regs)?;
    let (dt, at, bt) = (cx.ty(i), i.ty2.unwrap_or(Mod::F16), i.ty3.unwrap_or(Mod::F16));
    let q = cx.warp % 4;
    let a = if a_in_regs { a_from_regs(cx, i, &f, at) } else { smem_matrix(cx, i, 1, 16, f.a_cols(), q * 16, at, trans_a, true)? };
    let a = if f.sparse { sparse_a(cx, i, &f, &a)? } else { a };
    let b = smem_matrix(cx, i, 2, f.n, f.k, 0, bt, trans_b, false)?;
    let negate = |m: Mat, neg: bool| if neg { Mat { v: m.v.into_iter().map(|x| if let Val::F(v) = x { Val::F(-v) } else { x }).collect(), ..m } } else { m };
    let (a, b) = (negate(a, neg_a), negate(b, neg_b));
    let dregs = vec_regs(i, 0);
    let op_b1 = if f.family == Family::B1 { Some(Mod::And) } else { None };
    let sat = i.has(Mod::Satfinite);
    let per_lane = f.n / 2;
    for l in lanes(cx.mask) {
        let mut words = vec![0u64; f.d_regs];
        for e in 0..per_lane {
            let (row, col) = c16(l, e);
            let (reg, half) = if dt == Mod::F16 { (e / 2, e % 2) } else { (e, 0) };
            let old = dregs.get(reg as usize).copied().flatten().map(|r| cx.reg(r, l)).unwrap_or(0);
            let c = if scale_d { Some(elem(dt, old, half)) } else { None };
            let mut acc = Acc::new(c);
            for k in 0..f.k {
                acc.mac(a.at(row, k), b.at(k, col), op_b1);
            }
            let v = acc.finish(dt, sat);
            words[reg as usize] |= if dt == Mod::F16 { v << (16 * half) } else { v };
        }
        for (k, w) in words.into_iter().enumerate() {
            if let Some(Some(r)) = dregs.get(k) {
                cx.set_reg(*r, l, w);
            }
        }
    }
    Ok(Flow::Next)
}

// ---- sparse A (PTX 9.7.15.6) -----------------------------------------------------------------

/// Where the metadata of chunk `chunk` of warp-local row `row` (0..16) of a sparse A lives: the
/// lane and the bit of its sp-meta register where the chunk's 4-bit field starts (PTX 9.7.15.6.2,
/// the metadata fragments; CUTLASS's `ELayout_64x32/64x16/64x64` in
/// `mma_traits_sm90_gmma_sparse.hpp` lay the metadata out the same way). A chunk is 4 elements
/// (2:4) for the 16- and 8-bit types and 2 elements (1:2) for tf32; either way a chunk's field is
/// 4 bits.
/// * f16/bf16 (K 32) and tf32 (K 16): 8 chunks a row. The thread pair `sel` of each group of four
///   holds them (9.7.15.6.1: sp-sel 0 names T0 and T1, 1 names T2 and T3): thread `2 sel + j` of
///   group `row % 8` holds chunks `4j..4j+4`, of row `row % 8` in bits 0..16 and of row
///   `row % 8 + 8` in bits 16..32.
/// * e4m3/e5m2/s8/u8 (K 64): 16 chunks a row, all four threads of the group (sp-sel 0): thread
///   `2h + row / 8` holds chunks `8h..8h+8` of its row.
pub fn meta_place(family: Family, sel: u32, row: u32, chunk: u32) -> (u32, u32) {
    let g = row % 8;
    if matches!(family, Family::Fp8 | Family::Int8) {
        let h = chunk / 8;
        (4 * g + 2 * h + row / 8, 4 * (chunk % 8))
    } else {
        (4 * g + 2 * sel + chunk / 4, 4 * (chunk % 4) + 16 * (row / 8))
    }
}

/// The positions within its chunk of the packed elements a metadata field places, or `None` for
/// the values PTX 9.7.15.6.1 makes undefined. 2:4 (16- and 8-bit types): two 2-bit indices, the
/// first packed element's in bits 0-1, the second's in bits 2-3; equal indices (0b0000, 0b0101,
/// 0b1010, 0b1111) are undefined. 1:2 (tf32): the one packed element of the 2-element chunk, at
/// 0 for 0b0100 and at 1 for 0b1110 (the index pairs of its two 16-bit halves); every other value
/// is undefined.
pub fn meta_decode(family: Family, field: u32) -> Option<[u32; 2]> {
    let (lo, hi) = (field & 3, (field >> 2) & 3);
    match family {
        Family::Tf32 => match field & 15 {
            0b0100 => Some([0, 0]),
            0b1110 => Some([1, 1]),
            _ => None,
        },
        _ if lo == hi => None,
        _ => Some([lo, hi]),
    }
}

/// This warp's logical 16 x K A of a `wgmma.mma_async.sp` from its packed 16 x K/2 `packed`: each
/// chunk's packed elements go where their metadata says, the rest are the structured zeros (they
/// take no part in the product, as on the tensor core: a pruned position meets no B row). An
/// invalid metadata field is `WgmmaSparseMetadataInvalid`; if the run goes on (`--ub warn`), its
/// chunk is left zero.
fn sparse_a(cx: &mut Cx<'_, '_>, i: &Instr, f: &Form, packed: &Mat) -> Result<Mat, Stop> {
    let sel = match i.operands.get(4) {
        Some(Operand::Imm(s)) => *s as u32,
        _ => 0,
    };
    let tf32 = f.family == Family::Tf32;
    let (chunk_len, kept): (u32, usize) = if tf32 { (2, 1) } else { (4, 2) };
    let mut meta = [0u32; WARP];
    for (l, m) in meta.iter_mut().enumerate() {
        *m = cx.src(i, 3, l as u32) as u32;
    }
    let mut a = Mat::new(16, f.k);
    for row in 0..16 {
        for chunk in 0..f.k / chunk_len {
            let (lane, bit) = meta_place(f.family, sel, row, chunk);
            let field = (meta[lane as usize] >> bit) & 15;
            let Some(pos) = meta_decode(f.family, field) else {
                let reg = match &i.operands[3] {
                    Operand::Reg(r) => cx.m.module().kernel.regs.get(r.0 as usize).map(|d| d.name.clone()).unwrap_or_default(),
                    _ => String::new(),
                };
                let msg = format!(
                    "`{}`: sparsity metadata {field:#06b} (bits {bit}..{} of {reg} in lane {lane}, sp-sel {sel}) for elements {}..{} of row {} of A is not a valid {} pattern (PTX 9.7.15.6.1: undefined behavior)",
                    cx.text(i),
                    bit + 4,
                    chunk * chunk_len,
                    (chunk + 1) * chunk_len,
                    16 * (cx.warp % 4) + row,
                    if tf32 { "1:2" } else { "2:4" }
                );
                cx.finding(FindingKind::WgmmaSparseMetadataInvalid, lane, msg)?;
                continue;
            };
            for (e, p) in pos.iter().take(kept).enumerate() {
                a.set(row, chunk * chunk_len + p, packed.at(row, chunk * kept as u32 + e as u32));
            }
        }
    }
    Ok(a)
}

/// The fence rule before an issue, then the instruction's registers join the open group.
fn check_registers(cx: &mut Cx<'_, '_>, i: &Instr, f: &Form, a_in_regs: bool) -> Result<(), Stop> {
    state(cx);
    let s = slot(cx);
    let shape = hopsync_firmware::mma::shape_of(i).map(|x| x.0).unwrap_or(Mod::M64n8k16);
    let d: Vec<u32> = vec_regs(i, 0).into_iter().flatten().map(|r| r.0).collect();
    let a: Vec<u32> = if a_in_regs { vec_regs(i, 1).into_iter().flatten().map(|r| r.0).collect() } else { Vec::new() };
    let _ = f;
    let w = &cx.m.wgmma.warps[s];
    let problem = if !w.fence_seen {
        Some("this warp executed no wgmma.fence before its first wgmma.mma_async".to_string())
    } else if let Some((r, at)) = d.iter().chain(&a).find_map(|r| w.touched[*r as usize].map(|at| (*r, at))) {
        let name = cx.m.module().kernel.regs[r as usize].name.clone();
        Some(format!("{name} was accessed by `{}` (pc {at}) after the last wgmma.fence", super::instr_text_at(cx, at)))
    } else {
        w.pending().find(|p| p.shape != shape && d.iter().any(|r| p.d.contains(r))).map(|p| format!("it accumulates into the registers of a pending wgmma.mma_async of another shape (pc {})", p.pc))
    };
    if let Some(why) = problem {
        cx.finding(FindingKind::WgmmaFenceMissing, cx.first_lane(), format!("`{}`: {why} (PTX 9.7.15 wgmma.fence: it must order register accesses before wgmma.mma_async)", cx.text(i)))?;
    }
    let pc = cx.pc;
    cx.m.wgmma.warps[s].open.push(Pending { pc, shape, d, a });
    Ok(())
}

/// A (16 x K) of this warp from its A-fragment registers (the mma `m16n8` layout, PTX
/// 9.7.15.5.1.1).
fn a_from_regs(cx: &Cx<'_, '_>, i: &Instr, f: &Form, at: Mod) -> Mat {
    let per = f.family.per_reg();
    let regs = vec_regs(i, 1);
    let mut m = Mat::new(16, f.a_cols());
    for l in 0..WARP as u32 {
        for r in 0..4u32 {
            let v = regs.get(r as usize).copied().flatten().map(|reg| cx.reg(reg, l)).unwrap_or(0);
            for j in 0..per {
                let (row, col) = a16(l, r, j, 4, per);
                m.set(row, col, elem(at, v, j));
            }
        }
    }
    m
}

/// Reads `rows x k` elements (`rows` of A from `row0`, or the N columns of B) of type `t` from
/// shared memory through the descriptor in operand `k_op` (lane 0's value: the descriptor is the
/// same across the warpgroup, PTX 9.7.15.5.2). Returns A as rows x K, B as K x N.
#[allow(clippy::too_many_arguments)]
fn smem_matrix(cx: &mut Cx<'_, '_>, i: &Instr, k_op: usize, rows: u32, k: u32, row0: u32, t: Mod, mn_major: bool, is_a: bool) -> Result<Mat, Stop> {
    let lane0 = cx.first_lane();
    let d = Desc::decode(cx.src(i, k_op, lane0));
    if d.base_offset != 0 && d.swizzle != TensorMapSwizzle::None {
        return Err(unsupported(cx, i, "a wgmma matrix descriptor with a nonzero base offset").unwrap_err());
    }
    let bits = super::mma::elem_bits(t);
    // A K-major swizzled operand's K lies within one atom row (PTX 9.7.15.5.1.2): 32 bytes for
    // every dense wgmma, but 64 for the B of a sparse one, which a 32-byte atom cannot hold.
    if let (false, Some(span)) = (mn_major, d.swizzle.span_bytes()) {
        if k * bits / 8 > span {
            return Err(unsupported(cx, i, &format!("a K-major wgmma operand of {} bytes of K in a {span}-byte swizzle atom", k * bits / 8)).unwrap_err());
        }
    }
    let smem = cx.m.smem_bytes;
    let mut out = if is_a { Mat::new(rows, k) } else { Mat::new(k, rows) };
    let mut chunks: Vec<u32> = Vec::new();
    for r in 0..rows {
        for kk in 0..k {
            let (addr, bit) = d.address(row0 + r, kk, bits, mn_major);
            let nbytes = bits.div_ceil(8);
            if addr + nbytes > smem {
                let what = if is_a { "A" } else { "B" };
                cx.finding(
                    FindingKind::MemOutOfBounds,
                    lane0,
                    format!("wgmma {what} element ({}, {kk}) at shared 0x{addr:x} (descriptor start 0x{:x}, LBO {}, SBO {}, {:?} swizzle) is outside the {smem} bytes of shared memory", row0 + r, d.start, d.lbo, d.sbo, d.swizzle),
                )?;
                return Err(Stop::Finding);
            }
            chunks.push(addr & !15);
            let bytes = cx.m.read(crate::machine::Place::Shared(cx.cta, addr as usize), nbytes as usize);
            let mut raw = 0u64;
            for (b, x) in bytes.iter().enumerate() {
                raw |= (*x as u64) << (8 * b);
            }
            let v = elem(t, raw >> bit, 0);
            if is_a {
                out.set(r, kk, v);
            } else {
                out.set(kk, r, v);
            }
        }
    }
    chunks.sort_unstable();
    chunks.dedup();
    let cta = cx.cta;
    let mut k0 = 0;
    while k0 < chunks.len() {
        let mut k1 = k0 + 1;
        while k1 < chunks.len() && chunks[k1] == chunks[k1 - 1] + 16 {
            k1 += 1;
        }
        let (start, end) = (chunks[k0] as usize, (chunks[k1 - 1] + 16).min(smem) as usize);
        super::tma::on_async_read(cx, cta, start, end, lane0)?;
        // The warp's read of its operands, for the happens-before detector: another warp's write
        // to them (a cp.async landing, a store) must be ordered before it by a barrier or an
        // mbarrier wait; the .sync.aligned wgmma orders only the warp's own lanes (PTX 9.7.15.5.2).
        // (Checked, not recorded: see `race::Access::OperandRead`.)
        crate::race::thread_access(cx.m, cta, cx.warp, lane0, cx.pc, crate::machine::Place::Shared(cta, start), end - start, crate::race::Access::OperandRead)?;
        k0 = k1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(start: u32, lbo: u32, sbo: u32, swz: u64) -> Desc {
        Desc::decode((start as u64 >> 4) | ((lbo as u64 >> 4) << 16) | ((sbo as u64 >> 4) << 32) | (swz << 62))
    }

    #[test]
    fn descriptor_fields() {
        let d = desc(0x400, 16, 1024, 1);
        assert_eq!((d.start, d.lbo, d.sbo, d.swizzle), (0x400, 16, 1024, TensorMapSwizzle::B128));
        assert_eq!(Desc::decode(3u64 << 62).swizzle, TensorMapSwizzle::B32);
        assert_eq!(Desc::decode(2u64 << 62 | 5u64 << 49).base_offset, 5);
    }

    #[test]
    fn k_major_no_swizzle_core_matrices() {
        // 8x16-byte core matrices: rows 16 bytes apart, the K neighbour LBO away, the next 8 rows
        // SBO away.
        let d = desc(0x1000, 128, 256, 0);
        assert_eq!(d.address(0, 0, 16, false), (0x1000, 0));
        assert_eq!(d.address(3, 5, 16, false), (0x1000 + 3 * 16 + 10, 0));
        assert_eq!(d.address(3, 9, 16, false), (0x1000 + 3 * 16 + 2 + 128, 0));
        assert_eq!(d.address(11, 0, 16, false), (0x1000 + 3 * 16 + 256, 0));
        // b1: K index 13 is bit 5 of byte 1.
        assert_eq!(d.address(0, 13, 1, false), (0x1001, 5));
    }

    #[test]
    fn k_major_128b_swizzle_reads_a_tma_tile_back() {
        // A 64 x 64 bf16 tile a TMA load wrote with the 128B swizzle at 0x2000 (1024-aligned): row
        // r's 16-byte chunk c lands at chunk c ^ (r % 8). CUTLASS's descriptor for the K block kb
        // starts 32 bytes further per block (SBO 1024, LBO unused).
        for kb in 0..4u32 {
            let d = desc(0x2000 + 32 * kb, 16, 1024, 1);
            for r in 0..64u32 {
                for kk in 0..16u32 {
                    let logical = r * 128 + (kb * 16 + kk) * 2;
                    let tma = 0x2000 + swizzle_offset(TensorMapSwizzle::B128, logical as u64).unwrap() as u32;
                    assert_eq!(d.address(r, kk, 16, false).0, tma, "r {r} k {kk} kb {kb}");
                }
            }
        }
    }

    #[test]
    fn mn_major_swizzled_atoms() {
        // MN-major 64B swizzle of f16: 32 MN elements per 64-byte row, 8 K rows per atom; LBO to
        // the next 32 MN elements, SBO to the next 8 K rows.
        let d = desc(0x4000, 2048, 512, 2);
        let plain = |mn: u32, k: u32| 0x4000 + (mn % 32) * 2 + (mn / 32) * 2048 + (k % 8) * 64 + (k / 8) * 512;
        for (mn, k) in [(0, 0), (5, 3), (31, 7), (40, 9), (63, 15)] {
            let want = swizzle_offset(TensorMapSwizzle::B64, plain(mn, k) as u64).unwrap() as u32;
            assert_eq!(d.address(mn, k, 16, true).0, want);
        }
        // MN-major without swizzle: 8 MN elements per 16 bytes, SBO between MN core matrices, K
        // rows 16 bytes apart, LBO between K core matrices.
        let d = desc(0x100, 512, 128, 0);
        assert_eq!(d.address(9, 10, 16, true).0, 0x100 + 2 + 128 + 2 * 16 + 512);
    }
}
