//! TmaSlotIter (BA stage X): the slot iterator: walks the 16-byte slots of each row of the
//! job it copied from J into the stage register Y: one slot per cycle, or for a load a run of
//! up to 8 slots per cycle (below).
//!
//! # Ports
//!
//! - `j` / `j_valid` (in), `j_pop`: the job queue's head ([`crate::tma::fifo::TmaJobQueue`]);
//!   BA takes it when it holds no job or at its job's last slot (no bubble between jobs).
//! - `rq_head` / `rq_nonempty` (in), `row_pop`: the row queue's head row; BA loads it when its
//!   current row ends.
//! - `rob_vld` / `rob_n` (in), `rob_pop` / `rob_pop_n`: a load pops one 16-byte chunk per slot
//!   from the reorder buffer (none for slots outside the row's in-bounds chunks), `rob_pop_n`
//!   of them in a cycle (a run); `rob_n`: the head line's chunks left. The reorder buffer hands
//!   them to stage Y.
//! - `smem_rd_addr` / `smem_rd_cen` / `smem_rd_valid` / `smem_rd_ready`: a store (and a
//!   shared::cta -> shared::cluster copy) reads shared memory per slot: a line read (the
//!   128-byte line of `smem_rd_addr`, the 16-byte chunks of `smem_rd_cen`: one, or a store
//!   pair's two); its data comes the cycle after the accepting edge, when the slot is in Y.
//! - `wb_n`, `ob_n` (in): entries in the write buffer / output buffer; a slot moves only when
//!   its output buffer will have room, counting the entry Y may push this cycle.
//! - `y`: the slot in stage Y ([`TmaSlot`]: what stage Y realigns, fills and packs).
//! - `idle`: no job, row or slot.
//!
//! # Per slot
//!
//! The slot's byte mask of in-bounds bytes (from the job's `jl`/`jh` units and their masks), the
//! swizzled shared-memory address (PTX 5.5.7: bits 4..6 of the absolute shared::cta address XOR
//! bits 7..9, 1/2/3 bits for 32B/64B/128B, exactly `tensormap::swizzle_offset`), for a store the
//! global address of its chunk, for a load the job's bytes so far (complete_tx counts them, OOB
//! fill included). A prefetch pops and drops its chunks (`emit` clear). A shared::cta ->
//! shared::cluster beat is read like a store and written like a load, unswizzled, at the same
//! offset from `dsmem`.
//!
//! # Runs (the wide write path)
//!
//! A load slot whose chunk needs no realignment (the row starts 16-byte aligned in global
//! memory: `off` 0) and is whole (in bounds, not a partial first or last unit) fires with the
//! slots after it as one run: as many chunks as are left in the reorder buffer's head line
//! (`rob_n`), in the slot's 128-byte shared-memory line (dense address), and whole, at most 8.
//! Their swizzled addresses stay in that line (the swizzle only XORs chunk bits 4..6 with line
//! bits 7..9, PTX 5.5.7), so stage Y places them with one XOR permutation and OB writes them as
//! one line write: an aligned copy moves 128 B per cycle. Anything else (a partial or OOB
//! chunk, a misaligned row, stores, shared::cta -> shared::cluster) is one slot a cycle, as
//! before. A prefetch drops its chunks in runs as a load writes them (a prefetch queued before
//! a copy held BA one slot a cycle: calibration/tma_prefetch.ptx, prefetch + copy of 4 KiB 608
//! cycles against silicon's 482).
//!
//! # Store pairs (the wide read path)
//!
//! A store slot whose row is aligned (`off` 0), whose chunk is whole and starts a 32-byte
//! global sector, and whose next chunk is whole, in bounds and in the same shared-memory line
//! fires with it as a pair: one line read of both chunks (their swizzled places in the line),
//! one whole-sector write. The write side takes one sector a cycle (the issuer's one request a
//! cycle), so a pair a cycle is the most a store can use: the read side never bounds a store,
//! the global write side does (as on silicon: docs/FIDELITY.md, bulk_store.ptx). `pairs`
//! (the top's constructor constant, [`crate::tma::TmaEngine::beat_reads`]) turns them off for a port that reads
//! one 16-byte beat a cycle (the CTA top's `SmemPort`).

use super::types::*;
use rust_hdl::prelude::*;

/// BA's current row and slot.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaBaRow {
    /// a row is loaded
    pub vld: bool,
    /// it is OOB
    pub oob: bool,
    /// it is the job's last row
    pub last: bool,
    /// slot index in the row
    pub s: Bits<16>,
    /// dense shared-memory address of the next beat (before swizzle)
    pub dense: Bits<18>,
    /// stores: global address of the slot's chunk, low half
    pub ca_lo: Bits<32>,
    /// high half
    pub ca_hi: Bits<32>,
    /// loads: the job's bytes so far
    pub tx: Bits<32>,
}

/// BA stage X.
#[derive(LogicBlock, Default)]
pub struct TmaSlotIter {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// the job queue's head
    pub j: Signal<In, TmaSlotJob>,
    /// the job queue holds a job
    pub j_valid: Signal<In, bool>,
    /// BA takes the head job at this edge
    pub j_pop: Signal<Out, bool>,
    /// the row queue's head
    pub rq_head: Signal<In, TmaRowRec>,
    /// the row queue holds a row
    pub rq_nonempty: Signal<In, bool>,
    /// the head row is loaded at this edge
    pub row_pop: Signal<Out, bool>,
    /// the reorder buffer's head has arrived
    pub rob_vld: Signal<In, bool>,
    /// the reorder buffer's head line's chunks left
    pub rob_n: Signal<In, Bits<4>>,
    /// chunks are taken at this edge
    pub rob_pop: Signal<Out, bool>,
    /// how many
    pub rob_pop_n: Signal<Out, Bits<4>>,
    /// shared-memory read address (stores; the first chunk's, swizzled, 16-byte aligned)
    pub smem_rd_addr: Signal<Out, Bits<18>>,
    /// the chunks of that address's 128-byte line the read wants
    pub smem_rd_cen: Signal<Out, Bits<8>>,
    /// `smem_rd_addr` is valid
    pub smem_rd_valid: Signal<Out, bool>,
    /// the read is accepted this cycle
    pub smem_rd_ready: Signal<In, bool>,
    /// write-buffer entries
    pub wb_n: Signal<In, Bits<2>>,
    /// output-buffer entries
    pub ob_n: Signal<In, Bits<2>>,
    /// stores read a pair of chunks a cycle where they can (the port reads lines; the top's
    /// constructor constant)
    pub pairs: Signal<In, bool>,
    /// the slot in stage Y
    pub y_out: Signal<Out, TmaSlot>,
    /// no job, row or slot
    pub idle: Signal<Out, bool>,

    /// BA holds a job
    b_act: DFF<bool>,
    /// BA's job
    b: DFF<TmaSlotJob>,
    /// BA's current row and slot
    r: DFF<TmaBaRow>,
    /// the slot in stage Y
    y: DFF<TmaSlot>,
    /// the slot needs input (a ROB chunk / a shared-memory beat)
    x_need: Signal<Local, bool>,
    /// the slot produces an output
    x_emit: Signal<Local, bool>,
    /// output unit index
    x_u: Signal<Local, Bits<16>>,
    /// the slot is the row's last
    x_rend: Signal<Local, bool>,
    /// the slot may start a run (a whole, aligned load chunk)
    x_run: Signal<Local, bool>,
    /// a run's limit: whole in-bounds units left in the row
    x_lim_mask: Signal<Local, Bits<16>>,
    /// a run's limit: chunks left in the dense shared-memory line
    x_lim_line: Signal<Local, Bits<4>>,
    /// the slot is a store pair (two whole chunks of one global sector, one line read)
    x_pair: Signal<Local, bool>,
    /// the slot's next chunk index in the row (a pair's second)
    x_s1: Signal<Local, Bits<16>>,
    /// the read's first chunk in its shared-memory line (swizzled)
    x_rc: Signal<Local, Bits<3>>,
    /// a pair's second chunk in that line (swizzled)
    x_rc1: Signal<Local, Bits<3>>,
    /// the dense chunk index of the slot in its line
    x_dc: Signal<Local, Bits<3>>,
    /// the swizzle's XOR on chunk indices of the slot's line
    x_sx: Signal<Local, Bits<3>>,
    /// the global chunk address after the slot (low half)
    x_ca_next: Signal<Local, Bits<32>>,
    /// chunks the slot moves (1, or a run's)
    x_n: Signal<Local, Bits<4>>,
    /// the index of the slot's last chunk in the row
    x_s_last: Signal<Local, Bits<16>>,
    /// 16 * `x_n`: the bytes the slot moves
    x_bytes: Signal<Local, Bits<18>>,
    /// the slot's destination address (S2S: dense + `doff`; else swizzled)
    x_addr: Signal<Local, Bits<18>>,
    /// the slot's output buffer has room, counting the entry Y may push
    x_room: Signal<Local, bool>,
    /// the slot moves to Y
    x_fire: Signal<Local, bool>,
    /// the output unit has in-bounds bytes
    x_inr: Signal<Local, bool>,
    /// in-bounds byte mask
    x_mask: Signal<Local, Bits<16>>,
    /// the slot's dense shared-memory address (a Local copy of `r.dense` for bit selects)
    x_dense: Signal<Local, Bits<18>>,
    /// swizzled shared-memory address of the slot
    x_swa: Signal<Local, Bits<18>>,
    /// BA copies J this cycle
    take_job: Signal<Local, bool>,
    /// BA holds a job next cycle
    act_next: Signal<Local, bool>,
    /// BA loads the row-queue head
    row_load: Signal<Local, bool>,
}

impl Logic for TmaSlotIter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, b_act, b, r, y);
        self.y.d.next.valid = false;
        if self.b.q.val().d {
            self.x_u.next = self.r.q.val().s - 1;
        } else {
            self.x_u.next = self.r.q.val().s;
        }
        if self.b.q.val().store {
            self.x_need.next = !self.r.q.val().oob && (self.r.q.val().s < self.b.q.val().nb);
            self.x_emit.next = !self.r.q.val().oob
                && !self.b.q.val().empty
                && (self.r.q.val().s >= self.b.q.val().ca)
                && (self.r.q.val().s <= self.b.q.val().cb);
        } else {
            self.x_need.next = !self.r.q.val().oob
                && !self.b.q.val().empty
                && (self.r.q.val().s >= self.b.q.val().ca)
                && (self.r.q.val().s <= self.b.q.val().cb);
            self.x_emit.next =
                !self.b.q.val().zero && (!self.b.q.val().d || (self.r.q.val().s != 0));
        }
        self.x_inr.next = !self.r.q.val().oob
            && (self.x_u.val() >= self.b.q.val().jl)
            && (self.x_u.val() <= self.b.q.val().jh);
        self.x_dense.next = self.r.q.val().dense;
        // a run: an aligned load's whole chunks from the ROB's head line into one dense line
        // (a prefetch's are dropped a run at a time: it holds BA no longer than a load)
        self.x_run.next = !self.b.q.val().store
            && !self.b.q.val().d
            && (self.b.q.val().off == 0)
            && self.x_need.val()
            && self.x_inr.val()
            && ((self.r.q.val().s != self.b.q.val().jl) || (self.b.q.val().lomask == 0xFFFF))
            && ((self.r.q.val().s != self.b.q.val().jh) || (self.b.q.val().himask == 0xFFFF));
        // a store pair: two whole chunks of one global sector, in one shared-memory line
        self.x_s1.next = self.r.q.val().s + 1;
        self.x_pair.next = self.pairs.val()
            && self.b.q.val().store
            && !self.b.q.val().s2s
            && (self.b.q.val().off == 0)
            && !self.r.q.val().oob
            && self.x_need.val()
            && self.x_emit.val()
            && self.x_inr.val()
            && (self.x_s1.val() < self.b.q.val().nb)
            && (self.x_s1.val() <= self.b.q.val().cb)
            && (self.x_s1.val() <= self.b.q.val().jh)
            && ((self.r.q.val().s != self.b.q.val().jl) || (self.b.q.val().lomask == 0xFFFF))
            && ((self.x_s1.val() != self.b.q.val().jh) || (self.b.q.val().himask == 0xFFFF))
            && ((self.r.q.val().ca_lo & 16) == 0)
            && ((self.x_dense.val() & 0x70) != 0x70);
        self.x_lim_mask.next = self.b.q.val().jh - self.r.q.val().s;
        if self.b.q.val().himask == 0xFFFF {
            self.x_lim_mask.next = self.x_lim_mask.val() + 1;
        }
        self.x_lim_line.next = bits::<4>(8) - bit_cast::<4, 18>((self.x_dense.val() >> 4) & 7);
        self.x_n.next = 1.into();
        if self.x_run.val() {
            self.x_n.next = self.x_lim_line.val();
            if self.rob_n.val() < self.x_n.val() {
                self.x_n.next = self.rob_n.val();
            }
            if self.x_lim_mask.val() < bit_cast::<16, 4>(self.x_n.val()) {
                self.x_n.next = bit_cast::<4, 16>(self.x_lim_mask.val());
            }
        }
        if self.x_pair.val() {
            self.x_n.next = 2.into();
        }
        self.x_s_last.next = self.r.q.val().s + bit_cast::<16, 4>(self.x_n.val()) - 1;
        self.x_bytes.next = bit_cast::<18, 4>(self.x_n.val()) << 4;
        self.x_rend.next = (self.b.q.val().store && self.r.q.val().oob)
            || (self.x_s_last.val() == self.b.q.val().ns_m1);
        // the slot moves when its input is there and its output buffer has room (counting
        // the entry Y may push); an S2S beat goes to OB
        if self.b.q.val().store && !self.b.q.val().s2s {
            self.x_room.next = (self.wb_n.val() < 2)
                || ((self.wb_n.val() == 2)
                    && !(self.y.q.val().valid
                        && self.y.q.val().store
                        && !self.y.q.val().s2s));
        } else {
            self.x_room.next = (self.ob_n.val() < 2)
                || ((self.ob_n.val() == 2)
                    && !(self.y.q.val().valid
                        && (!self.y.q.val().store || self.y.q.val().s2s)));
        }
        if self.b.q.val().store {
            self.x_fire.next = self.r.q.val().vld
                && (!self.x_need.val() || self.smem_rd_ready.val())
                && self.x_room.val();
        } else {
            self.x_fire.next = self.r.q.val().vld
                && (!self.x_need.val() || self.rob_vld.val())
                && self.x_room.val();
        }
        self.x_mask.next = 0.into();
        if self.x_inr.val() {
            if (self.x_u.val() == self.b.q.val().jl) && (self.x_u.val() == self.b.q.val().jh) {
                self.x_mask.next = self.b.q.val().lomask & self.b.q.val().himask;
            } else if self.x_u.val() == self.b.q.val().jl {
                self.x_mask.next = self.b.q.val().lomask;
            } else if self.x_u.val() == self.b.q.val().jh {
                self.x_mask.next = self.b.q.val().himask;
            } else {
                self.x_mask.next = 0xFFFF.into();
            }
        }
        // PTX 5.5.7 / tensormap::swizzle_offset: chunk bits 4.. ^= line bits 7..
        self.x_swa.next = self
            .x_dense
            .val()
            .replace_bit(
                4,
                self.x_dense.val().get_bit(4)
                    ^ ((self.b.q.val().swz != 0) && self.x_dense.val().get_bit(7)),
            )
            .replace_bit(
                5,
                self.x_dense.val().get_bit(5)
                    ^ ((self.b.q.val().swz >= 2) && self.x_dense.val().get_bit(8)),
            )
            .replace_bit(
                6,
                self.x_dense.val().get_bit(6)
                    ^ ((self.b.q.val().swz == 3) && self.x_dense.val().get_bit(9)),
            );
        if self.b.q.val().s2s {
            // bulk: no swizzle; the destination is at the same offset from `dsmem`
            self.x_addr.next = self.x_dense.val() + self.b.q.val().doff;
        } else {
            self.x_addr.next = self.x_swa.val();
        }
        self.rob_pop.next = self.x_fire.val() && !self.b.q.val().store && self.x_need.val();
        self.rob_pop_n.next = self.x_n.val();
        self.smem_rd_valid.next = self.r.q.val().vld
            && self.b.q.val().store
            && self.x_need.val()
            && self.x_room.val();
        self.smem_rd_addr.next = self.x_swa.val();
        self.x_dc.next = bit_cast::<3, 18>(self.x_dense.val() >> 4);
        self.x_sx.next = bit_cast::<3, 18>((self.x_swa.val() ^ self.x_dense.val()) >> 4);
        self.x_rc.next = bit_cast::<3, 18>(self.x_swa.val() >> 4);
        self.x_rc1.next = (self.x_dc.val() + 1) ^ self.x_sx.val();
        if self.x_pair.val() {
            self.smem_rd_cen.next = (bits::<8>(1) << self.x_rc.val()) | (bits::<8>(1) << self.x_rc1.val());
        } else {
            self.smem_rd_cen.next = bits::<8>(1) << self.x_rc.val();
        }
        self.x_ca_next.next = self.r.q.val().ca_lo + bit_cast::<32, 18>(self.x_bytes.val());
        if self.x_fire.val() {
            if self.x_rend.val() {
                self.r.d.next.s = 0.into();
            } else {
                self.r.d.next.s = self.r.q.val().s + bit_cast::<16, 4>(self.x_n.val());
            }
            if self.b.q.val().store {
                if self.r.q.val().oob {
                    self.r.d.next.dense =
                        self.r.q.val().dense + bit_cast::<18, 24>(self.b.q.val().rowbytes);
                } else if self.x_need.val() {
                    self.r.d.next.dense = self.r.q.val().dense + self.x_bytes.val();
                }
                self.r.d.next.ca_lo = self.x_ca_next.val();
                if self.x_ca_next.val() < self.r.q.val().ca_lo {
                    self.r.d.next.ca_hi = self.r.q.val().ca_hi + 1;
                }
            } else if self.x_emit.val() {
                self.r.d.next.dense = self.r.q.val().dense + self.x_bytes.val();
                self.r.d.next.tx = self.r.q.val().tx + bit_cast::<32, 18>(self.x_bytes.val());
            }
            if self.b.q.val().s2s && self.x_emit.val() {
                self.r.d.next.tx = self.r.q.val().tx + 16;
            }
            self.y.d.next.valid = true;
            self.y.d.next.store = self.b.q.val().store;
            // a prefetch's chunks are popped and dropped
            self.y.d.next.emit = self.x_emit.val() && !self.b.q.val().pf;
            self.y.d.next.jlast = self.x_rend.val() && self.r.q.val().last;
            self.y.d.next.mask = self.x_mask.val();
            self.y.d.next.addr = self.x_addr.val();
            self.y.d.next.run = self.x_run.val() || self.x_pair.val();
            self.y.d.next.rc = self.x_rc.val();
            self.y.d.next.rc1 = self.x_rc1.val();
            self.y.d.next.n = self.x_n.val();
            if self.x_run.val() {
                // the run's chunks in its line, and the swizzle's permutation of them
                self.y.d.next.c0 = self.x_dc.val();
                self.y.d.next.x = self.x_sx.val();
            } else {
                self.y.d.next.c0 = bit_cast::<3, 18>(self.x_addr.val() >> 4);
                self.y.d.next.x = 0.into();
            }
            self.y.d.next.off = self.b.q.val().off;
            self.y.d.next.fill = self.b.q.val().fill;
            self.y.d.next.ctam = self.b.q.val().ctam;
            self.y.d.next.word = self.b.q.val().word;
            if (!self.b.q.val().store || self.b.q.val().s2s) && self.x_emit.val() {
                self.y.d.next.tx = self.r.q.val().tx + bit_cast::<32, 18>(self.x_bytes.val());
            } else {
                self.y.d.next.tx = self.r.q.val().tx;
            }
            self.y.d.next.grp = self.b.q.val().grp;
            self.y.d.next.ca_lo = self.r.q.val().ca_lo;
            self.y.d.next.ca_hi = self.r.q.val().ca_hi;
            self.y.d.next.ulast = self.r.q.val().s == self.b.q.val().cb;
            self.y.d.next.par = (self.r.q.val().ca_lo & 16) != 0;
            self.y.d.next.s2s = self.b.q.val().s2s;
            self.y.d.next.red_op = self.b.q.val().red_op;
            self.y.d.next.red_type = self.b.q.val().red_type;
        }
        // job and row hand-over (BA takes the next job at its job's last slot: no bubble)
        self.take_job.next = self.j_valid.val()
            && (!self.b_act.q.val()
                || (self.x_fire.val() && self.x_rend.val() && self.r.q.val().last));
        self.act_next.next = self.j_valid.val()
            || (self.b_act.q.val()
                && !(self.x_fire.val() && self.x_rend.val() && self.r.q.val().last));
        self.row_load.next = self.act_next.val()
            && (!self.r.q.val().vld || (self.x_fire.val() && self.x_rend.val()))
            && self.rq_nonempty.val();
        self.b_act.d.next = self.act_next.val();
        if self.take_job.val() {
            self.b.d.next = self.j.val();
            self.r.d.next.dense = self.j.val().base;
            self.r.d.next.tx = 0.into();
        }
        if self.x_fire.val() && self.x_rend.val() {
            self.r.d.next.vld = false;
        }
        if self.row_load.val() {
            self.r.d.next.vld = true;
            self.r.d.next.oob = self.rq_head.val().oob;
            self.r.d.next.last = self.rq_head.val().last;
            self.r.d.next.ca_lo = self.rq_head.val().r_lo;
            self.r.d.next.ca_hi = self.rq_head.val().r_hi;
        }
        self.row_pop.next = self.row_load.val();
        self.y_out.next = self.y.q.val();
        self.j_pop.next = self.take_job.val();
        self.idle.next = !self.r.q.val().vld && !self.b_act.q.val() && !self.y.q.val().valid;

    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tma::tb::*;
    use hopsync_firmware::tensormap::{swizzle_offset, TensorMapDataType as Dt, TensorMapSpec, TensorMapSwizzle};

    /// A store job's shared-memory reads, slot by slot, against the golden swizzle
    /// (`tensormap::swizzle_offset`, PTX 5.5.7): rows of `nb` beats at `base`, every mode, one
    /// row OOB (no read); returns the addresses read.
    fn store_reads(swz: u64, base: u64, nb: u64, rows: u64, oob_row: u64) -> Vec<u64> {
        let mut x = block(TmaSlotIter::default());
        x.j.next = TmaSlotJob {
            store: true,
            swz: swz.into(),
            base: base.into(),
            rowbytes: (16 * nb).into(),
            nb: nb.into(),
            ns_m1: (nb - 1).into(),
            ca: 0.into(),
            cb: (nb - 1).into(),
            jl: 0.into(),
            jh: (nb - 1).into(),
            lomask: 0xFFFF.into(),
            himask: 0xFFFF.into(),
            ..Default::default()
        };
        x.j_valid.next = true;
        x.smem_rd_ready.next = true;
        let mut left = rows;
        let mut reads = vec![];
        for _ in 0..rows * (nb + 2) + 4 {
            x.rq_nonempty.next = left > 0;
            x.rq_head.next = TmaRowRec { oob: left == rows - oob_row, last: left == 1, ..Default::default() };
            x.low();
            if x.row_pop.val() {
                left -= 1;
            }
            if x.smem_rd_valid.val() {
                reads.push(x.smem_rd_addr.val().to_u64());
            }
            x.low();
            x.edge();
            x.j_valid.next = false;
        }
        reads
    }

    /// Every swizzle mode at bases that are and are not aligned to the swizzle pattern: the
    /// beat of dense offset o is read at `swizzle_offset(o)`; an OOB row reads nothing and
    /// still advances the dense address by a row.
    #[test]
    fn store_reads_are_swizzled_like_the_golden_model() {
        for (swz, sw) in [(0, TensorMapSwizzle::None), (1, TensorMapSwizzle::B32), (2, TensorMapSwizzle::B64), (3, TensorMapSwizzle::B128)] {
            for base in [0x4000u64, 0x4000 + 128 * 3, 0x4000 + 16 * 5] {
                let (nb, rows, oob_row) = (4, 20, 7);
                let reads = store_reads(swz, base, nb, rows, oob_row);
                let want: Vec<u64> = (0..rows)
                    .filter(|&r| r != oob_row)
                    .flat_map(|r| (0..nb).map(move |k| base + 16 * (nb * r + k)))
                    .map(|o| swizzle_offset(sw, o).unwrap())
                    .collect();
                assert_eq!(reads, want, "swizzle {swz} base {base:#x}");
            }
        }
    }

    /// Each swizzle mode: 16-byte chunk c of 128-byte line r lands at chunk c ^ (r mod 2/4/8)
    /// of its line (PTX 5.5.7 tables), checked on the chunks the engine wrote, with a base
    /// that is 1024-byte aligned and one that is not (the swizzle uses the absolute address).
    #[test]
    fn each_swizzle() {
        for (sw, span, bits) in [
            (TensorMapSwizzle::B32, 32u64, 1u64),
            (TensorMapSwizzle::B64, 64, 2),
            (TensorMapSwizzle::B128, 128, 3),
        ] {
            for base in [0x4000u32, 0x4000 + 128 * 3] {
                let mut tb = Tb::new(FAST, 3);
                tb.wr_log = Some(vec![]);
                let mut spec = TensorMapSpec::tiled(
                    Dt::Float16,
                    GBASE,
                    vec![span / 2, 32],
                    vec![256],
                    vec![(span / 2) as u32, 16],
                );
                spec.swizzle = sw;
                let m = map(spec);
                load_t(&mut tb, &m, &[0, 2], base, 1 << 2, 1);
                tb.drain();
                let log = tb.wr_log.take().unwrap();
                assert_eq!(log.len() as u64, 16 * span / 16);
                for r in 0..16u64 {
                    for c in 0..span / 16 {
                        let g = GBASE + (2 + r) * 256 + 16 * c;
                        let want: Vec<u8> = (0..16).map(|i| gbyte(g + i)).collect();
                        let dense = base as u64 + r * span + 16 * c;
                        let line = dense / 128;
                        let chunk = (dense / 16) % 8;
                        let at = line * 128 + 16 * (chunk ^ (line % (1 << bits)));
                        let hit = log
                            .iter()
                            .find(|w| w.2[..] == want[..])
                            .expect("chunk written");
                        assert_eq!(hit.1, at, "{sw:?} base {base:#x}: row {r} chunk {c}");
                    }
                }
                store_t(&mut tb, &m, &[0, 2], base);
                tb.drain();
            }
        }
    }

    /// Prefetches (PTX 9.7.9.25.4.3, 9.7.9.25.5.4) send exactly the sector reads of the
    /// corresponding load, write nothing and complete nothing; loads around them are unchanged.
    #[test]
    fn prefetches_read_and_drop() {
        let mut tb = Tb::new(RANDOM, 9);
        let m = map(TensorMapSpec::tiled(Dt::Float32, GBASE, vec![64, 32], vec![256], vec![16, 8]));
        prefetch_b(&mut tb, GBASE + 0x1000, 1024);
        load_b(&mut tb, GBASE + 0x40, 0x400, 64, 1 << 2, 5);
        prefetch_t(&mut tb, &m, &[-4, 30]);
        prefetch_b(&mut tb, GBASE + 0x2010, 16);
        prefetch_b(&mut tb, GBASE + 0x3000, 0);
        load_t(&mut tb, &m, &[8, 2], 0x800, 1 << 2, 6);
        tb.drain();
        assert_eq!(tb.st.cpls, 2, "only the loads complete");
        assert_eq!(tb.st.smem_bytes, 64 + 16 * 8 * 4, "only the loads write");
        // 1024 B: 32 sectors; 64 B: 2; the prefetched box: rows 30, 31 in bounds, 48 bytes at
        // c0 = -4 from the row start -> 2 sectors each; 16 B: 1; the loaded box: 8 rows x 2
        assert_eq!(tb.st.reads, 32 + 2 + 4 + 1 + 16);
    }
}
