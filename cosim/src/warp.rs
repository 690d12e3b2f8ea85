//! A warp of the golden machine: its registers, and its lanes' pcs, states, call stacks and
//! convergence barriers, from which [`Warp::next_group`] picks the group it runs next.
//!
//! What `next_group` reads is private and changes only through setters that count the changes
//! ([`Warp::version`]): an engine that asks for the group every cycle (hopsync-sim's schedulers)
//! keeps the one it derived while the version stays.

use crate::machine::{Frame, Lane, PartialArrival, Poll, WARP};
use crate::reconverge::{self, ConvBarrier};

/// A warp.
#[derive(Debug, Clone)]
pub struct Warp {
    /// Registers, `reg * 32 + lane`.
    pub regs: Vec<u64>,
    /// Per-lane program counters ([`Warp::set_pc`]).
    pc: [u32; WARP],
    /// Per-lane state ([`Warp::set_lane`]).
    lane: [Lane; WARP],
    /// Lanes that exist (threads of the CTA).
    pub launched: u32,
    /// Last unsuccessful mbarrier poll, cleared on progress.
    pub polling: Option<Poll>,
    /// Per barrier id, lanes that reached a non-aligned barrier while the warp was divergent.
    pub bar_partial: [u32; 16],
    /// What each lane of `bar_partial` executed, used when the warp's arrival completes at
    /// another barrier instruction or because the rest of the warp exited.
    pub bar_partial_lanes: Vec<PartialArrival>,
    /// Per lane: the number of the cp.async group now open (copies issued go into it; a commit
    /// closes it and opens the next).
    pub cp_open_group: [u64; WARP],
    /// cp.async copies in flight: (lane, group, ready_at).
    pub cp_inflight: Vec<(u32, u64, u64)>,
    /// Per lane: the mbarrier (cta, offset) of its last arrive and that arrive's phase number,
    /// for the side check of token waits (PTX 9.7.13.15.16: current or preceding phase).
    pub last_arrive: [Option<(u32, u32, u64)>; WARP],
    /// Per lane: the cluster-barrier phase it arrived in and has not yet waited for.
    pub cluster_arrival: [Option<u64>; WARP],
    /// Per lane: the calls it is in, outermost first (empty in the entry; [`Warp::push_frame`], [`Warp::pop_frame`]).
    frames: Vec<Vec<Frame>>,
    /// Convergence barriers of divergent branches whose lanes have not all met at the join yet
    /// ([`Warp::conv_mut`]).
    conv: Vec<ConvBarrier>,
    /// The aligned `bar.sync` / `barrier.sync.aligned` all the warp's live lanes wait at: until
    /// it completes they still issue the register-only instructions after it
    /// ([`crate::exec::runs_ahead_of_barrier`]; ptxas emits `BAR.SYNC.DEFER_BLOCKING`).
    pub run_ahead: Option<u8>,
    /// Counts the changes of what [`Warp::next_group`] reads (`pc`, `lane`, `frames`, `conv`,
    /// private so that every change goes through a setter that counts it): a group derived at
    /// one version holds while the version stays ([`Warp::version`]).
    version: u64,
    /// Lanes whose `lane` is `Ready`, kept by [`Warp::set_lane`] (the schedulers read it every
    /// cycle; the states themselves are 32 enums of 24 bytes).
    ready: u32,
    /// Lanes whose `lane` is not `Done`, kept by [`Warp::set_lane`].
    live: u32,
    /// Lanes inside a call (`frames` not empty), kept by [`Warp::push_frame`] / [`Warp::pop_frame`].
    in_calls: u32,
}

impl Warp {
    /// A warp at `pc` whose lanes `launched` are ready (the others done), with registers `regs`.
    pub fn new(regs: Vec<u64>, pc: u32, launched: u32) -> Warp {
        let lane = std::array::from_fn(|l| if launched >> l & 1 == 1 { Lane::Ready } else { Lane::Done });
        Warp {
            regs,
            pc: [pc; WARP],
            lane,
            launched,
            polling: None,
            bar_partial: [0; 16],
            bar_partial_lanes: Vec::new(),
            cp_open_group: [0; WARP],
            cp_inflight: Vec::new(),
            cluster_arrival: [None; WARP],
            last_arrive: [None; WARP],
            frames: vec![Vec::new(); WARP],
            conv: Vec::new(),
            run_ahead: None,
            version: 0,
            ready: launched,
            live: launched,
            in_calls: 0,
        }
    }

    /// Per-lane program counters.
    pub fn pc(&self) -> &[u32; WARP] {
        &self.pc
    }
    /// Per-lane states.
    pub fn lane(&self) -> &[Lane; WARP] {
        &self.lane
    }
    /// Per lane: the calls it is in, outermost first.
    pub fn frames(&self) -> &[Vec<Frame>] {
        &self.frames
    }
    /// Convergence barriers whose lanes have not all met at the join yet.
    pub fn conv(&self) -> &[ConvBarrier] {
        &self.conv
    }
    /// How many times what [`Warp::next_group`] reads has changed: equal versions, equal groups.
    pub fn version(&self) -> u64 {
        self.version
    }
    /// Lane `l` goes to `pc`.
    pub fn set_pc(&mut self, l: usize, pc: u32) {
        if self.pc[l] != pc {
            self.pc[l] = pc;
            self.version += 1;
        }
    }
    /// The lanes in `mask` go to `pc` (a whole-warp [`Warp::set_pc`]).
    pub fn set_pcs(&mut self, mask: u32, pc: u32) {
        let mut changed = false;
        for (l, p) in self.pc.iter_mut().enumerate() {
            if mask >> l & 1 == 1 && *p != pc {
                *p = pc;
                changed = true;
            }
        }
        self.version += changed as u64;
    }
    /// Lane `l` is now `state`.
    pub fn set_lane(&mut self, l: usize, state: Lane) {
        if self.lane[l] != state {
            self.lane[l] = state;
            self.version += 1;
            let bit = 1u32 << l;
            self.ready = if state == Lane::Ready { self.ready | bit } else { self.ready & !bit };
            self.live = if state != Lane::Done { self.live | bit } else { self.live & !bit };
        }
    }
    /// Lane `l` enters a call.
    pub fn push_frame(&mut self, l: usize, frame: Frame) {
        self.frames[l].push(frame);
        self.in_calls |= 1 << l;
        self.version += 1;
    }
    /// Lane `l` returns from its innermost call.
    pub fn pop_frame(&mut self, l: usize) -> Option<Frame> {
        let frame = self.frames[l].pop();
        if self.frames[l].is_empty() {
            self.in_calls &= !(1 << l);
        }
        self.version += 1;
        frame
    }
    /// The convergence barriers, to change.
    pub fn conv_mut(&mut self) -> &mut Vec<ConvBarrier> {
        self.version += 1;
        &mut self.conv
    }

    /// `next_group` when some lane is inside a call: lanes ordered by (call sites, pc).
    fn next_group_in_calls(&self, held: u32) -> Option<(u32, u32)> {
        let key = |l: usize| self.frames[l].iter().map(|f| f.call_pc).chain(std::iter::once(self.pc[l]));
        let runs = |l: usize| self.lane[l] == Lane::Ready && held >> l & 1 == 0;
        let mut best: Option<usize> = None;
        for l in 0..WARP {
            if !runs(l) {
                continue;
            }
            if best.is_none_or(|b| key(l).cmp(key(b)) == std::cmp::Ordering::Less) {
                best = Some(l);
            }
        }
        let b = best?;
        let mask = (0..WARP).filter(|&l| runs(l) && key(l).eq(key(b))).fold(0, |m, l| m | 1 << l);
        Some((self.pc[b], mask))
    }

    /// Base of the current frame of a lane's local memory.
    pub fn frame_base(&self, lane: u32) -> u64 {
        self.frames.get(lane as usize).and_then(|f| f.last()).map(|f| f.base).unwrap_or(0)
    }

    /// Lanes not exited.
    pub fn live(&self) -> u32 {
        self.live
    }
    /// Whether every lane is done.
    pub fn exited(&self) -> bool {
        self.live == 0
    }
    /// Lanes that are ready.
    pub fn ready(&self) -> u32 {
        self.ready
    }
    /// Ready lanes waiting at a join for the rest of their branch ([`crate::reconverge::held`]).
    pub fn held(&self) -> u32 {
        if self.conv.is_empty() {
            return 0;
        }
        reconverge::held(&self.conv, &self.pc, self.ready(), self.live())
    }
    /// The group to run next: lanes that are ready, and not waiting at a join, at the lowest pc.
    /// A lane inside calls is at its call sites and then its pc (compared in that order): it
    /// runs before lanes past its outermost call site and after lanes before it, so lanes meet
    /// again where the call returns, as they would after a branch.
    pub fn next_group(&self) -> Option<(u32, u32)> {
        let held = self.held();
        if self.in_calls != 0 {
            return self.next_group_in_calls(held);
        }
        // The lowest pc of the ready lanes, then its lanes: two passes over the 32 pcs without
        // branches (they vectorize; most groups are the whole warp).
        let candidates = self.ready & !held;
        if candidates == 0 {
            return None;
        }
        let best = (0..WARP).map(|l| if candidates >> l & 1 == 1 { self.pc[l] } else { u32::MAX }).min().unwrap_or(u32::MAX);
        let at = (0..WARP).fold(0u32, |m, l| m | ((self.pc[l] == best) as u32) << l);
        Some((best, at & candidates))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Wait;

    #[test]
    fn every_change_of_what_next_group_reads_moves_the_version() {
        let mut w = Warp::new(Vec::new(), 5, 0b1111);
        assert_eq!(w.next_group(), Some((5, 0b1111)));
        let v = w.version();
        // writing what is there already changes nothing
        w.set_pc(0, 5);
        w.set_lane(0, Lane::Ready);
        assert_eq!(w.version(), v);
        w.set_pc(1, 6);
        assert!(w.version() > v);
        assert_eq!(w.next_group(), Some((5, 0b1101)));
        let v = w.version();
        w.set_lane(0, Lane::Blocked(Wait::CpAsyncGroups(0)));
        assert!(w.version() > v);
        assert_eq!(w.next_group(), Some((5, 0b1100)));
        let v = w.version();
        w.push_frame(2, Frame { call_pc: 5, func: hopsync_firmware::ir::FuncId(0), base: 0, saved: Vec::new() });
        assert!(w.version() > v);
        // lane 2 in a call runs after lanes 3 (pc 5) ... until it returns
        assert_eq!(w.next_group(), Some((5, 0b1000)));
        let v = w.version();
        assert!(w.pop_frame(2).is_some());
        assert!(w.version() > v);
        assert_eq!(w.next_group(), Some((5, 0b1100)));
        assert_eq!((w.ready(), w.live(), w.exited()), (0b1110, 0b1111, false));
        let v = w.version();
        w.conv_mut();
        assert!(w.version() > v);
    }
}
