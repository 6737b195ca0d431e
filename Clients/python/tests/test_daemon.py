"""Against a real ferryd from $FERRYD (skipped when FERRYD is unset): handshake, ping, cancel, describe, stats,
threads, and the invalid vectors of Protocol/vectors/frames.json over the wire."""

import json
import os
import struct
import threading
import time

from ferry import DEFAULT_MAX_FRAME_BYTES, Client, FerryError

from .support.daemon import DaemonCase
from .support.helpers import run_threads
from .support.protocol import DESCRIBE_BODY_KINDS, HANDSHAKE_LIMIT, VECTORS


class DaemonTests(DaemonCase):
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
        # Larger than 256 KiB: it came in chunk events, and the result carries the total size (PROTOCOL.md §5).
        self.assertEqual(result, {"pong": True, "size": 1 << 20})
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
        """The daemon refuses a request past max_in_flight (the client holds such requests: test_slots_daemon, so
        this one speaks the protocol by hand)."""
        limit = self.client.limits["max_in_flight"]
        conn = self.raw()
        conn.hello()
        for rid in range(2, limit + 2):
            conn.request({"id": rid, "op": "ping", "args": {"delay_ms": 10000}})
        conn.request({"id": limit + 2, "op": "ping"})
        envelope, _ = conn.read_frame()
        self.assertEqual((envelope["id"], envelope["error"]["code"]), (limit + 2, "resource_exhausted"))
        conn.request({"id": limit + 3, "op": "cancel", "args": {"id": 2}})   # a cancel is not refused
        replies = {conn.read_frame()[0]["id"] for _ in range(2)}
        self.assertEqual(replies, {2, limit + 3})

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

        run_threads(worker, 20, 60)
        self.assertEqual(errors, [])

    def test_many_sends_before_any_wait(self):
        """Replies are read by waiting threads: one that sends 300 echoes of 60 KB (18 MB of replies, far past the
        daemon's 1 MiB before it stops reading a client) before it waits for any must read while it sends."""
        body = bytes(range(256)) * 234
        ids = [self.client.send("ping", body=body) for _ in range(300)]
        for rid in ids:
            self.assertEqual(self.client.wait(rid, timeout=30), ({"pong": True}, body))

    def test_readers_hand_over_when_a_waiter_times_out(self):
        """Threads wait for replies while one reads; waiters whose time runs out as the reading is handed to them
        pass it on, so the others still get their replies."""
        errors = []

        def slow(t):
            try:
                self.client.call("ping", {"delay_ms": 300 + 10 * t})
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"slow {t}: {e!r}")

        def impatient(t):
            try:
                rid = self.client.send("ping", {"delay_ms": 2000})
                self.client.wait(rid, timeout=0.05 * (t + 1))
                errors.append(f"impatient {t}: no timeout")
            except FerryError as e:
                if e.code != "deadline_exceeded":
                    errors.append(f"impatient {t}: {e!r}")

        threads = [threading.Thread(target=slow, args=(t,)) for t in range(6)]
        threads += [threading.Thread(target=impatient, args=(t,)) for t in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(20)
        self.assertFalse(any(th.is_alive() for th in threads), "a waiter never woke")
        self.assertEqual(errors, [])

    def test_close_fails_waiters(self):
        rid = self.client.send("ping", {"delay_ms": 5000})
        threading.Timer(0.1, self.client.close).start()
        self.assertFerryError("unavailable", self.client.wait, rid, timeout=5)

    # ----- stats has the documented shape, both ways

    def test_stats_has_the_documented_shape(self):
        path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "Protocol", "stats-shape.json")
        with open(path) as f:
            shape = json.load(f)
        self.client.call("ping")
        with self.assertRaises(FerryError):
            self.client.call("nope")
        problems = []

        def check(value, want, where):
            if isinstance(want, list):   # [shape]: an array of items of that shape
                if not isinstance(value, list):
                    return problems.append(f"{where}: an array in the shape, {type(value).__name__} in stats")
                for i, item in enumerate(value):
                    check(item, want[0], f"{where}[{i}]")
                return
            if isinstance(want, dict):
                if not isinstance(value, dict):
                    return problems.append(f"{where}: an object in the shape, {type(value).__name__} in stats")
                if "*" in want:
                    for k, v in value.items():
                        check(v, want["*"], f"{where}.{k}")
                    return
                problems.extend(f"{where}.{k}: in stats, not in the shape" for k in value if k not in want)
                problems.extend(f"{where}.{k}: in the shape, not in stats" for k in want if k not in value)
                for k in want:
                    if k in value:
                        check(value[k], want[k], f"{where}.{k}")
                return
            kinds = {"integer": (int,), "number": (int, float), "string": (str,), "boolean": (bool,)}[want]
            if isinstance(value, bool) != (want == "boolean") or not isinstance(value, kinds):
                problems.append(f"{where}: {want} in the shape, {value!r} in stats")

        check(self.client.stats(), shape, "stats")
        self.assertEqual(problems, [])

    # ----- the hello vectors are the daemon's own bytes

    def test_hello_reply_vector_is_what_the_daemon_sends(self):
        vectors = {v["name"]: v for v in VECTORS["valid"]}
        conn = self.raw()
        conn.send(bytes.fromhex(vectors["hello request"]["hex"]))
        want = bytes.fromhex(vectors["hello reply"]["hex"])
        got = b""
        conn.sock.settimeout(5)
        while len(got) < len(want):
            data = conn.sock.recv(1 << 16)
            if not data:
                break
            got += data
        self.assertEqual(got, want, "the daemon's hello reply differs from the vector byte for byte")

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
                self.assertEqual(envelope["id"], v["reply_id"], "reply names the wrong id")
                if v["error"] == "protocol_error":
                    self.assertTrue(conn.is_closed_by_peer(), "ferryd kept the connection open after a "
                                                              "protocol error")
                else:
                    conn.request({"id": 2, "op": "ping"})
                    self.assertEqual(conn.read_frame()[0].get("result"), {"pong": True})
