//! Waveforms of the RTL engine (`--waves`, sim/src/waves.rs): the VCD of a seed program parses back
//! with the `vcd` crate and has the scopes and signals README.md describes; GTKWave loads it
//! headless (`xvfb-run -a gtkwave -S script.tcl x.vcd x.gtkw`) with every preselected signal of the
//! save file found; the save files committed under `waves/` are exactly what `hopsync waves`
//! writes now.
//!
//! gtkwave and xvfb-run are required (scripts/test installs them); without them the GTKWave test
//! fails and says how to install them.

use hopsync_cosim::machine::Config;
use hopsync_firmware::{printer, Program};
use hopsync_sim::probe::{Stall, WarpActivity};
use hopsync_sim::waves::{self, gtkw, unescape, View};
use hopsync_sim::SmConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn seeds() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("firmware/programs/seeds")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "ptx")).collect();
    v.sort();
    v
}

fn load(p: &Path) -> Program {
    Program::load(p).unwrap_or_else(|d| panic!("{d}"))
}

/// The VCD of a seed program with clusters (2 CTAs, mbarriers across the cluster) parses back and
/// holds the documented hierarchy, string-valued opcodes, warp instruction text and stall names.
#[test]
fn vcd_of_a_seed_parses_with_scopes_and_signals() {
    let prog = load(&root().join("firmware/programs/seeds/mbarrier_ex4_cluster.ptx"));
    let sm = SmConfig::sm90();
    let mut bytes = Vec::new();
    let (report, layout) = waves::record(&prog, Config::default(), sm.clone(), &mut bytes).unwrap();
    assert_eq!(report.status, "ok");
    let cycles = report.cycles.unwrap();

    let mut p = vcd::Parser::new(&bytes[..]);
    let header = p.parse_header().expect("the VCD header parses");
    assert_eq!(header.timescale, Some((1, vcd::TimescaleUnit::PS)));
    let ctas = prog.manifest.launch.grid.iter().product::<u32>();
    assert!(ctas >= 2, "the test program has a cluster of CTAs");
    for scope in [&["hopsync", "cluster0", "cluster_barrier"][..], &["hopsync", "cluster0", "cta0", "mbarrier"], &["hopsync", "cluster0", "cta1", "named_barrier"], &["hopsync", "cluster0", "cta0", "smem_port"], &["hopsync", "cluster0", "cta1", "warp0"]] {
        assert!(header.find_scope(scope).is_some(), "scope {} missing", scope.join("."));
    }
    let var = |path: &[&str]| header.find_var(path).unwrap_or_else(|| panic!("variable {} missing", path.join("."))).clone();
    let instr = var(&["hopsync", "cluster0", "cta0", "warp0", "instr"]);
    let stall = var(&["hopsync", "cluster0", "cta0", "warp0", "stall"]);
    let state = var(&["hopsync", "cluster0", "cta0", "warp0", "state"]);
    let pc = var(&["hopsync", "cluster0", "cta0", "warp0", "pc"]);
    let op = var(&["hopsync", "cluster0", "cta0", "mbarrier", "rtl", "local_req$op"]);
    let valid = var(&["hopsync", "cluster0", "cta0", "mbarrier", "rtl", "local_valid"]);
    let clocked = var(&["hopsync", "cluster0", "cta0", "mbarrier", "clocked"]);
    let backlog = var(&["hopsync", "cluster0", "cta0", "smem_port", "backlog"]);
    assert_eq!(instr.var_type, vcd::VarType::String);
    assert_eq!(op.var_type, vcd::VarType::String);
    assert_eq!(pc.size, 32);
    assert_eq!(backlog.size, 16);
    var(&["hopsync", "cycle"]);
    var(&["hopsync", "cluster0", "cluster_barrier", "rtl", "req$op"]);
    var(&["hopsync", "cluster0", "cta1", "mbarrier", "rtl", "resp$state$phase_parity"]);

    // Every instruction text the warps show is an instruction of the kernel; every stall and
    // state value is a name of the probe's enums; the mbarrier unit gets requests.
    let m = &prog.module;
    let texts: BTreeSet<String> = m.kernel.body.iter().map(|i| printer::print_instr(m, i)).collect();
    let stalls: BTreeSet<&str> = [Stall::Issued, Stall::Ready, Stall::ScoreboardDep, Stall::Branch, Stall::Sleep, Stall::BarrierWait, Stall::ClusterBarrierWait, Stall::AsyncWait, Stall::MbarrierWait, Stall::TryWaitSuspended, Stall::MemoryThrottle, Stall::MemoryOrder, Stall::PipeThrottle, Stall::UnitBackpressure, Stall::NotLaunched, Stall::Exited].iter().map(|s| s.name()).collect();
    let states: BTreeSet<&str> = [WarpActivity::NotLaunched, WarpActivity::Runnable, WarpActivity::InSync, WarpActivity::NamedBarrier, WarpActivity::ClusterBarrier, WarpActivity::AsyncGroups, WarpActivity::Exited].iter().map(|s| s.name()).collect();
    let mut seen: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let (mut last_t, mut stamps, mut valid_high) = (0u64, 0u64, 0u64);
    for cmd in p {
        match cmd.expect("the VCD body parses") {
            vcd::Command::Timestamp(t) => {
                assert!(t > last_t || stamps == 0, "time goes forward");
                assert_eq!(t % sm.period_ps(), 0, "time is a whole number of cycles");
                last_t = t;
                stamps += 1;
            }
            vcd::Command::ChangeString(id, v) => {
                let v = unescape(&v);
                let key = if id == instr.code {
                    "instr"
                } else if id == stall.code {
                    "stall"
                } else if id == state.code {
                    "state"
                } else if id == op.code {
                    "op"
                } else {
                    continue;
                };
                seen.entry(key).or_default().insert(v);
            }
            vcd::Command::ChangeScalar(id, vcd::Value::V1) if id == valid.code => valid_high += 1,
            vcd::Command::ChangeScalar(id, _) if id == clocked.code => {}
            _ => {}
        }
    }
    assert_eq!(last_t, (cycles + 1) * sm.period_ps(), "the VCD ends one cycle after the run");
    assert!(stamps > 10);
    for t in &seen["instr"] {
        assert!(texts.contains(t), "instr `{t}` is not an instruction of the kernel");
    }
    assert!(seen["instr"].iter().any(|t| t.starts_with("mbarrier.")), "warp 0 runs mbarrier instructions");
    assert!(seen["stall"].iter().all(|s| stalls.contains(s.as_str())), "{:?}", seen["stall"]);
    assert!(seen["stall"].contains("Issued") && seen["stall"].contains("Exited"), "{:?}", seen["stall"]);
    assert!(seen["state"].iter().all(|s| states.contains(s.as_str())), "{:?}", seen["state"]);
    assert!(seen["op"].contains("Init") && seen["op"].iter().any(|o| o.starts_with("Arrive")), "{:?}", seen["op"]);
    assert!(valid_high >= 2, "the mbarrier unit's local port gets requests");
    assert!(layout.signals.len() > 100 && layout.groups.len() >= 4);
}

fn need_tool(name: &str) {
    let ok = Command::new("sh").arg("-c").arg(format!("command -v {name}")).stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    assert!(
        ok,
        "`{name}` is not installed: this test loads the VCD in GTKWave headless. Install it with \
         `apt-get install -y gtkwave xvfb` (Debian: xvfb-run is in package `xvfb`), or run \
         `scripts/test`, which installs what the tests need"
    );
}

/// Runs a command with a time limit; returns (success, stdout + stderr).
fn run_with_timeout(cmd: &mut Command, limit: Duration) -> (bool, String) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut out).unwrap();
    (status.is_some_and(|s| s.success()), out)
}

/// GTKWave loads the VCD and the save file written beside it (headless, under Xvfb): it sees
/// every variable, and every signal the save file preselects is displayed.
#[test]
fn gtkwave_loads_the_vcd_headless() {
    need_tool("gtkwave");
    need_tool("xvfb-run");
    let prog = load(&root().join("firmware/programs/seeds/barrier_cluster_dsmem.ptx"));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("waves_gtkwave");
    std::fs::create_dir_all(&dir).unwrap();
    let vcd = dir.join("barrier_cluster_dsmem.vcd");
    let report = waves::run_with_waves(&prog, Config::default(), SmConfig::sm90(), &vcd).unwrap();
    assert_eq!(report.status, "ok");
    let save = waves::gtkw_path(&vcd);
    assert!(save.exists(), "the save file is written beside the VCD");
    let (_, layout) = waves::record(&prog, Config::default(), SmConfig::sm90(), std::io::sink()).unwrap();
    let preselected: Vec<String> = waves::ordered_groups(&layout).into_iter().flat_map(|g| g.traces.iter().map(|&(i, _)| layout.signals[i].gtkwave_name())).collect();

    let script = dir.join("check.tcl");
    std::fs::write(
        &script,
        "puts \"hopsync-facs [gtkwave::getNumFacs]\"\n\
         foreach s [gtkwave::getDisplayedSignals] { puts \"hopsync-shown $s\" }\n\
         gtkwave::/File/Quit\n",
    )
    .unwrap();
    let (ok, out) = run_with_timeout(Command::new("xvfb-run").arg("-a").arg("gtkwave").arg("-S").arg(&script).arg(&vcd).arg(&save), Duration::from_secs(120));
    let facs: Option<usize> = out.lines().find_map(|l| l.strip_prefix("hopsync-facs ")).and_then(|n| n.trim().parse().ok());
    assert!(ok && facs.is_some(), "gtkwave did not load {} (exit ok: {ok}):\n{out}", vcd.display());
    assert_eq!(facs, Some(layout.signals.len()), "GTKWave sees every VCD variable");
    let shown: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("hopsync-shown ")).map(str::trim).collect();
    assert_eq!(shown, preselected, "GTKWave displays exactly the save file's preselection, in order");
    assert!(out.contains("hopsync.cluster0.cta1.warp0.instr"), "CTA 1's warps are preselected");
}

/// The committed `waves/<seed>.gtkw` files are what `hopsync waves` writes now, one per seed
/// program, naming the VCD `waves/<seed>.vcd`.
#[test]
fn committed_gtkw_files_are_what_the_generator_writes() {
    let sm = SmConfig::sm90();
    let mut stale = Vec::new();
    let mut names = BTreeSet::new();
    for p in seeds() {
        let prog = load(&p);
        let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
        let want = waves::seed_gtkw(&prog, "waves", &sm).unwrap();
        assert!(want.contains(&format!("[dumpfile] \"waves/{stem}.vcd\"")));
        let file = root().join("waves").join(format!("{stem}.gtkw"));
        match std::fs::read_to_string(&file) {
            Ok(have) if have == want => {}
            Ok(_) => stale.push(format!("{} differs", file.display())),
            Err(e) => stale.push(format!("{}: {e}", file.display())),
        }
        names.insert(format!("{stem}.gtkw"));
    }
    for e in std::fs::read_dir(root().join("waves")).unwrap() {
        let n = e.unwrap().file_name().to_string_lossy().to_string();
        if n.ends_with(".gtkw") && !names.contains(&n) {
            stale.push(format!("waves/{n} belongs to no seed program"));
        }
    }
    assert!(stale.is_empty(), "the committed save files are stale: regenerate them with `cargo run -- waves` (from the repository root) and commit waves/*.gtkw:\n{}", stale.join("\n"));
}

/// A save file for a divergence opens on its window with a marker at the divergence cycle.
#[test]
fn gtkw_window_and_marker() {
    let prog = load(&root().join("firmware/programs/seeds/mbarrier_ex1a_test_wait.ptx"));
    let (_, layout) = waves::record(&prog, Config::default(), SmConfig::sm90(), std::io::sink()).unwrap();
    let p = layout.period_ps;
    let s = gtkw(&layout, &View { dumpfile: "x.vcd".into(), savefile: "x.gtkw".into(), window: Some((10, 78)), marker: Some(74) });
    assert!(s.contains(&format!("[timestart] {}\n", 10 * p)), "{s}");
    let zoom_line = s.lines().find(|l| l.starts_with('*')).unwrap();
    assert!(zoom_line.split(' ').nth(1) == Some(&(74 * p).to_string()), "{zoom_line}");
    for g in &layout.groups {
        let (open, close) = if waves::idle(&layout, g) { ("@c00200", "@1401200") } else { ("@800200", "@1000200") };
        assert!(s.contains(&format!("{open}\n-{}\n", g.title)) && s.contains(&format!("{close}\n-{}\n", g.title)), "{}: {s}", g.title);
    }
}

/// The save file of the warp-specialized producer/consumer seed (issue 17 §3) leads with the units
/// it uses, the mbarrier unit first, and closes the idle cluster-barrier group below the warps;
/// it opens on the story, not the whole run: from just before the first synchronization request
/// to just after the consumers' long wait on the full barrier ends (the producer's arrive, about
/// cycle 1370 of 5454), at a zoom that shows those cycles.
#[test]
fn gtkw_leads_with_the_used_units_and_opens_on_the_first_long_wait() {
    let prog = load(&root().join("firmware/programs/seeds/warp_specialized_producer_consumer.ptx"));
    let (report, layout) = waves::record(&prog, Config::default(), SmConfig::sm90(), std::io::sink()).unwrap();
    let s = gtkw(&layout, &View { dumpfile: "x.vcd".into(), savefile: "x.gtkw".into(), window: None, marker: None });
    let titles: Vec<&str> = s.lines().zip(s.lines().skip(1)).filter(|(a, _)| *a == "@800200" || *a == "@c00200").map(|(_, b)| b.trim_start_matches('-')).collect();
    assert_eq!(titles, ["hopsync", "cta0 mbarrier", "cta0 smem_port", "cta0 named_barrier", "cta0 warps", "cluster0 cluster_barrier"], "{s}");
    assert!(s.contains("@c00200\n-cluster0 cluster_barrier\n") && s.contains("@1401200\n-cluster0 cluster_barrier\n"), "the idle unit is closed");
    assert!(s.contains("@800200\n-cta0 mbarrier\n"));
    let (from, to) = waves::story_window(&layout);
    let cycles = report.cycles.unwrap();
    // (the first request follows the entry's `div.u32` by a parameter: its reciprocal and its
    // sequence, about 140 cycles)
    let first = layout.first_activity.expect("the seed synchronizes");
    assert!(from > 0 && from < first && first - from <= 16, "starts just before the first request (cycle {first}): {from}");
    // The consumers' first long wait is on filled[0] (bar+0x10): its phase 0 closes when the
    // producer's fill of buffer 0 (three global loads) lands. Taken from the run's timeline (an
    // independent probe), not from the layout the window is computed from.
    let (_, trace) = hopsync_sim::timeline::run_rtl(&prog, Config::default(), SmConfig::sm90());
    let filled0 = hopsync_sim::timeline::MBAR_TID + 2;
    let phase0 = trace.trace_events.iter().find(|e| e.ph == "X" && e.pid == 1 && e.tid == filled0 && e.name == "phase 0").expect("filled[0] phase 0");
    let done = phase0.ts + phase0.dur.unwrap();
    assert!(done > 500 && to > done && to <= done + (done - from) / 8 + 64, "ends a little after the consumers' wait on filled[0] (closed at {done}): {to} of {cycles}");
    let p = layout.period_ps;
    assert!(s.contains(&format!("[timestart] {}\n", from * p)), "{s}");
    // GTKWave shows 4.7 ps x 2^-zoom (sim/src/waves.rs): the window fits, the run does not.
    let zoom: f64 = s.lines().find(|l| l.starts_with('*')).unwrap()[1..].split(' ').next().unwrap().parse().unwrap();
    let shown = 4.7 * 2f64.powf(-zoom) / p as f64;
    assert!(shown >= (to - from) as f64 && shown < cycles as f64, "shows {shown} cycles for a window of {} in a run of {cycles}", to - from);
}

/// A divergence's text names the VCD and the time range to open (and says how to record one when
/// none was written).
#[test]
fn divergence_text_names_the_file_and_window() {
    use hopsync_cosim::lockstep::{Divergence, WaveWindow};
    let mut d = Divergence {
        cycle: 100,
        cta: 0,
        warp: 1,
        pc: 7,
        instr: "mbarrier.arrive.shared.b64 %rd1, [bar];".into(),
        file: "p.ptx".into(),
        line: 30,
        ptx: String::new(),
        what: "register %rd1".into(),
        golden: "1".into(),
        rtl: "2".into(),
        waves: WaveWindow { from_cycle: 36, to_cycle: 104, from_ps: 36 * 505, to_ps: 104 * 505, file: None },
    };
    let t = d.to_string();
    assert!(t.contains("cycles 36..=104 (18180 ps .. 52520 ps)") && t.contains("--waves"), "{t}");
    d.waves.file = Some("out/x.vcd".into());
    let t = d.to_string();
    assert!(t.contains("cycles 36..=104 (18180 ps .. 52520 ps) in out/x.vcd") && t.contains("gtkwave out/x.vcd out/x.gtkw"), "{t}");
}
