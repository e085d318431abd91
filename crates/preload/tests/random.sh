# shellcheck shell=bash
# crates/preload/tests/random.sh — sourced by run.sh: the group
#
#   random  random sequences of calls (tests/c/randops.c), run once in a
#           local directory without the library and once on NFS through
#           `dnfs run`, as root and as the postgres user; the outputs
#           (results, errnos, the tree) must be the same but for lines the
#           harness tags with a deviation of docs/run-deviations.md
#           (tests/differ.py judges).
#
# DNFS_RANDOM_SEED (default 31) picks the sequence; DNFS_RANDOM_OPS
# (default 5000: about 4 s a version) its length, per user. The seed is
# printed, so a failure can be run again, and a longer run is one variable
# away.
#
# Uses run.sh's helpers and variables (RUN, WORK, NFS, nfs, check, ok, bad,
# step).
# shellcheck disable=SC2154  # run.sh's variables

RANDOM_SEED=${DNFS_RANDOM_SEED:-31}
RANDOM_OPS=${DNFS_RANDOM_OPS:-5000}

# random_pair NAME LOCAL-DIR NFS-DIR [USER]: one sequence in both places,
# judged by differ.py.
random_pair() {
    local name=$1 here=$2 there=$3 as=()
    [[ -n ${4:-} ]] && as=(runuser -u "$4" --)
    "${as[@]}" "$WORK/randops" "$here" "$RANDOM_SEED" "$RANDOM_OPS" >"$WORK/$name-local.out" 2>&1
    "${as[@]}" "${RUN[@]}" "$WORK/randops" "$there" "$RANDOM_SEED" "$RANDOM_OPS" \
        >"$WORK/$name-nfs.out" 2>"$WORK/$name-nfs.err"
    if python3 crates/preload/tests/differ.py "$WORK/$name-local.out" "$WORK/$name-nfs.out" >"$WORK/$name.judged"; then
        ok "$name: $(tail -1 "$WORK/$name.judged")"
    else
        cat "$WORK/$name.judged"
        bad "$name" "NFS differs from the local file system (seed $RANDOM_SEED, $RANDOM_OPS calls)"
    fi
    # The library's warnings: one per kind (mkfifo, a non-UTF-8 name), no
    # other.
    local other
    other=$(sed 's/^directnfs\[[0-9]*\]: //' "$WORK/$name-nfs.err" | grep -v -e 'mkfifo' -e 'UTF-8' || true)
    check "$name: no warning but the deviations'" "" "$other"
}

group_random() {
    step "random calls, compared with a local directory (randops.c, seed $RANDOM_SEED, $RANDOM_OPS calls)"
    echo "   to repeat: DNFS_RANDOM_SEED=$RANDOM_SEED DNFS_RANDOM_OPS=$RANDOM_OPS"
    if python3 crates/preload/tests/differ.py --check >"$WORK/deviations.check"; then
        ok "$(cat "$WORK/deviations.check")"
    else
        cat "$WORK/deviations.check"
        bad "the harness's deviations and docs/run-deviations.md differ"
    fi
    cc -O1 -Wall -Werror -o "$WORK/randops" crates/preload/tests/c/randops.c
    mkdir -p "$WORK/random-local"
    nfs mkdir -p "$NFS/random"
    random_pair "random as root" "$WORK/random-local" "$NFS/random"
    # As the postgres user, in a directory of its own holding a file of
    # root's: permissions matter.
    id postgres >/dev/null 2>&1 || { bad "postgres user" "missing (apt-get install postgresql)"; return; }
    mkdir -p "$WORK/random-user"
    printf 'root!' >"$WORK/random-user/rootfile"
    chown postgres "$WORK/random-user"
    nfs sh -c "mkdir -p $NFS/random-user && printf 'root!' >$NFS/random-user/rootfile && chown postgres $NFS/random-user"
    random_pair "random as postgres" "$WORK/random-user" "$NFS/random-user" postgres
}
