//! Non-bulk asynchronous copies and their completion mechanisms: cp.async with commit/wait
//! groups (PTX 9.7.9.25.3), cp.async.mbarrier.arrive (PTX 9.7.13.15.15), st.async (PTX 9.7.9.12)
//! and red.async (PTX 9.7.13.7). Each issues an [`AsyncOp`] that the scheduler completes at a
//! later step; [`complete_async`] applies it.

use super::mbarrier::{arrive_on, describe, locate, on_phase_complete, Obj};
use super::{lanes, Cx, Exec, Flow, Stop, R};
use crate::finding::FindingKind;
use crate::machine::{AsyncOp, Lane, Machine, Place, Wait, WARP};
use crate::mbarrier::{self as mb, Arrive};
use crate::retire::SyncEvent;
use hopsync_firmware::ir::{Instr, Mod, Operand};
use hopsync_firmware::ops::op;

/// cp.async (PTX 9.7.9.25.3): copies cp-size bytes (src-size of them from global, the rest zero)
/// into shared memory asynchronously; the copy joins the thread's open group.
impl Exec for op::CpAsync {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        for l in lanes(cx.mask) {
            let size = cx.src(i, 2, l) as usize;
            if !matches!(size, 4 | 8 | 16) || (i.has(Mod::Cg) && size != 16) {
                return super::unsupported(cx, i, "cp.async cp-size other than 4, 8, 16 (16 only for .cg)");
            }
            let src_size = if i.operands.len() > 3 { (cx.src(i, 3, l) as usize).min(size) } else { size };
            let dst = cx.place(i, 0, l, size)?;
            // The source is generic-addressed global memory.
            let sa = cx.addr(i, 1, l);
            let src = match cx.m.resolve(cx.cta, cx.warp, l, Some(Mod::Global), sa, size) {
                Ok(p) => p,
                Err(b) => {
                    cx.finding(b.kind, l, b.msg)?;
                    continue;
                }
            };
            crate::race::thread_access(cx.m, cx.cta, cx.warp, l, cx.pc, src, size, crate::race::Access::Read)?;
            let mut data = cx.m.read(src, size).to_vec();
            data[src_size..].fill(0);
            let Place::Shared(c, off) = dst else {
                return super::unsupported(cx, i, "cp.async to a non-shared destination");
            };
            let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
            let group = warp.cp_open_group[l as usize];
            let ready = cx.m.async_ready_at();
            cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].cp_inflight.push((l, group, ready));
            cx.m.seq += 1;
            let seq = cx.m.seq;
            crate::race::issued(cx.m, seq, cx.cta, cx.warp, l, cx.pc, crate::race::CP, false);
            cx.m.pending.push(crate::machine::Pending {
                ready_at: ready,
                seq,
                issued_at: (cx.cta, cx.warp, cx.pc),
                op: AsyncOp::CpAsync { cta: c, warp: cx.warp, lane: l, dst: off as u32, data, group },
            });
            let _ = cx.cta;
        }
        Ok(Flow::Next)
    }
}

/// cp.async.commit_group: closes the thread's open group.
impl Exec for op::CpAsyncCommitGroup {
    fn exec(cx: &mut Cx<'_, '_>, _: &Instr) -> R {
        let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
        for l in lanes(cx.mask) {
            warp.cp_open_group[l as usize] += 1;
        }
        Ok(Flow::Next)
    }
}

/// Whether `cp.async.wait_group n` is satisfied for `lane`: "wait till only N or fewer of the most
/// recent cp.async-groups are pending and all the prior cp.async-groups committed by the executing
/// threads are complete" (PTX 9.7.9.25.3, cp.async.wait_group). Groups may complete out of order,
/// so counting the pending groups is not enough: every committed group but the `n` most recent
/// must be complete. Copies of the open (uncommitted) group are not waited for.
fn groups_done(m: &Machine<'_>, cta: u32, warp: u32, lane: u32, n: u32) -> bool {
    let w = &m.ctas[cta as usize].warps[warp as usize];
    let older = w.cp_open_group[lane as usize].saturating_sub(n as u64);
    !w.cp_inflight.iter().any(|(l, g, _)| *l == lane && *g < older)
}

/// The lanes that execute a wait_group together wait together: each thread only needs its own
/// groups complete, but waiting longer is always allowed, and the warp executes the wait as one
/// instruction (on sm_90 a warp-wide dependency barrier). Releasing lanes one by one would make the
/// warp diverge where the program does not, and a following `.aligned` barrier (`bar.sync`, PTX
/// 9.7.13.1) would then be reported as executed divergently.
fn wait_groups(cx: &mut Cx<'_, '_>, n: u32) -> R {
    if lanes(cx.mask).any(|l| !groups_done(cx.m, cx.cta, cx.warp, l, n)) {
        cx.block(cx.mask, Wait::CpAsyncGroups(n));
    } else {
        crate::race::cp_acquire(cx.m, cx.cta, cx.warp);
    }
    Ok(Flow::Next)
}

/// Wakes the lanes of a warp blocked in cp.async.wait_group once the condition holds for every
/// lane that waits with them (same wait instruction, same N): see [`wait_groups`].
fn wake_group_waiters(m: &mut Machine<'_>, cta: u32, warp: u32) {
    let w = &m.ctas[cta as usize].warps[warp as usize];
    let mut sets: Vec<(u32, u32, u32)> = Vec::new(); // (resume pc, n, lanes)
    for l in 0..WARP {
        if let Lane::Blocked(Wait::CpAsyncGroups(n)) = w.lane()[l] {
            match sets.iter_mut().find(|(pc, k, _)| *pc == w.pc()[l] && *k == n) {
                Some(s) => s.2 |= 1 << l,
                None => sets.push((w.pc()[l], n, 1 << l)),
            }
        }
    }
    for (_, n, mask) in sets {
        if lanes(mask).all(|l| groups_done(m, cta, warp, l, n)) {
            let w = &mut m.ctas[cta as usize].warps[warp as usize];
            for l in lanes(mask) {
                w.set_lane(l as usize, Lane::Ready);
            }
            crate::race::cp_acquire(m, cta, warp);
        }
    }
}

/// cp.async.wait_group N: waits until every committed group of the thread but the N most recent is
/// complete (see [`groups_done`]).
impl Exec for op::CpAsyncWaitGroup {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let n = cx.src(i, 0, cx.first_lane()) as u32;
        wait_groups(cx, n)
    }
}

/// cp.async.wait_all = commit_group; wait_group 0.
impl Exec for op::CpAsyncWaitAll {
    fn exec(cx: &mut Cx<'_, '_>, _: &Instr) -> R {
        let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
        for l in lanes(cx.mask) {
            warp.cp_open_group[l as usize] += 1;
        }
        wait_groups(cx, 0)
    }
}

/// The mbarrier operand of st.async / red.async must be in the same CTA as the destination
/// (PTX 9.7.9.12: "mbar ... in the same CTA as the destination").
fn remote_target(cx: &mut Cx<'_, '_>, i: &Instr, lane: u32, size: usize) -> Result<Option<(u32, u32, Obj)>, Stop> {
    let dst = cx.place(i, 0, lane, size)?;
    let Place::Shared(c, off) = dst else {
        cx.finding(FindingKind::MemOutOfBounds, lane, "st.async/red.async destination is not in shared memory".into())?;
        return Ok(None);
    };
    let o = locate(cx, i, 2, lane)?;
    if o.cta != c {
        cx.finding(FindingKind::AsyncMbarrierMismatch, lane, format!("destination is in cta {c} but the mbarrier is in cta {}", o.cta))?;
        return Ok(None);
    }
    Ok(Some((c, off as u32, o)))
}

/// st.async (PTX 9.7.9.12): a store to another CTA's shared memory whose completion performs
/// complete-tx of its size on the mbarrier beside the destination.
impl Exec for op::StAsync {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let eb = t.type_bytes().unwrap_or(4) as usize;
        let n = if i.has(Mod::V4) { 4 } else if i.has(Mod::V2) { 2 } else { 1 };
        for l in lanes(cx.mask) {
            let Some((c, off, o)) = remote_target(cx, i, l, eb * n)? else { continue };
            let vals: Vec<u64> = match &i.operands[1] {
                Operand::Vector(v) => v.iter().map(|x| match x {
                    Operand::Reg(r) => cx.reg(*r, l),
                    Operand::Imm(k) => *k as u64,
                    _ => 0,
                }).collect(),
                _ => vec![cx.src(i, 1, l)],
            };
            let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()[..eb].to_vec()).collect();
            cx.push_async(AsyncOp::RemoteWrite { cta: c, dst: off, data, red: None, mbar: o.off, tx: (eb * n) as u32 });
        }
        Ok(Flow::Next)
    }
}

/// red.async (PTX 9.7.13.7): a reduction into another CTA's shared memory completing tx on the
/// mbarrier beside it.
impl Exec for op::RedAsync {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let eb = t.type_bytes().unwrap_or(4) as usize;
        let op = [Mod::Add, Mod::Min, Mod::Max, Mod::Inc, Mod::Dec, Mod::And, Mod::Or, Mod::Xor].into_iter().find(|m| i.has(*m)).unwrap_or(Mod::Add);
        for l in lanes(cx.mask) {
            let Some((c, off, o)) = remote_target(cx, i, l, eb)? else { continue };
            let v = cx.src(i, 1, l);
            cx.push_async(AsyncOp::RemoteWrite { cta: c, dst: off, data: v.to_le_bytes()[..eb].to_vec(), red: Some((op, t)), mbar: o.off, tx: eb as u32 });
        }
        Ok(Flow::Next)
    }
}

/// The data half of a completed st.async / red.async: the store (or reduction) into shared memory
/// of `cta` at `dst` (its complete-tx half follows in [`complete_async`]; the RTL engine sends it
/// to the mbarrier unit instead).
pub fn apply_remote_write(m: &mut Machine<'_>, cta: u32, dst: u32, data: &[u8], red: Option<(Mod, Mod)>) {
    let p = Place::Shared(cta, dst as usize);
    match red {
        None => m.write(p, data),
        Some((op, t)) => {
            let n = data.len();
            let old = m.read_u64(p, n);
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(data);
            let new = super::mem::atomic_op(op, t, old, u64::from_le_bytes(b), 0);
            m.write(p, &new.to_le_bytes()[..n]);
        }
    }
}

/// Applies a completed asynchronous operation.
pub fn complete_async(m: &mut Machine<'_>, op: AsyncOp) -> Result<(), Stop> {
    match op {
        AsyncOp::CpAsync { cta, warp, lane, dst, data, group } => {
            crate::race::op_access(m, Place::Shared(cta, dst as usize), data.len(), true, false)?;
            m.write(Place::Shared(cta, dst as usize), &data);
            // Its epoch becomes what the warp's wait_group acquires before the waiters wake.
            if let Some(s) = m.race.completing {
                crate::race::retire_op(m, s);
            }
            let w = &mut m.ctas[cta as usize].warps[warp as usize];
            if let Some(k) = w.cp_inflight.iter().position(|(l, g, _)| *l == lane && *g == group) {
                w.cp_inflight.remove(k);
            }
            // Wake the waiting lanes whose wait_group condition now holds.
            wake_group_waiters(m, cta, warp);
            Ok(())
        }
        AsyncOp::CpAsyncArrive { cta, offset, noinc: _, warp, lane } => {
            let o = Obj { cta, off: offset, remote: false };
            crate::race::mbar_op_release(m, cta, offset);
            m.note_arrival(cta, offset, cta, warp, true);
            match arrive_on(m, o, Arrive { count: 1, ..Default::default() }) {
                Ok(_) => Ok(()),
                Err(k) => {
                    let d = describe(m, o);
                    m.report(k, format!("asynchronous arrive-on of cp.async.mbarrier.arrive: {d}"), Some((cta, warp, lane, 0)))
                }
            }
        }
        AsyncOp::Tma(op) => super::tma::complete(m, *op),
        AsyncOp::RemoteWrite { cta, dst, data, red, mbar, tx } => {
            crate::race::op_access(m, Place::Shared(cta, dst as usize), data.len(), true, red.is_some())?;
            apply_remote_write(m, cta, dst, &data, red);
            crate::race::mbar_op_release(m, cta, mbar);
            let o = Obj { cta, off: mbar, remote: true };
            if !m.ctas[cta as usize].mbarriers.contains_key(&mbar) {
                return m.report(FindingKind::MbarrierUninitialized, format!("complete-tx of an asynchronous store on cta {cta} shared 0x{mbar:x}, which holds no valid mbarrier"), None);
            }
            let old = m.read_mbar_word(cta, mbar);
            match mb::complete_tx(old, tx) {
                Ok((new, done)) => {
                    m.write(Place::Shared(cta, mbar as usize), &new.to_le_bytes());
                    m.sync_event(SyncEvent::Mbarrier { cta, offset: mbar, old, new });
                    if done {
                        on_phase_complete(m, o);
                    }
                    Ok(())
                }
                Err(k) => {
                    let d = describe(m, o);
                    m.report(k, format!("complete-tx of {tx} bytes: {d}"), None)
                }
            }
        }
    }
}
