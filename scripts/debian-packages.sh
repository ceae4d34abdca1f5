# Sourced by scripts/image.sh and scripts/hub.sh (as root): install_debian_packages PKG...
# installs Debian's packages given (nothing when none is given), waiting for another apt
# to finish rather than failing. Needs the sourcing script's `say`.
install_debian_packages() {
    [ $# -gt 0 ] || return 0
    say "installing $* (Debian's packages)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout=600
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "$@" >/dev/null
}
