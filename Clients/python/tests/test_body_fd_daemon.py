"""Bodies as descriptors (PROTOCOL.md section 5, capability ``body_fd``) against a real ferryd from $FERRYD: the
client's cache_get and cache_get_file, and a raw reader that stops reading while
large replies and descriptors queue up, then checks that every descriptor came with its own frame."""

import array
import os
import socket
import struct
import time

from ferry import BodyFile, FrameDecoder, encode_frame

from .support.daemon import CacheDaemonCase, MIB


def value(size: int, seed: int) -> bytes:
    """``size`` bytes that differ for each ``seed``."""
    block = bytes((seed * 31 + i * 7) & 0xFF for i in range(4096))
    return (block * (size // 4096 + 1))[:size]


class BodyFdDaemonTests(CacheDaemonCase):

    def test_capability_and_limit_are_announced(self):
        self.assertIn("body_fd", self.client.capabilities)
        self.assertEqual(self.client.limits.get("body_fd_min_bytes"), 65536)
        self.assertTrue(self.client.offers_body_fd)

    def test_cache_get_reads_a_large_value_through_a_descriptor(self):
        c, ns = self.client, self.ns
        big, small = value(3 * MIB, 1), value(1000, 2)
        c.cache_set("big", big, namespace=ns)
        c.cache_set("small", small, namespace=ns)
        before = c.stats()["descriptors"]["sent"]
        self.assertEqual(c.cache_get("big", namespace=ns).value, big)
        self.assertEqual(c.cache_get("small", namespace=ns).value, small)
        self.assertEqual(c.stats()["descriptors"]["sent"], before + 1)

    def test_cache_get_file_saves_in_the_kernel_and_never_changes(self):
        c, ns = self.client, self.ns
        big = value(2 * MIB + 3, 3)
        c.cache_set("big", big, namespace=ns)
        body = c.cache_get_file("big", namespace=ns)
        self.assertIsInstance(body, BodyFile)
        with body:
            with self.assertRaises(OSError):
                os.pwrite(body.fd, b"x", 0)            # sealed
            c.cache_set("big", value(2 * MIB + 3, 4), namespace=ns)
            c.cache_delete("big", namespace=ns)
            out = os.path.join(self.dir, f"saved-{ns}")
            body.save(out)
            with open(out, "rb") as f:
                self.assertEqual(f.read(), big)
            self.assertEqual(body.read(), big)
        self.assertEqual(body.fd, -1)
        self.assertIsNone(c.cache_get_file("big", namespace=ns))
        c.cache_set("tiny", b"abc", namespace=ns)
        with c.cache_get_file("tiny", namespace=ns) as small:   # under the minimum: a memory file made here
            self.assertEqual(small.read(), b"abc")

    def test_descriptors_pair_with_their_frames_when_the_reader_falls_behind(self):
        """Large byte replies fill the socket while the client does not read; the descriptor replies between them
        wait (queued writes, a full socket) and each still arrives with the first byte of its own frame."""
        c, ns = self.client, self.ns
        values = [value(200_000 + 4096 * k, 10 + k) for k in range(4)]
        for k, v in enumerate(values):
            c.cache_set(f"v{k}", v, namespace=ns)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(sock.close)
        sock.connect(self.path)
        sock.sendall(encode_frame({"id": 1, "op": "hello", "args": {"versions": [1]}}))
        expected = {}
        requests = []
        for i in range(2, 202):
            k = i % len(values)
            args = {"key": f"v{k}", "namespace": ns}
            if i % 2 == 0:
                args["body_fd"] = True
            requests.append(encode_frame({"id": i, "op": "cache.get", "args": args}))
            expected[i] = values[k]
        sock.sendall(b"".join(requests))
        time.sleep(0.5)                                   # not reading: the daemon's output waits
        decoder = FrameDecoder(max_frame_bytes=8 * MIB)
        fds, bodies, finals = [], {}, {}
        space = socket.CMSG_SPACE(16 * 4)
        sock.settimeout(20)
        while len(finals) < 201:
            data, anc, flags, _ = sock.recvmsg(1 << 16, space)
            self.assertFalse(flags & socket.MSG_CTRUNC)
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got = array.array("i")
                    got.frombytes(payload[:len(payload) - len(payload) % 4])
                    fds.extend(got)
            self.assertTrue(data, "ferryd closed the connection")
            for envelope, body in decoder.feed(data):
                rid = envelope["id"]
                if envelope.get("final") is False:
                    bodies[rid] = bodies.get(rid, b"") + body
                    continue
                result = envelope["result"]
                if "body_fd" in result:
                    self.assertTrue(fds, f"request {rid}: a descriptor was named before it arrived")
                    fd = fds.pop(0)
                    try:
                        named = result["body_fd"]
                        finals[rid] = os.pread(fd, named["length"], named["offset"])
                    finally:
                        os.close(fd)
                else:
                    finals[rid] = bodies.pop(rid, b"") + body
        self.assertEqual(fds, [], "no descriptor left over")
        self.assertGreater(c.stats()["descriptors"]["waits"], 0, "descriptor frames had to wait for the socket")
        for rid, body in finals.items():
            if rid >= 2:
                self.assertEqual(len(body), len(expected[rid]), f"request {rid}")
                self.assertTrue(body == expected[rid], f"request {rid}: its own value")
