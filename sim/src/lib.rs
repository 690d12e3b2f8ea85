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

use hopsync_cosim::budget::Footprint;
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::RunReport;
use hopsync_firmware::Program;

/// What the SM engine adds to its golden machine, measured with a counting allocator on the
/// rust-hdl units (tests/memory_budget.rs keeps these an upper bound): per CTA a base (the
/// NamedBarrierUnit, the CTA's share of the ClusterBarrierUnit, queues) and the MbarrierUnit's
/// bank, about 200 bytes per word in rust-hdl's simulation (2^9, 2^12 or 2^15 words: 164 KB,
/// 811 KB, 6.4 MB per CTA measured); where the module uses the TMA, the TmaEngine and its
/// per-thread operations; per warp its scoreboard (8 bytes per register) and state.
const ENGINE_PER_CTA: u64 = 64 << 10;
const ENGINE_PER_BANK_WORD: u64 = 200;
const TMA_PER_CTA: u64 = 360 << 10;
const TMA_PER_THREAD: u64 = 1600;
fn engine_per_warp(regs: u64) -> u64 {
    8 * regs + 512
}

/// The memory a run on the SM engine takes (hopsync_cosim::budget): its golden machine plus its
/// units and per-warp state. Verilator's models live outside Rust's allocator and are smaller
/// than rust-hdl's (a bank word is 8 bytes there); they are counted at the rust-hdl size.
pub fn footprint(prog: &Program, sm: &SmConfig) -> Footprint {
    let _ = sm;
    // The engine's golden machine runs without the race detector (engine/mod.rs).
    let mut f = Footprint::golden_with_race(prog, hopsync_cosim::race::RaceMode::Off);
    let man = &prog.manifest;
    let ctas = man.ctas() as u64;
    let threads = (man.threads_per_cta() as u64).div_ceil(32) * 32;
    let warps = ctas * threads / 32;
    let at = hopsync_firmware::manifest::Locator::new(&prog.source);
    let smem = hopsync_firmware::limits::Layout::of(&prog.module, man).smem_bytes as u32;
    let words = 1u64 << units::MbarUnit::bank_words_log2(smem);
    let per_cta = ENGINE_PER_CTA + ENGINE_PER_BANK_WORD * words;
    f.add(&format!("SM engine units: {per_cta} bytes (a {words}-word mbarrier bank) x {ctas} CTAs"), per_cta * ctas, at.at(hopsync_firmware::manifest::Key::Launch("grid")));
    if hopsync_cosim::exec::tma_tracks(&prog.module) {
        let tma = TMA_PER_CTA + TMA_PER_THREAD * threads;
        f.add(&format!("SM engine TMA: {tma} bytes x {ctas} CTAs"), tma * ctas, at.at(hopsync_firmware::manifest::Key::Launch("grid")));
    }
    let regs = prog.module.kernel.regs.len() as u64;
    f.add(&format!("SM engine scoreboard: {} bytes x {warps} warps", engine_per_warp(regs)), engine_per_warp(regs) * warps, at.at(hopsync_firmware::manifest::Key::Launch("block")));
    f
}

/// Runs a program on the RTL engine and reports like the golden engine (plus `cycles`).
pub fn run_rtl(prog: &Program, cfg: Config, sm: SmConfig) -> RunReport {
    let mut e = Engine::new(prog, cfg, sm);
    let outcome = e.run();
    e.report(&outcome)
}
