#!/usr/bin/env bash
# Start the test OpenID Connect provider (tests/support/oidc_provider: django-oauth-toolkit with
# OIDC, RS256) on 127.0.0.1:9080 for the sign-in tests; issuer http://127.0.0.1:9080/o. Its
# database and signing key live in a private dir under var/, made anew at each start; the tests
# add users, groups and the portal's client with tests/support/oidc_provider/control.py.
# Idempotent: does nothing when one already answers.
#
#   ./scripts/oidc-provider.sh start|stop
set -euo pipefail
cd "$(dirname "$0")/.."
port="${PORTAL_OIDC_PROVIDER_PORT:-9080}"
dir="${PORTAL_OIDC_PROVIDER_DIR:-$PWD/var/oidc-provider}"
discovery="http://127.0.0.1:$port/o/.well-known/openid-configuration"
answers() { curl -fsS -o /dev/null --max-time 2 "$discovery" 2>/dev/null; }

case "${1:-start}" in
  start)
    if answers; then
      exit 0
    fi
    ./scripts/setup-venv.sh  # django-oauth-toolkit is a test dependency
    if [ -f "$dir/gunicorn.pid" ]; then  # a dead one's leftovers
      kill "$(cat "$dir/gunicorn.pid")" 2>/dev/null || true
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    chmod 0700 "$dir"
    openssl genrsa -out "$dir/signing.key" 2048 2>/dev/null
    export OIDC_PROVIDER_DIR="$dir" PYTHONPATH="$PWD"
    export DJANGO_SETTINGS_MODULE=tests.support.oidc_provider.settings
    .venv/bin/python -m django migrate --noinput -v 0
    .venv/bin/python -m gunicorn --daemon --pid "$dir/gunicorn.pid" --workers 2 \
      --bind "127.0.0.1:$port" --error-logfile "$dir/gunicorn.log" \
      tests.support.oidc_provider.wsgi:application
    for _ in $(seq 1 60); do
      answers && exit 0
      sleep 0.5
    done
    echo "the OIDC provider did not answer on $discovery (see $dir/gunicorn.log)" >&2
    exit 1
    ;;
  stop)
    if [ -f "$dir/gunicorn.pid" ]; then
      kill "$(cat "$dir/gunicorn.pid")" 2>/dev/null || true
    fi
    ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
