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

A second writer on the same folder is refused through ``fcntl.flock`` on
``out_dir/.sitemap.lock``; the kernel drops that lock when its holder dies, so a killed run
never blocks the next one, which also deletes the killed run's staging folder.
"""

from __future__ import annotations

import gzip as gziplib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Final, Literal

from sitemap_out import locks
from sitemap_out.entry import Entry, check_uri, lastmod_key
from sitemap_out.errors import (
    EmptySitemapError,
    EntryError,
    IndexLimitError,
    SitemapOutError,
    WriterLockedError,
)
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
_OWN_NAME: Final = re.compile(r"sitemap(?:-[1-9][0-9]*|-news)?\.(?:xml|txt)(?:\.gz)?")
#: Google reads at most 1,000 URLs in a news sitemap.
MAX_NEWS_URLS: Final = 1000
NEWS_STEM: Final = "sitemap-news"
_COPY_CHUNK: Final = 1 << 20

Format = Literal["xml", "txt"]


#: An upper bound on one serialised <url> without extensions: a 2,048-character loc with
#: every character escaped (5 bytes each at worst) plus lastmod, changefreq and priority.
_PLAIN_ENTRY_BOUND = 2048 * 5 + 512


class WriterConfigError(SitemapOutError, ValueError):
    """A writer argument is unusable (bad base_url, limits, format); raised before any write."""


@dataclass(frozen=True, slots=True)
class PartInfo:
    """One finished part file; ``newest_lastmod`` feeds the index's ``<lastmod>``."""

    name: str
    url_count: int
    uncompressed_bytes: int
    newest_lastmod: datetime | date | None


@dataclass(frozen=True, slots=True)
class PublishResult:
    """What a publish put in place. ``files`` are final paths, the entry point last."""

    entry_point: Path
    files: list[Path]
    url_count: int
    sitemap_url: str | None
    parts: tuple[PartInfo, ...]
    is_index: bool
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


def _write_manifest(out_dir: Path, names: Iterable[str]) -> None:
    tmp = out_dir / (MANIFEST_NAME + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"version": 1, "files": list(names)}, fh)
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
    ) -> None:
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
        self._news: _Part | None = None  # sitemap-news.xml, when add_news was called
        self._news_info: PartInfo | None = None
        self._count = 0
        self._open = True

    # -- appending -------------------------------------------------------------------------

    @property
    def count(self) -> int:
        """Entries added so far."""
        return self._count

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
        part = self._part
        if part is None:
            part = self._new_part()
        own = entry.namespaces
        ns = part.ns | own
        if (
            part.count >= self._max_urls
            or self._fixed[ns] + part.body_bytes + size > self._max_bytes
        ):
            ns = own
            if self._fixed[ns] + size > self._max_bytes:
                # Checked before rolling over, so no empty (invalid) part is ever left open.
                self._too_big(entry, size)
            self._close_part()
            part = self._new_part()
        part.body.write(data)
        part.body_bytes += size
        part.count += 1
        part.ns = ns
        lastmod = entry.lastmod
        if lastmod is not None:
            key = lastmod_key(lastmod)
            if part.newest_key is None or key > part.newest_key:
                part.newest_key = key
                part.newest = lastmod
        self._count += 1

    def check(self, entry: Entry) -> None:
        """Raise EntryError now if entry could never be written (too big even for a file of
        its own), so a caller that batches entries learns it at that entry, not a later one."""
        ns = entry.namespaces
        if not ns and self._max_bytes - self._fixed[0] >= _PLAIN_ENTRY_BOUND:
            return  # a loc of at most 2,048 characters and three short fields always fits
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

    @property
    def news_count(self) -> int:
        """Entries added to the news sitemap so far."""
        return 0 if self._news is None else self._news.count

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
        number = len(self._parts) + 1
        if number > MAX_SITEMAPS_PER_INDEX:
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
        with open(self._staging / name, "wb") as raw:
            sink: BinaryIO = raw
            if self._gzip:
                sink = gziplib.GzipFile(  # type: ignore[assignment]
                    filename="", mode="wb", fileobj=raw, compresslevel=self._compresslevel, mtime=0
                )
            sink.write(header)
            with open(body_path, "rb") as body:
                shutil.copyfileobj(body, sink, _COPY_CHUNK)
            sink.write(self._footer)
            if sink is not raw:
                sink.close()
            raw.flush()
            os.fsync(raw.fileno())
        body_path.unlink()

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
            self._close_part()
            self._close_news()
            result = self._finish()
        finally:
            self.abort()
        return result

    def _finish(self) -> PublishResult:
        parts = self._parts
        news = self._news_info
        is_index = len(parts) > 1 or self._gzip or news is not None
        if is_index:
            if self._base_url is None:
                raise WriterConfigError(
                    f"{self._count} URLs needed {len(parts)} files, and the sitemap.xml index "
                    "listing them needs absolute URLs: pass base_url"
                )
            entry_name = "sitemap.xml"
            self._write_index(entry_name)
            names = [p.name for p in parts] + [entry_name]
            if news is not None:
                names.insert(-1, news.name)
        else:
            entry_name = "sitemap.xml" if self._xml else "sitemap.txt"
            os.replace(self._staging / parts[0].name, self._staging / entry_name)
            parts[0] = replace(parts[0], name=entry_name)
            names = [entry_name]
        _fsync_dir(self._staging)
        self._install(names)
        return PublishResult(
            entry_point=self._out / entry_name,
            files=[self._out / n for n in names],
            url_count=self._count,
            sitemap_url=None if self._base_url is None else self._base_url + entry_name,
            parts=tuple(parts),
            is_index=is_index,
            news=news,
        )

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
        old = read_manifest(self._out)
        new = set(names)
        _write_manifest(self._out, [*old, *(n for n in names if n not in old)])
        for name in names:  # entry point last
            os.replace(self._staging / name, self._out / name)
        _fsync_dir(self._out)
        for name in old:
            if name not in new:
                (self._out / name).unlink(missing_ok=True)
        _write_manifest(self._out, names)

    def abort(self) -> None:
        """Discard this run's staging folder and release the lock; the published set is as was."""
        if not self._open:
            return
        self._open = False
        for part in (self._part, self._news):
            if part is not None:
                part.body.close()
        self._part = self._news = None
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
