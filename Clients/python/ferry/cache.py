"""The shared key-value cache (``cache.*``, PROTOCOL.md section 6): ``CacheMixin`` and its result types.

Values are raw bytes and every entry lives in a namespace (``"default"`` when none is named)::

    ferry.cache_set("build/abc", b"\\x00data", namespace="my-tool", ttl_ms=60_000)   # -> True (stored)
    entry = ferry.cache_get("build/abc", namespace="my-tool")
    entry.value, entry.size, entry.created_at, entry.expires_at     # expires_at is None: never expires
    for item in ferry.cache_list(namespace="my-tool", prefix="build/"):   # follows the cursor page by page
        print(item.key, item.size, item.expires_at)
"""

import datetime
import os
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from .bodyfile import BodyFile
from .errors import FerryError
from .wire import ErrorCode

__all__ = ["CacheEntry", "CacheKey", "CacheMixin"]


class CacheEntry(NamedTuple):
    """A value read with ``Client.cache_get``. Times are milliseconds since the Unix epoch; ``expires_at`` is None
    for an entry that never expires."""
    value: bytes
    size: int
    created_at: Optional[int]
    expires_at: Optional[int]

    @property
    def text(self) -> str:
        """The value decoded as UTF-8 (what ``cache_set`` of a ``str`` stored)."""
        return self.value.decode("utf-8")


class CacheKey(NamedTuple):
    """One key of a ``Client.cache_list`` page; ``expires_at`` is None for an entry that never expires."""
    key: str
    size: Optional[int]
    expires_at: Optional[int]


def given_args(**named: Any) -> Dict[str, Any]:
    """The arguments that were given: those not None (the daemon takes null as absent too; leaving them out keeps
    frames small)."""
    return {name: value for name, value in named.items() if value is not None}


class CacheMixin:
    """The ``cache_*`` methods of ``ferry.Client`` (built on ``Connection.call``).

    Arguments are sent as given and checked by the server, which answers ``invalid_argument`` for a wrong type, an
    empty key or one over 1024 UTF-8 bytes, a bad namespace (1 … 128 bytes of A-Z a-z 0-9 . _ -), a ttl_ms outside
    1 … 315360000000, or a limit outside 1 … 1000. ``namespace=None`` leaves the argument out, which means
    "default". Only the value is checked here, since it travels as the request body: it must be bytes-like. A value
    larger than one frame is sent in parts (PROTOCOL.md section 5); one over the server's max_value_bytes is refused
    by the server with ``resource_exhausted`` (nothing stored).
    """

    def cache_set(self, key: str, value: Union[bytes, str], namespace: Optional[str] = None, ttl_ms: Optional[int] = None,
                  if_absent: bool = False, *, ttl: Union[None, int, float, datetime.timedelta] = None) -> bool:
        """Stores ``value`` under ``key`` (a ``str`` is stored as its UTF-8 bytes). ``ttl`` in seconds (a number or
        a ``timedelta``), or ``ttl_ms``; neither: the entry never expires. With ``if_absent`` nothing is
        replaced when a live entry exists. Returns True when stored, False when ``if_absent`` found a live entry.

        A value larger than one frame is uploaded in parts (continuation frames), transparently.

        Raises TypeError when ``value`` is not bytes-like (bytes, bytearray, memoryview); FerryError
        ``resource_exhausted`` when the value exceeds the server's ``max_value_bytes`` or the server's disk is full
        (nothing is stored), or locally when the request's envelope is too large to send (``key`` longer than
        max_json_bytes allows); ``invalid_argument`` for bad arguments."""
        args, value = _cache_set_request(key, value, namespace, ttl_ms, if_absent, ttl)
        result, _ = self.call("cache.set", args, value)
        return result.get("stored") is True

    def cache_get(self, key: str, namespace: Optional[str] = None, default: Any = None) -> Optional[CacheEntry]:
        """Reads an entry: ``CacheEntry(value, size, created_at, expires_at)``; ``default`` (None) when the key is
        absent or expired, as ``dict.get``. A value larger than a frame arrives as chunk events and is put together
        here. ``entry.text`` is the value decoded as UTF-8."""
        found = self._cache_get_reply(key, namespace)
        if found is None:
            return default
        result, body = found
        if isinstance(body, BodyFile):
            with body:
                body = body.read()
        return _cache_entry(key, result, body)

    def cache_get_file(self, key: str, namespace: Optional[str] = None) -> Optional[BodyFile]:
        """The value as a ``BodyFile`` (a descriptor, when the daemon offers them and the value is large; else one
        over a memory file made here), to save or copy without reading it into Python: ``with
        ferry.cache_get_file(k) as f: f.save(path)``. None when the key is absent or expired."""
        found = self._cache_get_reply(key, namespace)
        if found is None:
            return None
        _, body = found
        if isinstance(body, BodyFile):
            return body
        fd = os.memfd_create("ferry-value", os.MFD_CLOEXEC)
        try:
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view):]
        except BaseException:
            os.close(fd)
            raise
        return BodyFile(fd, 0, len(body))

    def _cache_get_reply(self, key: str, namespace: Optional[str]):
        """``cache.get``'s ``(result, body)``, the body a ``BodyFile`` when the daemon handed a large one over as a
        descriptor (not through the socket); None when the key is absent or expired."""
        try:
            return self.call("cache.get", _cache_get_args(key, namespace, self.offers_body_fd))
        except FerryError as e:
            if e.code == ErrorCode.not_found:
                return None
            raise

    def cache_get_or_none(self, key: str, namespace: Optional[str] = None) -> Optional[CacheEntry]:
        """``cache_get`` (kept for code written when ``cache_get`` raised on a miss)."""
        return self.cache_get(key, namespace)

    def cache_delete(self, key: str, namespace: Optional[str] = None) -> bool:
        """Removes an entry; True when there was one to remove."""
        result, _ = self.call("cache.delete", self._cache_args(key, namespace))
        return result.get("deleted") is True

    def cache_touch(self, key: str, ttl_ms: Optional[int] = None, namespace: Optional[str] = None, *,
                    ttl: Union[None, int, float, datetime.timedelta] = None) -> Optional[int]:
        """Gives a live entry a new time to live, counted from now: ``ttl`` in seconds (or a ``timedelta``) or
        ``ttl_ms``; neither (sent as JSON null) makes it never expire. Returns the new ``expires_at`` (ms since the
        Unix epoch), or None for never. Raises FerryError ``not_found`` when the key is absent or expired."""
        result, _ = self.call("cache.touch", _cache_touch_args(key, ttl_ms, namespace, ttl))
        return result.get("expires_at")

    def cache_incr(self, key: str, by: int = 1, namespace: Optional[str] = None, *,
                   ttl: Union[None, int, float, datetime.timedelta] = None) -> int:
        """Adds ``by`` (may be negative) to the decimal integer stored at ``key``, atomically in the daemon, and
        returns the new value, as Redis's INCRBY does. A missing key counts from 0 and takes ``ttl`` (seconds or a
        ``timedelta``); an existing key keeps its expiry. Raises FerryError ``failed_precondition`` when the value is
        not a decimal integer or the sum would overflow 64 bits (the value is left as it was)."""
        result, _ = self.call("cache.incr", _cache_incr_args(key, by, namespace, ttl))
        return int(result["value"])

    def cache_list(self, namespace: Optional[str] = None, prefix: Optional[str] = None,
                   limit: Optional[int] = None) -> Iterator[CacheKey]:
        """Every live key of a namespace (those starting with ``prefix`` if given), in byte order, as
        ``CacheKey(key, size, expires_at)``. ``limit`` is the page size (server default 100, at most 1000): the
        iterator fetches the next page with the server's ``cursor`` when the previous one is used up.

        The first page is requested at once, so bad arguments raise here rather than on the first ``next``; later
        pages are requested lazily. Entries written or removed while paging may or may not be seen."""
        keys, cursor = self.cache_list_page(namespace, prefix, limit)
        return self._cache_list_pages(keys, cursor, namespace, prefix, limit)

    def cache_list_page(self, namespace: Optional[str] = None, prefix: Optional[str] = None,
                        limit: Optional[int] = None,
                        cursor: Optional[str] = None) -> Tuple[List[CacheKey], Optional[str]]:
        """One page of ``cache.list``: ``(keys, cursor)``; ``cursor`` is None on the last page, else the value to
        pass for the next page."""
        result, _ = self.call("cache.list", given_args(namespace=namespace, prefix=prefix, limit=limit, cursor=cursor))
        return _cache_list_page(result)

    def _cache_list_pages(self, keys: List[CacheKey], cursor: Optional[str], namespace: Optional[str],
                          prefix: Optional[str], limit: Optional[int]) -> Iterator[CacheKey]:
        while True:
            yield from keys
            if cursor is None:
                return
            previous = cursor
            keys, cursor = self.cache_list_page(namespace, prefix, limit, previous)
            _check_next_cursor(previous, cursor)

    def cache_clear(self, namespace: Optional[str] = None) -> int:
        """Removes every entry of a namespace (``"default"`` when None); returns how many were removed."""
        result, _ = self.call("cache.clear", _cache_clear_args(namespace))
        return result.get("removed")

    @staticmethod
    def _cache_args(key: Any, namespace: Optional[str]) -> Dict[str, Any]:
        return _cache_args(key, namespace)


# ----- the pure parts of the cache_* methods, shared with ferry.aio.AsyncClient: arguments built and checked
# locally, replies shaped into results; nothing here does I/O.

def _cache_args(key: Any, namespace: Optional[str]) -> Dict[str, Any]:
    args: Dict[str, Any] = {"key": key}
    if namespace is not None:
        args["namespace"] = namespace
    return args


def _cache_set_request(key: str, value: Union[bytes, str], namespace: Optional[str], ttl_ms: Optional[int],
                       if_absent: bool, ttl: Union[None, int, float, datetime.timedelta]) -> Tuple[Dict[str, Any], Any]:
    """``cache_set``'s ``(args, body)``: a ``str`` value as its UTF-8 bytes; TypeError for a value that is not
    bytes-like, ValueError for both ``ttl`` and ``ttl_ms``."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"a cache value must be bytes-like or str, not {type(value).__name__}")
    args = _cache_args(key, namespace)
    if ttl is not None:
        if ttl_ms is not None:
            raise ValueError("ttl (seconds) or ttl_ms, not both")
        ttl_ms = _seconds_to_ms(ttl)
    if ttl_ms is not None:
        args["ttl_ms"] = ttl_ms
    if if_absent is not False:
        args["if_absent"] = if_absent
    return args, value


def _cache_get_args(key: str, namespace: Optional[str], body_fd: bool) -> Dict[str, Any]:
    """``cache.get``'s args; ``body_fd``: ask for a large value as a descriptor."""
    args = _cache_args(key, namespace)
    if body_fd:
        args["body_fd"] = True
    return args


def _cache_entry(key: str, result: dict, body: bytes) -> CacheEntry:
    """A ``cache.get`` reply (its body in bytes) as a CacheEntry; FerryError("internal") when the sizes differ."""
    size = result.get("size", len(body))
    if size != len(body):
        raise FerryError(ErrorCode.internal, f"cache.get of {key!r}: result says size {size!r} but the value "
                                             f"has {len(body)} bytes")
    return CacheEntry(body, len(body), result.get("created_at"), result.get("expires_at"))


def _cache_touch_args(key: str, ttl_ms: Optional[int], namespace: Optional[str],
                      ttl: Union[None, int, float, datetime.timedelta]) -> Dict[str, Any]:
    """``cache.touch``'s args: ``ttl_ms`` always present (null: never expire); ValueError for both times."""
    if ttl is not None:
        if ttl_ms is not None:
            raise ValueError("ttl (seconds) or ttl_ms, not both")
        ttl_ms = _seconds_to_ms(ttl)
    args = _cache_args(key, namespace)
    args["ttl_ms"] = ttl_ms
    return args


def _cache_incr_args(key: str, by: int, namespace: Optional[str],
                     ttl: Union[None, int, float, datetime.timedelta]) -> Dict[str, Any]:
    """``cache.incr``'s args; TypeError when ``by`` is not an int (a bool is not)."""
    if isinstance(by, bool) or not isinstance(by, int):
        raise TypeError("by must be an int")
    args = _cache_args(key, namespace)
    args["by"] = by
    if ttl is not None:
        args["ttl_ms"] = _seconds_to_ms(ttl)
    return args


def _cache_list_page(result: dict) -> Tuple[List[CacheKey], Optional[str]]:
    """A ``cache.list`` result as ``(keys, cursor)``; FerryError("internal") without a keys array."""
    items = result.get("keys")
    if not isinstance(items, list):
        raise FerryError(ErrorCode.internal, f"cache.list result has no keys array: {result!r}")
    keys = [CacheKey(item.get("key"), item.get("size"), item.get("expires_at"))
            for item in items if isinstance(item, dict)]
    return keys, result.get("cursor")


def _check_next_cursor(previous: str, cursor: Optional[str]) -> None:
    """Refuses a page whose cursor is the one it was asked with (paging would never end)."""
    if cursor is not None and cursor == previous:
        raise FerryError(ErrorCode.internal, f"cache.list returned the cursor it was given ({cursor!r}); "
                                             "paging would never end")


def _cache_clear_args(namespace: Optional[str]) -> Dict[str, Any]:
    args: Dict[str, Any] = {}
    if namespace is not None:
        args["namespace"] = namespace
    return args


def _seconds_to_ms(value: Union[int, float, datetime.timedelta]) -> int:
    """Seconds (a number or a timedelta) as whole milliseconds, at least 1; 0 and less are refused."""
    seconds = value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)
    if not seconds > 0:
        raise ValueError(f"a time must be more than 0 seconds, not {value!r}")
    return max(1, int(round(seconds * 1000)))
