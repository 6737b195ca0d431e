"""Ferry client: talks to a local ``ferryd`` over its Unix socket (protocol version 1).

Python 3.9+, standard library only. The wire protocol is described in ``Protocol/PROTOCOL.md``.

As ``requests`` (``ferry.api``)::

    import ferry
    r = ferry.get("https://api.example.com/quotes", params={"page": 2}, timeout=5)   # seconds
    r.raise_for_status(); r.json(); r.from_cache
    with ferry.Session(headers={"Authorization": "Bearer " + token}) as s:
        s.post("https://api.example.com/search", json={"text": "courage"})

The whole protocol::

    from ferry import CacheMode, CacheStatus, Client, FerryError

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

        ferry.cache_set("build/abc", b"\\x00data", namespace="my-tool", ttl_ms=60_000)   # cache.*: bytes
        entry = ferry.cache_get("build/abc", namespace="my-tool")  # CacheEntry(value, size, created_at, expires_at)

        r = ferry.fetch("https://api.example.com/quotes/1", cache=CacheMode.default)   # HTTP via the daemon
        r.status, r.ok, r.cache_status == CacheStatus.hit, r.json()

        img = ferry.image("https://img.example.com/a.png")    # Image(bytes, format, width, height, source, url)

For asyncio, ``ferry.aio`` (imported on its own: ``import ferry.aio``) has ``AsyncClient``, the same methods as
coroutines on one connection shared by any number of tasks, and ``AsyncSession`` / ``ferry.aio.get`` …::

    async with ferry.aio.AsyncClient() as c:
        await c.cache_set("build/abc", b"data")
        counts = await asyncio.gather(*(c.cache_incr("hits") for _ in range(100)))

One ``Client`` may be shared by many threads: the threads waiting for replies read them, one at a time, and match
them to requests by id. A request body too large for one frame is sent in parts (PROTOCOL.md section 5) by the
Client itself; ``split_request`` shows the frames it would send. Large bodies come as descriptors when the daemon
offers it (``BodyFile``).

The modules: ``client`` (``Client``), ``aio`` (``AsyncClient``, ``AsyncSession``: asyncio), ``connection``
(socket, hello, reading by the waiting threads, generic requests), ``cache``, ``fetch``, ``image`` (the operation
families, as mixins of ``Client``), ``bodyfile`` (``BodyFile``), ``framing`` (frames, ``FrameDecoder``,
``split_request``), ``strictjson``, ``errors``, ``wire`` (the protocol's words as ``str`` enums) and ``paths``
(``default_socket_path``). The older single module ``ferry_client`` re-exports this package.
"""

from .bodyfile import BodyFile
from .cache import CacheEntry, CacheKey
from .client import Client
from .errors import ERROR_CODES, FerryError, FerryProtocolError
from .fetch import FetchResponse
from .framing import (
    DEFAULT_HANDSHAKE_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_JSON_BYTES, DEFAULT_MAX_NESTING,
    MIN_BODY_PART_BYTES, PROTOCOL_VERSION, FrameDecoder, check_request, decode_envelope, encode_frame, encode_json,
    split_request,
)
from .image import Image
from .api import HTTPError, Headers, Response, Session, delete, get, head, patch, post, put, request
from .paths import default_socket_path
from .wire import BodyKind, CacheMode, CacheStatus, ErrorCode, EventName, ImageFit, ImageOutputFormat, ImageSource, RedirectMode

__all__ = [
    "HTTPError", "Headers", "Response", "Session", "delete", "get", "head", "patch", "post", "put", "request",
    "BodyFile", "CacheEntry", "CacheKey", "Client", "FerryError", "FerryProtocolError", "FetchResponse", "FrameDecoder", "Image",
    "check_request", "decode_envelope", "default_socket_path", "encode_frame", "encode_json", "split_request",
    "PROTOCOL_VERSION", "ERROR_CODES", "MIN_BODY_PART_BYTES",
    "DEFAULT_HANDSHAKE_FRAME_BYTES", "DEFAULT_MAX_FRAME_BYTES", "DEFAULT_MAX_JSON_BYTES", "DEFAULT_MAX_NESTING",
    "BodyKind", "CacheMode", "CacheStatus", "ErrorCode", "EventName", "ImageFit", "ImageOutputFormat", "ImageSource", "RedirectMode",
]
