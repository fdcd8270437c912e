"""The state file itself: its schema, its identity, its lock, and how a run opens it.

One SQLite file per crawl (crawler.shell.state). This module knows the tables, and the three
ways a run comes to a file: a new one (created, replacing only a file of ours), a resumed one
(same start URL and configuration, else refused saying why), and a new run on a file that
holds the site's history (its crawl dropped, its history and URL ids kept).

* WAL with ``synchronous=NORMAL``: a commit is durable against a process crash (the threat
  here) without an fsync per checkpoint; a power cut may lose the latest checkpoints but
  never corrupts the file, which is the trade every resumable tool makes.
* One writer per file, enforced with ``fcntl.flock`` on ``<file>.lock``: two crawls
  interleaving checkpoints would produce a state neither could resume. The OS drops the lock
  when the process dies, so a crashed crawl never leaves a stale lock behind.
* The schema version moves only when the tables change; a file of another version is
  refused, not migrated, because a half-understood state would resume into a wrong sitemap
  (the nightly job starts afresh instead: :func:`outdated`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import sqlite3
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, cast

from crawler.core.history import HistoryRow
from crawler.errors import BusyError, SitemapCrawlerError
from crawler.shell.state_follows import FOLLOW_COLUMNS
from sitemap_out import locks

__all__ = [
    "APPLICATION_ID",
    "CARRIED_LISTED",
    "CARRIED_LISTING",
    "DONE",
    "FINISH_EMPTIED",
    "HISTORY_NAMES",
    "QUEUED",
    "RUN_TABLES",
    "SCHEMA_VERSION",
    "STATE_CACHE_KIB",
    "UNRESUMABLE",
    "OpenedFile",
    "StateError",
    "StateWriteError",
    "has_history",
    "insert_rows",
    "now_iso",
    "open_file",
    "outdated",
    "peek",
    "read_only",
    "unlock",
    "unresumable",
    "write_rows",
]

SCHEMA_VERSION: Final = 7  # 7: PageExtras.about (llms.txt) in the packed extras
#: ``PRAGMA application_id`` marks the file as ours, so a random SQLite database passed by
#: mistake to ``--state`` is recognised (and, with ``--resume`` off, never silently replaced
#: by something that merely looks similar). ASCII "SMCS".
APPLICATION_ID: Final = 0x534D4353

# urls.state: NULL means the string is only referenced (say, a referrer that was never met
# under that spelling), so it is interned but not part of the seen set. A URL queued is
# QUEUED until a decision or listing row names it: then it is done. Its state is written
# DONE only when it is done before a checkpoint writes its row queued (a row new this run,
# inserted so); one written QUEUED (a URL of an earlier run queued again, or one queued and
# checkpointed before its page was judged) stays QUEUED on disk (writing a URL's state twice,
# once queued and once done, was 0.03 CPU-s of an unchanged night of 20,000 pages, #26):
# readers of the queue tell it by its decision or listing (ResumeQueue.load, peek; a page
# listed by its carried row, by that row: CARRIED_LISTED). A URL decided without being
# queued (screened out when met) is written DONE.
QUEUED: Final = 0
DONE: Final = 1
#: How a stopped crawl's record is kept (the tables a resume reads), stored with the
#: fingerprint: a crawl stopped by a version that keeps it otherwise is not resumed (the
#: job starts afresh on the history), neither by this version nor by that one. 2: a URL
#: queued is done by its decision or listing row (above); the first URL of each body in
#: first_bodies. 3: a page listed from its carried history row is listed by that row
#: (CARRIED_LISTED), not a listing row.
RECORD_FORMAT: Final = 3

#: A URL's history (the site's, across runs): `history` holds the last finished run's rows,
#: read as the baseline and never written during a run; this run's rows gather in
#: `fresh_history` and replace them when the run finishes (finish()), so a resumed or
#: abandoned run never mixes two runs' rows into the baseline. Per URL: the validators,
#: the facts its decision was made on (for a 304), its content blocks (4 bytes each) and
#: dates (microseconds since the epoch). Outlinks are packed 32-bit ids into urls.
#: The columns are HistoryRow's fields, by name: a field without a type here fails at import.
_HISTORY_TYPES: Final = {
    "url": "INTEGER PRIMARY KEY REFERENCES urls(id)",
    **dict.fromkeys(("etag", "modified", "mime", "canonical", "reason", "source"), "TEXT"),
    **dict.fromkeys(("meta", "header", "targets", "nofollow", "blocks", "extras"), "BLOB"),
    **dict.fromkeys(
        ("body", "status", "first_seen", "changed", "lastmod", "stamped", "canonical_in_html"),
        "INTEGER",
    ),
}
HISTORY_NAMES: Final = tuple(f.name for f in dataclasses.fields(HistoryRow))
_HISTORY_COLUMNS: Final = ", ".join(f"{name} {_HISTORY_TYPES[name]}" for name in HISTORY_NAMES)

#: This run's history beside `fresh_history`, added after schema 7 without a bump (a file
#: without them gets them when opened; an older version ignores them): `carried`, the pages
#: whose row is the history's as it is (crawler.shell.revalidation.carries), kept at the
#: finish instead of copied; `published`, the lastmods published (HistoryStore.published),
#: joined to both at the finish; `follows`, where a night with a history keeps, a row a
#: checkpoint, what it needs to name the early referrers of a URL judged broken once
#: resumed (crawler.shell.referrers). All three are emptied by a new run, and all but
#: `carried` by the finish (FINISH_EMPTIED): its rows keep the listings they hold
#: (CARRIED_LISTING), the night's record, as the listings table is kept.
#: `first_bodies` takes over from `bodies` (kept for older versions, which read it; a crawl
#: they stopped is not resumed, RECORD_FORMAT): the first URL met with each body, a row a
#: checkpoint of packed keys and ids in the order met (the machine's byte order, as the
#: follow log's: a state file is read where it was written), appended, where `bodies` took
#: a row a body keyed by its hash, a random place in its b-tree (on an unchanged night,
#: 0.02 CPU-s of 1.5, #26). Not one of RUN_TABLES: a new run empties it with the crawl's
#: own tables (_restart), and the finish keeps it, as it keeps the listings.
RUN_TABLES: Final = ("carried", "published", "follows")
#: The tables the finish empties: this run's rows, but for the record it keeps until a new
#: run (the listings, `carried`, `first_bodies`)
FINISH_EMPTIED: Final = ("fresh_history", "published", "follows")
#: `carried`'s columns past the URL: a page listed as its carried row says (every field of
#: its listing the row's or a constant: state_history.CarriedRows.keeps) keeps the rest of
#: its listing there, where a listing row took a row more a page (on an unchanged night,
#: every page: 1-2% of its CPU, #26); `depth` is NULL for a page not so listed
CARRIED_LISTING: Final = ("depth", "referrer", "lastmod")
#: The carried rows that list their page (ResumeQueue.load: they are done, as listing rows)
CARRIED_LISTED: Final = "SELECT url FROM carried WHERE depth IS NOT NULL"
_RUN_HISTORY: Final = """
CREATE TABLE IF NOT EXISTS carried (
    url INTEGER PRIMARY KEY REFERENCES urls(id),
    depth INTEGER, referrer INTEGER REFERENCES urls(id), lastmod INTEGER
);
CREATE TABLE IF NOT EXISTS published (
    url INTEGER PRIMARY KEY REFERENCES urls(id), changed INTEGER, lastmod INTEGER, source TEXT
);
CREATE TABLE IF NOT EXISTS follows (
    seq INTEGER PRIMARY KEY, run INTEGER NOT NULL, pages BLOB NOT NULL,
    queued BLOB NOT NULL, judged BLOB NOT NULL, others TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS first_bodies (
    seq INTEGER PRIMARY KEY, keys BLOB NOT NULL, urls BLOB NOT NULL
);
"""

_SCHEMA: Final = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE urls (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    state INTEGER,
    depth INTEGER,
    referrer INTEGER REFERENCES urls(id),
    qseq INTEGER
);
CREATE TABLE decisions (
    seq INTEGER PRIMARY KEY,
    url INTEGER NOT NULL REFERENCES urls(id),
    status INTEGER,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL,
    depth INTEGER NOT NULL,
    referrer INTEGER REFERENCES urls(id)
);
CREATE TABLE listings (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a replay reads seq <= its last
    url INTEGER NOT NULL REFERENCES urls(id),
    loc TEXT,
    status INTEGER NOT NULL,
    detail TEXT NOT NULL,
    depth INTEGER NOT NULL,
    referrer INTEGER REFERENCES urls(id),
    lastmod INTEGER,
    changefreq TEXT,
    priority REAL,
    body INTEGER,
    stamped INTEGER,
    extras BLOB  -- the page's images, alternates, videos (listings.Listing.extras)
);
CREATE INDEX listings_url ON listings (url);  -- unlisted() deletes by URL
CREATE TABLE referrers (
    seq INTEGER PRIMARY KEY,
    url INTEGER NOT NULL REFERENCES urls(id),
    referrer INTEGER NOT NULL REFERENCES urls(id)
);
CREATE TABLE bodies (digest BLOB PRIMARY KEY, url INTEGER NOT NULL REFERENCES urls(id))
    WITHOUT ROWID;
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE history ({_HISTORY_COLUMNS});
CREATE TABLE fresh_history ({_HISTORY_COLUMNS});
{_RUN_HISTORY}
"""
_TABLES: Final = frozenset(
    {
        "meta",
        "urls",
        "decisions",
        "listings",
        "referrers",
        "bodies",
        "counters",
        "history",
        "fresh_history",
    }
)


class StateError(SitemapCrawlerError):
    """The state file cannot be used: it belongs to another crawl, is not a state file, is
    missing when resuming, or cannot be written. (In use by a live crawl: BusyError.)"""

    exit_code = 2


class StateWriteError(StateError):
    """The state file could not be written during the crawl (a full disk, a lost mount):
    a runtime failure, not a usage error; the crawl can be resumed once it is fixed."""

    exit_code = 5


@dataclass(slots=True)
class OpenedFile:
    """A state file opened for a run, locked: where its records go on (ids, queue order)."""

    conn: sqlite3.Connection
    lock_fd: int
    kept: bool  # rows of an earlier run are kept: a resumed crawl, or a history
    next_id: int = 1
    qseq: int = 0
    finished: bool = False

    def close(self) -> None:
        self.conn.close()
        unlock(self.lock_fd)


def open_file(
    path: Path,
    *,
    fingerprint: str,
    start_url: str,
    resume: bool,
    settings: str | None,
    fresh: bool,
    history_key: str,
    started: int,
) -> OpenedFile:
    """Lock and open the file of a run (crawler.shell.state.CrawlState.open says which
    file each argument makes): resumed, restarted on its history, or created afresh."""
    if resume and not path.is_file():
        raise StateError(f"nothing to resume: state file {path} does not exist")
    if not path.parent.is_dir():  # checked with the other outputs' folders; never made
        raise StateError(f"state file {path}: no folder {path.parent}; create it, or name another")
    lock_fd = _lock(path)
    conn: sqlite3.Connection | None = None
    try:
        kept = not resume and not fresh and _has_baseline(path, start_url)
        if resume or kept:
            conn = _connect(path)
            if resume:
                _check_existing(
                    conn, path, fingerprint=fingerprint, start_url=start_url, settings=settings
                )
            _configure(conn, path)
            _add_run_history(conn, path)
            if kept:
                _restart(
                    conn, path, fingerprint=fingerprint, settings=settings,
                    history_key=history_key, started=started,
                )  # fmt: skip
            next_id, qseq, finished = _resume_counters(conn, path)
            return OpenedFile(conn, lock_fd, True, next_id, qseq, finished)
        _check_replaceable(path)
        _remove_database(path)
        conn = _connect(path)
        _configure(conn, path)
        _create(
            conn, path, fingerprint=fingerprint, start_url=start_url, settings=settings,
            history_key=history_key, started=started,
        )  # fmt: skip
        return OpenedFile(conn, lock_fd, False)
    except BaseException:
        if conn is not None:
            conn.close()
        unlock(lock_fd)
        raise


#: Counters a stopped crawl saves when its answers are no result to go on from: the
#: failures of a site that looked down, or the pages a bot protection answered in its place.
#: Such a crawl is over: `peek` tells the nightly job to start afresh, a --resume refuses it.
UNRESUMABLE: dict[str, str] = {
    "outage": "stopped because the site looked down; its failed pages would be kept as they failed",
    "blocked": "stopped because a bot protection answered instead of the site; its pages "
    "would be kept as it answered",
}


def unresumable(counters: Mapping[str, int]) -> str | None:
    """Why a crawl stopped with these saved counters can't be resumed, or None when it can."""
    return next((why for name, why in UNRESUMABLE.items() if counters.get(name)), None)


#: Whether a URL waits in the queue: queued, and neither decided nor listed (see QUEUED)
_WAITING: Final = (
    f"SELECT 1 FROM urls WHERE state = {QUEUED} AND id NOT IN (SELECT url FROM decisions)"
    f" AND id NOT IN (SELECT url FROM listings) AND id NOT IN ({CARRIED_LISTED}) LIMIT 1"
)


def peek(path: Path, fingerprint: str) -> bool:
    """Read-only, for the nightly job: does ``path`` hold a crawl of this configuration
    (``fingerprint``) that stopped before its end (SIGTERM, killed, out of memory), so
    that a resume would continue it? False for anything else: no file, not a state
    file, another schema version or configuration, a finished crawl, one that ran to
    its end but published nothing (nothing listed, refused by the publish guard), or one
    that `unresumable` names, or one stopped by a version keeping its record otherwise
    (RECORD_FORMAT): those are over, and the next run starts afresh. Never writes,
    never takes the lock: a crawl running on the file is left alone (its own lock
    refuses the run that follows, exit 75). On a stopped crawl, whether a URL waits reads
    every decision (_WAITING: half a second at 2 million), which its resume reads anyway."""

    def stopped(conn: sqlite3.Connection) -> bool:
        if _identity(conn) != (APPLICATION_ID, SCHEMA_VERSION):
            return False
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        if meta.get("fingerprint") != _recorded(fingerprint) or int(meta.get("finished") or 0):
            return False
        counters = dict(conn.execute("SELECT name, value FROM counters"))
        if unresumable(counters) is not None:
            return False
        return conn.execute(_WAITING).fetchone() is not None

    return _asked(path, stopped)


def has_history(path: Path, start_url: str) -> bool:
    """Read-only: whether ``path`` holds a history of start_url's (this schema version) that
    a run would ask its pages again by. A guess the crawl plans its worker processes by
    before it opens the file, which decides (a history kept with other settings is asked
    whole: crawler.shell.revalidation). Never takes the lock, never raises."""

    def kept(conn: sqlite3.Connection) -> bool:
        if _identity(conn) != (APPLICATION_ID, SCHEMA_VERSION):
            return False
        row = conn.execute("SELECT value FROM meta WHERE key = 'start_url'").fetchone()
        if row is None or row[0] != start_url:
            return False
        return conn.execute("SELECT 1 FROM history LIMIT 1").fetchone() is not None

    return _asked(path, kept)


def outdated(path: Path) -> bool:
    """Read-only, for the nightly job: is ``path`` a state file of ours written by
    another schema version? A crawl refuses such a file (its history would be misread);
    the job, which no one watches, starts afresh instead of failing every night."""

    def other_version(conn: sqlite3.Connection) -> bool:
        app_id, version = _identity(conn)
        return app_id == APPLICATION_ID and version != SCHEMA_VERSION

    return _asked(path, other_version)


def _asked(path: Path, question: Callable[[sqlite3.Connection], bool]) -> bool:
    """question's answer of path opened read-only; False for no file, a file SQLite cannot
    read, or one whose rows are not what ours would be. (SQLite may leave a WAL file's
    empty -wal and -shm beside it, as any reader.)"""
    conn = read_only(Path(path))
    if conn is None:
        return False
    try:
        return question(conn)
    except (sqlite3.Error, ValueError, TypeError):
        return False
    finally:
        conn.close()


def read_only(path: Path) -> sqlite3.Connection | None:
    """path opened read-only (no lock, no write, no journal), or None."""
    try:
        if not path.is_file():
            return None
        return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except (OSError, sqlite3.Error):
        return None


def _identity(conn: sqlite3.Connection) -> tuple[int, int]:
    """The file's application id and schema version."""
    (app_id,) = conn.execute("PRAGMA application_id").fetchone()
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    return app_id, version


#: The rows write_rows() gives one statement at most (SQLite before 3.32 takes 999
#: parameters a statement): more saves few instructions, and each size is a statement
#: sqlite3 keeps prepared (a 500-row one of the listings took about 0.1 MB)
_MOST_PARAMETERS: Final = 999
_MOST_ROWS: Final = 64
#: The state connection's page cache, in KiB (see _configure)
STATE_CACHE_KIB: Final = 16384


def write_rows(
    conn: sqlite3.Connection,
    statement: str,
    width: int,
    rows: Collection[Sequence[object]],
    *,
    group: str = "",
) -> None:
    """`rows`, of `width` values each, written by `statement`, in which `{}` stands for a
    list of rows ("INSERT ... VALUES {}", "UPDATE ... WHERE id IN ({})"), up to
    _MOST_ROWS a statement, in order: executemany runs its statement once a row, and a
    statement's start and end cost SQLite more than a small row (the listings'
    AUTOINCREMENT writes its counter at each end): a checkpoint's rows in 25 to 55% fewer
    instructions. The rows left over go by powers of two, so that a few statements of
    fixed sizes serve every checkpoint. `group`: a row in the statement, `width` marks
    and any constants ("(?, ?, 0)"), by default the marks alone."""
    group = group or f"({', '.join('?' * width)})"
    for batch in _batches(rows, width):
        values = list(itertools.chain.from_iterable(batch))
        conn.execute(statement.format(", ".join([group] * len(batch))), values)


def _batches(rows: Collection[Sequence[object]], width: int) -> Iterator[list[Sequence[object]]]:
    """`rows` a statement's worth at a time (write_rows): up to _MOST_ROWS, within SQLite's
    limit of parameters, the rest by powers of two."""
    most = _most_rows(width)
    listed = rows if isinstance(rows, list) else list(rows)
    at, count = 0, len(listed)
    while at < count:
        size = min(most, 1 << ((count - at).bit_length() - 1))
        yield listed[at : at + size]
        at += size


def _most_rows(width: int) -> int:
    """The rows of write_rows()' largest statement of rows `width` values wide."""
    return min(_MOST_PARAMETERS // width, _MOST_ROWS)


#: The values insert_rows() binds once. Its callers' precondition, not checked: only
#: INTEGER columns, or columns holding texts alone, where a value equal to the one bound
#: is stored as it is (1.0 and True as 1 in an INTEGER column; in an untyped or TEXT
#: column 1 and 1.0 are equal yet stored apart)
_CONSTANT_TYPES: Final = frozenset({int, str, bool})
#: insert_rows()'s statements with shared values, by statement, marks and rows: made once
_NUMBERED: dict[tuple[str, tuple[str | None, ...], int], str] = {}


def insert_rows(
    conn: sqlite3.Connection,
    statement: str,
    columns: Sequence[str],
    rows: Collection[Sequence[object]],
    *,
    constants: Collection[str] = (),
) -> None:
    """`rows` written as write_rows() writes them by `statement`, an insert naming
    `columns` in this order ("INSERT INTO t (a, b) VALUES {}"), but for a column that is
    None in every row of a statement: it is left out of that statement and comes out NULL
    all the same (no column of the state has a DEFAULT: tests/test_state_rows.py), with no
    None bound. sqlite3 binds a None through the adapters (about 1,000 instructions with
    ours, below), and a listing row holds four, the columns a sitemap seldom sets: a
    listing row and its published row in a fifth fewer instructions. A column is looked
    at only where the statement's first row holds None.

    `constants`: INTEGER columns, or columns of texts, whose value is often the same in
    every row of a statement (a listing's status, detail and stamp; a screened URL's
    reason and detail): in a statement of the most rows (write_rows' largest, 64, fewer where
    SQLite's limit of parameters comes first) whose rows all hold it, it is bound once,
    as a numbered parameter every row names (?1), not once a row. A text bound costs
    sqlite3 about 850 instructions, an int 250, a bool 1,900 (#26). Only the largest
    statements bind values once: each pattern of shared columns is a statement of its own
    to prepare (about 1.1 M instructions for 64 rows, what about 500 rows save; sqlite3
    keeps 128), so a column that is shared in some statements and not in others (a
    depth) costs a statement more, not less."""
    width = len(columns)
    named = ", ".join(columns)
    if named not in statement:  # else a statement leaving one out would name them all
        raise ValueError(f"{statement!r} does not name the columns {named}")
    fixed = [i for i, name in enumerate(columns) if name in constants]
    full = _most_rows(width)  # the largest statement's rows
    for batch in _batches(rows, width):
        size = len(batch)
        values = list(itertools.chain.from_iterable(batch))
        first = batch[0]
        marks: list[str | None] = ["?"] * width  # None: left out; "=": bound once
        for i, value in enumerate(first):
            if value is None and values[i::width].count(None) == size:
                marks[i] = None
        if size == full:
            for i in fixed:
                value = first[i]
                if type(value) in _CONSTANT_TYPES and values[i::width].count(value) == size:
                    marks[i] = "="
        if marks.count(None) == width:  # a statement names one column at least
            marks = ["?"] * width
        if "=" in marks:
            shared = [first[i] for i, mark in enumerate(marks) if mark == "="]
            values = shared + list(itertools.compress(values, itertools.cycle(
                [mark == "?" for mark in marks]
            )))  # fmt: skip
            key = (statement, tuple(marks), size)
            text = _NUMBERED.get(key) or _numbered(key, columns)
        else:
            text = statement
            if None in marks:
                text = statement.replace(named, ", ".join(itertools.compress(columns, marks)), 1)
                values = list(itertools.compress(values, itertools.cycle(marks)))
            group = f"({', '.join(mark for mark in marks if mark)})"
            text = text.format(", ".join([group] * size))
        conn.execute(text, values)


def _numbered(key: tuple[str, tuple[str | None, ...], int], columns: Sequence[str]) -> str:
    """insert_rows()' statement of `size` rows that binds the values marked "=" once, as
    ?1, ?2, ... in every row, and those marked "?" a row, numbered after them; kept. A
    row's group is made once and numbered by one format of all rows (a number made a
    value in a generator cost as much as preparing the statement)."""
    statement, marks, size = key
    text = statement.replace(", ".join(columns), ", ".join(itertools.compress(columns, marks)), 1)
    once = {i: n for n, i in enumerate((i for i, m in enumerate(marks) if m == "="), 1)}
    group = ", ".join(f"?{once[i]}" if i in once else "?{}" for i, m in enumerate(marks) if m)
    each = marks.count("?")
    groups = ", ".join([f"({group})"] * size).format(
        *range(len(once) + 1, len(once) + 1 + each * size)
    )
    if len(_NUMBERED) >= 256:  # never on a crawl's few tables; bounded all the same
        _NUMBERED.clear()
    _NUMBERED[key] = text = text.format(groups)
    return text


def now_iso(*, precise: bool = False) -> str:
    """Now, to the second; `precise`: to the microsecond, a stamp no other write makes (a
    version before #26 writes seconds only), as a finish's `counted_at` needs."""
    return datetime.now(UTC).isoformat(timespec="microseconds" if precise else "seconds")


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _lock(path: Path) -> int:
    """Take the file's exclusive lock, or refuse: two crawls on one state file would
    interleave checkpoints into something neither can resume."""
    try:
        return locks.take(_lock_path(path))
    except locks.LockHeld as held:
        raise BusyError(f"state file {path} is in use by another running crawl{held.who}") from None
    except OSError as exc:
        raise StateError(f"cannot lock state file {path}: {exc.strerror}") from exc


def unlock(fd: int) -> None:
    locks.release(fd)


def _remove_database(path: Path) -> None:
    """A fresh crawl starts over: drop the old file and its WAL, so no page of the old
    crawl can leak into the new one."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        victim = path.with_name(path.name + suffix)
        try:
            victim.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StateError(f"cannot replace state file {path}: {exc.strerror}") from exc


def fetched_nothing(conn: sqlite3.Connection) -> bool:
    """Whether a run's file records an unfinished run that fetched no page (it stopped at
    robots.txt, or before): no history to compare with, nothing a resume would not redo."""
    try:
        fetched = conn.execute("SELECT value FROM counters WHERE name = 'fetched'").fetchone()
        done = conn.execute("SELECT value FROM meta WHERE key = 'finished'").fetchone()
    except sqlite3.Error:
        return False  # unreadable: kept, as it is
    return not (fetched and fetched[0]) and not (done and done[0])


def discard_unused(path: Path) -> None:
    """Remove the file a failed run made, its WAL and its lock, when the run fetched no
    page (it stopped at robots.txt, or before; the engine saves its counters with every
    checkpoint): nothing to resume or compare with, so nothing left behind (#25). Best
    effort: a failed run's cleanup must not hide why it failed. Called once the run has
    closed the file and let go of its lock."""
    conn = read_only(path)
    if conn is None:
        return
    try:
        unused = fetched_nothing(conn)
    finally:
        conn.close()
    if not unused:
        return
    with contextlib.suppress(StateError):
        _remove_database(path)
    with contextlib.suppress(OSError):
        _lock_path(path).unlink()


#: sqlite3 binds an int, float, str or bytearray as it is, and any other value after a
#: search of its adapters: on CPython 3.11 a tuple made, a dict and two attributes looked
#: up, an AttributeError formatted and dropped, about 3,200 instructions a value (a row of
#: six ints costs as much), and a listing row holds five Nones and a bool. An adapter
#: registered for the type is found at the first look-up (about 1,000). These give each
#: value what sqlite3 binds for it anyway (None: NULL; bytes: the blob; bool: the int),
#: so nothing written changes, here or in any other sqlite3 file of the process: the
#: registry is the module's, process-wide. (A checkpoint's rows in a third fewer
#: instructions. A NULL written into the statement for each None saved more in SQLite but
#: cost more in Python to find, bench/README.md; insert_rows leaves out only a column None
#: in every row of a statement, found in C.)
sqlite3.register_adapter(type(None), cast("Callable[[None], None]", {}.get))  # C: no frame
sqlite3.register_adapter(bytes, bytes)
sqlite3.register_adapter(bool, int)


def _connect(path: Path) -> sqlite3.Connection:
    try:
        # Autocommit mode: transactions are begun and committed explicitly by checkpoint().
        return sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise StateError(f"cannot open state file {path}: {exc}") from exc


def _configure(conn: sqlite3.Connection, path: Path) -> None:
    """WAL and synchronous=NORMAL: see the module docstring. Done only once the file is known
    to be ours, because switching the journal mode rewrites the file's header."""
    try:
        (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if str(mode).lower() != "wal":
            raise StateError(f"state file {path} cannot use WAL mode (got {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Checkpoints are bulk writes; a larger page cache than the default 2 MiB keeps the
        # b-trees' inner pages hot. Not more: a night fills the cache to its size with pages
        # it will not touch again (each history row is read once), 64 MiB was 18 MB of the
        # 20,000-page full night's 104 MB peak RSS; the pages read again come from the OS's
        # cache (7,600 more preads that night, a few µs each: about 0.02 CPU-s of 20)
        conn.execute(f"PRAGMA cache_size = -{STATE_CACHE_KIB}")
        conn.execute("PRAGMA temp_store = MEMORY")
    except sqlite3.DatabaseError as exc:
        raise StateError(f"{path} is not a sitemap-crawler state file ({exc})") from exc


def _check_replaceable(path: Path) -> None:
    """A fresh crawl replaces its old state file, but nothing else: a typo in ``--state``
    must not delete someone's database or sitemap."""
    try:
        if not path.exists():
            return
        if not path.is_file():  # before the size: /dev/null is empty, and must stay
            raise StateError(f"cannot use {path} as a state file: it is not a regular file")
        if path.stat().st_size == 0:
            return
    except OSError as exc:
        raise StateError(f"cannot replace state file {path}: {exc.strerror}") from exc
    try:
        # Read-write, not ?mode=ro: a read-only connection cannot recover the WAL a crashed
        # crawl left behind, and that is exactly the file a fresh crawl usually replaces.
        conn = sqlite3.connect(path)
        try:
            (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        app_id = None
    if app_id != APPLICATION_ID:
        raise StateError(
            f"refusing to replace {path}: it is not a sitemap-crawler state file "
            "(delete it or choose another --state file)"
        )


def _recorded(fingerprint: str) -> str:
    """The fingerprint as a run stores it: with RECORD_FORMAT, so that a version that reads
    a stopped crawl's record otherwise, older or newer, finds another and never resumes it."""
    return f"{fingerprint}+{RECORD_FORMAT}"


def _run_meta(
    fingerprint: str, settings: str | None, history_key: str, started: int | None
) -> list[tuple[str, object]]:
    """The meta rows a run starts with, in a new file and in one holding a history. Meta
    keys are free-form, so one added later needs no new schema version (a file whose
    "settings" is missing or null is refused on a mismatch without naming them)."""
    return [
        ("fingerprint", _recorded(fingerprint)),
        ("settings", settings),
        ("updated", now_iso()),
        ("qseq", 0),
        ("finished", 0),
        ("history_key", history_key),
        ("run_started", started or 0),
    ]


def _create(
    conn: sqlite3.Connection,
    path: Path,
    *,
    fingerprint: str,
    start_url: str,
    settings: str | None,
    history_key: str = "",
    started: int | None = None,
) -> None:
    now = now_iso()
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [
                ("schema_version", SCHEMA_VERSION),
                ("start_url", start_url),
                ("created", now),
                ("next_id", 1),
                *_run_meta(fingerprint, settings, history_key, started),
            ],
        )
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise StateError(f"cannot create state file {path}: {exc}") from exc


def _has_baseline(path: Path, start_url: str) -> bool:
    """Whether path holds a history a new run of start_url starts from: a state file of
    ours, of this schema version and start URL. Another version's file is refused (its
    history cannot be read, and silently dropping it would cost a night of lastmods);
    another site's is replaced, as anything else of ours is."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return False
    except OSError:
        return False
    try:
        conn = sqlite3.connect(path)  # read-write: a crashed crawl's WAL is recovered
        try:
            (app_id,) = conn.execute("PRAGMA application_id").fetchone()
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if app_id != APPLICATION_ID:
                return False  # refused or replaced by _check_replaceable
            if version != SCHEMA_VERSION:
                raise StateError(
                    f"state file {path} has schema version {version}, this version of "
                    f"sitemap-crawler reads {SCHEMA_VERSION}; its history cannot be used: "
                    "delete it or run with --fresh"
                )
            row = conn.execute("SELECT value FROM meta WHERE key = 'start_url'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == start_url


def _add_run_history(conn: sqlite3.Connection, path: Path) -> None:
    """The tables of _RUN_HISTORY, for a file written before them (their creation is a
    no-op on a file that has them)."""
    try:
        # a follow log of another shape (a development build's) is dropped: it only helps a
        # resumed night name a broken URL's early referrers, and cannot be written to
        columns = [row[1] for row in conn.execute("PRAGMA table_info(follows)")]
        if columns and columns != ["seq", *FOLLOW_COLUMNS]:
            conn.execute("DROP TABLE follows")
        # `carried` of a version before its listing columns: given each it lacks (its rows, a
        # run's, list nothing: NULL depths), one by one (a file cut between two is mended)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(carried)")]
        for name in CARRIED_LISTING if columns else ():
            if name not in columns:
                conn.execute(f"ALTER TABLE carried ADD COLUMN {name} INTEGER")
        for statement in _RUN_HISTORY.split(";"):
            if statement.strip():
                conn.execute(statement)
    except sqlite3.Error as exc:
        raise StateError(f"cannot write state file {path}: {exc}") from exc


#: The URL ids the history's template was counted on, forgotten when a write since the
#: finish that kept them (which stamps `updated` as `counted_at`) moved `updated`
_FORGET_STALE_COUNTED: Final = (
    "DELETE FROM meta WHERE key IN ('counted', 'counted_at') AND"
    " (SELECT value FROM meta WHERE key = 'counted_at')"
    " IS NOT (SELECT value FROM meta WHERE key = 'updated')"
)


def _restart(
    conn: sqlite3.Connection,
    path: Path,
    *,
    fingerprint: str,
    settings: str | None,
    history_key: str,
    started: int | None,
) -> None:
    """A new run on a file holding a history: the last run's crawl is dropped (queue,
    decisions, listings, an unfinished run's rows), its history and URL ids kept."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        for table in (
            "decisions", "listings", "referrers", "bodies", "first_bodies", "counters",
            "fresh_history", *RUN_TABLES,
        ):  # fmt: skip
            conn.execute(f"DELETE FROM {table}")
        conn.execute(
            "UPDATE urls SET state = NULL, depth = NULL, referrer = NULL, qseq = NULL"
            " WHERE state IS NOT NULL OR referrer IS NOT NULL"
        )
        old = conn.execute("SELECT value FROM meta WHERE key = 'history_key'").fetchone()
        if old is None or old[0] != history_key:
            # links and directives were read with other settings: ask for whole pages again
            conn.execute("UPDATE history SET etag = NULL, modified = NULL")
        # the ids the history's template was counted on (crawler.core.lastmod.NightTemplate)
        # hold only if the finish that kept them was the last write: a run since (one that
        # did not finish, or a version that does not keep them) leaves them unknown. The
        # finish stamps `updated` to the microsecond, a stamp no other write repeats.
        conn.execute(_FORGET_STALE_COUNTED)
        conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            _run_meta(fingerprint, settings, history_key, started),
        )
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise StateError(f"cannot start a new run in state file {path}: {exc}") from exc


def _check_existing(
    conn: sqlite3.Connection,
    path: Path,
    *,
    fingerprint: str,
    start_url: str,
    settings: str | None = None,
) -> None:
    """Refuse a file that is not ours, is of another schema version, or belongs to another
    crawl; each refusal says which of these it is, in one line."""
    try:
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        tables = {
            name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")
        }
        if app_id != APPLICATION_ID or not tables >= _TABLES:
            raise StateError(f"{path} is not a sitemap-crawler state file")
        if version != SCHEMA_VERSION:
            raise StateError(
                f"state file {path} has schema version {version}, this version of "
                f"sitemap-crawler reads {SCHEMA_VERSION}; delete it or start a fresh crawl "
                "with --fresh"
            )
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    except sqlite3.DatabaseError as exc:
        raise StateError(f"{path} is not a sitemap-crawler state file ({exc})") from exc
    stored_url = meta.get("start_url")
    if stored_url != start_url:
        raise StateError(
            f"state file {path} is for a crawl of {stored_url}, not {start_url}; "
            "start a fresh crawl without --resume"
        )
    stored = meta.get("fingerprint")
    if stored != _recorded(fingerprint):
        if isinstance(stored, str) and stored.partition("+")[0] == fingerprint:
            if int(meta.get("finished") or 0):
                raise StateError(
                    f"the crawl saved in {path} finished and was published (by another "
                    "version of sitemap-crawler); there is nothing to resume (run without "
                    "--resume to crawl again)"
                )
            raise StateError(
                f"the crawl saved in {path} was stopped by another version of "
                "sitemap-crawler, which keeps a stopped crawl's record otherwise: it can't be "
                "resumed; a crawl without --resume starts afresh on its history (the nightly "
                "job does so by itself)"
            )
        differences = _differences(meta.get("settings"), settings)
        if differences is not None:
            saved, now = differences
            raise StateError(
                f"--resume refused: {path} was saved with {saved}; now {now} "
                "(start a fresh crawl without --resume, or use the same settings)"
            )
        raise StateError(
            f"the state file was made with a different configuration ({path}); "
            "use the same options to resume, or start a fresh crawl without --resume"
        )


_NONE: Final = object()  # a setting one side does not have (made by another version)


def _differences(saved: object, now: str | None) -> tuple[str, str] | None:
    """The settings that differ, as "key=value, ..." saved and now; None when the file holds
    none (made before they were kept) or they cannot be told apart."""
    if not isinstance(saved, str) or now is None:
        return None
    try:
        before, after = json.loads(saved), json.loads(now)
    except ValueError:
        return None
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    keys = sorted(
        k for k in before.keys() | after.keys() if before.get(k, _NONE) != after.get(k, _NONE)
    )
    if not keys:
        return None

    def shown(values: dict[str, Any]) -> str:
        return ", ".join(
            f"{k}={json.dumps(values[k], ensure_ascii=False)}" if k in values else f"no {k}"
            for k in keys
        )

    return shown(before), shown(after)


def _resume_counters(conn: sqlite3.Connection, path: Path) -> tuple[int, int, bool]:
    """The next URL id, queue sequence and finished flag, so new records continue the old
    ones instead of colliding with them. Each checkpoint stores them in its transaction."""
    try:
        meta = dict(
            conn.execute("SELECT key, value FROM meta WHERE key IN ('next_id', 'qseq', 'finished')")
        )
        (max_id,) = conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
    except sqlite3.Error as exc:
        raise StateError(f"cannot read state file {path}: {exc}") from exc
    next_id = max(int(meta.get("next_id", 1)), max_id + 1)
    return next_id, int(meta.get("qseq", 0)), bool(meta.get("finished", 0))
