#!/usr/bin/env python3
"""Prints the performance targets of the benchmark issue as a Markdown
table, from the JSON files `scripts/demo.sh` writes with
DNFS_DEMO_TARGETS=1 (each engine's run is the median of --repeat runs).

    python3 scripts/bench/targets.py bench-results/

A target whose JSON is missing is reported as "not run"; nothing is
guessed. Exit status 0 whatever the outcome: this reports, it does not
judge the build.
"""

import json
import os
import sys


def load(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def run(doc, engine):
    if doc is None:
        return None
    for r in doc.get("runs", []):
        if r.get("engine") == engine:
            return r
    return None


def fmt(v, digits=0):
    if v is None:
        return "-"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def ratio(a, b):
    if a is None or b in (None, 0):
        return None
    return a / b


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "bench-results"
    rows = []

    def add(name, metric, doc, get, target, better, digits=0, absolute=None):
        """better: 'high' or 'low'; target: the ratio to libnfs (or, with
        `absolute`, the value directnfs must reach)."""
        dn, ln, lo = (run(doc, e) for e in ("directnfs", "libnfs", "local"))
        vd, vl, vo = (get(r) if r else None for r in (dn, ln, lo))
        if absolute is not None:
            r = ratio(vd, vl)
            met = None if vd is None else (vd >= absolute if better == "high" else vd <= absolute)
        else:
            r = ratio(vd, vl)
            met = None if r is None else (r >= target if better == "high" else r <= target)
        verdict = "not run" if met is None else ("met" if met else "NOT met")
        rows.append(
            (name, metric, fmt(vl, digits), fmt(vo, digits), fmt(vd, digits),
             "-" if r is None else f"{r:.2f}x", verdict)
        )

    iops = lambda r: r.get("iops")
    cpu = lambda r: r.get("cpu_us_per_io")
    mbs = lambda r: r.get("mb_per_s")
    cpugb = lambda r: r.get("cpu_s_per_gb")
    p50 = lambda r: r.get("latency_us", {}).get("p50")
    p99 = lambda r: r.get("latency_us", {}).get("p99")

    rd = load(d, "oltp-read.json")
    add("reads 2x64", "IOPS (>= 1.2x)", rd, iops, 1.2, "high")
    add("reads 2x64", "client CPU us/IO (<= 0.33x)", rd, cpu, 1 / 3, "low", 2)
    dn, lo = run(rd, "directnfs"), run(rd, "local")
    if dn and lo:
        r = cpu(dn) / cpu(lo)
        rows.append(("reads 2x64", "client CPU vs local pread (<= 1.5x)", "-", fmt(cpu(lo), 2),
                     fmt(cpu(dn), 2), f"{r:.2f}x (vs local)", "met" if r <= 1.5 else "NOT met"))
    big = load(d, "oltp-read-8x128.json")
    add("reads 8x128", "IOPS (>= 63,000: 90% of the minimal client's 70k)", big, iops, None,
        "high", absolute=63000)
    mix = load(d, "oltp.json")
    add("oltp 2x16", "IOPS (>= 1.1x)", mix, iops, 1.1, "high")
    qd1 = load(d, "oltp-qd1.json")
    add("oltp 1x1", "IOPS (>= 1.0x)", qd1, iops, 1.0, "high")
    sc = load(d, "scan.json")
    add("scan 1 worker x 4", "MB/s (>= 1.2x)", sc, mbs, 1.2, "high")
    add("scan 1 worker x 4", "client CPU s/GB (<= 0.8x)", sc, cpugb, 0.8, "low", 3)
    redo = load(d, "redo.json")
    add("redo QD1 FILE_SYNC", "p50 latency us (<= 1.0x)", redo, p50, 1.0, "low")
    add("redo QD1 FILE_SYNC", "p99 latency us (<= 1.0x)", redo, p99, 1.0, "low")
    sw = load(d, "sweep.json")
    at1 = (sw or {}).get("iops_at_1ms", {})
    vd, vl = at1.get("directnfs"), at1.get("libnfs")
    r = ratio(vd, vl)
    rows.append(("sweep 1..16 x 8", "IOPS at 1 ms mean latency (>= 1.15x)", fmt(vl), "-", fmt(vd),
                 "-" if r is None else f"{r:.2f}x",
                 "not run" if r is None else ("met" if r >= 1.15 else "NOT met")))

    print("| workload | metric (target) | libnfs | local | directnfs | directnfs/libnfs | target |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
