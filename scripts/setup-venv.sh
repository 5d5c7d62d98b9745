#!/usr/bin/env bash
# Create .venv (once) and install the portal with its test dependencies, each at the version
# pinned in constraints.txt (refreshed by scripts/lock-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)
if [ ! -f "$stamp" ]; then
  # python-ldap (LDAP sign-in, docs/sign-in.md) builds from source against OpenLDAP's and
  # SASL's headers: on Debian as root they are installed here, elsewhere the error says which.
  if [ ! -f /usr/include/ldap.h ] || [ ! -f /usr/include/sasl/sasl.h ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get install -y -qq --no-install-recommends libldap2-dev libsasl2-dev >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
          libldap2-dev libsasl2-dev >/dev/null; }
    else
      echo "python-ldap needs OpenLDAP's and SASL's headers: apt-get install libldap2-dev libsasl2-dev" >&2
    fi
  fi
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -c constraints.txt -e '.[test]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
