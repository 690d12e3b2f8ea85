//! TmaOutBuf (OB): the output buffer of loads (and shared::cta -> shared::cluster beats): each
//! entry (a beat, or stage X's run of up to 8 chunks of one 128-byte line) leaves as one
//! shared-memory line write carrying its destination CTA mask.
//!
//! # Ports
//!
//! - `push` / `entry` (in): a beat or a job's end marker from stage Y (never when full: stage X
//!   counts `n`).
//! - `smem_wr` / `smem_wr_valid` / `smem_wr_ready`: the engine's shared-memory line write port
//!   ([`TmaSmemWrite`]: destination CTA mask, 128-byte aligned shared::cta address, the line's
//!   data and chunk enables (the engine writes whole 16-byte chunks), and the reduction to
//!   apply: `Copy` but for a `cp.reduce.async.bulk` beat).
//! - `job_done` / `head_ctam` / `head_word` / `head_tx`: a job's end marker leaves this cycle
//!   (its last beat was accepted for every destination CTA), with its CTA mask, mbarrier word
//!   and byte count for the complete_tx sequencer (the head entry's fields; only these leave
//!   OB); `cpl_busy` (in): that sequencer is still busy with the previous job, so the marker
//!   waits (a job's complete_tx follows all its beats).
//! - `n`: entries used (3 at most); `idle`: empty.
//!
//! # Multicast
//!
//! The head beat leaves once, with its `ctam` (the command's `cta_mask`: a non-multicast load
//! has one bit set, its destination CTA); whoever takes `smem_wr` (the CTA top, the SM engine)
//! lands it in every CTA of the mask in the same cycle: its own shared memory directly, the
//! others over the DSMEM network, which fans the beat out (silicon lands a 16 KiB multicast in
//! 4 CTAs in about the time of one copy: docs/FIDELITY.md, `bulk_multicast.ptx`). The global
//! data was fetched once, so a multicast costs no beat more than a copy to one CTA.

use super::types::*;
use rust_hdl::prelude::*;

/// The output buffer.
#[derive(LogicBlock, Default)]
pub struct TmaOutBuf {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// an entry from stage Y
    pub push: Signal<In, bool>,
    /// that entry
    pub entry: Signal<In, TmaObEntry>,
    /// shared-memory write
    pub smem_wr: Signal<Out, TmaSmemWrite>,
    /// `smem_wr` is valid
    pub smem_wr_valid: Signal<Out, bool>,
    /// `smem_wr` is accepted this cycle (for every CTA of its mask)
    pub smem_wr_ready: Signal<In, bool>,
    /// a job's end marker leaves this cycle
    pub job_done: Signal<Out, bool>,
    /// the head entry's destination CTAs
    pub head_ctam: Signal<Out, Bits<16>>,
    /// the head entry's mbarrier word
    pub head_word: Signal<Out, Bits<16>>,
    /// the head entry's byte count
    pub head_tx: Signal<Out, Bits<32>>,
    /// the complete_tx sequencer is busy
    pub cpl_busy: Signal<In, bool>,
    /// entries used
    pub n: Signal<Out, Bits<2>>,
    /// empty
    pub idle: Signal<Out, bool>,

    /// entries
    ob: [DFF<TmaObEntry>; 3],
    /// entries used
    ob_n: DFF<Bits<2>>,
    /// the head may leave (a job's end marker waits for the complete_tx sequencer)
    go: Signal<Local, bool>,
    /// the head leaves this cycle
    pop: Signal<Local, bool>,
    /// entries after the pop
    after: Signal<Local, Bits<2>>,
}

impl Logic for TmaOutBuf {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, ob_n);
        for i in 0..3 {
            self.ob[i].clock.next = self.clock.val();
            self.ob[i].d.next = self.ob[i].q.val();
        }
        self.go.next = (self.ob_n.q.val() != 0) && !(self.ob[0].q.val().jlast && self.cpl_busy.val());
        self.smem_wr_valid.next = self.go.val() && self.ob[0].q.val().data_valid;
        self.smem_wr.next.ctam = self.ob[0].q.val().ctam;
        self.smem_wr.next.addr = self.ob[0].q.val().addr;
        self.smem_wr.next.data = self.ob[0].q.val().data;
        self.smem_wr.next.cen = self.ob[0].q.val().cen;
        self.smem_wr.next.red_op = self.ob[0].q.val().red_op;
        self.smem_wr.next.red_type = self.ob[0].q.val().red_type;
        // the head leaves once its write is accepted (a marker at once)
        self.pop.next = self.go.val() && (!self.ob[0].q.val().data_valid || self.smem_wr_ready.val());
        self.after.next = self.ob_n.q.val();
        if self.pop.val() {
            self.after.next = self.ob_n.q.val() - 1;
            self.ob[0].d.next = self.ob[1].q.val();
            self.ob[1].d.next = self.ob[2].q.val();
        }
        self.ob_n.d.next = self.after.val();
        if self.push.val() {
            self.ob_n.d.next = self.after.val() + 1;
            if self.after.val() == 0 {
                self.ob[0].d.next = self.entry.val();
            } else if self.after.val() == 1 {
                self.ob[1].d.next = self.entry.val();
            } else {
                self.ob[2].d.next = self.entry.val();
            }
        }
        // (a prefetch has no destination: no complete_tx)
        self.job_done.next = self.pop.val() && self.ob[0].q.val().jlast && (self.ob[0].q.val().ctam != 0);
        self.head_ctam.next = self.ob[0].q.val().ctam;
        self.head_word.next = self.ob[0].q.val().word;
        self.head_tx.next = self.ob[0].q.val().tx;
        self.n.next = self.ob_n.q.val();
        self.idle.next = self.ob_n.q.val() == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::XorShift;
    use crate::tma::tb::*;
    use hopsync_firmware::tensormap::{TensorMapDataType as Dt, TensorMapSpec};

    /// Line writes with random CTA masks and chunk enables under random `smem_wr_ready`: each
    /// leaves once, with its whole masks, in order; a job's end marker leaves after its last beat, and waits while
    /// the complete_tx sequencer is busy.
    #[test]
    fn each_beat_once_with_its_mask() {
        let mut o = block(TmaOutBuf::default());
        let mut rng = XorShift(0x0B0F_0001);
        let mut want: Vec<(u64, u64)> = vec![];
        let mut got: Vec<(u64, u64)> = vec![];
        let (mut beat, mut dones, mut held) = (0u64, 0, 0);
        let mut pushed_marker = false;
        for n in 0..5000 {
            let busy = n % 97 < 10;
            o.cpl_busy.next = busy;
            o.smem_wr_ready.next = rng.pct(70);
            o.push.next = false;
            o.low();
            // stage X never pushes into a full buffer (it counts n)
            if o.n.val() < 3 && rng.pct(60) {
                let marker = rng.pct(15);
                let mask = if marker { 1 + rng.below(0xFFFF) } else { [1, 0x8000, 0x0F0F, 0xFFFF, 1 + rng.below(0xFFFF)][rng.below(5) as usize] };
                let e = TmaObEntry {
                    data_valid: !marker,
                    addr: (128 * (beat % 2048)).into(),
                    cen: (beat % 2048 & 0xFF | 1).into(),
                    ctam: mask.into(),
                    jlast: marker,
                    ..Default::default()
                };
                if !marker {
                    want.push((beat % 2048, mask));
                    beat += 1;
                }
                pushed_marker |= marker;
                o.push.next = true;
                o.entry.next = e;
                o.low();
            }
            if o.smem_wr_valid.val() && o.smem_wr_ready.val() {
                let w = o.smem_wr.val();
                assert_eq!(w.cen.to_u64(), w.addr.to_u64() / 128 & 0xFF | 1, "cycle {n}: its chunk enables");
                got.push((w.addr.to_u64() / 128, w.ctam.to_u64()));
            }
            if o.job_done.val() {
                assert!(!busy, "cycle {n}: a job's end waits for the sequencer");
                dones += 1;
            }
            held += (busy && o.ob[0].q.val().jlast && o.n.val() != 0) as u32;
            o.edge();
        }
        let k = got.len();
        assert_eq!(got, want[..k].to_vec());
        assert!(k > 1000 && dones > 50 && held > 10 && pushed_marker, "{k} {dones} {held}");
    }

    /// Multicast to 2 and 4 CTAs (and the local one among them): every CTA gets every byte and
    /// its own complete_tx with the full byte count; remote ones are flagged.
    #[test]
    fn multicast_to_2_and_4_ctas() {
        let mut tb = Tb::new(RANDOM, 6);
        let m = map(TensorMapSpec::tiled(
            Dt::Bfloat16,
            GBASE,
            vec![40, 40],
            vec![96],
            vec![16, 12],
        ));
        load_b(&mut tb, GBASE + 0x3000, 0x100, 512, 0b0101, 3);
        load_t(&mut tb, &m, &[-4, 30], 0x800, 0x00F0, 4);
        load_t(&mut tb, &m, &[5, 5], 0x1000, 0x8421, 5);
        load_b(&mut tb, GBASE + 0x3010, 0x2000, 48, 0xFFFF, 6);
        tb.drain();
        assert_eq!(tb.st.cpls, 2 + 4 + 4 + 16);
        assert_eq!(tb.st.remote_cpls, 1 + 4 + 4 + 15);
        assert_eq!(tb.st.smem_bytes, 512 * 2 + 384 * 4 + 384 * 4 + 48 * 16);
    }
}
