"""``Client.image`` (and prefetch / evict) against a real ferryd ($FERRYD) and the test origin serving the project's
fixture images (Tests/FerryImageFormatTests/Fixtures)."""

import os
import time

from ferry import Client, FerryError, Image

from .support import REPO_ROOT
from .support.origin import DaemonWithOrigin

FIXTURES = os.path.join(REPO_ROOT, "Tests", "FerryImageFormatTests", "Fixtures")


class ImageDaemonTests(DaemonWithOrigin):
    origin_files = FIXTURES

    def setUp(self):
        self.client = Client(self.daemon.path, name="image-tests", timeout=30).connect()
        self.addCleanup(self.client.close)

    def url(self, name: str, query: str = "cc=max-age%3D600") -> str:
        return f"{self.base}/file/{name}?{query}&t={self._testMethodName}"

    def test_format_size_and_sources(self):
        img = self.client.image(self.url("webp-alpha-31x17.webp"))
        self.assertIsInstance(img, Image)
        self.assertEqual((img.format, img.width, img.height, img.source), ("webp", 31, 17, "network"))
        self.assertEqual((img.orientation, img.pages), (1, 1))
        with open(os.path.join(FIXTURES, "webp-alpha-31x17.webp"), "rb") as f:
            self.assertEqual(img.bytes, f.read())
        self.assertEqual(self.client.image(self.url("webp-alpha-31x17.webp")).source, "memory")
        self.assertTrue(self.client.evict_image(self.url("webp-alpha-31x17.webp")))
        self.assertEqual(self.client.image(self.url("webp-alpha-31x17.webp")).source, "disk",
                         "evicted from the loader's memory, still in the HTTP cache")

    def test_variants(self):
        thumb = self.client.image(self.url("webp-alpha-31x17.webp"), width=10, height=10, fit="cover", format="png")
        self.assertEqual((thumb.format, thumb.width, thumb.height, thumb.source), ("png", 10, 10, "made"))
        self.assertTrue(thumb.bytes.startswith(b"\x89PNG"))
        again = self.client.image(self.url("webp-alpha-31x17.webp"), width=10, height=10, fit="cover", format="png")
        self.assertEqual((again.source, again.bytes), ("memory", thumb.bytes))
        with self.assertRaises(FerryError) as cm:
            self.client.image(self.url("webp-alpha-31x17.webp"), width=10, fit="sideways")
        self.assertEqual(cm.exception.code, "invalid_argument")

    def test_not_an_image(self):
        with self.assertRaises(FerryError) as cm:
            self.client.image(self.url("page.html"))
        self.assertEqual(cm.exception.code, "invalid_image")
        self.assertIn("HTML", cm.exception.message)

    def test_prefetch_warms_the_memory_tier(self):
        urls = [self.url("gif-19x11.gif"), self.url("bmp-15x9.bmp")]
        self.assertEqual(self.client.prefetch_images(urls), 2)
        for _ in range(200):
            if self.client.stats()["image"]["in_flight"] == 0:
                break
            time.sleep(0.01)
        self.assertEqual(self.client.image(urls[1]).source, "memory")
        with self.assertRaises(FerryError) as cm:
            self.client.prefetch_images(["ftp://x/"])
        self.assertEqual(cm.exception.code, "invalid_argument")

    def test_prefetch_makes_variants(self):
        urls = [self.url("gif-19x11.gif"), self.url("webp-alpha-31x17.webp")]
        self.assertEqual(self.client.prefetch_images(urls, width=8, height=8, fit="cover", format="png"), 2)
        for _ in range(300):
            if self.client.stats()["image"]["variants_made"] >= 2:
                break
            time.sleep(0.01)
        thumb = self.client.image(urls[1], width=8, height=8, fit="cover", format="png")
        self.assertEqual((thumb.source, thumb.width, thumb.height, thumb.format), ("memory", 8, 8, "png"))
        with self.assertRaises(FerryError) as cm:
            self.client.prefetch_images(urls, width=8, fit="sideways")
        self.assertEqual(cm.exception.code, "invalid_argument")
