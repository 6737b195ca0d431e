"""``ferry.get`` / ``Session`` (the requests-like API) against a real ferryd ($FERRYD) and the test origin."""

import datetime
import json
import os
import subprocess
import sys
import tempfile
import unittest

import ferry
from ferry import FerryError, HTTPError, Session
from ferry.api import Headers, seconds_to_ms

from .support.origin import DaemonWithOrigin


class ApiTests(DaemonWithOrigin):
    def setUp(self):
        self.session = Session(socket_path=self.daemon.path)
        self.addCleanup(self.session.close)

    def url(self, path: str) -> str:
        return self.base + path

    def test_get_with_params_and_a_response_like_requests(self):
        r = self.session.get(self.url("/echo"), params={"q": "hello world", "n": [1, 2]}, headers={"X-Trace": "a"}, timeout=5)
        self.assertEqual((r.status_code, r.ok, r.reason), (200, True, "OK"))
        seen = r.json()
        self.assertEqual(seen["query"], "q=hello+world&n=1&n=2")
        self.assertIn(["X-Trace", "a"], seen["headers"])
        self.assertEqual(r.headers["CONTENT-TYPE"], r.headers["content-type"])   # case-insensitive
        self.assertIsInstance(r.elapsed, datetime.timedelta)
        self.assertEqual(r.text, r.content.decode())

    def test_bodies_json_data_and_form(self):
        seen = self.session.post(self.url("/echo"), json={"a": [1, "é"]}).json()
        self.assertEqual((seen["method"], json.loads(seen["body"])), ("POST", {"a": [1, "é"]}))
        self.assertIn(["Content-Type", "application/json"], seen["headers"])
        seen = self.session.post(self.url("/echo"), data={"k": "v w"}).json()
        self.assertEqual(seen["body"], "k=v+w")
        self.assertIn(["Content-Type", "application/x-www-form-urlencoded"], seen["headers"])
        seen = self.session.put(self.url("/echo"), data="raw text").json()
        self.assertEqual((seen["method"], seen["body"]), ("PUT", "raw text"))

    def test_raise_for_status_and_from_cache(self):
        r = self.session.get(self.url("/r?status=404&body=gone"))
        self.assertFalse(r.ok)
        with self.assertRaises(HTTPError) as cm:
            r.raise_for_status()
        self.assertIs(cm.exception.response, r)
        self.assertIn("404 Client Error: Not Found", str(cm.exception))
        target = self.url("/r?size=10&cc=max-age%3D60&t=cached")
        first, second = self.session.get(target), self.session.get(target)
        self.assertEqual((first.from_cache, second.from_cache, second.cache_status), (False, True, "hit"))
        third = self.session.get(target, cache="no-store")
        self.assertFalse(third.from_cache)

    def test_redirects_and_timeouts_in_seconds(self):
        hop = self.session.get(self.url("/redirect/2"), allow_redirects=False)
        self.assertEqual(hop.status_code, 302)
        self.assertTrue(hop.ok, "a 3xx is ok, as requests says")
        with self.assertRaises(FerryError) as cm:
            self.session.get(self.url("/slow?size=10&chunks=2&interval_ms=3000&t=slow"), timeout=datetime.timedelta(milliseconds=500))
        self.assertEqual(cm.exception.code, "deadline_exceeded")

    def test_the_module_functions_share_one_session(self):
        os.environ["FERRY_SOCKET"] = self.daemon.path
        self.addCleanup(os.environ.pop, "FERRY_SOCKET", None)
        self.addCleanup(ferry.api._shared.close)
        self.assertEqual(ferry.get(self.url("/r?size=3")).content, bytes(range(3)))
        self.assertEqual(ferry.request("HEAD", self.url("/r?size=3")).content, b"")

    def test_a_session_reconnects_after_its_connection_dropped(self):
        self.assertEqual(self.session.get(self.url("/r?size=3")).status_code, 200)
        self.session._client.close()   # as a daemon restart leaves it
        self.assertEqual(self.session.get(self.url("/r?size=4")).status_code, 200)


class AutostartTests(DaemonWithOrigin):
    def test_a_session_starts_ferryd_when_none_answers(self):
        """``$FERRYD`` (set for these tests) is started on a fresh socket, as the CLI would start it."""
        import signal
        import shutil as _shutil
        directory = tempfile.mkdtemp(prefix="ferry-autostart-")
        self.addCleanup(_shutil.rmtree, directory, True)
        path = os.path.join(directory, "s")
        with self.assertRaises(FerryError):
            Session(socket_path=path, autostart=False).get(self.base + "/r?size=2")
        session = Session(socket_path=path, daemon_args=["--cache-dir", os.path.join(directory, "cache")])
        self.addCleanup(session.close)
        self.assertEqual(session.get(self.base + "/r?size=2").content, bytes(range(2)))
        pid = session._client.stats()["pid"]
        session.close()
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)   # our child: stopped by PID and reaped
        self.assertTrue(os.path.exists(os.path.join(directory, "ferryd.log")))


class ApiPureTests(unittest.TestCase):
    def test_seconds(self):
        self.assertEqual(seconds_to_ms(1.5), 1500)
        self.assertEqual(seconds_to_ms(datetime.timedelta(seconds=2)), 2000)
        self.assertEqual(seconds_to_ms(0.0001), 1)
        self.assertIsNone(seconds_to_ms(None))
        for bad in (0, -1, datetime.timedelta(0)):
            with self.assertRaises(ValueError):
                seconds_to_ms(bad)

    def test_headers(self):
        h = Headers([("Set-Cookie", "a=1"), ("set-cookie", "b=2"), ("Content-Type", "text/plain")])
        self.assertEqual(h["SET-COOKIE"], "a=1, b=2")
        self.assertEqual(len(h), 2)
        self.assertIn("content-type", h)
        self.assertEqual(h.items_all()[1], ("set-cookie", "b=2"))
        del h["set-cookie"]
        self.assertNotIn("Set-Cookie", h)

    def test_the_package_as_pip_installs_it(self):
        """``pyproject.toml`` names what is there (the package, the old module, the type marker), and where the
        machine can build a wheel offline, ``pip install`` of the directory installs them."""
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib: Python 3.11+")
        with open(os.path.join(here, "pyproject.toml"), "rb") as f:
            project = tomllib.load(f)
        self.assertEqual(project["project"]["dependencies"], [])
        setup = project["tool"]["setuptools"]
        for package in setup["packages"]:
            directory = os.path.join(here, *package.split("."))   # a subpackage, "ferry.aio": ferry/aio
            self.assertTrue(os.path.exists(os.path.join(directory, "__init__.py")), package)
            for data in setup["package-data"].get(package, []):
                self.assertTrue(os.path.exists(os.path.join(directory, data)), data)
        for module in setup["py-modules"]:
            self.assertTrue(os.path.exists(os.path.join(here, module + ".py")), module)
        try:
            import wheel  # noqa: F401  (setuptools before 70 builds wheels with it)
        except ImportError:
            return
        with tempfile.TemporaryDirectory() as target:
            run = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                                  "--no-index", "--target", target, here], capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertTrue(os.path.exists(os.path.join(target, "ferry", "py.typed")))
            self.assertTrue(os.path.exists(os.path.join(target, "ferry", "aio", "__init__.py")))
