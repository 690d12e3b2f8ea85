//! Bad programs: every file under `firmware/programs/bad/` declares, in a plain comment line (not
//! the manifest: some manifests are broken on purpose), what it must produce:
//!
//! ```text
//! // expect-error: <text the parse / validation / memory-budget diagnostic must contain>
//! // expect-finding: <FindingKind name the golden run must stop with first>
//! // max-steps: <N>   (optional: the run's step budget, `--max-steps N`)
//! ```
//!
//! Also: the `hopsync` binary's exit codes on them (2 for errors, 1 for findings, never a panic),
//! and that no input makes the parser panic (every line-prefix of the good programs, and a few
//! hundred seeded byte mutations of them).

use hopsync_cosim::budget::{Footprint, DEFAULT_MEM_LIMIT};
use hopsync_cosim::finding::FindingKind;
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::Program;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Error(String),
    Finding(String),
}

/// The step budget a bad program asks for (`// max-steps: N`), if any.
fn max_steps(path: &Path) -> Option<u64> {
    let src = std::fs::read_to_string(path).unwrap();
    src.lines().find_map(|l| l.trim().strip_prefix("// max-steps:").map(|n| n.trim().parse().expect("max-steps takes a number")))
}

/// A program's golden run configuration: the defaults, with its step budget.
fn config(path: &Path) -> Config {
    Config { max_steps: max_steps(path).unwrap_or(Config::default().max_steps), ..Config::default() }
}

/// Every bad program with its expectation, sorted by file name. Panics on a file without exactly
/// one expect line.
fn bad_programs() -> Vec<(PathBuf, Expect)> {
    let dir = root().join("firmware/programs/bad");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let src = std::fs::read_to_string(&p).unwrap();
            let expects: Vec<Expect> = src
                .lines()
                .filter_map(|l| {
                    let l = l.trim();
                    if let Some(t) = l.strip_prefix("// expect-error:") {
                        Some(Expect::Error(t.trim().to_string()))
                    } else {
                        l.strip_prefix("// expect-finding:").map(|t| Expect::Finding(t.trim().to_string()))
                    }
                })
                .collect();
            assert_eq!(expects.len(), 1, "{}: needs exactly one `// expect-error:` or `// expect-finding:` line", p.display());
            let e = expects.into_iter().next().unwrap();
            let (Expect::Error(t) | Expect::Finding(t)) = &e;
            assert!(!t.is_empty(), "{}: empty expectation", p.display());
            (p, e)
        })
        .collect()
}

/// The `LINE:COL` after ` --> FILE:` in a rendered diagnostic.
fn rendered_loc(text: &str, file: &str) -> Option<(u32, u32)> {
    let key = format!(" --> {file}:");
    let rest = &text[text.find(&key)? + key.len()..];
    let mut it = rest.split(|c: char| !c.is_ascii_digit());
    let line = it.next()?.parse().ok()?;
    let col = it.next()?.parse().ok()?;
    Some((line, col))
}

/// What is wrong with one bad program's outcome, if anything.
fn check_one(path: &Path, expect: &Expect) -> Option<String> {
    let name = path.display().to_string();
    match expect {
        Expect::Error(text) => {
            // A program that loads must be refused by the golden run's memory budget.
            let d = match Program::load(path) {
                Ok(p) => match Footprint::golden(&p).check(&p, "golden", DEFAULT_MEM_LIMIT) {
                    Ok(()) => return Some(format!("{name}: parsed and fits the memory budget, but must fail with `{text}`")),
                    Err(d) => d,
                },
                Err(d) => d,
            };
            let r = format!("{d}");
            if !r.starts_with("error:") {
                return Some(format!("{name}: diagnostic does not start with `error:`:\n{r}"));
            }
            if !r.contains(text.as_str()) {
                return Some(format!("{name}: diagnostic lacks `{text}`:\n{r}"));
            }
            match rendered_loc(&r, &name) {
                Some((line, col)) if line > 0 && col > 0 => {}
                _ => return Some(format!("{name}: diagnostic lacks ` --> {name}:LINE:COL` with a nonzero line:\n{r}")),
            }
            // rustc style: the offending source line and a caret under it.
            if !r.lines().any(|l| l.trim_start().starts_with("| ") && l.trim_end().ends_with('^')) {
                return Some(format!("{name}: diagnostic lacks the source line and caret:\n{r}"));
            }
            None
        }
        Expect::Finding(kind) => {
            if FindingKind::from_name(kind).is_none() {
                return Some(format!("{name}: `{kind}` is not a FindingKind"));
            }
            let prog = match Program::load(path) {
                Ok(p) => p,
                Err(d) => return Some(format!("{name}: must parse (it expects finding {kind}) but:\n{d}")),
            };
            let r = run_golden(&prog, config(path));
            if r.status != "fault" {
                return Some(format!("{name}: status `{}`, expected `fault` with {kind}\n{}", r.status, r.summary()));
            }
            let Some(f) = r.findings.first() else {
                return Some(format!("{name}: fault without a finding\n{}", r.summary()));
            };
            if f.kind.name() != kind {
                return Some(format!("{name}: first finding is {}, expected {kind}\n{}", f.kind.name(), r.summary()));
            }
            if f.message.trim().is_empty() {
                return Some(format!("{name}: finding {kind} has an empty message"));
            }
            if f.kind != FindingKind::Deadlock && f.location.line == 0 {
                return Some(format!("{name}: finding {kind} has no source line\n{}", r.summary()));
            }
            if f.kind == FindingKind::Deadlock {
                return deadlock_lists_every_warp(&prog, &f.message).map(|e| format!("{name}: {e}"));
            }
            None
        }
    }
}

/// A deadlock report names every warp still alive (in these programs: every warp), where it is,
/// what it waits on and that object's state.
fn deadlock_lists_every_warp(prog: &Program, message: &str) -> Option<String> {
    let warps_per_cta = prog.manifest.threads_per_cta().div_ceil(32);
    for cta in 0..prog.manifest.ctas() {
        for w in 0..warps_per_cta {
            let who = format!("cta {cta} warp {w} at pc ");
            let Some(line) = message.lines().find(|l| l.contains(&who)) else {
                return Some(format!("deadlock message does not list {who}:\n{message}"));
            };
            let says_state = line.contains("named barrier") && line.contains("threads arrived")
                || line.contains("mbarrier") && line.contains("pending") && line.contains("phase");
            if !says_state || !line.contains("(line ") {
                return Some(format!("`{line}` does not give the instruction's line, what the warp waits on and the object's state"));
            }
        }
    }
    None
}

#[test]
fn there_are_enough_bad_programs() {
    let all = bad_programs();
    let errors = all.iter().filter(|(_, e)| matches!(e, Expect::Error(_))).count();
    let findings = all.len() - errors;
    assert!(all.len() >= 45, "only {} bad programs (want at least 45)", all.len());
    assert!(errors > 0 && findings > 0, "{errors} expect-error and {findings} expect-finding programs");
}

#[test]
fn bad_programs_produce_their_diagnostic_or_finding() {
    let all = bad_programs();
    // Two workers: the golden runs (one spins two million steps into its deadlock) dominate.
    let (a, b): (Vec<_>, Vec<_>) = all.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let work = |part: Vec<(usize, &(PathBuf, Expect))>| part.into_iter().filter_map(|(_, (p, e))| check_one(p, e)).collect::<Vec<_>>();
    let mut problems = std::thread::scope(|s| {
        let h = s.spawn(|| work(b));
        let mut v = work(a);
        v.extend(h.join().unwrap());
        v
    });
    problems.sort();
    assert!(problems.is_empty(), "{} of {} bad programs misbehave:\n\n{}", problems.len(), all.len(), problems.join("\n\n"));
}

/// The device heap's misuses are named for what they are (cosim/src/heap.rs): the finding's
/// message, not only its kind.
#[test]
fn heap_misuse_is_named() {
    for (file, says) in [
        ("heap_double_free.ptx", "was freed already (double free)"),
        ("heap_free_interior.ptx", "points inside the allocation at 0x7c0000000000, not at its start"),
        ("heap_use_after_free.ptx", "use after free: it lies in the block at 0x7c0000000000 that `free` released"),
    ] {
        let path = root().join("firmware/programs/bad").join(file);
        let prog = Program::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let r = run_golden(&prog, config(&path));
        let f = r.findings.first().unwrap_or_else(|| panic!("{file}: no finding: {}", r.summary()));
        assert!(f.message.contains(says), "{file}: {}", f.message);
    }
}

#[test]
fn the_binary_exits_2_on_errors_and_1_on_findings() {
    let all = bad_programs();
    let (a, b): (Vec<_>, Vec<_>) = all.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let work = |part: Vec<(usize, &(PathBuf, Expect))>| part.into_iter().flat_map(|(_, (p, e))| run_binary(p, e)).collect::<Vec<_>>();
    let mut problems = std::thread::scope(|s| {
        let h = s.spawn(|| work(b));
        let mut v = work(a);
        v.extend(h.join().unwrap());
        v
    });
    problems.sort();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Runs `hopsync run` on one bad program; returns what is wrong.
fn run_binary(path: &Path, e: &Expect) -> Vec<String> {
    let mut problems = Vec::new();
    let rel = path.strip_prefix(root()).unwrap().to_path_buf();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hopsync"));
    cmd.arg("run").arg(&rel).current_dir(root());
    if let Some(n) = max_steps(path) {
        cmd.arg("--max-steps").arg(n.to_string());
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want = match e {
        Expect::Error(_) => 2,
        Expect::Finding(_) => 1,
    };
    let code = out.status.code();
    if code != Some(want) {
        problems.push(format!("{}: exit {code:?}, want {want}\n{stdout}{stderr}", rel.display()));
    }
    if stdout.contains("panicked") || stderr.contains("panicked") {
        problems.push(format!("{}: panicked\n{stdout}{stderr}", rel.display()));
    }
    match e {
        Expect::Error(t) if !stderr.contains(t.as_str()) => problems.push(format!("{}: stderr lacks `{t}`:\n{stderr}", rel.display())),
        Expect::Finding(k) if !stdout.contains(&format!("finding {k}:")) => {
            problems.push(format!("{}: stdout lacks `finding {k}:`:\n{stdout}", rel.display()))
        }
        _ => {}
    }
    problems
}

/// The good programs: every `.ptx` under firmware/programs/seeds and firmware/programs/demo.
fn good_programs() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for d in ["firmware/programs/seeds", "firmware/programs/demo"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(d))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
            .collect();
        files.sort();
        for p in files {
            v.push((p.display().to_string(), std::fs::read_to_string(&p).unwrap()));
        }
    }
    assert!(!v.is_empty(), "no good programs found");
    v
}

/// Parses `src` under `catch_unwind`; a panic is returned as its message.
fn parse_without_panic(name: &str, src: &str) -> Result<(), String> {
    std::panic::catch_unwind(|| {
        let _ = Program::parse(name, src);
    })
    .map_err(|p| {
        p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "(non-string panic)".into())
    })
}

#[test]
fn the_parser_never_panics() {
    let good = good_programs();
    let mut panics = Vec::new();
    // Every truncation at a line boundary (and mid-line, before the last character of each line).
    for (name, src) in &good {
        let mut cut = 0;
        for line in src.split_inclusive('\n') {
            let body = line.trim_end_matches('\n');
            for end in [cut + body.len().saturating_sub(1), cut + line.len()] {
                if let Some(prefix) = src.get(..end) {
                    if let Err(m) = parse_without_panic(name, prefix) {
                        panics.push(format!("{name} truncated to {end} bytes: {m}"));
                    }
                }
            }
            cut += line.len();
        }
        assert!(Program::parse(name, src).is_ok(), "{name} must parse");
    }
    // Seeded byte mutations: overwrite, delete, insert or duplicate bytes, biased towards the
    // characters PTX and TOML give meaning to.
    const SPICE: &[u8] = b";,[]{}()<>@!|:.%_-+=\"'/*#\n\t 0123456789xXfFabc$\\";
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut rnd = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n.max(1) as u64) as usize
    };
    let mut tried = 0;
    for round in 0..400 {
        let (name, src) = &good[round % good.len()];
        let mut b = src.as_bytes().to_vec();
        for _ in 0..1 + rnd(4) {
            if b.is_empty() {
                break;
            }
            let at = rnd(b.len());
            match rnd(5) {
                0 => b[at] = SPICE[rnd(SPICE.len())],
                1 => b[at] = rnd(256) as u8,
                2 => {
                    b.remove(at);
                }
                3 => b.insert(at, SPICE[rnd(SPICE.len())]),
                _ => {
                    let len = 1 + rnd(24);
                    let piece: Vec<u8> = b[at..(at + len).min(b.len())].to_vec();
                    let to = rnd(b.len());
                    b.splice(to..to, piece);
                }
            }
        }
        let text = String::from_utf8_lossy(&b).into_owned();
        tried += 1;
        if let Err(m) = parse_without_panic(name, &text) {
            panics.push(format!("{name} mutation {round}: {m}\n--- input ---\n{text}"));
        }
    }
    assert_eq!(tried, 400);
    assert!(panics.is_empty(), "{} inputs made the parser panic:\n{}", panics.len(), panics.join("\n\n"));
}
