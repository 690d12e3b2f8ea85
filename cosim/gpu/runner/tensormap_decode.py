#!/usr/bin/env python3
"""Checks the CUtensorMap layout of docs/CUTENSORMAP.md against every recorded probe: rebuilds
each image from its encoder arguments with that layout and compares all 128 bytes.

Usage: python3 tensormap_decode.py [cosim/traces/sm90/probe/cutensormap_probes.json]
Exit status 1 if an image differs (the differing bytes are printed)."""
import json
import math
import sys

# CUtensorMapDataType (driver enum value) -> (hardware code, tf32 flag, element bytes)
TYPES = {0: (0, 0, 1), 1: (1, 0, 2), 2: (2, 0, 4), 3: (3, 0, 4), 4: (4, 0, 8), 5: (5, 0, 8), 6: (6, 0, 2),
         7: (7, 0, 4), 8: (9, 0, 8), 9: (10, 0, 2), 10: (8, 0, 4), 11: (7, 1, 4), 12: (8, 1, 4)}
REPEAT = {0: 16, 1: 256, 2: 512, 3: 1024}
CORNER_BITS = {3: 16, 4: 8, 5: 5}


def parse(args):
    w = args.split()
    m = {"name": w[1], "mode": w[2], "addr": int(w[3][1:], 0)}
    i, r = 5, None
    while i < len(w):
        k = w[i]
        i += 1
        if k in ("type", "rank", "interleave", "swizzle", "l2", "oob", "channels", "pixels"):
            m[k] = int(w[i])
            i += 1
            r = m.get("rank")
        else:
            n = {"dim": r, "box": r, "estride": r, "stride": r - 1, "lower": r - 2, "upper": r - 2}[k]
            m[k] = [int(x) for x in w[i:i + n]]
            i += n
    return m


def encode(m):
    b = bytearray(128)
    put = lambda off, v, n: b.__setitem__(slice(off, off + n), (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little"))
    put(0, m["addr"], 7)
    code, tf32, esz = TYPES[m["type"]]
    r = m["rank"]
    b[8] = (1 if m["mode"] == "im2col" else 0) | (r - 1) << 4 | (code & 1) << 7
    b[9] = code >> 1 | m["interleave"] << 3 | m["swizzle"] << 5 | m["oob"] << 7
    b[10] = tf32 | m["l2"] << 1
    for i, s in enumerate(m["stride"]):
        put(12 + 4 * i, s >> 4, 4)
        b[28 + i // 2] |= ((s >> 4) >> 32 & 0xF) << (4 * (i % 2))
    for i, d in enumerate(m["dim"]):
        put(32 + 4 * i, d - 1, 4)
    es = 0
    for i, e in enumerate(m["estride"]):
        es |= (e - 1) << (3 * i)
    put(52, es, 2)
    if m["mode"] == "tiled":
        for i, x in enumerate(m["box"]):
            b[55 + i] = x - 1
        # floor, not ceil: see docs/CUTENSORMAP.md (bytes 64..66)
        nbytes = esz * math.prod(x // e for x, e in zip(m["box"], m["estride"]))
    else:
        b[55] = m["channels"] - 1
        bits = CORNER_BITS[r]
        for off, key in ((56, "lower"), (58, "upper")):
            v = 0
            for i, c in enumerate(m[key]):
                v |= (c & ((1 << bits) - 1)) << (bits * i)
            put(off, v, 2)
        put(60, m["pixels"] - 1, 2)
        nbytes = esz * m["channels"] * m["pixels"]
    put(64, nbytes, 3)
    put(72, REPEAT[m["swizzle"]], 2)
    return bytes(b)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "cosim/traces/sm90/probe/cutensormap_probes.json"
    doc = json.load(open(path))
    bad = checked = 0
    for p in doc["probes"]:
        if "image" not in p:
            continue
        want = bytes.fromhex(p["image"])
        got = encode(parse(p["args"]))
        checked += 1
        if got != want:
            bad += 1
            diff = " ".join(f"{i}:{got[i]:02x}/{want[i]:02x}" for i in range(128) if got[i] != want[i])
            print(f"{p['name']}: layout/driver differ at {diff}")
    print(f"{checked - bad} of {checked} driver images rebuilt exactly from the documented layout")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
