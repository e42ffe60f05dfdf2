#!/usr/bin/env bash
# Bytes Gloo really puts on the wire per optimizer step, against the bytes
# the trainer counts (the ring formulas the planner uses, docs/PLANNER.md
# 5.3), for the sharded strategies at N ranks (docs/DISTRIBUTED_BENCHMARKS.md).
#
#   bench_wire_bytes.sh [--world N] [--steps K] [--shardings "zero2 zero3 ..."]
#
# Each job runs in a network namespace of its own (unshare --net, root), so
# its loopback counters hold its traffic alone: rendezvous, store, Gloo.
# Every configuration runs twice, K and 2K steps; the difference over K is
# what one step sends, set-up, evaluation and checkpoint cancelling out.
# The reference is the trainer's own count in the same runs: comm_bytes of
# rank 0's step events times the world size (every rank sends the same).
set -euo pipefail

cli="${TB_CLI:-@TB_CLI@}"
model="${TB_DEMO_MODEL_DIR:-@TB_DEMO_MODEL_DIR@}"
datasets="${TB_TEST_DATASETS_DIR:-@TB_TEST_DATASETS_DIR@}"
case "$cli$model$datasets" in
*@TB_*) echo "run the configured copy in the build folder (tests/benchmarks/train/), or set TB_CLI, TB_DEMO_MODEL_DIR and TB_TEST_DATASETS_DIR" >&2
    exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "needs root for unshare --net" >&2; exit 2; }

world=2
steps=4
shardings="ddp zero1 zero2 zero3 fsdp-full"
while [ $# -gt 0 ]; do
    case "$1" in
    --world) world="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --shardings) shardings="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
text="$datasets/tinystories/tinystories_val_first800.txt"
root="$(mktemp -d "${TMPDIR:-/tmp}/bench_wire_bytes.XXXXXX")"
trap 'rm -rf "$root"' EXIT

# Runs one job in a fresh network namespace; prints the loopback bytes sent.
wire_bytes_of_run() { # sharding steps dir
    cat >"$3.yaml" <<YAML
model: $model
method: full
precision: fp32
data: {train: $text, format: text, text_separator: "<|endoftext|>", sequence_length: 128, packing: true}
training: {max_steps: $2, micro_batch: 2, learning_rate: 1.0e-3, schedule: constant, seed: 42, eval_every: 0}
distributed: {sharding: $1}
output: {dir: $3}
YAML
    # /proc/net/dev is the namespace's own (sysfs would still show the host's).
    unshare --net bash -c '
        sent() { sed -n "s/^ *lo: *//p" /proc/net/dev | awk "{ print \$9 }"; }
        ip link set lo up
        before=$(sent)
        "$0" launch "$1" --nproc "$2" >"$3.log" 2>&1 || { tail -20 "$3.log" >&2; exit 1; }
        echo $(( $(sent) - before ))' "$cli" "$3.yaml" "$world" "$3"
}

# Sum of comm_bytes over rank 0's step events.
counted_bytes_of_run() {
    python3 -c 'import json, sys
print(sum(e.get("comm_bytes", 0) for e in map(json.loads, open(sys.argv[1])) if e["type"] == "step"))' "$1/events.jsonl"
}

echo "bench_wire_bytes: stories260K full fp32, $world ranks, micro-batch 2 x 128 tokens, Gloo over loopback"
echo "  (LibTorch $("$cli" --version | awk '/trainer/ { print $2 }')); per step from runs of $steps and $((2 * steps)) steps"
printf '%-13s %16s %16s %10s\n' sharding "wire B/step" "counted B/step" "wire/count"
for sharding in $shardings; do
    short=$(wire_bytes_of_run "$sharding" "$steps" "$root/$sharding-a")
    long=$(wire_bytes_of_run "$sharding" "$((2 * steps))" "$root/$sharding-b")
    counted_short=$(counted_bytes_of_run "$root/$sharding-a")
    counted_long=$(counted_bytes_of_run "$root/$sharding-b")
    wire=$(((long - short) / steps))
    counted=$(((counted_long - counted_short) * world / steps))
    printf '%-13s %16d %16d %10s\n' "$sharding" "$wire" "$counted" \
        "$(awk -v w="$wire" -v c="$counted" 'BEGIN { printf "%.3f", c ? w / c : 0 }')"
done
echo
echo "wire: loopback bytes of the whole job per step (TCP/IP headers included); counted: rank 0's"
echo "comm_bytes x $world. Before LibTorch 2.x, Gloo emulated reduce-scatter with a full all-reduce."
