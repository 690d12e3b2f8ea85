//! TmaDescCheck: the decoder's checks of the head command (combinational): is the command
//! legal, and the per-command facts the decoder needs to start its job.
//!
//! # Ports
//!
//! - `cmd`, `desc`, `noctx` (in): the queue head, its tensor-map image (hopsync layout v1 of
//!   `firmware/src/tensormap.rs`, decoded field by field: [`TmaDescImage`]) and whether it is a
//!   store that found no bulk-group context.
//! - `kind`: the fault of the command (`NoFault`: legal), in the golden model's order (below).
//! - `tensor`, `store`, `pf`, `s2s`: what the command is (a tensor command; a store to global;
//!   a prefetch; a shared::cta -> shared::cluster copy).
//! - `es` (log2 element size), `fill` (the 16 OOB fill bytes), `b0m1` (the row's elements - 1:
//!   `boxDim[0] - 1`, or `channelsPerPixel - 1` of an im2col map: an im2col row is one pixel,
//!   PTX 5.5.4) of the command's map.
//! - `en` (in): the decoder checks the head this cycle; otherwise every output but `b0m1` is
//!   `NoFault` / zero (the checks only run then, which keeps the Rust simulation fast).
//!
//! # Checks (fault kinds are the golden model's `FindingKind` names)
//!
//! A store that found no bulk-group context: `unsupported: more than 32 threads with open bulk
//! async-groups`, before any other check. Tensor commands, in the golden model's order:
//! `TensorMapInvalid` (version, rank, enum values (sub-byte types and swizzle-atomicity modes
//! included), reserved and unused fields non-zero, im2col fields in a tiled map,
//! `globalAddress` not 16-byte aligned, `globalStrides` not multiples of 16, `boxDim[0] *
//! elementSize` not a multiple of 16, inner box wider than the swizzle span, OOB NaN fill on an
//! integer type; an im2col map: rank not 3..=5, `boxDim` set, pixel box corners outside the
//! rank's range or set for a dimension the rank lacks, a spatial dimension with no area,
//! `channelsPerPixel * elementSize` not a multiple of 16 (leaf [`TmaI2cCheck`])),
//! `TmaCoordOutOfRange` (`dims` != rank), `TensorMapInvalid` (load mode != map mode), then
//! `unsupported: interleaved tensor layouts`, then `TmaMisaligned` (shared address not 128-byte
//! aligned; not for a prefetch), then `ClusterRankOutOfRange` (empty `cta_mask` of a load).
//! Bulk commands: `TmaMisaligned` (addresses, `dsmem` of an S2S copy included, not 16-byte
//! aligned, size not a multiple of 16), then `ClusterRankOutOfRange` (empty `cta_mask` of a load
//! or S2S copy). A prefetch ignores `smem` and `cta_mask`.
//!
//! Not checked here (documented): the tensor-map rules that need a wide multiply
//! (`globalStrides[0] >= globalDim[0] * elementSize`, `globalStrides[i] >= globalStrides[i-1] *
//! globalDim[i]`; they constrain the tensor, not the engine's address arithmetic), the fields of
//! interleaved maps (refused as unsupported before they matter), the range of the im2col
//! offsets (an instruction operand: the golden model's `TmaCoordOutOfRange` before the SM
//! engine sends the command; the unit uses the 16 bits it is given), mask bits beyond
//! the cluster size, shared-memory spans beyond the CTA's allocation, global spans outside
//! every allocation, and the mbarrier's validity (the MbarrierUnit reports that).

use super::types::*;
use rust_hdl::prelude::*;

/// The checks of the head command.
#[derive(LogicBlock, Default)]
pub struct TmaDescCheck {
    /// the decoder checks the head this cycle
    pub en: Signal<In, bool>,
    /// the head command
    pub cmd: Signal<In, TmaCmd>,
    /// its tensor-map image
    pub desc: Signal<In, TmaDescImage>,
    /// it is a store that found no bulk-group context
    pub noctx: Signal<In, bool>,
    /// its fault (`NoFault`: legal)
    pub kind: Signal<Out, TmaFaultKind>,
    /// it is a tensor command
    pub tensor: Signal<Out, bool>,
    /// it is a store to global memory
    pub store: Signal<Out, bool>,
    /// it is a prefetch
    pub pf: Signal<Out, bool>,
    /// it is a shared::cta -> shared::cluster copy
    pub s2s: Signal<Out, bool>,
    /// log2 element size of the map
    pub es: Signal<Out, Bits<2>>,
    /// the map's OOB fill bytes
    pub fill: Signal<Out, TmaData16>,
    /// elements of a row - 1
    pub b0m1: Signal<Out, Bits<8>>,

    /// the pixel box rules of an im2col map
    i2c_ck: TmaI2cCheck,
    /// the map's data type is floating point
    float: Signal<Local, bool>,
    /// boxDim[0] * elementSize (a row's bytes)
    rowb: Signal<Local, Bits<24>>,
    /// the image does not decode
    inv: Signal<Local, bool>,
}

impl Logic for TmaDescCheck {
    #[hdl_gen]
    fn update(&mut self) {
        self.kind.next = TmaFaultKind::NoFault;
        self.tensor.next = false;
        self.store.next = false;
        self.pf.next = false;
        self.s2s.next = false;
        self.es.next = 0.into();
        self.fill.next.w0 = 0.into();
        self.fill.next.w1 = 0.into();
        self.fill.next.w2 = 0.into();
        self.fill.next.w3 = 0.into();
        // an im2col row is one pixel: channelsPerPixel elements (PTX 5.5.4); the decoder's
        // dimension steps use it too (not gated by `en`)
        self.b0m1.next = self.desc.val().box0_m1;
        if self.desc.val().im2col {
            self.b0m1.next = self.desc.val().channels_m1;
        }
        self.float.next = false;
        self.rowb.next = 0.into();
        self.inv.next = false;
        self.i2c_ck.rank_m1.next = 0.into();
        self.i2c_ck.lower0.next = 0.into();
        self.i2c_ck.lower1.next = 0.into();
        self.i2c_ck.lower2.next = 0.into();
        self.i2c_ck.upper0.next = 0.into();
        self.i2c_ck.upper1.next = 0.into();
        self.i2c_ck.upper2.next = 0.into();
        self.i2c_ck.gdim1_m1.next = 0.into();
        self.i2c_ck.gdim2_m1.next = 0.into();
        self.i2c_ck.gdim3_m1.next = 0.into();
        if self.en.val() {
            self.tensor.next = (self.cmd.val().kind == TmaCmdKind::TensorLoad)
                || (self.cmd.val().kind == TmaCmdKind::TensorStore)
                || (self.cmd.val().kind == TmaCmdKind::TensorPrefetch);
            self.pf.next = (self.cmd.val().kind == TmaCmdKind::BulkPrefetch)
                || (self.cmd.val().kind == TmaCmdKind::TensorPrefetch);
            self.s2s.next = self.cmd.val().kind == TmaCmdKind::BulkS2S;
            self.store.next = (self.cmd.val().kind == TmaCmdKind::BulkStore)
                || (self.cmd.val().kind == TmaCmdKind::TensorStore);
            self.i2c_ck.rank_m1.next = self.desc.val().rank_m1;
            self.i2c_ck.lower0.next = self.desc.val().lower0;
            self.i2c_ck.lower1.next = self.desc.val().lower1;
            self.i2c_ck.lower2.next = self.desc.val().lower2;
            self.i2c_ck.upper0.next = self.desc.val().upper0;
            self.i2c_ck.upper1.next = self.desc.val().upper1;
            self.i2c_ck.upper2.next = self.desc.val().upper2;
            self.i2c_ck.gdim1_m1.next = self.desc.val().gdim1_m1;
            self.i2c_ck.gdim2_m1.next = self.desc.val().gdim2_m1;
            self.i2c_ck.gdim3_m1.next = self.desc.val().gdim3_m1;
            // element size and float types of the driver's tensorDataType values (0 u8, 1 u16,
            // 2 u32, 3 s32, 4 u64, 5 s64, 6 f16, 7 f32, 8 f64, 9 bf16, 10 f32.ftz, 11 tf32,
            // 12 tf32.ftz); the row's bytes (elements << es: at most 256 x 8)
            self.es.next = 0.into();
            if (self.desc.val().data_type == 1)
                || (self.desc.val().data_type == 6)
                || (self.desc.val().data_type == 9)
            {
                self.es.next = 1.into();
            }
            if (self.desc.val().data_type == 2)
                || (self.desc.val().data_type == 3)
                || (self.desc.val().data_type == 7)
                || (self.desc.val().data_type == 10)
                || (self.desc.val().data_type == 11)
                || (self.desc.val().data_type == 12)
            {
                self.es.next = 2.into();
            }
            if (self.desc.val().data_type == 4)
                || (self.desc.val().data_type == 5)
                || (self.desc.val().data_type == 8)
            {
                self.es.next = 3.into();
            }
            self.float.next = (self.desc.val().data_type >= 6) && (self.desc.val().data_type <= 12);
            self.rowb.next = (bit_cast::<24, 8>(self.b0m1.val()) + 1) << self.es.val();
            // The OOB NaN pattern measured on sm_90 (H200, firmware/programs/tma/oob_nan_fill.ptx,
            // `TensorMap::oob_fill_element`): bytes f7 7f repeated, whatever the element width
            // (0x7ff7 per 16 bits), so one 32-bit word serves every float type.
            self.fill.next.w0 = 0.into();
            self.fill.next.w1 = 0.into();
            self.fill.next.w2 = 0.into();
            self.fill.next.w3 = 0.into();
            if self.desc.val().oob_nan {
                self.fill.next.w0 = 0x7ff7_7ff7.into();
                self.fill.next.w1 = 0x7ff7_7ff7.into();
                self.fill.next.w2 = 0x7ff7_7ff7.into();
                self.fill.next.w3 = 0x7ff7_7ff7.into();
            }
            self.inv.next = false;
            // the header: version, rank, enum values, reserved bits
            if (self.desc.val().version != 1)
                || (self.desc.val().rank_m1 > 4)
                || (self.desc.val().data_type > 12)
                || (self.desc.val().interleave == 3)
                || (self.desc.val().swizzle > 3)
                || (self.desc.val().oob_nan && !self.float.val())
            {
                self.inv.next = true;
            }
            if (self.desc.val().rsvd_24 != 0)
                || (self.desc.val().rsvd_32 != 0)
                || (self.desc.val().rsvd_503 != 0)
                || (self.desc.val().rsvd_626 != 0)
                || (self.desc.val().rsvd_640 != 0)
                || (self.desc.val().rsvd_672 != 0)
                || (self.desc.val().rsvd_704 != 0)
                || (self.desc.val().rsvd_736 != 0)
                || (self.desc.val().rsvd_768 != 0)
                || (self.desc.val().rsvd_800 != 0)
                || (self.desc.val().rsvd_832 != 0)
                || (self.desc.val().rsvd_864 != 0)
                || (self.desc.val().rsvd_896 != 0)
                || (self.desc.val().rsvd_928 != 0)
                || (self.desc.val().rsvd_960 != 0)
                || (self.desc.val().rsvd_992 != 0)
            {
                self.inv.next = true;
            }
            // a tiled map: no im2col fields; an im2col map: no boxDim, the pixel box rules
            // (TmaI2cCheck); both: canonical unused entries, alignment and row rules
            if !self.desc.val().im2col {
                if (self.desc.val().lower0 != 0)
                    || (self.desc.val().lower1 != 0)
                    || (self.desc.val().lower2 != 0)
                    || (self.desc.val().upper0 != 0)
                    || (self.desc.val().upper1 != 0)
                    || (self.desc.val().upper2 != 0)
                    || (self.desc.val().channels_m1 != 0)
                    || (self.desc.val().pixels_m1 != 0)
                {
                    self.inv.next = true;
                }
            } else if self.i2c_ck.bad.val()
                || (self.desc.val().box0_m1 != 0)
                || (self.desc.val().box1_m1 != 0)
                || (self.desc.val().box2_m1 != 0)
                || (self.desc.val().box3_m1 != 0)
                || (self.desc.val().box4_m1 != 0)
            {
                self.inv.next = true;
            }
            if (self.desc.val().rank_m1 < 4)
                && ((self.desc.val().gdim4_m1 != 0)
                    || (self.desc.val().box4_m1 != 0)
                    || (self.desc.val().estride4_m1 != 0)
                    || (self.desc.val().gstride3_lo != 0)
                    || (self.desc.val().gstride3_hi != 0))
            {
                self.inv.next = true;
            }
            if (self.desc.val().rank_m1 < 3)
                && ((self.desc.val().gdim3_m1 != 0)
                    || (self.desc.val().box3_m1 != 0)
                    || (self.desc.val().estride3_m1 != 0)
                    || (self.desc.val().gstride2_lo != 0)
                    || (self.desc.val().gstride2_hi != 0))
            {
                self.inv.next = true;
            }
            if (self.desc.val().rank_m1 < 2)
                && ((self.desc.val().gdim2_m1 != 0)
                    || (self.desc.val().box2_m1 != 0)
                    || (self.desc.val().estride2_m1 != 0)
                    || (self.desc.val().gstride1_lo != 0)
                    || (self.desc.val().gstride1_hi != 0))
            {
                self.inv.next = true;
            }
            if (self.desc.val().rank_m1 < 1)
                && ((self.desc.val().gdim1_m1 != 0)
                    || (self.desc.val().box1_m1 != 0)
                    || (self.desc.val().estride1_m1 != 0)
                    || (self.desc.val().gstride0_lo != 0)
                    || (self.desc.val().gstride0_hi != 0))
            {
                self.inv.next = true;
            }
            if ((self.desc.val().gaddr_lo & 15) != 0)
                || ((self.desc.val().gstride0_lo & 15) != 0)
                || ((self.desc.val().gstride1_lo & 15) != 0)
                || ((self.desc.val().gstride2_lo & 15) != 0)
                || ((self.desc.val().gstride3_lo & 15) != 0)
            {
                self.inv.next = true;
            }
            if self.desc.val().im2col && ((self.rowb.val() & 15) != 0) {
                self.inv.next = true;
            }
            if self.desc.val().interleave == 0 {
                if (self.rowb.val() & 15) != 0 {
                    self.inv.next = true;
                }
                if ((self.desc.val().swizzle == 1) && (self.rowb.val() > 32))
                    || ((self.desc.val().swizzle == 2) && (self.rowb.val() > 64))
                    || ((self.desc.val().swizzle == 3) && (self.rowb.val() > 128))
                {
                    self.inv.next = true;
                }
            }
            // the fault, in the golden model's order
            self.kind.next = TmaFaultKind::NoFault;
            if self.tensor.val() {
                if self.inv.val() {
                    self.kind.next = TmaFaultKind::TensorMapInvalid;
                } else if self.cmd.val().dims != (self.desc.val().rank_m1 + 1) {
                    self.kind.next = TmaFaultKind::TmaCoordOutOfRange;
                } else if self.cmd.val().im2col != self.desc.val().im2col {
                    self.kind.next = TmaFaultKind::TensorMapInvalid;
                } else if self.desc.val().interleave != 0 {
                    self.kind.next = TmaFaultKind::UnsupportedInterleave;
                } else if !self.pf.val() && ((self.cmd.val().smem & 127) != 0) {
                    self.kind.next = TmaFaultKind::TmaMisaligned;
                } else if !self.store.val() && !self.pf.val() && (self.cmd.val().cta_mask == 0) {
                    self.kind.next = TmaFaultKind::ClusterRankOutOfRange;
                }
            } else if ((self.cmd.val().gaddr_lo & 15) != 0)
                || ((self.cmd.val().smem & 15) != 0)
                || ((self.cmd.val().size & 15) != 0)
                || (self.s2s.val() && ((self.cmd.val().dsmem & 15) != 0))
            {
                self.kind.next = TmaFaultKind::TmaMisaligned;
            } else if !self.store.val() && !self.pf.val() && (self.cmd.val().cta_mask == 0) {
                self.kind.next = TmaFaultKind::ClusterRankOutOfRange;
            }
            // a store without a context: refused before anything else (it joined no group)
            if self.noctx.val() {
                self.kind.next = TmaFaultKind::UnsupportedThreads;
            }
        }
    }
}

/// The im2col rules of a tensor map's pixel box (`firmware/src/tensormap.rs`
/// `validate_im2col_box`; cuTensorMapEncodeIm2col, PTX 5.5.4.1), combinational: `bad` when
/// the rank is not 3..=5, a corner is outside the rank's range ([-2^15, 2^15) / [-2^7, 2^7) /
/// [-2^4, 2^4) for rank 3 / 4 / 5), a corner of a dimension the rank does not have is non-zero,
/// or a spatial dimension's box has no area (`globalDim + upper - lower < 1`). A leaf with
/// hand-written Verilog (18-bit signed arithmetic); the iverilog replay checks it.
#[derive(LogicBlock, Default)]
pub struct TmaI2cCheck {
    /// tensorRank - 1
    pub rank_m1: Signal<In, Bits<3>>,
    /// pixelBoxLowerCorner[0..3] (.s16)
    pub lower0: Signal<In, Bits<16>>,
    /// pixelBoxLowerCorner[1]
    pub lower1: Signal<In, Bits<16>>,
    /// pixelBoxLowerCorner[2]
    pub lower2: Signal<In, Bits<16>>,
    /// pixelBoxUpperCorner[0]
    pub upper0: Signal<In, Bits<16>>,
    /// pixelBoxUpperCorner[1]
    pub upper1: Signal<In, Bits<16>>,
    /// pixelBoxUpperCorner[2]
    pub upper2: Signal<In, Bits<16>>,
    /// globalDim[1] - 1
    pub gdim1_m1: Signal<In, Bits<32>>,
    /// globalDim[2] - 1
    pub gdim2_m1: Signal<In, Bits<32>>,
    /// globalDim[3] - 1
    pub gdim3_m1: Signal<In, Bits<32>>,
    /// the pixel box breaks a rule
    pub bad: Signal<Out, bool>,
}

impl Logic for TmaI2cCheck {
    fn update(&mut self) {
        let s16 = |x: Bits<16>| x.to_u64() as u16 as i16 as i64;
        let lo = [s16(self.lower0.val()), s16(self.lower1.val()), s16(self.lower2.val())];
        let up = [s16(self.upper0.val()), s16(self.upper1.val()), s16(self.upper2.val())];
        let gd = [self.gdim1_m1.val().to_u64() as i64, self.gdim2_m1.val().to_u64() as i64, self.gdim3_m1.val().to_u64() as i64];
        let rank = self.rank_m1.val().to_u64() as usize + 1;
        let bad = if !(3..=5).contains(&rank) {
            true
        } else {
            let (a, b) = match rank {
                3 => (-32768, 32767),
                4 => (-128, 127),
                _ => (-16, 15),
            };
            let nsp = rank - 2;
            (0..3).any(|i| {
                if i < nsp {
                    !(a..=b).contains(&lo[i]) || !(a..=b).contains(&up[i]) || gd[i] + up[i] - lo[i] < 0
                } else {
                    lo[i] != 0 || up[i] != 0
                }
            })
        };
        self.bad.next = bad;
    }
    fn connect(&mut self) {
        self.bad.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Custom(
            "\
wire [17:0] ck_t0 = {{2{lower0[15]}}, lower0} - {{2{upper0[15]}}, upper0};
wire [17:0] ck_t1 = {{2{lower1[15]}}, lower1} - {{2{upper1[15]}}, upper1};
wire [17:0] ck_t2 = {{2{lower2[15]}}, lower2} - {{2{upper2[15]}}, upper2};
wire ck_a0 = !ck_t0[17] && ({14'd0, ck_t0} > gdim1_m1);
wire ck_a1 = !ck_t1[17] && ({14'd0, ck_t1} > gdim2_m1);
wire ck_a2 = !ck_t2[17] && ({14'd0, ck_t2} > gdim3_m1);
wire ck_r8 = ((lower0[15:7] == 9'd0) || (lower0[15:7] == 9'h1ff))
   && ((lower1[15:7] == 9'd0) || (lower1[15:7] == 9'h1ff))
   && ((upper0[15:7] == 9'd0) || (upper0[15:7] == 9'h1ff))
   && ((upper1[15:7] == 9'd0) || (upper1[15:7] == 9'h1ff));
wire ck_r5 = ((lower0[15:4] == 12'd0) || (lower0[15:4] == 12'hfff))
   && ((lower1[15:4] == 12'd0) || (lower1[15:4] == 12'hfff))
   && ((lower2[15:4] == 12'd0) || (lower2[15:4] == 12'hfff))
   && ((upper0[15:4] == 12'd0) || (upper0[15:4] == 12'hfff))
   && ((upper1[15:4] == 12'd0) || (upper1[15:4] == 12'hfff))
   && ((upper2[15:4] == 12'd0) || (upper2[15:4] == 12'hfff));
wire ck_z1 = (lower1 == 16'd0) && (upper1 == 16'd0);
wire ck_z2 = (lower2 == 16'd0) && (upper2 == 16'd0);
always @(*) begin
   case (rank_m1)
      3'd2: bad = ck_a0 || !ck_z1 || !ck_z2;
      3'd3: bad = ck_a0 || ck_a1 || !ck_r8 || !ck_z2;
      3'd4: bad = ck_a0 || ck_a1 || ck_a2 || !ck_r5;
      default: bad = 1'b1;
   endcase
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
    use crate::tma::tb::*;
    use hopsync_firmware::tensormap::{TensorMap, TensorMapDataType as Dt, TensorMapMode, TensorMapSpec};

    /// The checks of a tensor load of `img` with the map's rank and mode.
    fn check(c: &mut TmaDescCheck, m: &TensorMap, img: &[u8; 128]) -> TmaFaultKind {
        c.en.next = true;
        c.cmd.next = TmaCmd {
            kind: TmaCmdKind::TensorLoad,
            dims: (m.rank() as u64).into(),
            im2col: m.mode() == TensorMapMode::Im2col,
            cta_mask: 1.into(),
            ..Default::default()
        };
        c.desc.next = TmaDescImage::from_bytes(img);
        c.noctx.next = false;
        comb(c);
        c.kind.val()
    }

    /// Against the golden decoder (`TensorMap::decode`, the validation of
    /// cuTensorMapEncodeTiled / Im2col): random valid maps pass with their element size,
    /// fill and row; a bit flipped in the header fields the unit checks (version, data type,
    /// swizzle, L2 promotion, OOB fill) or in a reserved range makes the map invalid exactly
    /// when the golden decoder refuses it, but for the stride-ordering rules (a data type flip
    /// changes the element size), which the unit does not check (module doc).
    #[test]
    fn checks_agree_with_the_golden_decoder() {
        let mut c = block(TmaDescCheck::default());
        let mut rng = XorShift(0xDEC0_0001);
        let (mut invalid, mut valid) = (0, 0);
        for n in 0..1500 {
            let (m, _) = if n % 3 == 0 { random_im2col_map(&mut rng) } else { random_map(&mut rng) };
            let img = m.encode();
            assert_eq!(check(&mut c, &m, &img), TmaFaultKind::NoFault, "{:?}", m.spec());
            let es = m.element_size().trailing_zeros() as u64;
            let fill = m.oob_fill_element();
            let fill16: Vec<u8> = (0..16).map(|i| fill[i % fill.len()]).collect();
            let row = if m.mode() == TensorMapMode::Im2col { m.spec().channels_per_pixel } else { m.spec().box_dim[0] };
            assert_eq!(
                (c.es.val().to_u64(), c.fill.val().to_bytes().to_vec(), c.b0m1.val().to_u64() + 1),
                (es, fill16, row as u64)
            );
            let fields: [(usize, usize); 7] = [(0, 8), (12, 4), (18, 3), (21, 2), (23, 1), (24, 40), (503, 9)];
            let bit = if rng.pct(30) {
                626 + rng.below(1024 - 626) as usize
            } else {
                let (at, w) = fields[rng.below(7) as usize];
                at + rng.below(w as u64) as usize
            };
            let mut bad = img;
            bad[bit / 8] ^= 1 << (bit % 8);
            let golden = TensorMap::decode(&bad);
            let kind = check(&mut c, &m, &bad);
            match golden {
                Ok(_) => {
                    valid += 1;
                    assert_eq!(kind, TmaFaultKind::NoFault, "bit {bit}")
                }
                Err(e) if e.rule.starts_with("globalStrides[") && e.rule.contains("must be >=") => {
                    // (another rule the unit checks may fail too)
                    assert!(matches!(kind, TmaFaultKind::NoFault | TmaFaultKind::TensorMapInvalid), "bit {bit}: {kind:?}")
                }
                Err(e) => {
                    invalid += 1;
                    assert_eq!(kind, TmaFaultKind::TensorMapInvalid, "bit {bit}: {}", e.rule)
                }
            }
        }
        assert!(invalid > 1000 && valid > 50, "{invalid} {valid}");
        // not enabled: no fault, whatever the head
        c.en.next = false;
        comb(&mut *c);
        assert_eq!(c.kind.val(), TmaFaultKind::NoFault);
    }

    /// Every refusal, in the golden model's order, with the engine working normally after.
    #[test]
    fn refused_commands() {
        let mut tb = Tb::new(RANDOM, 9);
        let m = map(TensorMapSpec::tiled(
            Dt::Float32,
            GBASE,
            vec![64, 32],
            vec![256],
            vec![16, 8],
        ));
        let img = m.0.encode();
        let ld = |smem: u32| tensor(TmaCmdKind::TensorLoad, 2, &[0, 0], smem, 1, 1);
        let bad = |f: &dyn Fn(&mut [u8; 128])| {
            let mut b = img;
            f(&mut b);
            assert!(
                TensorMap::decode(&b).is_err(),
                "the golden decoder refuses it too"
            );
            TmaDescImage::from_bytes(&b)
        };
        use TmaFaultKind as F;
        refused(&mut tb, ld(0), bad(&|b| b[0] = 2), F::TensorMapInvalid); // version
        refused(&mut tb, ld(0), bad(&|b| b[1] |= 0x0e), F::TensorMapInvalid); // rank 8
        refused(
            &mut tb,
            ld(0),
            bad(&|b| b[1] = (b[1] & 0x0f) | 0xd0),
            F::TensorMapInvalid,
        ); // sub-byte type
        refused(
            &mut tb,
            ld(0),
            bad(&|b| b[2] = (b[2] & !0x1c) | (4 << 2)),
            F::TensorMapInvalid,
        ); // swizzle atomicity mode
        let mut int_nan = img;
        int_nan[1] = (int_nan[1] & 0x0f) | 0x30; // INT32 with
        int_nan[2] |= 0x80; // NAN_REQUEST_ZERO_FMA
        assert!(TensorMap::decode(&int_nan).is_err());
        refused(
            &mut tb,
            ld(0),
            TmaDescImage::from_bytes(&int_nan),
            F::TensorMapInvalid,
        );
        refused(&mut tb, ld(0), bad(&|b| b[5] = 1), F::TensorMapInvalid); // reserved
        refused(&mut tb, ld(0), bad(&|b| b[127] = 0x80), F::TensorMapInvalid); // reserved
        refused(&mut tb, ld(0), bad(&|b| b[8] |= 8), F::TensorMapInvalid); // globalAddress % 16
        refused(&mut tb, ld(0), bad(&|b| b[36] |= 4), F::TensorMapInvalid); // stride % 16
        refused(&mut tb, ld(0), bad(&|b| b[24] = 1), F::TensorMapInvalid); // globalDim[2] of a 2-D map
        refused(&mut tb, ld(0), bad(&|b| b[56] = 14), F::TensorMapInvalid); // boxDim[0] = 15 floats: 60 bytes
        refused(&mut tb, ld(0), bad(&|b| b[64] = 1), F::TensorMapInvalid); // im2col field in a tiled map
        refused(&mut tb, ld(0), bad(&|b| b[80] = 1), F::TensorMapInvalid); // reserved
        let mut c = ld(0);
        c.dims = 3.into();
        refused(&mut tb, c, m.1, F::TmaCoordOutOfRange);
        let mut c = ld(0);
        c.im2col = true;
        refused(&mut tb, c, m.1, F::TensorMapInvalid); // im2col instruction, tiled map
        let im = TensorMap::new(TensorMapSpec::im2col(
            Dt::Float16,
            GBASE,
            vec![64, 10, 10, 2],
            vec![128, 1280, 12800],
            vec![-1, -1],
            vec![-1, -1],
            64,
            128,
        ))
        .unwrap();
        let imd = TmaDescImage::from_bytes(&im.encode());
        // a tile-mode instruction on an im2col map; im2col maps breaking their own rules
        refused(&mut tb, tensor(TmaCmdKind::TensorLoad, 4, &[0, 0, 0, 0], 0, 1, 1), imd, F::TensorMapInvalid);
        let im_ld = tensor_m(TmaCmdKind::TensorLoad, &im, &[0, 0, 0, 0], &[1, 1], 0, 1, 1);
        let bad_im = |f: &dyn Fn(&mut [u8; 128])| {
            let mut b = im.encode();
            f(&mut b);
            assert!(TensorMap::decode(&b).is_err(), "the golden decoder refuses it too");
            TmaDescImage::from_bytes(&b)
        };
        refused(
            &mut tb,
            im_ld,
            bad_im(&|b| {
                b[64] = 0x80; // lower[0] = 128: outside rank 4's -128..=127
                b[65] = 0;
            }),
            F::TensorMapInvalid,
        );
        refused(&mut tb, im_ld, bad_im(&|b| b[68] = 1), F::TensorMapInvalid); // lower[2] of a rank-4 map
        refused(&mut tb, im_ld, bad_im(&|b| b[56] = 1), F::TensorMapInvalid); // boxDim[0] set
        refused(&mut tb, im_ld, bad_im(&|b| b[76] = 0x02), F::TensorMapInvalid); // 3 halves: 6 bytes
        refused(
            &mut tb,
            im_ld,
            bad_im(&|b| {
                b[64] = 0x7f; // lower[0] = 127, upper[0] = -128: no area on globalDim[1] = 10
                b[65] = 0;
                b[70] = 0x80;
                b[71] = 0xff;
            }),
            F::TensorMapInvalid,
        );
        let mut il = TensorMapSpec::tiled(
            Dt::Float16,
            GBASE,
            vec![8, 10, 10],
            vec![16, 160],
            vec![8, 2, 2],
        );
        il.interleave = hopsync_firmware::tensormap::TensorMapInterleave::B16;
        let il = TensorMap::new(il).unwrap();
        refused(
            &mut tb,
            tensor(TmaCmdKind::TensorLoad, 3, &[0, 0, 0], 0, 1, 1),
            TmaDescImage::from_bytes(&il.encode()),
            F::UnsupportedInterleave,
        );
        refused(&mut tb, ld(64), m.1, F::TmaMisaligned);
        refused(
            &mut tb,
            tensor(TmaCmdKind::TensorStore, 2, &[0, 0], 0x210, 0, 0),
            m.1,
            F::TmaMisaligned,
        );
        refused(
            &mut tb,
            tensor(TmaCmdKind::TensorLoad, 2, &[0, 0], 0x100, 0, 1),
            m.1,
            F::ClusterRankOutOfRange,
        );
        refused(
            &mut tb,
            bulk_load(GBASE + 8, 0, 64, 1, 1),
            TmaDescImage::default(),
            F::TmaMisaligned,
        );
        refused(
            &mut tb,
            bulk_load(GBASE, 8, 64, 1, 1),
            TmaDescImage::default(),
            F::TmaMisaligned,
        );
        refused(
            &mut tb,
            bulk_load(GBASE, 0, 72, 1, 1),
            TmaDescImage::default(),
            F::TmaMisaligned,
        );
        refused(
            &mut tb,
            bulk_load(GBASE, 0, 64, 0, 1),
            TmaDescImage::default(),
            F::ClusterRankOutOfRange,
        );
        refused(
            &mut tb,
            bulk_store(GBASE + 4, 0, 64),
            TmaDescImage::default(),
            F::TmaMisaligned,
        );
        let cp = (TmaRedOp::Copy, TmaRedType::B32);
        refused(&mut tb, s2s_cmd(0x100, 0x208, 64, 3, 1, cp), TmaDescImage::default(), F::TmaMisaligned);
        refused(&mut tb, s2s_cmd(0x108, 0x200, 64, 3, 1, cp), TmaDescImage::default(), F::TmaMisaligned);
        let mut nomask = s2s_cmd(0x100, 0x200, 64, 3, 1, cp);
        nomask.cta_mask = 0.into();
        refused(&mut tb, nomask, TmaDescImage::default(), F::ClusterRankOutOfRange);
        let mut pf = bulk_load(GBASE + 8, 0, 64, 0, 0);
        pf.kind = TmaCmdKind::BulkPrefetch;
        refused(&mut tb, pf, TmaDescImage::default(), F::TmaMisaligned);
        // work continues, and refused stores left their bulk group
        load_t(&mut tb, &m, &[1, 1], 0x800, 4, 2);
        load_o(&mut tb, &(im, imd), &[3, 2, 5, 1], &[1, 2], 0x2000, 2, 3);
        store_b(&mut tb, GBASE, 0x40, 64);
        tb.push_commit();
        tb.drain();
        assert_eq!((tb.st.faults, tb.st.copies), (34, 2));
        for k in [F::TensorMapInvalid, F::UnsupportedInterleave] {
            assert!(k.name().is_some());
        }
    }
}
