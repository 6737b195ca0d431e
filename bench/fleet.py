#!/usr/bin/env python3
"""The fleet rows of `make bench` (bench/fleet.sh), through the Python client (one connection per thread):

    bench/fleet.py hits SOCK_A SOCK_B ORIGIN N
        A fetches N distinct fresh URLs (origin misses); then B fetches each once (a Redis-tier hit: B's memory and
        disk miss, Redis answers, B keeps it) and once more (a local memory hit). One RESULT line per kind, with
        requests per second (one connection, one request at a time) and latency percentiles.
    bench/fleet.py storm ORIGIN PATH CLIENTS SOCK...
        CLIENTS threads, spread over the daemons' sockets, ask one cold URL at once; prints the requests the
        origin saw for it.
"""
import json
import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Clients", "python"))
import ferry  # noqa: E402


def timed(client, urls, expect):
    samples = []
    start = time.perf_counter()
    for url in urls:
        t = time.perf_counter()
        r = client.fetch(url)
        samples.append(time.perf_counter() - t)
        if r.cache_status != expect:
            sys.exit(f"{url}: cache status {r.cache_status}, expected {expect}")
    elapsed = time.perf_counter() - start
    samples.sort()
    pct = lambda p: samples[min(len(samples) - 1, int(p * len(samples)))] * 1e6
    return len(urls) / elapsed, pct(0.50), pct(0.99)


def hits(sock_a, sock_b, origin, n):
    a = ferry.Client(sock_a, name="fleet-bench").connect()
    b = ferry.Client(sock_b, name="fleet-bench").connect()
    urls = [f"{origin}/r?body=fleet-{i:06d}-{'x' * 900}&cc=max-age%3D3600" for i in range(n)]
    for url in urls:
        a.fetch(url)
    time.sleep(1.0)   # A writes to Redis behind its replies
    for label, expect in (("l2-hit", "hit"), ("local-hit", "hit")):
        ops, p50, p99 = timed(b, urls, expect)
        print(f"RESULT mode={label} ops_per_s={ops:.0f} p50_us={p50:.0f} p99_us={p99:.0f}")
    l2 = b.stats()["l2"]
    print(f"RESULT mode=l2-counters hits={l2['hits']} misses={l2['misses']} timeouts={l2['timeouts']}")


def storm(origin, path, clients, sockets):
    conns = [ferry.Client(sockets[i % len(sockets)], name="fleet-storm").connect() for i in range(clients)]
    barrier = threading.Barrier(clients)
    failures = []

    def run(c):
        barrier.wait()
        r = c.fetch(origin + path)
        if r.status != 200:
            failures.append(r.status)

    threads = [threading.Thread(target=run, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    count = json.load(urllib.request.urlopen(origin + "/__count?url=" + urllib.parse.quote(path, safe="")))["count"]
    print(f"RESULT mode=storm clients={clients} daemons={len(sockets)} origin_requests={count} failures={len(failures)}")


if __name__ == "__main__":
    import urllib.parse
    if sys.argv[1] == "hits":
        hits(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        storm(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:])
