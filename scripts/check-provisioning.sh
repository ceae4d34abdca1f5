#!/usr/bin/env bash
# CI check of the lab VM's provisioning: the setup script runs twice on this machine (the
# second run must change nothing and take seconds), and the Vagrantfile validates.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

run_timed() {
    local start end
    start=$(date +%s.%N)
    bash scripts/setup.sh --service > "$1" 2>&1
    end=$(date +%s.%N)
    python3 -c "print(round($end - $start, 2))"
}
first=$(run_timed /tmp/labtools-provision-1.log)
second=$(run_timed /tmp/labtools-provision-2.log)
echo "provisioning: first run ${first} s, second run ${second} s"
for want in "system packages: all present" "kit: already installed" "service files: unchanged"; do
    if ! grep -q "$want" /tmp/labtools-provision-2.log; then
        echo "provisioning is not idempotent: the second run did not say '$want':" >&2
        cat /tmp/labtools-provision-2.log >&2
        exit 1
    fi
done
if python3 -c "import sys; sys.exit(0 if float('$second') < 30 else 1)"; then
    echo "provisioning: second run changed nothing"
else
    echo "provisioning: the second run took ${second} s (more than 30 s)" >&2
    exit 1
fi

if ! command -v vagrant >/dev/null; then
    echo "installing vagrant (Debian package) to validate the Vagrantfile..."
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq vagrant >/dev/null
fi
(cd vagrant && vagrant validate --ignore-provider)
