//! printf formatting for `vprintf` (CUDA C++ Programming Guide, Formatted Output): the C
//! conversions `d i u o x X c s p f F e E g G a A %` with flags `- + space # 0`, width and
//! precision (numbers or `*`) and length modifiers `hh h l ll j z t L`. Arguments come from the
//! packed argument buffer: integers and `*` are 4 bytes (8 with `l`, `ll`, `j`, `z`, `t`),
//! floating point 8 (a `float` is promoted to `double`), pointers and strings 8.

/// One conversion specification.
#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    prec: Option<usize>,
    long: bool,
    conv: u8,
}

/// Formats `fmt`; `next(size)` fetches the next argument of `size` bytes, `string_at` reads the
/// string of a `%s`. Returns the text and the number of arguments consumed.
pub fn format(fmt: &str, next: &mut dyn FnMut(usize) -> u64, string_at: &mut dyn FnMut(u64) -> Option<String>) -> (String, usize) {
    let b = fmt.as_bytes();
    let mut out = String::new();
    let mut args = 0;
    let mut i = 0;
    let mut lit = Vec::new();
    while i < b.len() {
        if b[i] != b'%' {
            lit.push(b[i]);
            i += 1;
            continue;
        }
        out.push_str(&String::from_utf8_lossy(&lit));
        lit.clear();
        let start = i;
        i += 1;
        let mut s = Spec::default();
        while i < b.len() {
            match b[i] {
                b'-' => s.left = true,
                b'+' => s.plus = true,
                b' ' => s.space = true,
                b'#' => s.alt = true,
                b'0' => s.zero = true,
                _ => break,
            }
            i += 1;
        }
        if i < b.len() && b[i] == b'*' {
            let w = next(4) as u32 as i32;
            args += 1;
            if w < 0 {
                s.left = true;
            }
            s.width = w.unsigned_abs() as usize;
            i += 1;
        } else {
            while i < b.len() && b[i].is_ascii_digit() {
                s.width = s.width * 10 + (b[i] - b'0') as usize;
                i += 1;
            }
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let mut p = 0usize;
            if i < b.len() && b[i] == b'*' {
                let v = next(4) as u32 as i32;
                args += 1;
                s.prec = (v >= 0).then_some(v as usize);
                i += 1;
            } else {
                while i < b.len() && b[i].is_ascii_digit() {
                    p = p * 10 + (b[i] - b'0') as usize;
                    i += 1;
                }
                s.prec = Some(p);
            }
        }
        while i < b.len() && matches!(b[i], b'h' | b'l' | b'j' | b'z' | b't' | b'L' | b'q') {
            if matches!(b[i], b'l' | b'j' | b'z' | b't' | b'q') {
                s.long = true;
            }
            i += 1;
        }
        let Some(&c) = b.get(i) else {
            out.push_str(&fmt[start..]);
            break;
        };
        i += 1;
        s.conv = c;
        let ibytes = if s.long { 8 } else { 4 };
        let text = match c {
            b'%' => "%".to_string(),
            b'd' | b'i' => {
                args += 1;
                let v = next(ibytes);
                let v = if s.long { v as i64 } else { v as u32 as i32 as i64 };
                int(&s, v < 0, v.unsigned_abs(), 10, "")
            }
            b'u' | b'o' | b'x' | b'X' => {
                args += 1;
                let v = next(ibytes);
                let v = if s.long { v } else { v as u32 as u64 };
                let (base, prefix) = match c {
                    b'u' => (10, ""),
                    b'o' => (8, ""),
                    b'x' => (16, if s.alt && v != 0 { "0x" } else { "" }),
                    _ => (16, if s.alt && v != 0 { "0X" } else { "" }),
                };
                let mut t = int(&s, false, v, base, prefix);
                if c == b'X' {
                    t = t.to_uppercase();
                }
                t
            }
            b'c' => {
                args += 1;
                let v = next(4) as u8;
                pad(&s, String::from_utf8_lossy(&[v]).into_owned(), false)
            }
            b's' => {
                args += 1;
                let a = next(8);
                let mut t = string_at(a).unwrap_or_else(|| "(null)".to_string());
                if let Some(p) = s.prec {
                    t = t.chars().take(p).collect();
                }
                pad(&s, t, false)
            }
            b'p' => {
                args += 1;
                let a = next(8);
                pad(&s, if a == 0 { "(nil)".to_string() } else { format!("0x{a:x}") }, false)
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                args += 1;
                float(&s, f64::from_bits(next(8)))
            }
            _ => fmt[start..i].to_string(),
        };
        out.push_str(&text);
    }
    out.push_str(&String::from_utf8_lossy(&lit));
    (out, args)
}

/// Pads `body` (its sign or prefix already in it) to the width; `zero_ok`: the `0` flag pads
/// with zeros after the sign/prefix.
fn pad(s: &Spec, body: String, zero_ok: bool) -> String {
    let n = body.chars().count();
    if n >= s.width {
        return body;
    }
    let fill = s.width - n;
    if s.left {
        return body + &" ".repeat(fill);
    }
    if zero_ok && s.zero {
        // after a sign and a 0x prefix
        let cut = body.find(|c: char| !matches!(c, '+' | '-' | ' ')).unwrap_or(0);
        let cut = if body[cut..].starts_with("0x") || body[cut..].starts_with("0X") { cut + 2 } else { cut };
        return format!("{}{}{}", &body[..cut], "0".repeat(fill), &body[cut..]);
    }
    " ".repeat(fill) + &body
}

fn sign(s: &Spec, neg: bool) -> &'static str {
    if neg {
        "-"
    } else if s.plus {
        "+"
    } else if s.space {
        " "
    } else {
        ""
    }
}

/// An integer conversion: precision is the minimum digit count (`.0` of zero prints nothing).
fn int(s: &Spec, neg: bool, v: u64, base: u32, prefix: &str) -> String {
    let mut digits = match base {
        8 => format!("{v:o}"),
        16 => format!("{v:x}"),
        _ => v.to_string(),
    };
    if let Some(p) = s.prec {
        if p == 0 && v == 0 {
            digits.clear();
        }
        while digits.len() < p {
            digits.insert(0, '0');
        }
    }
    if base == 8 && s.alt && !digits.starts_with('0') {
        digits.insert(0, '0');
    }
    let sgn = if matches!(s.conv, b'd' | b'i') { sign(s, neg) } else { "" };
    pad(s, format!("{sgn}{prefix}{digits}"), s.prec.is_none())
}

/// `e`-style digits of |v| with `p` decimals: mantissa text and exponent.
fn exp_parts(v: f64, p: usize) -> (String, i32) {
    let t = format!("{:.*e}", p, v.abs());
    let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
    (m.to_string(), e.parse().unwrap_or(0))
}

fn exp_text(m: &str, e: i32, upper: bool) -> String {
    format!("{m}{}{}{:02}", if upper { 'E' } else { 'e' }, if e < 0 { '-' } else { '+' }, e.unsigned_abs())
}

/// Removes trailing zeros of a fraction (and a bare point), as `%g` does without `#`.
fn strip_zeros(t: &str) -> String {
    if !t.contains('.') {
        return t.to_string();
    }
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The floating-point conversions.
fn float(s: &Spec, v: f64) -> String {
    let upper = s.conv.is_ascii_uppercase();
    let neg = v.is_sign_negative();
    if !v.is_finite() {
        let t = if v.is_nan() { "nan" } else { "inf" };
        let t = if upper { t.to_uppercase() } else { t.to_string() };
        return pad(s, format!("{}{t}", sign(s, neg && !v.is_nan())), false);
    }
    let body = match s.conv.to_ascii_lowercase() {
        b'f' => {
            let mut t = format!("{:.*}", s.prec.unwrap_or(6), v.abs());
            if s.alt && !t.contains('.') {
                t.push('.');
            }
            t
        }
        b'e' => {
            let p = s.prec.unwrap_or(6);
            let (mut m, e) = exp_parts(v, p);
            if s.alt && p == 0 {
                m.push('.');
            }
            exp_text(&m, e, upper)
        }
        b'g' => {
            let p = match s.prec {
                Some(0) => 1,
                Some(p) => p,
                None => 6,
            };
            let (_, x) = exp_parts(v, p - 1);
            if v == 0.0 || (x >= -4 && (x as i64) < p as i64) {
                let t = format!("{:.*}", (p as i64 - 1 - x as i64).max(0) as usize, v.abs());
                if s.alt { t } else { strip_zeros(&t) }
            } else {
                let (m, e) = exp_parts(v, p - 1);
                let m = if s.alt { m } else { strip_zeros(&m) };
                exp_text(&m, e, upper)
            }
        }
        _ => hex_float(v.abs(), s.prec, upper),
    };
    pad(s, format!("{}{body}", sign(s, neg)), true)
}

/// `%a`: `0x1.hhhp+e` (subnormals `0x0.hhhp-1022`), shortest exact digits unless a precision
/// rounds them (to nearest, ties to even).
fn hex_float(v: f64, prec: Option<usize>, upper: bool) -> String {
    let bits = v.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let mut mant = bits & ((1u64 << 52) - 1);
    let (mut lead, e) = if exp_bits == 0 {
        if mant == 0 {
            (0u64, 0)
        } else {
            (0, -1022)
        }
    } else {
        (1, exp_bits - 1023)
    };
    let mut digits = 13usize;
    if let Some(p) = prec.filter(|p| *p < 13) {
        let drop = 4 * (13 - p) as u32;
        let rem = mant & ((1u64 << drop) - 1);
        let half = 1u64 << (drop - 1);
        mant >>= drop;
        if rem > half || rem == half && mant & 1 == 1 {
            mant += 1;
            if mant >> (4 * p) != 0 {
                mant &= (1u64 << (4 * p)) - 1;
                lead += 1;
            }
        }
        digits = p;
    }
    let mut frac = if digits == 0 { String::new() } else { format!("{:0width$x}", mant, width = digits) };
    if prec.is_none() {
        frac = frac.trim_end_matches('0').to_string();
    } else if let Some(p) = prec {
        while frac.len() < p {
            frac.push('0');
        }
    }
    let t = if frac.is_empty() { format!("0x{lead}p{}{}", if e < 0 { '-' } else { '+' }, e.abs()) } else { format!("0x{lead}.{frac}p{}{}", if e < 0 { '-' } else { '+' }, e.abs()) };
    if upper {
        t.to_uppercase()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Formats with the arguments given as 8-byte values in order.
    fn f(fmt: &str, args: &[u64]) -> String {
        let mut k = 0;
        let mut next = |_: usize| {
            k += 1;
            args.get(k - 1).copied().unwrap_or(0)
        };
        format(fmt, &mut next, &mut |a| (a == 1).then(|| "hello".to_string())).0
    }

    #[test]
    fn printf_hand_computed() {
        assert_eq!(f("[block %d] arrived with expected tx count = %llu\n", &[3, 16]), "[block 3] arrived with expected tx count = 16\n");
        assert_eq!(f("%5d|%-5d|%05d|%+d|% d", &[42, 42, 42, 42, 42]), "   42|42   |00042|+42| 42");
        assert_eq!(f("%d %u %x %X %o %#x %#o", &[(-7i32) as u32 as u64, 4294967295, 255, 255, 8, 255, 8]), "-7 4294967295 ff FF 10 0xff 010");
        assert_eq!(f("%.3d|%8.3d|%.0d", &[5, 5, 0]), "005|     005|");
        assert_eq!(f("%s|%10s|%-7s|%.2s|%s", &[1, 1, 1, 1, 0]), "hello|     hello|hello  |he|(null)");
        assert_eq!(f("%c%c", &[b'o' as u64, b'k' as u64]), "ok");
        assert_eq!(f("%p %p", &[0x7f00_0000_0010, 0]), "0x7f0000000010 (nil)");
        let d = |x: f64| x.to_bits();
        assert_eq!(f("%f %.2f %8.3f %-8.1f| %e %.0e %E", &[d(1.5), d(3.14159), d(-2.5), d(0.25), d(123456.0), d(5.0), d(0.00012)]), "1.500000 3.14   -2.500 0.2     | 1.234560e+05 5e+00 1.200000E-04");
        assert_eq!(f("%g %g %g %g %g %.3g %#g", &[d(100000.0), d(1000000.0), d(0.0001), d(0.00001), d(1.5), d(3.14159), d(1.0)]), "100000 1e+06 0.0001 1e-05 1.5 3.14 1.00000");
        assert_eq!(f("%a %a %.1a %A", &[d(1.0), d(0.5), d(1.96875), d(10.0)]), "0x1p+0 0x1p-1 0x2.0p+0 0X1.4P+3");
        assert_eq!(f("%f %f %e %5.1f%%", &[d(f64::INFINITY), d(f64::NAN), d(-0.0), d(99.95)]), "inf nan -0.000000e+00 100.0%");
        assert_eq!(f("%*d|%-*d|%.*f", &[6, 1, 3, 2, 2, d(1.005)]), "     1|2  |1.00");
    }

    #[test]
    fn printf_counts_arguments() {
        let mut next = |_: usize| 1u64;
        assert_eq!(format("a %d %s %% %f", &mut next, &mut |_| Some(String::new())).1, 3);
    }
}
