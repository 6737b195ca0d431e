"""``Client``: a connection to ferryd (``Connection``) with every operation family (``CacheMixin``, ``FetchMixin``,
``ImageMixin``)."""

from .cache import CacheMixin
from .connection import Connection
from .fetch import FetchMixin
from .image import ImageMixin

__all__ = ["Client"]


class Client(CacheMixin, FetchMixin, ImageMixin, Connection):
    """A connection to ferryd.

    ``Client(path=None, name="python", timeout=None)``: ``path`` defaults to default_socket_path(); ``name`` is
    sent in ``hello``; ``timeout`` (seconds) bounds connecting and is the local wait limit of requests sent without
    ``timeout_ms`` (None: wait as long as it takes). Requests with ``timeout_ms`` wait locally for that plus a short
    grace, then raise ``deadline_exceeded`` and send a ``cancel``.

    Thread-safe: any number of threads may call, stream, send and wait at once. When the connection closes, every
    waiter gets a FerryError (``unavailable``, or the code the server named in its last connection-level error).

    A request body larger than one frame is sent in parts (see ``split_request``); ``send``, ``call``, ``stream``
    and the cache methods return once all parts are written, and the frames of other requests wait meanwhile.
    Sending is refused locally with ``resource_exhausted`` only when the envelope's JSON exceeds the server's
    ``max_json_bytes`` or leaves less than MIN_BODY_PART_BYTES of a frame for a body that needs splitting; a body
    over the server's ``max_value_bytes`` is refused by the server (``resource_exhausted``, nothing stored).
    """
