"""What the tests share: the repository's files they read (``protocol``), small helpers (``helpers``), the
in-process stand-in for ferryd (``fake_ferryd``), and real ferryd and test-origin processes (``daemon``,
``origin``)."""

import os

# The repository's root: Clients/python/tests/support/../../../..
REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
