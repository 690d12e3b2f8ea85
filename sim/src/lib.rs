//! hopsync-sim: the cycle-accurate SM model (`hopsync run --engine rtl`).
//!
//! - [`calib`]: `hopsync calibrate`, the engine against silicon microbenchmarks;
//! - [`config`]: every timing constant, from `sim/configs/sm90.toml`;
//! - [`units`]: the RTL units of `hopsync-hdl`, clocked in a direct `simulate()` loop;
//! - [`timing`]: instruction classes, register sets, memory cost models;
//! - [`wgmma`]: the tensor cores and wgmma groups (timing of `wgmma.*`);
//! - [`engine`]: warps, schedulers, scoreboard, memory pipes and the unit traffic;
//! - [`probe`]: per-cycle observation (stall reasons, unit signals) for waveforms;
//! - [`waves`]: `--waves FILE.vcd`: the VCD probe and the GTKWave save file beside it;
//! - [`timeline`]: `--timeline FILE.json`: the run as Chrome trace-event JSON (Perfetto);
//! - [`lockstep`]: `hopsync cosim`, the engine checked against the golden model instruction by
//!   instruction.

pub mod bench;
pub mod calib;
pub mod config;
pub mod engine;
pub mod lockstep;
pub mod probe;
pub mod timeline;
pub mod timing;
pub mod units;
pub mod waves;
pub mod wgmma;

pub use config::SmConfig;
pub use engine::Engine;

use hopsync_cosim::machine::Config;
use hopsync_cosim::report::RunReport;
use hopsync_firmware::Program;

/// Runs a program on the RTL engine and reports like the golden engine (plus `cycles`).
pub fn run_rtl(prog: &Program, cfg: Config, sm: SmConfig) -> RunReport {
    let mut e = Engine::new(prog, cfg, sm);
    let outcome = e.run();
    e.report(&outcome)
}
