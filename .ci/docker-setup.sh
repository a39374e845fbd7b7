#!/bin/sh
# Make a real Docker engine and the kit's local base image available on a Debian 12 machine.
#
#   .ci/docker-setup.sh            (root; idempotent: each step is skipped when already done)
#
# 1. apt-get install docker.io debootstrap docker-compose (when dockerd/debootstrap are missing)
# 2. start dockerd in the background when no engine answers; wait until it does
# 3. make the base images reprokit/base:bookworm (Debian 12, Python 3.11) and reprokit/base:bullseye
#    (Debian 11, Python 3.9: the CPU flavour of the images whose real framework needs it, e.g. Theano's
#    compiled scan loop) with debootstrap + docker import when missing (no registry is reachable:
#    `FROM debian:bookworm` cannot be pulled; see /work/shared/reference/platform.md)
#
# Environment: REPROKIT_BASE_IMAGE (default reprokit/base:bookworm), REPROKIT_BULLSEYE_IMAGE
# (default reprokit/base:bullseye; empty: not made), REPROKIT_DEBIAN_MIRROR (default
# http://deb.debian.org/debian), DOCKERD_LOG (default /var/log/dockerd.log).
set -eu

BASE_IMAGE="${REPROKIT_BASE_IMAGE:-reprokit/base:bookworm}"
BULLSEYE_IMAGE="${REPROKIT_BULLSEYE_IMAGE-reprokit/base:bullseye}"
MIRROR="${REPROKIT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
DOCKERD_LOG="${DOCKERD_LOG:-/var/log/dockerd.log}"

say() { echo "docker-setup: $*" >&2; }
now() { date +%s; }

if [ "$(id -u)" != 0 ]; then
    say "must run as root (installs packages and starts dockerd)"; exit 2
fi

# -- 1. packages ------------------------------------------------------------------------------
missing=""
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
command -v docker-compose >/dev/null 2>&1 || missing="$missing docker-compose"
if [ -n "$missing" ]; then
    say "installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# -- 2. engine --------------------------------------------------------------------------------
if docker info >/dev/null 2>&1; then
    say "engine already answers"
else
    say "starting dockerd (log: $DOCKERD_LOG)"
    t0=$(now)
    # a pid file left by a restored /run whose number now names another process would make dockerd
    # refuse to start ("pid file found, ensure docker is not running")
    for f in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
        [ -f "$f" ] || continue
        p=$(tr -dc '0-9' <"$f")
        case "$(cat "/proc/$p/comm" 2>/dev/null)" in
            dockerd|containerd) ;;
            *) say "removing stale $f (pid $p is not the daemon)"; rm -f "$f" ;;
        esac
    done
    nohup dockerd >"$DOCKERD_LOG" 2>&1 &
    i=0
    until docker info >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt 60 ]; then
            say "dockerd did not answer within 60 s; last log lines:"; tail -20 "$DOCKERD_LOG" >&2
            exit 1
        fi
        sleep 1
    done
    say "engine up in $(( $(now) - t0 )) s: $(docker version --format '{{.Server.Version}}')"
fi

# -- 3. base images ---------------------------------------------------------------------------
make_base() {  # make_base IMAGE CODENAME
    image=$1; codename=$2
    if docker image inspect "$image" >/dev/null 2>&1; then
        say "base image $image present: $(docker image inspect --format '{{.Id}}' "$image")"
        return 0
    fi
    say "making base image $image (debootstrap $codename, 2-4 min here)"
    t0=$(now)
    root=$(mktemp -d /tmp/reprokit-base.XXXXXX)
    debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates \
        "$codename" "$root" "$MIRROR" >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; rm -rf "$root"; exit 1; }
    rm -f "$root.log"
    # Trim what a container never needs: apt lists and caches (the image stays reproducible in
    # content; its ID still changes with every debootstrap because file times differ).
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
    t1=$(now)
    tar -C "$root" -c . | docker import \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' \
        --message "debootstrap --variant=minbase $codename $MIRROR" - "$image" >/dev/null
    t2=$(now)
    rm -rf "$root"
    say "base image $image made: debootstrap $((t1 - t0)) s, import $((t2 - t1)) s," \
        "id $(docker image inspect --format '{{.Id}}' "$image")"
}
make_base "$BASE_IMAGE" bookworm
if [ -n "$BULLSEYE_IMAGE" ]; then
    make_base "$BULLSEYE_IMAGE" bullseye
fi
