//! TmaGroups: the bulk async-groups of the TMA engine (`cp.async.bulk.commit_group` /
//! `wait_group{.read}`, PTX 9.7.9.25.6), kept per thread as PTX 9.7.9.25.6.1/2 asks, for stores
//! only (as on sm_90: loads complete through their mbarrier).
//!
//! # Ports
//!
//! - `thread`, `is_commit`, `is_store`, `acc`: the offered command's thread and kind, and
//!   whether it is accepted this cycle ([`crate::tma::queue::TmaQueue`]).
//! - `gid`: the command's group slot (its thread's context, else a free one, and that
//!   context's open slot); `noctx`: a store that found no context (refused in order by the
//!   decoder); `commit_ok`: a commit_group may close its thread's open group (the next slot of
//!   the context is free; a 4th incomplete group waits).
//! - Events that move the counters, each with the group slot it names: `rd_done` (a store op's
//!   shared-memory reads are done: its last slot is in stage Y), `wi_done` (its last write left
//!   the write buffer), `wr_issue` (a sector write was accepted; `wb_grp` names the slot of both),
//!   a write acknowledgement (`ack`, `ack_tag` = slot: the engine's `gmem_resp` with `write`
//!   set, only its tag read here), `drop` (a store that joined a group was
//!   refused by the decoder).
//! - `wait_n`, `wait_read`, `wait_thread` → `wait_done`, `groups_pending`: the answer of
//!   `wait_group{.read} wait_n` for `wait_thread` (combinational; a thread with no context
//!   waits for nothing) and that thread's committed groups not complete.
//!
//! # State
//!
//! `TMA_CTXS` (32) contexts, each holding one thread and `TMA_GROUPS` (4) group slots with its
//! open-slot pointer; per slot (context * 4 + slot, a 7-bit id) the store ops whose
//! shared-memory reads are pending, the ops whose writes are not all issued, and the writes not
//! yet acknowledged. A context is busy while one of its counters is non-zero; a thread finds its
//! context by comparing its index with each busy context's (PTX sets no limit on the threads
//! with bulk async-groups: 32 covers one issuing thread per warp of a 1024-thread CTA; a 33rd
//! thread's store is refused with `unsupported`). The wait answer reads only the waiting
//! thread's context: its four slots are selected first, then aged against its open slot.
//! Assumption: at most one op leaves `g_rd` and one leaves `g_wi` per cycle per slot besides
//! `drop` (the decoder holds a refusal while stage Y or the write buffer end an op: `hold`
//! there).

use super::types::*;
use rust_hdl::prelude::*;

/// Bulk async-group contexts, their counters and the wait answers.
#[derive(LogicBlock)]
pub struct TmaGroups {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// the offered command's thread
    pub thread: Signal<In, Bits<10>>,
    /// it is a commit_group
    pub is_commit: Signal<In, bool>,
    /// it is a store
    pub is_store: Signal<In, bool>,
    /// it is accepted this cycle
    pub acc: Signal<In, bool>,
    /// its group slot (context * 4 + open slot)
    pub gid: Signal<Out, Bits<TMA_SLOT_BITS>>,
    /// it is a store with no context (refused)
    pub noctx: Signal<Out, bool>,
    /// a commit_group may be accepted
    pub commit_ok: Signal<Out, bool>,
    /// a store op's reads are done
    pub rd_done: Signal<In, bool>,
    /// its slot
    pub rd_grp: Signal<In, Bits<TMA_SLOT_BITS>>,
    /// a store op's writes are all issued
    pub wi_done: Signal<In, bool>,
    /// a sector write is accepted
    pub wr_issue: Signal<In, bool>,
    /// the slot of `wi_done` and `wr_issue` (the write buffer's head)
    pub wb_grp: Signal<In, Bits<TMA_SLOT_BITS>>,
    /// the tag of that acknowledgement (its group slot)
    pub ack_tag: Signal<In, Bits<8>>,
    /// a write acknowledgement arrives (a valid `gmem_resp` with `write` set)
    pub ack: Signal<In, bool>,
    /// a store that joined a group is refused
    pub drop: Signal<In, bool>,
    /// its slot
    pub drop_grp: Signal<In, Bits<TMA_SLOT_BITS>>,
    /// `wait_group{.read} N`: N
    pub wait_n: Signal<In, Bits<8>>,
    /// the `.read` form
    pub wait_read: Signal<In, bool>,
    /// the waiting thread
    pub wait_thread: Signal<In, Bits<10>>,
    /// the wait holds
    pub wait_done: Signal<Out, bool>,
    /// committed groups of `wait_thread` not yet complete
    pub groups_pending: Signal<Out, Bits<4>>,

    /// per context: its open group's slot (0..4 within the context)
    open: [DFF<Bits<2>>; TMA_CTXS],
    /// per context: the thread it holds (valid while one of its slots is busy)
    ctx_thread: [DFF<Bits<10>>; TMA_CTXS],
    /// per slot (context * 4 + slot): store ops whose shared-memory reads are not done
    g_rd: [DFF<Bits<8>>; TMA_SLOTS],
    /// per slot: store ops whose writes are not all issued
    g_wi: [DFF<Bits<8>>; TMA_SLOTS],
    /// per slot: writes issued and not acknowledged
    g_wp: [DFF<Bits<8>>; TMA_SLOTS],

    /// per slot: a counter is non-zero
    g_busy: [Signal<Local, bool>; TMA_SLOTS],
    /// per context: one of its slots is busy (the context holds `ctx_thread`)
    x_busy: [Signal<Local, bool>; TMA_CTXS],
    /// the command's thread holds a context
    c_has: Signal<Local, bool>,
    /// that context
    c_hsel: Signal<Local, Bits<5>>,
    /// some context is free
    c_fany: Signal<Local, bool>,
    /// a free context (the highest-numbered)
    c_fsel: Signal<Local, Bits<5>>,
    /// the command's context: its thread's, else the free one
    c_sel: Signal<Local, Bits<5>>,
    /// that context's open slot
    c_open: Signal<Local, Bits<2>>,
    /// the slot id after the open one (same context)
    c_ngid: Signal<Local, Bits<TMA_SLOT_BITS>>,
    /// a store accepted into the open group
    ev_inc: Signal<Local, bool>,
    /// a write acknowledgement
    ev_ack: Signal<Local, bool>,
    /// the waiting thread holds a context
    w_hit: Signal<Local, bool>,
    /// that context's open slot
    w_open: Signal<Local, Bits<2>>,
    /// per slot of the waiting thread's context (0..4): not complete (writes not all issued or
    /// acknowledged)
    w_inc: [Signal<Local, bool>; 4],
    /// per slot of that context: its shared-memory reads are not done
    w_rdp: [Signal<Local, bool>; 4],
    /// per slot of that context: age (open - slot, 0..=3; 0 = the open group)
    w_age: [Signal<Local, Bits<8>>; 4],
    /// per slot of that context: committed and not complete (0/1)
    w_pc: [Signal<Local, Bits<4>>; 4],
    /// wait_n saturated to 3 (older groups than the 3 newest committed cannot exist)
    wn3: Signal<Local, Bits<8>>,
}

impl Default for TmaGroups {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            thread: Default::default(),
            is_commit: Default::default(),
            is_store: Default::default(),
            acc: Default::default(),
            gid: Default::default(),
            noctx: Default::default(),
            commit_ok: Default::default(),
            rd_done: Default::default(),
            rd_grp: Default::default(),
            wi_done: Default::default(),
            wr_issue: Default::default(),
            wb_grp: Default::default(),
            ack_tag: Default::default(),
            ack: Default::default(),
            drop: Default::default(),
            drop_grp: Default::default(),
            wait_n: Default::default(),
            wait_read: Default::default(),
            wait_thread: Default::default(),
            wait_done: Default::default(),
            groups_pending: Default::default(),
            open: std::array::from_fn(|_| Default::default()),
            ctx_thread: std::array::from_fn(|_| Default::default()),
            g_rd: std::array::from_fn(|_| Default::default()),
            g_wi: std::array::from_fn(|_| Default::default()),
            g_wp: std::array::from_fn(|_| Default::default()),
            g_busy: std::array::from_fn(|_| Default::default()),
            x_busy: std::array::from_fn(|_| Default::default()),
            c_has: Default::default(),
            c_hsel: Default::default(),
            c_fany: Default::default(),
            c_fsel: Default::default(),
            c_sel: Default::default(),
            c_open: Default::default(),
            c_ngid: Default::default(),
            ev_inc: Default::default(),
            ev_ack: Default::default(),
            w_hit: Default::default(),
            w_open: Default::default(),
            w_inc: Default::default(),
            w_rdp: Default::default(),
            w_age: Default::default(),
            w_pc: Default::default(),
            wn3: Default::default(),
        }
    }
}

impl Logic for TmaGroups {
    #[hdl_gen]
    fn update(&mut self) {
        for i in 0..TMA_SLOTS {
            self.g_rd[i].clock.next = self.clock.val();
            self.g_wi[i].clock.next = self.clock.val();
            self.g_wp[i].clock.next = self.clock.val();
        }
        for k in 0..TMA_CTXS {
            self.open[k].clock.next = self.clock.val();
            self.ctx_thread[k].clock.next = self.clock.val();
            self.open[k].d.next = self.open[k].q.val();
            self.ctx_thread[k].d.next = self.ctx_thread[k].q.val();
        }
        // contexts: a context is busy while one of its slots counts an op or a write; the
        // command's thread finds its own, else takes a free one
        for i in 0..TMA_SLOTS {
            self.g_busy[i].next = (self.g_rd[i].q.val() != 0)
                || (self.g_wi[i].q.val() != 0)
                || (self.g_wp[i].q.val() != 0);
        }
        for k in 0..TMA_CTXS {
            self.x_busy[k].next = self.g_busy[4 * k].val()
                || self.g_busy[4 * k + 1].val()
                || self.g_busy[4 * k + 2].val()
                || self.g_busy[4 * k + 3].val();
        }
        self.c_has.next = false;
        self.c_hsel.next = 0.into();
        self.c_fany.next = false;
        self.c_fsel.next = 0.into();
        for k in 0..TMA_CTXS {
            if self.x_busy[k].val() && (self.ctx_thread[k].q.val() == self.thread.val()) {
                self.c_has.next = true;
                self.c_hsel.next = k.to_bits::<5>();
            }
            if !self.x_busy[k].val() {
                self.c_fany.next = true;
                self.c_fsel.next = k.to_bits::<5>();
            }
        }
        self.c_sel.next = self.c_fsel.val();
        if self.c_has.val() {
            self.c_sel.next = self.c_hsel.val();
        }
        self.c_open.next = 0.into();
        for k in 0..TMA_CTXS {
            if self.c_sel.val() == k.to_bits::<5>() {
                self.c_open.next = self.open[k].q.val();
            }
        }
        self.gid.next = (bit_cast::<7, 5>(self.c_sel.val()) << 2) | bit_cast::<7, 2>(self.c_open.val());
        self.c_ngid.next = (self.gid.val() & 0x7C) | ((self.gid.val() + 1) & 3);
        self.noctx.next = self.is_store.val() && !self.c_has.val() && !self.c_fany.val();
        // commit_group of a thread with no context closes an empty group: nothing to count
        self.commit_ok.next = true;
        for i in 0..TMA_SLOTS {
            if self.c_has.val() && (self.c_ngid.val().index() == i) && self.g_busy[i].val() {
                self.commit_ok.next = false;
            }
        }
        self.ev_inc.next = self.acc.val() && self.is_store.val() && !self.noctx.val();
        for k in 0..TMA_CTXS {
            if self.acc.val()
                && self.is_commit.val()
                && self.c_has.val()
                && (self.c_sel.val() == k.to_bits::<5>())
            {
                self.open[k].d.next = self.c_open.val() + 1;
            }
            if self.ev_inc.val() && (self.c_sel.val() == k.to_bits::<5>()) {
                self.ctx_thread[k].d.next = self.thread.val();
            }
        }
        // the counters: one op enters, and one leaves each of g_rd / g_wi, per cycle
        self.ev_ack.next = self.ack.val();
        for i in 0..TMA_SLOTS {
            self.g_rd[i].d.next = self.g_rd[i].q.val();
            self.g_wi[i].d.next = self.g_wi[i].q.val();
            self.g_wp[i].d.next = self.g_wp[i].q.val();
            if self.ev_inc.val() && (self.gid.val().index() == i) {
                if !((self.rd_done.val() && (self.rd_grp.val().index() == i))
                    || (self.drop.val() && (self.drop_grp.val().index() == i)))
                {
                    self.g_rd[i].d.next = self.g_rd[i].q.val() + 1;
                }
                if !((self.wi_done.val() && (self.wb_grp.val().index() == i))
                    || (self.drop.val() && (self.drop_grp.val().index() == i)))
                {
                    self.g_wi[i].d.next = self.g_wi[i].q.val() + 1;
                }
            } else {
                if (self.rd_done.val() && (self.rd_grp.val().index() == i))
                    || (self.drop.val() && (self.drop_grp.val().index() == i))
                {
                    self.g_rd[i].d.next = self.g_rd[i].q.val() - 1;
                }
                if (self.wi_done.val() && (self.wb_grp.val().index() == i))
                    || (self.drop.val() && (self.drop_grp.val().index() == i))
                {
                    self.g_wi[i].d.next = self.g_wi[i].q.val() - 1;
                }
            }
            if self.wr_issue.val() && (self.wb_grp.val().index() == i) {
                if !(self.ev_ack.val() && (self.ack_tag.val().index() == i)) {
                    self.g_wp[i].d.next = self.g_wp[i].q.val() + 1;
                }
            } else if self.ev_ack.val() && (self.ack_tag.val().index() == i) {
                self.g_wp[i].d.next = self.g_wp[i].q.val() - 1;
            }
        }
        // wait_group{.read} of `wait_thread`: its context's four slots, then its committed
        // groups older than the wait_n newest
        self.w_hit.next = false;
        self.w_open.next = 0.into();
        for s in 0..4 {
            self.w_inc[s].next = false;
            self.w_rdp[s].next = false;
        }
        for k in 0..TMA_CTXS {
            if self.x_busy[k].val() && (self.ctx_thread[k].q.val() == self.wait_thread.val()) {
                self.w_hit.next = true;
                self.w_open.next = self.open[k].q.val();
                for s in 0..4 {
                    self.w_inc[s].next =
                        (self.g_wi[4 * k + s].q.val() != 0) || (self.g_wp[4 * k + s].q.val() != 0);
                    self.w_rdp[s].next = self.g_rd[4 * k + s].q.val() != 0;
                }
            }
        }
        self.wn3.next = self.wait_n.val();
        if self.wait_n.val() >= 3 {
            self.wn3.next = 3.into();
        }
        self.wait_done.next = true;
        for s in 0..4 {
            self.w_age[s].next = (bit_cast::<8, 2>(self.w_open.val()) - s.to_bits::<8>()) & 3;
            self.w_pc[s].next = 0.into();
            if self.w_hit.val() && (self.w_age[s].val() != 0) && self.w_inc[s].val() {
                self.w_pc[s].next = 1.into();
            }
            if self.w_hit.val() && (self.w_age[s].val() != 0) && (self.w_age[s].val() > self.wn3.val()) {
                if self.wait_read.val() {
                    if self.w_rdp[s].val() {
                        self.wait_done.next = false;
                    }
                } else if self.w_inc[s].val() {
                    self.wait_done.next = false;
                }
            }
        }
        self.groups_pending.next =
            self.w_pc[0].val() + self.w_pc[1].val() + self.w_pc[2].val() + self.w_pc[3].val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tma::tb::*;

    /// The inputs of one cycle of the group block alone (everything else idle).
    #[derive(Default, Clone, Copy)]
    struct In {
        /// (thread, is_commit, is_store, acc)
        cmd: Option<(u64, bool, bool, bool)>,
        rd_done: Option<u64>,
        wi_done: Option<u64>,
        wr_issue: Option<u64>,
        ack: Option<u64>,
        drop: Option<u64>,
        /// (thread, n, read)
        wait: (u64, u64, bool),
    }

    /// One cycle; returns (gid, noctx, commit_ok, wait_done, groups_pending) before the edge.
    fn cyc(g: &mut TmaGroups, i: In) -> (u64, bool, bool, bool, u64) {
        let (th, co, st, acc) = i.cmd.unwrap_or((0, false, false, false));
        g.thread.next = th.into();
        g.is_commit.next = co;
        g.is_store.next = st;
        g.acc.next = acc;
        g.rd_done.next = i.rd_done.is_some();
        g.rd_grp.next = i.rd_done.unwrap_or(0).into();
        g.wi_done.next = i.wi_done.is_some();
        g.wr_issue.next = i.wr_issue.is_some();
        g.wb_grp.next = i.wi_done.or(i.wr_issue).unwrap_or(0).into();
        g.ack.next = i.ack.is_some();
        g.ack_tag.next = i.ack.unwrap_or(0).into();
        g.drop.next = i.drop.is_some();
        g.drop_grp.next = i.drop.unwrap_or(0).into();
        g.wait_thread.next = i.wait.0.into();
        g.wait_n.next = i.wait.1.into();
        g.wait_read.next = i.wait.2;
        g.low();
        let o = (g.gid.val().to_u64(), g.noctx.val(), g.commit_ok.val(), g.wait_done.val(), g.groups_pending.val().to_u64());
        g.edge();
        o
    }

    fn store(th: u64) -> In {
        In { cmd: Some((th, false, true, true)), ..Default::default() }
    }

    fn commit(th: u64) -> In {
        In { cmd: Some((th, true, false, true)), ..Default::default() }
    }

    fn wait(th: u64, n: u64, read: bool) -> In {
        In { wait: (th, n, read), ..Default::default() }
    }

    /// PTX 9.7.9.25.6: a thread's store joins its open group; commit_group closes it; wait_group
    /// N holds when every committed group but the N newest is complete (`.read`: has read its
    /// source); a thread takes a free context (the highest) and keeps it while a group of it is
    /// incomplete; a 33rd thread's store finds none; a 4th incomplete group's commit waits.
    #[test]
    fn contexts_groups_and_wait_answers() {
        let mut g = block(TmaGroups::default());
        // thread 7: context 31, slot 0 (gid 124); one store, committed
        assert_eq!(cyc(&mut g, store(7)).0, 124);
        assert_eq!(cyc(&mut g, commit(7)).2, true);
        // thread 7 now has one incomplete committed group: wait_group 0 / .read 0 do not hold
        assert_eq!(cyc(&mut g, wait(7, 0, false)).3, false);
        assert_eq!(cyc(&mut g, wait(7, 0, true)).3, false);
        assert_eq!(cyc(&mut g, wait(7, 1, false)).3, true);
        assert_eq!(cyc(&mut g, wait(7, 0, false)).4, 1);
        // its reads are done: .read 0 holds, the plain form does not
        cyc(&mut g, In { rd_done: Some(124), ..Default::default() });
        assert_eq!(cyc(&mut g, wait(7, 0, true)).3, true);
        assert_eq!(cyc(&mut g, wait(7, 0, false)).3, false);
        // one write issued, the op's writes all issued, then the write acknowledged: complete
        cyc(&mut g, In { wr_issue: Some(124), ..Default::default() });
        cyc(&mut g, In { wi_done: Some(124), ..Default::default() });
        assert_eq!(cyc(&mut g, wait(7, 0, false)).3, false);
        cyc(&mut g, In { ack: Some(124), ..Default::default() });
        // (context 31 is free again; its open slot stays 1)
        assert_eq!(cyc(&mut g, wait(7, 0, false)), (125, false, true, true, 0));
        // 32 threads (one per warp, lane 3) hold the 32 contexts (a store each, open groups):
        // thread 3 takes context 31 (open slot 1), warp w's the highest free one, 31 - w; a
        // 33rd thread finds none
        for w in 0..32u64 {
            let want = if w == 0 { 125 } else { 4 * (31 - w) };
            let (gid_now, noctx, ..) = cyc(&mut g, store(32 * w + 3));
            assert_eq!((gid_now, noctx), (want, false), "warp {w}");
        }
        let (_, noctx, ..) = cyc(&mut g, store(4));
        assert!(noctx);
        // a second store of a thread that holds a context still finds it
        assert_eq!(cyc(&mut g, store(32 * 9 + 3)).0, 4 * 22);
        // a refused store leaves its group: warp 31's context (0) frees once its op is dropped
        cyc(&mut g, In { drop: Some(0), ..Default::default() });
        let (gid, noctx, ..) = cyc(&mut g, store(4));
        assert_eq!((gid, noctx), (0, false));
        // thread 3 (context 31, open slot 1): three committed incomplete groups (slots 125,
        // 126, 127) and an open one (slot 124); the commit of the 4th waits for slot 125
        cyc(&mut g, commit(3));
        cyc(&mut g, store(3));
        cyc(&mut g, commit(3));
        cyc(&mut g, store(3));
        cyc(&mut g, commit(3));
        cyc(&mut g, store(3));
        let probe = In { cmd: Some((3, true, false, false)), ..Default::default() };
        assert_eq!(cyc(&mut g, probe).2, false);
        assert_eq!(cyc(&mut g, wait(3, 0, false)).4, 3);
        assert_eq!(cyc(&mut g, wait(3, 2, false)).3, false);
        assert_eq!(cyc(&mut g, wait(3, 3, false)).3, true);
        assert_eq!(cyc(&mut g, wait(3, 200, false)).3, true);
        // another context's groups do not answer for thread 3: warp 9's one open group
        assert_eq!(cyc(&mut g, wait(32 * 9 + 3, 0, false)), (0, false, true, true, 0));
        // the oldest (slot 125) completes its reads and writes: the commit may go
        cyc(&mut g, In { rd_done: Some(125), ..Default::default() });
        cyc(&mut g, In { wi_done: Some(125), ..Default::default() });
        assert_eq!(cyc(&mut g, probe).2, true);
        assert_eq!(cyc(&mut g, wait(3, 2, false)).3, true);
    }

    #[test]
    fn bulk_groups_commit_and_wait() {
        let slow = Knobs {
            lat_min: 60,
            lat_max: 60,
            ..FAST
        };
        let mut tb = Tb::new(slow, 7);
        tb.wait = Some((0, false));
        store_b(&mut tb, GBASE, 0x100, 256); // group 0
        tb.push_commit();
        store_b(&mut tb, GBASE + 0x1000, 0x200, 256); // group 1
        tb.push_commit();
        store_b(&mut tb, GBASE + 0x2000, 0x300, 64); // open group (not waited for)
        while !tb.pending.is_empty() {
            tb.step();
        }
        tb.step();
        assert_eq!(tb.last_groups_pending, 2, "two committed groups pending");
        assert!(!tb.last_wait_done, "wait_group 0 waits");
        tb.wait = Some((2, false));
        tb.step();
        assert!(
            tb.last_wait_done,
            "wait_group 2: nothing older than the 2 newest"
        );
        tb.wait = Some((1, false));
        tb.step();
        assert!(!tb.last_wait_done, "wait_group 1 waits for group 0");
        // reads finish long before the writes are acknowledged
        tb.wait = Some((0, true));
        let mut read_done_at = None;
        let mut n = 0;
        while tb.ops[..2].iter().any(|o| o.acks_seen < o.writes_total) {
            tb.step();
            n += 1;
            if tb.last_wait_done && read_done_at.is_none() {
                read_done_at = Some(n);
                assert!(tb.ops[..2].iter().all(|o| o.reads_seen == o.reads_total));
            }
        }
        let r = read_done_at.expect("wait_group.read 0 held before the acknowledgements");
        assert!(r + 30 < n, "reads done at {r}, writes acknowledged at {n}");
        tb.wait = Some((0, false));
        tb.step();
        tb.step();
        assert!(tb.last_wait_done && tb.last_groups_pending == 0);
        tb.drain();
        // commit_group stalls when 3 committed groups are pending (4 slots per context)
        let mut tb = Tb::new(slow, 8);
        for i in 0..9 {
            store_b(&mut tb, GBASE + 0x1000 * i, 0x100, 32);
            tb.push_commit();
        }
        let mut max_pending = 0;
        while !tb.pending.is_empty() {
            tb.step();
            max_pending = max_pending.max(tb.last_groups_pending);
        }
        assert_eq!(max_pending, 3);
        tb.drain();
    }

    /// Bulk-group contexts (PTX 9.7.9.25.6: groups are per thread): two threads' groups are
    /// independent, a thread with no context waits for nothing, a 33rd thread with stores in
    /// flight is refused ("unsupported"), and contexts are free again once their groups
    /// complete.
    #[test]
    fn bulk_group_contexts() {
        let slow = Knobs {
            lat_min: 60,
            lat_max: 60,
            ..FAST
        };
        let mut tb = Tb::new(slow, 11);
        tb.wait = Some((0, false));
        tb.wait_thread = Some(1);
        tb.thread = 1;
        store_b(&mut tb, GBASE, 0x100, 32); // thread 1, group 0: one sector
        tb.push_commit();
        tb.thread = 2;
        store_b(&mut tb, GBASE + 0x1000, 0x200, 2048); // thread 2, group 0: 64 sectors
        tb.push_commit();
        store_b(&mut tb, GBASE + 0x2000, 0x300, 64); // thread 2, open group
        while !tb.pending.is_empty() {
            tb.step();
        }
        tb.step();
        assert!(!tb.last_wait_done, "thread 1 waits for its group 0");
        assert_eq!(tb.last_groups_pending, 1, "thread 1: one committed group pending");
        tb.wait_thread = Some(2);
        tb.step();
        assert!(!tb.last_wait_done, "thread 2 waits for its group 0");
        assert_eq!(tb.last_groups_pending, 1, "thread 2: one committed group pending");
        tb.wait_thread = Some(3);
        tb.step();
        assert!(tb.last_wait_done, "thread 3 has no context: nothing to wait for");
        assert_eq!(tb.last_groups_pending, 0);
        // thread 1's small group completes while thread 2's large one is still writing
        tb.wait_thread = Some(1);
        let mut n = 0;
        while !tb.last_wait_done {
            tb.step();
            n += 1;
            assert!(n < 1000, "thread 1's wait_group 0 never held");
        }
        assert!(tb.ops[1].acks_seen < tb.ops[1].writes_total, "thread 2's group finished first");
        tb.wait_thread = Some(2);
        tb.step();
        assert!(!tb.last_wait_done, "thread 2 still waits");
        tb.drain();
        assert!(tb.last_wait_done);

        // 32 threads of different warps with stores in flight hold the 32 contexts (their
        // acknowledgements take longer than the 32 stores' reads): a 33rd thread's store is
        // refused
        let slower = Knobs {
            lat_min: 2000,
            lat_max: 2000,
            ..FAST
        };
        let mut tb = Tb::new(slower, 12);
        for w in 0..32 {
            tb.thread = 32 * w + 5;
            store_b(&mut tb, GBASE + 0x1000 * w as u64, 0x100, 256);
        }
        tb.thread = 6;
        refused(&mut tb, bulk_store(GBASE, 0x100, 64), TmaDescImage::default(), TmaFaultKind::UnsupportedThreads);
        tb.push_commit(); // no context: an empty group, accepted
        tb.drain();
        assert_eq!(tb.st.faults, 1);
        assert_eq!(
            TmaFaultKind::UnsupportedThreads.name(),
            Some("unsupported: more than 32 threads with open bulk async-groups")
        );
        // every group completed: the contexts are free, thread 5 now gets one
        store_b(&mut tb, GBASE, 0x100, 64);
        tb.push_commit();
        tb.wait_thread = Some(6);
        tb.drain();
        assert_eq!(tb.st.faults, 1);
        assert!(tb.last_wait_done);
    }
}
