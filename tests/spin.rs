//! "No progress" is exact on every engine (hopsync_cosim::spin): a warp that spins on a
//! condition nothing can change any more is a `Deadlock`, however its loop looks; a loop that
//! is still computing is never one, however long it runs without touching memory, and only its
//! step budget ends it (`StepLimit`, which names the budget and `--max-steps`). The spin limits
//! are small here so that the watch starts early; the default ones only delay it.

use hopsync_cosim::finding::FindingKind;
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::{run_golden, RunReport};
use hopsync_firmware::Program;
use hopsync_sim::SmConfig;

/// Warp 0 spins until the flag is non-zero; warp 1 runs `worker` (registers only), then `last`.
fn program(worker: &str, last: &str) -> Program {
    let src = format!(
        r#"//! [launch]
//! grid = [1, 1, 1]
//! block = [64, 1, 1]
//! [[buffer]]
//! name = "flag"
//! bytes = 16
//! output = true
//! [[param]]
//! name = "flag_ptr"
//! buffer = "flag"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 flag_ptr)
{{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [flag_ptr];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 32;
	@%p1 bra SPIN;
{worker}
{last}
	ret;
SPIN:
	ld.volatile.global.u32 %r2, [%rd1];
	xor.b32 %r5, %r5, 1;
	setp.eq.u32 %p2, %r2, 0;
	@%p2 bra SPIN;
	ret;
}}
"#
    );
    Program::parse("spin.ptx", &src).unwrap_or_else(|e| panic!("{e}"))
}

/// Counts a register from 0 to `n` (three instructions per iteration).
fn count(n: u32) -> String {
    format!("\tmov.u32 %r3, 0;\nCOUNT:\n\tadd.u32 %r3, %r3, 1;\n\tsetp.lt.u32 %p3, %r3, {n};\n\t@%p3 bra COUNT;")
}

const RAISE_FLAG: &str = "\tmov.u32 %r4, 1;\n\tst.global.u32 [%rd1], %r4;";

fn golden_cfg() -> Config {
    Config { spin_limit: 1_000, ..Config::default() }
}

fn sm() -> SmConfig {
    let mut sm = SmConfig::sm90();
    sm.run.deadlock_spin_cycles = 1_000;
    sm
}

/// The golden run, the RTL run and the lockstep run of `p`.
fn runs(p: &Program, cfg: Config) -> Vec<(&'static str, RunReport)> {
    vec![
        ("golden", run_golden(p, cfg.clone())),
        ("rtl", hopsync_sim::run_rtl(p, cfg.clone(), sm())),
        ("cosim", {
            let r = hopsync_sim::lockstep::run_cosim(p, cfg, sm());
            assert!(r.divergences.is_empty(), "{:?}", r.divergences);
            r.run
        }),
    ]
}

fn first(r: &RunReport) -> Option<FindingKind> {
    r.findings.first().map(|f| f.kind)
}

#[test]
fn a_long_computation_beside_a_spinning_warp_is_not_a_deadlock() {
    // 20,000 iterations (60,000 warp-instructions) without a memory access, 60 spin limits long.
    let p = program(&count(20_000), RAISE_FLAG);
    for (engine, r) in runs(&p, golden_cfg()) {
        assert_eq!(r.status, "ok", "{engine}: {}", r.summary());
    }
}

#[test]
fn a_spin_on_a_flag_nobody_will_write_is_a_deadlock_once_the_worker_is_done() {
    let n = 5_000;
    let p = program(&count(n), "");
    for (engine, r) in runs(&p, golden_cfg()) {
        assert_eq!(first(&r), Some(FindingKind::Deadlock), "{engine}: {}", r.summary());
        let f = &r.findings[0];
        assert!(f.message.contains("spins forever") && f.message.contains("cta 0 warp 0 at pc"), "{engine}: {}", f.message);
        // Not before the worker's 3n instructions were done.
        assert!(r.instructions > 3 * n as u64, "{engine}: {} instructions", r.instructions);
    }
}

#[test]
fn a_counting_loop_ends_on_its_step_budget_never_as_a_deadlock() {
    // 2^32 iterations; a budget of 50,000 steps, 50 spin limits.
    let p = program("\tmov.u32 %r3, 0;\nCOUNT:\n\tadd.u32 %r3, %r3, 1;\n\tsetp.ne.u32 %p3, %r3, 0;\n\t@%p3 bra COUNT;", RAISE_FLAG);
    let cfg = Config { max_steps: 50_000, ..golden_cfg() };
    for (engine, r) in runs(&p, cfg) {
        assert_eq!(first(&r), Some(FindingKind::StepLimit), "{engine}: {}", r.summary());
        let f = &r.findings[0];
        assert!(f.message.contains("budget of 50000") && f.message.contains("--max-steps") && f.message.contains("not a deadlock"), "{engine}: {}", f.message);
        assert!(f.location.line > 0, "{engine}: the finding points at an instruction");
    }
}

#[test]
fn a_spin_whose_registers_cycle_is_still_a_deadlock() {
    // The worker toggles a register forever: its state repeats every two iterations.
    let toggle = "TOGGLE:\n\txor.b32 %r6, %r6, 1;\n\tbra TOGGLE;";
    let p = program(toggle, "");
    for (engine, r) in runs(&p, golden_cfg()) {
        assert_eq!(first(&r), Some(FindingKind::Deadlock), "{engine}: {}", r.summary());
    }
}
