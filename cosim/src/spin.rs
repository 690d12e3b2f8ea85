//! Telling a warp that spins forever from one that is still computing: the "spinning" case of
//! the `Deadlock` finding, shared by every engine.
//!
//! "No progress" is exact. Every change of memory or synchronization state (a write, an mbarrier
//! or barrier event, an asynchronous completion, an exit) is progress
//! ([`crate::machine::Machine::progress`]). Between two progress events a warp's next state is a
//! function of its own state (pcs, lane states, registers, call frames, convergence barriers,
//! its last failed poll, its partial barrier arrivals, its cp.async group numbers) and of memory, which does not change; so a warp
//! whose state repeats exactly repeats the same cycle forever unless another warp or an
//! asynchronous operation makes progress. The run is stuck when nothing asynchronous is pending
//! and every live warp is blocked or proven to repeat. A loop that counts, reads `%clock` or
//! otherwise changes its registers never repeats and is never called a deadlock: it runs until
//! it finishes or the step budget (`--max-steps`) ends it with `StepLimit`.
//!
//! The watch costs nothing until an engine has gone its spin limit without progress. Then each
//! warp's state is sampled at its taken backward branches (every cycle of states contains one),
//! at every `stride`-th one so that hashing a large register file stays cheap, and Brent's cycle
//! detection compares each sample with a saved one (hash first, then the whole state) and saves
//! a new one at doubling intervals: a cycle of `n` samples is proven within about `4n` samples
//! after it starts. Progress ends the watch; the next spin limit starts a new one.

use crate::machine::{Frame, Lane, Poll, Warp, WARP};
use crate::reconverge::ConvBarrier;

/// Everything of a warp that decides what its next instruction does, besides memory.
#[derive(Debug, Clone, PartialEq)]
struct WarpState {
    /// Per-lane program counters.
    pc: [u32; WARP],
    /// Per-lane states.
    lane: [Lane; WARP],
    /// Its last failed mbarrier poll.
    polling: Option<Poll>,
    /// Its lanes waiting at non-aligned barriers for the rest of the warp.
    bar_partial: [u32; 16],
    /// Per lane: the open cp.async group.
    cp_open_group: [u64; WARP],
    /// Registers.
    regs: Vec<u64>,
    /// Per lane: the calls it is in.
    frames: Vec<Vec<Frame>>,
    /// Open convergence barriers.
    conv: Vec<ConvBarrier>,
}

impl WarpState {
    fn of(w: &Warp) -> WarpState {
        WarpState {
            pc: *w.pc(),
            lane: *w.lane(),
            polling: w.polling,
            bar_partial: w.bar_partial,
            cp_open_group: w.cp_open_group,
            regs: w.regs.clone(),
            frames: w.frames().to_vec(),
            conv: w.conv().to_vec(),
        }
    }

    /// Whether `w` is in this state.
    fn is(&self, w: &Warp) -> bool {
        self.pc == *w.pc()
            && self.lane == *w.lane()
            && self.polling == w.polling
            && self.bar_partial == w.bar_partial
            && self.cp_open_group == w.cp_open_group
            && self.regs == w.regs
            && self.frames == w.frames()
            && self.conv == w.conv()
    }
}

/// A fast hash of the parts of a warp's state that change in loops (equal hashes are then
/// checked against the whole state, so collisions cost time, never a false verdict).
fn fingerprint(w: &Warp) -> u64 {
    let mix = |h: u64, x: u64| (h.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    let h = w.pc().iter().fold(0, |h, &p| mix(h, p as u64));
    let h = w.cp_open_group.iter().fold(h, |h, &g| mix(h, g));
    let h = w.frames().iter().fold(h, |h, f| mix(h, f.len() as u64));
    w.regs.iter().fold(h, |h, &r| mix(h, r))
}

/// Brent's cycle detection over one warp's sampled states.
#[derive(Debug, Clone, Default)]
struct Detector {
    /// Backward branches since the watch started.
    branches: u64,
    /// The saved sample and its hash.
    saved: Option<(u64, WarpState)>,
    /// Samples the saved one is compared with before it is replaced (doubles each time).
    power: u64,
    /// Samples compared with the saved one so far.
    lam: u64,
    /// The warp's state repeated: it cycles until something makes progress.
    repeats: bool,
}

/// The watch over every warp of a run.
#[derive(Debug, Default)]
pub struct SpinWatch {
    /// The step of the progress event the watch started after (`None`: off).
    since: Option<u64>,
    /// Warps per CTA.
    per_cta: usize,
    /// Backward branches per sample.
    stride: u64,
    /// One detector per warp, CTA-major.
    warps: Vec<Detector>,
    /// A warp was proven to repeat since the last verdict.
    news: bool,
}

impl SpinWatch {
    /// Whether the watch is on for the progress epoch that began at step `last_progress`.
    #[inline]
    pub fn watching(&self, last_progress: u64) -> bool {
        self.since == Some(last_progress)
    }

    /// Starts watching `ctas` CTAs of `per_cta` warps with `regs` registers each, for the epoch
    /// that began at `last_progress`.
    pub fn start(&mut self, last_progress: u64, ctas: usize, per_cta: usize, regs: usize) {
        self.since = Some(last_progress);
        self.per_cta = per_cta;
        // About 512 register words hashed per backward branch, however large the file.
        self.stride = 1 + (regs * WARP) as u64 / 512;
        self.warps.clear();
        self.warps.resize(ctas * per_cta, Detector::default());
        self.news = false;
    }

    /// Warp `w` of CTA `c` took a backward branch and is now in state `warp`.
    pub fn sample(&mut self, c: usize, w: usize, warp: &Warp) {
        let stride = self.stride;
        let Some(d) = self.warps.get_mut(c * self.per_cta + w) else { return };
        d.branches += 1;
        if d.repeats || d.branches % stride != 0 {
            return;
        }
        let h = fingerprint(warp);
        if matches!(&d.saved, Some((sh, s)) if *sh == h && s.is(warp)) {
            d.repeats = true;
            self.news = true;
            return;
        }
        d.lam += 1;
        if d.saved.is_none() || d.lam >= d.power {
            d.saved = Some((h, WarpState::of(warp)));
            d.power = (d.power * 2).max(1);
            d.lam = 0;
        }
    }

    /// Whether warp `w` of CTA `c` was proven to repeat.
    pub fn repeats(&self, c: usize, w: usize) -> bool {
        self.warps.get(c * self.per_cta + w).is_some_and(|d| d.repeats)
    }

    /// Whether a warp was proven to repeat since the last call.
    pub fn take_news(&mut self) -> bool {
        std::mem::take(&mut self.news)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warp(regs: Vec<u64>) -> Warp {
        Warp::new(regs, 3, u32::MAX)
    }

    #[test]
    fn a_repeating_state_is_proven_and_a_counter_never_is() {
        let mut s = SpinWatch::default();
        s.start(7, 1, 2, 1);
        assert!(s.watching(7) && !s.watching(8));
        // warp 0 alternates between two states; warp 1 counts.
        for i in 0..1000u64 {
            s.sample(0, 0, &warp(vec![i % 2; WARP]));
            s.sample(0, 1, &warp(vec![i; WARP]));
        }
        assert!(s.repeats(0, 0));
        assert!(!s.repeats(0, 1));
        assert!(s.take_news() && !s.take_news());
    }

    #[test]
    fn a_cycle_of_n_samples_is_proven_within_4n() {
        for n in [1u64, 3, 17, 100] {
            let mut s = SpinWatch::default();
            s.start(0, 1, 1, 1);
            let mut k = 0;
            while !s.repeats(0, 0) {
                s.sample(0, 0, &warp(vec![k % n; WARP]));
                k += 1;
                assert!(k <= 4 * n + 2, "cycle of {n} not proven after {k} samples");
            }
        }
    }

    #[test]
    fn large_register_files_are_sampled_every_stride_branches() {
        let mut s = SpinWatch::default();
        s.start(0, 1, 1, 1000);
        assert_eq!(s.stride, 1 + 1000 * 32 / 512);
        for _ in 0..s.stride * 2 - 1 {
            s.sample(0, 0, &warp(vec![5; 1000 * WARP]));
        }
        assert!(!s.repeats(0, 0), "one sample saved, none compared yet");
        s.sample(0, 0, &warp(vec![5; 1000 * WARP]));
        assert!(s.repeats(0, 0));
    }
}
