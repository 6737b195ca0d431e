"""Framing against the golden vectors of Protocol/vectors/frames.json: FrameDecoder, encode_frame, decode_envelope,
check_request and FerryError's codes; no daemon needed."""

import struct
import unittest

from ferry import (
    DEFAULT_MAX_FRAME_BYTES, FerryError, FerryProtocolError, FrameDecoder, check_request, decode_envelope,
    encode_frame,
)

from .support.protocol import HANDSHAKE_LIMIT, VECTORS


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
