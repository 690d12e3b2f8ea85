//! Per-cycle observation of the engine, for waveforms (a VCD writer implements [`Probe`]) and
//! for tests.

use crate::units::{ClusterUnit, MbarUnit, NamedUnit};
use hopsync_firmware::ir::Module;

/// Why a warp did not issue this cycle (or that it did).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stall {
    /// It issued an instruction this cycle.
    Issued,
    /// Eligible, but its scheduler issued another warp.
    Ready,
    /// A source or destination register is still being written.
    ScoreboardDep,
    /// Waiting for a taken branch's fetch redirect.
    Branch,
    /// In `nanosleep`.
    Sleep,
    /// Blocked on a named barrier (`bar.sync`, `bar.red`, or waiting for the rest of its warp).
    BarrierWait,
    /// Blocked on the cluster barrier.
    ClusterBarrierWait,
    /// In `cp.async.wait_group` / `wait_all`.
    AsyncWait,
    /// A sync-unit request of its instruction is in flight (accepted, response pending).
    MbarrierWait,
    /// Suspended by `mbarrier.try_wait` until the unit's wake.
    TryWaitSuspended,
    /// Its memory pipe (shared memory, global, DSMEM) is booked too far ahead.
    MemoryThrottle,
    /// Its next instruction's execution pipe (the scheduler's IMAD pipe) is busy.
    PipeThrottle,
    /// Its next instruction waits for memory ordering: a fence, or a release at cluster scope or
    /// wider draining the warp's writes.
    MemoryOrder,
    /// Its sync-unit request waits for the unit's port (ready low or another request first).
    UnitBackpressure,
    /// In `wgmma.wait_group` until its groups complete.
    WgmmaWait,
    /// Not launched yet (CTA launch into the units).
    NotLaunched,
    /// Every thread exited.
    Exited,
}

impl Stall {
    /// Stable name (waveform string values).
    pub fn name(self) -> &'static str {
        match self {
            Stall::Issued => "Issued",
            Stall::Ready => "Ready",
            Stall::ScoreboardDep => "ScoreboardDep",
            Stall::Branch => "Branch",
            Stall::Sleep => "Sleep",
            Stall::BarrierWait => "BarrierWait",
            Stall::ClusterBarrierWait => "ClusterBarrierWait",
            Stall::AsyncWait => "AsyncWait",
            Stall::MbarrierWait => "MbarrierWait",
            Stall::TryWaitSuspended => "TryWaitSuspended",
            Stall::MemoryThrottle => "MemoryThrottle",
            Stall::MemoryOrder => "MemoryOrder",
            Stall::PipeThrottle => "PipeThrottle",
            Stall::UnitBackpressure => "UnitBackpressure",
            Stall::WgmmaWait => "WgmmaWait",
            Stall::NotLaunched => "NotLaunched",
            Stall::Exited => "Exited",
        }
    }
}

/// What a warp's lanes are doing at the end of a cycle (its architectural state; [`Stall`] says
/// why it did not issue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WarpActivity {
    /// Its CTA has not been launched into the units yet.
    NotLaunched,
    /// Some lanes can run (issued, or stalled on timing only).
    Runnable,
    /// A synchronizing instruction is in flight in a unit (mbarrier, bar, barrier.cluster).
    InSync,
    /// Every live lane waits at a named barrier.
    NamedBarrier,
    /// Every live lane waits for the cluster barrier's phase.
    ClusterBarrier,
    /// Every live lane waits in `cp.async.wait_group` / `cp.async.bulk.wait_group`.
    AsyncGroups,
    /// Every thread exited.
    Exited,
}

impl WarpActivity {
    /// Stable name (waveform string values).
    pub fn name(self) -> &'static str {
        match self {
            WarpActivity::NotLaunched => "NotLaunched",
            WarpActivity::Runnable => "Runnable",
            WarpActivity::InSync => "InSync",
            WarpActivity::NamedBarrier => "NamedBarrier",
            WarpActivity::ClusterBarrier => "ClusterBarrier",
            WarpActivity::AsyncGroups => "AsyncGroups",
            WarpActivity::Exited => "Exited",
        }
    }
}

/// One warp at the end of a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarpView {
    /// CTA (linear id).
    pub cta: u32,
    /// Warp in the CTA.
    pub warp: u32,
    /// The pc it runs next (lowest pc of its ready lanes; else of its live lanes).
    pub pc: u32,
    /// Why it did (not) issue this cycle.
    pub stall: Stall,
    /// What its lanes are doing.
    pub state: WarpActivity,
    /// Lanes that have not exited (bit l = lane l).
    pub live: u32,
}

/// The units of one CTA.
pub struct CtaUnits<'a> {
    /// The cluster it belongs to (index into [`Snapshot::clusters`]).
    pub cluster: u32,
    /// Its MbarrierUnit.
    pub mbarrier: &'a MbarUnit,
    /// Its NamedBarrierUnit.
    pub named: &'a NamedUnit,
    /// The cycle until which its shared-memory port (32 banks, one wavefront per cycle) is booked.
    pub smem_booked_until: u64,
    /// The cycle until which its global-memory pipe is booked.
    pub global_booked_until: u64,
    /// The cycle until which its DSMEM network port is booked.
    pub dsmem_booked_until: u64,
}

/// What a probe sees after each cycle. Unit signals are reached through each unit's `accept`
/// (rust-hdl's probe visitor: every port, register and temporary).
pub struct Snapshot<'a> {
    /// The cycle just simulated.
    pub cycle: u64,
    /// Every warp.
    pub warps: &'a [WarpView],
    /// The kernel (instruction text: `printer::print_instr(module, &module.kernel.body[pc])`).
    pub module: &'a Module,
    /// Per CTA, its units.
    pub ctas: Vec<CtaUnits<'a>>,
    /// Per cluster, its ClusterBarrierUnit.
    pub clusters: Vec<&'a ClusterUnit>,
    /// Clock period in ps (VCD time of one cycle).
    pub period_ps: u64,
}

/// A per-cycle observer (a VCD writer, a test).
pub trait Probe {
    /// Called after every simulated cycle (cycles skipped while everything is idle are not
    /// reported; nothing changes in them).
    fn cycle(&mut self, snap: &Snapshot<'_>);

    /// Called once when the run ends (flush files, report the first I/O error).
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A probe that counts stall reasons (tests, reports).
#[derive(Debug, Default, Clone)]
pub struct StallCounter {
    /// Warp-cycles per stall reason.
    pub counts: std::collections::BTreeMap<&'static str, u64>,
    /// Cycles observed.
    pub cycles: u64,
}

impl Probe for StallCounter {
    fn cycle(&mut self, snap: &Snapshot<'_>) {
        self.cycles += 1;
        for w in snap.warps {
            *self.counts.entry(w.stall.name()).or_default() += 1;
        }
    }
}
