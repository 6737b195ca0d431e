"""Connecting with ferryd started when none answers (``connect``), and HTTP with the habits of ``requests`` for
asyncio: ``AsyncSession`` and the module functions ``ferry.aio.get`` … on one shared session per event loop."""

import asyncio
from typing import Any, Iterable, Mapping, Optional, Tuple

from .. import daemon as _daemon
from ..api import Response, Timeout, _fetch_arguments, _init_session_state
from ..errors import FerryError
from ..fetch import _NO_JSON
from ..paths import default_socket_path
from ..wire import ErrorCode
from .client import AsyncClient

__all__ = ["AsyncSession", "connect", "request", "get", "head", "post", "put", "patch", "delete", "close_shared"]


# ----- connecting, with ferryd started when none answers (as ferry.daemon.connect)

async def connect(path: Optional[str] = None, name: str = "python-aio", timeout: Optional[float] = None,
                  autostart: bool = True, daemon_args: Iterable[str] = (), ready_seconds: float = 10.0) -> AsyncClient:
    """A connected ``AsyncClient``; with ``autostart`` (and no ``FERRY_NO_AUTOSTART``), ferryd (``$FERRYD``, else
    ``ferryd`` on PATH) is started first when none answers on ``path``, as ``ferry.daemon.connect`` does (the
    process is spawned in a worker thread). Raises ``FerryError("unavailable")`` when none answers in
    ``ready_seconds``."""
    path = path or default_socket_path()
    daemon_args = tuple(daemon_args)
    try:
        return await AsyncClient(path, name=name, timeout=timeout).connect()
    except FerryError as e:
        if not _daemon._may_autostart(e, autostart):
            raise
    loop = asyncio.get_running_loop()
    starter = await loop.run_in_executor(None, _daemon._Autostart, path, daemon_args, ready_seconds)
    while starter.waiting():
        try:
            return await AsyncClient(path, name=name, timeout=timeout).connect()
        except FerryError as e:
            if e.code != ErrorCode.unavailable:
                raise
        delay = starter.respawn_delay()
        if delay is not None:
            await asyncio.sleep(delay)
            await loop.run_in_executor(None, starter.respawn)
        await asyncio.sleep(_daemon._POLL_SECONDS)
    raise starter.failure()


# ----- requests-like

class AsyncSession:
    """``ferry.Session`` for asyncio: an ``AsyncClient`` of its own, with default ``headers`` for every request;
    ``async with``. ``AsyncSession(client=c)`` uses an existing client (not closed by the session). It starts
    ferryd when none answers (``autostart``; ``daemon_args`` are more of ferryd's options), and connects again once
    when the daemon restarted under it. The responses are ``ferry.api.Response``::

        async with AsyncSession(headers={"Authorization": "Bearer " + token}) as s:
            r = await s.get("https://api.example.com/quotes", params={"page": 2}, timeout=5)
            r = await s.post("https://api.example.com/search", json={"text": "courage"})
    """

    def __init__(self, headers: Optional[Mapping[str, str]] = None, client: Optional[AsyncClient] = None,
                 socket_path: Optional[str] = None, autostart: bool = True, daemon_args: Iterable[str] = ()):
        _init_session_state(self, headers, client, socket_path, autostart, daemon_args)
        self._lock: Optional[asyncio.Lock] = None   # made in the event loop, on first use

    async def _connected(self) -> AsyncClient:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is None or self._client.closed:
                if not self._owns and self._client is not None:
                    raise FerryError(ErrorCode.unavailable, "the session's client is closed")
                self._client = await connect(self._socket_path, name="python-aio-session", autostart=self.autostart,
                                             daemon_args=self.daemon_args)
            return self._client

    async def request(self, method: str, url: str, params: Any = None, headers: Optional[Mapping[str, str]] = None,
                      data: Any = None, json: Any = _NO_JSON, timeout: Timeout = None, cache: Optional[str] = None,
                      allow_redirects: bool = True, max_redirects: Optional[int] = None) -> Response:
        """One request, as ``Session.request``: ``params`` into the query; ``data`` a dict (form-encoded), str
        (utf-8) or bytes; ``json`` any JSON value; ``timeout`` seconds for the whole request; ``cache`` a fetch
        cache mode; with ``allow_redirects=False`` a 3xx is the response."""
        args, kwargs = _fetch_arguments(self.headers, method, url, params, headers, data, json, timeout, cache,
                                        allow_redirects, max_redirects)
        client = await self._connected()
        try:
            return Response(await client.fetch(*args, **kwargs))
        except FerryError as e:
            # The daemon restarted under a long-lived client: connect again once, then ask again.
            if e.code != ErrorCode.unavailable or not client.closed:
                raise
        return Response(await (await self._connected()).fetch(*args, **kwargs))

    async def get(self, url: str, **kw: Any) -> Response: return await self.request("GET", url, **kw)
    async def head(self, url: str, **kw: Any) -> Response: return await self.request("HEAD", url, **kw)
    async def post(self, url: str, **kw: Any) -> Response: return await self.request("POST", url, **kw)
    async def put(self, url: str, **kw: Any) -> Response: return await self.request("PUT", url, **kw)
    async def patch(self, url: str, **kw: Any) -> Response: return await self.request("PATCH", url, **kw)
    async def delete(self, url: str, **kw: Any) -> Response: return await self.request("DELETE", url, **kw)

    async def close(self) -> None:
        client, self._client = self._client, None
        if self._owns and client is not None:
            await client.close()

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


# The module functions' session, one per event loop (a connection belongs to the loop it was made in).
_shared: Optional[Tuple[asyncio.AbstractEventLoop, AsyncSession]] = None


def _shared_session() -> AsyncSession:
    global _shared
    loop = asyncio.get_running_loop()
    if _shared is None or _shared[0] is not loop:
        _shared = (loop, AsyncSession())
    return _shared[1]


async def close_shared() -> None:
    """Closes the connection of the module functions' session (they connect again when next used)."""
    if _shared is not None and _shared[0] is asyncio.get_running_loop():
        await _shared[1].close()


async def request(method: str, url: str, **kw: Any) -> Response:
    """``AsyncSession.request`` on the module's shared session (made on first use in each event loop)."""
    return await _shared_session().request(method, url, **kw)


async def get(url: str, **kw: Any) -> Response: return await _shared_session().request("GET", url, **kw)
async def head(url: str, **kw: Any) -> Response: return await _shared_session().request("HEAD", url, **kw)
async def post(url: str, **kw: Any) -> Response: return await _shared_session().request("POST", url, **kw)
async def put(url: str, **kw: Any) -> Response: return await _shared_session().request("PUT", url, **kw)
async def patch(url: str, **kw: Any) -> Response: return await _shared_session().request("PATCH", url, **kw)
async def delete(url: str, **kw: Any) -> Response: return await _shared_session().request("DELETE", url, **kw)
