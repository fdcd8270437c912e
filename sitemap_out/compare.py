"""What a stable run finds against the set published before it, URL by URL.

The run's entries come in loc order, and so do the old parts' scratch files of
``[loc, lastmod]`` lines (``sitemap_out.previous``): one merge of the two records each URL
as added (not listed before), changed (listed with another ``<lastmod>``) or removed
(listed before, not now) in a :class:`~sitemap_out.changes.ChangeLog`, with no dict of
every old loc in memory; and says which old part listed each URL, for the layout.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sitemap_out.changes import ChangeLog
from sitemap_out.entry import Entry, format_lastmod, lastmod_key
from sitemap_out.groups import DEFAULT_GROUP
from sitemap_out.previous import OldPart, PreviousSet, old_locs
from sitemap_out.scratch import CHUNK

if TYPE_CHECKING:  # made by the writer with a feed only: a set without one never loads it
    from sitemap_out.feed import FeedWindow

__all__ = ["Comparison"]

#: An old URL: loc, lastmod as published, the index in previous.parts of the part listing it.
_Old = tuple[str, str | None, int]


class Comparison:
    """``xml``: a text sitemap has no lastmods, so none is compared. ``feed``: the last
    feed's window, which a removed URL leaves."""

    def __init__(
        self,
        previous: PreviousSet,
        changes: ChangeLog,
        staging: Path,
        *,
        xml: bool,
        now: datetime,
        feed: FeedWindow | None = None,
        chunk: int = CHUNK,
    ) -> None:
        self._changes = changes
        self._xml = xml
        self._now = now
        self._feed = feed
        changes.open(staging)
        changes.previous = bool(previous.parts)
        self._parts = previous.parts
        olds = [old_locs(p, i, chunk) for i, p in enumerate(previous.parts)]
        # (one part, a single sitemap.xml: its lines as they are, not through a merge)
        self._old: Iterator[_Old] = olds[0] if len(olds) == 1 else heapq.merge(*olds)
        self._old_head: _Old | None = next(self._old, None)

    def compare(self, entry: Entry, group: str = DEFAULT_GROUP) -> OldPart | None:
        """Record what became of entry's URL (in ``group``), and of the old URLs before it;
        return the old part that listed it, None for a URL not listed before."""
        loc = entry.loc  # (in loc order: the writer checks it)
        changes = self._changes
        head = self._old_head
        while head is not None and head[0] < loc:
            self._removed(head)
            head = next(self._old, None)
        old = None
        if head is not None and head[0] == loc:
            old = self._parts[head[2]]
            lastmod = self._lastmod(entry)
            if head[1] != lastmod:
                when, title = self._feed_date(entry)
                changes.record("changed", loc, lastmod, head[1], when, title, group)
            while head is not None and head[0] == loc:
                head = next(self._old, None)
        elif changes.details:
            lastmod = self._lastmod(entry)
            changes.record("added", loc, lastmod, None, *self._feed_date(entry), group=group)
        else:  # counted only (no changes file, no feed): a first run's every URL
            changes.count("added", group)
        self._old_head = head
        return old

    def _lastmod(self, entry: Entry) -> str | None:
        """entry's lastmod as published (None in a text sitemap, which has none)."""
        if self._xml and entry.lastmod is not None:
            return format_lastmod(entry.lastmod)
        return None

    def _feed_date(self, entry: Entry) -> tuple[datetime, str]:
        """An entry's date in the feed (its lastmod, else the run's time) and its title
        there: the one the page's news or video markup gives, which the crawl has already
        parsed (no page is fetched again for a title), else ""."""
        when = lastmod_key(entry.lastmod) if entry.lastmod is not None else self._now
        if entry.news is not None:
            return when, entry.news.title
        return when, entry.videos[0].title if entry.videos else ""

    def finish(self) -> None:
        """Every old URL after the last entry was removed."""
        head = self._old_head
        while head is not None:
            self._removed(head)
            head = next(self._old, None)
        self._old_head = None

    def _removed(self, head: _Old) -> None:
        self._changes.record("removed", head[0], head[1], group=self._parts[head[2]].group)
        if self._feed is not None:
            self._feed.drop(head[0])
