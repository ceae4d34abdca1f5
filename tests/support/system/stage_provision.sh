#!/bin/bash
# Stage 1 of the provisioning check, run by the booted system's systemd (as root) once it
# is up: provision exactly as Vagrant's shell provisioner does (the command and the
# environment the Vagrantfile gives, read from provision.env), let the host check the
# forwarded port, provision a second time, run `labtools doctor` as a student would, reboot.
set -u
ctl=/mnt/labtools-control
. "$ctl/provision.env"   # PROVISION_COMMAND, PROVISION_ENV (NAME=VALUE ...), TOKEN_WAIT_S
say() { echo "[stage 1] $(date -u +%T) $*"; }
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$@"; }

provision() {  # provision N: run the Vagrant provisioner's command, timed, logged
    local t0 t1
    say "provisioning run $1: $PROVISION_COMMAND"
    t0=$(date +%s.%N)
    env $PROVISION_ENV bash -c "$PROVISION_COMMAND" > "$ctl/provision-$1.log" 2>&1
    echo $? > "$ctl/provision-$1.status"
    t1=$(date +%s.%N)
    elapsed "$t0" "$t1" > "$ctl/provision-$1.seconds"
    say "provisioning run $1 ended: status $(cat "$ctl/provision-$1.status"), $(cat "$ctl/provision-$1.seconds") s"
}

report() {  # report N: what a student and the host check see once the service answers
    bash "$ctl/wait_lab.sh" "$TOKEN_WAIT_S" > "$ctl/answer-$1.txt" 2>&1
    systemctl is-active labtools-lab.service > "$ctl/service-$1.txt" 2>&1
    systemctl is-enabled labtools-lab.service >> "$ctl/service-$1.txt" 2>&1
    # docs/students.md's command, as the student types it: vagrant ssh -c 'sudo labtools-lab-url'
    runuser -u vagrant -- sudo labtools-lab-url > "$ctl/url-$1.txt" 2> "$ctl/url-$1.err"
    ss -Hltn > "$ctl/listening-$1.txt"
    touch "$ctl/ready-$1"
    say "ready $1: waiting for the host's checks"
    for _ in $(seq 1 900); do [ -e "$ctl/host-done-$1" ] && break; sleep 1; done
}

say "up after $(cut -d' ' -f1 /proc/uptime) s; kernel $(uname -r); $(. /etc/os-release; echo "$PRETTY_NAME")"
provision 1
report 1
provision 2
systemctl is-active labtools-lab.service > "$ctl/service-after-2.txt" 2>&1
runuser -u vagrant -- sudo labtools doctor > "$ctl/doctor.txt" 2>&1
echo $? > "$ctl/doctor.status"
say "rebooting"
touch "$ctl/stage-1-done"
systemctl reboot
