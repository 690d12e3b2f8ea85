//! `hopsync`: run, check and co-simulate sm_90 synchronization firmware.

use clap::{Parser, Subcommand, ValueEnum};
use hopsync_cosim::machine::{Config, UbMode};
use hopsync_cosim::report::{run_golden, RunReport};
use hopsync_firmware::Program;
use std::path::PathBuf;
use std::process::ExitCode;

mod demo;

/// The default benchmark: the demo pipeline with 2048 items.
const BENCH_PROGRAM: &str = include_str!("../firmware/programs/bench/pipeline_long.ptx");

#[derive(Parser)]
#[command(name = "hopsync", version, about = "Synthesizable model of Hopper (sm_90) async synchronization: mbarrier, named barriers, cluster barrier, TMA")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum Engine {
    /// Instruction-level golden model.
    Golden,
}

#[derive(Clone, Copy, ValueEnum)]
enum Ub {
    /// Stop at the first finding (exit 1).
    Error,
    /// Report findings and continue where possible.
    Warn,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a firmware program and report what it did.
    Run {
        /// The program (.ptx with a `//!` launch manifest).
        program: PathBuf,
        /// Engine.
        #[arg(long, value_enum, default_value = "golden")]
        engine: Engine,
        /// Randomize warp interleaving and asynchronous completion times with this seed.
        #[arg(long)]
        seed: Option<u64>,
        /// What undefined behaviour does.
        #[arg(long, value_enum, default_value = "error")]
        ub: Ub,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Scheduler step limit.
        #[arg(long, default_value_t = 200_000_000)]
        max_steps: u64,
    },
    /// Parse and validate a program only.
    Check {
        /// The program.
        program: PathBuf,
        /// Print the program back as canonical PTX.
        #[arg(long)]
        print: bool,
    },
    /// Run the built-in mbarrier producer/consumer pipeline and explain what happened.
    Demo,
    /// Print the supported-instruction table (markdown), generated from the opcode table.
    Ops,
    /// Generate a random legal program (or, with --ub, one with exactly one finding) from a seed.
    Gen {
        /// The seed (same seed, same program).
        #[arg(long)]
        seed: u64,
        /// Inject one undefined behaviour; the program names its finding in `// expect-finding:`.
        #[arg(long)]
        ub: bool,
        /// Small programs (1-4 warps, 1-4 CTAs), as the default test run uses.
        #[arg(long)]
        small: bool,
        /// Write the program here instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Measure the golden engine's speed.
    Bench {
        /// Program to run (default: the built-in 2048-item mbarrier pipeline).
        program: Option<PathBuf>,
        /// Repetitions.
        #[arg(long, default_value_t = 5)]
        reps: u32,
    },
    /// Run programs on a real sm_90 GPU and compare with the golden model (cosim/gpu/runner/README.md).
    Gpu {
        #[command(subcommand)]
        cmd: GpuCmd,
    },
}

#[derive(Subcommand)]
enum GpuCmd {
    /// Write instrumented programs and launch descriptions for the GPU runner.
    Pack {
        /// Programs, or folders searched for .ptx (bad/ skipped).
        #[arg(required = true)]
        programs: Vec<PathBuf>,
        /// Batch folder to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Turn the runner's results (run_batch.sh output) into cosim/traces/sm90/<program>.json.
    Import {
        /// Results folder.
        results: PathBuf,
        /// Where the traces go.
        #[arg(long, default_value = "cosim/traces/sm90")]
        traces: PathBuf,
    },
    /// Run a packed batch on the golden engine, writing results as the GPU runner does (no GPU needed).
    Golden {
        /// Batch folder (from `gpu pack`).
        batch: PathBuf,
        /// Results folder to write.
        results: PathBuf,
    },
    /// Replay every committed trace on the golden engine and compare.
    Replay {
        /// Only these programs (trace names).
        names: Vec<String>,
        /// Engine.
        #[arg(long, value_enum, default_value = "golden")]
        engine: Engine,
        /// Traces folder (probe/ and other subfolders are skipped).
        #[arg(long, default_value = "cosim/traces/sm90")]
        traces: PathBuf,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn load(path: &PathBuf) -> Result<Program, ExitCode> {
    Program::load(path).map_err(|d| {
        eprintln!("{d}");
        ExitCode::from(2)
    })
}

fn write_json(path: &Option<PathBuf>, r: &RunReport) -> Result<(), ExitCode> {
    if let Some(p) = path {
        let text = serde_json::to_string_pretty(r).expect("report serializes");
        std::fs::write(p, text).map_err(|e| {
            eprintln!("error: cannot write {}: {e}", p.display());
            ExitCode::from(2)
        })?;
    }
    Ok(())
}

fn status_code(r: &RunReport) -> ExitCode {
    match r.status.as_str() {
        "ok" => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(c) | Err(c) => c,
    }
}

fn run(cli: Cli) -> Result<ExitCode, ExitCode> {
    match cli.cmd {
        Cmd::Run { program, engine, seed, ub, json, max_steps } => {
            let prog = load(&program)?;
            let cfg = Config {
                seed,
                ub: match ub {
                    Ub::Error => UbMode::Error,
                    Ub::Warn => UbMode::Warn,
                },
                max_steps,
                ..Config::default()
            };
            let report = match engine {
                Engine::Golden => run_golden(&prog, cfg),
            };
            print!("{}", report.summary());
            write_json(&json, &report)?;
            Ok(status_code(&report))
        }
        Cmd::Check { program, print } => {
            let prog = load(&program)?;
            if print {
                print!("{}", hopsync_firmware::printer::print_module(&prog.module));
            } else {
                let k = &prog.module.kernel;
                println!(
                    "{}: ok: kernel `{}`, {} instructions, {} registers, grid {:?} block {:?} cluster {:?}",
                    prog.path, k.name, k.body.len(), k.regs.len(), prog.manifest.launch.grid, prog.manifest.launch.block, prog.manifest.launch.cluster
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Demo => Ok(demo::run()),
        Cmd::Gpu { cmd } => {
            use hopsync_cosim::gpu::cli;
            let root = std::path::Path::new(".");
            let code = match cmd {
                GpuCmd::Pack { programs, out } => cli::pack(&programs, &out),
                GpuCmd::Import { results, traces } => cli::import_cmd(&results, &traces, root),
                GpuCmd::Golden { batch, results } => cli::golden_cmd(&batch, &results),
                GpuCmd::Replay { names, engine: Engine::Golden, traces, json } => cli::replay_cmd(&traces, root, json.as_deref(), &names),
            };
            Ok(ExitCode::from(code as u8))
        }
        Cmd::Gen { seed, ub, small, out } => {
            use hopsync_cosim::gen::{generate, GenOptions};
            let opts = if small { GenOptions::small() } else { GenOptions::default() }.with_ub(ub);
            let g = generate(seed, &opts);
            match out {
                Some(p) => std::fs::write(&p, &g.text).map_err(|e| {
                    eprintln!("error: cannot write {}: {e}", p.display());
                    ExitCode::from(2)
                })?,
                None => print!("{}", g.text),
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Ops => {
            print!("{}", ops_table());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { program, reps } => {
            let prog = match program {
                Some(p) => load(&p)?,
                None => Program::parse("firmware/programs/bench/pipeline_long.ptx", BENCH_PROGRAM).expect("the embedded bench program parses"),
            };
            let mut best = f64::MAX;
            let mut thread_instr = 0;
            for _ in 0..reps.max(1) {
                let t = std::time::Instant::now();
                let r = run_golden(&prog, Config::default());
                let dt = t.elapsed().as_secs_f64();
                if r.status != "ok" {
                    eprintln!("{}", r.summary());
                    return Err(ExitCode::from(1));
                }
                thread_instr = r.thread_instructions;
                best = best.min(dt);
            }
            println!(
                "golden engine on {}: {} thread-instructions in {:.3} ms (best of {}): {:.1} M thread-instructions/s",
                prog.path,
                thread_instr,
                best * 1e3,
                reps,
                thread_instr as f64 / best / 1e6
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The supported-instruction table, one row per opcode-table row.
pub fn ops_table() -> String {
    use hopsync_firmware::ops::OPCODES;
    let mut s = String::from("| instruction | modifiers (one per group; `!` required) | operands | target | golden model |\n| --- | --- | --- | --- | --- |\n");
    for spec in OPCODES {
        let groups: Vec<String> = spec
            .groups
            .iter()
            .map(|g| {
                let names: Vec<&str> = g.of.iter().map(|m| m.text()).collect();
                let body = if names.len() > 6 { format!("{}, ... ({} values)", names[..4].join(" "), names.len()) } else { names.join(" ") };
                format!("{}{{{}}}", if g.req { "!" } else { "" }, body)
            })
            .collect();
        let status = if spec.min_sm > 90 {
            format!("rejected: requires sm_{}", spec.min_sm)
        } else if hopsync_cosim::exec::modelled(spec.op) {
            "executes".to_string()
        } else {
            "parsed; stops with `unsupported:`".to_string()
        };
        s.push_str(&format!(
            "| `{}` | {} | `{}` | sm_{} | {} |\n",
            spec.name,
            groups.join(" ").replace('|', "\\|"),
            spec.operands.replace('|', "\\|"),
            spec.min_sm,
            status
        ));
    }
    s
}
