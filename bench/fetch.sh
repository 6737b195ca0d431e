#!/usr/bin/env bash
# bench/fetch.sh — the fetch rows of `make bench`, each beside a reference measured in the same run:
#   (a) cache hits: a 1 KB JSON through FerryClient, 50 concurrent clients (ferry-bench fetch --conns 50), beside
#       nginx serving the same file on loopback under wrk (-c 50);
#   (b) a 10 MB cached body through the socket (ferry-bench fetch --conns 1 --body socket), and as a descriptor read
#       into memory (--body read), mapped (--body map) or only held (--body fd), beside the raw Unix-socket limit (bench/rawpingpong.c
#       answering each request with 10 MB);
#   (c) 100 concurrent identical cold requests (ferry-bench fetch-storm): requests the origin saw;
#   (d) the miss path: `ferry fetch --cache no-store` of nginx's file beside `curl` straight to nginx (hyperfine);
#   (e)-(g) images (memory hits, variant memory hits, disk hits, peak RSS under budgets), (j) variants made per
#   second beside vipsthumbnail and ImageMagick; (h) a client that pipelines 64 cache.gets of a
#   16 MiB value and never reads: ferryd's RSS growth and a bystander's ping latency (bench/hostile.py); (i) a 1 GiB
#   miss streamed to a file by `ferry fetch -o` beside `curl -o`, and ferryd's peak RSS meanwhile; (j) a download
#   cut by the origin at 150 of 200 MiB, asked again: the bytes the origin sent each time.
# Servers (ferryd, nginx, rawpingpong, the test origin) run on CPU 0, clients on CPU 1; every process started here
# is stopped by PID on exit. nginx, wrk and hyperfine are installed with apt-get when missing (as root).
#
# Environment: BUILD_DIR (.build), SKIP_BUILD (0), SWIFT_FLAGS, BENCH_SECONDS (3, whole seconds: wrk -d), REPEATS (3), GIG_REPEATS (7: the 1 GiB
# row, below), OUT_DIR (bench-results),
# CC (cc).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-.build}
SKIP_BUILD=${SKIP_BUILD:-0}
BENCH_SECONDS=${BENCH_SECONDS:-3}
REPEATS=${REPEATS:-3}
OUT_DIR=${OUT_DIR:-bench-results}
CC=${CC:-cc}

source bench/lib.sh
bench_tmp ferry-fetch
bench_binaries
"$CC" -O2 -o "$TMP/rawpingpong" bench/rawpingpong.c

need=()
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || need+=(nginx-light)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v hyperfine >/dev/null 2>&1 || need+=(hyperfine)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v vipsthumbnail >/dev/null 2>&1 || need+=(libvips-tools)
[[ -x /usr/bin/mogrify ]] || need+=(imagemagick)
if [[ ${#need[@]} -gt 0 ]]; then
    [[ $(id -u) == 0 ]] || { echo "bench/fetch.sh needs ${need[*]} (apt-get install, as root)" >&2; exit 1; }
    log "installing ${need[*]} (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >"$TMP/apt.log" 2>&1 \
        || { apt-get update -qq >>"$TMP/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >>"$TMP/apt.log" 2>&1; } \
        || { cat "$TMP/apt.log" >&2; exit 1; }
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
bench_pinning
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- the files and nginx ---------------------------------------------------------------------------------------
mkdir -p "$TMP/www" "$TMP/nginx"
python3 - "$TMP/www" <<'EOF'
import json, sys
d = sys.argv[1]
quotes = [{"id": i, "quote_text": "Simplicity is prerequisite for reliability.", "author_name": "Edsger W. Dijkstra"} for i in range(9)]
body = json.dumps({"page": 1, "quotes": quotes}, separators=(",", ":"))
body = (body + " " * 1024)[:1024] if len(body) < 1024 else body[:1024]
open(d + "/quotes.json", "w").write(body)
open(d + "/big.bin", "wb").write(bytes(i % 251 for i in range(10_000_000)))
EOF
NGINX_PORT=$(free_port)
cat >"$TMP/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    default_type application/json;
    sendfile on;
    keepalive_requests 1000000;
    client_body_temp_path $TMP/nginx; proxy_temp_path $TMP/nginx; fastcgi_temp_path $TMP/nginx;
    uwsgi_temp_path $TMP/nginx; scgi_temp_path $TMP/nginx;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $TMP/www;
        location / { add_header Cache-Control "max-age=3600"; }
    }
}
EOF
start_bg "${SERVER_CPU[@]}" "$NGINX" -c "$TMP/nginx/nginx.conf" -p "$TMP/nginx"
NGINX_PID=$STARTED_PID
JSON_URL="http://127.0.0.1:$NGINX_PORT/quotes.json"
BIG_URL="http://127.0.0.1:$NGINX_PORT/big.bin"
wait_for nginx curl -sf "$JSON_URL"

SOCK=$TMP/ferryd.sock
start_bg "${SERVER_CPU[@]}" "$BIN/ferryd" --socket "$SOCK" --cache-dir "$TMP/cache" --log-level warn
FERRYD_PID=$STARTED_PID
wait_for ferryd test -S "$SOCK"
export FERRY_SOCKET=$SOCK FERRY_NO_AUTOSTART=1
"$BIN/ferry" fetch -s "$JSON_URL" >/dev/null
"$BIN/ferry" fetch -s "$BIG_URL" >/dev/null

RESULTS=$TMP/results.txt
: >"$RESULTS"
# measured PID LABEL COMMAND...: runs COMMAND, appends its RESULT line with the label and the server's CPU share.
measured() {
    local pid=$1 label=$2 c0 c1 t0 t1 out
    shift 2
    c0=$(cpu_ticks "$pid"); t0=$(date +%s%N)
    out=$("$@")
    t1=$(date +%s%N); c1=$(cpu_ticks "$pid")
    local pct
    pct=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) -v hz="$TICKS_PER_S" 'BEGIN { printf "%.0f", 100 * c / hz / (t / 1e9) }')
    grep '^RESULT' <<<"$out" | sed -e "s/^RESULT mode=[^ ]*/RESULT mode=$label/" -e "s/\$/ server_cpu_pct=$pct/" | tee -a "$RESULTS"
}
# wrk's --latency report as a RESULT line.
wrk_result() {
    awk '/Requests\/sec:/ { r = $2 }
         / 50% / { p50 = $2 } / 99% / { p99 = $2 }
         function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000; if (v ~ /s$/) return v * 1e6; return v }
         END { printf "RESULT mode=wrk ops_per_s=%d p50_us=%.1f p99_us=%.1f\n", r, us(p50), us(p99) }'
}

wrk_run() { "${CLIENT_CPU[@]}" wrk -t1 -c50 -d"${BENCH_SECONDS}s" --latency "$JSON_URL" | wrk_result; }

# The servers side by side under clients of one kind: wrk (one thread, an event loop) on nginx, ferry-bench fetch-raw
# (one thread, a poll loop, frames by hand, every reply checked) on ferryd. The FerryClient row is what an
# application pays: 50 clients, each with its reader thread, on the client's one core.
log "(a) 1 KB JSON cache hits, 50 clients: ferryd (fetch-raw, and FerryClient) and nginx (wrk), $REPEATS × ${BENCH_SECONDS}s"
for ((k = 1; k <= REPEATS; k++)); do
    measured "$FERRYD_PID" fetch-raw-1k "${CLIENT_CPU[@]}" "$BIN/ferry-bench" fetch-raw --socket "$SOCK" --url "$JSON_URL" \
        --conns 50 --seconds "$BENCH_SECONDS"
    measured "$NGINX_PID" nginx-1k wrk_run
    measured "$FERRYD_PID" fetch-hit-1k "${CLIENT_CPU[@]}" "$BIN/ferry-bench" fetch --socket "$SOCK" --url "$JSON_URL" \
        --conns 50 --seconds "$BENCH_SECONDS"
done

log "(b) 10 MB cached body, 1 client: ferryd vs the raw Unix-socket limit"
RAW_SOCK=$TMP/raw.sock
start_bg "${SERVER_CPU[@]}" "$TMP/rawpingpong" server "$RAW_SOCK" 100 10000000
RAW_PID=$STARTED_PID
wait_for rawpingpong test -S "$RAW_SOCK"
for ((k = 1; k <= REPEATS; k++)); do
    measured "$FERRYD_PID" fetch-hit-10m "${CLIENT_CPU[@]}" "$BIN/ferry-bench" fetch --socket "$SOCK" --url "$BIG_URL" \
        --conns 1 --seconds "$BENCH_SECONDS" --body socket
    measured "$FERRYD_PID" fetch-hit-10m-fd "${CLIENT_CPU[@]}" "$BIN/ferry-bench" fetch --socket "$SOCK" --url "$BIG_URL" \
        --conns 1 --seconds "$BENCH_SECONDS" --body read
    measured "$FERRYD_PID" fetch-hit-10m-map "${CLIENT_CPU[@]}" "$BIN/ferry-bench" fetch --socket "$SOCK" --url "$BIG_URL" \
        --conns 1 --seconds "$BENCH_SECONDS" --body map
    measured "$FERRYD_PID" fetch-hit-10m-held "${CLIENT_CPU[@]}" "$BIN/ferry-bench" fetch --socket "$SOCK" --url "$BIG_URL" \
        --conns 1 --seconds "$BENCH_SECONDS" --body fd
    measured "$RAW_PID" raw-10m "${CLIENT_CPU[@]}" "$TMP/rawpingpong" client "$RAW_SOCK" 100 10000000 seq "$BENCH_SECONDS" 1
done

log "(c) 100 concurrent identical cold requests"
ORIGIN_OUT=$TMP/origin.out
start_bg "${SERVER_CPU[@]}" python3 Tests/Origin/ferry_origin.py --port 0 >"$ORIGIN_OUT"
wait_for origin grep -q PORT "$ORIGIN_OUT"
ORIGIN_PORT=$(awk '/PORT/ { print $2 }' "$ORIGIN_OUT")
for ((k = 1; k <= REPEATS; k++)); do
    path="/slow?size=1024&chunks=2&interval_ms=200&cc=max-age%3D60&run=$k"
    out=$("${CLIENT_CPU[@]}" "$BIN/ferry-bench" fetch-storm --socket "$SOCK" --url "http://127.0.0.1:$ORIGIN_PORT$path" --conns 100)
    seen=$(curl -s "http://127.0.0.1:$ORIGIN_PORT/__count?path=/slow")
    count=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["count"])' "$seen")
    previous=$(grep -c 'mode=storm ' "$RESULTS" || true)
    grep '^RESULT' <<<"$out" | sed -e "s/^RESULT mode=[^ ]*/RESULT mode=storm/" -e "s/\$/ origin_requests=$((count - previous))/" | tee -a "$RESULTS"
done

log "(d) the miss path: ferry fetch --cache no-store vs curl, straight to nginx (hyperfine)"
hyperfine -N --warmup 20 --runs 200 --export-json "$TMP/miss.json" \
    -n "ferry fetch" "${CLIENT_CPU[*]} $BIN/ferry fetch -s --cache no-store $JSON_URL" \
    -n "curl" "${CLIENT_CPU[*]} curl -s $JSON_URL" >&2
python3 - "$TMP/miss.json" >>"$RESULTS" <<'EOF'
import json, sys
for r, label in zip(json.load(open(sys.argv[1]))["results"], ["miss-ferry", "miss-curl"]):
    print(f"RESULT mode={label} mean_ms={r['mean'] * 1000:.3f} median_ms={r['median'] * 1000:.3f} stddev_ms={r['stddev'] * 1000:.3f}")
EOF

# ---- images ----------------------------------------------------------------------------------------------------
python3 - "$TMP/www/photo.png" <<'EOF2'
import os, struct, sys, zlib
w, h = 128, 128   # random RGB pixels do not compress: a ~49 KB PNG, like a thumbnail or avatar
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
raw = b"".join(b"\x00" + os.urandom(3 * w) for _ in range(h))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
EOF2
IMG_URL="http://127.0.0.1:$NGINX_PORT/photo.png"
IMG_BYTES=$(stat -c %s "$TMP/www/photo.png")
"$BIN/ferry" image "$IMG_URL" --info >&2

log "(e) a $IMG_BYTES-byte image from the loader's memory, 50 clients, beside fetch's cache hit for the same bytes"
for ((k = 1; k <= REPEATS; k++)); do
    measured "$FERRYD_PID" image-memory "${CLIENT_CPU[@]}" "$BIN/ferry-bench" image --socket "$SOCK" --url "$IMG_URL" \
        --conns 50 --seconds "$BENCH_SECONDS"
    measured "$FERRYD_PID" fetch-hit-image "${CLIENT_CPU[@]}" "$BIN/ferry-bench" fetch --socket "$SOCK" --url "$IMG_URL" \
        --conns 50 --seconds "$BENCH_SECONDS"
    measured "$FERRYD_PID" image-variant-memory "${CLIENT_CPU[@]}" "$BIN/ferry-bench" image --socket "$SOCK" --url "$IMG_URL" \
        --variant 64x64:cover:webp --conns 50 --seconds "$BENCH_SECONDS"
done

# Variants made per second, beside the same library's own tool and ImageMagick's, each on one core: 100 different
# variants (widths 201…300, each shrunk on load by 4) of one 1600×1200 JPEG already in the loader's memory, through
# 2 clients (ferryd's 2 decoder threads share its core); vipsthumbnail and mogrify make 100 thumbnails 250 pixels
# wide of 100 copies of the file. (Widths 200…499 were measured first: a third of them shrink on load by 2 only,
# which made ferryd look 20 % slower than vipsthumbnail when it was the work that differed.)
log "(j) variants made per second: ferryd vs vipsthumbnail vs ImageMagick (mogrify -thumbnail), one core each"
mkdir -p "$TMP/thumbs/in" "$TMP/thumbs/vips" "$TMP/thumbs/magick"
/usr/bin/convert -seed 7 -size 1600x1200 plasma:fractal -quality 85 "$TMP/www/photo.jpg"
for i in $(seq 100); do cp "$TMP/www/photo.jpg" "$TMP/thumbs/in/p$i.jpg"; done
PHOTO_URL="http://127.0.0.1:$NGINX_PORT/photo.jpg?v=1"
timed_batch() {  # LABEL COMMAND...: 100 images, one RESULT line with images per second
    local label=$1 t0 t1
    shift
    t0=$(date +%s%N)
    "${SERVER_CPU[@]}" "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    awk -v t=$((t1 - t0)) -v l="$label" 'BEGIN { printf "RESULT mode=%s ops_per_s=%.1f seconds=%.3f images=100\n", l, 100 / (t / 1e9), t / 1e9 }' | tee -a "$RESULTS"
}
for ((k = 1; k <= REPEATS; k++)); do
    measured "$FERRYD_PID" variants-made "${CLIENT_CPU[@]}" "$BIN/ferry-bench" image --socket "$SOCK" \
        --url "$PHOTO_URL&run=$k" --variant "200x0:jpeg" --distinct-variants --count 100 --conns 2 --warmup 0
    timed_batch vipsthumbnail vipsthumbnail -s 250x250 -o "$TMP/thumbs/vips/%s.jpg" "$TMP/thumbs/in/"*.jpg
    timed_batch magick /usr/bin/mogrify -path "$TMP/thumbs/magick" -thumbnail 250x250 "$TMP/thumbs/in/"*.jpg
done

log "(f) disk hits after a restart: 2,000 distinct image URLs cached, ferryd restarted, each asked for once"
"${CLIENT_CPU[@]}" "$BIN/ferry-bench" image --socket "$SOCK" --url "$IMG_URL" --distinct --count 2000 --conns 50 --warmup 0 >/dev/null
kill "$FERRYD_PID"; wait "$FERRYD_PID" 2>/dev/null || true
start_bg "${SERVER_CPU[@]}" "$BIN/ferryd" --socket "$SOCK" --cache-dir "$TMP/cache" --log-level warn
FERRYD_PID=$STARTED_PID
wait_for ferryd test -S "$SOCK"
measured "$FERRYD_PID" image-disk "${CLIENT_CPU[@]}" "$BIN/ferry-bench" image --socket "$SOCK" --url "$IMG_URL" \
    --distinct --count 2000 --conns 50 --warmup 0

log "(g) peak RSS while 2,000 distinct images stream through, 64 MiB budgets (image loader and store memory tier)"
# restart_budgeted DIR: a fresh ferryd on cache directory DIR with 64 MiB budgets; its idle RSS in idle_kib.
restart_budgeted() {
    kill "$FERRYD_PID"; wait "$FERRYD_PID" 2>/dev/null || true
    start_bg "${SERVER_CPU[@]}" "$BIN/ferryd" --socket "$SOCK" --cache-dir "$1" --log-level warn \
        --image-memory-limit 64MiB --memory-limit 64MiB
    FERRYD_PID=$STARTED_PID
    wait_for ferryd test -S "$SOCK"
    idle_kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$FERRYD_PID/status")
}
restart_budgeted "$TMP/cache-rss"
measured "$FERRYD_PID" image-stream "${CLIENT_CPU[@]}" "$BIN/ferry-bench" image --socket "$SOCK" --url "$IMG_URL" \
    --distinct --count 2000 --conns 50 --warmup 0
peak_kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/$FERRYD_PID/status")
# What of it is the daemon's own memory (anonymous), beside the code of the libraries it maps (libvips brings ~13 MB).
anon_kib=$(awk '/^RssAnon:/ { print $2 }' "/proc/$FERRYD_PID/status")
image_stats=$("$BIN/ferry" stats --json | python3 -c 'import json, sys; i = json.load(sys.stdin)["image"]; print(i["bytes"], i["entries"], i["evictions"])')
echo "RESULT mode=image-rss idle_kib=$idle_kib peak_kib=$peak_kib anon_kib=$anon_kib loader_bytes_entries_evictions=${image_stats// /,}" | tee -a "$RESULTS"
# The same with a 64×64 WebP variant of each: 2,000 downloads, 2,000 decodes, 2,000 resizes.
restart_budgeted "$TMP/cache-rss-variants"
measured "$FERRYD_PID" variant-stream "${CLIENT_CPU[@]}" "$BIN/ferry-bench" image --socket "$SOCK" --url "$IMG_URL?variants=1" \
    --variant 64x64:cover:webp --distinct --count 2000 --conns 50 --warmup 0
echo "RESULT mode=variant-rss idle_kib=$idle_kib peak_kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/$FERRYD_PID/status") anon_kib=$(awk '/^RssAnon:/ { print $2 }' "/proc/$FERRYD_PID/status")" | tee -a "$RESULTS"

log "(h) a client pipelines 64 cache.gets of a 16 MiB value and never reads; a bystander pings (disk value, then memory)"
kill "$FERRYD_PID"; wait "$FERRYD_PID" 2>/dev/null || true
for tier in disk memory; do
    limit=(); [[ $tier == disk ]] && limit=(--memory-limit 0)
    start_bg "${SERVER_CPU[@]}" "$BIN/ferryd" --socket "$SOCK" --cache-dir "$TMP/cache-hostile-$tier" --log-level warn "${limit[@]}"
    FERRYD_PID=$STARTED_PID
    wait_for ferryd test -S "$SOCK"
    "${CLIENT_CPU[@]}" python3 bench/hostile.py "$SOCK" "$FERRYD_PID" | sed "s/mode=hostile-reader/mode=hostile-reader-$tier/" | tee -a "$RESULTS"
    kill "$FERRYD_PID"; wait "$FERRYD_PID" 2>/dev/null || true
done

log "(i) a streamed 1 GiB miss: ferry fetch --cache no-store -o FILE vs curl -o FILE, straight to nginx"
truncate -s 1G "$TMP/www/gig.bin"
GIG_URL="http://127.0.0.1:$NGINX_PORT/gig.bin"
start_bg "${SERVER_CPU[@]}" "$BIN/ferryd" --socket "$SOCK" --cache-dir "$TMP/cache-gig" --log-level warn
FERRYD_PID=$STARTED_PID
wait_for ferryd test -S "$SOCK"
idle_kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$FERRYD_PID/status")
seconds_of() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f", d / 1e9 }'; }
# One unmeasured download first: nginx's file just made has none of its pages cached, and whichever side ran first
# paid for reading them (the first ferry run took 3.6 s where the next took 1.1–1.6 s, curl never ran cold).
"${CLIENT_CPU[@]}" curl -s -o /dev/null "$GIG_URL"
# GIG_REPEATS rounds (7), not REPEATS: writing a gibibyte to the file system costs the writer 0.4 to 1.5 s of system
# time from one run to the next, on either side (the same build measured 1.04 to 1.87 s in a row, curl 1.18 to
# 1.99 s), so three rounds gave a median that moved by a fifth. Which side goes first alternates.
gig_ferry() {
    fs=$(seconds_of "${CLIENT_CPU[@]}" "$BIN/ferry" fetch -s --cache no-store "$GIG_URL" -o "$TMP/gig-ferry.bin")
    [[ $(stat -c %s "$TMP/gig-ferry.bin") == 1073741824 ]] || { echo "ferry fetch wrote $(stat -c %s "$TMP/gig-ferry.bin") bytes" >&2; exit 1; }
    rm -f "$TMP/gig-ferry.bin"
}
gig_curl() {
    cs=$(seconds_of "${CLIENT_CPU[@]}" curl -s -o "$TMP/gig-curl.bin" "$GIG_URL")
    rm -f "$TMP/gig-curl.bin"
}
for ((k = 1; k <= ${GIG_REPEATS:-7}; k++)); do
    if ((k % 2)); then gig_ferry; gig_curl; else gig_curl; gig_ferry; fi
    echo "RESULT mode=gig-ferry mb_per_s=$(awk -v s="$fs" 'BEGIN { printf "%.0f", 1073.741824 / s }') seconds=$fs" | tee -a "$RESULTS"
    echo "RESULT mode=gig-curl mb_per_s=$(awk -v s="$cs" 'BEGIN { printf "%.0f", 1073.741824 / s }') seconds=$cs" | tee -a "$RESULTS"
done
peak_kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/$FERRYD_PID/status")
echo "RESULT mode=gig-rss idle_kib=$idle_kib peak_kib=$peak_kib" | tee -a "$RESULTS"
kill "$FERRYD_PID"; wait "$FERRYD_PID" 2>/dev/null || true
rm -f "$TMP/www/gig.bin"

log "(j) a resumed download: 200 MiB cut by the origin at 150 MiB, then asked again: what the origin sent"
start_bg "${SERVER_CPU[@]}" "$BIN/ferryd" --socket "$SOCK" --cache-dir "$TMP/cache-resume" --log-level warn
FERRYD_PID=$STARTED_PID
wait_for ferryd test -S "$SOCK"
RESUME_URL="http://127.0.0.1:$ORIGIN_PORT/ranged?size=209715200&cut_at=157286400&cc=max-age%3D600"
"${CLIENT_CPU[@]}" "$BIN/ferry" fetch -s "$RESUME_URL" -o "$TMP/resume.bin" 2>/dev/null || true
sleep 1
rs=$(seconds_of "${CLIENT_CPU[@]}" "$BIN/ferry" fetch -s "$RESUME_URL" -o "$TMP/resume.bin")
sent=$(curl -s "http://127.0.0.1:$ORIGIN_PORT/__log" | python3 -c 'import json, sys; print(" ".join(str(e["sent"]) for e in json.load(sys.stdin) if e["path"] == "/ranged"))')
echo "RESULT mode=resume sent_bytes=${sent// /,} seconds=$rs size=$(stat -c %s "$TMP/resume.bin")" | tee -a "$RESULTS"
rm -f "$TMP/resume.bin"
kill "$FERRYD_PID"; wait "$FERRYD_PID" 2>/dev/null || true

# ---- the table -------------------------------------------------------------------------------------------------
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "–"; else printf "%.2f", a / b }'; }
by_key() { grep "mode=$1 " "$RESULTS" | awk -v k="$2" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { split($i, a, "="); print a[2], $0 } }' \
    | sort -n | awk -v n="$(grep -c "mode=$1 " "$RESULTS")" 'NR == int((n + 1) / 2) { $1 = ""; print substr($0, 2) }'; }
by_ops() { by_key "$1" ops_per_s; }
fh=$(by_ops fetch-hit-1k); fr=$(by_ops fetch-raw-1k); ng=$(by_ops nginx-1k); fb=$(by_ops fetch-hit-10m); rw=$(by_ops raw-10m)
fbd=$(by_ops fetch-hit-10m-fd); fbm=$(by_ops fetch-hit-10m-map); fbh=$(by_ops fetch-hit-10m-held)
raw_mb=$(awk -v o="$(field "$rw" ops_per_s)" 'BEGIN { printf "%.1f", o * 10 }')
fm=$(grep 'mode=miss-ferry ' "$RESULTS"); cm=$(grep 'mode=miss-curl ' "$RESULTS")
im=$(by_ops image-memory); fhi=$(by_ops fetch-hit-image); id=$(grep 'mode=image-disk ' "$RESULTS" | head -1)
ivm=$(by_ops image-variant-memory); vm=$(by_ops variants-made); vt=$(by_ops vipsthumbnail); mg=$(by_ops magick)
rs=$(grep 'mode=image-rss ' "$RESULTS"); vrs=$(grep 'mode=variant-rss ' "$RESULTS")
storms=$(grep 'mode=storm ' "$RESULTS" | sed -n 's/.* origin_requests=\([0-9]*\).*/\1/p' | tr '\n' ' ')
TABLE=$TMP/table.md
{
    echo "| measure (median of $REPEATS runs) | Ferry | reference | Ferry / reference |"
    echo "|---|---|---|---|"
    echo "| **(a) 1 KB JSON cache hit, 50 connections** requests/s (ferry-bench fetch-raw; wrk) | $(field "$fr" ops_per_s) | $(field "$ng" ops_per_s) (nginx + wrk) | $(ratio "$(field "$fr" ops_per_s)" "$(field "$ng" ops_per_s)") |"
    echo "| … p50 / p99 µs | $(field "$fr" p50_us) / $(field "$fr" p99_us) | $(field "$ng" p50_us) / $(field "$ng" p99_us) | $(ratio "$(field "$fr" p50_us)" "$(field "$ng" p50_us)") / $(ratio "$(field "$fr" p99_us)" "$(field "$ng" p99_us)") |"
    echo "| … server core busy | $(field "$fr" server_cpu_pct)% | $(field "$ng" server_cpu_pct)% | |"
    echo "| … through FerryClient, 50 clients (a reader thread each, one core) | $(field "$fh" ops_per_s) | $(field "$ng" ops_per_s) | $(ratio "$(field "$fh" ops_per_s)" "$(field "$ng" ops_per_s)") |"
    echo "| **(b) 10 MB cached body, 1 client**, through the socket, MB/s | $(field "$fb" mb_per_s) | $raw_mb (raw Unix socket) | $(ratio "$(field "$fb" mb_per_s)" "$raw_mb") |"
    echo "| … as a descriptor, read into memory | $(field "$fbd" mb_per_s) | $raw_mb | $(ratio "$(field "$fbd" mb_per_s)" "$raw_mb") |"
    echo "| … as a descriptor, mapped (every page touched) | $(field "$fbm" mb_per_s) | $raw_mb | $(ratio "$(field "$fbm" mb_per_s)" "$raw_mb") |"
    echo "| … as a descriptor, held (no byte read: the cost of handing the body on) | $(field "$fbh" mb_per_s) | $raw_mb | $(ratio "$(field "$fbh" mb_per_s)" "$raw_mb") |"
    echo "| **(c) 100 identical cold requests**: origin requests per round | $storms| 100 (no coalescing) | |"
    echo "| **(e) $IMG_BYTES-byte image, memory hit, 50 clients** images/s | $(field "$im" ops_per_s) ($(field "$im" mb_per_s) MB/s) | $(field "$fhi" ops_per_s) ($(field "$fhi" mb_per_s) MB/s, fetch cache hit) | $(ratio "$(field "$im" ops_per_s)" "$(field "$fhi" ops_per_s)") |"
    echo "| … p50 / p99 µs | $(field "$im" p50_us) / $(field "$im" p99_us) | $(field "$fhi" p50_us) / $(field "$fhi" p99_us) | |"
    echo "| … a 64×64 cover WebP variant of it, memory hit, images/s | $(field "$ivm" ops_per_s) | $(field "$im" ops_per_s) (the original, memory hit) | $(ratio "$(field "$ivm" ops_per_s)" "$(field "$im" ops_per_s)") |"
    echo "| **(j) variants made per second** (201–300 pixels wide, of a 1600×1200 JPEG, one core) | $(field "$vm" ops_per_s) | $(field "$vt" ops_per_s) (vipsthumbnail); $(field "$mg" ops_per_s) (ImageMagick mogrify) | $(ratio "$(field "$vm" ops_per_s)" "$(field "$vt" ops_per_s)") / $(ratio "$(field "$vm" ops_per_s)" "$(field "$mg" ops_per_s)") |"
    echo "| **(f) disk hits after a restart** (2,000 distinct images, 50 clients) images/s | $(field "$id" ops_per_s) ($(field "$id" mb_per_s) MB/s) | | |"
    echo "| **(g) peak RSS, 2,000 distinct images, 64 MiB budgets** | $(field "$rs" peak_kib) KiB (idle $(field "$rs" idle_kib) KiB; anonymous at the end $(field "$rs" anon_kib) KiB) | 2 × 65,536 KiB of budgets + 32 MiB = 163,840 KiB | |"
    echo "| … the same with a 64×64 WebP variant made of each | $(field "$vrs" peak_kib) KiB (idle $(field "$vrs" idle_kib) KiB; anonymous at the end $(field "$vrs" anon_kib) KiB) | 163,840 KiB | |"
    for tier in disk memory; do
        hr=$(grep "mode=hostile-reader-$tier " "$RESULTS")
        echo "| **(h) 64 unread cache.gets of 16 MiB ($tier)**: ferryd RSS growth; bystander ping p50 / p99 / max µs | $(field "$hr" rss_growth_kib) KiB; $(field "$hr" p50_us) / $(field "$hr" p99_us) / $(field "$hr" max_us) | budgets + 32 MiB; p99 < 20,000 µs | |"
    done
    gf=$(by_key gig-ferry mb_per_s); gc=$(by_key gig-curl mb_per_s); gr=$(grep 'mode=gig-rss ' "$RESULTS")
    echo "| **(i) streamed 1 GiB miss to a file** MB/s (median of ${GIG_REPEATS:-7} rounds); ferryd peak RSS | $(field "$gf" mb_per_s) (\`ferry fetch -o\`); $(field "$gr" peak_kib) KiB (idle $(field "$gr" idle_kib)) | $(field "$gc" mb_per_s) (\`curl -o\`) | $(ratio "$(field "$gf" mb_per_s)" "$(field "$gc" mb_per_s)") |"
    rr=$(grep 'mode=resume ' "$RESULTS")
    echo "| **(j) resumed download** (200 MiB, cut at 150 MiB): bytes the origin sent, first try, second | $(field "$rr" sent_bytes) (whole: $(field "$rr" size)) | 209,715,200 twice without resuming | |"
    echo "| **(d) miss path, whole process**: mean ms | $(field "$fm" mean_ms) (\`ferry fetch --cache no-store\`) | $(field "$cm" mean_ms) (\`curl\`) | $(ratio "$(field "$fm" mean_ms)" "$(field "$cm" mean_ms)") |"
} >"$TABLE"
mkdir -p "$OUT_DIR"
{ cat "$TABLE"; echo; echo "## Every run"; echo; cat "$RESULTS"; } >"$OUT_DIR/fetch.txt"
echo
cat "$TABLE"
log "written to $OUT_DIR/fetch.txt"
