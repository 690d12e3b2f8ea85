//! SmemPort: the shared-memory data side of one CTA: a bank of `2^S` 16-byte beats with byte
//! write enables (16 byte lanes, `RAM<Bits<8>, S>` each: one block RAM per lane on an FPGA), one
//! write and one read per cycle.
//!
//! The mbarrier words live in the MbarrierUnit's own bank; this unit holds the data the warps
//! load and store and the TMA engine fills and drains. Its beat is a 16-byte chunk of the TMA
//! engine's shared-memory line write (`TmaSmemBeat` without the rank, `TmaData16`): the engine
//! writes up to a 128-byte line a cycle, [`SmemLineSplit`] hands it to this port one chunk a
//! cycle (this bank is 16 bytes wide: eight 16-byte banks side by side would take a line a
//! cycle, not done).
//!
//! Ports (synchronous to `clock`; addresses are shared::cta byte addresses, bits 4..4+S pick
//! the beat, the rest is ignored):
//! - `tma_wr` / `tma_wr_valid` / `tma_wr_ready`: this CTA's TMA engine writes a beat (`SmemWrite`:
//!   the CTA top routes only this CTA's beats here). Always ready.
//! - `tma_rd_addr` / `tma_rd_valid` / `tma_rd_ready`, `tma_rd_data`: the TMA engine reads a beat
//!   for a bulk store; the data is valid the cycle after the accepting edge. Always ready.
//! - `remote_wr` / `remote_wr_valid` / `remote_wr_ready`: a beat written by another CTA's TMA
//!   engine (multicast, distributed shared memory); ready when this CTA's TMA does not write.
//! - `local_req` / `local_valid` / `local_ready`, `local_resp`: a warp's access (a beat with a
//!   byte mask: `ld/st.shared` of 1..16 bytes); a write needs the write port (after both TMA
//!   writers), a read the read port (after the TMA reads). A read is answered on `local_resp`
//!   after the accepting edge (no back-pressure on responses).
//!
//! A read of a beat written at the same edge returns the OLD bytes (the RAMs' read-before-write).
//! The bank reads 0 where never written in the Rust model and the Verilator model; real shared
//! memory starts undefined (the golden model flags such reads, not this unit).

use crate::tma::{TmaData16, TmaSmemBeat, TmaSmemWrite};
use rust_hdl::prelude::*;

/// SmemLineSplit: a TMA engine's shared-memory line write ([`TmaSmemWrite`], up to 8 enabled
/// 16-byte chunks) as 16-byte beats ([`TmaSmemBeat`]) for a 16-byte-wide port: one enabled
/// chunk a cycle, lowest first, the line accepted (`line_ready`) with its last chunk.
///
/// Ports: `line` / `line_valid` / `line_ready` (the engine's `smem_wr`); `beat` / `beat_valid`
/// / `beat_ready` (the port's side; `beat` carries the line's CTA mask and reduction, byte
/// mask all set). `done` holds the chunks already accepted.
#[derive(LogicBlock, Default)]
pub struct SmemLineSplit {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// the line write
    pub line: Signal<In, TmaSmemWrite>,
    /// `line` is valid
    pub line_valid: Signal<In, bool>,
    /// `line` is accepted (its last chunk is taken this cycle)
    pub line_ready: Signal<Out, bool>,
    /// the next chunk as a beat
    pub beat: Signal<Out, TmaSmemBeat>,
    /// `beat` is valid
    pub beat_valid: Signal<Out, bool>,
    /// `beat` is taken this cycle
    pub beat_ready: Signal<In, bool>,

    /// the line's chunks already taken
    done: DFF<Bits<8>>,
    /// a Local copy of the line's data (nested field selects need a local)
    data: Signal<Local, crate::tma::TmaData128>,
    /// the chunks not taken yet
    rest: Signal<Local, Bits<8>>,
    /// the lowest of them (one-hot)
    one: Signal<Local, Bits<8>>,
    /// its index
    idx: Signal<Local, Bits<3>>,
    /// it is the line's last
    last: Signal<Local, bool>,
}

impl Logic for SmemLineSplit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, done);
        self.data.next = self.line.val().data;
        self.rest.next = self.line.val().cen & !self.done.q.val();
        self.one.next = self.rest.val() & !(self.rest.val() - 1);
        self.idx.next = 0.into();
        if (self.one.val() & 0xAA) != 0 {
            self.idx.next = self.idx.val() | 1;
        }
        if (self.one.val() & 0xCC) != 0 {
            self.idx.next = self.idx.val() | 2;
        }
        if (self.one.val() & 0xF0) != 0 {
            self.idx.next = self.idx.val() | 4;
        }
        self.last.next = (self.rest.val() & !self.one.val()) == 0;
        self.beat.next.ctam = self.line.val().ctam;
        self.beat.next.addr = self.line.val().addr | (bit_cast::<18, 3>(self.idx.val()) << 4);
        self.beat.next.data = self.data.val().c0;
        if self.idx.val() == 1 {
            self.beat.next.data = self.data.val().c1;
        }
        if self.idx.val() == 2 {
            self.beat.next.data = self.data.val().c2;
        }
        if self.idx.val() == 3 {
            self.beat.next.data = self.data.val().c3;
        }
        if self.idx.val() == 4 {
            self.beat.next.data = self.data.val().c4;
        }
        if self.idx.val() == 5 {
            self.beat.next.data = self.data.val().c5;
        }
        if self.idx.val() == 6 {
            self.beat.next.data = self.data.val().c6;
        }
        if self.idx.val() == 7 {
            self.beat.next.data = self.data.val().c7;
        }
        self.beat.next.mask = 0xFFFF.into();
        self.beat.next.red_op = self.line.val().red_op;
        self.beat.next.red_type = self.line.val().red_type;
        self.beat_valid.next = self.line_valid.val() && (self.rest.val() != 0);
        self.line_ready.next = self.beat_ready.val() && self.last.val();
        if self.line_valid.val() && self.beat_ready.val() {
            if self.last.val() {
                self.done.d.next = 0.into();
            } else {
                self.done.d.next = self.done.q.val() | self.one.val();
            }
        }
    }
}

/// A warp's shared-memory access: one 16-byte beat with byte enables.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SmemReq {
    /// shared::cta byte address (bits 0..=3 are ignored: the mask picks the bytes)
    pub addr: Bits<18>,
    /// a write (else a read)
    pub write: bool,
    /// write data
    pub wdata: TmaData16,
    /// byte write enables
    pub wmask: Bits<16>,
    /// the issuing warp (echoed on the response)
    pub warp: Bits<5>,
}

/// A beat write of a TMA engine (its `TmaSmemWrite` without the CTA rank: the CTA top routes
/// by rank).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SmemWrite {
    /// shared::cta byte address (bits 0..=3 are ignored: the mask picks the bytes)
    pub addr: Bits<18>,
    /// the bytes
    pub data: TmaData16,
    /// byte enables
    pub mask: Bits<16>,
}

/// The answer to a warp's read.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct SmemResp {
    /// a read response this cycle
    pub valid: bool,
    /// the issuing warp
    pub warp: Bits<5>,
    /// the beat read
    pub rdata: TmaData16,
}

/// The shared-memory data port with `2^S` 16-byte beats (1 <= S <= 14: at most 256 KiB).
#[derive(LogicBlock)]
pub struct SmemPort<const S: usize> {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// a beat written by this CTA's TMA engine
    pub tma_wr: Signal<In, SmemWrite>,
    /// `tma_wr` is valid
    pub tma_wr_valid: Signal<In, bool>,
    /// `tma_wr` is accepted (always)
    pub tma_wr_ready: Signal<Out, bool>,
    /// a beat read by this CTA's TMA engine
    pub tma_rd_addr: Signal<In, Bits<18>>,
    /// `tma_rd_addr` is valid
    pub tma_rd_valid: Signal<In, bool>,
    /// `tma_rd_addr` is accepted (always)
    pub tma_rd_ready: Signal<Out, bool>,
    /// the beat of the TMA read accepted at the previous edge
    pub tma_rd_data: Signal<Out, TmaData16>,
    /// a beat written by another CTA's TMA engine
    pub remote_wr: Signal<In, SmemWrite>,
    /// `remote_wr` is valid
    pub remote_wr_valid: Signal<In, bool>,
    /// `remote_wr` is accepted
    pub remote_wr_ready: Signal<Out, bool>,
    /// a warp's access
    pub local_req: Signal<In, SmemReq>,
    /// `local_req` is valid
    pub local_valid: Signal<In, bool>,
    /// `local_req` is accepted
    pub local_ready: Signal<Out, bool>,
    /// read response of the local port
    pub local_resp: Signal<Out, SmemResp>,

    /// byte lane 0
    lane0: RAM<Bits<8>, S>,
    /// byte lane 1
    lane1: RAM<Bits<8>, S>,
    /// byte lane 2
    lane2: RAM<Bits<8>, S>,
    /// byte lane 3
    lane3: RAM<Bits<8>, S>,
    /// byte lane 4
    lane4: RAM<Bits<8>, S>,
    /// byte lane 5
    lane5: RAM<Bits<8>, S>,
    /// byte lane 6
    lane6: RAM<Bits<8>, S>,
    /// byte lane 7
    lane7: RAM<Bits<8>, S>,
    /// byte lane 8
    lane8: RAM<Bits<8>, S>,
    /// byte lane 9
    lane9: RAM<Bits<8>, S>,
    /// byte lane 10
    lane10: RAM<Bits<8>, S>,
    /// byte lane 11
    lane11: RAM<Bits<8>, S>,
    /// byte lane 12
    lane12: RAM<Bits<8>, S>,
    /// byte lane 13
    lane13: RAM<Bits<8>, S>,
    /// byte lane 14
    lane14: RAM<Bits<8>, S>,
    /// byte lane 15
    lane15: RAM<Bits<8>, S>,
    /// a local read was accepted at the last edge
    rd_valid: DFF<bool>,
    /// its warp
    rd_warp: DFF<Bits<5>>,

    /// write port: address
    waddr: Signal<Local, Bits<18>>,
    /// write port: the beat (nested field selects need a local: rust-hdl notes)
    wdata: Signal<Local, TmaData16>,
    /// write port: bytes 0..=3
    wd0: Signal<Local, Bits<32>>,
    /// write port: bytes 4..=7
    wd1: Signal<Local, Bits<32>>,
    /// write port: bytes 8..=11
    wd2: Signal<Local, Bits<32>>,
    /// write port: bytes 12..=15
    wd3: Signal<Local, Bits<32>>,
    /// write port: byte enables
    wmask: Signal<Local, Bits<16>>,
    /// write port: a write this cycle
    wen: Signal<Local, bool>,
    /// read port: address
    raddr: Signal<Local, Bits<18>>,
    /// the local request is a write
    lwrite: Signal<Local, bool>,
    /// the local port is granted
    grant_local: Signal<Local, bool>,
    /// the beat on the read data outputs
    rdata: Signal<Local, TmaData16>,
}

impl<const S: usize> Default for SmemPort<S> {
    fn default() -> Self {
        assert!((1..=14).contains(&S), "the bank holds 2^S beats, 1 <= S <= 14");
        Self {
            clock: Default::default(),
            tma_wr: Default::default(),
            tma_wr_valid: Default::default(),
            tma_wr_ready: Default::default(),
            tma_rd_addr: Default::default(),
            tma_rd_valid: Default::default(),
            tma_rd_ready: Default::default(),
            tma_rd_data: Default::default(),
            remote_wr: Default::default(),
            remote_wr_valid: Default::default(),
            remote_wr_ready: Default::default(),
            local_req: Default::default(),
            local_valid: Default::default(),
            local_ready: Default::default(),
            local_resp: Default::default(),
            lane0: Default::default(),
            lane1: Default::default(),
            lane2: Default::default(),
            lane3: Default::default(),
            lane4: Default::default(),
            lane5: Default::default(),
            lane6: Default::default(),
            lane7: Default::default(),
            lane8: Default::default(),
            lane9: Default::default(),
            lane10: Default::default(),
            lane11: Default::default(),
            lane12: Default::default(),
            lane13: Default::default(),
            lane14: Default::default(),
            lane15: Default::default(),
            rd_valid: Default::default(),
            rd_warp: Default::default(),
            waddr: Default::default(),
            wdata: Default::default(),
            wd0: Default::default(),
            wd1: Default::default(),
            wd2: Default::default(),
            wd3: Default::default(),
            wmask: Default::default(),
            wen: Default::default(),
            raddr: Default::default(),
            lwrite: Default::default(),
            grant_local: Default::default(),
            rdata: Default::default(),
        }
    }
}

impl<const S: usize> Logic for SmemPort<S> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, rd_valid, rd_warp);
        self.lane0.read_clock.next = self.clock.val();
        self.lane0.write_clock.next = self.clock.val();
        self.lane1.read_clock.next = self.clock.val();
        self.lane1.write_clock.next = self.clock.val();
        self.lane2.read_clock.next = self.clock.val();
        self.lane2.write_clock.next = self.clock.val();
        self.lane3.read_clock.next = self.clock.val();
        self.lane3.write_clock.next = self.clock.val();
        self.lane4.read_clock.next = self.clock.val();
        self.lane4.write_clock.next = self.clock.val();
        self.lane5.read_clock.next = self.clock.val();
        self.lane5.write_clock.next = self.clock.val();
        self.lane6.read_clock.next = self.clock.val();
        self.lane6.write_clock.next = self.clock.val();
        self.lane7.read_clock.next = self.clock.val();
        self.lane7.write_clock.next = self.clock.val();
        self.lane8.read_clock.next = self.clock.val();
        self.lane8.write_clock.next = self.clock.val();
        self.lane9.read_clock.next = self.clock.val();
        self.lane9.write_clock.next = self.clock.val();
        self.lane10.read_clock.next = self.clock.val();
        self.lane10.write_clock.next = self.clock.val();
        self.lane11.read_clock.next = self.clock.val();
        self.lane11.write_clock.next = self.clock.val();
        self.lane12.read_clock.next = self.clock.val();
        self.lane12.write_clock.next = self.clock.val();
        self.lane13.read_clock.next = self.clock.val();
        self.lane13.write_clock.next = self.clock.val();
        self.lane14.read_clock.next = self.clock.val();
        self.lane14.write_clock.next = self.clock.val();
        self.lane15.read_clock.next = self.clock.val();
        self.lane15.write_clock.next = self.clock.val();

        // ---- arbitration: writes TMA > remote TMA > warp; reads TMA > warp.
        self.lwrite.next = self.local_req.val().write;
        self.tma_wr_ready.next = true;
        self.tma_rd_ready.next = true;
        self.remote_wr_ready.next = !self.tma_wr_valid.val();
        self.grant_local.next = self.local_valid.val() && !self.tma_rd_valid.val();
        if self.lwrite.val() {
            self.grant_local.next =
                self.local_valid.val() && !self.tma_wr_valid.val() && !self.remote_wr_valid.val();
        }
        self.local_ready.next = self.grant_local.val();

        // ---- the write port
        self.waddr.next = self.local_req.val().addr;
        self.wdata.next = self.local_req.val().wdata;
        self.wmask.next = self.local_req.val().wmask;
        self.wen.next = self.grant_local.val() && self.lwrite.val();
        if self.remote_wr_valid.val() {
            self.waddr.next = self.remote_wr.val().addr;
            self.wdata.next = self.remote_wr.val().data;
            self.wmask.next = self.remote_wr.val().mask;
            self.wen.next = true;
        }
        if self.tma_wr_valid.val() {
            self.waddr.next = self.tma_wr.val().addr;
            self.wdata.next = self.tma_wr.val().data;
            self.wmask.next = self.tma_wr.val().mask;
            self.wen.next = true;
        }

        // ---- the read port
        self.raddr.next = self.local_req.val().addr;
        if self.tma_rd_valid.val() {
            self.raddr.next = self.tma_rd_addr.val();
        }

        // ---- the lanes
        self.wd0.next = self.wdata.val().w0;
        self.wd1.next = self.wdata.val().w1;
        self.wd2.next = self.wdata.val().w2;
        self.wd3.next = self.wdata.val().w3;
        self.lane0.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane0.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane1.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane1.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane2.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane2.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane3.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane3.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane4.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane4.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane5.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane5.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane6.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane6.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane7.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane7.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane8.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane8.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane9.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane9.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane10.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane10.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane11.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane11.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane12.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane12.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane13.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane13.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane14.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane14.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane15.read_address.next = bit_cast::<S, 18>(self.raddr.val() >> 4);
        self.lane15.write_address.next = bit_cast::<S, 18>(self.waddr.val() >> 4);
        self.lane0.write_data.next = bit_cast::<8, 32>(self.wd0.val() >> 0);
        self.lane1.write_data.next = bit_cast::<8, 32>(self.wd0.val() >> 8);
        self.lane2.write_data.next = bit_cast::<8, 32>(self.wd0.val() >> 16);
        self.lane3.write_data.next = bit_cast::<8, 32>(self.wd0.val() >> 24);
        self.lane4.write_data.next = bit_cast::<8, 32>(self.wd1.val() >> 0);
        self.lane5.write_data.next = bit_cast::<8, 32>(self.wd1.val() >> 8);
        self.lane6.write_data.next = bit_cast::<8, 32>(self.wd1.val() >> 16);
        self.lane7.write_data.next = bit_cast::<8, 32>(self.wd1.val() >> 24);
        self.lane8.write_data.next = bit_cast::<8, 32>(self.wd2.val() >> 0);
        self.lane9.write_data.next = bit_cast::<8, 32>(self.wd2.val() >> 8);
        self.lane10.write_data.next = bit_cast::<8, 32>(self.wd2.val() >> 16);
        self.lane11.write_data.next = bit_cast::<8, 32>(self.wd2.val() >> 24);
        self.lane12.write_data.next = bit_cast::<8, 32>(self.wd3.val() >> 0);
        self.lane13.write_data.next = bit_cast::<8, 32>(self.wd3.val() >> 8);
        self.lane14.write_data.next = bit_cast::<8, 32>(self.wd3.val() >> 16);
        self.lane15.write_data.next = bit_cast::<8, 32>(self.wd3.val() >> 24);
        self.lane0.write_enable.next = self.wen.val() && self.wmask.val().get_bit(0);
        self.lane1.write_enable.next = self.wen.val() && self.wmask.val().get_bit(1);
        self.lane2.write_enable.next = self.wen.val() && self.wmask.val().get_bit(2);
        self.lane3.write_enable.next = self.wen.val() && self.wmask.val().get_bit(3);
        self.lane4.write_enable.next = self.wen.val() && self.wmask.val().get_bit(4);
        self.lane5.write_enable.next = self.wen.val() && self.wmask.val().get_bit(5);
        self.lane6.write_enable.next = self.wen.val() && self.wmask.val().get_bit(6);
        self.lane7.write_enable.next = self.wen.val() && self.wmask.val().get_bit(7);
        self.lane8.write_enable.next = self.wen.val() && self.wmask.val().get_bit(8);
        self.lane9.write_enable.next = self.wen.val() && self.wmask.val().get_bit(9);
        self.lane10.write_enable.next = self.wen.val() && self.wmask.val().get_bit(10);
        self.lane11.write_enable.next = self.wen.val() && self.wmask.val().get_bit(11);
        self.lane12.write_enable.next = self.wen.val() && self.wmask.val().get_bit(12);
        self.lane13.write_enable.next = self.wen.val() && self.wmask.val().get_bit(13);
        self.lane14.write_enable.next = self.wen.val() && self.wmask.val().get_bit(14);
        self.lane15.write_enable.next = self.wen.val() && self.wmask.val().get_bit(15);

        // ---- read data: one edge after the read
        self.rdata.next.w0 = bit_cast::<32, 8>(self.lane0.read_data.val())
            | (bit_cast::<32, 8>(self.lane1.read_data.val()) << 8)
            | (bit_cast::<32, 8>(self.lane2.read_data.val()) << 16)
            | (bit_cast::<32, 8>(self.lane3.read_data.val()) << 24);
        self.rdata.next.w1 = bit_cast::<32, 8>(self.lane4.read_data.val())
            | (bit_cast::<32, 8>(self.lane5.read_data.val()) << 8)
            | (bit_cast::<32, 8>(self.lane6.read_data.val()) << 16)
            | (bit_cast::<32, 8>(self.lane7.read_data.val()) << 24);
        self.rdata.next.w2 = bit_cast::<32, 8>(self.lane8.read_data.val())
            | (bit_cast::<32, 8>(self.lane9.read_data.val()) << 8)
            | (bit_cast::<32, 8>(self.lane10.read_data.val()) << 16)
            | (bit_cast::<32, 8>(self.lane11.read_data.val()) << 24);
        self.rdata.next.w3 = bit_cast::<32, 8>(self.lane12.read_data.val())
            | (bit_cast::<32, 8>(self.lane13.read_data.val()) << 8)
            | (bit_cast::<32, 8>(self.lane14.read_data.val()) << 16)
            | (bit_cast::<32, 8>(self.lane15.read_data.val()) << 24);
        self.tma_rd_data.next = self.rdata.val();
        self.rd_valid.d.next = self.grant_local.val() && !self.lwrite.val();
        self.rd_warp.d.next = self.local_req.val().warp;
        self.local_resp.next.valid = self.rd_valid.q.val();
        self.local_resp.next.warp = self.rd_warp.q.val();
        self.local_resp.next.rdata = self.rdata.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{yosys_check_flat, XorShift};

    type Uut = SmemPort<6>;

    #[derive(Default, Clone, Copy)]
    struct In {
        tma_wr: Option<SmemWrite>,
        tma_rd: Option<u64>,
        remote_wr: Option<SmemWrite>,
        local: Option<SmemReq>,
    }

    struct Out {
        remote_ready: bool,
        local_ready: bool,
        tma_rd_data: u128,
        resp: SmemResp,
    }

    fn d16(x: u128) -> TmaData16 {
        TmaData16 {
            w0: ((x & 0xFFFF_FFFF) as u64).into(),
            w1: (((x >> 32) & 0xFFFF_FFFF) as u64).into(),
            w2: (((x >> 64) & 0xFFFF_FFFF) as u64).into(),
            w3: ((x >> 96) as u64).into(),
        }
    }

    fn u128_of(d: TmaData16) -> u128 {
        d.w0.to_u64() as u128
            | (d.w1.to_u64() as u128) << 32
            | (d.w2.to_u64() as u128) << 64
            | (d.w3.to_u64() as u128) << 96
    }

    fn step(u: &mut Uut, i: &In) -> Out {
        u.tma_wr_valid.next = i.tma_wr.is_some();
        u.tma_wr.next = i.tma_wr.unwrap_or_default();
        u.tma_rd_valid.next = i.tma_rd.is_some();
        u.tma_rd_addr.next = i.tma_rd.unwrap_or(0).into();
        u.remote_wr_valid.next = i.remote_wr.is_some();
        u.remote_wr.next = i.remote_wr.unwrap_or_default();
        u.local_valid.next = i.local.is_some();
        u.local_req.next = i.local.unwrap_or_default();
        u.clock.next = false.into();
        assert!(simulate(u, 200));
        assert!(u.tma_wr_ready.val() && u.tma_rd_ready.val());
        let (remote_ready, local_ready) = (u.remote_wr_ready.val(), u.local_ready.val());
        u.clock.next = true.into();
        assert!(simulate(u, 200));
        Out {
            remote_ready,
            local_ready,
            tma_rd_data: u128_of(u.tma_rd_data.val()),
            resp: u.local_resp.val(),
        }
    }

    #[test]
    fn smem_port_check_all_and_yosys() {
        let mut uut = Uut::default();
        uut.connect_all();
        check_all(&uut).unwrap();
        let vlog = generate_verilog(&uut);
        yosys_validate("smem_port", &vlog).unwrap();
        yosys_check_flat("smem_port", &vlog);
    }

    fn write(bank: &mut [u128; 64], addr: u64, data: u128, mask: u64) {
        let i = ((addr >> 4) % 64) as usize;
        for b in 0..16 {
            if (mask >> b) & 1 == 1 {
                let m = 0xFFu128 << (8 * b);
                bank[i] = (bank[i] & !m) | (data & m);
            }
        }
    }

    /// Random traffic on all four ports against a reference bank: priorities, byte masks,
    /// read-before-write, and read data one edge after the read.
    #[test]
    fn random_traffic_matches_a_reference_bank() {
        let mut u = Box::new(Uut::default());
        u.connect_all();
        assert!(simulate(&mut *u, 200));
        let mut bank = [0u128; 64];
        let mut rng = XorShift(0x5EED_5EED_0000_0001);
        let rnd128 = |rng: &mut XorShift| (rng.next() as u128) << 64 | rng.next() as u128;
        let (mut reads, mut writes) = (0, 0);
        for _ in 0..20_000 {
            let addr = |rng: &mut XorShift| rng.below(1 << 18);
            let wr = |rng: &mut XorShift| SmemWrite {
                addr: addr(rng).into(),
                data: d16(rnd128(rng)),
                mask: (if rng.pct(50) { 0xFFFF } else { rng.below(1 << 16) }).into(),
            };
            let i = In {
                tma_wr: rng.pct(25).then(|| wr(&mut rng)),
                tma_rd: rng.pct(25).then(|| addr(&mut rng)),
                remote_wr: rng.pct(25).then(|| wr(&mut rng)),
                local: rng.pct(70).then(|| SmemReq {
                    addr: addr(&mut rng).into(),
                    write: rng.pct(50),
                    wdata: d16(rnd128(&mut rng)),
                    wmask: rng.below(1 << 16).into(),
                    warp: rng.below(32).into(),
                }),
            };
            // reference: reads see the bank before this edge's write
            let want_tma = i.tma_rd.map(|a| bank[((a >> 4) % 64) as usize]);
            let local_ok = match i.local {
                Some(l) if l.write => i.tma_wr.is_none() && i.remote_wr.is_none(),
                Some(_) => i.tma_rd.is_none(),
                None => false,
            };
            let want_local = match i.local {
                Some(l) if local_ok && !l.write => {
                    Some((l.warp.to_u64(), bank[((l.addr.to_u64() >> 4) % 64) as usize]))
                }
                _ => None,
            };
            if let Some(w) = i.tma_wr {
                write(&mut bank, w.addr.to_u64(), u128_of(w.data), w.mask.to_u64());
            } else if let Some(w) = i.remote_wr {
                write(&mut bank, w.addr.to_u64(), u128_of(w.data), w.mask.to_u64());
            } else if let Some(l) = i.local.filter(|l| l.write && local_ok) {
                write(&mut bank, l.addr.to_u64(), u128_of(l.wdata), l.wmask.to_u64());
                writes += 1;
            }
            let o = step(&mut u, &i);
            assert_eq!(o.remote_ready, i.tma_wr.is_none());
            assert_eq!(o.local_ready, local_ok);
            if let Some(d) = want_tma {
                assert_eq!(o.tma_rd_data, d);
            }
            match want_local {
                None => assert!(!o.resp.valid),
                Some((warp, d)) => {
                    reads += 1;
                    assert!(o.resp.valid);
                    assert_eq!((o.resp.warp.to_u64(), u128_of(o.resp.rdata)), (warp, d));
                }
            }
        }
        assert!(reads > 3000 && writes > 3000, "{reads} reads, {writes} writes");
    }

    /// Lines with random chunk enables under random `beat_ready`: each enabled chunk leaves once,
    /// lowest first, as a beat at its address with its bytes, the line's CTA mask and a whole
    /// byte mask; the line is accepted with its last chunk, never before.
    #[test]
    fn line_split_sends_each_enabled_chunk_once() {
        use crate::tma::TmaData128;
        let mut u = SmemLineSplit::default();
        u.connect_all();
        assert!(simulate(&mut u, 200));
        let mut rng = XorShift(0x5_0117_0001);
        let (mut lines, mut beats) = (0, 0);
        let mut line: Option<(TmaSmemWrite, Vec<u64>)> = None;
        for n in 0..4000 {
            if line.is_none() {
                let bytes: Vec<u8> = (0..128).map(|_| rng.below(256) as u8).collect();
                let cen = 1 + rng.below(255);
                let w = TmaSmemWrite { ctam: (1 + rng.below(0xFFFF)).into(), addr: (128 * rng.below(2048)).into(), data: TmaData128::from_bytes(&bytes), cen: cen.into(), ..Default::default() };
                line = Some((w, (0..8).filter(|k| cen >> k & 1 == 1).collect()));
            }
            let (w, left) = line.as_mut().expect("a line");
            let ready = rng.pct(60);
            u.line.next = *w;
            u.line_valid.next = true;
            u.beat_ready.next = ready;
            u.clock.next = false.into();
            assert!(simulate(&mut u, 200));
            assert!(u.beat_valid.val(), "cycle {n}");
            let b = u.beat.val();
            let k = left[0];
            let d = w.data.to_bytes();
            assert_eq!((b.addr.to_u64(), b.ctam, b.mask.to_u64()), (w.addr.to_u64() + 16 * k, w.ctam, 0xFFFF), "cycle {n}: chunk {k}");
            assert_eq!(b.data.to_bytes()[..], d[16 * k as usize..][..16], "cycle {n}: chunk {k}");
            assert_eq!(u.line_ready.val(), ready && left.len() == 1, "cycle {n}");
            if ready {
                left.remove(0);
                beats += 1;
                if left.is_empty() {
                    line = None;
                    lines += 1;
                }
            }
            u.clock.next = true.into();
            assert!(simulate(&mut u, 200));
        }
        assert!(lines > 200 && beats > 1000, "{lines} {beats}");
    }
}
