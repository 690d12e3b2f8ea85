//! The retire record: what one executed warp-instruction did. Every engine writes these as a side
//! effect of executing; the lockstep harness compares them field by field.

use serde::{Deserialize, Serialize};

/// A register write of one instruction: the value per active lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegWrite {
    /// Register id.
    pub reg: u32,
    /// Lanes written.
    pub mask: u32,
    /// Value per lane (only `mask` lanes meaningful; others 0).
    pub values: Vec<u64>,
}

/// Memory space of a memory effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemSpace {
    /// Global memory (generic address).
    Global,
    /// Shared memory of a CTA (linear CTA id, byte offset).
    Shared(u32),
    /// Local memory of a thread.
    Local,
}

/// One memory write (plain store, atomic, async completion).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemWrite {
    /// Space.
    pub space: MemSpace,
    /// Address (global) or offset (shared/local).
    pub addr: u64,
    /// Bytes written, little-endian.
    pub bytes: Vec<u8>,
}

/// A change in a synchronization unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SyncEvent {
    /// An mbarrier word changed: CTA, shared offset, old word, new word.
    Mbarrier {
        /// Linear CTA id holding the object.
        cta: u32,
        /// Shared-memory offset of the object.
        offset: u32,
        /// Word before.
        old: u64,
        /// Word after.
        new: u64,
    },
    /// A named barrier completed and released its waiters.
    NamedBarrierRelease {
        /// Linear CTA id.
        cta: u32,
        /// Barrier 0..=15.
        id: u32,
        /// Warps released.
        warps: u64,
    },
    /// The cluster barrier completed a phase.
    ClusterBarrierRelease {
        /// Cluster index.
        cluster: u32,
        /// Phases completed so far.
        phase: u64,
    },
}

/// One retired warp-instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Retire {
    /// Scheduler step.
    pub step: u64,
    /// Linear CTA id.
    pub cta: u32,
    /// Warp in the CTA.
    pub warp: u32,
    /// Instruction index.
    pub pc: u32,
    /// Lanes that executed (guard included: lanes whose guard was false are not in it).
    pub mask: u32,
    /// Register writes.
    pub regs: Vec<RegWrite>,
    /// Memory writes.
    pub mem: Vec<MemWrite>,
    /// Sync-unit changes.
    pub sync: Vec<SyncEvent>,
    /// Issue numbers (`Pending::seq`) of the asynchronous operations it started, for observers
    /// (the timeline pairs a TMA copy's issue with its completion events); not compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issued: Vec<u64>,
}

/// Where retire records go.
pub trait RetireSink {
    /// Takes one record.
    fn retire(&mut self, r: Retire);
}

/// Keeps every record (for cosim, tests and `--trace`).
#[derive(Debug, Default)]
pub struct RetireLog {
    /// The records, in retire order.
    pub records: Vec<Retire>,
}

impl RetireSink for RetireLog {
    fn retire(&mut self, r: Retire) {
        self.records.push(r);
    }
}
