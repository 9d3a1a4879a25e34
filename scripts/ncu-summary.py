#!/usr/bin/env python3
"""Per-kernel totals of an Nsight Compute CSV (ncu --csv --metrics gpu__time_duration.sum
--print-units base): one line per kernel name with its launches, total and mean time and
share of the total, largest first. Used by scripts/gpu-check.sh's profile steps.

    python3 scripts/ncu-summary.py profile.csv
"""
import csv
import sys
from collections import defaultdict


def main(path):
    with open(path, newline="") as f:
        # ncu prints its own lines (==PROF== ...) before the CSV header.
        lines = [line for line in f if line.startswith('"')]
    rows = list(csv.DictReader(lines))
    if not rows:
        print(f"{path}: no profiled kernels")
        return 1
    total = defaultdict(float)
    count = defaultdict(int)
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = r.get("Kernel Name", "?")
        try:
            total[name] += float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        count[name] += 1
    grand = sum(total.values())
    print(f"{sum(count.values())} kernels, {grand / 1e6:.3f} ms in all")
    print("| kernel | launches | total us | mean us | share |")
    print("| --- | --- | --- | --- | --- |")
    for name, ns in sorted(total.items(), key=lambda kv: -kv[1]):
        short = name if len(name) <= 90 else name[:87] + "..."
        print(f"| {short} | {count[name]} | {ns / 1e3:.1f} | {ns / 1e3 / count[name]:.2f} | {100 * ns / grand:.1f}% |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
