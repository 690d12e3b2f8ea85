//! Data-race detection with happens-before (issue 17 section 1): vector clocks per agent and
//! FastTrack-style epochs per 4-byte word of shared memory (and of global memory with
//! `--race global`).
//!
//! **Agents.** A warp is one agent of the vector clocks. Each warp has three asynchronous agents
//! beside it: its cp.async copies, its bulk/TMA operations and its st.async/red.async stores. An
//! asynchronous operation gets an epoch of its warp's agent of that kind at issue and the issuing
//! warp's vector clock as it was then; it is ordered after what the issuer had seen, and its
//! accesses (when it lands) are checked with that clock.
//!
//! **Lanes of one warp.** Since Volta, lanes of a warp are threads scheduled independently: two
//! conflicting accesses by different lanes in different instructions race unless something
//! orders the lanes between them (CUDA C++ Programming Guide, "Independent Thread Scheduling" and
//! `__syncwarp`; PTX 9.7.13.2 bar.warp.sync "guarantees memory ordering among threads
//! participating in barrier"). The warp's clock ticks once per memory instruction, so an epoch
//! names one warp-instruction (its lanes' accesses are one access: lanes storing one word in one
//! `st` do not race), and every lane keeps the warp's clock at the last point that ordered it with
//! the others ([`orders_lanes`]: `bar.warp.sync`, `shfl/vote/match/redux/elect.sync`, any `.sync`
//! or `.aligned` warp-wide instruction, and every acquire the warp performs). Two accesses of one
//! warp by lanes `a` and `b` are ordered when both lanes passed such a point after the first.
//!
//! **Edges**, exactly from what the program performed (PTX 8 Memory Consistency Model):
//! - `bar`/`barrier` (9.7.13.1): every arrival (`.arrive`, `.sync`, `.red`, and a warp whose other
//!   lanes exited) releases into the barrier's generation; the waiters of `.sync`/`.red` acquire
//!   it when the generation completes;
//! - mbarrier (9.7.13.15): an arrive releases into the current phase (not `.relaxed`); the
//!   complete-tx of a TMA copy or st.async/red.async releases the operation (9.7.9.25.2,
//!   9.7.9.12); cp.async.mbarrier.arrive releases the thread's prior cp.async (9.7.13.15.15); a
//!   test_wait/try_wait that returns true acquires every completed phase (not `.relaxed`);
//! - `barrier.cluster.arrive` (`.release` by default, not `.relaxed`) / `wait` (`.acquire`) (9.7.13.3);
//! - `cp.async.wait_group`/`wait_all` (9.7.9.25.3) acquire the warp's completed cp.async;
//!   `cp.async.bulk.wait_group{.read}` (9.7.9.25.6.2) its completed bulk operations (reads);
//! - strong accesses (atomics, `.relaxed`/`.acquire`/`.release`/`.volatile` loads and stores,
//!   8.7) release and acquire through their 4-byte location and are not checked as data accesses;
//! - `fence.proxy.async` (9.7.13.4, 8.6): a generic write is visible to the async proxy (a TMA or
//!   bulk copy's read or write) only when a proxy fence by the writer lies between the write and
//!   the operation's issue in happens-before order; otherwise `ProxyRace`.
//!
//! Acquiring an asynchronous agent's clock orders the acquirer after all of that agent's
//! operations up to it, an mbarrier wait acquires every completed phase, an acquire orders all
//! lanes of the warp, and a write after reads by several lanes of one warp is checked against the
//! last of them: each can only hide a race, never invent one.
//!
//! **One bug, one finding.** The TMA engine's own checks (exec/tma.rs) run on every engine, in
//! execution order: `ProxyFenceMissing` (the writer executed no `fence.proxy.async` after its
//! write before the copy was issued) and `TmaReadBeforeComplete` (a generic access inside a TMA
//! destination before its phase completed). The detector adds what needs happens-before: a fence
//! that was executed but is not ordered between the write and the issue (`ProxyRace`), and the
//! races those checks cannot see. A pair they already named (same thread access, same
//! operation) is not named again.
//!
//! **Lifetime.** A CTA's shared memory is released when its last warp exits (PTX 9.7.13.3 asks
//! for a trailing cluster barrier before a CTA whose shared memory peers access exits): a DSMEM
//! access by another CTA must happen before one of the owner's warps' exit.
//!
//! All shadow memory is allocated here ([`Race::shadow_bytes`], [`estimate_bytes`]).

use crate::exec::Stop;
use crate::finding::FindingKind;
use crate::machine::{Machine, Place};
use hopsync_firmware::ir::{Instr, Mod, Space};
use hopsync_firmware::Opcode;
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;

/// Which memory the detector watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RaceMode {
    /// No race detection.
    Off,
    /// Shared memory (own CTA and DSMEM): the default for the golden engine.
    #[default]
    Shared,
    /// Shared and global memory (the whole grid is one happens-before domain).
    Global,
}

/// Agent kinds: the warp itself and its three asynchronous agents.
const THREAD: u32 = 0;
/// cp.async copies of the warp.
pub const CP: u32 = 1;
/// Bulk and tensor (TMA) operations of the warp.
pub const BULK: u32 = 2;
/// st.async / red.async of the warp.
pub const REMOTE: u32 = 3;
const KINDS: u32 = 4;
const NONE: u32 = u32::MAX;
/// Acquires remembered per warp ([`Race::vc_at`]): enough to tell what a warp had seen at a read
/// a few synchronizations back.
const ACQ_LOG: usize = 8;

/// An access epoch: which agent, at which of its clocks, from which site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ep {
    /// Agent index in the domain (NONE: no access).
    agent: u32,
    /// The agent's clock.
    clock: u32,
    /// Index into [`Race::sites`].
    site: u32,
}

const NO_EP: Ep = Ep { agent: NONE, clock: 0, site: 0 };

/// The shadow of one 4-byte word: its last write and its reads since.
#[derive(Debug, Clone, Copy)]
struct Word {
    /// Last write.
    w: Ep,
    /// The last read, when the reads since the write are ordered (FastTrack's read epoch).
    r: Ep,
    /// Index into [`Shadow::sets`] when concurrent reads are kept (NONE otherwise).
    rs: u32,
}

const EMPTY: Word = Word { w: NO_EP, r: NO_EP, rs: NONE };

/// The shadow words of one memory (a CTA's shared memory or a global region).
#[derive(Debug, Default)]
struct Shadow {
    /// Per 4-byte word.
    words: Vec<Word>,
    /// Read sets of words with concurrent reads.
    sets: Vec<Vec<Ep>>,
    /// Free entries of `sets`.
    free: Vec<u32>,
}

/// Where an access was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Site {
    /// THREAD, CP, BULK, REMOTE (the operation issued there), or EXIT.
    kind: u32,
    cta: u32,
    warp: u32,
    lane: u32,
    pc: u32,
}

const EXIT: u32 = 9;

/// An asynchronous operation in flight: its epoch and what its issuer had seen.
#[derive(Debug, Clone)]
struct Op {
    /// The issuing warp's vector clock at issue.
    snap: Rc<Vec<u32>>,
    /// Its asynchronous agent.
    agent: u32,
    /// Its epoch on that agent.
    clock: u32,
    /// For cp.async.mbarrier.arrive: the cp.async agent's clock at issue (the copies it waits for).
    cp_upto: u32,
    /// Issue site.
    site: u32,
    /// Issuing warp (global warp index).
    gw: usize,
}

/// Who accesses: a warp (its vector clock) or an operation.
#[derive(Clone, Copy)]
struct Who<'a> {
    agent: u32,
    clock: u32,
    vc: &'a [u32],
    site: u32,
    /// The access is by the async proxy (a bulk or tensor copy).
    async_proxy: bool,
    /// For a thread access: its lane and its warp's lane ordering ([`LaneSync`]).
    lane: Option<(u32, &'a LaneSync)>,
    /// Every access site (a prior access's lane).
    sites: &'a [Site],
}

impl Who<'_> {
    fn hb(&self, e: Ep) -> bool {
        e.agent == NONE || e.agent == self.agent && e.clock <= self.clock || self.vc.get(e.agent as usize).is_some_and(|&c| e.clock <= c)
    }

    /// Whether `e`, an access by another lane of this warp in another instruction, is not ordered
    /// with this access: no point ordered both lanes after it (module doc, "Lanes of one warp").
    fn lane_race(&self, e: Ep) -> bool {
        let Some((lane, ls)) = self.lane else { return false };
        if e.agent != self.agent || e.clock == self.clock {
            return false;
        }
        let other = self.sites[e.site as usize].lane;
        other != lane && !(ls.after(other, e.clock) && ls.after(lane, e.clock))
    }
}

/// The lane ordering of one warp: the warp's clock from which each lane is ordered after the
/// other lanes' earlier accesses.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LaneSync {
    /// Per lane: its last warp-level synchronization (`bar.warp.sync`, a `.sync` warp operation).
    lane: [u32; 32],
    /// The warp's last acquire (every lane).
    all: u32,
}

impl LaneSync {
    /// Lane `l` passed an ordering point after the access at clock `c`.
    fn after(&self, l: u32, c: u32) -> bool {
        self.all.max(self.lane[l as usize]) > c
    }
}

/// What kind of access a memory instruction makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A plain (weak) load.
    Read,
    /// A plain (weak) store.
    Write,
    /// A strong (morally strong, PTX 8.7) access: atomics, `.relaxed`/`.acquire`/`.release`/
    /// `.volatile` loads and stores; (acquires, releases).
    Strong(bool, bool),
    /// A `wgmma.mma_async` operand read: checked against earlier writes but not recorded. The
    /// warpgroup's operation reads its operands until a `wgmma.wait_group`, which the warp that
    /// releases the buffer may execute for the others (CUTLASS's consumer_release signals from
    /// one thread of the warpgroup), so a later write is ordered by that wait, not by the warp.
    OperandRead,
}

impl Access {
    /// The access `i` makes (`write`: a store).
    pub fn of(i: &Instr, write: bool, atomic: bool) -> Access {
        if atomic {
            return Access::Strong(true, true);
        }
        let strong = [Mod::Relaxed, Mod::Acquire, Mod::Release, Mod::Volatile, Mod::Mmio, Mod::AcqRel].iter().any(|m| i.has(*m));
        match (strong, write) {
            (false, false) => Access::Read,
            (false, true) => Access::Write,
            (true, false) => Access::Strong(true, false),
            (true, true) => Access::Strong(false, true),
        }
    }
}

/// A conflicting pair found.
struct Hit {
    prior: Ep,
    prior_write: bool,
    write: bool,
    proxy: bool,
    /// The word's write the prior read(s) saw (NO_EP: none, or the prior access is the write).
    before: Ep,
    /// Two lanes of one warp.
    lanes: bool,
}

/// The detector's whole state (one per [`Machine`]).
#[derive(Debug, Default)]
pub struct Race {
    mode: RaceMode,
    /// Warps per CTA.
    nwarps: u32,
    /// Agents per domain (a cluster, or the grid with `--race global`).
    dim: usize,
    /// Per CTA: its domain and its slot in it.
    domain: Vec<u32>,
    slot: Vec<u32>,
    /// Per domain: its CTAs by slot.
    members: Vec<Vec<u32>>,
    /// Per warp (cta * nwarps + warp): its vector clock.
    vc: Vec<Vec<u32>>,
    /// Per warp and asynchronous kind: the agent's own clock.
    aclock: Vec<u32>,
    /// Per warp: the largest epoch of its completed cp.async, bulk operations, bulk reads.
    cp_done: Vec<u32>,
    bulk_done: Vec<u32>,
    bulk_read: Vec<u32>,
    /// Per warp: the clocks at which it executed a `fence.proxy.async` (ascending).
    pfence: Vec<Vec<u32>>,
    /// Per warp: it executed a release fence (`fence.acq_rel`/`.sc`/`.release`, `membar`), so its
    /// `.relaxed` arrives release (PTX 8.9.2: a fence followed by a strong write is a release pattern).
    rel_fence: Vec<bool>,
    /// Per warp: what its `.relaxed` waits observed, acquired by its next acquire fence.
    pending_acq: Vec<Option<Vec<u32>>>,
    /// The snapshot taken for the current warp-instruction (instruction count, snapshot).
    snap: Option<(u64, Rc<Vec<u32>>)>,
    /// Operations in flight, by issue sequence number.
    ops: HashMap<u64, Op>,
    /// The operation completing now.
    pub(crate) completing: Option<u64>,
    /// Race findings are recorded and the run goes on, whatever the undefined-behaviour mode:
    /// the lockstep's golden side ([`crate::lockstep::Golden`]), whose engine under test keeps no
    /// happens-before clocks and so runs on after the race.
    pub(crate) go_on: bool,
    /// Per CTA: shared-memory shadow (allocated on first access).
    smem: Vec<Shadow>,
    /// Per global region: its shadow (`--race global`).
    global: Vec<Shadow>,
    /// Named barriers: (cta, id) -> the releases of the generation in progress.
    bars: HashMap<(u32, u8), Vec<u32>>,
    /// mbarriers: (cta, offset) -> (current phase's releases, all completed phases').
    mbars: HashMap<(u32, u32), (Vec<u32>, Vec<u32>)>,
    /// Per cluster: (current phase's releases, completed phases').
    clusters: Vec<(Vec<u32>, Vec<u32>)>,
    /// Strong-access locations: (domain, space, memory, word) -> releases.
    strong: HashMap<(u32, u8, u32, u64), Vec<u32>>,
    /// Per warp: the instruction count of its last data access (its clock ticks once per
    /// memory instruction).
    last_instr: Vec<u64>,
    /// Per warp: its lanes' ordering.
    lane_sync: Vec<LaneSync>,
    /// Per warp: its last acquires, (its clock from which the acquire is seen, its vector clock
    /// after it), and whether older ones were dropped.
    acq_log: Vec<VecDeque<(u32, Rc<Vec<u32>>)>>,
    acq_dropped: Vec<bool>,
    /// Per asynchronous operation (agent, clock): its issuer's clock at the issue.
    issue_clock: HashMap<(u32, u32), u32>,
    /// Per warp: exited.
    exited: Vec<bool>,
    /// Per CTA: the join of its exited warps' clocks, and how many exited.
    exit_vc: Vec<Vec<u32>>,
    exit_count: Vec<u32>,
    exit_site: Vec<u32>,
    /// Per CTA: accesses by other CTAs to its shared memory: agent -> (clock, site, offset).
    remote: Vec<HashMap<u32, (u32, u32, u32)>>,
    sites: Vec<Site>,
    site_ix: HashMap<Site, u32>,
    /// Pairs of sites already reported.
    reported: HashSet<(u32, u32)>,
}

/// Bytes of shadow memory a run of `prog` needs in `mode`: per 4-byte word of each CTA's shared
/// memory (and of every global buffer with `--race global`) one shadow word, and vectors of
/// `agents` clocks: per warp its clock and its pending acquire, per CTA its exit join and its
/// named barriers' generations in progress (16 ids), per cluster its barrier's two phases (read
/// sets, mbarrier phases, operations in flight and the per-warp acquire logs come on top, in
/// proportion to use), and per warp its lanes' ordering (33 clocks).
pub fn estimate_bytes(nctas: u64, smem_bytes: u64, global_bytes: u64, warps: u64, agents: u64, mode: RaceMode) -> u64 {
    let word = std::mem::size_of::<Word>() as u64;
    let words = match mode {
        RaceMode::Off => return 0,
        RaceMode::Shared => nctas * smem_bytes.div_ceil(4),
        RaceMode::Global => nctas * smem_bytes.div_ceil(4) + global_bytes.div_ceil(4),
    };
    // A cluster per CTA at most.
    let vectors = 2 * warps + 17 * nctas + 2 * nctas;
    let lanes = warps * std::mem::size_of::<LaneSync>() as u64;
    words.saturating_mul(word).saturating_add(vectors.saturating_mul(agents).saturating_mul(4)).saturating_add(lanes)
}

/// Agents of one happens-before domain (the length of every vector clock): `ctas_per_domain`
/// CTAs (a cluster; the whole grid with `--race global`) of `warps_per_cta` warps, each warp
/// with its asynchronous agents.
pub fn domain_agents(ctas_per_domain: u64, warps_per_cta: u64) -> u64 {
    ctas_per_domain.saturating_mul(warps_per_cta).saturating_mul(KINDS as u64)
}

impl Race {
    /// A detector that watches nothing.
    pub fn off() -> Race {
        Race { mode: RaceMode::Off, ..Race::default() }
    }

    /// Agents per happens-before domain (the length of every vector clock).
    pub fn agents(&self) -> usize {
        self.dim
    }

    /// Whether detection is on.
    #[inline]
    pub fn on(&self) -> bool {
        self.mode != RaceMode::Off
    }

    /// Bytes of shadow memory allocated now (shadow words, read sets, vector clocks).
    pub fn shadow_bytes(&self) -> u64 {
        let w = std::mem::size_of::<Word>() as u64;
        let e = std::mem::size_of::<Ep>() as u64;
        let sh = |s: &Shadow| s.words.len() as u64 * w + s.sets.iter().map(|v| v.len() as u64 * e).sum::<u64>();
        self.smem.iter().chain(self.global.iter()).map(sh).sum::<u64>()
            + (self.vc.len() as u64) * self.dim as u64 * 4
            + (self.lane_sync.len() * std::mem::size_of::<LaneSync>()) as u64
    }

    /// The detector for a machine's launch.
    pub fn new(m: &Machine<'_>, mode: RaceMode) -> Race {
        if mode == RaceMode::Off || m.ctas.is_empty() {
            return Race { mode: RaceMode::Off, ..Race::default() };
        }
        let nwarps = m.ctas[0].warps.len() as u32;
        let global = mode == RaceMode::Global;
        let nctas = m.ctas.len();
        let domain: Vec<u32> = m.ctas.iter().map(|c| if global { 0 } else { c.cluster }).collect();
        let slot: Vec<u32> = m.ctas.iter().map(|c| if global { c.id } else { c.rank }).collect();
        let members: Vec<Vec<u32>> = if global { vec![(0..nctas as u32).collect()] } else { m.clusters.iter().map(|c| c.ctas.clone()).collect() };
        let per = members.iter().map(|v| v.len()).max().unwrap_or(1);
        let dim = per * nwarps as usize * KINDS as usize;
        let nw = nctas * nwarps as usize;
        let mut vc = Vec::with_capacity(nw);
        for c in 0..nctas {
            for w in 0..nwarps {
                let mut v = vec![0u32; dim];
                v[((slot[c] * nwarps + w) * KINDS) as usize] = 1;
                vc.push(v);
            }
        }
        Race {
            mode,
            nwarps,
            dim,
            domain,
            slot,
            members,
            vc,
            aclock: vec![0; nw * KINDS as usize],
            cp_done: vec![0; nw],
            bulk_done: vec![0; nw],
            bulk_read: vec![0; nw],
            pfence: vec![Vec::new(); nw],
            rel_fence: vec![false; nw],
            pending_acq: vec![None; nw],
            smem: (0..nctas).map(|_| Shadow::default()).collect(),
            global: (0..m.global.len()).map(|_| Shadow::default()).collect(),
            clusters: vec![(vec![0; dim], vec![0; dim]); m.clusters.len()],
            last_instr: vec![u64::MAX; nw],
            lane_sync: vec![LaneSync::default(); nw],
            acq_log: vec![VecDeque::new(); nw],
            acq_dropped: vec![false; nw],
            exited: vec![false; nw],
            exit_vc: vec![vec![0; dim]; nctas],
            exit_count: vec![0; nctas],
            exit_site: vec![0; nctas],
            remote: vec![HashMap::new(); nctas],
            ..Default::default()
        }
    }

    fn gw(&self, cta: u32, warp: u32) -> usize {
        (cta * self.nwarps + warp) as usize
    }

    fn agent(&self, cta: u32, warp: u32, kind: u32) -> u32 {
        (self.slot[cta as usize] * self.nwarps + warp) * KINDS + kind
    }

    fn site(&mut self, s: Site) -> u32 {
        if let Some(&k) = self.site_ix.get(&s) {
            return k;
        }
        self.sites.push(s);
        let k = self.sites.len() as u32 - 1;
        self.site_ix.insert(s, k);
        k
    }

    fn tick(&mut self, gw: usize) {
        let (cta, w) = (gw as u32 / self.nwarps, gw as u32 % self.nwarps);
        let a = self.agent(cta, w, THREAD) as usize;
        self.vc[gw][a] += 1;
    }

    /// Joins `src` into `dst`; whether `dst` changed.
    fn release_into(dst: &mut [u32], src: &[u32]) -> bool {
        let mut changed = false;
        for (d, s) in dst.iter_mut().zip(src) {
            if *s > *d {
                *d = *s;
                changed = true;
            }
        }
        changed
    }

    /// Warp `gw` acquired: every lane is ordered after the warp's earlier accesses, and its
    /// clock from here on is logged for [`Race::vc_at`].
    /// `changed`: its clock changed (only then is it logged).
    fn acquired(&mut self, gw: usize, changed: bool) {
        let (cta, w) = (gw as u32 / self.nwarps, gw as u32 % self.nwarps);
        let a = self.agent(cta, w, THREAD) as usize;
        // The warp's next memory instruction starts a new epoch (`thread_access`).
        let from = self.vc[gw][a] + 1;
        self.lane_sync[gw].all = from;
        if !changed {
            return;
        }
        let log = &mut self.acq_log[gw];
        if log.len() == ACQ_LOG {
            log.pop_front();
            self.acq_dropped[gw] = true;
        }
        log.push_back((from, Rc::new(self.vc[gw].clone())));
    }

    /// Component `of` (another warp's thread agent) of warp `gw`'s clock as it was when its own
    /// clock was `at` (None: the log no longer reaches back that far).
    fn vc_at(&self, gw: usize, at: u32, of: usize) -> Option<u32> {
        match self.acq_log[gw].iter().rev().find(|(c, _)| *c <= at) {
            Some((_, v)) => Some(v[of]),
            None if self.acq_dropped[gw] => None,
            None => Some(0),
        }
    }

    fn op_release(dst: &mut [u32], op: &Op) {
        Race::release_into(dst, &op.snap);
        let a = op.agent as usize;
        dst[a] = dst[a].max(op.clock);
        if op.cp_upto > 0 {
            let cp = a - (op.agent % KINDS) as usize + CP as usize;
            dst[cp] = dst[cp].max(op.cp_upto);
        }
    }
}

// ---- hooks: synchronization --------------------------------------------------------------------

/// Whether `i` orders the lanes of the warp executing it among themselves (module doc, "Lanes of
/// one warp"): `bar.warp.sync` (PTX 9.7.13.2: memory ordering among the participating threads),
/// `shfl.sync` and the other `.sync` warp operations (9.7.9.x: each thread waits until all
/// threads of membermask execute it), and warp-wide `.aligned` instructions (every thread of the
/// warp executes the same one: `bar.sync`, `barrier.sync.aligned`, `barrier.cluster.*.aligned`,
/// `wgmma.*`, `mma`, `ldmatrix`).
pub fn orders_lanes(i: &Instr) -> bool {
    i.has(Mod::Sync) || i.has(Mod::Aligned) || matches!(i.op, Opcode::BarWarpSync | Opcode::ShflSync)
}

/// The lanes of `mask` of warp `w` of `cta` execute an instruction that [`orders_lanes`]: each is
/// ordered after the accesses the others made before it.
pub fn lanes_ordered(m: &mut Machine<'_>, cta: u32, w: u32, mask: u32) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    let a = r.agent(cta, w, THREAD) as usize;
    // The warp's next memory instruction starts a new epoch (`thread_access`).
    let from = r.vc[gw][a] + 1;
    let ls = &mut r.lane_sync[gw];
    for l in crate::exec::lanes(mask) {
        ls.lane[l as usize] = from;
    }
}

/// Warp `w` of `cta` arrives on named barrier `id` (release into its generation).
pub fn bar_arrive(m: &mut Machine<'_>, cta: u32, w: u32, id: u8) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    let dim = r.dim;
    let acc = r.bars.entry((cta, id)).or_insert_with(|| vec![0; dim]);
    Race::release_into(acc, &r.vc[gw]);
    r.tick(gw);
}

/// Named barrier `id` of `cta` completed; the warps of `woken` (a warp mask) acquire it.
pub fn bar_complete(m: &mut Machine<'_>, cta: u32, id: u8, woken: u64) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let Some(acc) = r.bars.remove(&(cta, id)) else { return };
    for w in 0..r.nwarps.min(64) {
        if woken >> w & 1 == 1 {
            let gw = r.gw(cta, w);
            let changed = Race::release_into(&mut r.vc[gw], &acc);
            r.acquired(gw, changed);
        }
    }
}

/// Warp `w` of `cta` arrives on its cluster barrier (`relaxed`: no release unless after a
/// release fence).
pub fn cluster_arrive(m: &mut Machine<'_>, cta: u32, w: u32, relaxed: bool) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    if relaxed && !r.rel_fence[gw] {
        return;
    }
    let cl = m.ctas[cta as usize].cluster as usize;
    Race::release_into(&mut r.clusters[cl].0, &r.vc[gw]);
    r.tick(gw);
}

/// The cluster barrier of cluster `cl` completed a phase; `woken` (cta, warp) acquire it.
pub fn cluster_complete(m: &mut Machine<'_>, cl: u32, woken: &[(u32, u32)]) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let c = &mut r.clusters[cl as usize];
    let cur = std::mem::replace(&mut c.0, vec![0; r.dim]);
    Race::release_into(&mut c.1, &cur);
    for &(cta, w) in woken {
        cluster_acquire(m, cta, w);
    }
}

/// Warp `w` of `cta` returns from barrier.cluster.wait (acquire every completed phase).
pub fn cluster_acquire(m: &mut Machine<'_>, cta: u32, w: u32) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    let cl = m.ctas[cta as usize].cluster as usize;
    let done = &r.clusters[cl].1;
    let changed = Race::release_into(&mut r.vc[gw], done);
    r.acquired(gw, changed);
}

/// Warp `w` of `cta` arrives on the mbarrier at (`mc`, `off`); `completed`: its arrival
/// completed the phase (whose releases were already folded). A `.relaxed` arrive releases only
/// after a release fence.
pub fn mbar_arrive(m: &mut Machine<'_>, cta: u32, w: u32, mc: u32, off: u32, completed: bool, relaxed: bool) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    if relaxed && !r.rel_fence[gw] {
        return;
    }
    let dim = r.dim;
    let e = r.mbars.entry((mc, off)).or_insert_with(|| (vec![0; dim], vec![0; dim]));
    Race::release_into(if completed { &mut e.1 } else { &mut e.0 }, &r.vc[gw]);
    r.tick(gw);
}

/// The operation completing now releases into the current phase of the mbarrier at (`mc`, `off`)
/// (its complete-tx or its asynchronous arrive; call before the phase may complete).
pub fn mbar_op_release(m: &mut Machine<'_>, mc: u32, off: u32) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let Some(op) = r.completing.and_then(|s| r.ops.get(&s)) else { return };
    let dim = r.dim;
    let e = r.mbars.entry((mc, off)).or_insert_with(|| (vec![0; dim], vec![0; dim]));
    Race::op_release(&mut e.0, op);
}

/// A phase of the mbarrier at (`mc`, `off`) completed.
pub fn mbar_phase_complete(m: &mut Machine<'_>, mc: u32, off: u32) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    if let Some(e) = r.mbars.get_mut(&(mc, off)) {
        let cur = std::mem::replace(&mut e.0, vec![0; e.1.len()]);
        Race::release_into(&mut e.1, &cur);
    }
}

/// Warp `w` of `cta` saw a phase of the mbarrier at (`mc`, `off`) complete (a test_wait/try_wait
/// that returned true); a `.relaxed` wait acquires only at the warp's next acquire fence.
pub fn mbar_acquire(m: &mut Machine<'_>, cta: u32, w: u32, mc: u32, off: u32, relaxed: bool) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    let Some(e) = r.mbars.get(&(mc, off)) else { return };
    if relaxed {
        let p = r.pending_acq[gw].get_or_insert_with(|| vec![0; e.1.len()]);
        Race::release_into(p, &e.1);
    } else {
        let changed = Race::release_into(&mut r.vc[gw], &e.1);
        r.acquired(gw, changed);
    }
}

/// Warp `w` of `cta` executed a memory fence (`fence.sc`/`.acq_rel`/`.acquire`/`.release`,
/// `membar`; not the proxy fences): a release fence makes its later `.relaxed` arrives release,
/// an acquire fence acquires what its earlier `.relaxed` waits observed (PTX 8.9.2 patterns).
pub fn memory_fence(m: &mut Machine<'_>, cta: u32, w: u32, release: bool, acquire: bool) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    if release {
        r.rel_fence[gw] = true;
    }
    if acquire {
        if let Some(p) = r.pending_acq[gw].take() {
            let changed = Race::release_into(&mut r.vc[gw], &p);
            r.acquired(gw, changed);
        }
    }
}

/// Warp `w` of `cta` returns from cp.async.wait_group / wait_all.
pub fn cp_acquire(m: &mut Machine<'_>, cta: u32, w: u32) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    let a = r.agent(cta, w, CP) as usize;
    r.vc[gw][a] = r.vc[gw][a].max(r.cp_done[gw]);
}

/// Warp `w` of `cta` returns from cp.async.bulk.wait_group (`read`: `.read`).
pub fn bulk_acquire(m: &mut Machine<'_>, cta: u32, w: u32, read: bool) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    let a = r.agent(cta, w, BULK) as usize;
    let upto = if read { r.bulk_read[gw] } else { r.bulk_done[gw] };
    r.vc[gw][a] = r.vc[gw][a].max(upto);
}

/// The bulk operation completing now finished its reads (`finished`: and its writes).
pub fn bulk_progress(m: &mut Machine<'_>, finished: bool) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let Some(op) = r.completing.and_then(|s| r.ops.get(&s)) else { return };
    let (gw, c) = (op.gw, op.clock);
    r.bulk_read[gw] = r.bulk_read[gw].max(c);
    if finished {
        r.bulk_done[gw] = r.bulk_done[gw].max(c);
    }
}

/// The executing warp ran a `fence.proxy.async` (or `membar.proxy.async`).
pub fn proxy_fence(m: &mut Machine<'_>, cta: u32, w: u32) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    let gw = r.gw(cta, w);
    let a = r.agent(cta, w, THREAD) as usize;
    let c = r.vc[gw][a];
    r.pfence[gw].push(c);
    r.tick(gw);
}

/// An asynchronous operation was queued with sequence number `seq` by lane `lane` of the warp
/// executing instruction `pc` (`kind`: CP, BULK, REMOTE; cp.async.mbarrier.arrive is CP with
/// `arrive`). Inside a completion (a TMA store's write half) the new event continues the
/// operation completing now.
pub fn issued(m: &mut Machine<'_>, seq: u64, cta: u32, warp: u32, lane: u32, pc: u32, kind: u32, arrive: bool) {
    if !m.race.on() {
        return;
    }
    let n = m.instructions;
    let r = &mut m.race;
    if let Some(op) = r.completing.and_then(|s| r.ops.get(&s)).cloned() {
        r.ops.insert(seq, op);
        return;
    }
    let gw = r.gw(cta, warp);
    let snap = match &r.snap {
        Some((k, s)) if *k == n => s.clone(),
        _ => {
            let s = Rc::new(r.vc[gw].clone());
            r.snap = Some((n, s.clone()));
            r.tick(gw);
            s
        }
    };
    let k = gw * KINDS as usize + kind as usize;
    if !arrive {
        r.aclock[k] += 1;
    }
    let clock = r.aclock[k];
    let cp_upto = if arrive { r.aclock[gw * KINDS as usize + CP as usize] } else { 0 };
    let site = r.site(Site { kind, cta, warp, lane, pc });
    let agent = r.agent(cta, warp, kind);
    if !arrive {
        let issuer = r.agent(cta, warp, THREAD) as usize;
        r.issue_clock.insert((agent, clock), snap[issuer]);
    }
    r.ops.insert(seq, Op { snap, agent, clock, cp_upto, site, gw });
}

/// The operation completing now is done (its record is dropped); a cp.async's epoch becomes
/// what the warp's wait_group acquires.
pub fn retire_op(m: &mut Machine<'_>, seq: u64) {
    let r = &mut m.race;
    if !r.on() {
        return;
    }
    if let Some(op) = r.ops.remove(&seq) {
        if op.agent % KINDS == CP && op.cp_upto == 0 {
            r.cp_done[op.gw] = r.cp_done[op.gw].max(op.clock);
        }
    }
}

/// Warp `w` of `cta` has exited (all its lanes): its exit releases its clock to the CTA's
/// lifetime; when the CTA's last warp exits, every DSMEM access to its shared memory must have
/// happened before one of its warps' exit.
pub fn warp_exit(m: &mut Machine<'_>, cta: u32, w: u32, pc: u32) -> Result<(), Stop> {
    if !m.race.on() {
        return Ok(());
    }
    let r = &mut m.race;
    let gw = r.gw(cta, w);
    if r.exited[gw] {
        return Ok(());
    }
    r.exited[gw] = true;
    Race::release_into(&mut r.exit_vc[cta as usize], &r.vc[gw]);
    r.exit_count[cta as usize] += 1;
    let site = r.site(Site { kind: EXIT, cta, warp: w, lane: 0, pc });
    r.exit_site[cta as usize] = site;
    if r.exit_count[cta as usize] < r.nwarps {
        return Ok(());
    }
    let late: Vec<(u32, (u32, u32, u32))> = {
        let ev = &r.exit_vc[cta as usize];
        let mut v: Vec<_> = r.remote[cta as usize].iter().filter(|(a, (c, _, _))| ev[**a as usize] < *c).map(|(a, x)| (*a, *x)).collect();
        v.sort();
        v
    };
    if let Some(&(_, (_, s, off))) = late.first() {
        let at = m.race.sites[s as usize];
        return lifetime_finding(m, cta, s, off, at, false);
    }
    Ok(())
}

// ---- hooks: memory accesses --------------------------------------------------------------------

/// A thread access by lane `lane` of the warp executing `pc` (`len` bytes at `p`).
pub fn thread_access(m: &mut Machine<'_>, cta: u32, warp: u32, lane: u32, pc: u32, p: Place, len: usize, acc: Access) -> Result<(), Stop> {
    if !m.race.on() {
        return Ok(());
    }
    let (mem_cta, region, off) = match p {
        Place::Shared(c, o) => (Some(c), 0, o),
        Place::Global(i, o) if m.race.mode == RaceMode::Global => (None, i, o),
        _ => return Ok(()),
    };
    let r = &mut m.race;
    let gw = r.gw(cta, warp);
    let dom = r.domain[cta as usize];
    if let Access::Strong(acquire, release) = acc {
        let key = (dom, mem_cta.is_some() as u8, mem_cta.unwrap_or(region as u32), (off / 4) as u64);
        let dim = r.dim;
        if release {
            let e = r.strong.entry(key).or_insert_with(|| vec![0; dim]);
            Race::release_into(e, &r.vc[gw]);
            r.tick(gw);
        }
        if acquire {
            // Lanes of the warp synchronizing through the location are ordered too.
            let changed = r.strong.get(&key).is_some_and(|e| Race::release_into(&mut r.vc[gw], e));
            r.acquired(gw, changed);
        }
        return Ok(());
    }
    let n = m.instructions;
    let r = &mut m.race;
    if r.last_instr[gw] != n {
        r.last_instr[gw] = n;
        r.tick(gw);
    }
    let site = r.site(Site { kind: THREAD, cta, warp, lane, pc });
    let agent = r.agent(cta, warp, THREAD);
    let clock = r.vc[gw][agent as usize];
    let write = acc == Access::Write;
    if let Some(c) = mem_cta {
        if c != cta {
            if r.exit_count[c as usize] == r.nwarps {
                let s = r.sites[site as usize];
                return lifetime_finding(m, c, site, off as u32, s, true);
            }
            let e = r.remote[c as usize].entry(agent).or_insert((0, site, off as u32));
            if clock >= e.0 {
                *e = (clock, site, off as u32);
            }
        }
    }
    let size = mem_size(m, p);
    let r = &mut m.race;
    let Race { vc, smem, global, pfence, members, nwarps, lane_sync, sites, .. } = r;
    let who = Who { agent, clock, vc: &vc[gw], site, async_proxy: false, lane: Some((lane, &lane_sync[gw])), sites };
    let pf = Fences { fences: pfence, members: &members[dom as usize], nwarps: *nwarps };
    let sh = match mem_cta {
        Some(c) => &mut smem[c as usize],
        None => &mut global[region],
    };
    let hit = check(sh, off, len, who, write, acc != Access::OperandRead, pf, size);
    report_hit(m, hit, p, off, site, (cta, warp, lane, pc))
}

/// An access by the operation completing now (`len` bytes at `p`): a copy landing, or a bulk
/// copy reading its source. A reduction (`red.async`, `cp.reduce.async.bulk`) is atomic: it
/// races with no other access (PTX 8.7 morally strong), like the strong thread accesses.
pub fn op_access(m: &mut Machine<'_>, p: Place, len: usize, write: bool, reduction: bool) -> Result<(), Stop> {
    if !m.race.on() || reduction {
        return Ok(());
    }
    let (mem_cta, region, off) = match p {
        Place::Shared(c, o) => (Some(c), 0, o),
        Place::Global(i, o) if m.race.mode == RaceMode::Global => (None, i, o),
        _ => return Ok(()),
    };
    let size = mem_size(m, p);
    let r = &mut m.race;
    let Some(op) = r.completing.and_then(|s| r.ops.get(&s)).cloned() else { return Ok(()) };
    let site = op.site;
    let issuer = r.sites[site as usize];
    if let Some(c) = mem_cta {
        if c != issuer.cta {
            if r.exit_count[c as usize] == r.nwarps {
                return lifetime_finding(m, c, site, off as u32, issuer, true);
            }
            let e = r.remote[c as usize].entry(op.agent).or_insert((0, site, off as u32));
            if op.clock >= e.0 {
                *e = (op.clock, site, off as u32);
            }
        }
    }
    let dom = r.domain[issuer.cta as usize];
    let Race { smem, global, pfence, members, nwarps, sites, .. } = r;
    let who = Who { agent: op.agent, clock: op.clock, vc: &op.snap, site, async_proxy: op.agent % KINDS == BULK, lane: None, sites };
    let pf = Fences { fences: pfence, members: &members[dom as usize], nwarps: *nwarps };
    let sh = match mem_cta {
        Some(c) => &mut smem[c as usize],
        None => &mut global[region],
    };
    let hit = check(sh, off, len, who, write, true, pf, size);
    report_hit(m, hit, p, off, site, (issuer.cta, issuer.warp, issuer.lane, issuer.pc))
}

/// A heap allocation got global region `slot` (new, or one a freed allocation left): with
/// `--race global` its words start with no accesses.
pub fn heap_allocated(m: &mut Machine<'_>, slot: usize) {
    if m.race.mode != RaceMode::Global {
        return;
    }
    let g = &mut m.race.global;
    if g.len() <= slot {
        g.resize_with(slot + 1, Shadow::default);
    }
    g[slot] = Shadow::default();
}

fn mem_size(m: &Machine<'_>, p: Place) -> usize {
    match p {
        Place::Shared(..) => m.smem_bytes as usize,
        Place::Global(i, _) => m.global[i].bytes.len(),
        _ => 0,
    }
}

/// FastTrack's read and write rules on the words of `[off, off + len)`; the first conflict.
/// Checks an access of `len` bytes at `off` against the shadow words and, with `record`, makes it
/// their last access.
#[allow(clippy::too_many_arguments)]
fn check(sh: &mut Shadow, off: usize, len: usize, who: Who<'_>, write: bool, record: bool, pf: Fences<'_>, size: usize) -> Option<(Hit, usize)> {
    if sh.words.is_empty() {
        sh.words = vec![EMPTY; size.div_ceil(4)];
    }
    let me = Ep { agent: who.agent, clock: who.clock, site: who.site };
    let mut first = None;
    for k in off / 4..(off + len).div_ceil(4).min(sh.words.len()) {
        let wd = sh.words[k];
        let mut hit = None;
        let conflict = |e: Ep| e.agent != who.agent && !who.hb(e) || who.lane_race(e);
        let on = |prior: Ep, prior_write: bool, proxy: bool| {
            let before = if prior_write { NO_EP } else { wd.w };
            Hit { prior, prior_write, write, proxy, before, lanes: prior.agent == who.agent }
        };
        if conflict(wd.w) {
            hit = Some(on(wd.w, true, false));
        } else if who.async_proxy && wd.w.agent != NONE && wd.w.agent % KINDS == THREAD && !proxy_fenced(wd.w, &who, pf) {
            hit = Some(on(wd.w, true, true));
        }
        if write && hit.is_none() {
            if wd.rs != NONE {
                if let Some(e) = sh.sets[wd.rs as usize].iter().find(|e| conflict(**e)) {
                    hit = Some(on(*e, false, false));
                }
            } else if conflict(wd.r) {
                hit = Some(on(wd.r, false, false));
            }
        }
        if first.is_none() {
            if let Some(h) = hit {
                first = Some((h, k * 4));
            }
        }
        if !record {
            continue;
        }
        let wd = &mut sh.words[k];
        if write {
            if wd.rs != NONE {
                sh.sets[wd.rs as usize].clear();
                sh.free.push(wd.rs);
            }
            *wd = Word { w: me, r: NO_EP, rs: NONE };
        } else if wd.rs != NONE {
            let set = &mut sh.sets[wd.rs as usize];
            match set.iter_mut().find(|e| e.agent == who.agent) {
                Some(e) => *e = me,
                None => set.push(me),
            }
        } else if wd.r.agent == NONE || wd.r.agent == who.agent || who.hb(wd.r) {
            wd.r = me;
        } else {
            let ix = match sh.free.pop() {
                Some(i) => i,
                None => {
                    sh.sets.push(Vec::new());
                    sh.sets.len() as u32 - 1
                }
            };
            sh.sets[ix as usize].extend([wd.r, me]);
            wd.rs = ix;
            wd.r = NO_EP;
        }
    }
    first
}

/// Whether a proxy fence by the writer of `w` lies between the write and the operation `who`
/// (its issue) in happens-before order.
fn proxy_fenced(w: Ep, who: &Who<'_>, pf: Fences<'_>) -> bool {
    let slot = w.agent / KINDS / pf.nwarps;
    let gw = (pf.members[slot as usize] * pf.nwarps + w.agent / KINDS % pf.nwarps) as usize;
    let f = &pf.fences[gw];
    let k = f.partition_point(|&c| c < w.clock);
    f.get(k).is_some_and(|&c| c < who.vc.get(w.agent as usize).copied().unwrap_or(0))
}

/// The proxy fences of a domain's warps: per global warp, and how a domain's agents map to them.
#[derive(Clone, Copy)]
struct Fences<'a> {
    fences: &'a [Vec<u32>],
    members: &'a [u32],
    nwarps: u32,
}

// ---- findings ----------------------------------------------------------------------------------

fn report_hit(m: &mut Machine<'_>, hit: Option<(Hit, usize)>, p: Place, _off: usize, site: u32, at: (u32, u32, u32, u32)) -> Result<(), Stop> {
    let Some((h, word)) = hit else { return Ok(()) };
    if !m.race.reported.insert((h.prior.site, site)) {
        return Ok(());
    }
    let (kind, space) = match p {
        Place::Shared(c, _) => (if h.proxy { FindingKind::ProxyRace } else { FindingKind::SharedMemoryRace }, format!("cta {c} shared 0x{word:x}{}", shared_name(m, word))),
        Place::Global(i, _) => (if h.proxy { FindingKind::ProxyRace } else { FindingKind::GlobalMemoryRace }, format!("global 0x{:x} (buffer `{}` + 0x{word:x})", m.global[i].base + word as u64, m.global[i].name)),
        _ => return Ok(()),
    };
    let prior = m.race.sites[h.prior.site as usize];
    let cur = m.race.sites[site as usize];
    if named_by_tma(m, prior, cur, h.proxy) {
        return Ok(());
    }
    let first = describe(m, prior, h.prior_write);
    let second = describe(m, cur, h.write);
    let missing = if h.proxy {
        proxy_missing(prior)
    } else if h.lanes {
        lanes_missing(prior, cur)
    } else {
        missing(prior, cur, h.prior_write, intent(m, &h, cur))
    };
    // A thread access racing with an asynchronous operation is reported at the thread's access,
    // whichever of the two came second in this interleaving: the finding's place does not
    // depend on the seed.
    // Between two threads, the read is named first (it is the access that may see the wrong
    // value), so the place does not depend on which came second either.
    let prior_first = (cur.kind != THREAD && prior.kind == THREAD) || (cur.kind == THREAD && prior.kind == THREAD && h.write && !h.prior_write);
    let (msg, at) = if prior_first {
        (format!("{first} races with {second}: both touch {space} and {missing}"), (prior.cta, prior.warp, prior.lane, prior.pc))
    } else {
        (format!("{second} races with {first}: both touch {space} and {missing}"), at)
    };
    m.report(kind, msg, Some(at))
}

/// The shared variable holding offset `off`, as ` (`name` + 0x..)`.
fn shared_name(m: &Machine<'_>, off: usize) -> String {
    let md = m.module();
    let mut best: Option<(u64, &str)> = None;
    for (i, s) in md.symbols.iter().enumerate() {
        if s.space != Space::Shared || m.sym_in_frame[i] {
            continue;
        }
        let base = m.sym_offset[i];
        if base <= off as u64 && best.is_none_or(|(b, _)| base > b) && (s.is_extern || (off as u64) < base + s.bytes().max(1)) {
            best = Some((base, &s.name));
        }
    }
    best.map(|(b, n)| format!(" (`{n}` + 0x{:x})", off as u64 - b)).unwrap_or_default()
}

/// "the write by `st.shared.u32 ...` (k.cu:12, PTX line 40) of cta 0 warp 1 lane 3".
fn describe(m: &Machine<'_>, s: Site, write: bool) -> String {
    let rw = if write { "write" } else { "read" };
    let what = match s.kind {
        CP => format!("the {rw} by the cp.async issued at"),
        BULK => format!("the {rw} by the bulk/TMA copy issued at"),
        REMOTE => format!("the {rw} by the st.async/red.async issued at"),
        _ => format!("the {rw} at"),
    };
    format!("{what} {} by cta {} warp {} lane {}", where_(m, s.pc), s.cta, s.warp, s.lane)
}

/// "`instr` (k.cu:12, PTX line 40)" for instruction `pc`.
pub fn where_(m: &Machine<'_>, pc: u32) -> String {
    let Some(s) = m.source_of(pc) else { return format!("pc {pc}") };
    if s.ptx.is_empty() {
        return format!("`{}` (line {})", s.instr, s.line);
    }
    format!("`{}` ({}:{}, PTX line {})", s.instr, s.file, s.line, s.ptx_line)
}

/// What a thread reading an asynchronous copy's destination meant, from the happens-before state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intent {
    /// The copy's data: the copy's issue is ordered before the read, or nothing had written the
    /// word before the read.
    Consume,
    /// The buffer's earlier contents: the read saw a write ordered before it, and the copy's
    /// issue is not ordered before the read.
    Reuse,
    /// Not known: the copy landed first and the read is not ordered after its issue.
    Unknown,
    /// Not a read racing a copy's write.
    NotRead,
}

/// The intent of the read in `h` (a thread read and an asynchronous operation's write, in either
/// order; `cur`: the second access).
fn intent(m: &Machine<'_>, h: &Hit, cur: Site) -> Intent {
    let r = &m.race;
    let (read, read_site, op_ep) = match (h.prior_write, h.write) {
        (false, true) if cur.kind != THREAD && cur.kind != EXIT => (h.prior, r.sites[h.prior.site as usize], None),
        (true, false) if cur.kind == THREAD && h.prior.agent % KINDS != THREAD => (Ep { agent: r.agent(cur.cta, cur.warp, THREAD), clock: 0, site: 0 }, cur, Some(h.prior)),
        _ => return Intent::NotRead,
    };
    // The operation: the one landing now (read first), or the one whose write the read saw.
    let (op_agent, op_clock) = match op_ep {
        Some(e) => (e.agent, e.clock),
        None => match r.completing.and_then(|s| r.ops.get(&s)) {
            Some(op) => (op.agent, op.clock),
            None => return Intent::Unknown,
        },
    };
    let Some(&issued_at) = r.issue_clock.get(&(op_agent, op_clock)) else { return Intent::Unknown };
    let issuer = (op_agent - op_agent % KINDS + THREAD) as usize;
    let reader = r.gw(read_site.cta, read_site.warp);
    // The issuer's clock ticked at the issue: the read saw the issue when its clock has a later
    // value of the issuer's component (its own program order for the issuing warp).
    let seen = match op_ep {
        Some(_) => Some(r.vc[reader][issuer]),
        None if issuer as u32 == read.agent => Some(read.clock),
        None => r.vc_at(reader, read.clock, issuer),
    };
    match seen {
        Some(c) if c > issued_at => Intent::Consume,
        _ if op_ep.is_none() && h.before.agent == NONE => Intent::Consume,
        _ if op_ep.is_none() => Intent::Reuse,
        _ => Intent::Unknown,
    }
}

/// Whether the TMA engine's own check already named this pair (exec/tma.rs, every engine): a
/// `TmaReadBeforeComplete` at the thread access, or a `ProxyFenceMissing` at the operation's
/// issue (module doc, "One bug, one finding").
fn named_by_tma(m: &Machine<'_>, prior: Site, cur: Site, proxy: bool) -> bool {
    let (thread, op) = match (prior.kind, cur.kind) {
        (THREAD, BULK) => (prior, cur),
        (BULK, THREAD) => (cur, prior),
        _ => return false,
    };
    let at = |f: &crate::finding::Finding, s: Site| (f.location.cta, f.location.warp, f.location.pc) == (s.cta, s.warp, s.pc);
    m.findings.iter().any(|f| match f.kind {
        FindingKind::ProxyFenceMissing => proxy && at(f, op),
        FindingKind::TmaReadBeforeComplete => !proxy && at(f, thread),
        _ => false,
    })
}

fn op_name(k: u32) -> &'static str {
    match k {
        CP => "cp.async",
        BULK => "bulk/TMA copy",
        REMOTE => "st.async/red.async",
        _ => "",
    }
}

/// How a thread acquires the completion of an operation of kind `k`.
fn completion(k: u32) -> &'static str {
    match k {
        CP => "cp.async.wait_group/wait_all by the issuing thread (then a barrier for other warps), or cp.async.mbarrier.arrive and a wait on that mbarrier",
        _ => "a wait (test_wait/try_wait) on the mbarrier phase its complete_tx completes, or cp.async.bulk.wait_group for a bulk-group copy",
    }
}

fn missing(prior: Site, cur: Site, prior_write: bool, intent: Intent) -> String {
    let reuse = "the issuing warp must wait for the readers (a barrier, or the consumers' mbarrier release) before it reuses the buffer";
    match (prior.kind, cur.kind) {
        (THREAD, THREAD) => format!(
            "nothing orders them: no bar.sync/barrier.sync, mbarrier arrive -> wait or cluster barrier between warp {} of cta {} and warp {} of cta {}",
            prior.warp, prior.cta, cur.warp, cur.cta
        ),
        (THREAD, k) if !prior_write && intent == Intent::Consume => format!(
            "the read meant the {op}'s data (the {op}'s issue is ordered before it, or nothing wrote the word before it) but does not acquire its completion: the reader must wait for the {op} first: {}",
            completion(k),
            op = op_name(k)
        ),
        (THREAD, k) if !prior_write => format!("the read consumed the buffer's earlier contents and the {} was issued before the read was ordered before its issue: {reuse}", op_name(k)),
        (THREAD, k) => format!("the {} was issued before the write was ordered before its issue (a barrier or an mbarrier arrive -> wait is missing)", op_name(k)),
        (k, THREAD) if prior_write && intent == Intent::Unknown && k != REMOTE => format!(
            "the read is not ordered after the {op}'s issue at all: if it meant the {op}'s data it must acquire its completion ({}); if it meant the buffer's earlier contents, {reuse}",
            completion(k),
            op = op_name(k)
        ),
        (k, _) if prior_write => format!("the access does not acquire the {}'s completion: {}", op_name(k), completion(k)),
        (k, _) => format!("the {}'s read of its source was not waited for (cp.async.bulk.wait_group.read) before the overwrite", op_name(k)),
    }
}

/// Two lanes of one warp.
fn lanes_missing(prior: Site, cur: Site) -> String {
    format!(
        "lanes {} and {} of warp {} of cta {} are independent threads (independent thread scheduling, sm_70 and later): nothing orders them between the two instructions (__syncwarp/bar.warp.sync, a shfl/vote/match .sync, or a barrier)",
        prior.lane, cur.lane, cur.warp, cur.cta
    )
}

fn proxy_missing(prior: Site) -> String {
    format!(
        "the generic-proxy write is ordered before the async-proxy access, but no fence.proxy.async by its writer (cta {} warp {}) lies between them (PTX 8.6 Proxies, 9.7.13.4)",
        prior.cta, prior.warp
    )
}

/// A DSMEM access to CTA `owner`'s shared memory not ordered before its exit (`after`: made after
/// its last warp exited).
fn lifetime_finding(m: &mut Machine<'_>, owner: u32, site: u32, off: u32, s: Site, after: bool) -> Result<(), Stop> {
    if !m.race.reported.insert((u32::MAX - owner, site)) {
        return Ok(());
    }
    let ex = m.race.sites[m.race.exit_site[owner as usize] as usize];
    let acc = describe(m, s, false).replacen("the read", "the access", 1);
    let msg = format!(
        "{acc} touches cta {owner} shared 0x{off:x}{} {}, whose last warp ({}) exited at {}, releasing its shared memory: a trailing cluster barrier (barrier.cluster.arrive.release / barrier.cluster.wait.acquire, or cluster.sync()) after the access and before the exit is missing (PTX 9.7.13.3)",
        shared_name(m, off as usize),
        if after { "after cta's exit" } else { "but is not ordered before the exit of any of its warps" },
        ex.warp,
        where_(m, ex.pc)
    );
    m.report(FindingKind::SharedMemoryRace, msg, Some((s.cta, s.warp, s.lane, s.pc)))
}
