//! parse -> print -> parse is the identity on every program in the repository.

use hopsync_firmware::{parser::parse_module, printer::print_module, Program};
use std::path::{Path, PathBuf};

fn ptx_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            ptx_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "ptx") {
            out.push(p);
        }
    }
}

#[test]
fn every_good_program_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs");
    let mut files = Vec::new();
    ptx_files(&root, &mut files);
    let mut checked = 0;
    for f in files {
        if f.components().any(|c| c.as_os_str() == "bad") {
            continue;
        }
        let prog = Program::load(&f).unwrap_or_else(|d| panic!("{d}"));
        let text = print_module(&prog.module);
        let again = parse_module(&text).unwrap_or_else(|d| panic!("{}: reprint does not parse:\n{d}\n{text}", f.display()));
        assert_eq!(prog.module, again, "{}: round trip differs", f.display());
        assert_eq!(text, print_module(&again), "{}: printing is not stable", f.display());
        checked += 1;
    }
    assert!(checked > 0);
}

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\t.reg .b32 %r<4>;\n";

/// nvcc wraps inline asm in `{ .reg .pred p; ... }` blocks, several per kernel: a block-local
/// register shadows outer ones and is gone after its `}` (PTX 4.4.1); the printed module names
/// each register once.
#[test]
fn block_local_registers_shadow_and_end_with_their_block() {
    let src = format!(
        "{HEAD}\t.reg .pred p;\n\t{{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %r1, 0;\n\tselp.b32 %r2, 1, 0, p;\n\t}}\n\t{{\n\t.reg .pred p;\n\t.reg .b32 %r<2>;\n\tsetp.ne.u32 p, %r0, 1;\n\t}}\n\tselp.b32 %r3, 1, 0, p;\n\tmov.u32 %r0, WARP_SZ;\n\tret;\n}}\n"
    );
    let m = parse_module(&src).unwrap_or_else(|d| panic!("{d}"));
    let names: Vec<&str> = m.kernel.regs.iter().map(|r| r.name.as_str()).collect();
    assert!(names.contains(&"p") && names.contains(&"p$1") && names.contains(&"p$2") && names.contains(&"%r0$1"), "{names:?}");
    let text = print_module(&m);
    assert_eq!(parse_module(&text).unwrap_or_else(|d| panic!("{d}\n{text}")), m);
    // The block's `p` is not the outer one; after the blocks `p` is the outer one again.
    assert!(text.contains("setp.eq.u32 p$1, %r1, 0;") && text.contains("setp.ne.u32 p$2, %r0$1, 1;"), "{text}");
    assert!(text.contains("selp.b32 %r3, 1, 0, p;") && text.contains("mov.u32 %r0, 32;"), "{text}");

    // A register declared only inside a block is undeclared after it.
    let e = parse_module(&format!("{HEAD}\t{{\n\t.reg .pred q;\n\t}}\n\tselp.b32 %r3, 1, 0, q;\n\tret;\n}}\n")).unwrap_err();
    assert!(e.to_string().contains("`q`"), "{e}");
    // Twice in one block is still an error.
    let e = parse_module(&format!("{HEAD}\t{{\n\t.reg .pred q;\n\t.reg .pred q;\n\t}}\n\tret;\n}}\n")).unwrap_err();
    assert!(e.to_string().contains("register `q` is declared twice"), "{e}");
}

/// A negative address offset prints as nvcc writes it, `[%rd2+-636]`: ptxas rejects `[%rd2-636]`
/// (CUTLASS's kernels address their `Params` struct backwards from a member).
#[test]
fn negative_address_offsets_print_as_ptxas_reads_them() {
    let src = format!("{HEAD}\t.reg .b64 %rd<4>;\n\tld.global.u32 %r1, [%rd2+-636];\n\tret;\n}}\n");
    let m = parse_module(&src).unwrap_or_else(|d| panic!("{d}"));
    let text = print_module(&m);
    assert!(text.contains("[%rd2+-636]"), "{text}");
    assert_eq!(parse_module(&text).unwrap_or_else(|d| panic!("{d}\n{text}")), m);
}

/// `.pragma "nounroll"` at its three scopes (PTX ISA, Pragma Strings): module, entry (between the
/// header and the body) and statement (inside a loop's header block) are kept where they stand
/// and printed back there: the timing model reads them (ptxas does not unroll such loops).
#[test]
fn pragmas_are_kept_at_module_entry_and_statement_scope() {
    let src = ".version 8.0\n.target sm_90\n.address_size 64\n.pragma \"nounroll\";\n.visible .entry k()\n.pragma \"nounroll\";\n{\n\t.reg .b32 %r<4>;\n\t.reg .pred %p<2>;\n\tmov.u32 %r1, 0;\nL:\n\t.pragma \"nounroll\";\n\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 8;\n\t@%p1 bra L;\n\tret;\n}\n";
    let m = parse_module(src).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(m.kernel.module_pragmas, vec!["nounroll".to_string()]);
    assert_eq!(m.funcs[m.entry.0 as usize].directives, vec![".pragma \"nounroll\";".to_string()]);
    assert_eq!(m.kernel.pragmas, vec![(1, "nounroll".to_string())]);
    let text = print_module(&m);
    assert_eq!(parse_module(&text).unwrap_or_else(|d| panic!("{d}\n{text}")), m);
    assert_eq!(text.matches(".pragma \"nounroll\";").count(), 3, "{text}");
}

/// CUTLASS's inline asm writes blanks between a mnemonic and its type (`lop3 .b32`,
/// `xor  .b32`: cutlass/detail/collective/mixed_input_utils.hpp), which ptxas accepts: the same
/// instruction as without them, a bad modifier still pointed at itself.
#[test]
fn blanks_between_the_mnemonic_and_its_modifiers_are_the_same_instruction() {
    let body = |ins: &str| format!("{HEAD}\t{ins}\n\tret;\n}}\n");
    let spaced = parse_module(&body("lop3 .b32 %r1, %r2, -256, %r3, 106;\n\txor  .b32 %r0, %r1, %r2;\n\tprmt .b32 %r3, %r0, %r1, 0x5410;")).unwrap_or_else(|d| panic!("{d}"));
    let tight = parse_module(&body("lop3.b32 %r1, %r2, -256, %r3, 106;\n\txor.b32 %r0, %r1, %r2;\n\tprmt.b32 %r3, %r0, %r1, 0x5410;")).unwrap_or_else(|d| panic!("{d}"));
    let ops = |m: &hopsync_firmware::ir::Module| m.kernel.body.iter().map(|i| (i.op, i.mods.clone(), i.operands.clone())).collect::<Vec<_>>();
    assert_eq!(ops(&spaced), ops(&tight));
    assert_eq!(print_module(&spaced), print_module(&tight));
    let bad = "xor  .b32 .sat %r0, %r1, %r2;";
    let err = parse_module(&body(bad)).unwrap_err();
    // the tab is column 1
    assert_eq!((err.loc.line, err.loc.col), (7, bad.find("sat").unwrap() as u32 + 2), "{err}");
}

/// A vector register (`.reg .v2 .f32 mx;`, PTX 5.4.2: cutlass/epilogue/fusion/
/// sm90_visitor_topk_softmax.hpp) is its elements `mx.x`, `mx.y` (`.r`, `.g` the same), which
/// print as scalar registers ptxas takes; the whole vector as an operand is named unsupported.
#[test]
fn a_vector_register_is_its_elements() {
    let src = format!(
        "{HEAD}\t{{\n\t.reg .v2 .f32 mx;\n\t.reg .pred p;\n\tmov.b32 mx.x, %r1;\n\tmov.b32 mx.g, %r2;\n\tsetp.gtu.f32 p, mx.r, mx.y;\n\tselp.b32 %r3, %r1, %r2, p;\n\t}}\n\tret;\n}}\n"
    );
    let m = parse_module(&src).unwrap_or_else(|d| panic!("{d}"));
    let names: Vec<&str> = m.kernel.regs.iter().map(|r| r.name.as_str()).collect();
    assert!(names.contains(&"mx_x") && names.contains(&"mx_y"), "{names:?}");
    let text = print_module(&m);
    assert!(text.contains("mx_x") && !text.contains("mx.x"), "{text}");
    assert_eq!(parse_module(&text).unwrap_or_else(|d| panic!("{d}\n{text}")), m);
    let whole = format!("{HEAD}\t.reg .v4 .b32 v;\n\tmov.b32 %r0, v;\n\tret;\n}}\n");
    let err = parse_module(&whole).unwrap_err();
    assert!(err.msg.contains("unsupported: the vector register `v` as a whole operand"), "{err}");
}

/// An unsupported instruction with a vector operand (`mma.sp ... {%f1, ...}`) is one
/// error: the rest of the function parses (its `}` closes no block).
#[test]
fn a_bad_statements_vector_operand_closes_no_block() {
    let src = format!(
        "{HEAD}\t.reg .f32 %f<4>;\n\t.reg .b64 %rd<4>;\n\tmma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {{%f0, %f1, %f2, %f3}}, {{%r0, %r1, %r2, %r3}}, {{%r0, %r1, %r2, %r3}}, {{%f0, %f1, %f2, %f3}}, %r0, 0;\n\tbra.uni L;\nL:\n\tret;\n}}\n"
    );
    let prog = Program::parse("sp.ptx", &format!("//! [launch]\n//! grid = [1, 1, 1]\n//! block = [128, 1, 1]\n{src}"));
    let err = prog.unwrap_err();
    let all: Vec<String> = std::iter::once(err.msg.clone()).chain(err.also.iter().map(|d| d.msg.clone())).collect();
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(all[0].contains("unsupported: sparse `mma.sp`"), "{all:?}");
}

/// The sparse warpgroup MMA (PTX 9.7.15.6) as CUTLASS example 62 writes it (`.satfinite` after
/// the types, sp-sel an immediate) prints in the table's order and parses back to itself.
#[test]
fn sparse_wgmma_round_trips() {
    let d: Vec<String> = (0..64).map(|k| format!("%f{k}")).collect();
    let r: Vec<String> = (0..4).map(|k| format!("%r{k}")).collect();
    let src = format!(
        ".version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n\t.reg .b32 %r<8>;\n\t.reg .f32 %f<64>;\n\t.reg .b64 %rd<4>;\n\t.reg .pred p;\n\
         \twgmma.mma_async.sp.sync.aligned.m64n128k32.f32.f16.f16 {{{d}}}, %rd1, %rd2, %r5, 0, p, 1, 1, 0, 0;\n\
         \twgmma.mma_async.sp.sync.aligned.m64n8k16.f32.tf32.tf32 {{{d4}}}, {{{r}}}, %rd2, %r5, 1, p, -1, 1;\n\
         \twgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.u8.satfinite {{{r}}}, %rd1, %rd2, %r5, 0, 1;\n\tret;\n}}\n",
        d = d.join(", "),
        d4 = d[..4].join(", "),
        r = r.join(", "),
    );
    let m = parse_module(&src).unwrap_or_else(|e| panic!("{e}"));
    let text = print_module(&m);
    assert!(text.contains("wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.f16.f16 {%f0, "), "{text}");
    assert!(text.contains("%rd1, %rd2, %r5, 0, p, 1, 1, 0, 0;"), "{text}");
    assert!(text.contains("wgmma.mma_async.sp.sync.aligned.m64n8k64.satfinite.s32.s8.u8 {%r0, %r1, %r2, %r3}, %rd1, %rd2, %r5, 0, 1;"), "{text}");
    assert!(text.contains("{%r0, %r1, %r2, %r3}, %rd2, %r5, 1, p, -1, 1;"), "{text}");
    let again = parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(m, again);
    assert_eq!(text, print_module(&again));
}
