"""Tests of the Python client (the ``ferry`` package), one module per subject.

    cd /work/main && FERRYD=/path/to/ferryd python3 -m unittest discover -s Clients/python/tests -t Clients/python -v

One module alone, from Clients/python: ``python3 -m unittest tests.test_vectors -v``.

- test_vectors, test_split_request, test_socket_path, test_fetch_response: framing against
  Protocol/vectors/frames.json, request bodies sent in parts (continuation frames, PROTOCOL.md section 5) frame by
  frame, the socket path, FetchResponse's helpers; no daemon needed.
- test_fake_client, test_fake_cache, test_fake_fetch: the Client's threading, cancelling and failure handling, and
  what the cache_* methods and ``fetch`` send and how they read replies, against a tiny in-process stand-in
  (support/fake_ferryd.py).
- test_daemon, test_cache_daemon, test_cache_daemon_keys, test_cache_daemon_limits: a real ferryd from $FERRYD
  (skipped when FERRYD is unset, an error when it is set but missing). The cache tests (PROTOCOL.md section 6,
  cache.*) also start ferryds of their own: one with 16 MiB frames for max_value_bytes, and a stop (SIGTERM) and
  restart on the same --cache-dir.
- test_fetch_daemon, test_image: ``fetch`` and ``image.*`` against a real ferryd and the test origin
  Tests/Origin/ferry_origin.py (support/origin.py).
- test_api_daemon: the requests-like API (``ferry.get``, ``Session``) and auto-start.
- test_aio_daemon: ``ferry.aio`` (``AsyncClient``, ``AsyncSession``): many requests on one connection, parts up
  and chunks down, cancelling a task cancels its request in the daemon, a daemon gone mid-request.
"""
