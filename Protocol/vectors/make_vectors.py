#!/usr/bin/env python3
"""Writes frames.json: golden frames for protocol v1. Run once when the protocol changes; the output is committed.

Each valid vector holds the frame bytes as hex and what they mean (the envelope as JSON and the body as hex); a
client decodes `hex` and must get `envelope`/`body_hex`, and re-encodes those and must get `hex` byte for byte.
Each invalid vector holds bytes a server must refuse, the error code it answers with, and the id its error reply
names (`reply_id`: the request's id when it can still be read from the bytes, PROTOCOL.md §4; else 0).
"""
import json, struct, pathlib

def frame(envelope, body=b""):
    j = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()
    return struct.pack(">II", len(j), len(body)) + j + body

def raw(json_bytes, body=b""):
    return struct.pack(">II", len(json_bytes), len(body)) + json_bytes + body

valid = [
    ("hello request", "client → server: the handshake, speaking version 1", {"id": 1, "op": "hello", "args": {"versions": [1], "client": "vectors"}}, b""),
    # The daemon's own reply to the hello above (ferryd 0.1.0, default limits), as the integration tests compare.
    ("hello reply", "server → client: version 1 chosen, revision 1.1", {"id": 1, "final": True, "result": {"version": 1, "protocol": "1.1", "server": "ferryd 0.1.0", "limits": {"handshake_frame_bytes": 65536, "max_frame_bytes": 4194304, "max_json_bytes": 1048576, "max_nesting": 32, "max_in_flight": 256, "max_value_bytes": 16777216, "body_fd_min_bytes": 65536}, "operations": ["hello", "ping", "describe", "stats", "cancel", "cache.set", "cache.get", "cache.delete", "cache.touch", "cache.incr", "cache.list", "cache.clear", "fetch", "http.list", "http.show", "http.purge", "image.get", "image.prefetch", "image.evict"], "capabilities": ["body_fd"]}}, b""),
    ("ping request", "client → server: a bare ping", {"id": 2, "op": "ping"}, b""),
    ("ping reply", "server → client", {"id": 2, "final": True, "result": {"pong": True}}, b""),
    ("ping with body", "client → server: binary body (including NUL and 0xff) to echo, with a deadline", {"id": 3, "op": "ping", "args": {"delay_ms": 5}, "timeout_ms": 1000}, bytes([0, 1, 2, 255, 254, 10])),
    ("ping reply with body", "server → client: the echoed body", {"id": 3, "final": True, "result": {"pong": True}}, bytes([0, 1, 2, 255, 254, 10])),
    ("tick event", "server → client: an event, not final", {"id": 4, "final": False, "event": "tick", "data": {"n": 0}}, b""),
    ("chunk event", "server → client: part of a streamed body", {"id": 5, "final": False, "event": "chunk", "data": {"offset": 4194296}}, b"abc"),
    ("first chunk event", "server → client: the first part of a streamed body, with the whole body's size", {"id": 5, "final": False, "event": "chunk", "data": {"offset": 0, "size": 300000}}, b"abc"),
    ("error reply", "server → client: a call error with details", {"id": 6, "final": True, "error": {"code": "unimplemented", "message": "unknown operation \"nope\"", "details": {"op": "nope"}}}, b""),
    ("connection error", "server → client: id 0 names no request", {"id": 0, "final": True, "error": {"code": "protocol_error", "message": "JSON envelope of 1195725856 bytes exceeds the limit of 65536"}}, b""),
    ("escapes", "strings with quotes, backslash, control characters, slash and non-ASCII", {"id": 7, "op": "ping", "args": {"s": "q\"b\\n\n t\t c\u0001 /é✓😀"}}, b""),
    ("largest id", "2^53-1 is the largest id", {"id": 9007199254740991, "op": "cancel", "args": {"id": 8}}, b""),
    ("get asking for a descriptor", "client → server: a cache.get that accepts its body as a descriptor (capability body_fd)", {"id": 10, "op": "cache.get", "args": {"key": "model.bin", "body_fd": True}}, b""),
    ("reply with a descriptor", "server → client: the body is the descriptor sent (SCM_RIGHTS) with this frame's first byte; the frame has no body", {"id": 10, "final": True, "result": {"size": 1048576, "created_at": 1796200000000, "source": "disk", "body_fd": {"offset": 0, "length": 1048576}}}, b""),
    ("negative and nested", "negative numbers, null, arrays, nested objects", {"id": 8, "op": "describe", "args": {"a": [-1, 0, None, False, {"b": []}], "c": {}}}, b""),
]

invalid = [
    ("oversized length", "a json_len over the handshake limit: refused before allocation", struct.pack(">II", 0x47455420, 0) , "protocol_error", 0),
    ("http request", "an HTTP request line read as a frame header ('GET ' = 1195725856 bytes)", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "protocol_error", 0),
    ("zero json length", "json_len 0 is never valid", struct.pack(">II", 0, 0), "protocol_error", 0),
    ("not json", "valid framing, invalid JSON", raw(b"{nope}"), "invalid_argument", 0),
    ("not an object", "JSON that is an array", raw(b"[1,2]"), "invalid_argument", 0),
    ("invalid utf-8", "a lone 0xff byte inside a string", raw(b'{"id":1,"op":"p\xffng"}'), "invalid_argument", 1),
    ("missing id", "no id field", raw(b'{"op":"ping"}'), "invalid_argument", 0),
    ("string id", "id must be an integer", raw(b'{"id":"1","op":"ping"}'), "invalid_argument", 0),
    ("fractional id", "id must be an integer", raw(b'{"id":1.5,"op":"ping"}'), "invalid_argument", 0),
    ("missing op", "no op field", raw(b'{"id":1}'), "invalid_argument", 1),
    ("numeric op", "op must be a string", raw(b'{"id":1,"op":7}'), "invalid_argument", 1),
    ("duplicate key", "keys must be unique", raw(b'{"id":1,"id":2,"op":"ping"}'), "invalid_argument", 0),
    ("too deep", "nesting deeper than 32", raw(b'{"id":1,"op":"ping","args":{"x":' + b"[" * 40 + b"]" * 40 + b"}}"), "invalid_argument", 1),
    ("trailing garbage", "bytes after the JSON object", raw(b'{"id":1,"op":"ping"} x'), "invalid_argument", 1),
]

out = {
    "protocol": 1,
    "valid": [{"name": n, "meaning": m, "envelope": e, "body_hex": b.hex(), "hex": frame(e, b).hex()} for n, m, e, b in valid],
    "invalid": [{"name": n, "meaning": m, "hex": h.hex(), "error": c, "reply_id": i} for n, m, h, c, i in invalid],
}
path = pathlib.Path(__file__).with_name("frames.json")
path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
print(f"wrote {path}: {len(valid)} valid, {len(invalid)} invalid")
