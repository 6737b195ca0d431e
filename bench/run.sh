#!/usr/bin/env bash
# bench/run.sh — Ferry's benchmark (`make bench`). BENCHMARKS.md says what each row means.
#
# Builds release binaries, starts a private ferryd, measures `ping` round trips with ferry-bench in four load
# shapes, measures the same shapes against bench/rawpingpong.c (a C Unix-socket echo: the physical limit; its C
# client also drives ferryd with real pings, so that one row of each shape has the same client on both sides), then
# cache.set / cache.get with 100-byte values beside redis-benchmark against a private redis-server (installed with
# apt-get when missing; in memory and with an append-only file; at 50 connections also driven by ferry-bench itself,
# so both servers face the same client), then the whole-process start-up of `ferry ping` beside `curl` against a local python3
# http.server. Prints the machine and Markdown tables of Ferry / reference ratios; writes everything to
# bench-results/latest.txt.
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
#   CACHE=1              run the cache rows (cache.set / cache.get against ferryd and Redis); 0 to skip them
#   REDIS=auto           the Redis rows of the cache comparison: auto installs redis-server and redis-tools with
#                        apt-get when missing (as root); 0 skips them
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
CACHE=${CACHE:-1}
REDIS=${REDIS:-auto}
CC=${CC:-cc}
OUT_DIR=${OUT_DIR:-bench-results}

source bench/lib.sh
bench_tmp ferry-bench

# ---- build ---------------------------------------------------------------------------------------------------
bench_binaries
log "$CC -O2 bench/rawpingpong.c"
"$CC" -O2 -o "$TMP/rawpingpong" bench/rawpingpong.c

# ---- pinning: servers on CPU 0, clients on CPU 1, so neither steals the other's core -------------------------
bench_pinning

# ---- machine -------------------------------------------------------------------------------------------------
CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)
# The host's proactive reclaim (DAMON), when it runs: a `pageout` scheme drops file pages idle for a while, so
# binaries and files are read again and page faults cost more; runs then disagree far beyond their usual noise.
damon_state() {
    local k a out=""
    for k in /sys/kernel/mm/damon/admin/kdamonds/*; do
        [[ -r $k/state ]] || continue
        out+="kdamond $(cat "$k/state")"
        for a in "$k"/contexts/*/schemes/*/action; do [[ -r $a ]] && out+=" $(cat "$a")"; done
        out+="; "
    done
    echo "${out:-none}"
}
MACHINE=$(cat <<EOF
nproc:   $(nproc)
cpu:     ${CPU_MODEL:-unknown}
kernel:  $(uname -sr)
swift:   $(swift --version 2>/dev/null | grep -m1 -i 'swift version' || echo unknown)
cc:      $("$CC" --version | head -1)
commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown) (plus whatever the work tree had uncommitted)
pinning: $PINNING
reclaim: DAMON $(damon_state)
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

now_us() { if [[ -n ${EPOCHREALTIME:-} ]]; then echo "${EPOCHREALTIME//[.,]/}"; else echo $(($(date +%s%N) / 1000)); fi; }

# measured SERVER_PID FROM TO CMD...: runs one client command, renames mode=FROM to mode=TO in its output, and
# appends server_cpu_pct: the server's CPU use over the whole run (warm-up included, same load). It tells whether a
# row is bound by the server's CPU (near 100) or by the wake-ups between the two cores (well below).
#
# It also appends client_cpu_pct: the client's CPU time (user + system of the command and its children, from the
# shell's `times`) over the same wall-clock time. Near 100 means the load generator, not the server, set the pace.
measured() {
    local pid=$1 from=$2 to=$3 out c0 c1 t0 t1 pct cpct
    shift 3
    c0=$(cpu_ticks "$pid")
    t0=$(now_us)
    out=$("$@"; rc=$?; times >"$TMP/times"; exit $rc)
    t1=$(now_us)
    c1=$(cpu_ticks "$pid")
    pct=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v hz="$TICKS_PER_S" 'BEGIN { printf "%.0f", 100 * c / hz / (t / 1e6) }')
    # `times` prints the shell's own times, then its children's: "0m1.234s 0m0.567s" (user, system).
    cpct=$(awk -v t=$((t1 - t0)) 'NR == 2 {
            s = 0
            for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }
            printf "%.0f", 100 * s / (t / 1e6)
        }' "$TMP/times")
    sed -e "s/^RESULT mode=$from /RESULT mode=$to /" -e "/^RESULT /s/\$/ server_cpu_pct=$pct client_cpu_pct=$cpct/" \
        -e "s/^# $from /# $to /" <<<"$out" | tee -a "$RESULTS"
}

# ferry_once MODE LABEL [ARGS...]: one run of a ferry-bench mode against ferryd.
ferry_once() {
    local mode=$1 label=$2
    shift 2
    measured "$FERRYD_PID" "$mode" "$label" \
        "${CLIENT_CPU[@]}" "$BIN/ferry-bench" --socket "$SOCK" --seconds "$BENCH_SECONDS" --mode "$mode" "$@"
}

# run_ferry MODE LABEL [ARGS...]: REPEATS runs of one ferry-bench mode against ferryd.
run_ferry() {
    local k
    for ((k = 1; k <= REPEATS; k++)); do ferry_once "$@"; done
}

# rpp_once PID SOCKET MODE LABEL N: one run of a rawpingpong client mode against the server PID listening on SOCKET.
rpp_once() {
    measured "$1" "c-$3" "$4" \
        "${CLIENT_CPU[@]}" "$TMP/rawpingpong" client "$2" "$MSG_BYTES" "$REPLY_BYTES" "$3" "$BENCH_SECONDS" "$5"
}

# c_once MODE LABEL [N]: one run of a rawpingpong client mode against the reference server.
c_once() { rpp_once "$RAW_PID" "$RAW_SOCK" "$1" "$2" "${3:-50}"; }

# cf_once MODE LABEL [N]: one run of a rawpingpong client mode against ferryd, sending real pings (ferry-MODE): the
# same client as the C echo's rows, so that both sides of those ratios pay the same client.
cf_once() { rpp_once "$FERRYD_PID" "$SOCK" "ferry-$1" "$2" "${3:-50}"; }

# run_c MODE LABEL [N]: REPEATS runs of one rawpingpong client mode against the reference server.
run_c() {
    local k
    for ((k = 1; k <= REPEATS; k++)); do c_once "$@"; done
}

# The reference answers with the frame sizes ferryd uses, taken from a short unmeasured run.
SIZES=$("$BIN/ferry-bench" --socket "$SOCK" --mode raw-seq --count 200 --warmup 0)
MSG_BYTES=$(sed -n 's/^RESULT .* msg_bytes=\([0-9]*\).*/\1/p' <<<"$SIZES")
REPLY_BYTES=$(sed -n 's/^RESULT .* reply_bytes=\([0-9]*\).*/\1/p' <<<"$SIZES")
[[ -n $MSG_BYTES && -n $REPLY_BYTES ]] || { echo "ferry-bench reported no frame sizes" >&2; exit 1; }

RAW_SOCK=$TMP/raw.sock
start_bg "${SERVER_CPU[@]}" "$TMP/rawpingpong" server "$RAW_SOCK" "$MSG_BYTES" "$REPLY_BYTES"
RAW_PID=$STARTED_PID
wait_for rawpingpong test -S "$RAW_SOCK"
log "rawpingpong: $MSG_BYTES-byte requests, $REPLY_BYTES-byte replies"

# Interleaved, run by run: each Ferry run beside its reference's, so that a machine whose speed drifts over minutes
# (this one's does, by up to 2x) moves both sides of a ratio alike.
log "ping: ferry-bench and rawpingpong, $REPEATS rounds of ${BENCH_SECONDS}s per mode, interleaved"
for ((round = 1; round <= REPEATS; round++)); do
    ferry_once raw-seq raw-seq
    c_once seq c-seq
    ferry_once raw-pipelined raw-pipelined
    c_once pipelined c-pipelined 50
    ferry_once client client
    ferry_once client-executor client-executor
    ferry_once raw-conns raw-conns
    c_once conns c-conns 50
    cf_once pipelined cf-pipelined 50
    cf_once conns cf-conns 50
done

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

# ---- cache: ferryd vs Redis ----------------------------------------------------------------------------------
# The same load on both: 100-byte values, random keys `key:NNNNNNNNNNNN` out of 10,000, 50 connections with one
# request in flight each (redis-benchmark -c 50), one connection (-c 1), and 50 connections sending 16 requests per
# write (-P 16). redis-server runs on the server core, redis-benchmark on the client core, like ferryd and
# ferry-bench. BENCHMARKS.md, "Cache: ferryd vs Redis", says which Redis configuration is the fair one and why.
CACHE_KEYS=10000
CACHE_VALUE_BYTES=100
# shape name, connections, requests per batch (redis-benchmark -P), requests of Redis's unmeasured warm-up run
CACHE_SHAPES=("c50 50 1 50000" "c1 1 1 5000" "c50-p16 50 16 500000")
# Value sizes of the large-value rows (cache.set, MB/s beside Redis AOF everysec with the same client); a trailing
# `d`: every set carries bytes of its own (ferry-bench --distinct), as ferryd shares the file of equal large values.
LARGE_SIZES=(65536 1000000 1000000d)
# large_args TAG: ferry-bench's options of one large-value row.
large_args() {
    local args="--conns 2 --pipeline 1 --keys 100 --value-bytes ${1%d}"
    [[ $1 == *d ]] && args+=" --distinct"
    echo "$args"
}
REDIS_NOTE=""
PY_NOTE=""
if [[ $CACHE == 1 ]]; then
    if [[ $REDIS != 0 ]] && ! { command -v redis-server && command -v redis-benchmark && command -v redis-cli; } >/dev/null 2>&1; then
        if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
            log "installing redis-server and redis-tools (apt-get)"
            export DEBIAN_FRONTEND=noninteractive
            apt-get install -y -qq redis-server redis-tools >"$TMP/apt.log" 2>&1 \
                || { apt-get update -qq >>"$TMP/apt.log" 2>&1 && apt-get install -y -qq redis-server redis-tools >>"$TMP/apt.log" 2>&1; } \
                || true
        fi
    fi
    if [[ $REDIS == 0 ]]; then
        REDIS_NOTE="Redis rows skipped (REDIS=0)."
    elif ! { command -v redis-server && command -v redis-benchmark && command -v redis-cli; } >/dev/null 2>&1; then
        REDIS_NOTE="Redis rows skipped: redis-server / redis-benchmark / redis-cli are not installed and could not be installed (apt-get install redis-server redis-tools; needs root)."
        log "$REDIS_NOTE"
    fi
fi

# redis_once SOCKET LABEL TEST CONNS PIPELINE N: one redis-benchmark run against a running redis-server, printed as
# a RESULT line like ferry-bench's (redis-benchmark's --csv gives requests/s and p50/p99 in ms).
redis_once() {
    local sock=$1 label=$2 test=$3 conns=$4 pipeline=$5 n=$6
    "${CLIENT_CPU[@]}" redis-benchmark -s "$sock" -t "$test" -d "$CACHE_VALUE_BYTES" -r "$CACHE_KEYS" \
        -c "$conns" -P "$pipeline" -n "$n" --csv </dev/null \
        | tr -d '"' | awk -F, -v label="$label" -v conns="$conns" -v p="$pipeline" -v n="$n" \
            -v keys="$CACHE_KEYS" -v vb="$CACHE_VALUE_BYTES" -v op="$test" '
            $1 == toupper(op) {
                printf "RESULT mode=%s ops_per_s=%.0f p50_us=%.1f p99_us=%.1f conns=%d in_flight=%d requests=%d op=%s keys=%d value_bytes=%d pipeline=%d\n",
                    label, $2, $5 * 1000, $7 * 1000, conns, p, n, op, keys, vb, p
                found = 1
            }
            END { if (!found) exit 1 }'
}

# redis_count SOCKET TEST CONNS PIPELINE WARM: redis-benchmark takes a request count, not a duration: an unmeasured
# warm-up run of WARM requests gives the rate the measured runs' count (about BENCH_SECONDS) is computed from.
redis_count() {
    local rate
    rate=$(redis_once "$1" warmup "$2" "$3" "$4" "$5" | sed -n 's/.* ops_per_s=\([0-9]*\).*/\1/p')
    [[ -n $rate ]] || { echo "redis-benchmark -t $2 failed" >&2; exit 1; }
    awk -v r="$rate" -v s="$BENCH_SECONDS" 'BEGIN { printf "%d", r * s + 1 }'
}

# redis_bench PID SOCKET PREFIX TEST NAME CONNS PIPELINE N: one measured redis-benchmark run, labelled PREFIX-TEST-NAME.
redis_bench() {
    measured "$1" "$3-$4-$5" "$3-$4-$5" redis_once "$2" "$3-$4-$5" "$4" "$6" "$7" "$8"
}

# redis_fb PID SOCKET LABEL OP ARGS...: one run of ferry-bench itself as Redis's client (--redis: SET / GET in RESP,
# the same keys and values). On the one client core redis-benchmark runs out of CPU before Redis does at -c 50; with
# the same load generator on both sides, the difference left is the servers'.
redis_fb() {
    local pid=$1 sock=$2 label=$3 op=$4
    shift 4
    measured "$pid" "cache-$op" "$label" \
        "${CLIENT_CPU[@]}" "$BIN/ferry-bench" --redis "$sock" --seconds "$BENCH_SECONDS" --mode "cache-$op" "$@"
}

# The Python client beside redis-py (from PyPI, installed here when missing): gets of one 100-byte value by 1 and by
# 8 threads sharing one client (ferry.Client: one connection; redis.Redis: its pool, a connection per thread),
# interleaved run by run, on the client core.
run_python_clients() {
    if ! python3 -c 'import redis' >/dev/null 2>&1; then
        log "installing redis-py (pip)"
        python3 -m pip install -q redis >"$TMP/pip.log" 2>&1 || { PY_NOTE="Python rows skipped: pip install redis failed"; return 0; }
    fi
    local k t
    for t in 1 8; do
        for ((k = 1; k <= REPEATS; k++)); do
            measured "$FERRYD_PID" "py-ferry-t$t" "py-ferry-t$t" \
                "${CLIENT_CPU[@]}" python3 bench/pyclients.py ferry "$SOCK" "$t" "$BENCH_SECONDS" "py-ferry-t$t"
            measured "$MEM_PID" "py-redis-t$t" "py-redis-t$t" \
                "${CLIENT_CPU[@]}" python3 bench/pyclients.py redis "$MEM_SOCK" "$t" "$BENCH_SECONDS" "py-redis-t$t"
        done
    done
}

# start_redis NAME ARGS...: a private redis-server on a Unix socket in $TMP (no TCP port), on the server core.
start_redis() {
    local name=$1
    shift
    mkdir -p "$TMP/$name"
    REDIS_SOCK=$TMP/$name/redis.sock
    start_bg "${SERVER_CPU[@]}" redis-server --port 0 --unixsocket "$REDIS_SOCK" --unixsocketperm 700 --save '' \
        --dir "$TMP/$name" --logfile "$TMP/$name/redis.log" --daemonize no "$@"
    REDIS_PID=$STARTED_PID
    wait_for redis-server redis-cli -s "$REDIS_SOCK" ping
    log "redis-server pid $REDIS_PID on $REDIS_SOCK ($*)"
}

# ---- cache: ferryd vs Redis, interleaved run by run ----------------------------------------------------------
# Both Redis configurations run beside ferryd, all on the server core and idle unless driven: in memory only (the
# fastest Redis, which loses every write when the process dies) and AOF everysec (every write appended before the
# reply is sent, fsync once a second: like ferryd, an acknowledged write survives the process being killed; GET does
# not touch the AOF, so only SET runs there). Each round runs every server once per shape, so a drift of the
# machine's speed moves all sides of a ratio alike.
HAVE_REDIS=0
if [[ $CACHE == 1 && -z $REDIS_NOTE ]]; then
    HAVE_REDIS=1
    REDIS_VERSION=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
    start_redis redis-mem --appendonly no
    MEM_SOCK=$REDIS_SOCK MEM_PID=$REDIS_PID
    start_redis redis-aof --appendonly yes --appendfsync everysec
    AOF_SOCK=$REDIS_SOCK AOF_PID=$REDIS_PID
fi
if [[ $CACHE == 1 ]]; then
    log "cache: ferry-bench against ferryd${REDIS_VERSION:+, redis-benchmark and ferry-bench against Redis $REDIS_VERSION}: $REPEATS rounds of ~${BENCH_SECONDS}s per shape"
    for shape in "${CACHE_SHAPES[@]}"; do
        read -r name conns pipeline warm <<<"$shape"
        shape_args=(--conns "$conns" --pipeline "$pipeline" --keys "$CACHE_KEYS" --value-bytes "$CACHE_VALUE_BYTES")
        if [[ $HAVE_REDIS == 1 ]]; then
            n_mem_set=$(redis_count "$MEM_SOCK" set "$conns" "$pipeline" "$warm")
            n_mem_get=$(redis_count "$MEM_SOCK" get "$conns" "$pipeline" "$warm")
            n_aof_set=$(redis_count "$AOF_SOCK" set "$conns" "$pipeline" "$warm")
        fi
        for ((round = 1; round <= REPEATS; round++)); do
            ferry_once cache-set "cache-set-$name" "${shape_args[@]}"
            if [[ $HAVE_REDIS == 1 ]]; then
                redis_bench "$AOF_PID" "$AOF_SOCK" redis-aof set "$name" "$conns" "$pipeline" "$n_aof_set"
                redis_bench "$MEM_PID" "$MEM_SOCK" redis set "$name" "$conns" "$pipeline" "$n_mem_set"
                # The 50-connection shapes again with ferry-bench as Redis's client too.
                if [[ $conns == 50 ]]; then
                    redis_fb "$AOF_PID" "$AOF_SOCK" "redis-aof-fb-set-$name" set "${shape_args[@]}"
                    redis_fb "$MEM_PID" "$MEM_SOCK" "redis-fb-set-$name" set "${shape_args[@]}"
                fi
            fi
            ferry_once cache-get "cache-get-$name" "${shape_args[@]}"
            if [[ $HAVE_REDIS == 1 ]]; then
                redis_bench "$MEM_PID" "$MEM_SOCK" redis get "$name" "$conns" "$pipeline" "$n_mem_get"
                if [[ $conns == 50 ]]; then redis_fb "$MEM_PID" "$MEM_SOCK" "redis-fb-get-$name" get "${shape_args[@]}"; fi
            fi
        done
    done
    # Large values (the journal's largest, and the blob path): 2 connections, 100 keys, beside Redis AOF driven by
    # the same client.
    for size in "${LARGE_SIZES[@]}"; do
        for ((round = 1; round <= REPEATS; round++)); do
            # shellcheck disable=SC2046 # the options split on purpose
            ferry_once cache-set "cache-set-large-$size" $(large_args "$size")
            if [[ $HAVE_REDIS == 1 ]]; then
                # shellcheck disable=SC2046
                redis_fb "$AOF_PID" "$AOF_SOCK" "redis-aof-fb-set-large-$size" set $(large_args "$size")
            fi
        done
    done
    if [[ $HAVE_REDIS == 1 ]]; then
        run_python_clients
        stop_bg "$MEM_PID"
        stop_bg "$AOF_PID"
    fi
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
# What a script's read of the shared cache costs, beside the ping: a 6-byte value, as curl's file.
"$BIN/ferry" cache set startup-probe hello --socket "$SOCK"
FERRY_GET_CMD="$BIN/ferry cache get startup-probe --socket $SOCK"
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
        --export-json "$TMP/startup.json" -n "ferry ping" "$FERRY_CMD" -n "ferry cache get" "$FERRY_GET_CMD" \
        -n "curl" "$CURL_CMD" >&2
    for k in 0 1 2; do
        label=$(case $k in 0) echo startup-ferry-ping ;; 1) echo startup-ferry-get ;; *) echo startup-curl ;; esac)
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
    read -ra FERRY_GET_ARGV <<<"$FERRY_GET_CMD"
    FERRY_TIMES=$( ([[ ${#CLIENT_CPU[@]} -gt 0 ]] && taskset -p -c 1 $BASHPID >/dev/null; time_cmd "${FERRY_ARGV[@]}") )
    FERRY_GET_TIMES=$( ([[ ${#CLIENT_CPU[@]} -gt 0 ]] && taskset -p -c 1 $BASHPID >/dev/null; time_cmd "${FERRY_GET_ARGV[@]}") )
    CURL_TIMES=$( ([[ ${#CLIENT_CPU[@]} -gt 0 ]] && taskset -p -c 1 $BASHPID >/dev/null; time_cmd "${CURL_ARGV[@]}") )
    # shellcheck disable=SC2086
    startup_result startup-ferry-ping $FERRY_TIMES
    # shellcheck disable=SC2086
    startup_result startup-ferry-get $FERRY_GET_TIMES
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
shape_rows cf-pipelined c-pipelined "1 conn, 50 in flight, the C client on both sides"
shape_rows cf-conns c-conns "50 conns × 1 in flight, the C client on both sides"
shape_rows client c-pipelined "client: FerryClient, 50 tasks, 1 conn"
shape_rows client-executor c-pipelined "client-executor: the same tasks preferring client.executor"
shape_rows raw-seq-1core c-seq-1core "raw-seq, both on CPU 1"
shape_rows raw-pipelined-1core c-pipelined-1core "raw-pipelined, both on CPU 1"
fc=$(median client)
fp=$(median raw-pipelined)
if [[ -n $fc && -n $fp ]]; then
    row "client vs raw-pipelined requests/s (the library's cost)" "$(thousands "$(field "$fc" ops_per_s)")" \
        "$(thousands "$(field "$fp" ops_per_s)") (raw-pipelined)" "$(ratio "$(field "$fc" ops_per_s)" "$(field "$fp" ops_per_s)")" \
        "same connection count and in-flight depth"
fi
fe=$(median client-executor)
if [[ -n $fe && -n $fp ]]; then
    row "client-executor vs raw-pipelined requests/s (calls resumed on the reader thread)" "$(thousands "$(field "$fe" ops_per_s)")" \
        "$(thousands "$(field "$fp" ops_per_s)") (raw-pipelined)" "$(ratio "$(field "$fe" ops_per_s)" "$(field "$fp" ops_per_s)")" \
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
gs=$(grep 'mode=startup-ferry-get ' "$RESULTS" || true)
if [[ -n $gs && -n $cs ]]; then
    row "start-up: \`ferry cache get\` (6 bytes) vs \`curl\`, mean ms" "$(field "$gs" mean_ms)" "$(field "$cs" mean_ms) (curl)" \
        "$(ratio "$(field "$gs" mean_ms)" "$(field "$cs" mean_ms)")" "±$(field "$gs" stddev_ms) ms (σ)"
fi

# The cache table: ferryd beside Redis in memory and Redis with its append-only file.
CACHE_TABLE=$TMP/cache-table.md
crow() { printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$@" >>"$CACHE_TABLE"; }
or_dash() { if [[ -n $1 ]]; then echo "$1"; else echo "–"; fi; }
# cache_rows OP SHAPE DESCRIPTION: requests/s, latency and server CPU of one operation in one load shape.
cache_rows() {
    local f r a fo ro ao
    f=$(median "cache-$1-$2")
    r=$(median "redis-$1-$2")
    a=$(median "redis-aof-$1-$2")
    [[ -n $f || -n $r ]] || return 0
    fo=$(field "$f" ops_per_s) ro=$(field "$r" ops_per_s) ao=$(field "$a" ops_per_s)
    crow "**$3** requests/s" "$(or_dash "$(thousands "$fo")")" "$(or_dash "$(thousands "$ro")")" "$(ratio "$fo" "$ro")" \
        "$(or_dash "$(thousands "$ao")")" "$(ratio "$fo" "$ao")" \
        "range $(or_dash "$(spread "cache-$1-$2")") / $(or_dash "$(spread "redis-$1-$2")") / $(or_dash "$(spread "redis-aof-$1-$2")")"
    lat() { [[ -n $1 ]] && echo "$(field "$1" p50_us) / $(field "$1" p99_us)" || echo "–"; }
    latr() { [[ -n $2 ]] && echo "$(ratio "$(field "$1" p50_us)" "$(field "$2" p50_us)") / $(ratio "$(field "$1" p99_us)" "$(field "$2" p99_us)")" || echo "–"; }
    crow "… p50 / p99 µs" "$(lat "$f")" "$(lat "$r")" "$(latr "$f" "$r")" "$(lat "$a")" "$(latr "$f" "$a")" ""
    busy() { [[ -n $1 ]] && echo "$(field "$1" server_cpu_pct)%" || echo "–"; }
    cbusy() { [[ -n $1 ]] && echo "$(field "$1" client_cpu_pct)%" || echo "–"; }
    crow "… server CPU µs per request" "$(or_dash "$(cpu_per_request "$f")")" "$(or_dash "$(cpu_per_request "$r")")" \
        "$(ratio "$(cpu_per_request "$f")" "$(cpu_per_request "$r")")" "$(or_dash "$(cpu_per_request "$a")")" \
        "$(ratio "$(cpu_per_request "$f")" "$(cpu_per_request "$a")")" \
        "server core busy $(busy "$f") / $(busy "$r") / $(busy "$a"); client core $(cbusy "$f") / $(cbusy "$r") / $(cbusy "$a")"
    # The same shape with ferry-bench as Redis's client too (the 50-connection rows).
    r=$(median "redis-fb-$1-$2")
    a=$(median "redis-aof-fb-$1-$2")
    if [[ -n $r || -n $a ]]; then
        ro=$(field "$r" ops_per_s) ao=$(field "$a" ops_per_s)
        crow "… Redis driven by ferry-bench too (same client), requests/s" "$(or_dash "$(thousands "$fo")")" \
            "$(or_dash "$(thousands "$ro")")" "$(ratio "$fo" "$ro")" "$(or_dash "$(thousands "$ao")")" "$(ratio "$fo" "$ao")" \
            "p50 / p99 µs $(lat "$r") / $(lat "$a"); server CPU µs per request $(or_dash "$(cpu_per_request "$r")") / $(or_dash "$(cpu_per_request "$a")"); server core busy $(busy "$r") / $(busy "$a"); client core $(cbusy "$r") / $(cbusy "$a")"
    fi
}
{
    echo "| measure (median of $REPEATS runs) | Ferry | Redis, in memory | Ferry / Redis | Redis, AOF everysec | Ferry / Redis AOF | notes (Ferry / Redis / Redis AOF) |"
    echo "|---|---|---|---|---|---|---|"
} >"$CACHE_TABLE"
cache_rows set c50 "cache.set: 50 conns × 1 in flight"
cache_rows get c50 "cache.get: 50 conns × 1 in flight"
cache_rows set c1 "cache.set: 1 conn × 1 in flight"
cache_rows get c1 "cache.get: 1 conn × 1 in flight"
cache_rows set c50-p16 "cache.set: 50 conns × 16 pipelined"
cache_rows get c50-p16 "cache.get: 50 conns × 16 pipelined"
# The large-value rows: MB/s of acknowledged sets, beside Redis AOF everysec driven by the same client.
for size in "${LARGE_SIZES[@]}"; do
    f=$(median "cache-set-large-$size")
    a=$(median "redis-aof-fb-set-large-$size")
    [[ -n $f ]] || continue
    fo=$(field "$f" ops_per_s) ao=$(field "$a" ops_per_s)
    mb() { [[ -n $1 ]] && awk -v o="$1" -v s="${size%d}" 'BEGIN { printf "%.0f", o * s / 1e6 }'; }
    what="$(thousands "${size%d}")-byte values"
    [[ $size == *d ]] && what="$what, each bytes of its own"
    crow "**cache.set of $what, 2 conns × 1**, MB/s" "$(or_dash "$(mb "$fo")") ($(or_dash "$(thousands "$fo")") /s)" \
        "–" "–" "$(or_dash "$(mb "$ao")") ($(or_dash "$(thousands "$ao")") /s, same client)" "$(ratio "$fo" "$ao")" \
        "p50 / p99 µs $(field "$f" p50_us) / $(field "$f" p99_us) (Ferry), $(or_dash "$(field "$a" p50_us)") / $(or_dash "$(field "$a" p99_us)") (Redis AOF)"
done
# The Python client beside redis-py, same gets.
for t in 1 8; do
    f=$(median "py-ferry-t$t")
    r=$(median "py-redis-t$t")
    [[ -n $f && -n $r ]] || continue
    fo=$(field "$f" ops_per_s) ro=$(field "$r" ops_per_s)
    crow "**Python client, cache_get of 100 B, $t thread(s) on one client**, requests/s" "$(thousands "$fo")" \
        "$(thousands "$ro") (redis-py)" "$(ratio "$fo" "$ro")" "–" "–" \
        "p50 / p99 µs $(field "$f" p50_us) / $(field "$f" p99_us) (ferry) and $(field "$r" p50_us) / $(field "$r" p99_us) (redis-py); range $(spread "py-ferry-t$t") / $(spread "py-redis-t$t")"
done
HAS_CACHE_TABLE=$(($(wc -l <"$CACHE_TABLE") > 2))
CACHE_LEGEND="Cache: ${CACHE_VALUE_BYTES}-byte values, random keys out of ${CACHE_KEYS}; Ferry = ferry-bench cache-set / \
cache-get against ferryd, Redis = redis-benchmark ${REDIS_VERSION:-} -t set / get -d ${CACHE_VALUE_BYTES} -r ${CACHE_KEYS} \
-c N [-P 16] against redis-server (in memory: --appendonly no; AOF: --appendonly yes --appendfsync everysec; GET does \
not touch the AOF, so only SET runs there); \"same client\" rows: ferry-bench --redis sends the same SET / GET in RESP, \
so both servers face one load generator (redis-benchmark saturates the client core at -c 50). Fair pairs: cache.set vs Redis AOF (both acknowledge a write once it is \
in the kernel, so it survives the process being killed), cache.get vs Redis in memory. Client core busy near 100% \
means the load generator set the pace. ${REDIS_NOTE} ${PY_NOTE}"

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
    if [[ $HAS_CACHE_TABLE == 1 ]]; then
        echo
        cat "$CACHE_TABLE"
        echo
        echo "$CACHE_LEGEND"
    fi
    echo
    echo "## Every run"
    echo
    cat "$RESULTS"
} >"$OUT_DIR/latest.txt"

echo
cat "$TABLE"
echo
echo "$LEGEND"
if [[ $HAS_CACHE_TABLE == 1 ]]; then
    echo
    cat "$CACHE_TABLE"
    echo
    echo "$CACHE_LEGEND"
fi
log "written to $OUT_DIR/latest.txt"
