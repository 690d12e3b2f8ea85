//! MbarReqDecode: the request's half of the mbarrier unit's word operation (combinational,
//! stage 1): the op decode, the operand checks and the request's side of the field arithmetic
//! (the count and txCount operands as field deltas, the `P` and `F` at which the op reaches
//! zero, pending_count of the token). Stage 1 computes it while the word is read and stage 2
//! takes it from a register ([`MbarDecoded`]), so the read-modify-write loop of stage 2 runs only
//! the carry chains that need the word (docs/FPGA.md: a 23-bit negation of txCount headed the
//! unit's critical path).
//!
//! # Ports
//!
//! - `req`, `src` (in): the operation and its port; `word_hi_mask` (in): the word-index bits
//!   beyond the bank.
//! - `dec`: the decoded request ([`MbarDecoded`]).
//!
//! # Form
//!
//! Two levels: the op decode and the operand checks; the deltas, zero points and the findings
//! that depend on the request alone (in the golden model's order, [`super::word::MbarWordOp`]
//! ranks them among the word's).

use super::{MbarrierFinding, MbarrierOp, MbarrierReq, MbarrierSource, MbarrierWord};
use rust_hdl::prelude::*;

/// A request decoded for stage 2.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct MbarDecoded {
    /// arrive-on family (arrive, arrive_drop and their forms)
    pub is_arrive: bool,
    /// the op changes tx-count by its txCount operand
    pub uses_tx: bool,
    /// the op may complete the phase (arrive-on, expect-tx, complete-tx; silicon)
    pub may_complete: bool,
    /// .noComplete form
    pub no_complete: bool,
    /// mbarrier.init
    pub is_init: bool,
    /// mbarrier.inval
    pub is_inval: bool,
    /// cp.async.mbarrier.arrive (pending + 1)
    pub is_cp_inc: bool,
    /// test_wait / try_wait with a token
    pub is_wait_token: bool,
    /// test_wait / try_wait .parity
    pub is_wait_parity: bool,
    /// a try_wait on the local port (may suspend its warp)
    pub is_local_try: bool,
    /// the op touches the word (all but pending_count)
    pub touches_word: bool,
    /// the findings ranked before the word's valid bit: `MbarrierNotShared` (word index beyond
    /// the bank), `MbarrierClusterAddressUnsupported` (an op not allowed on .shared::cluster
    /// from a remote port), or `NoFinding`
    pub early_finding: MbarrierFinding,
    /// the count operand must lie in 1..=2^20-1 and does not (`MbarrierCountOutOfRange`,
    /// ranked after the valid bit)
    pub count_bad: bool,
    /// txCount >= 2^21: the resulting tx-count is out of range whatever the word
    pub tx_big: bool,
    /// some finding of the request alone (`early_finding`, `count_bad`, a tx op's `tx_big`)
    pub req_bad: bool,
    /// `E` (and `P`) of init: (2^20 - count) mod 2^20
    pub init_c: Bits<20>,
    /// arrive-on count, added to `P` (0 when the op does not arrive)
    pub arrive_c: Bits<20>,
    /// expected-count decrement of arrive_drop, added to `E` (0 otherwise)
    pub drop_c: Bits<20>,
    /// change of the sign-extended `F`: -txCount (expect-tx), +txCount (complete-tx), else 0
    pub f_delta: Bits<23>,
    /// the `P` for which `P` after the op is 0: -arrive_c mod 2^20 (1 for the pending
    /// increment of cp.async.mbarrier.arrive)
    pub p_zero_at: Bits<20>,
    /// the sign-extended `F` for which `F` after the op is 0: -f_delta mod 2^23
    pub f_zero_at: Bits<23>,
    /// pending_count of the request's token: 2^20 - token[43..=62]
    pub pend_cnt: Bits<32>,
}

/// The request's half of the word operation.
#[derive(LogicBlock, Default)]
pub struct MbarReqDecode {
    /// the operation
    pub req: Signal<In, MbarrierReq>,
    /// its port
    pub src: Signal<In, MbarrierSource>,
    /// word-index bits at or above the bank's address width
    pub word_hi_mask: Signal<In, Bits<16>>,
    /// the decoded request
    pub dec: Signal<Out, MbarDecoded>,

    /// arrive-on count
    arrive_c: Signal<Local, Bits<20>>,
    /// expected-count decrement
    drop_c: Signal<Local, Bits<20>>,
    /// change of the sign-extended `F`
    f_delta: Signal<Local, Bits<23>>,
    /// arrive-on family
    is_arrive: Signal<Local, bool>,
    /// the op's count operand must lie in 1..=2^20-1
    uses_count: Signal<Local, bool>,
    /// the op changes tx-count by its txCount operand
    uses_tx: Signal<Local, bool>,
    /// the op may complete the phase
    may_complete: Signal<Local, bool>,
    /// .noComplete form
    no_complete: Signal<Local, bool>,
    /// mbarrier.init
    is_init: Signal<Local, bool>,
    /// mbarrier.inval
    is_inval: Signal<Local, bool>,
    /// cp.async.mbarrier.arrive (pending + 1)
    is_cp_inc: Signal<Local, bool>,
    /// test_wait / try_wait with a token
    is_wait_token: Signal<Local, bool>,
    /// test_wait / try_wait .parity
    is_wait_parity: Signal<Local, bool>,
    /// try_wait (may suspend)
    is_try: Signal<Local, bool>,
    /// the op touches the word (all but pending_count)
    touches_word: Signal<Local, bool>,
    /// the op is allowed on .shared::cluster (remote ports)
    remote_ok: Signal<Local, bool>,
    /// count operand in range
    count_ok: Signal<Local, bool>,
    /// word index beyond the bank
    word_oob: Signal<Local, bool>,
    /// the findings ranked before the valid bit
    early_finding: Signal<Local, MbarrierFinding>,
    /// the request's token
    tok: Signal<Local, MbarrierWord>,
    /// the `P` at which the op reaches zero
    p_zero_at: Signal<Local, Bits<20>>,
}

impl Logic for MbarReqDecode {
    #[hdl_gen]
    fn update(&mut self) {
        // ---- level 1: operand checks, op decode.
        self.count_ok.next =
            (self.req.val().count != 0) && (self.req.val().count < 0x10_0000);
        self.word_oob.next = (self.req.val().word & self.word_hi_mask.val()) != 0;
        self.arrive_c.next = 0.into();
        self.drop_c.next = 0.into();
        self.f_delta.next = 0.into();
        self.is_arrive.next = false;
        self.uses_count.next = false;
        self.uses_tx.next = false;
        self.may_complete.next = false;
        self.no_complete.next = false;
        self.is_init.next = false;
        self.is_inval.next = false;
        self.is_cp_inc.next = false;
        self.is_wait_token.next = false;
        self.is_wait_parity.next = false;
        self.is_try.next = false;
        self.touches_word.next = true;
        self.remote_ok.next = false;
        match self.req.val().op {
            MbarrierOp::Init => {
                self.uses_count.next = true;
                self.is_init.next = true;
            }
            MbarrierOp::Inval => {
                self.is_inval.next = true;
            }
            MbarrierOp::Arrive => {
                self.arrive_c.next = bit_cast::<20, 32>(self.req.val().count);
                self.is_arrive.next = true;
                self.uses_count.next = true;
                self.may_complete.next = true;
                self.remote_ok.next = true;
            }
            MbarrierOp::ArriveNoComplete => {
                self.arrive_c.next = bit_cast::<20, 32>(self.req.val().count);
                self.is_arrive.next = true;
                self.uses_count.next = true;
                self.may_complete.next = true;
                self.no_complete.next = true;
            }
            MbarrierOp::ArriveExpectTx => {
                // PTX 9.7.13.15.13: with .expect_tx the arrive count is 1, expect-tx first
                // (F -= txCount, then P += 1).
                self.arrive_c.next = 1.into();
                self.f_delta.next =
                    bits::<23>(0) - bit_cast::<23, 32>(self.req.val().tx_count);
                self.is_arrive.next = true;
                self.uses_tx.next = true;
                self.may_complete.next = true;
                self.remote_ok.next = true;
            }
            MbarrierOp::ArriveDrop => {
                self.arrive_c.next = bit_cast::<20, 32>(self.req.val().count);
                self.drop_c.next = bit_cast::<20, 32>(self.req.val().count);
                self.is_arrive.next = true;
                self.uses_count.next = true;
                self.may_complete.next = true;
                self.remote_ok.next = true;
            }
            MbarrierOp::ArriveDropNoComplete => {
                self.arrive_c.next = bit_cast::<20, 32>(self.req.val().count);
                self.drop_c.next = bit_cast::<20, 32>(self.req.val().count);
                self.is_arrive.next = true;
                self.uses_count.next = true;
                self.may_complete.next = true;
                self.no_complete.next = true;
            }
            MbarrierOp::ArriveDropExpectTx => {
                self.arrive_c.next = 1.into();
                self.drop_c.next = 1.into();
                self.f_delta.next =
                    bits::<23>(0) - bit_cast::<23, 32>(self.req.val().tx_count);
                self.is_arrive.next = true;
                self.uses_tx.next = true;
                self.may_complete.next = true;
                self.remote_ok.next = true;
            }
            MbarrierOp::ExpectTx => {
                // F -= txCount; silicon checks phase completion after expect-tx too
                // (docs/MBARRIER_ENCODING.md; golden model alike).
                self.f_delta.next =
                    bits::<23>(0) - bit_cast::<23, 32>(self.req.val().tx_count);
                self.uses_tx.next = true;
                self.may_complete.next = true;
                self.remote_ok.next = true;
            }
            MbarrierOp::CompleteTx => {
                // F += txCount
                self.f_delta.next = bit_cast::<23, 32>(self.req.val().tx_count);
                self.uses_tx.next = true;
                self.may_complete.next = true;
                self.remote_ok.next = true;
            }
            MbarrierOp::TestWait => {
                self.is_wait_token.next = true;
            }
            MbarrierOp::TestWaitParity => {
                self.is_wait_parity.next = true;
            }
            MbarrierOp::TryWait => {
                self.is_wait_token.next = true;
                self.is_try.next = true;
            }
            MbarrierOp::TryWaitParity => {
                self.is_wait_parity.next = true;
                self.is_try.next = true;
            }
            MbarrierOp::PendingCount => {
                // pure on the token: no word, no word checks
                self.touches_word.next = false;
            }
            _ => {
                self.is_cp_inc.next = true;
            }
        }

        // ---- level 2: deltas and zero points (the op's `P` / `F` after it is 0 exactly when
        // the word's equals these), the findings of the request alone.
        self.early_finding.next = MbarrierFinding::NoFinding;
        if self.touches_word.val() && self.word_oob.val() {
            self.early_finding.next = MbarrierFinding::MbarrierNotShared;
        } else if (self.src.val() != MbarrierSource::Local) && !self.remote_ok.val() {
            self.early_finding.next = MbarrierFinding::MbarrierClusterAddressUnsupported;
        }
        self.dec.next.is_arrive = self.is_arrive.val();
        self.dec.next.uses_tx = self.uses_tx.val();
        self.dec.next.may_complete = self.may_complete.val();
        self.dec.next.no_complete = self.no_complete.val();
        self.dec.next.is_init = self.is_init.val();
        self.dec.next.is_inval = self.is_inval.val();
        self.dec.next.is_cp_inc = self.is_cp_inc.val();
        self.dec.next.is_wait_token = self.is_wait_token.val();
        self.dec.next.is_wait_parity = self.is_wait_parity.val();
        self.dec.next.is_local_try = self.is_try.val() && (self.src.val() == MbarrierSource::Local);
        self.dec.next.touches_word = self.touches_word.val();
        self.dec.next.early_finding = self.early_finding.val();
        self.dec.next.count_bad = self.uses_count.val() && !self.count_ok.val();
        self.dec.next.tx_big = self.req.val().tx_count >= 0x20_0000;
        self.dec.next.req_bad = (self.early_finding.val() != MbarrierFinding::NoFinding)
            || (self.uses_count.val() && !self.count_ok.val())
            || (self.uses_tx.val() && (self.req.val().tx_count >= 0x20_0000));
        self.dec.next.init_c = bits::<20>(0) - bit_cast::<20, 32>(self.req.val().count);
        self.dec.next.arrive_c = self.arrive_c.val();
        self.dec.next.drop_c = self.drop_c.val();
        self.dec.next.f_delta = self.f_delta.val();
        self.p_zero_at.next = bits::<20>(0) - self.arrive_c.val();
        if self.is_cp_inc.val() {
            self.p_zero_at.next = 1.into();
        }
        self.dec.next.p_zero_at = self.p_zero_at.val();
        self.dec.next.f_zero_at = bits::<23>(0) - self.f_delta.val();
        self.tok.next = self.req.val().token;
        self.dec.next.pend_cnt =
            bits::<32>(0x10_0000) - bit_cast::<32, 20>(self.tok.val().pending_complement);
    }
}
