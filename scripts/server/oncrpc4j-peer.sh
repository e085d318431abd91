#!/usr/bin/env bash
# oncrpc4j-peer.sh — an independent RPC-with-TLS (RFC 9289) peer for the TLS
# interop test (crates/client/tests/tls_interop.rs): an RPC server made of
# oncrpc4j 3.4.2 (dCache's ONC RPC library for Java, which speaks RFC 9289),
# serving just enough of MOUNT v3 and NFSv3 for a mount of its one export "/".
# The project's own STARTTLS front (tls-front.py) is written by the same hands
# as the client; this one is not. Sources: tests/interop/oncrpc4j/.
#
#   oncrpc4j-peer.sh build                 build it (mvn package) unless built
#   oncrpc4j-peer.sh start DIR PORT        build, make the certificates, start
#                                          in the background (or find running)
#                                          and print key=value lines
#   oncrpc4j-peer.sh stop DIR              stop exactly the PID in DIR/peer.pid
#   oncrpc4j-peer.sh status DIR            key=value lines; exit 3 if down
#
# The peer listens on 127.0.0.1:PORT (STARTTLS) and PORT+1 (STARTTLS, a client
# certificate signed by the CA required: mtls), TLS 1.3 only; every call but
# the AUTH_TLS probe must come in TLS (one in clear is refused, AUTH_TOOWEAK).
# It logs each call to DIR/peer.log ("call port=.. prog=.. proc=.. flavor=..
# tls=true|false"). Its certificates are tls-front.py's, made by the same code
# in DIR: ca.pem, server.pem/.key (IP 127.0.0.1, name nfs.test), client.pem/
# .key, other-ca.pem.
#
# Environment:
#   DNFS_ONCRPC4J_M2        Maven's local repository (default: .m2/ beside the
#                           pom, ignored by git); the first build fetches the
#                           dependencies into it, later builds run offline
#   DNFS_ONCRPC4J_WATCH_PID the peer exits once this process is gone (a test
#                           binary that started it)
#   DNFS_START_TIMEOUT      seconds to wait for the peer to listen (default 60)
#
# Needs java (17 or later) and mvn: installed when missing and run as root
# (maven, default-jdk-headless); otherwise exit 3, which the test reports as a
# skip outside CI and a failure where the tests must run.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PROJECT="$ROOT/tests/interop/oncrpc4j"
M2=${DNFS_ONCRPC4J_M2:-$PROJECT/.m2}
JAR="$PROJECT/target/oncrpc4j-peer-1.jar"
# shellcheck source=scripts/lib/apt.sh
. "$ROOT/scripts/lib/apt.sh"

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

# Java and Maven, installed when missing (root only); exit 3 without them.
need_tools() {
    if command -v java >/dev/null && command -v mvn >/dev/null; then
        return 0
    fi
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "oncrpc4j-peer: installing maven and default-jdk-headless" >&2
        apt_install_quiet maven default-jdk-headless
    fi
    if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
        echo "oncrpc4j-peer: java and mvn are needed (apt-get install maven default-jdk-headless)" >&2
        exit 3
    fi
}

# True when the jar and its runtime classpath are newer than every source.
built() {
    [[ -f $JAR && -d $PROJECT/target/lib ]] || return 1
    [[ -z $(find "$PROJECT/pom.xml" "$PROJECT/src" -newer "$JAR" -print -quit) ]]
}

build() {
    need_tools
    mkdir -p "$PROJECT/target"
    # One build at a time (tests and test.sh may start peers side by side).
    exec 9>"$PROJECT/target/.build.lock"
    flock -w 600 9
    if ! built; then
        mvn_package
    fi
    # Closed before the peer starts: it must not hold the lock.
    exec 9>&-
}

mvn_package() {
    local mvn=(mvn -q -B -f "$PROJECT/pom.xml" "-Dmaven.repo.local=$M2" -Dmaven.test.skip=true
        package)
    # Offline once the repository holds everything; online the first time.
    if ! [[ -d $M2/org/dcache ]] || ! "${mvn[@]}" -o >"$PROJECT/target/build.log" 2>&1; then
        echo "oncrpc4j-peer: building (Maven fetches its dependencies into $M2 once)" >&2
        if ! "${mvn[@]}" >"$PROJECT/target/build.log" 2>&1; then
            cat "$PROJECT/target/build.log" >&2
            echo "oncrpc4j-peer: mvn package failed" >&2
            exit 1
        fi
    fi
    touch "$JAR"
}

# tls-front.py's certificates, made by its own code (same names, same CA).
make_certs() {
    python3 - "$1" "$HERE/tls-front.py" <<'EOF'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("tls_front", sys.argv[2])
front = importlib.util.module_from_spec(spec)
spec.loader.exec_module(front)
front.make_certs(sys.argv[1])
EOF
}

# The PID in DIR/peer.pid when that process runs our peer.
pid_of() {
    local pid
    pid=$(cat "$1/peer.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'org.directnfs.interop.Peer' || return 1
    echo "$pid"
}

print_status() {
    local dir=$1 pid=$2 port
    port=$(cat "$dir/peer.port")
    printf 'dir=%s\npid=%s\nstarttls_port=%s\nmtls_port=%s\n' "$dir" "$pid" "$port" $((port + 1))
}

start() {
    local dir port pid
    dir=$(mkdir -p "$1" && cd "$1" && pwd)
    port=$2
    [[ $port =~ ^[0-9]+$ ]] || usage
    if pid=$(pid_of "$dir"); then
        print_status "$dir" "$pid"
        return 0
    fi
    build
    make_certs "$dir"
    echo "$port" >"$dir/peer.port"
    : >"$dir/peer.log"
    local args=("$dir" "$port")
    if [[ -n ${DNFS_ONCRPC4J_WATCH_PID:-} ]]; then
        args+=("$DNFS_ONCRPC4J_WATCH_PID")
    fi
    setsid java -cp "$PROJECT/target/classes:$PROJECT/target/lib/*" \
        org.directnfs.interop.Peer "${args[@]}" >>"$dir/peer.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/peer.pid"
    local deadline=$((SECONDS + ${DNFS_START_TIMEOUT:-60}))
    until grep -q '^listening on' "$dir/peer.log"; do
        if ! kill -0 "$pid" 2>/dev/null || ((SECONDS > deadline)); then
            cat "$dir/peer.log" >&2
            echo "oncrpc4j-peer: did not start; see $dir/peer.log" >&2
            stop "$dir"
            exit 1
        fi
        sleep 0.2
    done
    print_status "$dir" "$pid"
}

stop() {
    local dir=$1 pid
    if pid=$(pid_of "$dir"); then
        kill "$pid"
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -f "$dir/peer.pid"
}

case ${1:-} in
build)
    build
    ;;
start)
    [[ $# == 3 ]] || usage
    start "$2" "$3"
    ;;
stop)
    [[ $# == 2 ]] || usage
    stop "$2"
    ;;
status)
    [[ $# == 2 ]] || usage
    if pid=$(pid_of "$2"); then
        print_status "$2" "$pid"
    else
        echo "pid="
        exit 3
    fi
    ;;
*)
    usage
    ;;
esac
