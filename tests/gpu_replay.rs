//! The committed GPU traces (`cosim/traces/sm90/*.json`, recorded on an sm_90 GPU by
//! `cosim/gpu/runner/run_batch.sh` and `hopsync gpu import`) replay on the golden engine with no
//! unexpected mismatch. A trace whose program changed since it was recorded is *stale*: it is
//! listed here but does not fail this test (re-recording needs a GPU; `hopsync gpu replay` exits 1
//! on it). Set HOPSYNC_STRICT_TRACES=1 to fail on stale traces too.

use hopsync_cosim::gpu::replay::{replay_file, trace_files};
use std::path::PathBuf;

#[test]
fn committed_traces_replay_green() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let files = trace_files(&root.join("cosim/traces/sm90"));
    let strict = std::env::var("HOPSYNC_STRICT_TRACES").is_ok_and(|v| v == "1");
    let mut failed = Vec::new();
    let mut stale = Vec::new();
    for f in &files {
        let r = replay_file(f, &root);
        print!("{}", r.summary());
        match r.status.as_str() {
            "equal" | "expected-mismatches" => {}
            "stale" => stale.push(r.name.clone()),
            _ => failed.push(format!("{}: {}", r.name, r.status)),
        }
    }
    if !stale.is_empty() {
        eprintln!("warning: stale traces (program changed since the GPU run; re-run cosim/gpu/runner/run_batch.sh): {}", stale.join(", "));
        if strict {
            failed.extend(stale.iter().map(|s| format!("{s}: stale")));
        }
    }
    assert!(failed.is_empty(), "traces with unexpected results: {}", failed.join("; "));
}
