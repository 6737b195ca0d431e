"""The protocol's wire words (PROTOCOL.md) as ``str`` enums.

Each member *is* the string the daemon sends or accepts: ``CacheStatus.hit == "hit"``, it hashes like that string
(so ``"no-store" in {CacheMode.no_store}``), ``str()`` and f-strings give the wire word, and ``json`` encodes it as
the plain string. The client returns the daemon's strings unchanged (a ``FetchResponse.cache_status`` is a ``str``,
not a ``CacheStatus``); compare them with these members, or pass members where an argument takes a wire word::

    r = ferry.fetch(url, cache=CacheMode.no_cache, redirect=RedirectMode.manual)
    if r.cache_status == CacheStatus.hit:
        ...

A daemon of a later version may send words that are not listed here (new events in particular, PROTOCOL.md
section 9); ``CacheStatus("new-word")`` raises ValueError, so convert only where that is what you want.
"""

import enum

__all__ = ["WireWord", "CacheStatus", "ImageSource", "ImageFit", "ImageOutputFormat", "EventName", "CacheMode",
           "RedirectMode", "BodyKind", "ErrorCode"]


class WireWord(str, enum.Enum):
    """Base of the enums below: a member behaves as its value (equality, hashing, ``str``, ``format``)."""

    def __str__(self) -> str:
        return self._value_

    def __format__(self, format_spec: str) -> str:
        return format(self._value_, format_spec)

    def __hash__(self) -> int:
        return hash(self._value_)


class CacheStatus(WireWord):
    """``fetch`` result ``cache.status`` (PROTOCOL.md section 6, ``fetch``)."""
    hit = "hit"                    # served from the cache
    stale = "stale"                # served stale (stale-while-revalidate, stale-if-error)
    revalidated = "revalidated"    # the stored response was confirmed by a 304
    coalesced = "coalesced"        # shared with an identical request already on its way to the origin
    miss = "miss"                  # fetched from the origin
    bypass = "bypass"              # a cache mode that skips the cache


class ImageSource(WireWord):
    """``image.get`` result ``source``: where the daemon found the image."""
    memory = "memory"              # the loader's memory tier
    disk = "disk"                  # the HTTP cache answered
    network = "network"            # downloaded now, or shared with another client's download
    made = "made"                  # a variant made now from its original


class ImageFit(WireWord):
    """``image.get`` ``fit``: how a variant fills its box (CSS object-fit's and sharp's words)."""
    inside = "inside"              # as large as fits inside, aspect kept (the default)
    cover = "cover"                # fills the box, aspect kept, the overflow cropped around the centre
    contain = "contain"            # exactly the box, the image inside it, the rest transparent (white for JPEG)
    fill = "fill"                  # exactly the box, stretched
    outside = "outside"            # as small as covers the box, aspect kept, nothing cropped


class ImageOutputFormat(WireWord):
    """``image.get`` ``format``: the encoding of a variant."""
    original = "original"          # the original's format when it can be written, PNG otherwise
    jpeg = "jpeg"
    png = "png"
    webp = "webp"
    avif = "avif"


class EventName(WireWord):
    """Names of the event frames the daemon sends (``"event"`` of a frame with ``"final": false``)."""
    chunk = "chunk"                # a part of a reply body too large for one frame (data: offset)
    progress = "progress"          # fetch download progress (data: received or bytes, total?)
    tick = "tick"                  # ping's test events (data: n)
    head = "head"                  # fetch whose body streams: the result's fields before the first chunk


class CacheMode(WireWord):
    """``fetch`` / ``image.get`` argument ``cache``: the WHATWG fetch cache mode."""
    default = "default"
    no_store = "no-store"          # neither read nor write the cache
    reload = "reload"              # don't read, do store
    no_cache = "no-cache"          # always validate a stored response
    force_cache = "force-cache"    # any stored response, however stale
    only_if_cached = "only-if-cached"   # only a stored response; none: status 504


class RedirectMode(WireWord):
    """``fetch`` argument ``redirect``."""
    follow = "follow"              # the default
    manual = "manual"              # a 3xx is the result
    error = "error"                # a 3xx is a failed_precondition error


class BodyKind(WireWord):
    """``describe``: an operation's ``body`` field, what it does with a request body."""
    none = "none"                  # takes none
    echo = "echo"                  # echoes it (ping)
    value = "value"                # stores it (cache.set)
    http = "http"                  # sends it to the origin (fetch)


class ErrorCode(WireWord):
    """The error codes of PROTOCOL.md section 8 (closed within a protocol version)."""
    invalid_argument = "invalid_argument"
    failed_precondition = "failed_precondition"
    not_found = "not_found"
    already_exists = "already_exists"
    deadline_exceeded = "deadline_exceeded"
    cancelled = "cancelled"
    unavailable = "unavailable"
    resource_exhausted = "resource_exhausted"
    permission_denied = "permission_denied"
    unimplemented = "unimplemented"
    internal = "internal"
    protocol_error = "protocol_error"
    invalid_image = "invalid_image"
