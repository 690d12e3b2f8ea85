//! TmaRob: the reorder buffer: read responses (128-byte lines) arrive in any order and are
//! written by tag; the slot iterator drains the wanted 16-byte chunks in issue order.
//!
//! # Ports
//!
//! - `alloc` / `alloc_want` (in): a read is issued this cycle with tag `tag` (the next entry,
//!   allocated in order), and the 16-byte chunks of its line that its row wants (bit k: bytes
//!   16k..16k+15); `full`: every entry is allocated.
//! - `gmem_resp` / `gmem_resp_valid` (in): read data by tag (write acknowledgements are not the
//!   ROB's).
//! - `h_vld`: the head entry's data has arrived; `pop` (in): the slot iterator takes the head's
//!   next wanted chunk (the lowest one not taken) at this edge (the entry is freed when it was
//!   the entry's last wanted chunk).
//! - `rd`: the chunk taken at the last edge (the slot taken at that edge reads it in stage Y
//!   the cycle after).
//! - `idle`: no entry allocated.
//!
//! # State
//!
//! `TMA_TAGS` (256) rows of 128 bytes (`TMA_LINE_BYTES`): with 128-byte requests 32 KiB of
//! reads in flight, 128 B/cycle over sm90.toml's 255-cycle `[global] latency`. Data, the wanted
//! chunks of each tag and its arrival mark are RAMs with registered reads (block RAM on an
//! FPGA, not flip-flops): the data row is read at the head's address and the chunk that was
//! popped is selected after the edge (`sel`); the flag RAMs are read one cycle ahead at the next
//! head address, with the same-edge write forwarded (a RAM read of an entry written at the same
//! edge returns the old value). Arrival needs no clear on free: an entry's mark is the
//! complement of its pass parity over the 256 tags, compared with the head's (`rh_gen`), so
//! freeing needs no second write port.

use super::types::*;
use rust_hdl::prelude::*;

/// The reorder buffer.
#[derive(LogicBlock)]
pub struct TmaRob {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// a read is issued with tag `tag`
    pub alloc: Signal<In, bool>,
    /// the chunks of its line its row wants
    pub alloc_want: Signal<In, Bits<8>>,
    /// the next tag to allocate
    pub tag: Signal<Out, Bits<8>>,
    /// every entry is allocated
    pub full: Signal<Out, bool>,
    /// a global-memory response
    pub gmem_resp: Signal<In, TmaGmemResp>,
    /// `gmem_resp` is valid
    pub gmem_resp_valid: Signal<In, bool>,
    /// the head's data has arrived
    pub h_vld: Signal<Out, bool>,
    /// the head's wanted chunks not taken yet
    pub h_n: Signal<Out, Bits<4>>,
    /// the head's next chunks are taken at this edge
    pub pop: Signal<In, bool>,
    /// how many (1..=`h_n`)
    pub pop_n: Signal<In, Bits<4>>,
    /// the first chunk taken at the last edge
    pub rd: Signal<Out, TmaData16>,
    /// the line read at the last edge
    pub rd_row: Signal<Out, TmaData128>,
    /// the index of the first chunk taken at the last edge
    pub rd_sel: Signal<Out, Bits<3>>,
    /// no entry allocated
    pub idle: Signal<Out, bool>,

    /// data: one 128-byte line per tag
    rob_data: RAM<TmaData128, TMA_TAG_BITS>,
    /// per tag: the chunks the row wants; written at issue, read one cycle ahead at the next head
    rob_want: RAM<Bits<8>, TMA_TAG_BITS>,
    /// per tag: arrival mark (the complement of the parity of the pass of the tags the entry's
    /// data belongs to; the head has arrived when it is `!rh_gen`)
    rob_arr: RAM<bool, TMA_TAG_BITS>,
    /// next tag to allocate
    ra: DFF<Bits<8>>,
    /// oldest allocated tag
    rh: DFF<Bits<8>>,
    /// parity of rh's pass over the tags (flips when rh wraps)
    rh_gen: DFF<bool>,
    /// allocated entries
    rob_cnt: DFF<Bits<9>>,
    /// a response wrote the head's arrival mark at the edge of its read: it has arrived
    arr_fw: DFF<bool>,
    /// an issue wrote the head's `rob_want` at the edge of its read: use `want_fw_v`
    want_fw: DFF<bool>,
    /// the forwarded `rob_want` value
    want_fw_v: DFF<Bits<8>>,
    /// the head entry's chunks already taken
    h_done: DFF<Bits<8>>,
    /// the chunk taken at the last edge (selects `rd` from the row read at that edge)
    sel: DFF<Bits<3>>,
    /// the row read at the last edge
    row: Signal<Local, TmaData128>,
    /// the chunks the head's row wants
    h_want: Signal<Local, Bits<8>>,
    /// of those, the ones not taken yet
    h_rest: Signal<Local, Bits<8>>,
    /// the lowest of them (one-hot)
    h_one: Signal<Local, Bits<8>>,
    /// the chunks below the last one taken at this edge (`h_idx + pop_n` low bits)
    h_below: Signal<Local, Bits<16>>,
    /// the chunks taken at this edge
    h_take: Signal<Local, Bits<8>>,
    /// its index
    h_idx: Signal<Local, Bits<3>>,
    /// the head entry is freed at this edge
    free: Signal<Local, bool>,
    /// the head after this cycle's free (the flag RAMs' read address)
    rh_nx: Signal<Local, Bits<8>>,
    /// the responding tag's pass parity
    r_par: Signal<Local, bool>,
}

impl Default for TmaRob {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            alloc: Default::default(),
            alloc_want: Default::default(),
            tag: Default::default(),
            full: Default::default(),
            gmem_resp: Default::default(),
            gmem_resp_valid: Default::default(),
            h_vld: Default::default(),
            h_n: Default::default(),
            pop: Default::default(),
            pop_n: Default::default(),
            rd: Default::default(),
            rd_row: Default::default(),
            rd_sel: Default::default(),
            idle: Default::default(),
            rob_data: (0..TMA_TAGS).map(|_| TmaData128::default()).into(),
            rob_want: (0..TMA_TAGS).map(|_| Bits::<8>::default()).into(),
            rob_arr: (0..TMA_TAGS).map(|_| false).into(),
            ra: Default::default(),
            rh: Default::default(),
            rh_gen: Default::default(),
            rob_cnt: Default::default(),
            arr_fw: Default::default(),
            want_fw: Default::default(),
            want_fw_v: Default::default(),
            h_done: Default::default(),
            sel: Default::default(),
            row: Default::default(),
            h_want: Default::default(),
            h_rest: Default::default(),
            h_one: Default::default(),
            h_below: Default::default(),
            h_take: Default::default(),
            h_idx: Default::default(),
            free: Default::default(),
            rh_nx: Default::default(),
            r_par: Default::default(),
        }
    }
}

impl Logic for TmaRob {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, ra, rh, rh_gen, rob_cnt, arr_fw, want_fw, want_fw_v, h_done, sel);
        self.rob_data.read_clock.next = self.clock.val();
        self.rob_data.write_clock.next = self.clock.val();
        self.rob_want.read_clock.next = self.clock.val();
        self.rob_want.write_clock.next = self.clock.val();
        self.rob_arr.read_clock.next = self.clock.val();
        self.rob_arr.write_clock.next = self.clock.val();
        // allocation at issue: the wanted chunks into rob_want[ra]
        self.tag.next = self.ra.q.val();
        self.full.next = self.rob_cnt.q.val() == 256;
        self.rob_want.write_address.next = self.ra.q.val();
        self.rob_want.write_data.next = self.alloc_want.val();
        self.rob_want.write_enable.next = self.alloc.val();
        if self.alloc.val() {
            self.ra.d.next = self.ra.q.val() + 1;
        }
        // responses by tag
        self.rob_data.write_address.next = self.gmem_resp.val().tag;
        self.rob_data.write_data.next = self.gmem_resp.val().data;
        self.rob_data.write_enable.next = self.gmem_resp_valid.val() && !self.gmem_resp.val().write;
        self.rob_data.read_address.next = self.rh.q.val();
        // the chunk taken at the last edge, from the row read at that edge
        self.row.next = self.rob_data.read_data.val();
        self.rd_row.next = self.row.val();
        self.rd_sel.next = self.sel.q.val();
        self.rd.next = self.row.val().c0;
        if self.sel.q.val() == 1 {
            self.rd.next = self.row.val().c1;
        }
        if self.sel.q.val() == 2 {
            self.rd.next = self.row.val().c2;
        }
        if self.sel.q.val() == 3 {
            self.rd.next = self.row.val().c3;
        }
        if self.sel.q.val() == 4 {
            self.rd.next = self.row.val().c4;
        }
        if self.sel.q.val() == 5 {
            self.rd.next = self.row.val().c5;
        }
        if self.sel.q.val() == 6 {
            self.rd.next = self.row.val().c6;
        }
        if self.sel.q.val() == 7 {
            self.rd.next = self.row.val().c7;
        }
        // the arrival mark: the tag belongs to rh's pass when it is not below rh (allocated
        // tags are [rh, ra) modulo 256), else to the next pass
        if self.gmem_resp.val().tag < self.rh.q.val() {
            self.r_par.next = !self.rh_gen.q.val();
        } else {
            self.r_par.next = self.rh_gen.q.val();
        }
        self.rob_arr.write_address.next = self.gmem_resp.val().tag;
        self.rob_arr.write_data.next = !self.r_par.val();
        self.rob_arr.write_enable.next = self.gmem_resp_valid.val() && !self.gmem_resp.val().write;
        // the head: flags read at the previous edge (with this cycle's head address), or the
        // writes at that edge
        self.h_vld.next = self.arr_fw.q.val() || (self.rob_arr.read_data.val() != self.rh_gen.q.val());
        if self.want_fw.q.val() {
            self.h_want.next = self.want_fw_v.q.val();
        } else {
            self.h_want.next = self.rob_want.read_data.val();
        }
        // the head's next chunk: the lowest wanted one not taken
        self.h_rest.next = self.h_want.val() & !self.h_done.q.val();
        self.h_one.next = self.h_rest.val() & !(self.h_rest.val() - 1);
        self.h_idx.next = 0.into();
        if (self.h_one.val() & 0xAA) != 0 {
            self.h_idx.next = self.h_idx.val() | 1;
        }
        if (self.h_one.val() & 0xCC) != 0 {
            self.h_idx.next = self.h_idx.val() | 2;
        }
        if (self.h_one.val() & 0xF0) != 0 {
            self.h_idx.next = self.h_idx.val() | 4;
        }
        self.h_n.next = 0.into();
        if self.h_rest.val().get_bit(0) {
            self.h_n.next = self.h_n.val() + 1;
        }
        if self.h_rest.val().get_bit(1) {
            self.h_n.next = self.h_n.val() + 1;
        }
        if self.h_rest.val().get_bit(2) {
            self.h_n.next = self.h_n.val() + 1;
        }
        if self.h_rest.val().get_bit(3) {
            self.h_n.next = self.h_n.val() + 1;
        }
        if self.h_rest.val().get_bit(4) {
            self.h_n.next = self.h_n.val() + 1;
        }
        if self.h_rest.val().get_bit(5) {
            self.h_n.next = self.h_n.val() + 1;
        }
        if self.h_rest.val().get_bit(6) {
            self.h_n.next = self.h_n.val() + 1;
        }
        if self.h_rest.val().get_bit(7) {
            self.h_n.next = self.h_n.val() + 1;
        }
        self.h_below.next = (bits::<16>(1) << (bit_cast::<16, 3>(self.h_idx.val()) + bit_cast::<16, 4>(self.pop_n.val()))) - 1;
        self.h_take.next = self.h_rest.val() & bit_cast::<8, 16>(self.h_below.val());
        self.free.next = self.pop.val() && ((self.h_rest.val() & !self.h_take.val()) == 0);
        if self.pop.val() {
            self.sel.d.next = self.h_idx.val();
            if self.free.val() {
                self.rh.d.next = self.rh.q.val() + 1;
                self.h_done.d.next = 0.into();
            } else {
                self.h_done.d.next = self.h_done.q.val() | self.h_take.val();
            }
        }
        if self.free.val() {
            self.rh_nx.next = self.rh.q.val() + 1;
        } else {
            self.rh_nx.next = self.rh.q.val();
        }
        if self.free.val() && (self.rh.q.val() == 255) {
            self.rh_gen.d.next = !self.rh_gen.q.val();
        }
        self.rob_want.read_address.next = self.rh_nx.val();
        self.rob_arr.read_address.next = self.rh_nx.val();
        // same-edge write and read of one entry read the old value: forward the write
        self.arr_fw.d.next = self.gmem_resp_valid.val()
            && !self.gmem_resp.val().write
            && (self.gmem_resp.val().tag == self.rh_nx.val());
        self.want_fw.d.next = self.alloc.val() && (self.ra.q.val() == self.rh_nx.val());
        self.want_fw_v.d.next = self.alloc_want.val();
        if self.alloc.val() && !self.free.val() {
            self.rob_cnt.d.next = self.rob_cnt.q.val() + 1;
        }
        if !self.alloc.val() && self.free.val() {
            self.rob_cnt.d.next = self.rob_cnt.q.val() - 1;
        }
        self.idle.next = self.rob_cnt.q.val() == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::XorShift;
    use crate::tma::tb::{block, Clocked};
    use std::collections::VecDeque;

    fn chunk(tag_seq: u64, k: u64) -> TmaData16 {
        let b: Vec<u8> = (0..16).map(|i| (tag_seq as u8).wrapping_mul(31).wrapping_add(i + 16 * k as u8)).collect();
        TmaData16::from_bytes(&b)
    }

    fn line(tag_seq: u64) -> TmaData128 {
        let b: Vec<u8> = (0..8).flat_map(|k| chunk(tag_seq, k).to_bytes()).collect();
        TmaData128::from_bytes(&b)
    }

    /// Lines issued with random wanted chunks, answered in random order after random delays,
    /// drained one chunk or a run of chunks at a time: every wanted chunk comes out in issue order (lowest first within
    /// a line) with its own data, only when its line has arrived (a response at the edge of the
    /// head's read included), over many passes of the 256 tags (the arrival marks' pass parity).
    #[test]
    fn responses_in_any_order_drain_in_issue_order() {
        let mut r = block(TmaRob::default());
        let mut rng = XorShift(0x0B0B_0001);
        // issued lines: (sequence number, wanted chunks not taken); in flight: (due, tag, seq)
        let mut issued: VecDeque<(u64, u64)> = VecDeque::new();
        let mut flight: Vec<(u64, u64, u64)> = vec![];
        let mut arrived = std::collections::HashSet::new();
        let (mut seq, mut out) = (0u64, 0u64);
        // the chunk popped at the last edge: its data is read now
        let mut last: Option<(u64, u64)> = None;
        for n in 0..40_000u64 {
            r.alloc.next = false;
            r.pop.next = false;
            r.gmem_resp_valid.next = false;
            r.low();
            if let Some((s, k)) = last.take() {
                assert_eq!(r.rd.val(), chunk(s, k), "cycle {n}: chunk {k} of line {s}");
                assert_eq!((r.rd_row.val(), r.rd_sel.val().to_u64()), (line(s), k), "cycle {n}: line {s}");
            }
            // the head is valid exactly when its line arrived at an earlier edge; its next
            // chunk is the lowest wanted one not taken yet
            if let Some(&(s, want)) = issued.front() {
                assert_eq!(r.h_vld.val(), arrived.contains(&s), "cycle {n}: head line {s}");
                assert_eq!(r.h_n.val().to_u64(), want.count_ones() as u64, "cycle {n}: head line {s}'s chunks left");
                if r.h_vld.val() && rng.pct(70) {
                    // one chunk, or a run of them (stage X's run of a line)
                    let k = want.trailing_zeros() as u64;
                    let m = if rng.pct(50) { 1 } else { 1 + rng.below(want.count_ones() as u64) };
                    r.pop.next = true;
                    r.pop_n.next = m.into();
                    last = Some((s, k));
                    out += m;
                    let rest = want & !(((1u64 << m) - 1) << k);
                    if rest == 0 {
                        issued.pop_front();
                    } else {
                        issued[0].1 = rest;
                    }
                }
            }
            // a response (any due one) and an issue
            let due: Vec<usize> = (0..flight.len()).filter(|&i| flight[i].0 <= n).collect();
            let mut resp = None;
            if !due.is_empty() && rng.pct(80) {
                let (_, tag, s) = flight.swap_remove(due[rng.below(due.len() as u64) as usize]);
                r.gmem_resp.next = TmaGmemResp { tag: tag.into(), write: false, data: line(s) };
                r.gmem_resp_valid.next = true;
                resp = Some(s);
            }
            if !r.full.val() && rng.pct(60) {
                // a contiguous run of chunks, as the issuer asks for
                let a = rng.below(8);
                let b = a + rng.below(8 - a);
                let want = (2u64 << b) - (1u64 << a);
                r.alloc.next = true;
                r.alloc_want.next = want.into();
                let lat = if n % 5000 < 300 { 400 } else { 1 + rng.below(30) };
                flight.push((n + lat, r.tag.val().to_u64(), seq));
                issued.push_back((seq, want));
                seq += 1;
            }
            r.low();
            r.edge();
            arrived.extend(resp);
        }
        assert!(out > 20_000 && seq > 5 * 256, "{out} {seq}");
    }
}
