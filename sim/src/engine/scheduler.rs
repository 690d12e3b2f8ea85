//! The warp schedulers: per SM `issue.schedulers` schedulers, warp w on scheduler w mod n, each
//! issuing at most one instruction per cycle from its eligible warps, greedy-then-oldest
//! (`issue.policy`; loose round robin as the alternative);
//! a per-warp register scoreboard; the dispatch of each instruction to the port its timing class
//! names (`timing::class_of`, from the opcode); the golden bodies of the instructions that do not
//! synchronize, executed (and retired) at issue; warp exits.

use super::*;

pub(super) struct WarpState {
    /// Per register: the cycle from which it may be read (or written again).
    pub(super) ready: Vec<u64>,
    /// Per register: the cycle a queued plain store of the warp reads it (its data or address);
    /// an instruction that writes it issues no earlier (write-after-read, the SASS read barrier).
    pub(super) read_pending: Vec<u64>,
    pub(super) next_issue: u64,
    /// Why the next issue waits on `next_issue`.
    pub(super) wait_why: Stall,
    pub(super) op: Option<SyncOp>,
    /// bar.red destinations awaiting the release.
    pub(super) red: Option<PendingRed>,
    /// An arrival made on the warp's behalf after an exit, waiting for the unit.
    pub(super) exit_arrival: Option<NamedArrival>,
    /// Lanes that executed a non-aligned barrier.cluster.arrive while the warp was divergent.
    pub(super) cluster_partial: u32,
    /// The memory pipe the next instruction was last checked against (it waits for it).
    pub(super) pipe: Option<Pipe>,
    pub(super) exited: bool,
    pub(super) stall: Stall,
    /// When the warp's latest write (global, DSMEM) completes: a release at cluster scope or
    /// wider drains up to it.
    pub(super) writes_done: u64,
    /// The instruction (pc, lane group) whose memory-ordering wait has been served: it issues next.
    pub(super) ordered: Option<(u32, u32)>,
    /// When each of the warp's global sectors in flight completes (at most
    /// `global.warp_inflight_sectors`; the earliest first).
    pub(super) gmem_inflight: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
    /// When each of the warp's plain-store sectors in flight is acknowledged (at most
    /// `global.store_inflight_sectors`; the earliest first).
    pub(super) store_inflight: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
    /// The warp's next instruction issues no earlier than this after a plain global store
    /// (`global.store_issue_cycles`).
    pub(super) store_issue_until: u64,
    /// The warp's next memory or mbarrier instruction issues no earlier than this after a
    /// shared-memory access (`smem.store_issue_cycles`, `smem.load_issue_cycles`) or an mbarrier
    /// instruction (`sync.mbarrier_issue_cycles`, `sync.test_wait_issue_cycles`).
    pub(super) smem_issue_until: u64,
    /// Per partly unrolled loop (its backward branch's pc): the iterations of the warp's current
    /// run of it (`timing::Unroll::Every`).
    pub(super) loop_iters: Vec<(u32, u32)>,
    /// The cycle the warp's release from a named barrier it ran ahead of
    /// (`exec::runs_ahead_of_barrier`) reaches it: its first instruction that waits for the
    /// barrier issues no earlier (those that run ahead are not held).
    pub(super) barrier_back: u64,
    /// The warp's issue group ([`Machine::issue_group`]) and the [`Engine::epoch`] it was
    /// computed in: eligibility, the idle skip and the issue itself ask for it in one cycle.
    pub(super) group: (u64, Option<(u32, u32)>),
    /// The warp's next instruction waits on the scoreboard until this cycle. Set only while
    /// none of its lanes is blocked and it has no operation in a unit: then nothing but its own
    /// issue changes its lanes (so its group) or its registers' ready cycles, and it cannot issue
    /// before this cycle; eligibility answers from it instead of deriving the group and the
    /// scoreboard again every cycle.
    pub(super) scoreboard_until: u64,
}

impl WarpState {
    /// A warp not launched yet, with `nregs` registers all ready.
    pub(super) fn new(nregs: usize) -> WarpState {
        WarpState { ready: vec![0; nregs], read_pending: vec![0; nregs], store_inflight: Default::default(), store_issue_until: 0, smem_issue_until: 0, loop_iters: Vec::new(), next_issue: 0, wait_why: Stall::NotLaunched, op: None, red: None, exit_arrival: None, cluster_partial: 0, pipe: None, exited: false, stall: Stall::NotLaunched, writes_done: 0, ordered: None, gmem_inflight: Default::default(), barrier_back: 0, group: (u64::MAX, None), scoreboard_until: 0 }
    }
}

#[derive(Debug, Clone)]
pub(super) enum OpKind {
    Mbar(MbarFamily),
    Named(NamedArrival),
    ClusterArrive,
    ClusterWait,
}

/// A synchronizing instruction in flight.
#[derive(Debug, Clone)]
pub(super) struct SyncOp {
    pub(super) pc: u32,
    pub(super) group: u32,
    pub(super) mask: u32,
    pub(super) kind: OpKind,
    pub(super) parts: Vec<Part>,
    /// Named / cluster request: queued (not yet accepted).
    pub(super) queued: bool,
}

impl<'p> Engine<'p> {
    pub(super) fn issue(&mut self) -> Result<(), Stop> {
        // the units and completions of this cycle may have changed lane states
        self.epoch += 1;
        if self.cycle < self.launched_at {
            return Ok(());
        }
        let sched = self.cfg.issue.schedulers as usize;
        let observe = self.probe.is_some();
        for c in 0..self.ctas.len() {
            let n = self.ctas[c].warps.len();
            for s in 0..sched {
                // The scheduler's members are warps s, s + sched, ... below n (no allocation in
                // the per-cycle loop).
                if s >= n {
                    continue;
                }
                let count = (n - s).div_ceil(sched);
                let last = self.ctas[c].rr[s] % count;
                let gto = self.cfg.issue.policy == IssuePolicy::Gto;
                let mut issued = false;
                for k in 0..count {
                    // GTO: the last warp first, then the others oldest first; LRR: the warps
                    // after the last one in turn.
                    let at = match (gto, k) {
                        (true, 0) => last,
                        (true, k) if k <= last => k - 1,
                        (true, k) => k,
                        (false, k) => (last + 1 + k) % count,
                    };
                    let w = s + at * sched;
                    // What a probe looks at after the scheduler issued must not change the state.
                    let st = self.eligibility(c, w, !issued);
                    if st == Stall::Ready && !issued {
                        self.ctas[c].rr[s] = at;
                        self.issue_turn(c, w)?;
                        issued = true;
                        self.active_this_cycle = true;
                        if observe {
                            self.ctas[c].warps[w].stall = Stall::Issued;
                        }
                        if !observe {
                            break;
                        }
                    } else {
                        if gto && k == 0 && st == Stall::PipeThrottle && count > 1 {
                            // The greedy warp found its execution pipe busy: the pipe goes round
                            // its scheduler's waiting warps, so the greedy turn passes on (silicon,
                            // calibration/issue_rate.ptx: 64 add/xor take 91 cycles for one warp a
                            // scheduler and 174 / 420 for two / four, each warp's own window; fp32
                            // fma, which never waits for its pipe, stays one warp at a time).
                            self.ctas[c].rr[s] = (last + 1) % count;
                        }
                        if observe {
                            self.ctas[c].warps[w].stall = st;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether ptxas unrolled the instruction at `pc` away for warp (c, w)'s current iteration of
    /// its loop (`timing::Unroll`).
    pub(super) fn unrolled_away(&self, c: usize, w: usize, pc: u32) -> bool {
        match self.info.get(pc as usize).map(|i| i.unroll) {
            Some(Unroll::Gone) => true,
            Some(Unroll::Every { back_edge, factor }) => {
                let taken = self.ctas[c].warps[w].loop_iters.iter().find(|(b, _)| *b == back_edge).map_or(0, |(_, n)| *n);
                (taken + 1) % factor != 0
            }
            Some(Unroll::Kept) | None => false,
        }
    }

    /// Warp (c, w)'s turn of its scheduler: its instruction, then those after it that ptxas
    /// unrolled away (`timing::unrolled_loops`: they take no issue slot on silicon); when the turn's
    /// own instruction was one of those, the next real one too, if it is ready.
    fn issue_turn(&mut self, c: usize, w: usize) -> Result<(), Stop> {
        let removed_at = |e: &mut Self| e.group(c, w).is_some_and(|(pc, _)| e.unrolled_away(c, w, pc));
        let mut turn_was_removed = removed_at(self);
        // Removed instructions only close straight-line loops of at most `timing::MAX_TRIP`
        // trips, so a run of them ends (an empty loop ptxas deleted: its step, compare and branch
        // for each trip); the bound only guards against a mistake there.
        for _ in 0..timing::MAX_TRIP * 8 {
            let issued_ok = self.issue_warp(c as u32, w as u32);
            // its instruction changed lane states (its own, or others' it released)
            self.epoch += 1;
            issued_ok?;
            let ws = &self.ctas[c].warps[w];
            if ws.exited || ws.op.is_some() {
                break;
            }
            if removed_at(self) {
                continue;
            }
            if std::mem::take(&mut turn_was_removed) && self.eligibility(c, w, true) == Stall::Ready {
                continue;
            }
            break;
        }
        Ok(())
    }

    /// [`Machine::issue_group`] of warp (c, w), memoized for the current [`Engine::epoch`].
    pub(super) fn group(&mut self, c: usize, w: usize) -> Option<(u32, u32)> {
        let epoch = self.epoch;
        let (at, g) = self.ctas[c].warps[w].group;
        if at == epoch {
            return g;
        }
        let g = self.m.issue_group(c as u32, w as u32);
        self.ctas[c].warps[w].group = (epoch, g);
        g
    }

    /// Why warp (c, w) cannot issue now, or `Ready`.
    pub(super) fn eligibility(&mut self, c: usize, w: usize, register: bool) -> Stall {
        let ws = &self.ctas[c].warps[w];
        if ws.exited {
            return Stall::Exited;
        }
        if let Some(op) = &ws.op {
            if op.parts.iter().any(|p| p.suspended) {
                return Stall::TryWaitSuspended;
            }
            let waiting_port = op.queued || op.parts.iter().any(|p| p.accepted < p.reqs.len());
            return if waiting_port { Stall::UnitBackpressure } else { Stall::MbarrierWait };
        }
        if ws.next_issue > self.cycle {
            return ws.wait_why;
        }
        if ws.scoreboard_until > self.cycle {
            return Stall::ScoreboardDep;
        }
        let group = self.group(c, w);
        let ws = &self.ctas[c].warps[w];
        let mw = self.m.warp(c as u32, w as u32);
        let Some((pc, _)) = group else {
            for l in 0..WARP {
                match mw.lane[l] {
                    Lane::Blocked(Wait::ClusterBarrier(_)) => return Stall::ClusterBarrierWait,
                    Lane::Blocked(Wait::CpAsyncGroups(_) | Wait::BulkGroups(..)) => return Stall::AsyncWait,
                    _ => {}
                }
            }
            return if mw.exited() { Stall::Exited } else { Stall::BarrierWait };
        };
        if ws.barrier_back > self.cycle && self.m.module().kernel.body.get(pc as usize).is_some_and(|i| exec::runs_ahead_of_barrier(i.op) == exec::RunAhead::No) {
            return Stall::BarrierWait;
        }
        let Some(inf) = self.info.get(pc as usize) else { return Stall::Ready };
        // what ptxas unrolled away waits for nothing
        if self.unrolled_away(c, w, pc) {
            return Stall::Ready;
        }
        // a renaming mov waits for nothing but its destinations' earlier writers
        let srcs: &[u32] = if inf.rename { &[] } else { &inf.srcs };
        let written = srcs.iter().chain(&inf.dsts).map(|&r| ws.ready[r as usize]);
        let read = inf.dsts.iter().map(|&r| ws.read_pending[r as usize]);
        let until = written.chain(read).max().unwrap_or(0);
        if until > self.cycle {
            if !mw.lane.iter().any(|l| matches!(l, Lane::Blocked(_))) {
                self.ctas[c].warps[w].scoreboard_until = until;
            }
            return Stall::ScoreboardDep;
        }
        let s = w % self.cfg.issue.schedulers.max(1) as usize;
        let busy = match inf.pipe {
            IssuePipe::None => false,
            IssuePipe::Fma | IssuePipe::Imad => self.ctas[c].fma_free[s] > self.cycle,
            IssuePipe::Alu => self.ctas[c].alu_free[s] > self.cycle,
        };
        if busy {
            return Stall::PipeThrottle;
        }
        // the TMA front end takes one command per `tma.command_cycles` (a prefetch:
        // `tma.prefetch_command_cycles`)
        if inf.class == Class::Tma && self.ctas[c].tma.next_command > self.cycle && self.m.module().kernel.body.get(pc as usize).is_some_and(|i| tma::front_end_cycles(i.op, &self.cfg.tma) > 0) {
            return Stall::MemoryThrottle;
        }
        // the warp's own spacing after a shared-memory access or an mbarrier instruction
        let memory = matches!(inf.class, Class::Mem | Class::CpAsync | Class::AsyncStore);
        let mbarrier = matches!(inf.class, Class::Mbarrier(_));
        if (memory || mbarrier) && self.ctas[c].warps[w].smem_issue_until > self.cycle {
            return Stall::MemoryThrottle;
        }
        // the SM's path into the MbarrierUnit, turn by turn among the warps that wait for it
        if mbarrier && self.ctas[c].mem.syncs.throttled(self.cycle, self.cfg.sync.mbarrier_queue_cycles, w, register) {
            return Stall::MemoryThrottle;
        }
        if memory {
            let plain_store = inf.class == Class::Mem && !inf.load && !inf.atomic;
            let pipe = self.lane0_pipe(c as u32, w as u32, pc);
            let (now, cfg) = (self.cycle, &self.cfg);
            let queue = match pipe {
                Pipe::Smem => cfg.smem.queue_cycles,
                Pipe::Global => cfg.global.queue_cycles,
                Pipe::Dsmem => cfg.dsmem.queue_cycles,
                Pipe::Fixed(_) => 0,
            };
            // A plain store waits for a place in the SM's store queue instead of the pipe's
            // booking horizon: the queue holds `global.store_queue` stores whatever their size
            // (calibration/gmem_stores.ptx).
            let cs = &mut self.ctas[c];
            let busy = if pipe == Pipe::Global && plain_store {
                let full = cs.stores.full(now, cfg.global.store_queue);
                cs.mem.global.throttled_by(full, now, w, register)
            } else {
                cs.mem.of(pipe).is_some_and(|b| b.throttled(now, queue, w, register))
            };
            if register {
                cs.warps[w].pipe = Some(pipe);
            }
            if busy {
                return Stall::MemoryThrottle;
            }
        }
        Stall::Ready
    }

    pub(super) fn issue_warp(&mut self, c: u32, w: u32) -> Result<(), Stop> {
        // its lanes change: a scoreboard wait found for its old group no longer holds
        self.ctas[c as usize].warps[w as usize].scoreboard_until = 0;
        // The pipe this warp's instruction was checked against: its scheduler waits no more
        // (an access with every guard false books nothing, but was waited for).
        if let Some(p) = self.ctas[c as usize].warps[w as usize].pipe.take() {
            if let Some(b) = self.ctas[c as usize].mem.of(p) {
                b.issued(w as usize);
            }
        }
        let (pc, group) = self.group(c as usize, w as usize).expect("eligible warp has a group");
        if self.hold_for_ordering(c, w, pc, group) {
            return Ok(());
        }
        let module = self.m.module();
        let Some(ins) = module.kernel.body.get(pc as usize) else {
            // Falling off the end of the kernel is an implicit exit (no instruction retires).
            self.m.implicit_exit(c, w, group);
            self.m.progress();
            return self.on_exit(c, w);
        };
        let class = self.info[pc as usize].class;
        match class {
            Class::Mbarrier(family) => self.issue_mbarrier(c, w, pc, group, ins, family),
            Class::NamedBarrier => self.issue_named(c, w, pc, group, ins),
            Class::ClusterBarrier => self.issue_cluster(c, w, pc, group, ins),
            Class::Compute | Class::Tma | Class::Branch | Class::Sleep | Class::Mem | Class::CpAsync | Class::AsyncStore => self.issue_golden(c, w, pc, group, ins, class),
        }
    }

    /// A fence, or a release at cluster scope or wider (`timing::ordering_of`): the first time
    /// the warp's turn comes, the instruction does not issue; the warp waits for the ordering (a
    /// release also for the warp's writes still in flight), then issues it. Lanes whose guards are
    /// all false order nothing.
    fn hold_for_ordering(&mut self, c: u32, w: u32, pc: u32, group: u32) -> bool {
        let Some(order) = self.info.get(pc as usize).map(|i| i.ordering) else { return false };
        if order == Ordering::None {
            return false;
        }
        if self.ctas[c as usize].warps[w as usize].ordered.take() == Some((pc, group)) {
            return false;
        }
        if self.m.guard_mask(c, w, pc, group) == 0 {
            return false;
        }
        let now = self.cycle;
        let cycles = timing::ordering_cycles(order, &self.cfg);
        let ws = &mut self.ctas[c as usize].warps[w as usize];
        // The drain's round trip covers writes still in flight; later ones extend it.
        let until = if order == Ordering::ReleaseDrain { (now + cycles).max(ws.writes_done) } else { now + cycles };
        ws.ordered = Some((pc, group));
        ws.next_issue = until.max(now + 1);
        ws.wait_why = Stall::MemoryOrder;
        true
    }

    /// A non-synchronizing instruction: the golden body, at issue.
    pub(super) fn issue_golden(&mut self, c: u32, w: u32, pc: u32, group: u32, ins: &'p Instr, class: Class) -> Result<(), Stop> {
        let mask = self.m.guard_mask(c, w, pc, group);
        let removed = self.unrolled_away(c as usize, w as usize, pc);
        let (ready_at, copy_done, store_done) = match class {
            Class::Mem | Class::CpAsync | Class::AsyncStore if mask != 0 => self.mem_cost(c, w, pc, mask, ins, class),
            // ptxas unrolled the loop: the value is a constant of the unrolled copy
            _ if removed => (self.cycle, self.cycle, self.cycle),
            _ if self.info[pc as usize].rename => {
                let ws = &self.ctas[c as usize].warps[w as usize];
                let ready = self.info[pc as usize].srcs.iter().map(|&r| ws.ready[r as usize]).max().unwrap_or(0);
                (ready.max(self.cycle), self.cycle, self.cycle)
            }
            _ => (self.cycle + self.info[pc as usize].latency, self.cycle, self.cycle),
        };
        self.m.count_retired(mask);
        if self.recording() {
            self.m.start_record(Retire { step: self.cycle, cta: c, warp: w, pc, mask, ..Default::default() });
        }
        let findings = self.m.findings().len();
        let flow = if mask == 0 {
            Flow::Next
        } else {
            let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group };
            exec::dispatch(&mut cx, ins)?
        };
        // A prefetch the golden model accepted (no finding) goes to the TmaEngine as reads.
        if mask != 0 && self.m.findings().len() == findings && matches!(ins.op, Opcode::CpAsyncBulkPrefetch | Opcode::CpAsyncBulkPrefetchTensor) {
            self.send_prefetch(c, w, pc, mask, ins);
        }
        self.m.advance(c, w, pc, group, mask, flow);
        if self.m.has_pending() {
            self.take_pending(c, w, copy_done, store_done)?;
        }
        if ins.op == Opcode::CpAsyncBulkCommitGroup && mask != 0 {
            self.rtl_commit(c, w, mask);
        }
        // one TMA copy command per active lane (ptxas elects the lanes one at a time)
        if class == Class::Tma && mask != 0 && tma::front_end_cycles(ins.op, &self.cfg.tma) > 0 {
            self.ctas[c as usize].tma.next_command = self.cycle + mask.count_ones() as u64 * tma::front_end_cycles(ins.op, &self.cfg.tma);
        }
        if let Some(r) = self.m.take_record() {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: r });
        }
        let cfg = &self.cfg;
        let ws = &mut self.ctas[c as usize].warps[w as usize];
        // a partly unrolled loop's backward branch counts its run's iterations
        if let Unroll::Every { back_edge, .. } = self.info[pc as usize].unroll {
            if back_edge == pc {
                let taken = matches!(flow, Flow::Jump(_) | Flow::Lanes);
                match ws.loop_iters.iter_mut().find(|(b, _)| *b == pc) {
                    Some(e) => e.1 = if taken { e.1 + 1 } else { 0 },
                    None if taken => ws.loop_iters.push((pc, 1)),
                    None => {}
                }
            }
        }
        if mask != 0 && matches!(class, Class::Mem | Class::AsyncStore) && !self.info[pc as usize].load {
            ws.writes_done = ws.writes_done.max(if class == Class::AsyncStore { store_done } else { copy_done });
        }
        for &d in &self.info[pc as usize].dsts {
            ws.ready[d as usize] = ready_at;
        }
        if removed {
            // no issue slot, pipe or fetch redirect: silicon runs the unrolled copy straight on
            return match flow {
                Flow::Exit => {
                    self.m.progress();
                    self.on_exit(c, w)
                }
                Flow::Next | Flow::Jump(_) | Flow::Lanes => Ok(()),
            };
        }
        ws.next_issue = self.cycle + cfg.issue.warp_issue_cycles;
        ws.wait_why = Stall::Ready;
        // ptxas gives a plain global store a stall count of 4 (the MIO issue): a warp issues its
        // stores about one per `global.store_issue_cycles` (calibration/gmem_stores.ptx)
        if ws.store_issue_until > ws.next_issue {
            (ws.next_issue, ws.wait_why) = (ws.store_issue_until, Stall::MemoryThrottle);
        }
        if let Some(until) = self.wgmma.issued(c, w, ins, mask, self.cycle) {
            (ws.next_issue, ws.wait_why) = (ws.next_issue.max(until), Stall::WgmmaWait);
        }
        match flow {
            Flow::Jump(_) | Flow::Lanes => {
                ws.next_issue = self.cycle + cfg.issue.branch_cycles;
                ws.wait_why = Stall::Branch;
            }
            Flow::Exit => {
                self.m.progress();
                return self.on_exit(c, w);
            }
            // a branch costs its redirect whether taken or not (calibration/branch_loop.ptx)
            Flow::Next if ins.op == Opcode::Bra => {
                ws.next_issue = self.cycle + cfg.issue.branch_cycles;
                ws.wait_why = Stall::Branch;
            }
            Flow::Next => {}
        }
        if mask != 0 {
            let s = w as usize % cfg.issue.schedulers.max(1) as usize;
            let cs = &mut self.ctas[c as usize];
            match self.info[pc as usize].pipe {
                IssuePipe::None => {}
                IssuePipe::Fma => cs.fma_free[s] = self.cycle + 1,
                IssuePipe::Imad => cs.fma_free[s] = self.cycle + cfg.issue.imad_issue_cycles,
                IssuePipe::Alu => cs.alu_free[s] = self.cycle + cfg.issue.alu_issue_cycles,
            }
        }
        if class == Class::Sleep && mask != 0 {
            let ns = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group }.src(ins, 0, mask.trailing_zeros()) as f64;
            let cycles = timing::nanosleep_cycles(&self.cfg, ns);
            let ws = &mut self.ctas[c as usize].warps[w as usize];
            ws.next_issue = ws.next_issue.max(self.cycle + cycles);
            ws.wait_why = Stall::Sleep;
        }
        Ok(())
    }

    /// Retires an instruction that needed no unit (its lane states already set).
    pub(super) fn retire_plain(&mut self, c: u32, w: u32, pc: u32, group: u32, mask: u32) {
        self.m.count_retired(mask);
        self.m.advance(c, w, pc, group, mask, Flow::Next);
        if self.recording() {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: Retire { step: cy, cta: c, warp: w, pc, mask, ..Default::default() } });
        }
        let ws = &mut self.ctas[c as usize].warps[w as usize];
        ws.next_issue = self.cycle + self.cfg.issue.warp_issue_cycles;
        ws.wait_why = Stall::Ready;
    }

    /// Lanes of (c, w) exited: partial barrier arrivals complete, and a warp whose lanes are all
    /// done leaves the units.
    pub(super) fn on_exit(&mut self, c: u32, w: u32) -> Result<(), Stop> {
        let live = self.m.warp(c, w).live();
        // Lanes waiting at a non-aligned barrier for the rest of their warp: the warp arrives.
        for id in 0..16u8 {
            if self.ctas[c as usize].warps[w as usize].exit_arrival.is_some() {
                break;
            }
            if let Some(a) = exec::named_exit_arrival(&mut self.m, c, w, id) {
                let req = arrival_req(&a, w);
                self.ctas[c as usize].warps[w as usize].exit_arrival = Some(a);
                let at = self.cycle + self.cfg.sync.named_barrier_request_cycles;
                self.ctas[c as usize].named.q.push_back(Queued { at, req, tag: NamedTag::ExitPartial(w) });
            }
        }
        let cp = self.ctas[c as usize].warps[w as usize].cluster_partial;
        if cp != 0 && live != 0 && cp & live == live {
            self.ctas[c as usize].warps[w as usize].cluster_partial = 0;
            self.queue_cluster(c, w, ClusterBarrierOp::Arrive);
        }
        if live == 0 && !self.ctas[c as usize].warps[w as usize].exited {
            self.ctas[c as usize].warps[w as usize].exited = true;
            self.ctas[c as usize].named.exit_q.push_back(w);
            let k = self.m.cta_cluster(c) as usize;
            let rank = self.m.cta_rank(c);
            self.clusters[k].exit_q.push_back((rank, w));
        }
        Ok(())
    }
}
