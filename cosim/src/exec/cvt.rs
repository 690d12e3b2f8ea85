//! `cvt` (PTX 9.7.9.21): every pair of integer and float types, with the rounding, `.ftz`, `.sat`,
//! `.satfinite` and `.relu` modifiers, and the packed forms: two f32 sources into an
//! `.f16x2`/`.bf16x2` or an fp8 pair (`.e4m3x2`/`.e5m2x2`; the first source lands in the high
//! half), and the element-wise conversions between packed types (`.f16x2.e4m3x2`,
//! `.e5m2x2.f16x2`).

use super::float::{self, fmt_of};
use super::fp::{self, Exact, Fmt, Round};
use super::{bits, lanes, sext, trunc, unsupported, Cx, Exec, Flow, R};
use hopsync_firmware::ir::{Instr, Mod};
use hopsync_firmware::ops::op;

impl Exec for op::Cvt {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let dt = cx.ty(i);
        let st = i.ty2.unwrap_or(dt);
        if i.has(Mod::Rs) {
            return unsupported(cx, i, "stochastic rounding `.rs`");
        }
        let pair = i.operands.len() == 3;
        if pair && !matches!(dt, Mod::F16x2 | Mod::Bf16x2 | Mod::E4m3x2 | Mod::E5m2x2) {
            return unsupported(cx, i, "a two-source cvt to a type that is not a packed pair");
        }
        for l in lanes(cx.mask) {
            let v = if pair {
                // d = {cvt(a) high, cvt(b) low}.
                let (hi, lo) = (cx.src_as(i, 1, l, st), cx.src_as(i, 2, l, st));
                let (fmt, _) = fmt_of(dt).expect("packed float type");
                let w = fmt.bits();
                convert(i, st, dt_elem(dt), lo) | convert(i, st, dt_elem(dt), hi) << w
            } else {
                convert_packed(i, st, dt, cx.src_as(i, 1, l, st))
            };
            cx.dst(i, 0, l, v);
        }
        Ok(Flow::Next)
    }
}

/// The scalar type of one element of a packed float type.
fn dt_elem(t: Mod) -> Mod {
    match t {
        Mod::F16x2 => Mod::F16,
        Mod::Bf16x2 => Mod::Bf16,
        Mod::E4m3x2 => Mod::E4m3,
        Mod::E5m2x2 => Mod::E5m2,
        t => t,
    }
}

/// A single-source conversion; packed types convert element by element.
fn convert_packed(i: &Instr, st: Mod, dt: Mod, a: u64) -> u64 {
    match (fmt_of(st), fmt_of(dt)) {
        (Some((sf, 2)), Some((df, 2))) => {
            let (sw, dw) = (sf.bits(), df.bits());
            (0..2).map(|e| convert(i, dt_elem(st), dt_elem(dt), (a >> (sw * e)) & ((1 << sw) - 1)) << (dw * e)).fold(0, |x, y| x | y)
        }
        _ => convert(i, st, dt, a),
    }
}

/// Converts one value `a` (the source register) of type `st` to type `dt`.
pub fn convert(i: &Instr, st: Mod, dt: Mod, a: u64) -> u64 {
    let (sf, df) = (fmt_of(st).map(|f| f.0), fmt_of(dt).map(|f| f.0));
    let a = trunc(a, bits(st));
    match (sf, df) {
        (None, None) => int_to_int(st, dt, a, i.has(Mod::Sat)),
        (Some(sf), None) => float_to_int(i, sf, dt, a),
        (None, Some(df)) => {
            let sw = bits(st);
            let v: i128 = if st.is_signed() { sext(a, sw) as i128 } else { a as i128 };
            let hi = v as f64;
            let lo = (v - hi as i128) as f64;
            fp::encode(df, Exact { hi, lo, overflow: false }, float::mode(i))
        }
        (Some(sf), Some(df)) => {
            let mut x = fp::decode(sf, a);
            if i.has(Mod::Ftz) {
                x = fp::flush(sf, x);
            }
            // Same-size conversions with an integer rounding round to an integral value.
            if [Mod::Rni, Mod::Rzi, Mod::Rmi, Mod::Rpi].iter().any(|m| i.has(*m)) {
                x = round_int(float::rounding(i, Round::Rn), x);
            }
            fp::encode(df, Exact::of(x), float::mode(i))
        }
    }
}

fn round_int(r: Round, x: f64) -> f64 {
    match r {
        Round::Rz => x.trunc(),
        Round::Rm => x.floor(),
        Round::Rp => x.ceil(),
        Round::Rna => x.round(),
        Round::Rn => x.round_ties_even(),
    }
}

/// Float to integer: rounded as `.rni/.rzi/.rmi/.rpi` say (`.rzi` when absent), saturating to
/// the destination range; NaN converts to 0 (PTX 9.7.9.21 "for float-to-integer conversions, the
/// result is clamped to the destination range by default").
fn float_to_int(i: &Instr, sf: Fmt, dt: Mod, a: u64) -> u64 {
    let mut x = fp::decode(sf, a);
    if i.has(Mod::Ftz) {
        x = fp::flush(sf, x);
    }
    let r = round_int(float::rounding(i, Round::Rz), x);
    let dw = bits(dt);
    if r.is_nan() {
        0
    } else if dt.is_signed() {
        let lo = -(2f64.powi(dw as i32 - 1));
        let hi = 2f64.powi(dw as i32 - 1) - 1.0;
        trunc(r.clamp(lo, hi) as i64 as u64, dw)
    } else {
        let hi = 2f64.powi(dw as i32) - 1.0;
        r.clamp(0.0, hi) as u64
    }
}

/// Integer to integer: sign- or zero-extension by the source type, truncation to the
/// destination, or with `.sat` clamping to its range.
fn int_to_int(st: Mod, dt: Mod, a: u64, sat: bool) -> u64 {
    let (sw, dw) = (bits(st), bits(dt));
    let wide: i128 = if st.is_signed() { sext(a, sw) as i128 } else { a as i128 };
    if sat {
        let (lo, hi): (i128, i128) = if dt.is_signed() { (-(1i128 << (dw - 1)), (1i128 << (dw - 1)) - 1) } else { (0, (1i128 << dw) - 1) };
        trunc(wide.clamp(lo, hi) as u64, dw)
    } else {
        trunc(wide as u64, dw)
    }
}
