//! TmaFifo: the show-ahead FIFO in a RAM that the TMA engine's queues between stages are made
//! of: the job queue ([`TmaJobQueue`], decoder -> BA: J's BA part, [`TmaSlotJob`], `TMA_JOBQ`
//! (8) entries, distributed RAM on an FPGA) and the row queue ([`TmaRowQueue`], row iterator ->
//! BA: [`TmaRowRec`], `TMA_ROWQ` (256) entries, as many as the reorder buffer has tags, block
//! RAM on an FPGA).
//!
//! The job queue lets the decoder and the row iterator run up to `TMA_JOBQ` + 1 jobs ahead of
//! BA (J is freed once the row iterator has walked it and its BA part is queued), so back-to-back
//! small copies keep their global reads in flight together; the row queue lets the request side
//! run as many rows ahead as there are tags, so a box of 32-byte rows still keeps every tag busy.
//!
//! # Parameters
//!
//! `T`: the entry; `A`: address bits (`2^A` entries); `C` = `A + 1`: bits of the entry count.
//!
//! # Ports
//!
//! - `push` / `push_data` (in): an entry enters at the tail (never when `full`).
//! - `head` / `nonempty`: the oldest entry, valid in the cycle it is presented (show-ahead);
//!   `pop` (in): it leaves at this edge.
//! - `full`, `idle` (empty).
//!
//! # Timing
//!
//! The RAM is read one cycle ahead at the next head address (the head after this cycle's pop),
//! so `head` comes from the RAM's registered read port; a RAM read of an entry written at the
//! same edge returns the old value, so that write is forwarded (`fw`, `fwd`): an entry pushed
//! into an empty queue is the head in the next cycle.

use super::types::*;
use rust_hdl::prelude::*;

/// The FIFO of `2^A` entries of `T` (`C` = `A + 1` count bits).
#[derive(LogicBlock)]
pub struct TmaFifo<T: Synth, const A: usize, const C: usize> {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// an entry enters
    pub push: Signal<In, bool>,
    /// that entry
    pub push_data: Signal<In, T>,
    /// the head leaves at this edge
    pub pop: Signal<In, bool>,
    /// the head entry
    pub head: Signal<Out, T>,
    /// the queue holds an entry
    pub nonempty: Signal<Out, bool>,
    /// the queue has no room
    pub full: Signal<Out, bool>,
    /// the queue is empty
    pub idle: Signal<Out, bool>,

    /// the entries
    ram: RAM<T, A>,
    /// head index
    q_head: DFF<Bits<A>>,
    /// tail index
    q_tail: DFF<Bits<A>>,
    /// entries used
    q_cnt: DFF<Bits<C>>,
    /// `2^A`: the count of a full queue
    cap: Constant<Bits<C>>,
    /// a push wrote the head's entry at the edge of its read: use `fwd`
    fw: DFF<bool>,
    /// the forwarded entry
    fwd: DFF<T>,
    /// the head after this cycle's pop (the RAM's read address)
    head_nx: Signal<Local, Bits<A>>,
}

/// The job queue (decoder -> BA).
pub type TmaJobQueue = TmaFifo<TmaSlotJob, TMA_JOBQ_BITS, { TMA_JOBQ_BITS + 1 }>;
/// The row queue (row iterator -> BA).
pub type TmaRowQueue = TmaFifo<TmaRowRec, TMA_ROWQ_BITS, { TMA_ROWQ_BITS + 1 }>;

impl<T: Synth, const A: usize, const C: usize> Default for TmaFifo<T, A, C> {
    fn default() -> Self {
        assert_eq!(C, A + 1, "TmaFifo: C = A + 1 count bits");
        Self {
            clock: Default::default(),
            push: Default::default(),
            push_data: Default::default(),
            pop: Default::default(),
            head: Default::default(),
            nonempty: Default::default(),
            full: Default::default(),
            idle: Default::default(),
            ram: (0..1usize << A).map(|_| T::default()).into(),
            q_head: Default::default(),
            q_tail: Default::default(),
            q_cnt: Default::default(),
            cap: Constant::new((1u64 << A).into()),
            fw: Default::default(),
            fwd: Default::default(),
            head_nx: Default::default(),
        }
    }
}

impl<T: Synth, const A: usize, const C: usize> Logic for TmaFifo<T, A, C> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, q_head, q_tail, q_cnt, fw, fwd);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        if self.fw.q.val() {
            self.head.next = self.fwd.q.val();
        } else {
            self.head.next = self.ram.read_data.val();
        }
        self.ram.write_address.next = self.q_tail.q.val();
        self.ram.write_data.next = self.push_data.val();
        self.ram.write_enable.next = self.push.val();
        if self.push.val() {
            self.q_tail.d.next = self.q_tail.q.val() + 1;
        }
        if self.pop.val() {
            self.q_head.d.next = self.q_head.q.val() + 1;
            self.head_nx.next = self.q_head.q.val() + 1;
        } else {
            self.head_nx.next = self.q_head.q.val();
        }
        self.ram.read_address.next = self.head_nx.val();
        self.fw.d.next = self.push.val() && (self.q_tail.q.val() == self.head_nx.val());
        self.fwd.d.next = self.push_data.val();
        if self.push.val() && !self.pop.val() {
            self.q_cnt.d.next = self.q_cnt.q.val() + 1;
        }
        if !self.push.val() && self.pop.val() {
            self.q_cnt.d.next = self.q_cnt.q.val() - 1;
        }
        self.nonempty.next = self.q_cnt.q.val() != 0;
        self.full.next = self.q_cnt.q.val() == self.cap.val();
        self.idle.next = self.q_cnt.q.val() == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::XorShift;
    use crate::tma::tb::{block, Clocked};
    use std::collections::VecDeque;

    /// Random pushes and pops (at the same edge too, on an empty queue too, where the RAM's
    /// read of the entry written at that edge is forwarded), until the queue is full, against a
    /// FIFO model: the head is always the oldest entry, over `cycles` cycles: `phase` cycles fill
    /// up, as many drain, then as many at random, and again; `entry(rng, n)` makes the entry
    /// pushed in cycle `n`.
    fn fifo_with_the_same_edge_forward<T: Synth, const A: usize, const C: usize>(
        seed: u64,
        cycles: u64,
        phase: u64,
        entry: impl Fn(&mut XorShift, u64) -> T,
    ) -> (u32, u32) {
        let mut q = block(TmaFifo::<T, A, C>::default());
        let mut model: VecDeque<T> = VecDeque::new();
        let mut rng = XorShift(seed);
        let (mut fills, mut both) = (0, 0);
        for n in 0..cycles {
            let (pp, pq) = match (n / phase) % 3 {
                0 => (90, 10),
                1 => (10, 90),
                _ => (50, 50),
            };
            q.low();
            assert_eq!(q.nonempty.val(), !model.is_empty());
            assert_eq!(q.full.val(), model.len() == 1 << A);
            if let Some(h) = model.front() {
                assert_eq!(q.head.val(), *h, "cycle {n}");
            }
            let push = !q.full.val() && rng.pct(pp);
            let pop = q.nonempty.val() && rng.pct(pq);
            let e = entry(&mut rng, n);
            q.push.next = push;
            q.push_data.next = e;
            q.pop.next = pop;
            q.low();
            q.edge();
            if pop {
                model.pop_front();
            }
            if push {
                model.push_back(e);
            }
            fills += (model.len() == 1 << A) as u32;
            both += (push && pop && model.len() == 1) as u32;
        }
        (fills, both)
    }

    #[test]
    fn job_queue_is_a_fifo_with_the_same_edge_forward() {
        let (fills, both) = fifo_with_the_same_edge_forward::<TmaSlotJob, TMA_JOBQ_BITS, { TMA_JOBQ_BITS + 1 }>(
            0x0F1F_0002,
            3000,
            200,
            |rng, n| TmaSlotJob { base: rng.below(1 << 18).into(), nb: (n & 0xffff).into(), store: rng.pct(50), ..Default::default() },
        );
        assert!(fills > 0 && both > 10, "{fills} {both}");
    }

    #[test]
    fn row_queue_is_a_fifo_with_the_same_edge_forward() {
        let (fills, both) = fifo_with_the_same_edge_forward::<TmaRowRec, TMA_ROWQ_BITS, { TMA_ROWQ_BITS + 1 }>(
            0x0F1F_0001,
            6000,
            1000,
            |rng, n| TmaRowRec { oob: rng.pct(50), r_lo: rng.below(1 << 32).into(), r_hi: n.into(), last: rng.pct(50) },
        );
        assert!(fills > 0 && both > 20, "{fills} {both}");
    }
}
