#!/usr/bin/env python3
"""The Python client beside redis-py (bench/run.sh): THREADS threads share one client and each does GETs of one
100-byte value for SECONDS, against ferryd (ferry.Client.cache_get, one connection) or Redis (redis.Redis.get, its
connection pool: a connection per thread). Prints one `RESULT mode=LABEL ops_per_s=… p50_us=… p99_us=…` line.

    bench/pyclients.py ferry SOCKET THREADS SECONDS LABEL
    bench/pyclients.py redis SOCKET THREADS SECONDS LABEL
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Clients", "python"))


def main() -> None:
    side, socket_path, threads, seconds, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    value = b"x" * 100
    if side == "ferry":
        import ferry
        client = ferry.Client(socket_path, name="pyclients").connect()
        client.cache_set("key:000000000001", value)

        def get():
            return client.cache_get("key:000000000001").value
    else:
        import redis
        client = redis.Redis(unix_socket_path=socket_path, max_connections=threads + 1)
        client.set("key:000000000001", value)

        def get():
            return client.get("key:000000000001")

    for _ in range(200):                               # warm-up: connections, caches
        assert get() == value
    samples = [[] for _ in range(threads)]
    barrier = threading.Barrier(threads + 1)
    stop = [0.0]

    def worker(i: int) -> None:
        mine = samples[i]
        clock = time.perf_counter
        barrier.wait()
        while True:
            t0 = clock()
            if t0 >= stop[0]:
                return
            if get() != value:
                raise SystemExit("wrong value")
            mine.append(clock() - t0)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    start = time.perf_counter()
    stop[0] = start + seconds
    barrier.wait()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - start
    latencies = sorted(x for s in samples for x in s)
    n = len(latencies)
    p50 = latencies[n // 2] * 1e6
    p99 = latencies[min(n - 1, int(n * 0.99))] * 1e6
    print(f"RESULT mode={label} ops_per_s={n / elapsed:.0f} p50_us={p50:.1f} p99_us={p99:.1f} threads={threads} "
          f"requests={n} seconds={elapsed:.3f}")


if __name__ == "__main__":
    main()
