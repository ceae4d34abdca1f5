#!/usr/bin/env bash
# The student's lab in a container (the third way, beside Vagrant and `make lab`):
# JupyterLab on http://127.0.0.1:${LAB_PORT:-8888} (this computer only), protected by a
# token, the work saved in ${LAB_WORK:-./lab-work} (notebooks and results/).
#
# The container is unprivileged: it runs as you (your user and group id), with every
# capability dropped, no new privileges, and the kit's seccomp profile
# (deploy/image/seccomp-userns.json), which allows the user namespaces a lab's network
# lives in and nothing Docker's default profile refuses besides.
#
#   bash scripts/image.sh              # once: build the image (labtools-lab:latest)
#   bash scripts/lab-container.sh      # the lab; Ctrl-C stops it
#   LAB_PORT=8899 LAB_WORK=~/netlab bash scripts/lab-container.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
docker=${DOCKER:-$(command -v /usr/bin/docker || command -v docker || echo docker)}
image=${LABTOOLS_IMAGE:-labtools-lab:latest}
port=${LAB_PORT:-8888}
work=${LAB_WORK:-$PWD/lab-work}
case "$port" in ''|*[!0-9]*) echo "[lab] LAB_PORT must be a port number" >&2; exit 2 ;; esac
if ! "$docker" image inspect "$image" >/dev/null 2>&1; then
    echo "[lab] no image $image here: load the one your instructor built (docker load < labtools-lab.tar.gz), or build it in the whole kit (bash scripts/image.sh)" >&2
    exit 1
fi
# The lab runs as you. Not as root: a root without capabilities may not map itself into a
# user namespace (Linux 5.12 and later want CAP_SETFCAP for that), so root's lab runs as
# the image's user 1000, which gets the work folder when it is new.
user="$(id -u):$(id -g)"
if [ "$(id -u)" = 0 ]; then
    user=1000:1000
    if [ ! -e "$work" ]; then
        mkdir -p "$work" && chown "$user" "$work"
    fi
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
# the host's kernel decides how delayed labs run: say it before the container does
if [ -r /proc/modules ] && ! grep -q '^sch_netem ' /proc/modules \
        && [ ! -d /sys/module/sch_netem ]; then
    echo "[lab] sch_netem is not loaded on this computer: as root, 'modprobe sch_netem'" \
         "lets every lab run in the container directly (otherwise: in the lab VM inside it)"
fi
token=${JUPYTER_TOKEN:-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')}
exec "$docker" run --rm -i $([ -t 0 ] && echo -t) \
    --name "labtools-lab-$(id -un)-$port" \
    --publish "127.0.0.1:$port:8888" \
    --volume "$work:/home/lab/work" \
    --user "$user" \
    --cap-drop ALL --security-opt no-new-privileges \
    --security-opt "seccomp=$here/deploy/image/seccomp-userns.json" \
    --security-opt systempaths=unconfined \
    --env "LAB_PORT=$port" --env "JUPYTER_TOKEN=$token" \
    ${LABTOOLS_CONTAINER_VM:+--env "LABTOOLS_CONTAINER_VM=$LABTOOLS_CONTAINER_VM"} \
    "$image"
