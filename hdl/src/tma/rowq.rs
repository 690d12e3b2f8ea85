//! TmaRowQueue: the row queue between the row iterator (RG) and the slot iterator (BA stage
//! X): a FIFO of [`TmaRowRec`] in a RAM (block RAM on an FPGA), `TMA_ROWQ` (256) entries, as many
//! as the reorder buffer has tags, so the request side may run that many rows ahead and a box of
//! 32-byte rows still keeps every tag busy.
//!
//! # Ports
//!
//! - `push` / `push_rec` (in): a row enters at the tail (never when `full`).
//! - `head` / `nonempty`: the oldest row, valid in the cycle it is presented (show-ahead);
//!   `pop` (in): it leaves at this edge.
//! - `full`, `idle` (empty).
//!
//! # Timing
//!
//! The RAM is read one cycle ahead at the next head address (the head after this cycle's pop),
//! so `head` comes from the RAM's registered read port; a RAM read of an entry written at the
//! same edge returns the old value, so that write is forwarded (`fw`, `fwd`).

use super::types::*;
use rust_hdl::prelude::*;

/// The row queue.
#[derive(LogicBlock)]
pub struct TmaRowQueue {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// a row enters
    pub push: Signal<In, bool>,
    /// that row
    pub push_rec: Signal<In, TmaRowRec>,
    /// the head leaves at this edge
    pub pop: Signal<In, bool>,
    /// the head row
    pub head: Signal<Out, TmaRowRec>,
    /// the queue holds a row
    pub nonempty: Signal<Out, bool>,
    /// the queue has no room
    pub full: Signal<Out, bool>,
    /// the queue is empty
    pub idle: Signal<Out, bool>,

    /// the rows
    ram: RAM<TmaRowRec, TMA_ROWQ_BITS>,
    /// head index
    rq_head: DFF<Bits<8>>,
    /// tail index
    rq_tail: DFF<Bits<8>>,
    /// entries used
    rq_cnt: DFF<Bits<9>>,
    /// a push wrote the head's entry at the edge of its read: use `fwd`
    fw: DFF<bool>,
    /// the forwarded row
    fwd: DFF<TmaRowRec>,
    /// the head after this cycle's pop (the RAM's read address)
    head_nx: Signal<Local, Bits<8>>,
}

impl Default for TmaRowQueue {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            push: Default::default(),
            push_rec: Default::default(),
            pop: Default::default(),
            head: Default::default(),
            nonempty: Default::default(),
            full: Default::default(),
            idle: Default::default(),
            ram: (0..TMA_ROWQ).map(|_| TmaRowRec::default()).into(),
            rq_head: Default::default(),
            rq_tail: Default::default(),
            rq_cnt: Default::default(),
            fw: Default::default(),
            fwd: Default::default(),
            head_nx: Default::default(),
        }
    }
}

impl Logic for TmaRowQueue {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, rq_head, rq_tail, rq_cnt, fw, fwd);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        if self.fw.q.val() {
            self.head.next = self.fwd.q.val();
        } else {
            self.head.next = self.ram.read_data.val();
        }
        self.ram.write_address.next = self.rq_tail.q.val();
        self.ram.write_data.next = self.push_rec.val();
        self.ram.write_enable.next = self.push.val();
        if self.push.val() {
            self.rq_tail.d.next = self.rq_tail.q.val() + 1;
        }
        if self.pop.val() {
            self.rq_head.d.next = self.rq_head.q.val() + 1;
            self.head_nx.next = self.rq_head.q.val() + 1;
        } else {
            self.head_nx.next = self.rq_head.q.val();
        }
        self.ram.read_address.next = self.head_nx.val();
        self.fw.d.next = self.push.val() && (self.rq_tail.q.val() == self.head_nx.val());
        self.fwd.d.next = self.push_rec.val();
        if self.push.val() && !self.pop.val() {
            self.rq_cnt.d.next = self.rq_cnt.q.val() + 1;
        }
        if !self.push.val() && self.pop.val() {
            self.rq_cnt.d.next = self.rq_cnt.q.val() - 1;
        }
        self.nonempty.next = self.rq_cnt.q.val() != 0;
        self.full.next = self.rq_cnt.q.val() == 256;
        self.idle.next = self.rq_cnt.q.val() == 0;
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
    /// FIFO model: the head is always the oldest row.
    #[test]
    fn fifo_with_the_same_edge_forward() {
        let mut q = block(TmaRowQueue::default());
        let mut model: VecDeque<TmaRowRec> = VecDeque::new();
        let mut rng = XorShift(0x0F1F_0001);
        let (mut fills, mut both) = (0, 0);
        for n in 0..6000u64 {
            // phases: fill up, drain, then random
            let (pp, pq) = match (n / 1000) % 3 {
                0 => (90, 10),
                1 => (10, 90),
                _ => (50, 50),
            };
            q.low();
            assert_eq!(q.nonempty.val(), !model.is_empty());
            assert_eq!(q.full.val(), model.len() == TMA_ROWQ);
            if let Some(h) = model.front() {
                assert_eq!(q.head.val(), *h, "cycle {n}");
            }
            let push = !q.full.val() && rng.pct(pp);
            let pop = q.nonempty.val() && rng.pct(pq);
            let rec = TmaRowRec {
                oob: rng.pct(50),
                r_lo: rng.below(1 << 32).into(),
                r_hi: n.into(),
                last: rng.pct(50),
            };
            q.push.next = push;
            q.push_rec.next = rec;
            q.pop.next = pop;
            q.low();
            q.edge();
            if pop {
                model.pop_front();
            }
            if push {
                model.push_back(rec);
            }
            fills += (model.len() == TMA_ROWQ) as u32;
            both += (push && pop && model.len() == 1) as u32;
        }
        assert!(fills > 0 && both > 20, "{fills} {both}");
    }
}
