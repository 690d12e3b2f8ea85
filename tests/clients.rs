//! Real client kernels in CUDA C++ (`firmware/programs/clients/*.cu`), unmodified below their
//! `//!` manifest: each is compiled by nvcc (the PyPI packages hopsync installs into its cache on
//! first use; the PTX is cached by content hash), run on the golden engine and on the RTL engine
//! in lockstep with it (0 divergences), and its outputs are checked against a reference computed
//! here (CPU GEMMs for CUTLASS's and CuTe's kernels, from the inputs the manifest filled). Every
//! `.cu` under clients/ must have an entry in [`CLIENTS`]. CUTLASS's heavy compiles come from
//! nvcc's PTX committed under firmware/nvcc_ptx/ (`[cuda] ptx`).

use hopsync_cosim::machine::{Config, UbMode};
use hopsync_cosim::report::{run_golden, unhex, RunReport};
use hopsync_firmware::manifest::Manifest;
use hopsync_firmware::Program;
use hopsync_sim::{lockstep::run_cosim, SmConfig};
use std::path::{Path, PathBuf};

fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("firmware/programs/clients")
}

/// `u32` words of an output buffer.
fn words(r: &RunReport, name: &str) -> Vec<u32> {
    unhex(r.outputs.get(name).map(String::as_str).unwrap_or("")).chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn floats(r: &RunReport, name: &str) -> Vec<f32> {
    words(r, name).into_iter().map(f32::from_bits).collect()
}

/// A client's check: its run's report and its manifest (the inputs, as the launch filled them).
type Check = fn(&RunReport, &Manifest) -> Result<(), String>;

/// The initial contents of input buffer `name`, as `u32` words.
fn input_words(m: &Manifest, name: &str) -> Vec<u32> {
    let b = m.buffers.iter().find(|b| b.name == name).unwrap_or_else(|| panic!("no buffer `{name}`"));
    b.initial_bytes().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn input_i32(m: &Manifest, name: &str) -> Vec<i32> {
    input_words(m, name).into_iter().map(|w| w as i32).collect()
}

fn input_f32(m: &Manifest, name: &str) -> Vec<f32> {
    input_words(m, name).into_iter().map(f32::from_bits).collect()
}

fn halves(r: &RunReport, name: &str) -> Vec<f32> {
    unhex(r.outputs.get(name).map(String::as_str).unwrap_or("")).chunks(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
}

fn input_f16(m: &Manifest, name: &str) -> Vec<f32> {
    let b = m.buffers.iter().find(|b| b.name == name).unwrap_or_else(|| panic!("no buffer `{name}`"));
    b.initial_bytes().chunks(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
}

/// The reference GEMM: element (m, n) of `alpha * A * B + beta * C` for an M x N x K problem, each
/// operand given by its elements and its (row, column) strides.
struct Gemm<'a> {
    m: usize,
    n: usize,
    k: usize,
    a: (&'a [f32], usize, usize),
    b: (&'a [f32], usize, usize),
    alpha: f32,
    beta: f32,
    c: Option<(&'a [f32], usize, usize)>,
}

impl Gemm<'_> {
    /// D in column-major order (element (m, n) at m + n * M). The operands are small integers, so
    /// every product and partial sum is exact and the order of summation does not matter.
    fn column_major(&self) -> Vec<f32> {
        let at = |(x, rs, cs): (&[f32], usize, usize), i: usize, j: usize| x[i * rs + j * cs];
        (0..self.n)
            .flat_map(|j| (0..self.m).map(move |i| (i, j)))
            .map(|(i, j)| {
                let acc: f32 = (0..self.k).map(|k| at(self.a, i, k) * at(self.b, k, j)).sum();
                self.alpha * acc + self.c.map_or(0.0, |c| self.beta * at(c, i, j))
            })
            .collect()
    }
}

fn ints(r: &RunReport, name: &str) -> Vec<i32> {
    words(r, name).into_iter().map(|w| w as i32).collect()
}

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

/// (file, UB mode the client runs under, check of its outputs).
const CLIENTS: &[(&str, UbMode, Check)] = &[
    ("barrier_arrive_wait.cu", UbMode::Error, |r, _| {
        let sum = 127 * 128 / 2;
        expect("out", words(r, "out"), (1..=4).map(|k| k * sum).collect())
    }),
    ("cuda_barrier_tx.cu", UbMode::Error, |r, _| expect("out", words(r, "out"), (0..512).map(|j| (j / 256) * 256 + 255 - j % 256).collect())),
    ("cg_memcpy_async_wait.cu", UbMode::Error, |r, _| expect("out", words(r, "out"), (0..256).map(|j| 2 * ((j / 128) * 256 + j % 128) + 128).collect())),
    ("cluster_dsmem_reduce.cu", UbMode::Error, |r, _| {
        let sum = |peer: u32| (0..32).map(|t| peer * 1000 + t).sum::<u32>();
        expect("out", words(r, "out"), (0..4).map(|rank| sum((rank + 1) % 4)).collect())
    }),
    ("device_calls_heap.cu", UbMode::Error, |r, _| {
        let fact = |n: i32| (1..=n).product::<i32>().max(1);
        let bias = [100, 200, 300, 400];
        let want: Vec<i32> = (0..8).map(|t| if t % 2 == 0 { fact(t % 6) + 1 } else { -fact(t % 6) } + bias[t as usize % 4]).collect();
        expect("out", words(r, "out").into_iter().map(|w| w as i32).collect(), want.clone())?;
        let lines: Vec<String> = (0..8).map(|t| format!("thread {t}: fact({}) = {} -> {}\n", t % 6, fact(t % 6), want[t as usize])).collect();
        expect("printf", r.printf.iter().map(|o| o.text.clone()).collect::<Vec<_>>(), lines)
    }),
    ("memcpy_async_bulk.cu", UbMode::Error, |r, _| expect("out", words(r, "out"), (0..512).map(|i| 2 * i).collect())),
    ("pipeline_producer_consumer.cu", UbMode::Error, |r, _| {
        let want: Vec<f32> = (0..8).map(|b| (0..128).map(|i| (b * 128 + i) as f32).sum()).collect();
        expect("out", floats(r, "out"), want)
    }),
    ("pipeline_two_stage.cu", UbMode::Error, |r, _| {
        let want = (0..64u32).map(|t| (0..8u32).flat_map(|k| (0..4u32).map(move |j| (k * 64 + t) * 4 + j)).sum()).collect();
        expect("out", words(r, "out"), want)
    }),
    ("ptx_bulk_ignore_oob.cu", UbMode::Error, |r, _| expect("out", floats(r, "out"), (1..=25).map(|i| 2.0 * i as f32).collect())),
    ("ptx_bulk_store_reduce.cu", UbMode::Error, |r, _| {
        expect("out", words(r, "out"), (0..512).map(|j| 3 * j + 1).collect())?;
        expect("acc", words(r, "acc"), (0..512).map(|j| j + 3 * j + 1).collect())
    }),
    ("ptx_mbarrier_wrappers.cu", UbMode::Error, |r, _| expect("out", words(r, "out"), (0..256).map(|i| i + 2).collect())),
    ("ptx_multicast_elect.cu", UbMode::Error, |r, _| expect("out", words(r, "out"), (0..256).map(|j| (5 + j % 128) * (j / 128 + 1)).collect())),
    ("ptx_st_async_ring.cu", UbMode::Error, |r, _| {
        // CTA r receives from its left neighbour l = (r + 3) % 4
        let want = (0..4u32).flat_map(|r| {
            let l = (r + 3) % 4;
            [10 * l + 1, 10 * l + 2, l * 1000 + 7, 100 + l + 1]
        });
        expect("out", words(r, "out"), want.collect())
    }),
    ("ptx_tensor_2d_roundtrip.cu", UbMode::Error, |r, _| expect("tensor", words(r, "tensor"), (0..512).map(|j| j + 1).collect())),
    ("atomic_ref_scopes.cu", UbMode::Error, |r, _| {
        let v = |b: i32, t: i32| (t * 37 % 101) - 50 + b;
        let all: Vec<i32> = (0..4).flat_map(|b| (0..128).map(move |t| v(b, t))).collect();
        let total = all.iter().sum::<i32>();
        expect("totals", ints(r, "totals"), vec![total, *all.iter().max().unwrap(), *all.iter().min().unwrap(), 8])?;
        expect("slots", ints(r, "slots"), (0..8).map(|k| 1000 + k).collect())?;
        let flags: Vec<i32> = (0..4).flat_map(|b| [(0..128).map(|t| v(b, t)).sum::<i32>(), 0x0fff_ffff]).collect();
        expect("flags", ints(r, "flags"), flags)
    }),
    ("barrier_completion_drop.cu", UbMode::Error, |r, _| {
        let tri = |n: i32| n * (n + 1) / 2;
        let want = (0..6).map(|p| (p + 1) * if p < 4 { tri(128) } else { tri(64) }).collect();
        expect("out", ints(r, "out"), want)
    }),
    ("cg_reduce_scan.cu", UbMode::Error, |r, m| {
        let x = input_i32(m, "in");
        let tiles: Vec<&[i32]> = x.chunks(32).collect();
        expect("sums", ints(r, "sums"), tiles.iter().map(|t| t.iter().sum()).collect())?;
        let maxes = tiles.iter().flat_map(|t| [*t.iter().max().unwrap(), t.iter().fold(0, |a, b| a ^ b)]).collect();
        expect("maxes", ints(r, "maxes"), maxes)?;
        expect("halves", floats(r, "halves"), tiles.iter().map(|t| 0.5 * t.iter().sum::<i32>() as f32).collect())?;
        let scans = tiles
            .iter()
            .flat_map(|t| (0..32).flat_map(move |l| [t[..=l].iter().sum::<i32>(), t[..l].iter().fold(0, |a, b| a | b)]))
            .collect();
        expect("scans", ints(r, "scans"), scans)?;
        expect("small", ints(r, "small"), x.chunks(8).map(|g| *g.iter().min().unwrap()).collect())
    }),
    ("matmul_async_copy_stages.cu", UbMode::Error, |r, m| {
        let (a, b) = (input_f32(m, "A"), input_f32(m, "B"));
        let c = (0..32).flat_map(|i| {
            let (a, b) = (&a, &b);
            (0..32).map(move |j| (0..96).map(|k| a[i * 96 + k] * b[k * 32 + j]).sum::<f32>())
        });
        expect("C", floats(r, "C"), c.collect())
    }),
    ("ptx_bulk_reduce_dsmem.cu", UbMode::Error, |r, m| {
        let x = input_i32(m, "in");
        let want = (0..2).flat_map(|rank: i32| {
            let peer = (rank ^ 1) as usize;
            let x = &x;
            let acc = (0..64).map(move |i| 1000 * (rank + 1) + i as i32 + x[peer * 64 + i]);
            let hi = (0..64).map(move |i| (20 - i as i32).max(x[peer * 64 + i]));
            acc.chain(hi)
        });
        expect("out", ints(r, "out"), want.collect())
    }),
    ("ptx_cluster_sregs.cu", UbMode::Error, |r, _| {
        let ids = (0..8u32).flat_map(|cta| {
            let (bx, by) = (cta % 4, cta / 4);
            let rank = bx % 2 + 2 * (by % 2);
            let next = (rank + 1) % 4;
            [bx / 2, by / 2, 2, 1, bx % 2, by % 2, 2, 2, rank, 4, 1, 64, 120, next, next, 7]
        });
        expect("ids", words(r, "ids"), ids.collect())?;
        let masks = (0..32u32).flat_map(|l| {
            let (eq, lt, le) = (1u32 << l, ((1u64 << l) - 1) as u32, ((2u64 << l) - 1) as u32);
            [eq, lt, le, !le, !lt]
        });
        expect("masks", words(r, "masks"), masks.collect())
    }),
    ("ptx_red_async_ops.cu", UbMode::Error, |r, _| {
        let want = (0..4u32).flat_map(|rank| {
            let l = (rank + 3) % 4;
            [32, 5000 - 32, 31 * 7 + l, l, 0xffff_ffff, 0xffff_ff00]
        });
        expect("out", words(r, "out"), want.collect())
    }),
    // Rank 0 multicasts chunk r (words r * 64 ..) to all 4 CTAs; lane l of warp w reads word
    // w * 32 + l of it, weighted by r + 1: each warp's sum, then the CTA's rank twice.
    ("ptx_multicast_parity_ring.cu", UbMode::Error, |r, _| {
        let warp = |w: u32| (0..4u32).flat_map(|c| (0..32u32).map(move |l| (c * 64 + w * 32 + l) * (c + 1))).sum::<u32>();
        expect("out", words(r, "out"), (0..4u32).flat_map(|rank| [warp(0), warp(1), rank, rank]).collect())
    }),
    ("ws_setmaxnreg_bulk_ring.cu", UbMode::Error, |r, _| {
        let want = (0..128u32).map(|t| (0..12u32).map(|c| ((c * 128 + t) * (c + 1)) as f32).sum()).collect();
        expect("out", floats(r, "out"), want)
    }),
    // Tile t (64 floats of the iota input, 10 per CTA): out = 3 * in + 1, sums[t] = its sum.
    ("pipeline_partitioned_three_stage.cu", UbMode::Error, |r, _| {
        expect("out", floats(r, "out"), (0..1280).map(|i| 3.0 * i as f32 + 1.0).collect())?;
        expect("sums", floats(r, "sums"), (0..20).map(|t| (t * 64..t * 64 + 64).sum::<u32>() as f32).collect())
    }),
    // CUTLASS example 48: A row-major (M x K), B column-major (K x N), C and D column-major.
    ("cutlass_ex48_tf32_cooperative.cu", UbMode::Error, |r, m| {
        let (a, b, c) = (input_f32(m, "A"), input_f32(m, "B"), input_f32(m, "C"));
        let d = Gemm { m: 512, n: 256, k: 64, a: (&a, 64, 1), b: (&b, 1, 64), alpha: 1.0, beta: 2.0, c: Some((&c, 1, 512)) };
        expect("D", floats(r, "D"), d.column_major())
    }),
    // CUTLASS example 49's ping-pong kernel: A row-major, B column-major, C and D column-major, f16.
    ("cutlass_ex49_f16_pingpong.cu", UbMode::Error, |r, m| {
        let (a, b, c) = (input_f16(m, "A"), input_f16(m, "B"), input_f16(m, "C"));
        let d = Gemm { m: 512, n: 256, k: 128, a: (&a, 128, 1), b: (&b, 1, 128), alpha: 1.0, beta: 2.0, c: Some((&c, 1, 512)) };
        expect("D", halves(r, "D"), d.column_major())
    }),
    // The CuTe tutorial's NT GEMM: A is M x K with stride (1, M), B is N x K with stride (1, N).
    ("cute_wgmma_tma_nt.cu", UbMode::Error, |r, m| {
        let (a, b) = (input_f16(m, "A"), input_f16(m, "B"));
        let c = Gemm { m: 256, n: 128, k: 256, a: (&a, 1, 256), b: (&b, 128, 1), alpha: 1.0, beta: 0.0, c: None };
        expect("C", halves(r, "C"), c.column_major())
    }),
    // ... and its TN GEMM: A is M x K with stride (K, 1), B is N x K with stride (K, 1).
    ("cute_wgmma_tma_tn.cu", UbMode::Error, |r, m| {
        let (a, b) = (input_f16(m, "A"), input_f16(m, "B"));
        let c = Gemm { m: 256, n: 128, k: 256, a: (&a, 256, 1), b: (&b, 1, 256), alpha: 1.0, beta: 0.0, c: None };
        expect("C", halves(r, "C"), c.column_major())
    }),
    // Seed 000 calls init(&bar, ...) from every thread (PTX 9.7.13.15.9: undefined); with
    // --ub warn it runs to the end and every block prints what it received.
    ("seed000_st_async.cu", UbMode::Warn, |r, _| {
        expect("first finding", r.findings.first().map(|f| f.kind.name()), Some("MbarrierInitOnValid"))?;
        let got: Vec<&str> = r.printf.iter().map(|o| o.text.as_str()).filter(|t| t.contains("receive_buffer")).collect();
        let mut want: Vec<String> = (0..8).map(|b| format!("[block {b}] receive_buffer = {{ {}, 2, 3, 4 }}\n", b ^ 1)).collect();
        let mut got: Vec<String> = got.into_iter().map(str::to_string).collect();
        got.sort();
        want.sort();
        expect("received lines", got, want)?;
        expect("printf lines", r.printf.len(), 24)
    }),
];

/// The instructions still missing from hopsync that a client needs (another change adds them):
/// until then the client must stop with a diagnostic naming them, and nothing else.
const WAITING_FOR: &[(&str, &str)] = &[];

/// What the RTL engine's units cannot do yet that a client needs (another change adds it): the
/// golden run must be correct, the lockstep run must agree up to there, and the RTL engine must
/// stop with this `unsupported:` message and nothing else.
const RTL_WAITS_FOR: &[(&str, &str)] = &[];

fn run_client(file: &str, ub: UbMode, check: Check) -> Result<String, String> {
    let path = clients_dir().join(file);
    let prog = match Program::load(&path) {
        Ok(p) => p,
        Err(d) => {
            let text = d.to_string();
            if let Some((_, what)) = WAITING_FOR.iter().find(|(f, w)| *f == file && text.contains(&format!("unsupported: the PTX instruction `{w}"))) {
                return Ok(format!("{file}: waits for `{what}`"));
            }
            return Err(format!("{file} does not compile or parse:\n{text}"));
        }
    };
    let cfg = Config { ub, ..Config::default() };
    let golden = run_golden(&prog, cfg.clone());
    if golden.status != "ok" && ub == UbMode::Error {
        return Err(format!("{file}: golden engine: {}", golden.summary()));
    }
    check(&golden, &prog.manifest).map_err(|e| format!("{file}: golden engine: {e}"))?;
    let cosim = run_cosim(&prog, cfg, SmConfig::sm90());
    if let Some(d) = cosim.divergences.first() {
        return Err(format!("{file}: cosim: {d}"));
    }
    let rtl_error = cosim.run.error.as_deref().unwrap_or("");
    if let Some((_, what)) = RTL_WAITS_FOR.iter().find(|(f, w)| *f == file && cosim.run.status == "error" && rtl_error.starts_with(w)) {
        return Ok(format!("{file}: ok on the golden engine; the RTL engine stops at `{what}` ({} instructions compared)", cosim.compared));
    }
    if cosim.run.status != golden.status {
        return Err(format!("{file}: rtl engine: {}", cosim.run.summary()));
    }
    check(&cosim.run, &prog.manifest).map_err(|e| format!("{file}: rtl engine: {e}"))?;
    if golden.outputs != cosim.run.outputs {
        return Err(format!("{file}: rtl engine outputs differ from the golden engine's"));
    }
    Ok(format!("{file}: ok ({} instructions compared, {} cycles)", cosim.compared, cosim.run.cycles.unwrap_or(0)))
}

#[test]
fn every_client_runs_with_correct_outputs_on_golden_and_rtl() {
    let mut listed: Vec<String> = std::fs::read_dir(clients_dir()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".cu")).collect();
    listed.sort();
    let mut known: Vec<String> = CLIENTS.iter().map(|(f, _, _)| f.to_string()).collect();
    known.sort();
    assert_eq!(listed, known, "every client under {} needs an entry in CLIENTS", clients_dir().display());
    let mut failures = Vec::new();
    for (file, ub, check) in CLIENTS.iter().filter(|(f, _, _)| !HEAVY.contains(f)) {
        match run_client(file, *ub, *check) {
            Ok(line) => println!("{line}"),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The clients whose runs take longest (CUTLASS's and CuTe's GEMMs): each is its own test, so
/// nextest runs them beside the others.
const HEAVY: &[&str] = &["cutlass_ex48_tf32_cooperative.cu", "cutlass_ex49_f16_pingpong.cu", "cute_wgmma_tma_nt.cu", "cute_wgmma_tma_tn.cu"];

fn run_heavy(file: &str) {
    let (f, ub, check) = CLIENTS.iter().find(|(f, _, _)| *f == file).unwrap_or_else(|| panic!("{file} is not in CLIENTS"));
    match run_client(f, *ub, *check) {
        Ok(line) => println!("{line}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn cutlass_example_48_tf32_cooperative_gemm() {
    run_heavy("cutlass_ex48_tf32_cooperative.cu");
}

#[test]
fn cutlass_example_49_f16_pingpong_gemm() {
    run_heavy("cutlass_ex49_f16_pingpong.cu");
}

#[test]
fn cute_tutorial_wgmma_tma_nt_gemm() {
    run_heavy("cute_wgmma_tma_nt.cu");
}

#[test]
fn cute_tutorial_wgmma_tma_tn_gemm() {
    run_heavy("cute_wgmma_tma_tn.cu");
}

/// A finding in a `.cu` program names the `.cu` line (nvcc's `.loc`) with the PTX line beside.
#[test]
fn client_findings_point_at_cuda_lines() {
    let prog = Program::load(&clients_dir().join("seed000_st_async.cu")).unwrap_or_else(|d| panic!("{d}"));
    let r = run_golden(&prog, Config::default());
    let f = r.findings.first().expect("the seed's init on a live barrier is a finding");
    assert_eq!(f.kind.name(), "MbarrierInitOnValid");
    let cu = std::fs::read_to_string(clients_dir().join("seed000_st_async.cu")).unwrap();
    let line = cu.lines().nth(f.location.line as usize - 1).unwrap_or("");
    assert!(f.location.file.ends_with("seed000_st_async.cu") && line.contains("init(&bar, blockDim.x)"), "{f}\nline: {line}");
    assert!(f.location.ptx.contains(".ptx:"), "{f}");
    assert!(Path::new(f.location.ptx.split(':').next().unwrap()).is_file(), "{f}");
}

/// `scripts/gpu_clients.sh pack`: every client that loads is packed for the GPU runner at PTX ISA
/// 9.0 (what CUDA 13.0's driver JIT-compiles; nvcc 13.5 writes 9.5), the plain program with its
/// `.cu` manifest, and the batch runs on the golden engine in the runner's format.
#[test]
fn clients_pack_for_the_gpu_at_ptx_isa_9_0() {
    use hopsync_cosim::gpu::pack::{run_batch_golden, write_batch_with, PackOptions};
    let dir = std::env::temp_dir().join(format!("hopsync_clients_pack_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files: Vec<PathBuf> = CLIENTS.iter().filter(|(f, _, _)| !WAITING_FOR.iter().any(|(w, _)| w == f)).map(|(f, _, _)| clients_dir().join(f)).collect();
    let entries = write_batch_with(&files, &dir.join("batch"), &PackOptions { ptx_version: Some((9, 0)), ..Default::default() }).unwrap();
    let mut packed = 0;
    for e in &entries {
        let newer = NEEDS_NEWER_PTX.iter().find(|(f, _)| e.program.ends_with(f));
        let m = match (&e.result, newer) {
            (Ok(m), None) => m,
            (Err(err), Some((_, why))) if err.contains("at PTX ISA 9.0 (--ptx-version) ptxas rejects it") && err.contains(why) => continue,
            (r, _) => panic!("{}: {:?}", e.program, r.as_ref().map(|m| &m.name)),
        };
        packed += 1;
        for f in [&m.traced_launch, &m.plain_launch] {
            let ptx = std::fs::read_to_string(dir.join("batch").join(format!("{f}.ptx"))).unwrap();
            assert!(ptx.lines().any(|l| l == ".version 9.0"), "{f}: not retargeted");
            assert!(ptx.starts_with("//!"), "{f}: no manifest");
        }
    }
    let n = run_batch_golden(&dir.join("batch"), &dir.join("results"), hopsync_cosim::budget::DEFAULT_MEM_LIMIT).unwrap();
    assert_eq!(n, 2 * packed);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Clients whose PTX (nvcc 13.5, libcu++ 13.5) uses what ptxas accepts only after PTX ISA 9.0,
/// so the GPU machine's CUDA 13.0 driver cannot JIT-compile them (record them with a driver of
/// CUDA 13.1 or later): the file and ptxas's message at `.version 9.0`.
const NEEDS_NEWER_PTX: &[(&str, &str)] = &[
    // cuda::device::memcpy_async_tx: cp.async.bulk to .shared::cta
    ("cuda_barrier_tx.cu", "Illegal modifier '.mbarrier::complete_tx::bytes' for instruction 'cp.async.bulk'"),
    // cuda::memcpy_async of 16-byte-aligned chunks onto a cuda::barrier: the same form
    ("memcpy_async_bulk.cu", "Illegal modifier '.mbarrier::complete_tx::bytes' for instruction 'cp.async.bulk'"),
    // cp.async.bulk .ignore_oob is PTX ISA 9.2
    ("ptx_bulk_ignore_oob.cu", "Feature '.ignore_oob' requires PTX ISA .version 9.2 or later"),
];

/// Seed 000's silicon trace replays to the end: its manifest's `ub = "warn"` (every thread's
/// `init` on the live barrier is undefined, PTX 9.7.13.15.9) applies to `gpu pack`'s slot count,
/// the batch's golden run and `gpu replay` on both engines. The "GPU" results here are the golden
/// engine's in the runner's format (as tests/gpu_pack.rs makes them for `.ptx` programs); the
/// same trace replayed under `--ub error` stops at MbarrierInitOnValid.
#[test]
fn seed000_trace_replays_to_the_end_under_its_manifests_ub_warn() {
    use hopsync_cosim::gpu::pack::{run_batch_golden, write_batch_with, PackOptions};
    use hopsync_cosim::gpu::replay::{replay_trace, replay_trace_on, EngineRun};
    use hopsync_cosim::gpu::trace::import;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("hopsync_seed000_trace_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = clients_dir().join("seed000_st_async.cu");
    assert_eq!(Program::load(&file).unwrap_or_else(|d| panic!("{d}")).manifest.ub, UbMode::Warn);
    let entries = write_batch_with(std::slice::from_ref(&file), &dir.join("batch"), &PackOptions { ptx_version: Some((9, 0)), ..Default::default() }).unwrap();
    assert!(entries[0].result.is_ok(), "{:?}", entries[0].result.as_ref().err());
    run_batch_golden(&dir.join("batch"), &dir.join("results"), hopsync_cosim::budget::DEFAULT_MEM_LIMIT).unwrap();
    let imported = import(&dir.join("results"), &dir.join("traces"), &root).unwrap();
    let (_, t) = imported[0].result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.status, "ok", "the batch's golden run went to the end: {:?}", t.error);

    let r = replay_trace(t, &root);
    assert_eq!(r.status, "equal", "{}", r.summary());
    assert!(r.slots_compared > 0 && r.threads_compared > 0, "{}", r.summary());
    assert!(r.notes.iter().any(|n| n.contains("MbarrierInitOnValid")), "the finding is a note of the replay: {}", r.summary());
    let sm = SmConfig::sm90();
    let rtl = replay_trace_on(t, &root, "rtl", &|p| hopsync_sim::calib::run_rtl_replay(p, &sm));
    assert!(!rtl.failed(), "{}", rtl.summary());

    // Under --ub error the golden replay stops at the first init.
    let strict = |p: &Program| {
        let r = run_golden(p, Config::default());
        EngineRun { buffers: r.outputs.iter().map(|(k, h)| (k.clone(), unhex(h))).collect(), error: (r.status != "ok").then(|| r.findings[0].to_string()), findings: vec![] }
    };
    let r = replay_trace_on(t, &root, "golden", &strict);
    assert_eq!(r.status, "golden-error", "{}", r.summary());
    assert!(r.detail.as_deref().unwrap_or("").contains("MbarrierInitOnValid"), "{}", r.summary());
    let _ = std::fs::remove_dir_all(&dir);
}
