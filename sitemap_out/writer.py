"""Streaming, crash-safe sitemap writer: the object callers hold, composing one component
per job.

Layout of a run in ``out_dir``:

* The entry point is ``sitemap.xml``. It is the urlset itself when the run fits in one
  file and gzip is off; otherwise it is a sitemap index listing ``sitemap-1.xml[.gz]``,
  ``sitemap-2.xml[.gz]``, ... by absolute URL under ``base_url``.
* Text format (``fmt="txt"``): one URL per line. A run that fits in one file with gzip off
  is published as ``sitemap.txt``. Text sitemaps have no index format of their own, so a
  split (or gzipped) text run is published as ``sitemap-N.txt[.gz]`` plus an XML index
  ``sitemap.xml`` listing them; search engines accept text sitemaps inside an index. The
  entry point is then ``sitemap.xml``.

The components, each in a module of its own:

* ``staging``: the lock on ``out_dir`` and the run's private staging folder, where
  everything is written and fsynced before it is published;
* ``parts``: the part files, rolled over exactly at ``max_urls`` and ``max_bytes``, through
  gzip when on; ``news``: the news sitemap beside them;
* ``compare`` and ``layout`` (``stable=True``): what changed against the set published
  before (read back by ``previous``), and the layout that keeps each URL in its old part;
  ``feed``: the feed of those changes, ``changes.atom``; ``stylesheet``: ``sitemap.xsl``,
  which a browser applies to show the XML files as a table;
* ``publish``: the index, then the manifest and the renames, in the order that leaves a
  valid published set whenever a run is killed.

With ``groups`` (``sitemap_out.groups``), each group has parts of its own, named after it,
rolled over and (stable) laid out on their own, all listed by the one ``sitemap.xml``
index: a group that changes rewrites only its own parts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final, Literal

from sitemap_out.changes import KINDS, ChangeLog
from sitemap_out.compare import Comparison
from sitemap_out.entry import Entry, check_uri
from sitemap_out.errors import EmptySitemapError, EntryError, IndexLimitError, SitemapOutError
from sitemap_out.groups import DEFAULT_GROUP, MAX_GROUPS, Grouping, name_problem
from sitemap_out.layout import StableLayout
from sitemap_out.limits import MAX_BYTES, MAX_NEWS_URLS, MAX_SITEMAPS_PER_INDEX, MAX_URLS
from sitemap_out.manifest import (
    FEED_NAME,
    LLMS_NAME,
    LOCK_NAME,
    MANIFEST_NAME,
    STAGING_PREFIX,
    is_reserved,
    left_in_place,
)
from sitemap_out.news import NewsSitemap
from sitemap_out.parts import PartInfo, Parts
from sitemap_out.previous import PreviousSet, read_previous
from sitemap_out.publish import ChangeCounts, GroupInfo, PublishResult, install, write_index
from sitemap_out.scratch import CHUNK, MAX_OPEN, Scratch
from sitemap_out.staging import Staging
from sitemap_out.stylesheet import XSL_NAME, check_href, stage_xsl

if TYPE_CHECKING:  # made with a feed only (_start_stable): a set without one never loads it
    from sitemap_out.feed import FeedWindow

__all__ = [
    "LOCK_NAME",
    "MANIFEST_NAME",
    "MAX_BYTES",
    "MAX_NEWS_URLS",
    "MAX_SITEMAPS_PER_INDEX",
    "MAX_URLS",
    "STAGING_PREFIX",
    "ChangeCounts",
    "GroupInfo",
    "PartInfo",
    "PublishResult",
    "SitemapWriter",
    "WriterConfigError",
    "is_reserved",
]

Format = Literal["xml", "txt"]

#: Scratch files of a stable layout open at once for writing, and their buffer (scratch.py).
_MAX_OPEN_BUCKETS: Final = MAX_OPEN
_SCRATCH_CHUNK: Final = CHUNK

#: An upper bound on one serialised <url> without extensions: a 2,048-character loc with
#: every character escaped (5 bytes each at worst) plus lastmod, changefreq and priority.
_PLAIN_ENTRY_BOUND = 2048 * 5 + 512


def _size_bound(entry: Entry) -> int | None:
    """An upper bound on the bytes of entry's ``<url>`` when it has images and alternates
    only (None with videos or news: serialise it), so that checking an entry of a dozen
    images does not serialise it once more than writing it does. Its URLs and language
    tags are ASCII (Entry checks them), each character escaped to at most 6 (``&apos;``),
    each image or alternate with its tags in under 64, and lastmod, changefreq and
    priority in 512."""
    if entry.videos or entry.news is not None:
        return None
    chars = len(entry.loc) + sum(map(len, entry.images))
    for alternate in entry.alternates:
        chars += len(alternate.href) + len(alternate.hreflang)
    return 6 * chars + 64 * (len(entry.images) + len(entry.alternates)) + 512


class WriterConfigError(SitemapOutError, ValueError):
    """A writer argument is unusable (bad base_url, limits, format); raised before any write."""


def _check_groups(groups: Grouping | None, base_url: str | None) -> tuple[str, ...]:
    """The names of the groups (the default one only, without ``groups``), checked."""
    if groups is None:
        return (DEFAULT_GROUP,)
    names = tuple(groups.names)
    if DEFAULT_GROUP not in names or len(set(names)) != len(names):
        raise WriterConfigError(f"groups must name each group once, {DEFAULT_GROUP!r} included")
    if len(names) > MAX_GROUPS:
        raise WriterConfigError(f"at most {MAX_GROUPS} groups, not {len(names)}")
    for name in names:
        problem = name_problem(name) if name != DEFAULT_GROUP else None
        if problem is not None:
            raise WriterConfigError(f"group name {name!r} {problem}")
    if base_url is None:
        raise WriterConfigError("groups need base_url: their parts are listed by an index")
    return names


def _stage_llms(
    out: Path,
    staging: Path,
    render: Callable[[str], str] | None,
    base: str | None,
    entry_name: str,
    names: list[str],
) -> tuple[str | None, str]:
    """llms.txt in the staging folder, fsynced, and on the names to install (before the
    entry point): its URL, when published, and the note of one left as published (no
    `render`: a run without it)."""
    if render is None:
        note = left_in_place(out, LLMS_NAME, "llms_txt")
        if note:  # not staged: left as published, kept on record
            names.insert(-1, LLMS_NAME)
        return None, note
    text = render((base or "") + entry_name)
    with open(staging / LLMS_NAME, "wb") as fh:
        fh.write(text.encode("utf-8", "replace"))
        fh.flush()
        os.fsync(fh.fileno())
    names.insert(-1, LLMS_NAME)
    return (None if base is None else base + LLMS_NAME), ""


def _clock() -> datetime:
    """The run's time, when the caller gives none (tests replace it to move through days)."""
    return datetime.now(UTC)


def _normalise_base_url(base_url: str | None) -> str | None:
    if base_url is None:
        return None
    problem = check_uri(base_url)
    if problem is not None:
        raise WriterConfigError(f"base_url {base_url!r} {problem}")
    if "?" in base_url or "#" in base_url:
        raise WriterConfigError(f"base_url {base_url!r} must be a folder URL, without ? or #")
    return base_url if base_url.endswith("/") else base_url + "/"


class SitemapWriter:
    """Append entries one at a time; ``publish()`` puts the finished set in place atomically.

    The lock is taken at construction, so a clash is reported before any crawling starts.
    Leaving a ``with`` block without ``publish()`` aborts, leaving the previous set as it was.
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
        stable: bool = False,
        now: datetime | None = None,
        changes: ChangeLog | None = None,
        feed_days: int | None = None,
        groups: Grouping | None = None,
        stylesheet: bool | str = False,
    ) -> None:
        """``stable``: entries come in increasing loc order, and the part files published
        before keep their URLs (``sitemap_out.layout``); ``now``: the run's time, the
        ``<lastmod>`` a re-written part gets in the index (default: the clock);
        ``changes``: where a stable run records the URLs added, removed and changed;
        ``feed_days``: also publish ``changes.atom``, the URLs added or changed in the last
        that many days (stable runs only: the feed is made of the changes); ``groups``:
        which group each entry's parts are in (``sitemap_out.groups``; an index always);
        ``stylesheet``: True publishes ``sitemap.xsl`` and names it in every XML file's
        header, a string names that href instead (one's own stylesheet; nothing published);
        text sitemaps and their index get none."""
        if fmt not in ("xml", "txt"):
            raise WriterConfigError(f"fmt must be 'xml' or 'txt', not {fmt!r}")
        if not isinstance(max_urls, int) or not 1 <= max_urls <= MAX_URLS:
            raise WriterConfigError(f"max_urls must be from 1 to {MAX_URLS}, not {max_urls!r}")
        if not isinstance(max_bytes, int) or not 1 <= max_bytes <= MAX_BYTES:
            raise WriterConfigError(f"max_bytes must be from 1 to {MAX_BYTES}, not {max_bytes!r}")
        if not 0 <= compresslevel <= 9:
            raise WriterConfigError(f"compresslevel must be from 0 to 9, not {compresslevel!r}")
        self._base_url = _normalise_base_url(base_url)
        if gzip and self._base_url is None:
            raise WriterConfigError(
                "gzip=True needs base_url: gzipped parts are always listed by a sitemap.xml "
                "index, and an index lists them by absolute URL"
            )
        if feed_days is not None:
            if not stable or self._base_url is None:
                raise WriterConfigError("feed_days needs stable=True and base_url")
            if not isinstance(feed_days, int) or not 1 <= feed_days <= 3650:
                raise WriterConfigError(f"feed_days must be from 1 to 3650, not {feed_days!r}")
        names = _check_groups(groups, self._base_url)
        if isinstance(stylesheet, str) and (problem := check_href(stylesheet)) is not None:
            raise WriterConfigError(f"stylesheet {stylesheet!r} {problem}")
        self._stylesheet: str | None = None
        if fmt == "xml" and stylesheet:
            self._stylesheet = XSL_NAME if stylesheet is True else str(stylesheet)
        self._own_xsl = fmt == "xml" and stylesheet is True
        self._now = (now or _clock()).replace(microsecond=0)
        if self._now.tzinfo is None:
            raise WriterConfigError("now must be timezone-aware")
        self._gzip = gzip
        self._xml = fmt == "xml"
        self._max_urls = max_urls
        self._max_bytes = max_bytes
        self._out = Path(out_dir)
        self._staging = Staging(self._out)
        self._open = True
        self._count = 0
        self._grouping = groups
        self._groups = {
            name: Parts(
                self._staging.path,
                xml=self._xml,
                gzip=gzip,
                max_urls=max_urls,
                max_bytes=max_bytes,
                compresslevel=compresslevel,
                max_parts=MAX_SITEMAPS_PER_INDEX,
                group=name,
                stylesheet=self._stylesheet,
            )
            for name in names
        }
        self._parts = parts = self._groups[DEFAULT_GROUP]
        self._serialise = parts.serialise
        self._fixed = parts.fixed
        #: whether any entry without extensions fits a file (a loc of at most 2,048
        #: characters and three short fields does, but in a tiny max_bytes): check() trusts it
        self.plain_fits = max_bytes - self._fixed[0] >= _PLAIN_ENTRY_BOUND
        self._news = NewsSitemap(parts)
        self._stable = stable
        if stable and changes is None:
            changes = ChangeLog()
        if changes is not None and groups is not None:
            changes.groups = {name: dict.fromkeys(KINDS, 0) for name in names}
        self._changes = changes
        self._previous: PreviousSet | None = None
        self._comparison: Comparison | None = None
        self._last_loc: str | None = None  # a stable writer's last entry (loc order)
        self._layouts: dict[str, StableLayout] = {}  # by group, when the old layout is kept
        self._scratch: Scratch | None = None
        self._feed: FeedWindow | None = None
        self._feed_note = ""  # a feed published before, left in place by a run without one
        self._llms: Callable[[str], str] | None = None  # llms.txt's text, of the sitemap URL
        self._llms_note = ""  # as _feed_note, for llms.txt
        if stable:
            try:
                self._start_stable(feed_days)
            except BaseException:
                self.abort()
                raise

    def _start_stable(self, feed_days: int | None) -> None:
        """Read the last feed and the published set; route entries to its parts when its
        layout can be kept."""
        assert self._changes is not None
        folder = self._staging.path
        if feed_days is not None:  # the feed's module is imported here only (#26)
            from sitemap_out.feed import MAX_ENTRIES, FeedWindow

            self._changes.keep = max(self._changes.keep, MAX_ENTRIES)
            self._feed = FeedWindow(self._out, feed_days, self._now)
        previous = self._previous = read_previous(self._out, folder, self._settings())
        # nothing published (an index without parts still keeps its layout), no list
        # asked for: every entry is added, counted at the publish, none compared (#26)
        if not (previous.parts or previous.reusable or self._changes.details or self._feed):
            return
        self._comparison = Comparison(
            previous,
            self._changes,
            folder,
            xml=self._xml,
            now=self._now,
            feed=self._feed,
            chunk=_SCRATCH_CHUNK,
        )
        if previous.reusable:
            self._scratch = Scratch(folder, _MAX_OPEN_BUCKETS, _SCRATCH_CHUNK)
            self._layouts = {
                name: StableLayout(
                    previous.of_group(name), parts, self._scratch, self._now, self._out
                )
                for name, parts in self._groups.items()
            }

    def _settings(self) -> dict[str, object]:
        """The settings a layout depends on, recorded in the manifest."""
        return {
            "base_url": self._base_url,
            "format": "xml" if self._xml else "txt",
            "gzip": self._gzip,
            "max_urls": self._max_urls,
            "max_bytes": self._max_bytes,
        }

    # -- appending -------------------------------------------------------------------------

    @property
    def count(self) -> int:
        """Entries added so far."""
        return self._count

    @property
    def published_count(self) -> int | None:
        """URLs the parts published before list, as read once at the start (a stable
        writer): what the publish guard compares the new parts with. The news sitemap is
        not a part and is not counted. None when nothing readable was published."""
        previous = self._previous
        if previous is None or not previous.parts:
            return None
        return sum(part.url_count for part in previous.parts)

    @property
    def staging_dir(self) -> Path:
        return self._staging.path

    @property
    def layout_note(self) -> str:
        """Why a stable run lays its part files out afresh, when it does and a set was
        published before; "" otherwise."""
        return self._previous.note if self._previous is not None else ""

    def add(self, entry: Entry) -> None:
        """Append one entry, rolling to a new part first if it would pass either limit."""
        if not self._open:
            raise SitemapOutError("this writer has already published or aborted")
        if not isinstance(entry, Entry):
            raise TypeError(f"expected an Entry, got {type(entry).__name__}")
        data = self._serialise(entry).encode()
        size = len(data)
        ns = entry.namespaces
        if self._fixed[ns] + size > self._max_bytes:
            # Checked before rolling over, so no empty (invalid) part is ever left open.
            self._too_big(entry, size)
        group = DEFAULT_GROUP if self._grouping is None else self._grouping.group_of(entry.loc)
        parts = self._groups.get(group)
        if parts is None:
            raise SitemapOutError(f"group_of gave {group!r} for {entry.loc[:200]!r}, not a group")
        if self._stable:
            loc = entry.loc
            if self._last_loc is not None and loc <= self._last_loc:
                raise SitemapOutError(
                    f"a stable layout takes entries in increasing loc order; {loc[:200]!r} "
                    f"came after {self._last_loc[:200]!r}"
                )
            self._last_loc = loc
        comparison = self._comparison
        if comparison is not None:
            old = comparison.compare(entry, group)
            if self._layouts:
                # a URL that moved from another group is new to this one's layout
                number = old.number if old is not None and old.group == group else None
                self._layouts[group].route(number, entry.loc, data, ns)
                self._count += 1
                return
        parts.append(data, ns, entry.lastmod)
        self._count += 1

    def check(self, entry: Entry) -> None:
        """Raise EntryError now if entry could never be written (too big even for a file of
        its own), so a caller that batches entries learns it at that entry, not a later one."""
        ns = entry.namespaces
        if not ns and self.plain_fits:
            return
        bound = _size_bound(entry) if ns else None
        if bound is not None and self._max_bytes - self._fixed[ns] >= bound:
            return  # not serialised twice: add() does it, and most entries fit with room
        size = len(self._serialise(entry).encode())
        if self._fixed[ns] + size > self._max_bytes:
            self._too_big(entry, size)

    def add_many(self, entries: Iterable[Entry]) -> None:
        """``add`` for each entry; lets the async wrapper cross into a thread once per batch."""
        add = self.add
        for entry in entries:
            add(entry)

    def add_news(self, entry: Entry) -> None:
        """Append one entry to the news sitemap, ``sitemap-news.xml[.gz]`` (``sitemap_out.news``):
        at most MAX_NEWS_URLS entries, each with ``news``; the entry is usually also added
        to the parts with :meth:`add`."""
        if not self._open:
            raise SitemapOutError("this writer has already published or aborted")
        if not self._xml:
            raise WriterConfigError("a news sitemap is XML: text sitemaps cannot carry news tags")
        if self._base_url is None:
            raise WriterConfigError("a news sitemap is listed by an index, which needs base_url")
        if not isinstance(entry, Entry) or entry.news is None:
            raise TypeError("add_news takes an Entry with news")
        self._news.add(entry)
        if self._feed is not None:
            self._feed.titled(entry.loc, entry.news.title)

    def add_llms_txt(self, render: Callable[[str], str]) -> None:
        """Also publish ``llms.txt`` with the set: ``render(sitemap_url)`` gives its text,
        called at publish, once the entry point (which the file links to) is named. A run
        without it leaves an llms.txt published before in place, as the feed."""
        if not self._open:
            raise SitemapOutError("this writer has already published or aborted")
        self._llms = render

    def _too_big(self, entry: Entry, size: int) -> None:
        need = self._fixed[entry.namespaces] + size
        raise EntryError(
            entry.loc, "loc", f"a file holding only this URL takes {need} bytes, over max_bytes"
        )

    # -- finishing -------------------------------------------------------------------------

    def publish(self) -> PublishResult:
        """Move the finished set into place (``sitemap_out.publish`` gives the order)."""
        if not self._open:
            raise SitemapOutError("this writer has already published or aborted")
        if self._count == 0:
            self.abort()
            raise EmptySitemapError(
                f"no URLs were added, so nothing was written to {self._out} (an empty urlset "
                "is invalid); the previously published sitemap, if any, is unchanged"
            )
        try:
            if self._comparison is not None:
                self._comparison.finish()
            for name, parts in self._groups.items():
                layout = self._layouts.get(name)
                if layout is not None:
                    layout.write()
                else:
                    parts.close()
                if self._comparison is None and self._stable and self._changes is not None:
                    self._changes.count("added", name, sum(p.url_count for p in parts.done))
            result = self._finish(self._news.close())
        finally:
            self.abort()
        return result

    def _finish(self, news: PartInfo | None) -> PublishResult:
        parts = self._parts.done
        staging = self._staging.path
        # a stable layout published as an index stays one: a night without news (or a site
        # shrunk to one part) must not turn sitemap-1.xml into sitemap.xml and back
        kept_index = bool(self._layouts) and self._layouts[DEFAULT_GROUP].was_index
        is_index = (
            len(parts) > 1 or self._gzip or news is not None or kept_index or len(self._groups) > 1
        )
        if is_index and self._base_url is None:
            raise WriterConfigError(
                f"{self._count} URLs needed {len(parts)} files, and the sitemap.xml index "
                "listing them needs absolute URLs: pass base_url"
            )
        entry_name = "sitemap.xml" if self._xml or is_index else "sitemap.txt"
        for group in self._groups.values():  # one file: its one part is the entry file
            group.name_parts(None if is_index or group is not self._parts else entry_name)
        groups: list[GroupInfo] = []
        for name, group in self._groups.items():
            if self._layouts:
                group.done[:] = self._layouts[name].keep_unchanged(group.done)
            groups.append(GroupInfo.of(name, group.done, self._changes))
        parts = [info for group in self._groups.values() for info in group.done]
        if len(parts) > MAX_SITEMAPS_PER_INDEX:
            raise IndexLimitError(
                f"this run needs {len(parts)} sitemap files, more than the "
                f"{MAX_SITEMAPS_PER_INDEX} one index may list (indexes must not nest)"
            )
        if is_index:
            assert self._base_url is not None
            write_index(staging / entry_name, self._base_url, parts, news, self._stylesheet)
            names = [p.name for p in parts] + [entry_name]
            if news is not None:
                names.insert(-1, news.name)
        else:
            names = [entry_name]
        feed_url = None
        if self._feed is not None:
            assert self._base_url is not None and self._changes is not None
            feed_url = self._feed.stage(staging, self._base_url, self._changes.newest())
            names.insert(-1, FEED_NAME)
        else:
            self._feed_note = left_in_place(self._out, FEED_NAME, "--feed")
            if self._feed_note:  # not staged: left as published, kept on record
                names.insert(-1, FEED_NAME)
        if self._own_xsl and stage_xsl(self._out, staging):
            names.insert(0, XSL_NAME)  # placed before the files that name it
        llms_url, self._llms_note = _stage_llms(
            self._out, staging, self._llms, self._base_url, entry_name, names
        )
        self._staging.fsync()
        install(self._out, staging, names, self._settings())
        return PublishResult(
            entry_point=self._out / entry_name,
            files=[self._out / n for n in names],
            url_count=self._count,
            sitemap_url=None if self._base_url is None else self._base_url + entry_name,
            parts=tuple(parts),
            is_index=is_index,
            changes=self._change_counts(),
            feed_url=feed_url,
            news=news,
            groups=tuple(groups) if self._grouping is not None else (),
            llms_url=llms_url,
        )

    def _change_counts(self) -> ChangeCounts | None:
        changes = self._changes
        if not self._stable or changes is None:
            return None
        counts = changes.counts
        note = "; ".join(n for n in (self.layout_note, self._feed_note, self._llms_note) if n)
        return ChangeCounts(counts["added"], counts["removed"], counts["changed"], note)

    def abort(self) -> None:
        """Discard this run's staging folder and release the lock; the published set is as was."""
        if not self._open:
            return
        self._open = False
        for parts in self._groups.values():
            parts.discard()
        self._news.discard()
        if self._scratch is not None:
            self._scratch.close_all()
        self._staging.discard()

    def __enter__(self) -> SitemapWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.abort()
