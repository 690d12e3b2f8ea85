//! The happens-before race detector (`cosim/src/race.rs`): one hand-built case per
//! synchronization edge, ordered (no finding, whatever the interleaving) and with the edge removed
//! or weakened (the race named); and no race finding on any program of the repository outside
//! `bad/` and `bugs/`.

use hopsync_cosim::finding::FindingKind;
use hopsync_cosim::machine::{Config, UbMode};
use hopsync_cosim::race::RaceMode;
use hopsync_cosim::report::{run_golden, RunReport};
use hopsync_firmware::Program;
use std::path::{Path, PathBuf};

/// A kernel of `ctas` CTAs (one cluster) of 64 threads around `body`. Registers: %r1 = %tid.x,
/// %r2 = warp, %p1 = warp 0, %p2 = thread 0, %r3 = address of `data` (64 words, 128-byte
/// aligned), %r4 = address of the mbarrier `bar` (initialized by thread 0 with `init` arrivals,
/// then `bar.sync 0`), %rd1 = `out` (256 bytes), %rd2 = `in` (iota words).
fn kernel(ctas: u32, init: u32, body: &str) -> String {
    format!(
        r#"//! [launch]
//! grid = [{ctas}, 1, 1]
//! block = [64, 1, 1]
//! cluster = [{ctas}, 1, 1]
//! [[buffer]]
//! name = "out"
//! bytes = 256
//! output = true
//! [[buffer]]
//! name = "in"
//! bytes = 256
//! fill = "iota"
//! type = "u32"
//! [[param]]
//! name = "out_ptr"
//! buffer = "out"
//! [[param]]
//! name = "in_ptr"
//! buffer = "in"
.version 8.6
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out_ptr, .param .u64 in_ptr)
{{
	.reg .pred %p<8>;
	.reg .b32 %r<32>;
	.reg .b64 %rd<16>;
	.shared .align 128 .b32 data[64];
	.shared .align 8 .b64 bar;
	mov.u32 %r1, %tid.x;
	shr.u32 %r2, %r1, 5;
	setp.eq.u32 %p1, %r2, 0;
	setp.eq.u32 %p2, %r1, 0;
	ld.param.u64 %rd1, [out_ptr];
	ld.param.u64 %rd2, [in_ptr];
	mov.u32 %r3, data;
	mov.u32 %r4, bar;
	@%p2 mbarrier.init.shared.b64 [bar], {init};
	bar.sync 0;
	and.b32 %r5, %r1, 31;
	shl.b32 %r6, %r5, 2;
	add.u32 %r7, %r3, %r6;
	mov.u32 %r8, 7;
{body}
	ret;
}}
"#
    )
}

/// The first finding of the deterministic run and of seeds 1-3 (None: clean).
fn outcomes(src: &str) -> Vec<(String, Option<FindingKind>)> {
    let prog = Program::parse("race_case.ptx", src).unwrap_or_else(|d| panic!("{d}\n{src}"));
    [None, Some(1), Some(2), Some(3)]
        .into_iter()
        .map(|seed| {
            let r = run_golden(&prog, Config { seed, ..Config::default() });
            let first = r.findings.first().map(|f| f.kind);
            (format!("seed {seed:?}: {}", r.summary()), first)
        })
        .collect()
}

fn ordered(name: &str, src: &str) {
    for (run, f) in outcomes(src) {
        assert!(f.is_none(), "{name}: ordered, but {run}");
    }
}

fn racy(name: &str, src: &str, kinds: &[FindingKind]) {
    for (run, f) in outcomes(src) {
        assert!(f.is_some_and(|k| kinds.contains(&k)), "{name}: expected {kinds:?}, {run}");
    }
}

// Warp 0 writes data[lane], warp 1 reads data[lane ^ 1]: `sync` orders them.
fn handoff(sync_w0: &str, sync_w1: &str) -> String {
    kernel(1, 1, &format!("\t@%p1 st.shared.u32 [%r7], %r8;\n{sync_w0}\n{sync_w1}\n\txor.b32 %r9, %r6, 4;\n\tadd.u32 %r9, %r3, %r9;\n\t@!%p1 ld.shared.u32 %r10, [%r9];"))
}

#[test]
fn named_barrier_sync_and_arrive() {
    ordered("bar.sync", &handoff("\tbar.sync 1;", ""));
    ordered("bar.arrive -> bar.sync", &handoff("\t@%p1 bar.arrive 1, 64;", "\t@!%p1 bar.sync 1, 64;"));
    racy("no barrier", &handoff("", ""), &[FindingKind::SharedMemoryRace]);
    racy("bar.arrive on both sides", &handoff("\t@%p1 bar.arrive 1, 64;", "\t@!%p1 bar.arrive 1, 64;"), &[FindingKind::SharedMemoryRace]);
}

#[test]
fn mbarrier_arrive_release_wait_acquire() {
    let wait = "\t@!%p1 bra W;\n\tbra D;\nW:\n\tmbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;\n\t@!%p3 bra W;\nD:";
    let wait_relaxed = "\t@!%p1 bra W;\n\tbra D;\nW:\n\tmbarrier.try_wait.parity.relaxed.cta.shared.b64 %p3, [bar], 0;\n\t@!%p3 bra W;\n\tfence.acq_rel.cta;\nD:";
    ordered("arrive (release) -> try_wait (acquire)", &handoff("\t@%p2 mbarrier.arrive.shared.b64 _, [bar];", wait));
    ordered("fence + relaxed arrive -> relaxed wait + fence", &handoff("\tfence.acq_rel.cta;\n\t@%p2 mbarrier.arrive.relaxed.cta.shared.b64 _, [bar];", wait_relaxed));
    racy("relaxed arrive without fence", &handoff("\t@%p2 mbarrier.arrive.relaxed.cta.shared.b64 _, [bar];", wait), &[FindingKind::SharedMemoryRace]);
    let wait_relaxed_nofence = "\t@!%p1 bra W;\n\tbra D;\nW:\n\tmbarrier.try_wait.parity.relaxed.cta.shared.b64 %p3, [bar], 0;\n\t@!%p3 bra W;\nD:";
    racy("relaxed wait without fence", &handoff("\t@%p2 mbarrier.arrive.shared.b64 _, [bar];", wait_relaxed_nofence), &[FindingKind::SharedMemoryRace]);
}

/// Warp 0 of CTA 1 writes into CTA 0's data through DSMEM; CTA 0 reads after the cluster barrier.
fn cluster_case(arrive: &str) -> String {
    kernel(
        2,
        1,
        &format!(
            "\tmov.u32 %r11, %cluster_ctarank;\n\tsetp.eq.u32 %p4, %r11, 1;\n\tand.pred %p4, %p4, %p1;\n\tmapa.shared::cluster.u32 %r12, %r7, 0;\n\t@%p4 st.shared::cluster.u32 [%r12], %r8;\n\t{arrive}\n\tbarrier.cluster.wait.aligned;\n\t@!%p4 ld.shared.u32 %r10, [%r7];\n\tbarrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;"
        ),
    )
}

#[test]
fn cluster_barrier_release_acquire() {
    ordered("arrive.release / wait.acquire", &cluster_case("barrier.cluster.arrive.release.aligned;"));
    racy("arrive.relaxed without a fence", &cluster_case("barrier.cluster.arrive.relaxed.aligned;"), &[FindingKind::SharedMemoryRace]);
}

/// Warp 0 copies in[lane] to data[lane] with cp.async; warp 1 reads data after `sync`.
fn cp_case(after_copy: &str) -> String {
    kernel(1, 32, &format!("\tmul.wide.u32 %rd3, %r5, 4;\n\tadd.s64 %rd3, %rd2, %rd3;\n\t@%p1 cp.async.ca.shared.global [%r7], [%rd3], 4;\n{after_copy}\n\txor.b32 %r9, %r6, 4;\n\tadd.u32 %r9, %r3, %r9;\n\t@!%p1 ld.shared.u32 %r10, [%r9];"))
}

#[test]
fn cp_async_wait_group_and_mbarrier_arrive() {
    ordered("wait_group 0 + bar.sync", &cp_case("\t@%p1 cp.async.commit_group;\n\t@%p1 cp.async.wait_group 0;\n\tbar.sync 1;"));
    ordered("wait_all + bar.sync", &cp_case("\t@%p1 cp.async.wait_all;\n\tbar.sync 1;"));
    racy("bar.sync without wait_group", &cp_case("\t@%p1 cp.async.commit_group;\n\tbar.sync 1;"), &[FindingKind::SharedMemoryRace]);
    let wait = "\t@!%p1 bra W;\n\tbra D;\nW:\n\tmbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;\n\t@!%p3 bra W;\nD:";
    ordered("cp.async.mbarrier.arrive.noinc -> wait", &cp_case(&format!("\t@%p1 cp.async.mbarrier.arrive.noinc.shared.b64 [bar];\n{wait}")));
    racy("plain arrive before the copies land", &cp_case(&format!("\t@%p1 mbarrier.arrive.shared.b64 _, [bar];\n{wait}")), &[FindingKind::SharedMemoryRace]);
}

/// Warp 1 copies the shared-memory B operand of a wgmma with cp.async and waits for its own
/// copies; warp 0's wgmma.mma_async then reads it (the CuTe tutorial hopper/wgmma_sm90.cu: no
/// `__syncthreads` between `cp_async_wait<0>` and the gemm). wgmma's `.sync.aligned` orders one
/// warp's lanes (PTX 9.7.15.5.2), not the warpgroup's warps: a `bar.sync` after the wait does.
const WGMMA_OPERAND: &str = r#"//! [launch]
//! grid = [1, 1, 1]
//! block = [128, 1, 1]
//! [[buffer]]
//! name = "in"
//! bytes = 256
//! fill = "iota"
//! type = "u32"
//! [[param]]
//! name = "in_ptr"
//! buffer = "in"
.version 8.5
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 in_ptr)
{
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .f32 %f<8>;
	.reg .b64 %rd<8>;
	.shared .align 128 .b8 sm[2048];

	ld.param.u64 %rd2, [in_ptr];
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, sm;
	// warp 1: lane l copies 4 bytes to sm + 4 l
	shr.u32 %r4, %r1, 5;
	setp.eq.u32 %p2, %r4, 1;
	and.b32 %r5, %r1, 31;
	shl.b32 %r5, %r5, 2;
	add.u32 %r6, %r2, %r5;
	cvt.u64.u32 %rd3, %r5;
	add.s64 %rd4, %rd2, %rd3;
	@%p2 cp.async.ca.shared.global [%r6], [%rd4], 4;
	cp.async.wait_all;
	fence.proxy.async.shared::cta;
{SYNC}
	// the other warps take a while (the copies have landed when they read), and still race
	mov.u32 %r7, 0;
delay:
	add.u32 %r7, %r7, 1;
	setp.lt.u32 %p0, %r7, 64;
	@%p0 bra delay;
	shr.u32 %r3, %r2, 4;
	cvt.u64.u32 %rd1, %r3;
	or.b64 %rd1, %rd1, 0x0000001000080000;
	setp.ne.b32 %p1, 0, 0;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd1, %p1, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 0;
	ret;
}
"#;

#[test]
fn wgmma_operand_reads_are_ordered_after_other_warps_writes() {
    racy("wgmma after the copier's own wait_all", &WGMMA_OPERAND.replace("{SYNC}", ""), &[FindingKind::SharedMemoryRace]);
    ordered("wgmma after wait_all + bar.sync", &WGMMA_OPERAND.replace("{SYNC}", "\tbar.sync 0;"));
}

/// Warp 1 writes data[lane]; thread 0 (warp 0) stores the tile to `out` with a bulk copy and then
/// overwrites data[0].
fn store_case(before_store: &str, after_store: &str) -> String {
    kernel(
        1,
        1,
        &format!(
            "\tsetp.eq.u32 %p5, %r1, 32;\n\t@!%p1 st.shared.u32 [%r7], %r8;\n{before_store}\n\t@%p2 cp.async.bulk.global.shared::cta.bulk_group [%rd1], [data], 128;\n\t@%p2 cp.async.bulk.commit_group;\n{after_store}\n\t@%p2 st.shared.u32 [data], %r1;\n\t@%p2 cp.async.bulk.wait_group 0;"
        ),
    )
}

#[test]
fn bulk_store_proxy_fence_and_wait_group_read() {
    let fenced = "\tfence.proxy.async.shared::cta;\n\tbar.sync 1;";
    ordered("writers fence, barrier, store, wait_group.read, overwrite", &store_case(fenced, "\t@%p2 cp.async.bulk.wait_group.read 0;"));
    racy("overwrite before wait_group.read", &store_case(fenced, ""), &[FindingKind::SharedMemoryRace]);
    // The writers fence after their release; the issuer learns of the fence only through a
    // relaxed arrive, which orders nothing: the fence is not ordered before the store's issue.
    let late = "\t@!%p1 bar.arrive 1, 64;\n\t@!%p1 fence.proxy.async.shared::cta;\n\t@%p5 mbarrier.arrive.relaxed.cta.shared.b64 _, [bar];\n\t@%p1 bar.sync 1, 64;\n\t@!%p1 bra D;\nW:\n\tmbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;\n\t@!%p3 bra W;\nD:";
    racy("proxy fence not ordered before the store", &store_case(late, "\t@%p2 cp.async.bulk.wait_group.read 0;"), &[FindingKind::ProxyRace]);
}

/// A bulk load of 128 bytes into data completing on `bar`; warp 1 reads after `sync`.
fn load_case(sync: &str) -> String {
    kernel(
        1,
        1,
        &format!(
            "\t@%p2 mbarrier.arrive.expect_tx.shared.b64 _, [bar], 128;\n\t@%p2 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [data], [%rd2], 128, [bar];\n{sync}\n\t@!%p1 ld.shared.u32 %r10, [%r7];"
        ),
    )
}

#[test]
fn bulk_load_complete_tx_release() {
    let wait = "\t@!%p1 bra W;\n\tbra D;\nW:\n\tmbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;\n\t@!%p3 bra W;\nD:";
    ordered("wait on the copy's phase", &load_case(wait));
    racy("no wait", &load_case(""), &[FindingKind::TmaReadBeforeComplete, FindingKind::SharedMemoryRace]);
}

#[test]
fn race_off_and_global_mode() {
    let src = handoff("", "");
    let prog = Program::parse("race_case.ptx", &src).unwrap();
    let off = run_golden(&prog, Config { race: RaceMode::Off, ..Config::default() });
    assert!(off.findings.is_empty(), "{}", off.summary());
    // The shadow memory is counted: the estimate bounds what a run allocates (no read sets here),
    // 28 bytes per 4-byte word of the 264 bytes of shared memory plus the vector clocks.
    let ok = Program::parse("race_case.ptx", &handoff("\tbar.sync 1;", "")).unwrap();
    let mut m = hopsync_cosim::machine::Machine::new(&ok, Config::default());
    m.run();
    // Vectors of 8 clocks: 2 per warp, 17 per CTA (exit join, 16 named barriers), 2 per cluster;
    // per warp its lanes' ordering (33 clocks).
    assert_eq!(m.race_shadow_estimate(), 66 * 28 + (2 * 2 + 17 + 2) * 8 * 4 + 2 * 33 * 4);
    assert!(m.race_shadow_bytes() > 0 && m.race_shadow_bytes() <= m.race_shadow_estimate(), "{} > {}", m.race_shadow_bytes(), m.race_shadow_estimate());
    assert_eq!(hopsync_cosim::machine::Machine::new(&ok, Config { race: RaceMode::Off, ..Config::default() }).race_shadow_estimate(), 0);
    // Global memory: warp 0 writes out[lane], warp 1 reads it without a barrier.
    let g = kernel(1, 1, "\tmul.wide.u32 %rd4, %r5, 4;\n\tadd.s64 %rd4, %rd1, %rd4;\n\t@%p1 st.global.u32 [%rd4], %r8;\n\t@!%p1 ld.global.u32 %r10, [%rd4];");
    let prog = Program::parse("race_case.ptx", &g).unwrap();
    assert!(run_golden(&prog, Config::default()).findings.is_empty(), "global memory is not watched by default");
    let r = run_golden(&prog, Config { race: RaceMode::Global, ..Config::default() });
    assert_eq!(r.findings.first().map(|f| f.kind), Some(FindingKind::GlobalMemoryRace), "{}", r.summary());
    let g = kernel(1, 1, "\tmul.wide.u32 %rd4, %r5, 4;\n\tadd.s64 %rd4, %rd1, %rd4;\n\t@%p1 st.global.u32 [%rd4], %r8;\n\tbar.sync 1;\n\t@!%p1 ld.global.u32 %r10, [%rd4];");
    let prog = Program::parse("race_case.ptx", &g).unwrap();
    let r = run_golden(&prog, Config { race: RaceMode::Global, ..Config::default() });
    assert!(r.findings.is_empty(), "{}", r.summary());
}

/// Thread 0 mallocs a block and shares its address; warp 0 writes word `lane`, warp 1 reads
/// word `lane ^ 1`, `sync` between them.
fn heap_case(sync: &str) -> String {
    let externs = ".extern .func (.param .b64 func_retval0) malloc\n(\n\t.param .b64 malloc_param_0\n)\n;\n";
    let body = format!(
        "\t@!%p2 bra A;\n\t{{\n\t.param .b64 param0;\n\tst.param.b64 [param0], 256;\n\t.param .b64 retval0;\n\tcall (retval0), malloc, (param0);\n\tld.param.b64 %rd5, [retval0];\n\t}}\n\tst.shared.u64 [data], %rd5;\nA:\n\tbar.sync 0;\n\tld.shared.u64 %rd5, [data];\n\tmul.wide.u32 %rd4, %r5, 4;\n\tadd.s64 %rd6, %rd5, %rd4;\n\t@%p1 st.global.u32 [%rd6], %r8;\n{sync}\n\txor.b64 %rd4, %rd4, 4;\n\tadd.s64 %rd6, %rd5, %rd4;\n\t@!%p1 ld.global.u32 %r10, [%rd6];"
    );
    kernel(1, 1, &body).replace(".visible .entry k(", &format!("{externs}.visible .entry k("))
}

/// `--race global` watches `malloc`'s blocks too (each a global region of its own, allocated
/// during the run).
#[test]
fn heap_blocks_are_watched_with_race_global() {
    for (sync, clean) in [("\tbar.sync 1;", true), ("", false)] {
        let prog = Program::parse("race_heap.ptx", &heap_case(sync)).unwrap_or_else(|d| panic!("{d}"));
        let r = run_golden(&prog, Config { race: RaceMode::Global, ..Config::default() });
        match clean {
            true => assert!(r.findings.is_empty(), "{}", r.summary()),
            false => assert_eq!(r.findings.first().map(|f| f.kind), Some(FindingKind::GlobalMemoryRace), "{}", r.summary()),
        }
        assert!(run_golden(&prog, Config::default()).findings.is_empty(), "global memory is not watched by default");
    }
}

/// Lanes of warp 0: lane 1 writes data[1] (`store`), `sync`, then lane 0 reads it.
fn lanes_case(sync: &str) -> String {
    kernel(1, 1, &format!("\tsetp.eq.u32 %p5, %r1, 1;\n\t@%p5 st.shared.u32 [%r7], %r8;\n{sync}\n\t@%p2 ld.shared.u32 %r10, [data+4];"))
}

/// Two lanes of one warp are two threads (independent thread scheduling): a conflicting pair in
/// two instructions races unless a warp-level synchronization lies between them; lanes of one
/// instruction are one access.
#[test]
fn lanes_of_one_warp() {
    let bar_warp = "\tbar.warp.sync -1;";
    ordered("bar.warp.sync between the lanes", &lanes_case(bar_warp));
    ordered("shfl.sync between the lanes", &lanes_case("\tshfl.sync.idx.b32 %r11, %r8, 0, 31, -1;"));
    ordered("vote.sync between the lanes", &lanes_case("\tvote.sync.ballot.b32 %r11, %p1, -1;"));
    ordered("bar.sync between the lanes", &lanes_case("\tbar.sync 1;"));
    racy("nothing between the lanes", &lanes_case(""), &[FindingKind::SharedMemoryRace]);
    racy("a register-only instruction between the lanes", &lanes_case("\tadd.u32 %r11, %r8, 1;"), &[FindingKind::SharedMemoryRace]);
    // bar.warp.sync orders the lanes of its membermask only: lane 1 is not in 0x1.
    racy("bar.warp.sync without the writer", &lanes_case("\t@%p2 bar.warp.sync 1;"), &[FindingKind::SharedMemoryRace]);
    // One store by every lane to one word, then each lane reads its own word: no pair of lanes
    // in two instructions conflicts.
    ordered("one instruction, many lanes", &kernel(1, 1, "\t@%p1 st.shared.u32 [data], %r8;\n\t@%p1 st.shared.u32 [%r7+128], %r8;\n\t@%p1 ld.shared.u32 %r10, [%r7+128];"));
    // The lane race names both lanes and what orders them.
    let prog = Program::parse("race_case.ptx", &lanes_case("")).unwrap();
    let r = run_golden(&prog, Config::default());
    let f = r.findings.first().expect("a finding");
    assert!(f.message.contains("lanes 1 and 0 of warp 0") && f.message.contains("__syncwarp"), "{f}");
    assert_eq!((f.location.warp, f.location.lane), (0, 0), "placed at the read: {f}");
}

/// The first finding's message on the deterministic schedule and seeds 1-3.
fn messages(src: &str) -> Vec<String> {
    let prog = Program::parse("race_case.ptx", src).unwrap_or_else(|d| panic!("{d}\n{src}"));
    [None, Some(1), Some(2), Some(3)]
        .into_iter()
        .map(|seed| run_golden(&prog, Config { seed, ..Config::default() }).findings.first().map(|f| f.to_string()).unwrap_or_else(|| format!("seed {seed:?}: no finding")))
        .collect()
}

/// A thread read racing a copy's write into the same word gets the advice its happens-before
/// state calls for: a reader that saw the copy's issue (or read a word nothing wrote) must acquire
/// the copy's completion; a reader of the buffer's earlier contents must be waited for by the
/// issuer.
#[test]
fn copy_reader_advice_follows_happens_before() {
    // Thread 0 issues a cp.async into data[0], bar.sync 1 (no wait_group), warp 1 reads data[0]:
    // the issue is ordered before the read.
    let consume = kernel(1, 1, "\t@%p2 cp.async.ca.shared.global [data], [%rd2], 4;\n\tcp.async.commit_group;\n\tbar.sync 1;\n\t@!%p1 ld.shared.u32 %r10, [data];\n\tcp.async.wait_all;");
    for m in messages(&consume) {
        assert!(m.starts_with("finding SharedMemoryRace") && m.contains("cp.async.wait_group/wait_all") && !m.contains("reuses the buffer"), "{m}");
    }
    // Warp 0 writes data[lane], bar.sync 1, warp 1 reads data[lane] while thread 0 refills
    // data[0] with a cp.async: the read consumed the earlier write.
    let reuse = kernel(1, 1, "\t@%p1 st.shared.u32 [%r7], %r8;\n\tbar.sync 1;\n\t@!%p1 ld.shared.u32 %r10, [%r7];\n\t@%p2 cp.async.ca.shared.global [data], [%rd2], 4;\n\tcp.async.commit_group;\n\tcp.async.wait_all;");
    let ms = messages(&reuse);
    assert!(ms[0].contains("the read consumed the buffer's earlier contents") && ms[0].contains("before it reuses the buffer"), "{}", ms[0]);
    for m in ms {
        assert!(m.starts_with("finding SharedMemoryRace") && m.contains("before it reuses the buffer"), "{m}");
    }
}

/// One bug, one finding: what the TMA engine's checks name (`ProxyFenceMissing` at the copy's
/// issue, `TmaReadBeforeComplete` at the read) the race detector does not name again.
#[test]
fn tma_findings_are_not_named_twice() {
    let bugs = root().join("firmware/programs/bugs");
    for (file, kind) in [("tma_store_no_proxy_fence.cu", FindingKind::ProxyFenceMissing), ("tma_load_read_before_wait.cu", FindingKind::TmaReadBeforeComplete)] {
        let prog = Program::load(&bugs.join(file)).unwrap_or_else(|d| panic!("{d}"));
        let r = run_golden(&prog, Config { ub: UbMode::Warn, ..Config::default() });
        assert!(r.findings.iter().any(|f| f.kind == kind), "{file}: {}", r.summary());
        assert!(r.findings.iter().all(|f| f.kind == kind), "{file}: a second finding for the same bug:\n{}", r.summary());
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if !p.file_name().is_some_and(|n| n == "bad" || n == "bugs") {
                collect(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "ptx") || p.extension().is_some_and(|e| e == "cu") && !p.starts_with(root().join("firmware/programs/nvcc")) {
            out.push(p);
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Real races in programs that cannot change (their source's hash is in the silicon records,
/// `cosim/traces/sm90/calibration`): each must still be found, at its line, and is the only race
/// of its program. (path, PTX line, a phrase of the message, why it is there.)
const KNOWN_RACES: &[(&str, u32, &str, &str)] = &[];

/// Every correct program (and client) runs without a race finding, on the deterministic schedule
/// and on seed 1 (warn mode: a race after another finding would still show), except the known
/// races above, which must be found as described.
#[test]
fn no_race_in_any_correct_program() {
    let mut files = Vec::new();
    collect(&root().join("firmware/programs"), &mut files);
    assert!(files.len() > 100, "{} programs", files.len());
    let mut bad = Vec::new();
    for p in &files {
        // A client waiting for an instruction another change adds does not compile yet.
        let Ok(prog) = Program::load(p) else { continue };
        let known = KNOWN_RACES.iter().find(|k| root().join(k.0) == *p);
        for seed in [None, Some(1)] {
            let r: RunReport = run_golden(&prog, Config { seed, ub: UbMode::Warn, max_steps: 20_000_000, ..Config::default() });
            let races: Vec<_> = r.findings.iter().filter(|f| f.kind.is_race()).collect();
            let wrong = match known {
                None => races.first().map(|f| f.to_string()),
                Some((_, line, phrase, why)) => {
                    let ok = !races.is_empty() && races.iter().all(|f| f.location.line == *line && f.message.contains(phrase));
                    (!ok).then(|| format!("expected only its known race at line {line} ({why}), got {} race findings: {}", races.len(), races.first().map(|f| f.to_string()).unwrap_or_default()))
                }
            };
            if let Some(w) = wrong {
                bad.push(format!("{} (seed {seed:?}): {w}", p.display()));
                break;
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}
