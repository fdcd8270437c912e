"""The follow log of a night with a history in the state file: what a resumed night needs
to name the early referrers of a URL judged broken as an uninterrupted one does
(crawler.shell.referrers reads them back at the end from the order in which pages' links
were followed, which lives only in memory otherwise).

A row a checkpoint, of what was new since the last: 4 bytes a page followed, 8 a URL queued,
and the few referrals that are no link, written with the checkpoint's other rows, so that a
resumed night's order, spans and referrals are those of the pages and URLs the file holds.
The table is a run table (state_file): emptied by the finish and by a new run.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass
from typing import Final

__all__ = ["FOLLOW_COLUMNS", "FollowLog", "FollowRow"]


@dataclass(slots=True)
class FollowRow:
    """What a checkpoint adds to the log; each field is the column of the same name."""

    run: int  # the run's start (HistoryStore.run_started): another run's rows are not read
    pages: bytes  # the pages whose links were followed since, in order (URL ids, array "I")
    queued: bytes  # (URL id, place in the order) of each URL queued since, array "I"
    judged: bytes  # (URL id, place) of each URL judged broken since, array "I"
    # JSON, in the order they came: [url, place, referrer] for each referral that is no
    # link since, [url] for each URL whose referrals were dropped (judged, not broken)
    others: str


#: The columns of the follows table but its `seq` (state_file creates it)
FOLLOW_COLUMNS: Final = tuple(f.name for f in dataclasses.fields(FollowRow))
_INSERT: Final = (
    f"INSERT INTO follows ({', '.join(FOLLOW_COLUMNS)})"
    f" VALUES ({', '.join('?' * len(FOLLOW_COLUMNS))})"
)
_SELECT: Final = f"SELECT {', '.join(FOLLOW_COLUMNS)} FROM follows WHERE run = ? ORDER BY seq"


class FollowLog:
    """The rows buffered until the next checkpoint."""

    def __init__(self) -> None:
        self.rows: list[FollowRow] = []

    def add(self, row: FollowRow) -> None:
        """A row for the next checkpoint (kept, in order, if a write fails)."""
        self.rows.append(row)

    def reset(self) -> None:
        """The rows were written."""
        self.rows = []

    def write(self, conn: sqlite3.Connection) -> None:
        """Inside the checkpoint's transaction (the caller's)."""
        if self.rows:
            conn.executemany(_INSERT, [dataclasses.astuple(row) for row in self.rows])

    @staticmethod
    def load(conn: sqlite3.Connection, run: int) -> list[FollowRow]:
        """The rows of the run that started at `run`, oldest first: a file another version
        stopped and restarted may hold an earlier run's (a version before the log kept no
        rows, and emptied none)."""
        return [FollowRow(*row) for row in conn.execute(_SELECT, (run,))]
