#!/usr/bin/env bash
# Local TLS front end for trying gpulab-cli against the portal.
#
#   scripts/tls-frontend.sh start [--port 8443] [--upstream 127.0.0.1:8000]
#   scripts/tls-frontend.sh stop
#   scripts/tls-frontend.sh status
#
# start: creates the portal CA if needed (manage.py ca_init), a self-signed server CA and a
# server certificate for localhost in var/tls/ (server-ca.pem is what --servercert wants),
# the secret nginx shares with the portal (var/tls/frontend-secret, which the portal reads by
# default), renders deploy/nginx/*.template into var/tls/nginx/ and runs nginx with that
# prefix, pid file and configuration. Nothing outside var/ is changed. PORTAL_VAR_DIR moves
# var/ (the portal's settings honour it too); NGINX and OPENSSL name the binaries.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VAR_DIR="${PORTAL_VAR_DIR:-$ROOT/var}"
TLS_DIR="$VAR_DIR/tls"
PREFIX="$TLS_DIR/nginx"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
NGINX="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
OPENSSL="${OPENSSL:-$(command -v openssl || echo /usr/bin/openssl)}"
PORT=8443
UPSTREAM=127.0.0.1:8000

usage() {
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

die() {
  echo "tls-frontend: $*" >&2
  exit 1
}

running_pid() {
  local pid
  [[ -f "$PREFIX/nginx.pid" ]] || return 1
  pid="$(cat "$PREFIX/nginx.pid" 2>/dev/null || true)"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

escape_sed() {
  printf '%s' "$1" | sed -e 's/[\\&|]/\\&/g'
}

render() { # render TEMPLATE OUTPUT NAME=VALUE...
  local template="$1" output="$2" expr=() pair
  shift 2
  for pair in "$@"; do
    # comment lines keep their placeholders (they document them)
    expr+=(-e "/^[[:space:]]*#/!s|@${pair%%=*}@|$(escape_sed "${pair#*=}")|g")
  done
  sed "${expr[@]}" "$template" >"$output"
  if grep -v '^[[:space:]]*#' "$output" | grep -q '@[A-Z_]*@'; then
    die "unreplaced placeholder in $output: $(grep -v '^[[:space:]]*#' "$output" | grep -o '@[A-Z_]*@' | head -1)"
  fi
}

server_certificate() {
  local names="DNS:localhost,IP:127.0.0.1,IP:::1" host
  host="$(hostname 2>/dev/null || true)"
  if [[ -n "$host" && "$host" != localhost && "$host" =~ ^[A-Za-z0-9.-]+$ ]]; then
    names="$names,DNS:$host"
  fi
  mkdir -p "$TLS_DIR"
  chmod 700 "$TLS_DIR"
  if [[ -s "$TLS_DIR/server.pem" && -s "$TLS_DIR/server.key" && -s "$TLS_DIR/server-ca.pem" ]] &&
    "$OPENSSL" x509 -checkend 86400 -noout -in "$TLS_DIR/server.pem" >/dev/null; then
    return 0
  fi
  echo "Creating a self-signed server CA and a server certificate in $TLS_DIR"
  local cnf="$TLS_DIR/openssl.cnf"
  cat >"$cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[server_ca]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_leaf]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = $names
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
EOF
  (
    umask 077
    "$OPENSSL" req -x509 -new -config "$cnf" -extensions server_ca \
      -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$TLS_DIR/server-ca.key" -out "$TLS_DIR/server-ca.pem" -days 3650 \
      -subj "/O=GPU Portal/CN=GPU Portal local TLS front end CA" 2>/dev/null
    "$OPENSSL" req -new -config "$cnf" \
      -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$TLS_DIR/server.key" -out "$TLS_DIR/server.csr" \
      -subj "/O=GPU Portal/CN=localhost" 2>/dev/null
    "$OPENSSL" x509 -req -in "$TLS_DIR/server.csr" \
      -CA "$TLS_DIR/server-ca.pem" -CAkey "$TLS_DIR/server-ca.key" \
      -set_serial "0x$("$OPENSSL" rand -hex 16)" -days 825 \
      -extfile "$cnf" -extensions server_leaf -out "$TLS_DIR/server.pem" 2>/dev/null
  )
  chmod 644 "$TLS_DIR/server-ca.pem" "$TLS_DIR/server.pem"
  rm -f "$TLS_DIR/server.csr"
}

frontend_secret() {
  # The portal believes certificate headers only with this secret (docs/tls-frontend.md). It
  # reads PORTAL_FRONTEND_SECRET_FILE (default var/tls/frontend-secret) when it changes, so
  # a portal that is already running needs no restart. Kept across restarts of nginx.
  local file="${PORTAL_FRONTEND_SECRET_FILE:-$TLS_DIR/frontend-secret}"
  if [[ -n "${PORTAL_FRONTEND_SECRET:-}" ]]; then
    SECRET="$PORTAL_FRONTEND_SECRET"
  else
    if [[ ! -s "$file" ]]; then
      (umask 077 && "$OPENSSL" rand -hex 32 >"$file")
    fi
    SECRET="$(tr -d '[:space:]' <"$file")"
  fi
  [[ "$SECRET" =~ ^[A-Za-z0-9._~+/=-]{16,}$ ]] ||
    die "the front-end secret must be 16 or more characters of [A-Za-z0-9._~+/=-]"
}

wait_for_port() {
  local i
  for i in $(seq 1 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

do_stop() {
  local pid i
  if ! pid="$(running_pid)"; then
    echo "TLS front end is not running."
    rm -f "$PREFIX/nginx.pid"
    return 0
  fi
  kill -QUIT "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$PREFIX/nginx.pid"
  echo "TLS front end stopped (pid $pid)."
}

do_start() {
  [[ -x "$NGINX" ]] || die "nginx not found (install Debian's nginx, or set NGINX=/path/to/nginx)"
  [[ -x "$OPENSSL" ]] || die "openssl not found (install openssl, or set OPENSSL=...)"
  [[ -x "$PYTHON" ]] || die "no Python at $PYTHON (run scripts/setup-venv.sh first)"
  [[ "$PORT" =~ ^[0-9]+$ ]] || die "--port must be a number, not '$PORT'"
  if running_pid >/dev/null; then
    do_stop >/dev/null
  fi

  local client_ca
  client_ca="$(cd "$ROOT" && "$PYTHON" manage.py ca_init --print-cert-path | tail -n 1)"
  [[ -s "$client_ca" ]] || die "portal CA certificate not found at '$client_ca'"
  server_certificate
  frontend_secret

  mkdir -p "$PREFIX/logs" "$PREFIX/tmp"
  local user_directive=""
  if [[ "$(id -u)" == 0 ]]; then
    # nginx would run its worker as "nobody", who may not reach var/ (e.g. a 0700 temp dir).
    user_directive="user root $(id -gn);"
  fi
  render "$ROOT/deploy/nginx/gpuportal.conf.template" "$PREFIX/gpuportal.conf" \
    "LISTEN=127.0.0.1:$PORT" \
    "SERVER_NAME=localhost" \
    "SERVER_CERT=$TLS_DIR/server.pem" \
    "SERVER_KEY=$TLS_DIR/server.key" \
    "CLIENT_CA=$client_ca" \
    "UPSTREAM=$UPSTREAM" \
    "MAX_BODY=2m" \
    "FRONTEND_SECRET=$SECRET"
  chmod 600 "$PREFIX/gpuportal.conf" # it holds the secret
  render "$ROOT/deploy/nginx/local-nginx.conf.template" "$PREFIX/nginx.conf" \
    "PREFIX=$PREFIX" \
    "USER_DIRECTIVE=$user_directive"

  local args=(-p "$PREFIX/" -c "$PREFIX/nginx.conf" -e "$PREFIX/logs/error.log")
  if ! "$NGINX" "${args[@]}" -t -q; then
    die "nginx rejected $PREFIX/nginx.conf"
  fi
  "$NGINX" "${args[@]}"
  if ! wait_for_port; then
    tail -n 20 "$PREFIX/logs/error.log" >&2 || true
    die "nginx did not start listening on 127.0.0.1:$PORT"
  fi
  cat <<EOF
TLS front end running: https://localhost:$PORT/ -> http://$UPSTREAM (pid $(running_pid))
  server CA for --servercert: $TLS_DIR/server-ca.pem
  client certificates checked against the portal CA: $client_ca
  logs: $PREFIX/logs/
Try:
  gpulab-cli --cert login.pem --servercert $TLS_DIR/server-ca.pem \\
      --custom-master-url https://localhost:$PORT/api jobs
Stop it with: $0 stop
EOF
}

do_status() {
  local pid
  if pid="$(running_pid)"; then
    echo "TLS front end running (pid $pid), config $PREFIX/nginx.conf"
  else
    echo "TLS front end is not running."
    return 3
  fi
}

[[ $# -ge 1 ]] || usage
command="$1"
shift
while [[ $# -gt 0 ]]; do
  case "$1" in
  --port) PORT="${2:?--port needs a value}"; shift 2 ;;
  --port=*) PORT="${1#*=}"; shift ;;
  --upstream) UPSTREAM="${2:?--upstream needs a value}"; shift 2 ;;
  --upstream=*) UPSTREAM="${1#*=}"; shift ;;
  -h | --help) usage ;;
  *) die "unknown option '$1'" ;;
  esac
done

case "$command" in
start) do_start ;;
stop) do_stop ;;
status) do_status ;;
-h | --help | help) usage ;;
*) usage ;;
esac
