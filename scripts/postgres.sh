#!/usr/bin/env bash
# Start Debian's PostgreSQL and make sure role "portal" (password "portal") exists: the
# concurrency tests race scheduler ticks on it.
set -euo pipefail
case "${1:-start}" in
  start)
    version=$(ls /usr/lib/postgresql | sort -n | tail -1)
    if ! pg_lsclusters -h | grep -q "^$version main .* online"; then
      pg_ctlcluster "$version" main start
    fi
    for _ in $(seq 1 30); do
      su postgres -c "psql -qtAc 'select 1'" >/dev/null 2>&1 && break
      sleep 1
    done
    su postgres -c "psql -qtAc \"select 1 from pg_roles where rolname='portal'\"" | grep -q 1 ||
      su postgres -c "psql -qc \"create role portal login superuser password 'portal'\""
    ;;
  *) echo "usage: $0 start" >&2; exit 2 ;;
esac
