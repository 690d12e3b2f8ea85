//! `hopsync calibrate`: the RTL engine's timing against silicon microbenchmarks
//! (`hopsync_sim::calib` has the logic; this is the command line).
//!
//! ```text
//! hopsync gpu pack firmware/programs/calibration --out cosim/gpu/batch   # then run_batch.sh on the GPU
//! hopsync calibrate import RESULTS       # -> cosim/traces/sm90/calibration/<program>.json
//! hopsync calibrate fidelity             # -> docs/FIDELITY.md (RTL beside silicon, max error)
//! hopsync calibrate fit [--write]        # search sm90.toml's sync/latency keys; --write updates it
//! ```

use clap::Subcommand;
use hopsync_sim::calib;
use hopsync_sim::SmConfig;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum CalibCmd {
    /// Summarize a GPU results folder (run_batch.sh) into calibration records.
    Import {
        /// Results folder (gpu_results/ of run_batch.sh).
        results: PathBuf,
        /// Where the records go.
        #[arg(long, default_value = "cosim/traces/sm90/calibration")]
        out: PathBuf,
    },
    /// Run every recorded program on the RTL engine and write the fidelity table.
    Fidelity {
        /// Calibration records.
        #[arg(long, default_value = "cosim/traces/sm90/calibration")]
        records: PathBuf,
        /// RTL timing configuration.
        #[arg(long, default_value = "sim/configs/sm90.toml")]
        config: PathBuf,
        /// GPU traces whose per-instruction clocks get their own section.
        #[arg(long, default_value = "cosim/traces/sm90")]
        traces: PathBuf,
        /// Markdown to write.
        #[arg(long, default_value = "docs/FIDELITY.md")]
        out: PathBuf,
    },
    /// Fit the timing configuration to the records (deterministic coordinate search).
    Fit {
        /// Calibration records.
        #[arg(long, default_value = "cosim/traces/sm90/calibration")]
        records: PathBuf,
        /// Configuration to start from (and to rewrite with --write).
        #[arg(long, default_value = "sim/configs/sm90.toml")]
        config: PathBuf,
        /// Search passes at most.
        #[arg(long, default_value_t = 4)]
        passes: usize,
        /// Only these parameters (`section.key`; default: every fitted one).
        #[arg(long)]
        param: Vec<String>,
        /// Write the fitted values into --config.
        #[arg(long)]
        write: bool,
    },
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn load(records: &Path, config: &Path) -> Result<(calib::Workload, SmConfig, String), ExitCode> {
    let recs = calib::read_records(records).map_err(fail)?;
    if recs.is_empty() {
        return Err(fail(format!("no calibration records in {}", records.display())));
    }
    let text = std::fs::read_to_string(config).map_err(|e| fail(format!("cannot read {}: {e}", config.display())))?;
    let sm = SmConfig::parse(&text).map_err(|e| fail(format!("{}: {e}", config.display())))?;
    Ok((calib::Workload::new(recs, Path::new(".")), sm, text))
}

pub fn run(cmd: CalibCmd) -> ExitCode {
    match cmd {
        CalibCmd::Import { results, out } => {
            let recs = match calib::import(&results, Path::new(".")) {
                Ok(r) => r,
                Err(e) => return fail(e),
            };
            if let Err(e) = std::fs::create_dir_all(&out) {
                return fail(format!("cannot create {}: {e}", out.display()));
            }
            for r in &recs {
                let name = Path::new(&r.program).file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
                let p = out.join(format!("{name}.json"));
                if let Err(e) = std::fs::write(&p, calib::record_json(r)) {
                    return fail(format!("cannot write {}: {e}", p.display()));
                }
                println!("{}: {} figure(s)", p.display(), r.figures.len());
                for f in &r.figures {
                    println!("  {:<52} median {:>9.1} cycles ({} samples)", f.name, f.median, f.samples.len());
                }
            }
            ExitCode::SUCCESS
        }
        CalibCmd::Fidelity { records, config, traces, out } => {
            let (w, sm, _) = match load(&records, &config) {
                Ok(x) => x,
                Err(c) => return c,
            };
            let rows = calib::fidelity(&w, &sm);
            let mut md = calib::fidelity_markdown(w.records(), &rows);
            let (reports, timing) = calib::trace_timing(&traces, std::path::Path::new("."), &sm);
            md.push('\n');
            md.push_str(&calib::trace_timing_markdown(&reports, &timing));
            if let Err(e) = std::fs::write(&out, &md) {
                return fail(format!("cannot write {}: {e}", out.display()));
            }
            let (max, mean) = calib::error_stats(&rows);
            println!("{}: {} figures, max error {:.1}%, mean {:.1}%", out.display(), rows.len(), max * 100.0, mean * 100.0);
            let within = rows.iter().filter_map(|r| r.rel_error()).filter(|e| e.abs() <= calib::TARGET).count();
            println!("  {within} of {} figures within 10%", rows.iter().filter(|r| r.rel_error().is_some()).count());
            let tw = timing.iter().filter_map(|r| r.rel_error()).filter(|e| e.abs() <= calib::TARGET).count();
            println!("  per-instruction clocks of {} traces: {tw} of {} opcodes within 10%", reports.len(), timing.iter().filter(|r| r.rel_error().is_some()).count());
            ExitCode::SUCCESS
        }
        CalibCmd::Fit { records, config, passes, param, write } => {
            let (w, sm, text) = match load(&records, &config) {
                Ok(x) => x,
                Err(c) => return c,
            };
            let params: Vec<calib::FitParam> = if param.is_empty() {
                calib::FIT_PARAMS.to_vec()
            } else {
                let mut v = Vec::new();
                for p in &param {
                    match calib::FIT_PARAMS.iter().find(|f| f.key == p) {
                        Some(f) => v.push(*f),
                        None => return fail(format!("`{p}` is not a fitted parameter (one of: {})", calib::FIT_PARAMS.iter().map(|f| f.key).collect::<Vec<_>>().join(", "))),
                    }
                }
                v
            };
            let r = match calib::fit(&w, &sm, &params, passes) {
                Ok(r) => r,
                Err(e) => return fail(e),
            };
            println!("{} configurations evaluated; max error {:.1}% -> {:.1}%, mean {:.1}% -> {:.1}%", r.evaluations, r.before.0 * 100.0, r.after.0 * 100.0, r.before.1 * 100.0, r.after.1 * 100.0);
            for (k, a, b) in &r.changes {
                println!("  {k:<40} {a} -> {b}");
            }
            if write {
                let rec = &w.records()[0].provenance;
                let prov = format!("the {} programs of calibration/ on {} {} by `hopsync calibrate fit`", w.records().len(), rec.gpu, rec.date_utc.split('T').next().unwrap_or(""));
                match calib::apply_fit(&text, &r.changes, &prov) {
                    Ok(t) => {
                        if let Err(e) = std::fs::write(&config, t) {
                            return fail(format!("cannot write {}: {e}", config.display()));
                        }
                        println!("wrote {}", config.display());
                    }
                    Err(e) => return fail(e),
                }
            }
            ExitCode::SUCCESS
        }
    }
}
