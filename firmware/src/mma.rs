//! The legal forms of the matrix instructions: `mma.sync` (PTX 9.7.14.5 "mma" and its
//! "Matrix Shape" and fragment sections), `wgmma.mma_async` (PTX 9.7.15.5.2, shapes of 9.7.15 "Matrix Shape")
//! and its sparse form `wgmma.mma_async.sp` (PTX 9.7.15.6): which
//! shape goes with which element types, and how many registers each operand vector holds. The
//! parser rejects what ptxas rejects with these rules; the golden model's bodies read the same
//! forms, so a rule lives here once.

use crate::ir::{Instr, Mod, Operand};
use crate::Opcode;

/// The element family of the multiplicands (`.atype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `.f16`.
    F16,
    /// `.bf16`.
    Bf16,
    /// `.tf32`.
    Tf32,
    /// `.e4m3` / `.e5m2` (A and B may differ).
    Fp8,
    /// `.s8` / `.u8` (A and B may differ).
    Int8,
    /// `.s4` / `.u4`.
    Int4,
    /// `.b1` with `.and.popc` / `.xor.popc`.
    B1,
    /// `.f64`.
    F64,
}

impl Family {
    /// The family of a multiplicand type.
    pub fn of(t: Mod) -> Option<Family> {
        Some(match t {
            Mod::F16 => Family::F16,
            Mod::Bf16 => Family::Bf16,
            Mod::Tf32 => Family::Tf32,
            Mod::E4m3 | Mod::E5m2 => Family::Fp8,
            Mod::S8 | Mod::U8 => Family::Int8,
            Mod::S4 | Mod::U4 => Family::Int4,
            Mod::B1 => Family::B1,
            Mod::F64 => Family::F64,
            _ => return None,
        })
    }
    /// Bits of one element.
    pub fn bits(self) -> u32 {
        match self {
            Family::F16 | Family::Bf16 => 16,
            Family::Tf32 => 32,
            Family::Fp8 | Family::Int8 => 8,
            Family::Int4 => 4,
            Family::B1 => 1,
            Family::F64 => 64,
        }
    }
    /// Elements of this family one register holds (an f64 register holds one f64).
    pub fn per_reg(self) -> u32 {
        if self == Family::F64 {
            1
        } else {
            32 / self.bits()
        }
    }
}

/// A checked matrix-instruction form: its shape, the multiplicand family and the length of each
/// operand vector (in registers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Form {
    /// M.
    pub m: u32,
    /// N.
    pub n: u32,
    /// K.
    pub k: u32,
    /// The multiplicand family.
    pub family: Family,
    /// Registers of D (and of C for `mma`).
    pub d_regs: usize,
    /// Registers of A when it is a register vector.
    pub a_regs: usize,
    /// Registers of B (`mma` only; wgmma reads B through a descriptor).
    pub b_regs: usize,
    /// `wgmma.mma_async.sp` (PTX 9.7.15.6): `k` is the logical K of the structured-sparse A, whose
    /// operand (registers or shared memory) holds only its K/2 nonzero columns.
    pub sparse: bool,
}

impl Form {
    /// Columns of the A operand as stored: K, or K/2 for the sparse form (PTX 9.7.15.6: "the MxK
    /// matrix A is packed into MxK/2 elements").
    pub fn a_cols(&self) -> u32 {
        if self.sparse {
            self.k / 2
        } else {
            self.k
        }
    }
    /// The operand index of a wgmma's scale-d: after d, a, b-desc, and for the sparse form
    /// sp-meta and sp-sel (PTX 9.7.15.6.3 syntax); the immediates follow it.
    pub fn scale_d_operand(&self) -> usize {
        if self.sparse {
            5
        } else {
            3
        }
    }
}

/// The shape modifier of `i`.
pub fn shape_of(i: &Instr) -> Option<(Mod, (u32, u32, u32))> {
    i.mods.iter().find_map(|m| m.shape().filter(|s| s.2 > 0).map(|s| (m, s)))
}

/// Accumulator registers per thread for `m x n` spread over `threads` threads, in the type `dt`.
fn acc_regs(m: u32, n: u32, threads: u32, dt: Mod) -> usize {
    let elems = m * n / threads;
    if dt == Mod::F16 {
        (elems / 2) as usize
    } else {
        elems as usize
    }
}

/// The `mma.sync` form of `i` (`.dtype.atype.btype.ctype` in `ty()`, `ty2`, `ty3`, `ty4`), or why
/// ptxas refuses it.
pub fn mma_form(i: &Instr) -> Result<Form, String> {
    let (sm, (m, n, k)) = shape_of(i).ok_or("`mma` needs a shape")?;
    let (dt, at, bt, ct) = (i.ty().ok_or("`mma` needs .dtype")?, i.ty2.ok_or("`mma` needs .atype")?, i.ty3.ok_or("`mma` needs .btype")?, i.ty4.ok_or("`mma` needs .ctype")?);
    let fam = Family::of(at).ok_or_else(|| format!("`.{}` is not an mma multiplicand type", at.text()))?;
    if Family::of(bt) != Some(fam) {
        return Err(format!("`mma` multiplies `.{}` by `.{}`: A and B must be of one family", at.text(), bt.text()));
    }
    if fam != Family::Fp8 && fam != Family::Int8 && fam != Family::Int4 && at != bt {
        return Err(format!("`mma` with `.{}` A needs `.{}` B", at.text(), at.text()));
    }
    use Family::*;
    let accs: &[Mod] = match (sm, fam) {
        (Mod::M8n8k4, F64) | (Mod::M16n8k4, F64) | (Mod::M16n8k8, F64) | (Mod::M16n8k16, F64) => &[Mod::F64],
        (Mod::M16n8k8 | Mod::M16n8k16, F16) => &[Mod::F16, Mod::F32],
        (Mod::M16n8k8 | Mod::M16n8k16, Bf16) => &[Mod::F32],
        (Mod::M16n8k4 | Mod::M16n8k8, Tf32) => &[Mod::F32],
        (Mod::M16n8k16 | Mod::M16n8k32, Fp8) => &[Mod::F16, Mod::F32],
        (Mod::M8n8k16 | Mod::M16n8k16 | Mod::M16n8k32, Int8) => &[Mod::S32],
        (Mod::M8n8k32 | Mod::M16n8k32 | Mod::M16n8k64, Int4) => &[Mod::S32],
        (Mod::M8n8k128 | Mod::M16n8k128 | Mod::M16n8k256, B1) => &[Mod::S32],
        (Mod::M8n8k4, F16) => return Err("`mma.m8n8k4` with `.f16` (the sm_70 quad-pair form) is not modelled".into()),
        _ => return Err(format!("`mma.{}` has no form with `.{}` multiplicands", sm.text(), at.text())),
    };
    if !accs.contains(&dt) || !accs.contains(&ct) {
        return Err(format!("`mma.{}` with `.{}` multiplicands accumulates in {}", sm.text(), at.text(), list(accs)));
    }
    if fam == B1 && !(i.has(Mod::Popc) && (i.has(Mod::And) || i.has(Mod::Xor))) {
        return Err("single-bit `mma` needs `.and.popc` or `.xor.popc`".into());
    }
    if !(i.has(Mod::Row) && i.has(Mod::Col)) {
        return Err("`mma` on sm_80+ shapes takes `.row.col` layouts".into());
    }
    let per = fam.per_reg();
    let a_elems = m * k / 32;
    let b_elems = n * k / 32;
    Ok(Form { m, n, k, family: fam, d_regs: acc_regs(m, n, 32, dt), a_regs: (a_elems / per) as usize, b_regs: (b_elems / per) as usize, sparse: false })
}

/// wgmma N values of the integer and single-bit forms (PTX 9.7.15 "Matrix Shape": multiples of 16 from 16,
/// plus 8 and 24, up to 256). ptxas 13.5 takes `m64n240k32` and `m64n256k32` with `.s8`, dense and
/// sparse (`m64n240k64`), as CUTLASS's `mma_sm90_gmma_ext.hpp` emits them, and refuses `m64n40k64`.
fn int_n(n: u32) -> bool {
    n == 8 || n == 24 || (n % 16 == 0 && (16..=256).contains(&n))
}

/// The `wgmma.mma_async` or `wgmma.mma_async.sp` form of `i` (`.dtype.atype.btype` in `ty()`,
/// `ty2`, `ty3`), or why ptxas refuses it. The sparse form (PTX 9.7.15.6) has the dense form's
/// types, accumulators and N values with K doubled and no `.b1`; its sp-meta is a register and its
/// sp-sel an immediate (ptxas: "Arguments mismatch" otherwise).
pub fn wgmma_form(i: &Instr) -> Result<Form, String> {
    let sparse = i.op == Opcode::WgmmaMmaAsyncSp;
    let name = i.op.name();
    let (sm, (m, n, k)) = shape_of(i).ok_or_else(|| format!("`{name}` needs a shape"))?;
    let (dt, at, bt) = (i.ty().ok_or("needs .dtype")?, i.ty2.ok_or("needs .atype")?, i.ty3.ok_or("needs .btype")?);
    let fam = Family::of(at).ok_or_else(|| format!("`.{}` is not a wgmma multiplicand type", at.text()))?;
    if Family::of(bt) != Some(fam) || (!matches!(fam, Family::Fp8 | Family::Int8) && at != bt) {
        return Err(format!("`{name}` multiplies `.{}` by `.{}`: not a valid pair", at.text(), bt.text()));
    }
    let (dense_k, accs): (u32, &[Mod]) = match fam {
        Family::F16 => (16, &[Mod::F16, Mod::F32]),
        Family::Bf16 => (16, &[Mod::F32]),
        Family::Tf32 => (8, &[Mod::F32]),
        Family::Fp8 => (32, &[Mod::F16, Mod::F32]),
        Family::Int8 => (32, &[Mod::S32]),
        Family::B1 if !sparse => (256, &[Mod::S32]),
        Family::B1 | Family::Int4 | Family::F64 => return Err(format!("`{name}` has no `.{}` form", at.text())),
    };
    let want_k = if sparse { 2 * dense_k } else { dense_k };
    if k != want_k {
        return Err(format!("`{name}` with `.{}` multiplicands needs a `k{want_k}` shape, found `.{}`", at.text(), sm.text()));
    }
    if matches!(fam, Family::Int8 | Family::B1) && !int_n(n) {
        return Err(format!("`.{}` is not a shape of the `.{}` wgmma (PTX 9.7.15 Matrix Shape)", sm.text(), at.text()));
    }
    if !accs.contains(&dt) {
        return Err(format!("`{name}` with `.{}` multiplicands accumulates in {}", at.text(), list(accs)));
    }
    if fam == Family::B1 && !(i.has(Mod::And) && i.has(Mod::Popc)) {
        return Err("single-bit `wgmma.mma_async` needs `.and.popc`".into());
    }
    if i.has(Mod::Satfinite) && fam != Family::Int8 {
        return Err("`.satfinite` is only for the integer wgmma".into());
    }
    if sparse {
        // PTX 9.7.15.6.1: the sparsity selector names the threads of each group of four that
        // hold the metadata: a thread pair (0: T0 and T1, 1: T2 and T3) for the 16- and 32-bit
        // types, all four for the 8-bit ones (0 only). ptxas checks it: "expected to be 0 or 1" /
        // "expected to be 0".
        if !matches!(i.operands.get(3), Some(Operand::Reg(_))) {
            return Err(format!("the sp-meta operand of `{name}` must be a .b32 register"));
        }
        let max_sel = if matches!(fam, Family::Fp8 | Family::Int8) { 0 } else { 1 };
        match i.operands.get(4) {
            Some(Operand::Imm(s)) if (0..=max_sel).contains(s) => {}
            Some(Operand::Imm(s)) => return Err(format!("the sp-sel of `{name}` with `.{}` multiplicands must be {}, found {s}", at.text(), if max_sel == 0 { "0" } else { "0 or 1" })),
            _ => return Err(format!("the sp-sel operand of `{name}` must be an immediate")),
        }
    }
    // Operands: d, a (descriptor or registers), b-desc, [sp-meta, sp-sel,] scale-d, then the
    // immediates.
    let a_regs = matches!(i.operands.get(1), Some(Operand::Vector(_)));
    let imms = match fam {
        Family::F16 | Family::Bf16 => 4 - a_regs as usize,
        Family::Tf32 | Family::Fp8 => 2,
        _ => 0,
    };
    let fixed = if sparse { 6 } else { 4 };
    if i.operands.len() != fixed + imms {
        return Err(format!(
            "`{name}` with `.{}` multiplicands and A {} takes {} operands (d, a, b-desc, {}scale-d{}), found {}",
            at.text(),
            if a_regs { "in registers" } else { "in shared memory" },
            fixed + imms,
            if sparse { "sp-meta, sp-sel, " } else { "" },
            match imms {
                4 => ", imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b",
                3 => ", imm-scale-a, imm-scale-b, imm-trans-b",
                2 => ", imm-scale-a, imm-scale-b",
                _ => "",
            },
            i.operands.len()
        ));
    }
    Ok(Form { m, n, k, family: fam, d_regs: acc_regs(m, n, 128, dt), a_regs: 4, b_regs: 0, sparse })
}

/// The instructions only the arch-specific target has (the Target ISA notes of PTX 9.7.15 wgmma and
/// of setmaxnreg:
/// "requires sm_90a"): ptxas refuses them for `.target sm_90`.
pub fn check_arch(m: &crate::ir::Module, i: &Instr) -> Result<(), String> {
    let arch_specific = matches!(i.op, Opcode::WgmmaFence | Opcode::WgmmaCommitGroup | Opcode::WgmmaWaitGroup | Opcode::WgmmaMmaAsync | Opcode::WgmmaMmaAsyncSp | Opcode::Setmaxnreg);
    if arch_specific && !m.target.iter().any(|t| t.starts_with("sm_") && t.ends_with('a')) {
        return Err(format!("`{}` requires the arch-specific target `.target sm_90a` (ptxas rejects it on `{}`)", i.op.name(), m.target.join(", ")));
    }
    Ok(())
}

fn list(ts: &[Mod]) -> String {
    ts.iter().map(|t| format!("`.{}`", t.text())).collect::<Vec<_>>().join(" or ")
}

/// The vector-length rules of the matrix instructions, as ptxas applies them: every operand
/// vector has as many registers as its fragment holds.
pub fn check(i: &Instr) -> Result<(), String> {
    let vec_len = |k: usize| match i.operands.get(k) {
        Some(Operand::Vector(v)) => Some(v.len()),
        _ => None,
    };
    let want = |k: usize, n: usize, what: &str| -> Result<(), String> {
        match vec_len(k) {
            Some(l) if l != n => Err(format!("{what} of `{}` needs {n} registers, found {l}", i.op.name())),
            None => Err(format!("{what} of `{}` must be a vector of {n} registers", i.op.name())),
            _ => Ok(()),
        }
    };
    match i.op {
        Opcode::Mma => {
            let f = mma_form(i)?;
            want(0, f.d_regs, "the D operand")?;
            want(1, f.a_regs, "the A operand")?;
            want(2, f.b_regs, "the B operand")?;
            want(3, f.d_regs, "the C operand")
        }
        Opcode::Setmaxnreg => match i.operands.first() {
            // PTX "setmaxnreg": "imm-reg-count ... in the range 24 to 256 (both inclusive) and a
            // multiple of 8".
            Some(Operand::Imm(n)) if (24..=256).contains(n) && n % 8 == 0 => Ok(()),
            _ => Err("`setmaxnreg` takes an immediate register count in 24..=256, a multiple of 8".into()),
        },
        Opcode::WgmmaMmaAsync | Opcode::WgmmaMmaAsyncSp => {
            let f = wgmma_form(i)?;
            want(0, f.d_regs, "the D operand")?;
            if vec_len(1).is_some() {
                want(1, f.a_regs, "the A operand")?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_module;

    fn instr(body: &str) -> Result<Instr, String> {
        let src = format!(
            ".version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<200>;\n.reg .f32 %f<200>;\n.reg .b64 %rd<4>;\n.reg .f64 %fd<8>;\n.reg .pred %p<2>;\n{body}\nret;\n}}\n"
        );
        parse_module(&src).map(|m| m.kernel.body[0].clone()).map_err(|d| d.to_string())
    }

    #[test]
    fn mma_forms() {
        let i = instr("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f5, %f6, %f7, %f8};").unwrap();
        let f = mma_form(&i).unwrap();
        assert_eq!((f.m, f.n, f.k, f.d_regs, f.a_regs, f.b_regs), (16, 8, 16, 4, 4, 2));
        let i = instr("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r11, %r12, %r13, %r14};").unwrap();
        assert_eq!(mma_form(&i).unwrap().family, Family::Int8);
        let i = instr("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%fd1, %fd2}, {%fd3}, {%fd4}, {%fd5, %fd6};").unwrap();
        assert_eq!(mma_form(&i).unwrap().d_regs, 2);
        let e = instr("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2}, {%r5, %r6}, {%f5, %f6, %f7, %f8};").unwrap_err();
        assert!(e.contains("needs 4 registers, found 2"), "{e}");
        let e = instr("mma.sync.aligned.m16n8k16.row.col.s32.bf16.bf16.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r11, %r12, %r13, %r14};").unwrap_err();
        assert!(e.contains("accumulates in `.f32`"), "{e}");
    }

    #[test]
    fn wgmma_forms() {
        let d: Vec<String> = (1..=32).map(|k| format!("%f{k}")).collect();
        let i = instr(&format!("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{{}}}, %rd1, %rd2, %p1, 1, 1, 0, 0;", d.join(", "))).unwrap();
        let f = wgmma_form(&i).unwrap();
        assert_eq!((f.n, f.k, f.d_regs), (64, 16, 32));
        // A in registers: one immediate fewer.
        let i = instr(&format!("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{{}}}, {{%r1, %r2, %r3, %r4}}, %rd2, %p1, 1, 1, 0;", d.join(", "))).unwrap();
        assert!(wgmma_form(&i).is_ok());
        // tf32 needs k8; f16 accumulators pack two per register.
        let e = instr(&format!("wgmma.mma_async.sync.aligned.m64n64k16.f32.tf32.tf32 {{{}}}, %rd1, %rd2, %p1, 1, 1;", d.join(", "))).unwrap_err();
        assert!(e.contains("needs a `k8` shape"), "{e}");
        let h: Vec<String> = (1..=16).map(|k| format!("%r{k}")).collect();
        let i = instr(&format!("wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e5m2 {{{}}}, %rd1, %rd2, %p1, 1, 1;", h.join(", "))).unwrap();
        assert_eq!(wgmma_form(&i).unwrap().d_regs, 16);
        // s8 has no n40 shape.
        let i40: Vec<String> = (1..=20).map(|k| format!("%r{k}")).collect();
        let e = instr(&format!("wgmma.mma_async.sync.aligned.m64n40k32.s32.s8.s8 {{{}}}, %rd1, %rd2, 1;", i40.join(", "))).unwrap_err();
        assert!(e.contains("not a shape"), "{e}");
        let e = instr(&format!("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{{}}}, %rd1, %rd2, %p1, 1, 1;", d.join(", "))).unwrap_err();
        assert!(e.contains("takes 8 operands"), "{e}");
    }

    #[test]
    fn sparse_wgmma_forms() {
        // PTX 9.7.15.6: K doubled, sp-meta and sp-sel between b-desc and scale-d.
        let d: Vec<String> = (1..=64).map(|k| format!("%f{k}")).collect();
        let v = |n: usize| d[..n].join(", ");
        let i = instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.f16.f16 {{{}}}, %rd1, %rd2, %r1, 0, %p1, 1, 1, 0, 0;", v(64))).unwrap();
        let f = wgmma_form(&i).unwrap();
        assert_eq!((f.n, f.k, f.a_cols(), f.d_regs, f.sparse, f.scale_d_operand()), (128, 32, 16, 64, true, 5));
        // A in registers: four registers (the packed K/2 columns), one immediate fewer.
        let i = instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.bf16.bf16 {{{}}}, {{%r1, %r2, %r3, %r4}}, %rd2, %r5, 1, %p1, 1, 1, 0;", v(4))).unwrap();
        assert!(wgmma_form(&i).is_ok());
        // tf32 k16, 8-bit k64 with N up to 256 for s8; the dense K is refused.
        assert!(instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n8k16.f32.tf32.tf32 {{{}}}, %rd1, %rd2, %r1, 1, %p1, 1, 1;", v(4))).is_ok());
        assert!(instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n8k64.f16.e4m3.e5m2 {{{}}}, %rd1, %rd2, %r1, 0, %p1, 1, 1;", d[..2].join(", "))).is_ok());
        let r: Vec<String> = (1..=128).map(|k| format!("%r{k}")).collect();
        assert!(instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n256k64.s32.s8.u8.satfinite {{{}}}, %rd1, %rd2, %r1, 0, %p1;", r.join(", "))).is_ok());
        let e = instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n8k16.f32.f16.f16 {{{}}}, %rd1, %rd2, %r1, 0, %p1, 1, 1, 0, 0;", v(4))).unwrap_err();
        assert!(e.contains("needs a `k32` shape"), "{e}");
        let e = instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n40k64.s32.s8.s8 {{{}}}, %rd1, %rd2, %r1, 0, %p1;", r[..20].join(", "))).unwrap_err();
        assert!(e.contains("not a shape"), "{e}");
        // The selector: 0 or 1 for 16/32-bit types, 0 for 8-bit ones, an immediate (ptxas 13.5).
        let e = instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {{{}}}, %rd1, %rd2, %r1, 2, %p1, 1, 1, 0, 0;", v(4))).unwrap_err();
        assert!(e.contains("must be 0 or 1, found 2"), "{e}");
        let e = instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.s8 {{{}}}, %rd1, %rd2, %r1, 1, %p1;", r[..4].join(", "))).unwrap_err();
        assert!(e.contains("must be 0, found 1"), "{e}");
        let e = instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {{{}}}, %rd1, %rd2, %r1, %r2, %p1, 1, 1, 0, 0;", v(4))).unwrap_err();
        assert!(e.contains("sp-sel operand"), "{e}");
        let e = instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {{{}}}, %rd1, %rd2, 68, 0, %p1, 1, 1, 0, 0;", v(4))).unwrap_err();
        assert!(e.contains("sp-meta operand"), "{e}");
        let e = instr(&format!("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {{{}}}, %rd1, %rd2, %r1, 0, %p1, 1, 1;", v(4))).unwrap_err();
        assert!(e.contains("takes 10 operands (d, a, b-desc, sp-meta, sp-sel, scale-d"), "{e}");
    }
}
