#!/usr/bin/env python3
"""How ptxas unrolls counted loops: the measurements behind sim/configs/sm90.toml's
`issue.unroll_*` keys (timing::unrolled_loops).

For a loop of K `st.global.u32` (plus its address step, count, compare and branch) it finds the
longest constant trip count ptxas unrolls fully (no backward BRA left), and the body copies per
SASS iteration for 4096 trips and for a trip count held in a register.

    scripts/ptxas_unroll.py [PTXAS] [CUOBJDUMP]

PTXAS / CUOBJDUMP default to the PyPI packages' (nvidia-cuda-nvcc, nvidia-cuda-cuobjdump) on
PATH; see ../shared/notes/toolchain.md or README.md ("CUDA C++ input").
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PTXAS = sys.argv[1] if len(sys.argv) > 1 else "ptxas"
CUOBJDUMP = sys.argv[2] if len(sys.argv) > 2 else "cuobjdump"


def kernel(trips, k, limit=None):
    body = "\n".join(f"\tst.global.u32 [%rd0+{4 * j}], %r1;" for j in range(k))
    bound = limit or str(trips)
    return f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd0, [p];
	cvta.to.global.u64 %rd0, %rd0;
	mov.u32 %r1, %tid.x;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, 0;
L:
{body}
	add.s64 %rd0, %rd0, {4 * k};
	add.u32 %r5, %r5, 1;
	setp.lt.u32 %p2, %r5, {bound};
	@%p2 bra L;
	ret;
}}
"""


def sass(src):
    with tempfile.TemporaryDirectory() as d:
        ptx, cubin = Path(d, "k.ptx"), Path(d, "k.cubin")
        ptx.write_text(src)
        subprocess.run([PTXAS, "-arch=sm_90", str(ptx), "-o", str(cubin)], check=True)
        out = subprocess.run([CUOBJDUMP, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    return [l for l in out.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", l)]


def addr(line):
    return int(re.search(r"/\*([0-9a-f]{4})\*/", line).group(1), 16)


def loop_copies(src, k):
    """Stores inside the largest backward branch's range, per body; 0 when no loop is left."""
    ins = sass(src)
    best = 0
    for line in ins:
        m = re.search(r"BRA (0x[0-9a-f]+)", line)
        if m and int(m.group(1), 16) < addr(line):
            lo, hi = int(m.group(1), 16), addr(line)
            best = max(best, sum(1 for x in ins if lo <= addr(x) <= hi and " STG" in x))
    return best / k


for k in [1, 2, 4, 8, 16, 32, 48, 64]:
    lo, hi = 1, 8192
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if loop_copies(kernel(mid, k), k) == 0 else (lo, mid)
    print(f"{k:3} stores: unrolled fully up to {lo:5} trips; 4096 trips: {loop_copies(kernel(4096, k), k):6.1f} copies;"
          f" unknown trips: {loop_copies(kernel(0, k, limit='%r4'), k):4.1f} copies")
