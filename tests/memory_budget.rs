//! The memory budget's estimates (hopsync_cosim::budget, hopsync_sim::footprint) against what the
//! engines really allocate: a counting global allocator measures the peak of each run (nextest
//! runs every test in its own process, so nothing else allocates meanwhile). Every estimate
//! must be an upper bound of its run's peak, on the programs of the repository and on launches
//! built to stress one item each (many CTAs, the most shared memory, local frames, many
//! registers, large buffers), and not so loose that it refuses runs that would fit.

use hopsync_cosim::budget::Footprint;
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::Program;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Counts the bytes allocated now and the most allocated since the last [`peak_of`].
struct Counting;

static NOW: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

fn grew(n: u64) {
    let now = NOW.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grew(l.size() as u64);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        grew(l.size() as u64);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        NOW.fetch_sub(l.size() as u64, Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        grew(new as u64);
        let q = unsafe { System.realloc(p, l, new) };
        NOW.fetch_sub(l.size() as u64, Relaxed);
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The most bytes `f` had allocated at once (beyond what was allocated before it).
fn peak_of(f: impl FnOnce()) -> u64 {
    let base = NOW.load(Relaxed);
    PEAK.store(base, Relaxed);
    f();
    PEAK.load(Relaxed) - base
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn programs(dirs: &[&str]) -> Vec<Program> {
    let mut v = Vec::new();
    for d in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(d)).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "ptx")).collect();
        files.sort();
        v.extend(files.iter().map(|p| Program::load(p).unwrap_or_else(|e| panic!("{e}"))));
    }
    v
}

/// A launch of `grid` CTAs of `block` threads with `dynamic` bytes of dynamic shared memory whose
/// kernel declares `decls` and runs `body` (every thread, then exits).
fn stress(name: &str, grid: u32, block: u32, dynamic: u32, buffers: &str, params: &str, decls: &str, body: &str) -> Program {
    let src = format!(
        "//! [launch]\n//! grid = [{grid}, 1, 1]\n//! block = [{block}, 1, 1]\n//! dynamic_smem = {dynamic}\n{buffers}.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k({params})\n{{\n{decls}\n{body}\n\tret;\n}}\n"
    );
    Program::parse(name, &src).unwrap_or_else(|e| panic!("{e}"))
}

/// Launches that each make one item of the estimate large.
fn stress_programs() -> Vec<Program> {
    let mbar = "\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<2>;\n\t.reg .pred %p<2>;";
    // Thread 0 initializes an mbarrier at the very top of shared memory; everyone arrives.
    let top = "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 mbarrier.init.shared::cta.b64 [dyn+DYN8], 1;";
    let out = "//! [[buffer]]\n//! name = \"out\"\n//! bytes = 4194304\n//! fill = \"random\"\n//! output = true\n//! [[param]]\n//! name = \"out_ptr\"\n//! buffer = \"out\"\n";
    let regs: String = (0..40).map(|i| format!("\tmov.u64 %x{i}, {i};\n")).collect();
    vec![
        stress("many_ctas", 512, 64, 0, "", "", mbar, "\tmov.u32 %r1, %tid.x;"),
        stress(
            "most_shared_memory",
            16,
            32,
            227 * 1024 - 8192,
            "",
            "",
            &format!("{mbar}\n\t.shared .align 8 .b8 st[8192];\n\t.extern .shared .align 1024 .b8 dyn[];"),
            &top.replace("DYN8", &(227 * 1024 - 8192 - 8).to_string()),
        ),
        stress("local_frames", 8, 1024, 0, "", "", "\t.reg .b32 %r<2>;\n\t.local .align 8 .b8 frame[16384];", "\tmov.u32 %r1, %tid.x;\n\tst.local.u32 [frame+16380], %r1;"),
        stress("many_registers", 4, 1024, 0, "", "", "\t.reg .b64 %x<1000>;", &regs),
        stress("big_output", 2, 32, 0, out, ".param .u64 out_ptr", "\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<2>;", "\tld.param.u64 %rd1, [out_ptr];\n\tmov.u32 %r1, %tid.x;\n\tst.global.u32 [%rd1], %r1;"),
    ]
}

/// What is wrong with `estimate` as a bound of `peak`.
fn judge(engine: &str, p: &Program, estimate: u64, peak: u64) -> Option<String> {
    let shown = format!("{engine} {}: peak {peak} bytes, estimate {estimate} bytes ({:.2}x)", p.path, estimate as f64 / peak.max(1) as f64);
    println!("{shown}");
    if peak > estimate {
        return Some(format!("{shown}: the run allocated more than its estimate"));
    }
    // Loose enough to stay a bound, tight enough not to refuse runs that fit: at most 4x the
    // peak beyond the fixed bookkeeping (4 MiB per machine).
    if estimate > 4 * peak + (8 << 20) {
        return Some(format!("{shown}: the estimate is more than 4x the peak"));
    }
    None
}

fn check_all(engine: &str, progs: &[Program], run: impl Fn(&Program) -> (u64, u64)) {
    let problems: Vec<String> = progs
        .iter()
        .filter_map(|p| {
            let (estimate, peak) = run(p);
            judge(engine, p, estimate, peak)
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_golden_estimate_bounds_the_golden_run() {
    let mut progs = programs(&["firmware/programs/seeds", "firmware/programs/tma", "firmware/programs/demo"]);
    progs.extend(stress_programs());
    check_all("golden", &progs, |p| {
        let estimate = Footprint::golden(p).total();
        let peak = peak_of(|| {
            run_golden(p, Config::default());
        });
        (estimate, peak)
    });
}

#[test]
fn the_sm_engine_estimate_bounds_the_rtl_run() {
    let sm = hopsync_sim::SmConfig::sm90();
    let mut progs = programs(&["firmware/programs/seeds", "firmware/programs/tma"]);
    progs.extend(stress_programs());
    check_all("rtl", &progs, |p| {
        let estimate = hopsync_sim::footprint(p, &sm).total();
        let peak = peak_of(|| {
            hopsync_sim::run_rtl(p, Config::default(), sm.clone());
        });
        (estimate, peak)
    });
}

#[test]
fn the_cosim_estimate_bounds_the_lockstep_run() {
    let sm = hopsync_sim::SmConfig::sm90();
    let mut progs = programs(&["firmware/programs/seeds"]);
    progs.extend(stress_programs());
    check_all("cosim", &progs, |p| {
        let estimate = hopsync_sim::lockstep::footprint(p, &sm, Default::default()).total();
        let peak = peak_of(|| {
            hopsync_sim::lockstep::run_cosim(p, Config::default(), sm.clone());
        });
        (estimate, peak)
    });
}

/// A `--ub warn` run that finds something at every iteration keeps the first
/// `MAX_FINDINGS` findings and counts the rest, so its memory stays bounded.
#[test]
fn a_warn_run_keeps_a_bounded_number_of_findings() {
    use hopsync_cosim::machine::{UbMode, MAX_FINDINGS};
    let n = MAX_FINDINGS as u32 + 2_000;
    let p = stress(
        "divide_by_zero_in_a_loop",
        1,
        1,
        0,
        "",
        "",
        "\t.reg .b32 %r<4>;\n\t.reg .pred %p<2>;",
        &format!("\tmov.u32 %r1, 0;\n\tmov.u32 %r3, 0;\nLOOP:\n\tdiv.u32 %r2, %r1, %r3;\n\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, {n};\n\t@%p1 bra LOOP;"),
    );
    let r = run_golden(&p, Config { ub: UbMode::Warn, ..Config::default() });
    assert_eq!((r.findings.len(), r.findings_dropped), (MAX_FINDINGS, 2_000), "{}", r.status);
    assert!(r.summary().contains("... and 2000 more findings, not kept"));
}

/// A kernel whose thread 0 mallocs `bytes`, writes the block and frees it, `n` times.
fn malloc_free_loop(n: u32, bytes: u32) -> Program {
    let externs = ".extern .func (.param .b64 func_retval0) malloc\n(\n\t.param .b64 malloc_param_0\n)\n;\n.extern .func free\n(\n\t.param .b64 free_param_0\n)\n;\n";
    let body = format!(
        "\tmov.u32 %r1, 0;\nLOOP:\n\t{{\n\t.param .b64 param0;\n\tst.param.b64 [param0], {bytes};\n\t.param .b64 retval0;\n\tcall.uni (retval0), malloc, (param0);\n\tld.param.b64 %rd1, [retval0];\n\t}}\n\tsetp.eq.u64 %p1, %rd1, 0;\n\t@%p1 trap;\n\tst.global.u32 [%rd1+{}], %r1;\n\t{{\n\t.param .b64 param0;\n\tst.param.b64 [param0], %rd1;\n\tcall.uni free, (param0);\n\t}}\n\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, {n};\n\t@%p1 bra LOOP;",
        bytes - 4
    );
    let src = format!(
        "//! [launch]\n//! grid = [1, 1, 1]\n//! block = [1, 1, 1]\n.version 8.0\n.target sm_90\n.address_size 64\n{externs}.visible .entry k()\n{{\n\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<2>;\n\t.reg .pred %p<2>;\n{body}\n\tret;\n}}\n"
    );
    Program::parse(&format!("malloc_free_loop_{n}"), &src).unwrap_or_else(|e| panic!("{e}"))
}

/// The device heap reuses what `free` returned: a malloc/free loop that goes round the heap's
/// address range many times (4 KiB blocks: 7710 fit in it) finishes, never runs out, and its
/// memory stops growing once the quarantine is full; the estimate bounds it.
#[test]
fn a_malloc_free_loop_reuses_the_heap_in_bounded_memory() {
    let run = |n: u32| {
        let p = malloc_free_loop(n, 4096);
        let estimate = Footprint::golden(&p).total();
        let t = std::time::Instant::now();
        let mut status = String::new();
        let peak = peak_of(|| status = run_golden(&p, Config::default()).status);
        assert_eq!(status, "ok", "{n} iterations");
        assert!(peak <= estimate, "{n} iterations: peak {peak} above the estimate {estimate}");
        println!("{n} iterations: peak {peak} bytes, estimate {estimate}, {:?}", t.elapsed());
        peak
    };
    let (short, long) = (run(20_000), run(40_000));
    assert!(long <= short + (256 << 10), "memory grows with the number of mallocs: {short} then {long} bytes");
    assert!(long < 12 << 20, "{long} bytes for one live 4 KiB block");
}

/// With `--race global` every warp's vector clock spans the whole grid (quadratic in the warps):
/// the estimate counts it, bounds the run, and refuses a large grid before it allocates.
#[test]
fn the_race_global_estimate_bounds_its_run() {
    use hopsync_cosim::race::RaceMode;
    let progs = stress_programs();
    let p = progs.iter().find(|p| p.path == "many_ctas").expect("the many-CTA launch");
    let estimate = Footprint::golden_with_race(p, RaceMode::Global).total();
    let shared = Footprint::golden_with_race(p, RaceMode::Shared).total();
    // Vectors of 512 CTAs x 2 warps x 4 agents clocks instead of 1 x 2 x 4: 2 per warp (1024),
    // 19 per CTA (its exit join, 16 named barriers, its cluster's two phases).
    assert_eq!(estimate - shared, (2 * 1024 + 19 * 512) * (4096 - 8) * 4, "{estimate} vs {shared}");
    let peak = peak_of(|| {
        run_golden(p, Config { race: RaceMode::Global, ..Config::default() });
    });
    assert!(peak <= estimate, "peak {peak}, estimate {estimate}");
    let big = stress("race_global_big_grid", 4096, 1024, 0, "", "", "\t.reg .b32 %r<2>;", "\tmov.u32 %r1, %tid.x;");
    let e = Footprint::golden_with_race(&big, RaceMode::Global).check(&big, "golden", hopsync_cosim::budget::DEFAULT_MEM_LIMIT).unwrap_err();
    assert!(e.msg.contains("race detector (--race global)"), "{e}");
}
