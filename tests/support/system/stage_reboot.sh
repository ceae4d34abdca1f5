#!/bin/bash
# Stage 2 of the provisioning check: after a restart of the system, is the lab back?
set -u
ctl=/mnt/labtools-control
. "$ctl/provision.env"
say() { echo "[stage 2] $(date -u +%T) $*"; }
say "up again after $(cut -d' ' -f1 /proc/uptime) s"
bash "$ctl/wait_lab.sh" "$TOKEN_WAIT_S" > "$ctl/answer-2.txt" 2>&1
systemctl is-active labtools-lab.service > "$ctl/service-2.txt" 2>&1
runuser -u vagrant -- sudo labtools-lab-url > "$ctl/url-2.txt" 2> "$ctl/url-2.err"
ss -Hltn > "$ctl/listening-2.txt"
touch "$ctl/ready-2"
say "ready 2: waiting for the host's checks"
for _ in $(seq 1 900); do [ -e "$ctl/host-done-2" ] && break; sleep 1; done
# What a student types first in the VM: plain Mininet, Open vSwitch and its own controller.
say "plain mn --custom (Open vSwitch, Mininet's controller)"
(cd /home/vagrant/lab && timeout 300 mn --custom topologies/line.py --topo line,n=2 \
    --test pingall) > "$ctl/mn-2.txt" 2>&1
echo $? > "$ctl/mn-2.status"
mn -c > /dev/null 2>&1
touch "$ctl/stage-2-done"
say "powering off"
systemctl poweroff
