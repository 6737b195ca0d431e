"""The test origin Tests/Origin/ferry_origin.py for the tests: ``OriginProcess`` (one run of it), ``pattern`` (its
deterministic bodies), and the test case base ``DaemonWithOrigin`` (a ferryd and an origin per test class)."""

import http.client
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

from . import REPO_ROOT
from .daemon import FerrydProcess, wait_for_ferryd_binary

ORIGIN_SCRIPT = os.path.join(REPO_ROOT, "Tests", "Origin", "ferry_origin.py")


def pattern(size: int) -> bytes:
    """The origin's deterministic body: byte i is i % 251."""
    return (bytes(range(251)) * (size // 251 + 1))[:size]


class OriginProcess:
    """Tests/Origin/ferry_origin.py on 127.0.0.1 and a free port; stderr appended to ``log_path``."""

    def __init__(self, log_path: str):
        self.log_path = log_path
        self.proc = None
        self.port = None

    def start(self, seconds: float = 10.0, files: str = None) -> "OriginProcess":
        args = [sys.executable, ORIGIN_SCRIPT, "--port", "0"] + (["--files", files] if files else [])
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
        try:
            ready, _, _ = select.select([self.proc.stdout], [], [], seconds)
            line = self.proc.stdout.readline().decode() if ready else ""
            if not line.startswith("PORT "):
                raise AssertionError(f"the origin did not print PORT <n> within {seconds} s (got {line!r})")
            self.port = int(line.split()[1])
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        proc.stdout.close()

    def control(self, method: str, target: str) -> dict:
        """A control request (``/__count``, ``/__log``, ``/__reset``) straight to the origin, not via ferryd."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, target)
            reply = conn.getresponse()
            return json.loads(reply.read())
        finally:
            conn.close()

    def count(self, target: str) -> int:
        """How many requests the origin got for exactly this path and query."""
        return self.control("GET", "/__count?url=" + urllib.parse.quote(target, safe=""))["count"]

    def log(self, target: str) -> list:
        """The origin's log entries of requests for exactly this path and query."""
        path, _, query = target.partition("?")
        return [e for e in self.control("GET", "/__log") if e["path"] == path and e["query"] == query]


class DaemonAndOrigin:
    """A real ferryd ($FERRYD, with ``daemon_args``) and the test origin (serving ``origin_files`` under /file/ when
    set), started once per test class and stopped by PID: a mixin for a ``unittest.TestCase`` or an
    ``IsolatedAsyncioTestCase``. ``cls.binary`` is the ferryd used, ``cls.base`` the origin's URL."""

    daemon = None
    origin = None
    origin_files = None
    daemon_args: list = []

    @classmethod
    def setUpClass(cls):
        cls.binary = wait_for_ferryd_binary()
        cls.dir = tempfile.mkdtemp(prefix="ferry-it-")
        try:
            cls.origin = OriginProcess(os.path.join(cls.dir, "origin.log")).start(files=cls.origin_files)
            cls.daemon = FerrydProcess(cls.binary, cls.dir, extra_args=list(cls.daemon_args))
            cls.daemon.start()
            cls.base = f"http://127.0.0.1:{cls.origin.port}"
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.daemon is not None:
            cls.daemon.stop()
            cls.daemon = None
        if cls.origin is not None:
            cls.origin.stop()
            cls.origin = None
        shutil.rmtree(cls.dir, ignore_errors=True)


class DaemonWithOrigin(DaemonAndOrigin, unittest.TestCase):
    """``DaemonAndOrigin`` for a plain ``unittest.TestCase``."""
