//! ClusterBarrierUnit: the cluster barrier (`barrier.cluster.arrive` / `.wait`, PTX 9.7.13.3)
//! over up to 16 CTAs of a cluster, 32 warps each.
//!
//! Per CTA the unit keeps three warp masks: non-exited warps (`live`), warps that arrived in
//! the current phase (`arrived`), and warps whose last arrive has not been consumed by a wait
//! yet (`armed`). The phase completes at the edge after which every non-exited warp of every CTA
//! has arrived (the last arrival, or the exit of the last missing warp, completes the phase at
//! once): the `done` output pulses with the new phase count in the cycle after that edge. The
//! completion is found from registered flags per CTA (`missing_keep` / `missing_clear`: a
//! non-exited warp has not arrived; `some_arrived`), computed with the masks at each edge, so it
//! reduces 16-CTA flags
//! instead of 1024 mask bits (`phase_done`, off the request path), and
//! the reinitialization of `arrived` is applied in that cycle: every op of that cycle sees the
//! cleared masks, and the next edge stores them (so `done` is one edge after the completing op,
//! as if the masks had cleared at once). Completion is broadcast: a warp told
//! `blocked` by its wait resumes at the next `done` pulse, which is necessarily the completion
//! of the phase it arrived in (its arrive bit was still set, so that phase is current).
//!
//! Arrival is warp-granular (PTX 9.7.13.3: "cause the executing thread to wait for all
//! non-exited threads from its warp"): the issuing SM merges a warp's lanes and sends one
//! arrive / wait per warp. `.release` / `.relaxed` / `.acquire` order memory, not the barrier:
//! `ArriveRelaxed` behaves as `Arrive` here (the memory system implements the ordering).
//!
//! Ports (synchronous to `clock`):
//! - `req` / `req_valid` / `req_ready`: one warp's arrive or wait (one per cycle; ready is low
//!   only in a `launch` cycle).
//! - `exit`: a warp of a CTA exited (always accepted).
//! - `launch`: a CTA of the cluster (re)starts with a set of warps; its masks clear.
//! - `resp`: the answer to a wait: `blocked` (resume at the next `done`) or not.
//! - `done`: the phase completed (new phase count, mod 256).
//! - `fault`: simulation-assertion finding (`ClusterBarrierFinding`); a faulting op changes
//!   no state.
//!
//! PTX clauses implemented: 9.7.13.3 (arrive marks arrival without waiting; wait waits for
//! all non-exited threads of the cluster; completion and automatic reinitialization; a thread
//! may arrive again right after the wait that observed completion; each thread arrives only
//! once per phase; wait without a preceding arrive).

use rust_hdl::prelude::*;

/// CTAs per cluster (the sm_90 non-portable maximum).
pub const CLUSTER_CTAS: usize = 16;

/// barrier.cluster instructions.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum ClusterBarrierOp {
    /// barrier.cluster.arrive{.release}
    Arrive,
    /// barrier.cluster.arrive.relaxed
    ArriveRelaxed,
    /// barrier.cluster.wait{.acquire}
    Wait,
}

/// One warp's cluster-barrier instruction.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct ClusterBarrierReq {
    /// the instruction
    pub op: ClusterBarrierOp,
    /// the CTA's rank in the cluster
    pub cta: Bits<4>,
    /// the warp in its CTA
    pub warp: Bits<5>,
}

/// A warp exited.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct ClusterWarpExit {
    /// an exit this cycle
    pub valid: bool,
    /// its CTA's rank
    pub cta: Bits<4>,
    /// the warp
    pub warp: Bits<5>,
}

/// A CTA of the cluster (re)starts.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct ClusterLaunch {
    /// a launch this cycle
    pub valid: bool,
    /// the CTA's rank
    pub cta: Bits<4>,
    /// its warps (bit per warp; 0: the rank is not part of the cluster)
    pub warps: Bits<32>,
}

/// The answer to a wait.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct ClusterBarrierResp {
    /// an answer this cycle
    pub valid: bool,
    /// the CTA's rank
    pub cta: Bits<4>,
    /// the warp
    pub warp: Bits<5>,
    /// the warp's phase is incomplete: it resumes at the next `done` pulse
    pub blocked: bool,
}

/// A phase completion.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct ClusterBarrierDone {
    /// a completion this cycle
    pub valid: bool,
    /// completed phases so far, mod 256
    pub phase: Bits<8>,
}

/// Simulation-assertion findings (names shared with the golden model).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum ClusterBarrierFinding {
    /// no finding
    NoFinding,
    /// a wait without a preceding arrive (since the warp's last wait)
    ClusterBarrierWaitWithoutArrive,
    /// a second arrive in one phase
    ClusterBarrierArriveTwice,
}

impl ClusterBarrierFinding {
    /// The finding's stable name; `None` for `NoFinding`.
    pub fn name(self) -> Option<&'static str> {
        match self {
            ClusterBarrierFinding::NoFinding => None,
            ClusterBarrierFinding::ClusterBarrierWaitWithoutArrive => {
                Some("ClusterBarrierWaitWithoutArrive")
            }
            ClusterBarrierFinding::ClusterBarrierArriveTwice => Some("ClusterBarrierArriveTwice"),
        }
    }
}

/// A finding of the simulation assertions.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct ClusterBarrierFault {
    /// a finding this cycle
    pub valid: bool,
    /// which finding
    pub kind: ClusterBarrierFinding,
    /// the CTA's rank
    pub cta: Bits<4>,
    /// the warp
    pub warp: Bits<5>,
}

/// The cluster-barrier unit.
#[derive(LogicBlock)]
pub struct ClusterBarrierUnit {
    /// the cluster clock
    pub clock: Signal<In, Clock>,
    /// a warp's arrive / wait
    pub req: Signal<In, ClusterBarrierReq>,
    /// `req` is valid
    pub req_valid: Signal<In, bool>,
    /// `req` is accepted this cycle
    pub req_ready: Signal<Out, bool>,
    /// warp exit
    pub exit: Signal<In, ClusterWarpExit>,
    /// CTA launch
    pub launch: Signal<In, ClusterLaunch>,
    /// answer to a wait
    pub resp: Signal<Out, ClusterBarrierResp>,
    /// phase completion
    pub done: Signal<Out, ClusterBarrierDone>,
    /// simulation-assertion finding
    pub fault: Signal<Out, ClusterBarrierFault>,

    /// non-exited warps, per CTA
    live: [DFF<Bits<32>>; CLUSTER_CTAS],
    /// warps arrived in the current phase, per CTA
    arrived: [DFF<Bits<32>>; CLUSTER_CTAS],
    /// warps whose last arrive no wait has consumed yet, per CTA
    armed: [DFF<Bits<32>>; CLUSTER_CTAS],
    /// some non-exited warp of the CTA has not arrived (`live & !arrived != 0`), kept with the
    /// masks so the completion check reduces 16 flags, not 512 bits: its value were the phase
    /// not to complete at the edge that stored it ...
    missing_keep: [DFF<bool>; CLUSTER_CTAS],
    /// ... and were it to complete (`completed` picks one: the 32-bit reductions do not wait
    /// for the completion)
    missing_clear: [DFF<bool>; CLUSTER_CTAS],
    /// the phase completed at the last edge
    completed: DFF<bool>,
    /// some warp of the CTA arrived (`arrived != 0`, kept with the masks)
    some_arrived: [DFF<bool>; CLUSTER_CTAS],
    /// completed phases, mod 256 (the completion found in this cycle not yet counted)
    phase: DFF<Bits<8>>,
    /// response register (`blocked` before the completion check of the next cycle)
    resp_q: DFF<ClusterBarrierResp>,
    /// fault register
    fault_q: DFF<ClusterBarrierFault>,

    /// an op is accepted this cycle
    take: Signal<Local, bool>,
    /// the op is an arrive (either form)
    is_arrive: Signal<Local, bool>,
    /// the warp's bit
    wbit: Signal<Local, Bits<32>>,
    /// the exiting warp's bit
    xbit: Signal<Local, Bits<32>>,
    /// the registered masks complete the phase: every non-exited warp arrived
    phase_done: Signal<Local, bool>,
    /// every non-exited warp arrived (registered masks)
    all_in: Signal<Local, bool>,
    /// some warp arrived (registered masks)
    some_in: Signal<Local, bool>,
    /// the op's CTA's arrived mask (registered, before the reinitialization)
    cur_arrived: Signal<Local, Bits<32>>,
    /// the op's warp arrived in the current phase
    arrived_bit: Signal<Local, bool>,
    /// the op's CTA's armed mask
    cur_armed: Signal<Local, Bits<32>>,
    /// the finding of this op
    finding: Signal<Local, ClusterBarrierFinding>,
    /// a legal wait
    wait_ok: Signal<Local, bool>,
    /// arrived masks after the reinitialization of a completed phase
    arr_eff: [Signal<Local, Bits<32>>; CLUSTER_CTAS],
    /// the op is an arrive of this CTA (legal or not: a second arrive's bit is already set)
    arrive_sel: [Signal<Local, bool>; CLUSTER_CTAS],
    /// the exit is of this CTA
    exit_sel: [Signal<Local, bool>; CLUSTER_CTAS],
    /// the warps this cycle's exit and arrive take off the CTA's missing warps
    gone: [Signal<Local, Bits<32>>; CLUSTER_CTAS],
}

impl Default for ClusterBarrierUnit {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            req: Default::default(),
            req_valid: Default::default(),
            req_ready: Default::default(),
            exit: Default::default(),
            launch: Default::default(),
            resp: Default::default(),
            done: Default::default(),
            fault: Default::default(),
            live: std::array::from_fn(|_| Default::default()),
            arrived: std::array::from_fn(|_| Default::default()),
            armed: std::array::from_fn(|_| Default::default()),
            missing_keep: std::array::from_fn(|_| Default::default()),
            missing_clear: std::array::from_fn(|_| Default::default()),
            completed: Default::default(),
            some_arrived: std::array::from_fn(|_| Default::default()),
            phase: Default::default(),
            resp_q: Default::default(),
            fault_q: Default::default(),
            take: Default::default(),
            is_arrive: Default::default(),
            wbit: Default::default(),
            xbit: Default::default(),
            phase_done: Default::default(),
            all_in: Default::default(),
            some_in: Default::default(),
            cur_arrived: Default::default(),
            arrived_bit: Default::default(),
            cur_armed: Default::default(),
            finding: Default::default(),
            wait_ok: Default::default(),
            arr_eff: std::array::from_fn(|_| Default::default()),
            arrive_sel: std::array::from_fn(|_| Default::default()),
            exit_sel: std::array::from_fn(|_| Default::default()),
            gone: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl Logic for ClusterBarrierUnit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, phase, resp_q, fault_q, completed);

        // ---- completion, from the registered masks: every non-exited warp of every CTA
        // arrived (PTX 9.7.13.3); the phase then reinitializes (arrived clears) in this cycle.
        self.all_in.next = true;
        self.some_in.next = false;
        for i in 0..CLUSTER_CTAS {
            if (self.completed.q.val() && self.missing_clear[i].q.val())
                || (!self.completed.q.val() && self.missing_keep[i].q.val())
            {
                self.all_in.next = false;
            }
            if self.some_arrived[i].q.val() {
                self.some_in.next = true;
            }
        }
        self.phase_done.next = self.all_in.val() && self.some_in.val();
        for i in 0..CLUSTER_CTAS {
            self.arr_eff[i].next = self.arrived[i].q.val();
            if self.phase_done.val() {
                self.arr_eff[i].next = 0.into();
            }
        }
        if self.phase_done.val() {
            self.phase.d.next = self.phase.q.val() + 1;
        }
        self.completed.d.next = self.phase_done.val();
        self.done.next.valid = self.phase_done.val();
        self.done.next.phase = self.phase.q.val() + 1;

        // ---- the op
        self.req_ready.next = !self.launch.val().valid;
        self.take.next = self.req_valid.val() && !self.launch.val().valid;
        self.is_arrive.next = self.req.val().op != ClusterBarrierOp::Wait;
        self.wbit.next = bits::<32>(1) << self.req.val().warp;
        self.xbit.next = bits::<32>(1) << self.exit.val().warp;
        self.cur_arrived.next = 0.into();
        self.cur_armed.next = 0.into();
        for i in 0..CLUSTER_CTAS {
            if self.req.val().cta.index() == i {
                self.cur_arrived.next = self.arrived[i].q.val();
                self.cur_armed.next = self.armed[i].q.val();
            }
        }
        // (the completion enters last: the mask selection does not wait for it)
        self.arrived_bit.next =
            ((self.cur_arrived.val() & self.wbit.val()) != 0) && !self.phase_done.val();

        // ---- PTX 9.7.13.3: one arrive per phase; a wait consumes the warp's last arrive.
        self.finding.next = ClusterBarrierFinding::NoFinding;
        if self.is_arrive.val() && self.arrived_bit.val() {
            self.finding.next = ClusterBarrierFinding::ClusterBarrierArriveTwice;
        }
        if !self.is_arrive.val() && ((self.cur_armed.val() & self.wbit.val()) == 0) {
            self.finding.next = ClusterBarrierFinding::ClusterBarrierWaitWithoutArrive;
        }
        self.wait_ok.next = self.take.val()
            && !self.is_arrive.val()
            && (self.finding.val() == ClusterBarrierFinding::NoFinding);

        // ---- next-state masks, bit-local so the op's finding (a 512-bit selection) is off
        // the state path: an arrive sets its warp's `arrived` bit (a second arrive finds it set
        // already) and sets `armed` only where `arrived` was clear (else the arrive faults); a
        // wait clears its warp's `armed` bit (a wait without arrive finds it clear already).
        for i in 0..CLUSTER_CTAS {
            self.live[i].clock.next = self.clock.val();
            self.arrived[i].clock.next = self.clock.val();
            self.armed[i].clock.next = self.clock.val();
            self.missing_keep[i].clock.next = self.clock.val();
            self.missing_clear[i].clock.next = self.clock.val();
            self.some_arrived[i].clock.next = self.clock.val();
            self.arrive_sel[i].next =
                self.take.val() && self.is_arrive.val() && (self.req.val().cta.index() == i);
            self.exit_sel[i].next = self.exit.val().valid && (self.exit.val().cta.index() == i);
            self.live[i].d.next = self.live[i].q.val();
            if self.exit_sel[i].val() {
                self.live[i].d.next = self.live[i].q.val() & !self.xbit.val();
            }
            self.arrived[i].d.next = self.arr_eff[i].val();
            if self.arrive_sel[i].val() {
                self.arrived[i].d.next = self.arr_eff[i].val() | self.wbit.val();
            }
            self.armed[i].d.next = self.armed[i].q.val();
            if self.take.val() && (self.req.val().cta.index() == i) {
                if self.is_arrive.val() {
                    self.armed[i].d.next =
                        self.armed[i].q.val() | (self.wbit.val() & !self.arr_eff[i].val());
                } else {
                    self.armed[i].d.next = self.armed[i].q.val() & !self.wbit.val();
                }
            }
            // the flags of the next-state masks, both completion cases (from the registered
            // masks and this cycle's inputs: the completion is not on their path)
            self.gone[i].next = 0.into();
            if self.exit_sel[i].val() && self.arrive_sel[i].val() {
                self.gone[i].next = self.xbit.val() | self.wbit.val();
            } else if self.exit_sel[i].val() {
                self.gone[i].next = self.xbit.val();
            } else if self.arrive_sel[i].val() {
                self.gone[i].next = self.wbit.val();
            }
            self.missing_keep[i].d.next =
                (self.live[i].q.val() & !self.arrived[i].q.val() & !self.gone[i].val()) != 0;
            self.missing_clear[i].d.next = (self.live[i].q.val() & !self.gone[i].val()) != 0;
            self.some_arrived[i].d.next = self.some_arrived[i].q.val() || self.arrive_sel[i].val();
            if self.phase_done.val() {
                self.some_arrived[i].d.next = self.arrive_sel[i].val();
            }
            if self.launch.val().valid && (self.launch.val().cta.index() == i) {
                self.live[i].d.next = self.launch.val().warps;
                self.arrived[i].d.next = 0.into();
                self.armed[i].d.next = 0.into();
                self.missing_keep[i].d.next = self.launch.val().warps != 0;
                self.missing_clear[i].d.next = self.launch.val().warps != 0;
                self.some_arrived[i].d.next = false;
            }
        }
        self.resp_q.d.next.valid = self.take.val() && !self.is_arrive.val();
        self.resp_q.d.next.cta = self.req.val().cta;
        self.resp_q.d.next.warp = self.req.val().warp;
        // its arrive is in the current phase; blocked unless that phase completes at this edge
        // (found from the registered masks in the next cycle, below)
        self.resp_q.d.next.blocked = self.wait_ok.val() && self.arrived_bit.val();
        self.fault_q.d.next.valid =
            self.take.val() && (self.finding.val() != ClusterBarrierFinding::NoFinding);
        self.fault_q.d.next.kind = self.finding.val();
        self.fault_q.d.next.cta = self.req.val().cta;
        self.fault_q.d.next.warp = self.req.val().warp;
        self.resp.next = self.resp_q.q.val();
        self.resp.next.blocked = self.resp_q.q.val().blocked && !self.phase_done.val();
        self.fault.next = self.fault_q.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{require_yosys, yosys_check_flat, Trace, XorShift};

    /// Inputs of one cycle: (op, cta, warp), exit (cta, warp), launch (cta, warps).
    #[derive(Default, Clone, Copy, Debug)]
    struct In {
        req: Option<(ClusterBarrierOp, u64, u64)>,
        exit: Option<(u64, u64)>,
        launch: Option<(u64, u64)>,
    }

    /// Outputs of one cycle: ready before the edge, registered outputs after it.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Out {
        ready: bool,
        resp: Option<(u64, u64, bool)>,
        done: Option<u64>,
        fault: Option<(&'static str, u64, u64)>,
    }

    struct Tb {
        uut: Box<ClusterBarrierUnit>,
        /// when set, every cycle is recorded for the iverilog replay
        trace: Option<Trace>,
    }

    impl Tb {
        fn new() -> Tb {
            let mut uut = Box::new(ClusterBarrierUnit::default());
            uut.connect_all();
            assert!(simulate(&mut *uut, 200));
            Tb { uut, trace: None }
        }

        fn traced() -> Tb {
            let mut tb = Tb::new();
            tb.trace = Some(Trace {
                inputs: vec![
                    ("req", ClusterBarrierReq::BITS),
                    ("req_valid", 1),
                    ("exit", ClusterWarpExit::BITS),
                    ("launch", ClusterLaunch::BITS),
                ],
                pre: vec![("req_ready", 1)],
                post: vec![
                    ("resp", ClusterBarrierResp::BITS),
                    ("done", ClusterBarrierDone::BITS),
                    ("fault", ClusterBarrierFault::BITS),
                ],
                rows: vec![],
                warmup: 0,
            });
            tb
        }

        /// One clock cycle (see the mbarrier unit's testbench).
        fn step(&mut self, i: &In) -> Out {
            let u = &mut *self.uut;
            let (op, cta, warp) = i.req.unwrap_or((ClusterBarrierOp::Arrive, 0, 0));
            u.req_valid.next = i.req.is_some();
            u.req.next = ClusterBarrierReq {
                op,
                cta: cta.into(),
                warp: warp.into(),
            };
            let (xc, xw) = i.exit.unwrap_or((0, 0));
            u.exit.next = ClusterWarpExit {
                valid: i.exit.is_some(),
                cta: xc.into(),
                warp: xw.into(),
            };
            let (lc, lw) = i.launch.unwrap_or((0, 0));
            u.launch.next = ClusterLaunch {
                valid: i.launch.is_some(),
                cta: lc.into(),
                warps: lw.into(),
            };
            u.clock.next = false.into();
            assert!(simulate(u, 200), "combinational logic did not settle");
            let ready = u.req_ready.val();
            u.clock.next = true.into();
            assert!(simulate(u, 200), "combinational logic did not settle");
            let (r, d, f) = (u.resp.val(), u.done.val(), u.fault.val());
            if let Some(t) = &mut self.trace {
                t.rows.push((
                    vec![
                        Trace::hex(u.req.val()),
                        Trace::hex(u.req_valid.val()),
                        Trace::hex(u.exit.val()),
                        Trace::hex(u.launch.val()),
                    ],
                    [
                        Trace::hex(ready),
                        Trace::hex(r),
                        Trace::hex(d),
                        Trace::hex(f),
                    ]
                    .join(" "),
                ));
            }
            Out {
                ready,
                resp: r
                    .valid
                    .then(|| (r.cta.to_u64(), r.warp.to_u64(), r.blocked)),
                done: d.valid.then(|| d.phase.to_u64()),
                fault: f
                    .valid
                    .then(|| (f.kind.name().unwrap(), f.cta.to_u64(), f.warp.to_u64())),
            }
        }

        fn op(&mut self, op: ClusterBarrierOp, cta: u64, warp: u64) -> Out {
            let o = self.step(&In {
                req: Some((op, cta, warp)),
                ..Default::default()
            });
            assert!(o.ready);
            o
        }

        fn launch(&mut self, cta: u64, warps: u64) {
            self.step(&In {
                launch: Some((cta, warps)),
                ..Default::default()
            });
        }
    }

    use ClusterBarrierOp::{Arrive, ArriveRelaxed, Wait};

    #[test]
    fn cluster_barrier_check_all_and_yosys_validate() {
        require_yosys();
        let mut uut = ClusterBarrierUnit::default();
        uut.connect_all();
        check_all(&uut).unwrap();
        let vlog = generate_verilog(&uut);
        yosys_validate("hopsync_cluster_barrier_unit", &vlog).unwrap();
        yosys_check_flat("cluster_barrier_unit", &vlog);
    }

    #[test]
    fn phase_completes_when_every_warp_of_every_cta_arrived() {
        let mut tb = Tb::new();
        tb.launch(0, 0b11);
        tb.launch(3, 0b1);
        assert_eq!(tb.op(Arrive, 0, 0).done, None);
        assert_eq!(
            tb.op(Wait, 0, 0).resp,
            Some((0, 0, true)),
            "phase incomplete: blocked"
        );
        assert_eq!(tb.op(ArriveRelaxed, 3, 0).done, None);
        let o = tb.op(Arrive, 0, 1);
        assert_eq!(o.done, Some(1), "the last arrival completes the phase");
        // the phase of 0.1 and 3.0 completed: their waits do not block
        assert_eq!(tb.op(Wait, 3, 0).resp, Some((3, 0, false)));
        assert_eq!(tb.op(Wait, 0, 1).resp, Some((0, 1, false)));
        // immediately arrive again (PTX 9.7.13.3)
        assert_eq!(tb.op(Arrive, 0, 1).fault, None);
    }

    #[test]
    fn exited_warps_do_not_hold_the_phase() {
        let mut tb = Tb::new();
        tb.launch(1, 0b111);
        tb.op(Arrive, 1, 0);
        tb.op(Arrive, 1, 1);
        assert_eq!(tb.op(Wait, 1, 0).resp, Some((1, 0, true)));
        let o = tb.step(&In {
            exit: Some((1, 2)),
            ..Default::default()
        });
        assert_eq!(o.done, Some(1), "the last missing warp exited");
        // a wait racing with the completing exit does not block
        let o = tb.step(&In {
            req: Some((Arrive, 1, 0)),
            ..Default::default()
        });
        assert_eq!(o.done, None);
        let o = tb.step(&In {
            req: Some((Wait, 1, 1)),
            exit: Some((1, 0)),
            ..Default::default()
        });
        assert_eq!(o.resp, Some((1, 1, false)));
        assert_eq!(o.done, None, "1.1 has not arrived in phase 1");
    }

    #[test]
    fn findings() {
        let mut tb = Tb::new();
        tb.launch(0, 0b11);
        assert_eq!(
            tb.op(Wait, 0, 0).fault,
            Some(("ClusterBarrierWaitWithoutArrive", 0, 0))
        );
        tb.op(Arrive, 0, 0);
        assert_eq!(
            tb.op(ArriveRelaxed, 0, 0).fault,
            Some(("ClusterBarrierArriveTwice", 0, 0))
        );
        tb.op(Wait, 0, 0);
        assert_eq!(
            tb.op(Wait, 0, 0).fault,
            Some(("ClusterBarrierWaitWithoutArrive", 0, 0))
        );
        assert_eq!(
            tb.op(Arrive, 0, 1).done,
            Some(1),
            "faulting ops changed nothing"
        );
    }

    /// Reference model (plain Rust, per warp), cycle-exact.
    struct Ref {
        live: [[bool; 32]; 16],
        arrived: [[bool; 32]; 16],
        armed: [[bool; 32]; 16],
        phase: u64,
    }

    impl Ref {
        fn cycle(&mut self, i: &In) -> Out {
            let ready = i.launch.is_none();
            let mut out = Out {
                ready,
                resp: None,
                done: None,
                fault: None,
            };
            let mut wait_ok = None;
            if let (Some((op, c, w)), true) = (i.req, ready) {
                let (c, w) = (c as usize, w as usize);
                if op != Wait {
                    if self.arrived[c][w] {
                        out.fault = Some(("ClusterBarrierArriveTwice", c as u64, w as u64));
                    } else {
                        self.arrived[c][w] = true;
                        self.armed[c][w] = true;
                    }
                } else if !self.armed[c][w] {
                    out.fault = Some(("ClusterBarrierWaitWithoutArrive", c as u64, w as u64));
                    out.resp = Some((c as u64, w as u64, false));
                } else {
                    self.armed[c][w] = false;
                    wait_ok = Some((c, w, self.arrived[c][w]));
                }
            }
            if let Some((c, w)) = i.exit {
                self.live[c as usize][w as usize] = false;
            }
            if let Some((c, m)) = i.launch {
                for w in 0..32 {
                    self.live[c as usize][w] = m >> w & 1 == 1;
                    self.arrived[c as usize][w] = false;
                    self.armed[c as usize][w] = false;
                }
            }
            let all = (0..16).all(|c| (0..32).all(|w| !self.live[c][w] || self.arrived[c][w]));
            let some = (0..16).any(|c| (0..32).any(|w| self.arrived[c][w]));
            let complete = all && some;
            if complete {
                self.arrived = [[false; 32]; 16];
                self.phase += 1;
                out.done = Some(self.phase % 256);
            }
            if let Some((c, w, in_phase)) = wait_ok {
                out.resp = Some((c as u64, w as u64, in_phase && !complete));
            }
            out
        }
    }

    /// 1e6 random arrives / waits (plus exits and relaunches) from up to 16 CTAs x 32 warps,
    /// checked cycle by cycle against the reference model above (no golden cluster-barrier
    /// functions exist yet).
    #[test]
    fn randomized_1e6_ops_against_reference() {
        let mut tb = Tb::new();
        let (dones, blocked, faults) = run_random(&mut tb, 1_000_000);
        assert!(dones > 10_000 && blocked > 100_000 && faults > 5_000);
    }

    /// The generated Verilog, simulated by iverilog, reproduces the Rust simulation's outputs
    /// cycle for cycle on 20000 random instructions.
    #[test]
    fn generated_verilog_matches_the_rust_simulation() {
        let mut tb = Tb::traced();
        run_random(&mut tb, 20_000);
        let mut uut = ClusterBarrierUnit::default();
        uut.connect_all();
        tb.trace
            .unwrap()
            .check_with_iverilog("cluster_barrier", &generate_verilog(&uut));
    }

    /// Drives `ops_wanted` random instructions, checking every cycle; returns the number of
    /// completed phases, blocked waits and findings.
    fn run_random(tb: &mut Tb, ops_wanted: u64) -> (u64, u64, u64) {
        #[derive(Clone, Copy, PartialEq)]
        enum W {
            Gone,
            /// runs; `armed`: its next well-formed op is a wait
            Running {
                armed: bool,
            },
            /// blocked in a wait until the next completion
            Blocked,
        }
        let mut rng = XorShift(0x5EED_0000_0000_0002);
        let mut rf = Ref {
            live: [[false; 32]; 16],
            arrived: [[false; 32]; 16],
            armed: [[false; 32]; 16],
            phase: 0,
        };
        let mut warps = [[W::Gone; 32]; 16];
        let mut to_launch: Vec<(u64, u64)> = vec![];
        let (mut ops, mut cycles, mut dones, mut blocked, mut faults) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut held: Option<(ClusterBarrierOp, u64, u64)> = None;
        let t0 = std::time::Instant::now();
        while ops < ops_wanted {
            let mut inp = In::default();
            let running: Vec<(usize, usize)> = (0..16)
                .flat_map(|c| (0..32).map(move |w| (c, w)))
                .filter(|&(c, w)| matches!(warps[c][w], W::Running { .. }))
                .collect();
            if to_launch.is_empty() && running.is_empty() && held.is_none() {
                // a new cluster: 1..16 CTAs, sparse or full warp sets; unused ranks cleared
                let n = 1 + rng.below(16);
                for c in 0..16 {
                    let m = if c >= n {
                        0
                    } else if rng.pct(30) {
                        0xFFFF_FFFF
                    } else {
                        (rng.next() & rng.next() & 0xFFFF_FFFF) | 1
                    };
                    to_launch.push((c, m));
                }
            }
            if let Some((c, m)) = to_launch.pop() {
                inp.launch = Some((c, m));
            } else {
                if held.is_none() && !running.is_empty() && rng.pct(90) {
                    let (c, w) = running[rng.below(running.len() as u64) as usize];
                    let W::Running { armed } = warps[c][w] else {
                        unreachable!()
                    };
                    // well-formed: arrive, then wait; 2% the other one (findings)
                    let op = if armed != rng.pct(2) {
                        Wait
                    } else if rng.pct(50) {
                        Arrive
                    } else {
                        ArriveRelaxed
                    };
                    held = Some((op, c as u64, w as u64));
                }
                if !running.is_empty() && rng.pct(1) {
                    let (c, w) = running[rng.below(running.len() as u64) as usize];
                    if held.map(|h| (h.1, h.2)) != Some((c as u64, w as u64)) {
                        inp.exit = Some((c as u64, w as u64));
                        warps[c][w] = W::Gone;
                    }
                }
                inp.req = held;
            }
            let want = rf.cycle(&inp);
            let got = tb.step(&inp);
            assert_eq!(got, want, "cycle {cycles}: {inp:?}");
            cycles += 1;
            if let Some((c, m)) = inp.launch {
                for w in 0..32 {
                    warps[c as usize][w] = if m >> w & 1 == 1 {
                        W::Running { armed: false }
                    } else {
                        W::Gone
                    };
                }
            }
            if got.done.is_some() {
                dones += 1;
                for c in 0..16 {
                    for w in 0..32 {
                        if warps[c][w] == W::Blocked {
                            warps[c][w] = W::Running { armed: false };
                        }
                    }
                }
            }
            if let (Some((op, c, w)), true) = (inp.req, got.ready) {
                held = None;
                ops += 1;
                let (c, w) = (c as usize, w as usize);
                if got.fault.is_some() {
                    faults += 1;
                } else if op != Wait {
                    warps[c][w] = W::Running { armed: true };
                } else if got.resp.unwrap().2 {
                    warps[c][w] = W::Blocked;
                    blocked += 1;
                } else {
                    warps[c][w] = W::Running { armed: false };
                }
            }
        }
        let dt = t0.elapsed().as_secs_f64();
        eprintln!(
            "{ops} ops in {cycles} cycles, {dt:.2} s: {:.0} cycles/s; {dones} phases, \
             {blocked} blocked waits, {faults} findings",
            cycles as f64 / dt
        );
        (dones, blocked, faults)
    }
}
