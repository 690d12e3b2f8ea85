//! The memory pipes of each CTA: the shared-memory pipe (32 four-byte banks; an n-way bank
//! conflict occupies it n cycles), the global-memory pipe (sectors, bytes per cycle, latency) and
//! the DSMEM network port (bytes per cycle, latency), each booked ahead by the accesses issued
//! to it; which pipe an access takes, and what it costs.

use super::*;
use smallvec::SmallVec;

/// A CTA's memory pipes: each is booked ahead by the accesses issued to it.
#[derive(Debug, Clone, Default)]
pub(super) struct MemPipes {
    /// The shared-memory pipe.
    pub(super) smem: PipeBooking,
    /// The global-memory pipe.
    pub(super) global: PipeBooking,
    /// The DSMEM network port (what the SM sends: stores' data, load requests).
    pub(super) dsmem: PipeBooking,
    /// The data of the SM's remote loads coming back (`dsmem.load_bytes_per_cycle`; no warp waits
    /// to issue for it, only for its data).
    pub(super) dsmem_back: PipeBooking,
    /// The SM's path into the MbarrierUnit (local mbarrier requests, `sync.mbarrier_port_cycles`).
    pub(super) syncs: PipeBooking,
    /// What the SYNCS path's fractional rate owes beyond the whole cycles booked so far.
    syncs_owed: f64,
    /// The L1 data cache's tags (global loads that allocate in L1).
    pub(super) l1: L1Tags,
    /// The CTA's warps read global memory (a load, atomic or cp.async) before.
    pub(super) global_read: bool,
    /// The CTA's warps wrote global memory (a plain store) before.
    pub(super) global_written: bool,
    /// Per shared-memory word (byte offset): until when a compare-and-swap loop of a warp runs on
    /// it (`timing::cas_loop_atomic`; the next warp's loop on the word starts after it).
    pub(super) cas_words: std::collections::HashMap<u64, u64>,
}

impl MemPipes {
    /// The booking of `pipe` (None: a fixed-latency place, no pipe).
    pub(super) fn of(&mut self, pipe: Pipe) -> Option<&mut PipeBooking> {
        match pipe {
            Pipe::Smem => Some(&mut self.smem),
            Pipe::Global => Some(&mut self.global),
            Pipe::Dsmem => Some(&mut self.dsmem),
            Pipe::Fixed(_) => None,
        }
    }

    /// The pipes of a CTA whose warps issue from `schedulers` warp schedulers.
    pub(super) fn new(schedulers: usize) -> MemPipes {
        MemPipes { smem: PipeBooking::new(schedulers), global: PipeBooking::new(schedulers), dsmem: PipeBooking::new(schedulers), dsmem_back: PipeBooking::new(schedulers), syncs: PipeBooking::new(schedulers), syncs_owed: 0.0, l1: L1Tags::default(), global_read: false, global_written: false, cas_words: Default::default() }
    }

    /// Books one local mbarrier request of warp `warp` issued at `now` on the SYNCS path, which
    /// takes one request per `rate` cycles (fractional: whole cycles are booked and the
    /// remainder carried); returns the cycle it enters the path.
    pub(super) fn book_syncs(&mut self, now: u64, rate: f64, warp: usize) -> u64 {
        let due = self.syncs_owed + rate.max(0.0);
        let occ = due.floor();
        self.syncs_owed = due - occ;
        self.syncs.book(now, occ as u64, Some(warp))
    }
}

/// What the model knows of L2 for reads of global memory: the 128-byte lines of host-copied
/// buffers that the kernel has not accessed yet, of which those that `global.far_line_mask` picks
/// are not in the near L2 at their first access (`global.far_line_cycles` more). Silicon (H100,
/// calibration/gmem_cold.ptx): a buffer the launch copies from the host answers a first read from
/// half of its 4 KiB blocks ~178 cycles later than from the other half or than after any read; a
/// memset buffer answers every first read at once. One per run: L2 is shared by every SM.
#[derive(Debug, Clone, Default)]
pub(super) struct L2Lines {
    /// Per global region: its base address and size.
    bounds: Vec<(u64, usize)>,
    /// Per global region: None (not host-copied: every line near), or one bit per 128-byte line,
    /// set once the kernel accessed it.
    lines: Vec<Option<bitvec::vec::BitVec>>,
}

impl L2Lines {
    /// The lines of `regions` (`Machine::global_regions`: base, bytes, host-copied) before the
    /// kernel.
    pub(super) fn new(regions: &[(u64, usize, bool)]) -> L2Lines {
        L2Lines {
            bounds: regions.iter().map(|&(base, bytes, _)| (base, bytes)).collect(),
            lines: regions.iter().map(|&(_, bytes, copied)| copied.then(|| bitvec::vec::BitVec::repeat(false, bytes.div_ceil(128)))).collect(),
        }
    }

    /// [`L2Lines::first_far`] of an access by global address (the TMA engine's line reads).
    pub(super) fn first_far_at(&mut self, addr: u64, bytes: usize, mask: u64) -> bool {
        match self.bounds.iter().position(|&(base, len)| addr >= base && addr < base + len as u64) {
            Some(r) => {
                let off = (addr - self.bounds[r].0) as usize;
                self.first_far(r, off, bytes, mask)
            }
            None => false,
        }
    }

    /// An access of `bytes` at `off` in region `region`: whether it reads a far line for the first
    /// time (`mask`: `global.far_line_mask`); every line it touches is near afterwards.
    pub(super) fn first_far(&mut self, region: usize, off: usize, bytes: usize, mask: u64) -> bool {
        let Some(Some(seen)) = self.lines.get_mut(region) else { return false };
        let mut far = false;
        for line in off / 128..=(off + bytes.max(1) - 1) / 128 {
            if line < seen.len() && !seen[line] {
                far |= ((line as u64 * 128) & mask).count_ones() % 2 == 1;
                seen.set(line, true);
            }
        }
        far
    }
}

/// One pipe, shared by the warp schedulers of an SM: a timeline booked ahead by the accesses
/// issued to it, and which schedulers wait for it.
///
/// A warp stalls with MemoryThrottle while the pipe is booked more than `queue_cycles` ahead
/// (global, DSMEM), or while its scheduler has `smem.queue_instructions` accesses booked that have
/// not started (shared memory: each sub-partition's queue of memory instructions). When the pipe
/// has room again, the scheduler that has waited longest takes it first: the others yield to it (sm_90's sub-partitions queue their memory instructions separately and the shared
/// stage takes them in turn, so no sub-partition is kept out for good). Within a scheduler the
/// warps that found the pipe busy take it in the order they found it busy: the greedy warp of a
/// greedy-then-oldest scheduler, which wants the pipe again right after each access, cannot take
/// it from a warp that waited before it again and again.
/// An uncontended pipe behaves as a plain booking. Before, the freed pipe went to whichever
/// scheduler (then whichever warp) looked first, which starved the others
/// (firmware/programs/sched/global_pipe_starvation.ptx and same_scheduler_pipe_starvation.ptx
/// never finished).
#[derive(Debug, Clone, Default)]
pub(super) struct PipeBooking {
    /// The pipe is booked until this cycle.
    pub(super) free: u64,
    /// Per scheduler: its warps throttled on this pipe that have not had it yet, in the order they
    /// were first throttled (at most the scheduler's warps).
    waiting: Vec<Vec<PipeWaiter>>,
    /// Per scheduler: the start cycles of its warps' accesses booked on the pipe, ascending (those
    /// started are dropped as they are looked at).
    queued: Vec<std::collections::VecDeque<u64>>,
}

/// Drops from a scheduler's list of booked starts (ascending) those started by `now`.
fn drop_started(q: &mut std::collections::VecDeque<u64>, now: u64) {
    while q.front().is_some_and(|&s| s <= now) {
        q.pop_front();
    }
}

/// A warp throttled on a pipe that has not had it yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PipeWaiter {
    /// The cycle it was first throttled.
    since: u64,
    /// Its warp index in the CTA.
    warp: usize,
}

impl PipeBooking {
    fn new(schedulers: usize) -> PipeBooking {
        PipeBooking { free: 0, waiting: vec![Vec::new(); schedulers.max(1)], queued: vec![Default::default(); schedulers.max(1)] }
    }

    /// Whether an access of warp `warp` (on scheduler `warp` mod the schedulers) must wait at
    /// cycle `now`: the pipe is booked more than `queue` cycles ahead, a warp of its scheduler
    /// waited for it before this one, or another scheduler's first waiter has waited longer (ties:
    /// the lower scheduler). `register`: a throttled warp joins its scheduler's waiters now (false
    /// for what a probe looks at after the scheduler issued, so observing changes nothing).
    pub(super) fn throttled(&mut self, now: u64, queue: u64, warp: usize, register: bool) -> bool {
        let full = self.free > now + queue;
        self.throttled_by(full, now, warp, register)
    }

    /// Accesses of warp `warp`'s scheduler booked on the pipe that have not started by `now`.
    pub(super) fn queued(&mut self, now: u64, warp: usize) -> u64 {
        let n = self.queued.len();
        let q = &mut self.queued[warp % n];
        drop_started(q, now);
        q.len() as u64
    }

    /// [`PipeBooking::throttled`] with the pipe's own condition given: `full` (the SM's store
    /// queue is full, for a plain store), and the same turn order among the throttled warps.
    pub(super) fn throttled_by(&mut self, full: bool, now: u64, warp: usize, register: bool) -> bool {
        let n = self.waiting.len();
        let s = warp % n;
        let first = self.waiting[s].first().copied();
        let behind_own = first.is_some_and(|f| f.warp != warp);
        let yields = self.waiting.iter().enumerate().any(|(o, q)| match (q.first(), first) {
            (Some(t), Some(m)) => o != s && (t.since < m.since || (t.since == m.since && o < s)),
            (Some(_), None) => o != s,
            (None, _) => false,
        });
        let throttled = full || behind_own || yields;
        if throttled && register && !self.waiting[s].iter().any(|m| m.warp == warp) {
            self.waiting[s].push(PipeWaiter { since: now, warp });
        }
        throttled
    }

    /// Warp `warp` issued the instruction it waited for (an access that moves no bytes, all
    /// lanes' guards false, books nothing): it waits no more.
    pub(super) fn issued(&mut self, warp: usize) {
        let n = self.waiting.len();
        self.waiting[warp % n].retain(|m| m.warp != warp);
    }

    /// Books `occ` cycles for an access of warp `warp` (None: an access that comes from no
    /// scheduler, such as the TMA engine's beats) issued at `now`; returns its start.
    pub(super) fn book(&mut self, now: u64, occ: u64, warp: Option<usize>) -> u64 {
        let start = now.max(self.free);
        self.free = start + occ;
        if let Some(w) = warp {
            self.issued(w);
            // (started accesses leave as new ones come: the list holds the queued ones only)
            let n = self.queued.len();
            let q = &mut self.queued[w % n];
            drop_started(q, now);
            q.push_back(start);
        }
        start
    }
}

/// What a plain global store moves, sector by sector: a sector its lanes write whole goes to the
/// L2 as it is, a sector they write in part carries a byte mask.
#[derive(Debug, Clone, Default, PartialEq)]
struct StoreShape {
    /// The 128-byte lines it writes, ascending.
    lines: Vec<u64>,
    /// Bytes of data its active lanes store.
    data: u64,
    /// Distinct sectors it touches.
    sectors: u64,
    /// Sectors its lanes write every byte of.
    full_sectors: u64,
    /// Sectors its lanes write some bytes of.
    partial_sectors: u64,
    /// Distinct 128-byte lines holding a partial sector.
    partial_lines: u64,
    /// The widest run of bytes one lane writes into a partial sector (4 for a scattered
    /// st.global.u32, 8 for a .u64, 16 for a .v2.u64).
    partial_chunk: u64,
}

impl StoreShape {
    /// The shape of a store whose lanes write `accesses` (address, bytes), with sectors of
    /// `sector_bytes` (at most 64).
    fn of(accesses: &[(u64, usize)], sector_bytes: u64) -> StoreShape {
        let sb = sector_bytes.clamp(1, 64);
        let full_mask = if sb == 64 { u64::MAX } else { (1u64 << sb) - 1 };
        // sector -> bytes written (a mask), and the widest one-lane run into it
        let mut written: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
        let mut data = 0;
        for &(a, size) in accesses {
            data += size as u64;
            let end = a + size.max(1) as u64;
            let mut at = a;
            while at < end {
                let sector = at / sb;
                let upto = end.min((sector + 1) * sb);
                let (lo, n) = (at % sb, upto - at);
                let bits = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << lo };
                let e = written.entry(sector).or_default();
                e.0 |= bits;
                e.1 = e.1.max(n);
                at = upto;
            }
        }
        let mut shape = StoreShape { data, sectors: written.len() as u64, ..Default::default() };
        let mut last_line = None;
        for (&sector, &(mask, run)) in &written {
            let line = sector * sb / 128;
            if shape.lines.last() != Some(&line) {
                shape.lines.push(line);
            }
            if mask == full_mask {
                shape.full_sectors += 1;
                continue;
            }
            shape.partial_sectors += 1;
            shape.partial_chunk = shape.partial_chunk.max(run);
            if last_line != Some(line) {
                shape.partial_lines += 1;
                last_line = Some(line);
            }
        }
        shape
    }

    /// Cycles this store holds the SM's store path while `warps` warps (this one included) have
    /// stores in the SM's store queue: each whole sector `store_full_sector_cycles`; each line
    /// with partial sectors `store_partial_line_cycles`; each partial sector
    /// `store_partial_sector_cycles` plus `store_partial_sector_warp_cycles` per other storing
    /// warp (up to `store_warps_counted` warps in all), or, where a lane writes more than 4 bytes
    /// into it, that run at `store_chunk_bytes_per_cycle`, whichever is more. See sm90.toml for
    /// the silicon figures.
    fn sm_path_cycles(&self, g: &crate::config::Global, warps: u64) -> f64 {
        let per_partial = g.store_partial_sector_cycles + g.store_partial_sector_warp_cycles * warps.clamp(1, g.store_warps_counted.max(1)).saturating_sub(1) as f64;
        let chunk = if self.partial_chunk > 4 { self.partial_chunk as f64 / g.store_chunk_bytes_per_cycle } else { 0.0 };
        self.full_sectors as f64 * g.store_full_sector_cycles
            + self.partial_lines as f64 * g.store_partial_line_cycles
            + self.partial_sectors as f64 * per_partial.max(chunk)
    }
}

/// Books a plain global store of warp `w` issued at `now`: its scheduler's store path (the data
/// read from the register file), then the SM's path ([`StoreShape::sm_path_cycles`]), not before
/// `global.store_line_reuse_cycles` after the warp's previous store where it writes one of the same
/// lines. (No per-warp window of unacknowledged sectors: the SM's queue of `global.store_queue`
/// stores binds first; a window of 512 sectors changed no figure of calibration/ and was removed.)
/// The store holds its source
/// registers until the SM's path has sent its last line (a later write to them waits:
/// `WarpState::read_pending`), and a release waits for its acknowledgement
/// (`WarpState::writes_acked`). Returns the cycle its last sector has left.
fn store_cost(cfg: &SmConfig, cs: &mut CtaState, w: usize, now: u64, st: StoreShape, srcs: &[u32]) -> u64 {
    let g = &cfg.global;
    let path = &mut cs.stores;
    let s = w % path.free.len();
    let read = now.max(path.free[s]);
    path.free[s] = read + st.data.div_ceil(g.store_operand_bytes_per_cycle.max(1)).max(1);
    let warps = path.storing_warps(now, w);
    // fractional cycles carry to the next store, so a run of stores costs their sum
    let exact = st.sm_path_cycles(g, warps) + path.carry;
    let occ = exact.floor();
    path.carry = exact - occ;
    let occ = occ as u64;
    let ws = &cs.warps[w];
    let reuse = if sorted_overlap(&ws.last_store.1, &st.lines) { ws.last_store.0 + g.store_line_reuse_cycles } else { 0 };
    let start = cs.mem.global.book(path.free[s].max(reuse), occ, Some(w));
    // the same store on the path without the waits for lines rewritten (a release does not wait
    // for those: silicon's fence after one lane's 8 stores to one line takes what it takes alone)
    let unmerged = path.free[s].max(path.unmerged_free);
    path.unmerged_free = unmerged + occ;
    path.queued.push_back((start, w));
    let ws = &mut cs.warps[w];
    ws.last_store = (start, st.lines);
    ws.issue_until = now + g.store_issue_cycles;
    let end = start + occ;
    ws.writes_acked = ws.writes_acked.max((unmerged + occ).min(end) + g.write_ack_cycles);
    for &r in srcs {
        ws.read_pending[r as usize] = ws.read_pending[r as usize].max(start + occ);
    }
    end
}

/// Whether two ascending lists share an element.
fn sorted_overlap(a: &[u64], b: &[u64]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// The cycle a warp's access of `n` sectors has sent its last one, from `now`: with `limit`
/// sectors in flight per warp, each sector beyond them waits for the warp's earliest completion
/// (`inflight`: the completions of the warp's sectors still in flight, drained as they are used).
fn warp_window(inflight: &mut std::collections::BinaryHeap<std::cmp::Reverse<u64>>, now: u64, n: u64, limit: u64) -> u64 {
    while inflight.peek().is_some_and(|r| r.0 <= now) {
        inflight.pop();
    }
    let mut t = now;
    let mut free = limit.max(1).saturating_sub(inflight.len() as u64);
    for _ in 0..n {
        if free == 0 {
            if let Some(std::cmp::Reverse(d)) = inflight.pop() {
                t = t.max(d);
            }
        } else {
            free -= 1;
        }
    }
    t
}

/// The sectors held by an SM's L1 data cache: timing only (the golden model's memory is the data).
/// A global load that caches at all levels (`.ca`, the default; not `.cg` / `.cs` / `.lu` / `.cv`,
/// `.volatile`, or a strong load at gpu scope or wider, which go to the L2: PTX 9.7.9.8 cache
/// operators) and finds every sector it touches here is an L1 hit; a miss allocates its sectors.
/// The SM's own stores and atomics invalidate the sectors they touch (the L1 is write-through;
/// other SMs' writes do not reach it, as on silicon: weak loads may see stale lines). Oldest
/// sectors leave first once `global.l1_bytes` is full.
#[derive(Debug, Clone, Default)]
pub(super) struct L1Tags {
    /// Sector numbers present.
    present: std::collections::HashSet<u64>,
    /// Sectors in allocation order (may name sectors since invalidated).
    order: VecDeque<u64>,
}

impl L1Tags {
    /// Whether every sector of `sectors` is present.
    pub(super) fn hits(&self, sectors: &[u64]) -> bool {
        !sectors.is_empty() && sectors.iter().all(|s| self.present.contains(s))
    }

    /// Allocates `sectors`, evicting the oldest beyond `capacity` sectors.
    pub(super) fn fill(&mut self, sectors: &[u64], capacity: usize) {
        for &s in sectors {
            if self.present.insert(s) {
                self.order.push_back(s);
            }
        }
        while self.present.len() > capacity {
            let Some(old) = self.order.pop_front() else { break };
            self.present.remove(&old);
        }
        // drop stale entries of invalidated sectors so `order` stays bounded
        if self.order.len() > 2 * capacity.max(1) {
            let present = &self.present;
            self.order.retain(|s| present.contains(s));
        }
    }

    /// Invalidates `sectors`.
    pub(super) fn invalidate(&mut self, sectors: &[u64]) {
        for s in sectors {
            self.present.remove(s);
        }
    }
}

/// Whether a load caches in L1 (see [`L1Tags`]).
fn caches_in_l1(ins: &Instr) -> bool {
    let bypass = ins.has(Mod::Cg) || ins.has(Mod::Cs) || ins.has(Mod::Lu) || ins.has(Mod::Cv) || ins.has(Mod::Volatile);
    let strong_wide = (ins.has(Mod::Relaxed) || ins.has(Mod::Acquire)) && (ins.has(Mod::Gpu) || ins.has(Mod::Sys));
    ins.op == Opcode::Ld && !bypass && !strong_wide
}

/// The SM's path for plain global stores: each warp scheduler's register-file read of a store's
/// data (`global.store_operand_bytes_per_cycle`), and the SM's store queue, from a store's issue
/// until the SM's path takes it. Measured by
/// calibration/gmem_stores.ptx: one warp issues 16 stores of 32 sectors each in 74 cycles (the
/// queue takes them), then one per store's time on the SM's path; with 4..16 warps storing, a
/// warp's last store issues when all but about a queue's worth of every warp's stores have left.
#[derive(Debug, Clone, Default)]
pub(super) struct StorePath {
    /// Per warp scheduler: its register-file read takes the next store from this cycle.
    free: Vec<u64>,
    /// The queued stores: the cycle each one's registers are read (it leaves the queue) and its
    /// warp, in issue order.
    queued: std::collections::VecDeque<(u64, usize)>,
    /// The fraction of a cycle the SM's path has taken beyond the whole cycles booked so far.
    carry: f64,
    /// Until when the SM's path would be busy with the stores booked so far if none had waited
    /// for a line its warp's previous store wrote (those rewrites merge: a release does not wait
    /// for them, `WarpState::writes_acked`).
    unmerged_free: u64,
}

impl StorePath {
    pub(super) fn new(schedulers: usize) -> StorePath {
        StorePath { free: vec![0; schedulers.max(1)], queued: Default::default(), carry: 0.0, unmerged_free: 0 }
    }

    /// Whether the queue holds `capacity` stores whose registers are not read by `now`.
    pub(super) fn full(&mut self, now: u64, capacity: u64) -> bool {
        self.queued.retain(|&(r, _)| r > now);
        self.queued.len() as u64 >= capacity.max(1)
    }

    /// Warps with stores in the queue at `now`, counting `warp` (whose store is being booked).
    fn storing_warps(&mut self, now: u64, warp: usize) -> u64 {
        self.queued.retain(|&(r, _)| r > now);
        let mut warps: Vec<usize> = self.queued.iter().map(|&(_, w)| w).chain([warp]).collect();
        warps.sort_unstable();
        warps.dedup();
        warps.len() as u64
    }
}

/// Which memory pipe an access uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pipe {
    Smem,
    Global,
    Dsmem,
    Fixed(u64),
}

impl<'p> Engine<'p> {
    pub(super) fn place_of(&mut self, c: u32, w: u32, pc: u32, lane: u32, k: usize, size: usize, space: Option<Option<Mod>>) -> Option<Place> {
        let ins = &self.m.module().kernel.body[pc as usize];
        let cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask: 1 << lane, group: 1 << lane };
        let a = cx.addr(ins, k, lane);
        let sp = space.unwrap_or_else(|| cx.space(ins, k));
        self.m.resolve(c, w, lane, sp, a, size).ok()
    }

    /// [`Self::place_of`] of each lane of `mask` that resolves (lane order), the address
    /// operand and its space decoded once for the warp as the golden body decodes them (on the
    /// stack: this runs for every memory instruction).
    #[allow(clippy::too_many_arguments)]
    fn places_of(&mut self, c: u32, w: u32, pc: u32, mask: u32, k: usize, size: usize, space: Option<Option<Mod>>) -> SmallVec<[Place; WARP]> {
        let ins = &self.m.module().kernel.body[pc as usize];
        let cx = Cx { m: &mut self.m, cta: c, warp: w, pc, mask, group: mask };
        let addrs = cx.addr_lanes(ins, k);
        let sp = space.unwrap_or_else(|| cx.space(ins, k));
        bits_of(mask).filter_map(|l| self.m.resolve(c, w, l, sp, addrs[l as usize], size).ok()).collect()
    }

    pub(super) fn pipe_of(&self, c: u32, p: Option<Place>) -> Pipe {
        match p {
            Some(Place::Shared(t, _)) if t == c => Pipe::Smem,
            Some(Place::Shared(_, _)) => Pipe::Dsmem,
            Some(Place::Global(..)) | None => Pipe::Global,
            Some(Place::Local(..)) => Pipe::Fixed(self.cfg.latency.local),
            Some(Place::Param(_)) => Pipe::Fixed(self.cfg.latency.param),
        }
    }

    pub(super) fn access_size(ins: &Instr) -> usize {
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

    pub(super) fn lane0_pipe(&mut self, c: u32, w: u32, pc: u32) -> Pipe {
        let ins = &self.m.module().kernel.body[pc as usize];
        let Some(k) = self.info[pc as usize].addr else { return Pipe::Fixed(0) };
        let lane = self.group(c as usize, w as usize).map(|g| g.1.trailing_zeros()).unwrap_or(0);
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
    pub(super) fn mem_cost(&mut self, c: u32, w: u32, pc: u32, mask: u32, ins: &'p Instr, class: Class) -> (u64, u64, u64) {
        let now = self.cycle;
        // The instruction's facts used here (no clone of its `InstrInfo` or of the config: this
        // runs for every memory instruction).
        let i = &self.info[pc as usize];
        let inf = MemFacts { addr: i.addr, load: i.load, atomic: i.atomic, uniform_address: i.uniform_address };
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
        let mut places = self.places_of(c, w, pc, mask, global_k, size, space);
        // ptxas's warp-aggregated atomic (timing::aggregates_atomic): the whole warp on one
        // address scans its operands first (the warp issues nothing else meanwhile), the last lane
        // alone makes the access, a shuffle hands each lane its result
        let aggregated = timing::aggregates_atomic(ins) && inf.uniform_address && mask == u32::MAX && places.len() == WARP && places.iter().all(|p| *p == places[0]);
        let scan_tail = if aggregated {
            places.truncate(1);
            let ws = &mut self.ctas[c as usize].warps[w as usize];
            ws.issue_until = ws.issue_until.max(now + self.cfg.latency.atomic_scan);
            self.cfg.latency.atomic_scan + self.cfg.latency.shfl + self.cfg.latency.alu
        } else {
            0
        };
        let pipe = if class == Class::CpAsync { Pipe::Global } else { self.pipe_of(c, places.first().copied()) };
        let cfg = &self.cfg;
        let sched = Some(w as usize);
        let cs = &mut self.ctas[c as usize];
        let (ready, done) = match pipe {
            Pipe::Smem => {
                let acc: SmallVec<[(u64, usize); WARP]> = places.iter().filter_map(|p| if let Place::Shared(_, o) = p { Some((*o as u64, size)) } else { None }).collect();
                // an atomic's lanes on one word go one after another (a replay each), the busiest
                // word's lanes (smem_cas_atomics.ptx: one ATOMS.ADD of 32 lanes on one word, 90
                // cycles to its use)
                let words = if inf.atomic { lanes_per_word(&acc) } else { SmallVec::new() };
                let passes = words.iter().map(|&(_, n)| n).max().unwrap_or(1);
                let occ = timing::smem_pipe_cycles(&cfg, &acc).max(if passes > 1 { passes * cfg.smem.conflict_replay_cycles } else { 0 });
                let start = cs.mem.smem.book(now, occ, sched);
                // a warp's next memory or mbarrier instruction waits after a shared-memory access:
                // the STS / ATOMS stall counts after a store, atomic or reduction, the warp's own
                // LDS rate after a load (calibration/mbar_rate.ptx)
                if class == Class::Mem {
                    let write = !inf.load || inf.atomic;
                    let spacing = if write { cfg.smem.store_issue_cycles } else { cfg.smem.load_issue_cycles };
                    let ws = &mut cs.warps[w as usize];
                    ws.smem_issue_until = now + spacing;
                    if write {
                        ws.release_until = now + cfg.sync.release_after_shared_write_cycles;
                    }
                }
                if !(inf.atomic && timing::cas_loop_atomic(ins)) {
                    let lat = if inf.atomic { cfg.smem.atomic_latency } else { cfg.smem.latency };
                    // the first wavefront's data comes back after the latency, the last one later
                    (start + occ - 1 + lat, start + occ)
                } else {
                    // ptxas's compare-and-swap loop: one lane per word succeeds a pass, so the
                    // loop runs as many passes as the most lanes on one word; the warp issues
                    // nothing else meanwhile, and another warp's loop on one of its words first
                    let begin = words.iter().filter_map(|(word, _)| cs.mem.cas_words.get(word).copied()).fold(start, u64::max);
                    let done = begin + cfg.smem.cas_first_cycles + (passes - 1) * cfg.smem.cas_pass_cycles;
                    for &(word, _) in &words {
                        cs.mem.cas_words.insert(word, done);
                    }
                    let ws = &mut cs.warps[w as usize];
                    ws.issue_until = ws.issue_until.max(done);
                    (done, done)
                }
            }
            Pipe::Global => {
                // the first access of a far line of a host-copied buffer (reads only wait for it)
                let mut far = false;
                for p in &places {
                    if let Place::Global(r, o) = p {
                        far |= self.l2.first_far(*r, *o, size, cfg.global.far_line_mask);
                    }
                }
                let far_extra = if far { cfg.global.far_line_cycles } else { 0 };
                let acc: SmallVec<[(u64, usize); WARP]> = places
                    .iter()
                    .filter_map(|p| if let Place::Global(r, o) = p { Some((self.m.global_address(*r, *o), size)) } else { None })
                    .collect();
                let sectors = timing::sector_list(&cfg, &acc);
                let sb = cfg.global.sector_bytes.max(1);
                let l1 = class == Class::Mem && caches_in_l1(ins);
                if l1 && cs.mem.l1.hits(&sectors) {
                    // an L1 hit: the L1/shared-memory pipe, one wavefront per 128-byte line
                    let lines = { let mut l: Vec<u64> = sectors.iter().map(|s| s * sb / 128).collect(); l.dedup(); l.len() as u64 };
                    let start = cs.mem.smem.book(now, lines.max(1), sched);
                    let ready = start + lines.max(1) - 1 + cfg.global.l1_latency;
                    return (ready, ready, ready);
                }
                if l1 {
                    cs.mem.l1.fill(&sectors, (cfg.global.l1_bytes / sb) as usize);
                } else if class == Class::Mem && !inf.load {
                    cs.mem.l1.invalidate(&sectors);
                }
                let n = sectors.len().max(1) as u64;
                // a plain store is complete at its acknowledgement; loads, atomics and cp.async
                // reads take the round trip. Writes leave the SM slower than reads come in.
                let store = class == Class::Mem && !inf.load && !inf.atomic;
                if store { cs.mem.global_written = true } else { cs.mem.global_read = true }
                if store {
                    let end = store_cost(&cfg, cs, w as usize, now, StoreShape::of(&acc, sb), &self.info[pc as usize].srcs);
                    return (now + cfg.latency.misc, end + cfg.global.write_ack_cycles, end + cfg.global.write_ack_cycles);
                }
                let rate = cfg.global.bytes_per_cycle;
                let occ = (n * sb).div_ceil(rate.max(1));
                let start = cs.mem.global.book(now, occ, sched);
                // A warp's own sectors in flight are limited (not cp.async's, which the LSU's
                // asynchronous path sends): the last sector leaves when enough earlier ones of the
                // warp have completed, and the access is done after both it and the SM's path.
                let windowed = class == Class::Mem;
                let sent = if windowed { warp_window(&mut cs.warps[w as usize].gmem_inflight, now, n, cfg.global.warp_inflight_sectors) } else { now };
                let end = (start + occ).max(sent);
                let lat = far_extra + if inf.atomic { cfg.global.atomic_latency } else { cfg.global.latency };
                let (ready, done) = (end + lat, end + if store { cfg.global.write_ack_cycles } else { lat });
                if windowed {
                    let q = &mut cs.warps[w as usize].gmem_inflight;
                    q.extend((0..n).map(|_| std::cmp::Reverse(done)));
                }
                (ready, done)
            }
            // st.async / red.async book the port once, below, at their own rate (booked here
            // too before, each went through the port twice)
            Pipe::Dsmem if class == Class::AsyncStore => (now, now),
            Pipe::Dsmem => {
                // What the SM sends (stores' and atomics' data, loads' requests) leaves at
                // `bytes_per_cycle`, a load's request at `load_request_bytes_per_cycle` of the
                // bytes it asks for; a load's data comes back at `load_bytes_per_cycle`
                // (calibration/mem_queues.ptx: 4 warps issue ld.shared::cluster.v4 every 4 cycles
                // up to their 8th, then every 12..16, their st every 96 past their 4th;
                // dsmem_bandwidth.ptx: 16 KiB read in ~1400 cycles)
                let bytes = (places.len() * size) as u64;
                let plain_load = class == Class::Mem && inf.load && !inf.atomic;
                let rate = if plain_load { cfg.dsmem.load_request_bytes_per_cycle } else { cfg.dsmem.bytes_per_cycle };
                let occ = bytes.div_ceil(rate.max(1)).max(1);
                let start = cs.mem.dsmem.book(now, occ, sched);
                if class == Class::Mem {
                    // the warp's next memory instruction waits: the LD.E / ST.E stall count, and a
                    // store's data leaving the warp (ST.E.128 of 32 lanes: one every 12 cycles).
                    // Silicon issues an ST.E.x every 4 cycles and holds its registers until its
                    // data has left; a clock read waits for that only where ptxas reuses one of
                    // them (docs/DESIGN.md, "Memory queues"): the engine, which sees the PTX
                    // registers, times the issue at the data's rate.
                    let spacing = if plain_load {
                        cfg.smem.load_issue_cycles
                    } else {
                        cfg.smem.store_issue_cycles.max(bytes.div_ceil(cfg.dsmem.store_operand_bytes_per_cycle.max(1)))
                    };
                    let ws = &mut cs.warps[w as usize];
                    ws.smem_issue_until = ws.smem_issue_until.max(now + spacing);
                }
                if plain_load {
                    // the request crosses, the data comes back behind the SM's earlier loads' data
                    let back_occ = bytes.div_ceil(cfg.dsmem.load_bytes_per_cycle.max(1)).max(1);
                    let back = cs.mem.dsmem_back.book(start + occ + 2 * cfg.dsmem.latency, back_occ, None);
                    (back + back_occ, back + back_occ)
                } else {
                    // atomics wait for the round trip; stores arrive after one way
                    (start + occ + 2 * cfg.dsmem.latency, start + occ + cfg.dsmem.latency)
                }
            }
            Pipe::Fixed(l) => (now + l, now + l),
        };
        match class {
            Class::CpAsync => {
                // LDGSTS issues at the warp's LDS rate (calibration/mem_queues.ptx: one warp's
                // cp.async.cg of 16 B a lane, one every 4 cycles until the global path is full)
                let ws = &mut cs.warps[w as usize];
                ws.smem_issue_until = ws.smem_issue_until.max(now + cfg.smem.load_issue_cycles);
                (now + cfg.latency.misc, done, done)
            }
            Class::AsyncStore => {
                // st.async / red.async: the data (and complete-tx) cross the network once.
                let bytes = (mask.count_ones() as usize * size) as u64;
                let occ = bytes.div_ceil(cfg.dsmem.async_bytes_per_cycle.max(1)).max(1);
                let start = cs.mem.dsmem.book(now, occ, sched);
                (now + cfg.latency.misc, now, start + occ + cfg.dsmem.latency)
            }
            Class::Mem => (if inf.load || inf.atomic { ready + scan_tail } else { now + cfg.latency.misc }, done + scan_tail, done + scan_tail),
            Class::Compute | Class::Tma | Class::Branch | Class::Sleep | Class::Mbarrier(_) | Class::NamedBarrier | Class::ClusterBarrier => unreachable!("mem_cost times the memory classes only"),
        }
    }
}

/// The words (4-byte, or 8-byte for 8-byte accesses) that the lanes' accesses `acc` (offset,
/// size) fall in, each with its count of lanes, in first-lane order.
fn lanes_per_word(acc: &[(u64, usize)]) -> SmallVec<[(u64, u64); WARP]> {
    let mut words: SmallVec<[(u64, u64); WARP]> = SmallVec::new();
    for &(o, sz) in acc {
        let word = o & !(sz.max(4) as u64 - 1);
        match words.iter_mut().find(|(x, _)| *x == word) {
            Some(e) => e.1 += 1,
            None => words.push((word, 1)),
        }
    }
    words
}

/// What [`Engine::mem_cost`] reads of an instruction's [`InstrInfo`].
#[derive(Clone, Copy)]
struct MemFacts {
    /// The address operand's index.
    addr: Option<usize>,
    /// A load.
    load: bool,
    /// An atomic or reduction.
    atomic: bool,
    /// `InstrInfo::uniform_address`.
    uniform_address: bool,
}

#[cfg(test)]
mod store_shape_tests {
    use super::StoreShape;

    fn lanes(stride: u64, bytes: usize) -> Vec<(u64, usize)> {
        (0..32).map(|l| (0x1000 + l * stride, bytes)).collect()
    }

    #[test]
    fn a_coalesced_store_writes_whole_sectors() {
        let s = StoreShape::of(&lanes(4, 4), 32);
        assert_eq!((s.data, s.sectors, s.full_sectors, s.partial_sectors, s.partial_lines), (128, 4, 4, 0, 0));
        assert_eq!(s.lines, vec![0x1000 / 128]);
        let v4 = StoreShape::of(&lanes(16, 16), 32);
        assert_eq!((v4.full_sectors, v4.partial_sectors, v4.lines.len()), (16, 0, 4));
    }

    #[test]
    fn a_scattered_store_writes_a_partial_sector_per_lane() {
        let s = StoreShape::of(&lanes(2048, 8), 32);
        assert_eq!((s.sectors, s.full_sectors, s.partial_sectors, s.partial_lines, s.partial_chunk), (32, 0, 32, 32, 8));
        // four lanes' 4 bytes in each sector, 8 bytes apart: partial, the widest run 4 bytes
        let h = StoreShape::of(&lanes(8, 4), 32);
        assert_eq!((h.sectors, h.partial_sectors, h.partial_lines, h.partial_chunk), (8, 8, 2, 4));
        // a lane's 16 bytes across a sector boundary: two runs of 8
        let x = StoreShape::of(&[(0x1018, 16)], 32);
        assert_eq!((x.sectors, x.partial_sectors, x.partial_chunk), (2, 2, 8));
    }

    #[test]
    fn more_storing_warps_make_partial_sectors_dearer_up_to_the_counted_warps() {
        let g = crate::config::SmConfig::sm90().global;
        let s = StoreShape::of(&lanes(2048, 4), 32);
        let one = s.sm_path_cycles(&g, 1);
        let four = s.sm_path_cycles(&g, 4);
        assert!(four > one, "{one} -> {four}");
        let most = g.store_warps_counted;
        assert_eq!(s.sm_path_cycles(&g, most), s.sm_path_cycles(&g, most + 8));
        // whole sectors do not depend on the warps
        let c = StoreShape::of(&lanes(4, 4), 32);
        assert_eq!(c.sm_path_cycles(&g, 1), c.sm_path_cycles(&g, 8));
        assert_eq!(c.sm_path_cycles(&g, 1), 4.0 * g.store_full_sector_cycles);
    }
}
