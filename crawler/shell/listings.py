"""Pages judged listable wait here until the crawl ends, then go to the writer in URL order.

Whether a page is listed can depend on pages fetched after it: of byte-identical pages only
the best URL is listed (crawler.core.duplicates), and the best may come last. So a page that
would be listed becomes a `Listing` and waits in the `Spool`; only once every page has been
judged are the winners written and their decisions made final.

The sitemap lists them sorted by loc (code-point order), so that two crawls of the same site
publish the same bytes whatever the order the pages were fetched in (nightly diffs show
what changed on the site, not the timing). The spool is an external merge sort, so memory
stays flat on sites of millions of pages: listings gather in memory up to `RUN_SIZE`, are
sorted and written as one run to an unnamed temporary file beside the output (one file for
all runs: one descriptor, however many runs), and are read back through `heapq.merge`.
"""

from __future__ import annotations

import heapq
import operator
import os
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import IO

from crawler.core.media import PageExtras
from crawler.core.wire import pack, unpack
from crawler.errors import OutputError
from sitemap_out import Entry

__all__ = ["RUN_SIZE", "Listing", "Spool", "from_micros", "to_micros"]

#: Listings sorted in memory before they are written as one run: about 0.5 KB each, so a
#: run holds about 10 MB, and a million listings make 50 runs.
RUN_SIZE = 20_000
#: Read buffers of the merge, shared by all runs (each reads at least _MIN_CHUNK at a time).
_MERGE_BUFFER = 8 << 20
_MIN_CHUNK = 4096
_MAX_CHUNK = 256 << 10

_LENGTH = struct.Struct("<I")
_LOC = operator.attrgetter("loc")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_micros(when: datetime | None) -> int | None:
    """Microseconds since the epoch: exact, compact and marshal-able, unlike a datetime."""
    if when is None:
        return None
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"a lastmod must be timezone-aware, got {when!r}")
    return (when - _EPOCH) // _MICROSECOND


def from_micros(micros: int | None) -> datetime | None:
    return None if micros is None else _datetime_of(micros)


@lru_cache(maxsize=1024)
def _datetime_of(micros: int) -> datetime:
    """Memoised (#26): a site's pages share the few dates its files were written at (and a
    night's changed pages its start), so the arithmetic ran again for most listings; and one
    object a date lets format_lastmod's memo, by identity, skip the writer's isoformat for
    each run of equal lastmods."""
    return _EPOCH + micros * _MICROSECOND


@dataclass(slots=True)
class Listing:
    """A page that is listed unless a better twin turns up: its decision and its entry.

    Never changed once made (dataclasses.replace makes another), but not frozen: one is
    built for every listed page, and again each time the spool reads it back, and a frozen
    class's __init__ (an object.__setattr__ call a field, 13 fields) cost five times a
    plain one's, about 4 µs a listing."""

    url: str  # crawl space: how the frontier and the state know it
    loc: str  # public space: what the sitemap lists
    status: int
    detail: str  # retries that led to the answer, if any
    depth: int
    referrer: str | None
    lastmod: int | None  # microseconds since the epoch (to_micros)
    changefreq: str | None
    priority: float | None
    body: int | None  # the body's key; None for a page that never competes (not HTML)
    # the page's images, hreflang alternates, videos and publication time: a PageExtras
    # packed by crawler.core.wire (public space), None when it has none
    extras: bytes | None = None
    # the main content's text blocks (crawler.core.lastmod): the lastmod is decided from
    # them at publish time, when the blocks common to most pages are known
    blocks: bytes | None = None
    stamped: bool = False  # its Last-Modified was the response's Date (crawler.core.lastmod)

    def entry(self, dated: datetime | None = None) -> Entry:
        """The sitemap entry, dated by its Last-Modified header, checked in full (built by
        `normalised` only to skip the dataclass's generic steps): replay builds it when a
        resumed crawl reads a listing back (the judge checks the same values when the page
        is listed, with the writer's check_plain, without making it), so that a listing the
        protocol cannot hold is known then. `dated`: the lastmod as the datetime the caller
        parsed it to, which from_micros would make again."""
        when = dated if dated is not None else from_micros(self.lastmod)
        return Entry.normalised(self.loc, when, self.changefreq, self.priority)

    def dated(self, lastmod: int | None) -> Entry:
        """The sitemap entry with the lastmod decided at publish time: its loc, changefreq
        and priority are the ones entry() checked (every listing in the spool was, see
        entry()), so only the lastmod is checked again (Entry.redated)."""
        when = None if lastmod is None else _datetime_of(lastmod)  # from_micros, a call less
        return Entry.redated(self.loc, when, self.changefreq, self.priority)

    def page_extras(self) -> PageExtras | None:
        return None if self.extras is None else unpack(PageExtras, self.extras)


class Spool:
    """Listings handed back in loc order; memory holds at most `run_size` of them."""

    def __init__(self, folder: Path, run_size: int = RUN_SIZE) -> None:
        if run_size < 1:
            raise ValueError(f"run_size must be at least 1, got {run_size}")
        folder.mkdir(parents=True, exist_ok=True)
        self._folder = folder
        self._run_size = run_size
        # closed by close(), and by the OS with the process: no name is ever left behind
        self._file: IO[bytes] = tempfile.TemporaryFile(dir=folder, prefix=".listings-")  # noqa: SIM115
        self._runs: list[tuple[int, int]] = []  # each sorted run's offset and size in the file
        self._end = 0
        self._pending: list[Listing] = []  # the run being gathered
        self.count = 0

    def add(self, listing: Listing) -> None:
        pending = self._pending
        pending.append(listing)
        self.count += 1
        if len(pending) >= self._run_size:
            self._spill()

    def _spill(self) -> None:
        """Write the listings gathered so far as one sorted run."""
        pending, self._pending = self._pending, []
        pending.sort(key=_LOC)
        size = _LENGTH.pack
        data = b"".join([size(len(packed)) + packed for packed in map(pack, pending)])
        try:
            self._file.write(data)
        except OSError as exc:
            raise OutputError(
                f"cannot write the listings waiting for the end of the crawl (a temporary "
                f"file in {self._folder}): {exc.strerror or exc}; the previously published "
                f"sitemap is untouched"
            ) from None
        self._runs.append((self._end, len(data)))
        self._end += len(data)

    def __iter__(self) -> Iterator[Listing]:
        """Every listing added, once, in loc order (code points; a loc names one listing)."""
        pending = self._pending
        pending.sort(key=_LOC)
        if not self._runs:
            return iter(list(pending))
        try:
            self._file.flush()
        except OSError as exc:
            raise self._unreadable(exc) from None
        chunk = _MERGE_BUFFER // (len(self._runs) + 1)
        chunk = max(_MIN_CHUNK, min(_MAX_CHUNK, chunk))
        runs = [self._run(start, start + size, chunk) for start, size in self._runs]
        return heapq.merge(*runs, list(pending), key=_LOC)

    def _run(self, start: int, end: int, chunk: int) -> Iterator[Listing]:
        """The listings of the run stored from start to end, read `chunk` bytes at a time
        with pread, so that every run reads the one file at its own place."""
        fd = self._file.fileno()
        head, read_size = _LENGTH.size, _LENGTH.unpack_from
        data = b""
        at = 0
        pos = start
        while True:
            need = at + head
            if len(data) >= need:
                (size,) = read_size(data, at)
                need += size
                if len(data) >= need:
                    yield unpack(Listing, data[at + head : need])
                    at = need
                    continue
            if pos >= end:
                if at != len(data):
                    raise self._unreadable(OSError("a run ends inside a listing"))
                return
            want = min(max(chunk, need - at), end - pos)  # a listing longer than chunk: whole
            try:
                more = os.pread(fd, want, pos)
            except OSError as exc:
                raise self._unreadable(exc) from None
            if not more:
                raise self._unreadable(OSError("the file is shorter than was written"))
            pos += len(more)
            data = data[at:] + more
            at = 0

    def _unreadable(self, exc: OSError) -> OutputError:
        return OutputError(
            f"cannot read back the listings waiting for the end of the crawl (a temporary "
            f"file in {self._folder}): {exc.strerror or exc}; the previously published "
            f"sitemap is untouched"
        )

    def close(self) -> None:
        self._file.close()
