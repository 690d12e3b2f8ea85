#!/usr/bin/env python3
"""Writes calibration/smem_cas_atomics.ptx (fit) and calibration/val_smem_cas_atomics.ptx (validation):
   python3 firmware/programs/calibration/gen/smem_cas.py firmware/programs/calibration"""
import sys

import timing_head
ROUNDS = 8
# (label, op text, warps running it, lanes per address (32: all one address, 1: each its own), reporting warp)
FIT = [
    ("1 warp, 32 lanes on one word: atom.shared.add.f32 + use", "add.f32", "f", 1, 32),
    ("1 warp, each lane its own word: atom.shared.add.f32 + use", "add.f32", "f", 1, 1),
    ("1 warp, 8 lanes a word (4 words): atom.shared.add.f32 + use", "add.f32", "f", 1, 8),
    ("2 warps, 64 lanes on one word: atom.shared.add.f32 + use, warp 0", "add.f32", "f", 2, 32),
    ("1 warp, 32 lanes on one word: atom.shared.add.u32 + use (native ATOMS.ADD)", "add.u32", "r", 1, 32),
]
VAL = [
    ("1 warp, 32 lanes on one word: atom.shared.add.u64 + use", "add.u64", "d", 1, 32),
    ("1 warp, 16 lanes a word (2 words): atom.shared.add.f64 + use", "add.f64", "fd", 1, 16),
    ("4 warps, 128 lanes on one word: atom.shared.add.f32 + use, warp 0", "add.f32", "f", 4, 32),
    ("1 warp, 4 lanes a word (8 words): red.shared.add.f32 then ld.shared of the word", "red:add.f32", "f", 1, 4),
]
def prog(name, figs, kind):
    head = timing_head.head(f'''//! {kind} (issue 13): shared-memory atomics ptxas emulates (PTX 9.7.13.5 atom / red on .shared with
//! .add.f32, .add.f64, .add.u64, f16/bf16; SASS: LDS, the operation, ATOMS.CAST.SPIN and a branch back
//! while the compare failed): lanes on one word succeed one per pass, so a warp's 32 lanes on one
//! word take 32 passes. 4 warps (128 threads); per figure, {ROUNDS} rounds: bar.sync, then the warps
//! named run the atomic between two %clock64 reads (its result used first); lane 0 of warp 0 stores
//! the cycles in `t`; `done` counts the threads. Written by gen/smem_cas.py.''', name, 128, [f[0] for f in figs], ROUNDS) + f'''{{
	.reg .pred %p<100>;
	.reg .b32 %r<100>;
	.reg .f32 %f<100>;
	.reg .f64 %fd<100>;
	.reg .b64 %rd<100>;
	.shared .align 8 .b64 words[32];

	ld.param.u64 %rd80, [t_ptr];
	cvta.to.global.u64 %rd80, %rd80;
	mov.u32 %r0, %tid.x;
	shr.u32 %r1, %r0, 5;               // warp
	and.b32 %r2, %r0, 31;              // lane
	setp.eq.u32 %p0, %r0, 0;           // reports
	cvt.rn.f32.u32 %f1, %r0;
	cvt.rn.f64.u32 %fd1, %r0;
	cvt.u64.u32 %rd1, %r0;
	mov.u32 %r3, %r0;
	mov.u32 %r10, words;
	mov.f32 %f50, 0f00000000;
	mov.f64 %fd50, 0d0000000000000000;
	mov.u64 %rd50, 0;
	mov.u32 %r50, 0;
'''
    body = []
    for i, (label, op, ty, W, per) in enumerate(figs):
        red = op.startswith("red:")
        opn = op[4:] if red else op
        words = 32 // per
        body.append(f"\t// ---- figure: {label} ----")
        body.append(f"\tsetp.ge.u32 %p5, %r1, {W};")
        # word index of this lane: lane / per ; 8-byte words
        body.append(f"\tdiv.u32 %r11, %r2, {per};\n\tshl.b32 %r11, %r11, 3;\n\tadd.u32 %r12, %r10, %r11;")
        body.append(f"\tadd.s64 %rd81, %rd80, {i * ROUNDS * 8};\n\tmov.u32 %r90, 0;\nround{i}:\n\t.pragma \"nounroll\";\n\tbar.sync 0;\n\t@%p5 bra.uni out{i};")
        body.append("\tmov.u64 %rd90, %clock64;")
        src = {"f": "%f1", "r": "%r3", "d": "%rd1", "fd": "%fd1"}[ty]
        dst = {"f": "%f2", "r": "%r4", "d": "%rd2", "fd": "%fd2"}[ty]
        acc = {"f": "add.f32 %f50, %f50, %f2;", "r": "add.u32 %r50, %r50, %r4;", "d": "add.s64 %rd50, %rd50, %rd2;", "fd": "add.f64 %fd50, %fd50, %fd2;"}[ty]
        if red:
            body.append(f"\tred.shared.{opn} [%r12], {src};\n\tld.shared.{opn.split('.')[1]} {dst}, [%r12];")
        else:
            body.append(f"\tatom.shared.{opn} {dst}, [%r12], {src};")
        body.append(f"\t{acc}")
        body.append("\tmov.u64 %rd91, %clock64;\n\tsub.s64 %rd92, %rd91, %rd90;\n\t@%p0 st.global.u64 [%rd81], %rd92;")
        body.append(f"out{i}:\n\tadd.s64 %rd81, %rd81, 8;\n\tadd.u32 %r90, %r90, 1;\n\tsetp.lt.u32 %p90, %r90, {ROUNDS};\n\t@%p90 bra.uni round{i};")
    tail = '''	// keep the accumulators live
	cvt.rzi.u32.f32 %r60, %f50;
	cvt.rzi.u32.f64 %r61, %fd50;
	cvt.u32.u64 %r62, %rd50;
	add.u32 %r60, %r60, %r61;
	add.u32 %r60, %r60, %r62;
	add.u32 %r60, %r60, %r50;
	setp.eq.u32 %p60, %r60, 0xffffffff;
	bar.sync 0;
	ld.param.u64 %rd95, [done_ptr];
	cvta.to.global.u64 %rd95, %rd95;
	@%p60 bra.uni skip;
	atom.global.add.u32 %r95, [%rd95], 1;
skip:
	ret;
}
'''
    return head + "\n".join(body) + "\n" + tail
d = sys.argv[1]
open(f"{d}/smem_cas_atomics.ptx", "w").write(prog("smem_cas_atomics", FIT, "Calibration"))
open(f"{d}/val_smem_cas_atomics.ptx", "w").write(prog("val_smem_cas_atomics", VAL, "Validation"))
