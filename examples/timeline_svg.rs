//! A static preview of a `--timeline` trace as SVG (Perfetto's UI needs the network; this draws
//! the same tracks for the README: docs/timeline.png).
//!
//! `cargo run --example timeline_svg -- TRACE.json OUT.svg [FROM TO]`: every track of every CTA
//! (warps, mbarriers, TMA unit), slices coloured by name, instants as ticks, flows as lines from
//! a phase completion to the wakes it caused, over the times FROM..TO (default: the whole run).

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

const LABEL: f64 = 230.0;
const WIDTH: f64 = 1400.0;
const LANE: f64 = 20.0;

fn colour(name: &str) -> &'static str {
    match name {
        "Active" => "#4caf50",
        "MbarrierPoll" => "#ff9800",
        "MbarrierWait" | "ScoreboardDep" | "Branch" => "#aed581",
        "TryWaitSuspended" => "#ffd54f",
        "BarrierWait" | "ClusterBarrierWait" => "#e57373",
        "AsyncWait" => "#ba68c8",
        "UnitBackpressure" | "MemoryThrottle" => "#90a4ae",
        "Reconverge" => "#4db6ac",
        "NotLaunched" | "Exited" => "#eeeeee",
        n if n.starts_with("phase") => "#64b5f6",
        _ => "#7986cb",
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output, rest @ ..] = args.as_slice() else {
        eprintln!("usage: timeline_svg TRACE.json OUT.svg [FROM TO]");
        std::process::exit(2);
    };
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(input).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let num = |v: &Value| v.as_u64().unwrap_or(0);
    let end = events.iter().map(|e| num(&e["ts"]) + num(&e["dur"])).max().unwrap_or(1);
    let (from, to) = match rest {
        [a, b] => (a.parse().unwrap(), b.parse().unwrap()),
        _ => (0u64, end.max(1)),
    };
    // Tracks in order: (pid, tid) -> lane.
    let mut names: BTreeMap<(u64, u64), String> = BTreeMap::new();
    let mut procs: BTreeMap<u64, String> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let name = e["args"]["name"].as_str().unwrap_or("").to_string();
        match e["name"].as_str() {
            Some("thread_name") => drop(names.insert((num(&e["pid"]), num(&e["tid"])), name)),
            Some("process_name") => drop(procs.insert(num(&e["pid"]), name)),
            _ => {}
        }
    }
    let mut lanes: BTreeMap<(u64, u64), f64> = BTreeMap::new();
    let mut y = 40.0;
    let mut o = String::new();
    let mut body = String::new();
    for (pid, pname) in &procs {
        let _ = writeln!(body, r##"<text x="6" y="{}" font-size="12" font-weight="bold">{pname}</text>"##, y + 14.0);
        y += LANE;
        for ((p, tid), name) in names.iter().filter(|((p, _), _)| p == pid) {
            lanes.insert((*p, *tid), y);
            let _ = writeln!(body, r##"<text x="14" y="{}" font-size="11">{name}</text><rect x="{LABEL}" y="{y}" width="{}" height="{}" fill="#fafafa"/>"##, y + 14.0, WIDTH - LABEL - 10.0, LANE - 2.0);
            y += LANE;
        }
        y += 6.0;
    }
    let sx = |t: u64| LABEL + (t.clamp(from, to) - from) as f64 * (WIDTH - LABEL - 10.0) / (to - from) as f64;
    let lane = |e: &Value| lanes.get(&(num(&e["pid"]), num(&e["tid"]))).copied();
    let mut open: BTreeMap<u64, (u64, String)> = BTreeMap::new();
    let mut starts: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for e in events {
        let (ts, name) = (num(&e["ts"]), e["name"].as_str().unwrap_or(""));
        let Some(ly) = lane(e) else { continue };
        match e["ph"].as_str().unwrap_or("") {
            "X" => {
                let (a, b) = (sx(ts), sx(ts + num(&e["dur"])));
                if b > a {
                    let _ = writeln!(body, r##"<rect x="{a:.1}" y="{ly}" width="{:.1}" height="{}" fill="{}" stroke="#ffffff" stroke-width="0.3"><title>{name} {ts}+{}</title></rect>"##, b - a, LANE - 2.0, colour(name), num(&e["dur"]));
                    if b - a > 60.0 && name.starts_with("phase") {
                        let _ = writeln!(body, r##"<text x="{:.1}" y="{}" font-size="10">{name}</text>"##, a + 3.0, ly + 13.0);
                    }
                }
            }
            "i" if (from..=to).contains(&ts) => {
                let x = sx(ts);
                let _ = writeln!(body, r##"<path d="M{x:.1} {} l-3 6 h6 z" fill="#333"><title>{name} at {ts}</title></path>"##, ly + 11.0);
            }
            "b" => drop(open.insert(num(&e["id"]), (ts, name.to_string()))),
            "e" => {
                if let Some((b, n)) = open.remove(&num(&e["id"])) {
                    let (a, c) = (sx(b), sx(ts));
                    let _ = writeln!(body, r##"<rect x="{a:.1}" y="{}" width="{:.1}" height="{}" fill="#26a69a" opacity="0.6"><title>{n} {b}..{ts}</title></rect>"##, ly + 3.0, (c - a).max(1.0), LANE - 8.0);
                }
            }
            "s" => drop(starts.insert(num(&e["id"]), (sx(ts), ly + LANE / 2.0))),
            "f" => {
                if let Some((x0, y0)) = starts.get(&num(&e["id"])) {
                    if (from..=to).contains(&ts) {
                        let _ = writeln!(body, r##"<path d="M{x0:.1} {y0} L{:.1} {}" stroke="#c62828" stroke-width="1" fill="none" marker-end="url(#arrow)"/>"##, sx(ts), ly + LANE / 2.0);
                    }
                }
            }
            _ => {}
        }
    }
    let height = y + 30.0;
    let unit = trace["otherData"]["time_unit"].as_str().unwrap_or("");
    let _ = writeln!(o, r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="DejaVu Sans, sans-serif">"##);
    let _ = writeln!(o, r##"<defs><marker id="arrow" markerWidth="6" markerHeight="6" refX="5" refY="3" orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#c62828"/></marker></defs>"##);
    let _ = writeln!(o, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(o, r##"<text x="6" y="20" font-size="13" font-weight="bold">{} ({} engine): {unit}s {from}..{to}</text>"##, trace["otherData"]["program"].as_str().unwrap_or(""), trace["otherData"]["engine"].as_str().unwrap_or(""));
    for k in 0..=10 {
        let t = from + (to - from) * k / 10;
        let _ = writeln!(o, r##"<text x="{:.1}" y="{}" font-size="10" text-anchor="middle">{t}</text>"##, sx(t), height - 10.0);
    }
    o.push_str(&body);
    o.push_str("</svg>\n");
    std::fs::write(output, o).unwrap();
    println!("{output}");
}
