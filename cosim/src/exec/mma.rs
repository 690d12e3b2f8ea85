//! Warp-level matrix instructions (PTX 9.7.14.5): `ldmatrix`, `stmatrix`, `movmatrix` and
//! `mma.sync`, and the fragment layouts that `wgmma.mma_async` shares with them (exec/wgmma.rs).
//!
//! A fragment maps (lane, register, element) to a (row, column) of the matrix; the layouts are
//! those of PTX 9.7.14.5.x "Matrix Fragments for mma.mMnNkK" written as functions of
//! `groupID = laneid >> 2` and `threadID_in_group = laneid % 4`, and of the element width. The
//! products are summed exactly ([`Acc`]) and rounded once into the accumulator type: silicon's
//! tensor cores truncate differently (their f32 sums can differ from this in the last bit).

use super::fp::{self, Exact, Fmt, Mode};
use super::{lanes, sext, unsupported, Cx, Exec, Flow, Stop, R, WARP};
use crate::finding::FindingKind;
use crate::machine::Place;
use hopsync_firmware::ir::{Instr, Mod, Operand, RegId};
use hopsync_firmware::mma::{mma_form, Family, Form};
use hopsync_firmware::ops::op;

// ---- fragment layouts --------------------------------------------------------------------------

/// (row, col) of element `j` of register `r` of lane `lane` in an A fragment of a 16-row tile
/// (mma `m16n8kK`, and each warp's 16 rows of a wgmma A): `regs` registers of `per` elements.
pub fn a16(lane: u32, r: u32, j: u32, regs: u32, per: u32) -> (u32, u32) {
    let (g, t) = (lane >> 2, lane & 3);
    let _ = regs;
    (g + 8 * (r & 1), (r >> 1) * 4 * per + t * per + j)
}

/// (k, n) of element `j` of register `r` of lane `lane` in a B fragment of an `n8` tile.
pub fn b8(lane: u32, r: u32, j: u32, per: u32) -> (u32, u32) {
    let (g, t) = (lane >> 2, lane & 3);
    (r * 4 * per + t * per + j, g)
}

/// (row, col) of accumulator element `i` of lane `lane` in a 16 x N tile (mma `m16n8`: N = 8;
/// each warp's 16 rows of a wgmma D): elements 0-1 on row g, 2-3 on row g+8, per 8 columns.
pub fn c16(lane: u32, i: u32) -> (u32, u32) {
    let (g, t) = (lane >> 2, lane & 3);
    (g + 8 * ((i >> 1) & 1), (i >> 2) * 8 + 2 * t + (i & 1))
}

/// The `m8n8` shapes: A (row g, col t*per + j), B (k t*per + j, col g), C (row g, col 2t + i).
fn m8_a(lane: u32, j: u32, per: u32) -> (u32, u32) {
    (lane >> 2, (lane & 3) * per + j)
}
fn m8_c(lane: u32, i: u32) -> (u32, u32) {
    (lane >> 2, 2 * (lane & 3) + i)
}

// ---- element values -----------------------------------------------------------------------------

/// A multiplicand or accumulator element read from a register.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val {
    /// A float value.
    F(f64),
    /// An integer (or bit count) value.
    I(i64),
}

/// The format of a float multiplicand type.
fn in_fmt(t: Mod) -> Option<Fmt> {
    Some(match t {
        Mod::F16 => Fmt::F16,
        Mod::Bf16 => Fmt::Bf16,
        Mod::Tf32 => Fmt::Tf32,
        Mod::E4m3 => Fmt::E4m3,
        Mod::E5m2 => Fmt::E5m2,
        Mod::F64 => Fmt::F64,
        Mod::F32 => Fmt::F32,
        _ => return None,
    })
}

/// Bits of one element of type `t`.
pub fn elem_bits(t: Mod) -> u32 {
    Family::of(t).map(|f| f.bits()).unwrap_or(32)
}

/// Element `j` of type `t` packed in register value `reg`.
pub fn elem(t: Mod, reg: u64, j: u32) -> Val {
    let b = elem_bits(t);
    let raw = if b >= 64 { reg } else { (reg >> (b * j)) & ((1u64 << b) - 1) };
    match in_fmt(t) {
        Some(f) => Val::F(fp::decode(f, raw)),
        None if matches!(t, Mod::S8 | Mod::S4 | Mod::S32) => Val::I(sext(raw, b)),
        None => Val::I(raw as i64),
    }
}

/// An exact running sum (TwoSum accumulation), rounded once at the end.
#[derive(Debug, Clone, Copy, Default)]
pub struct Acc {
    hi: f64,
    lo: f64,
    int: i64,
}

impl Acc {
    /// Starts from `c` (or from zero).
    pub fn new(c: Option<Val>) -> Acc {
        match c {
            Some(Val::F(x)) => Acc { hi: x, lo: 0.0, int: 0 },
            Some(Val::I(x)) => Acc { hi: 0.0, lo: 0.0, int: x },
            None => Acc::default(),
        }
    }
    fn add_f(&mut self, x: f64) {
        let s = Exact::add(self.hi, x);
        self.hi = s.hi;
        self.lo += s.lo;
    }
    /// Adds `a * b` (floats: the exact product of narrow formats; integers wrap in 64 bits).
    pub fn mac(&mut self, a: Val, b: Val, op_b1: Option<Mod>) {
        match (a, b) {
            (Val::F(x), Val::F(y)) => {
                let p = Exact::mul(x, y);
                self.add_f(p.hi);
                self.add_f(p.lo);
            }
            (Val::I(x), Val::I(y)) => {
                let v = match op_b1 {
                    Some(Mod::And) => ((x & y) as u64).count_ones() as i64,
                    Some(Mod::Xor) => ((x ^ y) as u64).count_ones() as i64,
                    _ => x.wrapping_mul(y),
                };
                self.int = self.int.wrapping_add(v);
            }
            _ => {}
        }
    }
    /// The sum rounded into accumulator type `t` (`.satfinite` clamps an integer sum to s32).
    pub fn finish(&self, t: Mod, satfinite: bool) -> u64 {
        match t {
            Mod::S32 => {
                let v = if satfinite { self.int.clamp(i32::MIN as i64, i32::MAX as i64) } else { self.int };
                v as u32 as u64
            }
            _ => {
                let f = in_fmt(t).expect("float accumulator");
                let hi = self.hi + self.lo;
                let lo = self.lo - (hi - self.hi);
                fp::encode(f, Exact { hi, lo, overflow: false }, Mode::RN)
            }
        }
    }
}

/// A matrix of element values, row-major.
#[derive(Debug, Clone)]
pub struct Mat {
    /// Rows.
    pub rows: u32,
    /// Columns.
    pub cols: u32,
    /// `rows * cols` values.
    pub v: Vec<Val>,
}

impl Mat {
    /// A matrix of zeros.
    pub fn new(rows: u32, cols: u32) -> Mat {
        Mat { rows, cols, v: vec![Val::I(0); (rows * cols) as usize] }
    }
    /// Element (r, c).
    pub fn at(&self, r: u32, c: u32) -> Val {
        self.v[(r * self.cols + c) as usize]
    }
    /// Sets element (r, c).
    pub fn set(&mut self, r: u32, c: u32, x: Val) {
        let k = (r * self.cols + c) as usize;
        self.v[k] = x;
    }
}

// ---- register access helpers ----------------------------------------------------------------------

/// The registers of vector operand `k`.
pub fn vec_regs(i: &Instr, k: usize) -> Vec<Option<RegId>> {
    match &i.operands[k] {
        Operand::Vector(v) => v.iter().map(|o| if let Operand::Reg(r) = o { Some(*r) } else { None }).collect(),
        Operand::Reg(r) => vec![Some(*r)],
        _ => Vec::new(),
    }
}

/// The value of element `e` of vector operand `k` for a lane (an immediate element reads as itself).
fn vec_val(cx: &Cx<'_, '_>, i: &Instr, k: usize, e: usize, lane: u32) -> u64 {
    match &i.operands[k] {
        Operand::Vector(v) => match &v[e] {
            Operand::Reg(r) => cx.reg(*r, lane),
            Operand::Imm(x) => *x as u64,
            Operand::FloatBits { bits, .. } => *bits,
            _ => 0,
        },
        _ => cx.src(i, k, lane),
    }
}

/// The `.sync.aligned` rule of the warp-level matrix instructions: all 32 lanes of the warp
/// execute the instruction together (PTX 9.7.14.5: "the mandatory .aligned qualifier indicates
/// that all threads in the warp must execute the same instruction").
pub fn check_full_warp(cx: &mut Cx<'_, '_>, i: &Instr) -> Result<(), Stop> {
    if cx.mask != u32::MAX {
        let l = cx.first_lane();
        cx.finding(
            FindingKind::WarpSyncMaskMismatch,
            l,
            format!("`{}` is executed by lanes {:#010x}; all 32 lanes of the warp must execute it together (.sync.aligned)", cx.text(i), cx.mask),
        )?;
        return Err(Stop::Finding);
    }
    Ok(())
}

// ---- ldmatrix / stmatrix / movmatrix -------------------------------------------------------------

/// The number of 8x8 matrices of `.x1/.x2/.x4`.
fn num(i: &Instr) -> u32 {
    if i.has(Mod::X4) {
        4
    } else if i.has(Mod::X2) {
        2
    } else {
        1
    }
}

/// Element (row, col) of an 8x8 b16 matrix held by a warp (lane l: row l/4, columns 2(l%4) and
/// 2(l%4)+1 in the low and high halves): which lane and half hold it.
fn frag88(row: u32, col: u32) -> (u32, u32) {
    (row * 4 + col / 2, col % 2)
}

/// The shared-memory place of row `row` of matrix `m`, addressed by lane `8m + row`.
fn row_place(cx: &mut Cx<'_, '_>, i: &Instr, k: usize, m: u32, row: u32) -> Result<Place, Stop> {
    let lane = 8 * m + row;
    let p = cx.place(i, k, lane, 16)?;
    Ok(p)
}

/// ldmatrix (PTX 9.7.14.5 "ldmatrix"): lanes 8m..8m+7 give the addresses of the eight 16-byte rows of
/// matrix m; register m of every lane receives its fragment (transposed with `.trans`).
impl Exec for op::Ldmatrix {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_full_warp(cx, i)?;
        let trans = i.has(Mod::Trans);
        let regs = vec_regs(i, 0);
        for m in 0..num(i) {
            let mut mat = [[0u16; 8]; 8];
            for row in 0..8 {
                let p = row_place(cx, i, 1, m, row)?;
                super::tma::on_generic_access(cx, p, 16, 8 * m + row, false)?;
                let bytes = cx.m.read(p, 16).to_vec();
                for c in 0..8 {
                    mat[row as usize][c] = u16::from_le_bytes([bytes[2 * c], bytes[2 * c + 1]]);
                }
            }
            for l in 0..WARP as u32 {
                let (r, c) = (l / 4, 2 * (l % 4));
                let (lo, hi) = if trans { (mat[c as usize][r as usize], mat[c as usize + 1][r as usize]) } else { (mat[r as usize][c as usize], mat[r as usize][c as usize + 1]) };
                if let Some(Some(reg)) = regs.get(m as usize) {
                    cx.set_reg(*reg, l, lo as u64 | (hi as u64) << 16);
                }
            }
        }
        Ok(Flow::Next)
    }
}

/// stmatrix (PTX 9.7.14.5 "stmatrix"): the inverse of ldmatrix: register m of every lane holds its
/// fragment of matrix m, stored row by row at the addresses lanes 8m..8m+7 give.
impl Exec for op::Stmatrix {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_full_warp(cx, i)?;
        let trans = i.has(Mod::Trans);
        for m in 0..num(i) {
            let mut mat = [[0u16; 8]; 8];
            for l in 0..WARP as u32 {
                let v = vec_val(cx, i, 1, m as usize, l);
                let (r, c) = (l / 4, 2 * (l % 4));
                for h in 0..2 {
                    let x = (v >> (16 * h)) as u16;
                    if trans {
                        mat[(c + h) as usize][r as usize] = x;
                    } else {
                        mat[r as usize][(c + h) as usize] = x;
                    }
                }
            }
            for row in 0..8 {
                let p = row_place(cx, i, 0, m, row)?;
                super::tma::on_generic_access(cx, p, 16, 8 * m + row, true)?;
                let bytes: Vec<u8> = mat[row as usize].iter().flat_map(|x| x.to_le_bytes()).collect();
                cx.m.write(p, &bytes);
            }
        }
        Ok(Flow::Next)
    }
}

/// movmatrix (PTX 9.7.14.5 "movmatrix"): the transpose of an 8x8 b16 matrix in fragment layout.
impl Exec for op::Movmatrix {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_full_warp(cx, i)?;
        let src: Vec<u64> = (0..WARP as u32).map(|l| cx.src(i, 1, l)).collect();
        let get = |row: u32, col: u32| {
            let (l, h) = frag88(row, col);
            (src[l as usize] >> (16 * h)) & 0xffff
        };
        for l in 0..WARP as u32 {
            let (r, c) = (l / 4, 2 * (l % 4));
            let v = get(c, r) | get(c + 1, r) << 16;
            cx.dst(i, 0, l, v);
        }
        Ok(Flow::Next)
    }
}

// ---- mma.sync -------------------------------------------------------------------------------------

/// Reads the A, B and C operands of an `mma` of form `f` into matrices.
fn mma_inputs(cx: &Cx<'_, '_>, i: &Instr, f: &Form) -> (Mat, Mat, Mat) {
    let (dt, at, bt, ct) = (i.ty().unwrap_or(Mod::F32), i.ty2.unwrap_or(Mod::F16), i.ty3.unwrap_or(Mod::F16), i.ty4.unwrap_or(Mod::F32));
    let _ = dt;
    let per = f.family.per_reg();
    let m8 = f.m == 8;
    let mut a = Mat::new(f.m, f.k);
    let mut b = Mat::new(f.k, f.n);
    let mut c = Mat::new(f.m, f.n);
    for l in 0..WARP as u32 {
        for r in 0..f.a_regs as u32 {
            let reg = vec_val(cx, i, 1, r as usize, l);
            for j in 0..per {
                let (row, col) = if m8 { m8_a(l, j, per) } else { a16(l, r, j, f.a_regs as u32, per) };
                a.set(row, col, elem(at, reg, j));
            }
        }
        for r in 0..f.b_regs as u32 {
            let reg = vec_val(cx, i, 2, r as usize, l);
            for j in 0..per {
                let (k, n) = if m8 { (m8_a(l, j, per).1, l >> 2) } else { b8(l, r, j, per) };
                b.set(k, n, elem(bt, reg, j));
            }
        }
        for e in 0..(f.m * f.n / 32) {
            let (row, col) = if m8 { m8_c(l, e) } else { c16(l, e) };
            let (reg, j) = if ct == Mod::F16 { (e / 2, e % 2) } else { (e, 0) };
            c.set(row, col, elem(ct, vec_val(cx, i, 3, reg as usize, l), j));
        }
    }
    (a, b, c)
}

/// mma.sync (PTX 9.7.14.5 "mma"): D = A * B + C on one warp's fragments.
impl Exec for op::Mma {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let f = match mma_form(i) {
            Ok(f) => f,
            Err(e) => return unsupported(cx, i, &e),
        };
        check_full_warp(cx, i)?;
        let dt = i.ty().unwrap_or(Mod::F32);
        let (a, b, c) = mma_inputs(cx, i, &f);
        let op_b1 = [Mod::And, Mod::Xor].into_iter().find(|m| i.has(*m));
        let d = product(&a, &b, Some(&c), dt, i.has(Mod::Satfinite), op_b1);
        let dregs = vec_regs(i, 0);
        let m8 = f.m == 8;
        for l in lanes(cx.mask) {
            let mut words = vec![0u64; f.d_regs];
            for e in 0..(f.m * f.n / 32) {
                let (row, col) = if m8 { m8_c(l, e) } else { c16(l, e) };
                let v = d[(row * f.n + col) as usize];
                if dt == Mod::F16 {
                    words[(e / 2) as usize] |= v << (16 * (e % 2));
                } else {
                    words[e as usize] = v;
                }
            }
            for (k, w) in words.into_iter().enumerate() {
                if let Some(Some(r)) = dregs.get(k) {
                    cx.set_reg(*r, l, w);
                }
            }
        }
        Ok(Flow::Next)
    }
}

/// `a * b (+ c)` rounded into `dt`, row-major bits.
pub fn product(a: &Mat, b: &Mat, c: Option<&Mat>, dt: Mod, satfinite: bool, op_b1: Option<Mod>) -> Vec<u64> {
    let mut out = Vec::with_capacity((a.rows * b.cols) as usize);
    for r in 0..a.rows {
        for col in 0..b.cols {
            let mut acc = Acc::new(c.map(|c| c.at(r, col)));
            for k in 0..a.cols {
                acc.mac(a.at(r, k), b.at(k, col), op_b1);
            }
            out.push(acc.finish(dt, satfinite));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragment_layouts_cover_each_element_once() {
        // m16n8k16 f16: A 16x16 over 32 lanes x 4 registers x 2 halves.
        let mut seen = std::collections::HashSet::new();
        for l in 0..32 {
            for r in 0..4 {
                for j in 0..2 {
                    assert!(seen.insert(a16(l, r, j, 4, 2)));
                }
            }
        }
        assert_eq!(seen.len(), 256);
        // PTX "Matrix Fragments for mma.m16n8k16 with floating point type": lane 5 (group 1, thread 1): a0,a1 = (1, 2), (1, 3); a2 = (9, 2); a4 = (1, 10).
        assert_eq!(a16(5, 0, 0, 4, 2), (1, 2));
        assert_eq!(a16(5, 0, 1, 4, 2), (1, 3));
        assert_eq!(a16(5, 1, 0, 4, 2), (9, 2));
        assert_eq!(a16(5, 2, 0, 4, 2), (1, 10));
        // B: b0,b1 of lane 5 = rows 2, 3 of column 1; b2 = row 10.
        assert_eq!(b8(5, 0, 0, 2), (2, 1));
        assert_eq!(b8(5, 1, 0, 2), (10, 1));
        // tf32 m16n8k8: a2 of lane 5 = (1, 5); b1 = (5, 1).
        assert_eq!(a16(5, 2, 0, 4, 1), (1, 5));
        assert_eq!(b8(5, 1, 0, 1), (5, 1));
        // C: c0..c3 of lane 5 = (1, 2), (1, 3), (9, 2), (9, 3); wgmma's c4 is the next 8 columns.
        assert_eq!(c16(5, 0), (1, 2));
        assert_eq!(c16(5, 3), (9, 3));
        assert_eq!(c16(5, 4), (1, 10));
    }

    #[test]
    fn exact_accumulation_rounds_once() {
        // 1 + 2^-30 - 1 in f32: summed exactly, 2^-30.
        let mut acc = Acc::new(Some(Val::F(1.0)));
        acc.mac(Val::F(2f64.powi(-15)), Val::F(2f64.powi(-15)), None);
        acc.mac(Val::F(-1.0), Val::F(1.0), None);
        assert_eq!(f32::from_bits(acc.finish(Mod::F32, false) as u32), 2f32.powi(-30));
        let mut acc = Acc::new(Some(Val::I(i32::MAX as i64)));
        acc.mac(Val::I(2), Val::I(3), None);
        assert_eq!(acc.finish(Mod::S32, true), i32::MAX as u32 as u64);
        assert_eq!(acc.finish(Mod::S32, false), (i32::MAX as i64 + 6) as u32 as u64);
        let mut acc = Acc::new(None);
        acc.mac(Val::I(0b1011), Val::I(0b0110), Some(Mod::And));
        acc.mac(Val::I(0b1011), Val::I(0b0110), Some(Mod::Xor));
        assert_eq!(acc.finish(Mod::S32, false), 1 + 3);
    }

    #[test]
    fn elements_of_packed_registers() {
        assert_eq!(elem(Mod::F16, 0x4000_3c00, 1), Val::F(2.0));
        assert_eq!(elem(Mod::S8, 0x80ff_0102, 3), Val::I(-128));
        assert_eq!(elem(Mod::U8, 0x80ff_0102, 2), Val::I(255));
        assert_eq!(elem(Mod::S4, 0xf0, 1), Val::I(-1));
        assert_eq!(elem(Mod::B1, 0b100, 2), Val::I(1));
        assert_eq!(elem(Mod::E4m3, 0x38, 0), Val::F(1.0));
    }
}
