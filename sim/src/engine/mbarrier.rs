//! The mbarrier port: each CTA's `MbarrierUnit` with its three request ports (the CTA's warps,
//! the async-copy/TMA port, the cluster port), the in-flight mbarrier instructions of its warps
//! (`exec::mbar_plan`'s steps and the unit's answers), the mirror of the unit's bank writes into
//! the golden machine's shared memory, and the retire (`exec::mbar_apply`).

use super::*;

/// What an MbarrierUnit request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tag {
    /// Request `req` of part `part` of the in-flight instruction of (cta, warp).
    Part { cta: u32, warp: u32, part: u32, req: u32 },
    /// The mbarrier side of asynchronous operation `seq`.
    Async { seq: u64 },
}

/// A CTA's MbarrierUnit and its three request ports (local, async-copy/TMA, cluster).
pub(super) struct MbarPort {
    /// The unit.
    pub(super) unit: MbarUnit,
    /// Requests of the CTA's own warps.
    pub(super) local_q: VecDeque<Queued<MbarrierReq>>,
    /// The async-copy port: cp.async arrive-ons, the TMA engine's local complete-tx.
    pub(super) tma_q: VecDeque<Queued<MbarrierReq>>,
    /// The cluster port: other CTAs' remote operations and complete-tx.
    pub(super) cluster_q: VecDeque<Queued<MbarrierReq>>,
    /// The request accepted last cycle (in the unit's stage 2 after this cycle's edge: its
    /// response and write are seen then).
    pub(super) s1: Option<Tag>,
    /// The unit has work in its pipeline until this cycle.
    pub(super) busy_until: u64,
    /// Warps suspended in the unit's waiter table.
    pub(super) suspended: u32,
}

impl MbarPort {
    /// A port with `unit` and nothing queued.
    pub(super) fn new(unit: MbarUnit) -> MbarPort {
        MbarPort { unit, local_q: VecDeque::new(), tma_q: VecDeque::new(), cluster_q: VecDeque::new(), s1: None, busy_until: 0, suspended: 0 }
    }

    /// No request is queued or in the unit's pipeline, and no warp is suspended in it.
    pub(super) fn quiet(&self) -> bool {
        self.local_q.is_empty() && self.tma_q.is_empty() && self.cluster_q.is_empty() && self.s1.is_none() && self.suspended == 0
    }
}

/// One step of an mbarrier instruction in flight (`exec::MbarStep`): its unit requests (one,
/// or expect-tx then arrive for a merged multi-lane `.expect_tx` arrive) and what the unit
/// answered.
#[derive(Debug, Clone)]
pub(super) struct Part {
    pub(super) step: MbarStep,
    pub(super) reqs: Vec<MbarrierReq>,
    pub(super) remote: bool,
    pub(super) got: usize,
    pub(super) accepted: usize,
    pub(super) first_state: Option<u64>,
    pub(super) old: Option<u64>,
    pub(super) new: Option<u64>,
    pub(super) phase_after: u64,
    pub(super) wait: Option<bool>,
    pub(super) suspended: bool,
    /// Was suspended in the unit and woken by its phase's completion (its answer takes
    /// `sync.mbarrier_wake_cycles` more).
    pub(super) woken: bool,
    pub(super) pending_count: u64,
    /// Lockstep: the word before the arrive half of a merged multi-lane `.expect_tx` arrive
    /// whose expect-tx half was handed to the golden model on its own ([`Event::MbarPart`] with
    /// `half`): the part's own word change then starts there (another operation may have changed
    /// the word between the halves).
    pub(super) after_half: Option<u64>,
}

impl Part {
    pub(super) fn new(step: MbarStep, reqs: Vec<MbarrierReq>, remote: bool) -> Part {
        Part { step, reqs, remote, got: 0, accepted: 0, first_state: None, old: None, new: None, phase_after: 0, wait: None, suspended: false, woken: false, pending_count: 0, after_half: None }
    }
    /// The word change of the part for records and the lockstep: from the word before it (or
    /// after its expect-tx half, when that half was handed over on its own) to the word after.
    pub(super) fn change(&self) -> Option<SyncEvent> {
        match (self.after_half.or(self.old), self.new) {
            (Some(old), Some(new)) => Some(SyncEvent::Mbarrier { cta: self.step.obj.cta, offset: self.step.obj.off, old, new }),
            _ => None,
        }
    }
    pub(super) fn done(&self) -> bool {
        self.got == self.reqs.len() && !self.suspended
    }
    /// What the unit did, for `exec::mbar_apply`.
    pub(super) fn outcome(&self) -> MbarOutcome {
        let completed = match (self.old, self.new) {
            (Some(a), Some(b)) => (a >> 63) != (b >> 63),
            _ => false,
        };
        MbarOutcome { old: self.first_state.unwrap_or(0), completed, phase_after: self.phase_after, wait: self.wait.unwrap_or(false), pending_count: self.pending_count }
    }
}

/// The unit requests of one step of warp `w`'s instruction (`several`: the instruction has more
/// than one step; `converged`: it runs in every lane of the warp that has not exited).
fn unit_requests(st: &MbarStep, w: u32, several: bool, converged: bool, cfg: &SmConfig) -> Vec<MbarrierReq> {
    let req = |op: MbarrierOp| MbarrierReq { op, word: ((st.obj.off / 8) as u64).into(), warp: (w as u64).into(), ..Default::default() };
    match st.op {
        MbarStepOp::Init { count } => vec![MbarrierReq { count: count.min(u32::MAX as u64).into(), ..req(MbarrierOp::Init) }],
        MbarStepOp::Inval => vec![req(MbarrierOp::Inval)],
        MbarStepOp::Tx { complete, tx } => {
            vec![MbarrierReq { tx_count: tx.min(u32::MAX as u64).into(), ..req(if complete { MbarrierOp::CompleteTx } else { MbarrierOp::ExpectTx }) }]
        }
        MbarStepOp::Arrive { count, tx, drop, no_complete, expect_tx, .. } => {
            let one = st.lanes.count_ones() == 1;
            let (arrive_op, expect_op) = match (drop, no_complete, expect_tx) {
                (false, true, _) => (MbarrierOp::ArriveNoComplete, None),
                (true, true, _) => (MbarrierOp::ArriveDropNoComplete, None),
                (false, false, true) if one => (MbarrierOp::ArriveExpectTx, None),
                (true, false, true) if one => (MbarrierOp::ArriveDropExpectTx, None),
                (false, false, true) => (MbarrierOp::Arrive, Some(MbarrierOp::ExpectTx)),
                (true, false, true) => (MbarrierOp::ArriveDrop, Some(MbarrierOp::ExpectTx)),
                (false, false, false) => (MbarrierOp::Arrive, None),
                (true, false, false) => (MbarrierOp::ArriveDrop, None),
            };
            let mut rs = Vec::with_capacity(2);
            if let Some(e) = expect_op {
                // A merged multi-lane .expect_tx arrive: expect-tx of the summed bytes, then the
                // arrive of the summed count (the unit's .expect_tx ops arrive with count 1).
                rs.push(MbarrierReq { tx_count: tx.into(), ..req(e) });
            }
            rs.push(MbarrierReq { count: count.into(), tx_count: tx.into(), ..req(arrive_op) });
            rs
        }
        MbarStepOp::Wait { parity, arg, try_wait, suspend_hint_ns } => {
            // The unit's waiter table holds one try_wait per warp: a warp waiting on several
            // (object, phase) pairs at once tests them without suspending (try_wait may return
            // false at once).
            let op = match (parity, try_wait && !several) {
                (false, false) => MbarrierOp::TestWait,
                (true, false) => MbarrierOp::TestWaitParity,
                (false, true) => MbarrierOp::TryWait,
                (true, true) => MbarrierOp::TryWaitParity,
            };
            let mut r = req(op);
            if parity {
                r.phase_parity = arg & 1 == 1;
            } else {
                r.token = MbarrierWord::from_u64(arg);
            }
            // How long the unit may hold the warp (calibration/poll_rate.ptx, H100 2026-11-27):
            // silicon suspends a converged warp's try_wait, its first try included, until the
            // phase completes or its own limit, whatever the hint (`sync.try_wait_hint_limit_ns`,
            // val_try_wait_hint.ptx: hints 100..20000 ns; `sync.try_wait_suspend_limit_ns`
            // without one); a diverged warp's TRYWAIT answers at once (lane 0 alone polls a
            // try_wait loop every 154 cycles, mbarrier.ptx's one thread gets false in 41) and,
            // with a hint, sleeps that long in the NANOSLEEP.SYNCS ptxas puts after it (mbarrier.ptx:
            // 2000 ns answers after 4025 cycles).
            let limit_ns = match (try_wait, converged, suspend_hint_ns) {
                (false, _, _) => None,
                (true, true, Some(_)) => Some(cfg.sync.try_wait_hint_limit_ns),
                (true, true, None) => Some(cfg.sync.try_wait_suspend_limit_ns),
                (true, false, Some(hint)) => Some((hint as f64).min(cfg.sync.nanosleep_max_ns)),
                (true, false, None) => None,
            };
            if let Some(ns) = limit_ns {
                // (kept when the try_wait became a test: the unit ignores it there)
                r.suspend_time_hint = cfg.ns_to_cycles(ns).min(u32::MAX as u64 - 4).into();
                r.has_suspend_time_hint = true;
            }
            vec![r]
        }
        MbarStepOp::PendingCount { token } => vec![MbarrierReq { token: MbarrierWord::from_u64(token), ..req(MbarrierOp::PendingCount) }],
        // Without .noinc the pending count is raised at issue (the unit's CpAsyncArriveInc); the
        // arrive-on itself comes later from the async-copy path.
        MbarStepOp::CpAsyncArrive { noinc: true } => Vec::new(),
        MbarStepOp::CpAsyncArrive { noinc: false } => vec![req(MbarrierOp::CpAsyncArriveInc)],
    }
}

impl<'p> Engine<'p> {
    pub(super) fn clock_mbar(&mut self, c: u32, now: u64) -> Result<(), Stop> {
        // Waveforms show every edge of a unit with suspended warps (no idle fast-forward).
        let observe = self.probe.is_some();
        let cs = &mut self.ctas[c as usize];
        let head = |q: &VecDeque<Queued<MbarrierReq>>| q.front().filter(|h| h.at <= now).map(|h| h.req);
        let inputs = MbarInputs { local: head(&cs.mbar.local_q), tma: head(&cs.mbar.tma_q), cluster: head(&cs.mbar.cluster_q) };
        let has_input = inputs.local.is_some() || inputs.tma.is_some() || inputs.cluster.is_some();
        // Suspended warps alone, or the pipeline drained before `busy_until`: an edge that only
        // counts cycles toward no deadline is skipped (owed to the unit's counter,
        // `MbarUnit::skip_idle_edge`; waveforms show every edge of a busy unit).
        if !has_input && cs.mbar.s1.is_none() {
            let quiet = cs.mbar.busy_until <= now && cs.mbar.suspended == 0;
            if quiet || (!observe && cs.mbar.unit.skip_idle_edge()) {
                return Ok(());
            }
        }
        self.active_this_cycle = true;
        self.unit_edges += 1;
        let out = cs.mbar.unit.cycle(&inputs);
        let accepted = if out.local_ready {
            cs.mbar.local_q.pop_front()
        } else if out.tma_ready {
            cs.mbar.tma_q.pop_front()
        } else if out.cluster_ready {
            cs.mbar.cluster_q.pop_front()
        } else {
            None
        };
        let s1 = cs.mbar.s1.take();
        cs.mbar.s1 = accepted.map(|q| q.tag);
        if has_input || s1.is_some() {
            cs.mbar.busy_until = now + 4;
        }
        if let Some(Tag::Part { cta, warp, part, .. }) = accepted.map(|q| q.tag) {
            if let Some(p) = self.ctas[cta as usize].warps[warp as usize].op_mut().and_then(|o| o.parts.get_mut(part as usize)) {
                p.accepted += 1;
            }
        }
        // A wake seen now was decided at an earlier edge (the waiter table registers its
        // inputs) than the stage-2 write seen with it: retire the woken try_wait first, so that the event
        // stream (and the golden model) sees it before that write. A timeout decided one edge
        // before a completing write returns false (gen seed 5012, every-size options).
        if out.wake.valid {
            self.wake(c, out.wake.warp.index() as u32, out.wake.completed)?;
        }
        // The operation in stage 2: its write, response and finding.
        if let Some(tag) = s1 {
            let change = out.write.map(|(word, new, valid)| self.m.mirror_mbar_write(c, word * 8, new, valid));
            if out.fault.valid {
                self.unit_fault(c, tag, out.fault.kind.name())?;
            }
            match tag {
                Tag::Part { cta, warp, part, req } => self.part_result(cta, warp, part, req, change, if out.resp.valid { Some(out.resp) } else { None })?,
                Tag::Async { seq } => self.async_done(seq, c, change)?,
            }
        }
        Ok(())
    }

    pub(super) fn unit_fault(&mut self, unit_cta: u32, tag: Tag, name: Option<&str>) -> Result<(), Stop> {
        let kind = finding_kind(name)?;
        match tag {
            Tag::Part { cta, warp, part, .. } => {
                let (pc, lane, obj) = match self.ctas[cta as usize].warps[warp as usize].op() {
                    Some(op) => {
                        let p = &op.parts[part as usize];
                        (op.pc, p.step.lanes.trailing_zeros().min(31), p.step.obj)
                    }
                    None => (0, 0, Obj { cta: unit_cta, off: 0, remote: false }),
                };
                let state = exec::describe(&self.m, obj);
                self.m.report(kind, format!("the MbarrierUnit of cta {unit_cta} reports {} at cycle {}: {state}", kind.name(), self.cycle), Some((cta, warp, lane, pc)))
            }
            Tag::Async { seq } => {
                let (at, what) = match self.asyncs.iter().find(|a| a.seq == seq && !matches!(a.kind, AsyncKind::Tma { cta: Some(d), .. } if d != unit_cta)).map(|a| a.kind.clone()) {
                    Some(AsyncKind::Arrive { cta, off, warp, lane, issuing_cta }) => {
                        let d = exec::describe(&self.m, Obj { cta, off, remote: false });
                        (Some((issuing_cta, warp, lane, 0)), format!("asynchronous arrive-on of cp.async.mbarrier.arrive: {d}"))
                    }
                    Some(AsyncKind::Store(AsyncOp::RemoteWrite { cta, mbar, tx, .. })) => {
                        let d = exec::describe(&self.m, Obj { cta, off: mbar, remote: true });
                        (None, format!("complete-tx of {tx} bytes of an asynchronous store: {d}"))
                    }
                    Some(AsyncKind::Tma { op, cta: Some(c) }) => {
                        let TmaOp::ToShared { mbar, tx, at, .. } = *op else { unreachable!() };
                        let d = exec::describe(&self.m, Obj { cta: c, off: mbar, remote: c != at.0 });
                        let r = self.m.report(kind, format!("complete-tx of {tx} bytes by the TMA engine: {d} (the MbarrierUnit of cta {unit_cta}, cycle {})", self.cycle), Some(at));
                        let cy = self.cycle;
                        self.emit(Event::AsyncFault { cycle: cy, seq, cta: Some(c), kind });
                        return r;
                    }
                    _ => (None, String::new()),
                };
                self.m.report(kind, format!("{what} (the MbarrierUnit of cta {unit_cta}, cycle {})", self.cycle), at)
            }
        }
    }

    /// A unit processed request `req` of a part.
    pub(super) fn part_result(&mut self, cta: u32, warp: u32, part: u32, req: u32, change: Option<Option<SyncEvent>>, resp: Option<MbarrierResp>) -> Result<(), Stop> {
        let phase_now = {
            let Some(op) = self.ctas[cta as usize].warps[warp as usize].op() else { return Ok(()) };
            let o = op.parts[part as usize].step.obj;
            self.m.mbar_phase(o.cta, o.off)
        };
        let suspended_now;
        {
            let Some(op) = self.ctas[cta as usize].warps[warp as usize].op_mut() else { return Ok(()) };
            let p = &mut op.parts[part as usize];
            p.got += 1;
            if let Some(Some(SyncEvent::Mbarrier { old, new, .. })) = &change {
                if p.old.is_none() {
                    p.old = Some(*old);
                }
                if req == 1 && p.after_half.is_some() {
                    p.after_half = Some(*old);
                }
                p.new = Some(*new);
            }
            p.phase_after = phase_now;
            if let Some(r) = resp {
                if req == 0 {
                    p.first_state = Some(r.state.to_u64());
                }
                p.wait = Some(r.wait_complete);
                p.pending_count = r.pending_count.index() as u64;
                if r.suspended {
                    p.suspended = true;
                }
            } else if req == 0 && p.first_state.is_none() {
                // Remote ops get no response: the word before the op is the mirror's old word.
                p.first_state = match &change {
                    Some(Some(SyncEvent::Mbarrier { old, .. })) => Some(*old),
                    _ => Some(self.m.read_mbar_word(p.step.obj.cta, p.step.obj.off)),
                };
            }
            suspended_now = p.suspended && resp.is_some_and(|r| r.suspended);
        }
        if req == 0 {
            self.half_done_early(cta, warp, part);
        }
        if suspended_now {
            self.ctas[cta as usize].mbar.suspended += 1;
            let pc = self.ctas[cta as usize].warps[warp as usize].op().map(|o| o.pc).unwrap_or(0);
            let o = self.ctas[cta as usize].warps[warp as usize].op().unwrap().parts[part as usize].step.obj;
            self.m.set_polling(cta, warp, Some(Poll { cta: o.cta, offset: o.off, pc }));
        }
        self.part_done_early(cta, warp, part);
        self.try_retire(cta, warp)
    }

    /// Lockstep: part `part` of (cta, warp)'s instruction is done but the instruction is not (its
    /// other parts wait in other units' queues: the lanes of one `.shared::cluster` arrive can
    /// name barriers in several CTAs), so the golden model must apply the part now, before any
    /// other instruction changes the same word ([`Event::MbarPart`]).
    fn part_done_early(&mut self, cta: u32, warp: u32, part: u32) {
        if !self.recording() {
            return;
        }
        let Some(op) = self.ctas[cta as usize].warps[warp as usize].op() else { return };
        let OpKind::Mbar(family) = op.kind else { return };
        let Some(p) = op.parts.get(part as usize) else { return };
        // A cp.async.mbarrier.arrive part too: its lanes' increments reach the unit between other
        // warps' arrive-ons (the async-copy port), so the golden model applies each one now, and
        // issues the deferred arrive-ons (their issue numbers) at the retire, as the engine does.
        if !p.done() || op.parts.iter().all(|p| p.done()) {
            return;
        }
        let change = p.change();
        let (cycle, pc) = (self.cycle, op.pc);
        self.emit(Event::MbarPart { cycle, cta, warp, pc, family, part, half: false, change });
    }

    /// Lockstep: the expect-tx half (the first of the two unit operations) of a merged
    /// multi-lane `.expect_tx` arrive is done. Another instruction's operation on the same word
    /// can reach the unit before the arrive half (a remote part waits in the cluster queue,
    /// behind local requests), so the golden model applies that half now ([`Event::MbarPart`]
    /// with `half`).
    fn half_done_early(&mut self, cta: u32, warp: u32, part: u32) {
        if !self.recording() {
            return;
        }
        let Some(op) = self.ctas[cta as usize].warps[warp as usize].op_mut() else { return };
        let OpKind::Mbar(family) = op.kind else { return };
        let pc = op.pc;
        let Some(p) = op.parts.get_mut(part as usize) else { return };
        if p.reqs.len() != 2 || p.got != 1 {
            return;
        }
        let change = p.change();
        p.after_half = p.new;
        let cycle = self.cycle;
        self.emit(Event::MbarPart { cycle, cta, warp, pc, family, part, half: true, change });
    }

    pub(super) fn wake(&mut self, c: u32, warp: u32, completed: bool) -> Result<(), Stop> {
        let Some(op) = self.ctas[c as usize].warps.get_mut(warp as usize).and_then(|w| w.op_mut()) else { return Ok(()) };
        let Some(k) = op.parts.iter().position(|p| p.suspended) else { return Ok(()) };
        let p = &mut op.parts[k];
        p.suspended = false;
        // woken by the phase's completion (a time-limit answer is not a wake)
        p.woken = completed;
        p.wait = Some(completed);
        self.ctas[c as usize].mbar.suspended -= 1;
        self.part_done_early(c, warp, k as u32);
        self.try_retire(c, warp)
    }

    pub(super) fn queue_mbar(&mut self, c: u32, w: u32, op: &SyncOp) {
        let now = self.cycle;
        // a phase check holds the SM's path longer than an arrive (`sync.phase_check_port_cycles`)
        let rate = match op.kind {
            OpKind::Mbar(MbarFamily::TestWait | MbarFamily::TryWait) => self.cfg.sync.phase_check_port_cycles,
            _ => self.cfg.sync.mbarrier_port_cycles,
        };
        for (k, p) in op.parts.iter().enumerate() {
            for (j, r) in p.reqs.iter().enumerate() {
                let tag = Tag::Part { cta: c, warp: w, part: k as u32, req: j as u32 };
                if p.remote {
                    let at = now + self.cfg.dsmem.sync_latency;
                    self.ctas[p.step.obj.cta as usize].mbar.cluster_q.push_back(Queued { at, req: *r, tag });
                } else {
                    let start = self.ctas[c as usize].mem.book_syncs(now, rate, w as usize);
                    let at = start + self.cfg.sync.mbarrier_request_cycles;
                    self.ctas[c as usize].mbar.local_q.push_back(Queued { at, req: *r, tag });
                }
            }
        }
    }

    /// Front half of an mbarrier instruction: the shared plan (`exec::mbar_plan`: operands, the
    /// checks the unit cannot make, the merge of the warp's lanes); then the unit requests.
    pub(super) fn issue_mbarrier(&mut self, c: u32, w: u32, pc: u32, group: u32, ins: &'p Instr, family: MbarFamily) -> Result<(), Stop> {
        let mask = self.m.guard_mask(c, w, pc, group);
        let mut parts: Vec<Part> = Vec::new();
        if mask != 0 {
            let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group };
            let steps = exec::mbar_plan(&mut cx, ins, family)?;
            let several = steps.len() > 1;
            let converged = group == self.m.warp(c, w).live();
            for st in steps {
                let reqs = unit_requests(&st, w, several, converged, &self.cfg);
                let mut p = Part::new(st, reqs, st.obj.cta != c);
                if matches!(st.op, MbarStepOp::CpAsyncArrive { .. }) {
                    p.first_state = Some(0);
                }
                parts.push(p);
            }
        }
        let op = SyncOp { pc, group, mask, kind: OpKind::Mbar(family), parts, queued: false };
        self.queue_mbar(c, w, &op);
        // the warp's own rate of mbarrier instructions; it no longer waits for the SYNCS path
        // (an instruction whose guards are all false booked nothing)
        let spacing = if family == MbarFamily::TestWait { self.cfg.sync.test_wait_issue_cycles } else { self.cfg.sync.mbarrier_issue_cycles };
        let cs = &mut self.ctas[c as usize];
        cs.mem.syncs.issued(w as usize);
        if mask != 0 {
            cs.warps[w as usize].smem_issue_until = self.cycle + spacing;
        }
        self.ctas[c as usize].warp_mut(w as usize).set_op(op);
        self.try_retire(c, w)
    }

    /// Retires the in-flight instruction of (c, w) if every part is done.
    pub(super) fn try_retire(&mut self, c: u32, w: u32) -> Result<(), Stop> {
        let done = match self.ctas[c as usize].warps[w as usize].op() {
            Some(op) if matches!(op.kind, OpKind::Mbar(_)) => op.parts.iter().all(|p| p.done()),
            _ => false,
        };
        if !done {
            return Ok(());
        }
        let op = self.ctas[c as usize].warp_mut(w as usize).take_op().unwrap();
        let OpKind::Mbar(family) = op.kind else { unreachable!() };
        let ins = &self.m.module().kernel.body[op.pc as usize];
        self.m.count_retired(op.mask);
        // The retire record (only while events are recorded: the golden bodies log register
        // writes into it lane by lane). One word change per part (a merged .expect_tx arrive
        // takes two unit operations).
        if self.recording() {
            let sync: Vec<SyncEvent> = op
                .parts
                .iter()
                .filter_map(|p| p.change().filter(|e| matches!(e, SyncEvent::Mbarrier { old, new, .. } if old != new)))
                .collect();
            self.m.start_record(Retire { step: self.cycle, cta: c, warp: w, pc: op.pc, mask: op.mask, sync, ..Default::default() });
        }
        {
            let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc: op.pc, mask: op.mask, group: op.group };
            let steps: Vec<MbarStep> = op.parts.iter().map(|p| p.step).collect();
            let outcomes: Vec<Option<MbarOutcome>> = op.parts.iter().map(|p| Some(p.outcome())).collect();
            exec::mbar_apply(&mut cx, ins, &steps, &outcomes)?;
        }
        if family == MbarFamily::CpAsyncArrive {
            // The deferred arrive-ons, one per lane in lane order (their issue numbers).
            for p in &op.parts {
                for l in bits_of(p.step.lanes) {
                    let seq = self.m.next_seq();
                    self.asyncs.push(Box::new(AsyncItem { seq, at: self.cycle, kind: AsyncKind::Arrive { cta: p.step.obj.cta, off: p.step.obj.off, warp: w, lane: l, issuing_cta: c }, queued: false }));
                }
            }
        }
        self.m.advance(c, w, op.pc, op.group, op.mask, Flow::Next);
        let rec = self.m.take_record();
        if let (Some(r), true) = (rec, self.recording()) {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: r });
        }
        let woken = op.parts.iter().any(|p| p.woken);
        let sync = &self.cfg.sync;
        let check = if matches!(family, MbarFamily::TestWait | MbarFamily::TryWait) { sync.mbarrier_phase_check_cycles } else { 0 };
        let back = self.cycle + sync.mbarrier_response_cycles + check + if woken { sync.mbarrier_wake_cycles } else { 0 };
        let mut ws = self.ctas[c as usize].warp_mut(w as usize);
        for &d in &self.info[op.pc as usize].dsts {
            ws.write_ready(d, back, true);
        }
        ws.wait_until(self.cycle + 1, Stall::MbarrierWait);
        Ok(())
    }
}
