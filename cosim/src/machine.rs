//! The golden machine: a SIMT executor of the firmware IR.
//!
//! Grid → clusters → CTAs → warps of 32 lanes. Each lane has its own pc; a warp executes the group
//! of ready lanes at the lowest pc, one warp-instruction per scheduler step, atomically. Lanes that
//! split at a branch meet again at its join (the immediate post-dominator, [`crate::reconverge`]):
//! those arriving first wait there for the others, as ptxas's convergence barriers make them.
//! Warps are picked round-robin, or in a seeded random order with `--seed`. Asynchronous
//! operations (cp.async, st.async, red.async) complete at later steps chosen by the scheduler.
//!
//! The seeded order is weighted: every warp gets a random speed (a weight of 1 to 64), redrawn at
//! random epochs, and each step picks a runnable warp with probability proportional to its speed.
//! A uniform pick almost never lets one warp fall far behind the others, so races that need a slow
//! warp (an mbarrier used before its initializing warp got there, a complete-tx landing in the
//! previous phase of a neighbour that has not arrived yet) would go unseen; with speeds, some
//! warps run tens of times slower than others for hundreds of steps.
//!
//! Every executed warp-instruction can produce a [`Retire`] record (when logging is on).

use crate::exec::{self, Flow, Stop};
use crate::finding::{Finding, FindingKind, Location};
use crate::reconverge;
use crate::retire::{MemSpace, MemWrite, RegWrite, Retire, RetireSink, SyncEvent};
use hopsync_firmware::ir::{AddrBase, Mod, Module, Operand, RegId, Space, Sreg};
use hopsync_firmware::limits::Layout;
use hopsync_firmware::{printer, Program};
use std::collections::HashMap;

/// Base of the first global buffer (docs/DESIGN.md; the manifest lays the buffers out).
pub const GLOBAL_BASE: u64 = hopsync_firmware::manifest::GLOBAL_BASE;
/// Generic addresses of shared memory start here (docs/DESIGN.md).
pub const SHARED_GENERIC_BASE: u64 = 0x0000_7f00_0000_0000;
/// Generic addresses of local memory start here (docs/DESIGN.md).
pub const LOCAL_GENERIC_BASE: u64 = 0x0000_7e00_0000_0000;
/// Generic addresses of the kernel parameter space start here (docs/DESIGN.md; `cvta.param`).
pub const PARAM_GENERIC_BASE: u64 = 0x0000_7d00_0000_0000;
/// Function addresses (`mov.u64 %rd, func`, call tables): function `k` is at
/// `FUNC_ADDR_BASE + 16 * k` (docs/DESIGN.md); an indirect `call` maps the address back.
pub const FUNC_ADDR_BASE: u64 = 0x0000_7b00_0000_0000;
/// The device heap (`malloc`, crate::heap): its address range and live-bytes limit.
pub use crate::heap::{HEAP_BASE, HEAP_BYTES};
pub use crate::warp::Warp;
/// Bytes of printf output a run keeps: CUDA's printf buffer (`cudaLimitPrintfFifoSize`, 1 MiB by
/// default) is circular, so the latest output survives; older lines are counted only.
pub const PRINTF_BUFFER_BYTES: u64 = 1 << 20;
/// A thread's stack (its local memory: the frames of the functions it is in) may grow to this
/// (sm_90's limit on local memory per thread, 512 KiB).
pub const STACK_BYTES: u64 = 512 << 10;
/// Stride of CTA windows in the `.shared::cluster` space (docs/DESIGN.md).
pub const SMEM_CLUSTER_STRIDE: u64 = 0x0100_0000;
/// Warp size.
pub const WARP: usize = 32;
/// Findings a run keeps; later ones are only counted (`Machine::findings_dropped`).
pub const MAX_FINDINGS: usize = 10_000;

/// What to do on undefined behaviour (the manifest's `ub` key names the same modes).
pub use hopsync_firmware::manifest::UbMode;

/// Where an instruction comes from ([`Machine::source_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePlace {
    /// The source file: the program's, or for CUDA input the `.cu` file of the `.loc`.
    pub file: String,
    /// Line in `file`.
    pub line: u32,
    /// Column in `file`.
    pub col: u32,
    /// CUDA input: the PTX instruction's `file:line:col`; empty for PTX input (`file` is the PTX).
    pub ptx: String,
    /// The instruction's line in the PTX.
    pub ptx_line: u32,
    /// The instruction as text.
    pub instr: String,
}

/// Run options.
#[derive(Debug, Clone)]
pub struct Config {
    /// `None`: deterministic round-robin; `Some(seed)`: randomized interleaving and async delays.
    pub seed: Option<u64>,
    /// UB policy.
    pub ub: UbMode,
    /// Maximum scheduler steps before the `StepLimit` finding.
    pub max_steps: u64,
    /// Steps without progress (no memory or sync change) before the spin watch starts
    /// (crate::spin): `Deadlock` once every live warp is then proven blocked or repeating.
    pub spin_limit: u64,
    /// Steps an asynchronous operation takes in deterministic mode.
    pub async_delay: u64,
    /// Data-race detection ([`crate::race`]).
    pub race: crate::race::RaceMode,
}

impl Default for Config {
    fn default() -> Config {
        Config { seed: None, ub: UbMode::Error, max_steps: 200_000_000, spin_limit: 2_000_000, async_delay: 64, race: crate::race::RaceMode::Shared }
    }
}

impl Config {
    /// The default options with the undefined-behaviour mode `prog`'s manifest declares (`ub`):
    /// what a run that takes no `--ub` uses (`hopsync run`, `cosim`, `gpu replay`).
    pub fn of_program(prog: &Program) -> Config {
        Config { ub: prog.manifest.ub, ..Config::default() }
    }
}

/// Why a lane is not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Waiting for a named barrier to complete (id, generation arrived in).
    NamedBarrier(u8, u64),
    /// Waiting for the rest of its warp to reach a non-aligned named barrier.
    NamedBarrierWarp(u8),
    /// Waiting for the cluster barrier phase it arrived in.
    ClusterBarrier(u64),
    /// `cp.async.wait_group n` (n stored).
    CpAsyncGroups(u32),
    /// `cp.async.bulk.wait_group{.read} n` (n, `.read`).
    BulkGroups(u32, bool),
    /// `wgmma.wait_group`: until every warp of the warpgroup has committed this many
    /// wgmma-groups (a wgmma is one operation of the four warps: `exec::wgmma`).
    WgmmaGroups(u64),
}

/// A lane's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Not launched (partial last warp) or exited.
    Done,
    /// Runnable.
    Ready,
    /// Blocked.
    Blocked(Wait),
}

/// What a warp last polled without success (for deadlock reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Poll {
    /// CTA holding the mbarrier.
    pub cta: u32,
    /// Its shared offset.
    pub offset: u32,
    /// The pc of the wait instruction.
    pub pc: u32,
}

/// A lane waiting at a non-aligned named barrier for the rest of its warp (PTX 9.7.13.1: the
/// barrier "causes executing thread to wait for all non-exited threads from its warp"): what it
/// executed. Lanes of one warp may reach the barrier at different instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartialArrival {
    /// Barrier id.
    pub id: u8,
    /// The lane.
    pub lane: u32,
    /// Its thread count operand (None: all threads of the CTA).
    pub count: Option<u32>,
    /// Whether it waits for the barrier to complete (`.sync`, `.red`) rather than only arriving.
    pub sync: bool,
    /// Its `.red` operator (`.popc`, `.and`, `.or`), if a reduction.
    pub red: Option<Mod>,
    /// Its predicate `c` (reductions).
    pub pred: bool,
    /// Its destination register (reductions).
    pub dst: Option<u32>,
}

/// One activation of a `.func` on a lane's call stack (PTX 9.7.12.5 `call`, 9.7.12.6 `ret`).
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The `call` instruction: the lane resumes after it.
    pub call_pc: u32,
    /// The callee.
    pub func: hopsync_firmware::ir::FuncId,
    /// Where the callee's frame (its `.local` and `.param` variables) starts in the thread's
    /// local memory.
    pub base: u64,
    /// The callee's registers as they were before the call, restored by its `ret` (a recursive
    /// call reuses the registers of an activation still running); empty when not recursive.
    pub saved: Vec<u64>,
}

/// One line a thread printed with `printf` (`vprintf`), or the message of a failed `assert`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceOutput {
    /// Linear CTA id.
    pub cta: u32,
    /// `%ctaid`.
    pub block: [u32; 3],
    /// `%tid`.
    pub thread: [u32; 3],
    /// The text, as printf formatted it.
    pub text: String,
}

/// One named barrier of a CTA (PTX 9.7.13.1).
#[derive(Debug, Clone, Default)]
pub struct NamedBarrier {
    /// Threads expected (None: all non-exited threads of the CTA).
    pub expected: Option<u32>,
    /// Threads arrived (warp-granular: a warp counts 32).
    pub arrived: u32,
    /// Warps arrived in this generation.
    pub arrived_warps: u64,
    /// Whether the barrier is in use by `bar.red` (vs sync/arrive) this generation.
    pub red: Option<Mod>,
    /// popc accumulator.
    pub popc: u32,
    /// and accumulator.
    pub all: bool,
    /// or accumulator.
    pub any: bool,
    /// Completed generations.
    pub generation: u64,
    /// Red results delivered to waiters, by (warp, lane): register to write.
    pub red_dst: Vec<(u32, u32, u32)>,
}

/// Shadow facts about one mbarrier object, for findings only (not architectural state).
#[derive(Debug, Clone, Copy, Default)]
pub struct MbarShadow {
    /// Phase number (unbounded) as seen by the golden model.
    pub phase: u64,
    /// Per warp-lane: the phase number in which a wait last returned true, to find arrives in the
    /// next phase before any wait returned true (PTX 9.7.13.15.4) we track per object only
    /// whether some wait returned true for the phase before the current one.
    pub waited_prev: bool,
    /// Whether a `fence.mbarrier_init.release.cluster` (or a cluster-scope fence) ran in the CTA
    /// since the object was initialized (PTX 9.7.13.4), which other CTAs' TMA copies need.
    pub init_fenced: bool,
}

/// The valid mbarrier objects of a CTA, indexed by shared offset (8-byte slots: an object is
/// 8-byte aligned, PTX 9.7.13.15.1). A flat table, since this lookup is on every mbarrier op,
/// grown up to the highest object initialized (most CTAs never use more than a few slots).
#[derive(Debug, Clone, Default)]
pub struct MbarTable {
    slots: Vec<Option<MbarShadow>>,
    count: usize,
    /// Slots the CTA's shared memory has room for.
    capacity: usize,
}

impl MbarTable {
    /// A table for `smem_bytes` of shared memory.
    pub fn new(smem_bytes: u32) -> MbarTable {
        MbarTable { slots: Vec::new(), count: 0, capacity: (smem_bytes as usize).div_ceil(8) }
    }
    /// Whether no object is valid.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Whether an object at `off` is valid.
    #[inline]
    pub fn contains_key(&self, off: &u32) -> bool {
        self.get(off).is_some()
    }
    /// The object at `off`.
    #[inline]
    pub fn get(&self, off: &u32) -> Option<&MbarShadow> {
        if off % 8 != 0 {
            return None;
        }
        self.slots.get((off / 8) as usize).and_then(|s| s.as_ref())
    }
    /// The object at `off`, mutable.
    #[inline]
    pub fn get_mut(&mut self, off: &u32) -> Option<&mut MbarShadow> {
        if off % 8 != 0 {
            return None;
        }
        self.slots.get_mut((off / 8) as usize).and_then(|s| s.as_mut())
    }
    /// Marks `off` valid.
    pub fn insert(&mut self, off: u32, s: MbarShadow) {
        let i = (off / 8) as usize;
        if i < self.capacity && i >= self.slots.len() {
            self.slots.resize(i + 1, None);
        }
        if let Some(slot) = self.slots.get_mut(i) {
            if slot.is_none() {
                self.count += 1;
            }
            *slot = Some(s);
        }
    }
    /// Marks every valid object as released to the cluster by `fence.mbarrier_init`.
    pub fn mark_init_fenced(&mut self) {
        for s in self.slots.iter_mut().flatten() {
            s.init_fenced = true;
        }
    }
    /// Marks `off` invalid.
    pub fn remove(&mut self, off: &u32) -> Option<MbarShadow> {
        let r = self.slots.get_mut((off / 8) as usize).and_then(|s| s.take());
        if r.is_some() {
            self.count -= 1;
        }
        r
    }
}

impl std::ops::Index<&u32> for MbarTable {
    type Output = MbarShadow;
    fn index(&self, off: &u32) -> &MbarShadow {
        self.get(off).expect("valid mbarrier")
    }
}

/// A CTA.
#[derive(Debug, Clone)]
pub struct Cta {
    /// Linear id in the grid.
    pub id: u32,
    /// %ctaid.
    pub ctaid: [u32; 3],
    /// Cluster index.
    pub cluster: u32,
    /// Rank in the cluster (%cluster_ctarank).
    pub rank: u32,
    /// %cluster_ctaid.
    pub cluster_ctaid: [u32; 3],
    /// Shared memory.
    pub smem: Vec<u8>,
    /// Warps.
    pub warps: Vec<Warp>,
    /// Named barriers 0..=15.
    pub bars: Vec<NamedBarrier>,
    /// Valid mbarrier objects by shared offset.
    pub mbarriers: MbarTable,
    /// Per-thread local memory.
    pub local: Vec<Vec<u8>>,
}

/// A cluster and its barrier (PTX 9.7.13.3).
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// Linear ids of its CTAs, by rank.
    pub ctas: Vec<u32>,
    /// Completed phases.
    pub phase: u64,
    /// Threads arrived in the current phase.
    pub arrived: u64,
}

/// A global allocation.
#[derive(Debug, Clone)]
pub struct Region {
    /// Buffer or variable name.
    pub name: String,
    /// Base address.
    pub base: u64,
    /// Contents.
    pub bytes: Vec<u8>,
}

/// An asynchronous operation in flight.
#[derive(Debug, Clone)]
pub enum AsyncOp {
    /// `cp.async`: copy `bytes` into shared memory of `cta` at `dst`, then decrement the issuing
    /// thread's group.
    CpAsync {
        /// CTA.
        cta: u32,
        /// Warp.
        warp: u32,
        /// Lane.
        lane: u32,
        /// Destination shared offset.
        dst: u32,
        /// Data (read at issue: the source is not written while a copy is in flight in these programs;
        /// the async-proxy race finding comes with the TMA issue).
        data: Vec<u8>,
        /// The issuing thread's cp.async group.
        group: u64,
    },
    /// `cp.async.mbarrier.arrive`: an arrive-on triggered when the thread's prior cp.async complete.
    CpAsyncArrive {
        /// CTA of the mbarrier.
        cta: u32,
        /// Shared offset of the mbarrier.
        offset: u32,
        /// `.noinc`: the pending count was not incremented at issue.
        noinc: bool,
        /// Issuing thread.
        warp: u32,
        /// Issuing lane.
        lane: u32,
    },
    /// `st.async`/`red.async`: write (or reduce into) remote shared memory, then complete-tx.
    RemoteWrite {
        /// Destination CTA.
        cta: u32,
        /// Destination offset.
        dst: u32,
        /// Data (for red.async: the operand, applied at completion).
        data: Vec<u8>,
        /// red.async op and type, if a reduction.
        red: Option<(Mod, Mod)>,
        /// mbarrier offset in the destination CTA.
        mbar: u32,
        /// Bytes to complete on the mbarrier.
        tx: u32,
    },
    /// A TMA bulk or tensor copy (exec/tma.rs).
    Tma(Box<crate::exec::TmaOp>),
}

/// A scheduled asynchronous completion.
#[derive(Debug, Clone)]
pub struct Pending {
    /// Step at which it may complete.
    pub ready_at: u64,
    /// Issue order.
    pub seq: u64,
    /// The instruction that issued it: (CTA, warp, pc), for reports.
    pub issued_at: (u32, u32, u32),
    /// What completes.
    pub op: AsyncOp,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every thread exited.
    Completed,
    /// Stopped by a finding (the last one in `findings`).
    Fault,
    /// Stopped because something is not supported.
    Unsupported(String),
}

/// The whole mutable state of a run.
pub struct Machine<'p> {
    /// The program.
    pub(crate) prog: &'p Program,
    /// Options.
    pub(crate) cfg: Config,
    /// CTAs, by linear id.
    pub(crate) ctas: Vec<Cta>,
    /// Clusters.
    pub(crate) clusters: Vec<Cluster>,
    /// Global memory.
    pub(crate) global: Vec<Region>,
    /// The kernel parameter buffer and each param's offset in it.
    pub(crate) params: Vec<u8>,
    /// Offsets of params / shared symbols, by symbol id (frame symbols: offset in their frame).
    pub(crate) sym_offset: Vec<u64>,
    /// Per symbol: whether it lives in its function's frame (a `.local` variable, or a `.param`
    /// that is no kernel parameter of the launched entry), addressed per lane.
    pub(crate) sym_in_frame: Vec<bool>,
    /// Per function: the bytes of its frame.
    pub(crate) frame_bytes: Vec<u64>,
    /// What threads printed (`printf`) and failed `assert` messages, in execution order: the
    /// latest [`PRINTF_BUFFER_BYTES`] of text.
    pub(crate) output: std::collections::VecDeque<DeviceOutput>,
    /// Bytes of text in `output`.
    pub(crate) output_bytes: u64,
    /// Lines dropped from the front of `output` to keep it within [`PRINTF_BUFFER_BYTES`].
    pub(crate) output_dropped: u64,
    /// The device heap's bookkeeping (crate::heap); an allocation's bytes are a region of
    /// `global` at its block's slot (slots from `static_regions` on).
    pub(crate) heap: crate::heap::Heap,
    /// Regions of `global` before the heap's: the buffers and variables, sorted by base.
    pub(crate) static_regions: usize,
    /// Per register: the mask of its declared width (`.pred` registers hold 0 or 1).
    pub(crate) reg_mask: Vec<u64>,
    /// Static + dynamic shared bytes per CTA.
    pub(crate) smem_bytes: u32,
    /// Per instruction index: the join of the conditional branch there ([`reconverge::joins`]).
    pub(crate) joins: Vec<Option<u32>>,
    /// Per instruction index: a branch that waits for an aligned `bar.sync` it would otherwise
    /// run ahead of ([`Machine::set_branches_waiting_for_barrier`]); empty: none.
    pub(crate) waits_for_barrier: Vec<bool>,
    /// Asynchronous operations in flight.
    pub(crate) pending: Vec<Pending>,
    /// Scheduler step.
    pub(crate) step: u64,
    /// Warp-instructions executed.
    pub(crate) instructions: u64,
    /// Thread-instructions executed.
    pub(crate) thread_instructions: u64,
    /// mbarrier phases completed.
    pub(crate) phases_completed: u64,
    /// Findings so far (the first [`MAX_FINDINGS`]).
    pub(crate) findings: Vec<Finding>,
    /// Findings past [`MAX_FINDINGS`], counted only (a `--ub warn` run that finds something at
    /// every step would otherwise grow without bound).
    pub(crate) findings_dropped: u64,
    /// Step of the last progress event.
    pub(crate) last_progress: u64,
    /// Async issue counter.
    pub(crate) seq: u64,
    /// Tokens returned by `.noComplete` arrives (the only ones `mbarrier.pending_count` may read).
    pub(crate) nocomplete_tokens: std::collections::HashSet<u64>,
    /// The TMA engine's bulk async-groups and proxy bookkeeping (exec/tma.rs).
    pub(crate) tma: crate::exec::TmaState,
    /// The wgmma groups and register rules of each warp (exec/wgmma.rs).
    pub(crate) wgmma: crate::exec::WgmmaState,
    /// Record being built for the current instruction (when logging).
    pub(crate) rec: Option<Retire>,
    /// Where records go.
    pub(crate) sink: Option<Box<dyn RetireSink + 'p>>,
    /// The race detector ([`crate::race`]): every byte of its shadow memory is allocated there.
    pub(crate) race: crate::race::Race,
    /// The instruction executing now: (cta, warp, pc), the issuer of asynchronous operations.
    pub(crate) cur_at: (u32, u32, u32),
    /// Per mbarrier (cta, offset): who arrived on it or completed tx on it, as (cta, warp,
    /// asynchronous), for the deadlock report's wait-for graph.
    pub(crate) mbar_arrivers: HashMap<(u32, u32), Vec<(u32, u32, bool)>>,
    /// Lockstep only: mbarrier instructions in flight whose steps the engine under test applied
    /// one by one before they retired ([`exec::mbar_step_early`]); empty otherwise.
    pub(crate) mbar_early: Vec<exec::EarlySteps>,
    rng: u64,
    rr: usize,
    order: Vec<(u32, u32)>,
    /// Seeded mode: the weight of each warp of `order` (module doc).
    speed: Vec<u64>,
    /// Seeded mode: the step at which the speeds are redrawn.
    reshuffle_at: u64,
    /// Seeded mode: runnable warps of this step (index in `order`, pc, lanes, weight), reused.
    runnable: Vec<(usize, u32, u32, u64)>,
    /// Which warps are proven to spin forever (crate::spin), once a spin limit passed without
    /// progress.
    pub(crate) spin: crate::spin::SpinWatch,
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

impl<'p> Machine<'p> {
    /// Builds the launch: global buffers, params, CTAs and warps.
    pub fn new(prog: &'p Program, cfg: Config) -> Machine<'p> {
        let m = &prog.module;
        let man = &prog.manifest;
        // Global buffers, then module-scope .global variables.
        let mut global = Vec::new();
        let mut buf_addr = HashMap::new();
        for (b, base) in man.buffers.iter().zip(man.buffer_bases()) {
            buf_addr.insert(b.name.clone(), base);
            global.push(Region { name: b.name.clone(), base, bytes: b.initial_bytes() });
        }
        let mut next = man.buffers_end();
        // Shared, frame and parameter offsets: the one layout the limits were checked on.
        let layout = Layout::of(m, man);
        let mut sym_offset = layout.offset.clone();
        let mut params = Vec::with_capacity(layout.param_bytes as usize);
        let in_frame = layout.in_frame.clone();
        let entry = m.entry;
        for (i, s) in m.symbols.iter().enumerate() {
            if in_frame[i] {
                continue;
            }
            match s.space {
                Space::Global | Space::Const => {
                    sym_offset[i] = next;
                    global.push(Region { name: s.name.clone(), base: next, bytes: vec![0u8; s.bytes().max(1) as usize] });
                    next += (s.bytes() + 255) & !255;
                    next += 256;
                }
                Space::Param if s.func == Some(entry) => {
                    params.resize(sym_offset[i] as usize, 0);
                    params.extend(param_image(man, &buf_addr, &s.name, s.bytes() as usize));
                }
                _ => {}
            }
        }
        // Initializers, once every variable has its address (they may hold addresses).
        for (i, s) in m.symbols.iter().enumerate() {
            if s.init.is_empty() || !matches!(s.space, Space::Global | Space::Const) || in_frame[i] {
                continue;
            }
            let eb = s.ty.type_bytes().unwrap_or(1) as usize;
            let Some(r) = global.iter_mut().find(|r| r.base == sym_offset[i]) else { continue };
            for (k, v) in s.init.iter().enumerate() {
                let val = init_value(m, &sym_offset, v);
                if (k + 1) * eb <= r.bytes.len() {
                    r.bytes[k * eb..(k + 1) * eb].copy_from_slice(&val.to_le_bytes()[..eb]);
                }
            }
        }
        let smem_bytes = layout.smem_bytes as u32;
        let entry_frame = layout.local_bytes;

        let l = &man.launch;
        let threads = man.threads_per_cta() as usize;
        let nwarps = threads.div_ceil(WARP);
        let nregs = m.kernel.regs.len();
        let entry_pc = m.entry_pc();
        let mut ctas = Vec::new();
        let mut clusters: Vec<Cluster> = Vec::new();
        let cpg = [l.grid[0] / l.cluster[0], l.grid[1] / l.cluster[1], l.grid[2] / l.cluster[2]];
        for z in 0..l.grid[2] {
            for y in 0..l.grid[1] {
                for x in 0..l.grid[0] {
                    let id = ctas.len() as u32;
                    let cid = [x / l.cluster[0], y / l.cluster[1], z / l.cluster[2]];
                    let cluster = cid[0] + cpg[0] * (cid[1] + cpg[1] * cid[2]);
                    let cc = [x % l.cluster[0], y % l.cluster[1], z % l.cluster[2]];
                    let rank = cc[0] + l.cluster[0] * (cc[1] + l.cluster[1] * cc[2]);
                    while clusters.len() <= cluster as usize {
                        clusters.push(Cluster::default());
                    }
                    let cl = &mut clusters[cluster as usize];
                    if cl.ctas.len() <= rank as usize {
                        cl.ctas.resize(rank as usize + 1, u32::MAX);
                    }
                    cl.ctas[rank as usize] = id;
                    let warps = (0..nwarps)
                        .map(|w| {
                            let launched = (0..WARP).filter(|l| w * WARP + l < threads).fold(0, |m, l| m | 1 << l);
                            Warp::new(vec![0; nregs * WARP], entry_pc, launched)
                        })
                        .collect();
                    ctas.push(Cta {
                        id,
                        ctaid: [x, y, z],
                        cluster,
                        rank,
                        cluster_ctaid: cc,
                        smem: vec![0; smem_bytes as usize],
                        warps,
                        bars: vec![NamedBarrier::default(); 16],
                        mbarriers: MbarTable::new(smem_bytes),
                        local: vec![vec![0; entry_frame as usize]; nwarps * WARP],
                    });
                }
            }
        }
        let order = ctas.iter().flat_map(|c| (0..c.warps.len() as u32).map(move |w| (c.id, w))).collect();
        // splitmix64 of the seed: `seed ^ K | 1` would give seeds 2k and 2k+1 the same stream.
        let rng = cfg
            .seed
            .map(|s| {
                let mut z = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            })
            .unwrap_or(1)
            .max(1);
        let reg_mask = m
            .kernel
            .regs
            .iter()
            .map(|r| match r.ty.type_bytes() {
                _ if r.ty == Mod::Pred => 1,
                Some(b) if b < 8 => (1u64 << (8 * b)) - 1,
                _ => u64::MAX,
            })
            .collect();
        let race_mode = cfg.race;
        let static_regions = global.len();
        let mut mach = Machine {
            prog,
            cfg,
            reg_mask,
            ctas,
            clusters,
            global,
            params,
            sym_offset,
            sym_in_frame: in_frame,
            frame_bytes: layout.frame_bytes,
            output: std::collections::VecDeque::new(),
            output_bytes: 0,
            output_dropped: 0,
            heap: Default::default(),
            static_regions,
            smem_bytes,
            joins: reconverge::joins(&m.kernel),
            waits_for_barrier: Vec::new(),
            pending: Vec::new(),
            step: 0,
            instructions: 0,
            thread_instructions: 0,
            phases_completed: 0,
            findings: Vec::new(),
            findings_dropped: 0,
            last_progress: 0,
            seq: 0,
            nocomplete_tokens: Default::default(),
            tma: Default::default(),
            wgmma: Default::default(),
            rec: None,
            sink: None,
            race: crate::race::Race::off(),
            cur_at: (0, 0, 0),
            mbar_arrivers: HashMap::new(),
            mbar_early: Vec::new(),
            rng,
            rr: 0,
            order,
            speed: Vec::new(),
            reshuffle_at: 0,
            runnable: Vec::new(),
            spin: Default::default(),
        };
        mach.race = crate::race::Race::new(&mach, race_mode);
        mach
    }

    /// Records that (cta, warp) arrived on (or, `asynchronous`, an operation it issued completed tx
    /// on) the mbarrier at (`mc`, `off`).
    pub fn note_arrival(&mut self, mc: u32, off: u32, cta: u32, warp: u32, asynchronous: bool) {
        let v = self.mbar_arrivers.entry((mc, off)).or_default();
        if !v.contains(&(cta, warp, asynchronous)) {
            v.push((cta, warp, asynchronous));
        }
    }

    /// Bytes of race-detector shadow memory allocated now ([`crate::race::Race::shadow_bytes`]).
    pub fn race_shadow_bytes(&self) -> u64 {
        self.race.shadow_bytes()
    }

    /// Bytes of race-detector shadow memory this run will need at most (its part of the run's
    /// memory estimate: [`crate::race::estimate_bytes`]).
    pub fn race_shadow_estimate(&self) -> u64 {
        let warps: u64 = self.ctas.iter().map(|c| c.warps.len() as u64).sum();
        let global: u64 = self.global.iter().map(|r| r.bytes.len() as u64).sum();
        crate::race::estimate_bytes(self.ctas.len() as u64, self.smem_bytes as u64, global, warps, self.race.agents() as u64, self.cfg.race)
    }

    /// The module.
    pub fn module(&self) -> &'p Module {
        &self.prog.module
    }

    /// Sends retire records to `sink`.
    pub fn set_sink(&mut self, sink: Box<dyn RetireSink + 'p>) {
        self.sink = Some(sink);
    }

    /// Runs to completion or to the first stopping finding.
    pub fn run(&mut self) -> Outcome {
        loop {
            match self.step_once() {
                Ok(true) => {}
                Ok(false) => return Outcome::Completed,
                Err(Stop::Finding) => return Outcome::Fault,
                Err(Stop::Unsupported(s)) => return Outcome::Unsupported(s),
            }
        }
    }

    /// Random number in `0..n` (deterministic mode: 0).
    pub fn rand(&mut self, n: u64) -> u64 {
        if self.cfg.seed.is_none() || n <= 1 {
            return 0;
        }
        xorshift(&mut self.rng) % n
    }

    /// Delay for a new asynchronous operation.
    pub fn async_ready_at(&mut self) -> u64 {
        let d = if self.cfg.seed.is_some() { 1 + self.rand(4 * self.cfg.async_delay) } else { self.cfg.async_delay };
        self.step + d
    }

    /// Schedules an asynchronous completion.
    pub fn push_async(&mut self, op: AsyncOp) {
        let ready_at = self.async_ready_at();
        self.seq += 1;
        if let Some(r) = self.rec.as_mut() {
            r.issued.push(self.seq);
        }
        let (cta, warp, pc) = self.cur_at;
        let (kind, lane) = match &op {
            AsyncOp::Tma(t) => (crate::race::BULK, t.at().2),
            AsyncOp::RemoteWrite { .. } => (crate::race::REMOTE, 0),
            AsyncOp::CpAsync { lane, .. } => (crate::race::CP, *lane),
            AsyncOp::CpAsyncArrive { lane, .. } => (crate::race::CP, *lane),
        };
        crate::race::issued(self, self.seq, cta, warp, lane, pc, kind, matches!(op, AsyncOp::CpAsyncArrive { .. }));
        self.pending.push(Pending { ready_at, seq: self.seq, issued_at: (cta, warp, pc), op });
    }

    /// Marks forward progress (resets the spin detector).
    pub fn progress(&mut self) {
        self.last_progress = self.step;
    }

    /// One scheduler step: complete due async ops, run one warp-instruction.
    /// Returns Ok(false) when every thread has exited.
    pub fn step_once(&mut self) -> Result<bool, Stop> {
        self.step += 1;
        if self.step > self.cfg.max_steps {
            return self.step_limit("step", self.cfg.max_steps);
        }
        self.complete_due(false)?;
        // Pick a runnable warp.
        let picked = if self.cfg.seed.is_some() { self.pick_weighted() } else { self.pick_round_robin() };
        let Some((c, w, (pc, mask))) = picked else {
            if self.ctas.iter().all(|c| c.warps.iter().all(|w| w.exited())) {
                // Outstanding async writes still land (they were issued before exit).
                while !self.pending.is_empty() {
                    self.complete_due(true)?;
                }
                return Ok(false);
            }
            if !self.pending.is_empty() {
                self.complete_due(true)?;
                return Ok(true);
            }
            return self.deadlock(false);
        };
        if self.step - self.last_progress > self.cfg.spin_limit && self.pending.is_empty() && self.spins_forever(|_, _| false) {
            return self.deadlock(true);
        }
        self.exec_at(c, w, pc, mask)?;
        Ok(true)
    }

    /// Deterministic mode: the next runnable warp after the last one picked. The golden model's
    /// own schedule blocks at a barrier ([`Warp::next_group`]): running ahead of one
    /// ([`Machine::issue_group`]) is timing, which an engine under test does and the lockstep follows.
    fn pick_round_robin(&mut self) -> Option<(u32, u32, (u32, u32))> {
        let n = self.order.len();
        let start = self.rr;
        for k in 0..n {
            let (c, w) = self.order[(start + k) % n];
            if let Some(g) = self.ctas[c as usize].warps[w as usize].next_group() {
                self.rr = (start + k + 1) % n;
                return Some((c, w, g));
            }
        }
        None
    }

    /// Seeded mode: a runnable warp, picked with probability proportional to its speed (module
    /// doc). Speeds are 1, 2, 4, ... 64, redrawn after a random epoch of 1 to 2048 steps.
    fn pick_weighted(&mut self) -> Option<(u32, u32, (u32, u32))> {
        let n = self.order.len();
        if self.step >= self.reshuffle_at || self.speed.len() != n {
            self.speed.resize(n, 1);
            for k in 0..n {
                self.speed[k] = 1 << self.rand(7);
            }
            self.reshuffle_at = self.step + 1 + self.rand(2048);
        }
        let mut runnable = std::mem::take(&mut self.runnable);
        runnable.clear();
        let mut total = 0;
        for (k, &(c, w)) in self.order.iter().enumerate() {
            let warp = &self.ctas[c as usize].warps[w as usize];
            if let Some((pc, mask)) = warp.next_group() {
                // A warp whose last mbarrier poll failed is spinning: it runs at the lowest speed
                // (like a try_wait that suspends the thread for a while), so fast pollers do not
                // fill the run with failed polls while the warp they wait for is slow.
                let wgt = if warp.polling.is_some() { 1 } else { self.speed[k] };
                runnable.push((k, pc, mask, wgt));
                total += wgt;
            }
        }
        let mut r = self.rand(total);
        let mut picked = None;
        for &(k, pc, mask, wgt) in &runnable {
            if r < wgt {
                let (c, w) = self.order[k];
                picked = Some((c, w, (pc, mask)));
                break;
            }
            r -= wgt;
        }
        self.runnable = runnable;
        picked
    }

    /// Completes due asynchronous operations; with `force`, the earliest one regardless of time.
    fn complete_due(&mut self, force: bool) -> Result<(), Stop> {
        if self.pending.is_empty() {
            return Ok(());
        }
        loop {
            let idx = self
                .pending
                .iter()
                .enumerate()
                .filter(|(_, p)| force || p.ready_at <= self.step)
                .min_by_key(|(_, p)| (p.ready_at, p.seq))
                .map(|(i, _)| i);
            let Some(i) = idx else { return Ok(()) };
            let p = self.pending.remove(i);
            self.progress();
            self.complete_pending(p)?;
            if force {
                return Ok(());
            }
        }
    }

    /// Whether the run is stuck, asked once its engine went its spin limit without progress
    /// with nothing asynchronous pending: every live warp is blocked (no ready lane and not
    /// `busy` in an engine's unit) or proven to repeat its state (crate::spin). The first call of
    /// a progress epoch starts the watch and answers no.
    pub fn spins_forever(&mut self, busy: impl Fn(usize, usize) -> bool) -> bool {
        if !self.spin.watching(self.last_progress) {
            let per_cta = self.ctas.first().map_or(0, |c| c.warps.len());
            self.spin.start(self.last_progress, self.ctas.len(), per_cta, self.module().kernel.regs.len());
            return false;
        }
        if !self.spin.take_news() {
            return false;
        }
        self.ctas.iter().enumerate().all(|(c, cta)| {
            cta.warps.iter().enumerate().all(|(w, warp)| warp.exited() || self.spin.repeats(c, w) || (!busy(c, w) && warp.next_group().is_none()))
        })
    }

    /// Reports the `StepLimit` finding: the run used up its budget of `limit` `unit`s (step or
    /// cycle) without finishing and without being proven stuck. It points at the first warp
    /// that could run, at the instruction it was about to execute.
    pub fn step_limit(&mut self, unit: &str, limit: u64) -> Result<bool, Stop> {
        let msg = format!(
            "the run used its whole budget of {limit} {unit}s without finishing (`--max-steps N` raises it); not a deadlock: its warps were still changing state ({} warp-instructions executed; memory or synchronization state last changed at {unit} {})",
            self.instructions, self.last_progress
        );
        let at = self.ctas.iter().enumerate().find_map(|(c, cta)| {
            cta.warps.iter().enumerate().find_map(|(w, warp)| warp.next_group().map(|(pc, lanes)| (c as u32, w as u32, lanes.trailing_zeros(), pc)))
        });
        self.report(FindingKind::StepLimit, msg, at)?;
        Err(Stop::Finding)
    }

    /// Reports the `Deadlock` finding with each live warp's wait (`spinning`: live warps spin
    /// forever without progress, rather than all blocked).
    pub fn deadlock(&mut self, spinning: bool) -> Result<bool, Stop> {
        let mut lines = Vec::new();
        for c in 0..self.ctas.len() {
            for w in 0..self.ctas[c].warps.len() {
                let warp = &self.ctas[c].warps[w];
                if warp.exited() {
                    continue;
                }
                // A blocked lane's pc already points past the instruction it waits in; a polling
                // warp is at its wait instruction.
                let pcs: Vec<u32> = (0..WARP)
                    .filter(|&l| warp.lane()[l] != Lane::Done)
                    .map(|l| if matches!(warp.lane()[l], Lane::Blocked(_)) { warp.pc()[l].saturating_sub(1) } else { warp.pc()[l] })
                    .collect();
                let pc = warp.polling.map(|p| p.pc).unwrap_or_else(|| pcs.iter().copied().min().unwrap_or(0));
                let what = match self.describe_wait(c, w) {
                    d if d == "running" && self.spin.repeats(c, w) => "spinning: its registers and pcs repeat while nothing it reads can change".to_string(),
                    d => d,
                };
                let could = self.who_could_arrive(c, w);
                let ins = if (pc as usize) < self.module().kernel.body.len() { format!(" {}", crate::race::where_(self, pc)) } else { String::new() };
                lines.push(format!("cta {c} warp {w} at pc {pc}{ins}: {what}{could}"));
            }
        }
        let msg = format!(
            "{}; no asynchronous operation is pending:\n    {}",
            if spinning {
                format!("every live warp is blocked or spins forever: no memory or synchronization state changed since step {}, and each spinning warp came back to a state it had (registers, pcs, lanes)", self.last_progress)
            } else {
                "every live warp is blocked".to_string()
            },
            lines.join("\n    ")
        );
        self.report(FindingKind::Deadlock, msg, None)?;
        Err(Stop::Finding)
    }

    /// The wait-for graph's edges out of warp `w` of CTA `c`: who could still complete what it
    /// waits on, and why they will not (they exited, or are blocked themselves; nothing
    /// asynchronous is in flight when this is asked).
    fn who_could_arrive(&self, c: usize, w: usize) -> String {
        let warp = &self.ctas[c].warps[w];
        let state = |cc: usize, ww: usize| -> String {
            let x = &self.ctas[cc].warps[ww];
            if x.exited() {
                return "exited".into();
            }
            if let Some(p) = x.polling {
                return format!("polling the mbarrier at cta {} shared 0x{:x}{}", p.cta, p.offset, self.shared_var_name(p.offset));
            }
            match (0..WARP).find_map(|l| if let Lane::Blocked(b) = x.lane()[l] { Some(b) } else { None }) {
                Some(Wait::NamedBarrier(id, _)) | Some(Wait::NamedBarrierWarp(id)) => format!("blocked in named barrier {id}"),
                Some(Wait::ClusterBarrier(_)) => "blocked in barrier.cluster.wait".into(),
                Some(Wait::CpAsyncGroups(n)) => format!("blocked in cp.async.wait_group {n}"),
                Some(Wait::BulkGroups(n, _)) => format!("blocked in cp.async.bulk.wait_group {n}"),
                Some(Wait::WgmmaGroups(g)) => format!("blocked in wgmma.wait_group until its warpgroup has committed {g} wgmma-groups"),
                None => "running".into(),
            }
        };
        let others = |cands: &[(usize, usize)]| -> String {
            let v: Vec<String> = cands.iter().filter(|&&(cc, ww)| (cc, ww) != (c, w)).map(|&(cc, ww)| format!("cta {cc} warp {ww} ({})", state(cc, ww))).collect();
            if v.is_empty() { "none".into() } else { v.join(", ") }
        };
        if let Some(p) = warp.polling {
            let hist = self.mbar_arrivers.get(&(p.cta, p.offset)).cloned().unwrap_or_default();
            let warps: Vec<(usize, usize)> = hist.iter().filter(|a| !a.2).map(|a| (a.0 as usize, a.1 as usize)).collect();
            let asyncs = hist.iter().any(|a| a.2);
            let s = crate::mbarrier::MbarrierState::decode(self.read_mbar_word(p.cta, p.offset));
            let mut out = if warps.is_empty() {
                format!(" <- no warp has arrived on it yet; every live warp is blocked: {}", others(&self.live_warps()))
            } else {
                format!(" <- warps that arrived on it before: {}", others(&warps))
            };
            if s.tx_count != 0 || asyncs {
                out.push_str(&format!("; tx-count {} outstanding and no asynchronous operation (TMA copy, st.async, cp.async.mbarrier.arrive) is in flight to complete it", s.tx_count));
            }
            return out;
        }
        let blocked = (0..WARP).find_map(|l| if let Lane::Blocked(b) = warp.lane()[l] { Some(b) } else { None });
        match blocked {
            Some(Wait::NamedBarrier(id, _)) | Some(Wait::NamedBarrierWarp(id)) => {
                let b = &self.ctas[c].bars[id as usize];
                let missing: Vec<(usize, usize)> = (0..self.ctas[c].warps.len()).filter(|&x| b.arrived_warps >> x & 1 == 0).map(|x| (c, x)).collect();
                format!(" <- warps not arrived on barrier {id}: {}", others(&missing))
            }
            Some(Wait::ClusterBarrier(_)) => {
                let cl = &self.clusters[self.ctas[c].cluster as usize];
                let missing: Vec<(usize, usize)> = cl
                    .ctas
                    .iter()
                    .flat_map(|&cc| (0..self.ctas[cc as usize].warps.len()).map(move |x| (cc as usize, x)))
                    .filter(|&(cc, x)| {
                        let y = &self.ctas[cc].warps[x];
                        !y.exited() && (0..WARP).any(|l| y.lane()[l] != Lane::Done && y.cluster_arrival[l].is_none())
                    })
                    .collect();
                format!(" <- warps of the cluster not arrived: {}", others(&missing))
            }
            _ => String::new(),
        }
    }

    /// Every warp not exited, as (cta, warp).
    fn live_warps(&self) -> Vec<(usize, usize)> {
        (0..self.ctas.len()).flat_map(|c| (0..self.ctas[c].warps.len()).map(move |w| (c, w))).filter(|&(c, w)| !self.ctas[c].warps[w].exited()).collect()
    }

    /// ` (`name`)` of the shared variable at `off`, for messages.
    pub fn shared_var_name(&self, off: u32) -> String {
        let md = self.module();
        md.symbols
            .iter()
            .enumerate()
            .filter(|(i, s)| s.space == Space::Shared && !self.sym_in_frame[*i] && self.sym_offset[*i] <= off as u64 && (off as u64) < self.sym_offset[*i] + s.bytes().max(1))
            .map(|(i, s)| format!(" (`{}` + 0x{:x})", s.name, off as u64 - self.sym_offset[i]))
            .next()
            .unwrap_or_default()
    }

    /// Text describing what warp `w` of CTA `c` waits on, with the object's state.
    pub fn describe_wait(&self, c: usize, w: usize) -> String {
        let warp = &self.ctas[c].warps[w];
        let mut parts = Vec::new();
        for l in 0..WARP {
            if let Lane::Blocked(wt) = warp.lane()[l] {
                let s = match wt {
                    Wait::NamedBarrier(id, _) | Wait::NamedBarrierWarp(id) => {
                        let b = &self.ctas[c].bars[id as usize];
                        format!(
                            "named barrier {id}: {} of {} threads arrived (warps {:#x})",
                            b.arrived,
                            b.expected.map(|e| e.to_string()).unwrap_or_else(|| "all".into()),
                            b.arrived_warps
                        )
                    }
                    Wait::ClusterBarrier(_) => {
                        let cl = &self.clusters[self.ctas[c].cluster as usize];
                        format!("cluster barrier phase {}: {} threads arrived", cl.phase, cl.arrived)
                    }
                    Wait::CpAsyncGroups(n) => format!("cp.async.wait_group {n}"),
                    Wait::BulkGroups(n, read) => format!("cp.async.bulk.wait_group{} {n}", if read { ".read" } else { "" }),
                    Wait::WgmmaGroups(g) => format!("wgmma.wait_group: the warpgroup's warps have not all committed {g} wgmma-groups"),
                };
                if !parts.contains(&s) {
                    parts.push(s);
                }
            }
        }
        let held = warp.held();
        for b in warp.conv().iter().filter(|b| b.mask & held != 0) {
            let line = |pc: u32| self.module().kernel.body.get(pc as usize).map(|i| i.loc.line).unwrap_or(0);
            parts.push(format!(
                "lanes {:#010x} wait at the join (line {}) of the branch at line {} for lanes {:#010x} to reconverge",
                b.mask & held,
                line(b.join),
                line(b.branch),
                b.mask & warp.live() & !held
            ));
        }
        if let Some(p) = warp.polling {
            let word = self.read_mbar_word(p.cta, p.offset);
            let s = crate::mbarrier::MbarrierState::decode(word);
            parts.push(format!(
                "polling the mbarrier at cta {} shared 0x{:x}{}: phase {}, pending {}/{} arrivals, tx-count {}",
                p.cta, p.offset, self.shared_var_name(p.offset), self.ctas[p.cta as usize].mbarriers.get(&p.offset).map(|m| m.phase).unwrap_or(s.phase_parity as u64), s.pending_arrivals, s.expected_arrivals, s.tx_count
            ));
        }
        if parts.is_empty() {
            "running".into()
        } else {
            parts.join("; ")
        }
    }

    /// Reads an mbarrier word (no checks).
    pub fn read_mbar_word(&self, cta: u32, off: u32) -> u64 {
        let s = &self.ctas[cta as usize].smem;
        let o = off as usize;
        if o + 8 > s.len() {
            return 0;
        }
        u64::from_le_bytes(s[o..o + 8].try_into().unwrap())
    }

    /// Executes one warp-instruction for the lanes in `mask` at `pc`.
    fn exec_at(&mut self, c: u32, w: u32, pc: u32, group: u32) -> Result<(), Stop> {
        let module = self.module();
        let Some(ins) = module.kernel.body.get(pc as usize) else {
            // Falling off the end of the kernel body is an implicit exit.
            self.implicit_exit(c, w, group);
            exec::on_lanes_exit(self, c, w, group)?;
            return Ok(());
        };
        let mask = self.guard_mask(c, w, pc, group);
        self.cur_at = (c, w, pc);
        self.instructions += 1;
        self.thread_instructions += mask.count_ones() as u64;
        if self.sink.is_some() {
            self.rec = Some(Retire { step: self.step, cta: c, warp: w, pc, mask, ..Default::default() });
        }
        let flow = if mask == 0 {
            Flow::Next
        } else {
            let mut cx = exec::Cx { m: self, cta: c, warp: w, pc, mask, group };
            exec::dispatch(&mut cx, ins)?
        };
        self.advance(c, w, pc, group, mask, flow);
        if flow == Flow::Exit {
            self.progress();
            exec::on_lanes_exit(self, c, w, mask)?;
        }
        if let (Some(r), Some(s)) = (self.rec.take(), self.sink.as_mut()) {
            s.retire(r);
        }
        Ok(())
    }

    /// The group warp (c, w) issues next: its ready lanes at the lowest pc ([`Warp::next_group`]),
    /// or, while every live lane waits at an aligned `bar.sync` (`run_ahead`), those lanes at the
    /// register-only instruction after it ([`exec::runs_ahead_of_barrier`]).
    pub fn issue_group(&self, c: u32, w: u32) -> Option<(u32, u32)> {
        self.issue_group_after(c, w, self.ctas[c as usize].warps[w as usize].next_group())
    }

    /// [`Machine::issue_group`] given the warp's [`Warp::next_group`] `next` (an engine that
    /// keeps it across cycles while [`Warp::version`] stays passes its copy).
    pub fn issue_group_after(&self, c: u32, w: u32, next: Option<(u32, u32)>) -> Option<(u32, u32)> {
        if next.is_some() {
            return next;
        }
        let warp = &self.ctas[c as usize].warps[w as usize];
        let id = warp.run_ahead?;
        let live = warp.live();
        if live == 0 {
            return None;
        }
        let pc = warp.pc()[live.trailing_zeros() as usize];
        let together = (0..WARP).filter(|&l| live >> l & 1 == 1).all(|l| {
            warp.pc()[l] == pc && warp.frames()[l].is_empty() && matches!(warp.lane()[l], Lane::Blocked(Wait::NamedBarrier(b, _)) if b == id)
        });
        if !together {
            return None;
        }
        let ins = self.module().kernel.body.get(pc as usize)?;
        match exec::runs_ahead_of_barrier(ins.op) {
            exec::RunAhead::No => None,
            exec::RunAhead::Yes => Some((pc, live)),
            // a branch that would split the warp waits for the barrier, and so does one the
            // timing model says silicon waits at
            exec::RunAhead::IfUniform => {
                let taken = self.guard_mask(c, w, pc, live);
                let waits = self.waits_for_barrier.get(pc as usize).copied().unwrap_or(false);
                (!waits && (taken == 0 || taken == live)).then_some((pc, live))
            }
        }
    }

    /// Marks the branches (by instruction index) that wait for an aligned `bar.sync` before them
    /// even when the warp would take them together: a timing model's choice (the RTL engine's:
    /// the branches ptxas compiles as possibly divergent, `timing::divergent_branches`). Results
    /// do not change: a branch only waits longer.
    pub fn set_branches_waiting_for_barrier(&mut self, waits: Vec<bool>) {
        self.waits_for_barrier = waits;
    }

    /// Executes the next group of warp `w` of CTA `c` ([`Machine::issue_group`]), as one
    /// scheduler step would; returns the group's `(pc, lanes)`, or `None` when no lane is ready.
    /// The lockstep harness drives the golden model through this, warp by warp, in another
    /// engine's retire order.
    pub fn step_warp(&mut self, c: u32, w: u32) -> Result<Option<(u32, u32)>, Stop> {
        let Some((pc, group)) = self.issue_group(c, w) else { return Ok(None) };
        self.exec_at(c, w, pc, group)?;
        Ok(Some((pc, group)))
    }

    /// The lanes of `group` (at `pc`) whose guard predicate holds: the lanes that execute.
    pub fn guard_mask(&self, c: u32, w: u32, pc: u32, group: u32) -> u32 {
        let mut mask = group;
        if let Some(g) = self.module().kernel.body.get(pc as usize).and_then(|i| i.guard) {
            let warp = &self.ctas[c as usize].warps[w as usize];
            let base = g.reg.0 as usize * WARP;
            for l in 0..WARP {
                if mask >> l & 1 == 1 && ((warp.regs[base + l] & 1 == 1) == g.negated) {
                    mask &= !(1 << l);
                }
            }
        }
        mask
    }

    /// Marks the lanes of `group` done after they fell off the end of the kernel body.
    pub fn implicit_exit(&mut self, c: u32, w: u32, group: u32) {
        let warp = &mut self.ctas[c as usize].warps[w as usize];
        for l in 0..WARP {
            if group >> l & 1 == 1 {
                warp.set_lane(l, Lane::Done);
            }
        }
        let live = warp.live();
        warp.conv_mut().retain(|b| b.mask & live != 0);
    }

    /// Applies an instruction's control flow to the lanes of `group` at `pc` (`mask`: the lanes
    /// whose guard held): next pc, branch target, or exit; a branch that splits the group opens a
    /// convergence barrier at its join, and a group that executed a join closes the barriers
    /// waiting there. No named-barrier bookkeeping (the golden model's [`exec::on_lanes_exit`]
    /// runs after an exit in `exec_at`).
    pub fn advance(&mut self, c: u32, w: u32, pc: u32, group: u32, mask: u32, flow: Flow) {
        self.advance_lanes(c, w, pc, group, mask, flow);
        // A taken backward branch: where a spin watch samples the warp (crate::spin).
        if matches!(flow, Flow::Jump(t) if t <= pc) && mask != 0 && self.spin.watching(self.last_progress) {
            self.spin.sample(c as usize, w as usize, &self.ctas[c as usize].warps[w as usize]);
        }
    }

    fn advance_lanes(&mut self, c: u32, w: u32, pc: u32, group: u32, mask: u32, flow: Flow) {
        let join = self.joins.get(pc as usize).copied().flatten();
        let warp = &mut self.ctas[c as usize].warps[w as usize];
        if !warp.conv().is_empty() {
            let live = warp.live() & !if flow == Flow::Exit { mask } else { 0 };
            reconverge::retire(warp.conv_mut(), pc, group, live);
        }
        if let Flow::Jump(t) = flow {
            if t != pc + 1 {
                reconverge::diverge(warp.conv_mut(), join, pc, group, mask);
            }
        }
        match flow {
            Flow::Next => {
                let at = (0..WARP).fold(0u32, |m, l| m | ((warp.pc()[l] == pc) as u32) << l);
                warp.set_pcs(group & at, pc + 1);
            }
            Flow::Jump(t) => {
                warp.set_pcs(group & mask, t);
                warp.set_pcs(group & !mask, pc + 1);
            }
            Flow::Exit => {
                for l in exec::lanes(group & mask) {
                    warp.set_lane(l as usize, Lane::Done);
                }
                warp.set_pcs(group & !mask, pc + 1);
            }
            Flow::Lanes => warp.set_pcs(group & !mask, pc + 1),
        }
    }

    /// Completes the pending asynchronous operation with issue number `seq` now (the lockstep
    /// harness's setter for "which asynchronous operation completed when"). Returns whether one
    /// was pending.
    pub fn complete_seq(&mut self, seq: u64) -> Result<bool, Stop> {
        let Some(i) = self.pending.iter().position(|p| p.seq == seq) else { return Ok(false) };
        let p = self.pending.remove(i);
        self.progress();
        self.complete_pending(p)?;
        Ok(true)
    }

    /// Applies a completed asynchronous operation (the race detector knows which one it is).
    fn complete_pending(&mut self, p: Pending) -> Result<(), Stop> {
        self.race.completing = Some(p.seq);
        let r = exec::complete_async(self, p.op);
        self.race.completing = None;
        crate::race::retire_op(self, p.seq);
        r
    }

    /// Where instruction `pc` comes from (None past the end of the body): the program's file and
    /// line or, for CUDA input, the `.cu` line of nvcc's `.loc` with the PTX line beside. The one
    /// source position of findings, race reports and lockstep divergences.
    pub fn source_of(&self, pc: u32) -> Option<SourcePlace> {
        let ins = self.module().kernel.body.get(pc as usize)?;
        let instr = printer::print_instr(self.module(), ins);
        let cu = self.prog.cuda.as_ref().and_then(|cu| Some((cu, self.module().source_position(ins.src, Some(&cu.file))?)));
        Some(match cu {
            Some((cu, (file, line, col))) => SourcePlace {
                file: if file == cu.file { self.prog.path.clone() } else { file },
                line,
                col,
                ptx: format!("{}:{}:{}", cu.ptx_path, ins.loc.line, ins.loc.col),
                ptx_line: ins.loc.line,
                instr,
            },
            None => SourcePlace { file: self.prog.path.clone(), line: ins.loc.line, col: ins.loc.col, ptx: String::new(), ptx_line: ins.loc.line, instr },
        })
    }

    /// Records a finding; in error mode returns `Err(Stop::Finding)`.
    pub fn report(&mut self, kind: FindingKind, message: String, at: Option<(u32, u32, u32, u32)>) -> Result<(), Stop> {
        let mut location = Location { file: self.prog.path.clone(), ..Default::default() };
        if let Some((cta, warp, lane, pc)) = at {
            location.cta = cta;
            location.warp = warp;
            location.lane = lane;
            location.pc = pc;
            if let Some(src) = self.source_of(pc) {
                (location.file, location.line, location.col, location.ptx) = (src.file, src.line, src.col, src.ptx);
                location.instr = src.instr;
            }
        }
        if self.findings.len() < MAX_FINDINGS {
            self.findings.push(Finding { kind, message, location });
        } else {
            self.findings_dropped += 1;
        }
        match self.cfg.ub {
            UbMode::Error if kind.is_race() && self.race.go_on => Ok(()),
            UbMode::Error => Err(Stop::Finding),
            UbMode::Warn => Ok(()),
        }
    }

    /// Whether the kernel is known to use no wgmma instruction (exec::dispatch skips its checks).
    #[inline]
    pub fn wgmma_idle(&self) -> bool {
        self.wgmma.idle()
    }

    /// The contents of an output buffer.
    pub fn buffer(&self, name: &str) -> Option<&[u8]> {
        self.global.iter().find(|r| r.name == name).map(|r| r.bytes.as_slice())
    }
}

// ---- memory ----------------------------------------------------------------------------------

/// A resolved memory location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Global region index, byte offset.
    Global(usize, usize),
    /// Shared memory of a CTA (linear id), byte offset.
    Shared(u32, usize),
    /// Local memory of thread (cta, thread index), byte offset.
    Local(u32, usize, usize),
    /// Kernel parameter buffer offset.
    Param(usize),
}

/// Why an address did not resolve.
#[derive(Debug, Clone)]
pub struct BadAddr {
    /// Finding kind.
    pub kind: FindingKind,
    /// Text.
    pub msg: String,
}

impl<'p> Machine<'p> {
    /// Resolves an address in `space` (None = generic) issued by thread (cta, warp, lane).
    pub fn resolve(&self, cta: u32, warp: u32, lane: u32, space: Option<Mod>, addr: u64, size: usize) -> Result<Place, BadAddr> {
        let oob = |what: &str| BadAddr {
            kind: FindingKind::MemOutOfBounds,
            msg: format!("{size}-byte access at {what} 0x{addr:x} is outside every allocation{}", if what.contains("global") { self.freed_note(addr) } else { String::new() }),
        };
        if size > 1 && addr % (size.min(16) as u64) != 0 {
            return Err(BadAddr { kind: FindingKind::MemMisaligned, msg: format!("{size}-byte access at 0x{addr:x} is not {}-byte aligned", size.min(16)) });
        }
        match space {
            Some(Mod::Shared) | Some(Mod::SharedCta) => self.shared_place(cta, addr, size, false).ok_or_else(|| oob("shared::cta")),
            Some(Mod::SharedCluster) => self.shared_place(cta, addr, size, true).ok_or_else(|| oob("shared::cluster")),
            Some(Mod::Param) => {
                if (addr as usize) + size <= self.params.len() {
                    Ok(Place::Param(addr as usize))
                } else {
                    Err(oob("param"))
                }
            }
            Some(Mod::Local) => self.local_place(cta, warp, lane, addr, size).ok_or_else(|| oob("local")),
            Some(Mod::Global) | Some(Mod::Const) => self.global_place(addr, size).ok_or_else(|| oob("global")),
            _ => {
                if (SHARED_GENERIC_BASE..SHARED_GENERIC_BASE + (1 << 32)).contains(&addr) {
                    self.shared_place(cta, addr - SHARED_GENERIC_BASE, size, true).ok_or_else(|| oob("generic(shared)"))
                } else if (LOCAL_GENERIC_BASE..LOCAL_GENERIC_BASE + (1 << 32)).contains(&addr) {
                    self.local_place(cta, warp, lane, addr - LOCAL_GENERIC_BASE, size).ok_or_else(|| oob("generic(local)"))
                } else if (PARAM_GENERIC_BASE..PARAM_GENERIC_BASE + (1 << 32)).contains(&addr) {
                    let off = addr - PARAM_GENERIC_BASE;
                    (off as usize + size <= self.params.len()).then_some(Place::Param(off as usize)).ok_or_else(|| oob("generic(param)"))
                } else {
                    self.global_place(addr, size).ok_or_else(|| oob("generic(global)"))
                }
            }
        }
    }

    fn global_place(&self, addr: u64, size: usize) -> Option<Place> {
        if crate::heap::in_heap(addr) {
            let (base, b) = self.heap.find(addr)?;
            let off = addr - base;
            return (off + size as u64 <= b.size).then_some(Place::Global(b.slot, off as usize));
        }
        let i = self.global[..self.static_regions].partition_point(|r| r.base <= addr).checked_sub(1)?;
        let r = &self.global[i];
        let off = (addr - r.base) as usize;
        (off + size <= r.bytes.len()).then_some(Place::Global(i, off))
    }

    /// Why a global access at `addr` is outside every allocation, when it is in a freed heap
    /// block: "use after free" with the block's address.
    fn freed_note(&self, addr: u64) -> String {
        match self.heap.freed_at(addr) {
            Some(base) => format!(" (use after free: it lies in the block at 0x{base:x} that `free` released)"),
            None => String::new(),
        }
    }

    /// `.shared::cta` offsets are the own CTA's; `.shared::cluster` addresses above the first
    /// stride name a CTA by rank (docs/DESIGN.md).
    fn shared_place(&self, cta: u32, addr: u64, size: usize, cluster: bool) -> Option<Place> {
        let (target, off) = if cluster && addr >= SMEM_CLUSTER_STRIDE {
            let rank = addr / SMEM_CLUSTER_STRIDE - 1;
            let cl = &self.clusters[self.ctas[cta as usize].cluster as usize];
            (*cl.ctas.get(rank as usize)?, addr % SMEM_CLUSTER_STRIDE)
        } else {
            (cta, addr)
        };
        (off as usize + size <= self.smem_bytes as usize).then_some(Place::Shared(target, off as usize))
    }

    fn local_place(&self, cta: u32, warp: u32, lane: u32, addr: u64, size: usize) -> Option<Place> {
        let t = warp as usize * WARP + lane as usize;
        let len = self.ctas[cta as usize].local.get(t).map(|v| v.len()).unwrap_or(0);
        (addr as usize + size <= len).then_some(Place::Local(cta, t, addr as usize))
    }

    /// Bytes at a place.
    pub fn read(&self, p: Place, size: usize) -> &[u8] {
        match p {
            Place::Global(i, o) => &self.global[i].bytes[o..o + size],
            Place::Shared(c, o) => &self.ctas[c as usize].smem[o..o + size],
            Place::Local(c, t, o) => &self.ctas[c as usize].local[t][o..o + size],
            Place::Param(o) => &self.params[o..o + size],
        }
    }

    /// Reads a little-endian value of up to 8 bytes.
    pub fn read_u64(&self, p: Place, size: usize) -> u64 {
        let mut b = [0u8; 8];
        b[..size.min(8)].copy_from_slice(&self.read(p, size.min(8))[..size.min(8)]);
        u64::from_le_bytes(b)
    }

    /// Writes bytes at a place (and logs the write).
    pub fn write(&mut self, p: Place, data: &[u8]) {
        let n = data.len();
        let (space, addr) = match p {
            Place::Global(i, o) => {
                self.global[i].bytes[o..o + n].copy_from_slice(data);
                (MemSpace::Global, self.global[i].base + o as u64)
            }
            Place::Shared(c, o) => {
                self.ctas[c as usize].smem[o..o + n].copy_from_slice(data);
                (MemSpace::Shared(c), o as u64)
            }
            Place::Local(c, t, o) => {
                self.ctas[c as usize].local[t][o..o + n].copy_from_slice(data);
                (MemSpace::Local, o as u64)
            }
            Place::Param(o) => {
                self.params[o..o + n].copy_from_slice(data);
                (MemSpace::Local, o as u64)
            }
        };
        self.last_progress = self.step;
        if let Some(r) = self.rec.as_mut() {
            r.mem.push(MemWrite { space, addr, bytes: data.to_vec() });
        }
    }

    /// Logs a sync-unit event.
    pub fn sync_event(&mut self, e: SyncEvent) {
        self.last_progress = self.step;
        if let Some(r) = self.rec.as_mut() {
            r.sync.push(e);
        }
    }

    /// Keeps a line of device output, dropping the oldest lines past [`PRINTF_BUFFER_BYTES`].
    pub(crate) fn push_output(&mut self, o: DeviceOutput) {
        self.output_bytes += o.text.len() as u64;
        self.output.push_back(o);
        while self.output_bytes > PRINTF_BUFFER_BYTES && self.output.len() > 1 {
            let old = self.output.pop_front().expect("more than one line");
            self.output_bytes -= old.text.len() as u64;
            self.output_dropped += 1;
        }
    }

    /// The address a symbol names in its space (for a frame symbol: in the entry's frame; use
    /// [`Machine::symbol_address_of`] for a lane's).
    pub fn symbol_address(&self, s: hopsync_firmware::ir::SymId) -> u64 {
        self.sym_offset[s.0 as usize]
    }

    /// The address a symbol names for a thread: a frame symbol's is in the thread's current
    /// frame (a `.local` address).
    #[inline]
    pub fn symbol_address_of(&self, s: hopsync_firmware::ir::SymId, cta: u32, warp: u32, lane: u32) -> u64 {
        let off = self.sym_offset[s.0 as usize];
        if self.sym_in_frame[s.0 as usize] {
            off + self.ctas[cta as usize].warps[warp as usize].frame_base(lane)
        } else {
            off
        }
    }

    /// Special register value for a thread.
    pub fn sreg(&self, cta: u32, warp: u32, lane: u32, s: Sreg) -> u64 {
        use hopsync_firmware::ir::Dim;
        let c = &self.ctas[cta as usize];
        let l = &self.prog.manifest.launch;
        let t = warp * WARP as u32 + lane;
        let tid = [t % l.block[0], (t / l.block[0]) % l.block[1], t / (l.block[0] * l.block[1])];
        let d = |d: Dim| match d {
            Dim::X => 0,
            Dim::Y => 1,
            Dim::Z => 2,
        };
        let cpg = |i: usize| l.grid[i] / l.cluster[i];
        let cid = |i: usize| c.ctaid[i] / l.cluster[i];
        (match s {
            Sreg::Tid(x) => tid[d(x)],
            Sreg::Ntid(x) => l.block[d(x)],
            Sreg::Ctaid(x) => c.ctaid[d(x)],
            Sreg::Nctaid(x) => l.grid[d(x)],
            Sreg::Clusterid(x) => cid(d(x)),
            Sreg::Nclusterid(x) => cpg(d(x)),
            Sreg::ClusterCtaid(x) => c.cluster_ctaid[d(x)],
            Sreg::ClusterNctaid(x) => l.cluster[d(x)],
            Sreg::ClusterCtarank => c.rank,
            Sreg::ClusterNctarank => l.cluster.iter().product(),
            Sreg::IsExplicitCluster => (l.cluster != [1, 1, 1]) as u32,
            Sreg::Laneid => lane,
            Sreg::Warpid => warp,
            Sreg::Nwarpid => 64,
            Sreg::Smid => cta,
            Sreg::Clock => self.step as u32,
            Sreg::Clock64 => return self.step,
            Sreg::Globaltimer => return self.step * 32,
            Sreg::LanemaskEq => 1 << lane,
            Sreg::LanemaskLe => ((1u64 << (lane + 1)) - 1) as u32,
            Sreg::LanemaskLt => ((1u64 << lane) - 1) as u32,
            Sreg::LanemaskGe => !((1u64 << lane) - 1) as u32,
            Sreg::LanemaskGt => !((1u64 << (lane + 1)) - 1) as u32,
            Sreg::DynamicSmemSize => l.dynamic_smem,
            // Driver-defined (PTX 10.14); hopsync's launch defines none of them (a plain,
            // non-cooperative launch).
            Sreg::Envreg(_) => 0,
            Sreg::TotalSmemSize => self.smem_bytes,
        }) as u64
    }

    /// A register-write record helper.
    pub fn log_reg(&mut self, reg: RegId, lane: u32, v: u64) {
        if let Some(r) = self.rec.as_mut() {
            let e = match r.regs.iter().position(|x| x.reg == reg.0) {
                Some(i) => &mut r.regs[i],
                None => {
                    r.regs.push(RegWrite { reg: reg.0, mask: 0, values: vec![0; WARP] });
                    r.regs.last_mut().unwrap()
                }
            };
            e.mask |= 1 << lane;
            e.values[lane as usize] = v;
        }
    }
}

/// The bytes of kernel parameter `name` (`size` bytes): its manifest pieces (a buffer's address,
/// a value, a tensor map's image, a struct's fields) over zeros.
fn param_image(man: &hopsync_firmware::Manifest, buf_addr: &HashMap<String, u64>, name: &str, size: usize) -> Vec<u8> {
    use hopsync_firmware::manifest::Piece;
    let mut out = vec![0u8; size];
    let Some(p) = man.params.iter().find(|p| p.name == name) else { return out };
    for piece in p.pieces() {
        let bytes = match &piece {
            Piece::Bytes(_, b) => b.clone(),
            Piece::Buffer(_, b) => buf_addr[*b].to_le_bytes().to_vec(),
            Piece::TensorMap(_, t) => man.tensormap_image(t).map(|i| i.to_vec()).unwrap_or_default(),
        };
        let start = piece.range().start as usize;
        // a plain value wider than its param keeps its low bytes (little-endian)
        let n = bytes.len().min(size.saturating_sub(start));
        out[start..start + n].copy_from_slice(&bytes[..n]);
    }
    out
}

/// The value an initializer stores (PTX 5.4.4): a number, or an address (of a variable, in its
/// state space or, with `generic()`, as a generic address; of a function).
fn init_value(m: &Module, sym_offset: &[u64], v: &hopsync_firmware::ir::Init) -> u64 {
    use hopsync_firmware::ir::{AddrOf, Init};
    match v {
        Init::Int(x) => *x as u64,
        Init::Float { bits, .. } => *bits,
        Init::Addr { of, generic, offset } => {
            let base = match of {
                AddrOf::Func(f) => FUNC_ADDR_BASE + 16 * f.0 as u64,
                AddrOf::Sym(s) => {
                    let a = sym_offset[s.0 as usize];
                    match m.symbols[s.0 as usize].space {
                        Space::Shared if *generic => SHARED_GENERIC_BASE + a,
                        _ => a,
                    }
                }
            };
            base.wrapping_add(*offset as u64)
        }
    }
}

/// Convenience for operand-less addresses in bodies.
pub fn addr_base_space(base: &AddrBase, module: &Module) -> Option<Space> {
    match base {
        AddrBase::Sym(s) => Some(module.symbols[s.0 as usize].space),
        _ => None,
    }
}

/// Whether an operand is the sink `_`.
pub fn is_sink(op: &Operand) -> bool {
    matches!(op, Operand::Sink)
}
