#!/usr/bin/env bash
# Throughput of `tunebench-cli fetch`, and of `launch --sync`'s upload
# (bench_sync_upload, as root), against scp for one large file over SSH on
# this machine, optionally with a round-trip delay.
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
# Where netem is missing (a kernel without sch_netem) or the user is not
# root, the delay comes from delay_proxy.py beside this script, a relay on
# loopback that holds each byte DELAY_MS in each direction; fetch and scp
# both connect through it.
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
delay_by=none
if [ -n "${TB_BENCH_IN_NETNS:-}" ]; then
    ip link set lo up
fi
if [ "$delay_ms" != 0 ]; then
    delay_by=relay
    if [ -n "${TB_BENCH_IN_NETNS:-}" ] && tc qdisc add dev lo root netem delay "${delay_ms}ms" 2>/dev/null; then
        delay_by=netem
    fi
fi

work=$(mktemp -d)
sshd_pid=
relay_pid=
cleanup() {
    [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null || true
    [ -n "$relay_pid" ] && kill "$relay_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/user_key"
cp "$work/user_key.pub" "$work/authorized_keys"
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port=$(free_port)
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
# As root, sshd runs in a mount namespace of its own with an empty tmpfs on
# $work/hidden, where --sync's upload goes.
hidden=
upload="$build/tests/benchmarks/remote/bench_sync_upload"
if [ "$(id -u)" = 0 ] && [ -x "$upload" ]; then
    hidden="$work/hidden"
    mkdir -p "$hidden"
    unshare --mount --propagation private -- sh -c 'mount -t tmpfs tmpfs "$1" && exec "$2" -D -e -f "$3"' \
        sh "$hidden" /usr/sbin/sshd "$work/sshd_config" & sshd_pid=$!
else
    [ -x "$upload" ] || echo "no $upload (cmake --build ... --target bench_sync_upload): --sync is not measured" >&2
    /usr/sbin/sshd -D -e -f "$work/sshd_config" & sshd_pid=$!
fi
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
# The port the clients connect to: sshd's, or the relay's in front of it.
connect=$port
if [ "$delay_by" = relay ]; then
    connect=$(free_port)
    coproc RELAY { exec python3 "$(dirname "$(realpath "$0")")/delay_proxy.py" "$connect" "$port" "$delay_ms"; }
    relay_pid=$RELAY_PID
    read -r ready <&"${RELAY[0]}" && [ "$ready" = ready ] || { echo "the delay relay did not start" >&2; exit 1; }
fi
echo "[127.0.0.1]:$connect $(cut -d' ' -f1,2 "$work/host_key.pub")" > "$work/known_hosts"

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
    --port "$connect" --identity "$work/user_key" --known-hosts "$work/known_hosts")
scp_s=$(seconds scp -q -P "$connect" -i "$work/user_key" -o "UserKnownHostsFile=$work/known_hosts" \
    -o BatchMode=yes "$user@127.0.0.1:$work/run/adapter/weights.bin" "$work/scp.bin")
# What fetch and --sync hash with: sha256sum there, OpenSSL's SHA-256 here.
there_s=$(seconds sha256sum "$work/run/adapter/weights.bin")
here_s=$(seconds openssl dgst -sha256 "$work/run/adapter/weights.bin")
cmp -s "$work/run/adapter/weights.bin" "$work/fetched/adapter/weights.bin" || { echo "fetch's copy differs" >&2; exit 1; }
cmp -s "$work/run/adapter/weights.bin" "$work/scp.bin" || { echo "scp's copy differs" >&2; exit 1; }

# The other way: --sync's copy to the same path there, which sshd sees as an
# empty folder of its own (its mount namespace).
sync_s= scp_up_s=
if [ -n "$hidden" ]; then
    cp "$work/run/adapter/weights.bin" "$hidden/weights.bin"
    sync_s=$(seconds "$upload" "$user@127.0.0.1" "$connect" "$work/user_key" "$work/known_hosts" \
        "$hidden/weights.bin")
    scp_up_s=$(seconds scp -q -P "$connect" -i "$work/user_key" -o "UserKnownHostsFile=$work/known_hosts" \
        -o BatchMode=yes "$hidden/weights.bin" "$user@127.0.0.1:$hidden/scp.bin")
    there=$(nsenter --target "$sshd_pid" --mount -- sha256sum "$hidden/weights.bin" "$hidden/scp.bin" | cut -d' ' -f1 | sort -u)
    [ "$there" = "$(sha256sum < "$hidden/weights.bin" | cut -d' ' -f1)" ] || { echo "an upload differs" >&2; exit 1; }
fi

echo "one file of $mib MiB over SSH on loopback, ${delay_ms} ms added each way (by: $delay_by)"
printf '%-48s %9s %9s\n' "copy" "s" "MB/s"
row() {
    awk -v name="$1" -v s="$2" -v bytes=$((mib * 1024 * 1024)) \
        'BEGIN { printf "%-48s %9.2f %9.1f\n", name, s, bytes / s / 1e6 }'
}
less_checks() {
    awk -v f="$1" -v a="$there_s" -v b="$here_s" 'BEGIN { printf "%.3f", f - a - b }'
}
row "tunebench-cli fetch (with both SHA-256 checks)" "$fetch_s"
row "fetch less its two checksums" "$(less_checks "$fetch_s")"
row "scp from there (reference)" "$scp_s"
if [ -n "$sync_s" ]; then
    row "launch --sync's copy (with both SHA-256 checks)" "$sync_s"
    row "--sync less its two checksums" "$(less_checks "$sync_s")"
    row "scp to there (reference)" "$scp_up_s"
fi
echo "checksums of the file: sha256sum $there_s s, openssl dgst -sha256 $here_s s"
ratio() {
    awk -v name="$1" -v a="$2" -v c="$(less_checks "$2")" -v b="$3" \
        'BEGIN { printf "%s / scp throughput: %.2fx (less the checksums: %.2fx)\n", name, b / a, b / c }'
}
ratio fetch "$fetch_s" "$scp_s"
if [ -n "$sync_s" ]; then
    ratio "--sync" "$sync_s" "$scp_up_s"
else
    echo "--sync not measured: it needs root (sshd in a mount namespace of its own)"
fi
