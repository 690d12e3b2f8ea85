//! TmaComplete (CPL): the complete_tx sequencer: after the last beat of a load reached every
//! destination CTA, one `MbarrierOp::CompleteTx` per destination CTA, lowest rank first, with
//! the job's full byte count (the box's bytes in shared memory, OOB fill included: PTX
//! 9.7.9.25.5.2's `complete_tx::bytes`; the bulk size).
//!
//! # Ports
//!
//! - `start` / `ctam` / `word` / `tx` (in): a job ended ([`crate::tma::obuf::TmaOutBuf`]):
//!   its destination CTAs, mbarrier word and byte count; `busy`: a sequence is in progress (a
//!   new one waits).
//! - `mbar_req` / `mbar_cta` / `mbar_remote` / `mbar_valid` / `mbar_ready`: the request towards
//!   the mbarrier units (`MbarrierUnit::tma_req` locally; `mbar_remote` when `mbar_cta` is not
//!   `cta_rank`: the cluster port of that CTA's unit).

use crate::mbarrier_unit::{MbarrierOp, MbarrierReq};
use rust_hdl::prelude::*;

/// The complete_tx sequencer.
#[derive(LogicBlock)]
pub struct TmaComplete {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// this CTA's rank in its cluster
    pub cta_rank: Signal<In, Bits<4>>,
    /// a job ended
    pub start: Signal<In, bool>,
    /// its destination CTAs
    pub ctam: Signal<In, Bits<16>>,
    /// its mbarrier word
    pub word: Signal<In, Bits<16>>,
    /// its byte count
    pub tx: Signal<In, Bits<32>>,
    /// a sequence is in progress
    pub busy: Signal<Out, bool>,
    /// complete_tx request (op `CompleteTx`, word, tx_count)
    pub mbar_req: Signal<Out, MbarrierReq>,
    /// the CTA whose mbarrier unit gets `mbar_req`
    pub mbar_cta: Signal<Out, Bits<4>>,
    /// `mbar_cta` is not `cta_rank`
    pub mbar_remote: Signal<Out, bool>,
    /// `mbar_req` is valid
    pub mbar_valid: Signal<Out, bool>,
    /// `mbar_req` is accepted this cycle
    pub mbar_ready: Signal<In, bool>,

    /// complete_tx request template (op CompleteTx, all else zero)
    mreq_base: Constant<MbarrierReq>,
    /// a complete_tx sequence is pending
    cpl_vld: DFF<bool>,
    /// its remaining CTAs
    cpl_rem: DFF<Bits<16>>,
    /// its mbarrier word
    cpl_word: DFF<Bits<16>>,
    /// its byte count
    cpl_tx: DFF<Bits<32>>,
    /// the lowest remaining CTA, one-hot
    cp_low: Signal<Local, Bits<16>>,
    /// its rank
    cp_cta: Signal<Local, Bits<4>>,
}

impl Default for TmaComplete {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            cta_rank: Default::default(),
            start: Default::default(),
            ctam: Default::default(),
            word: Default::default(),
            tx: Default::default(),
            busy: Default::default(),
            mbar_req: Default::default(),
            mbar_cta: Default::default(),
            mbar_remote: Default::default(),
            mbar_valid: Default::default(),
            mbar_ready: Default::default(),
            mreq_base: Constant::new(MbarrierReq {
                op: MbarrierOp::CompleteTx,
                ..Default::default()
            }),
            cpl_vld: Default::default(),
            cpl_rem: Default::default(),
            cpl_word: Default::default(),
            cpl_tx: Default::default(),
            cp_low: Default::default(),
            cp_cta: Default::default(),
        }
    }
}

impl Logic for TmaComplete {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, cpl_vld, cpl_rem, cpl_word, cpl_tx);
        self.cp_low.next = self.cpl_rem.q.val() & (bits::<16>(0) - self.cpl_rem.q.val());
        self.cp_cta.next = 0.into();
        for i in 0..16 {
            if self.cp_low.val().get_bit(i) {
                self.cp_cta.next = i.to_bits();
            }
        }
        self.mbar_valid.next = self.cpl_vld.q.val();
        self.mbar_req.next = self.mreq_base.val();
        self.mbar_req.next.word = self.cpl_word.q.val();
        self.mbar_req.next.tx_count = self.cpl_tx.q.val();
        self.mbar_cta.next = self.cp_cta.val();
        self.mbar_remote.next = self.cp_cta.val() != self.cta_rank.val();
        if self.cpl_vld.q.val() && self.mbar_ready.val() {
            self.cpl_rem.d.next = self.cpl_rem.q.val() & (self.cpl_rem.q.val() - 1);
            if (self.cpl_rem.q.val() & (self.cpl_rem.q.val() - 1)) == 0 {
                self.cpl_vld.d.next = false;
            }
        }
        if self.start.val() {
            self.cpl_vld.d.next = true;
            self.cpl_rem.d.next = self.ctam.val();
            self.cpl_word.d.next = self.word.val();
            self.cpl_tx.d.next = self.tx.val();
        }
        self.busy.next = self.cpl_vld.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tma::tb::*;

    /// One complete_tx per destination CTA, lowest rank first, with the job's word and bytes;
    /// `mbar_remote` for every CTA but this one; the sequence waits for `mbar_ready`.
    #[test]
    fn one_complete_tx_per_destination() {
        let mut c = block(TmaComplete::default());
        c.cta_rank.next = 4.into();
        c.start.next = true;
        c.ctam.next = 0b1001_0000_0001_0000.into();
        c.word.next = 77.into();
        c.tx.next = 4096.into();
        c.low();
        assert!(!c.mbar_valid.val());
        c.edge();
        c.start.next = false;
        let mut got = vec![];
        for n in 0..12 {
            c.mbar_ready.next = n % 3 != 1;
            c.low();
            assert_eq!(c.busy.val(), got.len() < 3);
            if c.mbar_valid.val() && c.mbar_ready.val() {
                let r = c.mbar_req.val();
                assert_eq!((r.op, r.word.to_u64(), r.tx_count.to_u64()), (MbarrierOp::CompleteTx, 77, 4096));
                got.push((c.mbar_cta.val().to_u64(), c.mbar_remote.val()));
            }
            c.edge();
        }
        assert_eq!(got, vec![(4, false), (12, true), (15, true)]);
    }
}
