//! TmaRealign (BA stage Y): the slot in Y gets its bytes: it realigns the input stream to the
//! output unit, fills OOB bytes, and hands the result to the output buffer (loads, shared::cta
//! -> shared::cluster beats) or packs it into sector writes for the write buffer (stores).
//!
//! # Ports
//!
//! - `y` (in): the slot in stage Y ([`crate::tma::ba_x::TmaSlotIter`]).
//! - `smem_rd_data` (in): a store's shared-memory line read (at the edge that moved the slot
//!   into Y; its chunks `rc`, and `rc1` of a pair, are the slot's); `rob_rd` (in): a load's reorder-buffer chunk (the first one popped at that edge);
//!   `rob_row` / `rob_sel` (in): that chunk's whole line and its index in it (a run's chunks).
//! - `ob_push` / `ob_entry`: a line write (or only a job's end marker, for complete_tx) for the
//!   output buffer; `wb_push` / `wb_entry`: a sector write (or only an op's end marker) for the write
//!   buffer. Stage X never moves a slot whose output buffer is full.
//! - `rd_done` / `rd_grp`: a store op's last slot is in Y (its shared-memory reads are done:
//!   what `wait_group.read` waits for) and its bulk-group slot; `store_last`: a store-direction
//!   job's last slot is in Y (S2S included: the decoder holds a refused store's group update).
//!
//! # Behaviour
//!
//! A global row starts at `coords[0] * elementSize mod 16`, so a 16-byte output unit is a window
//! of two input chunks: [`TmaAlign`] takes bytes `off..off+16` of {this chunk, the previous one}
//! and replaces the bytes outside the slot's mask by the fill (zero, or the NaN pattern of
//! `NAN_REQUEST_ZERO_FMA`). The sector packer holds the low half of a 32-byte sector until its
//! high half (or the row's last chunk) comes: a write carries the in-bounds bytes of one sector
//! as its byte mask. A store pair (stage X: two whole chunks of one sector, one line read) is
//! one whole-sector write at once.
//!
//! An output-buffer entry is a shared-memory line write ([`TmaLinePlace`]): a slot's one beat
//! goes to its chunk of the line; a run (stage X's aligned, whole load chunks of one reorder-
//! buffer line into one shared-memory line) goes there whole, each chunk at its swizzled place.

use super::types::*;
use rust_hdl::prelude::*;

/// BA stage Y.
#[derive(LogicBlock)]
pub struct TmaRealign {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// the slot in Y
    pub y: Signal<In, TmaSlot>,
    /// a store's shared-memory line read
    pub smem_rd_data: Signal<In, TmaData128>,
    /// a load's reorder-buffer chunk
    pub rob_rd: Signal<In, TmaData16>,
    /// its line
    pub rob_row: Signal<In, TmaData128>,
    /// its index in the line
    pub rob_sel: Signal<In, Bits<3>>,
    /// an output-buffer entry
    pub ob_push: Signal<Out, bool>,
    /// that entry
    pub ob_entry: Signal<Out, TmaObEntry>,
    /// a write-buffer entry
    pub wb_push: Signal<Out, bool>,
    /// that entry
    pub wb_entry: Signal<Out, TmaWbEntry>,
    /// that entry is its op's last (kept beside the entry: the issuer takes the entry whole)
    pub wb_last: Signal<Out, bool>,
    /// a store op's reads are done
    pub rd_done: Signal<Out, bool>,
    /// its bulk-group slot
    pub rd_grp: Signal<Out, Bits<TMA_SLOT_BITS>>,
    /// a store-direction job's last slot is in Y
    pub store_last: Signal<Out, bool>,

    /// 16 zero bytes
    zero16: Constant<TmaData16>,
    /// realigner / OOB filler
    align: TmaAlign,
    /// the output's place in its shared-memory line
    place: TmaLinePlace,
    /// a store's (first) chunk of its line read
    rd0: TmaChunkPick,
    /// a store pair's second chunk
    rd1: TmaChunkPick,
    /// the previous slot's input bytes
    y_prev: DFF<TmaData16>,
    /// packer: a low half is held
    pk_vld: DFF<bool>,
    /// its bytes
    pk_data: DFF<TmaData16>,
    /// its mask
    pk_mask: DFF<Bits<16>>,
}

impl Default for TmaRealign {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            y: Default::default(),
            smem_rd_data: Default::default(),
            rob_rd: Default::default(),
            rob_row: Default::default(),
            rob_sel: Default::default(),
            ob_push: Default::default(),
            ob_entry: Default::default(),
            wb_push: Default::default(),
            wb_entry: Default::default(),
            wb_last: Default::default(),
            rd_done: Default::default(),
            rd_grp: Default::default(),
            store_last: Default::default(),
            zero16: Constant::new(TmaData16::default()),
            align: Default::default(),
            place: Default::default(),
            rd0: Default::default(),
            rd1: Default::default(),
            y_prev: Default::default(),
            pk_vld: Default::default(),
            pk_data: Default::default(),
            pk_mask: Default::default(),
        }
    }
}

impl Logic for TmaRealign {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, y_prev, pk_vld, pk_data, pk_mask);
        self.align.prev.next = self.y_prev.q.val();
        self.align.off.next = self.y.val().off;
        self.align.mask.next = self.y.val().mask;
        self.align.fill.next = self.y.val().fill;
        self.rd0.line.next = self.smem_rd_data.val();
        self.rd0.sel.next = self.y.val().rc;
        self.rd1.line.next = self.smem_rd_data.val();
        self.rd1.sel.next = self.y.val().rc1;
        if self.y.val().store {
            self.align.cur.next = self.rd0.out.val();
        } else {
            self.align.cur.next = self.rob_rd.val();
        }
        if self.y.val().valid {
            if self.y.val().store {
                self.y_prev.d.next = self.rd0.out.val();
            } else {
                self.y_prev.d.next = self.rob_rd.val();
            }
        }
        self.place.row.next = self.rob_row.val();
        self.place.beat.next = self.align.out.val();
        self.place.run.next = self.y.val().run;
        self.place.c0.next = self.y.val().c0;
        self.place.x.next = self.y.val().x;
        self.place.r0.next = self.rob_sel.val();
        self.place.n.next = self.y.val().n;
        // loads and S2S beats go to OB: the line write, or only the job's end marker
        self.ob_push.next = self.y.val().valid
            && (!self.y.val().store || self.y.val().s2s)
            && (self.y.val().emit || self.y.val().jlast);
        self.ob_entry.next.data_valid = self.y.val().emit;
        self.ob_entry.next.addr = self.y.val().addr & 0x3FF80;
        self.ob_entry.next.data = self.place.out.val();
        self.ob_entry.next.cen = self.place.cen.val();
        self.ob_entry.next.ctam = self.y.val().ctam;
        self.ob_entry.next.jlast = self.y.val().jlast;
        self.ob_entry.next.word = self.y.val().word;
        self.ob_entry.next.tx = self.y.val().tx;
        self.ob_entry.next.red_op = self.y.val().red_op;
        self.ob_entry.next.red_type = self.y.val().red_type;
        // the sector packer (stores)
        self.wb_push.next = false;
        self.wb_entry.next.write = false;
        self.wb_entry.next.addr_lo = self.y.val().ca_lo & 0xFFFF_FFE0_u64;
        self.wb_entry.next.addr_hi = self.y.val().ca_hi;
        self.wb_entry.next.data_lo = self.align.out.val();
        self.wb_entry.next.data_hi = self.zero16.val();
        self.wb_entry.next.mask_lo = self.y.val().mask;
        self.wb_entry.next.mask_hi = 0.into();
        self.wb_entry.next.grp = self.y.val().grp;
        self.wb_entry.next.red_op = self.y.val().red_op;
        self.wb_entry.next.red_type = self.y.val().red_type;
        self.wb_last.next = self.y.val().jlast;
        self.rd_done.next = self.y.val().valid
            && self.y.val().store
            && !self.y.val().s2s
            && self.y.val().jlast;
        if self.y.val().valid && self.y.val().store && !self.y.val().s2s {
            if self.y.val().emit && self.y.val().run {
                // a pair: the whole sector at once (it starts one: nothing is held)
                self.wb_entry.next.write = true;
                self.wb_push.next = true;
                self.wb_entry.next.data_hi = self.rd1.out.val();
                self.wb_entry.next.mask_hi = 0xFFFF.into();
                self.pk_vld.d.next = false;
            } else if self.y.val().emit {
                if !self.y.val().par {
                    if self.y.val().ulast {
                        self.wb_entry.next.write = true;
                        self.wb_push.next = true;
                    } else {
                        self.pk_vld.d.next = true;
                        self.pk_data.d.next = self.align.out.val();
                        self.pk_mask.d.next = self.y.val().mask;
                    }
                } else {
                    self.wb_entry.next.write = true;
                    self.wb_push.next = true;
                    self.wb_entry.next.data_hi = self.align.out.val();
                    self.wb_entry.next.mask_hi = self.y.val().mask;
                    self.pk_vld.d.next = false;
                    if self.pk_vld.q.val() {
                        self.wb_entry.next.data_lo = self.pk_data.q.val();
                        self.wb_entry.next.mask_lo = self.pk_mask.q.val();
                    } else {
                        self.wb_entry.next.data_lo = self.zero16.val();
                        self.wb_entry.next.mask_lo = 0.into();
                    }
                }
            }
            if self.y.val().jlast {
                self.wb_push.next = true;
            }
        }

        self.rd_grp.next = self.y.val().grp;
        self.store_last.next = self.y.val().valid && self.y.val().store && self.y.val().jlast;
    }
}


/// The byte realigner and OOB filler, combinational: `out` = bytes `off..off+16` of
/// `{cur, lo}` (lo = `prev`, or `cur` when `off` is 0), with the bytes whose `mask` bit is clear
/// replaced by `fill`. A leaf with hand-written Verilog: a 16-byte funnel shift in hdl_gen is a
/// bit-serial shift in the rust-hdl simulator (BigUint per shift); the iverilog replay checks
/// the Verilog against this Rust model.
#[derive(LogicBlock, Default)]
pub struct TmaAlign {
    /// the previous 16 bytes of the stream
    pub prev: Signal<In, TmaData16>,
    /// the current 16 bytes
    pub cur: Signal<In, TmaData16>,
    /// byte offset of the window
    pub off: Signal<In, Bits<4>>,
    /// bytes taken from the window (else from `fill`)
    pub mask: Signal<In, Bits<16>>,
    /// fill bytes
    pub fill: Signal<In, TmaData16>,
    /// the result
    pub out: Signal<Out, TmaData16>,
}

impl Logic for TmaAlign {
    fn update(&mut self) {
        let off = self.off.val().to_u64() as u32;
        let cur = self.cur.val().to_u128();
        let lo = if off == 0 { cur } else { self.prev.val().to_u128() };
        let win = if off == 0 { lo } else { (lo >> (8 * off)) | (cur << (128 - 8 * off)) };
        let mask = self.mask.val().to_u64();
        let mut m: u128 = 0;
        for i in 0..16 {
            if (mask >> i) & 1 == 1 {
                m |= 0xFFu128 << (8 * i);
            }
        }
        let fill = self.fill.val().to_u128();
        self.out.next = TmaData16::from_u128((win & m) | (fill & !m));
    }
    fn connect(&mut self) {
        self.out.connect();
    }
    fn hdl(&self) -> Verilog {
        let m: Vec<String> = (0..16).rev().map(|i| format!("{{8{{mask[{i}]}}}}")).collect();
        Verilog::Custom(format!(
            "\
wire [127:0] al_lo = (off == 4'd0) ? cur : prev;
wire [255:0] al_win = {{cur, al_lo}} >> {{off, 3'b000}};
wire [127:0] al_m = {{{}}};
always @(*) begin
   out = (al_win[127:0] & al_m) | (fill & ~al_m);
end
",
            m.join(", ")
        ))
    }
}

/// One 16-byte chunk of a 128-byte line (`out` = chunk `sel` of `line`), combinational: a
/// store's chunk of its line read. A leaf with hand-written Verilog (as [`TmaAlign`]).
#[derive(LogicBlock, Default)]
pub struct TmaChunkPick {
    /// the line
    pub line: Signal<In, TmaData128>,
    /// the chunk
    pub sel: Signal<In, Bits<3>>,
    /// its 16 bytes
    pub out: Signal<Out, TmaData16>,
}

impl Logic for TmaChunkPick {
    fn update(&mut self) {
        let k = self.sel.val().to_u64() as usize;
        self.out.next = TmaData16::from_bytes(&self.line.val().to_bytes()[16 * k..16 * k + 16]);
    }
    fn connect(&mut self) {
        self.out.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Custom("always @(*) begin\n   out = line[{sel, 7'b0000000} +: 128];\nend\n".into())
    }
}

/// A shared-memory line write's data and chunk enables, combinational. Not a run: the beat in
/// chunk `c0` (`x` is 0; the beat is in every chunk, only `c0` enabled). A run of `n` chunks of
/// a reorder-buffer line, the first at `r0`, into chunks `c0..c0+n` of the dense line, each
/// swizzled to `c ^ x` (PTX 5.5.7): line chunk `p` is enabled when `k = (p ^ x) - c0` (mod 8)
/// is below `n`, and takes row chunk `r0 + k`. A leaf with hand-written Verilog (as
/// [`TmaAlign`]): a variable chunk select in hdl_gen is a chain of 8 comparisons per chunk; the
/// iverilog replay checks the Verilog against this Rust model.
#[derive(LogicBlock, Default)]
pub struct TmaLinePlace {
    /// the reorder-buffer line (a run's source)
    pub row: Signal<In, TmaData128>,
    /// the one beat (not a run)
    pub beat: Signal<In, TmaData16>,
    /// a run
    pub run: Signal<In, bool>,
    /// the first chunk's index in the dense line
    pub c0: Signal<In, Bits<3>>,
    /// the swizzle's XOR on chunk indices
    pub x: Signal<In, Bits<3>>,
    /// the run's first chunk in `row`
    pub r0: Signal<In, Bits<3>>,
    /// chunks (1..=8)
    pub n: Signal<In, Bits<4>>,
    /// the line's data
    pub out: Signal<Out, TmaData128>,
    /// its chunk enables
    pub cen: Signal<Out, Bits<8>>,
}

impl Logic for TmaLinePlace {
    fn update(&mut self) {
        let (c0, x, r0, n) = (self.c0.val().to_u64(), self.x.val().to_u64(), self.r0.val().to_u64(), self.n.val().to_u64());
        let row = self.row.val().to_bytes();
        let beat = self.beat.val().to_bytes();
        let mut out = [0u8; 128];
        let mut cen = 0u64;
        for p in 0..8u64 {
            let k = ((p ^ x) + 8 - c0) & 7;
            let src = if self.run.val() { &row[16 * ((r0 + k) & 7) as usize..][..16] } else { &beat[..] };
            out[16 * p as usize..16 * p as usize + 16].copy_from_slice(src);
            if k < n {
                cen |= 1 << p;
            }
        }
        self.out.next = TmaData128::from_bytes(&out);
        self.cen.next = cen.into();
    }
    fn connect(&mut self) {
        self.out.connect();
        self.cen.connect();
    }
    fn hdl(&self) -> Verilog {
        let mut v = String::new();
        for p in 0..8 {
            v += &format!("wire [2:0] lp_k{p} = (3'd{p} ^ x) - c0;\nwire [2:0] lp_s{p} = lp_k{p} + r0;\n");
        }
        v += "always @(*) begin\n";
        for p in 0..8 {
            let hi = 128 * p + 127;
            let lo = 128 * p;
            v += &format!("   out[{hi}:{lo}] = run ? row[{{lp_s{p}, 7'b0000000}} +: 128] : beat;\n   cen[{p}] = {{1'b0, lp_k{p}}} < n;\n");
        }
        v += "end\n";
        Verilog::Custom(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::XorShift;
    use crate::tma::tb::*;

    fn rand16(rng: &mut XorShift) -> TmaData16 {
        let b: Vec<u8> = (0..16).map(|_| rng.below(256) as u8).collect();
        TmaData16::from_bytes(&b)
    }

    /// The realigner byte by byte: output byte i is byte `off + i` of the stream {prev, cur}
    /// (cur alone when `off` is 0), or the fill byte where the mask bit is clear.
    #[test]
    fn align_takes_a_window_of_two_chunks() {
        let mut a = block(TmaAlign::default());
        let mut rng = XorShift(0xA119_0001);
        for _ in 0..3000 {
            let (prev, cur, fill) = (rand16(&mut rng), rand16(&mut rng), rand16(&mut rng));
            let (off, mask) = (rng.below(16), rng.below(1 << 16));
            a.prev.next = prev;
            a.cur.next = cur;
            a.fill.next = fill;
            a.off.next = off.into();
            a.mask.next = mask.into();
            comb(&mut *a);
            let stream: Vec<u8> = if off == 0 { cur.to_bytes().to_vec() } else { [prev.to_bytes(), cur.to_bytes()].concat() };
            let want: Vec<u8> = (0..16)
                .map(|i| if mask >> i & 1 == 1 { stream[(off as usize + i) % stream.len()] } else { fill.to_bytes()[i] })
                .collect();
            assert_eq!(a.out.val().to_bytes().to_vec(), want, "off {off} mask {mask:#x}");
        }
    }

    /// The line placer against the golden swizzle: a run of `n` chunks of a line from `r0`, into
    /// a dense line at `c0`, lands chunk `i` at the swizzled place of dense chunk `c0 + i`
    /// (`tensormap::swizzle_offset`, every mode and line of the 1024-byte pattern), and enables
    /// exactly those chunks; one beat lands in its chunk alone.
    #[test]
    fn line_place_is_the_swizzle_of_a_run() {
        use hopsync_firmware::tensormap::{swizzle_offset, TensorMapSwizzle as Sw};
        let mut lp = block(TmaLinePlace::default());
        let mut rng = XorShift(0x11E_0001);
        for _ in 0..2000 {
            let row: Vec<u8> = (0..128).map(|_| rng.below(256) as u8).collect();
            let beat = rand16(&mut rng);
            let swz = [Sw::None, Sw::B32, Sw::B64, Sw::B128][rng.below(4) as usize];
            let line = rng.below(8) * 128 + 1024 * rng.below(4);
            let (c0, r0) = (rng.below(8), rng.below(8));
            let n = 1 + rng.below(8 - c0.max(r0));
            let x = (swizzle_offset(swz, line).unwrap() ^ line) >> 4 & 7;
            let run = rng.pct(70);
            lp.row.next = TmaData128::from_bytes(&row);
            lp.beat.next = beat;
            lp.run.next = run;
            lp.c0.next = c0.into();
            lp.x.next = if run { x } else { 0 }.into();
            lp.r0.next = r0.into();
            lp.n.next = if run { n } else { 1 }.into();
            comb(&mut *lp);
            let out = lp.out.val().to_bytes();
            let mut want_cen = 0u64;
            for i in 0..if run { n } else { 1 } {
                let to = if run { (swizzle_offset(swz, line + 16 * (c0 + i)).unwrap() - line) / 16 } else { c0 };
                assert!(to < 8, "the swizzle keeps a chunk in its line");
                want_cen |= 1 << to;
                let src = if run { &row[16 * (r0 + i) as usize..][..16] } else { &beat.to_bytes()[..] };
                assert_eq!(&out[16 * to as usize..][..16], src, "{swz:?} line {line:#x} c0 {c0} r0 {r0} n {n} chunk {i}");
            }
            assert_eq!(lp.cen.val().to_u64(), want_cen, "{swz:?} line {line:#x} c0 {c0} n {n}");
        }
    }

    /// The sector packer: a store row's chunks become one write per 32-byte sector with the
    /// bytes and mask of both halves (a lone low or high half alone), the op's end marker after
    /// its last chunk, and `rd_done` with it; a load slot goes to OB with its beat.
    #[test]
    fn packer_writes_whole_sectors() {
        let mut y = block(TmaRealign::default());
        let slot = |par: bool, ulast: bool, jlast: bool, ca: u64| TmaSlot {
            valid: true,
            store: true,
            emit: true,
            jlast,
            mask: 0xFFFF.into(),
            ca_lo: ca.into(),
            par,
            ulast,
            grp: 6.into(),
            ..Default::default()
        };
        // chunks at 0x100 (low), 0x110 (high), 0x120 (low, the row's last) and the op's end
        let mut pushes = vec![];
        for (k, s) in [slot(false, false, false, 0x100), slot(true, false, false, 0x110), slot(false, true, true, 0x120)].into_iter().enumerate() {
            y.y.next = s;
            // the line read: the slot's chunk (rc 0) holds k + 1
            let mut line = [0xEEu8; 128];
            line[..16].fill(k as u8 + 1);
            y.smem_rd_data.next = TmaData128::from_bytes(&line);
            y.low();
            assert!(!y.ob_push.val());
            if y.wb_push.val() {
                let e = y.wb_entry.val();
                pushes.push((e.write, e.addr_lo.to_u64(), e.mask_lo.to_u64(), e.mask_hi.to_u64(), e.data_lo.to_bytes()[0], e.data_hi.to_bytes()[0], y.wb_last.val()));
            }
            assert_eq!((y.rd_done.val(), y.store_last.val()), (k == 2, k == 2));
            y.edge();
        }
        assert_eq!(pushes, vec![(true, 0x100, 0xFFFF, 0xFFFF, 1, 2, false), (true, 0x120, 0xFFFF, 0, 3, 0, true)]);
        // a load beat: to OB with the ROB's chunk, in its chunk (4) of the line
        y.rob_rd.next = TmaData16::from_bytes(&[9; 16]);
        y.y.next = TmaSlot { valid: true, emit: true, mask: 0xFFFF.into(), addr: 0x40.into(), c0: 4.into(), n: 1.into(), ctam: 5.into(), ..Default::default() };
        y.low();
        let e = y.ob_entry.val();
        assert!(y.ob_push.val() && !y.wb_push.val());
        assert_eq!((e.data.to_bytes()[64], e.addr.to_u64(), e.cen.to_u64(), e.ctam.to_u64(), e.data_valid), (9, 0, 1 << 4, 5, true));
    }
}
