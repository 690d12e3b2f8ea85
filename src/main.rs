//! `hopsync`: run, check and co-simulate sm_90 synchronization firmware.

use clap::{Parser, Subcommand, ValueEnum};
use hopsync_cosim::budget::{self, Footprint};
use hopsync_cosim::machine::{Config, UbMode};
use hopsync_cosim::report::{run_golden, RunReport};
use hopsync_firmware::Program;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod calibrate;
mod demo;
mod tma_layout;

/// The default benchmark: the demo pipeline with 2048 items.
const BENCH_PROGRAM: &str = include_str!("../firmware/programs/bench/pipeline_long.ptx");

#[derive(Parser)]
#[command(name = "hopsync", version, about = "Synthesizable model of Hopper (sm_90) async synchronization: mbarrier, named barriers, cluster barrier, TMA")]
struct Cli {
    /// Memory budget of a run (e.g. 8GiB, 512MiB, or bytes): a run whose estimate (from the
    /// manifest and the declarations, before anything is allocated) is larger is refused.
    #[arg(long, global = true, value_name = "SIZE", default_value = "8GiB", value_parser = budget::parse_size)]
    mem_limit: u64,
    #[command(subcommand)]
    cmd: Cmd,
}

/// What a program is loaded for, which decides its memory estimate.
#[derive(Clone, Copy)]
enum Use<'a> {
    /// A golden-engine run with its race detector (and `check`, which validates what a default
    /// run would take).
    Golden(hopsync_cosim::race::RaceMode),
    /// An SM-engine run (rtl or verilator units).
    Sm(&'a hopsync_sim::SmConfig),
    /// A lockstep run: the golden model (with its race detector) beside the SM engine.
    Cosim(&'a hopsync_sim::SmConfig, hopsync_cosim::race::RaceMode),
}

#[derive(Clone, Copy, ValueEnum)]
enum Engine {
    /// Instruction-level golden model.
    Golden,
    /// Cycle-accurate SM model clocking the RTL units (hopsync-sim); reports `cycles`.
    Rtl,
    /// The same SM model with the units' generated Verilog simulated by Verilator
    /// (hopsync-verilator); reports `cycles`.
    Verilator,
}

/// The engines `cosim` checks against the golden model.
#[derive(Clone, Copy, ValueEnum)]
enum CosimEngine {
    /// The RTL units in rust-hdl.
    Rtl,
    /// The RTL units' Verilog in Verilator.
    Verilator,
}

/// `--race`: which memory the golden model's happens-before race detector watches.
#[derive(Clone, Copy, ValueEnum)]
enum Race {
    /// Shared memory: own CTA and DSMEM (the default).
    Shared,
    /// Shared and global memory (the whole grid is one happens-before domain).
    Global,
    /// No race detection.
    Off,
}

impl Race {
    fn mode(self) -> hopsync_cosim::race::RaceMode {
        use hopsync_cosim::race::RaceMode;
        match self {
            Race::Shared => RaceMode::Shared,
            Race::Global => RaceMode::Global,
            Race::Off => RaceMode::Off,
        }
    }
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
        /// What undefined behaviour does (default: the manifest's `ub`, else error).
        #[arg(long, value_enum)]
        ub: Option<Ub>,
        /// The golden model's race detector (SharedMemoryRace, GlobalMemoryRace, ProxyRace):
        /// shared memory, shared and global memory, or off. The rtl and verilator engines run
        /// without it (cosim runs it on its golden side).
        #[arg(long, value_enum, default_value = "shared")]
        race: Race,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Step limit: golden-model steps, or cycles on the rtl and verilator engines.
        #[arg(long, default_value_t = 200_000_000)]
        max_steps: u64,
        /// With --engine rtl: write a VCD of every unit and warp here, and a GTKWave save file
        /// beside it (FILE.gtkw): `gtkwave FILE.vcd FILE.gtkw`.
        #[arg(long, value_name = "FILE.vcd")]
        waves: Option<PathBuf>,
        /// With --engine verilator: write Verilator's VCD of every unit into this folder.
        #[arg(long)]
        verilator_vcd: Option<PathBuf>,
        /// Write the run as Chrome trace-event JSON here (Perfetto, chrome://tracing): a track per
        /// warp, mbarrier and TMA unit; golden runs in steps, RTL runs in cycles.
        #[arg(long, value_name = "FILE.json")]
        timeline: Option<PathBuf>,
        /// With --engine rtl or verilator: the timing configuration, a TOML file of the form of
        /// sim/configs/sm90.toml (default: that file, built in). An architect's what-if: copy it,
        /// change a key, run with it.
        #[arg(long, value_name = "FILE.toml")]
        config: Option<PathBuf>,
    },
    /// Parse and validate a program only.
    Check {
        /// The program.
        program: PathBuf,
        /// Print the program back as canonical PTX.
        #[arg(long)]
        print: bool,
    },
    /// Write a launch-manifest skeleton for a CUDA C++ kernel: one `[[param]]` per parameter of
    /// the entry (buffers, values, tensor maps, structs by value), `"TODO: ..."` where a value
    /// cannot be inferred (the manifest parser names each until it is replaced).
    Init {
        /// The CUDA C++ file.
        program: PathBuf,
        /// The kernel, when the file has several (mangled or demangled name).
        #[arg(long)]
        kernel: Option<String>,
        /// Put the skeleton at the top of the file instead of printing it.
        #[arg(long)]
        write: bool,
        /// nvcc -arch (default sm_90a); written to the skeleton's [cuda] table.
        #[arg(long)]
        arch: Option<String>,
        /// An extra nvcc flag (repeatable; `-I` relative to the file); written to [cuda].
        #[arg(long = "flag", allow_hyphen_values = true)]
        flags: Vec<String>,
        /// Compile with CUTLASS's and CuTe's headers (the nvidia-cutlass PyPI package).
        #[arg(long)]
        cutlass: bool,
    },
    /// Run the built-in mbarrier producer/consumer pipeline and explain what happened, then run
    /// it on the RTL engine in lockstep with the golden model and write its waves.
    Demo {
        /// Where to write the RTL run's VCD and GTKWave save file (default: target/hopsync-demo
        /// in a checkout, else hopsync-demo in the temp folder).
        #[arg(long, value_name = "DIR")]
        waves_dir: Option<PathBuf>,
    },
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
        #[arg(long, conflicts_with = "large")]
        small: bool,
        /// Large programs only (16-32 warps, 8-16 CTAs).
        #[arg(long)]
        large: bool,
        /// Write the program here instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Measure the golden engine's speed.
    Bench {
        /// Program to run (default: the built-in 2048-item mbarrier pipeline; with --engine rtl the
        /// 32-warp pipeline and the 16-CTA cluster ring under firmware/programs/bench/).
        program: Option<PathBuf>,
        /// Repetitions.
        #[arg(long, default_value_t = 5)]
        reps: u32,
        /// Engine: `rtl` measures simulated cycles per second, beside the golden engine;
        /// `verilator` compares rust-hdl and Verilator on the CTA top (--reps: thousands of cycles).
        #[arg(long, value_enum, default_value = "golden")]
        engine: Engine,
        /// TMA: the RTL engine's modelled latency and bytes/cycle of copies versus size and tile
        /// shape (generated programs; prints a markdown table for docs/PERF.md).
        #[arg(long, conflicts_with_all = ["program", "engine"])]
        tma: bool,
    },
    /// Run a program on the RTL engine in lockstep with the golden model, comparing every retired
    /// instruction; stops at the first divergence.
    Cosim {
        /// The program.
        program: PathBuf,
        /// What undefined behaviour does (default: the manifest's `ub`, else error).
        #[arg(long, value_enum)]
        ub: Option<Ub>,
        /// The golden side's race detector (see `run --race`).
        #[arg(long, value_enum, default_value = "shared")]
        race: Race,
        /// Write the JSON report (the run report plus `compared` and `divergences`) here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write the RTL engine's VCD here and a GTKWave save file beside it (FILE.gtkw), opened
        /// on the divergence's window when there is one.
        #[arg(long, value_name = "FILE.vcd")]
        waves: Option<PathBuf>,
        /// Which simulation of the units is checked.
        #[arg(long, value_enum, default_value = "rtl")]
        engine: CosimEngine,
        /// Step limit: the engine's cycles (and the golden model's steps).
        #[arg(long, default_value_t = 200_000_000)]
        max_steps: u64,
        /// With --engine verilator: write Verilator's VCD of every unit into this folder.
        #[arg(long)]
        verilator_vcd: Option<PathBuf>,
        /// Write the engine's run as Chrome trace-event JSON here (see `run --timeline`).
        #[arg(long, value_name = "FILE.json")]
        timeline: Option<PathBuf>,
    },
    /// Draw where each element of a tensor map's box lands in shared memory under its swizzle,
    /// banks coloured, with the bank conflicts of reading each box row (SVG).
    TmaLayout {
        /// The program whose manifest declares the tensor map.
        program: PathBuf,
        /// The `[[tensormap]]` name.
        #[arg(long)]
        map: String,
        /// The box's start coordinates, innermost first, comma-separated (default: all 0).
        #[arg(long = "box", value_name = "COORDS", value_delimiter = ',', allow_hyphen_values = true)]
        box_coords: Option<Vec<i64>>,
        /// The shared-memory address the box is copied to (128-byte aligned; the swizzle is a
        /// function of the address).
        #[arg(long, default_value_t = 0)]
        smem_base: u64,
        /// Write the picture here.
        #[arg(long, value_name = "FILE.svg")]
        svg: PathBuf,
    },
    /// Write the RTL engine's waveforms of programs: DIR/<name>.vcd and DIR/<name>.gtkw each
    /// (default: every seed program into waves/, which regenerates the committed save files).
    Waves {
        /// Programs (default: firmware/programs/seeds/*.ptx).
        programs: Vec<PathBuf>,
        /// Output folder (the save files name the VCDs as DIR/<name>.vcd).
        #[arg(long, default_value = "waves")]
        dir: PathBuf,
    },
    /// Write the Verilog of every unit and of the CTA top (hopsync-hdl), one file per unit.
    Verilog {
        /// Output folder (generated Verilog never goes into source folders).
        #[arg(long, default_value = "target/verilog")]
        out: PathBuf,
        #[command(flatten)]
        sizes: SizeArgs,
    },
    /// Synthesize a unit or the CTA top for an FPGA (yosys), place and route where nextpnr is
    /// installed, and print LUTs, FFs, block RAM, DSP and Fmax (best of the seeds). docs/FPGA.md:
    /// `hopsync synth --all --markdown docs/FPGA.md`.
    Synth {
        /// The unit (`mbarrier_unit`, `named_barrier_unit`, `cluster_barrier_unit`, `tma_engine`,
        /// `smem_port`) or `top`.
        unit: Option<String>,
        /// Every unit and the top.
        #[arg(long, conflicts_with = "unit")]
        all: bool,
        /// ice40-up5k, ice40-hx8k, ecp5-85k or xc7 (repeatable; default: all four).
        #[arg(long = "target")]
        targets: Vec<String>,
        /// Place-and-route seeds 1..=N (0: synthesis only).
        #[arg(long, default_value_t = 5)]
        seeds: u32,
        /// Write the FPGA document (table, tools, critical paths) here.
        #[arg(long)]
        markdown: Option<PathBuf>,
        /// Working folder (Verilog, netlists, logs).
        #[arg(long, default_value = "target/fpga")]
        work: PathBuf,
        /// Synthesize again even where the working folder holds a result for the same Verilog,
        /// target, seeds and tools.
        #[arg(long)]
        no_reuse: bool,
        /// Place-and-route seeds run at once, each its own nextpnr process (default: the
        /// machine's cores; the results do not depend on it).
        #[arg(long)]
        jobs: Option<usize>,
        #[command(flatten)]
        sizes: SizeArgs,
    },
    /// Run programs on a real sm_90 GPU and compare with the golden model (cosim/gpu/runner/README.md).
    Gpu {
        #[command(subcommand)]
        cmd: GpuCmd,
    },
    /// The RTL engine's timing against silicon microbenchmarks (firmware/programs/calibration/).
    Calibrate {
        #[command(subcommand)]
        cmd: calibrate::CalibCmd,
    },
}

/// Generator sizes of `verilog` and `synth` (hopsync_hdl::verilog::Sizes).
#[derive(clap::Args)]
struct SizeArgs {
    /// log2 of the mbarrier bank's 64-bit words (6, 9, 12 or 15; default 9).
    #[arg(long)]
    mbar_words_log2: Option<usize>,
    /// log2 of the shared-memory port's 16-byte beats (6, 8, 10, 12 or 14; default 8).
    #[arg(long)]
    smem_beats_log2: Option<usize>,
    /// try_wait system suspend-time limit in cycles (default 1000).
    #[arg(long)]
    suspend_cycles: Option<u32>,
}

impl SizeArgs {
    fn get(&self) -> hopsync_hdl::verilog::Sizes {
        let d = hopsync_hdl::verilog::Sizes::default();
        hopsync_hdl::verilog::Sizes {
            mbar_words_log2: self.mbar_words_log2.unwrap_or(d.mbar_words_log2),
            smem_beats_log2: self.smem_beats_log2.unwrap_or(d.smem_beats_log2),
            suspend_cycles: self.suspend_cycles.unwrap_or(d.suspend_cycles),
        }
    }
}

#[derive(Subcommand)]
enum GpuCmd {
    /// Write instrumented programs and launch descriptions for the GPU runner.
    Pack {
        /// Programs, or folders searched for .ptx and .cu programs (bad/ skipped; a .cu without a
        /// `//!` manifest is the source of a .ptx beside it).
        #[arg(required = true)]
        programs: Vec<PathBuf>,
        /// Batch folder to write.
        #[arg(long)]
        out: PathBuf,
        /// The newest PTX ISA version the GPU's driver accepts (CUDA 13.0's driver: 9.0):
        /// programs with a newer `.version` are written with this one, checked by ptxas.
        #[arg(long, value_name = "X.Y", value_parser = parse_ptx_version)]
        ptx_version: Option<(u32, u32)>,
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
        /// The batch file of the launches to run, in the batch folder (`hopsync calibrate pack`
        /// writes plain.txt and traced.txt).
        #[arg(long, default_value = "batch.txt")]
        list: String,
    },
    /// Replay every committed trace on the golden (or RTL) engine and compare; prints the
    /// per-opcode %clock64 figures beside silicon's.
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

/// Loads a program for `usage` within the memory budget `limit`: states the run's estimate up
/// front (stderr), and refuses (exit 2) a run that would not fit, at its largest item.
fn load_within(path: &PathBuf, usage: Use<'_>, limit: u64) -> Result<Program, ExitCode> {
    let prog = load(path)?;
    let (engine, f) = match usage {
        Use::Golden(race) => ("golden", Footprint::golden_with_race(&prog, race)),
        Use::Sm(sm) => ("SM-engine", hopsync_sim::footprint(&prog, sm)),
        Use::Cosim(sm, race) => ("cosim", hopsync_sim::lockstep::footprint(&prog, sm, race)),
    };
    eprintln!("memory: the {engine} run needs about {} of its {} budget (--mem-limit)", budget::show(f.total()), budget::show(limit));
    match f.check(&prog, engine, limit) {
        Ok(()) => Ok(prog),
        Err(d) => {
            eprintln!("{d}");
            Err(ExitCode::from(2))
        }
    }
}

fn write_timeline(path: &Path, trace: &hopsync_sim::timeline::Trace) -> Result<(), ExitCode> {
    trace.write(path).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })?;
    println!("  timeline: {} ({} events; open it in https://ui.perfetto.dev or chrome://tracing)", path.display(), trace.trace_events.len());
    Ok(())
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

/// `--ub` when given, else the undefined-behaviour mode of the program's manifest.
fn ub_mode(ub: Option<Ub>, prog: &Program) -> UbMode {
    match ub {
        Some(Ub::Error) => UbMode::Error,
        Some(Ub::Warn) => UbMode::Warn,
        None => Config::of_program(prog).ub,
    }
}

fn status_code(r: &RunReport) -> ExitCode {
    match r.status.as_str() {
        "ok" => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // HOPSYNC_UNIT_SIM picks the RTL engine's unit simulation (sim/src/units.rs): refuse a typo
    // before a run silently takes the default
    if let Err(e) = hopsync_sim::units::UnitSim::from_env() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    match run(cli) {
        Ok(c) | Err(c) => c,
    }
}

fn run(cli: Cli) -> Result<ExitCode, ExitCode> {
    let limit = cli.mem_limit;
    match cli.cmd {
        Cmd::Run { program, engine, seed, ub, race, json, max_steps, waves, verilator_vcd, timeline, config } => {
            let sm = match engine {
                Engine::Golden if config.is_some() => {
                    eprintln!("error: --config needs --engine rtl or verilator (the golden model has no timing)");
                    return Err(ExitCode::from(2));
                }
                Engine::Golden => None,
                Engine::Rtl => Some(sm_config(config.as_deref())?),
                Engine::Verilator => Some(verilator_config(sm_config(config.as_deref())?, verilator_vcd)?),
            };
            let prog = load_within(&program, sm.as_ref().map_or(Use::Golden(race.mode()), Use::Sm), limit)?;
            let cfg = Config { seed, ub: ub_mode(ub, &prog), max_steps, race: race.mode(), ..Config::default() };
            if let Some(path) = &timeline {
                if waves.is_some() {
                    eprintln!("error: --timeline and --waves: one at a time (each observes every cycle)");
                    return Err(ExitCode::from(2));
                }
                // `sm` is the configuration the program was loaded (and budgeted) for.
                let (report, trace) = match sm {
                    None => hopsync_sim::timeline::run_golden(&prog, cfg),
                    Some(sm) => hopsync_sim::timeline::run_rtl(&prog, cfg, sm),
                };
                print!("{}", report.summary());
                write_timeline(path, &trace)?;
                write_json(&json, &report)?;
                return Ok(status_code(&report));
            }
            let report = match (engine, waves) {
                (Engine::Golden, None) => run_golden(&prog, cfg),
                (Engine::Golden, Some(_)) => {
                    eprintln!("error: --waves needs --engine rtl (the golden model has no cycles)");
                    return Err(ExitCode::from(2));
                }
                (Engine::Rtl, None) => hopsync_sim::run_rtl(&prog, cfg, sm.expect("an SM configuration for the rtl engine")),
                (Engine::Rtl, Some(vcd)) => hopsync_sim::waves::run_with_waves(&prog, cfg, sm.expect("an SM configuration for the rtl engine"), &vcd).map_err(|e| {
                    eprintln!("{e}");
                    ExitCode::from(2)
                })?,
                (Engine::Verilator, None) => hopsync_sim::run_rtl(&prog, cfg, sm.expect("an SM configuration for the verilator engine")),
                (Engine::Verilator, Some(_)) => {
                    eprintln!("error: --waves needs --engine rtl (with --engine verilator use --verilator-vcd DIR)");
                    return Err(ExitCode::from(2));
                }
            };
            print!("{}", report.device_output());
            print!("{}", report.summary());
            write_json(&json, &report)?;
            Ok(status_code(&report))
        }
        Cmd::Check { program, print } => {
            let prog = load_within(&program, Use::Golden(Default::default()), limit)?;
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
        Cmd::Init { program, kernel, write, arch, flags, cutlass } => init(&program, kernel.as_deref(), write, hopsync_firmware::manifest::CudaOptions { arch, flags, cutlass, ptx: None }),
        Cmd::Demo { waves_dir } => Ok(demo::run(&waves_dir.unwrap_or_else(demo::default_waves_dir))),
        Cmd::Calibrate { cmd } => Ok(calibrate::run(cmd, limit)),
        Cmd::Gpu { cmd } => {
            use hopsync_cosim::gpu::cli;
            let root = std::path::Path::new(".");
            let code = match cmd {
                GpuCmd::Pack { programs, out, ptx_version } => cli::pack(&programs, &out, &hopsync_cosim::gpu::pack::PackOptions { ptx_version, mem_limit: limit }),
                GpuCmd::Import { results, traces } => cli::import_cmd(&results, &traces, root),
                GpuCmd::Golden { batch, results, list } => cli::golden_list_cmd(&batch, &list, &results, limit),
                GpuCmd::Replay { names, engine: Engine::Golden, traces, json } => cli::replay_cmd(&traces, root, json.as_deref(), &names),
                GpuCmd::Replay { names, engine: Engine::Rtl, traces, json } => {
                    let sm = hopsync_sim::SmConfig::sm90();
                    cli::replay_cmd_on(&traces, root, json.as_deref(), &names, "rtl", &|p| hopsync_sim::calib::run_rtl_replay(p, &sm))
                }
                GpuCmd::Replay { engine: Engine::Verilator, .. } => {
                    eprintln!("error: unsupported: replay on the Verilator engine (use --engine golden or rtl)");
                    2
                }
            };
            Ok(ExitCode::from(code as u8))
        }
        Cmd::Gen { seed, ub, small, large, out } => {
            use hopsync_cosim::gen::{generate, GenOptions};
            let opts = if small {
                GenOptions::small()
            } else if large {
                GenOptions::large()
            } else {
                GenOptions::default()
            }
            .with_ub(ub);
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
        Cmd::Verilog { out, sizes } => {
            let files = hopsync_hdl::verilog::write_all(&out, &sizes.get()).map_err(|e| {
                eprintln!("error: {e}");
                ExitCode::from(2)
            })?;
            files.iter().for_each(|f| println!("{}", f.display()));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Synth { unit, all, targets, seeds, markdown, work, no_reuse, jobs, sizes } => {
            use hopsync_hdl::fpga;
            let usage = |e: String| {
                eprintln!("error: {e}");
                ExitCode::from(2)
            };
            let units = match (all, unit) {
                (true, _) => fpga::all_units().iter().map(|u| u.to_string()).collect(),
                (false, Some(u)) => vec![hopsync_hdl::verilog::unit(&u).ok_or_else(|| usage(format!("unknown unit `{u}`")))?.name.to_string()],
                (false, None) => return Err(usage("name a unit, `top`, or --all".into())),
            };
            let targets = if targets.is_empty() { fpga::TARGETS.to_vec() } else { targets.iter().map(|t| fpga::Target::parse(t)).collect::<Result<_, _>>().map_err(usage)? };
            let jobs = match jobs {
                Some(0) => return Err(usage("--jobs must be at least 1".into())),
                Some(n) => n,
                None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            };
            let opts = fpga::Options { sizes: sizes.get(), seeds, workdir: work, reuse: !no_reuse, jobs };
            opts.sizes.check().map_err(usage)?;
            let command: Vec<String> = std::env::args().skip(1).collect();
            fpga::cli(&units, &targets, &opts, markdown.as_deref(), &format!("hopsync {}", command.join(" "))).map_err(|e| {
                eprintln!("error: {e}");
                ExitCode::from(1)
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { tma: true, .. } => {
            let sm = hopsync_sim::SmConfig::sm90();
            let rs = hopsync_sim::bench::tma_bench(&sm, hopsync_sim::bench::tma_cases()).map_err(|e| {
                eprintln!("{e}");
                ExitCode::from(1)
            })?;
            println!("TMA copies on the RTL engine (sim/configs/sm90.toml; latency = issue to the last complete-tx applied, or a store's last write acknowledged):\n");
            println!("| case | copy | bytes landed | latency (cycles) | bytes/cycle |");
            println!("| --- | --- | --- | --- | --- |");
            for r in &rs {
                println!("{}", r.row());
            }
            tma_bench_targets(&rs);
            tma_bench_silicon(&sm);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { program, reps, engine: Engine::Rtl, .. } => {
            let progs = match program {
                Some(p) => vec![load_within(&p, Use::Sm(&hopsync_sim::SmConfig::sm90()), limit)?],
                None => hopsync_sim::bench::default_programs(),
            };
            for prog in &progs {
                match hopsync_sim::bench::bench(prog, reps) {
                    Ok(r) => println!("{}", r.line()),
                    Err(e) => {
                        eprintln!("{e}");
                        return Err(ExitCode::from(1));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Cosim { program, ub, race, json, waves, engine, verilator_vcd, max_steps, timeline } => {
            let sm = match engine {
                CosimEngine::Rtl => hopsync_sim::SmConfig::sm90(),
                CosimEngine::Verilator => verilator_config(hopsync_sim::SmConfig::sm90(), verilator_vcd)?,
            };
            let prog = load_within(&program, Use::Cosim(&sm, race.mode()), limit)?;
            let cfg = Config { ub: ub_mode(ub, &prog), max_steps, race: race.mode(), ..Config::default() };
            let r = match (&waves, &timeline) {
                (Some(_), Some(_)) => {
                    eprintln!("error: --timeline and --waves: one at a time (each observes every cycle)");
                    return Err(ExitCode::from(2));
                }
                (None, Some(path)) => {
                    let (r, trace) = hopsync_sim::timeline::cosim(&prog, cfg, sm);
                    write_timeline(path, &trace)?;
                    r
                }
                (None, None) => hopsync_sim::lockstep::run_cosim(&prog, cfg, sm),
                (Some(_), None) if matches!(engine, CosimEngine::Verilator) => {
                    eprintln!("error: --waves needs --engine rtl (with --engine verilator use --verilator-vcd DIR)");
                    return Err(ExitCode::from(2));
                }
                (Some(vcd), None) => hopsync_sim::waves::cosim_with_waves(&prog, cfg, sm, vcd).map_err(|e| {
                    eprintln!("{e}");
                    ExitCode::from(2)
                })?,
            };
            print!("{}", r.run.device_output());
            print!("{}{}", r.run.summary(), r.summary());
            if let Some(p) = &json {
                std::fs::write(p, serde_json::to_string_pretty(&r).expect("report serializes")).map_err(|e| {
                    eprintln!("error: cannot write {}: {e}", p.display());
                    ExitCode::from(2)
                })?;
            }
            Ok(if r.clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Cmd::TmaLayout { program, map, box_coords, smem_base, svg } => {
            let prog = load_within(&program, Use::Golden(Default::default()), limit)?;
            let l = tma_layout::for_program(&prog, &map, box_coords.as_deref(), smem_base).map_err(|e| {
                eprintln!("{e}");
                ExitCode::from(2)
            })?;
            std::fs::write(&svg, tma_layout::svg(&l)).map_err(|e| {
                eprintln!("error: cannot write {}: {e}", svg.display());
                ExitCode::from(2)
            })?;
            print!("{}", tma_layout::summary(&l));
            println!("  picture: {}", svg.display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Waves { programs, dir } => {
            let programs = if programs.is_empty() {
                let mut v: Vec<PathBuf> = std::fs::read_dir("firmware/programs/seeds")
                    .map_err(|e| {
                        eprintln!("error: cannot list firmware/programs/seeds (run from the repository root or name programs): {e}");
                        ExitCode::from(2)
                    })?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
                    .collect();
                v.sort();
                v
            } else {
                programs
            };
            let sm = hopsync_sim::SmConfig::sm90();
            let progs = programs.iter().map(|p| load_within(p, Use::Sm(&sm), limit)).collect::<Result<Vec<_>, _>>()?;
            let files = hopsync_sim::waves::write_for_programs(&progs, &dir, &hopsync_sim::SmConfig::sm90()).map_err(|e| {
                eprintln!("{e}");
                ExitCode::from(2)
            })?;
            files.iter().for_each(|f| println!("{}", f.display()));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { program, reps, engine: Engine::Verilator, .. } => {
            if program.is_some() {
                eprintln!("error: `bench --engine verilator` runs the CTA top on the lockstep stimulus; it takes no program");
                return Err(ExitCode::from(2));
            }
            verilator_bench(reps)
        }
        Cmd::Bench { program, reps, engine: Engine::Golden, .. } => {
            let prog = match program {
                Some(p) => load_within(&p, Use::Golden(Default::default()), limit)?,
                None => Program::parse("firmware/programs/bench/pipeline_long.ptx", BENCH_PROGRAM).expect("the embedded bench program parses"),
            };
            // With the race detector (the default) and without it: its cost (docs/PERF.md).
            let mut best = [f64::MAX; 2];
            let mut thread_instr = 0;
            for _ in 0..reps.max(1) {
                for (k, race) in [hopsync_cosim::race::RaceMode::Shared, hopsync_cosim::race::RaceMode::Off].into_iter().enumerate() {
                    let t = std::time::Instant::now();
                    let r = run_golden(&prog, Config { race, ..Config::default() });
                    let dt = t.elapsed().as_secs_f64();
                    if r.status != "ok" {
                        eprintln!("{}", r.summary());
                        return Err(ExitCode::from(1));
                    }
                    thread_instr = r.thread_instructions;
                    best[k] = best[k].min(dt);
                }
            }
            println!(
                "golden engine on {}: {} thread-instructions in {:.3} ms (best of {}): {:.1} M thread-instructions/s",
                prog.path,
                thread_instr,
                best[0] * 1e3,
                reps,
                thread_instr as f64 / best[0] / 1e6
            );
            println!(
                "  without the race detector (--race off): {:.3} ms, {:.1} M thread-instructions/s; the detector costs {:.2}x",
                best[1] * 1e3,
                thread_instr as f64 / best[1] / 1e6,
                best[0] / best[1]
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `9.0` as (9, 0).
fn parse_ptx_version(s: &str) -> Result<(u32, u32), String> {
    let (a, b) = s.split_once('.').ok_or_else(|| format!("`{s}` is not a PTX ISA version MAJOR.MINOR"))?;
    Ok((a.parse().map_err(|_| format!("`{s}`: bad major version"))?, b.parse().map_err(|_| format!("`{s}`: bad minor version"))?))
}

/// `hopsync init`: prints the skeleton, or puts it at the top of the file (which must not have a
/// manifest yet).
fn init(program: &Path, kernel: Option<&str>, write: bool, opts: hopsync_firmware::manifest::CudaOptions) -> Result<ExitCode, ExitCode> {
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(2)
    };
    if program.extension().is_none_or(|e| e != "cu") {
        return Err(fail(format!("{}: `hopsync init` takes a CUDA C++ file (.cu)", program.display())));
    }
    let src = std::fs::read_to_string(program).map_err(|e| fail(format!("cannot read {}: {e}", program.display())))?;
    if write && src.lines().any(|l| l.trim_start().starts_with("//!")) {
        return Err(fail(format!("{} already has a `//!` manifest; remove it first or print the skeleton without --write", program.display())));
    }
    // the file's own `[cuda]` options (`cutlass = true`, flags), with the command line's added
    let file = hopsync_firmware::manifest::cuda_options_of(&src).map_err(|e| fail(format!("{}: {e}", program.display())))?.unwrap_or_default();
    let opts = hopsync_firmware::manifest::CudaOptions {
        arch: opts.arch.or(file.arch),
        flags: file.flags.into_iter().chain(opts.flags).collect(),
        cutlass: opts.cutlass || file.cutlass,
        ptx: None,
    };
    let text = hopsync_firmware::init::skeleton(program, &opts, kernel).map_err(|d| {
        eprintln!("{d}");
        ExitCode::from(2)
    })?;
    if write {
        std::fs::write(program, format!("{text}{src}")).map_err(|e| fail(format!("cannot write {}: {e}", program.display())))?;
        eprintln!("wrote the manifest skeleton into {}; replace each \"TODO: ...\", then `hopsync run {}`", program.display(), program.display());
    } else {
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The timing configuration of `--config FILE` (sim/configs/sm90.toml's form), or the built-in one.
fn sm_config(path: Option<&std::path::Path>) -> Result<hopsync_sim::SmConfig, ExitCode> {
    let Some(path) = path else { return Ok(hopsync_sim::SmConfig::sm90()) };
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("error: cannot read {}: {e}", path.display());
        ExitCode::from(2)
    })?;
    hopsync_sim::SmConfig::parse(&text).map_err(|e| {
        eprintln!("error: {}: {e}", path.display());
        ExitCode::from(2)
    })
}

/// The SM configuration `base` with its units on Verilator (`--engine verilator`).
#[cfg(feature = "verilator")]
fn verilator_config(base: hopsync_sim::SmConfig, vcd: Option<PathBuf>) -> Result<hopsync_sim::SmConfig, ExitCode> {
    hopsync_verilator::engine::VerilatorBackend::configure(base, vcd).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(1)
    })
}

/// Built without the `verilator` feature: `--engine verilator` is not available.
#[cfg(not(feature = "verilator"))]
fn verilator_config(_base: hopsync_sim::SmConfig, _vcd: Option<PathBuf>) -> Result<hopsync_sim::SmConfig, ExitCode> {
    eprintln!("error: unsupported: --engine verilator: this hopsync was built without the `verilator` feature; install verilator g++ make (Debian: `apt-get install -y verilator g++ make`; scripts/test does) and rebuild with the default features");
    Err(ExitCode::from(1))
}

/// `hopsync bench --engine verilator`: the rust-hdl simulation and the Verilator simulation of
/// the CTA top on the same recorded lockstep stimulus, cycles per second, side by side
/// (docs/PERF.md "rust-hdl vs Verilator"); `--reps` is thousands of cycles.
#[cfg(feature = "verilator")]
fn verilator_bench(kcycles: u32) -> Result<ExitCode, ExitCode> {
    use hopsync_verilator::lockstep::{bench_unit, run_unit};
    hopsync_verilator::available().map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(1)
    })?;
    let cycles = kcycles.max(1) as u64 * 1000;
    println!(
        "{} ({} build; Verilator models: verilator --cc -O3, C++ -O2, tracing off; sizes {})",
        hopsync_verilator::VERILATOR_VERSION,
        if cfg!(debug_assertions) { "dev" } else { "release" },
        hopsync_verilator::MODEL_SIZES
    );
    println!("| unit | cycles | rust-hdl (cycles/s) | generated (cycles/s) | Verilator (cycles/s) | Verilator / rust-hdl | Verilator / generated |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for u in ["cta_top", "mbarrier_unit"] {
        // the two simulations agree on this stimulus (a short lockstep check first)
        run_unit(u, cycles.min(2_000), 0xBE4C).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(1)
        })?;
        let (n, tr, tv, tg) = bench_unit(u, cycles, 0xBE4C).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(1)
        })?;
        // the generated straight-line model (hopsync-hdl-fast), where the unit has one
        let (g, vg) = match tg {
            Some(tg) => (format!("{:.0}", n as f64 / tg), format!("{:.2}x", tg / tv)),
            None => ("-".into(), "-".into()),
        };
        println!("| {u} | {n} | {:.0} | {g} | {:.0} | {:.0}x | {vg} |", n as f64 / tr, n as f64 / tv, tr / tv);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "verilator"))]
fn verilator_bench(_kcycles: u32) -> Result<ExitCode, ExitCode> {
    verilator_config(hopsync_sim::SmConfig::sm90(), None).map(|_| ExitCode::SUCCESS)
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

/// The silicon records `hopsync bench --tma` compares with (run from the repository root).
const TMA_RECORDS: &str = "cosim/traces/sm90/calibration";

/// The TMA calibration programs whose figures `hopsync bench --tma` puts beside the RTL engine's:
/// copies by size, multicast, stores and reductions, tiles by swizzle.
const TMA_SILICON_PROGRAMS: &[&str] = &["bulk_copy.ptx", "bulk_multicast.ptx", "bulk_store.ptx", "tensor_swizzle.ptx", "tensor_tiles.ptx", "tensor_store.ptx"];

/// Issue 15's bandwidth targets, from the bench cases `rs`: a 128 KiB bulk copy at >= 64
/// B/cycle, a 16 KiB multicast to 4 CTAs within 1.3x of one copy, and the unswizzled /
/// 128B-swizzled ratio of an 8 KiB tile of 128-byte rows beside silicon's (the records'
/// `tensor_swizzle.ptx` pair).
fn tma_bench_targets(rs: &[hopsync_sim::bench::TmaResult]) {
    let get = |n: &str| rs.iter().find(|r| r.case.name == n);
    let recs = hopsync_sim::calib::read_records(Path::new(TMA_RECORDS)).unwrap_or_default();
    let silicon = |prog: &str, fig: &str| recs.iter().filter(|r| r.program.ends_with(prog)).flat_map(|r| r.figures.iter().map(move |f| (r, f))).find(|(_, f)| f.name == fig).map(|(r, f)| (f.median, r.provenance.card()));
    println!("\nTargets (issue 15 section 2):\n");
    if let Some(r) = get("bulk_131072") {
        let met = if r.bytes_per_cycle() >= 64.0 { "met" } else { "not met" };
        println!("- 128 KiB bulk copy: {:.1} B/cycle (target >= 64: {met}; silicon moves 128 KiB in about 1,700 cycles, ~77 B/cycle)", r.bytes_per_cycle());
    }
    if let (Some(one), Some(mc)) = (get("bulk_16384"), get("bulk_16384_mc4")) {
        let x = mc.latency as f64 / one.latency.max(1) as f64;
        let met = if x <= 1.3 { "met" } else { "not met" };
        let si = match (silicon("bulk_multicast.ptx", "bulk multicast 16 KiB to 4 CTAs"), silicon("bulk_copy.ptx", "bulk copy 16 KiB")) {
            (Some((m, card)), Some((o, _))) => format!("silicon {m:.0} / {o:.0} = {:.2}x ({card})", m / o),
            _ => format!("no silicon record in {TMA_RECORDS}"),
        };
        println!("- 16 KiB multicast to 4 CTAs / one copy: {} / {} = {x:.2}x (target <= 1.3x: {met}; {si})", mc.latency, one.latency);
    }
    if let (Some(none), Some(sw)) = (get("tile_32x64"), get("tile_32x64_128B")) {
        let x = none.latency as f64 / sw.latency.max(1) as f64;
        let none_fig = "tile 32x64 int32 (8192 B, 128 B rows), swizzle none";
        let sw_fig = "tile 32x64 int32 (8192 B, 128 B rows), swizzle 128B";
        let si = match (silicon("tensor_swizzle.ptx", none_fig), silicon("tensor_swizzle.ptx", sw_fig)) {
            (Some((a, card)), Some((b, _))) => format!("silicon {a:.0} / {b:.0} = {:.2}x ({card})", a / b),
            _ => format!("no silicon record in {TMA_RECORDS}"),
        };
        println!("- 8 KiB tile of 128-byte rows, unswizzled / 128B-swizzled: {} / {} = {x:.2}x ({si})", none.latency, sw.latency);
    }
}

/// The TMA calibration figures ([`TMA_SILICON_PROGRAMS`]) on the RTL engine beside silicon's
/// records (their programs run as `hopsync calibrate fidelity` runs them).
fn tma_bench_silicon(sm: &hopsync_sim::SmConfig) {
    use hopsync_sim::calib;
    let recs = match calib::read_records(Path::new(TMA_RECORDS)) {
        Ok(r) => r,
        Err(e) => {
            println!("\n(no silicon table: {e}; run from the repository root)");
            return;
        }
    };
    let recs: Vec<_> = recs.into_iter().filter(|r| TMA_SILICON_PROGRAMS.iter().any(|p| r.program.ends_with(&format!("/{p}")))).collect();
    if recs.is_empty() {
        println!("\n(no silicon table: no TMA records in {TMA_RECORDS}; run from the repository root)");
        return;
    }
    let rows = calib::fidelity::fidelity(&calib::Workload::new(recs, Path::new(".")), sm);
    println!("\nTMA calibration figures, silicon beside the RTL engine ({TMA_RECORDS}; each figure as the program measures it, clock reads included):\n");
    println!("| program | figure | card | silicon (cycles) | RTL (cycles) | RTL / silicon |");
    println!("| --- | --- | --- | ---: | ---: | ---: |");
    for r in &rows {
        let (rtl, x) = match &r.rtl {
            Ok(v) => (format!("{v:.1}"), format!("{:.2}x", v / r.silicon.max(1.0))),
            Err(e) => (e.clone(), "-".into()),
        };
        let prog = r.program.rsplit('/').next().unwrap_or(&r.program);
        println!("| `{prog}` | {} | {} | {:.1} | {rtl} | {x} |", r.figure, r.card, r.silicon);
    }
}
