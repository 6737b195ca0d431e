"""``ferry.slotgate._SlotGate``, the sync client's hold on requests past the daemon's ``max_in_flight``: no socket,
a lock and a counting stand-in for its condition."""

import threading
import unittest

from ferry.slotgate import _SlotGate


class _CountingCondition:
    """Stands in for the gate's condition: counts wake-ups."""

    def __init__(self) -> None:
        self.wakeups = 0

    def notify_all(self) -> None:
        self.wakeups += 1


def gate(limit: int) -> _SlotGate:
    g = _SlotGate(threading.Lock())
    g.limit = limit
    g.turn = _CountingCondition()
    return g


class SlotGateTests(unittest.TestCase):
    def test_slots_up_to_the_limit_then_none(self):
        g = gate(3)
        self.assertEqual([g.try_take() for _ in range(4)], [True, True, True, False])
        self.assertEqual(g.on_wire, 3)
        g.free()
        self.assertEqual(g.on_wire, 2)
        self.assertTrue(g.try_take())

    def test_held_requests_take_slots_in_order(self):
        g = gate(1)
        self.assertTrue(g.try_take())
        first, second = g.hold(), g.hold()
        self.assertFalse(g.take_if_turn(first), "no slot free yet")
        g.free()
        self.assertFalse(g.take_if_turn(second), "the first held one goes first")
        self.assertFalse(g.try_take(), "a newcomer does not pass the held ones")
        self.assertTrue(g.take_if_turn(first))
        self.assertFalse(g.take_if_turn(second))
        g.free()
        self.assertTrue(g.take_if_turn(second))
        self.assertFalse(g.holds)
        self.assertEqual(g.on_wire, 1)

    def test_a_request_that_gives_up_lets_the_next_go(self):
        g = gate(1)
        g.try_take()
        first, second = g.hold(), g.hold()
        g.free()
        woken = g.turn.wakeups
        g.drop(first)
        self.assertGreater(g.turn.wakeups, woken, "the ones behind it are woken")
        self.assertTrue(g.take_if_turn(second))
        g.drop(first)   # twice: harmless

    def test_wakes_only_when_someone_is_held(self):
        g = gate(2)
        g.try_take()
        g.free()
        self.assertEqual(g.turn.wakeups, 0)
        g.try_take(), g.try_take()
        g.hold()
        g.free()
        self.assertEqual(g.turn.wakeups, 1)

    def test_an_ended_connection_lets_everyone_through(self):
        g = gate(1)
        g.try_take()
        ticket = g.hold()
        g.open_all()
        self.assertTrue(g.take_if_turn(ticket))
        self.assertTrue(g.try_take())


if __name__ == "__main__":
    unittest.main()
