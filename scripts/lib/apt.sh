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
