#!/usr/bin/env bash
# Runs every libFuzzer target of the `fuzz` preset for N inputs each, one at a
# time, and prints the executions per target and in total.
#
#   tests/fuzz/run_fuzzers.sh N [target...]
#
# Build first: cmake --preset fuzz && cmake --build --preset fuzz
# TB_FUZZ_BUILD names another build folder (default build/fuzz);
# TB_FUZZ_SECONDS caps each target's time (libFuzzer's -max_total_time), for
# a machine too busy to reach N in the time there is. Each target's
# working corpus grows in <build>/corpus/<target>, seeded from
# tests/fuzz/corpus/<target> and the test data its CMake line names. A crash,
# leak, sanitizer report, timeout or broken reader contract leaves the input in
# <build>/artifacts/<target>/; the script goes on with the next target and
# exits 1 at the end. Copy such an input into tests/fuzz/corpus/<target>/ and
# into the reader's unit test once fixed.
set -euo pipefail

if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
    echo "usage: tests/fuzz/run_fuzzers.sh N [target...]  (N: inputs per target)" >&2
    exit 2
fi
runs="$1"
shift
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${TB_FUZZ_BUILD:-$root/build/fuzz}"
manifest="$build/fuzzers.txt"
if [ ! -f "$manifest" ]; then
    echo "$manifest: not found; build the fuzz preset first (cmake --preset fuzz && cmake --build --preset fuzz)" >&2
    exit 2
fi

# Seed files and folders flattened into one folder: libFuzzer reads folders
# only (a file argument makes it run that input alone).
collect_seeds() {
    local into="$1" seeds="$2" seed
    rm -rf "$into"
    mkdir -p "$into"
    IFS=';' read -r -a list <<<"$seeds"
    for seed in "${list[@]}"; do
        if [ -d "$seed" ]; then
            find "$seed" -maxdepth 1 -type f -exec cp -t "$into" {} +
        elif [ -f "$seed" ]; then
            cp "$seed" "$into/$(basename "$(dirname "$seed")")-$(basename "$seed")"
        fi
    done
}

total=0
failed=()
printf '%-20s %14s %9s %10s  %s\n' target executions seconds exec/s result
while IFS=$'\t' read -r name binary seeds max_len; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    if [ $# -gt 0 ] && [[ ! " $* " =~ " $name " ]]; then
        continue
    fi
    if [ ! -x "$binary" ]; then
        echo "$binary: not built (cmake --build --preset fuzz)" >&2
        exit 2
    fi
    corpus="$build/corpus/$name"
    artifacts="$build/artifacts/$name"
    log="$build/logs/$name.log"
    mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
    collect_seeds "$build/seeds/$name" "$seeds"
    start=$EPOCHREALTIME
    # -timeout: a single input taking 10 s is a hang. -rss_limit_mb bounds
    # what one input may allocate. Leaks are findings (ASan's LeakSanitizer).
    status=0
    # -max_len where the target's CMake line gives one (1 MiB for the JSON
    # readers: deep nesting and long strings need room).
    length=()
    [ -n "${max_len:-}" ] && length=(-max_len="$max_len")
    nice -n 10 "$binary" -runs="$runs" -max_total_time="${TB_FUZZ_SECONDS:-0}" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" "${length[@]}" \
        "$corpus" "$build/seeds/$name" >"$log" 2>&1 || status=$?
    seconds=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }')
    executions=$(awk '/stat::number_of_executed_units:/ { print $2 }' "$log" | tail -1)
    executions=${executions:-0}
    total=$((total + executions))
    result=ok
    if [ "$status" -ne 0 ]; then
        result="FAILED (exit $status): $(ls -t "$artifacts" | head -1), see $log"
        failed+=("$name")
    fi
    printf '%-20s %14d %9.1f %10.0f  %s\n' "$name" "$executions" "$seconds" \
        "$(awk -v n="$executions" -v s="$seconds" 'BEGIN { print n / (s + 0.001) }')" "$result"
done <"$manifest"
printf '%-20s %14d\n' total "$total"
if [ ${#failed[@]} -gt 0 ]; then
    echo "crashed: ${failed[*]}" >&2
    exit 1
fi
