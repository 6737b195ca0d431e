"""The exceptions of the Ferry client: ``FerryError`` (an error reply, or a local failure named with a protocol error
code) and its subclass ``FerryProtocolError`` (the byte stream broke the framing rules)."""

from typing import Any, Optional

from .wire import ErrorCode

__all__ = ["ERROR_CODES", "FerryError", "FerryProtocolError"]

# The codes of PROTOCOL.md section 8, as plain strings.
ERROR_CODES = frozenset(code.value for code in ErrorCode)


class FerryError(Exception):
    """An error reply from ferryd, or a local failure described with a protocol error code.

    ``code`` is one of ERROR_CODES (a code this client does not know becomes ``internal``, the original is kept in
    ``wire_code``); ``message`` is human-readable; ``details`` is a dict (possibly empty).
    """

    def __init__(self, code: str, message: str, details: Optional[dict] = None):
        if isinstance(code, ErrorCode):
            code = code.value          # ``code`` and ``wire_code`` are plain str, as the daemon's are
        self.wire_code = code
        self.code = code if code in ERROR_CODES else ErrorCode.internal.value
        self.message = message
        self.details = details if isinstance(details, dict) else {}
        super().__init__(f"{self.code}: {message}")

    @staticmethod
    def make(code: str, message: str, details: Optional[dict] = None) -> "FerryError":
        """A FerryError, or a FerryProtocolError for code ``protocol_error``."""
        if code == ErrorCode.protocol_error:
            return FerryProtocolError(message, details)
        return FerryError(code, message, details)

    @classmethod
    def from_wire(cls, error: Any) -> "FerryError":
        """Builds the exception for the ``error`` object of a final reply."""
        if not isinstance(error, dict):
            return FerryProtocolError(f"malformed error object in reply: {error!r}")
        code = error.get("code")
        message = error.get("message")
        code = code if isinstance(code, str) else ErrorCode.internal.value
        message = message if isinstance(message, str) else "(no message)"
        return cls.make(code, message, error.get("details"))


class FerryProtocolError(FerryError):
    """The byte stream broke the framing rules (code ``protocol_error``); the connection cannot be used further."""

    def __init__(self, message: str, details: Optional[dict] = None):
        super().__init__(ErrorCode.protocol_error, message, details)
