"""What the cache_* methods send and how they read replies, against the in-process stand-in for ferryd
(support/fake_ferryd.py, which keeps a small cache of its own)."""

import os

from ferry import DEFAULT_MAX_FRAME_BYTES, CacheEntry, CacheKey, FerryError

from .support.fake_ferryd import FakeServerCase
from .support.helpers import FerryAssertions


class FakeCacheTests(FerryAssertions, FakeServerCase):
    """What the cache_* methods send and how they read the replies (the fake checks no arguments)."""

    def test_set_and_get_send_only_given_args(self):
        self.assertIs(self.client.cache_set("k", b"\x00v"), True)
        self.assertEqual(self.sent("cache.set"), [({"key": "k"}, b"\x00v")])
        entry = self.client.cache_get("k")
        self.assertEqual(entry, CacheEntry(b"\x00v", 2, 1700000000000, None))
        self.assertEqual((entry.value, entry.size, entry.created_at, entry.expires_at),
                         (b"\x00v", 2, 1700000000000, None))
        self.assertEqual(self.sent("cache.get"), [({"key": "k"}, b"")])

    def test_set_with_every_arg(self):
        self.assertIs(self.client.cache_set("k", bytearray(b"x"), namespace="ns", ttl_ms=5, if_absent=True), True)
        self.assertIs(self.client.cache_set("k", memoryview(b"y"), namespace="ns", ttl_ms=5, if_absent=True), False)
        self.assertEqual(self.sent("cache.set"),
                         [({"key": "k", "namespace": "ns", "ttl_ms": 5, "if_absent": True}, b"x"),
                          ({"key": "k", "namespace": "ns", "ttl_ms": 5, "if_absent": True}, b"y")])
        self.assertEqual(self.client.cache_get("k", namespace="ns").value, b"x")

    def test_value_must_be_bytes_or_str(self):
        for value in [5, None, [1, 2]]:
            with self.subTest(value=value), self.assertRaises(TypeError):
                self.client.cache_set("k", value)
        self.assertEqual(self.sent("cache.set"), [])
        self.client.cache_set("k", "tëxt")   # a str: its UTF-8 bytes
        self.assertEqual(self.sent("cache.set"), [({"key": "k"}, "tëxt".encode())])
        self.assertEqual(self.client.ping()[0], {"pong": True})

    def test_other_args_are_left_to_the_server(self):
        self.assertIsNone(self.client.cache_get(123))   # the fake has no key 123: a miss
        self.client.cache_set("", b"", namespace="bad ns", ttl_ms=0, if_absent="yes")
        self.assertEqual(self.sent("cache.get"), [({"key": 123}, b"")])
        self.assertEqual(self.sent("cache.set"),
                         [({"key": "", "namespace": "bad ns", "ttl_ms": 0, "if_absent": "yes"}, b"")])

    def test_large_value_sent_in_parts(self):
        value = os.urandom(2 * DEFAULT_MAX_FRAME_BYTES + 12345)
        self.assertIs(self.client.cache_set("k", value, namespace="ns", ttl_ms=5), True)
        self.assertTrue(self.sent("cache.set") == [({"key": "k", "namespace": "ns", "ttl_ms": 5}, value)])
        self.assertEqual([(op, more) for _, op, more, _ in self.server.frames_seen[-3:]],
                         [("cache.set", True), (None, True), (None, False)])
        self.server.get_chunk = 1 << 20
        self.assertTrue(self.client.cache_get("k", namespace="ns").value == value)

    def test_key_too_long_for_an_envelope_refused_locally(self):
        err = self.assertFerryError("resource_exhausted", self.client.cache_set, "k" * (1 << 20), b"z")
        self.assertIn("max_json_bytes", err.message)
        self.assertEqual(self.sent("cache.set"), [])
        self.assertIs(self.client.cache_set("k", b"z"), True)

    def test_get_joins_chunks(self):
        value = bytes(range(256)) * 10   # 2560 bytes: chunks at 0 and 1000, 560 in the final frame
        self.client.cache_set("big", value)
        entry = self.client.cache_get("big")
        self.assertEqual((entry.value, entry.size), (value, 2560))

    def test_get_absent(self):
        self.assertIsNone(self.client.cache_get("missing"))
        self.assertEqual(self.client.cache_get("missing", default=b"fallback"), b"fallback")
        self.assertIsNone(self.client.cache_get_or_none("missing"))
        self.client.cache_set("here", b"1")
        self.assertEqual(self.client.cache_get_or_none("here").value, b"1")

    def test_get_size_mismatch(self):
        self.client.cache_set("k", b"abc")
        self.server.lie_about_size = True
        self.assertFerryError("internal", self.client.cache_get, "k")
        self.assertFerryError("internal", self.client.cache_get_or_none, "k")   # only not_found becomes None

    def test_touch(self):
        self.client.cache_set("k", b"v")
        self.assertIsNone(self.client.cache_touch("k", None))
        self.assertEqual(self.client.cache_touch("k", 10, namespace="default"), 1700000000010)
        self.assertEqual([a for a, _ in self.sent("cache.touch")],
                         [{"key": "k", "ttl_ms": None}, {"key": "k", "namespace": "default", "ttl_ms": 10}])
        self.assertFerryError("not_found", self.client.cache_touch, "missing", 10)

    def test_touch_sends_json_null(self):
        frame = None
        original = self.client._write

        def spy(frames):   # the request's frames as (envelope, encoded JSON, body part)
            nonlocal frame
            frame = b"".join(data for _, data, _ in frames)
            original(frames)

        self.client._write = spy
        self.assertFerryError("not_found", self.client.cache_touch, "k", None)
        self.assertIn(b'"args":{"key":"k","ttl_ms":null}', frame)

    def test_delete(self):
        self.client.cache_set("k", b"v", namespace="a")
        self.assertIs(self.client.cache_delete("k"), False)            # other namespace
        self.assertIs(self.client.cache_delete("k", namespace="a"), True)
        self.assertIs(self.client.cache_delete("k", namespace="a"), False)
        self.assertEqual([a for a, _ in self.sent("cache.delete")],
                         [{"key": "k"}, {"key": "k", "namespace": "a"}, {"key": "k", "namespace": "a"}])

    def test_list_follows_the_cursor(self):
        keys = [f"p/{i:03d}" for i in range(250)] + ["p/Z", "p/é", "p/\U0001f600", "q/other"]
        for key in reversed(keys):
            self.client.cache_set(key, b"x" * len(key), namespace="ns")
        items = list(self.client.cache_list(namespace="ns", prefix="p/", limit=100))
        expected = sorted((k for k in keys if k.startswith("p/")), key=lambda k: k.encode())
        self.assertEqual([i.key for i in items], expected)
        self.assertEqual(items[0], CacheKey("p/000", 5, None))
        requests = [a for a, _ in self.sent("cache.list")]
        self.assertEqual(len(requests), 3)
        self.assertEqual(requests[0], {"namespace": "ns", "prefix": "p/", "limit": 100})
        self.assertEqual(requests[1], {"namespace": "ns", "prefix": "p/", "limit": 100, "cursor": expected[99]})
        self.assertEqual(requests[2]["cursor"], expected[199])

    def test_list_pages_lazily_but_first_page_at_once(self):
        for i in range(5):
            self.client.cache_set(f"k{i}", b"")
        it = self.client.cache_list(limit=2)
        self.assertEqual(len(self.sent("cache.list")), 1)       # the first page before the first next()
        self.assertEqual([next(it).key, next(it).key], ["k0", "k1"])
        self.assertEqual(len(self.sent("cache.list")), 1)
        self.assertEqual(next(it).key, "k2")
        self.assertEqual(len(self.sent("cache.list")), 2)
        self.assertEqual([i.key for i in it], ["k3", "k4"])
        self.assertEqual([a for a, _ in self.sent("cache.list")][0], {"limit": 2})

    def test_list_bad_args_raise_at_call(self):
        self.assertFerryError("invalid_argument", self.client.cache_list, limit=0)

    def test_list_empty_and_one_page(self):
        self.assertEqual(list(self.client.cache_list()), [])
        self.assertEqual(self.sent("cache.list"), [({}, b"")])
        self.client.cache_set("a", b"1")
        self.assertEqual(self.client.cache_list_page(), ([CacheKey("a", 1, None)], None))

    def test_list_stuck_cursor(self):
        for i in range(5):
            self.client.cache_set(f"k{i}", b"")
        self.server.stuck_cursor = True
        with self.assertRaises(FerryError) as cm:
            list(self.client.cache_list(limit=2))
        self.assertEqual(cm.exception.code, "internal")

    def test_clear(self):
        for i in range(3):
            self.client.cache_set(f"k{i}", b"", namespace="ns")
        self.client.cache_set("k", b"")
        self.assertEqual(self.client.cache_clear(namespace="ns"), 3)
        self.assertEqual(self.client.cache_clear(namespace="ns"), 0)
        self.assertEqual(self.client.cache_clear(), 1)
        self.assertEqual([a for a, _ in self.sent("cache.clear")], [{"namespace": "ns"}, {"namespace": "ns"}, {}])
