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
    // a scheduler queue of one shared-memory store: each store waits for the one before it to
    // start on the pipe (with sm90's queue of 9, 8 stores issue without waiting)
    let mut c = SmConfig::sm90();
    c.smem.store_queue_instructions = 1;
    let free = cycles(&smem_program(4), c.clone());
    let conflict = cycles(&smem_program(128), c.clone());
    // 8 stores, each a 32-way conflict (31 replays of `smem.conflict_replay_cycles` beyond its
    // one wavefront). Stores do not block the warp, but each store after the first waits for the
    // previous one's start, which waits for the replays of the one before it (MemoryThrottle);
    // conflict-free, each store after the first waits `smem.store_issue_cycles` (the STS stall
    // count) instead.
    let extra = conflict - free;
    let replays = 31 * c.smem.conflict_replay_cycles;
    let per_store = replays + 1 - c.smem.store_issue_cycles;
    // the first store starts at its issue, so the second does not wait: six waits
    assert!(extra >= 6 * per_store - c.smem.store_issue_cycles && extra <= 8 * (1 + replays), "conflict-free {free} cycles, 32-way {conflict} cycles");
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

/// One warp: `n` plain `st.global.u64` with one sector per lane (lane stride 2048 bytes) of
/// register `%rd9`, then a `%clock64` read into `%rd9` itself (`war`) or into a fresh register;
/// `t` gets the cycles from the first store's issue to that read.
fn store_program(n: u32, war: bool) -> Program {
    let stores: String = (0..n).map(|k| format!("\tst.global.u64 [%rd3+{}], %rd9;\n", k * 24)).collect();
    let after = if war { "\tmov.u64 %rd9, %clock64;\n\tmov.u64 %rd5, %rd9;\n" } else { "\tmov.u64 %rd5, %clock64;\n" };
    lane_blocks_program("stores.ptx", "", &format!("{stores}{after}"))
}

/// One warp with a 2048-byte block of `dst` per lane (its address in `%rd3`, the lane in `%rd9`,
/// `%p0` lane 0): `before`, then `%clock64` into `%rd4` and `window`, which leaves its end clock in
/// `%rd5`; lane 0 stores the difference in `t`.
fn lane_blocks_program(name: &str, before: &str, window: &str) -> Program {
    let src = format!(
        r#"//! [launch]
//! grid = [1, 1, 1]
//! block = [32, 1, 1]
//! [[buffer]]
//! name = "dst"
//! bytes = 65536
//! [[buffer]]
//! name = "t"
//! bytes = 8
//! output = true
//! [[param]]
//! name = "dst_ptr"
//! buffer = "dst"
//! [[param]]
//! name = "t_ptr"
//! buffer = "t"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 dst_ptr, .param .u64 t_ptr)
{{
	.reg .b32 %r<8>;
	.reg .b64 %rd<16>;
	.reg .pred %p<2>;
	ld.param.u64 %rd1, [dst_ptr];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u64 %rd2, [t_ptr];
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r0, %tid.x;
	mul.wide.u32 %rd3, %r0, 2048;
	add.s64 %rd3, %rd3, %rd1;
	cvt.u64.u32 %rd9, %r0;
	setp.eq.u32 %p0, %r0, 0;
{before}	mov.u64 %rd4, %clock64;
{window}	sub.s64 %rd6, %rd5, %rd4;
	@%p0 st.global.u64 [%rd2], %rd6;
	ret;
}}
"#
    );
    Program::parse(name, &src).unwrap()
}

/// The `t` the program stored.
fn stored_t(p: &Program) -> u64 {
    stored_ts(p)[0]
}

#[test]
fn stores_fill_the_store_queue_then_go_at_the_paths_pace() {
    let g = SmConfig::sm90().global;
    let q = g.store_queue as u32;
    // up to a queue's worth the warp issues them at its store issue rate
    let within = stored_t(&store_program(q, false));
    assert!(within <= q as u64 * g.store_issue_cycles + 8, "{q} stores took {within} cycles");
    // each store beyond the queue waits for one store's time on the SM's path: 32 lines with one
    // partial sector each, one lane's 8 bytes in it (more than the per-sector cycles of one
    // storing warp), and each store writes the previous one's lines again
    let sector = g.store_partial_sector_cycles.max(8.0 / g.store_chunk_bytes_per_cycle);
    let path = (32.0 * (g.store_partial_line_cycles + sector)).floor() as u64;
    let per = path.max(g.store_line_reuse_cycles);
    let beyond = stored_t(&store_program(q + 8, false));
    // (the queue has let one or two stores go while the first q issued)
    assert!(beyond >= within + 6 * per, "8 stores beyond the queue: {within} -> {beyond} cycles ({per} a store)");
}

/// One warp: `stores` ([`lane_blocks_program`]'s registers), then a `fence.acq_rel.gpu`
/// between two `%clock64` reads; the cycles go to `t`.
fn release_after_stores_program(stores: &str) -> Program {
    lane_blocks_program("release_after_stores.ptx", stores, "\tfence.acq_rel.gpu;\n\tmov.u64 %rd5, %clock64;\n")
}

#[test]
fn a_release_drains_after_the_warps_stores_are_acknowledged() {
    let cfg = SmConfig::sm90();
    let drain = cfg.sync.release_drain_cycles;
    let alone = stored_t(&release_after_stores_program(""));
    assert!(alone.abs_diff(drain) <= 8, "a fence alone: {alone} cycles, drain {drain}");
    // 8 stores with every lane in its own line (partial sectors, as `hopsync gpu pack`'s trace
    // stores): the SM's store path holds them for hundreds of cycles, and the drain starts after
    let scattered: String = (0..8).map(|k| format!("\tst.global.u64 [%rd3+{}], %rd9;\n", k * 8)).collect();
    let after = stored_t(&release_after_stores_program(&scattered));
    assert!(after > drain + 150, "a fence after 8 scattered stores: {after} cycles, alone {alone}");
    // one lane rewriting one line: the rewrites merge, the fence costs what it costs alone
    // (calibration/release_stores.ptx: 673 cycles, 673 alone)
    let one_line: String = (0..8).map(|k| format!("\t@%p0 st.global.u64 [%rd3+{}], %rd9;\n", k * 8)).collect();
    let merged = stored_t(&release_after_stores_program(&one_line));
    assert!(merged <= alone + cfg.global.write_ack_cycles + 8, "a fence after one lane's 8 stores to one line: {merged} cycles, alone {alone}");
}

/// One warp's `atom.shared.<op>` with `per` lanes on each word, its result used, timed.
fn shared_atomic_program(op: &str, per: u32) -> Program {
    let setup = format!("\tmov.u32 %r2, s;\n\tdiv.u32 %r1, %r0, {per};\n\tshl.b32 %r1, %r1, 3;\n\tadd.u32 %r2, %r2, %r1;\n\tcvt.rn.f32.u32 %f1, %r0;\n");
    let body = match op {
        "add.f32" => "\tatom.shared.add.f32 %f2, [%r2], %f1;\n\tcvt.rzi.u64.f32 %rd7, %f2;\n",
        _ => "\tatom.shared.add.u32 %r3, [%r2], %r0;\n\tcvt.u64.u32 %rd7, %r3;\n",
    };
    timed_program("shared_atomic.ptx", "\t.shared .align 8 .b64 s[32];\n\t.reg .f32 %f<4>;\n", &setup, body)
}

#[test]
fn a_shared_float_atomic_is_a_compare_and_swap_loop_one_lane_a_pass() {
    let cfg = SmConfig::sm90();
    let own = stored_ts(&shared_atomic_program("add.f32", 1))[0];
    let eight = stored_ts(&shared_atomic_program("add.f32", 8))[0];
    let all = stored_ts(&shared_atomic_program("add.f32", 32))[0];
    // one pass when every lane has its own word; one more per lane on the busiest word
    assert!(own >= cfg.smem.cas_first_cycles && own < cfg.smem.cas_first_cycles + 40, "{own}");
    assert_eq!(eight - own, 7 * cfg.smem.cas_pass_cycles, "8 lanes a word: {eight}, own words: {own}");
    assert_eq!(all - own, 31 * cfg.smem.cas_pass_cycles, "32 lanes on one word: {all}, own words: {own}");
    // the 32-bit integer add has an ATOMS: no loop
    let native = stored_ts(&shared_atomic_program("add.u32", 32))[0];
    assert!(native < all / 4, "atom.shared.add.u32 of 32 lanes on one word: {native}, the f32 add {all}");
}

#[test]
fn a_write_to_a_queued_stores_register_waits_for_its_read() {
    let n = SmConfig::sm90().global.store_queue as u32;
    let fresh = stored_t(&store_program(n, false));
    let war = stored_t(&store_program(n, true));
    // the %clock64 read into the stores' data register waits until the last of the queued stores
    // has read it: the whole queue's time on the paths
    assert!(war > fresh + 200, "clock read into a fresh register after {fresh} cycles, into the stores' register after {war}");
}

#[test]
fn a_renaming_mov_does_not_wait_for_its_source() {
    // mbarrier.arrive's token, unpacked by a mov and not otherwise used: the clock read after the
    // mov comes before the token would be readable (`sync.mbarrier_response_cycles`)
    let src = r#"//! [launch]
//! grid = [1, 1, 1]
//! block = [32, 1, 1]
//! [[buffer]]
//! name = "t"
//! bytes = 8
//! output = true
//! [[param]]
//! name = "t_ptr"
//! buffer = "t"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 t_ptr)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<16>;
	.reg .pred %p<2>;
	.shared .align 8 .b64 bar;
	ld.param.u64 %rd2, [t_ptr];
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r0, %tid.x;
	setp.eq.u32 %p0, %r0, 0;
	@%p0 mbarrier.init.shared::cta.b64 [bar], 64;
	bar.sync 0;
	mov.u64 %rd4, %clock64;
	mbarrier.arrive.shared::cta.b64 %rd7, [bar];
	mov.b64 {%r4, %r5}, %rd7;
	mov.u64 %rd5, %clock64;
	sub.s64 %rd6, %rd5, %rd4;
	@%p0 st.global.u64 [%rd2], %rd6;
	cvt.u64.u32 %rd9, %r5;
	ret;
}
"#;
    let p = Program::parse("rename.ptx", src).unwrap();
    let t = stored_t(&p);
    assert!(t < SmConfig::sm90().sync.mbarrier_response_cycles, "arrive + mov took {t} cycles");
}

/// `warps` warps each time `n` independent instructions `op` (`{r}`: 16 registers in turn, each read 16
/// instructions after it was written) between two `%clock64` reads; lane 0 stores its warp's delta
/// into `t[warp]`. Block size `32 x warps`: warps w and w + 4 share scheduler w mod 4.
fn pipe_program(op: &str, n: u32, warps: u32) -> Program {
    let body: String = (0..n).map(|k| format!("\t{};\n", op.replace("{r}", &format!("%r{}", 16 + k % 16)))).collect();
    let src = format!(
        r#"//! [launch]
//! grid = [1, 1, 1]
//! block = [{threads}, 1, 1]
//! [[buffer]]
//! name = "t"
//! bytes = {bytes}
//! output = true
//! [[param]]
//! name = "t_ptr"
//! buffer = "t"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 t_ptr)
{{
	.reg .b32 %r<40>;
	.reg .b64 %rd<8>;
	.reg .pred %p<2>;
	ld.param.u64 %rd2, [t_ptr];
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, 3;
	bar.sync 0;
	mov.u64 %rd4, %clock64;
{body}	mov.u64 %rd5, %clock64;
	sub.s64 %rd6, %rd5, %rd4;
	and.b32 %r2, %r0, 31;
	shr.u32 %r3, %r0, 5;
	mul.wide.u32 %rd3, %r3, 8;
	add.s64 %rd3, %rd3, %rd2;
	setp.eq.u32 %p0, %r2, 0;
	@%p0 st.global.u64 [%rd3], %rd6;
	ret;
}}
"#,
        threads = 32 * warps,
        bytes = 8 * warps
    );
    Program::parse("pipes.ptx", &src).unwrap()
}

/// The u64s a program stored in its output `t` (per warp for `pipe_program`).
fn stored_ts(p: &Program) -> Vec<u64> {
    stored_ts_with(p, SmConfig::sm90())
}

/// [`stored_ts`] under the timing `cfg`.
fn stored_ts_with(p: &Program, cfg: SmConfig) -> Vec<u64> {
    let r = run_rtl(p, Config::default(), cfg);
    assert_eq!(r.status, "ok", "{}", r.summary());
    let hex = &r.outputs["t"];
    let b: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    b.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn the_integer_alu_pipe_is_half_rate_and_shared_by_its_schedulers_warps() {
    let i = SmConfig::sm90().issue;
    // one warp: a logic op every alu_issue_cycles; fp32 fma every cycle
    let xor1 = stored_ts(&pipe_program("xor.b32 {r}, {r}, %r1", 64, 1))[0];
    assert!((64 * i.alu_issue_cycles..=64 * i.alu_issue_cycles + 8).contains(&xor1), "64 xor: {xor1} cycles");
    let fma1 = stored_ts(&pipe_program("fma.rn.f32 {r}, {r}, %r1, %r1", 64, 1))[0];
    assert!(fma1 <= 64 + 8, "64 fma.rn.f32: {fma1} cycles");
    // warps 0 and 4 share a scheduler: each one's window holds the other's ALU work too
    let xor2 = stored_ts(&pipe_program("xor.b32 {r}, {r}, %r1", 64, 5));
    assert!(xor2[0] >= 2 * xor1 - 16 && xor2[4] >= 2 * xor1 - 16, "two warps a scheduler: {xor2:?} cycles (one: {xor1})");
    // fma never waits for its pipe: the greedy warp keeps its turn
    let fma2 = stored_ts(&pipe_program("fma.rn.f32 {r}, {r}, %r1, %r1", 64, 5));
    assert!(fma2[0] <= 64 + 8, "fma, two warps a scheduler: {fma2:?}");
}

/// One warp times a loop of 16 iterations of 4 independent adds between two `%clock64` reads
/// (`header`: a line in the loop's header block; `limit`: the compare's bound, `16` or `%r9`, a
/// register holding 16) and stores the delta in `t`.
fn loop_program(header: &str, limit: &str) -> Program {
    let src = format!(
        r#"//! [launch]
//! grid = [1, 1, 1]
//! block = [32, 1, 1]
//! [[buffer]]
//! name = "t"
//! bytes = 8
//! output = true
//! [[param]]
//! name = "t_ptr"
//! buffer = "t"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 t_ptr)
{{
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.reg .pred %p<2>;
	ld.param.u64 %rd2, [t_ptr];
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r0, %tid.x;
	setp.eq.u32 %p0, %r0, 0;
	add.u32 %r9, %r0, 16;
	sub.u32 %r9, %r9, %r0;
	mov.u64 %rd4, %clock64;
	mov.u32 %r1, 0;
L:
{header}
	add.u32 %r2, %r2, %r0;
	add.u32 %r3, %r3, %r0;
	add.u32 %r4, %r4, %r0;
	add.u32 %r5, %r5, %r0;
	add.u32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, {limit};
	@%p1 bra L;
	mov.u64 %rd5, %clock64;
	sub.s64 %rd6, %rd5, %rd4;
	@%p0 st.global.u64 [%rd2], %rd6;
	ret;
}}
"#
    );
    Program::parse("loop.ptx", &src).unwrap()
}

#[test]
fn a_loop_ptxas_unrolls_pays_no_loop_control() {
    // ptxas 13.5 unrolls this loop fully (calibration/val_unroll_loops.ptx: 66 cycles on an
    // H100, the same loop under nounroll 462); with a trip count it cannot know it unrolls it 4
    // times. The engine follows: the loop control (compare, taken branch) is paid 16 times, 4
    // times, or never.
    let issue = SmConfig::sm90().issue;
    let branch = issue.branch_cycles + issue.branch_taken_cycles;
    let full = stored_t(&loop_program("", "16"));
    let kept = stored_t(&loop_program("\t.pragma \"nounroll\";", "16"));
    let partly = stored_t(&loop_program("", "%r9"));
    assert!(full < 16 * 4 + branch, "unrolled: {full} cycles");
    assert!(kept >= full + 16 * branch, "nounroll: {kept} cycles against {full}");
    // one iteration's loop control, as the nounroll loop pays it
    let control = (kept - full) / 16;
    assert!(partly >= full + 3 * control && partly <= full + 5 * control, "4 copies: {partly} cycles against {full}, {control} a control");
    // the loop control still runs in the golden model: the lockstep compares it
    let r = run_cosim(&loop_program("", "16"), Config::default(), SmConfig::sm90());
    assert!(r.divergences.is_empty() && r.compared > 0, "{:?}", r.divergences);
}

/// A one-warp program whose thread 0 stores in `t` (16 bytes) the cycles `body` takes between
/// two `%clock64` reads, then the u64 in `%rd7`; `decls` and `setup` come before the window.
/// Registers: `%r<16>`, `%rd<8>`, `%p<2>`; `%rd2` is `t`, `%r0` `%tid.x`, `%p0` thread 0.
fn timed_program(name: &str, decls: &str, setup: &str, body: &str) -> Program {
    let src = format!(
        r#"//! [launch]
//! grid = [1, 1, 1]
//! block = [32, 1, 1]
//! [[buffer]]
//! name = "t"
//! bytes = 16
//! output = true
//! [[param]]
//! name = "t_ptr"
//! buffer = "t"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 t_ptr)
{{
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.reg .pred %p<2>;
{decls}	ld.param.u64 %rd2, [t_ptr];
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r0, %tid.x;
	setp.eq.u32 %p0, %r0, 0;
	mov.u64 %rd7, 0;
{setup}	bar.sync 0;
	mov.u64 %rd4, %clock64;
{body}	mov.u64 %rd5, %clock64;
	sub.s64 %rd6, %rd5, %rd4;
	@%p0 st.global.u64 [%rd2], %rd6;
	@%p0 st.global.u64 [%rd2+8], %rd7;
	ret;
}}
"#
    );
    Program::parse(name, &src).unwrap()
}

/// One warp sums `n` words of shared memory, `ld.shared; add` each (the shape ptxas hoists the
/// loads of), in the window of [`timed_program`]; the sum goes to `t[1]`.
fn load_use_program(n: u32) -> Program {
    let body: String = (0..n).map(|k| format!("\tld.shared.u32 %r3, [%r2+{}];\n\tadd.u32 %r4, %r4, %r3;\n", k * 128)).collect();
    let setup = "\tmov.u32 %r2, s;\n\tshl.b32 %r1, %r0, 2;\n\tadd.u32 %r2, %r2, %r1;\n\tmov.u32 %r5, 0;\ninit:\n\tst.shared.u32 [%r2], %r5;\n\tadd.u32 %r2, %r2, 128;\n\tadd.u32 %r5, %r5, 1;\n\tsetp.lt.u32 %p1, %r5, 32;\n\t@%p1 bra init;\n\tsub.u32 %r2, %r2, 4096;\n\tmov.u32 %r4, 0;\n";
    timed_program("load_use.ptx", "\t.shared .align 4 .b32 s[1024];\n", setup, &format!("{body}\tcvt.u64.u32 %rd7, %r4;\n"))
}

#[test]
fn loads_issue_ahead_of_the_arithmetic_that_uses_them() {
    let p = load_use_program(16);
    let cfg = SmConfig::sm90();
    let strict = SmConfig { issue: hopsync_sim::config::Issue { lookahead_instructions: 0, ..cfg.issue.clone() }, ..cfg.clone() };
    let run = |c: SmConfig| {
        let t = stored_ts_with(&p, c);
        (t[0], t[1])
    };
    let (ahead, sum) = run(cfg.clone());
    let (in_order, sum_strict) = run(strict);
    // the values do not depend on the issue order: lane 0 sums 0..16
    assert_eq!((sum, sum_strict), (120, 120));
    // in PTX order each add waits for its load before the next load issues: 16 load latencies
    assert!(in_order >= 16 * cfg.smem.latency, "16 ld.shared; add in PTX order: {in_order} cycles");
    // with the lookahead the loads go one per `smem.load_issue_cycles` and the adds follow: the
    // clock read waits for the last add, one load latency after the last load
    let bound = 16 * cfg.smem.load_issue_cycles + cfg.smem.latency + 16 * cfg.latency.alu;
    assert!(ahead <= bound, "16 ld.shared; add with the lookahead: {ahead} cycles (bound {bound}, in order {in_order})");
    // and the engine still retires in PTX order: the lockstep with the golden model is clean
    let r = run_cosim(&p, Config::default(), cfg);
    assert!(r.divergences.is_empty(), "{:?}", r.divergences);
}

#[test]
fn arithmetic_that_waits_for_arithmetic_keeps_its_place() {
    // a dependent ALU chain and independent work after it: ptxas orders fixed latencies by stall
    // counts in program order (calibration/val_alu_loops.ptx's hash loop), so the window changes
    // nothing
    let p = pipe_program("add.u32 %r1, %r1, {r}", 16, 1);
    let cfg = SmConfig::sm90();
    let strict = SmConfig { issue: hopsync_sim::config::Issue { lookahead_instructions: 0, ..cfg.issue.clone() }, ..cfg.clone() };
    assert_eq!(stored_ts_with(&p, cfg), stored_ts_with(&p, strict));
}

/// One warp's `n` dependent `atom.shared.add.u32` (lane stride `stride` bytes: 0 is one word for
/// the whole warp), the active lanes `lanes`, in the window of [`timed_program`].
fn atomic_program(n: u32, stride: u32, lanes: u32) -> Program {
    let body = "\t@%p1 atom.shared.add.u32 %r10, [%r5], %r10;\n".repeat(n as usize) + "\tadd.u32 %r11, %r10, 1;\n";
    // (stride 0: the symbol's address itself, which ptxas sees is warp-uniform, as it folds %tid * 0)
    let addr = if stride == 0 { "\tmov.u32 %r5, s;\n".to_string() } else { format!("\tmul.lo.u32 %r4, %r0, {stride};\n\tmov.u32 %r5, s;\n\tadd.u32 %r5, %r5, %r4;\n") };
    let setup = format!("\tsetp.lt.u32 %p1, %r0, {lanes};\n{addr}\tmov.u32 %r10, 1;\n");
    timed_program("atomics.ptx", "\t.shared .align 4 .b32 s[64];\n", &setup, &body)
}

#[test]
fn a_whole_warp_on_one_word_is_a_warp_aggregated_atomic() {
    let cfg = SmConfig::sm90();
    let one_word = stored_t(&atomic_program(4, 0, 32));
    let distinct = stored_t(&atomic_program(4, 4, 32));
    let half_warp = stored_t(&atomic_program(4, 0, 16));
    // ptxas's scan (latency.atomic_scan) and the result's shuffle run once per atomic of the whole
    // warp on one address; a part of the warp, or distinct words, make a per-lane atomic
    let per = cfg.latency.atomic_scan + cfg.latency.shfl + cfg.latency.alu;
    assert!(one_word >= distinct + 4 * per, "one word {one_word}, distinct words {distinct} cycles");
    assert!(half_warp < distinct + per, "half a warp on one word {half_warp}, distinct words {distinct} cycles");
}

/// One warp's 4 dependent `div.u32` in the window of [`timed_program`]: by a divisor computed
/// before the window, or (`fresh`) by one the chain computes right before each division.
fn division_program(fresh: bool) -> Program {
    let link = if fresh { "\tor.b32 %r3, %r10, 1;\n\tdiv.u32 %r10, %r4, %r3;\n" } else { "\tdiv.u32 %r10, %r10, %r3;\n\tadd.u32 %r10, %r10, %r4;\n" };
    timed_program("division.ptx", "", "\tadd.u32 %r3, %r0, 3;\n\tadd.u32 %r4, %r0, 1000;\n\tmov.u32 %r10, 77777;\n", &link.repeat(4))
}

#[test]
fn a_division_is_a_sequence_that_waits_for_its_divisors_reciprocal() {
    let l = SmConfig::sm90().latency;
    let old = stored_ts(&division_program(false));
    let fresh = stored_ts(&division_program(true));
    // the window holds all four divisions whole (silicon issues their SASS in order, the clock
    // read after the last one included): with an old divisor `div` each, with a fresh one its
    // reciprocal too
    assert!(old[0] >= 4 * (l.div + l.alu) - l.alu, "old divisor: {} cycles", old[0]);
    assert!(fresh[0] >= old[0] + 3 * l.div_reciprocal, "fresh divisor {} cycles, old {}", fresh[0], old[0]);
}

/// calibration/mbar_wake_regaddr.ptx's per-round figures (8 rounds per figure, in its order: the
/// try_wait loop with the arrive 0 / 80 / 300 cycles in, the test_wait loop 80 / 300, the
/// hinted try_wait 40).
fn wake_figures() -> Vec<u64> {
    calibration_ts("mbar_wake_regaddr")
}

/// What a calibration program (firmware/programs/calibration/`name`.ptx) stores in `t`.
fn calibration_ts(name: &str) -> Vec<u64> {
    let path = format!("{}/../firmware/programs/calibration/{name}.ptx", env!("CARGO_MANIFEST_DIR"));
    let p = Program::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    stored_ts(&p)
}

#[test]
fn a_try_wait_loops_retry_is_woken_by_the_arrive_whatever_the_delay() {
    // Silicon (H100): 121 cycles from the arriver's stamp to the waiter's next instruction for an
    // arrive 0, 80 or 300 cycles into a try_wait loop: the retry is suspended and woken, not a
    // poll whose phase the delay would move.
    let t = wake_figures();
    let m = medians_of_8(&t);
    let median = |k: usize| m[k];
    assert_eq!(median(1), median(2), "try_wait loop, arrive 80 vs 300 cycles in: {t:?}");
    // and a hinted try_wait is woken the same way
    assert_eq!(median(5), median(2), "{t:?}");
}

/// The per-figure medians (8 rounds each) of a calibration program that stores them in `t`.
fn calibration_medians(name: &str) -> Vec<u64> {
    medians_of_8(&calibration_ts(name))
}

/// The median of each run of 8 samples.
fn medians_of_8(t: &[u64]) -> Vec<u64> {
    t.chunks(8)
        .map(|c| {
            let mut r = c.to_vec();
            r.sort_unstable();
            r[4]
        })
        .collect()
}

#[test]
fn a_converged_warps_try_wait_suspends_and_a_diverged_warps_answers_at_once() {
    // calibration/poll_rate.ptx (H100): a try_wait loop of the whole warp spends one try on a
    // 2000-cycle wait (2133 cycles a try); lane 0 alone tries every 154 cycles
    let m = calibration_medians("poll_rate");
    assert!(m[5] > 1500, "converged: one try spans the wait: {m:?}");
    assert!(m[7] < 300, "diverged: the try answers at once and the loop polls: {m:?}");
}

#[test]
fn a_spin_loop_that_ptxas_cannot_prove_converged_pays_its_yield() {
    // poll_rate.ptx picks the polling warps with `bra` on %tid (a YIELD in each spin loop),
    // val_poll_uniform.ptx with `bra.uni` (none): 103 against 47 cycles a test_wait poll on the
    // H100, 101 against 48 a flag load
    let (y, u) = (calibration_medians("poll_rate"), calibration_medians("val_poll_uniform"));
    let cycles = SmConfig::sm90().issue.yield_cycles;
    for k in [0, 6] {
        let extra = y[k] as i64 - u[k] as i64;
        assert!((extra - cycles as i64).abs() <= 12, "figure {k}: {} with the YIELD, {} without ({cycles} expected between)", y[k], u[k]);
    }
}

#[test]
fn a_warp_pays_its_tma_issue_loop_and_the_front_end_queues_the_commands() {
    // calibration/tma/tma_issue.ptx (H100): lane 0 issues 8 bulk copies in 374 cycles, although
    // the front end takes a command every ~95 (bulk_inflight.ptx): the warp waits for ptxas's
    // loop over the lanes, not for the front end
    let m = calibration_medians("tma/tma_issue");
    let t = SmConfig::sm90().tma;
    assert!(m[0] >= 8 * t.per_lane_issue_cycles && m[0] < 8 * t.command_cycles, "8 copies issue in {m:?}");
}

#[test]
fn a_branch_on_tid_after_bar_sync_waits_for_the_barrier() {
    // mbar_wake_regaddr.ptx's arriver reads its stamp after `bar.sync 0; @%p5 bra arr` (p5 from
    // %tid): the read waits for the barrier, so an arrive 0 cycles in is seen no later than one
    // 300 cycles in (before divergent branches waited, it was ~100 cycles later: the stamp was
    // read while the waiter was still on its way to the barrier).
    let t = wake_figures();
    let first = |k: usize| t[k * 8 + 3];
    assert!(first(0) <= first(2), "{t:?}");
}

#[test]
fn a_warp_released_from_cp_async_wait_all_issues_the_configured_time_later() {
    // calibration/gmem_cold.ptx: cp.async + wait_all is ~50 cycles slower than a load of the
    // same line (ptxas's DEPBAR), `sync.cp_async_wait_cycles`
    let p = timed_program(
        "cp_async_wait",
        "\t.shared .align 16 .b8 buf[16];\n",
        "",
        "\t@%p0 cp.async.cg.shared.global [buf], [%rd2], 16;\n\tcp.async.wait_all;\n\tld.shared.u32 %r1, [buf];\n\tcvt.u64.u32 %rd7, %r1;\n",
    );
    let with = |cycles: u64| {
        let mut cfg = SmConfig::sm90();
        cfg.sync.cp_async_wait_cycles = cycles;
        stored_ts_with(&p, cfg)[0]
    };
    assert_eq!(with(55), with(0) + 55);
}

#[test]
fn a_shared_variable_named_in_a_round_with_an_inner_loop_waits_for_ptxas_window_base() {
    // calibration/mbar_wake.ptx against mbar_wake_regaddr.ptx (H100): the arriver's stamp store
    // and arrive through bare shared symbols, after a spin loop in a round loop, come ~24 cycles
    // later than through a register holding the address (ptxas reads SR_CgaCtaId again right
    // before them), once after each join (here the target of a `bra.uni` over an instruction:
    // a branch to the next instruction would be deleted, no join)
    let decls = "\t.shared .align 8 .b64 buf[4];\n";
    let setup = "\tmov.u32 %r5, buf;\n";
    let round = |uses: &str| format!("\tmov.u32 %r6, 0;\nR1:\n\tbra.uni J1;\n\tnanosleep.u32 0;\nJ1:\n\tmov.u32 %r7, 0;\nS1:\n\t.pragma \"nounroll\";\n\tadd.u32 %r7, %r7, 1;\n\tsetp.lt.u32 %p1, %r7, 2;\n\t@%p1 bra S1;\n{uses}\tadd.u32 %r6, %r6, 1;\n\tsetp.lt.u32 %p1, %r6, 2;\n\t@%p1 bra R1;\n");
    let by_symbol = timed_program("sym", decls, setup, &round("\tst.shared.u64 [buf], %rd7;\n"));
    let by_register = timed_program("reg", decls, setup, &round("\tst.shared.u64 [%r5], %rd7;\n"));
    let twice = timed_program("sym2", decls, setup, &round("\tst.shared.u64 [buf], %rd7;\n\tst.shared.u64 [buf+8], %rd7;\n"));
    let with = |p: &Program, cycles: u64| {
        let mut cfg = SmConfig::sm90();
        cfg.latency.window_base = cycles;
        stored_ts_with(p, cfg)[0]
    };
    let w = 40;
    assert_eq!(with(&by_register, w), with(&by_register, 0), "a register address needs no base");
    // two rounds, each counted from the warp's previous issue (the spin loop's branch)
    assert!(with(&by_symbol, w) >= with(&by_symbol, 0) + w, "{} vs {}", with(&by_symbol, w), with(&by_symbol, 0));
    // the second store of the block uses the read the first one waited for
    assert_eq!(with(&twice, w) - with(&twice, 0), with(&by_symbol, w) - with(&by_symbol, 0));
}

#[test]
fn an_mbarrier_init_waits_for_its_sass_setup_whatever_the_warp_has_in_flight() {
    // calibration/fence_view.ptx (H100): lane 0's init 34 cycles between the clock reads
    // (the uniform-datapath init word and FENCE.VIEW.ASYNC.S before its SYNCS.EXCH.64), the same
    // after the warp's global stores, its shared store, or with its global load in flight
    let m = calibration_medians("fence_view");
    let setup = SmConfig::sm90().sync.mbarrier_init_setup_cycles;
    for k in [0, 1, 3, 4, 5] {
        assert!(m[k] >= setup && m[k] <= setup + 10, "figure {k}: {m:?}");
    }
    assert_eq!(m[0], m[1], "a store in flight changes nothing: {m:?}");
}

#[test]
fn barrier_cluster_in_a_launch_without_cluster_dimensions_drains_no_release() {
    // calibration/release_stores.ptx (H100): barrier.cluster.arrive.release + wait in a launch of
    // one CTA without cluster dimensions takes 68 cycles (ptxas branches to BAR.SYNC), a fence at
    // gpu scope ~673 whatever the warp's stores in flight
    let m = calibration_medians("release_stores");
    let drain = SmConfig::sm90().sync.release_drain_cycles;
    assert!(m[10] < 150, "barrier.cluster without a cluster launch: {m:?}");
    assert!(m[0] >= drain && m[4] >= drain, "fence.acq_rel.gpu: {m:?}");
}

#[test]
fn a_tensor_maps_first_use_fetches_its_descriptor_and_the_sms_first_load_sets_up_its_reads() {
    // calibration/tma/tma_first_use.ptx (H100, 16 CTAs): the kernel's first tensor load takes 772
    // cycles against 375.5 for a second with the same map, 414.5 for a second map's first use and
    // 372.5 for a map a prefetch.tensormap named before; tma_first_after_global.ptx: 697 / 532 when
    // the warp stored / loaded global memory before
    // (one sample per CTA: 16 a figure, 8 in tma_first_after_global's two)
    let medians = |name: &str, per: usize| -> Vec<u64> {
        calibration_ts(name).chunks(per).map(|c| {
            let mut r = c.to_vec();
            r.sort_unstable();
            r[per / 2]
        }).collect()
    };
    let near = |a: u64, b: u64| a.abs_diff(b) <= 2;
    let t = SmConfig::sm90().tma;
    let m = medians("tma/tma_first_use", 16);
    assert!(near(m[0] - m[1], t.map_fetch_cycles + t.first_read_cycles), "{m:?}");
    assert!(near(m[2] - m[1], t.map_fetch_cycles), "a second map: {m:?}");
    assert!(near(m[3], m[1]), "a prefetched map: {m:?}");
    let g = medians("tma/tma_first_after_global", 8);
    assert!(near(g[0] - m[1], t.map_fetch_cycles + t.first_read_after_store_cycles), "after a store: {g:?}");
    assert!(near(g[1] - m[1], t.map_fetch_cycles + t.first_read_after_load_cycles), "after a load: {g:?}");
}

/// One warp's lane 0 stores to shared memory and arrives on an mbarrier (its token kept), the
/// store first or the arrive first, timed.
fn arrive_and_store_program(store_first: bool) -> Program {
    let (store, arrive) = ("\t@%p0 st.shared.u32 [x], %r0;\n", "\t@%p0 mbarrier.arrive.shared::cta.b64 %rd7, [m];\n");
    let body = if store_first { format!("{store}{arrive}") } else { format!("{arrive}{store}") };
    timed_program("arrive_and_store.ptx", "\t.shared .align 8 .b64 m;\n\t.shared .align 4 .b32 x;\n", "\t@%p0 mbarrier.init.shared::cta.b64 [m], 64;\n", &body)
}

#[test]
fn a_release_arrive_waits_for_the_warps_shared_writes() {
    let cfg = SmConfig::sm90();
    let wait = cfg.sync.release_after_shared_write_cycles;
    let (after, before) = (stored_ts(&arrive_and_store_program(true))[0], stored_ts(&arrive_and_store_program(false))[0]);
    // the arrive right after the store issues `wait` cycles after it (the store's own spacing
    // of the warp's next memory instruction is part of that)
    assert!(after >= before + wait - cfg.smem.store_issue_cycles, "store then arrive {after} cycles, arrive then store {before}, wait {wait}");
    // without the rule the order costs no more than that spacing
    let mut free = cfg.clone();
    free.sync.release_after_shared_write_cycles = 0;
    let (after0, before0) = (stored_ts_with(&arrive_and_store_program(true), free.clone())[0], stored_ts_with(&arrive_and_store_program(false), free)[0]);
    assert!(after0 <= before0 + cfg.smem.store_issue_cycles, "without the wait: store then arrive {after0}, arrive then store {before0}");
    assert!(after >= after0 + wait - cfg.smem.store_issue_cycles, "{after} against {after0} without the wait");
}
