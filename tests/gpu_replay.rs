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

/// Format 2: every timed instruction of a traced program (instrument.rs: `%clock64` before and
/// after each sync / async instruction) has its `clock_delta` distribution in the trace, the
/// silicon figures are plausible cycle counts, and replay sets the engine's beside them.
#[test]
fn committed_traces_carry_clocks() {
    use hopsync_cosim::gpu::instrument::FieldKind;
    use hopsync_cosim::gpu::replay::{replay_trace, timing_by_opcode};
    use hopsync_cosim::gpu::trace::read_trace;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let t = read_trace(&root.join("cosim/traces/sm90/pipeline.json")).unwrap();
    assert_eq!(t.format, hopsync_cosim::gpu::FORMAT);
    let td = t.trace.as_ref().unwrap();
    let prog = hopsync_firmware::Program::load(&root.join(&t.program)).unwrap();
    let fields = hopsync_cosim::gpu::pack::pack_with(&prog, td.layout.slots).unwrap().fields;
    let timed: std::collections::BTreeSet<u32> = fields.iter().filter(|f| f.kind == FieldKind::ClockDelta).map(|f| f.pc).collect();
    let recorded: std::collections::BTreeSet<u32> = td.clocks.iter().map(|c| c.pc).collect();
    assert_eq!(timed, recorded, "every timed instruction executed on silicon has clock samples");
    for c in &td.clocks {
        let h = c.histogram().unwrap();
        assert_eq!(h.samples(), c.samples);
        assert!(c.min >= 1 && c.max < 10_000_000, "{c:?}");
        assert!(c.median >= c.min as f64 && c.median <= c.max as f64, "{c:?}");
    }
    // No value slot is a clock slot.
    for s in td.threads().unwrap().iter().flatten() {
        let f = &fields[hopsync_cosim::gpu::instrument::slot_field(*s).unwrap() as usize];
        assert!(!f.kind.is_clock(), "{f:?}");
    }
    let r = replay_trace(&t, &root);
    assert!(!r.timing.is_empty());
    let rows = timing_by_opcode(&[r.clone()]);
    let arrive = rows.iter().find(|t| t.opcode.starts_with("mbarrier.arrive")).expect("an arrive row");
    assert!(arrive.silicon_samples > 0 && arrive.engine_samples == arrive.silicon_samples, "{arrive:?}");
}
