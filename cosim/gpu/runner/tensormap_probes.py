#!/usr/bin/env python3
"""Writes the tensor-map probe list for `runner --encode` (docs/CUTENSORMAP.md): a base tiled map
and an im2col map, then variants that change one encoder argument at a time, so the driver's
128-byte CUtensorMap images can be compared bit by bit (CUDA Driver API §6.30; the layout is
undocumented: PTX ISA §5.5.8 calls the object opaque).

Usage: python3 tensormap_probes.py > probes.txt ; runner --encode probes.txt encoded.txt
"""

BASE = dict(mode="tiled", addr=0x7F0000000000, type=7, rank=2, interleave=0, swizzle=0, l2=0, oob=0,
            dim=[64, 32, 1, 1, 1], stride=[256, 8192, 8192, 8192], box=[16, 8, 1, 1, 1], estride=[1, 1, 1, 1, 1])
IM2COL = dict(mode="im2col", addr=0x7F0000000000, type=7, rank=4, interleave=0, swizzle=0, l2=0, oob=0,
              dim=[8, 10, 10, 2, 1], stride=[32, 320, 3200, 6400], estride=[1, 1, 1, 1, 1],
              lower=[-1, -1, 0], upper=[-1, -1, 0], channels=8, pixels=16)


def line(name, m):
    r = m["rank"]
    s = (f"tensormap {name} {m['mode']} @{m['addr']:#x} 0 type {m['type']} rank {r} interleave {m['interleave']} "
         f"swizzle {m['swizzle']} l2 {m['l2']} oob {m['oob']} dim {' '.join(map(str, m['dim'][:r]))} "
         f"stride {' '.join(map(str, m['stride'][:r - 1]))}")
    if m["mode"] == "tiled":
        s += f" box {' '.join(map(str, m['box'][:r]))}"
    else:
        s += (f" lower {' '.join(map(str, m['lower'][:r - 2]))} upper {' '.join(map(str, m['upper'][:r - 2]))}"
              f" channels {m['channels']} pixels {m['pixels']}")
    return s + f" estride {' '.join(map(str, m['estride'][:r]))}"


def variant(base, **kw):
    m = {k: (list(v) if isinstance(v, list) else v) for k, v in base.items()}
    for k, v in kw.items():
        if "__" in k:
            f, i = k.split("__")
            m[f][int(i)] = v
        else:
            m[k] = v
    return m


def main():
    out = [line("base", BASE)]
    add = lambda n, **kw: out.append(line(n, variant(BASE, **kw)))
    for b in range(4, 49):  # one address bit at a time (16-byte aligned)
        add(f"addr_bit{b}", addr=BASE["addr"] ^ (1 << b))
    for t in range(13):
        add(f"type{t}", type=t, **({"stride__0": 512} if t in (4, 5, 8) else {}))
    for r in (1, 3, 4, 5):
        add(f"rank{r}", rank=r)
    for i in range(2):
        for v in (1, 2, 3, 5, 17, 255, 256, 1000, 65535, 65536, 1 << 20, (1 << 32) - 1):
            if i == 0 and v * 4 > 256:
                add(f"dim{i}_{v}", dim__0=v, stride__0=(v * 4 + 15) // 16 * 16, stride__1=(v * 4 + 15) // 16 * 16 * 32)
            else:
                add(f"dim{i}_{v}", **{f"dim__{i}": v})
    for v in (256 + 16, 512, 4096, 1 << 20, 1 << 32, (1 << 39) - 16):
        add(f"stride0_{v}", stride__0=v)
    for i in range(2):
        for v in (1, 2, 4, 5, 8, 16, 32, 64, 128, 255, 256):
            if i == 0 and v * 4 % 16:
                continue
            add(f"box{i}_{v}", **{f"box__{i}": v})
    for i in range(2):
        for v in range(1, 9):
            add(f"estride{i}_{v}", **{f"estride__{i}": v})
    for v in range(4):
        add(f"swizzle{v}", swizzle=v, box__0=min(16, 32 * (1 << (v - 1)) // 4) if v else 16)
    for v in range(4):
        add(f"l2_{v}", l2=v)
    # CUtensorMapDataType: UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5, FLOAT16 6,
    # FLOAT32 7, FLOAT64 8, BFLOAT16 9, FLOAT32_FTZ 10, TFLOAT32 11, TFLOAT32_FTZ 12 (the base is FLOAT32).
    add("oob1_float32", type=7, oob=1)
    add("int32_oob0", type=3)
    for v in (1, 2):
        add(f"interleave{v}", rank=3, interleave=v, swizzle=1 if v == 2 else 0, box__0=8 if v == 2 else 4)
    # 3-D to 5-D: per-dimension fields of the higher dimensions
    for r in (3, 4, 5):
        for i in range(2, r):
            add(f"r{r}_dim{i}_7", rank=r, **{f"dim__{i}": 7})
            add(f"r{r}_box{i}_3", rank=r, **{f"box__{i}": 3})
            add(f"r{r}_estride{i}_2", rank=r, **{f"estride__{i}": 2})
            if i - 1 < r - 1:
                add(f"r{r}_stride{i - 1}_x2", rank=r, **{f"stride__{i - 1}": BASE['stride'][i - 1] * 2})
    # im2col
    out.append(line("im2col_base", IM2COL))
    addi = lambda n, **kw: out.append(line(n, variant(IM2COL, **kw)))
    for v in (-8, -2, 0, 1, 7):
        addi(f"im2col_lower0_{v}", lower__0=v)
        addi(f"im2col_lower1_{v}", lower__1=v)
        addi(f"im2col_upper0_{v}", upper__0=v)
        addi(f"im2col_upper1_{v}", upper__1=v)
    for v in (1, 2, 4, 16, 64, 256):
        addi(f"im2col_channels{v}", channels=v)
    for v in (1, 2, 32, 256, 1024):
        addi(f"im2col_pixels{v}", pixels=v)
    for r in (3, 5):
        addi(f"im2col_rank{r}", rank=r, dim__4=2, stride__3=6400)
    addi("im2col_r5_lower2_3", rank=5, dim__4=2, lower__2=3)
    addi("im2col_r5_upper2_m3", rank=5, dim__4=2, upper__2=-3)
    addi("im2col_r3_lower0_m300", rank=3, dim__1=1000, stride__1=32000, lower__0=-300)
    # the same arguments twice: is the image deterministic?
    out.append(line("base_again", BASE))
    print("\n".join(out))


if __name__ == "__main__":
    main()
