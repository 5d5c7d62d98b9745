#!/usr/bin/env bash
# Start Debian's redis-server on 127.0.0.1:6379 (no persistence): django-q2's Redis broker for
# the queue-path and scale-out tests. Idempotent: does nothing when one already answers.
set -euo pipefail
port="${PORTAL_REDIS_PORT:-6379}"
case "${1:-start}" in
  start)
    if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
      exit 0
    fi
    dir=/var/lib/gpuportal-redis
    mkdir -p "$dir"
    redis-server --bind 127.0.0.1 --port "$port" --daemonize yes --save "" --appendonly no \
      --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
    for _ in $(seq 1 30); do
      redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG && exit 0
      sleep 1
    done
    echo "redis-server did not answer on 127.0.0.1:$port (see $dir/redis.log)" >&2
    exit 1
    ;;
  stop)
    redis-cli -h 127.0.0.1 -p "$port" shutdown nosave 2>/dev/null || true
    ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
