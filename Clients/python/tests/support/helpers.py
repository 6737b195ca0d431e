"""Small helpers of the test cases: ``FerryAssertions.assertFerryError`` and ``run_threads``."""

import threading

from ferry import FerryError


class FerryAssertions:
    """A mixin for ``unittest.TestCase`` classes."""

    def assertFerryError(self, code, fn, *args, **kwargs) -> FerryError:
        """Asserts that ``fn(*args, **kwargs)`` raises a FerryError with ``code``; returns the exception."""
        with self.assertRaises(FerryError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.code, code, f"expected {code}, got {cm.exception}")
        return cm.exception


def run_threads(target, count: int, timeout: float) -> None:
    """Runs ``target(0)`` … ``target(count - 1)``, each in a thread of its own, all at once; then joins each thread,
    waiting at most ``timeout`` seconds for it."""
    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
