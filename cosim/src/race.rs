//! Data-race detection with happens-before (issue 17 section 1): vector clocks per agent and
//! FastTrack-style epochs per 4-byte word of shared memory (and of global memory with
//! `--race global`).
//!
//! **Agents.** A warp is one agent (the golden model executes a warp-instruction atomically, in
//! the warp's program order; races between lanes of one warp are not reported). Each warp has
//! three asynchronous agents beside it: its cp.async copies, its bulk/TMA operations and its
//! st.async/red.async stores. An asynchronous operation gets an epoch of its warp's agent of that
//! kind at issue and the issuing warp's vector clock as it was then; it is ordered after what the
//! issuer had seen, and its accesses (when it lands) are checked with that clock.
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
//! operations up to it, and an mbarrier wait acquires every completed phase: both can only hide
//! a race, never invent one.
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
use hopsync_firmware::printer;
use std::collections::{HashMap, HashSet};
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
}

impl Who<'_> {
    fn hb(&self, e: Ep) -> bool {
        e.agent == NONE || e.agent == self.agent && e.clock <= self.clock || self.vc.get(e.agent as usize).is_some_and(|&c| e.clock <= c)
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
/// sets, mbarrier phases and operations in flight come on top, in proportion to use).
pub fn estimate_bytes(nctas: u64, smem_bytes: u64, global_bytes: u64, warps: u64, agents: u64, mode: RaceMode) -> u64 {
    let word = std::mem::size_of::<Word>() as u64;
    let words = match mode {
        RaceMode::Off => return 0,
        RaceMode::Shared => nctas * smem_bytes.div_ceil(4),
        RaceMode::Global => nctas * smem_bytes.div_ceil(4) + global_bytes.div_ceil(4),
    };
    // A cluster per CTA at most.
    let vectors = 2 * warps + 17 * nctas + 2 * nctas;
    words.saturating_mul(word).saturating_add(vectors.saturating_mul(agents).saturating_mul(4))
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
        self.smem.iter().chain(self.global.iter()).map(sh).sum::<u64>() + (self.vc.len() as u64) * self.dim as u64 * 4
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

    fn release_into(dst: &mut [u32], src: &[u32]) {
        for (d, s) in dst.iter_mut().zip(src) {
            if *s > *d {
                *d = *s;
            }
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
            Race::release_into(&mut r.vc[gw], &acc);
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
    Race::release_into(&mut r.vc[gw], done);
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
        Race::release_into(&mut r.vc[gw], &e.1);
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
            Race::release_into(&mut r.vc[gw], &p);
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
            if let Some(e) = r.strong.get(&key) {
                Race::release_into(&mut r.vc[gw], e);
            }
        }
        return Ok(());
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
    let Race { vc, smem, global, pfence, members, nwarps, .. } = r;
    let who = Who { agent, clock, vc: &vc[gw], site, async_proxy: false };
    let pf = Fences { fences: pfence, members: &members[dom as usize], nwarps: *nwarps };
    let sh = match mem_cta {
        Some(c) => &mut smem[c as usize],
        None => &mut global[region],
    };
    let hit = check(sh, off, len, who, write, pf, size);
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
    let Race { smem, global, pfence, members, nwarps, .. } = r;
    let who = Who { agent: op.agent, clock: op.clock, vc: &op.snap, site, async_proxy: op.agent % KINDS == BULK };
    let pf = Fences { fences: pfence, members: &members[dom as usize], nwarps: *nwarps };
    let sh = match mem_cta {
        Some(c) => &mut smem[c as usize],
        None => &mut global[region],
    };
    let hit = check(sh, off, len, who, write, pf, size);
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
fn check(sh: &mut Shadow, off: usize, len: usize, who: Who<'_>, write: bool, pf: Fences<'_>, size: usize) -> Option<(Hit, usize)> {
    if sh.words.is_empty() {
        sh.words = vec![EMPTY; size.div_ceil(4)];
    }
    let me = Ep { agent: who.agent, clock: who.clock, site: who.site };
    let mut first = None;
    for k in off / 4..(off + len).div_ceil(4).min(sh.words.len()) {
        let wd = sh.words[k];
        let mut hit = None;
        if wd.w.agent != who.agent && !who.hb(wd.w) {
            hit = Some(Hit { prior: wd.w, prior_write: true, write, proxy: false });
        } else if who.async_proxy && wd.w.agent != NONE && wd.w.agent % KINDS == THREAD && !proxy_fenced(wd.w, &who, pf) {
            hit = Some(Hit { prior: wd.w, prior_write: true, write, proxy: true });
        }
        if write && hit.is_none() {
            if wd.rs != NONE {
                if let Some(e) = sh.sets[wd.rs as usize].iter().find(|e| e.agent != who.agent && !who.hb(**e)) {
                    hit = Some(Hit { prior: *e, prior_write: false, write, proxy: false });
                }
            } else if wd.r.agent != who.agent && !who.hb(wd.r) {
                hit = Some(Hit { prior: wd.r, prior_write: false, write, proxy: false });
            }
        }
        if first.is_none() {
            if let Some(h) = hit {
                first = Some((h, k * 4));
            }
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
    let first = describe(m, prior, h.prior_write);
    let second = describe(m, cur, h.write);
    let missing = if h.proxy { proxy_missing(prior) } else { missing(prior, cur, h.prior_write) };
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
    let md = m.module();
    let Some(ins) = md.kernel.body.get(pc as usize) else { return format!("pc {pc}") };
    let text = printer::print_instr(md, ins);
    if let Some(cu) = &m.prog.cuda {
        if let Some((file, line, _)) = md.source_position(ins.src, Some(&cu.file)) {
            let file = if file == cu.file { m.prog.path.clone() } else { file };
            return format!("`{text}` ({file}:{line}, PTX line {})", ins.loc.line);
        }
    }
    format!("`{text}` (line {})", ins.loc.line)
}

fn missing(prior: Site, cur: Site, prior_write: bool) -> String {
    let op = |k: u32| match k {
        CP => "cp.async",
        BULK => "bulk/TMA copy",
        REMOTE => "st.async/red.async",
        _ => "",
    };
    match (prior.kind, cur.kind) {
        (THREAD, THREAD) => format!(
            "nothing orders them: no bar.sync/barrier.sync, mbarrier arrive -> wait or cluster barrier between warp {} of cta {} and warp {} of cta {}",
            prior.warp, prior.cta, cur.warp, cur.cta
        ),
        (THREAD, k) if !prior_write => format!(
            "the {} was issued before the read was ordered before its issue: the issuing warp must wait for the readers (a barrier, or the consumers' mbarrier release) before it reuses the buffer",
            op(k)
        ),
        (THREAD, k) => format!("the {} was issued before the write was ordered before its issue (a barrier or an mbarrier arrive -> wait is missing)", op(k)),
        (k, _) if prior_write && k == CP => "the access does not acquire the cp.async's completion: cp.async.wait_group/wait_all by the issuing thread (then a barrier for other warps), or cp.async.mbarrier.arrive and a wait on that mbarrier".into(),
        (k, _) if prior_write => format!("the access does not acquire the {}'s completion (a wait on the mbarrier phase it completes, or cp.async.bulk.wait_group)", op(k)),
        (k, _) => format!("the {}'s read of its source was not waited for (cp.async.bulk.wait_group.read) before the overwrite", op(k)),
    }
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
