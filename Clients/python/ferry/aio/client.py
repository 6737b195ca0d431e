"""``AsyncClient``: a connection to ferryd for asyncio (``AsyncConnection``) with every operation family of
``ferry.Client`` as coroutines: ``cache_*``, ``fetch`` and ``http_*``, ``image``. Arguments are built and results
shaped by the sync side's helpers (``ferry.cache``, ``ferry.fetch``, ``ferry.image``); only the awaiting is here."""

from typing import Any, AsyncIterator, Callable, Iterable, List, Mapping, Optional, Tuple, Union

from ..api import Timeout
from ..cache import (
    CacheEntry, CacheKey, _cache_args, _cache_clear_args, _cache_entry, _cache_get_args, _cache_incr_args,
    _cache_list_page, _cache_set_request, _cache_touch_args, _check_next_cursor, given_args,
)
from ..errors import FerryError
from ..fetch import _NO_JSON, FetchResponse, _FetchPlan, _http_list_args, _http_purge_args
from ..image import Image, _image_args, _image_result, _prefetch_args
from ..wire import ErrorCode
from .connection import AsyncConnection

__all__ = ["AsyncClient"]


class AsyncClient(AsyncConnection):
    """A connection to ferryd for asyncio: ``ferry.Client``'s methods as coroutines.

    ``AsyncClient(path=None, name="python-aio", timeout=None)``: ``path`` defaults to default_socket_path();
    ``name`` is sent in ``hello``; ``timeout`` (seconds) bounds connecting and is the local wait limit of requests
    sent without ``timeout_ms`` (None: wait as long as it takes). Requests with ``timeout_ms`` wait locally for
    that plus a short grace, then raise ``deadline_exceeded`` and send a ``cancel``.

    ::

        async with AsyncClient() as c:               # or: c = await AsyncClient().connect(); ...; await c.close()
            print(c.version, c.limits["max_frame_bytes"])
            result, body = await c.call("ping", body=b"hi")      # -> ({"pong": True}, b"hi")
            rid = await c.send("ping", {"delay_ms": 5000})
            await c.cancel(rid)                                  # -> {"cancelled": True}
            await c.wait(rid)                                    # raises FerryError("cancelled")

    When the connection closes (either side, or the daemon died), every waiter gets a FerryError
    (``unavailable``, or the code the daemon named in its last connection-level error), promptly.
    """

    # ----- cache.* (as ferry.Client's cache_* methods; see ferry.cache)

    async def cache_set(self, key: str, value: Union[bytes, str], namespace: Optional[str] = None,
                        ttl_ms: Optional[int] = None, if_absent: bool = False, *, ttl: Timeout = None) -> bool:
        """Stores ``value`` (bytes-like, or a str as UTF-8) under ``key``; ``ttl`` seconds or ``ttl_ms`` (neither:
        no expiry). Returns True when stored, False when ``if_absent`` found a live entry. A value larger than a
        frame is sent in parts."""
        args, value = _cache_set_request(key, value, namespace, ttl_ms, if_absent, ttl)
        result, _ = await self.call("cache.set", args, value)
        return result.get("stored") is True

    async def cache_get(self, key: str, namespace: Optional[str] = None, default: Any = None) -> Optional[CacheEntry]:
        """``CacheEntry(value, size, created_at, expires_at)``, or ``default`` (None) when the key is absent or
        expired. A large value arrives in chunks and is joined here."""
        try:
            result, body = await self.call("cache.get", _cache_get_args(key, namespace, False))
        except FerryError as e:
            if e.code == ErrorCode.not_found:
                return default
            raise
        return _cache_entry(key, result, body)

    async def cache_get_or_none(self, key: str, namespace: Optional[str] = None) -> Optional[CacheEntry]:
        """``cache_get`` (as ``Client.cache_get_or_none``)."""
        return await self.cache_get(key, namespace)

    async def cache_delete(self, key: str, namespace: Optional[str] = None) -> bool:
        """Removes an entry; True when there was one to remove."""
        result, _ = await self.call("cache.delete", _cache_args(key, namespace))
        return result.get("deleted") is True

    async def cache_touch(self, key: str, ttl_ms: Optional[int] = None, namespace: Optional[str] = None, *,
                          ttl: Timeout = None) -> Optional[int]:
        """A new time to live for a live entry (neither ``ttl`` nor ``ttl_ms``: never expires); returns the new
        ``expires_at`` or None. FerryError ``not_found`` when the key is absent or expired."""
        result, _ = await self.call("cache.touch", _cache_touch_args(key, ttl_ms, namespace, ttl))
        return result.get("expires_at")

    async def cache_incr(self, key: str, by: int = 1, namespace: Optional[str] = None, *, ttl: Timeout = None) -> int:
        """Adds ``by`` to the decimal integer at ``key``, atomically in the daemon; returns the new value (a
        missing key counts from 0 and takes ``ttl``)."""
        result, _ = await self.call("cache.incr", _cache_incr_args(key, by, namespace, ttl))
        return int(result["value"])

    def cache_list(self, namespace: Optional[str] = None, prefix: Optional[str] = None,
                   limit: Optional[int] = None) -> AsyncIterator[CacheKey]:
        """Every live key of a namespace (starting with ``prefix`` if given), in byte order, as
        ``CacheKey(key, size, expires_at)``: an async iterator fetching pages of ``limit`` as it goes (the first
        when iteration starts, so bad arguments raise there)::

            async for item in c.cache_list(namespace="my-tool", prefix="build/"):
                print(item.key, item.size)
        """
        return self._cache_list_pages(namespace, prefix, limit)

    async def _cache_list_pages(self, namespace: Optional[str], prefix: Optional[str],
                                limit: Optional[int]) -> AsyncIterator[CacheKey]:
        keys, cursor = await self.cache_list_page(namespace, prefix, limit)
        while True:
            for key in keys:
                yield key
            if cursor is None:
                return
            previous = cursor
            keys, cursor = await self.cache_list_page(namespace, prefix, limit, previous)
            _check_next_cursor(previous, cursor)

    async def cache_list_page(self, namespace: Optional[str] = None, prefix: Optional[str] = None,
                              limit: Optional[int] = None,
                              cursor: Optional[str] = None) -> Tuple[List[CacheKey], Optional[str]]:
        """One page of ``cache.list``: ``(keys, cursor)``; ``cursor`` is None on the last page."""
        result, _ = await self.call("cache.list",
                                    given_args(namespace=namespace, prefix=prefix, limit=limit, cursor=cursor))
        return _cache_list_page(result)

    async def cache_clear(self, namespace: Optional[str] = None) -> int:
        """Removes every entry of a namespace (``"default"`` when None); returns how many were removed."""
        result, _ = await self.call("cache.clear", _cache_clear_args(namespace))
        return result.get("removed")

    # ----- fetch and http.* (as ferry.Client's; see ferry.fetch)

    async def fetch(self, url: str, method: str = "GET",
                    headers: Optional[Union[Mapping[str, str], Iterable[Tuple[str, str]]]] = None, body: bytes = b"",
                    *, json: Any = _NO_JSON, timeout_ms: Optional[int] = None, redirect: Optional[str] = None,
                    max_redirects: Optional[int] = None, max_bytes: Optional[int] = None,
                    cache: Optional[str] = None, progress: Optional[Callable[[int, Optional[int]], Any]] = None,
                    request_timeout_ms: Optional[int] = None, retry: Optional[bool] = None, to: Any = None,
                    on_head: Optional[Callable[[FetchResponse], Any]] = None) -> FetchResponse:
        """An HTTP request through the daemon and its shared cache; returns a ``FetchResponse`` (any HTTP status is
        a result). The arguments are ``Client.fetch``'s (see there): ``headers``, ``body`` or ``json=``, the
        daemon's ``timeout_ms``, ``redirect``, ``max_redirects``, ``max_bytes``, ``cache``, ``retry``,
        ``request_timeout_ms`` (the whole request's deadline); ``progress(received, total)``, ``to`` (a binary
        file or a callable taking bytes: the body is written there as it arrives and ``body`` is ``b""``) and
        ``on_head(head)`` are plain callables, called in the event loop (an exception from one cancels the
        request and propagates)::

            r = await c.fetch("https://example.com/data.json", headers={"Accept": "application/json"})
            with open("big.iso", "wb") as f:
                await c.fetch(url, to=f, progress=lambda got, total: print(got, total))
        """
        plan = _FetchPlan(url, method, headers, body, json, timeout_ms, redirect, max_redirects, max_bytes, cache,
                          progress, retry, to, on_head)
        pending = await self._start("fetch", plan.args, plan.body, request_timeout_ms)
        result, data = await self._collect(pending, self._deadline(None, request_timeout_ms), plan.on_event,
                                           plan.sink, before_final=plan.give_head)
        return plan.response(result, data)

    def http_list(self, prefix: Optional[str] = None, limit: Optional[int] = None) -> AsyncIterator[dict]:
        """Every URL the shared HTTP cache holds (starting with ``prefix``), as the daemon's dicts: an async
        iterator fetching pages of ``limit`` as it goes (see ``Client.http_list``)."""
        return self._http_list_pages(prefix, limit)

    async def _http_list_pages(self, prefix: Optional[str], limit: Optional[int]) -> AsyncIterator[dict]:
        cursor: Optional[str] = None
        while True:
            result, _ = await self.call("http.list", _http_list_args(prefix, limit, cursor))
            for entry in result.get("urls", []):
                yield entry
            cursor = result.get("cursor")
            if cursor is None:
                return

    async def http_show(self, url: str) -> Optional[dict]:
        """What the shared HTTP cache holds for ``url``, or None when nothing is stored for it."""
        try:
            result, _ = await self.call("http.show", {"url": url})
        except FerryError as e:
            if e.code == ErrorCode.not_found.value:
                return None
            raise
        return result

    async def http_purge(self, url: Optional[str] = None, *, prefix: Optional[str] = None) -> int:
        """Removes what the HTTP cache holds for ``url``, or for every URL starting with ``prefix``; returns how
        many URLs were removed."""
        result, _ = await self.call("http.purge", _http_purge_args(url, prefix))
        return int(result.get("purged", 0))

    # ----- image.* (as ferry.Client's; see ferry.image)

    async def image(self, url: str, headers: Optional[Union[Mapping[str, str], Iterable[Tuple[str, str]]]] = None,
                    *, cache: Optional[str] = None, timeout_ms: Optional[int] = None,
                    request_timeout_ms: Optional[int] = None, width: Optional[int] = None,
                    height: Optional[int] = None, fit: Optional[str] = None, format: Optional[str] = None,
                    quality: Optional[int] = None, density: Optional[int] = None) -> Image:
        """An image (or a variant of it) through the daemon's shared image loader, as ``Client.image``."""
        args = _image_args(url, headers, cache, timeout_ms, width, height, fit, format, quality, density)
        result, body = await self.call("image.get", args, timeout_ms=request_timeout_ms)
        return _image_result(url, result, body)

    async def prefetch_images(self, urls: Iterable[str], *, width: Optional[int] = None,
                              height: Optional[int] = None, fit: Optional[str] = None, format: Optional[str] = None,
                              quality: Optional[int] = None, density: Optional[int] = None) -> int:
        """Queues downloads (and variants) that warm the daemon's caches; returns how many were queued."""
        args = _prefetch_args(urls, width, height, fit, format, quality, density)
        return int((await self.call("image.prefetch", args))[0].get("queued", 0))

    async def evict_image(self, url: str) -> bool:
        """Drops a URL's image from the loader's memory tier; returns whether it was there."""
        return bool((await self.call("image.evict", {"url": url}))[0].get("evicted", False))
