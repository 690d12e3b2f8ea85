//! `hopsync demo`: runs the built-in warp-specialized mbarrier pipeline on the golden engine and
//! explains, from the retire log, what the barriers did.

use hopsync_cosim::machine::{Config, Machine};
use hopsync_cosim::mbarrier::MbarrierState;
use hopsync_cosim::report::RunReport;
use hopsync_cosim::retire::{Retire, RetireSink, SyncEvent};
use hopsync_firmware::{Opcode, Program};
use std::cell::RefCell;
use std::collections::BTreeMap;
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

/// Runs and explains the demo; exit code 0 when the outputs match.
pub fn run() -> ExitCode {
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
        println!("\nEvery consumer sum matches 896 + 8*lane. Try `hopsync run firmware/programs/demo/pipeline.ptx --seed 7`\nfor another interleaving, or the programs under firmware/programs/.");
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
