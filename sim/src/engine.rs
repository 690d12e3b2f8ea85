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

use crate::config::SmConfig;
use crate::probe::{CtaUnits, Probe, Snapshot, Stall, WarpActivity, WarpView};
use crate::timing::{self, Class, InstrInfo};
use crate::units::{tma_engine_params, ClusterInputs, ClusterUnit, MbarInputs, MbarUnit, NamedInputs, NamedUnit, TmaInputs, TmaSim, TmaUnit};
use hopsync_cosim::exec::{self, Cx, Flow, Obj, Stop};
use hopsync_cosim::exec::TmaOp;
use hopsync_cosim::finding::FindingKind;
use hopsync_cosim::lockstep::TmaEffect;
use hopsync_cosim::machine::{AsyncOp, Config, Lane, Machine, MbarShadow, Outcome, PartialArrival, Place, Poll, Wait, WARP};
use hopsync_cosim::mbarrier as mb;
use hopsync_cosim::report::RunReport;
use hopsync_cosim::retire::{RegWrite, Retire, SyncEvent};
use hopsync_firmware::ir::{Instr, Mod, Operand, RegId};
use hopsync_firmware::tensormap::TensorMap;
use hopsync_firmware::{Opcode, Program};
use hopsync_hdl::cluster_barrier_unit::{ClusterBarrierOp, ClusterBarrierReq};
use hopsync_hdl::mbarrier_unit::{MbarrierOp, MbarrierReq, MbarrierResp, MbarrierWord};
use hopsync_hdl::named_barrier_unit::{NamedBarrierOp, NamedBarrierReq};
use hopsync_hdl::tma_engine::{TmaCmd, TmaCmdKind, TmaData16, TmaDescImage, TmaFaultKind, TmaGmemReq, TmaGmemResp, TmaRedOp, TmaRedType, TmaSmemWrite};
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
}

/// What an MbarrierUnit request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// Request `req` of part `part` of the in-flight instruction of (cta, warp).
    Part { cta: u32, warp: u32, part: u32, req: u32 },
    /// The mbarrier side of asynchronous operation `seq`.
    Async { seq: u64 },
}

#[derive(Debug, Clone, Copy)]
struct Queued<T> {
    at: u64,
    req: T,
    tag: Tag,
}

/// The mbarrier instruction families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MbarKind {
    Init,
    Inval,
    Tx,
    Arrive { no_complete: bool },
    Wait,
    PendingCount,
    CpArrive,
}

/// One object-level operation of an mbarrier instruction: the lanes it serves and its unit
/// requests (one, or expect-tx then arrive for a merged multi-lane `.expect_tx` arrive).
#[derive(Debug, Clone)]
struct Part {
    obj: Obj,
    lanes: u32,
    reqs: Vec<MbarrierReq>,
    remote: bool,
    got: usize,
    accepted: usize,
    first_state: Option<u64>,
    old: Option<u64>,
    new: Option<u64>,
    phase_after: u64,
    wait: Option<bool>,
    suspended: bool,
    pending_count: u64,
    per: u64,
}

impl Part {
    fn new(obj: Obj, lanes: u32, reqs: Vec<MbarrierReq>, remote: bool) -> Part {
        Part { obj, lanes, reqs, remote, got: 0, accepted: 0, first_state: None, old: None, new: None, phase_after: 0, wait: None, suspended: false, pending_count: 0, per: 0 }
    }
    fn done(&self) -> bool {
        self.got == self.reqs.len() && !self.suspended
    }
}

#[derive(Debug, Clone)]
enum OpKind {
    Mbar(MbarKind),
    Named(Arrival),
    ClusterArrive,
    ClusterWait,
}

/// A synchronizing instruction in flight.
#[derive(Debug, Clone)]
struct SyncOp {
    pc: u32,
    group: u32,
    mask: u32,
    kind: OpKind,
    parts: Vec<Part>,
    /// Named / cluster request: queued (not yet accepted).
    queued: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NamedTag {
    /// The in-flight instruction of warp w.
    Op(u32),
    /// Warp w's lanes waiting at a non-aligned barrier became its arrival when the others exited.
    ExitPartial(u32),
}

/// One warp's arrival at a named barrier: per arriving lane what it executed (lane, predicate,
/// destination, whether it waits), as the golden model keeps it for divergent warps whose lanes
/// reach the barrier at different instructions (PTX 9.7.13.1, non-`.aligned`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Arrival {
    id: u8,
    lanes: Vec<(u32, bool, Option<u32>, bool)>,
    red: Option<Mod>,
}

struct WarpState {
    /// Per register: the cycle from which it may be read (or written again).
    ready: Vec<u64>,
    next_issue: u64,
    /// Why the next issue waits on `next_issue`.
    wait_why: Stall,
    op: Option<SyncOp>,
    /// bar.red destinations awaiting the release: (barrier, (lane, register) pairs, reduction).
    red: Option<(u8, Vec<(u32, u32)>, Mod)>,
    /// An arrival made on the warp's behalf after an exit, waiting for the unit.
    exit_arrival: Option<Arrival>,
    /// Lanes that executed a non-aligned barrier.cluster.arrive while the warp was divergent.
    cluster_partial: u32,
    exited: bool,
    stall: Stall,
}

struct CtaState {
    mbar: MbarUnit,
    local_q: VecDeque<Queued<MbarrierReq>>,
    tma_q: VecDeque<Queued<MbarrierReq>>,
    cluster_q: VecDeque<Queued<MbarrierReq>>,
    /// The request in the unit's stage 1 (accepted last cycle).
    s1: Option<Tag>,
    mbar_busy_until: u64,
    suspended: u32,
    named: NamedUnit,
    named_q: VecDeque<(u64, NamedBarrierReq, NamedTag)>,
    named_exit_q: VecDeque<u32>,
    named_launch: Option<u32>,
    named_busy_until: u64,
    bar_gen: [u64; 16],
    bar_arrived: [u64; 16],
    /// The thread count of each barrier's current generation, as its arrivals gave it (None:
    /// all threads): only for the deadlock message, the unit holds the real state.
    bar_expected: [Option<u32>; 16],
    warps: Vec<WarpState>,
    rr: Vec<usize>,
    smem_free: u64,
    global_free: u64,
    dsmem_free: u64,
    /// The TMA engine's command stream is busy until this cycle (one copy streams at a time;
    /// the forms the RTL TmaEngine does not implement).
    tma_free: u64,
    /// The CTA's RTL TmaEngine (when the kernel has a TMA instruction).
    tma: Option<TmaUnit>,
    /// Commands for it: (cycle from which presented, command, tensor-map image, issue number).
    tma_cmd_q: VecDeque<TmaQueued>,
    /// Accepted load jobs in order: (issue number, operation, destination CTAs still to be
    /// signalled, lowest rank first).
    tma_jobs: VecDeque<(u64, TmaOp, VecDeque<u32>)>,
    /// Its global requests in flight: (cycle the response is due, response, for a write: the
    /// store's issue number and the request, applied to global memory when acknowledged).
    tma_gmem: Vec<(u64, TmaGmemResp, Option<(u64, TmaGmemReq)>)>,
    /// Accepted or queued stores in command order: the unit's `store_read_done` and
    /// `store_writes_issued` pulses name the oldest one not yet past that point.
    tma_stores: VecDeque<TmaStore>,
    /// The data of the shared-memory read the unit's `smem_rd` got last cycle.
    tma_rd_data: Option<TmaData16>,
    /// A store of this CTA went to the `[tma]` model: the unit does not see every bulk group.
    tma_stores_mixed: bool,
    /// A prefetch was accepted and the unit has not been idle since: it is clocked on (a
    /// prefetch has no job to wait for).
    tma_pf_busy: bool,
    /// Its beats for other CTAs of the cluster crossing the DSMEM network: (cycle they land,
    /// destination CTA, write), in emission order (one `[dsmem] latency`).
    tma_dsmem: VecDeque<(u64, u32, TmaSmemWrite)>,
}

/// A store on the RTL TmaEngine.
struct TmaStore {
    /// Issue number of the store (names it for its writes' acknowledgements).
    key: u64,
    /// Issue number of its current event (the read event, then the write event it queued).
    seq: u64,
    /// The operation (`TmaOp::ToGlobal`, data None until the read event).
    op: TmaOp,
    /// `store_read_done` seen.
    read: bool,
    /// `store_writes_issued` seen.
    issued: bool,
    /// Sector writes not acknowledged.
    unacked: u32,
}

struct ClusterState {
    unit: ClusterUnit,
    q: VecDeque<(u64, ClusterBarrierReq, u32, u32)>,
    exit_q: VecDeque<(u32, u32)>,
    launch_q: VecDeque<(u32, u32)>,
    busy_until: u64,
    phase: u64,
}

#[derive(Debug, Clone)]
enum AsyncKind {
    /// cp.async: data into shared memory at `at`.
    Copy(AsyncOp),
    /// st.async / red.async: at `at` the data and complete-tx reach the destination CTA.
    Store(AsyncOp),
    /// cp.async.mbarrier.arrive's arrive-on, once the thread's prior copies completed.
    Arrive { cta: u32, off: u32, warp: u32, lane: u32, issuing_cta: u32 },
    /// A TMA operation: at `at` a copy's data lands in destination CTA `cta` (then its
    /// complete-tx is queued to that CTA's MbarrierUnit), or a store's reads / writes are done
    /// (`cta` None).
    Tma { op: Box<TmaOp>, cta: Option<u32> },
}

#[derive(Debug, Clone)]
struct AsyncItem {
    seq: u64,
    at: u64,
    kind: AsyncKind,
    /// Its unit request is queued (Store, Arrive).
    queued: bool,
}

/// A command for a TmaEngine: (cycle from which presented, command, tensor-map image, issue
/// number).
type TmaQueued = (u64, TmaCmd, TmaDescImage, u64);

/// Which memory pipe an access uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pipe {
    Smem,
    Global,
    Dsmem,
    Fixed(u64),
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
    ctas: Vec<CtaState>,
    clusters: Vec<ClusterState>,
    asyncs: Vec<AsyncItem>,
    /// Per thread (cta, warp, lane): its cp.async copies in flight, by issue number.
    cp_inflight: HashMap<(u32, u32, u32), Vec<u64>>,
    events: Option<Vec<Event>>,
    probe: Option<Box<dyn Probe + 'p>>,
    views: Vec<WarpView>,
    launched_at: u64,
    active_this_cycle: bool,
}

fn finding_kind(name: Option<&str>) -> Result<FindingKind, Stop> {
    let n = name.unwrap_or("?");
    FindingKind::from_name(n).ok_or_else(|| Stop::Unsupported(n.to_string()))
}

/// The issuing CTA of a TMA operation.
fn at_cta(op: &TmaOp) -> u32 {
    match op {
        TmaOp::ToShared { at, .. } | TmaOp::ToGlobal { at, .. } => at.0,
    }
}

fn bits_of(mask: u32) -> impl Iterator<Item = u32> {
    exec::lanes(mask)
}

impl<'p> Engine<'p> {
    /// Builds the launch: the golden machine's state plus, per CTA, an MbarrierUnit and a
    /// NamedBarrierUnit, and per cluster a ClusterBarrierUnit.
    pub fn new(prog: &'p Program, mcfg: Config, mut cfg: SmConfig) -> Engine<'p> {
        // The machine's step limit (`--max-steps`) bounds this engine's cycles, so a run is cut
        // short at the same count whichever limit the caller set.
        cfg.run.max_cycles = cfg.run.max_cycles.min(mcfg.max_steps);
        let m = Machine::new(prog, Config { seed: None, ..mcfg });
        let info = timing::analyze(&prog.module, &cfg);
        let nregs = prog.module.kernel.regs.len();
        let suspend = cfg.ns_to_cycles(cfg.sync.default_suspend_ns).min(u32::MAX as u64) as u32;
        let ctas: Vec<CtaState> = m
            .ctas
            .iter()
            .map(|c| CtaState {
                mbar: MbarUnit::with_backend(&cfg.backend, m.smem_bytes, suspend),
                local_q: VecDeque::new(),
                tma_q: VecDeque::new(),
                cluster_q: VecDeque::new(),
                s1: None,
                mbar_busy_until: 0,
                suspended: 0,
                named: NamedUnit::with_backend(&cfg.backend),
                named_q: VecDeque::new(),
                named_exit_q: VecDeque::new(),
                named_launch: Some(((1u64 << c.warps.len()) - 1) as u32),
                named_busy_until: 0,
                bar_gen: [0; 16],
                bar_arrived: [0; 16],
                bar_expected: [None; 16],
                warps: c
                    .warps
                    .iter()
                    .map(|_| WarpState {
                        ready: vec![0; nregs],
                        next_issue: 0,
                        wait_why: Stall::NotLaunched,
                        op: None,
                        red: None,
                        exit_arrival: None,
                        cluster_partial: 0,
                        exited: false,
                        stall: Stall::NotLaunched,
                    })
                    .collect(),
                rr: vec![0; cfg.issue.schedulers as usize],
                smem_free: 0,
                global_free: 0,
                dsmem_free: 0,
                tma_free: 0,
                tma: None,
                tma_cmd_q: VecDeque::new(),
                tma_jobs: VecDeque::new(),
                tma_gmem: Vec::new(),
                tma_stores: VecDeque::new(),
                tma_rd_data: None,
                tma_stores_mixed: false,
                tma_pf_busy: false,
                tma_dsmem: VecDeque::new(),
            })
            .collect();
        let mut ctas = ctas;
        let uses_tma_unit = prog.module.kernel.body.iter().any(|i| {
            matches!(
                i.op,
                Opcode::CpAsyncBulk | Opcode::CpAsyncBulkTensor | Opcode::CpReduceAsyncBulk | Opcode::CpReduceAsyncBulkTensor | Opcode::CpAsyncBulkPrefetch | Opcode::CpAsyncBulkPrefetchTensor
            )
        });
        let backend_unsupported = if uses_tma_unit { cfg.backend.unsupported("tma_engine") } else { None };
        if uses_tma_unit && backend_unsupported.is_none() {
            let (tags, per) = tma_engine_params(&cfg);
            for c in &mut ctas {
                c.tma = Some(TmaUnit::with_backend(&cfg.backend, tags, per));
            }
        }
        let mut clusters: Vec<ClusterState> = Vec::new();
        let mut launch_cycles = 1;
        for cl in &m.clusters {
            let mut launch_q = VecDeque::new();
            for (rank, &c) in cl.ctas.iter().enumerate() {
                let n = m.ctas[c as usize].warps.len();
                launch_q.push_back((rank as u32, ((1u64 << n) - 1) as u32));
            }
            launch_cycles = launch_cycles.max(launch_q.len() as u64);
            clusters.push(ClusterState { unit: ClusterUnit::with_backend(&cfg.backend), q: VecDeque::new(), exit_q: VecDeque::new(), launch_q, busy_until: 0, phase: 0 });
        }
        let mut e = Engine {
            m,
            cfg,
            cycle: 0,
            skipped: 0,
            unit_edges: 0,
            backend_unsupported,
            tma_unit_commands: 0,
            tma_model_ops: 0,
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
            for w in &mut c.warps {
                w.next_issue = e.launched_at;
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

    // ---- the cycle ---------------------------------------------------------------------------

    /// Simulates one cycle (or skips to the next cycle in which something can happen). Returns
    /// Ok(false) when every thread exited and nothing is in flight.
    pub fn step(&mut self) -> Result<bool, Stop> {
        if let Some(s) = &self.backend_unsupported {
            return Err(Stop::Unsupported(s.clone()));
        }
        self.cycle += 1;
        self.m.step = self.cycle;
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
                c.warps.iter().all(|w| w.exited && w.op.is_none())
                    && c.local_q.is_empty()
                    && c.tma_q.is_empty()
                    && c.cluster_q.is_empty()
                    && c.s1.is_none()
                    && c.named_q.is_empty()
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
        let spinning = self.asyncs.is_empty() && self.cycle - self.m.last_progress > self.cfg.run.deadlock_spin_cycles;
        if spinning && self.m.spins_forever(|c, w| self.ctas[c].warps[w].op.is_some()) {
            self.mirror_named_barriers();
            self.m.deadlock(true)?;
        }
        let quiet_units = self.asyncs.is_empty()
            && self.ctas.iter().all(|c| {
                c.local_q.is_empty() && c.tma_q.is_empty() && c.cluster_q.is_empty() && c.s1.is_none() && c.named_q.is_empty() && c.named_exit_q.is_empty() && c.suspended == 0 && c.named_busy_until < self.cycle
            })
            && self.clusters.iter().all(|c| c.q.is_empty() && c.exit_q.is_empty() && c.busy_until < self.cycle);
        if !quiet_units {
            return Ok(());
        }
        let mut any_can_run = false;
        for (ci, c) in self.ctas.iter().enumerate() {
            for (wi, w) in c.warps.iter().enumerate() {
                if w.exited || w.op.is_some() {
                    continue;
                }
                if self.m.ctas[ci].warps[wi].next_group().is_some() {
                    any_can_run = true;
                }
            }
        }
        if !any_can_run {
            self.mirror_named_barriers();
            self.m.deadlock(false)?;
        }
        Ok(())
    }

    /// Copies what the engine knows of each named barrier's current generation (arrived warps,
    /// thread count) into the machine, whose deadlock message describes it; the golden model's
    /// own barrier state is not kept by this engine (the NamedBarrierUnit holds it).
    fn mirror_named_barriers(&mut self) {
        for (c, cs) in self.ctas.iter().enumerate() {
            for id in 0..16 {
                let b = &mut self.m.ctas[c].bars[id];
                b.arrived_warps = cs.bar_arrived[id];
                b.arrived = cs.bar_arrived[id].count_ones() * WARP as u32;
                b.expected = if cs.bar_arrived[id] == 0 { None } else { cs.bar_expected[id] };
            }
        }
    }

    /// Jumps over cycles in which no unit has work and no warp can issue.
    fn skip_idle(&mut self) {
        let now = self.cycle;
        let mut next = u64::MAX;
        for c in &self.ctas {
            if !c.tma_cmd_q.is_empty() || !c.tma_jobs.is_empty() || !c.tma_gmem.is_empty() || !c.tma_stores.is_empty() || c.tma_pf_busy || !c.tma_dsmem.is_empty() {
                return;
            }
            if c.suspended > 0 || c.s1.is_some() || c.mbar_busy_until > now || c.named_busy_until > now || c.named_launch.is_some() || !c.named_exit_q.is_empty() {
                return;
            }
            for q in [&c.local_q, &c.tma_q, &c.cluster_q] {
                if let Some(h) = q.front() {
                    next = next.min(h.at);
                }
            }
            if let Some(h) = c.named_q.front() {
                next = next.min(h.0);
            }
        }
        for c in &self.clusters {
            if c.busy_until > now || !c.exit_q.is_empty() || !c.launch_q.is_empty() {
                return;
            }
            if let Some(h) = c.q.front() {
                next = next.min(h.0);
            }
        }
        for a in &self.asyncs {
            if !a.queued {
                next = next.min(a.at);
            }
        }
        for (ci, c) in self.ctas.iter().enumerate() {
            for (wi, w) in c.warps.iter().enumerate() {
                if w.exited || w.op.is_some() {
                    continue;
                }
                let Some((pc, _)) = self.m.ctas[ci].warps[wi].next_group() else { continue };
                let mut t = w.next_issue;
                if let Some(inf) = self.info.get(pc as usize) {
                    for &r in inf.srcs.iter().chain(&inf.dsts) {
                        t = t.max(w.ready[r as usize]);
                    }
                }
                next = next.min(t);
            }
        }
        if next != u64::MAX && next > now + 1 {
            let to = next - 1;
            let to = to.min(self.cfg.run.max_cycles);
            if to > now {
                self.skipped += to - now;
                self.cycle = to;
            }
        }
    }

    // ---- units ------------------------------------------------------------------------------

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

    fn clock_mbar(&mut self, c: u32, now: u64) -> Result<(), Stop> {
        let cs = &mut self.ctas[c as usize];
        let head = |q: &VecDeque<Queued<MbarrierReq>>| q.front().filter(|h| h.at <= now).map(|h| h.req);
        let inputs = MbarInputs { local: head(&cs.local_q), tma: head(&cs.tma_q), cluster: head(&cs.cluster_q) };
        let has_input = inputs.local.is_some() || inputs.tma.is_some() || inputs.cluster.is_some();
        if !has_input && cs.s1.is_none() && cs.suspended == 0 && cs.mbar_busy_until <= now {
            return Ok(());
        }
        self.active_this_cycle = true;
        self.unit_edges += 1;
        let out = cs.mbar.cycle(&inputs);
        let accepted = if out.local_ready {
            cs.local_q.pop_front()
        } else if out.tma_ready {
            cs.tma_q.pop_front()
        } else if out.cluster_ready {
            cs.cluster_q.pop_front()
        } else {
            None
        };
        let s1 = cs.s1.take();
        cs.s1 = accepted.map(|q| q.tag);
        if has_input || s1.is_some() {
            cs.mbar_busy_until = now + 4;
        }
        if let Some(Tag::Part { cta, warp, part, .. }) = accepted.map(|q| q.tag) {
            if let Some(p) = self.ctas[cta as usize].warps[warp as usize].op.as_mut().and_then(|o| o.parts.get_mut(part as usize)) {
                p.accepted += 1;
            }
        }
        // A wake seen now was decided at an earlier edge (the waiter table registers it) than
        // the stage-1 write of this edge: retire the woken try_wait first, so that the event
        // stream (and the golden model) sees it before that write. A timeout decided one edge
        // before a completing write returns false (gen seed 5012, every-size options).
        if out.wake.valid {
            self.wake(c, out.wake.warp.index() as u32, out.wake.completed)?;
        }
        // The operation in stage 1: its write, response and finding.
        if let Some(tag) = s1 {
            let change = out.write.map(|(word, new, valid)| self.mirror(c, word, new, valid));
            if out.fault.valid {
                self.unit_fault(c, tag, out.fault.kind.name())?;
            }
            match tag {
                Tag::Part { cta, warp, part, req } => self.part_result(cta, warp, part, req, change, if out.resp.valid { Some(out.resp) } else { None })?,
                Tag::Async { seq } => self.async_done(seq, c, change)?,
            }
        }
        Ok(())
    }

    /// Applies a bank write of CTA `c`'s MbarrierUnit to the shared-memory image and the shadow
    /// facts; returns the event when the word changed.
    fn mirror(&mut self, c: u32, word: u32, new: u64, valid: bool) -> Option<SyncEvent> {
        let off = word * 8;
        if off as usize + 8 > self.m.ctas[c as usize].smem.len() {
            return None;
        }
        let old = self.m.read_mbar_word(c, off);
        let was_valid = self.m.ctas[c as usize].mbarriers.contains_key(&off);
        if !valid && !was_valid {
            // The unit writes every operation's word back, but its bank only holds mbarrier
            // state: a word that holds no valid object (pending_count, a faulting op) is the
            // shared memory's, not the unit's.
            return None;
        }
        if old != new {
            self.m.ctas[c as usize].smem[off as usize..off as usize + 8].copy_from_slice(&new.to_le_bytes());
            self.m.progress();
        }
        if valid && !was_valid {
            // mbarrier.init: phase 0 completes nothing before it, so no wait is owed.
            self.m.ctas[c as usize].mbarriers.insert(off, MbarShadow { phase: 0, waited_prev: true, ..Default::default() });
            self.m.progress();
        } else if !valid && was_valid {
            self.m.ctas[c as usize].mbarriers.remove(&off);
            self.m.progress();
        } else if valid && (old >> 63) != (new >> 63) {
            exec::on_phase_complete(&mut self.m, Obj { cta: c, off, remote: false });
        }
        (old != new).then_some(SyncEvent::Mbarrier { cta: c, offset: off, old, new })
    }

    fn unit_fault(&mut self, unit_cta: u32, tag: Tag, name: Option<&str>) -> Result<(), Stop> {
        let kind = finding_kind(name)?;
        match tag {
            Tag::Part { cta, warp, part, .. } => {
                let (pc, lane, obj) = match self.ctas[cta as usize].warps[warp as usize].op.as_ref() {
                    Some(op) => {
                        let p = &op.parts[part as usize];
                        (op.pc, p.lanes.trailing_zeros().min(31), p.obj)
                    }
                    None => (0, 0, Obj { cta: unit_cta, off: 0, remote: false }),
                };
                let state = exec::describe(&self.m, obj);
                self.m.report(kind, format!("the MbarrierUnit of cta {unit_cta} reports {} at cycle {}: {state}", kind.name(), self.cycle), Some((cta, warp, lane, pc)))
            }
            Tag::Async { seq } => {
                let (at, what) = match self.asyncs.iter().find(|a| a.seq == seq && !matches!(a.kind, AsyncKind::Tma { cta: Some(d), .. } if d != unit_cta)).map(|a| a.kind.clone()) {
                    Some(AsyncKind::Arrive { cta, off, warp, lane, issuing_cta }) => {
                        let d = exec::describe(&self.m, Obj { cta, off, remote: false });
                        (Some((issuing_cta, warp, lane, 0)), format!("asynchronous arrive-on of cp.async.mbarrier.arrive: {d}"))
                    }
                    Some(AsyncKind::Store(AsyncOp::RemoteWrite { cta, mbar, tx, .. })) => {
                        let d = exec::describe(&self.m, Obj { cta, off: mbar, remote: true });
                        (None, format!("complete-tx of {tx} bytes of an asynchronous store: {d}"))
                    }
                    Some(AsyncKind::Tma { op, cta: Some(c) }) => {
                        let TmaOp::ToShared { mbar, tx, at, .. } = *op else { unreachable!() };
                        let d = exec::describe(&self.m, Obj { cta: c, off: mbar, remote: c != at.0 });
                        let r = self.m.report(kind, format!("complete-tx of {tx} bytes by the TMA engine: {d} (the MbarrierUnit of cta {unit_cta}, cycle {})", self.cycle), Some(at));
                        let cy = self.cycle;
                        self.emit(Event::AsyncFault { cycle: cy, seq, cta: Some(c), kind });
                        return r;
                    }
                    _ => (None, String::new()),
                };
                self.m.report(kind, format!("{what} (the MbarrierUnit of cta {unit_cta}, cycle {})", self.cycle), at)
            }
        }
    }

    /// A unit processed request `req` of a part.
    fn part_result(&mut self, cta: u32, warp: u32, part: u32, req: u32, change: Option<Option<SyncEvent>>, resp: Option<MbarrierResp>) -> Result<(), Stop> {
        let phase_now = {
            let Some(op) = self.ctas[cta as usize].warps[warp as usize].op.as_ref() else { return Ok(()) };
            let o = op.parts[part as usize].obj;
            self.m.ctas[o.cta as usize].mbarriers.get(&o.off).map(|s| s.phase).unwrap_or(0)
        };
        let suspended_now;
        {
            let Some(op) = self.ctas[cta as usize].warps[warp as usize].op.as_mut() else { return Ok(()) };
            let p = &mut op.parts[part as usize];
            p.got += 1;
            if let Some(Some(SyncEvent::Mbarrier { old, new, .. })) = &change {
                if p.old.is_none() {
                    p.old = Some(*old);
                }
                p.new = Some(*new);
            }
            p.phase_after = phase_now;
            if let Some(r) = resp {
                if req == 0 {
                    p.first_state = Some(r.state.to_u64());
                }
                p.wait = Some(r.wait_complete);
                p.pending_count = r.pending_count.index() as u64;
                if r.suspended {
                    p.suspended = true;
                }
            } else if req == 0 && p.first_state.is_none() {
                // Remote ops get no response: the word before the op is the mirror's old word.
                p.first_state = match &change {
                    Some(Some(SyncEvent::Mbarrier { old, .. })) => Some(*old),
                    _ => Some(self.m.read_mbar_word(p.obj.cta, p.obj.off)),
                };
            }
            suspended_now = p.suspended && resp.is_some_and(|r| r.suspended);
        }
        if suspended_now {
            self.ctas[cta as usize].suspended += 1;
            let pc = self.ctas[cta as usize].warps[warp as usize].op.as_ref().map(|o| o.pc).unwrap_or(0);
            let o = self.ctas[cta as usize].warps[warp as usize].op.as_ref().unwrap().parts[part as usize].obj;
            self.m.ctas[cta as usize].warps[warp as usize].polling = Some(Poll { cta: o.cta, offset: o.off, pc });
        }
        self.try_retire(cta, warp)
    }

    fn wake(&mut self, c: u32, warp: u32, completed: bool) -> Result<(), Stop> {
        let Some(op) = self.ctas[c as usize].warps.get_mut(warp as usize).and_then(|w| w.op.as_mut()) else { return Ok(()) };
        let Some(p) = op.parts.iter_mut().find(|p| p.suspended) else { return Ok(()) };
        p.suspended = false;
        p.wait = Some(completed);
        self.ctas[c as usize].suspended -= 1;
        self.try_retire(c, warp)
    }

    fn clock_named(&mut self, c: u32, now: u64) -> Result<(), Stop> {
        let cs = &mut self.ctas[c as usize];
        let req = cs.named_q.front().filter(|h| h.0 <= now).map(|h| (h.1, h.2));
        let exit = cs.named_exit_q.front().copied();
        let launch = cs.named_launch;
        if req.is_none() && exit.is_none() && launch.is_none() && cs.named_busy_until <= now {
            return Ok(());
        }
        self.active_this_cycle = true;
        self.unit_edges += 1;
        let out = cs.named.cycle(&NamedInputs { req: req.map(|r| r.0), exit, launch });
        cs.named_launch = None;
        if exit.is_some() {
            cs.named_exit_q.pop_front();
            // the unit sweeps its 16 barriers after an exit
            cs.named_busy_until = now + 20;
        }
        if req.is_some() || launch.is_some() {
            cs.named_busy_until = cs.named_busy_until.max(now + 2);
        }
        let accepted = if out.ready { req } else { None };
        if accepted.is_some() {
            cs.named_q.pop_front();
        }
        // The accepted request's finding / retire, then a completion (which may be its own).
        let mut pending_retire: Option<u32> = None;
        if let Some((r, tag)) = accepted {
            match tag {
                NamedTag::Op(w) => {
                    if out.fault.valid {
                        let name = out.fault.kind.name();
                        match name.filter(|n| !n.starts_with("unsupported")) {
                            Some(n) => {
                                let kind = finding_kind(Some(n))?;
                                let pc = self.ctas[c as usize].warps[w as usize].op.as_ref().map(|o| o.pc).unwrap_or(0);
                                let lane = self.ctas[c as usize].warps[w as usize].op.as_ref().map(|o| o.mask.trailing_zeros().min(31)).unwrap_or(0);
                                let msg = format!("the NamedBarrierUnit of cta {c} reports {} for barrier {} at cycle {}", kind.name(), r.barrier.index(), self.cycle);
                                self.m.report(kind, msg, Some((c, w, lane, pc)))?;
                            }
                            None => return Err(Stop::Unsupported(name.unwrap_or("unsupported").to_string())),
                        }
                        // Warn mode: the unit changed nothing; the instruction retires without
                        // waiting.
                        if let Some(op) = self.ctas[c as usize].warps[w as usize].op.as_mut() {
                            if let OpKind::Named(a) = &mut op.kind {
                                for e in a.lanes.iter_mut() {
                                    e.3 = false;
                                }
                                a.red = None;
                            }
                        }
                    } else {
                        let id = r.barrier.index();
                        self.ctas[c as usize].bar_arrived[id] |= 1 << w;
                        self.ctas[c as usize].bar_expected[id] = r.has_count.then(|| r.count.index() as u32);
                    }
                    if let Some(op) = self.ctas[c as usize].warps[w as usize].op.as_mut() {
                        op.queued = false;
                    }
                    pending_retire = Some(w);
                }
                NamedTag::ExitPartial(w) => {
                    if let Some(a) = self.ctas[c as usize].warps[w as usize].exit_arrival.take() {
                        if out.fault.valid {
                            let kind = finding_kind(out.fault.kind.name())?;
                            let msg = format!("the NamedBarrierUnit of cta {c} reports {} for barrier {} at cycle {} (the arrival of warp {w}'s waiting lanes after the others exited)", kind.name(), a.id, self.cycle);
                            self.m.report(kind, msg, None)?;
                        } else {
                            self.ctas[c as usize].bar_arrived[a.id as usize] |= 1 << w;
                            self.apply_arrival(c, w, a);
                        }
                    }
                }
            }
        }
        // Build the retiring instruction's record first so a completion can add to it.
        let mut rec = None;
        if let Some(w) = pending_retire {
            rec = Some(self.retire_named(c, w)?);
        }
        if out.done.valid {
            let id = out.done.barrier.index() as u8;
            let (ev, regs) = self.release_named(c, id, out.done.warps.index() as u32, out.done.popc.index() as u64, out.done.all_true, out.done.any_true, rec.as_mut());
            match rec.as_mut() {
                Some((_, r)) if r.is_some() => r.as_mut().unwrap().sync.push(ev),
                _ => {
                    let cy = self.cycle;
                    self.emit(Event::Release { cycle: cy, ev, regs });
                }
            }
        }
        if let Some((_, Some(r))) = rec {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: r });
        }
        Ok(())
    }

    fn clock_cluster(&mut self, k: u32, now: u64) -> Result<(), Stop> {
        let cl = &mut self.clusters[k as usize];
        let launch = cl.launch_q.front().copied();
        let req = if launch.is_none() { cl.q.front().filter(|h| h.0 <= now).map(|h| (h.1, h.2, h.3)) } else { None };
        let exit = cl.exit_q.front().copied();
        if req.is_none() && exit.is_none() && launch.is_none() && cl.busy_until <= now {
            return Ok(());
        }
        self.active_this_cycle = true;
        self.unit_edges += 1;
        let out = cl.unit.cycle(&ClusterInputs { req: req.map(|r| r.0), exit, launch });
        if launch.is_some() {
            cl.launch_q.pop_front();
        }
        if exit.is_some() {
            cl.exit_q.pop_front();
        }
        if req.is_some() || exit.is_some() || launch.is_some() {
            cl.busy_until = now + 2;
        }
        let accepted = if out.ready { req } else { None };
        if accepted.is_some() {
            cl.q.pop_front();
        }
        let mut rec: Option<(u32, u32, Option<Retire>)> = None;
        if let Some((r, c, w)) = accepted {
            if out.fault.valid {
                let kind = finding_kind(out.fault.kind.name())?;
                let (pc, lane) = self.ctas[c as usize].warps[w as usize].op.as_ref().map(|o| (o.pc, o.mask.trailing_zeros().min(31))).unwrap_or((0, 0));
                let msg = format!("the ClusterBarrierUnit of cluster {k} reports {} at cycle {}", kind.name(), self.cycle);
                self.m.report(kind, msg, Some((c, w, lane, pc)))?;
            }
            let blocked = r.op == ClusterBarrierOp::Wait && out.resp.valid && out.resp.blocked && !out.fault.valid;
            let r = self.retire_cluster(c, w, blocked)?;
            rec = Some((c, w, r));
        }
        if out.done.valid {
            let cl = &mut self.clusters[k as usize];
            cl.phase += 1;
            let phase = cl.phase;
            let ctas = self.m.clusters[k as usize].ctas.clone();
            let back = self.cycle + self.cfg.sync.cluster_barrier_cycles;
            for c in ctas {
                for (w, mw) in self.m.ctas[c as usize].warps.iter_mut().enumerate() {
                    let mut any = false;
                    for l in 0..WARP {
                        if matches!(mw.lane[l], Lane::Blocked(Wait::ClusterBarrier(_))) {
                            mw.lane[l] = Lane::Ready;
                            any = true;
                        }
                    }
                    if any {
                        let ws = &mut self.ctas[c as usize].warps[w];
                        ws.next_issue = ws.next_issue.max(back);
                        ws.wait_why = Stall::ClusterBarrierWait;
                    }
                }
            }
            self.m.progress();
            let ev = SyncEvent::ClusterBarrierRelease { cluster: k, phase };
            match rec.as_mut() {
                Some((_, _, Some(r))) => r.sync.push(ev),
                _ => {
                    let cy = self.cycle;
                    self.emit(Event::Release { cycle: cy, ev, regs: Vec::new() });
                }
            }
        }
        if let Some((_, _, Some(r))) = rec {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: r });
        }
        Ok(())
    }

    // ---- asynchronous operations -------------------------------------------------------------

    /// Takes the asynchronous operations a golden body queued in the machine and times them.
    fn take_pending(&mut self, c: u32, w: u32, copy_done: u64, store_done: u64) -> Result<(), Stop> {
        let pend = std::mem::take(&mut self.m.pending);
        for p in pend {
            match &p.op {
                AsyncOp::CpAsync { lane, .. } => {
                    self.cp_inflight.entry((c, w, *lane)).or_default().push(p.seq);
                    self.asyncs.push(AsyncItem { seq: p.seq, at: copy_done, kind: AsyncKind::Copy(p.op), queued: false });
                }
                AsyncOp::RemoteWrite { .. } => {
                    self.asyncs.push(AsyncItem { seq: p.seq, at: store_done, kind: AsyncKind::Store(p.op), queued: false });
                }
                AsyncOp::CpAsyncArrive { .. } => unreachable!("cp.async.mbarrier.arrive is executed by the engine"),
                AsyncOp::Tma(op) => match self.rtl_command(op)? {
                    Some((cmd, desc)) if matches!(**op, TmaOp::ToGlobal { .. }) => {
                        // Completed by the unit's store pulses and write acknowledgements
                        // (`clock_tma`); the placeholder keeps the run from looking idle.
                        self.asyncs.push(AsyncItem { seq: p.seq, at: u64::MAX, kind: AsyncKind::Tma { op: op.clone(), cta: None }, queued: true });
                        let at = self.cycle + self.cfg.tma.issue_cycles;
                        let cs = &mut self.ctas[c as usize];
                        cs.tma_cmd_q.push_back((at, cmd, desc, p.seq));
                        cs.tma_stores.push_back(TmaStore { key: p.seq, seq: p.seq, op: (**op).clone(), read: false, issued: false, unacked: 0 });
                    }
                    Some((cmd, desc)) => {
                        let TmaOp::ToShared { ctas, .. } = &**op else { unreachable!("stores are matched above") };
                        let mut dests: Vec<u32> = ctas.clone();
                        dests.sort_by_key(|d| self.m.ctas[*d as usize].rank);
                        for &d in &dests {
                            // Completed by the unit's complete-tx (`clock_tma`, `async_done`).
                            self.asyncs.push(AsyncItem { seq: p.seq, at: u64::MAX, kind: AsyncKind::Tma { op: op.clone(), cta: Some(d) }, queued: true });
                        }
                        let at = self.cycle + self.cfg.tma.issue_cycles;
                        let cs = &mut self.ctas[c as usize];
                        cs.tma_cmd_q.push_back((at, cmd, desc, p.seq));
                        cs.tma_jobs.push_back((p.seq, (**op).clone(), dests.into()));
                    }
                    None => {
                        if matches!(**op, TmaOp::ToGlobal { .. }) && self.ctas[c as usize].tma.is_some() {
                            self.ctas[c as usize].tma_stores_mixed = true;
                        }
                        self.schedule_tma(c, p.seq, (**op).clone())
                    }
                },
            }
        }
        Ok(())
    }

    fn advance_async(&mut self) -> Result<(), Stop> {
        if self.asyncs.is_empty() {
            return Ok(());
        }
        let now = self.cycle;
        let mut k = 0;
        while k < self.asyncs.len() {
            let a = &self.asyncs[k];
            if a.queued || a.at > now {
                k += 1;
                continue;
            }
            self.active_this_cycle = true;
            match a.kind.clone() {
                AsyncKind::Copy(op) => {
                    let seq = a.seq;
                    self.asyncs.remove(k);
                    if let AsyncOp::CpAsync { cta, warp, lane, .. } = &op {
                        if let Some(v) = self.cp_inflight.get_mut(&(*cta, *warp, *lane)) {
                            v.retain(|s| *s != seq);
                        }
                    }
                    self.m.progress();
                    exec::complete_async(&mut self.m, op)?;
                    let cy = self.cycle;
                    self.emit(Event::Complete { cycle: cy, seq });
                    continue;
                }
                AsyncKind::Store(AsyncOp::RemoteWrite { cta, mbar, tx, .. }) => {
                    let req = MbarrierReq { op: MbarrierOp::CompleteTx, word: ((mbar / 8) as u64).into(), tx_count: (tx as u64).into(), ..Default::default() };
                    let seq = a.seq;
                    self.asyncs[k].queued = true;
                    self.ctas[cta as usize].cluster_q.push_back(Queued { at: now, req, tag: Tag::Async { seq } });
                }
                AsyncKind::Arrive { cta, off, warp, lane, issuing_cta } => {
                    // The arrive-on triggers once every prior cp.async of the thread completed.
                    let seq = a.seq;
                    let prior = self.cp_inflight.get(&(issuing_cta, warp, lane)).is_some_and(|v| v.iter().any(|s| *s < seq));
                    if prior {
                        k += 1;
                        continue;
                    }
                    let req = MbarrierReq { op: MbarrierOp::Arrive, word: ((off / 8) as u64).into(), count: 1u64.into(), warp: (warp as u64).into(), ..Default::default() };
                    self.asyncs[k].queued = true;
                    self.ctas[cta as usize].tma_q.push_back(Queued { at: now + self.cfg.sync.cp_async_arrive_cycles, req, tag: Tag::Async { seq } });
                }
                AsyncKind::Tma { op, cta: Some(c) } => {
                    let seq = a.seq;
                    let TmaOp::ToShared { mbar, tx, at, .. } = &*op else { unreachable!("only copies into shared memory have a destination CTA") };
                    let (mbar, tx, at) = (*mbar, *tx, *at);
                    // The last beat reached CTA c: the data is there, then its complete-tx.
                    exec::tma_land_data(&mut self.m, &op, c);
                    exec::tma_land_guard(&mut self.m, &op, c);
                    self.m.progress();
                    if let Err((kind, msg)) = exec::tma_signal_target_check(&self.m, c, mbar, tx) {
                        self.asyncs.remove(k);
                        let r = self.m.report(kind, msg, Some(at));
                        let cy = self.cycle;
                        self.emit(Event::AsyncFault { cycle: cy, seq, cta: Some(c), kind });
                        r?;
                        // Warn mode: no complete-tx on an object that is not an mbarrier.
                        let effect = self.tma_effect(&op, Some(c), false);
                        self.emit(Event::TmaComplete { cycle: cy, seq, cta: Some(c), effect });
                        continue;
                    }
                    let req = MbarrierReq { op: MbarrierOp::CompleteTx, word: ((mbar / 8) as u64).into(), tx_count: (tx as u64).into(), ..Default::default() };
                    self.asyncs[k].queued = true;
                    let q = Queued { at: now + self.cfg.tma.complete_tx_cycles, req, tag: Tag::Async { seq } };
                    // The local complete-tx takes the unit's async-copy port; a remote CTA's, its
                    // cluster port (hdl/src/tma_engine.rs `mbar_remote`).
                    if c == at.0 {
                        self.ctas[c as usize].tma_q.push_back(q);
                    } else {
                        self.ctas[c as usize].cluster_q.push_back(q);
                    }
                }
                AsyncKind::Tma { op, cta: None } => {
                    let seq = a.seq;
                    self.asyncs.remove(k);
                    self.m.progress();
                    exec::complete_async(&mut self.m, AsyncOp::Tma(op.clone()))?;
                    // A store's read event queues its write event.
                    for p in std::mem::take(&mut self.m.pending) {
                        match p.op {
                            AsyncOp::Tma(next) => self.schedule_tma(at_cta(&next), p.seq, *next),
                            other => unreachable!("a TMA completion queues only TMA events: {other:?}"),
                        }
                    }
                    let effect = self.tma_effect(&op, None, false);
                    let cy = self.cycle;
                    self.emit(Event::TmaComplete { cycle: cy, seq, cta: None, effect });
                    continue;
                }
                AsyncKind::Store(_) => unreachable!(),
            }
            k += 1;
        }
        Ok(())
    }

    /// The RTL TmaEngine's command for a TMA operation, or None for the forms it does not
    /// implement (those are timed by [`Self::schedule_tma`]): it takes the loads from global
    /// memory into shared::cluster, bulk or tensor (tile and im2col mode), with or without
    /// multicast, the shared::cta -> shared::cluster copies and reductions, and the stores and
    /// reductions from shared::cta to global memory (tile mode; im2col-mode stores are left to
    /// the model).
    fn rtl_command(&mut self, op: &TmaOp) -> Result<Option<(TmaCmd, TmaDescImage)>, Stop> {
        if let TmaOp::ToGlobal { pieces, data: None, red, at, .. } = op {
            return self.rtl_store_command(pieces, *red, *at);
        }
        let TmaOp::ToShared { ctas, pieces, red, mbar, at, .. } = op else { return Ok(None) };
        let (c0, w0, lane, pc) = *at;
        if self.ctas[c0 as usize].tma.is_none() || mbar / 8 >= 1 << 16 {
            return Ok(None);
        }
        let mask = ctas.iter().fold(0u64, |m, &d| m | 1 << self.m.ctas[d as usize].rank);
        if mask >> 16 != 0 {
            return Ok(None);
        }
        let ins = &self.m.module().kernel.body[pc as usize];
        let mut cmd = TmaCmd { mbar: ((mbar / 8) as u64).into(), cta_mask: mask.into(), ..Default::default() };
        let mut desc = TmaDescImage::default();
        match ins.op {
            Opcode::CpAsyncBulk | Opcode::CpReduceAsyncBulk if matches!(pieces.as_slice(), [p] if matches!(p.src, Some(Place::Shared(..)))) => {
                // shared::cta -> shared::cluster (PTX 9.7.9.25.4.1), or its reduction
                // (cp.reduce.async.bulk, PTX 9.7.9.25.4.2): one destination CTA
                let p = &pieces[0];
                let (Some(Place::Shared(sc, soff)), Place::Shared(_, doff)) = (p.src, p.dst) else { return Ok(None) };
                if sc != c0 || soff >= 1 << 18 || doff >= 1 << 18 || ctas.len() != 1 || p.len >= 1 << 20 {
                    return Ok(None);
                }
                let Some((ro, rt)) = (match red {
                    None => Some((TmaRedOp::Copy, TmaRedType::B32)),
                    Some((o, t)) => red_codes(*o, *t),
                }) else {
                    return Ok(None);
                };
                cmd.kind = TmaCmdKind::BulkS2S;
                cmd.smem = (soff as u64).into();
                cmd.dsmem = (doff as u64).into();
                cmd.size = (p.len as u64).into();
                cmd.red_op = ro;
                cmd.red_type = rt;
            }
            Opcode::CpAsyncBulk if red.is_none() => {
                let [p] = pieces.as_slice() else { return Ok(None) };
                let (Some(Place::Global(r, off)), Place::Shared(_, doff)) = (p.src, p.dst) else { return Ok(None) };
                if doff >= 1 << 18 {
                    return Ok(None);
                }
                let g = self.m.global[r].base + off as u64;
                cmd.kind = TmaCmdKind::BulkLoad;
                cmd.smem = (doff as u64).into();
                cmd.gaddr_lo = (g & 0xffff_ffff).into();
                cmd.gaddr_hi = (g >> 32).into();
                cmd.size = (p.len as u64).into();
            }
            Opcode::CpAsyncBulkTensor if red.is_none() && !ins.has(Mod::Im2colNoOffs) => {
                // Tile or im2col mode (PTX 9.7.9.25.5.2; im2col: PTX 5.5.4, the offsets are
                // operand 3).
                let Some((map, coords, offs)) = self.quiet_tensor_operands(*at, ins, 1, 3) else { return Ok(None) };
                let cx = Cx { m: &mut self.m, cta: c0, warp: w0, pc, mask: 1 << lane, group: 1 << lane };
                let a = cx.addr(ins, 0, lane);
                let space = if ins.has(Mod::SharedCluster) { Mod::SharedCluster } else { Mod::SharedCta };
                let Ok(Place::Shared(_, doff)) = self.m.resolve(c0, w0, lane, Some(space), a, 1) else { return Ok(None) };
                if doff >= 1 << 18 {
                    return Ok(None);
                }
                let c = |k: usize| -> u64 { coords.get(k).map(|&v| v as i32 as u32 as u64).unwrap_or(0) };
                cmd.kind = TmaCmdKind::TensorLoad;
                set_im2col(&mut cmd, ins.has(Mod::Im2col), &offs);
                cmd.dims = (coords.len() as u64).into();
                cmd.smem = (doff as u64).into();
                (cmd.c0, cmd.c1, cmd.c2, cmd.c3, cmd.c4) = (c(0).into(), c(1).into(), c(2).into(), c(3).into(), c(4).into());
                desc = TmaDescImage::from_bytes(&map.encode());
            }
            _ => return Ok(None),
        }
        Ok(Some((cmd, desc)))
    }

    /// Sends the prefetches of `ins` (cp.async.bulk.prefetch.L2, PTX 9.7.9.25.4.3;
    /// cp.async.bulk.prefetch.tensor, PTX 9.7.9.25.5.4) to CTA `c`'s TmaEngine: one
    /// command per lane, whose sector reads reach the global-memory model and whose data the
    /// unit drops (no architectural effect, no completion); tile and im2col mode (PTX 5.5.4).
    fn send_prefetch(&mut self, c: u32, w: u32, pc: u32, mask: u32, ins: &Instr) {
        if self.ctas[c as usize].tma.is_none() {
            return;
        }
        let at = self.cycle + self.cfg.tma.issue_cycles;
        for lane in 0..WARP as u32 {
            if mask >> lane & 1 == 0 {
                continue;
            }
            let mut cmd = TmaCmd::default();
            let mut desc = TmaDescImage::default();
            if ins.op == Opcode::CpAsyncBulkPrefetch {
                let cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask: 1 << lane, group: 1 << lane };
                let (src, size) = (cx.addr(ins, 0, lane), cx.src(ins, 1, lane));
                if size >= 1 << 20 {
                    continue;
                }
                cmd.kind = TmaCmdKind::BulkPrefetch;
                cmd.gaddr_lo = (src & 0xffff_ffff).into();
                cmd.gaddr_hi = (src >> 32).into();
                cmd.size = size.into();
            } else {
                let Some((map, coords, offs)) = self.quiet_tensor_operands((c, w, lane, pc), ins, 0, 1) else { continue };
                if coords.len() > 5 {
                    continue;
                }
                set_im2col(&mut cmd, ins.has(Mod::Im2col), &offs);
                let k = |i: usize| -> u64 { coords.get(i).map(|&v| v as i32 as u32 as u64).unwrap_or(0) };
                cmd.kind = TmaCmdKind::TensorPrefetch;
                cmd.dims = (coords.len() as u64).into();
                (cmd.c0, cmd.c1, cmd.c2, cmd.c3, cmd.c4) = (k(0).into(), k(1).into(), k(2).into(), k(3).into(), k(4).into());
                desc = TmaDescImage::from_bytes(&map.encode());
            }
            self.ctas[c as usize].tma_cmd_q.push_back((at, cmd, desc, 0));
        }
    }

    /// The tensor operands of thread `at` (CTA, warp, lane, pc) for its TmaEngine command: the
    /// map, the coordinates and, in im2col mode, the offsets (operand `offs_k`; the map is
    /// operand `map_k`). The golden body already made these checks at issue and reported what
    /// they found: they are evaluated again without a second report. None where they fail.
    fn quiet_tensor_operands(&mut self, at: (u32, u32, u32, u32), ins: &Instr, map_k: usize, offs_k: usize) -> Option<(TensorMap, Vec<i64>, Vec<i64>)> {
        let (c, w, lane, pc) = at;
        let findings = self.m.findings.len();
        let ub = self.m.cfg.ub;
        self.m.cfg.ub = hopsync_cosim::machine::UbMode::Error;
        let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask: 1 << lane, group: 1 << lane };
        let r = exec::tma_tensor_operands(&mut cx, ins, map_k, lane).and_then(|(map, coords)| {
            let offs = if ins.has(Mod::Im2col) { exec::tma_im2col_offsets(&mut cx, ins, offs_k, lane, map.rank())? } else { Vec::new() };
            Ok((map, coords, offs))
        });
        self.m.cfg.ub = ub;
        self.m.findings.truncate(findings);
        r.ok()
    }

    /// The RTL TmaEngine's command for a store from shared::cta to global memory (bulk or tiled
    /// tensor, PTX 9.7.9.25.4.1 / 9.7.9.25.5.2), or None for the forms it does not implement.
    fn rtl_store_command(&mut self, pieces: &[exec::TmaPiece], red: Option<(Mod, Mod)>, at: (u32, u32, u32, u32)) -> Result<Option<(TmaCmd, TmaDescImage)>, Stop> {
        let (c0, w0, lane, pc) = at;
        let thread = w0 * 32 + lane;
        if self.ctas[c0 as usize].tma.is_none() || thread >= 1 << 10 {
            return Ok(None);
        }
        let ins = &self.m.module().kernel.body[pc as usize];
        let mut cmd = TmaCmd { thread: (thread as u64).into(), ..Default::default() };
        if let Some((op, t)) = red {
            // The writes carry the reduction; global memory applies it (`clock_tma`).
            let Some((o, k)) = red_codes(op, t) else { return Ok(None) };
            cmd.red_op = o;
            cmd.red_type = k;
        }
        let mut desc = TmaDescImage::default();
        match ins.op {
            Opcode::CpAsyncBulk | Opcode::CpReduceAsyncBulk => {
                let [p] = pieces else { return Ok(None) };
                let (Some(Place::Shared(_, soff)), Place::Global(r, off)) = (p.src, p.dst) else { return Ok(None) };
                if soff >= 1 << 18 {
                    return Ok(None);
                }
                let g = self.m.global[r].base + off as u64;
                cmd.kind = TmaCmdKind::BulkStore;
                cmd.smem = (soff as u64).into();
                cmd.gaddr_lo = (g & 0xffff_ffff).into();
                cmd.gaddr_hi = (g >> 32).into();
                cmd.size = (p.len as u64).into();
            }
            Opcode::CpAsyncBulkTensor | Opcode::CpReduceAsyncBulkTensor if !ins.has(Mod::Im2col) && !ins.has(Mod::Im2colNoOffs) => {
                let Some((map, coords, _)) = self.quiet_tensor_operands(at, ins, 0, 0) else { return Ok(None) };
                let cx = Cx { m: &mut self.m, cta: c0, warp: w0, pc, mask: 1 << lane, group: 1 << lane };
                let a = cx.addr(ins, 1, lane);
                let Ok(Place::Shared(_, soff)) = self.m.resolve(c0, w0, lane, Some(Mod::SharedCta), a, 1) else { return Ok(None) };
                if soff >= 1 << 18 {
                    return Ok(None);
                }
                let c = |k: usize| -> u64 { coords.get(k).map(|&v| v as i32 as u32 as u64).unwrap_or(0) };
                cmd.kind = TmaCmdKind::TensorStore;
                cmd.dims = (coords.len() as u64).into();
                cmd.smem = (soff as u64).into();
                (cmd.c0, cmd.c1, cmd.c2, cmd.c3, cmd.c4) = (c(0).into(), c(1).into(), c(2).into(), c(3).into(), c(4).into());
                desc = TmaDescImage::from_bytes(&map.encode());
            }
            _ => return Ok(None),
        }
        Ok(Some((cmd, desc)))
    }

    /// Queues `cp.async.bulk.commit_group` of the lanes of `mask` (warp `w` of CTA `c`) to the
    /// CTA's TmaEngine, behind the stores issued before it (PTX 9.7.9.25.6.1).
    fn rtl_commit(&mut self, c: u32, w: u32, mask: u32) {
        let at = self.cycle + self.cfg.tma.issue_cycles;
        let cs = &mut self.ctas[c as usize];
        if cs.tma.is_none() {
            return;
        }
        for l in 0..32u32 {
            if mask >> l & 1 == 1 && w * 32 + l < 1 << 10 {
                let cmd = TmaCmd { kind: TmaCmdKind::CommitGroup, thread: ((w * 32 + l) as u64).into(), ..Default::default() };
                cs.tma_cmd_q.push_back((at, cmd, TmaDescImage::default(), u64::MAX));
            }
        }
    }

    /// Clocks CTA `c`'s TmaEngine when it has work: commands in, global reads answered after
    /// `[global] latency` from the engine's memory, 16-byte beats written into the destination
    /// CTAs' shared memory (booking their shared-memory pipes), complete-tx requests queued to
    /// the destination MbarrierUnits (local: async-copy port; remote: cluster port after the
    /// DSMEM latency).
    fn clock_tma(&mut self, c: u32, now: u64) -> Result<(), Stop> {
        let cs = &mut self.ctas[c as usize];
        if cs.tma.is_none() || (cs.tma_cmd_q.is_empty() && cs.tma_jobs.is_empty() && cs.tma_gmem.is_empty() && cs.tma_stores.is_empty() && !cs.tma_pf_busy && cs.tma_rd_data.is_none() && cs.tma_dsmem.is_empty()) {
            return Ok(());
        }
        // Beats for other CTAs land after crossing the DSMEM network.
        while let Some(&(at, d, wr)) = self.ctas[c as usize].tma_dsmem.front() {
            if at > now {
                break;
            }
            self.ctas[c as usize].tma_dsmem.pop_front();
            self.land_tma_beat(c, d, &wr, now)?;
        }
        let cs = &mut self.ctas[c as usize];
        self.active_this_cycle = true;
        self.unit_edges += 1;
        let cmd = cs.tma_cmd_q.front().filter(|h| h.0 <= now).map(|h| (h.1, h.2));
        let due = cs.tma_gmem.iter().enumerate().filter(|(_, r)| r.0 <= now).min_by_key(|(_, r)| r.0).map(|(k, _)| k);
        let due = due.map(|k| cs.tma_gmem.swap_remove(k));
        let resp = due.as_ref().map(|d| d.1);
        let rd_data = cs.tma_rd_data.take().unwrap_or_default();
        let rank = self.m.ctas[c as usize].rank;
        // A write reaches global memory with its acknowledgement ([global] latency after issue;
        // the L2 applies the byte mask).
        let mut acked = None;
        if let Some((_, _, Some((seq, q)))) = &due {
            let a = q.addr_lo.to_u64() | q.addr_hi.to_u64() << 32;
            let mask = q.mask_lo.to_u64() | q.mask_hi.to_u64() << 16;
            let mut data = [0u8; 32];
            data[..16].copy_from_slice(&q.data_lo.to_bytes());
            data[16..].copy_from_slice(&q.data_hi.to_bytes());
            // A reduction's write: each whole element of the mask is `old op new` (the L2's work on
            // silicon; the golden model's element function).
            let red = red_mods(q.red_op, q.red_type).map(|(o, t)| (o, t, t.type_bytes().unwrap_or(4) as usize));
            for g in &mut self.m.global {
                let (lo, hi) = (g.base, g.base + g.bytes.len() as u64);
                let step = red.map(|r| r.2).unwrap_or(1);
                for k in (0..32).step_by(step) {
                    let x = a + k as u64;
                    if mask >> k & 1 == 0 || x < lo || x + step as u64 > hi {
                        continue;
                    }
                    let at = (x - lo) as usize;
                    match red {
                        None => g.bytes[at] = data[k],
                        Some((o, t, eb)) => exec::tma_reduce_element(o, t, &mut g.bytes[at..at + eb], &data[k..k + eb]),
                    }
                }
            }
            self.m.progress();
            acked = Some(*seq);
        }
        let cs = &mut self.ctas[c as usize];
        let inputs = TmaInputs { cta_rank: rank, cmd, gmem_req_ready: true, gmem_resp: resp, smem_wr_ready: true, smem_rd_ready: true, smem_rd_data: rd_data, mbar_ready: true, wait_n: 0, wait_read: false, wait_thread: 0 };
        let out = cs.tma.as_mut().expect("checked").cycle(&inputs);
        if let Some((cm, _)) = cmd.filter(|_| out.cmd_ready) {
            cs.tma_cmd_q.pop_front();
            self.tma_unit_commands += 1;
            if matches!(cm.kind, TmaCmdKind::BulkPrefetch | TmaCmdKind::TensorPrefetch) {
                cs.tma_pf_busy = true;
            }
        }
        if out.idle && cs.tma_cmd_q.is_empty() {
            cs.tma_pf_busy = false;
        }
        if let Some(seq) = acked {
            let Some(s) = cs.tma_stores.iter_mut().find(|s| s.key == seq && s.unacked > 0) else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} got a write acknowledgement of store {seq}, which has none in flight")));
            };
            s.unacked -= 1;
        }
        if let Some(a) = out.smem_rd {
            // The store's source beat, from this CTA's shared memory the cycle after.
            let sm = &self.m.ctas[c as usize].smem;
            let mut b = [0u8; 16];
            for (k, x) in b.iter_mut().enumerate() {
                *x = sm.get(a as usize + k).copied().unwrap_or(0);
            }
            let cs = &mut self.ctas[c as usize];
            cs.tma_rd_data = Some(TmaData16::from_bytes(&b));
            cs.smem_free = cs.smem_free.max(now) + 1;
        }
        if let Some(q) = out.gmem_req.filter(|q| q.write) {
            let cs = &mut self.ctas[c as usize];
            let Some(s) = cs.tma_stores.iter_mut().find(|s| !s.issued) else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} wrote global memory with no store in flight")));
            };
            s.unacked += 1;
            let seq = s.key;
            let resp = TmaGmemResp { tag: q.tag, write: true, ..Default::default() };
            cs.tma_gmem.push((now + self.cfg.global.latency, resp, Some((seq, q))));
        }
        if out.store_read_done || out.store_writes_issued || acked.is_some() {
            self.tma_store_events(c, &out)?;
        }
        if let Some(q) = out.gmem_req.filter(|q| !q.write) {
            let a = q.addr_lo.to_u64() | q.addr_hi.to_u64() << 32;
            let mut bytes = [0u8; 32];
            for g in &self.m.global {
                let (lo, hi) = (g.base, g.base + g.bytes.len() as u64);
                for (k, b) in bytes.iter_mut().enumerate() {
                    let x = a + k as u64;
                    if x >= lo && x < hi {
                        *b = g.bytes[(x - lo) as usize];
                    }
                }
            }
            let resp = TmaGmemResp { tag: q.tag, write: false, data_lo: TmaData16::from_bytes(&bytes[..16]), data_hi: TmaData16::from_bytes(&bytes[16..]) };
            self.ctas[c as usize].tma_gmem.push((now + self.cfg.global.latency, resp, None));
        }
        let cluster = self.m.ctas[c as usize].cluster as usize;
        if let Some(wr) = out.smem_wr {
            let d = self.m.clusters[cluster].ctas.get(wr.cta.index()).copied();
            let Some(d) = d else { return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} wrote to cluster rank {}, outside its cluster", wr.cta.index()))) };
            if d == c {
                self.land_tma_beat(c, d, &wr, now)?;
            } else {
                let at = now + self.cfg.dsmem.latency;
                self.ctas[c as usize].tma_dsmem.push_back((at, d, wr));
            }
        }
        if let Some((req, to_rank, remote)) = out.mbar {
            let Some(d) = self.m.clusters[cluster].ctas.get(to_rank as usize).copied() else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} signalled cluster rank {to_rank}, outside its cluster")));
            };
            let cs = &mut self.ctas[c as usize];
            let Some((seq, op, dests)) = cs.tma_jobs.front_mut() else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} sent a complete-tx with no load in flight")));
            };
            if dests.front() != Some(&d) {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} signalled cta {d}; the load in flight (operation {seq}) signals {dests:?} next")));
            }
            dests.pop_front();
            let (seq, op) = (*seq, op.clone());
            if dests.is_empty() {
                cs.tma_jobs.pop_front();
            }
            exec::tma_land_guard(&mut self.m, &op, d);
            let TmaOp::ToShared { mbar, tx, at, .. } = &op else { unreachable!() };
            if req.tx_count.to_u64() != *tx as u64 || req.word.to_u64() != (*mbar / 8) as u64 {
                return Err(Stop::Unsupported(format!(
                    "the TmaEngine of cta {c} sent complete-tx of {} bytes on word {} of cta {d}; operation {seq} completes {tx} bytes on word {}",
                    req.tx_count.to_u64(),
                    req.word.to_u64(),
                    mbar / 8
                )));
            }
            if let Err((kind, msg)) = exec::tma_signal_target_check(&self.m, d, *mbar, *tx) {
                if let Some(i) = self.asyncs.iter().position(|a| a.seq == seq && matches!(a.kind, AsyncKind::Tma { cta: Some(x), .. } if x == d)) {
                    self.asyncs.remove(i);
                }
                let r = self.m.report(kind, msg, Some(*at));
                let cy = self.cycle;
                self.emit(Event::AsyncFault { cycle: cy, seq, cta: Some(d), kind });
                r?;
                let effect = self.tma_effect(&op, Some(d), false);
                self.emit(Event::TmaComplete { cycle: cy, seq, cta: Some(d), effect });
                return Ok(());
            }
            let q = Queued { at: now + self.cfg.tma.complete_tx_cycles + if remote { self.cfg.dsmem.latency } else { 0 }, req, tag: Tag::Async { seq } };
            if remote {
                self.ctas[d as usize].cluster_q.push_back(q);
            } else {
                self.ctas[d as usize].tma_q.push_back(q);
            }
        }
        if out.fault.valid {
            let name = out.fault.kind.name().unwrap_or("?");
            if out.fault.kind == TmaFaultKind::UnsupportedThreads {
                let t = out.fault.thread.to_u64();
                return Err(Stop::Unsupported(format!("{name} (the store of cta {c} warp {} lane {}; the TmaEngine keeps 4 bulk-group contexts)", t / 32, t % 32)));
            }
            return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} refused a command the golden model accepted: {name}")));
        }
        Ok(())
    }

    /// Writes (or reduces) a 16-byte beat of CTA `c`'s TmaEngine into CTA `d`'s shared memory at
    /// cycle `now`, booking `d`'s shared-memory pipe.
    fn land_tma_beat(&mut self, c: u32, d: u32, wr: &TmaSmemWrite, now: u64) -> Result<(), Stop> {
        let base = wr.addr.index();
        let data = wr.data.to_bytes();
        let m = wr.mask.to_u64();
        if wr.red_op != TmaRedOp::Copy {
            // cp.reduce.async.bulk into shared::cluster: the golden model's element-wise
            // reduction, applied to the beat (whole beats: elements never straddle one).
            let Some((o, t)) = red_mods(wr.red_op, wr.red_type) else { unreachable!("red_op is not Copy") };
            if m != 0xFFFF || base + 16 > self.m.ctas[d as usize].smem.len() {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} reduced a partial beat (mask {m:#x}) at {base:#x} of cta {d}")));
            }
            exec::tma_reduce_into(&mut self.m, Place::Shared(d, base), &data, o, t);
        } else {
            for (k, b) in data.iter().enumerate() {
                if m >> k & 1 == 1 && base + k < self.m.ctas[d as usize].smem.len() {
                    self.m.ctas[d as usize].smem[base + k] = *b;
                }
            }
        }
        let ds = &mut self.ctas[d as usize];
        ds.smem_free = ds.smem_free.max(now) + 1;
        self.m.progress();
        Ok(())
    }

    /// CTA `c`'s TmaEngine moved its stores on this cycle (`out`, and a write acknowledgement
    /// already counted): the oldest store without reads done completes its read event (the
    /// golden model's `TmaOp::ToGlobal` with data None: snapshot, `wait_group.read`), the oldest
    /// without writes issued is marked, and every store with its writes issued and acknowledged
    /// completes its write event (the bytes are the unit's writes, already in global memory).
    /// Each event's thread gets the unit's bulk-group view after the last event of the cycle.
    fn tma_store_events(&mut self, c: u32, out: &crate::units::TmaOutputs) -> Result<(), Stop> {
        let mut done: Vec<(u64, TmaOp)> = Vec::new();
        if out.store_read_done {
            let cs = &mut self.ctas[c as usize];
            let Some(k) = cs.tma_stores.iter().position(|s| !s.read) else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} finished a store's reads with no store in flight")));
            };
            cs.tma_stores[k].read = true;
            let (seq, op) = (cs.tma_stores[k].seq, cs.tma_stores[k].op.clone());
            self.m.progress();
            exec::complete_async(&mut self.m, AsyncOp::Tma(Box::new(op.clone())))?;
            let pend = std::mem::take(&mut self.m.pending);
            let [p] = pend.as_slice() else { unreachable!("a store's read event queues its write event") };
            let AsyncOp::Tma(next) = &p.op else { unreachable!("a store's read event queues its write event") };
            let s = &mut self.ctas[c as usize].tma_stores[k];
            s.seq = p.seq;
            s.op = (**next).clone();
            if let Some(a) = self.asyncs.iter_mut().find(|a| a.seq == seq) {
                a.seq = p.seq;
                a.kind = AsyncKind::Tma { op: next.clone(), cta: None };
            }
            done.push((seq, op));
        }
        let cs = &mut self.ctas[c as usize];
        if out.store_writes_issued {
            let Some(s) = cs.tma_stores.iter_mut().find(|s| !s.issued) else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} finished a store's writes with no store in flight")));
            };
            if !s.read {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} finished the writes of store {} before its reads", s.seq)));
            }
            s.issued = true;
        }
        // every store whose writes are issued and acknowledged (several in a cycle at most once)
        loop {
            let cs = &mut self.ctas[c as usize];
            let Some(k) = cs.tma_stores.iter().position(|s| s.read && s.issued && s.unacked == 0) else { break };
            let s = cs.tma_stores.remove(k).expect("found");
            exec::tma_complete_written(&mut self.m, &s.op);
            if let Some(i) = self.asyncs.iter().position(|a| a.seq == s.seq) {
                self.asyncs.remove(i);
            }
            done.push((s.seq, s.op));
        }
        if !self.recording() {
            return Ok(());
        }
        let n = done.len();
        for (k, (seq, op)) in done.iter().enumerate() {
            let mut effect = self.tma_effect(op, None, false);
            let TmaOp::ToGlobal { at, .. } = op else { unreachable!() };
            let last_of_thread = !done[k + 1..n].iter().any(|(_, o)| matches!(o, TmaOp::ToGlobal { at: a, .. } if (a.0, a.1, a.2) == (at.0, at.1, at.2)));
            effect.bulk = if last_of_thread { self.rtl_bulk_view(c, at.1, at.2) } else { None };
            let cy = self.cycle;
            self.emit(Event::TmaComplete { cycle: cy, seq: *seq, cta: None, effect });
        }
        Ok(())
    }

    /// Thread (`w`, `l`) of CTA `c`'s bulk async-groups as its TmaEngine answers `wait_group`
    /// (N = 0..=3, with and without `.read`), when the unit sees all of them: every command
    /// issued so far accepted, no store of the CTA timed by the model. Else None.
    fn rtl_bulk_view(&mut self, c: u32, w: u32, l: u32) -> Option<exec::BulkView> {
        let cs = &mut self.ctas[c as usize];
        if !cs.tma_cmd_q.is_empty() || cs.tma_stores_mixed {
            return None;
        }
        let u = cs.tma.as_mut()?;
        let mut v = exec::BulkView::default();
        for n in 0..4u8 {
            let (d, pending) = u.wait_query(w * 32 + l, n, false);
            v.done[n as usize] = d;
            v.pending = pending;
            v.read_done[n as usize] = u.wait_query(w * 32 + l, n, true).0;
        }
        Some(v)
    }

    /// Times TMA operation `seq` issued by CTA `c` and queues its completion events (module
    /// doc; the constants are `[tma]` of sim/configs/sm90.toml).
    fn schedule_tma(&mut self, c: u32, seq: u64, op: TmaOp) {
        self.tma_model_ops += 1;
        let now = self.cycle;
        let cfg = self.cfg.clone();
        let t = &cfg.tma;
        // The engine moves 16-byte beats along rows: a row (a run of source-contiguous pieces)
        // of n bytes takes ceil(n / 16) beats, one more when it does not start on a 16-byte
        // boundary (hdl/src/tma_engine.rs "Throughput").
        let beats = match &op {
            TmaOp::ToShared { pieces, .. } => timing::tma_beats(pieces.iter().map(|p| (p.src.map(|s| self.m_addr(s)), p.len as u64))),
            TmaOp::ToGlobal { .. } => 0,
        };
        let cs = &mut self.ctas[c as usize];
        // Source bytes fetched from global memory (OOB fill is not fetched) or shared memory.
        let src_bytes = |pieces: &[exec::TmaPiece], global: bool| -> u64 { pieces.iter().filter(|p| matches!(p.src, Some(Place::Global(..))) == global && p.src.is_some()).map(|p| p.len as u64).sum() };
        match &op {
            TmaOp::ToShared { ctas, pieces, .. } => {
                let g = src_bytes(pieces, true);
                let sh = src_bytes(pieces, false);
                let box_bytes = beats * 16;
                let tensor = pieces.len() > 1 || pieces.iter().any(|p| p.src.is_none());
                let start = (now + t.issue_cycles).max(cs.tma_free) + if tensor { t.decode_cycles } else { 2 };
                // Global reads: latency, then the narrowest of the SM's path, the bytes in flight
                // over the latency and the shared-memory write port.
                let rate = timing::tma_rate(&cfg);
                let fetch = (g as f64 / rate).ceil() as u64 + sh.div_ceil(t.smem_bytes_per_cycle);
                // Each beat is written once per destination CTA (multicast fetches once).
                let write = (box_bytes * ctas.len() as u64).div_ceil(t.smem_bytes_per_cycle);
                let stream = fetch.max(write).max(1);
                let lat = if g > 0 { cfg.global.latency } else if sh > 0 { cfg.smem.latency } else { 0 };
                cs.tma_free = start + stream;
                if g > 0 {
                    cs.global_free = cs.global_free.max(start) + g.div_ceil(cfg.global.bytes_per_cycle);
                }
                for (k, &d) in ctas.iter().enumerate() {
                    // Destinations are written lowest rank first, one beat per cycle each; a
                    // remote CTA's beats cross the DSMEM network.
                    let order = ((k as u64 + 1) * box_bytes).div_ceil(t.smem_bytes_per_cycle);
                    let remote = if d != c { cfg.dsmem.latency } else { 0 };
                    let at = start + lat + stream.max(order) + remote;
                    self.asyncs.push(AsyncItem { seq, at, kind: AsyncKind::Tma { op: Box::new(op.clone()), cta: Some(d) }, queued: false });
                }
            }
            TmaOp::ToGlobal { pieces, data: None, .. } => {
                // The source reads: shared memory at the engine's port rate.
                let bytes: u64 = pieces.iter().map(|p| p.len as u64).sum();
                let tensor = pieces.len() > 1;
                let start = (now + t.issue_cycles).max(cs.tma_free) + if tensor { t.decode_cycles } else { 2 };
                let read = bytes.div_ceil(t.smem_bytes_per_cycle).max(1);
                cs.tma_free = start + read;
                let at = start + cfg.smem.latency + read;
                self.asyncs.push(AsyncItem { seq, at, kind: AsyncKind::Tma { op: Box::new(op), cta: None }, queued: false });
            }
            TmaOp::ToGlobal { pieces, .. } => {
                // The global writes, queued by the read event: latency plus the path's bandwidth.
                let bytes: u64 = pieces.iter().map(|p| p.len as u64).sum();
                let occ = bytes.div_ceil(cfg.global.bytes_per_cycle).max(1);
                let start = now.max(cs.global_free);
                cs.global_free = start + occ;
                let at = start + occ + cfg.global.latency;
                self.asyncs.push(AsyncItem { seq, at, kind: AsyncKind::Tma { op: Box::new(op), cta: None }, queued: false });
            }
        }
    }

    /// A flat address of a place, for contiguity (global: the buffer's device address; shared:
    /// CTA-tagged offsets that never touch a global range).
    fn m_addr(&self, p: Place) -> u64 {
        match p {
            Place::Global(r, o) => self.m.global[r].base + o as u64,
            Place::Shared(c, o) => (1u64 << 63) | ((c as u64) << 32) | o as u64,
            _ => 0,
        }
    }

    /// What the engine holds after (part of) a TMA operation completed, for the lockstep (empty
    /// when events are not recorded).
    fn tma_effect(&self, op: &TmaOp, cta: Option<u32>, complete_tx: bool) -> TmaEffect {
        if !self.recording() {
            return TmaEffect::default();
        }
        let mut e = TmaEffect::default();
        match op {
            TmaOp::ToShared { pieces, mbar, tx, red, id, .. } => {
                let c = cta.unwrap_or(0);
                // A reduction into bytes that another reduction not yet completed also reduces
                // into: the TmaEngines interleave their beats (PTX orders neither), so these
                // bytes may already hold part of the other's contribution, which the golden
                // model adds at that one's completion. They are compared where the other
                // completes, and where a thread reads them.
                let span = |ps: &[exec::TmaPiece]| -> Vec<(usize, usize)> { ps.iter().filter_map(|p| if let Place::Shared(_, o) = p.dst { Some((o, o + p.len as usize)) } else { None }).collect() };
                let mine = span(pieces);
                let shared = red.is_some()
                    && self.asyncs.iter().any(|a| match &a.kind {
                        AsyncKind::Tma { op, cta: Some(d) } if *d == c => match &**op {
                            TmaOp::ToShared { red: Some(_), id: other, pieces: ps, .. } if other != id => {
                                span(ps).iter().any(|&(a0, a1)| mine.iter().any(|&(b0, b1)| a0 < b1 && b0 < a1))
                            }
                            _ => false,
                        },
                        _ => false,
                    });
                for p in pieces.iter().filter(|_| !shared) {
                    if let Place::Shared(_, off) = p.dst {
                        let place = Place::Shared(c, off);
                        e.bytes.push((place, self.m.read(place, p.len as usize).to_vec()));
                    }
                }
                if complete_tx {
                    e.complete_tx = Some((c, *mbar, *tx, self.m.read_mbar_word(c, *mbar)));
                }
            }
            TmaOp::ToGlobal { pieces, data, at, .. } => {
                if data.is_some() {
                    for p in pieces {
                        e.bytes.push((p.dst, self.m.read(p.dst, p.len as usize).to_vec()));
                    }
                }
                e.bulk = Some(exec::bulk_view(&self.m, at.0, at.1, at.2));
            }
        }
        e
    }

    /// The mbarrier side of asynchronous operation `seq` was applied by CTA `c`'s unit.
    fn async_done(&mut self, seq: u64, c: u32, _change: Option<Option<SyncEvent>>) -> Result<(), Stop> {
        let Some(i) = self.asyncs.iter().position(|a| a.seq == seq && !matches!(a.kind, AsyncKind::Tma { cta: Some(d), .. } if d != c)) else { return Ok(()) };
        let a = self.asyncs.remove(i);
        if let AsyncKind::Tma { op, cta } = &a.kind {
            let effect = self.tma_effect(op, *cta, true);
            let cy = self.cycle;
            self.emit(Event::TmaComplete { cycle: cy, seq, cta: *cta, effect });
            return Ok(());
        }
        if let AsyncKind::Store(AsyncOp::RemoteWrite { cta, dst, data, red, .. }) = &a.kind {
            exec::apply_remote_write(&mut self.m, *cta, *dst, data, *red);
        }
        self.m.progress();
        let cy = self.cycle;
        self.emit(Event::Complete { cycle: cy, seq });
        Ok(())
    }

    // ---- issue -------------------------------------------------------------------------------

    fn issue(&mut self) -> Result<(), Stop> {
        if self.cycle < self.launched_at {
            return Ok(());
        }
        let sched = self.cfg.issue.schedulers as usize;
        let observe = self.probe.is_some();
        for c in 0..self.ctas.len() {
            let n = self.ctas[c].warps.len();
            for s in 0..sched {
                let members: Vec<usize> = (s..n).step_by(sched).collect();
                if members.is_empty() {
                    continue;
                }
                let start = self.ctas[c].rr[s] % members.len();
                let mut issued = false;
                for k in 0..members.len() {
                    let w = members[(start + k) % members.len()];
                    let st = self.eligibility(c, w);
                    if st == Stall::Ready && !issued {
                        self.ctas[c].rr[s] = (start + k + 1) % members.len();
                        self.issue_warp(c as u32, w as u32)?;
                        issued = true;
                        self.active_this_cycle = true;
                        if observe {
                            self.ctas[c].warps[w].stall = Stall::Issued;
                        }
                        if !observe {
                            break;
                        }
                    } else if observe {
                        self.ctas[c].warps[w].stall = st;
                    }
                }
            }
        }
        Ok(())
    }

    /// Why warp (c, w) cannot issue now, or `Ready`.
    fn eligibility(&mut self, c: usize, w: usize) -> Stall {
        let ws = &self.ctas[c].warps[w];
        if ws.exited {
            return Stall::Exited;
        }
        if let Some(op) = &ws.op {
            if op.parts.iter().any(|p| p.suspended) {
                return Stall::TryWaitSuspended;
            }
            let waiting_port = op.queued || op.parts.iter().any(|p| p.accepted < p.reqs.len());
            return if waiting_port { Stall::UnitBackpressure } else { Stall::MbarrierWait };
        }
        if ws.next_issue > self.cycle {
            return ws.wait_why;
        }
        let mw = &self.m.ctas[c].warps[w];
        let Some((pc, _)) = mw.next_group() else {
            for l in 0..WARP {
                match mw.lane[l] {
                    Lane::Blocked(Wait::ClusterBarrier(_)) => return Stall::ClusterBarrierWait,
                    Lane::Blocked(Wait::CpAsyncGroups(_) | Wait::BulkGroups(..)) => return Stall::AsyncWait,
                    _ => {}
                }
            }
            return if mw.exited() { Stall::Exited } else { Stall::BarrierWait };
        };
        let Some(inf) = self.info.get(pc as usize) else { return Stall::Ready };
        for &r in inf.srcs.iter().chain(&inf.dsts) {
            if ws.ready[r as usize] > self.cycle {
                return Stall::ScoreboardDep;
            }
        }
        if matches!(inf.class, Class::Mem | Class::CpAsync | Class::AsyncStore) {
            let pipe = self.lane0_pipe(c as u32, w as u32, pc);
            let cs = &self.ctas[c];
            let busy = match pipe {
                Pipe::Smem => cs.smem_free > self.cycle + self.cfg.smem.queue_cycles,
                Pipe::Global => cs.global_free > self.cycle + self.cfg.global.queue_cycles,
                Pipe::Dsmem => cs.dsmem_free > self.cycle + self.cfg.dsmem.queue_cycles,
                Pipe::Fixed(_) => false,
            };
            if busy {
                return Stall::MemoryThrottle;
            }
        }
        Stall::Ready
    }

    fn issue_warp(&mut self, c: u32, w: u32) -> Result<(), Stop> {
        let (pc, group) = self.m.ctas[c as usize].warps[w as usize].next_group().expect("eligible warp has a group");
        let module = self.m.module();
        let Some(ins) = module.kernel.body.get(pc as usize) else {
            // Falling off the end of the kernel is an implicit exit (no instruction retires).
            self.m.implicit_exit(c, w, group);
            self.m.progress();
            return self.on_exit(c, w);
        };
        let class = self.info[pc as usize].class;
        match class {
            Class::Mbarrier => self.issue_mbarrier(c, w, pc, group, ins),
            Class::NamedBarrier => self.issue_named(c, w, pc, group, ins),
            Class::ClusterBarrier => self.issue_cluster(c, w, pc, group, ins),
            _ => self.issue_golden(c, w, pc, group, ins, class),
        }
    }

    /// A non-synchronizing instruction: the golden body, at issue.
    fn issue_golden(&mut self, c: u32, w: u32, pc: u32, group: u32, ins: &'p Instr, class: Class) -> Result<(), Stop> {
        let mask = self.m.guard_mask(c, w, pc, group);
        let (ready_at, copy_done, store_done) = match class {
            Class::Mem | Class::CpAsync | Class::AsyncStore if mask != 0 => self.mem_cost(c, w, pc, mask, ins, class),
            _ => (self.cycle + self.info[pc as usize].latency, self.cycle, self.cycle),
        };
        self.m.instructions += 1;
        self.m.thread_instructions += mask.count_ones() as u64;
        if self.recording() {
            self.m.rec = Some(Retire { step: self.cycle, cta: c, warp: w, pc, mask, ..Default::default() });
        }
        let findings = self.m.findings.len();
        let flow = if mask == 0 {
            Flow::Next
        } else {
            let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group };
            exec::dispatch(&mut cx, ins)?
        };
        // A prefetch the golden model accepted (no finding) goes to the TmaEngine as reads.
        if mask != 0 && self.m.findings.len() == findings && matches!(ins.op, Opcode::CpAsyncBulkPrefetch | Opcode::CpAsyncBulkPrefetchTensor) {
            self.send_prefetch(c, w, pc, mask, ins);
        }
        self.m.advance(c, w, pc, group, mask, flow);
        if !self.m.pending.is_empty() {
            self.take_pending(c, w, copy_done, store_done)?;
        }
        if ins.op == Opcode::CpAsyncBulkCommitGroup && mask != 0 {
            self.rtl_commit(c, w, mask);
        }
        if let Some(r) = self.m.rec.take() {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: r });
        }
        let cfg = &self.cfg;
        let ws = &mut self.ctas[c as usize].warps[w as usize];
        for &d in &self.info[pc as usize].dsts {
            ws.ready[d as usize] = ready_at;
        }
        ws.next_issue = self.cycle + cfg.issue.warp_issue_cycles;
        ws.wait_why = Stall::Ready;
        match flow {
            Flow::Jump(_) => {
                ws.next_issue = self.cycle + cfg.issue.branch_cycles;
                ws.wait_why = Stall::Branch;
            }
            Flow::Exit => {
                self.m.progress();
                return self.on_exit(c, w);
            }
            Flow::Next => {}
        }
        if class == Class::Sleep && mask != 0 {
            let ns = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group }.src(ins, 0, mask.trailing_zeros()) as f64;
            let cycles = self.cfg.ns_to_cycles(ns.min(self.cfg.sync.nanosleep_max_ns));
            let ws = &mut self.ctas[c as usize].warps[w as usize];
            ws.next_issue = ws.next_issue.max(self.cycle + cycles.max(1));
            ws.wait_why = Stall::Sleep;
        }
        Ok(())
    }

    /// Lanes of (c, w) exited: partial barrier arrivals complete, and a warp whose lanes are all
    /// done leaves the units.
    fn on_exit(&mut self, c: u32, w: u32) -> Result<(), Stop> {
        let live = self.m.ctas[c as usize].warps[w as usize].live();
        // Lanes waiting at a non-aligned barrier for the rest of their warp: the warp arrives.
        for id in 0..16u8 {
            let partial = self.m.ctas[c as usize].warps[w as usize].bar_partial[id as usize];
            if partial != 0 && live != 0 && partial & live == live && self.ctas[c as usize].warps[w as usize].exit_arrival.is_none() {
                // As the golden model: the waiting lanes become the warp's arrival, with what
                // they executed (the first of them gives the count and the operation).
                let mw = &mut self.m.ctas[c as usize].warps[w as usize];
                mw.bar_partial[id as usize] = 0;
                let info = take_partial(mw, id);
                let first = info.first().cloned();
                let a = Arrival { id, lanes: info.iter().map(|e| (e.lane, e.pred, e.dst, e.sync)).collect(), red: first.as_ref().and_then(|f| f.red) };
                let count = first.and_then(|f| f.count);
                let req = arrival_req(&a, w, live, count);
                self.ctas[c as usize].warps[w as usize].exit_arrival = Some(a);
                let at = self.cycle + self.cfg.sync.named_barrier_request_cycles;
                self.ctas[c as usize].named_q.push_back((at, req, NamedTag::ExitPartial(w)));
            }
        }
        let cp = self.ctas[c as usize].warps[w as usize].cluster_partial;
        if cp != 0 && live != 0 && cp & live == live {
            self.ctas[c as usize].warps[w as usize].cluster_partial = 0;
            self.queue_cluster(c, w, ClusterBarrierOp::Arrive);
        }
        if live == 0 && !self.ctas[c as usize].warps[w as usize].exited {
            self.ctas[c as usize].warps[w as usize].exited = true;
            self.ctas[c as usize].named_exit_q.push_back(w);
            let k = self.m.ctas[c as usize].cluster as usize;
            let rank = self.m.ctas[c as usize].rank;
            self.clusters[k].exit_q.push_back((rank, w));
        }
        Ok(())
    }

    // ---- memory timing -----------------------------------------------------------------------

    fn place_of(&mut self, c: u32, w: u32, pc: u32, lane: u32, k: usize, size: usize, space: Option<Option<Mod>>) -> Option<Place> {
        let ins = &self.m.module().kernel.body[pc as usize];
        let cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask: 1 << lane, group: 1 << lane };
        let a = cx.addr(ins, k, lane);
        let sp = space.unwrap_or_else(|| cx.space(ins, k));
        self.m.resolve(c, w, lane, sp, a, size).ok()
    }

    fn pipe_of(&self, c: u32, p: Option<Place>) -> Pipe {
        match p {
            Some(Place::Shared(t, _)) if t == c => Pipe::Smem,
            Some(Place::Shared(_, _)) => Pipe::Dsmem,
            Some(Place::Global(..)) | None => Pipe::Global,
            Some(Place::Local(..)) => Pipe::Fixed(self.cfg.latency.local),
            Some(Place::Param(_)) => Pipe::Fixed(self.cfg.latency.param),
        }
    }

    fn access_size(ins: &Instr) -> usize {
        let eb = ins.ty().and_then(|t| t.type_bytes()).unwrap_or(4) as usize;
        let n = if ins.has(Mod::V8) {
            8
        } else if ins.has(Mod::V4) {
            4
        } else if ins.has(Mod::V2) {
            2
        } else {
            1
        };
        eb * n
    }

    fn lane0_pipe(&mut self, c: u32, w: u32, pc: u32) -> Pipe {
        let ins = &self.m.module().kernel.body[pc as usize];
        let Some(k) = self.info[pc as usize].addr else { return Pipe::Fixed(0) };
        let lane = self.m.ctas[c as usize].warps[w as usize].next_group().map(|g| g.1.trailing_zeros()).unwrap_or(0);
        match ins.op {
            Opcode::CpAsync => Pipe::Global,
            Opcode::TensormapCpFenceproxy => Pipe::Global,
            _ => {
                let p = self.place_of(c, w, pc, lane, k, 1, None);
                self.pipe_of(c, p)
            }
        }
    }

    /// Books the memory pipe of a memory instruction; returns (result ready, cp.async copy done,
    /// st.async arrival).
    fn mem_cost(&mut self, c: u32, w: u32, pc: u32, mask: u32, ins: &'p Instr, class: Class) -> (u64, u64, u64) {
        let now = self.cycle;
        let inf = self.info[pc as usize].clone();
        let Some(k) = inf.addr else { return (now + self.cfg.latency.alu, now, now) };
        let (size, global_k, space) = match ins.op {
            // cp.async [dst], [src], cp-size: the source is global.
            Opcode::CpAsync => {
                let l = mask.trailing_zeros();
                let sz = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group: mask }.src(ins, 2, l) as usize;
                (sz.max(1), 1, Some(Some(Mod::Global)))
            }
            Opcode::TensormapCpFenceproxy => (128, 0, Some(Some(Mod::Global))),
            _ => (Self::access_size(ins), k, None),
        };
        let mut places = Vec::with_capacity(mask.count_ones() as usize);
        for l in bits_of(mask) {
            if let Some(p) = self.place_of(c, w, pc, l, global_k, size, space) {
                places.push(p);
            }
        }
        let pipe = if class == Class::CpAsync { Pipe::Global } else { self.pipe_of(c, places.first().copied()) };
        let cfg = self.cfg.clone();
        let cs = &mut self.ctas[c as usize];
        let (ready, done) = match pipe {
            Pipe::Smem => {
                let acc: Vec<(u64, usize)> = places.iter().filter_map(|p| if let Place::Shared(_, o) = p { Some((*o as u64, size)) } else { None }).collect();
                let waves = timing::bank_wavefronts(&cfg, &acc);
                let start = now.max(cs.smem_free);
                cs.smem_free = start + waves;
                let lat = if inf.atomic { cfg.smem.atomic_latency } else { cfg.smem.latency };
                (start + waves - 1 + lat, start + waves)
            }
            Pipe::Global => {
                let acc: Vec<(u64, usize)> = places
                    .iter()
                    .filter_map(|p| if let Place::Global(r, o) = p { Some((self.m.global[*r].base + *o as u64, size)) } else { None })
                    .collect();
                let bytes = timing::sectors(&cfg, &acc) * cfg.global.sector_bytes;
                let occ = bytes.div_ceil(cfg.global.bytes_per_cycle);
                let start = now.max(cs.global_free);
                cs.global_free = start + occ;
                let lat = if inf.atomic { cfg.global.atomic_latency } else { cfg.global.latency };
                (start + occ + lat, start + occ + lat)
            }
            Pipe::Dsmem => {
                let bytes = (places.len() * size) as u64;
                let occ = bytes.div_ceil(cfg.dsmem.bytes_per_cycle).max(1);
                let start = now.max(cs.dsmem_free);
                cs.dsmem_free = start + occ;
                // loads and atomics wait for the round trip; stores arrive after one way
                (start + occ + 2 * cfg.dsmem.latency, start + occ + cfg.dsmem.latency)
            }
            Pipe::Fixed(l) => (now + l, now + l),
        };
        match class {
            Class::CpAsync => (now + cfg.latency.misc, done, done),
            Class::AsyncStore => {
                // st.async / red.async: the data (and complete-tx) cross the network once.
                let bytes = (mask.count_ones() as usize * size) as u64;
                let occ = bytes.div_ceil(cfg.dsmem.bytes_per_cycle).max(1);
                let start = now.max(cs.dsmem_free);
                cs.dsmem_free = start + occ;
                (now + cfg.latency.misc, now, start + occ + cfg.dsmem.latency)
            }
            _ => (if inf.load || inf.atomic { ready } else { now + cfg.latency.misc }, done, done),
        }
    }

    // ---- mbarrier instructions ---------------------------------------------------------------

    fn queue_mbar(&mut self, c: u32, w: u32, op: &SyncOp) {
        let now = self.cycle;
        for (k, p) in op.parts.iter().enumerate() {
            for (j, r) in p.reqs.iter().enumerate() {
                let tag = Tag::Part { cta: c, warp: w, part: k as u32, req: j as u32 };
                if p.remote {
                    let at = now + self.cfg.dsmem.latency;
                    self.ctas[p.obj.cta as usize].cluster_q.push_back(Queued { at, req: *r, tag });
                } else {
                    let at = now + self.cfg.sync.mbarrier_request_cycles;
                    self.ctas[c as usize].local_q.push_back(Queued { at, req: *r, tag });
                }
            }
        }
    }

    fn base_req(op: MbarrierOp, o: Obj, w: u32) -> MbarrierReq {
        MbarrierReq { op, word: ((o.off / 8) as u64).into(), warp: (w as u64).into(), ..Default::default() }
    }

    /// Front half of an mbarrier instruction: the golden model's operand evaluation and the
    /// checks the unit cannot make; then the unit requests.
    fn issue_mbarrier(&mut self, c: u32, w: u32, pc: u32, group: u32, ins: &'p Instr) -> Result<(), Stop> {
        let mask = self.m.guard_mask(c, w, pc, group);
        let kind = match ins.op {
            Opcode::MbarrierInit => MbarKind::Init,
            Opcode::MbarrierInval => MbarKind::Inval,
            Opcode::MbarrierExpectTx | Opcode::MbarrierCompleteTx => MbarKind::Tx,
            Opcode::MbarrierArrive | Opcode::MbarrierArriveDrop => MbarKind::Arrive { no_complete: ins.has(Mod::NoComplete) },
            Opcode::MbarrierTestWait | Opcode::MbarrierTryWait => MbarKind::Wait,
            Opcode::MbarrierPendingCount => MbarKind::PendingCount,
            _ => MbarKind::CpArrive,
        };
        let mut parts: Vec<Part> = Vec::new();
        if mask != 0 {
            let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group };
            parts = match kind {
                MbarKind::Init | MbarKind::Inval => mbar_simple(&mut cx, ins, kind)?,
                MbarKind::Tx => mbar_tx(&mut cx, ins)?,
                MbarKind::Arrive { no_complete } => mbar_arrive(&mut cx, ins, no_complete)?,
                MbarKind::Wait => mbar_wait(&mut cx, ins, &self.cfg)?,
                MbarKind::PendingCount => mbar_pending_count(&mut cx, ins)?,
                MbarKind::CpArrive => mbar_cp_arrive(&mut cx, ins)?,
            };
        }
        let op = SyncOp { pc, group, mask, kind: OpKind::Mbar(kind), parts, queued: false };
        self.queue_mbar(c, w, &op);
        self.ctas[c as usize].warps[w as usize].op = Some(op);
        self.try_retire(c, w)
    }

    /// Retires the in-flight instruction of (c, w) if every part is done.
    fn try_retire(&mut self, c: u32, w: u32) -> Result<(), Stop> {
        let done = match &self.ctas[c as usize].warps[w as usize].op {
            Some(op) if matches!(op.kind, OpKind::Mbar(_)) => op.parts.iter().all(|p| p.done()),
            _ => false,
        };
        if !done {
            return Ok(());
        }
        let op = self.ctas[c as usize].warps[w as usize].op.take().unwrap();
        let OpKind::Mbar(kind) = op.kind else { unreachable!() };
        let ins = &self.m.module().kernel.body[op.pc as usize];
        self.m.instructions += 1;
        self.m.thread_instructions += op.mask.count_ones() as u64;
        // One word change per part (a merged .expect_tx arrive takes two unit operations).
        let sync: Vec<SyncEvent> = op
            .parts
            .iter()
            .filter_map(|p| match (p.old, p.new) {
                (Some(old), Some(new)) if old != new => Some(SyncEvent::Mbarrier { cta: p.obj.cta, offset: p.obj.off, old, new }),
                _ => None,
            })
            .collect();
        self.m.rec = Some(Retire { step: self.cycle, cta: c, warp: w, pc: op.pc, mask: op.mask, sync, ..Default::default() });
        {
            let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc: op.pc, mask: op.mask, group: op.group };
            mbar_back(&mut cx, ins, kind, &op.parts)?;
        }
        if kind == MbarKind::CpArrive {
            // The deferred arrive-ons, one per lane in lane order (their issue numbers).
            for p in &op.parts {
                for l in bits_of(p.lanes) {
                    self.m.seq += 1;
                    let seq = self.m.seq;
                    self.asyncs.push(AsyncItem { seq, at: self.cycle, kind: AsyncKind::Arrive { cta: p.obj.cta, off: p.obj.off, warp: w, lane: l, issuing_cta: c }, queued: false });
                }
            }
        }
        self.m.advance(c, w, op.pc, op.group, op.mask, Flow::Next);
        let rec = self.m.rec.take();
        if let (Some(r), true) = (rec, self.recording()) {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: r });
        }
        let back = self.cycle + self.cfg.sync.mbarrier_response_cycles;
        let ws = &mut self.ctas[c as usize].warps[w as usize];
        for &d in &self.info[op.pc as usize].dsts {
            ws.ready[d as usize] = back;
        }
        ws.next_issue = self.cycle + 1;
        ws.wait_why = Stall::MbarrierWait;
        Ok(())
    }

    // ---- named barriers ----------------------------------------------------------------------

    fn issue_named(&mut self, c: u32, w: u32, pc: u32, group: u32, ins: &'p Instr) -> Result<(), Stop> {
        let mask = self.m.guard_mask(c, w, pc, group);
        let mut kind = None;
        let mut req = None;
        if mask != 0 {
            let mut cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group };
            if let Some((k, r)) = named_front(&mut cx, ins)? {
                kind = Some(k);
                req = r;
            }
        }
        match (kind, req) {
            (Some(k), Some(r)) => {
                let op = SyncOp { pc, group, mask, kind: k, parts: Vec::new(), queued: true };
                self.ctas[c as usize].warps[w as usize].op = Some(op);
                let at = self.cycle + self.cfg.sync.named_barrier_request_cycles;
                self.ctas[c as usize].named_q.push_back((at, r, NamedTag::Op(w)));
                Ok(())
            }
            _ => {
                // No unit request: guard false, a finding in warn mode, or lanes that wait for
                // the rest of their warp (non-aligned). Retires now.
                self.retire_plain(c, w, pc, group, mask);
                Ok(())
            }
        }
    }

    /// Retires an instruction that needed no unit (its lane states already set).
    fn retire_plain(&mut self, c: u32, w: u32, pc: u32, group: u32, mask: u32) {
        self.m.instructions += 1;
        self.m.thread_instructions += mask.count_ones() as u64;
        self.m.advance(c, w, pc, group, mask, Flow::Next);
        if self.recording() {
            let cy = self.cycle;
            self.emit(Event::Retire { cycle: cy, rec: Retire { step: cy, cta: c, warp: w, pc, mask, ..Default::default() } });
        }
        let ws = &mut self.ctas[c as usize].warps[w as usize];
        ws.next_issue = self.cycle + self.cfg.issue.warp_issue_cycles;
        ws.wait_why = Stall::Ready;
    }

    /// The named-barrier instruction of (c, w) was accepted: it retires (returns its record when
    /// recording, to which a completion in the same cycle adds).
    fn retire_named(&mut self, c: u32, w: u32) -> Result<(u32, Option<Retire>), Stop> {
        let Some(op) = self.ctas[c as usize].warps[w as usize].op.take() else { return Ok((w, None)) };
        let OpKind::Named(a) = op.kind else { unreachable!() };
        self.m.instructions += 1;
        self.m.thread_instructions += op.mask.count_ones() as u64;
        self.m.advance(c, w, op.pc, op.group, op.mask, Flow::Next);
        self.apply_arrival(c, w, a);
        let ws = &mut self.ctas[c as usize].warps[w as usize];
        ws.next_issue = self.cycle + 1;
        ws.wait_why = Stall::BarrierWait;
        let rec = self.recording().then(|| Retire { step: self.cycle, cta: c, warp: w, pc: op.pc, mask: op.mask, ..Default::default() });
        Ok((w, rec))
    }

    /// The unit took warp w's arrival: `.sync`/`.red` lanes wait for the completion, `.arrive`
    /// lanes (those that waited for the rest of the warp included) go on; reductions remember
    /// where their results go.
    fn apply_arrival(&mut self, c: u32, w: u32, a: Arrival) {
        let gen = self.ctas[c as usize].bar_gen[a.id as usize];
        let mw = &mut self.m.ctas[c as usize].warps[w as usize];
        for &(l, _, _, sync) in &a.lanes {
            if sync {
                mw.lane[l as usize] = Lane::Blocked(Wait::NamedBarrier(a.id, gen));
            } else if mw.lane[l as usize] == Lane::Blocked(Wait::NamedBarrierWarp(a.id)) {
                mw.lane[l as usize] = Lane::Ready;
            }
        }
        if let Some(op) = a.red {
            let dsts: Vec<(u32, u32)> = a.lanes.iter().filter_map(|&(l, _, d, _)| d.map(|d| (l, d))).collect();
            self.ctas[c as usize].warps[w as usize].red = Some((a.id, dsts, op));
        }
        self.m.progress();
    }

    /// A named barrier completed: release its waiting warps and deliver bar.red results (into
    /// the record of the instruction that completed it, for its own warp, as the golden model
    /// logs them).
    fn release_named(&mut self, c: u32, id: u8, warps: u32, popc: u64, all: bool, any: bool, rec: Option<&mut (u32, Option<Retire>)>) -> (SyncEvent, Vec<(u32, u32, RegWrite)>) {
        let mut writes: Vec<(u32, u32, RegWrite)> = Vec::new();
        let gen = self.ctas[c as usize].bar_gen[id as usize];
        let back = self.cycle + self.cfg.sync.named_barrier_release_cycles;
        let (rec_warp, mut rec_r) = match rec {
            Some((w, r)) => (Some(*w), r.as_mut()),
            None => (None, None),
        };
        for w in bits_of(warps) {
            let mw = &mut self.m.ctas[c as usize].warps[w as usize];
            for l in 0..WARP {
                if mw.lane[l] == Lane::Blocked(Wait::NamedBarrier(id, gen)) {
                    mw.lane[l] = Lane::Ready;
                }
            }
            let ws = &mut self.ctas[c as usize].warps[w as usize];
            ws.next_issue = ws.next_issue.max(back);
            ws.wait_why = Stall::BarrierWait;
            if !ws.red.as_ref().is_some_and(|r| r.0 == id) {
                continue;
            }
            let (_, dsts, op) = ws.red.take().unwrap();
            let result = match op {
                Mod::Popc => popc,
                Mod::And => all as u64,
                _ => any as u64,
            };
            for (l, reg) in dsts {
                self.ctas[c as usize].warps[w as usize].ready[reg as usize] = back;
                let is_pred = self.m.module().kernel.regs[reg as usize].ty == Mod::Pred;
                let v = if is_pred { result & 1 } else { result & 0xffff_ffff };
                self.m.ctas[c as usize].warps[w as usize].regs[reg as usize * WARP + l as usize] = v;
                match writes.iter_mut().find(|x| x.1 == w && x.2.reg == reg) {
                    Some(x) => {
                        x.2.mask |= 1 << l;
                        x.2.values[l as usize] = v;
                    }
                    None => {
                        let mut values = vec![0; WARP];
                        values[l as usize] = v;
                        writes.push((c, w, RegWrite { reg, mask: 1 << l, values }));
                    }
                }
                if rec_warp == Some(w) {
                    if let Some(r) = rec_r.as_deref_mut() {
                        let saved = self.m.rec.replace(std::mem::take(r));
                        self.m.log_reg(RegId(reg), l, v);
                        *r = self.m.rec.take().unwrap_or_default();
                        self.m.rec = saved;
                    }
                }
            }
        }
        let arrived = std::mem::take(&mut self.ctas[c as usize].bar_arrived[id as usize]);
        self.ctas[c as usize].bar_gen[id as usize] += 1;
        self.m.progress();
        (SyncEvent::NamedBarrierRelease { cta: c, id: id as u32, warps: arrived }, writes)
    }

    // ---- cluster barrier ---------------------------------------------------------------------

    fn queue_cluster(&mut self, c: u32, w: u32, op: ClusterBarrierOp) {
        let k = self.m.ctas[c as usize].cluster as usize;
        let rank = self.m.ctas[c as usize].rank;
        let req = ClusterBarrierReq { op, cta: (rank as u64).into(), warp: (w as u64).into() };
        let at = self.cycle + self.cfg.sync.cluster_barrier_cycles;
        self.clusters[k].q.push_back((at, req, c, w));
    }

    fn issue_cluster(&mut self, c: u32, w: u32, pc: u32, group: u32, ins: &'p Instr) -> Result<(), Stop> {
        let mask = self.m.guard_mask(c, w, pc, group);
        let live = self.m.ctas[c as usize].warps[w as usize].live();
        let arrive = ins.op == Opcode::BarrierClusterArrive;
        if mask != 0 && ins.has(Mod::Aligned) && mask != live {
            let what = if arrive { "arrive" } else { "wait" };
            let msg = format!("`.aligned` barrier.cluster.{what} executed by lanes {mask:#010x} of live {live:#010x}");
            self.m.report(FindingKind::ClusterBarrierAlignedDivergent, msg, Some((c, w, mask.trailing_zeros(), pc)))?;
        }
        if mask == 0 {
            self.retire_plain(c, w, pc, group, mask);
            return Ok(());
        }
        if arrive {
            // PTX 9.7.13.3: "each thread must arrive at the barrier only once before the barrier
            // completes", and arrives again after a wait: the golden model's per-thread side check
            // (the unit sees only the current phase's arrivals).
            let phase = self.clusters[self.m.ctas[c as usize].cluster as usize].phase;
            for l in bits_of(mask) {
                if self.m.ctas[c as usize].warps[w as usize].cluster_arrival[l as usize].is_some() {
                    let msg = format!("thread arrives on the cluster barrier again before waiting (phase {phase})");
                    self.m.report(FindingKind::ClusterBarrierArriveTwice, msg, Some((c, w, l, pc)))?;
                    continue;
                }
                self.m.ctas[c as usize].warps[w as usize].cluster_arrival[l as usize] = Some(phase);
            }
            let arriving = self.ctas[c as usize].warps[w as usize].cluster_partial | mask;
            if arriving & live != live {
                // Non-aligned and divergent: the warp arrives once all its live lanes did.
                self.ctas[c as usize].warps[w as usize].cluster_partial = arriving;
                self.retire_plain(c, w, pc, group, mask);
                return Ok(());
            }
            self.ctas[c as usize].warps[w as usize].cluster_partial = 0;
            let op = if ins.has(Mod::Relaxed) { ClusterBarrierOp::ArriveRelaxed } else { ClusterBarrierOp::Arrive };
            self.queue_cluster(c, w, op);
            self.ctas[c as usize].warps[w as usize].op = Some(SyncOp { pc, group, mask, kind: OpKind::ClusterArrive, parts: Vec::new(), queued: true });
        } else {
            self.queue_cluster(c, w, ClusterBarrierOp::Wait);
            self.ctas[c as usize].warps[w as usize].op = Some(SyncOp { pc, group, mask, kind: OpKind::ClusterWait, parts: Vec::new(), queued: true });
        }
        Ok(())
    }

    fn retire_cluster(&mut self, c: u32, w: u32, blocked: bool) -> Result<Option<Retire>, Stop> {
        let Some(op) = self.ctas[c as usize].warps[w as usize].op.take() else { return Ok(None) };
        self.m.instructions += 1;
        self.m.thread_instructions += op.mask.count_ones() as u64;
        self.m.advance(c, w, op.pc, op.group, op.mask, Flow::Next);
        let phase = self.clusters[self.m.ctas[c as usize].cluster as usize].phase;
        if matches!(op.kind, OpKind::ClusterWait) {
            for l in bits_of(op.mask) {
                self.m.ctas[c as usize].warps[w as usize].cluster_arrival[l as usize] = None;
            }
        }
        if blocked {
            let mw = &mut self.m.ctas[c as usize].warps[w as usize];
            for l in bits_of(op.mask) {
                mw.lane[l as usize] = Lane::Blocked(Wait::ClusterBarrier(phase));
            }
        }
        self.m.progress();
        let ws = &mut self.ctas[c as usize].warps[w as usize];
        ws.next_issue = self.cycle + self.cfg.sync.cluster_barrier_cycles;
        ws.wait_why = Stall::ClusterBarrierWait;
        Ok(self.recording().then(|| Retire { step: self.cycle, cta: c, warp: w, pc: op.pc, mask: op.mask, ..Default::default() }))
    }

    // ---- observation -------------------------------------------------------------------------

    fn observe(&mut self) {
        let mut views = std::mem::take(&mut self.views);
        views.clear();
        // The run's last sample is the one the waveform holds to its end: it shows the warps
        // that exited as Exited, the last one's `ret` of this cycle included.
        let run_done = self.finished();
        for (ci, c) in self.ctas.iter().enumerate() {
            for (wi, w) in c.warps.iter().enumerate() {
                let mw = &self.m.ctas[ci].warps[wi];
                let pc = mw.next_group().map(|g| g.0).unwrap_or_else(|| (0..WARP).filter(|&l| mw.lane[l] != Lane::Done).map(|l| mw.pc[l]).min().unwrap_or(0));
                let live = (0..WARP).filter(|&l| mw.lane[l] != Lane::Done).fold(0u32, |m, l| m | 1 << l);
                let state = if self.cycle < self.launched_at {
                    WarpActivity::NotLaunched
                } else if w.exited && w.op.is_none() {
                    WarpActivity::Exited
                } else if w.op.is_some() {
                    WarpActivity::InSync
                } else if mw.lane.contains(&Lane::Ready) {
                    WarpActivity::Runnable
                } else {
                    match mw.lane.iter().find_map(|l| if let Lane::Blocked(b) = l { Some(*b) } else { None }) {
                        Some(Wait::NamedBarrier(..) | Wait::NamedBarrierWarp(_)) => WarpActivity::NamedBarrier,
                        Some(Wait::ClusterBarrier(_)) => WarpActivity::ClusterBarrier,
                        Some(Wait::CpAsyncGroups(_) | Wait::BulkGroups(..)) => WarpActivity::AsyncGroups,
                        None => WarpActivity::Exited,
                    }
                };
                let stall = if run_done && w.exited { Stall::Exited } else { w.stall };
                views.push(WarpView { cta: ci as u32, warp: wi as u32, pc, stall, state, live });
            }
        }
        let mut cluster_of = vec![0u32; self.ctas.len()];
        for (k, cl) in self.m.clusters.iter().enumerate() {
            for &c in &cl.ctas {
                cluster_of[c as usize] = k as u32;
            }
        }
        let snap = Snapshot {
            cycle: self.cycle,
            warps: &views,
            module: self.m.module(),
            ctas: self
                .ctas
                .iter()
                .zip(&cluster_of)
                .map(|(c, &k)| CtaUnits { cluster: k, mbarrier: &c.mbar, named: &c.named, smem_booked_until: c.smem_free, global_booked_until: c.global_free, dsmem_booked_until: c.dsmem_free })
                .collect(),
            clusters: self.clusters.iter().map(|c| &c.unit).collect(),
            period_ps: self.cfg.period_ps(),
        };
        if let Some(p) = self.probe.as_mut() {
            p.cycle(&snap);
        }
        self.views = views;
    }
}

// ---- front and back halves of the mbarrier instructions (golden operand evaluation) -------

fn is_valid(cx: &Cx<'_, '_>, o: Obj) -> bool {
    cx.m.ctas[o.cta as usize].mbarriers.contains_key(&o.off)
}

fn describe_fail(cx: &mut Cx<'_, '_>, k: FindingKind, o: Obj, lane: u32, what: &str) -> Result<(), Stop> {
    let state = exec::describe(cx.m, o);
    cx.finding(k, lane, format!("{what}: {state}"))
}

fn mbar_simple(cx: &mut Cx<'_, '_>, i: &Instr, kind: MbarKind) -> Result<Vec<Part>, Stop> {
    let mut parts = Vec::new();
    for l in exec::lanes(cx.mask) {
        let o = exec::locate(cx, i, 0, l)?;
        let mut r = Engine::base_req(if kind == MbarKind::Init { MbarrierOp::Init } else { MbarrierOp::Inval }, o, cx.warp);
        if kind == MbarKind::Init {
            r.count = (cx.src(i, 1, l).min(u32::MAX as u64)).into();
        }
        parts.push(Part::new(o, 1 << l, vec![r], o.cta != cx.cta));
    }
    Ok(parts)
}

fn mbar_tx(cx: &mut Cx<'_, '_>, i: &Instr) -> Result<Vec<Part>, Stop> {
    let complete = i.op == Opcode::MbarrierCompleteTx;
    let name = if complete { "mbarrier.complete_tx" } else { "mbarrier.expect_tx" };
    let mut parts = Vec::new();
    for l in exec::lanes(cx.mask) {
        let o = exec::locate(cx, i, 0, l)?;
        let tx = cx.src(i, 1, l);
        if is_valid(cx, o) && tx > mb::MAX_TX as u64 {
            describe_fail(cx, FindingKind::MbarrierTxCountOutOfRange, o, l, &format!("{name} of {tx} bytes"))?;
            continue;
        }
        let mut r = Engine::base_req(if complete { MbarrierOp::CompleteTx } else { MbarrierOp::ExpectTx }, o, cx.warp);
        r.tx_count = tx.min(u32::MAX as u64).into();
        parts.push(Part::new(o, 1 << l, vec![r], o.cta != cx.cta));
    }
    Ok(parts)
}

/// mbarrier.arrive / arrive_drop: the golden model's per-lane checks and per-object merge
/// (docs/MBARRIER_ENCODING.md "Warps": one request per object with counts and tx summed; the
/// `.noComplete` forms per group of lanes with equal counts).
fn mbar_arrive(cx: &mut Cx<'_, '_>, i: &Instr, no_complete: bool) -> Result<Vec<Part>, Stop> {
    let drop = i.op == Opcode::MbarrierArriveDrop;
    let expect = i.has(Mod::ExpectTx);
    let name = if drop { "mbarrier.arrive_drop" } else { "mbarrier.arrive" };
    let mut reqs: Vec<(u32, Obj, u64, u64)> = Vec::new();
    for l in exec::lanes(cx.mask) {
        let o = exec::locate(cx, i, 1, l)?;
        // The golden model's own checks (one function, so the engines cannot drift).
        let Some((count, tx)) = exec::arrive_operands(cx, i, o, l)? else { continue };
        reqs.push((l, o, count, tx));
    }
    let mut groups: Vec<(Obj, u64, u32)> = Vec::new();
    for &(l, o, count, _) in &reqs {
        let key = if no_complete { count } else { 0 };
        match groups.iter_mut().find(|(g, k, _)| g.cta == o.cta && g.off == o.off && *k == key) {
            Some(g) => g.2 |= 1 << l,
            None => groups.push((o, key, 1 << l)),
        }
    }
    let mut parts = Vec::new();
    for (o, _, mask) in groups {
        let members: Vec<&(u32, Obj, u64, u64)> = reqs.iter().filter(|r| mask >> r.0 & 1 == 1).collect();
        let count: u64 = members.iter().map(|r| r.2).sum();
        let tx: u64 = members.iter().map(|r| r.3).sum();
        let l = mask.trailing_zeros();
        if count > mb::MAX_COUNT as u64 || tx > mb::MAX_TX as u64 {
            let k = if count > mb::MAX_COUNT as u64 { FindingKind::MbarrierCountOutOfRange } else { FindingKind::MbarrierTxCountOutOfRange };
            describe_fail(cx, k, o, l, &format!("{name} by lanes {mask:#010x}: merged count {count}, tx {tx}"))?;
            continue;
        }
        // PTX 9.7.13.15.4: no arrive in the next phase before a wait returned true in this one
        // (a side check of the golden model's shadow; the unit checks validity itself).
        if let Some(s) = cx.m.ctas[o.cta as usize].mbarriers.get(&o.off) {
            if !s.waited_prev {
                describe_fail(
                    cx,
                    FindingKind::MbarrierArriveBeforeWait,
                    o,
                    l,
                    &format!("{name} in a new phase before any test_wait/try_wait returned true for the phase that just completed (PTX 9.7.13.15.4)"),
                )?;
                continue;
            }
        }
        let w = cx.warp;
        let (arrive_op, expect_op) = match (drop, no_complete, expect) {
            (false, true, _) => (MbarrierOp::ArriveNoComplete, None),
            (true, true, _) => (MbarrierOp::ArriveDropNoComplete, None),
            (false, false, true) if members.len() == 1 => (MbarrierOp::ArriveExpectTx, None),
            (true, false, true) if members.len() == 1 => (MbarrierOp::ArriveDropExpectTx, None),
            (false, false, true) => (MbarrierOp::Arrive, Some(MbarrierOp::ExpectTx)),
            (true, false, true) => (MbarrierOp::ArriveDrop, Some(MbarrierOp::ExpectTx)),
            (false, false, false) => (MbarrierOp::Arrive, None),
            (true, false, false) => (MbarrierOp::ArriveDrop, None),
        };
        let mut rs = Vec::new();
        if let Some(e) = expect_op {
            // A merged multi-lane .expect_tx arrive: expect-tx of the summed bytes, then the
            // arrive of the summed count (the unit's .expect_tx ops arrive with count 1).
            let mut r = Engine::base_req(e, o, w);
            r.tx_count = tx.into();
            rs.push(r);
        }
        let mut r = Engine::base_req(arrive_op, o, w);
        r.count = count.into();
        r.tx_count = tx.into();
        rs.push(r);
        let mut p = Part::new(o, mask, rs, o.cta != cx.cta);
        p.per = members[0].2;
        parts.push(p);
    }
    Ok(parts)
}

fn mbar_wait(cx: &mut Cx<'_, '_>, i: &Instr, cfg: &SmConfig) -> Result<Vec<Part>, Stop> {
    let parity = i.has(Mod::Parity);
    let try_ = i.op == Opcode::MbarrierTryWait;
    let mut parts: Vec<Part> = Vec::new();
    let mut keys: Vec<(u32, u32, u64)> = Vec::new();
    for l in exec::lanes(cx.mask) {
        let o = exec::locate(cx, i, 1, l)?;
        if o.remote || i.has(Mod::SharedCluster) {
            describe_fail(
                cx,
                FindingKind::MbarrierClusterAddressUnsupported,
                o,
                l,
                &format!("`{}` on a .shared::cluster mbarrier address (cta {} shared 0x{:x}): only arrive, expect_tx and complete_tx support it (PTX 9.7.13.15.8)", i.op.name(), o.cta, o.off),
            )?;
            continue;
        }
        let arg = cx.src(i, 2, l);
        if !parity && is_valid(cx, o) {
            exec::wait_phase_check(cx, o, l, arg)?;
        }
        // Silicon compares only the token's phase parity (bit 63; DESIGN.md): lanes whose tokens
        // agree there ask the same question, in one request.
        let key_arg = if parity { arg & 1 } else { arg >> 63 };
        match keys.iter().position(|k| k.0 == o.cta && k.1 == o.off && k.2 == key_arg) {
            Some(k) => parts[k].lanes |= 1 << l,
            None => {
                keys.push((o.cta, o.off, key_arg));
                let mut r = Engine::base_req(MbarrierOp::TestWait, o, cx.warp);
                if parity {
                    r.op = MbarrierOp::TestWaitParity;
                    r.phase_parity = arg & 1 == 1;
                } else {
                    r.token = MbarrierWord::from_u64(arg);
                }
                if try_ {
                    r.op = if parity { MbarrierOp::TryWaitParity } else { MbarrierOp::TryWait };
                    if i.operands.len() > 3 {
                        let ns = cx.src(i, 3, l) as f64;
                        r.suspend_time_hint = cfg.ns_to_cycles(ns).min(u32::MAX as u64 - 4).into();
                        r.has_suspend_time_hint = true;
                    }
                }
                parts.push(Part::new(o, 1 << l, vec![r], false));
            }
        }
    }
    if parts.len() > 1 {
        // The unit's waiter table holds one try_wait per warp: a warp waiting on several
        // (object, phase) pairs at once tests them without suspending (try_wait may return
        // false at once).
        for p in &mut parts {
            for r in &mut p.reqs {
                r.op = match r.op {
                    MbarrierOp::TryWait => MbarrierOp::TestWait,
                    MbarrierOp::TryWaitParity => MbarrierOp::TestWaitParity,
                    x => x,
                };
            }
        }
    }
    Ok(parts)
}

fn mbar_pending_count(cx: &mut Cx<'_, '_>, i: &Instr) -> Result<Vec<Part>, Stop> {
    let mut parts: Vec<Part> = Vec::new();
    let mut tokens: Vec<u64> = Vec::new();
    for l in exec::lanes(cx.mask) {
        let token = cx.src(i, 1, l);
        if !cx.m.nocomplete_tokens.contains(&token) {
            cx.finding(
                FindingKind::MbarrierPendingCountBadToken,
                l,
                format!("mbarrier.pending_count on state 0x{token:016x}, which no .noComplete arrive returned (PTX 9.7.13.15.17)"),
            )?;
        }
        match tokens.iter().position(|t| *t == token) {
            Some(k) => parts[k].lanes |= 1 << l,
            None => {
                tokens.push(token);
                let o = Obj { cta: cx.cta, off: 0, remote: false };
                let mut r = Engine::base_req(MbarrierOp::PendingCount, o, cx.warp);
                r.token = MbarrierWord::from_u64(token);
                parts.push(Part::new(o, 1 << l, vec![r], false));
            }
        }
    }
    Ok(parts)
}

fn mbar_cp_arrive(cx: &mut Cx<'_, '_>, i: &Instr) -> Result<Vec<Part>, Stop> {
    let noinc = i.has(Mod::Noinc);
    let mut parts = Vec::new();
    for l in exec::lanes(cx.mask) {
        let o = exec::locate(cx, i, 0, l)?;
        if !is_valid(cx, o) {
            cx.finding(FindingKind::MbarrierUninitialized, l, format!("cp.async.mbarrier.arrive on cta {} shared 0x{:x}, which holds no valid mbarrier", o.cta, o.off))?;
            continue;
        }
        // Without .noinc the pending count is raised at issue (the unit's CpAsyncArriveInc);
        // the arrive-on itself comes later from the async-copy path.
        let reqs = if noinc { Vec::new() } else { vec![Engine::base_req(MbarrierOp::CpAsyncArriveInc, o, cx.warp)] };
        let mut p = Part::new(o, 1 << l, reqs, o.cta != cx.cta);
        p.first_state = Some(0);
        parts.push(p);
    }
    Ok(parts)
}

/// Back half: the results of the unit's responses into registers, and the golden model's side
/// facts (tokens of .noComplete arrives, each lane's last arrive, waits that returned true).
fn mbar_back(cx: &mut Cx<'_, '_>, i: &Instr, kind: MbarKind, parts: &[Part]) -> Result<(), Stop> {
    match kind {
        MbarKind::Arrive { no_complete } => {
            for p in parts {
                let old = p.first_state.unwrap_or(0);
                let token = mb::token_of(old);
                let completed = match (p.old, p.new) {
                    (Some(a), Some(b)) => (a >> 63) != (b >> 63),
                    _ => false,
                };
                let token_phase = if completed { p.phase_after.saturating_sub(1) } else { p.phase_after };
                for (k, l) in exec::lanes(p.lanes).enumerate() {
                    let t = if no_complete {
                        let t = token + ((k as u64 * p.per) << 43);
                        cx.m.nocomplete_tokens.insert(t | p.lanes as u64);
                        t | p.lanes as u64
                    } else {
                        token
                    };
                    cx.dst(i, 0, l, t);
                    cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].last_arrive[l as usize] = Some((p.obj.cta, p.obj.off, token_phase));
                }
            }
        }
        MbarKind::Wait => {
            let mut any_false = None;
            for p in parts {
                let done = p.wait.unwrap_or(false);
                if done {
                    if let Some(s) = cx.m.ctas[p.obj.cta as usize].mbarriers.get_mut(&p.obj.off) {
                        if !s.waited_prev {
                            s.waited_prev = true;
                            cx.m.progress();
                        }
                    }
                } else {
                    any_false = Some(p.obj);
                }
                for l in exec::lanes(p.lanes) {
                    cx.dst(i, 0, l, done as u64);
                }
            }
            let pc = cx.pc;
            cx.m.ctas[cx.cta as usize].warps[cx.warp as usize].polling = any_false.map(|o| Poll { cta: o.cta, offset: o.off, pc });
        }
        MbarKind::PendingCount => {
            for p in parts {
                for l in exec::lanes(p.lanes) {
                    cx.dst(i, 0, l, p.pending_count);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Front half of bar / barrier: the golden model's operand evaluation and the checks the unit
/// cannot make (barrier id range, counts below a warp, `.aligned` divergence, the merge of a
/// divergent warp's lanes). Returns the op and its unit request (None: no request; the lanes'
/// states are set and the instruction retires at once).
fn named_front(cx: &mut Cx<'_, '_>, i: &Instr) -> Result<Option<(OpKind, Option<NamedBarrierReq>)>, Stop> {
    let aligned = i.op == Opcode::Bar || i.has(Mod::Aligned);
    let red = i.has(Mod::Red);
    let sync = i.has(Mod::Sync) || red;
    let (ai, bi, ci) = if red { (1, 2, 3) } else { (0, 1, 0) };
    let has_b = if red { i.operands.len() == 4 } else { i.operands.len() == 2 };
    let ci = if red && !has_b { 2 } else { ci };
    let lane0 = cx.first_lane();
    // The golden model's own operand checks (one function, so the engines cannot drift).
    let Some((id, count)) = exec::named_operands(cx, i, ai, bi, has_b)? else { return Ok(None) };
    let Some((live, arriving)) = exec::aligned_arrival(cx, id, aligned, lane0)? else { return Ok(None) };
    let dst = match (&i.operands[0], red) {
        (Operand::Reg(r), true) => Some(r.0),
        _ => None,
    };
    let red_op = [Mod::Popc, Mod::And, Mod::Or].into_iter().find(|m| i.has(*m));
    if arriving != live {
        // Non-aligned: these lanes wait for the rest of the warp (golden model: each remembers
        // what it executed).
        let own: Vec<PartialArrival> = exec::lanes(cx.mask)
            .map(|l| PartialArrival { id, lane: l, count, sync, red: if red { red_op } else { None }, pred: red && cx.src(i, ci, l) & 1 == 1, dst })
            .collect();
        let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
        warp.bar_partial[id as usize] = arriving;
        warp.bar_partial_lanes.extend(own);
        cx.block(cx.mask, Wait::NamedBarrierWarp(id));
        return Ok(None);
    }
    let warp = &mut cx.m.ctas[cx.cta as usize].warps[cx.warp as usize];
    warp.bar_partial[id as usize] = 0;
    let earlier = take_partial(warp, id);
    let lanes: Vec<(u32, bool, Option<u32>, bool)> = exec::lanes(arriving)
        .map(|l| match earlier.iter().find(|e| e.lane == l && cx.mask >> l & 1 == 0) {
            Some(e) => (l, e.pred, e.dst, e.sync),
            None => (l, red && cx.src(i, ci, l) & 1 == 1, dst, sync),
        })
        .collect();
    let a = Arrival { id, lanes, red: if red { red_op } else { None } };
    let req = arrival_req(&a, cx.warp, live, count);
    Ok(Some((OpKind::Named(a), Some(req))))
}

/// Removes and returns what the lanes of `warp` waiting at barrier `id` executed.
fn take_partial(warp: &mut hopsync_cosim::machine::Warp, id: u8) -> Vec<PartialArrival> {
    if !warp.bar_partial_lanes.iter().any(|e| e.id == id) {
        return Vec::new();
    }
    let (mine, rest) = std::mem::take(&mut warp.bar_partial_lanes).into_iter().partition(|e| e.id == id);
    warp.bar_partial_lanes = rest;
    mine
}

/// The NamedBarrierUnit request of a warp's arrival (one per warp: lanes = its live lanes).
fn arrival_req(a: &Arrival, w: u32, live: u32, count: Option<u32>) -> NamedBarrierReq {
    let pred = a.lanes.iter().filter(|e| e.1).fold(0u32, |m, e| m | 1 << e.0);
    let op = match a.red {
        Some(Mod::Popc) => NamedBarrierOp::RedPopc,
        Some(Mod::And) => NamedBarrierOp::RedAnd,
        Some(_) => NamedBarrierOp::RedOr,
        None if a.lanes.iter().any(|e| e.3) => NamedBarrierOp::Sync,
        None => NamedBarrierOp::Arrive,
    };
    NamedBarrierReq {
        op,
        barrier: (a.id as u64).into(),
        warp: (w as u64).into(),
        has_count: count.is_some(),
        count: (count.unwrap_or(0) as u64).into(),
        lanes: (live as u64).into(),
        pred: (pred as u64).into(),
    }
}

/// An im2col-mode tensor command (PTX 5.5.4): the `im2col` flag and the im2col offsets
/// (`tensorRank - 2` of them, below 2^16 as the golden model checked; W, H, D order).
fn set_im2col(cmd: &mut TmaCmd, im2col: bool, offs: &[i64]) {
    cmd.im2col = im2col;
    let o = |i: usize| -> u64 { offs.get(i).map(|&v| v as u64 & 0xffff).unwrap_or(0) };
    (cmd.o0, cmd.o1, cmd.o2) = (o(0).into(), o(1).into(), o(2).into());
}

/// The TmaEngine's reduction operators and the golden model's `.redOp` (PTX 9.7.9.25.4.2).
const RED_OPS: [(Mod, TmaRedOp); 8] = [
    (Mod::Add, TmaRedOp::Add),
    (Mod::Min, TmaRedOp::Min),
    (Mod::Max, TmaRedOp::Max),
    (Mod::Inc, TmaRedOp::Inc),
    (Mod::Dec, TmaRedOp::Dec),
    (Mod::And, TmaRedOp::And),
    (Mod::Or, TmaRedOp::Or),
    (Mod::Xor, TmaRedOp::Xor),
];

/// The TmaEngine's reduction element types and the golden model's `.type` (PTX 9.7.9.25.4.2:
/// into shared::cluster the first five, into global memory all).
const RED_TYPES: [(Mod, TmaRedType); 10] = [
    (Mod::B32, TmaRedType::B32),
    (Mod::U32, TmaRedType::U32),
    (Mod::S32, TmaRedType::S32),
    (Mod::B64, TmaRedType::B64),
    (Mod::U64, TmaRedType::U64),
    (Mod::S64, TmaRedType::S64),
    (Mod::F32, TmaRedType::F32),
    (Mod::F64, TmaRedType::F64),
    (Mod::F16, TmaRedType::F16),
    (Mod::Bf16, TmaRedType::Bf16),
];

/// The TmaEngine's codes of a reduction `.redOp.type`, None for a combination it has no code
/// for.
fn red_codes(op: Mod, t: Mod) -> Option<(TmaRedOp, TmaRedType)> {
    let o = RED_OPS.iter().find(|x| x.0 == op)?.1;
    let t = RED_TYPES.iter().find(|x| x.0 == t)?.1;
    Some((o, t))
}

/// The golden model's `(op, type)` of a reducing write ([`red_codes`] inverted; None: `Copy`).
fn red_mods(op: TmaRedOp, t: TmaRedType) -> Option<(Mod, Mod)> {
    let o = RED_OPS.iter().find(|x| x.1 == op)?.0;
    let t = RED_TYPES.iter().find(|x| x.1 == t)?.0;
    Some((o, t))
}
