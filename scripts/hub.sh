#!/usr/bin/env bash
# A course's JupyterHub in one command (docs/course-server.md).
#
#   bash scripts/hub.sh COURSE.toml           # start it (foreground; Ctrl-C or SIGTERM stops it)
#   bash scripts/hub.sh COURSE.toml --check   # the settings, checked, in words
#   bash scripts/hub.sh COURSE.toml --purge   # end of the course: every server, network,
#                                             # volume (students' work!) and the hub's data
#
# COURSE.toml: see deploy/hub/course.example.toml. Runs as root on Debian 12 (or Ubuntu)
# with Docker: installs what is missing (Debian's docker.io and configurable-http-proxy,
# a venv with JupyterHub in ${LABHUB_VENV:-/opt/labtools-hub}), builds the lab image
# when there is none (scripts/image.sh), sets the host's firewall for the servers'
# networks, runs JupyterHub, and removes the firewall rules when it stops. Stopping the
# hub stops every server (their volumes stay).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '[hub] %s\n' "$*"; }
fail() { printf '[hub] %s\n' "$*" >&2; exit 1; }

[ $# -ge 1 ] || { echo "usage: bash scripts/hub.sh COURSE.toml [--check|--purge]" >&2; exit 2; }
[ -f "$1" ] || { echo "[hub] no settings file $1 (see deploy/hub/course.example.toml)" >&2; exit 2; }
settings=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mode=${2:-start}
case "$mode" in start|--check|--purge) ;; *) echo "[hub] unknown option $mode" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || fail "run as root (the hub drives Docker and the host's firewall)"
venv=${LABHUB_VENV:-/opt/labtools-hub}

# --- what the hub needs: Debian's packages and a venv -------------------------------------
missing=()
[ -x /usr/bin/docker ] || missing+=(docker.io)
command -v iptables >/dev/null || missing+=(iptables)
command -v configurable-http-proxy >/dev/null || missing+=(node-configurable-http-proxy)
/usr/bin/python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
. "$(dirname "${BASH_SOURCE[0]}")/debian-packages.sh"
install_debian_packages ${missing[@]+"${missing[@]}"}
# Debian's configurable-http-proxy finds its modules in /usr/share/nodejs, which a Node.js
# from elsewhere (nodesource) does not search
export NODE_PATH=${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs
stamp="$venv/.labhub-installed"
want=$(sha256sum < "$here/deploy/hub/requirements.txt" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "installing JupyterHub, DockerSpawner, the idle culler and the authenticators into $venv"
    [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"  # Debian's Python
    "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        -r "$here/deploy/hub/requirements.txt"
    echo "$want" > "$stamp"
fi
labhub() { "$venv/bin/python" "$here/deploy/hub/labhub.py" "$@"; }

# what the hub would refuse, refused now (one line, exit status 2); purge needs only the
# course's names and says itself what it removes
[ "$mode" = --purge ] || labhub check "$settings" | sed 's/^/[hub] /'
[ "$mode" = --check ] && exit 0
/usr/bin/docker info >/dev/null 2>&1 || fail "the Docker daemon does not answer: start it" \
    "(systemctl start docker; without systemd: dockerd > /var/log/dockerd.log 2>&1 &)"
if [ "$mode" = --purge ]; then
    # only what the hub made: its data folder holds the course's mark (.labhub-data)
    labhub firewall down "$settings"
    labhub purge "$settings"
    exit
fi

image=$(labhub get "$settings" image)
instructor_image=$(labhub get "$settings" instructor_image)
for wanted in "$image" "$instructor_image"; do
    if ! /usr/bin/docker image inspect "$wanted" >/dev/null 2>&1; then
        say "no image $wanted yet: building the students' and the instructor's (scripts/image.sh)"
        LABTOOLS_IMAGE=$image LABTOOLS_INSTRUCTOR_IMAGE=$instructor_image \
            bash "$here/scripts/image.sh"
        break
    fi
done
# the data folder, made (mode 700) and marked for the course at the first start
data=$(labhub data-dir "$settings")

# --- the firewall for the servers' networks, for as long as the hub runs ------------------
labhub firewall up "$settings" || fail "the firewall rules could not be set (see above)"
hub_pid=""
finish() {
    if [ -n "$hub_pid" ] && kill -0 "$hub_pid" 2>/dev/null; then
        kill -TERM "$hub_pid" 2>/dev/null || true
        wait "$hub_pid" 2>/dev/null || true
    fi
    labhub firewall down "$settings" || true
    say "stopped"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "starting JupyterHub: $(labhub get "$settings" public_url)"
cd "$data"
# job control: the hub in a process group of its own, SIGINT not ignored (a background job
# of a script ignores it otherwise, and so would the hub's services: its idle culler then
# held the hub's stop for 30 s)
set -m
LABHUB_SETTINGS=$settings "$venv/bin/jupyterhub" -f "$here/deploy/hub/jupyterhub_config.py" &
hub_pid=$!
status=0
wait "$hub_pid" || status=$?
hub_pid=""
exit "$status"
