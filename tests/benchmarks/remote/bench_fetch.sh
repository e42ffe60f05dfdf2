#!/usr/bin/env bash
# Throughput of `tunebench-cli fetch` against scp for one large file over
# SSH on this machine, optionally with a round-trip delay.
#
#   tests/benchmarks/remote/bench_fetch.sh [BUILD_DIR] [MIB] [DELAY_MS]
#
# An sshd of its own (its own host and user keys) serves a folder holding
# RUN/adapter/weights.bin of MIB MiB (default 512). As root, everything runs
# in a network namespace of its own, where DELAY_MS (default 0) is added to
# each direction of loopback with netem: the rest of the machine's loopback
# is left alone. Prints each copy's time and MB/s, and fetch / scp. fetch's
# time includes what scp does not do: a sha256sum of the file there (before
# the copy) and OpenSSL's here (after it), so the copy alone is estimated
# as fetch's time less those two, timed here on the same file. Figures only: nothing is asserted.
set -euo pipefail
build="$(realpath "${1:-build/default}")"
mib="${2:-512}"
delay_ms="${3:-0}"
cli="$build/app/cli/tunebench-cli"
[ -x "$cli" ] || { echo "no $cli: build tunebench-cli first" >&2; exit 2; }
[ -x /usr/sbin/sshd ] || { echo "no /usr/sbin/sshd (install openssh-server)" >&2; exit 2; }

if [ "$(id -u)" = 0 ] && [ -z "${TB_BENCH_IN_NETNS:-}" ]; then
    exec env TB_BENCH_IN_NETNS=1 unshare --net -- "$0" "$build" "$mib" "$delay_ms"
fi
if [ -n "${TB_BENCH_IN_NETNS:-}" ]; then
    ip link set lo up
    if [ "$delay_ms" != 0 ]; then
        tc qdisc add dev lo root netem delay "${delay_ms}ms" || { echo "netem unavailable here" >&2; exit 2; }
    fi
elif [ "$delay_ms" != 0 ]; then
    echo "a delay needs root (a network namespace of its own)" >&2
    exit 2
fi

work=$(mktemp -d)
sshd_pid=
cleanup() {
    [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/user_key"
cp "$work/user_key.pub" "$work/authorized_keys"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p /run/sshd 2>/dev/null || true
cat > "$work/sshd_config" <<CONFIG
Port $port
ListenAddress 127.0.0.1
HostKey $work/host_key
PidFile $work/sshd.pid
AuthorizedKeysFile $work/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
Subsystem sftp internal-sftp
LogLevel ERROR
CONFIG
/usr/sbin/sshd -D -e -f "$work/sshd_config" & sshd_pid=$!
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$work/host_key.pub")" > "$work/known_hosts"
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done

mkdir -p "$work/run/adapter"
head -c "$((mib * 1024 * 1024))" /dev/urandom > "$work/run/adapter/weights.bin"
user=$(id -un)

# Seconds the command took, to the millisecond; its output is shown only
# when it fails.
seconds() {
    local start end
    start=$(date +%s%N)
    "$@" >"$work/output" 2>&1 || { cat "$work/output" >&2; exit 1; }
    end=$(date +%s%N)
    awk -v ns=$((end - start)) 'BEGIN { printf "%.3f", ns / 1e9 }'
}

fetch_s=$(seconds "$cli" fetch "$work/run" --what adapter --to "$work/fetched" --host "$user@127.0.0.1" \
    --port "$port" --identity "$work/user_key" --known-hosts "$work/known_hosts")
scp_s=$(seconds scp -q -P "$port" -i "$work/user_key" -o "UserKnownHostsFile=$work/known_hosts" \
    -o BatchMode=yes "$user@127.0.0.1:$work/run/adapter/weights.bin" "$work/scp.bin")
# What fetch hashes with: sha256sum there, OpenSSL's SHA-256 here.
there_s=$(seconds sha256sum "$work/run/adapter/weights.bin")
here_s=$(seconds openssl dgst -sha256 "$work/run/adapter/weights.bin")
cmp -s "$work/run/adapter/weights.bin" "$work/fetched/adapter/weights.bin" || { echo "fetch's copy differs" >&2; exit 1; }
cmp -s "$work/run/adapter/weights.bin" "$work/scp.bin" || { echo "scp's copy differs" >&2; exit 1; }

echo "one file of $mib MiB over SSH on loopback, ${delay_ms} ms added each way"
printf '%-44s %9s %9s\n' "copy" "s" "MB/s"
copy_s=$(awk -v f="$fetch_s" -v a="$there_s" -v b="$here_s" 'BEGIN { printf "%.3f", f - a - b }')
for row in "tunebench-cli fetch (with both SHA-256 checks):$fetch_s" \
    "fetch less its two checksums:$copy_s" "scp (reference):$scp_s"; do
    awk -v name="${row%:*}" -v s="${row##*:}" -v bytes=$((mib * 1024 * 1024)) \
        'BEGIN { printf "%-44s %9.2f %9.1f\n", name, s, bytes / s / 1e6 }'
done
echo "checksums of the file: sha256sum $there_s s, openssl dgst -sha256 $here_s s"
awk -v a="$fetch_s" -v c="$copy_s" -v b="$scp_s" \
    'BEGIN { printf "fetch / scp throughput: %.2fx (less the checksums: %.2fx)\n", b / a, b / c }'
