#!/usr/bin/env python3
"""bench/hostile.py SOCKET PID [--count 64] [--mib 16] [--pings 2000]: row (h) of `make bench`.

A client pipelines COUNT `cache.get`s of one MIB-MiB value and never reads its socket (issue 10, item 1's attack);
meanwhile a bystander pings the same ferryd one request at a time. Prints one RESULT line: ferryd's RSS before,
its peak growth while the attacker waits (VmRSS sampled after every ping), and the bystander's p50/p99/max.
"""
import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Clients", "python"))
from ferry import Client  # noqa: E402
from ferry.framing import encode_frame  # noqa: E402


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("pid", type=int)
    ap.add_argument("--count", type=int, default=64)
    ap.add_argument("--mib", type=int, default=16)
    ap.add_argument("--pings", type=int, default=2000)
    a = ap.parse_args()

    bystander = Client(a.socket, name="bystander")
    bystander.connect()
    bystander.cache_set("hostile-big", os.urandom(1 << 20) * a.mib)
    before = rss_kib(a.pid)

    attacker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    attacker.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    attacker.connect(a.socket)
    attacker.sendall(encode_frame({"id": 1, "op": "hello", "args": {"versions": [1]}}))
    frames = b"".join(encode_frame({"id": 100 + n, "op": "cache.get", "args": {"key": "hostile-big"}}) for n in range(a.count))
    attacker.sendall(frames)

    peak = before
    latencies = []
    for _ in range(a.pings):
        t = time.perf_counter()
        bystander.ping()
        latencies.append((time.perf_counter() - t) * 1e6)
        peak = max(peak, rss_kib(a.pid))
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    attacker.close()
    bystander.cache_delete("hostile-big")
    bystander.close()
    print(f"RESULT mode=hostile-reader gets={a.count} value_mib={a.mib} rss_before_kib={before} "
          f"rss_growth_kib={peak - before} bystander_pings={a.pings} p50_us={p(0.5):.0f} p99_us={p(0.99):.0f} "
          f"max_us={latencies[-1]:.0f}")


if __name__ == "__main__":
    main()
