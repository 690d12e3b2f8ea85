#!/usr/bin/env python3
"""Merges the per-sequence results of one probe group (run one sequence per process by run.sh) into a
single JSON file. Usage: merge.py GROUP DIR OUT.json. DIR holds, for sequence I, I.status (lines "full RC"
and "prefix K RC") and I.json (the longest prefix that ran without a fault)."""
import json
import os
import sys


def main():
    group, d, out = sys.argv[1], sys.argv[2], sys.argv[3]
    merged = {"provenance": None, "group": group, "sequences": [], "records": []}
    idx = sorted(int(f[:-7]) for f in os.listdir(d) if f.endswith(".status"))
    for i in idx:
        status = open(os.path.join(d, f"{i}.status")).read().split("\n")
        full_rc, prefixes = None, []
        for line in status:
            w = line.split()
            if not w:
                continue
            if w[0] == "full":
                full_rc = int(w[1])
            elif w[0] == "prefix":
                prefixes.append((int(w[1]), int(w[2])))
        entry = {"index": i, "full_rc": full_rc, "prefix_runs": [list(p) for p in prefixes]}
        try:
            r = json.load(open(os.path.join(d, f"{i}.json")))
        except Exception as e:  # noqa: BLE001 - record anything that went wrong
            entry["error"] = f"no readable result: {e}"
            merged["sequences"].append(entry)
            continue
        if "error" in r:
            entry["error"] = r["error"]
        else:
            if merged["provenance"] is None:
                merged["provenance"] = r["provenance"]
            s = r["sequences"][0]
            entry.update({"sequence": s["sequence"], "note": s["note"], "steps_recorded": s["steps"]})
            ok = [k for k, rc in prefixes if rc == 0]
            bad = [k for k, rc in prefixes if rc != 0]
            if full_rc != 0:
                # prefix K ran = steps 0..K-1 fine; the first prefix that failed names the faulting step
                entry["faulting_step"] = (min(bad) - 1) if bad else None
                entry["longest_ok_prefix"] = max(ok) if ok else 0
            merged["records"].extend(r["records"])
        merged["sequences"].append(entry)
    json.dump(merged, open(out, "w"), indent=0)


if __name__ == "__main__":
    main()
