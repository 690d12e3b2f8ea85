//! The asynchronous operations the golden bodies queue (cp.async, st.async / red.async, the
//! deferred arrive-on of cp.async.mbarrier.arrive, TMA operations): their timing, their
//! completion, and the mbarrier side of each through the MbarrierUnits.

use super::*;

#[derive(Debug, Clone)]
pub(super) enum AsyncKind {
    /// cp.async: data into shared memory at `at`.
    Copy(AsyncOp),
    /// st.async / red.async: at `at` the data and complete-tx reach the destination CTA.
    Store(AsyncOp),
    /// cp.async.mbarrier.arrive's arrive-on, once the thread's prior copies completed.
    Arrive { cta: u32, off: u32, warp: u32, lane: u32, issuing_cta: u32 },
    /// A TMA operation: at `at` a copy's data lands in destination CTA `cta` (then its
    /// complete-tx is queued to that CTA's MbarrierUnit), or a store's reads / writes are done
    /// (`cta` None).
    Tma { op: Box<TmaOp>, cta: Option<u32> },
}

#[derive(Debug, Clone)]
pub(super) struct AsyncItem {
    pub(super) seq: u64,
    pub(super) at: u64,
    pub(super) kind: AsyncKind,
    /// Its unit request is queued (Store, Arrive).
    pub(super) queued: bool,
}

impl<'p> Engine<'p> {
    /// Takes the asynchronous operations a golden body queued in the machine and times them.
    pub(super) fn take_pending(&mut self, c: u32, w: u32, copy_done: u64, store_done: u64) -> Result<(), Stop> {
        let pend = self.m.take_pending();
        for p in pend {
            match &p.op {
                AsyncOp::CpAsync { lane, .. } => {
                    self.cp_inflight.entry((c, w, *lane)).or_default().push(p.seq);
                    self.asyncs.push(Box::new(AsyncItem { seq: p.seq, at: copy_done, kind: AsyncKind::Copy(p.op), queued: false }));
                }
                AsyncOp::RemoteWrite { .. } => {
                    self.asyncs.push(Box::new(AsyncItem { seq: p.seq, at: store_done, kind: AsyncKind::Store(p.op), queued: false }));
                }
                AsyncOp::CpAsyncArrive { .. } => unreachable!("cp.async.mbarrier.arrive is executed by the engine"),
                AsyncOp::Tma(op) => match self.rtl_command(op)? {
                    Some((cmd, desc)) if matches!(**op, TmaOp::ToGlobal { .. }) => {
                        // Completed by the unit's store pulses and write acknowledgements
                        // (`clock_tma`); the placeholder keeps the run from looking idle.
                        self.asyncs.push(Box::new(AsyncItem { seq: p.seq, at: u64::MAX, kind: AsyncKind::Tma { op: op.clone(), cta: None }, queued: true }));
                        let earliest = (self.cycle + self.cfg.tma.issue_cycles).max(self.tma_op_ready(c, op));
                        let cs = &mut self.ctas[c as usize];
                        let at = cs.tma.front_end_slot(earliest, self.cfg.tma.command_cycles) + self.cfg.tma.store_start_cycles;
                        cs.tma.send_store(at, cmd, desc, TmaStore { key: p.seq, seq: p.seq, op: (**op).clone(), read: false, issued: false, unacked: 0 });
                    }
                    Some((cmd, desc)) => {
                        let TmaOp::ToShared { ctas, .. } = &**op else { unreachable!("stores are matched above") };
                        let mut dests: Vec<u32> = ctas.clone();
                        dests.sort_by_key(|d| self.m.cta_rank(*d));
                        for &d in &dests {
                            // Completed by the unit's complete-tx (`clock_tma`, `async_done`).
                            self.asyncs.push(Box::new(AsyncItem { seq: p.seq, at: u64::MAX, kind: AsyncKind::Tma { op: op.clone(), cta: Some(d) }, queued: true }));
                        }
                        let earliest = (self.cycle + self.cfg.tma.issue_cycles).max(self.tma_op_ready(c, op));
                        let cs = &mut self.ctas[c as usize];
                        let at = cs.tma.front_end_slot(earliest, self.cfg.tma.command_cycles);
                        cs.tma.send_load(at, cmd, desc, TmaJob { seq: p.seq, op: (**op).clone(), dests: dests.into() });
                    }
                    None => {
                        if matches!(**op, TmaOp::ToGlobal { .. }) && self.ctas[c as usize].tma.unit.is_some() {
                            self.ctas[c as usize].tma.stores_mixed = true;
                        }
                        self.schedule_tma(c, p.seq, (**op).clone())
                    }
                },
            }
        }
        Ok(())
    }

    pub(super) fn advance_async(&mut self) -> Result<(), Stop> {
        if self.asyncs.is_empty() {
            return Ok(());
        }
        let now = self.cycle;
        let mut k = 0;
        while k < self.asyncs.len() {
            let a = &self.asyncs[k];
            if a.queued || a.at > now {
                k += 1;
                continue;
            }
            self.active_this_cycle = true;
            match a.kind.clone() {
                AsyncKind::Copy(op) => {
                    let seq = a.seq;
                    self.asyncs.remove(k);
                    if let AsyncOp::CpAsync { cta, warp, lane, .. } = &op {
                        if let Some(v) = self.cp_inflight.get_mut(&(*cta, *warp, *lane)) {
                            v.retain(|s| *s != seq);
                        }
                    }
                    self.m.progress();
                    let waiter = match &op {
                        AsyncOp::CpAsync { cta, warp, .. } => Some((*cta, *warp)),
                        _ => None,
                    };
                    let waiting = |m: &Machine<'_>, (c, w): (u32, u32)| m.warp(c, w).lane().iter().filter(|l| matches!(l, Lane::Blocked(Wait::CpAsyncGroups(_)))).count();
                    let before = waiter.map_or(0, |cw| waiting(&self.m, cw));
                    exec::complete_async(&mut self.m, op)?;
                    if let Some((c, w)) = waiter.filter(|&cw| waiting(&self.m, cw) < before) {
                        // the wait_group's lanes were released: silicon's DEPBAR lets the warp
                        // issue `sync.cp_async_wait_cycles` later
                        let mut ws = self.ctas[c as usize].warp_mut(w as usize);
                        ws.wait_at_least(now + self.cfg.sync.cp_async_wait_cycles, Stall::AsyncWait);
                        ws.set_scoreboard_until(0);
                    }
                    let cy = self.cycle;
                    self.emit(Event::Complete { cycle: cy, seq });
                    continue;
                }
                AsyncKind::Store(AsyncOp::RemoteWrite { cta, mbar, tx, .. }) => {
                    let req = MbarrierReq { op: MbarrierOp::CompleteTx, word: ((mbar / 8) as u64).into(), tx_count: (tx as u64).into(), ..Default::default() };
                    let seq = a.seq;
                    self.asyncs[k].queued = true;
                    self.ctas[cta as usize].mbar.cluster_q.push_back(Queued { at: now, req, tag: Tag::Async { seq } });
                }
                AsyncKind::Arrive { cta, off, warp, lane, issuing_cta } => {
                    // The arrive-on triggers once every prior cp.async of the thread completed.
                    let seq = a.seq;
                    let prior = self.cp_inflight.get(&(issuing_cta, warp, lane)).is_some_and(|v| v.iter().any(|s| *s < seq));
                    if prior {
                        k += 1;
                        continue;
                    }
                    let req = MbarrierReq { op: MbarrierOp::Arrive, word: ((off / 8) as u64).into(), count: 1u64.into(), warp: (warp as u64).into(), ..Default::default() };
                    self.asyncs[k].queued = true;
                    self.ctas[cta as usize].mbar.tma_q.push_back(Queued { at: now + self.cfg.sync.cp_async_arrive_cycles, req, tag: Tag::Async { seq } });
                }
                AsyncKind::Tma { op, cta: Some(c) } => {
                    let seq = a.seq;
                    let TmaOp::ToShared { mbar, tx, at, .. } = &*op else { unreachable!("only copies into shared memory have a destination CTA") };
                    let (mbar, tx, at) = (*mbar, *tx, *at);
                    // The last beat reached CTA c: the data is there, then its complete-tx.
                    exec::tma_land_data(&mut self.m, &op, c);
                    exec::tma_land_guard(&mut self.m, &op, c);
                    self.m.progress();
                    if let Err((kind, msg)) = exec::tma_signal_target_check(&self.m, c, mbar, tx) {
                        self.asyncs.remove(k);
                        let r = self.m.report(kind, msg, Some(at));
                        let cy = self.cycle;
                        self.emit(Event::AsyncFault { cycle: cy, seq, cta: Some(c), kind });
                        r?;
                        // Warn mode: no complete-tx on an object that is not an mbarrier.
                        let effect = self.tma_effect(&op, Some(c), false);
                        self.emit(Event::TmaComplete { cycle: cy, seq, cta: Some(c), effect });
                        continue;
                    }
                    let req = MbarrierReq { op: MbarrierOp::CompleteTx, word: ((mbar / 8) as u64).into(), tx_count: (tx as u64).into(), ..Default::default() };
                    self.asyncs[k].queued = true;
                    let q = Queued { at: now + self.cfg.tma.complete_tx_cycles, req, tag: Tag::Async { seq } };
                    // The local complete-tx takes the unit's async-copy port; a remote CTA's, its
                    // cluster port (hdl/src/tma/cpl.rs `mbar_remote`).
                    if c == at.0 {
                        self.ctas[c as usize].mbar.tma_q.push_back(q);
                    } else {
                        self.ctas[c as usize].mbar.cluster_q.push_back(q);
                    }
                }
                AsyncKind::Tma { op, cta: None } => {
                    let seq = a.seq;
                    self.asyncs.remove(k);
                    self.m.progress();
                    exec::complete_async(&mut self.m, AsyncOp::Tma(op.clone()))?;
                    // A store's read event queues its write event.
                    for p in self.m.take_pending() {
                        match p.op {
                            AsyncOp::Tma(next) => self.schedule_tma(at_cta(&next), p.seq, *next),
                            other => unreachable!("a TMA completion queues only TMA events: {other:?}"),
                        }
                    }
                    let effect = self.tma_effect(&op, None, false);
                    let cy = self.cycle;
                    self.emit(Event::TmaComplete { cycle: cy, seq, cta: None, effect });
                    continue;
                }
                AsyncKind::Store(_) => unreachable!(),
            }
            k += 1;
        }
        Ok(())
    }

    /// The mbarrier side of asynchronous operation `seq` was applied by CTA `c`'s unit.
    pub(super) fn async_done(&mut self, seq: u64, c: u32, _change: Option<Option<SyncEvent>>) -> Result<(), Stop> {
        let Some(i) = self.asyncs.iter().position(|a| a.seq == seq && !matches!(a.kind, AsyncKind::Tma { cta: Some(d), .. } if d != c)) else { return Ok(()) };
        let a = self.asyncs.remove(i);
        if let AsyncKind::Tma { op, cta } = &a.kind {
            let effect = self.tma_effect(op, *cta, true);
            let cy = self.cycle;
            self.emit(Event::TmaComplete { cycle: cy, seq, cta: *cta, effect });
            return Ok(());
        }
        if let AsyncKind::Store(AsyncOp::RemoteWrite { cta, dst, data, red, .. }) = &a.kind {
            exec::apply_remote_write(&mut self.m, *cta, *dst, data, *red);
        }
        self.m.progress();
        let cy = self.cycle;
        self.emit(Event::Complete { cycle: cy, seq });
        Ok(())
    }
}
