"""Where a crawl's sitemap goes: one set in --output, or, with allowed_hosts, one set per
host in --output/<host>/ (a sitemap may list only URLs of its own host, sitemaps.org's
cross-submission aside). Each host's set is a writer of its own, published atomically as a
single crawl's is, with its own previous set, rollover and stable layout."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from datetime import date, datetime
from pathlib import Path
from typing import Any

from crawler.config import Config
from crawler.core.fleet import site_folder
from crawler.core.groups import Groups
from crawler.core.screen import Plan
from crawler.core.urls import join_parts
from sitemap_out import AsyncSitemapWriter, Entry, PublishResult
from sitemap_out.changes import ChangeLog
from sitemap_out.publish import GroupInfo

__all__ = ["CrossHostWriter", "HostWriters", "OneWriter", "open_output", "robots_line"]

#: (the origin whose robots.txt should name a sitemap, the sitemap's URL)
RobotsLine = tuple[str, str]


class OneWriter(AsyncSitemapWriter):
    """The usual output: one sitemap set, for the start host."""

    def robots_lines(self, published: PublishResult, default: str) -> tuple[RobotsLine, ...]:
        url = published.sitemap_url or default
        return ((join_parts(url)[1], url),)


class CrossHostWriter(OneWriter):
    """cross_host: one set in --output listing every host's URLs. sitemaps.org allows it
    only when each host's robots.txt names the sitemap (or the hosts are verified together
    in Search Console), so each host listed gets its line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.origins: dict[str, None] = {}

    async def add(self, entry: Entry) -> None:
        self.origins[join_parts(entry.loc)[1]] = None
        await super().add(entry)

    async def add_many(self, entries: Iterable[Entry]) -> None:
        entries = list(entries)
        origins = self.origins
        for entry in entries:
            origins[join_parts(entry.loc)[1]] = None
        await super().add_many(entries)

    def robots_lines(self, published: PublishResult, default: str) -> tuple[RobotsLine, ...]:
        ((home, url),) = super().robots_lines(published, default)
        return tuple((origin, url) for origin in {home: None, **self.origins})


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

    def check_plain(
        self,
        loc: str,
        lastmod: datetime | date | None = None,
        changefreq: str | None = None,
        priority: float | None = None,
    ) -> None:
        self._for(loc).check_plain(loc, lastmod, changefreq, priority)

    def plain_checker(self) -> Callable[[str, datetime | None, str | None, float | None], None]:
        """check_plain: each host's writer is made at its first listing."""
        return self.check_plain

    async def add(self, entry: Entry) -> None:
        await self._for(entry.loc).add(entry)

    async def add_many(self, entries: Iterable[Entry]) -> None:
        """Each entry to its host's writer, each writer's in the order given."""
        by_writer: dict[OneWriter, list[Entry]] = {}
        for entry in entries:
            by_writer.setdefault(self._for(entry.loc), []).append(entry)
        for writer, mine in by_writer.items():
            await writer.add_many(mine)

    async def add_news(self, entries: list[Entry]) -> None:
        by_host: dict[str, list[Entry]] = {}
        for entry in entries:
            by_host.setdefault(join_parts(entry.loc)[1], []).append(entry)
        for host_entries in by_host.values():
            await self._for(host_entries[0].loc).add_news(host_entries)

    def add_llms_txt(self, render: Callable[[str], str]) -> None:
        """One llms.txt for the site, beside the start host's sitemap: it names every
        host's listed pages, each host's under its own heading."""
        self._for(self._start + "/").add_llms_txt(render)

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
            groups=GroupInfo.over_sets([result.groups for result in results]),
        )

    async def abort(self) -> None:
        for writer in self.writers.values():
            await writer.abort()

    def robots_lines(self, published: PublishResult, default: str) -> tuple[RobotsLine, ...]:
        urls = [r.sitemap_url for r in self._published if r.sitemap_url is not None]
        return tuple((join_parts(url)[1], url) for url in urls)


def open_output(
    config: Config, plan: Plan, changes: ChangeLog, groups: Groups
) -> OneWriter | HostWriters:
    """The writer(s) a crawl lists into."""

    def make(folder: Path, base_url: str, kind: type[OneWriter] = OneWriter) -> OneWriter:
        return kind(
            folder,
            base_url,
            gzip=config.gzip,
            fmt="txt" if config.format == "txt" else "xml",
            max_urls=config.max_urls_per_file,
            max_bytes=config.max_bytes_per_file,
            stable=True,  # the listings come out of the spool in loc order
            changes=changes,
            feed_days=config.feed_days if config.feed else None,
            groups=groups or None,
            stylesheet=(config.stylesheet_url or True) if config.stylesheet else False,
        )

    if plan.hosts is None:
        return make(config.output, plan.base_url)
    if config.cross_host:
        return make(config.output, plan.base_url, CrossHostWriter)
    return HostWriters(make, config.output, plan)


def robots_line(line: RobotsLine) -> str:
    """What the operator adds to which robots.txt."""
    origin, url = line
    return f"add this line to {origin}/robots.txt:  Sitemap: {url}"
