#!/usr/bin/env python3
"""Summarize an `ncu --csv --metrics gpu__time_duration.sum` log: GPU time per frame and the
kernels that take it. Usage: ncu_summary.py LOG.csv FRAMES"""
import collections
import csv
import sys

UNITS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}


def main(path, frames):
    rows = [r for r in csv.reader(open(path)) if len(r) > 10]
    if not rows:
        print(f"{path}: no kernel rows")
        return 1
    head, body = rows[0], rows[1:]
    k, v, u = head.index("Kernel Name"), head.index("Metric Value"), head.index("Metric Unit")
    total, count = collections.Counter(), collections.Counter()
    for r in body:
        ms = float(r[v].replace(",", "")) * UNITS.get(r[u], 1.0)
        total[r[k][:90]] += ms
        count[r[k][:90]] += 1
    all_ms = sum(total.values())
    print(f"{len(body) / frames:.0f} kernels and {all_ms / frames:.2f} ms of GPU time per frame ({frames} frames)")
    for name, ms in total.most_common(15):
        print(f"{ms / frames:7.3f} ms {100 * ms / all_ms:5.1f}%  x{count[name] / frames:<5.1f} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
