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
pub fn named_operands(cx: &mut Cx<'_, '_>, i: &Instr, ai: usize, bi: usize, has_b: bool) -> Result<Option<(u8, Option<u32>)>, Stop> {
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
pub fn aligned_arrival(cx: &mut Cx<'_, '_>, id: u8, aligned: bool, lane0: u32) -> Result<Option<(u32, u32)>, Stop> {
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
    let blocked = matches!(w.lane[l as usize], Lane::Blocked(_));
    // A blocked lane's pc already points past the instruction it waits in.
    let pc = if blocked { w.pc[l as usize].saturating_sub(1) } else { w.pc[l as usize] };
    let line = cx.m.module().kernel.body.get(pc as usize).map(|i| i.loc.line).unwrap_or(0);
    if w.held() >> l & 1 == 1 {
        format!("waiting at the join on line {line}")
    } else if blocked {
        format!("blocked at line {line}")
    } else {
        format!("at line {line}")
    }
}

fn bar_exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
    let aligned = i.op == hopsync_firmware::Opcode::Bar || i.has(Mod::Aligned);
    let red = i.has(Mod::Red);
    let sync = i.has(Mod::Sync) || red;
    // Operand positions: red forms start with the destination.
    let (ai, bi, ci) = if red { (1, Some(2), 3) } else { (0, Some(1), 0) };
    let has_b = if red { i.operands.len() == 4 } else { i.operands.len() == 2 };
    let ci = if red { if has_b { ci } else { 2 } } else { ci };
    let lane0 = cx.first_lane();
    let Some((id, count)) = named_operands(cx, i, ai, bi.unwrap_or(1), has_b)? else { return Ok(Flow::Next) };
    let Some((live, arriving)) = aligned_arrival(cx, id, aligned, lane0)? else { return Ok(Flow::Next) };
    let dst = if red {
        match &i.operands[0] {
            Operand::Reg(r) => Some(r.0),
            _ => None,
        }
    } else {
        None
    };
    let red_op = [Mod::Popc, Mod::And, Mod::Or].into_iter().find(|m| i.has(*m));
    if arriving != live {
        // Non-aligned: these lanes wait for the rest of the warp, which may reach the barrier at
        // another instruction or exit. Each thread contributes its own predicate and receives the
        // result in its own destination, so remember what each lane executed.
        let own: Vec<PartialArrival> = lanes(cx.mask)
            .map(|l| PartialArrival { id, lane: l, count, sync, red: if red { red_op } else { None }, pred: red && cx.src(i, ci, l) & 1 == 1, dst })
            .collect();
        let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
        warp.bar_partial[id as usize] = arriving;
        warp.bar_partial_lanes.extend(own);
        cx.block(cx.mask, Wait::NamedBarrierWarp(id));
        return Ok(Flow::Next);
    }
    let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    warp.bar_partial[id as usize] = 0;
    let earlier = take_partial(warp, id);
    // Every arriving lane: this instruction's lanes, and those that waited earlier in the warp at
    // another instruction, with their own predicate, destination and sync/arrive.
    let per_lane: Vec<(u32, bool, Option<u32>, bool)> = lanes(arriving)
        .map(|l| match earlier.iter().find(|e| e.lane == l && cx.mask >> l & 1 == 0) {
            Some(e) => (l, e.pred, e.dst, e.sync),
            None => (l, red && cx.src(i, ci, l) & 1 == 1, dst, sync),
        })
        .collect();
    let preds: Vec<(u32, bool, Option<u32>)> = if red { per_lane.iter().map(|&(l, p, d, _)| (l, p, d)).collect() } else { Vec::new() };
    let all_threads = cta_threads(cx.m, cx.cta);
    let (cta, w) = (cx.cta, cx.warp);
    let b = &mut cx.m.ctas[cta as usize].bars[id as usize];
    if b.arrived_warps >> w & 1 == 1 {
        let msg = format!("warp {w} arrives on barrier {id} a second time before it completes ({} of {} threads arrived)", b.arrived, b.expected.unwrap_or(all_threads));
        cx.finding(FindingKind::BarrierWarpArrivedTwice, lane0, msg)?;
        return Ok(Flow::Next);
    }
    let b = &mut cx.m.ctas[cta as usize].bars[id as usize];
    if b.arrived > 0 && b.expected != count {
        let says = |c: Option<u32>| c.map(|n| format!("thread count {n}")).unwrap_or_else(|| "no thread count (all threads of the CTA)".into());
        let msg = format!(
            "barrier {id} is in use with {} ({} threads arrived, warps {:#x}); this warp gives {}",
            says(b.expected),
            b.arrived,
            b.arrived_warps,
            says(count)
        );
        cx.finding(FindingKind::BarrierCountMismatch, lane0, msg)?;
    }
    let b = &mut cx.m.ctas[cta as usize].bars[id as usize];
    if b.arrived > 0 && (b.red.is_some() != red) {
        let (was, now) = if red { ("bar.sync/bar.arrive", "bar.red") } else { ("bar.red", "bar.sync/bar.arrive") };
        let msg = format!("barrier {id} is active with {was} ({} threads arrived, warps {:#x}); this warp uses {now} on it", b.arrived, b.arrived_warps);
        cx.finding(FindingKind::BarrierRedMixed, lane0, msg)?;
    }
    let b = &mut cx.m.ctas[cta as usize].bars[id as usize];
    if b.arrived == 0 {
        b.expected = count;
        b.red = if red { red_op } else { None };
        b.popc = 0;
        b.all = true;
        b.any = false;
        b.red_dst.clear();
    }
    for (l, p, d) in &preds {
        b.popc += *p as u32;
        b.all &= *p;
        b.any |= *p;
        if let Some(d) = d {
            b.red_dst.push((w, *l, *d));
        }
    }
    b.arrived += WARP as u32;
    b.arrived_warps |= 1 << w;
    let expected = b.expected.unwrap_or(all_threads);
    let generation = b.generation;
    if b.arrived > expected {
        let msg = format!("barrier {id}: {} threads arrived but the thread count is {expected}", b.arrived);
        cx.finding(FindingKind::BarrierCountTooSmall, lane0, msg)?;
    }
    // `.sync`/`.red` lanes wait for the barrier to complete; `.arrive` lanes (those blocked
    // earlier waiting for the rest of the warp included) go on.
    let warp = &mut cx.m.ctas[cta as usize].warps[w as usize];
    for &(l, _, _, s) in &per_lane {
        if s {
            warp.lane[l as usize] = Lane::Blocked(Wait::NamedBarrier(id, generation));
        } else if warp.lane[l as usize] == Lane::Blocked(Wait::NamedBarrierWarp(id)) {
            warp.lane[l as usize] = Lane::Ready;
        }
    }
    cx.m.progress();
    try_release(cx.m, cta, id);
    Ok(Flow::Next)
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
    let c = &mut m.ctas[cta as usize];
    for w in c.warps.iter_mut() {
        for l in 0..WARP {
            if w.lane[l] == Lane::Blocked(Wait::NamedBarrier(id, generation)) {
                w.lane[l] = Lane::Ready;
            }
        }
    }
    let b = &mut c.bars[id as usize];
    b.arrived = 0;
    b.arrived_warps = 0;
    b.generation += 1;
    b.red = None;
    b.red_dst.clear();
    for (w, l, r) in dsts {
        let reg = hopsync_firmware::ir::RegId(r);
        let is_pred = m.module().kernel.regs[r as usize].ty == Mod::Pred;
        let v = if is_pred { result & 1 } else { result & 0xffff_ffff };
        m.ctas[cta as usize].warps[w as usize].regs[r as usize * WARP + l as usize] = v;
        if m.rec.is_some() && m.rec.as_ref().is_some_and(|r| r.cta == cta && r.warp == w) {
            m.log_reg(reg, l, v);
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

/// barrier.cluster.arrive (PTX 9.7.13.3): each thread arrives once per phase; the phase completes
/// when every non-exited thread of the cluster arrived.
impl Exec for op::BarrierClusterArrive {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let live = cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].live();
        if i.has(Mod::Aligned) && cx.mask != live {
            cx.finding(FindingKind::ClusterBarrierAlignedDivergent, cx.first_lane(), format!("`.aligned` barrier.cluster.arrive executed by lanes {:#010x} of live {live:#010x}", cx.mask))?;
        }
        let cl = cx.m.ctas[cx.cta as usize].cluster;
        let phase = cx.m.clusters[cl as usize].phase;
        for l in lanes(cx.mask) {
            if cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].cluster_arrival[l as usize].is_some() {
                cx.finding(FindingKind::ClusterBarrierArriveTwice, l, format!("thread arrives on the cluster barrier again before waiting (phase {phase})"))?;
                continue;
            }
            cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].cluster_arrival[l as usize] = Some(phase);
            cx.m.clusters[cl as usize].arrived += 1;
        }
        cx.m.progress();
        try_release_cluster(cx.m, cl);
        Ok(Flow::Next)
    }
}

/// barrier.cluster.wait (PTX 9.7.13.3): waits for the phase this thread arrived in.
impl Exec for op::BarrierClusterWait {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let live = cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].live();
        if i.has(Mod::Aligned) && cx.mask != live {
            cx.finding(FindingKind::ClusterBarrierAlignedDivergent, cx.first_lane(), format!("`.aligned` barrier.cluster.wait executed by lanes {:#010x} of live {live:#010x}", cx.mask))?;
        }
        let cl = cx.m.ctas[cx.cta as usize].cluster;
        let now = cx.m.clusters[cl as usize].phase;
        let mut block = 0u32;
        for l in lanes(cx.mask) {
            let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
            match warp.cluster_arrival[l as usize] {
                None => {
                    cx.finding(FindingKind::ClusterBarrierWaitWithoutArrive, l, "barrier.cluster.wait without a barrier.cluster.arrive in this phase".into())?;
                }
                Some(p) if p < now => warp.cluster_arrival[l as usize] = None,
                Some(p) => {
                    block |= 1 << l;
                    warp.lane[l as usize] = Lane::Blocked(Wait::ClusterBarrier(p));
                }
            }
        }
        let _ = block;
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
    for cta in ctas {
        for w in m.ctas[cta as usize].warps.iter_mut() {
            for l in 0..WARP {
                if w.lane[l] == Lane::Blocked(Wait::ClusterBarrier(phase)) {
                    w.lane[l] = Lane::Ready;
                    w.cluster_arrival[l] = None;
                }
            }
        }
    }
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
    let live = m.ctas[cta as usize].warps[warp as usize].live();
    for id in 0..16u8 {
        let w = &mut m.ctas[cta as usize].warps[warp as usize];
        let partial = w.bar_partial[id as usize];
        if partial != 0 && partial & live == live {
            // The waiting lanes become the warp's arrival, with what they executed: the first of
            // them starts a new generation (its count and operation), reductions add their
            // predicates and get the result; `.sync`/`.red` lanes wait for completion.
            w.bar_partial[id as usize] = 0;
            let lanes_info = take_partial(w, id);
            let b = &mut m.ctas[cta as usize].bars[id as usize];
            if let Some(first) = lanes_info.first() {
                if b.arrived == 0 {
                    b.expected = first.count;
                    b.red = first.red;
                    b.popc = 0;
                    b.all = true;
                    b.any = false;
                    b.red_dst.clear();
                }
            }
            for e in lanes_info.iter().filter(|e| e.red.is_some()) {
                b.popc += e.pred as u32;
                b.all &= e.pred;
                b.any |= e.pred;
                if let Some(d) = e.dst {
                    b.red_dst.push((warp, e.lane, d));
                }
            }
            let generation = b.generation;
            b.arrived += WARP as u32;
            b.arrived_warps |= 1 << warp;
            let w = &mut m.ctas[cta as usize].warps[warp as usize];
            for l in lanes(partial) {
                let sync = lanes_info.iter().find(|e| e.lane == l).map(|e| e.sync).unwrap_or(true);
                w.lane[l as usize] = if sync { Lane::Blocked(Wait::NamedBarrier(id, generation)) } else { Lane::Ready };
            }
        }
        try_release(m, cta, id);
    }
    let cl = m.ctas[cta as usize].cluster;
    try_release_cluster(m, cl);
    Ok(())
}
