"""Strict JSON, as the protocol wants it (PROTOCOL.md sections 3 and 10).

- ``dumps_compact``: compact UTF-8 JSON (no whitespace, non-ASCII as is, keys in the order written); NaN and the
  infinities are refused with ValueError.
- ``loads_strict``: ``json.loads`` that refuses duplicate object keys and the constants ``NaN``, ``Infinity`` and
  ``-Infinity`` with ValueError (a nesting deep enough to exhaust the parser raises RecursionError).
- ``nesting_depth``: how deeply arrays and objects nest in a parsed value.
- ``is_int``: an ``int`` that is not a ``bool``, the protocol's integer.
"""

import json
from typing import Any, List, Tuple

__all__ = ["dumps_compact", "loads_strict", "nesting_depth", "is_int"]


# One encoder for every call: json.dumps with any option but the defaults builds a new one each time (a few
# microseconds a request, when eight threads share one core and each call's Python is what they wait for).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dumps_compact(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON. Raises TypeError for what JSON cannot hold, ValueError for NaN and the
    infinities (and for strings that are not valid Unicode)."""
    return _ENCODER.encode(value).encode("utf-8")


def _reject_duplicates(pairs: List[Tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {dup!r}")
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# One decoder for every call: json.loads with hooks builds a new one each time (a measurable part of a cache hit).
_DECODER = json.JSONDecoder(object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)


def loads_strict(text: str) -> Any:
    """Parses ``text``; ValueError for invalid JSON, a duplicate key or NaN/Infinity, RecursionError when it nests
    too deep for the parser."""
    # An object with nothing around it (every envelope ferryd writes) parsed by the scanner alone: ``decode`` adds
    # two whitespace matches and its own checks. Anything else goes the whole way, for the same result or error.
    if text[:1] == "{":
        try:
            value, end = _DECODER.raw_decode(text)
        except ValueError:
            pass
        else:
            if end == len(text):
                return value
    return _DECODER.decode(text)


def nesting_depth(value: Any) -> int:
    """Deepest nesting of arrays and objects; a bare object is depth 1."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def is_int(value: Any) -> bool:
    """True for an ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)
