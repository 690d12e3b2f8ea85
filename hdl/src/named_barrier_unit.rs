//! NamedBarrierUnit: the 16 named barriers of one CTA (`bar` / `barrier{.cta}`, PTX 9.7.13.1).
//!
//! Per barrier the unit keeps the expected thread count (`b`, or "all non-exited threads of the
//! CTA" when `b` is omitted), the arrival count, the set of arrived warps, the set of waiting
//! warps and the three `bar.red` accumulators (popc, and, or). One operation per cycle is
//! applied as a read-modify-write of the addressed barrier's record in two stages (read, then
//! update); `done` / `fault` show an op one edge after it was accepted.
//!
//! Arrival is warp-granular (PTX 9.7.13.1: "causes executing thread to wait for all non-exited
//! threads from its warp and marks warps' arrival at barrier"): a warp arrival counts 32 threads,
//! so a thread count `b` (a multiple of 32) expects `b / 32` warp arrivals. A barrier without `b`
//! completes when every non-exited warp of the CTA has arrived; the `exit` port retires warps,
//! and after an exit the unit sweeps the 16 barriers (one per cycle, op port back-pressured) so a
//! barrier whose last missing warps exited completes without another arrival.
//!
//! `sync` and `red` arrive and wait; `arrive` arrives without waiting (producer/consumer mixing
//! of PTX 9.7.13.1). When a barrier completes it releases its waiting warps (output mask plus
//! barrier id) with the reduction results, and resets for immediate reuse.
//!
//! Ports (synchronous to `clock`):
//! - `req` / `req_valid` / `req_ready`: one warp's barrier instruction (ready is low during a
//!   sweep and during `launch`).
//! - `exit`: a warp exited (always accepted).
//! - `launch`: a CTA (re)starts: sets the mask of launched warps, clears all barriers.
//! - `done`: a barrier completed: id, released warps, popc / and / or results.
//! - `fault`: simulation-assertion finding (`NamedBarrierFinding`); a faulting op changes no
//!   state and its warp is not released.
//!
//! Assumptions: the issuing warp's SIMT logic merges the lanes of a divergent non-`.aligned`
//! warp and sends one arrival per warp (`lanes` = its non-exited lanes, `pred` = its `{!}c`
//! predicates, complement already applied); the barrier id is already range-checked (4 bits).
//!
//! PTX clauses implemented: 9.7.13.1 (sixteen barriers; `b` multiple of warp size; all
//! threads when omitted; non-exited threads; sync / arrive / red.popc / red.and / red.or;
//! reinitialized on completion; sync/arrive mixing; red not mixed with sync/arrive; a warp
//! arrives once per generation; same `b` for one active barrier).

use rust_hdl::prelude::*;

/// Named barriers per CTA (PTX 9.7.13.1).
pub const NAMED_BARRIERS: usize = 16;

/// Barrier instructions (PTX 9.7.13.1); `bar.*` forms map to the `.aligned` `barrier.*` ones.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum NamedBarrierOp {
    /// barrier.sync a{, b}: arrive and wait
    Sync,
    /// barrier.arrive a, b: arrive, do not wait
    Arrive,
    /// barrier.red.popc.u32 d, a{, b}, {!}c
    RedPopc,
    /// barrier.red.and.pred p, a{, b}, {!}c
    RedAnd,
    /// barrier.red.or.pred p, a{, b}, {!}c
    RedOr,
}

/// One warp's barrier instruction.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct NamedBarrierReq {
    /// the instruction
    pub op: NamedBarrierOp,
    /// barrier id `a` (0..15)
    pub barrier: Bits<4>,
    /// the issuing warp
    pub warp: Bits<5>,
    /// `b` was given
    pub has_count: bool,
    /// `b`: participating threads (u32)
    pub count: Bits<32>,
    /// the warp's non-exited lanes
    pub lanes: Bits<32>,
    /// per lane `{!}c` of bar.red (complement applied)
    pub pred: Bits<32>,
}

/// The record of one named barrier.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct NamedBarrierState {
    /// some warp arrived in the current generation
    pub active: bool,
    /// the generation is used by bar.red (else by sync/arrive)
    pub red: bool,
    /// the generation's arrivals gave `b`
    pub has_count: bool,
    /// `b / 32`: expected warp arrivals (when has_count)
    pub expected_warps: Bits<6>,
    /// warp arrivals so far (each counts 32 threads)
    pub arrived_warps: Bits<6>,
    /// warps arrived in this generation
    pub arrived_mask: Bits<32>,
    /// warps waiting (sync / red) in this generation
    pub waiting_mask: Bits<32>,
    /// popc accumulator: threads with a true predicate
    pub popc: Bits<11>,
    /// some participating thread had a false predicate (and = !some_false)
    pub some_false: bool,
    /// some participating thread had a true predicate (or)
    pub some_true: bool,
}

/// A warp exited.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct WarpExit {
    /// an exit this cycle
    pub valid: bool,
    /// the warp
    pub warp: Bits<5>,
}

/// A CTA (re)launch.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct NamedBarrierLaunch {
    /// a launch this cycle
    pub valid: bool,
    /// the CTA's warps (bit per warp)
    pub warps: Bits<32>,
}

/// A barrier completion.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct NamedBarrierRelease {
    /// a completion this cycle
    pub valid: bool,
    /// the barrier
    pub barrier: Bits<4>,
    /// the warps to restart (those that executed sync / red)
    pub warps: Bits<32>,
    /// bar.red.popc result
    pub popc: Bits<11>,
    /// bar.red.and result
    pub all_true: bool,
    /// bar.red.or result
    pub any_true: bool,
}

/// Simulation-assertion findings (names shared with the golden model).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum NamedBarrierFinding {
    /// no finding
    NoFinding,
    /// `b` is not a multiple of the warp size
    BarrierCountNotMultipleOfWarp,
    /// `b` above 1024 threads, the most a CTA has (the SM engine first checks the CTA's own
    /// size with the golden model's `exec::named_operands`; the name is the same)
    BarrierCountAboveCta,
    /// unsupported: barrier.arrive without `b` (PTX requires a non-zero thread count)
    UnsupportedArriveWithoutCount,
    /// the warp already arrived in this generation
    BarrierWarpArrivedTwice,
    /// arrivals on one active barrier with different `b` (or with and without `b`)
    BarrierCountMismatch,
    /// bar.red mixed with sync/arrive on one active barrier
    BarrierRedMixed,
    /// arrivals exceed the expected count
    BarrierCountTooSmall,
}

impl NamedBarrierFinding {
    /// The finding's stable name; `None` for `NoFinding`. Unsupported cases read "unsupported: ...".
    pub fn name(self) -> Option<&'static str> {
        match self {
            NamedBarrierFinding::NoFinding => None,
            NamedBarrierFinding::BarrierCountNotMultipleOfWarp => {
                Some("BarrierCountNotMultipleOfWarp")
            }
            NamedBarrierFinding::BarrierCountAboveCta => Some("BarrierCountAboveCta"),
            NamedBarrierFinding::UnsupportedArriveWithoutCount => {
                Some("unsupported: barrier.arrive without a thread count")
            }
            NamedBarrierFinding::BarrierWarpArrivedTwice => Some("BarrierWarpArrivedTwice"),
            NamedBarrierFinding::BarrierCountMismatch => Some("BarrierCountMismatch"),
            NamedBarrierFinding::BarrierRedMixed => Some("BarrierRedMixed"),
            NamedBarrierFinding::BarrierCountTooSmall => Some("BarrierCountTooSmall"),
        }
    }
}

/// A finding of the simulation assertions.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct NamedBarrierFault {
    /// a finding this cycle
    pub valid: bool,
    /// which finding
    pub kind: NamedBarrierFinding,
    /// the barrier
    pub barrier: Bits<4>,
    /// the warp
    pub warp: Bits<5>,
}

/// The request fields the update stage needs, decoded in the read stage (everything that
/// depends on the request alone is computed there, off the read-modify-write loop).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct NamedBarrierIssue {
    /// an op was accepted
    pub take: bool,
    /// the exit sweep checks the barrier (no op)
    pub sweep: bool,
    /// the barrier read (the op's, or the sweep's)
    pub barrier: Bits<4>,
    /// the issuing warp
    pub warp: Bits<5>,
    /// the warp's bit
    pub wbit: Bits<32>,
    /// the op arrives and waits (sync, red)
    pub is_wait: bool,
    /// the op is a bar.red
    pub is_red: bool,
    /// `b` was given
    pub has_count: bool,
    /// `b / 32`
    pub exp_w: Bits<6>,
    /// the finding that depends on the request alone (checked first, PTX 9.7.13.1)
    pub req_finding: NamedBarrierFinding,
    /// the warp's popc contribution
    pub contrib: Bits<11>,
    /// some participating lane has a false predicate
    pub some_false: bool,
    /// some participating lane has a true predicate
    pub some_true: bool,
    /// the CTA's non-exited warps in the cycle the op was accepted
    pub live: Bits<32>,
}

/// The count comparisons the update stage asks of the op's record, found in the read stage
/// from the record the op reads (in `bars`, the write stage's or the update stage's: the same
/// bypass as `rec_q`), so their carry chains are off the read-modify-write loop. (The warp-mask
/// checks stay in the update stage: in the read stage they would follow the 16-way record mux.)
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct NamedBarrierFlags {
    /// the op is the expected count's last arrival (`arrived_warps == b / 32 - 1`)
    pub last_counted: bool,
    /// the op's `b` differs from the active generation's (or one of them has none)
    pub count_mismatch: bool,
}

/// The named-barrier unit of one CTA.
///
/// Three stages, one operation per cycle: the read stage selects the addressed record (16-way
/// mux, with a bypass of the two younger records not yet in `bars`), decodes the request
/// into `issue_q` / `rec_q` and finds the update's count comparisons on that record (`flags_q`:
/// last counted arrival, count mismatch; for the update stage's own record both outcomes are
/// found and its write / completion picks one last); the update stage applies the arrival to
/// `rec_q` and drives `done` / `fault` from these registers; the write stage (`wr_q`) stores
/// the new record in `bars`. The outputs show the op one edge after it was accepted, as in a
/// one-stage unit; the stages only take the record mux, the request decode, the count
/// comparisons and the fan-out to the 16 records off the read-modify-write loop (docs/FPGA.md).
#[derive(LogicBlock)]
pub struct NamedBarrierUnit {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// a warp's barrier instruction
    pub req: Signal<In, NamedBarrierReq>,
    /// `req` is valid
    pub req_valid: Signal<In, bool>,
    /// `req` is accepted this cycle
    pub req_ready: Signal<Out, bool>,
    /// warp exit
    pub exit: Signal<In, WarpExit>,
    /// CTA launch
    pub launch: Signal<In, NamedBarrierLaunch>,
    /// barrier completion (`release` is a Verilog keyword)
    pub done: Signal<Out, NamedBarrierRelease>,
    /// simulation-assertion finding
    pub fault: Signal<Out, NamedBarrierFault>,

    /// the reset value of a barrier record
    idle: Constant<NamedBarrierState>,

    /// the barrier records
    bars: [DFF<NamedBarrierState>; NAMED_BARRIERS],
    /// non-exited warps of the CTA
    live: DFF<Bits<32>>,
    /// an exit sweep is under way
    sweep_active: DFF<bool>,
    /// the barrier the sweep checks this cycle
    sweep_idx: DFF<Bits<4>>,
    /// update stage: the decoded op (or sweep step)
    issue_q: DFF<NamedBarrierIssue>,
    /// update stage: the record of its barrier
    rec_q: DFF<NamedBarrierState>,
    /// update stage: the op's checks on that record
    flags_q: DFF<NamedBarrierFlags>,
    /// write stage: a record to store
    wr_q: DFF<bool>,
    /// write stage: its barrier
    wr_sel_q: DFF<Bits<4>>,
    /// write stage: the record
    wr_data_q: DFF<NamedBarrierState>,

    /// read stage: an op is accepted this cycle
    take: Signal<Local, bool>,
    /// read stage: the barrier read this cycle
    sel: Signal<Local, Bits<4>>,
    /// read stage: its record in `bars`
    cur_q: Signal<Local, NamedBarrierState>,
    /// read stage: `b` is not a multiple of 32
    count_odd: Signal<Local, bool>,
    /// read stage: participating true predicates
    p0: Signal<Local, Bits<32>>,
    /// popcount step 1: the 2-bit count of each bit pair (bitwise, no carry chain)
    p1: Signal<Local, Bits<32>>,
    /// popcount step 2: the 3-bit count of each nibble in its 4-bit field (bitwise)
    p2: Signal<Local, Bits<32>>,
    /// popcount step 3: the count of each byte (one 4-bit adder each)
    p3: [Signal<Local, Bits<4>>; 4],
    /// popcount step 4: the count of each 16-bit half (one 5-bit adder each)
    p4: [Signal<Local, Bits<5>>; 2],
    /// update stage: arrivals after this one
    n: Signal<Local, Bits<6>>,
    /// update stage: arrived warps after this one
    amask: Signal<Local, Bits<32>>,
    /// update stage: the barrier completes with this arrival
    done_arrive: Signal<Local, bool>,
    /// update stage: the sweep finds the barrier complete
    done_sweep: Signal<Local, bool>,
    /// update stage: the finding of this op
    finding: Signal<Local, NamedBarrierFinding>,
    /// update stage: the record after this arrival
    upd: Signal<Local, NamedBarrierState>,
    /// update stage: the record to write
    new_d: Signal<Local, NamedBarrierState>,
    /// update stage: write `new_d` to `issue_q.barrier`
    write: Signal<Local, bool>,
    /// update stage: the barrier written (`issue_q.barrier`)
    wsel: Signal<Local, Bits<4>>,
    /// write stage: the barrier written (`wr_sel_q`)
    wr_idx: Signal<Local, Bits<4>>,
    /// read stage: `b / 32`
    exp_w: Signal<Local, Bits<6>>,
    /// read stage: `b / 32 - 1`
    exp_w_m1: Signal<Local, Bits<6>>,
    /// read stage: the record in `bars` or the write stage's
    older: Signal<Local, NamedBarrierState>,
    /// read stage: the flags on `older`
    flags_older: Signal<Local, NamedBarrierFlags>,
    /// read stage: the flags on the update stage's record, were it written without completing
    flags_upd: Signal<Local, NamedBarrierFlags>,
    /// read stage: the flags on a reset record (the update stage's, were it to complete)
    flags_idle: Signal<Local, NamedBarrierFlags>,
}

impl Default for NamedBarrierUnit {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            req: Default::default(),
            req_valid: Default::default(),
            req_ready: Default::default(),
            exit: Default::default(),
            launch: Default::default(),
            done: Default::default(),
            fault: Default::default(),
            idle: Constant::new(NamedBarrierState::default()),
            bars: std::array::from_fn(|_| Default::default()),
            live: Default::default(),
            sweep_active: Default::default(),
            sweep_idx: Default::default(),
            issue_q: Default::default(),
            rec_q: Default::default(),
            flags_q: Default::default(),
            wr_q: Default::default(),
            wr_sel_q: Default::default(),
            wr_data_q: Default::default(),
            take: Default::default(),
            sel: Default::default(),
            cur_q: Default::default(),
            count_odd: Default::default(),
            p0: Default::default(),
            p1: Default::default(),
            p2: Default::default(),
            p3: std::array::from_fn(|_| Default::default()),
            p4: std::array::from_fn(|_| Default::default()),
            n: Default::default(),
            amask: Default::default(),
            done_arrive: Default::default(),
            done_sweep: Default::default(),
            finding: Default::default(),
            upd: Default::default(),
            new_d: Default::default(),
            write: Default::default(),
            wsel: Default::default(),
            wr_idx: Default::default(),
            exp_w: Default::default(),
            exp_w_m1: Default::default(),
            older: Default::default(),
            flags_older: Default::default(),
            flags_upd: Default::default(),
            flags_idle: Default::default(),
        }
    }
}

impl Logic for NamedBarrierUnit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            live,
            sweep_active,
            sweep_idx,
            issue_q,
            rec_q,
            flags_q,
            wr_q,
            wr_sel_q,
            wr_data_q
        );
        for i in 0..NAMED_BARRIERS {
            self.bars[i].clock.next = self.clock.val();
        }

        // ======== update stage: the op accepted at the last edge, on its record.
        // ---- the arrival (PTX 9.7.13.1).
        self.n.next = self.rec_q.q.val().arrived_warps + 1;
        self.amask.next = self.rec_q.q.val().arrived_mask | self.issue_q.q.val().wbit;
        self.done_arrive.next = (self.issue_q.q.val().live & !self.amask.val()) == 0;
        if self.issue_q.q.val().has_count {
            self.done_arrive.next = self.flags_q.q.val().last_counted;
        }
        self.done_sweep.next = self.rec_q.q.val().active
            && !self.rec_q.q.val().has_count
            && ((self.issue_q.q.val().live & !self.rec_q.q.val().arrived_mask) == 0);
        // the request's own findings (decided in the read stage) come first
        self.finding.next = self.issue_q.q.val().req_finding;
        if self.issue_q.q.val().req_finding == NamedBarrierFinding::NoFinding {
            if (self.rec_q.q.val().arrived_mask & self.issue_q.q.val().wbit) != 0 {
                self.finding.next = NamedBarrierFinding::BarrierWarpArrivedTwice;
            } else if self.flags_q.q.val().count_mismatch {
                self.finding.next = NamedBarrierFinding::BarrierCountMismatch;
            } else if self.rec_q.q.val().active
                && (self.rec_q.q.val().red != self.issue_q.q.val().is_red)
            {
                self.finding.next = NamedBarrierFinding::BarrierRedMixed;
            } else if self.issue_q.q.val().has_count && (self.issue_q.q.val().exp_w == 0) {
                // arrivals + 1 > b / 32: only b = 0 gets here (an active generation's b was set by
                // its first arrival, checked above, and its arrivals stay below b / 32)
                self.finding.next = NamedBarrierFinding::BarrierCountTooSmall;
            }
        }
        self.upd.next.active = true;
        self.upd.next.red = self.issue_q.q.val().is_red;
        self.upd.next.has_count = self.issue_q.q.val().has_count;
        self.upd.next.expected_warps = self.issue_q.q.val().exp_w;
        self.upd.next.arrived_warps = self.n.val();
        self.upd.next.arrived_mask = self.amask.val();
        self.upd.next.waiting_mask = self.rec_q.q.val().waiting_mask;
        if self.issue_q.q.val().is_wait {
            self.upd.next.waiting_mask = self.rec_q.q.val().waiting_mask | self.issue_q.q.val().wbit;
        }
        // only bar.red contributes to the reductions
        self.upd.next.popc = self.rec_q.q.val().popc;
        self.upd.next.some_false = self.rec_q.q.val().some_false;
        self.upd.next.some_true = self.rec_q.q.val().some_true;
        if self.issue_q.q.val().is_red {
            self.upd.next.popc =
                self.rec_q.q.val().popc + self.issue_q.q.val().contrib;
            self.upd.next.some_false =
                self.rec_q.q.val().some_false || self.issue_q.q.val().some_false;
            self.upd.next.some_true = self.rec_q.q.val().some_true || self.issue_q.q.val().some_true;
        }

        // ---- next record, release, fault (outputs: one edge after the op, from registers).
        self.wsel.next = self.issue_q.q.val().barrier;
        self.write.next = false;
        self.new_d.next = self.upd.val();
        self.done.next.valid = false;
        self.done.next.barrier = self.issue_q.q.val().barrier;
        self.done.next.warps = self.upd.val().waiting_mask;
        self.done.next.popc = self.upd.val().popc;
        self.done.next.all_true = !self.upd.val().some_false;
        self.done.next.any_true = self.upd.val().some_true;
        if self.issue_q.q.val().sweep {
            self.done.next.warps = self.rec_q.q.val().waiting_mask;
            self.done.next.popc = self.rec_q.q.val().popc;
            self.done.next.all_true = !self.rec_q.q.val().some_false;
            self.done.next.any_true = self.rec_q.q.val().some_true;
            if self.done_sweep.val() {
                // the last missing warps exited: complete and reset
                self.done.next.valid = true;
                self.write.next = true;
                self.new_d.next = self.idle.val();
            }
        } else if self.issue_q.q.val().take && (self.finding.val() == NamedBarrierFinding::NoFinding)
        {
            self.write.next = true;
            if self.done_arrive.val() {
                // completed: restart the waiters, reinitialize for immediate reuse
                self.done.next.valid = true;
                self.new_d.next = self.idle.val();
            }
        }
        self.fault.next.valid =
            self.issue_q.q.val().take && (self.finding.val() != NamedBarrierFinding::NoFinding);
        self.fault.next.kind = self.finding.val();
        self.fault.next.barrier = self.issue_q.q.val().barrier;
        self.fault.next.warp = self.issue_q.q.val().warp;
        // ======== write stage: the record written one edge after the update.
        self.wr_q.d.next = self.write.val() && !self.launch.val().valid;
        self.wr_sel_q.d.next = self.wsel.val();
        self.wr_data_q.d.next = self.new_d.val();
        self.wr_idx.next = self.wr_sel_q.q.val();
        for i in 0..NAMED_BARRIERS {
            self.bars[i].d.next = self.bars[i].q.val();
            if self.wr_q.q.val() && (self.wr_idx.val().index() == i) {
                self.bars[i].d.next = self.wr_data_q.q.val();
            }
            if self.launch.val().valid {
                self.bars[i].d.next = self.idle.val();
            }
        }

        // ======== read stage: the sweep owns the datapath while it runs.
        self.req_ready.next = !self.sweep_active.q.val() && !self.launch.val().valid;
        self.take.next =
            self.req_valid.val() && !self.sweep_active.q.val() && !self.launch.val().valid;
        self.sel.next = self.req.val().barrier;
        if self.sweep_active.q.val() {
            self.sel.next = self.sweep_idx.q.val();
        }
        self.cur_q.next = self.idle.val();
        for i in 0..NAMED_BARRIERS {
            if self.sel.val().index() == i {
                self.cur_q.next = self.bars[i].q.val();
            }
        }
        // the records of the write stage and of the update stage are not in `bars` yet; the
        // flags are found on each candidate record and the update stage's outcome (write,
        // complete) picks among them last
        self.older.next = self.cur_q.val();
        if self.wr_q.q.val() && (self.wr_sel_q.q.val() == self.sel.val()) {
            self.older.next = self.wr_data_q.q.val();
        }
        self.exp_w.next = bit_cast::<6, 32>(self.req.val().count >> 5);
        self.exp_w_m1.next = self.exp_w.val() - 1;
        self.flags_older.next.last_counted = self.older.val().arrived_warps == self.exp_w_m1.val();
        self.flags_older.next.count_mismatch = self.older.val().active
            && ((self.older.val().has_count != self.req.val().has_count)
                || (self.req.val().has_count && (self.older.val().expected_warps != self.exp_w.val())));
        // the update stage's record if written without completing: `upd`, from its registers
        self.flags_upd.next.last_counted = self.n.val() == self.exp_w_m1.val();
        self.flags_upd.next.count_mismatch = (self.issue_q.q.val().has_count
            != self.req.val().has_count)
            || (self.req.val().has_count && (self.issue_q.q.val().exp_w != self.exp_w.val()));
        // ... and if it completes: the reset record (inactive, nobody arrived)
        self.flags_idle.next.last_counted = self.exp_w_m1.val() == 0;
        self.flags_idle.next.count_mismatch = false;
        self.rec_q.d.next = self.older.val();
        self.flags_q.d.next = self.flags_older.val();
        if self.write.val() && (self.wsel.val() == self.sel.val()) {
            self.rec_q.d.next = self.new_d.val();
            self.flags_q.d.next = self.flags_upd.val();
            if self.done.val().valid {
                self.flags_q.d.next = self.flags_idle.val();
            }
        }

        // ---- decode, the request's own findings and its reduction contribution.
        self.count_odd.next = (self.req.val().count & 31) != 0;
        self.p0.next = self.req.val().pred & self.req.val().lanes;
        // The popcount is on the request path: its first two steps are bitwise (a pair's count
        // is {a & b, a ^ b}; a nibble's is the sum of two pair counts of at most 2, written per
        // bit), the rest narrow adders, so no carry chain runs across the 32 bits (docs/FPGA.md).
        self.p1.next = ((self.p0.val() ^ (self.p0.val() >> 1)) & 0x5555_5555)
            | ((self.p0.val() & (self.p0.val() >> 1) & 0x5555_5555) << 1);
        self.p2.next = (((self.p1.val() ^ (self.p1.val() >> 2)) & 0x1111_1111)
            | (((self.p1.val() >> 1) ^ (self.p1.val() >> 3) ^ (self.p1.val() & (self.p1.val() >> 2)))
                & 0x1111_1111)
                << 1)
            | (((self.p1.val() >> 1) & (self.p1.val() >> 3) & 0x1111_1111) << 2);
        self.p3[0].next = bit_cast::<4, 32>(self.p2.val() & 7)
            + bit_cast::<4, 32>((self.p2.val() >> 4) & 7);
        self.p3[1].next = bit_cast::<4, 32>((self.p2.val() >> 8) & 7)
            + bit_cast::<4, 32>((self.p2.val() >> 12) & 7);
        self.p3[2].next = bit_cast::<4, 32>((self.p2.val() >> 16) & 7)
            + bit_cast::<4, 32>((self.p2.val() >> 20) & 7);
        self.p3[3].next = bit_cast::<4, 32>((self.p2.val() >> 24) & 7)
            + bit_cast::<4, 32>((self.p2.val() >> 28) & 7);
        self.p4[0].next =
            bit_cast::<5, 4>(self.p3[0].val()) + bit_cast::<5, 4>(self.p3[1].val());
        self.p4[1].next =
            bit_cast::<5, 4>(self.p3[2].val()) + bit_cast::<5, 4>(self.p3[3].val());
        self.issue_q.d.next.take = self.take.val();
        // (a sweep step in a launch cycle still reports, as the launch only clears the records)
        self.issue_q.d.next.sweep = self.sweep_active.q.val();
        self.issue_q.d.next.barrier = self.sel.val();
        self.issue_q.d.next.warp = self.req.val().warp;
        self.issue_q.d.next.wbit = bits::<32>(1) << self.req.val().warp;
        self.issue_q.d.next.is_wait = self.req.val().op != NamedBarrierOp::Arrive;
        self.issue_q.d.next.is_red = (self.req.val().op != NamedBarrierOp::Arrive)
            && (self.req.val().op != NamedBarrierOp::Sync);
        self.issue_q.d.next.has_count = self.req.val().has_count;
        self.issue_q.d.next.exp_w = self.exp_w.val();
        self.issue_q.d.next.req_finding = NamedBarrierFinding::NoFinding;
        if self.req.val().has_count && self.count_odd.val() {
            self.issue_q.d.next.req_finding = NamedBarrierFinding::BarrierCountNotMultipleOfWarp;
        } else if self.req.val().has_count && (self.req.val().count > 1024) {
            self.issue_q.d.next.req_finding = NamedBarrierFinding::BarrierCountAboveCta;
        } else if !self.req.val().has_count && (self.req.val().op == NamedBarrierOp::Arrive) {
            self.issue_q.d.next.req_finding = NamedBarrierFinding::UnsupportedArriveWithoutCount;
        }
        self.issue_q.d.next.contrib =
            bit_cast::<11, 5>(self.p4[0].val()) + bit_cast::<11, 5>(self.p4[1].val());
        self.issue_q.d.next.some_false = self.p0.val() != self.req.val().lanes;
        self.issue_q.d.next.some_true = self.p0.val() != 0;
        self.issue_q.d.next.live = self.live.q.val();

        // ---- warps: exits retire them and start a sweep; a launch sets them.
        if self.exit.val().valid {
            self.live.d.next = self.live.q.val() & !(bits::<32>(1) << self.exit.val().warp);
        }
        if self.sweep_active.q.val() {
            self.sweep_idx.d.next = self.sweep_idx.q.val() + 1;
            if self.sweep_idx.q.val() == 15 {
                self.sweep_active.d.next = false;
            }
        }
        if self.exit.val().valid {
            // (re)start: every barrier is checked after the latest exit
            self.sweep_active.d.next = true;
            self.sweep_idx.d.next = 0.into();
        }
        if self.launch.val().valid {
            self.live.d.next = self.launch.val().warps;
            self.sweep_active.d.next = false;
            self.sweep_idx.d.next = 0.into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{require_yosys, yosys_check_flat, Trace, XorShift};

    /// Inputs of one cycle.
    #[derive(Default, Clone, Copy)]
    struct In {
        req: Option<NamedBarrierReq>,
        exit: Option<u64>,
        launch: Option<u64>,
    }

    /// Outputs of one cycle: ready before the edge, registered outputs after it.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Out {
        ready: bool,
        release: Option<(u64, u64, u64, bool, bool)>,
        fault: Option<(&'static str, u64, u64)>,
    }

    struct Tb {
        uut: Box<NamedBarrierUnit>,
        /// when set, every cycle is recorded for the iverilog replay
        trace: Option<Trace>,
    }

    impl Tb {
        fn new() -> Tb {
            let mut uut = Box::new(NamedBarrierUnit::default());
            uut.connect_all();
            assert!(simulate(&mut *uut, 200));
            Tb { uut, trace: None }
        }

        fn traced() -> Tb {
            let mut tb = Tb::new();
            tb.trace = Some(Trace {
                inputs: vec![
                    ("req", NamedBarrierReq::BITS),
                    ("req_valid", 1),
                    ("exit", WarpExit::BITS),
                    ("launch", NamedBarrierLaunch::BITS),
                ],
                pre: vec![("req_ready", 1)],
                post: vec![
                    ("done", NamedBarrierRelease::BITS),
                    ("fault", NamedBarrierFault::BITS),
                ],
                rows: vec![],
                warmup: 0,
            });
            tb
        }

        /// One clock cycle (see the mbarrier unit's testbench).
        fn step(&mut self, i: &In) -> Out {
            let u = &mut *self.uut;
            u.req_valid.next = i.req.is_some();
            u.req.next = i.req.unwrap_or_default();
            u.exit.next = WarpExit {
                valid: i.exit.is_some(),
                warp: i.exit.unwrap_or(0).into(),
            };
            u.launch.next = NamedBarrierLaunch {
                valid: i.launch.is_some(),
                warps: i.launch.unwrap_or(0).into(),
            };
            u.clock.next = false.into();
            assert!(simulate(u, 200), "combinational logic did not settle");
            let ready = u.req_ready.val();
            u.clock.next = true.into();
            assert!(simulate(u, 200), "combinational logic did not settle");
            let r = u.done.val();
            let f = u.fault.val();
            if let Some(t) = &mut self.trace {
                t.rows.push((
                    vec![
                        Trace::hex(u.req.val()),
                        Trace::hex(u.req_valid.val()),
                        Trace::hex(u.exit.val()),
                        Trace::hex(u.launch.val()),
                    ],
                    [Trace::hex(ready), Trace::hex(r), Trace::hex(f)].join(" "),
                ));
            }
            Out {
                ready,
                release: r.valid.then(|| {
                    (
                        r.barrier.to_u64(),
                        r.warps.to_u64(),
                        r.popc.to_u64(),
                        r.all_true,
                        r.any_true,
                    )
                }),
                fault: f
                    .valid
                    .then(|| (f.kind.name().unwrap(), f.barrier.to_u64(), f.warp.to_u64())),
            }
        }

        fn op(&mut self, r: NamedBarrierReq) -> Out {
            let o = self.step(&In {
                req: Some(r),
                ..Default::default()
            });
            assert!(o.ready);
            o
        }
    }

    fn req(op: NamedBarrierOp, bar: u64, warp: u64, count: Option<u64>) -> NamedBarrierReq {
        NamedBarrierReq {
            op,
            barrier: bar.into(),
            warp: warp.into(),
            has_count: count.is_some(),
            count: count.unwrap_or(0).into(),
            lanes: 0xFFFF_FFFF_u64.into(),
            pred: 0.into(),
        }
    }
    fn red(op: NamedBarrierOp, bar: u64, warp: u64, lanes: u64, pred: u64) -> NamedBarrierReq {
        NamedBarrierReq {
            lanes: lanes.into(),
            pred: pred.into(),
            ..req(op, bar, warp, None)
        }
    }

    #[test]
    fn named_barrier_check_all_and_yosys_validate() {
        require_yosys();
        let mut uut = NamedBarrierUnit::default();
        uut.connect_all();
        check_all(&uut).unwrap();
        let vlog = generate_verilog(&uut);
        yosys_validate("hopsync_named_barrier_unit", &vlog).unwrap();
        yosys_check_flat("named_barrier_unit", &vlog);
    }

    #[test]
    fn sync_without_count_waits_for_every_warp_of_the_cta() {
        let mut tb = Tb::new();
        tb.step(&In {
            launch: Some(0b1111),
            ..Default::default()
        });
        for w in 0..3 {
            assert_eq!(tb.op(req(NamedBarrierOp::Sync, 0, w, None)).release, None);
        }
        let o = tb.op(req(NamedBarrierOp::Sync, 0, 3, None));
        assert_eq!(o.release, Some((0, 0b1111, 0, true, false)));
        assert_eq!(o.fault, None);
        // reinitialized: immediately reusable
        assert_eq!(tb.op(req(NamedBarrierOp::Sync, 0, 0, None)).release, None);
    }

    #[test]
    fn sync_with_count_and_producer_consumer_arrive() {
        // PTX 9.7.13.1 producer/consumer: arrive does not wait, sync does
        let mut tb = Tb::new();
        tb.step(&In {
            launch: Some(0xFF),
            ..Default::default()
        });
        assert_eq!(
            tb.op(req(NamedBarrierOp::Arrive, 1, 0, Some(64))).release,
            None
        );
        let o = tb.op(req(NamedBarrierOp::Sync, 1, 5, Some(64)));
        assert_eq!(
            o.release,
            Some((1, 1 << 5, 0, true, false)),
            "only the sync warp restarts"
        );
        // roles reversed on another barrier
        assert_eq!(
            tb.op(req(NamedBarrierOp::Sync, 2, 0, Some(64))).release,
            None
        );
        let o = tb.op(req(NamedBarrierOp::Arrive, 2, 5, Some(64)));
        assert_eq!(o.release, Some((2, 1, 0, true, false)));
        // b = 96: three warps
        tb.op(req(NamedBarrierOp::Sync, 3, 1, Some(96)));
        tb.op(req(NamedBarrierOp::Sync, 3, 2, Some(96)));
        assert_eq!(
            tb.op(req(NamedBarrierOp::Sync, 3, 7, Some(96)))
                .release
                .unwrap()
                .1,
            0b1000_0110
        );
    }

    #[test]
    fn red_popc_and_or_deliver_results() {
        let mut tb = Tb::new();
        tb.step(&In {
            launch: Some(0b111),
            ..Default::default()
        });
        tb.op(red(NamedBarrierOp::RedPopc, 4, 0, 0xFFFF_FFFF, 0xF0F0_0001));
        tb.op(red(NamedBarrierOp::RedAnd, 4, 1, 0x0000_FFFF, 0xFFFF_FFFF)); // exited lanes ignored
        let o = tb.op(red(NamedBarrierOp::RedOr, 4, 2, 0xFFFF_FFFF, 0));
        assert_eq!(o.release, Some((4, 0b111, 9 + 16, false, true)));
        tb.op(red(NamedBarrierOp::RedAnd, 4, 0, 0xFFFF_FFFF, 0xFFFF_FFFF));
        tb.op(red(NamedBarrierOp::RedAnd, 4, 1, 0xFF, 0xFF));
        let o = tb.op(red(NamedBarrierOp::RedAnd, 4, 2, 0x1, 0x1));
        assert_eq!(o.release, Some((4, 0b111, 32 + 8 + 1, true, true)));
    }

    #[test]
    fn exited_warps_stop_counting() {
        // PTX 9.7.13.1 "non-exited threads": the sweep after an exit completes the barrier
        let mut tb = Tb::new();
        tb.step(&In {
            launch: Some(0b111),
            ..Default::default()
        });
        tb.op(req(NamedBarrierOp::Sync, 6, 0, None));
        tb.op(req(NamedBarrierOp::Sync, 6, 1, None));
        let mut released = None;
        let mut blocked = 0;
        let o = tb.step(&In {
            exit: Some(2),
            ..Default::default()
        });
        assert!(o.ready);
        for k in 0..20 {
            let o = tb.step(&In {
                req: Some(req(NamedBarrierOp::Sync, 9, 0, None)),
                ..Default::default()
            });
            if !o.ready {
                blocked += 1;
            }
            if let Some(r) = o.release {
                assert!(released.is_none());
                released = Some((k, r));
            }
            if o.ready {
                break;
            }
        }
        assert_eq!(
            blocked, 16,
            "one sweep cycle per barrier, op port back-pressured"
        );
        assert_eq!(
            released,
            Some((6, (6, 0b11, 0, true, false))),
            "barrier 6 in sweep cycle 6"
        );
    }

    #[test]
    fn findings() {
        let mut tb = Tb::new();
        tb.step(&In {
            launch: Some(0xF),
            ..Default::default()
        });
        let f = |o: Out| o.fault.map(|x| x.0);
        assert_eq!(
            f(tb.op(req(NamedBarrierOp::Sync, 0, 0, Some(48)))),
            Some("BarrierCountNotMultipleOfWarp")
        );
        assert_eq!(
            f(tb.op(req(NamedBarrierOp::Sync, 0, 0, Some(0)))),
            Some("BarrierCountTooSmall")
        );
        assert_eq!(
            f(tb.op(req(NamedBarrierOp::Arrive, 0, 0, None))),
            Some("unsupported: barrier.arrive without a thread count")
        );
        assert_eq!(
            f(tb.op(req(NamedBarrierOp::Sync, 0, 0, Some(2048)))),
            Some("BarrierCountAboveCta")
        );
        assert_eq!(f(tb.op(req(NamedBarrierOp::Arrive, 1, 0, Some(96)))), None);
        assert_eq!(
            f(tb.op(req(NamedBarrierOp::Arrive, 1, 0, Some(96)))),
            Some("BarrierWarpArrivedTwice")
        );
        assert_eq!(
            f(tb.op(req(NamedBarrierOp::Sync, 1, 1, Some(64)))),
            Some("BarrierCountMismatch")
        );
        assert_eq!(
            f(tb.op(req(NamedBarrierOp::Sync, 1, 1, None))),
            Some("BarrierCountMismatch")
        );
        assert_eq!(
            f(tb.op(red(NamedBarrierOp::RedPopc, 1, 1, 1, 1))),
            Some("BarrierCountMismatch")
        );
        let r = NamedBarrierReq {
            has_count: true,
            count: 96.into(),
            ..red(NamedBarrierOp::RedPopc, 1, 1, 1, 1)
        };
        assert_eq!(f(tb.op(r)), Some("BarrierRedMixed"));
        // the faulting ops changed nothing: two more sync arrivals complete b = 96
        assert_eq!(f(tb.op(req(NamedBarrierOp::Sync, 1, 1, Some(96)))), None);
        let o = tb.op(req(NamedBarrierOp::Sync, 1, 2, Some(96)));
        assert_eq!(o.release, Some((1, 0b110, 0, true, false)));
    }

    /// Reference model of the unit's semantics (plain Rust, warp granularity), cycle-exact.
    #[derive(Default, Clone, Copy)]
    struct RefBar {
        active: bool,
        red: bool,
        has_count: bool,
        exp_w: u64,
        n: u64,
        amask: u64,
        wmask: u64,
        popc: u64,
        some_false: bool,
        some_true: bool,
    }

    #[derive(Default)]
    struct RefUnit {
        bars: [RefBar; 16],
        live: u64,
        sweep: Option<u64>,
    }

    impl RefUnit {
        fn cycle(&mut self, i: &In) -> Out {
            let ready = self.sweep.is_none() && i.launch.is_none();
            let mut out = Out {
                ready,
                release: None,
                fault: None,
            };
            let rel = |b: u64, x: &RefBar| Some((b, x.wmask, x.popc, !x.some_false, x.some_true));
            if let Some(k) = self.sweep {
                let b = self.bars[k as usize];
                if b.active && !b.has_count && self.live & !b.amask == 0 {
                    out.release = rel(k, &b);
                    self.bars[k as usize] = RefBar::default();
                }
            } else if let (Some(r), true) = (i.req, ready) {
                let id = r.barrier.to_u64();
                let w = r.warp.to_u64();
                let cur = self.bars[id as usize];
                let (has, b) = (r.has_count, r.count.to_u64());
                let is_red = !matches!(r.op, NamedBarrierOp::Sync | NamedBarrierOp::Arrive);
                let finding = if has && b % 32 != 0 {
                    Some("BarrierCountNotMultipleOfWarp")
                } else if has && b > 1024 {
                    Some("BarrierCountAboveCta")
                } else if !has && r.op == NamedBarrierOp::Arrive {
                    Some("unsupported: barrier.arrive without a thread count")
                } else if cur.amask >> w & 1 == 1 {
                    Some("BarrierWarpArrivedTwice")
                } else if cur.active && (cur.has_count != has || (has && cur.exp_w != b / 32)) {
                    Some("BarrierCountMismatch")
                } else if cur.active && cur.red != is_red {
                    Some("BarrierRedMixed")
                } else if has && cur.n + 1 > b / 32 {
                    Some("BarrierCountTooSmall")
                } else {
                    None
                };
                if let Some(k) = finding {
                    out.fault = Some((k, id, w));
                } else {
                    let p = (r.pred & r.lanes).to_u64();
                    let mut u = RefBar {
                        active: true,
                        red: is_red,
                        has_count: has,
                        exp_w: b / 32,
                        n: cur.n + 1,
                        amask: cur.amask | 1 << w,
                        wmask: cur.wmask
                            | if r.op == NamedBarrierOp::Arrive {
                                0
                            } else {
                                1 << w
                            },
                        popc: cur.popc + if is_red { p.count_ones() as u64 } else { 0 },
                        some_false: cur.some_false || (is_red && p != r.lanes.to_u64()),
                        some_true: cur.some_true || (is_red && p != 0),
                    };
                    let done = if has {
                        u.n == u.exp_w
                    } else {
                        self.live & !u.amask == 0
                    };
                    if done {
                        out.release = rel(id, &u);
                        u = RefBar::default();
                    }
                    self.bars[id as usize] = u;
                }
            }
            if let Some(w) = i.exit {
                self.live &= !(1 << w);
            }
            self.sweep = match self.sweep {
                Some(15) | None => None,
                Some(k) => Some(k + 1),
            };
            if i.exit.is_some() {
                self.sweep = Some(0);
            }
            if let Some(m) = i.launch {
                self.live = m;
                self.bars = Default::default();
                self.sweep = None;
            }
            out
        }
    }

    /// 1e6 random warp instructions (and exits / relaunches) checked cycle by cycle against
    /// the reference model above (no golden named-barrier functions exist yet).
    #[test]
    fn randomized_1e6_ops_against_reference() {
        let mut tb = Tb::new();
        let (releases, kinds) = run_random(&mut tb, 1_000_000);
        assert!(releases > 100_000 && kinds.values().sum::<u64>() > 10_000);
        assert_eq!(kinds.len(), 7, "every finding kind exercised");
    }

    /// The generated Verilog, simulated by iverilog, reproduces the Rust simulation's outputs
    /// cycle for cycle on 20000 random instructions.
    #[test]
    fn generated_verilog_matches_the_rust_simulation() {
        let mut tb = Tb::traced();
        run_random(&mut tb, 20_000);
        let mut uut = NamedBarrierUnit::default();
        uut.connect_all();
        tb.trace
            .unwrap()
            .check_with_iverilog("named_barrier", &generate_verilog(&uut));
    }

    /// Drives `ops_wanted` random instructions, checking every cycle; returns the number of
    /// releases and the findings by kind.
    fn run_random(
        tb: &mut Tb,
        ops_wanted: u64,
    ) -> (u64, std::collections::BTreeMap<&'static str, u64>) {
        #[derive(Clone, Copy, PartialEq)]
        enum W {
            Running,
            Blocked,
            Gone,
        }
        let mut rng = XorShift(0x5EED_0000_0000_0001);
        let mut rf = RefUnit::default();
        let mut warps = [W::Gone; 32];
        let mut agreed: [Option<u64>; 16] = [None; 16];
        let mut held: Option<NamedBarrierReq> = None;
        let (mut ops, mut cycles, mut releases, mut faults, mut idle) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut launches = 0u64;
        let mut kinds = std::collections::BTreeMap::<&'static str, u64>::new();
        let t0 = std::time::Instant::now();
        while ops < ops_wanted {
            let mut inp = In::default();
            let running: Vec<u64> = (0..32)
                .filter(|&w| warps[w as usize] == W::Running)
                .collect();
            if running.is_empty() || idle > 64 {
                // everyone exited or blocked for good (a deliberately unbalanced count): relaunch
                let n = if rng.pct(20) { 32 } else { 1 + rng.below(8) };
                let mask = if n == 32 {
                    0xFFFF_FFFF
                } else {
                    rng.next() & 0xFFFF_FFFF | 1
                };
                let mask = if n == 32 {
                    mask
                } else {
                    mask & ((1 << (n * 4)) - 1) | 1
                };
                inp.launch = Some(mask);
                let live = mask.count_ones() as u64;
                for b in agreed.iter_mut() {
                    *b = if rng.pct(50) {
                        None
                    } else {
                        Some(32 * (1 + rng.below(live)))
                    };
                }
                held = None;
                idle = 0;
                launches += 1;
            } else {
                if held.is_none() && rng.pct(85) {
                    let w = running[rng.below(running.len() as u64) as usize];
                    let bar = rng.below(4);
                    // barriers 0 and 1 serve sync/arrive, 2 and 3 bar.red (rarely mixed)
                    let red_bar = (bar >= 2) != rng.pct(1);
                    let op = if red_bar {
                        [
                            NamedBarrierOp::RedPopc,
                            NamedBarrierOp::RedAnd,
                            NamedBarrierOp::RedOr,
                        ][rng.below(3) as usize]
                    } else if rng.pct(25) {
                        NamedBarrierOp::Arrive
                    } else {
                        NamedBarrierOp::Sync
                    };
                    let mut count = agreed[bar as usize];
                    if op == NamedBarrierOp::Arrive && count.is_none() {
                        // arrive needs b: on a barrier used without b this is a mismatch
                        count = Some(32 * (1 + rng.below(2)));
                    }
                    if rng.pct(2) {
                        count =
                            [None, Some(0), Some(48), Some(2048), Some(64)][rng.below(5) as usize];
                    }
                    let lanes = if rng.pct(80) {
                        0xFFFF_FFFF
                    } else {
                        rng.next() & 0xFFFF_FFFF
                    };
                    held = Some(NamedBarrierReq {
                        op,
                        barrier: bar.into(),
                        warp: w.into(),
                        has_count: count.is_some(),
                        count: count.unwrap_or(0).into(),
                        lanes: lanes.into(),
                        pred: (rng.next() & 0xFFFF_FFFF).into(),
                    });
                }
                if rng.pct(1) {
                    let w = running[rng.below(running.len() as u64) as usize];
                    if held.map(|r| r.warp.to_u64()) != Some(w) {
                        inp.exit = Some(w);
                        warps[w as usize] = W::Gone;
                    }
                }
                inp.req = held;
            }
            let want = rf.cycle(&inp);
            let got = tb.step(&inp);
            assert_eq!(got, want, "cycle {cycles}: inputs {:?}", inp.req);
            cycles += 1;
            idle += 1;
            if got.ready && inp.req.is_some() {
                let r = held.take().unwrap();
                ops += 1;
                if got.fault.is_none() && r.op != NamedBarrierOp::Arrive {
                    warps[r.warp.to_u64() as usize] = W::Blocked;
                }
            }
            if let Some((_, mask, ..)) = got.release {
                releases += 1;
                idle = 0;
                for w in 0..32 {
                    if mask >> w & 1 == 1 {
                        assert!(warps[w] == W::Blocked, "released warp {w} was not waiting");
                        warps[w] = W::Running;
                    }
                }
            }
            faults += got.fault.is_some() as u64;
            if let Some((k, ..)) = got.fault {
                *kinds.entry(k).or_default() += 1;
            }
            if let Some(mask) = inp.launch {
                // (after this cycle's outputs: a sweep may still release old waiters in it)
                for w in 0..32 {
                    warps[w] = if mask >> w & 1 == 1 {
                        W::Running
                    } else {
                        W::Gone
                    };
                }
            }
        }
        let dt = t0.elapsed().as_secs_f64();
        eprintln!(
            "{ops} ops in {cycles} cycles, {dt:.2} s: {:.0} cycles/s; {releases} releases, \
             {faults} findings {kinds:?}, {launches} launches",
            cycles as f64 / dt
        );
        let _ = faults;
        (releases, kinds)
    }
}
