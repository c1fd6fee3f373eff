#!/usr/bin/env python3
"""Where the inference stream waited, from a RAVE_TIMELINE file (one-frame batches).

usage: timeline_summary.py TIMELINE.csv [SECTION]

For each frame k of SECTION (default: every section in turn): the inference stream's idle
time before it (inf_start[k] - inf_done[k-1], when positive), and what was last to arrive
of what frame k needed: the host's call (inf_begin), the preprocess kernel (pre_done), or
neither (the stream was busy: no idle). Then the inference's own GPU time, and the
postprocess' timings. Times in milliseconds on the run's clock.
"""
import csv
import statistics
import sys
from collections import defaultdict


def load(path):
    sections = defaultdict(lambda: defaultdict(dict))
    order = []
    with open(path) as f:
        for row in csv.DictReader(f):
            s = row["section"]
            if s not in sections:
                order.append(s)
            sections[s][row["what"]][int(row["seq"])] = float(row["ms"])
    return order, sections


def stats(name, values):
    if not values:
        return f"{name}: none"
    v = sorted(values)
    return (f"{name}: n {len(v)}, total {sum(v):.1f}, mean {statistics.mean(v):.3f}, "
            f"median {v[len(v) // 2]:.3f}, p90 {v[int(len(v) * 0.9)]:.3f}, max {v[-1]:.3f}")


def summarize(name, m):
    print(f"== section {name}")
    start, done = m.get("inf_start", {}), m.get("inf_done", {})
    frames = sorted(set(start) & set(done))
    if not frames:
        print("no inference marks")
        return
    span = done[frames[-1]] - start[frames[0]]
    busy, idle, causes = [], [], defaultdict(list)
    for k in frames:
        prev = done.get(k - 1)
        begin = start[k] if prev is None else max(start[k], prev)
        busy.append(done[k] - begin)
        if prev is None:
            continue
        gap = start[k] - prev
        if gap <= 0.005:
            continue
        idle.append(gap)
        late = {
            "host call (inf_begin)": m.get("inf_begin", {}).get(k),
            "preprocess kernel (pre_done)": m.get("pre_done", {}).get(k),
        }
        late = {c: t for c, t in late.items() if t is not None}
        cause = max(late, key=late.get) if late else "unknown"
        causes[cause].append(gap)
    print(f"frames {len(frames)}: first inference start to last done {span:.1f} ms "
          f"({span / len(frames):.3f} ms a frame)")
    print(stats("inference GPU time a frame (from its start or the previous end)", busy))
    print(stats("inference stream idle before a frame", idle))
    for cause, gaps in sorted(causes.items(), key=lambda kv: -sum(kv[1])):
        print("  last to arrive: " + stats(cause, gaps))
    pairs = [("inf_done", "post_convert_done", "postprocess kernel after the inference"),
             ("post_convert_done", "post_copy_done", "download copy"),
             ("post_copy_done", "post_synced", "host wakes after the copy"),
             ("post_synced", "post_unpacked", "unpack on the host"),
             ("dec_out", "pre_begin", "decoded frame to the preprocess call"),
             ("pre_begin", "pre_done", "preprocess call to its kernel's end"),
             ("pre_done", "inf_start", "preprocess end to the inference start")]
    for a, b, label in pairs:
        da, db = m.get(a, {}), m.get(b, {})
        print(stats(f"{label} ({b} - {a})", [db[k] - da[k] for k in sorted(set(da) & set(db))]))
    ahead = [done[k - 1] - m["inf_begin"][k] for k in frames
             if k - 1 in done and k in m.get("inf_begin", {})]
    print(stats("host call ahead of the previous frame's end (negative: late)", ahead))


def main():
    order, sections = load(sys.argv[1])
    for name in ([sys.argv[2]] if len(sys.argv) > 2 else order):
        summarize(name, sections[name])


if __name__ == "__main__":
    main()
