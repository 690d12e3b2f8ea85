#!/usr/bin/env python3
"""Condenses the raw probe results (the files run.sh leaves in $OUT) into the committed trace
cosim/traces/sm90/probe/mbarrier_probe.json, and checks every record against a model of the encoding
inferred in docs/MBARRIER_ENCODING.md.

Usage: condense.py RESULTS_DIR OUT.json [--date YYYY-MM-DD]
RESULTS_DIR holds env.txt, safe.json, safe2.json, ub.json, forge.json (as run.sh writes them).

The model (all of it is the inferred sm_90 encoding, bit 0 = LSB of the 64-bit word):
  bit 0        unused (kept as written)
  bits 1..20   E = (2^20 - expected arrival count) mod 2^20
  bits 21..41  F = (-tx_count) mod 2^21
  bit 42       must be 0 (any mbarrier operation on a word with it set traps)
  bits 43..62  P = (2^20 - pending arrival count) mod 2^20
  bit 63       phase parity
  init c: lo32 = ((2^20 - c) << 1) mod 2^32, hi32 = ((2^20 - c) << 11) mod 2^32 (what ptxas emits)
  arrive c: trap if c > pending; P += c; arrive_drop c also E += c; .expect_tx n first does F -= n
  expect_tx n: F -= n; complete_tx n: F += n (trap on 21-bit signed overflow of F, and on n > 2^20-1)
  after every arrive/expect_tx/complete_tx: if P == 0 and F == 0: parity ^= 1, P = E
  token: bits 32..63 = word bits 32..63 before the operation
  test_wait/try_wait token: complete = token bit 63 != parity; .parity q: complete = q != parity
  memory: the state lives in the SYNCS unit's cache; ordinary loads see the shared-memory word,
  which inval (and eviction) write the state to; a word stored while the object is not cached is
  what the next mbarrier operation starts from.
"""
import json
import os
import re
import sys

M20 = (1 << 20) - 1
M21 = (1 << 21) - 1
M64 = (1 << 64) - 1

TOKEN_OPS = {"arrive", "arrive_count", "arrive_noComplete", "arrive_drop", "arrive_drop_count",
             "arrive_drop_noComplete", "arrive_expect_tx", "arrive_drop_expect_tx"}
WAIT_OPS = {"test_wait_token", "try_wait_token", "test_wait_parity", "try_wait_parity",
            "try_wait_parity_nohint", "test_wait_raw_token"}


class Trap(Exception):
    pass


class Model:
    def __init__(self):
        self.state = 0      # the mbarrier word as the SYNCS unit holds it
        self.mem = 0        # the shared-memory word ordinary loads see
        self.cached = False

    # field access
    def fields(self):
        w = self.state
        return dict(b0=w & 1, E=(w >> 1) & M20, F=(w >> 21) & M21, b42=(w >> 42) & 1, P=(w >> 43) & M20, par=w >> 63)

    def set_fields(self, b0, E, F, b42, P, par):
        self.state = (par << 63) | (P << 43) | (b42 << 42) | (F << 21) | (E << 1) | b0

    def touch(self):
        if not self.cached:
            self.state = self.mem
            self.cached = True
        if (self.state >> 42) & 1:
            raise Trap("bit 42 set")

    def complete_check(self, f):
        if f["P"] == 0 and f["F"] == 0:
            f["par"] ^= 1
            f["P"] = f["E"]

    def init(self, c):
        lo = ((0x100000 - c) << 1) & 0xFFFFFFFF
        hi = ((0x100000 - c) << 11) & 0xFFFFFFFF
        self.state = (hi << 32) | lo
        self.cached = True

    def arrive(self, count, drop=False, tx=0):
        self.touch()
        tok_hi = self.state >> 32
        f = self.fields()
        if tx:
            f["F"] = self.tx_add(f["F"], -tx)
        pending = (0x100000 - f["P"]) & M20
        if count > pending:
            raise Trap("arrive count above pending")
        if drop:
            f["E"] = (f["E"] + count) & M20
        f["P"] = (f["P"] + count) & M20
        self.complete_check(f)
        self.set_fields(**f)
        return tok_hi

    @staticmethod
    def tx_add(F, d):
        s = F - (1 << 21) if F >> 20 else F  # F as 21-bit signed
        r = s + d
        if r < -(1 << 20) or r > (1 << 20) - 1:
            raise Trap("tx field overflow")
        return r & M21

    def tx(self, d):
        self.touch()
        if abs(d) > (1 << 20) - 1:
            # silicon trapped on complete_tx 2^20 with F = -2^20 (where F + 2^20 = 0 would fit): either the
            # operand is range-checked or it is taken as 21-bit signed (2^20 -> -2^20, overflow); not separated
            raise Trap("tx operand above 2^20-1")
        f = self.fields()
        f["F"] = self.tx_add(f["F"], d)
        self.complete_check(f)
        self.set_fields(**f)

    def wait_token(self, tok):
        self.touch()
        return (tok >> 63) != (self.state >> 63)

    def wait_parity(self, q):
        self.touch()
        return (q & 1) != (self.state >> 63)

    def inval(self):
        if self.cached:
            self.mem = self.state
        self.cached = False

    def store(self, v):
        self.mem = v & M64


def lane_counts(r):
    mask = int(r["lane_mask"], 16)
    base = r["args"][0] if r["args"] else 1
    lanes = [i for i in range(32) if (mask >> i) & 1]
    return lanes, [base + (i if r["per_lane_count"] else 0) for i in lanes]


def step_model(m, r, toks):
    """Applies one record's operation to the model; returns (lane -> token_hi), result."""
    op = r["op"]
    lanes, counts = lane_counts(r)
    lane_tok, result = {}, None
    if op == "init":
        m.init(counts[0])
    elif op in ("arrive", "arrive_count", "arrive_drop", "arrive_drop_count"):
        # one warp-wide operation, counts summed, every lane gets the same token
        c = len(lanes) if op in ("arrive", "arrive_drop") else sum(counts)
        t = m.arrive(c, drop=op.startswith("arrive_drop"))
        lane_tok = {i: t for i in lanes}
    elif op in ("arrive_expect_tx", "arrive_drop_expect_tx"):
        t = m.arrive(len(lanes), drop=op == "arrive_drop_expect_tx", tx=sum(counts))
        lane_tok = {i: t for i in lanes}
    elif op in ("arrive_noComplete", "arrive_drop_noComplete"):
        # TMASK form: ptxas groups the lanes by count value; one operation per group (lowest lane's group
        # first); each lane's token is the group's token plus (lanes of its group below it) * count << 11
        groups = {}
        for i, c in zip(lanes, counts):
            groups.setdefault(c, []).append(i)
        for c, g in sorted(groups.items(), key=lambda kv: kv[1][0]):
            t = m.arrive(c * len(g), drop=op == "arrive_drop_noComplete")
            for k, i in enumerate(g):
                lane_tok[i] = (t + ((k * c) << 11)) & 0xFFFFFFFF
    elif op == "expect_tx":
        m.tx(-counts[0])
    elif op == "complete_tx":
        m.tx(counts[0])
    elif op in ("test_wait_token", "try_wait_token"):
        result = m.wait_token(toks[r["args"][0]])
    elif op == "test_wait_raw_token":
        result = m.wait_token(int(r["arg64_hex"], 16))
    elif op in ("test_wait_parity", "try_wait_parity", "try_wait_parity_nohint"):
        result = m.wait_parity(counts[0])
    elif op == "inval":
        m.inval()
    elif op == "store":
        m.store(int(r["arg64_hex"], 16))
    elif op == "xor_store":
        m.store(m.mem ^ int(r["arg64_hex"], 16))
    return lane_tok, result


def check(records, faulting):
    """Replays each sequence through the model; counts agreements per kind of observation."""
    stats = {k: [0, 0] for k in ("token_hi", "lane_token_hi", "pending_count", "result", "word_after_inval",
                                 "live_word", "trap")}
    mismatches = []
    by_seq = {}
    for r in records:
        by_seq.setdefault(r["sequence"], []).append(r)

    def tally(kind, ok, r, what):
        stats[kind][0 if ok else 1] += 1
        if not ok and len(mismatches) < 50:
            mismatches.append(f"{r['sequence']} step {r['step']} {r['op']}: {kind} {what}")

    for name, rs in by_seq.items():
        m = Model()
        toks = {}
        for r in rs:
            lane_tok, result = step_model(m, r, toks)
            first = int(r["lane_mask"], 16)
            first = (first & -first).bit_length() - 1
            if r["op"] in TOKEN_OPS:
                got = int(r["token_hex"], 16)
                toks[r["step"]] = got
                tally("token_hi", (got >> 32) == lane_tok[first], r, f"model {lane_tok[first]:08x} silicon {got >> 32:08x}")
                want_pc = (0x100000 - ((got >> 43) & M20))
                tally("pending_count", r["pending_count"] == want_pc, r, f"{r['pending_count']} vs {want_pc}")
                for lane in r.get("lanes", []):
                    lt = int(lane["token_hex"], 16)
                    tally("lane_token_hi", (lt >> 32) == lane_tok[lane["lane"]], r,
                          f"lane {lane['lane']} model {lane_tok[lane['lane']]:08x} silicon {lt >> 32:08x}")
            if r["op"] in WAIT_OPS:
                tally("result", r["result"] == result, r, f"model {result} silicon {r['result']}")
            # after_inval: the snapshot run inval'd right after this step
            snap = Model()
            snap.state, snap.mem, snap.cached = m.state, m.mem, m.cached
            snap.inval()
            tally("word_after_inval", int(r["after_inval_hex"], 16) == snap.mem, r,
                  f"model {snap.mem:016x} silicon {r['after_inval_hex']}")
            tally("live_word", int(r["word_hex"], 16) == m.mem, r, f"model {m.mem:016x} silicon {r['word_hex']}")
        fs = faulting.get(name)
        if fs is not None:
            # the step after the last recorded one faulted on silicon: the model must trap there too
            steps = fs["steps"]
            r = steps[fs["faulting_step"]]
            try:
                step_model(m, r, toks)
                tally("trap", False, {"sequence": name, "step": r["step"], "op": r["op"]}, "model did not trap")
            except Trap as e:
                tally("trap", True, r, str(e))
    return stats, mismatches


def compact(r):
    out = {"sequence": r["sequence"], "step": r["step"], "op": r["op"], "args": r["args"]}
    if "arg64_hex" in r:
        out["arg64_hex"] = r["arg64_hex"]
    if r["lane_mask"] != "0x00000001":
        out["lane_mask"] = r["lane_mask"]
        if r["per_lane_count"]:
            out["per_lane_count"] = True
    out["token_hex"] = r["token_hex"]
    out["pending_count"] = r["pending_count"]
    out["result"] = r["result"]
    out["word_hex"] = r["word_hex"]
    out["after_inval_hex"] = r["after_inval_hex"]
    live = {r[k] for k in ("word_hex", "ld_volatile_hex", "ld_generic_hex", "ld_fenced_hex", "ld_late_hex",
                           "atom_or64_hex", "atom_or32x2_hex")}
    if len(live) != 1:
        out["live_reads"] = {k: r[k] for k in ("ld_volatile_hex", "ld_generic_hex", "ld_fenced_hex", "ld_late_hex",
                                               "atom_or64_hex", "atom_or32x2_hex")}
    if r["after_inval_late_hex"] != r["after_inval_hex"]:
        out["after_inval_late_hex"] = r["after_inval_late_hex"]
    replay_ok = True
    if r["token_hex"] is not None:
        replay_ok = r["atom_run_token_hex"] == r["token_hex"] == r["snapshot_run_token_hex"]
    if r["result"] is not None:
        replay_ok = replay_ok and int(r["result"]) == r["atom_run_result"] == r["snapshot_run_result"]
    if not replay_ok:
        out["replays"] = {"atom_run_token_hex": r["atom_run_token_hex"], "snapshot_run_token_hex": r["snapshot_run_token_hex"],
                          "atom_run_result": r["atom_run_result"], "snapshot_run_result": r["snapshot_run_result"]}
    out["cycles"] = r["cycles"]
    if "lanes" in r:
        lanes = r["lanes"]
        toks = {l.get("token_hex") for l in lanes}
        out["lane_count"] = len(lanes)
        if r["token_hex"] is not None and len(toks) == 1:
            out["lane_tokens_identical"] = True  # every lane got token_hex; the per-lane list is left out
        else:
            out["lanes"] = lanes
    return out


def main():
    d, out = sys.argv[1], sys.argv[2]
    date = "2026-11-21"
    if "--date" in sys.argv:
        date = sys.argv[sys.argv.index("--date") + 1]
    env = open(os.path.join(d, "env.txt")).read()
    gpu_line = re.search(r"^(NVIDIA [^,]+), ([0-9.]+)$", env, re.M)
    nvcc = re.search(r"release [0-9.]+, (V[0-9.]+)", env)
    when = re.search(r"date_utc: (\S+)", env)
    safe = json.load(open(os.path.join(d, "safe.json")))
    safe2 = json.load(open(os.path.join(d, "safe2.json")))
    ub = json.load(open(os.path.join(d, "ub.json")))
    forge = json.load(open(os.path.join(d, "forge.json")))
    diffs = sum(1 for a, b in zip(safe["records"], safe2["records"]) for k in a if k != "cycles" and a[k] != b[k])
    prov = dict(safe["provenance"])
    prov.pop("group", None)
    prov.pop("mock", None)
    prov.update({
        "gpu": gpu_line.group(1) if gpu_line else prov.get("gpu"),
        "driver": gpu_line.group(2) if gpu_line else None,
        "nvcc": nvcc.group(1) if nvcc else prov.get("nvcc"),
        "build": "nvcc -O2 -arch=sm_90 cosim/gpu/probe/mbarrier_probe.cu",
        "run_utc": when.group(1) if when else None,
        "date": date,
        "source": "cosim/gpu/probe/run.sh (mbarrier_probe.cu), condensed by cosim/gpu/probe/condense.py",
        "safe_runs_identical_except_cycles": diffs == 0,
    })

    faulting = {}
    seq_meta = []
    for g in (ub, forge):
        for s in g["sequences"]:
            meta = {k: s[k] for k in ("sequence", "note", "full_rc") if k in s}
            meta["group"] = g["group"]
            if s.get("full_rc"):
                meta["faulting_step"] = s.get("faulting_step")
            seq_meta.append(meta)
    for s in safe["sequences"]:
        seq_meta.append({"sequence": s["sequence"], "note": s["note"], "group": "safe", "full_rc": 0})

    # ops of the faulting steps come from the sequence definitions (not recorded: the launch died)
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mbarrier_probe.cu")).read()
    fault_ops = faulting_ops(src)
    for meta in seq_meta:
        if meta.get("faulting_step") is not None:
            step = fault_ops[meta["sequence"]][meta["faulting_step"]]
            meta["faulting_op"] = step
            faulting[meta["sequence"]] = {"faulting_step": 0, "steps": [step]}

    records = safe["records"] + ub["records"] + forge["records"]
    stats, mismatches = check(records, faulting)
    doc = {
        "provenance": prov,
        "fields": {
            "word_hex": "ld.shared.b64 of the mbarrier word right after the step (ld.volatile, generic ld, "
                        "fence.proxy.async+ld, ld after 20 us, atom.or.b64 0 and 2x atom.or.b32 0 gave the same "
                        "value unless live_reads says otherwise)",
            "after_inval_hex": "the word read after replaying steps 0..step on a fresh slot and then mbarrier.inval "
                               "(inval writes the SYNCS unit's copy back to shared memory)",
            "token_hex": "the 64-bit state register returned by lane (lowest lane of lane_mask); bits 0..31 of "
                         "plain arrives are not written by the instruction (register leftovers)",
            "pending_count": "mbarrier.pending_count.b64 of the token",
            "result": "waitComplete of test_wait/try_wait",
            "cycles": "clock64 around the step, lane 0 (includes __syncwarp and the interpreter's overhead)",
            "lanes": "per-lane {lane, token_hex?, pending_count?, result?} for steps of several lanes, unless "
                     "lane_tokens_identical",
        },
        "model_check": {"agree_disagree": stats, "mismatches": mismatches},
        "sequences": seq_meta,
        "records": [compact(r) for r in records],
        "capacity": [{k: v for k, v in c.items() if k not in ("samples",)} | {"runs": {k: v for k, v in c["runs"].items() if k != "token"}}
                     for c in safe["capacity"]],
    }
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(json.dumps(doc["model_check"], indent=1))
    print("bytes", os.path.getsize(out))


def faulting_ops(src):
    """Parses the sequence definitions of mbarrier_probe.cu into {name: [record-like step dicts]}."""
    names = {"OP_INIT": "init", "OP_ARRIVE": "arrive", "OP_ARRIVE_CNT": "arrive_count", "OP_ARRIVE_NOC": "arrive_noComplete",
             "OP_DROP": "arrive_drop", "OP_DROP_CNT": "arrive_drop_count", "OP_DROP_NOC": "arrive_drop_noComplete",
             "OP_ARRIVE_TX": "arrive_expect_tx", "OP_DROP_TX": "arrive_drop_expect_tx", "OP_EXPECT_TX": "expect_tx",
             "OP_COMPLETE_TX": "complete_tx", "OP_TEST_TOK": "test_wait_token", "OP_TRY_TOK": "try_wait_token",
             "OP_TEST_PAR": "test_wait_parity", "OP_TRY_PAR": "try_wait_parity", "OP_TRY_PAR_NOHINT": "try_wait_parity_nohint",
             "OP_TEST_RAW": "test_wait_raw_token", "OP_INVAL": "inval", "OP_STORE": "store", "OP_XORSTORE": "xor_store"}
    consts = {"MAXC": (1 << 20) - 1, "HINT": 2000, "ALL": 0xFFFFFFFF, "F_PERLANE_COUNT": 1}
    out = {}
    # plain mk("name", "note", { S(...), ... }) definitions
    for m in re.finditer(r'mk\("([^"]+)",\s*"[^"]*",\s*\{(.*?)\}\)\);', src, re.S):
        out[m.group(1)] = [parse_step(s, names, consts, i, m.group(1)) for i, s in enumerate(re.findall(r"S\(([^()]*(?:\([^()]*\)[^()]*)*)\)", m.group(2)))]
    # forge_xor_bitN sequences are generated in a loop: rebuild them
    loop = re.search(r'const int bits\[\] = \{([^}]*)\};.*?v\.push_back\(mk\(name, note, \{(.*?)\}\)\);', src, re.S)
    if loop:
        for b in [int(x) for x in loop.group(1).split(",")]:
            body = loop.group(2).replace("1ull << b", f"{1 << b}ull")
            name = f"forge_xor_bit{b}"
            out[name] = [parse_step(s, names, consts, i, name) for i, s in enumerate(re.findall(r"S\(([^()]*(?:\([^()]*\)[^()]*)*)\)", body))]
    return out


def parse_step(text, names, consts, idx, seq):
    parts = [p.strip() for p in text.split(",")]
    op = names[parts[0]]

    def val(p):
        p = re.sub(r"(?<=[0-9a-fA-F])(ull|u)\b", "", p)
        return int(eval(p, {}, dict(consts)))  # noqa: S307 - constant expressions of our own source

    arg = val(parts[1]) if len(parts) > 1 else 0
    arg64 = val(parts[2]) if len(parts) > 2 else 0
    mask = val(parts[3]) if len(parts) > 3 else 1
    flags = val(parts[4]) if len(parts) > 4 else 0
    no_arg = op in ("arrive", "arrive_drop", "inval", "store", "xor_store", "test_wait_raw_token")
    r = {"sequence": seq, "step": idx, "op": op, "args": [] if no_arg else [arg], "lane_mask": f"0x{mask:08x}",
         "per_lane_count": bool(flags & 1)}
    if arg64 or op in ("store", "xor_store", "test_wait_raw_token"):
        r["arg64_hex"] = f"0x{arg64:016x}"
    return r


if __name__ == "__main__":
    main()
