//! The named-barrier port: each CTA's `NamedBarrierUnit`, its arrival and exit queues, what the
//! engine mirrors of its 16 barriers (generation, arrived warps, thread count), the arrivals of
//! bar / barrier (`exec::named_plan`) and the releases with their bar.red results.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NamedTag {
    /// The in-flight instruction of warp w.
    Op(u32),
    /// Warp w's lanes waiting at a non-aligned barrier became its arrival when the others exited.
    ExitPartial(u32),
}

/// A CTA's NamedBarrierUnit, its request queues and what the engine mirrors of its barriers.
pub(super) struct NamedPort {
    /// The unit.
    pub(super) unit: NamedUnit,
    /// Arrivals.
    pub(super) q: VecDeque<Queued<NamedBarrierReq, NamedTag>>,
    /// Warps that exited, to tell the unit.
    pub(super) exit_q: VecDeque<u32>,
    /// The launch's warp mask, until the unit took it.
    pub(super) launch: Option<u32>,
    /// The unit has work (its post-exit sweep) until this cycle.
    pub(super) busy_until: u64,
    /// The port takes its next arrival from this cycle (`sync.named_barrier_arrival_cycles` per
    /// warp arrival, `named_barrier_red_cycles` more for a bar.red's).
    pub(super) next_accept: u64,
    /// Per barrier: the generation its waiting lanes wait on.
    pub(super) generation: [u64; 16],
    /// Per barrier: the warps arrived in the current generation.
    pub(super) arrived: [u64; 16],
    /// The thread count of each barrier's current generation, as its arrivals gave it (None:
    /// all threads): only for the deadlock message, the unit holds the real state.
    pub(super) expected: [Option<u32>; 16],
}

impl NamedPort {
    /// A port with `unit`, the launch of `warps` warps still to tell it.
    pub(super) fn new(unit: NamedUnit, warps: usize) -> NamedPort {
        NamedPort {
            unit,
            q: VecDeque::new(),
            exit_q: VecDeque::new(),
            launch: Some(((1u64 << warps) - 1) as u32),
            busy_until: 0,
            next_accept: 0,
            generation: [0; 16],
            arrived: [0; 16],
            expected: [None; 16],
        }
    }
}

/// bar.red destinations of a warp awaiting the barrier's release.
#[derive(Debug, Clone)]
pub(super) struct PendingRed {
    /// The barrier.
    pub(super) id: u8,
    /// (lane, register) pairs.
    pub(super) dsts: Vec<(u32, u32)>,
    /// The reduction (`.popc`, `.and`, `.or`).
    pub(super) op: Mod,
}

/// The NamedBarrierUnit request of warp `w`'s arrival (one per warp: lanes = its live lanes).
pub(super) fn arrival_req(a: &NamedArrival, w: u32) -> NamedBarrierReq {
    let pred = a.lanes.iter().filter(|e| e.pred).fold(0u32, |m, e| m | 1 << e.lane);
    let op = match a.red {
        Some(Mod::Popc) => NamedBarrierOp::RedPopc,
        Some(Mod::And) => NamedBarrierOp::RedAnd,
        Some(_) => NamedBarrierOp::RedOr,
        None if a.lanes.iter().any(|e| e.sync) => NamedBarrierOp::Sync,
        None => NamedBarrierOp::Arrive,
    };
    NamedBarrierReq {
        op,
        barrier: (a.id as u64).into(),
        warp: (w as u64).into(),
        has_count: a.count.is_some(),
        count: (a.count.unwrap_or(0) as u64).into(),
        lanes: (a.live as u64).into(),
        pred: (pred as u64).into(),
    }
}

impl<'p> Engine<'p> {
    pub(super) fn clock_named(&mut self, c: u32, now: u64) -> Result<(), Stop> {
        let cs = &mut self.ctas[c as usize];
        let req = cs.named.q.front().filter(|h| h.at <= now && cs.named.next_accept <= now).map(|h| (h.req, h.tag));
        let exit = cs.named.exit_q.front().copied();
        let launch = cs.named.launch;
        if req.is_none() && exit.is_none() && launch.is_none() && cs.named.busy_until <= now {
            return Ok(());
        }
        self.active_this_cycle = true;
        self.unit_edges += 1;
        let out = cs.named.unit.cycle(&NamedInputs { req: req.map(|r| r.0), exit, launch });
        cs.named.launch = None;
        if exit.is_some() {
            cs.named.exit_q.pop_front();
            // the unit sweeps its 16 barriers after an exit
            cs.named.busy_until = now + 20;
        }
        if req.is_some() || launch.is_some() {
            cs.named.busy_until = cs.named.busy_until.max(now + 2);
        }
        let accepted = if out.ready { req } else { None };
        if let Some((r, _)) = accepted {
            cs.named.q.pop_front();
            let red = matches!(r.op, NamedBarrierOp::RedPopc | NamedBarrierOp::RedAnd | NamedBarrierOp::RedOr);
            cs.named.next_accept = now + self.cfg.sync.named_barrier_arrival_cycles + if red { self.cfg.sync.named_barrier_red_cycles } else { 0 };
        }
        // The accepted request's finding / retire, then a completion (which may be its own).
        let mut pending_retire: Option<u32> = None;
        if let Some((r, tag)) = accepted {
            match tag {
                NamedTag::Op(w) => {
                    if out.fault.valid {
                        let name = out.fault.kind.name();
                        match name.filter(|n| !n.starts_with("unsupported")) {
                            Some(n) => {
                                let kind = finding_kind(Some(n))?;
                                let pc = self.ctas[c as usize].warps[w as usize].op().map(|o| o.pc).unwrap_or(0);
                                let lane = self.ctas[c as usize].warps[w as usize].op().map(|o| o.mask.trailing_zeros().min(31)).unwrap_or(0);
                                let msg = format!("the NamedBarrierUnit of cta {c} reports {} for barrier {} at cycle {}", kind.name(), r.barrier.index(), self.cycle);
                                self.m.report(kind, msg, Some((c, w, lane, pc)))?;
                            }
                            None => return Err(Stop::Unsupported(name.unwrap_or("unsupported").to_string())),
                        }
                        // Warn mode: the unit changed nothing; the instruction retires without
                        // waiting.
                        if let Some(op) = self.ctas[c as usize].warps[w as usize].op_mut() {
                            if let OpKind::Named(a) = &mut op.kind {
                                for e in a.lanes.iter_mut() {
                                    e.sync = false;
                                }
                                a.red = None;
                            }
                        }
                    } else {
                        let id = r.barrier.index();
                        self.ctas[c as usize].named.arrived[id] |= 1 << w;
                        self.ctas[c as usize].named.expected[id] = r.has_count.then(|| r.count.index() as u32);
                    }
                    if let Some(op) = self.ctas[c as usize].warps[w as usize].op_mut() {
                        op.queued = false;
                    }
                    pending_retire = Some(w);
                }
                NamedTag::ExitPartial(w) => {
                    if let Some(a) = self.ctas[c as usize].warps[w as usize].exit_arrival.take() {
                        if out.fault.valid {
                            let kind = finding_kind(out.fault.kind.name())?;
                            let msg = format!("the NamedBarrierUnit of cta {c} reports {} for barrier {} at cycle {} (the arrival of warp {w}'s waiting lanes after the others exited)", kind.name(), a.id, self.cycle);
                            self.m.report(kind, msg, None)?;
                        } else {
                            self.ctas[c as usize].named.arrived[a.id as usize] |= 1 << w;
                            self.apply_arrival(c, w, a);
                        }
                    }
                }
            }
        }
        // Build the retiring instruction's record first so a completion can add to it.
        let mut rec = None;
        if let Some(w) = pending_retire {
            rec = Some(self.retire_named(c, w)?);
        }
        if out.done.valid {
            let id = out.done.barrier.index() as u8;
            let (ev, regs) = self.release_named(c, id, out.done.warps.index() as u32, out.done.popc.index() as u64, out.done.all_true, out.done.any_true, rec.as_mut());
            match rec.as_mut() {
                Some((_, r)) if r.is_some() => r.as_mut().unwrap().sync.push(ev),
                _ => {
                    let cy = self.cycle;
                    self.emit(Event::Release { cycle: cy, ev, regs });
                }
            }
        }
        if let Some((_, Some(r))) = rec {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: r });
        }
        Ok(())
    }

    /// Copies what the engine knows of each named barrier's current generation (arrived warps,
    /// thread count) into the machine, whose deadlock message describes it; the golden model's
    /// own barrier state is not kept by this engine (the NamedBarrierUnit holds it).
    pub(super) fn mirror_named_barriers(&mut self) {
        for (c, cs) in self.ctas.iter().enumerate() {
            for id in 0..16 {
                self.m.mirror_named_barrier(c as u32, id, cs.named.arrived[id], cs.named.expected[id]);
            }
        }
    }

    pub(super) fn issue_named(&mut self, c: u32, w: u32, pc: u32, group: u32, ins: &'p Instr) -> Result<(), Stop> {
        let mask = self.m.guard_mask(c, w, pc, group);
        let mut arrival = None;
        if mask != 0 {
            let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group };
            arrival = exec::named_plan(&mut cx, ins)?;
        }
        match arrival {
            Some(a) => {
                let r = arrival_req(&a, w);
                let op = SyncOp { pc, group, mask, kind: OpKind::Named(a), parts: Vec::new(), queued: true };
                self.ctas[c as usize].warp_mut(w as usize).set_op(op);
                let at = self.cycle + self.cfg.sync.named_barrier_request_cycles;
                self.ctas[c as usize].named.q.push_back(Queued { at, req: r, tag: NamedTag::Op(w) });
                Ok(())
            }
            None => {
                // No unit request: guard false, a finding in warn mode, or lanes that wait for
                // the rest of their warp (non-aligned). Retires now.
                self.retire_plain(c, w, pc, group, mask);
                Ok(())
            }
        }
    }

    /// The named-barrier instruction of (c, w) was accepted: it retires (returns its record when
    /// recording, to which a completion in the same cycle adds).
    pub(super) fn retire_named(&mut self, c: u32, w: u32) -> Result<(u32, Option<Retire>), Stop> {
        let Some(op) = self.ctas[c as usize].warp_mut(w as usize).take_op() else { return Ok((w, None)) };
        let OpKind::Named(a) = op.kind else { unreachable!() };
        self.m.count_retired(op.mask);
        self.m.advance(c, w, op.pc, op.group, op.mask, Flow::Next);
        self.apply_arrival(c, w, a);
        self.ctas[c as usize].warp_mut(w as usize).wait_until(self.cycle + 1, Stall::BarrierWait);
        let rec = self.recording().then(|| Retire { step: self.cycle, cta: c, warp: w, pc: op.pc, mask: op.mask, ..Default::default() });
        Ok((w, rec))
    }

    /// The unit took warp w's arrival (`exec::named_apply_arrival`: `.sync`/`.red` lanes wait
    /// for the completion, `.arrive` lanes go on); reductions remember where their results go.
    pub(super) fn apply_arrival(&mut self, c: u32, w: u32, a: NamedArrival) {
        let gen = self.ctas[c as usize].named.generation[a.id as usize];
        self.ctas[c as usize].warps[w as usize].barrier_arrival = self.cycle;
        exec::named_apply_arrival(&mut self.m, c, w, &a, gen);
        if let Some(op) = a.red {
            let dsts: Vec<(u32, u32)> = a.lanes.iter().filter_map(|e| e.dst.map(|d| (e.lane, d))).collect();
            self.ctas[c as usize].warps[w as usize].red = Some(PendingRed { id: a.id, dsts, op });
        }
        self.m.progress();
    }

    /// What the wake of each released warp of `warps` takes beyond the release. A warp asleep at
    /// the barrier for long (nothing it may issue before the release, its arrival at least
    /// `sync.named_barrier_sleep_cycles` ago) pays `sync.named_barrier_wake_cycles`, and its
    /// scheduler wakes such warps one per `sync.named_barrier_wake_spacing_cycles`, its highest
    /// warp slot first. Silicon (H100): a waiter blocked ~400 cycles wakes 25 cycles later than the
    /// engine's release alone gives (calibration/bar_release.ptx, 2 warps: 85 cycles), and with 32
    /// warps the waiters are in neither warp order, but within each scheduler (warp id mod 4) the
    /// higher slots come first (bar_release_order.ptx, scheduler 0: warps 24 / 16 / 8 / 0 at
    /// 92.5 / 110.5 / 123.5 / 125 cycles); warps that arrive together (bar_sync_red.ptx) or loop on
    /// back-to-back barriers (val_bar_loops.ptx) see no such wake.
    fn wake_order(&self, c: u32, warps: u32) -> [u64; 32] {
        let mut wake = [0u64; 32]; // per warp of the CTA (at most 32)
        let (now, sync) = (self.cycle, &self.cfg.sync);
        let sched = self.cfg.issue.schedulers.max(1);
        let mut woken = vec![0u64; sched as usize];
        for w in (0..32u32).rev().filter(|&w| warps >> w & 1 == 1) {
            let slept = now.saturating_sub(self.ctas[c as usize].warps[w as usize].barrier_arrival);
            if slept < sync.named_barrier_sleep_cycles || self.m.issue_group(c, w).is_some() {
                continue;
            }
            let k = &mut woken[(w % sched) as usize];
            wake[w as usize] = sync.named_barrier_wake_cycles + *k * sync.named_barrier_wake_spacing_cycles;
            *k += 1;
        }
        wake
    }

    /// A named barrier completed: release its waiting warps and deliver bar.red results (into
    /// the record of the instruction that completed it, for its own warp, as the golden model
    /// logs them).
    pub(super) fn release_named(&mut self, c: u32, id: u8, warps: u32, popc: u64, all: bool, any: bool, rec: Option<&mut (u32, Option<Retire>)>) -> (SyncEvent, Vec<(u32, u32, RegWrite)>) {
        let mut writes: Vec<(u32, u32, RegWrite)> = Vec::new();
        let gen = self.ctas[c as usize].named.generation[id as usize];
        let back = self.cycle + self.cfg.sync.named_barrier_release_cycles;
        let (rec_warp, mut rec_r) = match rec {
            Some((w, r)) => (Some(*w), r.as_mut()),
            None => (None, None),
        };
        // Warps that ran ahead of the barrier go on issuing what does not wait for it.
        let ran_ahead: u32 = bits_of(warps).filter(|&w| self.m.warp(c, w).run_ahead == Some(id)).fold(0, |m, w| m | 1 << w);
        let wake = self.wake_order(c, warps);
        exec::named_release_waiters(&mut self.m, c, id, gen, warps as u64);
        for w in bits_of(warps) {
            // a warp asleep at the barrier for long wakes later
            let back = back + wake[w as usize];
            let mut ws = self.ctas[c as usize].warp_mut(w as usize);
            if ran_ahead >> w & 1 == 1 {
                ws.barrier_back = back;
            } else {
                ws.wait_at_least(back, Stall::BarrierWait);
            }
            if !ws.red.as_ref().is_some_and(|r| r.id == id) {
                continue;
            }
            let PendingRed { dsts, op, .. } = ws.red.take().unwrap();
            drop(ws);
            let result = match op {
                Mod::Popc => popc,
                Mod::And => all as u64,
                _ => any as u64,
            };
            // the result register comes through B2R.RESULT after the release
            let result_at = back + self.cfg.sync.named_barrier_red_result_cycles;
            for (l, reg) in dsts {
                self.ctas[c as usize].warps[w as usize].write_ready(reg, result_at, true);
                let v = exec::named_red_value(&self.m, reg, result);
                let rec = if rec_warp == Some(w) { rec_r.as_deref_mut() } else { None };
                self.m.deliver_reg(c, w, reg, l, v, rec);
                match writes.iter_mut().find(|x| x.1 == w && x.2.reg == reg) {
                    Some(x) => {
                        x.2.mask |= 1 << l;
                        x.2.values[l as usize] = v;
                    }
                    None => {
                        let mut values = vec![0; WARP];
                        values[l as usize] = v;
                        writes.push((c, w, RegWrite { reg, mask: 1 << l, values }));
                    }
                }
            }
        }
        let arrived = std::mem::take(&mut self.ctas[c as usize].named.arrived[id as usize]);
        self.ctas[c as usize].named.generation[id as usize] += 1;
        self.m.progress();
        (SyncEvent::NamedBarrierRelease { cta: c, id: id as u32, warps: arrived }, writes)
    }
}
