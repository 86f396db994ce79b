#!/usr/bin/env python3
"""Compares the (fourcc, width, height, interval) tuples of `capctl formats --json`
with those of `v4l2-ctl --list-formats-ext` for one node. Exits 1 with the
differences when they disagree, or when either side has no tuple at all."""
import json
import re
import subprocess
import sys

capctl, node = sys.argv[1], sys.argv[2]

doc = json.loads(subprocess.run([capctl, "formats", node, "--json"], check=True, capture_output=True, text=True).stdout)
ours = set()
for fmt in doc["formats"]:
    for size in fmt["sizes"]:
        if "width" not in size:
            ours.add((fmt["fourcc"], "range", size["type"]))
            continue
        intervals = size["intervals"]
        if not isinstance(intervals, list):
            ours.add((fmt["fourcc"], size["width"], size["height"], "intervals", None if intervals is None else intervals["type"]))
            continue
        for interval in intervals:
            # v4l2-ctl prints fps with three decimals: compare on that.
            ours.add((fmt["fourcc"], size["width"], size["height"], "%.3f" % (interval["denominator"] / interval["numerator"])))

text = subprocess.run(["v4l2-ctl", "-d", node, "--list-formats-ext"], check=True, capture_output=True, text=True).stdout
theirs = set()
fourcc = width = height = None
for line in text.splitlines():
    line = line.strip()
    if m := re.match(r"\[\d+\]: '([^']+)'", line):
        # Both print a big-endian code with its padding ('Y16 -BE'); a short
        # code's trailing padding ('Y16 ', 'Y10 ') is dropped by capctl.
        fourcc = m.group(1).rstrip()
    elif m := re.match(r"Size: Discrete (\d+)x(\d+)", line):
        width, height = int(m.group(1)), int(m.group(2))
    elif m := re.match(r"Size: (Stepwise|Continuous)", line):
        theirs.add((fourcc, "range", m.group(1).lower()))
        width = height = None
    elif m := re.match(r"Interval: Discrete [0-9.]+s \(([0-9.]+) fps\)", line):
        theirs.add((fourcc, width, height, m.group(1)))
    elif m := re.match(r"Interval: (Stepwise|Continuous)", line):
        theirs.add((fourcc, width, height, "intervals", m.group(1).lower()))

print(f"capctl: {len(ours)} tuples, v4l2-ctl: {len(theirs)} tuples, {len({t[0] for t in theirs})} formats")
if not ours or not theirs:
    sys.exit("no tuples to compare")
if ours != theirs:
    for t in sorted(ours - theirs, key=str)[:20]:
        print("only capctl:  ", t)
    for t in sorted(theirs - ours, key=str)[:20]:
        print("only v4l2-ctl:", t)
    sys.exit(1)
