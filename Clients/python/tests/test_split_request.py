"""A request body sent in parts (continuation frames, PROTOCOL.md section 5), frame by frame: ``split_request``;
no daemon needed."""

import os
import unittest

from ferry import MIN_BODY_PART_BYTES, FerryError, FrameDecoder, encode_frame, encode_json, split_request


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
