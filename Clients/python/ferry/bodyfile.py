"""Bodies handed over as descriptors (PROTOCOL.md section 5, "Bodies as descriptors").

When the daemon offers the ``body_fd`` capability and a request asks with ``"body_fd": true``, a large body
(``limits["body_fd_min_bytes"]`` and up) does not cross the socket: the final frame's result names
``body_fd: {offset, length}`` and carries a descriptor (SCM_RIGHTS) of a read-only file or a sealed memory file
holding it. ``BodyFile`` owns that descriptor::

    with ferry.cache_get_file("model.bin") as body:     # a BodyFile, or None when the key is absent
        body.save("/tmp/model.bin")                     # copy_file_range: the bytes stay in the kernel
        data = body.read()                              # or read them (one copy)
"""

import os
from typing import Any, Callable

__all__ = ["BodyFile"]

_PIECE = 1 << 20


class BodyFile:
    """``length`` bytes from ``offset`` of the descriptor ``fd`` (owned: closed by ``close``, ``with`` or when
    collected). The bytes never change while it is open, whatever happens to the key in the daemon."""

    __slots__ = ("fd", "offset", "length")

    def __init__(self, fd: int, offset: int, length: int):
        self.fd = fd
        self.offset = offset
        self.length = length

    def __repr__(self) -> str:
        return f"BodyFile(fd={self.fd}, offset={self.offset}, length={self.length})"

    def __enter__(self) -> "BodyFile":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def read(self) -> bytes:
        """The bytes (one copy, from the page cache or the sealed memory)."""
        data = os.pread(self.fd, self.length, self.offset)
        if len(data) == self.length:
            return data
        parts = [data]
        got = len(data)
        while got < self.length:
            piece = os.pread(self.fd, min(_PIECE, self.length - got), self.offset + got)
            if not piece:
                raise OSError(f"the body's file ended after {got} of {self.length} bytes")
            parts.append(piece)
            got += len(piece)
        return b"".join(parts)

    def pieces(self, size: int = _PIECE):
        """The bytes in pieces of at most ``size``."""
        got = 0
        while got < self.length:
            piece = os.pread(self.fd, min(size, self.length - got), self.offset + got)
            if not piece:
                raise OSError(f"the body's file ended after {got} of {self.length} bytes")
            got += len(piece)
            yield piece

    def copy_to_fd(self, out_fd: int) -> None:
        """Writes the bytes to ``out_fd`` at its offset, in the kernel where it can (``copy_file_range``, then
        ``sendfile``), else by reading and writing."""
        offset, left = self.offset, self.length
        for how in ("copy_file_range", "sendfile", "write"):
            try:
                while left > 0:
                    if how == "copy_file_range":
                        n = os.copy_file_range(self.fd, out_fd, left, offset)
                    elif how == "sendfile":
                        n = os.sendfile(out_fd, self.fd, offset, left)
                    else:
                        piece = os.pread(self.fd, min(_PIECE, left), offset)
                        n = len(piece)
                        view = memoryview(piece)
                        while view:
                            view = view[os.write(out_fd, view):]
                    if n == 0:
                        raise OSError(f"the body's file ended {left} bytes early")
                    offset += n
                    left -= n
                return
            except (AttributeError, OSError) as e:
                # Not for this pair of files (another file system, a pipe, a terminal, an old kernel): next way.
                if how == "write" or (isinstance(e, OSError) and e.errno is None):
                    raise

    def copy_to(self, target: Any) -> None:
        """Writes the bytes to a binary file object (through its ``fileno()`` in the kernel when it has one, after
        flushing what it buffered) or hands them in pieces to a callable."""
        fileno = getattr(target, "fileno", None)
        if fileno is not None:
            try:
                fd = fileno()
            except (OSError, ValueError, AttributeError):
                fd = None
            if fd is not None:
                flush = getattr(target, "flush", None)
                if flush is not None:
                    flush()
                self.copy_to_fd(fd)
                seek = getattr(target, "seek", None)
                if seek is not None and getattr(target, "seekable", lambda: False)():
                    seek(0, os.SEEK_END)   # the file object's position follows what was written under it
                return
        write: Callable[[bytes], Any] = getattr(target, "write", None) or target
        for piece in self.pieces():
            write(piece)

    def save(self, path: str) -> None:
        """Writes the bytes to a new or truncated file at ``path``."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            self.copy_to_fd(fd)
        finally:
            os.close(fd)
