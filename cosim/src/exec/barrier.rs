//! Named barriers `bar`/`barrier` (PTX 9.7.13.1) and the cluster barrier (PTX 9.7.13.3).
//!
//! Named barriers count in threads at warp granularity: "barrier{.cta} instruction causes
//! executing thread to wait for all non-exited threads from its warp and marks warps' arrival at
//! barrier", so a warp arrives once, counting 32, when all of its non-exited threads executed the
//! barrier. Without a thread count, all non-exited threads of the CTA participate.

use super::{lanes, Cx, Exec, Flow, Stop, R};
use crate::finding::FindingKind;
use crate::machine::{Lane, Machine, PartialArrival, Wait, WARP};
use crate::retire::SyncEvent;
use hopsync_firmware::ir::{Instr, Mod, Operand};
use hopsync_firmware::ops::op;

/// Threads the CTA's default-count barriers expect: 32 per warp with a live thread.
fn cta_threads(m: &Machine<'_>, cta: u32) -> u32 {
    m.ctas[cta as usize].warps.iter().filter(|w| !w.exited()).count() as u32 * WARP as u32
}

/// The operand checks of bar / barrier that a named-barrier unit cannot make, shared by the
/// golden model and the RTL engine (so they cannot drift): the barrier id (operand `ai`) is
/// 0..=15, the thread count (operand `bi` when `has_b`) is a non-zero multiple of the warp size
/// and at least one warp, and `.arrive` has a count (PTX 9.7.13.1). Returns (id, count), or None
/// when the id is out of range (the finding is reported; in warn mode the instruction does
/// nothing).
fn named_operands(cx: &mut Cx<'_, '_>, i: &Instr, ai: usize, bi: usize, has_b: bool) -> Result<Option<(u8, Option<u32>)>, Stop> {
    let lane0 = cx.first_lane();
    let id = cx.src(i, ai, lane0);
    if id > 15 {
        cx.finding(FindingKind::BarrierIdOutOfRange, lane0, format!("barrier id {id}: a CTA has barriers 0..=15"))?;
        return Ok(None);
    }
    let id = id as u8;
    let count = if has_b { Some(cx.src(i, bi, lane0) as u32) } else { None };
    if let Some(b) = count {
        if (1..WARP as u32).contains(&b) {
            // Warps arrive whole: a count below one warp is exceeded by the first arrival.
            cx.finding(
                FindingKind::BarrierCountTooSmall,
                lane0,
                format!("barrier {id} thread count {b} is smaller than one warp: the arriving warp alone counts {WARP} threads (PTX 9.7.13.1: warps arrive as a whole; the count must be a multiple of the warp size)"),
            )?;
        } else if b % 32 != 0 || b == 0 {
            cx.finding(FindingKind::BarrierCountNotMultipleOfWarp, lane0, format!("barrier {id} thread count {b} is not a non-zero multiple of the warp size (32)"))?;
        } else if b > cx.m.prog.manifest.threads_per_cta().next_multiple_of(WARP as u32) {
            // Warps arrive whole, so the CTA's warps count at most this many threads. Checked at
            // issue, as the NamedBarrierUnit checks its count range: a deadlock would name no cause.
            let t = cx.m.prog.manifest.threads_per_cta();
            cx.finding(FindingKind::BarrierCountAboveCta, lane0, format!("barrier {id} thread count {b} exceeds what the CTA's {t} threads (whole warps) can arrive: it can never complete"))?;
        }
    }
    if i.has(Mod::Arrive) && count.is_none() {
        // PTX 9.7.13.1: "a non-zero thread count is required for barrier{.cta}.arrive" (also a
        // syntax rule: `bar.arrive a, b`).
        cx.finding(FindingKind::BarrierCountNotMultipleOfWarp, lane0, format!("barrier {id}: arrive needs a thread count"))?;
    }
    Ok(Some((id, count)))
}

/// The warp's live lanes and the lanes that have now arrived at named barrier `id` (this group
/// plus earlier partial arrivals), checked by the golden model and the RTL engine alike: an
/// `.aligned` barrier must be executed by every live lane of the warp together (PTX 9.7.13.1).
/// None when that finding was reported and the instruction does nothing (warn mode).
fn aligned_arrival(cx: &mut Cx<'_, '_>, id: u8, aligned: bool, lane0: u32) -> Result<Option<(u32, u32)>, Stop> {
    let w = &cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    let live = w.live();
    let arriving = w.bar_partial[id as usize] | cx.mask;
    // Lanes of this group whose guard was false do not execute the barrier: they fall through.
    if arriving != live && aligned {
        let l = (live & !arriving).trailing_zeros();
        let at = where_lane_is(cx, l);
        cx.finding(
            FindingKind::BarrierAlignedDivergent,
            lane0,
            format!("`.aligned` barrier {id} executed by lanes {:#010x} while live lanes {:#010x} of the warp are elsewhere (first: lane {l}, {at})", cx.mask, live),
        )?;
        return Ok(None);
    }
    Ok(Some((live, arriving)))
}

/// Where lane `l` of the executing warp is, for messages: the line of the instruction it runs
/// next or waits in, and whether it waits at a join to reconverge.
fn where_lane_is(cx: &Cx<'_, '_>, l: u32) -> String {
    let w = &cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    let blocked = matches!(w.lane()[l as usize], Lane::Blocked(_));
    // A blocked lane's pc already points past the instruction it waits in.
    let pc = if blocked { w.pc()[l as usize].saturating_sub(1) } else { w.pc()[l as usize] };
    let line = cx.m.module().kernel.body.get(pc as usize).map(|i| i.loc.line).unwrap_or(0);
    if w.held() >> l & 1 == 1 {
        format!("waiting at the join on line {line}")
    } else if blocked {
        format!("blocked at line {line}")
    } else {
        format!("at line {line}")
    }
}

/// What one arriving lane executed (its own predicate and destination for bar.red, and whether
/// it waits: `.sync`/`.red`, or goes on: `.arrive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrivingLane {
    /// The lane.
    pub lane: u32,
    /// Its bar.red predicate.
    pub pred: bool,
    /// Its bar.red destination register.
    pub dst: Option<u32>,
    /// It waits for the barrier to complete.
    pub sync: bool,
}

/// One warp's arrival at named barrier `id` (PTX 9.7.13.1): the warp arrives once, counting 32,
/// when all its non-exited threads executed the barrier; a divergent warp's lanes may have done
/// so at different instructions (non-`.aligned`), each with its own operands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedArrival {
    /// The barrier.
    pub id: u8,
    /// The thread count (None: all threads of the CTA).
    pub count: Option<u32>,
    /// The reduction of bar.red (`.popc`, `.and`, `.or`).
    pub red: Option<Mod>,
    /// The arriving lanes (every live lane of the warp).
    pub lanes: Vec<ArrivingLane>,
    /// The warp's live lanes when it arrived.
    pub live: u32,
    /// An `.aligned` form (`bar`, `barrier.*.aligned`): the warp may run ahead of the wait
    /// ([`runs_ahead_of_barrier`]).
    pub aligned: bool,
}

/// Front half of bar / barrier: operand evaluation and the checks a named-barrier unit cannot
/// make (barrier id range, counts, `.aligned` divergence), and the merge of a divergent warp's
/// lanes. None: no arrival now (a finding in warn mode, or these lanes wait for the rest of their
/// warp, which may reach the barrier at another instruction or exit: their states are set).
pub fn named_plan(cx: &mut Cx<'_, '_>, i: &Instr) -> Result<Option<NamedArrival>, Stop> {
    let aligned = i.op == hopsync_firmware::Opcode::Bar || i.has(Mod::Aligned);
    let red = i.has(Mod::Red);
    let sync = i.has(Mod::Sync) || red;
    // Operand positions: red forms start with the destination.
    let has_b = if red { i.operands.len() == 4 } else { i.operands.len() == 2 };
    let (ai, bi, ci) = if red { (1, 2, if has_b { 3 } else { 2 }) } else { (0, 1, 0) };
    let lane0 = cx.first_lane();
    let Some((id, count)) = named_operands(cx, i, ai, bi, has_b)? else { return Ok(None) };
    let Some((live, arriving)) = aligned_arrival(cx, id, aligned, lane0)? else { return Ok(None) };
    let dst = match (&i.operands[0], red) {
        (Operand::Reg(r), true) => Some(r.0),
        _ => None,
    };
    let red_op = if red { [Mod::Popc, Mod::And, Mod::Or].into_iter().find(|m| i.has(*m)) } else { None };
    if arriving != live {
        // Non-aligned: these lanes wait for the rest of the warp. Each thread contributes its own
        // predicate and receives the result in its own destination: remember what each executed.
        let own: Vec<PartialArrival> = lanes(cx.mask)
            .map(|l| PartialArrival { id, lane: l, count, sync, red: red_op, pred: red && cx.src(i, ci, l) & 1 == 1, dst })
            .collect();
        let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
        warp.bar_partial[id as usize] = arriving;
        warp.bar_partial_lanes.extend(own);
        cx.block(cx.mask, Wait::NamedBarrierWarp(id));
        return Ok(None);
    }
    let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    warp.bar_partial[id as usize] = 0;
    let earlier = take_partial(warp, id);
    // Every arriving lane: this instruction's lanes, and those that waited earlier in the warp at
    // another instruction, with their own predicate, destination and sync/arrive.
    let lanes = lanes(arriving)
        .map(|l| match earlier.iter().find(|e| e.lane == l && cx.mask >> l & 1 == 0) {
            Some(e) => ArrivingLane { lane: l, pred: e.pred, dst: e.dst, sync: e.sync },
            None => ArrivingLane { lane: l, pred: red && cx.src(i, ci, l) & 1 == 1, dst, sync },
        })
        .collect();
    Ok(Some(NamedArrival { id, count, red: red_op, lanes, live, aligned }))
}

/// The arrival a warp makes when its other lanes exit while the rest wait at a non-aligned
/// barrier `id`: the waiting lanes, with what they executed (the first of them gives the count
/// and the operation). None when no such arrival is due.
pub fn exit_arrival(m: &mut Machine<'_>, cta: u32, warp: u32, id: u8) -> Option<NamedArrival> {
    let w = &mut m.ctas[cta as usize].warps[warp as usize];
    let live = w.live();
    let partial = w.bar_partial[id as usize];
    if partial == 0 || live == 0 || partial & live != live {
        return None;
    }
    w.bar_partial[id as usize] = 0;
    let info = take_partial(w, id);
    let first = info.first().cloned();
    // in the order the lanes executed the barrier (their bar.red results are written so)
    let lanes = info.iter().map(|e| ArrivingLane { lane: e.lane, pred: e.pred, dst: e.dst, sync: e.sync }).collect();
    Some(NamedArrival { id, count: first.as_ref().and_then(|f| f.count), red: first.and_then(|f| f.red), lanes, live, aligned: false })
}

/// Back half of an arrival the barrier took in generation `generation`: `.sync`/`.red` lanes wait
/// for it to complete, `.arrive` lanes (those blocked earlier waiting for the rest of the warp
/// included) go on.
pub fn apply_arrival(m: &mut Machine<'_>, cta: u32, warp: u32, a: &NamedArrival, generation: u64) {
    let w = &mut m.ctas[cta as usize].warps[warp as usize];
    for e in &a.lanes {
        if e.sync {
            w.set_lane(e.lane as usize, Lane::Blocked(Wait::NamedBarrier(a.id, generation)));
        } else if w.lane()[e.lane as usize] == Lane::Blocked(Wait::NamedBarrierWarp(a.id)) {
            w.set_lane(e.lane as usize, Lane::Ready);
        }
    }
    // The whole warp waits at an aligned bar.sync (no reduction, whose result the next
    // instructions may read): it runs ahead of the wait.
    let all_sync = a.lanes.iter().filter(|e| e.sync).fold(0u32, |m, e| m | 1 << e.lane) == w.live();
    w.run_ahead = (a.aligned && a.red.is_none() && all_sync).then_some(a.id);
}

/// Whether an instruction issues while its warp waits at an aligned `bar.sync`, before the barrier
/// completes. ptxas compiles `bar.sync` / `barrier.sync.aligned` to `BAR.SYNC.DEFER_BLOCKING`
/// (SASS of calibration/bar_sync_red.ptx and bar_release.ptx, `cuobjdump -sass`): on silicon
/// (H100, docs/FIDELITY.md, calibration/bar_warps.ptx) the `%clock64` read right after a
/// bar.sync comes 6..21 cycles after the one before it whatever the warp count, and a loop's own
/// instructions overlap the barrier, while the first shared-memory load after it waits for the
/// release (bar_release.ptx). The memory model is unchanged: every memory access, fence, async
/// or synchronizing instruction, call, return and exit still waits for the barrier (PTX 9.7.13.1:
/// the barrier orders the memory accesses before it against those after it), so running ahead
/// changes no result; only register-only instructions run ahead.
pub fn runs_ahead_of_barrier(op: hopsync_firmware::Opcode) -> RunAhead {
    use hopsync_firmware::Opcode::*;
    match op {
        Mov | Add | Addc | Sub | Subc | Mul | Mad | Fma | Div | Rem | Abs | Neg | Min | Max | And | Or | Xor | Not | Cnot | Shl | Shr | Popc | Clz | Brev | Bfind | Bfe | Setp | Selp | Cvt | Cvta => RunAhead::Yes,
        Copysign | Testp | Mul24 | Mad24 | Sqrt | Rsqrt | Rcp | Ex2 | Lg2 | Sin | Cos | Tanh | Bfi | Prmt | Lop3 | Fns | Shf | Bmsk | Szext | Sad | Dp4a | Dp2a | Set | Mapa | Getctarank => RunAhead::Yes,
        Bra => RunAhead::IfUniform,
        // Not register-only, or not measured running ahead: they wait for the barrier.
        Isspacep | Exit | Trap | Brkpt | Elect | Activemask | Vote | Match | ShflSync | Redux | BarWarpSync | Griddepcontrol | Membar | Fence | Setmaxnreg => RunAhead::No,
        Movmatrix | Mma | WgmmaFence | WgmmaCommitGroup | WgmmaWaitGroup | WgmmaMmaAsync | WgmmaMmaAsyncSp => RunAhead::No,
        CpAsyncCommitGroup | CpAsyncWaitGroup | CpAsyncWaitAll | CpAsyncBulkCommitGroup | CpAsyncBulkWaitGroup => RunAhead::No,
        CpAsyncBulk | CpAsyncBulkTensor | CpReduceAsyncBulk | CpReduceAsyncBulkTensor | CpAsyncBulkPrefetch | CpAsyncBulkPrefetchTensor => RunAhead::No,
        ClusterlaunchcontrolTryCancel | ClusterlaunchcontrolQueryCancel | Call | Ret | Nanosleep => RunAhead::No,
        Ld | St | Atom | Red | TensormapCpFenceproxy | TensormapReplace | Ldmatrix | Stmatrix | Prefetch | Prefetchu | CpAsync | StAsync | RedAsync => RunAhead::No,
        MbarrierInit | MbarrierInval | MbarrierExpectTx | MbarrierCompleteTx | MbarrierArrive | MbarrierArriveDrop | MbarrierTestWait | MbarrierTryWait | MbarrierPendingCount | CpAsyncMbarrierArrive => RunAhead::No,
        Bar | Barrier | BarrierClusterArrive | BarrierClusterWait => RunAhead::No,
    }
}

/// What [`runs_ahead_of_barrier`] allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAhead {
    /// Waits for the barrier.
    No,
    /// Issues before the barrier completes.
    Yes,
    /// Issues before the barrier completes unless it would split the warp (a branch taken by
    /// some lanes only).
    IfUniform,
}

/// A completed generation of barrier `id` of `cta`: its waiting lanes in the warps of
/// `warps` go on.
pub fn release_waiters(m: &mut Machine<'_>, cta: u32, id: u8, generation: u64, warps: u64) {
    let mut woken = 0u64;
    for (w, warp) in m.ctas[cta as usize].warps.iter_mut().enumerate() {
        if warps >> w & 1 == 0 {
            continue;
        }
        for l in 0..WARP {
            if warp.lane()[l] == Lane::Blocked(Wait::NamedBarrier(id, generation)) {
                warp.set_lane(l, Lane::Ready);
                woken |= 1 << w;
            }
        }
        if warp.run_ahead == Some(id) {
            warp.run_ahead = None;
        }
    }
    crate::race::bar_complete(m, cta, id, woken);
}

/// The value a bar.red result writes into register `reg` (a predicate takes bit 0, a `.u32` the
/// low 32 bits).
pub fn red_value(m: &Machine<'_>, reg: u32, result: u64) -> u64 {
    if m.module().kernel.regs[reg as usize].ty == Mod::Pred {
        result & 1
    } else {
        result & 0xffff_ffff
    }
}

/// The golden model of bar / barrier: plan, the barrier's own checks and counters (what the
/// NamedBarrierUnit does), apply, release.
fn bar_exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
    let lane0 = cx.first_lane();
    let Some(a) = named_plan(cx, i)? else { return Ok(Flow::Next) };
    let all_threads = cta_threads(cx.m, cx.cta);
    let (cta, w, id) = (cx.cta, cx.warp, a.id);
    let b = &cx.m.ctas[cta as usize].bars[id as usize];
    if b.arrived_warps >> w & 1 == 1 {
        let msg = format!("warp {w} arrives on barrier {id} a second time before it completes ({} of {} threads arrived)", b.arrived, b.expected.unwrap_or(all_threads));
        cx.finding(FindingKind::BarrierWarpArrivedTwice, lane0, msg)?;
        return Ok(Flow::Next);
    }
    let b = &cx.m.ctas[cta as usize].bars[id as usize];
    if b.arrived > 0 && b.expected != a.count {
        let says = |c: Option<u32>| c.map(|n| format!("thread count {n}")).unwrap_or_else(|| "no thread count (all threads of the CTA)".into());
        let msg = format!(
            "barrier {id} is in use with {} ({} threads arrived, warps {:#x}); this warp gives {}",
            says(b.expected),
            b.arrived,
            b.arrived_warps,
            says(a.count)
        );
        cx.finding(FindingKind::BarrierCountMismatch, lane0, msg)?;
    }
    let b = &cx.m.ctas[cta as usize].bars[id as usize];
    let red = i.has(Mod::Red);
    if b.arrived > 0 && (b.red.is_some() != red) {
        let (was, now) = if red { ("bar.sync/bar.arrive", "bar.red") } else { ("bar.red", "bar.sync/bar.arrive") };
        let msg = format!("barrier {id} is active with {was} ({} threads arrived, warps {:#x}); this warp uses {now} on it", b.arrived, b.arrived_warps);
        cx.finding(FindingKind::BarrierRedMixed, lane0, msg)?;
    }
    let generation = count_arrival(cx.m, cta, w, &a);
    let b = &cx.m.ctas[cta as usize].bars[id as usize];
    let expected = b.expected.unwrap_or(all_threads);
    if b.arrived > expected {
        let msg = format!("barrier {id}: {} threads arrived but the thread count is {expected}", b.arrived);
        cx.finding(FindingKind::BarrierCountTooSmall, lane0, msg)?;
    }
    apply_arrival(cx.m, cta, w, &a, generation);
    cx.m.progress();
    try_release(cx.m, cta, id);
    Ok(Flow::Next)
}

/// The golden barrier's counters take warp `w`'s arrival (the first arrival of a generation sets
/// its count and operation); returns the generation.
fn count_arrival(m: &mut Machine<'_>, cta: u32, w: u32, a: &NamedArrival) -> u64 {
    let b = &mut m.ctas[cta as usize].bars[a.id as usize];
    if b.arrived == 0 {
        b.expected = a.count;
        b.red = a.red;
        b.popc = 0;
        b.all = true;
        b.any = false;
        b.red_dst.clear();
    }
    if a.red.is_some() {
        for e in &a.lanes {
            b.popc += e.pred as u32;
            b.all &= e.pred;
            b.any |= e.pred;
            if let Some(d) = e.dst {
                b.red_dst.push((w, e.lane, d));
            }
        }
    }
    b.arrived += WARP as u32;
    b.arrived_warps |= 1 << w;
    let g = b.generation;
    crate::race::bar_arrive(m, cta, w, a.id);
    g
}

/// Removes and returns what the lanes of `warp` waiting at barrier `id` executed.
fn take_partial(warp: &mut crate::machine::Warp, id: u8) -> Vec<PartialArrival> {
    if !warp.bar_partial_lanes.iter().any(|e| e.id == id) {
        return Vec::new();
    }
    let (mine, rest) = std::mem::take(&mut warp.bar_partial_lanes).into_iter().partition(|e| e.id == id);
    warp.bar_partial_lanes = rest;
    mine
}

/// Completes barrier `id` of `cta` if enough threads arrived: releases its waiters, delivers
/// bar.red results, and resets it for reuse.
fn try_release(m: &mut Machine<'_>, cta: u32, id: u8) {
    let all = cta_threads(m, cta);
    let b = &m.ctas[cta as usize].bars[id as usize];
    if b.arrived == 0 || b.arrived < b.expected.unwrap_or(all) {
        return;
    }
    let generation = b.generation;
    let warps = b.arrived_warps;
    let result = match b.red {
        Some(Mod::Popc) => b.popc as u64,
        Some(Mod::And) => b.all as u64,
        Some(Mod::Or) => b.any as u64,
        _ => 0,
    };
    let dsts = b.red_dst.clone();
    release_waiters(m, cta, id, generation, u64::MAX);
    let b = &mut m.ctas[cta as usize].bars[id as usize];
    b.arrived = 0;
    b.arrived_warps = 0;
    b.generation += 1;
    b.red = None;
    b.red_dst.clear();
    for (w, l, r) in dsts {
        let v = red_value(m, r, result);
        m.ctas[cta as usize].warps[w as usize].regs[r as usize * WARP + l as usize] = v;
        if m.rec.as_ref().is_some_and(|rec| rec.cta == cta && rec.warp == w) {
            m.log_reg(hopsync_firmware::ir::RegId(r), l, v);
        }
    }
    m.sync_event(SyncEvent::NamedBarrierRelease { cta, id: id as u32, warps });
}

impl Exec for op::Bar {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        bar_exec(cx, i)
    }
}
impl Exec for op::Barrier {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        bar_exec(cx, i)
    }
}

/// Threads of a cluster that have not exited.
fn cluster_threads(m: &Machine<'_>, cluster: u32) -> u64 {
    m.clusters[cluster as usize]
        .ctas
        .iter()
        .map(|&c| m.ctas[c as usize].warps.iter().map(|w| w.live().count_ones() as u64).sum::<u64>())
        .sum()
}

/// The `.aligned` rule of barrier.cluster.arrive / wait (PTX 9.7.13.3): every live thread of the
/// warp executes it together.
pub fn cluster_aligned_check(cx: &mut Cx<'_, '_>, i: &Instr) -> Result<(), Stop> {
    let live = cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].live();
    if i.has(Mod::Aligned) && cx.mask != live {
        let what = if i.op == hopsync_firmware::Opcode::BarrierClusterArrive { "arrive" } else { "wait" };
        cx.finding(FindingKind::ClusterBarrierAlignedDivergent, cx.first_lane(), format!("`.aligned` barrier.cluster.{what} executed by lanes {:#010x} of live {live:#010x}", cx.mask))?;
    }
    Ok(())
}

/// Front half of barrier.cluster.arrive, shared by both engines: the `.aligned` rule and "each
/// thread must arrive at the barrier only once before the barrier completes" (PTX 9.7.13.3; it
/// arrives again after a wait). Records each arriving thread's phase (`phase`: the barrier's
/// current one) and returns the lanes that arrive.
pub fn cluster_arrive_plan(cx: &mut Cx<'_, '_>, i: &Instr, phase: u64) -> Result<u32, Stop> {
    cluster_aligned_check(cx, i)?;
    let mut arriving = 0;
    for l in lanes(cx.mask) {
        if cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].cluster_arrival[l as usize].is_some() {
            cx.finding(FindingKind::ClusterBarrierArriveTwice, l, format!("thread arrives on the cluster barrier again before waiting (phase {phase})"))?;
            continue;
        }
        cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].cluster_arrival[l as usize] = Some(phase);
        arriving |= 1 << l;
    }
    Ok(arriving)
}

/// barrier.cluster.arrive (PTX 9.7.13.3): each thread arrives once per phase; the phase completes
/// when every non-exited thread of the cluster arrived.
impl Exec for op::BarrierClusterArrive {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let cl = cx.m.ctas[cx.cta as usize].cluster;
        let phase = cx.m.clusters[cl as usize].phase;
        let arriving = cluster_arrive_plan(cx, i, phase)?;
        if arriving != 0 {
            crate::race::cluster_arrive(cx.m, cx.cta, cx.warp, i.has(Mod::Relaxed));
        }
        cx.m.clusters[cl as usize].arrived += arriving.count_ones() as u64;
        cx.m.progress();
        try_release_cluster(cx.m, cl);
        Ok(Flow::Next)
    }
}

/// barrier.cluster.wait (PTX 9.7.13.3): waits for the phase this thread arrived in.
impl Exec for op::BarrierClusterWait {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        cluster_aligned_check(cx, i)?;
        let cl = cx.m.ctas[cx.cta as usize].cluster;
        let now = cx.m.clusters[cl as usize].phase;
        let mut passed = false;
        for l in lanes(cx.mask) {
            let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
            match warp.cluster_arrival[l as usize] {
                None => {
                    cx.finding(FindingKind::ClusterBarrierWaitWithoutArrive, l, "barrier.cluster.wait without a barrier.cluster.arrive in this phase".into())?;
                }
                Some(p) if p < now => {
                    warp.cluster_arrival[l as usize] = None;
                    passed = true;
                }
                Some(p) => warp.set_lane(l as usize, Lane::Blocked(Wait::ClusterBarrier(p))),
            }
        }
        if passed {
            crate::race::cluster_acquire(cx.m, cx.cta, cx.warp);
        }
        Ok(Flow::Next)
    }
}

fn try_release_cluster(m: &mut Machine<'_>, cl: u32) {
    let need = cluster_threads(m, cl);
    let c = &m.clusters[cl as usize];
    if c.arrived == 0 || c.arrived < need {
        return;
    }
    let phase = c.phase;
    let ctas = c.ctas.clone();
    let mut woken = Vec::new();
    for cta in ctas {
        for (k, w) in m.ctas[cta as usize].warps.iter_mut().enumerate() {
            for l in 0..WARP {
                if w.lane()[l] == Lane::Blocked(Wait::ClusterBarrier(phase)) {
                    w.set_lane(l, Lane::Ready);
                    w.cluster_arrival[l] = None;
                    if woken.last() != Some(&(cta, k as u32)) {
                        woken.push((cta, k as u32));
                    }
                }
            }
        }
    }
    crate::race::cluster_complete(m, cl, &woken);
    let c = &mut m.clusters[cl as usize];
    c.phase += 1;
    c.arrived = 0;
    let p = c.phase;
    m.sync_event(SyncEvent::ClusterBarrierRelease { cluster: cl, phase: p });
}

/// Threads exiting can complete barriers that wait for "all non-exited threads": default-count
/// named barriers, non-aligned partial warp arrivals, and the cluster barrier.
pub fn on_lanes_exit(m: &mut Machine<'_>, cta: u32, warp: u32, _mask: u32) -> Result<(), Stop> {
    // A warp whose remaining lanes all wait at a non-aligned barrier now counts as arrived.
    for id in 0..16u8 {
        if let Some(a) = exit_arrival(m, cta, warp, id) {
            let generation = count_arrival(m, cta, warp, &a);
            apply_arrival(m, cta, warp, &a, generation);
        }
        try_release(m, cta, id);
    }
    let cl = m.ctas[cta as usize].cluster;
    try_release_cluster(m, cl);
    let w = &m.ctas[cta as usize].warps[warp as usize];
    if w.exited() {
        let pc = (0..WARP).filter(|&l| w.launched >> l & 1 == 1).map(|l| w.pc()[l]).max().unwrap_or(0);
        crate::race::warp_exit(m, cta, warp, pc)?;
    }
    Ok(())
}
