"""One connection to ferryd for asyncio (``AsyncConnection``): the socket, ``hello``, the requests in flight and the
generic requests (``send``/``wait``, ``call``, ``stream``, ``cancel``, ``ping``, ``describe``, ``stats``).

``AsyncConnection`` is the base of ``ferry.aio.AsyncClient``, which adds the operation families as coroutines built
on ``call`` and on the internals ``_start``, ``_collect`` and ``_deadline`` here. Writing frames and the reader task
are ``TransportMixin``'s (``ferry.aio.transport``); each request's replies queue on a ``_Pending``
(``ferry.aio.pending``).
"""

import asyncio
from typing import Any, Callable, List, Optional, Set, Tuple

from ..connection import (
    _EVENT, _FINAL, _accept_hello, _copy_error, _final_body, _final_item, _hello_args, _init_connection_state,
    _local_timeout, _local_timeout_error, _request_envelope, _take_event,
)
from ..errors import FerryError
from ..framing import _byte_view, _split_request, check_request
from ..wire import ErrorCode
from .slots import _Slots
from .pending import _Pending, _Stream, _wake
from .transport import _READ_SIZE, TransportMixin

__all__ = ["AsyncConnection"]

# How long close() lets what was written reach the daemon before it drops the rest.
_CLOSE_FLUSH_SECONDS = 5.0


class AsyncConnection(TransportMixin):
    """A connection to ferryd for asyncio and its generic requests; ``ferry.aio.AsyncClient`` is this plus the
    operation families. ``path``, ``name`` and ``timeout`` are as ``AsyncClient``'s."""

    def __init__(self, path: Optional[str] = None, name: str = "python-aio", timeout: Optional[float] = None):
        _init_connection_state(self, path, name, timeout)
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._read_task: "Optional[asyncio.Task]" = None
        self._send_lock: Optional[asyncio.Lock] = None   # one request (all of its frames) at a time on the socket
        self._cancel_tasks: "Set[asyncio.Task]" = set()  # cancels waiting for the socket (kept from the GC)
        self._slots = _Slots()                           # requests on the wire, at most max_in_flight
        self._cancel_ids: "Set[int]" = set()             # ids of cancels sent: their replies free no slot

    # ----- lifecycle

    async def connect(self) -> "AsyncConnection":
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
        self._slots.limit = max(1, int(self.limits.get("max_in_flight", self._slots.limit)))
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

    async def __aenter__(self) -> "AsyncConnection":
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

    # ----- internals: starting (the frames are written by TransportMixin._write_request)

    async def _start(self, op: str, args: Optional[dict], body: Any, timeout_ms: Optional[int]) -> _Pending:
        envelope = _request_envelope(op, args, timeout_ms)
        view = _byte_view(body)
        self._raise_if_closed()
        # Past the daemon's max_in_flight a request waits here for a reply to free a slot (_Slots); a cancel
        # takes none.
        takes_slot = op != "cancel"
        if takes_slot:
            await self._slots.take()
        pending: Optional[_Pending] = None
        try:
            self._raise_if_closed()
            rid = envelope["id"] = next(self._ids)
            check_request(envelope)
            frames = _split_request(envelope, view, self._send_limit, self._send_json_limit)
            pending = _Pending(rid, op, timeout_ms)
            if not takes_slot:
                self._cancel_ids.add(rid)
            self._pending[rid] = pending
            await self._write_request(pending, frames)
            return pending
        except BaseException:
            # Nothing of it reached the daemon, so no reply will come to free its slot.
            if takes_slot and (pending is None or not pending.sent):
                self._slots.free()
            raise

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
                    return result, _final_body(body, parts, sink)
                name, data, body = fields
                have = _take_event(pending.id, name, data, body, have, parts, sink, on_event)
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
