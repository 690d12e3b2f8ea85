//! MbarWaiters: the mbarrier unit's waiter table: one entry per warp suspended in try_wait
//! (PTX 9.7.13.15.16), woken by the completion of its phase or by its time limit.
//!
//! # Ports
//!
//! - `suspend` / `susp_warp` / `susp_tag` / `susp_hint` (in): stage 2 suspends a warp this
//!   cycle, awaiting the phase {parity, word} `susp_tag`, for at most `susp_hint` cycles; it is
//!   registered (with its deadline) and entered into the table the next cycle.
//! - `complete` / `cpl_tag` (in): stage 2 completes a phase this cycle; it is registered and
//!   applied to the table the next cycle.
//! - `wake`: at most one wake event per cycle, lowest warp first, combinational from the
//!   entries' states (the table is fed one edge later than before the unit had a read stage, so
//!   the event shows after the same edge as the old registered one; the consumer registers it,
//!   as the unit's response, `exec.rs`).
//!
//! # Behaviour
//!
//! Entry (state, {awaited phase parity, word}, deadline). The suspension is entered one edge
//! after stage 2 decided it (`ins_*` registers), so that stage 2's word operation and finding
//! do not drive the 32 entries' clock enables in the same cycle (the ECP5 critical path,
//! docs/FPGA.md). No behaviour moves with it: in the cycle in between no completion can name
//! the entry (the completion registered then is the try_wait's own stage-1 cycle's, and a
//! try_wait completes nothing), a time limit of 0 cycles, whose deadline falls in that cycle,
//! enters the entry already timed out, and a warp has at most one try_wait outstanding, so no
//! wake of the same warp is pending. A completion of the awaited phase
//! wakes it (and wins over a timeout in the same cycle); the free-running cycle counter reaching
//! `now + hint + 1` of its suspension times it out. A timed-out entry whose phase completes
//! before it leaves (in the table, or last cycle's completion that is not in it yet) leaves as
//! woken by completion: every write before this edge's is visible when the wake is seen, so the
//! try_wait answers what the word said then (the SM engine retires the wake before the
//! stage-2 write it sees with it, and the golden model executes the try_wait there; gen seed
//! 1026960). Timing
//! (cycle k = the try_wait's acceptance): timeout wake at k + 3 + hint at the earliest,
//! completion wake at j + 3 for the completing op accepted at j. Assumption: a warp has at most
//! one try_wait outstanding; a new one of the same warp replaces its entry.

use super::{MbarrierWake, WaiterState, MBARRIER_WAITERS};
use rust_hdl::prelude::*;

/// The waiter table.
#[derive(LogicBlock, Default)]
pub struct MbarWaiters {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// stage 2 suspends a warp
    pub suspend: Signal<In, bool>,
    /// that warp
    pub susp_warp: Signal<In, Bits<5>>,
    /// {awaited phase parity, word index}
    pub susp_tag: Signal<In, Bits<17>>,
    /// its suspend-time limit, cycles
    pub susp_hint: Signal<In, Bits<32>>,
    /// stage 2 completes a phase
    pub complete: Signal<In, bool>,
    /// {completed phase parity, word index}
    pub cpl_tag: Signal<In, Bits<17>>,
    /// wake event (combinational, see the module doc)
    pub wake: Signal<Out, MbarrierWake>,

    /// a phase completed last cycle (applied to the table now)
    cpl_valid: DFF<bool>,
    /// {completed phase parity, word index} of that completion
    cpl_q: DFF<Bits<17>>,
    /// free-running cycle counter (deadlines)
    now: DFF<Bits<32>>,
    /// stage 2 suspended a warp last cycle (entered into the table now)
    ins_valid: DFF<bool>,
    /// that warp
    ins_warp: DFF<Bits<5>>,
    /// {awaited phase parity, word index} of that suspension
    ins_tag: DFF<Bits<17>>,
    /// its deadline (`now + hint + 1` of the suspending cycle)
    ins_deadline: DFF<Bits<32>>,
    /// its time limit was 0 cycles: the deadline is this cycle's `now`, so it enters timed out
    ins_expired: DFF<bool>,
    /// entry state, per warp
    waiter_state: [DFF<WaiterState>; MBARRIER_WAITERS],
    /// {awaited phase parity, word index}, per warp
    waiter_tag: [DFF<Bits<17>>; MBARRIER_WAITERS],
    /// cycle at which the suspend-time limit expires, per warp
    waiter_deadline: [DFF<Bits<32>>; MBARRIER_WAITERS],
    /// per group of 8 warps (0..=7, 8..=15, ...): some entry of the group has a wake event
    /// pending
    grp_any: [Signal<Local, bool>; 4],
    /// the group's lowest such warp
    grp_warp: [Signal<Local, Bits<5>>; 4],
    /// its event is a completion wake
    grp_cpl: [Signal<Local, bool>; 4],
    /// some entry has a wake event pending
    wake_any: Signal<Local, bool>,
    /// lowest such warp
    wake_warp: Signal<Local, Bits<5>>,
    /// its event is a completion wake
    wake_cpl: Signal<Local, bool>,
}

impl Logic for MbarWaiters {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            cpl_valid,
            cpl_q,
            now,
            ins_valid,
            ins_warp,
            ins_tag,
            ins_deadline,
            ins_expired
        );
        self.now.d.next = self.now.q.val() + 1;
        self.cpl_valid.d.next = self.complete.val();
        self.cpl_q.d.next = self.cpl_tag.val();
        self.ins_valid.d.next = self.suspend.val();
        self.ins_warp.d.next = self.susp_warp.val();
        self.ins_tag.d.next = self.susp_tag.val();
        self.ins_deadline.d.next = self.now.q.val() + self.susp_hint.val() + 1;
        self.ins_expired.d.next = self.susp_hint.val() == 0;
        // one wake event per cycle, lowest warp first, in two levels (one 32-deep priority
        // chain was the unit's ECP5 critical path): the lowest pending warp of each group of 8
        // (4 groups x 8 = MBARRIER_WAITERS), then the lowest group. Each loop visits from the
        // highest warp down and the last match wins.
        for g in 0..4 {
            self.grp_any[g].next = false;
            self.grp_warp[g].next = 0.into();
            self.grp_cpl[g].next = false;
            for j in 0..8 {
                if self.waiter_state[8 * g + 7 - j].q.val() == WaiterState::WokenByCompletion {
                    self.grp_any[g].next = true;
                    self.grp_warp[g].next = (8 * g + 7 - j).to_bits();
                    self.grp_cpl[g].next = true;
                }
                if self.waiter_state[8 * g + 7 - j].q.val() == WaiterState::WokenByTimeout {
                    self.grp_any[g].next = true;
                    self.grp_warp[g].next = (8 * g + 7 - j).to_bits();
                    self.grp_cpl[g].next = self.cpl_valid.q.val()
                        && (self.waiter_tag[8 * g + 7 - j].q.val() == self.cpl_q.q.val());
                }
            }
        }
        self.wake_any.next = false;
        self.wake_warp.next = 0.into();
        self.wake_cpl.next = false;
        for g in 0..4 {
            if self.grp_any[3 - g].val() {
                self.wake_any.next = true;
                self.wake_warp.next = self.grp_warp[3 - g].val();
                self.wake_cpl.next = self.grp_cpl[3 - g].val();
            }
        }
        self.wake.next.valid = self.wake_any.val();
        self.wake.next.warp = self.wake_warp.val();
        self.wake.next.completed = self.wake_cpl.val();
        for i in 0..MBARRIER_WAITERS {
            self.waiter_state[i].clock.next = self.clock.val();
            self.waiter_tag[i].clock.next = self.clock.val();
            self.waiter_deadline[i].clock.next = self.clock.val();
            self.waiter_state[i].d.next = self.waiter_state[i].q.val();
            self.waiter_tag[i].d.next = self.waiter_tag[i].q.val();
            self.waiter_deadline[i].d.next = self.waiter_deadline[i].q.val();
            if self.waiter_state[i].q.val() == WaiterState::Waiting {
                // last cycle's completion names {completed phase parity, word}; it wins over
                // a timeout in the same cycle
                if self.cpl_valid.q.val() && (self.waiter_tag[i].q.val() == self.cpl_q.q.val()) {
                    self.waiter_state[i].d.next = WaiterState::WokenByCompletion;
                } else if self.waiter_deadline[i].q.val() == self.now.q.val() {
                    self.waiter_state[i].d.next = WaiterState::WokenByTimeout;
                }
            }
            // a completion while the timed-out entry waits for its turn to leave wins
            if (self.waiter_state[i].q.val() == WaiterState::WokenByTimeout)
                && self.cpl_valid.q.val()
                && (self.waiter_tag[i].q.val() == self.cpl_q.q.val())
            {
                self.waiter_state[i].d.next = WaiterState::WokenByCompletion;
            }
            if self.wake_any.val() && (self.wake_warp.val().index() == i) {
                self.waiter_state[i].d.next = WaiterState::Idle;
            }
            if self.ins_valid.q.val() && (self.ins_warp.q.val().index() == i) {
                self.waiter_state[i].d.next = WaiterState::Waiting;
                if self.ins_expired.q.val() {
                    self.waiter_state[i].d.next = WaiterState::WokenByTimeout;
                }
                self.waiter_tag[i].d.next = self.ins_tag.q.val();
                self.waiter_deadline[i].d.next = self.ins_deadline.q.val();
            }
        }
    }
}
