//! The timing configuration of the SM model: every constant the engine uses, read from a TOML
//! file (`sim/configs/sm90.toml` is built in). Where each value comes from is written beside it
//! in the TOML; most are "assumed until measured by the silicon issue".

use serde::{Deserialize, Serialize};

/// The built-in sm_90 configuration (`sim/configs/sm90.toml`).
pub const SM90_TOML: &str = include_str!("../configs/sm90.toml");

/// The SM clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clock {
    /// SM clock in MHz (ns -> cycles, VCD time scale).
    pub mhz: f64,
}

/// The issue model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Issue {
    /// Warp schedulers per SM (one instruction each per cycle); warp w -> scheduler w mod n.
    pub schedulers: u32,
    /// Cycles a warp waits at the top of a spin loop where ptxas puts a YIELD, after its previous
    /// issue (`timing::yield_loops`).
    pub yield_cycles: u64,
    /// Issue slots of the SASS ptxas puts before the first `cp.async` of a run (three
    /// `@!PT LDS RZ, [RZ]` before the first LDGSTS: `timing::cp_async_run_starts`).
    pub cp_async_filler_cycles: u64,
    /// Cycles after a taken branch before the warp issues again.
    pub branch_cycles: u64,
    /// What a taken branch costs beyond `branch_cycles` (the fetch redirect).
    pub branch_taken_cycles: u64,
    /// The longest run of instructions a guarded forward branch skips that ptxas predicates
    /// instead, when the guard differs between lanes (`timing::if_converted_branches`).
    pub if_convert_lane_instructions: u64,
    /// The same when the guard is warp-uniform.
    pub if_convert_uniform_instructions: u64,
    /// Cycles between two issues of one warp.
    pub warp_issue_cycles: u64,
    /// Cycles an integer mul / mad occupies its scheduler's IMAD pipe (16 lanes a cycle on sm_90:
    /// a warp instruction every 2 cycles).
    pub imad_issue_cycles: u64,
    /// Cycles an integer logic / shift / compare / select / add (IADD3) occupies its scheduler's
    /// ALU pipe (16 lanes a cycle on sm_90: a warp instruction every 2 cycles; `timing::IssuePipe`).
    pub alu_issue_cycles: u64,
    /// Which eligible warp a scheduler issues.
    #[serde(default)]
    pub policy: IssuePolicy,
    /// ptxas unrolls a counted loop fully (its control instructions do not exist on silicon,
    /// `timing::unrolled_loops`) when trip count x W x (W + `unroll_weight_offset`) is at most this;
    /// W is the body's weight.
    pub unroll_budget: f64,
    /// The weight in W of a body instruction that is ALU work (class Compute); any other counts 1.
    pub unroll_alu_weight: f64,
    /// See `unroll_budget`.
    pub unroll_weight_offset: f64,
    /// A counted loop of known trip count that is not unrolled fully is unrolled this / W times
    /// (body copies per SASS iteration), when that is at least `unroll_min_factor`.
    pub unroll_partial_budget: f64,
    /// The least partial unrolling ptxas does, and what it does to a small loop of unknown trip
    /// count.
    pub unroll_min_factor: u32,
    /// The largest body weight W of a loop of unknown trip count that ptxas unrolls.
    pub unroll_unknown_max_weight: f64,
    /// How many register-only instructions of a warp may wait for their operands while the warp
    /// issues the instructions after them (ptxas's list schedule within a basic block: loads
    /// hoisted above the arithmetic that uses them; `timing::Lookahead`). 0: strict PTX order.
    pub lookahead_instructions: usize,
}

/// A warp scheduler's choice among its eligible warps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IssuePolicy {
    /// Greedy then oldest: the warp that issued last goes on while it can; then the oldest
    /// (lowest-numbered) eligible warp.
    #[default]
    Gto,
    /// Loose round robin: the eligible warp after the one that issued last.
    Lrr,
}

/// Result latencies (issue to dependent issue), cycles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// Integer / logic / move / compare / select / convert.
    pub alu: u64,
    /// What a branch waits for its guard predicate beyond an ALU consumer, when a fixed-latency
    /// instruction (setp, ...) wrote it.
    pub predicate_branch: u64,
    /// An instruction that names a `.shared` variable waits this long after the warp's previous
    /// issue when ptxas rematerialized the shared window base for it (S2UR SR_CgaCtaId, ULEA;
    /// `timing::InstrInfo::window_base`).
    pub window_base: u64,
    /// An access through a register holding a `.shared` variable's address waits this long after
    /// the warp's previous issue when ptxas recomputed that address for it from the base it kept
    /// (LEA; `timing::WindowRead::Lea`).
    pub window_lea: u64,
    /// A generic-path access of another CTA's shared memory (`ld`/`st`/`atom`/`red
    /// .shared::cluster` through a 32-bit register address) waits this long after the warp's
    /// previous issue when ptxas read the shared window's high half again for it (S2R
    /// SR_SWINHI; `timing::WindowRead::SwinHi`).
    pub window_swinhi: u64,
    /// Integer multiply, multiply-add.
    pub mul: u64,
    /// f32 arithmetic.
    pub fp32: u64,
    /// f64 arithmetic.
    pub fp64: u64,
    /// Division, remainder.
    pub div: u64,
    /// Warp-wide votes and the rest of the warp-wide operations (`vote`, `elect`,
    /// `bar.warp.sync`).
    pub warp_op: u64,
    /// `redux.sync`: a warp-wide reduction.
    pub redux: u64,
    /// `match.sync`: a warp-wide compare of every lane's value with every other's.
    pub match_sync: u64,
    /// `activemask`: reads the warp's active mask (no exchange between lanes).
    pub activemask: u64,
    /// Special-register reads (S2R).
    pub sreg: u64,
    /// `%clock` / `%clock64` reads (CS2R: faster than the other special registers).
    pub clock: u64,
    /// ld.param.
    pub param: u64,
    /// Local memory.
    pub local: u64,
    /// Instructions without a result.
    pub misc: u64,
    /// The special-function unit: `.approx` sqrt/rsqrt/rcp/ex2/lg2/sin/cos/tanh.
    pub mufu: u64,
    /// `shfl.sync`, `movmatrix` (the warp's data crossbar).
    pub shfl: u64,
    /// `mma.sync` (the warp-level tensor-core instruction).
    pub mma: u64,
    /// The scan ptxas puts before a warp-aggregated atomic (`timing::aggregates_atomic`): the
    /// cycles from the warp's arrival at the `atom` to its one lane's access.
    pub atomic_scan: u64,
    /// From an integer divisor's value to its reciprocal (`timing::division_of`).
    pub div_reciprocal: u64,
}

/// The warpgroup MMA (wgmma.rs): tensor-core occupancy per 8 columns by multiplicand family, and
/// the pipeline latency after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wgmma {
    /// Cycles from the end of a wgmma's occupancy to its completion.
    pub pipeline_cycles: u64,
    /// The least a wgmma occupies its tensor core, however narrow.
    pub min_cycles: u64,
    /// Occupancy per 8 columns of an f16/bf16 (k16) wgmma.
    pub f16_cycles_per_n8: u64,
    /// Occupancy per 8 columns of a tf32 (k8) wgmma.
    pub tf32_cycles_per_n8: u64,
    /// Occupancy per 8 columns of an e4m3/e5m2 (k32) wgmma.
    pub fp8_cycles_per_n8: u64,
    /// Occupancy per 8 columns of an s8/u8 (k32) wgmma.
    pub int8_cycles_per_n8: u64,
    /// Occupancy per 8 columns of a b1 (k256) wgmma.
    pub b1_cycles_per_n8: u64,
}

/// Shared memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Smem {
    /// Banks.
    pub banks: u32,
    /// Bytes per bank word.
    pub bank_bytes: u32,
    /// Conflict-free load-to-use latency.
    pub latency: u64,
    /// Atomic / reduction latency.
    pub atomic_latency: u64,
    /// Cycles the pipe spends on each replay of a bank-conflicted access (each wavefront beyond
    /// those its bytes need at one wavefront per cycle).
    pub conflict_replay_cycles: u64,
    /// Shared-memory instructions a scheduler may have waiting for the pipe (issued, not yet
    /// started) before its warps' next one stalls with MemoryThrottle.
    pub queue_instructions: u64,
    /// The same for a store (or atomic, reduction): it waits while its scheduler has this many
    /// waiting (fewer than `queue_instructions`: a store also needs room for its data).
    pub store_queue_instructions: u64,
    /// Cycles after a shared-memory store, atomic or reduction before the warp's next memory
    /// instruction issues (the stall count ptxas gives STS and ATOMS before another memory
    /// instruction).
    pub store_issue_cycles: u64,
    /// Cycles after a shared-memory load before the warp's next memory or mbarrier instruction
    /// issues (the warp's own rate into the shared-memory pipe).
    pub load_issue_cycles: u64,
    /// An atomic ptxas makes a compare-and-swap loop on shared memory (`timing::cas_loop_atomic`):
    /// its first pass, from issue to the result's use.
    pub cas_first_cycles: u64,
    /// ... and each further pass (one per lane beyond the first on one word).
    pub cas_pass_cycles: u64,
}

/// Global memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Global {
    /// Load-to-use latency.
    pub latency: u64,
    /// Atomic / reduction latency.
    pub atomic_latency: u64,
    /// From a write's issue to the L2 until its acknowledgement (a store's completion: what a
    /// release drains, what a bulk store's `wait_group` waits for).
    pub write_ack_cycles: u64,
    /// What the first access of a far line of a host-copied buffer adds to a read's latency.
    pub far_line_cycles: u64,
    /// Which lines of a host-copied buffer are far: those whose buffer offset has an odd number
    /// of these bits set.
    pub far_line_mask: u64,
    /// Load-to-use latency of an L1 hit.
    pub l1_latency: u64,
    /// L1 data cache capacity (bytes; sm_90: 256 KiB shared with shared memory).
    pub l1_bytes: u64,
    /// Bytes per cycle of the SM's path (reads: loads, atomics, cp.async).
    pub bytes_per_cycle: u64,
    /// Cycles the SM's store path takes per sector a plain store writes whole.
    pub store_full_sector_cycles: f64,
    /// Cycles the SM's store path takes per 128-byte line holding sectors a store writes in part.
    pub store_partial_line_cycles: f64,
    /// Cycles the SM's store path takes per sector a store writes in part, with one warp storing.
    pub store_partial_sector_cycles: f64,
    /// What each other warp with stores in the SM's store queue adds to `store_partial_sector_cycles`.
    pub store_partial_sector_warp_cycles: f64,
    /// Cycles after a warp's plain store takes the SM's store path before the warp's next store
    /// that writes one of the same 128-byte lines may take it.
    pub store_line_reuse_cycles: u64,
    /// The most storing warps `store_partial_sector_warp_cycles` counts.
    pub store_warps_counted: u64,
    /// Bytes per cycle of one lane's run of more than 4 bytes into a partial sector (a partial
    /// sector takes this or its per-sector cycles, whichever is more).
    pub store_chunk_bytes_per_cycle: f64,
    /// Cycles a warp takes to issue a plain global store (the stall count ptxas gives it).
    pub store_issue_cycles: u64,
    /// Bytes per cycle a scheduler's memory-instruction path takes of a store's data (the
    /// register-file read before the SM's store path).
    pub store_operand_bytes_per_cycle: u64,
    /// Plain stores the SM's store queue holds before the SM's store path takes them (the next
    /// store of any warp stalls with MemoryThrottle while it is full).
    pub store_queue: u64,
    /// Sectors one warp may have in flight to L2 (loads, atomics; not cp.async, not plain stores,
    /// which the SM's store queue holds instead: `store_queue`): a sector
    /// beyond them is sent when the warp's earliest one completes.
    pub warp_inflight_sectors: u64,
    /// Sector size.
    pub sector_bytes: u64,
    /// Booking horizon of the pipe before MemoryThrottle.
    pub queue_cycles: u64,
}

/// The distributed-shared-memory network of a cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dsmem {
    /// One-way latency.
    pub latency: u64,
    /// One-way latency of a remote mbarrier operation to the other CTA's MbarrierUnit.
    pub sync_latency: u64,
    /// Bytes per cycle an SM sends of generic remote stores' and atomics' data.
    pub bytes_per_cycle: u64,
    /// Bytes per cycle an SM sends of st.async / red.async data (STAS / REDAS).
    pub async_bytes_per_cycle: u64,
    /// A remote load's request occupies the port as if it sent its bytes at this rate.
    pub load_request_bytes_per_cycle: u64,
    /// Bytes per cycle of remote loads' data coming back to the SM.
    pub load_bytes_per_cycle: u64,
    /// Bytes per cycle one warp's generic stores to another CTA's shared memory (ST.E) leave it:
    /// its next memory instruction waits until its data has (at least `smem.store_issue_cycles`).
    pub store_operand_bytes_per_cycle: u64,
    /// Booking horizon of the port before MemoryThrottle.
    pub queue_cycles: u64,
}

/// The paths to and from the synchronization units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sync {
    /// Issue to the MbarrierUnit's local port.
    pub mbarrier_request_cycles: u64,
    /// Response / wake to readable destination registers.
    pub mbarrier_response_cycles: u64,
    /// What a wake (a suspended try_wait whose phase completed) takes beyond a response.
    pub mbarrier_wake_cycles: u64,
    /// What the answer of a phase check (test_wait / try_wait) takes beyond a response.
    pub mbarrier_phase_check_cycles: u64,
    /// Cycles after an mbarrier instruction (other than test_wait) before the warp's next memory
    /// or mbarrier instruction issues.
    pub mbarrier_issue_cycles: u64,
    /// An mbarrier arrive with release semantics (`timing::arrive_releases`) issues no earlier
    /// than this many cycles after the warp's latest shared-memory write.
    pub release_after_shared_write_cycles: u64,
    /// Cycles after an `mbarrier.test_wait` before the warp's next memory or mbarrier instruction
    /// issues.
    pub test_wait_issue_cycles: u64,
    /// The SM's path into the MbarrierUnit takes one local request per this many cycles (all
    /// warps together; fractional: the booking keeps the remainder).
    pub mbarrier_port_cycles: f64,
    /// The same for a phase check (test_wait, try_wait), cycles.
    pub phase_check_port_cycles: f64,
    /// An mbarrier instruction stalls with MemoryThrottle while that path is booked more than
    /// this many cycles ahead.
    pub mbarrier_queue_cycles: u64,
    /// Issue to the NamedBarrierUnit.
    pub named_barrier_request_cycles: u64,
    /// Release to issue of the released warps.
    pub named_barrier_release_cycles: u64,
    /// What a bar.red's result register takes beyond the release (the B2R.RESULT after
    /// ptxas's BAR.RED).
    pub named_barrier_red_result_cycles: u64,
    /// A released warp is asleep at the barrier when it has nothing to issue before the release
    /// and its arrival was at least this many cycles before it.
    pub named_barrier_sleep_cycles: u64,
    /// What the wake of a warp asleep at the barrier takes beyond `named_barrier_release_cycles`.
    pub named_barrier_wake_cycles: u64,
    /// The released warps asleep at the barrier are woken one at a time per scheduler, its
    /// highest warp slot first: each one this many cycles after the one before.
    pub named_barrier_wake_spacing_cycles: u64,
    /// The NamedBarrierUnit's port takes one warp arrival per this many cycles.
    pub named_barrier_arrival_cycles: u64,
    /// What a bar.red arrival occupies the port beyond a plain one (its reduction).
    pub named_barrier_red_cycles: u64,
    /// Issue of barrier.cluster.arrive / wait to the ClusterBarrierUnit.
    pub cluster_barrier_cycles: u64,
    /// From the ClusterBarrierUnit's phase completion until the CTAs of the cluster see it: the
    /// released waiters issue then, and a wait that reaches the unit earlier than that waits for it.
    pub cluster_release_cycles: u64,
    /// A `fence` / `membar` at CTA scope (`fence.acq_rel.cta`, `fence.sc.cta`, `membar.cta`): the
    /// warp issues nothing else for this long.
    pub fence_cta_cycles: u64,
    /// A proxy fence (`fence.proxy.*`).
    pub fence_proxy_cycles: u64,
    /// How long after the warp's previous issue an `mbarrier.init` issues (the SASS before its
    /// SYNCS.EXCH.64: `timing::InstrInfo::setup_cycles`).
    pub mbarrier_init_setup_cycles: u64,
    /// A release at cluster or gpu scope (`fence.*.cluster|gpu|sys`, `membar.gl|sys`,
    /// `barrier.cluster.arrive` without `.relaxed`, `mbarrier.arrive.release.cluster`, `st` /
    /// `atom` / `red` with `.release` / `.acq_rel` / `.sc` at cluster scope or wider): the warp's
    /// prior writes drain to the point of coherence first: the instruction issues this long after
    /// its turn, or when the warp's last outstanding write completes if that is later.
    pub release_drain_cycles: u64,
    /// Releases of one SM's warps drain together in rounds (`engine::scheduler`'s
    /// `ReleaseRounds`): one issued within this long of a round's first joins that round...
    pub release_gather_cycles: u64,
    /// ... while fewer than this many releases have joined it.
    pub release_round_size: u64,
    /// A release that comes later, while a round is in flight, waits for the next round, which
    /// completes this long after the round in flight (or `release_drain_cycles` after it, if later).
    pub release_round_gap_cycles: u64,
    /// From the last prior cp.async of a thread to its cp.async.mbarrier.arrive's arrive-on.
    pub cp_async_arrive_cycles: u64,
    /// From the completion that releases a `cp.async.wait_group` / `wait_all` to the warp's next
    /// issue.
    pub cp_async_wait_cycles: u64,
    /// try_wait time limit without suspendTimeHint, ns.
    pub default_suspend_ns: f64,
    /// try_wait time limit when the instruction gives a suspendTimeHint, ns: silicon's, whatever
    /// the hint.
    pub try_wait_hint_limit_ns: f64,
    /// try_wait time limit without suspendTimeHint in a converged warp, ns (a diverged warp's
    /// answers at once).
    pub try_wait_suspend_limit_ns: f64,
    /// Upper bound of one nanosleep, ns.
    pub nanosleep_max_ns: f64,
    /// nanosleep's timer tick, ns: `nanosleep t` sleeps the largest power of two not above t,
    /// in ticks ([`crate::timing::nanosleep_cycles`]).
    pub nanosleep_tick_ns: f64,
    /// What a nanosleep returns before its ticks run out, cycles.
    pub nanosleep_lead_cycles: u64,
    /// The shortest nanosleep (t below a few ticks, 0 included), cycles.
    pub nanosleep_min_cycles: u64,
}

/// The TMA engine (one per SM): bulk and tensor copies, their global-memory traffic and
/// shared-memory writes (PTX 9.7.9.25; the unit's structure is hdl/src/tma/).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tma {
    /// Issue of a TMA instruction to the engine's command queue (every command: loads, stores,
    /// commit_group, prefetches).
    pub issue_cycles: u64,
    /// The engine's front end takes one copy command (a load, store or reduction; not a
    /// prefetch or commit_group) per this many cycles: the issuing instruction waits.
    pub command_cycles: u64,
    /// Cycles a warp waits after a TMA copy, reduction or prefetch instruction, per active lane
    /// (ptxas's loop over the lanes).
    pub per_lane_issue_cycles: u64,
    /// Cycles an SM's TMA unit takes to fetch a tensor map's descriptor at its first use.
    pub map_fetch_cycles: u64,
    /// What the SM's first tensor load waits beyond that when its warps made no global access
    /// before.
    pub first_read_cycles: u64,
    /// The same when the CTA's warps wrote global memory before (and read none).
    pub first_read_after_store_cycles: u64,
    /// The same when they read global memory before.
    pub first_read_after_load_cycles: u64,
    /// The same for a prefetch (`cp.async.bulk.prefetch{.tensor}.L2`).
    pub prefetch_issue_cycles: u64,
    /// Cycles a TMA global read takes beyond `[global] latency` (the engine's own L2 request
    /// path): loads and prefetches pay it, stores do not.
    pub read_extra_cycles: u64,
    /// Descriptor decode of a tensor command (bulk commands: 2 cycles).
    pub decode_cycles: u64,
    /// Bytes per cycle written into (or read from) shared memory, per SM.
    pub smem_bytes_per_cycle: u64,
    /// Global read requests (`request_bytes` each at most) in flight at most: the RTL
    /// TmaEngine's reorder-buffer tags (1..=256); the timing model of the forms it does not run
    /// uses the same bound.
    pub read_tags: u32,
    /// Bytes of one global read request of the TmaEngine (32, 64 or 128): the aligned block of
    /// a row it reads at once, at most one 128-byte line (its reorder-buffer row).
    pub request_bytes: u32,
    /// Cycles from the last beat reaching a CTA's shared memory to its complete-tx reaching the
    /// MbarrierUnit.
    pub complete_tx_cycles: u64,
    /// The front end takes one prefetch command (`cp.async.bulk.prefetch{.tensor}.L2`) per this
    /// many cycles: the issuing instruction waits, as for `command_cycles`.
    pub prefetch_command_cycles: u64,
    /// Cycles from a store's (or global reduction's) command reaching the engine to the engine
    /// taking it (its first shared-memory read).
    pub store_start_cycles: u64,
    /// Bytes per cycle the global side takes a store's sector writes at (the engine issues at
    /// most one 32-byte sector a cycle).
    pub write_bytes_per_cycle: f64,
    /// Bytes per cycle the global side takes a reduction's (`cp.reduce.async.bulk` .global)
    /// sector writes at.
    pub reduce_bytes_per_cycle: f64,
    /// Cycles from a store's sector write being taken to its acknowledgement.
    pub store_ack_cycles: u64,
    /// Cycles from a reduction's sector write being taken to its acknowledgement.
    pub reduce_ack_cycles: u64,
}

/// Run limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Cycles without progress before a spinning run is a Deadlock.
    pub deadlock_spin_cycles: u64,
    /// Cycles before StepLimit.
    pub max_cycles: u64,
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmConfig {
    /// Clock.
    pub clock: Clock,
    /// Issue.
    pub issue: Issue,
    /// Latencies.
    pub latency: Latency,
    /// Shared memory.
    pub smem: Smem,
    /// Global memory.
    pub global: Global,
    /// DSMEM network.
    pub dsmem: Dsmem,
    /// Sync-unit paths.
    pub sync: Sync,
    /// TMA engine.
    pub tma: Tma,
    /// The warpgroup MMA (wgmma.rs).
    pub wgmma: Wgmma,
    /// Run limits.
    pub run: Run,
    /// Which simulator clocks the units (not in the TOML: rust-hdl unless a caller sets another,
    /// e.g. `hopsync run --engine verilator`).
    #[serde(skip)]
    pub backend: crate::units::Backend,
}

impl SmConfig {
    /// The built-in sm_90 configuration.
    pub fn sm90() -> SmConfig {
        SmConfig::parse(SM90_TOML).expect("sim/configs/sm90.toml is valid")
    }

    /// Parses a configuration.
    pub fn parse(text: &str) -> Result<SmConfig, String> {
        let c: SmConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if c.issue.schedulers == 0 || c.smem.banks == 0 || c.smem.bank_bytes == 0 || c.global.bytes_per_cycle == 0 || c.dsmem.bytes_per_cycle == 0 || c.tma.smem_bytes_per_cycle == 0 || !(c.tma.write_bytes_per_cycle > 0.0) || !(c.tma.reduce_bytes_per_cycle > 0.0) || !(0.01..=1e6).contains(&c.global.store_chunk_bytes_per_cycle) || ![c.global.store_full_sector_cycles, c.global.store_partial_line_cycles, c.global.store_partial_sector_cycles, c.global.store_partial_sector_warp_cycles].iter().all(|v| (0.0..=1e6).contains(v)) || c.global.sector_bytes > 64 || !(1..=256).contains(&c.tma.read_tags) || ![32, 64, 128].contains(&c.tma.request_bytes) || c.clock.mhz <= 0.0 {
            return Err("schedulers, banks, bank_bytes, bytes_per_cycle, tma.smem_bytes_per_cycle, tma.write_bytes_per_cycle, tma.reduce_bytes_per_cycle and mhz must be positive, global.store_chunk_bytes_per_cycle in 0.01..=1e6, the store path cycles in 0..=1e6, global.sector_bytes at most 64, tma.read_tags in 1..=256, tma.request_bytes 32, 64 or 128".into());
        }
        // a queue of no places never lets an access in (the run would never end)
        let zero = [
            ("smem.queue_instructions", c.smem.queue_instructions),
            ("smem.store_queue_instructions", c.smem.store_queue_instructions),
            ("global.store_queue", c.global.store_queue),
            ("dsmem.async_bytes_per_cycle", c.dsmem.async_bytes_per_cycle),
            ("dsmem.load_request_bytes_per_cycle", c.dsmem.load_request_bytes_per_cycle),
            ("dsmem.load_bytes_per_cycle", c.dsmem.load_bytes_per_cycle),
            ("dsmem.store_operand_bytes_per_cycle", c.dsmem.store_operand_bytes_per_cycle),
        ];
        if let Some((key, _)) = zero.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{key} must be at least 1"));
        }
        Ok(c)
    }

    /// Nanoseconds to cycles (rounded up).
    pub fn ns_to_cycles(&self, ns: f64) -> u64 {
        (ns * self.clock.mhz / 1000.0).ceil().max(0.0) as u64
    }

    /// Clock period in picoseconds (VCD time of one cycle).
    pub fn period_ps(&self) -> u64 {
        (1e6 / self.clock.mhz).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_config_parses_and_converts_time() {
        let c = SmConfig::sm90();
        assert_eq!(c.issue.schedulers, 4);
        assert_eq!((c.smem.banks, c.smem.bank_bytes), (32, 4));
        assert_eq!(c.ns_to_cycles(1000.0), 1980);
        assert_eq!(c.period_ps(), 505);
    }

    #[test]
    fn queues_of_no_places_are_errors() {
        for (line, key) in [
            ("queue_instructions = 12", "smem.queue_instructions"),
            ("store_queue_instructions = 9", "smem.store_queue_instructions"),
            ("store_queue = 16", "global.store_queue"),
            ("load_bytes_per_cycle = 20", "dsmem.load_bytes_per_cycle"),
        ] {
            let key_name = line.split(" = ").next().unwrap();
            let t = SM90_TOML.replacen(&format!("\n{line}\n"), &format!("\n{key_name} = 0\n"), 1);
            assert_ne!(t, SM90_TOML, "{line} not in sm90.toml");
            let e = SmConfig::parse(&t).expect_err(key);
            assert!(e.contains(key), "{e}");
        }
    }

    #[test]
    fn store_path_cycles_out_of_range_are_errors() {
        for bad in ["-1.0", "1e30", "inf", "nan"] {
            let t = SM90_TOML.replace("store_partial_line_cycles = 0.8", &format!("store_partial_line_cycles = {bad}"));
            assert_ne!(t, SM90_TOML);
            assert!(SmConfig::parse(&t).is_err(), "{bad} accepted");
        }
        for bad in ["0", "1e-300"] {
            let t = SM90_TOML.replace("store_chunk_bytes_per_cycle = 11", &format!("store_chunk_bytes_per_cycle = {bad}"));
            assert!(SmConfig::parse(&t).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn unknown_keys_are_errors() {
        let t = SM90_TOML.replace("[run]", "[run]\nbogus = 1");
        assert!(SmConfig::parse(&t).is_err());
    }
}
