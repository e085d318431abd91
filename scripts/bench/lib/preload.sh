# shellcheck shell=bash
# Helpers of the scripts that run programs through `dnfs run` against a
# test server given by its URL (DNFS_TEST_URL's form,
# nfs://HOST/EXPORT?nfsport=N&mountport=M). Sourced, never executed.

# dnfs_binary [DNFS]: prints the `dnfs` binary to use: DNFS when given (a
# build of its own, its interception library next to it), else this
# tree's, built now.
dnfs_binary() {
    if [[ -n ${1:-} ]]; then
        echo "$1"
        return
    fi
    (cd "$ROOT" && cargo build --release -p directnfs-cli -p directnfs-preload >&2)
    echo "$ROOT/target/release/dnfs"
}

# dnfstab_for URL SERVER MOUNT [LINE...]: prints a dnfstab that serves
# URL's export under MOUNT (one connection), then the extra LINEs.
dnfstab_for() {
    local url=${1#nfs://} server=$2 mount=$3 line
    shift 3
    local host=${url%%/*} rest=/${url#*/}
    local nfsport mountport
    nfsport=$(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$rest")
    mountport=$(sed -n 's/.*mountport=\([0-9]*\).*/\1/p' <<<"$rest")
    echo "server: $server"
    echo "path: $host"
    if [[ -n $nfsport ]]; then echo "port: $nfsport"; fi
    if [[ -n $mountport ]]; then echo "mount_port: $mountport"; fi
    echo "connections: 1"
    for line in "$@"; do echo "$line"; done
    echo "export: ${rest%%\?*} mount: $mount"
}

# nfs_server_up EXPORT: the server of $DNFS_STATE_DIR if it runs, else one
# started now on EXPORT. Sets URL (its nfs:// URL), EXPORT (the running
# server's exported directory, or EXPORT) and STARTED (1 when started
# here: the caller stops it at the end).
nfs_server_up() {
    STARTED=0
    if bash "$ROOT/scripts/server/nfs-server.sh" status >/dev/null 2>&1; then
        URL=$(bash "$ROOT/scripts/server/nfs-server.sh" url | tail -1)
        # shellcheck disable=SC1091
        EXPORT=$(. "$DNFS_STATE_DIR/state.env" && echo "$EXPORT_DIR")
    else
        EXPORT=$1
        mkdir -p "$EXPORT"
        # shellcheck disable=SC2034 # URL and STARTED: read by the script that sources this file
        URL=$(bash "$ROOT/scripts/server/nfs-server.sh" start "$EXPORT" | tail -1)
        # shellcheck disable=SC2034 # (as URL)
        STARTED=1
    fi
}
