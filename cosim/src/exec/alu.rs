//! Integer, floating-point and logic instructions (PTX 9.7.1 - 9.7.9). Values live in 64-bit
//! registers; an instruction of type `.tN` reads the low N bits of its sources (sign-extending
//! signed types) and writes N bits.

use super::float::{self, Arith};
use super::{bits, lanes, per_lane, sext, trunc, unsupported, Cx, Exec, Flow, R};
use crate::finding::FindingKind;
use hopsync_firmware::ir::{Instr, Mod, Operand};
use hopsync_firmware::ops::op;

fn is_f(t: Mod) -> bool {
    float::is_float(t)
}

/// d = f(a, b) over the executing lanes, in type `t` (whole-warp: each operand decoded once).
fn binop(cx: &mut Cx<'_, '_>, i: &Instr, f: impl Fn(u64, u64) -> u64) -> R {
    let t = cx.ty(i);
    let w = bits(t);
    let (a, b) = (cx.src_lanes(i, 1), cx.src_lanes(i, 2));
    let d = per_lane(cx.mask, |l| trunc(f(trunc(a[l], w), trunc(b[l], w)), w));
    cx.dst_lanes(i, 0, &d);
    Ok(Flow::Next)
}

fn sat32(v: i64) -> u64 {
    v.clamp(i32::MIN as i64, i32::MAX as i64) as u64
}

impl Exec for op::Mov {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let w = bits(t);
        if !matches!((&i.operands[0], &i.operands[1]), (Operand::Vector(_), _) | (_, Operand::Vector(_))) {
            let v = cx.src_lanes(i, 1);
            cx.dst_lanes(i, 0, &v.map(|x| trunc(x, w)));
            return Ok(Flow::Next);
        }
        for l in lanes(cx.mask) {
            match (&i.operands[0], &i.operands[1]) {
                // Pack: mov.b64 d, {lo, hi}.
                (_, Operand::Vector(v)) => {
                    let part = w / v.len() as u32;
                    let mut x = 0u64;
                    for (k, o) in v.iter().enumerate() {
                        let val = match o {
                            Operand::Reg(r) => cx.reg(*r, l),
                            Operand::Imm(n) => *n as u64,
                            _ => 0,
                        };
                        x |= trunc(val, part) << (part * k as u32);
                    }
                    cx.dst(i, 0, l, x);
                }
                // Unpack: mov.b64 {lo, hi}, s.
                (Operand::Vector(v), _) => {
                    let part = w / v.len() as u32;
                    let x = cx.src(i, 1, l);
                    for (k, o) in v.iter().enumerate() {
                        if let Operand::Reg(r) = o {
                            cx.set_reg(*r, l, trunc(x >> (part * k as u32), part));
                        }
                    }
                }
                _ => unreachable!("the scalar mov ran whole-warp above"),
            }
        }
        Ok(Flow::Next)
    }
}

impl Exec for op::Add {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        if is_f(t) {
            return float::arith(cx, i, Arith::Add);
        }
        if matches!(t, Mod::U16x2 | Mod::S16x2) {
            return binop(cx, i, |a, b| halves(a, b, u16::wrapping_add));
        }
        if i.has(Mod::Sat) {
            return binop(cx, i, |a, b| sat32(sext(a, 32) + sext(b, 32)));
        }
        binop(cx, i, |a, b| a.wrapping_add(b))
    }
}

impl Exec for op::Addc {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        unsupported(cx, i, "extended-precision addc (carry flag)")
    }
}

impl Exec for op::Sub {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        if is_f(t) {
            return float::arith(cx, i, Arith::Sub);
        }
        if matches!(t, Mod::U16x2 | Mod::S16x2) {
            return binop(cx, i, |a, b| halves(a, b, u16::wrapping_sub));
        }
        if i.has(Mod::Sat) {
            return binop(cx, i, |a, b| sat32(sext(a, 32) - sext(b, 32)));
        }
        binop(cx, i, |a, b| a.wrapping_sub(b))
    }
}

impl Exec for op::Subc {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        unsupported(cx, i, "extended-precision subc (carry flag)")
    }
}

/// Integer multiply in the `.lo` / `.hi` / `.wide` forms.
fn imul(t: Mod, mode: Option<Mod>, a: u64, b: u64) -> u64 {
    let w = bits(t);
    let prod: i128 = if t.is_signed() {
        sext(a, w) as i128 * sext(b, w) as i128
    } else {
        trunc(a, w) as i128 * trunc(b, w) as i128
    };
    match mode {
        Some(Mod::Hi) => (prod >> w) as u64,
        Some(Mod::Wide) => trunc(prod as u64, 2 * w),
        _ => trunc(prod as u64, w),
    }
}

fn mul_mode(i: &Instr) -> Option<Mod> {
    [Mod::Lo, Mod::Hi, Mod::Wide].into_iter().find(|m| i.has(*m))
}

impl Exec for op::Mul {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        if is_f(t) {
            return float::arith(cx, i, Arith::Mul);
        }
        let mode = mul_mode(i);
        let w = bits(t);
        let (a, b) = (cx.src_lanes(i, 1), cx.src_lanes(i, 2));
        let d = per_lane(cx.mask, |l| imul(t, mode, trunc(a[l], w), trunc(b[l], w)));
        cx.dst_lanes(i, 0, &d);
        Ok(Flow::Next)
    }
}

impl Exec for op::Mad {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        // mad.f32 / mad.rnd.f64 are fma (PTX 9.7.3.5: "mad.f32 computes the product to infinite
        // precision" on sm_20+).
        if is_f(t) {
            return float::arith(cx, i, Arith::Fma);
        }
        let w = bits(t);
        let mode = mul_mode(i);
        let dw = if mode == Some(Mod::Wide) { 2 * w } else { w };
        let (a, b, c) = (cx.src_lanes(i, 1), cx.src_lanes(i, 2), cx.src_lanes(i, 3));
        let d = per_lane(cx.mask, |l| trunc(imul(t, mode, trunc(a[l], w), trunc(b[l], w)).wrapping_add(c[l]), dw));
        cx.dst_lanes(i, 0, &d);
        Ok(Flow::Next)
    }
}

impl Exec for op::Fma {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        float::arith(cx, i, Arith::Fma)
    }
}

/// The two 16-bit halves of `a` and `b` combined by `f` (PTX 9.7.1.1 - 9.7.1.2 `.u16x2`/`.s16x2`).
fn halves(a: u64, b: u64, f: fn(u16, u16) -> u16) -> u64 {
    let lo = f(a as u16, b as u16) as u64;
    let hi = f((a >> 16) as u16, (b >> 16) as u16) as u64;
    lo | hi << 16
}

fn idiv(cx: &mut Cx<'_, '_>, i: &Instr, rem: bool) -> R {
    let t = cx.ty(i);
    let w = bits(t);
    for l in lanes(cx.mask) {
        let (a, b) = (trunc(cx.src(i, 1, l), w), trunc(cx.src(i, 2, l), w));
        if b == 0 {
            cx.finding(FindingKind::DivideByZero, l, format!("integer {} by zero", if rem { "remainder" } else { "division" }))?;
            continue;
        }
        let v = if t.is_signed() {
            let (x, y) = (sext(a, w), sext(b, w));
            (if rem { x.wrapping_rem(y) } else { x.wrapping_div(y) }) as u64
        } else if rem {
            a % b
        } else {
            a / b
        };
        cx.dst(i, 0, l, trunc(v, w));
    }
    Ok(Flow::Next)
}

impl Exec for op::Div {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        if is_f(t) {
            return float::arith(cx, i, Arith::Div);
        }
        idiv(cx, i, false)
    }
}

impl Exec for op::Rem {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        idiv(cx, i, true)
    }
}

fn unop(cx: &mut Cx<'_, '_>, i: &Instr, f: impl Fn(u64) -> u64) -> R {
    let w = bits(cx.ty(i));
    let a = cx.src_lanes(i, 1);
    let d = per_lane(cx.mask, |l| trunc(f(trunc(a[l], w)), w));
    cx.dst_lanes(i, 0, &d);
    Ok(Flow::Next)
}

impl Exec for op::Abs {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let w = bits(t);
        if is_f(t) {
            return float::sign_op(cx, i, false);
        }
        unop(cx, i, |a| sext(a, w).wrapping_abs() as u64)
    }
}

impl Exec for op::Neg {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let w = bits(t);
        if is_f(t) {
            return float::sign_op(cx, i, true);
        }
        unop(cx, i, |a| sext(a, w).wrapping_neg() as u64)
    }
}

/// min/max (PTX 9.7.1.12 - 9.7.1.13 integers, `.relu` clamping a signed result at 0; the float
/// forms in exec/float.rs).
fn minmax(cx: &mut Cx<'_, '_>, i: &Instr, max: bool) -> R {
    let t = cx.ty(i);
    if is_f(t) {
        return float::minmax(cx, i, max);
    }
    let relu = i.has(Mod::Relu);
    let pick = move |a: i64, b: i64| {
        let r = if max { a.max(b) } else { a.min(b) };
        if relu {
            r.max(0)
        } else {
            r
        }
    };
    if matches!(t, Mod::U16x2 | Mod::S16x2) {
        let signed = t == Mod::S16x2;
        let half = move |v: u64, k: u32| -> i64 {
            let h = (v >> (16 * k)) & 0xffff;
            if signed {
                sext(h, 16)
            } else {
                h as i64
            }
        };
        return binop(cx, i, move |a, b| (pick(half(a, 0), half(b, 0)) as u64 & 0xffff) | (pick(half(a, 1), half(b, 1)) as u64 & 0xffff) << 16);
    }
    let w = bits(t);
    binop(cx, i, move |a, b| {
        if t.is_signed() {
            pick(sext(a, w), sext(b, w)) as u64
        } else if max {
            a.max(b)
        } else {
            a.min(b)
        }
    })
}

impl Exec for op::Min {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        minmax(cx, i, false)
    }
}
impl Exec for op::Max {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        minmax(cx, i, true)
    }
}
impl Exec for op::And {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        binop(cx, i, |a, b| a & b)
    }
}
impl Exec for op::Or {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        binop(cx, i, |a, b| a | b)
    }
}
impl Exec for op::Xor {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        binop(cx, i, |a, b| a ^ b)
    }
}
impl Exec for op::Not {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        unop(cx, i, |a| !a)
    }
}
impl Exec for op::Cnot {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        unop(cx, i, |a| (a == 0) as u64)
    }
}
impl Exec for op::Shl {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let w = bits(cx.ty(i));
        let (a, s) = (cx.src_lanes(i, 1), cx.src_lanes(i, 2));
        let d = per_lane(cx.mask, |l| {
            let (a, s) = (trunc(a[l], w), trunc(s[l], 32));
            if s >= w as u64 {
                0
            } else {
                trunc(a << s, w)
            }
        });
        cx.dst_lanes(i, 0, &d);
        Ok(Flow::Next)
    }
}
impl Exec for op::Shr {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let w = bits(t);
        let (a, s) = (cx.src_lanes(i, 1), cx.src_lanes(i, 2));
        let d = per_lane(cx.mask, |l| {
            let a = trunc(a[l], w);
            let s = trunc(s[l], 32).min(w as u64 - 1 + t.is_signed() as u64);
            let v = if t.is_signed() {
                (sext(a, w) >> s.min(63)) as u64
            } else if s >= w as u64 {
                0
            } else {
                a >> s
            };
            trunc(v, w)
        });
        cx.dst_lanes(i, 0, &d);
        Ok(Flow::Next)
    }
}
impl Exec for op::Popc {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let w = bits(cx.ty(i));
        for l in lanes(cx.mask) {
            let v = trunc(cx.src(i, 1, l), w).count_ones() as u64;
            cx.dst(i, 0, l, v);
        }
        Ok(Flow::Next)
    }
}
impl Exec for op::Clz {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let w = bits(cx.ty(i));
        for l in lanes(cx.mask) {
            let v = (trunc(cx.src(i, 1, l), w).leading_zeros() - (64 - w)) as u64;
            cx.dst(i, 0, l, v);
        }
        Ok(Flow::Next)
    }
}
impl Exec for op::Brev {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let w = bits(cx.ty(i));
        unop(cx, i, move |a| a.reverse_bits() >> (64 - w))
    }
}
/// PTX 9.7.1.x `bfind`: the bit position of the most significant non-sign bit (for a signed
/// negative value, the most significant 0), or 0xffffffff when there is none; `.shiftamt` gives
/// the left shift that moves that bit to the msb instead. The result is a `.u32`.
pub fn bfind(a: u64, w: u32, signed: bool, shiftamt: bool) -> u64 {
    let mut a = trunc(a, w);
    if signed && (a >> (w - 1)) & 1 == 1 {
        a = trunc(!a, w);
    }
    if a == 0 {
        return 0xffff_ffff;
    }
    let pos = 63 - a.leading_zeros() as u64;
    if shiftamt {
        w as u64 - 1 - pos
    } else {
        pos
    }
}
impl Exec for op::Bfind {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let (w, signed, shiftamt) = (bits(t), t.is_signed(), i.mods.has(Mod::Shiftamt));
        for l in lanes(cx.mask) {
            let v = bfind(cx.src(i, 1, l), w, signed, shiftamt);
            cx.dst(i, 0, l, v);
        }
        Ok(Flow::Next)
    }
}
impl Exec for op::Bfe {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let w = bits(t);
        for l in lanes(cx.mask) {
            let a = trunc(cx.src(i, 1, l), w);
            let pos = (cx.src(i, 2, l) & 0xff) as u32;
            let len = (cx.src(i, 3, l) & 0xff) as u32;
            // PTX 9.7.1.18: bits beyond the msb read the sign (signed) or zero.
            let mut v = 0u64;
            let sign = if t.is_signed() && len > 0 { (a >> (pos + len - 1).min(w - 1)) & 1 } else { 0 };
            for k in 0..w {
                let bit = if k < len {
                    if pos + k < w {
                        (a >> (pos + k)) & 1
                    } else {
                        sign
                    }
                } else {
                    sign
                };
                v |= bit << k;
            }
            cx.dst(i, 0, l, v);
        }
        Ok(Flow::Next)
    }
}

/// The comparison of a `setp` / `set` (`.eq` when none is written).
pub fn compare_op(i: &Instr) -> Mod {
    i.mods.iter().find(|m| matches!(m, Mod::Eq | Mod::Ne | Mod::Lt | Mod::Le | Mod::Gt | Mod::Ge | Mod::Lo | Mod::Ls | Mod::Hi | Mod::Hs | Mod::Equ | Mod::Neu | Mod::Ltu | Mod::Leu | Mod::Gtu | Mod::Geu | Mod::Num | Mod::Nan)).unwrap_or(Mod::Eq)
}

/// `a cmp b` in type `t` (for a float type, element `e` of packed registers).
pub fn compare(cmp: Mod, t: Mod, a: u64, b: u64, e: u32) -> bool {
    let w = bits(t);
    if is_f(t) {
        let (x, y) = (float::value(t, a, e), float::value(t, b, e));
        let unordered = x.is_nan() || y.is_nan();
        return match cmp {
            Mod::Eq => !unordered && x == y,
            Mod::Ne => !unordered && x != y,
            Mod::Lt => !unordered && x < y,
            Mod::Le => !unordered && x <= y,
            Mod::Gt => !unordered && x > y,
            Mod::Ge => !unordered && x >= y,
            Mod::Equ => unordered || x == y,
            Mod::Neu => unordered || x != y,
            Mod::Ltu => unordered || x < y,
            Mod::Leu => unordered || x <= y,
            Mod::Gtu => unordered || x > y,
            Mod::Geu => unordered || x >= y,
            Mod::Num => !unordered,
            Mod::Nan => unordered,
            _ => false,
        };
    }
    let (sa, sb) = (sext(a, w), sext(b, w));
    let (ua, ub) = (trunc(a, w), trunc(b, w));
    let signed = t.is_signed();
    match cmp {
        Mod::Eq => ua == ub,
        Mod::Ne => ua != ub,
        Mod::Lt => if signed { sa < sb } else { ua < ub },
        Mod::Le => if signed { sa <= sb } else { ua <= ub },
        Mod::Gt => if signed { sa > sb } else { ua > ub },
        Mod::Ge => if signed { sa >= sb } else { ua >= ub },
        Mod::Lo => ua < ub,
        Mod::Ls => ua <= ub,
        Mod::Hi => ua > ub,
        Mod::Hs => ua >= ub,
        _ => false,
    }
}

/// setp (PTX "Comparison and Selection Instructions: setp", and the half-precision setp): `p|q` gets the comparison and its complement, each
/// combined with `c`; the packed forms (`.f16x2`, `.bf16x2`) compare each half instead, `p` the
/// low one and `q` the high one.
impl Exec for op::Setp {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let packed = matches!(t, Mod::F16x2 | Mod::Bf16x2);
        let cmp = compare_op(i);
        let boolop = [Mod::And, Mod::Or, Mod::Xor].into_iter().find(|m| i.has(*m));
        let ftz = i.has(Mod::Ftz) && is_f(t);
        let (a, b) = (cx.src_lanes(i, 1), cx.src_lanes(i, 2));
        let c = if boolop.is_some() { cx.src_lanes(i, 3) } else { [0; super::WARP] };
        // Bit 0: p, bit 1: q, of each lane.
        let pq = per_lane(cx.mask, |l| {
            let (a, b) = if ftz { (flush_bits(t, a[l]), flush_bits(t, b[l])) } else { (a[l], b[l]) };
            let r = compare(cmp, t, a, b, 0);
            let r2 = if packed { compare(cmp, t, a, b, 1) } else { !r };
            let (p, q) = match boolop {
                Some(op) => {
                    let c = c[l] & 1 == 1;
                    let comb = |x: bool| match op {
                        Mod::And => x && c,
                        Mod::Or => x || c,
                        _ => x ^ c,
                    };
                    (comb(r), comb(r2))
                }
                None => (r, r2),
            };
            p as u64 | (q as u64) << 1
        });
        match &i.operands[0] {
            Operand::Pair(d, e) => {
                if d.0 != u32::MAX {
                    cx.set_reg_lanes(*d, &pq.map(|v| v & 1));
                }
                cx.set_reg_lanes(*e, &pq.map(|v| v >> 1));
            }
            _ => cx.dst_lanes(i, 0, &pq.map(|v| v & 1)),
        }
        Ok(Flow::Next)
    }
}

/// `.ftz` on a float register: its subnormal elements become zeros of their sign.
fn flush_bits(t: Mod, v: u64) -> u64 {
    let Some((fmt, n)) = float::fmt_of(t) else { return v };
    let w = fmt.bits();
    let mut out = v;
    for e in 0..n {
        let x = float::value(t, v, e);
        if x != 0.0 && x.abs() < fmt.min_normal() {
            let sign = super::fp::lane_of(fmt, v, e) & (1 << (w - 1));
            out = out & !(((1u64 << w) - 1) << (w * e)) | sign << (w * e);
        }
    }
    out
}

/// set (PTX "Comparison and Selection Instructions: set", and the half-precision set): the comparison (combined with `c`) as a value of
/// the destination type: all ones / 0 for `.u32`/`.s32`, 1.0 / 0.0 for a float type; the packed
/// forms compare and set each half.
impl Exec for op::Set {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let dt = cx.ty(i);
        let st = i.ty2.unwrap_or(Mod::U32);
        let cmp = compare_op(i);
        let boolop = [Mod::And, Mod::Or, Mod::Xor].into_iter().find(|m| i.has(*m));
        let ftz = i.has(Mod::Ftz) && is_f(st);
        let one = |t: Mod| -> (u64, u32) {
            match t {
                Mod::F32 => (0x3f80_0000, 32),
                Mod::F16 | Mod::F16x2 => (0x3c00, 16),
                Mod::Bf16 | Mod::Bf16x2 => (0x3f80, 16),
                _ => (0xffff_ffff, 32),
            }
        };
        let (t_bits, w) = one(dt);
        let n = if matches!(dt, Mod::F16x2 | Mod::Bf16x2) { 2 } else { 1 };
        for l in lanes(cx.mask) {
            let (mut a, mut b) = (cx.src_as(i, 1, l, st), cx.src_as(i, 2, l, st));
            if ftz {
                a = flush_bits(st, a);
                b = flush_bits(st, b);
            }
            let c = boolop.map(|_| cx.src(i, 3, l) & 1 == 1);
            let mut v = 0u64;
            for e in 0..n {
                let r = compare(cmp, st, a, b, e);
                let r = match (boolop, c) {
                    (Some(Mod::And), Some(c)) => r && c,
                    (Some(Mod::Or), Some(c)) => r || c,
                    (Some(_), Some(c)) => r ^ c,
                    _ => r,
                };
                if r {
                    v |= t_bits << (w * e);
                }
            }
            cx.dst(i, 0, l, v);
        }
        Ok(Flow::Next)
    }
}

impl Exec for op::Selp {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let w = bits(cx.ty(i));
        let (a, b, c) = (cx.src_lanes(i, 1), cx.src_lanes(i, 2), cx.src_lanes(i, 3));
        let d = per_lane(cx.mask, |l| trunc(if c[l] & 1 == 1 { a[l] } else { b[l] }, w));
        cx.dst_lanes(i, 0, &d);
        Ok(Flow::Next)
    }
}

impl Exec for op::Cvta {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        use crate::machine::{LOCAL_GENERIC_BASE, PARAM_GENERIC_BASE, SHARED_GENERIC_BASE};
        let to = i.has(Mod::To);
        let base = if i.has(Mod::Shared) || i.has(Mod::SharedCta) || i.has(Mod::SharedCluster) {
            SHARED_GENERIC_BASE
        } else if i.has(Mod::Local) {
            LOCAL_GENERIC_BASE
        } else if i.has(Mod::Param) {
            PARAM_GENERIC_BASE
        } else {
            0
        };
        let w = bits(cx.ty(i));
        let a = cx.src_lanes(i, 1);
        let d = per_lane(cx.mask, |l| trunc(if to { a[l].wrapping_sub(base) } else { a[l].wrapping_add(base) }, w));
        cx.dst_lanes(i, 0, &d);
        Ok(Flow::Next)
    }
}

#[cfg(test)]
mod tests {
    use super::bfind;

    #[test]
    fn bfind_finds_the_most_significant_non_sign_bit() {
        assert_eq!(bfind(1, 32, false, false), 0);
        assert_eq!(bfind(0x8000_0000, 32, false, false), 31);
        assert_eq!(bfind(0x8000_0000, 32, false, true), 0);
        assert_eq!(bfind(0x10, 32, false, true), 27);
        assert_eq!(bfind(0, 32, false, false), 0xffff_ffff);
        assert_eq!(bfind(0, 32, false, true), 0xffff_ffff);
        // Signed: -1 has no non-sign bit; -2 (..1110) has its most significant 0 at bit 0.
        assert_eq!(bfind(0xffff_ffff, 32, true, false), 0xffff_ffff);
        assert_eq!(bfind(0xffff_fffe, 32, true, false), 0);
        assert_eq!(bfind(0x4000_0000, 32, true, false), 30);
        assert_eq!(bfind(1 << 40, 64, false, false), 40);
        assert_eq!(bfind(1 << 40, 64, false, true), 23);
    }
}
