#!/usr/bin/env bash
# The kit as a container image, from Debian's and PyPI's packages only (no registry needed).
#
#   bash scripts/image.sh            # build both images (base made first if missing):
#                                    #   labtools-lab:latest, the student edition (students'
#                                    #   servers, a student's own container), and
#                                    #   labtools-lab-instructor:latest, the whole kit (the
#                                    #   instructor's server: autograde's hidden tests)
#   bash scripts/image.sh --base     # only the Debian base image (labtools-base:bookworm)
#
# 1. The base: a minimal Debian 12 root file system made with `debootstrap` from Debian's
#    archive, packed once into /var/cache/labtools/images/ (LABTOOLS_IMAGE_CACHE) and
#    loaded with `docker import`. Kept as an image: a second build reuses it (seconds).
# 2. The kit: deploy/image/Dockerfile on that base (Debian's packages, the kit and
#    JupyterLab from PyPI), once with the student edition (`labtools bundle --students`,
#    EDITION=student) and once with the whole kit (EDITION=full). Docker's layer cache
#    makes a rebuild after a change to the kit's code, and the second image, take the time
#    of the last layers only.
#
# Needs root, Debian's docker.io (installed here when missing) and a running Docker
# daemon (`systemctl start docker`; on a machine without systemd, `dockerd &`).
# Environment: LABTOOLS_IMAGE (labtools-lab:latest), LABTOOLS_INSTRUCTOR_IMAGE
# (labtools-lab-instructor:latest), LABTOOLS_DEBIAN_MIRROR
# (http://deb.debian.org/debian), DOCKER (the docker command; Debian's by default).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '[image] %s\n' "$*"; }
fail() { printf '[image] %s\n' "$*" >&2; exit 1; }

only_base=no
for arg in "$@"; do
    case "$arg" in
        --base) only_base=yes ;;
        *) echo "[image] unknown option $arg (use --base)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || fail "run as root (debootstrap and the Docker daemon need it)"

image=${LABTOOLS_IMAGE:-labtools-lab:latest}
instructor_image=${LABTOOLS_INSTRUCTOR_IMAGE:-labtools-lab-instructor:latest}
suite=bookworm
mirror=${LABTOOLS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${LABTOOLS_IMAGE_CACHE:-/var/cache/labtools/images}
# This host's extra certificate authorities and pip setting go into the base (as into the
# lab VM's test systems, tests/support/system_images.py): where the way out to PyPI is a proxy
# with a certificate of its own, pip in the build trusts what pip here trusts.
trust_files=$(ls /usr/local/share/ca-certificates/*.crt /etc/pip.conf 2>/dev/null || true)
trust_key=$(for f in $trust_files; do printf '%s\0' "${f#/}"; cat "$f"; done | sha256sum | cut -c1-8)
# bump when the base's recipe changes (an older cached file is then not used)
recipe=1
base=labtools-base:$suite-r$recipe-$trust_key
base_tar=$cache/docker-base-$suite-minbase-r$recipe-$trust_key.tar

missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
[ -x /usr/bin/docker ] || missing+=(docker.io)
. "$(dirname "${BASH_SOURCE[0]}")/debian-packages.sh"
install_debian_packages ${missing[@]+"${missing[@]}"}
# Debian's docker command (another one earlier in PATH may speak a newer dialect)
docker=${DOCKER:-/usr/bin/docker}
"$docker" info >/dev/null 2>&1 || fail "the Docker daemon does not answer: start it" \
    "(systemctl start docker; without systemd: dockerd > /var/log/dockerd.log 2>&1 &)"

# --- 1. the Debian base ------------------------------------------------------------------
if "$docker" image inspect "$base" >/dev/null 2>&1; then
    say "base image $base: present"
else
    if [ ! -s "$base_tar" ]; then
        say "making the Debian base with debootstrap (about a minute; cached in $cache)"
        mkdir -p "$cache"
        root=$(mktemp -d "$cache/rootfs.XXXXXX")
        trap 'rm -rf "$root" "$base_tar.part"' EXIT
        debootstrap --variant=minbase "$suite" "$root" "$mirror" > "$root.log" 2>&1 \
            || { tail -5 "$root.log" >&2; rm -f "$root.log"; fail "debootstrap failed"; }
        rm -f "$root.log"
        # what a container does not need: the archives downloaded, apt's lists
        rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
        for f in $trust_files; do  # ca-certificates, installed by the Dockerfile, adds them
            mkdir -p "$root$(dirname "$f")" && cp "$f" "$root$f"
        done
        tar --numeric-owner --xattrs -C "$root" -cf "$base_tar.part" .
        mv "$base_tar.part" "$base_tar"
        rm -rf "$root"
        trap - EXIT
    fi
    say "importing $base_tar as $base"
    "$docker" import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' \
        --message "debootstrap --variant=minbase $suite $mirror" "$base_tar" "$base" >/dev/null
fi
[ "$only_base" = yes ] && exit 0

# --- 2. the kit -----------------------------------------------------------------------------
# the kit's own dependencies, from pyproject.toml: the image's Python layer is rebuilt only
# when they change, not when anything else in pyproject.toml does
mkdir -p "$here/.cache/image"
/usr/bin/python3 - "$here/pyproject.toml" > "$here/.cache/image/kit-requirements.txt" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["lab"]))
PY
for edition in student full; do
    if [ "$edition" = student ]; then tag=$image; else tag=$instructor_image; fi
    say "building $tag ($edition edition) from deploy/image/Dockerfile"
    "$docker" build --network host --build-arg "BASE=$base" --build-arg "MIRROR=$mirror" \
        --build-arg "EDITION=$edition" -t "$tag" -f "$here/deploy/image/Dockerfile" "$here"
done
say "ready: $image, the student edition (start a lab: bash scripts/lab-container.sh),"
say "and $instructor_image, the whole kit (the course hub's instructor)"
