#!/usr/bin/env bash
# The kit's one setup script: Debian/Ubuntu packages, a venv from the system Python
# (with system site packages, so Debian's mininet is visible) and the kit installed in it.
# Used by `make test`, `make lab`, `.ci/run` and the Vagrant provisioning.
# Idempotent: a second run checks, changes nothing and takes seconds.
#
# As root it installs the packages, loads sch_netem (and at every boot) and says whether
# ordinary users may run labs (unprivileged user namespaces). As an ordinary user (labs need
# no root) it only checks that the packages are there and makes the venv in this checkout.
#
#   bash scripts/setup.sh              # packages + venv + kit (with the development tools)
#   bash scripts/setup.sh --service    # the lab VM: the kit for students, JupyterLab as a
#                                      # systemd service (what `vagrant up` runs)
#   bash scripts/setup.sh --test       # also what `make test` needs: headless Chromium and
#                                      # its driver, debootstrap (fresh systems to boot)
#   bash scripts/setup.sh --dev        # only the venv and the kit with its development tools
#                                      # (`make unit`, `make lint` on a contributor's machine,
#                                      # any system, any user: no system package is checked
#                                      # or installed; tests that need one, or root, skip)
#   LABTOOLS_VENV=/opt/lab bash scripts/setup.sh
set -euo pipefail
service=no
testing=no
dev_only=no
for arg in "$@"; do
    case "$arg" in
        --service) service=yes ;;
        --test) testing=yes ;;
        --dev) dev_only=yes ;;
        *) echo "[setup] unknown option $arg (use --service, --test or --dev)" >&2; exit 2 ;;
    esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="$PATH:/usr/sbin:/sbin"  # ip, tc, modprobe (an ordinary user's PATH lacks them)
venv=${LABTOOLS_VENV:-$here/.venv}
# what it does, after how many seconds of setup (a first provisioning takes minutes)
say() { printf '[setup +%ds] %s\n' "$SECONDS" "$*"; }

as_root=yes
if [ "$(id -u)" != 0 ]; then
    as_root=no
    if [ "$service" = yes ]; then
        echo "[setup] --service installs a system service: run as root" >&2
        exit 1
    fi
fi

if [ "$dev_only" = no ]; then  # --dev: no system packages, no system settings
# --- Debian / Ubuntu packages -----------------------------------------------------------
# install_missing PACKAGE...: apt-get install what is not installed yet (quietly)
updated=no
install_missing() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$as_root" = no ]; then
        echo "[setup] missing package(s): ${missing[*]}; an administrator installs them once:" \
             "sudo bash scripts/setup.sh (the labs themselves need no root)" >&2
        exit 1
    fi
    say "installing ${#missing[@]} package(s): ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if [ "$updated" = no ]; then apt-get update -qq; updated=yes; fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    say "packages installed"
}

. /etc/os-release
case " ${ID:-} ${ID_LIKE:-} " in
    *" debian "*|*" ubuntu "*) ;;
    *) echo "[setup] ${PRETTY_NAME:-this system} is not Debian or Ubuntu: install the packages" \
            "by hand (see docs/students.md, Setting up)" >&2; exit 1 ;;
esac
installed_before=$(dpkg-query -W -f='${Package}\n' 2>/dev/null | wc -l)
install_missing python3 python3-venv python3-pip python3-dev \
    mininet iperf iperf3 iputils-ping bridge-utils iproute2 procps psmisc util-linux kmod \
    openvswitch-switch openvswitch-testcontroller
# Mininet starts its own OpenFlow controller on port 6653 for each network; the package's
# own controller service would hold that port ("Please shut down the controller which is
# running on port 6653") and listen on every address. Only the program is needed.
# (A SysV script: `systemctl disable --now` disables it but leaves it running.)
if [ "$as_root" = yes ] && [ -d /run/systemd/system ] && \
        systemctl is-enabled --quiet openvswitch-testcontroller 2>/dev/null; then
    say "disabling the package's standing OpenFlow controller (Mininet starts its own)"
    systemctl disable --quiet openvswitch-testcontroller 2>/dev/null || true
    systemctl stop openvswitch-testcontroller 2>/dev/null || true
fi
controller_pid=/var/run/openvswitch/ovs-testcontroller.pid  # the package's daemon only
if [ "$as_root" = yes ] && [ -f "$controller_pid" ] && \
        start-stop-daemon --status --pidfile "$controller_pid" --exec /usr/bin/ovs-testcontroller; then
    say "stopping the package's standing OpenFlow controller (port 6653)"
    start-stop-daemon --stop --quiet --retry 5 --pidfile "$controller_pid" \
        --exec /usr/bin/ovs-testcontroller || true
fi
# `make test`: the browser test drives Debian's/Ubuntu's Chromium; the provisioning test
# boots a fresh system made by debootstrap (packed with mkfs.ext4 from e2fsprogs).
if [ "$testing" = yes ]; then
    if [ "${ID:-}" = ubuntu ]; then
        say "Ubuntu ships Chromium as a snap: the browser test needs Debian's chromium"
        install_missing debootstrap e2fsprogs
    else
        install_missing chromium chromium-driver debootstrap e2fsprogs
    fi
fi

# A lab's network lives in a user namespace of the user who starts it (no root): say when
# this machine does not let ordinary users make one (labtools doctor says what to change).
probe='ip link add lt0 type bridge && ip link add lt1 type veth peer name lt2 && tc qdisc add dev lt1 root handle 5: htb default 1'
as_user=()
[ "$as_root" = yes ] && as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
if ! "${as_user[@]}" unshare --user --map-root-user --net -- sh -c "$probe" 2>/dev/null; then
    say "WARNING: ordinary users cannot give a lab a user namespace here: see labtools doctor"
fi

# netem: a user namespace cannot run modprobe, so root loads sch_netem, and at every boot.
# The VM runner, only where this kernel cannot emulate delay (no sch_netem): QEMU and a
# stock kernel of the distribution (Debian: linux-image-ARCH; Ubuntu: linux-image-generic).
netem_probe=(unshare --net --)
if [ "$as_root" = yes ]; then
    modprobe -q sch_netem 2>/dev/null || true
else
    netem_probe=(unshare --user --map-root-user --net --)
fi
if "${netem_probe[@]}" tc qdisc add dev lo root netem delay 1ms 2>/dev/null; then
    say "this kernel emulates delay (netem): no VM runner needed"
    if [ "$as_root" = yes ] && [ -d /sys/module/sch_netem ] && [ -d /etc/modules-load.d ] \
            && ! grep -qsx sch_netem /etc/modules-load.d/labtools.conf; then
        echo sch_netem > /etc/modules-load.d/labtools.conf
        say "sch_netem is loaded at every boot (/etc/modules-load.d/labtools.conf)"
    fi
else
    arch=$(dpkg --print-architecture)
    kernel=linux-image-$arch
    [ "${ID:-}" = ubuntu ] && kernel=linux-image-generic
    case "$arch" in
        amd64) install_missing qemu-system-x86 busybox-static "$kernel" ;;
        arm64) install_missing qemu-system-arm busybox-static "$kernel" ;;
        *) say "no VM runner for $arch: use a kernel with netem" ;;
    esac
fi
if [ "$(dpkg-query -W -f='${Package}\n' 2>/dev/null | wc -l)" = "$installed_before" ]; then
    say "system packages: all present"
fi

else
    say "--dev: no system package checked or installed (tests that need one skip, saying why)"
fi

# --- the venv and the kit ---------------------------------------------------------------
if [ ! -x "$venv/bin/python" ]; then
    say "creating venv $venv (system Python, system site packages)"
    base_python=/usr/bin/python3
    [ -x "$base_python" ] || base_python=$(command -v python3)  # --dev elsewhere
    "$base_python" -m venv --system-site-packages "$venv"
fi
# The lab VM gets what students use; elsewhere the development tools too (tests, nbgrader).
extras=lab,dev
[ "$service" = yes ] && [ "$testing" = no ] && extras=lab
# the student edition (labtools bundle --students): what students use, nothing else
[ -f "$here/labtools/EDITION" ] && extras=lab
stamp="$venv/.labtools-installed"
want="$(sha256sum < "$here/pyproject.toml" | cut -d' ' -f1) $extras"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "installing the kit and its Python dependencies ($extras) into $venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    say "pip: up to date"
    "$venv/bin/python" -m pip install -q -e "$here[$extras]"
    echo "$want" > "$stamp"
    say "kit installed"
else
    say "kit: already installed in $venv"
fi
# rfc3987-syntax (pulled in by jsonschema's format-nongpl extra, for jupyter-events) builds a
# Lark grammar whenever jsonschema is imported: 1.6 s of CPU on this machine at every start
# of JupyterLab and of every nbgrader command, 36 s in the lab VM under software emulation
# (a third of `make lab`'s wait). It only checks the syntax of "iri" strings in Jupyter's
# event schemas; without it jsonschema skips that one check, nothing else changes.
if "$venv/bin/python" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("rfc3987_syntax") is None)'; then
    say "removing rfc3987-syntax from $venv (its grammar costs every Jupyter start; see setup.sh)"
    "$venv/bin/python" -m pip uninstall -q -y rfc3987-syntax
fi
if [ "$dev_only" = yes ]; then
    "$venv/bin/python" -c "import labtools" \
        || { echo "[setup] the venv cannot import labtools" >&2; exit 1; }
else
    "$venv/bin/python" -c "import labtools, mininet.net" \
        || { echo "[setup] the venv cannot import labtools and mininet" >&2; exit 1; }
fi

# --- what a student meets on first opening the lab ------------------------------------------
# No "get notified about Jupyter news?" pop-up and no update check (the lab is offline).
overrides="$venv/share/jupyter/lab/settings/overrides.json"
want_overrides='{
  "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}
}'
if [ "$(cat "$overrides" 2>/dev/null)" != "$want_overrides" ]; then
    mkdir -p "$(dirname "$overrides")"
    printf '%s\n' "$want_overrides" > "$overrides"
    say "JupyterLab: no news pop-up, no update check"
fi
# Matplotlib's font cache, built once here rather than in red under a student's first plot.
export MPLCONFIGDIR="$here/.cache/matplotlib"
if ! ls "$MPLCONFIGDIR"/fontlist-*.json >/dev/null 2>&1; then
    mkdir -p "$MPLCONFIGDIR"
    "$venv/bin/python" -c "import matplotlib.font_manager" 2>/dev/null
    say "matplotlib: font cache built in $MPLCONFIGDIR"
fi
say "ready: $venv/bin/labtools"

[ "$service" = yes ] && bash "$here/scripts/lab-service.sh" "$venv"
exit 0
