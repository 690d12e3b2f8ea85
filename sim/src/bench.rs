//! `hopsync bench --engine rtl`: simulated cycles per second of the RTL engine, beside the
//! golden engine on the same programs.

use crate::config::SmConfig;
use crate::engine::Engine;
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::Program;
use std::time::Instant;

/// The default programs: a 32-warp CTA mbarrier pipeline and a 16-CTA cluster ring.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("firmware/programs/bench/pipeline_32warps.ptx", include_str!("../../firmware/programs/bench/pipeline_32warps.ptx")),
    ("firmware/programs/bench/cluster16_ring.ptx", include_str!("../../firmware/programs/bench/cluster16_ring.ptx")),
];

/// One program's figures.
#[derive(Debug, Clone)]
pub struct BenchResult {
    /// Program path.
    pub program: String,
    /// Simulated cycles.
    pub cycles: u64,
    /// Cycles the engine skipped as idle (included in `cycles`).
    pub skipped: u64,
    /// Warp-instructions the RTL engine retired.
    pub instructions: u64,
    /// Unit clock edges simulated (all units).
    pub unit_edges: u64,
    /// Best RTL wall time, s.
    pub rtl_s: f64,
    /// CPU time of that run, s (Linux `/proc/thread-self/stat`, 10 ms ticks; 0 elsewhere).
    pub rtl_cpu_s: f64,
    /// Golden thread-instructions.
    pub golden_thread_instructions: u64,
    /// Best golden wall time, s.
    pub golden_s: f64,
}

impl BenchResult {
    /// One line of text.
    pub fn line(&self) -> String {
        format!(
            "{}:\n  rtl engine:    {} cycles ({} skipped idle), {} unit edges, {} warp-instructions in {:.3} s wall / {:.2} s cpu (best of reps): {:.0} cycles/s ({:.0} per cpu-s), {:.0} unit edges/s, {:.0} warp-instructions/s\n  golden engine: {} thread-instructions in {:.4} s: {:.1} M thread-instructions/s",
            self.program,
            self.cycles,
            self.skipped,
            self.unit_edges,
            self.instructions,
            self.rtl_s,
            self.rtl_cpu_s,
            self.cycles as f64 / self.rtl_s,
            if self.rtl_cpu_s > 0.0 { self.cycles as f64 / self.rtl_cpu_s } else { 0.0 },
            self.unit_edges as f64 / self.rtl_s,
            self.instructions as f64 / self.rtl_s,
            self.golden_thread_instructions,
            self.golden_s,
            self.golden_thread_instructions as f64 / self.golden_s / 1e6
        )
    }
}

/// Runs `prog` `reps` times on each engine (both must finish `ok`).
pub fn bench(prog: &Program, reps: u32) -> Result<BenchResult, String> {
    let mut r = BenchResult { program: prog.path.clone(), cycles: 0, skipped: 0, instructions: 0, unit_edges: 0, rtl_s: f64::MAX, rtl_cpu_s: 0.0, golden_thread_instructions: 0, golden_s: f64::MAX };
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let cpu = cpu_seconds();
        let mut e = Engine::new(prog, Config::default(), SmConfig::sm90());
        let outcome = e.run();
        let dt = t.elapsed().as_secs_f64();
        let dcpu = cpu_seconds() - cpu;
        let rep = e.report(&outcome);
        if rep.status != "ok" {
            return Err(rep.summary());
        }
        r.cycles = e.cycle;
        r.skipped = e.skipped;
        r.instructions = rep.instructions;
        r.unit_edges = e.unit_edges;
        if dt < r.rtl_s {
            r.rtl_s = dt;
            r.rtl_cpu_s = dcpu;
        }
        let t = Instant::now();
        let g = run_golden(prog, Config::default());
        let dt = t.elapsed().as_secs_f64();
        if g.status != "ok" {
            return Err(g.summary());
        }
        r.golden_thread_instructions = g.thread_instructions;
        r.golden_s = r.golden_s.min(dt);
    }
    Ok(r)
}

/// CPU time of this thread, s (utime + stime of `/proc/thread-self/stat`; 0 where absent).
fn cpu_seconds() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/thread-self/stat") else { return 0.0 };
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    let Some(rest) = s.rsplit_once(')').map(|x| x.1) else { return 0.0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

/// The default programs, parsed.
pub fn default_programs() -> Vec<Program> {
    PROGRAMS.iter().map(|(p, t)| Program::parse(p, t).expect("the embedded bench programs parse")).collect()
}
