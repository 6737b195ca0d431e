"""One request in flight on an ``AsyncConnection``: ``_Pending``, the queue of its replies that the reader task
fills, and ``_Stream``, the async iterator over them that ``AsyncConnection.stream`` returns."""

import asyncio
import collections
from typing import TYPE_CHECKING, Any, Optional

from ..connection import _EVENT, _FINAL

if TYPE_CHECKING:
    from .connection import AsyncConnection


class _Pending:
    """One request in flight: the reader task appends its replies to ``items`` and wakes ``waiter``, the future the
    task waiting for them sleeps on (made only then). ``collected``: a task reads its replies (one at most)."""

    __slots__ = ("id", "op", "timeout_ms", "items", "waiter", "collected", "sent")

    def __init__(self, rid: int, op: str, timeout_ms: Optional[int]):
        self.id = rid
        self.op = op
        self.timeout_ms = timeout_ms
        self.items: "collections.deque[tuple]" = collections.deque()
        self.waiter: "Optional[asyncio.Future]" = None
        self.collected = False
        self.sent = False   # its first frame is written: the daemon will answer it

    def wake(self) -> None:
        _wake(self.waiter)


def _wake(waiter: "Optional[asyncio.Future]") -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class _Stream:
    """``AsyncClient.stream``: an async iterator (and async context manager) over one request's replies."""

    def __init__(self, client: "AsyncConnection", op: str, args: Optional[dict], body: Any, timeout_ms: Optional[int]):
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

