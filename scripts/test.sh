#!/usr/bin/env bash
# `make test`: install what is needed, then run the whole suite, stage by stage, and say
# how long each stage took and how busy the machine's CPUs were meanwhile (the last lines).
# In the order they run (the first half beside two background jobs started at once: the
# lab VM's provisioning check and the hub's lab image; the second half alone):
#  1. lint and types; unit tests (anywhere; the `root` ones need root, no netem);
#  2. grading: the real nbgrader on a course made from solutions/ (replayed measurements);
#  3. the course hub (marker `hub`): the lab image (built in the background during stages
#     1-2: mostly cached), JupyterHub with students and an instructor in headless
#     Chromium; the lab in a container; the Kubernetes pod checks;
#  4. the VM runner booted for real, and a Jupyter kernel in the lab VM (marker `vm`);
#  5. the browser test: `make lab`'s JupyterLab in headless Chromium (marker `browser`);
#     the student edition (`labtools bundle --students`) started with its own `make lab`;
#     then the first half waits for the provisioning check: a fresh Debian 12 booted with
#     systemd, provisioned as `vagrant up` does, twice, then restarted (marker `system`;
#     under software emulation it keeps about one CPU busy from the start);
#  6. real-network tests (marker `network`), the solution notebooks among them: natively
#     where this kernel can emulate links, otherwise inside the lab VM (labtools vm): the
#     tests that judge the network alone, then the notebooks in two lab VMs at once;
#  7. nothing left behind: `labtools clean --dry-run` finds no more than before the run.
# Stages 1-5 judge nothing by how fast the machine is: they share it with the background
# jobs. Stage 6 judges the network and runs with nothing beside it.
# The unit tests run beside a stream of short processes (tests/support/process_churn.py), as on a
# busy machine. LABTOOLS_SKIP="system browser hub" leaves stages out (say so in what you report).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
venv=${LABTOOLS_VENV:-$here/.venv}  # as scripts/setup.sh: the venv it made
py=$venv/bin/python
skip=" ${LABTOOLS_SKIP:-} "
timings=()
t_all=$(date +%s)
# the whole machine's busy CPU time (user, nice, system, irq, softirq, steal), in ticks
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
ticks_per_s=$(getconf CLK_TCK)
n_cpus=$(nproc)
stage_start() { echo "== $1 =="; t_stage=$(date +%s); b_stage=$(busy_ticks); stage_name=$1; }
# each stage's wall time, and how many of the machine's CPUs were busy meanwhile (with
# whatever ran in the background): a stage at "2.0 of 2" waits on the CPUs
stage_end() {
    local wall=$(( $(date +%s) - t_stage )) busy
    busy=$(awk -v b="$(( $(busy_ticks) - b_stage ))" -v hz="$ticks_per_s" -v w="$wall" \
        'BEGIN { printf "%.1f", (w > 0 ? b / hz / w : 0) }')
    timings+=("$(printf '%5d s  %s  (%s of %s CPUs busy)' "$wall" "$stage_name" "$busy" "$n_cpus")")
}
provision_pid=""
hub_prep_pid=""
half_pids=()  # the solution notebooks' two lab VMs, while they run
# stop_job PID WHAT: stop a background job still running (its whole process group when it
# has one of its own, else the process) and wait for it
stop_job() {
    local pid=$1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    echo "== stopping $2 =="
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
report() {
    for pid in "${half_pids[@]}"; do
        stop_job "$pid" "the notebooks' lab VM still running (process group $pid)"
    done
    # a stage that failed leaves no provisioning check running behind it (its VM, its
    # debootstrap): the whole process group of the background check is stopped
    stop_job "$provision_pid" "the provisioning check still running in the background"
    # nor the hub's image build (its Docker daemon stops and the firewall is put back)
    stop_job "$hub_prep_pid" "the hub's image build still running in the background"
    if [ -d results/junit ]; then
        echo "== where the time went: the slowest tests of each stage =="
        "$py" tests/support/slowest_tests.py results/junit 6 || true
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
$py tests/support/leftover_check.py before results/leftovers-before.json
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
    $py tests/support/hub_machine.py prepare results/hub > results/hub/prepare.out 2>&1 &
    hub_prep_pid=$!
fi

stage_start "lint and types (ruff, mypy)"
"$venv/bin/ruff" check labtools tests benchmarks topologies solutions deploy
"$venv/bin/mypy"
stage_end

stage_start "unit tests (beside short processes that start and end all the time)"
# a busy machine: a test that reads /proc of a process that exits meanwhile fails here
$py tests/support/process_churn.py --pause-ms 25 > results/process-churn.out &
churn_pid=$!
status=0
# in parallel, as `make unit` (pytest-xdist: 2 workers on the 2-core CI machine)
$py -m pytest -q --unit -n "${LABTOOLS_UNIT_JOBS:-2}" --junitxml=results/junit/1-unit.xml "$@" || status=$?
kill -TERM "$churn_pid" 2>/dev/null || true
wait "$churn_pid" 2>/dev/null || true
cat results/process-churn.out
[ "$status" = 0 ] || exit "$status"
stage_end

stage_start "grading with the real nbgrader (release, autograde, feedback, export)"
# two workers, each file whole on one (its course is built once per file): 208 s against
# 284 s one after the other on the quiet 2-core machine (the real nbgrader waits on its
# kernels, so one worker left a CPU idle: 1.6 of 2 busy in run 35, the background included)
$py -m pytest -q -m grading -n 2 --dist loadfile --junitxml=results/junit/2-grading.xml tests/instructor/test_grading.py tests/instructor/test_class_grading.py \
    tests/instructor/test_grading_lab7.py
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
    $py -m pytest -q -s -m hub --junitxml=results/junit/3-hub.xml tests/deploy/test_hub.py \
        tests/deploy/test_lab_container.py tests/deploy/test_k8s.py
    stage_end
fi

# still beside the provisioning check: nothing here judges how fast the machine is
stage_start "the VM runner: a real boot, and a notebook's kernel in the lab VM (marker vm)"
$py -m pytest -q -m vm --junitxml=results/junit/4-vm.xml tests/system/test_vm.py tests/system/test_vm_kernel.py
stage_end

# beside the provisioning check too: it judges nothing by how fast the machine is, and the
# first half's CPUs had room (run 35: the waiting stage 62 s at 1.0 of 2 CPUs busy, the
# browser 304 s at 1.2 after the real networks)
if [[ "$skip" != *" browser "* ]]; then
    stage_start "the browser test: make lab's JupyterLab in headless Chromium; the student edition's make lab"
    $py -m pytest -q -s -m browser --junitxml=results/junit/5-browser.xml tests/test_browser.py
    $py -m pytest -q -s -m browser --junitxml=results/junit/5-edition.xml \
        tests/instructor/test_edition_lab.py
    stage_end
fi

if [ -n "$provision_pid" ]; then
    stage_start "waiting for the provisioning check (the first half's last stage)"
    status=0
    wait "$provision_pid" || status=$?
    cat results/provisioning/check.log
    timings+=("$(printf '%5d s  %s' $(( $(date +%s) - t_provision )) \
        "provisioning under systemd (in the background from the start)")")
    [ "$status" = 0 ] || exit "$status"
    stage_end
fi

stage_start "real-network tests and the solution notebooks, executed on real networks"
# Only these files are imported in the VM (importing the others costs minutes under
# emulation). The notebooks run with LABTOOLS_QUICK=1 (shorter pings and UDP runs).
judging_files=(tests/lab/test_network.py tests/lab/test_network_queues.py tests/lab/test_live_network.py)
# the rest in two halves of about the same time: the measurement panel's runs and the
# solution notebooks 04 02 01 and any added later (run 35: 613 s of tests in a lab VM of
# one CPU beside the other half); 06 07 03 00 05 (595 s) and the network's cleanup (35 s
# in the judging part: it judges no time, so it need not run alone)
other_files=(tests/teach/test_notebooks.py tests/teach/test_widgets.py tests/lab/test_network_cleanup.py)
second_half="06 or 07 or 03 or 00 or 05 or network_cleanup"
halves=("not ($second_half)" "$second_half")
export LABTOOLS_QUICK=1
if $py -c 'import sys; from labtools.lab.placement import runs_natively; sys.exit(0 if runs_natively() else 1)'; then
    echo "this kernel can emulate links: running them natively, one after the other"
    $py -m pytest -q --durations=0 -m network --junitxml=results/junit/6-network.xml \
        "${judging_files[@]}" "${other_files[@]}" "$@"
else
    echo "this kernel cannot emulate links (no netem): running them in the lab VM"
    # the tests that judge how the network behaved run alone: nothing else on the CPUs
    labtools vm --env LABTOOLS_QUICK --timeout 2400 -- "$py" -m pytest -q \
        --durations=0 -m network --junitxml=results/junit/6-network.xml "${judging_files[@]}" "$@"
    # the notebooks and the panel report on the network but are not graded on it (only a
    # result the network cannot produce fails a notebook; the panel's test checks that it
    # measured and showed it): their two halves run at once, each in a lab VM of its own
    # (its own kernel, /tmp and Mininet) with one CPU. Measured by hand on the 2-core
    # machine, the eight notebooks alone: 594 s in two such halves, against about 925 s one
    # after the other in one VM of 2 CPUs; two VMs of 2 CPUs each took 961 s (four emulated
    # CPUs on two cores wait on each other: each guest took 42 s to boot instead of 14)
    set -m  # each half its own process group, stopped whole if the run stops
    for i in 0 1; do
        ( set -o pipefail
          labtools vm --cpus 1 --env LABTOOLS_QUICK --timeout 2400 -- "$py" -m pytest -v -p no:cacheprovider \
              --durations=0 -m network --junitxml="results/junit/6-notebooks-$i.xml" \
              "${other_files[@]}" -k "${halves[$i]}" "$@" 2>&1 \
              | sed -u "s/^/[notebooks, half $((i + 1))] /" ) &
        half_pids+=($!)
    done
    set +m
    status=0
    for pid in "${half_pids[@]}"; do wait "$pid" || status=$?; done
    half_pids=()
    [ "$status" = 0 ] || exit "$status"
fi
unset LABTOOLS_QUICK
stage_end

stage_start "nothing left behind (labtools clean --dry-run as before the run)"
$py tests/support/leftover_check.py after results/leftovers-before.json
stage_end
