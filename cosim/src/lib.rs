//! hopsync golden model and co-simulation.
//!
//! [`mbarrier`] holds the mbarrier word semantics as pure functions; [`machine`] is the SIMT
//! executor of the firmware IR (instruction bodies in [`exec`], one per opcode; [`reconverge`]: where
//! divergent lanes meet again); [`retire`] is
//! the per-instruction log every engine writes and the lockstep harness compares.

pub mod budget;
pub mod finding;
pub mod mbarrier;
pub mod exec;
pub mod machine;
pub mod warp;
pub mod heap;
pub mod reconverge;
pub mod race;
mod machine_api;
pub mod spin;
pub mod lockstep;
pub mod report;
pub mod retire;
pub mod gpu;
pub mod gen;
