//! Floating-point arithmetic on every PTX float type (PTX 9.7.3 f32/f64, 9.7.4 f16/f16x2 and
//! bf16/bf16x2): one lane-wise driver decodes the operands of each packed element, computes the
//! exact result ([`fp::Exact`]) and rounds it once with the instruction's modifiers. The
//! transcendental `.approx` instructions (PTX 9.7.3.13 - 9.7.3.22, 9.7.4.9 - 9.7.4.10) return the
//! correctly rounded value of the function, which is within every error bound the PTX ISA
//! documents for them (silicon's MUFU results may differ from it in the last bits).

use super::fp::{self, Exact, Fmt, Mode, Round};
use super::{lanes, unsupported, Cx, Exec, Flow, Stop, R};
use hopsync_firmware::ir::{Instr, Mod};
use hopsync_firmware::ops::op;

/// The storage format and element count of a float instruction type (`.f16x2`: two f16).
pub fn fmt_of(t: Mod) -> Option<(Fmt, u32)> {
    Some(match t {
        Mod::F16 => (Fmt::F16, 1),
        Mod::F16x2 => (Fmt::F16, 2),
        Mod::Bf16 => (Fmt::Bf16, 1),
        Mod::Bf16x2 => (Fmt::Bf16, 2),
        Mod::F32 => (Fmt::F32, 1),
        Mod::F64 => (Fmt::F64, 1),
        Mod::Tf32 => (Fmt::Tf32, 1),
        Mod::E4m3 => (Fmt::E4m3, 1),
        Mod::E5m2 => (Fmt::E5m2, 1),
        Mod::E4m3x2 => (Fmt::E4m3, 2),
        Mod::E5m2x2 => (Fmt::E5m2, 2),
        _ => return None,
    })
}

/// The rounding of an instruction's `.rn/.rz/.rm/.rp` (also the integer-result `.rni/.rzi/.rmi/
/// .rpi` of cvt), `default` when it has none.
pub fn rounding(i: &Instr, default: Round) -> Round {
    if i.has(Mod::Rz) || i.has(Mod::Rzi) {
        Round::Rz
    } else if i.has(Mod::Rm) || i.has(Mod::Rmi) {
        Round::Rm
    } else if i.has(Mod::Rp) || i.has(Mod::Rpi) {
        Round::Rp
    } else if i.has(Mod::Rna) {
        Round::Rna
    } else if i.has(Mod::Rn) || i.has(Mod::Rni) {
        Round::Rn
    } else {
        default
    }
}

/// The result modifiers of `i`.
pub fn mode(i: &Instr) -> Mode {
    Mode { round: rounding(i, Round::Rn), ftz: i.has(Mod::Ftz), sat: i.has(Mod::Sat), satfinite: i.has(Mod::Satfinite), relu: i.has(Mod::Relu) }
}

/// Stochastic rounding (`.rs`, sm_100) is not modelled.
fn check_rounding(cx: &Cx<'_, '_>, i: &Instr) -> Result<(), Stop> {
    if i.has(Mod::Rs) {
        return unsupported(cx, i, "stochastic rounding `.rs`").map(|_| ());
    }
    Ok(())
}

/// An operation on decoded element values.
pub type ElemFn<'f> = &'f dyn Fn(&[f64]) -> Elem;

/// What an element operation produces.
pub enum Elem {
    /// An exact value to round with the instruction's mode.
    Val(Exact),
    /// Bits to write unchanged (sign operations, NaN rules of min/max).
    Bits(u64),
}

/// Runs `f` element-wise over the executing lanes: operands 1..=n decoded in the instruction's
/// format (flushed when `.ftz`), the result rounded into operand 0.
pub fn lanewise(cx: &mut Cx<'_, '_>, i: &Instr, n: usize, f: ElemFn<'_>) -> R {
    check_rounding(cx, i)?;
    let t = cx.ty(i);
    let Some((fmt, elems)) = fmt_of(t) else { return unsupported(cx, i, "this float type") };
    let m = mode(i);
    let w = fmt.bits();
    let oob_mode = i.has(Mod::Oob);
    for l in lanes(cx.mask) {
        // At most three operands (fma): fixed arrays, no allocation per lane.
        let mut regs = [0u64; 3];
        for (k, r) in regs.iter_mut().enumerate().take(n) {
            *r = cx.src(i, k + 1, l);
        }
        let mut out = 0u64;
        for e in 0..elems {
            let mut vals = [0f64; 3];
            for k in 0..n {
                let x = fp::decode(fmt, fp::lane_of(fmt, regs[k], e));
                vals[k] = if m.ftz { fp::flush(fmt, x) } else { x };
            }
            // `.oob` (PTX 9.7.4.4): an operand holding the out-of-bounds NaN (the canonical NaN a
            // TMA load fills with) forces the element to +0.
            let oob = oob_mode && regs[..n].iter().any(|r| fp::lane_of(fmt, *r, e) == fmt.nan());
            let bits = if oob {
                0
            } else {
                match f(&vals[..n]) {
                    Elem::Val(x) => fp::encode(fmt, x, m),
                    Elem::Bits(b) => b,
                }
            };
            out |= (bits & mask(w)) << (w * e);
        }
        cx.dst(i, 0, l, out);
    }
    Ok(Flow::Next)
}

fn mask(w: u32) -> u64 {
    if w >= 64 {
        u64::MAX
    } else {
        (1 << w) - 1
    }
}

/// The arithmetic operations with an exact result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    /// `add` (PTX 9.7.3.3, 9.7.4.1).
    Add,
    /// `sub` (PTX 9.7.3.4, 9.7.4.2).
    Sub,
    /// `mul` (PTX 9.7.3.5, 9.7.4.3).
    Mul,
    /// `fma`, `mad` (PTX 9.7.3.6 - 9.7.3.7, 9.7.4.4).
    Fma,
    /// `div` (PTX 9.7.3.8).
    Div,
}

/// add/sub/mul/fma/div on a float type.
pub fn arith(cx: &mut Cx<'_, '_>, i: &Instr, op: Arith) -> R {
    let n = if op == Arith::Fma { 3 } else { 2 };
    lanewise(cx, i, n, &|v: &[f64]| {
        Elem::Val(match op {
            Arith::Add => Exact::add(v[0], v[1]),
            Arith::Sub => Exact::add(v[0], -v[1]),
            Arith::Mul => Exact::mul(v[0], v[1]),
            Arith::Fma => Exact::fma(v[0], v[1], v[2]),
            Arith::Div => Exact::div(v[0], v[1]),
        })
    })
}

/// min/max (PTX 9.7.3.11 - 9.7.3.12, 9.7.4.7 - 9.7.4.8): a NaN operand yields the other one, two
/// NaNs (or any NaN with `.NaN`) the canonical NaN; -0 is below +0; `.xorsign.abs` returns the
/// absolute value with the sign of the XOR of the operands' signs.
pub fn minmax(cx: &mut Cx<'_, '_>, i: &Instr, max: bool) -> R {
    let t = cx.ty(i);
    let Some((fmt, _)) = fmt_of(t) else { return unsupported(cx, i, "this float type") };
    let nan_mode = i.has(Mod::NaN);
    let xorsign = i.has(Mod::Xorsign);
    lanewise(cx, i, 2, &move |v: &[f64]| {
        let (a, b) = (v[0], v[1]);
        if a.is_nan() && b.is_nan() || (nan_mode && (a.is_nan() || b.is_nan())) {
            return Elem::Bits(fmt.nan());
        }
        let pick = if a.is_nan() {
            b
        } else if b.is_nan() {
            a
        } else {
            let (x, y) = if xorsign { (a.abs(), b.abs()) } else { (a, b) };
            let a_first = if x == y { x.is_sign_negative() != max } else { (x < y) != max };
            if a_first {
                x
            } else {
                y
            }
        };
        let r = if xorsign && !a.is_nan() && !b.is_nan() {
            pick.abs() * if a.is_sign_negative() != b.is_sign_negative() { -1.0 } else { 1.0 }
        } else {
            pick
        };
        Elem::Val(Exact::of(r))
    })
}

/// neg/abs (PTX 9.7.3.9 - 9.7.3.10, 9.7.4.5 - 9.7.4.6): the sign bit; a NaN gives the canonical
/// NaN.
pub fn sign_op(cx: &mut Cx<'_, '_>, i: &Instr, neg: bool) -> R {
    let t = cx.ty(i);
    let Some((fmt, _)) = fmt_of(t) else { return unsupported(cx, i, "this float type") };
    lanewise(cx, i, 1, &move |v: &[f64]| {
        if v[0].is_nan() {
            return Elem::Bits(fmt.nan());
        }
        Elem::Val(Exact::of(if neg { -v[0] } else { v[0].abs() }))
    })
}

/// copysign (PTX 9.7.3.2): the magnitude of b with the sign of a.
pub fn copysign(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
    lanewise(cx, i, 2, &|v: &[f64]| Elem::Val(Exact::of(v[1].copysign(if v[0].is_sign_negative() { -1.0 } else { 1.0 }))))
}

/// The unary functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `sqrt` (PTX 9.7.3.15): IEEE with `.rn/.rz/.rm/.rp`, correctly rounded for `.approx` too.
    Sqrt,
    /// `rsqrt.approx` (PTX 9.7.3.16 - 9.7.3.17): 1/sqrt(a).
    Rsqrt,
    /// `rcp` (PTX 9.7.3.13 - 9.7.3.14): 1/a, IEEE with a rounding, `.approx` otherwise.
    Rcp,
    /// `ex2.approx` (PTX 9.7.3.21, 9.7.4.10): 2^a.
    Ex2,
    /// `lg2.approx` (PTX 9.7.3.20): log2(a).
    Lg2,
    /// `sin.approx` (PTX 9.7.3.18).
    Sin,
    /// `cos.approx` (PTX 9.7.3.19).
    Cos,
    /// `tanh.approx` (PTX 9.7.3.22, 9.7.4.9).
    Tanh,
}

/// A unary function, element-wise. The exact ones (sqrt, rcp) carry their remainder into the
/// rounding; the transcendental ones round their f64 value (a correctly rounded f32/f16 result
/// but for ties closer than f64 resolves, far inside the documented error).
pub fn func(cx: &mut Cx<'_, '_>, i: &Instr, f: Func) -> R {
    lanewise(cx, i, 1, &move |v: &[f64]| {
        let a = v[0];
        Elem::Val(match f {
            Func::Sqrt => Exact::sqrt(a),
            Func::Rcp => Exact::div(1.0, a),
            Func::Rsqrt => {
                if a == 0.0 {
                    Exact::of(f64::INFINITY.copysign(a))
                } else {
                    Exact::of(1.0 / a.sqrt())
                }
            }
            Func::Ex2 => Exact::of(a.exp2()),
            Func::Lg2 => Exact::of(a.log2()),
            Func::Sin => Exact::of(a.sin()),
            Func::Cos => Exact::of(a.cos()),
            Func::Tanh => Exact::of(a.tanh()),
        })
    })
}

/// Whether `t` is a float type this module computes.
pub fn is_float(t: Mod) -> bool {
    fmt_of(t).is_some()
}

/// The value of element `e` of a float register of type `t`, decoded.
pub fn value(t: Mod, reg: u64, e: u32) -> f64 {
    let (fmt, _) = fmt_of(t).expect("float type");
    fp::decode(fmt, fp::lane_of(fmt, reg, e))
}

impl Exec for op::Copysign {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        copysign(cx, i)
    }
}
/// testp (PTX 9.7.3.1): a class test of the f32/f64 value.
impl Exec for op::Testp {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        for l in lanes(cx.mask) {
            let x = value(t, cx.src(i, 1, l), 0);
            let min = if t == Mod::F64 { f64::MIN_POSITIVE } else { f32::MIN_POSITIVE as f64 };
            let yes = if i.has(Mod::Finite) {
                x.is_finite()
            } else if i.has(Mod::Infinite) {
                x.is_infinite()
            } else if i.has(Mod::Number) {
                !x.is_nan()
            } else if i.has(Mod::Notanumber) {
                x.is_nan()
            } else if i.has(Mod::Normal) {
                x.is_finite() && x.abs() >= min
            } else {
                x != 0.0 && x.abs() < min
            };
            cx.dst(i, 0, l, yes as u64);
        }
        Ok(Flow::Next)
    }
}

impl Exec for op::Sqrt {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        func(cx, i, Func::Sqrt)
    }
}
impl Exec for op::Rsqrt {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        func(cx, i, Func::Rsqrt)
    }
}
impl Exec for op::Rcp {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        func(cx, i, Func::Rcp)
    }
}
impl Exec for op::Ex2 {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        func(cx, i, Func::Ex2)
    }
}
impl Exec for op::Lg2 {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        func(cx, i, Func::Lg2)
    }
}
impl Exec for op::Sin {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        func(cx, i, Func::Sin)
    }
}
impl Exec for op::Cos {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        func(cx, i, Func::Cos)
    }
}
impl Exec for op::Tanh {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        func(cx, i, Func::Tanh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_of_the_types() {
        assert_eq!(fmt_of(Mod::F16x2), Some((Fmt::F16, 2)));
        assert_eq!(fmt_of(Mod::Bf16), Some((Fmt::Bf16, 1)));
        assert_eq!(fmt_of(Mod::U32), None);
        // bf16x2 element 1 is the high half.
        assert_eq!(value(Mod::Bf16x2, 0x4000_3f80, 0), 1.0);
        assert_eq!(value(Mod::Bf16x2, 0x4000_3f80, 1), 2.0);
    }
}
