"""The news sitemap, ``sitemap-news.xml[.gz]``: a file of its own beside the parts.

Google reads at most MAX_NEWS_URLS URLs in a news sitemap and wants it fresh, so it is
written afresh every run, listed by the index beside the parts (a run with news always
publishes an index) and published with them or not at all; a stable layout never counts it
as a part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from sitemap_out.entry import Entry, lastmod_key
from sitemap_out.errors import EntryError
from sitemap_out.limits import MAX_NEWS_URLS
from sitemap_out.parts import COPY_CHUNK, OpenPart, PartInfo, Parts
from sitemap_out.xml import url_element

__all__ = ["NEWS_STEM", "NewsSitemap"]

NEWS_STEM: Final = "sitemap-news"


class NewsSitemap:
    """Entries with ``news``, written with the parts' format, limits and gzip."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._part: OpenPart | None = None

    def add(self, entry: Entry) -> None:
        parts = self._parts
        part = self._part
        if part is None:
            body = open(parts.staging / "news.body", "wb", buffering=COPY_CHUNK)  # noqa: SIM115
            part = self._part = OpenPart(0, body)
        if part.count >= MAX_NEWS_URLS:
            raise EntryError(
                entry.loc, "news", f"a news sitemap lists at most {MAX_NEWS_URLS} URLs"
            )
        data = url_element(entry).encode()
        ns = part.ns | entry.namespaces
        if parts.fixed[ns] + part.body_bytes + len(data) > parts.max_bytes:
            raise EntryError(entry.loc, "news", "the news sitemap would pass max_bytes")
        part.body.write(data)
        part.body_bytes += len(data)
        part.count += 1
        part.ns = ns
        if entry.lastmod is not None:
            key = lastmod_key(entry.lastmod)
            if part.newest_key is None or key > part.newest_key:
                part.newest_key, part.newest = key, entry.lastmod

    def close(self) -> PartInfo | None:
        """Stage the file; its PartInfo, or None when no entry was added."""
        part, self._part = self._part, None
        if part is None:
            return None
        parts = self._parts
        part.body.close()
        name = NEWS_STEM + parts.suffix
        header = parts.headers[part.ns]
        parts.write_body(name, header, Path(part.body.name))
        size = len(header) + part.body_bytes + len(parts.footer)
        return PartInfo(name, part.count, size, part.newest)

    def discard(self) -> None:
        if self._part is not None:
            self._part.body.close()
            self._part = None
