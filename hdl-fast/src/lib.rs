//! Straight-line Rust models of the hopsync units, generated at build time from their rust-hdl
//! HDL (`src/gen.rs`, run by `build.rs`): one struct per unit instantiation whose `eval` settles
//! the combinational logic in one pass (every statement once, in dependency order) and whose
//! `edge` clocks the DFFs and RAMs. rust-hdl's own `simulate` settles the same logic by repeated
//! whole-unit passes (about 16 per edge for the MbarrierUnit) with a struct compare per signal;
//! the generated models give identical values every cycle (tests/lockstep.rs) at a fraction of
//! the cost (docs/PERF.md).
//!
//! The models: the MbarrierUnit at the engine's three bank sizes (`MbarrierUnitA9`, `A12`, `A15`)
//! and the lockstep harness's (`MbarrierUnitTest`), the `NamedBarrierUnitModel` and the
//! `ClusterBarrierUnitModel`, and the `TmaEngineModel` (its combinational leaves with
//! hand-written Verilog run their own Rust `update`: gen::RUST_LEAVES).
//!
//! A model starts from a live rust-hdl instance (`from_block`), so the constructor parameters
//! (constants, RAM contents) are the instance's. Per cycle: set the inputs, `eval` (outputs with
//! the clock low), `edge`, `eval` (registered outputs), as the engine clocks rust-hdl units.

pub mod gen;
pub mod rt;

/// The generated models.
#[allow(clippy::all, unused_parens, unused_mut, non_snake_case)]
pub mod models {
    use hopsync_hdl::cluster_barrier_unit::*;
    use hopsync_hdl::mbarrier_unit::*;
    use hopsync_hdl::named_barrier_unit::*;
    use hopsync_hdl::tma_engine::*;
    use rust_hdl::prelude::*;
    include!(concat!(env!("OUT_DIR"), "/units.rs"));
}
