"""The URLs an audit's sitemaps list, spooled to a temporary SQLite file: an index may name
a thousand sitemaps of 50,000 URLs each, and the audit's memory must not grow with them.

Each file's listed URLs are added as it is read and iterated as often as the checks need, in
the order they were listed. The checks over all files at once (the same URL listed twice, a
URL listed again with tracking parameters) are the pure functions of
crawler.core.sitemap_checks, run on one group of rows at a time, the groups found by SQL:
memory holds one group, not the listing.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Final

from crawler.core.findings import Finding, ListedUrl
from crawler.core.sitemap_checks import Cluster
from crawler.core.urls import known, normalize, params_matching
from crawler.errors import InvalidURLError, OutputError
from sitemap_out.reader import ReadEntry

__all__ = ["Clusters", "Listed", "open_spool"]

#: Rows fetched from SQLite at a time while iterating.
_BATCH: Final = 10_000

_SCHEMA: Final = """
CREATE TABLE sitemap (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE listed (
    n INTEGER PRIMARY KEY,
    loc TEXT NOT NULL,
    key TEXT NOT NULL,          -- the loc as the protocol reads it (normalised)
    sitemap INTEGER NOT NULL,
    line INTEGER,
    lastmod TEXT,
    news INTEGER NOT NULL
);
CREATE TABLE tracked (n INTEGER PRIMARY KEY, bare TEXT NOT NULL);
CREATE TABLE cluster (      -- a listed loc's hreflang alternates, as first listed
    page TEXT PRIMARY KEY,
    sitemap INTEGER NOT NULL,
    line INTEGER,
    alternates TEXT NOT NULL    -- JSON [[hreflang, href], ...]
) WITHOUT ROWID;
"""

_ROW: Final = "l.loc, s.name, l.line, l.lastmod, l.news"


def open_spool(
    command: str, schema: str, folder: Path | None = None
) -> tuple[IO[bytes], sqlite3.Connection]:
    """A temporary SQLite file (deleted when the returned file is closed) holding `schema`,
    tuned for a spool: no journal, no fsync (it lives only as long as the run), 16 MB of
    page cache. `diff` spools its two sets the same way."""
    file = tempfile.NamedTemporaryFile(  # noqa: SIM115 - the caller closes it
        prefix=f"sitemap-crawler-{command}-", suffix=".sqlite", dir=folder
    )
    try:
        db = sqlite3.connect(file.name)
        db.executescript(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
            "PRAGMA cache_size = -16000;" + schema
        )
    except sqlite3.Error as exc:
        file.close()
        raise OutputError(f"cannot spool the URLs to a temporary file: {exc}") from None
    return file, db


class Listed:
    """Every ListedUrl of an audit, on disk; iterable any number of times, in listing order."""

    def __init__(self, folder: Path | None = None) -> None:
        self._file, self._db = open_spool("audit", _SCHEMA, folder)
        self._sitemaps: dict[str, int] = {}
        self._count = 0
        self._indexed: set[str] = set()
        self._clusters = False

    def add(self, items: Iterable[ListedUrl]) -> None:
        rows = [
            (item.loc, _key(item.loc), self._sitemap(item.sitemap), item.line, item.lastmod,
             int(item.news))
            for item in items
        ]  # fmt: skip
        self._db.executemany(
            "INSERT INTO listed (loc, key, sitemap, line, lastmod, news) VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        self._count += len(rows)

    def _sitemap(self, name: str) -> int:
        known = self._sitemaps.get(name)
        if known is None:
            known = self._db.execute("INSERT INTO sitemap (name) VALUES (?)", (name,)).lastrowid
            assert known is not None
            self._sitemaps[name] = known
        return known

    def add_clusters(self, sitemap: str, entries: Iterable[ReadEntry]) -> None:
        """The hreflang alternates of each entry that has some; a loc's first listing wins."""
        rows = [
            (entry.loc, self._sitemap(sitemap), entry.line, json.dumps(entry.alternates))
            for entry in entries
            if entry.alternates and entry.loc
        ]
        self._db.executemany("INSERT OR IGNORE INTO cluster VALUES (?, ?, ?, ?)", rows)
        self._clusters = self._clusters or bool(rows)

    def clusters(self) -> Clusters | None:
        """The hreflang clusters as the return-link check reads them, or None without any."""
        return Clusters(self._db) if self._clusters else None

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[ListedUrl]:
        return self._rows(
            f"SELECT {_ROW} FROM listed l JOIN sitemap s ON s.id = l.sitemap ORDER BY l.n"
        )

    def __contains__(self, loc: object) -> bool:
        """A loc listed as written (the hreflang return links' question)."""
        self._index("loc")
        found = self._db.execute("SELECT 1 FROM listed WHERE loc = ? LIMIT 1", (loc,))
        return found.fetchone() is not None

    def first_loc(self) -> str | None:
        row = self._db.execute("SELECT loc FROM listed ORDER BY n LIMIT 1").fetchone()
        return None if row is None else row[0]

    def duplicates(self, check: Callable[[Iterable[ListedUrl]], list[Finding]]) -> list[Finding]:
        """`check` (sitemap_checks.duplicates) run on each group of listings of one URL."""
        self._index("key")
        rows = self._grouped(
            f"SELECT l.key, {_ROW} FROM listed l JOIN sitemap s ON s.id = l.sitemap "
            "WHERE l.key IN (SELECT key FROM listed GROUP BY key HAVING COUNT(*) > 1) "
            "ORDER BY l.key, l.n"
        )
        return [finding for group in rows for finding in check(group)]

    def tracking(
        self,
        strip: tuple[str, ...],
        check: Callable[[Iterable[ListedUrl], tuple[str, ...]], list[Finding]],
    ) -> list[Finding]:
        """`check` (sitemap_checks.tracking_findings) run on each group of locs that are one
        URL but for strip's parameters: the tracked locs, and the plain ones they double."""
        if not strip:
            return []
        tracked = []
        query = "SELECT n, loc FROM listed WHERE loc LIKE '%?%' OR loc LIKE '%;%' ORDER BY n"
        for n, loc in self._db.execute(query):
            if params_matching(loc, strip):
                try:
                    tracked.append((n, known(loc, strip)))
                except InvalidURLError:
                    continue
            if len(tracked) >= _BATCH:
                self._db.executemany("INSERT INTO tracked (n, bare) VALUES (?, ?)", tracked)
                tracked = []
        self._db.executemany("INSERT INTO tracked (n, bare) VALUES (?, ?)", tracked)
        self._db.execute("CREATE INDEX IF NOT EXISTS tracked_bare ON tracked (bare)")
        self._index("key")
        rows = self._grouped(
            f"SELECT COALESCE(t.bare, l.key) AS g, {_ROW} FROM listed l "
            "JOIN sitemap s ON s.id = l.sitemap LEFT JOIN tracked t ON t.n = l.n "
            "WHERE t.n IS NOT NULL OR l.key IN (SELECT bare FROM tracked) ORDER BY g, l.n"
        )
        return [finding for group in rows for finding in check(group, strip)]

    def close(self) -> None:
        self._db.close()
        self._file.close()

    def _index(self, column: str) -> None:
        if column not in self._indexed:
            self._db.execute(f"CREATE INDEX IF NOT EXISTS listed_{column} ON listed ({column})")
            self._indexed.add(column)

    def _rows(self, query: str) -> Iterator[ListedUrl]:
        cursor = self._db.execute(query)
        while batch := cursor.fetchmany(_BATCH):
            for loc, sitemap, line, lastmod, news in batch:
                yield ListedUrl(loc, sitemap, line, lastmod, bool(news))

    def _grouped(self, query: str) -> Iterator[list[ListedUrl]]:
        """The rows of `query` (a group key, then _ROW) as one list per group."""
        cursor = self._db.execute(query)
        rows = itertools.chain.from_iterable(iter(lambda: cursor.fetchmany(_BATCH), []))
        for _, group in itertools.groupby(rows, key=lambda row: row[0]):
            yield [
                ListedUrl(loc, name, line, lastmod, bool(news))
                for _, loc, name, line, lastmod, news in group
            ]


class Clusters:
    """The hreflang clusters on disk, as the mapping sitemap_checks.hreflang_return_links
    reads (items, get): one cluster in memory at a time."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def items(self) -> Iterator[tuple[str, Cluster]]:
        cursor = self._db.execute(
            "SELECT c.page, s.name, c.line, c.alternates FROM cluster c "
            "JOIN sitemap s ON s.id = c.sitemap ORDER BY c.page"
        )
        while batch := cursor.fetchmany(_BATCH):
            for page, name, line, alternates in batch:
                yield page, _cluster(name, line, alternates)

    def get(self, page: str) -> Cluster | None:
        row = self._db.execute(
            "SELECT s.name, c.line, c.alternates FROM cluster c "
            "JOIN sitemap s ON s.id = c.sitemap WHERE c.page = ?",
            (page,),
        ).fetchone()
        return None if row is None else _cluster(*row)


def _cluster(sitemap: str, line: int | None, alternates: str) -> Cluster:
    return Cluster(sitemap, line, tuple((lang, href) for lang, href in json.loads(alternates)))


def _key(loc: str) -> str:
    try:
        return normalize(loc)
    except InvalidURLError:
        return loc
