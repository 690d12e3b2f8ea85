//! TmaDimStep: one dimension of the decoder's address arithmetic: the decoder folds the head
//! command's dimension `dk` into the job register J per Dim cycle. Every term of a dimension
//! that does not depend on J (its fields, in-bounds windows and the three products) is computed
//! ahead and registered, in two stages, so that no cycle holds more than one of: the selection
//! of a dimension's fields from the head command, the multiplies, the accumulation.
//!
//! - Fields ([`TmaDimSelect`]): dimension k's coordinate, globalDim, boxDim, elementStride,
//!   stride and im2col corners picked by k, and the 33-bit factors `coord + off` and
//!   `coord - lower`, registered into `f` two cycles before dimension k's Dim cycle.
//! - Terms: the three products of the registered factors (MULT18X18D partial products and
//!   their 64-bit sums, nothing before them but registers) and the windows
//!   ([`TmaDimTerms`]), registered into `t` the cycle before the Dim cycle.
//! - Dim: J's 64-bit sums add the registered products.
//!
//! The decoder's cycle count is unchanged (1 + rank + 1): in the Idle cycle that checks the
//! command, dimension 0's terms are computed straight from the head (its stride is the element
//! size: its products are shifts, no multiply) and dimension 1's fields are selected; in
//! dimension k's Dim cycle, dimension k+1's terms and dimension k+2's fields.
//!
//! # Ports
//!
//! - `pre` (in): compute the terms of dimension `nk` this cycle (the decoder's Idle check cycle:
//!   `nk` = 0; a Dim cycle: `nk` = `dk` + 1) and select the fields of dimension `nk` + 1;
//!   `nes` is the element size then (the check's in Idle, J's in Dim). Both are registered at
//!   the edge.
//! - `en` (in): a Dim cycle of dimension `dk` (the registered terms are dimension `dk`'s);
//!   otherwise every output is zero. It also says where this cycle's terms come from: in a Dim
//!   cycle the fields selected in the cycle before, otherwise (the check cycle) dimension 0's
//!   from the head.
//! - `cmd`, `desc`, `b0m1` (in): the head command (coordinates, im2col offsets; its `im2col`
//!   and its map's rank are J's whenever its fields are used), its map, and the row's elements
//!   - 1 ([`crate::tma::dec_check::TmaDescCheck`]).
//! - `a`, `mb2`, `mb3` (in): J as the previous dimensions left it (the start address, the
//!   im2col distances).
//! - Out, for J (the decoder places them by `dk`):
//!   - `a_nx`: the start address with this dimension folded in: `a + coords[dk] * stride_dk`
//!     (+ `im2colOffsets * stride` for an im2col spatial dimension), stride_0 = element size,
//!     stride_i = `globalStrides[i-1]` (PTX 5.5.3; 64-bit, modulo 2^64), as `a + (coord + off)
//!     * stride` (one product of a 33-bit signed factor).
//!   - dimension 0: `rot` (the start's offset in its 16-byte chunk: globalAddress is 16-byte
//!     aligned, so `(c0 * elementSize) mod 16`), `lo_b`/`hi_b` (the in-bounds bytes of a row,
//!     `[lo, hi)` clamped to the box) and `rowbytes`.
//!   - dimensions 1..4: `box`, `e` (elementStrides; 1 for im2col's N), `lo`/`hi` (the in-bounds
//!     window of box indices: `0 <= coord + k < globalDim`, clamped to 0..=256, so the row
//!     iterator compares 9-bit counters) and `st` (the address step `elementStrides[i] *
//!     globalStrides[i-1]`).
//!   - im2col (PTX 5.5.4): `sp` (a spatial dimension: W, H, D; 1..rank-2) or `n` (the N
//!     dimension, rank-1), the windows `kcl..kwl` (leaf [`TmaI2cWin`]) and, for a spatial
//!     dimension, `mb`: the distance of the start from the nested base A(dk+1) (every spatial
//!     dimension up to dk at its lower corner): `mb(dk) + (coord - lower) * stride` (33-bit
//!     signed factor: `coord - lower` may not fit 32 bits).
//!
//! Multiplies are [`TmaMul`] leaves (33-bit signed x 40-bit unsigned, modulo 2^64).

use super::types::*;
use rust_hdl::prelude::*;

/// A dimension's terms, registered between [`TmaDimTerms`] and the Dim cycle's adds.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaDimOut {
    /// dimension 0: first in-bounds byte of a row
    pub lo_b: Bits<24>,
    /// dimension 0: end of the in-bounds bytes
    pub hi_b: Bits<24>,
    /// dimension 0: bytes per row
    pub rowbytes: Bits<24>,
    /// boxDim of the dimension
    pub bdim: Bits<9>,
    /// its element stride
    pub e: Bits<9>,
    /// first in-bounds box index (clamped to 256)
    pub lo: Bits<9>,
    /// end of the in-bounds box indices (clamped to 256)
    pub hi: Bits<9>,
    /// the address step, low half
    pub st_lo: Bits<32>,
    /// high half
    pub st_hi: Bits<32>,
    /// an im2col spatial dimension
    pub sp: bool,
    /// the im2col N dimension
    pub n: bool,
    /// the start address's term `(coord + off) * stride`, low half
    pub pa_lo: Bits<32>,
    /// high half
    pub pa_hi: Bits<32>,
    /// im2col: the term `(coord - lower) * stride` of start - A(dk+1), low half
    pub pm_lo: Bits<32>,
    /// high half
    pub pm_hi: Bits<32>,
    /// im2col: in-bounds window from the coordinate: start
    pub kcl: Bits<15>,
    /// end
    pub kch: Bits<15>,
    /// in-bounds window from the lower corner: start
    pub kll: Bits<15>,
    /// end
    pub klh: Bits<15>,
    /// wrap threshold from the coordinate
    pub kwc: Bits<15>,
    /// wrap threshold from the lower corner
    pub kwl: Bits<15>,
}

/// One dimension of the decoder: the registered terms and the Dim cycle's adds.
#[derive(LogicBlock, Default)]
pub struct TmaDimStep {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// compute dimension `nk`'s terms this cycle
    pub pre: Signal<In, bool>,
    /// the dimension whose terms are computed
    pub nk: Signal<In, Bits<3>>,
    /// log2 element size for the terms
    pub nes: Signal<In, Bits<2>>,
    /// a Dim cycle (else every output is zero)
    pub en: Signal<In, bool>,
    /// the dimension of the Dim cycle
    pub dk: Signal<In, Bits<3>>,
    /// the head command
    pub cmd: Signal<In, TmaCmd>,
    /// its tensor-map image
    pub desc: Signal<In, TmaDescImage>,
    /// elements of a row - 1
    pub b0m1: Signal<In, Bits<8>>,
    /// the start address before this dimension, low half
    pub a_lo: Signal<In, Bits<32>>,
    /// high half
    pub a_hi: Signal<In, Bits<32>>,
    /// im2col: start - A2 (after dimension 1), low half
    pub mb2_lo: Signal<In, Bits<32>>,
    /// high half
    pub mb2_hi: Signal<In, Bits<32>>,
    /// im2col: start - A3 (after dimension 2), low half
    pub mb3_lo: Signal<In, Bits<32>>,
    /// high half
    pub mb3_hi: Signal<In, Bits<32>>,
    /// the start address after this dimension, low half
    pub a_lo_nx: Signal<Out, Bits<32>>,
    /// high half
    pub a_hi_nx: Signal<Out, Bits<32>>,
    /// dimension 0: the start's offset in its 16-byte chunk
    pub rot: Signal<Out, Bits<4>>,
    /// dimension 0: first in-bounds byte of a row
    pub lo_b: Signal<Out, Bits<24>>,
    /// dimension 0: end of the in-bounds bytes
    pub hi_b: Signal<Out, Bits<24>>,
    /// dimension 0: bytes per row
    pub rowbytes: Signal<Out, Bits<24>>,
    /// boxDim of the dimension
    pub bdim: Signal<Out, Bits<9>>,
    /// its element stride
    pub e: Signal<Out, Bits<9>>,
    /// first in-bounds box index (clamped to 256)
    pub lo: Signal<Out, Bits<9>>,
    /// end of the in-bounds box indices (clamped to 256)
    pub hi: Signal<Out, Bits<9>>,
    /// the address step, low half
    pub st_lo: Signal<Out, Bits<32>>,
    /// high half
    pub st_hi: Signal<Out, Bits<32>>,
    /// an im2col spatial dimension
    pub sp: Signal<Out, bool>,
    /// the im2col N dimension
    pub n: Signal<Out, bool>,
    /// im2col spatial: start - A(dk+1), low half
    pub mb_lo: Signal<Out, Bits<32>>,
    /// high half
    pub mb_hi: Signal<Out, Bits<32>>,
    /// im2col: in-bounds window from the coordinate: start
    pub kcl: Signal<Out, Bits<15>>,
    /// end
    pub kch: Signal<Out, Bits<15>>,
    /// in-bounds window from the lower corner: start
    pub kll: Signal<Out, Bits<15>>,
    /// end
    pub klh: Signal<Out, Bits<15>>,
    /// wrap threshold from the coordinate
    pub kwc: Signal<Out, Bits<15>>,
    /// wrap threshold from the lower corner
    pub kwl: Signal<Out, Bits<15>>,

    /// dimension 0's fields from the head (the check cycle's terms)
    sel0: TmaDimSelect,
    /// dimension `nk` + 1's fields from the head
    seln: TmaDimSelect,
    /// the fields of dimension `nk` (selected in the cycle before), for `nk` >= 1
    f: DFF<TmaDimFields>,
    /// the windows of dimension `nk`
    terms: TmaDimTerms,
    /// (coord + off) * stride of dimension `nk` >= 1
    mul_a: TmaMul,
    /// its step: elementStride * stride
    mul_s: TmaMul,
    /// (coord - lower) * stride
    mul_m: TmaMul,
    /// the fields of this cycle's terms
    fsel: Signal<Local, TmaDimFields>,
    /// dimension 0's coordinate
    c0: Signal<Local, Bits<32>>,
    /// sign-extended to 64 bits
    c0x: Signal<Local, Bits<64>>,
    /// times the element size
    p0: Signal<Local, Bits<64>>,
    /// the terms of dimension `dk` (registered in the cycle before)
    t: DFF<TmaDimOut>,
    /// the start address's low-half sum with its carry
    a_sum: Signal<Local, Bits<33>>,
    /// the im2col distance this dimension adds to, low half
    mba_lo: Signal<Local, Bits<32>>,
    /// high half
    mba_hi: Signal<Local, Bits<32>>,
    /// the distance's low-half sum with its carry
    mb_sum: Signal<Local, Bits<33>>,
}

impl Logic for TmaDimStep {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, f, t);
        // dimension nk's terms come from its fields registered in the cycle before in a Dim cycle;
        // in the check cycle (no Dim cycle yet) dimension 0's straight from the head (its
        // products are shifts by the element size). `en` selects: it comes from a register.
        self.sel0.en.next = self.pre.val() && !self.en.val();
        self.sel0.k.next = 0.into();
        self.sel0.cmd.next = self.cmd.val();
        self.sel0.desc.next = self.desc.val();
        self.sel0.b0m1.next = self.b0m1.val();
        self.sel0.es.next = self.nes.val();
        self.seln.en.next = self.pre.val();
        self.seln.k.next = self.nk.val() + 1;
        self.seln.cmd.next = self.cmd.val();
        self.seln.desc.next = self.desc.val();
        self.seln.b0m1.next = self.b0m1.val();
        self.seln.es.next = self.nes.val();
        self.f.d.next = self.seln.fld.val();
        self.terms.en.next = self.pre.val();
        self.terms.es.next = self.nes.val();
        // picked in a Local, so that the sub-block's input is written once (a transient value
        // there would wake `terms` in the Verilog event simulation, and its transient outputs
        // this block, for ever)
        self.fsel.next = self.sel0.fld.val();
        if self.en.val() {
            self.fsel.next = self.f.q.val();
        }
        self.terms.fld.next = self.fsel.val();
        self.t.d.next.lo_b = self.terms.lo_b.val();
        self.t.d.next.hi_b = self.terms.hi_b.val();
        self.t.d.next.rowbytes = self.terms.rowbytes.val();
        self.t.d.next.bdim = self.terms.bdim.val();
        self.t.d.next.e = self.terms.e.val();
        self.t.d.next.lo = self.terms.lo.val();
        self.t.d.next.hi = self.terms.hi.val();
        self.t.d.next.sp = self.terms.sp.val();
        self.t.d.next.n = self.terms.n.val();
        // the products of dimension nk >= 1, from registered factors only (nothing but the
        // multiplies and their sums in this cycle): (coord + off) * stride, elementStride *
        // stride, (coord - lower) * stride
        self.mul_a.a.next = self.f.q.val().fa;
        self.mul_a.b_lo.next = self.f.q.val().sb_lo;
        self.mul_a.b_hi.next = self.f.q.val().sb_hi;
        self.mul_s.a.next = bit_cast::<33, 9>(self.f.q.val().e);
        self.mul_s.b_lo.next = self.f.q.val().sb_lo;
        self.mul_s.b_hi.next = self.f.q.val().sb_hi;
        self.mul_m.a.next = self.f.q.val().fm;
        self.mul_m.b_lo.next = self.f.q.val().sb_lo;
        self.mul_m.b_hi.next = self.f.q.val().sb_hi;
        self.t.d.next.pa_lo = self.mul_a.p_lo.val();
        self.t.d.next.pa_hi = self.mul_a.p_hi.val();
        self.t.d.next.st_lo = self.mul_s.p_lo.val();
        self.t.d.next.st_hi = self.mul_s.p_hi.val();
        self.t.d.next.pm_lo = self.mul_m.p_lo.val();
        self.t.d.next.pm_hi = self.mul_m.p_hi.val();
        // dimension 0's stride is the element size: its products are shifts of the coordinate
        // (sign-extended to 64 bits) and of 1
        self.c0.next = self.sel0.fld.val().c;
        self.c0x.next = bit_cast::<64, 32>(self.c0.val());
        if self.c0.val().get_bit(31) {
            self.c0x.next = bit_cast::<64, 32>(self.c0.val()) | 0xFFFF_FFFF_0000_0000_u64;
        }
        self.p0.next = self.c0x.val() << self.nes.val();
        if self.sel0.en.val() {
            self.t.d.next.pa_lo = bit_cast::<32, 64>(self.p0.val());
            self.t.d.next.pa_hi = bit_cast::<32, 64>(self.p0.val() >> 32);
            self.t.d.next.pm_lo = bit_cast::<32, 64>(self.p0.val());
            self.t.d.next.pm_hi = bit_cast::<32, 64>(self.p0.val() >> 32);
            self.t.d.next.st_lo = bits::<32>(1) << self.nes.val();
            self.t.d.next.st_hi = 0.into();
        }
        self.t.d.next.kcl = self.terms.kcl.val();
        self.t.d.next.kch = self.terms.kch.val();
        self.t.d.next.kll = self.terms.kll.val();
        self.t.d.next.klh = self.terms.klh.val();
        self.t.d.next.kwc = self.terms.kwc.val();
        self.t.d.next.kwl = self.terms.kwl.val();
        // the Dim cycle: start += the address term; the im2col distance of a spatial dimension
        // continues the previous one's (dimension 1 starts from 0)
        self.a_sum.next = bit_cast::<33, 32>(self.a_lo.val()) + bit_cast::<33, 32>(self.t.q.val().pa_lo);
        self.mba_lo.next = 0.into();
        self.mba_hi.next = 0.into();
        if self.dk.val() == 2 {
            self.mba_lo.next = self.mb2_lo.val();
            self.mba_hi.next = self.mb2_hi.val();
        }
        if self.dk.val() == 3 {
            self.mba_lo.next = self.mb3_lo.val();
            self.mba_hi.next = self.mb3_hi.val();
        }
        self.mb_sum.next = bit_cast::<33, 32>(self.mba_lo.val()) + bit_cast::<33, 32>(self.t.q.val().pm_lo);
        self.a_lo_nx.next = 0.into();
        self.a_hi_nx.next = 0.into();
        self.rot.next = 0.into();
        self.mb_lo.next = 0.into();
        self.mb_hi.next = 0.into();
        self.lo_b.next = 0.into();
        self.hi_b.next = 0.into();
        self.rowbytes.next = 0.into();
        self.bdim.next = 0.into();
        self.e.next = 0.into();
        self.lo.next = 0.into();
        self.hi.next = 0.into();
        self.st_lo.next = 0.into();
        self.st_hi.next = 0.into();
        self.sp.next = false;
        self.n.next = false;
        self.kcl.next = 0.into();
        self.kch.next = 0.into();
        self.kll.next = 0.into();
        self.klh.next = 0.into();
        self.kwc.next = 0.into();
        self.kwl.next = 0.into();
        if self.en.val() {
            self.a_lo_nx.next = bit_cast::<32, 33>(self.a_sum.val());
            self.a_hi_nx.next = self.a_hi.val() + self.t.q.val().pa_hi;
            if self.a_sum.val().get_bit(32) {
                self.a_hi_nx.next = self.a_hi.val() + self.t.q.val().pa_hi + 1;
            }
            self.rot.next = bit_cast::<4, 33>(self.a_sum.val());
            self.mb_lo.next = bit_cast::<32, 33>(self.mb_sum.val());
            self.mb_hi.next = self.mba_hi.val() + self.t.q.val().pm_hi;
            if self.mb_sum.val().get_bit(32) {
                self.mb_hi.next = self.mba_hi.val() + self.t.q.val().pm_hi + 1;
            }
            self.lo_b.next = self.t.q.val().lo_b;
            self.hi_b.next = self.t.q.val().hi_b;
            self.rowbytes.next = self.t.q.val().rowbytes;
            self.bdim.next = self.t.q.val().bdim;
            self.e.next = self.t.q.val().e;
            self.lo.next = self.t.q.val().lo;
            self.hi.next = self.t.q.val().hi;
            self.st_lo.next = self.t.q.val().st_lo;
            self.st_hi.next = self.t.q.val().st_hi;
            self.sp.next = self.t.q.val().sp;
            self.n.next = self.t.q.val().n;
            self.kcl.next = self.t.q.val().kcl;
            self.kch.next = self.t.q.val().kch;
            self.kll.next = self.t.q.val().kll;
            self.klh.next = self.t.q.val().klh;
            self.kwc.next = self.t.q.val().kwc;
            self.kwl.next = self.t.q.val().kwl;
        }
    }
}

/// A dimension's fields: what [`TmaDimSelect`] picks from the head command and its map for
/// dimension `k`, registered between the selection and [`TmaDimTerms`] (module doc).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaDimFields {
    /// the coordinate
    pub c: Bits<32>,
    /// globalDim - 1
    pub dim: Bits<32>,
    /// boxDim (dimension 0: the row's elements)
    pub bdim: Bits<9>,
    /// the element stride (1 for dimension 0 and im2col's N)
    pub e: Bits<9>,
    /// the stride multiplying the coordinate (element size for dimension 0), low half
    pub sb_lo: Bits<32>,
    /// high bits
    pub sb_hi: Bits<8>,
    /// an im2col spatial dimension
    pub sp: bool,
    /// the im2col N dimension
    pub n: bool,
    /// im2col offset (0 but for a spatial dimension)
    pub off: Bits<16>,
    /// pixelBoxLowerCorner (0 but for a spatial dimension)
    pub low: Bits<16>,
    /// pixelBoxUpperCorner (0 but for a spatial dimension)
    pub up: Bits<16>,
    /// the address factor `coord + off`, 33-bit signed
    pub fa: Bits<33>,
    /// the im2col distance factor `coord - lower`, 33-bit signed
    pub fm: Bits<33>,
}

/// Dimension `k`'s fields from the head command and its map (combinational): the selection by
/// `k` and the factors' 33-bit adds, kept out of the multiplies' cycle.
#[derive(LogicBlock, Default)]
pub struct TmaDimSelect {
    /// select (else every field is zero)
    pub en: Signal<In, bool>,
    /// the dimension
    pub k: Signal<In, Bits<3>>,
    /// the head command
    pub cmd: Signal<In, TmaCmd>,
    /// its tensor-map image
    pub desc: Signal<In, TmaDescImage>,
    /// elements of a row - 1
    pub b0m1: Signal<In, Bits<8>>,
    /// log2 element size
    pub es: Signal<In, Bits<2>>,
    /// the fields of dimension `k`
    pub fld: Signal<Out, TmaDimFields>,

    /// the command is im2col
    im2col: Signal<Local, bool>,
    /// tensorRank
    rank: Signal<Local, Bits<3>>,
    /// coordinate of dimension k
    c: Signal<Local, Bits<32>>,
    /// the coordinate sign-extended to 33 bits
    c33: Signal<Local, Bits<33>>,
    /// im2col offset of dimension k
    off: Signal<Local, Bits<16>>,
    /// pixelBoxLowerCorner of dimension k
    low: Signal<Local, Bits<16>>,
    /// pixelBoxLowerCorner sign-extended to 33 bits
    slow: Signal<Local, Bits<33>>,
}

impl Logic for TmaDimSelect {
    #[hdl_gen]
    fn update(&mut self) {
        self.fld.next.c = 0.into();
        self.fld.next.dim = 0.into();
        self.fld.next.bdim = 0.into();
        self.fld.next.e = 0.into();
        self.fld.next.sb_lo = 0.into();
        self.fld.next.sb_hi = 0.into();
        self.fld.next.sp = false;
        self.fld.next.n = false;
        self.fld.next.off = 0.into();
        self.fld.next.low = 0.into();
        self.fld.next.up = 0.into();
        self.fld.next.fa = 0.into();
        self.fld.next.fm = 0.into();
        // the head is a tensor command whenever its fields are used (a Dim cycle, or the check
        // cycle of a tensor command): J's im2col and rank are the head's
        self.im2col.next = self.cmd.val().im2col;
        self.rank.next = self.desc.val().rank_m1 + 1;
        self.c.next = 0.into();
        self.c33.next = 0.into();
        self.off.next = 0.into();
        self.low.next = 0.into();
        self.slow.next = 0.into();
        if self.en.val() {
            self.fld.next.e = 1.into();
            match self.k.val().index() {
                0 => {
                    self.c.next = self.cmd.val().c0;
                    self.fld.next.dim = self.desc.val().gdim0_m1;
                    self.fld.next.bdim = bit_cast::<9, 8>(self.b0m1.val()) + 1;
                    self.fld.next.sb_lo = bits::<32>(1) << self.es.val();
                }
                1 => {
                    self.c.next = self.cmd.val().c1;
                    self.fld.next.dim = self.desc.val().gdim1_m1;
                    self.fld.next.bdim = bit_cast::<9, 8>(self.desc.val().box1_m1) + 1;
                    self.fld.next.e = bit_cast::<9, 3>(self.desc.val().estride1_m1) + 1;
                    self.fld.next.sb_lo = self.desc.val().gstride0_lo;
                    self.fld.next.sb_hi = self.desc.val().gstride0_hi;
                }
                2 => {
                    self.c.next = self.cmd.val().c2;
                    self.fld.next.dim = self.desc.val().gdim2_m1;
                    self.fld.next.bdim = bit_cast::<9, 8>(self.desc.val().box2_m1) + 1;
                    self.fld.next.e = bit_cast::<9, 3>(self.desc.val().estride2_m1) + 1;
                    self.fld.next.sb_lo = self.desc.val().gstride1_lo;
                    self.fld.next.sb_hi = self.desc.val().gstride1_hi;
                }
                3 => {
                    self.c.next = self.cmd.val().c3;
                    self.fld.next.dim = self.desc.val().gdim3_m1;
                    self.fld.next.bdim = bit_cast::<9, 8>(self.desc.val().box3_m1) + 1;
                    self.fld.next.e = bit_cast::<9, 3>(self.desc.val().estride3_m1) + 1;
                    self.fld.next.sb_lo = self.desc.val().gstride2_lo;
                    self.fld.next.sb_hi = self.desc.val().gstride2_hi;
                }
                _ => {
                    self.c.next = self.cmd.val().c4;
                    self.fld.next.dim = self.desc.val().gdim4_m1;
                    self.fld.next.bdim = bit_cast::<9, 8>(self.desc.val().box4_m1) + 1;
                    self.fld.next.e = bit_cast::<9, 3>(self.desc.val().estride4_m1) + 1;
                    self.fld.next.sb_lo = self.desc.val().gstride3_lo;
                    self.fld.next.sb_hi = self.desc.val().gstride3_hi;
                }
            }
            self.fld.next.c = self.c.val();
            // im2col (PTX 5.5.4): spatial dimensions 1..rank-2 take the offset and the pixel box
            // corners; the N dimension (rank-1) steps by 1
            if self.im2col.val() && (self.k.val() != 0) {
                if (self.k.val() + 1) == self.rank.val() {
                    self.fld.next.n = true;
                    self.fld.next.e = 1.into();
                } else {
                    self.fld.next.sp = true;
                    match self.k.val().index() {
                        1 => {
                            self.off.next = self.cmd.val().o0;
                            self.low.next = self.desc.val().lower0;
                            self.fld.next.up = self.desc.val().upper0;
                        }
                        2 => {
                            self.off.next = self.cmd.val().o1;
                            self.low.next = self.desc.val().lower1;
                            self.fld.next.up = self.desc.val().upper1;
                        }
                        _ => {
                            self.off.next = self.cmd.val().o2;
                            self.low.next = self.desc.val().lower2;
                            self.fld.next.up = self.desc.val().upper2;
                        }
                    }
                }
            }
            self.fld.next.off = self.off.val();
            self.fld.next.low = self.low.val();
            // the factors, sign-extended to 33 bits: coord + off, coord - lower
            self.slow.next = bit_cast::<33, 16>(self.low.val());
            if self.low.val().get_bit(15) {
                self.slow.next = bit_cast::<33, 16>(self.low.val()) | 0x1_FFFF_0000_u64;
            }
            self.c33.next = bit_cast::<33, 32>(self.c.val());
            if self.c.val().get_bit(31) {
                self.c33.next = bit_cast::<33, 32>(self.c.val()) | 0x1_0000_0000_u64;
            }
            self.fld.next.fa = self.c33.val() + bit_cast::<33, 16>(self.off.val());
            self.fld.next.fm = self.c33.val() - self.slow.val();
        }
    }
}

/// One dimension's windows (combinational) from its fields: its in-bounds window of box
/// indices, dimension 0's bytes, the im2col windows; none depends on J's sums (module doc).
#[derive(LogicBlock, Default)]
pub struct TmaDimTerms {
    /// compute (else every output is zero)
    pub en: Signal<In, bool>,
    /// the dimension's fields
    pub fld: Signal<In, TmaDimFields>,
    /// log2 element size
    pub es: Signal<In, Bits<2>>,
    /// dimension 0: first in-bounds byte of a row
    pub lo_b: Signal<Out, Bits<24>>,
    /// dimension 0: end of the in-bounds bytes
    pub hi_b: Signal<Out, Bits<24>>,
    /// dimension 0: bytes per row
    pub rowbytes: Signal<Out, Bits<24>>,
    /// boxDim of the dimension
    pub bdim: Signal<Out, Bits<9>>,
    /// its element stride
    pub e: Signal<Out, Bits<9>>,
    /// first in-bounds box index (clamped to 256)
    pub lo: Signal<Out, Bits<9>>,
    /// end of the in-bounds box indices (clamped to 256)
    pub hi: Signal<Out, Bits<9>>,
    /// an im2col spatial dimension
    pub sp: Signal<Out, bool>,
    /// the im2col N dimension
    pub n: Signal<Out, bool>,
    /// im2col: in-bounds window from the coordinate: start
    pub kcl: Signal<Out, Bits<15>>,
    /// end
    pub kch: Signal<Out, Bits<15>>,
    /// in-bounds window from the lower corner: start
    pub kll: Signal<Out, Bits<15>>,
    /// end
    pub klh: Signal<Out, Bits<15>>,
    /// wrap threshold from the coordinate
    pub kwc: Signal<Out, Bits<15>>,
    /// wrap threshold from the lower corner
    pub kwl: Signal<Out, Bits<15>>,

    /// the im2col windows of dimension k
    i2c_win: TmaI2cWin,
    /// coordinate of dimension k
    c: Signal<Local, Bits<32>>,
    /// -coordinate
    negc: Signal<Local, Bits<32>>,
    /// globalDim - 1 of dimension k
    dim: Signal<Local, Bits<32>>,
    /// boxDim of dimension k
    bd: Signal<Local, Bits<9>>,
    /// globalDim - 1 - coordinate
    diff: Signal<Local, Bits<32>>,
    /// dimension 0: lo clamped to the box
    lo0: Signal<Local, Bits<24>>,
    /// dimension 0: hi clamped to the box
    hi0: Signal<Local, Bits<24>>,
}

impl Logic for TmaDimTerms {
    #[hdl_gen]
    fn update(&mut self) {
        self.lo_b.next = 0.into();
        self.hi_b.next = 0.into();
        self.rowbytes.next = 0.into();
        self.bdim.next = 0.into();
        self.e.next = 0.into();
        self.lo.next = 0.into();
        self.hi.next = 0.into();
        self.sp.next = false;
        self.n.next = false;
        self.kcl.next = 0.into();
        self.kch.next = 0.into();
        self.kll.next = 0.into();
        self.klh.next = 0.into();
        self.kwc.next = 0.into();
        self.kwl.next = 0.into();
        self.c.next = 0.into();
        self.negc.next = 0.into();
        self.dim.next = 0.into();
        self.bd.next = 0.into();
        self.diff.next = 0.into();
        self.lo0.next = 0.into();
        self.hi0.next = 0.into();
        self.i2c_win.c.next = 0.into();
        self.i2c_win.off.next = 0.into();
        self.i2c_win.lower.next = 0.into();
        self.i2c_win.upper.next = 0.into();
        self.i2c_win.gdim_m1.next = 0.into();
        if self.en.val() {
            self.c.next = self.fld.val().c;
            self.dim.next = self.fld.val().dim;
            self.bd.next = self.fld.val().bdim;
            self.bdim.next = self.fld.val().bdim;
            self.e.next = self.fld.val().e;
            self.sp.next = self.fld.val().sp;
            self.n.next = self.fld.val().n;
            self.negc.next = bits::<32>(0) - self.c.val();
            self.i2c_win.c.next = self.c.val();
            self.i2c_win.off.next = self.fld.val().off;
            self.i2c_win.lower.next = self.fld.val().low;
            self.i2c_win.upper.next = self.fld.val().up;
            self.i2c_win.gdim_m1.next = self.dim.val();
            self.kcl.next = self.i2c_win.kcl.val();
            self.kch.next = self.i2c_win.kch.val();
            self.kll.next = self.i2c_win.kll.val();
            self.klh.next = self.i2c_win.klh.val();
            self.kwc.next = self.i2c_win.kwc.val();
            self.kwl.next = self.i2c_win.kwl.val();
            // the in-bounds window [lo, hi) of box indices k: 0 <= coord + k < globalDim, clamped
            // to 0..=256 (box indices are below 256)
            self.diff.next = self.dim.val() - self.c.val();
            self.lo.next = 0.into();
            self.hi.next = 256.into();
            if self.c.val().get_bit(31) {
                if self.negc.val() >= 256 {
                    self.lo.next = 256.into();
                } else {
                    self.lo.next = bit_cast::<9, 32>(self.negc.val());
                }
                if (self.dim.val() < 255) && (self.negc.val() < 256) && (self.diff.val() < 255) {
                    self.hi.next = bit_cast::<9, 32>(self.diff.val()) + 1;
                }
            } else if self.c.val() > self.dim.val() {
                self.hi.next = 0.into();
            } else if self.diff.val() < 255 {
                self.hi.next = bit_cast::<9, 32>(self.diff.val()) + 1;
            }
            // dimension 0: the window clamped to the box, in bytes
            self.lo0.next = bit_cast::<24, 9>(self.lo.val());
            if self.lo.val() > self.bd.val() {
                self.lo0.next = bit_cast::<24, 9>(self.bd.val());
            }
            self.hi0.next = bit_cast::<24, 9>(self.hi.val());
            if self.hi.val() > self.bd.val() {
                self.hi0.next = bit_cast::<24, 9>(self.bd.val());
            }
            self.lo_b.next = self.lo0.val() << self.es.val();
            self.hi_b.next = self.hi0.val() << self.es.val();
            self.rowbytes.next = bit_cast::<24, 9>(self.bd.val()) << self.es.val();
        }
    }
}

/// `p = sext(a) * b mod 2^64` (a: 33-bit signed, b: 40-bit unsigned), combinational.
/// A leaf with hand-written Verilog: hdl_gen has no 33 x 40 multiply (rust-hdl only multiplies
/// 16 x 16); the iverilog replay checks it against this Rust model.
#[derive(LogicBlock, Default)]
pub struct TmaMul {
    /// signed multiplier
    pub a: Signal<In, Bits<33>>,
    /// unsigned multiplicand, bits 0..32
    pub b_lo: Signal<In, Bits<32>>,
    /// unsigned multiplicand, bits 32..40
    pub b_hi: Signal<In, Bits<8>>,
    /// product, low half
    pub p_lo: Signal<Out, Bits<32>>,
    /// product, high half
    pub p_hi: Signal<Out, Bits<32>>,
}

impl Logic for TmaMul {
    fn update(&mut self) {
        let a = ((self.a.val().to_u64() << 31) as i64 >> 31) as u64;
        let b = self.b_lo.val().to_u64() | self.b_hi.val().to_u64() << 32;
        let p = a.wrapping_mul(b);
        self.p_lo.next = (p & 0xFFFF_FFFF).into();
        self.p_hi.next = (p >> 32).into();
    }
    fn connect(&mut self) {
        self.p_lo.connect();
        self.p_hi.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Custom(
            "\
wire [63:0] mul_p = $signed(a) * $signed({1'b0, b_hi, b_lo});
always @(*) begin
   p_lo = mul_p[31:0];
   p_hi = mul_p[63:32];
end
"
            .into(),
        )
    }
}

/// One im2col dimension's windows (module doc "im2col"), combinational, for a pixel position
/// `pos` that starts at `base` and moves by `k` steps: the in-bounds window of `k`
/// (`0 <= base + off + k < globalDim`) from the coordinate `c` (`kcl..kch`) and from the lower
/// corner (`kll..klh`), clamped to 0..=16384, and the first `k` past the bounding box's upper
/// end `globalDim - 1 + upper` (`kwc`, `kwl`), clamped to 0..=16383 (at most 1024 pixels of at
/// most 8 steps: 14-bit counters). N is a dimension with `off`, `lower`, `upper` 0. A leaf with
/// hand-written Verilog (36-bit signed arithmetic); the iverilog replay checks it.
#[derive(LogicBlock, Default)]
pub struct TmaI2cWin {
    /// the instruction's coordinate (.s32)
    pub c: Signal<In, Bits<32>>,
    /// the im2col offset (unsigned)
    pub off: Signal<In, Bits<16>>,
    /// pixelBoxLowerCorner (.s16)
    pub lower: Signal<In, Bits<16>>,
    /// pixelBoxUpperCorner (.s16)
    pub upper: Signal<In, Bits<16>>,
    /// globalDim - 1
    pub gdim_m1: Signal<In, Bits<32>>,
    /// in-bounds window from the coordinate: start
    pub kcl: Signal<Out, Bits<15>>,
    /// end
    pub kch: Signal<Out, Bits<15>>,
    /// in-bounds window from the lower corner: start
    pub kll: Signal<Out, Bits<15>>,
    /// end
    pub klh: Signal<Out, Bits<15>>,
    /// wrap threshold from the coordinate
    pub kwc: Signal<Out, Bits<15>>,
    /// wrap threshold from the lower corner
    pub kwl: Signal<Out, Bits<15>>,
}

impl Logic for TmaI2cWin {
    fn update(&mut self) {
        let c = self.c.val().to_u64() as u32 as i32 as i64;
        let off = self.off.val().to_u64() as i64;
        let lower = self.lower.val().to_u64() as u16 as i16 as i64;
        let upper = self.upper.val().to_u64() as u16 as i16 as i64;
        let gd = self.gdim_m1.val().to_u64() as i64 + 1;
        let cl = |v: i64, top: i64| -> Bits<15> { (v.clamp(0, top) as u64).into() };
        let (xc, xl) = (c + off, lower + off);
        let hi = gd - 1 + upper;
        self.kcl.next = cl(-xc, 16384);
        self.kch.next = cl(gd - xc, 16384);
        self.kll.next = cl(-xl, 16384);
        self.klh.next = cl(gd - xl, 16384);
        self.kwc.next = cl(hi - c + 1, 16383);
        self.kwl.next = cl(hi - lower + 1, 16383);
    }
    fn connect(&mut self) {
        self.kcl.connect();
        self.kch.connect();
        self.kll.connect();
        self.klh.connect();
        self.kwc.connect();
        self.kwl.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Custom(
            "\
wire [35:0] wn_c = {{4{c[31]}}, c};
wire [35:0] wn_off = {20'd0, off};
wire [35:0] wn_lo = {{20{lower[15]}}, lower};
wire [35:0] wn_up = {{20{upper[15]}}, upper};
wire [35:0] wn_gd = {4'd0, gdim_m1} + 36'd1;
wire [35:0] wn_xc = wn_c + wn_off;
wire [35:0] wn_xl = wn_lo + wn_off;
wire [35:0] wn_cl = 36'd0 - wn_xc;
wire [35:0] wn_ch = wn_gd - wn_xc;
wire [35:0] wn_ll = 36'd0 - wn_xl;
wire [35:0] wn_lh = wn_gd - wn_xl;
wire [35:0] wn_hi = wn_gd - 36'd1 + wn_up;
wire [35:0] wn_wc = wn_hi - wn_c + 36'd1;
wire [35:0] wn_wl = wn_hi - wn_lo + 36'd1;
always @(*) begin
   kcl = wn_cl[35] ? 15'd0 : ((wn_cl > 36'd16384) ? 15'd16384 : wn_cl[14:0]);
   kch = wn_ch[35] ? 15'd0 : ((wn_ch > 36'd16384) ? 15'd16384 : wn_ch[14:0]);
   kll = wn_ll[35] ? 15'd0 : ((wn_ll > 36'd16384) ? 15'd16384 : wn_ll[14:0]);
   klh = wn_lh[35] ? 15'd0 : ((wn_lh > 36'd16384) ? 15'd16384 : wn_lh[14:0]);
   kwc = wn_wc[35] ? 15'd0 : ((wn_wc > 36'd16383) ? 15'd16383 : wn_wc[14:0]);
   kwl = wn_wl[35] ? 15'd0 : ((wn_wl > 36'd16383) ? 15'd16383 : wn_wl[14:0]);
end
"
            .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::XorShift;
    use crate::tma::tb::{block, comb, Clocked};

    fn b32(x: i64) -> Bits<32> {
        ((x as u64) & 0xFFFF_FFFF).into()
    }

    /// `sext(a) * b mod 2^64` (33-bit signed a) for random and extreme operands, against i128
    /// arithmetic.
    #[test]
    fn mul_is_a_33_by_40_bit_product() {
        let mut m = block(TmaMul::default());
        let mut rng = XorShift(0x3AC0_0001);
        let edge = [0i64, 1, -1, -(1 << 32), (1 << 32) - 1];
        for n in 0..2000 {
            let a = if n < 25 { edge[n % 5] } else { ((rng.below(1 << 33) << 31) as i64) >> 31 };
            let b = if n < 25 { [0u64, 1, (1 << 40) - 1, 1 << 39, 16][n / 5] } else { rng.below(1 << 40) };
            m.a.next = ((a as u64) & 0x1_FFFF_FFFF).into();
            m.b_lo.next = (b & 0xFFFF_FFFF).into();
            m.b_hi.next = (b >> 32).into();
            comb(&mut *m);
            let want = (a as i128 * b as i128) as u64;
            assert_eq!(m.p_lo.val().to_u64() | m.p_hi.val().to_u64() << 32, want, "{a} * {b}");
        }
    }

    /// Selects dimension `k`'s fields and computes its terms (two cycles ahead, one for
    /// dimension 0, as the decoder does), then runs its Dim cycle on the start address `a`: the step's outputs are that cycle's.
    fn dim_cycle(d: &mut TmaDimStep, k: u64, es: u64, a: u64) {
        d.pre.next = true;
        d.en.next = false;
        d.nes.next = es.into();
        if k > 0 {
            // the cycle before selects dimension k's fields (the check cycle for k = 1)
            d.nk.next = (k - 1).into();
            d.en.next = k > 1;
            d.low();
            d.edge();
            // dimension k - 1's Dim cycle computes dimension k's terms
            d.en.next = true;
        }
        d.nk.next = k.into();
        d.low();
        d.edge();
        d.pre.next = false;
        d.en.next = true;
        d.dk.next = k.into();
        d.a_lo.next = (a & 0xFFFF_FFFF).into();
        d.a_hi.next = (a >> 32).into();
        d.low();
    }

    /// The first k in 0..top at which `pred(k)` holds (top when none does).
    fn first(top: i64, pred: impl Fn(i64) -> bool) -> i64 {
        (0..top).find(|&k| pred(k)).unwrap_or(top)
    }

    /// One dimension of a tiled command: the start address, the step and the in-bounds window
    /// of box indices (`0 <= c + k < globalDim`, clamped to 256) for coordinates before, in
    /// and past the tensor (32-bit extremes included), counted k by k.
    #[test]
    fn tiled_dimension_windows_and_addresses() {
        let mut d = block(TmaDimStep::default());
        let mut rng = XorShift(0xD1A0_0001);
        for n in 0..3000 {
            let gdim = 1 + if rng.pct(80) { rng.below(400) } else { rng.below(1 << 32) - 1 };
            let c = match n % 7 {
                0 => i32::MIN as i64 + rng.below(300) as i64,
                1 => i32::MAX as i64 - rng.below(300) as i64,
                _ => rng.below(1000) as i64 - 500,
            };
            let (e, bx) = (1 + rng.below(8), 1 + rng.below(256));
            let stride = 16 * rng.below(1 << 36);
            let a0 = rng.below(u64::MAX);
            d.cmd.next = TmaCmd { c1: b32(c), ..Default::default() };
            d.desc.next = TmaDescImage {
                gdim1_m1: (gdim - 1).into(),
                box1_m1: (bx - 1).into(),
                estride1_m1: (e - 1).into(),
                gstride0_lo: (stride & 0xFFFF_FFFF).into(),
                gstride0_hi: (stride >> 32).into(),
                ..Default::default()
            };
            dim_cycle(&mut d, 1, 0, a0);
            let want: Vec<i64> = (0..256).filter(|&k| c + k >= 0 && c + k < gdim as i64).collect();
            let (lo, hi) = (d.lo.val().to_u64() as i64, d.hi.val().to_u64() as i64);
            assert_eq!((lo..hi).collect::<Vec<_>>(), want, "c {c} gdim {gdim}");
            let a = a0.wrapping_add((c as i128 * stride as i128) as u64);
            assert_eq!(d.a_lo_nx.val().to_u64() | d.a_hi_nx.val().to_u64() << 32, a);
            assert_eq!(d.st_lo.val().to_u64() | d.st_hi.val().to_u64() << 32, e * stride);
            assert_eq!((d.bdim.val().to_u64(), d.e.val().to_u64()), (bx, e));
        }
    }

    /// Dimension 0: the row's in-bounds bytes clamped to the box, its bytes, and where its start
    /// falls in a 16-byte chunk, for every element size.
    #[test]
    fn dimension_0_gives_the_row() {
        let mut d = block(TmaDimStep::default());
        let mut rng = XorShift(0xD1A0_0002);
        for _ in 0..2000 {
            let es = rng.below(4);
            let (gdim, bx) = (1 + rng.below(600), 1 + rng.below(256));
            let c = rng.below(1200) as i64 - 600;
            d.b0m1.next = (bx - 1).into();
            d.cmd.next = TmaCmd { c0: b32(c), ..Default::default() };
            d.desc.next = TmaDescImage { gdim0_m1: (gdim - 1).into(), ..Default::default() };
            dim_cycle(&mut d, 0, es, 0x1_0000_1000);
            let inb = |k: i64| c + k >= 0 && c + k < gdim as i64;
            let lo = first(bx as i64, inb);
            let hi = (lo..bx as i64).find(|&k| !inb(k)).unwrap_or(bx as i64);
            let (rl, rh) = (d.lo_b.val().to_u64() as i64, d.hi_b.val().to_u64() as i64);
            if lo < hi {
                assert_eq!((rl, rh), (lo << es, hi << es), "c {c} gdim {gdim} box {bx}");
            } else {
                assert!(rh <= rl, "empty row: c {c} gdim {gdim} box {bx}: {rl}..{rh}");
            }
            assert_eq!(d.rowbytes.val().to_u64(), bx << es);
            let start = (0x1_0000_1000i64 + (c << es)) as u64;
            assert_eq!(d.rot.val().to_u64(), start % 16);
        }
    }

    /// An im2col spatial dimension (PTX 5.5.4): the windows of pixel steps k from the
    /// coordinate and from the lower corner, and the wrap thresholds, counted k by k.
    #[test]
    fn im2col_windows_counted_step_by_step() {
        let mut w = block(TmaI2cWin::default());
        let mut rng = XorShift(0x12C0_0003);
        for n in 0..3000 {
            let gd = 1 + rng.below(40) as i64;
            let lower = rng.below(40) as i64 - 20;
            let upper = rng.below(40) as i64 - 20;
            let off = if n % 5 == 0 { 0xFFFF - rng.below(3) as i64 } else { rng.below(8) as i64 };
            let c = match n % 9 {
                0 => i32::MIN as i64,
                1 => i32::MAX as i64,
                _ => rng.below(120) as i64 - 60,
            };
            w.c.next = b32(c);
            w.off.next = (off as u64).into();
            w.lower.next = ((lower as u64) & 0xFFFF).into();
            w.upper.next = ((upper as u64) & 0xFFFF).into();
            w.gdim_m1.next = ((gd - 1) as u64).into();
            comb(&mut *w);
            let top = 16384;
            // in bounds: 0 <= base + off + k < gd
            let win = |base: i64| {
                let l = first(top, |k| base + off + k >= 0);
                let h = first(top, |k| base + off + k >= gd).max(l);
                (l, h)
            };
            let g = |s: &Signal<Out, Bits<15>>| s.val().to_u64() as i64;
            let (kl, kh) = win(c);
            assert_eq!((g(&w.kcl), g(&w.kch).max(g(&w.kcl))), (kl, kh), "c {c} off {off} gd {gd}");
            let (ll, lh) = win(lower);
            assert_eq!((g(&w.kll), g(&w.klh).max(g(&w.kll))), (ll, lh), "lower {lower} off {off} gd {gd}");
            // wraps once base + k passes globalDim - 1 + upper
            let hi = gd - 1 + upper;
            assert_eq!(g(&w.kwc), first(16383, |k| c + k > hi), "c {c} hi {hi}");
            assert_eq!(g(&w.kwl), first(16383, |k| lower + k > hi), "lower {lower} hi {hi}");
        }
    }
}
