//! Loads, stores, atomics and reductions (PTX 9.7.9.8 - 9.7.9.9, 9.7.13.5 - 9.7.13.6). Every
//! warp-instruction is atomic in the golden model; lanes apply in lane order.

use super::{bits, lanes, sext, trunc, Cx, Exec, Flow, R};
use crate::finding::FindingKind;
use crate::machine::Place;
use hopsync_firmware::ir::{Instr, Mod, Operand};
use hopsync_firmware::ops::op;

fn vec_len(i: &Instr) -> usize {
    if i.has(Mod::V8) {
        8
    } else if i.has(Mod::V4) {
        4
    } else if i.has(Mod::V2) {
        2
    } else {
        1
    }
}

/// PTX 9.7.13.15.3: an mbarrier object's memory may only be touched by mbarrier instructions
/// while it is valid.
fn check_not_mbarrier(cx: &mut Cx<'_, '_>, p: Place, size: usize, lane: u32) -> Result<(), super::Stop> {
    if let Place::Shared(c, o) = p {
        let objs = &cx.m.ctas[c as usize].mbarriers;
        if !objs.is_empty() {
            let start = (o as u32) & !7;
            let mut a = start;
            while (a as usize) < o + size {
                if objs.contains_key(&a) {
                    return cx.finding(
                        FindingKind::MbarrierAccessedAsData,
                        lane,
                        format!("plain memory access to the valid mbarrier object at cta {c} shared 0x{a:x}; invalidate it first (mbarrier.inval)"),
                    );
                }
                a += 8;
            }
        }
    }
    Ok(())
}

impl Exec for op::Ld {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let eb = t.type_bytes().unwrap_or(8) as usize;
        let n = vec_len(i);
        // Signed loads sign-extend into wider registers.
        let fix = |v: u64| if t.is_signed() { sext(v, bits(t)) as u64 } else { v };
        // Decoded once for the warp: the space, every lane's address, the race access kind.
        let (sp, addrs, access) = (cx.space(i, 1), cx.addr_lanes(i, 1), crate::race::Access::of(i, false, false));
        // A scalar load's values, written for the whole warp after the lanes (`loaded`: the lanes
        // that loaded, also when a later lane stops the instruction).
        let (mut values, mut loaded) = ([0u64; super::WARP], 0u32);
        let mut each_lane = || -> Result<(), super::Stop> {
            for l in lanes(cx.mask) {
                let p = cx.place_at(l, addrs[l as usize], eb * n, sp)?;
                check_not_mbarrier(cx, p, eb * n, l)?;
                super::tma::on_generic_access(cx, p, eb * n, l, false)?;
                crate::race::thread_access(cx.m, cx.cta, cx.warp, l, cx.pc, p, eb * n, access)?;
                match &i.operands[0] {
                    Operand::Vector(v) => {
                        for (k, o) in v.iter().enumerate() {
                            let x = fix(cx.m.read_u64(offset(p, k * eb), eb));
                            if let Operand::Reg(r) = o {
                                cx.set_reg(*r, l, x);
                            }
                        }
                    }
                    _ => {
                        values[l as usize] = fix(cx.m.read_u64(p, eb));
                        loaded |= 1 << l;
                    }
                }
            }
            Ok(())
        };
        let done = each_lane();
        cx.dst_lanes_in(i, 0, loaded, &values);
        done.map(|_| Flow::Next)
    }
}

/// The place `k` bytes further.
pub fn offset(p: Place, k: usize) -> Place {
    match p {
        Place::Global(r, o) => Place::Global(r, o + k),
        Place::Shared(c, o) => Place::Shared(c, o + k),
        Place::Local(c, t, o) => Place::Local(c, t, o + k),
        Place::Param(o) => Place::Param(o + k),
    }
}

impl Exec for op::St {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let t = cx.ty(i);
        let eb = t.type_bytes().unwrap_or(8) as usize;
        let n = vec_len(i);
        // Decoded once for the warp: the space, every lane's address and (scalar store) value.
        let (sp, addrs, access) = (cx.space(i, 0), cx.addr_lanes(i, 0), crate::race::Access::of(i, true, false));
        let scalar = if matches!(i.operands[1], Operand::Vector(_)) { None } else { Some(cx.src_lanes(i, 1)) };
        for l in lanes(cx.mask) {
            let p = cx.place_at(l, addrs[l as usize], eb * n, sp)?;
            check_not_mbarrier(cx, p, eb * n, l)?;
            super::tma::on_generic_access(cx, p, eb * n, l, true)?;
            crate::race::thread_access(cx.m, cx.cta, cx.warp, l, cx.pc, p, eb * n, access)?;
            // At most 8 elements (`.v8`) of at most 16 bytes (`.b128`).
            let mut bytes = [0u8; 128];
            let mut put = |k: usize, v: u64| bytes[k * eb..(k + 1) * eb].copy_from_slice(&v.to_le_bytes()[..eb]);
            match (&i.operands[1], scalar) {
                (_, Some(v)) => put(0, v[l as usize]),
                (Operand::Vector(v), None) => {
                    for (k, o) in v.iter().enumerate() {
                        put(k, match o {
                            Operand::Reg(r) => cx.reg(*r, l),
                            Operand::Imm(x) => *x as u64,
                            _ => 0,
                        });
                    }
                }
                (_, None) => unreachable!("a non-vector store operand was read whole-warp above"),
            }
            cx.m.write(p, &bytes[..eb * n]);
        }
        Ok(Flow::Next)
    }
}

/// The new memory value of an atomic/reduction (PTX 9.7.13.5 semantics table).
pub fn atomic_op(op: Mod, t: Mod, old: u64, b: u64, c: u64) -> u64 {
    let w = bits(t);
    let (o, b) = (trunc(old, w), trunc(b, w));
    let fl = |x: u64| if t == Mod::F32 { f32::from_bits(x as u32) as f64 } else { f64::from_bits(x) };
    let tof = |x: f64| if t == Mod::F32 { (x as f32).to_bits() as u64 } else { x.to_bits() };
    let isf = matches!(t, Mod::F32 | Mod::F64);
    trunc(
        match op {
            Mod::And => o & b,
            Mod::Or => o | b,
            Mod::Xor => o ^ b,
            Mod::Exch => b,
            Mod::Cas => {
                if o == b {
                    trunc(c, w)
                } else {
                    o
                }
            }
            Mod::Add if isf => {
                if t == Mod::F32 {
                    (f32::from_bits(o as u32) + f32::from_bits(b as u32)).to_bits() as u64
                } else {
                    tof(fl(o) + fl(b))
                }
            }
            Mod::Add => o.wrapping_add(b),
            Mod::Inc => {
                if o >= b {
                    0
                } else {
                    o + 1
                }
            }
            Mod::Dec => {
                if o == 0 || o > b {
                    b
                } else {
                    o - 1
                }
            }
            Mod::Min | Mod::Max => {
                let less = if isf {
                    fl(o) < fl(b)
                } else if t.is_signed() {
                    sext(o, w) < sext(b, w)
                } else {
                    o < b
                };
                let keep_old = if op == Mod::Min { less } else { !less };
                if keep_old {
                    o
                } else {
                    b
                }
            }
            _ => o,
        },
        w,
    )
}

fn the_op(i: &Instr) -> Mod {
    [Mod::And, Mod::Or, Mod::Xor, Mod::Cas, Mod::Exch, Mod::Add, Mod::Inc, Mod::Dec, Mod::Min, Mod::Max]
        .into_iter()
        .find(|m| i.has(*m))
        .unwrap_or(Mod::Add)
}

fn atomic(cx: &mut Cx<'_, '_>, i: &Instr, has_dst: bool) -> R {
    let t = cx.ty(i);
    if matches!(t, Mod::F16 | Mod::Bf16 | Mod::F16x2 | Mod::Bf16x2 | Mod::B128) || vec_len(i) > 1 {
        return super::unsupported(cx, i, "half-precision, 128-bit and vector atomics");
    }
    let op = the_op(i);
    let eb = t.type_bytes().unwrap_or(4) as usize;
    let (ai, bi) = if has_dst { (1, 2) } else { (0, 1) };
    for l in lanes(cx.mask) {
        let p = cx.place(i, ai, l, eb)?;
        check_not_mbarrier(cx, p, eb, l)?;
        super::tma::on_generic_access(cx, p, eb, l, true)?;
        crate::race::thread_access(cx.m, cx.cta, cx.warp, l, cx.pc, p, eb, crate::race::Access::of(i, true, true))?;
        let old = cx.m.read_u64(p, eb);
        let b = cx.src(i, bi, l);
        let c = if op == Mod::Cas { cx.src(i, bi + 1, l) } else { 0 };
        let new = atomic_op(op, t, old, b, c);
        cx.m.write(p, &new.to_le_bytes()[..eb]);
        if has_dst {
            cx.dst(i, 0, l, old);
        }
    }
    Ok(Flow::Next)
}

impl Exec for op::Atom {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        atomic(cx, i, true)
    }
}

impl Exec for op::Red {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        atomic(cx, i, false)
    }
}
