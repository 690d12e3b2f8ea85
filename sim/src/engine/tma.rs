//! The TMA port: each CTA's RTL `TmaEngine` (PTX 9.7.9.25), its command queue, its load jobs and
//! stores, its global requests in flight (answered after `[global] latency`), its shared-memory
//! line writes (local, or across the DSMEM network for other CTAs of the cluster), the bulk async-group
//! view it gives the lockstep, and the `[tma]` model for the forms the unit does not implement.

use super::*;
use hopsync_firmware::ir::Operand;
use hopsync_hdl::tma_engine::{TmaData128, TMA_CTXS};

/// A CTA's TmaEngine, its command queue and its work in flight.
pub(super) struct TmaPort {
    /// The CTA's RTL TmaEngine (when the kernel has a TMA instruction).
    pub(super) unit: Option<TmaUnit>,
    /// The `[tma]` model's command stream is busy until this cycle (one copy streams at a time;
    /// the forms the RTL TmaEngine does not implement).
    pub(super) model_free: u64,
    /// The front end takes the next command of the CTA's warps from this cycle:
    /// `tma.command_cycles` per copy command, `tma.prefetch_command_cycles` per prefetch. The
    /// commands wait for it in order; the issuing warp does not ([`warp_issue_cycles`]), but for
    /// a store into global memory ([`waits_for_front_end`]).
    pub(super) front_free: u64,
    /// Commands for the unit.
    cmd_q: VecDeque<TmaQueued>,
    /// Accepted load jobs in order.
    jobs: VecDeque<TmaJob>,
    /// Its global requests in flight.
    gmem: Vec<GmemInFlight>,
    /// Accepted or queued stores in command order: the unit's `store_read_done` and
    /// `store_writes_issued` pulses name the oldest one not yet past that point.
    stores: VecDeque<TmaStore>,
    /// The data of the shared-memory line read the unit's `smem_rd` got last cycle.
    rd_data: Option<TmaData128>,
    /// A store of this CTA went to the `[tma]` model: the unit does not see every bulk group.
    pub(super) stores_mixed: bool,
    /// A prefetch was accepted and the unit has not been idle since: it is clocked on (a
    /// prefetch has no job to wait for).
    pf_busy: bool,
    /// Its beats for other CTAs of the cluster crossing the DSMEM network, in emission order
    /// (one `[dsmem] latency`).
    dsmem: VecDeque<DsmemBeat>,
    /// The global side takes the unit's next sector write from this (fractional) cycle on:
    /// stores at `[tma] write_bytes_per_cycle`, reductions at `reduce_bytes_per_cycle`.
    wr_free: f64,
    /// The tensor maps (generic addresses) this SM's TMA unit fetched, each with the cycle its
    /// descriptor is there ([`Engine::tensor_map_ready`]).
    maps: Vec<(u64, u64)>,
    /// The SM's first tensor load was taken ([`Engine::tma_op_ready`]).
    read_before: bool,
}

impl TmaPort {
    /// A port with `unit` (None: the kernel has no TMA instruction the unit takes).
    pub(super) fn new(unit: Option<TmaUnit>) -> TmaPort {
        TmaPort { unit, model_free: 0, front_free: 0, cmd_q: VecDeque::new(), jobs: VecDeque::new(), gmem: Vec::new(), stores: VecDeque::new(), rd_data: None, stores_mixed: false, pf_busy: false, dsmem: VecDeque::new(), wr_free: 0.0, maps: Vec::new(), read_before: false }
    }

    /// The unit has commands, jobs, memory requests or beats in flight (it is clocked).
    pub(super) fn busy(&self) -> bool {
        !self.cmd_q.is_empty() || !self.jobs.is_empty() || !self.gmem.is_empty() || !self.stores.is_empty() || self.pf_busy || !self.dsmem.is_empty()
    }

    /// The cycle the front end takes a command that could be presented from `earliest`, holding
    /// it `cost` cycles: the commands of the CTA's warps go through it one after another.
    pub(super) fn front_end_slot(&mut self, earliest: u64, cost: u64) -> u64 {
        let at = earliest.max(self.front_free);
        self.front_free = at + cost;
        at
    }

    /// Queues a load command from cycle `at`, with its job.
    pub(super) fn send_load(&mut self, at: u64, cmd: TmaCmd, desc: TmaDescImage, job: TmaJob) {
        self.cmd_q.push_back(TmaQueued { at, cmd, desc });
        self.jobs.push_back(job);
    }

    /// Queues a store command from cycle `at`, with its bookkeeping.
    pub(super) fn send_store(&mut self, at: u64, cmd: TmaCmd, desc: TmaDescImage, store: TmaStore) {
        self.cmd_q.push_back(TmaQueued { at, cmd, desc });
        self.stores.push_back(store);
    }
}

/// A command for a TmaEngine.
#[derive(Debug, Clone)]
struct TmaQueued {
    /// The first cycle the command may be presented.
    at: u64,
    /// The command.
    cmd: TmaCmd,
    /// Its tensor-map image (tensor commands).
    desc: TmaDescImage,
}

/// A load job the TmaEngine accepted.
#[derive(Debug, Clone)]
pub(super) struct TmaJob {
    /// Issue number.
    pub(super) seq: u64,
    /// The operation.
    pub(super) op: TmaOp,
    /// Destination CTAs still to be signalled, lowest rank first.
    pub(super) dests: VecDeque<u32>,
}

/// A global-memory request of the TmaEngine in flight.
#[derive(Debug, Clone)]
struct GmemInFlight {
    /// The cycle its response is due.
    due: u64,
    /// The response.
    resp: TmaGmemResp,
    /// For a write: the store's issue number and the request, applied to global memory when
    /// acknowledged.
    write: Option<(u64, TmaGmemReq)>,
}

/// A TmaEngine line write for another CTA of the cluster, crossing the DSMEM network.
#[derive(Debug, Clone, Copy)]
struct DsmemBeat {
    /// The cycle it lands.
    lands: u64,
    /// The destination CTA.
    cta: u32,
    /// The write.
    write: TmaSmemWrite,
}

/// A store on the RTL TmaEngine.
pub(super) struct TmaStore {
    /// Issue number of the store (names it for its writes' acknowledgements).
    pub(super) key: u64,
    /// Issue number of its current event (the read event, then the write event it queued).
    pub(super) seq: u64,
    /// The operation (`TmaOp::ToGlobal`, data None until the read event).
    pub(super) op: TmaOp,
    /// `store_read_done` seen.
    pub(super) read: bool,
    /// `store_writes_issued` seen.
    pub(super) issued: bool,
    /// Sector writes not acknowledged.
    pub(super) unacked: u32,
}

/// The issuing CTA of a TMA operation.
pub(super) fn at_cta(op: &TmaOp) -> u32 {
    match op {
        TmaOp::ToShared { at, .. } | TmaOp::ToGlobal { at, .. } => at.0,
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

/// The cycles the command of a TMA-class instruction (`timing::class` `Class::Tma`) holds the
/// CTA's front end, per active lane: a prefetch `tma.prefetch_command_cycles` (it goes through
/// the same front end, more cheaply: calibration/tma_prefetch.ptx, 8 in 158 cycles), a copy or
/// reduction `tma.command_cycles`.
pub(super) fn front_end_cycles(op: Opcode, t: &crate::config::Tma) -> u64 {
    if matches!(op, Opcode::CpAsyncBulkPrefetch | Opcode::CpAsyncBulkPrefetchTensor) {
        t.prefetch_command_cycles
    } else {
        t.command_cycles
    }
}

/// Whether a TMA-class instruction is a store or reduction into global memory (its completion
/// is a bulk async-group): its warp waits for the front end before it issues, as it did before
/// the front end queued commands (their issue is not measured apart from their completion:
/// calibration/tma/bulk_store.ptx), so every store the unit completes was issued after the
/// commands before it reached the unit (the lockstep compares the unit's bulk-group answers).
pub(super) fn waits_for_front_end(i: &Instr) -> bool {
    i.has(Mod::BulkGroup)
}

/// The cycles a TMA-class instruction holds its warp per active lane (ptxas issues the lanes'
/// commands in a loop: ELECT, the instruction, BRA.U.ANY): a prefetch
/// `tma.prefetch_issue_cycles` (8 in 158 cycles, calibration/tma/tma_prefetch.ptx), a copy or
/// reduction into shared memory `tma.per_lane_issue_cycles` (calibration/tma/tma_issue.ptx); none
/// for the group instructions, nor for a store ([`waits_for_front_end`]).
pub(super) fn warp_issue_cycles(i: &Instr, t: &crate::config::Tma) -> u64 {
    match front_end_cycles(i.op, t) {
        0 => 0,
        _ if waits_for_front_end(i) => 0,
        _ if matches!(i.op, Opcode::CpAsyncBulkPrefetch | Opcode::CpAsyncBulkPrefetchTensor) => t.prefetch_issue_cycles,
        _ => t.per_lane_issue_cycles,
    }
}

impl<'p> Engine<'p> {
    /// The RTL TmaEngine's command for a TMA operation, or None for the forms it does not
    /// implement (those are timed by [`Self::schedule_tma`]): it takes the loads from global
    /// memory into shared::cluster, bulk or tensor (tile and im2col mode), with or without
    /// multicast, the shared::cta -> shared::cluster copies and reductions, and the stores and
    /// reductions from shared::cta to global memory (tile mode; im2col-mode stores are left to
    /// the model).
    pub(super) fn rtl_command(&mut self, op: &TmaOp) -> Result<Option<(TmaCmd, TmaDescImage)>, Stop> {
        if let TmaOp::ToGlobal { pieces, data: None, red, at, .. } = op {
            return self.rtl_store_command(pieces, *red, *at);
        }
        let TmaOp::ToShared { ctas, pieces, red, mbar, at, .. } = op else { return Ok(None) };
        let (c0, w0, lane, pc) = *at;
        if self.ctas[c0 as usize].tma.unit.is_none() || mbar / 8 >= 1 << 16 {
            return Ok(None);
        }
        let mask = ctas.iter().fold(0u64, |m, &d| m | 1 << self.m.cta_rank(d));
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
            // `.ignore_oob` copies part of the chunk: timed by the [tma] model
            Opcode::CpAsyncBulk if red.is_none() && !ins.has(Mod::IgnoreOob) => {
                let [p] = pieces.as_slice() else { return Ok(None) };
                let (Some(Place::Global(r, off)), Place::Shared(_, doff)) = (p.src, p.dst) else { return Ok(None) };
                if doff >= 1 << 18 {
                    return Ok(None);
                }
                let g = self.m.global_address(r, off);
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
    pub(super) fn send_prefetch(&mut self, c: u32, w: u32, pc: u32, mask: u32, ins: &Instr) {
        if self.ctas[c as usize].tma.unit.is_none() {
            return;
        }
        let earliest = self.cycle + self.cfg.tma.issue_cycles;
        for lane in 0..WARP as u32 {
            if mask >> lane & 1 == 0 {
                continue;
            }
            let at = self.ctas[c as usize].tma.front_end_slot(earliest, self.cfg.tma.prefetch_command_cycles);
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
            self.ctas[c as usize].tma.cmd_q.push_back(TmaQueued { at, cmd, desc });
        }
    }

    /// The cycle from which CTA `c`'s TMA unit can take `op`'s command: once it holds the
    /// descriptor of its tensor map (none for a bulk copy), and, for the SM's first tensor read
    /// of global memory, once that first read's set-up is done. Silicon (H100, 2026-11-27,
    /// calibration/tma/tma_first_use.ptx and tma_store_first.ptx, 16 CTAs of one warp, one per
    /// SM, each step after ~2000 idle cycles, no global access before the first): the kernel's first
    /// tensor load (expect_tx + copy + wait) 772 cycles in every CTA against 375.5 for a second
    /// with the same map, the first load with a second map 414.5, one with a map a
    /// `prefetch.tensormap` named 2000 cycles before 372.5; the kernel's first tensor store
    /// (+ commit_group + wait_group 0) 271 against 224 for a second; tma_first_after_global.ptx,
    /// the first load 697 after the warp's st.global, 532 after its ld.global.cg. So a map's
    /// first use costs its SM `tma.map_fetch_cycles` (loads and stores alike, nothing when
    /// prefetched), and the SM's first tensor load `tma.first_read_cycles` more, less after the
    /// CTA's warps wrote global memory (`first_read_after_store_cycles`) and less again after
    /// they read it (`first_read_after_load_cycles`).
    pub(super) fn tma_op_ready(&mut self, c: u32, op: &TmaOp) -> u64 {
        let map = self.tensor_map_address(op.at());
        let ready = self.tensor_map_ready(c, map);
        if !matches!(op, TmaOp::ToShared { .. }) || map.is_none() {
            return ready;
        }
        let (cs, t) = (&mut self.ctas[c as usize], &self.cfg.tma);
        let first = if cs.tma.read_before {
            0
        } else if cs.mem.global_read {
            t.first_read_after_load_cycles
        } else if cs.mem.global_written {
            t.first_read_after_store_cycles
        } else {
            t.first_read_cycles
        };
        cs.tma.read_before = true;
        ready + first
    }

    /// The cycle from which CTA `c`'s TMA unit holds the descriptor of the tensor map at generic
    /// address `map` (None: none named), fetching it now when it has not (`tma.map_fetch_cycles`):
    /// at its first use, or at a `prefetch.tensormap` of it.
    pub(super) fn tensor_map_ready(&mut self, c: u32, map: Option<u64>) -> u64 {
        let now = self.cycle;
        let Some(addr) = map else { return now };
        let port = &mut self.ctas[c as usize].tma;
        if let Some(&(_, ready)) = port.maps.iter().find(|m| m.0 == addr) {
            return ready;
        }
        let ready = now + self.cfg.tma.map_fetch_cycles;
        port.maps.push((addr, ready));
        ready
    }

    /// The generic address of the tensor map instruction `pc` names for thread `at` (CTA, warp,
    /// lane, pc): its tensor operand's (`[map, {coords}]`), or a `prefetch.tensormap`'s address.
    pub(super) fn tensor_map_address(&mut self, at: (u32, u32, u32, u32)) -> Option<u64> {
        let ins = self.m.module().kernel.body.get(at.3 as usize)?;
        let lane = at.2;
        if ins.op == Opcode::Prefetch {
            return ins.has(Mod::Tensormap).then(|| self.m.quiet_eval(at, |cx| Ok(cx.addr(ins, 0, lane)))).flatten();
        }
        let o = ins.operands.iter().find(|o| matches!(o, Operand::Tensor { .. }))?;
        self.m.quiet_eval(at, |cx| Ok(exec::tma_tensor_operand_address(cx, o, lane)))?
    }

    /// The tensor operands of thread `at` (CTA, warp, lane, pc) for its TmaEngine command: the
    /// map, the coordinates and, in im2col mode, the offsets (operand `offs_k`; the map is
    /// operand `map_k`). The golden body already made these checks at issue and reported what
    /// they found: they are evaluated again without a second report. None where they fail.
    pub(super) fn quiet_tensor_operands(&mut self, at: (u32, u32, u32, u32), ins: &Instr, map_k: usize, offs_k: usize) -> Option<(TensorMap, Vec<i64>, Vec<i64>)> {
        let lane = at.2;
        self.m.quiet_eval(at, |cx| {
            let (map, coords) = exec::tma_tensor_operands(cx, ins, map_k, lane)?;
            let offs = if ins.has(Mod::Im2col) { exec::tma_im2col_offsets(cx, ins, offs_k, lane, map.rank())? } else { Vec::new() };
            Ok((map, coords, offs))
        })
    }

    /// The RTL TmaEngine's command for a store from shared::cta to global memory (bulk or tiled
    /// tensor, PTX 9.7.9.25.4.1 / 9.7.9.25.5.2), or None for the forms it does not implement.
    pub(super) fn rtl_store_command(&mut self, pieces: &[exec::TmaPiece], red: Option<(Mod, Mod)>, at: (u32, u32, u32, u32)) -> Result<Option<(TmaCmd, TmaDescImage)>, Stop> {
        let (c0, w0, lane, pc) = at;
        let thread = w0 * 32 + lane;
        if self.ctas[c0 as usize].tma.unit.is_none() || thread >= 1 << 10 {
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
                let g = self.m.global_address(r, off);
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
    pub(super) fn rtl_commit(&mut self, c: u32, w: u32, mask: u32) {
        let at = self.cycle + self.cfg.tma.issue_cycles;
        let cs = &mut self.ctas[c as usize];
        if cs.tma.unit.is_none() {
            return;
        }
        for l in 0..32u32 {
            if mask >> l & 1 == 1 && w * 32 + l < 1 << 10 {
                let cmd = TmaCmd { kind: TmaCmdKind::CommitGroup, thread: ((w * 32 + l) as u64).into(), ..Default::default() };
                cs.tma.cmd_q.push_back(TmaQueued { at, cmd, desc: TmaDescImage::default() });
            }
        }
    }

    /// Clocks CTA `c`'s TmaEngine when it has work: commands in, global reads answered after
    /// `[global] latency` from the engine's memory (the sectors of one 128-byte line a response, one
    /// response a cycle), line writes (up to 128 bytes: 8 chunks of 16) written into every destination
    /// CTA's shared memory in the same cycle (booking their shared-memory pipes), complete-tx requests queued to
    /// the destination MbarrierUnits (local: async-copy port; remote: cluster port after the
    /// DSMEM latency).
    pub(super) fn clock_tma(&mut self, c: u32, now: u64) -> Result<(), Stop> {
        let cs = &mut self.ctas[c as usize];
        if cs.tma.unit.is_none() || (cs.tma.cmd_q.is_empty() && cs.tma.jobs.is_empty() && cs.tma.gmem.is_empty() && cs.tma.stores.is_empty() && !cs.tma.pf_busy && cs.tma.rd_data.is_none() && cs.tma.dsmem.is_empty()) {
            return Ok(());
        }
        // Beats for other CTAs land after crossing the DSMEM network.
        while let Some(&DsmemBeat { lands: at, cta: d, write: wr }) = self.ctas[c as usize].tma.dsmem.front() {
            if at > now {
                break;
            }
            self.ctas[c as usize].tma.dsmem.pop_front();
            self.land_tma_line(c, d, &wr, now)?;
        }
        let cs = &mut self.ctas[c as usize];
        self.active_this_cycle = true;
        self.unit_edges += 1;
        let cmd = cs.tma.cmd_q.front().filter(|h| h.at <= now).map(|h| (h.cmd, h.desc));
        let due = cs.tma.gmem.iter().enumerate().filter(|(_, r)| r.due <= now).min_by_key(|(_, r)| r.due).map(|(k, _)| k);
        let due = due.map(|k| cs.tma.gmem.swap_remove(k));
        let resp = due.as_ref().map(|d| d.resp);
        let rd_data = cs.tma.rd_data.take().unwrap_or_default();
        let rank = self.m.cta_rank(c);
        // A write reaches global memory with its acknowledgement (`global.write_ack_cycles` after
        // issue; the L2 applies the byte mask).
        let mut acked = None;
        if let Some(GmemInFlight { write: Some((seq, q)), .. }) = &due {
            let a = q.addr_lo.to_u64() | q.addr_hi.to_u64() << 32;
            let mask = q.mask_lo.to_u64() | q.mask_hi.to_u64() << 16;
            let mut data = [0u8; 32];
            data[..16].copy_from_slice(&q.data_lo.to_bytes());
            data[16..].copy_from_slice(&q.data_hi.to_bytes());
            // A reduction's write: each whole element of the mask is `old op new` (the L2's work on
            // silicon; the golden model's element function).
            self.m.write_global_masked(a, &data, mask, red_mods(q.red_op, q.red_type));
            self.m.progress();
            acked = Some(*seq);
        }
        let cs = &mut self.ctas[c as usize];
        // The global side takes a sector write when its rate allows (one port: a read waits with
        // it, which only a load beside a store or reduction sees).
        let gmem_ready = cs.tma.wr_free < (now + 1) as f64;
        let inputs = TmaInputs { cta_rank: rank, cmd, gmem_req_ready: gmem_ready, gmem_resp: resp, smem_wr_ready: true, smem_rd_ready: true, smem_rd_data: rd_data, mbar_ready: true, wait_n: 0, wait_read: false, wait_thread: 0 };
        let out = cs.tma.unit.as_mut().expect("checked").cycle(&inputs);
        if let Some((cm, _)) = cmd.filter(|_| out.cmd_ready) {
            cs.tma.cmd_q.pop_front();
            self.tma_unit_commands += 1;
            if matches!(cm.kind, TmaCmdKind::BulkPrefetch | TmaCmdKind::TensorPrefetch) {
                cs.tma.pf_busy = true;
            }
        }
        if out.idle && cs.tma.cmd_q.is_empty() {
            cs.tma.pf_busy = false;
        }
        if let Some(seq) = acked {
            let Some(s) = cs.tma.stores.iter_mut().find(|s| s.key == seq && s.unacked > 0) else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} got a write acknowledgement of store {seq}, which has none in flight")));
            };
            s.unacked -= 1;
        }
        if let Some((a, cen)) = out.smem_rd {
            // The store's source chunks (those of `cen` in the line of `a`), from this CTA's
            // shared memory the cycle after: one line read, one cycle of the shared-memory pipe.
            let line = a as usize & !127;
            let mut b = [0u8; 128];
            for k in (0..8).filter(|k| cen >> k & 1 == 1) {
                self.m.read_smem(c, line + 16 * k, &mut b[16 * k..16 * k + 16]);
            }
            let cs = &mut self.ctas[c as usize];
            cs.tma.rd_data = Some(TmaData128::from_bytes(&b));
            cs.mem.smem.book(now, 1, None);
        }
        // a request is taken only when the port was ready
        let gmem_req = out.gmem_req.filter(|_| gmem_ready);
        if let Some(q) = gmem_req.filter(|q| q.write) {
            let cs = &mut self.ctas[c as usize];
            let Some(s) = cs.tma.stores.iter_mut().find(|s| !s.issued) else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} wrote global memory with no store in flight")));
            };
            s.unacked += 1;
            let seq = s.key;
            let resp = TmaGmemResp { tag: q.tag, write: true, ..Default::default() };
            // a reduction costs the L2 more per sector (read-modify-write) and acknowledges later
            let t = &self.cfg.tma;
            let (rate, ack) = if q.red_op == TmaRedOp::Copy { (t.write_bytes_per_cycle, t.store_ack_cycles) } else { (t.reduce_bytes_per_cycle, t.reduce_ack_cycles) };
            cs.tma.wr_free = cs.tma.wr_free.max(now as f64) + 32.0 / rate;
            cs.tma.gmem.push(GmemInFlight { due: now + ack, resp, write: Some((seq, q)) });
        }
        if out.store_read_done || out.store_writes_issued || acked.is_some() {
            self.tma_store_events(c, &out)?;
        }
        if let Some(q) = gmem_req.filter(|q| !q.write) {
            // A line read: the sectors of `sect` (the others are not fetched; the unit ignores them).
            let a = q.addr_lo.to_u64() | q.addr_hi.to_u64() << 32;
            let mut line = [0u8; 128];
            for k in (0..4).filter(|k| q.sect.to_u64() >> k & 1 == 1) {
                self.m.read_global(a + 32 * k as u64, &mut line[32 * k..32 * k + 32]);
            }
            let resp = TmaGmemResp { tag: q.tag, write: false, data: TmaData128::from_bytes(&line) };
            let far = if self.l2.first_far_at(a, 128, self.cfg.global.far_line_mask) { self.cfg.global.far_line_cycles } else { 0 };
            self.ctas[c as usize].tma.gmem.push(GmemInFlight { due: now + timing::tma_read_latency(&self.cfg) + far, resp, write: None });
        }
        let cluster = self.m.cta_cluster(c);
        if let Some(wr) = out.smem_wr {
            // Every CTA of the write's mask gets the line in this cycle: this CTA's shared memory
            // now, the others' across the DSMEM network (in parallel, one latency).
            let ctam = wr.ctam.to_u64();
            for rank in (0..16usize).filter(|r| ctam >> r & 1 == 1) {
                let Some(d) = self.m.cluster_ctas(cluster).get(rank).copied() else {
                    return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} wrote to cluster rank {rank}, outside its cluster")));
                };
                if d == c {
                    self.land_tma_line(c, d, &wr, now)?;
                } else {
                    let at = now + self.cfg.dsmem.latency;
                    self.ctas[c as usize].tma.dsmem.push_back(DsmemBeat { lands: at, cta: d, write: wr });
                }
            }
        }
        if let Some((req, to_rank, remote)) = out.mbar {
            let Some(d) = self.m.cluster_ctas(cluster).get(to_rank as usize).copied() else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} signalled cluster rank {to_rank}, outside its cluster")));
            };
            let cs = &mut self.ctas[c as usize];
            let Some(TmaJob { seq, op, dests }) = cs.tma.jobs.front_mut() else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} sent a complete-tx with no load in flight")));
            };
            if dests.front() != Some(&d) {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} signalled cta {d}; the load in flight (operation {seq}) signals {dests:?} next")));
            }
            dests.pop_front();
            let (seq, op) = (*seq, op.clone());
            if dests.is_empty() {
                cs.tma.jobs.pop_front();
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
                self.ctas[d as usize].mbar.cluster_q.push_back(q);
            } else {
                self.ctas[d as usize].mbar.tma_q.push_back(q);
            }
        }
        if out.fault.valid {
            let name = out.fault.kind.name().unwrap_or("?");
            if out.fault.kind == TmaFaultKind::UnsupportedThreads {
                let t = out.fault.thread.to_u64();
                return Err(Stop::Unsupported(format!("{name} (the store of cta {c} warp {} lane {}; the TmaEngine keeps {} bulk-group contexts)", t / 32, t % 32, TMA_CTXS)));
            }
            return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} refused a command the golden model accepted: {name}")));
        }
        Ok(())
    }

    /// Writes (or reduces) a line write of CTA `c`'s TmaEngine (its enabled 16-byte chunks) into
    /// CTA `d`'s shared memory at cycle `now`, booking one cycle of `d`'s shared-memory pipe
    /// (128 bytes a cycle, as the SM's shared memory).
    pub(super) fn land_tma_line(&mut self, c: u32, d: u32, wr: &TmaSmemWrite, now: u64) -> Result<(), Stop> {
        for (a, data) in wr.chunks() {
            let base = a as usize;
            if wr.red_op != TmaRedOp::Copy {
                // cp.reduce.async.bulk into shared::cluster: the golden model's element-wise
                // reduction, applied to the chunk (whole chunks: elements never straddle one).
                let Some((o, t)) = red_mods(wr.red_op, wr.red_type) else { unreachable!("red_op is not Copy") };
                if base + 16 > self.m.smem_len(d) {
                    return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} reduced a chunk at {base:#x} outside cta {d}'s shared memory")));
                }
                exec::tma_reduce_into(&mut self.m, Place::Shared(d, base), &data, o, t);
            } else {
                self.m.write_smem_masked(d, base, &data, 0xFFFF);
            }
        }
        let ds = &mut self.ctas[d as usize];
        ds.mem.smem.book(now, 1, None);
        self.m.progress();
        Ok(())
    }

    /// CTA `c`'s TmaEngine moved its stores on this cycle (`out`, and a write acknowledgement
    /// already counted): the oldest store without reads done completes its read event (the
    /// golden model's `TmaOp::ToGlobal` with data None: snapshot, `wait_group.read`), the oldest
    /// without writes issued is marked, and every store with its writes issued and acknowledged
    /// completes its write event (the bytes are the unit's writes, already in global memory).
    /// Each event's thread gets the unit's bulk-group view after the last event of the cycle.
    pub(super) fn tma_store_events(&mut self, c: u32, out: &crate::units::TmaOutputs) -> Result<(), Stop> {
        let mut done: Vec<(u64, TmaOp)> = Vec::new();
        if out.store_read_done {
            let cs = &mut self.ctas[c as usize];
            let Some(k) = cs.tma.stores.iter().position(|s| !s.read) else {
                return Err(Stop::Unsupported(format!("the TmaEngine of cta {c} finished a store's reads with no store in flight")));
            };
            cs.tma.stores[k].read = true;
            let (seq, op) = (cs.tma.stores[k].seq, cs.tma.stores[k].op.clone());
            self.m.progress();
            exec::complete_async(&mut self.m, AsyncOp::Tma(Box::new(op.clone())))?;
            let pend = self.m.take_pending();
            let [p] = pend.as_slice() else { unreachable!("a store's read event queues its write event") };
            let AsyncOp::Tma(next) = &p.op else { unreachable!("a store's read event queues its write event") };
            let s = &mut self.ctas[c as usize].tma.stores[k];
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
            let Some(s) = cs.tma.stores.iter_mut().find(|s| !s.issued) else {
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
            let Some(k) = cs.tma.stores.iter().position(|s| s.read && s.issued && s.unacked == 0) else { break };
            let s = cs.tma.stores.remove(k).expect("found");
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
    pub(super) fn rtl_bulk_view(&mut self, c: u32, w: u32, l: u32) -> Option<exec::BulkView> {
        let cs = &mut self.ctas[c as usize];
        if !cs.tma.cmd_q.is_empty() || cs.tma.stores_mixed {
            return None;
        }
        let u = cs.tma.unit.as_mut()?;
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
    pub(super) fn schedule_tma(&mut self, c: u32, seq: u64, op: TmaOp) {
        self.tma_model_ops += 1;
        let now = self.cycle;
        let cfg = self.cfg.clone();
        let t = &cfg.tma;
        // The engine moves 16-byte beats along rows: a row (a run of source-contiguous pieces)
        // of n bytes takes ceil(n / 16) beats, one more when it does not start on a 16-byte
        // boundary (hdl/src/tma/mod.rs "Throughput").
        let beats = match &op {
            TmaOp::ToShared { pieces, .. } => timing::tma_beats(pieces.iter().map(|p| (p.src.map(|s| self.m_addr(s)), p.len as u64))),
            TmaOp::ToGlobal { .. } => 0,
        };
        // The first read of a far line of a host-copied buffer answers later (memory::L2Lines).
        let far = match &op {
            TmaOp::ToShared { pieces, .. } => pieces.iter().fold(false, |far, p| match p.src {
                Some(Place::Global(r, o)) => self.l2.first_far(r, o, p.len as usize, cfg.global.far_line_mask) | far,
                _ => far,
            }),
            TmaOp::ToGlobal { .. } => false,
        };
        // the descriptor of a tensor copy's map (a store's writes were timed at its reads)
        let map_ready = match &op {
            TmaOp::ToGlobal { data: Some(_), .. } => now,
            _ => self.tma_op_ready(c, &op),
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
                // (through the front end, as the unit's commands)
                let start = cs.tma.front_end_slot((now + t.issue_cycles).max(map_ready), t.command_cycles).max(cs.tma.model_free) + if tensor { t.decode_cycles } else { 2 };
                // Global reads: latency, then the narrowest of the SM's path, the bytes in flight
                // over the latency and the shared-memory write port.
                let rate = timing::tma_rate(&cfg);
                let fetch = (g as f64 / rate).ceil() as u64 + sh.div_ceil(t.smem_bytes_per_cycle);
                // Each beat is written once, into every destination CTA at the same time
                // (multicast fetches once and writes its destinations in parallel).
                let write = box_bytes.div_ceil(t.smem_bytes_per_cycle);
                let stream = fetch.max(write).max(1);
                let lat = if g > 0 { timing::tma_read_latency(&cfg) + if far { cfg.global.far_line_cycles } else { 0 } } else if sh > 0 { cfg.smem.latency } else { 0 };
                cs.tma.model_free = start + stream;
                if g > 0 {
                    cs.mem.global.book(start, g.div_ceil(cfg.global.bytes_per_cycle), None);
                }
                for &d in ctas {
                    // A remote CTA's beats cross the DSMEM network.
                    let remote = if d != c { cfg.dsmem.latency } else { 0 };
                    let at = start + lat + stream + remote;
                    self.asyncs.push(Box::new(AsyncItem { seq, at, kind: AsyncKind::Tma { op: Box::new(op.clone()), cta: Some(d) }, queued: false }));
                }
            }
            TmaOp::ToGlobal { pieces, data: None, red, .. } => {
                // The source reads, paced by the global side's sector writes (as the RTL engine's:
                // stores at `write_bytes_per_cycle`, reductions at `reduce_bytes_per_cycle`).
                let bytes: u64 = pieces.iter().map(|p| p.len as u64).sum();
                let tensor = pieces.len() > 1;
                let start = (now + t.issue_cycles + t.store_start_cycles).max(map_ready).max(cs.tma.model_free) + if tensor { t.decode_cycles } else { 2 };
                let rate = if red.is_some() { t.reduce_bytes_per_cycle } else { t.write_bytes_per_cycle };
                let read = ((bytes as f64 / rate).ceil() as u64).max(1);
                cs.tma.model_free = start + read;
                let at = start + cfg.smem.latency + read;
                self.asyncs.push(Box::new(AsyncItem { seq, at, kind: AsyncKind::Tma { op: Box::new(op), cta: None }, queued: false }));
            }
            TmaOp::ToGlobal { pieces, red, .. } => {
                // The global writes, queued by the read event: they left with the reads (paced by
                // the write side); the last one's acknowledgement remains.
                let bytes: u64 = pieces.iter().map(|p| p.len as u64).sum();
                let occ = bytes.div_ceil(cfg.global.bytes_per_cycle).max(1);
                cs.mem.global.book(now, occ, None);
                let at = now + if red.is_some() { t.reduce_ack_cycles } else { t.store_ack_cycles };
                self.asyncs.push(Box::new(AsyncItem { seq, at, kind: AsyncKind::Tma { op: Box::new(op), cta: None }, queued: false }));
            }
        }
    }

    /// A flat address of a place, for contiguity (global: the buffer's device address; shared:
    /// CTA-tagged offsets that never touch a global range).
    pub(super) fn m_addr(&self, p: Place) -> u64 {
        match p {
            Place::Global(r, o) => self.m.global_address(r, o),
            Place::Shared(c, o) => (1u64 << 63) | ((c as u64) << 32) | o as u64,
            _ => 0,
        }
    }

    /// What the engine holds after (part of) a TMA operation completed, for the lockstep (empty
    /// when events are not recorded).
    pub(super) fn tma_effect(&self, op: &TmaOp, cta: Option<u32>, complete_tx: bool) -> TmaEffect {
        if !self.recording() {
            return TmaEffect::default();
        }
        let mut e = TmaEffect::default();
        match op {
            TmaOp::ToShared { pieces, mbar, tx, id, .. } => {
                let c = cta.unwrap_or(0);
                // A copy or reduction into bytes that another one not yet completed also writes
                // (CUTLASS example 63's weight prefetch loads every tile into one scratch box):
                // the TmaEngines interleave their beats (PTX orders neither), so these bytes may
                // already hold the other's data or part of its contribution, which the golden
                // model applies at that one's completion. They are compared where the other
                // completes, and where a thread reads them.
                let span = |ps: &[exec::TmaPiece]| -> Vec<(usize, usize)> { ps.iter().filter_map(|p| if let Place::Shared(_, o) = p.dst { Some((o, o + p.len as usize)) } else { None }).collect() };
                let mine = span(pieces);
                let shared = self.asyncs.iter().any(|a| match &a.kind {
                    AsyncKind::Tma { op, cta: Some(d) } if *d == c => match &**op {
                        TmaOp::ToShared { id: other, pieces: ps, .. } if other != id => span(ps).iter().any(|&(a0, a1)| mine.iter().any(|&(b0, b1)| a0 < b1 && b0 < a1)),
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
}
