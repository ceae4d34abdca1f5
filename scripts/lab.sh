#!/usr/bin/env bash
# `make lab`: JupyterLab on http://127.0.0.1:${LAB_PORT:-8888}, protected by a token.
#
# Where this machine's kernel can emulate links, JupyterLab runs here. Otherwise it runs
# inside the lab VM (labtools vm), whose port is forwarded from 127.0.0.1 on this machine
# only; notebooks and results are saved in this project folder on the host either way.
#
# A student's lab by default: JupyterLab opens workspace/, the student notebooks only (made
# by `labtools notebooks workspace`, never overwriting the student's work), and the kernels
# get LABTOOLS_MODE=student (no expected values handed out), and JupyterLab shows no
# instructor tools (nbgrader's formgrader, course list and Create Assignment are off: the
# student server's config in deploy/image/etc/labtools/jupyter/student, as in the container
# and on a course hub). LABTOOLS_MODE=instructor opens the whole kit, solutions/ included,
# with every nbgrader tool (deploy/lab/instructor). Either way nbgrader's server extensions
# are loaded once the lab answers (labtools/teach/deferred_extensions.py says why).
#
#   bash scripts/lab.sh                  # token generated, URL printed
#   LAB_PORT=8899 JUPYTER_TOKEN=secret bash scripts/lab.sh
#   LABTOOLS_MODE=instructor bash scripts/lab.sh
#   LABTOOLS_QUICK=1 bash scripts/lab.sh # the probes' short durations (rehearsing a lab)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${LABTOOLS_VENV:-$here/.venv}
port=${LAB_PORT:-8888}
export LABTOOLS_MODE=${LABTOOLS_MODE:-student}
export LABTOOLS_QUICK=${LABTOOLS_QUICK:-0}
case "$LABTOOLS_MODE" in student|instructor) ;; *)
    echo "[lab] LABTOOLS_MODE must be student or instructor" >&2; exit 2 ;; esac
if [ "$LABTOOLS_MODE" = instructor ] && [ -f "$here/labtools/EDITION" ]; then
    echo "[lab] this is the student edition: no instructor's lab here (use the whole kit)" >&2
    exit 2
fi
root=$here
[ "$LABTOOLS_MODE" = student ] && root=$here/workspace
# a student's lab: nbgrader's instructor extensions off (the same config as the container's);
# an instructor's: all of them
student_config=$here/deploy/image/etc/labtools/jupyter/student
instructor_config=$here/deploy/lab/instructor

if [ "${1:-}" = "--serve" ]; then
    # Runs where the networks run (natively or inside the VM). Inside the VM, listen on the
    # VM's own address, which only the host's 127.0.0.1:$port forwards to.
    : "${JUPYTER_TOKEN:?a token is required}"
    export JUPYTER_TOKEN
    export MPLCONFIGDIR="$here/.cache/matplotlib"  # the font cache setup.sh built
    config=$student_config
    [ "$LABTOOLS_MODE" = instructor ] && config=$instructor_config
    export JUPYTER_CONFIG_PATH="$config${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
    cd "$here"
    # jupyter lab, less its import-time call of node (labtools/teach/lab_server.py says why)
    exec "$venv/bin/python" -m labtools.teach.lab_server --no-browser --allow-root \
        --ip="${LABTOOLS_VM_ADDR:-127.0.0.1}" --port="$port" --ServerApp.port_retries=0 \
        --ServerApp.root_dir="$root" --KernelManager.shutdown_wait_time=120 \
        --ServerApp.custom_display_url="http://127.0.0.1:$port/lab" \
        --ServerApp.kernel_manager_class=labtools.teach.lab_server.LabKernelManager
fi

case "$port" in ''|*[!0-9]*) echo "[lab] LAB_PORT must be a port number" >&2; exit 2 ;; esac
if ! "$venv/bin/python" -c 'import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$port"; then
    echo "[lab] 127.0.0.1:$port is in use; stop what uses it or pick another: LAB_PORT=8899 make lab" >&2
    exit 1
fi

if [ -z "${JUPYTER_TOKEN:-}" ]; then
    JUPYTER_TOKEN=$("$venv/bin/python" -c 'import secrets; print(secrets.token_hex(24))')
fi
export JUPYTER_TOKEN
url="http://127.0.0.1:$port/lab?token=$JUPYTER_TOKEN"
if [ "$LABTOOLS_MODE" = student ]; then
    "$venv/bin/labtools" notebooks workspace "$root" --students "$here/notebooks" | sed 's/^/[lab] /'
else
    echo "[lab] instructor mode: the whole kit, solutions/ included"
fi
mkdir -p "$here/.cache"
( umask 077; printf '%s\n' "$url" > "$here/.cache/lab-url" )
echo "[lab] starting JupyterLab (in the lab VM when this kernel cannot emulate links: up to"
echo "[lab] 3 minutes under software emulation); the address is printed when it answers"

# Say "ready" only once the lab really answers (with the token) on the forwarded port.
"$venv/bin/python" - "$port" "$JUPYTER_TOKEN" "$url" <<'WAIT' &
import sys, time, urllib.request
port, token, url = sys.argv[1:4]
probe = f"http://127.0.0.1:{port}/api/status?token={token}"
deadline = time.monotonic() + 900
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(probe, timeout=5) as reply:
            if reply.status == 200:
                print(f"[lab] ready: {url}", flush=True)
                print("[lab] (also saved in .cache/lab-url; stop with Ctrl-C)", flush=True)
                sys.exit(0)
    except OSError:
        pass
    time.sleep(2)
print("[lab] JupyterLab did not answer within 15 minutes: see the messages above", flush=True)
WAIT
waiter=$!
trap 'kill $waiter 2>/dev/null || true' EXIT
"$venv/bin/labtools" vm --if-needed --forward "$port" --env JUPYTER_TOKEN --env LAB_PORT="$port" \
    --env LABTOOLS_MODE --env LABTOOLS_QUICK \
    -- bash "$here/scripts/lab.sh" --serve
