#!/bin/sh
# mmdebstrap customize hook of scripts/build-session-images.sh: turns the bookworm root in "$1"
# into the session image's root. Run as root on the build host, once apt has installed the
# Debian packages; "$2" is scripts/session-images (the pins).
set -eu
root="$1"
pins="$2"

# The applications: one venv, wheels only (the image has no compiler), pinned.
chroot "$root" python3 -m venv /opt/venv
cp "$pins/requirements.txt" "$root/tmp/requirements.txt"
constraints=""
if [ -s "$pins/constraints.txt" ]; then
    cp "$pins/constraints.txt" "$root/tmp/constraints.txt"
    constraints="-c /tmp/constraints.txt"
fi
# pip trusts the build host's CA bundle for this one install (a host behind a TLS-inspecting
# proxy has its CA there); the image keeps Debian's own. The host's PIP_* settings (local
# indexes, find-links) mean nothing in the root: a clean environment.
cp /etc/ssl/certs/ca-certificates.crt "$root/tmp/build-ca.crt"
# shellcheck disable=SC2086  # $constraints is empty or two words
chroot "$root" env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    /opt/venv/bin/pip install --quiet --no-cache-dir --disable-pip-version-check \
    --cert /tmp/build-ca.crt --only-binary=:all: -r /tmp/requirements.txt $constraints
if [ -n "${SESSION_IMAGES_FREEZE:-}" ]; then
    chroot "$root" /opt/venv/bin/pip freeze --all --exclude pip >"$SESSION_IMAGES_FREEZE"
fi
rm -f "$root/tmp/requirements.txt" "$root/tmp/constraints.txt" "$root/tmp/build-ca.crt"

# A non-root user for the apps (uid 1000, as in the Jupyter docker stacks); a job that needs
# root says so with docker.user. Written by hand: passwd's useradd is not in this root.
echo "portal:x:1000:1000:GPU Portal session:/home/portal:/bin/bash" >>"$root/etc/passwd"
echo "portal:x:1000:" >>"$root/etc/group"
echo "portal:*:19000:0:99999:7:::" >>"$root/etc/shadow"
mkdir -p "$root/home/portal"
chown 1000:1000 "$root/home/portal"
# Jupyter's settings for sessions: the extension that keeps the app token out of pages
# (portal_session.py), and the file browser starting in the user's home (an API path, relative
# to the root dir): the session command serves the whole root (--ServerApp.root_dir=/), where
# this user may not write, so "New notebook" works at once.
site="$(chroot "$root" /opt/venv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cp "$pins/portal_session.py" "$root$site/portal_session.py"
chroot "$root" /opt/venv/bin/python3 -m compileall -q "$site/portal_session.py"
# (Extensions are enabled in config.d; other settings there are not read: the main file.)
mkdir -p "$root/opt/venv/etc/jupyter/jupyter_server_config.d"
echo '{"ServerApp": {"jpserver_extensions": {"portal_session": true}}}' \
    >"$root/opt/venv/etc/jupyter/jupyter_server_config.d/portal_session.json"
echo '{"FileContentsManager": {"preferred_dir": "home/portal"}}' \
    >"$root/opt/venv/etc/jupyter/jupyter_server_config.json"

# What an image needs no more: apt's lists and caches, logs, and any docs or man pages that
# slipped past the build's dpkg path-exclude options.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
    "$root"/var/log/*.log "$root"/var/log/apt/* "$root"/usr/share/doc/* "$root"/usr/share/man/* \
    "$root"/usr/share/info/*
