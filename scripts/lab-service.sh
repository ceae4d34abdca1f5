#!/usr/bin/env bash
# JupyterLab as a systemd service for the lab VM (called by `setup.sh --service`).
# Token-protected; listens on port 8888 inside the VM, which Vagrant forwards to the
# host's 127.0.0.1:$LAB_PORT only (the Vagrantfile passes LAB_PORT, 8888 by default), and
# `labtools-lab-url` prints the host's address. Idempotent: files are rewritten only when
# their content changes.
#
# A student's lab by default (LABTOOLS_MODE=student): JupyterLab opens workspace/ in the
# shared folder, the student notebooks only (`labtools notebooks workspace`, which never
# overwrites the student's work), the kernels get LABTOOLS_MODE=student, and JupyterLab
# shows no instructor tools (nbgrader's formgrader, course list and Create Assignment off:
# the student server's config in deploy/image/etc/labtools/jupyter/student).
# LABTOOLS_MODE=instructor vagrant provision (or up) opens the whole kit, solutions/ too.
set -euo pipefail
venv=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '[setup] %s\n' "$*"; }
changed=no

# write FILE MODE: content from stdin, only if different
write() {
    local file=$1 mode=$2 tmp
    tmp=$(mktemp)
    cat > "$tmp"
    if [ -f "$file" ] && cmp -s "$tmp" "$file"; then
        rm -f "$tmp"
    else
        install -D -m "$mode" "$tmp" "$file"
        rm -f "$tmp"
        changed=yes
        say "wrote $file"
    fi
}

host_port=${LAB_PORT:-8888}
case "$host_port" in ''|*[!0-9]*) echo "[setup] LAB_PORT must be a port number" >&2; exit 2 ;; esac
mode=${LABTOOLS_MODE:-student}
case "$mode" in student|instructor) ;; *)
    echo "[setup] LABTOOLS_MODE must be student or instructor" >&2; exit 2 ;; esac
root=$here
# the instructor's: every nbgrader tool, loaded once the lab answers (as make lab's)
prepare="Environment=JUPYTER_CONFIG_PATH=$here/deploy/lab/instructor"
if [ "$mode" = student ]; then
    root=$here/workspace
    # the student's notebooks, and nbgrader's instructor extensions off
    prepare="ExecStartPre=$venv/bin/labtools notebooks workspace $root --students $here/notebooks
Environment=JUPYTER_CONFIG_PATH=$here/deploy/image/etc/labtools/jupyter/student"
fi
# the service's settings: the host's port (for the printed address) and, when asked for, a
# rate scale for a machine too slow for the lab's rates (docs/running.md, "The machine is part...")
{
    printf 'LAB_HOST_PORT=%s\n' "$host_port"
    printf 'LABTOOLS_MODE=%s\n' "$mode"
    [ -n "${LABTOOLS_RATE_SCALE:-}" ] && printf 'LABTOOLS_RATE_SCALE=%s\n' "$LABTOOLS_RATE_SCALE"
    true
} | write /etc/labtools/lab.env 644

if [ ! -s /etc/labtools/jupyter.env ]; then
    token=$("$venv/bin/python" -c 'import secrets; print(secrets.token_hex(24))')
    printf 'JUPYTER_TOKEN=%s\n' "$token" | write /etc/labtools/jupyter.env 600
fi

write /etc/systemd/system/labtools-lab.service 644 <<UNIT
[Unit]
Description=Network measurement lab (JupyterLab, token-protected)
After=network-online.target openvswitch-switch.service

[Service]
Type=simple
EnvironmentFile=/etc/labtools/jupyter.env
EnvironmentFile=-/etc/labtools/lab.env
Environment=PATH=$venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
Environment=MPLCONFIGDIR=$here/.cache/matplotlib
WorkingDirectory=$here
ExecStartPre=-$venv/bin/labtools clean
$prepare
ExecStart=$venv/bin/jupyter lab --no-browser --allow-root --ip=0.0.0.0 --port=8888 --ServerApp.port_retries=0 --ServerApp.root_dir=$root --KernelManager.shutdown_wait_time=120 --ServerApp.kernel_manager_class=labtools.teach.lab_server.LabKernelManager
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT

write /usr/local/bin/labtools-lab-url 755 <<'URL'
#!/bin/sh
# Prints the address of the lab with its token, as the host's browser reaches it through
# Vagrant's forwarded port (run as root: sudo labtools-lab-url).
. /etc/labtools/lab.env
. /etc/labtools/jupyter.env
echo "http://127.0.0.1:${LAB_HOST_PORT:-8888}/lab?token=$JUPYTER_TOKEN"
URL

for tool in labtools simpleperf; do
    if [ "$(readlink /usr/local/bin/$tool 2>/dev/null)" != "$venv/bin/$tool" ]; then
        ln -sfn "$venv/bin/$tool" "/usr/local/bin/$tool"
        changed=yes
    fi
done

if [ -d /run/systemd/system ]; then
    [ "$changed" = yes ] && systemctl daemon-reload
    systemctl enable --quiet labtools-lab.service
    if [ "$changed" = yes ] || ! systemctl is-active --quiet labtools-lab.service; then
        systemctl restart labtools-lab.service
    fi
    say "JupyterLab service: $(systemctl is-active labtools-lab.service)"
else
    say "no systemd here: the JupyterLab service is installed but not started"
fi
say "service files: $([ "$changed" = yes ] && echo updated || echo unchanged)"
say "lab mode: $mode ($([ "$mode" = student ] && echo "workspace/: the student notebooks only" || echo "the whole kit, solutions/ included"))"
say 'open the lab: run "sudo labtools-lab-url" for its address with the token'
