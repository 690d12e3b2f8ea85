//! MbarExec: stage 1 of the mbarrier unit: the word bank and the read-modify-write of one
//! word per cycle, back to back on the same word included.
//!
//! # Ports
//!
//! - `acc_valid` / `acc_req` / `acc_src` / `acc_word` (in): the operation accepted this cycle
//!   ([`super::arbiter::MbarArbiter`]); it enters the stage at this edge, and its word is read
//!   at this edge.
//! - `resp`, `fault`: the response (local port) and the finding, registered at the edge after
//!   the accepting edge.
//! - `suspend` / `susp_warp` / `susp_tag` / `susp_hint`: a try_wait suspends its warp this cycle
//!   (its {phase parity, word} and suspend-time limit), for the waiter table; `complete` /
//!   `cpl_tag`: an operation completes a phase this cycle.
//!
//! # The bank and the bypass
//!
//! `2^A` words in a RAM (block RAM) with a shadow valid bit per word in a second one (DESIGN.md
//! "shadow set"). The RAM returns the OLD value when one edge both writes and reads the same
//! word, so the word written at the edge that started this stage is forwarded from a bypass
//! register (`last_word`); the hit flag (`s1_fwd`) is computed at acceptance so the forward mux
//! is one level deep. Every operation writes its word back (unchanged when it does not modify
//! it or faults), which makes the forward exact without a write-enable term.

use super::word::MbarWordOp;
use super::{MbarrierFault, MbarrierFinding, MbarrierReq, MbarrierResp, MbarrierSource, MbarrierWord};
use rust_hdl::prelude::*;

/// Stage 1: the bank and the operation on it.
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
    /// response register
    pub resp: Signal<Out, MbarrierResp>,
    /// finding register
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
    /// the stage holds an operation
    s1_valid: DFF<bool>,
    /// its request
    s1_req: DFF<MbarrierReq>,
    /// its port
    s1_src: DFF<MbarrierSource>,
    /// it reads the word written at the edge that started it: take `last_word`
    s1_fwd: DFF<bool>,
    /// the word written at the last edge (bypass for the RAM's old-value read)
    last_word: DFF<MbarrierWord>,
    /// the shadow valid bit written at the last edge
    last_valid: DFF<bool>,
    /// response register
    resp_q: DFF<MbarrierResp>,
    /// fault register
    fault_q: DFF<MbarrierFault>,
    /// the operation on the word
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
            s1_fwd: Default::default(),
            last_word: Default::default(),
            last_valid: Default::default(),
            resp_q: Default::default(),
            fault_q: Default::default(),
            op: Default::default(),
            cur: Default::default(),
            cur_valid: Default::default(),
        }
    }
}

impl<const A: usize> MbarExec<A> {
    /// The word and valid bit written at the last edge, for the tests.
    #[cfg(test)]
    pub(crate) fn last_write(&self) -> (MbarrierWord, bool) {
        (self.last_word.q.val(), self.last_valid.q.val())
    }
}

impl<const A: usize> Logic for MbarExec<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, s1_valid, s1_req, s1_src, s1_fwd, last_word, last_valid, resp_q, fault_q);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.shadow.read_clock.next = self.clock.val();
        self.shadow.write_clock.next = self.clock.val();
        // acceptance: read the word; the stage register
        self.ram.read_address.next = bit_cast::<A, 16>(self.acc_word.val());
        self.shadow.read_address.next = bit_cast::<A, 16>(self.acc_word.val());
        self.s1_valid.d.next = self.acc_valid.val();
        self.s1_req.d.next = self.acc_req.val();
        self.s1_src.d.next = self.acc_src.val();
        // The stage writes its word at the edge where the next op's read happens, and the RAM
        // then returns the old value: forward (compare RAM addresses, so aliases stay exact).
        self.s1_fwd.d.next = self.s1_valid.q.val()
            && (bit_cast::<A, 16>(self.s1_req.q.val().word)
                == bit_cast::<A, 16>(self.acc_word.val()));
        // the word before the operation (RAM or forwarded) and the operation
        self.cur.next = self.ram.read_data.val();
        self.cur_valid.next = self.shadow.read_data.val();
        if self.s1_fwd.q.val() {
            self.cur.next = self.last_word.q.val();
            self.cur_valid.next = self.last_valid.q.val();
        }
        // (one assignment per input of the combinational sub-block: a default overridden in
        // the same evaluation glitches it, and with its outputs glitching back the generated
        // Verilog's zero-delay evaluation would not settle)
        self.op.cur.next = self.cur.val();
        self.op.cur_valid.next = self.cur_valid.val();
        self.op.req.next = self.s1_req.q.val();
        self.op.src.next = self.s1_src.q.val();
        self.op.word_hi_mask.next = self.word_hi_mask.val();
        // write-back of every operation (see the module doc)
        self.ram.write_address.next = bit_cast::<A, 16>(self.s1_req.q.val().word);
        self.ram.write_data.next = self.op.word_d.val();
        self.ram.write_enable.next = self.s1_valid.q.val();
        self.shadow.write_address.next = bit_cast::<A, 16>(self.s1_req.q.val().word);
        self.shadow.write_data.next = self.op.valid_d.val();
        self.shadow.write_enable.next = self.s1_valid.q.val();
        self.bank_we.next = self.s1_valid.q.val();
        self.bank_wa.next = bit_cast::<A, 16>(self.s1_req.q.val().word);
        self.bank_wd.next = self.op.word_d.val();
        self.bank_wv.next = self.op.valid_d.val();
        self.last_word.d.next = self.op.word_d.val();
        self.last_valid.d.next = self.op.valid_d.val();
        // the waiter table's inputs
        self.suspend.next = self.s1_valid.q.val() && self.op.suspends.val();
        self.susp_warp.next = self.s1_req.q.val().warp;
        self.susp_tag.next = self.op.cur_tag.val();
        self.susp_hint.next = self.default_suspend_cycles.val();
        if self.s1_req.q.val().has_suspend_time_hint {
            self.susp_hint.next = self.s1_req.q.val().suspend_time_hint;
        }
        self.complete.next = self.s1_valid.q.val() && self.op.completes.val();
        self.cpl_tag.next = self.op.cur_tag.val();
        // response and finding
        self.resp_q.d.next.valid =
            self.s1_valid.q.val() && (self.s1_src.q.val() == MbarrierSource::Local);
        self.resp_q.d.next.warp = self.s1_req.q.val().warp;
        self.resp_q.d.next.state = self.op.tok_word.val();
        self.resp_q.d.next.wait_complete = self.op.resp_wait.val();
        self.resp_q.d.next.suspended = self.suspend.val();
        self.resp_q.d.next.pending_count = self.op.pend_cnt.val();
        self.fault_q.d.next.valid =
            self.s1_valid.q.val() && (self.op.finding.val() != MbarrierFinding::NoFinding);
        self.fault_q.d.next.kind = self.op.finding.val();
        self.fault_q.d.next.word = self.s1_req.q.val().word;
        self.fault_q.d.next.source = self.s1_src.q.val();
        self.fault_q.d.next.warp = self.s1_req.q.val().warp;
        self.resp.next = self.resp_q.q.val();
        self.fault.next = self.fault_q.q.val();
    }
}
