#!/usr/bin/env bash
# bench/fleet.sh — the fleet rows of `make bench` (issue 16): ferryd with Redis as its second tier (--l2).
#   (a) a Redis-tier hit (machine B reads what machine A fetched) beside a local memory hit on B, one connection,
#       one request at a time, 1 KB bodies (bench/fleet.py hits);
#   (b) 100 clients over three daemons asking one cold URL at once (the origin answers after 500 ms): requests the
#       origin saw, with the second tier (cross-machine coalescing) and without it (three separate caches).
# redis-server on a Unix socket, the test origin, the daemons on CPU 0, clients on CPU 1; everything stopped by PID.
#
# Environment: BUILD_DIR (.build), SKIP_BUILD (0), SWIFT_FLAGS, OUT_DIR (bench-results), FLEET_URLS (2000).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT_DIR=${OUT_DIR:-bench-results}
FLEET_URLS=${FLEET_URLS:-2000}
source bench/lib.sh
bench_tmp ferry-fleet
bench_binaries
bench_pinning
command -v redis-server >/dev/null 2>&1 || { echo "bench/fleet.sh needs redis-server (make deps)" >&2; exit 1; }

start_bg "${SERVER_CPU[@]}" redis-server --port 0 --unixsocket "$TMP/redis.sock" --save "" --appendonly no --dir "$TMP" --logfile "$TMP/redis.log"
wait_for redis test -S "$TMP/redis.sock"
start_bg "${SERVER_CPU[@]}" python3 Tests/Origin/ferry_origin.py --port 0 >"$TMP/origin.out" 2>"$TMP/origin.err"
wait_for origin grep -q '^PORT ' "$TMP/origin.out"
ORIGIN="http://127.0.0.1:$(sed -n 's/^PORT //p' "$TMP/origin.out" | head -1)"

daemon() {  # daemon NAME ARGS...: a ferryd on $TMP/NAME.sock
    local name=$1
    shift
    start_bg "${SERVER_CPU[@]}" "$BIN/ferryd" --no-config --socket "$TMP/$name.sock" --cache-dir "$TMP/$name" --log-level warn "$@" 2>"$TMP/$name.log"
    wait_for "ferryd $name" test -S "$TMP/$name.sock"
}

L2=(--l2 "redis+unix://$TMP/redis.sock")
daemon a "${L2[@]}"; daemon b "${L2[@]}"; daemon c "${L2[@]}"
daemon x; daemon y; daemon z
sleep 0.5   # the daemons connect to Redis

log "fleet: Redis-tier hits beside local hits ($FLEET_URLS URLs)"
HITS=$("${CLIENT_CPU[@]}" python3 bench/fleet.py hits "$TMP/a.sock" "$TMP/b.sock" "$ORIGIN" "$FLEET_URLS")
log "fleet: cold storms, with and without the second tier"
WITH=$("${CLIENT_CPU[@]}" python3 bench/fleet.py storm "$ORIGIN" "/r?body=storm-l2&cc=max-age%3D60&delay_ms=500" 100 "$TMP/a.sock" "$TMP/b.sock" "$TMP/c.sock")
WITHOUT=$("${CLIENT_CPU[@]}" python3 bench/fleet.py storm "$ORIGIN" "/r?body=storm-alone&cc=max-age%3D60&delay_ms=500" 100 "$TMP/x.sock" "$TMP/y.sock" "$TMP/z.sock")

field() { sed -n "s/.*mode=$1 .*$2=\([0-9]*\).*/\1/p" <<<"$3"; }
L2_OPS=$(field l2-hit ops_per_s "$HITS"); L2_P50=$(field l2-hit p50_us "$HITS"); L2_P99=$(field l2-hit p99_us "$HITS")
LO_OPS=$(field local-hit ops_per_s "$HITS"); LO_P50=$(field local-hit p50_us "$HITS"); LO_P99=$(field local-hit p99_us "$HITS")
TABLE=$(cat <<EOF
| fleet row | Ferry | reference | ratio |
|---|---|---|---|
| Redis-tier hit on B of what A fetched (1 KB, one connection) vs a local memory hit on B | $L2_OPS req/s, p50 $L2_P50 µs, p99 $L2_P99 µs | $LO_OPS req/s, p50 $LO_P50 µs, p99 $LO_P99 µs | $(python3 -c "print(f'{$L2_OPS/$LO_OPS:.2f}')") |
| cold storm, 100 clients over 3 daemons: origin requests with --l2 vs without | $(field storm origin_requests "$WITH") | $(field storm origin_requests "$WITHOUT") | — |
EOF
)
mkdir -p "$OUT_DIR"
{
    echo "## fleet (bench/fleet.sh), pinning: $PINNING"
    echo "$HITS"; echo "$WITH"; echo "$WITHOUT"
    echo
    echo "$TABLE"
} | tee "$OUT_DIR/fleet.txt"
