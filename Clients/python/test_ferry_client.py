"""Tests of ferry_client.

    cd /work/main && FERRYD=/path/to/ferryd python3 -m unittest discover -s Clients/python -v

- VectorTests, SocketPathTests: framing against Protocol/vectors/frames.json; no daemon needed.
- SplitRequestTests: a request body sent in parts (continuation frames, PROTOCOL.md section 5), frame by frame.
- FakeServerTests: the Client's threading, cancelling and failure handling against a tiny in-process stand-in.
- FakeCacheTests: what the cache_* methods send and how they read replies, against the same stand-in.
- DaemonTests, CacheDaemonTests: a real ferryd from $FERRYD (skipped when FERRYD is unset, an error when it is set
  but missing). CacheDaemonTests (PROTOCOL.md section 6, cache.*) also start ferryds of their own: one with
  16 MiB frames for max_value_bytes, and a stop (SIGTERM) and restart on the same --cache-dir.
- test_fetch.py: ``fetch`` (HTTP through the daemon's cache), against the stand-in here and against a real ferryd
  with the test origin Tests/Origin/ferry_origin.py.
"""

import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ferry_client import (  # noqa: E402
    DEFAULT_MAX_FRAME_BYTES, MIN_BODY_PART_BYTES, CacheEntry, CacheKey, Client, FerryError, FerryProtocolError,
    FrameDecoder, check_request, decode_envelope, default_socket_path, encode_frame, encode_json, split_request,
)

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS_PATH = os.path.join(HERE, "..", "..", "Protocol", "vectors", "frames.json")
HANDSHAKE_LIMIT = 65536


def load_vectors():
    with open(VECTORS_PATH, encoding="utf-8") as f:
        return json.load(f)


VECTORS = load_vectors()


def describe_body_kinds():
    """The values of describe's ``body`` field, as PROTOCOL.md section 6 lists them (``"body":"a|b|c"``)."""
    with open(os.path.join(HERE, "..", "..", "Protocol", "PROTOCOL.md"), encoding="utf-8") as f:
        match = re.search(r'"body":"([a-z|]+)"', f.read())
    assert match, "PROTOCOL.md no longer shows describe's body field as \"body\":\"a|b|c\""
    return match.group(1).split("|")


DESCRIBE_BODY_KINDS = describe_body_kinds()


def expected_reply_id(frame: bytes) -> int:
    """The id the server names in its error reply to an invalid vector (section 4): the request's id when the
    envelope is a JSON object with a valid id, else 0."""
    json_len, _ = struct.unpack(">II", frame[:8])
    if json_len == 0 or len(frame) < 8 + json_len:
        return 0
    try:
        return decode_envelope(frame[8:8 + json_len])["id"]
    except FerryError:
        return 0


# ============================================================================================ framing, no daemon

class VectorTests(unittest.TestCase):

    def test_vectors_file_is_protocol_1(self):
        self.assertEqual(VECTORS["protocol"], 1)
        self.assertTrue(VECTORS["valid"] and VECTORS["invalid"])

    def test_valid_vectors_decode(self):
        for v in VECTORS["valid"]:
            with self.subTest(v["name"]):
                frames = FrameDecoder().feed(bytes.fromhex(v["hex"]))
                self.assertEqual(frames, [(v["envelope"], bytes.fromhex(v["body_hex"]))])

    def test_valid_vectors_encode_byte_exact(self):
        for v in VECTORS["valid"]:
            with self.subTest(v["name"]):
                self.assertEqual(encode_frame(v["envelope"], bytes.fromhex(v["body_hex"])).hex(), v["hex"])

    def test_valid_vectors_split_at_every_byte(self):
        for v in VECTORS["valid"]:
            data = bytes.fromhex(v["hex"])
            expected = [(v["envelope"], bytes.fromhex(v["body_hex"]))]
            for cut in range(len(data) + 1):
                with self.subTest(v["name"], cut=cut):
                    decoder = FrameDecoder()
                    self.assertEqual(decoder.feed(data[:cut]) + decoder.feed(data[cut:]), expected)
                    self.assertEqual(decoder.buffered, 0)

    def test_valid_vectors_byte_by_byte(self):
        for v in VECTORS["valid"]:
            with self.subTest(v["name"]):
                decoder = FrameDecoder()
                frames = []
                for b in bytes.fromhex(v["hex"]):
                    frames += decoder.feed(bytes([b]))
                self.assertEqual(frames, [(v["envelope"], bytes.fromhex(v["body_hex"]))])

    def test_all_valid_vectors_in_one_feed(self):
        data = b"".join(bytes.fromhex(v["hex"]) for v in VECTORS["valid"])
        expected = [(v["envelope"], bytes.fromhex(v["body_hex"])) for v in VECTORS["valid"]]
        self.assertEqual(FrameDecoder().feed(data), expected)

    def test_protocol_error_vectors_rejected_by_header(self):
        vectors = [v for v in VECTORS["invalid"] if v["error"] == "protocol_error"]
        self.assertTrue(vectors)
        for v in vectors:
            with self.subTest(v["name"]):
                decoder = FrameDecoder(max_frame_bytes=HANDSHAKE_LIMIT)
                with self.assertRaises(FerryProtocolError) as cm:
                    decoder.feed(bytes.fromhex(v["hex"])[:8])   # the header alone is enough to tell
                self.assertEqual(cm.exception.code, "protocol_error")
                with self.assertRaises(FerryProtocolError):      # and the decoder stays broken
                    decoder.feed(b"\x00" * 8)

    def test_protocol_error_vectors_rejected_whole(self):
        for v in VECTORS["invalid"]:
            if v["error"] == "protocol_error":
                with self.subTest(v["name"]), self.assertRaises(FerryProtocolError):
                    FrameDecoder(max_frame_bytes=HANDSHAKE_LIMIT).feed(bytes.fromhex(v["hex"]))

    def test_call_error_vectors_rejected(self):
        """invalid_argument vectors: the decoder refuses the envelope, or check_request refuses the request."""
        for v in VECTORS["invalid"]:
            if v["error"] == "protocol_error":
                continue
            with self.subTest(v["name"]):
                with self.assertRaises(FerryError) as cm:
                    for envelope, _ in FrameDecoder(max_frame_bytes=HANDSHAKE_LIMIT).feed(bytes.fromhex(v["hex"])):
                        check_request(envelope)
                self.assertEqual(cm.exception.code, v["error"])
                self.assertNotIsInstance(cm.exception, FerryProtocolError)

    def test_decoder_goes_on_after_a_bad_envelope(self):
        bad = bytes.fromhex(next(v["hex"] for v in VECTORS["invalid"] if v["name"] == "not json"))
        good = encode_frame({"id": 2, "op": "ping"})
        decoder = FrameDecoder()
        with self.assertRaises(FerryError) as cm:
            decoder.feed(good + bad + good)
        self.assertEqual(cm.exception.frames, [({"id": 2, "op": "ping"}, b"")])
        self.assertEqual(decoder.feed(b""), [({"id": 2, "op": "ping"}, b"")])

    def test_limits(self):
        self.assertEqual(len(FrameDecoder().feed(encode_frame({"id": 1}, b"x" * (HANDSHAKE_LIMIT - 16)))), 1)
        with self.assertRaises(FerryProtocolError):
            FrameDecoder().feed(struct.pack(">II", 9, HANDSHAKE_LIMIT - 16))   # 65537 bytes
        with self.assertRaises(FerryProtocolError):
            FrameDecoder(max_frame_bytes=1 << 30, max_json_bytes=100).feed(struct.pack(">II", 101, 0))
        big = FrameDecoder(max_frame_bytes=DEFAULT_MAX_FRAME_BYTES)
        self.assertEqual(big.feed(encode_frame({"id": 1}, b"y" * (1 << 20)))[0][1], b"y" * (1 << 20))

    def test_envelope_checks(self):
        for text in [b'{"id":true}', b'{"id":-1}', b'{"id":9007199254740992}', b'{"id":1,"x":NaN}',
                     b'{"id":1e0}', b'"id"', b'{"id":1', b'\xef\xbb\xbf{"id":1}']:
            with self.subTest(text), self.assertRaises(FerryError) as cm:
                decode_envelope(text)
            self.assertEqual(cm.exception.code, "invalid_argument")
        depth32 = b'{"id":1,"a":' + b"[" * 31 + b"]" * 31 + b"}"
        self.assertEqual(decode_envelope(depth32)["id"], 1)
        with self.assertRaises(FerryError):
            decode_envelope(b'{"id":1,"a":' + b"[" * 32 + b"]" * 32 + b"}")
        self.assertEqual(decode_envelope(b' {"id":0, "x":"\\u00e9"} '), {"id": 0, "x": "é"})

    def test_check_request(self):
        check_request({"id": 1, "op": "ping", "args": {}, "timeout_ms": 2 ** 31 - 1})
        for bad in [{"id": 0, "op": "ping"}, {"id": 1, "op": "ping", "args": []},
                    {"id": 1, "op": "ping", "timeout_ms": 0}, {"id": 1, "op": "ping", "timeout_ms": 1.5}]:
            with self.subTest(bad), self.assertRaises(FerryError):
                check_request(bad)

    def test_error_codes(self):
        err = FerryError.from_wire({"code": "no_such_code", "message": "m"})
        self.assertEqual((err.code, err.wire_code, err.message, err.details), ("internal", "no_such_code", "m", {}))
        err = FerryError.from_wire({"code": "unimplemented", "message": "x", "details": {"op": "nope"}})
        self.assertEqual((err.code, err.details), ("unimplemented", {"op": "nope"}))
        self.assertIsInstance(FerryError.from_wire({"code": "protocol_error", "message": "m"}), FerryProtocolError)


class SplitRequestTests(unittest.TestCase):
    """Request bodies larger than one frame (PROTOCOL.md section 5): the frames split_request makes, byte for byte.
    Not in Protocol/vectors: the frames are built here with encode_frame from hand-written envelopes."""

    LIMIT = 65536
    ENVELOPE = {"id": 7, "op": "cache.set", "args": {"key": "k"}}

    def frames(self, body, envelope=None, limit=LIMIT, **kwargs):
        return [encode_frame(e, part) for e, part in
                split_request(envelope or self.ENVELOPE, body, limit, **kwargs)]

    def test_continuation_frames_golden(self):
        body = bytes(range(256)) * 600                                  # 153600 bytes: three frames of 64 KiB
        first_json = b'{"id":7,"op":"cache.set","args":{"key":"k"},"more":true}'
        more_json, last_json = b'{"id":7,"more":true}', b'{"id":7,"more":false}'
        first_room = self.LIMIT - 8 - len(first_json)                   # 65472: the first frame is full
        step = self.LIMIT - 8 - len(last_json)                          # 65507 per continuation part
        self.assertEqual((len(first_json), first_room, step), (56, 65472, 65507))
        expected = [
            bytes.fromhex("00000038" "0000ffc0") + first_json + body[:65472],
            bytes.fromhex("00000014" "0000ffe3") + more_json + body[65472:130979],
            bytes.fromhex("00000015" "0000585d") + last_json + body[130979:],
        ]
        self.assertEqual(len(body) - 130979, 0x585d)
        frames = self.frames(body)
        self.assertEqual([len(f) for f in frames], [65536, 65535, 8 + 21 + 22621])
        self.assertTrue(frames == expected, "continuation frames differ from the golden bytes")
        # the same frames from encode_frame, and their parts put together are the body
        self.assertEqual(frames[1], encode_frame({"id": 7, "more": True}, body[65472:130979]))
        decoded = FrameDecoder(max_frame_bytes=self.LIMIT).feed(b"".join(frames))
        self.assertEqual([e for e, _ in decoded], [dict(self.ENVELOPE, more=True), {"id": 7, "more": True},
                                                   {"id": 7, "more": False}])
        self.assertTrue(b"".join(part for _, part in decoded) == body)

    def test_split_sizes(self):
        one = self.LIMIT - 8 - len(encode_json(self.ENVELOPE))          # the largest body of a single frame
        for size in [0, 1, one, one + 1, 200000, 3 * self.LIMIT, 10 * self.LIMIT + 12345]:
            with self.subTest(size=size):
                body = os.urandom(size)
                pairs = split_request(self.ENVELOPE, body, self.LIMIT)
                frames = [encode_frame(e, p) for e, p in pairs]
                self.assertTrue(b"".join(p for _, p in pairs) == body)
                self.assertTrue(all(len(f) <= self.LIMIT for f in frames), [len(f) for f in frames])
                if size <= one:
                    self.assertEqual(frames, [encode_frame(self.ENVELOPE, body)])   # unchanged, no "more"
                    continue
                self.assertEqual(len(frames[0]), self.LIMIT)            # every part but the last fills its frame
                self.assertTrue(all(len(f) >= self.LIMIT - 1 for f in frames[1:-1]))
                self.assertTrue(all(len(p) > 0 for _, p in pairs))
                self.assertEqual([e.get("more") for e, _ in pairs], [True] * (len(pairs) - 1) + [False])
                self.assertEqual(pairs[0][0], dict(self.ENVELOPE, more=True))
                self.assertTrue(all(e == {"id": 7, "more": e["more"]} for e, _ in pairs[1:]))

    def test_bodies_of_any_buffer_type(self):
        body = bytes(range(256)) * 1000
        spread = bytearray(2 * len(body))
        spread[::2] = body
        expected = self.frames(body)
        for value in [bytearray(body), memoryview(body), memoryview(body)[::1], memoryview(spread)[::2]]:
            with self.subTest(type(value).__name__):
                self.assertTrue(self.frames(value) == expected)   # (assertEqual's diff of 64 KiB frames is slow)

    def test_refused_when_the_envelope_leaves_no_room(self):
        room = MIN_BODY_PART_BYTES
        pad = "x" * (self.LIMIT - 8 - len(encode_json({"id": 7, "op": "ping", "args": {"p": ""}, "more": True}))
                     - room)
        envelope = {"id": 7, "op": "ping", "args": {"p": pad}}
        self.assertEqual(len(self.frames(b"y" * (self.LIMIT * 2), envelope)), 3)   # exactly 1024 bytes of room
        small = self.frames(b"y" * 1000, dict(envelope, args={"p": pad + "zz"}))   # fits one frame: no refusal
        self.assertEqual(len(small), 1)
        with self.assertRaises(FerryError) as cm:
            split_request(dict(envelope, args={"p": pad + "z"}), b"y" * (self.LIMIT * 2), self.LIMIT)
        self.assertEqual(cm.exception.code, "resource_exhausted")
        self.assertIn("no room", cm.exception.message)

    def test_refused_when_the_json_is_too_large(self):
        envelope = {"id": 7, "op": "ping", "args": {"p": "x" * 2000}}
        for body in [b"", b"y" * (self.LIMIT * 2)]:
            with self.assertRaises(FerryError) as cm:
                split_request(envelope, body, self.LIMIT, max_json_bytes=1000)
            self.assertEqual(cm.exception.code, "resource_exhausted")
            self.assertIn("max_json_bytes", cm.exception.message)


class SocketPathTests(unittest.TestCase):

    def test_order(self):
        self.assertEqual(default_socket_path({"FERRY_SOCKET": "/x/s", "XDG_RUNTIME_DIR": "/run/u"}), "/x/s")
        self.assertEqual(default_socket_path({"FERRY_SOCKET": "", "XDG_RUNTIME_DIR": "/run/u"}),
                         "/run/u/ferry/ferryd.sock")
        self.assertEqual(default_socket_path({"XDG_RUNTIME_DIR": ""}), f"/tmp/ferry-{os.getuid()}/ferryd.sock")
        self.assertEqual(default_socket_path({}), f"/tmp/ferry-{os.getuid()}/ferryd.sock")


# ============================================================================================ fake server

class FakeFerryd:
    """A tiny in-process stand-in for ferryd: hello, ping (delay_ms, events, echo), cancel, plus test ops
    ``chunky`` (a streamed body), ``hangup`` (closes the connection) and ``break`` (id-0 protocol_error, close).

    Request bodies may come in parts (continuation frames, section 5): ``frames_seen`` holds ``(id, op or None,
    more, frame size)`` of every frame, ``interleaved`` the ids of frames that came between two parts of another
    request (the Client never does that). ``limits`` is what ``hello`` announces. A ping body over 1 MiB is echoed
    in chunk events.

    It also keeps a small in-memory ``cache.*`` (no expiry, no argument checks but ``limit``), enough to see what
    the Client sends: ``requests_seen`` holds ``(op, args, body)``. ``get_chunk`` is the part size of cache.get
    replies (smaller values come in the final frame alone); ``lie_about_size`` and ``stuck_cursor`` break the
    replies in the ways their names say.

    ``handlers`` maps further op names to ``handler(connection, id, args, body)`` (the connection's ``send`` and
    ``fail`` answer); ``envelopes_seen`` holds every request envelope (after its parts were joined)."""

    def __init__(self, path: str):
        self.path = path
        self.ops_seen = []
        self.requests_seen = []
        self.frames_seen = []
        self.envelopes_seen = []
        self.handlers = {}
        self.interleaved = []
        self.limits = {"handshake_frame_bytes": 65536, "max_frame_bytes": 4194304, "max_json_bytes": 1048576,
                       "max_nesting": 32, "max_in_flight": 256}
        self.cache = {}              # (namespace, key) -> value
        self.get_chunk = 1000
        self.lie_about_size = False
        self.stuck_cursor = False
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen()
        self._listener.settimeout(0.05)
        self._stop = threading.Event()
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def close(self):
        self._stop.set()
        self._listener.close()

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=_FakeConnection(self, conn).run, daemon=True).start()


class _FakeConnection:
    def __init__(self, server: FakeFerryd, conn: socket.socket):
        self.server, self.conn = server, conn
        self.lock = threading.Lock()
        self.in_flight = {}
        self.uploads = {}            # id -> (envelope, [parts]) of a body still arriving
        self.open_upload = None      # the id whose parts are arriving now

    def run(self):
        conn, decoder = self.conn, FrameDecoder(max_frame_bytes=self.server.limits["max_frame_bytes"])
        try:
            while True:
                data = conn.recv(1 << 16)
                if not data:
                    break
                for envelope, body in decoder.feed(data):
                    self.frame(envelope, body)
        except OSError:
            pass
        finally:
            for event in list(self.in_flight.values()):
                event.set()
            conn.close()

    def frame(self, envelope, body):
        rid, server = envelope["id"], self.server
        server.frames_seen.append((rid, envelope.get("op"), envelope.get("more"),
                                   8 + len(encode_json(envelope)) + len(body)))
        if self.open_upload is not None and rid != self.open_upload:
            server.interleaved.append(rid)
        self.open_upload = rid if envelope.get("more") else None
        if "op" not in envelope:                                     # a continuation frame
            if rid not in self.uploads:
                return self.fail(rid, "invalid_argument", "no request with this id is waiting for more of its body")
            self.uploads[rid][1].append(body)
            if envelope["more"]:
                return
            envelope, parts = self.uploads.pop(rid)
            body = b"".join(parts)
        elif envelope.get("more"):
            self.uploads[rid] = (envelope, [body])
            return
        server.envelopes_seen.append(envelope)
        server.ops_seen.append(envelope["op"])
        server.requests_seen.append((envelope["op"], envelope.get("args", {}), body))
        self.handle(rid, envelope["op"], envelope.get("args", {}), body)

    def send(self, envelope, body=b""):
        with self.lock:
            try:
                self.conn.sendall(encode_frame(envelope, body))
            except OSError:
                pass

    def handle(self, rid, op, args, body):
        if op == "hello":
            limits = self.server.limits
            self.send({"id": rid, "final": True, "result": {"version": 1, "server": "fake 0", "limits": limits,
                                                             "operations": ["hello", "ping", "cancel"]}})
        elif op == "ping":
            self.in_flight[rid] = threading.Event()
            threading.Thread(target=self.ping, args=(rid, args, body), daemon=True).start()
        elif op == "cancel":
            event = self.in_flight.pop(args["id"], None)
            if event is not None:
                event.set()
                self.send({"id": args["id"], "final": True, "error": {"code": "cancelled", "message": "cancelled"}})
            self.send({"id": rid, "final": True, "result": {"cancelled": event is not None}})
        elif op == "chunky":
            for offset, part in [(0, b"abc"), (3, b"defg")]:
                self.send({"id": rid, "final": False, "event": "chunk", "data": {"offset": offset}}, part)
            self.send({"id": rid, "final": True, "result": {"size": 9}}, b"hi")
        elif op == "hangup":
            self.conn.shutdown(socket.SHUT_RDWR)
        elif op == "break":
            self.send({"id": 0, "final": True, "error": {"code": "protocol_error", "message": "fake breakage"}})
            self.conn.shutdown(socket.SHUT_RDWR)
        elif op.startswith("cache."):
            self.cache_op(rid, op, args, body)
        elif op in self.server.handlers:
            self.server.handlers[op](self, rid, args, body)
        else:
            self.send({"id": rid, "final": True, "error": {"code": "unimplemented", "message": f"unknown {op}"}})

    def cache_op(self, rid, op, args, body):
        server = self.server
        where = (args.get("namespace", "default"), args.get("key"))
        result = {}
        if op == "cache.set":
            stored = not (args.get("if_absent") and where in server.cache)
            if stored:
                server.cache[where] = body
            result = {"stored": stored}
        elif op == "cache.get":
            if where not in server.cache:
                return self.fail(rid, "not_found", "no such key")
            value, step = server.cache[where], server.get_chunk
            offset = 0
            while len(value) - offset > step:
                self.send({"id": rid, "final": False, "event": "chunk", "data": {"offset": offset}},
                          value[offset:offset + step])
                offset += step
            size = len(value) + (1 if server.lie_about_size else 0)
            return self.send({"id": rid, "final": True, "result": {"size": size, "created_at": 1700000000000}},
                             value[offset:])
        elif op == "cache.delete":
            result = {"deleted": server.cache.pop(where, None) is not None}
        elif op == "cache.touch":
            if where not in server.cache:
                return self.fail(rid, "not_found", "no such key")
            if args["ttl_ms"] is not None:
                result = {"expires_at": 1700000000000 + args["ttl_ms"]}
        elif op == "cache.list":
            limit = args.get("limit", 100)
            if not 1 <= limit <= 1000:
                return self.fail(rid, "invalid_argument", "limit out of range")
            namespace, prefix = args.get("namespace", "default"), args.get("prefix", "")
            keys = sorted((k for ns, k in server.cache if ns == namespace and k.startswith(prefix)),
                          key=lambda k: k.encode())
            if "cursor" in args:
                keys = [k for k in keys if k.encode() > args["cursor"].encode()]
            page = keys[:limit]
            result = {"keys": [{"key": k, "size": len(server.cache[(namespace, k)])} for k in page]}
            if len(keys) > limit:
                result["cursor"] = args["cursor"] if server.stuck_cursor and "cursor" in args else page[-1]
        elif op == "cache.clear":
            doomed = [w for w in server.cache if w[0] == args.get("namespace", "default")]
            for w in doomed:
                del server.cache[w]
            result = {"removed": len(doomed)}
        self.send({"id": rid, "final": True, "result": result})

    def fail(self, rid, code, message):
        self.send({"id": rid, "final": True, "error": {"code": code, "message": message}})

    def ping(self, rid, args, body):
        event = self.in_flight[rid]
        for n in range(args.get("events", 0)):
            self.send({"id": rid, "final": False, "event": "tick", "data": {"n": n}})
        event.wait(args.get("delay_ms", 0) / 1000)
        if self.in_flight.pop(rid, None) is not None:
            step = self.server.limits["max_frame_bytes"] // 2
            for offset in range(0, len(body) - step, step):
                self.send({"id": rid, "final": False, "event": "chunk", "data": {"offset": offset}},
                          body[offset:offset + step])
            last = (max(0, len(body) - 1) // step) * step
            self.send({"id": rid, "final": True, "result": {"pong": True}}, body[last:])


class _FakeServerCase(unittest.TestCase):
    """Each test gets a FakeFerryd on a fresh socket and a connected Client."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ferry-fake-")
        self.server = FakeFerryd(os.path.join(self.dir, "s.sock"))
        self.client = Client(self.server.path, name="fake-test", timeout=10).connect()

    def tearDown(self):
        self.client.close()
        self.server.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class FakeServerTests(_FakeServerCase):

    def test_hello_and_ping(self):
        self.assertEqual((self.client.version, self.client.server), (1, "fake 0"))
        self.assertEqual(self.client.ping(b"\x00\xff"), ({"pong": True}, b"\x00\xff"))

    def test_stream(self):
        items = list(self.client.stream("ping", {"events": 2}))
        self.assertEqual(items, [("event", "tick", {"n": 0}, b""), ("event", "tick", {"n": 1}, b""),
                                 ("final", {"pong": True}, b"")])

    def test_call_joins_chunks(self):
        self.assertEqual(self.client.call("chunky"), ({"size": 9}, b"abcdefghi"))

    def test_cancel(self):
        rid = self.client.send("ping", {"delay_ms": 5000})
        self.assertEqual(self.client.cancel(rid), {"cancelled": True})
        with self.assertRaises(FerryError) as cm:
            self.client.wait(rid)
        self.assertEqual(cm.exception.code, "cancelled")
        self.assertEqual(self.client.cancel(rid), {"cancelled": False})

    def test_error_reply_keeps_connection(self):
        with self.assertRaises(FerryError) as cm:
            self.client.call("nope")
        self.assertEqual(cm.exception.code, "unimplemented")
        self.assertEqual(self.client.ping()[0], {"pong": True})

    def test_many_threads(self):
        errors = []

        def worker(t):
            try:
                for i in range(20):
                    body = f"{t}:{i}".encode()
                    self.assertEqual(self.client.ping(body), ({"pong": True}, body))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(errors, [])

    def test_hangup_fails_every_waiter(self):
        rids = [self.client.send("ping", {"delay_ms": 5000}) for _ in range(3)]
        self.client.send("hangup")
        for rid in rids:
            with self.assertRaises(FerryError) as cm:
                self.client.wait(rid, timeout=5)
            self.assertEqual(cm.exception.code, "unavailable")
            self.assertIn("closed", cm.exception.message)
        with self.assertRaises(FerryError) as cm:
            self.client.ping()
        self.assertEqual(cm.exception.code, "unavailable")

    def test_server_protocol_error_reaches_waiters(self):
        rid = self.client.send("ping", {"delay_ms": 5000})
        self.client.send("break")
        with self.assertRaises(FerryProtocolError) as cm:
            self.client.wait(rid, timeout=5)
        self.assertIn("fake breakage", cm.exception.message)

    def test_close_fails_waiters(self):
        rid = self.client.send("ping", {"delay_ms": 5000})
        threading.Timer(0.1, self.client.close).start()
        with self.assertRaises(FerryError) as cm:
            self.client.wait(rid, timeout=5)
        self.assertEqual(cm.exception.code, "unavailable")

    def test_local_timeout_gives_up_and_cancels(self):
        rid = self.client.send("ping", {"delay_ms": 5000})
        with self.assertRaises(FerryError) as cm:
            self.client.wait(rid, timeout=0.1)
        self.assertEqual(cm.exception.code, "deadline_exceeded")
        for _ in range(100):
            if "cancel" in self.server.ops_seen:
                break
            time.sleep(0.01)
        self.assertIn("cancel", self.server.ops_seen)
        self.assertEqual(self.client.ping()[0], {"pong": True})

    def test_leaving_a_stream_early_cancels(self):
        stream = self.client.stream("ping", {"events": 1, "delay_ms": 5000})
        self.assertEqual(next(stream)[:2], ("event", "tick"))
        stream.close()
        for _ in range(100):
            if "cancel" in self.server.ops_seen:
                break
            time.sleep(0.01)
        self.assertIn("cancel", self.server.ops_seen)

    def test_large_body_sent_in_parts(self):
        body = os.urandom(2 * DEFAULT_MAX_FRAME_BYTES + 3)
        self.assertTrue(self.client.ping(body) == ({"pong": True}, body), "the body came back altered")
        rid = self.server.frames_seen[-1][0]
        frames = [f for f in self.server.frames_seen if f[0] == rid]
        self.assertEqual([(op, more) for _, op, more, _ in frames], [("ping", True), (None, True), (None, False)])
        self.assertEqual([size for *_, size in frames][:2], [DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES - 1])
        self.assertTrue(self.server.requests_seen[-1] == ("ping", {}, body))

    def test_send_and_stream_send_in_parts(self):
        body = os.urandom(DEFAULT_MAX_FRAME_BYTES + 1)
        rid = self.client.send("ping", body=body)
        self.assertTrue(self.client.wait(rid) == ({"pong": True}, body))
        items = list(self.client.stream("ping", {"events": 1}, body))
        self.assertEqual(items[0], ("event", "tick", {"n": 0}, b""))
        self.assertTrue(b"".join(i[-1] for i in items if i[0] == "event" and i[1] == "chunk") + items[-1][2] == body)
        self.assertEqual(len([f for f in self.server.frames_seen if f[1] is None]), 2)

    def test_parts_of_one_request_are_not_interleaved(self):
        errors = []

        def worker(t):
            try:
                for i in range(3):
                    body = bytes([t]) * (DEFAULT_MAX_FRAME_BYTES + 1000 * t) if t % 2 else f"{t}/{i}".encode()
                    result, echoed = self.client.ping(body)
                    if echoed != body:
                        errors.append(f"thread {t} call {i}: body came back altered")
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"thread {t}: {e!r}")

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(self.server.interleaved, [])
        self.assertEqual(len([f for f in self.server.frames_seen if f[1] is None]), 12)

    def test_json_over_max_json_bytes_refused_locally(self):
        frames_before = len(self.server.frames_seen)
        with self.assertRaises(FerryError) as cm:
            self.client.call("ping", {"pad": "x" * (1 << 20)})
        self.assertEqual(cm.exception.code, "resource_exhausted")
        self.assertIn("max_json_bytes", cm.exception.message)
        self.assertEqual(len(self.server.frames_seen), frames_before, "something was sent")
        self.assertEqual(self.client.ping(b"x")[0], {"pong": True})

    def test_envelope_leaving_no_room_refused_locally(self):
        self.server.limits = dict(self.server.limits, max_frame_bytes=65536, max_json_bytes=65536)
        with Client(self.server.path, name="small-frames", timeout=10) as c:
            envelope = {"id": 2, "op": "ping", "args": {"pad": ""}, "more": True}
            pad = "x" * (65536 - 8 - len(encode_json(envelope)) - MIN_BODY_PART_BYTES + 1)   # 1023 bytes of room
            self.assertEqual(c.call("ping", {"pad": pad}, b"y" * 1000), ({"pong": True}, b"y" * 1000))   # one frame
            frames_before = len(self.server.frames_seen)
            with self.assertRaises(FerryError) as cm:
                c.call("ping", {"pad": pad}, b"y" * 70000)
            self.assertEqual(cm.exception.code, "resource_exhausted")
            self.assertIn("no room", cm.exception.message)
            self.assertEqual(len(self.server.frames_seen), frames_before, "something was sent")
            body = os.urandom(300000)
            self.assertTrue(c.call("ping", {"pad": pad[:-1]}, body) == ({"pong": True}, body))   # 1024: sent in parts

    def test_wait_unknown_id(self):
        with self.assertRaises(FerryError) as cm:
            self.client.wait(12345)
        self.assertEqual(cm.exception.code, "not_found")

    def test_connect_failure(self):
        with self.assertRaises(FerryError) as cm:
            Client(os.path.join(self.dir, "missing.sock")).connect()
        self.assertEqual(cm.exception.code, "unavailable")
        self.assertIn("missing.sock", cm.exception.message)


class FakeCacheTests(_FakeServerCase):
    """What the cache_* methods send and how they read the replies (the fake checks no arguments)."""

    def sent(self, op):
        """(args, body) of every request of ``op`` the fake received."""
        return [(args, body) for o, args, body in self.server.requests_seen if o == op]

    def assertFerryError(self, code, fn, *args, **kwargs) -> FerryError:
        with self.assertRaises(FerryError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.code, code, f"expected {code}, got {cm.exception}")
        return cm.exception

    def test_set_and_get_send_only_given_args(self):
        self.assertIs(self.client.cache_set("k", b"\x00v"), True)
        self.assertEqual(self.sent("cache.set"), [({"key": "k"}, b"\x00v")])
        entry = self.client.cache_get("k")
        self.assertEqual(entry, CacheEntry(b"\x00v", 2, 1700000000000, None))
        self.assertEqual((entry.value, entry.size, entry.created_at, entry.expires_at),
                         (b"\x00v", 2, 1700000000000, None))
        self.assertEqual(self.sent("cache.get"), [({"key": "k"}, b"")])

    def test_set_with_every_arg(self):
        self.assertIs(self.client.cache_set("k", bytearray(b"x"), namespace="ns", ttl_ms=5, if_absent=True), True)
        self.assertIs(self.client.cache_set("k", memoryview(b"y"), namespace="ns", ttl_ms=5, if_absent=True), False)
        self.assertEqual(self.sent("cache.set"),
                         [({"key": "k", "namespace": "ns", "ttl_ms": 5, "if_absent": True}, b"x"),
                          ({"key": "k", "namespace": "ns", "ttl_ms": 5, "if_absent": True}, b"y")])
        self.assertEqual(self.client.cache_get("k", namespace="ns").value, b"x")

    def test_value_must_be_bytes(self):
        for value in ["text", 5, None, [1, 2]]:
            with self.subTest(value=value), self.assertRaises(TypeError):
                self.client.cache_set("k", value)
        self.assertEqual(self.sent("cache.set"), [])
        self.assertEqual(self.client.ping()[0], {"pong": True})

    def test_other_args_are_left_to_the_server(self):
        self.assertFerryError("not_found", self.client.cache_get, 123)
        self.client.cache_set("", b"", namespace="bad ns", ttl_ms=0, if_absent="yes")
        self.assertEqual(self.sent("cache.get"), [({"key": 123}, b"")])
        self.assertEqual(self.sent("cache.set"),
                         [({"key": "", "namespace": "bad ns", "ttl_ms": 0, "if_absent": "yes"}, b"")])

    def test_large_value_sent_in_parts(self):
        value = os.urandom(2 * DEFAULT_MAX_FRAME_BYTES + 12345)
        self.assertIs(self.client.cache_set("k", value, namespace="ns", ttl_ms=5), True)
        self.assertTrue(self.sent("cache.set") == [({"key": "k", "namespace": "ns", "ttl_ms": 5}, value)])
        self.assertEqual([(op, more) for _, op, more, _ in self.server.frames_seen[-3:]],
                         [("cache.set", True), (None, True), (None, False)])
        self.server.get_chunk = 1 << 20
        self.assertTrue(self.client.cache_get("k", namespace="ns").value == value)

    def test_key_too_long_for_an_envelope_refused_locally(self):
        err = self.assertFerryError("resource_exhausted", self.client.cache_set, "k" * (1 << 20), b"z")
        self.assertIn("max_json_bytes", err.message)
        self.assertEqual(self.sent("cache.set"), [])
        self.assertIs(self.client.cache_set("k", b"z"), True)

    def test_get_joins_chunks(self):
        value = bytes(range(256)) * 10   # 2560 bytes: chunks at 0 and 1000, 560 in the final frame
        self.client.cache_set("big", value)
        entry = self.client.cache_get("big")
        self.assertEqual((entry.value, entry.size), (value, 2560))

    def test_get_absent(self):
        self.assertFerryError("not_found", self.client.cache_get, "missing")
        self.assertIsNone(self.client.cache_get_or_none("missing"))
        self.client.cache_set("here", b"1")
        self.assertEqual(self.client.cache_get_or_none("here").value, b"1")

    def test_get_size_mismatch(self):
        self.client.cache_set("k", b"abc")
        self.server.lie_about_size = True
        self.assertFerryError("internal", self.client.cache_get, "k")
        self.assertFerryError("internal", self.client.cache_get_or_none, "k")   # only not_found becomes None

    def test_touch(self):
        self.client.cache_set("k", b"v")
        self.assertIsNone(self.client.cache_touch("k", None))
        self.assertEqual(self.client.cache_touch("k", 10, namespace="default"), 1700000000010)
        self.assertEqual([a for a, _ in self.sent("cache.touch")],
                         [{"key": "k", "ttl_ms": None}, {"key": "k", "namespace": "default", "ttl_ms": 10}])
        self.assertFerryError("not_found", self.client.cache_touch, "missing", 10)

    def test_touch_sends_json_null(self):
        frame = None
        original = self.client._write

        def spy(frames):   # the request's frames as (envelope, encoded JSON, body part)
            nonlocal frame
            frame = b"".join(data for _, data, _ in frames)
            original(frames)

        self.client._write = spy
        self.assertFerryError("not_found", self.client.cache_touch, "k", None)
        self.assertIn(b'"args":{"key":"k","ttl_ms":null}', frame)

    def test_delete(self):
        self.client.cache_set("k", b"v", namespace="a")
        self.assertIs(self.client.cache_delete("k"), False)            # other namespace
        self.assertIs(self.client.cache_delete("k", namespace="a"), True)
        self.assertIs(self.client.cache_delete("k", namespace="a"), False)
        self.assertEqual([a for a, _ in self.sent("cache.delete")],
                         [{"key": "k"}, {"key": "k", "namespace": "a"}, {"key": "k", "namespace": "a"}])

    def test_list_follows_the_cursor(self):
        keys = [f"p/{i:03d}" for i in range(250)] + ["p/Z", "p/é", "p/\U0001f600", "q/other"]
        for key in reversed(keys):
            self.client.cache_set(key, b"x" * len(key), namespace="ns")
        items = list(self.client.cache_list(namespace="ns", prefix="p/", limit=100))
        expected = sorted((k for k in keys if k.startswith("p/")), key=lambda k: k.encode())
        self.assertEqual([i.key for i in items], expected)
        self.assertEqual(items[0], CacheKey("p/000", 5, None))
        requests = [a for a, _ in self.sent("cache.list")]
        self.assertEqual(len(requests), 3)
        self.assertEqual(requests[0], {"namespace": "ns", "prefix": "p/", "limit": 100})
        self.assertEqual(requests[1], {"namespace": "ns", "prefix": "p/", "limit": 100, "cursor": expected[99]})
        self.assertEqual(requests[2]["cursor"], expected[199])

    def test_list_pages_lazily_but_first_page_at_once(self):
        for i in range(5):
            self.client.cache_set(f"k{i}", b"")
        it = self.client.cache_list(limit=2)
        self.assertEqual(len(self.sent("cache.list")), 1)       # the first page before the first next()
        self.assertEqual([next(it).key, next(it).key], ["k0", "k1"])
        self.assertEqual(len(self.sent("cache.list")), 1)
        self.assertEqual(next(it).key, "k2")
        self.assertEqual(len(self.sent("cache.list")), 2)
        self.assertEqual([i.key for i in it], ["k3", "k4"])
        self.assertEqual([a for a, _ in self.sent("cache.list")][0], {"limit": 2})

    def test_list_bad_args_raise_at_call(self):
        self.assertFerryError("invalid_argument", self.client.cache_list, limit=0)

    def test_list_empty_and_one_page(self):
        self.assertEqual(list(self.client.cache_list()), [])
        self.assertEqual(self.sent("cache.list"), [({}, b"")])
        self.client.cache_set("a", b"1")
        self.assertEqual(self.client.cache_list_page(), ([CacheKey("a", 1, None)], None))

    def test_list_stuck_cursor(self):
        for i in range(5):
            self.client.cache_set(f"k{i}", b"")
        self.server.stuck_cursor = True
        with self.assertRaises(FerryError) as cm:
            list(self.client.cache_list(limit=2))
        self.assertEqual(cm.exception.code, "internal")

    def test_clear(self):
        for i in range(3):
            self.client.cache_set(f"k{i}", b"", namespace="ns")
        self.client.cache_set("k", b"")
        self.assertEqual(self.client.cache_clear(namespace="ns"), 3)
        self.assertEqual(self.client.cache_clear(namespace="ns"), 0)
        self.assertEqual(self.client.cache_clear(), 1)
        self.assertEqual([a for a, _ in self.sent("cache.clear")], [{"namespace": "ns"}, {"namespace": "ns"}, {}])


# ============================================================================================ real daemon

class RawConnection:
    """A bare socket to ferryd for sending arbitrary bytes and reading the frames that come back."""

    def __init__(self, path: str, timeout: float = 5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.decoder = FrameDecoder(max_frame_bytes=DEFAULT_MAX_FRAME_BYTES)
        self.frames = []

    def close(self):
        self.sock.close()

    def send(self, data: bytes):
        self.sock.sendall(data)

    def request(self, envelope: dict, body: bytes = b""):
        self.send(encode_frame(envelope, body))

    def read_frame(self):
        """The next frame; fails the test's expectations with AssertionError on EOF or timeout."""
        while not self.frames:
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                raise AssertionError("no frame from ferryd within the timeout") from None
            if not data:
                raise AssertionError("ferryd closed the connection instead of answering")
            self.frames += self.decoder.feed(data)
        return self.frames.pop(0)

    def hello(self, rid: int = 1):
        self.request({"id": rid, "op": "hello", "args": {"versions": [1], "client": "raw-test"}})
        envelope, _ = self.read_frame()
        assert envelope.get("id") == rid and "result" in envelope, f"hello failed: {envelope}"

    def is_closed_by_peer(self) -> bool:
        """True once ferryd closed the connection: recv returns b"" (a reset counts as closed too, since Linux
        reports ECONNRESET when the peer closes with our bytes still unread)."""
        try:
            return self.sock.recv(1 << 16) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def ferryd_binary() -> str:
    """$FERRYD; the daemon tests are skipped when it is unset and fail when it names no executable."""
    binary = os.environ.get("FERRYD")
    if not binary:
        raise unittest.SkipTest("FERRYD is not set; set FERRYD=/path/to/ferryd to run the daemon tests")
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise AssertionError(f"FERRYD={binary} is not an executable file")
    return binary


class FerrydProcess:
    """One ferryd run: ``--socket <dir>/<socket_name> --cache-dir <cache_dir>`` plus ``extra_args``, output appended
    to ``<dir>/ferryd.log``. ``start`` returns once the socket accepts connections."""

    def __init__(self, binary: str, dir: str, cache_dir: str = None, socket_name: str = "s.sock", extra_args=()):
        self.binary, self.dir = binary, dir
        self.path = os.path.join(dir, socket_name)
        self.cache_dir = cache_dir or os.path.join(dir, "cache")
        self.log_path = os.path.join(dir, "ferryd.log")
        self.extra_args = list(extra_args)
        self.proc = None

    def start(self, seconds: float = 10.0) -> "FerrydProcess":
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, "--socket", self.path, "--cache-dir", self.cache_dir, "--log-level", "warn",
                 *self.extra_args], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_for_socket(seconds)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_socket(self, seconds: float):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"ferryd exited with status {self.proc.returncode}: {self.log_tail()}")
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                try:
                    s.connect(self.path)
                    return
                except OSError:
                    time.sleep(0.05)
        raise AssertionError(f"ferryd did not accept connections on {self.path} within {seconds} s: "
                             f"{self.log_tail()}")

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace") or "(no output)"
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 15.0):
        """SIGTERM, then SIGKILL if it is still running after ``timeout`` s. Returns the exit status, or None when
        it had to be killed (or never started)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
                return None
        return proc.returncode


class _DaemonCase(unittest.TestCase):
    """A ferryd from $FERRYD shared by the tests of a class, in a temporary directory; each test gets a Client."""

    proc = None
    daemon = None

    @classmethod
    def setUpClass(cls):
        binary = ferryd_binary()
        cls.dir = tempfile.mkdtemp(prefix="ferry-it-")
        cls.daemon = FerrydProcess(binary, cls.dir)
        cls.path = cls.daemon.path
        try:
            cls.daemon.start()
        except BaseException:
            shutil.rmtree(cls.dir, ignore_errors=True)
            raise
        cls.proc = cls.daemon.proc

    @classmethod
    def tearDownClass(cls):
        if cls.daemon is not None:
            cls.daemon.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.client = Client(self.path, name="python-tests", timeout=20).connect()

    def tearDown(self):
        self.client.close()

    def raw(self) -> RawConnection:
        conn = RawConnection(self.path)
        self.addCleanup(conn.close)
        return conn

    def assertFerryError(self, code, fn, *args, **kwargs) -> FerryError:
        with self.assertRaises(FerryError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.code, code, f"expected {code}, got {cm.exception}")
        return cm.exception


class DaemonTests(_DaemonCase):
    """Against a real ferryd: FERRYD=/path/to/ferryd."""

    # ----- handshake

    def test_hello_result(self):
        c = self.client
        self.assertEqual(c.version, 1)
        self.assertIsInstance(c.server, str)
        framing = {"handshake_frame_bytes": 65536, "max_frame_bytes": 4194304, "max_json_bytes": 1048576,
                   "max_nesting": 32, "max_in_flight": 256}
        # exactly these framing limits; others may be announced too (max_value_bytes: see CacheDaemonTests)
        self.assertEqual({k: v for k, v in c.limits.items() if k in framing}, framing)
        for op in ["hello", "ping", "describe", "stats", "cancel"]:
            self.assertIn(op, c.operations)

    def test_second_hello_is_failed_precondition(self):
        self.assertFerryError("failed_precondition", self.client.call, "hello", {"versions": [1]})
        self.assertEqual(self.client.ping()[0], {"pong": True})

    def test_op_before_hello_is_failed_precondition(self):
        conn = self.raw()
        conn.request({"id": 1, "op": "ping"})
        envelope, _ = conn.read_frame()
        self.assertEqual((envelope["id"], envelope["final"], envelope["error"]["code"]),
                         (1, True, "failed_precondition"))
        conn.hello(rid=2)

    def test_no_common_version(self):
        conn = self.raw()
        conn.request({"id": 1, "op": "hello", "args": {"versions": [99]}})
        envelope, _ = conn.read_frame()
        self.assertEqual(envelope["error"]["code"], "unimplemented")
        self.assertEqual(envelope["error"].get("details"), {"server_versions": [1]})
        conn.hello(rid=2)   # the connection stays open and hello may be sent again

    def test_handshake_frame_limit(self):
        conn = self.raw()
        conn.send(struct.pack(">II", 20, HANDSHAKE_LIMIT))   # 65564 bytes announced before hello: refused by header
        envelope, _ = conn.read_frame()
        self.assertEqual((envelope["id"], envelope["error"]["code"]), (0, "protocol_error"))
        self.assertTrue(conn.is_closed_by_peer(), "ferryd kept the connection open after a protocol error")

    def test_frame_limit_after_hello(self):
        conn = self.raw()
        conn.hello()
        conn.send(struct.pack(">II", 20, DEFAULT_MAX_FRAME_BYTES))   # header only: must be refused at once
        envelope, _ = conn.read_frame()
        self.assertEqual((envelope["id"], envelope["error"]["code"]), (0, "protocol_error"))
        self.assertTrue(conn.is_closed_by_peer(), "ferryd kept the connection open after a protocol error")

    # ----- ping

    def test_ping_round_trip(self):
        self.assertEqual(self.client.ping(), ({"pong": True}, b""))

    def test_body_echo_all_byte_values(self):
        body = bytes(range(256)) * 4
        self.assertEqual(self.client.ping(body), ({"pong": True}, body))

    def test_body_echo_one_mebibyte(self):
        body = os.urandom(1 << 20)
        result, echoed = self.client.call("ping", body=body)
        self.assertEqual(result, {"pong": True})
        self.assertEqual(len(echoed), len(body))
        self.assertTrue(echoed == body, "the 1 MiB body came back altered")

    def test_body_echo_six_mebibytes_in_parts(self):
        """A body larger than a frame goes up in continuation frames and comes back in chunk events."""
        body = os.urandom(6 * (1 << 20))
        result, echoed = self.client.call("ping", body=body)
        # a reply in chunks carries the total size in its result (section 5)
        self.assertEqual((result["pong"], result.get("size", len(echoed)), len(echoed)), (True, len(body), len(body)))
        self.assertTrue(echoed == body, "the 6 MiB body came back altered")
        self.assertEqual(self.client.ping(b"after")[1], b"after")

    def test_ping_bad_args(self):
        for args in [{"delay_ms": -1}, {"delay_ms": 60001}, {"events": 1001}, {"delay_ms": "5"},
                     {"delay_ms": 1.5}]:
            with self.subTest(args):
                self.assertFerryError("invalid_argument", self.client.call, "ping", args)

    def test_deadline_exceeded(self):
        self.assertFerryError("deadline_exceeded", self.client.call, "ping", {"delay_ms": 300}, timeout_ms=50)

    def test_deadline_stops_the_request_when_it_elapses(self):
        start = time.monotonic()
        self.assertFerryError("deadline_exceeded", self.client.call, "ping", {"delay_ms": 3000}, timeout_ms=50)
        self.assertLess(time.monotonic() - start, 2.0, "deadline_exceeded came only after the work finished")

    def test_stream_ticks(self):
        items = list(self.client.stream("ping", {"events": 3}))
        self.assertEqual(items, [("event", "tick", {"n": 0}, b""), ("event", "tick", {"n": 1}, b""),
                                 ("event", "tick", {"n": 2}, b""), ("final", {"pong": True}, b"")])

    # ----- cancel

    def test_cancel_in_flight(self):
        rid = self.client.send("ping", {"delay_ms": 5000})
        start = time.monotonic()
        self.assertEqual(self.client.cancel(rid), {"cancelled": True})
        self.assertFerryError("cancelled", self.client.wait, rid)
        self.assertLess(time.monotonic() - start, 4.0)

    def test_cancel_unknown(self):
        self.assertEqual(self.client.cancel(987654), {"cancelled": False})

    def test_cancelled_reply_comes_before_cancel_reply(self):
        conn = self.raw()
        conn.hello()
        conn.request({"id": 2, "op": "ping", "args": {"delay_ms": 5000}})
        conn.request({"id": 3, "op": "cancel", "args": {"id": 2}})
        first, _ = conn.read_frame()
        second, _ = conn.read_frame()
        self.assertEqual((first["id"], first["final"], first["error"]["code"]), (2, True, "cancelled"))
        self.assertEqual((second["id"], second["final"], second["result"]), (3, True, {"cancelled": True}))

    def test_duplicate_in_flight_id_is_protocol_error(self):
        conn = self.raw()
        conn.hello()
        conn.request({"id": 5, "op": "ping", "args": {"delay_ms": 5000}})
        conn.request({"id": 5, "op": "ping"})
        envelope, _ = conn.read_frame()
        while envelope.get("error", {}).get("code") == "cancelled":   # the first ping, cancelled by the close
            envelope, _ = conn.read_frame()
        self.assertEqual((envelope["id"], envelope["error"]["code"]), (5, "protocol_error"))
        self.assertTrue(conn.is_closed_by_peer(), "ferryd kept the connection open after a protocol error")

    def test_max_in_flight(self):
        limit = self.client.limits["max_in_flight"]
        with Client(self.path, name="in-flight-test", timeout=20) as c:
            for _ in range(limit):
                c.send("ping", {"delay_ms": 10000})
            self.assertFerryError("resource_exhausted", c.call, "ping", {"delay_ms": 10000})

    # ----- other operations

    def test_unknown_op(self):
        err = self.assertFerryError("unimplemented", self.client.call, "no.such.op")
        self.assertTrue(err.message)
        self.assertEqual(self.client.ping()[0], {"pong": True})

    def test_describe(self):
        d = self.client.describe()
        self.assertEqual(d["protocol"], 1)
        names = [op["name"] for op in d["operations"]]
        for op in ["hello", "ping", "describe", "stats", "cancel"]:
            self.assertIn(op, names)
        ping = next(op for op in d["operations"] if op["name"] == "ping")
        self.assertEqual(sorted(a["name"] for a in ping["args"]), ["delay_ms", "events"])
        for op in d["operations"]:
            self.assertIn(op.get("body"), DESCRIBE_BODY_KINDS, op["name"])

    def test_stats_counts_requests(self):
        before = self.client.stats()
        for _ in range(3):
            self.client.ping()
        self.assertFerryError("unimplemented", self.client.call, "no.such.op.for.stats")
        after = self.client.stats()
        self.assertIsInstance(after["pid"], int)
        self.assertEqual(after["pid"], self.proc.pid)
        for key in ["version", "uptime_ms", "connections", "requests", "bytes", "ops", "errors"]:
            self.assertIn(key, after)
        self.assertGreaterEqual(after["requests"]["total"] - before["requests"]["total"], 5)
        self.assertGreaterEqual(after["ops"]["ping"]["requests"] - before["ops"]["ping"]["requests"], 3)
        self.assertGreaterEqual(after["errors"].get("unimplemented", 0) - before["errors"].get("unimplemented", 0), 1)
        self.assertNotIn("no.such.op.for.stats", after["ops"])
        self.assertGreaterEqual(after["connections"]["open"], 1)
        self.assertGreater(after["bytes"]["in"], before["bytes"]["in"])

    def test_concurrent_threads_one_client(self):
        errors, barrier = [], threading.Barrier(20)

        def worker(t):
            try:
                barrier.wait(10)
                for i in range(10):
                    body = f"thread {t} call {i}".encode()
                    self.assertEqual(self.client.ping(body), ({"pong": True}, body))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"thread {t}: {e!r}")

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])

    def test_close_fails_waiters(self):
        rid = self.client.send("ping", {"delay_ms": 5000})
        threading.Timer(0.1, self.client.close).start()
        self.assertFerryError("unavailable", self.client.wait, rid, timeout=5)

    # ----- invalid vectors over the wire

    def test_invalid_vectors_over_the_wire(self):
        for v in VECTORS["invalid"]:
            with self.subTest(v["name"]):
                frame = bytes.fromhex(v["hex"])
                conn = self.raw()
                conn.hello()
                conn.send(frame)
                envelope, _ = conn.read_frame()
                self.assertTrue(envelope.get("final"), envelope)
                self.assertEqual(envelope.get("error", {}).get("code"), v["error"], envelope)
                self.assertEqual(envelope["id"], expected_reply_id(frame), "reply names the wrong id")
                if v["error"] == "protocol_error":
                    self.assertTrue(conn.is_closed_by_peer(), "ferryd kept the connection open after a "
                                                              "protocol error")
                else:
                    conn.request({"id": 2, "op": "ping"})
                    self.assertEqual(conn.read_frame()[0].get("result"), {"pong": True})


MIB = 1 << 20
DEFAULT_MAX_VALUE_BYTES = 16 * MIB
MAX_TTL_MS = 315360000000


def now_ms() -> int:
    return int(time.time() * 1000)


def byte_order(keys):
    return sorted(keys, key=lambda k: k.encode("utf-8"))


class CacheDaemonTests(_DaemonCase):
    """cache.* (PROTOCOL.md section 6) against a real ferryd: FERRYD=/path/to/ferryd. Each test works in a
    namespace of its own (``self.ns``) unless it is about the default namespace."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with Client(cls.path, name="cache-probe", timeout=20) as c:
            names = [op["name"] for op in c.describe()["operations"]]
        if "cache.get" not in names:
            cls.tearDownClass()
            raise AssertionError(f"FERRYD does not implement cache.* (describe lists {names})")

    def setUp(self):
        super().setUp()
        self.ns = "t." + self._testMethodName

    def other_daemon(self, cache_dir: str = None, extra_args=()) -> FerrydProcess:
        """A second ferryd in a temporary directory of its own (removed after the test), not yet started."""
        d = tempfile.mkdtemp(prefix="ferry-it-cache-")
        self.addCleanup(shutil.rmtree, d, True)
        daemon = FerrydProcess(ferryd_binary(), d, cache_dir=cache_dir, extra_args=extra_args)
        self.addCleanup(daemon.stop)
        return daemon

    def assertCreatedNow(self, entry: CacheEntry, before: int, after: int):
        self.assertIsInstance(entry.created_at, int)
        self.assertTrue(before - 2000 <= entry.created_at <= after + 2000,
                        f"created_at {entry.created_at} is not between {before} and {after} (ms since the epoch)")

    # ----- what the server announces

    def test_hello_announces_max_value_bytes(self):
        self.assertEqual(self.client.limits.get("max_value_bytes"), DEFAULT_MAX_VALUE_BYTES, self.client.limits)

    def test_describe_lists_the_cache_operations(self):
        ops = {op["name"]: op for op in self.client.describe()["operations"]}
        expected_args = {
            "cache.set": {"key": True, "namespace": False, "ttl_ms": False, "if_absent": False},
            "cache.get": {"key": True, "namespace": False},
            "cache.delete": {"key": True, "namespace": False},
            "cache.touch": {"key": True, "namespace": False, "ttl_ms": True},
            "cache.list": {"namespace": False, "prefix": False, "limit": False, "cursor": False},
            "cache.clear": {"namespace": False},
        }
        expected_results = {
            "cache.set": {"stored"}, "cache.get": {"size", "created_at", "expires_at"}, "cache.delete": {"deleted"},
            "cache.touch": {"expires_at"}, "cache.list": {"keys", "cursor"}, "cache.clear": {"removed"},
        }
        # the spec's fields must all be there; more may be (section 9: new fields are optional), but a new
        # argument must not be required, or clients written from the spec would break
        for name, args in expected_args.items():
            with self.subTest(name):
                self.assertIn(name, ops)
                self.assertIn(name, self.client.operations)
                described = {a["name"]: a["required"] for a in ops[name]["args"]}
                self.assertEqual({a: described.get(a) for a in args}, args)
                self.assertEqual([a for a in described if a not in args and described[a]], [],
                                 "required arguments the spec does not have")
                self.assertLessEqual(expected_results[name], {r["name"] for r in ops[name]["result"]})

    # ----- set / get

    def test_round_trip_all_byte_values(self):
        value = bytes(range(256))
        before = now_ms()
        self.assertIs(self.client.cache_set("all bytes \u00e9\U0001f600", value, namespace=self.ns), True)
        entry = self.client.cache_get("all bytes \u00e9\U0001f600", namespace=self.ns)
        self.assertEqual((entry.value, entry.size, entry.expires_at), (value, 256, None))
        self.assertCreatedNow(entry, before, now_ms())
        self.assertEqual(self.client.cache_get("all bytes \u00e9\U0001f600", namespace=self.ns).value, value)

    def test_round_trip_one_mebibyte(self):
        value = os.urandom(MIB)
        self.assertIs(self.client.cache_set("big", value, namespace=self.ns), True)
        entry = self.client.cache_get("big", namespace=self.ns)
        self.assertEqual(entry.size, MIB)
        self.assertTrue(entry.value == value, "the 1 MiB value came back altered")

    def test_empty_value(self):
        self.assertIs(self.client.cache_set("empty", b"", namespace=self.ns), True)
        self.assertEqual(self.client.cache_get("empty", namespace=self.ns)[:2], (b"", 0))

    def test_value_of_the_largest_request_frame_comes_back_in_chunks(self):
        """The biggest value one cache.set frame can carry makes a cache.get reply over max_frame_bytes (its JSON,
        with ``final``, ``size`` and ``created_at``, is some 30 bytes longer than the request's), so it must come
        as chunk events (section 5) and be put together by the client. Key and namespace are kept short on purpose:
        the request's JSON must stay shorter than the reply's."""
        limit, key = self.client.limits["max_frame_bytes"], "\u00b6"   # default namespace, a key no one else uses
        try:
            # this is the Client's second request (hello was the first), so its id has one digit
            overhead = 8 + len(encode_json({"id": 2, "op": "cache.set", "args": {"key": key}}))
            value = os.urandom(limit - overhead)
            self.assertIs(self.client.cache_set(key, value), True)
            items = list(self.client.stream("cache.get", {"key": key}))
            chunks = [i for i in items if i[0] == "event" and i[1] == "chunk"]
            self.assertTrue(chunks, "a reply over max_frame_bytes came without chunk events")
            offset = 0
            for _, _, data, body in chunks:
                self.assertEqual(data.get("offset"), offset)
                offset += len(body)
            kind, result, last = items[-1]
            self.assertEqual((kind, result["size"]), ("final", len(value)))
            self.assertTrue(b"".join(c[3] for c in chunks) + last == value, "the chunked value came back altered")
            self.assertTrue(self.client.cache_get(key).value == value)
        finally:
            self.client.cache_delete(key)

    def test_ten_mebibyte_value_in_parts(self):
        """With the default limits a 10 MiB value is larger than a frame: it goes up in continuation frames
        (section 5) and comes back in chunk events."""
        value = os.urandom(10 * MIB)
        self.assertGreater(len(value), self.client.limits["max_frame_bytes"])
        self.assertIs(self.client.cache_set("ten", value, namespace=self.ns), True)
        entry = self.client.cache_get("ten", namespace=self.ns)
        self.assertEqual(entry.size, 10 * MIB)
        self.assertTrue(entry.value == value, "the 10 MiB value came back altered")
        self.assertEqual([k.size for k in self.client.cache_list(namespace=self.ns)], [10 * MIB])

    def test_value_over_max_value_bytes_in_parts(self):
        """Default frames: max_value_bytes + 1 in parts is refused by the server (nothing stored, an old value
        kept) and the connection goes on; exactly max_value_bytes is stored."""
        limit = self.client.limits["max_value_bytes"]
        self.assertFerryError("resource_exhausted", self.client.cache_set, "k", b"\x01" * (limit + 1),
                              namespace=self.ns)
        self.assertFerryError("not_found", self.client.cache_get, "k", namespace=self.ns)
        self.assertEqual(self.client.ping(b"still there"), ({"pong": True}, b"still there"))
        self.client.cache_set("k", b"old", namespace=self.ns)
        self.assertFerryError("resource_exhausted", self.client.cache_set, "k", b"\x02" * (limit + 1),
                              namespace=self.ns)
        self.assertEqual(self.client.cache_get("k", namespace=self.ns).value, b"old",
                         "a refused set replaced the old value")
        value = os.urandom(limit)
        self.assertIs(self.client.cache_set("k", value, namespace=self.ns), True)
        self.assertTrue(self.client.cache_get("k", namespace=self.ns).value == value,
                        "the 16 MiB value came back altered")

    def test_large_values_from_many_threads_on_one_client(self):
        """The Client writes one request's parts back to back, so however many threads upload at once, the
        connection never has more bodies arriving than the server allows (4)."""
        errors = []
        values = {t: os.urandom(5 * MIB + t) for t in range(8)}

        def worker(t):
            try:
                self.client.cache_set(f"v{t}", values[t], namespace=self.ns)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"worker {t}: {e!r}")

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        for t, value in values.items():
            self.assertTrue(self.client.cache_get(f"v{t}", namespace=self.ns).value == value, f"v{t} altered")

    def test_set_replaces_value_and_ttl(self):
        self.client.cache_set("k", b"one", namespace=self.ns, ttl_ms=60000)
        self.assertIsNotNone(self.client.cache_get("k", namespace=self.ns).expires_at)
        self.assertIs(self.client.cache_set("k", b"two", namespace=self.ns), True)
        entry = self.client.cache_get("k", namespace=self.ns)
        self.assertEqual((entry.value, entry.expires_at), (b"two", None))

    def test_get_absent(self):
        err = self.assertFerryError("not_found", self.client.cache_get, "never set", namespace=self.ns)
        self.assertTrue(err.message)
        self.assertIsNone(self.client.cache_get_or_none("never set", namespace=self.ns))
        self.assertEqual(self.client.ping()[0], {"pong": True})

    def test_if_absent(self):
        c, ns = self.client, self.ns
        self.assertIs(c.cache_set("k", b"first", namespace=ns, if_absent=True), True)
        self.assertIs(c.cache_set("k", b"second", namespace=ns, if_absent=True), False)
        self.assertEqual(c.cache_get("k", namespace=ns).value, b"first")
        self.assertIs(c.cache_set("k", b"third", namespace=ns), True)          # without if_absent: replaced
        self.assertEqual(c.cache_get("k", namespace=ns).value, b"third")
        self.assertIs(c.cache_delete("k", namespace=ns), True)
        self.assertIs(c.cache_set("k", b"fourth", namespace=ns, if_absent=True), True)
        self.assertEqual(c.cache_get("k", namespace=ns).value, b"fourth")
        # only a live entry blocks if_absent
        self.assertIs(c.cache_set("t", b"short", namespace=ns, ttl_ms=200), True)
        self.assertIs(c.cache_set("t", b"blocked", namespace=ns, if_absent=True), False)
        time.sleep(0.4)
        self.assertIs(c.cache_set("t", b"after expiry", namespace=ns, if_absent=True), True)
        entry = c.cache_get("t", namespace=ns)
        self.assertEqual((entry.value, entry.expires_at), (b"after expiry", None))

    # ----- expiry and touch

    def test_ttl_expiry(self):
        c, ns = self.client, self.ns
        before = now_ms()
        self.assertIs(c.cache_set("k", b"soon gone", namespace=ns, ttl_ms=200), True)
        entry = c.cache_get("k", namespace=ns)
        self.assertEqual(entry.value, b"soon gone")
        self.assertIsInstance(entry.expires_at, int)
        self.assertTrue(before + 200 <= entry.expires_at <= now_ms() + 200 + 50,
                        f"expires_at {entry.expires_at} is not about 200 ms after the set ({before})")
        self.assertTrue(200 <= entry.expires_at - entry.created_at <= 250, entry)
        self.assertEqual([k.key for k in c.cache_list(namespace=ns)], ["k"])
        time.sleep(0.4)
        self.assertFerryError("not_found", c.cache_get, "k", namespace=ns)
        self.assertEqual(list(c.cache_list(namespace=ns)), [], "an expired entry was listed")
        self.assertFerryError("not_found", c.cache_touch, "k", 60000, namespace=ns)
        self.assertFerryError("not_found", c.cache_get, "k", namespace=ns)

    def test_long_ttl(self):
        before = now_ms()
        self.client.cache_set("k", b"v", namespace=self.ns, ttl_ms=MAX_TTL_MS)
        expires_at = self.client.cache_get("k", namespace=self.ns).expires_at
        self.assertTrue(before + MAX_TTL_MS <= expires_at <= now_ms() + MAX_TTL_MS + 50, expires_at)

    def test_touch(self):
        c, ns = self.client, self.ns
        c.cache_set("k", b"v", namespace=ns)
        self.assertIsNone(c.cache_get("k", namespace=ns).expires_at)
        before = now_ms()
        expires_at = c.cache_touch("k", 60000, namespace=ns)
        self.assertIsInstance(expires_at, int)
        self.assertTrue(before + 60000 <= expires_at <= now_ms() + 60000 + 50, expires_at)
        self.assertEqual(c.cache_get("k", namespace=ns).expires_at, expires_at)
        self.assertEqual([k.expires_at for k in c.cache_list(namespace=ns)], [expires_at])
        self.assertIsNone(c.cache_touch("k", None, namespace=ns))              # null: never expire
        entry = c.cache_get("k", namespace=ns)
        self.assertEqual((entry.value, entry.expires_at), (b"v", None))
        self.assertIsNotNone(c.cache_touch("k", 200, namespace=ns))            # a shorter ttl takes effect too
        time.sleep(0.4)
        self.assertFerryError("not_found", c.cache_get, "k", namespace=ns)
        self.assertFerryError("not_found", c.cache_touch, "missing", 1000, namespace=ns)
        self.assertFerryError("not_found", c.cache_touch, "missing", None, namespace=ns)

    def test_touch_keeps_value_and_created_at(self):
        c, ns = self.client, self.ns
        c.cache_set("k", b"v" * 10, namespace=ns, ttl_ms=60000)
        first = c.cache_get("k", namespace=ns)
        time.sleep(0.02)
        c.cache_touch("k", 120000, namespace=ns)
        second = c.cache_get("k", namespace=ns)
        self.assertEqual((second.value, second.size, second.created_at), (first.value, 10, first.created_at))
        self.assertGreater(second.expires_at, first.expires_at)

    # ----- delete, namespaces, keys

    def test_delete(self):
        c, ns = self.client, self.ns
        c.cache_set("k", b"v", namespace=ns)
        self.assertIs(c.cache_delete("k", namespace=ns), True)
        self.assertFerryError("not_found", c.cache_get, "k", namespace=ns)
        self.assertIs(c.cache_delete("k", namespace=ns), False)
        self.assertIs(c.cache_delete("never set", namespace=ns), False)

    def test_namespaces_isolate(self):
        c, a, b = self.client, self.ns + ".a", self.ns + ".b"
        key = "shared key " + self.ns
        c.cache_set(key, b"in a", namespace=a)
        c.cache_set(key, b"in b", namespace=b)
        c.cache_set(key, b"in default")
        self.assertEqual(c.cache_get(key, namespace=a).value, b"in a")
        self.assertEqual(c.cache_get(key, namespace=b).value, b"in b")
        self.assertEqual(c.cache_get(key).value, b"in default")
        self.assertEqual(c.cache_get(key, namespace="default").value, b"in default")   # the default's name
        self.assertFerryError("not_found", c.cache_get, key, namespace=self.ns + ".c")
        self.assertIs(c.cache_set(key, b"x", namespace=b, if_absent=True), False)
        self.assertIs(c.cache_set(key, b"in c", namespace=self.ns + ".c", if_absent=True), True)
        self.assertIs(c.cache_delete(key, namespace=a), True)
        self.assertEqual(c.cache_get(key, namespace=b).value, b"in b")
        self.assertEqual(c.cache_get(key).value, b"in default")
        c.cache_set("only in a", b"1", namespace=a)
        self.assertEqual([k.key for k in c.cache_list(namespace=a)], ["only in a"])
        self.assertEqual([k.key for k in c.cache_list(namespace=b)], [key])
        self.assertEqual(c.cache_clear(namespace=b), 1)
        self.assertEqual(c.cache_get("only in a", namespace=a).value, b"1")
        self.assertEqual(c.cache_get(key).value, b"in default")
        self.assertIs(c.cache_delete(key, namespace="default"), True)
        self.assertFerryError("not_found", c.cache_get, key)

    def test_namespace_names(self):
        for ns in ["A-Za-z0-9._-", "x" * 128, "default", "-", "."]:
            with self.subTest(ns):
                key = f"k {self.ns}"
                self.assertIs(self.client.cache_set(key, ns.encode(), namespace=ns), True)
                self.assertEqual(self.client.cache_get(key, namespace=ns).value, ns.encode())
                self.assertIs(self.client.cache_delete(key, namespace=ns), True)

    def test_keys_compared_byte_for_byte(self):
        keys = ["\u00e9", "e\u0301", "k", "K", "k ", " k", "\u00e9\u0000", "a/b", "a%2Fb"]
        for i, key in enumerate(keys):
            self.client.cache_set(key, bytes([i]), namespace=self.ns)
        for i, key in enumerate(keys):
            self.assertEqual(self.client.cache_get(key, namespace=self.ns).value, bytes([i]), repr(key))
        self.assertEqual([k.key for k in self.client.cache_list(namespace=self.ns)], byte_order(keys))

    def test_key_length_is_counted_in_utf8_bytes(self):
        for key in ["k" * 1024, "\u00e9" * 512, "\U0001f600" * 256, "\u20ac" * 341 + "k"]:   # 1024 bytes each
            with self.subTest(len(key)):
                self.assertIs(self.client.cache_set(key, b"v", namespace=self.ns), True)
                self.assertEqual(self.client.cache_get(key, namespace=self.ns).value, b"v")
        for key in ["k" * 1025, "\u00e9" * 512 + "k", "\U0001f600" * 256 + "k"]:                 # 1025 bytes
            with self.subTest(len(key)):
                self.assertFerryError("invalid_argument", self.client.cache_set, key, b"v", namespace=self.ns)

    # ----- list and clear

    def test_list_prefix_and_paging(self):
        c, ns = self.client, self.ns
        wanted = [f"p/{i:03d}" for i in range(245)] + ["p/", "p/Z", "p/~", "p/\u00e9", "p/\U0001f600"]
        others = ["p", "o/1", "q/1", "P/1", "\u00e9"]
        self.assertEqual(len(wanted), 250)
        shuffled = wanted + others
        random.Random(7).shuffle(shuffled)
        for key in shuffled:
            c.cache_set(key, key.encode("utf-8") * 2, namespace=ns)
        expected = byte_order(wanted)

        pages, cursor = [], None
        while True:
            keys, cursor = c.cache_list_page(namespace=ns, prefix="p/", limit=100, cursor=cursor)
            pages.append(keys)
            if cursor is None:
                break
            self.assertIsInstance(cursor, str)
            self.assertLess(len(pages), 10, "cache.list keeps returning a cursor")
        self.assertEqual([len(p) for p in pages], [100, 100, 50])
        self.assertEqual([k.key for p in pages for k in p], expected)
        for p in pages:
            for item in p:
                self.assertEqual((item.size, item.expires_at), (2 * len(item.key.encode()), None), item)

        self.assertEqual([k.key for k in c.cache_list(namespace=ns, prefix="p/", limit=100)], expected)
        self.assertEqual([k.key for k in c.cache_list(namespace=ns, prefix="p/")], expected)
        self.assertEqual([k.key for k in c.cache_list(namespace=ns)], byte_order(wanted + others))
        self.assertEqual([k.key for k in c.cache_list(namespace=ns, prefix="p/\u00e9")], ["p/\u00e9"])
        self.assertEqual(list(c.cache_list(namespace=ns, prefix="nothing")), [])

    def test_list_default_limit_and_bounds(self):
        c, ns = self.client, self.ns
        for i in range(150):
            c.cache_set(f"k{i:03d}", b"", namespace=ns)
        keys, cursor = c.cache_list_page(namespace=ns)
        self.assertEqual(len(keys), 100)              # default limit
        self.assertIsNotNone(cursor)
        keys, cursor = c.cache_list_page(namespace=ns, cursor=cursor)
        self.assertEqual((len(keys), cursor), (50, None))
        keys, cursor = c.cache_list_page(namespace=ns, limit=1000)
        self.assertEqual((len(keys), cursor), (150, None))
        keys, cursor = c.cache_list_page(namespace=ns, limit=150)
        self.assertEqual((len(keys), cursor), (150, None))   # no cursor when nothing more follows
        keys, cursor = c.cache_list_page(namespace=ns, limit=1)
        self.assertEqual(([k.key for k in keys], cursor is None), (["k000"], False))

    def test_list_shows_size_and_expiry(self):
        c, ns = self.client, self.ns
        c.cache_set("a", b"12345", namespace=ns)
        c.cache_set("b", b"", namespace=ns, ttl_ms=60000)
        expires_at = c.cache_get("b", namespace=ns).expires_at
        self.assertEqual(list(c.cache_list(namespace=ns)), [CacheKey("a", 5, None), CacheKey("b", 0, expires_at)])

    def test_clear_returns_the_count(self):
        c, ns = self.client, self.ns
        for i in range(7):
            c.cache_set(f"k{i}", b"v", namespace=ns)
        c.cache_set("k0", b"again", namespace=ns)      # one entry, not two
        c.cache_set("kept", b"v", namespace=ns + ".other")
        self.assertEqual(c.cache_clear(namespace=ns), 7)
        self.assertEqual(list(c.cache_list(namespace=ns)), [])
        self.assertFerryError("not_found", c.cache_get, "k3", namespace=ns)
        self.assertEqual(c.cache_clear(namespace=ns), 0)
        self.assertEqual(c.cache_get("kept", namespace=ns + ".other").value, b"v")
        self.assertEqual(c.cache_clear(namespace=ns + ".never.used"), 0)
        self.assertIs(c.cache_set("k0", b"new", namespace=ns), True)
        self.assertEqual(c.cache_get("k0", namespace=ns).value, b"new")

    # ----- invalid arguments

    def test_invalid_arguments(self):
        c, ns = self.client, self.ns
        bad_keys = ["", "k" * 1025, "\u00e9" * 512 + "k", 123, None, ["k"], {"k": 1}, True]
        bad_ttls = [0, -5, MAX_TTL_MS + 1, 1.5, 100.0, "100", True]
        bad_namespaces = ["", "a b", "x" * 129, "ns/x", "\u00fc", "tab\t", 5, ["default"]]
        cases = []
        for key in bad_keys:
            cases += [("cache.set", {"key": key}), ("cache.get", {"key": key}), ("cache.delete", {"key": key}),
                      ("cache.touch", {"key": key, "ttl_ms": 1000})]
        for ttl in bad_ttls:
            cases += [("cache.set", {"key": "k", "ttl_ms": ttl}), ("cache.touch", {"key": "k", "ttl_ms": ttl})]
        for namespace in bad_namespaces:
            for op in ["cache.set", "cache.get", "cache.delete", "cache.touch", "cache.list", "cache.clear"]:
                args = {"namespace": namespace}
                if op not in ("cache.list", "cache.clear"):
                    args["key"] = "k"
                if op == "cache.touch":
                    args["ttl_ms"] = 1000
                cases.append((op, args))
        cases += [
            ("cache.set", {}), ("cache.get", {}), ("cache.delete", {}), ("cache.touch", {"ttl_ms": 1000}),
            ("cache.touch", {"key": "k"}),                           # ttl_ms is required (null to never expire)
            ("cache.set", {"key": "k", "if_absent": "yes"}), ("cache.set", {"key": "k", "if_absent": 1}),
            ("cache.list", {"limit": 0}), ("cache.list", {"limit": 1001}), ("cache.list", {"limit": -1}),
            ("cache.list", {"limit": "10"}), ("cache.list", {"limit": 10.5}),
            ("cache.list", {"prefix": 5}), ("cache.list", {"cursor": 5}),
        ]
        for op, args in cases:
            args = {"namespace": ns, **args} if "namespace" not in args else args
            with self.subTest(op=op, args=repr(args)[:120]):
                self.assertFerryError("invalid_argument", c.call, op, args, b"value" if op == "cache.set" else b"")
        # nothing of it was stored, and the connection still works
        self.assertEqual(list(c.cache_list(namespace=ns)), [])
        self.assertFerryError("not_found", c.cache_get, "k", namespace=ns)
        self.assertEqual(c.ping()[0], {"pong": True})

    def test_invalid_arguments_through_the_methods(self):
        c, ns = self.client, self.ns
        self.assertFerryError("invalid_argument", c.cache_set, "", b"v", namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_set, "k" * 1025, b"v", namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_set, "k", b"v", namespace=ns, ttl_ms=0)
        self.assertFerryError("invalid_argument", c.cache_set, "k", b"v", namespace=ns, ttl_ms=-5)
        self.assertFerryError("invalid_argument", c.cache_set, 42, b"v", namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_get, "", namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_get, 42, namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_delete, "k" * 1025, namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_touch, "k", 0, namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_touch, "k", -5, namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_list, namespace=ns, limit=0)
        self.assertFerryError("invalid_argument", c.cache_clear, namespace="no spaces")
        with self.assertRaises(TypeError):
            c.cache_set("k", "not bytes", namespace=ns)
        self.assertFerryError("not_found", c.cache_get, "k", namespace=ns)

    def test_stats_count_cache_operations(self):
        """stats.ops counts every operation the server knows (section 6), so the cache's too."""
        c, ns = self.client, self.ns
        before = c.stats()
        c.cache_set("k", b"v", namespace=ns)
        c.cache_get("k", namespace=ns)
        self.assertFerryError("not_found", c.cache_get, "missing", namespace=ns)
        self.assertFerryError("invalid_argument", c.cache_get, "", namespace=ns)
        c.cache_touch("k", None, namespace=ns)
        list(c.cache_list(namespace=ns))
        c.cache_delete("k", namespace=ns)
        c.cache_clear(namespace=ns)
        after = c.stats()

        def delta(op, field):
            return after["ops"].get(op, {}).get(field, 0) - before["ops"].get(op, {}).get(field, 0)

        for op, requests, errors in [("cache.set", 1, 0), ("cache.get", 3, 2), ("cache.touch", 1, 0),
                                     ("cache.list", 1, 0), ("cache.delete", 1, 0), ("cache.clear", 1, 0)]:
            with self.subTest(op):
                self.assertEqual((delta(op, "requests"), delta(op, "errors")), (requests, errors), after["ops"])
        self.assertGreaterEqual(after["errors"].get("not_found", 0) - before["errors"].get("not_found", 0), 1)

    # ----- concurrency

    def test_concurrent_clients(self):
        errors, barrier = [], threading.Barrier(8)

        def worker(t):
            try:
                with Client(self.path, name=f"cache-worker-{t}", timeout=20) as c:
                    barrier.wait(10)
                    for i in range(40):
                        value = f"{t}:{i}".encode() * (i + 1)
                        c.cache_set(f"{t}/{i:02d}", value, namespace=self.ns)
                        self.assertEqual(c.cache_get(f"{t}/{i:02d}", namespace=self.ns).value, value)
                    self.assertEqual(len(list(c.cache_list(namespace=self.ns, prefix=f"{t}/"))), 40)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"worker {t}: {e!r}")

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(self.client.cache_clear(namespace=self.ns), 320)

    # ----- limits and restarts (daemons of their own)

    def test_max_value_bytes(self):
        """With frames big enough to carry it, a value over max_value_bytes is refused with resource_exhausted
        (and nothing stored); one of exactly max_value_bytes is stored."""
        daemon = self.other_daemon(extra_args=["--max-frame-bytes", str(DEFAULT_MAX_VALUE_BYTES + MIB)]).start()
        with Client(daemon.path, name="max-value-test", timeout=60) as c:
            limit = c.limits.get("max_value_bytes")
            self.assertEqual(limit, DEFAULT_MAX_VALUE_BYTES)
            self.assertFerryError("resource_exhausted", c.cache_set, "k", b"\x01" * (limit + 1))
            self.assertFerryError("not_found", c.cache_get, "k")
            c.cache_set("k", b"old")
            self.assertFerryError("resource_exhausted", c.cache_set, "k", b"\x02" * (limit + 1))
            self.assertEqual(c.cache_get("k").value, b"old", "a refused set replaced the old value")
            value = os.urandom(limit)
            self.assertIs(c.cache_set("k", value), True)
            entry = c.cache_get("k")
            self.assertEqual(entry.size, limit)
            self.assertTrue(entry.value == value, "the 16 MiB value came back altered")

    def test_restart_keeps_values(self):
        """Entries live in --cache-dir: after a clean stop (SIGTERM) a daemon on the same directory has them."""
        first = self.other_daemon().start()
        big = os.urandom(MIB)
        with Client(first.path, name="restart-test", timeout=20) as c:
            c.cache_set("all bytes", bytes(range(256)))
            c.cache_set("with ttl", b"ttl", ttl_ms=3600000)
            c.cache_set("k", b"other namespace", namespace="other")
            c.cache_set("deleted", b"gone")
            c.cache_delete("deleted")
            c.cache_set("replaced", b"old")
            c.cache_set("replaced", b"new")
            c.cache_set("expiring", b"x", ttl_ms=200)
            c.cache_set("big", big)
            c.cache_set("gone with clear", b"x", namespace="cleared")
            self.assertEqual(c.cache_clear(namespace="cleared"), 1)
            before = {key: c.cache_get(key) for key in ["all bytes", "with ttl", "replaced"]}
        status = first.stop()
        self.assertIsNotNone(status, "ferryd did not stop within 15 s of SIGTERM")
        time.sleep(0.4)

        # same cache directory; frames of the minimum size, so the 1 MiB value has to come in chunks
        second = self.other_daemon(cache_dir=first.cache_dir, extra_args=["--max-frame-bytes", "65536"]).start()
        with Client(second.path, name="restart-test-2", timeout=20) as c:
            for key, entry in before.items():
                self.assertEqual(c.cache_get(key), entry, key)
            self.assertEqual(c.cache_get("k", namespace="other").value, b"other namespace")
            self.assertFerryError("not_found", c.cache_get, "deleted")
            self.assertFerryError("not_found", c.cache_get, "expiring")
            self.assertEqual(list(c.cache_list(namespace="cleared")), [])
            entry = c.cache_get("big")
            self.assertEqual(entry.size, MIB)
            self.assertTrue(entry.value == big, "the 1 MiB value came back altered after the restart")
            chunks = [i for i in c.stream("cache.get", {"key": "big"}) if i[0] == "event" and i[1] == "chunk"]
            self.assertGreaterEqual(len(chunks), MIB // 65536)
            self.assertEqual(sorted(k.key for k in c.cache_list()),
                             sorted(["all bytes", "with ttl", "replaced", "big"]))


if __name__ == "__main__":
    unittest.main()
