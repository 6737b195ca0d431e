"""HTTP through the daemon's shared cache (``fetch``, PROTOCOL.md section 6): ``FetchMixin`` and ``FetchResponse``.

Any HTTP status is a result, not an error::

    r = ferry.fetch("https://api.example.com/quotes/1")
    r.status, r.ok, r.cache_status, r.age_s        # -> 200, True, "hit", 12  ("miss" the first time)
    r.header("content-type"), r.json()              # -> "application/json", {...}
    r = ferry.fetch("https://api.example.com/quotes", "POST", json={"text": "hi"},
                    headers={"Authorization": "Bearer x"})  # compact JSON body, Content-Type set
    r = ferry.fetch(url, progress=lambda received, total: print(received, total))
"""

import json
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from .bodyfile import BodyFile
from .cache import given_args
from .errors import FerryError
from .strictjson import dumps_compact, is_int
from .wire import ErrorCode, EventName

__all__ = ["FetchResponse", "FetchMixin"]


class FetchResponse(NamedTuple):
    """The result of ``Client.fetch``: the HTTP response the daemon got (or had in its cache).

    ``status`` is the HTTP status (any status is a result, 404 and 500 included); ``headers`` the response header
    fields as ``(name, value)`` tuples in the order received, duplicates kept; ``url`` the URL of this response
    after ``redirects`` redirects were followed; ``cache_status`` one of ``"hit"``, ``"miss"``, ``"revalidated"``,
    ``"stale"``, ``"coalesced"``, ``"bypass"`` (the daemon's string, equal to a ``CacheStatus`` member) and
    ``age_s`` the response's age in seconds (None when the daemon did not say); ``timing`` the daemon's times in ms
    (``total_ms``, and for an origin exchange ``dns_ms``, ``connect_ms``, ``tls_ms``, ``first_byte_ms``,
    ``transfer_ms``); ``body`` the decoded body (``b""`` for HEAD).

    ::

        r = ferry.fetch(url)
        r.ok                           # 200 <= status <= 299
        r.header("Content-Type")       # the first value, names compared case-insensitively; None when absent
        r.header_values("set-cookie")  # every value, in order
        r.text(), r.json()             # the body as str (utf-8 unless told) or as parsed JSON
    """
    status: int
    headers: List[Tuple[str, str]]
    url: str
    redirects: int
    cache_status: Optional[str]
    age_s: Optional[int]
    timing: Dict[str, Any]
    body: bytes

    @property
    def ok(self) -> bool:
        """True for a status 200 … 299."""
        return 200 <= self.status <= 299

    def header(self, name: str) -> Optional[str]:
        """The value of the first header field called ``name`` (case-insensitive), or None."""
        lowered = name.lower()
        return next((value for key, value in self.headers if key.lower() == lowered), None)

    def header_values(self, name: str) -> List[str]:
        """The values of every header field called ``name`` (case-insensitive), in order; ``[]`` when absent."""
        lowered = name.lower()
        return [value for key, value in self.headers if key.lower() == lowered]

    def text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        """The body decoded as ``encoding`` (``errors`` as for ``bytes.decode``)."""
        return self.body.decode(encoding, errors)

    def json(self) -> Any:
        """The body parsed as JSON (UTF-8, -16 or -32); raises ``ValueError`` when it is not JSON."""
        return json.loads(self.body)

    def __repr__(self) -> str:
        body = self.body if len(self.body) <= 32 else self.body[:32] + b"..."
        return (f"FetchResponse(status={self.status}, url={self.url!r}, redirects={self.redirects}, "
                f"cache_status={self.cache_status!r}, age_s={self.age_s}, headers={len(self.headers)}, "
                f"body={len(self.body)} bytes {body!r})")


_NO_JSON = object()   # fetch(json=...) not given (json=None sends JSON null)


def _header_pairs(headers: Any) -> List[List[str]]:
    """``headers`` (None, a mapping, or pairs) as the wire's ``[[name, value], ...]``; ValueError for wrong types."""
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        items = list(headers.items())
    elif isinstance(headers, (str, bytes, bytearray, memoryview)) or not isinstance(headers, Iterable):
        raise ValueError(f"fetch: headers must be a dict or a list of (name, value) pairs, not "
                         f"{type(headers).__name__}")
    else:
        items = []
        for item in headers:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise ValueError(f"fetch: each header must be a (name, value) pair, not {item!r}")
            items.append(item)
    for name, value in items:
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"fetch: header names and values must be str, not {name!r}: {value!r}")
    return [[name, value] for name, value in items]


def _byte_view_len(body: Any) -> int:
    """The length in bytes of a bytes-like ``body``; 1 for anything else (it is not "no body")."""
    try:
        return memoryview(body).nbytes
    except TypeError:
        return 1


def _json_body(value: Any) -> bytes:
    try:
        return dumps_compact(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"fetch: json= value cannot be encoded as JSON: {e}") from None


def _fetch_response(url: str, result: dict, body: bytes, streamed: Optional[int] = None) -> FetchResponse:
    """A FetchResponse from a fetch result and its body (``streamed``: the body went to a sink instead, this many
    bytes); FerryError("internal") when the result is malformed."""
    status = result.get("status")
    raw_headers = result.get("headers", [])
    if not is_int(status) or not isinstance(raw_headers, list):
        raise FerryError(ErrorCode.internal, f"fetch of {url!r}: malformed result {result!r}")
    headers = []
    for pair in raw_headers:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise FerryError(ErrorCode.internal, f"fetch of {url!r}: malformed header field {pair!r}")
        headers.append((pair[0], pair[1]))
    size = result.get("size")
    got = len(body) if streamed is None else streamed
    if is_int(size) and size != got:
        raise FerryError(ErrorCode.internal,
                         f"fetch of {url!r}: result says size {size} but the body has {got} bytes")
    cache = result.get("cache") if isinstance(result.get("cache"), dict) else {}
    timing = result.get("timing") if isinstance(result.get("timing"), dict) else {}
    redirects = result.get("redirects", 0)
    return FetchResponse(status=status, headers=headers, url=result.get("url", url),
                         redirects=redirects if is_int(redirects) else 0,
                         cache_status=cache.get("status"), age_s=cache.get("age_s"), timing=dict(timing),
                         body=body)


def _progress_listener(progress: Callable[[int, Optional[int]], Any]) -> Callable[[str, dict], None]:
    """An ``on_event`` for ``Connection._collect`` that hands ``progress`` events to ``progress(received, total)``
    (``received`` from ``received``, or section 5's generic ``bytes``; ``total`` None unless an integer)."""
    def on_event(name: str, data: dict) -> None:
        if name == EventName.progress:
            received = data.get("received", data.get("bytes"))
            if is_int(received):
                total = data.get("total")
                progress(received, total if is_int(total) else None)
    return on_event


def _sink(to: Any) -> Optional[Callable[[bytes], Any]]:
    """Where ``fetch(to=...)`` writes the body: a callable, or the ``write`` of a file object."""
    if to is None:
        return None
    if callable(to):
        return to
    write = getattr(to, "write", None)
    if callable(write):
        return write
    raise ValueError(f"fetch: to must be a binary file or a callable taking bytes, not {to!r}")


class _FetchPlan:
    """The pure part of one ``fetch``, shared by ``FetchMixin.fetch`` and ``ferry.aio.AsyncClient.fetch``: the local
    checks (ValueError), the request's ``args`` and ``body``, the callbacks the reply is read with (``on_event``,
    ``sink``, ``give_head`` as ``before_final``) and the ``response`` made of the final reply. ``body_fd``: ask for
    a large complete body as a descriptor (only a client that reads descriptors does)."""

    def __init__(self, url: str, method: str, headers: Any, body: Any, json: Any, timeout_ms: Optional[int],
                 redirect: Optional[str], max_redirects: Optional[int], max_bytes: Optional[int],
                 cache: Optional[str], progress: Optional[Callable[[int, Optional[int]], Any]],
                 retry: Optional[bool], to: Any, on_head: Optional[Callable[["FetchResponse"], Any]],
                 body_fd: bool = False):
        if not isinstance(url, str):
            raise ValueError(f"fetch: url must be a str, not {type(url).__name__}")
        if not isinstance(method, str):
            raise ValueError(f"fetch: method must be a str, not {type(method).__name__}")
        pairs = _header_pairs(headers)
        if body is None:
            body = b""
        if json is not _NO_JSON:
            if _byte_view_len(body):
                raise ValueError("fetch: give either body or json, not both")
            body = _json_body(json)
            if not any(name.lower() == "content-type" for name, _ in pairs):
                pairs.append(["Content-Type", "application/json"])
        elif not isinstance(body, (bytes, bytearray, memoryview)):
            hint = " (encode a str first, or pass json=)" if isinstance(body, str) else ""
            raise ValueError(f"fetch: body must be bytes-like, not {type(body).__name__}{hint}")
        if progress is not None and not callable(progress):
            raise ValueError(f"fetch: progress must be a callable taking (received, total), not {progress!r}")
        sink = _sink(to)
        if on_head is not None and not callable(on_head):
            raise ValueError(f"fetch: on_head must be a callable taking a FetchResponse, not {on_head!r}")

        args: Dict[str, Any] = {"url": url}
        if method != "GET":
            args["method"] = method
        if pairs:
            args["headers"] = pairs
        for name, value in (("timeout_ms", timeout_ms), ("redirect", redirect), ("max_redirects", max_redirects),
                            ("max_bytes", max_bytes), ("cache", cache), ("retry", retry)):
            if value is not None:
                args[name] = value
        listeners: List[Callable[[str, dict], Any]] = []
        if progress is not None:
            args["progress"] = True
            listeners.append(_progress_listener(progress))
        if body_fd:
            args["body_fd"] = True   # a large complete body (a hit) comes as a descriptor, not through the socket
        if on_head is not None:
            listeners.append(lambda name, data: self.give_head(data) if name == EventName.head else None)

        self.url = url
        self.args = args
        self.body = body
        self._on_head = on_head
        self._head_seen = False
        self._listeners = listeners
        self._sink = sink
        self.written = 0
        # Where the reply goes (``Connection._collect``'s arguments): events to on_event, the body to sink.
        self.on_event = self._on_event if listeners else None
        self.sink = self._counting_sink if sink is not None else None
        # A body that came as a descriptor is copied to a file in the kernel.
        self.file_target = to if sink is not None and hasattr(to, "fileno") else None

    def give_head(self, result: dict) -> None:
        """Hands the response's head to ``on_head``, once: from the ``head`` event of a body that streams, or from
        the final result (a body small enough for the final frame comes without a head event: its head is the
        final result, given before that body reaches the sink)."""
        if self._on_head is not None and not self._head_seen:
            self._head_seen = True
            self._on_head(_fetch_response(self.url, {k: v for k, v in result.items() if k != "size"}, b""))

    def _on_event(self, name: str, data: dict) -> None:
        for listener in self._listeners:
            listener(name, data)

    def _counting_sink(self, piece: bytes) -> None:
        self.written += len(piece)
        self._sink(piece)

    def response(self, result: dict, data: Any) -> FetchResponse:
        """The FetchResponse of the final reply: its body, or ``b""`` when the body went to ``to``."""
        named = result.pop("body_fd", None)
        if self._sink is None:
            if isinstance(data, BodyFile):
                with data:
                    data = data.read()
            return _fetch_response(self.url, result, data)
        if isinstance(named, dict) and self.file_target is not None:
            self.written = int(named.get("length", 0))
        return _fetch_response(self.url, result, b"", streamed=self.written)


def _http_list_args(prefix: Optional[str], limit: Optional[int], cursor: Optional[str]) -> Dict[str, Any]:
    return given_args(prefix=prefix, limit=limit, cursor=cursor)


def _http_purge_args(url: Optional[str], prefix: Optional[str]) -> Dict[str, Any]:
    """``http.purge``'s args; ValueError unless exactly one of ``url`` and ``prefix`` is given."""
    if (url is None) == (prefix is None):
        raise ValueError("give url or prefix, one of them")
    return {"url": url} if url is not None else {"prefix": prefix}


class FetchMixin:
    """The ``fetch`` method of ``ferry.Client`` (built on ``Connection._start`` and ``Connection._collect``).

    Only what is obviously wrong is refused here, with ValueError: a url that is not a str, headers that are not a
    dict or a list of (str, str) pairs, a body that is not bytes-like, both body and json. Everything else (the URL
    itself, the method, header names and values, the modes and limits) is sent as given and judged by the daemon,
    which answers ``invalid_argument``.
    """

    def fetch(self, url: str, method: str = "GET",
              headers: Optional[Union[Mapping[str, str], Iterable[Tuple[str, str]]]] = None, body: bytes = b"",
              *, json: Any = _NO_JSON, timeout_ms: Optional[int] = None, redirect: Optional[str] = None,
              max_redirects: Optional[int] = None, max_bytes: Optional[int] = None, cache: Optional[str] = None,
              progress: Optional[Callable[[int, Optional[int]], Any]] = None,
              request_timeout_ms: Optional[int] = None, retry: Optional[bool] = None, to: Any = None,
              on_head: Optional[Callable[["FetchResponse"], Any]] = None) -> FetchResponse:
        """Makes an HTTP request through the daemon and its shared HTTP cache (PROTOCOL.md section 6, ``fetch``);
        returns a ``FetchResponse``. Any HTTP status, 404 and 500 included, is a result, not an error.

        ``headers``: a dict, or a list of ``(name, value)`` pairs (order and duplicates kept). ``body``: bytes-like
        (None: none), sent as the request body, in parts when larger than a frame; ``GET`` and ``HEAD`` take
        none, so pass ``method`` too. ``json=obj`` instead of ``body`` sends ``obj`` as compact UTF-8 JSON, with
        ``Content-Type: application/json`` unless ``headers`` name a Content-Type. The keyword arguments are the
        daemon's, left out when None:

        - ``timeout_ms``: limit of each exchange with the origin (``deadline_exceeded``);
        - ``redirect``: ``"follow"`` (default), ``"manual"`` (a 3xx is the result) or ``"error"`` (a
          ``RedirectMode`` member is the same);
        - ``max_redirects`` (default 10), ``max_bytes`` (largest response body, default the daemon's ``--max-fetch-bytes``, 8 GiB);
        - ``cache``: ``"default"``, ``"no-store"``, ``"reload"``, ``"no-cache"``, ``"force-cache"`` or
          ``"only-if-cached"`` (nothing stored → status 504), or a ``CacheMode`` member;
        - ``progress``: a callable, called as ``progress(received, total)`` (``total`` None when unknown) while the
          daemon downloads, at most every 100 ms; an exception from it cancels the request and propagates;
        - ``request_timeout_ms``: the deadline of the whole request (the envelope's ``timeout_ms``); the local
          wait is bounded by it too (else by the Client's ``timeout``);
        - ``retry``: True lets the daemon send a POST, PUT, PATCH or DELETE again when a reused connection died
          before the answer (by default it never sends one twice, and fails ``unavailable``);
        - ``to``: a binary file (anything with ``write``) or a callable taking bytes: the body goes there as it
          arrives, in pieces, and the returned response's ``body`` is ``b""`` (a download of any size, never held
          whole); an exception from it cancels the request and propagates;
        - ``on_head``: a callable, called once with the response's head (a ``FetchResponse`` with an empty body)
          before any of the body reaches ``to``, as soon as the daemon knows it (a body that streams) or with the
          final reply (a small one); an exception from it cancels the request (e.g. to refuse an error status
          before writing a byte).

        ::

            r = ferry.fetch("https://example.com/data.json", headers={"Accept": "application/json"})
            if r.ok:
                data = r.json()
            r = ferry.fetch(url, "PUT", [("X-Tag", "a"), ("X-Tag", "b")], b"\\x00raw", cache="no-store")
            r = ferry.fetch(url, "POST", json={"q": 1}, request_timeout_ms=30_000)
            r = ferry.fetch(url, redirect="manual")       # r.status == 302, r.header("Location")
            with open("big.iso", "wb") as f:
                r = ferry.fetch(url, to=f)                # written as it arrives; r.body == b""

        Raises ValueError for the local checks above; FerryError from the daemon: ``invalid_argument`` (bad URL,
        scheme, method or header), ``unavailable`` (DNS, connection, TLS, a reset or truncated response;
        ``details`` has ``curl_code`` and ``curl_message``), ``deadline_exceeded``, ``resource_exhausted`` (body
        over ``max_bytes``; ``details["max_bytes"]``), ``failed_precondition`` (too many redirects, a redirect with
        ``redirect="error"`` or to another scheme)."""
        plan = _FetchPlan(url, method, headers, body, json, timeout_ms, redirect, max_redirects, max_bytes, cache,
                          progress, retry, to, on_head, body_fd=self.offers_body_fd)
        deadline = self._deadline(None, request_timeout_ms)
        pending = self._start("fetch", plan.args, plan.body, request_timeout_ms, deadline)
        result, data = self._collect(pending, deadline, plan.on_event, plan.sink,
                                     before_final=plan.give_head, file_target=plan.file_target)
        return plan.response(result, data)

    # ----- the shared HTTP cache, inspected and purged (http.*)

    def http_list(self, prefix: Optional[str] = None, limit: Optional[int] = None) -> Iterator[dict]:
        """Every URL the shared HTTP cache holds whose stored (normalised) form starts with ``prefix``, in byte
        order, as the daemon's dicts: ``url``, ``bytes``, ``partitions`` and either ``status``, ``size``, ``age_s``,
        ``fresh`` or, for responses with ``Vary``, ``vary`` and ``variants``. Pages of ``limit`` (at most 1000)
        are fetched as the iterator goes; the first at once, so bad arguments raise here."""
        def page(cursor: Optional[str]) -> Tuple[list, Optional[str]]:
            result, _ = self.call("http.list", _http_list_args(prefix, limit, cursor))
            return result.get("urls", []), result.get("cursor")

        first, cursor = page(None)

        def pages() -> Iterator[dict]:
            urls, next_cursor = first, cursor
            while True:
                yield from urls
                if next_cursor is None:
                    return
                urls, next_cursor = page(next_cursor)
        return pages()

    def http_show(self, url: str) -> Optional[dict]:
        """What the shared HTTP cache holds for ``url`` (its responses with headers, ``age_s``, ``lifetime_s``,
        ``fresh``; partitions by count only), or None when nothing is stored for it."""
        try:
            result, _ = self.call("http.show", {"url": url})
        except FerryError as e:
            if e.code == ErrorCode.not_found.value:
                return None
            raise
        return result

    def http_purge(self, url: Optional[str] = None, *, prefix: Optional[str] = None) -> int:
        """Removes what the HTTP cache (and the image loader's memory) holds for ``url``, or for every URL starting
        with ``prefix`` (one of the two); returns how many URLs were removed."""
        result, _ = self.call("http.purge", _http_purge_args(url, prefix))
        return int(result.get("purged", 0))
