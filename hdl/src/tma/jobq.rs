//! TmaJobQueue: the job queue between the decoder and the slot iterator (BA stage X): a FIFO of
//! decoded jobs ([`TmaSlotJob`], J's BA part) in a RAM (distributed RAM on an FPGA), `TMA_JOBQ`
//! (8) entries. J is freed once the row iterator has walked it and its BA part is queued, so
//! the decoder and the row iterator run up to `TMA_JOBQ` + 1 jobs ahead of BA: back-to-back small
//! copies keep their global reads in flight together instead of one job's latency each (the row
//! queue and the reorder buffer bound the rows and reads of those jobs).
//!
//! # Ports
//!
//! - `push` / `push_job` (in): a job enters at the tail (never when `full`).
//! - `head` / `nonempty`: the oldest job, valid in the cycle it is presented (show-ahead);
//!   `pop` (in): BA takes it at this edge.
//! - `full`, `idle` (empty).
//!
//! # Timing
//!
//! As the row queue ([`crate::tma::rowq`]): the RAM is read one cycle ahead at the next head
//! address, and a write to that address at the same edge is forwarded (`fw`, `fwd`), so a job
//! pushed into an empty queue is BA's head in the next cycle.

use super::types::*;
use rust_hdl::prelude::*;

/// The job queue.
#[derive(LogicBlock)]
pub struct TmaJobQueue {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// a job enters
    pub push: Signal<In, bool>,
    /// that job
    pub push_job: Signal<In, TmaSlotJob>,
    /// BA takes the head at this edge
    pub pop: Signal<In, bool>,
    /// the head job
    pub head: Signal<Out, TmaSlotJob>,
    /// the queue holds a job
    pub nonempty: Signal<Out, bool>,
    /// the queue has no room
    pub full: Signal<Out, bool>,
    /// the queue is empty
    pub idle: Signal<Out, bool>,

    /// the jobs
    ram: RAM<TmaSlotJob, TMA_JOBQ_BITS>,
    /// head index
    jq_head: DFF<Bits<TMA_JOBQ_BITS>>,
    /// tail index
    jq_tail: DFF<Bits<TMA_JOBQ_BITS>>,
    /// entries used
    jq_cnt: DFF<Bits<4>>,
    /// a push wrote the head's entry at the edge of its read: use `fwd`
    fw: DFF<bool>,
    /// the forwarded job
    fwd: DFF<TmaSlotJob>,
    /// the head after this cycle's pop (the RAM's read address)
    head_nx: Signal<Local, Bits<TMA_JOBQ_BITS>>,
}

impl Default for TmaJobQueue {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            push: Default::default(),
            push_job: Default::default(),
            pop: Default::default(),
            head: Default::default(),
            nonempty: Default::default(),
            full: Default::default(),
            idle: Default::default(),
            ram: (0..TMA_JOBQ).map(|_| TmaSlotJob::default()).into(),
            jq_head: Default::default(),
            jq_tail: Default::default(),
            jq_cnt: Default::default(),
            fw: Default::default(),
            fwd: Default::default(),
            head_nx: Default::default(),
        }
    }
}

impl Logic for TmaJobQueue {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, jq_head, jq_tail, jq_cnt, fw, fwd);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        if self.fw.q.val() {
            self.head.next = self.fwd.q.val();
        } else {
            self.head.next = self.ram.read_data.val();
        }
        self.ram.write_address.next = self.jq_tail.q.val();
        self.ram.write_data.next = self.push_job.val();
        self.ram.write_enable.next = self.push.val();
        if self.push.val() {
            self.jq_tail.d.next = self.jq_tail.q.val() + 1;
        }
        if self.pop.val() {
            self.jq_head.d.next = self.jq_head.q.val() + 1;
            self.head_nx.next = self.jq_head.q.val() + 1;
        } else {
            self.head_nx.next = self.jq_head.q.val();
        }
        self.ram.read_address.next = self.head_nx.val();
        self.fw.d.next = self.push.val() && (self.jq_tail.q.val() == self.head_nx.val());
        self.fwd.d.next = self.push_job.val();
        if self.push.val() && !self.pop.val() {
            self.jq_cnt.d.next = self.jq_cnt.q.val() + 1;
        }
        if !self.push.val() && self.pop.val() {
            self.jq_cnt.d.next = self.jq_cnt.q.val() - 1;
        }
        self.nonempty.next = self.jq_cnt.q.val() != 0;
        self.full.next = self.jq_cnt.q.val() == 8;
        self.idle.next = self.jq_cnt.q.val() == 0;
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
    /// FIFO model: the head is always the oldest job.
    #[test]
    fn fifo_with_the_same_edge_forward() {
        let mut q = block(TmaJobQueue::default());
        let mut model: VecDeque<TmaSlotJob> = VecDeque::new();
        let mut rng = XorShift(0x0F1F_0002);
        let (mut fills, mut both) = (0, 0);
        for n in 0..3000u64 {
            // phases: fill up, drain, then random
            let (pp, pq) = match (n / 200) % 3 {
                0 => (90, 10),
                1 => (10, 90),
                _ => (50, 50),
            };
            q.low();
            assert_eq!(q.nonempty.val(), !model.is_empty());
            assert_eq!(q.full.val(), model.len() == TMA_JOBQ);
            if let Some(h) = model.front() {
                assert_eq!(q.head.val(), *h, "cycle {n}");
            }
            let push = !q.full.val() && rng.pct(pp);
            let pop = q.nonempty.val() && rng.pct(pq);
            let job = TmaSlotJob { base: rng.below(1 << 18).into(), nb: (n & 0xffff).into(), store: rng.pct(50), ..Default::default() };
            q.push.next = push;
            q.push_job.next = job;
            q.pop.next = pop;
            q.low();
            q.edge();
            if pop {
                model.pop_front();
            }
            if push {
                model.push_back(job);
            }
            fills += (model.len() == TMA_JOBQ) as u32;
            both += (push && pop && model.len() == 1) as u32;
        }
        assert!(fills > 0 && both > 10, "{fills} {both}");
    }
}
