"""``ferry.get``, ``ferry.post``, …: HTTP through ferryd with the habits of ``requests``.

::

    import ferry

    r = ferry.get("https://api.example.com/quotes", params={"page": 2}, timeout=5)
    r.raise_for_status()
    r.status_code, r.headers["content-type"], r.json(), r.from_cache

    with ferry.Session(headers={"Authorization": "Bearer " + token}) as s:
        s.post("https://api.example.com/search", json={"text": "courage"})

Times are seconds (a number or a ``datetime.timedelta``), as a person writes them. The module-level functions share
one ``Client`` (made on first use, made again when the daemon restarted); a ``Session`` has its own.
"""

import datetime
import threading
import urllib.parse
from typing import Any, Dict, Iterable, Iterator, Mapping, MutableMapping, Optional, Tuple, Union

from . import daemon
from .cache import _seconds_to_ms
from .client import Client
from .errors import FerryError
from .fetch import _NO_JSON, FetchResponse
from .wire import CacheStatus, ErrorCode

__all__ = ["Headers", "HTTPError", "Response", "Session", "request", "get", "head", "post", "put", "patch", "delete",
           "seconds_to_ms"]

Timeout = Union[None, int, float, datetime.timedelta]


def seconds_to_ms(value: Timeout) -> Optional[int]:
    """Seconds (int, float or timedelta) as whole milliseconds, at least 1; None stays None."""
    return None if value is None else _seconds_to_ms(value)


class Headers(MutableMapping[str, str]):
    """Response header fields, names compared case-insensitively; a name sent several times reads as its values
    joined by ``", "`` (as ``requests`` does); ``items_all()`` keeps every field in order."""

    def __init__(self, pairs: Iterable[Tuple[str, str]] = ()):
        self._pairs = [(str(n), str(v)) for n, v in pairs]

    def __getitem__(self, name: str) -> str:
        values = [v for n, v in self._pairs if n.lower() == name.lower()]
        if not values:
            raise KeyError(name)
        return ", ".join(values)

    def __setitem__(self, name: str, value: str) -> None:
        if name in self:
            del self[name]
        self._pairs.append((name, value))

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._pairs = [(n, v) for n, v in self._pairs if n.lower() != name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(n.lower() == name.lower() for n, _ in self._pairs)

    def __iter__(self) -> Iterator[str]:
        seen = set()
        for n, _ in self._pairs:
            if n.lower() not in seen:
                seen.add(n.lower())
                yield n

    def __len__(self) -> int:
        return len({n.lower() for n, _ in self._pairs})

    def items_all(self):
        """Every field as ``(name, value)``, in the order received, duplicates kept."""
        return list(self._pairs)

    def __repr__(self) -> str:
        return f"Headers({dict(self)!r})"


class HTTPError(FerryError):
    """``Response.raise_for_status()`` for a status of 400 or more; ``.response`` is the response."""

    def __init__(self, response: "Response"):
        self.response = response
        kind = "Client Error" if response.status_code < 500 else "Server Error"
        super().__init__(ErrorCode.failed_precondition, f"{response.status_code} {kind}: {response.reason} for url: {response.url}",
                         {"status": response.status_code})


_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 206: "Partial Content", 301: "Moved Permanently",
            302: "Found", 303: "See Other", 304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect",
            400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            408: "Request Timeout", 409: "Conflict", 410: "Gone", 412: "Precondition Failed", 413: "Content Too Large",
            416: "Range Not Satisfiable", 422: "Unprocessable Content", 429: "Too Many Requests",
            500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
            504: "Gateway Timeout"}


class Response:
    """What ``ferry.get`` and friends return: ``status_code``, ``headers`` (case-insensitive), ``content`` (bytes),
    ``text``, ``json()``, ``ok``, ``raise_for_status()``, ``url`` (after redirects), ``reason``, ``elapsed``, and
    Ferry's own ``from_cache`` (answered by the shared cache: a hit, or revalidated, or stale) and ``cache_status``.
    ``raw`` is the ``FetchResponse`` it was made of."""

    def __init__(self, raw: FetchResponse):
        self.raw = raw
        self.status_code = raw.status
        self.headers = Headers(raw.headers)
        self.content = raw.body
        self.url = raw.url
        self.cache_status = raw.cache_status
        self.elapsed = datetime.timedelta(milliseconds=float(raw.timing.get("total_ms", 0) or 0))

    @property
    def ok(self) -> bool:
        """True below 400, as ``requests``' (a 3xx answered with ``allow_redirects=False`` is ok)."""
        return self.status_code < 400

    @property
    def reason(self) -> str:
        return _REASONS.get(self.status_code, "")

    @property
    def from_cache(self) -> bool:
        return self.cache_status in (CacheStatus.hit, CacheStatus.revalidated, CacheStatus.stale)

    @property
    def encoding(self) -> str:
        """The charset the Content-Type names, else utf-8."""
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value:
                return value.strip('"')
        return "utf-8"

    @property
    def text(self) -> str:
        return self.content.decode(self.encoding, "replace")

    def json(self, **kwargs: Any) -> Any:
        import json
        return json.loads(self.content, **kwargs)

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise HTTPError(self)

    def __repr__(self) -> str:
        return f"<Response [{self.status_code}]>"


def _with_params(url: str, params: Any) -> str:
    if not params:
        return url
    query = urllib.parse.urlencode(params, doseq=True) if not isinstance(params, (str, bytes)) else (
        params.decode() if isinstance(params, bytes) else params)
    return url + ("&" if "?" in url else "?") + query


def _fetch_arguments(session_headers: Mapping[str, str], method: str, url: str, params: Any,
                     headers: Optional[Mapping[str, str]], data: Any, json: Any, timeout: Timeout,
                     cache: Optional[str], allow_redirects: bool,
                     max_redirects: Optional[int]) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    """The ``(args, kwargs)`` of the ``fetch`` a ``request`` makes (shared by ``Session`` and
    ``ferry.aio.AsyncSession``): ``params`` in the query, the session's headers under the request's, ``data``
    form-encoded (a mapping or a list of pairs), UTF-8 (a str) or as bytes, ``timeout`` in seconds as both the
    exchange's and the whole request's limit, ``allow_redirects=False`` as ``redirect="manual"``."""
    fields = {**session_headers, **dict(headers or {})}
    body = b""
    if data is not None:
        if isinstance(data, Mapping) or (isinstance(data, list) and data and isinstance(data[0], tuple)):
            body = urllib.parse.urlencode(data, doseq=True).encode()
            if not any(k.lower() == "content-type" for k in fields):
                fields["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            body = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    ms = seconds_to_ms(timeout)
    kwargs: Dict[str, Any] = {"timeout_ms": ms, "request_timeout_ms": ms, "cache": cache, "max_redirects": max_redirects,
                              "redirect": None if allow_redirects else "manual"}
    if json is not _NO_JSON:
        kwargs["json"] = json
    return (_with_params(url, params), method.upper(), list(fields.items()), body), kwargs


def _init_session_state(session: Any, headers: Optional[Mapping[str, str]], client: Any, socket_path: Optional[str],
                        autostart: bool, daemon_args: Iterable[str]) -> None:
    """What a session starts with, the blocking one (``Session``) and the asyncio one (``ferry.aio.AsyncSession``)
    alike: its default headers, its client (owned when it makes one) and how to make it."""
    session.autostart = autostart
    session.daemon_args = list(daemon_args)
    session.headers = dict(headers or {})
    session._client = client
    session._owns = client is None
    session._socket_path = socket_path


class Session:
    """A ``Client`` of its own, with default ``headers`` for every request; a context manager, as ``requests``'
    Session. ``Session(client=c)`` uses an existing client (not closed by the session). It starts ferryd when none
    answers (``autostart``; ``daemon_args`` are more of ferryd's options), and connects again after a restart."""

    def __init__(self, headers: Optional[Mapping[str, str]] = None, client: Optional[Client] = None, socket_path: Optional[str] = None,
                 autostart: bool = True, daemon_args: Iterable[str] = ()):
        _init_session_state(self, headers, client, socket_path, autostart, daemon_args)
        self._lock = threading.Lock()

    def _connected(self) -> Client:
        with self._lock:
            if self._client is None or self._client.closed:
                if not self._owns and self._client is not None:
                    raise FerryError(ErrorCode.unavailable, "the session's client is closed")
                # ferryd started in the background when none answers, as the CLI does (ferry.daemon).
                self._client = daemon.connect(self._socket_path, name="python-session", autostart=self.autostart,
                                              daemon_args=self.daemon_args)
            return self._client

    def request(self, method: str, url: str, params: Any = None, headers: Optional[Mapping[str, str]] = None,
                data: Any = None, json: Any = _NO_JSON, timeout: Timeout = None, cache: Optional[str] = None,
                allow_redirects: bool = True, max_redirects: Optional[int] = None) -> Response:
        """One request: ``params`` into the query; ``data`` a dict (form-encoded), str (utf-8) or bytes; ``json``
        any JSON value; ``timeout`` seconds for the whole request; ``cache`` a fetch cache mode; with
        ``allow_redirects=False`` a 3xx is the response."""
        args, kwargs = _fetch_arguments(self.headers, method, url, params, headers, data, json, timeout, cache,
                                        allow_redirects, max_redirects)

        def send(client: Client) -> FetchResponse:
            return client.fetch(*args, **kwargs)

        client = self._connected()
        try:
            return Response(send(client))
        except FerryError as e:
            # The daemon restarted under a long-lived client: connect again once, then ask again.
            if e.code != ErrorCode.unavailable or not client.closed:
                raise
        return Response(send(self._connected()))

    def get(self, url: str, **kw: Any) -> Response: return self.request("GET", url, **kw)
    def head(self, url: str, **kw: Any) -> Response: return self.request("HEAD", url, **kw)
    def post(self, url: str, **kw: Any) -> Response: return self.request("POST", url, **kw)
    def put(self, url: str, **kw: Any) -> Response: return self.request("PUT", url, **kw)
    def patch(self, url: str, **kw: Any) -> Response: return self.request("PATCH", url, **kw)
    def delete(self, url: str, **kw: Any) -> Response: return self.request("DELETE", url, **kw)

    def close(self) -> None:
        with self._lock:
            if self._owns and self._client is not None:
                self._client.close()
            self._client = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_shared = Session()


def request(method: str, url: str, **kw: Any) -> Response:
    """``Session.request`` on the module's shared session."""
    return _shared.request(method, url, **kw)


def get(url: str, **kw: Any) -> Response: return _shared.request("GET", url, **kw)
def head(url: str, **kw: Any) -> Response: return _shared.request("HEAD", url, **kw)
def post(url: str, **kw: Any) -> Response: return _shared.request("POST", url, **kw)
def put(url: str, **kw: Any) -> Response: return _shared.request("PUT", url, **kw)
def patch(url: str, **kw: Any) -> Response: return _shared.request("PATCH", url, **kw)
def delete(url: str, **kw: Any) -> Response: return _shared.request("DELETE", url, **kw)
