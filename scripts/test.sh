#!/usr/bin/env bash
# `make test`: install what is needed, then run the whole suite, stage by stage, and say
# how long each stage took (the last lines of the output).
#  1. lint and types; unit tests (anywhere; the `root` ones need root, no netem);
#  2. grading: the real nbgrader on a course made from solutions/ (replayed measurements);
#  3. the lab VM's provisioning: a fresh Debian 12 booted with systemd, provisioned as
#     `vagrant up` does, twice, then restarted (marker `system`; runs in the background
#     during stages 1-2, it needs no CPU of its own most of the time: downloads);
#  4. the VM runner booted for real, and a Jupyter kernel in the lab VM (marker `vm`);
#     real-network tests (marker `network`), the solution notebooks among them: natively
#     where this kernel can emulate links, otherwise inside the lab VM (labtools vm);
#  5. the browser test: `make lab`'s JupyterLab in headless Chromium (marker `browser`);
#     the student edition (`labtools bundle --students`) started with its own `make lab`;
#  6. the course hub (marker `hub`): the lab image (built in the background during stages
#     1-2: mostly downloads), JupyterHub with students and an instructor in headless
#     Chromium, run while the provisioning check finishes; the Kubernetes pod checks.
#  7. nothing left behind: `labtools clean --dry-run` finds no more than before the run.
# The unit tests run beside a stream of short processes (tests/process_churn.py), as on a
# busy machine. LABTOOLS_SKIP="system browser hub" leaves stages out (say so in what you report).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
venv=${LABTOOLS_VENV:-$here/.venv}  # as scripts/setup.sh: the venv it made
py=$venv/bin/python
skip=" ${LABTOOLS_SKIP:-} "
timings=()
t_all=$(date +%s)
stage_start() { echo "== $1 =="; t_stage=$(date +%s); stage_name=$1; }
stage_end() { timings+=("$(printf '%5d s  %s' $(( $(date +%s) - t_stage )) "$stage_name")"); }
provision_pid=""
hub_prep_pid=""
report() {
    # a stage that failed leaves no provisioning check running behind it (its VM, its
    # debootstrap): the whole process group of the background check is stopped
    if [ -n "$provision_pid" ] && kill -0 "$provision_pid" 2>/dev/null; then
        echo "== stopping the provisioning check still running in the background =="
        kill -TERM -- "-$provision_pid" 2>/dev/null || kill -TERM "$provision_pid" 2>/dev/null || true
        wait "$provision_pid" 2>/dev/null || true
    fi
    # nor the hub's image build (its Docker daemon stops and the firewall is put back)
    if [ -n "$hub_prep_pid" ] && kill -0 "$hub_prep_pid" 2>/dev/null; then
        echo "== stopping the hub's image build still running in the background =="
        kill -TERM "$hub_prep_pid" 2>/dev/null || true
        wait "$hub_prep_pid" 2>/dev/null || true
    fi
    if [ -d results/junit ]; then
        echo "== where the time went: the slowest tests of each stage =="
        "$py" tests/slowest_tests.py results/junit 6 || true
    fi
    echo "== time per stage =="
    printf '%s\n' "${timings[@]}"
    printf '%5d s  total\n' $(( $(date +%s) - t_all ))
}
trap report EXIT

stage_start "setup (packages, venv, kit; test tools)"
bash scripts/setup.sh --test
export PATH="$venv/bin:$PATH"
# what `labtools clean` would remove before the run: the run's end checks it left no more
mkdir -p results
rm -rf results/junit  # this run's only (the slowest tests, printed at the end)
$py tests/leftover_check.py before results/leftovers-before.json
stage_end

if [[ "$skip" != *" system "* ]]; then
    echo "== provisioning of the lab VM under systemd: started in the background =="
    t_provision=$(date +%s)
    mkdir -p results/provisioning
    set -m  # its own process group, stopped whole if a later stage fails
    bash scripts/check-provisioning.sh > results/provisioning/check.log 2>&1 &
    provision_pid=$!
    set +m
fi

if [[ "$skip" != *" hub "* ]]; then
    echo "== the course hub's packages and lab image: started in the background =="
    t_hub_prep=$(date +%s)
    mkdir -p results/hub
    $py tests/hub_machine.py prepare results/hub > results/hub/prepare.out 2>&1 &
    hub_prep_pid=$!
fi

stage_start "lint and types (ruff, mypy)"
"$venv/bin/ruff" check labtools tests benchmarks topologies solutions deploy
"$venv/bin/mypy"
stage_end

stage_start "unit tests (beside short processes that start and end all the time)"
# a busy machine: a test that reads /proc of a process that exits meanwhile fails here
$py tests/process_churn.py --pause-ms 25 > results/process-churn.out &
churn_pid=$!
status=0
$py -m pytest -q -m "not network and not vm and not grading and not system and not browser and not hub" \
    --junitxml=results/junit/1-unit.xml "$@" || status=$?
kill -TERM "$churn_pid" 2>/dev/null || true
wait "$churn_pid" 2>/dev/null || true
cat results/process-churn.out
[ "$status" = 0 ] || exit "$status"
stage_end

stage_start "grading with the real nbgrader (release, autograde, feedback, export)"
$py -m pytest -q -m grading --junitxml=results/junit/2-grading.xml tests/test_grading.py tests/test_class_grading.py \
    tests/test_grading_lab7.py
stage_end

if [ -n "$hub_prep_pid" ]; then
    stage_start "the course hub: JupyterHub, an instructor and two students in Chromium; Kubernetes pods"
    status=0
    wait "$hub_prep_pid" || status=$?
    hub_prep_pid=""
    cat results/hub/prepare.out
    timings+=("$(printf '%5d s  %s' $(( $(date +%s) - t_hub_prep )) \
        "the hub's packages and lab image (in the background from the start)")")
    [ "$status" = 0 ] || { tail -30 results/hub/prepare.log; exit "$status"; }
    $py -m pytest -q -s -m hub --junitxml=results/junit/3-hub.xml tests/test_hub.py \
        tests/test_lab_container.py tests/test_k8s.py
    stage_end
fi

if [ -n "$provision_pid" ]; then
    stage_start "provisioning of the lab VM under systemd (waiting for it)"
    status=0
    wait "$provision_pid" || status=$?
    cat results/provisioning/check.log
    timings+=("$(printf '%5d s  %s' $(( $(date +%s) - t_provision )) \
        "provisioning under systemd (in the background from the start)")")
    [ "$status" = 0 ] || exit "$status"
fi

stage_start "the VM runner: a real boot, and a notebook's kernel in the lab VM (marker vm)"
$py -m pytest -q -m vm --junitxml=results/junit/4-vm.xml tests/test_vm.py tests/test_vm_kernel.py
stage_end

stage_start "real-network tests and the solution notebooks, executed on real networks"
# Only these files are imported in the VM (importing the others costs minutes under
# emulation). The notebooks run with LABTOOLS_QUICK=1 (shorter pings and UDP runs).
network_files=(tests/test_network.py tests/test_network_queues.py tests/test_network_cleanup.py
               tests/test_notebooks.py tests/test_widgets.py)
export LABTOOLS_QUICK=1
if $py -c 'import sys; from labtools.lab.placement import runs_natively; sys.exit(0 if runs_natively() else 1)'; then
    echo "this kernel can emulate links: running them natively"
    $py -m pytest -q --durations=0 -m network --junitxml=results/junit/5-network.xml \
        "${network_files[@]}" "$@"
else
    echo "this kernel cannot emulate links (no netem): running them in the lab VM"
    labtools vm --env LABTOOLS_QUICK --timeout 2400 -- "$py" -m pytest -q \
        --durations=0 -m network --junitxml=results/junit/5-network.xml "${network_files[@]}" "$@"
fi
unset LABTOOLS_QUICK
stage_end

if [[ "$skip" != *" browser "* ]]; then
    stage_start "the browser test: make lab's JupyterLab in headless Chromium; the student edition's make lab"
    $py -m pytest -q -s -m browser --junitxml=results/junit/6-browser.xml tests/test_browser.py
    $py -m pytest -q -s -m browser --junitxml=results/junit/6-edition.xml \
        tests/test_edition_lab.py
    stage_end
fi

stage_start "nothing left behind (labtools clean --dry-run as before the run)"
$py tests/leftover_check.py after results/leftovers-before.json
stage_end
