#!/usr/bin/env python3
"""CPU per connection of a `pgbench -C` run (scripts/bench/pgcalls.sh), and the
CPU so far of a cluster and the server (scripts/bench/pgbench.sh).

    cpu_of_run.py POSTMASTER_PID SERVER_PID CONNECTIONS LABEL COMMAND...
        runs COMMAND (pgbench) and prints one line: LABEL, then the user +
        system microseconds per connection of PostgreSQL (the postmaster,
        its live children and the children it reaped), of COMMAND and its
        children, and of the NFS server (0 when SERVER_PID is empty), and
        PostgreSQL's minor page faults per connection.
    cpu_of_run.py --table FILE SERVER_PID
        prints the medians of those lines, per LABEL, as a table, and
        each run's total.
    cpu_of_run.py --now POSTMASTER_PID SERVER_PID
        prints the user + system microseconds so far of PostgreSQL (as
        above) and of the NFS server: a caller takes them around a run.
"""
import collections
import os
import resource
import statistics
import subprocess
import sys

HZ = os.sysconf("SC_CLK_TCK")


def fields(pid):
    """/proc/PID/stat after the command name (field 3 is index 0)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def postgres_cpu(pm):
    """CPU seconds and minor faults of the postmaster, its live children
    and its reaped ones."""
    ticks = faults = own = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            f = fields(pid)
        except OSError:
            continue  # gone meanwhile: counted in the postmaster's c* fields
        if pid == pm:
            ticks += sum(int(x) for x in f[11:15])  # utime stime cutime cstime
            own = int(f[11]) + int(f[12])
            faults += int(f[7]) + int(f[8])  # minflt cminflt
        elif f[1] == pm:
            ticks += int(f[11]) + int(f[12])
            faults += int(f[7])
    return ticks / HZ, faults, own / HZ


def server_cpu(pid):
    if not pid:
        return 0.0
    f = fields(pid)
    return (int(f[11]) + int(f[12])) / HZ


def run(pm, server, conns, label, cmd):
    (pg0, pf0, own0), srv0 = postgres_cpu(pm), server_cpu(server)
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    (pg1, pf1, own1), srv1 = postgres_cpu(pm), server_cpu(server)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    if f"number of transactions actually processed: {conns}/" not in out.stdout:
        sys.exit(f"cpu_of_run.py: run incomplete:\n{out.stdout}{out.stderr}")

    def per(seconds):
        return seconds / conns * 1e6

    print(label, f"{per(pg1 - pg0):.1f}", f"{per(ru.ru_utime + ru.ru_stime):.1f}",
          f"{per(srv1 - srv0):.1f}", f"{(pf1 - pf0) / conns:.1f}", f"{per(own1 - own0):.1f}")


def table(path, server):
    rows = collections.defaultdict(list)
    for line in open(path):
        label, *values = line.split()
        rows[label].append([float(v) for v in values])
    print("\nCPU per -C connection (us, median of the runs; PostgreSQL = the postmaster"
          " and its children, the backends included):")
    print("| cluster | PostgreSQL | pgbench | NFS server | total | each run's total"
          " | PostgreSQL's page faults | the postmaster's own |")
    print("|---|---|---|---|---|---|---|---|")
    for label, runs in rows.items():
        m = [statistics.median(c) for c in zip(*runs)]
        srv = f"{m[2]:.0f}" if server else "-"
        each = " ".join(f"{sum(r[:3]):.0f}" for r in runs)
        print(f"| {label} | {m[0]:.0f} | {m[1]:.0f} | {srv} | {sum(m[:3]):.0f} | {each}"
              f" | {m[3]:.0f} | {m[4]:.0f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--table"]:
        table(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
    elif sys.argv[1:2] == ["--now"]:
        print(round(postgres_cpu(sys.argv[2])[0] * 1e6), round(server_cpu(sys.argv[3]) * 1e6))
    else:
        run(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:])
