"""``fetch`` against a real ferryd from $FERRYD (skipped when FERRYD is unset) and the test origin
Tests/Origin/ferry_origin.py, both started for the class on a temporary socket, cache directory and port, and
stopped by PID afterwards. Every test uses URLs of its own (a ``t=<test name>`` query parameter), so the daemon's
shared cache and the origin's counters (``/__count?url=``) never mix tests."""

import hashlib
import os
import shutil
import tempfile
import socket
import threading
import time
import urllib.parse

from ferry import Client, FetchResponse

from .support.helpers import FerryAssertions, run_threads
from .support.origin import DaemonWithOrigin, pattern


MB = 1000 * 1000


class FetchDaemonTests(FerryAssertions, DaemonWithOrigin):
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

    # ----- plain requests

    def test_a_stored_body_comes_as_a_descriptor(self):
        """A large hit is handed over as a descriptor (capability body_fd): read for ``body``, copied in the kernel
        for ``to=`` a file."""
        if not self.client.offers_body_fd:
            self.skipTest("this ferryd does not offer body_fd")
        target = self.target("/r", size=4 * MB, cc="max-age=600")
        first = self.client.fetch(self.url(target))
        self.assertEqual((first.status, len(first.body)), (200, 4 * MB))
        before = self.client.stats()["descriptors"]["sent"]
        out = os.path.join(tempfile.mkdtemp(prefix="ferry-fd-"), "body")
        self.addCleanup(shutil.rmtree, os.path.dirname(out), True)
        with open(out, "wb") as f:
            r = self.client.fetch(self.url(target), to=f)
        self.assertEqual(r.cache_status, "hit")
        with open(out, "rb") as f:
            self.assertTrue(f.read() == first.body)
        self.assertTrue(self.client.fetch(self.url(target)).body == first.body)
        self.assertEqual(self.client.stats()["descriptors"]["sent"], before + 2)
        self.assertEqual(self.origin.count(target), 1)


    def test_http_list_show_and_purge(self):
        """The HTTP cache from Python: a stored URL is listed and shown (headers, freshness; a credentialed copy
        by count only), and after a purge the next request is a miss."""
        c = self.client
        shared = self.url(self.target("/r", body="s", cc="max-age=600"))
        personal = self.url(self.target("/r", body="p", cc="max-age=600", h="Vary:Authorization"))
        c.fetch(shared)
        c.fetch(personal, headers={"Authorization": "Bearer x"})
        listed = {u["url"]: u for u in c.http_list(prefix=self.base + "/r?", limit=1)}
        self.assertEqual(listed[shared]["status"], 200)
        self.assertTrue(listed[shared]["fresh"])
        self.assertEqual(listed[personal]["partitions"], 1)
        shown = c.http_show(shared)
        self.assertEqual(shown["responses"][0]["lifetime_s"], 600)
        self.assertIn(["Cache-Control", "max-age=600"], shown["responses"][0]["headers"])
        self.assertIsNone(c.http_show(self.url(self.target("/nothing"))))
        self.assertEqual(c.http_purge(shared), 1)
        self.assertEqual(c.fetch(shared).cache_status, "miss")
        self.assertEqual(self.origin.count(self.target("/r", body="s", cc="max-age=600")), 2)
        self.assertEqual(c.http_purge(prefix=personal), 1)
        with self.assertRaises(ValueError):
            c.http_purge()

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

    def assertPutArrivesWhole(self, body: bytes):
        """PUTs ``body`` to the origin's /echo through the daemon; the origin must have got all of it."""
        r = self.client.fetch(self.url(self.target("/echo")), "PUT", {"Content-Type": "application/octet-stream"},
                              body)
        echo = r.json()
        self.assertEqual((echo["method"], echo["body_len"], echo["body_sha256"]),
                         ("PUT", len(body), hashlib.sha256(body).hexdigest()))

    def test_request_body_of_almost_a_frame(self):
        self.assertPutArrivesWhole(os.urandom(4 * 1024 * 1024 - 64 * 1024))   # one frame of at most 4 MiB

    # A request body larger than one frame travels in parts (PROTOCOL.md section 5) and reaches the origin whole.
    def test_request_body_larger_than_a_frame(self):
        self.assertPutArrivesWhole(os.urandom(6 * 1024 * 1024))   # sent to ferryd in parts (continuation frames)

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

    def test_a_body_goes_to_a_file_as_it_arrives(self):
        """``to=``: the body is written in pieces while the transfer runs (the first piece long before the slow
        origin is done); ``on_head`` comes before any of it."""
        import io
        size = 3_000_000
        target = self.target("/slow", size=size, chunks=6, interval_ms=200, cc="no-store")
        seen = []

        class File(io.BytesIO):
            def write(inner, b):
                seen.append(("piece", time.monotonic(), len(b)))
                return super().write(b)
        f = File()
        start = time.monotonic()
        r = self.client.fetch(self.url(target), to=f, on_head=lambda h: seen.append(("head", h.status, h.body)))
        end = time.monotonic()
        self.assertEqual((r.status, r.body), (200, b""))
        self.assertTrue(f.getvalue() == pattern(size), "the streamed body came back altered")
        self.assertEqual(seen[0], ("head", 200, b""))
        pieces = [e for e in seen[1:] if e[0] == "piece"]
        self.assertGreater(len(pieces), 1)
        self.assertLess(pieces[0][1] - start, (end - start) / 2, "the first piece came before the transfer ended")

    def test_on_head_can_refuse_before_a_byte_is_written(self):
        class Refused(Exception):
            pass

        def refuse(head):
            if head.status >= 400:
                raise Refused(head.status)
        written = []
        for target in [self.target("/r", status=404, body="gone"), self.target("/r", size=1_000_000, status=500)]:
            with self.subTest(target=target), self.assertRaises(Refused):
                self.client.fetch(self.url(target), to=written.append, on_head=refuse)
        self.assertEqual(written, [])
        self.assertEqual(self.client.fetch(self.url(self.target("/r"))).status, 200, "the connection goes on")

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
        run_threads(run, n, 60)
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
