#!/usr/bin/env python3
"""Derive a client's launch manifest from its own host code (CUTLASS/CuTe examples).

    scripts/host_manifest/manifest_from_host.py CLIENT.cu --kernel SUBSTRING [--names A,B,C] -- ARGS...

CUTLASS and CuTe compute their kernels' parameters on the host: `Params` structs with tensor
maps inside, fast-division magic numbers, strides. Rather than re-deriving them by hand, this
compiles CLIENT.cu (the unmodified example and its `main`) into a host program linked against
hoststub.cpp, a stand-in for the CUDA runtime and driver, runs it with ARGS, and turns what it
recorded into manifest TOML on stdout: the launch shape, one [[buffer]] per cudaMalloc (named by
--names in allocation order, else buf0, buf1, ...), one [[tensormap]] per cuTensorMapEncodeTiled,
and one [[param]] per kernel argument of the first launch whose PTX name contains SUBSTRING
(pointers to allocations become `buffer`, tensor maps `tensormap`, other non-zero bytes `value`
words). The PTX (for the `.param` sizes) comes from `hopsync`'s compile: `--ptx FILE`.
Needs the nvcc hopsync uses (HOPSYNC_NVCC or the cache's PyPI toolchain) and g++.
"""
import argparse, os, re, subprocess, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKE_BASE = 0x7A0000000000
ALLOC_LOW = 0x10000000  # allocation k starts at FAKE_BASE + k << 32 + ALLOC_LOW (hoststub.cpp)
DTYPES = ["uint8", "uint16", "uint32", "int32", "uint64", "int64", "float16", "float32", "float64", "bfloat16", "float32_ftz", "tfloat32", "tfloat32_ftz"]
SWIZZLE = ["none", "32B", "64B", "128B"]
INTERLEAVE = ["none", "16B", "32B"]
L2 = ["none", "64B", "128B", "256B"]
OOB = ["none", "nan_request_zero_fma"]


def nvcc():
    if os.environ.get("HOPSYNC_NVCC"):
        return os.environ["HOPSYNC_NVCC"]
    cache = os.environ.get("HOPSYNC_CACHE") or (Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hopsync")
    return str(Path(cache) / "cuda/nvidia/cu13/bin/nvcc")


def cutlass_includes():
    cache = os.environ.get("HOPSYNC_CACHE") or (Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hopsync")
    root = Path(cache) / "cuda/cutlass_library/source"
    return [f"-I{root / d}" for d in ("include", "tools/util/include", "examples/common")]


def param_sizes(ptx):
    """mangled entry name -> [bytes of each .param]"""
    out = {}
    for m in re.finditer(r"\.entry\s+(\S+)\s*\((.*?)\)", ptx, re.S):
        sizes = []
        for p in re.finditer(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+\S+?(?:\[(\d+)\])?\s*(?:,|$)", m.group(2)):
            ty, n = p.group(1), p.group(2)
            sizes.append(int(n) if n else int(re.sub(r"\D", "", ty) or 64) // 8)
        out[m.group(1)] = sizes
    return out


def build(cu, work, flags):
    exe = work / "host"
    base = [nvcc(), "-std=c++17", "-arch=sm_90a", "--expt-relaxed-constexpr", "-cudart", "none", "-DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL", *flags, str(cu), str(HERE / "hoststub.cpp")]
    stubs = work / "stubs.cpp"
    stubs.write_text("")
    for _ in range(3):
        r = subprocess.run(base + [str(stubs), "-o", str(exe)], capture_output=True, text=True)
        if r.returncode == 0:
            return exe
        missing = sorted(set(re.findall(r"undefined reference to `([A-Za-z_]\w*)'", r.stdout + r.stderr)))
        if not missing:
            sys.exit(f"host build failed:\n{r.stdout}{r.stderr}")
        have = stubs.read_text()
        stubs.write_text(have + "".join(f'extern "C" int {s}(...) {{ return 0; }}\n' for s in missing))
    sys.exit("host build: symbols still missing after stubbing")


def fields_of(data, buffer_of, used):
    """(offset, TOML lines) of a kernel argument's bytes: tensor maps (the stand-in's marker),
    pointers to allocations, then the other non-zero bytes as u32/u16/u8 values."""
    fields = []
    off = 0
    while off < len(data):
        word = int.from_bytes(data[off:off + 8].ljust(8, b"\0"), "little")
        if off % 64 == 0 and word >> 32 == 0x50414D54 and off + 128 <= len(data):
            used.append(word & 0xFFFFFFFF)
            fields.append((off, f'tensormap = "#{word & 0xFFFFFFFF}"'))
            off += 128
        elif off % 8 == 0 and off + 8 <= len(data) and buffer_of(word):
            bn, boff = buffer_of(word)
            if boff:
                sys.exit(f"offset {off}: a pointer {boff} bytes into {bn} (the manifest has no field for that)")
            fields.append((off, f'buffer = "{bn}"'))
            off += 8
        else:
            n = 4 if off % 4 == 0 and off + 4 <= len(data) else 2 if off % 2 == 0 and off + 2 <= len(data) else 1
            v = int.from_bytes(data[off:off + n], "little")
            # the high half of a host stack address (0x00007fXX) or of an earlier launch's fake
            # device address (0x00007aXX) left in padding: not a field
            stale = off % 8 == 4 and n == 4 and (v >> 8) in (0x7F, FAKE_BASE >> 40)
            if v and not stale:
                fields.append((off, f'value = {v}\ntype = "u{8 * n}"'))
            off += n
    return fields


def written(p, q):
    """The bytes of an argument both runs agree on. A word that differs between the runs is padding
    the host never wrote (left over from earlier calls, placed anew by ASLR); a host stack address
    there differs in its low word, and its high word (0x00007fXX, often the same in both runs) goes
    with it."""
    out = bytearray(p)
    for i in range(0, len(p), 4):
        if p[i:i + 4] != q[i:i + 4]:
            out[i:i + 4] = bytes(len(p[i:i + 4]))
            hi = p[i + 4:i + 8]
            if i % 8 == 0 and len(hi) == 4 and (int.from_bytes(hi, "little") >> 8) == 0x7F:
                out[i + 4:i + 8] = bytes(4)
    return bytes(out)


def record(exe, work, argv, kernel, sizes, k):
    """Runs the host program once: (allocations, tensor maps, the first matching launch, its
    arguments' bytes)."""
    log = work / f"log{k}"
    env = dict(os.environ, HOPSYNC_HOST_LOG=str(log), HOPSYNC_PARAM_SIZES=str(work / "sizes"))
    r = subprocess.run([str(exe), *argv], env=env, capture_output=True, text=True)
    if k == 0:
        sys.stderr.write(r.stdout[-2000:] + r.stderr[-2000:])
    allocs, tmaps, launch, args = {}, {}, None, []
    for line in log.read_text().splitlines():
        w = line.split()
        if w[0] == "malloc":
            allocs[int(w[1])] = int(w[2])
        elif w[0] == "tensormap":
            tmaps[int(w[1])] = w
        elif w[0] == "launch" and launch is None and kernel in w[1]:
            launch = w
        elif w[0] == "arg" and launch is not None and len(args) < len(sizes.get(launch[1], [])):
            args.append(bytes.fromhex(w[2]) if len(w) > 2 else b"")
    if launch is None:
        sys.exit(f"no launch of a kernel containing {kernel!r}:\n" + log.read_text())
    return allocs, tmaps, launch, args


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cu")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--ptx", required=True)
    ap.add_argument("--names", default="")
    ap.add_argument("--flag", action="append", default=[])
    ap.add_argument("--work", help="keep the host program here and reuse it")
    ap.add_argument("--input", action="append", default=[], help="NAME:TYPE:LO:HI: fill with random integers in [LO, HI]")
    ap.add_argument("--output", action="append", default=[], help="NAME:TYPE: an output buffer")
    ap.add_argument("--first-alloc", type=int, default=0, help="allocations before this one belong to earlier launches (a pointer to one is stale padding)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.args = argv[cut + 1:]
    ptx = Path(a.ptx).read_text()
    sizes = param_sizes(ptx)
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="hopsync_host_"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "sizes").write_text("".join(f"{k} {' '.join(map(str, v))}\n" for k, v in sizes.items()))
    exe = work / "host" if a.work and (work / "host").exists() else build(Path(a.cu).resolve(), work, cutlass_includes() + a.flag)
    names = [n for n in a.names.split(",") if n]
    # Run twice: the stack is laid out anew each run (ASLR), so the words of a struct argument that
    # differ between the runs, or hold a host stack address, are padding the host never wrote
    # (left over from earlier calls); they are left out (zero).
    runs = [record(exe, work, a.args, a.kernel, sizes, k) for k in (0, 1)]
    allocs, tmaps, launch, args = runs[0]
    args = [written(p, q) for p, q in zip(args, runs[1][3])]
    name = lambda k: names[k - a.first_alloc] if 0 <= k - a.first_alloc < len(names) else f"buf{k}"

    def buffer_of(addr):
        k, off = (addr - FAKE_BASE) >> 32, ((addr - FAKE_BASE) & 0xFFFFFFFF) - ALLOC_LOW
        if addr >= FAKE_BASE and k in allocs and k >= a.first_alloc and 0 <= off <= allocs[k]:
            return name(k), off
        return None

    o = []
    o.append(f'kernel = "{launch[1]}"')
    o.append("[launch]")
    g, b, c = launch[3:6], launch[7:10], launch[11:14]
    o.append(f"grid = [{', '.join(g)}]")
    o.append(f"block = [{', '.join(b)}]")
    o.append(f"cluster = [{', '.join(c)}]")
    o.append(f"dynamic_smem = {launch[15]}")
    params = []
    used = []
    pnames = re.search(r"\.entry\s+" + re.escape(launch[1]) + r"\s*\((.*?)\)", ptx, re.S).group(1)
    pnames = re.findall(r"(\S+?)(?:\[\d+\])?\s*(?:,|$)", pnames.replace("\n", " "))
    for i, data in enumerate(args):
        params += ["[[param]]", f'name = "{pnames[i]}"']
        # an all-zero argument (an empty struct, a zero scalar) is one zero byte, said explicitly
        for off, what in fields_of(data, buffer_of, used) or [(0, 'value = 0\ntype = "u8"')]:
            params += ["[[param.field]]", f"offset = {off}", *what.split("\n")]
    tmap_name = lambda t: f"tmap_{buffer_of(int(tmaps[t][7]))[0]}" if sum(buffer_of(int(tmaps[u][7])) == buffer_of(int(tmaps[t][7])) for u in used) == 1 else f"tmap{t}"
    params = [re.sub(r'tensormap = "#(\d+)"', lambda m: f'tensormap = "{tmap_name(int(m.group(1)))}"', l) for l in params]
    referenced = {b for l in params for b in re.findall(r'^buffer = "(.*)"', l)} | {buffer_of(int(tmaps[t][7]))[0] for t in used}
    inputs = {i.split(":")[0]: i.split(":")[1:] for i in a.input}
    outputs = {i.split(":")[0]: i.split(":")[1] for i in a.output}
    for k, n in sorted(allocs.items()):
        if name(k) not in referenced:
            continue
        # a zero-byte allocation (an unused workspace) still needs an address
        o += ["[[buffer]]", f'name = "{name(k)}"', f"bytes = {max(n, 16)}"]
        if name(k) in inputs:
            ty, lo, hi = inputs[name(k)]
            o += ['fill = "random"', f'type = "{ty}"', f"range = [{lo}, {hi}]", f"seed = {k + 1}"]
        if name(k) in outputs:
            o += [f'type = "{outputs[name(k)]}"', "output = true"]
    for t, w in sorted((t, tmaps[t]) for t in set(used)):
        rank = int(w[5])
        i = w.index("dims")
        dims = w[i + 1:i + 1 + rank]
        strides = w[i + 2 + rank:i + 1 + 2 * rank]
        box = w[i + 2 + 2 * rank:i + 2 + 3 * rank]
        est = w[i + 3 + 3 * rank:i + 3 + 4 * rank]
        buf = buffer_of(int(w[7]))
        if buf is None:
            sys.exit(f"tensormap {t}: address {int(w[7]):#x} is not in an allocation")
        o += ["[[tensormap]]", f'name = "{tmap_name(t)}"', f'buffer = "{buf[0]}"']
        if buf[1]:
            o.append(f"offset = {buf[1]}")
        o += [f'data_type = "{DTYPES[int(w[3])]}"', f"rank = {rank}", f"global_dim = [{', '.join(dims)}]", f"global_strides = [{', '.join(strides)}]",
              f"box_dim = [{', '.join(box)}]", f"element_strides = [{', '.join(est)}]", f'interleave = "{INTERLEAVE[int(w[9])]}"',
              f'swizzle = "{SWIZZLE[int(w[11])]}"', f'l2_promotion = "{L2[int(w[13])]}"', f'oob_fill = "{OOB[int(w[15])]}"']
    o += params
    print("\n".join("//! " + l for l in o))


if __name__ == "__main__":
    main()
