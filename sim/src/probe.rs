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
    /// Its sync-unit request waits for the unit's port (ready low or another request first).
    UnitBackpressure,
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
            Stall::UnitBackpressure => "UnitBackpressure",
            Stall::NotLaunched => "NotLaunched",
            Stall::Exited => "Exited",
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
}

/// The units of one CTA.
pub struct CtaUnits<'a> {
    /// Its MbarrierUnit.
    pub mbarrier: &'a MbarUnit,
    /// Its NamedBarrierUnit.
    pub named: &'a NamedUnit,
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
