//! TmaIssuer: the TMA engine's global-memory request port: line reads of load rows and the
//! sector writes of the write buffer, one request per cycle.
//!
//! # Ports
//!
//! - `nr_load` / `nr_in` (in): a load row's reads from the row iterator, into the next-row
//!   register `nr`; `nr_ready`: `nr` can take one this cycle (it is empty, or its row starts
//!   issuing now).
//! - `wb_head` / `wb_valid` (in): the write buffer's head ([`crate::tma::wbuf::TmaWriteBuf`]).
//! - `tag`, `rob_full` (in): the next reorder-buffer entry and whether every one is allocated
//!   ([`crate::tma::rob::TmaRob`]).
//! - `gmem_req` / `gmem_req_valid` / `gmem_req_ready`, `gmem_resp_valid`: the engine's port; a
//!   response of either kind returns a credit.
//! - `rd_issue` / `want`: a read is accepted this cycle, and the 16-byte chunks of its line that
//!   its row wants (bit k: bytes 16k..16k+15 of the 128-byte line), for the reorder buffer.
//! - `wr_issue`: the write buffer's head write is accepted this cycle.
//! - `idle`: no row to issue and nothing in flight.
//!
//! # Behaviour
//!
//! A row is issued as one read per `request_bytes`-aligned block (32, 64 or 128 bytes: a
//! constructor parameter; sm90.toml `[tma] request_bytes`) covering exactly its in-bounds bytes
//! (chunks `p..=cb` of its 16-byte aligned span: OOB elements never cause a request), tagged with
//! its reorder-buffer entry. The request names the 128-byte line and the 32-byte sectors of it
//! the block's wanted chunks fall in; with 32-byte requests this is one sector a request. A
//! write of the write buffer (one 32-byte sector) has priority over reads. Rate: at most
//! `max_outstanding` requests (reads and writes) in flight and a token bucket of
//! `bytes_per_cycle` (constructor parameters; a request costs 32 bytes per sector, the bucket
//! holds two requests of `request_bytes`).

use super::types::*;
use rust_hdl::prelude::*;

/// The global-memory request port.
#[derive(LogicBlock)]
pub struct TmaIssuer {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// a load row for `nr`
    pub nr_load: Signal<In, bool>,
    /// that row
    pub nr_in: Signal<In, TmaIss>,
    /// `nr` can take a row this cycle
    pub nr_ready: Signal<Out, bool>,
    /// the write buffer's head
    pub wb_head: Signal<In, TmaWbEntry>,
    /// the write buffer holds an entry
    pub wb_valid: Signal<In, bool>,
    /// the next reorder-buffer entry
    pub tag: Signal<In, Bits<8>>,
    /// every reorder-buffer entry is allocated
    pub rob_full: Signal<In, bool>,
    /// global-memory request
    pub gmem_req: Signal<Out, TmaGmemReq>,
    /// `gmem_req` is valid
    pub gmem_req_valid: Signal<Out, bool>,
    /// `gmem_req` is accepted this cycle
    pub gmem_req_ready: Signal<In, bool>,
    /// a global-memory response (either kind) this cycle
    pub gmem_resp_valid: Signal<In, bool>,
    /// a read is accepted this cycle
    pub rd_issue: Signal<Out, bool>,
    /// the chunks of its line its row wants
    pub want: Signal<Out, Bits<8>>,
    /// a write is accepted this cycle
    pub wr_issue: Signal<Out, bool>,
    /// no row to issue, nothing in flight
    pub idle: Signal<Out, bool>,

    /// `max_outstanding`
    max_out: Constant<Bits<9>>,
    /// `bytes_per_cycle`
    bpc: Constant<Bits<9>>,
    /// the bucket's capacity: two requests of `request_bytes`
    cap: Constant<Bits<9>>,
    /// chunks of a request block less one (`request_bytes / 16 - 1`)
    rq_m: Constant<Bits<3>>,
    /// 7 (the last chunk of a line)
    seven: Constant<Bits<3>>,
    /// eight ones, 9 bits wide
    ff9: Constant<Bits<9>>,
    /// eight ones
    ff8: Constant<Bits<8>>,
    /// 16 zero bytes
    zero16: Constant<TmaData16>,
    /// the next row for the issuer
    nr: DFF<TmaIss>,
    /// the row being issued
    iss: DFF<TmaIss>,
    /// requests in flight
    outstanding: DFF<Bits<9>>,
    /// request token bucket (bytes)
    bucket: DFF<Bits<9>>,
    /// the candidate row (the one being issued, else the next one)
    c: Signal<Local, TmaIss>,
    /// its next chunk's address, low half
    c_a: Signal<Local, Bits<32>>,
    /// that chunk's place in its line
    pos: Signal<Local, Bits<3>>,
    /// the chunks after it in its request block
    span: Signal<Local, Bits<3>>,
    /// the row's chunks after it
    left: Signal<Local, Bits<16>>,
    /// the chunks after it this request takes
    n: Signal<Local, Bits<3>>,
    /// the request's last chunk's place in the line
    last: Signal<Local, Bits<3>>,
    /// the request's chunks from `pos` up (9 bits: the shift's overflow is dropped)
    lo9: Signal<Local, Bits<9>>,
    /// the request's chunks
    w8: Signal<Local, Bits<8>>,
    /// the request's sectors
    sect: Signal<Local, Bits<4>>,
    /// the request's cost in bytes (32 per sector)
    cost: Signal<Local, Bits<9>>,
    /// the address after the request's chunks
    a_nx: Signal<Local, Bits<32>>,
    /// a read may go this cycle (credits and tokens)
    may_rd: Signal<Local, bool>,
    /// WB presents a write it may issue
    wr_want: Signal<Local, bool>,
    /// bucket + bytes_per_cycle, capped
    bk_add: Signal<Local, Bits<9>>,
}

impl TmaIssuer {
    /// An issuer with at most `max_outstanding` requests in flight, `bytes_per_cycle` (1..=128)
    /// of request bandwidth and reads of `request_bytes` (32, 64 or 128) blocks.
    pub fn new(max_outstanding: u32, bytes_per_cycle: u32, request_bytes: u32) -> Self {
        assert!((1..=128).contains(&bytes_per_cycle) && [32, 64, 128].contains(&request_bytes));
        Self {
            clock: Default::default(),
            nr_load: Default::default(),
            nr_in: Default::default(),
            nr_ready: Default::default(),
            wb_head: Default::default(),
            wb_valid: Default::default(),
            tag: Default::default(),
            rob_full: Default::default(),
            gmem_req: Default::default(),
            gmem_req_valid: Default::default(),
            gmem_req_ready: Default::default(),
            gmem_resp_valid: Default::default(),
            rd_issue: Default::default(),
            want: Default::default(),
            wr_issue: Default::default(),
            idle: Default::default(),
            max_out: Constant::new((max_outstanding as u64).into()),
            bpc: Constant::new((bytes_per_cycle as u64).into()),
            cap: Constant::new((2 * request_bytes as u64).into()),
            rq_m: Constant::new((request_bytes as u64 / 16 - 1).into()),
            seven: Constant::new(7.into()),
            ff9: Constant::new(0xFF.into()),
            ff8: Constant::new(0xFF.into()),
            zero16: Constant::new(TmaData16::default()),
            nr: Default::default(),
            iss: Default::default(),
            outstanding: Default::default(),
            bucket: Default::default(),
            c: Default::default(),
            c_a: Default::default(),
            pos: Default::default(),
            span: Default::default(),
            left: Default::default(),
            n: Default::default(),
            last: Default::default(),
            lo9: Default::default(),
            w8: Default::default(),
            sect: Default::default(),
            cost: Default::default(),
            a_nx: Default::default(),
            may_rd: Default::default(),
            wr_want: Default::default(),
            bk_add: Default::default(),
        }
    }
}

impl Logic for TmaIssuer {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, nr, iss, outstanding, bucket);
        // the candidate: the row being issued, else the next row
        if self.iss.q.val().valid {
            self.c.next = self.iss.q.val();
        } else {
            self.c.next = self.nr.q.val();
        }
        // the request: the candidate's chunks from its next one to the end of its request block
        // or of the row, whichever comes first
        self.c_a.next = self.c.val().a_lo;
        self.pos.next = bit_cast::<3, 32>(self.c_a.val() >> 4);
        self.span.next = (self.pos.val() | self.rq_m.val()) - self.pos.val();
        self.left.next = self.c.val().cb - self.c.val().p;
        if self.left.val() < bit_cast::<16, 3>(self.span.val()) {
            self.n.next = bit_cast::<3, 16>(self.left.val());
        } else {
            self.n.next = self.span.val();
        }
        self.last.next = self.pos.val() + self.n.val();
        self.lo9.next = self.ff9.val() << self.pos.val();
        self.w8.next = bit_cast::<8, 9>(self.lo9.val()) & (self.ff8.val() >> (self.seven.val() - self.last.val()));
        self.sect.next = 0.into();
        self.sect.next = self
            .sect
            .val()
            .replace_bit(0, self.w8.val().get_bit(0) || self.w8.val().get_bit(1))
            .replace_bit(1, self.w8.val().get_bit(2) || self.w8.val().get_bit(3))
            .replace_bit(2, self.w8.val().get_bit(4) || self.w8.val().get_bit(5))
            .replace_bit(3, self.w8.val().get_bit(6) || self.w8.val().get_bit(7));
        self.cost.next = 0.into();
        if self.sect.val().get_bit(0) {
            self.cost.next = self.cost.val() + 32;
        }
        if self.sect.val().get_bit(1) {
            self.cost.next = self.cost.val() + 32;
        }
        if self.sect.val().get_bit(2) {
            self.cost.next = self.cost.val() + 32;
        }
        if self.sect.val().get_bit(3) {
            self.cost.next = self.cost.val() + 32;
        }
        // a write of WB (32 bytes) has priority over reads
        self.wr_want.next = self.wb_valid.val()
            && self.wb_head.val().write
            && (self.outstanding.q.val() < self.max_out.val())
            && (self.bucket.q.val() >= 32);
        self.may_rd.next = (self.outstanding.q.val() < self.max_out.val()) && (self.bucket.q.val() >= self.cost.val());
        self.gmem_req_valid.next =
            self.wr_want.val() || (self.c.val().valid && self.may_rd.val() && !self.rob_full.val());
        self.rd_issue.next = !self.wr_want.val()
            && self.c.val().valid
            && self.may_rd.val()
            && !self.rob_full.val()
            && self.gmem_req_ready.val();
        self.wr_issue.next = self.wr_want.val() && self.gmem_req_ready.val();
        if self.wr_want.val() {
            self.gmem_req.next.addr_lo = self.wb_head.val().addr_lo;
            self.gmem_req.next.addr_hi = self.wb_head.val().addr_hi;
            self.gmem_req.next.sect = 0.into();
            self.gmem_req.next.tag = bit_cast::<8, 7>(self.wb_head.val().grp);
            self.gmem_req.next.write = true;
            self.gmem_req.next.data_lo = self.wb_head.val().data_lo;
            self.gmem_req.next.data_hi = self.wb_head.val().data_hi;
            self.gmem_req.next.mask_lo = self.wb_head.val().mask_lo;
            self.gmem_req.next.mask_hi = self.wb_head.val().mask_hi;
            self.gmem_req.next.red_op = self.wb_head.val().red_op;
            self.gmem_req.next.red_type = self.wb_head.val().red_type;
        } else {
            self.gmem_req.next.addr_lo = self.c_a.val() & 0xFFFF_FF80_u64;
            self.gmem_req.next.addr_hi = self.c.val().a_hi;
            self.gmem_req.next.sect = self.sect.val();
            self.gmem_req.next.tag = self.tag.val();
            self.gmem_req.next.write = false;
            self.gmem_req.next.data_lo = self.zero16.val();
            self.gmem_req.next.data_hi = self.zero16.val();
            self.gmem_req.next.mask_lo = 0.into();
            self.gmem_req.next.mask_hi = 0.into();
            self.gmem_req.next.red_op = TmaRedOp::Copy;
            self.gmem_req.next.red_type = TmaRedType::B32;
        }
        self.want.next = self.w8.val();
        // the row advances past the request's chunks; nr is taken when its row starts issuing
        self.a_nx.next = self.c_a.val() + ((bit_cast::<32, 3>(self.n.val()) + 1) << 4);
        if self.rd_issue.val() {
            if !self.iss.q.val().valid {
                self.nr.d.next.valid = false;
            }
            self.iss.d.next.cb = self.c.val().cb;
            self.iss.d.next.a_lo = self.a_nx.val();
            if self.a_nx.val() < self.c_a.val() {
                self.iss.d.next.a_hi = self.c.val().a_hi + 1;
            } else {
                self.iss.d.next.a_hi = self.c.val().a_hi;
            }
            self.iss.d.next.p = self.c.val().p + bit_cast::<16, 3>(self.n.val()) + 1;
            self.iss.d.next.valid = self.left.val() > bit_cast::<16, 3>(self.n.val());
        }
        self.nr_ready.next = !self.nr.q.val().valid || (self.rd_issue.val() && !self.iss.q.val().valid);
        if self.nr_load.val() {
            self.nr.d.next = self.nr_in.val();
        }
        // credits and the token bucket
        if (self.rd_issue.val() || self.wr_issue.val()) && !self.gmem_resp_valid.val() {
            self.outstanding.d.next = self.outstanding.q.val() + 1;
        }
        if !(self.rd_issue.val() || self.wr_issue.val()) && self.gmem_resp_valid.val() {
            self.outstanding.d.next = self.outstanding.q.val() - 1;
        }
        self.bk_add.next = self.bucket.q.val() + self.bpc.val();
        if self.bk_add.val() > self.cap.val() {
            self.bk_add.next = self.cap.val();
        }
        if self.wr_issue.val() {
            self.bucket.d.next = self.bk_add.val() - 32;
        } else if self.rd_issue.val() {
            self.bucket.d.next = self.bk_add.val() - self.cost.val();
        } else {
            self.bucket.d.next = self.bk_add.val();
        }
        self.idle.next = !self.nr.q.val().valid
            && !self.iss.q.val().valid
            && (self.outstanding.q.val() == 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tma::tb::*;
    use hopsync_firmware::tensormap::{TensorMapDataType as Dt, TensorMapSpec};

    fn row(addr: u64, p: u64, cb: u64) -> TmaIss {
        TmaIss {
            valid: true,
            a_lo: (addr & 0xFFFF_FFF0).into(),
            a_hi: (addr >> 32).into(),
            p: p.into(),
            cb: cb.into(),
        }
    }

    /// One cycle; returns the request (address, write, tag, wanted chunks) if accepted; a
    /// read's address is its line's plus 32 x its lowest sector (the sectors are checked
    /// against the wanted chunks).
    fn cyc(u: &mut TmaIssuer, nr: Option<TmaIss>, wb: Option<TmaWbEntry>, ready: bool, resp: bool) -> Option<(u64, bool, u64, u64)> {
        u.nr_load.next = false;
        u.wb_valid.next = wb.is_some();
        u.wb_head.next = wb.unwrap_or_default();
        u.gmem_req_ready.next = ready;
        u.gmem_resp_valid.next = resp;
        u.rob_full.next = false;
        u.low();
        // a row enters when the register can take it
        if let Some(r) = nr {
            if u.nr_ready.val() {
                u.nr_load.next = true;
                u.nr_in.next = r;
                u.low();
            }
        }
        let g = u.gmem_req.val();
        let out = (u.gmem_req_valid.val() && ready).then(|| {
            assert_eq!((u.rd_issue.val(), u.wr_issue.val()), (!g.write, g.write));
            let a = g.addr_lo.to_u64() | g.addr_hi.to_u64() << 32;
            if g.write {
                return (a, true, g.tag.to_u64(), 0);
            }
            let (w, sect) = (u.want.val().to_u64(), g.sect.to_u64());
            let want_sect = (0..4).filter(|k| w >> (2 * k) & 3 != 0).fold(0, |m, k| m | 1 << k);
            assert_eq!(sect, want_sect, "sectors of chunks {w:#b}");
            (a + 32 * sect.trailing_zeros() as u64, false, g.tag.to_u64(), w)
        });
        u.tag.next = (u.tag.val().to_u64() + u.rd_issue.val() as u64).into();
        u.edge();
        out
    }

    /// 32-byte requests: a row's reads go one sector per cycle from the one holding chunk `p`
    /// to the one holding chunk `cb`, with the chunks the row wants (a row starting in a high
    /// half, a row ending in a low half), tags in order; a write of the write buffer goes
    /// first.
    #[test]
    fn sectors_of_a_row_and_write_priority() {
        let mut u = block(TmaIssuer::new(256, 32, 32));
        // row at 0x1_0000_0010 (chunk 1 = high half of sector 0): chunks 1..=6
        let r = row(0x1_0000_0010, 1, 6);
        let mut got = vec![];
        let mut nr = Some(r);
        for _ in 0..8 {
            if let Some(x) = cyc(&mut u, nr.take(), None, true, false) {
                got.push(x);
            }
        }
        let s = 0x1_0000_0000u64;
        assert_eq!(got, vec![(s, false, 0, 0b10), (s + 32, false, 1, 0b1100), (s + 64, false, 2, 0b11_0000), (s + 96, false, 3, 0b0100_0000)]);
        // a write waits for nothing; reads wait behind it
        let w = TmaWbEntry { write: true, addr_lo: 0x40.into(), addr_hi: 2.into(), grp: 7.into(), ..Default::default() };
        let first = cyc(&mut u, Some(row(0x3_0000_0000, 0, 1)), Some(w), true, false);
        assert_eq!(first.map(|x| (x.0, x.1, x.2)), Some((0x2_0000_0040, true, 7)));
        let second = cyc(&mut u, None, None, true, false);
        assert_eq!(second.map(|x| (x.0, x.1)), Some((0x3_0000_0000, false)));
        // not ready: nothing is issued, the row waits
        assert_eq!(cyc(&mut u, None, None, false, false), None);
        assert!(!u.idle.val());
    }

    /// 128-byte requests: a row is read a line (or what it wants of one) per request, each
    /// request's chunks and sectors exactly the row's within the line; 64-byte requests split
    /// each line in two halves.
    #[test]
    fn lines_of_a_row() {
        // chunks 3..=20 of a row starting at line 0x1_0000_0000 + 0x30: chunks 3..7 of line
        // 0, all of line 1, chunks 0..=4 of line 2
        for (req, want) in [
            (128, vec![(0x30, 0b1111_1000), (0x80, 0xFF), (0x100, 0b1_1111)]),
            (64, vec![(0x30, 0b1000), (0x40, 0b1111_0000), (0x80, 0b1111), (0xC0, 0b1111_0000), (0x100, 0b1111), (0x140, 0b1_0000)]),
        ] {
            let mut u = block(TmaIssuer::new(256, 128, req));
            let mut nr = Some(row(0x1_0000_0030, 3, 20));
            let got: Vec<(u64, u64)> = (0..10).filter_map(|_| cyc(&mut u, nr.take(), None, true, false)).map(|x| (x.0 - 0x1_0000_0000, x.3)).collect();
            // the first sector of each request: its line's plus 32 x the lowest wanted sector
            let exp: Vec<(u64, u64)> = want.iter().map(|&(a, w): &(u64, u64)| ((a & !127) + 32 * (w.trailing_zeros() as u64 / 2), w)).collect();
            assert_eq!(got, exp, "request_bytes {req}");
        }
    }

    /// `bytes_per_cycle` 8 issues a sector every 4th cycle; `max_outstanding` 3 stops at 3
    /// requests until a response returns a credit.
    #[test]
    fn token_bucket_and_credits() {
        let mut u = block(TmaIssuer::new(3, 8, 32));
        let mut nr = Some(row(0x1_0000_0000, 0, 63));
        let (mut at, mut inflight) = (vec![], 0);
        for n in 0..40 {
            // responses: one per cycle from cycle 20 on, while requests are in flight
            let resp = n >= 20 && inflight > 0;
            inflight -= resp as i32;
            if cyc(&mut u, nr.take(), None, true, resp).is_some() {
                at.push(n);
                inflight += 1;
            }
        }
        // the bucket starts empty and gains 8 bytes a cycle: a sector every 4th cycle; after 3
        // requests none until a response returns a credit; then the bucket (64 bytes, two
        // sectors of burst) bounds the rate
        assert_eq!(&at[..3], &[4, 8, 12]);
        assert!(!at.iter().any(|&n| n > 12 && n < 21), "{at:?}");
        let late = at.iter().filter(|&&n| n >= 20).count();
        assert!((5..=(20 * 8 + 64) / 32).contains(&late), "{at:?}");
    }

    /// Bytes per cycle into shared memory (first to last write) and request limits.
    #[test]
    fn throughput() {
        let lat20 = Knobs {
            lat_min: 20,
            lat_max: 20,
            ..FAST
        };
        let m = map(TensorMapSpec::tiled(
            Dt::Float32,
            GBASE,
            vec![256, 256],
            vec![1024],
            vec![32, 64],
        ));
        let rate = |tb: &Tb| {
            tb.st.smem_bytes as f64 / (tb.st.last_wr - tb.st.first_wr.unwrap() + 1) as f64
        };
        let mut report = vec![];
        // one 8 KiB box, rows 16-byte aligned in global memory
        let mut tb = Tb::new(lat20, 10);
        load_t(&mut tb, &m, &[0, 0], 0, 1 << 2, 1);
        tb.drain();
        let aligned = rate(&tb);
        report.push(format!("tensor 2D 8 KiB aligned: {aligned:.2} B/cycle"));
        assert!(aligned > 127.0, "{aligned}");
        // back-to-back boxes keep the rate
        let mut tb = Tb::new(lat20, 10);
        for i in 0..4 {
            load_t(&mut tb, &m, &[32 * i, 64], 0x2000 * i as u32, 1 << 2, 1);
        }
        tb.drain();
        let b2b = rate(&tb);
        report.push(format!("4 back-to-back 8 KiB boxes: {b2b:.2} B/cycle"));
        assert!(b2b > 115.0, "{b2b}");
        // rows starting 4 bytes into a chunk: one extra slot per 128-byte row
        let mut tb = Tb::new(lat20, 10);
        load_t(&mut tb, &m, &[1, 0], 0, 1 << 2, 1);
        tb.drain();
        let mis = rate(&tb);
        report.push(format!("tensor 2D misaligned rows: {mis:.2} B/cycle"));
        assert!(mis > 12.5, "{mis}");
        // multicast to 4 CTAs: a line a cycle into each
        let mut tb = Tb::new(lat20, 10);
        load_t(&mut tb, &m, &[0, 0], 0, 0x000F, 1);
        tb.drain();
        let mc = rate(&tb);
        report.push(format!("multicast x4: {mc:.2} B/cycle total"));
        assert!(mc > 4.0 * 127.0, "{mc}");
        // bulk 8 KiB
        let mut tb = Tb::new(lat20, 10);
        load_b(&mut tb, GBASE, 0, 8192, 1 << 2, 1);
        tb.drain();
        let bulk = rate(&tb);
        report.push(format!("bulk 8 KiB: {bulk:.2} B/cycle"));
        assert!(bulk > 127.0, "{bulk}");
        // stores: bytes of global writes per cycle
        let mut tb = Tb::new(lat20, 10);
        let t0 = tb.cycle;
        store_t(&mut tb, &m, &[0, 0], 0);
        tb.drain();
        let st = 8192.0 / (tb.cycle - t0) as f64;
        report.push(format!(
            "tensor store 8 KiB: {st:.2} B/cycle (whole command)"
        ));
        assert!(st > 14.0, "{st}");
        // the request limits: 8 B/cycle of request bandwidth; 4 outstanding at latency 40
        let mut tb = Tb::with_params(lat20, 10, 16, 8, 32);
        load_t(&mut tb, &m, &[0, 0], 0, 1 << 2, 1);
        tb.drain();
        let bw = rate(&tb);
        report.push(format!("bytes_per_cycle 8: {bw:.2} B/cycle"));
        assert!(bw > 7.8 && bw < 8.2, "{bw}");
        let lat40 = Knobs {
            lat_min: 40,
            lat_max: 40,
            ..FAST
        };
        let mut tb = Tb::with_params(lat40, 10, 4, 32, 32);
        load_t(&mut tb, &m, &[0, 0], 0, 1 << 2, 1);
        tb.drain();
        let mo = rate(&tb);
        report.push(format!("max_outstanding 4, latency 40: {mo:.2} B/cycle"));
        assert!(mo > 2.9 && mo < 3.3, "{mo}");
        // issue 15 §2: a large copy at silicon's rate (H100: ~70-100 B/cycle) at a memory
        // latency of 384 cycles with the 256 tags of 128 B (32 KiB) in flight that sm90.toml's
        // [tma] read_tags gives the SM engine (Little's law: ~85 B/cycle over 386 cycles a
        // round trip; the testbench answers some requests earlier)
        let lat384 = Knobs {
            lat_min: 384,
            lat_max: 384,
            ..FAST
        };
        let mut tb = Tb::new(lat384, 10);
        load_b(&mut tb, GBASE, 0, 65536, 1 << 2, 1);
        tb.drain();
        let bulk384 = rate(&tb);
        report.push(format!("bulk 64 KiB, latency 384: {bulk384:.2} B/cycle"));
        assert!(bulk384 > 100.0, "{bulk384}");
        // tiled: 8 back-to-back 8 KiB boxes of 128-byte rows
        let mut tb = Tb::new(lat384, 10);
        for i in 0..8 {
            load_t(&mut tb, &m, &[32 * (i % 8), 64 * (i / 4)], 0x2000 * i as u32, 1 << 2, 1);
        }
        tb.drain();
        let tiled384 = rate(&tb);
        report.push(format!("8 back-to-back 8 KiB boxes, latency 384: {tiled384:.2} B/cycle"));
        assert!(tiled384 > 95.0, "{tiled384}");
        // the bound the tags set (Little's law): 64 tags x 32 B per round trip; 32 KiB is 16
        // rounds, written over 15 round trips (384 + 2 cycles) + the last round's 128 beats
        let mut tb = Tb::with_params(lat384, 10, 64, 32, 32);
        load_b(&mut tb, GBASE, 0, 32768, 1 << 2, 1);
        tb.drain();
        let t64 = rate(&tb);
        report.push(format!("max_outstanding 64, latency 384: {t64:.2} B/cycle"));
        let little = 32768.0 / (15.0 * 386.0 + 128.0);
        assert!((t64 - little).abs() < 0.1, "{t64} vs {little}");
        // the same bound with 128-byte requests: 8 tags x 128 B per round trip; 32 KiB is 32
        // rounds, written over 31 round trips + the last round's 64 beats
        let mut tb = Tb::with_params(lat384, 10, 8, 128, 128);
        load_b(&mut tb, GBASE, 0, 32768, 1 << 2, 1);
        tb.drain();
        let t8 = rate(&tb);
        report.push(format!("max_outstanding 8 x 128 B, latency 384: {t8:.2} B/cycle"));
        let little = 32768.0 / (31.0 * 386.0 + 64.0);
        assert!((t8 / little - 1.0).abs() < 0.03, "{t8} vs {little}");
        assert_eq!(tb.st.requests, 256, "one request per 128-byte line");
        eprintln!("{}", report.join("\n"));
    }
}
