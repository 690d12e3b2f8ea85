//! Static timing facts of each instruction (its class, the registers it reads and writes) and the
//! memory cost models (shared-memory bank conflicts, global sectors).

use crate::config::SmConfig;
use hopsync_firmware::ir::{AddrBase, Instr, Mod, Module, Operand, Space, Sreg};
use hopsync_cosim::exec::{self, MbarFamily};
use hopsync_firmware::Opcode;
use smallvec::SmallVec;

/// How the engine executes and times an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Golden body; result after a fixed latency.
    Compute,
    /// Golden body; a TMA copy, reduction or prefetch: its operation goes to the CTA's TmaEngine.
    Tma,
    /// Golden body; a branch, `call` or `ret` from a `.func` (taken: fetch redirect; a call to a
    /// runtime function such as vprintf runs in the golden body in its issue slot).
    Branch,
    /// Golden body; `nanosleep` (the warp sleeps).
    Sleep,
    /// Golden body; a memory access timed by the memory models (ld, st, atom, red,
    /// tensormap.cp_fenceproxy).
    Mem,
    /// Golden body; `cp.async` (its copies complete through the global pipe).
    CpAsync,
    /// Golden body; `st.async` / `red.async` (data and complete-tx travel the DSMEM network).
    AsyncStore,
    /// mbarrier.* and cp.async.mbarrier.arrive: the MbarrierUnit.
    Mbarrier(MbarFamily),
    /// bar / barrier: the NamedBarrierUnit.
    NamedBarrier,
    /// barrier.cluster.*: the ClusterBarrierUnit.
    ClusterBarrier,
}

/// What the engine knows of one instruction before running it.
#[derive(Debug, Clone)]
pub struct InstrInfo {
    /// Class.
    pub class: Class,
    /// Registers read (guard, sources, address bases).
    pub srcs: Vec<u32>,
    /// Registers written.
    pub dsts: Vec<u32>,
    /// Result latency (compute classes), cycles.
    pub latency: u64,
    /// Index of the (first) address operand.
    pub addr: Option<usize>,
    /// An atomic / reduction (memory class).
    pub atomic: bool,
    /// A load (memory class; its destination waits for the data).
    pub load: bool,
    /// The memory ordering the warp waits for before the instruction issues.
    pub ordering: Ordering,
    /// The scheduler's execution pipe it occupies beyond its issue slot ([`IssuePipe`]).
    pub pipe: IssuePipe,
    /// A register-to-register `mov` (also packing or unpacking a vector, `mov.b64 {lo, hi}, x`):
    /// ptxas allocates it away, so it does not wait for its sources; its destinations are ready
    /// when they are (`hopsync gpu pack`'s trace code reads an mbarrier token with such a `mov`
    /// before the %clock64 read, and silicon's bracket is 2..5 cycles, not the token's 31).
    pub rename: bool,
    /// ptxas unrolled the counted loop this instruction controls (its induction step, compare,
    /// backward branch, or an address step folded into immediate offsets): the instruction does
    /// not exist on silicon, so the engine runs it in no issue slot, with no latency, pipe or
    /// branch redirect ([`unrolled_loops`]; the engine asks [`Unroll`] per warp and iteration).
    pub unroll: Unroll,
    /// An integer `div` / `rem` by this register: ptxas computes the divisor's reciprocal
    /// (I2F.U32.RP, MUFU.RCP, F2I) as soon as the divisor is known, hoisting it out of loops, so
    /// the division waits `latency.div_reciprocal` after the divisor's value ([`division_of`]).
    pub divisor: Option<u32>,
    /// A SASS sequence of dependent instructions (`div`, `rem`, and the IEEE `sqrt` / `rcp`,
    /// timed as `div`): the warp issues nothing after it until the sequence's last instruction,
    /// `latency.alu` before its result (silicon issues SASS in order).
    pub sequence: bool,
    /// It has a guard: its destinations keep their old values in the lanes whose guard is false,
    /// so it reads them too (ptxas cannot give the result another register).
    pub merges: bool,
    /// Where the warp may issue it relative to older instructions still waiting for their
    /// operands ([`Lookahead`]).
    pub lookahead: Lookahead,
    /// A guarded `bra` whose guard a fixed-latency instruction of its basic block wrote (a
    /// compare, ...): silicon's BRA reads the predicate `latency.alu + latency.predicate_branch`
    /// cycles after the ISETP, a wait ptxas writes as stall counts on the instructions between
    /// them, so the part left for the instruction just before the BRA holds after that
    /// instruction's issue, however late it came (calibration/branch_shapes.ptx; the SASS of
    /// val_mem_loops.ptx: ISETP, then an add that waits for a load with a stall count of 12, then
    /// the BRA). The guard and that total wait (`WarpState::operands_at`).
    pub branch_guard: Option<(u32, u64)>,
    /// It names a `.shared` variable (`[bar]`, `[buf+16]`, `mov.u32 %r, buf`) where ptxas reads
    /// the CTA's shared window base right before it: how long after the warp's previous issue it
    /// waits for that (`latency.window_base`; 0: no wait). On sm_90 a shared variable's address
    /// is the window base (SR_CgaCtaId) plus its offset, and ptxas rematerializes the base
    /// (S2UR / S2R SR_CgaCtaId, then ULEA) near its uses rather than keeping it in a register
    /// ([`window_bases`]).
    pub window_base: u64,
    /// It tops a spin loop where ptxas puts a YIELD ([`yield_loops`]): how long after the warp's
    /// previous issue it waits each time the warp comes to it (`issue.yield_cycles`; 0: none).
    pub yield_cycles: u64,
    /// The backward `bra` of a spin loop whose retries carry the YIELD ([`YieldSite::Retry`]):
    /// what the warp waits beyond a taken branch's redirect when it is taken.
    pub retry_yield_cycles: u64,
    /// How long after the warp's previous issue the instruction's own SASS instruction issues:
    /// the SASS ptxas puts before it (`sync.mbarrier_init_setup_cycles` for `mbarrier.init`:
    /// the init word computed on the uniform datapath, UIADD3 and two USHF, and usually a
    /// FENCE.VIEW.ASYNC.S whose scoreboard the SYNCS.EXCH.64 waits on; 0: none).
    pub setup_cycles: u64,
    /// A forward `bra` that ptxas compiles to no branch at all ([`if_converted_branches`]): it
    /// predicates the few instructions the branch skips, or deletes a branch to the next
    /// instruction. The engine runs it in one issue slot with no branch stall or redirect, and
    /// its target is no join. Not modelled: the issue slots silicon spends on the predicated
    /// instructions when the guard skips them (the engine jumps over them), and a guard that
    /// differs between lanes still splits the warp in the engine for those few instructions.
    pub if_converted: bool,
    /// A guarded `bra` ptxas compiles with a convergence barrier because its predicate may
    /// differ between lanes ([`divergent_branches`]).
    pub divergent: bool,
    /// Its address operand is the same in every lane as far as ptxas can tell (no per-lane
    /// register feeds it: [`per_lane_registers`]); only then does ptxas aggregate an atomic
    /// ([`aggregates_atomic`]).
    pub uniform_address: bool,
}

impl InstrInfo {
    /// The registers whose values it needs: its sources, and its destinations when it
    /// [`merges`](InstrInfo::merges) into them.
    pub fn reads(&self) -> impl Iterator<Item = u32> + '_ {
        self.srcs.iter().chain(if self.merges { &self.dsts[..] } else { &[] }).copied()
    }

    /// How long after the warp's previous issue the SASS ptxas puts before the instruction
    /// keeps it waiting: the window-base read, the YIELD or its own set-up, whichever is longest
    /// (`WarpState::operands_at`; 0: none).
    pub fn sass_before(&self) -> u64 {
        self.window_base.max(self.yield_cycles).max(self.setup_cycles)
    }
}

/// ptxas's list schedule within a basic block, as the engine follows it: silicon issues SASS in
/// order, but ptxas has hoisted loads above the arithmetic that uses them (the consumer loop of
/// calibration/tma/val_warp_specialized.ptx, `ld.shared; add` x 32 in the PTX, is 12 LDS, then
/// two LDS for each IADD3 in the SASS of ptxas 13.5: six scoreboards of two loads). The engine
/// executes every instruction in PTX order (the golden model's values and the lockstep's records
/// do not change); a register-only instruction whose operands are not ready yet is executed and
/// set aside, up to `issue.lookahead_instructions` of them, and takes its issue slot and pipe
/// when they are ready, while the warp issues what follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookahead {
    /// Register-only arithmetic: set aside when its operands are not ready.
    Defer,
    /// A plain load or store: issues past the instructions set aside when it does not read what
    /// they write.
    Pass,
    /// Anything else (a branch ends the basic block; a barrier, an mbarrier or async operation,
    /// a fence, an atomic, a `%clock` read keep their place): issues once the instructions set
    /// aside have.
    Drain,
}

/// The register an integer `div` / `rem` divides by ([`InstrInfo::divisor`]); `None` for a
/// float division, an immediate divisor (its reciprocal is taken as ready: [`compute_latency`]
/// times it) or another instruction.
pub fn division_of(i: &Instr) -> Option<u32> {
    let int = i.ty().is_some_and(|t| !t.is_float());
    match (i.op, i.operands.get(2)) {
        (Opcode::Div | Opcode::Rem, Some(Operand::Reg(r))) if int => Some(r.0),
        _ => None,
    }
}

/// Whether `b`, right after `a`, divides the same operands as `a` does (`div` then `rem`, or the
/// other way round, with `a` not overwriting them): ptxas computes both in one sequence
/// (val_warp_specialized.ptx's `rem.u32 %r40, %r30, 4; div.u32 %r41, %r30, 4` is one IMAD.HI and
/// its corrections).
fn divides_as_previous(a: &Instr, b: &Instr) -> bool {
    let division = |i: &Instr| matches!(i.op, Opcode::Div | Opcode::Rem) && i.ty().is_some_and(|t| !t.is_float());
    let overwrites = matches!(a.operands.first(), Some(Operand::Reg(d)) if a.operands[1..].iter().any(|o| o == &Operand::Reg(*d)));
    division(a) && division(b) && a.op != b.op && a.ty() == b.ty() && a.guard == b.guard && a.operands.get(1..3) == b.operands.get(1..3) && !overwrites
}

/// The constant divisor of an integer `div` / `rem` (ptxas computes its reciprocal once, ahead).
fn constant_divisor(i: &Instr) -> Option<u64> {
    let int = i.ty().is_some_and(|t| !t.is_float());
    match (i.op, i.operands.get(2)) {
        (Opcode::Div | Opcode::Rem, Some(Operand::Imm(v))) if int && *v != 0 => Some(v.unsigned_abs()),
        _ => None,
    }
}

/// Whether `i` is a SASS sequence of dependent instructions ([`InstrInfo::sequence`]): a division,
/// and what [`compute_latency`] times as `latency.div`.
pub fn sequence_of(i: &Instr) -> bool {
    match latency_kind(i.op) {
        LatencyKind::Div => true,
        LatencyKind::Mufu => matches!(i.op, Opcode::Sqrt | Opcode::Rcp) && !i.has(Mod::Approx),
        LatencyKind::Arith | LatencyKind::Mul | LatencyKind::WarpOp | LatencyKind::Redux | LatencyKind::Match | LatencyKind::Activemask | LatencyKind::Shfl | LatencyKind::Mma | LatencyKind::Misc | LatencyKind::TokenAlu => false,
    }
}

/// Whether ptxas makes `i` a warp-aggregated atomic when the whole warp is active on one address
/// (the engine checks those at run time): an integer `atom.add` of 32 bits, shared or global
/// (calibration/smem_atomics.ptx's SASS: VOTE.ANY, a SHFL.UP scan, one ATOMS by the last lane,
/// SHFL.IDX), at an address ptxas can tell is warp-uniform ([`InstrInfo::uniform_address`]:
/// smem_cas_atomics.ptx's `atom.shared.add.u32` at an address computed from `%tid` is one
/// ATOMS.ADD, 90 cycles for 32 lanes on one word). Other operations and widths were not measured
/// and stay per-lane atomics.
pub fn aggregates_atomic(i: &Instr) -> bool {
    i.op == Opcode::Atom && i.has(Mod::Add) && matches!(i.ty(), Some(Mod::U32 | Mod::S32))
}

/// Whether ptxas makes `i`, an atomic or reduction on shared memory, a compare-and-swap loop: sm_90
/// has ATOMS for the 32-bit integer operations (add, min, max, inc, dec, and, or, xor, exch, cas)
/// and 64-bit exch / cas only. Floating point of any width, 16-bit types and the other 64-bit
/// operations are LDS, the operation, ATOMS.CAST.SPIN (or ATOMS.CAS) and a branch back while the
/// compare failed (ptxas 13.5 -arch=sm_90, checked for add.f32 / .f64 / .u64 / .noftz.f16 /
/// .noftz.bf16x2, max.s64, and.b64; calibration/smem_cas_atomics.ptx): the lanes on one word
/// succeed one per pass (`smem.cas_first_cycles`, `smem.cas_pass_cycles`).
pub fn cas_loop_atomic(i: &Instr) -> bool {
    if !matches!(i.op, Opcode::Atom | Opcode::Red) {
        return false;
    }
    let native = match i.ty() {
        Some(Mod::B32 | Mod::U32 | Mod::S32) => [Mod::Add, Mod::Min, Mod::Max, Mod::Inc, Mod::Dec, Mod::And, Mod::Or, Mod::Xor, Mod::Exch, Mod::Cas].iter().any(|&m| i.has(m)),
        Some(Mod::B64 | Mod::U64 | Mod::S64) => i.has(Mod::Exch) || i.has(Mod::Cas),
        _ => false,
    };
    !native
}

/// [`Lookahead`] of an instruction.
pub fn lookahead_of(i: &Instr, class: Class, ordering: Ordering) -> Lookahead {
    let clock = i.operands.iter().any(|o| matches!(o, Operand::Special(Sreg::Clock | Sreg::Clock64)));
    match class {
        Class::Compute if !clock && exec::runs_ahead_of_barrier(i.op) == exec::RunAhead::Yes => Lookahead::Defer,
        Class::Mem if ordering == Ordering::None && matches!(i.op, Opcode::Ld | Opcode::St | Opcode::Ldmatrix | Opcode::Stmatrix) => Lookahead::Pass,
        Class::Compute | Class::Mem | Class::Tma | Class::Branch | Class::Sleep | Class::CpAsync | Class::AsyncStore => Lookahead::Drain,
        Class::Mbarrier(_) | Class::NamedBarrier | Class::ClusterBarrier => Lookahead::Drain,
    }
}

/// The execution pipes of an SM sub-partition that limit how fast its scheduler issues
/// independent arithmetic (each pipe takes a warp instruction every `cycles`; the scheduler's other
/// warps may issue to the other pipe meanwhile). Silicon (H100, calibration/issue_rate.ptx and
/// val_issue_mix.ptx): 64 independent fma.rn.f32 issue in 65 cycles, 64 mad.lo.u32 in 128,
/// alternating fma / mad.lo in 96 (one pipe: FFMA 1 cycle, IMAD 2), 64 add/xor in 91..98 for one
/// warp a scheduler and 174 / 304 / 420 for 2 / 3 / 4 (the 16-lane integer ALU: 2 cycles a warp
/// instruction, shared by the scheduler's warps). The CUDA C++ Programming Guide's throughput
/// table for compute capability 9.0 agrees: 128 fp32 add/mul/fma results per clock per SM, 64 for
/// 32-bit integer add, compare, shift, logic and multiply-add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IssuePipe {
    /// No pipe beyond the issue slot (moves, control, conversions, the ports' instructions).
    None,
    /// The FMA pipe for one cycle: fp32 add / mul / fma (FFMA, FADD, FMUL).
    Fma,
    /// The FMA pipe for `issue.imad_issue_cycles`: integer mul / mad (IMAD).
    Imad,
    /// The integer ALU pipe for `issue.alu_issue_cycles`: logic, shifts, compares, selects,
    /// min / max, bit-field ops (LOP3, SHF, ISETP, SEL, IMNMX, ...).
    Alu,
}

/// The pipe of an instruction. An integer add / sub is IADD3 (ALU) or IMAD.IADD (FMA pipe, as an
/// IMAD): ptxas spreads them over the two pipes (issue_rate.ptx's SASS: 16 of each among 32 adds),
/// which the model follows statically by alternating over the kernel's adds in program order
/// (`adds`: the adds before this one).
fn issue_pipe(i: &Instr, adds: &mut u64) -> IssuePipe {
    use Opcode::*;
    let float = i.ty().is_some_and(|t| t.is_float()) || i.ty2.is_some_and(|t| t.is_float());
    let f32_ = i.ty() == Some(Mod::F32);
    match i.op {
        Add | Sub | Mul | Fma | Mad if f32_ => IssuePipe::Fma,
        _ if float => IssuePipe::None,
        Mul | Mad | Mul24 | Mad24 | Sad | Dp4a | Dp2a => IssuePipe::Imad,
        Add | Sub | Addc | Subc => {
            *adds += 1;
            if *adds % 2 == 0 {
                IssuePipe::Imad
            } else {
                IssuePipe::Alu
            }
        }
        And | Or | Xor | Not | Cnot | Shl | Shr | Lop3 | Shf | Min | Max | Abs | Neg | Setp | Selp | Set | Bfe | Bfi | Bmsk | Szext | Prmt => IssuePipe::Alu,
        _ => IssuePipe::None,
    }
}

/// A register, or a vector of registers: what a renaming `mov` moves.
fn reg_only(o: &Operand) -> bool {
    match o {
        Operand::Reg(_) => true,
        Operand::Vector(v) => v.iter().all(|x| matches!(x, Operand::Reg(_))),
        _ => false,
    }
}

fn regs_of(op: &Operand, out: &mut Vec<u32>) {
    match op {
        Operand::Reg(r) | Operand::NotReg(r) => out.push(r.0),
        Operand::Addr { base: AddrBase::Reg(r), .. } => out.push(r.0),
        Operand::Vector(v) => v.iter().for_each(|o| regs_of(o, out)),
        Operand::Pair(d, p) => {
            if d.0 != u32::MAX {
                out.push(d.0);
            }
            if p.0 != u32::MAX {
                out.push(p.0);
            }
        }
        _ => {}
    }
}

/// Whether operand 0 of `i` is a destination: the row's pattern that fits the operand count has
/// `d`, `|` or `w` (a vector of destinations) in its first position.
fn first_is_dest(i: &Instr) -> bool {
    let n = i.operands.len();
    for alt in i.op.spec().patterns() {
        let req = alt.iter().filter(|s| !s.optional).count();
        if n >= req && n <= alt.len() {
            return alt.first().is_some_and(|s| s.kinds.contains('d') || s.kinds.contains('|') || s.kinds.contains('w'));
        }
    }
    false
}

/// The port that executes each instruction, from its opcode (every opcode named: a new row of
/// the opcode table does not compile until it has a class here).
pub fn class_of(op: Opcode) -> Class {
    use Opcode::*;
    match op {
        Mov | Add | Addc | Sub | Subc | Mul | Mad | Fma | Div | Rem | Abs | Neg | Min | Max | And | Or | Xor | Not | Cnot | Shl | Shr | Popc | Clz | Brev | Bfind | Bfe | Setp | Selp | Cvt | Cvta => Class::Compute,
        Copysign | Testp | Mul24 | Mad24 | Sqrt | Rsqrt | Rcp | Ex2 | Lg2 | Sin | Cos | Tanh | Bfi | Prmt | Lop3 | Fns | Shf | Bmsk | Szext | Sad | Dp4a | Dp2a | Isspacep | Set => Class::Compute,
        Exit | Trap | Brkpt | Mapa | Getctarank | Elect | Activemask | Vote | Match | ShflSync | Redux | BarWarpSync | Griddepcontrol | Membar | Fence | Setmaxnreg => Class::Compute,
        // The matrix instructions: golden bodies; wgmma's asynchrony is timed by wgmma.rs.
        Movmatrix | Mma | WgmmaFence | WgmmaCommitGroup | WgmmaWaitGroup | WgmmaMmaAsync | WgmmaMmaAsyncSp => Class::Compute,
        CpAsyncCommitGroup | CpAsyncWaitGroup | CpAsyncWaitAll => Class::Compute,
        CpAsyncBulkCommitGroup | CpAsyncBulkWaitGroup => Class::Compute,
        CpAsyncBulk | CpAsyncBulkTensor | CpReduceAsyncBulk | CpReduceAsyncBulkTensor | CpAsyncBulkPrefetch | CpAsyncBulkPrefetchTensor => Class::Tma,
        // sm_100 only: rejected by the target check before any engine runs them
        ClusterlaunchcontrolTryCancel | ClusterlaunchcontrolQueryCancel => Class::Compute,
        Bra | Call | Ret => Class::Branch,
        Nanosleep => Class::Sleep,
        Ld | St | Atom | Red | TensormapCpFenceproxy | TensormapReplace | Ldmatrix | Stmatrix | Prefetch | Prefetchu => Class::Mem,
        CpAsync => Class::CpAsync,
        StAsync | RedAsync => Class::AsyncStore,
        MbarrierInit => Class::Mbarrier(MbarFamily::Init),
        MbarrierInval => Class::Mbarrier(MbarFamily::Inval),
        MbarrierExpectTx => Class::Mbarrier(MbarFamily::ExpectTx),
        MbarrierCompleteTx => Class::Mbarrier(MbarFamily::CompleteTx),
        MbarrierArrive => Class::Mbarrier(MbarFamily::Arrive),
        MbarrierArriveDrop => Class::Mbarrier(MbarFamily::ArriveDrop),
        MbarrierTestWait => Class::Mbarrier(MbarFamily::TestWait),
        MbarrierTryWait => Class::Mbarrier(MbarFamily::TryWait),
        // pending_count reads no barrier: ptxas computes it from the token with ALU instructions
        // (SHF.R.U32.HI, LOP3.LUT, IADD3: calibration/mbar_ops.ptx's SASS), so no unit request.
        MbarrierPendingCount => Class::Compute,
        CpAsyncMbarrierArrive => Class::Mbarrier(MbarFamily::CpAsyncArrive),
        Bar | Barrier => Class::NamedBarrier,
        BarrierClusterArrive | BarrierClusterWait => Class::ClusterBarrier,
    }
}

/// What memory ordering an instruction makes its warp wait for before it issues (PTX 9.7.12.4
/// `fence` / `membar`; 8.8 release patterns; 9.7.13.2 `barrier.cluster`, whose arrive has release
/// semantics unless `.relaxed`; 9.7.13.15.13 `mbarrier.arrive`'s `.release` at `.cluster` scope).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// None.
    None,
    /// A CTA-scope fence (`sync.fence_cta_cycles`).
    FenceCta,
    /// A proxy fence (`sync.fence_proxy_cycles`).
    FenceProxy,
    /// A release at cluster scope or wider: the warp's writes drain first
    /// (`sync.release_drain_cycles`).
    ReleaseDrain,
}

/// Whether `i` releases at cluster scope or wider: a `.release`, `.acq_rel` or `.sc` (or, for
/// `membar`, `.gl` / `.sys`) with a `.cluster`, `.gpu` or `.sys` scope.
fn releases_wide(i: &Instr) -> bool {
    let sem = i.has(Mod::Release) || i.has(Mod::AcqRel) || i.has(Mod::Sc);
    sem && (i.has(Mod::Cluster) || i.has(Mod::Gpu) || i.has(Mod::Sys))
}

/// Whether `i` is an mbarrier arrive with release semantics (PTX 9.7.13.15.13: `.release` unless
/// `.relaxed`), which waits for the warp's shared-memory writes before it
/// (`sync.release_after_shared_write_cycles`; a release at cluster scope or wider drains them
/// with the rest in [`Ordering::ReleaseDrain`]).
pub fn arrive_releases(i: &Instr) -> bool {
    matches!(i.op, Opcode::MbarrierArrive | Opcode::MbarrierArriveDrop) && !i.has(Mod::Relaxed)
}

/// The ordering `i` waits for (every opcode named).
pub fn ordering_of(i: &Instr) -> Ordering {
    use Opcode::*;
    let wide = if releases_wide(i) { Ordering::ReleaseDrain } else { Ordering::None };
    match i.op {
        Fence => {
            if releases_wide(i) && !i.has(Mod::MbarrierInit) {
                Ordering::ReleaseDrain
            } else if i.has(Mod::Proxy) {
                Ordering::FenceProxy
            } else {
                // CTA scope, or an acquire / mbarrier_init fence with no writes to drain
                Ordering::FenceCta
            }
        }
        Membar => {
            if i.has(Mod::Proxy) {
                Ordering::FenceProxy
            } else if i.has(Mod::Gl) || i.has(Mod::Sys) {
                Ordering::ReleaseDrain
            } else {
                Ordering::FenceCta
            }
        }
        BarrierClusterArrive => {
            if i.has(Mod::Relaxed) {
                Ordering::None
            } else {
                Ordering::ReleaseDrain
            }
        }
        MbarrierArrive | MbarrierArriveDrop | MbarrierExpectTx | MbarrierCompleteTx | St | Atom | Red => wide,
        Mov | Add | Addc | Sub | Subc | Mul | Mad | Fma | Div | Rem | Abs | Neg | Min | Max | And | Or | Xor | Not | Cnot | Shl | Shr | Popc | Clz | Brev | Bfind | Bfe | Setp | Selp | Cvt | Cvta => Ordering::None,
        Exit | Trap | Brkpt | Mapa | Getctarank | Elect | Activemask | Vote | Match | ShflSync | Redux | BarWarpSync | Griddepcontrol | Setmaxnreg => Ordering::None,
        Copysign | Testp | Mul24 | Mad24 | Sqrt | Rsqrt | Rcp | Ex2 | Lg2 | Sin | Cos | Tanh | Bfi | Prmt | Lop3 | Fns | Shf | Bmsk | Szext | Sad | Dp4a | Dp2a | Isspacep | Set => Ordering::None,
        Movmatrix | Mma | WgmmaFence | WgmmaCommitGroup | WgmmaWaitGroup | WgmmaMmaAsync | WgmmaMmaAsyncSp => Ordering::None,
        TensormapReplace | Ldmatrix | Stmatrix | Prefetch | Prefetchu => Ordering::None,
        CpAsyncCommitGroup | CpAsyncWaitGroup | CpAsyncWaitAll | CpAsyncBulkCommitGroup | CpAsyncBulkWaitGroup => Ordering::None,
        CpAsyncBulk | CpAsyncBulkTensor | CpReduceAsyncBulk | CpReduceAsyncBulkTensor | CpAsyncBulkPrefetch | CpAsyncBulkPrefetchTensor => Ordering::None,
        ClusterlaunchcontrolTryCancel | ClusterlaunchcontrolQueryCancel => Ordering::None,
        Ld | Bra | Call | Ret | Nanosleep | TensormapCpFenceproxy | CpAsync | StAsync | RedAsync => Ordering::None,
        MbarrierInit | MbarrierInval | MbarrierTestWait | MbarrierTryWait | MbarrierPendingCount | CpAsyncMbarrierArrive => Ordering::None,
        Bar | Barrier | BarrierClusterWait => Ordering::None,
    }
}

/// Cycles the ordering of `o` holds the warp before the instruction issues.
pub fn ordering_cycles(o: Ordering, c: &SmConfig) -> u64 {
    match o {
        Ordering::None => 0,
        Ordering::FenceCta => c.sync.fence_cta_cycles,
        Ordering::FenceProxy => c.sync.fence_proxy_cycles,
        Ordering::ReleaseDrain => c.sync.release_drain_cycles,
    }
}

/// Which latency an instruction's result has (`[latency]` of sm90.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LatencyKind {
    /// `alu`, or `fp32` / `fp64` by the instruction's types.
    Arith,
    /// `mul` (integer), or `fp32` / `fp64`.
    Mul,
    /// `div`.
    Div,
    /// `warp_op`: a warp-wide exchange (vote, elect, bar.warp.sync).
    WarpOp,
    /// `redux`: a warp-wide reduction.
    Redux,
    /// `match_sync`: a warp-wide match.
    Match,
    /// `activemask`.
    Activemask,
    /// `misc`: no result, or bookkeeping only.
    Misc,
    /// `mufu`: the special-function unit (the `.approx` forms; the IEEE-rounded sqrt and rcp are
    /// instruction sequences, timed as `div`).
    Mufu,
    /// `shfl`: the warp's data crossbar.
    Shfl,
    /// `mma`: the warp-level tensor-core instruction.
    Mma,
    /// `mbarrier.pending_count`: three dependent ALU instructions on the token (`alu` each).
    TokenAlu,
}

fn latency_kind(op: Opcode) -> LatencyKind {
    use Opcode::*;
    match op {
        Div | Rem => LatencyKind::Div,
        Mul | Mad | Fma | Mul24 | Mad24 | Sad | Dp4a | Dp2a => LatencyKind::Mul,
        Sqrt | Rsqrt | Rcp | Ex2 | Lg2 | Sin | Cos | Tanh => LatencyKind::Mufu,
        Elect | Vote | BarWarpSync => LatencyKind::WarpOp,
        Redux => LatencyKind::Redux,
        Match => LatencyKind::Match,
        Activemask => LatencyKind::Activemask,
        ShflSync | Movmatrix => LatencyKind::Shfl,
        Mma => LatencyKind::Mma,
        Membar | Fence | Griddepcontrol | CpAsyncCommitGroup | CpAsyncWaitGroup | CpAsyncWaitAll | Exit | Ret | Call | Trap | Brkpt | Setmaxnreg => LatencyKind::Misc,
        // TMA instructions hand a command to the engine; none has a result register.
        CpAsyncBulk | CpAsyncBulkTensor | CpReduceAsyncBulk | CpReduceAsyncBulkTensor | CpAsyncBulkPrefetch | CpAsyncBulkPrefetchTensor | CpAsyncBulkCommitGroup | CpAsyncBulkWaitGroup => LatencyKind::Misc,
        // The wgmma family is timed by wgmma.rs (tensor cores, groups); issuing costs a slot.
        WgmmaFence | WgmmaCommitGroup | WgmmaWaitGroup | WgmmaMmaAsync | WgmmaMmaAsyncSp => LatencyKind::Misc,
        Mov | Add | Addc | Sub | Subc | Abs | Neg | Min | Max | And | Or | Xor | Not | Cnot | Shl | Shr | Popc | Clz | Brev | Bfind | Bfe | Setp | Selp | Cvt | Cvta | Mapa => LatencyKind::Arith,
        Copysign | Testp | Getctarank | Bfi | Prmt | Lop3 | Fns | Shf | Bmsk | Szext | Isspacep | Set => LatencyKind::Arith,
        // their results are timed by their ports; the fixed latency applies when no lane executes
        Ld | St | Atom | Red | TensormapCpFenceproxy | TensormapReplace | Ldmatrix | Stmatrix | Prefetch | Prefetchu | CpAsync | StAsync | RedAsync | Bra | Nanosleep => LatencyKind::Arith,
        MbarrierInit | MbarrierInval | MbarrierExpectTx | MbarrierCompleteTx | MbarrierArrive | MbarrierArriveDrop | MbarrierTestWait | MbarrierTryWait | CpAsyncMbarrierArrive => LatencyKind::Arith,
        MbarrierPendingCount => LatencyKind::TokenAlu,
        Bar | Barrier | BarrierClusterArrive | BarrierClusterWait | ClusterlaunchcontrolTryCancel | ClusterlaunchcontrolQueryCancel => LatencyKind::Arith,
    }
}

fn compute_latency(i: &Instr, c: &SmConfig) -> u64 {
    let l = &c.latency;
    let float = i.ty().is_some_and(|t| t.is_float()) || i.ty2.is_some_and(|t| t.is_float());
    let f64_ = i.ty() == Some(Mod::F64);
    let typed = |int: u64| if f64_ { l.fp64 } else if float { l.fp32 } else { int };
    let base = match latency_kind(i.op) {
        // div.approx / div.full.f32: FSETP, FSEL, a predicated FMUL rescale, MUFU.RCP, FMUL
        // (calibration/fp_latency.ptx's SASS), a sequence of five FP32 instructions around the MUFU
        LatencyKind::Div if float && !f64_ && (i.has(Mod::Approx) || i.has(Mod::Full)) => l.mufu + 5 * l.fp32,
        // ptxas divides by a constant as by an invariant register (its reciprocal computed once,
        // ahead), without the divide-by-zero select: two instructions fewer (val_div_atomics.ptx's
        // SASS: 8 a link against 10, div by 4 and 16 included)
        LatencyKind::Div if constant_divisor(i).is_some() => l.div.saturating_sub(2 * l.alu),
        LatencyKind::Div => l.div,
        LatencyKind::Mufu if matches!(i.op, Opcode::Sqrt | Opcode::Rcp) && !i.has(Mod::Approx) => l.div,
        LatencyKind::Mufu => l.mufu,
        LatencyKind::Mul => typed(l.mul),
        LatencyKind::WarpOp => l.warp_op,
        LatencyKind::Redux => l.redux,
        LatencyKind::Match => l.match_sync,
        LatencyKind::Activemask => l.activemask,
        LatencyKind::Shfl => l.shfl,
        LatencyKind::Mma => l.mma,
        LatencyKind::Misc => l.misc,
        LatencyKind::Arith => typed(l.alu),
        LatencyKind::TokenAlu => 3 * l.alu,
    };
    let sreg = |s: &Sreg| if matches!(s, Sreg::Clock | Sreg::Clock64) { l.clock } else { l.sreg };
    match i.operands.iter().filter_map(|o| if let Operand::Special(s) = o { Some(sreg(s)) } else { None }).max() {
        Some(s) => base.max(s),
        None => base,
    }
}

/// How long `nanosleep t` sleeps, cycles (t in ns, at most `sync.nanosleep_max_ns`). PTX 9.7.12.3
/// only bounds it by [0, 2t]. Silicon (H100, 2026-11-26, calibration/nanosleep_steps.ptx, 0 to 5000
/// ns): the sleep doubles at each power of two of t and is flat between them (64 and 100 ns both
/// 213-218 cycles, 128 and 200 both ~470, 2500 ns 8050, 5000 ns 16155): the largest power of two
/// not above t, in ticks of `sync.nanosleep_tick_ns`, less `sync.nanosleep_lead_cycles`, and at
/// least `sync.nanosleep_min_cycles`.
pub fn nanosleep_cycles(c: &SmConfig, ns: f64) -> u64 {
    let ns = ns.min(c.sync.nanosleep_max_ns);
    let s = &c.sync;
    if ns < 1.0 {
        return s.nanosleep_min_cycles.max(1);
    }
    let pow = 1u64 << (63 - (ns as u64).leading_zeros());
    c.ns_to_cycles(pow as f64 * s.nanosleep_tick_ns).saturating_sub(s.nanosleep_lead_cycles).max(s.nanosleep_min_cycles).max(1)
}

/// Bytes per cycle a TMA copy streams from global memory: the narrowest of the SM's path to
/// L2 (`global.bytes_per_cycle`), the bytes in flight over the latency (`tma.read_tags x
/// tma.request_bytes` over [`tma_read_latency`], Little's law) and the shared-memory write port (`tma.smem_bytes_per_cycle`).
pub fn tma_rate(c: &SmConfig) -> f64 {
    let inflight = (c.tma.read_tags as u64 * c.tma.request_bytes as u64) as f64 / tma_read_latency(c).max(1) as f64;
    (c.global.bytes_per_cycle as f64).min(inflight).min(c.tma.smem_bytes_per_cycle as f64)
}

/// Cycles from a TMA global read's request to its data: an SM load's `[global] latency` plus the
/// engine's own read path (`[tma] read_extra_cycles`; stores do not pay it).
pub fn tma_read_latency(c: &SmConfig) -> u64 {
    c.global.latency + c.tma.read_extra_cycles
}

/// 16-byte beats the TMA engine spends on a transfer given as pieces (source address, None for
/// out-of-bounds fill; bytes) in box order: pieces whose sources are contiguous form one row; a
/// row takes one beat per 16 bytes, plus one when its source does not start 16-byte aligned
/// (the RTL's realigner, hdl/src/tma/ba_y.rs). Fill pieces join the row they extend.
pub fn tma_beats(pieces: impl Iterator<Item = (Option<u64>, u64)>) -> u64 {
    let mut beats = 0;
    let mut row: Option<(Option<u64>, u64, u64)> = None; // (start, next source address, bytes)
    let close = |r: (Option<u64>, u64, u64)| r.2.div_ceil(16) + u64::from(r.0.is_some_and(|a| a % 16 != 0));
    for (src, len) in pieces {
        match (&mut row, src) {
            (Some(r), Some(a)) if r.1 == a => {
                r.1 += len;
                r.2 += len;
            }
            (Some(r), None) if r.0.is_none() => r.2 += len,
            _ => {
                if let Some(r) = row.take() {
                    beats += close(r);
                }
                row = Some((src, src.map(|a| a + len).unwrap_or(0), len));
            }
        }
    }
    beats + row.map(close).unwrap_or(0)
}

/// The static facts of every instruction of the kernel, by pc.
pub fn analyze(module: &Module, c: &SmConfig) -> Vec<InstrInfo> {
    let mut info = analyze_each(module, c);
    for pc in 1..info.len() {
        if divides_as_previous(&module.kernel.body[pc - 1], &module.kernel.body[pc]) {
            // the quotient's sequence gives the remainder too (or the other way round)
            info[pc].latency = c.latency.alu;
            info[pc].sequence = false;
            info[pc].divisor = None;
        }
    }
    // (one taint pass serves the if-conversion, the divergent branches and the YIELDs)
    let lane = per_lane_registers(module, &info);
    for (pc, f) in if_converted_branches(module, &info, c, &lane).into_iter().enumerate() {
        info[pc].if_converted = f;
    }
    for (pc, d) in divergent_branches(module, &info, &lane).into_iter().enumerate() {
        info[pc].divergent = d;
    }
    for (i, f) in module.kernel.body.iter().zip(info.iter_mut()) {
        f.uniform_address = match f.addr.and_then(|k| i.operands.get(k)) {
            Some(Operand::Addr { base: AddrBase::Reg(r), .. }) => !lane[r.0 as usize],
            Some(Operand::Addr { .. }) => true,
            _ => false,
        };
    }
    for (pc, u) in unrolled_loops(module, &info, c).into_iter().enumerate() {
        info[pc].unroll = u;
    }
    let guards = branch_guards(module, &info, c);
    for (pc, g) in guards.into_iter().enumerate() {
        info[pc].branch_guard = g;
    }
    for (pc, w) in window_bases(module, &info).into_iter().enumerate() {
        info[pc].window_base = match w {
            Some(WindowRead::Base) => c.latency.window_base,
            Some(WindowRead::Lea) => c.latency.window_lea,
            Some(WindowRead::SwinHi) => c.latency.window_swinhi,
            None => 0,
        };
    }
    for (pc, first) in cp_async_run_starts(module).into_iter().enumerate() {
        if first {
            info[pc].setup_cycles = info[pc].setup_cycles.max(c.issue.cp_async_filler_cycles);
        }
    }
    for (pc, y) in yield_loops(module, &info).into_iter().enumerate() {
        match y {
            // the YIELD is an instruction of its own: nothing after it issues first
            Some(YieldSite::Top) if c.issue.yield_cycles > 0 => {
                info[pc].yield_cycles = c.issue.yield_cycles;
                info[pc].lookahead = Lookahead::Drain;
            }
            Some(YieldSite::Retry) => info[pc].retry_yield_cycles = c.issue.yield_cycles,
            _ => {}
        }
    }
    info
}

/// The loops ptxas keeps in a kernel (a backward `bra` and its target; those it unrolls away
/// left out), with the innermost one around each pc: one sweep over the sorted spans, linear in
/// the kernel besides the sort (loops nest in the code the front ends emit; an overlapping one is
/// taken as nested).
struct Loops {
    /// [header, back edge] of each loop, by header, the longer first (outermost first).
    spans: Vec<(usize, usize)>,
    /// The innermost loop around each pc (an index into `spans`).
    innermost: Vec<Option<usize>>,
}

impl Loops {
    fn of(module: &Module, info: &[InstrInfo]) -> Self {
        let body = &module.kernel.body;
        let mut spans: Vec<(usize, usize)> =
            body.iter().enumerate().filter_map(|(pc, i)| branch_target(module, i).filter(|&t| t <= pc).map(|t| (t, pc))).filter(|&(_, j)| info[j].unroll != Unroll::Gone).collect();
        spans.sort_by_key(|&(h, j)| (h, std::cmp::Reverse(j)));
        let mut innermost = vec![None; body.len()];
        let (mut stack, mut next): (Vec<usize>, usize) = (Vec::new(), 0);
        for (pc, slot) in innermost.iter_mut().enumerate() {
            while stack.last().is_some_and(|&l| spans[l].1 < pc) {
                stack.pop();
            }
            while next < spans.len() && spans[next].0 == pc {
                stack.push(next);
                next += 1;
            }
            *slot = stack.last().copied();
        }
        Loops { spans, innermost }
    }

    /// Whether loop `l` holds another loop (the next span in order starts inside it).
    fn holds_a_loop(&self, l: usize) -> bool {
        self.spans.get(l + 1).is_some_and(|&(h2, _)| h2 <= self.spans[l].1)
    }
}

/// Per instruction: what it waits for when ptxas reads the shared window base again right
/// before it ([`InstrInfo::window_base`]; `None`: nothing). With a `.loc` per PTX line, 365 of the 478 SR_CgaCtaId reads in
/// the SASS of the calibration programs sit at an instruction naming a shared variable; where
/// they go follows the loops: out of an innermost loop ptxas hoists the read to the preheader
/// (mbar_ops.ptx's timed loops, a loop whose inner loop it unrolls fully), and at the top level
/// one read serves the straight-line code; in a loop that keeps an inner loop (a round with a
/// spin or try_wait loop in it: mbar_wake.ptx, bar_release.ptx, val_mbar_pipeline.ptx) it reads
/// the base again right before the first use after a join (a forward branch's target), and what
/// it read serves the uses after it up to the next join (mbar_wake.ptx's waiter loads the stamp
/// after its try_wait loop with the base read for the try_wait).
///
/// A register that holds a shared variable's address (`mov.u32 %r, buf` before the loop, and
/// what is computed from it: [`window_registers`]) gets the same treatment, cheaper: ptxas
/// recomputes the address from the base it kept (LEA, or ULEA + a move from the uniform
/// register) before the first load or store through it after a join, rather than keeping the
/// register across the loop (calibration/mbar_handoff.ptx's waiter: `LEA; LDS; IADD3` after its
/// try_wait loop, its arriver `LEA; STS; ...; SYNCS.ARRIVE`; mbar_wake_regaddr.ptx's arriver and
/// waiter: `ULEA; IMAD.U32; STS` and `...; LDS`). An mbarrier instruction through such a register
/// uses it as it is (mbar_handoff.ptx's arrive with no store before it: no LEA).
///
/// An access of another CTA's shared memory by the generic path (`st.shared::cluster [%r]`) is
/// placed the same way with the shared window's high half (S2R SR_SWINHI before the first such
/// access after a join: calibration/mem_queues.ptx's rounds, `MOV; S2R; ST.E.128` in each timed
/// window).
pub fn window_bases(module: &Module, info: &[InstrInfo]) -> Vec<Option<WindowRead>> {
    let k = &module.kernel;
    let n = k.body.len();
    let window = window_registers(module);
    let through_window = |o: &Operand| matches!(o, Operand::Addr { base: AddrBase::Reg(r), .. } if window[r.0 as usize]);
    let target_of = |i: &Instr| branch_target(module, i);
    let loops = Loops::of(module, info);
    // joins: the targets of forward branches (a loop's exit and its header keep what was read)
    let mut joins = vec![false; n + 1];
    for (pc, i) in k.body.iter().enumerate() {
        if let Some(t) = target_of(i).filter(|&t| t > pc && !info[pc].if_converted) {
            joins[t.min(n)] = true;
        }
    }
    let mut out = vec![None; n];
    // what ptxas read since the last join: the window base (serves Base and Lea), SR_SWINHI
    let (mut read, mut swin_read) = (false, false);
    for (pc, i) in k.body.iter().enumerate() {
        read &= !joins[pc];
        swin_read &= !joins[pc];
        let generic_remote = matches!(i.op, Opcode::Ld | Opcode::St | Opcode::Atom | Opcode::Red)
            && i.has(Mod::SharedCluster)
            && i.operands.iter().any(|o| matches!(o, Operand::Addr { base: AddrBase::Reg(_), .. }));
        let (what, seen) = if i.operands.iter().any(|o| names_shared_variable(module, o)) {
            (WindowRead::Base, &mut read)
        } else if generic_remote {
            (WindowRead::SwinHi, &mut swin_read)
        } else if matches!(i.op, Opcode::Ld | Opcode::St) && i.operands.iter().any(through_window) {
            (WindowRead::Lea, &mut read)
        } else {
            continue;
        };
        // the innermost loop around it, if that loop keeps another loop inside
        if loops.innermost[pc].is_some_and(|l| loops.holds_a_loop(l)) && !*seen {
            out[pc] = Some(what);
        }
        *seen = true;
    }
    out
}

/// Per instruction: whether it is the first `cp.async` (LDGSTS) of a run, before which ptxas 13.5
/// puts three never-executed `@!PT LDS RZ, [RZ]` (`issue.cp_async_filler_cycles`). A run ends at
/// a label (a branch target), a branch, or another memory or synchronizing instruction; register
/// arithmetic between two cp.async (their addresses) does not end it (the SASS of cp_async.ptx,
/// val_cp_async.ptx, cp_async_mbarrier.ptx and mem_queues.ptx: a filler triple before each run's
/// first LDGSTS, none inside a run).
pub fn cp_async_run_starts(module: &Module) -> Vec<bool> {
    let body = &module.kernel.body;
    let mut target = vec![false; body.len() + 1];
    for i in body {
        if let Some(t) = branch_target(module, i) {
            target[t.min(body.len())] = true;
        }
    }
    let mut out = vec![false; body.len()];
    let mut in_run = false;
    for (pc, i) in body.iter().enumerate() {
        in_run &= !target[pc];
        if i.op == Opcode::CpAsync {
            out[pc] = !in_run;
            in_run = true;
        } else if class_of(i.op) != Class::Compute {
            in_run = false;
        }
    }
    out
}

/// How ptxas rematerializes a shared address before an instruction ([`window_bases`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowRead {
    /// The instruction names a `.shared` variable: the window base is read again (S2UR
    /// SR_CgaCtaId, ULEA; `latency.window_base`).
    Base,
    /// It accesses memory through a register holding a shared variable's address: the address is
    /// recomputed from the base kept in a register (`latency.window_lea`).
    Lea,
    /// It accesses another CTA's shared memory by the generic path (`ld`/`st`/`atom`/`red
    /// .shared::cluster` through a 32-bit register: LD.E / ST.E / ATOM.E): ptxas makes the 64-bit
    /// address with the shared window's high half, read again (S2R SR_SWINHI,
    /// `latency.window_swinhi`).
    SwinHi,
}

/// Per register: whether it holds a `.shared` variable's address, or an address computed from
/// one (`mov.u32 %r, buf`, then `add` / `mad` / `shl` / `cvt` / ... of it). Flow-insensitive.
fn window_registers(module: &Module) -> Vec<bool> {
    let body = &module.kernel.body;
    let mut window = vec![false; module.kernel.regs.len()];
    let arithmetic = |op: Opcode| matches!(op, Opcode::Mov | Opcode::Add | Opcode::Sub | Opcode::Mad | Opcode::Shl | Opcode::Or | Opcode::Cvt | Opcode::Cvta);
    loop {
        let mut changed = false;
        for i in body.iter().filter(|i| arithmetic(i.op) && first_is_dest(i)) {
            let Some(Operand::Reg(d)) = i.operands.first() else { continue };
            if window[d.0 as usize] {
                continue;
            }
            let from_window = i.operands[1..].iter().any(|o| names_shared_variable(module, o) || matches!(o, Operand::Reg(r) if window[r.0 as usize]));
            if from_window {
                window[d.0 as usize] = true;
                changed = true;
            }
        }
        if !changed {
            return window;
        }
    }
}

/// Per pc (and one past the last): whether a label points at it, i.e. a basic block may start
/// there.
fn labelled_pcs(module: &Module) -> Vec<bool> {
    let k = &module.kernel;
    let mut labelled = vec![false; k.body.len() + 1];
    for &p in &k.label_pc {
        if let Some(t) = labelled.get_mut(p as usize) {
            *t = true;
        }
    }
    labelled
}

/// The pc a `bra` to a label jumps to (`None` for any other instruction).
fn branch_target(module: &Module, i: &Instr) -> Option<usize> {
    match (i.op, i.operands.first()) {
        (Opcode::Bra, Some(Operand::Label(l))) => module.kernel.label_pc.get(l.0 as usize).map(|&p| p as usize),
        _ => None,
    }
}

/// Whether operand `o` is a `.shared` variable's address (`[bar]`, `[buf+16]`, `buf`):
/// [`InstrInfo::window_base`].
fn names_shared_variable(module: &Module, o: &Operand) -> bool {
    let sym = match o {
        Operand::Sym(s) | Operand::Addr { base: AddrBase::Sym(s), .. } => *s,
        Operand::Vector(v) => return v.iter().any(|o| names_shared_variable(module, o)),
        _ => return false,
    };
    module.symbols.get(sym.0 as usize).is_some_and(|s| s.space == Space::Shared)
}

/// Per register: whether ptxas cannot prove its value the same in every lane of the warp. A
/// flow-insensitive taint: `%tid`, `%laneid` and the lane masks, atomics' results, `elect`,
/// `match`, `ldmatrix` and the shuffles that move values between lanes are per lane, and so is
/// anything computed from one (a load or an mbarrier wait at a per-lane address, a value written
/// under a per-lane guard). Not per lane: a load or an mbarrier wait at a warp-uniform address
/// (all lanes read the same word in one instruction), `shfl.sync.idx` from a uniform lane over
/// the whole warp, and what `vote`, `redux.sync` and `activemask` give every lane. ptxas 13.5
/// agrees on each of these (a spin loop under a branch on the value gets no YIELD: [`yield_loops`];
/// the loop under a branch on `%tid / 32` or `elect.sync` does).
pub fn per_lane_registers(module: &Module, info: &[InstrInfo]) -> Vec<bool> {
    let body = &module.kernel.body;
    let mut lane = vec![false; module.kernel.regs.len()];
    let per_lane_sreg = |o: &Operand| {
        matches!(o, Operand::Special(Sreg::Tid(_) | Sreg::Laneid | Sreg::LanemaskEq | Sreg::LanemaskLe | Sreg::LanemaskLt | Sreg::LanemaskGe | Sreg::LanemaskGt))
    };
    // the registers whose taint reaches an instruction's destinations, and whether they are per
    // lane whatever those are
    let whole_warp_shuffle = |i: &Instr| i.has(Mod::Idx) && matches!(i.operands.get(3), Some(Operand::Imm(c)) if (c >> 8) & 0x1f == 0);
    let feeds = |i: &Instr, f: &InstrInfo| -> (Vec<u32>, bool) {
        let guard: Vec<u32> = i.guard.map(|g| g.reg.0).into_iter().collect();
        match i.op {
            Opcode::Atom | Opcode::Elect | Opcode::Match | Opcode::Ldmatrix => (guard, true),
            Opcode::ShflSync if whole_warp_shuffle(i) => {
                let mut r = guard;
                regs_of(&i.operands[2], &mut r);
                (r, false)
            }
            Opcode::ShflSync => (guard, true),
            Opcode::Vote | Opcode::Redux | Opcode::Activemask => (guard, false),
            _ => (f.srcs.clone(), i.operands.iter().any(per_lane_sreg)),
        }
    };
    // a worklist over the registers (linear in the operands): who each register feeds
    let mut readers: Vec<Vec<u32>> = vec![Vec::new(); lane.len()];
    let mut work: Vec<u32> = Vec::new();
    for (pc, (i, f)) in body.iter().zip(info).enumerate() {
        let (from, seed) = feeds(i, f);
        for r in from {
            readers[r as usize].push(pc as u32);
        }
        if seed {
            work.extend(&f.dsts);
        }
    }
    while let Some(r) = work.pop() {
        if std::mem::replace(&mut lane[r as usize], true) {
            continue;
        }
        for &pc in &readers[r as usize] {
            work.extend(info[pc as usize].dsts.iter().filter(|&&d| !lane[d as usize]));
        }
    }
    lane
}

/// Per instruction index: a guarded `bra` (not `.uni`) whose predicate ptxas cannot prove the
/// same in every lane ([`per_lane_registers`]), so that it compiles the branch with a convergence
/// barrier (BSSY / BSYNC) rather than as a uniform one. Such a branch waits for an aligned
/// `bar.sync` before it, which the warp otherwise runs ahead of (`BAR.SYNC.DEFER_BLOCKING`):
/// silicon (H100, 2026-11-27, calibration/mbar_wake_regaddr.ptx) takes a `%clock64` read behind
/// `bar.sync; @p bra` with `p` from `%tid` after the barrier completes (the arrive 0 cycles after
/// it wakes the waiter in 121 cycles, as 300 cycles after), while a counted loop's branch runs
/// ahead (bar_warps.ptx).
fn divergent_branches(module: &Module, info: &[InstrInfo], lane: &[bool]) -> Vec<bool> {
    let body = module.kernel.body.iter().zip(info);
    body.map(|(i, f)| i.op == Opcode::Bra && !f.if_converted && !i.has(Mod::Uni) && i.guard.is_some_and(|g| lane[g.reg.0 as usize])).collect()
}

/// Per instruction index: a forward `bra` that ptxas compiles to no branch
/// ([`InstrInfo::if_converted`]). A branch to the next instruction is deleted. A guarded branch
/// over a short straight run of predicable instructions (arithmetic, loads and stores: no
/// branch, label, barrier, fence, mbarrier, async or sleep instruction) becomes those
/// instructions under the guard: ptxas 13.5 -arch=sm_90 does so for a run of at most
/// `issue.if_convert_lane_instructions` instructions when the guard differs between lanes
/// ([`per_lane_registers`]; a branch would diverge) and at most
/// `issue.if_convert_uniform_instructions` when it is warp-uniform (measured on `@p bra L; N
/// instructions; L:` with N xor / mad, st.shared or ld.shared + add: with a per-lane guard a BRA
/// remains from 24 on, with a uniform one from 8 (ALU), 16 (st.shared) or 3 (ld.shared)).
fn if_converted_branches(module: &Module, info: &[InstrInfo], c: &SmConfig, lane: &[bool]) -> Vec<bool> {
    let k = &module.kernel;
    let labelled = labelled_pcs(module);
    let predicable = |pc: usize| {
        let f = &info[pc];
        matches!(f.class, Class::Compute | Class::Mem) && !f.atomic && f.ordering == Ordering::None && !labelled[pc]
    };
    (0..k.body.len())
        .map(|pc| {
            let i = &k.body[pc];
            let Some(t) = branch_target(module, i).filter(|&t| t > pc) else { return false };
            if t == pc + 1 {
                return true;
            }
            let Some(g) = i.guard else { return false };
            let limit = if lane[g.reg.0 as usize] { c.issue.if_convert_lane_instructions } else { c.issue.if_convert_uniform_instructions };
            t - pc - 1 <= limit as usize && (pc + 1..t).all(predicable)
        })
        .collect()
}

/// Where ptxas puts the YIELD of a spin loop ([`yield_loops`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YieldSite {
    /// At the loop's top: every time the warp comes to this instruction (the loop's first).
    Top,
    /// Before each retry: when this backward `bra` is taken. ptxas peels a loop that is a
    /// try_wait and its branch alone: the first TRYWAIT in line, the retries (YIELD, TRYWAIT,
    /// the branch) out of line (ptxas 13.5; mbar_wake_delay.ptx's SASS).
    Retry,
}

/// Per instruction index: where ptxas puts a YIELD in a spin loop ([`InstrInfo::yield_cycles`],
/// [`InstrInfo::retry_yield_cycles`]). ptxas 13.5 puts one in a loop that leaves on what it polls
/// (an exit or the back edge on a value computed in the loop from an mbarrier test_wait or
/// try_wait, a volatile, relaxed or acquire load, or an atomic), with no `nanosleep` or hinted
/// try_wait in it (those sleep instead), innermost, when it cannot prove the warp converged there:
/// the loop leaves on a per-lane value (an exit or back edge is divergent:
/// [`divergent_branches`]), or it lies inside a divergent branch's region (from the branch to its
/// join: the target, or past the `else` when the code before the target jumps over one) whose
/// lanes meet again (a join at a `ret` or `exit` is none: those lanes leave). Not in a counted
/// loop (atomics in it or not), a `%clock` spin, a loop of plain loads (hoisted), nor after an
/// early `@p ret` (ptxas 13.5 on each shape; calibration/poll_rate.ptx's SASS).
pub fn yield_loops(module: &Module, info: &[InstrInfo]) -> Vec<Option<YieldSite>> {
    let k = &module.kernel;
    let n = k.body.len();
    let mut out = vec![None; n];
    let target_of = |i: &Instr| branch_target(module, i);
    let loops = Loops::of(module, info);
    if loops.spans.is_empty() {
        return out;
    }
    let polls = |i: &Instr| match i.op {
        Opcode::MbarrierTestWait | Opcode::MbarrierTryWait | Opcode::Atom => true,
        Opcode::Ld => i.has(Mod::Volatile) || i.has(Mod::Relaxed) || i.has(Mod::Acquire),
        _ => false,
    };
    let sleeps = |i: &Instr| i.op == Opcode::Nanosleep || (i.op == Opcode::MbarrierTryWait && i.operands.len() > 3);
    // the divergent regions (a depth per pc), from the forward divergent branches
    let mut depth = vec![0i64; n + 1];
    for (b, i) in k.body.iter().enumerate() {
        let Some(t) = target_of(i).filter(|&t| t > b && info[b].divergent) else { continue };
        let join = match k.body.get(t - 1).filter(|e| e.guard.is_none()).and_then(target_of) {
            Some(u) if u > t => u,
            _ => t,
        };
        let leaves = k.body.get(join).is_some_and(|e| e.guard.is_none() && matches!(e.op, Opcode::Ret | Opcode::Exit));
        if !leaves {
            depth[b + 1] += 1;
            depth[join.min(n)] -= 1;
        }
    }
    for pc in 1..=n {
        depth[pc] += depth[pc - 1];
    }
    // innermost loops only (a loop holding another is no spin loop), each scanned once: linear
    let mut tainted: std::collections::HashSet<u32> = std::collections::HashSet::new();
    for (li, &(h, j)) in loops.spans.iter().enumerate() {
        if loops.holds_a_loop(li) || out[h].is_some() {
            continue;
        }
        let body = &k.body[h..=j];
        if body.iter().any(sleeps) {
            continue;
        }
        // what the loop computes from what it polls, and whether it leaves on that
        tainted.clear();
        let (mut spins, mut leaves_divergent) = (false, false);
        for (pc, i) in (h..=j).zip(body) {
            if polls(i) || info[pc].reads().any(|r| tainted.contains(&r)) {
                tainted.extend(&info[pc].dsts);
            }
            let exits = target_of(i).is_some_and(|t| pc == j || t < h || t > j);
            if exits && i.guard.is_some_and(|g| tainted.contains(&g.reg.0)) {
                spins = true;
            }
            leaves_divergent |= exits && info[pc].divergent;
        }
        let under = depth[h] > 0 && depth[j] > 0;
        if spins && (leaves_divergent || under) {
            let peeled = j == h + 1 && k.body[h].op == Opcode::MbarrierTryWait;
            if peeled {
                out[j] = Some(YieldSite::Retry);
            } else {
                out[h] = Some(YieldSite::Top);
            }
        }
    }
    out
}

/// [`InstrInfo::branch_guard`] of every instruction: for a guarded `bra`, the nearest earlier
/// writer of its guard in its basic block (no label or control transfer between), when that is
/// a fixed-latency instruction.
fn branch_guards(module: &Module, info: &[InstrInfo], c: &SmConfig) -> Vec<Option<(u32, u64)>> {
    let k = &module.kernel;
    let target = labelled_pcs(module);
    let total = c.latency.alu + c.latency.predicate_branch;
    (0..k.body.len())
        .map(|pc| {
            let i = &k.body[pc];
            let g = i.guard.filter(|_| i.op == Opcode::Bra && !info[pc].if_converted)?.reg.0;
            let mut p = pc;
            while p > 0 && !target[p] {
                p -= 1;
                let w = &k.body[p];
                if matches!(w.op, Opcode::Bra | Opcode::Ret | Opcode::Exit | Opcode::Call) {
                    return None;
                }
                if info[p].dsts.contains(&g) {
                    return (info[p].class == Class::Compute).then_some((g, total));
                }
            }
            None
        })
        .collect()
}

fn analyze_each(module: &Module, c: &SmConfig) -> Vec<InstrInfo> {
    let mut adds = 0;
    module
        .kernel
        .body
        .iter()
        .map(|i| {
            let mut srcs = Vec::new();
            let mut dsts = Vec::new();
            if let Some(g) = i.guard {
                srcs.push(g.reg.0);
            }
            // wgmma.mma_async reads its accumulators at issue but writes them asynchronously:
            // wgmma.wait_group orders the writes (wgmma.rs), so they are sources only and chained
            // wgmmas into one accumulator do not wait for each other on the scoreboard.
            let dest0 = first_is_dest(i) && i.op != Opcode::WgmmaMmaAsync;
            for (k, o) in i.operands.iter().enumerate() {
                if k == 0 && dest0 {
                    regs_of(o, &mut dsts);
                } else {
                    regs_of(o, &mut srcs);
                }
            }
            srcs.sort_unstable();
            srcs.dedup();
            dsts.sort_unstable();
            dsts.dedup();
            let class = class_of(i.op);
            let ordering = ordering_of(i);
            InstrInfo {
                class,
                srcs,
                dsts,
                latency: compute_latency(i, c),
                addr: i.operands.iter().position(|o| matches!(o, Operand::Addr { .. })),
                atomic: matches!(i.op, Opcode::Atom | Opcode::Red),
                load: matches!(i.op, Opcode::Ld | Opcode::Ldmatrix),
                ordering,
                lookahead: lookahead_of(i, class, ordering),
                merges: i.guard.is_some(),
                divisor: division_of(i),
                sequence: sequence_of(i),
                pipe: issue_pipe(i, &mut adds),
                rename: i.op == Opcode::Mov && i.guard.is_none() && i.operands.len() == 2 && i.operands.iter().all(reg_only),
                unroll: Unroll::Kept,
                branch_guard: None,
                window_base: 0,
                setup_cycles: if i.op == Opcode::MbarrierInit { c.sync.mbarrier_init_setup_cycles } else { 0 },
                if_converted: false,
                divergent: false,
                uniform_address: false,
                yield_cycles: 0,
                retry_yield_cycles: 0,
            }
        })
        .collect()
}

/// The longest trip count [`unrolled_loops`] follows; longer loops count as of unknown length.
pub const MAX_TRIP: u64 = 1 << 16;

/// What ptxas's loop unrolling makes of an instruction that controls a counted loop (its
/// induction step, its compare, its backward branch, an address step it folds into immediate
/// offsets): in the SASS it is gone from every unrolled copy of the body but the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unroll {
    /// Not loop control of an unrolled loop: issued as written.
    Kept,
    /// The loop is unrolled fully: the instruction is gone from every iteration.
    Gone,
    /// The loop is unrolled `factor` times: the instruction is gone from each iteration but every
    /// `factor`-th of a run of the loop (counted per warp by the backward branch at `back_edge`).
    Every {
        /// The pc of the loop's backward branch.
        back_edge: u32,
        /// Body copies per loop iteration in the SASS.
        factor: u32,
    },
}

/// What ptxas's unrolling of counted loops does to each instruction, by pc ([`Unroll`]).
///
/// A loop qualifies when one guarded backward `bra` closes a straight-line body (no other branch,
/// call, return or exit in it, and no branch from elsewhere into it), its guard is written in the
/// body only by `setp.cmp %p, %rX, b` with `b` an immediate or a register the body does not write,
/// and `%rX` is written in the body only by `add`/`sub %rX, %rX, imm`; and when no
/// `.pragma "nounroll"` (PTX ISA, Pragma Strings) applies to it: at module scope, among its
/// function's directives, or inside the loop's header block. Its trip count is known when `b` is
/// an immediate and `%rX` is set before the loop (in the same straight-line block) by `mov %rX,
/// imm`: running that induction with the golden model's own compare ([`exec::compare`]) counts it.
/// With W the body's weight (`issue.unroll_alu_weight` per ALU instruction, 1 per other, the loop
/// control left out), ptxas 13.5 (sim/configs/sm90.toml) unrolls a loop
/// - fully when its trip count is known and `trips x W x (W + issue.unroll_weight_offset) <=
///   issue.unroll_budget` (an empty loop is deleted);
/// - else, with a known trip count, `issue.unroll_partial_budget / W` times when that is at least
///   `issue.unroll_min_factor`;
/// - else, with an unknown trip count, `issue.unroll_min_factor` times when W is at most
///   `issue.unroll_unknown_max_weight`.
///
/// The loop control of such a loop is the branch, the compare, the induction step, and the
/// arithmetic affine in the iteration that no copy needs as a value ([`affine_in_iteration`]:
/// address steps, an index and the address made from it): in the unrolled copies their values
/// are constants or immediate offsets.
pub fn unrolled_loops(module: &Module, info: &[InstrInfo], c: &SmConfig) -> Vec<Unroll> {
    let k = &module.kernel;
    let n = k.body.len();
    let mut out = vec![Unroll::Kept; n];
    if k.module_pragmas.iter().any(|p| p == "nounroll") {
        return out;
    }
    let target = |i: &Instr| branch_target(module, i);
    // pcs some branch jumps to, and by how many branches
    let mut joins = vec![0u32; n + 1];
    for (i, f) in k.body.iter().zip(info) {
        if let Some(t) = target(i).filter(|_| !f.if_converted) {
            if t <= n {
                joins[t] += 1;
            }
        }
    }
    let nounroll_fn: Vec<(usize, usize)> = module
        .funcs
        .iter()
        .filter(|f| f.directives.iter().any(|d| d == ".pragma \"nounroll\";"))
        .filter_map(|f| f.body.map(|(a, b)| (a as usize, b as usize)))
        .collect();
    let writes = |pc: usize, r: u32| info[pc].dsts.contains(&r);
    let is = &c.issue;
    for b in 0..n {
        let br = &k.body[b];
        let (Some(h), Some(g)) = (target(br), br.guard) else { continue };
        if h > b || joins[h] != 1 {
            continue;
        }
        let body = h..b;
        let straight = body.clone().all(|pc| (info[pc].if_converted || !matches!(class_of(k.body[pc].op), Class::Branch)) && !matches!(k.body[pc].op, Opcode::Exit | Opcode::Trap | Opcode::Brkpt));
        let entered_only_at_head = (h + 1..=b).all(|pc| joins[pc] == 0);
        let kept = k.pragmas.iter().any(|(pc, t)| t == "nounroll" && (h..=b).contains(&(*pc as usize)))
            || nounroll_fn.iter().any(|&(a, e)| (a..e).contains(&h));
        if !straight || !entered_only_at_head || kept {
            continue;
        }
        // the compare that sets the guard
        let p = g.reg.0;
        let setps: Vec<usize> = body.clone().filter(|&pc| writes(pc, p)).collect();
        let [ps] = setps[..] else { continue };
        let setp = &k.body[ps];
        let (Opcode::Setp, None) = (setp.op, setp.guard) else { continue };
        let Some(Operand::Reg(x)) = setp.operands.get(1) else { continue };
        let limit = match setp.operands.get(2) {
            Some(Operand::Imm(v)) => Some(*v as u64),
            Some(Operand::Reg(r)) if !body.clone().any(|pc| writes(pc, r.0)) => None,
            _ => continue,
        };
        let first_is_p = match setp.operands.first() {
            Some(Operand::Reg(d)) => d.0 == p,
            Some(Operand::Pair(d, _)) => d.0 == p,
            _ => false,
        };
        let Some(ty) = setp.ty().filter(|t| !t.is_float()) else { continue };
        if !first_is_p || setp.mods.iter().any(|m| matches!(m, Mod::And | Mod::Or | Mod::Xor)) {
            continue;
        }
        // the induction step
        let steps: Vec<usize> = body.clone().filter(|&pc| writes(pc, x.0)).collect();
        let [pa] = steps[..] else { continue };
        let Some(step) = const_step(&k.body[pa], x.0) else { continue };
        // its start: the last write before the loop, in the same straight-line block
        let mut start = None;
        for pc in (0..h).rev() {
            let i = &k.body[pc];
            if matches!(class_of(i.op), Class::Branch) || joins[pc + 1] > 0 && pc + 1 != h {
                break;
            }
            if writes(pc, x.0) {
                if let (Opcode::Mov, None, Some(Operand::Imm(v))) = (i.op, i.guard, i.operands.get(1)) {
                    start = Some(*v as u64);
                }
                break;
            }
        }
        // the trip count, by running the induction
        let trips = match (start, limit) {
            (Some(mut v), Some(limit)) => {
                let w = exec::bits(ty);
                let cmp = exec::compare_op(setp);
                let mut trips = 0u64;
                loop {
                    trips += 1;
                    // the compare sees the step when the step comes first in the body
                    let stepped = exec::trunc(v.wrapping_add(step), w);
                    let pred = exec::compare(cmp, ty, if pa < ps { stepped } else { v }, limit, 0);
                    v = stepped;
                    if pred == g.negated || trips > MAX_TRIP {
                        break;
                    }
                }
                (trips <= MAX_TRIP).then_some(trips)
            }
            _ => None,
        };
        // address steps and other arithmetic affine in the iteration (ptxas folds them into
        // constants and immediate offsets of the unrolled copies)
        let affine = affine_in_iteration(k, info, body.clone());
        let control = |pc: usize| pc == pa || pc == ps || affine.contains(&pc);
        let weight: f64 = body
            .clone()
            .filter(|&pc| !control(pc) && !info[pc].rename)
            .map(|pc| if info[pc].class == Class::Compute { is.unroll_alu_weight } else { 1.0 })
            .sum();
        let unroll = match trips {
            Some(t) if t as f64 * weight * (weight + is.unroll_weight_offset) <= is.unroll_budget => Unroll::Gone,
            Some(_) => match (is.unroll_partial_budget / weight.max(1.0)).floor() as u32 {
                f if f >= is.unroll_min_factor => Unroll::Every { back_edge: b as u32, factor: f },
                _ => continue,
            },
            None if weight <= is.unroll_unknown_max_weight => Unroll::Every { back_edge: b as u32, factor: is.unroll_min_factor },
            None => continue,
        };
        for pc in [b, ps, pa].into_iter().chain(affine) {
            out[pc] = unroll;
        }
    }
    out
}

/// The pcs of `body` that compute registers affine in the loop's iteration, which ptxas folds into
/// constants and immediate offsets of the unrolled copies (`hopsync gpu pack`'s trace-slot counter
/// and trace addresses, an index and the address made from it): a register stepped only by
/// constants (`add`/`sub r, r, imm`), and one written only by `add`, `sub`, `mul`, `mad`, `shl`,
/// `mov` or `cvt` (unguarded, integer) from such registers, immediates and registers the body does
/// not write, at least one of its sources affine. A sum of a loop-invariant register
/// (`add r, r, s`) stays: ptxas keeps those adds (calibration/val_unroll_loops.ptx's SASS).
fn affine_in_iteration(k: &hopsync_firmware::ir::Kernel, info: &[InstrInfo], body: std::ops::Range<usize>) -> Vec<usize> {
    use std::collections::{HashMap, HashSet};
    let derived_shape = |pc: usize| {
        let i = &k.body[pc];
        i.guard.is_none()
            && matches!(i.op, Opcode::Add | Opcode::Sub | Opcode::Mul | Opcode::Mad | Opcode::Shl | Opcode::Mov | Opcode::Cvt)
            && !i.ty().is_some_and(|t| t.is_float())
            && !i.mods.iter().any(|m| matches!(m, Mod::Sat | Mod::Cc | Mod::Hi))
            && info[pc].dsts.len() == 1
            && !i.operands.iter().any(|o| matches!(o, Operand::Special(_) | Operand::Vector(_) | Operand::Sym(_)))
    };
    // who writes and who reads each register in the body, gathered once (the fixed points below
    // then cost the body's size per round, not its size per register)
    let mut writes_of: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut reads_of: HashMap<u32, Vec<usize>> = HashMap::new();
    for pc in body.clone() {
        info[pc].dsts.iter().for_each(|&r| writes_of.entry(r).or_default().push(pc));
        info[pc].srcs.iter().for_each(|&r| reads_of.entry(r).or_default().push(pc));
    }
    let written: HashSet<u32> = writes_of.keys().copied().collect();
    let writers = |r: u32| writes_of[&r].iter().copied();
    let mut affine: HashSet<u32> = written.iter().copied().filter(|&r| writers(r).all(|pc| const_step(&k.body[pc], r).is_some())).collect();
    loop {
        let grown: Vec<u32> = written
            .iter()
            .copied()
            .filter(|r| !affine.contains(r))
            .filter(|&r| {
                writers(r).all(|pc| {
                    let srcs = &info[pc].srcs;
                    derived_shape(pc) && srcs.iter().all(|s| !written.contains(s) || affine.contains(s)) && srcs.iter().any(|s| affine.contains(s))
                })
            })
            .collect();
        if grown.is_empty() {
            break;
        }
        affine.extend(grown);
    }
    // Only what no copy needs as a value folds away: a register read as data (a store's value,
    // other arithmetic) is materialized in every copy (ptxas 13.5: `st.global.u64 [%rd0], %rd0`
    // with a stepped %rd0 gets an add per copy); reads as an address base, as a compare against an
    // immediate (the offset goes into the immediate) or by arithmetic that folds too are free.
    let readers = |r: u32| reads_of.get(&r).into_iter().flatten().copied();
    loop {
        let kept: Vec<u32> = affine
            .iter()
            .copied()
            .filter(|&r| {
                readers(r).all(|pc| {
                    let i = &k.body[pc];
                    let folds = info[pc].dsts.first().is_some_and(|d| affine.contains(d));
                    let compare = i.op == Opcode::Setp && i.guard.is_none() && matches!(i.operands.get(2), Some(Operand::Imm(_)));
                    folds || compare || only_address_base(i, r)
                })
            })
            .collect();
        if kept.len() == affine.len() {
            break;
        }
        affine = kept.into_iter().collect();
    }
    body.filter(|&pc| info[pc].dsts.first().is_some_and(|d| affine.contains(d))).collect()
}

/// The constant `i` adds to register `r` (`add`/`sub r, r, imm`, unguarded, integer).
fn const_step(i: &Instr, r: u32) -> Option<u64> {
    if i.guard.is_some() || i.ty().is_some_and(|t| t.is_float()) || i.mods.iter().any(|m| matches!(m, Mod::Sat | Mod::Cc)) {
        return None;
    }
    match (i.op, &i.operands[..]) {
        (Opcode::Add, [Operand::Reg(d), Operand::Reg(a), Operand::Imm(v)]) | (Opcode::Add, [Operand::Reg(d), Operand::Imm(v), Operand::Reg(a)]) if d.0 == r && a.0 == r => Some(*v as u64),
        (Opcode::Sub, [Operand::Reg(d), Operand::Reg(a), Operand::Imm(v)]) if d.0 == r && a.0 == r => Some(v.wrapping_neg() as u64),
        _ => None,
    }
}

/// Whether `i` reads register `r` only as the base of its memory operands.
fn only_address_base(i: &Instr, r: u32) -> bool {
    if i.guard.is_some_and(|g| g.reg.0 == r) {
        return false;
    }
    let dest0 = first_is_dest(i);
    i.operands.iter().enumerate().all(|(k, o)| match o {
        Operand::Addr { .. } => true,
        _ if k == 0 && dest0 => true,
        o => {
            let mut v = Vec::new();
            regs_of(o, &mut v);
            !v.contains(&r)
        }
    })
}

/// The distinct bank words (numbers, of `bank_bytes`) one warp access to shared memory touches,
/// ascending (on the stack for up to 16 aligned bytes a lane: this runs for every shared access).
fn bank_words(bb: u64, accesses: &[(u64, usize)]) -> SmallVec<[u64; 128]> {
    let mut words = SmallVec::new();
    for &(off, size) in accesses {
        words.extend(off / bb..=(off + size.max(1) as u64 - 1) / bb);
    }
    words.sort_unstable();
    words.dedup();
    words
}

/// Bank wavefronts of distinct bank words `words`: per bank, the number of them it holds (a
/// broadcast of one word costs nothing extra), at least one.
fn wavefronts_of(banks: u64, words: &[u64]) -> u64 {
    let mut per_bank: SmallVec<[u64; 32]> = smallvec::smallvec![0; banks as usize];
    for &w in words {
        per_bank[(w % banks) as usize] += 1;
    }
    per_bank.into_iter().max().unwrap_or(0).max(1)
}

/// Bank wavefronts of one warp access to shared memory: per bank, the number of distinct
/// bank words the lanes touch (a broadcast of one word costs nothing extra), at least one.
pub fn bank_wavefronts(c: &SmConfig, accesses: &[(u64, usize)]) -> u64 {
    wavefronts_of(c.smem.banks as u64, &bank_words(c.smem.bank_bytes as u64, accesses))
}

/// Cycles one warp access occupies the shared-memory pipe: the pipe moves one wavefront of
/// `banks x bank_bytes` bytes per cycle, and each wavefront more than the bytes need (a bank
/// conflict's replay) costs `smem.conflict_replay_cycles`.
pub fn smem_pipe_cycles(c: &SmConfig, accesses: &[(u64, usize)]) -> u64 {
    let words = bank_words(c.smem.bank_bytes.max(1) as u64, accesses);
    let waves = wavefronts_of(c.smem.banks as u64, &words);
    let bandwidth = (words.len() as u64).div_ceil(c.smem.banks.max(1) as u64).max(1);
    bandwidth + waves.saturating_sub(bandwidth) * c.smem.conflict_replay_cycles
}

/// The distinct sectors (numbers, of `sector_bytes`) a warp access touches, ascending.
pub fn sector_list(c: &SmConfig, accesses: &[(u64, usize)]) -> Vec<u64> {
    let sb = c.global.sector_bytes.max(1);
    let mut s: Vec<u64> = Vec::with_capacity(accesses.len());
    for &(a, size) in accesses {
        for k in a / sb..=(a + size.max(1) as u64 - 1) / sb {
            s.push(k);
        }
    }
    s.sort_unstable();
    s.dedup();
    s
}

/// Distinct sectors (of `sector_bytes`) a warp access touches, at least one.
pub fn sectors(c: &SmConfig, accesses: &[(u64, usize)]) -> u64 {
    sector_list(c, accesses).len().max(1) as u64
}

#[cfg(test)]
mod tma_tests {
    use super::*;

    #[test]
    fn tma_beats_count_rows_and_misalignment() {
        // one 4 KiB row, aligned: 256 beats
        assert_eq!(tma_beats([(Some(0x1000), 4096)].into_iter()), 256);
        // 8 rows of 16 bytes, 4-byte pieces, rows 64 bytes apart: 8 beats
        let p: Vec<_> = (0..8u64).flat_map(|r| (0..4u64).map(move |k| (Some(0x1000 + r * 64 + k * 4), 4))).collect();
        assert_eq!(tma_beats(p.into_iter()), 8);
        // a row starting 8 bytes into a 16-byte chunk spends one more beat
        assert_eq!(tma_beats([(Some(0x1008), 32)].into_iter()), 3);
        // fill pieces: 32 bytes of fill are 2 beats
        assert_eq!(tma_beats([(None, 16), (None, 16)].into_iter()), 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bank_conflicts() {
        let c = SmConfig::sm90();
        // 32 lanes, consecutive words: conflict-free.
        let a: Vec<(u64, usize)> = (0..32).map(|l| (l * 4, 4)).collect();
        assert_eq!(bank_wavefronts(&c, &a), 1);
        // Stride of 32 words: every lane in bank 0.
        let a: Vec<(u64, usize)> = (0..32).map(|l| (l * 128, 4)).collect();
        assert_eq!(bank_wavefronts(&c, &a), 32);
        // Broadcast.
        let a: Vec<(u64, usize)> = (0..32).map(|_| (64, 4)).collect();
        assert_eq!(bank_wavefronts(&c, &a), 1);
        // 8-byte accesses, consecutive: two wavefronts.
        let a: Vec<(u64, usize)> = (0..32).map(|l| (l * 8, 8)).collect();
        assert_eq!(bank_wavefronts(&c, &a), 2);
        let a: Vec<(u64, usize)> = (0..32).map(|l| (0x1000 + l * 4, 4)).collect();
        assert_eq!(sectors(&c, &a), 4);
    }

    #[test]
    fn nanosleep_sleeps_the_power_of_two_below_its_argument() {
        let c = SmConfig::sm90();
        // flat between powers of two, doubling at each (calibration/nanosleep_steps.ptx)
        assert_eq!(nanosleep_cycles(&c, 64.0), nanosleep_cycles(&c, 100.0));
        assert_eq!(nanosleep_cycles(&c, 2048.0), nanosleep_cycles(&c, 2500.0));
        let (a, b) = (nanosleep_cycles(&c, 1024.0), nanosleep_cycles(&c, 2048.0));
        assert!(b > 2 * a - 60 && b < 2 * a + 60, "{a} {b}");
        // 0 ns sleeps the minimum; nothing beyond the PTX bound's order (2t) for t >= 64 ns
        assert_eq!(nanosleep_cycles(&c, 0.0), c.sync.nanosleep_min_cycles);
        for t in [64.0, 100.0, 300.0, 5000.0] {
            assert!(nanosleep_cycles(&c, t) <= c.ns_to_cycles(2.0 * t), "{t}");
        }
        assert_eq!(nanosleep_cycles(&c, 1e9), nanosleep_cycles(&c, c.sync.nanosleep_max_ns));
    }

    #[test]
    fn smem_pipe_cycles_charge_replays_beyond_bandwidth() {
        let c = SmConfig::sm90();
        let r = c.smem.conflict_replay_cycles;
        // 32 lanes, 4 bytes, consecutive: one wavefront, one cycle
        let a: Vec<(u64, usize)> = (0..32).map(|l| (l * 4, 4)).collect();
        assert_eq!(smem_pipe_cycles(&c, &a), 1);
        // a broadcast of one word: one cycle
        let a: Vec<(u64, usize)> = (0..32).map(|_| (64, 4)).collect();
        assert_eq!(smem_pipe_cycles(&c, &a), 1);
        // 16 bytes per lane, consecutive: 512 bytes are 4 wavefronts of bandwidth, no replay
        let a: Vec<(u64, usize)> = (0..32).map(|l| (l * 16, 16)).collect();
        assert_eq!(smem_pipe_cycles(&c, &a), 4);
        // stride 128 bytes: every lane on bank 0, a 32-way conflict: 1 + 31 replays
        let a: Vec<(u64, usize)> = (0..32).map(|l| (l * 128, 4)).collect();
        assert_eq!(smem_pipe_cycles(&c, &a), 1 + 31 * r);
        // stride 8 bytes: 2-way
        let a: Vec<(u64, usize)> = (0..32).map(|l| (l * 8, 4)).collect();
        assert_eq!(smem_pipe_cycles(&c, &a), 1 + r);
    }
}

#[cfg(test)]
mod unroll_tests {
    use super::*;

    /// The pcs whose loop `unrolled_loops` unrolls fully, in a kernel with this body (registers
    /// %r0..%r7, %rd0..%rd3, %p0..%p3; parameter `p`).
    fn removed(body: &str, pre_entry: &str) -> Vec<usize> {
        removed_in(body, pre_entry, "")
    }

    fn removed_in(body: &str, pre_entry: &str, entry_directive: &str) -> Vec<usize> {
        unrolls_in(body, pre_entry, entry_directive).iter().enumerate().filter(|(_, u)| **u == Unroll::Gone).map(|(pc, _)| pc).collect()
    }

    /// What `unrolled_loops` says of each pc of the kernel with this body.
    fn unrolls(body: &str) -> Vec<Unroll> {
        unrolls_in(body, "", "")
    }

    fn unrolls_in(body: &str, pre_entry: &str, entry_directive: &str) -> Vec<Unroll> {
        let src = format!(
            "//! [launch]\n//! grid = [1, 1, 1]\n//! block = [32, 1, 1]\n//! [[buffer]]\n//! name = \"b\"\n//! bytes = 65536\n//! [[param]]\n//! name = \"p\"\n//! buffer = \"b\"\n.version 8.0\n.target sm_90\n.address_size 64\n{pre_entry}.visible .entry k(.param .u64 p)\n{entry_directive}{{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd0, [p];\n\tcvta.to.global.u64 %rd0, %rd0;\n{body}\n\tret;\n}}\n"
        );
        let m = hopsync_firmware::Program::parse("t.ptx", &src).expect("parses").module;
        let c = SmConfig::sm90();
        unrolled_loops(&m, &analyze_each(&m, &c), &c)
    }

    // pcs: 0 ld.param, 1 cvta, 2 mov, 3 st (loop head), 4 add (address), 5 add (count), 6 setp, 7 bra
    const LOOP16: &str = "\tmov.u32 %r1, 0;\nL:\n\tst.global.u32 [%rd0], %r1;\n\tadd.s64 %rd0, %rd0, 4;\n\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 16;\n\t@%p1 bra L;";

    #[test]
    fn a_small_counted_loop_loses_its_control_instructions() {
        // ptxas 13.5 -arch=sm_90 unrolls this loop fully (16 STG with immediate offsets, no BRA):
        // the address step, the count, the compare and the branch are gone
        assert_eq!(removed(LOOP16, ""), vec![4, 5, 6, 7]);
    }

    #[test]
    fn nounroll_keeps_the_loop_wherever_the_pragma_stands() {
        let in_header = LOOP16.replace("L:\n", "L:\n\t.pragma \"nounroll\";\n");
        assert_eq!(removed(&in_header, ""), Vec::<usize>::new());
        assert_eq!(removed(LOOP16, ".pragma \"nounroll\";\n"), Vec::<usize>::new());
        assert_eq!(removed_in(LOOP16, "", ".pragma \"nounroll\";\n"), Vec::<usize>::new());
        // another pragma string changes nothing
        assert_eq!(removed_in(LOOP16, "", ".pragma \"other\";\n"), vec![4, 5, 6, 7]);
    }

    #[test]
    fn only_loops_ptxas_unrolls_fully_lose_all_their_control() {
        // the trip count comes from a register ptxas cannot know
        let unknown = LOOP16.replace("setp.lt.u32 %p1, %r1, 16", "setp.lt.u32 %p1, %r1, %r2");
        assert_eq!(removed(&unknown, ""), Vec::<usize>::new());
        // the start is not a constant
        let start = LOOP16.replace("mov.u32 %r1, 0", "mov.u32 %r1, %tid.x");
        assert_eq!(removed(&start, ""), Vec::<usize>::new());
        // a body of 1 store unrolls up to 2810 trips on ptxas 13.5
        let long = LOOP16.replace(", 16;", ", 2850;");
        assert_eq!(removed(&long, ""), Vec::<usize>::new());
        let just = LOOP16.replace(", 16;", ", 2800;");
        assert_eq!(removed(&just, ""), vec![4, 5, 6, 7]);
        // a branch out of the body: not a straight-line loop
        let exit = LOOP16.replace("\tadd.s64", "\t@%p2 bra D;\n\tadd.s64").replace("bra L;", "bra L;\nD:");
        assert_eq!(removed(&exit, ""), Vec::<usize>::new());
    }

    #[test]
    fn longer_and_unknown_loops_are_unrolled_partly() {
        let every = |f| Unroll::Every { back_edge: 7, factor: f };
        // 4096 trips of one store: ptxas 13.5 keeps a loop of 157 copies (the model: 150 / W)
        let long = unrolls(&LOOP16.replace(", 16;", ", 4096;"));
        assert_eq!(&long[4..8], &[every(150); 4]);
        assert_eq!(long[3], Unroll::Kept);
        // a trip count from a register: 4 copies of a small body
        let unknown = unrolls(&LOOP16.replace("setp.lt.u32 %p1, %r1, 16", "setp.lt.u32 %p1, %r1, %r2"));
        assert_eq!(&unknown[4..8], &[every(4); 4]);
        // ... but not of a body of 12 stores (W 12)
        let stores: String = (0..12).map(|k| format!("\tst.global.u32 [%rd0+{}], %r1;\n", 4 * k)).collect();
        let big = format!("\tmov.u32 %r1, 0;\nL:\n{stores}\tadd.s64 %rd0, %rd0, 48;\n\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, %r2;\n\t@%p1 bra L;");
        assert!(unrolls(&big).iter().all(|u| *u == Unroll::Kept));
    }

    #[test]
    fn an_empty_counted_loop_is_gone() {
        // ptxas deletes a counted loop with no work: 0 mov, 1 add, 2 setp, 3 bra (after pcs 0, 1)
        let empty = "\tmov.u32 %r1, 0;\nL:\n\tadd.u32 %r1, %r1, 1;\n\tsetp.ne.u32 %p1, %r1, 64;\n\t@%p1 bra L;";
        assert_eq!(removed(empty, ""), vec![3, 4, 5]);
    }

    #[test]
    fn the_store_address_is_not_folded_when_the_body_reads_it_as_a_value() {
        let value = LOOP16.replace("st.global.u32 [%rd0], %r1", "st.global.u64 [%rd0], %rd0");
        assert_eq!(removed(&value, ""), vec![5, 6, 7]);
    }
}

#[cfg(test)]
mod branch_tests {
    use super::*;

    /// The kernel with this body (registers %p0..3, %r0..7; %rd0 holds a global address).
    fn module(body: &str) -> Module {
        let src = format!(
            "//! [launch]\n//! grid = [1, 1, 1]\n//! block = [32, 1, 1]\n//! [[buffer]]\n//! name = \"b\"\n//! bytes = 4096\n//! [[param]]\n//! name = \"p\"\n//! buffer = \"b\"\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd0, [p];\n\tcvta.to.global.u64 %rd0, %rd0;\n{body}\n\tret;\n}}\n"
        );
        hopsync_firmware::Program::parse("t.ptx", &src).expect("parses").module
    }

    #[test]
    fn branches_on_lane_values_are_divergent_and_counted_loops_are_not() {
        // pcs: 2 mov tid, 3 setp (from tid), 4 bra (divergent) over 5 nanosleep (not predicable:
        // a BRA remains), 6 mov, 7 add, 8 setp, 9 bra (counter: uniform), 10..12 %rd1 = %rd0 + 4 x
        // %tid.x, 13 ld at that per-lane address, 14 add (from the load), 15 setp, 16 bra
        // (divergent) over 17 nanosleep, 18 ld at the parameter's address (every lane reads one
        // word), 19 setp, 20 bra (uniform), 21 shfl.sync.idx from lane 0 of %tid, 22 setp, 23 bra
        // (uniform), 24 bra.uni on the %tid predicate (the program says uniform)
        let m = module(
            "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra X;\n\tnanosleep.u32 0;\nX:\n\tmov.u32 %r2, 0;\nL:\n\tadd.u32 %r2, %r2, 1;\n\tsetp.lt.u32 %p2, %r2, 8;\n\t@%p2 bra L;\n\tmov.u32 %r7, %tid.x;\n\tmul.wide.u32 %rd2, %r7, 4;\n\tadd.s64 %rd1, %rd0, %rd2;\n\tld.global.u32 %r3, [%rd1];\n\tadd.u32 %r4, %r3, 1;\n\tsetp.eq.u32 %p3, %r4, 0;\n\t@%p3 bra Y;\n\tnanosleep.u32 0;\nY:\n\tld.global.u32 %r5, [%rd0];\n\tsetp.eq.u32 %p0, %r5, 0;\n\t@%p0 bra Z;\nZ:\n\tshfl.sync.idx.b32 %r6, %r1, 0, 31, -1;\n\tsetp.eq.u32 %p0, %r6, 0;\n\t@%p0 bra V;\nV:\n\t@%p1 bra.uni W;\nW:",
        );
        let info = analyze(&m, &SmConfig::sm90());
        let at: Vec<usize> = info.iter().enumerate().filter(|(_, f)| f.divergent).map(|(pc, _)| pc).collect();
        assert_eq!(at, vec![4, 16]);
    }

    #[test]
    fn an_atomic_is_aggregated_only_at_an_address_ptxas_sees_is_uniform() {
        // pcs: 2 atom at the parameter's address (uniform), 3..5 %rd1 = %rd0 + 4 x %tid.x,
        // 6 atom at that per-lane address (every lane may still land on one word at run time)
        let m = module("	atom.global.add.u32 %r3, [%rd0], 1;
	mov.u32 %r7, %tid.x;
	mul.wide.u32 %rd2, %r7, 4;
	add.s64 %rd1, %rd0, %rd2;
	atom.global.add.u32 %r4, [%rd1], 1;");
        let info = analyze(&m, &SmConfig::sm90());
        assert!(aggregates_atomic(&m.kernel.body[2]) && info[2].uniform_address);
        assert!(aggregates_atomic(&m.kernel.body[6]) && !info[6].uniform_address);
    }

    /// The pcs where ptxas puts a YIELD ([`yield_loops`]) in a kernel with this body, after
    /// `%p1 = (%tid.x == 0)` at pcs 2..3 and `.shared .b64 bar`.
    fn yields(body: &str) -> Vec<usize> {
        let m = module(&format!("\t.shared .align 8 .b64 bar;\n\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n{body}"));
        let info = analyze(&m, &SmConfig::sm90());
        yield_loops(&m, &info).iter().enumerate().filter(|(_, y)| y.is_some()).map(|(pc, _)| pc).collect()
    }

    #[test]
    fn ptxas_puts_a_yield_in_a_spin_loop_it_cannot_prove_converged() {
        // (each shape as ptxas 13.5 compiles it: YIELD or not in the SASS)
        let spin = "L:\n\tmbarrier.test_wait.parity.shared::cta.b64 %p2, [bar], 0;\n\t@!%p2 bra L;\n";
        let under = |br: &str, body: &str| format!("\t@!%p1 {br} J;\n{body}J:\n\tadd.u32 %r2, %r2, 1;\n");
        // pc 5: the test_wait at the top of the loop, inside the branch on %tid
        assert_eq!(yields(&under("bra", spin)), vec![5]);
        assert_eq!(yields(&under("bra.uni", spin)), Vec::<usize>::new(), "the program says the branch is uniform");
        assert_eq!(yields(spin), Vec::<usize>::new(), "converged");
        // the lanes that skip the loop exit: nothing to wait for (`@!%p1 ret` is no branch either)
        assert_eq!(yields(&format!("\t@!%p1 bra E;\n{spin}\tadd.u32 %r2, %r2, 1;\nE:\n\tret;\n")), Vec::<usize>::new());
        assert_eq!(yields(&format!("\t@!%p1 ret;\n{spin}")), Vec::<usize>::new());
        // the else side of an if / else: pc 7 (4 bra, 5 add, 6 bra over the else)
        let ifelse = format!("\t@%p1 bra E;\n\tadd.u32 %r2, %r2, 1;\n\tbra.uni J;\nE:\n{spin}J:\n\tadd.u32 %r2, %r2, 1;\n");
        assert_eq!(yields(&ifelse), vec![7]);
        // a peeled try_wait loop (the try_wait and its branch alone): the YIELD is on the retry,
        // the back edge at pc 6
        let try_wait = "T:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;\n\t@!%p2 bra T;\n";
        let m = module(&format!("\t.shared .align 8 .b64 bar;\n\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n{}", under("bra", try_wait)));
        assert_eq!(yield_loops(&m, &analyze(&m, &SmConfig::sm90()))[6], Some(YieldSite::Retry));
        // with a suspendTimeHint ptxas sleeps there (NANOSLEEP.SYNCS) instead
        assert_eq!(yields(&under("bra", &try_wait.replace("], 0;", "], 0, 1000;"))), Vec::<usize>::new());
        // a volatile flag load polls; a plain one (hoisted), a %clock spin, a counted loop with an
        // atomic and a loop with a nanosleep do not
        let flag = |ld: &str, extra: &str| under("bra", &format!("F:\n{extra}\t{ld}.shared.u32 %r3, [bar];\n\tsetp.eq.u32 %p2, %r3, 0;\n\t@%p2 bra F;\n"));
        assert_eq!(yields(&flag("ld.volatile", "")), vec![5]);
        assert_eq!(yields(&flag("ld.acquire.cta", "")), vec![5]);
        assert_eq!(yields(&flag("ld.relaxed.cta", "")), vec![5]);
        assert_eq!(yields(&flag("ld", "")), Vec::<usize>::new());
        assert_eq!(yields(&flag("ld.volatile", "\tnanosleep.u32 20;\n")), Vec::<usize>::new());
        let clock = under("bra", "C:\n\tmov.u32 %r3, %clock;\n\tsetp.lt.u32 %p2, %r3, 100;\n\t@%p2 bra C;\n");
        assert_eq!(yields(&clock), Vec::<usize>::new());
        let counted = under("bra", "N:\n\tatom.global.add.u32 %r3, [%rd0], 1;\n\tadd.u32 %r2, %r2, 1;\n\tsetp.lt.u32 %p2, %r2, 16;\n\t@%p2 bra N;\n");
        assert_eq!(yields(&counted), Vec::<usize>::new());
        // an atomic's answer differs by lane: its loop leaves on a per-lane value, converged or not
        let atom = "A:\n\tatom.global.add.u32 %r3, [%rd0], 1;\n\tsetp.ne.u32 %p2, %r3, 7;\n\t@%p2 bra A;\n";
        assert_eq!(yields(atom), vec![4]);
        // a divergent branch out of the loop (CUTLASS's `@P1 bra DONE; bra LAB_WAIT`)
        let exit = "W:\n\tatom.global.add.u32 %r3, [%rd0], 1;\n\tsetp.eq.u32 %p2, %r3, 7;\n\t@%p2 bra D;\n\tbra.uni W;\nD:\n";
        assert_eq!(yields(exit), vec![4]);
    }

    #[test]
    fn a_branch_on_a_compare_of_its_block_waits_for_it() {
        let c = SmConfig::sm90();
        let total = c.latency.alu + c.latency.predicate_branch;
        // pcs: 2 setp, 3 add, 4 bra on the setp over 5 nanosleep (a BRA remains); 7 bra on a
        // predicate set in another block
        let m = module("\tsetp.eq.u32 %p1, %r1, 0;\n\tadd.u32 %r2, %r2, 1;\n\t@%p1 bra X;\n\tnanosleep.u32 0;\nX:\n\tadd.u32 %r2, %r2, 1;\n\t@%p1 bra Y;\n\tnanosleep.u32 0;\nY:");
        let info = analyze(&m, &c);
        assert_eq!(info[4].branch_guard, Some((info[2].dsts[0], total)));
        assert_eq!(info[7].branch_guard, None, "the compare is in another basic block");
        assert_eq!(info[3].branch_guard, None);
    }

    #[test]
    fn a_shared_variable_named_in_a_loop_with_an_inner_loop_waits_for_the_window_base() {
        let c = SmConfig::sm90();
        // pcs: 2 ld [s] (top level), 3 bra J (forward, over 4 nanosleep: a BRA remains), 5 add
        // at J (round R), 6 add (spin S), 7 bra S, 8 st [s] (round body after the spin, after
        // the join: waits), 9 ld [s+4] and 10 mov %r1, s (the same read), 11 bra R; 12 ld [s] in
        // loop T (innermost: hoisted), 13 bra T
        let m = module("\t.shared .align 4 .b32 s[4];\n\tld.shared.u32 %r2, [s];\n\t@%p0 bra J;\n\tnanosleep.u32 0;\nJ:\nR:\n\tadd.u32 %r3, %r3, 1;\nS:\n\tadd.u32 %r4, %r4, 1;\n\t@%p1 bra S;\n\tst.shared.u32 [s], %r2;\n\tld.shared.u32 %r5, [s+4];\n\tmov.u32 %r1, s;\n\t@%p2 bra R;\nT:\n\tld.shared.u32 %r6, [s];\n\t@%p3 bra T;");
        let info = analyze(&m, &c);
        let waits: Vec<usize> = info.iter().enumerate().filter(|(_, f)| f.window_base > 0).map(|(pc, _)| pc).collect();
        assert_eq!(waits, vec![8]);
        assert_eq!(info[8].window_base, c.latency.window_base);
    }

    #[test]
    fn a_register_holding_a_shared_address_is_recomputed_after_a_join_in_a_loop_with_an_inner_loop() {
        let c = SmConfig::sm90();
        // pcs: 2 mov %r1, s (top level: names s), 3 add %r7, %r1, 4 (from it), 4 bra J (forward)
        // over 5 nanosleep, 6 add at J (round R), 7 add (spin S), 8 bra S, 9 ld [%r7] (after the
        // join: recomputed), 10 st [%r1] (the same recomputation serves it), 11 ld [%rd1] (not a
        // shared address), 12 bra R
        let m = module("\t.shared .align 4 .b32 s[4];\n\tmov.u32 %r1, s;\n\tadd.u32 %r7, %r1, 4;\n\t@%p0 bra J;\n\tnanosleep.u32 0;\nJ:\nR:\n\tadd.u32 %r3, %r3, 1;\nS:\n\tadd.u32 %r4, %r4, 1;\n\t@%p1 bra S;\n\tld.shared.u32 %r5, [%r7];\n\tst.shared.u32 [%r1], %r5;\n\tld.shared.u32 %r6, [%rd1];\n\t@%p2 bra R;");
        let info = analyze(&m, &c);
        let waits: Vec<(usize, u64)> = info.iter().enumerate().filter(|(_, f)| f.window_base > 0).map(|(pc, f)| (pc, f.window_base)).collect();
        assert_eq!(waits, vec![(9, c.latency.window_lea)]);
    }

    #[test]
    fn ptxas_predicates_a_short_forward_branch_and_deletes_one_to_the_next_instruction() {
        let c = SmConfig::sm90();
        // pcs: 2 mov tid, 3 setp (per lane), 4 bra over 5..6 (two adds: predicated), 7 bra to the
        // next instruction (deleted), 8 bra over 9 bar.sync (kept), 10 ld (uniform address), 11
        // setp (uniform), 12 bra over 13..15 (three adds: kept with a uniform guard), 16 bra over
        // 17 add (predicated)
        let m = module(
            "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra A;\n\tadd.u32 %r2, %r2, 1;\n\tadd.u32 %r3, %r3, 1;\nA:\n\tbra.uni B;\nB:\n\t@%p1 bra C;\n\tbar.sync 0;\nC:\n\tld.global.u32 %r4, [%rd0];\n\tsetp.eq.u32 %p2, %r4, 0;\n\t@%p2 bra D;\n\tadd.u32 %r2, %r2, 1;\n\tadd.u32 %r3, %r3, 1;\n\tadd.u32 %r5, %r5, 1;\nD:\n\t@%p2 bra E;\n\tadd.u32 %r2, %r2, 1;\nE:",
        );
        let info = analyze(&m, &c);
        let at: Vec<usize> = info.iter().enumerate().filter(|(_, f)| f.if_converted).map(|(pc, _)| pc).collect();
        assert_eq!(at, vec![4, 7, 16]);
        assert_eq!(info[4].branch_guard, None, "no BRA waits for the predicate");
        assert_eq!(info[4].divergent, false, "predicated: the warp does not diverge");
        assert_eq!(info[8].divergent, true);
    }
}
