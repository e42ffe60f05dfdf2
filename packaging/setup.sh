#!/usr/bin/env bash
# Tunebench from a fresh Debian 12 machine, in one command.
#
#   packaging/setup.sh run    install what is missing, build, open the GUI on
#                             the default plan (with no display: print that
#                             plan from the CLI instead)
#   packaging/setup.sh test   install what is missing, build, run clang-tidy
#                             over core/, make the Debian package, run every
#                             test suite, the AddressSanitizer
#                             and ThreadSanitizer builds and a short libFuzzer
#                             run, and compile the CUDA configuration of the
#                             trainer; prints each stage's time
#   packaging/setup.sh build  install what is missing and build
#
# The trainer builds against LibTorch from the PyTorch wheel, in a virtual
# environment under .venv/ (packaging/torch-versions.txt): the CPU wheel,
# or the CUDA wheel where nvidia-smi finds a GPU or TUNEBENCH_TORCH=cuda.
#
# Idempotent: packages already installed are skipped, a virtual environment
# is reinstalled only when its requirements changed, CMake and ccache
# rebuild only what changed. Run as root or as a user with sudo.
set -euo pipefail

mode="${1:-run}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { printf '\033[1m== %s\033[0m\n' "$*"; }

# Names of the installed packages and of what they provide: NodeSource's
# nodejs provides npm (and conflicts with Debian's npm package), so a
# provided name counts as present.
installed_names() {
    dpkg-query -W -f='${db:Status-Abbrev} ${Package}, ${Provides}\n' 2>/dev/null |
        awk '$1 == "ii" { $1 = ""; print }' | tr ',' '\n' |
        sed -e 's/([^)]*)//g' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^$/d' | sort -u
}

install_missing_packages() {
    local wanted have missing=()
    wanted=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' packaging/debian-packages.txt)
    have=$(installed_names)
    for pkg in $wanted; do
        if ! grep -qxF "$pkg" <<<"$have"; then
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

torch_version() {
    awk -v flavour="$1" '$1 == flavour { print $2 }' packaging/torch-versions.txt
}

# cpu or cuda: TUNEBENCH_TORCH when set, else cuda where nvidia-smi sees a GPU.
torch_flavour() {
    case "${TUNEBENCH_TORCH:-auto}" in
    cpu | cuda) echo "$TUNEBENCH_TORCH" ;;
    auto) if nvidia-smi -L >/dev/null 2>&1; then echo cuda; else echo cpu; fi ;;
    *)
        echo "TUNEBENCH_TORCH=$TUNEBENCH_TORCH: expected cpu, cuda or auto" >&2
        exit 2
        ;;
    esac
}

# The requirements in the files given, comments dropped, on one line.
requirements_of() {
    sed -e 's/#.*//' "$@" | tr -s '[:space:]' ' '
}

# A stamp of what was asked for keeps a second call from asking pip or npm
# again: true when folder $1 was last given exactly $2.
already_installed() {
    [ -f "$1/.tunebench-requirements" ] && [ "$(cat "$1/.tunebench-requirements")" = "$2" ]
}

# PyPI's torch for Linux is PyTorch's CUDA build, with gigabytes of NVIDIA's
# libraries. The CPU flavour asks PyTorch's own CPU index too where this
# machine reaches it: pip prefers its 2.x.y+cpu to PyPI's 2.x.y.
torch_index_args() {
    local index="https://download.pytorch.org/whl/cpu"
    [ "$1" = cpu ] || return 0
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' \
        "$index/torch/" >/dev/null 2>&1; then
        echo "--extra-index-url $index"
    fi
}

# Whether the torch in virtual environment $1 is PyTorch's CUDA build.
wheel_is_cuda() {
    compgen -G "$1/lib/python3*/site-packages/torch/lib/libtorch_cuda.so" >/dev/null
}

# .venv/<flavour> with torch and the requirement files given.
python_env() {
    local flavour="$1" venv=".venv/$1"
    shift
    local version wanted
    version=$(torch_version "$flavour")
    wanted="torch==$version"
    if [ $# -gt 0 ]; then
        wanted="$wanted $(requirements_of "$@")"
    fi
    [ "$flavour" = cpu ] && wanted="$wanted, bytecode compiled"
    if already_installed "$venv" "$wanted"; then
        return
    fi
    log "python environment $venv: torch $version ($flavour) $(echo "$@")"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    local requirements=("torch==$version") pip=("$venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check)
    for file in "$@"; do requirements+=(-r "$file"); done
    # shellcheck disable=SC2046 # no index, or the option and its URL
    "${pip[@]}" $(torch_index_args "$flavour") "${requirements[@]}"
    # Where pip served the CUDA build anyway, its CMake config needs the
    # toolkit; the trainer built on it trains on the CPU all the same.
    if [ "$flavour" = cpu ] && wheel_is_cuda "$venv"; then
        log "$venv holds PyTorch's CUDA build: adding NVIDIA's toolkit wheels it builds with"
        "${pip[@]}" -r packaging/python-cuda-toolkit.txt
    fi
    # The tests start Python dozens of times. pip was told not to compile
    # (its install is faster), and where PYTHONDONTWRITEBYTECODE is set, as
    # on some CI machines, every start compiled torch and transformers from
    # source again: ~20 s each. Files named for a newer Python than the
    # venv's (torch's py312_*.py) do not compile and are not imported.
    if [ "$flavour" = cpu ]; then
        "$venv/bin/python" -m compileall -q -j 0 -x '/py3[1-9][0-9]_[^/]*[.]py$' "$venv/lib" >/dev/null
    fi
    echo "$wanted" >"$venv/.tunebench-requirements"
}

# .venv/node with the npm packages test_tokenizer_hf compares against
# (packaging/node-reference.txt), so that no test downloads anything.
node_env() {
    local dir=".venv/node" wanted
    wanted=$(requirements_of packaging/node-reference.txt)
    if already_installed "$dir" "$wanted"; then
        return
    fi
    log "node packages in $dir: $wanted"
    mkdir -p "$dir"
    # shellcheck disable=SC2086 # one argument per package
    npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error $wanted
    echo "$wanted" >"$dir/.tunebench-requirements"
}

# Five presets' objects (default, asan, tsan, fuzz, headless-cuda) outgrow
# ccache's 5 GB default, and an evicted LibTorch translation unit costs ~20 s.
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-15G}"

# The targets build() builds; empty: every target of the preset.
build_targets=()

build() {
    local preset="$1"
    shift
    log "configure and build: preset '$preset'${build_targets[*]:+ (${build_targets[*]})}"
    cmake --preset "$preset" "$@" >/dev/null
    cmake --build --preset "$preset" ${build_targets[@]:+--target "${build_targets[@]}"}
}

# The GUI needs an X server it can reach; xdpyinfo is not installed on a
# fresh machine, so ask the GUI's own platform plugin instead.
have_display() {
    [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]
}

# The oldest NVIDIA driver each CUDA major version runs on, minor versions
# included (NVIDIA's CUDA Toolkit release notes, "Minimum Required Driver
# Version for CUDA Minor Version Compatibility", Linux).
minimum_driver_for_cuda() {
    case "$1" in
    12.*) echo 525.60.13 ;;
    13.*) echo 580.65.06 ;;
    esac
}

# Stops, naming both versions, where the GPU's driver is older than the CUDA
# build of torch in $1 needs: the trainer would fail at its first CUDA call.
check_gpu_driver() {
    local venv="$1" driver cuda needed
    # No nvidia-smi, or no torch: nothing to check (and no exit under set -e).
    driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1) || true
    [ -n "$driver" ] || return 0
    cuda=$("$venv/bin/python" -c 'import torch; print(torch.version.cuda or "")' 2>/dev/null) || true
    needed=$(minimum_driver_for_cuda "$cuda")
    [ -n "$needed" ] || return 0
    if [ "$(printf '%s\n%s\n' "$needed" "$driver" | sort -V | head -n 1)" != "$needed" ]; then
        echo "NVIDIA driver $driver is older than $needed, which PyTorch's CUDA $cuda build in $venv" \
            "needs: update the driver, or build for the CPU with TUNEBENCH_TORCH=cpu" >&2
        exit 2
    fi
    log "NVIDIA driver $driver runs PyTorch's CUDA $cuda build ($needed or newer needed)"
}

python_env_for_build() {
    local flavour="$1"
    if [ "$flavour" = cuda ]; then
        python_env cuda packaging/python-cuda-toolkit.txt
        check_gpu_driver .venv/cuda
    else
        python_env cpu
    fi
}

build_default() {
    local flavour
    flavour=$(torch_flavour)
    python_env_for_build "$flavour"
    build default -DTUNEBENCH_TORCH_FLAVOUR="$flavour" -DTUNEBENCH_TORCH_VENV="$root/.venv/$flavour"
}

# The main job builds only what it runs: the GUI, the CLI and the trainer
# the CLI starts (about half the preset's targets are tests and
# benchmarks); the test command builds the rest in the same folder. The
# GUI and the CLI link no LibTorch, so they are built first and the default
# plan is printed before the trainer's slow translation units start.
run_main_job() {
    local flavour
    flavour=$(torch_flavour)
    timed "python environment ($flavour)" python_env_for_build "$flavour"
    local configure=(-DTUNEBENCH_TORCH_FLAVOUR="$flavour" -DTUNEBENCH_TORCH_VENV="$root/.venv/$flavour")
    build_targets=(tunebench tunebench-cli)
    timed "build: the planner (the GUI and the CLI)" build default "${configure[@]}"
    log "the default plan, from the CLI (the trainer builds next)"
    build/default/app/cli/tunebench-cli plan
    stage_times+=("$(printf '%-44s %4d s' "(the default plan printed, since the start)" $SECONDS)")
    build_targets=(tunebench-trainer)
    timed "build: the trainer" build default "${configure[@]}"
    trap - EXIT
    print_stage_times
    if have_display; then
        log "opening Tunebench on the default plan"
        exec build/default/app/gui/tunebench
    fi
    log "no display: the default plan is printed above; tunebench-cli train runs the trainer"
}

# Runs "$@" as one stage of the test run and remembers how long it took.
stage_times=()
stage_name=""
stage_start=0
timed() {
    stage_name="$1"
    stage_start=$SECONDS
    shift
    "$@"
    stage_times+=("$(printf '%-44s %4d s' "$stage_name" $((SECONDS - stage_start)))")
    stage_name=""
}

# An EXIT trap, so a run that failed still says where its time went.
print_stage_times() {
    [ -n "$stage_name" ] &&
        stage_times+=("$(printf '%-44s %4d s  (failed)' "$stage_name" $((SECONDS - stage_start)))")
    log "time per stage"
    printf '  %s\n' "${stage_times[@]}"
}

# Every C++ file as .clang-format lays it out, by Debian 12's clang-format 14
# (other versions break some lines elsewhere); the diff of the first few that
# are not says what to change, and clang-format -i FILE fixes them.
check_format() {
    local report files
    report=$(git ls-files -z '*.cpp' '*.h' |
        xargs -0 -P "$(nproc)" -n 64 clang-format --dry-run -Werror 2>&1 >/dev/null) && return
    files=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$report" | sort -u)
    for file in $(head -3 <<<"$files"); do
        clang-format "$file" | diff -u "$file" - | head -20
    done
    echo "$(wc -l <<<"$files") file(s) not laid out as .clang-format says:" $(head -20 <<<"$files") >&2
    echo "fix with: clang-format -i FILE..." >&2
    return 1
}

run_tests() {
    timed "clang-format" check_format
    # Tests train on the CPU and hold the trainer against the Hugging Face
    # stack installed beside the CPU wheel, and the tokenizer against HF's
    # tokenizers through node: everything a test uses is here before it runs.
    timed "python environment (cpu)" python_env cpu packaging/python-reference.txt
    timed "node environment" node_env
    timed "build: default" build default -DTUNEBENCH_TORCH_FLAVOUR=cpu \
        -DTUNEBENCH_TORCH_VENV="$root/.venv/cpu"
    log "clang-tidy (.clang-tidy's checks) over core/"
    timed "clang-tidy: core/" python3 packaging/clang_tidy.py --build build/default
    # The Debian package; test_deb_package installs it into a clean root.
    log "Debian package (cpack -G DEB)"
    timed "cpack -G DEB" bash -c 'cd build/default && cpack -G DEB >/dev/null && ls -l tunebench_*.deb'
    log "every test suite (GUI tests under Xvfb)"
    local jobs
    jobs=$(nproc)
    timed "ctest: default" xvfb-run -a -s "-screen 0 1600x1000x24" ctest --preset default -j "$jobs"
    timed "build: asan" build asan -DTUNEBENCH_TORCH_VENV="$root/.venv/cpu"
    log "AddressSanitizer + UndefinedBehaviorSanitizer over the core, the trainer, SSH and the GUI"
    timed "ctest: asan" xvfb-run -a -s "-screen 0 1600x1000x24" ctest --preset asan -j "$jobs"
    timed "build: tsan" build tsan
    log "ThreadSanitizer over the suites with threads of their own"
    timed "ctest: tsan" ctest --preset tsan -j "$jobs"
    # A short libFuzzer run: the seeds and a few thousand mutations per reader
    # (long runs: tests/fuzz/run_fuzzers.sh N by hand, docs/FUZZING.md).
    timed "build: fuzz" build fuzz
    log "libFuzzer: 2,000 inputs per reader of outside input"
    timed "fuzz: 2,000 inputs per target" tests/fuzz/run_fuzzers.sh 2000
    # No GPU here: every CUDA and NCCL line is compiled and linked, not run.
    timed "python environment (cuda)" python_env cuda packaging/python-cuda-toolkit.txt
    timed "build: headless-cuda" build headless-cuda -DTUNEBENCH_TORCH_VENV="$root/.venv/cuda"
}

case "$mode" in
run)
    trap print_stage_times EXIT
    timed "Debian packages" install_missing_packages
    run_main_job
    ;;
test)
    trap print_stage_times EXIT
    timed "Debian packages" install_missing_packages
    run_tests
    ;;
build)
    install_missing_packages
    build_default
    ;;
*)
    echo "usage: packaging/setup.sh run|test|build" >&2
    exit 2
    ;;
esac
