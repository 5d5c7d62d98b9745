#!/usr/bin/env bash
# Start a throwaway OpenLDAP directory from Debian's slapd on 127.0.0.1:3890 for the sign-in
# tests (tests/signin/): suffix dc=lab,dc=example, the ppolicy overlay (a directory admin locks
# an account with pwdAccountLockedTime, as OpenLDAP sites do), and a service account the portal
# binds as. The tests add their own people and groups below it with ldapadd. Data lives in a
# private dir under var/ and is made anew at each start; loopback only. Idempotent: does
# nothing when one already answers.
#
#   ./scripts/slapd.sh start|stop      (needs: apt-get install slapd ldap-utils)
#
# Accounts (docs/sign-in.md "Test set-ups"): cn=admin,dc=lab,dc=example / ldap-admin-pw (the
# tests' writer), cn=portal,ou=services,dc=lab,dc=example / ldap-portal-pw (the portal's bind).
set -euo pipefail
cd "$(dirname "$0")/.."
port="${PORTAL_SLAPD_PORT:-3890}"
dir="${PORTAL_SLAPD_DIR:-$PWD/var/slapd}"
url="ldap://127.0.0.1:$port"
slapd=/usr/sbin/slapd
answers() { ldapsearch -x -H "$url" -b "" -s base -LLL namingContexts >/dev/null 2>&1; }

case "${1:-start}" in
  start)
    if answers; then
      exit 0
    fi
    [ -x "$slapd" ] || { echo "$slapd is missing: apt-get install slapd ldap-utils" >&2; exit 1; }
    if [ -f "$dir/slapd.pid" ]; then  # a dead one's leftovers
      kill "$(cat "$dir/slapd.pid")" 2>/dev/null || true
    fi
    rm -rf "$dir"
    mkdir -p "$dir/data"
    chmod 0700 "$dir"
    cat >"$dir/slapd.conf" <<EOF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload ppolicy
pidfile $dir/slapd.pid
argsfile $dir/slapd.args

database mdb
suffix "dc=lab,dc=example"
rootdn "cn=admin,dc=lab,dc=example"
rootpw ldap-admin-pw
directory $dir/data
maxsize 67108864
index objectClass eq
index uid,cn,member,memberUid eq
overlay ppolicy
ppolicy_default "cn=default,ou=policies,dc=lab,dc=example"
access to attrs=userPassword by self write by anonymous auth by * none
access to * by users read by * none
EOF
    cat >"$dir/base.ldif" <<'EOF'
dn: dc=lab,dc=example
objectClass: dcObject
objectClass: organization
dc: lab
o: Test lab

dn: ou=services,dc=lab,dc=example
objectClass: organizationalUnit
ou: services

dn: ou=policies,dc=lab,dc=example
objectClass: organizationalUnit
ou: policies

dn: cn=default,ou=policies,dc=lab,dc=example
objectClass: device
objectClass: pwdPolicy
cn: default
pwdAttribute: userPassword
pwdLockout: TRUE

dn: cn=portal,ou=services,dc=lab,dc=example
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: portal
userPassword: ldap-portal-pw
EOF
    /usr/sbin/slapadd -f "$dir/slapd.conf" -l "$dir/base.ldif" -q
    "$slapd" -f "$dir/slapd.conf" -h "$url/" >"$dir/slapd.log" 2>&1
    for _ in $(seq 1 30); do
      answers && exit 0
      sleep 0.5
    done
    echo "slapd did not answer on $url (see $dir/slapd.log)" >&2
    exit 1
    ;;
  stop)
    if [ -f "$dir/slapd.pid" ]; then
      kill "$(cat "$dir/slapd.pid")" 2>/dev/null || true
    fi
    ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
