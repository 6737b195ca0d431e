"""cache.* against a real ferryd from $FERRYD (PROTOCOL.md section 6): invalid arguments, the stats counters,
concurrent clients, and ferryds of their own: one with 16 MiB frames for max_value_bytes, and a stop (SIGTERM)
and restart on the same --cache-dir."""

import os
import shutil
import tempfile
import threading
import time

from ferry import Client

from .support.daemon import (
    DEFAULT_MAX_VALUE_BYTES, MAX_TTL_MS, MIB, CacheDaemonCase, FerrydProcess, ferryd_binary,
)
from .support.helpers import run_threads


class CacheLimitsDaemonTests(CacheDaemonCase):
    """Invalid arguments, stats, concurrency, limits and restarts; in ``self.ns`` (see CacheDaemonCase)."""

    def other_daemon(self, cache_dir: str = None, extra_args=()) -> FerrydProcess:
        """A second ferryd in a temporary directory of its own (removed after the test), not yet started."""
        d = tempfile.mkdtemp(prefix="ferry-it-cache-")
        self.addCleanup(shutil.rmtree, d, True)
        daemon = FerrydProcess(ferryd_binary(), d, cache_dir=cache_dir, extra_args=extra_args)
        self.addCleanup(daemon.stop)
        return daemon

    # ----- invalid arguments

    def test_invalid_arguments(self):
        c, ns = self.client, self.ns
        bad_keys = ["", "k" * 1025, "\u00e9" * 512 + "k", 123, None, ["k"], {"k": 1}, True]
        bad_ttls = [0, -5, MAX_TTL_MS + 1, 1.5, 100.0, "100", True]
        bad_namespaces = ["", "a b", "x" * 129, "ns/x", "\u00fc", "tab\t", 5, ["default"]]
        cases = []
        for key in bad_keys:
            cases += [("cache.set", {"key": key}), ("cache.get", {"key": key}), ("cache.delete", {"key": key}),
                      ("cache.touch", {"key": key, "ttl_ms": 1000})]
        for ttl in bad_ttls:
            cases += [("cache.set", {"key": "k", "ttl_ms": ttl}), ("cache.touch", {"key": "k", "ttl_ms": ttl})]
        for namespace in bad_namespaces:
            for op in ["cache.set", "cache.get", "cache.delete", "cache.touch", "cache.list", "cache.clear"]:
                args = {"namespace": namespace}
                if op not in ("cache.list", "cache.clear"):
                    args["key"] = "k"
                if op == "cache.touch":
                    args["ttl_ms"] = 1000
                cases.append((op, args))
        cases += [
            ("cache.set", {}), ("cache.get", {}), ("cache.delete", {}), ("cache.touch", {"ttl_ms": 1000}),
            ("cache.touch", {"key": "k"}),                           # ttl_ms is required (null to never expire)
            ("cache.set", {"key": "k", "if_absent": "yes"}), ("cache.set", {"key": "k", "if_absent": 1}),
            ("cache.list", {"limit": 0}), ("cache.list", {"limit": 1001}), ("cache.list", {"limit": -1}),
            ("cache.list", {"limit": "10"}), ("cache.list", {"limit": 10.5}),
            ("cache.list", {"prefix": 5}), ("cache.list", {"cursor": 5}),
        ]
        for op, args in cases:
            args = {"namespace": ns, **args} if "namespace" not in args else args
            with self.subTest(op=op, args=repr(args)[:120]):
                self.assertFerryError("invalid_argument", c.call, op, args, b"value" if op == "cache.set" else b"")
        # nothing of it was stored, and the connection still works
        self.assertEqual(list(c.cache_list(namespace=ns)), [])
        self.assertIsNone(c.cache_get("k", namespace=ns))
        self.assertEqual(c.ping()[0], {"pong": True})

    def test_invalid_arguments_through_the_methods(self):
        c, ns = self.client, self.ns
        self.assertFerryError("invalid_argument", c.cache_set, "", b"v", namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_set, "k" * 1025, b"v", namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_set, "k", b"v", namespace=ns, ttl_ms=0)
        self.assertFerryError("invalid_argument", c.cache_set, "k", b"v", namespace=ns, ttl_ms=-5)
        self.assertFerryError("invalid_argument", c.cache_set, 42, b"v", namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_get, "", namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_get, 42, namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_delete, "k" * 1025, namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_touch, "k", 0, namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_touch, "k", -5, namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_list, namespace=ns, limit=0)
        self.assertFerryError("invalid_argument", c.cache_clear, namespace="no spaces")
        with self.assertRaises(TypeError):
            c.cache_set("k", 12, namespace=ns)
        self.assertIsNone(c.cache_get("k", namespace=ns))

    def test_stats_count_cache_operations(self):
        """stats.ops counts every operation the server knows (section 6), so the cache's too."""
        c, ns = self.client, self.ns
        before = c.stats()
        c.cache_set("k", b"v", namespace=ns)
        c.cache_get("k", namespace=ns)
        self.assertIsNone(c.cache_get("missing", namespace=ns))
        self.assertFerryError("invalid_argument", c.cache_get, "", namespace=ns)
        c.cache_touch("k", None, namespace=ns)
        list(c.cache_list(namespace=ns))
        c.cache_delete("k", namespace=ns)
        c.cache_clear(namespace=ns)
        after = c.stats()

        def delta(op, field):
            return after["ops"].get(op, {}).get(field, 0) - before["ops"].get(op, {}).get(field, 0)

        for op, requests, errors in [("cache.set", 1, 0), ("cache.get", 3, 2), ("cache.touch", 1, 0),
                                     ("cache.list", 1, 0), ("cache.delete", 1, 0), ("cache.clear", 1, 0)]:
            with self.subTest(op):
                self.assertEqual((delta(op, "requests"), delta(op, "errors")), (requests, errors), after["ops"])
        self.assertGreaterEqual(after["errors"].get("not_found", 0) - before["errors"].get("not_found", 0), 1)

    # ----- concurrency

    def test_concurrent_clients(self):
        errors, barrier = [], threading.Barrier(8)

        def worker(t):
            try:
                with Client(self.path, name=f"cache-worker-{t}", timeout=20) as c:
                    barrier.wait(10)
                    for i in range(40):
                        value = f"{t}:{i}".encode() * (i + 1)
                        c.cache_set(f"{t}/{i:02d}", value, namespace=self.ns)
                        self.assertEqual(c.cache_get(f"{t}/{i:02d}", namespace=self.ns).value, value)
                    self.assertEqual(len(list(c.cache_list(namespace=self.ns, prefix=f"{t}/"))), 40)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"worker {t}: {e!r}")

        run_threads(worker, 8, 60)
        self.assertEqual(errors, [])
        self.assertEqual(self.client.cache_clear(namespace=self.ns), 320)

    # ----- limits and restarts (daemons of their own)

    def test_max_value_bytes(self):
        """With frames big enough to carry it, a value over max_value_bytes is refused with resource_exhausted
        (and nothing stored); one of exactly max_value_bytes is stored."""
        daemon = self.other_daemon(extra_args=["--max-frame-bytes", str(DEFAULT_MAX_VALUE_BYTES + MIB)]).start()
        with Client(daemon.path, name="max-value-test", timeout=60) as c:
            limit = c.limits.get("max_value_bytes")
            self.assertEqual(limit, DEFAULT_MAX_VALUE_BYTES)
            self.assertFerryError("resource_exhausted", c.cache_set, "k", b"\x01" * (limit + 1))
            self.assertIsNone(c.cache_get("k"))
            c.cache_set("k", b"old")
            self.assertFerryError("resource_exhausted", c.cache_set, "k", b"\x02" * (limit + 1))
            self.assertEqual(c.cache_get("k").value, b"old", "a refused set replaced the old value")
            value = os.urandom(limit)
            self.assertIs(c.cache_set("k", value), True)
            entry = c.cache_get("k")
            self.assertEqual(entry.size, limit)
            self.assertTrue(entry.value == value, "the 16 MiB value came back altered")

    def test_restart_keeps_values(self):
        """Entries live in --cache-dir: after a clean stop (SIGTERM) a daemon on the same directory has them."""
        first = self.other_daemon().start()
        big = os.urandom(MIB)
        with Client(first.path, name="restart-test", timeout=20) as c:
            c.cache_set("all bytes", bytes(range(256)))
            c.cache_set("with ttl", b"ttl", ttl_ms=3600000)
            c.cache_set("k", b"other namespace", namespace="other")
            c.cache_set("deleted", b"gone")
            c.cache_delete("deleted")
            c.cache_set("replaced", b"old")
            c.cache_set("replaced", b"new")
            c.cache_set("expiring", b"x", ttl_ms=200)
            c.cache_set("big", big)
            c.cache_set("gone with clear", b"x", namespace="cleared")
            self.assertEqual(c.cache_clear(namespace="cleared"), 1)
            before = {key: c.cache_get(key) for key in ["all bytes", "with ttl", "replaced"]}
        status = first.stop()
        self.assertIsNotNone(status, "ferryd did not stop within 15 s of SIGTERM")
        time.sleep(0.4)

        # same cache directory; frames of the minimum size, so the 1 MiB value has to come in chunks
        second = self.other_daemon(cache_dir=first.cache_dir, extra_args=["--max-frame-bytes", "65536"]).start()
        with Client(second.path, name="restart-test-2", timeout=20) as c:
            for key, entry in before.items():
                self.assertEqual(c.cache_get(key), entry, key)
            self.assertEqual(c.cache_get("k", namespace="other").value, b"other namespace")
            self.assertIsNone(c.cache_get("deleted"))
            self.assertIsNone(c.cache_get("expiring"))
            self.assertEqual(list(c.cache_list(namespace="cleared")), [])
            entry = c.cache_get("big")
            self.assertEqual(entry.size, MIB)
            self.assertTrue(entry.value == big, "the 1 MiB value came back altered after the restart")
            chunks = [i for i in c.stream("cache.get", {"key": "big"}) if i[0] == "event" and i[1] == "chunk"]
            self.assertGreaterEqual(len(chunks), MIB // 65536)
            self.assertEqual(sorted(k.key for k in c.cache_list()),
                             sorted(["all bytes", "with ttl", "replaced", "big"]))
