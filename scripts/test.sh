#!/usr/bin/env bash
# `make test`: install what is needed, then run the whole suite.
#  1. unit tests (anywhere; the `root` ones need root and a Linux kernel, no netem);
#  2. the lab VM's provisioning: setup twice (idempotent, quick), Vagrantfile validated;
#  3. real-network tests (marker `network`), the solution notebooks among them: natively
#     where this kernel can emulate links, otherwise inside the lab VM (labtools vm), which
#     boots a stock kernel that can (one boot for all of them).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
bash scripts/setup.sh
py=.venv/bin/python
export PATH="$here/.venv/bin:$PATH"

echo "== lint and types (ruff, mypy) =="
.venv/bin/ruff check labtools tests benchmarks topologies solutions
.venv/bin/mypy

echo "== unit tests =="
$py -m pytest -q -m "not network and not vm" "$@"

echo "== provisioning of the lab VM (twice) and the Vagrantfile =="
bash scripts/check-provisioning.sh

echo "== real-network tests and the solution notebooks, executed on real networks =="
# Only these files are imported in the VM (importing the others costs minutes under
# emulation). The notebooks run with LABTOOLS_QUICK=1 (shorter pings and UDP runs).
network_files=(tests/test_network.py tests/test_network_cleanup.py
               tests/test_notebooks.py tests/test_widgets.py)
export LABTOOLS_QUICK=1
if $py -c 'import sys; from labtools.system.capabilities import native_network_ok; sys.exit(0 if native_network_ok() else 1)'; then
    echo "this kernel can emulate links: running them natively"
    $py -m pytest -q --durations=0 -m network "${network_files[@]}" "$@"
else
    echo "this kernel cannot emulate links (no netem): running them in the lab VM"
    labtools vm --env LABTOOLS_QUICK --timeout 2400 -- "$here/.venv/bin/python" -m pytest -q \
        --durations=0 -m network "${network_files[@]}" "$@"
fi
