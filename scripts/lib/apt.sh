# shellcheck shell=bash
# Package installs for the project's scripts. Sourced, never executed.

# apt_install_quiet PKG...: apt-get update, then installs PKG... without
# letting any package start its daemon (prometheus, postgresql, mariadb:
# the scripts run their own). A policy-rc.d that forbids every start, only
# for this install, and only if the machine has none.
apt_install_quiet() {
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    local policy=/usr/sbin/policy-rc.d ours=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 0755 "$policy"
        ours=1
    fi
    local rc=0
    apt-get install -y -qq -o Dpkg::Options::=--force-confold "$@" >/dev/null || rc=$?
    if ((ours)); then rm -f "$policy"; fi
    return "$rc"
}

# want_postgresql BIN_DIR: when BIN_DIR/postgres is missing, adds
# postgresql to the caller's `missing` array and makes the package create
# no "main" cluster (the scripts make their own clusters).
want_postgresql() {
    [[ -x $1/postgres ]] && return 0
    missing+=(postgresql)
    mkdir -p /etc/postgresql-common
    [[ -e /etc/postgresql-common/createcluster.conf ]] ||
        echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
}
