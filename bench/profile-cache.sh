#!/usr/bin/env bash
# bench/profile-cache.sh — where ferryd's time goes under the cache load of `make bench`.
#
# Starts a private ferryd (server CPU 0, like bench/run.sh), drives it with `ferry-bench cache-set`, `cache-get` or
# `raw-conns` (pings; client CPU 1) and records ferryd with `perf record -g` (installed with apt-get as linux-perf
# when missing and root). Prints the shares by thread, by shared object and by symbol, and keeps perf.data in
# OUT_DIR for `perf report -i`.
#
# With PROFILER=callgrind (or without perf): the instructions of COUNT requests, counted after a warm-up of 5,000
# (callgrind's instrumentation is switched on and off around them), printed per request with the retains and the
# functions. Deterministic, where throughput moves by a tenth between runs: the way to see what a change saves.
# `cache-get` stores its keys first, inside the counted run: give it few (`--keys 100`).
#
#   bash bench/profile-cache.sh [set|get|ping|ping-pipelined] [ferry-bench options...]    # default: set --conns 50
#   PROFILER=callgrind bash bench/profile-cache.sh get --conns 50 --keys 100
#
# Environment: BUILD_DIR (.build; binaries must be built: `swift build -c release`), SECONDS_RECORDED (5),
# OUT_DIR (bench-results/profile), PROFILER (perf | callgrind; default: perf when it works), COUNT (50000).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OP=${1:-set}
shift || true
[[ $OP == set || $OP == get || $OP == ping || $OP == ping-pipelined ]] ||
    { echo "usage: $0 [set|get|ping|ping-pipelined] [ferry-bench options...]" >&2; exit 2; }
MODE=cache-$OP
[[ $OP == ping ]] && MODE=raw-conns
[[ $OP == ping-pipelined ]] && MODE=raw-pipelined
EXTRA=("$@")
[[ ${#EXTRA[@]} -gt 0 ]] || EXTRA=(--conns 50)
BUILD_DIR=${BUILD_DIR:-.build}
SECONDS_RECORDED=${SECONDS_RECORDED:-5}
OUT_DIR=${OUT_DIR:-bench-results/profile}
BIN=$BUILD_DIR/release
for exe in ferryd ferry-bench; do
    [[ -x $BIN/$exe ]] || { echo "missing $BIN/$exe: swift build -c release${BUILD_DIR:+ --scratch-path $BUILD_DIR}" >&2; exit 1; }
done

source bench/lib.sh
bench_tmp ferry-prof

if [[ -z ${PROFILER:-} ]]; then
    if ! perf --version >/dev/null 2>&1 && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        log "installing linux-perf (apt-get)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null 2>&1 || true
    fi
    if perf record -o /dev/null -- true >/dev/null 2>&1; then PROFILER=perf; else PROFILER=callgrind; fi
fi

mkdir -p "$OUT_DIR"
SOCK=$TMP/ferryd.sock
ferryd_cmd=("$BIN/ferryd" --socket "$SOCK" --cache-dir "$TMP/cache" --log-level warn)
if [[ $PROFILER == callgrind ]]; then
    # Callgrind runs the daemon ~50× slower: a fixed count of requests, counted alone (start-up and warm-up not).
    # Without its DWARF (symbols stay): valgrind 3.19 reads Swift 6's slowly and warns on every unit.
    rm -f "$OUT_DIR/callgrind.out"
    strip --strip-debug -o "$TMP/ferryd" "$BIN/ferryd"
    ferryd_cmd[0]=$TMP/ferryd
    taskset -c 0 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT_DIR/callgrind.out" "${ferryd_cmd[@]}" &
else
    taskset -c 0 "${ferryd_cmd[@]}" &
fi
FERRYD_PID=$!
PIDS+=("$FERRYD_PID")
for ((k = 0; k < 600; k++)); do [[ -S $SOCK ]] && break; sleep 0.05; done
[[ -S $SOCK ]] || { echo "ferryd did not come up" >&2; exit 1; }

bench=(taskset -c 1 "$BIN/ferry-bench" --socket "$SOCK" --mode "$MODE" "${EXTRA[@]}")
if [[ $PROFILER == perf ]]; then
    log "ferry-bench $MODE ${EXTRA[*]}; perf record -g on ferryd (pid $FERRYD_PID) for ${SECONDS_RECORDED}s"
    "${bench[@]}" --seconds "$((SECONDS_RECORDED + 2))" --warmup 1 &
    BENCH_PID=$!
    PIDS+=("$BENCH_PID")
    sleep 1.5
    perf record -F 1999 -g -p "$FERRYD_PID" -o "$OUT_DIR/perf.data" -- sleep "$SECONDS_RECORDED" 2>&1 | tail -1 >&2
    wait "$BENCH_PID"
    report() { perf report -i "$OUT_DIR/perf.data" --no-children -g none --percent-limit 0.7 "$@" 2>/dev/null | grep '%' || true; }
    echo "## by thread (the lowest id is the loop thread; the disk worker starts next)"; report --sort pid
    echo "## by shared object"; report --sort dso
    echo "## by symbol"; report --sort dso,sym | head -40
    log "perf.data in $OUT_DIR: perf report -i $OUT_DIR/perf.data -g caller"
else
    COUNT=${COUNT:-50000}
    log "ferry-bench $MODE ${EXTRA[*]} under callgrind: $COUNT requests counted after 5,000 uncounted"
    "${bench[@]}" --count 5000 --warmup 0 >/dev/null
    callgrind_control -i on "$FERRYD_PID" >/dev/null
    "${bench[@]}" --count "$COUNT" --warmup 0
    callgrind_control -i off "$FERRYD_PID" >/dev/null
    kill "$FERRYD_PID"
    wait "$FERRYD_PID" 2>/dev/null || true
    annotate() { callgrind_annotate --inclusive=no "$OUT_DIR/callgrind.out" 2>/dev/null; }
    total=$(awk '/^totals:/ {print $2}' "$OUT_DIR/callgrind.out")
    # swift_retain is about 22 instructions a call.
    retains=$(annotate | awk '/:swift_retain / && !n {gsub(",", "", $1); print $1; n = 1}')
    echo "## per request: $((total / COUNT)) instructions, $(( ${retains:-0} / 22 / COUNT )) retains (every thread)"
    annotate | sed -n '/file:function/,$p' | sed -n 1,50p
fi
