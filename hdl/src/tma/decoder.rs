//! TmaDecoder: the TMA engine's decoder: turns the queue head into the job register J that the
//! row iterator and the slot iterator work from, or refuses it.
//!
//! # Ports
//!
//! - `head` / `head_desc` / `head_gid` / `head_noctx` / `head_valid` (in): the queue head
//!   ([`crate::tma::queue::TmaQueue`]); `pop`: it is consumed this cycle (decoded or refused).
//! - `rj`, `bj`: the job register, its row iterator's and its slot iterator's part; `start`: J is complete this cycle (the row iterator
//!   starts on it); `rg_done` (in): the row iterator has walked J; `jq_push`: J's BA part enters
//!   the job queue ([`crate::tma::fifo::TmaJobQueue`]) this cycle (`jq_full` (in): it has no
//!   room); `j_free`: J is walked and queued, free after this edge.
//! - `y_store_last`, `wb_head_last` (in): stage Y or the write buffer ends a store op this
//!   cycle (they decrement a bulk-group counter; a refused store waits: `hold`).
//! - `drop` / `drop_grp`: a refused store leaves its bulk group (for
//!   [`crate::tma::groups::TmaGroups`]).
//! - `fault`: a refused command ([`TmaFaultKind`] and its `thread`, registered); the command is
//!   dropped.
//! - `idle`: no command in decode and J free.
//!
//! # Cycles
//!
//! Idle: J free and a head present: the checks ([`TmaDescCheck`]) refuse it (fault, pop), or J
//! takes the command's constant fields and neutral outer dimensions. A tensor command then spends
//! one Dim cycle per dimension (`dk`, [`TmaDimStep`]: its sums and in-bounds windows placed
//! into J; the terms it adds were computed and registered in the cycle before, the Idle check
//! cycle for dimension 0, from fields selected and registered a cycle earlier still, the Idle
//! cycle for dimension 1), a bulk command (a 1-row job) none; then one Fin cycle ([`TmaJobFin`]: the
//! per-job constants), where J becomes valid, the head is popped and the row iterator starts.
//! So a tensor command of rank r takes 1 + r + 1 cycles, a bulk command 2.

use super::dec_check::TmaDescCheck;
use super::dec_dim::TmaDimStep;
use super::dec_fin::TmaJobFin;
use super::types::*;
use rust_hdl::prelude::*;

/// Decoder state.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaDecState {
    /// waiting for a command and a free job register; checks the head command
    Idle,
    /// one dimension per cycle (`dk`): its sums and in-bounds windows
    Dim,
    /// per-job constants; J becomes valid
    Fin,
}

/// The decoder and the job register.
#[derive(LogicBlock, Default)]
pub struct TmaDecoder {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// the queue head
    pub head: Signal<In, TmaCmd>,
    /// its tensor-map image
    pub head_desc: Signal<In, TmaDescImage>,
    /// its bulk-group slot
    pub head_gid: Signal<In, Bits<TMA_SLOT_BITS>>,
    /// it is a store with no bulk-group context
    pub head_noctx: Signal<In, bool>,
    /// the queue holds a command
    pub head_valid: Signal<In, bool>,
    /// the head is consumed this cycle
    pub pop: Signal<Out, bool>,
    /// stage Y ends a store-direction job this cycle
    pub y_store_last: Signal<In, bool>,
    /// the write buffer's head ends a store op
    pub wb_head_last: Signal<In, bool>,
    /// the row iterator has walked J
    pub rg_done: Signal<In, bool>,
    /// the job queue has no room
    pub jq_full: Signal<In, bool>,
    /// J's BA part (`bj`) enters the job queue this cycle
    pub jq_push: Signal<Out, bool>,
    /// the job register: RG's part
    pub rj: Signal<Out, TmaRowJob>,
    /// the job register: BA's part
    pub bj: Signal<Out, TmaSlotJob>,
    /// J is complete this cycle: the row iterator starts
    pub start: Signal<Out, bool>,
    /// J is released at this edge
    pub j_free: Signal<Out, bool>,
    /// a refused store leaves its bulk group
    pub drop: Signal<Out, bool>,
    /// its slot
    pub drop_grp: Signal<Out, Bits<TMA_SLOT_BITS>>,
    /// a refused command (registered)
    pub fault: Signal<Out, TmaFault>,
    /// nothing in decode, J free
    pub idle: Signal<Out, bool>,

    /// decoder state
    dstate: DFF<TmaDecState>,
    /// dimension of a Dim cycle
    dk: DFF<Bits<3>>,
    /// J holds a job
    jv: DFF<bool>,
    /// J's BA part is in the job queue
    queued: DFF<bool>,
    /// the job register: RG's part
    jr: DFF<TmaRowJob>,
    /// the job register: BA's part
    jb: DFF<TmaSlotJob>,
    /// the job register: the decoder's own part
    jd: DFF<TmaDecJob>,
    /// fault register
    fault_q: DFF<TmaFault>,
    /// the head command's checks
    check: TmaDescCheck,
    /// the dimension step
    dim: TmaDimStep,
    /// the per-job constants
    fin: TmaJobFin,
    /// the head is checked this cycle
    look: Signal<Local, bool>,
    /// a refused store's fault must wait (its group counters are being decremented)
    hold: Signal<Local, bool>,
    /// the head is refused this cycle
    refuse: Signal<Local, bool>,
}

impl Logic for TmaDecoder {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, dstate, dk, jv, queued, jr, jb, jd, fault_q);
        self.fault_q.d.next.valid = false;
        self.look.next = (self.dstate.q.val() == TmaDecState::Idle)
            && self.head_valid.val()
            && !self.jv.q.val();
        self.check.en.next = self.look.val();
        self.check.cmd.next = self.head.val();
        self.check.desc.next = self.head_desc.val();
        self.check.noctx.next = self.head_noctx.val();
        // dimension 0's terms in the check cycle, dimension dk + 1's in dimension dk's
        self.dim.clock.next = self.clock.val();
        self.dim.en.next = self.dstate.q.val() == TmaDecState::Dim;
        self.dim.dk.next = self.dk.q.val();
        self.dim.pre.next = self.look.val() || (self.dstate.q.val() == TmaDecState::Dim);
        self.dim.nk.next = self.dk.q.val() + 1;
        self.dim.nes.next = self.jd.q.val().es;
        if self.look.val() {
            self.dim.nk.next = 0.into();
            self.dim.nes.next = self.check.es.val();
        }
        self.dim.cmd.next = self.head.val();
        self.dim.desc.next = self.head_desc.val();
        self.dim.b0m1.next = self.check.b0m1.val();
        self.dim.a_lo.next = self.jr.q.val().a_lo;
        self.dim.a_hi.next = self.jr.q.val().a_hi;
        self.dim.mb2_lo.next = self.jr.q.val().mb2_lo;
        self.dim.mb2_hi.next = self.jr.q.val().mb2_hi;
        self.dim.mb3_lo.next = self.jr.q.val().mb3_lo;
        self.dim.mb3_hi.next = self.jr.q.val().mb3_hi;
        self.fin.en.next = self.dstate.q.val() == TmaDecState::Fin;
        self.fin.store.next = self.jb.q.val().store;
        self.fin.rowbytes.next = self.jd.q.val().rowbytes;
        self.fin.lo_b.next = self.jd.q.val().lo_b;
        self.fin.hi_b.next = self.jd.q.val().hi_b;
        self.fin.rot.next = self.jd.q.val().rot;
        self.pop.next = false;
        self.start.next = false;
        // ---- Idle: check the head; refuse it, or start J
        // a refused store leaves its group: wait while Y or WB decrement a counter
        self.hold.next = self.check.store.val() && (self.y_store_last.val() || self.wb_head_last.val());
        self.refuse.next =
            self.look.val() && (self.check.kind.val() != TmaFaultKind::NoFault) && !self.hold.val();
        if self.refuse.val() {
            self.fault_q.d.next.valid = true;
            self.fault_q.d.next.kind = self.check.kind.val();
            self.fault_q.d.next.thread = self.head.val().thread;
            self.pop.next = true;
        }
        self.drop.next = self.refuse.val() && self.check.store.val() && !self.head_noctx.val();
        self.drop_grp.next = self.head_gid.val();
        if self.look.val() && (self.check.kind.val() == TmaFaultKind::NoFault) {
            // J's constant fields; neutral outer dimensions. An S2S copy reads like a store;
            // a prefetch has no destination.
            self.jr.d.next.store = self.check.store.val() || self.check.s2s.val();
            self.jb.d.next.store = self.check.store.val() || self.check.s2s.val();
            self.jb.d.next.s2s = self.check.s2s.val();
            self.jb.d.next.pf = self.check.pf.val();
            self.jb.d.next.doff = self.head.val().dsmem - self.head.val().smem;
            self.jb.d.next.red_op = self.head.val().red_op;
            self.jb.d.next.red_type = self.head.val().red_type;
            self.jb.d.next.base = self.head.val().smem;
            self.jb.d.next.ctam = self.head.val().cta_mask;
            if self.check.pf.val() {
                self.jb.d.next.ctam = 0.into();
            }
            self.jb.d.next.word = self.head.val().mbar;
            self.jb.d.next.grp = self.head_gid.val();
            self.jd.d.next.es = self.check.es.val();
            self.jb.d.next.fill = self.check.fill.val();
            self.jr.d.next.box1 = 1.into();
            self.jr.d.next.box2 = 1.into();
            self.jr.d.next.box3 = 1.into();
            self.jr.d.next.box4 = 1.into();
            self.jr.d.next.e1 = 1.into();
            self.jr.d.next.e2 = 1.into();
            self.jr.d.next.e3 = 1.into();
            self.jr.d.next.e4 = 1.into();
            self.jr.d.next.lo1 = 0.into();
            self.jr.d.next.lo2 = 0.into();
            self.jr.d.next.lo3 = 0.into();
            self.jr.d.next.lo4 = 0.into();
            self.jr.d.next.hi1 = 1.into();
            self.jr.d.next.hi2 = 1.into();
            self.jr.d.next.hi3 = 1.into();
            self.jr.d.next.hi4 = 1.into();
            self.jr.d.next.st1_lo = 0.into();
            self.jr.d.next.st1_hi = 0.into();
            self.jr.d.next.st2_lo = 0.into();
            self.jr.d.next.st2_hi = 0.into();
            self.jr.d.next.st3_lo = 0.into();
            self.jr.d.next.st3_hi = 0.into();
            self.jr.d.next.st4_lo = 0.into();
            self.jr.d.next.st4_hi = 0.into();
            // im2col: windows that never go out of bounds, for the dimensions a rank lacks
            self.jr.d.next.im2col = self.check.tensor.val() && self.head.val().im2col;
            self.jr.d.next.pix_m1 = self.head_desc.val().pixels_m1;
            self.jr.d.next.kcl1 = 0.into();
            self.jr.d.next.kcl2 = 0.into();
            self.jr.d.next.kcl3 = 0.into();
            self.jr.d.next.kcl4 = 0.into();
            self.jr.d.next.kch1 = 16384.into();
            self.jr.d.next.kch2 = 16384.into();
            self.jr.d.next.kch3 = 16384.into();
            self.jr.d.next.kch4 = 16384.into();
            self.jr.d.next.kll1 = 0.into();
            self.jr.d.next.kll2 = 0.into();
            self.jr.d.next.kll3 = 0.into();
            self.jr.d.next.klh1 = 16384.into();
            self.jr.d.next.klh2 = 16384.into();
            self.jr.d.next.klh3 = 16384.into();
            self.jr.d.next.kwc1 = 0.into();
            self.jr.d.next.kwc2 = 0.into();
            self.jr.d.next.kwc3 = 0.into();
            self.jr.d.next.kwl1 = 0.into();
            self.jr.d.next.kwl2 = 0.into();
            self.jr.d.next.kwl3 = 0.into();
            self.jr.d.next.mb2_lo = 0.into();
            self.jr.d.next.mb2_hi = 0.into();
            self.jr.d.next.mb3_lo = 0.into();
            self.jr.d.next.mb3_hi = 0.into();
            self.jr.d.next.mb4_lo = 0.into();
            self.jr.d.next.mb4_hi = 0.into();
            if self.check.tensor.val() {
                self.jr.d.next.rank = self.head_desc.val().rank_m1 + 1;
                self.jb.d.next.swz = bit_cast::<2, 3>(self.head_desc.val().swizzle);
                self.jr.d.next.a_lo = self.head_desc.val().gaddr_lo;
                self.jr.d.next.a_hi = self.head_desc.val().gaddr_hi;
                self.dstate.d.next = TmaDecState::Dim;
                self.dk.d.next = 0.into();
            } else {
                self.jr.d.next.rank = 1.into();
                self.jb.d.next.swz = 0.into();
                self.jr.d.next.a_lo = self.head.val().gaddr_lo;
                self.jr.d.next.a_hi = self.head.val().gaddr_hi;
                self.jd.d.next.lo_b = 0.into();
                self.jd.d.next.hi_b = bit_cast::<24, 20>(self.head.val().size);
                self.jd.d.next.rot = 0.into();
                self.jb.d.next.rowbytes = bit_cast::<24, 20>(self.head.val().size);
                self.jd.d.next.rowbytes = bit_cast::<24, 20>(self.head.val().size);
                self.dstate.d.next = TmaDecState::Fin;
            }
        }
        // ---- Dim: fold dimension dk into J
        if self.dstate.q.val() == TmaDecState::Dim {
            self.jr.d.next.a_lo = self.dim.a_lo_nx.val();
            self.jr.d.next.a_hi = self.dim.a_hi_nx.val();
            if self.dim.sp.val() {
                match self.dk.q.val().index() {
                    1 => {
                        self.jr.d.next.mb2_lo = self.dim.mb_lo.val();
                        self.jr.d.next.mb2_hi = self.dim.mb_hi.val();
                        self.jr.d.next.kcl1 = self.dim.kcl.val();
                        self.jr.d.next.kch1 = self.dim.kch.val();
                        self.jr.d.next.kll1 = self.dim.kll.val();
                        self.jr.d.next.klh1 = self.dim.klh.val();
                        self.jr.d.next.kwc1 = self.dim.kwc.val();
                        self.jr.d.next.kwl1 = self.dim.kwl.val();
                    }
                    2 => {
                        self.jr.d.next.mb3_lo = self.dim.mb_lo.val();
                        self.jr.d.next.mb3_hi = self.dim.mb_hi.val();
                        self.jr.d.next.kcl2 = self.dim.kcl.val();
                        self.jr.d.next.kch2 = self.dim.kch.val();
                        self.jr.d.next.kll2 = self.dim.kll.val();
                        self.jr.d.next.klh2 = self.dim.klh.val();
                        self.jr.d.next.kwc2 = self.dim.kwc.val();
                        self.jr.d.next.kwl2 = self.dim.kwl.val();
                    }
                    _ => {
                        self.jr.d.next.mb4_lo = self.dim.mb_lo.val();
                        self.jr.d.next.mb4_hi = self.dim.mb_hi.val();
                        self.jr.d.next.kcl3 = self.dim.kcl.val();
                        self.jr.d.next.kch3 = self.dim.kch.val();
                        self.jr.d.next.kll3 = self.dim.kll.val();
                        self.jr.d.next.klh3 = self.dim.klh.val();
                        self.jr.d.next.kwc3 = self.dim.kwc.val();
                        self.jr.d.next.kwl3 = self.dim.kwl.val();
                    }
                }
            }
            if self.dim.n.val() {
                match self.dk.q.val().index() {
                    2 => {
                        self.jr.d.next.kcl2 = self.dim.kcl.val();
                        self.jr.d.next.kch2 = self.dim.kch.val();
                    }
                    3 => {
                        self.jr.d.next.kcl3 = self.dim.kcl.val();
                        self.jr.d.next.kch3 = self.dim.kch.val();
                    }
                    _ => {
                        self.jr.d.next.kcl4 = self.dim.kcl.val();
                        self.jr.d.next.kch4 = self.dim.kch.val();
                    }
                }
            }
            match self.dk.q.val().index() {
                0 => {
                    self.jd.d.next.rot = self.dim.rot.val();
                    self.jd.d.next.lo_b = self.dim.lo_b.val();
                    self.jd.d.next.hi_b = self.dim.hi_b.val();
                    self.jb.d.next.rowbytes = self.dim.rowbytes.val();
                    self.jd.d.next.rowbytes = self.dim.rowbytes.val();
                }
                1 => {
                    self.jr.d.next.box1 = self.dim.bdim.val();
                    self.jr.d.next.e1 = self.dim.e.val();
                    self.jr.d.next.lo1 = self.dim.lo.val();
                    self.jr.d.next.hi1 = self.dim.hi.val();
                    self.jr.d.next.st1_lo = self.dim.st_lo.val();
                    self.jr.d.next.st1_hi = self.dim.st_hi.val();
                }
                2 => {
                    self.jr.d.next.box2 = self.dim.bdim.val();
                    self.jr.d.next.e2 = self.dim.e.val();
                    self.jr.d.next.lo2 = self.dim.lo.val();
                    self.jr.d.next.hi2 = self.dim.hi.val();
                    self.jr.d.next.st2_lo = self.dim.st_lo.val();
                    self.jr.d.next.st2_hi = self.dim.st_hi.val();
                }
                3 => {
                    self.jr.d.next.box3 = self.dim.bdim.val();
                    self.jr.d.next.e3 = self.dim.e.val();
                    self.jr.d.next.lo3 = self.dim.lo.val();
                    self.jr.d.next.hi3 = self.dim.hi.val();
                    self.jr.d.next.st3_lo = self.dim.st_lo.val();
                    self.jr.d.next.st3_hi = self.dim.st_hi.val();
                }
                _ => {
                    self.jr.d.next.box4 = self.dim.bdim.val();
                    self.jr.d.next.e4 = self.dim.e.val();
                    self.jr.d.next.lo4 = self.dim.lo.val();
                    self.jr.d.next.hi4 = self.dim.hi.val();
                    self.jr.d.next.st4_lo = self.dim.st_lo.val();
                    self.jr.d.next.st4_hi = self.dim.st_hi.val();
                }
            }
            self.dk.d.next = self.dk.q.val() + 1;
            if (self.dk.q.val() + 1) == self.jr.q.val().rank {
                self.dstate.d.next = TmaDecState::Fin;
            }
        }
        // ---- Fin: the per-job constants; J valid; the row iterator starts
        if self.dstate.q.val() == TmaDecState::Fin {
            self.jr.d.next.empty = self.fin.empty.val();
            self.jr.d.next.ca = self.fin.ca.val();
            self.jr.d.next.cb = self.fin.cb.val();
            self.jr.d.next.offa = self.fin.offa.val();
            self.jb.d.next.empty = self.fin.empty.val();
            self.jb.d.next.ca = self.fin.ca.val();
            self.jb.d.next.cb = self.fin.cb.val();
            self.jb.d.next.zero = self.fin.zero.val();
            self.jb.d.next.nb = self.fin.nb.val();
            self.jb.d.next.ns_m1 = self.fin.ns_m1.val();
            self.jb.d.next.jl = self.fin.jl.val();
            self.jb.d.next.jh = self.fin.jh.val();
            self.jb.d.next.lomask = self.fin.lomask.val();
            self.jb.d.next.himask = self.fin.himask.val();
            self.jb.d.next.off = self.fin.off.val();
            self.jb.d.next.d = self.fin.d.val();
            self.jv.d.next = true;
            self.pop.next = true;
            self.start.next = true;
            self.dstate.d.next = TmaDecState::Idle;
        }
        // J's BA part is queued once (the cycle after Fin, when there is room); J is released
        // when the row iterator has walked it and its BA part is queued
        self.jq_push.next = self.jv.q.val() && !self.queued.q.val() && !self.jq_full.val();
        self.j_free.next = self.jv.q.val()
            && self.rg_done.val()
            && (self.queued.q.val() || self.jq_push.val());
        self.queued.d.next = self.queued.q.val() || self.jq_push.val();
        if self.j_free.val() {
            self.jv.d.next = false;
            self.queued.d.next = false;
        }
        self.rj.next = self.jr.q.val();
        self.bj.next = self.jb.q.val();
        self.fault.next = self.fault_q.q.val();
        self.idle.next = (self.dstate.q.val() == TmaDecState::Idle) && !self.jv.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tma::tb::*;
    use hopsync_firmware::tensormap::{TensorMapDataType as Dt, TensorMapSpec};

    /// Runs the decoder on one head command until it pops it; returns (cycles to the pop, the
    /// fault if refused, whether J started). RG walks J and the job queue takes it as soon as it
    /// is valid.
    fn decode(d: &mut TmaDecoder, c: TmaCmd, desc: TmaDescImage, hold: bool) -> (u64, Option<TmaFaultKind>, bool) {
        d.head.next = c;
        d.head_desc.next = desc;
        d.head_gid.next = 5.into();
        d.head_noctx.next = false;
        d.head_valid.next = true;
        for n in 1..20 {
            d.y_store_last.next = hold && n < 4;
            d.wb_head_last.next = false;
            d.rg_done.next = d.jv.q.val();
            d.jq_full.next = false;
            d.low();
            let (pop, start, drop) = (d.pop.val(), d.start.val(), d.drop.val());
            d.edge();
            let fault = d.fault.val();
            if pop {
                assert_eq!(drop, fault.valid && c.kind == TmaCmdKind::BulkStore);
                // RG walks J, the job queue takes it, J is released
                d.head_valid.next = false;
                d.rg_done.next = true;
                d.low();
                assert_eq!(d.jq_push.val(), start);
                d.edge();
                assert!(!d.jv.q.val());
                return (n, fault.valid.then_some(fault.kind), start);
            }
        }
        panic!("the decoder never popped the head")
    }

    /// A tensor command takes 1 + rank + 1 cycles (check, one per dimension, the constants), a
    /// bulk command 2; a refused command pops at its check, but a refused store waits while
    /// stage Y or the write buffer ends a store op (`hold`: both decrement its group's counters).
    #[test]
    fn cycles_per_command_and_refusals() {
        let mut d = block(TmaDecoder::default());
        for rank in 1..=5usize {
            let dims: Vec<u64> = (0..rank).map(|i| if i == 0 { 64 } else { 4 }).collect();
            let strides: Vec<u64> = (1..rank).map(|i| 128 << (2 * (i - 1))).collect();
            let boxd: Vec<u32> = (0..rank).map(|i| if i == 0 { 32 } else { 2 }).collect();
            let m = map(TensorMapSpec::tiled(Dt::Float16, GBASE, dims, strides, boxd));
            let c = tensor(TmaCmdKind::TensorLoad, rank, &vec![0; rank], 0x400, 1, 1);
            assert_eq!(decode(&mut d, c, m.1, false), (2 + rank as u64, None, true), "rank {rank}");
        }
        let bulk = bulk_load(GBASE, 0x100, 64, 1, 1);
        assert_eq!(decode(&mut d, bulk, TmaDescImage::default(), false), (2, None, true));
        let mut bad = bulk_store(GBASE + 8, 0x100, 64);
        assert_eq!(decode(&mut d, bad, TmaDescImage::default(), false), (1, Some(TmaFaultKind::TmaMisaligned), false));
        assert_eq!(decode(&mut d, bad, TmaDescImage::default(), true), (4, Some(TmaFaultKind::TmaMisaligned), false));
        bad.kind = TmaCmdKind::BulkLoad;
        bad.cta_mask = 1.into();
        assert_eq!(decode(&mut d, bad, TmaDescImage::default(), true), (1, Some(TmaFaultKind::TmaMisaligned), false));
        assert!(d.idle.val());
    }
}
