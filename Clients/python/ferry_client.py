"""Ferry client: talks to a local ``ferryd`` over its Unix socket (protocol version 1).

Python 3.9+, standard library only. The wire protocol is described in ``Protocol/PROTOCOL.md``.

Usage::

    from ferry_client import Client, FerryError

    with Client(name="my-tool") as ferry:          # connects to default_socket_path() and says hello
        print(ferry.version, ferry.limits["max_frame_bytes"])
        result, body = ferry.call("ping", body=b"\\x00\\xff")   # -> ({"pong": True}, b"\\x00\\xff")

        for item in ferry.stream("ping", {"events": 3}):       # events, then the final reply
            print(item)   # ("event", "tick", {"n": 0}, b"") ... ("final", {"pong": True}, b"")

        rid = ferry.send("ping", {"delay_ms": 5000})           # several requests may be in flight
        ferry.cancel(rid)                                      # -> {"cancelled": True}
        try:
            ferry.wait(rid)
        except FerryError as e:
            assert e.code == "cancelled"

The shared key-value cache (``cache.*``; values are raw bytes, every entry lives in a namespace)::

        ferry.cache_set("build/abc", b"\x00data", namespace="my-tool", ttl_ms=60_000)   # -> True (stored)
        entry = ferry.cache_get("build/abc", namespace="my-tool")
        entry.value, entry.size, entry.created_at, entry.expires_at     # expires_at is None: never expires
        try:
            ferry.cache_get("missing")
        except FerryError as e:
            assert e.code == "not_found"                               # absent or expired
        for item in ferry.cache_list(namespace="my-tool", prefix="build/"):   # follows the cursor page by page
            print(item.key, item.size, item.expires_at)

HTTP through the daemon's shared cache (``fetch``; any HTTP status is a result, not an error)::

        r = ferry.fetch("https://api.example.com/quotes/1")
        r.status, r.ok, r.cache_status, r.age_s        # -> 200, True, "hit", 12  ("miss" the first time)
        r.header("content-type"), r.json()              # -> "application/json", {...}
        r = ferry.fetch("https://api.example.com/quotes", "POST", json={"text": "hi"},
                        headers={"Authorization": "Bearer x"})  # compact JSON body, Content-Type set
        r = ferry.fetch(url, progress=lambda received, total: print(received, total))
        try:
            ferry.fetch("http://127.0.0.1:1/")
        except FerryError as e:
            assert e.code == "unavailable"             # e.details: {"curl_code": 7, "curl_message": ...}

One ``Client`` may be shared by many threads: a reader thread matches replies to requests by id.

A request body too large for one frame (a big ``cache_set`` value, a big ``ping`` body) is sent in parts
(PROTOCOL.md section 5, "Request bodies larger than one frame"): the envelope with ``"more": true`` and the first
part, then continuation frames ``{"id": N, "more": true|false}``. The Client does this by itself, writing all
frames of one request back to back; ``split_request`` shows the frames it would send.

Framing alone (no socket)::

    frame = encode_frame({"id": 2, "op": "ping"})
    decoder = FrameDecoder()
    decoder.feed(frame[:5]) + decoder.feed(frame[5:])    # -> [({"id": 2, "op": "ping"}, b"")]

    frames = [encode_frame(e, part) for e, part in split_request({"id": 3, "op": "ping"}, big_body, 4194304)]
"""

import itertools
import json
import os
import queue
import socket
import struct
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

__all__ = [
    "CacheEntry", "CacheKey", "Client", "FerryError", "FerryProtocolError", "FetchResponse", "FrameDecoder", "Image",
    "check_request", "decode_envelope", "default_socket_path", "encode_frame", "encode_json", "split_request",
    "PROTOCOL_VERSION", "ERROR_CODES", "MIN_BODY_PART_BYTES",
]

PROTOCOL_VERSION = 1

HEADER = struct.Struct(">II")
HEADER_SIZE = HEADER.size

DEFAULT_HANDSHAKE_FRAME_BYTES = 65536
DEFAULT_MAX_FRAME_BYTES = 4194304
DEFAULT_MAX_JSON_BYTES = 1048576
DEFAULT_MAX_NESTING = 32

# A request whose body must be sent in parts is refused locally (resource_exhausted) when its envelope leaves
# less room than this for the body in the first frame.
MIN_BODY_PART_BYTES = 1024

MAX_ID = 2 ** 53 - 1
MAX_TIMEOUT_MS = 2 ** 31 - 1

# Extra time the local timer waits beyond a request's timeout_ms, in case the server is gone (section 7).
LOCAL_DEADLINE_GRACE_S = 2.0

ERROR_CODES = frozenset({
    "invalid_argument", "failed_precondition", "not_found", "already_exists", "deadline_exceeded", "cancelled",
    "unavailable", "resource_exhausted", "permission_denied", "unimplemented", "internal", "protocol_error",
    "invalid_image",
})

# Codes of an id-0 error after which the server closes the connection (sections 4 and 8).
_CLOSING_CODES = frozenset({"protocol_error", "resource_exhausted", "permission_denied", "unavailable"})

Frame = Tuple[Dict[str, Any], bytes]


class CacheEntry(NamedTuple):
    """A value read with ``Client.cache_get``. Times are milliseconds since the Unix epoch; ``expires_at`` is None
    for an entry that never expires."""
    value: bytes
    size: int
    created_at: Optional[int]
    expires_at: Optional[int]


class CacheKey(NamedTuple):
    """One key of a ``Client.cache_list`` page; ``expires_at`` is None for an entry that never expires."""
    key: str
    size: Optional[int]
    expires_at: Optional[int]


class Image(NamedTuple):
    """An image from the daemon's shared loader (``Client.image``).

    ``format`` is sniffed from the bytes (png, jpeg, gif, webp, bmp, heic, avif); ``source`` says where the daemon
    found it: ``"memory"``, ``"disk"`` or ``"network"``; ``url`` is the URL of the bytes after redirects.

    ::

        img = ferry.image("https://img.example.com/poster/42.jpg")
        print(img.format, img.width, img.height, len(img.bytes), img.source)
    """
    bytes: bytes
    format: str
    width: int
    height: int
    source: str
    url: str


class FetchResponse(NamedTuple):
    """The result of ``Client.fetch``: the HTTP response the daemon got (or had in its cache).

    ``status`` is the HTTP status (any status is a result, 404 and 500 included); ``headers`` the response header
    fields as ``(name, value)`` tuples in the order received, duplicates kept; ``url`` the URL of this response
    after ``redirects`` redirects were followed; ``cache_status`` one of ``"hit"``, ``"miss"``, ``"revalidated"``,
    ``"stale"``, ``"coalesced"``, ``"bypass"`` and ``age_s`` the response's age in seconds (None when the daemon
    did not say); ``timing`` the daemon's times in ms (``total_ms``, and for an origin exchange ``dns_ms``,
    ``connect_ms``, ``tls_ms``, ``first_byte_ms``, ``transfer_ms``); ``body`` the decoded body (``b""`` for HEAD).

    ::

        r = ferry.fetch(url)
        r.ok                           # 200 <= status <= 299
        r.header("Content-Type")       # the first value, names compared case-insensitively; None when absent
        r.header_values("set-cookie")  # every value, in order
        r.text(), r.json()             # the body as str (utf-8 unless told) or as parsed JSON
    """
    status: int
    headers: List[Tuple[str, str]]
    url: str
    redirects: int
    cache_status: Optional[str]
    age_s: Optional[int]
    timing: Dict[str, Any]
    body: bytes

    @property
    def ok(self) -> bool:
        """True for a status 200 … 299."""
        return 200 <= self.status <= 299

    def header(self, name: str) -> Optional[str]:
        """The value of the first header field called ``name`` (case-insensitive), or None."""
        lowered = name.lower()
        return next((value for key, value in self.headers if key.lower() == lowered), None)

    def header_values(self, name: str) -> List[str]:
        """The values of every header field called ``name`` (case-insensitive), in order; ``[]`` when absent."""
        lowered = name.lower()
        return [value for key, value in self.headers if key.lower() == lowered]

    def text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        """The body decoded as ``encoding`` (``errors`` as for ``bytes.decode``)."""
        return self.body.decode(encoding, errors)

    def json(self) -> Any:
        """The body parsed as JSON (UTF-8, -16 or -32); raises ``ValueError`` when it is not JSON."""
        return json.loads(self.body)

    def __repr__(self) -> str:
        body = self.body if len(self.body) <= 32 else self.body[:32] + b"..."
        return (f"FetchResponse(status={self.status}, url={self.url!r}, redirects={self.redirects}, "
                f"cache_status={self.cache_status!r}, age_s={self.age_s}, headers={len(self.headers)}, "
                f"body={len(self.body)} bytes {body!r})")


# --------------------------------------------------------------------------------------------------- errors

class FerryError(Exception):
    """An error reply from ferryd, or a local failure described with a protocol error code.

    ``code`` is one of ERROR_CODES (a code this client does not know becomes ``internal``, the original is kept in
    ``wire_code``); ``message`` is human-readable; ``details`` is a dict (possibly empty).
    """

    def __init__(self, code: str, message: str, details: Optional[dict] = None):
        self.wire_code = code
        self.code = code if code in ERROR_CODES else "internal"
        self.message = message
        self.details = details if isinstance(details, dict) else {}
        super().__init__(f"{self.code}: {message}")

    @staticmethod
    def make(code: str, message: str, details: Optional[dict] = None) -> "FerryError":
        """A FerryError, or a FerryProtocolError for code ``protocol_error``."""
        if code == "protocol_error":
            return FerryProtocolError(message, details)
        return FerryError(code, message, details)

    @classmethod
    def from_wire(cls, error: Any) -> "FerryError":
        """Builds the exception for the ``error`` object of a final reply."""
        if not isinstance(error, dict):
            return FerryProtocolError(f"malformed error object in reply: {error!r}")
        code = error.get("code")
        message = error.get("message")
        code = code if isinstance(code, str) else "internal"
        message = message if isinstance(message, str) else "(no message)"
        return cls.make(code, message, error.get("details"))


class FerryProtocolError(FerryError):
    """The byte stream broke the framing rules (code ``protocol_error``); the connection cannot be used further."""

    def __init__(self, message: str, details: Optional[dict] = None):
        super().__init__("protocol_error", message, details)


# --------------------------------------------------------------------------------------------------- transport

def default_socket_path(environ: Optional[Dict[str, str]] = None) -> str:
    """Where ferryd listens (PROTOCOL.md section 1): $FERRY_SOCKET, else $XDG_RUNTIME_DIR/ferry/ferryd.sock,
    else /tmp/ferry-$UID/ferryd.sock. Empty variables count as unset."""
    env = os.environ if environ is None else environ
    if env.get("FERRY_SOCKET"):
        return env["FERRY_SOCKET"]
    if env.get("XDG_RUNTIME_DIR"):
        return os.path.join(env["XDG_RUNTIME_DIR"], "ferry", "ferryd.sock")
    return f"/tmp/ferry-{os.getuid()}/ferryd.sock"


# --------------------------------------------------------------------------------------------------- framing

def encode_json(envelope: dict) -> bytes:
    """The envelope as compact UTF-8 JSON, the form of PROTOCOL.md section 10."""
    if not isinstance(envelope, dict):
        raise TypeError(f"an envelope must be a dict, not {type(envelope).__name__}")
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def encode_frame(envelope: dict, body: bytes = b"") -> bytes:
    """One frame: json_len and body_len (big-endian u32), the envelope JSON, then the raw body."""
    data = encode_json(envelope)
    body = bytes(body)
    return HEADER.pack(len(data), len(body)) + data + body


def _reject_duplicates(pairs: List[Tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {dup!r}")
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _nesting_depth(value: Any) -> int:
    """Deepest nesting of arrays and objects; a bare object is depth 1."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def decode_envelope(data: bytes, max_nesting: int = DEFAULT_MAX_NESTING) -> dict:
    """Parses and checks one envelope (section 3). Raises FerryError("invalid_argument") when it is not valid
    UTF-8, not one JSON object, has duplicate keys, nests too deep, or lacks an integer ``id`` in 0 … 2^53−1."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise FerryError("invalid_argument", f"envelope is not valid UTF-8: {e}") from None
    try:
        envelope = json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)
    except RecursionError:
        raise FerryError("invalid_argument", f"envelope nests deeper than {max_nesting}") from None
    except ValueError as e:
        raise FerryError("invalid_argument", f"envelope is not valid JSON: {e}") from None
    if not isinstance(envelope, dict):
        raise FerryError("invalid_argument", f"envelope must be a JSON object, not {type(envelope).__name__}")
    if _nesting_depth(envelope) > max_nesting:
        raise FerryError("invalid_argument", f"envelope nests deeper than {max_nesting}")
    _check_id(envelope, minimum=0)
    return envelope


def _check_id(envelope: dict, minimum: int) -> None:
    if "id" not in envelope:
        raise FerryError("invalid_argument", "envelope has no id")
    rid = envelope["id"]
    if not _is_int(rid):
        raise FerryError("invalid_argument", f"id must be an integer, not {rid!r}")
    if not minimum <= rid <= MAX_ID:
        raise FerryError("invalid_argument", f"id {rid} is out of range {minimum} … {MAX_ID}")


def check_request(envelope: dict) -> None:
    """Checks the request fields of section 3 (id, op, args, timeout_ms); raises FerryError("invalid_argument")."""
    _check_id(envelope, minimum=1)
    if not isinstance(envelope.get("op"), str):
        raise FerryError("invalid_argument", "request op is missing or not a string")
    if not isinstance(envelope.get("args", {}), dict):
        raise FerryError("invalid_argument", "request args must be an object")
    timeout_ms = envelope.get("timeout_ms", 1)
    if not _is_int(timeout_ms) or not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
        raise FerryError("invalid_argument", f"timeout_ms must be an integer 1 … {MAX_TIMEOUT_MS}, not {timeout_ms!r}")


def split_request(envelope: dict, body: bytes, max_frame_bytes: int,
                  max_json_bytes: int = DEFAULT_MAX_JSON_BYTES) -> List[Tuple[dict, memoryview]]:
    """The frames of one request as ``(envelope, body part)`` pairs: ``encode_frame(envelope, part)`` for each, in
    order, is what goes on the wire (PROTOCOL.md section 5, "Request bodies larger than one frame").

    A request that fits one frame of ``max_frame_bytes`` is that one frame, unchanged. Otherwise the first frame is
    the envelope plus ``"more": true`` with as much of the body as fits, and each further part travels in a
    continuation frame ``{"id": N, "more": true}``; the last one has ``"more": false``. Continuation parts all
    have the same size (what fits beside ``{"id": N, "more": false}``), so no part is empty.

    Raises FerryError("resource_exhausted") when the envelope's JSON exceeds ``max_json_bytes``, or when the body
    must be split but the first frame leaves less than MIN_BODY_PART_BYTES for it. The parts are views of
    ``body``, not copies."""
    view = _byte_view(body)
    frames = _split_request(envelope, view, max_frame_bytes, max_json_bytes)
    return [(env, part) for env, _, part in frames]


def _byte_view(body: Any) -> memoryview:
    """``body`` as a flat view of bytes (anything ``bytes()`` accepts, as ``encode_frame`` does)."""
    try:
        view = memoryview(body)
    except TypeError:
        return memoryview(bytes(body))
    try:
        return view.cast("B")
    except TypeError:            # not C-contiguous
        return memoryview(view.tobytes())


def _split_request(envelope: dict, body: memoryview, max_frame_bytes: int,
                   max_json_bytes: int) -> List[Tuple[dict, bytes, memoryview]]:
    """``split_request`` with each frame's encoded JSON: ``(envelope, json, part)``."""
    data = encode_json(envelope)
    if len(data) > max_json_bytes:
        raise FerryError("resource_exhausted",
                         f"request envelope of {len(data)} bytes exceeds max_json_bytes {max_json_bytes}")
    if HEADER_SIZE + len(data) + len(body) <= max_frame_bytes:
        return [(envelope, data, body)]
    first = dict(envelope)
    first["more"] = True
    data = encode_json(first)
    room = max_frame_bytes - HEADER_SIZE - len(data)
    if len(data) > max_json_bytes or room < MIN_BODY_PART_BYTES:
        raise FerryError("resource_exhausted",
                         f"request of {HEADER_SIZE + len(data) + len(body)} bytes exceeds the frame limit of "
                         f"{max_frame_bytes}, and its envelope ({len(data)} bytes of JSON) leaves no room to send "
                         f"the body in parts (at least {MIN_BODY_PART_BYTES} bytes needed)")
    frames = [(first, data, body[:room])]
    rid = envelope.get("id")
    last_data = encode_json({"id": rid, "more": False})
    more_data = encode_json({"id": rid, "more": True})
    step = max_frame_bytes - HEADER_SIZE - len(last_data)   # the longer of the two continuation envelopes
    offset = room
    while offset < len(body):
        end = min(len(body), offset + step)
        more = end < len(body)
        frames.append(({"id": rid, "more": more}, more_data if more else last_data, body[offset:end]))
        offset = end
    return frames


class FrameDecoder:
    """Incremental frame decoder: ``feed(bytes)`` returns the list of complete ``(envelope, body)`` frames.

    Input may be split at any byte; one feed may hold several frames. The header's lengths are checked as soon as
    its 8 bytes are in, before anything else is buffered: json_len 0, json_len > max_json_bytes or a frame larger
    than max_frame_bytes raise FerryProtocolError, after which the decoder refuses all further input. An envelope
    that is not a valid JSON object (see decode_envelope) raises FerryError("invalid_argument"); that frame is
    dropped and decoding can go on with the next ``feed`` (``feed(b"")`` to continue with buffered input).
    Frames completed before the error in the same call are on the exception's ``frames`` attribute.

    The limits are plain attributes; a client raises ``max_frame_bytes`` once ``hello`` succeeded.
    """

    def __init__(self, max_frame_bytes: int = DEFAULT_HANDSHAKE_FRAME_BYTES,
                 max_json_bytes: int = DEFAULT_MAX_JSON_BYTES, max_nesting: int = DEFAULT_MAX_NESTING):
        self.max_frame_bytes = max_frame_bytes
        self.max_json_bytes = max_json_bytes
        self.max_nesting = max_nesting
        self._buf = bytearray()
        self._pos = 0
        self._header: Optional[Tuple[int, int]] = None
        self._broken: Optional[FerryProtocolError] = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a returned frame."""
        return len(self._buf) - self._pos

    def feed(self, data: bytes) -> List[Frame]:
        if self._broken is not None:
            raise self._broken
        self._buf += data
        frames: List[Frame] = []
        try:
            while True:
                frame = self._next_frame()
                if frame is None:
                    break
                frames.append(frame)
        except FerryError as e:
            e.frames = frames
            raise
        finally:
            self._compact()
        return frames

    def _next_frame(self) -> Optional[Frame]:
        if self._header is None:
            if self.buffered < HEADER_SIZE:
                return None
            self._header = self._check_header(*HEADER.unpack_from(self._buf, self._pos))
            self._pos += HEADER_SIZE
        json_len, body_len = self._header
        if self.buffered < json_len + body_len:
            return None
        start = self._pos
        self._pos += json_len + body_len
        self._header = None
        body = bytes(self._buf[start + json_len:self._pos])
        envelope = decode_envelope(self._buf[start:start + json_len], self.max_nesting)
        return envelope, body

    def _check_header(self, json_len: int, body_len: int) -> Tuple[int, int]:
        size = HEADER_SIZE + json_len + body_len
        if json_len == 0:
            self._fail("frame has json_len 0 (an envelope is at least 1 byte)")
        elif json_len > self.max_json_bytes:
            self._fail(f"json_len {json_len} exceeds max_json_bytes {self.max_json_bytes}")
        elif size > self.max_frame_bytes:
            self._fail(f"frame of {size} bytes exceeds the limit of {self.max_frame_bytes}")
        return json_len, body_len

    def _fail(self, message: str) -> None:
        self._broken = FerryProtocolError(message)
        self._buf = bytearray()
        self._pos = 0
        raise self._broken

    def _compact(self) -> None:
        if self._pos:
            del self._buf[:self._pos]
            self._pos = 0


# --------------------------------------------------------------------------------------------------- fetch helpers

_NO_JSON = object()   # fetch(json=...) not given (json=None sends JSON null)


def _header_pairs(headers: Any) -> List[List[str]]:
    """``headers`` (None, a mapping, or pairs) as the wire's ``[[name, value], ...]``; ValueError for wrong types."""
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        items = list(headers.items())
    elif isinstance(headers, (str, bytes, bytearray, memoryview)) or not isinstance(headers, Iterable):
        raise ValueError(f"fetch: headers must be a dict or a list of (name, value) pairs, not "
                         f"{type(headers).__name__}")
    else:
        items = []
        for item in headers:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise ValueError(f"fetch: each header must be a (name, value) pair, not {item!r}")
            items.append(item)
    for name, value in items:
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"fetch: header names and values must be str, not {name!r}: {value!r}")
    return [[name, value] for name, value in items]


def _byte_view_len(body: Any) -> int:
    """The length in bytes of a bytes-like ``body``; 1 for anything else (it is not "no body")."""
    try:
        return memoryview(body).nbytes
    except TypeError:
        return 1


def _json_body(value: Any) -> bytes:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise ValueError(f"fetch: json= value cannot be encoded as JSON: {e}") from None


def _fetch_response(url: str, result: dict, body: bytes) -> FetchResponse:
    """A FetchResponse from a fetch result and its body; FerryError("internal") when the result is malformed."""
    status = result.get("status")
    raw_headers = result.get("headers", [])
    if not _is_int(status) or not isinstance(raw_headers, list):
        raise FerryError("internal", f"fetch of {url!r}: malformed result {result!r}")
    headers = []
    for pair in raw_headers:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise FerryError("internal", f"fetch of {url!r}: malformed header field {pair!r}")
        headers.append((pair[0], pair[1]))
    size = result.get("size")
    if _is_int(size) and size != len(body):
        raise FerryError("internal", f"fetch of {url!r}: result says size {size} but the body has {len(body)} bytes")
    cache = result.get("cache") if isinstance(result.get("cache"), dict) else {}
    timing = result.get("timing") if isinstance(result.get("timing"), dict) else {}
    redirects = result.get("redirects", 0)
    return FetchResponse(status=status, headers=headers, url=result.get("url", url),
                         redirects=redirects if _is_int(redirects) else 0,
                         cache_status=cache.get("status"), age_s=cache.get("age_s"), timing=dict(timing),
                         body=body)


# --------------------------------------------------------------------------------------------------- client

_FINAL = "final"
_EVENT = "event"
_CLOSED = "closed"


class _Pending:
    """One request in flight: the reader thread puts its replies on ``items``."""

    __slots__ = ("id", "op", "timeout_ms", "items")

    def __init__(self, rid: int, op: str, timeout_ms: Optional[int]):
        self.id = rid
        self.op = op
        self.timeout_ms = timeout_ms
        self.items: "queue.Queue[tuple]" = queue.Queue()


class Client:
    """A connection to ferryd.

    ``Client(path=None, name="python", timeout=None)``: ``path`` defaults to default_socket_path(); ``name`` is
    sent in ``hello``; ``timeout`` (seconds) bounds connecting and is the local wait limit of requests sent without
    ``timeout_ms`` (None: wait as long as it takes). Requests with ``timeout_ms`` wait locally for that plus a short
    grace, then raise ``deadline_exceeded`` and send a ``cancel``.

    Thread-safe: any number of threads may call, stream, send and wait at once. When the connection closes, every
    waiter gets a FerryError (``unavailable``, or the code the server named in its last connection-level error).

    A request body larger than one frame is sent in parts (see ``split_request``); ``send``, ``call``, ``stream``
    and the cache methods return once all parts are written, and the frames of other requests wait meanwhile.
    Sending is refused locally with ``resource_exhausted`` only when the envelope's JSON exceeds the server's
    ``max_json_bytes`` or leaves less than MIN_BODY_PART_BYTES of a frame for a body that needs splitting; a body
    over the server's ``max_value_bytes`` is refused by the server (``resource_exhausted``, nothing stored).
    """

    def __init__(self, path: Optional[str] = None, name: str = "python", timeout: Optional[float] = None):
        self.path = path or default_socket_path()
        self.name = name
        self.timeout = timeout
        self.version: Optional[int] = None
        self.server: Optional[str] = None
        self.limits: Dict[str, int] = {}
        self.operations: List[str] = []
        self._sock: Optional[socket.socket] = None
        self._decoder = FrameDecoder()
        self._send_limit = DEFAULT_HANDSHAKE_FRAME_BYTES
        self._send_json_limit = DEFAULT_MAX_JSON_BYTES
        self._ids = itertools.count(1)
        self._lock = threading.Lock()          # guards _pending, _closed_error, _ids
        self._send_lock = threading.Lock()     # one request (all of its frames) at a time on the socket
        self._pending: Dict[int, _Pending] = {}
        self._closed_error: Optional[FerryError] = None
        self._server_error: Optional[FerryError] = None
        self._reader: Optional[threading.Thread] = None

    # ----- lifecycle

    def connect(self) -> "Client":
        """Connects and says ``hello``; stores the server's ``version``, ``server``, ``limits`` and ``operations``."""
        if self._sock is not None:
            raise FerryError("failed_precondition", "this Client already connected once; make a new Client")
        self._sock = self._open_socket()
        self._reader = threading.Thread(target=self._read_loop, name=f"ferry-reader-{self.path}", daemon=True)
        self._reader.start()
        try:
            result, _ = self.call("hello", {"versions": [PROTOCOL_VERSION], "client": self.name})
        except BaseException:
            self.close()
            raise
        self._accept_hello(result)
        return self

    def _open_socket(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.path)
        except OSError as e:
            sock.close()
            raise FerryError("unavailable", f"cannot connect to ferryd at {self.path}: {e}") from e
        sock.settimeout(None)
        return sock

    def _accept_hello(self, result: dict) -> None:
        self.version = result.get("version")
        self.server = result.get("server")
        self.limits = dict(result.get("limits") or {})
        self.operations = list(result.get("operations") or [])
        max_frame = self.limits.get("max_frame_bytes", DEFAULT_MAX_FRAME_BYTES)
        self._decoder.max_frame_bytes = max_frame
        self._decoder.max_json_bytes = self.limits.get("max_json_bytes", DEFAULT_MAX_JSON_BYTES)
        self._decoder.max_nesting = self.limits.get("max_nesting", DEFAULT_MAX_NESTING)
        self._send_limit = max_frame
        self._send_json_limit = self._decoder.max_json_bytes

    def close(self) -> None:
        """Closes the connection (the server cancels what is still in flight); waiters get ``unavailable``."""
        sock = self._sock
        if sock is None:
            return
        self._shutdown(FerryError("unavailable", "the client closed the connection"))
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=5)
        sock.close()

    def __enter__(self) -> "Client":
        if self._sock is None:
            self.connect()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed_error is not None

    # ----- requests

    def send(self, op: str, args: Optional[dict] = None, body: bytes = b"", timeout_ms: Optional[int] = None) -> int:
        """Sends a request without waiting; returns its id for ``wait`` (which every ``send`` needs, to collect the
        reply) and ``cancel``."""
        return self._start(op, args, body, timeout_ms).id

    def wait(self, request_id: int, timeout: Optional[float] = None) -> Tuple[dict, bytes]:
        """Waits for the final reply of a request from ``send``; returns ``(result, body)`` or raises FerryError.

        Chunk events are put together into the returned body; other events are skipped. ``timeout`` (seconds)
        defaults to the client's local limit for the request; when it passes, the request is given up (and a
        ``cancel`` sent) and ``deadline_exceeded`` raised."""
        pending = self._lookup(request_id)
        deadline = self._deadline(timeout, pending.timeout_ms)
        return self._collect(pending, deadline)

    def call(self, op: str, args: Optional[dict] = None, body: bytes = b"",
             timeout_ms: Optional[int] = None) -> Tuple[dict, bytes]:
        """Sends a request and waits for its final reply: ``(result, body)``; raises FerryError on an error reply."""
        pending = self._start(op, args, body, timeout_ms)
        return self._collect(pending, self._deadline(None, timeout_ms))

    def stream(self, op: str, args: Optional[dict] = None, body: bytes = b"",
               timeout_ms: Optional[int] = None) -> Iterator[tuple]:
        """Sends a request (when iteration starts) and yields its replies as they come:
        ``("event", name, data, body)`` for each event, then ``("final", result, body)``. An error reply raises
        FerryError. Leaving the loop early cancels the request."""
        pending = self._start(op, args, body, timeout_ms)
        deadline = self._deadline(None, timeout_ms)
        finished = False
        try:
            while True:
                kind, *fields = self._next_item(pending, deadline)
                if kind == _EVENT:
                    yield (_EVENT, *fields)
                    continue
                finished = True
                yield (_FINAL, *fields)
                return
        except FerryError:
            finished = True
            raise
        finally:
            if not finished:
                self._abandon(pending)

    def cancel(self, request_id: int) -> dict:
        """Asks the server to cancel a request of this connection: ``{"cancelled": True}`` if it was in flight."""
        result, _ = self.call("cancel", {"id": request_id})
        return result

    def ping(self, body: bytes = b"", **args) -> Tuple[dict, bytes]:
        """``ping`` (args: ``delay_ms``, ``events``); returns ``({"pong": True}, echoed body)``."""
        return self.call("ping", args, body)

    def describe(self) -> dict:
        """Every operation the server knows, with its arguments and result fields."""
        return self.call("describe")[0]

    def stats(self) -> dict:
        """Server counters: connections, requests, bytes, per-operation and per-error counts."""
        return self.call("stats")[0]

    # ----- the shared key-value cache (cache.*)
    #
    # Arguments are sent as given and checked by the server, which answers ``invalid_argument`` for a wrong type,
    # an empty key or one over 1024 UTF-8 bytes, a bad namespace (1 … 128 bytes of A-Z a-z 0-9 . _ -), a ttl_ms
    # outside 1 … 315360000000, or a limit outside 1 … 1000. ``namespace=None`` leaves the argument out, which
    # means "default". Only the value is checked here, since it travels as the request body: it must be
    # bytes-like. A value larger than one frame is sent in parts (PROTOCOL.md section 5); one over the server's
    # max_value_bytes is refused by the server with ``resource_exhausted`` (nothing stored).

    def cache_set(self, key: str, value: bytes, namespace: Optional[str] = None, ttl_ms: Optional[int] = None,
                  if_absent: bool = False) -> bool:
        """Stores ``value`` under ``key``. ``ttl_ms=None``: the entry never expires. With ``if_absent`` nothing is
        replaced when a live entry exists. Returns True when stored, False when ``if_absent`` found a live entry.

        A value larger than one frame is uploaded in parts (continuation frames), transparently.

        Raises TypeError when ``value`` is not bytes-like (bytes, bytearray, memoryview); FerryError
        ``resource_exhausted`` when the value exceeds the server's ``max_value_bytes`` or the server's disk is full
        (nothing is stored), or locally when the request's envelope is too large to send (``key`` longer than
        max_json_bytes allows); ``invalid_argument`` for bad arguments."""
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"a cache value must be bytes-like, not {type(value).__name__}")
        args = self._cache_args(key, namespace)
        if ttl_ms is not None:
            args["ttl_ms"] = ttl_ms
        if if_absent is not False:
            args["if_absent"] = if_absent
        result, _ = self.call("cache.set", args, value)
        return result.get("stored") is True

    def cache_get(self, key: str, namespace: Optional[str] = None) -> CacheEntry:
        """Reads an entry: ``CacheEntry(value, size, created_at, expires_at)``. A value larger than a frame arrives
        as chunk events and is put together here.

        Raises FerryError with code ``not_found`` when the key is absent or expired (use
        ``cache_get_or_none`` for None instead)."""
        result, body = self.call("cache.get", self._cache_args(key, namespace))
        size = result.get("size", len(body))
        if size != len(body):
            raise FerryError("internal", f"cache.get of {key!r}: result says size {size!r} but the value has "
                                         f"{len(body)} bytes")
        return CacheEntry(body, len(body), result.get("created_at"), result.get("expires_at"))

    def cache_get_or_none(self, key: str, namespace: Optional[str] = None) -> Optional[CacheEntry]:
        """Like ``cache_get``, but None when the key is absent or expired."""
        try:
            return self.cache_get(key, namespace)
        except FerryError as e:
            if e.code == "not_found":
                return None
            raise

    def cache_delete(self, key: str, namespace: Optional[str] = None) -> bool:
        """Removes an entry; True when there was one to remove."""
        result, _ = self.call("cache.delete", self._cache_args(key, namespace))
        return result.get("deleted") is True

    def cache_touch(self, key: str, ttl_ms: Optional[int], namespace: Optional[str] = None) -> Optional[int]:
        """Gives a live entry a new time to live, counted from now; ``ttl_ms=None`` (sent as JSON null) makes it
        never expire. Returns the new ``expires_at`` (ms since the Unix epoch), or None for never. Raises FerryError
        ``not_found`` when the key is absent or expired."""
        args = self._cache_args(key, namespace)
        args["ttl_ms"] = ttl_ms
        result, _ = self.call("cache.touch", args)
        return result.get("expires_at")

    def cache_list(self, namespace: Optional[str] = None, prefix: Optional[str] = None,
                   limit: Optional[int] = None) -> Iterator[CacheKey]:
        """Every live key of a namespace (those starting with ``prefix`` if given), in byte order, as
        ``CacheKey(key, size, expires_at)``. ``limit`` is the page size (server default 100, at most 1000): the
        iterator fetches the next page with the server's ``cursor`` when the previous one is used up.

        The first page is requested at once, so bad arguments raise here rather than on the first ``next``; later
        pages are requested lazily. Entries written or removed while paging may or may not be seen."""
        keys, cursor = self.cache_list_page(namespace, prefix, limit)
        return self._cache_list_pages(keys, cursor, namespace, prefix, limit)

    def cache_list_page(self, namespace: Optional[str] = None, prefix: Optional[str] = None,
                        limit: Optional[int] = None,
                        cursor: Optional[str] = None) -> Tuple[List[CacheKey], Optional[str]]:
        """One page of ``cache.list``: ``(keys, cursor)``; ``cursor`` is None on the last page, else the value to
        pass for the next page."""
        args: Dict[str, Any] = {}
        if namespace is not None:
            args["namespace"] = namespace
        if prefix is not None:
            args["prefix"] = prefix
        if limit is not None:
            args["limit"] = limit
        if cursor is not None:
            args["cursor"] = cursor
        result, _ = self.call("cache.list", args)
        items = result.get("keys")
        if not isinstance(items, list):
            raise FerryError("internal", f"cache.list result has no keys array: {result!r}")
        keys = [CacheKey(item.get("key"), item.get("size"), item.get("expires_at"))
                for item in items if isinstance(item, dict)]
        return keys, result.get("cursor")

    def _cache_list_pages(self, keys: List[CacheKey], cursor: Optional[str], namespace: Optional[str],
                          prefix: Optional[str], limit: Optional[int]) -> Iterator[CacheKey]:
        while True:
            yield from keys
            if cursor is None:
                return
            previous = cursor
            keys, cursor = self.cache_list_page(namespace, prefix, limit, previous)
            if cursor is not None and cursor == previous:
                raise FerryError("internal", f"cache.list returned the cursor it was given ({cursor!r}); "
                                             "paging would never end")

    def cache_clear(self, namespace: Optional[str] = None) -> int:
        """Removes every entry of a namespace (``"default"`` when None); returns how many were removed."""
        args: Dict[str, Any] = {}
        if namespace is not None:
            args["namespace"] = namespace
        result, _ = self.call("cache.clear", args)
        return result.get("removed")

    @staticmethod
    def _cache_args(key: Any, namespace: Optional[str]) -> Dict[str, Any]:
        args: Dict[str, Any] = {"key": key}
        if namespace is not None:
            args["namespace"] = namespace
        return args

    # ----- HTTP through the daemon's shared cache (fetch)
    #
    # Only what is obviously wrong is refused here, with ValueError: a url that is not a str, headers that are not
    # a dict or a list of (str, str) pairs, a body that is not bytes-like, both body and json. Everything else
    # (the URL itself, the method, header names and values, the modes and limits) is sent as given and judged by
    # the daemon, which answers ``invalid_argument``.

    def image(self, url: str, headers: Optional[Union[Mapping[str, str], Iterable[Tuple[str, str]]]] = None, *,
              cache: Optional[str] = None, timeout_ms: Optional[int] = None,
              request_timeout_ms: Optional[int] = None) -> Image:
        """An image through the daemon's shared image loader (memory, disk, or one download shared by every client
        asking at once). A body that is not an image raises ``FerryError("invalid_image")``.

        ::

            img = ferry.image("https://img.example.com/a.png")
            open("a." + img.format, "wb").write(img.bytes)
        """
        if not isinstance(url, str):
            raise ValueError("url must be a str")
        args: Dict[str, Any] = {"url": url}
        if headers:
            pairs = list(headers.items()) if isinstance(headers, Mapping) else [tuple(h) for h in headers]
            args["headers"] = [[str(n), str(v)] for n, v in pairs]
        if cache is not None:
            args["cache"] = cache
        if timeout_ms is not None:
            args["timeout_ms"] = timeout_ms
        result, body = self.call("image.get", args, timeout_ms=request_timeout_ms)
        return Image(body, result.get("format", ""), int(result.get("width", 0)), int(result.get("height", 0)),
                     result.get("source", ""), result.get("url", url))

    def prefetch_images(self, urls: Iterable[str]) -> int:
        """Queues downloads that warm the daemon's caches; returns how many were queued."""
        return int(self.call("image.prefetch", {"urls": list(urls)})[0].get("queued", 0))

    def evict_image(self, url: str) -> bool:
        """Drops a URL's image from the loader's memory tier; returns whether it was there."""
        return bool(self.call("image.evict", {"url": url})[0].get("evicted", False))

    def fetch(self, url: str, method: str = "GET",
              headers: Optional[Union[Mapping[str, str], Iterable[Tuple[str, str]]]] = None, body: bytes = b"",
              *, json: Any = _NO_JSON, timeout_ms: Optional[int] = None, redirect: Optional[str] = None,
              max_redirects: Optional[int] = None, max_bytes: Optional[int] = None, cache: Optional[str] = None,
              progress: Optional[Callable[[int, Optional[int]], Any]] = None,
              request_timeout_ms: Optional[int] = None) -> FetchResponse:
        """Makes an HTTP request through the daemon and its shared HTTP cache (PROTOCOL.md section 6, ``fetch``);
        returns a ``FetchResponse``. Any HTTP status, 404 and 500 included, is a result, not an error.

        ``headers``: a dict, or a list of ``(name, value)`` pairs (order and duplicates kept). ``body``: bytes-like
        (None: none), sent as the request body, in parts when larger than a frame (which ferryd 0.1.0 still
        refuses with ``invalid_argument``); ``GET`` and ``HEAD`` take none, so pass ``method`` too. ``json=obj``
        instead of ``body`` sends ``obj`` as compact UTF-8 JSON, with ``Content-Type: application/json`` unless
        ``headers`` name a Content-Type. The keyword arguments are the daemon's, left out when None:

        - ``timeout_ms``: limit of each exchange with the origin (``deadline_exceeded``);
        - ``redirect``: ``"follow"`` (default), ``"manual"`` (a 3xx is the result) or ``"error"``;
        - ``max_redirects`` (default 10), ``max_bytes`` (largest response body, default 64 MiB);
        - ``cache``: ``"default"``, ``"no-store"``, ``"reload"``, ``"no-cache"``, ``"force-cache"`` or
          ``"only-if-cached"`` (nothing stored → status 504);
        - ``progress``: a callable, called as ``progress(received, total)`` (``total`` None when unknown) while the
          daemon downloads, at most every 100 ms; an exception from it cancels the request and propagates;
        - ``request_timeout_ms``: the deadline of the whole request (the envelope's ``timeout_ms``); the local
          wait is bounded by it too (else by the Client's ``timeout``).

        ::

            r = ferry.fetch("https://example.com/data.json", headers={"Accept": "application/json"})
            if r.ok:
                data = r.json()
            r = ferry.fetch(url, "PUT", [("X-Tag", "a"), ("X-Tag", "b")], b"\\x00raw", cache="no-store")
            r = ferry.fetch(url, "POST", json={"q": 1}, request_timeout_ms=30_000)
            r = ferry.fetch(url, redirect="manual")       # r.status == 302, r.header("Location")

        Raises ValueError for the local checks above; FerryError from the daemon: ``invalid_argument`` (bad URL,
        scheme, method or header), ``unavailable`` (DNS, connection, TLS, a reset or truncated response;
        ``details`` has ``curl_code`` and ``curl_message``), ``deadline_exceeded``, ``resource_exhausted`` (body
        over ``max_bytes``; ``details["max_bytes"]``), ``failed_precondition`` (too many redirects, a redirect with
        ``redirect="error"`` or to another scheme)."""
        if not isinstance(url, str):
            raise ValueError(f"fetch: url must be a str, not {type(url).__name__}")
        if not isinstance(method, str):
            raise ValueError(f"fetch: method must be a str, not {type(method).__name__}")
        pairs = _header_pairs(headers)
        if body is None:
            body = b""
        if json is not _NO_JSON:
            if _byte_view_len(body):
                raise ValueError("fetch: give either body or json, not both")
            body = _json_body(json)
            if not any(name.lower() == "content-type" for name, _ in pairs):
                pairs.append(["Content-Type", "application/json"])
        elif not isinstance(body, (bytes, bytearray, memoryview)):
            hint = " (encode a str first, or pass json=)" if isinstance(body, str) else ""
            raise ValueError(f"fetch: body must be bytes-like, not {type(body).__name__}{hint}")
        if progress is not None and not callable(progress):
            raise ValueError(f"fetch: progress must be a callable taking (received, total), not {progress!r}")

        args: Dict[str, Any] = {"url": url}
        if method != "GET":
            args["method"] = method
        if pairs:
            args["headers"] = pairs
        for name, value in (("timeout_ms", timeout_ms), ("redirect", redirect), ("max_redirects", max_redirects),
                            ("max_bytes", max_bytes), ("cache", cache)):
            if value is not None:
                args[name] = value
        on_event = None
        if progress is not None:
            args["progress"] = True

            def on_event(name: str, data: dict) -> None:
                if name == "progress":
                    received = data.get("received", data.get("bytes"))
                    if _is_int(received):
                        total = data.get("total")
                        progress(received, total if _is_int(total) else None)

        pending = self._start("fetch", args, body, request_timeout_ms)
        result, data = self._collect(pending, self._deadline(None, request_timeout_ms), on_event)
        return _fetch_response(url, result, data)

    # ----- internals: sending

    def _start(self, op: str, args: Optional[dict], body: bytes, timeout_ms: Optional[int]) -> _Pending:
        envelope: Dict[str, Any] = {"id": 0, "op": op}
        if args:
            envelope["args"] = args
        if timeout_ms is not None:
            envelope["timeout_ms"] = timeout_ms
        body = _byte_view(body)
        with self._lock:
            self._raise_if_closed()
            rid = envelope["id"] = next(self._ids)
            check_request(envelope)
            pending = _Pending(rid, op, timeout_ms)
            self._pending[rid] = pending
        try:
            self._write(_split_request(envelope, body, self._send_limit, self._send_json_limit))
        except BaseException:
            self._forget(rid)
            raise
        return pending

    def _write(self, frames: List[Tuple[dict, bytes, memoryview]]) -> None:
        """Writes the frames of one request back to back: no other frame comes in between."""
        with self._send_lock:
            self._raise_if_closed()
            try:
                for _, data, part in frames:
                    head = HEADER.pack(len(data), len(part)) + data
                    if len(part) <= 65536:
                        self._sock.sendall(head + part)
                    else:                                      # no copy of a large part
                        self._sock.sendall(head)
                        self._sock.sendall(part)
            except OSError as e:
                err = FerryError("unavailable", f"connection to ferryd lost while sending: {e}")
                self._shutdown(err)
                raise err from e
            except BaseException:
                # interrupted (KeyboardInterrupt, …), maybe with a frame or a request half written: the byte stream
                # can no longer be trusted
                self._shutdown(FerryError("unavailable", "interrupted while sending a request; the connection was "
                                                         "closed"))
                raise

    def _send_cancel_nowait(self, request_id: int) -> None:
        """Best effort: asks the server to stop a request whose answer nobody waits for any more."""
        with self._lock:
            if self._closed_error is not None:
                return
            rid = next(self._ids)
        envelope = {"id": rid, "op": "cancel", "args": {"id": request_id}}
        try:
            self._write([(envelope, encode_json(envelope), memoryview(b""))])
        except FerryError:
            pass

    # ----- internals: waiting

    def _deadline(self, timeout: Optional[float], timeout_ms: Optional[int]) -> Optional[float]:
        if timeout is None and timeout_ms is not None:
            timeout = timeout_ms / 1000.0 + LOCAL_DEADLINE_GRACE_S
        if timeout is None:
            timeout = self.timeout
        return None if timeout is None else time.monotonic() + timeout

    def _lookup(self, request_id: int) -> _Pending:
        with self._lock:
            pending = self._pending.get(request_id)
        if pending is None:
            raise FerryError("not_found", f"request {request_id} is not waiting on this client "
                                          "(unknown id, or its reply was already collected)")
        return pending

    def _collect(self, pending: _Pending, deadline: Optional[float],
                 on_event: Optional[Callable[[str, dict], Any]] = None) -> Tuple[dict, bytes]:
        """The final reply, with the bodies of chunk events joined; other events go to ``on_event`` (an exception
        from it gives the request up, sends a ``cancel``, and propagates)."""
        parts: List[bytes] = []
        have = 0
        while True:
            kind, *fields = self._next_item(pending, deadline)
            if kind == _FINAL:
                result, body = fields
                parts.append(body)
                return result, b"".join(parts)
            name, data, body = fields
            if name == "chunk":
                self._check_chunk(pending, data, have)
                parts.append(body)
                have += len(body)
            elif on_event is not None:
                try:
                    on_event(name, data if isinstance(data, dict) else {})
                except BaseException:
                    self._abandon(pending)
                    raise

    def _check_chunk(self, pending: _Pending, data: Any, have: int) -> None:
        offset = data.get("offset") if isinstance(data, dict) else None
        if offset is not None and offset != have:
            self._abandon(pending)
            raise FerryProtocolError(f"request {pending.id}: chunk at offset {offset}, expected {have}")

    def _next_item(self, pending: _Pending, deadline: Optional[float]) -> tuple:
        """The next reply of a request; raises FerryError for an error reply, a closed connection or a timeout."""
        try:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            item = pending.items.get(timeout=remaining)
        except queue.Empty:
            self._abandon(pending)
            raise FerryError("deadline_exceeded",
                             f"no reply to request {pending.id} ({pending.op}) within the local timeout") from None
        kind = item[0]
        if kind == _EVENT:
            return item
        self._forget(pending.id)
        if kind == _CLOSED:
            err = item[1]   # shared by all waiters: raise a copy each
            raise FerryError.make(err.code, err.message, err.details)
        _, envelope, body = item
        if "error" in envelope:
            raise FerryError.from_wire(envelope["error"])
        result = envelope.get("result")
        return _FINAL, result if isinstance(result, dict) else {}, body

    def _abandon(self, pending: _Pending) -> None:
        if self._forget(pending.id):
            self._send_cancel_nowait(pending.id)

    def _forget(self, rid: int) -> bool:
        with self._lock:
            return self._pending.pop(rid, None) is not None

    def _raise_if_closed(self) -> None:
        if self._sock is None:
            raise FerryError("failed_precondition", "client is not connected; call connect() first")
        if self._closed_error is not None:
            err = self._closed_error
            raise FerryError.make(err.code, err.message, err.details)

    # ----- internals: the reader thread

    def _read_loop(self) -> None:
        reason = FerryError("unavailable", "ferryd closed the connection")
        try:
            while True:
                data = self._sock.recv(1 << 18)
                if not data:
                    break
                for envelope, body in self._decoder.feed(data):
                    self._dispatch(envelope, body)
        except FerryError as e:
            for envelope, body in getattr(e, "frames", []):
                self._dispatch(envelope, body)
            reason = FerryProtocolError(f"ferryd sent a malformed frame: {e.message}")
        except OSError as e:
            reason = FerryError("unavailable", f"connection to ferryd lost: {e}")
        if self._server_error is not None:
            err = self._server_error
            reason = FerryError.make(err.code, f"ferryd closed the connection after: {err.message}", err.details)
        self._shutdown(reason)

    def _dispatch(self, envelope: dict, body: bytes) -> None:
        rid = envelope["id"]
        if rid == 0:
            self._note_connection_error(envelope)
            return
        with self._lock:
            pending = self._pending.get(rid)
        if pending is None:
            return  # a reply nobody waits for any more (local timeout, abandoned stream, fire-and-forget cancel)
        if envelope.get("final") is False:
            pending.items.put((_EVENT, envelope.get("event"), envelope.get("data") or {}, body))
        else:
            pending.items.put((_FINAL, envelope, body))

    def _note_connection_error(self, envelope: dict) -> None:
        if not isinstance(envelope.get("error"), dict):
            return
        error = FerryError.from_wire(envelope["error"])
        if error.code in _CLOSING_CODES:
            self._server_error = error

    def _shutdown(self, reason: FerryError) -> None:
        """Marks the connection closed (first reason wins) and fails every waiter with ``reason``."""
        with self._lock:
            if self._closed_error is None:
                self._closed_error = reason
            reason = self._closed_error
            waiters = list(self._pending.values())
        for pending in waiters:
            pending.items.put((_CLOSED, reason))
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
