//! MbarWordOp: the mbarrier unit's operation on one word (combinational, stage 1): the word
//! before the operation and the request give the word after it, the finding, the token and
//! the waiter-table decisions, bit-exact with the golden model's pure word functions
//! (`hopsync_cosim::mbarrier`, PTX 9.7.13.15; docs/MBARRIER_ENCODING.md).
//!
//! # Ports
//!
//! - `cur`, `cur_valid` (in): the word and its shadow valid bit before the operation; `req`,
//!   `src` (in): the operation and its port; `word_hi_mask` (in): the word-index bits beyond the
//!   bank.
//! - `word_d`, `valid_d`: the word and valid bit after the operation (unchanged when it faults or
//!   does not modify the word).
//! - `finding`: the operation's finding, in the golden model's order.
//! - `tok_word`: the token (bits 32..=63 of `cur`, low half zero); `pend_cnt`: pending_count
//!   of the request's token; `cur_tag`: {current phase parity, word index}.
//! - `resp_wait`: waitComplete of a test_wait / try_wait that does not fault; `suspends`: a
//!   local try_wait that does not fault finds its phase incomplete; `completes`: the operation
//!   completes the current phase (PTX 9.7.13.15.6: pending and tx-count both reach zero; checked
//!   after arrive-on, expect-tx and complete-tx alike, as on silicon).
//!
//! # Form
//!
//! Five levels: operand checks and op decode; the new fields in widened arithmetic (sized
//! Locals, so the Rust simulation and the Verilog agree on every compare); range checks, next
//! `P` and the completion condition; the findings and waitComplete; the next word.

use super::{MbarrierFinding, MbarrierOp, MbarrierReq, MbarrierSource, MbarrierWord};
use rust_hdl::prelude::*;

/// The operation on one word.
#[derive(LogicBlock, Default)]
pub struct MbarWordOp {
    /// the word before the operation
    pub cur: Signal<In, MbarrierWord>,
    /// its shadow valid bit
    pub cur_valid: Signal<In, bool>,
    /// the operation
    pub req: Signal<In, MbarrierReq>,
    /// its port
    pub src: Signal<In, MbarrierSource>,
    /// word-index bits at or above the bank's address width
    pub word_hi_mask: Signal<In, Bits<16>>,
    /// the word after the operation
    pub word_d: Signal<Out, MbarrierWord>,
    /// the shadow valid bit after the operation
    pub valid_d: Signal<Out, bool>,
    /// the finding of this operation
    pub finding: Signal<Out, MbarrierFinding>,
    /// the token of the word before the operation: its bits 32..=63, low half zero
    pub tok_word: Signal<Out, MbarrierWord>,
    /// pending_count of the request's token: 2^20 - token[43..=62]
    pub pend_cnt: Signal<Out, Bits<32>>,
    /// {current phase parity, word index}
    pub cur_tag: Signal<Out, Bits<17>>,
    /// waitComplete, when the operation does not fault
    pub resp_wait: Signal<Out, bool>,
    /// a local try_wait without finding finds its phase incomplete
    pub suspends: Signal<Out, bool>,
    /// the operation completes the current phase (without finding)
    pub completes: Signal<Out, bool>,

    /// the request's token
    tok: Signal<Local, MbarrierWord>,
    /// arrive-on count, added to `P` (0 when the op does not arrive)
    arrive_c: Signal<Local, Bits<20>>,
    /// expected-count decrement of arrive_drop, added to `E` (0 otherwise)
    drop_c: Signal<Local, Bits<20>>,
    /// complement
    f_delta: Signal<Local, Bits<23>>,
    /// the `P` for which `P` after the op is 0: -arrive_c mod 2^20 (1 for the pending
    /// increment of cp.async.mbarrier.arrive), from the request alone
    p_zero_at: Signal<Local, Bits<20>>,
    /// the sign-extended `F` for which `F` after the op is 0: -f_delta mod 2^23
    f_zero_at: Signal<Local, Bits<23>>,
    /// `F` before the op, sign-extended to 23 bits
    f_sext: Signal<Local, Bits<23>>,
    /// no finding (every finding condition below false): the word, the response and the
    /// waiter-table decisions take it instead of comparing the priority-ordered `finding`
    ok: Signal<Local, bool>,
    /// arrive-on family (arrive, arrive_drop and their forms)
    is_arrive: Signal<Local, bool>,
    /// the op's count operand must lie in 1..=2^20-1
    uses_count: Signal<Local, bool>,
    /// the op changes tx-count by its txCount operand
    uses_tx: Signal<Local, bool>,
    /// the op may complete the phase (arrive-on, expect-tx, complete-tx; silicon)
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
    /// txCount operand >= 2^21: the resulting tx-count is out of range whatever the word
    tx_big: Signal<Local, bool>,
    /// word index beyond the bank
    word_oob: Signal<Local, bool>,
    /// `E` of init: (2^20 - count) mod 2^20 (also its `P`)
    init_c: Signal<Local, Bits<20>>,
    /// `F` after the op (sign-extended `F` + f_delta), 23-bit two's complement; -tx-count
    f23: Signal<Local, Bits<23>>,
    /// `P` + arrive count, 21 bits (> 2^20: the count exceeds the pending arrivals)
    p21: Signal<Local, Bits<21>>,
    /// `E` + drop count, 21 bits (>= 2^20: expected would reach zero or below)
    e21: Signal<Local, Bits<21>>,
    /// `P` after the op, before a phase completion reloads it
    p_next: Signal<Local, Bits<20>>,
    /// the arrive count exceeds the pending arrivals (`P == 0`, or `P + count > 2^20`)
    pend_under: Signal<Local, bool>,
    /// arrive_drop would take the expected count to zero or below (`E == 0`, or `E + c >= 2^20`)
    drop_bad: Signal<Local, bool>,
    /// f23 within -(2^20-1)..=2^20-1
    tx_range_ok: Signal<Local, bool>,
    /// pending and tx both reach zero (`P == 0 && F == 0`)
    reaches_zero: Signal<Local, bool>,
    /// `F` of the token: bits 21..=31 cleared (they lie in the token's zero low half)
    tok_f: Signal<Local, Bits<21>>,
    /// waitComplete of this op
    wait_complete: Signal<Local, bool>,
    /// this op completes the current phase (before the finding gate)
    complete: Signal<Local, bool>,
}

impl Logic for MbarWordOp {
    #[hdl_gen]
    fn update(&mut self) {
        // ---- level 1: operand checks, op decode.
        self.tok.next = self.req.val().token;
        self.count_ok.next =
            (self.req.val().count != 0) && (self.req.val().count < 0x10_0000);
        self.tx_big.next = self.req.val().tx_count >= 0x20_0000;
        self.word_oob.next = (self.req.val().word & self.word_hi_mask.val()) != 0;
        self.init_c.next = bits::<20>(0) - bit_cast::<20, 32>(self.req.val().count);
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

        // ---- level 2: new fields in widened arithmetic (sized Locals, so the Rust
        // simulation and the Verilog agree on every compare below), token, pending_count.
        self.f_sext.next = bit_cast::<23, 21>(self.cur.val().tx_negated);
        if self.cur.val().tx_negated >= 0x10_0000 {
            // sign-extend the 21-bit F
            self.f_sext.next = bit_cast::<23, 21>(self.cur.val().tx_negated) | 0x60_0000;
        }
        self.f23.next = self.f_sext.val() + self.f_delta.val();
        // the zero tests of level 4 as equalities with request-only values (no carry chain
        // after the word arrives: the word read is the unit's critical path, docs/FPGA.md)
        self.p_zero_at.next = bits::<20>(0) - self.arrive_c.val();
        if self.is_cp_inc.val() {
            self.p_zero_at.next = 1.into();
        }
        self.f_zero_at.next = bits::<23>(0) - self.f_delta.val();
        self.p21.next = bit_cast::<21, 20>(self.cur.val().pending_complement)
            + bit_cast::<21, 20>(self.arrive_c.val());
        self.e21.next = bit_cast::<21, 20>(self.cur.val().expected_complement)
            + bit_cast::<21, 20>(self.drop_c.val());
        self.cur_tag.next = bit_cast::<17, 16>(self.req.val().word);
        if self.cur.val().phase_parity {
            self.cur_tag.next = bit_cast::<17, 16>(self.req.val().word) | 0x1_0000;
        }
        self.tok_f.next = self.cur.val().tx_negated & 0x1F_F800;
        self.pend_cnt.next =
            bits::<32>(0x10_0000) - bit_cast::<32, 20>(self.tok.val().pending_complement);

        // ---- level 3: range checks, next P, completion condition (PTX 9.7.13.15.6).
        self.tx_range_ok.next = (self.f23.val().get_bits::<3>(20) == 0)
            || ((self.f23.val().get_bits::<3>(20) == 7) && (self.f23.val().get_bits::<20>(0) != 0));
        // count > pending: pending is 0 when P == 0, else 2^20 - P
        self.pend_under.next =
            (self.cur.val().pending_complement == 0) || (self.p21.val() > 0x10_0000);
        // count >= expected: expected is 0 when E == 0, else 2^20 - E
        self.drop_bad.next = (self.drop_c.val() != 0)
            && ((self.cur.val().expected_complement == 0) || self.e21.val().get_bit(20));
        self.p_next.next = bit_cast::<20, 21>(self.p21.val());
        if self.is_cp_inc.val() {
            // pending + 1
            self.p_next.next = self.cur.val().pending_complement - 1;
        }
        self.tok_word.next = self.cur.val();
        self.tok_word.next.bit0 = false;
        self.tok_word.next.expected_complement = 0.into();
        self.tok_word.next.tx_negated = self.tok_f.val();

        // ---- level 4: findings in the golden model's order, waitComplete.
        // `P` after the op is 0 and `F` after the op is 0 (p_zero_at, f_zero_at: level 2)
        self.reaches_zero.next = (self.cur.val().pending_complement == self.p_zero_at.val())
            && (self.f_sext.val() == self.f_zero_at.val());
        self.finding.next = MbarrierFinding::NoFinding;
        if self.touches_word.val() && self.word_oob.val() {
            self.finding.next = MbarrierFinding::MbarrierNotShared;
        } else if (self.src.val() != MbarrierSource::Local) && !self.remote_ok.val() {
            self.finding.next = MbarrierFinding::MbarrierClusterAddressUnsupported;
        } else if self.touches_word.val() && !self.is_init.val() && !self.cur_valid.val() {
            self.finding.next = MbarrierFinding::MbarrierUninitialized;
        } else if self.is_init.val() && self.cur_valid.val() {
            self.finding.next = MbarrierFinding::MbarrierInitOnValid;
        } else if self.uses_count.val() && !self.count_ok.val() {
            self.finding.next = MbarrierFinding::MbarrierCountOutOfRange;
        } else if self.uses_tx.val() && (self.tx_big.val() || !self.tx_range_ok.val()) {
            self.finding.next = MbarrierFinding::MbarrierTxCountOutOfRange;
        } else if self.is_arrive.val() && self.pend_under.val() {
            self.finding.next = MbarrierFinding::MbarrierPendingUnderflow;
        } else if self.is_arrive.val() && self.drop_bad.val() {
            self.finding.next = MbarrierFinding::MbarrierCountOutOfRange;
        } else if self.is_cp_inc.val() && (self.cur.val().pending_complement == 1) {
            // the increment would take pending_arrivals past 2^20-1 (PTX 9.7.13.15.15)
            self.finding.next = MbarrierFinding::MbarrierCountOutOfRange;
        } else if self.no_complete.val() && self.reaches_zero.val() {
            self.finding.next = MbarrierFinding::MbarrierNoCompleteCompleted;
        }
        self.ok.next = !((self.touches_word.val() && self.word_oob.val())
            || ((self.src.val() != MbarrierSource::Local) && !self.remote_ok.val())
            || (self.touches_word.val() && !self.is_init.val() && !self.cur_valid.val())
            || (self.is_init.val() && self.cur_valid.val())
            || (self.uses_count.val() && !self.count_ok.val())
            || (self.uses_tx.val() && (self.tx_big.val() || !self.tx_range_ok.val()))
            || (self.is_arrive.val() && (self.pend_under.val() || self.drop_bad.val()))
            || (self.is_cp_inc.val() && (self.cur.val().pending_complement == 1))
            || (self.no_complete.val() && self.reaches_zero.val()));
        self.wait_complete.next = false;
        if self.is_wait_token.val() {
            // silicon compares the token's bit 63 with the current parity, nothing else
            self.wait_complete.next = self.cur.val().phase_parity != self.tok.val().phase_parity;
        }
        if self.is_wait_parity.val() {
            // the phase with that parity completed when the current parity differs
            self.wait_complete.next =
                self.cur.val().phase_parity != self.req.val().phase_parity;
        }
        self.complete.next = self.may_complete.val() && self.reaches_zero.val();

        // ---- level 5: the next word.
        self.word_d.next = self.cur.val();
        self.valid_d.next = self.cur_valid.val();
        if self.ok.val() {
            if self.is_init.val() {
                // silicon: lo32 = (2^20-c) << 1, hi32 = (2^20-c) << 11
                self.word_d.next.bit0 = false;
                self.word_d.next.expected_complement = self.init_c.val();
                self.word_d.next.tx_negated = 0.into();
                self.word_d.next.bit42 = false;
                self.word_d.next.pending_complement = self.init_c.val();
                self.word_d.next.phase_parity = false;
                self.valid_d.next = true;
            }
            if self.is_inval.val() {
                // silicon writes its cached state back: the word is unchanged
                self.valid_d.next = false;
            }
            if self.is_arrive.val() || self.uses_tx.val() || self.is_cp_inc.val() {
                self.word_d.next.pending_complement = self.p_next.val();
                self.word_d.next.expected_complement = bit_cast::<20, 21>(self.e21.val());
                self.word_d.next.tx_negated = bit_cast::<21, 23>(self.f23.val());
                if self.complete.val() {
                    // phase transition: parity flips, pending reloads from expected (P = E)
                    self.word_d.next.pending_complement = bit_cast::<20, 21>(self.e21.val());
                    self.word_d.next.phase_parity = !self.cur.val().phase_parity;
                }
            }
        }
        self.resp_wait.next =
            self.wait_complete.val() && self.ok.val();
        self.suspends.next = self.is_try.val()
            && (self.src.val() == MbarrierSource::Local)
            && self.ok.val()
            && !self.wait_complete.val();
        self.completes.next =
            self.complete.val() && self.ok.val();
    }
}
