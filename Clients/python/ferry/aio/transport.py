"""The socket of an ``AsyncConnection``, both ways (``TransportMixin``): the frames of one request written back to
back, the ``cancel``s that give requests up, and the one reader task that hands each reply frame to the request it
answers. ``AsyncConnection`` owns what these work on (the socket's reader and writer, the send lock, the requests in
flight) and the waiting side (``_collect``, ``_await``)."""

import asyncio
from typing import List, Optional, Tuple

from ..connection import _CLOSED, _closed_after, _closing_error, _copy_error, _reply_item
from ..errors import FerryError, FerryProtocolError
from ..framing import HEADER, encode_json
from ..wire import ErrorCode
from .pending import _Pending

__all__ = ["TransportMixin"]

# How much one read of the socket takes at most (the daemon's chunks are 256 KiB).
_READ_SIZE = 1 << 18


class TransportMixin:
    """Writing and reading the socket of ``AsyncConnection`` (its base): ``_write_request``, ``_cancel_soon``, the
    reader task ``_read_loop`` and ``_shutdown``."""

    # ----- internals: sending

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
                        pending.sent = True
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
        self._cancel_ids.add(rid)   # its reply frees no slot
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
        if envelope.get("final") is not False:
            # Every request gets one final reply: it frees the request's slot (a cancel's took none).
            if rid in self._cancel_ids:
                self._cancel_ids.discard(rid)
            else:
                self._slots.free()
        pending = self._pending.get(rid)
        if pending is None:
            return  # a reply nobody waits for any more (local timeout, cancelled task, fire-and-forget cancel)
        pending.items.append(_reply_item(envelope, body))
        pending.wake()

    def _shutdown(self, reason: FerryError) -> None:
        """Marks the connection closed (first reason wins), fails every waiter with it and closes the socket."""
        if self._closed_error is None:
            self._closed_error = reason
        reason = self._closed_error
        self._slots.open_all()
        for pending in self._pending.values():
            pending.items.append((_CLOSED, reason))
            pending.wake()
        if self._writer is not None:
            try:
                self._writer.close()
            except RuntimeError:   # its event loop is closed already
                pass

