#!/usr/bin/env bash
# Build the interactive sessions' images without any registry: a minimal Debian bookworm root
# made with mmdebstrap (python3, python3-venv, ca-certificates) plus a venv /opt/venv with the
# pinned JupyterLab and TensorBoard (scripts/session-images/requirements.txt and
# constraints.txt), imported with `docker import` as gpuportal/jupyterlab:latest and, the same
# image, gpuportal/tensorboard:latest, into every engine given. code-server is not built: see
# docs/sessions.md ("Images").
#
# Usage: scripts/build-session-images.sh [--force] [--docker-host HOST]... [--done-file FILE]
#                                        [--freeze FILE]
#   --force         rebuild even when every engine has the images of this recipe
#   --docker-host   engine to import into (repeatable; unix:///path, /path or tcp://...);
#                   default: /var/run/docker.sock and /var/run/gpuportal/slave*.sock that answer
#                   (the engines of scripts/docker-engines.sh)
#   --done-file     written when every engine has the images (default var/session-images.done)
#   --freeze FILE   write the built venv's `pip freeze` to FILE (to refresh constraints.txt)
# Environment:
#   DEBIAN_MIRROR   Debian mirror (default http://deb.debian.org/debian; security updates come
#                   from the matching debian-security)
# Needs root (mmdebstrap's root mode), mmdebstrap, docker and network access to the Debian
# mirror and PyPI. An image carries the recipe's hash (label org.gpuportal.session-recipe): a
# changed pin or hook rebuilds it; an engine lacking it gets the image from one that has it.
# Runs one at a time (a lock beside the done file). Exit 0 when every engine has the images.
set -euo pipefail

export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
pins="$here/session-images"
IMAGES=(gpuportal/jupyterlab:latest gpuportal/tensorboard:latest)
RECIPE_LABEL=org.gpuportal.session-recipe
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
done_file="$repo/var/session-images.done"
freeze=""
force=0
hosts=()

die() {
    echo "build-session-images: $*" >&2
    exit 1
}

say() {
    echo "build-session-images: $*"
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --force)
            force=1
            shift
            ;;
        --docker-host)
            [[ $# -ge 2 ]] || die "--docker-host needs a value"
            hosts+=("$2")
            shift 2
            ;;
        --done-file)
            [[ $# -ge 2 ]] || die "--done-file needs a value"
            done_file="$2"
            shift 2
            ;;
        --freeze)
            [[ $# -ge 2 ]] || die "--freeze needs a value"
            freeze="$(realpath -m "$2")"
            shift 2
            ;;
        -h | --help)
            sed -n '2,24p' "$0"
            exit 0
            ;;
        *) die "unknown argument: $1" ;;
    esac
done

started=$SECONDS
answers() { # answers HOST: true when the engine replies to `docker info`
    DOCKER_HOST="$1" timeout 10 docker info >/dev/null 2>&1
}

if [[ ${#hosts[@]} -eq 0 ]]; then
    for sock in /var/run/docker.sock /var/run/gpuportal/slave*.sock; do
        [[ -S "$sock" ]] && answers "unix://$sock" && hosts+=("unix://$sock")
    done
    [[ ${#hosts[@]} -gt 0 ]] || die "no Docker engine answers (scripts/docker-engines.sh start)"
else
    for i in "${!hosts[@]}"; do
        [[ "${hosts[$i]}" == /* ]] && hosts[i]="unix://${hosts[$i]}"
        answers "${hosts[$i]}" || die "no Docker engine answers on ${hosts[$i]}"
    done
fi

# The recipe: what decides the image's content. Its hash labels the image.
recipe="$(cat "$0" "$pins"/* | sha256sum | cut -c1-16)"

mkdir -p "$(dirname "$done_file")"
exec 9>"$done_file.lock"
flock 9
rm -f "$done_file"

previous_id() { # previous_id HOST: the image the first tag names now, if any
    DOCKER_HOST="$1" docker image inspect "${IMAGES[0]}" --format '{{.Id}}' 2>/dev/null || true
}

drop_previous() { # drop_previous HOST ID: remove an image of an older recipe the tags left
    [[ -n "$2" ]] && [[ "$2" != "$(previous_id "$1")" ]] || return 0
    DOCKER_HOST="$1" docker rmi "$2" >/dev/null 2>&1 || true # (a container may still use it)
}

has_images() { # has_images HOST: both tags present, of this recipe
    local image label
    for image in "${IMAGES[@]}"; do
        label="$(DOCKER_HOST="$1" docker image inspect "$image" \
            --format "{{index .Config.Labels \"$RECIPE_LABEL\"}}" 2>/dev/null)" || return 1
        [[ "$label" == "$recipe" ]] || return 1
    done
}

missing=()
source_host=""
for host in "${hosts[@]}"; do
    if [[ "$force" -eq 0 ]] && has_images "$host"; then
        say "${IMAGES[*]} (recipe $recipe) already on $host"
        source_host="${source_host:-$host}"
    else
        missing+=("$host")
    fi
done

if [[ ${#missing[@]} -gt 0 ]] && [[ -z "$source_host" ]]; then
    [[ "$(id -u)" -eq 0 ]] || die "building the root needs root (mmdebstrap's root mode)"
    command -v mmdebstrap >/dev/null || die "mmdebstrap not found (apt-get install mmdebstrap)"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    say "building the bookworm root (recipe $recipe) from $mirror"
    build_started=$SECONDS
    # --variant=essential: only Essential:yes plus the packages named; apt itself stays outside
    # the image. path-exclude: docs, man pages and translations are never unpacked.
    SESSION_IMAGES_FREEZE="$freeze" mmdebstrap --quiet --mode=root --variant=essential \
        --include=python3,python3-venv,ca-certificates,libstdc++6,bash,tini \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --aptopt='Acquire::Languages "none"' \
        --customize-hook="\"$pins/customize.sh\" \"\$1\" \"$pins\"" \
        bookworm "$work/root.tar" \
        "deb $mirror bookworm main" \
        "deb $mirror bookworm-updates main" \
        "deb ${mirror%/debian}/debian-security bookworm-security main" ||
        die "mmdebstrap failed"
    say "root built in $((SECONDS - build_started)) s ($(du -h "$work/root.tar" | cut -f1) tar)"
    for host in "${missing[@]}"; do
        previous="$(previous_id "$host")"
        DOCKER_HOST="$host" docker import \
            --change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' \
            --change 'ENV SHELL=/bin/bash' \
            --change 'ENV HOME=/home/portal' \
            --change 'USER 1000:1000' \
            --change 'WORKDIR /home/portal' \
            --change 'ENTRYPOINT ["/usr/bin/tini", "--"]' \
            --change 'CMD ["bash"]' \
            --change "LABEL $RECIPE_LABEL=$recipe" \
            --change 'LABEL org.opencontainers.image.title=gpuportal-session' \
            "$work/root.tar" "${IMAGES[0]}" >/dev/null || die "docker import into $host failed"
        for image in "${IMAGES[@]:1}"; do
            DOCKER_HOST="$host" docker tag "${IMAGES[0]}" "$image"
        done
        drop_previous "$host" "$previous"
        say "imported ${IMAGES[*]} into $host"
    done
elif [[ ${#missing[@]} -gt 0 ]]; then
    # Copy from an engine that has them: no rebuild.
    for host in "${missing[@]}"; do
        previous="$(previous_id "$host")"
        DOCKER_HOST="$source_host" docker save "${IMAGES[@]}" |
            DOCKER_HOST="$host" docker load >/dev/null || die "copying into $host failed"
        drop_previous "$host" "$previous"
        say "copied ${IMAGES[*]} from $source_host into $host"
    done
fi

elapsed=$((SECONDS - started))
printf 'recipe=%s\nseconds=%s\nengines=%s\n' "$recipe" "$elapsed" "${hosts[*]}" >"$done_file"
say "done in ${elapsed} s: ${IMAGES[*]} on ${hosts[*]}"
