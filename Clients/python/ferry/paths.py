"""Where ferryd listens: ``default_socket_path`` (PROTOCOL.md section 1)."""

import os
from typing import Dict, Optional

__all__ = ["default_socket_path"]


def default_socket_path(environ: Optional[Dict[str, str]] = None) -> str:
    """Where ferryd listens (PROTOCOL.md section 1): $FERRY_SOCKET, else $XDG_RUNTIME_DIR/ferry/ferryd.sock,
    else /tmp/ferry-$UID/ferryd.sock. Empty variables count as unset."""
    env = os.environ if environ is None else environ
    if env.get("FERRY_SOCKET"):
        return env["FERRY_SOCKET"]
    if env.get("XDG_RUNTIME_DIR"):
        return os.path.join(env["XDG_RUNTIME_DIR"], "ferry", "ferryd.sock")
    return f"/tmp/ferry-{os.getuid()}/ferryd.sock"
