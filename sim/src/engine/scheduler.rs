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
    /// The warp issues no earlier than this cycle ([`WarpMut::wait_until`]).
    next_issue: u64,
    /// Why the next issue waits on `next_issue`.
    wait_why: Stall,
    /// Its synchronizing instruction in a unit ([`WarpMut::set_op`], [`WarpMut::take_op`]).
    op: Option<SyncOp>,
    /// bar.red destinations awaiting the release.
    pub(super) red: Option<PendingRed>,
    /// An arrival made on the warp's behalf after an exit, waiting for the unit.
    pub(super) exit_arrival: Option<NamedArrival>,
    /// Lanes that executed a non-aligned barrier.cluster.arrive while the warp was divergent.
    pub(super) cluster_partial: u32,
    /// The memory pipe the next instruction was last checked against (it waits for it).
    pub(super) pipe: Option<Pipe>,
    /// Every lane is done ([`WarpMut::set_exited`]).
    exited: bool,
    pub(super) stall: Stall,
    /// When the warp's latest write (global, DSMEM) completes: a release at cluster scope or
    /// wider drains up to it.
    pub(super) writes_done: u64,
    /// When the warp's latest plain global store is acknowledged (sent by the SM's store path,
    /// the wait for a line its previous store wrote not counted: `memory::store_cost`): a release
    /// at cluster scope or wider starts its own drain no earlier.
    pub(super) writes_acked: u64,
    /// The instruction (pc, lane group) whose memory-ordering wait has been served: it issues next.
    pub(super) ordered: Option<(u32, u32)>,
    /// When each of the warp's global sectors in flight completes (at most
    /// `global.warp_inflight_sectors`; the earliest first).
    pub(super) gmem_inflight: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
    /// The cycle the warp's previous plain store took the SM's store path, and the 128-byte lines
    /// it wrote (a store to one of them again waits `global.store_line_reuse_cycles` after it).
    pub(super) last_store: (u64, Vec<u64>),
    /// The warp's next instruction issues no earlier than this: after a plain global store
    /// (`global.store_issue_cycles`), or while ptxas's scan of a warp-aggregated atomic runs
    /// (`latency.atomic_scan`, `timing::aggregates_atomic`).
    pub(super) issue_until: u64,
    /// The warp's next memory or mbarrier instruction issues no earlier than this after a
    /// shared-memory access (`smem.store_issue_cycles`, `smem.load_issue_cycles`) or an mbarrier
    /// instruction (`sync.mbarrier_issue_cycles`, `sync.test_wait_issue_cycles`).
    pub(super) smem_issue_until: u64,
    /// The warp's next mbarrier arrive with release semantics (`timing::arrive_releases`) issues
    /// no earlier than this: `sync.release_after_shared_write_cycles` after its latest
    /// shared-memory write.
    pub(super) release_until: u64,
    /// Per partly unrolled loop (its backward branch's pc): the iterations of the warp's current
    /// run of it (`timing::Unroll::Every`).
    pub(super) loop_iters: Vec<(u32, u32)>,
    /// The cycle the warp's release from a named barrier it ran ahead of
    /// (`exec::runs_ahead_of_barrier`) reaches it: its first instruction that waits for the
    /// barrier issues no earlier (those that run ahead are not held).
    pub(super) barrier_back: u64,
    /// The cycle the unit took the warp's latest named-barrier arrival: a release finds it asleep
    /// at the barrier for long when it has waited `sync.named_barrier_sleep_cycles` since.
    pub(super) barrier_arrival: u64,
    /// The cycle the warp last issued an instruction, and how many it has issued
    /// (`timing::InstrInfo::branch_guard` counts from them).
    pub(super) last_issue: u64,
    pub(super) issued: u64,
    /// Per register, the cycle and [`Self::issued`] count of its latest fixed-latency writer.
    pub(super) fixed_write: Vec<(u64, u64)>,
    /// The golden warp's [`hopsync_cosim::warp::Warp::next_group`] and the [`hopsync_cosim::warp::Warp::version`] it was derived at: it
    /// holds while the version stays (eligibility, the idle skip, the deadlock check and the
    /// issue ask for it every cycle; most cycles change no lane of most warps).
    pub(super) next_group: (u64, Option<(u32, u32)>),
    /// The warp's next instruction waits on the scoreboard until this cycle. Set only while
    /// none of its lanes is blocked and it has no operation in a unit: then nothing but its own
    /// issue changes its lanes (so its group) or its registers' ready cycles, and it cannot issue
    /// before this cycle; eligibility answers from it instead of deriving the group and the
    /// scoreboard again every cycle.
    scoreboard_until: u64,
    /// Register-only instructions the warp executed before their operands were ready
    /// (`timing::Lookahead::Defer`), oldest first: each still takes its issue slot and pipe.
    pub(super) set_aside: Vec<SetAside>,
    /// Per register: the [`SetAside::seq`] of the instruction set aside that writes it last, 0
    /// for none (its `ready` is then unknown until that instruction issues).
    pub(super) set_aside_writer: Vec<u64>,
    /// The last [`SetAside::seq`] handed out.
    pub(super) set_aside_seq: u64,
    /// Per register: its latest writer has a variable latency (a load, a unit's response: the
    /// SASS waits for it on a scoreboard, and ptxas schedules independent work before its use).
    pub(super) variable: Vec<bool>,
}

/// The release drains of one SM's warps (`Ordering::ReleaseDrain`): they complete in rounds of
/// at most `sync.release_round_size` releases issued within `sync.release_gather_cycles` of the
/// round's first; later ones share the next round. Silicon (calibration/fence_warps.ptx): up to
/// 12 warps fencing right after a bar.sync each take ~660 cycles; with 16 or more, the warps
/// released last take ~1120, however many there are.
#[derive(Debug, Clone, Default)]
pub(super) struct ReleaseRounds {
    /// The round in flight: until when a release joins it, and when it completes.
    current: Option<(u64, u64)>,
    /// The releases that joined the round in flight.
    joined: u64,
    /// The next round's completion, once a release waits for it.
    next: Option<u64>,
}

impl ReleaseRounds {
    /// A release issued at `now` joins a round: the cycle its drain completes.
    pub(super) fn join(&mut self, now: u64, s: &crate::config::Sync) -> u64 {
        if self.current.is_some_and(|(_, done)| done <= now) {
            // the round completed: the next one, if any, is in flight, gathering no more
            self.current = self.next.take().map(|done| (0, done)).filter(|&(_, done)| done > now);
            self.joined = 0;
        }
        match (self.current, self.next) {
            (None, _) => {
                let done = now + s.release_drain_cycles;
                self.current = Some((now + s.release_gather_cycles, done));
                self.joined = 1;
                done
            }
            (Some((gather, done)), _) if now <= gather && self.joined < s.release_round_size => {
                self.joined += 1;
                done
            }
            (Some(_), Some(next)) => next,
            (Some((_, done)), None) => {
                let next = (now + s.release_drain_cycles).max(done + s.release_round_gap_cycles);
                self.next = Some(next);
                next
            }
        }
    }
}

/// A register-only instruction executed (its values written, its record retired) before its
/// operands were ready: ptxas scheduled it after the instructions the warp issues meanwhile
/// (`timing::Lookahead`).
#[derive(Debug, Clone)]
pub(super) struct SetAside {
    /// Its place among the warp's instructions set aside (from 1).
    pub(super) seq: u64,
    /// Its pc.
    pub(super) pc: u32,
    /// Whether any lane's guard was true (it occupies its execution pipe).
    pub(super) active: bool,
    /// The cycle its operands written by instructions not set aside are ready.
    pub(super) operands_at: u64,
    /// The instructions set aside that write its other operands ([`SetAside::seq`]).
    pub(super) producers: Vec<u64>,
}

/// What the schedulers' loop reads of a warp before its [`WarpState`]: kept beside the CTA's
/// warps in one small array ([`CtaState::gates`]), so that a warp that waits (an operation in a
/// unit, its issue delay, its scoreboard) costs the loop one read of 32 bytes instead of the
/// cache lines of its state. It is the warp's own fields, copied by [`WarpMut`] at every change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Gate {
    /// The warp exited or has an operation in a unit.
    blocked: bool,
    /// [`WarpState::next_issue`].
    next_issue: u64,
    /// [`WarpState::wait_why`].
    wait_why: Stall,
    /// [`WarpState::scoreboard_until`].
    scoreboard_until: u64,
}

impl Gate {
    /// The gate of a warp not launched yet.
    pub(super) const CLOSED: Gate = Gate { blocked: true, next_issue: u64::MAX, wait_why: Stall::NotLaunched, scoreboard_until: 0 };

    /// The warp exited or has an operation in a unit.
    pub(super) fn blocked(&self) -> bool {
        self.blocked
    }

    /// See [`WarpState::next_issue`].
    pub(super) fn next_issue(&self) -> u64 {
        self.next_issue
    }

    /// Whether [`Engine::eligibility`] answers the warp a stall at `now` from these fields alone
    /// (neither `Ready` nor `PipeThrottle`, and without registering the warp anywhere): its
    /// checks up to the scoreboard wait, in their order. Between `next_issue` and
    /// `scoreboard_until` no instruction set aside is ready (`scoreboard_until` is at most the
    /// earliest of them, and is cleared whenever one is added or issues).
    pub(super) fn closed(&self, now: u64) -> bool {
        // (bitwise, not short-circuit: the warps' states are no pattern a branch predictor learns)
        let waiting = self.next_issue > now;
        self.blocked | waiting & !matches!(self.wait_why, Stall::Ready | Stall::PipeThrottle) | !waiting & (self.scoreboard_until > now)
    }
}

/// A warp's state open for changes: the fields its [`Gate`] copies change through it only, and
/// the gate is brought up to date when it is dropped.
pub(super) struct WarpMut<'a> {
    /// The warp's state.
    ws: &'a mut WarpState,
    /// Its entry of [`CtaState::gates`].
    gate: &'a mut Gate,
}

impl std::ops::Deref for WarpMut<'_> {
    type Target = WarpState;
    fn deref(&self) -> &WarpState {
        self.ws
    }
}

impl std::ops::DerefMut for WarpMut<'_> {
    fn deref_mut(&mut self) -> &mut WarpState {
        self.ws
    }
}

impl Drop for WarpMut<'_> {
    fn drop(&mut self) {
        *self.gate = self.ws.gate();
    }
}

impl WarpMut<'_> {
    /// The warp issues no earlier than `at`, for `why`.
    pub(super) fn wait_until(&mut self, at: u64, why: Stall) {
        (self.ws.next_issue, self.ws.wait_why) = (at, why);
    }

    /// The warp issues no earlier than `at` (nor than it already waited for), for `why`.
    pub(super) fn wait_at_least(&mut self, at: u64, why: Stall) {
        (self.ws.next_issue, self.ws.wait_why) = (self.ws.next_issue.max(at), why);
    }

    /// See [`WarpState::scoreboard_until`] (0: unknown, derive it again).
    pub(super) fn set_scoreboard_until(&mut self, at: u64) {
        self.ws.scoreboard_until = at;
    }

    /// Its synchronizing instruction goes to a unit.
    pub(super) fn set_op(&mut self, op: SyncOp) {
        self.ws.op = Some(op);
    }

    /// Its synchronizing instruction leaves the unit.
    pub(super) fn take_op(&mut self) -> Option<SyncOp> {
        self.ws.op.take()
    }

    /// Every lane of the warp is done.
    pub(super) fn set_exited(&mut self) {
        self.ws.exited = true;
    }

    /// A SASS sequence (`timing::InstrInfo::sequence`) whose result is ready at `done` holds the
    /// warp until its last instruction issues, `alu` before.
    pub(super) fn hold_for_sequence(&mut self, done: u64, alu: u64) {
        let last = done.saturating_sub(alu);
        if last > self.ws.next_issue {
            self.wait_until(last, Stall::ScoreboardDep);
        }
    }
}

impl CtaState {
    /// Warp `w`'s state open for changes ([`WarpMut`]).
    pub(super) fn warp_mut(&mut self, w: usize) -> WarpMut<'_> {
        WarpMut { ws: &mut self.warps[w], gate: &mut self.gates[w] }
    }
}

impl WarpState {
    /// The warp issues no earlier than this cycle.
    pub(super) fn next_issue(&self) -> u64 {
        self.next_issue
    }

    /// Its synchronizing instruction in a unit.
    pub(super) fn op(&self) -> Option<&SyncOp> {
        self.op.as_ref()
    }

    /// The same, for the unit's answers (its parts; it stays in the unit).
    pub(super) fn op_mut(&mut self) -> Option<&mut SyncOp> {
        self.op.as_mut()
    }

    /// Every lane of the warp is done.
    pub(super) fn exited(&self) -> bool {
        self.exited
    }

    /// The fields the schedulers' loop reads first.
    pub(super) fn gate(&self) -> Gate {
        Gate { blocked: self.exited || self.op.is_some(), next_issue: self.next_issue, wait_why: self.wait_why, scoreboard_until: self.scoreboard_until }
    }

    /// A warp not launched yet, with `nregs` registers all ready.
    pub(super) fn new(nregs: usize) -> WarpState {
        WarpState { ready: vec![0; nregs], read_pending: vec![0; nregs], last_store: (0, Vec::new()), issue_until: 0, smem_issue_until: 0, release_until: 0, loop_iters: Vec::new(), next_issue: 0, wait_why: Stall::NotLaunched, op: None, red: None, exit_arrival: None, cluster_partial: 0, pipe: None, exited: false, stall: Stall::NotLaunched, writes_done: 0, writes_acked: 0, ordered: None, gmem_inflight: Default::default(), barrier_back: 0, barrier_arrival: 0, last_issue: 0, issued: 0, fixed_write: vec![(0, 0); nregs], next_group: (u64::MAX, None), scoreboard_until: 0, set_aside: Vec::new(), set_aside_writer: vec![0; nregs], set_aside_seq: 0, variable: vec![false; nregs] }
    }

    /// Register `r` holds a value from cycle `at` on (its latest writer, which is not set aside,
    /// of a `variable` latency or not).
    pub(super) fn write_ready(&mut self, r: u32, at: u64, variable: bool) {
        self.ready[r as usize] = at;
        self.set_aside_writer[r as usize] = 0;
        self.variable[r as usize] = variable;
    }

    /// The cycle from which instruction `d` may issue as far as its registers go: what it
    /// reads written (a renaming `mov` waits only for a source an instruction set aside writes),
    /// and its destinations read by the queued stores that name them (the SASS read barrier). A
    /// destination still being written is no wait unless the instruction merges into it: ptxas
    /// gives the new value another register.
    pub(super) fn operands_at(&self, d: &DecodedInstr<'_>) -> u64 {
        // (explicit loops over the decoded lists: this runs several times per issued instruction)
        let mut at = 0;
        for &r in d.reads() {
            if !d.f.rename || self.set_aside_writer[r as usize] != 0 {
                at = at.max(self.ready[r as usize]);
            }
        }
        for &r in d.dsts() {
            at = at.max(self.read_pending[r as usize]);
        }
        // a branch on a compare: `total` after the compare, and whatever of it the instructions
        // issued in between do not cover after the last of them
        if let Some((g, total)) = d.f.branch_guard {
            let (w_at, n) = self.fixed_write[g as usize];
            let between = self.issued.saturating_sub(n + 1);
            at = at.max((w_at + total).max(self.last_issue + total.saturating_sub(between)));
        }
        // the SASS ptxas puts before the instruction's own, counted from the warp's previous
        // issue: the window base it reads again for a shared variable's address, the YIELD at
        // the top of a spin loop, mbarrier.init's init word and fence
        if d.f.sass_before > 0 {
            at = at.max(self.last_issue + 1 + d.f.sass_before);
        }
        at
    }

    /// Whether `d` may be set aside when its turn comes (`timing::Lookahead`), with `window`
    /// instructions at most set aside, once [`Self::fixed_at`].
    pub(super) fn sets_aside(&self, d: &DecodedInstr<'_>, window: usize) -> bool {
        d.f.lookahead == Lookahead::Defer && !d.f.rename && self.set_aside.len() < window
    }

    /// The cycle from which what `d` reads from fixed-latency writers is ready: ptxas orders
    /// fixed-latency work by stall counts in program order and schedules around the variable
    /// latencies only (loads, unit responses, and what waits for them, set aside).
    pub(super) fn fixed_at(&self, d: &DecodedInstr<'_>) -> u64 {
        let fixed = |&r: &u32| self.set_aside_writer[r as usize] == 0 && !self.variable[r as usize];
        d.reads().iter().copied().filter(|r| fixed(r)).map(|r| self.ready[r as usize]).max().unwrap_or(0)
    }

    /// The cycle from which the warp's next instruction `d` may issue or be set aside, as far
    /// as registers and the instructions set aside go (`u64::MAX`: not before one of those issues).
    pub(super) fn front_at(&self, d: &DecodedInstr<'_>, window: usize) -> u64 {
        if d.f.lookahead == Lookahead::Drain && !self.set_aside.is_empty() {
            return u64::MAX;
        }
        if self.sets_aside(d, window) {
            return self.fixed_at(d);
        }
        self.operands_at(d)
    }

    /// The earliest cycle an instruction set aside may issue without another issuing first.
    pub(super) fn earliest_set_aside(&self) -> u64 {
        self.set_aside.iter().filter(|d| d.producers.is_empty()).map(|d| d.operands_at).min().unwrap_or(u64::MAX)
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
                // GTO: the last warp first, then the others oldest first; LRR: the warps after
                // the last one in turn. A warp that waits (`Gate::closed`) answers a stall and
                // changes nothing: only the others are visited (a probe records every warp's
                // stall: it visits each).
                let open = if observe { u64::MAX >> (64 - count) } else { self.open_members(c, s, count) };
                let upto_last = u64::MAX >> (63 - last);
                let first = if gto { open & 1 << last } else { 0 };
                let (after, before) = if gto { (open & !first, 0) } else { (open & !upto_last, open & upto_last) };
                for at in bits_of64(first).chain(bits_of64(after)).chain(bits_of64(before)) {
                    let (at, w) = (at as usize, s + at as usize * sched);
                    // What a probe looks at after the scheduler issued must not change the state.
                    let st = self.eligibility(c, w, !issued);
                    if st == Stall::Ready && !issued {
                        self.ctas[c].rr[s] = at;
                        // a turn that only set instructions aside leaves the slot to the next warp
                        issued = self.issue_turn(c, w)?;
                        self.active_this_cycle = true;
                        if observe {
                            self.ctas[c].warps[w].stall = if issued { Stall::Issued } else { self.eligibility(c, w, false) };
                        }
                        if issued && !observe {
                            break;
                        }
                    } else {
                        if gto && at == last && st == Stall::PipeThrottle && count > 1 {
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

    /// The members of scheduler `s` of CTA `c` (warps s, s + schedulers, ...; `count` of them)
    /// whose gate is open now, as a mask over their place among the members.
    fn open_members(&self, c: usize, s: usize, count: usize) -> u64 {
        debug_assert!(count <= 64, "a scheduler of {count} warps");
        let (now, sched, cs) = (self.cycle, self.cfg.issue.schedulers as usize, &self.ctas[c]);
        let mut open = 0;
        for at in 0..count {
            let w = s + at * sched;
            debug_assert_eq!(cs.gates[w], cs.warps[w].gate(), "warp ({c}, {w})'s gate is stale: a change of its state went around `warp_mut`");
            let closed = cs.gates[w].closed(now);
            debug_assert!(!closed || cs.gates[w].blocked() || cs.gates[w].next_issue() > now || self.ready_set_aside(c, w).is_none(), "warp ({c}, {w}) waits on its scoreboard with an instruction set aside ready");
            open |= (!closed as u64) << at;
        }
        open
    }

    /// Whether ptxas unrolled the instruction at `pc` away for warp (c, w)'s current iteration of
    /// its loop (`timing::Unroll`).
    pub(super) fn unrolled_away(&self, c: usize, w: usize, pc: u32) -> bool {
        if !self.decoded.facts(pc).is_some_and(|f| f.unrolled) {
            return false;
        }
        match self.info.get(pc as usize).map(|i| i.unroll) {
            Some(Unroll::Gone) => true,
            Some(Unroll::Every { back_edge, factor }) => {
                let taken = self.ctas[c].warps[w].loop_iters.iter().find(|(b, _)| *b == back_edge).map_or(0, |(_, n)| *n);
                (taken + 1) % factor != 0
            }
            Some(Unroll::Kept) | None => false,
        }
    }

    /// Warp (c, w)'s turn of its scheduler: an instruction set aside whose operands are ready
    /// (it is older than the rest), or its next instruction, then those after it that ptxas
    /// unrolled away (`timing::unrolled_loops`: they take no issue slot on silicon); when the turn's
    /// own instruction was one of those, or was set aside (`timing::Lookahead`), the next real one
    /// too, if it is ready. Whether the turn took the scheduler's slot (not when it only set
    /// instructions aside).
    fn issue_turn(&mut self, c: usize, w: usize) -> Result<bool, Stop> {
        if let Some(k) = self.ready_set_aside(c, w) {
            self.issue_set_aside(c, w, k);
            return Ok(true);
        }
        let removed_at = |e: &mut Self| e.group(c, w).is_some_and(|(pc, _)| e.unrolled_away(c, w, pc));
        let mut turn_was_removed = removed_at(self);
        let mut slot = false;
        // Removed instructions only close straight-line loops of at most `timing::MAX_TRIP`
        // trips, so a run of them ends (an empty loop ptxas deleted: its step, compare and branch
        // for each trip); the bound only guards against a mistake there. Instructions set aside
        // are at most `issue.lookahead_instructions`.
        for _ in 0..timing::MAX_TRIP * 8 {
            let aside = self.front_sets_aside(c, w);
            let issued_ok = if aside { self.set_aside_front(c as u32, w as u32) } else { self.issue_warp(c as u32, w as u32) };
            slot |= !aside;
            issued_ok?;
            let ws = &self.ctas[c].warps[w];
            if ws.exited() || ws.op().is_some() {
                break;
            }
            if removed_at(self) {
                continue;
            }
            if (aside || std::mem::take(&mut turn_was_removed)) && self.front_eligibility(c, w, true) == Stall::Ready {
                continue;
            }
            break;
        }
        Ok(slot)
    }

    /// The oldest instruction set aside by warp (c, w) that may take its issue slot now: its
    /// operands ready, its execution pipe free.
    fn ready_set_aside(&self, c: usize, w: usize) -> Option<usize> {
        let ws = &self.ctas[c].warps[w];
        let s = w % self.cfg.issue.schedulers.max(1) as usize;
        ws.set_aside.iter().position(|d| d.producers.is_empty() && d.operands_at <= self.cycle && !(d.active && self.decoded.facts(d.pc).is_some_and(|f| self.pipe_busy(c, s, f.pipe))))
    }

    /// Whether execution pipe `pipe` of scheduler `s` of CTA `c` is busy this cycle.
    fn pipe_busy(&self, c: usize, s: usize, pipe: IssuePipe) -> bool {
        match pipe {
            IssuePipe::None => false,
            IssuePipe::Fma | IssuePipe::Imad => self.ctas[c].fma_free[s] > self.cycle,
            IssuePipe::Alu => self.ctas[c].alu_free[s] > self.cycle,
        }
    }

    /// Scheduler `s` of CTA `c` issued an instruction of `pipe`: the pipe is busy for its
    /// issue cycles.
    fn book_pipe(&mut self, c: usize, s: usize, pipe: IssuePipe) {
        let (now, cfg) = (self.cycle, &self.cfg.issue);
        let cs = &mut self.ctas[c];
        match pipe {
            IssuePipe::None => {}
            IssuePipe::Fma => cs.fma_free[s] = now + 1,
            IssuePipe::Imad => cs.fma_free[s] = now + cfg.imad_issue_cycles,
            IssuePipe::Alu => cs.alu_free[s] = now + cfg.alu_issue_cycles,
        }
    }

    /// Whether warp (c, w)'s next instruction is set aside when its turn comes: register-only,
    /// its operands not ready, room among the instructions set aside.
    fn front_sets_aside(&mut self, c: usize, w: usize) -> bool {
        let Some((pc, _)) = self.group(c, w) else { return false };
        let Some(d) = self.decoded.at(pc) else { return false };
        let ws = &self.ctas[c].warps[w];
        !self.unrolled_away(c, w, pc) && ws.sets_aside(&d, self.cfg.issue.lookahead_instructions) && ws.operands_at(&d) > self.cycle && ws.fixed_at(&d) <= self.cycle
    }

    /// The warp issues instruction `pc` now (`timing::InstrInfo::branch_guard`).
    fn count_issue(&mut self, c: usize, w: usize, pc: u32) {
        let d = self.decoded.at(pc).expect("an issued instruction is in the kernel");
        let ws = &mut self.ctas[c].warps[w];
        ws.last_issue = self.cycle;
        ws.issued += 1;
        if d.f.class == Class::Compute {
            for &r in d.dsts() {
                ws.fixed_write[r as usize] = (self.cycle, ws.issued);
            }
        }
    }

    /// Instruction set aside `k` of warp (c, w) takes its issue slot: its pipe, and its results
    /// from its latency on (for the instructions, set aside or not, that read them).
    fn issue_set_aside(&mut self, c: usize, w: usize, k: usize) {
        let d = self.ctas[c].warps[w].set_aside.remove(k);
        self.count_issue(c, w, d.pc);
        let s = w % self.cfg.issue.schedulers.max(1) as usize;
        if d.active {
            self.book_pipe(c, s, self.decoded.at(d.pc).expect("an instruction set aside is in the kernel").f.pipe);
        }
        let done = self.cycle + self.latency_now(c, w, d.pc);
        let inf = self.decoded.at(d.pc).expect("an instruction set aside is in the kernel");
        let mut ws = self.ctas[c].warp_mut(w);
        for &r in inf.dsts() {
            if ws.set_aside_writer[r as usize] == d.seq {
                ws.write_ready(r, done, false);
            }
        }
        for e in &mut ws.set_aside {
            if let Some(p) = e.producers.iter().position(|&q| q == d.seq) {
                e.producers.swap_remove(p);
                e.operands_at = e.operands_at.max(done);
            }
        }
        ws.set_scoreboard_until(0);
        ws.wait_until(self.cycle + self.cfg.issue.warp_issue_cycles, Stall::Ready);
        if inf.f.sequence && d.active {
            ws.hold_for_sequence(done, self.cfg.latency.alu);
        }
    }

    /// The result latency of compute instruction `pc` of warp (c, w) issuing now: its class's,
    /// and for an integer division the wait for its divisor's reciprocal, which ptxas starts
    /// as soon as the divisor is known (`timing::division_of`, `latency.div_reciprocal`).
    fn latency_now(&self, c: usize, w: usize, pc: u32) -> u64 {
        let inf = &self.info[pc as usize];
        let reciprocal = inf.divisor.map_or(0, |d| self.ctas[c].warps[w].ready[d as usize].saturating_add(self.cfg.latency.div_reciprocal).saturating_sub(self.cycle));
        inf.latency + reciprocal
    }

    /// Warp (c, w)'s next instruction is set aside: executed now (the golden body, its record),
    /// its issue slot and pipe taken when its operands are ready ([`Self::issue_set_aside`]).
    fn set_aside_front(&mut self, c: u32, w: u32) -> Result<(), Stop> {
        let (pc, group) = self.group(c as usize, w as usize).expect("eligible warp has a group");
        let ins = &self.m.module().kernel.body[pc as usize];
        let inf = self.decoded.at(pc).expect("an instruction set aside is in the kernel");
        let mask = self.m.guard_mask(c, w, pc, group);
        let ws = &mut self.ctas[c as usize].warps[w as usize];
        ws.set_aside_seq += 1;
        let seq = ws.set_aside_seq;
        let mut d = SetAside { seq, pc, active: mask != 0, operands_at: 0, producers: Vec::new() };
        for &r in inf.reads() {
            match ws.set_aside_writer[r as usize] {
                0 => d.operands_at = d.operands_at.max(ws.ready[r as usize]),
                q => d.producers.push(q),
            }
        }
        d.producers.sort_unstable();
        d.producers.dedup();
        for &r in inf.dsts() {
            d.operands_at = d.operands_at.max(ws.read_pending[r as usize]);
        }
        let (flow, _) = self.golden_body(c, w, pc, group, mask, ins)?;
        self.m.advance(c, w, pc, group, mask, flow);
        self.emit_retire();
        let dsts = self.decoded.at(pc).expect("an instruction set aside is in the kernel").dsts();
        let mut ws = self.ctas[c as usize].warp_mut(w as usize);
        for &r in dsts {
            ws.ready[r as usize] = u64::MAX;
            ws.set_aside_writer[r as usize] = seq;
        }
        ws.set_aside.push(d);
        ws.set_scoreboard_until(0);
        Ok(())
    }

    /// [`hopsync_cosim::warp::Warp::next_group`] of warp (c, w), kept while its [`hopsync_cosim::warp::Warp::version`] stays.
    pub(super) fn next_group(&mut self, c: usize, w: usize) -> Option<(u32, u32)> {
        let mw = self.m.warp(c as u32, w as u32);
        let version = mw.version();
        let (at, g) = self.ctas[c].warps[w].next_group;
        if at == version {
            debug_assert_eq!(g, mw.next_group(), "warp ({c}, {w})'s group kept at version {version} is stale: a change of its lanes went uncounted");
            return g;
        }
        let g = mw.next_group();
        self.ctas[c].warps[w].next_group = (version, g);
        g
    }

    /// [`Machine::issue_group`] of warp (c, w) (from its kept [`Engine::next_group`]).
    pub(super) fn group(&mut self, c: usize, w: usize) -> Option<(u32, u32)> {
        let next = self.next_group(c, w);
        self.m.issue_group_after(c as u32, w as u32, next)
    }

    /// Why warp (c, w) cannot issue now, or `Ready`.
    pub(super) fn eligibility(&mut self, c: usize, w: usize, register: bool) -> Stall {
        self.eligibility_of(c, w, register, true)
    }

    /// Why warp (c, w)'s next instruction cannot issue (or be set aside) now, or `Ready`,
    /// leaving out the instructions set aside that are ready.
    fn front_eligibility(&mut self, c: usize, w: usize, register: bool) -> Stall {
        self.eligibility_of(c, w, register, false)
    }

    fn eligibility_of(&mut self, c: usize, w: usize, register: bool, set_aside_first: bool) -> Stall {
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
        // an instruction set aside whose operands are ready is older than the next one
        if set_aside_first && !ws.set_aside.is_empty() && self.ready_set_aside(c, w).is_some() {
            return Stall::Ready;
        }
        let ws = &self.ctas[c].warps[w];
        if ws.scoreboard_until > self.cycle {
            return Stall::ScoreboardDep;
        }
        let group = self.group(c, w);
        let ws = &self.ctas[c].warps[w];
        let mw = self.m.warp(c as u32, w as u32);
        let Some((pc, _)) = group else {
            for l in 0..WARP {
                match mw.lane()[l] {
                    Lane::Blocked(Wait::ClusterBarrier(_)) => return Stall::ClusterBarrierWait,
                    Lane::Blocked(Wait::CpAsyncGroups(_) | Wait::BulkGroups(..) | Wait::WgmmaGroups(_)) => return Stall::AsyncWait,
                    _ => {}
                }
            }
            return if mw.exited() { Stall::Exited } else { Stall::BarrierWait };
        };
        let Some(d) = self.decoded.at(pc) else { return Stall::Ready };
        if ws.barrier_back > self.cycle && d.f.waits_for_barrier {
            return Stall::BarrierWait;
        }
        // what ptxas unrolled away waits for nothing
        if self.unrolled_away(c, w, pc) {
            return Stall::Ready;
        }
        // its operands, and the instructions set aside (`timing::Lookahead`): what is not ready
        // is set aside if it may be, else it waits
        let until = ws.operands_at(&d);
        let drain = d.f.lookahead == Lookahead::Drain && !ws.set_aside.is_empty();
        if until > self.cycle || drain {
            if !drain && ws.sets_aside(&d, self.cfg.issue.lookahead_instructions) && ws.fixed_at(&d) <= self.cycle {
                return Stall::Ready;
            }
            if !mw.lane().iter().any(|l| matches!(l, Lane::Blocked(_))) {
                let until = if drain { u64::MAX } else { until }.min(ws.earliest_set_aside());
                self.ctas[c].warp_mut(w).set_scoreboard_until(until);
            }
            return Stall::ScoreboardDep;
        }
        let s = w % self.cfg.issue.schedulers.max(1) as usize;
        if self.pipe_busy(c, s, d.f.pipe) {
            return Stall::PipeThrottle;
        }
        // a store into global memory waits for the TMA front end (`tma::waits_for_front_end`)
        if d.f.class == Class::Tma && self.ctas[c].tma.front_free > self.cycle && self.m.module().kernel.body.get(pc as usize).is_some_and(tma::waits_for_front_end) {
            return Stall::MemoryThrottle;
        }
        // the warp's own spacing after a shared-memory access or an mbarrier instruction
        let memory = matches!(d.f.class, Class::Mem | Class::CpAsync | Class::AsyncStore);
        let mbarrier = matches!(d.f.class, Class::Mbarrier(_));
        if (memory || mbarrier) && self.ctas[c].warps[w].smem_issue_until > self.cycle {
            return Stall::MemoryThrottle;
        }
        if d.f.arrive_releases && self.ctas[c].warps[w].release_until > self.cycle {
            return Stall::MemoryOrder;
        }
        // the SM's path into the MbarrierUnit, turn by turn among the warps that wait for it
        if mbarrier && self.ctas[c].mem.syncs.throttled(self.cycle, self.cfg.sync.mbarrier_queue_cycles, w, register) {
            return Stall::MemoryThrottle;
        }
        if memory {
            let plain_store = d.f.plain_store;
            let plain_load = d.f.plain_load;
            let pipe = self.lane0_pipe(c as u32, w as u32, pc);
            let (now, cfg) = (self.cycle, &self.cfg);
            // A plain store waits for a place in the SM's store queue instead of the pipe's
            // booking horizon: the queue holds `global.store_queue` stores whatever their size
            // (calibration/gmem_stores.ptx). A shared-memory access waits for a place in its
            // scheduler's queue, which holds `smem.queue_instructions` whatever their size
            // (calibration/mem_queues.ptx).
            let cs = &mut self.ctas[c];
            let busy = match pipe {
                Pipe::Global if plain_store => {
                    let full = cs.stores.full(now, cfg.global.store_queue);
                    cs.mem.global.throttled_by(full, now, w, register)
                }
                Pipe::Smem => {
                    let limit = if plain_load { cfg.smem.queue_instructions } else { cfg.smem.store_queue_instructions };
                    let full = cs.mem.smem.queued(now, w) >= limit;
                    cs.mem.smem.throttled_by(full, now, w, register)
                }
                Pipe::Global => cs.mem.global.throttled(now, cfg.global.queue_cycles, w, register),
                Pipe::Dsmem => cs.mem.dsmem.throttled(now, cfg.dsmem.queue_cycles, w, register),
                Pipe::Fixed(_) => false,
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
        self.ctas[c as usize].warp_mut(w as usize).set_scoreboard_until(0);
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
        let class = self.decoded.at(pc).expect("an issued instruction is in the kernel").f.class;
        self.count_issue(c as usize, w as usize, pc);
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
        if !self.decoded.facts(pc).is_some_and(|f| f.ordered) {
            return false;
        }
        let order = self.info[pc as usize].ordering;
        if self.ctas[c as usize].warps[w as usize].ordered.take() == Some((pc, group)) {
            return false;
        }
        if self.m.guard_mask(c, w, pc, group) == 0 {
            return false;
        }
        // A launch without cluster dimensions (the manifest's cluster of one CTA: the runner sets
        // no cluster attribute then): ptxas's barrier.cluster tests the launch (c[0x0][0x140])
        // and runs BAR.SYNC instead of MEMBAR.ALL.GPU + UCGABAR_ARV, so its release drains
        // nothing (calibration/release_stores.ptx on H100: arrive.release + wait 68 cycles, ~700
        // in a cluster launch).
        if self.info[pc as usize].class == Class::ClusterBarrier && self.m.cluster_ctas(self.m.cta_cluster(c)).len() == 1 {
            return false;
        }
        let now = self.cycle;
        let cycles = timing::ordering_cycles(order, &self.cfg);
        let cta = &mut self.ctas[c as usize];
        // The drain's round trip covers the warp's writes still in flight, and starts no
        // earlier than its plain global stores are acknowledged: silicon's MEMBAR.ALL.GPU takes
        // ~680 cycles alone and ~950..1050 after `hopsync gpu pack`'s trace stores, which the
        // store path holds (sm90.toml `sync.release_drain_cycles`).
        let until = if order == Ordering::ReleaseDrain {
            let ws = &cta.warps[w as usize];
            let (done, acked) = (ws.writes_done, ws.writes_acked);
            cta.releases.join(now, &self.cfg.sync).max(done).max(acked + self.cfg.sync.release_drain_cycles)
        } else {
            now + cycles
        };
        let mut ws = cta.warp_mut(w as usize);
        ws.ordered = Some((pc, group));
        ws.wait_until(until.max(now + 1), Stall::MemoryOrder);
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
            _ if self.decoded.facts(pc).is_some_and(|f| f.rename) => {
                let ws = &self.ctas[c as usize].warps[w as usize];
                let srcs = self.decoded.at(pc).map_or(&[][..], |d| d.srcs());
                let ready = srcs.iter().map(|&r| ws.ready[r as usize]).max().unwrap_or(0);
                (ready.max(self.cycle), self.cycle, self.cycle)
            }
            _ => (self.cycle + self.latency_now(c as usize, w as usize, pc), self.cycle, self.cycle),
        };
        let (flow, findings) = self.golden_body(c, w, pc, group, mask, ins)?;
        // A prefetch the golden model accepted (no finding) goes to the TmaEngine as reads.
        if mask != 0 && self.m.findings().len() == findings && matches!(ins.op, Opcode::CpAsyncBulkPrefetch | Opcode::CpAsyncBulkPrefetchTensor) {
            self.send_prefetch(c, w, pc, mask, ins);
        }
        // prefetch.tensormap: the TMA unit fetches the descriptor now (lane 0 of the guard's)
        if mask != 0 && ins.op == Opcode::Prefetch && ins.has(Mod::Tensormap) {
            let map = self.tensor_map_address((c, w, mask.trailing_zeros(), pc));
            self.tensor_map_ready(c, map);
        }
        self.m.advance(c, w, pc, group, mask, flow);
        if self.m.has_pending() {
            self.take_pending(c, w, copy_done, store_done)?;
        }
        if ins.op == Opcode::CpAsyncBulkCommitGroup && mask != 0 {
            self.rtl_commit(c, w, mask);
        }
        // one TMA command per active lane: ptxas issues them in a loop over the lanes (ELECT, the
        // copy, BRA.U.ANY), which holds the warp (`tma::warp_issue_cycles`)
        let tma_hold = if class == Class::Tma && mask != 0 { mask.count_ones() as u64 * tma::warp_issue_cycles(ins, &self.cfg.tma) } else { 0 };
        self.emit_retire();
        let cfg = &self.cfg;
        let inf = self.decoded.at(pc).expect("an issued instruction is in the kernel");
        let mut ws = self.ctas[c as usize].warp_mut(w as usize);
        // a partly unrolled loop's backward branch counts its run's iterations
        let unroll = if inf.f.unrolled { self.info[pc as usize].unroll } else { Unroll::Kept };
        if let Unroll::Every { back_edge, .. } = unroll {
            if back_edge == pc {
                let taken = matches!(flow, Flow::Jump(_) | Flow::Lanes);
                match ws.loop_iters.iter_mut().find(|(b, _)| *b == pc) {
                    Some(e) => e.1 = if taken { e.1 + 1 } else { 0 },
                    None if taken => ws.loop_iters.push((pc, 1)),
                    None => {}
                }
            }
        }
        if mask != 0 && matches!(class, Class::Mem | Class::AsyncStore) && !inf.f.load {
            ws.writes_done = ws.writes_done.max(if class == Class::AsyncStore { store_done } else { copy_done });
        }
        // a memory access's result has a variable latency, and a renaming mov's of one
        let variable = mask != 0 && matches!(class, Class::Mem | Class::CpAsync | Class::AsyncStore) || inf.f.rename && inf.srcs().iter().any(|&r| ws.variable[r as usize] && ws.ready[r as usize] > self.cycle);
        for &d in inf.dsts() {
            ws.write_ready(d, ready_at, variable);
        }
        if removed {
            drop(ws);
            // no issue slot, pipe or fetch redirect: silicon runs the unrolled copy straight on
            return match flow {
                Flow::Exit => {
                    self.m.progress();
                    self.on_exit(c, w)
                }
                Flow::Next | Flow::Jump(_) | Flow::Lanes => Ok(()),
            };
        }
        ws.wait_until(self.cycle + cfg.issue.warp_issue_cycles, Stall::Ready);
        if tma_hold > 0 {
            ws.wait_at_least(self.cycle + tma_hold, Stall::MemoryThrottle);
        }
        // ptxas gives a plain global store a stall count of 4 (the MIO issue): a warp issues its
        // stores about one per `global.store_issue_cycles` (calibration/gmem_stores.ptx)
        if ws.issue_until > ws.next_issue {
            let until = ws.issue_until;
            ws.wait_until(until, Stall::MemoryThrottle);
        }
        if inf.f.sequence && mask != 0 {
            ws.hold_for_sequence(ready_at, cfg.latency.alu);
        }
        if let Some(until) = self.wgmma.issued(c, w, ins, mask, self.cycle) {
            ws.wait_at_least(until, Stall::WgmmaWait);
        }
        let if_converted = inf.f.if_converted;
        match flow {
            // ptxas predicated the skipped instructions (or deleted the branch): no BRA on silicon
            Flow::Jump(_) | Flow::Lanes | Flow::Next if if_converted => {}
            Flow::Jump(_) | Flow::Lanes => {
                // (and the YIELD before a peeled spin loop's retry: `timing::YieldSite::Retry`)
                let retry_yield = self.info[pc as usize].retry_yield_cycles;
                ws.wait_until(self.cycle + cfg.issue.branch_cycles + cfg.issue.branch_taken_cycles + retry_yield, Stall::Branch);
            }
            Flow::Exit => {
                drop(ws);
                self.m.progress();
                return self.on_exit(c, w);
            }
            // a branch not taken costs its stall count (calibration/branch_shapes.ptx)
            Flow::Next if ins.op == Opcode::Bra => {
                ws.wait_until(self.cycle + cfg.issue.branch_cycles, Stall::Branch);
            }
            Flow::Next => {}
        }
        drop(ws);
        if mask != 0 {
            let s = w as usize % cfg.issue.schedulers.max(1) as usize;
            self.book_pipe(c as usize, s, inf.f.pipe);
        }
        if class == Class::Sleep && mask != 0 {
            let ns = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group }.src(ins, 0, mask.trailing_zeros()) as f64;
            let cycles = timing::nanosleep_cycles(&self.cfg, ns);
            self.ctas[c as usize].warp_mut(w as usize).wait_at_least(self.cycle + cycles, Stall::Sleep);
        }
        Ok(())
    }

    /// The golden body of a non-synchronizing instruction of warp (c, w) with lanes `mask`
    /// active (its record started when recording): its control flow, and the findings before it.
    fn golden_body(&mut self, c: u32, w: u32, pc: u32, group: u32, mask: u32, ins: &'p Instr) -> Result<(Flow, usize), Stop> {
        self.m.count_retired(mask);
        if self.recording() {
            self.m.start_record(Retire { step: self.cycle, cta: c, warp: w, pc, mask, ..Default::default() });
        }
        let findings = self.m.findings().len();
        if mask == 0 {
            return Ok((Flow::Next, findings));
        }
        let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group };
        Ok((exec::dispatch(&mut cx, ins)?, findings))
    }

    /// The record the golden body made, retired at this cycle.
    fn emit_retire(&mut self) {
        if let Some(r) = self.m.take_record() {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: r });
        }
    }

    /// Retires an instruction that needed no unit (its lane states already set).
    pub(super) fn retire_plain(&mut self, c: u32, w: u32, pc: u32, group: u32, mask: u32) {
        self.m.count_retired(mask);
        self.m.advance(c, w, pc, group, mask, Flow::Next);
        if self.recording() {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: Retire { step: cy, cta: c, warp: w, pc, mask, ..Default::default() } });
        }
        self.ctas[c as usize].warp_mut(w as usize).wait_until(self.cycle + self.cfg.issue.warp_issue_cycles, Stall::Ready);
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
        if live == 0 && !self.ctas[c as usize].warps[w as usize].exited() {
            self.ctas[c as usize].warp_mut(w as usize).set_exited();
            self.ctas[c as usize].named.exit_q.push_back(w);
            let k = self.m.cta_cluster(c) as usize;
            let rank = self.m.cta_rank(c);
            self.clusters[k].exit_q.push_back((rank, w));
        }
        Ok(())
    }
}

#[cfg(test)]
mod release_tests {
    use super::ReleaseRounds;
    use crate::SmConfig;

    #[test]
    fn releases_beyond_a_round_share_the_next_one() {
        let s = SmConfig::sm90().sync;
        let mut r = ReleaseRounds::default();
        let first = r.join(1000, &s);
        assert_eq!(first, 1000 + s.release_drain_cycles);
        for k in 1..s.release_round_size {
            assert_eq!(r.join(1000 + k, &s), first, "release {k} joins the first round");
        }
        let next = r.join(1020, &s);
        assert_eq!(next, (1020 + s.release_drain_cycles).max(first + s.release_round_gap_cycles));
        assert_eq!(r.join(1400, &s), next, "a release while the first round is in flight");
        // once both completed, a release starts a round of its own
        assert_eq!(r.join(next + 1, &s), next + 1 + s.release_drain_cycles);
    }
}
