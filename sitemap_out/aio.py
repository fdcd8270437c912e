"""Async face of :class:`SitemapWriter` for the crawler's event loop.

Entries are collected into batches and each batch is handed to the sync writer in a worker
thread (``asyncio.to_thread``), so the loop never waits on disk and pays the thread hop once
per batch. The alternative, aiofiles, performs every write as its own thread hop. Measured
by ``bench/writer_bench.py`` (gzip off, 2-core shared box): batched sync writer 281,000
URLs/s over 1,000,000 URLs; aiofiles with one await per ``<url>`` 11,800 URLs/s over
100,000. Hence batching, ``DEFAULT_BATCH`` entries per hop.

Construction is synchronous on purpose: it takes the folder lock, so a clash with another
run is reported before the crawl starts rather than at the first flush.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from datetime import date, datetime
from pathlib import Path
from types import TracebackType

from sitemap_out.changes import ChangeLog
from sitemap_out.entry import Entry
from sitemap_out.groups import Grouping
from sitemap_out.limits import MAX_BYTES, MAX_URLS
from sitemap_out.publish import PublishResult
from sitemap_out.writer import Format, SitemapWriter

__all__ = ["AsyncSitemapWriter"]

DEFAULT_BATCH = 2000


class AsyncSitemapWriter:
    """``await add(e)`` / ``await publish()`` / ``await abort()``; same arguments as the sync one.

    An entry that could never fit in a file (too large for ``max_bytes``) is refused at its
    own ``add`` (``SitemapWriter.check``), so no batch is ever cut short by it; only too many
    parts for one index surfaces later, at the ``add`` that flushes a batch or at ``publish``.
    Entry validation itself already happened in ``Entry(...)``.
    """

    def __init__(
        self,
        out_dir: str | Path,
        base_url: str | None = None,
        *,
        gzip: bool = False,
        fmt: Format = "xml",
        max_urls: int = MAX_URLS,
        max_bytes: int = MAX_BYTES,
        compresslevel: int = 6,
        batch_size: int = DEFAULT_BATCH,
        stable: bool = False,
        now: datetime | None = None,
        changes: ChangeLog | None = None,
        feed_days: int | None = None,
        groups: Grouping | None = None,
        stylesheet: bool | str = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._writer = SitemapWriter(
            out_dir,
            base_url,
            gzip=gzip,
            fmt=fmt,
            max_urls=max_urls,
            max_bytes=max_bytes,
            compresslevel=compresslevel,
            stable=stable,
            now=now,
            changes=changes,
            feed_days=feed_days,
            groups=groups,
            stylesheet=stylesheet,
        )
        self._batch: list[Entry] = []
        self._batch_size = batch_size
        # Concurrent tasks may share one writer; the sync writer must see one batch at a time.
        self._lock = asyncio.Lock()

    @property
    def count(self) -> int:
        """Entries added so far, including those still waiting in the batch."""
        return self._writer.count + len(self._batch)

    @property
    def published_count(self) -> int | None:
        """SitemapWriter.published_count."""
        return self._writer.published_count

    @property
    def layout_note(self) -> str:
        """SitemapWriter.layout_note."""
        return self._writer.layout_note

    def check(self, entry: Entry) -> None:
        """Raise EntryError now if entry could never be written (SitemapWriter.check)."""
        self._writer.check(entry)

    def check_plain(
        self,
        loc: str,
        lastmod: datetime | date | None = None,
        changefreq: str | None = None,
        priority: float | None = None,
    ) -> None:
        """``check(Entry(loc, lastmod, changefreq, priority))``, the entry made only when a
        plain one may not fit (SitemapWriter.plain_fits: a tiny max_bytes): for a caller
        that checks each entry's values when it decides them and writes the entry later (a
        crawl checks a page when it lists it: Entry.check_values, #26)."""
        Entry.check_values(loc, lastmod, changefreq, priority)
        writer = self._writer
        if not writer.plain_fits:
            writer.check(Entry.normalised(loc, lastmod, changefreq, priority))

    def plain_checker(self) -> Callable[[str, datetime | None, str | None, float | None], None]:
        """check_plain, or the function it comes to when a plain entry always fits
        (Entry.check_values; SitemapWriter.plain_fits is known when the writer is made): a
        crawl checks every page it lists with it, and the layer between was two calls a
        page (#26)."""
        return Entry.check_values if self._writer.plain_fits else self.check_plain

    async def add(self, entry: Entry) -> None:
        if not isinstance(entry, Entry):
            raise TypeError(f"expected an Entry, got {type(entry).__name__}")
        self._writer.check(entry)  # an entry that can never fit fails here, not in a batch
        self._batch.append(entry)
        if len(self._batch) >= self._batch_size:
            await self._flush()

    async def add_many(self, entries: Iterable[Entry]) -> None:
        """add() for each entry in order, checked as add() checks it (an entry that can
        never fit fails at itself, those before it added), awaiting only as a batch fills:
        a crawl's publish hands its entries a chunk at a time, where a coroutine an entry
        was a third of the entry's cost here (#26)."""
        check, size = self._writer.check, self._batch_size
        for entry in entries:
            if not isinstance(entry, Entry):
                raise TypeError(f"expected an Entry, got {type(entry).__name__}")
            check(entry)
            batch = self._batch
            batch.append(entry)
            if len(batch) >= size:  # (a generator of millions: never all held)
                await self._flush()

    async def _flush(self) -> None:
        async with self._lock:
            batch, self._batch = self._batch, []
            if batch:
                await asyncio.to_thread(self._writer.add_many, batch)

    async def add_news(self, entries: list[Entry]) -> None:
        """SitemapWriter.add_news for each entry (at most 1,000: one thread hop)."""
        await self._flush()
        async with self._lock:
            await asyncio.to_thread(self._add_news, entries)

    def _add_news(self, entries: list[Entry]) -> None:
        for entry in entries:
            self._writer.add_news(entry)

    def add_llms_txt(self, render: Callable[[str], str]) -> None:
        """SitemapWriter.add_llms_txt: render runs in publish's thread."""
        self._writer.add_llms_txt(render)

    async def publish(self) -> PublishResult:
        try:
            await self._flush()
        except BaseException:
            await self.abort()
            raise
        async with self._lock:
            return await asyncio.to_thread(self._writer.publish)

    async def abort(self) -> None:
        self._batch = []
        async with self._lock:
            await asyncio.to_thread(self._writer.abort)

    async def __aenter__(self) -> AsyncSitemapWriter:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.abort()
