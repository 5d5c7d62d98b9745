#!/usr/bin/env bash
# Start, stop or report the Docker engines used as slaves by development and tests:
#   - the main engine on /var/run/docker.sock (started only when nothing answers there), and
#   - N extra engines slave2, slave3, ... on /var/run/gpuportal/slaveN.sock, each with its own
#     data root, exec root, pid file, containerd namespace, cgroup parent and bridge (gpbrN,
#     10.222.N.1/24). Engines that share or disable docker0 break each other's networking, so
#     every extra engine gets a bridge of its own.
#   - The extra engines listed in GPUPORTAL_IPV6_ENGINES (default: slave2, the contract
#     tests' second engine) run with IPv6 on (--ipv6, --fixed-cidr-v6 fd00:6770:N::/64 on
#     their bridge): their containers get an IPv6 address, and a published port gets an IPv6
#     binding next to the IPv4 one, as on a dual-stack production host.
# Every engine that answers gets the test image (scripts/build-test-image.sh).
#
# Usage: scripts/docker-engines.sh start|stop|status [--extra N] [--all]
#   start         start what is not running, wait until each engine answers `docker info`
#   stop          stop the extra engines (and remove their bridges)
#   stop --all    also stop the main engine, when this script started it
#   status        one line per engine
#   --extra N     number of extra engines (default $GPUPORTAL_EXTRA_ENGINES or 2)
# Environment:
#   GPUPORTAL_EXTRA_ENGINES   number of extra engines (default 2)
#   GPUPORTAL_ENGINE_TIMEOUT  seconds to wait for each engine (default 60)
#   GPUPORTAL_SKIP_TEST_IMAGE set to 1 to skip building the test image
#   GPUPORTAL_IPV6_ENGINES    extra engines started with IPv6, by number (default "2"; "" none)
# Logs: /var/log/gpuportal/{main,slaveN}.log. Data: /var/lib/gpuportal/slaveN.
#
# Known interplay of several dockerd on one host (all checked with 20.10):
#   - Every dockerd flushes the shared DOCKER* iptables chains when it starts, so the DNAT
#     rules of containers already running on the other engines vanish. Their published ports
#     keep working through docker-proxy (the userland proxy, on by default), on 127.0.0.1 and
#     on the host's addresses alike; only the client source address is lost.
#   - --default-address-pool must not be given: with it, dockerd deletes docker0 (the main
#     engine's bridge) at every start.
#   - Each engine publishes host ports from the same port space: two engines cannot publish
#     the same fixed host port.
#   - IPv6 (checked with 20.10): dockerd --ipv6 gives the bridge fd00:6770:N::1 and turns on
#     net.ipv6.conf.all.forwarding. Ports published on :: reach the container through
#     docker-proxy (ip6tables rules need --experimental before Docker 27, where --ip6tables
#     became the default); each address family's host port is allocated on its own, so one
#     container port may be published on 0.0.0.0 and :: at different host ports.
set -euo pipefail

export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN_DIR=/var/run/gpuportal
LOG_DIR=/var/log/gpuportal
DATA_DIR=/var/lib/gpuportal
MAIN_SOCK=/var/run/docker.sock
MAIN_PIDFILE=/var/run/docker.pid
# Written when this script started the main engine, so that `stop --all` leaves alone an
# engine that systemd (or a person) runs.
MAIN_MARKER="$RUN_DIR/main.started-here"

extra="${GPUPORTAL_EXTRA_ENGINES:-2}"
ipv6_engines="${GPUPORTAL_IPV6_ENGINES-2}"
timeout_s="${GPUPORTAL_ENGINE_TIMEOUT:-60}"
all=0

die() {
    echo "docker-engines: $*" >&2
    exit 1
}

usage() {
    sed -n '2,24p' "$0"
}

answers() { # answers SOCKET: true when the engine on SOCKET replies to `docker info`
    DOCKER_HOST="unix://$1" timeout 10 docker info >/dev/null 2>&1
}

pid_alive() { # pid_alive PIDFILE: true when PIDFILE names a running dockerd
    local pid
    [[ -s "$1" ]] || return 1
    pid="$(cat "$1")"
    [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == dockerd ]]
}

# ensure_engine NAME SOCKET PIDFILE LOG LAUNCH...: wait until the engine on SOCKET answers,
# launching it (the LAUNCH command) whenever no dockerd holds PIDFILE. A dockerd that is still
# starting or shutting down is waited for rather than started twice.
ensure_engine() {
    local name="$1" sock="$2" pidfile="$3" log="$4" waited=0 launched=0
    shift 4
    if answers "$sock"; then
        echo "$name: already answering on unix://$sock"
        return 0
    fi
    until answers "$sock"; do
        if ! pid_alive "$pidfile"; then
            if [[ "$launched" -eq 1 ]] && [[ "$waited" -gt 2 ]]; then
                echo "--- last lines of $log ---" >&2
                tail -n 25 "$log" >&2 || true
                die "$name: dockerd exited before answering on unix://$sock (log: $log)"
            fi
            if [[ "$launched" -eq 0 ]]; then
                echo "$name: starting dockerd on unix://$sock"
                "$@"
                launched=1
            fi
        fi
        if [[ "$waited" -ge "$timeout_s" ]]; then
            echo "--- last lines of $log ---" >&2
            tail -n 25 "$log" >&2 || true
            die "$name: no answer from unix://$sock after ${timeout_s}s (log: $log)"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    echo "$name: ready"
}

build_image() { # build_image SOCKET
    if [[ "${GPUPORTAL_SKIP_TEST_IMAGE:-0}" == "1" ]]; then
        return 0
    fi
    DOCKER_HOST="unix://$1" "$here/build-test-image.sh"
}

launch_main() {
    setsid nohup dockerd --host "unix://$MAIN_SOCK" --pidfile "$MAIN_PIDFILE" \
        >>"$LOG_DIR/main.log" 2>&1 </dev/null &
    echo "$!" >"$MAIN_MARKER"
}

start_main() {
    ensure_engine main "$MAIN_SOCK" "$MAIN_PIDFILE" "$LOG_DIR/main.log" launch_main
    build_image "$MAIN_SOCK"
}

ensure_bridge() { # ensure_bridge N
    local br="gpbr$1" addr="10.222.$1.1/24"
    if ! ip link show "$br" >/dev/null 2>&1; then
        ip link add "$br" type bridge
    fi
    if ! ip -4 addr show dev "$br" | grep -qF "inet $addr"; then
        ip addr add "$addr" dev "$br"
    fi
    ip link set "$br" up
}

ipv6_flags() { # ipv6_flags N: dockerd flags for IPv6 when engine N is one of GPUPORTAL_IPV6_ENGINES
    local n
    for n in ${ipv6_engines//,/ }; do
        if [[ "$n" == "$1" ]]; then
            echo "--ipv6 --fixed-cidr-v6 fd00:6770:$(printf '%x' "$1")::/64"
            return 0
        fi
    done
}

launch_extra() { # launch_extra N
    local n="$1" name="slave$1"
    local -a ipv6
    read -r -a ipv6 <<<"$(ipv6_flags "$n")"
    ensure_bridge "$n"
    mkdir -p "$DATA_DIR/$name" "$RUN_DIR/$name.exec"
    # An empty config file keeps /etc/docker/daemon.json (hosts, bridge, ...) of the main
    # engine from leaking into the extra ones.
    echo '{}' >"$RUN_DIR/$name.json"
    # Own containerd namespaces: when a system containerd is running, every dockerd would
    # otherwise share namespace "moby" and clean up each other's tasks at start.
    # No --default-address-pool: with it, dockerd deletes docker0 (the main engine's bridge)
    # at every start.
    setsid nohup dockerd \
        --host "unix://$RUN_DIR/$name.sock" \
        --config-file "$RUN_DIR/$name.json" \
        --data-root "$DATA_DIR/$name" \
        --exec-root "$RUN_DIR/$name.exec" \
        --pidfile "$RUN_DIR/$name.pid" \
        --bridge "gpbr$n" \
        --iptables=true \
        --containerd-namespace "gpuportal-$name" \
        --containerd-plugins-namespace "gpuportal-$name-plugins" \
        --cgroup-parent "/gpuportal-$name" \
        "${ipv6[@]}" \
        >>"$LOG_DIR/$name.log" 2>&1 </dev/null &
}

ipv6_on() { # ipv6_on SOCKET: true when the engine's default bridge network has IPv6
    [[ "$(DOCKER_HOST="unix://$1" timeout 10 docker network inspect bridge \
        --format '{{.EnableIPv6}}' 2>/dev/null)" == true ]]
}

start_extra() { # start_extra N
    local name="slave$1"
    ensure_engine "$name" "$RUN_DIR/$name.sock" "$RUN_DIR/$name.pid" "$LOG_DIR/$name.log" \
        launch_extra "$1"
    if [[ -n "$(ipv6_flags "$1")" ]] && ! ipv6_on "$RUN_DIR/$name.sock"; then
        echo "$name: running without IPv6 (started before it was asked for); stop and start" \
            "the extra engines to restart it with IPv6" >&2
    fi
    build_image "$RUN_DIR/$name.sock"
}

stop_pidfile() { # stop_pidfile NAME PIDFILE
    local name="$1" pidfile="$2" pid waited=0
    if ! pid_alive "$pidfile"; then
        echo "$name: not running"
        return 0
    fi
    pid="$(cat "$pidfile")"
    echo "$name: stopping dockerd $pid"
    kill -TERM "$pid"
    # dockerd stops its containers first (15 s shutdown timeout by default).
    while kill -0 "$pid" 2>/dev/null; do
        if [[ "$waited" -ge 60 ]]; then
            die "$name: dockerd $pid still running after 60s"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    echo "$name: stopped"
}

extra_numbers() {
    seq 2 $((extra + 1))
}

# Extra engines that a previous `start` left behind, even when --extra is now smaller.
known_extra_numbers() {
    {
        extra_numbers
        for f in "$RUN_DIR"/slave*.pid; do
            [[ -e "$f" ]] || continue
            f="${f##*/slave}"
            echo "${f%.pid}"
        done
    } | sort -un
}

status_line() { # status_line NAME SOCKET
    local version
    if version="$(DOCKER_HOST="unix://$2" timeout 10 docker version --format '{{.Server.Version}}' 2>/dev/null)"; then
        printf '%-8s up    unix://%s (engine %s%s)\n' "$1" "$2" "$version" \
            "$(ipv6_on "$2" && echo ', IPv6')"
    else
        printf '%-8s down  unix://%s\n' "$1" "$2"
    fi
}

cmd="${1:-}"
[[ $# -gt 0 ]] && shift
while [[ $# -gt 0 ]]; do
    case "$1" in
        --extra)
            [[ $# -ge 2 ]] || die "--extra needs a number"
            extra="$2"
            shift 2
            ;;
        --all)
            all=1
            shift
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *) die "unknown argument: $1" ;;
    esac
done
[[ "$extra" =~ ^[0-9]+$ ]] && [[ "$extra" -le 200 ]] || die "--extra must be a number 0..200"

case "$cmd" in
    start)
        [[ "$(id -u)" -eq 0 ]] || die "start needs root (dockerd, bridges, iptables)"
        command -v dockerd >/dev/null || die "dockerd not found; install Debian's docker.io"
        command -v docker >/dev/null || die "docker CLI not found"
        mkdir -p "$RUN_DIR" "$LOG_DIR" "$DATA_DIR"
        start_main
        for n in $(extra_numbers); do
            start_extra "$n"
        done
        ;;
    stop)
        for n in $(known_extra_numbers); do
            stop_pidfile "slave$n" "$RUN_DIR/slave$n.pid"
            if ip link show "gpbr$n" >/dev/null 2>&1; then
                ip link delete "gpbr$n" type bridge || true
            fi
        done
        if [[ "$all" -eq 1 ]]; then
            if [[ -e "$MAIN_MARKER" ]]; then
                stop_pidfile main "$MAIN_PIDFILE"
                rm -f "$MAIN_MARKER"
            else
                echo "main: not started by this script; leaving it running"
            fi
        fi
        ;;
    status)
        status_line main "$MAIN_SOCK"
        for n in $(known_extra_numbers); do
            status_line "slave$n" "$RUN_DIR/slave$n.sock"
        done
        ;;
    -h | --help | help)
        usage
        ;;
    *)
        usage >&2
        exit 2
        ;;
esac
