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
    // Vectors of 8 clocks: 2 per warp, 17 per CTA (exit join, 16 named barriers), 2 per cluster.
    assert_eq!(m.race_shadow_estimate(), 66 * 28 + (2 * 2 + 17 + 2) * 8 * 4);
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

/// Every correct program (and client) runs without a race finding, on the deterministic schedule
/// and on seed 1 (warn mode: a race after another finding would still show).
#[test]
fn no_race_in_any_correct_program() {
    let mut files = Vec::new();
    collect(&root().join("firmware/programs"), &mut files);
    assert!(files.len() > 100, "{} programs", files.len());
    let mut bad = Vec::new();
    for p in &files {
        // A client waiting for an instruction another change adds does not compile yet.
        let Ok(prog) = Program::load(p) else { continue };
        for seed in [None, Some(1)] {
            let r: RunReport = run_golden(&prog, Config { seed, ub: UbMode::Warn, max_steps: 20_000_000, ..Config::default() });
            if let Some(f) = r.findings.iter().find(|f| f.kind.is_race()) {
                bad.push(format!("{} (seed {seed:?}): {f}", p.display()));
                break;
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}
