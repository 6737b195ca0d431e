"""Ferry for asyncio: ``AsyncClient`` (the whole protocol on one connection, many requests at once) and
``AsyncSession`` / ``ferry.aio.get`` … (HTTP through ferryd with the habits of ``requests``).

::

    import asyncio
    import ferry.aio

    async def main():
        r = await ferry.aio.get("https://api.example.com/quotes", params={"page": 2}, timeout=5)   # ferryd autostarted
        r.raise_for_status()
        print(r.status_code, r.json(), r.from_cache)

        async with ferry.aio.AsyncClient(name="my-tool") as c:     # connects and says hello
            await c.cache_set("build/abc", b"data", ttl_ms=60_000)
            entry = await c.cache_get("build/abc")                 # CacheEntry(value=b"data", ...); None on a miss
            counts = await asyncio.gather(*(c.cache_incr("hits") for _ in range(100)))   # one connection
            r = await c.fetch("https://api.example.com/quotes/1")  # FetchResponse, as Client.fetch
            async for item in c.stream("ping", {"events": 2}):     # ("event", "tick", {"n": 0}, b"") ...
                print(item)                                         # ... then ("final", {"pong": True}, b"")
            try:
                await asyncio.wait_for(c.call("ping", {"delay_ms": 5000}), 0.5)
            except asyncio.TimeoutError:
                pass                                                # the daemon was told to cancel it

    asyncio.run(main())

One ``AsyncClient`` is one connection: every request gets an id, its frames are written back to back, and one reader
task hands each reply frame to the request it answers, so any number of tasks may use one client at once (up to the
daemon's ``max_in_flight``, 256 by default). The methods are ``ferry.Client``'s, with the same names, arguments,
defaults and results, as coroutines; ``stream``, ``cache_list`` and ``http_list`` are async iterators.

Cancelling a task that awaits a request (``task.cancel()``, ``asyncio.wait_for`` running out) sends the daemon a
``cancel`` for it, so the work stops there too; a request cancelled while its body is still being sent in parts is
cut off cleanly (the daemon drops it, nothing is stored). Large reply bodies come as ``chunk`` events and are joined
(this client never asks for bodies as descriptors). A client belongs to the event loop it connected in.
"""

import asyncio
import collections
import itertools
from typing import Any, AsyncIterator, Callable, Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

from . import daemon as _daemon
from .api import Response, Timeout, _fetch_arguments
from .cache import (
    CacheEntry, CacheKey, _cache_args, _cache_clear_args, _cache_entry, _cache_get_args, _cache_incr_args,
    _cache_list_page, _cache_set_request, _cache_touch_args, _check_next_cursor, given_args,
)
from .connection import (
    _CLOSED, _EVENT, _FINAL, _accept_hello, _chunk_error, _closed_after, _closing_error, _copy_error, _final_item,
    _hello_args, _local_timeout, _local_timeout_error, _request_envelope,
)
from .errors import FerryError, FerryProtocolError
from .fetch import _NO_JSON, FetchResponse, _FetchPlan, _http_list_args, _http_purge_args
from .framing import (
    DEFAULT_HANDSHAKE_FRAME_BYTES, DEFAULT_MAX_JSON_BYTES, HEADER, FrameDecoder, _byte_view, _split_request,
    check_request, encode_json,
)
from .image import Image, _image_args, _image_result, _prefetch_args
from .paths import default_socket_path
from .wire import ErrorCode, EventName

__all__ = ["AsyncClient", "AsyncSession", "connect", "request", "get", "head", "post", "put", "patch", "delete",
           "close_shared"]

# How much one read of the socket takes at most (the daemon's chunks are 256 KiB).
_READ_SIZE = 1 << 18

# How long close() lets what was written reach the daemon before it drops the rest.
_CLOSE_FLUSH_SECONDS = 5.0


class _Pending:
    """One request in flight: the reader task appends its replies to ``items`` and wakes ``waiter``, the future the
    task waiting for them sleeps on (made only then). ``collected``: a task reads its replies (one at most)."""

    __slots__ = ("id", "op", "timeout_ms", "items", "waiter", "collected")

    def __init__(self, rid: int, op: str, timeout_ms: Optional[int]):
        self.id = rid
        self.op = op
        self.timeout_ms = timeout_ms
        self.items: "collections.deque[tuple]" = collections.deque()
        self.waiter: "Optional[asyncio.Future]" = None
        self.collected = False

    def wake(self) -> None:
        _wake(self.waiter)


def _wake(waiter: "Optional[asyncio.Future]") -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class AsyncClient:
    """A connection to ferryd for asyncio: ``ferry.Client``'s methods as coroutines.

    ``AsyncClient(path=None, name="python-aio", timeout=None)``: ``path`` defaults to default_socket_path();
    ``name`` is sent in ``hello``; ``timeout`` (seconds) bounds connecting and is the local wait limit of requests
    sent without ``timeout_ms`` (None: wait as long as it takes). Requests with ``timeout_ms`` wait locally for
    that plus a short grace, then raise ``deadline_exceeded`` and send a ``cancel``.

    ::

        async with AsyncClient() as c:               # or: c = await AsyncClient().connect(); ...; await c.close()
            print(c.version, c.limits["max_frame_bytes"])
            result, body = await c.call("ping", body=b"hi")      # -> ({"pong": True}, b"hi")
            rid = await c.send("ping", {"delay_ms": 5000})
            await c.cancel(rid)                                  # -> {"cancelled": True}
            await c.wait(rid)                                    # raises FerryError("cancelled")

    When the connection closes (either side, or the daemon died), every waiter gets a FerryError
    (``unavailable``, or the code the daemon named in its last connection-level error), promptly.
    """

    def __init__(self, path: Optional[str] = None, name: str = "python-aio", timeout: Optional[float] = None):
        self.path = path or default_socket_path()
        self.name = name
        self.timeout = timeout
        self.version: Optional[int] = None
        self.server: Optional[str] = None
        self.limits: Dict[str, int] = {}
        self.operations: List[str] = []
        self.capabilities: List[str] = []
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._read_task: "Optional[asyncio.Task]" = None
        self._send_lock: Optional[asyncio.Lock] = None   # one request (all of its frames) at a time on the socket
        self._decoder = FrameDecoder()
        self._send_limit = DEFAULT_HANDSHAKE_FRAME_BYTES
        self._send_json_limit = DEFAULT_MAX_JSON_BYTES
        self._ids = itertools.count(1)
        self._pending: Dict[int, _Pending] = {}
        self._closed_error: Optional[FerryError] = None
        self._server_error: Optional[FerryError] = None
        self._cancel_tasks: "Set[asyncio.Task]" = set()  # cancels waiting for the socket (kept from the GC)

    # ----- lifecycle

    async def connect(self) -> "AsyncClient":
        """Connects and says ``hello``; stores the server's ``version``, ``server``, ``limits``, ``operations`` and
        ``capabilities``. Returns ``self``. Raises FerryError ``unavailable`` when nobody answers on ``path``."""
        if self._loop is not None:
            raise FerryError(ErrorCode.failed_precondition,
                             "this AsyncClient already connected once; make a new AsyncClient")
        loop = asyncio.get_running_loop()
        try:
            opening = asyncio.open_unix_connection(self.path, limit=_READ_SIZE)
            if self.timeout is not None:
                opening = asyncio.wait_for(opening, self.timeout)
            self._reader, self._writer = await opening
        except (OSError, asyncio.TimeoutError) as e:
            raise FerryError(ErrorCode.unavailable,
                             f"cannot connect to ferryd at {self.path}: {str(e) or 'timed out'}") from e
        self._loop = loop
        self._send_lock = asyncio.Lock()
        self._read_task = loop.create_task(self._read_loop())
        try:
            result, _ = await self.call("hello", _hello_args(self.name))
        except BaseException:
            await self.close()
            raise
        _accept_hello(self, result)
        return self

    async def close(self) -> None:
        """Closes the connection (the server cancels what is still in flight); waiters get ``unavailable``. What
        was sent (``send``) still reaches the daemon, unless it takes more than a few seconds."""
        if self._writer is None:
            return
        self._shutdown(FerryError(ErrorCode.unavailable, "the client closed the connection"))
        for cancel_task in list(self._cancel_tasks):
            cancel_task.cancel()
        task = self._read_task
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
            await asyncio.wait([task])   # its end, without its CancelledError
        try:
            await asyncio.wait_for(self._writer.wait_closed(), _CLOSE_FLUSH_SECONDS)
        except (OSError, RuntimeError, asyncio.TimeoutError):
            self._writer.transport.abort()

    async def __aenter__(self) -> "AsyncClient":
        if self._loop is None:
            await self.connect()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        """True once the connection is closed (by either side, or after a failure)."""
        return self._closed_error is not None

    # ----- requests

    async def send(self, op: str, args: Optional[dict] = None, body: bytes = b"",
                   timeout_ms: Optional[int] = None) -> int:
        """Sends a request without waiting for its reply; returns its id for ``wait`` (which every ``send`` needs,
        to collect the reply) and ``cancel``."""
        return (await self._start(op, args, body, timeout_ms)).id

    async def wait(self, request_id: int, timeout: Optional[float] = None) -> Tuple[dict, bytes]:
        """Waits for the final reply of a request from ``send``; returns ``(result, body)`` or raises FerryError.
        Chunk events are joined into the body; other events are skipped. ``timeout`` (seconds) defaults to the
        client's local limit for the request; when it passes, the request is given up (a ``cancel`` sent) and
        ``deadline_exceeded`` raised. Cancelling the waiting task cancels the request too."""
        pending = self._lookup(request_id)
        if pending.collected:
            raise FerryError(ErrorCode.failed_precondition,
                             f"another task already waits for the replies of request {request_id}")
        return await self._collect(pending, self._deadline(timeout, pending.timeout_ms))

    async def call(self, op: str, args: Optional[dict] = None, body: bytes = b"",
                   timeout_ms: Optional[int] = None) -> Tuple[dict, bytes]:
        """Sends a request and waits for its final reply: ``(result, body)``; raises FerryError on an error reply.
        Cancelling the awaiting task sends the daemon a ``cancel`` for the request."""
        pending = await self._start(op, args, body, timeout_ms)
        return await self._collect(pending, self._deadline(None, timeout_ms))

    def stream(self, op: str, args: Optional[dict] = None, body: bytes = b"",
               timeout_ms: Optional[int] = None) -> "_Stream":
        """An async iterator over a request's replies: the request is sent when iteration starts, then
        ``("event", name, data, body)`` comes for each event and ``("final", result, body)`` last. An error reply
        raises FerryError. Leaving the loop early (or ``await s.aclose()``, or ``async with``) cancels the
        request::

            async for kind, *fields in c.stream("ping", {"events": 3}):
                ...
        """
        return _Stream(self, op, args, body, timeout_ms)

    async def cancel(self, request_id: int) -> dict:
        """Asks the server to cancel a request of this connection: ``{"cancelled": True}`` if it was in flight."""
        result, _ = await self.call("cancel", {"id": request_id})
        return result

    async def ping(self, body: bytes = b"", **args: Any) -> Tuple[dict, bytes]:
        """``ping`` (args: ``delay_ms``, ``events``); returns ``({"pong": True}, echoed body)``."""
        return await self.call("ping", args, body)

    async def describe(self) -> dict:
        """Every operation the server knows, with its arguments and result fields."""
        return (await self.call("describe"))[0]

    async def stats(self) -> dict:
        """Server counters: connections, requests, bytes, per-operation and per-error counts."""
        return (await self.call("stats"))[0]

    # ----- cache.* (as ferry.Client's cache_* methods; see ferry.cache)

    async def cache_set(self, key: str, value: Union[bytes, str], namespace: Optional[str] = None,
                        ttl_ms: Optional[int] = None, if_absent: bool = False, *, ttl: Timeout = None) -> bool:
        """Stores ``value`` (bytes-like, or a str as UTF-8) under ``key``; ``ttl`` seconds or ``ttl_ms`` (neither:
        no expiry). Returns True when stored, False when ``if_absent`` found a live entry. A value larger than a
        frame is sent in parts."""
        args, value = _cache_set_request(key, value, namespace, ttl_ms, if_absent, ttl)
        result, _ = await self.call("cache.set", args, value)
        return result.get("stored") is True

    async def cache_get(self, key: str, namespace: Optional[str] = None, default: Any = None) -> Optional[CacheEntry]:
        """``CacheEntry(value, size, created_at, expires_at)``, or ``default`` (None) when the key is absent or
        expired. A large value arrives in chunks and is joined here."""
        try:
            result, body = await self.call("cache.get", _cache_get_args(key, namespace, False))
        except FerryError as e:
            if e.code == ErrorCode.not_found:
                return default
            raise
        return _cache_entry(key, result, body)

    async def cache_get_or_none(self, key: str, namespace: Optional[str] = None) -> Optional[CacheEntry]:
        """``cache_get`` (as ``Client.cache_get_or_none``)."""
        return await self.cache_get(key, namespace)

    async def cache_delete(self, key: str, namespace: Optional[str] = None) -> bool:
        """Removes an entry; True when there was one to remove."""
        result, _ = await self.call("cache.delete", _cache_args(key, namespace))
        return result.get("deleted") is True

    async def cache_touch(self, key: str, ttl_ms: Optional[int] = None, namespace: Optional[str] = None, *,
                          ttl: Timeout = None) -> Optional[int]:
        """A new time to live for a live entry (neither ``ttl`` nor ``ttl_ms``: never expires); returns the new
        ``expires_at`` or None. FerryError ``not_found`` when the key is absent or expired."""
        result, _ = await self.call("cache.touch", _cache_touch_args(key, ttl_ms, namespace, ttl))
        return result.get("expires_at")

    async def cache_incr(self, key: str, by: int = 1, namespace: Optional[str] = None, *, ttl: Timeout = None) -> int:
        """Adds ``by`` to the decimal integer at ``key``, atomically in the daemon; returns the new value (a
        missing key counts from 0 and takes ``ttl``)."""
        result, _ = await self.call("cache.incr", _cache_incr_args(key, by, namespace, ttl))
        return int(result["value"])

    def cache_list(self, namespace: Optional[str] = None, prefix: Optional[str] = None,
                   limit: Optional[int] = None) -> AsyncIterator[CacheKey]:
        """Every live key of a namespace (starting with ``prefix`` if given), in byte order, as
        ``CacheKey(key, size, expires_at)``: an async iterator fetching pages of ``limit`` as it goes (the first
        when iteration starts, so bad arguments raise there)::

            async for item in c.cache_list(namespace="my-tool", prefix="build/"):
                print(item.key, item.size)
        """
        return self._cache_list_pages(namespace, prefix, limit)

    async def _cache_list_pages(self, namespace: Optional[str], prefix: Optional[str],
                                limit: Optional[int]) -> AsyncIterator[CacheKey]:
        keys, cursor = await self.cache_list_page(namespace, prefix, limit)
        while True:
            for key in keys:
                yield key
            if cursor is None:
                return
            previous = cursor
            keys, cursor = await self.cache_list_page(namespace, prefix, limit, previous)
            _check_next_cursor(previous, cursor)

    async def cache_list_page(self, namespace: Optional[str] = None, prefix: Optional[str] = None,
                              limit: Optional[int] = None,
                              cursor: Optional[str] = None) -> Tuple[List[CacheKey], Optional[str]]:
        """One page of ``cache.list``: ``(keys, cursor)``; ``cursor`` is None on the last page."""
        result, _ = await self.call("cache.list",
                                    given_args(namespace=namespace, prefix=prefix, limit=limit, cursor=cursor))
        return _cache_list_page(result)

    async def cache_clear(self, namespace: Optional[str] = None) -> int:
        """Removes every entry of a namespace (``"default"`` when None); returns how many were removed."""
        result, _ = await self.call("cache.clear", _cache_clear_args(namespace))
        return result.get("removed")

    # ----- fetch and http.* (as ferry.Client's; see ferry.fetch)

    async def fetch(self, url: str, method: str = "GET",
                    headers: Optional[Union[Mapping[str, str], Iterable[Tuple[str, str]]]] = None, body: bytes = b"",
                    *, json: Any = _NO_JSON, timeout_ms: Optional[int] = None, redirect: Optional[str] = None,
                    max_redirects: Optional[int] = None, max_bytes: Optional[int] = None,
                    cache: Optional[str] = None, progress: Optional[Callable[[int, Optional[int]], Any]] = None,
                    request_timeout_ms: Optional[int] = None, retry: Optional[bool] = None, to: Any = None,
                    on_head: Optional[Callable[[FetchResponse], Any]] = None) -> FetchResponse:
        """An HTTP request through the daemon and its shared cache; returns a ``FetchResponse`` (any HTTP status is
        a result). The arguments are ``Client.fetch``'s (see there): ``headers``, ``body`` or ``json=``, the
        daemon's ``timeout_ms``, ``redirect``, ``max_redirects``, ``max_bytes``, ``cache``, ``retry``,
        ``request_timeout_ms`` (the whole request's deadline); ``progress(received, total)``, ``to`` (a binary
        file or a callable taking bytes: the body is written there as it arrives and ``body`` is ``b""``) and
        ``on_head(head)`` are plain callables, called in the event loop (an exception from one cancels the
        request and propagates)::

            r = await c.fetch("https://example.com/data.json", headers={"Accept": "application/json"})
            with open("big.iso", "wb") as f:
                await c.fetch(url, to=f, progress=lambda got, total: print(got, total))
        """
        plan = _FetchPlan(url, method, headers, body, json, timeout_ms, redirect, max_redirects, max_bytes, cache,
                          progress, retry, to, on_head)
        pending = await self._start("fetch", plan.args, plan.body, request_timeout_ms)
        result, data = await self._collect(pending, self._deadline(None, request_timeout_ms), plan.on_event,
                                           plan.sink, before_final=plan.give_head)
        return plan.response(result, data)

    def http_list(self, prefix: Optional[str] = None, limit: Optional[int] = None) -> AsyncIterator[dict]:
        """Every URL the shared HTTP cache holds (starting with ``prefix``), as the daemon's dicts: an async
        iterator fetching pages of ``limit`` as it goes (see ``Client.http_list``)."""
        return self._http_list_pages(prefix, limit)

    async def _http_list_pages(self, prefix: Optional[str], limit: Optional[int]) -> AsyncIterator[dict]:
        cursor: Optional[str] = None
        while True:
            result, _ = await self.call("http.list", _http_list_args(prefix, limit, cursor))
            for entry in result.get("urls", []):
                yield entry
            cursor = result.get("cursor")
            if cursor is None:
                return

    async def http_show(self, url: str) -> Optional[dict]:
        """What the shared HTTP cache holds for ``url``, or None when nothing is stored for it."""
        try:
            result, _ = await self.call("http.show", {"url": url})
        except FerryError as e:
            if e.code == ErrorCode.not_found.value:
                return None
            raise
        return result

    async def http_purge(self, url: Optional[str] = None, *, prefix: Optional[str] = None) -> int:
        """Removes what the HTTP cache holds for ``url``, or for every URL starting with ``prefix``; returns how
        many URLs were removed."""
        result, _ = await self.call("http.purge", _http_purge_args(url, prefix))
        return int(result.get("purged", 0))

    # ----- image.* (as ferry.Client's; see ferry.image)

    async def image(self, url: str, headers: Optional[Union[Mapping[str, str], Iterable[Tuple[str, str]]]] = None,
                    *, cache: Optional[str] = None, timeout_ms: Optional[int] = None,
                    request_timeout_ms: Optional[int] = None, width: Optional[int] = None,
                    height: Optional[int] = None, fit: Optional[str] = None, format: Optional[str] = None,
                    quality: Optional[int] = None, density: Optional[int] = None) -> Image:
        """An image (or a variant of it) through the daemon's shared image loader, as ``Client.image``."""
        args = _image_args(url, headers, cache, timeout_ms, width, height, fit, format, quality, density)
        result, body = await self.call("image.get", args, timeout_ms=request_timeout_ms)
        return _image_result(url, result, body)

    async def prefetch_images(self, urls: Iterable[str], *, width: Optional[int] = None,
                              height: Optional[int] = None, fit: Optional[str] = None, format: Optional[str] = None,
                              quality: Optional[int] = None, density: Optional[int] = None) -> int:
        """Queues downloads (and variants) that warm the daemon's caches; returns how many were queued."""
        args = _prefetch_args(urls, width, height, fit, format, quality, density)
        return int((await self.call("image.prefetch", args))[0].get("queued", 0))

    async def evict_image(self, url: str) -> bool:
        """Drops a URL's image from the loader's memory tier; returns whether it was there."""
        return bool((await self.call("image.evict", {"url": url}))[0].get("evicted", False))

    # ----- internals: sending

    async def _start(self, op: str, args: Optional[dict], body: Any, timeout_ms: Optional[int]) -> _Pending:
        envelope = _request_envelope(op, args, timeout_ms)
        view = _byte_view(body)
        self._raise_if_closed()
        rid = envelope["id"] = next(self._ids)
        check_request(envelope)
        frames = _split_request(envelope, view, self._send_limit, self._send_json_limit)
        pending = _Pending(rid, op, timeout_ms)
        self._pending[rid] = pending
        await self._write_request(pending, frames)
        return pending

    async def _write_request(self, pending: _Pending, frames: List[Tuple[dict, bytes, memoryview]]) -> None:
        """Writes the frames of one request back to back (no other frame comes in between), waiting for the
        socket between frames. Given up half-way (the task cancelled), the daemon is told to drop the request and
        the parts not sent; given up after the last frame, it is told to cancel the request."""
        written = 0
        try:
            async with self._send_lock:
                self._raise_if_closed()
                try:
                    for _, data, part in frames:
                        self._write_frame(data, part)
                        written += 1
                        await self._writer.drain()
                        self._raise_if_closed()
                except (OSError, RuntimeError) as e:
                    # The daemon may have said why before it closed (an id-0 error, e.g. too many connections):
                    # the reader, which has the connection's last bytes, finishes first and names the reason.
                    task = self._read_task
                    if self._closed_error is None and task is not None and not task.done():
                        await asyncio.wait([task], timeout=1.0)
                    if self._closed_error is None:
                        self._shutdown(FerryError(ErrorCode.unavailable,
                                                  f"connection to ferryd lost while sending: {e}"))
                    raise _copy_error(self._closed_error) from e
                except BaseException:
                    if written and self._forget(pending.id) and self._closed_error is None:
                        # Still holding the socket: the cancel goes right behind this request's last frame.
                        self._write_cancel(pending.id, cut_upload=written < len(frames))
                    raise
        except BaseException:
            self._forget(pending.id)
            raise

    def _write_frame(self, data: bytes, part: memoryview) -> None:
        head = HEADER.pack(len(data), len(part)) + data
        if len(part) <= 65536:
            self._writer.write(head + part)
        else:                                       # no copy of a large part here
            self._writer.write(head)
            self._writer.write(part)

    def _write_cancel(self, request_id: int, cut_upload: bool = False) -> None:
        """Writes a ``cancel`` for ``request_id`` now (the caller has the socket, or nobody is writing a request);
        with ``cut_upload``, also the empty last part of its body, so the daemon stops waiting for the rest (the
        cancel comes first: the request is dropped, not started with half a body)."""
        rid = next(self._ids)
        data = encode_json({"id": rid, "op": "cancel", "args": {"id": request_id}})
        frame = HEADER.pack(len(data), 0) + data
        if cut_upload:
            last = encode_json({"id": request_id, "more": False})
            frame += HEADER.pack(len(last), 0) + last
        try:
            self._writer.write(frame)
        except (OSError, RuntimeError):
            pass

    def _cancel_soon(self, request_id: int) -> None:
        """Best effort: asks the server to stop a request whose answer nobody waits for any more; at once when no
        request is being written, else as soon as the socket is free."""
        if self._closed_error is not None or self._writer is None:
            return
        if not self._send_lock.locked():
            self._write_cancel(request_id)
            return
        task = self._loop.create_task(self._send_cancel(request_id))
        self._cancel_tasks.add(task)
        task.add_done_callback(self._cancel_tasks.discard)

    async def _send_cancel(self, request_id: int) -> None:
        try:
            async with self._send_lock:
                if self._closed_error is None:
                    self._write_cancel(request_id)
                    await self._writer.drain()
        except (OSError, RuntimeError):
            pass   # the reader task sees the connection's end and fails the waiters

    # ----- internals: waiting

    def _deadline(self, timeout: Optional[float], timeout_ms: Optional[int]) -> Optional[float]:
        timeout = _local_timeout(timeout, timeout_ms, self.timeout)
        return None if timeout is None else asyncio.get_running_loop().time() + timeout

    def _lookup(self, request_id: int) -> _Pending:
        pending = self._pending.get(request_id)
        if pending is None:
            raise FerryError(ErrorCode.not_found, f"request {request_id} is not waiting on this client "
                                                  "(unknown id, or its reply was already collected)")
        return pending

    async def _collect(self, pending: _Pending, deadline: Optional[float],
                       on_event: Optional[Callable[[str, dict], Any]] = None,
                       sink: Optional[Callable[[bytes], Any]] = None,
                       before_final: Optional[Callable[[dict], Any]] = None) -> Tuple[dict, bytes]:
        """The final reply, with the bodies of chunk events joined (or, with ``sink``, handed to it as they come,
        the final body included, and b"" returned); other events go to ``on_event``; ``before_final`` gets the
        final result before its body goes anywhere. Anything raised while the request is in flight (a callback's
        exception, the task cancelled, a local timeout) gives the request up and sends a ``cancel``."""
        pending.collected = True
        parts: List[bytes] = []
        have = 0
        try:
            while True:
                kind, *fields = await self._next_item(pending, deadline)
                if kind == _FINAL:
                    result, body = fields
                    if before_final is not None:
                        before_final(result)
                    if sink is None:
                        parts.append(body)
                        return result, b"".join(parts)
                    if body:
                        sink(body)
                    return result, b""
                name, data, body = fields
                if name == EventName.chunk:
                    error = _chunk_error(pending.id, data, have)
                    if error is not None:
                        raise error
                    have += len(body)
                    if sink is None:
                        parts.append(body)
                    else:
                        sink(body)
                elif on_event is not None:
                    on_event(name, data if isinstance(data, dict) else {})
        except BaseException:
            self._abandon(pending)   # nothing to do once the final reply came (the request is forgotten then)
            raise

    async def _next_item(self, pending: _Pending, deadline: Optional[float]) -> tuple:
        """The next reply of a request; raises FerryError for an error reply, a closed connection or a timeout."""
        item = await self._await(pending, deadline)
        if item is None:
            self._abandon(pending)
            raise _local_timeout_error(pending.id, pending.op)
        if item[0] == _EVENT:
            return item
        self._forget(pending.id)
        return _final_item(item)

    async def _await(self, pending: _Pending, deadline: Optional[float]) -> Optional[tuple]:
        """The next item of ``pending``, or None when ``deadline`` (loop time) passed first."""
        loop = asyncio.get_running_loop()
        while not pending.items:
            if deadline is not None and loop.time() >= deadline:
                return None
            waiter = loop.create_future()
            pending.waiter = waiter
            timer = loop.call_at(deadline, _wake, waiter) if deadline is not None else None
            try:
                await waiter
            finally:
                pending.waiter = None
                if timer is not None:
                    timer.cancel()
        return pending.items.popleft()

    def _abandon(self, pending: _Pending) -> None:
        if self._forget(pending.id):
            self._cancel_soon(pending.id)

    def _forget(self, rid: int) -> bool:
        return self._pending.pop(rid, None) is not None

    def _raise_if_closed(self) -> None:
        if self._writer is None:
            raise FerryError(ErrorCode.failed_precondition, "client is not connected; call connect() first")
        if self._closed_error is not None:
            raise _copy_error(self._closed_error)

    # ----- internals: reading (one task per connection)

    async def _read_loop(self) -> None:
        """Reads replies and hands each frame to its request until the connection ends, then fails the requests
        still waiting. Cancelled by ``close()``, or by the event loop ending (``asyncio.run`` cancels every task),
        it closes the connection."""
        reason: Optional[FerryError] = None
        try:
            while reason is None:
                try:
                    data = await self._reader.read(_READ_SIZE)
                except OSError as e:
                    reason = FerryError(ErrorCode.unavailable, f"connection to ferryd lost: {e}")
                    break
                if not data:
                    reason = FerryError(ErrorCode.unavailable, "ferryd closed the connection")
                    break
                try:
                    frames = self._decoder.feed(data)
                except FerryError as e:
                    frames = getattr(e, "frames", [])
                    reason = FerryProtocolError(f"ferryd sent a malformed frame: {e.message}")
                for envelope, body in frames:
                    self._dispatch(envelope, body)
        except BaseException as e:
            self._shutdown(FerryError(ErrorCode.unavailable, "the client closed the connection"
                                      if isinstance(e, asyncio.CancelledError) else f"reading replies failed: {e!r}"))
            raise
        if self._server_error is not None:
            reason = _closed_after(self._server_error)
        self._shutdown(reason)

    def _dispatch(self, envelope: dict, body: bytes) -> None:
        rid = envelope["id"]
        if rid == 0:
            error = _closing_error(envelope)
            if error is not None:
                self._server_error = error
            return
        pending = self._pending.get(rid)
        if pending is None:
            return  # a reply nobody waits for any more (local timeout, cancelled task, fire-and-forget cancel)
        if envelope.get("final") is False:
            pending.items.append((_EVENT, envelope.get("event"), envelope.get("data") or {}, body))
        else:
            pending.items.append((_FINAL, envelope, body))
        pending.wake()

    def _shutdown(self, reason: FerryError) -> None:
        """Marks the connection closed (first reason wins), fails every waiter with it and closes the socket."""
        if self._closed_error is None:
            self._closed_error = reason
        reason = self._closed_error
        for pending in self._pending.values():
            pending.items.append((_CLOSED, reason))
            pending.wake()
        if self._writer is not None:
            try:
                self._writer.close()
            except RuntimeError:   # its event loop is closed already
                pass


class _Stream:
    """``AsyncClient.stream``: an async iterator (and async context manager) over one request's replies."""

    def __init__(self, client: AsyncClient, op: str, args: Optional[dict], body: Any, timeout_ms: Optional[int]):
        self._client = client
        self._request = (op, args, body, timeout_ms)
        self._pending: Optional[_Pending] = None
        self._deadline: Optional[float] = None
        self._done = False

    def __aiter__(self) -> "_Stream":
        return self

    async def __anext__(self) -> tuple:
        if self._done:
            raise StopAsyncIteration
        client = self._client
        if self._pending is None:
            op, args, body, timeout_ms = self._request
            try:
                self._pending = await client._start(op, args, body, timeout_ms)
            except BaseException:
                self._done = True
                raise
            self._pending.collected = True
            self._deadline = client._deadline(None, timeout_ms)
        try:
            kind, *fields = await client._next_item(self._pending, self._deadline)
        except BaseException:
            self._done = True
            client._abandon(self._pending)   # a no-op after an error reply: the request is over
            raise
        if kind == _EVENT:
            return (_EVENT, *fields)
        self._done = True
        return (_FINAL, *fields)

    async def aclose(self) -> None:
        """Stops reading; a request still in flight is cancelled."""
        self._finish()

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            if self._pending is not None:
                self._client._abandon(self._pending)

    async def __aenter__(self) -> "_Stream":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self._finish()

    def __del__(self) -> None:
        # Left early (``break`` out of ``async for``): cancel from the loop, whatever thread collects this.
        if not self._done and self._pending is not None and self._client._loop is not None:
            self._done = True
            try:
                self._client._loop.call_soon_threadsafe(self._client._abandon, self._pending)
            except RuntimeError:   # the loop is closed: so is the connection
                pass


# ----- connecting, with ferryd started when none answers (as ferry.daemon.connect)

async def connect(path: Optional[str] = None, name: str = "python-aio", timeout: Optional[float] = None,
                  autostart: bool = True, daemon_args: Iterable[str] = (), ready_seconds: float = 10.0) -> AsyncClient:
    """A connected ``AsyncClient``; with ``autostart`` (and no ``FERRY_NO_AUTOSTART``), ferryd (``$FERRYD``, else
    ``ferryd`` on PATH) is started first when none answers on ``path``, as ``ferry.daemon.connect`` does (the
    process is spawned in a worker thread). Raises ``FerryError("unavailable")`` when none answers in
    ``ready_seconds``."""
    path = path or default_socket_path()
    daemon_args = tuple(daemon_args)
    try:
        return await AsyncClient(path, name=name, timeout=timeout).connect()
    except FerryError as e:
        if not _daemon._may_autostart(e, autostart):
            raise
    loop = asyncio.get_running_loop()
    starter = await loop.run_in_executor(None, _daemon._Autostart, path, daemon_args, ready_seconds)
    while starter.waiting():
        try:
            return await AsyncClient(path, name=name, timeout=timeout).connect()
        except FerryError as e:
            if e.code != ErrorCode.unavailable:
                raise
        delay = starter.respawn_delay()
        if delay is not None:
            await asyncio.sleep(delay)
            await loop.run_in_executor(None, starter.respawn)
        await asyncio.sleep(_daemon._POLL_SECONDS)
    raise starter.failure()


# ----- requests-like

class AsyncSession:
    """``ferry.Session`` for asyncio: an ``AsyncClient`` of its own, with default ``headers`` for every request;
    ``async with``. ``AsyncSession(client=c)`` uses an existing client (not closed by the session). It starts
    ferryd when none answers (``autostart``; ``daemon_args`` are more of ferryd's options), and connects again once
    when the daemon restarted under it. The responses are ``ferry.api.Response``::

        async with AsyncSession(headers={"Authorization": "Bearer " + token}) as s:
            r = await s.get("https://api.example.com/quotes", params={"page": 2}, timeout=5)
            r = await s.post("https://api.example.com/search", json={"text": "courage"})
    """

    def __init__(self, headers: Optional[Mapping[str, str]] = None, client: Optional[AsyncClient] = None,
                 socket_path: Optional[str] = None, autostart: bool = True, daemon_args: Iterable[str] = ()):
        self.autostart = autostart
        self.daemon_args = list(daemon_args)
        self.headers: Dict[str, str] = dict(headers or {})
        self._client = client
        self._owns = client is None
        self._socket_path = socket_path
        self._lock: Optional[asyncio.Lock] = None   # made in the event loop, on first use

    async def _connected(self) -> AsyncClient:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is None or self._client.closed:
                if not self._owns and self._client is not None:
                    raise FerryError(ErrorCode.unavailable, "the session's client is closed")
                self._client = await connect(self._socket_path, name="python-aio-session", autostart=self.autostart,
                                             daemon_args=self.daemon_args)
            return self._client

    async def request(self, method: str, url: str, params: Any = None, headers: Optional[Mapping[str, str]] = None,
                      data: Any = None, json: Any = _NO_JSON, timeout: Timeout = None, cache: Optional[str] = None,
                      allow_redirects: bool = True, max_redirects: Optional[int] = None) -> Response:
        """One request, as ``Session.request``: ``params`` into the query; ``data`` a dict (form-encoded), str
        (utf-8) or bytes; ``json`` any JSON value; ``timeout`` seconds for the whole request; ``cache`` a fetch
        cache mode; with ``allow_redirects=False`` a 3xx is the response."""
        args, kwargs = _fetch_arguments(self.headers, method, url, params, headers, data, json, timeout, cache,
                                        allow_redirects, max_redirects)
        client = await self._connected()
        try:
            return Response(await client.fetch(*args, **kwargs))
        except FerryError as e:
            # The daemon restarted under a long-lived client: connect again once, then ask again.
            if e.code != ErrorCode.unavailable or not client.closed:
                raise
        return Response(await (await self._connected()).fetch(*args, **kwargs))

    async def get(self, url: str, **kw: Any) -> Response: return await self.request("GET", url, **kw)
    async def head(self, url: str, **kw: Any) -> Response: return await self.request("HEAD", url, **kw)
    async def post(self, url: str, **kw: Any) -> Response: return await self.request("POST", url, **kw)
    async def put(self, url: str, **kw: Any) -> Response: return await self.request("PUT", url, **kw)
    async def patch(self, url: str, **kw: Any) -> Response: return await self.request("PATCH", url, **kw)
    async def delete(self, url: str, **kw: Any) -> Response: return await self.request("DELETE", url, **kw)

    async def close(self) -> None:
        client, self._client = self._client, None
        if self._owns and client is not None:
            await client.close()

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


# The module functions' session, one per event loop (a connection belongs to the loop it was made in).
_shared: Optional[Tuple[asyncio.AbstractEventLoop, AsyncSession]] = None


def _shared_session() -> AsyncSession:
    global _shared
    loop = asyncio.get_running_loop()
    if _shared is None or _shared[0] is not loop:
        _shared = (loop, AsyncSession())
    return _shared[1]


async def close_shared() -> None:
    """Closes the connection of the module functions' session (they connect again when next used)."""
    if _shared is not None and _shared[0] is asyncio.get_running_loop():
        await _shared[1].close()


async def request(method: str, url: str, **kw: Any) -> Response:
    """``AsyncSession.request`` on the module's shared session (made on first use in each event loop)."""
    return await _shared_session().request(method, url, **kw)


async def get(url: str, **kw: Any) -> Response: return await _shared_session().request("GET", url, **kw)
async def head(url: str, **kw: Any) -> Response: return await _shared_session().request("HEAD", url, **kw)
async def post(url: str, **kw: Any) -> Response: return await _shared_session().request("POST", url, **kw)
async def put(url: str, **kw: Any) -> Response: return await _shared_session().request("PUT", url, **kw)
async def patch(url: str, **kw: Any) -> Response: return await _shared_session().request("PATCH", url, **kw)
async def delete(url: str, **kw: Any) -> Response: return await _shared_session().request("DELETE", url, **kw)
