//! Every firmware program is real PTX: NVIDIA's ptxas (the pip toolchain's, or `$HOPSYNC_PTXAS`)
//! assembles each program under `firmware/programs/` for its `.target` (`-arch=sm_90` /
//! `sm_90a`); a `.cu` program (one with a `//!` manifest) is checked through the PTX nvcc made of
//! it (hopsync's PTX cache). A program ptxas must reject says so in a header line,
//! `// ptxas: rejects <text ptxas prints>`, and hopsync must reject it too (an `// expect-error:`
//! line): what silicon's assembler refuses, hopsync never runs. Verdicts are cached by content
//! hash (`hopsync_firmware::cuda::Ptxas`), so only changed programs are assembled again.

use hopsync_firmware::cuda::{self, Ptxas};
use hopsync_firmware::Manifest;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const REJECTS: &str = "// ptxas: rejects";

fn programs(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            programs(&p, out);
        } else if p.extension().is_some_and(|e| e == "ptx" || e == "cu") {
            out.push(p);
        }
    }
}

/// The PTX ptxas must judge for one program, or None for a `.cu` without a manifest (the CUDA
/// source of a committed `.ptx` beside it).
fn ptx_of(path: &Path) -> Result<Option<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    if path.extension().is_some_and(|e| e == "ptx") {
        return Ok(Some(text));
    }
    if !text.lines().any(|l| l.trim_start().starts_with("//!")) {
        return Ok(None);
    }
    let man = Manifest::from_source(&text).map_err(|d| d.to_string())?;
    let abs = std::fs::canonicalize(path).map_err(|e| e.to_string())?;
    cuda::compile(&abs, &man.cuda.unwrap_or_default()).map(|(_, ptx)| Some(ptx))
}

/// Checks one program against its header; Ok(None) when there was nothing to check.
fn judge(ptxas: &Ptxas, path: &Path) -> Result<Option<()>, String> {
    let Some(ptx) = ptx_of(path)? else { return Ok(None) };
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let rejects = src.lines().find_map(|l| l.trim().strip_prefix(REJECTS).map(str::trim));
    let v = ptxas.check(&ptx, None)?;
    match (rejects, v.ok) {
        (None, true) => Ok(Some(())),
        (None, false) => Err(format!("ptxas rejects it (mark a program that must be rejected with `{REJECTS} <message>`):\n{}", v.output.trim())),
        (Some(_), true) => Err("marked `ptxas: rejects`, but ptxas assembles it".into()),
        (Some(want), false) if !v.output.contains(want) => Err(format!("ptxas rejects it, but without `{want}`:\n{}", v.output.trim())),
        (Some(_), false) if !src.contains("// expect-error:") => Err("ptxas rejects it, but hopsync is not expected to (no `// expect-error:` line)".into()),
        (Some(_), false) => Ok(Some(())),
    }
}

#[test]
fn every_firmware_program_assembles_with_ptxas_for_its_target() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("firmware/programs");
    let mut files = Vec::new();
    programs(&root, &mut files);
    let ptxas = Ptxas::find().unwrap_or_else(|e| panic!("{e}"));
    let next = AtomicUsize::new(0);
    let checked = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let Some(p) = files.get(next.fetch_add(1, Ordering::Relaxed)) else { break };
                match judge(&ptxas, p) {
                    Ok(Some(())) => {
                        checked.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(None) => {}
                    Err(e) => failures.lock().unwrap().push(format!("{}: {e}", p.strip_prefix(&root).unwrap_or(p).display())),
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    assert!(failures.is_empty(), "{} of {} programs:\n\n{}", failures.len(), files.len(), failures.join("\n\n"));
    let n = checked.into_inner();
    println!("{n} programs judged by {} ({} files)", ptxas.path.display(), files.len());
    assert!(n >= 400, "only {n} programs were checked");
}
