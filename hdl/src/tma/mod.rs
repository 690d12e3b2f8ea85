//! The Tensor Memory Accelerator of one SM (sm_90): bulk copies (`cp.async.bulk`, PTX
//! 9.7.9.25.4.1), tiled tensor copies through a tensor map (`cp.async.bulk.tensor` tile mode,
//! PTX 9.7.9.25.5.2, PTX 5.5.3) and im2col tensor copies (PTX 5.5.4), multicast over the cluster,
//! mbarrier complete-tx, and bulk async-groups (`cp.async.bulk.commit_group` /
//! `wait_group{.read}`, PTX 9.7.9.25.6), prefetches (`cp.async.bulk.prefetch{.tensor}.L2`, PTX
//! 9.7.9.25.4.3 / 9.7.9.25.5.4) and the shared::cta -> shared::cluster bulk copy and reduction
//! (PTX 9.7.9.25.4.1 / 9.7.9.25.4.2).
//!
//! [`TmaEngine`] (top.rs) only wires one rust-hdl block per pipeline stage; each stage's file
//! says its ports, assumptions and the spec clauses it implements, and holds its own tests.
//!
//! Writing a stage block's inputs: rust-hdl writes one Verilog module per block, and a parent's
//! `update` becomes one `always @(*)` whose assignments to a sub-block's input ports drive that
//! instance. Where a parent writes the same sub-block input twice in one evaluation (a default,
//! then an override), an event-driven simulator (iverilog, the Verilog replay tests) sees the
//! input change twice per pass; when the parent reads that sub-block's outputs (a
//! combinational stage), it re-runs the sub-block, then the parent, and loops forever
//! (helper-fpga4 hit this in the decoder). Compute the value in a local signal and write each
//! sub-block input exactly once per `update`.
//!
//! # Pipeline
//!
//! ```text
//! cmd ─► Q (2-entry command queue) ─► D (descriptor decode, 1 + rank + 1 cycles) ─► J (job)
//!   J ─► JQ (8 decoded jobs, RAM) ─► BA
//!   J ─► RG: row iterator (dims 1..4, element strides or im2col pixel walk, OOB predication)
//!                                                                       ─┬─► issuer ─► gmem_req
//!                                                                       └─► row queue (256, RAM)
//!   gmem_resp ─► ROB (256 tags x 128 B in RAM, out-of-order responses, in-order drain)
//!   row queue + ROB / smem_rd ─► BA stage X (slot iterator: a slot, a load's run of up to 8
//!                                            or a store's pair; swizzle, byte masks)
//!                             ─► BA stage Y (byte realigner, OOB fill, line placer, sector packer)
//!   Y ─► OB (3) ─► smem_wr (one line write, every CTA of its mask);  job end ─► CPL ─► mbar_req
//!   Y ─► WB (3) ─► gmem_req (sector writes) ;  acks ─► bulk-group counters
//! ```
//!
//! | stage | block | file |
//! | --- | --- | --- |
//! | Q: acceptance, command queue | [`queue::TmaQueue`] | queue.rs |
//! | bulk async-groups (contexts, counters, wait answers) | [`groups::TmaGroups`] | groups.rs |
//! | D: the decoder's FSM and the job register J | [`decoder::TmaDecoder`] | decoder.rs |
//! | D, Idle: the checks of the head command | [`dec_check::TmaDescCheck`] | dec_check.rs |
//! | D, Dim: one dimension's fields (two cycles ahead), products and windows (one cycle ahead), sums | [`dec_dim::TmaDimStep`] | dec_dim.rs |
//! | D, Fin: the per-job constants | [`dec_fin::TmaJobFin`] | dec_fin.rs |
//! | JQ: the job queue (J's BA part, decoder -> BA) | [`fifo::TmaJobQueue`] | fifo.rs |
//! | RG: the row iterator | [`rg::TmaRowIter`] | rg.rs |
//! | the row queue | [`fifo::TmaRowQueue`] | fifo.rs |
//! | the issuer (global-memory requests) | [`issuer::TmaIssuer`] | issuer.rs |
//! | ROB: the reorder buffer | [`rob::TmaRob`] | rob.rs |
//! | BA stage X: the slot iterator | [`ba_x::TmaSlotIter`] | ba_x.rs |
//! | BA stage Y: realigner, OOB fill, sector packer | [`ba_y::TmaRealign`] | ba_y.rs |
//! | OB: output buffer | [`obuf::TmaOutBuf`] | obuf.rs |
//! | CPL: the complete_tx sequencer | [`cpl::TmaComplete`] | cpl.rs |
//! | WB: the write buffer | [`wbuf::TmaWriteBuf`] | wbuf.rs |
//!
//! - **Loads** (`BulkLoad`, `TensorLoad`): RG walks the box's rows (the walk of
//!   `firmware/src/tensormap.rs`, the golden model's), the issuer reads each row's in-bounds
//!   sectors, the ROB puts responses back in order, BA writes the box dense and swizzled into
//!   shared memory (OOB bytes filled), OB writes each beat once with `cta_mask` (it lands in
//!   every CTA of the mask in the same cycle), and CPL sends complete_tx with the box's bytes to
//!   each.
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
//! - **Stores** (`BulkStore`, `TensorStore`) read shared memory per slot (`smem_rd`: a line
//!   read, one chunk, or a pair of whole chunks of one global sector where the row is aligned),
//!   realign to global chunks and pack them into sector writes (byte mask = in-bounds bytes)
//!   through WB.
//!   `store_read_done` pulses when an op's last slot is in Y (every shared-memory read of it is
//!   done: what `wait_group.read` waits for), `store_writes_issued` when its last WB entry
//!   leaves (its last sector write is issued, or the end marker of an op with no in-bounds
//!   byte), both in command order. The op is complete once its writes are acknowledged;
//!   acknowledgements (tag = the group slot) come in any order.
//! - **Reductions to global** (`cp.reduce.async.bulk{.tensor}` .global, PTX 9.7.9.25.4.2 /
//!   9.7.9.25.5.3): a store whose command names `red_op` / `red_type`; its writes carry them
//!   (`TmaGmemReq::red_op` / `red_type`) and memory applies `old op new` per element (the L2 on
//!   silicon).
//!
//! Throughput: a load whose rows start 16-byte aligned in global memory (`coords[0] *
//! elementSize` a multiple of 16) moves a run of up to 8 whole chunks a cycle (those of one
//! reorder-buffer line that fall in one 128-byte shared-memory line, swizzled as a permutation
//! of the line's chunks: [`ba_x`] "Runs"), one line write into every destination CTA at once
//! (multicast costs no write more than one copy): up to 128 B per cycle when source and
//! destination are 128-byte aligned alike, about 64 when they are not. Everything else moves
//! one 16-byte slot per cycle (misaligned rows, partial or OOB chunks, shared::cta ->
//! shared::cluster; a prefetch drops its chunks in runs, as a load writes them); a misaligned row spends one extra slot. A store whose rows
//! are aligned reads a pair of chunks (one 32-byte sector) a cycle ([`ba_x`] "Store pairs"):
//! the write side's one sector request a cycle (32 B/cycle) sets its rate, not the reads.
//! Requests: one per cycle at most, each the row's wanted sectors within one aligned block of
//! `request_bytes` (32, 64 or 128: a constructor parameter, sm90.toml `[tma] request_bytes` =
//! 128, one line) and a response carries one 128-byte line, so the global side moves up to 128
//! B/cycle; 256 tags of 128 B (32 KiB in flight) cover 128 B/cycle over sm90.toml's 255-cycle
//! `[global] latency` (the `throughput` test checks the Little's-law bound for 32- and
//! 128-byte requests), and the row queue holds as many rows as there are tags, so boxes of
//! short rows keep every tag busy. An H100 SM's TMA moves about 70-100 B/cycle
//! (docs/FIDELITY.md, cosim/traces/sm90/calibration/). The CTA top's shared-memory port is
//! still 16 bytes wide: it takes a line write one chunk a cycle (`smem_port::SmemLineSplit`)
//! and builds its engine with [`TmaEngine::beat_reads`] (a store reads one chunk a cycle).
//!
//! # Ports (all synchronous to `clock`)
//!
//! - `cmd` + `cmd_desc` / `cmd_valid` / `cmd_ready`: commands ([`TmaCmd`], [`TmaDescImage`]).
//! - `gmem_req` / `_valid` / `_ready`: requests (reads: a 128-byte line and the sectors of it to
//!   read, tag = ROB entry; writes: one 32-byte sector, data, 32-bit byte mask, tag = bulk-group
//!   slot). `gmem_resp` / `_valid` / `_ready`: read data (a line, by tag, any order) and write
//!   acknowledgements (`write` set). `gmem_resp_ready` is always
//!   high (every response has a reserved place).
//! - `smem_wr` / `_valid` / `_ready`: shared-memory line writes ([`TmaSmemWrite`]: the
//!   destination CTA mask: accepted means landed in every CTA of it, in the same cycle; the
//!   128-byte aligned shared::cta address, the line's data, its 8 chunk enables (whole 16-byte
//!   chunks only), and the reduction to apply: `Copy` but for a `cp.reduce.async.bulk` beat).
//! - `smem_rd_addr` / `smem_rd_cen` / `smem_rd_valid` / `smem_rd_ready`, `smem_rd_data`: line
//!   reads of this CTA's shared memory for stores and S2S copies (the 128-byte line of
//!   `smem_rd_addr`, the 16-byte chunks of `smem_rd_cen`: one, or a store pair's two); the line
//!   (its enabled chunks) arrives the cycle after the accepting edge.
//! - `mbar_req` / `mbar_cta` / `mbar_remote` / `mbar_valid` / `mbar_ready`: complete_tx towards
//!   the mbarrier units (`MbarrierUnit::tma_req` locally, `cluster_req` of a remote CTA).
//! - `wait_n`, `wait_read`, `wait_thread` → `wait_done`, `groups_pending` (of that thread).
//! - `store_read_done`, `store_writes_issued`: per-op store events (above).
//! - `fault`: a refused command ([`TmaFaultKind`] and its `thread`, registered); the command is
//!   dropped.
//! - `idle`: nothing in flight.
//!
//! # Unsupported (documented)
//!
//! Interleaved layouts (fault) and the sm_100 forms: no command kind exists for them (the
//! front end stops with "unsupported: ..." where the golden model does). The reduction of a
//! `BulkS2S` beat is carried, not computed: the shared-memory side owns the ALU (`cta_top`'s
//! SmemPort has none: it drops the beat with `smem_red_dropped`). More than `TMA_CTXS` (32,
//! one issuing thread per warp of a 1024-thread CTA) threads with bulk store ops in flight or
//! committed groups not complete: the store of a 33rd thread is refused (`unsupported: more than
//! 32 threads with open bulk async-groups`). At most
//! 3 committed incomplete groups per thread: a 4th commit_group waits. Bulk sizes are below 2^20
//! (the 20-bit `size` field; the mbarrier tx-count range bounds a load anyway).
//!
//! # Synthesizable form (how each block's `update` is written, and why)
//!
//! rust-hdl puts a block's `update` into one `always @(*)` block, so it is written in
//! dependency order: every Local is assigned before any statement reads it, else the Verilog
//! would read the previous evaluation's value where the Rust simulation iterates to a fixed
//! point. Between blocks, the top only connects ports (a sub-block's outputs are wires), so the
//! order across blocks does not matter; the paths that cross blocks within a cycle (the queue's
//! pop from the decoder, the row iterator's room from the issuer, the reorder buffer's free from
//! stage X) are combinational, not loops. A bit or part select of a struct field
//! (`x.val().field.get_bit(i)`) is not legal Verilog: such fields are copied to a Local first,
//! masked (`& 16`) or shifted. Checked by the tests: check_all, yosys `proc` with no latch and
//! `flatten; check -assert` (no loop, no multiple driver), an iverilog replay of the generated
//! Verilog against the Rust simulation, the Verilator lint and lockstep tests
//! (`verilator/tests`).

pub mod ba_x;
pub mod ba_y;
pub mod cpl;
pub mod dec_check;
pub mod dec_dim;
pub mod dec_fin;
pub mod decoder;
pub mod fifo;
pub mod groups;
pub mod issuer;
pub mod obuf;
pub mod queue;
pub mod rg;
pub mod rob;
pub mod top;
pub mod types;
pub mod wbuf;

#[cfg(test)]
mod tb;
#[cfg(test)]
mod tests;

pub use top::TmaEngine;
pub use types::*;
