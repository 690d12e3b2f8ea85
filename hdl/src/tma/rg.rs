//! TmaRowIter (RG): the row iterator: walks the rows of J's box in PTX order, one row per cycle.
//!
//! # Ports
//!
//! - `j`, `start`, `j_free` (in): the job register, its first cycle (the decoder's Fin), and
//!   its release ([`crate::tma::decoder::TmaDecoder`]); `done`: this job's rows are all out
//!   (until J is freed: `j_free`); `busy`: iterating.
//! - `push` / `rec`: a row for the row queue (every row, OOB ones included: the slot iterator
//!   fills or skips them); `rq_full` (in): the row queue has no room.
//! - `nr_load` / `nr`: a load row with bytes to read, for the issuer's next-row register;
//!   `nr_ready` (in): that register can take it this cycle.
//!
//! # Behaviour
//!
//! Dimension 0 is a row (`boxDim[0] * elementSize` bytes, contiguous in global memory and in the
//! dense shared-memory box, PTX 5.5.3); RG keeps the box indices `t1..t4` of dimensions 1..4 and
//! the nested-loop base addresses `A1..A4` (A1: the current row's 16-byte aligned address; one
//! 64-bit add per row: `A_i + step_i`, where a carry out of dimension i reloads the bases below).
//! A row whose outer index is outside its dimension's in-bounds window `[lo_i, hi_i)` is OOB (so
//! is every row of a job with no in-bounds byte per row); an OOB row causes no read.
//!
//! im2col (PTX 5.5.4; `j.im2col`): a row is one pixel, `pixelsPerColumn` rows. Spatial
//! dimension `i` (1..rank-2: W, H, D) starts at `c_i` and steps by `elementStrides[i]`; a step
//! past `globalDim[i] - 1 + pixelBoxUpperCorner[i-1]` wraps it to `pixelBoxLowerCorner[i-1]` and
//! carries into the next dimension; N (rank-1) steps by 1 and never wraps. RG keeps per
//! dimension a step count `k` from its base (the coordinate, or the lower corner once it
//! wrapped, `sel`) and compares it with the windows the decoder computed (`kcl..kwl`); the nested
//! bases `A2..A4` start at the dimensions below at their lower corners (`start - mb_i`), so a
//! wrap is the tiled carry. The walk is exactly `TensorMap::im2col_box_elements`.
//!
//! A row needing reads waits for the next-row register (freed by an issue this cycle).

use super::types::*;
use rust_hdl::prelude::*;

/// The row iterator's state (dimensions 1..4).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaRg {
    /// box index, dimension 1
    pub t1: Bits<9>,
    /// box index, dimension 2
    pub t2: Bits<9>,
    /// box index, dimension 3
    pub t3: Bits<9>,
    /// box index, dimension 4
    pub t4: Bits<9>,
    /// nested-loop base address A1 (the current row), low half
    pub a1_lo: Bits<32>,
    /// high half
    pub a1_hi: Bits<32>,
    /// A2, low half
    pub a2_lo: Bits<32>,
    /// high half
    pub a2_hi: Bits<32>,
    /// A3, low half
    pub a3_lo: Bits<32>,
    /// high half
    pub a3_hi: Bits<32>,
    /// A4, low half
    pub a4_lo: Bits<32>,
    /// high half
    pub a4_hi: Bits<32>,
    /// im2col: pixel steps of dimension 1 from its base (the coordinate, or the lower corner
    /// once `sel1`)
    pub k1: Bits<14>,
    /// dimension 2
    pub k2: Bits<14>,
    /// dimension 3
    pub k3: Bits<14>,
    /// dimension 4
    pub k4: Bits<14>,
    /// im2col: dimension 1 has wrapped (its base is the lower corner)
    pub sel1: bool,
    /// dimension 2 has wrapped
    pub sel2: bool,
    /// dimension 3 has wrapped
    pub sel3: bool,
    /// im2col: pixel (row) index
    pub pix: Bits<10>,
}

/// The row iterator.
#[derive(LogicBlock, Default)]
pub struct TmaRowIter {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// the job register
    pub j: Signal<In, TmaRowJob>,
    /// J is complete: start its rows
    pub start: Signal<In, bool>,
    /// J is released
    pub j_free: Signal<In, bool>,
    /// the row queue has no room
    pub rq_full: Signal<In, bool>,
    /// the issuer's next-row register can take a row
    pub nr_ready: Signal<In, bool>,
    /// a row goes to the row queue
    pub push: Signal<Out, bool>,
    /// that row
    pub rec: Signal<Out, TmaRowRec>,
    /// a row goes to the issuer
    pub nr_load: Signal<Out, bool>,
    /// that row's reads
    pub nr: Signal<Out, TmaIss>,
    /// iterating
    pub busy: Signal<Out, bool>,
    /// J's rows are all out
    pub done: Signal<Out, bool>,

    /// RG iterates J
    rg_busy: DFF<bool>,
    /// RG has finished J's rows
    rg_done: DFF<bool>,
    /// the row iterator
    rg: DFF<TmaRg>,
    /// dimension 1: the next index wraps
    w1: Signal<Local, bool>,
    /// dimension 2: the next index wraps
    w2: Signal<Local, bool>,
    /// dimension 3: the next index wraps
    w3: Signal<Local, bool>,
    /// dimension 4: the next index wraps
    w4: Signal<Local, bool>,
    /// A1 + step1, low half
    sm1_lo: Signal<Local, Bits<32>>,
    /// A2 + step2, low half
    sm2_lo: Signal<Local, Bits<32>>,
    /// A3 + step3, low half
    sm3_lo: Signal<Local, Bits<32>>,
    /// A4 + step4, low half
    sm4_lo: Signal<Local, Bits<32>>,
    /// A1 + step1, high half
    sm1_hi: Signal<Local, Bits<32>>,
    /// A2 + step2, high half
    sm2_hi: Signal<Local, Bits<32>>,
    /// A3 + step3, high half
    sm3_hi: Signal<Local, Bits<32>>,
    /// A4 + step4, high half
    sm4_hi: Signal<Local, Bits<32>>,
    /// the current row is OOB
    oob: Signal<Local, bool>,
    /// A1 + offA, low half
    n_lo: Signal<Local, Bits<32>>,
    /// im2col: the start address & ~15 (at `start`)
    i_s_lo: Signal<Local, Bits<32>>,
    /// im2col: A2 low half (at `start`)
    i_a2_lo: Signal<Local, Bits<32>>,
    /// A3 low half
    i_a3_lo: Signal<Local, Bits<32>>,
    /// A4 low half
    i_a4_lo: Signal<Local, Bits<32>>,
    /// dimension 1 is a spatial dimension of the im2col job
    i_s1: Signal<Local, bool>,
    /// dimension 2 is spatial
    i_s2: Signal<Local, bool>,
    /// dimension 3 is spatial
    i_s3: Signal<Local, bool>,
    /// k1 + e1
    i_k1: Signal<Local, Bits<14>>,
    /// k2 + e2
    i_k2: Signal<Local, Bits<14>>,
    /// k3 + e3
    i_k3: Signal<Local, Bits<14>>,
    /// k4 + e4
    i_k4: Signal<Local, Bits<14>>,
    /// the im2col row's pixel is out of bounds in some dimension
    i_oob: Signal<Local, bool>,
    /// the im2col job's last row
    i_last: Signal<Local, bool>,
}

impl Logic for TmaRowIter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, rg_busy, rg_done, rg);
        // ---- start: the 16-byte aligned start row; im2col: the nested bases A2..A4 have the
        // spatial dimensions below at their lower corners
        self.i_s_lo.next = self.j.val().a_lo & 0xFFFF_FFF0_u64;
        self.i_a2_lo.next = self.i_s_lo.val() - self.j.val().mb2_lo;
        self.i_a3_lo.next = self.i_s_lo.val() - self.j.val().mb3_lo;
        self.i_a4_lo.next = self.i_s_lo.val() - self.j.val().mb4_lo;
        if self.start.val() {
            self.rg_busy.d.next = true;
            self.rg.d.next.t1 = 0.into();
            self.rg.d.next.t2 = 0.into();
            self.rg.d.next.t3 = 0.into();
            self.rg.d.next.t4 = 0.into();
            self.rg.d.next.a1_lo = self.j.val().a_lo & 0xFFFF_FFF0_u64;
            self.rg.d.next.a2_lo = self.j.val().a_lo & 0xFFFF_FFF0_u64;
            self.rg.d.next.a3_lo = self.j.val().a_lo & 0xFFFF_FFF0_u64;
            self.rg.d.next.a4_lo = self.j.val().a_lo & 0xFFFF_FFF0_u64;
            self.rg.d.next.a1_hi = self.j.val().a_hi;
            self.rg.d.next.a2_hi = self.j.val().a_hi;
            self.rg.d.next.a3_hi = self.j.val().a_hi;
            self.rg.d.next.a4_hi = self.j.val().a_hi;
            self.rg.d.next.k1 = 0.into();
            self.rg.d.next.k2 = 0.into();
            self.rg.d.next.k3 = 0.into();
            self.rg.d.next.k4 = 0.into();
            self.rg.d.next.sel1 = false;
            self.rg.d.next.sel2 = false;
            self.rg.d.next.sel3 = false;
            self.rg.d.next.pix = 0.into();
            if self.j.val().im2col {
                self.rg.d.next.a2_lo = self.i_a2_lo.val();
                self.rg.d.next.a3_lo = self.i_a3_lo.val();
                self.rg.d.next.a4_lo = self.i_a4_lo.val();
                self.rg.d.next.a2_hi = self.j.val().a_hi - self.j.val().mb2_hi;
                if self.i_s_lo.val() < self.j.val().mb2_lo {
                    self.rg.d.next.a2_hi = self.j.val().a_hi - self.j.val().mb2_hi - 1;
                }
                self.rg.d.next.a3_hi = self.j.val().a_hi - self.j.val().mb3_hi;
                if self.i_s_lo.val() < self.j.val().mb3_lo {
                    self.rg.d.next.a3_hi = self.j.val().a_hi - self.j.val().mb3_hi - 1;
                }
                self.rg.d.next.a4_hi = self.j.val().a_hi - self.j.val().mb4_hi;
                if self.i_s_lo.val() < self.j.val().mb4_lo {
                    self.rg.d.next.a4_hi = self.j.val().a_hi - self.j.val().mb4_hi - 1;
                }
            }
        }
        self.w1.next = (self.rg.q.val().t1 + self.j.val().e1) >= self.j.val().box1;
        self.w2.next = (self.rg.q.val().t2 + self.j.val().e2) >= self.j.val().box2;
        self.w3.next = (self.rg.q.val().t3 + self.j.val().e3) >= self.j.val().box3;
        self.w4.next = (self.rg.q.val().t4 + self.j.val().e4) >= self.j.val().box4;
        // im2col (PTX 5.5.4): a spatial dimension wraps when its next step leaves the pixel
        // bounding box; N (rank-1) never wraps; a pixel is OOB when a dimension's step count is
        // outside its window; the job ends after pixelsPerColumn rows
        self.i_s1.next = self.j.val().rank > 2;
        self.i_s2.next = self.j.val().rank > 3;
        self.i_s3.next = self.j.val().rank > 4;
        self.i_k1.next = self.rg.q.val().k1 + bit_cast::<14, 9>(self.j.val().e1);
        self.i_k2.next = self.rg.q.val().k2 + bit_cast::<14, 9>(self.j.val().e2);
        self.i_k3.next = self.rg.q.val().k3 + bit_cast::<14, 9>(self.j.val().e3);
        self.i_k4.next = self.rg.q.val().k4 + bit_cast::<14, 9>(self.j.val().e4);
        self.i_oob.next = false;
        if self.rg.q.val().sel1 {
            if (bit_cast::<15, 14>(self.rg.q.val().k1) < self.j.val().kll1)
                || (bit_cast::<15, 14>(self.rg.q.val().k1) >= self.j.val().klh1)
            {
                self.i_oob.next = true;
            }
        } else if (bit_cast::<15, 14>(self.rg.q.val().k1) < self.j.val().kcl1)
            || (bit_cast::<15, 14>(self.rg.q.val().k1) >= self.j.val().kch1)
        {
            self.i_oob.next = true;
        }
        if self.rg.q.val().sel2 {
            if (bit_cast::<15, 14>(self.rg.q.val().k2) < self.j.val().kll2)
                || (bit_cast::<15, 14>(self.rg.q.val().k2) >= self.j.val().klh2)
            {
                self.i_oob.next = true;
            }
        } else if (bit_cast::<15, 14>(self.rg.q.val().k2) < self.j.val().kcl2)
            || (bit_cast::<15, 14>(self.rg.q.val().k2) >= self.j.val().kch2)
        {
            self.i_oob.next = true;
        }
        if self.rg.q.val().sel3 {
            if (bit_cast::<15, 14>(self.rg.q.val().k3) < self.j.val().kll3)
                || (bit_cast::<15, 14>(self.rg.q.val().k3) >= self.j.val().klh3)
            {
                self.i_oob.next = true;
            }
        } else if (bit_cast::<15, 14>(self.rg.q.val().k3) < self.j.val().kcl3)
            || (bit_cast::<15, 14>(self.rg.q.val().k3) >= self.j.val().kch3)
        {
            self.i_oob.next = true;
        }
        if (bit_cast::<15, 14>(self.rg.q.val().k4) < self.j.val().kcl4)
            || (bit_cast::<15, 14>(self.rg.q.val().k4) >= self.j.val().kch4)
        {
            self.i_oob.next = true;
        }
        self.i_last.next = self.rg.q.val().pix == self.j.val().pix_m1;
        if self.j.val().im2col {
            self.w1.next = false;
            self.w2.next = false;
            self.w3.next = false;
            self.w4.next = false;
            if self.i_s1.val() {
                if self.rg.q.val().sel1 {
                    self.w1.next = bit_cast::<15, 14>(self.i_k1.val()) >= self.j.val().kwl1;
                } else {
                    self.w1.next = bit_cast::<15, 14>(self.i_k1.val()) >= self.j.val().kwc1;
                }
            }
            if self.i_s2.val() {
                if self.rg.q.val().sel2 {
                    self.w2.next = bit_cast::<15, 14>(self.i_k2.val()) >= self.j.val().kwl2;
                } else {
                    self.w2.next = bit_cast::<15, 14>(self.i_k2.val()) >= self.j.val().kwc2;
                }
            }
            if self.i_s3.val() {
                if self.rg.q.val().sel3 {
                    self.w3.next = bit_cast::<15, 14>(self.i_k3.val()) >= self.j.val().kwl3;
                } else {
                    self.w3.next = bit_cast::<15, 14>(self.i_k3.val()) >= self.j.val().kwc3;
                }
            }
        }
        self.sm1_lo.next = self.rg.q.val().a1_lo + self.j.val().st1_lo;
        self.sm2_lo.next = self.rg.q.val().a2_lo + self.j.val().st2_lo;
        self.sm3_lo.next = self.rg.q.val().a3_lo + self.j.val().st3_lo;
        self.sm4_lo.next = self.rg.q.val().a4_lo + self.j.val().st4_lo;
        self.sm1_hi.next = self.rg.q.val().a1_hi + self.j.val().st1_hi;
        if self.sm1_lo.val() < self.rg.q.val().a1_lo {
            self.sm1_hi.next = self.rg.q.val().a1_hi + self.j.val().st1_hi + 1;
        }
        self.sm2_hi.next = self.rg.q.val().a2_hi + self.j.val().st2_hi;
        if self.sm2_lo.val() < self.rg.q.val().a2_lo {
            self.sm2_hi.next = self.rg.q.val().a2_hi + self.j.val().st2_hi + 1;
        }
        self.sm3_hi.next = self.rg.q.val().a3_hi + self.j.val().st3_hi;
        if self.sm3_lo.val() < self.rg.q.val().a3_lo {
            self.sm3_hi.next = self.rg.q.val().a3_hi + self.j.val().st3_hi + 1;
        }
        self.sm4_hi.next = self.rg.q.val().a4_hi + self.j.val().st4_hi;
        if self.sm4_lo.val() < self.rg.q.val().a4_lo {
            self.sm4_hi.next = self.rg.q.val().a4_hi + self.j.val().st4_hi + 1;
        }
        self.oob.next = self.j.val().empty
            || (self.rg.q.val().t1 < self.j.val().lo1)
            || (self.rg.q.val().t1 >= self.j.val().hi1)
            || (self.rg.q.val().t2 < self.j.val().lo2)
            || (self.rg.q.val().t2 >= self.j.val().hi2)
            || (self.rg.q.val().t3 < self.j.val().lo3)
            || (self.rg.q.val().t3 >= self.j.val().hi3)
            || (self.rg.q.val().t4 < self.j.val().lo4)
            || (self.rg.q.val().t4 >= self.j.val().hi4);
        if self.j.val().im2col {
            self.oob.next = self.j.val().empty || self.i_oob.val();
        }
        // a row needing reads waits for the next-row register (freed by an issue this cycle)
        self.push.next = self.rg_busy.q.val()
            && !self.rq_full.val()
            && (self.oob.val() || self.j.val().store || self.nr_ready.val());
        self.n_lo.next = self.rg.q.val().a1_lo + bit_cast::<32, 24>(self.j.val().offa);
        self.rec.next.oob = self.oob.val();
        self.rec.next.r_lo = self.rg.q.val().a1_lo;
        self.rec.next.r_hi = self.rg.q.val().a1_hi;
        self.rec.next.last = self.w1.val() && self.w2.val() && self.w3.val() && self.w4.val();
        if self.j.val().im2col {
            self.rec.next.last = self.i_last.val();
        }
        // the row's reads: sectors from the first in-bounds chunk to the last
        self.nr_load.next = self.push.val() && !self.oob.val() && !self.j.val().store;
        self.nr.next.valid = true;
        self.nr.next.a_lo = self.n_lo.val() & 0xFFFF_FFF0_u64;
        if self.n_lo.val() < self.rg.q.val().a1_lo {
            self.nr.next.a_hi = self.rg.q.val().a1_hi + 1;
        } else {
            self.nr.next.a_hi = self.rg.q.val().a1_hi;
        }
        self.nr.next.p = self.j.val().ca;
        self.nr.next.cb = self.j.val().cb;
        if self.push.val() {
            self.rg.d.next.pix = self.rg.q.val().pix + 1;
            if self.j.val().im2col && self.i_last.val() {
                self.rg_busy.d.next = false;
                self.rg_done.d.next = true;
            } else if !self.w1.val() {
                self.rg.d.next.k1 = self.i_k1.val();
                self.rg.d.next.t1 = self.rg.q.val().t1 + self.j.val().e1;
                self.rg.d.next.a1_lo = self.sm1_lo.val();
                self.rg.d.next.a1_hi = self.sm1_hi.val();
            } else if !self.w2.val() {
                self.rg.d.next.k1 = 0.into();
                self.rg.d.next.sel1 = true;
                self.rg.d.next.k2 = self.i_k2.val();
                self.rg.d.next.t1 = 0.into();
                self.rg.d.next.t2 = self.rg.q.val().t2 + self.j.val().e2;
                self.rg.d.next.a1_lo = self.sm2_lo.val();
                self.rg.d.next.a1_hi = self.sm2_hi.val();
                self.rg.d.next.a2_lo = self.sm2_lo.val();
                self.rg.d.next.a2_hi = self.sm2_hi.val();
            } else if !self.w3.val() {
                self.rg.d.next.t1 = 0.into();
                self.rg.d.next.k1 = 0.into();
                self.rg.d.next.k2 = 0.into();
                self.rg.d.next.sel1 = true;
                self.rg.d.next.sel2 = true;
                self.rg.d.next.k3 = self.i_k3.val();
                self.rg.d.next.t2 = 0.into();
                self.rg.d.next.t3 = self.rg.q.val().t3 + self.j.val().e3;
                self.rg.d.next.a1_lo = self.sm3_lo.val();
                self.rg.d.next.a1_hi = self.sm3_hi.val();
                self.rg.d.next.a2_lo = self.sm3_lo.val();
                self.rg.d.next.a2_hi = self.sm3_hi.val();
                self.rg.d.next.a3_lo = self.sm3_lo.val();
                self.rg.d.next.a3_hi = self.sm3_hi.val();
            } else if !self.w4.val() {
                self.rg.d.next.t1 = 0.into();
                self.rg.d.next.t2 = 0.into();
                self.rg.d.next.k1 = 0.into();
                self.rg.d.next.k2 = 0.into();
                self.rg.d.next.k3 = 0.into();
                self.rg.d.next.sel1 = true;
                self.rg.d.next.sel2 = true;
                self.rg.d.next.sel3 = true;
                self.rg.d.next.k4 = self.i_k4.val();
                self.rg.d.next.t3 = 0.into();
                self.rg.d.next.t4 = self.rg.q.val().t4 + self.j.val().e4;
                self.rg.d.next.a1_lo = self.sm4_lo.val();
                self.rg.d.next.a1_hi = self.sm4_hi.val();
                self.rg.d.next.a2_lo = self.sm4_lo.val();
                self.rg.d.next.a2_hi = self.sm4_hi.val();
                self.rg.d.next.a3_lo = self.sm4_lo.val();
                self.rg.d.next.a3_hi = self.sm4_hi.val();
                self.rg.d.next.a4_lo = self.sm4_lo.val();
                self.rg.d.next.a4_hi = self.sm4_hi.val();
            } else {
                self.rg_busy.d.next = false;
                self.rg_done.d.next = true;
            }
        }
        if self.j_free.val() {
            self.rg_done.d.next = false;
        }
        self.busy.next = self.rg_busy.q.val();
        self.done.next = self.rg_done.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::XorShift;
    use crate::tma::decoder::TmaDecoder;
    use crate::tma::tb::*;
    use hopsync_firmware::tensormap::{TensorMap, TensorMapDataType as Dt, TensorMapMode, TensorMapOobFill, TensorMapSpec};

    /// The rows RG produces for one tensor load (the decoder decodes it first): per row
    /// (16-byte aligned address, OOB, last), and the first sector of each row it hands to the
    /// issuer. The row queue never fills; the issuer's register is free every other cycle.
    fn walk(m: &(TensorMap, TmaDescImage), coords: &[i64], offs: &[i64]) -> (Vec<(u64, bool, bool)>, Vec<u64>) {
        let mut d = block(TmaDecoder::default());
        let mut rg = block(TmaRowIter::default());
        d.head.next = tensor_m(TmaCmdKind::TensorLoad, &m.0, coords, offs, 0, 1, 1);
        d.head_desc.next = m.1;
        d.head_valid.next = true;
        let (mut rows, mut reads) = (vec![], vec![]);
        for n in 0..10_000 {
            d.low();
            let (start, j) = (d.start.val(), d.rj.val());
            assert!(!(d.fault.val().valid), "refused");
            rg.j.next = j;
            rg.start.next = start;
            rg.j_free.next = false;
            rg.rq_full.next = false;
            rg.nr_ready.next = n % 2 == 0;
            rg.low();
            if rg.push.val() {
                let r = rg.rec.val();
                rows.push((r.r_lo.to_u64() | r.r_hi.to_u64() << 32, r.oob, r.last));
                assert_eq!(rg.nr_load.val(), !r.oob, "a row with bytes to read goes to the issuer");
                if rg.nr_load.val() {
                    let nr = rg.nr.val();
                    reads.push((nr.a_lo.to_u64() | nr.a_hi.to_u64() << 32) & !31);
                }
            }
            let done = rg.done.val();
            if start {
                d.head_valid.next = false;
            }
            d.edge();
            rg.edge();
            if done {
                return (rows, reads);
            }
        }
        panic!("RG never finished")
    }

    /// RG against the golden box walk (`TensorMap::box_elements`, PTX 5.5.3 / 5.5.4): random
    /// tiled and im2col maps and coordinates at every edge: one row per box row in order, a row
    /// is OOB exactly when none of its elements is in bounds, an in-bounds row's address is its
    /// elements' (16-byte aligned), its first read is the sector of its first in-bounds byte,
    /// and only the last row says so.
    #[test]
    fn rows_follow_the_golden_box_walk() {
        let mut rng = XorShift(0x0A11_0001);
        let (mut oob, mut inb) = (0, 0);
        for n in 0..400 {
            let (m, c, o) = if n % 3 == 0 {
                let m = random_im2col_map(&mut rng);
                let (c, o) = random_im2col_coords(&mut rng, &m.0);
                (m, c, o)
            } else {
                let m = random_map(&mut rng);
                let c = random_coords(&mut rng, &m.0);
                (m, c, vec![])
            };
            let els = m.0.box_elements(&c, &o);
            let es = m.0.element_size() as u64;
            let n0 = if m.0.mode() == TensorMapMode::Im2col { m.0.spec().channels_per_pixel } else { m.0.spec().box_dim[0] } as usize;
            let (rows, reads) = walk(&m, &c, &o);
            let golden: Vec<&[(u64, Option<u64>)]> = els.chunks(n0).collect();
            assert_eq!(rows.len(), golden.len(), "{:?} at {c:?}", m.0.spec());
            let mut want_reads = vec![];
            for (i, (row, g)) in rows.iter().zip(&golden).enumerate() {
                let first = g.iter().enumerate().find_map(|(k, e)| e.1.map(|a| (k as u64, a)));
                assert_eq!(row.2, i + 1 == rows.len(), "row {i}: last");
                match first {
                    None => {
                        assert!(row.1, "row {i} has no in-bounds element: OOB");
                        oob += 1;
                    }
                    Some((k, a)) => {
                        assert!(!row.1, "row {i} has in-bounds elements");
                        assert_eq!(row.0, (a - k * es) & !15, "row {i}: address");
                        want_reads.push(a & !31);
                        inb += 1;
                    }
                }
            }
            assert_eq!(reads, want_reads, "{:?} at {c:?}", m.0.spec());
        }
        assert!(oob > 500 && inb > 500, "{oob} {inb}");
    }

    /// OOB at every edge of a 3-D box (before / after in each dimension, corners, fully
    /// outside), zero and NaN fill of every float width; OOB elements cause no global request
    /// (the reference's sector list is exact) and stores skip them.
    #[test]
    fn oob_at_every_edge() {
        let edges: [[i64; 3]; 12] = [
            [-5, 1, 1],
            [16, 1, 1],
            [2, -2, 1],
            [2, 4, 1],
            [2, 1, -1],
            [2, 1, 3],
            [-3, -3, -2],
            [17, 5, 4],
            [30, 1, 1],
            [-8, 0, 0],
            [20, 0, 0],
            [0, 0, 0],
        ];
        for (dt, fill) in [
            (Dt::Float32, false),
            (Dt::Float32, true),
            (Dt::Float16, true),
            (Dt::Float64, true),
            (Dt::Uint8, false),
        ] {
            let es = dt.element_size().unwrap() as u64;
            let box0 = (32 / es) as u32;
            let s0 = (20 * es).div_ceil(16) * 16 + 16;
            let mut spec = TensorMapSpec::tiled(
                dt,
                GBASE + 0x100,
                vec![20, 6, 5],
                vec![s0, s0 * 6],
                vec![box0, 4, 3],
            );
            if fill {
                spec.oob_fill = TensorMapOobFill::NanRequestZeroFma;
            }
            let m = map(spec);
            let mut tb = Tb::new(RANDOM, 4);
            for (i, e) in edges.iter().enumerate() {
                let mut c = *e;
                c[0] = c[0] * 4 / es as i64; // the same byte offsets for every element size
                load_t(&mut tb, &m, &c, 0x1000 * i as u32, 1 << (i % 16), i as u16);
                store_t(&mut tb, &m, &c, 0x1000 * i as u32);
            }
            tb.drain();
            assert_eq!(tb.st.copies, 12);
        }
    }

    /// Element strides in every outer dimension (box not a multiple of the stride: ceil), the
    /// ignored elementStrides[0], ranks 4 and 5.
    #[test]
    fn element_strides() {
        let mut spec = TensorMapSpec::tiled(
            Dt::Uint8,
            GBASE,
            vec![64, 9, 7, 5],
            vec![64, 64 * 9, 64 * 9 * 7],
            vec![32, 5, 4, 3],
        );
        spec.element_strides = vec![3, 2, 3, 8];
        let m = map(spec);
        assert_eq!(m.0.smem_box_bytes(), 32 * 3 * 2);
        let mut tb = Tb::new(RANDOM, 5);
        for c in [
            [0i64, 0, 0, 0],
            [16, 4, 3, 2],
            [40, 7, 5, 4],
            [-10, -3, -2, -1],
        ] {
            load_t(&mut tb, &m, &c, 0x800, 1 << 5, 7);
            store_t(&mut tb, &m, &c, 0x800);
        }
        let mut spec5 = TensorMapSpec::tiled(
            Dt::Float32,
            GBASE,
            vec![8, 5, 4, 3, 6],
            vec![32, 160, 640, 1920],
            vec![4, 3, 2, 2, 5],
        );
        spec5.element_strides = vec![1, 2, 1, 2, 4];
        let m5 = map(spec5);
        for c in [[0i64, 0, 0, 0, 0], [6, 3, 3, 2, 3], [-2, -1, -1, -1, -1]] {
            load_t(&mut tb, &m5, &c, 0x2000, 1 << 5, 8);
            store_t(&mut tb, &m5, &c, 0x2000);
        }
        tb.drain();
        assert_eq!(tb.st.copies, 7);
    }

    /// im2col loads, prefetches and stores only (PTX 5.5.4): random rank-3..5 maps (every
    /// element size and swizzle, element strides, pixel box corners up to the rank's range
    /// ends), channel starts that are not 16-byte aligned, pixels before, inside and past the
    /// bounding box (coordinates at the ends of the 32-bit range too), offsets up to their
    /// limit, under random back-pressure and out-of-order responses: every byte, sector read,
    /// write and complete_tx against `TensorMap::im2col_box_elements`.
    #[test]
    fn im2col_against_tensormap_reference() {
        let mut tb = Tb::new(RANDOM, 0x12C0_0001);
        let mut rng = XorShift(0x12C0_0002);
        let (mut ranks, mut mixed, mut wrapped) = ([0u32; 6], 0, 0);
        for n in 0..1500 {
            let m = random_im2col_map(&mut rng);
            let (c, o) = random_im2col_coords(&mut rng, &m.0);
            let els = m.0.im2col_box_elements(&c, &o);
            ranks[m.0.rank()] += 1;
            mixed += (els.iter().any(|e| e.1.is_some()) && els.iter().any(|e| e.1.is_none())) as u32;
            // a pixel after the first on a lower-corner W: the walk wrapped
            let s = m.0.spec();
            let hi = s.global_dim[1] as i64 - 1 + s.pixel_box_upper_corner[0] as i64;
            wrapped += (c[1] + (s.pixels_per_column as i64 - 1) * s.element_strides[1] as i64 > hi) as u32;
            let smem = 128 * rng.below(1000) as u32;
            match n % 10 {
                0 => prefetch_o(&mut tb, &m, &c, &o),
                1 | 2 => store_o(&mut tb, &m, &c, &o, smem),
                _ => load_o(&mut tb, &m, &c, &o, smem, random_mask(&mut rng), rng.below(1 << 16) as u16),
            }
            while tb.pending.len() >= 3 {
                tb.step();
            }
        }
        tb.drain();
        assert!(ranks[3] > 400 && ranks[4] > 400 && ranks[5] > 400, "{ranks:?}");
        assert!(mixed > 150 && wrapped > 600, "{mixed} {wrapped}");
        assert!(tb.st.copies > 1000, "{:?}", tb.st);
    }
}
