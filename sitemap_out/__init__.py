"""sitemap_out: streaming, crash-safe sitemap writing and bounded sitemap reading.

Usable on its own as a library::

    from sitemap_out import Entry, SitemapWriter

    with SitemapWriter("public/", "https://example.com/", gzip=True) as w:
        for url in urls:
            w.add(Entry(url))
        w.publish()
"""

from typing import TYPE_CHECKING, Any

from sitemap_out.aio import AsyncSitemapWriter
from sitemap_out.entry import Alternate, Entry, encode_uri, format_lastmod
from sitemap_out.errors import (
    EmptySitemapError,
    EntryError,
    IndexLimitError,
    SitemapOutError,
    WriterLockedError,
)
from sitemap_out.writer import PartInfo, PublishResult, SitemapWriter, WriterConfigError

if TYPE_CHECKING:
    from sitemap_out.reader import Problem, ReadEntry, ReadResult, read_sitemap

#: Loaded on first use (PEP 562): the reader and lxml are no part of a crawl's writing.
_READER = frozenset({"Problem", "ReadEntry", "ReadResult", "read_sitemap"})


def __getattr__(name: str) -> Any:
    if name in _READER:
        from sitemap_out import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Alternate",
    "AsyncSitemapWriter",
    "EmptySitemapError",
    "Entry",
    "EntryError",
    "IndexLimitError",
    "PartInfo",
    "Problem",
    "PublishResult",
    "ReadEntry",
    "ReadResult",
    "SitemapOutError",
    "SitemapWriter",
    "WriterConfigError",
    "WriterLockedError",
    "encode_uri",
    "format_lastmod",
    "read_sitemap",
]
