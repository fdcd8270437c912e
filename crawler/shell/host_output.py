"""Where a crawl's sitemap goes: one set in --output, or, with allowed_hosts, one set per
host in --output/<host>/ (a sitemap may list only URLs of its own host, sitemaps.org's
cross-submission aside). Each host's set is a writer of its own, published atomically as a
single crawl's is, with its own previous set, rollover and stable layout."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from crawler.config import Config
from crawler.core.fleet import site_folder
from crawler.core.groups import Groups
from crawler.core.screen import Plan
from crawler.core.urls import join_parts
from sitemap_out import AsyncSitemapWriter, Entry, PublishResult
from sitemap_out.changes import ChangeLog

__all__ = ["HostWriters", "OneWriter", "open_output", "robots_line"]


class OneWriter(AsyncSitemapWriter):
    """The usual output: one sitemap set, for the start host."""

    def sitemap_urls(self, published: PublishResult, default: str) -> tuple[str, ...]:
        return (published.sitemap_url or default,)


class HostWriters:
    """One writer per host, made when the host's first listing comes; the start host's
    sitemap is written under the start's folder URL, another's under its root."""

    def __init__(self, make: Callable[[Path, str], OneWriter], output: Path, plan: Plan):
        self._make = make
        self._output = output
        self._start = join_parts(plan.start)[1]
        self._start_base = plan.base_url
        self.writers: dict[str, OneWriter] = {}  # origin -> its writer
        self._published: list[PublishResult] = []

    def _for(self, loc: str) -> OneWriter:
        origin = join_parts(loc)[1]
        writer = self.writers.get(origin)
        if writer is None:
            base = self._start_base if origin == self._start else origin + "/"
            folder = self._output / site_folder(origin + "/")
            writer = self.writers[origin] = self._make(folder, base)
        return writer

    @property
    def count(self) -> int:
        return sum(w.count for w in self.writers.values())

    @property
    def published_count(self) -> int | None:
        known = [w.published_count for w in self.writers.values()]
        return None if any(c is None for c in known) else sum(c or 0 for c in known)

    @property
    def layout_note(self) -> str:
        return "; ".join(
            dict.fromkeys(w.layout_note for w in self.writers.values() if w.layout_note)
        )

    def check(self, entry: Entry) -> None:
        self._for(entry.loc).check(entry)

    async def add(self, entry: Entry) -> None:
        await self._for(entry.loc).add(entry)

    async def add_news(self, entries: list[Entry]) -> None:
        by_host: dict[str, list[Entry]] = {}
        for entry in entries:
            by_host.setdefault(join_parts(entry.loc)[1], []).append(entry)
        for host_entries in by_host.values():
            await self._for(host_entries[0].loc).add_news(host_entries)

    async def publish(self) -> PublishResult:
        """Each host's set, the start host's last; the start's result, with every file
        and URL counted. A host with nothing to list keeps its previous set."""
        ordered = sorted(self.writers.items(), key=lambda item: item[0] == self._start)
        results = []
        for _, writer in ordered:
            if writer.count:
                results.append(await writer.publish())
            else:
                await writer.abort()
        self._published = results
        last = results[-1]
        return dataclasses.replace(
            last,
            files=[path for result in results for path in result.files],
            url_count=sum(result.url_count for result in results),
        )

    async def abort(self) -> None:
        for writer in self.writers.values():
            await writer.abort()

    def sitemap_urls(self, published: PublishResult, default: str) -> tuple[str, ...]:
        return tuple(r.sitemap_url for r in self._published if r.sitemap_url is not None)


def open_output(config: Config, plan: Plan, changes: ChangeLog) -> OneWriter | HostWriters:
    """The writer(s) a crawl lists into."""

    def make(folder: Path, base_url: str) -> OneWriter:
        return OneWriter(
            folder,
            base_url,
            gzip=config.gzip,
            fmt="txt" if config.format == "txt" else "xml",
            max_urls=config.max_urls_per_file,
            max_bytes=config.max_bytes_per_file,
            stable=True,  # the listings come out of the spool in loc order
            changes=changes,
            feed_days=config.feed_days if config.feed else None,
            groups=Groups.parse(config.groups) or None,
        )

    if plan.hosts is None:
        return make(config.output, plan.base_url)
    return HostWriters(make, config.output, plan)


def robots_line(sitemap_url: str) -> str:
    """The robots.txt a sitemap is named in (its host's), and the line."""
    return f"add this line to {join_parts(sitemap_url)[1]}/robots.txt:  Sitemap: {sitemap_url}"
