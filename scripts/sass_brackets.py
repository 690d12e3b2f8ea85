#!/usr/bin/env python3
"""What silicon runs between the two %clock64 reads of each traced instruction of the whole
programs, beside silicon's and the engine's figure: where a whole-program gap comes from.

Each instrumented program (`hopsync calibrate pack --out DIR`: DIR/whole/*.ptx) is compiled by
ptxas with a `.loc` per PTX line; for each traced instruction the SASS between its `clock_before`
read and its `clock_delta` read (CS2R SR_CLOCKLO of those lines) is listed with the sum of its
static stall counts, and joined with `hopsync gpu replay --engine rtl --json REPLAY.json`'s
`by_line` rows (silicon and engine medians by program and traced instruction). Output: one
tab-separated row per traced instruction: program, PTX line, instruction, silicon median, engine
median, stall-count sum, SASS instructions, instructions that wait on a scoreboard, SASS opcodes.

    hopsync calibrate pack --out /tmp/cb
    hopsync gpu replay --engine rtl --json /tmp/replay.json
    scripts/sass_brackets.py /tmp/replay.json /tmp/cb/whole/*.ptx > brackets.tsv

PTXAS / NVDISASM (environment) default to the PyPI packages' on PATH; see
../shared/notes/toolchain.md or README.md ("CUDA C++ input"). The control bits read are those of
sm_90's 128-bit encoding (stall count in bits 41..44 of the second word, then yield, write and
read scoreboards and the wait mask).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PTXAS = os.environ.get("PTXAS", "ptxas")
NVDISASM = os.environ.get("NVDISASM", "nvdisasm")


def with_line_info(src):
    """The PTX with a `.loc 1 N 0` before each instruction of the kernel body (N: its line)."""
    out, body = [], False
    for n, line in enumerate(src, 1):
        s = line.strip()
        if s.startswith("//!"):
            out.append("")
        elif s.startswith(".address_size"):
            out.append(line + ' .file 1 "p.ptx"')
        elif body and s and not s.startswith(("//", ".")) and not s.endswith(":") and s not in ("{", "}"):
            out.append(f".loc 1 {n} 0 {line}")
        else:
            body |= s.startswith("{")
            out.append(line)
    return "\n".join(out) + "\n"


def sass_of(ptx_text, tmp):
    """(address, PTX line, text, stall, wait mask) of each SASS instruction, or None."""
    ptx, cubin = tmp / "p.ptx", tmp / "p.cubin"
    ptx.write_text(ptx_text)
    arch = "sm_90a" if "sm_90a" in ptx_text else "sm_90"
    if subprocess.run([PTXAS, f"-arch={arch}", "-lineinfo", str(ptx), "-o", str(cubin)], capture_output=True).returncode:
        return None
    lines = subprocess.run([NVDISASM, "-g", "-hex", "-c", str(cubin)], capture_output=True, text=True).stdout.splitlines()
    out, at, i = [], None, 0
    while i < len(lines):
        m = re.search(r"//## File .*line (\d+)", lines[i])
        if m:
            at = int(m.group(1))
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/", lines[i])
        if m and i + 1 < len(lines):
            hi = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1])
            ctrl = int(hi.group(1), 16) >> 41 if hi else 0
            out.append((int(m.group(1), 16), at, m.group(2).strip(), ctrl & 0xF, (ctrl >> 11) & 0x3F))
            i += 2
            continue
        i += 1
    return out


def brackets(src):
    """(clock_before line, traced instructions (line, text), clock_delta line) of the program."""
    out, start, body = [], None, []
    for n, line in enumerate(src, 1):
        if "mov.u64 %__hs_c0, %clock64" in line:
            start, body = n, []
        elif "mov.u64 %__hs_c1, %clock64" in line and start:
            out.append((start, body, n))
            start = None
        elif start and "__hs_" not in line and line.strip():
            body.append((n, line.strip()))
    return out


def main():
    replay = {r["name"]: r for r in json.load(open(sys.argv[1]))}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for path in sys.argv[2:]:
            name = Path(path).stem
            src = Path(path).read_text().splitlines()
            sass = sass_of(with_line_info(src), tmp)
            if sass is None:
                print(f"{name}: ptxas failed", file=sys.stderr)
                continue
            rows = sorted(replay.get(name, {}).get("by_line", []), key=lambda r: r["pc"])
            k = 0
            for start, body, end in brackets(src):
                if not body:
                    continue
                text = body[0][1]
                row = next((r for r in rows[k:] if r["instr"].split(";")[0].strip() in text), None)
                if row:
                    k = rows.index(row) + 1
                first = [a for a, ln, t, _, _ in sass if ln == start and "CLOCK" in t]
                last = [a for a, ln, t, _, _ in sass if ln == end and "CLOCK" in t]
                if not first or not last:
                    continue
                lo = first[0]
                hi = min([a for a in last if a > lo] or [lo])
                seg = [x for x in sass if lo <= x[0] < hi]
                ops = " ".join(t.split()[1] if t.startswith("@") else t.split()[0] for _, _, t, _, _ in seg[1:])
                silicon, engine = (row["silicon_median"], row["engine_median"]) if row else ("", "")
                waits = sum(1 for x in seg[1:] if x[4])
                print(f"{name}\t{body[0][0]}\t{text}\t{silicon}\t{engine}\t{sum(x[3] for x in seg)}\t{len(seg) - 1}\t{waits}\t{ops}")


if __name__ == "__main__":
    main()
