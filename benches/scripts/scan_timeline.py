"""Summarises the per-tile timeline of the staged scan (`bandwidth scan-timeline LOG2` output on stdin):
where a tile's time goes (load, reduce, look-back, scan, copy-out), in nanoseconds, as percentiles
over the tiles of the middle of the launch (the first and last 5% are ramp-up and tail)."""
import sys

import numpy as np

rows = np.loadtxt(sys.stdin, delimiter=",", skiprows=1, dtype=np.float64)
tile, start, packed, c0, c1, c2, c3, c4, end = rows.T
packed = packed.astype(np.uint64)
sm = (packed & np.uint64(0xFFFF)).astype(np.float64)
windows = ((packed >> np.uint64(16)) & np.uint64(0xFFFFFF)).astype(np.float64)
polls = (packed >> np.uint64(40)).astype(np.float64)
n = len(tile)
mid = slice(n // 20, n - n // 20)
# Cycles to nanoseconds: the multiprocessor clock against the global timer at the tickets of the
# tiles of one multiprocessor (the slope of a line fit, median over multiprocessors).
slopes = []
for s in np.unique(sm):
    idx = np.where(sm == s)[0]
    if len(idx) > 10 and np.ptp(start[idx]) > 0:
        slopes.append(np.polyfit(start[idx], c0[idx], 1)[0])
ghz = float(np.median(slopes))
print(f"tiles {n}, launch {(end.max() - start.min()) / 1e3:.1f} us, clock ~{ghz:.2f} GHz (from c/ns)")
phases = {
    "load (ticket -> landed)": (c1 - c0) / ghz,
    "reduce + warp totals": (c2 - c1) / ghz,
    "look-back": (c3 - c2) / ghz,
    "scan rows": (c4 - c3) / ghz,
    "tile total (ticket -> end)": end - start,
}
for name, values in phases.items():
    v = values[mid]
    p = np.percentile(v, [10, 50, 90, 99])
    print(f"{name:28s} mean {v.mean():8.0f}  p10 {p[0]:8.0f}  p50 {p[1]:8.0f}  p90 {p[2]:8.0f}  p99 {p[3]:8.0f} ns")
order = np.argsort(start)
starts = start[order]
print(f"tile starts: {len(starts) / ((starts[-1] - starts[0]) / 1e3):.1f} per us")
# Resident tiles over time (sampled at tile starts in the middle of the launch).
samples = starts[n // 4 : 3 * n // 4 : max(1, n // 200)]
resident = [np.sum((start <= t) & (end > t)) for t in samples]
print(f"resident tiles: mean {np.mean(resident):.0f} (min {np.min(resident)}, max {np.max(resident)})")
# Gap between a tile's end and the next start on the same multiprocessor.
gaps = []
for s in np.unique(sm):
    idx = np.where(sm == s)[0]
    st = np.sort(start[idx])
    en = np.sort(end[idx])
    gaps.append(st[5:] - en[: len(st) - 5])
for name, values in {"look-back windows": windows, "look-back poll rounds": polls}.items():
    v = values[mid]
    p = np.percentile(v, [10, 50, 90, 99])
    print(f"{name:28s} mean {v.mean():8.1f}  p10 {p[0]:8.0f}  p50 {p[1]:8.0f}  p90 {p[2]:8.0f}  p99 {p[3]:8.0f}")
print(f"per-SM tiles: {n / len(np.unique(sm)):.0f}")
# From the ticket, when each step was done (for the warp-specialized scan, whose look-back runs
# beside the load, the phases above can overlap).
for name, values in {"landed": c1, "aggregate": c2, "prefix": c3, "barrier": c4}.items():
    v = ((values - c0) / ghz)[mid]
    p = np.percentile(v, [10, 50, 90, 99])
    print(f"ticket -> {name:18s} mean {v.mean():8.0f}  p10 {p[0]:8.0f}  p50 {p[1]:8.0f}  p90 {p[2]:8.0f}  p99 {p[3]:8.0f} ns")
