//! `hopsync bench --engine rtl`: simulated cycles per second of the RTL engine, beside the
//! golden engine on the same programs. `hopsync bench --tma`: the modelled latency and bytes per
//! cycle of TMA copies versus size (16 B to 200 KB), multicast and tile shape, from programs
//! generated on the fly ([`tma_cases`]).

use crate::config::SmConfig;
use crate::engine::Engine;
use hopsync_cosim::machine::Config;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::Program;
use std::time::Instant;

/// The default programs: a 32-warp CTA mbarrier pipeline and a 16-CTA cluster ring.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("firmware/programs/bench/pipeline_32warps.ptx", include_str!("../../firmware/programs/bench/pipeline_32warps.ptx")),
    ("firmware/programs/bench/cluster16_ring.ptx", include_str!("../../firmware/programs/bench/cluster16_ring.ptx")),
];

/// One program's figures.
#[derive(Debug, Clone)]
pub struct BenchResult {
    /// Program path.
    pub program: String,
    /// Simulated cycles.
    pub cycles: u64,
    /// Cycles the engine skipped as idle (included in `cycles`).
    pub skipped: u64,
    /// Warp-instructions the RTL engine retired.
    pub instructions: u64,
    /// Unit clock edges simulated (all units).
    pub unit_edges: u64,
    /// Best RTL wall time, s.
    pub rtl_s: f64,
    /// CPU time of that run, s (Linux `/proc/thread-self/stat`, 10 ms ticks; 0 elsewhere).
    pub rtl_cpu_s: f64,
    /// Golden thread-instructions.
    pub golden_thread_instructions: u64,
    /// Best golden wall time, s.
    pub golden_s: f64,
}

impl BenchResult {
    /// One line of text.
    pub fn line(&self) -> String {
        format!(
            "{}:\n  rtl engine:    {} cycles ({} skipped idle), {} unit edges, {} warp-instructions in {:.3} s wall / {:.2} s cpu (best of reps): {:.0} cycles/s ({:.0} per cpu-s), {:.0} unit edges/s, {:.0} warp-instructions/s\n  golden engine: {} thread-instructions in {:.4} s: {:.1} M thread-instructions/s",
            self.program,
            self.cycles,
            self.skipped,
            self.unit_edges,
            self.instructions,
            self.rtl_s,
            self.rtl_cpu_s,
            self.cycles as f64 / self.rtl_s,
            if self.rtl_cpu_s > 0.0 { self.cycles as f64 / self.rtl_cpu_s } else { 0.0 },
            self.unit_edges as f64 / self.rtl_s,
            self.instructions as f64 / self.rtl_s,
            self.golden_thread_instructions,
            self.golden_s,
            self.golden_thread_instructions as f64 / self.golden_s / 1e6
        )
    }
}

/// Runs `prog` `reps` times on each engine (both must finish `ok`).
pub fn bench(prog: &Program, reps: u32) -> Result<BenchResult, String> {
    let mut r = BenchResult { program: prog.path.clone(), cycles: 0, skipped: 0, instructions: 0, unit_edges: 0, rtl_s: f64::MAX, rtl_cpu_s: 0.0, golden_thread_instructions: 0, golden_s: f64::MAX };
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let cpu = cpu_seconds();
        let mut e = Engine::new(prog, Config::default(), SmConfig::sm90());
        let outcome = e.run();
        let dt = t.elapsed().as_secs_f64();
        let dcpu = cpu_seconds() - cpu;
        let rep = e.report(&outcome);
        if rep.status != "ok" {
            return Err(rep.summary());
        }
        r.cycles = e.cycle;
        r.skipped = e.skipped;
        r.instructions = rep.instructions;
        r.unit_edges = e.unit_edges;
        if dt < r.rtl_s {
            r.rtl_s = dt;
            r.rtl_cpu_s = dcpu;
        }
        let t = Instant::now();
        let g = run_golden(prog, Config::default());
        let dt = t.elapsed().as_secs_f64();
        if g.status != "ok" {
            return Err(g.summary());
        }
        r.golden_thread_instructions = g.thread_instructions;
        r.golden_s = r.golden_s.min(dt);
    }
    Ok(r)
}

/// CPU time of this thread, s (utime + stime of `/proc/thread-self/stat`; 0 where absent).
fn cpu_seconds() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/thread-self/stat") else { return 0.0 };
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    let Some(rest) = s.rsplit_once(')').map(|x| x.1) else { return 0.0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

/// The default programs, parsed.
pub fn default_programs() -> Vec<Program> {
    PROGRAMS.iter().map(|(p, t)| Program::parse(p, t).expect("the embedded bench programs parse")).collect()
}

// ---- TMA: modelled latency and bandwidth ------------------------------------------------------

/// One TMA benchmark case: a single copy of one size and shape into shared memory, generated as
/// a program (one thread issues it, expecting its bytes on one mbarrier).
#[derive(Debug, Clone)]
pub struct TmaCase {
    /// Short name (the program's path in reports).
    pub name: String,
    /// The copy: instruction form and shape.
    pub what: String,
    /// Bytes that land in each destination CTA's shared memory.
    pub bytes: u64,
    /// CTAs that receive the copy (multicast).
    pub ctas: u32,
    /// The program text.
    pub program: String,
}

/// A TMA case's figures, in simulated cycles.
#[derive(Debug, Clone)]
pub struct TmaResult {
    /// The case.
    pub case: TmaCase,
    /// Cycles from the copy's issue to the last destination's complete-tx applied by its
    /// MbarrierUnit.
    pub latency: u64,
    /// Cycles of the whole program.
    pub cycles: u64,
}

impl TmaResult {
    /// Bytes landed per cycle of latency (all destination CTAs together).
    pub fn bytes_per_cycle(&self) -> f64 {
        (self.case.bytes * self.case.ctas as u64) as f64 / self.latency.max(1) as f64
    }

    /// One markdown table row.
    pub fn row(&self) -> String {
        format!("| {} | {} | {} | {} | {:.2} |", self.case.name, self.case.what, self.case.bytes * self.case.ctas as u64, self.latency, self.bytes_per_cycle())
    }
}

/// The program of a bulk copy of `bytes` (`ctas` > 1: `.multicast::cluster` to that many CTAs).
fn bulk_program(bytes: u64, ctas: u32) -> String {
    let cluster = if ctas > 1 { format!("//! cluster = [{ctas}, 1, 1]\n") } else { String::new() };
    let (mc, mask) = if ctas > 1 { (".multicast::cluster", ", %rs1".to_string()) } else { ("", String::new()) };
    let issuer = if ctas > 1 { "%p2" } else { "%p1" };
    format!(
        r#"//! description = "hopsync bench --tma: one cp.async.bulk of {bytes} bytes into {ctas} CTA(s)"
//! [launch]
//! grid = [{ctas}, 1, 1]
//! block = [32, 1, 1]
{cluster}{dynamic}//! [[buffer]]
//! name = "src"
//! bytes = {bytes}
//! fill = "iota"
//! [[param]]
//! name = "src_ptr"
//! buffer = "src"
.version 8.0
.target sm_90a
.address_size 64

.visible .entry bench_bulk(
	.param .u64 src_ptr
)
{{
	.reg .pred %p<4>;
	.reg .b16 %rs<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	{buf}
	.shared .align 8 .b64 bar;
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	mov.u32 %r2, %cluster_ctarank;
	setp.eq.and.u32 %p2, %r2, 0, %p1;
	ld.param.u64 %rd1, [src_ptr];
	cvta.to.global.u64 %rd1, %rd1;
	mov.b16 %rs1, {cmask};
	@%p1 mbarrier.init.shared::cta.b64 [bar], 1;
	@%p1 fence.mbarrier_init.release.cluster;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], {bytes};
	@{issuer} cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{mc} [buf], [%rd1], {bytes}, [bar]{mask};
wait:
	mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;
	@!%p3 bra wait;
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	ret;
}}
"#,
        cmask = (1u32 << ctas) - 1,
        dynamic = dynamic_manifest(bytes),
        buf = buffer_decl(bytes, 128),
    )
}

/// The destination buffer: a static `.shared` array, or dynamic shared memory where it is
/// larger than sm_90's 48 KiB of static shared variables (hopsync_firmware::limits).
fn buffer_decl(bytes: u64, align: u64) -> String {
    if needs_dynamic(bytes) {
        format!(".extern .shared .align {align} .b8 buf[];")
    } else {
        format!(".shared .align {align} .b8 buf[{bytes}];")
    }
}

/// The manifest line of [`buffer_decl`]'s dynamic shared memory, if it uses any.
fn dynamic_manifest(bytes: u64) -> String {
    if needs_dynamic(bytes) {
        format!("//! dynamic_smem = {bytes}\n")
    } else {
        String::new()
    }
}

fn needs_dynamic(bytes: u64) -> bool {
    bytes + 8 > hopsync_firmware::limits::MAX_STATIC_SMEM
}

/// The program of a bulk store of `bytes` from shared::cta to global memory (`red`: the
/// reduction `cp.reduce.async.bulk .add.u32` instead), then commit_group and wait_group 0: the
/// store is complete when its writes are acknowledged.
fn store_program(bytes: u64, red: bool) -> String {
    let op = if red { "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32" } else { "cp.async.bulk.global.shared::cta.bulk_group" };
    let words = bytes / 4;
    format!(
        r#"//! description = "hopsync bench --tma: one {op} of {bytes} bytes"
//! [launch]
//! grid = [1, 1, 1]
//! block = [32, 1, 1]
{dynamic}//! [[buffer]]
//! name = "dst"
//! bytes = {bytes}
//! [[param]]
//! name = "dst_ptr"
//! buffer = "dst"
.version 8.0
.target sm_90
.address_size 64

.visible .entry bench_store(
	.param .u64 dst_ptr
)
{{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	{buf}
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	mov.u32 %r2, buf;
	mov.u32 %r3, %r1;
fill:
	shl.b32 %r4, %r3, 2;
	add.u32 %r4, %r4, %r2;
	st.shared.u32 [%r4], %r3;
	add.u32 %r3, %r3, 32;
	setp.lt.u32 %p2, %r3, {words};
	@%p2 bra fill;
	fence.proxy.async.shared::cta;
	bar.sync 0;
	ld.param.u64 %rd1, [dst_ptr];
	cvta.to.global.u64 %rd1, %rd1;
	@%p1 {op} [%rd1], [buf], {bytes};
	@%p1 cp.async.bulk.commit_group;
	@%p1 cp.async.bulk.wait_group 0;
	ret;
}}
"#,
        dynamic = dynamic_manifest(bytes),
        buf = buffer_decl(bytes, 128),
    )
}

/// The program of a tiled tensor copy of a box `box_dim` (dimension 0 innermost) of f32
/// elements out of a tensor twice the box in every dimension, with `swizzle` ("none", "32B",
/// "64B", "128B").
fn tile_program(box_dim: &[u64], swizzle: &str) -> String {
    let rank = box_dim.len();
    let gdim: Vec<u64> = box_dim.iter().map(|b| b * 2).collect();
    let mut strides = Vec::new();
    let mut s = gdim[0] * 4;
    for d in &gdim[1..] {
        strides.push(s);
        s *= d;
    }
    let tensor_bytes = s;
    let bytes: u64 = box_dim.iter().product::<u64>() * 4;
    let list = |v: &[u64]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    let coords = (0..rank).map(|_| "0").collect::<Vec<_>>().join(", ");
    let swz = if swizzle == "none" { String::new() } else { format!("//! swizzle = \"{swizzle}\"\n") };
    format!(
        r#"//! description = "hopsync bench --tma: one cp.async.bulk.tensor.{rank}d tile of {bytes} bytes"
//! [launch]
//! grid = [1, 1, 1]
//! block = [32, 1, 1]
{dynamic}//! [[buffer]]
//! name = "tensor"
//! bytes = {tensor_bytes}
//! fill = "iota"
//! [[tensormap]]
//! name = "map"
//! buffer = "tensor"
//! data_type = "float32"
//! rank = {rank}
//! global_dim = [{gd}]
//! global_strides = [{gs}]
//! box_dim = [{bd}]
//! element_strides = [{es}]
{swz}//! [[param]]
//! name = "tmap"
//! tensormap = "map"
.version 8.0
.target sm_90
.address_size 64

.visible .entry bench_tile(
	.param .align 64 .b8 tmap[128]
)
{{
	.reg .pred %p<4>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	{buf}
	.shared .align 8 .b64 bar;
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	mov.u64 %rd1, tmap;
	cvta.param.u64 %rd1, %rd1;
	@%p1 mbarrier.init.shared::cta.b64 [bar], 1;
	bar.sync 0;
	@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], {bytes};
	@%p1 cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [buf], [%rd1, {{{coords}}}], [bar];
wait:
	mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;
	@!%p3 bra wait;
	ret;
}}
"#,
        gd = list(&gdim),
        gs = list(&strides),
        bd = list(box_dim),
        es = list(&vec![1; rank]),
        dynamic = dynamic_manifest(bytes),
        buf = buffer_decl(bytes, 1024),
    )
}

/// The TMA cases: bulk copies from 16 B to 200 KB, multicast, tile shapes (an unswizzled and a
/// 128B-swizzled tile of 128-byte rows among them), bulk stores and reductions to global memory.
pub fn tma_cases() -> Vec<TmaCase> {
    let mut v = Vec::new();
    for bytes in [16u64, 64, 256, 1024, 4096, 16384, 65536, 131072, 204800] {
        v.push(TmaCase { name: format!("bulk_{bytes}"), what: format!("cp.async.bulk {bytes} B"), bytes, ctas: 1, program: bulk_program(bytes, 1) });
    }
    for ctas in [2u32, 4] {
        let bytes = 16384;
        v.push(TmaCase { name: format!("bulk_{bytes}_mc{ctas}"), what: format!("cp.async.bulk {bytes} B .multicast::cluster to {ctas} CTAs"), bytes, ctas, program: bulk_program(bytes, ctas) });
    }
    let tiles: &[(&[u64], &str)] = &[
        (&[4, 1], "none"),
        (&[4, 64], "none"),
        (&[32, 8], "none"),
        (&[64, 64], "none"),
        (&[32, 64], "none"),
        (&[32, 64], "128B"),
        (&[32, 128], "128B"),
        (&[16, 256], "64B"),
        (&[256, 64], "none"),
        (&[16, 16, 16], "none"),
        (&[200, 256], "none"),
    ];
    for (b, swz) in tiles {
        let bytes = b.iter().product::<u64>() * 4;
        let shape = b.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x");
        let sw = if *swz == "none" { String::new() } else { format!(", swizzle {swz}") };
        v.push(TmaCase { name: format!("tile_{shape}{}", if *swz == "none" { String::new() } else { format!("_{swz}") }), what: format!("cp.async.bulk.tensor.{}d f32 box {shape}{sw}", b.len()), bytes, ctas: 1, program: tile_program(b, swz) });
    }
    for bytes in [4096u64, 16384] {
        v.push(TmaCase { name: format!("store_{bytes}"), what: format!("cp.async.bulk.global.shared::cta {bytes} B + wait_group 0"), bytes, ctas: 1, program: store_program(bytes, false) });
        v.push(TmaCase { name: format!("reduce_{bytes}"), what: format!("cp.reduce.async.bulk .add.u32 {bytes} B + wait_group 0"), bytes, ctas: 1, program: store_program(bytes, true) });
    }
    v
}

/// Runs TMA cases on the RTL engine (each must finish `ok`) with `sm`'s timing.
pub fn tma_bench(sm: &SmConfig, cases: Vec<TmaCase>) -> Result<Vec<TmaResult>, String> {
    use crate::engine::Event;
    use hopsync_firmware::Opcode;
    let mut out = Vec::new();
    for case in cases {
        let prog = Program::parse(&case.name, &case.program).map_err(|d| format!("bench program {}:\n{d}", case.name))?;
        let mut e = Engine::new(&prog, Config::default(), sm.clone());
        e.record_events();
        let outcome = e.run();
        let rep = e.report(&outcome);
        if rep.status != "ok" {
            return Err(format!("{}: {}", case.name, rep.summary()));
        }
        let body = &prog.module.kernel.body;
        let mut issue = None;
        let mut done = 0;
        for ev in e.take_events() {
            match ev {
                Event::Retire { cycle, rec } if issue.is_none() && rec.mask != 0 && matches!(body[rec.pc as usize].op, Opcode::CpAsyncBulk | Opcode::CpAsyncBulkTensor | Opcode::CpReduceAsyncBulk) => issue = Some(cycle),
                Event::TmaComplete { cycle, .. } => done = done.max(cycle),
                _ => {}
            }
        }
        let issue = issue.ok_or_else(|| format!("{}: the copy was not issued", case.name))?;
        out.push(TmaResult { case, latency: done.saturating_sub(issue), cycles: e.cycle });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tma_bench_latency_follows_size_rows_and_multicast() {
        let sm = SmConfig::sm90();
        let names = ["bulk_16", "bulk_1024", "bulk_4096", "bulk_65536", "bulk_4096_mc", "tile_4x64", "tile_32x8"];
        let mut cases: Vec<TmaCase> = tma_cases().into_iter().filter(|c| names.contains(&c.name.as_str())).collect();
        cases.push(TmaCase { name: "bulk_4096_mc".into(), what: String::new(), bytes: 4096, ctas: 2, program: bulk_program(4096, 2) });
        let rs = tma_bench(&sm, cases).expect("every TMA case runs ok");
        let lat = |n: &str| rs.iter().find(|r| r.case.name == n).map(|r| r.latency).unwrap();
        assert!(lat("bulk_16") >= sm.global.latency, "a copy waits at least the memory latency");
        assert!(lat("bulk_16") < lat("bulk_1024") && lat("bulk_1024") < lat("bulk_4096"));
        // multicast fetches once and lands each beat in every destination in the same cycle: a
        // second destination costs the remote beats' and complete-tx's DSMEM crossing (and one
        // more complete-tx), not its beats again nor a second memory latency
        assert!(lat("bulk_4096") < lat("bulk_4096_mc"));
        assert!(lat("bulk_4096_mc") <= lat("bulk_4096") + sm.dsmem.latency + 8, "{} vs {}", lat("bulk_4096_mc"), lat("bulk_4096"));
        // the same 1 KiB in 16-byte rows needs a request per row (eight times the requests of
        // 128-byte rows, one a line); one request a cycle is still one row per cycle, the
        // 16-byte beat rate, so it costs no time, never less
        assert!(lat("tile_4x64") >= lat("tile_32x8"));
        // a large copy streams at the narrower of the RTL unit's tags (read_tags requests of
        // request_bytes per latency, Little's law) and its shared-memory line write (128 B a
        // cycle for an aligned copy); the bench's source is a host-copied buffer, half of whose
        // 4 KiB blocks pay [global] far_line_cycles on their first read (the reorder buffer
        // drains in order: the far blocks hold the tags), so it reaches at least 60% of the tags'
        // bound at the far latency, issue start included
        let line = hopsync_hdl::tma_engine::TMA_LINE_BYTES as f64;
        let tags = sm.tma.read_tags as f64 * sm.tma.request_bytes as f64;
        let bound = (tags / crate::timing::tma_read_latency(&sm) as f64).min(line);
        let far = (tags / (crate::timing::tma_read_latency(&sm) + sm.global.far_line_cycles) as f64).min(line);
        assert!(far >= 64.0, "sm90.toml [tma] read_tags too few for 64 B/cycle: {far}");
        let r = rs.iter().find(|r| r.case.name == "bulk_65536").unwrap();
        assert!(r.bytes_per_cycle() <= bound && r.bytes_per_cycle() > far * 0.6, "{} vs {far}..{bound}", r.bytes_per_cycle());
    }

    /// A bulk store (and its reduction) is complete once its last write is acknowledged: at
    /// least the write acknowledgement after issue, longer for more bytes.
    #[test]
    fn tma_bench_stores_and_reductions_wait_for_their_acknowledgements() {
        let sm = SmConfig::sm90();
        let names = ["store_4096", "store_16384", "reduce_4096"];
        let cases: Vec<TmaCase> = tma_cases().into_iter().filter(|c| names.contains(&c.name.as_str())).collect();
        assert_eq!(cases.len(), 3);
        let rs = tma_bench(&sm, cases).expect("every store case runs ok");
        let lat = |n: &str| rs.iter().find(|r| r.case.name == n).map(|r| r.latency).unwrap();
        assert!(lat("store_4096") >= sm.tma.store_ack_cycles, "{}", lat("store_4096"));
        assert!(lat("store_16384") > lat("store_4096"));
        assert!(lat("reduce_4096") >= sm.tma.reduce_ack_cycles);
    }
}
