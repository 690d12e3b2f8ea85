//! System test of the RTL engine (hopsync-sim): every firmware program under `firmware/programs/`
//! except `bad/` (the calibration programs in a test of their own) runs on the cycle-accurate
//! engine with the golden engine's outputs, passes the step-and-compare lockstep (`hopsync
//! cosim`) with no divergence, and takes the same number of cycles every time (with and without
//! the lockstep's event recording). The bad programs that name a finding produce that same first
//! finding on both engines, with no divergence before it.
//! TMA programs included: every copy's completion is compared byte for byte in the lockstep.

use hopsync_cosim::machine::Config;
use hopsync_cosim::report::{run_golden, RunReport};
use hopsync_firmware::Program;
use hopsync_sim::{lockstep::run_cosim, run_rtl, SmConfig};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn programs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("firmware/programs")
}

/// Every `.ptx` under `dir`, recursively, sorted; `skip` names folders left out.
fn collect(dir: &Path, skip: &[&str], out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())).map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| skip.iter().any(|s| n == *s)) {
                continue;
            }
            collect(&p, skip, out);
        } else if p.extension().is_some_and(|e| e == "ptx") {
            out.push(p);
        }
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(programs_dir()).unwrap_or(p).display().to_string()
}

/// Runs `check` on every path on all cores; panics with every failure.
fn for_all(paths: &[PathBuf], check: fn(&Path) -> Result<String, Vec<String>>) {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(paths.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<String, Vec<String>>>>> = paths.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(p) = paths.get(k) else { break };
                *results[k].lock().unwrap() = Some(check(p));
            });
        }
    });
    let mut failures = Vec::new();
    for (p, r) in paths.iter().zip(results) {
        match r.into_inner().unwrap().expect("checked") {
            Ok(line) => println!("{line}"),
            Err(errs) => {
                println!("{:<48} FAIL", rel(p));
                failures.push(format!("{}:\n    {}", rel(p), errs.join("\n    ")));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} programs failed:\n{}", failures.len(), paths.len(), failures.join("\n"));
}

fn first_finding(r: &RunReport) -> Option<&'static str> {
    r.findings.first().map(|f| f.kind.name())
}

fn check_program(path: &Path) -> Result<String, Vec<String>> {
    let prog = Program::load(path).map_err(|d| vec![format!("does not parse:\n{d}")])?;
    let t0 = Instant::now();
    let golden = run_golden(&prog, Config::default());
    let cosim = run_cosim(&prog, Config::default(), SmConfig::sm90());
    let rtl = run_rtl(&prog, Config::default(), SmConfig::sm90());
    let mut errs = Vec::new();
    if golden.status != "ok" {
        errs.push(format!("golden engine: status {}", golden.status));
    }
    for d in &cosim.divergences {
        errs.push(format!("cosim: {d}"));
    }
    for r in [&cosim.run, &rtl] {
        if r.status != "ok" {
            errs.push(format!("rtl engine: status {} {:?} {:?}", r.status, r.error, r.findings.first().map(|f| f.to_string())));
        }
        // Timing buffers hold %clock64 deltas: cycles on the RTL engine, steps on the golden one.
        if let Some(name) = golden.outputs.keys().chain(r.outputs.keys()).find(|k| !prog.manifest.is_timing(k) && r.outputs.get(*k) != golden.outputs.get(*k)) {
            errs.push(format!("rtl engine: output `{name}` differs from the golden engine's"));
        }
        if r.cycles.is_none() {
            errs.push("rtl report has no `cycles`".into());
        }
    }
    if cosim.run.cycles != rtl.cycles {
        errs.push(format!("cycle counts differ between two runs: {:?} with the lockstep, {:?} without", cosim.run.cycles, rtl.cycles));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(format!(
        "{:<48} ok  {} cycles, {} instructions compared, 0 divergences; {:.0} ms",
        rel(path),
        rtl.cycles.unwrap_or(0),
        cosim.compared,
        t0.elapsed().as_secs_f64() * 1e3
    ))
}

fn check_bad(path: &Path) -> Result<String, Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let expected = text.lines().find_map(|l| l.strip_prefix("// expect-finding: ")).map(|s| s.trim().to_string()).unwrap();
    let prog = Program::load(path).map_err(|d| vec![format!("does not parse:\n{d}")])?;
    // A program's own step budget (`// max-steps: N`, tests/bad_programs.rs).
    let max_steps = text.lines().find_map(|l| l.strip_prefix("// max-steps:")).map(|n| n.trim().parse().unwrap());
    let cfg = Config { max_steps: max_steps.unwrap_or(Config::default().max_steps), ..Config::default() };
    let golden = run_golden(&prog, cfg.clone());
    let rtl = run_rtl(&prog, cfg.clone(), SmConfig::sm90());
    let cosim = run_cosim(&prog, cfg, SmConfig::sm90());
    let mut errs = Vec::new();
    let (g, r) = (first_finding(&golden), first_finding(&rtl));
    if g != Some(expected.as_str()) || r != g {
        errs.push(format!("expected {expected}: golden engine {g:?}, rtl engine {r:?} {:?}", rtl.error));
    }
    if first_finding(&cosim.run) != r {
        errs.push(format!("rtl engine under cosim: {:?}", first_finding(&cosim.run)));
    }
    for d in &cosim.divergences {
        errs.push(format!("cosim: {d}"));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(format!("{:<48} ok  {expected} on both engines at cycle {}; {} instructions compared", rel(path), rtl.cycles.unwrap_or(0), cosim.compared))
}

#[test]
fn rtl_every_program_matches_golden_and_passes_cosim() {
    let mut paths = Vec::new();
    collect(&programs_dir(), &["bad", "calibration"], &mut paths);
    assert!(paths.len() > 20, "programs found: {}", paths.len());
    for_all(&paths, check_program);
}

/// The calibration microbenchmarks (`firmware/programs/calibration/`, issue 13) the same way, in a
/// test of their own: their TMA traffic through the rust-hdl TmaEngine takes a few minutes, which
/// would put one test for every program near nextest's time limit on a 2-core machine.
#[test]
fn rtl_calibration_programs_match_golden_and_pass_cosim() {
    let mut paths = Vec::new();
    collect(&programs_dir().join("calibration"), &[], &mut paths);
    assert!(paths.len() >= 40, "calibration programs found: {}", paths.len());
    for_all(&paths, check_program);
}

#[test]
fn rtl_bad_programs_give_the_golden_first_finding() {
    let mut paths = Vec::new();
    collect(&programs_dir().join("bad"), &[], &mut paths);
    paths.retain(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("// expect-finding: ")));
    assert!(paths.len() > 20, "bad programs with a finding: {}", paths.len());
    for_all(&paths, check_bad);
}

#[test]
fn rtl_reports_cycles_and_golden_does_not() {
    let p = programs_dir().join("seeds/mbarrier_ex1b_try_wait.ptx");
    let prog = Program::load(&p).unwrap();
    let g = run_golden(&prog, Config::default());
    let r = run_rtl(&prog, Config::default(), SmConfig::sm90());
    let gj = serde_json::to_value(&g).unwrap();
    let rj = serde_json::to_value(&r).unwrap();
    assert!(gj.get("cycles").is_none(), "golden report has no cycles field");
    assert_eq!(rj["engine"], "rtl");
    assert!(rj["cycles"].as_u64().unwrap() > 0);
    assert_eq!(rj["outputs"], gj["outputs"]);
}

/// `--max-steps` bounds the RTL engine's cycles: the run stops with StepLimit just past it.
#[test]
fn rtl_max_steps_bounds_the_cycles() {
    let prog = Program::load(&programs_dir().join("seeds/mbarrier_ex1b_try_wait.ptx")).unwrap();
    let full = run_rtl(&prog, Config::default(), SmConfig::sm90());
    assert!(full.cycles.unwrap() > 100, "the program runs past 100 cycles");
    let r = run_rtl(&prog, Config { max_steps: 100, ..Config::default() }, SmConfig::sm90());
    assert_eq!(r.findings.first().map(|f| f.kind), Some(hopsync_cosim::finding::FindingKind::StepLimit), "{:?}", r.findings);
    assert_eq!(r.cycles, Some(101));
}

/// The RTL engine's event stream of a program that runs to completion.
fn recorded_events(rel: &str) -> (Program, Vec<hopsync_sim::engine::Event>) {
    let prog = Program::load(&programs_dir().join(rel)).unwrap();
    let events = {
        let mut e = hopsync_sim::engine::Engine::new(&prog, Config::default(), SmConfig::sm90());
        e.record_events();
        let outcome = e.run();
        assert_eq!(e.report(&outcome).status, "ok", "{rel}");
        e.take_events()
    };
    (prog, events)
}

/// Replays an event stream into a fresh golden model, as the lockstep does; the first divergence.
fn replay(prog: &Program, events: Vec<hopsync_sim::engine::Event>) -> Result<(), hopsync_cosim::lockstep::Divergence> {
    let mut g = hopsync_cosim::lockstep::Golden::new(prog, Config::default(), SmConfig::sm90().period_ps());
    for ev in events {
        hopsync_sim::lockstep::apply(&mut g, ev)?;
    }
    Ok(())
}

#[test]
fn rtl_cosim_catches_a_corrupted_retire_record() {
    use hopsync_sim::engine::Event;
    // Run the RTL engine with its event stream, corrupt the first register write of an
    // mbarrier.arrive's token, and replay: the golden side must name that instruction.
    let (prog, mut events) = recorded_events("demo/pipeline.ptx");
    let k = events
        .iter()
        .position(|ev| matches!(ev, Event::Retire { rec, .. } if !rec.regs.is_empty() && prog.module.kernel.body[rec.pc as usize].op == hopsync_firmware::Opcode::MbarrierArrive))
        .expect("an arrive with a token");
    if let Event::Retire { rec, .. } = &mut events[k] {
        let l = rec.regs[0].mask.trailing_zeros() as usize;
        rec.regs[0].values[l] ^= 1 << 63;
    }
    let d = replay(&prog, events).expect_err("the corrupted token diverges");
    assert!(d.what.starts_with("register"), "{d}");
    assert!(d.instr.starts_with("mbarrier.arrive"), "{d}");
    assert!(d.line > 0 && d.waves.to_cycle > d.waves.from_cycle, "{d}");
    let json = serde_json::to_value(&d).unwrap();
    for k in ["cycle", "instr", "line", "golden", "rtl", "waves"] {
        assert!(json.get(k).is_some(), "divergence JSON lacks `{k}`");
    }
}

/// A divergence in a program compiled from CUDA C++ names the `.cu` line of the instruction's
/// `.loc` with the PTX line beside (`Machine::source_of`, as findings do), not the `.cu` file
/// with the PTX line number.
#[test]
fn rtl_cosim_divergence_in_a_cu_program_names_the_cu_line() {
    use hopsync_cosim::retire::MemSpace;
    use hopsync_sim::engine::Event;
    let rel = "bugs/warp_reduce_no_syncwarp_fixed.cu";
    let (prog, mut events) = recorded_events(rel);
    // The first shared-memory store is `s[t] = in[t];`: corrupt the byte it writes.
    let k = events.iter().position(|ev| matches!(ev, Event::Retire { rec, .. } if rec.mem.iter().any(|w| matches!(w.space, MemSpace::Shared(_))))).expect("a shared store");
    if let Event::Retire { rec, .. } = &mut events[k] {
        let w = rec.mem.iter_mut().find(|w| matches!(w.space, MemSpace::Shared(_))).unwrap();
        w.bytes[0] ^= 0x80;
    }
    let d = replay(&prog, events).expect_err("the corrupted store diverges");
    assert!(d.what.starts_with("memory write"), "{d}");
    let cu = std::fs::read_to_string(programs_dir().join(rel)).unwrap();
    assert!(d.file.ends_with(rel), "{d}");
    assert_eq!(cu.lines().nth(d.line as usize - 1).map(str::trim), Some("s[t] = in[t];"), "{d}");
    // The PTX line beside it: the line of the PTX file that holds the instruction.
    let (ptx, ptx_line) = d.ptx.rsplit_once(':').and_then(|(a, _col)| a.rsplit_once(':')).expect("file:line:col");
    let text = std::fs::read_to_string(ptx).unwrap();
    let at = text.lines().nth(ptx_line.parse::<usize>().unwrap() - 1).unwrap();
    assert!(at.trim_start().starts_with("st.shared"), "PTX line {ptx_line}: {at}\n{d}");
    assert!(d.to_string().contains(&format!("{rel}:{}, PTX {}", d.line, d.ptx)), "{d}");
}

/// One `.shared::cluster` arrive whose lanes name barriers in two CTAs lands in the two units
/// tens of cycles apart, and the peer's arrive on the same word lands in between: the engine hands
/// each part to the golden model when its unit applied it (`Event::MbarPart`), so the lockstep
/// follows the word as the units changed it (this program diverged when the golden model applied
/// the whole instruction at its retire), and a part whose change is corrupted is named.
#[test]
fn rtl_cosim_applies_a_multi_cta_arrive_part_by_part() {
    use hopsync_cosim::retire::SyncEvent;
    use hopsync_sim::engine::Event;
    let (prog, events) = recorded_events("sched/multi_cta_arrive.ptx");
    let parts = events.iter().filter(|ev| matches!(ev, Event::MbarPart { .. })).count();
    // 8 rounds x 2 CTAs: each arrive's local part lands before its remote part.
    assert_eq!(parts, 16, "parts handed over early");
    replay(&prog, events.clone()).expect("the part-by-part stream replays without divergence");
    let mut bad = events;
    let k = bad.iter().position(|ev| matches!(ev, Event::MbarPart { change: Some(_), .. })).expect("a part with a word change");
    if let Event::MbarPart { change: Some(SyncEvent::Mbarrier { new, .. }), .. } = &mut bad[k] {
        *new ^= 1 << 63;
    }
    let d = replay(&prog, bad).expect_err("the corrupted part diverges");
    assert!(d.what.starts_with("mbarrier change of step"), "{d}");
    assert!(d.instr.contains("mbarrier.arrive"), "{d}");
}

/// cp.async.mbarrier.arrive from two warps on one barrier, only some lanes with a cp.async in
/// flight (a partitioned cuda::pipeline's producer_commit): the unit takes one warp's pending-count
/// increments between the other warp's deferred arrive-ons, so the engine hands each increment to
/// the golden model as the unit applied it (this program diverged at `mbarrier change 0` when the
/// golden model applied all 32 at the retire), and the arrive-ons keep their issue numbers.
#[test]
fn rtl_cosim_applies_cp_async_arrive_increments_part_by_part() {
    use hopsync_sim::engine::Event;
    let (prog, events) = recorded_events("sched/cp_async_arrive_two_warps.ptx");
    let arrive = |pc: u32| prog.module.kernel.body[pc as usize].op == hopsync_firmware::Opcode::CpAsyncMbarrierArrive;
    let early = events.iter().filter(|ev| matches!(ev, Event::MbarPart { pc, .. } if arrive(*pc))).count();
    // 2 phases x 2 warps x 31 lanes handed over before the retire (the last lane's with it)
    assert_eq!(early, 124, "increments handed over early");
    replay(&prog, events).expect("the increment-by-increment stream replays without divergence");
}

#[test]
fn rtl_cosim_report_has_compared_and_divergences() {
    let p = programs_dir().join("seeds/bar_red.ptx");
    let prog = Program::load(&p).unwrap();
    let r = run_cosim(&prog, Config::default(), SmConfig::sm90());
    let j = serde_json::to_value(&r).unwrap();
    assert!(j["compared"].as_u64().unwrap() > 0);
    assert_eq!(j["divergences"].as_array().unwrap().len(), 0);
    assert_eq!(j["engine"], "rtl");
    assert!(j["cycles"].as_u64().is_some());
}

#[test]
fn rtl_cosim_catches_a_corrupted_tma_landing() {
    use hopsync_sim::engine::Event;
    // Corrupt one byte the engine reports for a TMA copy's landing, then the complete-tx word:
    // the golden side must name the copy instruction, both values and the waveform window.
    let (prog, events) = recorded_events("tma/multicast_2cta.ptx");
    let k = events.iter().position(|ev| matches!(ev, Event::TmaComplete { cta: Some(_), effect, .. } if !effect.bytes.is_empty())).expect("a TMA landing");
    let replay = |events| replay(&prog, events);
    replay(events.clone()).expect("the stream as recorded passes");
    let mut bad = events.clone();
    if let Event::TmaComplete { effect, .. } = &mut bad[k] {
        effect.bytes[0].1[3] ^= 0x40;
    }
    let d = replay(bad).expect_err("a corrupted byte diverges");
    assert!(d.what.starts_with("TMA copy into shared memory"), "{d}");
    assert!(d.instr.contains("cp.async.bulk.tensor"), "{d}");
    assert!(d.line > 0 && d.waves.to_cycle > d.waves.from_cycle && d.golden != d.rtl, "{d}");
    let mut bad = events;
    if let Event::TmaComplete { effect, .. } = &mut bad[k] {
        effect.complete_tx.as_mut().unwrap().2 += 16;
    }
    let d = replay(bad).expect_err("a wrong complete-tx amount diverges");
    assert!(d.what.starts_with("TMA complete-tx"), "{d}");
}

#[test]
fn rtl_prefetch_and_shared_to_cluster_copies_run_on_the_tma_engine_unit() {
    use hopsync_sim::engine::Engine;
    // Prefetches (reads, data dropped), shared::cta -> shared::cluster copies and their
    // reductions, and im2col loads and prefetches (PTX 5.5.4) go to the RTL TmaEngine: no
    // operation of these programs is timed by the `[tma]` model (schedule_tma), and each
    // program's outputs are its expected ones.
    for (p, cmds) in [
        ("tma/prefetch.ptx", 4),
        ("tma/bulk_shared_to_cluster.ptx", 0),
        ("tma/reduce_bulk_cluster.ptx", 0),
        ("tma/im2col_3d.ptx", 4),
        ("tma/im2col_4d.ptx", 4),
    ] {
        let prog = Program::load(&programs_dir().join(p)).unwrap();
        let mut e = Engine::new(&prog, Config::default(), SmConfig::sm90());
        let outcome = e.run();
        assert_eq!(e.report(&outcome).status, "ok", "{p}");
        assert_eq!(e.tma_model_ops, 0, "{p}: {} operations timed by schedule_tma", e.tma_model_ops);
        assert!(e.tma_unit_commands >= cmds.max(1), "{p}: {} commands on the TmaEngine", e.tma_unit_commands);
    }
}

#[test]
fn rtl_tma_loads_run_on_the_tma_engine_unit() {
    use hopsync_sim::engine::Engine;
    // Bulk, tiled and im2col loads (multicast included) go to the RTL TmaEngine.
    for (p, unit) in [("tma/bulk_add_one_1d.ptx", true), ("tma/multicast_4cta.ptx", true), ("tma/tile_5d.ptx", true), ("tma/swizzle_128b.ptx", true), ("tma/im2col_3d.ptx", true)] {
        let prog = Program::load(&programs_dir().join(p)).unwrap();
        let mut e = Engine::new(&prog, Config::default(), SmConfig::sm90());
        let outcome = e.run();
        assert_eq!(e.report(&outcome).status, "ok", "{p}");
        assert_eq!(e.tma_unit_commands > 0, unit, "{p}: {} commands on the TmaEngine", e.tma_unit_commands);
    }
}

#[test]
fn rtl_tma_stores_run_on_the_tma_engine_unit() {
    use hopsync_sim::engine::Engine;
    // Bulk and tiled stores and reductions to global memory with their commit_group /
    // wait_group go to the RTL TmaEngine (per-thread bulk-group contexts; the reductions' writes
    // carry the op, global memory applies it): none is timed by the `[tma]` model.
    // bulk_groups_per_warp: 16 threads of 16 warps with open groups at once (the unit's 32
    // contexts; it stopped with "unsupported" when it kept 4).
    for p in ["tma/bulk_async_groups.ptx", "tma/bulk_groups_per_warp.ptx", "tma/tile_2d_load_modify_store.ptx", "tma/oob_store_skip.ptx", "tma/swizzle_128b.ptx", "tma/reduce_bulk_global.ptx", "tma/reduce_tensor.ptx"] {
        let prog = Program::load(&programs_dir().join(p)).unwrap();
        let mut e = Engine::new(&prog, Config::default(), SmConfig::sm90());
        let outcome = e.run();
        assert_eq!(e.report(&outcome).status, "ok", "{p}");
        assert!(e.tma_unit_commands > 0, "{p}: no command on the TmaEngine");
        assert_eq!(e.tma_model_ops, 0, "{p}: TMA operations timed by the model");
    }
}

#[test]
fn rtl_cosim_compares_the_units_bulk_groups_and_store_bytes() {
    use hopsync_sim::engine::Event;
    // Every store event of bulk_async_groups carries the TmaEngine's own answer to wait_group
    // (the unit's per-thread contexts); flipping one answer, or one byte the unit wrote to
    // global memory, diverges.
    let (prog, events) = recorded_events("tma/bulk_async_groups.ptx");
    let views: Vec<usize> = (0..events.len()).filter(|&k| matches!(&events[k], Event::TmaComplete { cta: None, effect, .. } if effect.bulk.is_some())).collect();
    let stores = events.iter().filter(|ev| matches!(ev, Event::TmaComplete { cta: None, .. })).count();
    assert!(stores >= 6 && views.len() == stores, "{} of {stores} store events carry the unit's view", views.len());
    assert!(views.iter().any(|&k| matches!(&events[k], Event::TmaComplete { effect, .. } if !effect.bulk.unwrap().done[0])), "some view has wait_group 0 not holding");
    replay(&prog, events.clone()).expect("the stream as recorded passes");
    let mut bad = events.clone();
    if let Event::TmaComplete { effect, .. } = &mut bad[views[0]] {
        let v = effect.bulk.as_mut().unwrap();
        v.done[0] = !v.done[0];
    }
    let d = replay(&prog, bad).expect_err("a wrong wait_group answer diverges");
    assert!(d.what.starts_with("bulk async-groups"), "{d}");
    let k = events.iter().position(|ev| matches!(ev, Event::TmaComplete { cta: None, effect, .. } if !effect.bytes.is_empty())).expect("a store's writes");
    let mut bad = events;
    if let Event::TmaComplete { effect, .. } = &mut bad[k] {
        effect.bytes[0].1[5] ^= 0x10;
    }
    let d = replay(&prog, bad).expect_err("a wrong written byte diverges");
    assert!(d.what.starts_with("TMA store's global writes"), "{d}");
}

/// Under `--ub warn` both sides record a finding and go on (issue 17: the RTL engine computed a
/// wrong result after one while cosim said "0 divergences"): the report carries the golden
/// model's findings and is not clean, the CLI says so and exits 1, and a golden finding the
/// engine did not make is a divergence.
#[test]
fn rtl_cosim_after_a_golden_finding_is_not_clean() {
    use hopsync_cosim::finding::{Finding, FindingKind, Location};
    use hopsync_cosim::lockstep::Golden;
    use hopsync_cosim::machine::UbMode;
    let p = programs_dir().join("bad/bar_aligned_divergent_if_else.ptx");
    let prog = Program::load(&p).unwrap();
    let warn = Config { ub: UbMode::Warn, ..Config::default() };
    let r = run_cosim(&prog, warn.clone(), SmConfig::sm90());
    let kinds: Vec<&str> = r.golden_findings.iter().map(|f| f.kind.name()).collect();
    assert_eq!(kinds, ["BarrierAlignedDivergent", "BarrierAlignedDivergent"], "both sides of the branch: {}", r.summary());
    assert!(r.divergences.is_empty(), "the engine made the same findings: {}", r.summary());
    assert!(!r.clean());
    assert!(r.summary().contains("golden model: 2 finding(s), the first BarrierAlignedDivergent at"), "{}", r.summary());
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["golden_findings"][0]["kind"], "BarrierAlignedDivergent");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hopsync")).args(["cosim", p.to_str().unwrap(), "--ub", "warn"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("not a clean run"), "{text}");

    // A finding the golden side made and the engine did not.
    let mut g = Golden::new(&prog, warn, 505);
    g.m.report(FindingKind::MbarrierArriveBeforeWait, String::new(), Some((0, 0, 0, 3))).unwrap();
    let d = g.compare_findings(&[]).unwrap_err();
    assert_eq!((d.what.as_str(), d.golden.as_str(), d.rtl.as_str()), ("finding 0", "MbarrierArriveBeforeWait at cta 0 warp 0 pc 3", "no finding"));
    // The engine's whole-machine findings are its own.
    let dl = Finding { kind: FindingKind::Deadlock, message: String::new(), location: Location::default() };
    assert!(Golden::new(&prog, Config::default(), 505).compare_findings(&[dl]).is_ok());
}

/// Every shared resource of the engine is arbitrated without starvation (issue 13): two warps of
/// schedulers 0 and 1 keep the global pipe booked while they spin on a phase only a warp of
/// scheduler 2 completes, after a global store of its own. The engine used to hand a freed pipe
/// to the lowest scheduler every time: this program never finished (StepLimit at any bound).
#[test]
fn rtl_shared_pipes_are_starvation_free() {
    let prog = Program::load(&programs_dir().join("sched/global_pipe_starvation.ptx")).unwrap();
    let r = run_rtl(&prog, Config { max_steps: 100_000, ..Config::default() }, SmConfig::sm90());
    assert_eq!(r.status, "ok", "{:?} {:?}", r.findings.first().map(|f| f.to_string()), r.error);
    assert!(r.cycles.unwrap() < 10_000, "the worker waited {} cycles for the pipe", r.cycles.unwrap());
}

/// The same inside one warp scheduler: four spinning warps of scheduler 0 (and twelve of the
/// others) keep the global pipe booked while warp 16, on scheduler 0 too, waits to store before
/// the arrive that frees them. A greedy-then-oldest scheduler handed the freed pipe to its greedy
/// warp, which wanted it again right after each store: this program never finished (StepLimit
/// at any bound; gen/gen_005.ptx instrumented by `gpu pack` livelocked the same way). The waiters
/// of a scheduler now take the pipe in the order they found it busy.
#[test]
fn rtl_a_schedulers_warps_take_a_busy_pipe_in_turn() {
    let prog = Program::load(&programs_dir().join("sched/same_scheduler_pipe_starvation.ptx")).unwrap();
    let r = run_rtl(&prog, Config { max_steps: 200_000, ..Config::default() }, SmConfig::sm90());
    assert_eq!(r.status, "ok", "{:?} {:?}", r.findings.first().map(|f| f.to_string()), r.error);
    assert!(r.cycles.unwrap() < 20_000, "the worker waited {} cycles for the pipe", r.cycles.unwrap());
}

/// A warp runs ahead of an aligned bar.sync (BAR.SYNC.DEFER_BLOCKING): its clock read and a
/// register-only loop issue while the barrier waits for a warp that spins 1,000 cycles; its
/// first shared-memory load still waits for the barrier and sees the other warp's store. The
/// engine used to block the warp at the barrier (1,087 cycles to the clock read).
#[test]
fn rtl_a_warp_runs_ahead_of_an_aligned_bar_sync() {
    let prog = Program::load(&programs_dir().join("sched/bar_sync_run_ahead.ptx")).unwrap();
    let r = run_rtl(&prog, Config::default(), SmConfig::sm90());
    assert_eq!(r.status, "ok", "{:?} {:?}", r.findings.first().map(|f| f.to_string()), r.error);
    let t = hopsync_firmware::manifest::hex_bytes(&r.outputs["t"]).unwrap();
    let at = |k: usize| u64::from_le_bytes(t[k * 8..k * 8 + 8].try_into().unwrap());
    assert!(at(0) < 30, "the clock read after bar.sync came {} cycles after the one before it", at(0));
    assert!(at(1) > 1000, "the load after bar.sync issued {} cycles in, before the other warp arrived", at(1));
}

/// A named barrier wakes the warps asleep at it for long one at a time per scheduler, its highest
/// warp slot first (`sync.named_barrier_wake_spacing_cycles`; silicon, H100: warps 24 / 16 / 8 / 0
/// of scheduler 0 at 92.5 / 110.5 / 123.5 / 125 cycles, calibration/bar_release_order.ptx), and
/// later than the release alone (`sync.named_barrier_wake_cycles`: 85 cycles on silicon for one
/// waiter, calibration/bar_release.ptx). The engine used to release every waiter at once and
/// issue them oldest first: warp 0 at 63 cycles, warp 24 at 82.
#[test]
fn rtl_a_named_barrier_wakes_long_asleep_warps_highest_slot_first() {
    let prog = Program::load(&programs_dir().join("calibration/bar_release_order.ptx")).unwrap();
    let r = run_rtl(&prog, Config::default(), SmConfig::sm90());
    assert_eq!(r.status, "ok", "{:?} {:?}", r.findings.first().map(|f| f.to_string()), r.error);
    let t = hopsync_firmware::manifest::hex_bytes(&r.outputs["t"]).unwrap();
    // figure f (waiter warps 0..8, 15, 16, 24, 30), round k: t[f * 8 + k]
    let at = |f: usize, k: usize| u64::from_le_bytes(t[(f * 8 + k) * 8..(f * 8 + k) * 8 + 8].try_into().unwrap());
    let (w0, w8, w16, w24) = (0, 8, 10, 11);
    for k in 0..8 {
        let order = [at(w24, k), at(w16, k), at(w8, k), at(w0, k)];
        assert!(order.windows(2).all(|p| p[0] < p[1]), "round {k}: warps 24 / 16 / 8 / 0 at {order:?} cycles");
        assert!(at(w0, k) >= 110, "round {k}: warp 0, the last of its scheduler, at {} cycles", at(w0, k));
    }
    let prog = Program::load(&programs_dir().join("calibration/bar_release.ptx")).unwrap();
    let r = run_rtl(&prog, Config::default(), SmConfig::sm90());
    assert_eq!(r.status, "ok", "{:?} {:?}", r.findings.first().map(|f| f.to_string()), r.error);
    let t = hopsync_firmware::manifest::hex_bytes(&r.outputs["t"]).unwrap();
    let first = u64::from_le_bytes(t[0..8].try_into().unwrap());
    assert!((80..=95).contains(&first), "one waiter of 2 warps woke {first} cycles after the last arrival");
}

/// A merged multi-lane `.expect_tx` arrive is two unit operations on the RTL engine (expect-tx of
/// the summed bytes, then the arrive), one step in the golden model. Lanes 0 and 1 of every warp
/// of CTAs 1-7 arrive.expect_tx on CTA 0's barrier (remote: both operations wait in CTA 0's
/// cluster queue) while CTA 0's warps arrive on it locally after a delay that grows by round
/// (the local queue has priority, so a local arrive lands between the two halves). The engine
/// hands the expect-tx half over on its own (`Event::MbarPart` with `half`): this diverged
/// ("mbarrier change 0" of a local arrive, tx-count bits) when the golden model applied the
/// whole step at the retire.
#[test]
fn rtl_cosim_applies_a_merged_expect_tx_arrive_half_by_half() {
    use hopsync_cosim::retire::SyncEvent;
    use hopsync_sim::engine::Event;
    const SRC: &str = r#"//! [launch]
//! grid = [8, 1, 1]
//! block = [128, 1, 1]
//! cluster = [8, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 32
//! type = "u32"
//! output = true
//! expect = [16, 16, 16, 16, 16, 16, 16, 16]
//! [[param]]
//! name = "out_ptr"
//! buffer = "out"
.version 8.6
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 out_ptr
)
{
	.reg .pred %p<10>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<3>;
	.shared .align 8 .b64 bar;

	mov.u32 %r0, %tid.x;
	mov.u32 %r1, %cluster_ctarank;
	setp.eq.u32 %p0, %r0, 0;
	@%p0 mbarrier.init.shared::cta.b64 [bar], 60;
	fence.mbarrier_init.release.cluster;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	mov.u32 %r3, bar;
	mapa.shared::cluster.u32 %r4, %r3, 0;
	and.b32 %r10, %r0, 31;
	setp.lt.u32 %p1, %r10, 2;
	setp.eq.u32 %p6, %r10, 0;
	setp.eq.u32 %p4, %r1, 0;
	mov.u32 %r5, 0;
ROUND:
	@!%p4 bra REMOTE;
	mov.u32 %r9, 0;
	shl.b32 %r11, %r5, 2;
DELAY:
	.pragma "nounroll";
	setp.lt.u32 %p5, %r9, %r11;
	add.u32 %r9, %r9, 1;
	@%p5 bra DELAY;
	@%p6 mbarrier.arrive.release.cta.shared::cta.b64 _, [bar];
	setp.eq.u32 %p7, %r0, 0;
	and.b32 %r6, %r5, 1;
	@!%p7 bra NEXT;
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], %r6;
	@!%p2 bra WAIT;
	bra.uni NEXT;
REMOTE:
	@%p1 mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%r4], 16;
	@%p6 mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [%r4], 32;
NEXT:
	bar.warp.sync -1;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	add.u32 %r5, %r5, 1;
	setp.lt.u32 %p3, %r5, 16;
	@%p3 bra ROUND;
	@!%p0 bra END;
	ld.param.u64 %rd0, [out_ptr];
	cvta.to.global.u64 %rd0, %rd0;
	mul.wide.u32 %rd1, %r1, 4;
	add.s64 %rd1, %rd0, %rd1;
	st.global.u32 [%rd1], %r5;
END:
	ret;
}
"#;
    let prog = Program::parse("merged_expect_tx_interleaved.ptx", SRC).unwrap_or_else(|d| panic!("{d}"));
    let mut e = hopsync_sim::engine::Engine::new(&prog, Config::default(), SmConfig::sm90());
    e.record_events();
    let outcome = e.run();
    assert_eq!(e.report(&outcome).status, "ok");
    let events = e.take_events();
    // Some local arrive of CTA 0 retires between a half and the arrive half of its step.
    let word_of = |c: &Option<SyncEvent>| matches!(c, Some(SyncEvent::Mbarrier { cta: 0, offset: 0, .. }));
    let mut open = std::collections::BTreeSet::new();
    let mut between = 0;
    for ev in &events {
        match ev {
            Event::MbarPart { cta, warp, pc, half: true, change, .. } if word_of(change) => {
                open.insert((*cta, *warp, *pc));
            }
            Event::Retire { rec, .. } if rec.cta == 0 && !open.is_empty() && rec.sync.iter().any(|s| matches!(s, SyncEvent::Mbarrier { cta: 0, old, new, .. } if old != new)) && !open.contains(&(0, rec.warp, rec.pc)) => between += 1,
            Event::Retire { rec, .. } => {
                open.remove(&(rec.cta, rec.warp, rec.pc));
            }
            _ => {}
        }
    }
    assert!(between > 0, "no CTA 0 arrive landed between the two halves of a remote .expect_tx arrive");
    let r = run_cosim(&prog, Config::default(), SmConfig::sm90());
    assert!(r.clean(), "{}{}", r.run.summary(), r.summary());
    assert!(r.run.checks.iter().all(|c| c.matches) && !r.run.checks.is_empty());
}
