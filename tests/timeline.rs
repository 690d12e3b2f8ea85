//! `hopsync run|cosim --timeline FILE.json` (issue 17 §3): the file is Chrome trace-event JSON,
//! parsed here as plain JSON (not with the writer's types), and its events agree with the run:
//! every warp of every CTA has a track with slices, the completed mbarrier phases are the
//! report's `phases_completed` (numbered 0, 1, ... per mbarrier, each after its init), every flow
//! has its start on an mbarrier track and its ends on warp tracks, no earlier than the start, each
//! TMA copy begins and ends, the bytes in flight never go below zero and end at zero, timestamps
//! never decrease along a track and slices of a track do not overlap, and nothing is later than
//! the run's last step or cycle.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the CLI with `--timeline` and `--json`; returns (report, trace).
fn run(args: &[&str], program: &str, tag: &str) -> (Value, Value) {
    let dir = root().join("target/timeline-test");
    std::fs::create_dir_all(&dir).unwrap();
    let (tl, js) = (dir.join(format!("{tag}.json")), dir.join(format!("{tag}.report.json")));
    let out = Command::new(env!("CARGO_BIN_EXE_hopsync"))
        .args(args)
        .arg(root().join("firmware/programs").join(program))
        .arg("--timeline")
        .arg(&tl)
        .arg("--json")
        .arg(&js)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{tag}: {text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("timeline: ") && text.contains("ui.perfetto.dev"), "{text}");
    let parse = |p: &PathBuf| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    (parse(&js), parse(&tl))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Checks a trace against its run report; returns a line describing it.
fn check(tag: &str, report: &Value, trace: &Value) -> String {
    let events = trace["traceEvents"].as_array().unwrap();
    let end = u(report.get("cycles").unwrap_or(&report["steps"]));
    let unit = trace["otherData"]["time_unit"].as_str().unwrap();
    assert_eq!(unit, if report.get("cycles").is_some() { "cycle" } else { "step" }, "{tag}");
    let track = |e: &Value| (u(&e["pid"]), u(&e["tid"]));
    // Named tracks.
    let named: BTreeMap<(u64, u64), String> =
        events.iter().filter(|e| e["ph"] == "M" && e["name"] == "thread_name").map(|e| (track(e), e["args"]["name"].as_str().unwrap().to_string())).collect();
    // Every warp has a track with at least one slice.
    let warps = u(&report["warps"]);
    let warp_tracks: BTreeSet<(u64, u64)> = named.iter().filter(|(_, n)| n.starts_with("warp ")).map(|(k, _)| *k).collect();
    assert_eq!(warp_tracks.len() as u64, warps, "{tag}: warp tracks {warp_tracks:?}");
    for t in &warp_tracks {
        assert!(events.iter().any(|e| e["ph"] == "X" && track(e) == *t), "{tag}: warp track {t:?} has no slice");
    }
    // Time order along each track, no overlapping slices, nothing past the end.
    let mut last: HashMap<(u64, u64), u64> = HashMap::new();
    let mut slice_end: HashMap<(u64, u64), u64> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] != "M") {
        let (k, ts) = (track(e), u(&e["ts"]));
        assert!(named.contains_key(&k) || e["ph"] == "C", "{tag}: event on an unnamed track: {e}");
        assert!(ts >= *last.get(&k).unwrap_or(&0), "{tag}: time goes back on track {k:?} ({} at {ts})", e["name"]);
        last.insert(k, ts);
        assert!(ts <= end, "{tag}: {e} after the run's end {end}");
        if e["ph"] == "X" {
            let d = u(&e["dur"]);
            assert!(ts >= *slice_end.get(&k).unwrap_or(&0), "{tag}: slices overlap on track {k:?} at {ts}");
            slice_end.insert(k, ts + d);
            assert!(ts + d <= end, "{tag}: slice {e} ends after {end}");
        }
    }
    // mbarrier phases: completed ones are the report's; numbered 0, 1, ... on each mbarrier track.
    let phases: Vec<&Value> = events.iter().filter(|e| e["cat"] == "phase").collect();
    let completed = phases.iter().filter(|e| e["args"]["completed"] == true).count() as u64;
    assert_eq!(completed, u(&report["phases_completed"]), "{tag}: completed phase slices");
    assert_eq!(u(&trace["otherData"]["phases_completed"]), completed, "{tag}");
    let mut per: BTreeMap<(u64, u64), Vec<u64>> = BTreeMap::new();
    for p in &phases {
        assert!(named[&track(p)].starts_with("mbarrier "), "{tag}: phase on {:?}", named[&track(p)]);
        per.entry(track(p)).or_default().push(u(&p["args"]["phase"]));
    }
    for (k, v) in &per {
        let inits = events.iter().filter(|e| e["ph"] == "i" && e["name"] == "init" && track(e) == *k).count();
        assert!(inits >= 1, "{tag}: mbarrier track {k:?} without init");
        assert!(v.windows(2).all(|w| w[1] == w[0] + 1 || w[1] == 0), "{tag}: phases of {k:?}: {v:?}");
    }
    // Flows: one start on an mbarrier track, ends on warp tracks, not earlier.
    let mut flows: BTreeMap<u64, (Vec<&Value>, Vec<&Value>)> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        let f = flows.entry(u(&e["id"])).or_default();
        if e["ph"] == "s" { f.0.push(e) } else { f.1.push(e) }
    }
    let mut wakes = 0;
    for (id, (s, f)) in &flows {
        assert_eq!(s.len(), 1, "{tag}: flow {id} starts {} times", s.len());
        assert!(named[&track(s[0])].starts_with("mbarrier "), "{tag}: flow {id} starts on {}", named[&track(s[0])]);
        for e in f {
            assert!(warp_tracks.contains(&track(e)), "{tag}: flow {id} ends off a warp track");
            assert!(u(&e["ts"]) >= u(&s[0]["ts"]), "{tag}: flow {id} ends before it starts");
            assert_eq!(e["bp"], "e");
        }
        wakes += f.len();
    }
    // TMA copies begin and end; bytes in flight stay >= 0 and end at 0 per CTA.
    let mut open: HashMap<u64, u64> = HashMap::new();
    let mut copies = 0;
    for e in events.iter().filter(|e| e["cat"] == "tma") {
        match e["ph"].as_str().unwrap() {
            "b" => {
                assert!(open.insert(u(&e["id"]), u(&e["ts"])).is_none());
                assert!(e["args"]["bytes"].as_u64().is_some(), "{tag}: {e}");
                copies += 1;
            }
            "e" => {
                let b = open.remove(&u(&e["id"])).unwrap_or_else(|| panic!("{tag}: copy {} ends without a begin", e["id"]));
                assert!(u(&e["ts"]) >= b);
            }
            "C" => assert!(e["args"]["bytes"].as_i64().unwrap() >= 0, "{tag}: negative bytes in flight: {e}"),
            p => panic!("{tag}: TMA event of phase {p}"),
        }
    }
    assert!(open.is_empty(), "{tag}: copies that never end: {open:?}");
    let mut level: BTreeMap<u64, i64> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "C") {
        level.insert(u(&e["pid"]), e["args"]["bytes"].as_i64().unwrap());
    }
    assert!(level.values().all(|v| *v == 0), "{tag}: bytes in flight at the end: {level:?}");
    format!("{tag}: {} events, {warps} warp tracks, {completed} phases, {} flows ({wakes} wakes), {copies} TMA copies", events.len(), flows.len())
}

#[test]
fn timeline_events_agree_with_the_run_on_every_engine() {
    let programs = [
        "seeds/warp_specialized_producer_consumer.ptx",
        "seeds/st_async_ring8.ptx",
        "seeds/cp_async_mbarrier_arrive.ptx",
        "tma/pipeline_3stage_warp_specialized.ptx",
        "tma/multicast_4cta.ptx",
        "tma/bulk_async_groups.ptx",
    ];
    for (k, p) in programs.iter().enumerate() {
        for (e, args) in [("golden", &["run"][..]), ("golden-seed", &["run", "--seed", "3"][..]), ("rtl", &["run", "--engine", "rtl"][..])] {
            let (report, trace) = run(args, p, &format!("{k}-{e}"));
            println!("{}", check(&format!("{p} {e}"), &report, &trace));
        }
    }
}

#[test]
fn cosim_timeline_is_the_rtl_engines() {
    let p = "seeds/warp_specialized_producer_consumer.ptx";
    let (report, trace) = run(&["cosim"], p, "cosim");
    println!("{}", check(&format!("{p} cosim"), &report, &trace));
    assert_eq!(report["divergences"], Value::Array(vec![]));
    let (_, rtl) = run(&["run", "--engine", "rtl"], p, "cosim-rtl");
    // The same engine run: the same events.
    assert_eq!(trace["traceEvents"], rtl["traceEvents"]);
    // What the warp-specialized pipeline shows: the consumers wait on the full barriers, the
    // producer on the empty ones, and each completed phase wakes someone.
    let events = trace["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["ph"] == "X" && e["name"] == "TryWaitSuspended"));
    let starts = events.iter().filter(|e| e["ph"] == "s").count();
    let ends = events.iter().filter(|e| e["ph"] == "f").count();
    assert!(starts == u(&report["phases_completed"]) as usize && ends >= starts, "{starts} completions, {ends} wakes");
}

#[test]
fn timeline_and_waves_are_one_at_a_time() {
    let p = root().join("firmware/programs/seeds/bar_sync.ptx");
    let out = Command::new(env!("CARGO_BIN_EXE_hopsync"))
        .args(["run", p.to_str().unwrap(), "--engine", "rtl", "--timeline", "/nonexistent/t.json", "--waves", "/nonexistent/w.vcd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one at a time"));
}
