#!/usr/bin/env python3
"""Helpers of scripts/bench/pgbench-backup.sh.

    pgbench_backup.py sched PID FILE
        keeps in FILE what PID's threads have waited for a CPU so far
        (/proc/PID/task/*/schedstat: time runnable, not running) and the
        process's CPU time so far (/proc/PID/stat: user + system, its ended
        threads' included), for `sched-delta`.
    pgbench_backup.py sched-delta PID FILE
        prints "CPU_NS WAIT_NS" since `sched PID FILE`: the CPU time, and
        the wait for a CPU of the threads alive now (a thread that ended in
        between is left out; one that started counts from zero).
    pgbench_backup.py latency PREFIX
        reads pgbench's per-transaction logs PREFIX.* (`pgbench -l
        --log-prefix PREFIX`) and prints "COUNT AVG_MS P50_MS P99_MS P999_MS".
    pgbench_backup.py stats-delta EXPORT A B
        reads two `dnfs stats --json` snapshots and prints "LOG_WRITES
        LOG_P50_MS LOG_P99_MS DATA_READS DATA_P99_MS": the log-class writes
        and data-class reads made between them on the server export EXPORT
        (other users of the host are left out) by the processes alive at B
        (each process's latency histogram at B less its histogram at A;
        buckets within ~3.2%), summed over the processes.
    pgbench_backup.py classes LOG...
        reads the exit reports of DIRECTNFS_PRELOAD_STATS=1 ("io classes
        for /mnt: data=1r/2w log=0r/48w") in LOG files and prints "REPORTS
        WITH_LOG WITH_BULK WITH_BOTH LOG_WRITES BULK_WRITES": how many
        processes did log-class I/O, bulk-class I/O, and both.
    pgbench_backup.py table RESULTS
        prints the side-by-side table of RESULTS, one line per run:
        "PASS CLASSES LOAD TPS COUNT AVG P50 P99 P999 BACKUPS BACKUP_BYTES
        SECONDS SRV_CPU_NS SRV_WAIT_NS" and the five fields of stats-delta,
        medians over the passes.
"""
import collections
import glob
import json
import os
import re
import statistics
import sys


def snapshot(pid):
    """(CPU ns of the process, {tid: wait ns})."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read().rsplit(")", 1)[1].split()
    cpu = (int(stat[11]) + int(stat[12])) * 10**9 // os.sysconf("SC_CLK_TCK")
    waits = {}
    for task in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(task) as f:
                waits[task.split("/")[4]] = int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended in between
    return cpu, waits


def sched(pid, path):
    with open(path, "w") as f:
        json.dump(snapshot(pid), f)


def sched_delta(pid, path):
    with open(path) as f:
        cpu0, waits0 = json.load(f)
    cpu1, waits1 = snapshot(pid)
    wait = sum(w - waits0.get(tid, 0) for tid, w in waits1.items())
    print(cpu1 - cpu0, wait)


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, round(q * len(sorted_values)) - 1))
    return sorted_values[i]


def latency(prefix):
    lat = []
    for path in glob.glob(glob.escape(prefix) + ".*"):
        with open(path) as f:
            for line in f:
                parts = line.split()
                # client_id transaction_no time script_no time_epoch time_us
                if len(parts) >= 6 and parts[2].isdigit():
                    lat.append(int(parts[2]))
    lat.sort()
    if not lat:
        print("0 nan nan nan nan")
        return
    ms = lambda us: f"{us / 1000:.2f}"
    print(
        len(lat),
        ms(sum(lat) / len(lat)),
        ms(percentile(lat, 0.50)),
        ms(percentile(lat, 0.99)),
        ms(percentile(lat, 0.999)),
    )


def histograms(path, export, cls, op):
    """{pid: {bucket upper bound: count}} of class CLS, call OP, on EXPORT."""
    out = {}
    try:
        with open(path) as f:
            snap = json.load(f)
    except (OSError, ValueError):
        return out
    for p in snap.get("processes", []):
        h = out.setdefault(p["pid"], collections.Counter())
        for srv in p["stats"].get("servers", []):
            if srv.get("export") != export:
                continue
            lat = srv.get("io_classes", {}).get(cls, {}).get("latency_us", {}).get(op)
            for ub, n in (lat or {}).get("buckets", []):
                h[ub] += n
    return out


def quantile_ms(buckets, q):
    n = sum(buckets.values())
    if n <= 0:
        return float("nan")
    seen = 0
    for ub in sorted(buckets):
        seen += buckets[ub]
        if seen >= q * n:
            return ub / 1000
    return max(buckets) / 1000


def stats_delta(export, a, b):
    fields = []
    for cls, op, qs in (("log", "write", (0.5, 0.99)), ("data", "read", (0.99,))):
        before, after = histograms(a, export, cls, op), histograms(b, export, cls, op)
        total = collections.Counter()
        for pid, h in after.items():
            h = h.copy()
            h.subtract(before.get(pid, {}))
            total.update({ub: n for ub, n in h.items() if n > 0})
        fields.append(str(sum(total.values())))
        fields += [f"{quantile_ms(total, q):.2f}" for q in qs]
    print(" ".join(fields))


REPORT = re.compile(r"io classes for \S+: (.*)$")
CLASS = re.compile(r"(\w+)=(\d+)r/(\d+)w")


def classes(paths):
    reports = with_log = with_bulk = both = log_w = bulk_w = 0
    for path in paths:
        try:
            f = open(path, errors="replace")
        except OSError:
            continue
        with f:
            for line in f:
                m = REPORT.search(line)
                if not m:
                    continue
                reports += 1
                io = {k: (int(r), int(w)) for k, r, w in CLASS.findall(m.group(1))}
                lg = sum(io.get("log", (0, 0)))
                bk = sum(io.get("bulk", (0, 0)))
                log_w += io.get("log", (0, 0))[1]
                bulk_w += io.get("bulk", (0, 0))[1]
                with_log += lg > 0
                with_bulk += bk > 0
                both += lg > 0 and bk > 0
    print(reports, with_log, with_bulk, both, log_w, bulk_w)


def table(path):
    runs = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 19:
                continue
            runs[(p[1], p[2])].append([float(x) for x in p[3:]])
    med = lambda rows, i: statistics.median(r[i] for r in rows)
    passes = max((len(v) for v in runs.values()), default=0)
    print(f"medians of {passes} pass(es); latency per transaction from pgbench -l")
    print()
    print(
        "| classes | load | TPS | latency avg ms | p50 ms | p99 ms | p99.9 ms "
        "| WAL writes p50 / p99 ms | backups done | backup MB/s | server CPU (cores) "
        "| server threads waiting for a CPU |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for load in ("alone", "backup"):
        for cls in ("off", "on"):
            rows = runs.get((cls, load))
            if not rows:
                continue
            # TPS COUNT AVG P50 P99 P999 BACKUPS BYTES SECONDS CPU WAIT
            # LOG_WRITES LOG_P50 LOG_P99 DATA_READS DATA_P99
            mbs = statistics.median(r[7] / r[8] / 1e6 for r in rows)
            cpu = statistics.median(r[9] / (r[8] * 1e9) for r in rows)
            waiting = statistics.median(r[10] / (r[8] * 1e9) for r in rows)
            backups = "-" if load == "alone" else f"{med(rows, 6):g}"
            mb = "-" if load == "alone" else f"{mbs:.1f}"
            print(
                f"| {cls} | {load} | {med(rows, 0):,.0f} | {med(rows, 2):.2f} | {med(rows, 3):.2f} "
                f"| {med(rows, 4):.2f} | {med(rows, 5):.2f} | {med(rows, 12):.2f} / {med(rows, 13):.2f} "
                f"| {backups} | {mb} | {cpu:.2f} "
                f"| {waiting:.2f} |"
            )


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "sched":
        sched(args[0], args[1])
    elif cmd == "sched-delta":
        sched_delta(args[0], args[1])
    elif cmd == "latency":
        latency(args[0])
    elif cmd == "stats-delta":
        stats_delta(args[0], args[1], args[2])
    elif cmd == "classes":
        classes(args)
    elif cmd == "table":
        table(args[0])
    else:
        sys.exit(f"pgbench_backup.py: unknown command {cmd}")


if __name__ == "__main__":
    os.environ.setdefault("LC_ALL", "C")
    main()
