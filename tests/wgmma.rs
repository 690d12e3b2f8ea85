//! Randomized test of `wgmma.mma_async` (PTX 9.7.15) against a plain matrix product computed
//! here: for every type family (f16 and bf16 into f32, f16 into f16, tf32, e4m3/e5m2 in every
//! pairing, s8/u8 with and without `.satfinite`, b1), both sources of A (a shared-memory
//! descriptor and registers), every shared-memory layout (no swizzle, 32/64/128-byte swizzles;
//! K-major, and MN-major through imm-trans for f16/bf16), random N, scale-d and negation. Each
//! case is a generated kernel: one warpgroup copies the operand images this test lays out into
//! shared memory, fences the async proxy, runs one wgmma and stores its accumulators.
//!
//! The layouts are written here from PTX 9.7.15.5.1.2 (core matrices of 8 rows x 16 bytes; the
//! swizzled atoms of 8 rows x 32/64/128 bytes) with the swizzle of the TMA engine
//! (`tensormap::swizzle_offset`), the fragment maps from 9.7.15.5.1.1. Values are small integers,
//! exact in every format, so every product is exact and outputs compare bit for bit.
//!
//! The default run covers each family, A source and swizzle once on the golden engine and a third
//! of the cases in lockstep on the RTL engine; `long_wgmma_random` runs 2000 cases on both.
//!
//! The sparse form `wgmma.mma_async.sp` (PTX 9.7.15.6) runs through the same kernels: a random
//! A with the structured zeros of 2:4 (16- and 8-bit types) or 1:2 (tf32) sparsity (9.7.15.6.1),
//! packed to its nonzero K/2 columns for the operand, and its metadata laid out per thread as the
//! metadata fragments of 9.7.15.6.2 place it (the threads of the pair sp-sel names for the 16/32-bit
//! types, all four of each group for the 8-bit ones; the other threads' sp-meta is random, so a
//! model reading them fails); the product is the plain one of the unpacked A.

use hopsync_cosim::machine::Config;
use hopsync_cosim::report::run_golden;
use hopsync_firmware::tensormap::{swizzle_offset, TensorMapSwizzle};
use hopsync_firmware::Program;
use hopsync_sim::{lockstep::run_cosim, SmConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Multiplicand type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum T {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
    S8,
    U8,
    B1,
}

impl T {
    fn name(self) -> &'static str {
        match self {
            T::F16 => "f16",
            T::Bf16 => "bf16",
            T::Tf32 => "tf32",
            T::E4m3 => "e4m3",
            T::E5m2 => "e5m2",
            T::S8 => "s8",
            T::U8 => "u8",
            T::B1 => "b1",
        }
    }
    fn bits(self) -> u32 {
        match self {
            T::F16 | T::Bf16 => 16,
            T::Tf32 => 32,
            T::E4m3 | T::E5m2 | T::S8 | T::U8 => 8,
            T::B1 => 1,
        }
    }
    fn float(self) -> bool {
        !matches!(self, T::S8 | T::U8 | T::B1)
    }
    /// A random value exact in the type.
    fn value(self, rng: &mut StdRng) -> i64 {
        match self {
            T::U8 => rng.gen_range(0..=7),
            T::B1 => rng.gen_range(0..=1),
            _ => rng.gen_range(-4..=4),
        }
    }
    /// The bits of value `v`.
    fn encode(self, v: i64) -> u64 {
        let fp8 = |table: [u64; 5]| table[v.unsigned_abs() as usize] | if v < 0 { 0x80 } else { 0 };
        match self {
            T::F16 => half::f16::from_f32(v as f32).to_bits() as u64,
            T::Bf16 => half::bf16::from_f32(v as f32).to_bits() as u64,
            T::Tf32 => (v as f32).to_bits() as u64,
            // 0..=4 in e4m3 (bias 7) and e5m2 (bias 15).
            T::E4m3 => fp8([0x00, 0x38, 0x40, 0x44, 0x48]),
            T::E5m2 => fp8([0x00, 0x3c, 0x40, 0x42, 0x44]),
            T::S8 | T::U8 => v as u8 as u64,
            T::B1 => v as u64,
        }
    }
}

/// Accumulator type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum D {
    F32,
    F16,
    S32,
}

/// One generated case.
#[derive(Debug, Clone)]
struct Case {
    a: T,
    b: T,
    d: D,
    n: u32,
    a_regs: bool,
    swz_a: u32,
    swz_b: u32,
    trans_a: bool,
    trans_b: bool,
    neg_a: bool,
    neg_b: bool,
    scale_d: bool,
    satfinite: bool,
    /// `wgmma.mma_async.sp`, with this sparsity selector.
    sparse: Option<u32>,
    /// Sparse only: one metadata field of a selected thread made invalid (PTX 9.7.15.6.1).
    bad_meta: bool,
}

impl Case {
    /// Elements of a sparse chunk and how many of them are nonzero (PTX 9.7.15.6.1: 2:4, tf32 1:2).
    fn chunk(&self) -> (u32, usize) {
        if self.a == T::Tf32 {
            (2, 1)
        } else {
            (4, 2)
        }
    }
}

const SWIZZLES: [u32; 4] = [0, 32, 64, 128];

fn swizzle_mode(w: u32) -> TensorMapSwizzle {
    match w {
        32 => TensorMapSwizzle::B32,
        64 => TensorMapSwizzle::B64,
        128 => TensorMapSwizzle::B128,
        _ => TensorMapSwizzle::None,
    }
}

/// The descriptor's swizzle field (PTX 9.7.15.5.1.2.2: 1 = 128B, 2 = 64B, 3 = 32B).
fn swizzle_code(w: u32) -> u64 {
    match w {
        128 => 1,
        64 => 2,
        32 => 3,
        _ => 0,
    }
}

/// A matrix operand laid out in shared memory: rows `mn` (M of A, N of B) x `k` elements of
/// `t`, K-major or MN-major, with swizzle width `w` (0: none). Returns the image (relative to a
/// 1024-aligned base), LBO and SBO.
fn layout(vals: &dyn Fn(u32, u32) -> i64, mn: u32, k: u32, t: T, w: u32, mn_major: bool) -> (Vec<u8>, u32, u32) {
    let kbytes = k * t.bits() / 8; // 32 for every wgmma, 64 for the B of a sparse one
    let (lbo, sbo, size) = if !mn_major {
        if w == 0 {
            // Core matrices of 8 rows x 16 bytes; the K neighbour right after, then the next 8 rows.
            (128, 128 * (kbytes / 16), mn.div_ceil(8) * 128 * (kbytes / 16))
        } else {
            // Atoms of 8 rows x w bytes (K fits in one row); the next 8 rows 8w further.
            (16, 8 * w, mn.div_ceil(8) * 8 * w)
        }
    } else if w == 0 {
        // MN-major core matrices: 8 elements of MN x 8 rows of K; K neighbour (LBO) 128 bytes on,
        // MN neighbour (SBO) after both K core matrices.
        (128, 128 * (k / 8), mn.div_ceil(8) * 128 * (k / 8))
    } else {
        // MN-major atoms: w bytes of MN elements x 8 K rows; SBO to the next 8 K rows, LBO to the
        // next w bytes of MN.
        (8 * w * (k / 8), 8 * w, mn.div_ceil(w / 2) * 8 * w * (k / 8))
    };
    let mut img = vec![0u8; size.max(16) as usize];
    for r in 0..mn {
        for kk in 0..k {
            let (off, bit) = if !mn_major {
                let kbit = kk * t.bits();
                let kb = kbit / 8;
                let off = if w == 0 { (r % 8) * 16 + (r / 8) * sbo + (kb % 16) + (kb / 16) * lbo } else { (r % 8) * w + (r / 8) * sbo + kb };
                (off, kbit % 8)
            } else if w == 0 {
                ((r % 8) * 2 + (r / 8) * sbo + (kk % 8) * 16 + (kk / 8) * lbo, 0)
            } else {
                let per = w / 2;
                ((r % per) * 2 + (r / per) * lbo + (kk % 8) * w + (kk / 8) * sbo, 0)
            };
            let phys = swizzle_offset(swizzle_mode(w), off as u64).unwrap() as usize;
            let v = t.encode(vals(r, kk));
            if t == T::B1 {
                img[phys] |= (v as u8) << bit;
            } else {
                for byte in 0..(t.bits() / 8) as usize {
                    img[phys + byte] = (v >> (8 * byte)) as u8;
                }
            }
        }
    }
    (img, lbo, sbo)
}

fn desc_hi(lbo: u32, sbo: u32, w: u32) -> u64 {
    ((lbo as u64 >> 4) << 16) | ((sbo as u64 >> 4) << 32) | (swizzle_code(w) << 62)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// K of a case: 256 bits of A a row, twice that (logical, half of it zeros) when sparse.
fn k_of(c: &Case) -> u32 {
    if c.sparse.is_some() {
        512 / c.a.bits()
    } else {
        256 / c.a.bits()
    }
}

/// Builds the kernel of a random case and the expected accumulator words (per thread, in register
/// order).
fn build(c: &Case, rng: &mut StdRng) -> (String, Vec<u32>) {
    let k = k_of(c);
    let n = c.n;
    // Sparse: each chunk of each row keeps 2 of 4 (tf32: 1 of 2) positions, in increasing order.
    let (len, kept) = c.chunk();
    let pos: Vec<Vec<Vec<u32>>> = (0..64)
        .map(|_| {
            (0..k / len)
                .map(|_| {
                    let mut p: Vec<u32> = (0..len).collect();
                    while p.len() > kept {
                        p.remove(rng.gen_range(0..p.len()));
                    }
                    p
                })
                .collect()
        })
        .collect();
    let a_m: Vec<Vec<i64>> = (0..64)
        .map(|r| (0..k).map(|kk| if c.sparse.is_none() || pos[r][(kk / len) as usize].contains(&(kk % len)) { c.a.value(rng) } else { 0 }).collect())
        .collect();
    let b_m: Vec<Vec<i64>> = (0..k).map(|_| (0..n).map(|_| c.b.value(rng)).collect()).collect();
    let c_m: Vec<Vec<i64>> = (0..64)
        .map(|_| (0..n).map(|_| if c.satfinite && rng.gen_bool(0.5) { i32::MAX as i64 - rng.gen_range(0..4) } else { rng.gen_range(-20..=20) }).collect())
        .collect();
    kernel(c, &a_m, &b_m, &c_m, &pos, rng)
}

/// The kernel of a case with these A (64 x K, logical), B (K x N) and C (64 x N), and for a sparse
/// case the kept positions of each chunk of each row of A; the expected accumulator words. `rng`
/// fills the sp-meta of the threads the selector does not name.
fn kernel(c: &Case, a_m: &[Vec<i64>], b_m: &[Vec<i64>], c_m: &[Vec<i64>], pos: &[Vec<Vec<u32>>], rng: &mut StdRng) -> (String, Vec<u32>) {
    let k = k_of(c);
    let n = c.n;
    let (sa, sb) = (if c.neg_a { -1 } else { 1 }, if c.neg_b { -1 } else { 1 });
    // The plain product.
    let want = |r: usize, col: usize| -> i64 {
        let mut s = if c.scale_d { c_m[r][col] } else { 0 };
        for kk in 0..k as usize {
            s += if c.a == T::B1 { a_m[r][kk] & b_m[kk][col] } else { sa * a_m[r][kk] * sb * b_m[kk][col] };
        }
        if c.satfinite {
            s.clamp(i32::MIN as i64, i32::MAX as i64)
        } else {
            s
        }
    };
    let d_bits = |v: i64| -> u32 {
        match c.d {
            D::F32 => (v as f32).to_bits(),
            D::F16 => half::f16::from_f32(v as f32).to_bits() as u32,
            D::S32 => v as i32 as u32,
        }
    };
    // Per thread: N/2 accumulator elements (PTX 9.7.15.5.1.1): row 16*warp + lane/4 + 8*((i/2)%2),
    // column 8*(i/4) + 2*(lane%4) + i%2; f16 packs two per register.
    let nd = if c.d == D::F16 { n / 4 } else { n / 2 };
    let mut init = Vec::new();
    let mut expect = Vec::new();
    for tid in 0..128u32 {
        let (q, l) = (tid / 32, tid % 32);
        let mut wi = vec![0u32; nd as usize];
        let mut we = vec![0u32; nd as usize];
        for i in 0..n / 2 {
            let row = (16 * q + l / 4 + 8 * ((i / 2) % 2)) as usize;
            let col = (8 * (i / 4) + 2 * (l % 4) + i % 2) as usize;
            let (reg, sh) = if c.d == D::F16 { (i / 2, 16 * (i % 2)) } else { (i, 0) };
            wi[reg as usize] |= d_bits(c_m[row][col]) << sh;
            we[reg as usize] |= d_bits(want(row, col)) << sh;
        }
        init.extend(wi);
        expect.extend(we);
    }
    // The A operand: A itself, or for the sparse form its packed 64 x K/2 (PTX 9.7.15.6.1: each
    // chunk's kept elements in order), in the dense layouts of K/2 columns.
    let (len, _) = c.chunk();
    let ap: Vec<Vec<i64>> = match c.sparse {
        None => a_m.to_vec(),
        Some(_) => (0..64).map(|r| (0..k / len).flat_map(|ch| pos[r][ch as usize].iter().map(move |p| a_m[r][(ch * len + p) as usize])).collect()).collect(),
    };
    let ka = ap[0].len() as u32;
    // A fragments (PTX 9.7.15.5.1.1): register r, element j of lane l of warp q at row
    // 16q + l/4 + 8(r%2), column (r/2)*K/2 + (l%4)*per + j.
    let per = 32 / c.a.bits();
    let mut afrag = Vec::new();
    for tid in 0..128u32 {
        let (q, l) = (tid / 32, tid % 32);
        for r in 0..4u32 {
            let mut v = 0u32;
            for j in 0..per {
                let row = (16 * q + l / 4 + 8 * (r % 2)) as usize;
                let col = ((r / 2) * (ka / 2) + (l % 4) * per + j) as usize;
                v |= (c.a.encode(ap[row][col]) as u32) << (j * c.a.bits());
            }
            afrag.push(v);
        }
    }
    // sp-meta per thread (PTX 9.7.15.6.2): a chunk's 4-bit field is its two kept indices (low
    // first) or for tf32 0b0100 / 0b1110. 16/32-bit types: lane 4g + 2 sel + j holds chunks
    // 4j..4j+4 of row g (bits 0..16) and of row g + 8 (bits 16..32); 8-bit types: lane 4g + t
    // holds chunks 8(t/2)..+8 of row g + 8(t%2).
    let field = |row: usize, ch: u32| -> u32 {
        let p = &pos[row][ch as usize];
        if c.a == T::Tf32 {
            [0b0100, 0b1110][p[0] as usize]
        } else {
            p[0] | p[1] << 2
        }
    };
    let mut meta = Vec::new();
    for tid in 0..128u32 {
        let (q, l) = (tid / 32, tid % 32);
        let (g, t) = (l / 4, l % 4);
        let w = match c.sparse {
            None => 0,
            Some(_) if c.a.bits() == 8 => (0..8).map(|cc| field((16 * q + g + 8 * (t % 2)) as usize, 8 * (t / 2) + cc) << (4 * cc)).fold(0, |x, y| x | y),
            Some(sel) if t / 2 == sel => (0..2).flat_map(|rr| (0..4).map(move |cc| (rr, cc))).map(|(rr, cc)| field((16 * q + g + 8 * rr) as usize, 4 * (t % 2) + cc) << (4 * cc + 16 * rr)).fold(0, |x, y| x | y),
            Some(_) => rng.gen(),
        };
        meta.push(w);
    }
    if c.bad_meta {
        // Lane 0 of warp 1 holds the first field of row 16 in every form: 0b0101 repeats index 1.
        let sel = c.sparse.unwrap_or(0);
        let t = if c.a.bits() == 8 { 0 } else { 2 * sel };
        meta[(32 + t) as usize] = (meta[(32 + t) as usize] & !15) | 0b0101;
    }
    let words = |v: &[u32]| -> String { hex(&v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<_>>()) };
    let (img_a, lbo_a, sbo_a) = layout(&|r, kk| ap[r as usize][kk as usize], 64, ka, c.a, c.swz_a, c.trans_a);
    let (img_b, lbo_b, sbo_b) = layout(&|col, kk| b_m[kk as usize][col as usize], n, k, c.b, c.swz_b, c.trans_b);
    let b_off = img_a.len().div_ceil(1024) * 1024;
    let mut smem = img_a.clone();
    smem.resize(b_off, 0);
    smem.extend(&img_b);
    smem.resize(smem.len().div_ceil(16) * 16, 0);
    let dt = match c.d {
        D::F32 => "f32",
        D::F16 => "f16",
        D::S32 => "s32",
    };
    let shape = format!("m64n{n}k{k}");
    // The sparse form's operands and its sp-meta buffer (one word a thread).
    let (mnemonic, meta_ops) = match c.sparse {
        Some(sel) => ("wgmma.mma_async.sp", format!("%m0, {sel}, ")),
        None => ("wgmma.mma_async", String::new()),
    };
    let (meta_buf, meta_param, meta_load) = if c.sparse.is_some() {
        (
            format!("//! [[buffer]]\n//! name = \"meta\"\n//! bytes = 512\n//! fill = \"hex\"\n//! hex = \"{}\"\n//! [[param]]\n//! name = \"meta_ptr\"\n//! buffer = \"meta\"\n", words(&meta)),
            ", .param .u64 meta_ptr",
            "\tld.param.u64 %rd12, [meta_ptr];\n\tcvta.to.global.u64 %rd12, %rd12;\n\tmul.wide.u32 %rd13, %r1, 4;\n\tadd.s64 %rd12, %rd12, %rd13;\n\tld.global.b32 %m0, [%rd12];\n",
        )
    } else {
        (String::new(), "", "")
    };
    let sat = if c.satfinite { ".satfinite" } else { "" };
    let op = if c.a == T::B1 { ".and.popc" } else { "" };
    let dregs: Vec<String> = (0..nd).map(|i| format!("%d{i}")).collect();
    let a_operand = if c.a_regs { "{%a0, %a1, %a2, %a3}".to_string() } else { "%rd10".to_string() };
    let (imm_a, imm_b) = (if c.neg_a { -1 } else { 1 }, if c.neg_b { -1 } else { 1 });
    let tail = match c.a {
        T::F16 | T::Bf16 if c.a_regs => format!(", {imm_a}, {imm_b}, {}", c.trans_b as u32),
        T::F16 | T::Bf16 => format!(", {imm_a}, {imm_b}, {}, {}", c.trans_a as u32, c.trans_b as u32),
        T::Tf32 | T::E4m3 | T::E5m2 => format!(", {imm_a}, {imm_b}"),
        _ => String::new(),
    };
    let dreg_ty = if c.d == D::F32 { "f32" } else { "b32" };
    let load_d: String = (0..nd).map(|i| format!("\tld.global.b32 %d{i}, [%rd4+{}];\n", 4 * i)).collect();
    let store_d: String = (0..nd).map(|i| format!("\tst.global.b32 [%rd5+{}], %d{i};\n", 4 * i)).collect();
    let src = format!(
        r#"//! description = "generated wgmma case {c:?}"
//! [launch]
//! grid = [1, 1, 1]
//! block = [128, 1, 1]
//! dynamic_smem = {smem_len}
//! [[buffer]]
//! name = "img"
//! bytes = {smem_len}
//! fill = "hex"
//! hex = "{img}"
//! [[buffer]]
//! name = "afrag"
//! bytes = {afrag_len}
//! fill = "hex"
//! hex = "{afrag_hex}"
//! [[buffer]]
//! name = "init"
//! bytes = {d_len}
//! fill = "hex"
//! hex = "{init_hex}"
//! [[buffer]]
//! name = "out"
//! bytes = {d_len}
//! output = true
//! [[param]]
//! name = "img_ptr"
//! buffer = "img"
//! [[param]]
//! name = "afrag_ptr"
//! buffer = "afrag"
//! [[param]]
//! name = "init_ptr"
//! buffer = "init"
//! [[param]]
//! name = "out_ptr"
//! buffer = "out"
{meta_buf}.version 8.5
.target sm_90a
.address_size 64

.extern .shared .align 1024 .b8 smem[];

.visible .entry wg(.param .u64 img_ptr, .param .u64 afrag_ptr, .param .u64 init_ptr, .param .u64 out_ptr{meta_param})
{{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b32 %a<4>;
	.reg .b32 %m<1>;
	.reg .{dreg_ty} %d<{nd}>;
	.reg .b64 %rd<16>;

	mov.u32 %r1, %tid.x;
	ld.param.u64 %rd1, [img_ptr];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r2, smem;
	mov.u32 %r3, %r1;
copy:
	setp.ge.u32 %p1, %r3, {chunks};
	@%p1 bra copied;
	mul.wide.u32 %rd2, %r3, 16;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.v4.u32 {{%r4, %r5, %r6, %r7}}, [%rd3];
	shl.b32 %r8, %r3, 4;
	add.u32 %r8, %r8, %r2;
	st.shared.v4.u32 [%r8], {{%r4, %r5, %r6, %r7}};
	add.u32 %r3, %r3, 128;
	bra copy;
copied:
	fence.proxy.async.shared::cta;
	bar.sync 0;
	shr.u32 %r9, %r2, 4;
	cvt.u64.u32 %rd10, %r9;
	or.b64 %rd10, %rd10, {hi_a};
	add.u32 %r10, %r2, {b_off};
	shr.u32 %r10, %r10, 4;
	cvt.u64.u32 %rd11, %r10;
	or.b64 %rd11, %rd11, {hi_b};
	ld.param.u64 %rd6, [afrag_ptr];
	cvta.to.global.u64 %rd6, %rd6;
	mul.wide.u32 %rd7, %r1, 16;
	add.s64 %rd6, %rd6, %rd7;
	ld.global.v4.u32 {{%a0, %a1, %a2, %a3}}, [%rd6];
	ld.param.u64 %rd4, [init_ptr];
	cvta.to.global.u64 %rd4, %rd4;
	mul.wide.u32 %rd8, %r1, {d_stride};
	add.s64 %rd4, %rd4, %rd8;
{load_d}{meta_load}	setp.ne.u32 %p2, {scale_d}, 0;
	wgmma.fence.sync.aligned;
	{mnemonic}.sync.aligned.{shape}{sat}.{dt}.{at}.{bt}{op} {{{dregs}}}, {a_operand}, %rd11, {meta_ops}%p2{tail};
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 0;
	ld.param.u64 %rd5, [out_ptr];
	cvta.to.global.u64 %rd5, %rd5;
	add.s64 %rd5, %rd5, %rd8;
{store_d}	ret;
}}
"#,
        smem_len = smem.len(),
        img = hex(&smem),
        afrag_len = afrag.len() * 4,
        afrag_hex = words(&afrag),
        d_len = init.len() * 4,
        init_hex = words(&init),
        chunks = smem.len() / 16,
        hi_a = format!("{:#x}", desc_hi(lbo_a, sbo_a, c.swz_a)),
        hi_b = format!("{:#x}", desc_hi(lbo_b, sbo_b, c.swz_b)),
        d_stride = nd * 4,
        scale_d = c.scale_d as u32,
        at = c.a.name(),
        bt = c.b.name(),
        dregs = dregs.join(", "),
    );
    (src, expect)
}

/// The legal N values of a family (PTX 9.7.15.2).
fn ns(a: T) -> Vec<u32> {
    match a {
        T::S8 | T::U8 => [8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256].to_vec(),
        T::B1 => [8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256].to_vec(),
        _ => (1..=32).map(|x| 8 * x).collect(),
    }
}

/// A random case of family index `f` (0..10), A source and swizzles chosen by the caller or at
/// random.
fn random_case(rng: &mut StdRng, f: usize, a_regs: bool, swz: Option<u32>, max_n: u32) -> Case {
    let (a, b, d) = match f {
        0 => (T::F16, T::F16, D::F32),
        1 => (T::F16, T::F16, D::F16),
        2 => (T::Bf16, T::Bf16, D::F32),
        3 => (T::Tf32, T::Tf32, D::F32),
        4 => (T::E4m3, T::E4m3, D::F32),
        5 => (T::E4m3, T::E5m2, D::F16),
        6 => (T::E5m2, T::E4m3, D::F32),
        7 => (T::S8, T::U8, D::S32),
        8 => (T::U8, T::S8, D::S32),
        _ => (T::B1, T::B1, D::S32),
    };
    let legal: Vec<u32> = ns(a).into_iter().filter(|&n| n <= max_n).collect();
    let n = legal[rng.gen_range(0..legal.len())];
    let pick = |rng: &mut StdRng| swz.unwrap_or_else(|| SWIZZLES[rng.gen_range(0..4)]);
    let transposable = matches!(a, T::F16 | T::Bf16);
    Case {
        a,
        b,
        d,
        n,
        a_regs,
        swz_a: pick(rng),
        swz_b: pick(rng),
        trans_a: transposable && !a_regs && rng.gen_bool(0.5),
        trans_b: transposable && rng.gen_bool(0.5),
        neg_a: a.float() && rng.gen_bool(0.3),
        neg_b: a.float() && rng.gen_bool(0.3),
        scale_d: rng.gen_bool(0.7),
        satfinite: matches!(a, T::S8 | T::U8) && rng.gen_bool(0.5),
        sparse: None,
        bad_meta: false,
    }
}

/// A random `wgmma.mma_async.sp` case of family index `f` (0..9: every family but b1, which has no
/// sparse form), with a random sparsity selector where the type has two (PTX 9.7.15.6.1).
fn random_sparse_case(rng: &mut StdRng, f: usize, a_regs: bool, swz: Option<u32>, max_n: u32) -> Case {
    assert!(f < 9, "b1 has no sparse wgmma");
    let mut c = random_case(rng, f, a_regs, swz, max_n);
    c.sparse = Some(if c.a.bits() == 8 { 0 } else { rng.gen_range(0..2) });
    // B's K is 64 bytes: a K-major B needs an atom at least that wide (the 32-byte swizzle atom
    // has no room, PTX 9.7.15.5.1.2; CUTLASS's canonical K-major SW32 layout is 32 bytes of K).
    if c.swz_b == 32 && !c.trans_b {
        c.swz_b = 64;
    }
    c
}

fn out_words(hexs: &str) -> Vec<u32> {
    (0..hexs.len() / 8).map(|i| u32::from_le_bytes(std::array::from_fn(|b| u8::from_str_radix(&hexs[8 * i + 2 * b..8 * i + 2 * b + 2], 16).unwrap()))).collect()
}

/// Runs a case on the golden engine (and in lockstep on the RTL engine when `rtl`); returns
/// what went wrong.
fn run_case(c: &Case, rng: &mut StdRng, rtl: bool) -> Result<(), String> {
    let (src, expect) = build(c, rng);
    let prog = Program::parse("generated_wgmma.ptx", &src).map_err(|d| format!("{c:?}: does not parse: {d}"))?;
    let r = run_golden(&prog, Config::default());
    if r.status != "ok" {
        return Err(format!("{c:?}: golden status {} {:?} {:?}", r.status, r.error, r.findings.first().map(|f| f.to_string())));
    }
    let got = out_words(&r.outputs["out"]);
    if let Some(i) = (0..expect.len()).find(|&i| got[i] != expect[i]) {
        return Err(format!("{c:?}: word {i} (thread {}) is {:#x}, the product gives {:#x}", i / (expect.len() / 128), got[i], expect[i]));
    }
    if rtl {
        let cr = run_cosim(&prog, Config::default(), SmConfig::sm90());
        if cr.run.status != "ok" || !cr.divergences.is_empty() || cr.run.outputs["out"] != r.outputs["out"] {
            return Err(format!("{c:?}: RTL lockstep status {} {:?}, divergences {:?}", cr.run.status, cr.run.error, cr.divergences.first()));
        }
    }
    Ok(())
}

#[test]
fn wgmma_every_family_source_and_swizzle_matches_the_product() {
    let mut rng = StdRng::seed_from_u64(0x9e37_79b9);
    let mut failures = Vec::new();
    let mut k = 0;
    for f in 0..10 {
        for a_regs in [false, true] {
            for swz in SWIZZLES {
                let c = random_case(&mut rng, f, a_regs, Some(swz), 64);
                if let Err(e) = run_case(&c, &mut rng, k % 3 == 0) {
                    failures.push(e);
                }
                k += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{} of {k} cases failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn wgmma_widest_shapes() {
    // N = 256 (128 accumulators per thread) for f16, b1 and s8 (ptxas takes m64n256k32.s32.s8).
    let mut rng = StdRng::seed_from_u64(7);
    for (f, n) in [(0, 256), (9, 256), (7, 256)] {
        let mut c = random_case(&mut rng, f, false, None, n);
        c.n = n;
        run_case(&c, &mut rng, true).unwrap();
    }
}

#[test]
#[ignore]
fn long_wgmma_random() {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    for i in 0..2000 {
        let f = rng.gen_range(0..10);
        let a_regs = rng.gen_bool(0.5);
        let c = random_case(&mut rng, f, a_regs, None, 256);
        if let Err(e) = run_case(&c, &mut rng, true) {
            panic!("case {i}: {e}");
        }
    }
}

#[test]
fn sparse_wgmma_every_family_source_and_swizzle_matches_the_product() {
    // wgmma.mma_async.sp (PTX 9.7.15.6): every family with a sparse form, A from shared memory
    // and from registers, every swizzle, random selector; a third in lockstep on the RTL engine.
    let mut rng = StdRng::seed_from_u64(0x5a_25e5);
    let mut failures = Vec::new();
    let mut k = 0;
    for f in 0..9 {
        for a_regs in [false, true] {
            for swz in SWIZZLES {
                let c = random_sparse_case(&mut rng, f, a_regs, Some(swz), 64);
                if let Err(e) = run_case(&c, &mut rng, k % 3 == 0) {
                    failures.push(e);
                }
                k += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{} of {k} cases failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn sparse_wgmma_widest_shapes() {
    // N = 256 for f16 (both selectors), tf32 and s8 (m64n256k64), golden and RTL lockstep.
    let mut rng = StdRng::seed_from_u64(11);
    for (f, n, sel) in [(0, 256, 0), (0, 256, 1), (3, 256, 1), (7, 256, 0)] {
        let mut c = random_sparse_case(&mut rng, f, false, None, n);
        c.n = n;
        c.sparse = Some(sel);
        run_case(&c, &mut rng, true).unwrap();
    }
}

/// A small sparse case: N = 8, no swizzle, A from shared memory, C unused (scale-d false).
fn hand_case(a: T, b: T, d: D, sel: u32) -> Case {
    Case {
        a,
        b,
        d,
        n: 8,
        a_regs: false,
        swz_a: 0,
        swz_b: 0,
        trans_a: false,
        trans_b: false,
        neg_a: false,
        neg_b: false,
        scale_d: false,
        satfinite: false,
        sparse: Some(sel),
        bad_meta: false,
    }
}

/// Runs a hand case: every row of A keeps the same positions `kept` of each chunk, with the values
/// `vals`; B[k][n] = k % 4 + 1. Checks every output against `want` (worked out by hand) and the
/// builder's plain product against it too.
fn run_hand(c: &Case, kept: &[u32], vals: &[i64], want: i64) {
    let mut rng = StdRng::seed_from_u64(1);
    let k = k_of(c);
    let (len, _) = c.chunk();
    let pos: Vec<Vec<Vec<u32>>> = vec![vec![kept.to_vec(); (k / len) as usize]; 64];
    let a_m: Vec<Vec<i64>> = (0..64)
        .map(|_| (0..k).map(|kk| kept.iter().position(|&p| p == kk % len).map_or(0, |e| vals[e])).collect())
        .collect();
    let b_m: Vec<Vec<i64>> = (0..k).map(|kk| vec![(kk % 4 + 1) as i64; 8]).collect();
    let c_m = vec![vec![0i64; 8]; 64];
    let (src, expect) = kernel(c, &a_m, &b_m, &c_m, &pos, &mut rng);
    let bits = match c.d {
        D::F32 => (want as f32).to_bits(),
        D::F16 => half::f16::from_f32(want as f32).to_bits() as u32 * 0x1_0001,
        D::S32 => want as i32 as u32,
    };
    assert!(expect.iter().all(|&w| w == bits), "{c:?}: the plain product is not the hand value {want}");
    let prog = Program::parse("hand_sparse_wgmma.ptx", &src).unwrap_or_else(|d| panic!("{d}"));
    let r = run_golden(&prog, Config::default());
    assert_eq!(r.status, "ok", "{c:?}: {:?} {:?}", r.error, r.findings.first().map(|f| f.to_string()));
    let got = out_words(&r.outputs["out"]);
    assert!(got.iter().all(|&w| w == bits), "{c:?}: got {:#x?}, want {want} ({bits:#x}) everywhere", &got[..4]);
}

#[test]
fn sparse_wgmma_hand_checked_per_type() {
    // B[k][n] = k % 4 + 1 (1, 2, 3, 4 along each chunk of 4). Per chunk of A (PTX 9.7.15.6.1):
    // f16, sel 1: 1 at index 1, 2 at index 3 (metadata 0b1101): 1*2 + 2*4 = 10; 8 chunks: 80.
    run_hand(&hand_case(T::F16, T::F16, D::F32, 1), &[1, 3], &[1, 2], 80);
    // f16 into f16, sel 0: the same A: 80 in both halves of each accumulator register.
    run_hand(&hand_case(T::F16, T::F16, D::F16, 0), &[1, 3], &[1, 2], 80);
    // bf16, sel 0: 3 at index 0, 1 at index 2 (0b1000): 3*1 + 1*3 = 6; 8 chunks: 48.
    run_hand(&hand_case(T::Bf16, T::Bf16, D::F32, 0), &[0, 2], &[3, 1], 48);
    // tf32 1:2, sel 1: 3 at index 1 of each pair (0b1110): k = 1, 3, 5, ... meet B 2, 4, 2, 4...:
    // 4 * 3*2 + 4 * 3*4 = 72 over the 8 chunks of K 16.
    run_hand(&hand_case(T::Tf32, T::Tf32, D::F32, 1), &[1], &[3], 72);
    // e4m3 x e5m2: 1 at index 0, 2 at index 3 (0b1100): 1*1 + 2*4 = 9; 16 chunks of K 64: 144.
    run_hand(&hand_case(T::E4m3, T::E5m2, D::F32, 0), &[0, 3], &[1, 2], 144);
    // s8 x u8: -2 at index 1, 3 at index 2 (0b1001): -2*2 + 3*3 = 5; 16 chunks: 80.
    run_hand(&hand_case(T::S8, T::U8, D::S32, 0), &[1, 2], &[-2, 3], 80);
    // u8 x s8, metadata in decreasing order (0b0110: first packed element at 2, second at 1; PTX
    // 9.7.15.6.1 leaves only the equal pairs undefined): 4 at 2, 1 at 1: 4*3 + 1*2 = 14; 224.
    run_hand(&hand_case(T::U8, T::S8, D::S32, 0), &[2, 1], &[4, 1], 224);
}

#[test]
fn sparse_wgmma_invalid_metadata_is_a_finding() {
    // A 2:4 field with equal indices (0b0101) is undefined (PTX 9.7.15.6.1): a finding naming the
    // field, not a panic or a silent result. Also for tf32, whose only fields are 0b0100 and 0b1110.
    let mut rng = StdRng::seed_from_u64(3);
    for f in [0, 3, 7] {
        let mut c = random_sparse_case(&mut rng, f, f == 3, Some(0), 32);
        c.bad_meta = true;
        let (src, _) = build(&c, &mut rng);
        let prog = Program::parse("bad_sparse_meta.ptx", &src).unwrap_or_else(|d| panic!("{d}"));
        let r = run_golden(&prog, Config::default());
        assert_eq!(r.status, "fault", "{c:?}: {:?}", r.error);
        let f0 = &r.findings[0];
        assert_eq!(f0.kind.name(), "WgmmaSparseMetadataInvalid", "{f0}");
        assert!(f0.message.contains("0b0101") && f0.message.contains("row 16 of A") && f0.location.warp == 1, "{f0}");
    }
}

#[test]
#[ignore]
fn long_sparse_wgmma_random() {
    let mut rng = StdRng::seed_from_u64(0x5eed_5);
    for i in 0..1000 {
        let f = rng.gen_range(0..9);
        let a_regs = rng.gen_bool(0.5);
        let c = random_sparse_case(&mut rng, f, a_regs, None, 256);
        if let Err(e) = run_case(&c, &mut rng, true) {
            panic!("case {i}: {e}");
        }
    }
}
