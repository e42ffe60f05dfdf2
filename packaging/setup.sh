#!/usr/bin/env bash
# Tunebench from a fresh Debian 12 machine, in one command.
#
#   packaging/setup.sh run    install what is missing, build, open the GUI on
#                             the default plan (with no display: print that
#                             plan from the CLI instead)
#   packaging/setup.sh test   install what is missing, build, run every test
#                             suite and the sanitizer build of the core
#
# Idempotent: packages already installed are skipped, CMake and ccache
# rebuild only what changed. Run as root or as a user with sudo.
set -euo pipefail

mode="${1:-run}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { printf '\033[1m== %s\033[0m\n' "$*"; }

install_missing_packages() {
    local wanted missing=()
    wanted=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' packaging/debian-packages.txt)
    for pkg in $wanted; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$pkg")
        fi
    done
    if [ ${#missing[@]} -eq 0 ]; then
        log "all $(echo "$wanted" | wc -w) Debian packages present"
        return
    fi
    log "installing ${#missing[@]} Debian packages: ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

build() {
    local preset="$1"
    log "configure and build: preset '$preset'"
    if [ ! -f "build/$preset/build.ninja" ]; then
        cmake --preset "$preset" >/dev/null
    fi
    cmake --build --preset "$preset"
}

# The GUI needs an X server it can reach; xdpyinfo is not installed on a
# fresh machine, so ask the GUI's own platform plugin instead.
have_display() {
    [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]
}

run_main_job() {
    build default
    if have_display; then
        log "opening Tunebench on the default plan"
        exec build/default/app/gui/tunebench
    fi
    log "no display: printing the default plan from the CLI"
    exec build/default/app/cli/tunebench-cli plan
}

run_tests() {
    build default
    log "every test suite (GUI tests under Xvfb)"
    local jobs
    jobs=$(nproc)
    xvfb-run -a -s "-screen 0 1600x1000x24" ctest --preset default -j "$jobs"
    build asan
    log "AddressSanitizer + UndefinedBehaviorSanitizer over the Qt-free core"
    ctest --preset asan -j "$jobs"
}

case "$mode" in
run)
    install_missing_packages
    run_main_job
    ;;
test)
    install_missing_packages
    run_tests
    ;;
*)
    echo "usage: packaging/setup.sh run|test" >&2
    exit 2
    ;;
esac
