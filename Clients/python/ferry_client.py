"""Compatibility module: the Ferry client used to be this one file; it is now the package ``ferry``
(Clients/python/ferry/). ``import ferry_client`` and ``from ferry_client import Client, FerryError, ...`` keep
working and give the very same objects as ``ferry``; new code should import ``ferry``.
"""

from ferry.cache import CacheEntry, CacheKey  # noqa: F401
from ferry.client import Client  # noqa: F401
from ferry.connection import _CLOSED, _CLOSING_CODES, _EVENT, _FINAL, LOCAL_DEADLINE_GRACE_S, _Pending  # noqa: F401
from ferry.errors import ERROR_CODES, FerryError, FerryProtocolError  # noqa: F401
from ferry.fetch import (  # noqa: F401
    _NO_JSON, FetchResponse, _byte_view_len, _fetch_response, _header_pairs, _json_body,
)
from ferry.framing import (  # noqa: F401
    DEFAULT_HANDSHAKE_FRAME_BYTES, DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_JSON_BYTES, DEFAULT_MAX_NESTING, HEADER,
    HEADER_SIZE, MAX_ID, MAX_TIMEOUT_MS, MIN_BODY_PART_BYTES, PROTOCOL_VERSION, Frame, FrameDecoder, _byte_view,
    _check_id, _split_request, check_request, decode_envelope, encode_frame, encode_json, split_request,
)
from ferry.image import Image  # noqa: F401
from ferry.paths import default_socket_path  # noqa: F401
from ferry.strictjson import _reject_constant, _reject_duplicates  # noqa: F401
from ferry.strictjson import is_int as _is_int  # noqa: F401
from ferry.strictjson import nesting_depth as _nesting_depth  # noqa: F401

__all__ = [   # as before the package: ``from ferry_client import *`` gives these
    "CacheEntry", "CacheKey", "Client", "FerryError", "FerryProtocolError", "FetchResponse", "FrameDecoder", "Image",
    "check_request", "decode_envelope", "default_socket_path", "encode_frame", "encode_json", "split_request",
    "PROTOCOL_VERSION", "ERROR_CODES", "MIN_BODY_PART_BYTES",
]
