//! Hints and descriptor edits: `prefetch`/`prefetchu` (PTX 9.7.9 "prefetch, prefetchu"), `setmaxnreg` (PTX "Miscellaneous Instructions: setmaxnreg")
//! and `tensormap.replace` (PTX 9.7.9.26).

use super::mma::check_full_warp;
use super::{lanes, Cx, Exec, Flow, R};
use crate::finding::FindingKind;
use hopsync_firmware::ir::{Instr, Mod, Operand};
use hopsync_firmware::ops::op;
use hopsync_firmware::tensormap::{replace_field, ReplaceField, TENSOR_MAP_BYTES};

/// prefetch / prefetch.tensormap (PTX 9.7.9 "prefetch, prefetchu"): a cache hint with no architectural effect
/// ("prefetch ... to a specified level of memory hierarchy"; an address outside every allocation
/// faults nothing), so the golden model retires it.
impl Exec for op::Prefetch {
    fn exec(_: &mut Cx<'_, '_>, _: &Instr) -> R {
        Ok(Flow::Next)
    }
}

/// prefetchu.L1 (PTX 9.7.9 "prefetch, prefetchu"): a uniform prefetch hint, as `prefetch`.
impl Exec for op::Prefetchu {
    fn exec(_: &mut Cx<'_, '_>, _: &Instr) -> R {
        Ok(Flow::Next)
    }
}

/// setmaxnreg (PTX "Miscellaneous Instructions: setmaxnreg"): changes the warp's per-thread register budget. hopsync's registers
/// are unbounded, so only the `.sync.aligned` rule applies (the count's range, 24..=256 in steps of
/// 8, is checked when the program is read).
impl Exec for op::Setmaxnreg {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        check_full_warp(cx, i)?;
        Ok(Flow::Next)
    }
}

fn field_of(i: &Instr) -> ReplaceField {
    use ReplaceField::*;
    [
        (Mod::GlobalAddress, GlobalAddress),
        (Mod::Rank, Rank),
        (Mod::BoxDim, BoxDim),
        (Mod::GlobalDim, GlobalDim),
        (Mod::GlobalStride, GlobalStride),
        (Mod::ElementStride, ElementStride),
        (Mod::Elemtype, Elemtype),
        (Mod::InterleaveLayout, InterleaveLayout),
        (Mod::SwizzleMode, SwizzleMode),
        (Mod::SwizzleAtomicity, SwizzleAtomicity),
        (Mod::FillMode, FillMode),
    ]
    .into_iter()
    .find(|(m, _)| i.has(*m))
    .map(|(_, f)| f)
    .expect("tensormap.replace has a field")
}

/// tensormap.replace (PTX 9.7.9.26): rewrites one field of the 128-byte tensor-map image at the
/// address (global or shared::cta); the TMA instructions decode the image they find when they
/// execute (README "Tensor maps"), so a map edited here and copied back to global memory is the
/// map they use.
impl Exec for op::TensormapReplace {
    fn exec(cx: &mut Cx<'_, '_>, i: &Instr) -> R {
        let field = field_of(i);
        let with_ord = i.operands.len() == 3;
        for l in lanes(cx.mask) {
            let p = cx.place(i, 0, l, TENSOR_MAP_BYTES)?;
            let ord = if with_ord { cx.src(i, 1, l) as usize } else { 0 };
            let new_val = cx.src(i, if with_ord { 2 } else { 1 }, l);
            let new_val = if i.ty2 == Some(Mod::B32) && !matches!(i.operands.last(), Some(Operand::Imm(_))) { new_val & 0xffff_ffff } else { new_val };
            let mut img = [0u8; TENSOR_MAP_BYTES];
            img.copy_from_slice(cx.m.read(p, TENSOR_MAP_BYTES));
            match replace_field(&mut img, field, ord, new_val) {
                Ok(()) => cx.m.write(p, &img),
                Err(e) if e.rule.starts_with("unsupported:") => return super::unsupported(cx, i, e.rule.trim_start_matches("unsupported: ")),
                Err(e) => cx.finding(FindingKind::TensorMapInvalid, l, format!("{}: {} ({})", e.rule, e.message, e.reference))?,
            }
        }
        Ok(Flow::Next)
    }
}
