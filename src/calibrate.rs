//! `hopsync calibrate`: the RTL engine's timing against silicon microbenchmarks
//! (`hopsync_sim::calib` has the logic; this is the command line).
//!
//! ```text
//! hopsync calibrate pack [--out cosim/gpu/calib_batch]   # the device batch (calibration + whole programs)
//! OUT=$OUT bash cosim/gpu/runner/calibrate_all.sh         # on the GPU: -> $OUT/calibration_results.tar.gz
//! hopsync calibrate import RESULTS       # -> cosim/traces/sm90/calibration/<program>.json, whole/whole_programs.json
//! hopsync calibrate fidelity             # -> docs/FIDELITY.md (fit set, validation set, whole programs)
//! hopsync calibrate fit [--write]        # search sm90.toml's timing keys on the fit set; --write updates it
//! ```

use clap::Subcommand;
use hopsync_sim::calib::{self, whole, Set};
use hopsync_sim::SmConfig;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum CalibCmd {
    /// Pack the device batch: every calibration program and every program of a GPU trace with clocks.
    Pack {
        /// Batch folder (travels to the device with the working tree; not committed).
        #[arg(long, default_value = "cosim/gpu/calib_batch")]
        out: PathBuf,
        /// GPU traces whose programs give the whole-program durations.
        #[arg(long, default_value = "cosim/traces/sm90")]
        traces: PathBuf,
    },
    /// Summarize a GPU results folder (calibrate_all.sh, or run_batch.sh) into calibration records.
    Import {
        /// Results folder (calibration_results/ of calibrate_all.sh, or gpu_results/ of run_batch.sh).
        results: PathBuf,
        /// Where the records go.
        #[arg(long, default_value = "cosim/traces/sm90/calibration")]
        out: PathBuf,
    },
    /// Run every recorded program on the RTL engine and write the fidelity report.
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
    /// Fit the timing configuration to the fit-set records (deterministic coordinate search).
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
        /// Write the fitted values, and each key's program and figure, into --config.
        #[arg(long)]
        write: bool,
    },
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn load(records: &Path, config: &Path, limit: u64) -> Result<(calib::Workload, SmConfig, String), ExitCode> {
    let recs = calib::read_records(records).map_err(fail)?;
    if recs.is_empty() {
        return Err(fail(format!("no calibration records in {}", records.display())));
    }
    let text = std::fs::read_to_string(config).map_err(|e| fail(format!("cannot read {}: {e}", config.display())))?;
    let sm = SmConfig::parse(&text).map_err(|e| fail(format!("{}: {e}", config.display())))?;
    let w = calib::Workload::new(recs, Path::new(".")).within(&sm, limit);
    Ok((w, sm, text))
}

fn write(path: &Path, text: &str) -> Result<(), ExitCode> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| fail(format!("cannot create {}: {e}", d.display())))?;
    }
    std::fs::write(path, text).map_err(|e| fail(format!("cannot write {}: {e}", path.display())))
}

fn pack(out: &Path, traces: &Path, limit: u64) -> ExitCode {
    match calib::pack(Path::new("."), traces, out, limit) {
        Ok((c, w)) => {
            println!("{}: {c} calibration programs (calibration/plain.txt), {w} traced programs (whole/traced.txt)", out.display());
            println!("on the device: OUT=$OUT bash cosim/gpu/runner/calibrate_all.sh {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn import(results: &Path, out: &Path) -> ExitCode {
    let imported = match calib::import(results, Path::new(".")) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    for r in &imported.records {
        let name = Path::new(&r.program).file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        let p = out.join(format!("{name}.json"));
        if let Err(c) = write(&p, &calib::record_json(r)) {
            return c;
        }
        println!("{}: {} figure(s), {} on {}", p.display(), r.figures.len(), calib::set_of(&r.program).name(), r.provenance.card());
        for f in &r.figures {
            let runs = if f.run_medians.is_empty() { String::new() } else { format!(", runs {:?}", f.run_medians) };
            println!("  {:<64} median {:>9.1} cycles ({} samples{runs})", f.name, f.median, f.samples.len());
        }
    }
    if let Some(w) = &imported.whole {
        let p = whole::path_in(out);
        if let Err(c) = write(&p, &whole::record_json(w)) {
            return c;
        }
        println!("{}: {} programs, {} CTAs", p.display(), w.programs.len(), w.programs.iter().map(|p| p.cta_cycles.iter().flatten().count()).sum::<usize>());
    }
    for (prog, why) in &imported.failed {
        eprintln!("left out {prog}: {why}");
    }
    if imported.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn fidelity(records: &Path, config: &Path, traces: &Path, out: &Path, limit: u64) -> ExitCode {
    let (w, sm, _) = match load(records, config, limit) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let whole_rec = match whole::read_record(records) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let rows = calib::fidelity(&w, &sm);
    let memo = whole::ReplayMemo::default();
    let (reports, timing) = calib::trace_timing(traces, Path::new("."), &sm, &memo);
    let whole_rows = whole_rec.as_ref().map(|r| whole::whole_fidelity(r, Path::new("."), &sm, &memo, calib::TRACE_TIMING_SKIPPED)).unwrap_or_default();
    let mut md = calib::fidelity_markdown(w.records(), &rows);
    md.push_str(&whole::whole_markdown(whole_rec.as_ref(), &whole_rows, calib::TRACE_TIMING_SKIPPED));
    md.push('\n');
    md.push_str(&calib::trace_timing_markdown(&reports, &timing));
    if let Err(c) = write(out, &md) {
        return c;
    }
    for set in [Set::Fit, Set::Validation] {
        let st = calib::set_stats(&rows, set);
        println!(
            "{}: {} figures, {} run on the RTL engine, {} within 10%, {} within 20%, max error {:.1}%, mean {:.1}%",
            set.name(),
            st.figures,
            st.compared,
            st.within_10,
            st.within_20,
            st.max * 100.0,
            st.mean * 100.0
        );
    }
    let ws = whole::whole_stats(&whole_rows);
    println!("whole programs: {} CTAs of {} programs, median error {:.1}%, 90th percentile {:.1}%", ws.ctas, ws.programs, ws.median * 100.0, ws.p90 * 100.0);
    let tw = timing.iter().filter_map(|r| r.rel_error()).filter(|e| e.abs() <= calib::TARGET).count();
    println!("per-instruction clocks of {} traces: {tw} of {} opcodes within 10%", reports.len(), timing.iter().filter(|r| r.rel_error().is_some()).count());
    println!("wrote {}", out.display());
    ExitCode::SUCCESS
}

fn fit(records: &Path, config: &Path, passes: usize, only: &[String], write_back: bool, limit: u64) -> ExitCode {
    let (w, sm, text) = match load(records, config, limit) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let params: Vec<calib::FitParam> = if only.is_empty() {
        calib::FIT_PARAMS.to_vec()
    } else {
        let mut v = Vec::new();
        for p in only {
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
    println!(
        "fit set: {} figures, {} program runs; max error {:.1}% -> {:.1}%, mean {:.1}% -> {:.1}%",
        r.figures,
        r.runs,
        r.before.0 * 100.0,
        r.after.0 * 100.0,
        r.before.1 * 100.0,
        r.after.1 * 100.0
    );
    for ((k, a, b), prov) in r.changes.iter().zip(&r.provenance) {
        let to = match &prov.figure {
            Some((p, f)) => format!("{p} \"{f}\" ({} fit-set figures depend on it)", prov.dependents),
            None => "no fit-set figure depends on it (stays assumed)".into(),
        };
        println!("  {k:<40} {a} -> {b}   {to}");
    }
    if write_back {
        let fit_records: Vec<_> = w.records().iter().filter(|r| calib::set_of(&r.program) == Set::Fit).collect();
        let mut cards: Vec<String> = fit_records.iter().map(|r| r.provenance.card()).collect();
        cards.sort();
        cards.dedup();
        match calib::apply_fit(&text, &r.changes, &r.provenance, &cards.join("; ")) {
            Ok(t) => {
                if let Err(c) = write(config, &t) {
                    return c;
                }
                println!("wrote {}", config.display());
            }
            Err(e) => return fail(e),
        }
    }
    ExitCode::SUCCESS
}

/// Runs a `calibrate` command; every program it loads must fit the memory budget `limit`
/// (`--mem-limit`).
pub fn run(cmd: CalibCmd, limit: u64) -> ExitCode {
    match cmd {
        CalibCmd::Pack { out, traces } => pack(&out, &traces, limit),
        CalibCmd::Import { results, out } => import(&results, &out),
        CalibCmd::Fidelity { records, config, traces, out } => fidelity(&records, &config, &traces, &out, limit),
        CalibCmd::Fit { records, config, passes, param, write } => fit(&records, &config, passes, &param, write, limit),
    }
}
