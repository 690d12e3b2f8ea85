//! hopsync-hdl: synthesizable models (rust-hdl 0.46) of the asynchronous-synchronization units of
//! an sm_90 SM, one unit per module: the mbarrier unit (PTX 9.7.13.15), the named-barrier unit
//! (PTX 9.7.13.1) and the cluster-barrier unit (PTX 9.7.13.3).

pub mod cluster_barrier_unit;
pub mod common;
pub mod mbarrier_unit;
pub mod named_barrier_unit;
