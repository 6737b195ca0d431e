#!/usr/bin/env bash
# bench/ab.sh — one ferryd build against another, side by side: what a change is worth when single runs of
# `make bench` move by ±15 % on this machine.
#
# Starts both daemons (server CPU, as bench/run.sh pins them), then drives each in turn with the same ferry-bench
# (client CPU) for ROUNDS rounds of SECONDS, alternating which goes first. Halfway through, the two daemons are
# started again with their sockets and cache directories swapped: a daemon's place (started first or second, its
# socket's name) was measured to favour one side by up to 7 % on pipelined gets. Prints, per side, the median
# requests a second and server CPU µs a request (user + system from /proc, over the measured seconds), and the
# ratio new / old of each.
#
#   bash bench/ab.sh OLD_FERRYD NEW_FERRYD MODE [ferry-bench options...]
#   ROUNDS=16 bash bench/ab.sh /tmp/old/ferryd .build/release/ferryd cache-set --conns 50 --pipeline 16
#
# With SIDE=client, two client builds against one daemon instead (a change to FerryClient): OLD and NEW are
# ferry-bench binaries, both driving one ferryd (FERRYD; default: beside NEW), alternately, the daemon started again
# halfway; the CPU column is then the client's (user + system of the ferry-bench process, warm-up included).
#   SIDE=client bash bench/ab.sh /tmp/old/ferry-bench .build/release/ferry-bench client
#
# Environment: ROUNDS (16, rounded up to even), SECONDS_EACH (1.5), BENCH (ferry-bench; default: beside NEW_FERRYD),
# SIDE (server | client), FERRYD (SIDE=client), LOG_LEVEL (warn, as bench/run.sh; info: the default's access log).
# An old build: `git worktree add /tmp/old <commit> && swift build -c release --package-path /tmp/old`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ $# -ge 3 ]] || { sed -n '2,22p' "${BASH_SOURCE[0]}" >&2; exit 2; }
OLD=$(realpath "$1"); NEW=$(realpath "$2"); MODE=$3
shift 3
EXTRA=("$@")
ROUNDS=${ROUNDS:-16}
(( ROUNDS % 2 == 0 )) || ROUNDS=$((ROUNDS + 1))
SECONDS_EACH=${SECONDS_EACH:-1.5}
SIDE=${SIDE:-server}
LOG_LEVEL=${LOG_LEVEL:-warn}
if [[ $SIDE == client ]]; then
    OLD_BENCH=$OLD NEW_BENCH=$NEW
    OLD=$(realpath "${FERRYD:-$(dirname "$NEW")/ferryd}"); NEW=$OLD
else
    OLD_BENCH=${BENCH:-$(dirname "$NEW")/ferry-bench}; NEW_BENCH=$OLD_BENCH
fi
for exe in "$OLD" "$NEW" "$OLD_BENCH" "$NEW_BENCH"; do [[ -x $exe ]] || { echo "missing $exe" >&2; exit 1; }; done
[[ -x /usr/bin/time ]] || { echo "missing /usr/bin/time (apt-get install time)" >&2; exit 1; }

source bench/lib.sh
bench_tmp ferry-ab
bench_pinning

# start_pair A_SOCKET_NAME B_SOCKET_NAME: the old daemon on the first, the new on the second; sets OLD_PID, NEW_PID.
start_pair() {
    rm -rf "$TMP/$1" "$TMP/$2"
    start_bg "${SERVER_CPU[@]}" "$OLD" --socket "$TMP/$1.sock" --cache-dir "$TMP/$1" --log-level "$LOG_LEVEL"
    OLD_PID=$STARTED_PID OLD_SOCK=$TMP/$1.sock
    start_bg "${SERVER_CPU[@]}" "$NEW" --socket "$TMP/$2.sock" --cache-dir "$TMP/$2" --log-level "$LOG_LEVEL"
    NEW_PID=$STARTED_PID NEW_SOCK=$TMP/$2.sock
    wait_for "old ferryd" test -S "$OLD_SOCK"
    wait_for "new ferryd" test -S "$NEW_SOCK"
}

# one PID SOCKET OUT BENCH: one round of BENCH against one daemon, appending "requests/s µs-a-request" to OUT (the
# daemon's CPU; with SIDE=client, the client's).
one() {
    local pid=$1 sock=$2 out=$3 bench=$4 c0 c1 ops seconds
    c0=$(cpu_ticks "$pid")
    ops=$("${CLIENT_CPU[@]}" /usr/bin/time -f '%U %S' -o "$TMP/time" "$bench" --socket "$sock" --mode "$MODE" \
        --seconds "$SECONDS_EACH" --warmup 0.3 "${EXTRA[@]}" 2>/dev/null | sed -n 's/^RESULT .*ops_per_s=\([0-9.]*\).*/\1/p' || true)
    c1=$(cpu_ticks "$pid")
    [[ -n $ops ]] || { echo "ferry-bench gave no result against $sock" >&2; exit 1; }
    # The ticks (and the client's times) cover the warm-up too: counted as part of the run's seconds.
    if [[ $SIDE == client ]]; then seconds=$(awk '{ print $1 + $2 }' "$TMP/time"); else seconds=$(awk -v t=$((c1 - c0)) -v hz="$TICKS_PER_S" 'BEGIN { print t / hz }'); fi
    awk -v o="$ops" -v c="$seconds" -v s="$SECONDS_EACH" 'BEGIN { printf "%.0f %.3f\n", o, c * 1e6 / (o * (s + 0.3)) }' >>"$out"
}

: >"$TMP/old.r"; : >"$TMP/new.r"
for half in 1 2; do
    if [[ $half == 1 ]]; then start_pair a b; else start_pair b a; fi
    for ((i = 0; i < ROUNDS / 2; i++)); do
        if (( i % 2 == 0 )); then
            one "$OLD_PID" "$OLD_SOCK" "$TMP/old.r" "$OLD_BENCH"; one "$NEW_PID" "$NEW_SOCK" "$TMP/new.r" "$NEW_BENCH"
        else
            one "$NEW_PID" "$NEW_SOCK" "$TMP/new.r" "$NEW_BENCH"; one "$OLD_PID" "$OLD_SOCK" "$TMP/old.r" "$OLD_BENCH"
        fi
    done
    stop_bg "$OLD_PID"; stop_bg "$NEW_PID"
done

median() {
    sort -n -k"$2" "$1" | awk -v k="$2" '{ v[NR] = $k } END { printf "%.4f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
old_ops=$(median "$TMP/old.r" 1); new_ops=$(median "$TMP/new.r" 1)
old_cpu=$(median "$TMP/old.r" 2); new_cpu=$(median "$TMP/new.r" 2)
printf 'RESULT mode=ab-%s side=%s rounds=%d old_ops_per_s=%.0f new_ops_per_s=%.0f ratio=%.3f old_cpu_us=%.3f new_cpu_us=%.3f cpu_ratio=%.3f\n' \
    "$MODE" "$SIDE" "$ROUNDS" "$old_ops" "$new_ops" "$(awk -v a="$new_ops" -v b="$old_ops" 'BEGIN { print a / b }')" \
    "$old_cpu" "$new_cpu" "$(awk -v a="$new_cpu" -v b="$old_cpu" 'BEGIN { print a / b }')"
printf '# %s %s: old %.0f /s, %.3f µs a request (%s CPU); new %.0f /s, %.3f µs (medians of %d rounds, both ways round; %s)\n' \
    "$MODE" "${EXTRA[*]}" "$old_ops" "$old_cpu" "$SIDE" "$new_ops" "$new_cpu" "$ROUNDS" "$PINNING"
