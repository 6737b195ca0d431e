#!/usr/bin/env bash
# bench/run.sh — Ferry's benchmark (`make bench`). BENCHMARKS.md says what each row means.
#
# Builds release binaries, starts a private ferryd, measures `ping` round trips with ferry-bench in four load
# shapes, measures the same shapes against bench/rawpingpong.c (a C Unix-socket echo: the physical limit), then the
# whole-process start-up of `ferry ping` beside `curl` against a local python3 http.server. Prints the machine and a
# Markdown table of Ferry / reference ratios; writes everything to bench-results/latest.txt.
#
# Environment (all optional):
#   BUILD_DIR=.build     SwiftPM scratch directory; the default is the normal `swift build -c release`
#   SKIP_BUILD=1         use the binaries already in BUILD_DIR
#   SWIFT_FLAGS=         extra `swift build` flags, e.g. the Makefile's "-Xswiftc -warnings-as-errors" (SwiftPM
#                        recompiles when flags change, so matching `make release` reuses its build)
#   BENCH_SECONDS=3      measured seconds per mode and run (each run also has a 0.5 s warm-up)
#   REPEATS=3            runs per mode; the table shows the median run (by requests/s) and the spread
#   STARTUP_RUNS=200     runs of each start-up command
#   SAME_CORE=1          also run raw-seq and raw-pipelined with both processes on one core (0 to skip)
#   HYPERFINE=auto       time start-up with hyperfine (installed with apt-get when root); 0: a plain bash loop
#   CC=cc                C compiler for the reference
#   OUT_DIR=bench-results  where latest.txt goes
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-.build}
SKIP_BUILD=${SKIP_BUILD:-0}
BENCH_SECONDS=${BENCH_SECONDS:-3}
REPEATS=${REPEATS:-3}
STARTUP_RUNS=${STARTUP_RUNS:-200}
SAME_CORE=${SAME_CORE:-1}
HYPERFINE=${HYPERFINE:-auto}
CC=${CC:-cc}
OUT_DIR=${OUT_DIR:-bench-results}

# A short private directory: Unix socket paths must stay under 108 bytes.
TMP=$(mktemp -d /tmp/ferry-bench.XXXXXX)
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

log() { printf '== %s\n' "$*" >&2; }

# ---- build ---------------------------------------------------------------------------------------------------
build_flags=(-c release)
read -ra extra_flags <<<"${SWIFT_FLAGS:-}"
build_flags+=("${extra_flags[@]}")
[[ $BUILD_DIR != .build ]] && build_flags+=(--scratch-path "$BUILD_DIR")
if [[ $SKIP_BUILD != 1 ]]; then
    log "swift build ${build_flags[*]}"
    swift build "${build_flags[@]}" >&2
fi
BIN=$(swift build "${build_flags[@]}" --show-bin-path)
for exe in ferryd ferry ferry-bench; do
    [[ -x $BIN/$exe ]] || { echo "missing $BIN/$exe (build failed, or SKIP_BUILD=1 without a build)" >&2; exit 1; }
done
log "$CC -O2 bench/rawpingpong.c"
"$CC" -O2 -o "$TMP/rawpingpong" bench/rawpingpong.c

# ---- pinning: servers on CPU 0, clients on CPU 1, so neither steals the other's core -------------------------
if command -v taskset >/dev/null 2>&1 && [[ $(nproc) -ge 2 ]] && taskset -c 0,1 true 2>/dev/null; then
    SERVER_CPU=(taskset -c 0)
    CLIENT_CPU=(taskset -c 1)
    PINNING="servers on CPU 0, clients on CPU 1 (taskset)"
else
    SERVER_CPU=()
    CLIENT_CPU=()
    PINNING="none (taskset unavailable or fewer than 2 CPUs)"
fi

# Runs "$@" in the background, remembers its PID for cleanup; sets STARTED_PID.
start_bg() {
    "$@" &
    STARTED_PID=$!
    PIDS+=("$STARTED_PID")
}

wait_for() {  # wait_for DESCRIPTION COMMAND...: retry for up to 10 s
    local what=$1 k
    shift
    for ((k = 0; k < 200; k++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.05
    done
    echo "$what did not come up" >&2
    exit 1
}

# ---- machine -------------------------------------------------------------------------------------------------
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)
MACHINE=$(cat <<EOF
nproc:   $(nproc)
cpu:     ${CPU_MODEL:-unknown}
kernel:  $(uname -sr)
swift:   $(swift --version 2>/dev/null | grep -m1 -i 'swift version' || echo unknown)
cc:      $("$CC" --version | head -1)
commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (plus whatever the work tree had uncommitted)
pinning: $PINNING
date:    $(date -u '+%Y-%m-%d %H:%M UTC')
EOF
)
printf '%s\n\n' "$MACHINE"

RESULTS=$TMP/results.txt   # every RESULT line of every run
: >"$RESULTS"

# ---- ferryd --------------------------------------------------------------------------------------------------
export FERRY_NO_AUTOSTART=1
SOCK=$TMP/ferryd.sock
start_bg "${SERVER_CPU[@]}" "$BIN/ferryd" --socket "$SOCK" --cache-dir "$TMP/cache" --log-level warn
FERRYD_PID=$STARTED_PID
wait_for ferryd "$BIN/ferry" ping --socket "$SOCK"
log "ferryd pid $FERRYD_PID on $SOCK"

# Server CPU time (user + system, in clock ticks) from /proc/PID/stat; the fields after the command name, so a
# name with spaces cannot shift them.
TICKS_PER_S=$(getconf CLK_TCK)
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
now_us() { if [[ -n ${EPOCHREALTIME:-} ]]; then echo "${EPOCHREALTIME//[.,]/}"; else echo $(($(date +%s%N) / 1000)); fi; }

# measured SERVER_PID FROM TO CMD...: runs one client command, renames mode=FROM to mode=TO in its output, and
# appends server_cpu_pct: the server's CPU use over the whole run (warm-up included, same load). It tells whether a
# row is bound by the server's CPU (near 100) or by the wake-ups between the two cores (well below).
measured() {
    local pid=$1 from=$2 to=$3 out c0 c1 t0 t1 pct
    shift 3
    c0=$(cpu_ticks "$pid")
    t0=$(now_us)
    out=$("$@")
    t1=$(now_us)
    c1=$(cpu_ticks "$pid")
    pct=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v hz="$TICKS_PER_S" 'BEGIN { printf "%.0f", 100 * c / hz / (t / 1e6) }')
    sed -e "s/^RESULT mode=$from /RESULT mode=$to /" -e "/^RESULT /s/\$/ server_cpu_pct=$pct/" \
        -e "s/^# $from /# $to /" <<<"$out" | tee -a "$RESULTS"
}

# run_ferry MODE LABEL: REPEATS runs of one ferry-bench mode against ferryd.
run_ferry() {
    local k
    for ((k = 1; k <= REPEATS; k++)); do
        measured "$FERRYD_PID" "$1" "$2" \
            "${CLIENT_CPU[@]}" "$BIN/ferry-bench" --socket "$SOCK" --seconds "$BENCH_SECONDS" --mode "$1"
    done
}

# run_c MODE LABEL [N]: REPEATS runs of one rawpingpong client mode against the reference server.
run_c() {
    local k
    for ((k = 1; k <= REPEATS; k++)); do
        measured "$RAW_PID" "c-$1" "$2" \
            "${CLIENT_CPU[@]}" "$TMP/rawpingpong" client "$RAW_SOCK" "$MSG_BYTES" "$REPLY_BYTES" "$1" "$BENCH_SECONDS" "${3:-50}"
    done
}

log "ferry-bench: $REPEATS × ${BENCH_SECONDS}s per mode"
run_ferry raw-seq raw-seq
run_ferry raw-pipelined raw-pipelined
run_ferry raw-conns raw-conns
run_ferry client client

# The reference uses the frame sizes ferry-bench reported.
MSG_BYTES=$(grep -m1 'mode=raw-seq ' "$RESULTS" | sed -n 's/.* msg_bytes=\([0-9]*\).*/\1/p')
REPLY_BYTES=$(grep -m1 'mode=raw-seq ' "$RESULTS" | sed -n 's/.* reply_bytes=\([0-9]*\).*/\1/p')
[[ -n $MSG_BYTES && -n $REPLY_BYTES ]] || { echo "ferry-bench reported no frame sizes" >&2; exit 1; }

RAW_SOCK=$TMP/raw.sock
start_bg "${SERVER_CPU[@]}" "$TMP/rawpingpong" server "$RAW_SOCK" "$MSG_BYTES" "$REPLY_BYTES"
RAW_PID=$STARTED_PID
wait_for rawpingpong test -S "$RAW_SOCK"
log "rawpingpong: $MSG_BYTES-byte requests, $REPLY_BYTES-byte replies"
run_c seq c-seq
run_c pipelined c-pipelined 50
run_c conns c-conns 50

# Same core: a cross-core round trip on a VM pays two inter-processor wake-ups, which can hide the server's own
# cost; with both processes on CPU 1 the hand-off is a plain context switch.
if [[ $SAME_CORE == 1 && ${#CLIENT_CPU[@]} -gt 0 ]]; then
    log "raw-seq and raw-pipelined again with the servers moved to CPU 1"
    taskset -a -p -c 1 "$FERRYD_PID" >/dev/null
    taskset -a -p -c 1 "$RAW_PID" >/dev/null
    run_ferry raw-seq raw-seq-1core
    run_c seq c-seq-1core
    run_ferry raw-pipelined raw-pipelined-1core
    run_c pipelined c-pipelined-1core 50
    taskset -a -p -c 0 "$FERRYD_PID" >/dev/null
    taskset -a -p -c 0 "$RAW_PID" >/dev/null
fi

# ---- start-up: ferry ping vs curl against a local http.server -------------------------------------------------
mkdir -p "$TMP/www"
echo "hello" >"$TMP/www/small.txt"
start_bg "${SERVER_CPU[@]}" python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$TMP/www" >"$TMP/http.log" 2>&1
wait_for http.server grep -q ' port ' "$TMP/http.log"
PORT=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$TMP/http.log" | head -1)
URL=http://127.0.0.1:$PORT/small.txt
wait_for "http.server on port $PORT" curl -sf -o /dev/null "$URL"
FERRY_CMD="$BIN/ferry ping --socket $SOCK"
CURL_CMD="curl -s -o /dev/null $URL"

if [[ $HYPERFINE != 0 ]] && ! command -v hyperfine >/dev/null 2>&1 && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "installing hyperfine"
    apt-get install -y -qq hyperfine >/dev/null 2>&1 \
        || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq hyperfine >/dev/null 2>&1; } || true
fi

# startup_result LABEL MS...: one RESULT line from per-run times in milliseconds.
startup_result() {
    local label=$1
    shift
    printf '%s\n' "$@" | sort -g | awk -v label="$label" '
        { v[NR] = $1; s += $1; ss += $1 * $1 }
        END {
            mean = s / NR; sd = sqrt(ss / NR - mean * mean)
            printf "RESULT mode=%s mean_ms=%.3f median_ms=%.3f stddev_ms=%.3f min_ms=%.3f max_ms=%.3f runs=%d\n",
                label, mean, v[int((NR + 1) / 2)], sd, v[1], v[NR], NR
        }' | tee -a "$RESULTS"
}

if [[ $HYPERFINE != 0 ]] && command -v hyperfine >/dev/null 2>&1; then
    STARTUP_TOOL="hyperfine $(hyperfine --version | awk '{print $2}') (-N: no shell in between)"
    log "start-up: $STARTUP_TOOL, $STARTUP_RUNS runs each"
    "${CLIENT_CPU[@]}" hyperfine -N --style basic --warmup 20 --runs "$STARTUP_RUNS" \
        --export-json "$TMP/startup.json" -n "ferry ping" "$FERRY_CMD" -n "curl" "$CURL_CMD" >&2
    for k in 0 1; do
        label=$([[ $k == 0 ]] && echo startup-ferry-ping || echo startup-curl)
        # shellcheck disable=SC2046
        startup_result "$label" $(python3 -c 'import json,sys
for t in json.load(open(sys.argv[1]))["results"][int(sys.argv[2])]["times"]: print(t * 1000)' "$TMP/startup.json" "$k")
    done
else
    # No hyperfine: time a loop in this shell. $EPOCHREALTIME (bash 5) is read inline, without a fork (even
    # `$(now_us)` would fork a subshell inside the timed interval); `date +%s%N`, the fallback for older bash,
    # forks a process whose own start-up lands inside every measurement.
    STARTUP_TOOL="bash loop, $STARTUP_RUNS runs"
    [[ -n ${EPOCHREALTIME:-} ]] || STARTUP_TOOL+=" (date +%s%N: includes a fork of date)"
    log "start-up: $STARTUP_TOOL"
    time_cmd() {  # time_cmd CMD...: prints one time in ms per run
        local k t0 t1
        for ((k = 0; k < 20; k++)); do "$@" >/dev/null 2>&1; done
        for ((k = 0; k < STARTUP_RUNS; k++)); do
            if [[ -n ${EPOCHREALTIME:-} ]]; then
                t0=${EPOCHREALTIME//[.,]/}; "$@" >/dev/null; t1=${EPOCHREALTIME//[.,]/}
            else
                t0=$(($(date +%s%N) / 1000)); "$@" >/dev/null; t1=$(($(date +%s%N) / 1000))
            fi
            echo "$(((t1 - t0) / 1000)).$(printf '%03d' $(((t1 - t0) % 1000)))"
        done
    }
    # Pin this subshell (its children inherit it) rather than prefix each run with taskset, whose own exec would
    # be timed too.
    read -ra FERRY_ARGV <<<"$FERRY_CMD"
    read -ra CURL_ARGV <<<"$CURL_CMD"
    FERRY_TIMES=$( ([[ ${#CLIENT_CPU[@]} -gt 0 ]] && taskset -p -c 1 $BASHPID >/dev/null; time_cmd "${FERRY_ARGV[@]}") )
    CURL_TIMES=$( ([[ ${#CLIENT_CPU[@]} -gt 0 ]] && taskset -p -c 1 $BASHPID >/dev/null; time_cmd "${CURL_ARGV[@]}") )
    # shellcheck disable=SC2086
    startup_result startup-ferry-ping $FERRY_TIMES
    # shellcheck disable=SC2086
    startup_result startup-curl $CURL_TIMES
fi

# ---- the table -----------------------------------------------------------------------------------------------
# median LABEL: the RESULT line of the median run (by ops_per_s) of LABEL; empty when LABEL did not run.
median() {
    { grep "mode=$1 " "$RESULTS" || true; } | awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^ops_per_s=/) { split($i, a, "="); print a[2], $0 } }' \
        | sort -n | awk '{ line[NR] = $0 } END { if (NR) { sub(/^[^ ]* /, "", line[int((NR + 1) / 2)]); print line[int((NR + 1) / 2)] } }'
}
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }  # field LINE KEY
spread() {  # spread LABEL: "min–max" requests/s over the runs
    { grep "mode=$1 " "$RESULTS" || true; } | sed -n 's/.* ops_per_s=\([0-9]*\).*/\1/p' | sort -n \
        | awk '{ v[NR] = $1 } END { if (NR > 1) printf "%d–%d", v[1], v[NR]; else if (NR) printf "%d", v[1] }' \
        | sed -E ':a; s/([0-9])([0-9]{3})($|[^0-9])/\1,\2\3/; ta'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "–"; else printf "%.2f", a / b }'; }
thousands() { sed -E ':a; s/([0-9])([0-9]{3})($|[^0-9])/\1,\2\3/; ta' <<<"$1"; }
# cpu_per_request LINE: server CPU µs per request, from server_cpu_pct and ops_per_s.
cpu_per_request() {
    awk -v p="$(field "$1" server_cpu_pct)" -v o="$(field "$1" ops_per_s)" 'BEGIN { if (o > 0 && p != "") printf "%.2f", p / 100 * 1e6 / o }'
}

TABLE=$TMP/table.md
row() { printf '| %s | %s | %s | %s | %s |\n' "$@" >>"$TABLE"; }
# shape_rows FERRY_LABEL REF_LABEL DESCRIPTION: requests/s, latency, and the server's CPU cost of one load shape.
shape_rows() {
    local f r
    f=$(median "$1")
    r=$(median "$2")
    [[ -n $f && -n $r ]] || return 0
    row "**$3** requests/s" "$(thousands "$(field "$f" ops_per_s)")" "$(thousands "$(field "$r" ops_per_s)") ($2)" \
        "$(ratio "$(field "$f" ops_per_s)" "$(field "$r" ops_per_s)")" "range $(spread "$1") / $(spread "$2")"
    row "… p50 / p99 µs" "$(field "$f" p50_us) / $(field "$f" p99_us)" "$(field "$r" p50_us) / $(field "$r" p99_us)" \
        "$(ratio "$(field "$f" p50_us)" "$(field "$r" p50_us)") / $(ratio "$(field "$f" p99_us)" "$(field "$r" p99_us)")" ""
    row "… server CPU µs per request" "$(cpu_per_request "$f")" "$(cpu_per_request "$r")" \
        "$(ratio "$(cpu_per_request "$f")" "$(cpu_per_request "$r")")" \
        "server core busy $(field "$f" server_cpu_pct)% / $(field "$r" server_cpu_pct)%"
}

{
    echo "| measure (median of $REPEATS runs) | Ferry | reference | Ferry / reference | notes (Ferry / reference) |"
    echo "|---|---|---|---|---|"
} >"$TABLE"
shape_rows raw-seq c-seq "raw-seq: 1 conn, 1 in flight"
shape_rows raw-pipelined c-pipelined "raw-pipelined: 1 conn, 50 in flight"
shape_rows raw-conns c-conns "raw-conns: 50 conns × 1 in flight"
shape_rows client c-pipelined "client: FerryClient, 50 tasks, 1 conn"
shape_rows raw-seq-1core c-seq-1core "raw-seq, both on CPU 1"
shape_rows raw-pipelined-1core c-pipelined-1core "raw-pipelined, both on CPU 1"
fc=$(median client)
fp=$(median raw-pipelined)
if [[ -n $fc && -n $fp ]]; then
    row "client vs raw-pipelined requests/s (the library's cost)" "$(thousands "$(field "$fc" ops_per_s)")" \
        "$(thousands "$(field "$fp" ops_per_s)") (raw-pipelined)" "$(ratio "$(field "$fc" ops_per_s)" "$(field "$fp" ops_per_s)")" \
        "same connection count and in-flight depth"
fi
fs=$(grep 'mode=startup-ferry-ping ' "$RESULTS" || true)
cs=$(grep 'mode=startup-curl ' "$RESULTS" || true)
if [[ -n $fs && -n $cs ]]; then
    row "**start-up**: \`ferry ping\` vs \`curl\`, mean ms" "$(field "$fs" mean_ms)" "$(field "$cs" mean_ms) (curl)" \
        "$(ratio "$(field "$fs" mean_ms)" "$(field "$cs" mean_ms)")" "±$(field "$fs" stddev_ms) / ±$(field "$cs" stddev_ms) ms (σ)"
    row "… median ms" "$(field "$fs" median_ms)" "$(field "$cs" median_ms)" \
        "$(ratio "$(field "$fs" median_ms)" "$(field "$cs" median_ms)")" ""
fi

LEGEND="Ferry / reference: for requests/s below 1 means Ferry is slower; for latency, server CPU per request and \
start-up, above 1 means Ferry is slower or costlier. Server CPU is user+system time of ferryd (or the reference \
server) over the run, from /proc; a core busy well below 100% means the row is bound by wake-ups between the cores, \
not by the server's CPU."

mkdir -p "$OUT_DIR"
{
    echo "# Ferry benchmark — bench/run.sh"
    echo
    echo "$MACHINE"
    echo "frames:  ${MSG_BYTES}-byte ping request, ${REPLY_BYTES}-byte reply; ${REPEATS} × ${BENCH_SECONDS}s per mode (median run shown)"
    echo "startup: $STARTUP_TOOL; ferry ping → $SOCK, curl → $URL"
    echo
    cat "$TABLE"
    echo
    echo "$LEGEND"
    echo
    echo "## Every run"
    echo
    cat "$RESULTS"
} >"$OUT_DIR/latest.txt"

echo
cat "$TABLE"
echo
echo "$LEGEND"
log "written to $OUT_DIR/latest.txt"
