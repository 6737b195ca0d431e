#!/usr/bin/env python3
"""A scriptable HTTP/1.1 origin for Ferry's integration tests (Python 3.11 standard library only).

Start:  python3 Tests/Origin/ferry_origin.py [--port 0] [--files DIR] [--verbose]
                                             [--tls-cert CERT.pem --tls-key KEY.pem]
It binds 127.0.0.1 only, prints exactly one line ``PORT <n>`` to stdout once listening, and exits with status 0
on SIGTERM or SIGINT.  Everything else is driven through the URL; unknown query parameters are ignored, a
single-valued parameter given twice takes its last value, and a bad value gives 400 with a text message.

Deterministic pattern: a body of ``size=N`` is the bytes ``i % 251`` for i in 0..<N, i.e.
``bytes(i % 251 for i in range(N))`` (``/slow`` and ``/truncate`` send prefixes of the same pattern).

Common response parameters (every endpoint except ``/__*``): ``cc`` (Cache-Control), ``expires``, ``lm``
(Last-Modified), ``etag``, ``vary``, ``age``, ``pragma``, ``location``, ``content_location`` -- each repeatable,
one header line per value -- ``h=Name:Value`` (any header, repeatable), ``date`` (Date value; ``omit`` drops it;
default now) and ``delay_ms`` (sleep before answering).  Conditional (``/r``, ``/bytes``, ``/gzip``, ``/slow``,
``/file``; GET/HEAD with a 200 status): with ``etag`` and a matching If-None-Match (weak comparison, lists, ``*``)
-> 304; else with ``lm``, no If-None-Match, and If-Modified-Since >= lm -> 304.  A 304 keeps every header but
Content-Type/Content-Encoding and has no body; 204/304 have no Content-Length; HEAD sends headers only.

Endpoints:
  /r          status (200..599, default 200), body (default "ok") or size=N, ct (default text/plain),
              random=1 (appends " token=<16 hex> serial=<n>", n = requests so far to this path);
              fail_first=K: the first K requests of this exact URL answer fail_status (default 503) with the
              body "failing" (and the common headers, e.g. h=Retry-After:1), the later ones as asked
  /echo       any method; 200 JSON {method, path, query, headers [[name, value]...] in received order,
              body (text, or null if not UTF-8), body_len, body_sha256}; honours status
  /redirect   to (default /r), status (301/302/303/307/308, default 302)
  /redirect/N chain of N redirects ending at `to` (default /r): /redirect/N -> /redirect/N-1 ... -> to
  /redirect-loop   redirects to itself (status as above)
  /slow       size (default 1024), chunks (default 4), interval_ms (default 100), chunked=1 -> chunked
              transfer coding, status (default 200); a client hanging up marks its log entry "aborted": true
  /gzip       size (default 1024) or body; gzip when Accept-Encoding allows it; always Vary: Accept-Encoding
  /bytes      size (default 1024), application/octet-stream
  /bigheader  bytes (default 200000) of response header: `lines` (default 1) X-Big-<n> fields sharing them, body "ok"
  /drop       reads the request, closes the connection without answering
  /truncate   size (default 1024): Content-Length size, sends size//2 bytes, closes
  /early      a 103 Early Hints (Link: </hint.css>; rel=preload, X-Early: 1) before the response of /r
  /ranged     size (default 1024) pattern bytes with ETag "<tag>" (default v1) and Accept-Ranges: bytes; one Range
              (bytes=a-b, a-, -n) -> 206 with Content-Range unless If-Range names another validator (then 200);
              unsatisfiable -> 416; cut_at=K: the first 200 of this exact URL sends K bytes of its body, then
              closes; retag=1: the ETag changes with every request ("<tag>-<n>"); notag=1: no ETag;
              pace_ms=T: a pause after each MiB. Its log entry's "sent" is the body bytes written
  /file/NAME  a file under --files DIR (type from mimetypes); 403 if NAME contains "..", 404 if missing;
              content_etag=1: ETag "<first 16 hex of the file's SHA-256>", so it changes when the file does
  /__count?path=/x  (path without query) or ?url=/x%3Fa%3D1 (exact path+query, as sent) -> {"count": N}
  /__log      last 1000 requests: {method, path, query, headers, body_len, time, status, aborted}
  /__reset    POST: zero counters and log
Control endpoints (/__*) are neither counted nor logged.  Anything else -> 404.
"""

import argparse
import email.utils
import gzip
import hashlib
import json
import mimetypes
import os
import re
import secrets
import select
import signal
import socket
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse
from collections import Counter, deque
from datetime import timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PERIOD = 251
_BLOCK = bytes(range(PERIOD)) * 256          # a whole number of periods, so blocks chain seamlessly
MAX_STREAMED = 1 << 34                        # bodies written block by block (/r size, /bytes)
MAX_BUFFERED = 64 << 20                       # bodies built in memory (/gzip, /slow, /truncate, random=1)
MAX_REQUEST_BODY = 256 << 20
LOG_LIMIT = 1000
REDIRECT_CODES = (301, 302, 303, 307, 308)
NO_BODY_STATUSES = (204, 304)
HEADER_PARAMS = (("cc", "Cache-Control"), ("expires", "Expires"), ("lm", "Last-Modified"), ("etag", "ETag"),
                 ("vary", "Vary"), ("age", "Age"), ("pragma", "Pragma"), ("location", "Location"),
                 ("content_location", "Content-Location"))
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_ENTITY_TAG = re.compile(r'\*|(?:W/)?"[^"]*"')


class Problem(Exception):
    """A request the origin refuses: answered with `status` and a text message."""

    def __init__(self, status, message, close=False):
        super().__init__(message)
        self.status, self.message, self.close = status, message, close


def pattern(length, offset=0):
    """`length` bytes of the deterministic pattern, starting at absolute index `offset`."""
    start = offset % PERIOD
    return (bytes(range(PERIOD)) * ((start + length) // PERIOD + 1))[start:start + length]


def pattern_blocks(length):
    """Yield the pattern of `length` bytes in blocks of at most len(_BLOCK) bytes."""
    full, rest = divmod(length, len(_BLOCK))
    for _ in range(full):
        yield _BLOCK
    if rest:
        yield _BLOCK[:rest]


def parse_single_range(value, size):
    """(start, end) of one `bytes=` range of a body of `size` bytes, or None when unsatisfiable or not one range."""
    m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", value)
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return None
    if m.group(1) == "":
        n = int(m.group(2))
        return (max(0, size - n), size) if n > 0 and size > 0 else None
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) else size - 1
    if first >= size or last < first:
        return None
    return first, min(last, size - 1) + 1


def split_sizes(total, pieces):
    """Split `total` into `pieces` near-equal sizes."""
    base, extra = divmod(total, pieces)
    return [base + (1 if i < extra else 0) for i in range(pieces)]


def header_value(value, what):
    """Return `value` if it is safe as a header value, else raise a 400 Problem."""
    if any(c in value for c in "\r\n\0"):
        raise Problem(400, f"parameter {what}: header values may not contain CR, LF or NUL")
    return value


class Params:
    """The query parameters of one request."""

    def __init__(self, query):
        self.pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)

    def all(self, name):
        """Every value of `name`, in order."""
        return [v for k, v in self.pairs if k == name]

    def get(self, name, default=None):
        """The last value of `name`, or `default`."""
        values = self.all(name)
        return values[-1] if values else default

    def has(self, name):
        return any(k == name for k, _ in self.pairs)

    def int(self, name, default, low, high):
        """An integer parameter in low..high; 400 if malformed or out of range."""
        raw = self.get(name)
        if raw is None:
            return default
        if not re.fullmatch(r"-?[0-9]{1,20}", raw.strip()):
            raise Problem(400, f"parameter {name}={raw!r} is not an integer")
        value = int(raw)
        if not low <= value <= high:
            raise Problem(400, f"parameter {name}={value} is outside {low}..{high}")
        return value

    def flag(self, name):
        return self.get(name, "").lower() in ("1", "true", "yes", "on")


def common_headers(params):
    """Header lines requested through the common parameters (cc, etag, ..., h=Name:Value)."""
    out = []
    for key, name in HEADER_PARAMS:
        out += [(name, header_value(v, key)) for v in params.all(key)]
    for raw in params.all("h"):
        name, sep, value = raw.partition(":")
        if not sep or not _TOKEN.fullmatch(name.strip()):
            raise Problem(400, f"parameter h={raw!r}: expected Name:Value")
        out.append((name.strip(), header_value(value.strip(), "h")))
    return out


def _opaque_tag(tag):
    """An entity-tag without its weakness marker, for weak comparison."""
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def etag_matches(if_none_match, etags):
    """Whether an If-None-Match value matches any of `etags` (weak comparison; `*` matches anything)."""
    tags = _ENTITY_TAG.findall(if_none_match) or [t.strip() for t in if_none_match.split(",") if t.strip()]
    ours = {_opaque_tag(e) for e in etags}
    return "*" in tags or any(_opaque_tag(t) in ours for t in tags)


def _http_date(value):
    """Parse an HTTP-date to an aware datetime, or None."""
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def is_not_modified(headers, params):
    """Whether the request's conditionals select a 304, given the validators in `params`."""
    inm = headers.get_all("If-None-Match")
    if inm:
        etags = params.all("etag")
        return bool(etags) and etag_matches(",".join(inm), etags)
    ims, lm = headers.get("If-Modified-Since"), params.get("lm")
    if ims and lm:
        since, modified = _http_date(ims), _http_date(lm)
        return since is not None and modified is not None and since >= modified
    return False


def accepts_gzip(accept_encoding):
    """Whether an Accept-Encoding value allows gzip (q > 0)."""
    for item in (accept_encoding or "").split(","):
        name, *attrs = [part.strip() for part in item.split(";")]
        if name.lower() in ("gzip", "x-gzip"):
            q = next((a[2:] for a in attrs if a.lower().startswith("q=")), "1")
            try:
                return float(q) > 0
            except ValueError:
                return False
    return False


class State:
    """Request counters and the request log, shared by all handler threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.by_path, self.by_url, self.log = Counter(), Counter(), deque(maxlen=LOG_LIMIT)

    def record(self, method, path, query, headers):
        """Count and log a request; return its log entry and the per-path serial number."""
        entry = {"method": method, "path": path, "query": query, "headers": [[k, v] for k, v in headers],
                 "body_len": 0, "sent": None, "time": time.time(), "status": None, "aborted": False}
        with self.lock:
            self.by_path[path] += 1
            self.by_url[path + ("?" + query if query else "")] += 1
            self.log.append(entry)
            return entry, self.by_path[path]

    def update(self, entry, **fields):
        with self.lock:
            entry.update(fields)

    def count(self, path=None, url=None):
        with self.lock:
            return self.by_path[path] if path is not None else self.by_url[url]

    def entries(self):
        with self.lock:
            return [dict(e) for e in self.log]


def split_target(target):
    """Split a request target (origin-form or absolute-form) into raw path and raw query."""
    target = target.split("#", 1)[0]
    if "://" in target.split("?", 1)[0]:
        parts = urllib.parse.urlsplit(target)
        return parts.path or "/", parts.query
    path, _, query = target.partition("?")
    return path, query


class OriginHandler(BaseHTTPRequestHandler):
    """One connection; every method goes through `dispatch`."""

    protocol_version = "HTTP/1.1"
    server_version = "FerryOrigin/1.0"
    timeout = 60
    disable_nagle_algorithm = True
    ROUTES = {"/r": "ep_r", "/echo": "ep_echo", "/redirect": "ep_redirect", "/redirect-loop": "ep_redirect_loop",
              "/slow": "ep_slow", "/gzip": "ep_gzip", "/drop": "ep_drop", "/truncate": "ep_truncate",
              "/bytes": "ep_bytes", "/bigheader": "ep_bigheader", "/ranged": "ep_ranged", "/early": "ep_early"}

    def setup(self):
        """Finish the TLS handshake here, in the connection's thread, not in the accept loop."""
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.do_handshake()

    def log_message(self, format, *args):
        if self.server.verbose:
            super().log_message(format, *args)

    # ---- request plumbing -------------------------------------------------------------------------------------

    def dispatch(self):
        """Parse the target, count it, read the body fully, then route; never lets an exception escape."""
        self._sent, self._entry, self._date, self.serial = False, None, None, 0
        self.params = Params("")
        state = self.server.state
        try:
            self.raw_path, self.raw_query = split_target(self.path)
            self.params = Params(self.raw_query)
            control = self.raw_path.startswith("/__")
            if not control:
                self._entry, self.serial = state.record(self.command, self.raw_path, self.raw_query,
                                                        self.headers.items())
            self.body = self.read_body()
            if self._entry is not None:
                state.update(self._entry, body_len=len(self.body))
            if control:
                return self.control()
            self._date = self.params.get("date")
            delay = self.params.int("delay_ms", 0, 0, 600_000)
            if delay:
                time.sleep(delay / 1000)
            self.route()
        except Problem as problem:
            self.send_problem(problem)
        except OSError:                       # BrokenPipe, ConnectionReset, TLS EOF, timeout: the client left
            self.mark_aborted()
        except Exception as exc:              # a bug here must not kill the thread or hang the client
            self.send_problem(Problem(500, f"origin error: {exc!r}", close=True))

    def read_body(self):
        """Read the request body (Content-Length or chunked) completely."""
        te = self.headers.get("Transfer-Encoding")
        if te is not None:
            if te.strip().lower() != "chunked":
                raise Problem(501, f"unsupported Transfer-Encoding {te!r}", close=True)
            return self.read_chunked()
        lengths = {v.strip() for v in self.headers.get_all("Content-Length") or []}
        if not lengths:
            return b""
        if len(lengths) > 1 or not re.fullmatch(r"[0-9]{1,18}", next(iter(lengths))):
            raise Problem(400, f"bad Content-Length {sorted(lengths)}", close=True)
        return self.read_exact(int(lengths.pop()))

    def read_exact(self, n):
        """Exactly n body bytes; EOF before that means the client left."""
        if n > MAX_REQUEST_BODY:
            raise Problem(413, f"request body over {MAX_REQUEST_BODY} bytes", close=True)
        data = self.rfile.read(n)
        if len(data) < n:
            raise ConnectionAbortedError("request body cut short")
        return data

    def read_chunked(self):
        """A chunked request body, with chunk extensions and trailers skipped."""
        parts, total = [], 0
        while True:
            line = self.rfile.readline(65537)
            if not line:
                raise ConnectionAbortedError("request body cut short")
            size = line.split(b";", 1)[0].strip()
            if not re.fullmatch(rb"[0-9A-Fa-f]{1,16}", size):
                raise Problem(400, f"bad chunk size line {line[:40]!r}", close=True)
            n = int(size, 16)
            if n == 0:
                break
            total += n
            if total > MAX_REQUEST_BODY:
                raise Problem(413, f"request body over {MAX_REQUEST_BODY} bytes", close=True)
            parts.append(self.read_exact(n))
            self.rfile.readline(65537)        # the CRLF after the chunk data
        while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
            pass                              # trailer fields
        return b"".join(parts)

    def mark_aborted(self):
        self.close_connection = True
        if self._entry is not None:
            self.server.state.update(self._entry, aborted=True)

    def start(self, status, headers, length=None, chunked=False):
        """Send the status line and headers (Server, Date, `headers`, then Content-Length or chunked)."""
        date = self.date_time_string() if self._date is None else header_value(self._date, "date")
        self.send_response_only(status)
        self.send_header("Server", self.server_version)
        if date != "omit":
            self.send_header("Date", date)
        for name, value in headers:
            self.send_header(name, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        self._sent = True
        self.log_request(status)
        if self._entry is not None:
            self.server.state.update(self._entry, status=status)

    def reply(self, status, headers, body=b"", conditional=False, common=True):
        """A complete response; `body` is bytes or an int (that many pattern bytes, streamed)."""
        headers = list(headers) + (common_headers(self.params) if common else [])
        if conditional and status == 200 and self.command in ("GET", "HEAD") \
                and is_not_modified(self.headers, self.params):
            status = 304
        if status in NO_BODY_STATUSES:
            kept = [h for h in headers if h[0].lower() not in ("content-type", "content-encoding")]
            return self.start(status, kept if status == 304 else headers)
        self.start(status, headers, length=body if isinstance(body, int) else len(body))
        if self.command != "HEAD":
            for block in (pattern_blocks(body) if isinstance(body, int) else (body,)):
                self.wfile.write(block)

    def send_problem(self, problem):
        """Answer with the problem's status and message, unless a response was already started."""
        if problem.close or self._sent:
            self.close_connection = True
        if self._sent:
            return
        self._date, self.params = None, Params("")
        extra = [("Connection", "close")] if problem.close else []
        try:
            self.reply(problem.status, [("Content-Type", "text/plain; charset=utf-8")] + extra,
                       (problem.message + "\n").encode(), common=False)
        except OSError:
            self.mark_aborted()

    def client_gone(self):
        """Whether a plain-TCP client has closed its end (EOF or reset) while we were pausing."""
        sock = self.connection
        if isinstance(sock, ssl.SSLSocket):
            return False                      # TLS: rely on write errors instead
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    # ---- control endpoints ------------------------------------------------------------------------------------

    def control(self):
        """/__count, /__log, /__reset."""
        state, path, method = self.server.state, self.raw_path, self.command
        if path in ("/__count", "/__log") and method not in ("GET", "HEAD"):
            raise Problem(405, f"{path} takes GET")
        if path == "/__count":
            if self.params.has("path"):
                return self.json({"count": state.count(path=self.params.get("path"))})
            if self.params.has("url"):
                return self.json({"count": state.count(url=self.params.get("url"))})
            raise Problem(400, "/__count needs path=/x or url=/x?query")
        if path == "/__log":
            return self.json(state.entries())
        if path == "/__reset":
            if method != "POST":
                raise Problem(405, "/__reset takes POST")
            state.reset()
            return self.json({"reset": True})
        raise Problem(404, f"no control endpoint {path}")

    def json(self, value, status=200, common=False):
        body = json.dumps(value).encode()
        headers = [("Content-Type", "application/json")] + ([] if common else [("Cache-Control", "no-store")])
        self.reply(status, headers, body, common=common)

    # ---- response endpoints -----------------------------------------------------------------------------------

    def route(self):
        path = self.raw_path
        if path in self.ROUTES:
            return getattr(self, self.ROUTES[path])()
        if path.startswith("/redirect/"):
            return self.ep_redirect_chain(path[len("/redirect/"):])
        if path.startswith("/file/"):
            return self.ep_file(urllib.parse.unquote(path[len("/file/"):]))
        raise Problem(404, f"not found: {path}")

    def make_body(self, default_size=None):
        """The body chosen by size / body / random=1 (int = pattern length, streamed)."""
        p = self.params
        if p.has("size") or (default_size is not None and not p.has("body")):
            body = p.int("size", default_size, 0, MAX_STREAMED)
        else:
            body = p.get("body", "ok").encode()
        if p.flag("random"):
            if isinstance(body, int):
                body = pattern(self.buffered_size(body))
            body += f" token={secrets.token_hex(8)} serial={self.serial}".encode()
        return body

    @staticmethod
    def buffered_size(size):
        if size > MAX_BUFFERED:
            raise Problem(400, f"size={size} is over {MAX_BUFFERED} for this endpoint")
        return size

    def ep_r(self):
        """Generic response."""
        status = self.params.int("status", 200, 200, 599)
        ct = header_value(self.params.get("ct", "text/plain"), "ct")
        failing = self.params.int("fail_first", 0, 0, 1000)
        if failing and self.server.state.count(url=self.raw_path + "?" + self.raw_query) <= failing:
            status = self.params.int("fail_status", 503, 400, 599)
            return self.reply(status, [("Content-Type", "text/plain")], b"failing")
        self.reply(status, [("Content-Type", ct)], self.make_body(), conditional=True)

    def ep_echo(self):
        """The request, as JSON."""
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        self.json({"method": self.command, "path": self.raw_path, "query": self.raw_query,
                   "headers": [[k, v] for k, v in self.headers.items()], "body": text,
                   "body_len": len(self.body), "body_sha256": hashlib.sha256(self.body).hexdigest()},
                  status=self.params.int("status", 200, 200, 599), common=True)

    def redirect_status(self):
        status = self.params.int("status", 302, 100, 999)
        if status not in REDIRECT_CODES:
            raise Problem(400, f"status={status}: redirects use one of {REDIRECT_CODES}")
        return status

    def redirect(self, location):
        self.reply(self.redirect_status(), [("Location", header_value(location, "to")),
                                            ("Content-Type", "text/plain")], f"redirect to {location}\n".encode())

    def ep_redirect(self):
        self.redirect(self.params.get("to", "/r"))

    def ep_redirect_loop(self):
        self.redirect("/redirect-loop" + ("?" + self.raw_query if self.raw_query else ""))

    def ep_redirect_chain(self, count):
        """/redirect/N -> /redirect/N-1 -> ... -> `to` (status and to carried along)."""
        if not re.fullmatch(r"[0-9]{1,4}", count) or not 1 <= int(count) <= 1000:
            raise Problem(400, f"/redirect/N needs N in 1..1000, not {count!r}")
        target = self.params.get("to", "/r")
        if int(count) == 1:
            return self.redirect(target)
        carried = [(k, v) for k, v in self.params.pairs if k in ("status", "to")]
        query = urllib.parse.urlencode(carried)
        self.redirect(f"/redirect/{int(count) - 1}" + ("?" + query if query else ""))

    def ep_slow(self):
        """size bytes in `chunks` pieces, `interval_ms` apart; notices clients that hang up."""
        p = self.params
        size = self.buffered_size(p.int("size", 1024, 0, MAX_STREAMED))
        pieces = p.int("chunks", 4, 1, 100_000)
        interval = p.int("interval_ms", 100, 0, 600_000) / 1000
        chunked, headers = p.flag("chunked"), [("Content-Type", "application/octet-stream")]
        if self.command in ("GET", "HEAD") and is_not_modified(self.headers, p):
            return self.reply(200, headers, size, conditional=True)
        self.start(p.int("status", 200, 200, 599), headers + common_headers(p), length=size, chunked=chunked)
        if self.command == "HEAD":
            return
        offset = 0
        for i, n in enumerate(split_sizes(size, pieces)):
            if i:
                time.sleep(interval)
                if self.client_gone():
                    raise ConnectionAbortedError("client hung up")
            if n:
                data = pattern(n, offset)
                self.wfile.write(b"%x\r\n%s\r\n" % (n, data) if chunked else data)
                offset += n
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def ep_gzip(self):
        body = self.make_body(default_size=1024)
        body = pattern(self.buffered_size(body)) if isinstance(body, int) else body
        headers = [("Content-Type", "application/octet-stream"), ("Vary", "Accept-Encoding")]
        if accepts_gzip(self.headers.get("Accept-Encoding")):
            body = gzip.compress(body, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        self.reply(200, headers, body, conditional=True)

    def ep_bytes(self):
        size = self.params.int("size", 1024, 0, MAX_STREAMED)
        self.reply(200, [("Content-Type", "application/octet-stream")], size, conditional=True)

    def ep_early(self):
        self.send_response_only(103)
        self.send_header("Link", "</hint.css>; rel=preload")
        self.send_header("X-Early", "1")
        self.end_headers()
        self.wfile.flush()
        self.ep_r()

    def ep_ranged(self):
        p = self.params
        size = p.int("size", 1024, 0, MAX_STREAMED)
        # How many times this exact URL was asked, this request included.
        nth = self.server.state.count(url=self.raw_path + ("?" + self.raw_query if self.raw_query else ""))
        etag = '"%s"' % (p.get("tag", "v1") + (f"-{nth}" if p.flag("retag") else ""))
        headers = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]
        if not p.flag("notag"):
            headers.append(("ETag", etag))
        headers += common_headers(p)
        start, end, status = 0, size, 200
        wanted, if_range = self.headers.get("Range"), self.headers.get("If-Range")
        if wanted is not None and (if_range is None or if_range.strip() == etag):
            bounds = parse_single_range(wanted, size)
            if bounds is None:
                return self.start(416, [("Content-Range", f"bytes */{size}")], length=0)
            start, end = bounds
            status = 206
            headers.append(("Content-Range", f"bytes {start}-{end - 1}/{size}"))
        self.start(status, headers, length=end - start)
        if self.command == "HEAD":
            return
        limit = end - start
        cut = p.int("cut_at", -1, -1, MAX_STREAMED)
        if status == 200 and cut >= 0 and nth == 1:
            limit = min(limit, cut)
        sent = 0
        pace = p.int("pace_ms", 0, 0, 60_000) / 1000
        try:
            while sent < limit:
                n = min(1 << 20, limit - sent)
                self.wfile.write(pattern(n, start + sent))
                sent += n
                if pace and sent < limit:
                    self.wfile.flush()
                    time.sleep(pace)
        finally:
            self.server.state.update(self._entry, sent=sent)
        if limit < end - start:
            self.wfile.flush()
            self.close_connection = True

    def ep_bigheader(self):
        total = self.params.int("bytes", 200_000, 1, 8 * 1024 * 1024)
        lines = self.params.int("lines", 1, 1, 10_000)
        each = max(1, total // lines)
        self.reply(200, [(f"X-Big-{n}", "a" * each) for n in range(lines)] + [("Content-Type", "text/plain")], b"ok")

    def ep_drop(self):
        self.close_connection = True          # finish() then closes the socket without a byte of response

    def ep_truncate(self):
        size = self.buffered_size(self.params.int("size", 1024, 0, MAX_STREAMED))
        self.start(200, [("Content-Type", "application/octet-stream")] + common_headers(self.params), length=size)
        if self.command != "HEAD":
            self.wfile.write(pattern(size // 2))
        self.close_connection = True

    def ep_file(self, name):
        """A file under --files; refuses '..', 404 for anything missing or outside the directory."""
        if ".." in name or "\0" in name:
            raise Problem(403, f"refusing file name {name!r}")
        root = self.server.files_dir
        if not root or not name:
            raise Problem(404, f"no file {name!r}")
        root = os.path.realpath(root)
        full = os.path.realpath(os.path.join(root, name.lstrip("/")))
        if not full.startswith(root + os.sep) or not os.path.isfile(full):
            raise Problem(404, f"no file {name!r}")
        with open(full, "rb") as f:
            data = f.read()
        if self.params.flag("content_etag"):
            # The file's own ETag: it changes when the file does (conditionals compare with it).
            self.params.pairs.append(("etag", '"' + hashlib.sha256(data).hexdigest()[:16] + '"'))
        ct = mimetypes.guess_type(full)[0] or "application/octet-stream"
        self.reply(200, [("Content-Type", ct)], data, conditional=True)


for _method in ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"):
    setattr(OriginHandler, "do_" + _method, OriginHandler.dispatch)


class OriginServer(ThreadingHTTPServer):
    """Threaded server on 127.0.0.1 with the shared state and options."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, port, files_dir=None, verbose=False):
        self.state, self.files_dir, self.verbose = State(), files_dir, verbose
        super().__init__(("127.0.0.1", port), OriginHandler)

    def server_bind(self):
        """Bind without HTTPServer's reverse-DNS lookup (getfqdn), which can stall."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request, client_address):
        if self.verbose:
            super().handle_error(request, client_address)

    def enable_tls(self, cert, key):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["http/1.1"])
        self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Scriptable HTTP origin for Ferry's tests (127.0.0.1 only).")
    parser.add_argument("--port", type=int, default=0, help="port to listen on; 0 picks a free one")
    parser.add_argument("--tls-cert", help="PEM certificate: serve HTTPS (needs --tls-key)")
    parser.add_argument("--tls-key", help="PEM private key for --tls-cert")
    parser.add_argument("--files", help="directory served under /file/NAME")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    return args


def main(argv=None):
    """Serve until SIGTERM/SIGINT, then shut down cleanly and return 0."""
    args = parse_args(argv)
    server = OriginServer(args.port, files_dir=args.files, verbose=args.verbose)
    if args.tls_cert:
        server.enable_tls(args.tls_cert, args.tls_key)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    print(f"PORT {server.server_address[1]}", flush=True)
    while not stop.wait(1):
        pass
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
