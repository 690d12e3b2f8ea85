//! TmaEngine: the Tensor Memory Accelerator of one SM (sm_90): bulk copies (`cp.async.bulk`,
//! PTX 9.7.9.25.4.1), tiled tensor copies through a tensor map (`cp.async.bulk.tensor` tile mode,
//! PTX 9.7.9.25.5.2, PTX 5.5.3) and im2col tensor copies (PTX 5.5.4), multicast over the cluster, mbarrier complete-tx, and bulk
//! async-groups (`cp.async.bulk.commit_group` / `wait_group{.read}`, PTX 9.7.9.25.6), prefetches
//! (`cp.async.bulk.prefetch{.tensor}.L2`, PTX 9.7.9.25.4.3 / 9.7.9.25.5.4) and the shared::cta ->
//! shared::cluster bulk copy and reduction (PTX 9.7.9.25.4.1 / 9.7.9.25.4.2).
//!
//! # Pipeline
//!
//! ```text
//! cmd ─► Q (2-entry command queue) ─► D (descriptor decode, 1 + rank + 1 cycles) ─► J (job)
//!   J ─► RG: row iterator (dims 1..4, element strides or im2col pixel walk, OOB predication)
//!                                                                       ─┬─► issuer ─► gmem_req
//!                                                                       └─► row queue (256, RAM)
//!   gmem_resp ─► ROB (256 tags x 32 B in RAM, out-of-order responses, in-order drain)
//!   row queue + ROB / smem_rd ─► BA stage X (slot iterator, swizzle, byte masks)
//!                             ─► BA stage Y (byte realigner, OOB fill, sector packer)
//!   Y ─► OB (3) ─► multicast sequencer ─► smem_wr;  job end ─► CPL ─► mbar_req (complete_tx)
//!   Y ─► WB (3) ─► gmem_req (sector writes) ;  acks ─► bulk-group counters
//! ```
//!
//! - **Q / commit**: `cmd` (with `cmd_desc`, the 128-byte tensor-map image of a tensor command)
//!   enters a 2-entry queue. `CommitGroup` does not enter the queue: it closes the open bulk
//!   async-group of its thread at acceptance, so it is ordered with the stores accepted before
//!   it; it waits (`cmd_ready` low) while the thread's next slot still holds a group.
//! - **D** decodes the head command into the job register J: it validates the descriptor image
//!   (the hopsync image layout v1 of `firmware/src/tensormap.rs`, decoded field by field in RTL:
//!   [`TmaDescImage`] is that layout, packed LSB-first), then spends one cycle per dimension on
//!   a 64-bit multiply-add (`TmaMac`): `start = globalAddress + sum_i coords[i] * stride_i`
//!   (stride_0 = element size), `step_i = elementStrides[i] * globalStrides[i-1]`, and the
//!   clamped in-bounds window of each dimension (`[lo_i, hi_i)` of the box index, so the row
//!   iterator only compares 9-bit counters), then one cycle (Fin) for the per-job constants.
//!   A bulk command is a 1-row job (Check, Fin).
//! - **RG** walks the rows of the box (dimension 0 is a row: `boxDim[0] * elementSize` bytes,
//!   a multiple of 16, contiguous in global memory and in the dense shared-memory box) in PTX
//!   order, one row per cycle, with the nested-loop base addresses `A1..A4` (one 64-bit add per
//!   row). A row whose outer coordinate is out of bounds in any dimension is OOB. Each row is
//!   pushed to the row queue for BA; a load row that is not OOB also goes to the issuer, which
//!   issues one 32-byte sector read per cycle covering exactly the row's in-bounds bytes
//!   (OOB elements never cause a request), tagged with its ROB entry and the halves (16-byte
//!   chunks) the row wants. Rate: at most `max_outstanding` requests in flight and a token
//!   bucket of `bytes_per_cycle` (both constructor parameters).
//! - **im2col** (PTX 5.5.4; `im2col` command, im2col map): a row is one pixel,
//!   `channelsPerPixel * elementSize` bytes from channel `c0` (dimension 0's window as a tiled
//!   row's, `c0` need not be 16-byte aligned), `pixelsPerColumn` rows. Spatial dimension `i`
//!   (1..rank-2: W, H, D) starts at `c_i` and steps by `elementStrides[i]`; a step past
//!   `globalDim[i] - 1 + pixelBoxUpperCorner[i-1]` wraps it to `pixelBoxLowerCorner[i-1]` and
//!   carries into the next dimension; N (rank-1) steps by 1 and never wraps; an element is read
//!   at the pixel plus the command's im2col offset `o(i-1)`. RG keeps per dimension a step count
//!   `k` from its base (the coordinate, or the lower corner once it wrapped, `sel`): D computes
//!   per dimension (leaf `TmaI2cWin`, 36-bit arithmetic, once per command) the in-bounds window
//!   of `k` from either base and the wrap threshold, so RG only compares 14-bit counters (at
//!   most 1024 pixels of 8 steps). The nested bases `A2..A4` hold the dimensions below at their
//!   lower corners (`start - (c_i - lower_i) * stride`, two multiply-adds per dimension: the
//!   difference may not fit 32 bits), so a wrap is the tiled carry. The walk is exactly
//!   `TensorMap::im2col_box_elements` (the golden model's); OOB pixels are filled, their bytes
//!   counted in complete_tx (`smem_box_bytes`). Prefetches and stores take the same walk.
//! - **ROB**: responses (any order) are written by tag; BA drains chunks in issue order. Data,
//!   the wanted halves of each tag and its arrival mark are RAMs (block RAM on an FPGA, not
//!   flip-flops): the flag RAMs and the row-queue RAM are read one cycle ahead at the next head
//!   address, with the same-edge write forwarded (a RAM read of an entry written at the same
//!   edge returns the old value). Arrival needs no clear on free: an entry's mark is the
//!   complement of its pass parity over the 256 tags, compared with the head's (`rh_gen`).
//! - **BA X** walks the 16-byte slots of each row: a load pops one chunk per slot from the ROB
//!   (none for OOB positions), a store reads one 16-byte beat of shared memory (`smem_rd`); it
//!   computes the byte mask of in-bounds bytes and the swizzled shared-memory address
//!   (PTX 5.5.7: bits 4..6 of the absolute shared::cta address XOR bits 7..9, 1/2/3 bits for
//!   32B/64B/128B, exactly `tensormap::swizzle_offset`).
//! - **BA Y** realigns (`TmaAlign`: a global row starts at `coords[0] * elementSize mod 16`, so
//!   a 16-byte beat is a window of two chunks) and fills OOB bytes (zero, or the NaN pattern of
//!   `NAN_REQUEST_ZERO_FMA`). Loads go to OB; stores go through the sector packer (two chunks
//!   of one 32-byte sector per write, byte mask = in-bounds bytes) to WB.
//! - **Multicast**: the OB head beat is written once per CTA of the command's `cta_mask`
//!   (lowest rank first, one write per cycle; a non-multicast load has one bit set: its
//!   destination CTA). The global data is fetched once.
//! - **complete_tx**: after the last beat of a load reached every destination CTA, CPL sends one
//!   `MbarrierOp::CompleteTx` per CTA (`mbar_cta`, `mbar_remote` when it is not `cta_rank`) with
//!   the full box bytes (`smem_box_bytes`, OOB fill included; the bulk size).
//! - **Prefetch** (`BulkPrefetch`, `TensorPrefetch`): a load job with no destination: its
//!   sector reads are issued (and counted against `max_outstanding` and the token bucket) as a
//!   load's, BA pops and drops every chunk (no `smem_wr`), and no complete_tx follows. PTX gives
//!   a prefetch no architectural effect; its cost is the global traffic and the engine's time.
//! - **shared::cta → shared::cluster** (`BulkS2S`): read like a bulk store (one `smem_rd` beat per
//!   slot, 16-byte aligned, no realignment), written like a load: each beat goes to OB with the
//!   destination address (`dsmem` + offset) and the one destination rank of `cta_mask`, then
//!   complete_tx of `size` bytes on that CTA's mbarrier (`mbar_remote` when it is another rank).
//!   `red_op` / `red_type` ride along to `smem_wr`: the shared-memory side applies the reduction
//!   (the SM engine uses the golden model's `reduce_into`). It joins no bulk group.
//! - **Bulk groups** (stores only, as on sm_90; PTX 9.7.9.25.6.1/2 keeps them per thread):
//!   `TMA_CTXS` (4) contexts, each holding one thread (`cmd.thread`, CTA-local `warp * 32 +
//!   lane`) and `TMA_GROUPS` (4) group slots with its open-slot pointer; per slot the store ops
//!   whose shared-memory reads are pending, the ops whose writes are not all issued, and the
//!   writes not yet acknowledged. A context is busy while one of its counters is non-zero; a
//!   store from a thread with no busy context takes a free one at acceptance, and when none is
//!   free it is refused in command order (`UnsupportedThreads`). A commit_group of a thread
//!   with no context closes an empty group: nothing to count. `wait_done` answers
//!   `wait_group{.read} wait_n` of `wait_thread` combinationally (a thread with no context
//!   waits for nothing); `groups_pending` counts that thread's committed groups not complete.
//! - **Store events** (for the SM engine to follow each op, in command order):
//!   `store_read_done` pulses when an op's last slot is in Y (every shared-memory read of it is
//!   done: what `wait_group.read` waits for), `store_writes_issued` when its last WB entry
//!   leaves (its last sector write is issued, or the end marker of an op with no in-bounds
//!   byte). The op is complete once its writes are acknowledged; acknowledgements (tag = the
//!   group slot) come in any order.
//! - **Reductions to global** (`cp.reduce.async.bulk{.tensor}` .global, PTX 9.7.9.25.4.2 /
//!   9.7.9.25.5.3): a store whose command names `red_op` / `red_type`; its writes carry them
//!   (`TmaGmemReq::red_op` / `red_type`) and memory applies `old op new` per element (the L2 on silicon).
//!
//! Throughput: one slot per cycle, so 16 bytes per cycle into shared memory (per destination
//! CTA stream: 16 / popcount(cta_mask)) when the row start is 16-byte aligned in global memory
//! (`coords[0] * elementSize` a multiple of 16); a misaligned row spends one extra slot.
//! Requests: one 32-byte sector per cycle at most; 256 tags (8 KiB in flight) hide 512 cycles
//! of memory latency at 16 B/cycle, so at sm90.toml's 384-cycle `[global] latency` the engine
//! streams 16 B/cycle in steady state (issue 4 §3; the `throughput` test), and the row queue
//! holds as many rows as there are tags, so boxes of rows down to 32 bytes keep every tag busy.
//! The 16-byte shared-memory beat is what keeps the engine far from silicon: an H200 SM's TMA
//! moves about 82-100 B/cycle (docs/FIDELITY.md, cosim/traces/sm90/calibration/), which needs a
//! 128-byte beat (and 8x the bytes in flight); a wider beat changes BA, the realigner, the
//! packer and the shared-memory port, and is not done.
//!
//! # Ports (all synchronous to `clock`)
//!
//! - `cmd` + `cmd_desc` / `cmd_valid` / `cmd_ready`: commands ([`TmaCmd`], [`TmaDescImage`]).
//! - `gmem_req` / `_valid` / `_ready`: 32-byte sector requests (reads: tag = ROB entry; writes:
//!   data, 32-bit byte mask, tag = bulk-group slot). `gmem_resp` / `_valid` / `_ready`: read data
//!   (by tag, any order) and write acknowledgements (`write` set). `gmem_resp_ready` is always
//!   high (every response has a reserved place).
//! - `smem_wr` / `_valid` / `_ready`: 16-byte shared-memory writes (CTA rank, 16-byte aligned
//!   shared::cta address, data, byte mask, and the reduction to apply: `Copy` but for a
//!   `cp.reduce.async.bulk` beat).
//! - `smem_rd_addr` / `smem_rd_valid` / `smem_rd_ready`, `smem_rd_data`: 16-byte reads of this
//!   CTA's shared memory for stores; data arrives the cycle after the accepting edge.
//! - `mbar_req` / `mbar_cta` / `mbar_remote` / `mbar_valid` / `mbar_ready`: complete_tx towards
//!   the mbarrier units (`MbarrierUnit::tma_req` locally, `cluster_req` of a remote CTA).
//! - `wait_n`, `wait_read`, `wait_thread` → `wait_done`, `groups_pending` (of that thread).
//! - `store_read_done`, `store_writes_issued`: per-op store events (above).
//! - `fault`: a refused command ([`TmaFaultKind`] and its `thread`, registered); the command is
//!   dropped.
//! - `idle`: nothing in flight.
//!
//! # Decode checks (fault kinds are the golden model's `FindingKind` names)
//!
//! A store that found no bulk-group context: `unsupported: more than 4 threads with open bulk
//! async-groups`, before any other check. Tensor commands, in the golden model's order:
//! `TensorMapInvalid` (version, rank, enum values
//! (sub-byte types and swizzle-atomicity modes included), reserved and unused fields non-zero,
//! im2col fields in a tiled map, `globalAddress` not 16-byte aligned, `globalStrides` not
//! multiples of 16, `boxDim[0] * elementSize` not a multiple of 16, inner box wider than the
//! swizzle span, OOB NaN fill on an integer type; an im2col map: rank not 3..=5, `boxDim` set,
//! pixel box corners outside the rank's range or set for a dimension the rank lacks, a spatial
//! dimension with no area, `channelsPerPixel * elementSize` not a multiple of 16 (leaf
//! `TmaI2cCheck`)), `TmaCoordOutOfRange` (`dims` != rank),
//! `TensorMapInvalid` (load mode != map mode), then
//! `unsupported: interleaved tensor layouts`, then `TmaMisaligned` (shared address not 128-byte
//! aligned; not for a prefetch), then `ClusterRankOutOfRange` (empty `cta_mask` of a load).
//! Bulk commands: `TmaMisaligned` (addresses, `dsmem` of an S2S copy included, not 16-byte
//! aligned, size not a multiple of 16), then `ClusterRankOutOfRange` (empty `cta_mask` of a load
//! or S2S copy). A prefetch ignores `smem` and `cta_mask`.
//!
//! Not checked here (documented): the tensor-map rules that need a wide multiply
//! (`globalStrides[0] >= globalDim[0] * elementSize`, `globalStrides[i] >= globalStrides[i-1] *
//! globalDim[i]`; they constrain the tensor, not the engine's address arithmetic), the fields of
//! interleaved maps (refused as unsupported before they matter), the range of the im2col
//! offsets (an instruction operand: the golden model's `TmaCoordOutOfRange` before the SM
//! engine sends the command; the unit uses the 16 bits it is given), mask bits beyond
//! the cluster size, shared-memory spans beyond the CTA's allocation, global spans outside
//! every allocation, and the mbarrier's validity (the MbarrierUnit reports that).
//!
//! # Unsupported (documented)
//!
//! Interleaved layouts (fault) and the sm_100 forms: no command kind exists for them (the
//! front end stops with "unsupported: ..." where the golden model does). The reduction of a
//! `BulkS2S` beat is carried, not computed: the shared-memory side owns the ALU (`cta_top`'s
//! SmemPort has none: it drops the beat with `smem_red_dropped`). More than `TMA_CTXS` (4)
//! threads with bulk store ops in flight or committed groups not complete: the store of a 5th
//! thread is refused (`unsupported: more than 4 threads with open bulk async-groups`). At most
//! 3 committed incomplete groups per thread: a 4th commit_group waits. Bulk sizes are below 2^20
//! (the 20-bit `size` field; the mbarrier tx-count range bounds a load anyway).
//!
//! # Synthesizable form (how `update` is written, and why)
//!
//! rust-hdl puts `update` into one `always @(*)` block, so it is written in dependency order:
//! every Local is assigned before any statement reads it (the queue pops after the decoder
//! decided, the ROB valid bits change after stage X decided to free the head), else the
//! Verilog would read the previous evaluation's value where the Rust simulation iterates to a
//! fixed point. A bit or part select of a struct field (`x.val().field.get_bit(i)`) is not
//! legal Verilog: such fields are copied to a Local first, masked (`& 16`) or shifted.
//! Checked by the tests: check_all, yosys `proc` with no latch and `flatten; check -assert`
//! (no loop, no multiple driver), an iverilog replay of the generated Verilog against the
//! Rust simulation (here), the Verilator lint and lockstep tests (`verilator/tests`).

use crate::mbarrier_unit::{MbarrierOp, MbarrierReq};
use rust_hdl::prelude::*;

/// Shared-memory (shared::cta) byte-address bits: 256 KiB.
pub const TMA_SMEM_BITS: usize = 18;
/// Address bits of the reorder buffer (and of a read's tag).
pub const TMA_TAG_BITS: usize = 8;
/// Request tags = reorder-buffer entries of 32 bytes (the `max_outstanding` parameter is at most
/// this): 256 x 32 B = 8 KiB of reads in flight, more than the 16 B/cycle x 384 cycles (6 KiB)
/// that issue 4 §3's 16 B/cycle needs against sm90.toml's `[global] latency`.
pub const TMA_TAGS: usize = 1 << TMA_TAG_BITS;
/// Bulk async-group slots per context (at most 3 committed incomplete groups plus the open one
/// per thread; a 4th commit waits for the oldest group).
pub const TMA_GROUPS: usize = 4;
/// Bulk async-group contexts: threads that may have bulk operations in flight or committed
/// groups not complete at once (PTX keeps bulk async-groups per thread, 9.7.9.25.6.1).
pub const TMA_CTXS: usize = 4;
/// Bits of a CTA-local thread index (`warp * 32 + lane`, up to 1024 threads).
pub const TMA_THREAD_BITS: usize = 10;
/// Address bits of the row queue.
pub const TMA_ROWQ_BITS: usize = 8;
/// Rows the request side may run ahead of the shared-memory side: as many as the ROB has tags,
/// so a box of 32-byte rows still keeps every tag busy.
pub const TMA_ROWQ: usize = 1 << TMA_ROWQ_BITS;
// `update` names these as literals (256 tags, 4 contexts x 4 group slots (a 4-bit slot id:
// context in bits 2..4), 256 row-queue entries, 10-bit thread index).
const _: () = assert!(TMA_TAGS == 256 && TMA_GROUPS == 4 && TMA_CTXS == 4 && TMA_ROWQ == 256 && TMA_THREAD_BITS == 10);

/// Command kinds.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaCmdKind {
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.multicast::cluster}`
    BulkLoad,
    /// `cp.async.bulk.global.shared::cta.bulk_group`
    BulkStore,
    /// `cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes{.multicast::cluster}`
    TensorLoad,
    /// `cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group`
    TensorStore,
    /// `cp.async.bulk.commit_group`
    CommitGroup,
    /// `cp.async.bulk.prefetch.L2.global` (PTX 9.7.9.25.4.3): a bulk read whose data is dropped
    /// (no shared-memory write, no complete_tx: an L2 hint without architectural effect)
    BulkPrefetch,
    /// `cp.async.bulk.prefetch.tensor.Nd.L2.global.tile` (PTX 9.7.9.25.5.4): the sector reads
    /// of the tiled box, data dropped
    TensorPrefetch,
    /// `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes` (PTX
    /// 9.7.9.25.4.1) and, with `red_op` not `Copy`, `cp.reduce.async.bulk.shared::cluster
    /// .shared::cta.mbarrier::complete_tx::bytes` (PTX 9.7.9.25.4.2): `size` bytes read from this
    /// CTA's shared memory at `smem`, written (or reduced) at `dsmem` of the one CTA of
    /// `cta_mask`, then complete_tx there
    BulkS2S,
}

/// The reduction a shared-memory write applies (`cp.reduce.async.bulk` `.redOp`, PTX
/// 9.7.9.25.4.2); the engine only carries it to the shared-memory port.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaRedOp {
    /// a plain copy
    Copy,
    /// `.add`
    Add,
    /// `.min`
    Min,
    /// `.max`
    Max,
    /// `.inc`
    Inc,
    /// `.dec`
    Dec,
    /// `.and`
    And,
    /// `.or`
    Or,
    /// `.xor`
    Xor,
}

/// The element type of a reduction (PTX 9.7.9.25.4.2: into shared::cluster `.b32 .u32 .s32
/// .b64 .u64`; into global also `.s64 .f32 .f64 .f16 .bf16`).
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaRedType {
    /// `.b32`
    B32,
    /// `.u32`
    U32,
    /// `.s32`
    S32,
    /// `.b64`
    B64,
    /// `.u64`
    U64,
    /// `.s64` (global only)
    S64,
    /// `.f32` (global only)
    F32,
    /// `.f64` (global only)
    F64,
    /// `.f16` (global only, `.add.noftz`)
    F16,
    /// `.bf16` (global only, `.add.noftz`)
    Bf16,
}

/// Why a command was refused. Names are the golden model's `FindingKind` names, or the
/// "unsupported: ..." text of a form the RTL does not implement.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaFaultKind {
    /// no fault
    NoFault,
    /// the descriptor image does not decode (module doc "Decode checks"), or its mode is not
    /// the command's load mode
    TensorMapInvalid,
    /// `dims` (the `.Nd` of the instruction) differs from the map's rank
    TmaCoordOutOfRange,
    /// bulk: addresses not 16-byte aligned or size not a multiple of 16; tensor: shared address
    /// not 128-byte aligned
    TmaMisaligned,
    /// a load with an empty `cta_mask`
    ClusterRankOutOfRange,
    /// a tensor map with interleave 16B / 32B
    UnsupportedInterleave,
    /// a store from a thread with no bulk-group context while all `TMA_CTXS` are in use
    UnsupportedThreads,
}

impl TmaFaultKind {
    /// The fault's name: the golden model's finding name or the "unsupported: ..." text.
    pub fn name(self) -> Option<&'static str> {
        match self {
            TmaFaultKind::NoFault => None,
            TmaFaultKind::TensorMapInvalid => Some("TensorMapInvalid"),
            TmaFaultKind::TmaCoordOutOfRange => Some("TmaCoordOutOfRange"),
            TmaFaultKind::TmaMisaligned => Some("TmaMisaligned"),
            TmaFaultKind::ClusterRankOutOfRange => Some("ClusterRankOutOfRange"),
            TmaFaultKind::UnsupportedInterleave => Some("unsupported: interleaved tensor layouts"),
            TmaFaultKind::UnsupportedThreads => Some("unsupported: more than 4 threads with open bulk async-groups"),
        }
    }
}

/// Decoder state.
#[derive(Copy, Clone, Debug, PartialEq, LogicState)]
pub enum TmaDecState {
    /// waiting for a command and a free job register; checks the head command
    Idle,
    /// one dimension per cycle (`dk`): multiply-adds and in-bounds windows
    Dim,
    /// per-job constants; J becomes valid
    Fin,
}

/// 16 bytes, byte 0 in bits 0..=7 of `w0`.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaData16 {
    /// bytes 0..=3
    pub w0: Bits<32>,
    /// bytes 4..=7
    pub w1: Bits<32>,
    /// bytes 8..=11
    pub w2: Bits<32>,
    /// bytes 12..=15
    pub w3: Bits<32>,
}

impl TmaData16 {
    /// From 16 little-endian bytes.
    pub fn from_bytes(b: &[u8]) -> Self {
        let w = |i: usize| -> Bits<32> { (u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap()) as u64).into() };
        TmaData16 {
            w0: w(0),
            w1: w(1),
            w2: w(2),
            w3: w(3),
        }
    }
    /// The 16 bytes, little-endian.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut o = [0u8; 16];
        for (i, w) in [self.w0, self.w1, self.w2, self.w3].into_iter().enumerate() {
            o[4 * i..4 * i + 4].copy_from_slice(&(w.to_u64() as u32).to_le_bytes());
        }
        o
    }
    fn to_u128(self) -> u128 {
        (self.w0.to_u64() as u128)
            | (self.w1.to_u64() as u128) << 32
            | (self.w2.to_u64() as u128) << 64
            | (self.w3.to_u64() as u128) << 96
    }
    fn from_u128(x: u128) -> Self {
        let w = |i: u32| -> Bits<32> { (((x >> (32 * i)) as u32) as u64).into() };
        TmaData16 {
            w0: w(0),
            w1: w(1),
            w2: w(2),
            w3: w(3),
        }
    }
}

/// The 128-byte tensor-map image, hopsync layout v1 (`firmware/src/tensormap.rs` module doc),
/// field by field, packed LSB-first: the packed 1024 bits are the image (bit `n` = bit `n % 8`
/// of byte `n / 8`). Wide fields are split into 32-bit pieces.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaDescImage {
    /// bits 0..8: image format version (1)
    pub version: Bits<8>,
    /// bit 8: mode (0 tiled, 1 im2col)
    pub im2col: bool,
    /// bits 9..12: tensorRank - 1
    pub rank_m1: Bits<3>,
    /// bits 12..16: tensorDataType (driver value)
    pub data_type: Bits<4>,
    /// bits 16..18: interleave
    pub interleave: Bits<2>,
    /// bits 18..21: swizzle
    pub swizzle: Bits<3>,
    /// bits 21..23: l2Promotion (no effect here)
    pub l2_promotion: Bits<2>,
    /// bit 23: oobFill (1: NAN_REQUEST_ZERO_FMA)
    pub oob_nan: bool,
    /// bits 24..32: reserved
    pub rsvd_24: Bits<8>,
    /// bits 32..64: reserved
    pub rsvd_32: Bits<32>,
    /// bits 64..96: globalAddress, low half
    pub gaddr_lo: Bits<32>,
    /// bits 96..128: globalAddress, high half
    pub gaddr_hi: Bits<32>,
    /// globalDim[0] - 1
    pub gdim0_m1: Bits<32>,
    /// globalDim[1] - 1
    pub gdim1_m1: Bits<32>,
    /// globalDim[2] - 1
    pub gdim2_m1: Bits<32>,
    /// globalDim[3] - 1
    pub gdim3_m1: Bits<32>,
    /// globalDim[4] - 1
    pub gdim4_m1: Bits<32>,
    /// globalStrides[0] bits 0..32
    pub gstride0_lo: Bits<32>,
    /// globalStrides[0] bits 32..40
    pub gstride0_hi: Bits<8>,
    /// globalStrides[1] bits 0..32
    pub gstride1_lo: Bits<32>,
    /// globalStrides[1] bits 32..40
    pub gstride1_hi: Bits<8>,
    /// globalStrides[2] bits 0..32
    pub gstride2_lo: Bits<32>,
    /// globalStrides[2] bits 32..40
    pub gstride2_hi: Bits<8>,
    /// globalStrides[3] bits 0..32
    pub gstride3_lo: Bits<32>,
    /// globalStrides[3] bits 32..40
    pub gstride3_hi: Bits<8>,
    /// boxDim[0] - 1
    pub box0_m1: Bits<8>,
    /// boxDim[1] - 1
    pub box1_m1: Bits<8>,
    /// boxDim[2] - 1
    pub box2_m1: Bits<8>,
    /// boxDim[3] - 1
    pub box3_m1: Bits<8>,
    /// boxDim[4] - 1
    pub box4_m1: Bits<8>,
    /// elementStrides[0] - 1
    pub estride0_m1: Bits<3>,
    /// elementStrides[1] - 1
    pub estride1_m1: Bits<3>,
    /// elementStrides[2] - 1
    pub estride2_m1: Bits<3>,
    /// elementStrides[3] - 1
    pub estride3_m1: Bits<3>,
    /// elementStrides[4] - 1
    pub estride4_m1: Bits<3>,
    /// bits 503..512: reserved
    pub rsvd_503: Bits<9>,
    /// pixelBoxLowerCorner[0] (im2col)
    pub lower0: Bits<16>,
    /// pixelBoxLowerCorner[1] (im2col)
    pub lower1: Bits<16>,
    /// pixelBoxLowerCorner[2] (im2col)
    pub lower2: Bits<16>,
    /// pixelBoxUpperCorner[0] (im2col)
    pub upper0: Bits<16>,
    /// pixelBoxUpperCorner[1] (im2col)
    pub upper1: Bits<16>,
    /// pixelBoxUpperCorner[2] (im2col)
    pub upper2: Bits<16>,
    /// channelsPerPixel - 1 (im2col)
    pub channels_m1: Bits<8>,
    /// pixelsPerColumn - 1 (im2col)
    pub pixels_m1: Bits<10>,
    /// bits 626..640: reserved
    pub rsvd_626: Bits<14>,
    /// bits 640..672: reserved
    pub rsvd_640: Bits<32>,
    /// bits 672..704: reserved
    pub rsvd_672: Bits<32>,
    /// bits 704..736: reserved
    pub rsvd_704: Bits<32>,
    /// bits 736..768: reserved
    pub rsvd_736: Bits<32>,
    /// bits 768..800: reserved
    pub rsvd_768: Bits<32>,
    /// bits 800..832: reserved
    pub rsvd_800: Bits<32>,
    /// bits 832..864: reserved
    pub rsvd_832: Bits<32>,
    /// bits 864..896: reserved
    pub rsvd_864: Bits<32>,
    /// bits 896..928: reserved
    pub rsvd_896: Bits<32>,
    /// bits 928..960: reserved
    pub rsvd_928: Bits<32>,
    /// bits 960..992: reserved
    pub rsvd_960: Bits<32>,
    /// bits 992..1024: reserved
    pub rsvd_992: Bits<32>,
}

impl TmaDescImage {
    /// The fields of a 128-byte image (any bytes: the unit validates them).
    pub fn from_bytes(img: &[u8; 128]) -> Self {
        let g = |at: usize, w: usize| -> u64 {
            let mut v = 0u64;
            for k in 0..w {
                let n = at + k;
                v |= (((img[n / 8] >> (n % 8)) & 1) as u64) << k;
            }
            v
        };
        let b = |at: usize| g(at, 1) == 1;
        TmaDescImage {
            version: g(0, 8).into(),
            im2col: b(8),
            rank_m1: g(9, 3).into(),
            data_type: g(12, 4).into(),
            interleave: g(16, 2).into(),
            swizzle: g(18, 3).into(),
            l2_promotion: g(21, 2).into(),
            oob_nan: b(23),
            rsvd_24: g(24, 8).into(),
            rsvd_32: g(32, 32).into(),
            gaddr_lo: g(64, 32).into(),
            gaddr_hi: g(96, 32).into(),
            gdim0_m1: g(128, 32).into(),
            gdim1_m1: g(160, 32).into(),
            gdim2_m1: g(192, 32).into(),
            gdim3_m1: g(224, 32).into(),
            gdim4_m1: g(256, 32).into(),
            gstride0_lo: g(288, 32).into(),
            gstride0_hi: g(320, 8).into(),
            gstride1_lo: g(328, 32).into(),
            gstride1_hi: g(360, 8).into(),
            gstride2_lo: g(368, 32).into(),
            gstride2_hi: g(400, 8).into(),
            gstride3_lo: g(408, 32).into(),
            gstride3_hi: g(440, 8).into(),
            box0_m1: g(448, 8).into(),
            box1_m1: g(456, 8).into(),
            box2_m1: g(464, 8).into(),
            box3_m1: g(472, 8).into(),
            box4_m1: g(480, 8).into(),
            estride0_m1: g(488, 3).into(),
            estride1_m1: g(491, 3).into(),
            estride2_m1: g(494, 3).into(),
            estride3_m1: g(497, 3).into(),
            estride4_m1: g(500, 3).into(),
            rsvd_503: g(503, 9).into(),
            lower0: g(512, 16).into(),
            lower1: g(528, 16).into(),
            lower2: g(544, 16).into(),
            upper0: g(560, 16).into(),
            upper1: g(576, 16).into(),
            upper2: g(592, 16).into(),
            channels_m1: g(608, 8).into(),
            pixels_m1: g(616, 10).into(),
            rsvd_626: g(626, 14).into(),
            rsvd_640: g(640, 32).into(),
            rsvd_672: g(672, 32).into(),
            rsvd_704: g(704, 32).into(),
            rsvd_736: g(736, 32).into(),
            rsvd_768: g(768, 32).into(),
            rsvd_800: g(800, 32).into(),
            rsvd_832: g(832, 32).into(),
            rsvd_864: g(864, 32).into(),
            rsvd_896: g(896, 32).into(),
            rsvd_928: g(928, 32).into(),
            rsvd_960: g(960, 32).into(),
            rsvd_992: g(992, 32).into(),
        }
    }
}

/// A command. Fields a kind does not use are ignored.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaCmd {
    /// what to do
    pub kind: TmaCmdKind,
    /// tensor: the instruction's load mode is im2col (PTX 5.5.4; must match the map's mode)
    pub im2col: bool,
    /// tensor: the `.Nd` of the instruction (must equal the map's rank)
    pub dims: Bits<3>,
    /// shared::cta byte address: destination of a load (the same offset in every destination
    /// CTA), source of a store
    pub smem: Bits<18>,
    /// bulk: global byte address, low half
    pub gaddr_lo: Bits<32>,
    /// bulk: global byte address, high half
    pub gaddr_hi: Bits<32>,
    /// bulk: bytes (a multiple of 16)
    pub size: Bits<20>,
    /// loads: the mbarrier's word index (shared::cta byte address >> 3) in each destination CTA
    pub mbar: Bits<16>,
    /// loads: destination CTA ranks (`.multicast::cluster` ctaMask; else the one destination)
    pub cta_mask: Bits<16>,
    /// tensor: coordinate 0 (innermost), .s32
    pub c0: Bits<32>,
    /// tensor: coordinate 1
    pub c1: Bits<32>,
    /// tensor: coordinate 2
    pub c2: Bits<32>,
    /// tensor: coordinate 3
    pub c3: Bits<32>,
    /// tensor: coordinate 4
    pub c4: Bits<32>,
    /// `BulkS2S`: destination shared::cta byte address (in the CTA of `cta_mask`)
    pub dsmem: Bits<18>,
    /// `BulkS2S` and stores: the reduction (`cp.reduce.async.bulk{.tensor}`, PTX 9.7.9.25.4.2 /
    /// 9.7.9.25.5.3; `Copy` for a plain copy or store): a store's writes carry it to memory (the
    /// L2 on silicon applies it), a `BulkS2S` beat to the shared-memory side
    pub red_op: TmaRedOp,
    /// the reduction's element type
    pub red_type: TmaRedType,
    /// stores, commit_group: the issuing thread (CTA-local `warp * 32 + lane`), whose bulk
    /// async-groups the command joins or closes
    pub thread: Bits<10>,
    /// im2col: the im2col offset of spatial dimension W (`im2colOffsets[0]`, PTX 9.7.9.25.5.2;
    /// unsigned, below 2^16 / 2^8 / 2^5 for rank 3 / 4 / 5: the instruction's check)
    pub o0: Bits<16>,
    /// im2col: the offset of H (`im2colOffsets[1]`)
    pub o1: Bits<16>,
    /// im2col: the offset of D (`im2colOffsets[2]`)
    pub o2: Bits<16>,
}

/// A global-memory request: one 32-byte sector.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaGmemReq {
    /// sector byte address (32-byte aligned), low half
    pub addr_lo: Bits<32>,
    /// sector byte address, high half
    pub addr_hi: Bits<32>,
    /// reads: the ROB entry (echoed by the response); writes: the bulk-group slot (context in
    /// bits 2..4, the context's slot in bits 0..2)
    pub tag: Bits<8>,
    /// a write (else a read)
    pub write: bool,
    /// write data, bytes 0..=15 of the sector
    pub data_lo: TmaData16,
    /// write data, bytes 16..=31
    pub data_hi: TmaData16,
    /// write byte mask, bytes 0..=15
    pub mask_lo: Bits<16>,
    /// write byte mask, bytes 16..=31
    pub mask_hi: Bits<16>,
    /// writes: the store's reduction (its command's `red_op`; `Copy`: a plain write)
    pub red_op: TmaRedOp,
    /// writes: the reduction's element type
    pub red_type: TmaRedType,
}

/// A global-memory response.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaGmemResp {
    /// the request's tag
    pub tag: Bits<8>,
    /// a write acknowledgement (else read data)
    pub write: bool,
    /// read data, bytes 0..=15 of the sector
    pub data_lo: TmaData16,
    /// read data, bytes 16..=31
    pub data_hi: TmaData16,
}

/// A 16-byte shared-memory write.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaSmemWrite {
    /// destination CTA rank in the cluster
    pub cta: Bits<4>,
    /// shared::cta byte address, 16-byte aligned
    pub addr: Bits<18>,
    /// the bytes
    pub data: TmaData16,
    /// byte enables (a load writes whole beats: all set)
    pub mask: Bits<16>,
    /// the reduction the write applies (`Copy`: a plain write)
    pub red_op: TmaRedOp,
    /// its element type
    pub red_type: TmaRedType,
}

/// A refused command.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaFault {
    /// a fault this cycle
    pub valid: bool,
    /// why
    pub kind: TmaFaultKind,
    /// the refused command's `thread` (stores, commit_group; 0 for loads)
    pub thread: Bits<10>,
}

/// Row-queue entry (RG → BA).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaRowRec {
    /// some outer coordinate is out of bounds (or the job has no in-bounds byte)
    pub oob: bool,
    /// the row's 16-byte aligned global address (`A1 & ~15`), low half
    pub r_lo: Bits<32>,
    /// high half
    pub r_hi: Bits<32>,
    /// the job's last row
    pub last: bool,
}

/// BA stage-Y record (one slot).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaSlot {
    /// a slot is in Y
    pub valid: bool,
    /// store direction
    pub store: bool,
    /// loads: a chunk was popped from the ROB (`half` selects it); stores: a beat was read
    pub need: bool,
    /// loads: the popped chunk is the high half of its sector
    pub half: bool,
    /// the slot produces an output (load beat / store chunk)
    pub emit: bool,
    /// the job's last slot
    pub jlast: bool,
    /// in-bounds bytes of the output
    pub mask: Bits<16>,
    /// loads: swizzled shared::cta address of the beat
    pub addr: Bits<18>,
    /// realignment offset (bytes)
    pub off: Bits<4>,
    /// OOB fill bytes
    pub fill: TmaData16,
    /// loads: destination CTAs
    pub ctam: Bits<16>,
    /// loads: mbarrier word
    pub word: Bits<16>,
    /// loads: the job's bytes so far, this slot included
    pub tx: Bits<32>,
    /// stores: bulk-group slot
    pub grp: Bits<4>,
    /// stores: global address of the output chunk, low half
    pub ca_lo: Bits<32>,
    /// high half
    pub ca_hi: Bits<32>,
    /// stores: the chunk is the last in-bounds chunk of its row
    pub ulast: bool,
    /// stores: the chunk is the high half of its sector (bit 4 of its address)
    pub par: bool,
    /// a shared::cta -> shared::cluster copy: the beat goes to OB (read like a store, written
    /// like a load)
    pub s2s: bool,
    /// the reduction of the beat
    pub red_op: TmaRedOp,
    /// its element type
    pub red_type: TmaRedType,
}

/// Output-buffer entry (loads).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaObEntry {
    /// a beat to write (else only the job-end marker)
    pub data_valid: bool,
    /// swizzled shared::cta address
    pub addr: Bits<18>,
    /// the beat
    pub data: TmaData16,
    /// destination CTAs
    pub ctam: Bits<16>,
    /// the job's last entry: complete_tx follows
    pub jlast: bool,
    /// mbarrier word
    pub word: Bits<16>,
    /// the job's bytes (valid with `jlast`)
    pub tx: Bits<32>,
    /// the reduction of the beat
    pub red_op: TmaRedOp,
    /// its element type
    pub red_type: TmaRedType,
}

/// Write-buffer entry (stores).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaWbEntry {
    /// a sector write (else only the op-end marker)
    pub write: bool,
    /// sector address, low half
    pub addr_lo: Bits<32>,
    /// high half
    pub addr_hi: Bits<32>,
    /// bytes 0..=15
    pub data_lo: TmaData16,
    /// bytes 16..=31
    pub data_hi: TmaData16,
    /// byte mask 0..=15
    pub mask_lo: Bits<16>,
    /// byte mask 16..=31
    pub mask_hi: Bits<16>,
    /// bulk-group slot
    pub grp: Bits<4>,
    /// the op's last entry
    pub op_last: bool,
    /// the op's reduction (`TmaGmemReq::red_op`)
    pub red_op: TmaRedOp,
    /// its element type
    pub red_type: TmaRedType,
}

/// The job register J (and BA's copy of it): a decoded command.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaJob {
    /// store direction (shared -> global)
    pub store: bool,
    /// tensorRank (1 for bulk)
    pub rank: Bits<3>,
    /// log2(element size)
    pub es: Bits<2>,
    /// swizzle (0 none, 1 32B, 2 64B, 3 128B)
    pub swz: Bits<2>,
    /// shared::cta base address of the box
    pub base: Bits<18>,
    /// destination CTAs (loads)
    pub ctam: Bits<16>,
    /// mbarrier word (loads)
    pub word: Bits<16>,
    /// bulk-group slot (stores)
    pub grp: Bits<4>,
    /// OOB fill bytes
    pub fill: TmaData16,
    /// start address accumulator (global address of box element 0), low half
    pub a_lo: Bits<32>,
    /// high half
    pub a_hi: Bits<32>,
    /// in-bounds bytes of a row: from
    pub lo_b: Bits<24>,
    /// in-bounds bytes of a row: to (exclusive)
    pub hi_b: Bits<24>,
    /// row start in global memory modulo 16
    pub rot: Bits<4>,
    /// bytes per row
    pub rowbytes: Bits<24>,
    /// boxDim[1]
    pub box1: Bits<9>,
    /// boxDim[2]
    pub box2: Bits<9>,
    /// boxDim[3]
    pub box3: Bits<9>,
    /// boxDim[4]
    pub box4: Bits<9>,
    /// elementStrides[1]
    pub e1: Bits<9>,
    /// elementStrides[2]
    pub e2: Bits<9>,
    /// elementStrides[3]
    pub e3: Bits<9>,
    /// elementStrides[4]
    pub e4: Bits<9>,
    /// dimension 1: first in-bounds box index
    pub lo1: Bits<9>,
    /// dimension 2: first in-bounds box index
    pub lo2: Bits<9>,
    /// dimension 3: first in-bounds box index
    pub lo3: Bits<9>,
    /// dimension 4: first in-bounds box index
    pub lo4: Bits<9>,
    /// dimension 1: end of the in-bounds box indices
    pub hi1: Bits<9>,
    /// dimension 2: end of the in-bounds box indices
    pub hi2: Bits<9>,
    /// dimension 3: end of the in-bounds box indices
    pub hi3: Bits<9>,
    /// dimension 4: end of the in-bounds box indices
    pub hi4: Bits<9>,
    /// dimension 1 address step (elementStrides[1] * globalStrides[0]), low half
    pub st1_lo: Bits<32>,
    /// high half
    pub st1_hi: Bits<32>,
    /// dimension 2 address step, low half
    pub st2_lo: Bits<32>,
    /// high half
    pub st2_hi: Bits<32>,
    /// dimension 3 address step, low half
    pub st3_lo: Bits<32>,
    /// high half
    pub st3_hi: Bits<32>,
    /// dimension 4 address step, low half
    pub st4_lo: Bits<32>,
    /// high half
    pub st4_hi: Bits<32>,
    /// no in-bounds byte in a row: every row is OOB
    pub empty: bool,
    /// zero bytes per row (bulk size 0)
    pub zero: bool,
    /// 16-byte beats per row
    pub nb: Bits<16>,
    /// last slot index of a row
    pub ns_m1: Bits<16>,
    /// first chunk (relative to the row's 16-byte aligned start) with an in-bounds byte
    pub ca: Bits<16>,
    /// last such chunk
    pub cb: Bits<16>,
    /// first output unit with an in-bounds byte
    pub jl: Bits<16>,
    /// last such unit
    pub jh: Bits<16>,
    /// byte mask of unit `jl`
    pub lomask: Bits<16>,
    /// byte mask of unit `jh`
    pub himask: Bits<16>,
    /// realignment offset
    pub off: Bits<4>,
    /// loads with a misaligned row: output unit = slot - 1
    pub d: bool,
    /// byte offset of chunk `ca` from the row start (16 * ca)
    pub offa: Bits<24>,
    /// a prefetch: reads whose data is dropped (no beat, no complete_tx)
    pub pf: bool,
    /// a shared::cta -> shared::cluster copy (`store` is set too: the read side is a store's)
    pub s2s: bool,
    /// S2S: destination address - source address (shared::cta, modulo 2^18)
    pub doff: Bits<18>,
    /// S2S: the reduction
    pub red_op: TmaRedOp,
    /// S2S: its element type
    pub red_type: TmaRedType,
    /// an im2col job (PTX 5.5.4): a row is a pixel of channelsPerPixel channels, rows walk the
    /// pixel bounding box (module doc "im2col")
    pub im2col: bool,
    /// im2col: pixelsPerColumn - 1
    pub pix_m1: Bits<10>,
    /// im2col, dimension 1: in-bounds pixel steps `[kcl1, kch1)` counted from the instruction's
    /// coordinate (before the first wrap)
    pub kcl1: Bits<15>,
    /// end of that window
    pub kch1: Bits<15>,
    /// dimension 2: the same
    pub kcl2: Bits<15>,
    /// end
    pub kch2: Bits<15>,
    /// dimension 3: the same
    pub kcl3: Bits<15>,
    /// end
    pub kch3: Bits<15>,
    /// dimension 4 (only N: rank 5): the same
    pub kcl4: Bits<15>,
    /// end
    pub kch4: Bits<15>,
    /// im2col, spatial dimension 1: in-bounds steps counted from the lower corner (after a wrap)
    pub kll1: Bits<15>,
    /// end of that window
    pub klh1: Bits<15>,
    /// spatial dimension 2: the same
    pub kll2: Bits<15>,
    /// end
    pub klh2: Bits<15>,
    /// spatial dimension 3: the same
    pub kll3: Bits<15>,
    /// end
    pub klh3: Bits<15>,
    /// im2col, spatial dimension 1: a step reaching this many from the coordinate leaves the
    /// bounding box (wraps)
    pub kwc1: Bits<15>,
    /// the same counted from the lower corner
    pub kwl1: Bits<15>,
    /// spatial dimension 2: from the coordinate
    pub kwc2: Bits<15>,
    /// from the lower corner
    pub kwl2: Bits<15>,
    /// spatial dimension 3: from the coordinate
    pub kwc3: Bits<15>,
    /// from the lower corner
    pub kwl3: Bits<15>,
    /// im2col: start address - A2 (the address distance of spatial dimension 1 from its lower
    /// corner: (c1 - lower[0]) * globalStrides[0]), low half
    pub mb2_lo: Bits<32>,
    /// high half
    pub mb2_hi: Bits<32>,
    /// start - A3 (spatial dimensions 1 and 2 at their lower corners), low half
    pub mb3_lo: Bits<32>,
    /// high half
    pub mb3_hi: Bits<32>,
    /// start - A4 (spatial dimensions 1..3 at their lower corners), low half
    pub mb4_lo: Bits<32>,
    /// high half
    pub mb4_hi: Bits<32>,
}

/// The row iterator's state (dimensions 1..4).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaRg {
    /// box index, dimension 1
    pub t1: Bits<9>,
    /// box index, dimension 2
    pub t2: Bits<9>,
    /// box index, dimension 3
    pub t3: Bits<9>,
    /// box index, dimension 4
    pub t4: Bits<9>,
    /// nested-loop base address A1 (the current row), low half
    pub a1_lo: Bits<32>,
    /// high half
    pub a1_hi: Bits<32>,
    /// A2, low half
    pub a2_lo: Bits<32>,
    /// high half
    pub a2_hi: Bits<32>,
    /// A3, low half
    pub a3_lo: Bits<32>,
    /// high half
    pub a3_hi: Bits<32>,
    /// A4, low half
    pub a4_lo: Bits<32>,
    /// high half
    pub a4_hi: Bits<32>,
    /// im2col: pixel steps of dimension 1 from its base (the coordinate, or the lower corner
    /// once `sel1`)
    pub k1: Bits<14>,
    /// dimension 2
    pub k2: Bits<14>,
    /// dimension 3
    pub k3: Bits<14>,
    /// dimension 4
    pub k4: Bits<14>,
    /// im2col: dimension 1 has wrapped (its base is the lower corner)
    pub sel1: bool,
    /// dimension 2 has wrapped
    pub sel2: bool,
    /// dimension 3 has wrapped
    pub sel3: bool,
    /// im2col: pixel (row) index
    pub pix: Bits<10>,
}

/// A row being issued as sector reads.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaIss {
    /// a row is present
    pub valid: bool,
    /// next sector address, low half
    pub s_lo: Bits<32>,
    /// high half
    pub s_hi: Bits<32>,
    /// next wanted chunk (relative to the row's 16-byte aligned start)
    pub p: Bits<16>,
    /// that chunk is the high half of the sector
    pub odd: bool,
    /// the row's last wanted chunk
    pub cb: Bits<16>,
}

/// BA's current row and slot.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TmaBaRow {
    /// a row is loaded
    pub vld: bool,
    /// it is OOB
    pub oob: bool,
    /// it is the job's last row
    pub last: bool,
    /// slot index in the row
    pub s: Bits<16>,
    /// dense shared-memory address of the next beat (before swizzle)
    pub dense: Bits<18>,
    /// stores: global address of the slot's chunk, low half
    pub ca_lo: Bits<32>,
    /// high half
    pub ca_hi: Bits<32>,
    /// loads: the job's bytes so far
    pub tx: Bits<32>,
}

/// `p = acc + sext(a) * b mod 2^64` (a: 32-bit signed, b: 40-bit unsigned), combinational.
/// A leaf with hand-written Verilog: hdl_gen has no 32 x 40 multiply (rust-hdl only multiplies
/// 16 x 16); the iverilog replay checks it against this Rust model.
#[derive(LogicBlock, Default)]
pub struct TmaMac {
    /// addend, low half
    pub acc_lo: Signal<In, Bits<32>>,
    /// addend, high half
    pub acc_hi: Signal<In, Bits<32>>,
    /// signed multiplier
    pub a: Signal<In, Bits<32>>,
    /// unsigned multiplicand, bits 0..32
    pub b_lo: Signal<In, Bits<32>>,
    /// unsigned multiplicand, bits 32..40
    pub b_hi: Signal<In, Bits<8>>,
    /// result, low half
    pub p_lo: Signal<Out, Bits<32>>,
    /// result, high half
    pub p_hi: Signal<Out, Bits<32>>,
}

impl Logic for TmaMac {
    fn update(&mut self) {
        let acc = self.acc_lo.val().to_u64() | self.acc_hi.val().to_u64() << 32;
        let a = self.a.val().to_u64() as u32 as i32 as i64 as u64;
        let b = self.b_lo.val().to_u64() | self.b_hi.val().to_u64() << 32;
        let p = acc.wrapping_add(a.wrapping_mul(b));
        self.p_lo.next = (p & 0xFFFF_FFFF).into();
        self.p_hi.next = (p >> 32).into();
    }
    fn connect(&mut self) {
        self.p_lo.connect();
        self.p_hi.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Custom(
            "\
wire [63:0] mac_prod = {{32{a[31]}}, a} * {24'd0, b_hi, b_lo};
wire [63:0] mac_sum = {acc_hi, acc_lo} + mac_prod;
always @(*) begin
   p_lo = mac_sum[31:0];
   p_hi = mac_sum[63:32];
end
"
            .into(),
        )
    }
}

/// The im2col rules of a tensor map's pixel box (`firmware/src/tensormap.rs`
/// `validate_im2col_box`; cuTensorMapEncodeIm2col, PTX 5.5.4.1), combinational: `bad` when
/// the rank is not 3..=5, a corner is outside the rank's range ([-2^15, 2^15) / [-2^7, 2^7) /
/// [-2^4, 2^4) for rank 3 / 4 / 5), a corner of a dimension the rank does not have is non-zero,
/// or a spatial dimension's box has no area (`globalDim + upper - lower < 1`). A leaf with
/// hand-written Verilog (18-bit signed arithmetic); the iverilog replay checks it.
#[derive(LogicBlock, Default)]
pub struct TmaI2cCheck {
    /// tensorRank - 1
    pub rank_m1: Signal<In, Bits<3>>,
    /// pixelBoxLowerCorner[0..3] (.s16)
    pub lower0: Signal<In, Bits<16>>,
    /// pixelBoxLowerCorner[1]
    pub lower1: Signal<In, Bits<16>>,
    /// pixelBoxLowerCorner[2]
    pub lower2: Signal<In, Bits<16>>,
    /// pixelBoxUpperCorner[0]
    pub upper0: Signal<In, Bits<16>>,
    /// pixelBoxUpperCorner[1]
    pub upper1: Signal<In, Bits<16>>,
    /// pixelBoxUpperCorner[2]
    pub upper2: Signal<In, Bits<16>>,
    /// globalDim[1] - 1
    pub gdim1_m1: Signal<In, Bits<32>>,
    /// globalDim[2] - 1
    pub gdim2_m1: Signal<In, Bits<32>>,
    /// globalDim[3] - 1
    pub gdim3_m1: Signal<In, Bits<32>>,
    /// the pixel box breaks a rule
    pub bad: Signal<Out, bool>,
}

impl Logic for TmaI2cCheck {
    fn update(&mut self) {
        let s16 = |x: Bits<16>| x.to_u64() as u16 as i16 as i64;
        let lo = [s16(self.lower0.val()), s16(self.lower1.val()), s16(self.lower2.val())];
        let up = [s16(self.upper0.val()), s16(self.upper1.val()), s16(self.upper2.val())];
        let gd = [self.gdim1_m1.val().to_u64() as i64, self.gdim2_m1.val().to_u64() as i64, self.gdim3_m1.val().to_u64() as i64];
        let rank = self.rank_m1.val().to_u64() as usize + 1;
        let bad = if !(3..=5).contains(&rank) {
            true
        } else {
            let (a, b) = match rank {
                3 => (-32768, 32767),
                4 => (-128, 127),
                _ => (-16, 15),
            };
            let nsp = rank - 2;
            (0..3).any(|i| {
                if i < nsp {
                    !(a..=b).contains(&lo[i]) || !(a..=b).contains(&up[i]) || gd[i] + up[i] - lo[i] < 0
                } else {
                    lo[i] != 0 || up[i] != 0
                }
            })
        };
        self.bad.next = bad;
    }
    fn connect(&mut self) {
        self.bad.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Custom(
            "\
wire [17:0] ck_t0 = {{2{lower0[15]}}, lower0} - {{2{upper0[15]}}, upper0};
wire [17:0] ck_t1 = {{2{lower1[15]}}, lower1} - {{2{upper1[15]}}, upper1};
wire [17:0] ck_t2 = {{2{lower2[15]}}, lower2} - {{2{upper2[15]}}, upper2};
wire ck_a0 = !ck_t0[17] && ({14'd0, ck_t0} > gdim1_m1);
wire ck_a1 = !ck_t1[17] && ({14'd0, ck_t1} > gdim2_m1);
wire ck_a2 = !ck_t2[17] && ({14'd0, ck_t2} > gdim3_m1);
wire ck_r8 = ((lower0[15:7] == 9'd0) || (lower0[15:7] == 9'h1ff))
   && ((lower1[15:7] == 9'd0) || (lower1[15:7] == 9'h1ff))
   && ((upper0[15:7] == 9'd0) || (upper0[15:7] == 9'h1ff))
   && ((upper1[15:7] == 9'd0) || (upper1[15:7] == 9'h1ff));
wire ck_r5 = ((lower0[15:4] == 12'd0) || (lower0[15:4] == 12'hfff))
   && ((lower1[15:4] == 12'd0) || (lower1[15:4] == 12'hfff))
   && ((lower2[15:4] == 12'd0) || (lower2[15:4] == 12'hfff))
   && ((upper0[15:4] == 12'd0) || (upper0[15:4] == 12'hfff))
   && ((upper1[15:4] == 12'd0) || (upper1[15:4] == 12'hfff))
   && ((upper2[15:4] == 12'd0) || (upper2[15:4] == 12'hfff));
wire ck_z1 = (lower1 == 16'd0) && (upper1 == 16'd0);
wire ck_z2 = (lower2 == 16'd0) && (upper2 == 16'd0);
always @(*) begin
   case (rank_m1)
      3'd2: bad = ck_a0 || !ck_z1 || !ck_z2;
      3'd3: bad = ck_a0 || ck_a1 || !ck_r8 || !ck_z2;
      3'd4: bad = ck_a0 || ck_a1 || ck_a2 || !ck_r5;
      default: bad = 1'b1;
   endcase
end
"
            .into(),
        )
    }
}

/// One im2col dimension's windows (module doc "im2col"), combinational, for a pixel position
/// `pos` that starts at `base` and moves by `k` steps: the in-bounds window of `k`
/// (`0 <= base + off + k < globalDim`) from the coordinate `c` (`kcl..kch`) and from the lower
/// corner (`kll..klh`), clamped to 0..=16384, and the first `k` past the bounding box's upper
/// end `globalDim - 1 + upper` (`kwc`, `kwl`), clamped to 0..=16383 (at most 1024 pixels of at
/// most 8 steps: 14-bit counters). N is a dimension with `off`, `lower`, `upper` 0. A leaf with
/// hand-written Verilog (36-bit signed arithmetic); the iverilog replay checks it.
#[derive(LogicBlock, Default)]
pub struct TmaI2cWin {
    /// the instruction's coordinate (.s32)
    pub c: Signal<In, Bits<32>>,
    /// the im2col offset (unsigned)
    pub off: Signal<In, Bits<16>>,
    /// pixelBoxLowerCorner (.s16)
    pub lower: Signal<In, Bits<16>>,
    /// pixelBoxUpperCorner (.s16)
    pub upper: Signal<In, Bits<16>>,
    /// globalDim - 1
    pub gdim_m1: Signal<In, Bits<32>>,
    /// in-bounds window from the coordinate: start
    pub kcl: Signal<Out, Bits<15>>,
    /// end
    pub kch: Signal<Out, Bits<15>>,
    /// in-bounds window from the lower corner: start
    pub kll: Signal<Out, Bits<15>>,
    /// end
    pub klh: Signal<Out, Bits<15>>,
    /// wrap threshold from the coordinate
    pub kwc: Signal<Out, Bits<15>>,
    /// wrap threshold from the lower corner
    pub kwl: Signal<Out, Bits<15>>,
}

impl Logic for TmaI2cWin {
    fn update(&mut self) {
        let c = self.c.val().to_u64() as u32 as i32 as i64;
        let off = self.off.val().to_u64() as i64;
        let lower = self.lower.val().to_u64() as u16 as i16 as i64;
        let upper = self.upper.val().to_u64() as u16 as i16 as i64;
        let gd = self.gdim_m1.val().to_u64() as i64 + 1;
        let cl = |v: i64, top: i64| -> Bits<15> { (v.clamp(0, top) as u64).into() };
        let (xc, xl) = (c + off, lower + off);
        let hi = gd - 1 + upper;
        self.kcl.next = cl(-xc, 16384);
        self.kch.next = cl(gd - xc, 16384);
        self.kll.next = cl(-xl, 16384);
        self.klh.next = cl(gd - xl, 16384);
        self.kwc.next = cl(hi - c + 1, 16383);
        self.kwl.next = cl(hi - lower + 1, 16383);
    }
    fn connect(&mut self) {
        self.kcl.connect();
        self.kch.connect();
        self.kll.connect();
        self.klh.connect();
        self.kwc.connect();
        self.kwl.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Custom(
            "\
wire [35:0] wn_c = {{4{c[31]}}, c};
wire [35:0] wn_off = {20'd0, off};
wire [35:0] wn_lo = {{20{lower[15]}}, lower};
wire [35:0] wn_up = {{20{upper[15]}}, upper};
wire [35:0] wn_gd = {4'd0, gdim_m1} + 36'd1;
wire [35:0] wn_xc = wn_c + wn_off;
wire [35:0] wn_xl = wn_lo + wn_off;
wire [35:0] wn_cl = 36'd0 - wn_xc;
wire [35:0] wn_ch = wn_gd - wn_xc;
wire [35:0] wn_ll = 36'd0 - wn_xl;
wire [35:0] wn_lh = wn_gd - wn_xl;
wire [35:0] wn_hi = wn_gd - 36'd1 + wn_up;
wire [35:0] wn_wc = wn_hi - wn_c + 36'd1;
wire [35:0] wn_wl = wn_hi - wn_lo + 36'd1;
always @(*) begin
   kcl = wn_cl[35] ? 15'd0 : ((wn_cl > 36'd16384) ? 15'd16384 : wn_cl[14:0]);
   kch = wn_ch[35] ? 15'd0 : ((wn_ch > 36'd16384) ? 15'd16384 : wn_ch[14:0]);
   kll = wn_ll[35] ? 15'd0 : ((wn_ll > 36'd16384) ? 15'd16384 : wn_ll[14:0]);
   klh = wn_lh[35] ? 15'd0 : ((wn_lh > 36'd16384) ? 15'd16384 : wn_lh[14:0]);
   kwc = wn_wc[35] ? 15'd0 : ((wn_wc > 36'd16383) ? 15'd16383 : wn_wc[14:0]);
   kwl = wn_wl[35] ? 15'd0 : ((wn_wl > 36'd16383) ? 15'd16383 : wn_wl[14:0]);
end
"
            .into(),
        )
    }
}

/// The byte realigner and OOB filler, combinational: `out` = bytes `off..off+16` of
/// `{cur, lo}` (lo = `prev`, or `cur` when `off` is 0), with the bytes whose `mask` bit is clear
/// replaced by `fill`. A leaf with hand-written Verilog: a 16-byte funnel shift in hdl_gen is a
/// bit-serial shift in the rust-hdl simulator (BigUint per shift); the iverilog replay checks
/// the Verilog against this Rust model.
#[derive(LogicBlock, Default)]
pub struct TmaAlign {
    /// the previous 16 bytes of the stream
    pub prev: Signal<In, TmaData16>,
    /// the current 16 bytes
    pub cur: Signal<In, TmaData16>,
    /// byte offset of the window
    pub off: Signal<In, Bits<4>>,
    /// bytes taken from the window (else from `fill`)
    pub mask: Signal<In, Bits<16>>,
    /// fill bytes
    pub fill: Signal<In, TmaData16>,
    /// the result
    pub out: Signal<Out, TmaData16>,
}

impl Logic for TmaAlign {
    fn update(&mut self) {
        let off = self.off.val().to_u64() as u32;
        let cur = self.cur.val().to_u128();
        let lo = if off == 0 { cur } else { self.prev.val().to_u128() };
        let win = if off == 0 { lo } else { (lo >> (8 * off)) | (cur << (128 - 8 * off)) };
        let mask = self.mask.val().to_u64();
        let mut m: u128 = 0;
        for i in 0..16 {
            if (mask >> i) & 1 == 1 {
                m |= 0xFFu128 << (8 * i);
            }
        }
        let fill = self.fill.val().to_u128();
        self.out.next = TmaData16::from_u128((win & m) | (fill & !m));
    }
    fn connect(&mut self) {
        self.out.connect();
    }
    fn hdl(&self) -> Verilog {
        let m: Vec<String> = (0..16).rev().map(|i| format!("{{8{{mask[{i}]}}}}")).collect();
        Verilog::Custom(format!(
            "\
wire [127:0] al_lo = (off == 4'd0) ? cur : prev;
wire [255:0] al_win = {{cur, al_lo}} >> {{off, 3'b000}};
wire [127:0] al_m = {{{}}};
always @(*) begin
   out = (al_win[127:0] & al_m) | (fill & ~al_m);
end
",
            m.join(", ")
        ))
    }
}

/// The TMA engine. Constructor parameters: `max_outstanding` global requests in flight
/// (1..=256) and the request bandwidth `bytes_per_cycle` (1..=32; a 32-byte sector costs 32).
#[derive(LogicBlock)]
pub struct TmaEngine {
    /// the SM clock
    pub clock: Signal<In, Clock>,
    /// this CTA's rank in its cluster (complete_tx to another rank is remote)
    pub cta_rank: Signal<In, Bits<4>>,
    /// a command
    pub cmd: Signal<In, TmaCmd>,
    /// the tensor-map image of a tensor command (valid with `cmd`)
    pub cmd_desc: Signal<In, TmaDescImage>,
    /// `cmd` is valid
    pub cmd_valid: Signal<In, bool>,
    /// `cmd` is accepted this cycle
    pub cmd_ready: Signal<Out, bool>,
    /// global-memory request
    pub gmem_req: Signal<Out, TmaGmemReq>,
    /// `gmem_req` is valid
    pub gmem_req_valid: Signal<Out, bool>,
    /// `gmem_req` is accepted this cycle
    pub gmem_req_ready: Signal<In, bool>,
    /// global-memory response
    pub gmem_resp: Signal<In, TmaGmemResp>,
    /// `gmem_resp` is valid
    pub gmem_resp_valid: Signal<In, bool>,
    /// `gmem_resp` is accepted (always)
    pub gmem_resp_ready: Signal<Out, bool>,
    /// shared-memory write
    pub smem_wr: Signal<Out, TmaSmemWrite>,
    /// `smem_wr` is valid
    pub smem_wr_valid: Signal<Out, bool>,
    /// `smem_wr` is accepted this cycle
    pub smem_wr_ready: Signal<In, bool>,
    /// shared-memory read address (stores; this CTA; swizzled, 16-byte aligned)
    pub smem_rd_addr: Signal<Out, Bits<18>>,
    /// `smem_rd_addr` is valid
    pub smem_rd_valid: Signal<Out, bool>,
    /// the read is accepted this cycle
    pub smem_rd_ready: Signal<In, bool>,
    /// read data of the read accepted at the previous edge
    pub smem_rd_data: Signal<In, TmaData16>,
    /// complete_tx request (op `CompleteTx`, word, tx_count)
    pub mbar_req: Signal<Out, MbarrierReq>,
    /// the CTA whose mbarrier unit gets `mbar_req`
    pub mbar_cta: Signal<Out, Bits<4>>,
    /// `mbar_cta` is not `cta_rank` (route to that CTA's cluster port)
    pub mbar_remote: Signal<Out, bool>,
    /// `mbar_req` is valid
    pub mbar_valid: Signal<Out, bool>,
    /// `mbar_req` is accepted this cycle
    pub mbar_ready: Signal<In, bool>,
    /// `cp.async.bulk.wait_group{.read} N`: N
    pub wait_n: Signal<In, Bits<8>>,
    /// the `.read` form
    pub wait_read: Signal<In, bool>,
    /// the waiting thread (CTA-local `warp * 32 + lane`)
    pub wait_thread: Signal<In, Bits<10>>,
    /// the wait holds (every committed group of `wait_thread` but the `wait_n` most recent is
    /// complete, or has completed its reads with `.read`; a thread with no context: true)
    pub wait_done: Signal<Out, bool>,
    /// committed bulk async-groups of `wait_thread` not yet complete
    pub groups_pending: Signal<Out, Bits<4>>,
    /// a store op's shared-memory reads are done (its last slot is in stage Y): store ops in
    /// command order (what `wait_group.read` waits for)
    pub store_read_done: Signal<Out, bool>,
    /// a store op's last sector write is issued this cycle, or its end marker left WB (an op
    /// with no in-bounds byte): store ops in command order, after their `store_read_done`
    pub store_writes_issued: Signal<Out, bool>,
    /// a refused command (registered)
    pub fault: Signal<Out, TmaFault>,
    /// nothing in flight
    pub idle: Signal<Out, bool>,

    /// `max_outstanding`
    max_out: Constant<Bits<9>>,
    /// `bytes_per_cycle`
    bpc: Constant<Bits<8>>,
    /// complete_tx request template (op CompleteTx, all else zero)
    mreq_base: Constant<MbarrierReq>,
    /// 16 zero bytes
    zero16: Constant<TmaData16>,

    /// 64-bit multiply-add of the decoder: the start address
    mac_a: TmaMac,
    /// 64-bit multiplier of the decoder: the per-dimension address step
    mac_s: TmaMac,
    /// realigner / OOB filler of stage Y
    align: TmaAlign,
    /// ROB data, bytes 0..=15 of each sector
    rob_lo: RAM<TmaData16, TMA_TAG_BITS>,
    /// ROB data, bytes 16..=31
    rob_hi: RAM<TmaData16, TMA_TAG_BITS>,
    /// ROB, per tag: the halves the row wants (bit 0 low, bit 1 high); written at issue, read
    /// one cycle ahead at the next head
    rob_want: RAM<Bits<2>, TMA_TAG_BITS>,
    /// ROB, per tag: arrival mark (the complement of the parity of the pass of the tags the
    /// entry's data belongs to; the head has arrived when it is `!rh_gen`), so freeing an entry
    /// needs no second write port
    rob_arr: RAM<bool, TMA_TAG_BITS>,
    /// the row queue (RG -> BA), read one cycle ahead at the next head
    rq_ram: RAM<TmaRowRec, TMA_ROWQ_BITS>,

    // ---- command queue
    /// queue entry 0 (head)
    q0: DFF<TmaCmd>,
    /// its descriptor image
    q0d: DFF<TmaDescImage>,
    /// its bulk-group slot
    q0g: DFF<Bits<4>>,
    /// it is a store that found no bulk-group context (refused in order by the decoder)
    q0x: DFF<bool>,
    /// queue entry 1
    q1: DFF<TmaCmd>,
    /// its descriptor image
    q1d: DFF<TmaDescImage>,
    /// its bulk-group slot
    q1g: DFF<Bits<4>>,
    /// it is a store that found no bulk-group context
    q1x: DFF<bool>,
    /// entries in the queue
    qn: DFF<Bits<2>>,

    // ---- bulk async-groups
    /// per context: its open group's slot (0..4 within the context)
    open: [DFF<Bits<2>>; 4],
    /// per context: the thread it holds (valid while one of its slots is busy)
    ctx_thread: [DFF<Bits<10>>; 4],
    /// per slot (context * 4 + slot): store ops whose shared-memory reads are not done
    g_rd: [DFF<Bits<8>>; 16],
    /// per slot: store ops whose writes are not all issued
    g_wi: [DFF<Bits<8>>; 16],
    /// per slot: writes issued and not acknowledged
    g_wp: [DFF<Bits<8>>; 16],

    // ---- decoder, J
    /// decoder state
    dstate: DFF<TmaDecState>,
    /// dimension of a Dim cycle
    dk: DFF<Bits<3>>,
    /// J holds a job
    j_valid: DFF<bool>,
    /// RG has finished J's rows
    rg_done: DFF<bool>,
    /// BA has copied J
    ba_taken: DFF<bool>,
    /// the job register
    j: DFF<TmaJob>,

    // ---- RG
    /// RG iterates J
    rg_busy: DFF<bool>,
    /// the row iterator
    rg: DFF<TmaRg>,
    /// the next row for the issuer
    nr: DFF<TmaIss>,
    /// the row being issued
    iss: DFF<TmaIss>,
    /// requests in flight
    outstanding: DFF<Bits<9>>,
    /// request token bucket (bytes)
    bucket: DFF<Bits<8>>,
    // ---- ROB
    /// next tag to allocate
    ra: DFF<Bits<8>>,
    /// oldest allocated tag
    rh: DFF<Bits<8>>,
    /// parity of rh's pass over the tags (flips when rh wraps)
    rh_gen: DFF<bool>,
    /// allocated entries
    rob_cnt: DFF<Bits<9>>,
    /// a response wrote the head's arrival mark at the edge of its read: it has arrived
    arr_fw: DFF<bool>,
    /// an issue wrote the head's `rob_want` at the edge of its read: use `want_fw_v`
    want_fw: DFF<bool>,
    /// the forwarded `rob_want` value
    want_fw_v: DFF<Bits<2>>,
    /// the head entry's low half was consumed
    h_lo_done: DFF<bool>,
    // ---- row queue
    /// head index
    rq_head: DFF<Bits<8>>,
    /// tail index
    rq_tail: DFF<Bits<8>>,
    /// entries used
    rq_cnt: DFF<Bits<9>>,
    /// RG wrote the head's entry at the edge of its read: use `rq_fwd`
    rq_fw: DFF<bool>,
    /// the forwarded row record
    rq_fwd: DFF<TmaRowRec>,
    // ---- BA
    /// BA holds a job
    b_act: DFF<bool>,
    /// BA's copy of J
    b: DFF<TmaJob>,
    /// BA's current row and slot
    r: DFF<TmaBaRow>,
    /// the slot in stage Y
    y: DFF<TmaSlot>,
    /// the previous slot's input bytes
    y_prev: DFF<TmaData16>,
    /// packer: a low half is held
    pk_vld: DFF<bool>,
    /// its bytes
    pk_data: DFF<TmaData16>,
    /// its mask
    pk_mask: DFF<Bits<16>>,
    // ---- output buffer (loads), multicast, complete_tx
    /// entries
    ob: [DFF<TmaObEntry>; 3],
    /// entries used
    ob_n: DFF<Bits<2>>,
    /// CTAs the head beat was written to
    mc_sent: DFF<Bits<16>>,
    /// a complete_tx sequence is pending
    cpl_vld: DFF<bool>,
    /// its remaining CTAs
    cpl_rem: DFF<Bits<16>>,
    /// its mbarrier word
    cpl_word: DFF<Bits<16>>,
    /// its byte count
    cpl_tx: DFF<Bits<32>>,
    // ---- write buffer (stores)
    /// entries
    wb: [DFF<TmaWbEntry>; 3],
    /// entries used
    wb_n: DFF<Bits<2>>,
    /// fault register
    fault_q: DFF<TmaFault>,

    // ---- temporaries: acceptance and queue
    /// the command is a commit_group
    c_commit: Signal<Local, bool>,
    /// the command is a store
    c_store: Signal<Local, bool>,
    /// per slot: a counter is non-zero
    g_busy: [Signal<Local, bool>; 16],
    /// per context: one of its slots is busy (the context holds `ctx_thread`)
    x_busy: [Signal<Local, bool>; 4],
    /// the command's thread holds a context
    c_has: Signal<Local, bool>,
    /// that context
    c_hsel: Signal<Local, Bits<2>>,
    /// some context is free
    c_fany: Signal<Local, bool>,
    /// a free context (the highest-numbered)
    c_fsel: Signal<Local, Bits<2>>,
    /// the command's context: its thread's, else the free one
    c_sel: Signal<Local, Bits<2>>,
    /// that context's open slot
    c_open: Signal<Local, Bits<2>>,
    /// the open group's slot id (context * 4 + slot)
    c_gid: Signal<Local, Bits<4>>,
    /// the slot id after it (same context)
    c_ngid: Signal<Local, Bits<4>>,
    /// the command is a store with no context (refused)
    c_noctx: Signal<Local, bool>,
    /// the next slot of the command's context is free
    commit_ok: Signal<Local, bool>,
    /// a command is accepted
    acc: Signal<Local, bool>,
    /// the queue head is consumed (decoded or refused)
    pop: Signal<Local, bool>,
    /// queue entries after the pop
    qn_after: Signal<Local, Bits<2>>,
    // ---- temporaries: decoder checks
    /// the head is a tensor command
    d_tensor: Signal<Local, bool>,
    /// the head is a store
    d_store: Signal<Local, bool>,
    /// log2 element size of the head's map
    d_es: Signal<Local, Bits<2>>,
    /// its data type is floating point
    d_float: Signal<Local, bool>,
    /// boxDim[0] * elementSize of the head's map
    d_rowb: Signal<Local, Bits<24>>,
    /// the image does not decode (tile rules)
    d_inv: Signal<Local, bool>,
    /// the fault of the head command
    d_kind: Signal<Local, TmaFaultKind>,
    /// a store's fault must wait (its group counters are being decremented)
    d_hold: Signal<Local, bool>,
    /// the head is refused this cycle
    d_fault: Signal<Local, bool>,
    /// the OOB fill of the head's map
    d_fill: Signal<Local, TmaData16>,
    // ---- temporaries: decoder Dim cycle
    /// coordinate of dimension dk
    d_c: Signal<Local, Bits<32>>,
    /// -coordinate
    d_negc: Signal<Local, Bits<32>>,
    /// globalDim - 1 of dimension dk
    d_dim: Signal<Local, Bits<32>>,
    /// boxDim of dimension dk
    d_box: Signal<Local, Bits<9>>,
    /// elementStrides of dimension dk
    d_e: Signal<Local, Bits<9>>,
    /// the stride multiplying the coordinate (element size for dk = 0), low half
    d_sb_lo: Signal<Local, Bits<32>>,
    /// high bits
    d_sb_hi: Signal<Local, Bits<8>>,
    /// globalDim - 1 - coordinate
    d_diff: Signal<Local, Bits<32>>,
    /// globalDim - 1 + (-coordinate)
    d_sum: Signal<Local, Bits<32>>,
    /// first in-bounds box index (clamped to 256)
    d_lo: Signal<Local, Bits<9>>,
    /// end of in-bounds box indices (clamped to 256)
    d_hi: Signal<Local, Bits<9>>,
    /// dimension 0: d_lo clamped to the box
    d_lo0: Signal<Local, Bits<24>>,
    /// dimension 0: d_hi clamped to the box
    d_hi0: Signal<Local, Bits<24>>,
    // ---- temporaries: decoder Fin cycle
    /// in-bounds bytes start + rot
    f_ca_b: Signal<Local, Bits<24>>,
    /// in-bounds bytes end - 1 + rot
    f_cb_b: Signal<Local, Bits<24>>,
    /// output-unit mask range start (bytes)
    f_mlo: Signal<Local, Bits<24>>,
    /// output-unit mask range end - 1 (bytes)
    f_mhi: Signal<Local, Bits<24>>,
    /// beats per row
    f_nb: Signal<Local, Bits<16>>,
    // ---- temporaries: RG
    /// dimension 1: the next index wraps
    w1: Signal<Local, bool>,
    /// dimension 2: the next index wraps
    w2: Signal<Local, bool>,
    /// dimension 3: the next index wraps
    w3: Signal<Local, bool>,
    /// dimension 4: the next index wraps
    w4: Signal<Local, bool>,
    /// A1 + step1, low half
    sm1_lo: Signal<Local, Bits<32>>,
    /// A2 + step2, low half
    sm2_lo: Signal<Local, Bits<32>>,
    /// A3 + step3, low half
    sm3_lo: Signal<Local, Bits<32>>,
    /// A4 + step4, low half
    sm4_lo: Signal<Local, Bits<32>>,
    /// A1 + step1, high half
    sm1_hi: Signal<Local, Bits<32>>,
    /// A2 + step2, high half
    sm2_hi: Signal<Local, Bits<32>>,
    /// A3 + step3, high half
    sm3_hi: Signal<Local, Bits<32>>,
    /// A4 + step4, high half
    sm4_hi: Signal<Local, Bits<32>>,
    /// the current row is OOB
    g_oob: Signal<Local, bool>,
    /// the current row leaves the iterator this cycle
    g_prod: Signal<Local, bool>,
    /// A1 + offA, low half
    g_n_lo: Signal<Local, Bits<32>>,
    /// the row-queue record of the current row
    g_rec: Signal<Local, TmaRowRec>,
    // ---- temporaries: issuer
    /// the candidate row (the one being issued, else the next one)
    c: Signal<Local, TmaIss>,
    /// the candidate chunk is a low half
    c_even: Signal<Local, bool>,
    /// WB presents a write
    wr_want: Signal<Local, bool>,
    /// a read is accepted
    rd_issue: Signal<Local, bool>,
    /// a write is accepted
    wr_issue: Signal<Local, bool>,
    /// bucket + bytes_per_cycle
    bk_add: Signal<Local, Bits<8>>,
    // ---- temporaries: BA stage X
    /// the row-queue head
    rqh: Signal<Local, TmaRowRec>,
    /// the row-queue head after this cycle's pop (the row queue's read address)
    rq_head_nx: Signal<Local, Bits<8>>,
    /// the ROB head's data has arrived
    h_vld: Signal<Local, bool>,
    /// the halves the ROB head's row wants
    h_want: Signal<Local, Bits<2>>,
    /// the ROB head after this cycle's free (the flag RAMs' read address)
    rh_nx: Signal<Local, Bits<8>>,
    /// the responding tag's pass parity
    r_par: Signal<Local, bool>,
    /// the halves the issued sector's row wants
    i_want: Signal<Local, Bits<2>>,
    /// the slot needs input (a ROB chunk / a shared-memory beat)
    x_need: Signal<Local, bool>,
    /// the slot produces an output
    x_emit: Signal<Local, bool>,
    /// output unit index
    x_u: Signal<Local, Bits<16>>,
    /// the slot is the row's last
    x_rend: Signal<Local, bool>,
    /// the slot moves to Y
    x_fire: Signal<Local, bool>,
    /// the output unit has in-bounds bytes
    x_inr: Signal<Local, bool>,
    /// in-bounds byte mask
    x_mask: Signal<Local, Bits<16>>,
    /// the slot's dense shared-memory address (a Local copy of `r.dense` for bit selects)
    x_dense: Signal<Local, Bits<18>>,
    /// swizzled shared-memory address of the slot
    x_swa: Signal<Local, Bits<18>>,
    /// the popped chunk is a high half
    x_half: Signal<Local, bool>,
    /// the ROB head entry is freed
    x_free: Signal<Local, bool>,
    /// BA copies J this cycle
    take_job: Signal<Local, bool>,
    /// BA holds a job next cycle
    act_next: Signal<Local, bool>,
    /// BA loads the row-queue head
    row_load: Signal<Local, bool>,
    // ---- temporaries: stage Y, buffers
    /// Y pushes an OB entry
    y_obpush: Signal<Local, bool>,
    /// Y pushes a WB entry
    y_wbpush: Signal<Local, bool>,
    /// the WB entry Y pushes
    wbe: Signal<Local, TmaWbEntry>,
    /// OB head is popped
    ob_pop: Signal<Local, bool>,
    /// OB entries after the pop
    ob_after: Signal<Local, Bits<2>>,
    /// WB head is popped
    wb_pop: Signal<Local, bool>,
    /// WB entries after the pop
    wb_after: Signal<Local, Bits<2>>,
    /// CTAs of the head beat not yet written
    mc_rem: Signal<Local, Bits<16>>,
    /// the lowest of them, one-hot
    mc_low: Signal<Local, Bits<16>>,
    /// its rank
    mc_cta: Signal<Local, Bits<4>>,
    /// the lowest remaining complete_tx CTA, one-hot
    cp_low: Signal<Local, Bits<16>>,
    /// its rank
    cp_cta: Signal<Local, Bits<4>>,
    // ---- temporaries: groups
    /// a store accepted into the open group
    ev_inc: Signal<Local, bool>,
    /// Y finished a store's reads
    ev_yrd: Signal<Local, bool>,
    /// WB finished a store's writes
    ev_wbi: Signal<Local, bool>,
    /// a write acknowledgement
    ev_ack: Signal<Local, bool>,
    /// the refused head is a store (leaves its group)
    ev_dfs: Signal<Local, bool>,
    /// the waiting thread holds a context
    w_hit: Signal<Local, bool>,
    /// that context
    w_ctx: Signal<Local, Bits<2>>,
    /// its open slot
    w_open: Signal<Local, Bits<2>>,
    /// that context's open slot id (context * 4 + slot)
    w_gid: Signal<Local, Bits<4>>,
    /// per slot: age in the waiting thread's context (open - slot, 0..=3; 0 = the open group)
    g_age: [Signal<Local, Bits<4>>; 16],
    /// per slot: belongs to the waiting thread's context
    g_mine: [Signal<Local, bool>; 16],
    /// per slot: not complete
    g_inc: [Signal<Local, bool>; 16],
    /// per slot: committed, the waiting thread's and not complete (0/1)
    g_pc: [Signal<Local, Bits<4>>; 16],
    /// wait_n saturated to 3 (older groups than the 3 newest committed cannot exist)
    wn3: Signal<Local, Bits<4>>,
    // ---- temporaries: prefetch and shared::cta -> shared::cluster
    /// the head is a prefetch
    d_pf: Signal<Local, bool>,
    /// the head is a shared::cta -> shared::cluster copy
    d_s2s: Signal<Local, bool>,
    /// the slot's output buffer (WB for a store, else OB) has room, counting the entry Y may push
    x_room: Signal<Local, bool>,
    // ---- im2col (decoder and RG)
    /// start += im2colOffset * globalStride (after mac_a)
    mac_o: TmaMac,
    /// start - A(k+1) += coordinate * globalStride
    mac_m1: TmaMac,
    /// ... - lowerCorner * globalStride
    mac_m2: TmaMac,
    /// the pixel box rules of the head's im2col map
    i2c_ck: TmaI2cCheck,
    /// the im2col windows of dimension dk
    i2c_win: TmaI2cWin,
    /// boxDim[0] - 1, or channelsPerPixel - 1 of an im2col map: the row's elements - 1
    d_b0m1: Signal<Local, Bits<8>>,
    /// Dim cycle of an im2col spatial dimension
    i_sp: Signal<Local, bool>,
    /// Dim cycle of an im2col N dimension
    i_n: Signal<Local, bool>,
    /// im2col offset of dimension dk
    i_off: Signal<Local, Bits<16>>,
    /// pixelBoxLowerCorner of dimension dk
    i_low: Signal<Local, Bits<16>>,
    /// pixelBoxUpperCorner of dimension dk
    i_up: Signal<Local, Bits<16>>,
    /// pixelBoxLowerCorner of dimension dk, sign-extended to 32 bits
    i_slow: Signal<Local, Bits<32>>,
    /// its negation
    i_nlow: Signal<Local, Bits<32>>,
    /// the start address & ~15 (Fin)
    i_s_lo: Signal<Local, Bits<32>>,
    /// A2 low half (Fin)
    i_a2_lo: Signal<Local, Bits<32>>,
    /// A3 low half (Fin)
    i_a3_lo: Signal<Local, Bits<32>>,
    /// A4 low half (Fin)
    i_a4_lo: Signal<Local, Bits<32>>,
    /// RG: dimension 1 is a spatial dimension of the im2col job
    i_s1: Signal<Local, bool>,
    /// dimension 2 is spatial
    i_s2: Signal<Local, bool>,
    /// dimension 3 is spatial
    i_s3: Signal<Local, bool>,
    /// RG: k1 + e1
    i_k1: Signal<Local, Bits<14>>,
    /// k2 + e2
    i_k2: Signal<Local, Bits<14>>,
    /// k3 + e3
    i_k3: Signal<Local, Bits<14>>,
    /// k4 + e4
    i_k4: Signal<Local, Bits<14>>,
    /// RG: the im2col row's pixel is out of bounds in some dimension
    i_oob: Signal<Local, bool>,
    /// RG: the im2col job's last row
    i_last: Signal<Local, bool>,
}

impl TmaEngine {
    /// An engine with at most `max_outstanding` (1..=256) global requests in flight and a request
    /// bandwidth of `bytes_per_cycle` (1..=32) bytes per cycle.
    pub fn new(max_outstanding: u32, bytes_per_cycle: u32) -> Self {
        assert!((1..=TMA_TAGS as u32).contains(&max_outstanding));
        assert!((1..=32).contains(&bytes_per_cycle));
        let mreq = MbarrierReq {
            op: MbarrierOp::CompleteTx,
            ..Default::default()
        };
        Self {
            clock: Default::default(),
            cta_rank: Default::default(),
            cmd: Default::default(),
            cmd_desc: Default::default(),
            cmd_valid: Default::default(),
            cmd_ready: Default::default(),
            gmem_req: Default::default(),
            gmem_req_valid: Default::default(),
            gmem_req_ready: Default::default(),
            gmem_resp: Default::default(),
            gmem_resp_valid: Default::default(),
            gmem_resp_ready: Default::default(),
            smem_wr: Default::default(),
            smem_wr_valid: Default::default(),
            smem_wr_ready: Default::default(),
            smem_rd_addr: Default::default(),
            smem_rd_valid: Default::default(),
            smem_rd_ready: Default::default(),
            smem_rd_data: Default::default(),
            mbar_req: Default::default(),
            mbar_cta: Default::default(),
            mbar_remote: Default::default(),
            mbar_valid: Default::default(),
            mbar_ready: Default::default(),
            wait_n: Default::default(),
            wait_read: Default::default(),
            wait_thread: Default::default(),
            wait_done: Default::default(),
            groups_pending: Default::default(),
            store_read_done: Default::default(),
            store_writes_issued: Default::default(),
            fault: Default::default(),
            idle: Default::default(),
            max_out: Constant::new((max_outstanding as u64).into()),
            bpc: Constant::new((bytes_per_cycle as u64).into()),
            mreq_base: Constant::new(mreq),
            zero16: Constant::new(TmaData16::default()),
            mac_a: Default::default(),
            mac_s: Default::default(),
            align: Default::default(),
            rob_lo: (0..TMA_TAGS).map(|_| TmaData16::default()).into(),
            rob_hi: (0..TMA_TAGS).map(|_| TmaData16::default()).into(),
            rob_want: (0..TMA_TAGS).map(|_| Bits::<2>::default()).into(),
            rob_arr: (0..TMA_TAGS).map(|_| false).into(),
            rq_ram: (0..TMA_ROWQ).map(|_| TmaRowRec::default()).into(),
            q0: Default::default(),
            q0d: Default::default(),
            q0g: Default::default(),
            q0x: Default::default(),
            q1: Default::default(),
            q1d: Default::default(),
            q1g: Default::default(),
            q1x: Default::default(),
            qn: Default::default(),
            open: Default::default(),
            ctx_thread: Default::default(),
            g_rd: Default::default(),
            g_wi: Default::default(),
            g_wp: Default::default(),
            dstate: Default::default(),
            dk: Default::default(),
            j_valid: Default::default(),
            rg_done: Default::default(),
            ba_taken: Default::default(),
            j: Default::default(),
            rg_busy: Default::default(),
            rg: Default::default(),
            nr: Default::default(),
            iss: Default::default(),
            outstanding: Default::default(),
            bucket: Default::default(),
            ra: Default::default(),
            rh: Default::default(),
            rob_cnt: Default::default(),
            rh_gen: Default::default(),
            arr_fw: Default::default(),
            want_fw: Default::default(),
            want_fw_v: Default::default(),
            h_lo_done: Default::default(),
            rq_head: Default::default(),
            rq_fw: Default::default(),
            rq_fwd: Default::default(),
            rq_tail: Default::default(),
            rq_cnt: Default::default(),
            b_act: Default::default(),
            b: Default::default(),
            r: Default::default(),
            y: Default::default(),
            y_prev: Default::default(),
            pk_vld: Default::default(),
            pk_data: Default::default(),
            pk_mask: Default::default(),
            ob: Default::default(),
            ob_n: Default::default(),
            mc_sent: Default::default(),
            cpl_vld: Default::default(),
            cpl_rem: Default::default(),
            cpl_word: Default::default(),
            cpl_tx: Default::default(),
            wb: Default::default(),
            wb_n: Default::default(),
            fault_q: Default::default(),
            c_commit: Default::default(),
            c_store: Default::default(),
            g_busy: Default::default(),
            x_busy: Default::default(),
            c_has: Default::default(),
            c_hsel: Default::default(),
            c_fany: Default::default(),
            c_fsel: Default::default(),
            c_sel: Default::default(),
            c_open: Default::default(),
            c_gid: Default::default(),
            c_ngid: Default::default(),
            c_noctx: Default::default(),
            commit_ok: Default::default(),
            acc: Default::default(),
            pop: Default::default(),
            qn_after: Default::default(),
            d_tensor: Default::default(),
            d_store: Default::default(),
            d_es: Default::default(),
            d_float: Default::default(),
            d_rowb: Default::default(),
            d_inv: Default::default(),
            d_kind: Default::default(),
            d_hold: Default::default(),
            d_fault: Default::default(),
            d_fill: Default::default(),
            d_c: Default::default(),
            d_negc: Default::default(),
            d_dim: Default::default(),
            d_box: Default::default(),
            d_e: Default::default(),
            d_sb_lo: Default::default(),
            d_sb_hi: Default::default(),
            d_diff: Default::default(),
            d_sum: Default::default(),
            d_lo: Default::default(),
            d_hi: Default::default(),
            d_lo0: Default::default(),
            d_hi0: Default::default(),
            f_ca_b: Default::default(),
            f_cb_b: Default::default(),
            f_mlo: Default::default(),
            f_mhi: Default::default(),
            f_nb: Default::default(),
            w1: Default::default(),
            w2: Default::default(),
            w3: Default::default(),
            w4: Default::default(),
            sm1_lo: Default::default(),
            sm2_lo: Default::default(),
            sm3_lo: Default::default(),
            sm4_lo: Default::default(),
            sm1_hi: Default::default(),
            sm2_hi: Default::default(),
            sm3_hi: Default::default(),
            sm4_hi: Default::default(),
            g_oob: Default::default(),
            g_prod: Default::default(),
            g_n_lo: Default::default(),
            g_rec: Default::default(),
            c: Default::default(),
            c_even: Default::default(),
            wr_want: Default::default(),
            rd_issue: Default::default(),
            wr_issue: Default::default(),
            bk_add: Default::default(),
            rqh: Default::default(),
            rq_head_nx: Default::default(),
            h_vld: Default::default(),
            h_want: Default::default(),
            rh_nx: Default::default(),
            r_par: Default::default(),
            i_want: Default::default(),
            x_need: Default::default(),
            x_emit: Default::default(),
            x_u: Default::default(),
            x_rend: Default::default(),
            x_fire: Default::default(),
            x_inr: Default::default(),
            x_mask: Default::default(),
            x_dense: Default::default(),
            x_swa: Default::default(),
            x_half: Default::default(),
            x_free: Default::default(),
            take_job: Default::default(),
            act_next: Default::default(),
            row_load: Default::default(),
            y_obpush: Default::default(),
            y_wbpush: Default::default(),
            wbe: Default::default(),
            ob_pop: Default::default(),
            ob_after: Default::default(),
            wb_pop: Default::default(),
            wb_after: Default::default(),
            mc_rem: Default::default(),
            mc_low: Default::default(),
            mc_cta: Default::default(),
            cp_low: Default::default(),
            cp_cta: Default::default(),
            ev_inc: Default::default(),
            ev_yrd: Default::default(),
            ev_wbi: Default::default(),
            ev_ack: Default::default(),
            ev_dfs: Default::default(),
            w_hit: Default::default(),
            w_ctx: Default::default(),
            w_open: Default::default(),
            w_gid: Default::default(),
            g_age: Default::default(),
            g_mine: Default::default(),
            g_inc: Default::default(),
            g_pc: Default::default(),
            wn3: Default::default(),
            d_pf: Default::default(),
            d_s2s: Default::default(),
            x_room: Default::default(),
            mac_o: Default::default(),
            mac_m1: Default::default(),
            mac_m2: Default::default(),
            i2c_ck: Default::default(),
            i2c_win: Default::default(),
            d_b0m1: Default::default(),
            i_sp: Default::default(),
            i_n: Default::default(),
            i_off: Default::default(),
            i_low: Default::default(),
            i_up: Default::default(),
            i_slow: Default::default(),
            i_nlow: Default::default(),
            i_s_lo: Default::default(),
            i_a2_lo: Default::default(),
            i_a3_lo: Default::default(),
            i_a4_lo: Default::default(),
            i_s1: Default::default(),
            i_s2: Default::default(),
            i_s3: Default::default(),
            i_k1: Default::default(),
            i_k2: Default::default(),
            i_k3: Default::default(),
            i_k4: Default::default(),
            i_oob: Default::default(),
            i_last: Default::default(),
        }
    }
}

impl Logic for TmaEngine {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, q0, q0d, q0g, q0x, q1, q1d, q1g, q1x, qn, dstate, dk, j_valid, rg_done,
            ba_taken, j, rg_busy, rg, nr, iss, outstanding, bucket, ra, rh, rh_gen, rob_cnt,
            arr_fw, want_fw, want_fw_v, h_lo_done, rq_head, rq_tail, rq_cnt, rq_fw, rq_fwd, b_act,
            b, r, y, y_prev, pk_vld,
            pk_data, pk_mask, ob_n, mc_sent, cpl_vld, cpl_rem, cpl_word, cpl_tx, wb_n, fault_q
        );
        for i in 0..16 {
            self.g_rd[i].clock.next = self.clock.val();
            self.g_wi[i].clock.next = self.clock.val();
            self.g_wp[i].clock.next = self.clock.val();
        }
        for k in 0..4 {
            self.open[k].clock.next = self.clock.val();
            self.ctx_thread[k].clock.next = self.clock.val();
            self.open[k].d.next = self.open[k].q.val();
            self.ctx_thread[k].d.next = self.ctx_thread[k].q.val();
        }
        for i in 0..3 {
            self.ob[i].clock.next = self.clock.val();
            self.wb[i].clock.next = self.clock.val();
            self.ob[i].d.next = self.ob[i].q.val();
            self.wb[i].d.next = self.wb[i].q.val();
        }
        self.rob_lo.read_clock.next = self.clock.val();
        self.rob_lo.write_clock.next = self.clock.val();
        self.rob_hi.read_clock.next = self.clock.val();
        self.rob_hi.write_clock.next = self.clock.val();
        self.rob_want.read_clock.next = self.clock.val();
        self.rob_want.write_clock.next = self.clock.val();
        self.rob_arr.read_clock.next = self.clock.val();
        self.rob_arr.write_clock.next = self.clock.val();
        self.rq_ram.read_clock.next = self.clock.val();
        self.rq_ram.write_clock.next = self.clock.val();
        self.fault_q.d.next.valid = false;
        self.y.d.next.valid = false;

        // ================= acceptance, commit_group, command queue =================
        self.c_commit.next = self.cmd.val().kind == TmaCmdKind::CommitGroup;
        self.c_store.next = (self.cmd.val().kind == TmaCmdKind::BulkStore)
            || (self.cmd.val().kind == TmaCmdKind::TensorStore);
        // bulk-group contexts: a context is busy while one of its slots counts an op or a
        // write; the command's thread finds its own, else takes a free one
        for i in 0..16 {
            self.g_busy[i].next = (self.g_rd[i].q.val() != 0)
                || (self.g_wi[i].q.val() != 0)
                || (self.g_wp[i].q.val() != 0);
        }
        for k in 0..4 {
            self.x_busy[k].next = false;
        }
        for i in 0..16 {
            if self.g_busy[i].val() {
                if (i.to_bits::<4>() & 12) == 0 {
                    self.x_busy[0].next = true;
                }
                if (i.to_bits::<4>() & 12) == 4 {
                    self.x_busy[1].next = true;
                }
                if (i.to_bits::<4>() & 12) == 8 {
                    self.x_busy[2].next = true;
                }
                if (i.to_bits::<4>() & 12) == 12 {
                    self.x_busy[3].next = true;
                }
            }
        }
        self.c_has.next = false;
        self.c_hsel.next = 0.into();
        self.c_fany.next = false;
        self.c_fsel.next = 0.into();
        for k in 0..4 {
            if self.x_busy[k].val() && (self.ctx_thread[k].q.val() == self.cmd.val().thread) {
                self.c_has.next = true;
                self.c_hsel.next = k.to_bits::<2>();
            }
            if !self.x_busy[k].val() {
                self.c_fany.next = true;
                self.c_fsel.next = k.to_bits::<2>();
            }
        }
        self.c_sel.next = self.c_fsel.val();
        if self.c_has.val() {
            self.c_sel.next = self.c_hsel.val();
        }
        self.c_open.next = 0.into();
        for k in 0..4 {
            if self.c_sel.val() == k.to_bits::<2>() {
                self.c_open.next = self.open[k].q.val();
            }
        }
        self.c_gid.next = (bit_cast::<4, 2>(self.c_sel.val()) << 2) | bit_cast::<4, 2>(self.c_open.val());
        self.c_ngid.next = (self.c_gid.val() & 12) | ((self.c_gid.val() + 1) & 3);
        self.c_noctx.next = self.c_store.val() && !self.c_has.val() && !self.c_fany.val();
        // commit_group of a thread with no context closes an empty group: nothing to count
        self.commit_ok.next = true;
        for i in 0..16 {
            if self.c_has.val() && (self.c_ngid.val().index() == i) && self.g_busy[i].val() {
                self.commit_ok.next = false;
            }
        }
        self.cmd_ready.next = (self.c_commit.val() && self.commit_ok.val())
            || (!self.c_commit.val() && (self.qn.q.val() != 2));
        self.acc.next = self.cmd_valid.val()
            && ((self.c_commit.val() && self.commit_ok.val())
                || (!self.c_commit.val() && (self.qn.q.val() != 2)));
        self.ev_inc.next = self.acc.val() && self.c_store.val() && !self.c_noctx.val();
        for k in 0..4 {
            if self.acc.val()
                && self.c_commit.val()
                && self.c_has.val()
                && (self.c_sel.val() == k.to_bits::<2>())
            {
                self.open[k].d.next = self.c_open.val() + 1;
            }
            if self.ev_inc.val() && (self.c_sel.val() == k.to_bits::<2>()) {
                self.ctx_thread[k].d.next = self.cmd.val().thread;
            }
        }
        // ================= decoder: checks of the head command =================
        self.pop.next = false;
        self.d_tensor.next = (self.q0.q.val().kind == TmaCmdKind::TensorLoad)
            || (self.q0.q.val().kind == TmaCmdKind::TensorStore)
            || (self.q0.q.val().kind == TmaCmdKind::TensorPrefetch);
        self.d_pf.next = (self.q0.q.val().kind == TmaCmdKind::BulkPrefetch)
            || (self.q0.q.val().kind == TmaCmdKind::TensorPrefetch);
        self.d_s2s.next = self.q0.q.val().kind == TmaCmdKind::BulkS2S;
        self.d_store.next = (self.q0.q.val().kind == TmaCmdKind::BulkStore)
            || (self.q0.q.val().kind == TmaCmdKind::TensorStore);
        self.d_es.next = 0.into();
        self.d_float.next = false;
        self.d_rowb.next = 0.into();
        self.d_inv.next = false;
        self.d_kind.next = TmaFaultKind::NoFault;
        self.d_hold.next = false;
        self.d_fault.next = false;
        self.d_fill.next = self.zero16.val();
        // an im2col row is one pixel: channelsPerPixel elements (PTX 5.5.4)
        self.d_b0m1.next = self.q0d.q.val().box0_m1;
        if self.q0d.q.val().im2col {
            self.d_b0m1.next = self.q0d.q.val().channels_m1;
        }
        self.i2c_ck.rank_m1.next = self.q0d.q.val().rank_m1;
        self.i2c_ck.lower0.next = self.q0d.q.val().lower0;
        self.i2c_ck.lower1.next = self.q0d.q.val().lower1;
        self.i2c_ck.lower2.next = self.q0d.q.val().lower2;
        self.i2c_ck.upper0.next = self.q0d.q.val().upper0;
        self.i2c_ck.upper1.next = self.q0d.q.val().upper1;
        self.i2c_ck.upper2.next = self.q0d.q.val().upper2;
        self.i2c_ck.gdim1_m1.next = self.q0d.q.val().gdim1_m1;
        self.i2c_ck.gdim2_m1.next = self.q0d.q.val().gdim2_m1;
        self.i2c_ck.gdim3_m1.next = self.q0d.q.val().gdim3_m1;
        if (self.dstate.q.val() == TmaDecState::Idle)
            && (self.qn.q.val() != 0)
            && !self.j_valid.q.val()
        {
            // element size, float types, boxDim[0] * elementSize (shift-free)
            match self.q0d.q.val().data_type.index() {
                0 => {
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val()) + 1;
                }
                1 => {
                    self.d_es.next = 1.into();
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 2;
                }
                6 => {
                    self.d_es.next = 1.into();
                    self.d_float.next = true;
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 2;
                }
                9 => {
                    self.d_es.next = 1.into();
                    self.d_float.next = true;
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 2;
                }
                2 => {
                    self.d_es.next = 2.into();
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 4;
                }
                3 => {
                    self.d_es.next = 2.into();
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 4;
                }
                7 => {
                    self.d_es.next = 2.into();
                    self.d_float.next = true;
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 4;
                }
                10 => {
                    self.d_es.next = 2.into();
                    self.d_float.next = true;
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 4;
                }
                11 => {
                    self.d_es.next = 2.into();
                    self.d_float.next = true;
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 4;
                }
                12 => {
                    self.d_es.next = 2.into();
                    self.d_float.next = true;
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 4;
                }
                4 => {
                    self.d_es.next = 3.into();
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 8;
                }
                5 => {
                    self.d_es.next = 3.into();
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 8;
                }
                8 => {
                    self.d_es.next = 3.into();
                    self.d_float.next = true;
                    self.d_rowb.next = bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + bit_cast::<24, 8>(self.d_b0m1.val())
                        + 8;
                }
                _ => {}
            }
            // The OOB NaN pattern measured on sm_90 (H200, firmware/programs/tma/oob_nan_fill.ptx,
            // `TensorMap::oob_fill_element`): bytes f7 7f repeated, whatever the element width
            // (0x7ff7 per 16 bits), so one 32-bit word serves every float type.
            if self.q0d.q.val().oob_nan {
                self.d_fill.next.w0 = 0x7ff7_7ff7.into();
                self.d_fill.next.w1 = 0x7ff7_7ff7.into();
                self.d_fill.next.w2 = 0x7ff7_7ff7.into();
                self.d_fill.next.w3 = 0x7ff7_7ff7.into();
            }
            // the header: version, rank, enum values, reserved bits
            if (self.q0d.q.val().version != 1)
                || (self.q0d.q.val().rank_m1 > 4)
                || (self.q0d.q.val().data_type > 12)
                || (self.q0d.q.val().interleave == 3)
                || (self.q0d.q.val().swizzle > 3)
                || (self.q0d.q.val().oob_nan && !self.d_float.val())
            {
                self.d_inv.next = true;
            }
            if (self.q0d.q.val().rsvd_24 != 0)
                || (self.q0d.q.val().rsvd_32 != 0)
                || (self.q0d.q.val().rsvd_503 != 0)
                || (self.q0d.q.val().rsvd_626 != 0)
                || (self.q0d.q.val().rsvd_640 != 0)
                || (self.q0d.q.val().rsvd_672 != 0)
                || (self.q0d.q.val().rsvd_704 != 0)
                || (self.q0d.q.val().rsvd_736 != 0)
                || (self.q0d.q.val().rsvd_768 != 0)
                || (self.q0d.q.val().rsvd_800 != 0)
                || (self.q0d.q.val().rsvd_832 != 0)
                || (self.q0d.q.val().rsvd_864 != 0)
                || (self.q0d.q.val().rsvd_896 != 0)
                || (self.q0d.q.val().rsvd_928 != 0)
                || (self.q0d.q.val().rsvd_960 != 0)
                || (self.q0d.q.val().rsvd_992 != 0)
            {
                self.d_inv.next = true;
            }
            // a tiled map: no im2col fields; an im2col map: no boxDim, the pixel box rules
            // (TmaI2cCheck); both: canonical unused entries, alignment and row rules
            if !self.q0d.q.val().im2col {
                if (self.q0d.q.val().lower0 != 0)
                    || (self.q0d.q.val().lower1 != 0)
                    || (self.q0d.q.val().lower2 != 0)
                    || (self.q0d.q.val().upper0 != 0)
                    || (self.q0d.q.val().upper1 != 0)
                    || (self.q0d.q.val().upper2 != 0)
                    || (self.q0d.q.val().channels_m1 != 0)
                    || (self.q0d.q.val().pixels_m1 != 0)
                {
                    self.d_inv.next = true;
                }
            } else if self.i2c_ck.bad.val()
                || (self.q0d.q.val().box0_m1 != 0)
                || (self.q0d.q.val().box1_m1 != 0)
                || (self.q0d.q.val().box2_m1 != 0)
                || (self.q0d.q.val().box3_m1 != 0)
                || (self.q0d.q.val().box4_m1 != 0)
            {
                self.d_inv.next = true;
            }
            if (self.q0d.q.val().rank_m1 < 4)
                && ((self.q0d.q.val().gdim4_m1 != 0)
                    || (self.q0d.q.val().box4_m1 != 0)
                    || (self.q0d.q.val().estride4_m1 != 0)
                    || (self.q0d.q.val().gstride3_lo != 0)
                    || (self.q0d.q.val().gstride3_hi != 0))
            {
                self.d_inv.next = true;
            }
            if (self.q0d.q.val().rank_m1 < 3)
                && ((self.q0d.q.val().gdim3_m1 != 0)
                    || (self.q0d.q.val().box3_m1 != 0)
                    || (self.q0d.q.val().estride3_m1 != 0)
                    || (self.q0d.q.val().gstride2_lo != 0)
                    || (self.q0d.q.val().gstride2_hi != 0))
            {
                self.d_inv.next = true;
            }
            if (self.q0d.q.val().rank_m1 < 2)
                && ((self.q0d.q.val().gdim2_m1 != 0)
                    || (self.q0d.q.val().box2_m1 != 0)
                    || (self.q0d.q.val().estride2_m1 != 0)
                    || (self.q0d.q.val().gstride1_lo != 0)
                    || (self.q0d.q.val().gstride1_hi != 0))
            {
                self.d_inv.next = true;
            }
            if (self.q0d.q.val().rank_m1 < 1)
                && ((self.q0d.q.val().gdim1_m1 != 0)
                    || (self.q0d.q.val().box1_m1 != 0)
                    || (self.q0d.q.val().estride1_m1 != 0)
                    || (self.q0d.q.val().gstride0_lo != 0)
                    || (self.q0d.q.val().gstride0_hi != 0))
            {
                self.d_inv.next = true;
            }
            if ((self.q0d.q.val().gaddr_lo & 15) != 0)
                || ((self.q0d.q.val().gstride0_lo & 15) != 0)
                || ((self.q0d.q.val().gstride1_lo & 15) != 0)
                || ((self.q0d.q.val().gstride2_lo & 15) != 0)
                || ((self.q0d.q.val().gstride3_lo & 15) != 0)
            {
                self.d_inv.next = true;
            }
            if self.q0d.q.val().im2col && ((self.d_rowb.val() & 15) != 0) {
                self.d_inv.next = true;
            }
            if self.q0d.q.val().interleave == 0 {
                if (self.d_rowb.val() & 15) != 0 {
                    self.d_inv.next = true;
                }
                if ((self.q0d.q.val().swizzle == 1) && (self.d_rowb.val() > 32))
                    || ((self.q0d.q.val().swizzle == 2) && (self.d_rowb.val() > 64))
                    || ((self.q0d.q.val().swizzle == 3) && (self.d_rowb.val() > 128))
                {
                    self.d_inv.next = true;
                }
            }
            // the fault, in the golden model's order
            if self.d_tensor.val() {
                if self.d_inv.val() {
                    self.d_kind.next = TmaFaultKind::TensorMapInvalid;
                } else if self.q0.q.val().dims != (self.q0d.q.val().rank_m1 + 1) {
                    self.d_kind.next = TmaFaultKind::TmaCoordOutOfRange;
                } else if self.q0.q.val().im2col != self.q0d.q.val().im2col {
                    self.d_kind.next = TmaFaultKind::TensorMapInvalid;
                } else if self.q0d.q.val().interleave != 0 {
                    self.d_kind.next = TmaFaultKind::UnsupportedInterleave;
                } else if !self.d_pf.val() && ((self.q0.q.val().smem & 127) != 0) {
                    self.d_kind.next = TmaFaultKind::TmaMisaligned;
                } else if !self.d_store.val()
                    && !self.d_pf.val()
                    && (self.q0.q.val().cta_mask == 0)
                {
                    self.d_kind.next = TmaFaultKind::ClusterRankOutOfRange;
                }
            } else if ((self.q0.q.val().gaddr_lo & 15) != 0)
                || ((self.q0.q.val().smem & 15) != 0)
                || ((self.q0.q.val().size & 15) != 0)
                || (self.d_s2s.val() && ((self.q0.q.val().dsmem & 15) != 0))
            {
                self.d_kind.next = TmaFaultKind::TmaMisaligned;
            } else if !self.d_store.val()
                && !self.d_pf.val()
                && (self.q0.q.val().cta_mask == 0)
            {
                self.d_kind.next = TmaFaultKind::ClusterRankOutOfRange;
            }
            // a store without a context: refused before anything else (it joined no group)
            if self.q0x.q.val() {
                self.d_kind.next = TmaFaultKind::UnsupportedThreads;
            }
            // a refused store leaves its group: wait while Y or WB decrement a counter
            self.d_hold.next = self.d_store.val()
                && ((self.y.q.val().valid && self.y.q.val().store && self.y.q.val().jlast)
                    || ((self.wb_n.q.val() != 0) && self.wb[0].q.val().op_last));
            self.d_fault.next =
                (self.d_kind.val() != TmaFaultKind::NoFault) && !self.d_hold.val();
            if self.d_fault.val() {
                self.fault_q.d.next.valid = true;
                self.fault_q.d.next.kind = self.d_kind.val();
                self.fault_q.d.next.thread = self.q0.q.val().thread;
                self.pop.next = true;
            }
            // accepted: J's constant fields; neutral outer dimensions
            if self.d_kind.val() == TmaFaultKind::NoFault {
                // an S2S copy reads like a store; a prefetch has no destination
                self.j.d.next.store = self.d_store.val() || self.d_s2s.val();
                self.j.d.next.s2s = self.d_s2s.val();
                self.j.d.next.pf = self.d_pf.val();
                self.j.d.next.doff = self.q0.q.val().dsmem - self.q0.q.val().smem;
                self.j.d.next.red_op = self.q0.q.val().red_op;
                self.j.d.next.red_type = self.q0.q.val().red_type;
                self.j.d.next.base = self.q0.q.val().smem;
                self.j.d.next.ctam = self.q0.q.val().cta_mask;
                if self.d_pf.val() {
                    self.j.d.next.ctam = 0.into();
                }
                self.j.d.next.word = self.q0.q.val().mbar;
                self.j.d.next.grp = self.q0g.q.val();
                self.j.d.next.es = self.d_es.val();
                self.j.d.next.fill = self.d_fill.val();
                self.j.d.next.box1 = 1.into();
                self.j.d.next.box2 = 1.into();
                self.j.d.next.box3 = 1.into();
                self.j.d.next.box4 = 1.into();
                self.j.d.next.e1 = 1.into();
                self.j.d.next.e2 = 1.into();
                self.j.d.next.e3 = 1.into();
                self.j.d.next.e4 = 1.into();
                self.j.d.next.lo1 = 0.into();
                self.j.d.next.lo2 = 0.into();
                self.j.d.next.lo3 = 0.into();
                self.j.d.next.lo4 = 0.into();
                self.j.d.next.hi1 = 1.into();
                self.j.d.next.hi2 = 1.into();
                self.j.d.next.hi3 = 1.into();
                self.j.d.next.hi4 = 1.into();
                self.j.d.next.st1_lo = 0.into();
                self.j.d.next.st1_hi = 0.into();
                self.j.d.next.st2_lo = 0.into();
                self.j.d.next.st2_hi = 0.into();
                self.j.d.next.st3_lo = 0.into();
                self.j.d.next.st3_hi = 0.into();
                self.j.d.next.st4_lo = 0.into();
                self.j.d.next.st4_hi = 0.into();
                // im2col: windows that never go out of bounds, for the dimensions a rank lacks
                self.j.d.next.im2col = self.d_tensor.val() && self.q0.q.val().im2col;
                self.j.d.next.pix_m1 = self.q0d.q.val().pixels_m1;
                self.j.d.next.kcl1 = 0.into();
                self.j.d.next.kcl2 = 0.into();
                self.j.d.next.kcl3 = 0.into();
                self.j.d.next.kcl4 = 0.into();
                self.j.d.next.kch1 = 16384.into();
                self.j.d.next.kch2 = 16384.into();
                self.j.d.next.kch3 = 16384.into();
                self.j.d.next.kch4 = 16384.into();
                self.j.d.next.kll1 = 0.into();
                self.j.d.next.kll2 = 0.into();
                self.j.d.next.kll3 = 0.into();
                self.j.d.next.klh1 = 16384.into();
                self.j.d.next.klh2 = 16384.into();
                self.j.d.next.klh3 = 16384.into();
                self.j.d.next.kwc1 = 0.into();
                self.j.d.next.kwc2 = 0.into();
                self.j.d.next.kwc3 = 0.into();
                self.j.d.next.kwl1 = 0.into();
                self.j.d.next.kwl2 = 0.into();
                self.j.d.next.kwl3 = 0.into();
                self.j.d.next.mb2_lo = 0.into();
                self.j.d.next.mb2_hi = 0.into();
                self.j.d.next.mb3_lo = 0.into();
                self.j.d.next.mb3_hi = 0.into();
                self.j.d.next.mb4_lo = 0.into();
                self.j.d.next.mb4_hi = 0.into();
                if self.d_tensor.val() {
                    self.j.d.next.rank = self.q0d.q.val().rank_m1 + 1;
                    self.j.d.next.swz = bit_cast::<2, 3>(self.q0d.q.val().swizzle);
                    self.j.d.next.a_lo = self.q0d.q.val().gaddr_lo;
                    self.j.d.next.a_hi = self.q0d.q.val().gaddr_hi;
                    self.dstate.d.next = TmaDecState::Dim;
                    self.dk.d.next = 0.into();
                } else {
                    self.j.d.next.rank = 1.into();
                    self.j.d.next.swz = 0.into();
                    self.j.d.next.a_lo = self.q0.q.val().gaddr_lo;
                    self.j.d.next.a_hi = self.q0.q.val().gaddr_hi;
                    self.j.d.next.lo_b = 0.into();
                    self.j.d.next.hi_b = bit_cast::<24, 20>(self.q0.q.val().size);
                    self.j.d.next.rot = 0.into();
                    self.j.d.next.rowbytes = bit_cast::<24, 20>(self.q0.q.val().size);
                    self.dstate.d.next = TmaDecState::Fin;
                }
            }
        }

        // ================= decoder: one dimension per cycle =================
        self.d_c.next = 0.into();
        self.d_negc.next = 0.into();
        self.d_dim.next = 0.into();
        self.d_box.next = 1.into();
        self.d_e.next = 1.into();
        self.d_sb_lo.next = 0.into();
        self.d_sb_hi.next = 0.into();
        if self.dstate.q.val() == TmaDecState::Dim {
            match self.dk.q.val().index() {
                0 => {
                    self.d_c.next = self.q0.q.val().c0;
                    self.d_negc.next = bits::<32>(0) - self.q0.q.val().c0;
                    self.d_dim.next = self.q0d.q.val().gdim0_m1;
                    self.d_box.next = bit_cast::<9, 8>(self.d_b0m1.val()) + 1;
                    match self.j.q.val().es.index() {
                        0 => {
                            self.d_sb_lo.next = 1.into();
                        }
                        1 => {
                            self.d_sb_lo.next = 2.into();
                        }
                        2 => {
                            self.d_sb_lo.next = 4.into();
                        }
                        _ => {
                            self.d_sb_lo.next = 8.into();
                        }
                    }
                }
                1 => {
                    self.d_c.next = self.q0.q.val().c1;
                    self.d_negc.next = bits::<32>(0) - self.q0.q.val().c1;
                    self.d_dim.next = self.q0d.q.val().gdim1_m1;
                    self.d_box.next = bit_cast::<9, 8>(self.q0d.q.val().box1_m1) + 1;
                    self.d_e.next = bit_cast::<9, 3>(self.q0d.q.val().estride1_m1) + 1;
                    self.d_sb_lo.next = self.q0d.q.val().gstride0_lo;
                    self.d_sb_hi.next = self.q0d.q.val().gstride0_hi;
                }
                2 => {
                    self.d_c.next = self.q0.q.val().c2;
                    self.d_negc.next = bits::<32>(0) - self.q0.q.val().c2;
                    self.d_dim.next = self.q0d.q.val().gdim2_m1;
                    self.d_box.next = bit_cast::<9, 8>(self.q0d.q.val().box2_m1) + 1;
                    self.d_e.next = bit_cast::<9, 3>(self.q0d.q.val().estride2_m1) + 1;
                    self.d_sb_lo.next = self.q0d.q.val().gstride1_lo;
                    self.d_sb_hi.next = self.q0d.q.val().gstride1_hi;
                }
                3 => {
                    self.d_c.next = self.q0.q.val().c3;
                    self.d_negc.next = bits::<32>(0) - self.q0.q.val().c3;
                    self.d_dim.next = self.q0d.q.val().gdim3_m1;
                    self.d_box.next = bit_cast::<9, 8>(self.q0d.q.val().box3_m1) + 1;
                    self.d_e.next = bit_cast::<9, 3>(self.q0d.q.val().estride3_m1) + 1;
                    self.d_sb_lo.next = self.q0d.q.val().gstride2_lo;
                    self.d_sb_hi.next = self.q0d.q.val().gstride2_hi;
                }
                _ => {
                    self.d_c.next = self.q0.q.val().c4;
                    self.d_negc.next = bits::<32>(0) - self.q0.q.val().c4;
                    self.d_dim.next = self.q0d.q.val().gdim4_m1;
                    self.d_box.next = bit_cast::<9, 8>(self.q0d.q.val().box4_m1) + 1;
                    self.d_e.next = bit_cast::<9, 3>(self.q0d.q.val().estride4_m1) + 1;
                    self.d_sb_lo.next = self.q0d.q.val().gstride3_lo;
                    self.d_sb_hi.next = self.q0d.q.val().gstride3_hi;
                }
            }
        }
        // im2col (PTX 5.5.4): spatial dimensions 1..rank-2 take the offset and the pixel box
        // corners; the N dimension (rank-1) steps by 1
        self.i_sp.next = false;
        self.i_n.next = false;
        self.i_off.next = 0.into();
        self.i_low.next = 0.into();
        self.i_up.next = 0.into();
        if (self.dstate.q.val() == TmaDecState::Dim)
            && self.j.q.val().im2col
            && (self.dk.q.val() != 0)
        {
            if (self.dk.q.val() + 1) == self.j.q.val().rank {
                self.i_n.next = true;
                self.d_e.next = 1.into();
            } else {
                self.i_sp.next = true;
                match self.dk.q.val().index() {
                    1 => {
                        self.i_off.next = self.q0.q.val().o0;
                        self.i_low.next = self.q0d.q.val().lower0;
                        self.i_up.next = self.q0d.q.val().upper0;
                    }
                    2 => {
                        self.i_off.next = self.q0.q.val().o1;
                        self.i_low.next = self.q0d.q.val().lower1;
                        self.i_up.next = self.q0d.q.val().upper1;
                    }
                    _ => {
                        self.i_off.next = self.q0.q.val().o2;
                        self.i_low.next = self.q0d.q.val().lower2;
                        self.i_up.next = self.q0d.q.val().upper2;
                    }
                }
            }
        }
        self.i_slow.next = bit_cast::<32, 16>(self.i_low.val());
        if self.i_low.val().get_bit(15) {
            self.i_slow.next = bit_cast::<32, 16>(self.i_low.val()) | 0xFFFF_0000_u64;
        }
        self.i_nlow.next = bits::<32>(0) - self.i_slow.val();
        // start += coord * stride (+ im2col offset * stride); step = elementStride * globalStride
        self.mac_a.acc_lo.next = self.j.q.val().a_lo;
        self.mac_a.acc_hi.next = self.j.q.val().a_hi;
        self.mac_a.a.next = self.d_c.val();
        self.mac_a.b_lo.next = self.d_sb_lo.val();
        self.mac_a.b_hi.next = self.d_sb_hi.val();
        self.mac_s.acc_lo.next = 0.into();
        self.mac_s.acc_hi.next = 0.into();
        self.mac_s.a.next = bit_cast::<32, 9>(self.d_e.val());
        self.mac_s.b_lo.next = self.d_sb_lo.val();
        self.mac_s.b_hi.next = self.d_sb_hi.val();
        self.mac_o.acc_lo.next = self.mac_a.p_lo.val();
        self.mac_o.acc_hi.next = self.mac_a.p_hi.val();
        self.mac_o.a.next = bit_cast::<32, 16>(self.i_off.val());
        self.mac_o.b_lo.next = self.d_sb_lo.val();
        self.mac_o.b_hi.next = self.d_sb_hi.val();
        // im2col: start - A(dk+1) = start - A(dk) + (coord - lower) * stride (two multiply-adds:
        // coord - lower may not fit 32 bits)
        self.mac_m1.acc_lo.next = 0.into();
        self.mac_m1.acc_hi.next = 0.into();
        if self.dk.q.val() == 2 {
            self.mac_m1.acc_lo.next = self.j.q.val().mb2_lo;
            self.mac_m1.acc_hi.next = self.j.q.val().mb2_hi;
        }
        if self.dk.q.val() == 3 {
            self.mac_m1.acc_lo.next = self.j.q.val().mb3_lo;
            self.mac_m1.acc_hi.next = self.j.q.val().mb3_hi;
        }
        self.mac_m1.a.next = self.d_c.val();
        self.mac_m1.b_lo.next = self.d_sb_lo.val();
        self.mac_m1.b_hi.next = self.d_sb_hi.val();
        self.mac_m2.acc_lo.next = self.mac_m1.p_lo.val();
        self.mac_m2.acc_hi.next = self.mac_m1.p_hi.val();
        self.mac_m2.a.next = self.i_nlow.val();
        self.mac_m2.b_lo.next = self.d_sb_lo.val();
        self.mac_m2.b_hi.next = self.d_sb_hi.val();
        self.i2c_win.c.next = self.d_c.val();
        self.i2c_win.off.next = self.i_off.val();
        self.i2c_win.lower.next = self.i_low.val();
        self.i2c_win.upper.next = self.i_up.val();
        self.i2c_win.gdim_m1.next = self.d_dim.val();
        // the in-bounds window [lo, hi) of box indices k: 0 <= coord + k < globalDim, clamped
        // to 0..=256 (box indices are below 256)
        self.d_diff.next = self.d_dim.val() - self.d_c.val();
        self.d_sum.next = self.d_dim.val() + self.d_negc.val();
        self.d_lo.next = 0.into();
        self.d_hi.next = 256.into();
        if self.d_c.val().get_bit(31) {
            if self.d_negc.val() >= 256 {
                self.d_lo.next = 256.into();
            } else {
                self.d_lo.next = bit_cast::<9, 32>(self.d_negc.val());
            }
            if (self.d_dim.val() < 255) && (self.d_negc.val() < 256) && (self.d_sum.val() < 255)
            {
                self.d_hi.next = bit_cast::<9, 32>(self.d_sum.val()) + 1;
            }
        } else if self.d_c.val() > self.d_dim.val() {
            self.d_hi.next = 0.into();
        } else if self.d_diff.val() < 255 {
            self.d_hi.next = bit_cast::<9, 32>(self.d_diff.val()) + 1;
        }
        // dimension 0: the window clamped to the box, in elements
        self.d_lo0.next = bit_cast::<24, 9>(self.d_lo.val());
        if self.d_lo.val() > self.d_box.val() {
            self.d_lo0.next = bit_cast::<24, 9>(self.d_box.val());
        }
        self.d_hi0.next = bit_cast::<24, 9>(self.d_hi.val());
        if self.d_hi.val() > self.d_box.val() {
            self.d_hi0.next = bit_cast::<24, 9>(self.d_box.val());
        }
        if self.dstate.q.val() == TmaDecState::Dim {
            self.j.d.next.a_lo = self.mac_o.p_lo.val();
            self.j.d.next.a_hi = self.mac_o.p_hi.val();
            if self.i_sp.val() {
                match self.dk.q.val().index() {
                    1 => {
                        self.j.d.next.mb2_lo = self.mac_m2.p_lo.val();
                        self.j.d.next.mb2_hi = self.mac_m2.p_hi.val();
                        self.j.d.next.kcl1 = self.i2c_win.kcl.val();
                        self.j.d.next.kch1 = self.i2c_win.kch.val();
                        self.j.d.next.kll1 = self.i2c_win.kll.val();
                        self.j.d.next.klh1 = self.i2c_win.klh.val();
                        self.j.d.next.kwc1 = self.i2c_win.kwc.val();
                        self.j.d.next.kwl1 = self.i2c_win.kwl.val();
                    }
                    2 => {
                        self.j.d.next.mb3_lo = self.mac_m2.p_lo.val();
                        self.j.d.next.mb3_hi = self.mac_m2.p_hi.val();
                        self.j.d.next.kcl2 = self.i2c_win.kcl.val();
                        self.j.d.next.kch2 = self.i2c_win.kch.val();
                        self.j.d.next.kll2 = self.i2c_win.kll.val();
                        self.j.d.next.klh2 = self.i2c_win.klh.val();
                        self.j.d.next.kwc2 = self.i2c_win.kwc.val();
                        self.j.d.next.kwl2 = self.i2c_win.kwl.val();
                    }
                    _ => {
                        self.j.d.next.mb4_lo = self.mac_m2.p_lo.val();
                        self.j.d.next.mb4_hi = self.mac_m2.p_hi.val();
                        self.j.d.next.kcl3 = self.i2c_win.kcl.val();
                        self.j.d.next.kch3 = self.i2c_win.kch.val();
                        self.j.d.next.kll3 = self.i2c_win.kll.val();
                        self.j.d.next.klh3 = self.i2c_win.klh.val();
                        self.j.d.next.kwc3 = self.i2c_win.kwc.val();
                        self.j.d.next.kwl3 = self.i2c_win.kwl.val();
                    }
                }
            }
            if self.i_n.val() {
                match self.dk.q.val().index() {
                    2 => {
                        self.j.d.next.kcl2 = self.i2c_win.kcl.val();
                        self.j.d.next.kch2 = self.i2c_win.kch.val();
                    }
                    3 => {
                        self.j.d.next.kcl3 = self.i2c_win.kcl.val();
                        self.j.d.next.kch3 = self.i2c_win.kch.val();
                    }
                    _ => {
                        self.j.d.next.kcl4 = self.i2c_win.kcl.val();
                        self.j.d.next.kch4 = self.i2c_win.kch.val();
                    }
                }
            }
            match self.dk.q.val().index() {
                0 => {
                    // gaddr is 16-byte aligned: the start's low bits are (c0 * elementSize) mod 16
                    self.j.d.next.rot = bit_cast::<4, 32>(self.mac_a.p_lo.val());
                    match self.j.q.val().es.index() {
                        0 => {
                            self.j.d.next.lo_b = self.d_lo0.val();
                            self.j.d.next.hi_b = self.d_hi0.val();
                            self.j.d.next.rowbytes = bit_cast::<24, 9>(self.d_box.val());
                        }
                        1 => {
                            self.j.d.next.lo_b = self.d_lo0.val() + self.d_lo0.val();
                            self.j.d.next.hi_b = self.d_hi0.val() + self.d_hi0.val();
                            self.j.d.next.rowbytes = bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val());
                        }
                        2 => {
                            self.j.d.next.lo_b = self.d_lo0.val()
                                + self.d_lo0.val()
                                + self.d_lo0.val()
                                + self.d_lo0.val();
                            self.j.d.next.hi_b = self.d_hi0.val()
                                + self.d_hi0.val()
                                + self.d_hi0.val()
                                + self.d_hi0.val();
                            self.j.d.next.rowbytes = bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val());
                        }
                        _ => {
                            self.j.d.next.lo_b = self.d_lo0.val()
                                + self.d_lo0.val()
                                + self.d_lo0.val()
                                + self.d_lo0.val()
                                + self.d_lo0.val()
                                + self.d_lo0.val()
                                + self.d_lo0.val()
                                + self.d_lo0.val();
                            self.j.d.next.hi_b = self.d_hi0.val()
                                + self.d_hi0.val()
                                + self.d_hi0.val()
                                + self.d_hi0.val()
                                + self.d_hi0.val()
                                + self.d_hi0.val()
                                + self.d_hi0.val()
                                + self.d_hi0.val();
                            self.j.d.next.rowbytes = bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val())
                                + bit_cast::<24, 9>(self.d_box.val());
                        }
                    }
                }
                1 => {
                    self.j.d.next.box1 = self.d_box.val();
                    self.j.d.next.e1 = self.d_e.val();
                    self.j.d.next.lo1 = self.d_lo.val();
                    self.j.d.next.hi1 = self.d_hi.val();
                    self.j.d.next.st1_lo = self.mac_s.p_lo.val();
                    self.j.d.next.st1_hi = self.mac_s.p_hi.val();
                }
                2 => {
                    self.j.d.next.box2 = self.d_box.val();
                    self.j.d.next.e2 = self.d_e.val();
                    self.j.d.next.lo2 = self.d_lo.val();
                    self.j.d.next.hi2 = self.d_hi.val();
                    self.j.d.next.st2_lo = self.mac_s.p_lo.val();
                    self.j.d.next.st2_hi = self.mac_s.p_hi.val();
                }
                3 => {
                    self.j.d.next.box3 = self.d_box.val();
                    self.j.d.next.e3 = self.d_e.val();
                    self.j.d.next.lo3 = self.d_lo.val();
                    self.j.d.next.hi3 = self.d_hi.val();
                    self.j.d.next.st3_lo = self.mac_s.p_lo.val();
                    self.j.d.next.st3_hi = self.mac_s.p_hi.val();
                }
                _ => {
                    self.j.d.next.box4 = self.d_box.val();
                    self.j.d.next.e4 = self.d_e.val();
                    self.j.d.next.lo4 = self.d_lo.val();
                    self.j.d.next.hi4 = self.d_hi.val();
                    self.j.d.next.st4_lo = self.mac_s.p_lo.val();
                    self.j.d.next.st4_hi = self.mac_s.p_hi.val();
                }
            }
            self.dk.d.next = self.dk.q.val() + 1;
            if (self.dk.q.val() + 1) == self.j.q.val().rank {
                self.dstate.d.next = TmaDecState::Fin;
            }
        }
        // ================= decoder: per-job constants; J valid; RG starts =================
        self.f_nb.next = 0.into();
        self.f_ca_b.next = 0.into();
        self.f_cb_b.next = 0.into();
        self.f_mlo.next = 0.into();
        self.f_mhi.next = 0.into();
        // im2col: the nested bases A2..A4 have the spatial dimensions below at their lower corners
        self.i_s_lo.next = self.j.q.val().a_lo & 0xFFFF_FFF0_u64;
        self.i_a2_lo.next = self.i_s_lo.val() - self.j.q.val().mb2_lo;
        self.i_a3_lo.next = self.i_s_lo.val() - self.j.q.val().mb3_lo;
        self.i_a4_lo.next = self.i_s_lo.val() - self.j.q.val().mb4_lo;
        if self.dstate.q.val() == TmaDecState::Fin {
            // (a shift, not `get_bits`: a part select of a struct field's slice is not Verilog)
            self.f_nb.next = bit_cast::<16, 24>(self.j.q.val().rowbytes >> 4);
            self.f_ca_b.next = self.j.q.val().lo_b + bit_cast::<24, 4>(self.j.q.val().rot);
            self.f_cb_b.next = self.j.q.val().hi_b + bit_cast::<24, 4>(self.j.q.val().rot) - 1;
            if self.j.q.val().store {
                // a store's output unit is a global chunk: its bytes start rot bytes early
                self.f_mlo.next = self.f_ca_b.val();
                self.f_mhi.next = self.f_cb_b.val();
            } else {
                self.f_mlo.next = self.j.q.val().lo_b;
                self.f_mhi.next = self.j.q.val().hi_b - 1;
            }
            self.j.d.next.empty = self.j.q.val().hi_b <= self.j.q.val().lo_b;
            self.j.d.next.zero = self.f_nb.val() == 0;
            self.j.d.next.nb = self.f_nb.val();
            if self.f_nb.val() == 0 {
                self.j.d.next.ns_m1 = 0.into();
            } else if self.j.q.val().rot != 0 {
                self.j.d.next.ns_m1 = self.f_nb.val();
            } else {
                self.j.d.next.ns_m1 = self.f_nb.val() - 1;
            }
            self.j.d.next.ca = self.f_ca_b.val().get_bits::<16>(4);
            self.j.d.next.cb = self.f_cb_b.val().get_bits::<16>(4);
            self.j.d.next.jl = self.f_mlo.val().get_bits::<16>(4);
            self.j.d.next.jh = self.f_mhi.val().get_bits::<16>(4);
            self.j.d.next.offa = self.f_ca_b.val() & 0xFF_FFF0;
            match bit_cast::<4, 24>(self.f_mlo.val()).index() {
                0 => {
                    self.j.d.next.lomask = 0xFFFF.into();
                }
                1 => {
                    self.j.d.next.lomask = 0xFFFE.into();
                }
                2 => {
                    self.j.d.next.lomask = 0xFFFC.into();
                }
                3 => {
                    self.j.d.next.lomask = 0xFFF8.into();
                }
                4 => {
                    self.j.d.next.lomask = 0xFFF0.into();
                }
                5 => {
                    self.j.d.next.lomask = 0xFFE0.into();
                }
                6 => {
                    self.j.d.next.lomask = 0xFFC0.into();
                }
                7 => {
                    self.j.d.next.lomask = 0xFF80.into();
                }
                8 => {
                    self.j.d.next.lomask = 0xFF00.into();
                }
                9 => {
                    self.j.d.next.lomask = 0xFE00.into();
                }
                10 => {
                    self.j.d.next.lomask = 0xFC00.into();
                }
                11 => {
                    self.j.d.next.lomask = 0xF800.into();
                }
                12 => {
                    self.j.d.next.lomask = 0xF000.into();
                }
                13 => {
                    self.j.d.next.lomask = 0xE000.into();
                }
                14 => {
                    self.j.d.next.lomask = 0xC000.into();
                }
                _ => {
                    self.j.d.next.lomask = 0x8000.into();
                }
            }
            match bit_cast::<4, 24>(self.f_mhi.val()).index() {
                0 => {
                    self.j.d.next.himask = 0x0001.into();
                }
                1 => {
                    self.j.d.next.himask = 0x0003.into();
                }
                2 => {
                    self.j.d.next.himask = 0x0007.into();
                }
                3 => {
                    self.j.d.next.himask = 0x000F.into();
                }
                4 => {
                    self.j.d.next.himask = 0x001F.into();
                }
                5 => {
                    self.j.d.next.himask = 0x003F.into();
                }
                6 => {
                    self.j.d.next.himask = 0x007F.into();
                }
                7 => {
                    self.j.d.next.himask = 0x00FF.into();
                }
                8 => {
                    self.j.d.next.himask = 0x01FF.into();
                }
                9 => {
                    self.j.d.next.himask = 0x03FF.into();
                }
                10 => {
                    self.j.d.next.himask = 0x07FF.into();
                }
                11 => {
                    self.j.d.next.himask = 0x0FFF.into();
                }
                12 => {
                    self.j.d.next.himask = 0x1FFF.into();
                }
                13 => {
                    self.j.d.next.himask = 0x3FFF.into();
                }
                14 => {
                    self.j.d.next.himask = 0x7FFF.into();
                }
                _ => {
                    self.j.d.next.himask = 0xFFFF.into();
                }
            }
            if self.j.q.val().store {
                self.j.d.next.off = bits::<4>(0) - self.j.q.val().rot;
                self.j.d.next.d = false;
            } else {
                self.j.d.next.off = self.j.q.val().rot;
                self.j.d.next.d = self.j.q.val().rot != 0;
            }
            self.j_valid.d.next = true;
            self.pop.next = true;
            self.dstate.d.next = TmaDecState::Idle;
            // RG starts at the 16-byte aligned start row
            self.rg_busy.d.next = true;
            self.rg.d.next.t1 = 0.into();
            self.rg.d.next.t2 = 0.into();
            self.rg.d.next.t3 = 0.into();
            self.rg.d.next.t4 = 0.into();
            self.rg.d.next.a1_lo = self.j.q.val().a_lo & 0xFFFF_FFF0_u64;
            self.rg.d.next.a2_lo = self.j.q.val().a_lo & 0xFFFF_FFF0_u64;
            self.rg.d.next.a3_lo = self.j.q.val().a_lo & 0xFFFF_FFF0_u64;
            self.rg.d.next.a4_lo = self.j.q.val().a_lo & 0xFFFF_FFF0_u64;
            self.rg.d.next.a1_hi = self.j.q.val().a_hi;
            self.rg.d.next.a2_hi = self.j.q.val().a_hi;
            self.rg.d.next.a3_hi = self.j.q.val().a_hi;
            self.rg.d.next.a4_hi = self.j.q.val().a_hi;
            self.rg.d.next.k1 = 0.into();
            self.rg.d.next.k2 = 0.into();
            self.rg.d.next.k3 = 0.into();
            self.rg.d.next.k4 = 0.into();
            self.rg.d.next.sel1 = false;
            self.rg.d.next.sel2 = false;
            self.rg.d.next.sel3 = false;
            self.rg.d.next.pix = 0.into();
            if self.j.q.val().im2col {
                self.rg.d.next.a2_lo = self.i_a2_lo.val();
                self.rg.d.next.a3_lo = self.i_a3_lo.val();
                self.rg.d.next.a4_lo = self.i_a4_lo.val();
                self.rg.d.next.a2_hi = self.j.q.val().a_hi - self.j.q.val().mb2_hi;
                if self.i_s_lo.val() < self.j.q.val().mb2_lo {
                    self.rg.d.next.a2_hi = self.j.q.val().a_hi - self.j.q.val().mb2_hi - 1;
                }
                self.rg.d.next.a3_hi = self.j.q.val().a_hi - self.j.q.val().mb3_hi;
                if self.i_s_lo.val() < self.j.q.val().mb3_lo {
                    self.rg.d.next.a3_hi = self.j.q.val().a_hi - self.j.q.val().mb3_hi - 1;
                }
                self.rg.d.next.a4_hi = self.j.q.val().a_hi - self.j.q.val().mb4_hi;
                if self.i_s_lo.val() < self.j.q.val().mb4_lo {
                    self.rg.d.next.a4_hi = self.j.q.val().a_hi - self.j.q.val().mb4_hi - 1;
                }
            }
        }

        // ================= command queue: pop (decoded / refused head), push =================
        self.qn_after.next = self.qn.q.val();
        if self.pop.val() {
            self.qn_after.next = self.qn.q.val() - 1;
            self.q0.d.next = self.q1.q.val();
            self.q0d.d.next = self.q1d.q.val();
            self.q0g.d.next = self.q1g.q.val();
            self.q0x.d.next = self.q1x.q.val();
        }
        self.qn.d.next = self.qn_after.val();
        if self.acc.val() && !self.c_commit.val() {
            self.qn.d.next = self.qn_after.val() + 1;
            if self.qn_after.val() == 0 {
                self.q0.d.next = self.cmd.val();
                self.q0d.d.next = self.cmd_desc.val();
                self.q0g.d.next = self.c_gid.val();
                self.q0x.d.next = self.c_noctx.val();
            } else {
                self.q1.d.next = self.cmd.val();
                self.q1d.d.next = self.cmd_desc.val();
                self.q1g.d.next = self.c_gid.val();
                self.q1x.d.next = self.c_noctx.val();
            }
        }

        // ================= issuer: one sector read per cycle =================
        // the candidate: the row being issued, else the next row
        if self.iss.q.val().valid {
            self.c.next = self.iss.q.val();
        } else {
            self.c.next = self.nr.q.val();
        }
        self.c_even.next = !self.c.val().odd;
        // a write of WB has priority over reads
        self.wr_want.next = (self.wb_n.q.val() != 0)
            && self.wb[0].q.val().write
            && (self.outstanding.q.val() < self.max_out.val())
            && (self.bucket.q.val() >= 32);
        self.gmem_req_valid.next = self.wr_want.val()
            || (self.c.val().valid
                && (self.outstanding.q.val() < self.max_out.val())
                && (self.bucket.q.val() >= 32)
                && (self.rob_cnt.q.val() != 256));
        self.rd_issue.next = !self.wr_want.val()
            && self.c.val().valid
            && (self.outstanding.q.val() < self.max_out.val())
            && (self.bucket.q.val() >= 32)
            && (self.rob_cnt.q.val() != 256)
            && self.gmem_req_ready.val();
        self.wr_issue.next = self.wr_want.val() && self.gmem_req_ready.val();
        if self.wr_want.val() {
            self.gmem_req.next.addr_lo = self.wb[0].q.val().addr_lo;
            self.gmem_req.next.addr_hi = self.wb[0].q.val().addr_hi;
            self.gmem_req.next.tag = bit_cast::<8, 4>(self.wb[0].q.val().grp);
            self.gmem_req.next.write = true;
            self.gmem_req.next.data_lo = self.wb[0].q.val().data_lo;
            self.gmem_req.next.data_hi = self.wb[0].q.val().data_hi;
            self.gmem_req.next.mask_lo = self.wb[0].q.val().mask_lo;
            self.gmem_req.next.mask_hi = self.wb[0].q.val().mask_hi;
            self.gmem_req.next.red_op = self.wb[0].q.val().red_op;
            self.gmem_req.next.red_type = self.wb[0].q.val().red_type;
        } else {
            self.gmem_req.next.addr_lo = self.c.val().s_lo;
            self.gmem_req.next.addr_hi = self.c.val().s_hi;
            self.gmem_req.next.tag = self.ra.q.val();
            self.gmem_req.next.write = false;
            self.gmem_req.next.data_lo = self.zero16.val();
            self.gmem_req.next.data_hi = self.zero16.val();
            self.gmem_req.next.mask_lo = 0.into();
            self.gmem_req.next.mask_hi = 0.into();
            self.gmem_req.next.red_op = TmaRedOp::Copy;
            self.gmem_req.next.red_type = TmaRedType::B32;
        }
        // the halves the sector's row wants, into rob_want[ra]
        // (a 1-bit Local: `!odd` inline would be widened and inverted in Verilog)
        self.i_want.next = 0.into();
        self.i_want.next = self.i_want.val().replace_bit(0, self.c_even.val()).replace_bit(
            1,
            self.c.val().odd || (self.c.val().p < self.c.val().cb),
        );
        self.rob_want.write_address.next = self.ra.q.val();
        self.rob_want.write_data.next = self.i_want.val();
        self.rob_want.write_enable.next = self.rd_issue.val();
        if self.rd_issue.val() {
            self.ra.d.next = self.ra.q.val() + 1;
            if !self.iss.q.val().valid {
                self.nr.d.next.valid = false;
            }
            self.iss.d.next.cb = self.c.val().cb;
            self.iss.d.next.odd = false;
            self.iss.d.next.s_lo = self.c.val().s_lo + 32;
            if self.c.val().s_lo >= 0xFFFF_FFE0_u64 {
                self.iss.d.next.s_hi = self.c.val().s_hi + 1;
            } else {
                self.iss.d.next.s_hi = self.c.val().s_hi;
            }
            if self.c.val().odd {
                self.iss.d.next.p = self.c.val().p + 1;
                self.iss.d.next.valid = self.c.val().p < self.c.val().cb;
            } else {
                self.iss.d.next.p = self.c.val().p + 2;
                self.iss.d.next.valid = (self.c.val().p + 1) < self.c.val().cb;
            }
        }
        // credits and the token bucket
        if (self.rd_issue.val() || self.wr_issue.val()) && !self.gmem_resp_valid.val() {
            self.outstanding.d.next = self.outstanding.q.val() + 1;
        }
        if !(self.rd_issue.val() || self.wr_issue.val()) && self.gmem_resp_valid.val() {
            self.outstanding.d.next = self.outstanding.q.val() - 1;
        }
        self.bk_add.next = self.bucket.q.val() + self.bpc.val();
        if self.rd_issue.val() || self.wr_issue.val() {
            if self.bk_add.val() > 64 {
                self.bucket.d.next = 32.into();
            } else {
                self.bucket.d.next = self.bk_add.val() - 32;
            }
        } else if self.bk_add.val() > 64 {
            self.bucket.d.next = 64.into();
        } else {
            self.bucket.d.next = self.bk_add.val();
        }

        // ================= ROB: responses by tag =================
        self.gmem_resp_ready.next = true;
        self.rob_lo.write_address.next = self.gmem_resp.val().tag;
        self.rob_lo.write_data.next = self.gmem_resp.val().data_lo;
        self.rob_lo.write_enable.next = self.gmem_resp_valid.val() && !self.gmem_resp.val().write;
        self.rob_hi.write_address.next = self.gmem_resp.val().tag;
        self.rob_hi.write_data.next = self.gmem_resp.val().data_hi;
        self.rob_hi.write_enable.next = self.gmem_resp_valid.val() && !self.gmem_resp.val().write;
        self.rob_lo.read_address.next = self.rh.q.val();
        self.rob_hi.read_address.next = self.rh.q.val();
        // the arrival mark: the tag belongs to rh's pass when it is not below rh (allocated
        // tags are [rh, ra) modulo 256), else to the next pass
        if self.gmem_resp.val().tag < self.rh.q.val() {
            self.r_par.next = !self.rh_gen.q.val();
        } else {
            self.r_par.next = self.rh_gen.q.val();
        }
        self.rob_arr.write_address.next = self.gmem_resp.val().tag;
        self.rob_arr.write_data.next = !self.r_par.val();
        self.rob_arr.write_enable.next = self.gmem_resp_valid.val() && !self.gmem_resp.val().write;
        // ================= RG: the row iterator =================
        self.w1.next = (self.rg.q.val().t1 + self.j.q.val().e1) >= self.j.q.val().box1;
        self.w2.next = (self.rg.q.val().t2 + self.j.q.val().e2) >= self.j.q.val().box2;
        self.w3.next = (self.rg.q.val().t3 + self.j.q.val().e3) >= self.j.q.val().box3;
        self.w4.next = (self.rg.q.val().t4 + self.j.q.val().e4) >= self.j.q.val().box4;
        // im2col (PTX 5.5.4): a spatial dimension wraps when its next step leaves the pixel
        // bounding box; N (rank-1) never wraps; a pixel is OOB when a dimension's step count is
        // outside its window; the job ends after pixelsPerColumn rows
        self.i_s1.next = self.j.q.val().rank > 2;
        self.i_s2.next = self.j.q.val().rank > 3;
        self.i_s3.next = self.j.q.val().rank > 4;
        self.i_k1.next = self.rg.q.val().k1 + bit_cast::<14, 9>(self.j.q.val().e1);
        self.i_k2.next = self.rg.q.val().k2 + bit_cast::<14, 9>(self.j.q.val().e2);
        self.i_k3.next = self.rg.q.val().k3 + bit_cast::<14, 9>(self.j.q.val().e3);
        self.i_k4.next = self.rg.q.val().k4 + bit_cast::<14, 9>(self.j.q.val().e4);
        self.i_oob.next = false;
        if self.rg.q.val().sel1 {
            if (bit_cast::<15, 14>(self.rg.q.val().k1) < self.j.q.val().kll1)
                || (bit_cast::<15, 14>(self.rg.q.val().k1) >= self.j.q.val().klh1)
            {
                self.i_oob.next = true;
            }
        } else if (bit_cast::<15, 14>(self.rg.q.val().k1) < self.j.q.val().kcl1)
            || (bit_cast::<15, 14>(self.rg.q.val().k1) >= self.j.q.val().kch1)
        {
            self.i_oob.next = true;
        }
        if self.rg.q.val().sel2 {
            if (bit_cast::<15, 14>(self.rg.q.val().k2) < self.j.q.val().kll2)
                || (bit_cast::<15, 14>(self.rg.q.val().k2) >= self.j.q.val().klh2)
            {
                self.i_oob.next = true;
            }
        } else if (bit_cast::<15, 14>(self.rg.q.val().k2) < self.j.q.val().kcl2)
            || (bit_cast::<15, 14>(self.rg.q.val().k2) >= self.j.q.val().kch2)
        {
            self.i_oob.next = true;
        }
        if self.rg.q.val().sel3 {
            if (bit_cast::<15, 14>(self.rg.q.val().k3) < self.j.q.val().kll3)
                || (bit_cast::<15, 14>(self.rg.q.val().k3) >= self.j.q.val().klh3)
            {
                self.i_oob.next = true;
            }
        } else if (bit_cast::<15, 14>(self.rg.q.val().k3) < self.j.q.val().kcl3)
            || (bit_cast::<15, 14>(self.rg.q.val().k3) >= self.j.q.val().kch3)
        {
            self.i_oob.next = true;
        }
        if (bit_cast::<15, 14>(self.rg.q.val().k4) < self.j.q.val().kcl4)
            || (bit_cast::<15, 14>(self.rg.q.val().k4) >= self.j.q.val().kch4)
        {
            self.i_oob.next = true;
        }
        self.i_last.next = self.rg.q.val().pix == self.j.q.val().pix_m1;
        if self.j.q.val().im2col {
            self.w1.next = false;
            self.w2.next = false;
            self.w3.next = false;
            self.w4.next = false;
            if self.i_s1.val() {
                if self.rg.q.val().sel1 {
                    self.w1.next = bit_cast::<15, 14>(self.i_k1.val()) >= self.j.q.val().kwl1;
                } else {
                    self.w1.next = bit_cast::<15, 14>(self.i_k1.val()) >= self.j.q.val().kwc1;
                }
            }
            if self.i_s2.val() {
                if self.rg.q.val().sel2 {
                    self.w2.next = bit_cast::<15, 14>(self.i_k2.val()) >= self.j.q.val().kwl2;
                } else {
                    self.w2.next = bit_cast::<15, 14>(self.i_k2.val()) >= self.j.q.val().kwc2;
                }
            }
            if self.i_s3.val() {
                if self.rg.q.val().sel3 {
                    self.w3.next = bit_cast::<15, 14>(self.i_k3.val()) >= self.j.q.val().kwl3;
                } else {
                    self.w3.next = bit_cast::<15, 14>(self.i_k3.val()) >= self.j.q.val().kwc3;
                }
            }
        }
        self.sm1_lo.next = self.rg.q.val().a1_lo + self.j.q.val().st1_lo;
        self.sm2_lo.next = self.rg.q.val().a2_lo + self.j.q.val().st2_lo;
        self.sm3_lo.next = self.rg.q.val().a3_lo + self.j.q.val().st3_lo;
        self.sm4_lo.next = self.rg.q.val().a4_lo + self.j.q.val().st4_lo;
        self.sm1_hi.next = self.rg.q.val().a1_hi + self.j.q.val().st1_hi;
        if self.sm1_lo.val() < self.rg.q.val().a1_lo {
            self.sm1_hi.next = self.rg.q.val().a1_hi + self.j.q.val().st1_hi + 1;
        }
        self.sm2_hi.next = self.rg.q.val().a2_hi + self.j.q.val().st2_hi;
        if self.sm2_lo.val() < self.rg.q.val().a2_lo {
            self.sm2_hi.next = self.rg.q.val().a2_hi + self.j.q.val().st2_hi + 1;
        }
        self.sm3_hi.next = self.rg.q.val().a3_hi + self.j.q.val().st3_hi;
        if self.sm3_lo.val() < self.rg.q.val().a3_lo {
            self.sm3_hi.next = self.rg.q.val().a3_hi + self.j.q.val().st3_hi + 1;
        }
        self.sm4_hi.next = self.rg.q.val().a4_hi + self.j.q.val().st4_hi;
        if self.sm4_lo.val() < self.rg.q.val().a4_lo {
            self.sm4_hi.next = self.rg.q.val().a4_hi + self.j.q.val().st4_hi + 1;
        }
        self.g_oob.next = self.j.q.val().empty
            || (self.rg.q.val().t1 < self.j.q.val().lo1)
            || (self.rg.q.val().t1 >= self.j.q.val().hi1)
            || (self.rg.q.val().t2 < self.j.q.val().lo2)
            || (self.rg.q.val().t2 >= self.j.q.val().hi2)
            || (self.rg.q.val().t3 < self.j.q.val().lo3)
            || (self.rg.q.val().t3 >= self.j.q.val().hi3)
            || (self.rg.q.val().t4 < self.j.q.val().lo4)
            || (self.rg.q.val().t4 >= self.j.q.val().hi4);
        if self.j.q.val().im2col {
            self.g_oob.next = self.j.q.val().empty || self.i_oob.val();
        }
        // a row needing reads waits for the next-row register (freed by an issue this cycle)
        self.g_prod.next = self.rg_busy.q.val()
            && (self.rq_cnt.q.val() != 256)
            && (self.g_oob.val()
                || self.j.q.val().store
                || !self.nr.q.val().valid
                || (self.rd_issue.val() && !self.iss.q.val().valid));
        self.g_n_lo.next = self.rg.q.val().a1_lo + bit_cast::<32, 24>(self.j.q.val().offa);
        self.g_rec.next.oob = self.g_oob.val();
        self.g_rec.next.r_lo = self.rg.q.val().a1_lo;
        self.g_rec.next.r_hi = self.rg.q.val().a1_hi;
        self.g_rec.next.last = self.w1.val() && self.w2.val() && self.w3.val() && self.w4.val();
        if self.j.q.val().im2col {
            self.g_rec.next.last = self.i_last.val();
        }
        self.rq_ram.write_address.next = self.rq_tail.q.val();
        self.rq_ram.write_data.next = self.g_rec.val();
        self.rq_ram.write_enable.next = self.g_prod.val();
        if self.g_prod.val() {
            self.rq_tail.d.next = self.rq_tail.q.val() + 1;
            if !self.g_oob.val() && !self.j.q.val().store {
                self.nr.d.next.valid = true;
                self.nr.d.next.s_lo = self.g_n_lo.val() & 0xFFFF_FFE0_u64;
                if self.g_n_lo.val() < self.rg.q.val().a1_lo {
                    self.nr.d.next.s_hi = self.rg.q.val().a1_hi + 1;
                } else {
                    self.nr.d.next.s_hi = self.rg.q.val().a1_hi;
                }
                self.nr.d.next.p = self.j.q.val().ca;
                self.nr.d.next.odd = self.g_n_lo.val().get_bit(4);
                self.nr.d.next.cb = self.j.q.val().cb;
            }
            self.rg.d.next.pix = self.rg.q.val().pix + 1;
            if self.j.q.val().im2col && self.i_last.val() {
                self.rg_busy.d.next = false;
                self.rg_done.d.next = true;
            } else if !self.w1.val() {
                self.rg.d.next.k1 = self.i_k1.val();
                self.rg.d.next.t1 = self.rg.q.val().t1 + self.j.q.val().e1;
                self.rg.d.next.a1_lo = self.sm1_lo.val();
                self.rg.d.next.a1_hi = self.sm1_hi.val();
            } else if !self.w2.val() {
                self.rg.d.next.k1 = 0.into();
                self.rg.d.next.sel1 = true;
                self.rg.d.next.k2 = self.i_k2.val();
                self.rg.d.next.t1 = 0.into();
                self.rg.d.next.t2 = self.rg.q.val().t2 + self.j.q.val().e2;
                self.rg.d.next.a1_lo = self.sm2_lo.val();
                self.rg.d.next.a1_hi = self.sm2_hi.val();
                self.rg.d.next.a2_lo = self.sm2_lo.val();
                self.rg.d.next.a2_hi = self.sm2_hi.val();
            } else if !self.w3.val() {
                self.rg.d.next.t1 = 0.into();
                self.rg.d.next.k1 = 0.into();
                self.rg.d.next.k2 = 0.into();
                self.rg.d.next.sel1 = true;
                self.rg.d.next.sel2 = true;
                self.rg.d.next.k3 = self.i_k3.val();
                self.rg.d.next.t2 = 0.into();
                self.rg.d.next.t3 = self.rg.q.val().t3 + self.j.q.val().e3;
                self.rg.d.next.a1_lo = self.sm3_lo.val();
                self.rg.d.next.a1_hi = self.sm3_hi.val();
                self.rg.d.next.a2_lo = self.sm3_lo.val();
                self.rg.d.next.a2_hi = self.sm3_hi.val();
                self.rg.d.next.a3_lo = self.sm3_lo.val();
                self.rg.d.next.a3_hi = self.sm3_hi.val();
            } else if !self.w4.val() {
                self.rg.d.next.t1 = 0.into();
                self.rg.d.next.t2 = 0.into();
                self.rg.d.next.k1 = 0.into();
                self.rg.d.next.k2 = 0.into();
                self.rg.d.next.k3 = 0.into();
                self.rg.d.next.sel1 = true;
                self.rg.d.next.sel2 = true;
                self.rg.d.next.sel3 = true;
                self.rg.d.next.k4 = self.i_k4.val();
                self.rg.d.next.t3 = 0.into();
                self.rg.d.next.t4 = self.rg.q.val().t4 + self.j.q.val().e4;
                self.rg.d.next.a1_lo = self.sm4_lo.val();
                self.rg.d.next.a1_hi = self.sm4_hi.val();
                self.rg.d.next.a2_lo = self.sm4_lo.val();
                self.rg.d.next.a2_hi = self.sm4_hi.val();
                self.rg.d.next.a3_lo = self.sm4_lo.val();
                self.rg.d.next.a3_hi = self.sm4_hi.val();
                self.rg.d.next.a4_lo = self.sm4_lo.val();
                self.rg.d.next.a4_hi = self.sm4_hi.val();
            } else {
                self.rg_busy.d.next = false;
                self.rg_done.d.next = true;
            }
        }

        // ================= BA stage X: one slot per cycle =================
        // the queue heads come from RAMs read at the previous edge (with the head address of
        // this cycle), or from the write at that edge
        if self.rq_fw.q.val() {
            self.rqh.next = self.rq_fwd.q.val();
        } else {
            self.rqh.next = self.rq_ram.read_data.val();
        }
        self.h_vld.next = self.arr_fw.q.val() || (self.rob_arr.read_data.val() != self.rh_gen.q.val());
        if self.want_fw.q.val() {
            self.h_want.next = self.want_fw_v.q.val();
        } else {
            self.h_want.next = self.rob_want.read_data.val();
        }
        if self.b.q.val().d {
            self.x_u.next = self.r.q.val().s - 1;
        } else {
            self.x_u.next = self.r.q.val().s;
        }
        if self.b.q.val().store {
            self.x_need.next = !self.r.q.val().oob && (self.r.q.val().s < self.b.q.val().nb);
            self.x_emit.next = !self.r.q.val().oob
                && !self.b.q.val().empty
                && (self.r.q.val().s >= self.b.q.val().ca)
                && (self.r.q.val().s <= self.b.q.val().cb);
        } else {
            self.x_need.next = !self.r.q.val().oob
                && !self.b.q.val().empty
                && (self.r.q.val().s >= self.b.q.val().ca)
                && (self.r.q.val().s <= self.b.q.val().cb);
            self.x_emit.next =
                !self.b.q.val().zero && (!self.b.q.val().d || (self.r.q.val().s != 0));
        }
        self.x_rend.next = (self.b.q.val().store && self.r.q.val().oob)
            || (self.r.q.val().s == self.b.q.val().ns_m1);
        // the slot moves when its input is there and its output buffer has room (counting
        // the entry Y may push); an S2S beat goes to OB
        if self.b.q.val().store && !self.b.q.val().s2s {
            self.x_room.next = (self.wb_n.q.val() < 2)
                || ((self.wb_n.q.val() == 2)
                    && !(self.y.q.val().valid
                        && self.y.q.val().store
                        && !self.y.q.val().s2s));
        } else {
            self.x_room.next = (self.ob_n.q.val() < 2)
                || ((self.ob_n.q.val() == 2)
                    && !(self.y.q.val().valid
                        && (!self.y.q.val().store || self.y.q.val().s2s)));
        }
        if self.b.q.val().store {
            self.x_fire.next = self.r.q.val().vld
                && (!self.x_need.val() || self.smem_rd_ready.val())
                && self.x_room.val();
        } else {
            self.x_fire.next = self.r.q.val().vld
                && (!self.x_need.val() || self.h_vld.val())
                && self.x_room.val();
        }
        self.x_inr.next = !self.r.q.val().oob
            && (self.x_u.val() >= self.b.q.val().jl)
            && (self.x_u.val() <= self.b.q.val().jh);
        self.x_mask.next = 0.into();
        if self.x_inr.val() {
            if (self.x_u.val() == self.b.q.val().jl) && (self.x_u.val() == self.b.q.val().jh) {
                self.x_mask.next = self.b.q.val().lomask & self.b.q.val().himask;
            } else if self.x_u.val() == self.b.q.val().jl {
                self.x_mask.next = self.b.q.val().lomask;
            } else if self.x_u.val() == self.b.q.val().jh {
                self.x_mask.next = self.b.q.val().himask;
            } else {
                self.x_mask.next = 0xFFFF.into();
            }
        }
        // PTX 5.5.7 / tensormap::swizzle_offset: chunk bits 4.. ^= line bits 7..
        self.x_dense.next = self.r.q.val().dense;
        self.x_swa.next = self
            .x_dense
            .val()
            .replace_bit(
                4,
                self.x_dense.val().get_bit(4)
                    ^ ((self.b.q.val().swz != 0) && self.x_dense.val().get_bit(7)),
            )
            .replace_bit(
                5,
                self.x_dense.val().get_bit(5)
                    ^ ((self.b.q.val().swz >= 2) && self.x_dense.val().get_bit(8)),
            )
            .replace_bit(
                6,
                self.x_dense.val().get_bit(6)
                    ^ ((self.b.q.val().swz == 3) && self.x_dense.val().get_bit(9)),
            );
        self.x_half.next = !(self.h_want.val().get_bit(0) && !self.h_lo_done.q.val());
        self.x_free.next = self.x_fire.val()
            && !self.b.q.val().store
            && self.x_need.val()
            && !(!self.x_half.val() && self.h_want.val().get_bit(1));
        self.smem_rd_valid.next = self.r.q.val().vld
            && self.b.q.val().store
            && self.x_need.val()
            && self.x_room.val();
        self.smem_rd_addr.next = self.x_swa.val();
        if self.x_fire.val() {
            if self.x_rend.val() {
                self.r.d.next.s = 0.into();
            } else {
                self.r.d.next.s = self.r.q.val().s + 1;
            }
            if !self.b.q.val().store && self.x_need.val() {
                if self.x_free.val() {
                    self.rh.d.next = self.rh.q.val() + 1;
                    self.h_lo_done.d.next = false;
                } else {
                    self.h_lo_done.d.next = true;
                }
            }
            if self.b.q.val().store {
                if self.r.q.val().oob {
                    self.r.d.next.dense =
                        self.r.q.val().dense + bit_cast::<18, 24>(self.b.q.val().rowbytes);
                } else if self.x_need.val() {
                    self.r.d.next.dense = self.r.q.val().dense + 16;
                }
                self.r.d.next.ca_lo = self.r.q.val().ca_lo + 16;
                if self.r.q.val().ca_lo >= 0xFFFF_FFF0_u64 {
                    self.r.d.next.ca_hi = self.r.q.val().ca_hi + 1;
                }
            } else if self.x_emit.val() {
                self.r.d.next.dense = self.r.q.val().dense + 16;
                self.r.d.next.tx = self.r.q.val().tx + 16;
            }
            if self.b.q.val().s2s && self.x_emit.val() {
                self.r.d.next.tx = self.r.q.val().tx + 16;
            }
            self.y.d.next.valid = true;
            self.y.d.next.store = self.b.q.val().store;
            self.y.d.next.need = self.x_need.val();
            self.y.d.next.half = self.x_half.val();
            // a prefetch's chunks are popped and dropped
            self.y.d.next.emit = self.x_emit.val() && !self.b.q.val().pf;
            self.y.d.next.jlast = self.x_rend.val() && self.r.q.val().last;
            self.y.d.next.mask = self.x_mask.val();
            if self.b.q.val().s2s {
                // bulk: no swizzle; the destination is at the same offset from `dsmem`
                self.y.d.next.addr = self.x_dense.val() + self.b.q.val().doff;
            } else {
                self.y.d.next.addr = self.x_swa.val();
            }
            self.y.d.next.off = self.b.q.val().off;
            self.y.d.next.fill = self.b.q.val().fill;
            self.y.d.next.ctam = self.b.q.val().ctam;
            self.y.d.next.word = self.b.q.val().word;
            if (!self.b.q.val().store || self.b.q.val().s2s) && self.x_emit.val() {
                self.y.d.next.tx = self.r.q.val().tx + 16;
            } else {
                self.y.d.next.tx = self.r.q.val().tx;
            }
            self.y.d.next.grp = self.b.q.val().grp;
            self.y.d.next.ca_lo = self.r.q.val().ca_lo;
            self.y.d.next.ca_hi = self.r.q.val().ca_hi;
            self.y.d.next.ulast = self.r.q.val().s == self.b.q.val().cb;
            self.y.d.next.par = (self.r.q.val().ca_lo & 16) != 0;
            self.y.d.next.s2s = self.b.q.val().s2s;
            self.y.d.next.red_op = self.b.q.val().red_op;
            self.y.d.next.red_type = self.b.q.val().red_type;
        }
        // job and row hand-over (BA takes J at its job's last slot: no bubble)
        self.take_job.next = self.j_valid.q.val()
            && !self.ba_taken.q.val()
            && (!self.b_act.q.val()
                || (self.x_fire.val() && self.x_rend.val() && self.r.q.val().last));
        self.act_next.next = (self.j_valid.q.val() && !self.ba_taken.q.val())
            || (self.b_act.q.val()
                && !(self.x_fire.val() && self.x_rend.val() && self.r.q.val().last));
        self.row_load.next = self.act_next.val()
            && (!self.r.q.val().vld || (self.x_fire.val() && self.x_rend.val()))
            && (self.rq_cnt.q.val() != 0);
        self.b_act.d.next = self.act_next.val();
        if self.take_job.val() {
            self.ba_taken.d.next = true;
            self.b.d.next = self.j.q.val();
            self.r.d.next.dense = self.j.q.val().base;
            self.r.d.next.tx = 0.into();
        }
        if self.x_fire.val() && self.x_rend.val() {
            self.r.d.next.vld = false;
        }
        if self.row_load.val() {
            self.r.d.next.vld = true;
            self.r.d.next.oob = self.rqh.val().oob;
            self.r.d.next.last = self.rqh.val().last;
            self.r.d.next.ca_lo = self.rqh.val().r_lo;
            self.r.d.next.ca_hi = self.rqh.val().r_hi;
            self.rq_head.d.next = self.rq_head.q.val() + 1;
        }
        if self.row_load.val() {
            self.rq_head_nx.next = self.rq_head.q.val() + 1;
        } else {
            self.rq_head_nx.next = self.rq_head.q.val();
        }
        self.rq_ram.read_address.next = self.rq_head_nx.val();
        self.rq_fw.d.next = self.g_prod.val() && (self.rq_tail.q.val() == self.rq_head_nx.val());
        self.rq_fwd.d.next = self.g_rec.val();
        if self.g_prod.val() && !self.row_load.val() {
            self.rq_cnt.d.next = self.rq_cnt.q.val() + 1;
        }
        if !self.g_prod.val() && self.row_load.val() {
            self.rq_cnt.d.next = self.rq_cnt.q.val() - 1;
        }
        // J is released when RG has walked it and BA has copied it
        if self.j_valid.q.val() && self.rg_done.q.val() && self.ba_taken.q.val() {
            self.j_valid.d.next = false;
            self.rg_done.d.next = false;
            self.ba_taken.d.next = false;
        }

        // ================= ROB: valid bits and count (responses in, stage X frees the head) =================
        if self.x_free.val() {
            self.rh_nx.next = self.rh.q.val() + 1;
        } else {
            self.rh_nx.next = self.rh.q.val();
        }
        if self.x_free.val() && (self.rh.q.val() == 255) {
            self.rh_gen.d.next = !self.rh_gen.q.val();
        }
        self.rob_want.read_address.next = self.rh_nx.val();
        self.rob_arr.read_address.next = self.rh_nx.val();
        // same-edge write and read of one entry read the old value: forward the write
        self.arr_fw.d.next = self.gmem_resp_valid.val()
            && !self.gmem_resp.val().write
            && (self.gmem_resp.val().tag == self.rh_nx.val());
        self.want_fw.d.next = self.rd_issue.val() && (self.ra.q.val() == self.rh_nx.val());
        self.want_fw_v.d.next = self.i_want.val();
        if self.rd_issue.val() && !self.x_free.val() {
            self.rob_cnt.d.next = self.rob_cnt.q.val() + 1;
        }
        if !self.rd_issue.val() && self.x_free.val() {
            self.rob_cnt.d.next = self.rob_cnt.q.val() - 1;
        }

        // ================= BA stage Y: realign, fill, pack =================
        self.align.prev.next = self.y_prev.q.val();
        self.align.off.next = self.y.q.val().off;
        self.align.mask.next = self.y.q.val().mask;
        self.align.fill.next = self.y.q.val().fill;
        if self.y.q.val().store {
            self.align.cur.next = self.smem_rd_data.val();
        } else if self.y.q.val().half {
            self.align.cur.next = self.rob_hi.read_data.val();
        } else {
            self.align.cur.next = self.rob_lo.read_data.val();
        }
        if self.y.q.val().valid {
            if self.y.q.val().store {
                self.y_prev.d.next = self.smem_rd_data.val();
            } else if self.y.q.val().half {
                self.y_prev.d.next = self.rob_hi.read_data.val();
            } else {
                self.y_prev.d.next = self.rob_lo.read_data.val();
            }
        }
        self.y_obpush.next = self.y.q.val().valid
            && (!self.y.q.val().store || self.y.q.val().s2s)
            && (self.y.q.val().emit || self.y.q.val().jlast);
        // the sector packer (stores)
        self.y_wbpush.next = false;
        self.wbe.next.write = false;
        self.wbe.next.addr_lo = self.y.q.val().ca_lo & 0xFFFF_FFE0_u64;
        self.wbe.next.addr_hi = self.y.q.val().ca_hi;
        self.wbe.next.data_lo = self.align.out.val();
        self.wbe.next.data_hi = self.zero16.val();
        self.wbe.next.mask_lo = self.y.q.val().mask;
        self.wbe.next.mask_hi = 0.into();
        self.wbe.next.grp = self.y.q.val().grp;
        self.wbe.next.red_op = self.y.q.val().red_op;
        self.wbe.next.red_type = self.y.q.val().red_type;
        self.wbe.next.op_last = self.y.q.val().jlast;
        self.ev_yrd.next = self.y.q.val().valid
            && self.y.q.val().store
            && !self.y.q.val().s2s
            && self.y.q.val().jlast;
        if self.y.q.val().valid && self.y.q.val().store && !self.y.q.val().s2s {
            if self.y.q.val().emit {
                if !self.y.q.val().par {
                    if self.y.q.val().ulast {
                        self.wbe.next.write = true;
                        self.y_wbpush.next = true;
                    } else {
                        self.pk_vld.d.next = true;
                        self.pk_data.d.next = self.align.out.val();
                        self.pk_mask.d.next = self.y.q.val().mask;
                    }
                } else {
                    self.wbe.next.write = true;
                    self.y_wbpush.next = true;
                    self.wbe.next.data_hi = self.align.out.val();
                    self.wbe.next.mask_hi = self.y.q.val().mask;
                    self.pk_vld.d.next = false;
                    if self.pk_vld.q.val() {
                        self.wbe.next.data_lo = self.pk_data.q.val();
                        self.wbe.next.mask_lo = self.pk_mask.q.val();
                    } else {
                        self.wbe.next.data_lo = self.zero16.val();
                        self.wbe.next.mask_lo = 0.into();
                    }
                }
            }
            if self.y.q.val().jlast {
                self.y_wbpush.next = true;
            }
        }

        // ================= OB, multicast sequencer, complete_tx =================
        self.mc_rem.next = self.ob[0].q.val().ctam & !self.mc_sent.q.val();
        self.mc_low.next = self.mc_rem.val() & (bits::<16>(0) - self.mc_rem.val());
        self.mc_cta.next = 0.into();
        for i in 0..16 {
            if self.mc_low.val().get_bit(i) {
                self.mc_cta.next = i.to_bits();
            }
        }
        self.smem_wr_valid.next = (self.ob_n.q.val() != 0)
            && self.ob[0].q.val().data_valid
            && !(self.ob[0].q.val().jlast && self.cpl_vld.q.val());
        self.smem_wr.next.cta = self.mc_cta.val();
        self.smem_wr.next.addr = self.ob[0].q.val().addr;
        self.smem_wr.next.data = self.ob[0].q.val().data;
        self.smem_wr.next.mask = 0xFFFF.into();
        self.smem_wr.next.red_op = self.ob[0].q.val().red_op;
        self.smem_wr.next.red_type = self.ob[0].q.val().red_type;
        self.ob_pop.next = (self.ob_n.q.val() != 0)
            && !(self.ob[0].q.val().jlast && self.cpl_vld.q.val())
            && (!self.ob[0].q.val().data_valid
                || (self.smem_wr_ready.val()
                    && ((self.mc_rem.val() & (self.mc_rem.val() - 1)) == 0)));
        if self.ob_pop.val() {
            self.mc_sent.d.next = 0.into();
        } else if self.smem_wr_valid.val() && self.smem_wr_ready.val() {
            self.mc_sent.d.next = self.mc_sent.q.val() | self.mc_low.val();
        }
        self.ob_after.next = self.ob_n.q.val();
        if self.ob_pop.val() {
            self.ob_after.next = self.ob_n.q.val() - 1;
            self.ob[0].d.next = self.ob[1].q.val();
            self.ob[1].d.next = self.ob[2].q.val();
        }
        self.ob_n.d.next = self.ob_after.val();
        if self.y_obpush.val() {
            self.ob_n.d.next = self.ob_after.val() + 1;
            if self.ob_after.val() == 0 {
                self.ob[0].d.next.data_valid = self.y.q.val().emit;
                self.ob[0].d.next.addr = self.y.q.val().addr;
                self.ob[0].d.next.data = self.align.out.val();
                self.ob[0].d.next.ctam = self.y.q.val().ctam;
                self.ob[0].d.next.jlast = self.y.q.val().jlast;
                self.ob[0].d.next.word = self.y.q.val().word;
                self.ob[0].d.next.tx = self.y.q.val().tx;
                self.ob[0].d.next.red_op = self.y.q.val().red_op;
                self.ob[0].d.next.red_type = self.y.q.val().red_type;
            } else if self.ob_after.val() == 1 {
                self.ob[1].d.next.data_valid = self.y.q.val().emit;
                self.ob[1].d.next.addr = self.y.q.val().addr;
                self.ob[1].d.next.data = self.align.out.val();
                self.ob[1].d.next.ctam = self.y.q.val().ctam;
                self.ob[1].d.next.jlast = self.y.q.val().jlast;
                self.ob[1].d.next.word = self.y.q.val().word;
                self.ob[1].d.next.tx = self.y.q.val().tx;
                self.ob[1].d.next.red_op = self.y.q.val().red_op;
                self.ob[1].d.next.red_type = self.y.q.val().red_type;
            } else {
                self.ob[2].d.next.data_valid = self.y.q.val().emit;
                self.ob[2].d.next.addr = self.y.q.val().addr;
                self.ob[2].d.next.data = self.align.out.val();
                self.ob[2].d.next.ctam = self.y.q.val().ctam;
                self.ob[2].d.next.jlast = self.y.q.val().jlast;
                self.ob[2].d.next.word = self.y.q.val().word;
                self.ob[2].d.next.tx = self.y.q.val().tx;
                self.ob[2].d.next.red_op = self.y.q.val().red_op;
                self.ob[2].d.next.red_type = self.y.q.val().red_type;
            }
        }
        // complete_tx: one request per destination CTA, lowest rank first
        self.cp_low.next = self.cpl_rem.q.val() & (bits::<16>(0) - self.cpl_rem.q.val());
        self.cp_cta.next = 0.into();
        for i in 0..16 {
            if self.cp_low.val().get_bit(i) {
                self.cp_cta.next = i.to_bits();
            }
        }
        self.mbar_valid.next = self.cpl_vld.q.val();
        self.mbar_req.next = self.mreq_base.val();
        self.mbar_req.next.word = self.cpl_word.q.val();
        self.mbar_req.next.tx_count = self.cpl_tx.q.val();
        self.mbar_cta.next = self.cp_cta.val();
        self.mbar_remote.next = self.cp_cta.val() != self.cta_rank.val();
        if self.cpl_vld.q.val() && self.mbar_ready.val() {
            self.cpl_rem.d.next = self.cpl_rem.q.val() & (self.cpl_rem.q.val() - 1);
            if (self.cpl_rem.q.val() & (self.cpl_rem.q.val() - 1)) == 0 {
                self.cpl_vld.d.next = false;
            }
        }
        // (a prefetch has no destination: no complete_tx)
        if self.ob_pop.val() && self.ob[0].q.val().jlast && (self.ob[0].q.val().ctam != 0) {
            self.cpl_vld.d.next = true;
            self.cpl_rem.d.next = self.ob[0].q.val().ctam;
            self.cpl_word.d.next = self.ob[0].q.val().word;
            self.cpl_tx.d.next = self.ob[0].q.val().tx;
        }

        // ================= WB (stores) =================
        self.wb_pop.next =
            (self.wb_n.q.val() != 0) && (!self.wb[0].q.val().write || self.wr_issue.val());
        self.ev_wbi.next = self.wb_pop.val() && self.wb[0].q.val().op_last;
        self.wb_after.next = self.wb_n.q.val();
        if self.wb_pop.val() {
            self.wb_after.next = self.wb_n.q.val() - 1;
            self.wb[0].d.next = self.wb[1].q.val();
            self.wb[1].d.next = self.wb[2].q.val();
        }
        self.wb_n.d.next = self.wb_after.val();
        if self.y_wbpush.val() {
            self.wb_n.d.next = self.wb_after.val() + 1;
            if self.wb_after.val() == 0 {
                self.wb[0].d.next = self.wbe.val();
            } else if self.wb_after.val() == 1 {
                self.wb[1].d.next = self.wbe.val();
            } else {
                self.wb[2].d.next = self.wbe.val();
            }
        }

        // ================= bulk async-groups =================
        self.ev_ack.next = self.gmem_resp_valid.val() && self.gmem_resp.val().write;
        self.ev_dfs.next = self.d_fault.val() && self.d_store.val() && !self.q0x.q.val();
        for i in 0..16 {
            self.g_rd[i].d.next = self.g_rd[i].q.val();
            self.g_wi[i].d.next = self.g_wi[i].q.val();
            self.g_wp[i].d.next = self.g_wp[i].q.val();
            if self.ev_inc.val() && (self.c_gid.val().index() == i) {
                if !((self.ev_yrd.val() && (self.y.q.val().grp.index() == i))
                    || (self.ev_dfs.val() && (self.q0g.q.val().index() == i)))
                {
                    self.g_rd[i].d.next = self.g_rd[i].q.val() + 1;
                }
                if !((self.ev_wbi.val() && (self.wb[0].q.val().grp.index() == i))
                    || (self.ev_dfs.val() && (self.q0g.q.val().index() == i)))
                {
                    self.g_wi[i].d.next = self.g_wi[i].q.val() + 1;
                }
            } else {
                if (self.ev_yrd.val() && (self.y.q.val().grp.index() == i))
                    || (self.ev_dfs.val() && (self.q0g.q.val().index() == i))
                {
                    self.g_rd[i].d.next = self.g_rd[i].q.val() - 1;
                }
                if (self.ev_wbi.val() && (self.wb[0].q.val().grp.index() == i))
                    || (self.ev_dfs.val() && (self.q0g.q.val().index() == i))
                {
                    self.g_wi[i].d.next = self.g_wi[i].q.val() - 1;
                }
            }
            if self.wr_issue.val() && (self.wb[0].q.val().grp.index() == i) {
                if !(self.ev_ack.val() && (self.gmem_resp.val().tag.index() == i)) {
                    self.g_wp[i].d.next = self.g_wp[i].q.val() + 1;
                }
            } else if self.ev_ack.val() && (self.gmem_resp.val().tag.index() == i) {
                self.g_wp[i].d.next = self.g_wp[i].q.val() - 1;
            }
        }
        // wait_group{.read} of `wait_thread`: its context's committed groups older than the
        // wait_n newest
        self.w_hit.next = false;
        self.w_ctx.next = 0.into();
        self.w_open.next = 0.into();
        for k in 0..4 {
            if self.x_busy[k].val() && (self.ctx_thread[k].q.val() == self.wait_thread.val()) {
                self.w_hit.next = true;
                self.w_ctx.next = k.to_bits::<2>();
                self.w_open.next = self.open[k].q.val();
            }
        }
        self.w_gid.next = (bit_cast::<4, 2>(self.w_ctx.val()) << 2) | bit_cast::<4, 2>(self.w_open.val());
        self.wn3.next = bit_cast::<4, 8>(self.wait_n.val());
        if self.wait_n.val() >= 3 {
            self.wn3.next = 3.into();
        }
        self.wait_done.next = true;
        for i in 0..16 {
            self.g_age[i].next = (self.w_gid.val() - i.to_bits::<4>()) & 3;
            self.g_mine[i].next =
                self.w_hit.val() && ((self.w_gid.val() & 12) == (i.to_bits::<4>() & 12));
            self.g_inc[i].next = (self.g_wi[i].q.val() != 0) || (self.g_wp[i].q.val() != 0);
            self.g_pc[i].next = 0.into();
            if self.g_mine[i].val() && (self.g_age[i].val() != 0) && self.g_inc[i].val() {
                self.g_pc[i].next = 1.into();
            }
            if self.g_mine[i].val() && (self.g_age[i].val() != 0) && (self.g_age[i].val() > self.wn3.val()) {
                if self.wait_read.val() {
                    if self.g_rd[i].q.val() != 0 {
                        self.wait_done.next = false;
                    }
                } else if self.g_inc[i].val() {
                    self.wait_done.next = false;
                }
            }
        }
        self.groups_pending.next = self.g_pc[0].val()
            + self.g_pc[1].val()
            + self.g_pc[2].val()
            + self.g_pc[3].val()
            + self.g_pc[4].val()
            + self.g_pc[5].val()
            + self.g_pc[6].val()
            + self.g_pc[7].val()
            + self.g_pc[8].val()
            + self.g_pc[9].val()
            + self.g_pc[10].val()
            + self.g_pc[11].val()
            + self.g_pc[12].val()
            + self.g_pc[13].val()
            + self.g_pc[14].val()
            + self.g_pc[15].val();

        // ================= status =================
        self.store_read_done.next = self.ev_yrd.val();
        self.store_writes_issued.next = self.ev_wbi.val();
        self.fault.next = self.fault_q.q.val();
        self.idle.next = (self.qn.q.val() == 0)
            && (self.dstate.q.val() == TmaDecState::Idle)
            && !self.j_valid.q.val()
            && !self.rg_busy.q.val()
            && !self.nr.q.val().valid
            && !self.iss.q.val().valid
            && (self.rq_cnt.q.val() == 0)
            && !self.r.q.val().vld
            && !self.b_act.q.val()
            && !self.y.q.val().valid
            && (self.ob_n.q.val() == 0)
            && (self.wb_n.q.val() == 0)
            && !self.cpl_vld.q.val()
            && (self.outstanding.q.val() == 0)
            && (self.rob_cnt.q.val() == 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{require_yosys, yosys_check_flat, Trace, XorShift};
    use hopsync_firmware::tensormap::{
        swizzle_offset, TensorMap, TensorMapDataType as Dt, TensorMapMode, TensorMapOobFill,
        TensorMapSpec, TensorMapSwizzle,
    };
    use std::collections::VecDeque;

    /// Requests in flight in the tests (the ROB holds 256).
    const MAX_OUT: u32 = TMA_TAGS as u32;
    /// threads the testbench tracks bulk groups for
    const TB_THREADS: usize = 8;
    /// Global base of the test tensors (DESIGN.md: global buffers from 2^32).
    const GBASE: u64 = 0x1_0000_0000;

    fn new_uut(max_out: u32, bpc: u32) -> Box<TmaEngine> {
        let mut u = Box::new(TmaEngine::new(max_out, bpc));
        u.connect_all();
        u
    }

    /// Global memory content: a hash of the address.
    fn gbyte(a: u64) -> u8 {
        let x = (a ^ 0x3C3C).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((x >> 56) as u8) ^ (a as u8)
    }

    /// Shared-memory content of the storing CTA: a hash of the address.
    fn sbyte(a: u32) -> u8 {
        let x = (a as u64 ^ 0x5A5A).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        (x >> 48) as u8
    }

    // ------------------------------------------------------------------ commands

    fn cmd(kind: TmaCmdKind) -> TmaCmd {
        TmaCmd {
            kind,
            ..Default::default()
        }
    }

    fn b(x: u64) -> Bits<32> {
        x.into()
    }

    fn bulk_load(src: u64, smem: u32, size: u32, mask: u16, mbar: u16) -> TmaCmd {
        TmaCmd {
            kind: TmaCmdKind::BulkLoad,
            smem: (smem as u64).into(),
            gaddr_lo: b(src & 0xFFFF_FFFF),
            gaddr_hi: b(src >> 32),
            size: (size as u64).into(),
            mbar: (mbar as u64).into(),
            cta_mask: (mask as u64).into(),
            ..Default::default()
        }
    }

    fn bulk_store(dst: u64, smem: u32, size: u32) -> TmaCmd {
        TmaCmd {
            kind: TmaCmdKind::BulkStore,
            smem: (smem as u64).into(),
            gaddr_lo: b(dst & 0xFFFF_FFFF),
            gaddr_hi: b(dst >> 32),
            size: (size as u64).into(),
            ..Default::default()
        }
    }

    fn tensor(kind: TmaCmdKind, rank: usize, coords: &[i64], smem: u32, mask: u16, mbar: u16) -> TmaCmd {
        let c = |i: usize| -> Bits<32> { ((coords.get(i).copied().unwrap_or(0) as i32 as u32) as u64).into() };
        TmaCmd {
            kind,
            dims: (rank as u64).into(),
            smem: (smem as u64).into(),
            mbar: (mbar as u64).into(),
            cta_mask: (mask as u64).into(),
            c0: c(0),
            c1: c(1),
            c2: c(2),
            c3: c(3),
            c4: c(4),
            ..Default::default()
        }
    }

    // ------------------------------------------------------------------ reference

    /// Every element of the box at `coords` (im2col offsets `offs`) in the box's dense order:
    /// its byte offset in shared memory and its global address (None: out of bounds): the
    /// walk of `firmware/src/tensormap.rs` ([PTX] 5.5.3 tiled, 5.5.4 im2col) that the golden
    /// model uses.
    fn box_elements(map: &TensorMap, coords: &[i64], offs: &[i64]) -> Vec<(u64, Option<u64>)> {
        map.box_elements(coords, offs)
    }

    /// Elements of one row: boxDim[0], or channelsPerPixel (an im2col row is a pixel).
    fn row_elems(map: &TensorMap) -> usize {
        if map.mode() == TensorMapMode::Im2col {
            map.spec().channels_per_pixel as usize
        } else {
            map.spec().box_dim[0] as usize
        }
    }

    /// What one load must write: per destination CTA, the bytes of the shared-memory window
    /// `[base, base + span)` (-1: not written).
    #[derive(Clone, Debug)]
    struct LoadExp {
        base: u32,
        span: usize,
        /// CTA rank -> slot in `bytes`
        slot: [i8; 16],
        bytes: Vec<i16>,
        remaining: usize,
        /// (cta, word, tx) in the order the engine sends them
        cpl: Vec<(u8, u16, u32)>,
        /// the reduction every write carries
        red: (TmaRedOp, TmaRedType),
    }

    impl LoadExp {
        fn new(base: u32, nbytes: u64, mask: u16, word: u16) -> LoadExp {
            let span = ((nbytes + 127) & !127) as usize;
            let mut slot = [-1i8; 16];
            let mut n = 0;
            let mut cpl = vec![];
            for c in 0..16 {
                if mask >> c & 1 == 1 {
                    slot[c] = n;
                    n += 1;
                    cpl.push((c as u8, word, nbytes as u32));
                }
            }
            LoadExp {
                base,
                span,
                slot,
                bytes: vec![-1; span * n as usize],
                remaining: nbytes as usize * n as usize,
                cpl,
                red: (TmaRedOp::Copy, TmaRedType::B32),
            }
        }
        fn set(&mut self, addr: u64, v: u8) {
            let off = (addr - self.base as u64) as usize;
            assert!(off < self.span);
            for c in 0..16 {
                if self.slot[c] >= 0 {
                    let i = self.slot[c] as usize * self.span + off;
                    assert_eq!(self.bytes[i], -1, "reference writes byte {addr:#x} twice");
                    self.bytes[i] = v as i16;
                }
            }
        }
    }

    /// Expected effects of one command, in command order.
    #[derive(Clone, Debug, Default)]
    struct Exp {
        load: Option<LoadExp>,
        reads: Vec<u64>,
        /// stores: (sector, mask, data)
        writes: Vec<(u64, u32, [u8; 32])>,
        /// stores: swizzled shared-memory addresses read
        smem_reads: Vec<u32>,
        fault: Option<TmaFaultKind>,
        commit: bool,
        store: bool,
    }

    /// Sectors covering the in-bounds bytes of each row, in order.
    fn row_sectors(rows: &[(u64, u64)]) -> Vec<u64> {
        let mut v = vec![];
        for &(first, last) in rows {
            let mut s = first & !31;
            while s <= last {
                v.push(s);
                s += 32;
            }
        }
        v
    }

    /// The in-bounds byte range (first, last) of each row of `els` (rows of `n0` elements).
    fn rows_of(els: &[(u64, Option<u64>)], n0: usize, es: u64) -> Vec<(u64, u64)> {
        els.chunks(n0)
            .filter_map(|row| {
                let ins: Vec<u64> = row.iter().filter_map(|e| e.1).collect();
                if ins.is_empty() {
                    None
                } else {
                    for w in ins.windows(2) {
                        assert_eq!(w[1], w[0] + es, "in-bounds elements of a row are contiguous");
                    }
                    Some((ins[0], ins[ins.len() - 1] + es - 1))
                }
            })
            .collect()
    }

    /// Global writes of a store of (global address, shared address) bytes, row by row: one
    /// sector write per sector a row touches.
    fn store_writes(rows: &[Vec<(u64, u32)>]) -> Vec<(u64, u32, [u8; 32])> {
        let mut out: Vec<(u64, u32, [u8; 32])> = vec![];
        for row in rows {
            let mut cur: Option<(u64, u32, [u8; 32])> = None;
            for &(g, sa) in row {
                let sec = g & !31;
                if cur.map(|c| c.0) != Some(sec) {
                    if let Some(c) = cur.take() {
                        out.push(c);
                    }
                    cur = Some((sec, 0, [0; 32]));
                }
                let c = cur.as_mut().unwrap();
                let o = (g - sec) as usize;
                c.1 |= 1 << o;
                c.2[o] = sbyte(sa);
            }
            if let Some(c) = cur {
                out.push(c);
            }
        }
        out
    }

    fn exp_tensor_load(map: &TensorMap, coords: &[i64], offs: &[i64], smem: u32, mask: u16, word: u16) -> Exp {
        let es = map.element_size() as u64;
        let els = box_elements(map, coords, offs);
        let fill = map.oob_fill_element();
        let nbytes = map.smem_box_bytes();
        assert_eq!(nbytes, els.len() as u64 * es);
        let mut le = LoadExp::new(smem, nbytes, mask, word);
        for &(off, g) in &els {
            for bb in 0..es {
                let sa = swizzle_offset(map.spec().swizzle, smem as u64 + off + bb).unwrap();
                let v = match g {
                    Some(a) => gbyte(a + bb),
                    None => fill[bb as usize],
                };
                le.set(sa, v);
            }
        }
        let n0 = row_elems(map);
        Exp {
            load: Some(le),
            reads: row_sectors(&rows_of(&els, n0, es)),
            ..Default::default()
        }
    }

    fn exp_tensor_store(map: &TensorMap, coords: &[i64], offs: &[i64], smem: u32) -> Exp {
        let es = map.element_size() as u64;
        let els = box_elements(map, coords, offs);
        let n0 = row_elems(map);
        let sw = map.spec().swizzle;
        let rows: Vec<Vec<(u64, u32)>> = els
            .chunks(n0)
            .map(|row| {
                let mut v = vec![];
                for &(off, g) in row {
                    if let Some(a) = g {
                        for bb in 0..es {
                            v.push((a + bb, swizzle_offset(sw, smem as u64 + off + bb).unwrap() as u32));
                        }
                    }
                }
                v
            })
            .collect();
        // the engine reads every beat of each row with an in-bounds outer coordinate
        let mut smem_reads = vec![];
        let rowbytes = n0 as u64 * es;
        for (r, row) in els.chunks(n0).enumerate() {
            if map.mode() == TensorMapMode::Im2col {
                // every element of a pixel shares its outer coordinates
                assert_eq!(row.iter().any(|e| e.1.is_some()), !row.iter().all(|e| e.1.is_none()));
            }
            let outer = if map.mode() == TensorMapMode::Im2col {
                row.iter().any(|e| e.1.is_some())
            } else {
                row_outer_in_bounds(map, coords, r)
            };
            if outer {
                for j in 0..rowbytes / 16 {
                    let dense = smem as u64 + r as u64 * rowbytes + 16 * j;
                    smem_reads.push(swizzle_offset(sw, dense).unwrap() as u32);
                }
            }
        }
        Exp {
            writes: store_writes(&rows),
            smem_reads,
            store: true,
            ..Default::default()
        }
    }

    /// Whether row `r` of the box has every outer coordinate in bounds (its dimension-0
    /// elements may all be out of bounds).
    fn row_outer_in_bounds(map: &TensorMap, coords: &[i64], r: usize) -> bool {
        let s = map.spec();
        let rank = map.rank();
        let mut rem = r as u64;
        for i in 1..rank {
            let n = (s.box_dim[i] as u64).div_ceil(s.element_strides[i] as u64);
            let k = rem % n;
            rem /= n;
            let x = coords[i] + k as i64 * s.element_strides[i] as i64;
            if x < 0 || x >= s.global_dim[i] as i64 {
                return false;
            }
        }
        // a row whose dimension-0 window is empty is skipped whole by the engine
        let c0 = coords[0];
        let d0 = s.global_dim[0] as i64;
        let b0 = s.box_dim[0] as i64;
        c0 < d0 && c0 + b0 > 0
    }

    fn exp_bulk_load(src: u64, smem: u32, size: u32, mask: u16, word: u16) -> Exp {
        let mut le = LoadExp::new(smem, size as u64, mask, word);
        for i in 0..size as u64 {
            le.set(smem as u64 + i, gbyte(src + i));
        }
        let reads = if size == 0 { vec![] } else { row_sectors(&[(src, src + size as u64 - 1)]) };
        Exp {
            load: Some(le),
            reads,
            ..Default::default()
        }
    }

    fn exp_bulk_store(dst: u64, smem: u32, size: u32) -> Exp {
        let row: Vec<(u64, u32)> = (0..size).map(|i| (dst + i as u64, smem + i)).collect();
        Exp {
            writes: store_writes(&[row]),
            smem_reads: (0..size / 16).map(|j| smem + 16 * j).collect(),
            store: true,
            ..Default::default()
        }
    }

    // ------------------------------------------------------------------ testbench

    /// Environment behaviour.
    #[derive(Clone, Copy)]
    struct Knobs {
        /// percent of cycles gmem_req_ready is high
        gmem_ready: u64,
        /// response latency range (cycles after acceptance)
        lat_min: u64,
        lat_max: u64,
        /// percent of cycles a due response is presented
        resp_pct: u64,
        /// percent ready of smem_wr / smem_rd / mbar
        smem_wr_ready: u64,
        smem_rd_ready: u64,
        mbar_ready: u64,
        /// percent of cycles a pending command is presented
        cmd_pct: u64,
    }

    const FAST: Knobs = Knobs {
        gmem_ready: 100,
        lat_min: 1,
        lat_max: 1,
        resp_pct: 100,
        smem_wr_ready: 100,
        smem_rd_ready: 100,
        mbar_ready: 100,
        cmd_pct: 100,
    };

    const RANDOM: Knobs = Knobs {
        gmem_ready: 80,
        lat_min: 1,
        lat_max: 24,
        resp_pct: 85,
        smem_wr_ready: 85,
        smem_rd_ready: 85,
        mbar_ready: 75,
        cmd_pct: 80,
    };

    /// One store op's bulk-group bookkeeping.
    struct StoreOp {
        /// the issuing thread
        thread: usize,
        /// its group number in that thread
        group: u64,
        /// the write tag (the group's slot), once seen
        tag: Option<u64>,
        /// its writes' reduction (the command's)
        red: (TmaRedOp, TmaRedType),
        /// refused (never reads or writes)
        refused: bool,
        /// writes issued
        writes_seen: usize,
        reads_total: usize,
        reads_seen: usize,
        writes_total: usize,
        acks_seen: usize,
    }

    /// `simulate` that counts the update passes.
    fn settle(u: &mut TmaEngine) -> u64 {
        for n in 1..=400 {
            u.update_all();
            if !u.has_changed() {
                return n;
            }
        }
        panic!("combinational logic did not settle");
    }

    #[derive(Default, Debug)]
    struct Stats {
        passes: u64,
        cycles: u64,
        smem_writes: u64,
        smem_bytes: u64,
        first_wr: Option<u64>,
        last_wr: u64,
        reads: u64,
        writes: u64,
        cpls: u64,
        faults: u64,
        copies: u64,
        remote_cpls: u64,
        /// most read tags in flight at once
        max_tags: u64,
    }

    struct Tb {
        uut: Box<TmaEngine>,
        trace: Option<Trace>,
        rng: XorShift,
        k: Knobs,
        cycle: u64,
        rank: u8,
        /// commands not yet accepted
        pending: VecDeque<(TmaCmd, TmaDescImage)>,
        /// memory: (due cycle, response, store-op index of a write)
        inflight: Vec<(u64, TmaGmemResp, Option<usize>)>,
        /// read tags in flight
        tags: [bool; TMA_TAGS],
        /// shared-memory read data for the next cycle
        rd_data: Option<TmaData16>,
        // expectations, in command order
        loads: VecDeque<LoadExp>,
        cpls: VecDeque<(u8, u16, u32)>,
        reads: VecDeque<u64>,
        writes: VecDeque<(u64, u32, [u8; 32], usize)>,
        smem_reads: VecDeque<(u32, Option<usize>)>,
        faults: VecDeque<TmaFaultKind>,
        ops: Vec<StoreOp>,
        /// commits generated / accepted
        commits_gen: [u64; TB_THREADS],
        commits_acc: [u64; TB_THREADS],
        /// the thread of the commands pushed next
        thread: usize,
        /// random wait_thread below this
        nthreads: u64,
        /// fixed wait_thread; random when None
        wait_thread: Option<u64>,
        /// ops accepted so far (index into `ops` of the next store to be accepted)
        ops_acc: usize,
        /// the next op to see `store_read_done` / `store_writes_issued`
        rd_next: usize,
        wi_next: usize,
        /// for each pending command: Some(op index) for a store
        pending_ops: VecDeque<Option<usize>>,
        st: Stats,
        idle_streak: u64,
        /// fixed (wait_n, wait_read) inputs; random when None
        wait: Option<(u64, bool)>,
        /// every shared-memory write (cta, address, data), when set
        wr_log: Option<Vec<(u8, u64, [u8; 16])>>,
        /// wait_done / groups_pending of the last cycle
        last_wait_done: bool,
        last_groups_pending: u64,
    }

    impl Tb {
        fn new(k: Knobs, seed: u64) -> Tb {
            Tb::build(k, seed, new_uut(MAX_OUT, 32), None)
        }

        fn with_params(k: Knobs, seed: u64, max_out: u32, bpc: u32) -> Tb {
            Tb::build(k, seed, new_uut(max_out, bpc), None)
        }

        fn build(k: Knobs, seed: u64, mut uut: Box<TmaEngine>, trace: Option<Trace>) -> Tb {
            assert!(simulate(&mut *uut, 200));
            let mut tb = Tb {
                uut,
                trace,
                rng: XorShift(seed),
                k,
                cycle: 0,
                rank: 2,
                pending: VecDeque::new(),
                inflight: vec![],
                tags: [false; TMA_TAGS],
                rd_data: None,
                loads: VecDeque::new(),
                cpls: VecDeque::new(),
                reads: VecDeque::new(),
                writes: VecDeque::new(),
                smem_reads: VecDeque::new(),
                faults: VecDeque::new(),
                ops: vec![],
                commits_gen: [0; TB_THREADS],
                commits_acc: [0; TB_THREADS],
                thread: 0,
                nthreads: 1,
                wait_thread: None,
                ops_acc: 0,
                rd_next: 0,
                wi_next: 0,
                pending_ops: VecDeque::new(),
                st: Stats::default(),
                idle_streak: 0,
                wait: None,
                wr_log: None,
                last_wait_done: false,
                last_groups_pending: 0,
            };
            for _ in 0..2 {
                tb.step();
            }
            tb
        }

        fn traced(k: Knobs, seed: u64) -> Tb {
            let inputs = vec![
                ("cta_rank", 4),
                ("cmd", TmaCmd::BITS),
                ("cmd_desc", TmaDescImage::BITS),
                ("cmd_valid", 1),
                ("gmem_req_ready", 1),
                ("gmem_resp", TmaGmemResp::BITS),
                ("gmem_resp_valid", 1),
                ("smem_wr_ready", 1),
                ("smem_rd_ready", 1),
                ("smem_rd_data", TmaData16::BITS),
                ("mbar_ready", 1),
                ("wait_n", 8),
                ("wait_read", 1),
                ("wait_thread", 10),
            ];
            let pre = vec![
                ("cmd_ready", 1),
                ("gmem_req", TmaGmemReq::BITS),
                ("gmem_req_valid", 1),
                ("gmem_resp_ready", 1),
                ("smem_wr", TmaSmemWrite::BITS),
                ("smem_wr_valid", 1),
                ("smem_rd_addr", 18),
                ("smem_rd_valid", 1),
                ("mbar_req", MbarrierReq::BITS),
                ("mbar_cta", 4),
                ("mbar_remote", 1),
                ("mbar_valid", 1),
                ("wait_done", 1),
                ("store_read_done", 1),
                ("store_writes_issued", 1),
            ];
            let post = vec![("fault", TmaFault::BITS), ("idle", 1), ("groups_pending", 4)];
            Tb::build(
                k,
                seed,
                new_uut(MAX_OUT, 32),
                Some(Trace {
                    inputs,
                    pre,
                    post,
                    rows: vec![],
                    warmup: 2,
                }),
            )
        }

        /// Queues a command with its expected effects.
        fn push(&mut self, mut c: TmaCmd, d: TmaDescImage, e: Exp) {
            c.thread = (self.thread as u64).into();
            if let Some(f) = e.fault {
                self.faults.push_back(f);
            }
            let mut op = None;
            if e.store || (e.fault.is_some() && matches!(c.kind, TmaCmdKind::BulkStore | TmaCmdKind::TensorStore)) {
                let idx = self.ops.len();
                self.ops.push(StoreOp {
                    thread: self.thread,
                    group: self.commits_gen[self.thread],
                    tag: None,
                    red: (c.red_op, c.red_type),
                    refused: e.fault.is_some(),
                    writes_seen: 0,
                    reads_total: e.smem_reads.len(),
                    reads_seen: 0,
                    writes_total: e.writes.len(),
                    acks_seen: 0,
                });
                op = Some(idx);
                for w in &e.writes {
                    self.writes.push_back((w.0, w.1, w.2, idx));
                }
                for &a in &e.smem_reads {
                    self.smem_reads.push_back((a, Some(idx)));
                }
            } else {
                // an S2S copy's source reads belong to no bulk group
                for &a in &e.smem_reads {
                    self.smem_reads.push_back((a, None));
                }
            }
            if e.commit {
                self.commits_gen[self.thread] += 1;
            }
            if let Some(l) = e.load {
                self.loads.push_back(l);
            }
            self.reads.extend(e.reads);
            self.pending.push_back((c, d));
            self.pending_ops.push_back(op);
        }

        fn push_commit(&mut self) {
            self.push(
                cmd(TmaCmdKind::CommitGroup),
                TmaDescImage::default(),
                Exp {
                    commit: true,
                    ..Default::default()
                },
            );
        }

        fn expectations_met(&self) -> bool {
            self.pending.is_empty()
                && self.loads.is_empty()
                && self.cpls.is_empty()
                && self.reads.is_empty()
                && self.writes.is_empty()
                && self.smem_reads.is_empty()
                && self.faults.is_empty()
                && self.inflight.is_empty()
        }

        /// Runs until every expectation is met and the engine is idle.
        fn drain(&mut self) {
            let mut n = 0;
            while !(self.expectations_met() && self.uut.idle.val()) {
                self.step();
                n += 1;
                assert!(n < 200_000, "no completion after {n} cycles");
            }
            // every accepted store op signalled its reads and writes
            let live = self.ops.iter().filter(|o| !o.refused).count();
            let seen = |k: usize| self.ops[..k].iter().filter(|o| !o.refused).count();
            assert_eq!((seen(self.rd_next), seen(self.wi_next)), (live, live), "store events");
            // idle: every group complete
            assert_eq!(self.uut.groups_pending.val().to_u64(), 0);
        }

        /// One clock cycle with the environment's responses; checks every output.
        fn step(&mut self) {
            let k = self.k;
            let c = self.cycle;
            // ---- inputs
            let present_cmd = !self.pending.is_empty() && self.rng.pct(k.cmd_pct);
            let (cm, cd) = if present_cmd { self.pending[0] } else { (TmaCmd::default(), TmaDescImage::default()) };
            let gready = self.rng.pct(k.gmem_ready);
            let due: Vec<usize> = (0..self.inflight.len()).filter(|&i| self.inflight[i].0 <= c).collect();
            let resp = if !due.is_empty() && self.rng.pct(k.resp_pct) {
                Some(due[self.rng.below(due.len() as u64) as usize])
            } else {
                None
            };
            let rsp = resp.map(|i| self.inflight[i].1).unwrap_or_default();
            let wr_ready = self.rng.pct(k.smem_wr_ready);
            let rd_ready = self.rng.pct(k.smem_rd_ready);
            let rd_data = self.rd_data.take().unwrap_or_default();
            let mready = self.rng.pct(k.mbar_ready);
            let (wait_n, wait_read) = match self.wait {
                Some(w) => w,
                None => (self.rng.below(9), self.rng.pct(50)),
            };
            let wait_thread = match self.wait_thread {
                Some(t) => t,
                None => self.rng.below(self.nthreads),
            };
            let u = &mut *self.uut;
            u.cta_rank.next = (self.rank as u64).into();
            u.cmd.next = cm;
            u.cmd_desc.next = cd;
            u.cmd_valid.next = present_cmd;
            u.gmem_req_ready.next = gready;
            u.gmem_resp.next = rsp;
            u.gmem_resp_valid.next = resp.is_some();
            u.smem_wr_ready.next = wr_ready;
            u.smem_rd_ready.next = rd_ready;
            u.smem_rd_data.next = rd_data;
            u.mbar_ready.next = mready;
            u.wait_n.next = wait_n.into();
            u.wait_read.next = wait_read;
            u.wait_thread.next = wait_thread.into();
            u.clock.next = false.into();
            self.st.passes += settle(u);
            let cmd_ready = u.cmd_ready.val();
            let greq = u.gmem_req.val();
            let greq_v = u.gmem_req_valid.val();
            let resp_ready = u.gmem_resp_ready.val();
            let swr = u.smem_wr.val();
            let swr_v = u.smem_wr_valid.val();
            let srd_a = u.smem_rd_addr.val();
            let srd_v = u.smem_rd_valid.val();
            let mreq = u.mbar_req.val();
            let mcta = u.mbar_cta.val();
            let mremote = u.mbar_remote.val();
            let mvalid = u.mbar_valid.val();
            let wdone = u.wait_done.val();
            let gpend = u.groups_pending.val();
            let st_rd = u.store_read_done.val();
            let st_wi = u.store_writes_issued.val();
            let fault = u.fault.val();
            let idle = u.idle.val();
            u.clock.next = true.into();
            self.st.passes += settle(u);
            if let Some(t) = &mut self.trace {
                let h = |x: bool| Trace::hex(x);
                t.rows.push((
                    vec![
                        Trace::hex(Bits::<4>::from(self.rank as u64)),
                        Trace::hex(cm),
                        Trace::hex(cd),
                        h(present_cmd),
                        h(gready),
                        Trace::hex(rsp),
                        h(resp.is_some()),
                        h(wr_ready),
                        h(rd_ready),
                        Trace::hex(rd_data),
                        h(mready),
                        Trace::hex(Bits::<8>::from(wait_n)),
                        h(wait_read),
                        Trace::hex(Bits::<10>::from(wait_thread)),
                    ],
                    [
                        h(cmd_ready),
                        Trace::hex(greq),
                        h(greq_v),
                        h(resp_ready),
                        Trace::hex(swr),
                        h(swr_v),
                        Trace::hex(srd_a),
                        h(srd_v),
                        Trace::hex(mreq),
                        Trace::hex(mcta),
                        h(mremote),
                        h(mvalid),
                        h(wdone),
                        h(st_rd),
                        h(st_wi),
                        Trace::hex(u.fault.val()),
                        h(u.idle.val()),
                        Trace::hex(u.groups_pending.val()),
                    ]
                    .join(" "),
                ));
            }
            // ---- checks of this cycle's outputs (sampled before the edge)
            assert!(resp_ready, "gmem_resp_ready is always high");
            // bulk groups: a wait that holds must not see an unfinished older op
            let committed = self.commits_acc[wait_thread as usize];
            if wdone && committed > wait_n {
                for (i, op) in self.ops[..self.ops_acc].iter().enumerate() {
                    if op.thread == wait_thread as usize && op.group < committed - wait_n {
                        if wait_read {
                            assert_eq!(op.reads_seen, op.reads_total, "cycle {c}: wait_group.read {wait_n} holds before op {i}'s reads");
                        } else {
                            assert_eq!(op.acks_seen, op.writes_total, "cycle {c}: wait_group {wait_n} holds before op {i}'s writes completed");
                        }
                    }
                }
            }
            if present_cmd && cmd_ready {
                let (cmd_acc, _) = self.pending.pop_front().unwrap();
                let op = self.pending_ops.pop_front().unwrap();
                if cmd_acc.kind == TmaCmdKind::CommitGroup {
                    self.commits_acc[cmd_acc.thread.index()] += 1;
                }
                if let Some(i) = op {
                    assert_eq!(i, self.ops_acc);
                    self.ops_acc += 1;
                }
            }
            if let Some(i) = resp {
                let (_, r, op) = self.inflight.swap_remove(i);
                if r.write {
                    self.ops[op.unwrap()].acks_seen += 1;
                } else {
                    self.tags[r.tag.index()] = false;
                }
            }
            if greq_v && gready {
                let addr = greq.addr_lo.to_u64() | greq.addr_hi.to_u64() << 32;
                let lat = k.lat_min + self.rng.below(k.lat_max - k.lat_min + 1);
                if greq.write {
                    self.st.writes += 1;
                    let (ea, em, ed, op) = self.writes.pop_front().unwrap_or_else(|| panic!("cycle {c}: unexpected write {addr:#x}"));
                    let mask = greq.mask_lo.to_u64() as u32 | (greq.mask_hi.to_u64() as u32) << 16;
                    let mut data = [0u8; 32];
                    data[..16].copy_from_slice(&greq.data_lo.to_bytes());
                    data[16..].copy_from_slice(&greq.data_hi.to_bytes());
                    assert_eq!((addr, mask), (ea, em), "cycle {c}: write sector / mask");
                    for i in 0..32 {
                        if em >> i & 1 == 1 {
                            assert_eq!(data[i], ed[i], "cycle {c}: write byte {i} of sector {addr:#x}");
                        }
                    }
                    // the tag is the op's group slot: one per (thread, group), not shared with
                    // another group that is not complete
                    let tag = greq.tag.to_u64();
                    assert!(tag < 16, "cycle {c}: write tag {tag} is no group slot");
                    let (th, g) = (self.ops[op].thread, self.ops[op].group);
                    assert_eq!(*self.ops[op].tag.get_or_insert(tag), tag, "cycle {c}: op {op}'s writes change slot");
                    self.ops[op].writes_seen += 1;
                    assert_eq!((greq.red_op, greq.red_type), self.ops[op].red, "cycle {c}: op {op}'s writes carry its reduction");
                    for (j, o) in self.ops.iter().enumerate() {
                        if o.tag == Some(tag) && (o.thread, o.group) != (th, g) {
                            assert_eq!(o.acks_seen, o.writes_total, "cycle {c}: op {op} (thread {th} group {g}) shares slot {tag} with incomplete op {j} (thread {} group {})", o.thread, o.group);
                        }
                    }
                    self.inflight.push((
                        c + lat,
                        TmaGmemResp {
                            tag: greq.tag,
                            write: true,
                            ..Default::default()
                        },
                        Some(op),
                    ));
                } else {
                    self.st.reads += 1;
                    let ea = self.reads.pop_front().unwrap_or_else(|| panic!("cycle {c}: unexpected read {addr:#x}"));
                    assert_eq!(addr, ea, "cycle {c}: read sector");
                    let t = greq.tag.index();
                    assert!(!self.tags[t], "cycle {c}: tag {t} reused while in flight");
                    self.tags[t] = true;
                    let n = self.tags.iter().filter(|x| **x).count() as u64;
                    self.st.max_tags = self.st.max_tags.max(n);
                    let bytes: Vec<u8> = (0..32).map(|i| gbyte(addr + i)).collect();
                    self.inflight.push((
                        c + lat,
                        TmaGmemResp {
                            tag: greq.tag,
                            write: false,
                            data_lo: TmaData16::from_bytes(&bytes[..16]),
                            data_hi: TmaData16::from_bytes(&bytes[16..]),
                        },
                        None,
                    ));
                }
            }
            if srd_v && rd_ready {
                let a = srd_a.to_u64() as u32;
                let (ea, op) = self.smem_reads.pop_front().unwrap_or_else(|| panic!("cycle {c}: unexpected smem read {a:#x}"));
                assert_eq!(a, ea, "cycle {c}: smem read address");
                if let Some(op) = op {
                    self.ops[op].reads_seen += 1;
                }
                let bytes: Vec<u8> = (0..16).map(|i| sbyte(a + i)).collect();
                self.rd_data = Some(TmaData16::from_bytes(&bytes));
            }
            // per-op store events, in command order (refused ops have none)
            if st_rd {
                while self.ops.get(self.rd_next).is_some_and(|o| o.refused) {
                    self.rd_next += 1;
                }
                let i = self.rd_next;
                assert!(i < self.ops_acc, "cycle {c}: store_read_done with no store op");
                assert_eq!(self.ops[i].reads_seen, self.ops[i].reads_total, "cycle {c}: store_read_done of op {i} before its reads");
                self.rd_next += 1;
            }
            if st_wi {
                while self.ops.get(self.wi_next).is_some_and(|o| o.refused) {
                    self.wi_next += 1;
                }
                let i = self.wi_next;
                assert!(i < self.rd_next, "cycle {c}: store_writes_issued of op {i} before its store_read_done");
                assert_eq!(self.ops[i].writes_seen, self.ops[i].writes_total, "cycle {c}: store_writes_issued of op {i} before its writes");
                self.wi_next += 1;
            }
            // loads retire in order; a copy without bytes retires at once
            while self.loads.front().map(|l| l.remaining == 0).unwrap_or(false) {
                let l = self.loads.pop_front().unwrap();
                self.cpls.extend(l.cpl);
                self.st.copies += 1;
            }
            if swr_v && wr_ready {
                self.st.smem_writes += 1;
                self.st.smem_bytes += 16;
                self.st.first_wr.get_or_insert(c);
                self.st.last_wr = c;
                let a = swr.addr.to_u64();
                let cta = swr.cta.index();
                assert_eq!(swr.mask.to_u64(), 0xFFFF, "cycle {c}: loads write whole beats");
                if let Some(l) = self.loads.front() {
                    assert_eq!((swr.red_op, swr.red_type), l.red, "cycle {c}: the write's reduction");
                }
                assert_eq!(a % 16, 0);
                let data = swr.data.to_bytes();
                if let Some(log) = &mut self.wr_log {
                    log.push((cta as u8, a, data));
                }
                let l = self.loads.front_mut().unwrap_or_else(|| panic!("cycle {c}: unexpected smem write {a:#x}"));
                assert!(l.slot[cta] >= 0, "cycle {c}: write to cta {cta} outside the mask");
                assert!(a >= l.base as u64 && a + 16 <= l.base as u64 + l.span as u64, "cycle {c}: smem write {a:#x} outside the box at {:#x}", l.base);
                for i in 0..16 {
                    let idx = l.slot[cta] as usize * l.span + (a - l.base as u64) as usize + i;
                    assert!(l.bytes[idx] >= 0, "cycle {c}: byte {:#x} of cta {cta} not expected (or written twice)", a + i as u64);
                    assert_eq!(data[i] as i16, l.bytes[idx], "cycle {c}: byte {:#x} of cta {cta}", a + i as u64);
                    l.bytes[idx] = -2;
                }
                l.remaining -= 16;
                while self.loads.front().map(|l| l.remaining == 0).unwrap_or(false) {
                    let l = self.loads.pop_front().unwrap();
                    self.cpls.extend(l.cpl);
                    self.st.copies += 1;
                }
            }
            if mvalid && mready {
                self.st.cpls += 1;
                let (ec, ew, et) = self.cpls.pop_front().unwrap_or_else(|| panic!("cycle {c}: complete_tx before the copy's data (cta {})", mcta.index()));
                assert_eq!(mreq.op, MbarrierOp::CompleteTx);
                assert_eq!(
                    (mcta.index() as u8, mreq.word.to_u64() as u16, mreq.tx_count.to_u64() as u32),
                    (ec, ew, et),
                    "cycle {c}: complete_tx (cta, word, bytes)"
                );
                assert_eq!(mremote, ec != self.rank, "cycle {c}: mbar_remote");
                if mremote {
                    self.st.remote_cpls += 1;
                }
            }
            if fault.valid {
                self.st.faults += 1;
                let e = self.faults.pop_front().unwrap_or_else(|| panic!("cycle {c}: unexpected fault {:?}", fault.kind));
                assert_eq!(fault.kind, e, "cycle {c}: fault kind");
            }
            self.last_wait_done = wdone;
            self.last_groups_pending = gpend.to_u64();
            if idle {
                assert!(wdone, "cycle {c}: idle but wait_group {wait_n} does not hold");
                assert_eq!(gpend.to_u64(), 0, "cycle {c}: idle with groups pending");
            }
            self.idle_streak = if idle && !self.pending.is_empty() { self.idle_streak + 1 } else { 0 };
            assert!(self.idle_streak < 5000, "cycle {c}: commands pending but the engine stays idle");
            self.cycle += 1;
            self.st.cycles += 1;
        }
    }

    // ------------------------------------------------------------------ map helpers

    fn map(spec: TensorMapSpec) -> (TensorMap, TmaDescImage) {
        let m = TensorMap::new(spec).unwrap_or_else(|e| panic!("{e}"));
        let d = TmaDescImage::from_bytes(&m.encode());
        (m, d)
    }

    fn load_t(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], smem: u32, mask: u16, word: u16) {
        load_o(tb, m, coords, &[], smem, mask, word);
    }

    fn store_t(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], smem: u32) {
        store_o(tb, m, coords, &[], smem);
    }

    /// A tensor command for `m` (the load mode of its map; im2col offsets `offs`).
    fn tensor_m(kind: TmaCmdKind, m: &TensorMap, coords: &[i64], offs: &[i64], smem: u32, mask: u16, word: u16) -> TmaCmd {
        let mut c = tensor(kind, m.rank(), coords, smem, mask, word);
        c.im2col = m.mode() == TensorMapMode::Im2col;
        let o = |i: usize| -> Bits<16> { (offs.get(i).copied().unwrap_or(0) as u64).into() };
        c.o0 = o(0);
        c.o1 = o(1);
        c.o2 = o(2);
        c
    }

    fn load_o(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], offs: &[i64], smem: u32, mask: u16, word: u16) {
        let e = exp_tensor_load(&m.0, coords, offs, smem, mask, word);
        tb.push(tensor_m(TmaCmdKind::TensorLoad, &m.0, coords, offs, smem, mask, word), m.1, e);
    }

    fn store_o(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], offs: &[i64], smem: u32) {
        let e = exp_tensor_store(&m.0, coords, offs, smem);
        tb.push(tensor_m(TmaCmdKind::TensorStore, &m.0, coords, offs, smem, 0, 0), m.1, e);
    }

    fn load_b(tb: &mut Tb, src: u64, smem: u32, size: u32, mask: u16, word: u16) {
        let e = exp_bulk_load(src, smem, size, mask, word);
        tb.push(bulk_load(src, smem, size, mask, word), TmaDescImage::default(), e);
    }

    fn store_b(tb: &mut Tb, dst: u64, smem: u32, size: u32) {
        let e = exp_bulk_store(dst, smem, size);
        tb.push(bulk_store(dst, smem, size), TmaDescImage::default(), e);
    }

    fn s2s_cmd(src: u32, dst: u32, size: u32, cta: u8, word: u16, red: (TmaRedOp, TmaRedType)) -> TmaCmd {
        TmaCmd {
            kind: TmaCmdKind::BulkS2S,
            smem: (src as u64).into(),
            dsmem: (dst as u64).into(),
            size: (size as u64).into(),
            mbar: (word as u64).into(),
            cta_mask: (1u64 << cta).into(),
            red_op: red.0,
            red_type: red.1,
            ..Default::default()
        }
    }

    /// shared::cta -> shared::cluster (PTX 9.7.9.25.4.1 / .4.2): the source beats read in
    /// order, each written (carrying the reduction) at the same offset from `dst` in CTA
    /// `cta`, then one complete_tx of `size` bytes there.
    fn s2s_b(tb: &mut Tb, src: u32, dst: u32, size: u32, cta: u8, word: u16, red: (TmaRedOp, TmaRedType)) {
        let mut le = LoadExp::new(dst, size as u64, 1 << cta, word);
        le.red = red;
        for i in 0..size {
            le.set((dst + i) as u64, sbyte(src + i));
        }
        let e = Exp {
            load: Some(le),
            smem_reads: (0..size / 16).map(|j| src + 16 * j).collect(),
            ..Default::default()
        };
        tb.push(s2s_cmd(src, dst, size, cta, word, red), TmaDescImage::default(), e);
    }

    /// A bulk prefetch (PTX 9.7.9.25.4.3): the sector reads of a load of the range, nothing
    /// written, no complete_tx.
    fn prefetch_b(tb: &mut Tb, src: u64, size: u32) {
        let mut c = bulk_load(src, 0, size, 0, 0);
        c.kind = TmaCmdKind::BulkPrefetch;
        let reads = if size == 0 { vec![] } else { row_sectors(&[(src, src + size as u64 - 1)]) };
        tb.push(c, TmaDescImage::default(), Exp { reads, ..Default::default() });
    }

    /// A tensor prefetch (PTX 9.7.9.25.5.4): the sector reads of the tiled load of the box.
    fn prefetch_t(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64]) {
        prefetch_o(tb, m, coords, &[]);
    }

    fn prefetch_o(tb: &mut Tb, m: &(TensorMap, TmaDescImage), coords: &[i64], offs: &[i64]) {
        let mut e = exp_tensor_load(&m.0, coords, offs, 0, 1, 0);
        e.load = None;
        tb.push(tensor_m(TmaCmdKind::TensorPrefetch, &m.0, coords, offs, 0, 0, 0), m.1, e);
    }

    // ------------------------------------------------------------------ random stimulus

    const DTYPES: [Dt; 8] = [Dt::Uint8, Dt::Uint16, Dt::Float16, Dt::Bfloat16, Dt::Float32, Dt::Int32, Dt::Float64, Dt::Uint64];

    /// A random valid tiled map: rank 1..=5, every element size, swizzles, element strides,
    /// small boxes (at most 2 KiB) over small tensors so that coordinates reach every edge.
    fn random_map(rng: &mut XorShift) -> (TensorMap, TmaDescImage) {
        loop {
            let dt = DTYPES[rng.below(8) as usize];
            let es = dt.element_size().unwrap() as u64;
            let rank = [1, 2, 2, 2, 3, 3, 4, 5][rng.below(8) as usize];
            let sw = [TensorMapSwizzle::None, TensorMapSwizzle::None, TensorMapSwizzle::B32, TensorMapSwizzle::B64, TensorMapSwizzle::B128][rng.below(5) as usize];
            let max_row = sw.span_bytes().map(|s| s as u64).unwrap_or(256).min(256 * es).min(256);
            let rowbytes = 16 * (1 + rng.below(max_row / 16));
            let mut box_dim = vec![(rowbytes / es) as u32];
            let mut estr = vec![1 + rng.below(8) as u32];
            let mut rows = 1u64;
            for _ in 1..rank {
                let er = if rng.pct(80) { 3 } else { 8 };
                let e = if rng.pct(60) { 1 } else { 1 + rng.below(er) as u32 };
                let br = if rng.pct(80) { 6 } else { 12 };
                let mut bd = 1 + rng.below(br) as u32;
                while rows * (bd as u64).div_ceil(e as u64) * rowbytes > 2048 && bd > 1 {
                    bd -= 1;
                }
                rows *= (bd as u64).div_ceil(e as u64);
                box_dim.push(bd);
                estr.push(e);
            }
            let gdim: Vec<u64> = box_dim
                .iter()
                .zip(&estr)
                .enumerate()
                .map(|(i, (&bd, &e))| {
                    let reach = if i == 0 { bd as u64 } else { bd as u64 * e as u64 };
                    1 + rng.below(reach * 2 + 4)
                })
                .collect();
            let mut strides = vec![];
            let mut prev = (gdim[0] * es).div_ceil(16) * 16 + 16 * rng.below(3);
            for i in 1..rank {
                strides.push(prev);
                prev = prev * gdim[i] + 16 * rng.below(3);
            }
            let gaddr = GBASE + 16 * rng.below(1 << 12);
            let mut spec = TensorMapSpec::tiled(dt, gaddr, gdim, strides, box_dim);
            spec.element_strides = estr;
            spec.swizzle = sw;
            if dt.is_float() && rng.pct(50) {
                spec.oob_fill = TensorMapOobFill::NanRequestZeroFma;
            }
            if let Ok(m) = TensorMap::new(spec) {
                let d = TmaDescImage::from_bytes(&m.encode());
                return (m, d);
            }
        }
    }

    /// A random valid im2col map (PTX 5.5.4): rank 3..=5, every element size, swizzles, element
    /// strides, pixel box corners (small, sometimes at the rank's range ends), at most 2 KiB
    /// per box over small tensors so that pixels reach every edge.
    fn random_im2col_map(rng: &mut XorShift) -> (TensorMap, TmaDescImage) {
        loop {
            let dt = DTYPES[rng.below(8) as usize];
            let es = dt.element_size().unwrap() as u64;
            let rank = 3 + rng.below(3) as usize;
            let sw = [TensorMapSwizzle::None, TensorMapSwizzle::None, TensorMapSwizzle::B32, TensorMapSwizzle::B64, TensorMapSwizzle::B128][rng.below(5) as usize];
            let max_row = sw.span_bytes().map(|s| s as u64).unwrap_or(256).min(256 * es).min(256);
            let rowbytes = 16 * (1 + rng.below(max_row / 16));
            let cpp = (rowbytes / es) as u32;
            let pixels = 1 + rng.below((2048 / rowbytes).clamp(1, 64)) as u32;
            let range = [32767i64, 127, 15][rank - 3];
            let mut gdim = vec![1 + rng.below(2 * cpp as u64 + 4)];
            let (mut lower, mut upper) = (vec![], vec![]);
            for _ in 0..rank - 2 {
                let d = 1 + rng.below(10);
                gdim.push(d);
                let corner = |rng: &mut XorShift| -> i32 {
                    if rng.pct(5) {
                        [-range - 1, range][rng.below(2) as usize] as i32
                    } else {
                        rng.below(7) as i32 - 3
                    }
                };
                lower.push(corner(rng));
                upper.push(corner(rng));
            }
            gdim.push(1 + rng.below(4));
            let estr: Vec<u32> = (0..rank).map(|_| if rng.pct(50) { 1 } else { 1 + rng.below(8) as u32 }).collect();
            let mut strides = vec![];
            let mut prev = (gdim[0] * es).div_ceil(16) * 16 + 16 * rng.below(3);
            for i in 1..rank {
                strides.push(prev);
                prev = prev * gdim[i] + 16 * rng.below(3);
            }
            let gaddr = GBASE + 16 * rng.below(1 << 12);
            let mut spec = TensorMapSpec::im2col(dt, gaddr, gdim, strides, lower, upper, cpp, pixels);
            spec.element_strides = estr;
            spec.swizzle = sw;
            if dt.is_float() && rng.pct(50) {
                spec.oob_fill = TensorMapOobFill::NanRequestZeroFma;
            }
            if let Ok(m) = TensorMap::new(spec) {
                let d = TmaDescImage::from_bytes(&m.encode());
                return (m, d);
            }
        }
    }

    /// im2col coordinates and offsets: the channel start anywhere around dimension 0 (not
    /// 16-byte aligned: that rule is tile mode's), the pixel anywhere from before the lower
    /// corner to past the upper one (rarely at the ends of the 32-bit range), offsets small
    /// or at the rank's limit.
    fn random_im2col_coords(rng: &mut XorShift, m: &TensorMap) -> (Vec<i64>, Vec<i64>) {
        let s = m.spec();
        let r = m.rank();
        let cpp = s.channels_per_pixel as i64;
        let obits = [16u32, 8, 5][r - 3];
        let offs: Vec<i64> = (0..r - 2)
            .map(|_| if rng.pct(10) { (1i64 << obits) - 1 - rng.below(2) as i64 } else { rng.below(4) as i64 })
            .collect();
        let mut c = vec![-cpp - 2 + rng.below(s.global_dim[0] + 2 * cpp as u64 + 4) as i64];
        for i in 1..r {
            let d = s.global_dim[i] as i64;
            let x = if rng.pct(3) {
                [i32::MIN as i64 + rng.below(4) as i64, i32::MAX as i64 - rng.below(4) as i64][rng.below(2) as usize]
            } else if i < r - 1 {
                let lo = s.pixel_box_lower_corner[i - 1] as i64 - offs[i - 1];
                let hi = d + s.pixel_box_upper_corner[i - 1] as i64;
                let (lo, hi) = (lo.min(hi) - 3, lo.max(hi) + 3);
                lo + rng.below((hi - lo + 1) as u64) as i64
            } else {
                -2 + rng.below(d as u64 + 4) as i64
            };
            c.push(x);
        }
        (c, offs)
    }

    /// Coordinates anywhere from fully before to fully after the tensor in every dimension.
    fn random_coords(rng: &mut XorShift, m: &TensorMap) -> Vec<i64> {
        let s = m.spec();
        (0..m.rank())
            .map(|i| {
                let reach = s.box_dim[i] as i64 * if i == 0 { 1 } else { s.element_strides[i] as i64 };
                let d = s.global_dim[i] as i64;
                if rng.pct(40) {
                    rng.below((d - reach).max(0) as u64 + 1) as i64
                } else {
                    -reach - 2 + rng.below((d + 2 * reach + 4) as u64) as i64
                }
            })
            .collect()
    }

    fn random_mask(rng: &mut XorShift) -> u16 {
        if rng.pct(70) {
            1 << rng.below(16)
        } else {
            let mut m = 0u16;
            for _ in 0..2 + rng.below(3) {
                m |= 1 << rng.below(16);
            }
            m
        }
    }

    /// Queues one random command; returns true for a copy (load or store).
    fn random_command(tb: &mut Tb, rng: &mut XorShift) -> bool {
        // stores and commits of up to 4 threads (one context each)
        tb.thread = rng.below(4) as usize;
        let r = rng.below(100);
        let smem_t = 128 * rng.below(1000) as u32;
        let smem_b = 16 * rng.below(8000) as u32;
        let word = rng.below(1 << 16) as u16;
        if r < 52 {
            if rng.pct(20) {
                let m = random_im2col_map(rng);
                let (c, o) = random_im2col_coords(rng, &m.0);
                load_o(tb, &m, &c, &o, smem_t, random_mask(rng), word);
            } else {
                let m = random_map(rng);
                let c = random_coords(rng, &m.0);
                load_t(tb, &m, &c, smem_t, random_mask(rng), word);
            }
        } else if r < 67 {
            if rng.pct(15) {
                let m = random_im2col_map(rng);
                let (c, o) = random_im2col_coords(rng, &m.0);
                store_o(tb, &m, &c, &o, smem_t);
            } else {
                let m = random_map(rng);
                let c = random_coords(rng, &m.0);
                store_t(tb, &m, &c, smem_t);
            }
        } else if r < 79 {
            let sr = if rng.pct(90) { 24 } else { 128 };
            let size = 16 * rng.below(sr) as u32;
            match rng.below(10) {
                0 => prefetch_b(tb, GBASE + 16 * rng.below(1 << 16), size),
                1 => {
                    if rng.pct(30) {
                        let m = random_im2col_map(rng);
                        let (c, o) = random_im2col_coords(rng, &m.0);
                        prefetch_o(tb, &m, &c, &o);
                    } else {
                        let m = random_map(rng);
                        let c = random_coords(rng, &m.0);
                        prefetch_t(tb, &m, &c);
                    }
                }
                2 | 3 => {
                    const REDS: [(TmaRedOp, TmaRedType); 4] = [
                        (TmaRedOp::Copy, TmaRedType::B32),
                        (TmaRedOp::Add, TmaRedType::U32),
                        (TmaRedOp::Max, TmaRedType::S32),
                        (TmaRedOp::Xor, TmaRedType::B64),
                    ];
                    let red = REDS[rng.below(4) as usize];
                    let dst = 16 * rng.below(8000) as u32;
                    s2s_b(tb, smem_b, dst, size, rng.below(16) as u8, word, red);
                }
                _ => load_b(tb, GBASE + 16 * rng.below(1 << 16), smem_b, size, random_mask(rng), word),
            }
        } else if r < 88 {
            let size = 16 * rng.below(24) as u32;
            store_b(tb, GBASE + 16 * rng.below(1 << 16), smem_b, size);
        } else if r < 96 {
            tb.push_commit();
            return false;
        } else {
            // refused commands: misaligned shared address, wrong .Nd, a corrupted header
            let m = random_map(rng);
            let c = random_coords(rng, &m.0);
            let store = rng.pct(50);
            let kind = if store { TmaCmdKind::TensorStore } else { TmaCmdKind::TensorLoad };
            let mut cm = tensor(kind, m.0.rank(), &c, smem_t, random_mask(rng), word);
            let mut d = m.1;
            let f = match rng.below(4) {
                0 => {
                    cm.smem = ((smem_t + 16 * (1 + rng.below(7) as u32)) as u64).into();
                    TmaFaultKind::TmaMisaligned
                }
                1 => {
                    cm.dims = ((m.0.rank() as u64 % 5) + 1).into();
                    TmaFaultKind::TmaCoordOutOfRange
                }
                2 => {
                    let mut img = m.0.encode();
                    img[0] ^= 1 << rng.below(8);
                    assert!(TensorMap::decode(&img).is_err());
                    d = TmaDescImage::from_bytes(&img);
                    TmaFaultKind::TensorMapInvalid
                }
                _ => {
                    let mut img = m.0.encode();
                    let bit = 626 + rng.below(1024 - 626) as usize;
                    img[bit / 8] ^= 1 << (bit % 8);
                    assert!(TensorMap::decode(&img).is_err());
                    d = TmaDescImage::from_bytes(&img);
                    TmaFaultKind::TensorMapInvalid
                }
            };
            tb.push(
                cm,
                d,
                Exp {
                    fault: Some(f),
                    ..Default::default()
                },
            );
            return false;
        }
        true
    }

    /// Drives `copies` random copies (plus commits and refused commands), checking every
    /// output against the reference; returns the statistics.
    fn run_random(tb: &mut Tb, seed: u64, copies: u64) -> Stats {
        tb.nthreads = 4;
        let mut rng = XorShift(seed);
        let mut n = 0;
        let t0 = std::time::Instant::now();
        while n < copies {
            while tb.pending.len() < 3 && n < copies {
                if random_command(tb, &mut rng) {
                    n += 1;
                }
            }
            tb.step();
        }
        tb.drain();
        let dt = t0.elapsed().as_secs_f64();
        eprintln!(
            "{n} copies in {} cycles, {dt:.2} s: {:.0} cycles/s; {:?}",
            tb.st.cycles,
            tb.st.cycles as f64 / dt,
            tb.st
        );
        std::mem::take(&mut tb.st)
    }

    // ------------------------------------------------------------------ tests

    #[test]
    fn tma_check_all_and_yosys_validate() {
        require_yosys();
        let uut = new_uut(MAX_OUT, 32);
        check_all(&*uut).unwrap();
        let vlog = generate_verilog(&*uut);
        yosys_validate("hopsync_tma_engine", &vlog).unwrap();
        yosys_check_flat("tma_engine", &vlog);
    }

    #[test]
    fn descriptor_struct_is_the_image_layout() {
        // the packed TmaDescImage is the 128-byte image, bit for bit (LSB-first)
        let m = map(TensorMapSpec::tiled(
            Dt::Float16,
            GBASE + 0x1230,
            vec![100, 7, 3],
            vec![208, 208 * 7 + 32],
            vec![64, 5, 2],
        ));
        let img = m.0.encode();
        let hex: String = img.iter().rev().map(|b| format!("{b:02x}")).collect();
        assert_eq!(Trace::hex(m.1), hex.trim_start_matches('0'));
        assert_eq!(TmaDescImage::BITS, 1024);
        assert_eq!(m.1.gaddr_lo.to_u64(), 0x1230);
        assert_eq!(m.1.gaddr_hi.to_u64(), 1);
        assert_eq!(
            (
                m.1.box0_m1.to_u64(),
                m.1.box1_m1.to_u64(),
                m.1.gstride1_lo.to_u64()
            ),
            (63, 4, 208 * 7 + 32)
        );
    }

    /// 1-D bulk copies: sizes 0..=1 KiB, sources on and off the 32-byte sector grid, loads and
    /// stores; every byte, sector request and complete_tx is checked against the reference.
    #[test]
    fn bulk_copies_1d() {
        let mut tb = Tb::new(FAST, 1);
        let cases = [
            (0u64, 16u32),
            (16, 16),
            (0, 48),
            (16, 48),
            (0, 256),
            (48, 1024),
            (16, 0),
            (32, 4096),
        ];
        for (i, &(off, size)) in cases.iter().enumerate() {
            load_b(
                &mut tb,
                GBASE + 0x2000 * i as u64 + off,
                0x2000 * i as u32 + 16 * (i as u32 % 3),
                size,
                1 << 2,
                40 + i as u16,
            );
        }
        tb.drain();
        assert_eq!((tb.st.copies, tb.st.cpls), (8, 8));
        assert_eq!(
            tb.st.smem_bytes,
            cases.iter().map(|c| c.1 as u64).sum::<u64>()
        );
        // 16@0: 1 sector, 16@16: 1, 48@0: 2, 48@16: 2, 256@0: 8, 1024@48: 33, 0: 0, 4096@32: 128
        assert_eq!(tb.st.reads, 1 + 1 + 2 + 2 + 8 + 33 + 128);
        for (i, &(off, size)) in cases.iter().enumerate() {
            store_b(
                &mut tb,
                GBASE + 0x10_0000 + 0x2000 * i as u64 + off,
                0x400 + 16 * i as u32,
                size,
            );
        }
        tb.drain();
        assert_eq!(tb.st.writes, 1 + 1 + 2 + 2 + 8 + 33 + 128);
    }

    /// A 2-D box, row start aligned and misaligned to 16 bytes in global memory, load and store.
    #[test]
    fn tensor_2d_box() {
        let mut tb = Tb::new(FAST, 2);
        let m = map(TensorMapSpec::tiled(
            Dt::Float32,
            GBASE,
            vec![64, 32],
            vec![256],
            vec![16, 8],
        ));
        load_t(&mut tb, &m, &[8, 4], 0x800, 1 << 2, 10);
        load_t(&mut tb, &m, &[3, 5], 0x1000, 1 << 2, 11);
        tb.drain();
        assert_eq!((tb.st.copies, tb.st.smem_bytes), (2, 1024));
        // aligned rows: 2 sectors each; rows starting 12 bytes into a chunk: 3 sectors
        assert_eq!(tb.st.reads, 8 * 2 + 8 * 3);
        store_t(&mut tb, &m, &[8, 4], 0x800);
        store_t(&mut tb, &m, &[3, 5], 0x1000);
        tb.drain();
        assert_eq!(tb.st.writes, 8 * 2 + 8 * 3);
    }

    /// Each swizzle mode: 16-byte chunk c of 128-byte line r lands at chunk c ^ (r mod 2/4/8)
    /// of its line (PTX 5.5.7 tables), checked on the chunks the engine wrote, with a base
    /// that is 1024-byte aligned and one that is not (the swizzle uses the absolute address).
    #[test]
    fn each_swizzle() {
        for (sw, span, bits) in [
            (TensorMapSwizzle::B32, 32u64, 1u64),
            (TensorMapSwizzle::B64, 64, 2),
            (TensorMapSwizzle::B128, 128, 3),
        ] {
            for base in [0x4000u32, 0x4000 + 128 * 3] {
                let mut tb = Tb::new(FAST, 3);
                tb.wr_log = Some(vec![]);
                let mut spec = TensorMapSpec::tiled(
                    Dt::Float16,
                    GBASE,
                    vec![span / 2, 32],
                    vec![256],
                    vec![(span / 2) as u32, 16],
                );
                spec.swizzle = sw;
                let m = map(spec);
                load_t(&mut tb, &m, &[0, 2], base, 1 << 2, 1);
                tb.drain();
                let log = tb.wr_log.take().unwrap();
                assert_eq!(log.len() as u64, 16 * span / 16);
                for r in 0..16u64 {
                    for c in 0..span / 16 {
                        let g = GBASE + (2 + r) * 256 + 16 * c;
                        let want: Vec<u8> = (0..16).map(|i| gbyte(g + i)).collect();
                        let dense = base as u64 + r * span + 16 * c;
                        let line = dense / 128;
                        let chunk = (dense / 16) % 8;
                        let at = line * 128 + 16 * (chunk ^ (line % (1 << bits)));
                        let hit = log
                            .iter()
                            .find(|w| w.2[..] == want[..])
                            .expect("chunk written");
                        assert_eq!(hit.1, at, "{sw:?} base {base:#x}: row {r} chunk {c}");
                    }
                }
                store_t(&mut tb, &m, &[0, 2], base);
                tb.drain();
            }
        }
    }

    /// OOB at every edge of a 3-D box (before / after in each dimension, corners, fully
    /// outside), zero and NaN fill of every float width; OOB elements cause no global request
    /// (the reference's sector list is exact) and stores skip them.
    #[test]
    fn oob_at_every_edge() {
        let edges: [[i64; 3]; 12] = [
            [-5, 1, 1],
            [16, 1, 1],
            [2, -2, 1],
            [2, 4, 1],
            [2, 1, -1],
            [2, 1, 3],
            [-3, -3, -2],
            [17, 5, 4],
            [30, 1, 1],
            [-8, 0, 0],
            [20, 0, 0],
            [0, 0, 0],
        ];
        for (dt, fill) in [
            (Dt::Float32, false),
            (Dt::Float32, true),
            (Dt::Float16, true),
            (Dt::Float64, true),
            (Dt::Uint8, false),
        ] {
            let es = dt.element_size().unwrap() as u64;
            let box0 = (32 / es) as u32;
            let s0 = (20 * es).div_ceil(16) * 16 + 16;
            let mut spec = TensorMapSpec::tiled(
                dt,
                GBASE + 0x100,
                vec![20, 6, 5],
                vec![s0, s0 * 6],
                vec![box0, 4, 3],
            );
            if fill {
                spec.oob_fill = TensorMapOobFill::NanRequestZeroFma;
            }
            let m = map(spec);
            let mut tb = Tb::new(RANDOM, 4);
            for (i, e) in edges.iter().enumerate() {
                let mut c = *e;
                c[0] = c[0] * 4 / es as i64; // the same byte offsets for every element size
                load_t(&mut tb, &m, &c, 0x1000 * i as u32, 1 << (i % 16), i as u16);
                store_t(&mut tb, &m, &c, 0x1000 * i as u32);
            }
            tb.drain();
            assert_eq!(tb.st.copies, 12);
        }
    }

    /// Element strides in every outer dimension (box not a multiple of the stride: ceil), the
    /// ignored elementStrides[0], ranks 4 and 5.
    #[test]
    fn element_strides() {
        let mut spec = TensorMapSpec::tiled(
            Dt::Uint8,
            GBASE,
            vec![64, 9, 7, 5],
            vec![64, 64 * 9, 64 * 9 * 7],
            vec![32, 5, 4, 3],
        );
        spec.element_strides = vec![3, 2, 3, 8];
        let m = map(spec);
        assert_eq!(m.0.smem_box_bytes(), 32 * 3 * 2);
        let mut tb = Tb::new(RANDOM, 5);
        for c in [
            [0i64, 0, 0, 0],
            [16, 4, 3, 2],
            [40, 7, 5, 4],
            [-10, -3, -2, -1],
        ] {
            load_t(&mut tb, &m, &c, 0x800, 1 << 5, 7);
            store_t(&mut tb, &m, &c, 0x800);
        }
        let mut spec5 = TensorMapSpec::tiled(
            Dt::Float32,
            GBASE,
            vec![8, 5, 4, 3, 6],
            vec![32, 160, 640, 1920],
            vec![4, 3, 2, 2, 5],
        );
        spec5.element_strides = vec![1, 2, 1, 2, 4];
        let m5 = map(spec5);
        for c in [[0i64, 0, 0, 0, 0], [6, 3, 3, 2, 3], [-2, -1, -1, -1, -1]] {
            load_t(&mut tb, &m5, &c, 0x2000, 1 << 5, 8);
            store_t(&mut tb, &m5, &c, 0x2000);
        }
        tb.drain();
        assert_eq!(tb.st.copies, 7);
    }

    /// Multicast to 2 and 4 CTAs (and the local one among them): every CTA gets every byte and
    /// its own complete_tx with the full byte count; remote ones are flagged.
    #[test]
    fn multicast_to_2_and_4_ctas() {
        let mut tb = Tb::new(RANDOM, 6);
        let m = map(TensorMapSpec::tiled(
            Dt::Bfloat16,
            GBASE,
            vec![40, 40],
            vec![96],
            vec![16, 12],
        ));
        load_b(&mut tb, GBASE + 0x3000, 0x100, 512, 0b0101, 3);
        load_t(&mut tb, &m, &[-4, 30], 0x800, 0x00F0, 4);
        load_t(&mut tb, &m, &[5, 5], 0x1000, 0x8421, 5);
        load_b(&mut tb, GBASE + 0x3010, 0x2000, 48, 0xFFFF, 6);
        tb.drain();
        assert_eq!(tb.st.cpls, 2 + 4 + 4 + 16);
        assert_eq!(tb.st.remote_cpls, 1 + 4 + 4 + 15);
        assert_eq!(tb.st.smem_bytes, 512 * 2 + 384 * 4 + 384 * 4 + 48 * 16);
    }

    /// Bulk async-groups: commit_group closes a group at acceptance; wait_group N holds once
    /// every committed group but the N newest completed (all writes acknowledged), .read once
    /// their shared-memory reads are done (before the acknowledgements with slow memory).
    /// shared::cta -> shared::cluster copies and reductions (PTX 9.7.9.25.4.1, 9.7.9.25.4.2):
    /// every source beat is read once, written (with its reduction) into the destination CTA at
    /// the destination offset, and the destination's mbarrier gets one complete_tx of the size
    /// (`mbar_remote` for another rank), also with a slow shared-memory port.
    #[test]
    fn shared_to_cluster_copies_and_reductions() {
        for (seed, k) in [(7, FAST), (8, RANDOM)] {
            let mut tb = Tb::new(k, seed);
            let cases = [
                (0x100u32, 0x8000u32, 16u32, 2u8, (TmaRedOp::Copy, TmaRedType::B32)),
                (0x200, 0x9010, 48, 5, (TmaRedOp::Copy, TmaRedType::B32)),
                (0x400, 0xA000, 1024, 0, (TmaRedOp::Add, TmaRedType::U32)),
                (0x800, 0xB000, 0, 3, (TmaRedOp::Copy, TmaRedType::B32)),
                (0x900, 0x900, 256, 15, (TmaRedOp::Min, TmaRedType::U64)),
                (0xA00, 0xC000, 64, 2, (TmaRedOp::Xor, TmaRedType::B64)),
            ];
            for (i, &(src, dst, size, cta, red)) in cases.iter().enumerate() {
                s2s_b(&mut tb, src, dst, size, cta, 7 + i as u16, red);
                if i == 2 {
                    // a global load between them keeps its order and its bytes
                    load_b(&mut tb, GBASE + 0x40, 0x20000, 96, 1 << 2, 99);
                }
            }
            tb.drain();
            assert_eq!(tb.st.cpls, cases.len() as u64 + 1);
            assert_eq!(tb.st.remote_cpls, 4, "ranks 5, 0, 3, 15 are remote to rank 2");
            assert_eq!(tb.st.smem_bytes, cases.iter().map(|c| c.2 as u64).sum::<u64>() + 96);
            assert_eq!(tb.st.reads, 3, "only the global load reads global memory (3 sectors)");
            assert_eq!(tb.st.writes, 0);
        }
    }

    /// Prefetches (PTX 9.7.9.25.4.3, 9.7.9.25.5.4) send exactly the sector reads of the
    /// corresponding load, write nothing and complete nothing; loads around them are unchanged.
    #[test]
    fn prefetches_read_and_drop() {
        let mut tb = Tb::new(RANDOM, 9);
        let m = map(TensorMapSpec::tiled(Dt::Float32, GBASE, vec![64, 32], vec![256], vec![16, 8]));
        prefetch_b(&mut tb, GBASE + 0x1000, 1024);
        load_b(&mut tb, GBASE + 0x40, 0x400, 64, 1 << 2, 5);
        prefetch_t(&mut tb, &m, &[-4, 30]);
        prefetch_b(&mut tb, GBASE + 0x2010, 16);
        prefetch_b(&mut tb, GBASE + 0x3000, 0);
        load_t(&mut tb, &m, &[8, 2], 0x800, 1 << 2, 6);
        tb.drain();
        assert_eq!(tb.st.cpls, 2, "only the loads complete");
        assert_eq!(tb.st.smem_bytes, 64 + 16 * 8 * 4, "only the loads write");
        // 1024 B: 32 sectors; 64 B: 2; the prefetched box: rows 30, 31 in bounds, 48 bytes at
        // c0 = -4 from the row start -> 2 sectors each; 16 B: 1; the loaded box: 8 rows x 2
        assert_eq!(tb.st.reads, 32 + 2 + 4 + 1 + 16);
    }

    #[test]
    fn bulk_groups_commit_and_wait() {
        let slow = Knobs {
            lat_min: 60,
            lat_max: 60,
            ..FAST
        };
        let mut tb = Tb::new(slow, 7);
        tb.wait = Some((0, false));
        store_b(&mut tb, GBASE, 0x100, 256); // group 0
        tb.push_commit();
        store_b(&mut tb, GBASE + 0x1000, 0x200, 256); // group 1
        tb.push_commit();
        store_b(&mut tb, GBASE + 0x2000, 0x300, 64); // open group (not waited for)
        while !tb.pending.is_empty() {
            tb.step();
        }
        tb.step();
        assert_eq!(tb.last_groups_pending, 2, "two committed groups pending");
        assert!(!tb.last_wait_done, "wait_group 0 waits");
        tb.wait = Some((2, false));
        tb.step();
        assert!(
            tb.last_wait_done,
            "wait_group 2: nothing older than the 2 newest"
        );
        tb.wait = Some((1, false));
        tb.step();
        assert!(!tb.last_wait_done, "wait_group 1 waits for group 0");
        // reads finish long before the writes are acknowledged
        tb.wait = Some((0, true));
        let mut read_done_at = None;
        let mut n = 0;
        while tb.ops[..2].iter().any(|o| o.acks_seen < o.writes_total) {
            tb.step();
            n += 1;
            if tb.last_wait_done && read_done_at.is_none() {
                read_done_at = Some(n);
                assert!(tb.ops[..2].iter().all(|o| o.reads_seen == o.reads_total));
            }
        }
        let r = read_done_at.expect("wait_group.read 0 held before the acknowledgements");
        assert!(r + 30 < n, "reads done at {r}, writes acknowledged at {n}");
        tb.wait = Some((0, false));
        tb.step();
        tb.step();
        assert!(tb.last_wait_done && tb.last_groups_pending == 0);
        tb.drain();
        // commit_group stalls when 3 committed groups are pending (4 slots per context)
        let mut tb = Tb::new(slow, 8);
        for i in 0..9 {
            store_b(&mut tb, GBASE + 0x1000 * i, 0x100, 32);
            tb.push_commit();
        }
        let mut max_pending = 0;
        while !tb.pending.is_empty() {
            tb.step();
            max_pending = max_pending.max(tb.last_groups_pending);
        }
        assert_eq!(max_pending, 3);
        tb.drain();
    }

    /// Reductions to global memory are stores whose writes carry the command's `.redOp` and
    /// type (memory applies them); plain stores' writes carry `Copy`.
    #[test]
    fn reductions_carry_their_op_to_the_writes() {
        let mut tb = Tb::new(RANDOM, 13);
        let mut c = bulk_store(GBASE + 0x40, 0x100, 96);
        c.red_op = TmaRedOp::Add;
        c.red_type = TmaRedType::U32;
        tb.push(c, TmaDescImage::default(), exp_bulk_store(GBASE + 0x40, 0x100, 96));
        store_b(&mut tb, GBASE + 0x1000, 0x200, 64);
        let m = map(TensorMapSpec::tiled(Dt::Float32, GBASE, vec![40, 40], vec![160], vec![8, 4]));
        let mut c = tensor(TmaCmdKind::TensorStore, 2, &[36, 2], 0x400, 0, 0);
        c.red_op = TmaRedOp::Max;
        c.red_type = TmaRedType::F32;
        tb.push(c, m.1, exp_tensor_store(&m.0, &[36, 2], &[], 0x400));
        tb.drain();
        assert!(tb.ops.iter().all(|o| o.writes_seen == o.writes_total) && tb.st.writes > 0);
    }

    /// Bulk-group contexts (PTX 9.7.9.25.6: groups are per thread): two threads' groups are
    /// independent, a thread with no context waits for nothing, a 5th thread with stores in
    /// flight is refused ("unsupported"), and contexts are free again once their groups
    /// complete.
    #[test]
    fn bulk_group_contexts() {
        let slow = Knobs {
            lat_min: 60,
            lat_max: 60,
            ..FAST
        };
        let mut tb = Tb::new(slow, 11);
        tb.wait = Some((0, false));
        tb.wait_thread = Some(1);
        tb.thread = 1;
        store_b(&mut tb, GBASE, 0x100, 32); // thread 1, group 0: one sector
        tb.push_commit();
        tb.thread = 2;
        store_b(&mut tb, GBASE + 0x1000, 0x200, 2048); // thread 2, group 0: 64 sectors
        tb.push_commit();
        store_b(&mut tb, GBASE + 0x2000, 0x300, 64); // thread 2, open group
        while !tb.pending.is_empty() {
            tb.step();
        }
        tb.step();
        assert!(!tb.last_wait_done, "thread 1 waits for its group 0");
        assert_eq!(tb.last_groups_pending, 1, "thread 1: one committed group pending");
        tb.wait_thread = Some(2);
        tb.step();
        assert!(!tb.last_wait_done, "thread 2 waits for its group 0");
        assert_eq!(tb.last_groups_pending, 1, "thread 2: one committed group pending");
        tb.wait_thread = Some(3);
        tb.step();
        assert!(tb.last_wait_done, "thread 3 has no context: nothing to wait for");
        assert_eq!(tb.last_groups_pending, 0);
        // thread 1's small group completes while thread 2's large one is still writing
        tb.wait_thread = Some(1);
        let mut n = 0;
        while !tb.last_wait_done {
            tb.step();
            n += 1;
            assert!(n < 1000, "thread 1's wait_group 0 never held");
        }
        assert!(tb.ops[1].acks_seen < tb.ops[1].writes_total, "thread 2's group finished first");
        tb.wait_thread = Some(2);
        tb.step();
        assert!(!tb.last_wait_done, "thread 2 still waits");
        tb.drain();
        assert!(tb.last_wait_done);

        // 4 threads with stores in flight hold the 4 contexts: a 5th thread's store is refused
        let mut tb = Tb::new(slow, 12);
        for t in 1..=4 {
            tb.thread = t;
            store_b(&mut tb, GBASE + 0x1000 * t as u64, 0x100, 256);
        }
        tb.thread = 5;
        refused(&mut tb, bulk_store(GBASE, 0x100, 64), TmaDescImage::default(), TmaFaultKind::UnsupportedThreads);
        tb.push_commit(); // no context: an empty group, accepted
        tb.drain();
        assert_eq!(tb.st.faults, 1);
        assert_eq!(
            TmaFaultKind::UnsupportedThreads.name(),
            Some("unsupported: more than 4 threads with open bulk async-groups")
        );
        // every group completed: the contexts are free, thread 5 now gets one
        store_b(&mut tb, GBASE, 0x100, 64);
        tb.push_commit();
        tb.wait_thread = Some(5);
        tb.drain();
        assert_eq!(tb.st.faults, 1);
        assert!(tb.last_wait_done);
    }

    fn refused(tb: &mut Tb, c: TmaCmd, d: TmaDescImage, f: TmaFaultKind) {
        tb.push(
            c,
            d,
            Exp {
                fault: Some(f),
                ..Default::default()
            },
        );
    }

    /// Every refusal, in the golden model's order, with the engine working normally after.
    #[test]
    fn refused_commands() {
        let mut tb = Tb::new(RANDOM, 9);
        let m = map(TensorMapSpec::tiled(
            Dt::Float32,
            GBASE,
            vec![64, 32],
            vec![256],
            vec![16, 8],
        ));
        let img = m.0.encode();
        let ld = |smem: u32| tensor(TmaCmdKind::TensorLoad, 2, &[0, 0], smem, 1, 1);
        let bad = |f: &dyn Fn(&mut [u8; 128])| {
            let mut b = img;
            f(&mut b);
            assert!(
                TensorMap::decode(&b).is_err(),
                "the golden decoder refuses it too"
            );
            TmaDescImage::from_bytes(&b)
        };
        use TmaFaultKind as F;
        refused(&mut tb, ld(0), bad(&|b| b[0] = 2), F::TensorMapInvalid); // version
        refused(&mut tb, ld(0), bad(&|b| b[1] |= 0x0e), F::TensorMapInvalid); // rank 8
        refused(
            &mut tb,
            ld(0),
            bad(&|b| b[1] = (b[1] & 0x0f) | 0xd0),
            F::TensorMapInvalid,
        ); // sub-byte type
        refused(
            &mut tb,
            ld(0),
            bad(&|b| b[2] = (b[2] & !0x1c) | (4 << 2)),
            F::TensorMapInvalid,
        ); // swizzle atomicity mode
        let mut int_nan = img;
        int_nan[1] = (int_nan[1] & 0x0f) | 0x30; // INT32 with
        int_nan[2] |= 0x80; // NAN_REQUEST_ZERO_FMA
        assert!(TensorMap::decode(&int_nan).is_err());
        refused(
            &mut tb,
            ld(0),
            TmaDescImage::from_bytes(&int_nan),
            F::TensorMapInvalid,
        );
        refused(&mut tb, ld(0), bad(&|b| b[5] = 1), F::TensorMapInvalid); // reserved
        refused(&mut tb, ld(0), bad(&|b| b[127] = 0x80), F::TensorMapInvalid); // reserved
        refused(&mut tb, ld(0), bad(&|b| b[8] |= 8), F::TensorMapInvalid); // globalAddress % 16
        refused(&mut tb, ld(0), bad(&|b| b[36] |= 4), F::TensorMapInvalid); // stride % 16
        refused(&mut tb, ld(0), bad(&|b| b[24] = 1), F::TensorMapInvalid); // globalDim[2] of a 2-D map
        refused(&mut tb, ld(0), bad(&|b| b[56] = 14), F::TensorMapInvalid); // boxDim[0] = 15 floats: 60 bytes
        refused(&mut tb, ld(0), bad(&|b| b[64] = 1), F::TensorMapInvalid); // im2col field in a tiled map
        refused(&mut tb, ld(0), bad(&|b| b[80] = 1), F::TensorMapInvalid); // reserved
        let mut c = ld(0);
        c.dims = 3.into();
        refused(&mut tb, c, m.1, F::TmaCoordOutOfRange);
        let mut c = ld(0);
        c.im2col = true;
        refused(&mut tb, c, m.1, F::TensorMapInvalid); // im2col instruction, tiled map
        let im = TensorMap::new(TensorMapSpec::im2col(
            Dt::Float16,
            GBASE,
            vec![64, 10, 10, 2],
            vec![128, 1280, 12800],
            vec![-1, -1],
            vec![-1, -1],
            64,
            128,
        ))
        .unwrap();
        let imd = TmaDescImage::from_bytes(&im.encode());
        // a tile-mode instruction on an im2col map; im2col maps breaking their own rules
        refused(&mut tb, tensor(TmaCmdKind::TensorLoad, 4, &[0, 0, 0, 0], 0, 1, 1), imd, F::TensorMapInvalid);
        let im_ld = tensor_m(TmaCmdKind::TensorLoad, &im, &[0, 0, 0, 0], &[1, 1], 0, 1, 1);
        let bad_im = |f: &dyn Fn(&mut [u8; 128])| {
            let mut b = im.encode();
            f(&mut b);
            assert!(TensorMap::decode(&b).is_err(), "the golden decoder refuses it too");
            TmaDescImage::from_bytes(&b)
        };
        refused(
            &mut tb,
            im_ld,
            bad_im(&|b| {
                b[64] = 0x80; // lower[0] = 128: outside rank 4's -128..=127
                b[65] = 0;
            }),
            F::TensorMapInvalid,
        );
        refused(&mut tb, im_ld, bad_im(&|b| b[68] = 1), F::TensorMapInvalid); // lower[2] of a rank-4 map
        refused(&mut tb, im_ld, bad_im(&|b| b[56] = 1), F::TensorMapInvalid); // boxDim[0] set
        refused(&mut tb, im_ld, bad_im(&|b| b[76] = 0x02), F::TensorMapInvalid); // 3 halves: 6 bytes
        refused(
            &mut tb,
            im_ld,
            bad_im(&|b| {
                b[64] = 0x7f; // lower[0] = 127, upper[0] = -128: no area on globalDim[1] = 10
                b[65] = 0;
                b[70] = 0x80;
                b[71] = 0xff;
            }),
            F::TensorMapInvalid,
        );
        let mut il = TensorMapSpec::tiled(
            Dt::Float16,
            GBASE,
            vec![8, 10, 10],
            vec![16, 160],
            vec![8, 2, 2],
        );
        il.interleave = hopsync_firmware::tensormap::TensorMapInterleave::B16;
        let il = TensorMap::new(il).unwrap();
        refused(
            &mut tb,
            tensor(TmaCmdKind::TensorLoad, 3, &[0, 0, 0], 0, 1, 1),
            TmaDescImage::from_bytes(&il.encode()),
            F::UnsupportedInterleave,
        );
        refused(&mut tb, ld(64), m.1, F::TmaMisaligned);
        refused(
            &mut tb,
            tensor(TmaCmdKind::TensorStore, 2, &[0, 0], 0x210, 0, 0),
            m.1,
            F::TmaMisaligned,
        );
        refused(
            &mut tb,
            tensor(TmaCmdKind::TensorLoad, 2, &[0, 0], 0x100, 0, 1),
            m.1,
            F::ClusterRankOutOfRange,
        );
        refused(
            &mut tb,
            bulk_load(GBASE + 8, 0, 64, 1, 1),
            TmaDescImage::default(),
            F::TmaMisaligned,
        );
        refused(
            &mut tb,
            bulk_load(GBASE, 8, 64, 1, 1),
            TmaDescImage::default(),
            F::TmaMisaligned,
        );
        refused(
            &mut tb,
            bulk_load(GBASE, 0, 72, 1, 1),
            TmaDescImage::default(),
            F::TmaMisaligned,
        );
        refused(
            &mut tb,
            bulk_load(GBASE, 0, 64, 0, 1),
            TmaDescImage::default(),
            F::ClusterRankOutOfRange,
        );
        refused(
            &mut tb,
            bulk_store(GBASE + 4, 0, 64),
            TmaDescImage::default(),
            F::TmaMisaligned,
        );
        let cp = (TmaRedOp::Copy, TmaRedType::B32);
        refused(&mut tb, s2s_cmd(0x100, 0x208, 64, 3, 1, cp), TmaDescImage::default(), F::TmaMisaligned);
        refused(&mut tb, s2s_cmd(0x108, 0x200, 64, 3, 1, cp), TmaDescImage::default(), F::TmaMisaligned);
        let mut nomask = s2s_cmd(0x100, 0x200, 64, 3, 1, cp);
        nomask.cta_mask = 0.into();
        refused(&mut tb, nomask, TmaDescImage::default(), F::ClusterRankOutOfRange);
        let mut pf = bulk_load(GBASE + 8, 0, 64, 0, 0);
        pf.kind = TmaCmdKind::BulkPrefetch;
        refused(&mut tb, pf, TmaDescImage::default(), F::TmaMisaligned);
        // work continues, and refused stores left their bulk group
        load_t(&mut tb, &m, &[1, 1], 0x800, 4, 2);
        load_o(&mut tb, &(im, imd), &[3, 2, 5, 1], &[1, 2], 0x2000, 2, 3);
        store_b(&mut tb, GBASE, 0x40, 64);
        tb.push_commit();
        tb.drain();
        assert_eq!((tb.st.faults, tb.st.copies), (34, 2));
        for k in [F::TensorMapInvalid, F::UnsupportedInterleave] {
            assert!(k.name().is_some());
        }
    }

    /// Bytes per cycle into shared memory (first to last write) and request limits.
    #[test]
    fn throughput() {
        let lat20 = Knobs {
            lat_min: 20,
            lat_max: 20,
            ..FAST
        };
        let m = map(TensorMapSpec::tiled(
            Dt::Float32,
            GBASE,
            vec![256, 256],
            vec![1024],
            vec![32, 64],
        ));
        let rate = |tb: &Tb| {
            tb.st.smem_bytes as f64 / (tb.st.last_wr - tb.st.first_wr.unwrap() + 1) as f64
        };
        let mut report = vec![];
        // one 8 KiB box, rows 16-byte aligned in global memory
        let mut tb = Tb::new(lat20, 10);
        load_t(&mut tb, &m, &[0, 0], 0, 1 << 2, 1);
        tb.drain();
        let aligned = rate(&tb);
        report.push(format!("tensor 2D 8 KiB aligned: {aligned:.2} B/cycle"));
        assert!(aligned > 15.9, "{aligned}");
        // back-to-back boxes keep the rate
        let mut tb = Tb::new(lat20, 10);
        for i in 0..4 {
            load_t(&mut tb, &m, &[32 * i, 64], 0x2000 * i as u32, 1 << 2, 1);
        }
        tb.drain();
        let b2b = rate(&tb);
        report.push(format!("4 back-to-back 8 KiB boxes: {b2b:.2} B/cycle"));
        assert!(b2b > 15.5, "{b2b}");
        // rows starting 4 bytes into a chunk: one extra slot per 128-byte row
        let mut tb = Tb::new(lat20, 10);
        load_t(&mut tb, &m, &[1, 0], 0, 1 << 2, 1);
        tb.drain();
        let mis = rate(&tb);
        report.push(format!("tensor 2D misaligned rows: {mis:.2} B/cycle"));
        assert!(mis > 12.5, "{mis}");
        // multicast to 4 CTAs: 16 B/cycle in total
        let mut tb = Tb::new(lat20, 10);
        load_t(&mut tb, &m, &[0, 0], 0, 0x000F, 1);
        tb.drain();
        let mc = rate(&tb);
        report.push(format!("multicast x4: {mc:.2} B/cycle total"));
        assert!(mc > 15.9, "{mc}");
        // bulk 8 KiB
        let mut tb = Tb::new(lat20, 10);
        load_b(&mut tb, GBASE, 0, 8192, 1 << 2, 1);
        tb.drain();
        let bulk = rate(&tb);
        report.push(format!("bulk 8 KiB: {bulk:.2} B/cycle"));
        assert!(bulk > 15.9, "{bulk}");
        // stores: bytes of global writes per cycle
        let mut tb = Tb::new(lat20, 10);
        let t0 = tb.cycle;
        store_t(&mut tb, &m, &[0, 0], 0);
        tb.drain();
        let st = 8192.0 / (tb.cycle - t0) as f64;
        report.push(format!(
            "tensor store 8 KiB: {st:.2} B/cycle (whole command)"
        ));
        assert!(st > 14.0, "{st}");
        // the request limits: 8 B/cycle of request bandwidth; 4 outstanding at latency 40
        let mut tb = Tb::with_params(lat20, 10, 16, 8);
        load_t(&mut tb, &m, &[0, 0], 0, 1 << 2, 1);
        tb.drain();
        let bw = rate(&tb);
        report.push(format!("bytes_per_cycle 8: {bw:.2} B/cycle"));
        assert!(bw > 7.8 && bw < 8.2, "{bw}");
        let lat40 = Knobs {
            lat_min: 40,
            lat_max: 40,
            ..FAST
        };
        let mut tb = Tb::with_params(lat40, 10, 4, 32);
        load_t(&mut tb, &m, &[0, 0], 0, 1 << 2, 1);
        tb.drain();
        let mo = rate(&tb);
        report.push(format!("max_outstanding 4, latency 40: {mo:.2} B/cycle"));
        assert!(mo > 2.9 && mo < 3.3, "{mo}");
        // issue 4 §3: at least 16 B/cycle into shared memory in steady state at the memory
        // latency of sm90.toml ([global] latency = 384 cycles) with the 256 tags (8 KiB) in
        // flight that sm90.toml's [tma] read_tags gives the SM engine
        let lat384 = Knobs {
            lat_min: 384,
            lat_max: 384,
            ..FAST
        };
        let mut tb = Tb::new(lat384, 10);
        load_b(&mut tb, GBASE, 0, 65536, 1 << 2, 1);
        tb.drain();
        let bulk384 = rate(&tb);
        report.push(format!("bulk 64 KiB, latency 384: {bulk384:.2} B/cycle"));
        assert!(bulk384 >= 15.99, "{bulk384}");
        // tiled: 8 back-to-back 8 KiB boxes of 128-byte rows
        let mut tb = Tb::new(lat384, 10);
        for i in 0..8 {
            load_t(&mut tb, &m, &[32 * (i % 8), 64 * (i / 4)], 0x2000 * i as u32, 1 << 2, 1);
        }
        tb.drain();
        let tiled384 = rate(&tb);
        report.push(format!("8 back-to-back 8 KiB boxes, latency 384: {tiled384:.2} B/cycle"));
        assert!(tiled384 >= 15.9, "{tiled384}");
        // the bound the tags set (Little's law): 64 tags x 32 B per round trip; 32 KiB is 16
        // rounds, written over 15 round trips (384 + 2 cycles) + the last round's 128 beats
        let mut tb = Tb::with_params(lat384, 10, 64, 32);
        load_b(&mut tb, GBASE, 0, 32768, 1 << 2, 1);
        tb.drain();
        let t64 = rate(&tb);
        report.push(format!("max_outstanding 64, latency 384: {t64:.2} B/cycle"));
        let little = 32768.0 / (15.0 * 386.0 + 128.0);
        assert!((t64 - little).abs() < 0.1, "{t64} vs {little}");
        eprintln!("{}", report.join("\n"));
    }

    /// Random copies (every rank, element size, swizzle, element strides, OOB edge, multicast
    /// mask, bulk loads and stores, tensor stores, commit_group, refused commands) with random
    /// back-pressure and out-of-order responses: every shared-memory byte, every sector request
    /// and write, every complete_tx (bytes, CTA, word) and every bulk-group answer checked
    /// against the reference built from firmware/src/tensormap.rs. Returns the statistics.
    fn random_against_reference(k: Knobs, copies: u64) -> Stats {
        let mut tb = Tb::new(k, 0x5EED_0004);
        let st = run_random(&mut tb, 0x5EED_0005, copies);
        // the mix reached every kind of outcome (about 70% of random copies are tensor or bulk
        // loads with bytes, 20% stores; 4% of commands are refused)
        assert!(st.copies > copies * 6 / 10, "{st:?}");
        assert!(st.writes > copies / 10, "{st:?}");
        assert!(st.faults > copies / 200, "{st:?}");
        assert!(st.remote_cpls > copies / 10, "{st:?}");
        st
    }

    /// im2col loads, prefetches and stores only (PTX 5.5.4): random rank-3..5 maps (every
    /// element size and swizzle, element strides, pixel box corners up to the rank's range
    /// ends), channel starts that are not 16-byte aligned, pixels before, inside and past the
    /// bounding box (coordinates at the ends of the 32-bit range too), offsets up to their
    /// limit, under random back-pressure and out-of-order responses: every byte, sector read,
    /// write and complete_tx against `TensorMap::im2col_box_elements`.
    #[test]
    fn im2col_against_tensormap_reference() {
        let mut tb = Tb::new(RANDOM, 0x12C0_0001);
        let mut rng = XorShift(0x12C0_0002);
        let (mut ranks, mut mixed, mut wrapped) = ([0u32; 6], 0, 0);
        for n in 0..1500 {
            let m = random_im2col_map(&mut rng);
            let (c, o) = random_im2col_coords(&mut rng, &m.0);
            let els = m.0.im2col_box_elements(&c, &o);
            ranks[m.0.rank()] += 1;
            mixed += (els.iter().any(|e| e.1.is_some()) && els.iter().any(|e| e.1.is_none())) as u32;
            // a pixel after the first on a lower-corner W: the walk wrapped
            let s = m.0.spec();
            let hi = s.global_dim[1] as i64 - 1 + s.pixel_box_upper_corner[0] as i64;
            wrapped += (c[1] + (s.pixels_per_column as i64 - 1) * s.element_strides[1] as i64 > hi) as u32;
            let smem = 128 * rng.below(1000) as u32;
            match n % 10 {
                0 => prefetch_o(&mut tb, &m, &c, &o),
                1 | 2 => store_o(&mut tb, &m, &c, &o, smem),
                _ => load_o(&mut tb, &m, &c, &o, smem, random_mask(&mut rng), rng.below(1 << 16) as u16),
            }
            while tb.pending.len() >= 3 {
                tb.step();
            }
        }
        tb.drain();
        assert!(ranks[3] > 400 && ranks[4] > 400 && ranks[5] > 400, "{ranks:?}");
        assert!(mixed > 150 && wrapped > 600, "{mixed} {wrapped}");
        assert!(tb.st.copies > 1000, "{:?}", tb.st);
    }

    /// 1e4 random copies under heavy back-pressure (the default test; see the long variant).
    #[test]
    fn randomized_copies_against_tensormap_reference() {
        random_against_reference(RANDOM, 10_000);
    }

    /// Random copies with memory latencies around sm90.toml's 384 cycles (responses out of
    /// order over 300..=450 cycles; requests always accepted, so 256 issue before the first
    /// response): the ROB fills (all 256 tags in flight), its tags wrap many
    /// times (the arrival marks' pass parity), and the row queue runs far ahead of BA.
    #[test]
    fn randomized_copies_at_silicon_latency() {
        let k = Knobs {
            gmem_ready: 100,
            lat_min: 300,
            lat_max: 450,
            ..RANDOM
        };
        let mut tb = Tb::new(k, 0x5EED_0007);
        // two 16 KiB bulk loads (512 sectors each) ahead of the random mix fill the ROB
        for i in 0..2u64 {
            load_b(&mut tb, GBASE + 0x1_0000 * i, 0x4000 * i as u32, 16384, 1 << 2, 1);
        }
        let st = run_random(&mut tb, 0x5EED_0008, 600);
        assert_eq!(st.max_tags, TMA_TAGS as u64, "{st:?}");
        assert!(st.reads > 8 * TMA_TAGS as u64, "{st:?}");
        assert!(st.copies > 300, "{st:?}");
    }

    /// Issue 4's 1e5 random copies (`cargo nextest run --profile long --run-ignored only`).
    #[test]
    #[ignore]
    fn long_randomized_1e5_copies_against_tensormap_reference() {
        random_against_reference(RANDOM, 100_000);
    }

    /// The generated Verilog, simulated by iverilog, reproduces the Rust simulation's outputs
    /// cycle for cycle on random traffic (loads, stores, commits, refused commands).
    #[test]
    fn generated_verilog_matches_the_rust_simulation() {
        let mut tb = Tb::traced(RANDOM, 21);
        run_random(&mut tb, 5, 150);
        let uut = new_uut(MAX_OUT, 32);
        let vlog = generate_verilog(&*uut);
        tb.trace.unwrap().check_with_iverilog("tma_engine", &vlog);
    }
}
