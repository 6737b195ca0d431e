"""A tiny in-process stand-in for ferryd (``FakeFerryd``) and the test case base that gives each test one
(``FakeServerCase``)."""

import os
import shutil
import socket
import tempfile
import threading
import unittest

from ferry import Client, FrameDecoder, encode_frame, encode_json


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


class FakeServerCase(unittest.TestCase):
    """Each test gets a FakeFerryd on a fresh socket (in a temporary directory named ``dir_prefix``…) and a Client
    connected to it as ``client_name``."""

    dir_prefix = "ferry-fake-"
    client_name = "fake-test"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.dir_prefix)
        self.server = FakeFerryd(os.path.join(self.dir, "s.sock"))
        self.client = Client(self.server.path, name=self.client_name, timeout=10).connect()

    def tearDown(self):
        self.client.close()
        self.server.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def sent(self, op):
        """(args, body) of every request of ``op`` the fake received."""
        return [(args, body) for o, args, body in self.server.requests_seen if o == op]

