#!/usr/bin/env bash
# How long the CLI takes to start, with and without loading LibTorch.
#
#   tests/benchmarks/cli/bench_cli_startup.sh [BUILD_DIR] [RUNS]
#
# tunebench-cli never links LibTorch (train, eval and generate exec
# tunebench-trainer), so `tunebench-cli --help`, `plan` and `export` should
# start as fast as a build without the trainer. The reference, in the same
# script: tunebench-trainer printing its usage, which loads LibTorch and
# does nothing else. Prints the median of RUNS runs of each and the ratio.
set -euo pipefail
build="${1:-build/default}"
runs="${2:-20}"
cli="$build/app/cli/tunebench-cli"
trainer="$build/app/cli/tunebench-trainer"
for program in "$cli" "$trainer"; do
    [ -x "$program" ] || { echo "no $program: build the default preset first" >&2; exit 2; }
done

# Median wall time in milliseconds of RUNS runs of the command.
median_ms() {
    local times=()
    for _ in $(seq "$runs"); do
        local start end
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        end=$(date +%s%N)
        times+=($(((end - start) / 1000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] / 1000 }'
}

help_ms=$(median_ms "$cli" --help)
plan_ms=$(median_ms "$cli" plan)
trainer_ms=$(median_ms "$trainer")
printf '%-46s %9s\n' "command (median of $runs runs)" "ms"
printf '%-46s %9s\n' "tunebench-cli --help" "$help_ms"
printf '%-46s %9s\n' "tunebench-cli plan (default plan)" "$plan_ms"
printf '%-46s %9s\n' "tunebench-trainer (loads LibTorch; reference)" "$trainer_ms"
awk -v a="$help_ms" -v b="$trainer_ms" 'BEGIN { printf "tunebench-cli --help / LibTorch load: %.3fx\n", a / b }'
