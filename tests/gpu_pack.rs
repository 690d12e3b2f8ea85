//! `hopsync gpu pack`: the instrumented copy of every program parses, runs on the golden engine
//! with the outputs of the original, and fits its trace; the batch's launch descriptions agree
//! with the manifests (checked by running the batch on the golden engine in the runner's format);
//! import + replay of such golden "GPU" results are equal; a changed program makes its trace
//! stale; a changed slot is a mismatch naming the instruction.

use hopsync_cosim::budget::DEFAULT_MEM_LIMIT;
use hopsync_cosim::gpu::instrument::{slot_field, slot_value, FieldKind};
use hopsync_cosim::gpu::pack::{collect_programs, launch_description, pack, parse_launch_description, LaunchParam, run_batch_golden, write_batch};
use hopsync_cosim::gpu::replay::{classify, describe_token_hi, replay_file, replay_trace};
use hopsync_cosim::gpu::trace::{compact_number_arrays, import, read_trace, to_json, TraceData};
use hopsync_cosim::gpu::TRACE_BUFFER;
use hopsync_cosim::machine::{Config, Machine, Outcome};
use hopsync_firmware::Program;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopsync_gpu_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The `.ptx` programs (the `.cu` clients are packed by tests/clients.rs).
fn good_programs() -> Vec<PathBuf> {
    collect_programs(&[root().join("firmware/programs")]).into_iter().filter(|p| p.extension().is_some_and(|x| x == "ptx")).collect()
}

#[test]
fn pack_round_trip_every_program() {
    let mut checked = 0;
    for f in good_programs() {
        let prog = Program::load(&f).unwrap_or_else(|d| panic!("{d}"));
        let p = pack(&prog, None).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        // It is a program of its own: manifest with the trace buffer, parameter last.
        let again = Program::parse("x.ptx", &p.source).unwrap_or_else(|d| panic!("{}: {d}", f.display()));
        assert_eq!(again.module, p.program.module);
        assert_eq!(p.program.manifest.params.last().unwrap().name, TRACE_BUFFER);
        let mut a = Machine::new(&prog, Config::default());
        let oa = a.run();
        let mut b = Machine::new(&p.program, Config::default());
        let ob = b.run();
        assert_eq!(std::mem::discriminant(&oa), std::mem::discriminant(&ob), "{}: outcome {oa:?} vs instrumented {ob:?}", f.display());
        // Timing buffers (%clock64 samples) change with the added trace code by nature.
        for buf in prog.manifest.buffers.iter().filter(|b| b.output && !b.timing) {
            assert_eq!(a.buffer(&buf.name), b.buffer(&buf.name), "{}: output `{}` changes under instrumentation", f.display(), buf.name);
        }
        let (counts, slots) = p.layout.decode(b.buffer(TRACE_BUFFER).unwrap());
        assert!(counts.iter().all(|&c| c <= p.layout.slots), "{}: trace overflow on the golden engine", f.display());
        if oa == Outcome::Completed && !p.fields.is_empty() {
            assert!(counts.iter().any(|&c| c > 0), "{}: {} fields but no slot written", f.display(), p.fields.len());
        }
        for (t, s) in slots.iter().enumerate() {
            for v in s {
                let fid = slot_field(*v).unwrap_or_else(|| panic!("{}: thread {t}: empty slot", f.display()));
                assert!((fid as usize) < p.fields.len());
                assert_eq!(v >> 32 & 0xffff, 0);
            }
        }
        checked += 1;
    }
    assert!(checked > 0);
}

#[test]
fn plain_arrive_tokens_store_only_the_high_half() {
    let prog = Program::load(&root().join("firmware/programs/demo/pipeline.ptx")).unwrap();
    let p = pack(&prog, None).unwrap();
    let kinds: Vec<FieldKind> = p.fields.iter().map(|f| f.kind).collect();
    assert!(kinds.contains(&FieldKind::TokenHi) && !kinds.contains(&FieldKind::TokenLo));
    assert!(p.source.contains("mov.b64 {%__hs_v, %__hs_h}"));
    let mut m = Machine::new(&p.program, Config::default());
    assert_eq!(m.run(), Outcome::Completed);
    let (_, slots) = p.layout.decode(m.buffer(TRACE_BUFFER).unwrap());
    let mut waits = 0;
    for s in &slots {
        for v in s {
            let f = &p.fields[slot_field(*v).unwrap() as usize];
            if f.kind == FieldKind::WaitComplete {
                // Polling runs collapse: only the final `true` of each run is left.
                assert_eq!(slot_value(*v), 1);
                waits += 1;
            }
        }
    }
    assert!(waits > 0);
}

#[test]
fn launch_descriptions_agree_with_manifests_and_golden_results_replay_equal() {
    let dir = tmp("batch");
    let progs: Vec<PathBuf> = good_programs().into_iter().filter(|p| !p.to_string_lossy().contains("/bench/")).collect();
    // Tests run in the repository root: pack records the paths relative to it.
    let entries = write_batch(&progs, &dir.join("batch"), DEFAULT_MEM_LIMIT).unwrap();
    assert!(entries.iter().all(|e| !e.program.starts_with('/')), "{:?}", entries.iter().map(|e| &e.program).collect::<Vec<_>>());
    assert!(entries.iter().all(|e| e.result.is_ok()), "{:?}", entries.iter().filter(|e| e.result.is_err()).map(|e| &e.result).collect::<Vec<_>>());
    // Every description parses; buffers of zeros are not in the data file.
    for e in &entries {
        let m = e.result.as_ref().unwrap();
        let text = std::fs::read_to_string(dir.join("batch").join(format!("{}.launch", m.traced_launch))).unwrap();
        let d = parse_launch_description(&text).unwrap();
        let trace = d.buffers.iter().find(|b| b.0 == TRACE_BUFFER).unwrap();
        assert_eq!((trace.1, trace.2), (m.layout.bytes(), None));
    }
    let n = run_batch_golden(&dir.join("batch"), &dir.join("results"), DEFAULT_MEM_LIMIT).unwrap();
    assert_eq!(n, 2 * entries.len());
    let imported = import(&dir.join("results"), &dir.join("traces"), &root()).unwrap();
    for i in &imported {
        let (file, _) = i.result.as_ref().unwrap_or_else(|e| panic!("{}: {e}", i.name));
        let r = replay_file(Path::new(file), &root());
        assert_eq!(r.status, "equal", "{}", r.summary());
    }
}

/// A one-program repository in a temporary folder, traced on the golden engine.
fn golden_traced(name: &str) -> (PathBuf, PathBuf) {
    let dir = tmp(name);
    let src = std::fs::read_to_string(root().join("firmware/programs/demo/pipeline.ptx")).unwrap();
    let prog = dir.join("pipeline.ptx");
    std::fs::write(&prog, src).unwrap();
    write_batch(std::slice::from_ref(&prog), &dir.join("batch"), DEFAULT_MEM_LIMIT).unwrap();
    run_batch_golden(&dir.join("batch"), &dir.join("results"), DEFAULT_MEM_LIMIT).unwrap();
    let v = import(&dir.join("results"), &dir.join("traces"), Path::new("/")).unwrap();
    let file = PathBuf::from(&v[0].result.as_ref().unwrap().0);
    (prog, file)
}

#[test]
fn stale_trace_is_reported() {
    let (prog, file) = golden_traced("stale");
    let r = replay_file(&file, Path::new("/"));
    assert_eq!(r.status, "equal", "{}", r.summary());
    assert!(r.slots_compared > 0);
    let mut src = std::fs::read_to_string(&prog).unwrap();
    src.push_str("// an edit after the trace was recorded\n");
    std::fs::write(&prog, src).unwrap();
    let r = replay_file(&file, Path::new("/"));
    assert_eq!(r.status, "stale");
    assert!(r.detail.as_deref().unwrap().contains("stale trace"), "{:?}", r.detail);
    assert!(r.failed());
}

#[test]
fn changed_slot_and_output_are_mismatches_naming_the_instruction() {
    let (_, file) = golden_traced("mismatch");
    let mut t = read_trace(&file).unwrap();
    // JSON round trip.
    assert_eq!(serde_json::from_str::<hopsync_cosim::gpu::trace::TraceFile>(&to_json(&t)).unwrap(), t);
    let prog = Program::load(Path::new(&t.program)).unwrap();
    let fields = hopsync_cosim::gpu::pack::pack_with(&prog, t.trace.as_ref().unwrap().layout.slots).unwrap().fields;
    let kind = |v: u64| fields[slot_field(v).unwrap() as usize].kind;
    let td = t.trace.as_mut().unwrap();
    let mut threads = td.threads().unwrap();
    // Consumers: thread 40's first wait answer flips, thread 41's first token's parity flips,
    // thread 42's first token changes in its pending bits.
    let k_wait = threads[40].iter().position(|v| kind(*v) == FieldKind::WaitComplete).unwrap();
    threads[40][k_wait] ^= 1;
    let k_tok = threads[41].iter().position(|v| kind(*v) == FieldKind::TokenHi).unwrap();
    threads[41][k_tok] ^= 0x8000_0000;
    let k_tok = threads[42].iter().position(|v| kind(*v) == FieldKind::TokenHi).unwrap();
    threads[42][k_tok] ^= 0x0000_1000;
    t.trace = Some(TraceData::new(td.layout, td.counts.clone(), &threads, td.clocks.clone()));
    let out = t.outputs.get_mut("out").unwrap();
    out.replace_range(0..2, "ff");
    let r = replay_trace(&t, Path::new("/"));
    assert_eq!(r.status, "mismatch", "{}", r.summary());
    for c in ["wait-result", "token-parity", "output"] {
        assert_eq!(r.classes.get(c).map(|c| c.count), Some(1), "{c}: {}", r.summary());
    }
    assert!(r.classes.contains_key("token-encoding") || r.classes.contains_key("token-order"), "{}", r.summary());
    let m = r.mismatches.iter().find(|m| m.class == "wait-result").unwrap();
    assert_eq!(m.thread, Some(40));
    assert!(m.instr.as_deref().unwrap().starts_with("mbarrier.try_wait"), "{m:?}");
    assert!(m.line.unwrap() > 0 && m.pc.is_some());
    assert!(r.summary().contains("mbarrier.try_wait"));
    // A missing slot is a sequence mismatch.
    let mut t2 = read_trace(&file).unwrap();
    let td = t2.trace.as_mut().unwrap();
    let mut threads = td.threads().unwrap();
    threads[50].pop();
    t2.trace = Some(TraceData::new(td.layout, td.counts.clone(), &threads, td.clocks.clone()));
    let r = replay_trace(&t2, Path::new("/"));
    assert_eq!(r.classes.get("sequence").map(|c| c.count), Some(1), "{}", r.summary());
}

#[test]
fn interleaving_dependent_programs_compare_outputs_only() {
    let (_, file) = golden_traced("interleaving");
    let mut t = read_trace(&file).unwrap();
    t.interleaving_dependent = true;
    let td = t.trace.as_mut().unwrap();
    let mut threads = td.threads().unwrap();
    threads[40][0] ^= 0x8000_0000;
    t.trace = Some(TraceData::new(td.layout, td.counts.clone(), &threads, td.clocks.clone()));
    let r = replay_trace(&t, Path::new("/"));
    assert_eq!(r.status, "equal", "{}", r.summary());
    assert_eq!(r.slots_compared, 0);
    assert!(r.summary().contains("interleaving_dependent"));
}

#[test]
fn token_classes() {
    // Parity differs: never expected.
    assert_eq!(classify(FieldKind::TokenHi, 0xffff_0000, 0x7fff_0000, true), ("token-parity", false));
    // Same parity: the layout (golden not sm_90's) or the arrival order (both sm_90's).
    assert_eq!(classify(FieldKind::TokenHi, 0x7ffe_0000, 0x0000_0000, false), ("token-encoding", true));
    assert_eq!(classify(FieldKind::TokenHi, 0x7ffe_0000, 0x7ffe_0800, true), ("token-order", true));
    assert_eq!(classify(FieldKind::WaitComplete, 0, 1, true), ("wait-result", false));
    assert_eq!(classify(FieldKind::Vote, 0, 1, true), ("value", false));
    // init 64, before the first arrive: pending 64 (docs/MBARRIER_ENCODING.md).
    assert!(describe_token_hi(0x7ffe_0000).contains("parity 0, pending 64"));
    assert!(describe_token_hi(0x7fff_0bff).contains("pending 31, tx in [1, 2048]"));
}

#[test]
fn trace_data_dedups_and_round_trips() {
    let layout = hopsync_cosim::gpu::instrument::Layout { threads: 3, slots: 4, header_bytes: 256 };
    let slots = vec![vec![0x0001_0000_8000_0000, 7], vec![0x0001_0000_8000_0000, 7], vec![]];
    let d = TraceData::new(layout, vec![2, 2, 0], &slots, Vec::new());
    assert_eq!(d.values.len(), 2);
    assert_eq!(d.sequences.len(), 2);
    assert_eq!(d.threads().unwrap(), slots);
    assert_eq!(compact_number_arrays("{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": []\n}"), "{\n  \"a\": [1, 2],\n  \"b\": []\n}");
}

#[test]
fn readme_launch_example_parses() {
    let readme = std::fs::read_to_string(root().join("cosim/gpu/runner/README.md")).unwrap();
    let start = readme.find("hopsync-launch 1\n").unwrap();
    let end = start + readme[start..].find("\nend\n").unwrap() + 5;
    let d = parse_launch_description(&readme[start..end]).unwrap();
    assert_eq!(d.name, "pipeline");
    assert_eq!(d.buffers[1], (TRACE_BUFFER.to_string(), 49664, None, true));
    assert_eq!(d.params[2], LaunchParam::Value(4, 7));
}


/// The runner's `tensormap` lines carry every encoder argument (driver enum values, arrays by
/// rank), also for rank 1 (no strides) and im2col maps; `param tensormap` names the map.
#[test]
fn tensormap_lines_carry_the_encoder_arguments() {
    let desc = |p: &str| {
        let prog = Program::load(&root().join(p)).unwrap();
        let (text, _) = launch_description(&prog, "x", "x.ptx", "x.bin").unwrap();
        parse_launch_description(&text).unwrap()
    };
    let d = desc("firmware/programs/tma/tile_1d.ptx");
    assert_eq!(d.tensormaps, ["tensormap tmap tiled tensor 0 type 2 rank 1 interleave 0 swizzle 0 l2 0 oob 0 dim 256 stride box 64 estride 1"]);
    assert_eq!(d.params[0], LaunchParam::TensorMap("tmap".into()));
    let d = desc("firmware/programs/tma/im2col_3d.ptx");
    assert_eq!(
        d.tensormaps,
        ["tensormap tmap0 im2col t0 0 type 3 rank 3 interleave 0 swizzle 0 l2 0 oob 0 dim 8 10 2 stride 32 320 lower -1 upper -1 channels 8 pixels 12 estride 1 1 1"]
    );
    assert!(parse_launch_description("hopsync-launch 1\nparam tensormap nope\nend\n").unwrap_err().contains("unknown tensormap"));
}
