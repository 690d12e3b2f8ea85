//! hopsync-hdl: synthesizable models (rust-hdl 0.46) of the asynchronous-synchronization units of
//! an sm_90 SM, one unit per module: the mbarrier unit (PTX 9.7.13.15), the named-barrier unit
//! (PTX 9.7.13.1), the cluster-barrier unit (PTX 9.7.13.3), the shared-memory data port and the
//! CTA top that holds them all; `verilog` lists the units for the Verilog / Verilator / FPGA flow.

pub mod cluster_barrier_unit;
pub mod common;
pub mod cta_top;
pub mod fpga;
pub mod mbarrier_unit;
pub mod named_barrier_unit;
pub mod smem_port;
pub mod tma;
/// The TMA engine's module under its former name (the crates that clock it import it so).
pub use tma as tma_engine;
pub mod verilog;
