//! TmaRob: the reorder buffer: read responses arrive in any order and are written by tag; the
//! slot iterator drains 16-byte chunks in issue order.
//!
//! # Ports
//!
//! - `alloc` / `alloc_want` (in): a read is issued this cycle with tag `tag` (the next entry,
//!   allocated in order), and the halves of its sector that its row wants (bit 0: bytes 0..=15,
//!   bit 1: bytes 16..=31); `full`: every entry is allocated.
//! - `gmem_resp` / `gmem_resp_valid` (in): read data by tag (write acknowledgements are not the
//!   ROB's).
//! - `h_vld`: the head entry's data has arrived; `h_half`: the head's next wanted half is the
//!   high one; `pop` (in): the slot iterator takes that chunk at this edge (the entry is freed
//!   when it was the entry's last wanted half).
//! - `rd_lo`, `rd_hi`: the head entry's data as read at the last edge (the slot taken at that
//!   edge reads it in stage Y the cycle after).
//! - `idle`: no entry allocated.
//!
//! # State
//!
//! `TMA_TAGS` (256) entries of 32 bytes: 256 x 32 B = 8 KiB of reads in flight, more than the
//! 16 B/cycle x 384 cycles (6 KiB) that 16 B/cycle needs against sm90.toml's `[global]
//! latency`. Data, the wanted halves of each tag and its arrival mark are RAMs (block RAM on an
//! FPGA, not flip-flops): the flag RAMs are read one cycle ahead at the next head address, with
//! the same-edge write forwarded (a RAM read of an entry written at the same edge returns the old
//! value). Arrival needs no clear on free: an entry's mark is the complement of its pass parity
//! over the 256 tags, compared with the head's (`rh_gen`), so freeing needs no second write port.

use super::types::*;
use rust_hdl::prelude::*;

/// The reorder buffer.
#[derive(LogicBlock)]
pub struct TmaRob {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// a read is issued with tag `tag`
    pub alloc: Signal<In, bool>,
    /// the halves its row wants
    pub alloc_want: Signal<In, Bits<2>>,
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
    /// the head's next chunk is its high half
    pub h_half: Signal<Out, bool>,
    /// the head's next chunk is taken at this edge
    pub pop: Signal<In, bool>,
    /// the head's data read at the last edge, bytes 0..=15
    pub rd_lo: Signal<Out, TmaData16>,
    /// bytes 16..=31
    pub rd_hi: Signal<Out, TmaData16>,
    /// no entry allocated
    pub idle: Signal<Out, bool>,

    /// data, bytes 0..=15 of each sector
    rob_lo: RAM<TmaData16, TMA_TAG_BITS>,
    /// data, bytes 16..=31
    rob_hi: RAM<TmaData16, TMA_TAG_BITS>,
    /// per tag: the halves the row wants; written at issue, read one cycle ahead at the next head
    rob_want: RAM<Bits<2>, TMA_TAG_BITS>,
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
    want_fw_v: DFF<Bits<2>>,
    /// the head entry's low half was consumed
    h_lo_done: DFF<bool>,
    /// the halves the head's row wants
    h_want: Signal<Local, Bits<2>>,
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
            h_half: Default::default(),
            pop: Default::default(),
            rd_lo: Default::default(),
            rd_hi: Default::default(),
            idle: Default::default(),
            rob_lo: (0..TMA_TAGS).map(|_| TmaData16::default()).into(),
            rob_hi: (0..TMA_TAGS).map(|_| TmaData16::default()).into(),
            rob_want: (0..TMA_TAGS).map(|_| Bits::<2>::default()).into(),
            rob_arr: (0..TMA_TAGS).map(|_| false).into(),
            ra: Default::default(),
            rh: Default::default(),
            rh_gen: Default::default(),
            rob_cnt: Default::default(),
            arr_fw: Default::default(),
            want_fw: Default::default(),
            want_fw_v: Default::default(),
            h_lo_done: Default::default(),
            h_want: Default::default(),
            free: Default::default(),
            rh_nx: Default::default(),
            r_par: Default::default(),
        }
    }
}

impl Logic for TmaRob {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, ra, rh, rh_gen, rob_cnt, arr_fw, want_fw, want_fw_v, h_lo_done);
        self.rob_lo.read_clock.next = self.clock.val();
        self.rob_lo.write_clock.next = self.clock.val();
        self.rob_hi.read_clock.next = self.clock.val();
        self.rob_hi.write_clock.next = self.clock.val();
        self.rob_want.read_clock.next = self.clock.val();
        self.rob_want.write_clock.next = self.clock.val();
        self.rob_arr.read_clock.next = self.clock.val();
        self.rob_arr.write_clock.next = self.clock.val();
        // allocation at issue: the wanted halves into rob_want[ra]
        self.tag.next = self.ra.q.val();
        self.full.next = self.rob_cnt.q.val() == 256;
        self.rob_want.write_address.next = self.ra.q.val();
        self.rob_want.write_data.next = self.alloc_want.val();
        self.rob_want.write_enable.next = self.alloc.val();
        if self.alloc.val() {
            self.ra.d.next = self.ra.q.val() + 1;
        }
        // responses by tag
        self.rob_lo.write_address.next = self.gmem_resp.val().tag;
        self.rob_lo.write_data.next = self.gmem_resp.val().data_lo;
        self.rob_lo.write_enable.next = self.gmem_resp_valid.val() && !self.gmem_resp.val().write;
        self.rob_hi.write_address.next = self.gmem_resp.val().tag;
        self.rob_hi.write_data.next = self.gmem_resp.val().data_hi;
        self.rob_hi.write_enable.next = self.gmem_resp_valid.val() && !self.gmem_resp.val().write;
        self.rob_lo.read_address.next = self.rh.q.val();
        self.rob_hi.read_address.next = self.rh.q.val();
        self.rd_lo.next = self.rob_lo.read_data.val();
        self.rd_hi.next = self.rob_hi.read_data.val();
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
        self.h_half.next = !(self.h_want.val().get_bit(0) && !self.h_lo_done.q.val());
        self.free.next = self.pop.val() && !(!self.h_half.val() && self.h_want.val().get_bit(1));
        if self.pop.val() {
            if self.free.val() {
                self.rh.d.next = self.rh.q.val() + 1;
                self.h_lo_done.d.next = false;
            } else {
                self.h_lo_done.d.next = true;
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

    fn data(tag_seq: u64, hi: bool) -> TmaData16 {
        let b: Vec<u8> = (0..16).map(|i| (tag_seq as u8).wrapping_mul(31).wrapping_add(i + 16 * hi as u8)).collect();
        TmaData16::from_bytes(&b)
    }

    /// Sectors issued with random wanted halves, answered in random order after random
    /// delays, drained chunk by chunk: every chunk comes out in issue order with its own data,
    /// only when its sector has arrived (a response at the edge of the head's read included),
    /// over many passes of the 256 tags (the arrival marks' pass parity).
    #[test]
    fn responses_in_any_order_drain_in_issue_order() {
        let mut r = block(TmaRob::default());
        let mut rng = XorShift(0x0B0B_0001);
        // issued sectors: (sequence number, wanted halves); in flight: (due, tag, seq)
        let mut issued: VecDeque<(u64, u64)> = VecDeque::new();
        let mut flight: Vec<(u64, u64, u64)> = vec![];
        let mut arrived = std::collections::HashSet::new();
        let (mut seq, mut out) = (0u64, 0u64);
        // the chunk popped at the last edge: its data is read now
        let mut last: Option<(u64, bool)> = None;
        for n in 0..40_000u64 {
            r.alloc.next = false;
            r.pop.next = false;
            r.gmem_resp_valid.next = false;
            r.low();
            if let Some((s, hi)) = last.take() {
                let d = if hi { r.rd_hi.val() } else { r.rd_lo.val() };
                assert_eq!(d, data(s, hi), "cycle {n}: chunk of sector {s}");
            }
            // the head is valid exactly when its sector arrived at an earlier edge; its next
            // chunk is the low half when the row wants it and it is not taken yet
            if let Some(&(s, want)) = issued.front() {
                assert_eq!(r.h_vld.val(), arrived.contains(&s), "cycle {n}: head sector {s}");
                if r.h_vld.val() && rng.pct(70) {
                    let hi = r.h_half.val();
                    assert_eq!(hi, want & 1 == 0, "cycle {n}: half of sector {s}");
                    r.pop.next = true;
                    last = Some((s, hi));
                    out += 1;
                    let rest = if hi { 0 } else { want & 2 };
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
                r.gmem_resp.next = TmaGmemResp { tag: tag.into(), write: false, data_lo: data(s, false), data_hi: data(s, true) };
                r.gmem_resp_valid.next = true;
                resp = Some(s);
            }
            if !r.full.val() && rng.pct(60) {
                let want = [1, 2, 3][rng.below(3) as usize];
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
