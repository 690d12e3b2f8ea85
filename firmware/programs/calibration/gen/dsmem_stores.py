#!/usr/bin/env python3
"""Writes firmware/programs/calibration/val_dsmem_stores.ptx (validation set):
   python3 firmware/programs/calibration/gen/dsmem_stores.py firmware/programs/calibration/val_dsmem_stores.ptx"""
import sys

import timing_head

WARPS = 8
SAMPLES = 16
SPIN = 3000
NS = [4, 8, 16]
# (bytes a lane, the vector suffix, how many warps store at once)
SERIES = [(4, "", w) for w in (1, 2, 4, 8)] + [(8, ".v2", w) for w in (1, 2, 4, 8)] + [(16, ".v4", w) for w in (1, 2, 4)]
REGION = 16 * 32 * max(NS)          # each warp's own bytes of the other CTA's buf (the widest)
BUF = REGION * 4                    # the widest series has 4 warps; narrower ones fit 8 in it

figs = []
for lane, vec, warps in SERIES:
    who = f"{warps} warps" if warps > 1 else "1 warp"
    for n in NS:
        figs.append(f"{who} x {n} st.shared::cluster{vec}.u32 into the other CTA ({32 * lane} B a warp instruction) back to back: clock to clock")

out = []
w = out.append
w(timing_head.head(f'''//! Validation (issue 13 section 2, validation set): the rate of generic stores into another CTA's shared
//! memory (st.shared::cluster: ST.E / ST.E.64 / ST.E.128 through the shared window, PTX 9.7.9.9),
//! by the bytes a lane stores (4, 8, 16) and by how many warps store at once (1..8): mem_queues.ptx
//! found 4 warps' 16-byte stores at ~21 B/cycle but val_mem_queues.ptx 8 warps' 8-byte ones at
//! several times that. A cluster of 2 CTAs x {WARPS} warps; rank 0's warps store, rank 1 holds
//! `buf`. Each round of a series: every warp spins {SPIN} cycles on %clock64 (the port drains),
//! bar.sync, an ld.shared and its use, the clock, N back-to-back stores of the warp (each its own
//! bytes, each its own register data, so ptxas neither merges them nor puts moves in the window),
//! the clock; lane 0 of each storing warp stores the difference ({SAMPLES} samples a figure: a series
//! of W warps runs {SAMPLES}/W rounds). `done` counts the threads. Written by
//! gen/dsmem_stores.py.
//! What a window times depends on ptxas's registers (H100, 2026-11-28, the same on every run): a
//! warp issues an ST.E.x every 4 cycles whatever its width (here: 1 warp x 4 / 8 16-byte stores
//! 44 / 60 cycles), but where ptxas gives the closing CS2R a register of the stores' 64-bit
//! generic address, the clock read waits on the last store's read barrier, until its data has
//! left (every window of mem_queues.ptx: 1 warp x 4 / 8 / 16 16-byte stores 86 / 134 / 230; here
//! only the 16-byte x 16 windows: 1 warp 112, not explained). The model times the issue at the
//! data's rate (it follows mem_queues.ptx), so the windows here that see only the issue are
//! slow in it.''', "val_dsmem_stores", 32 * WARPS, figs, SAMPLES, ctas=2) + f'''{{
	.reg .pred %p<100>;
	.reg .b32 %r<200>;
	.reg .b64 %rd<100>;
	.shared .align 16 .b8 buf[{BUF}];
	.shared .align 4 .b32 flag;

	ld.param.u64 %rd80, [t_ptr];
	cvta.to.global.u64 %rd80, %rd80;
	mov.u32 %r0, %tid.x;
	shr.u32 %r1, %r0, 5;
	and.b32 %r2, %r0, 31;
	mov.u32 %r3, %cluster_ctarank;
	setp.eq.u32 %p0, %r2, 0;        // lane 0 reports its warp's figures
	setp.eq.u32 %p1, %r3, 0;        // rank 0 stores
	xor.b32 %r5, %r3, 1;
	mov.u32 %r8, flag;
	setp.eq.u32 %p3, %r0, 0;
	mov.u32 %r13, 1;
	@%p3 st.shared.u32 [%r8], %r13;
	mov.u32 %r9, 0;
'''
)
for i in range(4 * max(NS)):
    w(f"\tadd.u32 %r{100 + i}, %r0, {i};\n")
w('''	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
''')

fig = 0
for lane, vec, warps in SERIES:
    insn = 32 * lane
    region = insn * max(NS)
    rounds = SAMPLES // warps
    v = len(vec) and int(vec[2:]) or 1
    key = f"{lane}_{warps}"
    w(f'''	// ---- series: {warps} warp(s), {lane} bytes a lane ----
	setp.lt.u32 %p2, %r1, {warps};
	and.pred %p5, %p1, %p2;         // rank 0's storing warps
	mul.lo.u32 %r6, %r1, {region};  // this warp's part of buf
	mul.lo.u32 %r7, %r2, {lane};    // this lane's bytes of each instruction
	mov.u32 %r10, buf;
	add.u32 %r10, %r10, %r6;
	add.u32 %r10, %r10, %r7;
	mapa.shared::cluster.u32 %r11, %r10, %r5;          // the same bytes of the other CTA's buf
	mul.lo.u32 %r14, %r1, {rounds};  // this warp's first sample
''')
    for n in NS:
        lab = f"{key}_{n}"
        w(timing_head.window_open(lab, figs[fig], SPIN, "%p5"))
        for i in range(n):
            regs = "{" + ", ".join(f"%r{100 + v * i + j}" for j in range(v)) + "}" if v > 1 else f"%r{100 + i}"
            w(f"\tst.shared::cluster{vec}.u32 [%r11+{insn * i}], {regs};\n")
        w("\tmov.u64 %rd31, %clock64;\n")
        w(timing_head.window_close(lab, "%r14", fig * SAMPLES, rounds))
        fig += 1

w('''	// rank 1's shared memory stays until rank 0's stores are done
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	ld.param.u64 %rd8, [done_ptr];
	cvta.to.global.u64 %rd8, %rd8;
	setp.ne.u32 %p6, %r9, 12345;    // the flag loads are used
	selp.u32 %r18, 1, 0, %p6;
	red.global.add.u32 [%rd8], %r18;
	ret;
}
''')
open(sys.argv[1], "w").write("".join(out))
