//! MbarWordOp: the mbarrier unit's operation on one word (combinational, stage 2): the word
//! before the operation and the decoded request give the word after it, the finding, the token
//! and the waiter-table decisions, bit-exact with the golden model's pure word functions
//! (`hopsync_cosim::mbarrier`, PTX 9.7.13.15; docs/MBARRIER_ENCODING.md).
//!
//! # Ports
//!
//! - `cur`, `cur_valid` (in): the word and its shadow valid bit before the operation; `req`
//!   (in): the operation (its word index, token and phase parity); `dec` (in): the request's
//!   half of the operation, decoded in stage 1 ([`super::decode::MbarReqDecode`]).
//! - `word_d`, `valid_d`: the word and valid bit after the operation (unchanged when it faults or
//!   does not modify the word).
//! - `finding`: the operation's finding, in the golden model's order.
//! - `tok_word`: the token (bits 32..=63 of `cur`, low half zero); `cur_tag`: {current phase
//!   parity, word index}.
//! - `resp_wait`: waitComplete of a test_wait / try_wait that does not fault; `suspends`: a
//!   local try_wait that does not fault finds its phase incomplete; `completes`: the operation
//!   completes the current phase (PTX 9.7.13.15.6: pending and tx-count both reach zero; checked
//!   after arrive-on, expect-tx and complete-tx alike, as on silicon).
//!
//! # Form
//!
//! Four levels: the new fields in widened arithmetic (sized Locals, so the Rust simulation and
//! the Verilog agree on every compare); range checks, next `P` and the completion condition;
//! the findings and waitComplete; the next word. Everything that depends on the request alone
//! (op decode, operand checks, the deltas and the zero points) comes registered in `dec`.

use super::decode::MbarDecoded;
use super::{MbarrierFinding, MbarrierReq, MbarrierWord};
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
    /// the request's half of the operation (stage 1)
    pub dec: Signal<In, MbarDecoded>,
    /// the word after the operation
    pub word_d: Signal<Out, MbarrierWord>,
    /// the shadow valid bit after the operation
    pub valid_d: Signal<Out, bool>,
    /// the finding of this operation
    pub finding: Signal<Out, MbarrierFinding>,
    /// the token of the word before the operation: its bits 32..=63, low half zero
    pub tok_word: Signal<Out, MbarrierWord>,
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
    /// `F` before the op, sign-extended to 23 bits
    f_sext: Signal<Local, Bits<23>>,
    /// no finding (every finding condition below false): the word, the response and the
    /// waiter-table decisions take it instead of comparing the priority-ordered `finding`
    ok: Signal<Local, bool>,
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
        // ---- level 1: new fields in widened arithmetic (sized Locals, so the Rust simulation
        // and the Verilog agree on every compare below), token.
        self.tok.next = self.req.val().token;
        self.f_sext.next = bit_cast::<23, 21>(self.cur.val().tx_negated);
        if self.cur.val().tx_negated >= 0x10_0000 {
            // sign-extend the 21-bit F
            self.f_sext.next = bit_cast::<23, 21>(self.cur.val().tx_negated) | 0x60_0000;
        }
        self.f23.next = self.f_sext.val() + self.dec.val().f_delta;
        self.p21.next = bit_cast::<21, 20>(self.cur.val().pending_complement)
            + bit_cast::<21, 20>(self.dec.val().arrive_c);
        self.e21.next = bit_cast::<21, 20>(self.cur.val().expected_complement)
            + bit_cast::<21, 20>(self.dec.val().drop_c);
        self.cur_tag.next = bit_cast::<17, 16>(self.req.val().word);
        if self.cur.val().phase_parity {
            self.cur_tag.next = bit_cast::<17, 16>(self.req.val().word) | 0x1_0000;
        }
        self.tok_f.next = self.cur.val().tx_negated & 0x1F_F800;

        // ---- level 2: range checks, next P, completion condition (PTX 9.7.13.15.6).
        self.tx_range_ok.next = (self.f23.val().get_bits::<3>(20) == 0)
            || ((self.f23.val().get_bits::<3>(20) == 7) && (self.f23.val().get_bits::<20>(0) != 0));
        // count > pending: pending is 0 when P == 0, else 2^20 - P
        self.pend_under.next =
            (self.cur.val().pending_complement == 0) || (self.p21.val() > 0x10_0000);
        // count >= expected: expected is 0 when E == 0, else 2^20 - E
        self.drop_bad.next = (self.dec.val().drop_c != 0)
            && ((self.cur.val().expected_complement == 0) || self.e21.val().get_bit(20));
        self.p_next.next = bit_cast::<20, 21>(self.p21.val());
        if self.dec.val().is_cp_inc {
            // pending + 1
            self.p_next.next = self.cur.val().pending_complement - 1;
        }
        self.tok_word.next = self.cur.val();
        self.tok_word.next.bit0 = false;
        self.tok_word.next.expected_complement = 0.into();
        self.tok_word.next.tx_negated = self.tok_f.val();

        // ---- level 3: findings in the golden model's order, waitComplete.
        // `P` after the op is 0 and `F` after the op is 0 (zero points: stage 1)
        self.reaches_zero.next = (self.cur.val().pending_complement == self.dec.val().p_zero_at)
            && (self.f_sext.val() == self.dec.val().f_zero_at);
        self.finding.next = MbarrierFinding::NoFinding;
        if self.dec.val().early_finding != MbarrierFinding::NoFinding {
            // word beyond the bank, or an op not allowed on .shared::cluster
            self.finding.next = self.dec.val().early_finding;
        } else if self.dec.val().touches_word && !self.dec.val().is_init && !self.cur_valid.val() {
            self.finding.next = MbarrierFinding::MbarrierUninitialized;
        } else if self.dec.val().is_init && self.cur_valid.val() {
            self.finding.next = MbarrierFinding::MbarrierInitOnValid;
        } else if self.dec.val().count_bad {
            self.finding.next = MbarrierFinding::MbarrierCountOutOfRange;
        } else if self.dec.val().uses_tx && (self.dec.val().tx_big || !self.tx_range_ok.val()) {
            self.finding.next = MbarrierFinding::MbarrierTxCountOutOfRange;
        } else if self.dec.val().is_arrive && self.pend_under.val() {
            self.finding.next = MbarrierFinding::MbarrierPendingUnderflow;
        } else if self.dec.val().is_arrive && self.drop_bad.val() {
            self.finding.next = MbarrierFinding::MbarrierCountOutOfRange;
        } else if self.dec.val().is_cp_inc && (self.cur.val().pending_complement == 1) {
            // the increment would take pending_arrivals past 2^20-1 (PTX 9.7.13.15.15)
            self.finding.next = MbarrierFinding::MbarrierCountOutOfRange;
        } else if self.dec.val().no_complete && self.reaches_zero.val() {
            self.finding.next = MbarrierFinding::MbarrierNoCompleteCompleted;
        }
        self.ok.next = !(self.dec.val().req_bad
            || (self.dec.val().touches_word && !self.dec.val().is_init && !self.cur_valid.val())
            || (self.dec.val().is_init && self.cur_valid.val())
            || (self.dec.val().uses_tx && !self.tx_range_ok.val())
            || (self.dec.val().is_arrive && (self.pend_under.val() || self.drop_bad.val()))
            || (self.dec.val().is_cp_inc && (self.cur.val().pending_complement == 1))
            || (self.dec.val().no_complete && self.reaches_zero.val()));
        self.wait_complete.next = false;
        if self.dec.val().is_wait_token {
            // silicon compares the token's bit 63 with the current parity, nothing else
            self.wait_complete.next = self.cur.val().phase_parity != self.tok.val().phase_parity;
        }
        if self.dec.val().is_wait_parity {
            // the phase with that parity completed when the current parity differs
            self.wait_complete.next =
                self.cur.val().phase_parity != self.req.val().phase_parity;
        }
        self.complete.next = self.dec.val().may_complete && self.reaches_zero.val();

        // ---- level 4: the next word.
        self.word_d.next = self.cur.val();
        self.valid_d.next = self.cur_valid.val();
        if self.ok.val() {
            if self.dec.val().is_init {
                // silicon: lo32 = (2^20-c) << 1, hi32 = (2^20-c) << 11
                self.word_d.next.bit0 = false;
                self.word_d.next.expected_complement = self.dec.val().init_c;
                self.word_d.next.tx_negated = 0.into();
                self.word_d.next.bit42 = false;
                self.word_d.next.pending_complement = self.dec.val().init_c;
                self.word_d.next.phase_parity = false;
                self.valid_d.next = true;
            }
            if self.dec.val().is_inval {
                // silicon writes its cached state back: the word is unchanged
                self.valid_d.next = false;
            }
            if self.dec.val().is_arrive || self.dec.val().uses_tx || self.dec.val().is_cp_inc {
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
        self.suspends.next = self.dec.val().is_local_try
            && self.ok.val()
            && !self.wait_complete.val();
        self.completes.next =
            self.complete.val() && self.ok.val();
    }
}
