#!/usr/bin/env bash
# The lab VM's provisioning, checked as `vagrant up` runs it: a fresh Debian 12 system
# (debootstrap, cached between runs) booted with systemd as init, the repository shared
# as Vagrant's synced folder, the Vagrantfile's provisioning command run in it twice, then
# a restart (tests/system/test_provisioning.py, marker `system`). Then the Vagrantfile validates.
#   LABTOOLS_SYSTEM=ubuntu-24.04 bash scripts/check-provisioning.sh   # another system
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
.venv/bin/python -m pytest -q -s -m system tests/system/test_provisioning.py

if ! command -v vagrant >/dev/null; then
    echo "installing vagrant (Debian package) to validate the Vagrantfile..."
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq vagrant >/dev/null
fi
(cd vagrant && vagrant validate --ignore-provider)
