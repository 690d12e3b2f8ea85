//! TmaQueue: the TMA engine's front end: command acceptance and the 2-entry command queue.
//!
//! # Ports
//!
//! - `cmd` + `cmd_desc` / `cmd_valid` / `cmd_ready`: the engine's command port ([`TmaCmd`] and
//!   the tensor-map image of a tensor command).
//! - `is_commit`, `is_store`: what `cmd` is (combinational), for the bulk-group contexts.
//! - `commit_ok` (in): the commit_group's thread may close its open group now (its next group
//!   slot is free, [`crate::tma::groups::TmaGroups`]); `gid`, `noctx` (in): the command's
//!   bulk-group slot, and "a store that found no context" (refused later, in order).
//! - `acc`: a command is accepted this cycle (any kind).
//! - `pop` (in): the decoder consumed the head (decoded or refused) this cycle.
//! - `head` / `head_desc` / `head_gid` / `head_noctx` / `head_valid`: the queue head.
//! - `idle`: the queue is empty.
//!
//! # Behaviour
//!
//! A `CommitGroup` does not enter the queue: it is accepted when `commit_ok` holds, and closes
//! its thread's open group at that edge (PTX 9.7.9.25.6.1: the group holds the bulk operations
//! the thread initiated before the commit), so it is ordered with the stores accepted before
//! it. Every other command enters the queue while it has a free entry; a pop and a push at one
//! edge move the queue and fill the freed place.

use super::types::*;
use rust_hdl::prelude::*;

/// Acceptance and the 2-entry command queue.
#[derive(LogicBlock, Default)]
pub struct TmaQueue {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// a command
    pub cmd: Signal<In, TmaCmd>,
    /// its tensor-map image
    pub cmd_desc: Signal<In, TmaDescImage>,
    /// `cmd` is valid
    pub cmd_valid: Signal<In, bool>,
    /// `cmd` is accepted this cycle (when valid)
    pub cmd_ready: Signal<Out, bool>,
    /// `cmd` is a commit_group
    pub is_commit: Signal<Out, bool>,
    /// `cmd` is a bulk or tensor store
    pub is_store: Signal<Out, bool>,
    /// a commit_group may be accepted (its thread's next group slot is free)
    pub commit_ok: Signal<In, bool>,
    /// the command's bulk-group slot
    pub gid: Signal<In, Bits<TMA_SLOT_BITS>>,
    /// the command is a store that found no bulk-group context
    pub noctx: Signal<In, bool>,
    /// a command is accepted this cycle
    pub acc: Signal<Out, bool>,
    /// the head is consumed this cycle
    pub pop: Signal<In, bool>,
    /// the head command
    pub head: Signal<Out, TmaCmd>,
    /// its tensor-map image
    pub head_desc: Signal<Out, TmaDescImage>,
    /// its bulk-group slot
    pub head_gid: Signal<Out, Bits<TMA_SLOT_BITS>>,
    /// it is a store that found no bulk-group context
    pub head_noctx: Signal<Out, bool>,
    /// the queue holds a command
    pub head_valid: Signal<Out, bool>,
    /// the queue is empty
    pub idle: Signal<Out, bool>,

    /// queue entry 0 (head)
    q0: DFF<TmaCmd>,
    /// its descriptor image
    q0d: DFF<TmaDescImage>,
    /// its bulk-group slot
    q0g: DFF<Bits<TMA_SLOT_BITS>>,
    /// it is a store that found no bulk-group context
    q0x: DFF<bool>,
    /// queue entry 1
    q1: DFF<TmaCmd>,
    /// its descriptor image
    q1d: DFF<TmaDescImage>,
    /// its bulk-group slot
    q1g: DFF<Bits<TMA_SLOT_BITS>>,
    /// it is a store that found no bulk-group context
    q1x: DFF<bool>,
    /// entries in the queue
    qn: DFF<Bits<2>>,
    /// entries after this cycle's pop
    qn_after: Signal<Local, Bits<2>>,
}

impl Logic for TmaQueue {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, q0, q0d, q0g, q0x, q1, q1d, q1g, q1x, qn);
        self.is_commit.next = self.cmd.val().kind == TmaCmdKind::CommitGroup;
        self.is_store.next = (self.cmd.val().kind == TmaCmdKind::BulkStore)
            || (self.cmd.val().kind == TmaCmdKind::TensorStore);
        self.cmd_ready.next = (self.is_commit.val() && self.commit_ok.val())
            || (!self.is_commit.val() && (self.qn.q.val() != 2));
        self.acc.next = self.cmd_valid.val() && self.cmd_ready.val();
        self.qn_after.next = self.qn.q.val();
        if self.pop.val() {
            self.qn_after.next = self.qn.q.val() - 1;
            self.q0.d.next = self.q1.q.val();
            self.q0d.d.next = self.q1d.q.val();
            self.q0g.d.next = self.q1g.q.val();
            self.q0x.d.next = self.q1x.q.val();
        }
        self.qn.d.next = self.qn_after.val();
        if self.acc.val() && !self.is_commit.val() {
            self.qn.d.next = self.qn_after.val() + 1;
            if self.qn_after.val() == 0 {
                self.q0.d.next = self.cmd.val();
                self.q0d.d.next = self.cmd_desc.val();
                self.q0g.d.next = self.gid.val();
                self.q0x.d.next = self.noctx.val();
            } else {
                self.q1.d.next = self.cmd.val();
                self.q1d.d.next = self.cmd_desc.val();
                self.q1g.d.next = self.gid.val();
                self.q1x.d.next = self.noctx.val();
            }
        }
        self.head.next = self.q0.q.val();
        self.head_desc.next = self.q0d.q.val();
        self.head_gid.next = self.q0g.q.val();
        self.head_noctx.next = self.q0x.q.val();
        self.head_valid.next = self.qn.q.val() != 0;
        self.idle.next = self.qn.q.val() == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tma::tb::{block, Clocked};

    fn cmd(kind: TmaCmdKind, mbar: u64) -> TmaCmd {
        TmaCmd {
            kind,
            mbar: mbar.into(),
            ..Default::default()
        }
    }

    /// Offers `c` (with its group slot and context flag) while the decoder pops or not; returns
    /// (cmd_ready, acc, head mbar, head gid, head noctx, head_valid) before the edge.
    fn offer(q: &mut TmaQueue, c: Option<(TmaCmd, u64, bool)>, commit_ok: bool, pop: bool) -> (bool, bool, u64, u64, bool, bool) {
        let (cm, g, x) = c.unwrap_or((TmaCmd::default(), 0, false));
        q.cmd.next = cm;
        q.cmd_valid.next = c.is_some();
        q.gid.next = g.into();
        q.noctx.next = x;
        q.commit_ok.next = commit_ok;
        q.pop.next = pop;
        q.low();
        let h = q.head.val();
        let o = (q.cmd_ready.val(), q.acc.val(), h.mbar.to_u64(), q.head_gid.val().to_u64(), q.head_noctx.val(), q.head_valid.val());
        q.edge();
        o
    }

    /// Two entries; a third waits; a pop and a push at one edge; commit_group never enters and
    /// is accepted only with `commit_ok`; each command keeps its group slot and context flag.
    #[test]
    fn commands_leave_in_order_and_commits_skip_the_queue() {
        let mut q = block(TmaQueue::default());
        let st = |m| (cmd(TmaCmdKind::BulkStore, m), m + 4, m == 2);
        assert_eq!(offer(&mut q, Some(st(1)), true, false).0, true);
        assert_eq!(offer(&mut q, Some(st(2)), true, false).0, true);
        // full: the third is not ready; a commit_group still is (with commit_ok)
        let (ready, acc, head, gid, x, valid) = offer(&mut q, Some(st(3)), true, false);
        assert_eq!((ready, acc, head, gid, x, valid), (false, false, 1, 5, false, true));
        let commit = (cmd(TmaCmdKind::CommitGroup, 9), 0, false);
        assert_eq!(offer(&mut q, Some(commit), false, false).0, false);
        assert_eq!(offer(&mut q, Some(commit), true, false).1, true);
        // the head leaves; then a pop and a push at one edge: 3 takes the freed place
        let (_, _, head, gid, x, _) = offer(&mut q, None, true, true);
        assert_eq!((head, gid, x), (1, 5, false));
        let (ready, acc, head, gid, x, _) = offer(&mut q, Some(st(3)), true, true);
        assert_eq!((ready, acc, head, gid, x), (true, true, 2, 6, true));
        let (_, _, head, gid, x, valid) = offer(&mut q, None, true, true);
        assert_eq!((head, gid, x, valid), (3, 7, false, true));
        let (.., valid) = offer(&mut q, None, true, false);
        assert!(!valid && q.idle.val());
    }
}
