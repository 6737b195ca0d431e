"""``default_socket_path``: where the client looks for ferryd (PROTOCOL.md section 1)."""

import os
import unittest

from ferry import default_socket_path


class SocketPathTests(unittest.TestCase):

    def test_order(self):
        self.assertEqual(default_socket_path({"FERRY_SOCKET": "/x/s", "XDG_RUNTIME_DIR": "/run/u"}), "/x/s")
        self.assertEqual(default_socket_path({"FERRY_SOCKET": "", "XDG_RUNTIME_DIR": "/run/u"}),
                         "/run/u/ferry/ferryd.sock")
        self.assertEqual(default_socket_path({"XDG_RUNTIME_DIR": ""}), f"/tmp/ferry-{os.getuid()}/ferryd.sock")
        self.assertEqual(default_socket_path({}), f"/tmp/ferry-{os.getuid()}/ferryd.sock")
