"""The Client's requests, streams, cancelling, threading, sending in parts and failure handling, against the
in-process stand-in for ferryd (support/fake_ferryd.py)."""

import os
import threading
import time

from ferry import DEFAULT_MAX_FRAME_BYTES, MIN_BODY_PART_BYTES, Client, FerryError, FerryProtocolError, encode_json

from .support.fake_ferryd import FakeServerCase
from .support.helpers import run_threads


class FakeServerTests(FakeServerCase):
    """The Client's threading, cancelling and failure handling against the in-process stand-in."""


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

        run_threads(worker, 20, 30)
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

        run_threads(worker, 8, 60)
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
