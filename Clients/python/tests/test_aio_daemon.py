"""``ferry.aio`` (``AsyncClient``, ``AsyncSession``, ``ferry.aio.get``) against a real ferryd ($FERRYD; skipped when
unset) and the test origin Tests/Origin/ferry_origin.py serving the fixture images. The class's ferryd allows 32 MiB
values, so a 20 MiB one travels up in parts and down in chunks; tests that stop a daemon start one of their own.
Every process a test starts is stopped by PID."""

import asyncio
import os
import shutil
import signal
import tempfile
import time
import unittest
import urllib.parse

import ferry.aio
from ferry import CacheEntry, CacheKey, FerryError, FerryProtocolError, FetchResponse, Image, split_request
from ferry.aio import AsyncClient, AsyncSession
from ferry.api import Response

from .support import REPO_ROOT
from .support.daemon import FerrydProcess
from .support.origin import DaemonAndOrigin, pattern

FIXTURES = os.path.join(REPO_ROOT, "Tests", "FerryImageFormatTests", "Fixtures")
MIB = 1 << 20


async def in_thread(fn, *args):
    """``fn(*args)`` in a worker thread (blocking process starts and stops keep off the event loop)."""
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def stop_pid(pid: int, seconds: float = 10.0) -> None:
    """SIGTERM to ``pid``, then waits for it to end (reaping it when it is our child), SIGKILL after ``seconds``."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + seconds
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
        except ChildProcessError:          # not ours, or reaped already (by subprocess's own cleanup)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
        time.sleep(0.02)


class AioCase(DaemonAndOrigin, unittest.IsolatedAsyncioTestCase):
    """A ferryd (values up to 32 MiB) and the test origin for the class; each test gets an AsyncClient ``self.c``."""

    origin_files = FIXTURES
    daemon_args = ["--max-value-bytes", "32MiB"]

    async def asyncSetUp(self):
        self.c = await AsyncClient(self.daemon.path, name="aio-tests", timeout=30).connect()
        self.ns = "aio." + self._testMethodName

    async def asyncTearDown(self):
        await self.c.close()

    def url(self, path: str, **params) -> str:
        """An origin URL unique to this test (``t=<test name>`` last)."""
        pairs = list(params.items()) + [("t", self._testMethodName)]
        return self.base + path + "?" + urllib.parse.urlencode(pairs, doseq=True)

    async def other_daemon(self, *extra_args: str) -> FerrydProcess:
        """A ferryd of this test's own, stopped (by PID) at the end of the test; started in a thread, as the
        event loop must not wait for it."""
        directory = tempfile.mkdtemp(prefix="ferry-aio-own-")
        self.addCleanup(shutil.rmtree, directory, True)
        daemon = FerrydProcess(self.binary, directory, extra_args=extra_args)
        self.addCleanup(daemon.stop)
        await in_thread(daemon.start)
        return daemon

    async def stats_until(self, predicate, what: str, seconds: float = 3.0) -> dict:
        """The daemon's stats once ``predicate(stats)`` holds; fails after ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            stats = await self.c.stats()
            if predicate(stats):
                return stats
            if time.monotonic() > deadline:
                self.fail(f"the daemon's stats never showed {what}: {stats['errors']} {stats['ops']['ping']}")
            await asyncio.sleep(0.02)

    async def assertFerryError(self, code: str, awaitable) -> FerryError:
        with self.assertRaises(FerryError) as cm:
            await awaitable
        self.assertEqual(cm.exception.code, code, str(cm.exception))
        return cm.exception


class AsyncClientTests(AioCase):
    # ----- the connection and the generic requests

    async def test_hello_and_the_generic_requests(self):
        c = self.c
        self.assertEqual((c.version, c.closed), (1, False))
        self.assertTrue(c.server.startswith("ferryd"), c.server)
        self.assertIn("cache.incr", c.operations)
        self.assertGreaterEqual(c.limits["max_value_bytes"], 32 * MIB)
        self.assertEqual(await c.ping(b"\x00\xff"), ({"pong": True}, b"\x00\xff"))
        self.assertIn("fetch", [op["name"] for op in (await c.describe())["operations"]])
        items = [item async for item in c.stream("ping", {"events": 3}, b"echo")]
        self.assertEqual(items, [("event", "tick", {"n": 0}, b""), ("event", "tick", {"n": 1}, b""),
                                 ("event", "tick", {"n": 2}, b""), ("final", {"pong": True}, b"echo")])
        rid = await c.send("ping", {"delay_ms": 5000})
        self.assertEqual(await c.cancel(rid), {"cancelled": True})
        await self.assertFerryError("cancelled", c.wait(rid))
        await self.assertFerryError("not_found", c.wait(rid))    # its reply was collected
        rid = await c.send("ping", {"events": 2, "delay_ms": 100}, b"later")
        first = asyncio.ensure_future(c.wait(rid))
        await asyncio.sleep(0.01)
        await self.assertFerryError("failed_precondition", c.wait(rid))     # one task collects a reply
        self.assertEqual(await first, ({"pong": True}, b"later"))

    async def test_close_fails_the_waiters(self):
        c = await AsyncClient(self.daemon.path).connect()
        waiting = [asyncio.ensure_future(c.call("ping", {"delay_ms": 5000})) for _ in range(3)]
        await asyncio.sleep(0.05)
        await asyncio.wait_for(c.close(), 2)
        for result in await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 1):
            self.assertIsInstance(result, FerryError)
            self.assertEqual((result.code, result.message), ("unavailable", "the client closed the connection"))
        self.assertTrue(c.closed)
        await self.assertFerryError("unavailable", c.ping())
        await c.close()                     # again: nothing happens

    async def test_two_hundred_concurrent_requests_on_one_connection(self):
        """200 requests in flight at once on one connection, their replies out of order: each gets its own."""
        c = self.c
        connections = (await c.stats())["connections"]["total"]
        values = await asyncio.gather(*(c.cache_incr("n", namespace=self.ns) for _ in range(200)))
        self.assertEqual(sorted(values), list(range(1, 201)))
        self.assertEqual((await c.cache_get("n", namespace=self.ns)).value, b"200")

        async def ping(i: int):
            return await c.call("ping", {"delay_ms": (i * 37) % 60, "events": i % 3}, f"body {i}".encode())
        replies = await asyncio.gather(*(ping(i) for i in range(200)))
        self.assertEqual(replies, [({"pong": True}, f"body {i}".encode()) for i in range(200)])
        self.assertEqual((await c.stats())["connections"]["total"], connections, "all of it on one connection")

    async def test_requests_past_max_in_flight_wait_for_a_slot(self):
        """More requests at once than the daemon's max_in_flight (4 here): the client holds the rest and sends each
        as a reply frees a slot, so none is refused with resource_exhausted; a held one cancelled never leaves."""
        daemon = await self.other_daemon("--max-in-flight", "4")
        c = await AsyncClient(daemon.path, name="aio-slots", timeout=30).connect()
        try:
            self.assertEqual(c.limits["max_in_flight"], 4)

            async def ping(i: int):
                return await c.call("ping", {"delay_ms": 10}, f"body {i}".encode())
            replies = await asyncio.gather(*(ping(i) for i in range(60)))
            self.assertEqual(replies, [({"pong": True}, f"body {i}".encode()) for i in range(60)])
            slow = [asyncio.ensure_future(c.call("ping", {"delay_ms": 300})) for _ in range(4)]
            await asyncio.sleep(0.05)
            held = asyncio.ensure_future(c.call("ping", {"delay_ms": 5000}))
            await asyncio.sleep(0.05)
            started = time.monotonic()
            held.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await held
            self.assertLess(time.monotonic() - started, 1.0)
            await asyncio.gather(*slow)
            self.assertEqual(await c.call("ping", {}, b"after"), ({"pong": True}, b"after"))
            stats = await c.stats()
            self.assertEqual(stats["errors"].get("resource_exhausted", 0), 0, stats["errors"])
            self.assertEqual(stats["ops"]["ping"]["requests"], 65, "60 + 4 + 1: the cancelled one never left")
        finally:
            await c.close()

    async def test_a_20_mib_value_goes_up_in_parts_and_comes_down_in_chunks(self):
        c = self.c
        size = 20 * MIB
        self.assertLess(size, c.limits["max_value_bytes"])
        value = os.urandom(size)
        frames = split_request({"id": 1, "op": "cache.set", "args": {"key": "big", "namespace": self.ns}}, value,
                               c.limits["max_frame_bytes"])
        self.assertGreater(len(frames), 4, "the value must travel in parts")
        bytes_in = (await c.stats())["bytes"]["in"]
        small = asyncio.ensure_future(c.cache_set("small", b"s", namespace=self.ns))   # queued behind the parts
        self.assertTrue(await c.cache_set("big", value, namespace=self.ns, ttl=60))
        self.assertTrue(await small)
        self.assertGreaterEqual((await c.stats())["bytes"]["in"] - bytes_in, size)
        entry = await c.cache_get("big", namespace=self.ns)
        self.assertIsInstance(entry, CacheEntry)
        self.assertEqual(entry.size, size)
        self.assertTrue(entry.value == value, "the 20 MiB value came back altered")
        self.assertIsNotNone(entry.expires_at)
        chunks, final = [], None
        async for item in c.stream("cache.get", {"key": "big", "namespace": self.ns}):
            if item[0] == "event":
                self.assertEqual(item[1], "chunk")
                self.assertEqual(item[2]["offset"], sum(len(b) for b in chunks))
                chunks.append(item[3])
            else:
                final = item
        self.assertGreater(len(chunks), 10)
        self.assertEqual(final[1]["size"], size)
        self.assertTrue(b"".join(chunks) + final[2] == value)

    # ----- cancelling and timeouts

    async def test_wait_for_running_out_cancels_the_request_in_the_daemon(self):
        c = self.c
        before = await c.stats()
        started = time.monotonic()
        with self.assertRaises(asyncio.TimeoutError):
            await asyncio.wait_for(c.call("ping", {"delay_ms": 5000}), 0.2)
        self.assertLess(time.monotonic() - started, 1.0)
        after = await self.stats_until(
            lambda s: s["errors"].get("cancelled", 0) == before["errors"].get("cancelled", 0) + 1,
            "the request cancelled")
        self.assertEqual(after["ops"]["ping"]["errors"], before["ops"]["ping"]["errors"] + 1)
        self.assertEqual(after["ops"]["cancel"]["requests"], before["ops"]["cancel"]["requests"] + 1)
        self.assertEqual(after["requests"]["in_flight"], before["requests"]["in_flight"])
        self.assertEqual(await c.ping(b"still"), ({"pong": True}, b"still"))
        self.assertEqual(c._pending, {}, "the cancelled request is forgotten")

    async def test_a_cancelled_task_cancels_its_request(self):
        c = self.c
        before = (await c.stats())["errors"].get("cancelled", 0)
        task = asyncio.ensure_future(c.fetch(self.url("/slow", size=1000, chunks=10, interval_ms=300)))
        await asyncio.sleep(0.3)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        await self.stats_until(lambda s: s["errors"].get("cancelled", 0) == before + 1, "the fetch cancelled")
        self.assertEqual((await c.fetch(self.url("/r"))).status, 200, "the connection goes on")

    async def test_an_upload_cancelled_half_way_is_dropped(self):
        """Cancelled between two parts of its body, a cache.set stores nothing, and the connection goes on."""
        c = self.c
        before = await c.stats()
        task = asyncio.ensure_future(c.cache_set("cut", os.urandom(20 * MIB), namespace=self.ns))
        await asyncio.sleep(0)       # the first part is written; the task waits for the socket
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assertIsNone(await c.cache_get("cut", namespace=self.ns))
        self.assertEqual(await c.ping(b"ok"), ({"pong": True}, b"ok"))
        self.assertTrue(await c.cache_set("cut", b"whole", namespace=self.ns))
        self.assertEqual((await c.cache_get("cut", namespace=self.ns)).value, b"whole")
        after = await self.stats_until(
            lambda s: s["errors"].get("cancelled", 0) == before["errors"].get("cancelled", 0) + 1,
            "the cut upload cancelled")
        self.assertEqual(after["ops"]["cancel"]["requests"], before["ops"]["cancel"]["requests"] + 1)
        self.assertLess(after["bytes"]["in"] - before["bytes"]["in"], 10 * MIB, "the rest of the value was not sent")

    async def test_leaving_a_stream_early_cancels(self):
        c = self.c
        before = (await c.stats())["errors"].get("cancelled", 0)
        async for item in c.stream("ping", {"events": 3, "delay_ms": 5000}):
            self.assertEqual(item, ("event", "tick", {"n": 0}, b""))
            break
        await self.stats_until(lambda s: s["errors"].get("cancelled", 0) == before + 1, "the stream cancelled")
        async with c.stream("ping", {"events": 1, "delay_ms": 5000}) as s:
            self.assertEqual((await s.__anext__())[1], "tick")
        await self.stats_until(lambda s: s["errors"].get("cancelled", 0) == before + 2, "the stream cancelled")

    async def test_local_timeouts(self):
        """The client's ``timeout`` bounds a request without ``timeout_ms``: deadline_exceeded locally, and a
        cancel to the daemon. With ``timeout_ms`` the daemon answers deadline_exceeded itself."""
        c = await AsyncClient(self.daemon.path, timeout=0.3).connect()
        self.addAsyncCleanup(c.close)
        before = (await c.stats())["errors"].get("cancelled", 0)
        started = time.monotonic()
        error = await self.assertFerryError("deadline_exceeded", c.call("ping", {"delay_ms": 3000}))
        self.assertIn("local timeout", error.message)
        self.assertLess(time.monotonic() - started, 1.5)
        await self.stats_until(lambda s: s["errors"].get("cancelled", 0) == before + 1, "the request cancelled")
        error = await self.assertFerryError("deadline_exceeded", self.c.call("ping", {"delay_ms": 3000},
                                                                            timeout_ms=100))
        self.assertNotIn("local timeout", error.message)

    # ----- errors

    async def test_error_replies_raise_ferry_errors(self):
        c = self.c
        await self.assertFerryError("not_found", c.cache_touch("missing", ttl=5, namespace=self.ns))
        await self.assertFerryError("invalid_argument", c.call("ping", {"delay_ms": "soon"}))
        await self.assertFerryError("invalid_argument", c.cache_set("k", b"v", namespace="bad namespace!"))
        await self.assertFerryError("unimplemented", c.call("no.such.op"))
        await c.cache_set("word", "abc", namespace=self.ns)
        await self.assertFerryError("failed_precondition", c.cache_incr("word", namespace=self.ns))
        with self.assertRaises(TypeError):
            await c.cache_set("k", 123, namespace=self.ns)
        with self.assertRaises(TypeError):
            await c.cache_incr("k", by=True)
        with self.assertRaises(ValueError):
            await c.fetch(self.url("/echo"), "POST", body=b"x", json={"a": 1})
        with self.assertRaises(ValueError):
            await c.http_purge()
        self.assertEqual(await c.ping(), ({"pong": True}, b""), "call errors leave the connection open")

    async def test_a_protocol_error_closes_the_connection_with_the_daemons_reason(self):
        c = self.c
        waiting = asyncio.ensure_future(c.call("ping", {"delay_ms": 5000}))
        await asyncio.sleep(0.05)
        c._writer.write(b"\xff" * 8)     # a frame header far over the limits
        with self.assertRaises(FerryProtocolError) as cm:
            await asyncio.wait_for(waiting, 2)
        self.assertIn("ferryd closed the connection after", cm.exception.message)
        self.assertTrue(c.closed)
        await self.assertFerryError("protocol_error", c.ping())

    async def test_the_daemon_stopped_mid_request_fails_the_waiters_promptly(self):
        daemon = await self.other_daemon()
        c = await AsyncClient(daemon.path).connect()
        self.addAsyncCleanup(c.close)
        waiters = [asyncio.ensure_future(c.call("ping", {"delay_ms": 10_000})) for _ in range(5)]
        waiters.append(asyncio.ensure_future(c.cache_get("k")))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        daemon.proc.kill()                 # by PID (daemon.stop reaps it at cleanup)
        results = await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 3)
        self.assertLess(time.monotonic() - started, 1.0)
        for result in results[:5]:
            self.assertIsInstance(result, FerryError)
            self.assertEqual(result.code, "unavailable", result)
            self.assertIn("closed the connection", result.message)
        self.assertTrue(c.closed)
        await self.assertFerryError("unavailable", c.ping())

    async def test_connecting_to_nothing_is_unavailable(self):
        path = os.path.join(tempfile.mkdtemp(prefix="ferry-aio-none-"), "s")
        self.addCleanup(shutil.rmtree, os.path.dirname(path), True)
        await self.assertFerryError("unavailable", AsyncClient(path).connect())
        await self.assertFerryError("unavailable", ferry.aio.connect(path, autostart=False))

    # ----- the operation families

    async def test_the_cache_operations(self):
        c, ns = self.c, self.ns
        self.assertTrue(await c.cache_set("a", b"1", namespace=ns))
        self.assertFalse(await c.cache_set("a", b"2", namespace=ns, if_absent=True))
        self.assertIsNone(await c.cache_get("nope", namespace=ns))
        self.assertEqual(await c.cache_get("nope", namespace=ns, default="d"), "d")
        self.assertEqual((await c.cache_get_or_none("a", namespace=ns)).text, "1")
        expires = await c.cache_touch("a", ttl=60, namespace=ns)
        self.assertGreater(expires, time.time() * 1000)
        self.assertIsNone(await c.cache_touch("a", namespace=ns))
        self.assertEqual(await c.cache_incr("n", by=-5, namespace=ns), -5)
        self.assertTrue(await c.cache_delete("n", namespace=ns))
        self.assertFalse(await c.cache_delete("n", namespace=ns))
        for key in ["d", "b", "e", "c"]:
            await c.cache_set(key, key * 3, namespace=ns)
        keys, cursor = await c.cache_list_page(namespace=ns, limit=2)
        self.assertEqual(([k.key for k in keys], cursor), (["a", "b"], "b"))
        lists = (await c.stats())["ops"]["cache.list"]["requests"]
        pages = c.cache_list(namespace=ns, limit=2)
        self.assertEqual(await pages.__anext__(), CacheKey("a", 1, None))
        self.assertEqual((await c.stats())["ops"]["cache.list"]["requests"], lists + 1, "one page so far")
        self.assertEqual(["a"] + [k.key async for k in pages], ["a", "b", "c", "d", "e"])
        self.assertEqual((await c.stats())["ops"]["cache.list"]["requests"], lists + 3)
        self.assertEqual(await c.cache_clear(ns), 5)
        self.assertEqual([k async for k in c.cache_list(namespace=ns)], [])

    async def test_fetch_through_the_origin(self):
        c = self.c
        url = self.url("/r", size=5000, cc="max-age=600")
        first, second = await c.fetch(url), await c.fetch(url)
        self.assertIsInstance(first, FetchResponse)
        self.assertEqual((first.status, first.cache_status, first.body), (200, "miss", pattern(5000)))
        self.assertEqual((second.cache_status, second.body), ("hit", pattern(5000)))
        self.assertEqual(first.header("cache-control"), "max-age=600")
        echoed = await c.fetch(self.url("/echo"), "POST", {"X-Trace": "aio"}, json={"a": [1, "é"]})
        seen = echoed.json()
        self.assertEqual((seen["method"], seen["body"]), ("POST", '{"a":[1,"é"]}'))
        self.assertIn(["Content-Type", "application/json"], seen["headers"])
        self.assertIn(["X-Trace", "aio"], seen["headers"])
        big = await c.fetch(self.url("/bytes", size=6 * MIB))      # chunk events, joined
        self.assertTrue(big.body == pattern(6 * MIB))
        self.assertEqual((await c.fetch(self.url("/r", status=404))).status, 404)

    async def test_fetch_to_a_file_with_progress_and_head(self):
        c = self.c
        size = 600_000
        events = []
        path = os.path.join(tempfile.mkdtemp(prefix="ferry-aio-to-"), "body")
        self.addCleanup(shutil.rmtree, os.path.dirname(path), True)

        class File:
            def __init__(self, f):
                self.f = f

            def write(self, b):
                events.append(("piece", len(b)))
                return self.f.write(b)
        with open(path, "wb") as f:
            r = await c.fetch(self.url("/slow", size=size, chunks=4, interval_ms=150, cc="no-store"), to=File(f),
                              progress=lambda got, total: events.append(("progress", got, total)),
                              on_head=lambda head: events.append(("head", head.status, head.body)))
        self.assertEqual((r.status, r.body), (200, b""))
        with open(path, "rb") as f:
            self.assertTrue(f.read() == pattern(size))
        body_events = [e for e in events if e[0] != "progress"]
        self.assertEqual(body_events[0], ("head", 200, b""), "the head comes before any of the body")
        self.assertGreater(len(body_events[1:]), 1, "the body is written in pieces as it arrives")
        progress = [e[1] for e in events if e[0] == "progress"]
        self.assertTrue(progress and progress == sorted(progress), events)
        self.assertLessEqual(progress[-1], size)

    async def test_http_cache_inspection(self):
        c = self.c
        url = self.url("/r", body="s", cc="max-age=600")
        await c.fetch(url)
        listed = [u async for u in c.http_list(prefix=self.base + "/r?", limit=1)]
        self.assertIn(url, [u["url"] for u in listed])
        shown = await c.http_show(url)
        self.assertEqual(shown["responses"][0]["lifetime_s"], 600)
        self.assertIsNone(await c.http_show(self.url("/nothing")))
        self.assertEqual(await c.http_purge(url), 1)
        self.assertEqual((await c.fetch(url)).cache_status, "miss")

    async def test_images(self):
        c = self.c
        url = f"{self.base}/file/webp-alpha-31x17.webp?cc=max-age%3D600&t={self._testMethodName}"
        img = await c.image(url)
        self.assertIsInstance(img, Image)
        self.assertEqual((img.format, img.width, img.height, img.source), ("webp", 31, 17, "network"))
        self.assertEqual((await c.image(url)).source, "memory")
        thumb = await c.image(url, width=10, height=10, fit="cover", format="png")
        self.assertEqual((thumb.format, thumb.width, thumb.height), ("png", 10, 10))
        self.assertTrue(await c.evict_image(url))
        self.assertEqual(await c.prefetch_images([url]), 1)
        await self.assertFerryError("invalid_argument", c.image(url, width=10, fit="sideways"))


class AsyncSessionTests(AioCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.session = AsyncSession(socket_path=self.daemon.path)
        self.addAsyncCleanup(self.session.close)

    async def test_requests_like_calls(self):
        s = self.session
        r = await s.get(self.url("/echo"), params={"q": "hello world", "n": [1, 2]}, headers={"X-Trace": "a"},
                        timeout=5)
        self.assertIsInstance(r, Response)
        self.assertEqual((r.status_code, r.ok, r.reason), (200, True, "OK"))
        seen = r.json()
        self.assertTrue(seen["query"].endswith("&q=hello+world&n=1&n=2"), seen["query"])
        self.assertIn(["X-Trace", "a"], seen["headers"])
        seen = (await s.post(self.url("/echo"), json={"a": [1, "é"]})).json()
        self.assertEqual((seen["method"], seen["body"]), ("POST", '{"a":[1,"é"]}'))
        seen = (await s.put(self.url("/echo"), data={"k": "v w"})).json()
        self.assertEqual((seen["method"], seen["body"]), ("PUT", "k=v+w"))
        target = self.url("/r", size=10, cc="max-age=60")
        self.assertEqual([(await s.get(target)).from_cache for _ in range(2)], [False, True])
        self.assertEqual((await s.head(target)).content, b"")
        self.assertEqual((await s.get(self.url("/redirect/1"), allow_redirects=False)).status_code, 302)
        with self.assertRaises(FerryError) as cm:
            await s.get(self.url("/slow", size=10, chunks=2, interval_ms=3000), timeout=0.3)
        self.assertEqual(cm.exception.code, "deadline_exceeded")

    async def test_a_session_connects_again_after_the_daemon_restarted(self):
        daemon = await self.other_daemon()
        async with AsyncSession(socket_path=daemon.path, autostart=False) as s:
            self.assertEqual((await s.get(self.url("/r", size=3))).content, bytes(range(3)))
            first = s._client
            await in_thread(daemon.stop)
            await in_thread(daemon.start)
            self.assertEqual((await s.get(self.url("/r", size=4))).content, bytes(range(4)))
            self.assertIsNot(s._client, first)
            self.assertTrue(first.closed)

    async def test_the_module_functions_start_ferryd_when_none_answers(self):
        """``ferry.aio.get`` on a fresh socket path: ``$FERRYD`` (set for these tests) is started there, with its
        cache under a temporary $XDG_CACHE_HOME; stopped by PID at the end."""
        directory = tempfile.mkdtemp(prefix="ferry-aio-autostart-")
        self.addCleanup(shutil.rmtree, directory, True)
        path = os.path.join(directory, "run", "s")
        with self.assertRaises(FerryError):
            await AsyncSession(socket_path=path, autostart=False).get(self.url("/r"))
        for name, value in (("FERRY_SOCKET", path), ("XDG_CACHE_HOME", os.path.join(directory, "cache")),
                            ("FERRY_NO_AUTOSTART", "0")):
            self.addCleanup(_restore_env, name, os.environ.get(name))
            os.environ[name] = value
        r = await ferry.aio.get(self.url("/r", size=5))
        self.assertEqual((r.status_code, r.content), (200, bytes(range(5))))
        client = ferry.aio._shared_session()._client
        pid = (await client.stats())["pid"]
        self.addCleanup(stop_pid, pid)
        self.assertNotEqual(pid, self.daemon.proc.pid)
        self.assertEqual((await ferry.aio.post(self.url("/echo"), json=[1])).json()["body"], "[1]")
        self.assertIs(ferry.aio._shared_session()._client, client, "the module functions share one connection")
        await ferry.aio.close_shared()
        self.assertTrue(client.closed)
        self.assertTrue(os.path.exists(os.path.join(directory, "run", "ferryd.log")))


def _restore_env(name: str, value) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


if __name__ == "__main__":
    unittest.main()
