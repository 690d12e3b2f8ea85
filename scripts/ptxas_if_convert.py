#!/usr/bin/env python3
"""When ptxas predicates a short forward branch instead of keeping a BRA: the measurements behind
sim/configs/sm90.toml's `issue.if_convert_*` keys (timing::if_converted_branches).

For `@p bra L; N instructions; L:` with N xor / mad (ALU), st.shared, or ld.shared + add, and a
guard that differs between lanes (from %tid) or is warp-uniform (from a loaded word), it prints
for each N whether a guarded BRA is left in the SASS (B) or the run was predicated (-).

    scripts/ptxas_if_convert.py [PTXAS] [CUOBJDUMP]

PTXAS / CUOBJDUMP default to the PyPI packages' (nvidia-cuda-nvcc, nvidia-cuda-cuobjdump) on
PATH; see ../shared/notes/toolchain.md or README.md ("CUDA C++ input").
"""
import subprocess
import sys
import tempfile
from pathlib import Path

PTXAS = sys.argv[1] if len(sys.argv) > 1 else "ptxas"
CUOBJDUMP = sys.argv[2] if len(sys.argv) > 2 else "cuobjdump"
RUNS = [1, 2, 3, 4, 6, 8, 10, 12, 16, 24, 32]


def kernel(n, kind, guard):
    body = []
    for j in range(n):
        a, b = 10 + j % 8, 10 + (j + 3) % 8
        if kind == "alu":
            body.append(f"\txor.b32 %r{a}, %r{a}, %r{b};" if j % 2 else f"\tmad.lo.u32 %r{a}, %r{a}, %r{b}, {j + 3};")
        elif kind == "st.shared":
            body.append(f"\tst.shared.u32 [w+{4 * j}], %r{a};")
        else:
            body.append(f"\tld.shared.u32 %r{22 + j % 4}, [w+{4 * j}];\n\tadd.u32 %r{a}, %r{a}, %r{22 + j % 4};")
    p = "%p1" if guard == "per-lane" else "%p2"
    lines = "\n".join(body)
    return f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{{
	.reg .pred %p<9>;
	.reg .b32 %r<30>;
	.reg .b64 %rd<9>;
	.shared .align 4 .b32 w[64];
	ld.param.u64 %rd1, [p];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r0, %tid.x;
	setp.eq.u32 %p1, %r0, 0;
	ld.global.u32 %r1, [%rd1];
	setp.eq.u32 %p2, %r1, 7;
	mov.u32 %r10, %r0;
	add.u32 %r11, %r0, 5;
	mov.u32 %r12, %r1;
	add.u32 %r13, %r1, 3;
	add.u32 %r14, %r0, %r1;
	mul.lo.u32 %r15, %r0, %r1;
	xor.b32 %r16, %r0, 99;
	or.b32 %r17, %r1, %r0;
	@{p} bra L;
{lines}
L:
	add.u32 %r20, %r10, %r11;
	add.u32 %r20, %r20, %r12;
	add.u32 %r20, %r20, %r13;
	add.u32 %r20, %r20, %r14;
	add.u32 %r20, %r20, %r15;
	add.u32 %r20, %r20, %r16;
	add.u32 %r20, %r20, %r17;
	st.global.u32 [%rd1+256], %r20;
	ret;
}}
"""


def keeps_a_branch(src, tmp):
    ptx, cubin = tmp / "k.ptx", tmp / "k.cubin"
    ptx.write_text(src)
    subprocess.run([PTXAS, "-arch=sm_90", str(ptx), "-o", str(cubin)], check=True, capture_output=True)
    sass = subprocess.run([CUOBJDUMP, "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    return any("BRA" in l and ("@P" in l or "@!P" in l or "@UP" in l or "@!UP" in l) for l in sass.splitlines())


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("run of N instructions:", " ".join(f"{n:>3}" for n in RUNS))
        for kind in ["alu", "st.shared", "ld.shared"]:
            for guard in ["per-lane", "uniform"]:
                marks = ("  B" if keeps_a_branch(kernel(n, kind, guard), tmp) else "  -" for n in RUNS)
                print(f"{kind:>9} {guard:>8} guard:  " + " ".join(marks))


if __name__ == "__main__":
    main()
