#!/usr/bin/env bash
# newproc-cost.sh — the CPU a new process spends on its first NFS calls
# through the interception library (what a PostgreSQL backend forked per
# connection pays), the client's and the server's, in CPU time and
# instructions rather than wall time, so the figures hold on a shared
# machine.
#
#   DNFS_TEST_URL='nfs://127.0.0.1/export?nfsport=2049&mountport=20048' \
#   DNFS_TEST_SERVER_PID=$(cat STATE_DIR/ganesha.pid) scripts/bench/newproc-cost.sh
#
# crates/preload/tests/c/forkstart.c, through `dnfs run` (one connection),
# forks N children one after the other; each opens a 8 KiB file on the
# export, reads 512 bytes and closes it (a backend reading its
# pg_filenode.map) CALLS times, then exits. Printed per child, for CALLS
# = 0, 1 and 10, and for the same program on a local file without the
# library:
#   child CPU     user + system time of the child, every thread (wait4)
#   page faults   the child's minor faults (wait4)
#   server CPU    the NFS server's user + system time over the run / N
#                 (/proc/PID/stat of DNFS_TEST_SERVER_PID; left out
#                 without it)
#   instructions  the child's user-space instructions, from fork to the
#                 end of exit, of the thread that forked (the child's
#                 only one, unless its client starts its threads), under
#                 valgrind --tool=callgrind (5 children; repeatable to a
#                 few hundred)
#
# Environment (all optional):
#   DNFS_NEWPROC_N     children per CPU run (default 1000)
#   DNFS_NEWPROC_DNFS  the `dnfs` binary to use (its interception library
#                      next to it), to compare two builds (default: this
#                      tree's, built)
#   DNFS_TEST_SERVER_PID  the server's pid, for its CPU
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

: "${DNFS_TEST_URL:?newproc-cost.sh needs DNFS_TEST_URL (scripts/server/nfs-server.sh start prints it)}"
N=${DNFS_NEWPROC_N:-1000}
SRV=${DNFS_TEST_SERVER_PID:-}
command -v valgrind >/dev/null || { echo "newproc-cost.sh: needs valgrind" >&2; exit 1; }

# shellcheck source=scripts/bench/lib/preload.sh
. "$ROOT/scripts/bench/lib/preload.sh"

DNFS=$(dnfs_binary "${DNFS_NEWPROC_DNFS:-}")
WORK=$(mktemp -d /tmp/dnfs-newproc.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
MNT=/dnfs-newproc
dnfstab_for "$DNFS_TEST_URL" newproc "$MNT" >"$WORK/dnfstab"
RUN=("$DNFS" --config "$WORK/dnfstab" run --)
cc -O2 -Wall -Werror -o "$WORK/forkstart" crates/preload/tests/c/forkstart.c
head -c 8192 /dev/urandom >"$WORK/local8k"
"$DNFS" --config "$WORK/dnfstab" cp "$WORK/local8k" "$MNT/newproc-8k" >/dev/null

server_cpu() { # seconds of the server's user + system time so far
    if [[ -n $SRV ]]; then
        awk -v hz="$(getconf CLK_TCK)" '{ printf "%.4f\n", ($14 + $15) / hz }' "/proc/$SRV/stat"
    else
        echo 0
    fi
}

row() { # LABEL COMMAND...
    local label=$1 before after out
    shift
    before=$(server_cpu)
    out=$("$@")
    after=$(server_cpu)
    local cpu faults
    cpu=$(sed -n 's/.*child CPU \([0-9.]*\) us.*/\1/p' <<<"$out")
    faults=$(sed -n 's/.*us, \([0-9]*\) page faults.*/\1/p' <<<"$out")
    if [[ -n $SRV ]]; then
        printf '| %s | %s | %s | %s |\n' "$label" "$cpu" "$faults" \
            "$(python3 -c "import sys; print(f'{(float(sys.argv[2]) - float(sys.argv[1])) / int(sys.argv[3]) * 1e6:.1f}')" "$before" "$after" "$N")"
    else
        printf '| %s | %s | %s | - |\n' "$label" "$cpu" "$faults"
    fi
}

instructions() { # COMMAND... : mean total of the children's callgrind profiles
    rm -f "$WORK"/cg.*
    "$@" >/dev/null 2>&1
    python3 - "$WORK" <<'EOF'
import glob, re, sys
totals = []
# Thread 1 of each process (--separate-threads): the one that forked,
# which is all of a child that starts no thread of its own; the other
# files hold what the parent's threads did between the zeroing and the
# fork, which the child inherited.
for f in glob.glob(sys.argv[1] + "/cg.*-01"):
    text = open(f, errors="replace").read()
    m = re.search(r"^totals: (\d+)", text, re.M)
    if m:
        totals.append(int(m.group(1)))
totals.sort()
# The parent's file is the smallest (it zeroes its counters before each fork).
kids = totals[1:]
print(f"{sum(kids) / len(kids):,.0f}" if kids else "-")
EOF
}

CG=(valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$WORK/cg.%p")
echo "A child of fork: open + 512-byte read + close, CALLS times, then exit ($N children per row)"
echo
echo "| child | CPU (us) | page faults | server CPU (us) |"
echo "|---|---|---|---|"
for calls in 0 1 10; do
    row "directnfs, $calls call(s)" "${RUN[@]}" "$WORK/forkstart" "$MNT/newproc-8k" "$N" "$calls" read
done
row "local file, no library, 1 call" "$WORK/forkstart" "$WORK/local8k" "$N" 1 read
echo
echo "| child | user-space instructions (callgrind) |"
echo "|---|---|"
for calls in 1 10; do
    echo "| directnfs, $calls call(s) | $(instructions "${RUN[@]}" "${CG[@]}" "$WORK/forkstart" "$MNT/newproc-8k" 5 "$calls" read) |"
done
echo "| local file, no library, 1 call | $(instructions "${CG[@]}" "$WORK/forkstart" "$WORK/local8k" 5 1 read) |"
"${RUN[@]}" rm -f "$MNT/newproc-8k"
