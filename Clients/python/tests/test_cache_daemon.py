"""cache.* against a real ferryd from $FERRYD (PROTOCOL.md section 6): what hello and describe announce, set and
get (large values in parts and chunks), expiry and touch."""

import os
import time

from ferry import CacheEntry, Client, encode_json

from .support.daemon import DEFAULT_MAX_VALUE_BYTES, MAX_TTL_MS, MIB, CacheDaemonCase, now_ms
from .support.helpers import run_threads


class CacheDaemonTests(CacheDaemonCase):
    """What the server announces, set / get, expiry and touch; in ``self.ns`` (see CacheDaemonCase)."""

    def assertCreatedNow(self, entry: CacheEntry, before: int, after: int):
        self.assertIsInstance(entry.created_at, int)
        self.assertTrue(before - 2000 <= entry.created_at <= after + 2000,
                        f"created_at {entry.created_at} is not between {before} and {after} (ms since the epoch)")

    # ----- what the server announces

    def test_hello_announces_max_value_bytes(self):
        self.assertEqual(self.client.limits.get("max_value_bytes"), DEFAULT_MAX_VALUE_BYTES, self.client.limits)

    def test_describe_lists_the_cache_operations(self):
        ops = {op["name"]: op for op in self.client.describe()["operations"]}
        expected_args = {
            "cache.set": {"key": True, "namespace": False, "ttl_ms": False, "if_absent": False},
            "cache.get": {"key": True, "namespace": False},
            "cache.delete": {"key": True, "namespace": False},
            "cache.touch": {"key": True, "namespace": False, "ttl_ms": True},
            "cache.list": {"namespace": False, "prefix": False, "limit": False, "cursor": False},
            "cache.clear": {"namespace": False},
        }
        expected_results = {
            "cache.set": {"stored"}, "cache.get": {"size", "created_at", "expires_at"}, "cache.delete": {"deleted"},
            "cache.touch": {"expires_at"}, "cache.list": {"keys", "cursor"}, "cache.clear": {"removed"},
        }
        # the spec's fields must all be there; more may be (section 9: new fields are optional), but a new
        # argument must not be required, or clients written from the spec would break
        for name, args in expected_args.items():
            with self.subTest(name):
                self.assertIn(name, ops)
                self.assertIn(name, self.client.operations)
                described = {a["name"]: a["required"] for a in ops[name]["args"]}
                self.assertEqual({a: described.get(a) for a in args}, args)
                self.assertEqual([a for a in described if a not in args and described[a]], [],
                                 "required arguments the spec does not have")
                self.assertLessEqual(expected_results[name], {r["name"] for r in ops[name]["result"]})

    # ----- set / get

    def test_round_trip_all_byte_values(self):
        value = bytes(range(256))
        before = now_ms()
        self.assertIs(self.client.cache_set("all bytes \u00e9\U0001f600", value, namespace=self.ns), True)
        entry = self.client.cache_get("all bytes \u00e9\U0001f600", namespace=self.ns)
        self.assertEqual((entry.value, entry.size, entry.expires_at), (value, 256, None))
        self.assertCreatedNow(entry, before, now_ms())
        self.assertEqual(self.client.cache_get("all bytes \u00e9\U0001f600", namespace=self.ns).value, value)

    def test_round_trip_one_mebibyte(self):
        value = os.urandom(MIB)
        self.assertIs(self.client.cache_set("big", value, namespace=self.ns), True)
        entry = self.client.cache_get("big", namespace=self.ns)
        self.assertEqual(entry.size, MIB)
        self.assertTrue(entry.value == value, "the 1 MiB value came back altered")

    def test_empty_value(self):
        self.assertIs(self.client.cache_set("empty", b"", namespace=self.ns), True)
        self.assertEqual(self.client.cache_get("empty", namespace=self.ns)[:2], (b"", 0))

    def test_value_of_the_largest_request_frame_comes_back_in_chunks(self):
        """The biggest value one cache.set frame can carry makes a cache.get reply over max_frame_bytes (its JSON,
        with ``final``, ``size`` and ``created_at``, is some 30 bytes longer than the request's), so it must come
        as chunk events (section 5) and be put together by the client. Key and namespace are kept short on purpose:
        the request's JSON must stay shorter than the reply's."""
        limit, key = self.client.limits["max_frame_bytes"], "\u00b6"   # default namespace, a key no one else uses
        try:
            # this is the Client's second request (hello was the first), so its id has one digit
            overhead = 8 + len(encode_json({"id": 2, "op": "cache.set", "args": {"key": key}}))
            value = os.urandom(limit - overhead)
            self.assertIs(self.client.cache_set(key, value), True)
            items = list(self.client.stream("cache.get", {"key": key}))
            chunks = [i for i in items if i[0] == "event" and i[1] == "chunk"]
            self.assertTrue(chunks, "a reply over max_frame_bytes came without chunk events")
            offset = 0
            for _, _, data, body in chunks:
                self.assertEqual(data.get("offset"), offset)
                offset += len(body)
            kind, result, last = items[-1]
            self.assertEqual((kind, result["size"]), ("final", len(value)))
            self.assertTrue(b"".join(c[3] for c in chunks) + last == value, "the chunked value came back altered")
            self.assertTrue(self.client.cache_get(key).value == value)
        finally:
            self.client.cache_delete(key)

    def test_ten_mebibyte_value_in_parts(self):
        """With the default limits a 10 MiB value is larger than a frame: it goes up in continuation frames
        (section 5) and comes back in chunk events."""
        value = os.urandom(10 * MIB)
        self.assertGreater(len(value), self.client.limits["max_frame_bytes"])
        self.assertIs(self.client.cache_set("ten", value, namespace=self.ns), True)
        entry = self.client.cache_get("ten", namespace=self.ns)
        self.assertEqual(entry.size, 10 * MIB)
        self.assertTrue(entry.value == value, "the 10 MiB value came back altered")
        self.assertEqual([k.size for k in self.client.cache_list(namespace=self.ns)], [10 * MIB])

    def test_value_over_max_value_bytes_in_parts(self):
        """Default frames: max_value_bytes + 1 in parts is refused by the server (nothing stored, an old value
        kept) and the connection goes on; exactly max_value_bytes is stored."""
        limit = self.client.limits["max_value_bytes"]
        self.assertFerryError("resource_exhausted", self.client.cache_set, "k", b"\x01" * (limit + 1),
                              namespace=self.ns)
        self.assertIsNone(self.client.cache_get("k", namespace=self.ns))
        self.assertEqual(self.client.ping(b"still there"), ({"pong": True}, b"still there"))
        self.client.cache_set("k", b"old", namespace=self.ns)
        self.assertFerryError("resource_exhausted", self.client.cache_set, "k", b"\x02" * (limit + 1),
                              namespace=self.ns)
        self.assertEqual(self.client.cache_get("k", namespace=self.ns).value, b"old",
                         "a refused set replaced the old value")
        value = os.urandom(limit)
        self.assertIs(self.client.cache_set("k", value, namespace=self.ns), True)
        self.assertTrue(self.client.cache_get("k", namespace=self.ns).value == value,
                        "the 16 MiB value came back altered")

    def test_large_values_from_many_threads_on_one_client(self):
        """The Client writes one request's parts back to back, so however many threads upload at once, the
        connection never has more bodies arriving than the server allows (4)."""
        errors = []
        values = {t: os.urandom(5 * MIB + t) for t in range(8)}

        def worker(t):
            try:
                self.client.cache_set(f"v{t}", values[t], namespace=self.ns)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"worker {t}: {e!r}")

        run_threads(worker, 8, 120)
        self.assertEqual(errors, [])
        for t, value in values.items():
            self.assertTrue(self.client.cache_get(f"v{t}", namespace=self.ns).value == value, f"v{t} altered")

    def test_set_replaces_value_and_ttl(self):
        self.client.cache_set("k", b"one", namespace=self.ns, ttl_ms=60000)
        self.assertIsNotNone(self.client.cache_get("k", namespace=self.ns).expires_at)
        self.assertIs(self.client.cache_set("k", b"two", namespace=self.ns), True)
        entry = self.client.cache_get("k", namespace=self.ns)
        self.assertEqual((entry.value, entry.expires_at), (b"two", None))

    def test_get_absent(self):
        self.assertIsNone(self.client.cache_get("never set", namespace=self.ns))
        self.assertEqual(self.client.cache_get("never set", namespace=self.ns, default=0), 0)
        self.assertIsNone(self.client.cache_get_or_none("never set", namespace=self.ns))
        # str values are stored as UTF-8; times in seconds.
        self.assertTrue(self.client.cache_set("text", "héllo", namespace=self.ns, ttl=60))
        entry = self.client.cache_get("text", namespace=self.ns)
        self.assertEqual((entry.value, entry.text), ("héllo".encode(), "héllo"))
        self.assertTrue(59_000 <= entry.expires_at - entry.created_at <= 60_000)
        with self.assertRaises(ValueError):
            self.client.cache_set("text", "x", namespace=self.ns, ttl=0)
        self.assertEqual(self.client.ping()[0], {"pong": True})

    def test_if_absent(self):
        c, ns = self.client, self.ns
        self.assertIs(c.cache_set("k", b"first", namespace=ns, if_absent=True), True)
        self.assertIs(c.cache_set("k", b"second", namespace=ns, if_absent=True), False)
        self.assertEqual(c.cache_get("k", namespace=ns).value, b"first")
        self.assertIs(c.cache_set("k", b"third", namespace=ns), True)          # without if_absent: replaced
        self.assertEqual(c.cache_get("k", namespace=ns).value, b"third")
        self.assertIs(c.cache_delete("k", namespace=ns), True)
        self.assertIs(c.cache_set("k", b"fourth", namespace=ns, if_absent=True), True)
        self.assertEqual(c.cache_get("k", namespace=ns).value, b"fourth")
        # only a live entry blocks if_absent
        self.assertIs(c.cache_set("t", b"short", namespace=ns, ttl_ms=200), True)
        self.assertIs(c.cache_set("t", b"blocked", namespace=ns, if_absent=True), False)
        time.sleep(0.4)
        self.assertIs(c.cache_set("t", b"after expiry", namespace=ns, if_absent=True), True)
        entry = c.cache_get("t", namespace=ns)
        self.assertEqual((entry.value, entry.expires_at), (b"after expiry", None))

    # ----- expiry and touch

    def test_ttl_expiry(self):
        c, ns = self.client, self.ns
        before = now_ms()
        self.assertIs(c.cache_set("k", b"soon gone", namespace=ns, ttl_ms=200), True)
        entry = c.cache_get("k", namespace=ns)
        self.assertEqual(entry.value, b"soon gone")
        self.assertIsInstance(entry.expires_at, int)
        self.assertTrue(before + 200 <= entry.expires_at <= now_ms() + 200 + 50,
                        f"expires_at {entry.expires_at} is not about 200 ms after the set ({before})")
        self.assertTrue(200 <= entry.expires_at - entry.created_at <= 250, entry)
        self.assertEqual([k.key for k in c.cache_list(namespace=ns)], ["k"])
        time.sleep(0.4)
        self.assertIsNone(c.cache_get("k", namespace=ns))
        self.assertEqual(list(c.cache_list(namespace=ns)), [], "an expired entry was listed")
        self.assertFerryError("not_found", c.cache_touch, "k", 60000, namespace=ns)
        self.assertIsNone(c.cache_get("k", namespace=ns))

    def test_long_ttl(self):
        before = now_ms()
        self.client.cache_set("k", b"v", namespace=self.ns, ttl_ms=MAX_TTL_MS)
        expires_at = self.client.cache_get("k", namespace=self.ns).expires_at
        self.assertTrue(before + MAX_TTL_MS <= expires_at <= now_ms() + MAX_TTL_MS + 50, expires_at)

    def test_touch(self):
        c, ns = self.client, self.ns
        c.cache_set("k", b"v", namespace=ns)
        self.assertIsNone(c.cache_get("k", namespace=ns).expires_at)
        before = now_ms()
        expires_at = c.cache_touch("k", 60000, namespace=ns)
        self.assertIsInstance(expires_at, int)
        self.assertTrue(before + 60000 <= expires_at <= now_ms() + 60000 + 50, expires_at)
        self.assertEqual(c.cache_get("k", namespace=ns).expires_at, expires_at)
        self.assertEqual([k.expires_at for k in c.cache_list(namespace=ns)], [expires_at])
        self.assertIsNone(c.cache_touch("k", None, namespace=ns))              # null: never expire
        entry = c.cache_get("k", namespace=ns)
        self.assertEqual((entry.value, entry.expires_at), (b"v", None))
        self.assertIsNotNone(c.cache_touch("k", 200, namespace=ns))            # a shorter ttl takes effect too
        time.sleep(0.4)
        self.assertIsNone(c.cache_get("k", namespace=ns))
        self.assertFerryError("not_found", c.cache_touch, "missing", 1000, namespace=ns)
        self.assertFerryError("not_found", c.cache_touch, "missing", None, namespace=ns)

    def test_incr_is_atomic_across_connections(self):
        """Eight threads, each on a connection of its own, increment one key 100 times: exactly 800, none lost;
        the counter reads as its decimal digits; a word is refused and left alone."""
        ns = self.ns

        def work(_):
            with Client(self.path, name="incr", timeout=20) as c:
                for _ in range(100):
                    c.cache_incr("hits", namespace=ns)
        run_threads(work, 8, timeout=60)
        self.assertEqual(self.client.cache_get("hits", namespace=ns).value, b"800")
        self.assertEqual(self.client.cache_incr("hits", -801, namespace=ns), -1)
        self.assertEqual(self.client.cache_incr("new", namespace=ns, ttl=60), 1)
        self.assertIsNotNone(self.client.cache_get("new", namespace=ns).expires_at)
        self.client.cache_set("word", "hello", namespace=ns)
        self.assertFerryError("failed_precondition", self.client.cache_incr, "word", namespace=ns)
        self.assertEqual(self.client.cache_get("word", namespace=ns).value, b"hello")
        with self.assertRaises(TypeError):
            self.client.cache_incr("hits", 1.5, namespace=ns)

    def test_touch_keeps_value_and_created_at(self):
        c, ns = self.client, self.ns
        c.cache_set("k", b"v" * 10, namespace=ns, ttl_ms=60000)
        first = c.cache_get("k", namespace=ns)
        time.sleep(0.02)
        c.cache_touch("k", 120000, namespace=ns)
        second = c.cache_get("k", namespace=ns)
        self.assertEqual((second.value, second.size, second.created_at), (first.value, 10, first.created_at))
        self.assertGreater(second.expires_at, first.expires_at)
