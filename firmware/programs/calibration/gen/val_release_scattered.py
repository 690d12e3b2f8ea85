#!/usr/bin/env python3
"""Writes firmware/programs/calibration/val_release_scattered.ptx (validation):
   python3 firmware/programs/calibration/gen/val_release_scattered.py firmware/programs/calibration/val_release_scattered.ptx"""
import timing_head

configs = [  # (warps storing and fencing, stores per thread, scattered?, reporting warps)
    (1, 4, True, [0]),
    (1, 8, True, [0]),
    (4, 8, True, [0, 3]),
    (8, 8, True, [0, 7]),
    (8, 8, False, [0, 7]),
]
figs = []
for (W, n, sc, rep) in configs:
    what = f"{n} st.global.u64 per thread, every lane its own line" if sc else f"{n} coalesced st.global.u32 per warp (one line each)"
    for r in rep:
        figs.append(f"{what}, then fence.acq_rel.gpu by {W} warps: warp {r}'s fence")
ROUNDS = 8
head = timing_head.head(f'''//! Validation (issue 13): a release at gpu scope right after global stores that hold the SM's
//! store path, the shape of `hopsync gpu pack`'s trace stores (each thread's 8-byte slots in its
//! own 512-byte block: every lane of a warp store writes a partial sector of its own line).
//! 1 CTA x 8 warps; per shape, {ROUNDS} rounds: bar.sync, 3000 idle cycles, then the first W warps
//! store and run fence.acq_rel.gpu between two %clock64 reads (PTX 9.7.13.4; ptxas: MEMBAR.ALL.GPU).
//! Lane 0 of the reporting warps stores the fence's cycles in `t`; `done` counts the threads.
//! Written by gen/val_release_scattered.py.''', "val_release_scattered", 256, figs, ROUNDS, buffers=[("g", 163840)]) + f'''{{
	.reg .pred %p<100>;
	.reg .b32 %r<100>;
	.reg .b64 %rd<100>;

	ld.param.u64 %rd1, [g_ptr];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u64 %rd80, [t_ptr];
	cvta.to.global.u64 %rd80, %rd80;
	mov.u32 %r0, %tid.x;
	shr.u32 %r1, %r0, 5;               // warp
	and.b32 %r2, %r0, 31;              // lane
	setp.eq.u32 %p0, %r2, 0;
	mul.wide.u32 %rd2, %r0, 512;
	add.s64 %rd3, %rd1, %rd2;          // this thread's block (scattered shapes)
	mul.wide.u32 %rd4, %r1, 4096;
	add.s64 %rd4, %rd4, 131072;
	add.s64 %rd4, %rd1, %rd4;
	mul.wide.u32 %rd5, %r2, 4;
	add.s64 %rd4, %rd4, %rd5;          // this lane's word of its warp's lines (coalesced shapes)
	cvt.u64.u32 %rd9, %r0;
'''
body = []
fig = 0
for ci, (W, n, sc, rep) in enumerate(configs):
    body.append(f"\t// ---- shape {ci}: {W} warps, {n} {'scattered' if sc else 'coalesced'} stores ----")
    for r in rep:
        body.append(f"\t// ---- figure: {figs[fig + rep.index(r)]} ----")
    body.append(f"\tsetp.ge.u32 %p5, %r1, {W};")
    for k, r in enumerate(rep):
        body.append(f"\tsetp.eq.u32 %p{6+k}, %r1, {r};\n\tand.pred %p{6+k}, %p{6+k}, %p0;")
        body.append(f"\tadd.s64 %rd{81+k}, %rd80, {(fig + k) * ROUNDS * 8};")
    body.append(f"\tmov.u32 %r90, 0;\nround{ci}:\n\t.pragma \"nounroll\";\n\tbar.sync 0;\n\tmov.u64 %rd70, %clock64;\nidle{ci}:\n\tmov.u64 %rd71, %clock64;\n\tsub.s64 %rd72, %rd71, %rd70;\n\tsetp.lt.u64 %p70, %rd72, 3000;\n\t@%p70 bra.uni idle{ci};\n\t@%p5 bra.uni out{ci};")
    for k in range(n):
        if sc:
            body.append(f"\tst.global.u64 [%rd3+{k*8}], %rd9;")
        else:
            body.append(f"\tst.global.u32 [%rd4+{k*128}], %r0;")
    body.append("\tmov.u64 %rd90, %clock64;\n\tfence.acq_rel.gpu;\n\tmov.u64 %rd91, %clock64;\n\tsub.s64 %rd92, %rd91, %rd90;")
    for k in range(len(rep)):
        body.append(f"\t@%p{6+k} st.global.u64 [%rd{81+k}], %rd92;")
    body.append(f"out{ci}:")
    for k in range(len(rep)):
        body.append(f"\tadd.s64 %rd{81+k}, %rd{81+k}, 8;")
    body.append(f"\tadd.u32 %r90, %r90, 1;\n\tsetp.lt.u32 %p90, %r90, {ROUNDS};\n\t@%p90 bra.uni round{ci};")
    fig += len(rep)
tail = '''	bar.sync 0;
	ld.param.u64 %rd95, [done_ptr];
	cvta.to.global.u64 %rd95, %rd95;
	atom.global.add.u32 %r95, [%rd95], 1;
	ret;
}
'''
import sys
open(sys.argv[1], 'w').write(head + "\n".join(body) + "\n" + tail)
