#!/bin/sh
# Run once on every node of the cluster, as root (or bake it into the nodes' image):
# what a lab's pod needs from its node and cannot do itself.
#  - the kit's seccomp profile where the kubelet finds `localhostProfile:
#    labtools-userns.json` (Docker's and containerd's default profiles refuse the user
#    namespaces a lab's network lives in);
#  - sch_netem loaded now and at every boot (a pod can never load a kernel module; without
#    it a student's kernels run in the lab VM inside the pod: slow, under emulation).
#   sh deploy/k8s/node-setup.sh [SECCOMP_DIR]    # default /var/lib/kubelet/seccomp
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/var/lib/kubelet/seccomp}
mkdir -p "$dir"
cp "$here/image/seccomp-userns.json" "$dir/labtools-userns.json"
echo "seccomp profile: $dir/labtools-userns.json"
modprobe sch_netem
echo sch_netem > /etc/modules-load.d/labtools-netem.conf
echo "sch_netem: loaded, and at every boot (/etc/modules-load.d/labtools-netem.conf)"
if [ "$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo 1)" != 1 ] ||
   [ "$(cat /proc/sys/user/max_user_namespaces)" = 0 ] ||
   [ "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null || echo 0)" = 1 ]; then
    echo "this node restricts unprivileged user namespaces, so labs cannot start in its" \
         "pods: sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0," \
         "and on Ubuntu 23.10+ kernel.apparmor_restrict_unprivileged_userns=0" >&2
    exit 1
fi
