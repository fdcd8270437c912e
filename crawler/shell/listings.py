"""Pages judged listable wait here until the crawl ends, then go to the writer.

Whether a page is listed can depend on pages fetched after it: of byte-identical pages only
the best URL is listed (crawler.core.duplicates), and the best may come last. So a page that
would be listed becomes a `Listing`, spooled to an unnamed temporary file beside the output
(memory stays flat on sites of millions of pages), and only once every page has been judged
are the winners written and their decisions made final.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

from crawler.core.wire import pack, unpack
from crawler.errors import OutputError
from sitemap_out import Entry

__all__ = ["Listing", "Spool", "from_micros", "to_micros"]

_LENGTH = struct.Struct("<I")
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
    return None if micros is None else _EPOCH + micros * _MICROSECOND


@dataclass(slots=True, frozen=True)
class Listing:
    """A page that is listed unless a better twin turns up: its decision and its entry."""

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

    def entry(self) -> Entry:
        return Entry(
            self.loc,
            lastmod=from_micros(self.lastmod),
            changefreq=self.changefreq,
            priority=self.priority,
        )


class Spool:
    """Listings in the order they were made, in an unnamed file the OS removes on exit."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._folder = folder
        # closed by close(), and by the OS with the process: no name is ever left behind
        self._file: IO[bytes] = tempfile.TemporaryFile(dir=folder, prefix=".listings-")  # noqa: SIM115
        self.count = 0

    def add(self, listing: Listing) -> None:
        data = pack(listing)
        try:
            self._file.write(_LENGTH.pack(len(data)) + data)
        except OSError as exc:
            raise OutputError(
                f"cannot write the listings waiting for the end of the crawl (a temporary "
                f"file in {self._folder}): {exc.strerror or exc}; the previously published "
                f"sitemap is untouched"
            ) from None
        self.count += 1

    def __iter__(self) -> Iterator[Listing]:
        """Every listing added, once (the file is read from the start)."""
        spool = self._file
        spool.flush()
        spool.seek(0)
        for _ in range(self.count):
            (size,) = _LENGTH.unpack(spool.read(_LENGTH.size))
            yield unpack(Listing, spool.read(size))
        spool.seek(0, 2)

    def close(self) -> None:
        self._file.close()
