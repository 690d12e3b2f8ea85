#!/usr/bin/env python3
"""Probe list for `runner --encode` (cosim/gpu/runner/README.md) that pins down where the driver
starts refusing two kinds of tensor map hopsync's encoder accepted (it now enforces the limits found)
(docs/SILICON_DISAGREEMENTS.md §2): im2col with few bytes per pixel, and large tiled boxes.

Usage: python3 tensormap_thresholds.py > thresholds.txt ; runner --encode thresholds.txt out.txt
"""

from tensormap_probes import line  # the runner's probe line format

# CUtensorMapDataType: UINT8 0, UINT16 1, UINT32 2, INT32 3, UINT64 4, INT64 5, FLOAT16 6,
# FLOAT32 7, FLOAT64 8, BFLOAT16 9 (element bytes below).
SIZE = {0: 1, 6: 2, 7: 4, 8: 8}
ADDR = 0x7F0000000000

out = []
# im2col rank 4 (NHWC), channelsPerPixel x element size: is the limit in bytes or elements?
for t, size in SIZE.items():
    c_dim = 64
    for ch in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64):
        if ch > c_dim:
            continue
        s0 = (c_dim * size + 15) // 16 * 16
        m = dict(mode="im2col", addr=ADDR, type=t, rank=4, interleave=0, swizzle=0, l2=0, oob=0,
                 dim=[c_dim, 10, 10, 2, 1], stride=[s0, s0 * 10, s0 * 100, s0 * 200], estride=[1, 1, 1, 1, 1],
                 lower=[-1, -1, 0], upper=[-1, -1, 0], channels=ch, pixels=16)
        out.append(line(f"im2col_t{t}_ch{ch}", m))
# tiled rank 2: box0 x box1 grid, FLOAT32 and UINT8, tensor 1024 x 1024 (no box exceeds it)
for t in (7, 0):
    size = SIZE[t]
    for b0 in (16, 32, 64, 128, 256):
        if b0 * size % 16:
            continue
        for b1 in (1, 8, 16, 32, 64, 128, 256):
            m = dict(mode="tiled", addr=ADDR, type=t, rank=2, interleave=0, swizzle=0, l2=0, oob=0,
                     dim=[1024, 1024, 1, 1, 1], stride=[1024 * size, 1 << 20, 1 << 20, 1 << 20],
                     box=[b0, b1, 1, 1, 1], estride=[1, 1, 1, 1, 1])
            out.append(line(f"tiled_t{t}_box{b0}x{b1}", m))
# tiled rank 3 FLOAT32: box 16 x 16 x b2 (total bytes 1 KiB x b2)
for b2 in (1, 16, 64, 128, 192, 224, 227, 228, 256):
    m = dict(mode="tiled", addr=ADDR, type=7, rank=3, interleave=0, swizzle=0, l2=0, oob=0,
             dim=[64, 64, 256, 1, 1], stride=[256, 16384, 16384, 16384], box=[16, 16, b2, 1, 1], estride=[1, 1, 1, 1, 1])
    out.append(line(f"tiled3_t7_box16x16x{b2}", m))
# element strides shrink the box's bytes: does the limit use boxDim or the bytes moved?
for e1 in (1, 2, 4):
    m = dict(mode="tiled", addr=ADDR, type=7, rank=2, interleave=0, swizzle=0, l2=0, oob=0,
             dim=[1024, 1024, 1, 1, 1], stride=[4096, 1 << 20, 1 << 20, 1 << 20],
             box=[256, 256, 1, 1, 1], estride=[1, e1, 1, 1, 1])
    out.append(line(f"tiled_t7_box256x256_estride1_{e1}", m))
# Second round (after the first showed: im2col needs channelsPerPixel * elementSize a multiple of
# 16 bytes; tiled boxes of 228 KiB pass and 256 KiB fail): the box-bytes limit to 16 bytes, and
# whether elementStrides[0] (ignored for non-interleaved maps) enters it.
for name, t, box in (("tiled3_t0_box48x43x127", 0, [48, 43, 127]),    # 2^18 - 16 bytes
                     ("tiled3_t0_box16x256x64", 0, [16, 256, 64]),    # 2^18
                     ("tiled3_t0_box80x29x113", 0, [80, 29, 113]),    # 2^18 + 16
                     ("tiled3_t7_box16x16x255", 7, [16, 16, 255])):   # 255 KiB
    size = SIZE[t]
    m = dict(mode="tiled", addr=ADDR, type=t, rank=3, interleave=0, swizzle=0, l2=0, oob=0,
             dim=[256, 256, 256, 1, 1], stride=[256 * size, 65536 * size, 65536 * size, 65536 * size],
             box=box + [1, 1], estride=[1, 1, 1, 1, 1])
    out.append(line(name, m))
m = dict(mode="tiled", addr=ADDR, type=7, rank=2, interleave=0, swizzle=0, l2=0, oob=0,
         dim=[1024, 1024, 1, 1, 1], stride=[4096, 1 << 20, 1 << 20, 1 << 20],
         box=[256, 256, 1, 1, 1], estride=[2, 1, 1, 1, 1])
out.append(line("tiled_t7_box256x256_estride0_2", m))
for t, ch in ((7, 5), (7, 20), (7, 28), (0, 40), (0, 80), (6, 40)):
    size = SIZE[t]
    c_dim = 128
    s0 = c_dim * size
    m = dict(mode="im2col", addr=ADDR, type=t, rank=4, interleave=0, swizzle=0, l2=0, oob=0,
             dim=[c_dim, 10, 10, 2, 1], stride=[s0, s0 * 10, s0 * 100, s0 * 200], estride=[1, 1, 1, 1, 1],
             lower=[-1, -1, 0], upper=[-1, -1, 0], channels=ch, pixels=16)
    out.append(line(f"im2col_t{t}_ch{ch}", m))
# Third round (the second: 2^18 - 16 bytes fail too; elementStrides[0] = 2 halves the count):
# KiB steps above 228 KiB (FLOAT32 16 x 16 x n), and 228 KiB exactly / + 64 bytes in UINT8.
for b2 in (229, 230, 232, 236, 240, 248):
    m = dict(mode="tiled", addr=ADDR, type=7, rank=3, interleave=0, swizzle=0, l2=0, oob=0,
             dim=[256, 256, 256, 1, 1], stride=[1024, 262144, 262144, 262144], box=[16, 16, b2, 1, 1], estride=[1, 1, 1, 1, 1])
    out.append(line(f"tiled3_t7_box16x16x{b2}", m))
for name, box in (("tiled3_t0_box16x57x256", [16, 57, 256]), ("tiled3_t0_box16x82x178", [16, 82, 178]), ("tiled3_t0_box16x83x176", [16, 83, 176])):
    m = dict(mode="tiled", addr=ADDR, type=0, rank=3, interleave=0, swizzle=0, l2=0, oob=0,
             dim=[256, 256, 256, 1, 1], stride=[256, 65536, 65536, 65536], box=box + [1, 1], estride=[1, 1, 1, 1, 1])
    out.append(line(name, m))
print("\n".join(out))
