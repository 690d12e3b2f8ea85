//! Floating-point formats and exact rounding (PTX 5.2.5, 9.7.3 - 9.7.4, 9.7.9.21).
//!
//! An operation is computed exactly as a pair `hi + lo` of f64 values ([`Exact`]: error-free
//! transformations: TwoSum, TwoProduct through `fma`, the remainders of division and square
//! root), then rounded once into the destination format ([`Fmt`]) with the instruction's rounding
//! mode ([`Round`]), flush-to-zero and saturation. `hi` is the f64 nearest the exact value and
//! `lo` carries what remains with its exact sign, which is all directed rounding and the
//! round-to-nearest tie break need; one rounding step, so no double-rounding error even for f32
//! results of f64-computed sums.
//!
//! f16 and bf16 values go through the `half` crate (decoding, and round-to-nearest-even encoding
//! when the value is exact in f64); the directed modes and the fp8 formats (e4m3, e5m2: PTX 5.2.5.1
//! alternate floating-point data formats) share one rounding routine over the format's exponent
//! and mantissa widths.
//!
//! NaN results are the canonical NaN of the format (f32 `0x7fffffff`, f16/bf16 `0x7fff`, PTX
//! 9.7.3 "NaN results are canonical"); f64 NaNs propagate as the host computes them.

/// A floating-point storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
    /// TensorFloat-32: an f32 container with 10 mantissa bits (low 13 bits zero).
    Tf32,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// fp8 e4m3 (bias 7, no infinity, `S.1111.111` is NaN, max 448).
    E4m3,
    /// fp8 e5m2 (bias 15, IEEE-like infinities and NaNs, max 57344).
    E5m2,
}

/// A rounding mode (PTX 9.7.3 "Rounding modifiers").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// To nearest, ties to even (`.rn`).
    Rn,
    /// To nearest, ties away from zero (`.rna`, tf32).
    Rna,
    /// Toward zero (`.rz`).
    Rz,
    /// Toward negative infinity (`.rm`).
    Rm,
    /// Toward positive infinity (`.rp`).
    Rp,
}

/// Layout of a format: exponent bits, mantissa bits, whether it has infinities, the bit width.
struct Layout {
    ebits: u32,
    mbits: u32,
    has_inf: bool,
    width: u32,
}

impl Fmt {
    fn layout(self) -> Layout {
        match self {
            Fmt::F16 => Layout { ebits: 5, mbits: 10, has_inf: true, width: 16 },
            Fmt::Bf16 => Layout { ebits: 8, mbits: 7, has_inf: true, width: 16 },
            Fmt::Tf32 => Layout { ebits: 8, mbits: 10, has_inf: true, width: 19 },
            Fmt::F32 => Layout { ebits: 8, mbits: 23, has_inf: true, width: 32 },
            Fmt::F64 => Layout { ebits: 11, mbits: 52, has_inf: true, width: 64 },
            Fmt::E4m3 => Layout { ebits: 4, mbits: 3, has_inf: false, width: 8 },
            Fmt::E5m2 => Layout { ebits: 5, mbits: 2, has_inf: true, width: 8 },
        }
    }
    /// Width of the storage in bits (tf32 is stored in 32).
    pub fn bits(self) -> u32 {
        match self {
            Fmt::Tf32 => 32,
            f => f.layout().width,
        }
    }
    /// The canonical NaN of the format (f64: the quiet NaN; f64 results propagate the host's).
    pub fn nan(self) -> u64 {
        match self {
            Fmt::F16 | Fmt::Bf16 => 0x7fff,
            Fmt::Tf32 | Fmt::F32 => 0x7fff_ffff,
            Fmt::F64 => 0x7ff8_0000_0000_0000,
            Fmt::E4m3 | Fmt::E5m2 => 0x7f,
        }
    }
    fn bias(self) -> i32 {
        (1 << (self.layout().ebits - 1)) - 1
    }
    /// Exponent of the smallest normal value.
    fn emin(self) -> i32 {
        1 - self.bias()
    }
    /// The largest finite value.
    pub fn max(self) -> f64 {
        let l = self.layout();
        let top = if l.has_inf { (1 << l.ebits) - 2 } else { (1 << l.ebits) - 1 };
        // e4m3: the top exponent's all-ones mantissa is NaN, so one mantissa step less.
        let mant = if l.has_inf { (1u64 << l.mbits) - 1 } else { (1u64 << l.mbits) - 2 };
        (1.0 + mant as f64 / (1u64 << l.mbits) as f64) * 2f64.powi(top - self.bias())
    }
    /// The smallest positive normal value.
    pub fn min_normal(self) -> f64 {
        2f64.powi(self.emin())
    }
}

/// Decodes `bits` of format `f` into an f64 (exact: every format here fits in f64).
pub fn decode(f: Fmt, bits: u64) -> f64 {
    match f {
        Fmt::F16 => half::f16::from_bits(bits as u16).to_f64(),
        Fmt::Bf16 => half::bf16::from_bits(bits as u16).to_f64(),
        Fmt::F32 => f32::from_bits(bits as u32) as f64,
        // tf32 operands are f32 registers whose low 13 mantissa bits the tensor core ignores.
        Fmt::Tf32 => f32::from_bits(bits as u32 & 0xffff_e000) as f64,
        Fmt::F64 => f64::from_bits(bits),
        Fmt::E4m3 | Fmt::E5m2 => decode_mini(f, bits),
    }
}

fn decode_mini(f: Fmt, bits: u64) -> f64 {
    let l = f.layout();
    let sign = if bits >> (l.width - 1) & 1 == 1 { -1.0 } else { 1.0 };
    let e = ((bits >> l.mbits) & ((1 << l.ebits) - 1)) as i32;
    let m = bits & ((1 << l.mbits) - 1);
    let top = (1 << l.ebits) - 1;
    if l.has_inf && e == top {
        return if m == 0 { sign * f64::INFINITY } else { f64::NAN };
    }
    if !l.has_inf && e == top && m == (1 << l.mbits) - 1 {
        return f64::NAN;
    }
    let frac = m as f64 / (1u64 << l.mbits) as f64;
    if e == 0 {
        sign * frac * 2f64.powi(f.emin())
    } else {
        sign * (1.0 + frac) * 2f64.powi(e - f.bias())
    }
}

/// An exact result `hi + lo`: `hi` is the f64 nearest it, `lo` the rest (its sign exact).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exact {
    /// The nearest f64.
    pub hi: f64,
    /// The remainder.
    pub lo: f64,
    /// `hi` overflowed to infinity from finite operands (directed modes then give the maximum).
    pub overflow: bool,
}

impl Exact {
    /// An f64 that is exact.
    pub fn of(x: f64) -> Exact {
        Exact { hi: x, lo: 0.0, overflow: false }
    }
    fn with(hi: f64, lo: f64, finite_in: bool) -> Exact {
        let overflow = hi.is_infinite() && finite_in;
        let lo = if hi.is_finite() && lo.is_finite() { lo } else { 0.0 };
        Exact { hi, lo, overflow }
    }
    /// a + b (TwoSum).
    pub fn add(a: f64, b: f64) -> Exact {
        let s = a + b;
        let bb = s - a;
        let e = (a - (s - bb)) + (b - bb);
        Exact::with(s, e, a.is_finite() && b.is_finite())
    }
    /// a * b (TwoProduct through fma).
    pub fn mul(a: f64, b: f64) -> Exact {
        let p = a * b;
        Exact::with(p, a.mul_add(b, -p), a.is_finite() && b.is_finite())
    }
    /// a * b + c. Exact when a * b fits in f64 (operands of at most 26 significant bits: f32 and
    /// narrower); for f64 operands the remainder is the fma error estimate of Boldo and Muller
    /// ("Exact and approximated error of the FMA", 2011), whose sign is exact.
    pub fn fma(a: f64, b: f64, c: f64) -> Exact {
        let finite = a.is_finite() && b.is_finite() && c.is_finite();
        let r1 = a.mul_add(b, c);
        let p = Exact::mul(a, b);
        let (u1, u2) = (p.hi, p.lo);
        let s = Exact::add(c, u2);
        let (a1, z) = (s.hi, s.lo);
        let t = Exact::add(u1, a1);
        let g = (t.hi - r1) + t.lo;
        Exact::with(r1, g + z, finite)
    }
    /// a / b (remainder through fma).
    pub fn div(a: f64, b: f64) -> Exact {
        let q = a / b;
        let r = (-q).mul_add(b, a);
        Exact::with(q, r / b, a.is_finite() && b != 0.0)
    }
    /// sqrt(a) (residual through fma).
    pub fn sqrt(a: f64) -> Exact {
        let s = a.sqrt();
        if s == 0.0 || !s.is_finite() {
            return Exact::of(s);
        }
        let r = (-s).mul_add(s, a);
        Exact::with(s, r / (2.0 * s), true)
    }
}

/// Rounding and result modifiers of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    /// The rounding mode.
    pub round: Round,
    /// `.ftz`: subnormal results become zero (inputs are flushed by the caller, [`flush`]).
    pub ftz: bool,
    /// `.sat`: clamp to [0, 1], NaN to +0 (PTX 9.7.3).
    pub sat: bool,
    /// `.satfinite`: out-of-range values (infinities included) to the largest finite value of
    /// their sign, NaN stays NaN (PTX 9.7.9.21).
    pub satfinite: bool,
    /// `.relu`: negative results to +0, NaN to the canonical NaN (PTX 9.7.4.4).
    pub relu: bool,
}

impl Mode {
    /// Round to nearest even, nothing else.
    pub const RN: Mode = Mode { round: Round::Rn, ftz: false, sat: false, satfinite: false, relu: false };
    /// A mode with only a rounding.
    pub fn round(r: Round) -> Mode {
        Mode { round: r, ..Mode::RN }
    }
}

/// `.ftz` on an input: a subnormal of format `f` becomes a zero of its sign.
pub fn flush(f: Fmt, x: f64) -> f64 {
    if x != 0.0 && x.abs() < f.min_normal() {
        0.0f64.copysign(x)
    } else {
        x
    }
}

/// Rounds `x` into format `f` under `m`; returns the bits.
pub fn encode(f: Fmt, x: Exact, m: Mode) -> u64 {
    let mut x = x;
    if m.sat {
        // Clamp the exact value to [0, 1]; NaN becomes +0.
        if x.hi.is_nan() || x.hi < 0.0 || (x.hi == 0.0 && (x.lo < 0.0 || x.hi.is_sign_negative())) {
            x = Exact::of(0.0);
        } else if x.hi > 1.0 || (x.hi == 1.0 && x.lo > 0.0) {
            x = Exact::of(1.0);
        }
    }
    if x.hi.is_nan() {
        // f64 NaNs propagate as the host computes them (module doc).
        return if f == Fmt::F64 { x.hi.to_bits() } else { f.nan() };
    }
    if m.relu && (x.hi < 0.0 || (x.hi == 0.0 && x.lo < 0.0)) {
        x = Exact::of(0.0);
    }
    if f == Fmt::F64 {
        return encode_f64(x, m);
    }
    // Round to nearest of an f32 value: the half crate's single rounding (its `from_f64` goes
    // through f32 and rounds twice, so wider values take the generic path).
    let as_f32 = x.hi as f32;
    if x.lo == 0.0 && as_f32 as f64 == x.hi && m.round == Round::Rn && !m.satfinite && !m.ftz {
        match f {
            Fmt::F16 => return half::f16::from_f32(as_f32).to_bits() as u64,
            Fmt::Bf16 => return half::bf16::from_f32(as_f32).to_bits() as u64,
            _ => {}
        }
    }
    round_mini(f, x, m)
}

fn encode_f64(x: Exact, m: Mode) -> u64 {
    let mut v = x.hi;
    let neg = v.is_sign_negative();
    if x.overflow {
        let keep_max = match m.round {
            Round::Rz => true,
            Round::Rm => !neg,
            Round::Rp => neg,
            _ => false,
        } || m.satfinite;
        if keep_max {
            v = f64::MAX.copysign(v);
        }
    } else if x.lo != 0.0 {
        // hi is the nearest; step one ulp when the mode rounds the other way.
        let up = match m.round {
            Round::Rp => x.lo > 0.0,
            Round::Rm => false,
            Round::Rz => x.lo > 0.0 && neg,
            _ => false,
        };
        let dn = match m.round {
            Round::Rm => x.lo < 0.0,
            Round::Rz => x.lo < 0.0 && !neg,
            _ => false,
        };
        if up {
            v = v.next_up();
        } else if dn {
            v = v.next_down();
        }
    }
    if m.ftz && v != 0.0 && v.abs() < f64::MIN_POSITIVE {
        v = 0.0f64.copysign(v);
    }
    v.to_bits()
}

/// Rounds into a binary format of `ebits`/`mbits` (everything but f64): scale the magnitude so the
/// result's quantum is 1, take the integer part, and decide the last step from the fraction and
/// the sign of the remainder.
fn round_mini(f: Fmt, x: Exact, m: Mode) -> u64 {
    let l = f.layout();
    let neg = if x.hi == 0.0 && x.lo != 0.0 { x.lo < 0.0 } else { x.hi.is_sign_negative() };
    let ax = x.hi.abs();
    let al = if x.hi < 0.0 { -x.lo } else { x.lo };
    // Rounding toward zero magnitude ("down") or away from it ("up") for this sign.
    let (toward_zero, away) = match m.round {
        Round::Rz => (true, false),
        Round::Rm => (!neg, neg),
        Round::Rp => (neg, !neg),
        Round::Rn | Round::Rna => (false, false),
    };
    let mag = if ax.is_infinite() {
        if (x.overflow && toward_zero) || m.satfinite {
            f.max()
        } else {
            f64::INFINITY
        }
    } else if ax == 0.0 && al == 0.0 {
        0.0
    } else {
        let e = if ax == 0.0 { f.emin() } else { ((ax.to_bits() >> 52) & 0x7ff) as i32 - 1023 };
        let qexp = e.max(f.emin()) - l.mbits as i32;
        let q = 2f64.powi(qexp);
        let scaled = ax / q;
        let n = scaled.floor();
        let frac = scaled - n;
        let rem = al / q;
        let exact_on_n = frac == 0.0 && rem == 0.0;
        let below_n = frac == 0.0 && rem < 0.0;
        let k = if exact_on_n {
            n
        } else if below_n {
            if toward_zero { n - 1.0 } else { n }
        } else if toward_zero {
            n
        } else if away {
            n + 1.0
        } else if frac > 0.5 || (frac == 0.5 && rem > 0.0) {
            n + 1.0
        } else if frac < 0.5 || rem < 0.0 {
            n
        } else if m.round == Round::Rna {
            n + 1.0
        } else if n % 2.0 == 1.0 {
            n + 1.0
        } else {
            n
        };
        let r = k * q;
        if r > f.max() {
            // Overflow: infinity under round-to-nearest and away-from-zero, else the maximum;
            // satfinite and formats without infinity saturate.
            if toward_zero || m.satfinite || !l.has_inf {
                f.max()
            } else {
                f64::INFINITY
            }
        } else if m.ftz && r != 0.0 && r < f.min_normal() {
            0.0
        } else {
            r
        }
    };
    if mag.is_infinite() && !l.has_inf {
        return f.nan();
    }
    pack(f, neg, mag)
}

/// The bits of a magnitude `mag` (0, a value of the format, or infinity) with a sign.
fn pack(f: Fmt, neg: bool, mag: f64) -> u64 {
    let l = f.layout();
    let sign = (neg as u64) << (l.width - 1);
    let body = if mag == 0.0 {
        0
    } else if mag.is_infinite() {
        (((1u64 << l.ebits) - 1) << l.mbits) as u64
    } else {
        let e = ((mag.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        if e < f.emin() {
            (mag / 2f64.powi(f.emin() - l.mbits as i32)) as u64
        } else {
            let mant = (mag / 2f64.powi(e - l.mbits as i32)) as u64 - (1u64 << l.mbits);
            (((e + f.bias()) as u64) << l.mbits) | mant
        }
    };
    let v = sign | body;
    if f == Fmt::Tf32 {
        v << 13
    } else {
        v
    }
}

/// The f64 value of format `f`'s bits read from a register's low bits (lane `k` of a packed
/// pair: bits `16k..16k+16` of an f16x2/bf16x2 register).
pub fn lane_of(f: Fmt, reg: u64, k: u32) -> u64 {
    let w = f.bits();
    if w >= 64 {
        return reg;
    }
    (reg >> (w * k)) & ((1u64 << w) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rn(f: Fmt, x: f64) -> u64 {
        encode(f, Exact::of(x), Mode::RN)
    }

    #[test]
    fn f16_round_to_nearest_avoids_double_rounding() {
        // -0.5827636492758345 is 1193.49995 quanta of 2^-11: f16 0xb8a9. Rounded to f32 first it
        // becomes the tie 1193.5 and then 0xb8aa (half's from_f64 does that).
        assert_eq!(rn(Fmt::F16, -0.5827636492758345), 0xb8a9);
        // 1 + 2^-11 is the midpoint of 1.0 and 1 + 2^-10; a hair above it must round up. Through f32
        // the hair is lost and ties-to-even gives 1.0.
        let x = Exact { hi: 1.0 + 2f64.powi(-11), lo: 2f64.powi(-60), overflow: false };
        assert_eq!(encode(Fmt::F16, x, Mode::RN), 0x3c01);
        let x = Exact { hi: 1.0 + 2f64.powi(-11), lo: -2f64.powi(-60), overflow: false };
        assert_eq!(encode(Fmt::F16, x, Mode::RN), 0x3c00);
        // The exact tie goes to even.
        assert_eq!(rn(Fmt::F16, 1.0 + 2f64.powi(-11)), 0x3c00);
        assert_eq!(rn(Fmt::F16, 1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
    }

    #[test]
    fn generic_rounding_agrees_with_half_and_the_host() {
        // Round to nearest from the generic routine against half and f32 casts, over many values.
        let mut s = 0x1234_5678_9abc_def0u64;
        for _ in 0..20000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let x = f64::from_bits(s) ;
            let x = if x.is_finite() { x % 1e6 } else { 1.5 };
            let mode = Mode::RN;
            let x32 = x as f32;
            assert_eq!(round_mini(Fmt::F16, Exact::of(x32 as f64), mode), half::f16::from_f32(x32).to_bits() as u64, "{x}");
            assert_eq!(round_mini(Fmt::Bf16, Exact::of(x32 as f64), mode), half::bf16::from_f32(x32).to_bits() as u64, "{x}");
            assert_eq!(round_mini(Fmt::F32, Exact::of(x), mode), (x as f32).to_bits() as u64, "{x}");
            let tiny = x * 1e-40;
            assert_eq!(round_mini(Fmt::F32, Exact::of(tiny), mode), (tiny as f32).to_bits() as u64, "{tiny}");
        }
    }

    /// Random f32 bit patterns, NaNs and infinities included.
    fn f32s(seed: u64, n: usize) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                f32::from_bits(s as u32)
            })
            .collect()
    }

    #[test]
    fn f32_round_to_nearest_agrees_with_the_host() {
        // The host's f32 operations are IEEE round-to-nearest-even: every exact construction,
        // rounded once, must give the same bits (NaNs: canonical).
        let a = f32s(0x9e37_79b9_7f4a_7c15, 4000);
        let b = f32s(0x2545_f491_4f6c_dd1d, 4000);
        let c = f32s(0x1405_7b7e_f767_814f, 4000);
        let rn = |x: Exact| encode(Fmt::F32, x, Mode::RN) as u32;
        let host = |x: f32| if x.is_nan() { 0x7fff_ffff } else { x.to_bits() };
        for k in 0..a.len() {
            let (x, y, z) = (a[k], b[k], c[k]);
            let (xd, yd, zd) = (x as f64, y as f64, z as f64);
            assert_eq!(rn(Exact::add(xd, yd)), host(x + y), "{x:e} + {y:e}");
            assert_eq!(rn(Exact::mul(xd, yd)), host(x * y), "{x:e} * {y:e}");
            assert_eq!(rn(Exact::div(xd, yd)), host(x / y), "{x:e} / {y:e}");
            assert_eq!(rn(Exact::fma(xd, yd, zd)), host(x.mul_add(y, z)), "fma({x:e}, {y:e}, {z:e})");
            assert_eq!(rn(Exact::sqrt(xd)), host(x.sqrt()), "sqrt({x:e})");
        }
    }

    #[test]
    fn directed_results_bracket_the_exact_value() {
        // .rz/.rm/.rp of a quotient: .rm <= .rn-neighbourhood <= .rp, one ulp apart when inexact,
        // .rz the one of them toward zero.
        let a = f32s(0x1234_5678, 3000);
        let b = f32s(0x8765_4321, 3000);
        for k in 0..a.len() {
            let (x, y) = (a[k] as f64, b[k] as f64);
            let q = Exact::div(x, y);
            if !q.hi.is_finite() || q.hi == 0.0 {
                continue;
            }
            let r = |m| f32::from_bits(encode(Fmt::F32, q, Mode::round(m)) as u32);
            let (dn, up, z, n) = (r(Round::Rm), r(Round::Rp), r(Round::Rz), r(Round::Rn));
            if dn == up {
                assert_eq!(n, dn);
                continue;
            }
            assert_eq!(dn.next_up(), up, "{x:e} / {y:e}");
            assert!(n == dn || n == up);
            assert_eq!(z, if q.hi > 0.0 { dn } else { up });
        }
    }

    #[test]
    fn directed_modes() {
        let third = Exact::div(1.0, 3.0);
        let f = |r| f32::from_bits(encode(Fmt::F32, third, Mode::round(r)) as u32);
        assert!(f(Round::Rz) < f(Round::Rp));
        assert_eq!(f(Round::Rz), f(Round::Rm));
        assert_eq!(f(Round::Rp), f(Round::Rz).next_up());
        assert_eq!(f(Round::Rn), 1.0f32 / 3.0);
        // 1e30 + 1e-30 in f32: the tiny addend is lost in f64 but still rounds up under .rp.
        let s = Exact::add(1e30f32 as f64, 1e-30f32 as f64);
        assert_eq!(f32::from_bits(encode(Fmt::F32, s, Mode::round(Round::Rp)) as u32), (1e30f32).next_up());
        assert_eq!(f32::from_bits(encode(Fmt::F32, s, Mode::round(Round::Rz)) as u32), 1e30f32);
        // Negative values: .rm away from zero, .rz toward it.
        let m = Exact::div(-1.0, 3.0);
        let g = |r| f32::from_bits(encode(Fmt::F32, m, Mode::round(r)) as u32);
        assert_eq!(g(Round::Rm), -f(Round::Rp));
        assert_eq!(g(Round::Rz), -f(Round::Rz));
        // f64 directed: 1/3 rounds down under .rz and .rm, up under .rp.
        let d = |r| f64::from_bits(encode(Fmt::F64, third, Mode::round(r)));
        assert_eq!(d(Round::Rn), 1.0 / 3.0);
        assert_eq!(d(Round::Rz), d(Round::Rp).next_down());
        // Overflow: .rz keeps the maximum, .rn goes to infinity.
        let big = Exact::mul(f32::MAX as f64, 2.0);
        assert_eq!(encode(Fmt::F32, big, Mode::round(Round::Rz)), f32::MAX.to_bits() as u64);
        assert_eq!(encode(Fmt::F32, big, Mode::RN), f32::INFINITY.to_bits() as u64);
        let big = Exact::mul(f64::MAX, 2.0);
        assert_eq!(encode(Fmt::F64, big, Mode::round(Round::Rz)), f64::MAX.to_bits());
    }

    #[test]
    fn fp8_formats() {
        // e4m3: max 448 (0x7e), NaN 0x7f, no infinity; 1.0 = 0x38; smallest subnormal 2^-9 = 0x01.
        assert_eq!(Fmt::E4m3.max(), 448.0);
        assert_eq!(decode(Fmt::E4m3, 0x7e), 448.0);
        assert!(decode(Fmt::E4m3, 0x7f).is_nan());
        assert_eq!(decode(Fmt::E4m3, 0x38), 1.0);
        assert_eq!(decode(Fmt::E4m3, 0x01), 2f64.powi(-9));
        assert_eq!(decode(Fmt::E4m3, 0xb8), -1.0);
        let sf = Mode { satfinite: true, ..Mode::RN };
        assert_eq!(encode(Fmt::E4m3, Exact::of(1000.0), sf), 0x7e);
        assert_eq!(encode(Fmt::E4m3, Exact::of(-1e9), sf), 0xfe);
        assert_eq!(encode(Fmt::E4m3, Exact::of(f64::INFINITY), sf), 0x7e);
        assert_eq!(encode(Fmt::E4m3, Exact::of(f64::NAN), sf), 0x7f);
        // 1.0625 is the midpoint of 1.0 (0x38) and 1.125 (0x39): ties to even.
        assert_eq!(encode(Fmt::E4m3, Exact::of(1.0625), sf), 0x38);
        assert_eq!(encode(Fmt::E4m3, Exact::of(1.1875), sf), 0x3a);
        // e5m2: max 57344 (0x7b), infinity 0x7c; 1.0 = 0x3c.
        assert_eq!(Fmt::E5m2.max(), 57344.0);
        assert_eq!(decode(Fmt::E5m2, 0x7b), 57344.0);
        assert_eq!(decode(Fmt::E5m2, 0x7c), f64::INFINITY);
        assert_eq!(decode(Fmt::E5m2, 0x3c), 1.0);
        assert_eq!(encode(Fmt::E5m2, Exact::of(1e6), sf), 0x7b);
        assert_eq!(encode(Fmt::E5m2, Exact::of(1e6), Mode::RN), 0x7c);
        // Every e4m3 / e5m2 value round-trips.
        for b in 0..=255u64 {
            for f in [Fmt::E4m3, Fmt::E5m2] {
                let v = decode(f, b);
                if v.is_finite() {
                    assert_eq!(encode(f, Exact::of(v), sf), b, "{f:?} {b:#x}");
                }
            }
        }
    }

    #[test]
    fn tf32_rounds_to_ten_mantissa_bits() {
        // 1 + 2^-11 (a tie) goes away from zero under .rna: 1 + 2^-10.
        let x = Exact::of(1.0 + 2f64.powi(-11));
        let r = encode(Fmt::Tf32, x, Mode::round(Round::Rna));
        assert_eq!(f32::from_bits(r as u32), 1.0 + 2f32.powi(-10));
        assert_eq!(r & 0x1fff, 0);
        assert_eq!(decode(Fmt::Tf32, (1.0f32 + 2f32.powi(-20)).to_bits() as u64), 1.0);
    }

    #[test]
    fn sat_ftz_relu() {
        let sat = Mode { sat: true, ..Mode::RN };
        assert_eq!(encode(Fmt::F32, Exact::of(1.5), sat), 1.0f32.to_bits() as u64);
        assert_eq!(encode(Fmt::F32, Exact::of(-0.5), sat), 0);
        assert_eq!(encode(Fmt::F32, Exact::of(f64::NAN), Mode::RN), 0x7fff_ffff);
        let ftz = Mode { ftz: true, ..Mode::RN };
        assert_eq!(encode(Fmt::F32, Exact::of(1e-40), ftz), 0);
        assert_eq!(encode(Fmt::F32, Exact::of(-1e-40), ftz), 0x8000_0000);
        assert_eq!(flush(Fmt::F32, 1e-40), 0.0);
        let relu = Mode { relu: true, ..Mode::RN };
        assert_eq!(encode(Fmt::F16, Exact::of(-3.0), relu), 0);
        assert_eq!(encode(Fmt::F16, Exact::of(3.0), relu), 0x4200);
    }
}
