"""One connection to ferryd: the socket, ``hello``, reading replies, the requests in flight, and the generic
requests (``send``/``wait``, ``call``, ``stream``, ``cancel``, ``ping``, ``describe``, ``stats``).

Replies are read by the threads that wait for them, one at a time (leader and followers): a thread waiting for a
reply reads the socket itself when no other thread is reading, and hands each frame to the request it answers;
threads that find the socket taken wait to be handed their reply, or the reading when the reader leaves. So a
single-threaded caller sends and reads in its own thread, as a plain socket client does, with no thread between it
and its replies; many threads share one connection and one reader at a time.

``Connection`` is the base of ``ferry.Client``, which adds the operation families (``cache.*``, ``fetch``,
``image.*``) as mixins built on ``call`` and on the internals ``_start``, ``_collect`` and ``_deadline`` here.
"""

import array
import collections
import itertools
import os
import select
import socket
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from .bodyfile import BodyFile
from .errors import FerryError, FerryProtocolError
from .framing import (
    DEFAULT_HANDSHAKE_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_JSON_BYTES, DEFAULT_MAX_NESTING, HEADER,
    PROTOCOL_VERSION, FrameDecoder, _byte_view, _split_request, check_request, encode_json,
)
from .paths import default_socket_path
from .slotgate import _SlotGate
from .wire import ErrorCode, EventName

__all__ = ["Connection", "LOCAL_DEADLINE_GRACE_S"]

# Extra time the local timer waits beyond a request's timeout_ms, in case the server is gone (section 7).
LOCAL_DEADLINE_GRACE_S = 2.0

# Codes of an id-0 error after which the server closes the connection (sections 4 and 8).
_CLOSING_CODES = frozenset(code.value for code in (ErrorCode.protocol_error, ErrorCode.resource_exhausted,
                                                   ErrorCode.permission_denied, ErrorCode.unavailable))

# How much one read of the socket takes at most (the daemon's chunks are 256 KiB).
_READ_SIZE = 1 << 18

# Room for the descriptors of one read (the daemon attaches one per reply frame; one read never returns two).
_ANCILLARY_SPACE = socket.CMSG_SPACE(16 * array.array("i").itemsize)
# Plain ints: the socket module's flags are enum members, whose `&` costs a Python call on every read.
_MSG_CTRUNC = int(socket.MSG_CTRUNC)
_MSG_DONTWAIT = int(socket.MSG_DONTWAIT)
_MSG_CMSG_CLOEXEC = int(socket.MSG_CMSG_CLOEXEC)
_SOL_SOCKET, _SCM_RIGHTS = int(socket.SOL_SOCKET), int(socket.SCM_RIGHTS)

# How long a request held for a slot reads at a time before it looks at the slots again.
_HELD_READ_S = 0.05

# The kinds of item on a request's queue (and, for the first two, of the items ``stream`` yields).
_FINAL = "final"
_EVENT = "event"
_CLOSED = "closed"


class _Pending:
    """One request in flight: the reading thread appends its replies to ``items`` (under the connection's lock) and
    wakes the thread waiting for them when it sleeps (``_wake``)."""

    __slots__ = ("id", "op", "timeout_ms", "items", "sleeper")

    def __init__(self, rid: int, op: str, timeout_ms: Optional[int]):
        self.id = rid
        self.op = op
        self.timeout_ms = timeout_ms
        self.items: "collections.deque[tuple]" = collections.deque()
        # While its thread sleeps: a held lock that thread waits to acquire, released (once) to wake it.
        self.sleeper: Any = None


# Each thread's lock to sleep on (kept, not made per wait). Not a threading.Condition: its wait and notify are
# Python code around the same kind of lock (a waiter list, save and restore of the outer lock), several
# microseconds a hand-over, and with eight threads on one client every reply is handed over.
_sleepers = threading.local()


def _sleeper() -> Any:
    """This thread's lock to sleep on, held (a wake-up that came after its sleeper timed out left it released)."""
    sleeper = getattr(_sleepers, "lock", None)
    if sleeper is None:
        sleeper = _sleepers.lock = threading.Lock()
    sleeper.acquire(False)
    return sleeper


def _wake(pending: _Pending) -> None:
    """Under the connection's lock: wakes the thread sleeping for ``pending``, if it sleeps (once)."""
    sleeper = pending.sleeper
    if sleeper is not None:
        pending.sleeper = None
        sleeper.release()


class Connection:
    """A connection to ferryd and its generic requests; ``ferry.Client`` is this plus the operation families.

    ``path`` defaults to default_socket_path(); ``name`` is sent in ``hello``; ``timeout`` (seconds) bounds
    connecting and is the local wait limit of requests sent without ``timeout_ms`` (None: no limit).
    """

    def __init__(self, path: Optional[str] = None, name: str = "python", timeout: Optional[float] = None):
        _init_connection_state(self, path, name, timeout)
        # Descriptors that came with reply frames (body_fd), oldest first: each arrives with its frame's first byte.
        self._fds: "collections.deque[int]" = collections.deque()
        self._sock: Optional[socket.socket] = None
        self._lock = threading.Lock()          # guards _pending, _closed_error, _ids, _reading, _followers, items
        self._send_lock = threading.Lock()     # one request (all of its frames) at a time on the socket
        self._reading = False                  # a thread is reading the socket (the leader)
        self._followers: List[_Pending] = []   # requests whose threads sleep until handed a reply or the reading
        self._reader_left = threading.Condition(self._lock)
        # Requests on the wire, at most the daemon's max_in_flight; past it a request waits in _take_slot.
        self._slots = _SlotGate(self._lock)
        self._cancel_ids: set = set()          # cancel requests in flight: they take no slot
        self._closing = False                  # close() waits for the reader to leave (_reader_left)
        self._poll: Optional[Any] = None
        self._write_poll: Optional[Any] = None
        # One receive buffer, used by the reading thread (one at a time) and kept: a fresh 256 KiB bytes per read
        # is past malloc's mmap threshold, so each read cost an mmap, an mremap and an munmap and faulted the pages
        # in again (strace: 3 more system calls a request, ~10 us of system time). The decoder copies what it keeps.
        self._rbuf = memoryview(bytearray(_READ_SIZE))

    # ----- lifecycle

    def connect(self) -> "Connection":
        """Connects and says ``hello``; stores the server's ``version``, ``server``, ``limits`` and ``operations``.
        Returns ``self``."""
        if self._sock is not None:
            raise FerryError(ErrorCode.failed_precondition, "this Client already connected once; make a new Client")
        self._sock = self._open_socket()
        self._poll = select.poll()
        self._poll.register(self._sock.fileno(), select.POLLIN)
        self._write_poll = select.poll()    # used under _send_lock only
        self._write_poll.register(self._sock.fileno(), select.POLLIN | select.POLLOUT)
        try:
            result, _ = self.call("hello", _hello_args(self.name))
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
            raise FerryError(ErrorCode.unavailable, f"cannot connect to ferryd at {self.path}: {e}") from e
        sock.settimeout(None)
        return sock

    def _accept_hello(self, result: dict) -> None:
        _accept_hello(self, result)
        with self._lock:
            self._slots.limit = max(1, int(self.limits.get("max_in_flight", self._slots.limit)))
            self._slots.wake()

    @property
    def offers_body_fd(self) -> bool:
        """Whether the daemon hands large bodies over as descriptors (the ``body_fd`` capability): ``cache_get`` and
        ``fetch`` then ask for them, so the bytes never cross the socket."""
        return "body_fd" in self.capabilities

    def close(self) -> None:
        """Closes the connection (the server cancels what is still in flight); waiters get ``unavailable``."""
        sock = self._sock
        if sock is None:
            return
        self._shutdown(FerryError(ErrorCode.unavailable, "the client closed the connection"))
        # A thread still reading sees the end of stream the shutdown gave it; the descriptor is closed after it left.
        with self._lock:
            self._closing = True
            self._reader_left.wait_for(lambda: not self._reading, timeout=5)
        sock.close()
        while self._fds:
            os.close(self._fds.popleft())

    def __enter__(self) -> "Connection":
        if self._sock is None:
            self.connect()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once the connection is closed (by either side, or after a failure)."""
        return self._closed_error is not None

    # ----- requests

    def send(self, op: str, args: Optional[dict] = None, body: bytes = b"", timeout_ms: Optional[int] = None) -> int:
        """Sends a request without waiting; returns its id for ``wait`` (which every ``send`` needs, to collect the
        reply) and ``cancel``. Past the daemon's ``max_in_flight`` requests on the wire, it waits (reading replies
        meanwhile) until a reply frees a slot, at most the client's local limit for the request."""
        return self._start(op, args, body, timeout_ms, self._deadline(None, timeout_ms)).id

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
        deadline = self._deadline(None, timeout_ms)
        return self._collect(self._start(op, args, body, timeout_ms, deadline), deadline)

    def stream(self, op: str, args: Optional[dict] = None, body: bytes = b"",
               timeout_ms: Optional[int] = None) -> Iterator[tuple]:
        """Sends a request (when iteration starts) and yields its replies as they come:
        ``("event", name, data, body)`` for each event, then ``("final", result, body)``. An error reply raises
        FerryError. Leaving the loop early cancels the request."""
        deadline = self._deadline(None, timeout_ms)
        pending = self._start(op, args, body, timeout_ms, deadline)
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

    # ----- internals: sending

    def _start(self, op: str, args: Optional[dict], body: bytes, timeout_ms: Optional[int],
               deadline: Optional[float]) -> _Pending:
        """Registers and sends a request; past ``max_in_flight`` it first waits for a slot until ``deadline``."""
        envelope = _request_envelope(op, args, timeout_ms)
        body = _byte_view(body)
        takes_slot = op != "cancel"
        with self._lock:
            self._raise_if_closed()
            rid = envelope["id"] = next(self._ids)
            check_request(envelope)
            pending = _Pending(rid, op, timeout_ms)
            self._pending[rid] = pending
            if not takes_slot:
                self._cancel_ids.add(rid)
            has_slot = not takes_slot or self._slots.try_take()
        try:
            if not has_slot:
                self._take_slot(pending, deadline)
                has_slot = True
            self._write(_split_request(envelope, body, self._send_limit, self._send_json_limit))
        except BaseException:
            with self._lock:
                self._pending.pop(rid, None)
                self._cancel_ids.discard(rid)
                if takes_slot and has_slot:
                    # Not sent (or the connection ended while sending): no reply will come to free it.
                    self._slots.free()
            raise
        return pending

    def _take_slot(self, pending: _Pending, deadline: Optional[float]) -> None:
        """Waits, in order, for a slot on the wire: reading replies meanwhile when no other thread reads (a slot frees
        only when a final reply is read, and this thread may be the only one that could read it)."""
        lock = self._lock
        with lock:
            ticket = self._slots.hold()
            try:
                while True:
                    self._raise_if_closed()
                    if self._slots.take_if_turn(ticket):
                        return
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise FerryError(ErrorCode.deadline_exceeded,
                                         f"request {pending.id} ({pending.op}) waited longer than its local time limit "
                                         f"for one of the {self._slots.limit} requests ferryd takes at once "
                                         "(max_in_flight) to finish; it was not sent")
                    if self._reading:
                        self._slots.turn.wait(remaining)
                        continue
                    self._reading = True
                    lock.release()
                    try:
                        # In short waits: a slot may also free without a reply (a request that took one failed
                        # before it was sent), and this thread must see it then, not at the next reply.
                        self._read_once(_HELD_READ_S if remaining is None else min(remaining, _HELD_READ_S))
                    finally:
                        lock.acquire()
                        self._leave_reading()
            except BaseException:
                self._slots.drop(ticket)
                raise

    def _write(self, frames: List[Tuple[dict, bytes, memoryview]]) -> None:
        """Writes the frames of one request back to back: no other frame comes in between."""
        with self._send_lock:
            self._raise_if_closed()
            try:
                for _, data, part in frames:
                    head = HEADER.pack(len(data), len(part)) + data
                    if len(part) <= 65536:
                        self._send_all(head + part)
                    else:                                      # no copy of a large part
                        self._send_all(head)
                        self._send_all(part)
            except OSError as e:
                err = FerryError(ErrorCode.unavailable, f"connection to ferryd lost while sending: {e}")
                self._shutdown(err)
                raise err from e
            except BaseException:
                # interrupted (KeyboardInterrupt, …), maybe with a frame or a request half written: the byte stream
                # can no longer be trusted
                self._shutdown(FerryError(ErrorCode.unavailable, "interrupted while sending a request; the "
                                                                 "connection was closed"))
                raise

    def _send_all(self, data) -> None:
        """Sends all of ``data``. When the socket is full the thread reads replies meanwhile if nobody else does:
        replies are read only by waiting threads, and a thread that sends many requests before it waits would
        otherwise wait for ever (the daemon stops reading a client whose replies pile up unread)."""
        view = memoryview(data)
        try:
            view = view[self._sock.send(view, _MSG_DONTWAIT):]
        except BlockingIOError:
            pass
        while view:
            events = self._write_poll.poll(100)
            if any(e & (select.POLLIN | select.POLLHUP | select.POLLERR) for _, e in events):
                self._read_if_nobody_reads()
            try:
                view = view[self._sock.send(view, _MSG_DONTWAIT):]
            except BlockingIOError:
                continue

    def _read_if_nobody_reads(self) -> None:
        """Reads what is there and hands it out, unless another thread has the reading."""
        with self._lock:
            if self._reading or self._closed_error is not None:
                return
            self._reading = True
        try:
            self._read_once(0.0)
        finally:
            with self._lock:
                self._leave_reading()

    def _send_cancel_nowait(self, request_id: int) -> None:
        """Best effort: asks the server to stop a request whose answer nobody waits for any more."""
        with self._lock:
            if self._closed_error is not None:
                return
            rid = next(self._ids)
            self._cancel_ids.add(rid)   # takes no slot, and its reply frees none
        envelope = {"id": rid, "op": "cancel", "args": {"id": request_id}}
        try:
            self._write([(envelope, encode_json(envelope), memoryview(b""))])
        except FerryError:
            pass

    # ----- internals: waiting

    def _deadline(self, timeout: Optional[float], timeout_ms: Optional[int]) -> Optional[float]:
        timeout = _local_timeout(timeout, timeout_ms, self.timeout)
        return None if timeout is None else time.monotonic() + timeout

    def _lookup(self, request_id: int) -> _Pending:
        with self._lock:
            pending = self._pending.get(request_id)
        if pending is None:
            raise FerryError(ErrorCode.not_found, f"request {request_id} is not waiting on this client "
                                                  "(unknown id, or its reply was already collected)")
        return pending

    def _collect(self, pending: _Pending, deadline: Optional[float],
                 on_event: Optional[Callable[[str, dict], Any]] = None,
                 sink: Optional[Callable[[bytes], Any]] = None,
                 before_final: Optional[Callable[[dict], Any]] = None,
                 file_target: Any = None) -> Tuple[dict, bytes]:
        """The final reply, with the bodies of chunk events joined (or, with ``sink``, handed to it as they come,
        the final body included, and b"" returned); other events go to ``on_event``; ``before_final`` gets the
        final result before its body goes anywhere. A body that came as a descriptor is returned as a ``BodyFile``
        without ``sink``; with one, it is copied to ``file_target`` (a file object: in the kernel) or ``sink``. An
        exception from a callback gives the request up (a
        ``cancel`` is sent while it is in flight) and propagates."""
        parts: List[bytes] = []
        have = 0
        while True:
            kind, *fields = self._next_item(pending, deadline)
            if kind == _FINAL:
                result, body = fields
                if before_final is not None:
                    before_final(result)
                if isinstance(body, BodyFile):
                    # The whole body as a descriptor (the request asked with body_fd): no chunk came before it.
                    if sink is None:
                        return result, body
                    with body:
                        body.copy_to(file_target if file_target is not None else sink)
                    return result, b""
                return result, _final_body(body, parts, sink)
            name, data, body = fields
            try:
                have = _take_event(pending.id, name, data, body, have, parts, sink, on_event)
            except BaseException:
                self._abandon(pending)
                raise

    def _next_item(self, pending: _Pending, deadline: Optional[float]) -> tuple:
        """The next reply of a request; raises FerryError for an error reply, a closed connection or a timeout."""
        item = self._await(pending, deadline)
        if item is None:
            self._abandon(pending)
            raise _local_timeout_error(pending.id, pending.op) from None
        if item[0] == _EVENT:
            return item
        self._forget(pending.id)
        return _final_item(item)

    def _abandon(self, pending: _Pending) -> None:
        if self._forget(pending.id):
            self._send_cancel_nowait(pending.id)

    def _forget(self, rid: int) -> bool:
        with self._lock:
            return self._pending.pop(rid, None) is not None

    def _raise_if_closed(self) -> None:
        if self._sock is None:
            raise FerryError(ErrorCode.failed_precondition, "client is not connected; call connect() first")
        if self._closed_error is not None:
            raise _copy_error(self._closed_error)

    # ----- internals: reading (by the waiting threads, one at a time)

    def _await(self, pending: _Pending, deadline: Optional[float]) -> Optional[tuple]:
        """The next item of ``pending``: read by this thread when nobody else reads, else handed over by the
        reader; None when ``deadline`` passed first."""
        lock = self._lock
        with lock:
            while True:
                if pending.items:
                    self._pass_reading_on()
                    return pending.items.popleft()
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    # This thread may have been the one handed the reading as its time ran out: pass it on.
                    self._pass_reading_on()
                    return None
                if not self._reading:
                    self._reading = True
                    break
                sleeper = pending.sleeper = _sleeper()
                self._followers.append(pending)
                lock.release()
                try:
                    sleeper.acquire(True, -1 if remaining is None else remaining)
                finally:
                    lock.acquire()
                    pending.sleeper = None
                    self._followers.remove(pending)
        try:
            while True:
                with lock:
                    if pending.items:
                        break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                self._read_once(remaining)
        finally:
            with lock:
                self._leave_reading()
        with lock:
            return pending.items.popleft() if pending.items else None

    def _leave_reading(self) -> None:
        """The reading thread leaves (under the lock): the reading goes to a thread still waiting for its reply."""
        self._reading = False
        if self._closing:
            self._reader_left.notify_all()
        self._pass_reading_on()
        self._slots.wake()   # a held request may have to read its way to a slot

    def _pass_reading_on(self) -> None:
        """Under the lock, with nobody reading: wakes one thread still waiting for its reply, to read. Called by
        every thread that leaves, so a wake-up that found its thread leaving (its reply or its deadline came at
        the same moment) is passed on, not lost."""
        if self._reading:
            return
        for follower in self._followers:
            if not follower.items:
                _wake(follower)
                return

    def _read_once(self, timeout: Optional[float]) -> None:
        """Waits up to ``timeout`` seconds (None: no limit) for the socket, reads what is there and hands each
        frame to its request; at the end of the stream or a broken frame the connection is shut down."""
        if self._closed_error is not None:
            return
        # Without a deadline the read itself waits (close() ends it with a shutdown): one system call less a read.
        if timeout is not None and not self._poll.poll(max(1, int(timeout * 1000))):
            return
        reason = None
        try:
            n, ancillary, flags, _ = self._sock.recvmsg_into([self._rbuf], _ANCILLARY_SPACE, _MSG_CMSG_CLOEXEC)
            data = self._rbuf[:n]
            for level, kind, payload in ancillary:
                if level == _SOL_SOCKET and kind == _SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
                    self._fds.extend(fds)
            if flags & _MSG_CTRUNC:
                # A descriptor was dropped (this process is out of them): frames and descriptors no longer pair.
                reason = FerryError(ErrorCode.resource_exhausted, "a descriptor ferryd sent was dropped by the "
                                                                  "kernel (this process is out of descriptors)")
            elif not data:
                reason = FerryError(ErrorCode.unavailable, "ferryd closed the connection")
            else:
                for envelope, body in self._decoder.feed(data):
                    self._dispatch(envelope, body)
        except FerryError as e:
            try:
                for envelope, body in getattr(e, "frames", []):
                    self._dispatch(envelope, body)
            except FerryError:
                pass
            reason = FerryProtocolError(f"ferryd sent a malformed frame: {e.message}")
        except OSError as e:
            reason = FerryError(ErrorCode.unavailable, f"connection to ferryd lost: {e}")
        except BaseException:
            # Interrupted (KeyboardInterrupt, …) with frames read but not handed out: their waiters would wait for
            # ever, so the connection ends here.
            self._shutdown(FerryError(ErrorCode.unavailable, "interrupted while reading replies; the connection was "
                                                             "closed"))
            raise
        if reason is None:
            return
        if self._server_error is not None:
            reason = _closed_after(self._server_error)
        self._shutdown(reason)

    def _dispatch(self, envelope: dict, body: bytes) -> None:
        result = envelope.get("result")
        if envelope.get("final") is not False and isinstance(result, dict) and isinstance(result.get("body_fd"), dict):
            # Claimed whether or not anyone still waits, so the next frame's descriptor stays its own.
            named = result["body_fd"]
            if not self._fds:
                raise FerryProtocolError("ferryd named a body descriptor that did not arrive")
            body = BodyFile(self._fds.popleft(), int(named.get("offset", 0)), int(named.get("length", 0)))
        rid = envelope["id"]
        if rid == 0:
            self._note_connection_error(envelope)
            return
        final = envelope.get("final") is not False
        with self._lock:
            if final:
                # Every request gets one final reply: it frees the request's slot (a cancel's took none).
                if rid in self._cancel_ids:
                    self._cancel_ids.discard(rid)
                else:
                    self._slots.free()
            pending = self._pending.get(rid)
            if pending is None:
                return  # a reply nobody waits for any more (local timeout, abandoned stream, fire-and-forget cancel)
            pending.items.append(_reply_item(envelope, body))
            _wake(pending)

    def _note_connection_error(self, envelope: dict) -> None:
        error = _closing_error(envelope)
        if error is not None:
            self._server_error = error

    def _shutdown(self, reason: FerryError) -> None:
        """Marks the connection closed (first reason wins) and fails every waiter with ``reason``."""
        with self._lock:
            if self._closed_error is None:
                self._closed_error = reason
            reason = self._closed_error
            self._slots.open_all()
            for pending in self._pending.values():
                pending.items.append((_CLOSED, reason))
                _wake(pending)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# ----- the parts of a connection that do no I/O, shared with ferry.aio.AsyncClient

def _init_connection_state(conn: Any, path: Optional[str], name: str, timeout: Optional[float]) -> None:
    """What both connections (this one and ``ferry.aio``'s) start with: where and who, what ``hello`` will say, the
    frame decoder and send limits before ``hello``, the ids, the requests in flight, no error yet."""
    conn.path = path or default_socket_path()
    conn.name = name
    conn.timeout = timeout
    conn.version = None
    conn.server = None
    conn.limits = {}
    conn.operations = []
    conn.capabilities = []
    conn._decoder = FrameDecoder()
    conn._send_limit = DEFAULT_HANDSHAKE_FRAME_BYTES
    conn._send_json_limit = DEFAULT_MAX_JSON_BYTES
    conn._ids = itertools.count(1)
    conn._pending = {}
    conn._closed_error = None
    conn._server_error = None


def _reply_item(envelope: dict, body: Any) -> tuple:
    """A reply frame as the item its request's queue holds: an event, or the final reply."""
    if envelope.get("final") is False:
        return (_EVENT, envelope.get("event"), envelope.get("data") or {}, body)
    return (_FINAL, envelope, body)


def _hello_args(name: str) -> Dict[str, Any]:
    return {"versions": [PROTOCOL_VERSION], "client": name}


def _accept_hello(conn: Any, result: dict) -> None:
    """Stores the ``hello`` result on ``conn`` (``version``, ``server``, ``limits``, ``operations``,
    ``capabilities``) and raises its decoder's and sender's limits to the ones the server announced."""
    conn.version = result.get("version")
    conn.server = result.get("server")
    conn.limits = dict(result.get("limits") or {})
    conn.operations = list(result.get("operations") or [])
    conn.capabilities = [c for c in (result.get("capabilities") or []) if isinstance(c, str)]
    max_frame = conn.limits.get("max_frame_bytes", DEFAULT_MAX_FRAME_BYTES)
    conn._decoder.max_frame_bytes = max_frame
    conn._decoder.max_json_bytes = conn.limits.get("max_json_bytes", DEFAULT_MAX_JSON_BYTES)
    conn._decoder.max_nesting = conn.limits.get("max_nesting", DEFAULT_MAX_NESTING)
    conn._send_limit = max_frame
    conn._send_json_limit = conn._decoder.max_json_bytes


def _request_envelope(op: str, args: Optional[dict], timeout_ms: Optional[int]) -> Dict[str, Any]:
    """A request envelope with id 0 (the caller sets the id); empty args and no timeout_ms are left out."""
    envelope: Dict[str, Any] = {"id": 0, "op": op}
    if args:
        envelope["args"] = args
    if timeout_ms is not None:
        envelope["timeout_ms"] = timeout_ms
    return envelope


def _local_timeout(timeout: Optional[float], timeout_ms: Optional[int], default: Optional[float]) -> Optional[float]:
    """How long (seconds) to wait locally for a request: ``timeout`` if given, else its ``timeout_ms`` plus a grace
    (section 7), else the client's ``default``; None: no limit."""
    if timeout is None and timeout_ms is not None:
        timeout = timeout_ms / 1000.0 + LOCAL_DEADLINE_GRACE_S
    if timeout is None:
        timeout = default
    return timeout


def _local_timeout_error(rid: int, op: str) -> FerryError:
    return FerryError(ErrorCode.deadline_exceeded, f"no reply to request {rid} ({op}) within the local timeout")


def _copy_error(err: FerryError) -> FerryError:
    """A new exception like ``err`` (one error shared by all waiters is raised as a copy each)."""
    return FerryError.make(err.code, err.message, err.details)


def _final_item(item: tuple) -> Tuple[str, dict, Any]:
    """A request's last queue item (its final frame, or the connection's end) as ``("final", result, body)``;
    raises FerryError for an error reply or a closed connection."""
    if item[0] == _CLOSED:
        raise _copy_error(item[1])
    _, envelope, body = item
    if "error" in envelope:
        raise FerryError.from_wire(envelope["error"])
    result = envelope.get("result")
    return _FINAL, result if isinstance(result, dict) else {}, body


def _take_event(rid: int, name: str, data: Any, body: bytes, have: int, parts: List[bytes],
                sink: Optional[Callable[[bytes], Any]], on_event: Optional[Callable[[str, dict], Any]]) -> int:
    """One event of a request in flight: a chunk's body (which must follow the ``have`` bytes received so far) to
    ``parts``, or to ``sink`` when there is one; any other event to ``on_event``. Returns the bytes received now."""
    if name != EventName.chunk:
        if on_event is not None:
            on_event(name, data if isinstance(data, dict) else {})
        return have
    error = _chunk_error(rid, data, have)
    if error is not None:
        raise error
    if sink is None:
        parts.append(body)
    else:
        sink(body)
    return have + len(body)


def _final_body(body: bytes, parts: List[bytes], sink: Optional[Callable[[bytes], Any]]) -> bytes:
    """The final reply's body: joined after the chunks in ``parts``; or, with ``sink``, handed to it (b"" returned)."""
    if sink is None:
        parts.append(body)
        return b"".join(parts)
    if body:
        sink(body)
    return b""


def _chunk_error(rid: int, data: Any, have: int) -> Optional[FerryProtocolError]:
    """The error for a chunk event whose offset is not the ``have`` bytes received so far, else None."""
    offset = data.get("offset") if isinstance(data, dict) else None
    if offset is not None and offset != have:
        return FerryProtocolError(f"request {rid}: chunk at offset {offset}, expected {have}")
    return None


def _closing_error(envelope: dict) -> Optional[FerryError]:
    """The error of an id-0 frame after which the server closes the connection (section 4), else None."""
    if not isinstance(envelope.get("error"), dict):
        return None
    error = FerryError.from_wire(envelope["error"])
    return error if error.code in _CLOSING_CODES else None


def _closed_after(server_error: FerryError) -> FerryError:
    """Why the connection ended, when the server named a reason (an id-0 closing error) before closing it."""
    return FerryError.make(server_error.code, f"ferryd closed the connection after: {server_error.message}",
                           server_error.details)
