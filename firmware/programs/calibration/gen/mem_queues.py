#!/usr/bin/env python3
"""Writes firmware/programs/calibration/mem_queues.ptx (fit set) and val_mem_queues.ptx (validation):
   python3 firmware/programs/calibration/gen/mem_queues.py firmware/programs/calibration/mem_queues.ptx
   python3 firmware/programs/calibration/gen/mem_queues.py firmware/programs/calibration/val_mem_queues.ptx --val"""
import sys

import timing_head

VAL = len(sys.argv) > 2 and sys.argv[2] == "--val"
ROUNDS = 4
SPIN = 3000
if not VAL:
    NAME, WARPS, VEC, NS, SMALL = "mem_queues", 4, 4, [1, 2, 4, 8, 12, 16], 1
    CPA = ("cg", 16)
else:
    # the validation shape: twice the warps, half the bytes a lane, other counts, 2 warps alone
    NAME, WARPS, VEC, NS, SMALL = "val_mem_queues", 8, 2, [3, 6, 10, 14], 2
    CPA = ("ca", 8)
SAMPLES = WARPS * ROUNDS
LANE = 4 * VEC                      # bytes a lane moves an instruction
INSN = 32 * LANE                    # bytes a warp instruction moves
REGION = INSN * max(NS)             # each warp's own part of buf
V = f".v{VEC}"

# (key, what one warp instruction is, how many warps issue); every figure: N of them back to back
SERIES = [
    ("sts", f"st.shared{V}.u32 ({INSN} B a warp instruction)", WARPS),
    ("lds", f"ld.shared{V}.u32, results used after the clock ({INSN} B)", WARPS),
    ("cpa", f"cp.async.{CPA[0]}.shared.global {CPA[1]} B a lane ({32 * CPA[1]} B, L2)", WARPS),
    ("dst", f"st.shared::cluster{V}.u32 into the other CTA ({INSN} B)", WARPS),
    ("dst1", f"st.shared::cluster{V}.u32 into the other CTA ({INSN} B)", SMALL),
    ("dld", f"ld.shared::cluster{V}.u32 of the other CTA, results used after the clock ({INSN} B)", WARPS),
]

figs = []
for key, what, warps in SERIES:
    who = f"{warps} warps" if warps > 1 else "1 warp"
    for n in NS:
        figs.append(f"{who} x {n} {what} back to back: clock to clock")

out = []
w = out.append
w(timing_head.head(f'''//! {'Validation' if VAL else 'Calibration'} (issue 13 section 2, {'validation' if VAL else 'fit'} set): how many memory instructions the SM takes before a
//! warp's next one waits, and at what rate after that, per path: the queues of the shared-memory
//! pipe (st.shared, ld.shared), of the global path (cp.async, whose traffic no per-warp window
//! limits) and of the distributed-shared-memory port (st / ld.shared::cluster into the other CTA),
//! and the port's bandwidth (PTX 9.7.9.8, 9.7.9.9, 9.7.9.25.3). A cluster of 2 CTAs x {WARPS} warps;
//! rank 0's warps do the timed work, rank 1 holds the remote buffer. Each of {ROUNDS} rounds of a
//! series: every warp spins {SPIN} cycles on %clock64 (the paths drain), bar.sync, an ld.shared and
//! its use (the barrier has released the warp), then the clock, then N back-to-back instructions
//! of {INSN} bytes each (lane i at {LANE} i), the clock after the last; lane 0 of each issuing warp
//! stores the difference (the {SMALL}-warp series: its warps run {WARPS // SMALL} times the
//! rounds). Loaded values are combined after the last clock and stored to `sum`; cp.async is
//! waited for after it. `done` counts the threads. Written by gen/mem_queues.py{' --val' if VAL else ''}.''', NAME, 32 * WARPS, figs, SAMPLES, buffers=(("g", WARPS * REGION), ("sum", 2048)), ctas=2) + f'''{{
	.reg .pred %p<100>;
	.reg .b32 %r<200>;
	.reg .b64 %rd<100>;
	.shared .align 16 .b8 buf[{WARPS * REGION}];
	.shared .align 4 .b32 flag;

	ld.param.u64 %rd80, [t_ptr];
	cvta.to.global.u64 %rd80, %rd80;
	ld.param.u64 %rd81, [g_ptr];
	cvta.to.global.u64 %rd81, %rd81;
	mov.u32 %r0, %tid.x;
	shr.u32 %r1, %r0, 5;
	and.b32 %r2, %r0, 31;
	mov.u32 %r3, %cluster_ctarank;
	setp.eq.u32 %p0, %r2, 0;        // lane 0 reports its warp's figures
	setp.eq.u32 %p1, %r3, 0;        // rank 0 does the timed work
	setp.lt.u32 %p2, %r1, {SMALL};
	and.pred %p5, %p1, %p2;         // rank 0's warps of the {SMALL}-warp series
	mul.lo.u32 %r19, %r1, {SAMPLES // SMALL};  // their first sample
	mul.lo.u32 %r6, %r1, {REGION};  // this warp's part of buf ({max(NS)} instructions x {INSN} bytes)
	mul.lo.u32 %r7, %r2, {LANE};    // this lane's {LANE} bytes of each {INSN}
	mov.u32 %r10, buf;
	add.u32 %r10, %r10, %r6;
	add.u32 %r10, %r10, %r7;        // st/ld.shared and cp.async: buf + warp part + lane's bytes
	xor.b32 %r5, %r3, 1;
	mapa.shared::cluster.u32 %r11, %r10, %r5;          // the same bytes of the other CTA's buf
	mov.u32 %r13, 1;
	cvt.u64.u32 %rd1, %r6;
	add.s64 %rd20, %rd81, %rd1;
	cvt.u64.u32 %rd2, %r7;
	add.s64 %rd20, %rd20, %rd2;     // cp.async source: the same offsets in g
	mov.u32 %r8, flag;
	setp.eq.u32 %p3, %r0, 0;
	@%p3 st.shared.u32 [%r8], %r13;
	mov.u32 %r9, 0;                 // the combined loaded values
	shl.b32 %r14, %r1, 2;           // this warp's first sample: warp * {ROUNDS}
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
''')
assert ROUNDS == 4

fig = 0
for key, what, warps in SERIES:
    if key in ("sts", "dst"):
        # the stored data: a register quad a store, set outside the windows (with one quad for all,
        # ptxas copies it for each store inside the window)
        for i in range(VEC * max(NS)):
            w(f"\tadd.u32 %r{100 + i}, %r0, {i};\n")
    issuing = "%p1" if warps == WARPS else "%p5"
    rounds = SAMPLES // warps       # a series of fewer warps runs more rounds: every figure has SAMPLES
    first = "%r14" if warps == WARPS else "%r19"
    for n in NS:
        lab = f"{key}_{n}"
        w(timing_head.window_open(lab, figs[fig], SPIN, issuing))
        for i in range(n):
            off = INSN * i             # each instruction its own bytes: none merged or dead
            regs = "{" + ", ".join(f"%r{100 + VEC * i + j}" for j in range(VEC)) + "}"
            if key == "sts":
                w(f"\tst.shared{V}.u32 [%r10+{off}], {regs};\n")
            elif key == "lds":
                w(f"\tld.shared{V}.u32 {regs}, [%r10+{off}];\n")
            elif key == "cpa":
                for j in range(LANE // CPA[1]):
                    o = off + j * CPA[1] * 32
                    w(f"\tcp.async.{CPA[0]}.shared.global [%r10+{o}], [%rd20+{o}], {CPA[1]};\n")
            elif key in ("dst", "dst1"):
                w(f"\tst.shared::cluster{V}.u32 [%r11+{off}], {regs};\n")
            elif key == "dld":
                w(f"\tld.shared::cluster{V}.u32 {regs}, [%r11+{off}];\n")
        w("\tmov.u64 %rd31, %clock64;\n")
        if key in ("lds", "dld"):
            for i in range(VEC * n):
                w(f"\txor.b32 %r9, %r9, %r{100 + i};\n")
        if key == "cpa":
            w("\tcp.async.wait_all;\n")
        # lane 0 stores the window at t[fig * SAMPLES + warp * rounds + round]
        w(timing_head.window_close(lab, first, fig * SAMPLES, rounds))
        fig += 1

w(f'''	// rank 1's shared memory stays until rank 0's remote accesses are done
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	ld.param.u64 %rd6, [sum_ptr];
	cvta.to.global.u64 %rd6, %rd6;
	mul.lo.u32 %r18, %r3, {32 * WARPS};
	add.u32 %r18, %r18, %r0;
	mul.wide.u32 %rd7, %r18, 4;
	add.s64 %rd6, %rd6, %rd7;
	st.global.u32 [%rd6], %r9;
	ld.param.u64 %rd8, [done_ptr];
	cvta.to.global.u64 %rd8, %rd8;
	red.global.add.u32 [%rd8], 1;
	ret;
}}
''')
open(sys.argv[1], "w").write("".join(out))
