//! The `hopsync gpu` subcommands: printing and exit codes (0 ok, 1 mismatch or failure, 2 usage
//! or I/O error). `src/main.rs` only parses arguments and calls these.

use crate::gpu::pack::{collect_programs, write_batch_with, PackOptions};
use crate::gpu::replay::{replay_file_on, run_golden, timing_by_opcode, trace_files, EngineRun, ProgramReplay};
use crate::gpu::trace::import;
use hopsync_firmware::Program;
use std::path::{Path, PathBuf};

/// `hopsync gpu pack PROGRAM_OR_DIR... --out DIR [--ptx-version X.Y]`.
pub fn pack(programs: &[PathBuf], out: &Path, opts: &PackOptions) -> i32 {
    let files = collect_programs(programs);
    if files.is_empty() {
        eprintln!("error: no .ptx or .cu programs in {}", programs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
        return 2;
    }
    let entries = match write_batch_with(&files, out, opts) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let mut failed = 0;
    for e in &entries {
        match &e.result {
            Ok(m) => println!("packed {}: {} trace fields, {} threads x {} slots ({} bytes of trace)", m.program, m.fields, m.layout.threads, m.layout.slots, m.layout.bytes()),
            Err(err) => {
                failed += 1;
                println!("NOT packed {}: {err}", e.program);
            }
        }
    }
    println!("{} of {} programs packed into {} (batch.txt lists {} launches)", entries.len() - failed, entries.len(), out.display(), 2 * (entries.len() - failed));
    if failed > 0 {
        1
    } else {
        0
    }
}

/// `hopsync gpu import RESULTS_DIR [--traces DIR]`.
pub fn import_cmd(results: &Path, traces: &Path, root: &Path) -> i32 {
    let v = match import(results, traces, root) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let mut failed = 0;
    for i in &v {
        match &i.result {
            Ok((file, t)) => {
                let slots: u64 = t.trace.as_ref().map(|d| d.counts.iter().map(|&c| c as u64).sum()).unwrap_or(0);
                println!(
                    "{}: {} ({}{}; {} slots) -> {file}",
                    i.name,
                    t.status,
                    t.error.clone().unwrap_or_default(),
                    if t.plain.status != "ok" { format!("; unchanged program: {}", t.plain.error.clone().unwrap_or(t.plain.status.clone())) } else { String::new() },
                    slots
                );
            }
            Err(e) => {
                failed += 1;
                println!("{}: NOT imported: {e}", i.name);
            }
        }
    }
    if failed > 0 {
        1
    } else {
        0
    }
}

/// `hopsync gpu golden BATCH RESULTS [--list FILE]`.
pub fn golden_cmd(batch: &Path, results: &Path, mem_limit: u64) -> i32 {
    golden_list_cmd(batch, "batch.txt", results, mem_limit)
}

/// `hopsync gpu golden BATCH RESULTS --list FILE`: the launches of one batch file.
pub fn golden_list_cmd(batch: &Path, list: &str, results: &Path, mem_limit: u64) -> i32 {
    match crate::gpu::pack::run_list_golden(batch, list, results, mem_limit) {
        Ok(n) => {
            println!("ran {n} launches of {} on the golden engine; results in {}", batch.display(), results.display());
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// `hopsync gpu replay [--traces DIR] [--json REPORT] [NAME...]` on the golden engine.
pub fn replay_cmd(traces: &Path, root: &Path, json: Option<&Path>, names: &[String]) -> i32 {
    replay_cmd_on(traces, root, json, names, "golden", &run_golden)
}

/// `hopsync gpu replay --engine ENGINE ...`: `run` runs an instrumented program on the engine.
pub fn replay_cmd_on(traces: &Path, root: &Path, json: Option<&Path>, names: &[String], engine: &str, run: &dyn Fn(&Program) -> EngineRun) -> i32 {
    let files: Vec<PathBuf> =
        trace_files(traces).into_iter().filter(|p| names.is_empty() || p.file_stem().is_some_and(|s| names.iter().any(|n| n == &*s.to_string_lossy()))).collect();
    if files.is_empty() {
        eprintln!("error: no traces in {}", traces.display());
        return 2;
    }
    let reports: Vec<ProgramReplay> = files.iter().map(|f| replay_file_on(f, root, engine, run)).collect();
    for r in &reports {
        print!("{}", r.summary());
    }
    let rows = timing_by_opcode(&reports);
    if !rows.is_empty() {
        println!("clock_delta medians per opcode over all traces, silicon vs the {engine} engine ({}):", if engine == "golden" { "scheduler steps, not cycles" } else { "cycles" });
        println!("  {:<52} {:>8} {:>10} {:>9} {:>10} {:>9}", "opcode", "programs", "silicon", "samples", engine, "samples");
        for t in &rows {
            println!("  {:<52} {:>8} {:>10.1} {:>9} {:>10.1} {:>9}", t.opcode, t.programs, t.silicon_median, t.silicon_samples, t.engine_median, t.engine_samples);
        }
    }
    let bad = reports.iter().filter(|r| r.failed()).count();
    let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in &reports {
        *by.entry(r.status.as_str()).or_default() += 1;
    }
    let parts: Vec<String> = by.iter().map(|(k, v)| format!("{v} {k}")).collect();
    println!("replayed {} traces against the {engine} engine: {}", reports.len(), parts.join(", "));
    if let Some(p) = json {
        let text = serde_json::to_string_pretty(&reports).expect("report serializes");
        if let Err(e) = std::fs::write(p, text) {
            eprintln!("error: cannot write {}: {e}", p.display());
            return 2;
        }
    }
    if bad > 0 {
        1
    } else {
        0
    }
}
