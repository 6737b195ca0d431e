"""Tests of ``Client.fetch`` and ``FetchResponse`` (PROTOCOL.md section 6, "fetch").

    cd /work/main && FERRYD=/path/to/ferryd python3 -m unittest discover -s Clients/python -v

- FetchResponseTests: the response helpers; no daemon needed.
- FakeFetchTests: what ``fetch`` sends and how it reads replies, against the in-process stand-in of
  test_ferry_client.py (with a ``fetch`` handler added per test).
- FetchDaemonTests: a real ferryd from $FERRYD (skipped when FERRYD is unset) and the test origin
  Tests/Origin/ferry_origin.py, both started for the class on a temporary socket, cache directory and port, and
  stopped by PID afterwards. Every test uses URLs of its own (a ``t=<test name>`` query parameter), so the daemon's
  shared cache and the origin's counters (``/__count?url=``) never mix tests.
"""

import hashlib
import http.client
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ferry_client import Client, FerryError, FetchResponse  # noqa: E402
from test_ferry_client import FakeFerryd, FerrydProcess, ferryd_binary  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ORIGIN_SCRIPT = os.path.join(HERE, "..", "..", "Tests", "Origin", "ferry_origin.py")
MB = 1000 * 1000


def pattern(size: int) -> bytes:
    """The origin's deterministic body: byte i is i % 251."""
    return (bytes(range(251)) * (size // 251 + 1))[:size]


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


class FakeFetchTests(unittest.TestCase):
    """What ``fetch`` sends (the stand-in checks nothing and answers what ``self.reply`` says)."""

    RESULT = {"status": 200, "headers": [["Content-Type", "text/plain"], ["X-Two", "a"], ["X-Two", "b"]],
              "url": "http://example.test/final", "redirects": 1, "cache": {"status": "hit", "age_s": 12},
              "timing": {"total_ms": 0}}

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ferry-fake-fetch-")
        self.server = FakeFerryd(os.path.join(self.dir, "s.sock"))
        self.server.handlers["fetch"] = self.handle_fetch
        self.client = Client(self.server.path, name="fake-fetch-test", timeout=10).connect()
        self.events = []            # (name, data, body) sent before the final frame
        self.result = dict(self.RESULT)
        self.body = b"hello"
        self.error = None

    def tearDown(self):
        self.client.close()
        self.server.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def handle_fetch(self, conn, rid, args, body):
        for name, data, part in self.events:
            conn.send({"id": rid, "final": False, "event": name, "data": data}, part)
        if self.error is not None:
            return conn.fail(rid, *self.error)
        conn.send({"id": rid, "final": True, "result": self.result}, self.body)

    def sent(self):
        """(args, body) of every fetch the stand-in received."""
        return [(args, body) for op, args, body in self.server.requests_seen if op == "fetch"]

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
                          cache="no-store", request_timeout_ms=9000)
        self.assertEqual(self.sent(), [({"url": "http://example.test/a", "method": "PUT",
                                         "headers": [["X-A", "1"], ["X-A", "2"], ["Content-Type", "a/b"]],
                                         "timeout_ms": 500, "redirect": "manual", "max_redirects": 3,
                                         "max_bytes": 1000, "cache": "no-store"}, b"\x00\xff")])
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


# ============================================================================================ real daemon

def wait_for_ferryd_binary(seconds: float = 60.0) -> str:
    """``ferryd_binary()``, waiting a little when $FERRYD is set but briefly missing (being relinked)."""
    binary = os.environ.get("FERRYD")
    deadline = time.monotonic() + seconds
    while binary and not os.access(binary, os.X_OK) and time.monotonic() < deadline:
        time.sleep(1)
    return ferryd_binary()


class OriginProcess:
    """Tests/Origin/ferry_origin.py on 127.0.0.1 and a free port; stderr appended to ``log_path``."""

    def __init__(self, log_path: str):
        self.log_path = log_path
        self.proc = None
        self.port = None

    def start(self, seconds: float = 10.0, files: str = None) -> "OriginProcess":
        args = [sys.executable, ORIGIN_SCRIPT, "--port", "0"] + (["--files", files] if files else [])
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
        try:
            ready, _, _ = select.select([self.proc.stdout], [], [], seconds)
            line = self.proc.stdout.readline().decode() if ready else ""
            if not line.startswith("PORT "):
                raise AssertionError(f"the origin did not print PORT <n> within {seconds} s (got {line!r})")
            self.port = int(line.split()[1])
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        proc.stdout.close()

    def control(self, method: str, target: str) -> dict:
        """A control request (``/__count``, ``/__log``, ``/__reset``) straight to the origin, not via ferryd."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, target)
            reply = conn.getresponse()
            return json.loads(reply.read())
        finally:
            conn.close()

    def count(self, target: str) -> int:
        """How many requests the origin got for exactly this path and query."""
        return self.control("GET", "/__count?url=" + urllib.parse.quote(target, safe=""))["count"]

    def log(self, target: str) -> list:
        """The origin's log entries of requests for exactly this path and query."""
        path, _, query = target.partition("?")
        return [e for e in self.control("GET", "/__log") if e["path"] == path and e["query"] == query]


class DaemonWithOrigin(unittest.TestCase):
    """A real ferryd ($FERRYD) and the test origin (serving ``origin_files`` under /file/ when set), started once per
    test class and stopped by PID."""

    daemon = None
    origin = None
    origin_files = None

    @classmethod
    def setUpClass(cls):
        binary = wait_for_ferryd_binary()
        cls.dir = tempfile.mkdtemp(prefix="ferry-it-")
        try:
            cls.origin = OriginProcess(os.path.join(cls.dir, "origin.log")).start(files=cls.origin_files)
            cls.daemon = FerrydProcess(binary, cls.dir)
            cls.daemon.start()
            cls.base = f"http://127.0.0.1:{cls.origin.port}"
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.daemon is not None:
            cls.daemon.stop()
            cls.daemon = None
        if cls.origin is not None:
            cls.origin.stop()
            cls.origin = None
        shutil.rmtree(cls.dir, ignore_errors=True)


class FetchDaemonTests(DaemonWithOrigin):
    """``fetch`` against a real ferryd ($FERRYD) and the test origin."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            with Client(cls.daemon.path, name="fetch-probe", timeout=20) as c:
                if "fetch" not in c.operations:
                    raise AssertionError(f"FERRYD does not implement fetch (hello lists {c.operations})")
        except BaseException:
            cls.tearDownClass()
            raise

    def setUp(self):
        self.client = self.connect()

    def connect(self, name: str = "fetch-tests") -> Client:
        client = Client(self.daemon.path, name=name, timeout=30).connect()
        self.addCleanup(client.close)
        return client

    def target(self, path: str, **params) -> str:
        """``path?query`` for the origin, unique to this test (``t=<test name>`` last); a list value repeats the
        parameter."""
        pairs = list(params.items()) + [("t", self._testMethodName)]
        return path + "?" + urllib.parse.urlencode(pairs, doseq=True)

    def url(self, target: str) -> str:
        return self.base + target

    def assertFerryError(self, code, fn, *args, **kwargs) -> FerryError:
        with self.assertRaises(FerryError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.code, code, f"expected {code}, got {cm.exception}")
        return cm.exception

    # ----- plain requests

    def test_get_status_headers_body(self):
        target = self.target("/r", body="hello", ct="text/x-test", h=["X-Multi:a", "X-Multi:b"])
        r = self.client.fetch(self.url(target))
        self.assertEqual((r.status, r.ok, r.body, r.text()), (200, True, b"hello", "hello"))
        self.assertEqual(r.header("content-type"), "text/x-test")
        self.assertEqual(r.header_values("X-MULTI"), ["a", "b"])
        self.assertEqual(r.header("Server"), "FerryOrigin/1.0")
        self.assertEqual((r.url, r.redirects, r.cache_status), (self.url(target), 0, "miss"))
        self.assertIsInstance(r.timing.get("total_ms"), int)
        self.assertEqual(self.origin.count(target), 1)

    def test_json_body_helper(self):
        target = self.target("/r", body='{"a":[1,"é"]}', ct="application/json")
        self.assertEqual(self.client.fetch(self.url(target)).json(), {"a": [1, "é"]})

    def test_head(self):
        target = self.target("/bytes", size=1234)
        r = self.client.fetch(self.url(target), "HEAD")
        self.assertEqual((r.status, r.body), (200, b""))
        self.assertEqual(r.header("Content-Length"), "1234")
        self.assertEqual([e["method"] for e in self.origin.log(target)], ["HEAD"])

    def test_404_and_500_are_results(self):
        for status in (404, 500):
            with self.subTest(status=status):
                r = self.client.fetch(self.url(self.target("/r", status=status, body=f"status {status}")))
                self.assertEqual((r.status, r.ok, r.body), (status, False, f"status {status}".encode()))

    # ----- the cache

    def test_cacheable_response_is_a_hit_the_second_time(self):
        target = self.target("/r", body="cached", cc="max-age=60")
        first = self.client.fetch(self.url(target))
        second = self.connect("another client").fetch(self.url(target))
        self.assertEqual((first.cache_status, second.cache_status), ("miss", "hit"))
        self.assertEqual((second.status, second.body), (200, b"cached"))
        self.assertEqual(second.header("Cache-Control"), "max-age=60")
        self.assertIsInstance(second.age_s, int)
        self.assertIsNotNone(second.header("Age"))
        self.assertEqual(self.origin.count(target), 1)

    def test_uncacheable_response_goes_to_the_origin_each_time(self):
        target = self.target("/r", random=1)
        first, second = (self.client.fetch(self.url(target)) for _ in range(2))
        self.assertNotEqual(first.body, second.body)
        self.assertEqual(self.origin.count(target), 2)
        self.assertNotIn(second.cache_status, ("hit", "coalesced"))

    def test_cache_mode_no_store_bypasses(self):
        target = self.target("/r", body="x", cc="max-age=60")
        statuses = [self.client.fetch(self.url(target), cache="no-store").cache_status for _ in range(2)]
        self.assertEqual(statuses, ["bypass", "bypass"])
        self.assertEqual(self.origin.count(target), 2)
        r = self.client.fetch(self.url(target), cache="only-if-cached")
        self.assertEqual(r.status, 504, "no-store stored the response")

    def test_only_if_cached_on_an_unseen_url_is_504(self):
        target = self.target("/r", body="never fetched", cc="max-age=60")
        r = self.client.fetch(self.url(target), cache="only-if-cached")
        self.assertEqual(r.status, 504)
        self.assertFalse(r.ok)
        self.assertEqual(self.origin.count(target), 0)

    # ----- request bodies and headers

    def test_post_with_headers_and_binary_body_arrives_unchanged(self):
        target = self.target("/echo")
        body = bytes(range(256)) * 64 + b"\x00\r\n\xff"
        headers = [("X-Ferry-A", "1"), ("Content-Type", "application/octet-stream"), ("X-Ferry-B", "two words"),
                   ("X-Ferry-A", "3"), ("Authorization", "Bearer t0k3n")]
        r = self.client.fetch(self.url(target), "POST", headers, body)
        self.assertEqual(r.status, 200)
        echo = r.json()
        self.assertEqual((echo["method"], echo["body_len"], echo["body_sha256"]),
                         ("POST", len(body), hashlib.sha256(body).hexdigest()))
        names = {name.lower() for name, _ in headers}
        self.assertEqual([tuple(h) for h in echo["headers"] if h[0].lower() in names], headers)

    def test_lower_case_method_is_sent_upper_case(self):
        r = self.client.fetch(self.url(self.target("/echo")), "patch", {"Content-Type": "text/plain"}, b"p")
        self.assertEqual((r.json()["method"], r.json()["body"]), ("PATCH", "p"))

    def test_json_convenience(self):
        r = self.client.fetch(self.url(self.target("/echo")), "POST", json={"a": [1, "é"], "b": None})
        echo = r.json()
        self.assertEqual(echo["body"], '{"a":[1,"é"],"b":null}')
        self.assertEqual([v for k, v in echo["headers"] if k.lower() == "content-type"], ["application/json"])

    def test_body_without_content_type_gets_none_added(self):
        """The request headers are the client's (plus Host, Accept, Accept-Encoding and the framing fields): a body
        sent without a Content-Type must not acquire one, least of all a wrong
        ``application/x-www-form-urlencoded`` on binary data."""
        for method in ("POST", "PUT"):
            with self.subTest(method=method):
                r = self.client.fetch(self.url(self.target("/echo", m=method)), method, body=b"\x00\x01binary")
                echo = r.json()
                self.assertEqual(echo["body_len"], 8)
                self.assertEqual([v for k, v in echo["headers"] if k.lower() == "content-type"], [])

    def test_request_body_of_almost_a_frame(self):
        body = os.urandom(4 * 1024 * 1024 - 64 * 1024)   # one frame of at most max_frame_bytes (4 MiB)
        r = self.client.fetch(self.url(self.target("/echo")), "PUT", {"Content-Type": "application/octet-stream"},
                              body)
        echo = r.json()
        self.assertEqual((echo["method"], echo["body_len"], echo["body_sha256"]),
                         ("PUT", len(body), hashlib.sha256(body).hexdigest()))

    # A request body larger than one frame travels in parts (PROTOCOL.md section 5) and reaches the origin whole.
    def test_request_body_larger_than_a_frame(self):
        body = os.urandom(6 * 1024 * 1024)   # sent to ferryd in parts (continuation frames)
        r = self.client.fetch(self.url(self.target("/echo")), "PUT", {"Content-Type": "application/octet-stream"},
                              body)
        echo = r.json()
        self.assertEqual((echo["method"], echo["body_len"], echo["body_sha256"]),
                         ("PUT", len(body), hashlib.sha256(body).hexdigest()))

    # ----- redirects

    def test_redirects_are_followed(self):
        r = self.client.fetch(self.url(self.target("/redirect/3")))
        self.assertEqual((r.status, r.redirects, r.url, r.body), (200, 3, self.base + "/r", b"ok"))

    def test_too_many_redirects(self):
        self.assertFerryError("failed_precondition", self.client.fetch, self.url(self.target("/redirect/3")),
                              max_redirects=1)

    def test_redirect_manual_gives_the_3xx(self):
        target = self.target("/redirect/3")
        r = self.client.fetch(self.url(target), redirect="manual")
        self.assertEqual((r.status, r.redirects, r.url), (302, 0, self.url(target)))
        self.assertEqual(r.header("location"), "/redirect/2")

    def test_redirect_error(self):
        self.assertFerryError("failed_precondition", self.client.fetch, self.url(self.target("/redirect/1")),
                              redirect="error")

    # ----- errors

    def test_max_bytes(self):
        target = self.target("/bytes", size=100000, cc="max-age=60")
        err = self.assertFerryError("resource_exhausted", self.client.fetch, self.url(target), max_bytes=1000)
        self.assertEqual(err.details.get("max_bytes"), 1000)
        self.assertEqual(self.client.fetch(self.url(target), cache="only-if-cached").status, 504,
                         "a response over max_bytes was cached")
        self.assertEqual(len(self.client.fetch(self.url(target), max_bytes=100000).body), 100000)

    def test_bad_urls(self):
        for url in ["file:///etc/passwd", "ftp://x/", "http://", "http://127.0.0.1/a b", "http:// x/",
                    "example.com/relative", "http://user:pw@127.0.0.1/"]:
            with self.subTest(url=url):
                self.assertFerryError("invalid_argument", self.client.fetch, url)

    def test_bad_method_and_headers(self):
        url = self.url(self.target("/echo"))
        self.assertFerryError("invalid_argument", self.client.fetch, url, "BAD METHOD")
        self.assertFerryError("invalid_argument", self.client.fetch, url, headers={"Bad Name": "x"})
        self.assertFerryError("invalid_argument", self.client.fetch, url, headers={"X": "a\r\nInjected: 1"})
        self.assertFerryError("invalid_argument", self.client.fetch, url, "GET", body=b"a body")
        self.assertEqual(self.origin.count(self.target("/echo")), 0)

    def test_local_checks_send_nothing(self):
        with self.assertRaises(ValueError):
            self.client.fetch(self.url(self.target("/r")).encode())
        with self.assertRaises(ValueError):
            self.client.fetch(self.url(self.target("/r")), headers=[("X-A", 1)])
        self.assertEqual(self.origin.count(self.target("/r")), 0)
        self.assertEqual(self.client.fetch(self.url(self.target("/r"))).status, 200)

    def test_connection_refused(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        err = self.assertFerryError("unavailable", self.client.fetch, f"http://127.0.0.1:{port}/")
        self.assertIsInstance(err.details.get("curl_code"), int)
        self.assertIn("curl_message", err.details)

    def test_exchange_timeout(self):
        started = time.monotonic()
        self.assertFerryError("deadline_exceeded", self.client.fetch, self.url(self.target("/r", delay_ms=3000)),
                              timeout_ms=200)
        self.assertLess(time.monotonic() - started, 2.5)

    def test_request_timeout(self):
        started = time.monotonic()
        self.assertFerryError("deadline_exceeded", self.client.fetch, self.url(self.target("/r", delay_ms=3000)),
                              request_timeout_ms=200)
        self.assertLess(time.monotonic() - started, 2.5)

    # ----- response bodies

    def test_gzip_body_arrives_decoded(self):
        target = self.target("/gzip", size=20000)
        r = self.client.fetch(self.url(target))
        self.assertEqual(r.body, pattern(20000))
        self.assertIsNone(r.header("Content-Encoding"))
        self.assertEqual(r.header("Vary"), "Accept-Encoding")
        [entry] = self.origin.log(target)
        accept = [v for k, v in entry["headers"] if k.lower() == "accept-encoding"]
        self.assertTrue(accept and "gzip" in accept[0], f"the daemon did not ask for gzip: {entry['headers']}")

    def test_ten_megabyte_body(self):
        size = 10 * MB     # more than two frames of 4 MiB: chunk events, then the final frame
        r = self.client.fetch(self.url(self.target("/bytes", size=size)))
        self.assertEqual((r.status, len(r.body)), (200, size))
        self.assertTrue(r.body == pattern(size), "the 10 MB body came back altered")

    def test_progress_callback(self):
        target = self.target("/slow", size=3000, chunks=4, interval_ms=150)
        seen = []
        r = self.client.fetch(self.url(target), progress=lambda received, total: seen.append((received, total)))
        self.assertEqual(r.body, pattern(3000))
        self.assertGreaterEqual(len(seen), 2, seen)
        received = [n for n, _ in seen]
        self.assertEqual(received, sorted(received), seen)
        self.assertEqual(received[-1], 3000, seen)
        self.assertTrue(all(total in (None, 3000) for _, total in seen), seen)

    def test_progress_events_are_spaced(self):
        """PROTOCOL.md: progress events come "at most every 100 ms". Allowed here: one last event reporting the
        whole body sooner than that. Not allowed: events repeating the previous one within a few ms."""
        target = self.target("/slow", size=3000, chunks=4, interval_ms=150)
        events = []
        self.client.fetch(self.url(target), progress=lambda *a: events.append((time.monotonic(), a)))
        for (t0, a0), (t1, a1) in zip(events, events[1:]):
            if a1 == (3000, 3000) and a0 != a1:
                continue
            self.assertGreaterEqual(t1 - t0, 0.08, f"{a0} then {a1} after {1000 * (t1 - t0):.1f} ms: "
                                                   f"{[a for _, a in events]}")

    def test_progress_callback_exception_cancels(self):
        class Stop(Exception):
            pass

        def stop(received, total):
            raise Stop()
        with self.assertRaises(Stop):
            self.client.fetch(self.url(self.target("/slow", size=1000, chunks=10, interval_ms=100)), progress=stop)
        self.assertEqual(self.client.fetch(self.url(self.target("/r"))).status, 200)

    # ----- many clients at once

    def fetch_concurrently(self, target: str, n: int = 20) -> list:
        """``n`` threads, each with a Client of its own, fetch ``target`` at the same moment."""
        clients = [self.connect(f"concurrent-{i}") for i in range(n)]
        barrier = threading.Barrier(n)
        results = [None] * n

        def run(i):
            barrier.wait()
            try:
                results[i] = clients[i].fetch(self.url(target))
            except BaseException as e:     # noqa: B902 -- reported below
                results[i] = e
        threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        errors = [r for r in results if not isinstance(r, FetchResponse)]
        self.assertEqual(errors, [])
        return results

    def test_concurrent_cacheable_requests_are_coalesced(self):
        target = self.target("/slow", size=5000, chunks=4, interval_ms=150, cc="max-age=60")
        results = self.fetch_concurrently(target)
        self.assertEqual(self.origin.count(target), 1)
        statuses = [r.cache_status for r in results]
        self.assertIn("coalesced", statuses)
        self.assertEqual(statuses.count("miss"), 1, statuses)
        self.assertTrue(all(r.status == 200 and r.body == pattern(5000) for r in results))

    def test_concurrent_uncacheable_requests_are_not_shared(self):
        target = self.target("/slow", size=500, chunks=2, interval_ms=100, cc="no-store")
        results = self.fetch_concurrently(target)
        self.assertEqual(self.origin.count(target), 20)
        self.assertNotIn("coalesced", [r.cache_status for r in results])
        self.assertTrue(all(r.status == 200 and r.body == pattern(500) for r in results))


if __name__ == "__main__":
    unittest.main()
