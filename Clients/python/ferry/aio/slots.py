"""The requests of one ``AsyncConnection`` on the wire, at most the daemon's ``max_in_flight`` (``_Slots``).

Past that limit the daemon refuses a request with ``resource_exhausted``; a program that gathers a thousand
``cache_get``s on one client means them all, so the client holds the extra ones and sends each as a reply frees a
slot, oldest first. ``cancel`` requests take no slot (the daemon exempts them too)::

    await slots.take()     # before a request's first frame: now, or once a slot is free
    slots.free()           # its final reply came (or it was never sent)
"""

import asyncio
import collections

__all__ = ["_Slots"]


class _Slots:
    """A counting gate with a FIFO of waiters; ``limit`` is set from ``hello`` (256 until then, the default)."""

    def __init__(self) -> None:
        self.limit = 256
        self.on_wire = 0
        self._waiting: "collections.deque[asyncio.Future]" = collections.deque()
        self._open = False

    async def take(self) -> None:
        if self._open or (self.on_wire < self.limit and not self._waiting):
            self.on_wire += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter   # resolved by `free` with the slot already counted
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.free()   # the slot came at the moment the task was cancelled: pass it on
            else:
                try:
                    self._waiting.remove(waiter)
                except ValueError:
                    pass
            raise

    def free(self) -> None:
        self.on_wire -= 1
        while self._waiting and (self._open or self.on_wire < self.limit):
            waiter = self._waiting.popleft()
            if waiter.done():
                continue   # cancelled while waiting
            self.on_wire += 1
            waiter.set_result(None)

    def open_all(self) -> None:
        """The connection ended: every waiter goes on (to meet the closed connection), and no one waits again."""
        self._open = True
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
