//! Bit-manipulation and byte-permute instructions (PTX 9.7.1 integer arithmetic, 9.7.8 logic
//! and shift, 9.7.9 data movement: prmt) and `isspacep` (PTX 9.7.9 "isspacep"). Each value function is pure and tested
//! against hand-computed results below; the bodies apply them lane by lane.

use super::{lanes, sext, trunc, Cx, Exec, Flow, R};
use crate::machine::{LOCAL_GENERIC_BASE, PARAM_GENERIC_BASE, SHARED_GENERIC_BASE, SMEM_CLUSTER_STRIDE};
use hopsync_firmware::ir::{Instr, Mod, Space};
use hopsync_firmware::ops::op;

/// `bfi` (PTX 9.7.1.20): `b` with the `len` low bits of `a` inserted at `pos` (bits past the
/// msb are dropped; `len` 0 or `pos` past the msb leaves `b`).
pub fn bfi(a: u64, b: u64, pos: u32, len: u32, w: u32) -> u64 {
    let mut f = b;
    for k in 0..len {
        let p = pos.saturating_add(k);
        if p >= w {
            break;
        }
        f = f & !(1 << p) | ((a >> k) & 1) << p;
    }
    trunc(f, w)
}

/// `prmt` (PTX 9.7.9 "prmt"): four bytes of `{b, a}` (bytes 0-3 from `a`, 4-7 from `b`) picked by the
/// selector `c`: four nibbles in the generic form (bit 3 replicates the picked byte's sign), or
/// one of the mode tables indexed by `c[1:0]`.
pub fn prmt(a: u32, b: u32, c: u32, mode: Option<Mod>) -> u32 {
    let src = (b as u64) << 32 | a as u64;
    let byte = |k: u32| (src >> (8 * k)) as u8;
    // Mode tables: for each c[1:0], the source byte of d.b0, d.b1, d.b2, d.b3.
    let table = |rows: [[u32; 4]; 4]| rows[(c & 3) as usize];
    let picks: [u32; 4] = match mode {
        None => {
            let mut d = 0u32;
            for k in 0..4 {
                let sel = (c >> (4 * k)) & 0xf;
                let v = byte(sel & 7);
                let v = if sel & 8 != 0 { if v & 0x80 != 0 { 0xff } else { 0 } } else { v };
                d |= (v as u32) << (8 * k);
            }
            return d;
        }
        Some(Mod::F4e) => table([[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]]),
        Some(Mod::B4e) => table([[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]]),
        Some(Mod::Rc8) => table([[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]]),
        Some(Mod::Ecl) => table([[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]]),
        Some(Mod::Ecr) => table([[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]]),
        Some(Mod::Rc16) => table([[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]]),
        Some(m) => unreachable!("prmt mode {m:?} is not in the opcode table"),
    };
    picks.iter().enumerate().fold(0u32, |d, (k, &s)| d | (byte(s) as u32) << (8 * k))
}

/// `lop3` (PTX 9.7.8.6): each result bit is bit `(a << 2) | (b << 1) | c` of `lut` (the LUT is
/// `F(0xf0, 0xcc, 0xaa)` for the logic function F).
pub fn lop3(a: u64, b: u64, c: u64, lut: u8) -> u64 {
    let mut d = 0;
    for k in 0..32 {
        let idx = ((a >> k) & 1) << 2 | ((b >> k) & 1) << 1 | ((c >> k) & 1);
        d |= ((lut as u64 >> idx) & 1) << k;
    }
    d
}

/// `fns` (PTX 9.7.1.17): the position of the `|offset|`-th set bit of `mask` counting from
/// bit `base` toward the msb (offset > 0) or the lsb (offset < 0); offset 0 is `base` itself if
/// set; 0xffffffff when there is none.
pub fn fns(mask: u32, base: u32, offset: i32) -> u32 {
    if offset == 0 {
        return if base < 32 && mask >> base & 1 == 1 { base } else { u32::MAX };
    }
    let inc: i64 = if offset > 0 { 1 } else { -1 };
    let mut count = offset.unsigned_abs() - 1;
    let mut pos = base as i64;
    while (0..32).contains(&pos) {
        if mask >> pos & 1 == 1 {
            if count == 0 {
                return pos as u32;
            }
            count -= 1;
        }
        pos += inc;
    }
    u32::MAX
}

/// `shf` (PTX 9.7.8.7): the funnel shift of `{b, a}` by `c` (`.wrap`: c mod 32, `.clamp`: at most
/// 32); `.l` keeps the high word of the left shift, `.r` the low word of the right shift.
pub fn shf(a: u32, b: u32, c: u32, left: bool, clamp: bool) -> u32 {
    let n = if clamp { c.min(32) } else { c & 31 };
    let v = (b as u64) << 32 | a as u64;
    if left {
        ((v << n) >> 32) as u32
    } else {
        (v >> n) as u32
    }
}

/// `bmsk` (PTX 9.7.1.22): a mask of `b` ones starting at bit `a` (`.clamp`: both at most
/// 32, `.wrap`: both mod 32), truncated to 32 bits.
pub fn bmsk(a: u32, b: u32, clamp: bool) -> u32 {
    let (a, b) = if clamp { (a.min(32), b.min(32)) } else { (a & 31, b & 31) };
    (((1u64 << b) - 1) << a) as u32
}

/// `szext` (PTX 9.7.1.21): the low `b` bits of `a`, sign- or zero-extended (`.clamp`: b
/// at most 32, `.wrap`: b mod 32); b = 0 gives 0.
pub fn szext(a: u32, b: u32, signed: bool, clamp: bool) -> u32 {
    let b = if clamp { b.min(32) } else { b & 31 };
    if b == 0 {
        0
    } else if signed {
        sext(a as u64, b) as u32
    } else {
        trunc(a as u64, b) as u32
    }
}

/// `sad` (PTX 9.7.1.7): `c + |a - b|` in the type's width.
pub fn sad(a: u64, b: u64, c: u64, w: u32, signed: bool) -> u64 {
    let (x, y) = if signed { (sext(a, w) as i128, sext(b, w) as i128) } else { (trunc(a, w) as i128, trunc(b, w) as i128) };
    trunc((c as i128 + (x - y).abs()) as u64, w)
}

/// `mul24`/`mad24` (PTX 9.7.1.5 - 9.7.1.6): the 48-bit product of the low 24 bits of `a` and `b`
/// (sign-extended for `.s32`), its low 32 bits (`.lo`) or bits 16..48 (`.hi`), plus `c`
/// (`.sat`: the `.hi.s32` sum clamped to s32).
pub fn mul24(a: u64, b: u64, c: u64, signed: bool, hi: bool, sat: bool) -> u64 {
    let v = |x: u64| if signed { sext(x, 24) } else { trunc(x, 24) as i64 };
    let p = v(a) * v(b);
    let part = if hi { p >> 16 } else { p };
    if sat {
        trunc((sext(part as u64, 32) + sext(c, 32)).clamp(i32::MIN as i64, i32::MAX as i64) as u64, 32)
    } else {
        trunc((part as u64).wrapping_add(c), 32)
    }
}

/// `dp4a` (PTX 9.7.1.23): `c` plus the four byte products of `a` and `b` (each signed or not by
/// its type).
pub fn dp4a(a: u32, b: u32, c: u32, a_signed: bool, b_signed: bool) -> u32 {
    let el = |v: u32, k: u32, s: bool| -> i64 {
        let x = (v >> (8 * k)) & 0xff;
        if s {
            x as i8 as i64
        } else {
            x as i64
        }
    };
    (0..4).fold(c as i64, |acc, k| acc.wrapping_add(el(a, k, a_signed) * el(b, k, b_signed))) as u32
}

/// `dp2a.lo/.hi` (PTX 9.7.1.24): `c` plus the products of the two 16-bit halves of `a` with bytes
/// 0-1 (`.lo`) or 2-3 (`.hi`) of `b`.
pub fn dp2a(a: u32, b: u32, c: u32, a_signed: bool, b_signed: bool, hi: bool) -> u32 {
    let half = |k: u32| -> i64 {
        let x = (a >> (16 * k)) & 0xffff;
        if a_signed {
            x as i16 as i64
        } else {
            x as i64
        }
    };
    let byte = |k: u32| -> i64 {
        let x = (b >> (8 * k)) & 0xff;
        if b_signed {
            x as i8 as i64
        } else {
            x as i64
        }
    };
    let base = if hi { 2 } else { 0 };
    (c as i64).wrapping_add(half(0) * byte(base)).wrapping_add(half(1) * byte(base + 1)) as u32
}

fn for_lanes(cx: &mut Cx<'_, '_>, i: &Instr, f: impl Fn(&Cx<'_, '_>, u32) -> u64) -> R {
    for l in lanes(cx.mask) {
        let v = f(cx, l);
        cx.dst(i, 0, l, v);
    }
    Ok(Flow::Next)
}

impl Exec for op::Bfi {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let w = super::bits(cx.ty(i));
        for_lanes(cx, i, |cx, l| bfi(cx.src(i, 1, l), trunc(cx.src(i, 2, l), w), (cx.src(i, 3, l) & 0xff) as u32, (cx.src(i, 4, l) & 0xff) as u32, w))
    }
}

impl Exec for op::Prmt {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let mode = [Mod::F4e, Mod::B4e, Mod::Rc8, Mod::Ecl, Mod::Ecr, Mod::Rc16].into_iter().find(|m| i.has(*m));
        for_lanes(cx, i, |cx, l| prmt(cx.src(i, 1, l) as u32, cx.src(i, 2, l) as u32, cx.src(i, 3, l) as u32, mode) as u64)
    }
}

impl Exec for op::Lop3 {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        for_lanes(cx, i, |cx, l| lop3(cx.src(i, 1, l), cx.src(i, 2, l), cx.src(i, 3, l), cx.src(i, 4, l) as u8))
    }
}

impl Exec for op::Fns {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        for_lanes(cx, i, |cx, l| fns(cx.src(i, 1, l) as u32, cx.src(i, 2, l) as u32, cx.src(i, 3, l) as i32) as u64)
    }
}

impl Exec for op::Shf {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let (left, clamp) = (i.has(Mod::L), i.has(Mod::Clamp));
        for_lanes(cx, i, |cx, l| shf(cx.src(i, 1, l) as u32, cx.src(i, 2, l) as u32, cx.src(i, 3, l) as u32, left, clamp) as u64)
    }
}

impl Exec for op::Bmsk {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let clamp = i.has(Mod::Clamp);
        for_lanes(cx, i, |cx, l| bmsk(cx.src(i, 1, l) as u32, cx.src(i, 2, l) as u32, clamp) as u64)
    }
}

impl Exec for op::Szext {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let (signed, clamp) = (i.has(Mod::S32), i.has(Mod::Clamp));
        for_lanes(cx, i, |cx, l| szext(cx.src(i, 1, l) as u32, cx.src(i, 2, l) as u32, signed, clamp) as u64)
    }
}

impl Exec for op::Mul24 {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let (signed, hi) = (cx.ty(i) == Mod::S32, i.has(Mod::Hi));
        for_lanes(cx, i, |cx, l| mul24(cx.src(i, 1, l), cx.src(i, 2, l), 0, signed, hi, false))
    }
}

impl Exec for op::Mad24 {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let (signed, hi, sat) = (cx.ty(i) == Mod::S32, i.has(Mod::Hi), i.has(Mod::Sat));
        for_lanes(cx, i, |cx, l| mul24(cx.src(i, 1, l), cx.src(i, 2, l), cx.src(i, 3, l), signed, hi, sat))
    }
}

impl Exec for op::Sad {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let (w, signed) = (super::bits(t), t.is_signed());
        for_lanes(cx, i, |cx, l| sad(cx.src(i, 1, l), cx.src(i, 2, l), cx.src(i, 3, l), w, signed))
    }
}

impl Exec for op::Dp4a {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let (sa, sb) = (cx.ty(i) == Mod::S32, i.ty2 == Some(Mod::S32));
        for_lanes(cx, i, |cx, l| dp4a(cx.src(i, 1, l) as u32, cx.src(i, 2, l) as u32, cx.src(i, 3, l) as u32, sa, sb) as u64)
    }
}

impl Exec for op::Dp2a {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let (sa, sb, hi) = (cx.ty(i) == Mod::S32, i.ty2 == Some(Mod::S32), i.has(Mod::Hi));
        for_lanes(cx, i, |cx, l| dp2a(cx.src(i, 1, l) as u32, cx.src(i, 2, l) as u32, cx.src(i, 3, l) as u32, sa, sb, hi) as u64)
    }
}

/// `isspacep` (PTX 9.7.9 "isspacep"): whether a generic address falls in a state space's window
/// (docs/DESIGN.md "Address spaces"). `.shared` is `.shared::cta`: the executing CTA's window;
/// `.shared::cluster` any CTA of its cluster; `.global` every address outside the shared, local
/// and param windows and the `.const` variables.
impl Exec for op::Isspacep {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let space = [Mod::Const, Mod::Global, Mod::Local, Mod::SharedCluster, Mod::SharedCta, Mod::Shared, Mod::Param].into_iter().find(|m| i.has(*m)).expect("isspacep has a space");
        let cluster = cx.m.ctas[cx.cta as usize].cluster;
        let rank = cx.m.ctas[cx.cta as usize].rank;
        let ranks = cx.m.clusters[cluster as usize].ctas.len() as u64;
        let consts: Vec<(u64, u64)> = cx
            .m
            .module()
            .symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| s.space == Space::Const)
            .map(|(k, s)| (cx.m.sym_offset[k], s.bytes().max(1)))
            .collect();
        for_lanes(cx, i, |cx, l| {
            let a = cx.src(i, 1, l);
            let window = |base: u64| (base..base + (1 << 32)).contains(&a);
            let shared_rank = || {
                let off = a - SHARED_GENERIC_BASE;
                if off < SMEM_CLUSTER_STRIDE {
                    Some(rank as u64)
                } else {
                    Some(off / SMEM_CLUSTER_STRIDE - 1).filter(|r| *r < ranks)
                }
            };
            let in_const = consts.iter().any(|&(b, n)| (b..b + n).contains(&a));
            let yes = match space {
                Mod::Shared | Mod::SharedCta => window(SHARED_GENERIC_BASE) && shared_rank() == Some(rank as u64),
                Mod::SharedCluster => window(SHARED_GENERIC_BASE) && shared_rank().is_some(),
                Mod::Local => window(LOCAL_GENERIC_BASE),
                Mod::Param => window(PARAM_GENERIC_BASE),
                Mod::Const => in_const,
                _ => !window(SHARED_GENERIC_BASE) && !window(LOCAL_GENERIC_BASE) && !window(PARAM_GENERIC_BASE) && !in_const,
            };
            let _ = cx;
            yes as u64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfi_inserts_and_drops_past_the_msb() {
        assert_eq!(bfi(0b101, 0xffff_0000, 4, 3, 32), 0xffff_0050);
        assert_eq!(bfi(0xff, 0, 28, 8, 32), 0xf000_0000);
        assert_eq!(bfi(0xff, 0x1234, 40, 8, 32), 0x1234);
        assert_eq!(bfi(0xff, 0x1234, 0, 0, 32), 0x1234);
        assert_eq!(bfi(1, 0, 63, 1, 64), 1 << 63);
    }

    #[test]
    fn prmt_generic_and_modes() {
        let (a, b) = (0x3322_1100, 0x7766_5544);
        // Identity and swap of words.
        assert_eq!(prmt(a, b, 0x3210, None), a);
        assert_eq!(prmt(a, b, 0x7654, None), b);
        assert_eq!(prmt(a, b, 0x0123, None), 0x0011_2233);
        // Sign replication: byte 0x80 with bit 3 set becomes 0xff, 0x11 becomes 0.
        assert_eq!(prmt(0x0000_0080, 0, 0x8888, None), 0xffff_ffff);
        assert_eq!(prmt(0x0000_0011, 0, 0x0008, None), 0x1111_1100);
        // __byte_perm(x, y, s) as CUDA documents it.
        assert_eq!(prmt(0x0403_0201, 0x0807_0605, 0x5140, None), 0x0602_0501);
        assert_eq!(prmt(a, b, 1, Some(Mod::F4e)), 0x4433_2211);
        assert_eq!(prmt(a, b, 0, Some(Mod::B4e)), 0x5566_7700);
        assert_eq!(prmt(a, b, 2, Some(Mod::Rc8)), 0x2222_2222);
        assert_eq!(prmt(a, b, 1, Some(Mod::Ecl)), 0x3322_1111);
        assert_eq!(prmt(a, b, 2, Some(Mod::Ecr)), 0x2222_1100);
        assert_eq!(prmt(a, b, 1, Some(Mod::Rc16)), 0x3322_3322);
    }

    #[test]
    fn lop3_luts() {
        let (a, b, c) = (0xf0f0_f0f0u64, 0xcccc_ccccu64, 0xaaaa_aaaau64);
        // The LUT of F applied to (0xf0, 0xcc, 0xaa) reproduces F.
        assert_eq!(lop3(a, b, c, 0xf0 & 0xcc ^ 0xaa), (a & b ^ c) & 0xffff_ffff);
        assert_eq!(lop3(a, b, c, 0x96), a ^ b ^ c);
        assert_eq!(lop3(0x1234, 0, 0, 0xf0), 0x1234);
        assert_eq!(lop3(0, 0, 0, 0xff), 0xffff_ffff);
        assert_eq!(lop3(5, 6, 0, 0xfe & 0xfc), 5 | 6);
    }

    #[test]
    fn fns_finds_the_nth_set_bit() {
        let m = 0b1011_0100;
        assert_eq!(fns(m, 0, 1), 2);
        assert_eq!(fns(m, 0, 2), 4);
        assert_eq!(fns(m, 0, 4), 7);
        assert_eq!(fns(m, 0, 5), u32::MAX);
        assert_eq!(fns(m, 7, -1), 7);
        assert_eq!(fns(m, 7, -2), 5);
        assert_eq!(fns(m, 4, 0), 4);
        assert_eq!(fns(m, 3, 0), u32::MAX);
        assert_eq!(fns(m, 40, 1), u32::MAX);
    }

    #[test]
    fn funnel_shifts_masks_and_extends() {
        assert_eq!(shf(0x8000_0001, 0x0000_0001, 4, true, false), 0x0000_0018);
        assert_eq!(shf(0x8000_0001, 0x0000_0001, 4, false, false), 0x1800_0000);
        assert_eq!(shf(1, 2, 36, true, false), 0x20);
        assert_eq!(shf(1, 2, 36, true, true), 1);
        assert_eq!(shf(1, 2, 36, false, true), 2);
        assert_eq!(bmsk(4, 8, true), 0xff0);
        assert_eq!(bmsk(0, 32, true), 0xffff_ffff);
        assert_eq!(bmsk(0, 32, false), 0);
        assert_eq!(bmsk(30, 8, true), 0xc000_0000);
        assert_eq!(szext(0xf8, 8, true, true), 0xffff_fff8);
        assert_eq!(szext(0xf8, 4, false, true), 0x8);
        assert_eq!(szext(0xf8, 0, true, true), 0);
        assert_eq!(szext(0x1234_5678, 40, true, true), 0x1234_5678);
    }

    #[test]
    fn mul24_products() {
        // 0x00ffffff * 2 = 0x1fffffe: .lo keeps it, .hi is bits 16..48 = 0x1ff.
        assert_eq!(mul24(0x00ff_ffff, 2, 0, false, false, false), 0x01ff_fffe);
        assert_eq!(mul24(0x00ff_ffff, 2, 0, false, true, false), 0x1ff);
        // .s32: 0x00ffffff is -1 in 24 bits; high bits of a are ignored.
        assert_eq!(mul24(0xab00_0001, 0x00ff_ffff, 0, true, false, false), 0xffff_ffff);
        assert_eq!(mul24(0x7f_ffff, 0x7f_ffff, 0x7fff_ffff, true, true, true), 0x7fff_ffff);
    }

    #[test]
    fn sum_of_absolute_differences() {
        assert_eq!(sad(3, 10, 100, 32, false), 107);
        assert_eq!(sad(0xffff_fffe, 3, 1, 32, true), 6);
        assert_eq!(sad(0xffff_fffe, 3, 1, 32, false), 0xffff_fffc);
    }

    #[test]
    fn dot_products() {
        assert_eq!(dp4a(0x0102_0304, 0x0101_0101, 10, false, false), 20);
        assert_eq!(dp4a(0xff02_0304, 0x0101_0101, 0, true, false), 8);
        assert_eq!(dp4a(0xff00_0000, 0xff00_0000, 0, true, true), 1);
        assert_eq!(dp2a(0x0002_0003, 0x0504_0302, 1, false, false, false), 1 + 3 * 2 + 2 * 3);
        assert_eq!(dp2a(0x0002_0003, 0x0504_0302, 1, false, false, true), 1 + 3 * 4 + 2 * 5);
        assert_eq!(dp2a(0xffff_0001, 0x0000_0101, 0, true, false, false), 0);
    }
}
