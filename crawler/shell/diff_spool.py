"""The two sets of `sitemap-crawler diff`, spooled to a temporary SQLite file: a million URLs
on each side must not be two Python sets. As the audit's spool (crawler.shell.audit_spool):
rows go in as they are read, the comparison is SQL over the keys' indexes, and every list
comes back sorted by key in batches, so memory holds a batch, not a set.

A set's key is its primary key: a URL listed twice in one set (in two parts, or once with
another escaping) counts once, with its first listing's loc and lastmod.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final, Literal

from crawler.core.diff import NOT_CHECKED, NOT_MET, Change, DiffSummary, Kind, lastmod_instant
from crawler.core.urls import normalize
from crawler.errors import InvalidURLError
from crawler.shell.audit_spool import open_spool

__all__ = ["DiffSpool", "Side", "key_of"]

Side = Literal["old", "new"]
_BATCH: Final = 10_000

_SCHEMA: Final = """
CREATE TABLE old (key TEXT PRIMARY KEY, loc TEXT NOT NULL, lastmod TEXT, instant TEXT)
    WITHOUT ROWID;
CREATE TABLE new (key TEXT PRIMARY KEY, loc TEXT NOT NULL, lastmod TEXT, instant TEXT)
    WITHOUT ROWID;
CREATE TABLE verdict (kind TEXT NOT NULL, key TEXT NOT NULL, verdict TEXT NOT NULL,
    detail TEXT, PRIMARY KEY (kind, key)) WITHOUT ROWID;
CREATE TABLE decided (key TEXT PRIMARY KEY, reason TEXT NOT NULL, detail TEXT) WITHOUT ROWID;
"""

#: Each list's rows: key, the loc to show, OLD's lastmod, NEW's lastmod.
_LISTS: Final[dict[Kind, str]] = {
    "removed": "SELECT o.key, o.loc, o.lastmod, NULL FROM old o "
    "WHERE NOT EXISTS (SELECT 1 FROM new n WHERE n.key = o.key)",
    "added": "SELECT n.key, n.loc, NULL, n.lastmod FROM new n "
    "WHERE NOT EXISTS (SELECT 1 FROM old o WHERE o.key = n.key)",
    "moved": "SELECT n.key, n.loc, o.lastmod, n.lastmod FROM new n JOIN old o ON o.key = n.key "
    "WHERE o.instant IS NOT NULL AND n.instant IS NOT NULL AND o.instant != n.instant",
}


def key_of(loc: str) -> str:
    """A loc as the audit compares it (crawler.shell.audit_spool): the protocol's normal
    form, or the text as written when it is not a URL at all."""
    try:
        return normalize(loc)
    except InvalidURLError:
        return loc


class DiffSpool:
    def __init__(self, folder: Path | None = None) -> None:
        self._file, self._db = open_spool("diff", _SCHEMA, folder)
        self.has_decisions = False  # NEW is a decisions file: `decided` says why it left out

    def add(self, side: Side, rows: Iterable[tuple[str, str | None]]) -> None:
        """(loc, lastmod as written) rows of one set; a key already in it is kept as it was."""
        self._db.executemany(
            f"INSERT OR IGNORE INTO {side} (key, loc, lastmod, instant) VALUES (?, ?, ?, ?)",
            ((key_of(loc), loc, lastmod, lastmod_instant(lastmod)) for loc, lastmod in rows),
        )

    def decided(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """(url, reason, detail) of the URLs NEW's crawl met and did not list."""
        self._db.executemany(
            "INSERT OR IGNORE INTO decided (key, reason, detail) VALUES (?, ?, ?)",
            ((key_of(url), reason, detail) for url, reason, detail in rows),
        )

    def explain_removed(self) -> dict[str, int]:
        """Each removed URL's verdict from NEW's decisions (NOT_MET: no line for it); the
        count of each."""
        self._db.execute(
            "INSERT OR REPLACE INTO verdict (kind, key, verdict, detail) "
            "SELECT 'removed', r.key, COALESCE(d.reason, ?), COALESCE(d.detail, ?) "
            f"FROM ({_LISTS['removed']}) r LEFT JOIN decided d ON d.key = r.key",
            (NOT_MET, "no page NEW's crawl fetched links to it"),
        )
        rows = self._db.execute(
            "SELECT verdict, COUNT(*) FROM verdict WHERE kind = 'removed' GROUP BY verdict "
            "ORDER BY verdict"
        )
        return {verdict: n for verdict, n in rows}

    def size(self, side: Side) -> int:
        return int(self._db.execute(f"SELECT COUNT(*) FROM {side}").fetchone()[0])

    def first_loc(self, side: Side) -> str | None:
        row = self._db.execute(f"SELECT loc FROM {side} LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def summarise(self, summary: DiffSummary) -> None:
        """Fill the summary's counts."""
        summary.old_urls, summary.new_urls = self.size("old"), self.size("new")
        for kind, query in _LISTS.items():
            setattr(
                summary, kind, self._db.execute(f"SELECT COUNT(*) FROM ({query})").fetchone()[0]
            )
        both = self._db.execute(
            "SELECT COUNT(*), COUNT(o.instant IS NOT NULL AND n.instant IS NOT NULL OR NULL) "
            "FROM new n JOIN old o ON o.key = n.key"
        ).fetchone()
        summary.unchanged = both[0] - summary.moved
        summary.lastmods_compared = both[1]

    def locs(self, kind: Kind, limit: int) -> list[str]:
        """The first `limit` URLs of a list, as written: what --fetch checks."""
        query = f"SELECT r.loc FROM ({_LISTS[kind]}) r ORDER BY r.key LIMIT ?"
        return [row[0] for row in self._db.execute(query, (limit,))]

    def judge(self, kind: Kind, verdicts: Iterable[tuple[str, str, str]]) -> None:
        """(loc, verdict, detail) of URLs --fetch checked."""
        self._db.executemany(
            "INSERT OR REPLACE INTO verdict (kind, key, verdict, detail) VALUES (?, ?, ?, ?)",
            ((kind, key_of(loc), label, detail) for loc, label, detail in verdicts),
        )

    def changes(self, kind: Kind, *, fetched: bool, limit: int | None = None) -> Iterator[Change]:
        """A list, sorted by key; with `fetched`, each URL's verdict (NOT_CHECKED when it was
        not fetched)."""
        query = (
            f"SELECT r.*, v.verdict, v.detail FROM ({_LISTS[kind]}) r "
            "LEFT JOIN verdict v ON v.kind = ? AND v.key = r.key ORDER BY r.key"
        )
        if limit is not None:
            query += f" LIMIT {int(limit)}"
        cursor = self._db.execute(query, (kind,))
        while batch := cursor.fetchmany(_BATCH):
            for _, loc, old, new, label, detail in batch:
                if fetched and label is None:
                    label, detail = NOT_CHECKED, "not fetched"
                yield Change(kind, loc, old, new, label, detail)

    def close(self) -> None:
        self._db.close()
        self._file.close()
