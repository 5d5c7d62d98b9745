#!/usr/bin/env bash
# Build the tiny local test image (default gpuportal/busybox:latest) without any registry:
# a root filesystem holding a static busybox plus one symlink per applet, imported with
# `docker import`. Tests and demos run their containers from it.
#
# Usage: scripts/build-test-image.sh [--force]
#   --force   rebuild even when the image is already present
# Environment:
#   DOCKER_HOST  engine to build into (the docker CLI reads it; default: the local socket)
#   TEST_IMAGE   image reference to create (default gpuportal/busybox:latest)
#   BUSYBOX      static busybox binary to copy (default /bin/busybox from busybox-static)
set -euo pipefail

TEST_IMAGE="${TEST_IMAGE:-gpuportal/busybox:latest}"
BUSYBOX="${BUSYBOX:-/bin/busybox}"
force=0

for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        -h | --help)
            sed -n '2,11p' "$0"
            exit 0
            ;;
        *)
            echo "build-test-image: unknown argument: $arg" >&2
            exit 2
            ;;
    esac
done

target="${DOCKER_HOST:-default engine}"

if [[ "$force" -eq 0 ]] && docker image inspect "$TEST_IMAGE" >/dev/null 2>&1; then
    echo "build-test-image: $TEST_IMAGE already present on $target (use --force to rebuild)"
    exit 0
fi

if [[ ! -x "$BUSYBOX" ]]; then
    echo "build-test-image: $BUSYBOX not found; install Debian's busybox-static" >&2
    exit 1
fi
# A dynamically linked busybox would need the host's libc inside the image.
if ldd "$BUSYBOX" >/dev/null 2>&1; then
    echo "build-test-image: $BUSYBOX is dynamically linked; install busybox-static" >&2
    exit 1
fi

rootfs="$(mktemp -d)"
trap 'rm -rf "$rootfs"' EXIT

mkdir -p "$rootfs"/{bin,etc,tmp,root,proc,sys,dev,home,www}
chmod 1777 "$rootfs/tmp"
cp "$BUSYBOX" "$rootfs/bin/busybox"
chmod 0755 "$rootfs/bin/busybox"

# One symlink per applet, so that `sh`, `echo`, `sleep`, `env`, `nc`, `httpd`, `kill`, ... resolve
# like in a normal image. The applet list comes from the binary itself.
while IFS= read -r applet; do
    case "$applet" in
        "" | busybox | */*) continue ;;
    esac
    ln -sf busybox "$rootfs/bin/$applet"
done < <("$BUSYBOX" --list)

# Minimal account databases: `--user nobody` and `id` need them.
cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
EOF
cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
echo "gpuportal test image" >"$rootfs/www/index.html"

tar -C "$rootfs" --numeric-owner --owner=0 --group=0 -cf - . |
    docker import \
        --change 'CMD ["sh"]' \
        --change 'ENV PATH=/bin' \
        --change 'LABEL org.opencontainers.image.title=gpuportal-test-busybox' \
        - "$TEST_IMAGE" >/dev/null

echo "build-test-image: built $TEST_IMAGE on $target"
