#!/usr/bin/env python3
"""Writes firmware/programs/calibration/mbar_handoff.ptx (fit set):
   python3 firmware/programs/calibration/gen/mbar_handoff.py firmware/programs/calibration/mbar_handoff.ptx"""
import sys

import timing_head

ROUNDS = 8
# (figure, wait instruction, what the arriver does before its arrive, what the waiter does after
# its loop before its clock read, the arriver's delay in cycles)
TRY = "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p1, [%r20], %r14;"
TEST = "mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p1, [%r20], %r14;"
HINT = "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p1, [%r20], %r14, 10000;"
STORE = "@%p4 st.shared.u64 [%r23], %rd96;"
USE = "ld.shared.u64 %rd93, [%r23];\n\tadd.s64 %rd12, %rd12, %rd93;"
shapes = [
    ("hand-off: arrive 300 cycles into a try_wait loop (no hint) -> the waiter's clock after its loop", TRY, "", "", 300),
    ("hand-off: arrive 20 cycles into a try_wait loop (no hint) -> the waiter's clock after its loop", TRY, "", "", 20),
    ("hand-off: st.shared then arrive, 300 cycles into a try_wait loop -> the waiter's clock after its loop", TRY, STORE, "", 300),
    ("hand-off: arrive 300 cycles into a try_wait loop -> the waiter's ld.shared + use, then its clock", TRY, "", USE, 300),
    ("hand-off: arrive 300 cycles into a test_wait loop -> the waiter's clock after its loop", TEST, "", "", 300),
    ("hand-off: arrive 300 cycles into a try_wait with hint 10000 ns -> the waiter's clock after it", HINT, "", "", 300),
]
RING = "4-warp ring over 4 mbarriers (try_wait loops): warp 1's arrive -> warp 2's clock after its loop"
figs = [s[0] for s in shapes] + [RING]

out = []
w = out.append
w(timing_head.head(f'''//! Calibration (issue 13 section 2, fit set): the mbarrier hand-off, arrive to the waiter's next
//! instruction, with nothing else in the path (PTX 9.7.13.15.13, 9.7.13.15.16). Both clocks are
//! read by the warps themselves: the arriver's right before its arrive, the waiter's right after
//! its wait loop; each warp keeps its round's stamp in shared memory (stored after the arrive and
//! after the clock read, off the path) and thread 0 stores the differences in `t` at the end. 1
//! CTA x 4 warps, {ROUNDS} rounds a shape: bar.sync, warp 1 spins D cycles on %clock64 and its lane
//! 0 arrives (release) on a count-1 barrier warp 0 waits on. The shapes: a try_wait loop 300 and
//! 20 cycles in; a st.shared right before the arrive (what mbar_wake_regaddr.ptx's arriver does);
//! the waiter's ld.shared + use before its clock (what mbar_wake_regaddr.ptx's waiter does); a
//! test_wait loop; a try_wait with a suspend-time hint. Then a 4-warp ring (warp w waits on its own
//! barrier, then arrives on warp w+1's; warp 0 arrives first), {ROUNDS} laps: warp 1's arrive to
//! warp 2's clock after its loop. `done` counts the threads. Written by gen/mbar_handoff.py.''', "mbar_handoff", 128, figs, ROUNDS) + f'''{{
	.reg .pred %p<100>;
	.reg .b32 %r<100>;
	.reg .b64 %rd<100>;
	.shared .align 8 .b64 bar[4];
	.shared .align 8 .b64 sa[32];
	.shared .align 8 .b64 sw[32];
	.shared .align 8 .b64 scratch;

	ld.param.u64 %rd80, [t_ptr];
	cvta.to.global.u64 %rd80, %rd80;
	mov.u32 %r0, %tid.x;
	shr.u32 %r1, %r0, 5;
	and.b32 %r2, %r0, 31;
	setp.eq.u32 %p0, %r0, 0;
	setp.eq.u32 %p4, %r0, 32;
	setp.eq.u32 %p3, %r2, 0;
	setp.eq.u32 %p5, %r1, 1;
	setp.eq.u32 %p7, %r1, 0;
	mov.u32 %r20, bar;
	mov.u32 %r21, sa;
	mov.u32 %r22, sw;
	mov.u32 %r23, scratch;
	setp.lt.u32 %p8, %r0, 4;
	shl.b32 %r24, %r0, 3;
	add.u32 %r24, %r24, %r20;
	@%p8 mbarrier.init.shared::cta.b64 [%r24], 1;
	mov.u64 %rd12, 0;
	mov.u64 %rd1, 1;
	@%p0 st.shared.u64 [%r23], %rd1;
	mov.u32 %r14, 0;                // bar[0]'s phase parity
	bar.sync 0;
''')


def report(n):
    """Thread 0 stores sw[k] - sa[k] for each round's stamps."""
    w(f'''	bar.sync 0;
	@!%p0 bra wskip{n};
	mov.u32 %r90, 0;
wr{n}:
	shl.b32 %r40, %r90, 3;
	add.u32 %r41, %r21, %r40;
	ld.shared.u64 %rd1, [%r41];
	add.u32 %r42, %r22, %r40;
	ld.shared.u64 %rd2, [%r42];
	sub.s64 %rd3, %rd2, %rd1;
	st.global.u64 [%rd80], %rd3;
	add.s64 %rd80, %rd80, 8;
	add.u32 %r90, %r90, 1;
	setp.lt.u32 %p90, %r90, {ROUNDS};
	@%p90 bra wr{n};
wskip{n}:
	bar.sync 0;
''')


for n, (fig, wait, before, after, delay) in enumerate(shapes):
    w(f'''	// ---- figure: {fig} ----
	mov.u32 %r90, 0;
round{n}:
	bar.sync 0;
	shl.b32 %r40, %r90, 3;
	@%p5 bra arr{n};
	@!%p7 bra out{n};
poll{n}:
	{wait}
	@!%p1 bra poll{n};
''')
    if after:
        w(f"\t{after}\n")
    w(f'''	mov.u64 %rd91, %clock64;
	add.u32 %r41, %r22, %r40;
	@%p0 st.shared.u64 [%r41], %rd91;
	bra out{n};
arr{n}:
	mov.u64 %rd95, %clock64;
spin{n}:
	mov.u64 %rd96, %clock64;
	sub.s64 %rd96, %rd96, %rd95;
	setp.lt.s64 %p95, %rd96, {delay};
	@%p95 bra spin{n};
''')
    if before:
        w(f"\t{before}\n")
    w(f'''	mov.u64 %rd97, %clock64;
	@%p4 mbarrier.arrive.release.cta.shared::cta.b64 _, [%r20];
	add.u32 %r41, %r21, %r40;
	@%p4 st.shared.u64 [%r41], %rd97;
out{n}:
	xor.b32 %r14, %r14, 1;
	add.u32 %r90, %r90, 1;
	setp.lt.u32 %p90, %r90, {ROUNDS};
	@%p90 bra round{n};
''')
    report(n)

# the ring: warp w waits on bar[w] and arrives on bar[(w + 1) % 4]; warp 0 arrives first. Warp 1
# stamps its arrive into sa[k], warp 2 its wake into sw[k].
n = len(shapes)
w(f'''	// ---- figure: {RING} ----
	add.u32 %r30, %r1, 1;
	and.b32 %r30, %r30, 3;
	shl.b32 %r30, %r30, 3;
	add.u32 %r30, %r30, %r20;       // the next warp's barrier
	shl.b32 %r31, %r1, 3;
	add.u32 %r31, %r31, %r20;       // this warp's barrier
	setp.eq.u32 %p9, %r1, 2;
	and.pred %p10, %p9, %p3;        // warp 2's lane 0 stamps its wake
	and.pred %p11, %p5, %p3;        // warp 1's lane 0 stamps its arrive
	mov.u32 %r15, 0;                // this warp's barrier's phase parity
	mov.u32 %r90, 0;
lap{n}:
	.pragma "nounroll";
	shl.b32 %r40, %r90, 3;
	@!%p7 bra rwait{n};
	@%p3 mbarrier.arrive.release.cta.shared::cta.b64 _, [%r30];
rpoll0_{n}:
	mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p1, [%r31], %r15;
	@!%p1 bra rpoll0_{n};
	bra rnext{n};
rwait{n}:
	mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p1, [%r31], %r15;
	@!%p1 bra rwait{n};
	mov.u64 %rd91, %clock64;
	mov.u64 %rd97, %clock64;
	@%p3 mbarrier.arrive.release.cta.shared::cta.b64 _, [%r30];
	add.u32 %r41, %r22, %r40;
	@%p10 st.shared.u64 [%r41], %rd91;
	add.u32 %r42, %r21, %r40;
	@%p11 st.shared.u64 [%r42], %rd97;
rnext{n}:
	xor.b32 %r15, %r15, 1;
	add.u32 %r90, %r90, 1;
	setp.lt.u32 %p90, %r90, {ROUNDS};
	@%p90 bra lap{n};
''')
report(n)
w('''	ld.param.u64 %rd1, [done_ptr];
	cvta.to.global.u64 %rd1, %rd1;
	// the scratch loads are used: done gets 1 per thread unless they were all zero (they never are
	// for warp 0; the other warps never load)
	setp.ne.u64 %p6, %rd12, 0;
	or.pred %p6, %p6, %p5;
	setp.ne.u32 %p12, %r1, 0;
	or.pred %p6, %p6, %p12;
	selp.u32 %r13, 1, 0, %p6;
	red.global.add.u32 [%rd1], %r13;
	ret;
}
''')
open(sys.argv[1], "w").write("".join(out))
