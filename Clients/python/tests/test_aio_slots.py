"""``ferry.aio.slots._Slots``, the gate that keeps an AsyncConnection's requests on the wire at the daemon's
``max_in_flight``: no socket, only the event loop."""

import asyncio
import unittest

from ferry.aio.slots import _Slots


class SlotsTests(unittest.IsolatedAsyncioTestCase):
    async def test_past_the_limit_requests_wait_and_go_in_order(self):
        slots = _Slots()
        slots.limit = 2
        await slots.take()
        await slots.take()
        order = []

        async def request(name):
            await slots.take()
            order.append(name)

        waiting = [asyncio.ensure_future(request(n)) for n in "abc"]
        await asyncio.sleep(0)
        self.assertEqual((order, slots.on_wire), ([], 2), "nobody passes a full gate")
        slots.free()
        await asyncio.sleep(0)
        self.assertEqual((order, slots.on_wire), (["a"], 2))
        slots.free()
        slots.free()
        await asyncio.gather(*waiting)
        self.assertEqual((order, slots.on_wire), (["a", "b", "c"], 2))

    async def test_a_waiter_cancelled_gives_its_place_on(self):
        slots = _Slots()
        slots.limit = 1
        await slots.take()
        first = asyncio.ensure_future(slots.take())
        second = asyncio.ensure_future(slots.take())
        await asyncio.sleep(0)
        first.cancel()
        await asyncio.sleep(0)
        slots.free()
        await second
        self.assertTrue(first.cancelled())
        self.assertEqual(slots.on_wire, 1, "the slot went to the next waiter, counted once")

    async def test_a_closed_connection_lets_everyone_through(self):
        slots = _Slots()
        slots.limit = 1
        await slots.take()
        waiting = [asyncio.ensure_future(slots.take()) for _ in range(3)]
        await asyncio.sleep(0)
        slots.open_all()
        await asyncio.wait_for(asyncio.gather(*waiting), 1)
        await asyncio.wait_for(slots.take(), 1)


if __name__ == "__main__":
    unittest.main()
