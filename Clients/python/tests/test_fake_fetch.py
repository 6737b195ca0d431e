"""What ``fetch`` sends and how it reads replies, against the in-process stand-in for ferryd
(support/fake_ferryd.py, with a ``fetch`` handler added per test)."""

from ferry import FerryError, FetchResponse

from .support.fake_ferryd import FakeServerCase


class FakeFetchTests(FakeServerCase):
    """What ``fetch`` sends (the stand-in checks nothing and answers what ``self.reply`` says)."""

    RESULT = {"status": 200, "headers": [["Content-Type", "text/plain"], ["X-Two", "a"], ["X-Two", "b"]],
              "url": "http://example.test/final", "redirects": 1, "cache": {"status": "hit", "age_s": 12},
              "timing": {"total_ms": 0}}

    dir_prefix = "ferry-fake-fetch-"
    client_name = "fake-fetch-test"

    def setUp(self):
        super().setUp()
        self.server.handlers["fetch"] = self.handle_fetch
        self.events = []            # (name, data, body) sent before the final frame
        self.result = dict(self.RESULT)
        self.body = b"hello"
        self.error = None

    def handle_fetch(self, conn, rid, args, body):
        for name, data, part in self.events:
            conn.send({"id": rid, "final": False, "event": name, "data": data}, part)
        if self.error is not None:
            return conn.fail(rid, *self.error)
        conn.send({"id": rid, "final": True, "result": self.result}, self.body)

    def sent(self, op="fetch"):
        """(args, body) of every fetch the stand-in received."""
        return super().sent(op)

    def envelopes(self):
        return [e for e in self.server.envelopes_seen if e.get("op") == "fetch"]

    def test_minimal_request_and_reply(self):
        r = self.client.fetch("http://example.test/a")
        self.assertEqual(self.sent(), [({"url": "http://example.test/a"}, b"")])
        self.assertNotIn("timeout_ms", self.envelopes()[0])
        self.assertEqual(r, FetchResponse(200, [("Content-Type", "text/plain"), ("X-Two", "a"), ("X-Two", "b")],
                                          "http://example.test/final", 1, "hit", 12, {"total_ms": 0}, b"hello"))
        self.assertEqual(r.header_values("x-two"), ["a", "b"])

    def test_every_argument(self):
        self.client.fetch("http://example.test/a", "PUT", [("X-A", "1"), ("X-A", "2"), ("Content-Type", "a/b")],
                          b"\x00\xff", timeout_ms=500, redirect="manual", max_redirects=3, max_bytes=1000,
                          cache="no-store", request_timeout_ms=9000, retry=True)
        self.assertEqual(self.sent(), [({"url": "http://example.test/a", "method": "PUT",
                                         "headers": [["X-A", "1"], ["X-A", "2"], ["Content-Type", "a/b"]],
                                         "timeout_ms": 500, "redirect": "manual", "max_redirects": 3,
                                         "max_bytes": 1000, "cache": "no-store", "retry": True}, b"\x00\xff")])
        self.assertEqual(self.envelopes()[0]["timeout_ms"], 9000)

    def test_headers_as_dict_keep_their_order(self):
        self.client.fetch("http://example.test/", headers={"B": "2", "A": "1"})
        self.assertEqual(self.sent()[0][0]["headers"], [["B", "2"], ["A", "1"]])

    def test_empty_headers_are_left_out(self):
        self.client.fetch("http://example.test/", headers={})
        self.client.fetch("http://example.test/", headers=[])
        self.assertEqual([args for args, _ in self.sent()], [{"url": "http://example.test/"}] * 2)

    def test_values_are_left_to_the_daemon(self):
        self.client.fetch("ftp://nowhere", "bogus method", [("bad name", "a\r\nb")], cache="sometimes",
                          max_bytes=-1)
        self.assertEqual(self.sent(), [({"url": "ftp://nowhere", "method": "bogus method",
                                         "headers": [["bad name", "a\r\nb"]], "cache": "sometimes",
                                         "max_bytes": -1}, b"")])

    def test_json_body(self):
        self.client.fetch("http://example.test/", "POST", json={"a": [1, "é"], "b": None})
        self.client.fetch("http://example.test/", "POST", {"content-type": "application/vnd.x+json"}, json=[1])
        self.client.fetch("http://example.test/", "POST", json=None)
        (args1, body1), (args2, body2), (args3, body3) = self.sent()
        self.assertEqual(body1, '{"a":[1,"é"],"b":null}'.encode("utf-8"))
        self.assertEqual(args1["headers"], [["Content-Type", "application/json"]])
        self.assertEqual((args2["headers"], body2), ([["content-type", "application/vnd.x+json"]], b"[1]"))
        self.assertEqual(body3, b"null")

    def test_local_argument_checks(self):
        bad_calls = [
            ((b"http://example.test/",), {}),
            ((None,), {}),
            (("http://example.test/", 5), {}),
            (("http://example.test/",), {"headers": "X-A: 1"}),
            (("http://example.test/",), {"headers": [("X-A",)]}),
            (("http://example.test/",), {"headers": [("X-A", 1)]}),
            (("http://example.test/",), {"headers": {b"X-A": "1"}}),
            (("http://example.test/",), {"headers": [["X-A", None]]}),
            (("http://example.test/",), {"headers": 17}),
            (("http://example.test/", "POST"), {"body": "text"}),
            (("http://example.test/", "POST"), {"body": 12}),
            (("http://example.test/", "POST"), {"body": b"x", "json": {}}),
            (("http://example.test/", "POST"), {"json": float("nan")}),
            (("http://example.test/", "POST"), {"json": object()}),
            (("http://example.test/",), {"progress": True}),
        ]
        for args, kwargs in bad_calls:
            with self.subTest(args=args, kwargs=kwargs), self.assertRaises(ValueError):
                self.client.fetch(*args, **kwargs)
        self.assertEqual(self.sent(), [])
        self.assertEqual(self.client.fetch("http://example.test/").status, 200)

    def test_body_of_any_buffer_type_and_none(self):
        self.client.fetch("http://example.test/", "POST", body=bytearray(b"ab"))
        self.client.fetch("http://example.test/", "POST", body=memoryview(b"cd"))
        self.client.fetch("http://example.test/", "POST", body=None)
        self.assertEqual([body for _, body in self.sent()], [b"ab", b"cd", b""])

    def test_chunks_are_joined(self):
        self.events = [("chunk", {"offset": 0}, b"abc"), ("chunk", {"offset": 3}, b"defg")]
        self.body = b"hi"
        self.assertEqual(self.client.fetch("http://example.test/").body, b"abcdefghi")

    def test_progress(self):
        self.events = [("progress", {"received": 0}, b""), ("chunk", {"offset": 0}, b"abc"),
                       ("progress", {"received": 3, "total": 5}, b""), ("other", {"x": 1}, b""),
                       ("progress", {"bytes": 5, "total": 5}, b"")]   # section 5's generic name, also understood
        self.body = b"de"
        seen = []
        r = self.client.fetch("http://example.test/", progress=lambda *a: seen.append(a))
        self.assertEqual(seen, [(0, None), (3, 5), (5, 5)])
        self.assertEqual(r.body, b"abcde")
        self.assertEqual(self.sent()[0][0], {"url": "http://example.test/", "progress": True})

    def test_progress_not_asked_for_without_a_callback(self):
        self.events = [("progress", {"received": 1}, b"")]
        self.assertEqual(self.client.fetch("http://example.test/").body, b"hello")
        self.assertNotIn("progress", self.sent()[0][0])

    def test_error_reply(self):
        self.error = ("unavailable", "Couldn't connect to server")
        with self.assertRaises(FerryError) as cm:
            self.client.fetch("http://example.test/")
        self.assertEqual(cm.exception.code, "unavailable")

    def test_malformed_results(self):
        for result in [{}, {"status": "200"}, {"status": 200, "headers": {"A": "b"}},
                       {"status": 200, "headers": [["A"]]}, {"status": 200, "size": 99}]:
            self.result = result
            with self.subTest(result=result), self.assertRaises(FerryError) as cm:
                self.client.fetch("http://example.test/")
            self.assertEqual(cm.exception.code, "internal")

    def test_sparse_result(self):
        self.result = {"status": 204}
        r = self.client.fetch("http://example.test/x")
        self.assertEqual(r, FetchResponse(204, [], "http://example.test/x", 0, None, None, {}, b"hello"))
