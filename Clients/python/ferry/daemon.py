"""Starting ``ferryd`` when none answers, as the ``ferry`` CLI and Swift's ``FerryDaemon`` do (sccache's habit).

::

    from ferry.daemon import connect
    client = connect(name="my-tool")                 # a Client; ferryd started in the background if needed

The executable is ``$FERRYD`` when set, else ``ferryd`` on ``PATH``; it runs in its own session (a terminal's Ctrl-C
does not reach it), its log appended to ``ferryd.log`` beside the socket. ``FERRY_NO_AUTOSTART=1`` turns this off.
Several programs starting at once each spawn one; the daemons race for the socket's lock, one wins, the others exit,
and every caller waits until the winner answers.
"""

import os
import shutil
import subprocess
import time
from typing import List, Optional, Sequence

from .client import Client
from .errors import FerryError
from .paths import default_socket_path
from .wire import ErrorCode

__all__ = ["connect", "find_ferryd", "start_ferryd"]


def find_ferryd() -> Optional[str]:
    """``$FERRYD``, else ``ferryd`` on PATH; None when neither is there."""
    explicit = os.environ.get("FERRYD")
    if explicit and os.access(explicit, os.X_OK):
        return explicit
    return shutil.which("ferryd")


def start_ferryd(path: str, daemon_args: Sequence[str] = ()) -> subprocess.Popen:
    """Spawns ferryd on ``path`` in the background, detached, its log beside the socket."""
    binary = find_ferryd()
    if binary is None:
        raise FerryError(ErrorCode.unavailable, "cannot find the ferryd executable ($FERRYD, or ferryd on PATH)")
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    log = os.open(os.path.join(directory, "ferryd.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        args: List[str] = [binary, "--socket", path, *daemon_args]
        return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                start_new_session=True, close_fds=True)
    finally:
        os.close(log)


def connect(path: Optional[str] = None, name: str = "python", timeout: Optional[float] = None, autostart: bool = True,
            daemon_args: Sequence[str] = (), ready_seconds: float = 10.0) -> Client:
    """A connected ``Client``; with ``autostart`` (and no ``FERRY_NO_AUTOSTART``), ferryd is started first when none
    answers on ``path``. Raises ``FerryError("unavailable")`` when none answers in ``ready_seconds``."""
    path = path or default_socket_path()
    try:
        return Client(path, name=name, timeout=timeout).connect()
    except FerryError as e:
        if not _may_autostart(e, autostart):
            raise
    starter = _Autostart(path, daemon_args, ready_seconds)
    while starter.waiting():
        try:
            return Client(path, name=name, timeout=timeout).connect()
        except FerryError as e:
            if e.code != ErrorCode.unavailable:
                raise
        delay = starter.respawn_delay()
        if delay is not None:
            time.sleep(delay)
            starter.respawn()
        time.sleep(_POLL_SECONDS)
    raise starter.failure()


# ----- the steps of connect(), shared with ferry.aio.connect (which sleeps with asyncio and spawns in a thread)

_POLL_SECONDS = 0.01


def _may_autostart(error: FerryError, autostart: bool) -> bool:
    """Whether a failed first connect should start ferryd: nobody answered (``unavailable``), ``autostart`` is on
    and ``FERRY_NO_AUTOSTART`` does not turn it off."""
    return (error.code == ErrorCode.unavailable and autostart
            and os.environ.get("FERRY_NO_AUTOSTART", "0") in ("", "0"))


class _Autostart:
    """One autostart: spawns ferryd at once, then tells the connect loop how long it may keep trying
    (``waiting``) and when to spawn again (``respawn_delay``, then ``respawn``)."""

    def __init__(self, path: str, daemon_args: Sequence[str], ready_seconds: float):
        self.path = path
        self.daemon_args = daemon_args
        self.ready_seconds = ready_seconds
        self.child = start_ferryd(path, daemon_args)
        self.deadline = time.monotonic() + ready_seconds
        self.respawns = 0

    def waiting(self) -> bool:
        return time.monotonic() < self.deadline

    def respawn_delay(self) -> Optional[float]:
        """Seconds to wait before spawning again, or None. Lost the start race, or an old daemon still held the
        lock: spawn again, a few times at most."""
        if self.child.poll() is not None and self.respawns < 5:
            self.respawns += 1
            return 0.1 * self.respawns
        return None

    def respawn(self) -> None:
        self.child = start_ferryd(self.path, self.daemon_args)

    def failure(self) -> FerryError:
        return FerryError(ErrorCode.unavailable, f"ferryd did not answer on {self.path} within "
                                                 f"{self.ready_seconds:g} s; see "
                                                 f"{os.path.join(os.path.dirname(self.path), 'ferryd.log')}")
