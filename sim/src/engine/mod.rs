//! The cycle-accurate SM engine.
//!
//! Warps execute the firmware IR through the golden model's front end and instruction bodies:
//! the engine owns a [`Machine`] for architectural state (registers, lane states, memories) and,
//! for every instruction that does not synchronize, calls the golden body
//! ([`hopsync_cosim::exec::dispatch`]) at issue. Synchronization goes to the RTL units instead:
//! mbarrier.* and cp.async.mbarrier.arrive to the CTA's `MbarrierUnit`, bar/barrier to its
//! `NamedBarrierUnit`, barrier.cluster.* to the cluster's `ClusterBarrierUnit`, and the mbarrier
//! side of cp.async / st.async / red.async completions to the `MbarrierUnit` of the CTA that holds
//! the object (async-copy and cluster ports). The engine evaluates operands and the checks the
//! units cannot make (addresses, alignment, `.aligned` divergence, the side checks of
//! [`MbarShadow`]) with the golden helpers, sends requests, and applies the units' responses,
//! wakes, completions and findings.
//!
//! TMA (PTX 9.7.9.25): the golden body runs at issue (every check and finding is the golden
//! model's), and its operation goes to the CTA's RTL `TmaEngine` when the unit implements the
//! form (bulk and tiled tensor loads from global memory into shared::cluster, multicast
//! included; bulk and tiled tensor stores and reductions from shared::cta to global memory, with
//! the issuing thread, and every `cp.async.bulk.commit_group` of the CTA's threads; a
//! reduction's writes carry its `.redOp.type`, which global memory applies here with the golden
//! model's element function, as the L2 does on silicon): the engine feeds it the
//! command and the tensor-map image, answers its 32-byte global reads after `[global] latency`
//! from global memory, applies its 16-byte shared-memory beats to each destination CTA and
//! queues its complete-tx to the destination's MbarrierUnit (async-copy port locally, cluster
//! port remotely). For stores it serves the unit's 16-byte shared-memory reads (data the cycle
//! after, on the CTA's shared-memory pipe), applies its sector writes (byte mask) to global
//! memory with their acknowledgement after `[global] latency`, and follows each store by the
//! unit's `store_read_done` (the golden read event: snapshot, `wait_group.read`) and
//! `store_writes_issued` pulses plus the acknowledgements (the write event, bookkeeping only:
//! the bytes are the unit's). `wait_group` still releases warps through the golden bookkeeping
//! those events drive; each store event carries the unit's own answer to `wait_group{.read}
//! 0..=3` for the issuing thread (`TmaEffect::bulk`), which the lockstep compares with the golden
//! model's. Loads in im2col mode, prefetches and shared::cta -> shared::cluster copies and
//! reductions run on the unit too; im2col-mode stores (`.im2col_no_offs`) are timed by the
//! `[tma]` model and applied with the golden model's code at their completion
//! events; their complete-tx still goes through the MbarrierUnits.
//!
//! Timing (all constants in [`SmConfig`]): per SM (one CTA per SM) `issue.schedulers` warp
//! schedulers, warp w on scheduler w mod n, each issuing at most one instruction per cycle from
//! its eligible warps in loose round-robin order; a per-warp register scoreboard (result
//! latencies by instruction class); a shared-memory pipe of 32 four-byte banks (an n-way bank
//! conflict occupies it n cycles); a global-memory pipe (bytes per cycle, latency); a DSMEM network
//! port per SM (bytes per cycle, latency); and the RTL units clocked every cycle they have work
//! (a unit with no request, no operation in its pipeline and no suspended warp keeps its state
//! when not clocked, so skipping its edges changes nothing). Cycles in which no unit has work and
//! no warp can issue are skipped in one step.
//!
//! Retire order: a non-synchronizing instruction executes (and retires) at issue; its results
//! become readable after its latency. A synchronizing instruction retires when the last unit
//! response (or wake, or remote completion) of its requests has been applied. Every change of
//! architectural state happens at a retire or at an asynchronous completion, and the optional
//! [`Event`] stream lists them in that order: that is what the lockstep harness replays.
//!
//! Layout: one module per port, each owning its queue, its unit and its work in flight; this
//! file holds the cycle (`step`: units, asynchronous completions, issue), the end and deadlock
//! tests and the idle skip.
//! - `scheduler`: warp schedulers, scoreboard, dispatch by timing class, golden bodies at issue;
//! - `mbarrier`: the MbarrierUnit port and the in-flight mbarrier instructions;
//! - `named`: the NamedBarrierUnit port (bar / barrier);
//! - `cluster`: the ClusterBarrierUnit port (barrier.cluster);
//! - `tma`: the TmaEngine port and the `[tma]` model;
//! - `memory`: the shared-memory, global-memory and DSMEM pipes;
//! - `asyncs`: cp.async, st.async / red.async and the deferred arrive-ons;
//! - `observe`: the per-cycle probe view.
//!
//! The synchronization semantics are the golden model's, shared through its plan / apply halves
//! (`exec::mbar_plan`, `exec::named_plan`, `exec::cluster_arrive_plan`, ...): the engine owns
//! only timing and the unit traffic.

mod scheduler;
mod mbarrier;
mod named;
mod cluster;
mod tma;
mod memory;
mod asyncs;
mod observe;
mod decoded;

use asyncs::{AsyncKind, AsyncItem};
use decoded::{Decoded, DecodedInstr};
use cluster::{ClusterState};
use mbarrier::{MbarPort, Part, Tag};
use memory::{MemPipes, Pipe};
use named::{NamedTag, NamedPort, PendingRed, arrival_req};
use scheduler::{WarpState, OpKind, SyncOp};
use tma::{at_cta, TmaJob, TmaPort, TmaStore};
use crate::config::{IssuePolicy, SmConfig};
use crate::probe::{CtaUnits, Probe, Snapshot, Stall, WarpActivity, WarpView};
use crate::timing::{self, Class, InstrInfo, Lookahead, Ordering, IssuePipe, Unroll};
use crate::units::{tma_engine_params, ClusterInputs, ClusterUnit, MbarInputs, MbarUnit, NamedInputs, NamedUnit, TmaInputs, TmaSim, TmaUnit};
use hopsync_cosim::exec::{self, Cx, Flow, MbarFamily, MbarOutcome, MbarStep, MbarStepOp, NamedArrival, Obj, Stop};
use hopsync_cosim::exec::TmaOp;
use hopsync_cosim::finding::FindingKind;
use hopsync_cosim::lockstep::TmaEffect;
use hopsync_cosim::machine::{AsyncOp, Config, Lane, Machine, Outcome, Place, Poll, Wait, WARP};
use hopsync_cosim::report::RunReport;
use hopsync_cosim::retire::{RegWrite, Retire, SyncEvent};
use hopsync_firmware::ir::{Instr, Mod};
use hopsync_firmware::tensormap::TensorMap;
use hopsync_firmware::{Opcode, Program};
use hopsync_hdl::cluster_barrier_unit::{ClusterBarrierOp, ClusterBarrierReq};
use hopsync_hdl::mbarrier_unit::{MbarrierOp, MbarrierReq, MbarrierResp, MbarrierWord};
use hopsync_hdl::named_barrier_unit::{NamedBarrierOp, NamedBarrierReq};
use hopsync_hdl::tma_engine::{TmaCmd, TmaCmdKind, TmaDescImage, TmaFaultKind, TmaGmemReq, TmaGmemResp, TmaRedOp, TmaRedType, TmaSmemWrite};
use std::collections::{HashMap, VecDeque};

/// One change of architectural state, in the order the engine made it (the lockstep stream).
#[derive(Debug, Clone)]
pub enum Event {
    /// An instruction retired.
    Retire {
        /// Cycle.
        cycle: u64,
        /// What it did.
        rec: Retire,
    },
    /// Asynchronous operation `seq` (its data and its mbarrier side) completed.
    Complete {
        /// Cycle.
        cycle: u64,
        /// Issue number (the golden machine's `Pending::seq`).
        seq: u64,
    },
    /// (Part of) TMA operation `seq` completed: its data reached destination CTA `cta` and the
    /// complete-tx was applied by that CTA's MbarrierUnit (copies into shared memory), or a
    /// store's source reads / global writes are done (`cta` None).
    TmaComplete {
        /// Cycle.
        cycle: u64,
        /// Issue number.
        seq: u64,
        /// Destination CTA of a copy into shared memory.
        cta: Option<u32>,
        /// What the engine did (filled only while events are recorded).
        effect: TmaEffect,
    },
    /// The engine stopped with finding `kind` while completing (part of) TMA operation `seq`.
    AsyncFault {
        /// Cycle.
        cycle: u64,
        /// Issue number.
        seq: u64,
        /// Destination CTA.
        cta: Option<u32>,
        /// The finding.
        kind: FindingKind,
    },
    /// A barrier released outside any instruction (after an exit).
    Release {
        /// Cycle.
        cycle: u64,
        /// The release.
        ev: SyncEvent,
        /// The bar.red results it delivered: (cta, warp, register write).
        regs: Vec<(u32, u32, RegWrite)>,
    },
    /// A unit applied step `part` of the mbarrier instruction of (cta, warp) at `pc` before the
    /// instruction retires (its other steps are still in other units' queues): the golden model
    /// applies that step now. Adds no timing of its own (lockstep only).
    MbarPart {
        /// Cycle.
        cycle: u64,
        /// CTA of the issuing warp.
        cta: u32,
        /// The issuing warp.
        warp: u32,
        /// The instruction.
        pc: u32,
        /// Its family.
        family: MbarFamily,
        /// The step (`exec::MbarStep`, in plan order).
        part: u32,
        /// Only the expect-tx half of the step (a merged multi-lane `.expect_tx` arrive is two
        /// unit operations, expect-tx then arrive; the arrive half comes with a later event or
        /// the retire).
        half: bool,
        /// The word change it made (None: none).
        change: Option<SyncEvent>,
    },
}

/// A request waiting for its unit: presented from cycle `at`, with whose it is.
#[derive(Debug, Clone, Copy)]
struct Queued<T, G = Tag> {
    /// The first cycle the request may be presented.
    at: u64,
    /// The request.
    req: T,
    /// Whose it is.
    tag: G,
}

/// A warp of a CTA (linear CTA id, warp index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WarpRef {
    cta: u32,
    warp: u32,
}

/// One CTA's SM-side state: its warps and one port per unit or pipe, each owning its queue,
/// its unit and its work in flight.
struct CtaState {
    /// The MbarrierUnit and its three request ports.
    mbar: MbarPort,
    /// The NamedBarrierUnit and its request queues.
    named: NamedPort,
    /// The TmaEngine, its command queue and its work in flight.
    tma: TmaPort,
    /// The shared-memory, global-memory and DSMEM pipes.
    mem: MemPipes,
    /// The warps.
    warps: Vec<WarpState>,
    /// Per warp: what the schedulers' loop reads first (kept by [`CtaState::warp_mut`]).
    gates: Vec<scheduler::Gate>,
    /// Per warp scheduler: the member that issued last (GTO: tried first; LRR: the one after it).
    rr: Vec<usize>,
    /// Per warp scheduler: its FMA pipe (fp32 fma, IMAD) takes the next instruction from this
    /// cycle (`timing::IssuePipe`).
    fma_free: Vec<u64>,
    /// The SM's release drains in flight and pending (`sync.release_gather_cycles`).
    releases: scheduler::ReleaseRounds,
    /// Per warp scheduler: its integer ALU pipe takes the next instruction from this cycle
    /// (`issue.alu_issue_cycles`).
    alu_free: Vec<u64>,
    /// The path of plain global stores: per scheduler register-file reads, the SM's queue.
    stores: memory::StorePath,
}

/// The cycle-accurate engine.
pub struct Engine<'p> {
    /// Architectural state (shared with the golden model's bodies).
    pub m: Machine<'p>,
    /// Timing configuration.
    pub cfg: SmConfig,
    /// Cycle.
    pub cycle: u64,
    /// Cycles skipped because nothing could happen in them.
    pub skipped: u64,
    /// Unit clock edges simulated (every unit, every cycle it was clocked).
    pub unit_edges: u64,
    /// Set when the program needs a unit the configured backend has no model of (the run stops
    /// with it instead of falling back to rust-hdl for that unit).
    backend_unsupported: Option<String>,
    /// TMA commands the RTL TmaEngines accepted (the other TMA operations ran on the model).
    pub tma_unit_commands: u64,
    /// TMA operations timed by the `[tma]` model (`schedule_tma`: the forms the RTL TmaEngine
    /// does not implement; a store counts its read and its write event).
    pub tma_model_ops: u64,
    info: Vec<InstrInfo>,
    /// What the schedulers read of `info` every cycle, flat (decoded.rs).
    decoded: Decoded,
    ctas: Vec<CtaState>,
    clusters: Vec<ClusterState>,
    /// In flight, in issue order (completions look them up by sequence number and remove them
    /// from the middle: boxed, so a removal moves pointers, not the operations' data).
    asyncs: Vec<Box<AsyncItem>>,
    /// Per thread (cta, warp, lane): its cp.async copies in flight, by issue number.
    cp_inflight: HashMap<(u32, u32, u32), Vec<u64>>,
    events: Option<Vec<Event>>,
    probe: Option<Box<dyn Probe + 'p>>,
    views: Vec<WarpView>,
    launched_at: u64,
    active_this_cycle: bool,
    /// The tensor cores and wgmma groups (wgmma.rs).
    wgmma: crate::wgmma::WgmmaTiming,
    /// Which lines of host-copied buffers are still far in L2 (memory.rs).
    l2: memory::L2Lines,
}

fn finding_kind(name: Option<&str>) -> Result<FindingKind, Stop> {
    let n = name.unwrap_or("?");
    FindingKind::from_name(n).ok_or_else(|| Stop::Unsupported(n.to_string()))
}

fn bits_of(mask: u32) -> impl Iterator<Item = u32> {
    exec::lanes(mask)
}

/// The set bits of `mask`, lowest first.
fn bits_of64(mut mask: u64) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        let b = mask.trailing_zeros();
        mask &= mask.wrapping_sub(1);
        (b < 64).then_some(b)
    })
}

impl<'p> Engine<'p> {
    /// Builds the launch: the golden machine's state plus, per CTA, an MbarrierUnit and a
    /// NamedBarrierUnit, and per cluster a ClusterBarrierUnit.
    pub fn new(prog: &'p Program, mcfg: Config, mut cfg: SmConfig) -> Engine<'p> {
        // The machine's step limit (`--max-steps`) bounds this engine's cycles, so a run is cut
        // short at the same count whichever limit the caller set.
        cfg.run.max_cycles = cfg.run.max_cycles.min(mcfg.max_steps);
        let mut m = Machine::new(prog, Config { seed: None, race: hopsync_cosim::race::RaceMode::Off, ..mcfg });
        let info = timing::analyze(&prog.module, &cfg);
        m.set_branches_waiting_for_barrier(info.iter().map(|f| f.divergent).collect());
        let nregs = prog.module.kernel.regs.len();
        let suspend = cfg.ns_to_cycles(cfg.sync.default_suspend_ns).min(u32::MAX as u64) as u32;
        let ctas: Vec<CtaState> = (0..m.cta_count() as u32)
            .map(|c| CtaState {
                mbar: MbarPort::new(MbarUnit::with_backend(&cfg.backend, m.smem_size(), suspend)),
                named: NamedPort::new(NamedUnit::with_backend(&cfg.backend), m.warp_count(c)),
                tma: TmaPort::new(None),
                mem: MemPipes::new(cfg.issue.schedulers as usize),
                warps: (0..m.warp_count(c)).map(|_| WarpState::new(nregs)).collect(),
                gates: vec![scheduler::Gate::CLOSED; m.warp_count(c)],
                rr: vec![0; cfg.issue.schedulers as usize],
                fma_free: vec![0; cfg.issue.schedulers as usize],
                releases: Default::default(),
                alu_free: vec![0; cfg.issue.schedulers as usize],
                stores: memory::StorePath::new(cfg.issue.schedulers as usize),
            })
            .collect();
        let mut ctas = ctas;
        let uses_tma_unit = info.iter().any(|i| i.class == Class::Tma);
        let backend_unsupported = if uses_tma_unit { cfg.backend.unsupported("tma_engine") } else { None };
        if uses_tma_unit && backend_unsupported.is_none() {
            let (tags, per, req) = tma_engine_params(&cfg);
            for c in &mut ctas {
                c.tma.unit = Some(TmaUnit::with_backend(&cfg.backend, tags, per, req));
            }
        }
        let mut clusters: Vec<ClusterState> = Vec::new();
        let mut launch_cycles = 1;
        for k in 0..m.cluster_count() as u32 {
            let mut launch_q = VecDeque::new();
            for (rank, &c) in m.cluster_ctas(k).iter().enumerate() {
                let n = m.warp_count(c);
                launch_q.push_back((rank as u32, ((1u64 << n) - 1) as u32));
            }
            launch_cycles = launch_cycles.max(launch_q.len() as u64);
            clusters.push(ClusterState::new(ClusterUnit::with_backend(&cfg.backend), launch_q));
        }
        let l2 = memory::L2Lines::new(&m.global_regions());
        let mut e = Engine {
            l2,
            m,
            wgmma: crate::wgmma::WgmmaTiming::new(&cfg),
            cfg,
            cycle: 0,
            skipped: 0,
            unit_edges: 0,
            backend_unsupported,
            tma_unit_commands: 0,
            tma_model_ops: 0,
            decoded: Decoded::new(&prog.module, &info),
            info,
            ctas,
            clusters,
            asyncs: Vec::new(),
            cp_inflight: HashMap::new(),
            events: None,
            probe: None,
            views: Vec::new(),
            launched_at: launch_cycles + 1,
            active_this_cycle: false,
        };
        for c in &mut e.ctas {
            for w in 0..c.warps.len() {
                c.warp_mut(w).wait_until(e.launched_at, Stall::NotLaunched);
            }
        }
        e
    }

    /// Records the [`Event`] stream (for the lockstep harness).
    pub fn record_events(&mut self) {
        self.events = Some(Vec::new());
    }

    /// Takes the events recorded so far.
    pub fn take_events(&mut self) -> Vec<Event> {
        self.events.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Attaches a per-cycle probe.
    pub fn set_probe(&mut self, p: Box<dyn Probe + 'p>) {
        self.probe = Some(p);
    }

    /// Detaches the probe.
    pub fn take_probe(&mut self) -> Option<Box<dyn Probe + 'p>> {
        self.probe.take()
    }

    fn recording(&self) -> bool {
        self.events.is_some()
    }

    fn emit(&mut self, e: Event) {
        if let Some(v) = self.events.as_mut() {
            v.push(e);
        }
    }

    /// Runs to completion or the first stopping finding.
    pub fn run(&mut self) -> Outcome {
        loop {
            match self.step() {
                Ok(true) => {}
                Ok(false) => return Outcome::Completed,
                Err(Stop::Finding) => return Outcome::Fault,
                Err(Stop::Unsupported(s)) => return Outcome::Unsupported(s),
            }
        }
    }

    /// The run report (the golden report's fields, `steps` = `cycles` = cycles).
    pub fn report(&self, outcome: &Outcome) -> RunReport {
        let mut r = RunReport::from_machine(&self.m, self.cfg.backend.name(), outcome);
        r.steps = self.cycle;
        r.cycles = Some(self.cycle);
        r
    }

    /// Simulates one cycle (or skips to the next cycle in which something can happen). Returns
    /// Ok(false) when every thread exited and nothing is in flight.
    pub fn step(&mut self) -> Result<bool, Stop> {
        if let Some(s) = &self.backend_unsupported {
            return Err(Stop::Unsupported(s.clone()));
        }
        self.cycle += 1;
        self.m.set_step(self.cycle);
        self.active_this_cycle = false;
        if self.cycle > self.cfg.run.max_cycles {
            return self.m.step_limit("cycle", self.cfg.run.max_cycles);
        }
        self.clock_units()?;
        self.advance_async()?;
        self.issue()?;
        if self.probe.is_some() {
            self.observe();
        }
        if self.finished() {
            return Ok(false);
        }
        self.check_deadlock()?;
        if !self.active_this_cycle && self.probe.is_none() {
            self.skip_idle();
        }
        Ok(true)
    }

    fn finished(&self) -> bool {
        self.asyncs.is_empty()
            && self.ctas.iter().all(|c| {
                c.warps.iter().all(|w| w.exited() && w.op().is_none())
                    && c.mbar.local_q.is_empty()
                    && c.mbar.tma_q.is_empty()
                    && c.mbar.cluster_q.is_empty()
                    && c.mbar.s1.is_none()
                    && c.named.q.is_empty()
            })
            && self.clusters.iter().all(|c| c.q.is_empty())
    }

    /// Nothing can change any more without a warp issuing, and no warp can issue.
    fn check_deadlock(&mut self) -> Result<(), Stop> {
        if self.cycle < self.launched_at {
            return Ok(());
        }
        // Spinning without progress is a deadlock whenever nothing asynchronous is pending (the
        // golden model's rule), even while units are busy: warps that poll with try_wait keep
        // their MbarrierUnit busy (suspended) forever, so waiting for quiet units first would
        // never name it (gen --ub --small seed 1000701: 4 warps of a CTA take turns suspended).
        // A warp with an operation in a unit is stuck once proven to repeat (hopsync_cosim::spin).
        let spinning = self.asyncs.is_empty() && self.cycle - self.m.last_progress() > self.cfg.run.deadlock_spin_cycles;
        if spinning && self.m.spins_forever(|c, w| self.ctas[c].warps[w].op().is_some()) {
            self.mirror_named_barriers();
            self.m.deadlock(true)?;
        }
        let quiet_units = self.asyncs.is_empty()
            && self.ctas.iter().all(|c| {
                c.mbar.quiet() && c.named.q.is_empty() && c.named.exit_q.is_empty() && c.named.busy_until < self.cycle
            })
            && self.clusters.iter().all(|c| c.q.is_empty() && c.exit_q.is_empty() && c.busy_until < self.cycle);
        if !quiet_units {
            return Ok(());
        }
        // A warp running ahead of a barrier does not count: its register-only instructions
        // release no one.
        let mut any_can_run = false;
        'ctas: for ci in 0..self.ctas.len() {
            for wi in 0..self.ctas[ci].warps.len() {
                let w = &self.ctas[ci].warps[wi];
                if !w.exited() && w.op().is_none() && self.next_group(ci, wi).is_some() {
                    any_can_run = true;
                    break 'ctas;
                }
            }
        }
        if !any_can_run {
            self.mirror_named_barriers();
            self.m.deadlock(false)?;
        }
        Ok(())
    }

    /// Jumps over cycles in which no unit has work and no warp can issue.
    fn skip_idle(&mut self) {
        let now = self.cycle;
        let mut next = u64::MAX;
        let mut suspended = false;
        for c in &self.ctas {
            if c.tma.busy() {
                return;
            }
            if c.mbar.s1.is_some() || c.mbar.busy_until > now || c.named.busy_until > now || c.named.launch.is_some() || !c.named.exit_q.is_empty() {
                return;
            }
            // Suspended warps: the unit's edges up to its next try_wait deadline change only its
            // cycle counter (`MbarUnit::idle_edges_left`); the edge at the deadline is clocked.
            if c.mbar.suspended > 0 {
                match c.mbar.unit.idle_edges_left() {
                    Some(left) => next = next.min((now + 1).saturating_add(left)),
                    None => return,
                }
                suspended = true;
            }
            for q in [&c.mbar.local_q, &c.mbar.tma_q, &c.mbar.cluster_q] {
                if let Some(h) = q.front() {
                    next = next.min(h.at);
                }
            }
            if let Some(h) = c.named.q.front() {
                next = next.min(h.at);
            }
        }
        for c in &self.clusters {
            if c.busy_until > now || !c.exit_q.is_empty() || !c.launch_q.is_empty() {
                return;
            }
            if let Some(h) = c.q.front() {
                next = next.min(h.at);
            }
        }
        for a in &self.asyncs {
            if !a.queued {
                next = next.min(a.at);
            }
        }
        for ci in 0..self.ctas.len() {
            for wi in 0..self.ctas[ci].warps.len() {
                if self.ctas[ci].warps[wi].exited() || self.ctas[ci].warps[wi].op().is_some() {
                    continue;
                }
                let Some((pc, _)) = self.group(ci, wi) else { continue };
                let w = &self.ctas[ci].warps[wi];
                let mut front = 0;
                if let Some(d) = self.decoded.at(pc) {
                    if d.f.waits_for_barrier {
                        front = w.barrier_back;
                    }
                    front = front.max(w.front_at(&d, self.cfg.issue.lookahead_instructions));
                }
                next = next.min(w.next_issue().max(front.min(w.earliest_set_aside())));
            }
        }
        // With warps suspended (cycles that were clocked before the fast-forward), the spin
        // rule of `check_deadlock` fires at its own cycle, skipped or not.
        if suspended && next != u64::MAX && self.asyncs.is_empty() {
            next = next.min(self.m.last_progress().saturating_add(self.cfg.run.deadlock_spin_cycles + 1));
        }
        if next != u64::MAX && next > now + 1 {
            let to = next - 1;
            let to = to.min(self.cfg.run.max_cycles);
            if to > now {
                self.skipped += to - now;
                self.cycle = to;
                for c in &mut self.ctas {
                    if c.mbar.suspended > 0 {
                        c.mbar.unit.skip_idle_edges(to - now);
                    }
                }
            }
        }
    }

    fn clock_units(&mut self) -> Result<(), Stop> {
        let now = self.cycle;
        for c in 0..self.ctas.len() {
            self.clock_tma(c as u32, now)?;
            self.clock_mbar(c as u32, now)?;
            self.clock_named(c as u32, now)?;
        }
        for k in 0..self.clusters.len() {
            self.clock_cluster(k as u32, now)?;
        }
        Ok(())
    }
}
