"""Tests for ferry_origin.py: each test starts the origin as a subprocess and stops it by PID.

Run: python3 -m unittest discover -s Tests/Origin -v
"""

import email.utils
import gzip
import hashlib
import http.client
import json
import os
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

ORIGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ferry_origin.py")


def expected_pattern(n, offset=0):
    """The documented deterministic pattern: byte i is i % 251."""
    return bytes((i + offset) % 251 for i in range(n))


def start_origin(*args):
    """Start the origin; return (process, port) once it printed its PORT line."""
    proc = subprocess.Popen([sys.executable, ORIGIN, "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ready, _, _ = select.select([proc.stdout], [], [], 10)
    line = proc.stdout.readline().decode() if ready else ""
    if not line.startswith("PORT "):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"origin did not start: {line!r} {proc.stderr.read().decode()!r}")
    return proc, int(line.split()[1])


def stop_origin(proc, sig=signal.SIGTERM):
    """Signal the origin by PID, wait for it, and return its exit status."""
    if proc.poll() is None:
        os.kill(proc.pid, sig)
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
    finally:
        proc.stdout.close()
        proc.stderr.close()


class OriginTestCase(unittest.TestCase):
    """Starts a fresh origin (serving a temporary --files directory) for every test."""

    def setUp(self):
        self.files = tempfile.mkdtemp(prefix="ferry-origin-")
        with open(os.path.join(self.files, "data.json"), "w") as f:
            f.write('{"a": 1}')
        self.proc, self.port = start_origin("--files", self.files)

    def tearDown(self):
        status = stop_origin(self.proc)
        shutil.rmtree(self.files, ignore_errors=True)
        self.assertEqual(status, 0, "origin should exit cleanly on SIGTERM")

    def conn(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        self.addCleanup(c.close)
        return c

    def request(self, method, url, body=None, headers=None, conn=None):
        """One request; returns (response, body bytes)."""
        c = conn or self.conn()
        c.request(method, url, body=body, headers=headers or {})
        resp = c.getresponse()
        return resp, resp.read()

    def get(self, url, headers=None, conn=None):
        return self.request("GET", url, headers=headers, conn=conn)

    def get_json(self, url):
        resp, data = self.get(url)
        self.assertEqual(resp.status, 200, data)
        return json.loads(data)

    def count(self, **query):
        return self.get_json("/__count?" + urllib.parse.urlencode(query))["count"]

    def log(self):
        return self.get_json("/__log")


class ResponseTests(OriginTestCase):

    def test_r_defaults(self):
        resp, body = self.get("/r")
        self.assertEqual((resp.status, body), (200, b"ok"))
        self.assertEqual(resp.getheader("Content-Type"), "text/plain")
        self.assertEqual(resp.getheader("Content-Length"), "2")
        date = email.utils.parsedate_to_datetime(resp.getheader("Date"))
        self.assertLess(abs(date.timestamp() - time.time()), 5)

    def test_r_headers(self):
        lm = "Wed, 21 Oct 2015 07:28:00 GMT"
        query = urllib.parse.urlencode([
            ("status", "203"), ("body", "hello world"), ("ct", "text/html; charset=utf-8"),
            ("cc", "max-age=60"), ("cc", "public"), ("expires", "Thu, 01 Jan 2099 00:00:00 GMT"), ("lm", lm),
            ("etag", 'W/"v1"'), ("vary", "Accept"), ("age", "7"), ("pragma", "no-cache"), ("location", "/x"),
            ("content_location", "/y"), ("h", "X-One: 1"), ("h", "X-Two:2"), ("date", "Mon, 01 Jan 2001 00:00:00 GMT"),
            ("unknown", "ignored")])
        resp, body = self.get("/r?" + query)
        self.assertEqual((resp.status, body), (203, b"hello world"))
        h = resp.headers
        self.assertEqual(h.get_all("Cache-Control"), ["max-age=60", "public"])
        self.assertEqual(h["Content-Type"], "text/html; charset=utf-8")
        self.assertEqual(h["Expires"], "Thu, 01 Jan 2099 00:00:00 GMT")
        self.assertEqual(h["Last-Modified"], lm)
        self.assertEqual(h["ETag"], 'W/"v1"')
        self.assertEqual((h["Vary"], h["Age"], h["Pragma"]), ("Accept", "7", "no-cache"))
        self.assertEqual((h["Location"], h["Content-Location"]), ("/x", "/y"))
        self.assertEqual((h["X-One"], h["X-Two"]), ("1", "2"))
        self.assertEqual(h.get_all("Date"), ["Mon, 01 Jan 2001 00:00:00 GMT"])
        resp, _ = self.get("/r?date=omit")
        self.assertIsNone(resp.getheader("Date"))

    def test_r_fail_first(self):
        """The first K requests of the exact URL fail with fail_status (503 by default), the rest answer as asked;
        another query is another URL."""
        statuses = [self.get("/r?fail_first=2&body=x&h=Retry-After:1")[0].status for _ in range(3)]
        self.assertEqual(statuses, [503, 503, 200])
        resp, body = self.get("/r?fail_first=1&fail_status=429&body=y")
        self.assertEqual((resp.status, body), (429, b"failing"))
        self.assertEqual(self.get("/r?fail_first=1&fail_status=429&body=y")[1], b"y")
        self.assertEqual(self.get("/r?fail_first=2&body=x&h=Retry-After:1")[0].getheader("Retry-After"), "1")

    def test_r_size_pattern(self):
        resp, body = self.get("/r?size=70000")
        self.assertEqual(body, expected_pattern(70000))
        self.assertEqual(resp.getheader("Content-Length"), "70000")
        resp, body = self.get("/r?size=0")
        self.assertEqual((resp.getheader("Content-Length"), body), ("0", b""))

    def test_ranged(self):
        resp, body = self.get("/ranged?size=1000&tag=e1")
        self.assertEqual((resp.status, resp.getheader("ETag"), resp.getheader("Accept-Ranges")), (200, '"e1"', "bytes"))
        self.assertEqual(body, expected_pattern(1000))
        resp, body = self.get("/ranged?size=1000&tag=e1", {"Range": "bytes=900-"})
        self.assertEqual((resp.status, resp.getheader("Content-Range")), (206, "bytes 900-999/1000"))
        self.assertEqual(body, expected_pattern(1000)[900:])
        resp, body = self.get("/ranged?size=1000", {"Range": "bytes=-10"})
        self.assertEqual((resp.status, body), (206, expected_pattern(1000)[990:]))
        resp, body = self.get("/ranged?size=1000&tag=e2", {"Range": "bytes=900-", "If-Range": '"e1"'})
        self.assertEqual((resp.status, len(body)), (200, 1000), "another validator: the whole body")
        resp, _ = self.get("/ranged?size=1000", {"Range": "bytes=2000-"})
        self.assertEqual((resp.status, resp.getheader("Content-Range")), (416, "bytes */1000"))
        self.assertEqual([e["sent"] for e in self.log() if e["path"] == "/ranged"], [1000, 100, 10, 1000, None])

    def test_early_hints(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(b"GET /early?body=hi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        self.assertTrue(data.startswith(b"HTTP/1.1 103"), data[:40])
        self.assertIn(b"Link: </hint.css>; rel=preload", data)
        self.assertIn(b"HTTP/1.1 200", data)
        self.assertTrue(data.endswith(b"hi"))

    def test_ranged_cut(self):
        c = self.conn()
        c.request("GET", "/ranged?size=5000000&cut_at=3000000")
        resp = c.getresponse()
        with self.assertRaises(http.client.IncompleteRead) as cm:
            resp.read()
        self.assertEqual(len(cm.exception.partial), 3000000)
        self.assertEqual([e["sent"] for e in self.log() if e["path"] == "/ranged"], [3000000])

    def test_r_random(self):
        bodies = [self.get("/r?random=1&body=x")[1].decode() for _ in range(3)]
        self.assertEqual(len(set(bodies)), 3)
        for serial, text in enumerate(bodies, start=1):
            word, token, number = text.split(" ")
            self.assertEqual(word, "x")
            self.assertRegex(token, r"^token=[0-9a-f]{16}$")
            self.assertEqual(number, f"serial={serial}")

    def test_r_no_body_statuses(self):
        for status in (204, 304):
            resp, body = self.get(f"/r?status={status}&etag=%22a%22")
            self.assertEqual((resp.status, body), (status, b""))
            self.assertIsNone(resp.getheader("Content-Length"))
            self.assertEqual(resp.getheader("ETag"), '"a"')

    def test_if_none_match(self):
        url = "/r?etag=%22abc%22&cc=max-age%3D60&lm=Wed,%2021%20Oct%202015%2007:28:00%20GMT"
        c = self.conn()
        for inm in ('"abc"', 'W/"abc"', '"x", "abc"', "*"):
            resp, body = self.get(url, {"If-None-Match": inm}, conn=c)
            self.assertEqual((resp.status, body), (304, b""), inm)
            self.assertEqual(resp.getheader("ETag"), '"abc"')
            self.assertEqual(resp.getheader("Cache-Control"), "max-age=60")
            self.assertIsNone(resp.getheader("Content-Type"))
        resp, body = self.get(url, {"If-None-Match": '"other"'}, conn=c)
        self.assertEqual((resp.status, body), (200, b"ok"))
        resp, _ = self.get("/r?etag=W/%22abc%22", {"If-None-Match": '"abc"'}, conn=c)
        self.assertEqual(resp.status, 304)

    def test_if_modified_since(self):
        url = "/r?lm=" + urllib.parse.quote("Wed, 21 Oct 2015 07:28:00 GMT")
        for ims, status in (("Wed, 21 Oct 2015 07:28:00 GMT", 304), ("Thu, 22 Oct 2015 00:00:00 GMT", 304),
                            ("Tue, 20 Oct 2015 00:00:00 GMT", 200), ("garbage", 200)):
            resp, _ = self.get(url, {"If-Modified-Since": ims})
            self.assertEqual(resp.status, status, ims)
        # If-None-Match present: If-Modified-Since is ignored.
        resp, _ = self.get(url + "&etag=%22e%22", {"If-Modified-Since": "Thu, 22 Oct 2015 00:00:00 GMT",
                                                   "If-None-Match": '"nope"'})
        self.assertEqual(resp.status, 200)

    def test_head_and_keep_alive(self):
        c = self.conn()
        resp, body = self.request("HEAD", "/r?size=500&cc=no-cache", conn=c)
        self.assertEqual((resp.status, body, resp.getheader("Content-Length")), (200, b"", "500"))
        self.assertEqual(resp.getheader("Cache-Control"), "no-cache")
        resp, body = self.request("POST", "/r?body=after", body=b"x" * 1000, conn=c)
        self.assertEqual(body, b"after")
        resp, body = self.get("/bytes?size=10", conn=c)
        self.assertEqual(body, expected_pattern(10))
        self.assertEqual(self.count(path="/r"), 2)
        self.assertEqual(self.log()[1]["body_len"], 1000)

    def test_delay(self):
        started = time.monotonic()
        resp, _ = self.get("/r?delay_ms=300")
        self.assertEqual(resp.status, 200)
        self.assertGreaterEqual(time.monotonic() - started, 0.29)

    def test_bad_parameters(self):
        c = self.conn()
        for url in ("/r?status=abc", "/r?status=99", "/r?size=-1", "/r?h=nocolon", "/r?delay_ms=x",
                    "/r?cc=a%0d%0aX-Evil:%201", "/redirect?status=200", "/redirect/0", "/slow?chunks=0"):
            resp, body = self.get(url, conn=c)
            self.assertEqual(resp.status, 400, url)
            self.assertTrue(body, url)
            self.assertIsNone(resp.getheader("X-Evil"))
        resp, body = self.get("/r", conn=c)  # the connection survived every 400
        self.assertEqual(body, b"ok")

    def test_bad_request_body_framing(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n")
            data = read_until_closed(s)
        self.assertTrue(data.startswith(b"HTTP/1.1 400 "), data)
        self.assertIn(b"Connection: close", data)

    def test_not_found(self):
        resp, body = self.get("/nope")
        self.assertEqual(resp.status, 404)
        self.assertIn(b"/nope", body)
        resp, _ = self.get("/__nope")
        self.assertEqual(resp.status, 404)


class ControlTests(OriginTestCase):

    def test_counts_and_reset(self):
        for url in ("/r?a=1", "/r?a=1", "/r?a=2", "/nope"):
            self.get(url)
        self.assertEqual(self.count(path="/r"), 3)
        self.assertEqual(self.count(url="/r?a=1"), 2)
        self.assertEqual(self.count(url="/r?a=2"), 1)
        self.assertEqual(self.count(path="/nope"), 1)
        self.assertEqual(self.count(path="/__count"), 0)
        self.assertEqual(len(self.log()), 4)
        resp, _ = self.request("POST", "/__reset")
        self.assertEqual(resp.status, 200)
        self.assertEqual((self.count(path="/r"), self.log()), (0, []))
        self.assertEqual(self.get("/__reset")[0].status, 405)
        self.assertEqual(self.get("/__count")[0].status, 400)

    def test_log_entries(self):
        before = time.time()
        self.request("PUT", "/echo?x=1", body=b"abc", headers={"X-Test": "yes"})
        (entry,) = self.log()
        self.assertEqual((entry["method"], entry["path"], entry["query"]), ("PUT", "/echo", "x=1"))
        self.assertIn(["X-Test", "yes"], entry["headers"])
        self.assertEqual((entry["body_len"], entry["status"], entry["aborted"]), (3, 200, False))
        self.assertGreaterEqual(entry["time"], before - 1)

    def test_log_keeps_last_1000(self):
        c = self.conn()
        for i in range(1005):
            self.request("HEAD", f"/r?i={i}", conn=c)
        entries = self.log()
        self.assertEqual(len(entries), 1000)
        self.assertEqual(entries[0]["query"], "i=5")


class EchoTests(OriginTestCase):

    def test_echo_post(self):
        headers = {"X-B": "2", "X-A": "1", "Content-Type": "text/plain"}
        resp, data = self.request("POST", "/echo?status=201&location=/items/7&cc=no-store&k=v",
                                  body=b"hello", headers=headers)
        self.assertEqual(resp.status, 201)
        self.assertEqual(resp.getheader("Location"), "/items/7")
        self.assertEqual(resp.getheader("Cache-Control"), "no-store")
        doc = json.loads(data)
        self.assertEqual((doc["method"], doc["path"], doc["query"]),
                         ("POST", "/echo", "status=201&location=/items/7&cc=no-store&k=v"))
        names = [name for name, _ in doc["headers"]]
        self.assertLess(names.index("X-B"), names.index("X-A"))
        self.assertEqual((doc["body"], doc["body_len"]), ("hello", 5))
        self.assertEqual(doc["body_sha256"], hashlib.sha256(b"hello").hexdigest())

    def test_echo_binary_and_chunked_body(self):
        payload = bytes(range(256)) * 10
        c = self.conn()
        c.request("PATCH", "/echo", body=iter([payload[:1000], payload[1000:]]), encode_chunked=True)
        resp = c.getresponse()
        doc = json.loads(resp.read())
        self.assertEqual((doc["body"], doc["body_len"]), (None, len(payload)))
        self.assertEqual(doc["body_sha256"], hashlib.sha256(payload).hexdigest())
        self.assertIn(["Transfer-Encoding", "chunked"], doc["headers"])
        resp, data = self.get("/echo", conn=c)  # the chunked body was consumed completely
        self.assertEqual(json.loads(data)["body_len"], 0)


class RedirectTests(OriginTestCase):

    def test_redirect(self):
        to = "/r?body=there"
        for status in (301, 302, 303, 307, 308):
            resp, _ = self.get("/redirect?" + urllib.parse.urlencode({"to": to, "status": status}))
            self.assertEqual((resp.status, resp.getheader("Location")), (status, to))
        resp, _ = self.get("/redirect")
        self.assertEqual((resp.status, resp.getheader("Location")), (302, "/r"))

    def test_redirect_chain(self):
        url, hops = "/redirect/3?status=307", 0
        while True:
            resp, body = self.get(url)
            if resp.status != 307:
                break
            url, hops = resp.getheader("Location"), hops + 1
        self.assertEqual((hops, resp.status, body, url), (3, 200, b"ok", "/r"))

    def test_redirect_loop(self):
        resp, _ = self.get("/redirect-loop?status=301")
        self.assertEqual((resp.status, resp.getheader("Location")), (301, "/redirect-loop?status=301"))


class StreamingTests(OriginTestCase):

    def test_slow_content_length(self):
        started = time.monotonic()
        resp, body = self.get("/slow?size=1000&chunks=4&interval_ms=100&cc=max-age%3D5")
        self.assertGreaterEqual(time.monotonic() - started, 0.29)
        self.assertEqual(body, expected_pattern(1000))
        self.assertEqual(resp.getheader("Content-Length"), "1000")
        self.assertEqual(resp.getheader("Cache-Control"), "max-age=5")

    def test_slow_chunked(self):
        c = self.conn()
        resp, body = self.get("/slow?size=1001&chunks=3&interval_ms=20&chunked=1", conn=c)
        self.assertEqual(resp.getheader("Transfer-Encoding"), "chunked")
        self.assertIsNone(resp.getheader("Content-Length"))
        self.assertEqual(body, expected_pattern(1001))
        resp, body = self.request("HEAD", "/slow?size=1001&chunked=1", conn=c)
        self.assertEqual((resp.status, body, resp.getheader("Transfer-Encoding")), (200, b"", "chunked"))
        resp, body = self.get("/slow?size=10&etag=%22s%22", {"If-None-Match": '"s"'}, conn=c)
        self.assertEqual((resp.status, body), (304, b""))

    def test_slow_is_concurrent(self):
        results, started = [], time.monotonic()

        def fetch():
            results.append(self.request("GET", "/slow?size=100&chunks=3&interval_ms=150")[1])

        threads = [threading.Thread(target=fetch) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, [expected_pattern(100)] * 8)
        self.assertLess(time.monotonic() - started, 1.5)
        self.assertEqual(self.count(path="/slow"), 8)

    def test_slow_client_hangs_up(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(b"GET /slow?size=100000&chunks=50&interval_ms=50 HTTP/1.1\r\nHost: x\r\n\r\n")
            received = b""
            while b"\r\n\r\n" not in received:
                received += s.recv(4096)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            entries = [e for e in self.log() if e["path"] == "/slow"]
            if entries and entries[0]["aborted"]:
                break
            time.sleep(0.05)
        self.assertTrue(entries[0]["aborted"], entries)
        self.assertEqual(self.get("/r")[1], b"ok")  # the server is still healthy

    def test_gzip(self):
        resp, body = self.get("/gzip?size=5000", {"Accept-Encoding": "br, gzip;q=0.8"})
        self.assertEqual(resp.getheader("Content-Encoding"), "gzip")
        self.assertEqual(resp.getheader("Vary"), "Accept-Encoding")
        self.assertEqual(int(resp.getheader("Content-Length")), len(body))
        self.assertEqual(gzip.decompress(body), expected_pattern(5000))
        for accept in (None, "identity", "gzip;q=0"):
            resp, body = self.get("/gzip?size=5000", {"Accept-Encoding": accept} if accept else {})
            self.assertIsNone(resp.getheader("Content-Encoding"), accept)
            self.assertEqual(resp.getheader("Vary"), "Accept-Encoding")
            self.assertEqual(body, expected_pattern(5000))

    def test_drop(self):
        c = self.conn()
        c.request("GET", "/drop")
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            c.getresponse()
        self.assertEqual(self.count(path="/drop"), 1)

    def test_truncate(self):
        c = self.conn()
        c.request("GET", "/truncate?size=1000")
        resp = c.getresponse()
        self.assertEqual(resp.getheader("Content-Length"), "1000")
        with self.assertRaises(http.client.IncompleteRead) as caught:
            resp.read()
        self.assertEqual(caught.exception.partial, expected_pattern(500))

    def test_bigheader(self):
        # http.client refuses header lines over 64 KiB: 300,000 bytes in six fields.
        resp, body = self.get("/bigheader?bytes=300000&lines=6")
        self.assertEqual(body, b"ok")
        self.assertEqual([len(resp.getheader(f"X-Big-{n}")) for n in range(6)], [50_000] * 6)

    def test_bytes(self):
        resp, body = self.get("/bytes?size=300&cc=max-age%3D1")
        self.assertEqual(body, expected_pattern(300))
        self.assertEqual(resp.getheader("Content-Type"), "application/octet-stream")
        self.assertEqual(resp.getheader("Cache-Control"), "max-age=1")
        self.assertEqual(len(self.get("/bytes")[1]), 1024)

    def test_file(self):
        resp, body = self.get("/file/data.json?etag=%22f1%22&cc=max-age%3D9")
        self.assertEqual((resp.status, body), (200, b'{"a": 1}'))
        self.assertEqual(resp.getheader("Content-Type"), "application/json")
        self.assertEqual((resp.getheader("ETag"), resp.getheader("Cache-Control")), ('"f1"', "max-age=9"))
        resp, body = self.get("/file/data.json?etag=%22f1%22", {"If-None-Match": '"f1"'})
        self.assertEqual((resp.status, body), (304, b""))
        # content_etag=1: the ETag is the file's digest, and a conditional request with it is answered 304.
        resp, body = self.get("/file/data.json?content_etag=1")
        tag = '"' + hashlib.sha256(b'{"a": 1}').hexdigest()[:16] + '"'
        self.assertEqual((resp.status, resp.getheader("ETag")), (200, tag))
        self.assertEqual(self.get("/file/data.json?content_etag=1", {"If-None-Match": tag})[0].status, 304)
        self.assertEqual(self.get("/file/missing.txt")[0].status, 404)
        self.assertEqual(self.get("/file/../etc/passwd")[0].status, 403)
        self.assertEqual(self.get("/file/%2e%2e/x")[0].status, 403)


def read_until_closed(sock):
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


class LifecycleTests(unittest.TestCase):

    def test_sigint_exits_cleanly(self):
        proc, port = start_origin()
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # an idle keep-alive client
            self.assertEqual(stop_origin(proc, signal.SIGINT), 0)

    def test_binds_loopback_only(self):
        proc, port = start_origin()
        try:
            out = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout if shutil.which("ss") else ""
            listening = [line for line in out.splitlines() if f":{port} " in line]
            if listening:
                self.assertIn("127.0.0.1:", listening[0])
        finally:
            self.assertEqual(stop_origin(proc), 0)


class TLSTests(unittest.TestCase):

    def setUp(self):
        if shutil.which("openssl") is None:
            self.skipTest("the openssl command-line tool is not installed; cannot generate a test certificate")
        self.dir = tempfile.mkdtemp(prefix="ferry-origin-tls-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.cert, self.key = os.path.join(self.dir, "cert.pem"), os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", self.key, "-out", self.cert, "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       check=True, capture_output=True, timeout=30)
        self.proc, self.port = start_origin("--tls-cert", self.cert, "--tls-key", self.key)

    def tearDown(self):
        if hasattr(self, "proc"):
            self.assertEqual(stop_origin(self.proc), 0)

    def test_https(self):
        context = ssl.create_default_context(cafile=self.cert)
        c = http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=10)
        self.addCleanup(c.close)
        for _ in range(2):  # keep-alive over TLS
            c.request("GET", "/r?size=2000&cc=max-age%3D3")
            resp = c.getresponse()
            self.assertEqual(resp.read(), expected_pattern(2000))
            self.assertEqual(resp.getheader("Cache-Control"), "max-age=3")
        c.request("GET", "/slow?size=300&chunks=3&interval_ms=10&chunked=1")
        self.assertEqual(c.getresponse().read(), expected_pattern(300))

    def test_plain_client_does_not_hang_server(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(b"GET /r HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                read_until_closed(s)
            except OSError:
                pass
        context = ssl.create_default_context(cafile=self.cert)
        c = http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=10)
        self.addCleanup(c.close)
        c.request("GET", "/r")
        self.assertEqual(c.getresponse().read(), b"ok")


if __name__ == "__main__":
    unittest.main()
