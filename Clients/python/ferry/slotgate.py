"""The requests of one ``ferry.Client`` on the wire, at most the daemon's ``max_in_flight`` (``_SlotGate``).

Past that limit the daemon refuses a request with ``resource_exhausted``; a program that sends a thousand requests
before it waits (``send``), or runs more threads on one client than the limit, means them all, so the client holds the
extra ones and sends each as a final reply frees a slot, oldest first. ``cancel`` requests take no slot (the daemon
exempts them too). The gate only counts and queues; the connection decides who reads meanwhile: a held thread reads
replies itself when no other thread does, since a slot frees only when a reply is read::

    with lock:
        if not gate.try_take():          # a slot now, or a place in the queue
            ticket = gate.hold()
            while not gate.take_if_turn(ticket):
                gate.turn.wait()         # (or read replies, when nobody else does)
    ...
    with lock:
        gate.free()                      # its final reply came (or it was never sent)

The ``ferry.aio`` client has its own (``ferry.aio.slots``): it waits on futures, this one on a condition.
"""

import collections
import threading

__all__ = ["_SlotGate"]

# The daemon's default max_in_flight, used until ``hello`` says otherwise.
_DEFAULT_LIMIT = 256


class _SlotGate:
    """A counting gate with a FIFO of held requests. Every method runs under the connection's lock, which ``turn``
    (the condition held threads wait on) shares."""

    def __init__(self, lock: "threading.Lock") -> None:
        self.limit = _DEFAULT_LIMIT
        self.on_wire = 0
        self.turn = threading.Condition(lock)
        self._held: "collections.deque[object]" = collections.deque()
        self._open = False

    def try_take(self) -> bool:
        """Takes a slot if one is free and nobody is held before this request."""
        if self._open or (self.on_wire < self.limit and not self._held):
            self.on_wire += 1
            return True
        return False

    def hold(self) -> object:
        """Queues a request that found no slot; returns its ticket for ``take_if_turn`` and ``drop``."""
        ticket = object()
        self._held.append(ticket)
        return ticket

    def take_if_turn(self, ticket: object) -> bool:
        """Takes a slot for a held request if it is first in the queue and a slot is free (or the gate is open)."""
        if self._held[0] is not ticket or not (self._open or self.on_wire < self.limit):
            return False
        self._held.popleft()
        self.on_wire += 1
        self.wake()   # the next one may go too
        return True

    def drop(self, ticket: object) -> None:
        """A held request gave up (its deadline passed, it was interrupted, the connection ended)."""
        try:
            self._held.remove(ticket)
        except ValueError:
            pass
        self.wake()

    def free(self) -> None:
        """A final reply came for a request that had a slot (or one that took a slot was never sent)."""
        self.on_wire -= 1
        self.wake()

    def wake(self) -> None:
        """Wakes the held threads: a slot freed, the queue moved, or the reading is free for one of them to take."""
        if self._held:
            self.turn.notify_all()

    @property
    def holds(self) -> bool:
        return bool(self._held)

    def open_all(self) -> None:
        """The connection ended: every held request goes on (to meet the closed connection), and none waits again."""
        self._open = True
        self.wake()
