# bench/lib.sh — what the bench scripts share (sourced, not run): a private temporary directory, processes started
# in the background and stopped by PID on any exit, waiting for a server to come up, the release binaries, and the
# pinning of servers and clients to separate cores.
#
#   source bench/lib.sh
#   bench_tmp ferry-fetch            # TMP=/tmp/ferry-fetch.XXXXXX, removed on exit with every process started
#   bench_binaries                   # builds release (unless SKIP_BUILD=1); sets BIN
#   start_bg "${SERVER_CPU[@]}" "$BIN/ferryd" ...; wait_for ferryd test -S "$SOCK"
#   c0=$(cpu_ticks "$pid")           # a process's CPU time so far, in ticks of TICKS_PER_S

log() { printf '== %s\n' "$*" >&2; }

# bench_tmp NAME: a short private directory (Unix socket paths must stay under 108 bytes) and the exit trap.
bench_tmp() {
    TMP=$(mktemp -d "/tmp/$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$TMP"
}

# Runs "$@" in the background, remembers its PID for cleanup; sets STARTED_PID.
start_bg() {
    "$@" &
    STARTED_PID=$!
    PIDS+=("$STARTED_PID")
}

# stop_bg PID: stops one process started with start_bg (SIGTERM, then waits for it) and forgets it.
stop_bg() {
    local pid=$1 keep=() p
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    for p in "${PIDS[@]}"; do [[ $p == "$pid" ]] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}

# cpu_ticks PID: user + system CPU time of a process so far, in clock ticks (TICKS_PER_S a second), from
# /proc/PID/stat; the fields after the command name, so a name with spaces cannot shift them.
TICKS_PER_S=$(getconf CLK_TCK)
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }

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

# bench_binaries: `swift build -c release` (plus SWIFT_FLAGS, into BUILD_DIR) unless SKIP_BUILD=1; sets BIN and checks
# that ferryd, ferry and ferry-bench are there.
bench_binaries() {
    local build_flags=(-c release) extra_flags=() exe
    read -ra extra_flags <<<"${SWIFT_FLAGS:-}"
    build_flags+=("${extra_flags[@]}")
    [[ ${BUILD_DIR:-.build} != .build ]] && build_flags+=(--scratch-path "$BUILD_DIR")
    if [[ ${SKIP_BUILD:-0} != 1 ]]; then
        log "swift build ${build_flags[*]}"
        swift build "${build_flags[@]}" >&2
    fi
    BIN=$(swift build "${build_flags[@]}" --show-bin-path)
    for exe in ferryd ferry ferry-bench; do
        [[ -x $BIN/$exe ]] || { echo "missing $BIN/$exe (build failed, or SKIP_BUILD=1 without a build)" >&2; exit 1; }
    done
}

# Servers on CPU 0, clients on CPU 1, so neither steals the other's core (when the machine allows it).
bench_pinning() {
    if command -v taskset >/dev/null 2>&1 && [[ $(nproc) -ge 2 ]] && taskset -c 0,1 true 2>/dev/null; then
        SERVER_CPU=(taskset -c 0)
        CLIENT_CPU=(taskset -c 1)
        PINNING="servers on CPU 0, clients on CPU 1 (taskset)"
    else
        SERVER_CPU=()
        CLIENT_CPU=()
        PINNING="none (taskset unavailable or fewer than 2 CPUs)"
    fi
}
