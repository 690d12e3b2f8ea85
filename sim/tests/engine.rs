//! Timing-model tests of the RTL engine: bank conflicts, configurable latencies, stall reasons,
//! try_wait suspension and wake, determinism.

use hopsync_cosim::machine::Config;
use hopsync_firmware::Program;
use hopsync_sim::probe::StallCounter;
use hopsync_sim::{lockstep::run_cosim, run_rtl, Engine, SmConfig};

/// One warp storing to shared memory with a lane stride of `stride` bytes, 8 times, then exiting.
fn smem_program(stride: u32) -> Program {
    let src = format!(
        r#"//! [launch]
//! grid = [1, 1, 1]
//! block = [32, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 4
//! output = true
//! expect = [0]
//! [[param]]
//! name = "out_ptr"
//! buffer = "out"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out_ptr)
{{
	.reg .b32 %r<8>;
	.shared .align 4 .b32 s[1024];
	mov.u32 %r0, %tid.x;
	mul.lo.u32 %r1, %r0, {stride};
	mov.u32 %r2, s;
	add.u32 %r2, %r2, %r1;
	st.shared.u32 [%r2], %r0;
	st.shared.u32 [%r2], %r0;
	st.shared.u32 [%r2], %r0;
	st.shared.u32 [%r2], %r0;
	st.shared.u32 [%r2], %r0;
	st.shared.u32 [%r2], %r0;
	st.shared.u32 [%r2], %r0;
	st.shared.u32 [%r2], %r0;
	ret;
}}
"#
    );
    Program::parse("smem.ptx", &src).unwrap()
}

fn cycles(p: &Program, cfg: SmConfig) -> u64 {
    let r = run_rtl(p, Config::default(), cfg);
    assert_eq!(r.status, "ok", "{}", r.summary());
    r.cycles.unwrap()
}

#[test]
fn bank_conflicts_cost_cycles() {
    let c = SmConfig::sm90();
    let free = cycles(&smem_program(4), c.clone());
    let conflict = cycles(&smem_program(128), c.clone());
    // 8 stores, each a 32-way conflict (32 wavefronts instead of 1). Stores do not block the
    // warp, but the pipe may be booked only `queue_cycles` ahead, so each store after the first
    // waits for the previous one's 31 extra wavefronts (MemoryThrottle).
    let extra = conflict - free;
    assert!(extra >= 7 * 31 - c.smem.queue_cycles && extra <= 8 * 32, "conflict-free {free} cycles, 32-way {conflict} cycles");
}

#[test]
fn latencies_come_from_the_config() {
    let p = smem_program(4);
    let base = cycles(&p, SmConfig::sm90());
    let mut slow = SmConfig::sm90();
    slow.latency.sreg += 100;
    assert_eq!(cycles(&p, slow), base + 100, "one %tid read on the critical path");
    let sreg = format!("\nsreg = {}\n", SmConfig::sm90().latency.sreg);
    let toml = hopsync_sim::config::SM90_TOML.replace(&sreg, &format!("\nsreg = {}\n", SmConfig::sm90().latency.sreg + 50));
    assert_ne!(toml, hopsync_sim::config::SM90_TOML, "sm90.toml sets latency.sreg on a line of its own");
    let parsed = SmConfig::parse(&toml).unwrap();
    assert_eq!(cycles(&p, parsed), base + 50);
}

#[test]
fn try_wait_suspends_and_stall_reasons_are_reported() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../firmware/programs/demo/pipeline.ptx");
    let p = Program::load(std::path::Path::new(path)).unwrap();
    let r = run_rtl(&p, Config::default(), SmConfig::sm90());
    assert_eq!(r.status, "ok", "{}", r.summary());
    // A counter we keep (the engine owns its probe as a trait object).
    struct Shared(std::rc::Rc<std::cell::RefCell<StallCounter>>);
    impl hopsync_sim::probe::Probe for Shared {
        fn cycle(&mut self, s: &hopsync_sim::probe::Snapshot<'_>) {
            self.0.borrow_mut().cycle(s)
        }
    }
    let counts = std::rc::Rc::new(std::cell::RefCell::new(StallCounter::default()));
    let mut e = Engine::new(&p, Config::default(), SmConfig::sm90());
    e.set_probe(Box::new(Shared(counts.clone())));
    let outcome = e.run();
    assert_eq!(e.report(&outcome).cycles, r.cycles, "a probe does not change timing");
    let c = counts.borrow();
    for reason in ["Issued", "ScoreboardDep", "BarrierWait", "Exited"] {
        assert!(c.counts.get(reason).copied().unwrap_or(0) > 0, "no {reason} in {:?}", c.counts);
    }
    assert!(
        c.counts.get("TryWaitSuspended").copied().unwrap_or(0) + c.counts.get("MbarrierWait").copied().unwrap_or(0) > 0,
        "no mbarrier waits in {:?}",
        c.counts
    );
    assert_eq!(c.cycles, r.cycles.unwrap(), "the probe sees every cycle when attached");
}

#[test]
fn cycle_counts_are_deterministic_and_cosim_is_clean() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../firmware/programs/seeds/st_async_ring8.ptx");
    let p = Program::load(std::path::Path::new(path)).unwrap();
    let a = run_rtl(&p, Config::default(), SmConfig::sm90());
    let b = run_rtl(&p, Config::default(), SmConfig::sm90());
    assert_eq!(a.cycles, b.cycles);
    let c = run_cosim(&p, Config::default(), SmConfig::sm90());
    assert!(c.divergences.is_empty(), "{:?}", c.divergences);
    assert_eq!(c.run.cycles, a.cycles);
    assert!(c.compared > 0);
}
