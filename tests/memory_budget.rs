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
        let estimate = hopsync_sim::lockstep::footprint(p, &sm).total();
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
