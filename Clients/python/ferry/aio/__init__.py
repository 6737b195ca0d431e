"""Ferry for asyncio: ``AsyncClient`` (the whole protocol on one connection, many requests at once) and
``AsyncSession`` / ``ferry.aio.get`` … (HTTP through ferryd with the habits of ``requests``).

::

    import asyncio
    import ferry.aio

    async def main():
        r = await ferry.aio.get("https://api.example.com/quotes", params={"page": 2}, timeout=5)   # ferryd autostarted
        r.raise_for_status()
        print(r.status_code, r.json(), r.from_cache)

        async with ferry.aio.AsyncClient(name="my-tool") as c:     # connects and says hello
            await c.cache_set("build/abc", b"data", ttl_ms=60_000)
            entry = await c.cache_get("build/abc")                 # CacheEntry(value=b"data", ...); None on a miss
            counts = await asyncio.gather(*(c.cache_incr("hits") for _ in range(100)))   # one connection
            r = await c.fetch("https://api.example.com/quotes/1")  # FetchResponse, as Client.fetch
            async for item in c.stream("ping", {"events": 2}):     # ("event", "tick", {"n": 0}, b"") ...
                print(item)                                         # ... then ("final", {"pong": True}, b"")
            try:
                await asyncio.wait_for(c.call("ping", {"delay_ms": 5000}), 0.5)
            except asyncio.TimeoutError:
                pass                                                # the daemon was told to cancel it

    asyncio.run(main())

One ``AsyncClient`` is one connection: every request gets an id, its frames are written back to back, and one reader
task hands each reply frame to the request it answers, so any number of tasks may use one client at once (past the
daemon's ``max_in_flight``, 256 by default, requests wait in the client for a reply to free a slot). The methods are
``ferry.Client``'s, with the same names, arguments, defaults and results, as coroutines; ``stream``, ``cache_list``
and ``http_list`` are async iterators.

Cancelling a task that awaits a request (``task.cancel()``, ``asyncio.wait_for`` running out) sends the daemon a
``cancel`` for it, so the work stops there too; a request cancelled while its body is still being sent in parts is
cut off cleanly (the daemon drops it, nothing is stored). Large reply bodies come as ``chunk`` events and are joined
(this client never asks for bodies as descriptors). A client belongs to the event loop it connected in.
"""

from .client import AsyncClient
from .connection import AsyncConnection
from .session import (
    AsyncSession, _shared_session, close_shared, connect, delete, get, head, patch, post, put, request,
)

__all__ = ["AsyncClient", "AsyncSession", "connect", "request", "get", "head", "post", "put", "patch", "delete",
           "close_shared"]
