#!/usr/bin/env bash
# Data-parallel training on this machine, every sharding at 1, 2 and 4 ranks,
# against two references measured in the same script
# (docs/DISTRIBUTED_BENCHMARKS.md):
#  - speed: the same fine-tune in one process (tokens/s of the whole job,
#    median over the steps after the first SKIP);
#  - communication and memory: the planner's figures for the same
#    configuration (planner_comm_reference: bytes sent per GPU per step by
#    docs/PLANNER.md's ring formulas, and its per-GPU model-state bytes),
#    against the `comm_bytes` and `state_bytes` the ranks' step events report.
# Every run is the real CLI: `tunebench-cli launch RUN.yaml --nproc N`. No
# figure passes or fails; the script fails only when a run fails.
#
#   bench_data_parallel.sh [--steps N] [--skip N] [--micro-batch N] [--worlds "1 2 4"]
#                          [--shardings "ddp zero1 ..."] [--keep DIR]
#
# The build configures this file with the paths below (CMake configure_file);
# TB_CLI, TB_HELPER, TB_DEMO_MODEL_DIR and TB_TEST_DATASETS_DIR in the environment override them.
set -euo pipefail

cli="${TB_CLI:-@TB_CLI@}"
helper="${TB_HELPER:-@TB_HELPER@}"
model="${TB_DEMO_MODEL_DIR:-@TB_DEMO_MODEL_DIR@}"
datasets="${TB_TEST_DATASETS_DIR:-@TB_TEST_DATASETS_DIR@}"
case "$cli$helper$model$datasets" in
*@TB_*) echo "run the configured copy in the build folder (tests/benchmarks/train/), or set TB_CLI, TB_HELPER, TB_DEMO_MODEL_DIR and TB_TEST_DATASETS_DIR" >&2
    exit 2 ;;
esac

steps=12
skip=2
micro_batch=4
seq_len=256
worlds="1 2 4"
shardings="ddp zero1 zero2 zero3 fsdp-full fsdp-grad-op fsdp-hybrid"
keep=""
while [ $# -gt 0 ]; do
    case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --skip) skip="$2"; shift 2 ;;
    --micro-batch) micro_batch="$2"; shift 2 ;;
    --worlds) worlds="$2"; shift 2 ;;
    --shardings) shardings="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

text="$datasets/tinystories/tinystories_val_first800.txt"
if [ ! -f "$model/model.safetensors" ] || [ ! -f "$text" ]; then
    echo "test data absent: $model, $text" >&2
    exit 2
fi

if [ -n "$keep" ]; then
    root="$keep"
    mkdir -p "$root"
else
    root="$(mktemp -d "${TMPDIR:-/tmp}/bench_data_parallel.XXXXXX")"
    trap 'rm -rf "$root"' EXIT
fi

cores="$(nproc)"
echo "bench_data_parallel: stories260K full fine-tune, fp32, AdamW, sequence $seq_len, micro-batch $micro_batch per rank,"
echo "  $steps steps per run, medians over steps $((skip + 1))..$steps; TinyStories text packed into full rows"
echo "  machine: $cores CPU cores ($(uname -m)); OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset} (the launcher gives each rank cores/nproc, at least 1)"
for w in $worlds; do
    if [ "$w" -gt "$cores" ]; then
        echo "  NOTE: $w ranks on $cores cores oversubscribe the CPU: their tokens/s measure time-slicing, not scaling"
    fi
done
echo "  load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

run_one() { # world sharding
    local w="$1" s="$2"
    local dir="$root/w$w-$s"
    rm -rf "$dir"
    mkdir -p "$dir"
    cat >"$root/w$w-$s.yaml" <<EOF
model: $model
method: full
precision: fp32
data:
  train: $text
  format: text
  text_separator: "<|endoftext|>"
  sequence_length: $seq_len
  packing: true
training:
  max_steps: $steps
  micro_batch: $micro_batch
  learning_rate: 1.0e-3
  schedule: constant
  seed: 42
distributed:
  sharding: $s
output:
  dir: $dir
EOF
    local start end
    start=$(date +%s.%N)
    if ! "$cli" launch "$root/w$w-$s.yaml" --nproc "$w" >"$root/w$w-$s.log" 2>&1; then
        echo "run w$w-$s failed; its output:" >&2
        tail -20 "$root/w$w-$s.log" >&2
        exit 1
    fi
    end=$(date +%s.%N)
    printf '  ran %d rank(s) %-13s in %5.1f s\n' "$w" "$s" "$(echo "$end - $start" | bc)"
}

for w in $worlds; do
    if [ "$w" -eq 1 ]; then
        run_one 1 ddp # one process: the sharding has no effect
        continue
    fi
    for s in $shardings; do
        run_one "$w" "$s"
    done
done
echo "  load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

"$helper" table "$root" "$model" "$micro_batch" "$seq_len" "$skip"
cat <<'EOF'

tokens/s: rank 0's figure for the whole job (all ranks' tokens / step time); "vs 1 rank" is its ratio
  to the one-process run. comm: bytes rank 0 sent per step as the trainer counts them (ring: all-reduce
  2(n-1)/n, all-gather / reduce-scatter (n-1)/n of the full buffer); bench_wire_bytes.sh holds them
  against the bytes Gloo really sends. planner: docs/PLANNER.md 5.3 for the same configuration (fp32: 4-byte weights and
  gradients). state: the most any rank held per kind during a step (P parameters, G gradients,
  M separate master weights + master gradients, O AdamW moments), KiB; planner: its per-GPU model
  states (weights + gradients + optimizer, + ZeRO-3's gathered-layer buffer).
EOF
