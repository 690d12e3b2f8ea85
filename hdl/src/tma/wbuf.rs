//! TmaWriteBuf (WB): the write buffer of stores: sector writes (and op-end markers) from stage
//! Y wait here for the issuer.
//!
//! # Ports
//!
//! - `push` / `entry` / `entry_last` (in): from stage Y (never when full: stage X counts `n`);
//!   `entry_last`: the entry is its op's last (kept beside the entries, not in them: the issuer
//!   takes the head entry whole).
//! - `head` / `valid`: the oldest entry, for the issuer ([`crate::tma::issuer::TmaIssuer`]);
//!   `wr_issue` (in): its write was accepted this cycle.
//! - `done`: a store op's last entry leaves this cycle (its last sector write is issued, or the
//!   end marker of an op with no in-bounds byte): `store_writes_issued`, and the bulk-group
//!   counter of the op's slot; `head_last`: the head is an op's last entry.
//! - `n`: entries used (3 at most); `idle`: empty.

use super::types::*;
use rust_hdl::prelude::*;

/// The write buffer.
#[derive(LogicBlock, Default)]
pub struct TmaWriteBuf {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// an entry from stage Y
    pub push: Signal<In, bool>,
    /// that entry
    pub entry: Signal<In, TmaWbEntry>,
    /// that entry is its op's last
    pub entry_last: Signal<In, bool>,
    /// the head's write is accepted this cycle
    pub wr_issue: Signal<In, bool>,
    /// the head entry
    pub head: Signal<Out, TmaWbEntry>,
    /// the buffer holds an entry
    pub valid: Signal<Out, bool>,
    /// a store op's last entry leaves
    pub done: Signal<Out, bool>,
    /// the head is an op's last entry
    pub head_last: Signal<Out, bool>,
    /// entries used
    pub n: Signal<Out, Bits<2>>,
    /// empty
    pub idle: Signal<Out, bool>,

    /// entries
    wb: [DFF<TmaWbEntry>; 3],
    /// each entry is its op's last
    last: [DFF<bool>; 3],
    /// entries used
    wb_n: DFF<Bits<2>>,
    /// the head leaves this cycle
    pop: Signal<Local, bool>,
    /// entries after the pop
    after: Signal<Local, Bits<2>>,
}

impl Logic for TmaWriteBuf {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wb_n);
        for i in 0..3 {
            self.wb[i].clock.next = self.clock.val();
            self.wb[i].d.next = self.wb[i].q.val();
            self.last[i].clock.next = self.clock.val();
            self.last[i].d.next = self.last[i].q.val();
        }
        self.pop.next = (self.wb_n.q.val() != 0) && (!self.wb[0].q.val().write || self.wr_issue.val());
        self.done.next = self.pop.val() && self.last[0].q.val();
        self.after.next = self.wb_n.q.val();
        if self.pop.val() {
            self.after.next = self.wb_n.q.val() - 1;
            self.wb[0].d.next = self.wb[1].q.val();
            self.wb[1].d.next = self.wb[2].q.val();
            self.last[0].d.next = self.last[1].q.val();
            self.last[1].d.next = self.last[2].q.val();
        }
        self.wb_n.d.next = self.after.val();
        if self.push.val() {
            self.wb_n.d.next = self.after.val() + 1;
            if self.after.val() == 0 {
                self.wb[0].d.next = self.entry.val();
                self.last[0].d.next = self.entry_last.val();
            } else if self.after.val() == 1 {
                self.wb[1].d.next = self.entry.val();
                self.last[1].d.next = self.entry_last.val();
            } else {
                self.wb[2].d.next = self.entry.val();
                self.last[2].d.next = self.entry_last.val();
            }
        }
        self.head.next = self.wb[0].q.val();
        self.valid.next = self.wb_n.q.val() != 0;
        self.head_last.next = (self.wb_n.q.val() != 0) && self.last[0].q.val();
        self.n.next = self.wb_n.q.val();
        self.idle.next = self.wb_n.q.val() == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::XorShift;
    use crate::tma::tb::*;
    use hopsync_firmware::tensormap::{TensorMapDataType as Dt, TensorMapSpec};
    use std::collections::VecDeque;

    /// Entries leave in order: a write when the issuer takes it, an end marker at once;
    /// `done` when an op's last entry leaves, `head_last` while it is the head.
    #[test]
    fn fifo_of_writes_and_markers() {
        let mut w = block(TmaWriteBuf::default());
        let mut model: VecDeque<(TmaWbEntry, bool)> = VecDeque::new();
        let mut rng = XorShift(0x0B0F_0002);
        let (mut dones, mut seq) = (0, 0u64);
        for n in 0..4000 {
            w.push.next = false;
            w.wr_issue.next = false;
            w.low();
            assert_eq!(w.n.val().to_u64(), model.len() as u64);
            if let Some(h) = model.front() {
                assert_eq!(w.head.val(), h.0, "cycle {n}");
                assert_eq!(w.head_last.val(), h.1);
            }
            let issue = model.front().is_some_and(|h| h.0.write) && rng.pct(50);
            w.wr_issue.next = issue;
            if model.len() < 3 && rng.pct(60) {
                let e = TmaWbEntry { write: rng.pct(80), addr_lo: seq.into(), grp: rng.below(16).into(), ..Default::default() };
                seq += 1;
                w.push.next = true;
                w.entry.next = e;
                w.entry_last.next = rng.pct(30);
            }
            w.low();
            let leaves = model.front().is_some_and(|h| !h.0.write || issue);
            assert_eq!(w.done.val(), leaves && model[0].1, "cycle {n}");
            dones += w.done.val() as u32;
            if leaves {
                model.pop_front();
            }
            if w.push.val() {
                model.push_back((w.entry.val(), w.entry_last.val()));
            }
            w.edge();
        }
        assert!(dones > 300, "{dones}");
    }

    /// Reductions to global memory are stores whose writes carry the command's `.redOp` and
    /// type (memory applies them); plain stores' writes carry `Copy`.
    #[test]
    fn reductions_carry_their_op_to_the_writes() {
        let mut tb = Tb::new(RANDOM, 13);
        let mut c = bulk_store(GBASE + 0x40, 0x100, 96);
        c.red_op = TmaRedOp::Add;
        c.red_type = TmaRedType::U32;
        tb.push(c, TmaDescImage::default(), exp_bulk_store(GBASE + 0x40, 0x100, 96));
        store_b(&mut tb, GBASE + 0x1000, 0x200, 64);
        let m = map(TensorMapSpec::tiled(Dt::Float32, GBASE, vec![40, 40], vec![160], vec![8, 4]));
        let mut c = tensor(TmaCmdKind::TensorStore, 2, &[36, 2], 0x400, 0, 0);
        c.red_op = TmaRedOp::Max;
        c.red_type = TmaRedType::F32;
        tb.push(c, m.1, exp_tensor_store(&m.0, &[36, 2], &[], 0x400));
        tb.drain();
        assert!(tb.ops.iter().all(|o| o.writes_seen == o.writes_total) && tb.st.writes > 0);
    }
}
