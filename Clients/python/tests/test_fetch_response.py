"""``FetchResponse`` and its helpers (ok, header, header_values, text, json, repr); no daemon needed."""

import unittest

from ferry import FetchResponse


def response(status=200, headers=(), url="http://example.test/", redirects=0, cache_status="miss", age_s=0,
             timing=None, body=b""):
    return FetchResponse(status, list(headers), url, redirects, cache_status, age_s, timing or {}, body)


# ============================================================================================ no daemon

class FetchResponseTests(unittest.TestCase):

    def test_fields(self):
        r = response(201, [("A", "1")], "http://x.test/a", 2, "hit", 7, {"total_ms": 3}, b"b")
        self.assertEqual((r.status, r.headers, r.url, r.redirects, r.cache_status, r.age_s, r.timing, r.body),
                         (201, [("A", "1")], "http://x.test/a", 2, "hit", 7, {"total_ms": 3}, b"b"))

    def test_header_lookup_is_case_insensitive_and_keeps_order(self):
        r = response(headers=[("Content-Type", "text/plain"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2"),
                              ("X-Empty", "")])
        self.assertEqual(r.header("content-type"), "text/plain")
        self.assertEqual(r.header("SET-COOKIE"), "a=1")
        self.assertEqual(r.header_values("Set-Cookie"), ["a=1", "b=2"])
        self.assertEqual(r.header("x-empty"), "")
        self.assertIsNone(r.header("missing"))
        self.assertEqual(r.header_values("missing"), [])

    def test_ok(self):
        for status, ok in [(199, False), (200, True), (204, True), (299, True), (300, False), (404, False),
                           (500, False)]:
            with self.subTest(status=status):
                self.assertIs(response(status).ok, ok)

    def test_text_and_json(self):
        r = response(body='{"a": [1, "é"]}'.encode("utf-8"))
        self.assertEqual(r.json(), {"a": [1, "é"]})
        self.assertEqual(r.text(), '{"a": [1, "é"]}')
        self.assertEqual(response(body="é".encode("latin-1")).text("latin-1"), "é")
        with self.assertRaises(UnicodeDecodeError):
            response(body=b"\xff").text()
        with self.assertRaises(ValueError):
            response(body=b"not json").json()

    def test_repr_is_short(self):
        text = repr(response(body=b"x" * 100000))
        self.assertLess(len(text), 300)
        self.assertIn("100000 bytes", text)
