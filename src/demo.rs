//! `hopsync demo`: runs the built-in warp-specialized mbarrier pipeline on the golden engine and
//! explains, from the retire log, what the barriers did; then runs the same program on the RTL
//! engine (the rust-hdl units, cycle by cycle) in lockstep with the golden model, writing its
//! VCD and GTKWave save file. Needs nothing but the hopsync binary: no Verilator, no GTKWave
//! (the command to open the waves is printed, with how to install GTKWave when it is missing).

use hopsync_cosim::machine::{Config, Machine};
use hopsync_cosim::mbarrier::MbarrierState;
use hopsync_cosim::report::RunReport;
use hopsync_cosim::retire::{Retire, RetireSink, SyncEvent};
use hopsync_firmware::{Opcode, Program};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

/// The demo's PTX, embedded in the binary.
pub const SOURCE: &str = include_str!("../firmware/programs/demo/pipeline.ptx");

/// The parsed demo program.
pub fn program() -> Program {
    Program::parse("firmware/programs/demo/pipeline.ptx", SOURCE).expect("the embedded demo program parses")
}

/// Shares the retire log between the machine and the explanation.
struct Shared(Rc<RefCell<Vec<Retire>>>);
impl RetireSink for Shared {
    fn retire(&mut self, r: Retire) {
        self.0.borrow_mut().push(r);
    }
}

/// Where the demo writes its waves by default: `target/hopsync-demo/` when run from a checkout
/// (`cargo run -- demo`: the folder is git-ignored), else `hopsync-demo/` in the temp folder.
pub fn default_waves_dir() -> PathBuf {
    if Path::new("Cargo.toml").is_file() && Path::new("target").is_dir() {
        PathBuf::from("target/hopsync-demo")
    } else {
        std::env::temp_dir().join("hopsync-demo")
    }
}

/// Runs and explains the demo, writing the RTL run's waves into `waves_dir`; exit code 0 when
/// the outputs match on both engines and the lockstep run found no divergence.
pub fn run(waves_dir: &Path) -> ExitCode {
    let golden = explain_golden();
    let rtl = run_rtl(waves_dir);
    if golden && rtl {
        println!("\nTry `hopsync run firmware/programs/demo/pipeline.ptx --seed 7` for another interleaving, or\nthe programs under firmware/programs/.");
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The same program on the RTL engine in lockstep with the golden model, with waves.
fn run_rtl(dir: &Path) -> bool {
    println!("\nThe same pipeline on the RTL engine: 4 warp schedulers, a scoreboard, 32-bank shared\nmemory and the rust-hdl MbarrierUnit, clocked cycle by cycle at sm90.toml's timing, in\nlockstep with the golden model (every retired instruction compared):");
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        return false;
    }
    let vcd = dir.join("pipeline.vcd");
    let prog = program();
    let r = match hopsync_sim::waves::cosim_with_waves(&prog, Config::default(), hopsync_sim::SmConfig::sm90(), &vcd) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return false;
        }
    };
    let cycles = r.run.cycles.unwrap_or(0);
    let mhz = hopsync_sim::SmConfig::sm90().clock.mhz;
    println!(
        "  {} cycles ({:.2} us at {} MHz), {} instructions compared, {} divergences, outputs {}",
        cycles,
        cycles as f64 / mhz,
        mhz,
        r.compared,
        r.divergences.len(),
        if r.run.status == "ok" { "as expected" } else { "WRONG" }
    );
    for d in &r.divergences {
        println!("  {d}");
    }
    let save = hopsync_sim::waves::gtkw_path(&vcd);
    println!("  waves: {} (every unit port and register, each warp's pc, state and stall reason)", vcd.display());
    println!("  GTKWave save file: {}", save.display());
    println!("  open them with:  gtkwave {} {}", vcd.display(), save.display());
    if !on_path("gtkwave") {
        println!("  (gtkwave is not installed: `apt-get install -y gtkwave`; any VCD viewer opens the file)");
    }
    r.clean()
}

/// Whether `cmd` is an executable file in a folder of PATH.
fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
        .unwrap_or(false)
}

/// The golden run and its explanation; true when the outputs match.
fn explain_golden() -> bool {
    let prog = program();
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut m = Machine::new(&prog, Config::default());
    m.set_sink(Box::new(Shared(log.clone())));
    let outcome = m.run();
    let report = RunReport::from_machine(&m, "golden", &outcome);
    let names: BTreeMap<u32, String> = ["buf", "full", "empty"]
        .iter()
        .filter_map(|n| prog.module.symbol(n).map(|s| (m.symbol_address(s) as u32, n.to_string())))
        .collect();
    let name_of = |off: u32| {
        names
            .range(..=off)
            .next_back()
            .map(|(base, n)| format!("{n}[{}]", (off - base) / 8))
            .unwrap_or_else(|| format!("0x{off:x}"))
    };
    println!("hopsync demo: a warp-specialized mbarrier pipeline on the golden engine\n");
    println!("{}", prog.manifest.description.trim());
    println!();
    let log = log.borrow();
    let body = &prog.module.kernel.body;
    // Per barrier: phases completed, arrivals, and polls that found the phase incomplete.
    let mut phases: BTreeMap<u32, u64> = BTreeMap::new();
    let mut arrivals: BTreeMap<u32, u64> = BTreeMap::new();
    let mut polls_false = [0u64; 2];
    let mut polls_true = [0u64; 2];
    for r in log.iter() {
        for e in &r.sync {
            if let SyncEvent::Mbarrier { offset, old, new, .. } = e {
                let (o, n) = (MbarrierState::decode(*old), MbarrierState::decode(*new));
                if o.phase_parity != n.phase_parity {
                    *phases.entry(*offset).or_default() += 1;
                }
            }
        }
        let ins = &body[r.pc as usize];
        match ins.op {
            Opcode::MbarrierArrive => {
                if let Some(SyncEvent::Mbarrier { offset, .. }) = r.sync.first() {
                    *arrivals.entry(*offset).or_default() += r.mask.count_ones() as u64;
                }
            }
            Opcode::MbarrierTryWait => {
                let producer = r.warp == 0;
                let done = r.regs.first().map(|w| w.values[r.mask.trailing_zeros() as usize] == 1).unwrap_or(false);
                if done {
                    polls_true[!producer as usize] += 1;
                } else {
                    polls_false[!producer as usize] += 1;
                }
            }
            _ => {}
        }
    }
    println!("What happened ({} warp-instructions, {} scheduler steps):", report.instructions, report.steps);
    for (off, n) in &phases {
        println!(
            "  {:9} completed {n} phases from {} thread arrivals",
            name_of(*off),
            arrivals.get(off).copied().unwrap_or(0)
        );
    }
    println!(
        "  the producer warp polled empty[s] {} times before a stage was free again ({} polls found it free);",
        polls_false[0], polls_true[0]
    );
    println!(
        "  the consumer warps polled full[s] {} times while a stage was still being written ({} polls found it full).",
        polls_false[1], polls_true[1]
    );
    println!(
        "  Each full[s] phase needs the producer's 32 arrivals; each empty[s] phase needs the 96 consumer\n  arrivals, so a stage is never overwritten before every consumer read it.\n"
    );
    print!("{}", report.summary());
    if report.status == "ok" {
        println!("Every consumer sum matches 896 + 8*lane.");
    }
    report.status == "ok"
}
