//! What an engine under test (the RTL engine in `hopsync-sim`) may see and do of the golden
//! machine's architectural state. The engine owns a [`Machine`] for registers, lane states and
//! memories and runs the golden bodies on it; everything else it does to that state goes through
//! these methods, so the machine's own fields stay private to the golden model.

use crate::exec::{self, Obj, Stop};
use crate::finding::Finding;
use crate::machine::{AsyncOp, Lane, Machine, MbarShadow, Pending, Place, Poll, UbMode, Wait, Warp, WARP};
use crate::retire::{Retire, SyncEvent};
use hopsync_firmware::ir::{Mod, RegId};
use hopsync_firmware::Program;

impl<'p> Machine<'p> {
    // ---- launch topology ----------------------------------------------------------------------

    /// CTAs launched.
    pub fn cta_count(&self) -> usize {
        self.ctas.len()
    }

    /// Warps of CTA `c`.
    pub fn warp_count(&self, c: u32) -> usize {
        self.ctas[c as usize].warps.len()
    }

    /// CTA `c`'s rank in its cluster.
    pub fn cta_rank(&self, c: u32) -> u32 {
        self.ctas[c as usize].rank
    }

    /// CTA `c`'s cluster.
    pub fn cta_cluster(&self, c: u32) -> u32 {
        self.ctas[c as usize].cluster
    }

    /// Clusters launched.
    pub fn cluster_count(&self) -> usize {
        self.clusters.len()
    }

    /// The CTAs of cluster `k`, by rank.
    pub fn cluster_ctas(&self, k: u32) -> &[u32] {
        &self.clusters[k as usize].ctas
    }

    /// Static + dynamic shared-memory bytes per CTA.
    pub fn smem_size(&self) -> u32 {
        self.smem_bytes
    }

    // ---- warps --------------------------------------------------------------------------------

    /// Warp `w` of CTA `c`, to read.
    pub fn warp(&self, c: u32, w: u32) -> &Warp {
        &self.ctas[c as usize].warps[w as usize]
    }

    /// The lanes of warp (c, w) blocked on a wait that `released` accepts go on; returns them.
    pub fn release_lanes(&mut self, c: u32, w: u32, released: impl Fn(Wait) -> bool) -> u32 {
        let warp = &mut self.ctas[c as usize].warps[w as usize];
        let mut mask = 0;
        for l in 0..WARP {
            if let Lane::Blocked(x) = warp.lane()[l] {
                if released(x) {
                    warp.set_lane(l, Lane::Ready);
                    mask |= 1 << l;
                }
            }
        }
        mask
    }

    /// The lanes `mask` of warp (c, w) wait on `wait`.
    pub fn block_lanes(&mut self, c: u32, w: u32, mask: u32, wait: Wait) {
        let warp = &mut self.ctas[c as usize].warps[w as usize];
        for l in exec::lanes(mask) {
            warp.set_lane(l as usize, Lane::Blocked(wait));
        }
    }

    /// What warp (c, w) polls without success (for the deadlock message).
    pub fn set_polling(&mut self, c: u32, w: u32, poll: Option<Poll>) {
        self.ctas[c as usize].warps[w as usize].polling = poll;
    }

    /// The lanes `mask` of warp (c, w) waited on the cluster barrier: they may arrive again.
    pub fn forget_cluster_arrival(&mut self, c: u32, w: u32, mask: u32) {
        for l in exec::lanes(mask) {
            self.ctas[c as usize].warps[w as usize].cluster_arrival[l as usize] = None;
        }
    }

    /// Writes `v` into register `reg` of lane `lane` of warp (c, w) outside any instruction (a
    /// bar.red result delivered by a release), logging it into `rec` when given.
    pub fn deliver_reg(&mut self, c: u32, w: u32, reg: u32, lane: u32, v: u64, rec: Option<&mut Retire>) {
        self.ctas[c as usize].warps[w as usize].regs[reg as usize * WARP + lane as usize] = v;
        if let Some(r) = rec {
            let saved = self.rec.replace(std::mem::take(r));
            self.log_reg(RegId(reg), lane, v);
            *r = self.rec.take().unwrap_or_default();
            self.rec = saved;
        }
    }

    // ---- retire bookkeeping -------------------------------------------------------------------

    /// One warp-instruction retired by the lanes `mask`.
    pub fn count_retired(&mut self, mask: u32) {
        self.instructions += 1;
        self.thread_instructions += mask.count_ones() as u64;
    }

    /// Starts the record of the instruction being retired (golden bodies log into it).
    pub fn start_record(&mut self, r: Retire) {
        self.rec = Some(r);
    }

    /// Takes the record of the instruction being retired.
    pub fn take_record(&mut self) -> Option<Retire> {
        self.rec.take()
    }

    /// The asynchronous operations the bodies queued since the last call.
    pub fn take_pending(&mut self) -> Vec<Pending> {
        std::mem::take(&mut self.pending)
    }

    /// Whether a body queued asynchronous operations.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// A new issue number for an asynchronous operation.
    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Setter: race findings are recorded and the run goes on (the lockstep's golden side: a
    /// race is a finding of the run, which the engine under test cannot make, not a reason for
    /// the golden model to stop while the engine goes on).
    pub fn record_races_and_go_on(&mut self) {
        self.race.go_on = true;
    }

    /// The findings so far.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// Runs `f` in error mode and forgets what it reports: for evaluating again operands whose
    /// findings the golden body already reported.
    pub fn quietly<T>(&mut self, f: impl FnOnce(&mut Machine<'p>) -> T) -> T {
        let (n, ub) = (self.findings.len(), self.cfg.ub);
        self.cfg.ub = UbMode::Error;
        let r = f(self);
        self.cfg.ub = ub;
        self.findings.truncate(n);
        r
    }

    /// The engine's time (cycles) for findings, records and progress.
    pub fn set_step(&mut self, step: u64) {
        self.step = step;
    }

    /// When the architectural state last changed.
    pub fn last_progress(&self) -> u64 {
        self.last_progress
    }

    // ---- memories -----------------------------------------------------------------------------

    /// The address of a global place (`Place::Global(region, offset)`).
    pub fn global_address(&self, region: usize, off: usize) -> u64 {
        self.global[region].base + off as u64
    }

    /// Per global region (`Place::Global`'s index): its base address, its size in bytes and
    /// whether a launch on a GPU copies its contents from the host (any nonzero byte: `hopsync gpu
    /// pack` copies those and zero-fills the rest with a memset).
    pub fn global_regions(&self) -> Vec<(u64, usize, bool)> {
        self.global.iter().map(|g| (g.base, g.bytes.len(), g.bytes.iter().any(|&b| b != 0))).collect()
    }

    /// Reads global memory from `addr` into `out` (bytes outside every buffer read as zero).
    pub fn read_global(&self, addr: u64, out: &mut [u8]) {
        out.fill(0);
        for g in &self.global {
            let (lo, hi) = (g.base, g.base + g.bytes.len() as u64);
            for (k, b) in out.iter_mut().enumerate() {
                let x = addr + k as u64;
                if x >= lo && x < hi {
                    *b = g.bytes[(x - lo) as usize];
                }
            }
        }
    }

    /// Writes the bytes of `data` whose bit is set in `mask` to global memory at `addr` (bytes
    /// outside every buffer are dropped); with `red`, each whole element (its byte size) becomes
    /// `old op new` (PTX 9.7.9.25.4.2, the golden model's element function).
    pub fn write_global_masked(&mut self, addr: u64, data: &[u8], mask: u64, red: Option<(Mod, Mod)>) {
        let step = red.map(|(_, t)| t.type_bytes().unwrap_or(4) as usize).unwrap_or(1);
        for g in &mut self.global {
            let (lo, hi) = (g.base, g.base + g.bytes.len() as u64);
            for k in (0..data.len()).step_by(step) {
                let x = addr + k as u64;
                if mask >> k & 1 == 0 || x < lo || x + step as u64 > hi || k + step > data.len() {
                    continue;
                }
                let at = (x - lo) as usize;
                match red {
                    None => g.bytes[at] = data[k],
                    Some((o, t)) => exec::tma_reduce_element(o, t, &mut g.bytes[at..at + step], &data[k..k + step]),
                }
            }
        }
    }

    /// CTA `c`'s shared-memory size in bytes.
    pub fn smem_len(&self, c: u32) -> usize {
        self.ctas[c as usize].smem.len()
    }

    /// Reads CTA `c`'s shared memory from `off` into `out` (bytes past its end read as zero).
    pub fn read_smem(&self, c: u32, off: usize, out: &mut [u8]) {
        let sm = &self.ctas[c as usize].smem;
        for (k, b) in out.iter_mut().enumerate() {
            *b = sm.get(off + k).copied().unwrap_or(0);
        }
    }

    /// Writes the bytes of `data` whose bit is set in `mask` to CTA `c`'s shared memory at `off`
    /// (bytes past its end are dropped).
    pub fn write_smem_masked(&mut self, c: u32, off: usize, data: &[u8], mask: u64) {
        let sm = &mut self.ctas[c as usize].smem;
        for (k, b) in data.iter().enumerate() {
            if mask >> k & 1 == 1 && off + k < sm.len() {
                sm[off + k] = *b;
            }
        }
    }

    /// The asynchronous operation with issue number `seq` while it is pending (observers: the
    /// timeline's TMA tracks).
    pub fn pending_op(&self, seq: u64) -> Option<&AsyncOp> {
        self.pending.iter().find(|p| p.seq == seq).map(|p| &p.op)
    }

    /// The scheduler step (golden) or the cycle the engine set.
    pub fn now(&self) -> u64 {
        self.step
    }

    /// The program being run.
    pub fn program(&self) -> &'p Program {
        self.prog
    }

    // ---- what the engine's units hold ---------------------------------------------------------

    /// The golden shadow's phase count of the mbarrier at CTA `c`, offset `off` (0 if none).
    pub fn mbar_phase(&self, c: u32, off: u32) -> u64 {
        self.ctas[c as usize].mbarriers.get(&off).map(|s| s.phase).unwrap_or(0)
    }

    /// An MbarrierUnit of CTA `c` wrote `new` to the word at byte offset `off` (`valid`: the word
    /// now holds a valid object): the shared-memory image and the shadow facts follow (an init
    /// owes no wait, an inval forgets the object, a phase completion is counted). Returns the
    /// change.
    pub fn mirror_mbar_write(&mut self, c: u32, off: u32, new: u64, valid: bool) -> Option<SyncEvent> {
        if off as usize + 8 > self.ctas[c as usize].smem.len() {
            return None;
        }
        let old = self.read_mbar_word(c, off);
        let was_valid = self.ctas[c as usize].mbarriers.contains_key(&off);
        if !valid && !was_valid {
            // The unit writes every operation's word back, but its bank only holds mbarrier
            // state: a word that holds no valid object (pending_count, a faulting op) is the
            // shared memory's, not the unit's.
            return None;
        }
        if old != new {
            self.ctas[c as usize].smem[off as usize..off as usize + 8].copy_from_slice(&new.to_le_bytes());
            self.progress();
        }
        if valid && !was_valid {
            // mbarrier.init: phase 0 completes nothing before it, so no wait is owed.
            self.ctas[c as usize].mbarriers.insert(off, MbarShadow { phase: 0, waited_prev: true, ..Default::default() });
            self.progress();
        } else if !valid && was_valid {
            self.ctas[c as usize].mbarriers.remove(&off);
            self.progress();
        } else if valid && (old >> 63) != (new >> 63) {
            exec::on_phase_complete(self, Obj { cta: c, off, remote: false });
        }
        (old != new).then_some(SyncEvent::Mbarrier { cta: c, offset: off, old, new })
    }

    /// What a NamedBarrierUnit holds of barrier `id` of CTA `c` (the warps arrived in its current
    /// generation, the thread count they gave), for the deadlock message.
    pub fn mirror_named_barrier(&mut self, c: u32, id: usize, arrived_warps: u64, expected: Option<u32>) {
        let b = &mut self.ctas[c as usize].bars[id];
        b.arrived_warps = arrived_warps;
        b.arrived = arrived_warps.count_ones() * WARP as u32;
        b.expected = if arrived_warps == 0 { None } else { expected };
    }

    /// Evaluates `f` for lane `lane` of warp (c, w) at instruction `pc` as a golden body would
    /// (operands, addresses), without reporting.
    pub fn quiet_eval<T>(&mut self, at: (u32, u32, u32, u32), f: impl FnOnce(&mut exec::Cx<'_, 'p>) -> Result<T, Stop>) -> Option<T> {
        let (c, w, lane, pc) = at;
        self.quietly(|m| {
            let mut cx = exec::Cx { m, cta: c, warp: w, pc, mask: 1 << lane, group: 1 << lane };
            f(&mut cx).ok()
        })
    }

    /// The resolved place of address operand `k` of instruction `pc` for lane `lane` of warp
    /// (c, w) (`space`: the instruction's own when None), or None where it does not resolve.
    pub fn place_of(&mut self, c: u32, w: u32, pc: u32, lane: u32, k: usize, size: usize, space: Option<Option<Mod>>) -> Option<Place> {
        let ins = &self.module().kernel.body[pc as usize];
        let cx = exec::Cx { m: self, cta: c, warp: w, pc, mask: 1 << lane, group: 1 << lane };
        let a = cx.addr(ins, k, lane);
        let sp = space.unwrap_or_else(|| cx.space(ins, k));
        self.resolve(c, w, lane, sp, a, size).ok()
    }
}
