"""cache.* against a real ferryd from $FERRYD (PROTOCOL.md section 6): delete, namespaces, keys compared byte for
byte, list (prefix, paging, cursor) and clear."""

import random

from ferry import CacheKey

from .support.daemon import CacheDaemonCase, byte_order


class CacheKeysDaemonTests(CacheDaemonCase):
    """Delete, namespaces, keys, list and clear; in ``self.ns`` (see CacheDaemonCase)."""

    # ----- delete, namespaces, keys

    def test_delete(self):
        c, ns = self.client, self.ns
        c.cache_set("k", b"v", namespace=ns)
        self.assertIs(c.cache_delete("k", namespace=ns), True)
        self.assertIsNone(c.cache_get("k", namespace=ns))
        self.assertIs(c.cache_delete("k", namespace=ns), False)
        self.assertIs(c.cache_delete("never set", namespace=ns), False)

    def test_namespaces_isolate(self):
        c, a, b = self.client, self.ns + ".a", self.ns + ".b"
        key = "shared key " + self.ns
        c.cache_set(key, b"in a", namespace=a)
        c.cache_set(key, b"in b", namespace=b)
        c.cache_set(key, b"in default")
        self.assertEqual(c.cache_get(key, namespace=a).value, b"in a")
        self.assertEqual(c.cache_get(key, namespace=b).value, b"in b")
        self.assertEqual(c.cache_get(key).value, b"in default")
        self.assertEqual(c.cache_get(key, namespace="default").value, b"in default")   # the default's name
        self.assertIsNone(c.cache_get(key, namespace=self.ns + ".c"))
        self.assertIs(c.cache_set(key, b"x", namespace=b, if_absent=True), False)
        self.assertIs(c.cache_set(key, b"in c", namespace=self.ns + ".c", if_absent=True), True)
        self.assertIs(c.cache_delete(key, namespace=a), True)
        self.assertEqual(c.cache_get(key, namespace=b).value, b"in b")
        self.assertEqual(c.cache_get(key).value, b"in default")
        c.cache_set("only in a", b"1", namespace=a)
        self.assertEqual([k.key for k in c.cache_list(namespace=a)], ["only in a"])
        self.assertEqual([k.key for k in c.cache_list(namespace=b)], [key])
        self.assertEqual(c.cache_clear(namespace=b), 1)
        self.assertEqual(c.cache_get("only in a", namespace=a).value, b"1")
        self.assertEqual(c.cache_get(key).value, b"in default")
        self.assertIs(c.cache_delete(key, namespace="default"), True)
        self.assertIsNone(c.cache_get(key))

    def test_namespace_names(self):
        for ns in ["A-Za-z0-9._-", "x" * 128, "default", "-", "."]:
            with self.subTest(ns):
                key = f"k {self.ns}"
                self.assertIs(self.client.cache_set(key, ns.encode(), namespace=ns), True)
                self.assertEqual(self.client.cache_get(key, namespace=ns).value, ns.encode())
                self.assertIs(self.client.cache_delete(key, namespace=ns), True)

    def test_keys_compared_byte_for_byte(self):
        keys = ["\u00e9", "e\u0301", "k", "K", "k ", " k", "\u00e9\u0000", "a/b", "a%2Fb"]
        for i, key in enumerate(keys):
            self.client.cache_set(key, bytes([i]), namespace=self.ns)
        for i, key in enumerate(keys):
            self.assertEqual(self.client.cache_get(key, namespace=self.ns).value, bytes([i]), repr(key))
        self.assertEqual([k.key for k in self.client.cache_list(namespace=self.ns)], byte_order(keys))

    def test_key_length_is_counted_in_utf8_bytes(self):
        for key in ["k" * 1024, "\u00e9" * 512, "\U0001f600" * 256, "\u20ac" * 341 + "k"]:   # 1024 bytes each
            with self.subTest(len(key)):
                self.assertIs(self.client.cache_set(key, b"v", namespace=self.ns), True)
                self.assertEqual(self.client.cache_get(key, namespace=self.ns).value, b"v")
        for key in ["k" * 1025, "\u00e9" * 512 + "k", "\U0001f600" * 256 + "k"]:                 # 1025 bytes
            with self.subTest(len(key)):
                self.assertFerryError("invalid_argument", self.client.cache_set, key, b"v", namespace=self.ns)

    # ----- list and clear

    def test_list_prefix_and_paging(self):
        c, ns = self.client, self.ns
        wanted = [f"p/{i:03d}" for i in range(245)] + ["p/", "p/Z", "p/~", "p/\u00e9", "p/\U0001f600"]
        others = ["p", "o/1", "q/1", "P/1", "\u00e9"]
        self.assertEqual(len(wanted), 250)
        shuffled = wanted + others
        random.Random(7).shuffle(shuffled)
        for key in shuffled:
            c.cache_set(key, key.encode("utf-8") * 2, namespace=ns)
        expected = byte_order(wanted)

        pages, cursor = [], None
        while True:
            keys, cursor = c.cache_list_page(namespace=ns, prefix="p/", limit=100, cursor=cursor)
            pages.append(keys)
            if cursor is None:
                break
            self.assertIsInstance(cursor, str)
            self.assertLess(len(pages), 10, "cache.list keeps returning a cursor")
        self.assertEqual([len(p) for p in pages], [100, 100, 50])
        self.assertEqual([k.key for p in pages for k in p], expected)
        for p in pages:
            for item in p:
                self.assertEqual((item.size, item.expires_at), (2 * len(item.key.encode()), None), item)

        self.assertEqual([k.key for k in c.cache_list(namespace=ns, prefix="p/", limit=100)], expected)
        self.assertEqual([k.key for k in c.cache_list(namespace=ns, prefix="p/")], expected)
        self.assertEqual([k.key for k in c.cache_list(namespace=ns)], byte_order(wanted + others))
        self.assertEqual([k.key for k in c.cache_list(namespace=ns, prefix="p/\u00e9")], ["p/\u00e9"])
        self.assertEqual(list(c.cache_list(namespace=ns, prefix="nothing")), [])

    def test_list_default_limit_and_bounds(self):
        c, ns = self.client, self.ns
        for i in range(150):
            c.cache_set(f"k{i:03d}", b"", namespace=ns)
        keys, cursor = c.cache_list_page(namespace=ns)
        self.assertEqual(len(keys), 100)              # default limit
        self.assertIsNotNone(cursor)
        keys, cursor = c.cache_list_page(namespace=ns, cursor=cursor)
        self.assertEqual((len(keys), cursor), (50, None))
        keys, cursor = c.cache_list_page(namespace=ns, limit=1000)
        self.assertEqual((len(keys), cursor), (150, None))
        keys, cursor = c.cache_list_page(namespace=ns, limit=150)
        self.assertEqual((len(keys), cursor), (150, None))   # no cursor when nothing more follows
        keys, cursor = c.cache_list_page(namespace=ns, limit=1)
        self.assertEqual(([k.key for k in keys], cursor is None), (["k000"], False))

    def test_list_shows_size_and_expiry(self):
        c, ns = self.client, self.ns
        c.cache_set("a", b"12345", namespace=ns)
        c.cache_set("b", b"", namespace=ns, ttl_ms=60000)
        expires_at = c.cache_get("b", namespace=ns).expires_at
        self.assertEqual(list(c.cache_list(namespace=ns)), [CacheKey("a", 5, None), CacheKey("b", 0, expires_at)])

    def test_clear_returns_the_count(self):
        c, ns = self.client, self.ns
        for i in range(7):
            c.cache_set(f"k{i}", b"v", namespace=ns)
        c.cache_set("k0", b"again", namespace=ns)      # one entry, not two
        c.cache_set("kept", b"v", namespace=ns + ".other")
        self.assertEqual(c.cache_clear(namespace=ns), 7)
        self.assertEqual(list(c.cache_list(namespace=ns)), [])
        self.assertIsNone(c.cache_get("k3", namespace=ns))
        self.assertEqual(c.cache_clear(namespace=ns), 0)
        self.assertEqual(c.cache_get("kept", namespace=ns + ".other").value, b"v")
        self.assertEqual(c.cache_clear(namespace=ns + ".never.used"), 0)
        self.assertIs(c.cache_set("k0", b"new", namespace=ns), True)
        self.assertEqual(c.cache_get("k0", namespace=ns).value, b"new")
