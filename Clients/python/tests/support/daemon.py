"""A real ferryd for the tests: ``ferryd_binary`` ($FERRYD), ``FerrydProcess`` (one run of it), ``RawConnection`` (a
bare socket to it), and the test case bases ``DaemonCase`` (one ferryd per test class) and ``CacheDaemonCase``."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from ferry import DEFAULT_MAX_FRAME_BYTES, Client, FrameDecoder, encode_frame

from .helpers import FerryAssertions


class RawConnection:
    """A bare socket to ferryd for sending arbitrary bytes and reading the frames that come back."""

    def __init__(self, path: str, timeout: float = 5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.decoder = FrameDecoder(max_frame_bytes=DEFAULT_MAX_FRAME_BYTES)
        self.frames = []

    def close(self):
        self.sock.close()

    def send(self, data: bytes):
        self.sock.sendall(data)

    def request(self, envelope: dict, body: bytes = b""):
        self.send(encode_frame(envelope, body))

    def read_frame(self):
        """The next frame; fails the test's expectations with AssertionError on EOF or timeout."""
        while not self.frames:
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                raise AssertionError("no frame from ferryd within the timeout") from None
            if not data:
                raise AssertionError("ferryd closed the connection instead of answering")
            self.frames += self.decoder.feed(data)
        return self.frames.pop(0)

    def hello(self, rid: int = 1):
        self.request({"id": rid, "op": "hello", "args": {"versions": [1], "client": "raw-test"}})
        envelope, _ = self.read_frame()
        assert envelope.get("id") == rid and "result" in envelope, f"hello failed: {envelope}"

    def is_closed_by_peer(self) -> bool:
        """True once ferryd closed the connection: recv returns b"" (a reset counts as closed too, since Linux
        reports ECONNRESET when the peer closes with our bytes still unread)."""
        try:
            return self.sock.recv(1 << 16) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def ferryd_binary() -> str:
    """$FERRYD; the daemon tests are skipped when it is unset and fail when it names no executable."""
    binary = os.environ.get("FERRYD")
    if not binary:
        raise unittest.SkipTest("FERRYD is not set; set FERRYD=/path/to/ferryd to run the daemon tests")
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise AssertionError(f"FERRYD={binary} is not an executable file")
    return binary


class FerrydProcess:
    """One ferryd run: ``--socket <dir>/<socket_name> --cache-dir <cache_dir>`` plus ``extra_args``, output appended
    to ``<dir>/ferryd.log``. ``start`` returns once the socket accepts connections."""

    def __init__(self, binary: str, dir: str, cache_dir: str = None, socket_name: str = "s.sock", extra_args=()):
        self.binary, self.dir = binary, dir
        self.path = os.path.join(dir, socket_name)
        self.cache_dir = cache_dir or os.path.join(dir, "cache")
        self.log_path = os.path.join(dir, "ferryd.log")
        self.extra_args = list(extra_args)
        self.proc = None

    def start(self, seconds: float = 10.0) -> "FerrydProcess":
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, "--socket", self.path, "--cache-dir", self.cache_dir, "--log-level", "warn",
                 *self.extra_args], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_for_socket(seconds)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_socket(self, seconds: float):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"ferryd exited with status {self.proc.returncode}: {self.log_tail()}")
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                try:
                    s.connect(self.path)
                    return
                except OSError:
                    time.sleep(0.05)
        raise AssertionError(f"ferryd did not accept connections on {self.path} within {seconds} s: "
                             f"{self.log_tail()}")

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace") or "(no output)"
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 15.0):
        """SIGTERM, then SIGKILL if it is still running after ``timeout`` s. Returns the exit status, or None when
        it had to be killed (or never started)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
                return None
        return proc.returncode


def wait_for_ferryd_binary(seconds: float = 60.0) -> str:
    """``ferryd_binary()``, waiting a little when $FERRYD is set but briefly missing (being relinked)."""
    binary = os.environ.get("FERRYD")
    deadline = time.monotonic() + seconds
    while binary and not os.access(binary, os.X_OK) and time.monotonic() < deadline:
        time.sleep(1)
    return ferryd_binary()


class DaemonCase(FerryAssertions, unittest.TestCase):
    """A ferryd from $FERRYD shared by the tests of a class, in a temporary directory; each test gets a Client."""

    proc = None
    daemon = None

    @classmethod
    def setUpClass(cls):
        binary = ferryd_binary()
        cls.dir = tempfile.mkdtemp(prefix="ferry-it-")
        cls.daemon = FerrydProcess(binary, cls.dir)
        cls.path = cls.daemon.path
        try:
            cls.daemon.start()
        except BaseException:
            shutil.rmtree(cls.dir, ignore_errors=True)
            raise
        cls.proc = cls.daemon.proc

    @classmethod
    def tearDownClass(cls):
        if cls.daemon is not None:
            cls.daemon.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.client = Client(self.path, name="python-tests", timeout=20).connect()

    def tearDown(self):
        self.client.close()

    def raw(self) -> RawConnection:
        conn = RawConnection(self.path)
        self.addCleanup(conn.close)
        return conn


MIB = 1 << 20
DEFAULT_MAX_VALUE_BYTES = 16 * MIB
MAX_TTL_MS = 315360000000


def now_ms() -> int:
    """Now, in ms since the Unix epoch (the unit of the cache's times)."""
    return int(time.time() * 1000)


def byte_order(keys):
    """``keys`` sorted by their UTF-8 bytes, the order of cache.list."""
    return sorted(keys, key=lambda k: k.encode("utf-8"))


class CacheDaemonCase(DaemonCase):
    """cache.* (PROTOCOL.md section 6) against a real ferryd: FERRYD=/path/to/ferryd. Each test works in a
    namespace of its own (``self.ns``) unless it is about the default namespace."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with Client(cls.path, name="cache-probe", timeout=20) as c:
            names = [op["name"] for op in c.describe()["operations"]]
        if "cache.get" not in names:
            cls.tearDownClass()
            raise AssertionError(f"FERRYD does not implement cache.* (describe lists {names})")

    def setUp(self):
        super().setUp()
        self.ns = "t." + self._testMethodName
