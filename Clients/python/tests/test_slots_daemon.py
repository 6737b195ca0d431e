"""Against a real ferryd started with ``--max-in-flight 4`` (FERRYD): the sync client holds requests past the limit
and sends each as a reply frees a slot, whether one thread sends them all before it waits or many threads share the
client; a held request meets its local deadline unsent; cancels take no slot."""

import shutil
import tempfile
import time

from ferry import Client

from .support.daemon import DaemonCase, FerrydProcess, ferryd_binary
from .support.helpers import run_threads

LIMIT = 4


class SlotsDaemonTests(DaemonCase):
    """A ferryd of the class's own with a small max_in_flight."""

    @classmethod
    def setUpClass(cls):
        cls.own_dir = tempfile.mkdtemp(prefix="ferry-it-slots-")
        cls.own = FerrydProcess(ferryd_binary(), cls.own_dir, extra_args=["--max-in-flight", str(LIMIT)])
        try:
            cls.own.start()
        except BaseException:
            shutil.rmtree(cls.own_dir, ignore_errors=True)
            raise
        cls.daemon = cls.own
        cls.dir = cls.own_dir
        cls.path = cls.own.path
        cls.proc = cls.own.proc

    def stats_errors(self) -> dict:
        with Client(self.path, name="slots-stats", timeout=20) as c:
            return c.stats()["errors"]

    def test_one_thread_sends_past_the_limit_before_it_waits(self):
        c = self.client
        self.assertEqual(c.limits["max_in_flight"], LIMIT)
        exhausted = self.stats_errors().get("resource_exhausted", 0)
        # The fifth send finds every slot taken and nobody else to read: it reads replies itself until one frees.
        ids = [c.send("ping", {"delay_ms": 20}, f"body {i}".encode()) for i in range(30)]
        self.assertEqual([c.wait(rid) for rid in ids], [({"pong": True}, f"body {i}".encode()) for i in range(30)])
        self.assertEqual(self.stats_errors().get("resource_exhausted", 0), exhausted)

    def test_more_threads_than_slots_share_one_client(self):
        c = self.client
        failures = []

        def work(t: int):
            try:
                for i in range(15):
                    body = f"{t}/{i}".encode()
                    if c.call("ping", {"delay_ms": (t + i) % 5}, body) != ({"pong": True}, body):
                        failures.append((t, i))
            except Exception as e:   # reported below: an exception in a thread would go unseen
                failures.append((t, repr(e)))
        run_threads(work, 12, timeout=60)
        self.assertEqual(failures, [])
        self.assertEqual(c.ping(b"after"), ({"pong": True}, b"after"))

    def test_a_held_request_meets_its_deadline_unsent(self):
        with Client(self.path, name="slots-deadline", timeout=0.3) as c:
            slow = [c.send("ping", {"delay_ms": 1500}) for _ in range(LIMIT)]
            started = time.monotonic()
            self.assertFerryError("deadline_exceeded", c.call, "ping", {"delay_ms": 0}, b"held")
            self.assertLess(time.monotonic() - started, 1.2)
            # A cancel takes no slot: it goes now, and its reply frees none.
            self.assertEqual(c.cancel(slow[0]), {"cancelled": True})
        with Client(self.path, name="slots-check", timeout=20) as c:
            pings = c.stats()["ops"]["ping"]["requests"]
            self.assertEqual(c.ping(b"x"), ({"pong": True}, b"x"))
            self.assertEqual(c.stats()["ops"]["ping"]["requests"], pings + 1)
