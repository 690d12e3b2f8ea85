//! MbarrierUnit: the mbarrier engine of one CTA (PTX 9.7.13.15).
//!
//! mbarrier objects are 64-bit words in shared memory. The unit owns a word-addressed bank of
//! `2^A` shared-memory words (`RAM<MbarrierWord, A>`); any word of the bank can hold an mbarrier
//! (PTX 9.7.13.15.1: `.b64`, 8-byte aligned, so word index = byte address >> 3). The word layout
//! is sm_90's own encoding as measured on an H200 (docs/MBARRIER_ENCODING.md, DESIGN.md "The
//! mbarrier object"), bit-exact: bit 0 unused (carried), `E` = (2^20 - expected) mod 2^20 in
//! 1..=20, `F` = (-tx) mod 2^21 in 21..=41, bit 42 (must be 0, carried), `P` = (2^20 - pending)
//! mod 2^20 in 43..=62, phase parity in 63. The counts are complements that count up towards
//! zero, so an arrive of `c` is `P += c`, arrive_drop also `E += c`, expect-tx `F -= n`,
//! complete-tx `F += n`, and the phase is complete when `P == 0 && F == 0` (then the parity
//! flips and `P = E`). There is no phase number, only its parity.
//!
//! Every operation is a pipelined read-modify-write of one word, one operation per cycle,
//! back-to-back on the same word included:
//! - stage 0 (accept): a round-robin arbiter picks one of three ready/valid request ports and
//!   presents the word index to the RAM's synchronous read port;
//! - stage 1 (read): the RAM's output is registered (the block RAM's clock-to-out ends at a
//!   register instead of heading the update, docs/FPGA.md), and the request is decoded
//!   ([`decode::MbarReqDecode`]: everything of the operation that needs no word);
//! - stage 2 (update): the old word (registered, or forwarded, see below) gives the operation's
//!   next word, written back at the next edge; its response, finding and waiter-table inputs are
//!   combinational from the stage-2 registers.
//!
//! [`MbarrierUnit`] only wires one block per stage: [`arbiter::MbarArbiter`] (stage 0),
//! [`exec::MbarExec`] (stages 1 and 2: the bank, the bypass and the registers) with its
//! combinational request decode [`decode::MbarReqDecode`] and word operation
//! [`word::MbarWordOp`], and the waiter table [`waiters::MbarWaiters`].
//!
//! The RAM returns the OLD value when one edge both writes and reads the same word, and stage 2
//! writes one edge after the read of the next operation, so an operation's word can be two
//! writes old; both are forwarded from a bypass register (`last_word`, the word written at the
//! last edge: the older into stage 1's register, the younger in stage 2); the hit flags are
//! computed at acceptance so each forward mux is one level deep. Stage 2 writes the word back on
//! every operation (unchanged when the operation does not modify it or faults), which makes the
//! forward exact without a write-enable term. A second 1-bit bank (`shadow`) holds the DESIGN.md
//! shadow valid bit per word, forwarded the same way.
//!
//! The ports show every event after the same edge as when the unit had no read stage and
//! registered its outputs instead: the read stage takes the place of the output registers, and
//! `resp`, `fault` and `wake` are combinational from registers (the consumer registers them: the
//! SM's response path, `sync.mbarrier_response_cycles`, counts that register). So no latency
//! the SM engine sees moves.
//!
//! Waiter table: one entry per warp (state, {awaited phase parity, word}, deadline). A try_wait
//! that finds its phase incomplete suspends its warp (response `suspended`); the entry wakes by
//! completion when a later op completes that phase of that word (the completion is registered
//! and applied the next cycle), or by timeout when the free-running cycle counter reaches
//! `now + hint + 1` (`hint` = suspendTimeHint, or the system limit). Woken entries leave one per
//! cycle on `wake`, lowest warp first; a timed-out entry whose phase completes before it leaves
//! (by a stage-2 write before the edge after which its wake shows) leaves as woken by completion,
//! so `wake.completed` agrees with the word as the writes before that edge left it. Timing (cycle k = the op's acceptance): response at
//! k + 1 (visible after edge k + 1), timeout wake at k + 3 + hint at the earliest, completion
//! wake at j + 3 for the completing op accepted at j.
//!
//! Ports (all synchronous to `clock`):
//! - `local_req`/`local_valid`/`local_ready`: ops of this CTA's warps (all ops).
//! - `tma_req`/`tma_valid`/`tma_ready`: the TMA engine (complete_tx of cp.async.bulk*).
//! - `cluster_req`/`cluster_valid`/`cluster_ready`: other CTAs of the cluster and the
//!   async-store path (st.async / red.async complete_tx, `.shared::cluster` arrive /
//!   arrive_drop / expect_tx / complete_tx). Ops not allowed on `.shared::cluster`
//!   (PTX 9.7.13.15.8) raise `MbarrierClusterAddressUnsupported`. Remote ops get no response.
//! - `resp`: one response per accepted `local_req`, valid after the edge after acceptance
//!   (combinational from stage 2; no back-pressure: the issuing warp holds a slot for it). `resp.state` is the token of the
//!   op: bits 32..=63 of the word before the op, bits 0..=31 zero (silicon leaves them
//!   unwritten for plain arrives); `resp.pending_count` is the 32-bit pending_count result.
//! - `wake`: at most one wake event per cycle for a warp suspended by try_wait.
//! - `fault`: simulation-assertion findings (a `MbarrierFinding` code, the golden model's
//!   names), with the response. A faulting op does not change the word.
//!
//! Semantics follow the golden model's pure word functions (`hopsync_cosim::mbarrier`),
//! including their finding order. As on silicon, phase completion is checked after arrive-on,
//! expect-tx and complete-tx alike (an expect-tx that brings a negative tx-count to 0 with no
//! arrivals pending completes the phase); `mbarrier.inval` leaves the word unchanged (silicon
//! writes its cached state back) and only clears the shadow valid bit; test_wait / try_wait with
//! a token compare the token's bit 63 with the current parity and nothing else.
//!
//! Not decided here (the executor's job, per docs/MBARRIER_ENCODING.md):
//! - `MbarrierWaitPhaseInvalid` (a token neither of the current nor of the preceding phase):
//!   neither the word nor the token holds the phase number, so the unit cannot tell a token two
//!   phases old from a current one (silicon cannot either). The golden model checks it on the
//!   side from the phase of the thread's last arrive, which the executor holds.
//! - Warp merging: a warp's plain arrives (arrive, arrive with count, arrive_drop, .expect_tx)
//!   on one object merge into ONE request with the counts and tx amounts summed, and every lane
//!   gets the same token. `count` and `tx_count` are 32 bits wide, so a merged sum (at most
//!   32 * (2^20-1)) reaches the unit intact: a merged count above 2^20-1 is
//!   `MbarrierCountOutOfRange`, a txCount of 2^21 or more `MbarrierTxCountOutOfRange`.
//! - `.noComplete` arrives go per group of lanes with equal counts; the lane-mask low half of
//!   their tokens and the per-lane pending offsets are added by the executor.
//!
//! Assumptions (documented, not checked):
//! - Requests carry the word index (shared::cta byte address >> 3; the executor checks the
//!   8-byte alignment of PTX 9.7.13.15.1). Indices >= 2^A raise `MbarrierNotShared`.
//! - `suspend_time_hint` is already in cycles (the executor converts the PTX nanoseconds);
//!   without a hint the system limit `default_suspend_cycles` (a constructor parameter) applies.
//! - A warp has at most one try_wait outstanding (it is suspended); a new try_wait of the same
//!   warp replaces its waiter entry.
//! - `mbarrier.pending_count` is pure on the token (PTX 9.7.13.15.17): it goes through the
//!   pipeline as an op that returns `2^20 - token[43..=62]` (2^20 for a zero field, as on
//!   silicon) and touches no word.
//! - `cp.async.mbarrier.arrive` without `.noinc` is the op `CpAsyncArriveInc` (pending + 1, that
//!   is `P -= 1`, at issue, PTX 9.7.13.15.15); its deferred arrive-on later comes in as a plain
//!   `Arrive`. `.noinc` needs no op at issue.
//! - Bits 0 and 42 are carried unchanged and written 0 by init. Silicon traps on any op on a
//!   word with bit 42 set; the golden model does not, and no op of the unit ever sets it.
//!
//! PTX clauses implemented: 9.7.13.15.2 (contents, ranges), 9.7.13.15.3 (lifecycle: shadow
//! valid bit), 9.7.13.15.4 (phases), 9.7.13.15.5.1/2 (expect-tx, complete-tx), 9.7.13.15.6
//! (phase completion: pending == 0 and tx-count == 0; pending reloads from expected),
//! 9.7.13.15.7 (arrive-on), 9.7.13.15.8 (ops allowed on .shared::cluster), 9.7.13.15.9 (init),
//! 9.7.13.15.10 (inval), 9.7.13.15.11 (expect_tx), 9.7.13.15.12 (complete_tx), 9.7.13.15.13
//! (arrive, .expect_tx, .noComplete), 9.7.13.15.14 (arrive_drop: expected count decremented for
//! later phases), 9.7.13.15.15 (cp.async.mbarrier.arrive), 9.7.13.15.16 (test_wait / try_wait,
//! token and parity forms, suspension with time limit; the token-phase validity check is the
//! executor's, see above), 9.7.13.15.17 (pending_count).

use rust_hdl::prelude::*;

pub mod arbiter;
pub mod decode;
pub mod exec;
pub mod waiters;
pub mod word;

use arbiter::MbarArbiter;
use exec::MbarExec;
use waiters::MbarWaiters;

/// Warps per CTA (1024 threads / 32): one waiter entry per warp.
pub const MBARRIER_WAITERS: usize = 32;
// The wake priority loops of `waiters::MbarWaiters` take the entries as 4 groups of 8.
const _: () = assert!(MBARRIER_WAITERS == 32);

/// One mbarrier object in sm_90's encoding (docs/MBARRIER_ENCODING.md), packed LSB-first: the
/// packed 64 bits are the silicon word.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct MbarrierWord {
    /// bit 0: unused; 0 after init, carried unchanged.
    pub bit0: bool,
    /// bits 1..=20: `E` = (2^20 - expected arrivals) mod 2^20.
    pub expected_complement: Bits<20>,
    /// bits 21..=41: `F` = (-tx-count) mod 2^21 (21-bit two's complement of -tx).
    pub tx_negated: Bits<21>,
    /// bit 42: must be 0 (silicon traps when set); 0 after init, carried unchanged.
    pub bit42: bool,
    /// bits 43..=62: `P` = (2^20 - pending arrivals) mod 2^20.
    pub pending_complement: Bits<20>,
    /// bit 63: phase parity (bit 0 of the phase number; nothing else counts phases).
    pub phase_parity: bool,
}

impl MbarrierWord {
    /// The 64-bit word as software reads it (the silicon word).
    pub fn to_u64(self) -> u64 {
        let b: Bits<64> = self.into();
        b.to_u64()
    }
    /// Unpacks a 64-bit word.
    pub fn from_u64(x: u64) -> Self {
        Self {
            bit0: x & 1 == 1,
            expected_complement: ((x >> 1) & 0xF_FFFF).into(),
            tx_negated: ((x >> 21) & 0x1F_FFFF).into(),
            bit42: (x >> 42) & 1 == 1,
            pending_complement: ((x >> 43) & 0xF_FFFF).into(),
            phase_parity: (x >> 63) & 1 == 1,
        }
    }
}

/// mbarrier operations (PTX 9.7.13.15.9 .. 9.7.13.15.17).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum MbarrierOp {
    /// mbarrier.init [a], count
    Init,
    /// mbarrier.inval [a]
    Inval,
    /// mbarrier.arrive state, [a]{, count}
    Arrive,
    /// mbarrier.arrive.noComplete state, [a], count
    ArriveNoComplete,
    /// mbarrier.arrive.expect_tx state, [a], txCount (arrive count 1)
    ArriveExpectTx,
    /// mbarrier.arrive_drop state, [a]{, count}
    ArriveDrop,
    /// mbarrier.arrive_drop.noComplete state, [a], count
    ArriveDropNoComplete,
    /// mbarrier.arrive_drop.expect_tx state, [a], txCount (arrive count 1)
    ArriveDropExpectTx,
    /// mbarrier.expect_tx [a], txCount
    ExpectTx,
    /// mbarrier.complete_tx [a], txCount (also TMA / st.async / red.async completion)
    CompleteTx,
    /// mbarrier.test_wait waitComplete, [a], state
    TestWait,
    /// mbarrier.test_wait.parity waitComplete, [a], phaseParity
    TestWaitParity,
    /// mbarrier.try_wait waitComplete, [a], state{, suspendTimeHint}
    TryWait,
    /// mbarrier.try_wait.parity waitComplete, [a], phaseParity{, suspendTimeHint}
    TryWaitParity,
    /// mbarrier.pending_count count, state (pure on the token)
    PendingCount,
    /// cp.async.mbarrier.arrive [a] without .noinc: pending + 1 (`P -= 1`) at issue
    CpAsyncArriveInc,
}

/// Which port an operation came from.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum MbarrierSource {
    /// this CTA's warps
    Local,
    /// the TMA engine
    Tma,
    /// other CTAs of the cluster / async stores
    Cluster,
}

/// Simulation-assertion findings; variant names are the golden model's `FindingKind` names.
/// `MbarrierWaitPhaseInvalid` is not among them: it needs the phase number, which the word does
/// not hold (the executor checks it on the side).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum MbarrierFinding {
    /// no finding
    NoFinding,
    /// an op other than init (and pending_count) on a word holding no valid mbarrier
    /// (PTX 9.7.13.15.3; shadow valid bit)
    MbarrierUninitialized,
    /// init on a word that still holds a valid mbarrier (PTX 9.7.13.15.9)
    MbarrierInitOnValid,
    /// count operand outside 1..=2^20-1 (a warp's merged count included), an arrive_drop that
    /// would take the expected count to zero or below, or a pending count pushed past 2^20-1 by
    /// cp.async.mbarrier.arrive (PTX 9.7.13.15.2, 9.7.13.15.14, 9.7.13.15.15)
    MbarrierCountOutOfRange,
    /// an arrive-on count exceeds the pending arrivals (silicon traps)
    MbarrierPendingUnderflow,
    /// the resulting tx-count lies outside -(2^20-1)..=2^20-1
    MbarrierTxCountOutOfRange,
    /// a .noComplete arrive would complete the phase (PTX 9.7.13.15.13)
    MbarrierNoCompleteCompleted,
    /// a remote port (.shared::cluster) sent an op other than arrive / arrive_drop /
    /// expect_tx / complete_tx (PTX 9.7.13.15.8)
    MbarrierClusterAddressUnsupported,
    /// word index beyond the shared-memory bank (PTX 9.7.13.15.1: the object is in .shared)
    MbarrierNotShared,
}

impl MbarrierFinding {
    /// The finding's stable name (the golden model's `FindingKind::name`); `None` for `NoFinding`.
    pub fn name(self) -> Option<&'static str> {
        match self {
            MbarrierFinding::NoFinding => None,
            MbarrierFinding::MbarrierUninitialized => Some("MbarrierUninitialized"),
            MbarrierFinding::MbarrierInitOnValid => Some("MbarrierInitOnValid"),
            MbarrierFinding::MbarrierCountOutOfRange => Some("MbarrierCountOutOfRange"),
            MbarrierFinding::MbarrierPendingUnderflow => Some("MbarrierPendingUnderflow"),
            MbarrierFinding::MbarrierTxCountOutOfRange => Some("MbarrierTxCountOutOfRange"),
            MbarrierFinding::MbarrierNoCompleteCompleted => Some("MbarrierNoCompleteCompleted"),
            MbarrierFinding::MbarrierClusterAddressUnsupported => {
                Some("MbarrierClusterAddressUnsupported")
            }
            MbarrierFinding::MbarrierNotShared => Some("MbarrierNotShared"),
        }
    }
}

/// State of one waiter-table entry (one per warp).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum WaiterState {
    /// no try_wait outstanding
    Idle,
    /// suspended in try_wait
    Waiting,
    /// the awaited phase completed; wake event pending
    WokenByCompletion,
    /// the suspend-time limit expired; wake event pending
    WokenByTimeout,
}

/// A request on any of the three ports.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct MbarrierReq {
    /// the operation
    pub op: MbarrierOp,
    /// word index of the mbarrier in the shared-memory bank
    pub word: Bits<16>,
    /// count operand (init count, arrive count: a warp's merged sum); u32 so ranges can be checked
    pub count: Bits<32>,
    /// txCount operand of expect_tx / complete_tx / .expect_tx forms (u32; a warp's merged sum)
    pub tx_count: Bits<32>,
    /// arrive token (`state`) of test_wait / try_wait / pending_count (only bits 43..=63 count)
    pub token: MbarrierWord,
    /// phaseParity operand of the .parity forms
    pub phase_parity: bool,
    /// issuing warp (responses and wake events name it)
    pub warp: Bits<5>,
    /// suspendTimeHint, already in cycles
    pub suspend_time_hint: Bits<32>,
    /// whether suspend_time_hint was given
    pub has_suspend_time_hint: bool,
}

/// The response to a local request.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct MbarrierResp {
    /// a response is present this cycle
    pub valid: bool,
    /// the issuing warp
    pub warp: Bits<5>,
    /// the token: bits 32..=63 of the word before the operation, bits 0..=31 zero (the arrive
    /// token `state` of arrive ops)
    pub state: MbarrierWord,
    /// waitComplete of test_wait / try_wait
    pub wait_complete: bool,
    /// try_wait found the phase incomplete and suspended the warp (a wake event follows)
    pub suspended: bool,
    /// pending_count result: 2^20 - token[43..=62] (2^20 when that field is 0)
    pub pending_count: Bits<32>,
}

/// A wake event for a warp suspended in try_wait.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct MbarrierWake {
    /// an event is present this cycle
    pub valid: bool,
    /// the warp to resume
    pub warp: Bits<5>,
    /// true: woken by phase completion (waitComplete = true); false: by the time limit
    pub completed: bool,
}

/// A finding of the simulation assertions.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct MbarrierFault {
    /// a finding is present this cycle
    pub valid: bool,
    /// which finding
    pub kind: MbarrierFinding,
    /// word index of the faulting op
    pub word: Bits<16>,
    /// port of the faulting op
    pub source: MbarrierSource,
    /// warp of the faulting op (local port)
    pub warp: Bits<5>,
}

/// The mbarrier unit with a bank of `2^A` shared-memory words (1 <= A <= 16): it only wires
/// its three stage blocks.
#[derive(LogicBlock)]
pub struct MbarrierUnit<const A: usize> {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// request from this CTA's warps
    pub local_req: Signal<In, MbarrierReq>,
    /// `local_req` is valid
    pub local_valid: Signal<In, bool>,
    /// `local_req` is accepted this cycle
    pub local_ready: Signal<Out, bool>,
    /// request from the TMA engine
    pub tma_req: Signal<In, MbarrierReq>,
    /// `tma_req` is valid
    pub tma_valid: Signal<In, bool>,
    /// `tma_req` is accepted this cycle
    pub tma_ready: Signal<Out, bool>,
    /// request from other CTAs of the cluster / async stores
    pub cluster_req: Signal<In, MbarrierReq>,
    /// `cluster_req` is valid
    pub cluster_valid: Signal<In, bool>,
    /// `cluster_req` is accepted this cycle
    pub cluster_ready: Signal<Out, bool>,
    /// response to a local request, valid after the edge after the accepting edge
    pub resp: Signal<Out, MbarrierResp>,
    /// wake event of a try_wait-suspended warp
    pub wake: Signal<Out, MbarrierWake>,
    /// simulation-assertion finding
    pub fault: Signal<Out, MbarrierFault>,

    /// stage 0: the round-robin arbiter
    arb: MbarArbiter,
    /// stages 1 and 2: the bank, its read stage and the read-modify-write
    exec: MbarExec<A>,
    /// the waiter table
    waiters: MbarWaiters,
}

impl<const A: usize> MbarrierUnit<A> {
    /// A unit with `2^A` words and a try_wait system time limit of `default_suspend_cycles`.
    /// Words start zeroed and their shadow valid bits cleared (no word holds an mbarrier), in
    /// the Rust model and in the Verilog (`initial` blocks) alike; real shared memory starts
    /// undefined, which the shadow bit covers (`MbarrierUninitialized`).
    pub fn new(default_suspend_cycles: u32) -> Self {
        assert!(
            (1..=16).contains(&A),
            "the bank holds 2^A words, 1 <= A <= 16"
        );
        Self {
            clock: Default::default(),
            local_req: Default::default(),
            local_valid: Default::default(),
            local_ready: Default::default(),
            tma_req: Default::default(),
            tma_valid: Default::default(),
            tma_ready: Default::default(),
            cluster_req: Default::default(),
            cluster_valid: Default::default(),
            cluster_ready: Default::default(),
            resp: Default::default(),
            wake: Default::default(),
            fault: Default::default(),
            arb: Default::default(),
            exec: MbarExec::new(default_suspend_cycles),
            waiters: Default::default(),
        }
    }

    /// The word and shadow valid bit the last operation wrote (the bypass registers), for the
    /// tests.
    #[cfg(test)]
    pub(crate) fn last_write(&self) -> (MbarrierWord, bool) {
        self.exec.last_write()
    }
}

impl<const A: usize> Logic for MbarrierUnit<A> {
    #[hdl_gen]
    fn update(&mut self) {
        self.arb.clock.next = self.clock.val();
        self.exec.clock.next = self.clock.val();
        self.waiters.clock.next = self.clock.val();
        self.arb.local_req.next = self.local_req.val();
        self.arb.local_valid.next = self.local_valid.val();
        self.local_ready.next = self.arb.local_ready.val();
        self.arb.tma_req.next = self.tma_req.val();
        self.arb.tma_valid.next = self.tma_valid.val();
        self.tma_ready.next = self.arb.tma_ready.val();
        self.arb.cluster_req.next = self.cluster_req.val();
        self.arb.cluster_valid.next = self.cluster_valid.val();
        self.cluster_ready.next = self.arb.cluster_ready.val();
        self.exec.acc_valid.next = self.arb.acc_valid.val();
        self.exec.acc_req.next = self.arb.acc_req.val();
        self.exec.acc_src.next = self.arb.acc_src.val();
        self.exec.acc_word.next = self.arb.acc_word.val();
        self.waiters.suspend.next = self.exec.suspend.val();
        self.waiters.susp_warp.next = self.exec.susp_warp.val();
        self.waiters.susp_tag.next = self.exec.susp_tag.val();
        self.waiters.susp_hint.next = self.exec.susp_hint.val();
        self.waiters.complete.next = self.exec.complete.val();
        self.waiters.cpl_tag.next = self.exec.cpl_tag.val();
        self.resp.next = self.exec.resp.val();
        self.wake.next = self.waiters.wake.val();
        self.fault.next = self.exec.fault.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{require_yosys, yosys_check_flat, Trace, XorShift};
    use hopsync_cosim::mbarrier as golden;

    /// The tests use a bank of 2^6 = 64 words.
    const A: usize = 6;
    type Uut = MbarrierUnit<A>;
    /// System suspend-time limit of the unit under test, cycles.
    const DEFAULT_SUSPEND: u32 = 48;

    /// Requests presented on the three ports this cycle (None: valid low).
    #[derive(Default, Clone, Copy)]
    struct Ports {
        local: Option<MbarrierReq>,
        tma: Option<MbarrierReq>,
        cluster: Option<MbarrierReq>,
    }

    /// Outputs of one cycle: readies before the edge, registered outputs after it.
    #[derive(Debug, Clone, Copy)]
    struct Sampled {
        local_ready: bool,
        tma_ready: bool,
        cluster_ready: bool,
        resp: MbarrierResp,
        wake: MbarrierWake,
        fault: MbarrierFault,
    }

    struct Tb {
        uut: Box<Uut>,
        /// when set, every cycle is recorded for the iverilog replay
        trace: Option<Trace>,
        /// cycles run so far (the unit's `now` counter)
        steps: u64,
    }

    /// Idle cycles after construction: the RAM read registers are defined afterwards.
    const WARMUP: usize = 2;

    impl Tb {
        fn new() -> Tb {
            Tb::build(None)
        }

        fn build(trace: Option<Trace>) -> Tb {
            let mut uut = Box::new(Uut::new(DEFAULT_SUSPEND));
            uut.connect_all();
            assert!(simulate(&mut *uut, 200));
            let mut tb = Tb {
                uut,
                trace,
                steps: 0,
            };
            for _ in 0..WARMUP {
                tb.idle();
            }
            tb
        }

        fn traced() -> Tb {
            let w = MbarrierReq::BITS;
            Tb::build(Some(Trace {
                inputs: vec![
                    ("local_req", w),
                    ("local_valid", 1),
                    ("tma_req", w),
                    ("tma_valid", 1),
                    ("cluster_req", w),
                    ("cluster_valid", 1),
                ],
                pre: vec![("local_ready", 1), ("tma_ready", 1), ("cluster_ready", 1)],
                post: vec![
                    ("resp", MbarrierResp::BITS),
                    ("wake", MbarrierWake::BITS),
                    ("fault", MbarrierFault::BITS),
                ],
                rows: vec![],
                warmup: WARMUP,
            }))
        }

        /// One clock cycle: settle the inputs with the clock low (readies are combinational),
        /// then raise the clock and settle (registered outputs).
        fn step(&mut self, p: &Ports) -> Sampled {
            self.steps += 1;
            let u = &mut *self.uut;
            u.local_valid.next = p.local.is_some();
            u.local_req.next = p.local.unwrap_or_default();
            u.tma_valid.next = p.tma.is_some();
            u.tma_req.next = p.tma.unwrap_or_default();
            u.cluster_valid.next = p.cluster.is_some();
            u.cluster_req.next = p.cluster.unwrap_or_default();
            u.clock.next = false.into();
            assert!(simulate(u, 200), "combinational logic did not settle");
            let (local_ready, tma_ready, cluster_ready) = (
                u.local_ready.val(),
                u.tma_ready.val(),
                u.cluster_ready.val(),
            );
            u.clock.next = true.into();
            assert!(simulate(u, 200), "combinational logic did not settle");
            let s = Sampled {
                local_ready,
                tma_ready,
                cluster_ready,
                resp: u.resp.val(),
                wake: u.wake.val(),
                fault: u.fault.val(),
            };
            if let Some(t) = &mut self.trace {
                let h = |r: Option<MbarrierReq>| Trace::hex(r.unwrap_or_default());
                let b = |x: bool| Trace::hex(x);
                t.rows.push((
                    vec![
                        h(p.local),
                        b(p.local.is_some()),
                        h(p.tma),
                        b(p.tma.is_some()),
                        h(p.cluster),
                        b(p.cluster.is_some()),
                    ],
                    [
                        b(local_ready),
                        b(tma_ready),
                        b(cluster_ready),
                        Trace::hex(s.resp),
                        Trace::hex(s.wake),
                        Trace::hex(s.fault),
                    ]
                    .join(" "),
                ));
            }
            s
        }

        fn idle(&mut self) -> Sampled {
            self.step(&Ports::default())
        }

        /// Issues one local op alone and returns the cycle carrying its response.
        fn exec(&mut self, r: MbarrierReq) -> Sampled {
            let s = self.step(&Ports {
                local: Some(r),
                ..Default::default()
            });
            assert!(s.local_ready, "a lone local request is accepted at once");
            let s = self.idle();
            assert!(s.resp.valid);
            s
        }

        /// Like exec, and asserts no finding.
        fn ok(&mut self, r: MbarrierReq) -> MbarrierResp {
            let s = self.exec(r);
            assert!(
                !s.fault.valid,
                "unexpected finding {:?} for {:?}",
                s.fault.kind, r.op
            );
            s.resp
        }

        /// Like exec, and returns the finding's name.
        fn finding(&mut self, r: MbarrierReq) -> Option<&'static str> {
            let s = self.exec(r);
            if s.fault.valid {
                s.fault.kind.name()
            } else {
                None
            }
        }

        /// The word the last executed op left (the bypass register holds the word written at
        /// the last edge): read right after `exec` / `ok` / `finding`.
        fn last_word(&self) -> u64 {
            self.uut.last_write().0.to_u64()
        }

        /// The whole word at index `w`, read without changing it: a pending_count op reads the
        /// word and writes it back unchanged.
        fn peek(&mut self, w: u64) -> u64 {
            self.ok(rq(MbarrierOp::PendingCount, w));
            self.last_word()
        }

        /// The decoded state of the word at index `w`.
        fn state(&mut self, w: u64) -> golden::MbarrierState {
            golden::MbarrierState::decode(self.peek(w))
        }
    }

    fn rq(op: MbarrierOp, word: u64) -> MbarrierReq {
        MbarrierReq {
            op,
            word: word.into(),
            count: 1.into(),
            ..Default::default()
        }
    }
    fn init(word: u64, count: u64) -> MbarrierReq {
        MbarrierReq {
            count: count.into(),
            ..rq(MbarrierOp::Init, word)
        }
    }
    fn arrive(word: u64, count: u64) -> MbarrierReq {
        MbarrierReq {
            count: count.into(),
            ..rq(MbarrierOp::Arrive, word)
        }
    }
    fn with_tx(op: MbarrierOp, word: u64, tx: u64) -> MbarrierReq {
        MbarrierReq {
            tx_count: tx.into(),
            ..rq(op, word)
        }
    }
    fn wait_token(op: MbarrierOp, word: u64, token: MbarrierWord) -> MbarrierReq {
        MbarrierReq {
            token,
            ..rq(op, word)
        }
    }
    fn wait_parity(op: MbarrierOp, word: u64, parity: bool) -> MbarrierReq {
        MbarrierReq {
            phase_parity: parity,
            ..rq(op, word)
        }
    }
    fn decode(w: MbarrierWord) -> golden::MbarrierState {
        golden::MbarrierState::decode(w.to_u64())
    }
    fn arrive_req(op: MbarrierOp, word: u64, count: u64) -> MbarrierReq {
        MbarrierReq {
            count: count.into(),
            ..rq(op, word)
        }
    }
    /// `(pending, expected, tx, parity)` of a decoded word.
    fn fields(s: golden::MbarrierState) -> (u32, u32, i32, bool) {
        (
            s.pending_arrivals,
            s.expected_arrivals,
            s.tx_count,
            s.phase_parity,
        )
    }

    #[test]
    fn mbarrier_check_all_and_yosys_validate() {
        require_yosys();
        let mut uut = Uut::new(DEFAULT_SUSPEND);
        uut.connect_all();
        check_all(&uut).unwrap();
        let vlog = generate_verilog(&uut);
        yosys_validate("hopsync_mbarrier_unit", &vlog).unwrap();
        yosys_check_flat("mbarrier_unit", &vlog);
    }

    #[test]
    fn word_layout_is_the_silicon_encoding() {
        // docs/MBARRIER_ENCODING.md "The word": packed LSB-first, the struct is the word
        let s = golden::MbarrierState {
            pending_arrivals: 0xABCDE,
            expected_arrivals: 0x12345,
            tx_count: -7,
            phase_parity: true,
            bit0: true,
            bit42: false,
        };
        let w = MbarrierWord {
            bit0: true,
            expected_complement: (0x10_0000 - 0x12345).into(),
            tx_negated: 7.into(),
            bit42: false,
            pending_complement: (0x10_0000 - 0xABCDE).into(),
            phase_parity: true,
        };
        assert_eq!(w.to_u64(), s.encode());
        assert_eq!(MbarrierWord::from_u64(s.encode()), w);
        assert_eq!(MbarrierWord::BITS, 64);
        // one field at a time, at its silicon position (golden bitvec layout)
        let one = |f: &str, v: u64| golden::layout::build(&[(f, v)]);
        let cases = [
            (
                MbarrierWord {
                    bit0: true,
                    ..Default::default()
                },
                one("unused", 1),
            ),
            (
                MbarrierWord {
                    expected_complement: 0xF_FFFF.into(),
                    ..Default::default()
                },
                one("expected_arrivals_complement", 0xF_FFFF),
            ),
            (
                MbarrierWord {
                    tx_negated: 0x1F_FFFF.into(),
                    ..Default::default()
                },
                one("tx_count_negated", 0x1F_FFFF),
            ),
            (
                MbarrierWord {
                    bit42: true,
                    ..Default::default()
                },
                1 << 42,
            ),
            (
                MbarrierWord {
                    pending_complement: 0xF_FFFF.into(),
                    ..Default::default()
                },
                one("pending_arrivals_complement", 0xF_FFFF),
            ),
            (
                MbarrierWord {
                    phase_parity: true,
                    ..Default::default()
                },
                one("phase_parity", 1),
            ),
        ];
        for (w, x) in cases {
            assert_eq!(w.to_u64(), x, "{w:?}");
        }
        let mut rng = XorShift(0x1234_5678_9ABC_DEF1);
        for _ in 0..10_000 {
            let x = rng.next();
            assert_eq!(MbarrierWord::from_u64(x).to_u64(), x);
        }
    }

    /// The unit's words and tokens equal the ones measured on an H200
    /// (docs/MBARRIER_ENCODING.md, "init count / word" and "Raw evidence in brief").
    #[test]
    fn words_and_tokens_match_silicon() {
        let mut tb = Tb::new();
        for (k, (c, w)) in [
            (1u64, 0x7ffff800_001ffffeu64),
            (2, 0x7ffff000_001ffffc),
            (3, 0x7fffe800_001ffffa),
            (32, 0x7fff0000_001fffc0),
            (1000, 0x7fe0c000_001ff830),
            (0x12345, 0x76e5d800_001db976),
            ((1 << 20) - 1, 0x00000800_00000002),
        ]
        .into_iter()
        .enumerate()
        {
            let k = 20 + k as u64;
            tb.ok(init(k, c));
            assert_eq!(tb.last_word(), w, "init {c}: the word written");
            assert_eq!(tb.peek(k), w, "init {c}: the word stored");
            assert_eq!(golden::init(c).unwrap(), w);
        }
        // init 1: arrive completes phase 0, pending reloads
        tb.ok(init(1, 1));
        let t = tb.ok(arrive(1, 1)).state.to_u64();
        assert_eq!(
            (t, tb.last_word()),
            (0x7ffff800_00000000, 0xfffff800_001ffffe)
        );
        // init 2: arrive
        tb.ok(init(2, 2));
        let t = tb.ok(arrive(2, 1)).state.to_u64();
        assert_eq!(
            (t, tb.last_word()),
            (0x7ffff000_00000000, 0x7ffff800_001ffffc)
        );
        // init 1, expect_tx 16, complete_tx 8, arrive: pending 0 with tx 8 outstanding
        tb.ok(init(3, 1));
        tb.ok(with_tx(MbarrierOp::ExpectTx, 3, 16));
        assert_eq!(tb.last_word(), 0x7ffffbff_fe1ffffe, "F = 0x1ffff0 (tx 16)");
        tb.ok(with_tx(MbarrierOp::CompleteTx, 3, 8));
        let t = tb.ok(arrive(3, 1)).state.to_u64();
        assert_eq!(t, 0x7ffffbff_00000000);
        assert_eq!(
            tb.last_word(),
            0x000003ff_ff1ffffe,
            "pending 0, tx 8: not complete"
        );
        let s = tb.exec(with_tx(MbarrierOp::CompleteTx, 3, 8));
        assert!(!s.fault.valid);
        assert_eq!(tb.last_word(), 0xfffff800_001ffffe, "phase 1");
        // the same word reached through arrive.expect_tx 8 (golden model's test)
        tb.ok(init(4, 1));
        tb.ok(with_tx(MbarrierOp::ArriveExpectTx, 4, 8));
        assert_eq!(tb.last_word(), 0x000003ff_ff1ffffe);
        // init 1, complete_tx 100: tx -100
        tb.ok(init(5, 1));
        tb.ok(with_tx(MbarrierOp::CompleteTx, 5, 100));
        assert_eq!(tb.last_word(), 0x7ffff800_0c9ffffe, "F = 100 (tx -100)");
        // ... then the arrive, then expect_tx 60 and 40: the second completes (tx_negative)
        tb.ok(arrive(5, 1));
        assert_eq!(
            fields(golden::MbarrierState::decode(tb.last_word())),
            (0, 1, -100, false)
        );
        tb.ok(with_tx(MbarrierOp::ExpectTx, 5, 60));
        assert_eq!(tb.last_word() >> 63, 0, "expect_tx 60: not complete");
        tb.ok(with_tx(MbarrierOp::ExpectTx, 5, 40));
        assert_eq!(
            tb.last_word(),
            0xfffff800_001ffffe,
            "expect_tx 40 completes phase 0"
        );
        // init 3, arrive_drop: expected 3 -> 2, pending 3 -> 2
        tb.ok(init(6, 3));
        let t = tb
            .ok(arrive_req(MbarrierOp::ArriveDrop, 6, 1))
            .state
            .to_u64();
        assert_eq!(
            (t, tb.last_word()),
            (0x7fffe800_00000000, 0x7ffff000_001ffffc)
        );
        // init 5, arrive.noComplete 1: the token's high half (the lane mask is the executor's)
        tb.ok(init(7, 5));
        let t = tb
            .ok(arrive_req(MbarrierOp::ArriveNoComplete, 7, 1))
            .state
            .to_u64();
        assert_eq!(
            (t, tb.last_word()),
            (0x7fffd800_00000000, 0x7fffe000_001ffff6)
        );
        assert_eq!(golden::pending_count(t), 5);
        // a full warp merged into one arrive of 32 on init 32 completes; the token reads 32
        tb.ok(init(8, 32));
        let r = tb.ok(arrive(8, 32));
        assert_eq!(r.state.to_u64(), 0x7fff0000_00000000);
        assert_eq!(tb.last_word(), 0xffff0000_001fffc0);
        let r = tb.ok(MbarrierReq {
            token: r.state,
            ..rq(MbarrierOp::PendingCount, 8)
        });
        assert_eq!(r.pending_count.to_u64(), 32);
    }

    #[test]
    fn init_arrive_token_and_phase_completion() {
        // PTX 9.7.13.15.9, .13, .6, .16
        let mut tb = Tb::new();
        tb.ok(init(3, 2));
        let t1 = tb.ok(arrive(3, 1)).state;
        assert_eq!(t1.to_u64(), golden::token_of(golden::init(2).unwrap()));
        assert_eq!(t1.to_u64() & 0xFFFF_FFFF, 0, "the token's low half is 0");
        assert_eq!(golden::pending_count(t1.to_u64()), 2);
        assert_eq!(fields(tb.state(3)), (1, 2, 0, false));
        let r = tb.ok(wait_token(MbarrierOp::TestWait, 3, t1));
        assert!(!r.wait_complete, "token's phase is current: not complete");
        let t2 = tb.ok(arrive(3, 1)).state;
        // the completing arrive's token: old parity, pending = its count
        assert_eq!(golden::pending_count(t2.to_u64()), 1);
        assert!(!t2.phase_parity);
        let r = tb.ok(wait_token(MbarrierOp::TestWait, 3, t1));
        assert!(r.wait_complete, "the phase of t1 completed");
        assert_eq!(
            fields(tb.state(3)),
            (2, 2, 0, true),
            "pending reloads, parity flips"
        );
        assert!(
            tb.ok(wait_parity(MbarrierOp::TestWaitParity, 3, false))
                .wait_complete
        );
        assert!(
            !tb.ok(wait_parity(MbarrierOp::TestWaitParity, 3, true))
                .wait_complete
        );
        // arrive with a count completes in one go
        let t3 = tb.ok(arrive(3, 2)).state;
        assert!(t3.phase_parity);
        assert!(tb.ok(wait_token(MbarrierOp::TestWait, 3, t3)).wait_complete);
        // t1 is two phases back: it has the current parity, so it reads "not complete" with no
        // finding, as on silicon (MbarrierWaitPhaseInvalid is the executor's side check)
        let s = tb.exec(wait_token(MbarrierOp::TestWait, 3, t1));
        assert!(!s.fault.valid && !s.resp.wait_complete);
        // made-up tokens: only bit 63 counts (wait_raw_tokens); the current parity is 0
        let w = tb.peek(3);
        for tok in [
            0u64,
            0x7fff_ffff_ffff_ffff,
            0x0000_0000_ffff_ffff,
            0x8000_0000_0000_0000,
            u64::MAX,
        ] {
            let r = tb.ok(wait_token(
                MbarrierOp::TestWait,
                3,
                MbarrierWord::from_u64(tok),
            ));
            assert_eq!(
                r.wait_complete,
                golden::test_wait_token(w, tok),
                "token {tok:x}"
            );
            assert_eq!(r.wait_complete, tok >> 63 == 1);
        }
    }

    #[test]
    fn expect_tx_and_complete_tx_hold_and_complete_the_phase() {
        // PTX 9.7.13.15.5, .11, .12: tx-count holds the phase until it returns to 0
        let mut tb = Tb::new();
        tb.ok(init(1, 1));
        let t = tb.ok(with_tx(MbarrierOp::ArriveExpectTx, 1, 64)).state;
        assert!(!tb.ok(wait_token(MbarrierOp::TestWait, 1, t)).wait_complete);
        assert_eq!(fields(tb.state(1)), (0, 1, 64, false));
        tb.ok(with_tx(MbarrierOp::CompleteTx, 1, 32));
        assert_eq!(fields(tb.state(1)), (0, 1, 32, false));
        tb.ok(with_tx(MbarrierOp::CompleteTx, 1, 32));
        assert!(tb.ok(wait_token(MbarrierOp::TestWait, 1, t)).wait_complete);
        assert_eq!(fields(tb.state(1)), (1, 1, 0, true));
        // complete-tx before expect-tx: tx-count goes negative (legal within range)
        tb.ok(with_tx(MbarrierOp::CompleteTx, 1, 16));
        tb.ok(with_tx(MbarrierOp::ExpectTx, 1, 10));
        assert_eq!(fields(tb.state(1)), (1, 1, -6, true));
        tb.ok(arrive(1, 1));
        assert_eq!(
            fields(tb.state(1)),
            (0, 1, -6, true),
            "pending 0, tx -6: not complete"
        );
        // silicon: an expect_tx that brings tx-count to 0 with nothing pending completes
        let r = tb.ok(wait_parity(MbarrierOp::TryWaitParity, 1, true));
        assert!(r.suspended);
        let s = tb.exec(with_tx(MbarrierOp::ExpectTx, 1, 6));
        assert!(!s.fault.valid);
        assert_eq!(
            fields(golden::MbarrierState::decode(tb.last_word())),
            (1, 1, 0, false)
        );
        let mut woke = false;
        for _ in 0..4 {
            let s = tb.idle();
            woke |= s.wake.valid && s.wake.completed;
        }
        assert!(woke, "the expect_tx completion wakes the waiter");
        // complete_tx(0) / expect_tx(0) on a phase with arrivals pending: nothing changes
        tb.ok(with_tx(MbarrierOp::CompleteTx, 1, 0));
        tb.ok(with_tx(MbarrierOp::ExpectTx, 1, 0));
        assert_eq!(fields(tb.state(1)), (1, 1, 0, false));
    }

    #[test]
    fn no_complete_arrive_that_would_complete_is_a_finding() {
        let mut tb = Tb::new();
        tb.ok(init(0, 2));
        let r = tb.ok(arrive_req(MbarrierOp::ArriveNoComplete, 0, 1));
        assert_eq!(decode(r.state).pending_arrivals, 2);
        assert_eq!(
            tb.finding(arrive_req(MbarrierOp::ArriveNoComplete, 0, 1)),
            Some("MbarrierNoCompleteCompleted")
        );
        // the faulting op left the word unchanged
        assert_eq!(tb.last_word(), 0x7ffff800_001ffffc);
        let r = tb.ok(arrive(0, 1));
        assert_eq!(decode(r.state).pending_arrivals, 1);
    }

    #[test]
    fn arrive_drop_lowers_expected_for_later_phases() {
        // PTX 9.7.13.15.14
        let mut tb = Tb::new();
        tb.ok(init(2, 3));
        tb.ok(arrive_req(MbarrierOp::ArriveDrop, 2, 1));
        assert_eq!(fields(tb.state(2)), (2, 2, 0, false));
        tb.ok(arrive(2, 2));
        let r = tb.ok(wait_parity(MbarrierOp::TestWaitParity, 2, false));
        assert!(r.wait_complete);
        assert_eq!(
            fields(tb.state(2)),
            (2, 2, 0, true),
            "the new phase expects 2"
        );
        tb.ok(with_tx(MbarrierOp::ArriveDropExpectTx, 2, 4));
        assert_eq!(fields(tb.state(2)), (1, 1, 4, true));
        // dropping the expected count to zero is out of range (golden model); no change
        assert_eq!(
            tb.finding(arrive_req(MbarrierOp::ArriveDropNoComplete, 2, 1)),
            Some("MbarrierCountOutOfRange")
        );
        assert_eq!(fields(tb.state(2)), (1, 1, 4, true));
        tb.ok(arrive_req(MbarrierOp::ArriveNoComplete, 2, 1));
        assert_eq!(fields(tb.state(2)), (0, 1, 4, true));
        tb.ok(with_tx(MbarrierOp::CompleteTx, 2, 4));
        assert_eq!(fields(tb.state(2)), (1, 1, 0, false));
        assert_eq!(tb.finding(arrive(2, 2)), Some("MbarrierPendingUnderflow"));
        assert_eq!(
            tb.finding(arrive_req(MbarrierOp::ArriveDrop, 2, 1)),
            Some("MbarrierCountOutOfRange")
        );
    }

    #[test]
    fn count_and_tx_ranges_are_checked() {
        // PTX 9.7.13.15.2
        let mut tb = Tb::new();
        assert_eq!(tb.finding(init(4, 0)), Some("MbarrierCountOutOfRange"));
        assert_eq!(
            tb.finding(init(4, 1 << 20)),
            Some("MbarrierCountOutOfRange")
        );
        tb.ok(init(4, (1 << 20) - 1));
        assert_eq!(tb.finding(arrive(4, 0)), Some("MbarrierCountOutOfRange"));
        assert_eq!(
            tb.finding(arrive(4, 0xFFFF_FFFF)),
            Some("MbarrierCountOutOfRange")
        );
        // a warp's merged count above 2^20-1 (32 lanes of up to 2^20-1 each)
        assert_eq!(
            tb.finding(arrive(4, 1 << 20)),
            Some("MbarrierCountOutOfRange")
        );
        assert_eq!(
            tb.finding(arrive(4, 32 * ((1 << 20) - 1))),
            Some("MbarrierCountOutOfRange")
        );
        tb.ok(arrive(4, (1 << 20) - 2));
        assert_eq!(tb.finding(arrive(4, 2)), Some("MbarrierPendingUnderflow"));
        tb.ok(with_tx(MbarrierOp::ExpectTx, 4, (1 << 20) - 1));
        assert_eq!(
            tb.finding(with_tx(MbarrierOp::ExpectTx, 4, 1)),
            Some("MbarrierTxCountOutOfRange")
        );
        assert_eq!(
            tb.finding(with_tx(MbarrierOp::CompleteTx, 4, 1 << 21)),
            Some("MbarrierTxCountOutOfRange")
        );
        tb.ok(with_tx(MbarrierOp::CompleteTx, 4, (1 << 21) - 2));
        assert_eq!(tb.state(4).tx_count, -((1 << 20) - 1));
        assert_eq!(
            tb.finding(with_tx(MbarrierOp::CompleteTx, 4, 1)),
            Some("MbarrierTxCountOutOfRange")
        );
        // a txCount operand of 2^20 or more is fine while the result stays in range
        tb.ok(with_tx(MbarrierOp::ExpectTx, 4, 1 << 20));
        assert_eq!(tb.state(4).tx_count, 1);
        assert_eq!(
            tb.finding(with_tx(MbarrierOp::ExpectTx, 4, 0xFFFF_FFFF)),
            Some("MbarrierTxCountOutOfRange")
        );
        assert_eq!(
            tb.finding(with_tx(MbarrierOp::ArriveExpectTx, 4, (1 << 20) - 1)),
            Some("MbarrierTxCountOutOfRange")
        );
        assert_eq!(fields(tb.state(4)), (1, (1 << 20) - 1, 1, false));
    }

    #[test]
    fn inval_uninitialized_and_init_on_valid() {
        // PTX 9.7.13.15.3, .9, .10; DESIGN.md shadow set
        let mut tb = Tb::new();
        assert_eq!(tb.finding(arrive(9, 1)), Some("MbarrierUninitialized"));
        assert_eq!(
            tb.finding(wait_parity(MbarrierOp::TestWaitParity, 9, false)),
            Some("MbarrierUninitialized")
        );
        assert_eq!(
            tb.finding(rq(MbarrierOp::Inval, 9)),
            Some("MbarrierUninitialized")
        );
        tb.ok(init(9, 5));
        assert_eq!(tb.finding(init(9, 5)), Some("MbarrierInitOnValid"));
        tb.ok(arrive(9, 2));
        let before = tb.peek(9);
        let r = tb.ok(rq(MbarrierOp::Inval, 9));
        assert_eq!(r.state.to_u64(), golden::token_of(before));
        assert_eq!(
            tb.last_word(),
            before,
            "inval writes the state back: word unchanged"
        );
        assert_eq!(before, golden::inval(before));
        assert_eq!(tb.peek(9), before);
        // the shadow bit is clear: every op but init names the word uninitialized
        assert_eq!(tb.finding(arrive(9, 1)), Some("MbarrierUninitialized"));
        let r = tb.ok(init(9, 1));
        assert_eq!(r.state.to_u64(), golden::token_of(before));
        assert_eq!(
            tb.ok(arrive(9, 1)).state.to_u64(),
            golden::token_of(golden::init(1).unwrap())
        );
    }

    #[test]
    fn pending_count_reads_the_token() {
        // PTX 9.7.13.15.17: pure on the token, no word needed; silicon: 2^20 - token[43..=62]
        let mut tb = Tb::new();
        tb.ok(init(5, 7));
        let t = tb.ok(arrive_req(MbarrierOp::ArriveNoComplete, 5, 3)).state;
        let r = tb.ok(MbarrierReq {
            token: t,
            ..rq(MbarrierOp::PendingCount, 40)
        });
        assert_eq!(r.pending_count.to_u64(), 7);
        for tok in [
            t.to_u64(),
            0,
            u64::MAX,
            0x000003ff_ff1ffffe,
            0x8000_0000_0000_0000,
            0x7ffff800_00000000,
            0x00000800_00000000,
        ] {
            let r = tb.ok(MbarrierReq {
                token: MbarrierWord::from_u64(tok),
                ..rq(MbarrierOp::PendingCount, 41)
            });
            assert_eq!(
                r.pending_count.to_u64(),
                golden::pending_count(tok) as u64,
                "{tok:x}"
            );
        }
        let r = tb.ok(MbarrierReq {
            token: MbarrierWord::from_u64(0x000003ff_ff1ffffe),
            ..rq(MbarrierOp::PendingCount, 41)
        });
        assert_eq!(r.pending_count.to_u64(), 1 << 20, "a zero field reads 2^20");
    }

    #[test]
    fn cp_async_mbarrier_arrive_increments_pending() {
        // PTX 9.7.13.15.15: without .noinc pending + 1 at issue; the async arrive nets zero
        let mut tb = Tb::new();
        tb.ok(init(6, 1));
        tb.ok(rq(MbarrierOp::CpAsyncArriveInc, 6));
        let r = tb.ok(arrive(6, 1));
        assert_eq!(decode(r.state).pending_arrivals, 2);
        let r = tb.ok(arrive(6, 1)); // the cp.async completion's arrive-on
        assert_eq!(decode(r.state).pending_arrivals, 1);
        assert!(
            tb.ok(wait_parity(MbarrierOp::TestWaitParity, 6, false))
                .wait_complete
        );
        tb.ok(rq(MbarrierOp::Inval, 6));
        tb.ok(init(6, (1 << 20) - 1));
        assert_eq!(
            tb.finding(rq(MbarrierOp::CpAsyncArriveInc, 6)),
            Some("MbarrierCountOutOfRange")
        );
        // from pending 0 (tx outstanding): P wraps from 0 to 2^20-1, pending 1
        tb.ok(init(7, 1));
        tb.ok(with_tx(MbarrierOp::ArriveExpectTx, 7, 8));
        tb.ok(rq(MbarrierOp::CpAsyncArriveInc, 7));
        assert_eq!(fields(tb.state(7)), (1, 1, 8, false));
        assert_eq!(tb.last_word() >> 43 & 0xF_FFFF, 0xF_FFFF);
    }

    #[test]
    fn try_wait_suspends_and_wakes_on_completion() {
        // PTX 9.7.13.15.16: suspended thread resumes when the phase completes
        let mut tb = Tb::new();
        tb.ok(init(7, 2));
        let t = tb.ok(arrive(7, 1)).state;
        let r = tb.ok(MbarrierReq {
            warp: 5.into(),
            ..wait_token(MbarrierOp::TryWait, 7, t)
        });
        assert!(r.suspended && !r.wait_complete);
        let r = tb.ok(MbarrierReq {
            warp: 9.into(),
            ..wait_parity(MbarrierOp::TryWaitParity, 7, false)
        });
        assert!(r.suspended);
        // a waiter on another word must stay asleep
        tb.ok(init(8, 1));
        let r = tb.ok(MbarrierReq {
            warp: 2.into(),
            ..wait_parity(MbarrierOp::TryWaitParity, 8, false)
        });
        assert!(r.suspended, "phase 0 of word 8 is current: not complete");
        let mut wakes = vec![];
        let s = tb.step(&Ports {
            local: Some(arrive(7, 1)),
            ..Default::default()
        });
        assert!(s.local_ready);
        for _ in 0..6 {
            let s = tb.idle();
            if s.wake.valid {
                wakes.push((s.wake.warp.index(), s.wake.completed));
            }
        }
        assert_eq!(
            wakes,
            vec![(5, true), (9, true)],
            "lowest warp first, one per cycle"
        );
        // a try_wait on a completed phase does not suspend
        let r = tb.ok(MbarrierReq {
            warp: 3.into(),
            ..wait_token(MbarrierOp::TryWait, 7, t)
        });
        assert!(r.wait_complete && !r.suspended);
    }

    /// A try_wait timeout and the phase completion racing it: whatever the order of deadline,
    /// completing write and the one-per-cycle wake queue, a wake seen after edge k says
    /// `completed` exactly when the completing write was seen (the stage-2 write port, after
    /// the edge after its acceptance) before edge k, which is what the word shows when the SM
    /// engine retires the try_wait (before the write it sees with the wake). Regression for
    /// `hopsync gen --seed 1026960` (three warps timing out together while an st.async
    /// complete_tx completes their phase).
    #[test]
    fn try_wait_timeout_racing_a_completion_answers_what_the_word_shows() {
        for arrive_at in 8..24u64 {
            let mut tb = Tb::new();
            tb.ok(init(7, 1));
            // warps 1, 2, 3 accepted on consecutive cycles, hints 12, 11, 10: one deadline
            let start = tb.steps;
            for (w, hint) in [(1u64, 12u64), (2, 11), (3, 10)] {
                let s = tb.step(&Ports {
                    local: Some(MbarrierReq {
                        warp: w.into(),
                        suspend_time_hint: hint.into(),
                        has_suspend_time_hint: true,
                        ..wait_parity(MbarrierOp::TryWaitParity, 7, false)
                    }),
                    ..Default::default()
                });
                assert!(s.local_ready);
            }
            let mut wakes = vec![];
            let mut accepted_at = None;
            while tb.steps < start + 40 {
                let k = tb.steps + 1 - start;
                let s = if k == arrive_at {
                    tb.step(&Ports { local: Some(arrive(7, 1)), ..Default::default() })
                } else {
                    tb.idle()
                };
                if k == arrive_at {
                    assert!(s.local_ready);
                    accepted_at = Some(k);
                }
                if s.wake.valid {
                    wakes.push((s.wake.warp.index(), s.wake.completed, k));
                }
            }
            let a = accepted_at.unwrap();
            assert_eq!(wakes.len(), 3, "arrive at {arrive_at}: {wakes:?}");
            for (w, completed, k) in wakes {
                // the arrive's write is seen after edge a + 1 (stored at edge a + 2)
                assert_eq!(completed, a + 1 < k, "arrive at {a}: warp {w} woken at {k}");
            }
        }
    }

    #[test]
    fn try_wait_times_out_after_the_hint_or_the_system_limit() {
        let mut tb = Tb::new();
        tb.ok(init(7, 2));
        // hint 10 cycles; the entry waits from the cycle after execution
        let s = tb.step(&Ports {
            local: Some(MbarrierReq {
                warp: 4.into(),
                suspend_time_hint: 10.into(),
                has_suspend_time_hint: true,
                ..wait_parity(MbarrierOp::TryWaitParity, 7, false)
            }),
            ..Default::default()
        });
        assert!(s.local_ready);
        let mut at = None;
        for k in 1..200 {
            let s = tb.idle();
            if k == 1 {
                assert!(s.resp.suspended);
            }
            if s.wake.valid {
                assert_eq!((s.wake.warp.index(), s.wake.completed), (4, false));
                assert!(at.is_none());
                at = Some(k);
            }
        }
        assert_eq!(at, Some(10 + 3), "hint + 3 cycles after acceptance");
        // no hint: the system limit
        tb.step(&Ports {
            local: Some(MbarrierReq {
                warp: 6.into(),
                ..wait_parity(MbarrierOp::TryWaitParity, 7, false)
            }),
            ..Default::default()
        });
        let mut at = None;
        for k in 1..200 {
            let s = tb.idle();
            if s.wake.valid {
                assert_eq!((s.wake.warp.index(), s.wake.completed), (6, false));
                at = Some(k);
            }
        }
        assert_eq!(at, Some(DEFAULT_SUSPEND as usize + 3));
    }

    #[test]
    fn remote_ports_arbitrate_round_robin_with_back_pressure() {
        let mut tb = Tb::new();
        tb.ok(init(1, 30));
        tb.ok(init(2, 30));
        let p = Ports {
            local: Some(arrive(1, 1)),
            tma: Some(with_tx(MbarrierOp::CompleteTx, 2, 1)),
            cluster: Some(arrive(2, 1)),
        };
        let mut order = vec![];
        for _ in 0..9 {
            let s = tb.step(&p);
            let g = [s.local_ready, s.tma_ready, s.cluster_ready];
            assert_eq!(
                g.iter().filter(|x| **x).count(),
                1,
                "one grant per cycle when all are valid"
            );
            order.push(g.iter().position(|x| *x).unwrap());
        }
        // after the local inits, the TMA port has top priority; then the grant rotates
        assert_eq!(order, vec![1, 2, 0, 1, 2, 0, 1, 2, 0]);
        tb.idle();
        let w1 = tb.state(1);
        let w2 = tb.state(2);
        // word 1: 3 local arrives; word 2: 3 cluster arrives and 3 TMA complete_tx of 1
        assert_eq!(w1.pending_arrivals, 27);
        assert_eq!((w2.pending_arrivals, w2.tx_count), (27, -3));
        // a lone remote request is accepted at once; remote ops get no response
        let s = tb.step(&Ports {
            tma: Some(with_tx(MbarrierOp::CompleteTx, 2, 1)),
            ..Default::default()
        });
        assert!(s.tma_ready && !s.local_ready && !s.cluster_ready);
        let s = tb.idle();
        assert!(!s.resp.valid && !s.fault.valid);
    }

    #[test]
    fn cluster_port_rejects_ops_not_allowed_on_shared_cluster() {
        // PTX 9.7.13.15.8: only arrive / expect_tx / complete_tx on .shared::cluster
        let mut tb = Tb::new();
        tb.ok(init(3, 2));
        for op in [
            MbarrierOp::TestWait,
            MbarrierOp::TryWaitParity,
            MbarrierOp::Init,
            MbarrierOp::Inval,
            MbarrierOp::ArriveNoComplete,
            MbarrierOp::PendingCount,
        ] {
            tb.step(&Ports {
                cluster: Some(rq(op, 3)),
                ..Default::default()
            });
            let s = tb.idle();
            assert!(s.fault.valid && !s.resp.valid);
            assert_eq!(
                s.fault.kind,
                MbarrierFinding::MbarrierClusterAddressUnsupported
            );
            assert_eq!(s.fault.source, MbarrierSource::Cluster);
        }
        for op in [
            MbarrierOp::Arrive,
            MbarrierOp::ArriveExpectTx,
            MbarrierOp::CompleteTx,
        ] {
            tb.step(&Ports {
                cluster: Some(with_tx(op, 3, 0)),
                ..Default::default()
            });
            assert!(!tb.idle().fault.valid);
        }
        // arrive, then arrive.expect_tx of 0 completed phase 0
        assert!(tb.state(3).phase_parity);
    }

    #[test]
    fn word_beyond_the_bank_is_not_shared() {
        let mut tb = Tb::new();
        assert_eq!(tb.finding(init(64, 1)), Some("MbarrierNotShared"));
        tb.ok(init(0, 1));
        // the alias of word 64 (word 0) is untouched
        assert_eq!(tb.finding(arrive(64, 1)), Some("MbarrierNotShared"));
        assert_eq!(decode(tb.ok(arrive(0, 1)).state).pending_arrivals, 1);
        assert_eq!(tb.last_word(), 0xfffff800_001ffffe);
    }

    /// Regression for the phase-corruption bug class of Vortex GPU issues #400/#401: back-to-back
    /// arrives on one barrier lost an update or flipped the phase twice. Here every cycle
    /// carries an op on the same word (local arrives, TMA complete_tx and cluster arrives
    /// interleaved); every token must show exactly one decrement per arrive and exactly one
    /// phase advance per completion.
    #[test]
    fn vortex_400_401_back_to_back_arrives_same_barrier_keep_every_update() {
        let mut tb = Tb::new();
        tb.ok(init(12, 4));
        let mut golden_word = golden::init(4).unwrap();
        // 64 back-to-back local arrives: 16 phases
        let mut tokens = vec![];
        let mut s = tb.step(&Ports {
            local: Some(arrive(12, 1)),
            ..Default::default()
        });
        assert!(s.local_ready);
        for k in 1..=64 {
            let p = if k < 64 { Some(arrive(12, 1)) } else { None };
            s = tb.step(&Ports {
                local: p,
                ..Default::default()
            });
            assert!(p.is_none() || s.local_ready);
            assert!(s.resp.valid && !s.fault.valid);
            tokens.push(s.resp.state.to_u64());
        }
        for (k, t) in tokens.iter().enumerate() {
            assert_eq!(
                *t,
                golden::token_of(golden_word),
                "arrive {k}: token is the high half of the word before it"
            );
            let a = golden::arrive(
                golden_word,
                golden::Arrive {
                    count: 1,
                    ..Default::default()
                },
            );
            let a = a.unwrap();
            assert_eq!(
                a.completed,
                k % 4 == 3,
                "exactly one completion per 4 arrives"
            );
            golden_word = a.word;
        }
        assert!(
            !golden::MbarrierState::decode(golden_word).phase_parity,
            "16 phases"
        );
        assert_eq!(tb.peek(12), golden_word, "no update lost");
        // all three ports hammering the same word every cycle
        tb.ok(rq(MbarrierOp::Inval, 12));
        // per rotation of the three ports: pending -2, tx +1 -1: one completion per rotation
        tb.ok(init(12, 2));
        let mut g = golden::init(2).unwrap();
        let mut phases = 0;
        let p = Ports {
            local: Some(with_tx(MbarrierOp::ArriveExpectTx, 12, 1)),
            tma: Some(with_tx(MbarrierOp::CompleteTx, 12, 1)),
            cluster: Some(arrive(12, 1)),
        };
        let mut accepted = std::collections::VecDeque::new();
        let none = Ports::default();
        for k in 0..300 {
            let s = tb.step(if k < 299 { &p } else { &none });
            if s.resp.valid {
                assert!(!s.fault.valid);
                assert_eq!(s.resp.state.to_u64(), accepted.pop_front().unwrap());
            }
            if k < 299 {
                // apply what was accepted this cycle to the golden word
                if s.local_ready {
                    accepted.push_back(golden::token_of(g));
                    let a = golden::arrive(
                        g,
                        golden::Arrive {
                            count: 1,
                            expect_tx: 1,
                            ..Default::default()
                        },
                    );
                    let a = a.unwrap();
                    phases += a.completed as u32;
                    g = a.word;
                } else if s.tma_ready {
                    let (w, done) = golden::complete_tx(g, 1).unwrap();
                    phases += done as u32;
                    g = w;
                } else {
                    assert!(s.cluster_ready);
                    let a = golden::arrive(
                        g,
                        golden::Arrive {
                            count: 1,
                            ..Default::default()
                        },
                    )
                    .unwrap();
                    phases += a.completed as u32;
                    g = a.word;
                }
            }
        }
        tb.idle();
        assert_eq!(tb.peek(12), g, "no update lost");
        assert_eq!(phases, 99, "299 ops: 99 full rotations");
        assert_eq!(
            golden::MbarrierState::decode(g).phase_parity,
            phases % 2 == 1,
            "no double flips"
        );
    }

    /// What the golden model says an op does to one word (plus the unit's documented rules for
    /// what the pure functions leave to the machine: shadow valid bit, ports, bank size,
    /// cp.async increment).
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Expect {
        word: u64,
        valid: bool,
        finding: Option<&'static str>,
        wait_complete: bool,
        completed: bool,
        pending_count: u32,
    }

    fn remote_ok(op: MbarrierOp) -> bool {
        matches!(
            op,
            MbarrierOp::Arrive
                | MbarrierOp::ArriveExpectTx
                | MbarrierOp::ArriveDrop
                | MbarrierOp::ArriveDropExpectTx
                | MbarrierOp::ExpectTx
                | MbarrierOp::CompleteTx
        )
    }

    fn golden_apply(r: &MbarrierReq, src: MbarrierSource, word: u64, valid: bool) -> Expect {
        use golden::Arrive as Ar;
        let mut e = Expect {
            word,
            valid,
            finding: None,
            wait_complete: false,
            completed: false,
            pending_count: golden::pending_count(r.token.to_u64()),
        };
        let fail = |e: &mut Expect, k: hopsync_cosim::finding::FindingKind| {
            e.finding = Some(k.name());
        };
        let count = r.count.to_u64() as u32;
        let tx = r.tx_count.to_u64() as u32;
        let touches = r.op != MbarrierOp::PendingCount;
        if touches && r.word.to_u64() >= (1 << A) {
            e.finding = Some("MbarrierNotShared");
            return e;
        }
        if src != MbarrierSource::Local && !remote_ok(r.op) {
            e.finding = Some("MbarrierClusterAddressUnsupported");
            return e;
        }
        if touches && r.op != MbarrierOp::Init && !valid {
            e.finding = Some("MbarrierUninitialized");
            return e;
        }
        if r.op == MbarrierOp::Init && valid {
            e.finding = Some("MbarrierInitOnValid");
            return e;
        }
        let arrive = |e: &mut Expect, a: Ar| match golden::arrive(word, a) {
            Ok(x) => {
                e.word = x.word;
                e.completed = x.completed;
            }
            Err(k) => fail(e, k),
        };
        match r.op {
            MbarrierOp::Init => match golden::init(count as u64) {
                Ok(w) => {
                    e.word = w;
                    e.valid = true;
                }
                Err(k) => fail(&mut e, k),
            },
            MbarrierOp::Inval => {
                e.word = golden::inval(word);
                e.valid = false;
            }
            MbarrierOp::Arrive => arrive(
                &mut e,
                Ar {
                    count,
                    ..Default::default()
                },
            ),
            MbarrierOp::ArriveNoComplete => arrive(
                &mut e,
                Ar {
                    count,
                    no_complete: true,
                    ..Default::default()
                },
            ),
            MbarrierOp::ArriveExpectTx => arrive(
                &mut e,
                Ar {
                    count: 1,
                    expect_tx: tx,
                    ..Default::default()
                },
            ),
            MbarrierOp::ArriveDrop => arrive(
                &mut e,
                Ar {
                    count,
                    drop: true,
                    ..Default::default()
                },
            ),
            MbarrierOp::ArriveDropNoComplete => arrive(
                &mut e,
                Ar {
                    count,
                    drop: true,
                    no_complete: true,
                    ..Default::default()
                },
            ),
            MbarrierOp::ArriveDropExpectTx => arrive(
                &mut e,
                Ar {
                    count: 1,
                    expect_tx: tx,
                    drop: true,
                    ..Default::default()
                },
            ),
            MbarrierOp::ExpectTx => match golden::expect_tx(word, tx) {
                Ok((w, done)) => {
                    e.word = w;
                    e.completed = done;
                }
                Err(k) => fail(&mut e, k),
            },
            MbarrierOp::CompleteTx => match golden::complete_tx(word, tx) {
                Ok((w, done)) => {
                    e.word = w;
                    e.completed = done;
                }
                Err(k) => fail(&mut e, k),
            },
            MbarrierOp::TestWait | MbarrierOp::TryWait => {
                e.wait_complete = golden::test_wait_token(word, r.token.to_u64())
            }
            MbarrierOp::TestWaitParity | MbarrierOp::TryWaitParity => {
                e.wait_complete = golden::test_wait_parity(word, r.phase_parity)
            }
            MbarrierOp::PendingCount => {}
            MbarrierOp::CpAsyncArriveInc => {
                // not a golden pure function: pending + 1, which must stay <= 2^20-1
                let mut st = golden::MbarrierState::decode(word);
                if st.pending_arrivals >= golden::MAX_COUNT {
                    e.finding = Some("MbarrierCountOutOfRange");
                } else {
                    st.pending_arrivals += 1;
                    e.word = st.encode();
                }
            }
        }
        e
    }

    /// Reference waiter-table entry.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum RefWaiter {
        Idle,
        Waiting { tag: u32, deadline: u64 },
        Woken { completed: bool, tag: u32 },
    }

    /// Words the random ops use (of the 64 in the bank).
    const NWORDS: u64 = 6;

    fn random_local_req(
        rng: &mut XorShift,
        words: &[(u64, bool)],
        tokens: &[Vec<u64>],
        warp: u64,
    ) -> MbarrierReq {
        let w = if rng.pct(1) {
            64 + rng.below(64)
        } else {
            rng.below(NWORDS)
        };
        let (word, valid) = if w < 64 {
            words[w as usize]
        } else {
            (0, false)
        };
        let st = golden::MbarrierState::decode(word);
        let mut r = MbarrierReq {
            word: w.into(),
            warp: warp.into(),
            ..Default::default()
        };
        // mostly legal counts (<= pending), sometimes a warp's merged count up to pending,
        // sometimes one past pending, rarely out of range (merged counts of a full warp included)
        let p = st.pending_arrivals as u64;
        let mut count = if p > 0 { 1 + rng.below(p.min(2)) } else { 1 };
        if p > 0 && rng.pct(4) {
            count = 1 + rng.below(p);
        }
        if rng.pct(3) {
            count = p + 1;
        }
        if rng.pct(1) {
            count = [0, 1 << 20, 0xFFFF_FFFF, 32 * ((1 << 20) - 1)][rng.below(4) as usize];
        }
        // complete-tx mostly retires what is outstanding, so phases do complete
        let mut tx = rng.below(9);
        if st.tx_count > 0 && rng.pct(60) {
            tx = st.tx_count as u64;
        }
        if rng.pct(1) {
            tx = [1 << 20, (1 << 21) - 1, 1 << 21, 0xFFFF_FFFF][rng.below(4) as usize];
        }
        r.count = count.into();
        r.tx_count = tx.into();
        r.phase_parity = rng.pct(50);
        let t = &tokens[(w % 64) as usize];
        r.token = if !t.is_empty() && rng.pct(90) {
            MbarrierWord::from_u64(t[rng.below(t.len() as u64) as usize])
        } else {
            MbarrierWord::from_u64(rng.next())
        };
        if rng.pct(50) {
            r.has_suspend_time_hint = true;
            r.suspend_time_hint = rng.below(40).into();
        }
        let ops = [
            (MbarrierOp::Arrive, 22),
            (MbarrierOp::ArriveNoComplete, 4),
            (MbarrierOp::ArriveExpectTx, 6),
            (MbarrierOp::ArriveDrop, 2),
            (MbarrierOp::ArriveDropNoComplete, 1),
            (MbarrierOp::ArriveDropExpectTx, 1),
            (MbarrierOp::ExpectTx, 5),
            (MbarrierOp::CompleteTx, 6),
            (MbarrierOp::TestWait, 6),
            (MbarrierOp::TestWaitParity, 4),
            (MbarrierOp::TryWait, 5),
            (MbarrierOp::TryWaitParity, 5),
            (MbarrierOp::PendingCount, 2),
            (MbarrierOp::CpAsyncArriveInc, 2),
            (MbarrierOp::Inval, 2),
            (MbarrierOp::Init, 1),
        ];
        r.op = if !valid && rng.pct(90) {
            MbarrierOp::Init
        } else {
            let total: u64 = ops.iter().map(|o| o.1).sum();
            let mut x = rng.below(total);
            let mut op = MbarrierOp::Arrive;
            for (o, wgt) in ops {
                if x < wgt {
                    op = o;
                    break;
                }
                x -= wgt;
            }
            op
        };
        if r.op == MbarrierOp::Init && !rng.pct(2) {
            // mostly small counts; sometimes large ones (the complement fields' full range)
            let big = 1 + rng.below((1 << 20) - 1);
            r.count = if rng.pct(5) {
                [32, 1000, (1 << 20) - 1, big][rng.below(4) as usize]
            } else {
                1 + rng.below(4)
            }
            .into();
        }
        // all arrived, transactions outstanding: mostly complete (or balance) them; either
        // completes the phase (silicon checks completion after expect_tx too)
        if valid && p == 0 && rng.pct(60) {
            if st.tx_count >= 0 {
                r.op = MbarrierOp::CompleteTx;
                r.tx_count = (st.tx_count as u64).into();
            } else {
                r.op = MbarrierOp::ExpectTx;
                r.tx_count = ((-st.tx_count) as u64).into();
            }
        }
        // a large expected count drains slowly: mostly re-init such words
        if valid && st.expected_arrivals > 64 && rng.pct(2) {
            r.op = MbarrierOp::Inval;
        }
        r
    }

    fn random_remote_req(rng: &mut XorShift, words: &[(u64, bool)], tma: bool) -> MbarrierReq {
        let w = rng.below(NWORDS);
        let st = golden::MbarrierState::decode(words[w as usize].0);
        let mut tx = rng.below(9);
        if st.tx_count > 0 && rng.pct(50) {
            tx = rng.below(st.tx_count as u64 + 1);
        }
        let mut r = MbarrierReq {
            word: w.into(),
            tx_count: tx.into(),
            count: 1.into(),
            warp: rng.below(32).into(),
            ..Default::default()
        };
        r.op = if tma {
            MbarrierOp::CompleteTx
        } else if st.pending_arrivals == 0 && rng.pct(90) {
            // nothing left to arrive: retire or add transactions
            [MbarrierOp::CompleteTx, MbarrierOp::ExpectTx][rng.below(2) as usize]
        } else {
            match rng.below(40) {
                0..=14 => MbarrierOp::Arrive,
                15..=22 => MbarrierOp::ArriveExpectTx,
                23..=30 => MbarrierOp::CompleteTx,
                31..=36 => MbarrierOp::ExpectTx,
                37 => MbarrierOp::ArriveDrop,
                38 => MbarrierOp::TestWaitParity,
                _ => MbarrierOp::Init,
            }
        };
        r
    }

    /// 1e6 random operations on all three ports, every response, finding and wake event
    /// checked cycle by cycle against the golden model's word semantics
    /// (`hopsync_cosim::mbarrier`) and a cycle-exact reference of the waiter table.
    #[test]
    fn randomized_1e6_ops_against_golden() {
        let mut tb = Tb::new();
        let st = run_random(&mut tb, 1_000_000);
        assert!(st.completions > 100_000 && st.cpl_wakes > 5_000 && st.timeouts > 5_000);
        assert!(
            st.findings.len() >= 8,
            "every finding kind exercised: {:?}",
            st.findings
        );
    }

    /// The generated Verilog, simulated by iverilog, reproduces the Rust simulation's outputs
    /// cycle for cycle on 20000 cycles of the random traffic above.
    #[test]
    fn generated_verilog_matches_the_rust_simulation() {
        let mut tb = Tb::traced();
        run_random(&mut tb, 20_000);
        let mut uut = Uut::new(DEFAULT_SUSPEND);
        uut.connect_all();
        let vlog = generate_verilog(&uut);
        tb.trace.unwrap().check_with_iverilog("mbarrier", &vlog);
    }

    #[derive(Default)]
    struct Stats {
        completions: u64,
        cpl_wakes: u64,
        timeouts: u64,
        findings: std::collections::BTreeMap<&'static str, u64>,
    }

    /// Drives `ops` random operations and checks every cycle (see the test above).
    fn run_random(tb: &mut Tb, ops_wanted: u64) -> Stats {
        let mut rng = XorShift(0x5EED_0000_0000_0003);
        let mut words = vec![(0u64, false); 64];
        let mut tokens: Vec<Vec<u64>> = vec![vec![]; 64];
        let mut held = Ports::default();
        let mut rr = 0usize; // reference round-robin pointer: 0 local, 1 tma, 2 cluster
        let mut s1: Option<(MbarrierReq, MbarrierSource)> = None;
        let mut cpl_prev: Option<u32> = None;
        let mut waiters = [RefWaiter::Idle; 32];
        let mut busy = [false; 32];
        let (mut ops, mut completions, mut suspends, mut cpl_wakes, mut timeouts) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut findings = std::collections::BTreeMap::<&'static str, u64>::new();
        let t0 = std::time::Instant::now();
        // the unit's `now` counter during step c equals c
        let c0 = tb.steps;
        let mut c: u64 = c0;
        while ops < ops_wanted || s1.is_some() {
            // ---- new requests (held until accepted: ready/valid)
            if ops < ops_wanted {
                if held.local.is_none() && rng.pct(85) {
                    let free: Vec<u64> = (0..32).filter(|w| !busy[*w as usize]).collect();
                    if !free.is_empty() {
                        let warp = free[rng.below(free.len() as u64) as usize];
                        held.local = Some(random_local_req(&mut rng, &words, &tokens, warp));
                    }
                }
                if held.tma.is_none() && rng.pct(15) {
                    held.tma = Some(random_remote_req(&mut rng, &words, true));
                }
                if held.cluster.is_none() && rng.pct(15) {
                    held.cluster = Some(random_remote_req(&mut rng, &words, false));
                }
            }
            // ---- reference of what happens in cycle c
            // wake emission from the table as it stands (lowest warp first)
            // (a timed-out entry leaves as completed when last cycle's completion is its phase's)
            let emit = (0..32).find(|&i| matches!(waiters[i], RefWaiter::Woken { .. }));
            let want_wake = emit.map(|i| match waiters[i] {
                RefWaiter::Woken { completed, tag } => (i, completed || cpl_prev == Some(tag), tag),
                _ => unreachable!(),
            });
            for i in 0..32 {
                match waiters[i] {
                    RefWaiter::Waiting { tag, deadline } => {
                        if cpl_prev == Some(tag) {
                            waiters[i] = RefWaiter::Woken { completed: true, tag };
                        } else if deadline == c {
                            waiters[i] = RefWaiter::Woken { completed: false, tag };
                        }
                    }
                    RefWaiter::Woken { completed: false, tag } if cpl_prev == Some(tag) => {
                        waiters[i] = RefWaiter::Woken { completed: true, tag };
                    }
                    _ => {}
                }
            }
            if let Some(i) = emit {
                waiters[i] = RefWaiter::Idle;
            }
            // stage 1 executes the op accepted last cycle
            cpl_prev = None;
            let mut want_resp: Option<(MbarrierReq, Expect, u64)> = None;
            let mut want_fault: Option<(MbarrierReq, MbarrierSource, &'static str)> = None;
            let mut want_word: Option<(MbarrierReq, u64, bool)> = None;
            if let Some((r, src)) = s1.take() {
                let wi = (r.word.to_u64() % 64) as usize;
                let (w, v) = words[wi];
                let e = golden_apply(&r, src, w, v);
                match e.finding {
                    None => words[wi] = (e.word, e.valid),
                    Some(k) => {
                        *findings.entry(k).or_default() += 1;
                        want_fault = Some((r, src, k));
                    }
                }
                want_word = Some((r, words[wi].0, words[wi].1));
                let tag = ((w >> 63) as u32) << 16 | r.word.to_u64() as u32;
                if e.completed && e.finding.is_none() {
                    cpl_prev = Some(tag);
                    completions += 1;
                }
                if src == MbarrierSource::Local {
                    let is_try = matches!(r.op, MbarrierOp::TryWait | MbarrierOp::TryWaitParity);
                    let suspend = is_try && e.finding.is_none() && !e.wait_complete;
                    let warp = r.warp.index();
                    if suspend {
                        let h = if r.has_suspend_time_hint {
                            r.suspend_time_hint.to_u64()
                        } else {
                            DEFAULT_SUSPEND as u64
                        };
                        waiters[warp] = RefWaiter::Waiting {
                            tag,
                            deadline: c + h + 1,
                        };
                        suspends += 1;
                    } else if is_try {
                        busy[warp] = false;
                    }
                    if matches!(
                        r.op,
                        MbarrierOp::Arrive
                            | MbarrierOp::ArriveNoComplete
                            | MbarrierOp::ArriveExpectTx
                            | MbarrierOp::ArriveDrop
                            | MbarrierOp::ArriveDropNoComplete
                            | MbarrierOp::ArriveDropExpectTx
                    ) && e.finding.is_none()
                    {
                        let t = &mut tokens[wi];
                        t.push(golden::token_of(w));
                        if t.len() > 3 {
                            t.remove(0);
                        }
                    }
                    want_resp = Some((r, e, w));
                }
            }
            // ---- the cycle
            let s = tb.step(&held);
            let ctx = || format!("cycle {c}");
            // the whole word (and shadow bit) written back by stage 1, bit-exact
            if let Some((r, w, v)) = want_word {
                assert_eq!(
                    (tb.uut.last_write().0.to_u64(), tb.uut.last_write().1),
                    (w, v),
                    "{}: word after {:?}",
                    ctx(),
                    r
                );
            }
            // arbitration: round robin over the valid ports
            let valid = [
                held.local.is_some(),
                held.tma.is_some(),
                held.cluster.is_some(),
            ];
            let grant = (0..3).map(|k| (rr + k) % 3).find(|&p| valid[p]);
            let got = [s.local_ready, s.tma_ready, s.cluster_ready];
            for p in 0..3 {
                assert_eq!(got[p], grant == Some(p), "{}: ready of port {p}", ctx());
            }
            if let Some(p) = grant {
                rr = (p + 1) % 3;
                let (r, src) = match p {
                    0 => (held.local.take().unwrap(), MbarrierSource::Local),
                    1 => (held.tma.take().unwrap(), MbarrierSource::Tma),
                    _ => (held.cluster.take().unwrap(), MbarrierSource::Cluster),
                };
                if src == MbarrierSource::Local
                    && matches!(r.op, MbarrierOp::TryWait | MbarrierOp::TryWaitParity)
                {
                    busy[r.warp.index()] = true;
                }
                s1 = Some((r, src));
                ops += 1;
            }
            // responses
            match want_resp {
                None => assert!(!s.resp.valid, "{}: unexpected response", ctx()),
                Some((r, e, before)) => {
                    let got = s.resp;
                    assert!(got.valid, "{}: missing response to {:?}", ctx(), r);
                    assert_eq!(got.warp, r.warp, "{}", ctx());
                    // the state (token) is the high half of the word before the op
                    assert_eq!(
                        got.state.to_u64(),
                        golden::token_of(before),
                        "{}: state of {:?}",
                        ctx(),
                        r
                    );
                    assert_eq!(
                        got.wait_complete,
                        e.wait_complete && e.finding.is_none(),
                        "{}: waitComplete of {:?} on {:x}",
                        ctx(),
                        r,
                        got.state.to_u64()
                    );
                    assert_eq!(
                        got.pending_count.to_u64(),
                        e.pending_count as u64,
                        "{}",
                        ctx()
                    );
                    let is_try = matches!(r.op, MbarrierOp::TryWait | MbarrierOp::TryWaitParity);
                    assert_eq!(
                        got.suspended,
                        is_try && e.finding.is_none() && !e.wait_complete,
                        "{}",
                        ctx()
                    );
                }
            }
            match want_fault {
                None => assert!(
                    !s.fault.valid,
                    "{}: unexpected finding {:?}",
                    ctx(),
                    s.fault
                ),
                Some((r, src, name)) => {
                    assert!(
                        s.fault.valid,
                        "{}: missing finding {name} for {:?}",
                        ctx(),
                        r
                    );
                    assert_eq!(
                        s.fault.kind.name(),
                        Some(name),
                        "{}: finding of {:?}",
                        ctx(),
                        r
                    );
                    assert_eq!((s.fault.word, s.fault.source), (r.word, src), "{}", ctx());
                }
            }
            match want_wake {
                None => assert!(!s.wake.valid, "{}: unexpected wake {:?}", ctx(), s.wake),
                Some((warp, completed, _)) => {
                    assert!(s.wake.valid, "{}: missing wake of warp {warp}", ctx());
                    assert_eq!(
                        (s.wake.warp.index(), s.wake.completed),
                        (warp, completed),
                        "{}",
                        ctx()
                    );
                    busy[warp] = false;
                    if completed {
                        cpl_wakes += 1;
                    } else {
                        timeouts += 1;
                    }
                }
            }
            c += 1;
        }
        let dt = t0.elapsed().as_secs_f64();
        eprintln!(
            "{ops} ops in {} cycles, {dt:.2} s: {:.0} cycles/s; {completions} phase completions, \
             {suspends} suspends ({cpl_wakes} woken by completion, {timeouts} by timeout); findings {:?}",
            c - c0,
            (c - c0) as f64 / dt,
            findings
        );
        Stats {
            completions,
            cpl_wakes,
            timeouts,
            findings,
        }
    }
}
