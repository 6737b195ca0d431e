"""The daemon's shared image loader (``image.*``, PROTOCOL.md section 6): ``ImageMixin`` and ``Image``.

One loader for every client: a memory tier, the HTTP cache of ``fetch`` as its disk tier, and one download per image
however many clients ask at once::

    img = ferry.image("https://img.example.com/poster/42.jpg")
    print(img.format, img.width, img.height, len(img.bytes), img.source)   # source: "memory", "disk" or "network"
"""

from collections.abc import Iterable, Mapping
from typing import Any, Dict, NamedTuple, Optional, Tuple, Union

__all__ = ["Image", "ImageMixin"]


class Image(NamedTuple):
    """An image from the daemon's shared loader (``Client.image``).

    ``format`` comes from decoding the bytes (jpeg, png, gif, webp, avif, heic, tiff, svg, pdf, jxl, bmp, …);
    ``width`` and ``height`` are as displayed (EXIF orientation applied), ``orientation`` (1…8, 1: none) is what a
    viewer drawing the bytes must still apply, ``pages`` counts the frames of an animation (1 otherwise);
    ``source`` says where the daemon found it: ``"memory"``, ``"disk"`` or ``"network"`` (the daemon's string,
    equal to an ``ImageSource`` member); ``url`` is the URL of the bytes after redirects.

    ::

        img = ferry.image("https://img.example.com/poster/42.jpg")
        print(img.format, img.width, img.height, len(img.bytes), img.source)
    """
    bytes: bytes
    format: str
    width: int
    height: int
    source: str
    url: str
    orientation: int = 1
    pages: int = 1


class ImageMixin:
    """The ``image``, ``prefetch_images`` and ``evict_image`` methods of ``ferry.Client`` (built on
    ``Connection.call``)."""

    def image(self, url: str, headers: Optional[Union[Mapping[str, str], Iterable[Tuple[str, str]]]] = None, *,
              cache: Optional[str] = None, timeout_ms: Optional[int] = None,
              request_timeout_ms: Optional[int] = None, width: Optional[int] = None, height: Optional[int] = None,
              fit: Optional[str] = None, format: Optional[str] = None, quality: Optional[int] = None,
              density: Optional[int] = None) -> Image:
        """An image through the daemon's shared image loader (memory, disk, or one download shared by every client
        asking at once). A body that is not an image raises ``FerryError("invalid_image")``.

        ``cache`` is a ``fetch`` cache mode (a str or a ``CacheMode`` member), ``timeout_ms`` the limit of each
        exchange with the origin (as for ``fetch``), ``request_timeout_ms`` the deadline of the whole request.

        ``width``, ``height``, ``fit`` (an ``ImageFit``: inside, cover, contain, fill, outside), ``format`` (an
        ``ImageOutputFormat``: original, jpeg, png, webp, avif), ``quality`` (1-100) and ``density`` (1-4) ask for
        a variant, made once by the daemon for every client and kept while the original is unchanged
        (``img.source == "made"`` when it was made for this request).

        ::

            img = ferry.image("https://img.example.com/a.png")
            open("a." + img.format, "wb").write(img.bytes)
            thumb = ferry.image("https://img.example.com/a.png", width=200, height=200, fit="cover", format="webp")
        """
        args = _image_args(url, headers, cache, timeout_ms, width, height, fit, format, quality, density)
        result, body = self.call("image.get", args, timeout_ms=request_timeout_ms)
        return _image_result(url, result, body)

    def prefetch_images(self, urls: Iterable[str], *, width: Optional[int] = None, height: Optional[int] = None,
                        fit: Optional[str] = None, format: Optional[str] = None, quality: Optional[int] = None,
                        density: Optional[int] = None) -> int:
        """Queues downloads that warm the daemon's caches, behind every direct request; with variant arguments (as
        ``image``), that variant of each URL is made too. Returns how many were queued.

        ::

            ferry.prefetch_images(urls, width=88, height=88, fit="cover")
        """
        args = _prefetch_args(urls, width, height, fit, format, quality, density)
        return int(self.call("image.prefetch", args)[0].get("queued", 0))

    def evict_image(self, url: str) -> bool:
        """Drops a URL's image from the loader's memory tier; returns whether it was there."""
        return bool(self.call("image.evict", {"url": url})[0].get("evicted", False))


# ----- the pure parts of the image methods, shared with ferry.aio.AsyncClient

def _variant_args(args: Dict[str, Any], width: Optional[int], height: Optional[int], fit: Optional[str],
                  format: Optional[str], quality: Optional[int], density: Optional[int]) -> Dict[str, Any]:
    for name, value in (("width", width), ("height", height), ("fit", fit), ("format", format),
                        ("quality", quality), ("density", density)):
        if value is not None:
            args[name] = value
    return args


def _image_args(url: str, headers: Any, cache: Optional[str], timeout_ms: Optional[int], width: Optional[int],
                height: Optional[int], fit: Optional[str], format: Optional[str], quality: Optional[int],
                density: Optional[int]) -> Dict[str, Any]:
    """``image.get``'s args; ValueError when ``url`` is not a str."""
    if not isinstance(url, str):
        raise ValueError("url must be a str")
    args: Dict[str, Any] = {"url": url}
    if headers:
        pairs = list(headers.items()) if isinstance(headers, Mapping) else [tuple(h) for h in headers]
        args["headers"] = [[str(n), str(v)] for n, v in pairs]
    if cache is not None:
        args["cache"] = cache
    if timeout_ms is not None:
        args["timeout_ms"] = timeout_ms
    return _variant_args(args, width, height, fit, format, quality, density)


def _image_result(url: str, result: dict, body: bytes) -> Image:
    """An ``image.get`` reply as an Image."""
    return Image(body, result.get("format", ""), int(result.get("width", 0)), int(result.get("height", 0)),
                 result.get("source", ""), result.get("url", url), int(result.get("orientation", 1)),
                 int(result.get("pages", 1)))


def _prefetch_args(urls: Iterable[str], width: Optional[int], height: Optional[int], fit: Optional[str],
                   format: Optional[str], quality: Optional[int], density: Optional[int]) -> Dict[str, Any]:
    """``image.prefetch``'s args."""
    return _variant_args({"urls": list(urls)}, width, height, fit, format, quality, density)
