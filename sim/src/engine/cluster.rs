//! The cluster-barrier port: each cluster's `ClusterBarrierUnit` with its launch, exit and
//! request queues, and barrier.cluster.arrive / wait (`exec::cluster_arrive_plan`).

use super::*;

pub(super) struct ClusterState {
    pub(super) unit: ClusterUnit,
    /// Arrivals and waits of the cluster's warps.
    pub(super) q: VecDeque<Queued<ClusterBarrierReq, WarpRef>>,
    pub(super) exit_q: VecDeque<(u32, u32)>,
    pub(super) launch_q: VecDeque<(u32, u32)>,
    pub(super) busy_until: u64,
    pub(super) phase: u64,
    /// When the cluster's CTAs see the latest phase completion (`sync.cluster_release_cycles`
    /// after the unit's): a wait the unit answers sooner holds its warp until then.
    pub(super) seen_at: u64,
}

impl ClusterState {
    /// A cluster's port with `unit` and the launch of each CTA (rank, warp mask) to tell it.
    pub(super) fn new(unit: ClusterUnit, launch_q: VecDeque<(u32, u32)>) -> ClusterState {
        ClusterState { unit, q: VecDeque::new(), exit_q: VecDeque::new(), launch_q, busy_until: 0, phase: 0, seen_at: 0 }
    }
}

impl<'p> Engine<'p> {
    pub(super) fn clock_cluster(&mut self, k: u32, now: u64) -> Result<(), Stop> {
        let cl = &mut self.clusters[k as usize];
        let launch = cl.launch_q.front().copied();
        let req = if launch.is_none() { cl.q.front().filter(|h| h.at <= now).map(|h| (h.req, h.tag.cta, h.tag.warp)) } else { None };
        let exit = cl.exit_q.front().copied();
        if req.is_none() && exit.is_none() && launch.is_none() && cl.busy_until <= now {
            return Ok(());
        }
        self.active_this_cycle = true;
        self.unit_edges += 1;
        let out = cl.unit.cycle(&ClusterInputs { req: req.map(|r| r.0), exit, launch });
        if launch.is_some() {
            cl.launch_q.pop_front();
        }
        if exit.is_some() {
            cl.exit_q.pop_front();
        }
        if req.is_some() || exit.is_some() || launch.is_some() {
            cl.busy_until = now + 2;
        }
        let accepted = if out.ready { req } else { None };
        if accepted.is_some() {
            cl.q.pop_front();
        }
        let mut rec: Option<(u32, u32, Option<Retire>)> = None;
        if let Some((r, c, w)) = accepted {
            if out.fault.valid {
                let kind = finding_kind(out.fault.kind.name())?;
                let (pc, lane) = self.ctas[c as usize].warps[w as usize].op().map(|o| (o.pc, o.mask.trailing_zeros().min(31))).unwrap_or((0, 0));
                let msg = format!("the ClusterBarrierUnit of cluster {k} reports {} at cycle {}", kind.name(), self.cycle);
                self.m.report(kind, msg, Some((c, w, lane, pc)))?;
            }
            let blocked = r.op == ClusterBarrierOp::Wait && out.resp.valid && out.resp.blocked && !out.fault.valid;
            let r = self.retire_cluster(c, w, blocked)?;
            rec = Some((c, w, r));
        }
        if out.done.valid {
            let cl = &mut self.clusters[k as usize];
            cl.phase += 1;
            let phase = cl.phase;
            let ctas = self.m.cluster_ctas(k).to_vec();
            let back = self.cycle + self.cfg.sync.cluster_release_cycles;
            self.clusters[k as usize].seen_at = back;
            for c in ctas {
                for w in 0..self.m.warp_count(c) {
                    if self.m.release_lanes(c, w as u32, |x| matches!(x, Wait::ClusterBarrier(_))) != 0 {
                        self.ctas[c as usize].warp_mut(w).wait_at_least(back, Stall::ClusterBarrierWait);
                    }
                }
            }
            self.m.progress();
            let ev = SyncEvent::ClusterBarrierRelease { cluster: k, phase };
            match rec.as_mut() {
                Some((_, _, Some(r))) => r.sync.push(ev),
                _ => {
                    let cy = self.cycle;
                    self.emit(Event::Release { cycle: cy, ev, regs: Vec::new() });
                }
            }
        }
        if let Some((_, _, Some(r))) = rec {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: r });
        }
        Ok(())
    }

    pub(super) fn queue_cluster(&mut self, c: u32, w: u32, op: ClusterBarrierOp) {
        let k = self.m.cta_cluster(c) as usize;
        let rank = self.m.cta_rank(c);
        let req = ClusterBarrierReq { op, cta: (rank as u64).into(), warp: (w as u64).into() };
        let at = self.cycle + self.cfg.sync.cluster_barrier_cycles;
        self.clusters[k].q.push_back(Queued { at, req, tag: WarpRef { cta: c, warp: w } });
    }

    pub(super) fn issue_cluster(&mut self, c: u32, w: u32, pc: u32, group: u32, ins: &'p Instr) -> Result<(), Stop> {
        let mask = self.m.guard_mask(c, w, pc, group);
        let live = self.m.warp(c, w).live();
        let arrive = ins.op == Opcode::BarrierClusterArrive;
        if mask == 0 {
            self.retire_plain(c, w, pc, group, mask);
            return Ok(());
        }
        if arrive {
            let phase = self.clusters[self.m.cta_cluster(c) as usize].phase;
            let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group };
            exec::cluster_arrive_plan(&mut cx, ins, phase)?;
            let arriving = self.ctas[c as usize].warps[w as usize].cluster_partial | mask;
            if arriving & live != live {
                // Non-aligned and divergent: the warp arrives once all its live lanes did.
                self.ctas[c as usize].warps[w as usize].cluster_partial = arriving;
                self.retire_plain(c, w, pc, group, mask);
                return Ok(());
            }
            self.ctas[c as usize].warps[w as usize].cluster_partial = 0;
            let op = if ins.has(Mod::Relaxed) { ClusterBarrierOp::ArriveRelaxed } else { ClusterBarrierOp::Arrive };
            self.queue_cluster(c, w, op);
            self.ctas[c as usize].warp_mut(w as usize).set_op(SyncOp { pc, group, mask, kind: OpKind::ClusterArrive, parts: Vec::new(), queued: true });
        } else {
            exec::cluster_aligned_check(&mut Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group }, ins)?;
            self.queue_cluster(c, w, ClusterBarrierOp::Wait);
            self.ctas[c as usize].warp_mut(w as usize).set_op(SyncOp { pc, group, mask, kind: OpKind::ClusterWait, parts: Vec::new(), queued: true });
        }
        Ok(())
    }

    pub(super) fn retire_cluster(&mut self, c: u32, w: u32, blocked: bool) -> Result<Option<Retire>, Stop> {
        let Some(op) = self.ctas[c as usize].warp_mut(w as usize).take_op() else { return Ok(None) };
        self.m.count_retired(op.mask);
        self.m.advance(c, w, op.pc, op.group, op.mask, Flow::Next);
        let phase = self.clusters[self.m.cta_cluster(c) as usize].phase;
        if matches!(op.kind, OpKind::ClusterWait) {
            self.m.forget_cluster_arrival(c, w, op.mask);
        }
        if blocked {
            self.m.block_lanes(c, w, op.mask, Wait::ClusterBarrier(phase));
        }
        self.m.progress();
        // A wait the unit answered: its warp goes on once its CTA sees the completion.
        let seen = if matches!(op.kind, OpKind::ClusterWait) { self.clusters[self.m.cta_cluster(c) as usize].seen_at } else { 0 };
        self.ctas[c as usize].warp_mut(w as usize).wait_until((self.cycle + self.cfg.issue.warp_issue_cycles).max(seen), Stall::ClusterBarrierWait);
        Ok(self.recording().then(|| Retire { step: self.cycle, cta: c, warp: w, pc: op.pc, mask: op.mask, ..Default::default() }))
    }
}
