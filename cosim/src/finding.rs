//! Findings: undefined behaviour, broken rules and deadlocks, each with a stable name shared by the
//! golden model, the RTL simulation assertions and the bad-program expectations.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! findings {
    ($( $(#[$doc:meta])* $v:ident ),* $(,)?) => {
        /// Every finding kind.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum FindingKind { $( $(#[$doc])* $v ),* }
        impl FindingKind {
            /// Stable name.
            pub fn name(self) -> &'static str {
                match self { $( FindingKind::$v => stringify!($v) ),* }
            }
            /// Whether the kind is a data race (found by the golden model's happens-before
            /// detector only, [`crate::race`]).
            pub fn is_race(self) -> bool {
                matches!(self, FindingKind::SharedMemoryRace | FindingKind::GlobalMemoryRace | FindingKind::ProxyRace)
            }
            /// All kinds.
            pub const ALL: &'static [FindingKind] = &[$(FindingKind::$v),*];
            /// Kind from its name.
            pub fn from_name(s: &str) -> Option<FindingKind> {
                Self::ALL.iter().copied().find(|k| k.name() == s)
            }
        }
    };
}

findings! {
    /// An mbarrier operation other than init on an object never initialized or invalidated (PTX 9.7.13.15.3).
    MbarrierUninitialized,
    /// `mbarrier.init` on an object that is still valid (PTX 9.7.13.15.9: "must be invalidated to repurpose").
    MbarrierInitOnValid,
    /// Arrival or expected count outside 1..=2^20-1 (PTX 9.7.13.15.2).
    MbarrierCountOutOfRange,
    /// Pending arrival count would go below zero (PTX 9.7.13.15.2).
    MbarrierPendingUnderflow,
    /// tx-count outside [-(2^20-1), 2^20-1] (PTX 9.7.13.15.2).
    MbarrierTxCountOutOfRange,
    /// A `.noComplete` arrive that completes the phase (PTX 9.7.13.15.13).
    MbarrierNoCompleteCompleted,
    /// test_wait/try_wait on a phase neither current nor immediately preceding (PTX 9.7.13.15.16).
    MbarrierWaitPhaseInvalid,
    /// An operation other than arrive/expect_tx/complete_tx on a `.shared::cluster` mbarrier (PTX 9.7.13.15.8).
    MbarrierClusterAddressUnsupported,
    /// An arrive in the next phase before a wait returned true in this one (PTX 9.7.13.15.4).
    MbarrierArriveBeforeWait,
    /// An mbarrier address that is not 8-byte aligned (PTX 9.7.13.15.1).
    MbarrierMisaligned,
    /// An mbarrier address outside shared memory (PTX 9.7.13.15.1).
    MbarrierNotShared,
    /// `mbarrier.pending_count` on a token that did not come from a `.noComplete` arrive (PTX 9.7.13.15.17).
    MbarrierPendingCountBadToken,
    /// A plain memory access to an mbarrier object while it is valid (PTX 9.7.13.15.3: only mbarrier ops may touch it).
    MbarrierAccessedAsData,
    /// Barrier id outside 0..=15 (PTX 9.7.13.1).
    BarrierIdOutOfRange,
    /// Barrier thread count not a multiple of the warp size (PTX 9.7.13.1).
    BarrierCountNotMultipleOfWarp,
    /// More threads arrived than the barrier's thread count (PTX 9.7.13.1).
    BarrierCountTooSmall,
    /// A barrier thread count above the CTA's threads: only the CTA's threads can arrive, so the
    /// barrier can never complete (PTX 9.7.13.1: operand b threads participate).
    BarrierCountAboveCta,
    /// Threads using one active barrier with different thread counts (PTX 9.7.13.1).
    BarrierCountMismatch,
    /// An `.aligned` barrier executed by a divergent warp (PTX 9.7.13.1).
    BarrierAlignedDivergent,
    /// `bar.red` mixed with `bar.sync`/`bar.arrive` on the same active barrier (PTX 9.7.13.1).
    BarrierRedMixed,
    /// A warp arriving twice on a barrier before it resets (PTX 9.7.13.1).
    BarrierWarpArrivedTwice,
    /// `barrier.cluster.wait` without a preceding arrive in this phase (PTX 9.7.13.3).
    ClusterBarrierWaitWithoutArrive,
    /// `barrier.cluster.arrive` twice in one phase (PTX 9.7.13.3).
    ClusterBarrierArriveTwice,
    /// A `.aligned` cluster barrier executed divergently (PTX 9.7.13.3).
    ClusterBarrierAlignedDivergent,
    /// A `.sync` warp instruction whose membermask does not match the threads executing it (PTX 9.7.13.2, 9.7.13.9-14).
    WarpSyncMaskMismatch,
    /// A memory access outside any allocation.
    MemOutOfBounds,
    /// A memory access not aligned to its size.
    MemMisaligned,
    /// `mapa` or a `.shared::cluster` access naming a CTA rank outside the cluster.
    ClusterRankOutOfRange,
    /// `st.async` / `red.async` whose mbarrier is not in the same CTA as the destination (PTX 9.7.9.12).
    AsyncMbarrierMismatch,
    /// Every live warp blocked (or spinning) and no asynchronous operation pending.
    Deadlock,
    /// The run passed its step limit.
    StepLimit,
    /// Division by zero in an integer `div`/`rem`.
    DivideByZero,
    /// Shared memory written through the generic proxy and then accessed by the async proxy (a bulk
    /// copy's source or destination) without a `fence.proxy.async` by the writing thread in
    /// between (PTX 8.6 Proxies; PTX 9.7.13.4 fence.proxy.async).
    ProxyFenceMissing,
    /// Two accesses to one 4-byte word of shared memory (own CTA or DSMEM), at least one a write,
    /// that no synchronization the program performed orders (happens-before, PTX 8; `race.rs`);
    /// also a DSMEM access not ordered before the exit of the CTA owning the memory.
    SharedMemoryRace,
    /// Two accesses to one 4-byte word of global memory, at least one a write, not ordered by
    /// happens-before (`--race global`).
    GlobalMemoryRace,
    /// A generic-proxy write ordered before an async-proxy access (a bulk or tensor copy) of the
    /// same word, but with no `fence.proxy.async` by the writer between them (PTX 8.6, 9.7.13.4).
    ProxyRace,
    /// A generic access to the shared-memory destination of a TMA load before the phase of its
    /// mbarrier that the load completes has completed (PTX 9.7.9.25.2 mbarrier-based completion).
    TmaReadBeforeComplete,
    /// A bulk or tensor copy address or size that breaks its alignment rule (PTX 9.7.9.25.4.1:
    /// 16-byte addresses, size a multiple of 16; tensor shared-memory addresses 128-byte aligned).
    TmaMisaligned,
    /// A tensor coordinate or im2col offset outside the range of its mode, or a coordinate vector
    /// that does not match the tensor map (PTX 5.5.3, 5.5.4; 9.7.9.25.5.2).
    TmaCoordOutOfRange,
    /// The TMA engine signals an mbarrier that is not valid, or signals another CTA's mbarrier that
    /// was initialized without a `fence.mbarrier_init.release.cluster` after its init (PTX
    /// 9.7.13.15.3, 9.7.13.4).
    TmaMbarrierNotInitialized,
    /// A tensor-map image that does not decode, or does not fit the instruction using it (PTX 5.5.8).
    TensorMapInvalid,
    /// `shfl.sync` reading its value from a lane that is not executing the instruction (exited, or
    /// outside membermask): the value is undefined (PTX 9.7.9 "shfl.sync").
    ShflSourceInactive,
    /// An instruction reads or writes an accumulator or A-fragment register of a `wgmma.mma_async`
    /// before a `wgmma.wait_group` waited for it (PTX 9.7.15.5.2).
    WgmmaRegisterAccess,
    /// A `wgmma.mma_async` without a `wgmma.fence` ordering the warp's earlier accesses to its
    /// registers (none since the warp started, or one of its registers accessed since) (PTX
    /// 9.7.15 "wgmma.fence").
    WgmmaFenceMissing,
    /// A `wgmma.mma_async.sp` metadata field that places no valid pattern: a 2:4 index pair of
    /// equal indices (0b0000, 0b0101, 0b1010, 0b1111), or for tf32's 1:2 anything but 0b0100 and
    /// 0b1110 (PTX 9.7.15.6.1: undefined behavior).
    WgmmaSparseMetadataInvalid,
    /// A device-side `assert` failed (`__assertfail`): the message names the expression, file
    /// and line.
    AssertionFailed,
    /// `trap` (PTX 9.7.19.3): the kernel aborts.
    Trap,
    /// `brkpt` (PTX 9.7.19.1) with no debugger to stop in.
    Breakpoint,
    /// An indirect `call` through an address that is no function (PTX 9.7.12.5).
    CallTargetInvalid,
    /// A thread's call stack outgrew its local memory.
    CallStackOverflow,
    /// `free` of a pointer that `malloc` did not return, or that was freed already.
    HeapFreeInvalid,
}

/// Where a finding happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Location {
    /// Source file.
    pub file: String,
    /// Source line (0 when not tied to one instruction).
    pub line: u32,
    /// Source column.
    pub col: u32,
    /// Program counter (instruction index).
    pub pc: u32,
    /// Linear CTA id.
    pub cta: u32,
    /// Warp index within the CTA.
    pub warp: u32,
    /// First offending lane.
    pub lane: u32,
    /// The instruction as text.
    pub instr: String,
    /// For a program compiled from CUDA C++ (`file:line:col` above is the `.cu` line): the PTX
    /// instruction's `file:line:col`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ptx: String,
}

/// A named finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable kind.
    pub kind: FindingKind,
    /// What happened, with the state involved.
    pub message: String,
    /// Where.
    pub location: Location,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = &self.location;
        if l.line == 0 {
            // no instruction to point at (a deadlock: the message lists every warp's wait)
            return write!(f, "finding {}: {}\n  --> {}", self.kind.name(), self.message, l.file);
        }
        write!(
            f,
            "finding {}: {}\n  --> {}:{}:{} (cta {}, warp {}, lane {}, pc {}: `{}`)",
            self.kind.name(),
            self.message,
            l.file,
            l.line,
            l.col,
            l.cta,
            l.warp,
            l.lane,
            l.pc,
            l.instr
        )?;
        if !l.ptx.is_empty() {
            write!(f, "\n  --> PTX {}", l.ptx)?;
        }
        Ok(())
    }
}
