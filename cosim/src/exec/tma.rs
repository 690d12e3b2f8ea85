//! The TMA engine: bulk copies (`cp.async.bulk`, `cp.reduce.async.bulk`,
//! `cp.async.bulk.prefetch`), tensor copies through a tensor map (`cp.async.bulk.tensor`,
//! `cp.reduce.async.bulk.tensor`, `cp.async.bulk.prefetch.tensor`) and bulk async-groups
//! (`cp.async.bulk.commit_group`, `cp.async.bulk.wait_group{.read}`).
//!
//! # Sources
//!
//! * **\[PTX\]** PTX ISA 9.0: §5.5 Tensors (§5.5.3 tiled mode: bounding box, traversal stride,
//!   §5.5.3.3 out-of-bound access; §5.5.4 im2col mode; §5.5.7 swizzling; §5.5.8 tensor-map);
//!   §8.6 Memory Consistency Model: Proxies; §9.7.9.25.1 the async proxy; §9.7.9.25.2 completion
//!   mechanisms (bulk async-groups, mbarrier-based complete-tx); §9.7.9.25.4.1 `cp.async.bulk`,
//!   §9.7.9.25.4.2 `cp.reduce.async.bulk`, §9.7.9.25.4.3 `cp.async.bulk.prefetch`; §9.7.9.25.5.2
//!   `cp.async.bulk.tensor`, §9.7.9.25.5.3 `cp.reduce.async.bulk.tensor`, §9.7.9.25.5.4
//!   `cp.async.bulk.prefetch.tensor`; §9.7.9.25.6 `cp.async.bulk.commit_group` /
//!   `cp.async.bulk.wait_group`; §9.7.13.4 `fence.proxy.async`, `fence.mbarrier_init`;
//!   §9.7.13.15 mbarrier (complete-tx, §9.7.13.15.5.2). §9.7.13 is the seed
//!   `shared/seeds/003_*.txt`; the CCCL `cuda::ptx` reference pages list the same syntax blocks.
//! * **\[DRV\]** CUDA Driver API §6.30 `cuTensorMapEncodeTiled` / `cuTensorMapEncodeIm2col`
//!   (the tensor map, firmware/src/tensormap.rs).
//! * **\[GUIDE\]** CUDA C++ Programming Guide, "Asynchronous Data Copies using the Tensor Memory
//!   Accelerator (TMA)", as quoted by the seed `shared/seeds/001_*.txt`: "The destination shared
//!   memory buffer of a bulk operations should be 16 byte aligned", "The destination shared
//!   memory buffer of a bulk tensor operation should be 128 byte aligned", `fence_proxy_async`
//!   before the TMA reads what threads wrote, `cp_async_bulk_wait_group_read<0>` before the
//!   source is reused.
//! * **\[CUTLASS\]** `sm90_mma_tma_gmma_ss_warpspecialized.hpp`: `TmaTransactionBytes` is the
//!   full shared-memory tile, the constant expected by every k-tile, residue (partly
//!   out-of-bounds) tiles included.
//!
//! # Semantics
//!
//! Each issuing lane (the instructions are per thread) starts one asynchronous operation, an
//! [`AsyncOp::Tma`] that the scheduler completes at a later step (random under `--seed`):
//!
//! * **To shared memory** (`cp.async.bulk` global → shared::cluster / shared::cta,
//!   shared::cta → shared::cluster; tensor loads; `cp.reduce.async.bulk` into shared::cluster):
//!   one event reads the source, writes (or reduces into) the destination of every destination
//!   CTA and performs complete-tx on the mbarrier of each ([PTX] §9.7.9.25.4.1: "the
//!   complete-tx operation ... with completeCount equal to the amount of data copied in bytes").
//!   A tensor load counts the whole box, out-of-bounds fill included (\[CUTLASS\]; tensormap.rs
//!   `smem_box_bytes`). With `.multicast::cluster` the box goes to the same shared offset of each
//!   CTA whose `%cluster_ctarank` bit is set in the 16-bit `ctaMask`, and each of those CTAs'
//!   mbarrier at the mbarrier operand's offset is signalled (\[PTX\] §9.7.9.25.5.2).
//! * **To global memory** (`.bulk_group` stores and reductions): a read event snapshots the
//!   shared source and marks the reads of the operation complete (what
//!   `cp.async.bulk.wait_group.read` waits for), then a later write event writes or reduces
//!   into global memory (what `wait_group` without `.read` waits for).
//! * **Tensor boxes** ([PTX] §5.5.3): box element `k` (dimension 0 fastest) is the tensor
//!   element at `coords[i] + k[i] * elementStrides[i]`, `ceil(boxDim[i] / elementStrides[i])`
//!   elements per dimension (`elementStrides[0]` is ignored with interleave NONE, [DRV]); it sits
//!   densely in shared memory at `k * elementSize`, then swizzled by the absolute shared address
//!   ([PTX] §5.5.7, tensormap.rs `swizzle_offset`). Loads fill out-of-bounds elements with zero,
//!   or with NaN (the 16-bit pattern `0x7ff7` repeated, as an H200 writes it) for float types
//!   under `NAN_REQUEST_ZERO_FMA` ([DRV] oobFill; [PTX] §5.5.3.3); stores and reductions skip
//!   out-of-bounds elements ([PTX] §5.5.3.3).
//! * **im2col** ([PTX] §5.5.4): `pixelsPerColumn` pixels, each `channelsPerPixel` channels from
//!   `coords[0]`, are walked from the pixel at the instruction's spatial coordinates through the
//!   bounding box (spatial dimension `i` from `pixelBoxLowerCorner[i-1]` to
//!   `globalDim[i] - 1 + pixelBoxUpperCorner[i-1]`, traversal stride `elementStrides[i]`) in W,
//!   H, D, N order; each pixel's elements are read at the pixel plus the im2col offsets.
//! * Prefetches change nothing architecturally; their addresses, tensor maps and coordinates are
//!   checked like a copy's.
//!
//! Interleaved layouts, the sm_100 forms (`.cta_group`, `.tile::gather4`, `.tile::scatter4`,
//! `.im2col::w*`, `.cp_mask`) and f16/bf16 tensor-map reductions of types PTX does not list stop
//! with "unsupported: ...".
//!
//! # Findings
//!
//! * `TmaMisaligned`: bulk addresses not 16-byte aligned or a size not a multiple of 16 ([PTX]
//!   §9.7.9.25.4.1 - .3); a tensor copy's shared-memory address not 128-byte aligned ([GUIDE]); a
//!   tensor map not 64-byte aligned ([DRV] "tensorMap address must be aligned to 64 bytes").
//! * `TensorMapInvalid`: the 128-byte image at the tensor-map address does not decode
//!   ([`TensorMap::decode`], every encoder rule), or its mode or rank does not fit the instruction.
//! * `TmaCoordOutOfRange`: a coordinate that is not a 32-bit signed value, an im2col offset
//!   outside `0..2^16` (3D), `0..2^8` (4D), `0..2^5` (5D) ([PTX] §9.7.9.25.5.2, im2colOffsets), a
//!   `.Nd` that differs from the map's rank; and two tile-mode rules measured on an H200 (the
//!   device check of `firmware/programs/tma/`), where breaking them traps with
//!   CUDA_ERROR_ILLEGAL_INSTRUCTION: `coords[0] * elementSize` must be a multiple of 16 bytes
//!   (loads, stores, reductions, prefetches), and stores and reductions take no negative
//!   coordinate.
//! * `TmaMbarrierNotInitialized`: the mbarrier the engine signals is not valid (at issue and at
//!   completion), or belongs to another CTA than the issuing one and was initialized without a
//!   `fence.mbarrier_init.release.cluster` (or a cluster-scope fence) by its CTA since ([PTX]
//!   §9.7.13.4: the fence makes prior `mbarrier.init`s visible to the cluster).
//! * `ProxyFenceMissing`: a shared byte written by a generic store (`st`, `atom`, `red`) is then
//!   accessed by the async proxy (a bulk or tensor copy's source or destination) although the
//!   writing thread executed no `fence.proxy.async` (full, `.shared::cta` or `.shared::cluster`)
//!   after the write ([PTX] §8.6, §9.7.13.4). The reverse order (async-proxy writes read by the
//!   generic proxy) is ordered by the mbarrier of the copy: every async-proxy write into shared
//!   memory on sm_90 completes through one, and a read before that phase completed is
//!   `TmaReadBeforeComplete`.
//! * `TmaReadBeforeComplete`: a generic load, store or atomic on bytes of a TMA destination (in
//!   any destination CTA) before the copy landed and the mbarrier phase it landed in completed
//!   ([PTX] §9.7.13.15.16: only a completed phase makes the asynchronous writes visible).

use super::mbarrier::{describe, locate, on_phase_complete, Obj};
use super::mem::atomic_op;
use super::{lanes, unsupported, Cx, Exec, Flow, Stop, R};
use crate::finding::FindingKind;
use crate::machine::{AsyncOp, Lane, Machine, Place, Wait, WARP};
use crate::mbarrier as mb;
use crate::retire::SyncEvent;
use hopsync_firmware::ir::{AddrBase, Instr, Mod, Operand, Space};
use hopsync_firmware::ops::op;
use hopsync_firmware::tensormap::{
    swizzle_offset, TensorMap, TensorMapDataType as Dt, TensorMapInterleave, TensorMapMode, TENSOR_MAP_BYTES,
};
use hopsync_firmware::Opcode;
use std::collections::HashMap;

/// Whether the golden model gives `op` semantics (false: it stops with "unsupported: ...": the
/// carry-chain `addc`/`subc` and the sm_100 `clusterlaunchcontrol` pair).
pub fn modelled(op: Opcode) -> bool {
    use Opcode::*;
    !matches!(op, Addc | Subc | ClusterlaunchcontrolTryCancel | ClusterlaunchcontrolQueryCancel)
}

fn is_tma(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        CpAsyncBulk
            | CpAsyncBulkTensor
            | CpReduceAsyncBulk
            | CpReduceAsyncBulkTensor
            | CpAsyncBulkPrefetch
            | CpAsyncBulkPrefetchTensor
            | CpAsyncBulkCommitGroup
            | CpAsyncBulkWaitGroup
    )
}

/// Whether a module uses the TMA, so that runs keep its proxy and bulk-group state
/// ([`TmaState`]: per CTA, 8 bytes per shared byte). wgmma.mma_async and wgmma.mma_async.sp
/// read shared memory through the async proxy too (exec/wgmma.rs).
pub fn tracks(m: &hopsync_firmware::Module) -> bool {
    m.kernel.body.iter().any(|i| is_tma(i.op) || matches!(i.op, Opcode::WgmmaMmaAsync | Opcode::WgmmaMmaAsyncSp))
}

// ---- state -------------------------------------------------------------------------------------

/// Where an operation was issued: (cta, warp, lane, pc), for findings at its completion.
pub type At = (u32, u32, u32, u32);

/// The TMA engine's side state (not architectural except the bulk async-groups).
#[derive(Debug, Clone, Default)]
pub struct TmaState {
    /// Whether [`Self::init`] ran.
    scanned: bool,
    /// Whether the module has a TMA instruction (then generic shared writes are tracked).
    active: bool,
    /// Threads per CTA (warps * 32), for global thread ids.
    tpc: u32,
    /// Per CTA.
    ctas: Vec<CtaTma>,
    /// Per fence-counting thread (global thread id): `fence.proxy.async` instructions executed.
    fences: Vec<u32>,
    /// Bulk async-groups of each issuing thread (cta, warp, lane).
    threads: HashMap<(u32, u32, u32), ThreadBulk>,
    /// Operation ids.
    next_id: u64,
}

#[derive(Debug, Clone, Default)]
struct CtaTma {
    /// Per shared byte: the last generic write not yet fenced, `(writer + 1) << 32 | the writer's
    /// fence count at the write`; 0 when none.
    gen_write: Vec<u64>,
    /// Destinations of TMA operations into this CTA whose mbarrier phase has not completed.
    guards: Vec<Guard>,
}

/// A TMA destination range not yet safe to access.
#[derive(Debug, Clone)]
struct Guard {
    id: u64,
    start: u32,
    end: u32,
    mbar: u32,
    /// The mbarrier's phase number when the data landed (None: still in flight).
    landed_in: Option<u64>,
    at: At,
}

/// One thread's bulk async-groups ([PTX] §9.7.9.25.2.1, §9.7.9.25.6).
#[derive(Debug, Clone, Default)]
struct ThreadBulk {
    /// Number of the open (uncommitted) group; groups `0..open` are committed.
    open: u64,
    /// Operations in flight: (id, group, reads complete).
    inflight: Vec<(u64, u64, bool)>,
}

impl TmaState {
    /// Sizes the state for `m` on first use (the module decides whether tracking is on).
    fn init(m: &mut Machine<'_>) {
        let st = &mut m.tma;
        st.scanned = true;
        st.active = tracks(&m.prog.module);
        if !st.active {
            return;
        }
        st.tpc = m.ctas.first().map(|c| c.warps.len() as u32 * WARP as u32).unwrap_or(0);
        st.ctas = (0..m.ctas.len()).map(|_| CtaTma { gen_write: vec![0; m.smem_bytes as usize], guards: Vec::new() }).collect();
        st.fences = vec![0; m.ctas.len() * st.tpc as usize];
    }
}

fn state<'a>(m: &'a mut Machine<'_>) -> &'a mut TmaState {
    if !m.tma.scanned {
        TmaState::init(m);
    }
    &mut m.tma
}

fn gtid(st: &TmaState, cta: u32, warp: u32, lane: u32) -> usize {
    (cta * st.tpc + warp * WARP as u32 + lane) as usize
}

// ---- hooks for the generic proxy (ld/st/atom/red, fences) ---------------------------------------

/// A generic access by lane `lane` of the executing warp to `len` bytes at `p`: checks TMA
/// destinations in flight (`TmaReadBeforeComplete`) and, for writes, records the write for the
/// proxy-fence check.
pub fn on_generic_access(cx: &mut Cx<'_, '_>, p: Place, len: usize, lane: u32, write: bool) -> Result<(), Stop> {
    let Place::Shared(c, off) = p else { return Ok(()) };
    let (cta, warp) = (cx.cta, cx.warp);
    let st = state(cx.m);
    if !st.active {
        return Ok(());
    }
    if !st.ctas[c as usize].guards.is_empty() {
        check_guards(cx, c, off as u32, (off + len) as u32, lane, write)?;
    }
    if !write {
        return Ok(());
    }
    let st = &mut cx.m.tma;
    let t = gtid(st, cta, warp, lane);
    let tag = ((t as u64 + 1) << 32) | st.fences[t] as u64;
    st.ctas[c as usize].gen_write[off..off + len].fill(tag);
    Ok(())
}

fn check_guards(cx: &mut Cx<'_, '_>, c: u32, start: u32, end: u32, lane: u32, write: bool) -> Result<(), Stop> {
    let mut bad = None;
    let m = &mut *cx.m;
    let objs = &m.ctas[c as usize].mbarriers;
    m.tma.ctas[c as usize].guards.retain(|g| {
        // A guard whose data landed in a phase that has since completed (or whose mbarrier is gone,
        // or was re-initialized: its phase number went back) is done.
        let done = match (g.landed_in, objs.get(&g.mbar)) {
            (_, None) => g.landed_in.is_some(),
            (Some(p), Some(s)) => s.phase != p,
            (None, Some(_)) => false,
        };
        if !done && g.start < end && start < g.end && bad.is_none() {
            bad = Some(g.clone());
        }
        !done
    });
    if let Some(g) = bad {
        let what = if write { "writes" } else { "reads" };
        let state = if g.landed_in.is_none() {
            "the copy has not landed".to_string()
        } else {
            format!("the copy landed but its phase has not completed: {}", describe(cx.m, Obj { cta: c, off: g.mbar, remote: false }))
        };
        let (ic, iw, il, ipc) = g.at;
        let instr = cx.m.module().kernel.body.get(ipc as usize).map(|i| hopsync_firmware::printer::print_instr(cx.m.module(), i)).unwrap_or_default();
        cx.finding(
            FindingKind::TmaReadBeforeComplete,
            lane,
            format!(
                "generic access {what} cta {c} shared 0x{start:x}..0x{end:x}, inside the destination 0x{:x}..0x{:x} of `{instr}` (cta {ic} warp {iw} lane {il}) before its mbarrier at shared 0x{:x} completed the phase: {state}",
                g.start, g.end, g.mbar
            ),
        )?;
    }
    Ok(())
}

/// An async-proxy read of `[start, end)` of CTA `c`'s shared memory by `wgmma.mma_async` (PTX
/// 9.7.15.3: its shared-memory operands are read through the async proxy): no TMA copy may still be
/// landing there, and generic writes to it must have been fenced by their writers.
pub fn on_async_read(cx: &mut Cx<'_, '_>, c: u32, start: usize, end: usize, lane: u32) -> Result<(), Stop> {
    let st = state(cx.m);
    if !st.active {
        return Ok(());
    }
    if !st.ctas[c as usize].guards.is_empty() {
        check_guards(cx, c, start as u32, end as u32, lane, false)?;
    }
    check_async_access(cx, c, start, end, lane, false)
}

/// `fence` / `membar` (PTX 9.7.13.4): a proxy fence with `.async` (no state space, `.shared::cta`
/// or `.shared::cluster`) orders the executing thread's prior generic accesses before its
/// subsequent async-proxy accesses; `fence.mbarrier_init.release.cluster` (or a full fence of
/// cluster scope or wider) releases the CTA's prior `mbarrier.init`s to the cluster.
pub fn on_fence(cx: &mut Cx<'_, '_>, i: &Instr) {
    let proxy_async = i.has(Mod::Proxy) && (i.has(Mod::Async) || i.has(Mod::AsyncGeneric)) && !i.has(Mod::Global);
    let wide = [Mod::Cluster, Mod::Gpu, Mod::Sys, Mod::Gl].iter().any(|m| i.has(*m));
    let full = !i.has(Mod::Proxy) && !i.has(Mod::MbarrierInit) && !i.has(Mod::SyncRestrictSharedCta) && !i.has(Mod::SyncRestrictSharedCluster);
    if i.has(Mod::MbarrierInit) || (full && wide && !i.has(Mod::Acquire)) {
        // PTX 9.7.13.4: ".mbarrier_init ... applies to the prior mbarrier.init operations executed
        // by the same thread"; hopsync marks every object valid in the CTA now (it does not track
        // which thread initialized an object).
        cx.m.ctas[cx.cta as usize].mbarriers.mark_init_fenced();
    }
    if proxy_async {
        crate::race::proxy_fence(cx.m, cx.cta, cx.warp);
        let (cta, warp, mask) = (cx.cta, cx.warp, cx.mask);
        let st = state(cx.m);
        if st.active {
            for l in lanes(mask) {
                let t = gtid(st, cta, warp, l);
                st.fences[t] += 1;
            }
        }
    }
}

/// Async-proxy access to `[start, end)` of CTA `c`'s shared memory by an operation issued at
/// `at`: every byte last written by the generic proxy must have been fenced by its writer.
/// A destination (`write`) forgets the generic writes it overwrites.
fn check_async_access(cx: &mut Cx<'_, '_>, c: u32, start: usize, end: usize, lane: u32, write: bool) -> Result<(), Stop> {
    let st = state(cx.m);
    if !st.active {
        return Ok(());
    }
    let mut bad = None;
    {
        let fences = &st.fences;
        let gw = &mut st.ctas[c as usize].gen_write[start..end];
        for (k, e) in gw.iter_mut().enumerate() {
            if *e == 0 {
                continue;
            }
            let t = (*e >> 32) as usize - 1;
            if fences[t] > *e as u32 {
                *e = 0;
            } else if bad.is_none() {
                bad = Some((start + k, t));
            }
        }
        if write && bad.is_none() {
            gw.fill(0);
        }
    }
    if let Some((b, t)) = bad {
        let tpc = cx.m.tma.tpc;
        let (wc, wt) = (t as u32 / tpc, t as u32 % tpc);
        cx.finding(
            FindingKind::ProxyFenceMissing,
            lane,
            format!(
                "the async proxy {} cta {c} shared 0x{b:x}, last written by a generic store of cta {wc} thread {wt} (warp {} lane {}) that executed no fence.proxy.async after it (PTX 8.6 Proxies, 9.7.13.4)",
                if write { "writes" } else { "reads" },
                wt / WARP as u32,
                wt % WARP as u32
            ),
        )?;
    }
    Ok(())
}

// ---- the operations in flight -------------------------------------------------------------------

/// One piece of a transfer: `len` bytes from `src` (None: out-of-bounds fill) to `dst`.
#[derive(Debug, Clone, Copy)]
pub struct Piece {
    /// Source bytes, or None for fill.
    pub src: Option<Place>,
    /// Destination: a shared-memory offset (relative to each destination CTA) for transfers to
    /// shared memory, a global place for transfers to global memory.
    pub dst: Place,
    /// Bytes.
    pub len: u32,
}

/// An asynchronous TMA operation (the payload of [`AsyncOp::Tma`]).
#[derive(Debug, Clone)]
pub enum TmaOp {
    /// Into shared memory of every CTA of `ctas` at the same offsets, then complete-tx of `tx`
    /// bytes on the mbarrier at offset `mbar` of each.
    ToShared {
        /// Destination CTAs.
        ctas: Vec<u32>,
        /// Pieces (`dst` is `Place::Shared(_, offset)`; its CTA is ignored).
        pieces: Vec<Piece>,
        /// One element of out-of-bounds fill.
        fill: Vec<u8>,
        /// A reduction (op, element type) instead of a copy.
        red: Option<(Mod, Mod)>,
        /// mbarrier offset in each destination CTA.
        mbar: u32,
        /// complete-tx bytes.
        tx: u32,
        /// Guard id of the destination ranges.
        id: u64,
        /// Issue location.
        at: At,
    },
    /// Shared → global, in two events: `data` None = the source reads are pending; Some = the
    /// reads are done and the writes are pending.
    ToGlobal {
        /// Pieces (`src` shared, `dst` global).
        pieces: Vec<Piece>,
        /// The snapshot of the source, once read.
        data: Option<Vec<u8>>,
        /// A reduction (op, element type) instead of a copy.
        red: Option<(Mod, Mod)>,
        /// Operation id (bulk async-group bookkeeping).
        id: u64,
        /// Issue location.
        at: At,
    },
}

impl TmaOp {
    /// Where the operation was issued.
    pub fn at(&self) -> At {
        match self {
            TmaOp::ToShared { at, .. } | TmaOp::ToGlobal { at, .. } => *at,
        }
    }
}

fn new_id(m: &mut Machine<'_>) -> u64 {
    m.tma.next_id += 1;
    m.tma.next_id
}

/// Applies a completed TMA event.
pub fn complete(m: &mut Machine<'_>, op: TmaOp) -> Result<(), Stop> {
    match op {
        TmaOp::ToShared { ref ctas, ref pieces, red, .. } => {
            for &c in ctas {
                race_land(m, pieces, c, red.is_some())?;
                land_data(m, &op, c);
            }
            for &c in ctas {
                land_guard(m, &op, c);
                signal_for(m, &op, c)?;
            }
            Ok(())
        }
        TmaOp::ToGlobal { pieces, data: None, red, id, at } => {
            let mut data = Vec::new();
            for p in &pieces {
                if let Some(s) = p.src {
                    crate::race::op_access(m, s, p.len as usize, false, false)?;
                    data.extend_from_slice(m.read(s, p.len as usize));
                }
            }
            crate::race::bulk_progress(m, false);
            bulk_progress(m, at, id, false);
            m.push_async(AsyncOp::Tma(Box::new(TmaOp::ToGlobal { pieces, data: Some(data), red, id, at })));
            Ok(())
        }
        TmaOp::ToGlobal { pieces, data: Some(data), red, id, at } => {
            let mut k = 0;
            for p in &pieces {
                let d = &data[k..k + p.len as usize];
                k += p.len as usize;
                crate::race::op_access(m, p.dst, p.len as usize, true, red.is_some())?;
                match red {
                    None => m.write(p.dst, d),
                    Some((o, t)) => reduce_into(m, p.dst, d, o, t),
                }
            }
            crate::race::bulk_progress(m, true);
            bulk_progress(m, at, id, true);
            Ok(())
        }
    }
}

/// The part of a [`TmaOp::ToShared`] that reaches destination CTA `c`: its data, the landing
/// of its guard and complete-tx on `c`'s mbarrier (an engine that delivers a multicast copy to
/// each CTA at its own time completes it CTA by CTA; [`complete`] does all at once).
pub fn complete_in(m: &mut Machine<'_>, op: &TmaOp, c: u32) -> Result<(), Stop> {
    land_data(m, op, c);
    land_guard(m, op, c);
    signal_for(m, op, c)
}

/// The race detector's view of a [`TmaOp::ToShared`] landing in CTA `c`: its source reads
/// (shared, or global with `--race global`) and its destination writes.
fn race_land(m: &mut Machine<'_>, pieces: &[Piece], c: u32, reduction: bool) -> Result<(), Stop> {
    for p in pieces {
        if let Some(s) = p.src {
            crate::race::op_access(m, s, p.len as usize, false, false)?;
        }
        if let Place::Shared(_, off) = p.dst {
            crate::race::op_access(m, Place::Shared(c, off), p.len as usize, true, reduction)?;
        }
    }
    Ok(())
}

/// Writes (or reduces) the data of a [`TmaOp::ToShared`] into destination CTA `c`'s shared
/// memory.
pub fn land_data(m: &mut Machine<'_>, op: &TmaOp, c: u32) {
    let TmaOp::ToShared { pieces, fill, red, .. } = op else { return };
    for p in pieces {
        let Place::Shared(_, off) = p.dst else { continue };
        let data: Vec<u8> = match p.src {
            Some(s) => m.read(s, p.len as usize).to_vec(),
            None => fill.iter().copied().cycle().take(p.len as usize).collect(),
        };
        let dst = Place::Shared(c, off);
        match red {
            None => m.write(dst, &data),
            Some((o, t)) => reduce_into(m, dst, &data, *o, *t),
        }
    }
}

/// Marks the destination ranges of a [`TmaOp::ToShared`] in CTA `c` as landed in the current
/// phase of `c`'s mbarrier (call before its complete-tx).
pub fn land_guard(m: &mut Machine<'_>, op: &TmaOp, c: u32) {
    let TmaOp::ToShared { mbar, id, .. } = op else { return };
    let phase = m.ctas[c as usize].mbarriers.get(mbar).map(|s| s.phase);
    if let Some(g) = m.tma.ctas.get_mut(c as usize).and_then(|t| t.guards.iter_mut().find(|g| g.id == *id)) {
        g.landed_in = Some(phase.unwrap_or(0));
    }
}

fn signal_for(m: &mut Machine<'_>, op: &TmaOp, c: u32) -> Result<(), Stop> {
    let TmaOp::ToShared { mbar, tx, at, .. } = op else { return Ok(()) };
    signal(m, c, *mbar, *tx, *at)
}

/// The check the TMA engine's complete-tx makes before signalling: the mbarrier at `mbar` of
/// CTA `c` must be valid (PTX 9.7.13.15.3). `Err` is the finding (kind, message), shared by the
/// golden model and the RTL engine.
pub fn signal_target_check(m: &Machine<'_>, c: u32, mbar: u32, tx: u32) -> Result<(), (FindingKind, String)> {
    if m.ctas[c as usize].mbarriers.contains_key(&mbar) {
        return Ok(());
    }
    Err((FindingKind::TmaMbarrierNotInitialized, format!("the TMA engine performs complete-tx of {tx} bytes on cta {c} shared 0x{mbar:x}, which holds no valid mbarrier (PTX 9.7.13.15.3)")))
}

/// One thread's bulk async-group state: (the open group's number, operations in flight as
/// (id, group, reads complete)).
pub type BulkState = (u64, Vec<(u64, u64, bool)>);

/// One thread's bulk async-group state, for comparing two engines' views.
pub fn bulk_state(m: &Machine<'_>, c: u32, w: u32, l: u32) -> BulkState {
    m.tma.threads.get(&(c, w, l)).map(|t| (t.open, t.inflight.clone())).unwrap_or_default()
}

/// One thread's bulk async-groups as an engine that keeps only counters can show them too (the
/// RTL TmaEngine's `wait_group` port): for N = 0..=3 whether `cp.async.bulk.wait_group N` and
/// `wait_group.read N` hold, and how many committed groups are not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BulkView {
    /// `wait_group N` holds, N = 0..=3.
    pub done: [bool; 4],
    /// `wait_group.read N` holds, N = 0..=3.
    pub read_done: [bool; 4],
    /// Committed groups with an operation in flight.
    pub pending: u32,
}

/// One thread's [`BulkView`] from the bookkeeping.
pub fn bulk_view(m: &Machine<'_>, c: u32, w: u32, l: u32) -> BulkView {
    let mut v = BulkView::default();
    for n in 0..4 {
        v.done[n] = bulk_done(m, c, w, l, n as u32, false);
        v.read_done[n] = bulk_done(m, c, w, l, n as u32, true);
    }
    if let Some(t) = m.tma.threads.get(&(c, w, l)) {
        let mut groups: Vec<u64> = t.inflight.iter().map(|x| x.1).filter(|&g| g < t.open).collect();
        groups.sort_unstable();
        groups.dedup();
        v.pending = groups.len() as u32;
    }
    v
}

/// The write event of a [`TmaOp::ToGlobal`] (data read) whose bytes an engine wrote into global
/// memory itself (the RTL TmaEngine's sector writes): only its bulk-group bookkeeping.
pub fn complete_written(m: &mut Machine<'_>, op: &TmaOp) {
    if let TmaOp::ToGlobal { data: Some(_), id, at, .. } = op {
        bulk_progress(m, *at, *id, true);
    }
}

/// complete-tx of `tx` bytes by the TMA engine on the mbarrier at `mbar` of CTA `c` ([PTX]
/// §9.7.13.15.5.2).
fn signal(m: &mut Machine<'_>, c: u32, mbar: u32, tx: u32, at: At) -> Result<(), Stop> {
    if let Err((k, msg)) = signal_target_check(m, c, mbar, tx) {
        return m.report(k, msg, Some(at));
    }
    let o = Obj { cta: c, off: mbar, remote: c != at.0 };
    crate::race::mbar_op_release(m, c, mbar);
    m.note_arrival(c, mbar, at.0, at.1, true);
    let old = m.read_mbar_word(c, mbar);
    match mb::complete_tx(old, tx) {
        Ok((new, done)) => {
            m.write(Place::Shared(c, mbar as usize), &new.to_le_bytes());
            m.sync_event(SyncEvent::Mbarrier { cta: c, offset: mbar, old, new });
            if done {
                on_phase_complete(m, o);
            }
            Ok(())
        }
        Err(k) => {
            let d = describe(m, o);
            m.report(k, format!("complete-tx of {tx} bytes by the TMA engine: {d}"), Some(at))
        }
    }
}

/// Reduces `data` (elements of `t`) into `dst` with `op` (the SM engine applies it to the RTL
/// TmaEngine's reducing shared-memory writes too).
pub fn reduce_into(m: &mut Machine<'_>, dst: Place, data: &[u8], op: Mod, t: Mod) {
    let eb = t.type_bytes().unwrap_or(4) as usize;
    let mut out = m.read(dst, data.len()).to_vec();
    for (o, b) in out.chunks_mut(eb).zip(data.chunks(eb)) {
        reduce_element(op, t, o, b);
    }
    m.write(dst, &out);
}

/// One element of a TMA reduction ([PTX] §9.7.9.25.4.2): `old = old op v`, both little-endian
/// elements of type `t` (what memory applies for a reduction's write; shared by engines that
/// apply the writes themselves).
pub fn reduce_element(op: Mod, t: Mod, old: &mut [u8], v: &[u8]) {
    let (o, x) = (le(old), le(v));
    let new = match t {
        Mod::F16 | Mod::Bf16 => half_op(op, t, o as u16, x as u16) as u64,
        _ => atomic_op(op, t, o, x, 0),
    };
    let eb = old.len();
    old.copy_from_slice(&new.to_le_bytes()[..eb]);
}

fn le(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}

/// Records progress of bulk operation `id` of the thread at `at`: reads done, or all done; wakes
/// that warp's lanes whose wait_group now holds.
fn bulk_progress(m: &mut Machine<'_>, at: At, id: u64, finished: bool) {
    let (c, w, l, _) = at;
    if let Some(t) = m.tma.threads.get_mut(&(c, w, l)) {
        if finished {
            t.inflight.retain(|x| x.0 != id);
        } else if let Some(x) = t.inflight.iter_mut().find(|x| x.0 == id) {
            x.2 = true;
        }
    }
    wake_bulk_waiters(m, c, w);
}

// ---- bulk async-groups --------------------------------------------------------------------------

/// Whether `cp.async.bulk.wait_group{.read} n` holds for a thread: every committed bulk
/// async-group but the `n` most recent is complete (with `.read`: has completed the reads of
/// its sources) ([PTX] §9.7.9.25.6.2). Operations not yet committed are not waited for.
fn bulk_done(m: &Machine<'_>, c: u32, w: u32, l: u32, n: u32, read: bool) -> bool {
    let Some(t) = m.tma.threads.get(&(c, w, l)) else { return true };
    let older = t.open.saturating_sub(n as u64);
    !t.inflight.iter().any(|&(_, g, r)| g < older && !(read && r))
}

fn wake_bulk_waiters(m: &mut Machine<'_>, c: u32, w: u32) {
    let warp = &m.ctas[c as usize].warps[w as usize];
    let mut sets: Vec<(u32, u32, bool, u32)> = Vec::new(); // (resume pc, n, read, lanes)
    for l in 0..WARP {
        if let Lane::Blocked(Wait::BulkGroups(n, read)) = warp.lane()[l] {
            match sets.iter_mut().find(|s| s.0 == warp.pc()[l] && s.1 == n && s.2 == read) {
                Some(s) => s.3 |= 1 << l,
                None => sets.push((warp.pc()[l], n, read, 1 << l)),
            }
        }
    }
    for (_, n, read, mask) in sets {
        if lanes(mask).all(|l| bulk_done(m, c, w, l, n, read)) {
            let warp = &mut m.ctas[c as usize].warps[w as usize];
            for l in lanes(mask) {
                warp.set_lane(l as usize, Lane::Ready);
            }
            crate::race::bulk_acquire(m, c, w, read);
        }
    }
}

/// cp.async.bulk.commit_group ([PTX] §9.7.9.25.6.1): the thread's uncommitted bulk operations
/// become a new bulk async-group (an empty one if there are none).
impl Exec for op::CpAsyncBulkCommitGroup {
    fn exec(cx: &mut Cx<'_, '_>, _: &Instr) -> R {
        for l in lanes(cx.mask) {
            cx.m.tma.threads.entry((cx.cta, cx.warp, l)).or_default().open += 1;
        }
        Ok(Flow::Next)
    }
}

/// cp.async.bulk.wait_group{.read} N ([PTX] §9.7.9.25.6.2). Like cp.async.wait_group, the lanes
/// that execute it together are released together.
impl Exec for op::CpAsyncBulkWaitGroup {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let n = cx.src(i, 0, cx.first_lane()) as u32;
        let read = i.has(Mod::Read);
        if lanes(cx.mask).any(|l| !bulk_done(cx.m, cx.cta, cx.warp, l, n, read)) {
            cx.block(cx.mask, Wait::BulkGroups(n, read));
        } else {
            crate::race::bulk_acquire(cx.m, cx.cta, cx.warp, read);
        }
        Ok(Flow::Next)
    }
}

/// Joins a `.bulk_group` operation to the issuing thread's open group.
fn join_group(cx: &mut Cx<'_, '_>, lane: u32, id: u64) {
    let t = cx.m.tma.threads.entry((cx.cta, cx.warp, lane)).or_default();
    let g = t.open;
    t.inflight.push((id, g, false));
}

// ---- address helpers ----------------------------------------------------------------------------

fn misaligned(cx: &mut Cx<'_, '_>, lane: u32, msg: String) -> Result<(), Stop> {
    cx.finding(FindingKind::TmaMisaligned, lane, msg)?;
    Err(Stop::Finding)
}

/// `len` bytes of shared memory at `addr` in `space`: (CTA, offset).
fn shared_span(cx: &mut Cx<'_, '_>, lane: u32, space: Mod, addr: u64, len: u64, what: &str) -> Result<(u32, usize), Stop> {
    let r = cx.m.resolve(cx.cta, cx.warp, lane, Some(space), addr, 1);
    match r {
        Ok(Place::Shared(c, off)) if off as u64 + len <= cx.m.smem_bytes as u64 => Ok((c, off)),
        _ => {
            cx.finding(
                FindingKind::MemOutOfBounds,
                lane,
                format!("{what}: {len} bytes at .{} 0x{addr:x} are outside the CTA's {} bytes of shared memory", space.text(), cx.m.smem_bytes),
            )?;
            Err(Stop::Finding)
        }
    }
}

/// `len` bytes of global memory at `addr` (None: outside every allocation).
fn global_span(m: &Machine<'_>, addr: u64, len: u64) -> Option<Place> {
    match m.resolve(0, 0, 0, Some(Mod::Global), addr, 1) {
        Ok(Place::Global(r, off)) if off as u64 + len <= m.global[r].bytes.len() as u64 => Some(Place::Global(r, off)),
        _ => None,
    }
}

fn global_span_or_finding(cx: &mut Cx<'_, '_>, lane: u32, addr: u64, len: u64, what: &str) -> Result<Place, Stop> {
    match global_span(cx.m, addr, len) {
        Some(p) => Ok(p),
        None => {
            cx.finding(FindingKind::MemOutOfBounds, lane, format!("{what}: {len} bytes at global 0x{addr:x} are outside every allocation"))?;
            Err(Stop::Finding)
        }
    }
}

/// The mbarrier operand `k` of a copy into shared memory, checked for the destination CTAs.
fn mbarrier_for(cx: &mut Cx<'_, '_>, i: &Instr, k: usize, lane: u32, dst_ctas: &[u32], multicast: bool) -> Result<u32, Stop> {
    let o = locate(cx, i, k, lane)?;
    // PTX 9.7.9.25.4.1 / 9.7.9.25.5.2: without multicast the mbarrier is in the destination's CTA
    // (the same rule as st.async, PTX 9.7.9.12); with multicast, `mbar` is the offset of the
    // mbarrier in every destination CTA.
    if !multicast && dst_ctas.first() != Some(&o.cta) {
        cx.finding(
            FindingKind::AsyncMbarrierMismatch,
            lane,
            format!("destination is in cta {} but the mbarrier is in cta {}", dst_ctas.first().copied().unwrap_or(0), o.cta),
        )?;
        return Err(Stop::Finding);
    }
    for &c in dst_ctas {
        let Some(s) = cx.m.ctas[c as usize].mbarriers.get(&o.off).copied() else {
            cx.finding(
                FindingKind::TmaMbarrierNotInitialized,
                lane,
                format!("the copy signals the mbarrier at cta {c} shared 0x{:x}, which holds no valid mbarrier (PTX 9.7.13.15.3)", o.off),
            )?;
            return Err(Stop::Finding);
        };
        if c != cx.cta && !s.init_fenced {
            cx.finding(
                FindingKind::TmaMbarrierNotInitialized,
                lane,
                format!(
                    "the copy signals the mbarrier at cta {c} shared 0x{:x} from cta {}, but cta {c} executed no fence.mbarrier_init.release.cluster after initializing it (PTX 9.7.13.4)",
                    o.off, cx.cta
                ),
            )?;
            return Err(Stop::Finding);
        }
    }
    Ok(o.off)
}

/// The destination CTAs of a `.multicast::cluster` copy: the ranks whose bit is set in the 16-bit
/// ctaMask ([PTX] §9.7.9.25.4.1).
fn multicast_ctas(cx: &mut Cx<'_, '_>, lane: u32, mask: u64) -> Result<Vec<u32>, Stop> {
    let members = cx.m.clusters[cx.m.ctas[cx.cta as usize].cluster as usize].ctas.clone();
    let n = members.len();
    let mask = mask & 0xffff;
    if mask >> n != 0 || mask == 0 {
        let msg = format!("ctaMask 0x{mask:04x} names no CTA or a rank outside the cluster of {n} CTAs");
        cx.finding(FindingKind::ClusterRankOutOfRange, lane, msg)?;
        return Err(Stop::Finding);
    }
    Ok((0..n).filter(|r| mask >> r & 1 == 1).map(|r| members[r]).collect())
}

/// Issues a transfer into shared memory: checks the async-proxy access of every destination and
/// source range, guards the destinations and queues the operation.
#[allow(clippy::too_many_arguments)]
fn issue_to_shared(cx: &mut Cx<'_, '_>, lane: u32, ctas: Vec<u32>, base: usize, bytes: usize, pieces: Vec<Piece>, src_shared: Option<(u32, usize, usize)>, fill: Vec<u8>, red: Option<(Mod, Mod)>, mbar: u32, tx: u32) -> Result<(), Stop> {
    if let Some((c, s, n)) = src_shared {
        check_async_access(cx, c, s, s + n, lane, false)?;
    }
    for &c in &ctas {
        check_async_access(cx, c, base, base + bytes, lane, true)?;
    }
    let id = new_id(cx.m);
    let at = (cx.cta, cx.warp, lane, cx.pc);
    for &c in &ctas {
        if let Some(t) = cx.m.tma.ctas.get_mut(c as usize) {
            t.guards.push(Guard { id, start: base as u32, end: (base + bytes) as u32, mbar, landed_in: None, at });
        }
    }
    cx.push_async(AsyncOp::Tma(Box::new(TmaOp::ToShared { ctas, pieces, fill, red, mbar, tx, id, at })));
    Ok(())
}

/// Issues a `.bulk_group` transfer to global memory.
fn issue_to_global(cx: &mut Cx<'_, '_>, lane: u32, src: (u32, usize, usize), pieces: Vec<Piece>, red: Option<(Mod, Mod)>) -> Result<(), Stop> {
    check_async_access(cx, src.0, src.1, src.1 + src.2, lane, false)?;
    let id = new_id(cx.m);
    join_group(cx, lane, id);
    let at = (cx.cta, cx.warp, lane, cx.pc);
    cx.push_async(AsyncOp::Tma(Box::new(TmaOp::ToGlobal { pieces, data: None, red, id, at })));
    Ok(())
}

fn check_unsupported_forms(cx: &Cx<'_, '_>, i: &Instr) -> R {
    for (m, what) in [
        (Mod::CpMask, ".cp_mask (sm_100)"),
        (Mod::CtaGroup1, ".cta_group (sm_100)"),
        (Mod::CtaGroup2, ".cta_group (sm_100)"),
        (Mod::TileGather4, ".tile::gather4 (sm_100)"),
        (Mod::TileScatter4, ".tile::scatter4 (sm_100)"),
        (Mod::Im2colW, ".im2col::w (sm_100)"),
        (Mod::Im2colW128, ".im2col::w::128 (sm_100)"),
    ] {
        if i.has(m) {
            return unsupported(cx, i, &format!("{} with {what}", i.op.name()));
        }
    }
    Ok(Flow::Next)
}

/// The operand after the mandatory ones: (ctaMask if `.multicast::cluster`), in order.
fn cta_mask(cx: &Cx<'_, '_>, i: &Instr, from: usize, lane: u32) -> Option<u64> {
    i.has(Mod::MulticastCluster).then(|| if from < i.operands.len() { cx.src(i, from, lane) } else { 0 })
}

// ---- cp.async.bulk ------------------------------------------------------------------------------

/// cp.async.bulk ([PTX] §9.7.9.25.4.1): `size` bytes from `srcMem` to `dstMem`, both 16-byte
/// aligned, `size` a multiple of 16. Directions: global → .shared::cluster (optionally
/// `.multicast::cluster`) or → .shared::cta, completing on an mbarrier; .shared::cta →
/// .shared::cluster completing on the destination CTA's mbarrier; .shared::cta → global in a
/// bulk async-group.
impl Exec for op::CpAsyncBulk {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_unsupported_forms(cx, i)?;
        // `.ignore_oob` puts ignoreBytesLeft, ignoreBytesRight before [mbar] (the parser checked
        // the form and the direction, global -> .shared::cta)
        let ignore_oob = i.has(Mod::IgnoreOob);
        let mbar_at = if ignore_oob { 5 } else { 3 };
        let to_shared = matches!(i.operands.get(mbar_at), Some(Operand::Addr { .. }));
        for l in lanes(cx.mask) {
            let dst = cx.addr(i, 0, l);
            let src = cx.addr(i, 1, l);
            let size = cx.src(i, 2, l);
            if dst % 16 != 0 || src % 16 != 0 || size % 16 != 0 {
                misaligned(cx, l, format!("cp.async.bulk needs 16-byte aligned addresses and a size that is a multiple of 16 (PTX 9.7.9.25.4.1): dstMem 0x{dst:x}, srcMem 0x{src:x}, size {size}"))?;
            }
            if ignore_oob {
                ignore_oob_copy(cx, i, l, dst, src, size)?;
                continue;
            }
            if to_shared {
                let dst_space = if i.has(Mod::SharedCluster) { Mod::SharedCluster } else { Mod::SharedCta };
                let (dc, doff) = shared_span(cx, l, dst_space, dst, size, "cp.async.bulk destination")?;
                let from_shared = i.has(Mod::SharedCta) && i.has(Mod::SharedCluster);
                let (sp, src_shared) = if from_shared {
                    let (sc, soff) = shared_span(cx, l, Mod::SharedCta, src, size, "cp.async.bulk source")?;
                    (Place::Shared(sc, soff), Some((sc, soff, size as usize)))
                } else {
                    (global_span_or_finding(cx, l, src, size, "cp.async.bulk source")?, None)
                };
                let multicast = i.has(Mod::MulticastCluster);
                let ctas = match cta_mask(cx, i, 4, l) {
                    Some(mask) => multicast_ctas(cx, l, mask)?,
                    None => vec![dc],
                };
                let mbar = mbarrier_for(cx, i, 3, l, &ctas, multicast)?;
                let pieces = vec![Piece { src: Some(sp), dst: Place::Shared(dc, doff), len: size as u32 }];
                issue_to_shared(cx, l, ctas, doff, size as usize, pieces, src_shared, vec![0], None, mbar, size as u32)?;
            } else {
                let (sc, soff) = shared_span(cx, l, Mod::SharedCta, src, size, "cp.async.bulk source")?;
                let gp = global_span_or_finding(cx, l, dst, size, "cp.async.bulk destination")?;
                let pieces = vec![Piece { src: Some(Place::Shared(sc, soff)), dst: gp, len: size as u32 }];
                issue_to_global(cx, l, (sc, soff, size as usize), pieces, None)?;
            }
        }
        Ok(Flow::Next)
    }
}

/// `cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.ignore_oob` ([PTX]
/// §9.7.9.25.4.1, PTX ISA 9.2): the first `ignoreBytesLeft` and last `ignoreBytesRight` bytes of
/// the source (each 0..=15; other values are undefined, a `MemOutOfBounds` finding here) may lie
/// outside the allocation; they are not read, and the destination bytes they would fill are
/// indeterminate: the models leave them unchanged. The complete-tx counts the whole `size`, as a
/// tensor copy counts its out-of-bounds fill (an assumption until silicon measures it).
fn ignore_oob_copy(cx: &mut Cx<'_, '_>, i: &Instr, l: u32, dst: u64, src: u64, size: u64) -> Result<(), Stop> {
    let (left, right) = (cx.src(i, 3, l), cx.src(i, 4, l));
    if left > 15 || right > 15 || left + right > size {
        cx.finding(
            FindingKind::MemOutOfBounds,
            l,
            format!("cp.async.bulk.ignore_oob: ignoreBytesLeft {left} and ignoreBytesRight {right} must each be in 0..=15 and within size {size} (PTX 9.7.9.25.4.1: other values are undefined)"),
        )?;
        return Err(Stop::Finding);
    }
    let (dc, doff) = shared_span(cx, l, Mod::SharedCta, dst, size, "cp.async.bulk destination")?;
    let len = size - left - right;
    let mut pieces = Vec::new();
    if len > 0 {
        let sp = global_span_or_finding(cx, l, src + left, len, "cp.async.bulk source (less the ignored bytes)")?;
        pieces.push(Piece { src: Some(sp), dst: Place::Shared(dc, doff + left as usize), len: len as u32 });
    }
    let mbar = mbarrier_for(cx, i, 5, l, &[dc], false)?;
    issue_to_shared(cx, l, vec![dc], doff, size as usize, pieces, None, vec![0], None, mbar, size as u32)
}

// ---- cp.reduce.async.bulk -----------------------------------------------------------------------

const RED_OPS: [Mod; 8] = [Mod::Add, Mod::Min, Mod::Max, Mod::Inc, Mod::Dec, Mod::And, Mod::Or, Mod::Xor];

fn red_op(i: &Instr) -> Mod {
    RED_OPS.into_iter().find(|m| i.has(*m)).unwrap_or(Mod::Add)
}

/// The `.redOp.type` combinations of cp.reduce.async.bulk ([PTX] §9.7.9.25.4.2): into
/// .shared::cluster `.type` is one of .b32 .u32 .s32 .b64 .u64; into global also .s64 .f32 .f64
/// .f16 .bf16 (.f16/.bf16 `.add` with `.noftz`); per operation: `.add` .u32 .s32 .u64 (.f32 .f64
/// .f16 .bf16), `.min`/`.max` .u32 .s32 .u64 (.s64 .f16 .bf16), `.inc`/`.dec` .u32,
/// `.and`/`.or`/`.xor` .b32 .b64.
fn red_combination_ok(op: Mod, t: Mod, global: bool) -> bool {
    use Mod::*;
    match op {
        Add => matches!(t, U32 | S32 | U64) || global && matches!(t, F32 | F64 | F16 | Bf16),
        Min | Max => matches!(t, U32 | S32 | U64) || global && matches!(t, S64 | F16 | Bf16),
        Inc | Dec => t == U32,
        And | Or | Xor => matches!(t, B32 | B64),
        _ => false,
    }
}

/// cp.reduce.async.bulk ([PTX] §9.7.9.25.4.2): element-wise `dst = dst op src` over `size` bytes;
/// .shared::cta → .shared::cluster completes on the destination's mbarrier, .shared::cta →
/// global in a bulk async-group.
impl Exec for op::CpReduceAsyncBulk {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let op = red_op(i);
        let t = cx.ty(i);
        let global = i.has(Mod::Global);
        if !red_combination_ok(op, t, global) || (matches!(t, Mod::F16 | Mod::Bf16) && op == Mod::Add && !i.has(Mod::Noftz)) {
            return unsupported(cx, i, &format!("cp.reduce.async.bulk .{}.{} into .{}: not a combination PTX 9.7.9.25.4.2 allows (ptxas rejects it)", op.text(), t.text(), if global { "global" } else { "shared::cluster" }));
        }
        for l in lanes(cx.mask) {
            let dst = cx.addr(i, 0, l);
            let src = cx.addr(i, 1, l);
            let size = cx.src(i, 2, l);
            if dst % 16 != 0 || src % 16 != 0 || size % 16 != 0 {
                misaligned(cx, l, format!("cp.reduce.async.bulk needs 16-byte aligned addresses and a size that is a multiple of 16 (PTX 9.7.9.25.4.2): dstMem 0x{dst:x}, srcMem 0x{src:x}, size {size}"))?;
            }
            let (sc, soff) = shared_span(cx, l, Mod::SharedCta, src, size, "cp.reduce.async.bulk source")?;
            let sp = Place::Shared(sc, soff);
            if global {
                let gp = global_span_or_finding(cx, l, dst, size, "cp.reduce.async.bulk destination")?;
                issue_to_global(cx, l, (sc, soff, size as usize), vec![Piece { src: Some(sp), dst: gp, len: size as u32 }], Some((op, t)))?;
            } else {
                let (dc, doff) = shared_span(cx, l, Mod::SharedCluster, dst, size, "cp.reduce.async.bulk destination")?;
                let mbar = mbarrier_for(cx, i, 3, l, &[dc], false)?;
                let pieces = vec![Piece { src: Some(sp), dst: Place::Shared(dc, doff), len: size as u32 }];
                issue_to_shared(cx, l, vec![dc], doff, size as usize, pieces, Some((sc, soff, size as usize)), vec![0], Some((op, t)), mbar, size as u32)?;
            }
        }
        Ok(Flow::Next)
    }
}

// ---- cp.async.bulk.prefetch ---------------------------------------------------------------------

/// cp.async.bulk.prefetch.L2 ([PTX] §9.7.9.25.4.3): a hint with no architectural effect; the
/// 16-byte-aligned range of `size` (a multiple of 16) bytes must be global memory.
impl Exec for op::CpAsyncBulkPrefetch {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        for l in lanes(cx.mask) {
            let src = cx.addr(i, 0, l);
            let size = cx.src(i, 1, l);
            if src % 16 != 0 || size % 16 != 0 {
                misaligned(cx, l, format!("cp.async.bulk.prefetch needs a 16-byte aligned address and a size that is a multiple of 16 (PTX 9.7.9.25.4.3): srcMem 0x{src:x}, size {size}"))?;
            }
            global_span_or_finding(cx, l, src, size, "cp.async.bulk.prefetch")?;
        }
        Ok(Flow::Next)
    }
}

// ---- tensor maps and boxes ----------------------------------------------------------------------

/// The tensor map of tensor operand `k` (PTX 9.7.9.25.5.2: "the generic address of the
/// tensor-map object in .param, .const or .global space"): a register holding the generic
/// address of a param (`cvta.param`) or of global/const memory, or a global/const variable.
/// Decoded from its 128 bytes now, so a corrupted image is found.
/// The tensor map and coordinates of tensor operand `k` of `i` for `lane`, through every check of
/// the golden model (an engine that builds its own TMA command shares them).
pub fn tensor_operands(cx: &mut Cx<'_, '_>, i: &Instr, k: usize, lane: u32) -> Result<(TensorMap, Vec<i64>), Stop> {
    tensor_map(cx, i, k, lane)
}

/// The generic address a tensor operand (`[map, {coords}]`) names for `lane`: its base (a
/// register, a variable's address or a constant) plus its offset; None for another operand.
pub fn tensor_operand_address(cx: &Cx<'_, '_>, o: &Operand, lane: u32) -> Option<u64> {
    let Operand::Tensor { base, offset, .. } = o else { return None };
    let b = match base {
        AddrBase::Reg(r) => cx.reg(*r, lane),
        AddrBase::Sym(s) => cx.m.symbol_address(*s),
        AddrBase::Imm(v) => *v,
    };
    Some(b.wrapping_add(*offset as u64))
}

fn tensor_map(cx: &mut Cx<'_, '_>, i: &Instr, k: usize, lane: u32) -> Result<(TensorMap, Vec<i64>), Stop> {
    let Some(o @ Operand::Tensor { base, coords, .. }) = i.operands.get(k) else {
        return Err(Stop::Unsupported(format!("internal: operand {k} of `{}` is not a tensor operand", cx.text(i))));
    };
    if let AddrBase::Sym(s) = base {
        let sym = &cx.m.module().symbols[s.0 as usize];
        if !matches!(sym.space, Space::Global | Space::Const) {
            let msg = format!("the tensor-map operand `{}` is a .{} variable, not the generic address of a tensor map in .param, .const or .global memory (PTX 9.7.9.25.5.2)", sym.name, sym.space.text());
            cx.finding(FindingKind::TensorMapInvalid, lane, msg)?;
            return Err(Stop::Finding);
        }
    }
    let addr = tensor_operand_address(cx, o, lane).unwrap_or(0);
    if addr % 64 != 0 {
        misaligned(cx, lane, format!("tensor-map address 0x{addr:x} is not 64-byte aligned (CUDA Driver API §6.30: tensorMap address must be aligned to 64 bytes)"))?;
    }
    let n = TENSOR_MAP_BYTES;
    let place = match cx.m.resolve(cx.cta, cx.warp, lane, None, addr, 1) {
        Ok(Place::Param(o)) if o + n <= cx.m.params.len() => Place::Param(o),
        Ok(Place::Global(..)) if global_span(cx.m, addr, n as u64).is_some() => global_span(cx.m, addr, n as u64).unwrap_or(Place::Param(0)),
        _ => {
            // A param's own address (mov without cvta.param) is not a generic address: silicon
            // traps (CUDA_ERROR_MISALIGNED_ADDRESS on an H200).
            let hint = if (addr as usize) < cx.m.params.len() { " (a .param address: take its generic address with cvta.param)" } else { "" };
            cx.finding(
                FindingKind::TensorMapInvalid,
                lane,
                format!("tensor-map address 0x{addr:x} is not the generic address of a 128-byte object in .param, .const or .global memory{hint} (PTX 9.7.9.25.5.2)"),
            )?;
            return Err(Stop::Finding);
        }
    };
    let mut img = [0u8; TENSOR_MAP_BYTES];
    img.copy_from_slice(cx.m.read(place, n));
    let map = match TensorMap::decode(&img) {
        Ok(m) => m,
        Err(e) => {
            cx.finding(FindingKind::TensorMapInvalid, lane, format!("the tensor map at 0x{addr:x} does not decode: {e}"))?;
            return Err(Stop::Finding);
        }
    };
    // Coordinates are .s32 (PTX 9.7.9.25.5.2: tensorCoords "a vector of .s32").
    let mut cs = Vec::with_capacity(coords.len());
    for (j, c) in coords.iter().enumerate() {
        let (v, wide) = match c {
            Operand::Reg(r) => (cx.reg(*r, lane), cx.m.reg_mask[r.0 as usize] == u64::MAX),
            Operand::Imm(x) => (*x as u64, true),
            _ => (0, false),
        };
        let s = if wide { v as i64 } else { v as u32 as i32 as i64 };
        if i32::try_from(s).is_err() {
            cx.finding(FindingKind::TmaCoordOutOfRange, lane, format!("tensor coordinate {j} is {s}, not a 32-bit signed value (PTX 9.7.9.25.5.2: tensorCoords are .s32)"))?;
            return Err(Stop::Finding);
        }
        cs.push(s);
    }
    let dim = [Mod::D1, Mod::D2, Mod::D3, Mod::D4, Mod::D5].iter().position(|m| i.has(*m)).map(|d| d + 1).unwrap_or(0);
    if dim != map.rank() || cs.len() != dim {
        cx.finding(
            FindingKind::TmaCoordOutOfRange,
            lane,
            format!("`.{dim}d` with {} coordinates on a tensor map of rank {} (PTX 9.7.9.25.5.2: .dim and the coordinates must match tensorRank)", cs.len(), map.rank()),
        )?;
        return Err(Stop::Finding);
    }
    let im2col = i.has(Mod::Im2col) || i.has(Mod::Im2colNoOffs);
    if im2col != (map.mode() == TensorMapMode::Im2col) {
        cx.finding(
            FindingKind::TensorMapInvalid,
            lane,
            format!("the instruction's load mode is {} but the tensor map is {:?} (PTX 9.7.9.25.5.2: .load_mode must match the tensor map)", if im2col { "im2col" } else { "tile" }, map.mode()),
        )?;
        return Err(Stop::Finding);
    }
    // Measured on an H200 (hopsync's device check of the TMA programs): in tile mode a box whose
    // dimension-0 start is not 16-byte aligned (coords[0] * elementSize % 16 != 0) traps
    // (CUDA_ERROR_ILLEGAL_INSTRUCTION) for loads, stores, reductions and prefetches alike, and a
    // store or reduction with a negative coordinate in any dimension traps too (loads take
    // negative coordinates and fill; stores skip elements past the far edges).
    if map.mode() == TensorMapMode::Tiled {
        let es = map.element_size() as i64;
        if (cs[0] * es).rem_euclid(16) != 0 {
            cx.finding(
                FindingKind::TmaCoordOutOfRange,
                lane,
                format!("tile-mode coordinate 0 is {} elements = {} bytes, not a multiple of 16 bytes: an H200 traps (CUDA_ERROR_ILLEGAL_INSTRUCTION)", cs[0], cs[0] * es),
            )?;
            return Err(Stop::Finding);
        }
        let to_global = i.op == Opcode::CpReduceAsyncBulkTensor || (i.op == Opcode::CpAsyncBulkTensor && k == 0);
        if let Some(d) = cs.iter().position(|&c| c < 0).filter(|_| to_global) {
            cx.finding(
                FindingKind::TmaCoordOutOfRange,
                lane,
                format!("a tensor store or reduction at coordinate {d} = {}: negative coordinates trap on an H200 (CUDA_ERROR_ILLEGAL_INSTRUCTION); only the far edges may be out of bounds", cs[d]),
            )?;
            return Err(Stop::Finding);
        }
    }
    if map.spec().interleave != TensorMapInterleave::None {
        return Err(Stop::Unsupported(format!("unsupported: interleaved tensor layouts (interleave {:?}) (`{}` at {}:{})", map.spec().interleave, cx.text(i), cx.m.prog.path, i.loc)));
    }
    Ok((map, cs))
}

/// The im2col offsets (vector operand `k`, if present): `tensorRank - 2` unsigned values, each in
/// `0..2^16` (3D), `0..2^8` (4D) or `0..2^5` (5D) ([PTX] §9.7.9.25.5.2 im2colOffsets, §5.5.4).
pub fn im2col_offsets(cx: &mut Cx<'_, '_>, i: &Instr, k: usize, lane: u32, rank: usize) -> Result<Vec<i64>, Stop> {
    let Some(Operand::Vector(v)) = i.operands.get(k) else {
        cx.finding(FindingKind::TmaCoordOutOfRange, lane, format!("im2col mode needs {} im2col offsets (PTX 9.7.9.25.5.2)", rank - 2))?;
        return Err(Stop::Finding);
    };
    let bits = match rank {
        3 => 16,
        4 => 8,
        _ => 5,
    };
    if v.len() != rank - 2 {
        cx.finding(FindingKind::TmaCoordOutOfRange, lane, format!("{} im2col offsets for a rank-{rank} tensor map, which needs {} (PTX 9.7.9.25.5.2)", v.len(), rank - 2))?;
        return Err(Stop::Finding);
    }
    let mut out = Vec::new();
    for (j, o) in v.iter().enumerate() {
        let x = match o {
            Operand::Reg(r) => cx.reg(*r, lane) as i64,
            Operand::Imm(x) => *x,
            _ => 0,
        };
        if !(0..1i64 << bits).contains(&x) {
            cx.finding(
                FindingKind::TmaCoordOutOfRange,
                lane,
                format!("im2col offset {j} is {x}, outside 0..2^{bits} for a rank-{rank} tensor (PTX 9.7.9.25.5.2 im2colOffsets)"),
            )?;
            return Err(Stop::Finding);
        }
        out.push(x);
    }
    Ok(out)
}

/// Shared-memory offset of dense box byte `off` for a box at (128-byte aligned) `base`.
fn swz(map: &TensorMap, base: usize, off: u64) -> usize {
    swizzle_offset(map.spec().swizzle, base as u64 + off).unwrap_or(base as u64 + off) as usize
}

fn tensor_smem_aligned(cx: &mut Cx<'_, '_>, lane: u32, addr: u64, what: &str) -> Result<(), Stop> {
    if addr % 128 != 0 {
        misaligned(
            cx,
            lane,
            format!("{what} 0x{addr:x} of a tensor copy is not 128-byte aligned (CUDA Programming Guide, TMA: \"the destination shared memory buffer of a bulk tensor operation should be 128 byte aligned\"; PTX 5.5.7 swizzle patterns repeat from 128-byte boundaries)"),
        )?;
    }
    Ok(())
}

// ---- cp.async.bulk.tensor -----------------------------------------------------------------------

/// cp.async.bulk.tensor ([PTX] §9.7.9.25.5.2): a box of the tensor described by the tensor map,
/// global → shared (tile or im2col mode, optionally multicast, completing on mbarriers) or
/// shared::cta → global (tile or im2col_no_offs, in a bulk async-group).
impl Exec for op::CpAsyncBulkTensor {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_unsupported_forms(cx, i)?;
        let store = matches!(i.operands.first(), Some(Operand::Tensor { .. }));
        for l in lanes(cx.mask) {
            if store {
                let (map, coords) = tensor_map(cx, i, 0, l)?;
                let offsets = vec![0; map.rank().saturating_sub(2)];
                tensor_to_global(cx, i, l, &map, &coords, &offsets, 1, None)?;
                continue;
            }
            let (map, coords) = tensor_map(cx, i, 1, l)?;
            let mut next = 3;
            let offsets = if map.mode() == TensorMapMode::Im2col {
                next = 4;
                im2col_offsets(cx, i, 3, l, map.rank())?
            } else {
                if matches!(i.operands.get(3), Some(Operand::Vector(_))) {
                    cx.finding(FindingKind::TmaCoordOutOfRange, l, "im2col offsets given to a tile-mode copy (PTX 9.7.9.25.5.2)".into())?;
                    return Err(Stop::Finding);
                }
                Vec::new()
            };
            let dst = cx.addr(i, 0, l);
            tensor_smem_aligned(cx, l, dst, "shared-memory destination")?;
            let bytes = map.smem_box_bytes();
            let space = if i.has(Mod::SharedCluster) { Mod::SharedCluster } else { Mod::SharedCta };
            let (dc, doff) = shared_span(cx, l, space, dst, bytes, "cp.async.bulk.tensor destination")?;
            let multicast = i.has(Mod::MulticastCluster);
            let ctas = match cta_mask(cx, i, next, l) {
                Some(mask) => multicast_ctas(cx, l, mask)?,
                None => vec![dc],
            };
            let mbar = mbarrier_for(cx, i, 2, l, &ctas, multicast)?;
            let es = map.element_size();
            let mut pieces = Vec::new();
            for (off, g) in map.box_elements(&coords, &offsets) {
                let src = match g {
                    Some(a) => Some(global_span_or_finding(cx, l, a, es as u64, "cp.async.bulk.tensor: an in-bounds tensor element")?),
                    None => None,
                };
                pieces.push(Piece { src, dst: Place::Shared(dc, swz(&map, doff, off)), len: es });
            }
            let fill = map.oob_fill_element();
            issue_to_shared(cx, l, ctas, doff, bytes as usize, pieces, None, fill, None, mbar, bytes as u32)?;
        }
        Ok(Flow::Next)
    }
}

/// A tensor store or reduction: the in-bounds box elements from shared memory at operand
/// `src_k` to global memory; out-of-bounds elements are skipped ([PTX] §5.5.3.3).
#[allow(clippy::too_many_arguments)]
fn tensor_to_global(cx: &mut Cx<'_, '_>, i: &Instr, l: u32, map: &TensorMap, coords: &[i64], offsets: &[i64], src_k: usize, red: Option<(Mod, Mod)>) -> Result<(), Stop> {
    let src = cx.addr(i, src_k, l);
    tensor_smem_aligned(cx, l, src, "shared-memory source")?;
    let bytes = map.smem_box_bytes();
    let (sc, soff) = shared_span(cx, l, Mod::SharedCta, src, bytes, "tensor copy source")?;
    let es = map.element_size();
    let mut pieces = Vec::new();
    for (off, g) in map.box_elements(coords, offsets) {
        if let Some(a) = g {
            let gp = global_span_or_finding(cx, l, a, es as u64, "tensor store: an in-bounds tensor element")?;
            pieces.push(Piece { src: Some(Place::Shared(sc, swz(map, soff, off))), dst: gp, len: es });
        }
    }
    issue_to_global(cx, l, (sc, soff, bytes as usize), pieces, red)
}

/// The element type a reduction applies to a tensor map's data type, if PTX §9.7.9.25.5.3 allows
/// the operation on it (`.add` .u32 .s32 .u64 .f32 .f16 .bf16; `.min`/`.max` .u32 .s32 .u64 .s64
/// .f16 .bf16; `.inc`/`.dec` .u32; `.and`/`.or`/`.xor` .b32 .b64).
fn tensor_red_type(op: Mod, dt: Dt) -> Option<Mod> {
    use Mod::*;
    let t = match dt {
        Dt::Uint32 => U32,
        Dt::Int32 => S32,
        Dt::Uint64 => U64,
        Dt::Int64 => S64,
        Dt::Float32 | Dt::Float32Ftz => F32,
        Dt::Float16 => F16,
        Dt::Bfloat16 => Bf16,
        _ => return None,
    };
    let ok = match op {
        Add => matches!(t, U32 | S32 | U64 | F32 | F16 | Bf16),
        Min | Max => matches!(t, U32 | S32 | U64 | S64 | F16 | Bf16),
        Inc | Dec => t == U32,
        And | Or | Xor => matches!(t, U32 | S32 | U64 | S64),
        _ => false,
    };
    ok.then_some(match (op, t) {
        (And | Or | Xor, U32 | S32) => B32,
        (And | Or | Xor, _) => B64,
        _ => t,
    })
}

/// cp.reduce.async.bulk.tensor ([PTX] §9.7.9.25.5.3): reduces the box from shared::cta into the
/// tensor in global memory, element type from the tensor map, in a bulk async-group.
impl Exec for op::CpReduceAsyncBulkTensor {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_unsupported_forms(cx, i)?;
        let op = red_op(i);
        for l in lanes(cx.mask) {
            let (map, coords) = tensor_map(cx, i, 0, l)?;
            let Some(t) = tensor_red_type(op, map.spec().data_type) else {
                cx.finding(
                    FindingKind::TensorMapInvalid,
                    l,
                    format!("cp.reduce.async.bulk.tensor .{} on a tensor map of {}: PTX 9.7.9.25.5.3 does not allow that type", op.text(), map.spec().data_type.driver_name()),
                )?;
                return Err(Stop::Finding);
            };
            let offsets = vec![0; map.rank().saturating_sub(2)];
            tensor_to_global(cx, i, l, &map, &coords, &offsets, 1, Some((op, t)))?;
        }
        Ok(Flow::Next)
    }
}

/// cp.async.bulk.prefetch.tensor ([PTX] §9.7.9.25.5.4): no architectural effect; the tensor map,
/// coordinates and im2col offsets are checked.
impl Exec for op::CpAsyncBulkPrefetchTensor {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_unsupported_forms(cx, i)?;
        for l in lanes(cx.mask) {
            let (map, _) = tensor_map(cx, i, 0, l)?;
            if map.mode() == TensorMapMode::Im2col {
                im2col_offsets(cx, i, 1, l, map.rank())?;
            }
        }
        Ok(Flow::Next)
    }
}

// sm_100 instructions are rejected by the parser's target check ("requires sm_100"); a module
// that reached execution with one is an internal inconsistency, reported as unsupported.
impl Exec for op::ClusterlaunchcontrolTryCancel {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        unsupported(cx, i, i.op.name())
    }
}

impl Exec for op::ClusterlaunchcontrolQueryCancel {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        unsupported(cx, i, i.op.name())
    }
}

// ---- f16 / bf16 reductions ----------------------------------------------------------------------

fn f16_to_f64(h: u16) -> f64 {
    let s = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let e = (h >> 10 & 0x1f) as i32;
    let f = (h & 0x3ff) as f64;
    s * match e {
        0 => f * 2f64.powi(-24),
        31 if f == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + f) * 2f64.powi(e - 25),
    }
}

/// f64 → f16, round to nearest even.
fn f64_to_f16(x: f64) -> u16 {
    if x.is_nan() {
        return 0x7fff;
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    // Quantum of the binade (subnormals: 2^-24).
    let e = if a < 2f64.powi(-14) { -14 } else { a.log2().floor() as i32 };
    let q = 2f64.powi(e.max(-14) - 10);
    let m = (a / q).round_ties_even();
    let v = m * q;
    let e2 = if v < 2f64.powi(-14) { 0 } else { v.log2().floor() as i32 + 15 };
    if e2 == 0 {
        return sign | (v / 2f64.powi(-24)) as u16;
    }
    let frac = (v / 2f64.powi(e2 - 15) - 1.0) * 1024.0;
    sign | (e2 as u16) << 10 | frac as u16
}

fn bf16_to_f64(h: u16) -> f64 {
    f32::from_bits((h as u32) << 16) as f64
}

/// f64 → bf16, round to nearest even (through f32, exact for the sums of two bf16 values that
/// hopsync's programs reduce).
fn f64_to_bf16(x: f64) -> u16 {
    let b = (x as f32).to_bits();
    if (x as f32).is_nan() {
        return 0x7fff;
    }
    let round = 0x7fff + (b >> 16 & 1);
    ((b + round) >> 16) as u16
}

/// `.add.noftz` / `.min` / `.max` on f16 or bf16 values.
fn half_op(op: Mod, t: Mod, a: u16, b: u16) -> u16 {
    let f16 = t == Mod::F16;
    let to = |h: u16| if f16 { f16_to_f64(h) } else { bf16_to_f64(h) };
    let from = |x: f64| if f16 { f64_to_f16(x) } else { f64_to_bf16(x) };
    let (x, y) = (to(a), to(b));
    match op {
        Mod::Add => from(x + y),
        Mod::Min => if y < x { b } else { a },
        Mod::Max => if y > x { b } else { a },
        _ => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trip_and_rounding() {
        for h in 0..=u16::MAX {
            if h & 0x7c00 == 0x7c00 && h & 0x3ff != 0 {
                continue; // NaN
            }
            assert_eq!(f64_to_f16(f16_to_f64(h)), h, "{h:#x}");
            // The midpoint to the next value up rounds to the even one of the two.
            if h & 0x7fff < 0x7bff && h >> 15 == 0 {
                let mid = (f16_to_f64(h) + f16_to_f64(h + 1)) / 2.0;
                assert_eq!(f64_to_f16(mid), if h & 1 == 0 { h } else { h + 1 }, "midpoint above {h:#x}");
            }
        }
        for b in (0..=u16::MAX).step_by(7) {
            if b & 0x7f80 == 0x7f80 {
                continue; // inf / NaN
            }
            assert_eq!(f64_to_bf16(bf16_to_f64(b)), b, "{b:#x}");
        }
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)), 0x3c00); // tie to even
        assert_eq!(f64_to_f16(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
        assert_eq!(half_op(Mod::Add, Mod::F16, 0x3c00, 0x3c00), 0x4000); // 1 + 1 = 2
        assert_eq!(half_op(Mod::Add, Mod::Bf16, 0x3f80, 0x3f80), 0x4000);
    }
}
