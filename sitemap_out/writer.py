"""Streaming, crash-safe sitemap writer: staging folder, exact rollover, lock, atomic publish.

Layout of a run in ``out_dir``:

* The entry point is ``sitemap.xml``. It is the urlset itself when the run fits in one
  file and gzip is off; otherwise it is a sitemap index listing ``sitemap-1.xml[.gz]``,
  ``sitemap-2.xml[.gz]``, ... by absolute URL under ``base_url``.
* Text format (``fmt="txt"``): one URL per line. A run that fits in one file with gzip off
  is published as ``sitemap.txt``. Text sitemaps have no index format of their own, so a
  split (or gzipped) text run is published as ``sitemap-N.txt[.gz]`` plus an XML index
  ``sitemap.xml`` listing them; search engines accept text sitemaps inside an index. The
  entry point is then ``sitemap.xml``.

Exact limits. A part file is rolled over *before* adding an entry would take it past
``max_urls`` or ``max_bytes`` uncompressed bytes, counted exactly: declaration, ``<urlset>``
start tag, every escaped ``<url>`` line and the closing tag. The start tag declares the
image/xhtml namespaces only when that file uses them, which is known only when the part
closes; so each part's body is streamed to a scratch file in the staging folder and, on
rollover, copied behind the header it turned out to need (through gzip when on). Memory
stays flat; the extra sequential copy costs about as much as the gzip pass it doubles as.

Crash safety. Everything is written into ``out_dir/.sitemap-staging-<pid>-<random>/`` and
fsynced. Only :meth:`SitemapWriter.publish` touches the published set, in this order:

1. the manifest (``.sitemap-manifest.json``, the names this tool owns in ``out_dir``) is
   rewritten as *old set plus new set*, so a file is on record before it is placed;
2. the new part files are renamed into place (``os.replace``), the entry point last,
   and ``out_dir`` is fsynced;
3. files of the old set that are not in the new one are deleted;
4. the manifest is rewritten as the new set.

A run that raises or is killed before step 2 leaves the published files byte-for-byte as
they were. A kill during step 2 leaves every file that the *current* entry point names
present and valid: parts are replaced by complete new parts, never truncated, and old
parts that the old index still lists are deleted only after the new entry point is in
place (the set may briefly mix old and new parts, which a reader accepts). A kill during
step 3 leaves extra, unlisted files that the manifest still records, so the next publish
deletes them. Only names that match the sitemap naming pattern are ever deleted, so an
unrelated file in ``out_dir`` is never touched, even with a tampered manifest.

Stable layout (``stable=True``, what the crawler uses; entries must come in loc order).
The set published before is read back (``sitemap_out.previous``) and its layout kept: a URL
stays in its part, new URLs fill the last part and then new parts numbered after the
highest, removed URLs leave theirs, and a part (not the last) left with fewer than a quarter
of ``max_urls`` gives its URLs to the last part and is dropped, leaving a gap in the
numbers. A part whose uncompressed bytes and name are those published is not staged at all
(step 2 leaves the published file untouched) and keeps its index ``<lastmod>``; a part
written again gets the run's time there. The index and the feed are left untouched when
their bytes are those published. The manifest records the settings of the layout (base URL,
format, gzip, limits) only at step 4, so a set left half-published by a kill, or made with
other settings, is laid out afresh by the next run. The URLs added, removed and changed go
to a :class:`~sitemap_out.changes.ChangeLog`; with ``feed_days`` the feed ``changes.atom``
is staged and published with the set (``sitemap_out.feed``).

A second writer on the same folder is refused through ``fcntl.flock`` on
``out_dir/.sitemap.lock``; the kernel drops that lock when its holder dies, so a killed run
never blocks the next one, which also deletes the killed run's staging folder.
"""

from __future__ import annotations

import functools
import gzip as gziplib
import hashlib
import heapq
import itertools
import json
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO, Final, Literal

from sitemap_out import locks
from sitemap_out.changes import ChangeLog
from sitemap_out.entry import Entry, check_uri, format_lastmod, lastmod_key
from sitemap_out.errors import (
    EmptySitemapError,
    EntryError,
    IndexLimitError,
    SitemapOutError,
    WriterLockedError,
)
from sitemap_out.feed import FEED_NAME, MAX_ENTRIES, FeedEntry, feed_document, read_feed
from sitemap_out.xml import (
    NS_ALL,
    URLSET_CLOSE,
    index_close,
    index_entry,
    index_open,
    text_line,
    url_element,
    urlset_open_for,
)

__all__ = [
    "LOCK_NAME",
    "MANIFEST_NAME",
    "MAX_BYTES",
    "MAX_NEWS_URLS",
    "MAX_SITEMAPS_PER_INDEX",
    "MAX_URLS",
    "STAGING_PREFIX",
    "ChangeCounts",
    "PartInfo",
    "PublishResult",
    "SitemapWriter",
    "WriterConfigError",
    "is_reserved",
]

MAX_URLS: Final = 50_000
MAX_BYTES: Final = 52_428_800
MAX_SITEMAPS_PER_INDEX: Final = 50_000
LOCK_NAME: Final = ".sitemap.lock"
MANIFEST_NAME: Final = ".sitemap-manifest.json"
STAGING_PREFIX: Final = ".sitemap-staging-"
_OWN_NAME: Final = re.compile(r"sitemap(?:-[1-9][0-9]*|-news)?\.(?:xml|txt)(?:\.gz)?|changes\.atom")
#: Google reads at most 1,000 URLs in a news sitemap.
MAX_NEWS_URLS: Final = 1000
NEWS_STEM: Final = "sitemap-news"
_COPY_CHUNK: Final = 1 << 20
#: A routed entry in a scratch file: loc length, serialised length, namespaces (xml.NS_*).
_RECORD: Final = struct.Struct("<IIB")

if TYPE_CHECKING:
    from sitemap_out.previous import OldPart, PreviousSet

Format = Literal["xml", "txt"]


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


@dataclass(frozen=True, slots=True)
class PartInfo:
    """One finished part file; ``newest_lastmod`` feeds the index's ``<lastmod>``.
    ``kept``: a stable layout left the published file untouched (same entries, same bytes),
    and its index ``<lastmod>`` is the one the index gave it before."""

    name: str
    url_count: int
    uncompressed_bytes: int
    newest_lastmod: datetime | date | None
    kept: bool = False


@dataclass(frozen=True, slots=True)
class ChangeCounts:
    """What a stable run found against the set published before it: URLs added (not listed
    before), removed (listed before, not now) and changed (listed in both, with another
    ``<lastmod>``). ``layout``: why the part files were laid out afresh, or ""."""

    added: int = 0
    removed: int = 0
    changed: int = 0
    layout: str = ""


@dataclass(frozen=True, slots=True)
class PublishResult:
    """What a publish put in place. ``files`` are final paths, the entry point last."""

    entry_point: Path
    files: list[Path]
    url_count: int
    sitemap_url: str | None
    parts: tuple[PartInfo, ...]
    is_index: bool
    changes: ChangeCounts | None = None  # stable runs only
    feed_url: str | None = None  # changes.atom, when published
    news: PartInfo | None = None  # sitemap-news.xml[.gz], listed in the index, when written


class _Part:
    """The open part: its scratch body file and the running exact counts."""

    __slots__ = ("body", "body_bytes", "count", "newest", "newest_key", "ns", "number")

    def __init__(self, number: int, body: BinaryIO) -> None:
        self.number = number
        self.body = body
        self.count = 0
        self.body_bytes = 0
        self.ns = 0  # the extension namespaces its entries use (xml.NS_* bits)
        self.newest: datetime | date | None = None
        self.newest_key: datetime | None = None


#: Scratch files of a stable layout open at once for writing (one per part would exhaust the
#: descriptors and, at 64 KiB of buffer each, the memory of a run of thousands of parts);
#: the input comes in loc order and old parts hold ranges of it, so few are busy at a time.
_MAX_OPEN_BUCKETS: Final = 64
_SCRATCH_CHUNK: Final = 1 << 16


class _Bucket:
    """The entries routed to one part of a stable layout (0: the new URLs), in loc order,
    in a scratch file of records (``_RECORD`` then loc then the serialised entry). Opened
    when written to, and closed by the least recently used rule of ``open``."""

    __slots__ = ("count", "fh", "open", "path")

    def __init__(self, path: Path, open_buckets: dict[_Bucket, None]) -> None:
        self.path = path
        self.open = open_buckets  # shared by a writer's buckets, oldest first
        self.fh: BinaryIO | None = None
        self.count = 0
        path.touch()

    def write(self, loc: str, data: bytes, ns: int) -> None:
        fh = self.fh
        if fh is None:
            if len(self.open) >= _MAX_OPEN_BUCKETS:
                next(iter(self.open)).close()
            fh = self.fh = open(self.path, "ab", buffering=_SCRATCH_CHUNK)  # noqa: SIM115
        else:
            del self.open[self]
        self.open[self] = None  # the most recently used, last
        raw = loc.encode()
        fh.write(_RECORD.pack(len(raw), len(data), ns) + raw + data)
        self.count += 1

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None
            self.open.pop(self, None)


#: A routed entry read back: loc, serialised bytes, namespaces.
_Rec = tuple[str, bytes, int]


def read_chunks(path: Path, size: int | None = None) -> Iterator[bytes]:
    """A file's bytes a chunk at a time, opening it for each chunk: a merge of thousands of
    scratch files then holds no descriptor between reads."""
    size = size or _SCRATCH_CHUNK
    pos = 0
    while True:
        with open(path, "rb", buffering=0) as fh:
            fh.seek(pos)
            chunk = fh.read(size)
        if not chunk:
            return
        pos += len(chunk)
        yield chunk


def _records(path: Path, skip: int = 0) -> Iterator[_Rec]:
    """The records of a bucket file in order, after the first ``skip``."""
    head = _RECORD.size
    unpack = _RECORD.unpack_from
    buffer = b""
    at = 0
    n = 0
    chunks = read_chunks(path)
    while True:
        if len(buffer) - at >= head:
            loc_len, size, ns = unpack(buffer, at)
            end = at + head + loc_len + size
            if len(buffer) >= end:
                if n >= skip:
                    loc = buffer[at + head : at + head + loc_len].decode()
                    yield loc, buffer[end - size : end], ns
                n += 1
                at = end
                continue
        chunk = next(chunks, None)
        if chunk is None:
            if at != len(buffer):
                raise SitemapOutError(f"scratch file {path.name} ends inside a record")
            return
        buffer = buffer[at:] + chunk
        at = 0


def _loc_of(rec: _Rec) -> str:
    return rec[0]


def _tagged_merge(first: Iterator[_Rec], second: Iterator[_Rec]) -> Iterator[tuple[int, _Rec]]:
    """Two record streams in loc order merged, each record tagged 0 or 1 by its source."""
    return heapq.merge(
        ((0, rec) for rec in first), ((1, rec) for rec in second), key=lambda t: t[1][0]
    )


def _parse_lastmod(text: str | None) -> datetime | date | None:
    """An index ``<lastmod>`` as written back to a value that formats to the same text."""
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text) if "T" in text else date.fromisoformat(text)
    except ValueError:
        return None


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


def is_reserved(name: str) -> bool:
    """Whether ``name`` in ``out_dir`` is one the writer publishes, replaces, deletes or
    uses there: a sitemap file, the manifest or its temporary, the lock, a staging folder.
    Another file of that name would be overwritten or deleted by a publish."""
    return (
        _OWN_NAME.fullmatch(name) is not None
        or name in (LOCK_NAME, MANIFEST_NAME, MANIFEST_NAME + ".tmp")
        or name.startswith(STAGING_PREFIX)
    )


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _acquire_lock(out_dir: Path) -> int:
    try:
        return locks.take(out_dir / LOCK_NAME)
    except locks.LockHeld as held:
        raise WriterLockedError(
            f"{out_dir} is being written by another run{held.who}; "
            "wait for it to finish, it holds the lock until it publishes or aborts"
        ) from None


def _release_lock(fd: int) -> None:
    locks.release(fd)


def _remove_staging_leftovers(out_dir: Path) -> None:
    """Only called with the lock held, so no live run owns any of these."""
    for path in out_dir.glob(STAGING_PREFIX + "*"):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
    (out_dir / (MANIFEST_NAME + ".tmp")).unlink(missing_ok=True)


def read_manifest(out_dir: Path) -> list[str]:
    """Names of the files this tool published last in ``out_dir`` (only well-formed names)."""
    try:
        data = json.loads((out_dir / MANIFEST_NAME).read_text("utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return []
    files = data.get("files", []) if isinstance(data, dict) else []
    return [f for f in files if isinstance(f, str) and _OWN_NAME.fullmatch(f)]


def _same_bytes(a: Path, b: Path) -> bool:
    """Whether two small files (an index) hold the same bytes; False if either is missing."""
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _write_manifest(
    out_dir: Path, names: Iterable[str], layout: dict[str, object] | None = None
) -> None:
    """``layout``: the settings the set was made with, written only once the set is whole,
    so that a run killed while publishing leaves a set the next run lays out afresh."""
    tmp = out_dir / (MANIFEST_NAME + ".tmp")
    data: dict[str, object] = {"version": 1, "files": list(names)}
    if layout is not None:
        data["layout"] = layout
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, out_dir / MANIFEST_NAME)
    _fsync_dir(out_dir)


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
    ) -> None:
        """``stable``: entries come in increasing loc order, and the part files published
        before keep their URLs (see the module docstring); ``now``: the run's time, the
        ``<lastmod>`` a re-written part gets in the index (default: the clock);
        ``changes``: where a stable run records the URLs added, removed and changed;
        ``feed_days``: also publish ``changes.atom``, the URLs added or changed in the last
        that many days (stable runs only: the feed is made of the changes)."""
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
        self._gzip = gzip
        self._xml = fmt == "xml"
        self._max_urls = max_urls
        self._max_bytes = max_bytes
        self._compresslevel = compresslevel
        self._suffix = (".xml" if self._xml else ".txt") + (".gz" if gzip else "")
        self._serialise = url_element if self._xml else text_line
        if self._xml:
            self._headers = {ns: urlset_open_for(ns).encode() for ns in range(NS_ALL + 1)}
            self._footer = URLSET_CLOSE.encode()
        else:
            self._headers = dict.fromkeys(range(NS_ALL + 1), b"")
            self._footer = b""
        self._fixed = {key: len(h) + len(self._footer) for key, h in self._headers.items()}

        if feed_days is not None:
            if not stable or self._base_url is None:
                raise WriterConfigError("feed_days needs stable=True and base_url")
            if not isinstance(feed_days, int) or not 1 <= feed_days <= 3650:
                raise WriterConfigError(f"feed_days must be from 1 to 3650, not {feed_days!r}")
        self._feed_days = feed_days
        self._out = Path(out_dir)
        self._out.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = _acquire_lock(self._out)
        try:
            _remove_staging_leftovers(self._out)
            self._staging = Path(
                tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=self._out)
            )
        except BaseException:
            self._unlock()
            raise
        self._parts: list[PartInfo] = []
        self._part: _Part | None = None
        self._next_number = 1
        self._news: _Part | None = None  # sitemap-news.xml, when add_news was called
        self._news_info: PartInfo | None = None
        self._count = 0
        self._open = True
        self._now = (now or _clock()).replace(microsecond=0)
        if self._now.tzinfo is None:
            raise WriterConfigError("now must be timezone-aware")
        self._stable = stable
        if stable and changes is None:
            changes = ChangeLog()
        if changes is not None and feed_days is not None:
            changes.keep = max(changes.keep, MAX_ENTRIES)
        self._changes = changes
        self._carried: dict[str, FeedEntry] = {}  # the last feed's entries still in the window
        self._feed_updated: datetime | None = None
        self._last_loc: str | None = None
        self._routing = False
        self._previous: PreviousSet | None = None
        self._old: Iterator[tuple[str, str | None, int]] = iter(())
        self._old_head: tuple[str, str | None, int] | None = None
        self._buckets: dict[int, _Bucket] = {}
        self._open_buckets: dict[_Bucket, None] = {}
        self._digests: dict[str, bytes] = {}  # routed parts' uncompressed SHA-256, by name
        if stable:
            try:
                if feed_days is not None:
                    self._read_feed(feed_days)
                self._read_previous()
            except BaseException:
                self.abort()
                raise

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
        return self._staging

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
        if self._stable:
            number = self._compare(entry)
            if self._routing:
                # its old part's scratch file, or the new URLs' (0)
                self._buckets[number or 0].write(entry.loc, data, ns)
                self._count += 1
                return
        self._append(data, ns, entry.lastmod)
        self._count += 1

    def _append(self, data: bytes, own: int, lastmod: datetime | date | None) -> None:
        """Put one serialised entry in the open part, rolling over first at either limit."""
        size = len(data)
        part = self._part
        if part is None:
            part = self._new_part()
        ns = part.ns | own
        if (
            part.count >= self._max_urls
            or self._fixed[ns] + part.body_bytes + size > self._max_bytes
        ):
            self._close_part()
            part = self._new_part()
            ns = own
        part.body.write(data)
        part.body_bytes += size
        part.count += 1
        part.ns = ns
        if lastmod is not None:
            key = lastmod_key(lastmod)
            if part.newest_key is None or key > part.newest_key:
                part.newest_key = key
                part.newest = lastmod

    def check(self, entry: Entry) -> None:
        """Raise EntryError now if entry could never be written (too big even for a file of
        its own), so a caller that batches entries learns it at that entry, not a later one."""
        ns = entry.namespaces
        if not ns and self._max_bytes - self._fixed[0] >= _PLAIN_ENTRY_BOUND:
            return  # a loc of at most 2,048 characters and three short fields always fits
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
        """Append one entry to the news sitemap, ``sitemap-news.xml[.gz]``: a file of its own
        that the index lists beside the parts (so a run with news always publishes an
        index), published with them or not at all. At most MAX_NEWS_URLS entries, each with
        ``news``; the entry is usually also added to the parts with :meth:`add`."""
        if not self._open:
            raise SitemapOutError("this writer has already published or aborted")
        if not self._xml:
            raise WriterConfigError("a news sitemap is XML: text sitemaps cannot carry news tags")
        if self._base_url is None:
            raise WriterConfigError("a news sitemap is listed by an index, which needs base_url")
        if not isinstance(entry, Entry) or entry.news is None:
            raise TypeError("add_news takes an Entry with news")
        part = self._news
        if part is None:
            body = open(self._staging / "news.body", "wb", buffering=_COPY_CHUNK)  # noqa: SIM115
            part = self._news = _Part(0, body)
        if part.count >= MAX_NEWS_URLS:
            raise EntryError(
                entry.loc, "news", f"a news sitemap lists at most {MAX_NEWS_URLS} URLs"
            )
        data = url_element(entry).encode()
        ns = part.ns | entry.namespaces
        if self._fixed[ns] + part.body_bytes + len(data) > self._max_bytes:
            raise EntryError(entry.loc, "news", "the news sitemap would pass max_bytes")
        part.body.write(data)
        part.body_bytes += len(data)
        part.count += 1
        part.ns = ns
        if entry.lastmod is not None:
            key = lastmod_key(entry.lastmod)
            if part.newest_key is None or key > part.newest_key:
                part.newest_key, part.newest = key, entry.lastmod

    def _close_news(self) -> None:
        part, self._news = self._news, None
        if part is None:
            return
        part.body.close()
        body_path = Path(part.body.name)
        name = NEWS_STEM + self._suffix
        header = self._headers[part.ns]
        self._write_part_file(name, header, body_path)
        self._news_info = PartInfo(
            name, part.count, len(header) + part.body_bytes + len(self._footer), part.newest
        )

    def _too_big(self, entry: Entry, size: int) -> None:
        need = self._fixed[entry.namespaces] + size
        raise EntryError(
            entry.loc, "loc", f"a file holding only this URL takes {need} bytes, over max_bytes"
        )

    def _new_part(self) -> _Part:
        number = self._next_number
        self._next_number += 1
        if len(self._parts) + 1 > MAX_SITEMAPS_PER_INDEX:
            raise IndexLimitError(
                f"this run needs more than {MAX_SITEMAPS_PER_INDEX} sitemap files, the most one "
                f"index may list (indexes must not nest); {self._count} URLs written so far"
            )
        body = open(self._staging / f"part-{number}.body", "wb", buffering=_COPY_CHUNK)  # noqa: SIM115
        self._part = _Part(number, body)
        return self._part

    def _close_part(self) -> None:
        """Write the finished part: the header it needs, its body, the footer; fsync it."""
        part = self._part
        if part is None:
            return
        self._part = None
        body_path = Path(part.body.name)
        part.body.close()
        if part.count == 0:
            body_path.unlink()
            return
        name = f"sitemap-{part.number}{self._suffix}"
        header = self._headers[part.ns]
        self._write_part_file(name, header, body_path)
        self._parts.append(
            PartInfo(
                name=name,
                url_count=part.count,
                uncompressed_bytes=len(header) + part.body_bytes + len(self._footer),
                newest_lastmod=part.newest,
            )
        )

    def _write_part_file(self, name: str, header: bytes, body_path: Path) -> None:
        """The staged file name: header, the body streamed from body_path, footer; fsynced.
        The body file is deleted."""
        with open(body_path, "rb") as body:
            self._write_staged(name, header, iter(functools.partial(body.read, _COPY_CHUNK), b""))
        body_path.unlink()

    def _write_staged(self, name: str, header: bytes, chunks: Iterable[bytes]) -> bytes:
        """The staged file name: header, chunks, footer, through gzip when on (mtime 0, so
        the same entries make the same bytes); fsynced. The SHA-256 of its uncompressed
        bytes, which tells an unchanged part of a stable layout."""
        sha = hashlib.sha256(header)
        with open(self._staging / name, "wb") as raw:
            sink: BinaryIO = raw
            if self._gzip:
                sink = gziplib.GzipFile(  # type: ignore[assignment]
                    filename="", mode="wb", fileobj=raw, compresslevel=self._compresslevel, mtime=0
                )
            sink.write(header)
            for chunk in chunks:
                sink.write(chunk)
                sha.update(chunk)
            sink.write(self._footer)
            sha.update(self._footer)
            if sink is not raw:
                sink.close()
            raw.flush()
            os.fsync(raw.fileno())
        return sha.digest()

    # -- a stable layout -------------------------------------------------------------------

    @property
    def layout_note(self) -> str:
        """Why a stable run lays its part files out afresh, when it does and a set was
        published before; "" otherwise."""
        return self._previous.note if self._previous is not None else ""

    def _layout(self) -> dict[str, object]:
        """The settings a layout depends on, recorded in the manifest."""
        return {
            "base_url": self._base_url,
            "format": "xml" if self._xml else "txt",
            "gzip": self._gzip,
            "max_urls": self._max_urls,
            "max_bytes": self._max_bytes,
        }

    def _read_previous(self) -> None:
        from sitemap_out.previous import old_locs, read_previous  # the reader imports us

        previous = read_previous(self._out, self._staging, self._layout())
        self._previous = previous
        assert self._changes is not None
        self._changes.open(self._staging)
        self._changes.previous = bool(previous.parts)
        self._old = heapq.merge(*(old_locs(p) for p in previous.parts))
        self._old_head = next(self._old, None)
        if previous.reusable:
            self._routing = True
            self._buckets = {0: _Bucket(self._staging / "new.records", self._open_buckets)}
            for part in previous.parts:
                path = self._staging / f"keep-{part.number}.records"
                self._buckets[part.number] = _Bucket(path, self._open_buckets)

    def _compare(self, entry: Entry) -> int | None:
        """Record what became of entry's URL, and of the old URLs before it; return the
        number of the old part that listed it, None for a URL not listed before."""
        loc = entry.loc
        if self._last_loc is not None and loc <= self._last_loc:
            raise SitemapOutError(
                f"a stable layout takes entries in increasing loc order; {loc[:200]!r} "
                f"came after {self._last_loc[:200]!r}"
            )
        self._last_loc = loc
        changes = self._changes
        assert changes is not None
        lastmod = None
        if self._xml and entry.lastmod is not None:
            lastmod = format_lastmod(entry.lastmod)
        head = self._old_head
        while head is not None and head[0] < loc:
            self._removed(head)
            head = next(self._old, None)
        number = None
        if head is not None and head[0] == loc:
            number = head[2]
            if head[1] != lastmod:
                changes.record("changed", loc, lastmod, head[1], self._when(entry))
            while head is not None and head[0] == loc:
                head = next(self._old, None)
        else:
            changes.record("added", loc, lastmod, None, self._when(entry))
        self._old_head = head
        return number

    def _when(self, entry: Entry) -> datetime:
        """An entry's date in the feed: its lastmod, else the run's time."""
        return lastmod_key(entry.lastmod) if entry.lastmod is not None else self._now

    def _finish_comparing(self) -> None:
        changes = self._changes
        assert changes is not None
        head = self._old_head
        while head is not None:
            self._removed(head)
            head = next(self._old, None)
        self._old_head = None

    def _removed(self, head: tuple[str, str | None, int]) -> None:
        assert self._changes is not None
        self._changes.record("removed", head[0], head[1])
        self._carried.pop(head[0], None)  # a removed URL leaves the feed too

    # -- the feed --------------------------------------------------------------------------

    def _read_feed(self, days: int) -> None:
        entries, updated = read_feed(self._out / FEED_NAME)
        since = self._now - timedelta(days=days)
        self._carried = {e.loc: e for e in entries if e.updated >= since}
        self._feed_updated = updated

    def _write_feed(self) -> str:
        """The feed in the staging folder: this run's URLs added or changed, then the last
        feed's still in the window, newest first, at most MAX_ENTRIES; returns its URL."""
        assert self._base_url is not None and self._changes is not None
        carried = self._carried
        entries: list[FeedEntry] = []
        for when, loc, kind in self._changes.newest():
            carried.pop(loc, None)
            entries.append(FeedEntry(when, loc, kind))
        entries += carried.values()
        entries.sort(reverse=True)
        del entries[MAX_ENTRIES:]
        updated = entries[0].updated if entries else (self._feed_updated or self._now)
        url = self._base_url + FEED_NAME
        text = feed_document(url, self._base_url, entries, updated)
        with open(self._staging / FEED_NAME, "wb") as fh:
            fh.write(text.encode())
            fh.flush()
            os.fsync(fh.fileno())
        return url

    def _fits(self, count: int, body: int, ns: int, rec: _Rec) -> bool:
        """Whether rec fits in a part holding count entries of body bytes (exact rules)."""
        return (
            count < self._max_urls
            and self._fixed[ns | rec[2]] + body + len(rec[1]) <= self._max_bytes
        )

    def _relayout(self) -> None:
        """Lay the routed entries out in the old parts: each keeps its URLs; a part (not the
        last) left with fewer than a quarter of max_urls gives them to the last part; the
        new URLs fill the last part, then new parts numbered after the highest old one."""
        previous = self._previous
        assert previous is not None
        for bucket in self._buckets.values():
            bucket.close()
        quarter = self._max_urls // 4
        incoming: list[Iterator[_Rec]] = [_records(self._buckets[0].path)]
        alive = [p for p in previous.parts if self._buckets[p.number].count > 0]
        # new parts never take a number in use; with no old part left, start again from 1
        self._next_number = 1 + (max(p.number for p in previous.parts) if alive else 0)
        if alive:
            *body, tail = alive
            for part in body:
                bucket = self._buckets[part.number]
                if bucket.count < quarter:
                    incoming.append(_records(bucket.path))
                    continue
                taken = self._write_routed(part, _records(bucket.path), iter(()))
                if taken < bucket.count:  # grew past max_bytes: the rest moves on
                    incoming.append(_records(bucket.path, skip=taken))
            bucket = self._buckets[tail.number]
            count, body_bytes, ns = 0, 0, 0
            for rec in _records(bucket.path):
                if not self._fits(count, body_bytes, ns, rec):
                    break
                count, body_bytes = count + 1, body_bytes + len(rec[1])
                ns |= rec[2]
            if count < bucket.count:
                incoming.append(_records(bucket.path, skip=count))
            stream: Iterator[_Rec] = heapq.merge(*incoming, key=_loc_of)
            extra = _Bucket(self._staging / "tail.records", self._open_buckets)
            for rec in stream:
                if not self._fits(count, body_bytes, ns, rec):
                    stream = itertools.chain([rec], stream)
                    break
                extra.write(*rec)
                count, body_bytes = count + 1, body_bytes + len(rec[1])
                ns |= rec[2]
            extra.close()
            kept = itertools.islice(_records(bucket.path), count - extra.count)
            self._write_routed(tail, kept, _records(extra.path))
        else:
            stream = heapq.merge(*incoming, key=_loc_of)
        for _loc, data, own in stream:
            self._append(data, own, None)
        self._close_part()
        # every part written is new as of now (those left unchanged get their old date back)
        self._parts = [replace(info, newest_lastmod=self._now) for info in self._parts]

    def _write_routed(self, part: OldPart, first: Iterator[_Rec], second: Iterator[_Rec]) -> int:
        """Write an old part's new content (first and second merged, each in loc order,
        cut where the limits are reached) to the staging folder; return how many of
        `first` it took."""
        name = f"sitemap-{part.number}{self._suffix}"
        taken = 0
        count, body_bytes, ns = 0, 0, 0
        chosen = _Bucket(self._staging / f"part-{part.number}.records", self._open_buckets)
        for which, rec in _tagged_merge(first, second):
            if not self._fits(count, body_bytes, ns, rec):
                break
            chosen.write(*rec)
            taken += which == 0
            count, body_bytes = count + 1, body_bytes + len(rec[1])
            ns |= rec[2]
        chosen.close()
        header = self._headers[ns]
        self._digests[name] = self._write_staged(
            name, header, (rec[1] for rec in _records(chosen.path))
        )
        chosen.path.unlink()
        self._parts.append(
            PartInfo(
                name=name,
                url_count=count,
                uncompressed_bytes=len(header) + body_bytes + len(self._footer),
                newest_lastmod=self._now,
            )
        )
        return taken

    def _keep_unchanged(self, parts: list[PartInfo]) -> list[PartInfo]:
        """A routed part whose bytes and name are those published keeps the published file
        (left untouched) and its index lastmod; every other part is new as of now."""
        previous = self._previous
        assert previous is not None
        old = {p.name: p for p in previous.parts}
        out = []
        for info in parts:
            digest = self._digests.get(info.name)
            before = old.get(info.name)
            if digest is not None and before is not None and before.digest == digest:
                (self._staging / info.name).unlink()
                info = replace(info, kept=True, newest_lastmod=_parse_lastmod(before.index_lastmod))
            out.append(info)
        return out

    # -- finishing -------------------------------------------------------------------------

    def publish(self) -> PublishResult:
        """Move the finished set into place (see the module docstring for the order)."""
        if not self._open:
            raise SitemapOutError("this writer has already published or aborted")
        if self._count == 0:
            self.abort()
            raise EmptySitemapError(
                f"no URLs were added, so nothing was written to {self._out} (an empty urlset "
                "is invalid); the previously published sitemap, if any, is unchanged"
            )
        try:
            if self._stable:
                self._finish_comparing()
            if self._routing:
                self._relayout()
            else:
                self._close_part()
            self._close_news()
            result = self._finish()
        finally:
            self.abort()
        return result

    def _finish(self) -> PublishResult:
        parts = self._parts
        news = self._news_info
        # a stable layout published as an index stays one: a night without news (or a site
        # shrunk to one part) must not turn sitemap-1.xml into sitemap.xml and back
        kept_index = self._routing and self._previous is not None and self._previous.index
        is_index = len(parts) > 1 or self._gzip or news is not None or kept_index
        if is_index and self._base_url is None:
            raise WriterConfigError(
                f"{self._count} URLs needed {len(parts)} files, and the sitemap.xml index "
                "listing them needs absolute URLs: pass base_url"
            )
        if not is_index:
            entry_name = "sitemap.xml" if self._xml else "sitemap.txt"
            os.replace(self._staging / parts[0].name, self._staging / entry_name)
            digest = self._digests.pop(parts[0].name, None)
            if digest is not None:
                self._digests[entry_name] = digest
            parts[0] = replace(parts[0], name=entry_name)
        if self._routing:
            parts[:] = self._keep_unchanged(parts)
        if is_index:
            entry_name = "sitemap.xml"
            self._write_index(entry_name)
            names = [p.name for p in parts] + [entry_name]
            if news is not None:
                names.insert(-1, news.name)
        else:
            names = [entry_name]
        feed_url = None
        if self._feed_days is not None:
            feed_url = self._write_feed()
            names.insert(-1, FEED_NAME)
        _fsync_dir(self._staging)
        self._install(names)
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
        )

    def _change_counts(self) -> ChangeCounts | None:
        changes = self._changes
        if not self._stable or changes is None:
            return None
        counts = changes.counts
        note = self.layout_note
        return ChangeCounts(counts["added"], counts["removed"], counts["changed"], note)

    def _write_index(self, name: str) -> None:
        assert self._base_url is not None
        size = 0
        with open(self._staging / name, "wb", buffering=_COPY_CHUNK) as fh:
            size += fh.write(index_open().encode())
            listed = self._parts if self._news_info is None else [*self._parts, self._news_info]
            for part in listed:
                piece = index_entry(self._base_url + part.name, part.newest_lastmod)
                size += fh.write(piece.encode())
            size += fh.write(index_close().encode())
            fh.flush()
            os.fsync(fh.fileno())
        if size > MAX_BYTES:
            raise IndexLimitError(
                f"the index listing {len(self._parts)} sitemaps would be {size} bytes, "
                f"over the {MAX_BYTES}-byte limit; use a shorter base_url or fewer parts"
            )

    def _install(self, names: list[str]) -> None:
        """Steps 1 to 4 of the module docstring. A name with no file in the staging folder
        is a part left as published (a stable layout); an entry point whose bytes are those
        published is left untouched too, so that its mtime and ETag say nothing changed."""
        old = read_manifest(self._out)
        new = set(names)
        for small in (names[-1], FEED_NAME):
            if _same_bytes(self._staging / small, self._out / small):
                (self._staging / small).unlink()
        _write_manifest(self._out, [*old, *(n for n in names if n not in old)])
        for name in names:  # entry point last
            staged = self._staging / name
            if staged.exists():
                os.replace(staged, self._out / name)
        _fsync_dir(self._out)
        for name in old:
            if name not in new:
                (self._out / name).unlink(missing_ok=True)
        _write_manifest(self._out, names, self._layout())

    def abort(self) -> None:
        """Discard this run's staging folder and release the lock; the published set is as was."""
        if not self._open:
            return
        self._open = False
        for part in (self._part, self._news):
            if part is not None:
                part.body.close()
        self._part = self._news = None
        for bucket in list(self._open_buckets):
            bucket.close()
        shutil.rmtree(self._staging, ignore_errors=True)
        self._unlock()

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            _release_lock(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> SitemapWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.abort()
