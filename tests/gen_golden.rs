//! The random program generator (`hopsync_cosim::gen`) against the golden engine.
//!
//! Legal programs: each must be deterministic text, parse, round-trip through the printer
//! (`parse(print(parse)) == parse`), run to completion on the golden engine with no finding and
//! the manifest's expected outputs, in the deterministic schedule and under two seeded random
//! interleavings (which must also reproduce the deterministic outputs byte for byte).
//!
//! UB programs: each carries a `// expect-finding: Kind` line equal to what `generate` returns,
//! and every run (deterministic and two seeds) must stop with exactly that finding first.
//!
//! Runs are sequential (no data parallelism) and the seeds are fixed, so a failure names a seed
//! that `hopsync gen --seed N [--ub] --small` reproduces.

use hopsync_cosim::finding::FindingKind;
use hopsync_cosim::gen::{generate, ub_finding_kinds, GenOptions, Pattern};
use hopsync_cosim::machine::{Config, Machine};
use hopsync_cosim::report::{run_golden, RunReport};
use hopsync_firmware::parser::parse_module;
use hopsync_firmware::printer::print_module;
use hopsync_firmware::Program;
use std::collections::BTreeMap;
use std::time::Instant;

/// Legal programs in the default run.
const LEGAL: u64 = 1000;
/// UB programs in the default run.
const UB: u64 = 300;
/// Seeded interleavings per program.
const SEEDS: u64 = 2;
/// Steps without progress that make a spinning program a deadlock in the UB runs (the default,
/// 2e6, would make every "missing arrive" program spin for seconds).
const UB_SPIN_LIMIT: u64 = 100_000;
/// Static shared memory a kernel may declare (48 KiB).
const SMEM_LIMIT: u32 = 48 * 1024;

/// Why a report is not a clean pass.
fn problems(r: &RunReport) -> Vec<String> {
    let mut v = Vec::new();
    if r.status != "ok" {
        v.push(format!("status {}{}", r.status, r.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()));
    }
    for c in r.checks.iter().filter(|c| !c.matches) {
        v.push(format!("output `{}` differs at byte {} (expected {} got {})", c.buffer, c.first_difference.unwrap_or(0), c.expected, c.actual));
    }
    for f in &r.findings {
        v.push(format!("{f}"));
    }
    v
}

/// Checks one legal program; returns the patterns it used, or what went wrong.
fn check_legal(seed: u64, opts: &GenOptions) -> Result<Vec<String>, String> {
    let g = generate(seed, opts);
    let fail = |what: String| Err(format!("legal seed {seed}: {what}\n  {}", g.description));
    if g.expect_finding.is_some() {
        return fail("a legal program expects a finding".into());
    }
    if generate(seed, opts) != g {
        return fail("not deterministic: a second generation differs".into());
    }
    let name = format!("gen_{seed}.ptx");
    let prog = match Program::parse(&name, &g.text) {
        Ok(p) => p,
        Err(d) => return fail(format!("does not parse:\n{d}")),
    };
    let printed = print_module(&prog.module);
    match parse_module(&printed) {
        Ok(m) if m == prog.module => {}
        Ok(_) => return fail("parse(print(parse)) differs from parse".into()),
        Err(d) => return fail(format!("the printed program does not parse:\n{d}\n{printed}")),
    }
    if !prog.manifest.buffers.iter().any(|b| b.expect.is_some()) {
        return fail("states no expected output".into());
    }
    let smem = Machine::new(&prog, Config::default()).smem_size();
    if smem > SMEM_LIMIT {
        return fail(format!("{smem} bytes of static shared memory, over sm_90's {SMEM_LIMIT}"));
    }
    let base = run_golden(&prog, Config::default());
    let mut errs: Vec<String> = problems(&base).into_iter().map(|p| format!("deterministic: {p}")).collect();
    for k in 1..=SEEDS {
        let s = seed.wrapping_mul(SEEDS).wrapping_add(k);
        let r = run_golden(&prog, Config { seed: Some(s), ..Config::default() });
        errs.extend(problems(&r).into_iter().map(|p| format!("interleaving seed {s}: {p}")));
        if r.status == "ok" && base.status == "ok" && r.outputs != base.outputs {
            errs.push(format!("interleaving seed {s}: outputs differ from the deterministic schedule's"));
        }
    }
    if !errs.is_empty() {
        return fail(errs.join("\n  "));
    }
    Ok(Pattern::ALL.iter().filter(|p| g.description.contains(&format!("[{}]", p.name()))).map(|p| p.name().to_string()).collect())
}

/// Checks one UB program; returns its expected finding, or what went wrong.
fn check_ub(seed: u64, opts: &GenOptions) -> Result<FindingKind, String> {
    let g = generate(seed, opts);
    let fail = |what: String| Err(format!("ub seed {seed}: {what}\n  {}", g.description));
    let Some(kind) = g.expect_finding else { return fail("UB mode produced no expected finding".into()) };
    let line = format!("// expect-finding: {}", kind.name());
    if !g.text.lines().any(|l| l.trim() == line) {
        return fail(format!("the text lacks `{line}`"));
    }
    let prog = match Program::parse(&format!("gen_ub_{seed}.ptx"), &g.text) {
        Ok(p) => p,
        Err(d) => return fail(format!("does not parse:\n{d}")),
    };
    match parse_module(&print_module(&prog.module)) {
        Ok(m) if m == prog.module => {}
        _ => return fail("does not round-trip through the printer".into()),
    }
    let smem = Machine::new(&prog, Config::default()).smem_size();
    if smem > SMEM_LIMIT {
        return fail(format!("{smem} bytes of static shared memory, over sm_90's {SMEM_LIMIT}"));
    }
    let mut errs = Vec::new();
    for s in std::iter::once(None).chain((1..=SEEDS).map(|k| Some(seed.wrapping_mul(SEEDS).wrapping_add(k)))) {
        let r = run_golden(&prog, Config { seed: s, spin_limit: UB_SPIN_LIMIT, ..Config::default() });
        let first = r.findings.first().map(|f| f.kind);
        if r.status != "fault" || first != Some(kind) {
            errs.push(format!(
                "schedule {s:?}: status {}, first finding {:?}, expected {}{}",
                r.status,
                first.map(|k| k.name()),
                kind.name(),
                r.findings.first().map(|f| format!("\n    {f}")).unwrap_or_default()
            ));
        }
    }
    if !errs.is_empty() {
        return fail(errs.join("\n  "));
    }
    Ok(kind)
}

fn run_legal(range: std::ops::Range<u64>, opts: &GenOptions) -> BTreeMap<String, u64> {
    let t0 = Instant::now();
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for seed in range.clone() {
        match check_legal(seed, opts) {
            Ok(pats) => {
                for p in pats {
                    *seen.entry(p).or_default() += 1;
                }
            }
            Err(e) => failures.push(e),
        }
    }
    eprintln!("{} legal programs in {:.1} s; patterns: {seen:?}", range.end - range.start, t0.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{} of {} legal programs fail:\n{}", failures.len(), range.end - range.start, failures.iter().take(10).cloned().collect::<Vec<_>>().join("\n"));
    seen
}

fn run_ub(range: std::ops::Range<u64>, opts: &GenOptions) -> BTreeMap<&'static str, u64> {
    let t0 = Instant::now();
    let mut seen: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for seed in range.clone() {
        match check_ub(seed, opts) {
            Ok(k) => *seen.entry(k.name()).or_default() += 1,
            Err(e) => failures.push(e),
        }
    }
    eprintln!("{} UB programs in {:.1} s; findings: {seen:?}", range.end - range.start, t0.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{} of {} UB programs fail:\n{}", failures.len(), range.end - range.start, failures.iter().take(10).cloned().collect::<Vec<_>>().join("\n"));
    seen
}

#[test]
fn gen_legal_programs_pass_golden() {
    let seen = run_legal(0..LEGAL, &GenOptions::small());
    for p in Pattern::ALL {
        assert!(seen.contains_key(p.name()), "no legal program used pattern `{}`: {seen:?}", p.name());
    }
}

#[test]
fn gen_ub_programs_stop_with_their_finding() {
    let seen = run_ub(0..UB, &GenOptions::small().with_ub(true));
    for k in ub_finding_kinds() {
        assert!(seen.contains_key(k.name()), "no UB program produced {}: {seen:?}", k.name());
    }
}

#[test]
fn gen_full_size_programs_pass_golden() {
    // Programs of the full range (1-32 warps x 1-16 CTAs, skewed small), and a few of the top of
    // it only (16-32 warps x 8-16 CTAs).
    run_legal(0..40, &GenOptions::default());
    run_ub(0..40, &GenOptions::default().with_ub(true));
    run_legal(0..4, &GenOptions::large());
    run_ub(0..4, &GenOptions::large().with_ub(true));
}

#[test]
#[ignore]
fn long_gen_golden_1e5() {
    run_legal(LEGAL..LEGAL + 100_000, &GenOptions::small());
    run_ub(UB..UB + 10_000, &GenOptions::small().with_ub(true));
}

#[test]
fn gen_cli_writes_the_generated_program() {
    let dir = std::env::temp_dir().join(format!("hopsync-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (seed, ub) in [(5u64, false), (7, true)] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hopsync"));
        cmd.args(["gen", "--seed", &seed.to_string(), "--small"]);
        if ub {
            cmd.arg("--ub");
        }
        let printed = cmd.output().unwrap();
        assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
        let g = generate(seed, &GenOptions::small().with_ub(ub));
        assert_eq!(String::from_utf8_lossy(&printed.stdout), g.text);
        let file = dir.join(format!("g{seed}.ptx"));
        let written = cmd.arg("--out").arg(&file).output().unwrap();
        assert!(written.status.success() && written.stdout.is_empty());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), g.text);
        // `hopsync run` agrees: exit 0 for the legal program, 1 (a finding) for the UB one.
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_hopsync")).arg("run").arg(&file).output().unwrap();
        assert_eq!(run.status.code(), Some(if ub { 1 } else { 0 }), "{}", String::from_utf8_lossy(&run.stdout));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Golden-model bugs the generator found, as fixed programs (non-aligned named barriers whose
/// warp arrival completes at another instruction or through exits, PTX 9.7.13.1). Each must meet
/// its expectations in the deterministic schedule and seeded ones.
const REGRESSIONS: &[(&str, &str)] = &[
    (
        "divergent_barrier_red_two_instructions",
        r#"//! description = "lanes 0-10 and 11-31 reach barrier.red.popc 1 at different instructions with different predicates and destinations: each lane contributes its own predicate (lane < 11: tid odd; else tid even) and gets popc = 5 + 10 = 15 in its own destination (the completing instruction's predicate for every lane would give 16)"
//! [launch]
//! grid = [1, 1, 1]
//! block = [32, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 128
//! type = "u32"
//! output = true
//! expect = [15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15]
//! [[param]]
//! name = "out_ptr"
//! buffer = "out"
.version 8.1
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out_ptr)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	mov.u32 %r0, %tid.x;
	and.b32 %r1, %r0, 1;
	setp.eq.u32 %p1, %r1, 1;
	setp.eq.u32 %p2, %r1, 0;
	setp.lt.u32 %p0, %r0, 11;
	@%p0 bra A;
	barrier.red.popc.u32 %r2, 1, %p2;
	bra J;
A:
	barrier.cta.red.popc.u32 %r3, 1, %p1;
	mov.u32 %r2, %r3;
J:
	ld.param.u64 %rd0, [out_ptr];
	cvta.to.global.u64 %rd0, %rd0;
	mul.wide.u32 %rd1, %r0, 4;
	add.s64 %rd0, %rd0, %rd1;
	st.global.u32 [%rd0], %r2;
	ret;
}
"#,
    ),
    (
        "barrier_red_completed_by_exits",
        r#"//! description = "warp 0 lanes 16-31 exit after lanes 0-15 wait at a non-aligned barrier.red.popc: 48 threads take part, all with a true predicate"
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! type = "u32"
//! output = true
//! expect = [48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48]
//! [[param]]
//! name = "out_ptr"
//! buffer = "out"
.version 8.1
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out_ptr)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	mov.u32 %r0, %tid.x;
	and.b32 %r1, %r0, 31;
	ld.param.u64 %rd0, [out_ptr];
	cvta.to.global.u64 %rd0, %rd0;
	mul.wide.u32 %rd1, %r0, 4;
	add.s64 %rd1, %rd0, %rd1;
	bar.sync 1, 64;
	setp.lt.u32 %p0, %r0, 32;
	setp.ge.u32 %p1, %r1, 16;
	and.pred %p2, %p0, %p1;
	setp.ne.u32 %p3, %r0, 1000;
	@%p2 bra GONE;
	barrier.red.popc.u32 %r2, 1, %p3;
	st.global.u32 [%rd1], %r2;
	ret;
GONE:
	exit;
}
"#,
    ),
    (
        "barrier_sync_completed_by_exits_new_generation",
        r#"//! description = "barrier 1 was last used with count 32 by warp 0; now warp 0's lanes 16-31 exit while lanes 0-15 wait at `barrier.sync 1` (all threads): they must not pass before warp 1 arrives, so they read the x warp 1 wrote"
//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 64
//! type = "u32"
//! output = true
//! expect = [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]
//! [[param]]
//! name = "out_ptr"
//! buffer = "out"
.version 8.1
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out_ptr)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.shared .align 4 .b32 x;
	mov.u32 %r0, %tid.x;
	and.b32 %r1, %r0, 31;
	ld.param.u64 %rd0, [out_ptr];
	cvta.to.global.u64 %rd0, %rd0;
	mul.wide.u32 %rd1, %r0, 4;
	add.s64 %rd1, %rd0, %rd1;
	setp.lt.u32 %p0, %r0, 32;
	@%p0 bar.sync 1, 32;
	bar.sync 0;
	mov.u32 %r3, 7;
	@!%p0 st.shared.u32 [x], %r3;
	setp.ge.u32 %p1, %r1, 16;
	and.pred %p2, %p0, %p1;
	@%p2 bra GONE;
	barrier.sync 1;
	ld.shared.u32 %r2, [x];
	@%p0 st.global.u32 [%rd1], %r2;
	ret;
GONE:
	exit;
}
"#,
    ),
];

#[test]
fn gen_found_golden_bugs_stay_fixed() {
    for (name, src) in REGRESSIONS {
        let prog = Program::parse(&format!("{name}.ptx"), src).unwrap_or_else(|d| panic!("{name}: {d}"));
        for s in std::iter::once(None).chain((1..=8).map(Some)) {
            let r = run_golden(&prog, Config { seed: s, ..Config::default() });
            assert!(problems(&r).is_empty(), "{name}, schedule {s:?}: {:?}", problems(&r));
        }
    }
}
