//! MbarExec: stages 1 and 2 of the mbarrier unit: the word bank, its read stage and the
//! read-modify-write of one word per cycle, back to back on the same word included.
//!
//! # Ports
//!
//! - `acc_valid` / `acc_req` / `acc_src` / `acc_word` (in): the operation accepted this cycle
//!   ([`super::arbiter::MbarArbiter`]); it enters stage 1 (read) at this edge, where the bank
//!   latches its word index, and stage 2 (update) at the next.
//! - `resp`, `fault`: the response (local port) and the finding of the operation in stage 2,
//!   combinational from the stage-2 registers: valid after the second edge after acceptance,
//!   the edge after which the unit registered them before it had a read stage, so the consumer's
//!   register (the SM's response path) takes the place of the unit's old output register.
//! - `suspend` / `susp_warp` / `susp_tag` / `susp_hint`: a try_wait in stage 2 suspends its warp
//!   (its {phase parity, word} and suspend-time limit), for the waiter table; `complete` /
//!   `cpl_tag`: the operation in stage 2 completes a phase.
//! - `bank_we` / `bank_wa` / `bank_wd` / `bank_wv`: the bank write of the operation in stage 2,
//!   stored at the coming edge.
//!
//! # The bank, the read stage and the bypass
//!
//! `2^A` words in a RAM (block RAM) with a shadow valid bit per word in a second one (DESIGN.md
//! "shadow set"). Stage 1 registers the RAM's output (`rd_word`; ECP5: the DP16KD's clock-to-out
//! of 4.1 ns then ends at a register instead of heading the read-modify-write, docs/FPGA.md),
//! so stage 2 updates a word from registers. Stage 2 writes at the edge after its cycle, so the
//! word an operation reads can be two writes old: the RAM returns the OLD value when one edge
//! both writes and reads a word, and the write of the operation one ahead comes one edge after
//! the read. Both are forwarded from the bypass register `last_word` (the word written at the
//! last edge): the older in stage 1 (into `rd_word`, flag `s1_fwd_b`), the younger in stage 2
//! (flag `s2_fwd`, one mux level before the update). The hit flags are found at acceptance, by
//! comparing RAM addresses so aliases stay exact. While the word is read, stage 1 also decodes
//! the request ([`MbarReqDecode`]: op decode, operand checks, field deltas and zero points),
//! so stage 2 runs only the arithmetic that needs the word. Every operation writes its word back
//! (unchanged when it does not modify it or faults), which makes the forward exact without a
//! write-enable term.

use super::decode::{MbarDecoded, MbarReqDecode};
use super::word::MbarWordOp;
use super::{MbarrierFault, MbarrierFinding, MbarrierReq, MbarrierResp, MbarrierSource, MbarrierWord};
use rust_hdl::prelude::*;

/// Stages 1 and 2: the bank, its read stage and the operation on the word.
#[derive(LogicBlock)]
pub struct MbarExec<const A: usize> {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// an operation is accepted this cycle
    pub acc_valid: Signal<In, bool>,
    /// the accepted request
    pub acc_req: Signal<In, MbarrierReq>,
    /// its port
    pub acc_src: Signal<In, MbarrierSource>,
    /// its word index
    pub acc_word: Signal<In, Bits<16>>,
    /// the response of the operation in stage 2
    pub resp: Signal<Out, MbarrierResp>,
    /// its finding
    pub fault: Signal<Out, MbarrierFault>,
    /// a try_wait suspends its warp this cycle
    pub suspend: Signal<Out, bool>,
    /// that warp
    pub susp_warp: Signal<Out, Bits<5>>,
    /// {awaited phase parity, word index}
    pub susp_tag: Signal<Out, Bits<17>>,
    /// its suspend-time limit, cycles
    pub susp_hint: Signal<Out, Bits<32>>,
    /// an operation completes a phase this cycle
    pub complete: Signal<Out, bool>,
    /// {completed phase parity, word index}
    pub cpl_tag: Signal<Out, Bits<17>>,
    /// the bank's write port, for the SM engine's mirror of the words (the Verilator model
    /// reads these copies): write enable
    pub bank_we: Signal<Out, bool>,
    /// its word index
    pub bank_wa: Signal<Out, Bits<A>>,
    /// the word written
    pub bank_wd: Signal<Out, MbarrierWord>,
    /// its shadow valid bit
    pub bank_wv: Signal<Out, bool>,

    /// system-dependent suspend-time limit of try_wait, in cycles
    default_suspend_cycles: Constant<Bits<32>>,
    /// word-index bits at or above A (set: beyond the bank)
    word_hi_mask: Constant<Bits<16>>,
    /// the shared-memory words holding the mbarrier objects
    ram: RAM<MbarrierWord, A>,
    /// shadow valid bit per word (simulation assertions only; DESIGN.md "shadow set")
    shadow: RAM<bool, A>,
    /// stage 1 (read) holds an operation
    s1_valid: DFF<bool>,
    /// its request
    s1_req: DFF<MbarrierReq>,
    /// its port
    s1_src: DFF<MbarrierSource>,
    /// the op then in stage 2 writes its word at the edge that reads this one's: forward it
    s1_fwd_b: DFF<bool>,
    /// the op then in the read stage writes at the next edge: forward it in stage 2
    s1_fwd_a: DFF<bool>,
    /// stage 2 (update) holds an operation
    s2_valid: DFF<bool>,
    /// its request
    s2_req: DFF<MbarrierReq>,
    /// its port
    s2_src: DFF<MbarrierSource>,
    /// take `last_word` instead of `rd_word`
    s2_fwd: DFF<bool>,
    /// its request decoded in stage 1
    s2_dec: DFF<MbarDecoded>,
    /// the word read (or forwarded) in the read stage
    rd_word: DFF<MbarrierWord>,
    /// its shadow bit
    rd_valid: DFF<bool>,
    /// the word written at the last edge (bypass for the RAM's old-value read)
    last_word: DFF<MbarrierWord>,
    /// the shadow valid bit written at the last edge
    last_valid: DFF<bool>,
    /// stage 1: the request's half of the operation
    decode: MbarReqDecode,
    /// stage 2: the operation on the word
    op: MbarWordOp,
    /// the word before the operation (the RAM's, or the bypass)
    cur: Signal<Local, MbarrierWord>,
    /// its shadow valid bit
    cur_valid: Signal<Local, bool>,
}

impl<const A: usize> MbarExec<A> {
    /// The stage with `2^A` words (zeroed, no valid mbarrier) and a try_wait system time limit
    /// of `default_suspend_cycles`.
    pub fn new(default_suspend_cycles: u32) -> Self {
        let hi_mask: u64 = 0xFFFF & !((1u64 << A) - 1);
        Self {
            clock: Default::default(),
            acc_valid: Default::default(),
            acc_req: Default::default(),
            acc_src: Default::default(),
            acc_word: Default::default(),
            resp: Default::default(),
            fault: Default::default(),
            suspend: Default::default(),
            susp_warp: Default::default(),
            susp_tag: Default::default(),
            susp_hint: Default::default(),
            complete: Default::default(),
            cpl_tag: Default::default(),
            bank_we: Default::default(),
            bank_wa: Default::default(),
            bank_wd: Default::default(),
            bank_wv: Default::default(),
            default_suspend_cycles: Constant::new((default_suspend_cycles as u64).into()),
            word_hi_mask: Constant::new(hi_mask.into()),
            ram: (0..(1usize << A)).map(|_| MbarrierWord::default()).into(),
            shadow: (0..(1usize << A)).map(|_| false).into(),
            s1_valid: Default::default(),
            s1_req: Default::default(),
            s1_src: Default::default(),
            s1_fwd_b: Default::default(),
            s1_fwd_a: Default::default(),
            s2_valid: Default::default(),
            s2_req: Default::default(),
            s2_src: Default::default(),
            s2_fwd: Default::default(),
            s2_dec: Default::default(),
            rd_word: Default::default(),
            rd_valid: Default::default(),
            last_word: Default::default(),
            last_valid: Default::default(),
            decode: Default::default(),
            op: Default::default(),
            cur: Default::default(),
            cur_valid: Default::default(),
        }
    }
}

impl<const A: usize> MbarExec<A> {
    /// The word and valid bit the operation in stage 2 writes at the coming edge, for the
    /// tests.
    #[cfg(test)]
    pub(crate) fn last_write(&self) -> (MbarrierWord, bool) {
        (self.bank_wd.val(), self.bank_wv.val())
    }
}

impl<const A: usize> Logic for MbarExec<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, s1_valid, s1_req, s1_src, s1_fwd_b, s1_fwd_a, s2_valid, s2_req, s2_src, s2_fwd, s2_dec, rd_word, rd_valid, last_word, last_valid);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.shadow.read_clock.next = self.clock.val();
        self.shadow.write_clock.next = self.clock.val();
        // acceptance: the bank latches the word index; the stage-1 registers; the hit flags of
        // the two writes the read misses (stage 2's, at this edge; stage 1's, at the next)
        self.ram.read_address.next = bit_cast::<A, 16>(self.acc_word.val());
        self.shadow.read_address.next = bit_cast::<A, 16>(self.acc_word.val());
        self.s1_valid.d.next = self.acc_valid.val();
        self.s1_req.d.next = self.acc_req.val();
        self.s1_src.d.next = self.acc_src.val();
        self.s1_fwd_b.d.next = self.s2_valid.q.val()
            && (bit_cast::<A, 16>(self.s2_req.q.val().word)
                == bit_cast::<A, 16>(self.acc_word.val()));
        self.s1_fwd_a.d.next = self.s1_valid.q.val()
            && (bit_cast::<A, 16>(self.s1_req.q.val().word)
                == bit_cast::<A, 16>(self.acc_word.val()));
        // stage 1: the word read, or the word stage 2 wrote at the edge of the read
        self.s2_valid.d.next = self.s1_valid.q.val();
        self.s2_req.d.next = self.s1_req.q.val();
        self.s2_src.d.next = self.s1_src.q.val();
        self.s2_fwd.d.next = self.s1_fwd_a.q.val();
        self.decode.req.next = self.s1_req.q.val();
        self.decode.src.next = self.s1_src.q.val();
        self.decode.word_hi_mask.next = self.word_hi_mask.val();
        self.s2_dec.d.next = self.decode.dec.val();
        self.rd_word.d.next = self.ram.read_data.val();
        self.rd_valid.d.next = self.shadow.read_data.val();
        if self.s1_fwd_b.q.val() {
            self.rd_word.d.next = self.last_word.q.val();
            self.rd_valid.d.next = self.last_valid.q.val();
        }
        // stage 2: the word before the operation, or the word written at the last edge
        self.cur.next = self.rd_word.q.val();
        self.cur_valid.next = self.rd_valid.q.val();
        if self.s2_fwd.q.val() {
            self.cur.next = self.last_word.q.val();
            self.cur_valid.next = self.last_valid.q.val();
        }
        // (one assignment per input of the combinational sub-block: a default overridden in
        // the same evaluation glitches it, and with its outputs glitching back the generated
        // Verilog's zero-delay evaluation would not settle)
        self.op.cur.next = self.cur.val();
        self.op.cur_valid.next = self.cur_valid.val();
        self.op.req.next = self.s2_req.q.val();
        self.op.dec.next = self.s2_dec.q.val();
        // write-back of every operation (see the module doc)
        self.ram.write_address.next = bit_cast::<A, 16>(self.s2_req.q.val().word);
        self.ram.write_data.next = self.op.word_d.val();
        self.ram.write_enable.next = self.s2_valid.q.val();
        self.shadow.write_address.next = bit_cast::<A, 16>(self.s2_req.q.val().word);
        self.shadow.write_data.next = self.op.valid_d.val();
        self.shadow.write_enable.next = self.s2_valid.q.val();
        self.bank_we.next = self.s2_valid.q.val();
        self.bank_wa.next = bit_cast::<A, 16>(self.s2_req.q.val().word);
        self.bank_wd.next = self.op.word_d.val();
        self.bank_wv.next = self.op.valid_d.val();
        self.last_word.d.next = self.op.word_d.val();
        self.last_valid.d.next = self.op.valid_d.val();
        // the waiter table's inputs
        self.suspend.next = self.s2_valid.q.val() && self.op.suspends.val();
        self.susp_warp.next = self.s2_req.q.val().warp;
        self.susp_tag.next = self.op.cur_tag.val();
        self.susp_hint.next = self.default_suspend_cycles.val();
        if self.s2_req.q.val().has_suspend_time_hint {
            self.susp_hint.next = self.s2_req.q.val().suspend_time_hint;
        }
        self.complete.next = self.s2_valid.q.val() && self.op.completes.val();
        self.cpl_tag.next = self.op.cur_tag.val();
        // response and finding (combinational: see the module doc)
        self.resp.next.valid =
            self.s2_valid.q.val() && (self.s2_src.q.val() == MbarrierSource::Local);
        self.resp.next.warp = self.s2_req.q.val().warp;
        self.resp.next.state = self.op.tok_word.val();
        self.resp.next.wait_complete = self.op.resp_wait.val();
        self.resp.next.suspended = self.suspend.val();
        self.resp.next.pending_count = self.s2_dec.q.val().pend_cnt;
        self.fault.next.valid =
            self.s2_valid.q.val() && (self.op.finding.val() != MbarrierFinding::NoFinding);
        self.fault.next.kind = self.op.finding.val();
        self.fault.next.word = self.s2_req.q.val().word;
        self.fault.next.source = self.s2_src.q.val();
        self.fault.next.warp = self.s2_req.q.val().warp;
    }
}
