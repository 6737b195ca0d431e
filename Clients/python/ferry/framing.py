"""Frames of the Ferry protocol (PROTOCOL.md sections 2 to 5), without a socket.

A frame is ``json_len`` and ``body_len`` (big-endian u32), the envelope as UTF-8 JSON, then the raw body.
``encode_frame`` makes one, ``FrameDecoder`` reads them from a byte stream cut anywhere, ``decode_envelope`` and
``check_request`` check an envelope, and ``split_request`` cuts a request whose body is larger than one frame into
the first frame and continuation frames::

    frame = encode_frame({"id": 2, "op": "ping"})
    decoder = FrameDecoder()
    decoder.feed(frame[:5]) + decoder.feed(frame[5:])    # -> [({"id": 2, "op": "ping"}, b"")]

    frames = [encode_frame(e, part) for e, part in split_request({"id": 3, "op": "ping"}, big_body, 4194304)]
"""

import struct
from typing import Any, Dict, List, Optional, Tuple

from .errors import FerryError, FerryProtocolError
from .strictjson import dumps_compact, is_int, loads_strict, nesting_depth
from .wire import ErrorCode

__all__ = [
    "PROTOCOL_VERSION", "HEADER", "HEADER_SIZE", "DEFAULT_HANDSHAKE_FRAME_BYTES", "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_JSON_BYTES", "DEFAULT_MAX_NESTING", "MIN_BODY_PART_BYTES", "MAX_ID", "MAX_TIMEOUT_MS", "Frame",
    "encode_json", "encode_frame", "decode_envelope", "check_request", "split_request", "FrameDecoder",
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

Frame = Tuple[Dict[str, Any], bytes]


def encode_json(envelope: dict) -> bytes:
    """The envelope as compact UTF-8 JSON, the form of PROTOCOL.md section 10."""
    if not isinstance(envelope, dict):
        raise TypeError(f"an envelope must be a dict, not {type(envelope).__name__}")
    return dumps_compact(envelope)


def encode_frame(envelope: dict, body: bytes = b"") -> bytes:
    """One frame: json_len and body_len (big-endian u32), the envelope JSON, then the raw body."""
    data = encode_json(envelope)
    body = bytes(body)
    return HEADER.pack(len(data), len(body)) + data + body


def decode_envelope(data: bytes, max_nesting: int = DEFAULT_MAX_NESTING) -> dict:
    """Parses and checks one envelope (section 3). Raises FerryError("invalid_argument") when it is not valid
    UTF-8, not one JSON object, has duplicate keys, nests too deep, or lacks an integer ``id`` in 0 … 2^53−1."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise FerryError(ErrorCode.invalid_argument, f"envelope is not valid UTF-8: {e}") from None
    try:
        envelope = loads_strict(text)
    except RecursionError:
        raise FerryError(ErrorCode.invalid_argument, f"envelope nests deeper than {max_nesting}") from None
    except ValueError as e:
        raise FerryError(ErrorCode.invalid_argument, f"envelope is not valid JSON: {e}") from None
    if not isinstance(envelope, dict):
        raise FerryError(ErrorCode.invalid_argument,
                         f"envelope must be a JSON object, not {type(envelope).__name__}")
    # A text with no more brackets than the limit cannot nest deeper (counted in C; the walk only when it might).
    if text.count("{") + text.count("[") > max_nesting and nesting_depth(envelope) > max_nesting:
        raise FerryError(ErrorCode.invalid_argument, f"envelope nests deeper than {max_nesting}")
    _check_id(envelope, minimum=0)
    return envelope


def _check_id(envelope: dict, minimum: int) -> None:
    if "id" not in envelope:
        raise FerryError(ErrorCode.invalid_argument, "envelope has no id")
    rid = envelope["id"]
    if not is_int(rid):
        raise FerryError(ErrorCode.invalid_argument, f"id must be an integer, not {rid!r}")
    if not minimum <= rid <= MAX_ID:
        raise FerryError(ErrorCode.invalid_argument, f"id {rid} is out of range {minimum} … {MAX_ID}")


def check_request(envelope: dict) -> None:
    """Checks the request fields of section 3 (id, op, args, timeout_ms); raises FerryError("invalid_argument")."""
    _check_id(envelope, minimum=1)
    if not isinstance(envelope.get("op"), str):
        raise FerryError(ErrorCode.invalid_argument, "request op is missing or not a string")
    if not isinstance(envelope.get("args", {}), dict):
        raise FerryError(ErrorCode.invalid_argument, "request args must be an object")
    timeout_ms = envelope.get("timeout_ms", 1)
    if not is_int(timeout_ms) or not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
        raise FerryError(ErrorCode.invalid_argument,
                         f"timeout_ms must be an integer 1 … {MAX_TIMEOUT_MS}, not {timeout_ms!r}")


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
        raise FerryError(ErrorCode.resource_exhausted,
                         f"request envelope of {len(data)} bytes exceeds max_json_bytes {max_json_bytes}")
    if HEADER_SIZE + len(data) + len(body) <= max_frame_bytes:
        return [(envelope, data, body)]
    first = dict(envelope)
    first["more"] = True
    data = encode_json(first)
    room = max_frame_bytes - HEADER_SIZE - len(data)
    if len(data) > max_json_bytes or room < MIN_BODY_PART_BYTES:
        raise FerryError(ErrorCode.resource_exhausted,
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
        """Adds ``data`` to the buffer and returns the frames it completed, in order (see the class docstring for
        the errors)."""
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
