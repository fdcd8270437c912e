"""The crawl's resumable state: one SQLite file, written in checkpoints.

A crawl of a large site runs for hours; losing it to a crash, a deploy or a SIGKILL and
starting over costs every request again. So the engine reports each change here (a URL
queued, a URL's decision or listing, a body hash, a referrer, a counter) and this module keeps
enough to rebuild the engine's memory exactly: ``--resume`` then continues where the last
checkpoint left off and publishes the same sitemap an uninterrupted crawl would have.

Design, and why:

* Recording is on the crawler's hot path, so every call only appends to in-memory buffers
  (about a microsecond); :meth:`CrawlState.checkpoint` writes them in ONE transaction with
  ``executemany``. A crash therefore loses whole checkpoints, never half of one, and because
  the engine records a page's decision together with the links it found, the state on disk
  always ends on page boundaries: the pages lost since the last checkpoint are simply still
  "queued" and are fetched again.
* Each URL string is stored once, in ``urls`` with an integer id; decisions, listings, body
  hashes and referrers point at ids. Crawl state is dominated by URLs, and a crawl of a
  million pages would otherwise store each one three or four times.
* Ids are assigned in memory (the engine's URL universe is in memory anyway), so recording
  never has to ask SQLite for one, and a checkpoint is pure bulk insert/update by primary key.
* WAL with ``synchronous=NORMAL``: a commit is durable against a process crash (the threat
  here) without an fsync per checkpoint; a power cut may lose the latest checkpoints but
  never corrupts the file, which is the trade every resumable tool makes.
* The file outlives a finished crawl as the site's history (#14): per URL its validators,
  the facts of its last answer, its links (ids) and its content blocks and dates. A new run
  (without ``--resume``) on the file of the same start URL keeps the URL ids and that
  history and starts its own crawl over; its rows gather in ``fresh_history`` and replace
  the baseline only when it publishes (:meth:`CrawlState.finish`), so a resumed or abandoned
  run never changes what the next one compares with. ``--fresh`` replaces the file.
* One writer per file, enforced with ``fcntl.flock`` on ``<file>.lock``: two crawls
  interleaving checkpoints would produce a state neither could resume. The OS drops the lock
  when the process dies, so a crashed crawl never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import operator
import sqlite3
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

from crawler.core.directives import NO_DIRECTIVES, Directives
from crawler.core.history import HistoryRow, Prior
from crawler.core.lastmod import LastRun, content_date, pack_blocks, unpack_blocks
from crawler.core.page import PageResult
from crawler.core.report import DecisionRecord
from crawler.core.wire import pack, unpack
from crawler.errors import BusyError, SitemapCrawlerError
from crawler.shell.listings import Listing, to_micros
from sitemap_out import locks

__all__ = [
    "SCHEMA_VERSION",
    "CrawlState",
    "QueuedRow",
    "Snapshot",
    "StateError",
    "StateWriteError",
]

#: Bumped whenever the tables change; a file from another version is refused, not migrated,
#: because a half-understood state would resume into a wrong sitemap.
SCHEMA_VERSION: Final = 5
#: ``PRAGMA application_id`` marks the file as ours, so a random SQLite database passed by
#: mistake to ``--state`` is recognised (and, with ``--resume`` off, never silently replaced
#: by something that merely looks similar). ASCII "SMCS".
APPLICATION_ID: Final = 0x534D4353

DEFAULT_CHECKPOINT_OPS: Final = 2_000
DEFAULT_CHECKPOINT_SECONDS: Final = 2.0
#: Rows read per query when streaming decisions and listings back; bounds memory on resume.
_CHUNK: Final = 10_000

# urls.state: NULL means the string is only referenced (say, a referrer that was never met
# under that spelling), so it is interned but not part of the seen set.
_QUEUED: Final = 0
_DONE: Final = 1

#: A listing's column in the listings table, by Listing field: rows are read and written by
#: field name, so a field added to Listing that the table lacks fails loudly, at once.
_LISTING_FIELDS: Final = tuple(f.name for f in dataclasses.fields(Listing))
#: Fields kept elsewhere: a listing's content blocks are its page's, in fresh_history
#: (written with it: engine._judge records the page before its listing), not twice.
_LISTING_JOINED: Final = frozenset({"blocks"})
_LISTING_STORED: Final = tuple(n for n in _LISTING_FIELDS if n not in _LISTING_JOINED)
_LISTING_SELECT: Final = ", ".join(
    {
        "url": "u.url",
        "loc": "coalesce(l.loc, u.url)",
        "referrer": "r.url",
        "depth": "min(l.depth, coalesce(u.depth, l.depth))",  # lowered() after it was listed
        "blocks": "f.blocks",
    }.get(name, f"l.{name}")
    for name in _LISTING_FIELDS
)
_LISTING_INSERT: Final = (
    f"INSERT INTO listings ({', '.join(_LISTING_STORED)})"
    f" VALUES ({', '.join('?' * len(_LISTING_STORED))})"
)
#: Likewise a decision's column in the decisions table, by DecisionRecord field (url and
#: referrer hold ids into urls, joined back to their strings on load).
_DECISION_FIELDS: Final = tuple(f.name for f in dataclasses.fields(DecisionRecord))
_DECISION_SELECT: Final = ", ".join(
    {"url": "u.url", "referrer": "r.url"}.get(name, f"d.{name}") for name in _DECISION_FIELDS
)
_DECISION_INSERT: Final = (
    f"INSERT INTO decisions ({', '.join(_DECISION_FIELDS)})"
    f" VALUES ({', '.join('?' * len(_DECISION_FIELDS))})"
)
#: decided()'s buffered row, in _DECISION_FIELDS order, from its values keyed by field name:
#: a field that decided() does not fill is a KeyError at the first decision, never a value
#: written into the next field's column. (About 0.1 µs; decided() is on the hot path.)
_decision_values: Final = operator.itemgetter(*_DECISION_FIELDS)

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
    **dict.fromkeys(("meta", "header", "targets", "blocks", "extras"), "BLOB"),
    **dict.fromkeys(("body", "status", "first_seen", "changed", "lastmod", "stamped"), "INTEGER"),
}
_HISTORY_NAMES: Final = tuple(f.name for f in dataclasses.fields(HistoryRow))
_HISTORY_COLUMNS: Final = ", ".join(f"{name} {_HISTORY_TYPES[name]}" for name in _HISTORY_NAMES)
#: A HistoryRow's values in column order (operator.attrgetter: one C call on the hot path).
_history_values: Final = operator.attrgetter(*_HISTORY_NAMES)
_FRESH_INSERT: Final = (
    f"INSERT OR REPLACE INTO fresh_history ({', '.join(_HISTORY_NAMES)})"
    f" VALUES ({', '.join('?' * len(_HISTORY_NAMES))})"
)
_PRIOR_SELECT: Final = (
    "SELECT etag, modified, mime, meta, header, canonical, body, blocks, first_seen, changed,"
    " extras, stamped FROM history WHERE url = ?"
)

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
"""
_T = TypeVar("_T")
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


@dataclass(slots=True, frozen=True)
class QueuedRow:
    """A URL still in the frontier, as the engine's ``Task`` needs it. Each field is the
    ``urls`` column of the same name (the referrer stored as an id), read by field name."""

    url: str
    depth: int
    referrer: str | None


#: load() reads the urls table once: id, state and qseq, then the columns a QueuedRow is
#: made of, by field name, so a field the table lacks fails the load ("no such column")
#: instead of being left out. The referrer column holds an id, named once all are read.
_QUEUED_FIELDS: Final = tuple(f.name for f in dataclasses.fields(QueuedRow))
_URLS_SELECT: Final = f"SELECT id, state, qseq, {', '.join(_QUEUED_FIELDS)} FROM urls"
_URLS_URL: Final = 3 + _QUEUED_FIELDS.index("url")
_URLS_QSEQ: Final = operator.itemgetter(2)
_QUEUED_REFERRER: Final = _QUEUED_FIELDS.index("referrer")


@dataclass(slots=True, frozen=True)
class Snapshot:
    """Everything the engine needs to rebuild its memory, as of the last checkpoint.

    ``decisions`` and ``listings`` are streamed from the file in chunks (a big crawl has
    millions), so consume them before closing the state; each can be iterated once.
    ``referrers``: more pages linking to a URL, besides the one its decision names.
    """

    queued: list[QueuedRow]
    seen: list[str]
    decisions: Iterator[DecisionRecord]
    listings: Iterator[Listing]
    bodies: dict[bytes, str]
    referrers: dict[str, list[str]]
    counters: dict[str, int]
    finished: bool


class CrawlState:
    """The open state file of one crawl. Not thread-safe: one event loop records into it."""

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        lock_fd: int,
        *,
        resumed: bool,
        checkpoint_ops: int,
        checkpoint_seconds: float,
        clock: Callable[[], float],
    ) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = conn
        self._lock_fd: int | None = lock_fd
        self._checkpoint_ops = checkpoint_ops
        self._checkpoint_seconds = checkpoint_seconds
        self._clock = clock
        self._last_checkpoint = clock()
        # url -> id for every interned URL. Loaded lazily on resume: load() builds it in the
        # same pass as the seen set, so the table is scanned once.
        self._ids: dict[str, int] | None = None if resumed else {}
        self._next_id = 1
        self._qseq = 0
        self._finished = False
        self._names: list[str | None] | None = None  # id -> URL of the baseline (outlinks)
        #: the start of this run (kept by a resume): the date a content change is given
        self.run_started = 0
        #: the blocks common to most pages in the previous finished run (crawler.core.lastmod)
        self.template_before: frozenset[int] = frozenset()
        #: whether earlier runs left a history to ask with validators and date content by
        self.has_history = False
        self._reset_buffers()

    def _reset_buffers(self) -> None:
        # Rows for URLs interned since the last checkpoint, mutated in place by later calls,
        # so a URL queued and decided within one checkpoint costs a single INSERT.
        self._new: dict[int, list[object]] = {}
        # Changes to URLs already on disk, applied in this order (which is the only order
        # the frontier allows: requeued before lowered before done).
        self._requeue: list[tuple[int, int | None, int, int]] = []
        self._lower: list[tuple[int, int | None, int, int]] = []
        self._done: list[tuple[int]] = []
        self._decisions: list[tuple[object, ...]] = []
        self._listings: list[tuple[object, ...]] = []
        self._unlisted: list[tuple[int]] = []
        self._referrers: list[tuple[int, int]] = []
        self._bodies: list[tuple[bytes, int]] = []
        self._counters: dict[str, int] = {}
        self._history: dict[int, tuple[object, ...]] = {}
        self._published: list[tuple[object, ...]] = []
        self._ops = 0

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        fingerprint: str,
        start_url: str,
        resume: bool,
        settings: str | None = None,
        fresh: bool = False,
        history_key: str = "",
        reopen_finished: bool = False,
        checkpoint_ops: int = DEFAULT_CHECKPOINT_OPS,
        checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> CrawlState:
        """Open the state of a crawl: the one to continue (``resume=True``), which must be of
        the same start URL and configuration, because resuming another crawl's state would
        publish a sitemap that matches neither, and unfinished: a finished crawl was
        published, and resuming it would only publish it again (``reopen_finished`` reads
        one all the same); or a new run (``resume=False``), which starts from the history
        the file holds of the same start URL (the baseline: validators, content dates),
        unless ``fresh`` or the file is of another site, when the file is replaced.
        ``settings``: the settings the fingerprint digests (config.settings(), JSON), kept
        so that a refused resume can say which of them differ. ``history_key``: the
        settings a page's facts depend on (links, directives): the history's facts are
        reused by a 304 only when it is the same. ``now``: the run's start (a new run)."""
        path = Path(path)
        if resume and not path.is_file():
            raise StateError(f"nothing to resume: state file {path} does not exist")
        if not resume:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StateError(f"cannot create state file {path}: {exc.strerror}") from exc
        lock_fd = _lock(path)
        conn: sqlite3.Connection | None = None
        try:
            kept = not resume and not fresh and _has_baseline(path, start_url)
            started = to_micros(now().replace(microsecond=0))
            if resume or kept:
                conn = _connect(path)
                if resume:
                    _check_existing(
                        conn, path, fingerprint=fingerprint, start_url=start_url, settings=settings
                    )
                _configure(conn, path)
                if kept:
                    _restart(
                        conn, path, fingerprint=fingerprint, settings=settings,
                        history_key=history_key, started=started,
                    )  # fmt: skip
            else:
                _check_replaceable(path)
                _remove_database(path)
                conn = _connect(path)
                _configure(conn, path)
                _create(
                    conn, path, fingerprint=fingerprint, start_url=start_url, settings=settings,
                    history_key=history_key, started=started,
                )  # fmt: skip
            state = cls(
                path,
                conn,
                lock_fd,
                resumed=resume or kept,
                checkpoint_ops=checkpoint_ops,
                checkpoint_seconds=checkpoint_seconds,
                clock=clock,
            )
            if resume or kept:
                state._next_id, state._qseq, state._finished = _resume_counters(conn, path)
                if state._finished and resume and not reopen_finished:
                    raise StateError(
                        f"the crawl saved in {path} finished and was published; there is "
                        "nothing to resume (run without --resume to crawl again)"
                    )
            state._read_history_meta()
            return state
        except BaseException:
            if conn is not None:
                conn.close()
            _unlock(lock_fd)
            raise

    @staticmethod
    def peek(path: Path, fingerprint: str) -> bool:
        """Read-only, for the nightly job: does ``path`` hold a crawl of this configuration
        (``fingerprint``) that stopped before its end (SIGTERM, killed, out of memory), so
        that a resume would continue it? False for anything else: no file, not a state
        file, another schema version or configuration, a finished crawl, one that ran to
        its end but published nothing (nothing listed, refused by the publish guard), or one
        ended by an outage: those are over, and the next run starts afresh. Never writes,
        never takes the lock: a crawl running on the file is left alone (its own lock
        refuses the run that follows, exit 75)."""
        conn = _read_only(Path(path))
        if conn is None:
            return False
        try:
            if _identity(conn) != (APPLICATION_ID, SCHEMA_VERSION):
                return False
            meta = dict(conn.execute("SELECT key, value FROM meta"))
            if meta.get("fingerprint") != fingerprint or int(meta.get("finished") or 0):
                return False
            outage = conn.execute("SELECT value FROM counters WHERE name = 'outage'").fetchone()
            if outage is not None and outage[0]:
                return False
            waiting = conn.execute("SELECT 1 FROM urls WHERE state = ? LIMIT 1", (_QUEUED,))
            return waiting.fetchone() is not None
        except (sqlite3.Error, ValueError, TypeError):
            return False
        finally:
            conn.close()

    @staticmethod
    def outdated(path: Path) -> bool:
        """Read-only, for the nightly job: is ``path`` a state file of ours written by
        another schema version? A crawl refuses such a file (its history would be misread);
        the job, which no one watches, starts afresh instead of failing every night."""
        conn = _read_only(Path(path))
        if conn is None:
            return False
        try:
            app_id, version = _identity(conn)
            return app_id == APPLICATION_ID and version != SCHEMA_VERSION
        except (sqlite3.Error, TypeError):
            return False
        finally:
            conn.close()

    # -- history (the baseline of a new run) -----------------------------------------------

    def _read_history_meta(self) -> None:
        conn = self._open_conn()
        try:
            meta = dict(
                conn.execute("SELECT key, value FROM meta WHERE key IN ('run_started', 'common')")
            )
            has = conn.execute("SELECT 1 FROM history LIMIT 1").fetchone() is not None
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        self.run_started = int(meta.get("run_started") or 0)
        self.template_before = frozenset(unpack_blocks(meta.get("common")))
        self.has_history = has

    def prior(self, url: str) -> Prior | None:
        """url's row of the history (the last finished run), or None: a point query by
        id, so that the history of a site of millions of URLs stays on disk, not in
        Python objects. Its links are read by outlinks(), for a 304 only."""
        row = self._history_row(url, _PRIOR_SELECT)
        if row is None:
            return None
        etag, modified, mime, meta, header, canonical, body, blocks, first, changed = row[:10]
        extras, stamped = row[10:]
        return Prior(
            etag, modified, mime or "", _directives(meta), _directives(header), canonical,
            body, blocks, first, changed, extras, bool(stamped),
        )  # fmt: skip

    def outlinks(self, url: str) -> list[str]:
        """The links of url's page in the history, in their order (for a 304: read only
        then, so that prior(), asked for every URL, stays small)."""
        row = self._history_row(url, "SELECT targets FROM history WHERE url = ?")
        packed = row[0] if row is not None else None
        if not packed:
            return []
        names = self._names
        if names is None:
            # id -> URL, made once from the ids dict (its strings, not copies): 8 bytes a URL,
            # where a query per 304 page to name its links cost a fifth of a 304 run's time
            ids = self._ids if self._ids is not None else self._load_ids()
            names = self._names = [None] * (max(ids.values(), default=0) + 1)
            for name, uid in ids.items():
                names[uid] = name
        links = array("I")
        links.frombytes(packed)
        return [name for name in map(names.__getitem__, links) if name is not None]

    def last_run(self, url: str) -> LastRun | None:
        """What the last finished run kept of url's page for its lastmod (its content
        blocks and date, the lastmod published and its source), None when it has no row."""
        row = self._history_row(
            url, "SELECT blocks, changed, lastmod, source FROM history WHERE url = ?"
        )
        return None if row is None else LastRun(*row)

    def _history_row(self, url: str, select: str) -> tuple[Any, ...] | None:
        """url's row of the history as `select` (by url id) reads it, or None."""
        if not self.has_history:
            return None
        ids = self._ids if self._ids is not None else self._load_ids()
        uid = ids.get(url)
        if uid is None:
            return None
        try:
            row: tuple[Any, ...] | None = self._open_conn().execute(select, (uid,)).fetchone()
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        return row

    def page(
        self,
        url: str,
        prior: Prior | None,
        *,
        etag: str | None,
        modified: str | None,
        status: int,
        reason: str,
        result: PageResult | None,
        stamped: bool = False,
    ) -> None:
        """This run's answer for url, kept as its history once the run finishes: the
        validators and facts of a 200 (or a 304 revived from `prior`), or only the status
        of any other answer (a page gone has no validators to ask with)."""
        ids = self._ids if self._ids is not None else self._load_ids()
        uid = ids.get(url) or self._intern(url)
        started = self.run_started
        if result is None or status != 200:
            row = HistoryRow(uid, status=status, reason=reason)
        else:
            links = result.targets
            found = list(map(ids.get, links))  # every link is met, so interned, but for a few
            if None in found:
                intern = self._intern
                found = [
                    i if i is not None else intern(t) for i, t in zip(found, links, strict=True)
                ]
            targets = array("I", found).tobytes()  # type: ignore[type-var]  # no None left
            blocks = result.blocks
            first: int | None = started
            changed: int | None = None  # not known until a run sees the text differ
            if prior is not None and prior.blocks is not None and blocks is not None:
                first = prior.first_seen if prior.first_seen is not None else started
                # a listed page's is decided again with the site's template (published())
                changed = content_date(prior.blocks, prior.changed, blocks, frozenset(), started)
            row = HistoryRow(
                uid, etag=etag, modified=modified, mime=result.mime,
                meta=_packed(result.meta), header=_packed(result.header),
                canonical=result.canonical, targets=targets or None, body=result.body_key,
                blocks=blocks, status=status, reason=reason, first_seen=first, changed=changed,
                extras=None if result.extras is None else pack(result.extras), stamped=stamped,
            )  # fmt: skip
        self._history[uid] = _history_values(row)
        self._ops += 1

    def published(self, url: str, changed: int | None, lastmod: int | None, source: str) -> None:
        """The lastmod a listed page was published with, and its content date, decided at
        the end of the crawl (crawler.core.lastmod)."""
        ids = self._ids if self._ids is not None else self._load_ids()
        uid = ids.get(url)
        if uid is not None:
            self._published.append((changed, lastmod, source, uid))
            self._ops += 1

    # -- recording (hot path: memory only) -----------------------------------------------

    def _intern(self, url: str) -> int:
        ids = self._ids
        if ids is None:
            ids = self._load_ids()
        uid = ids.get(url)
        if uid is None:
            uid = self._next_id
            self._next_id = uid + 1
            ids[url] = uid
            self._new[uid] = [uid, url, None, None, None, None]
        return uid

    def queued(self, url: str, depth: int, referrer: str | None) -> None:
        """``url`` entered the frontier; it stays queued until :meth:`decided`."""
        # Inlined interning: this runs once per link found, the hottest call of all.
        ids = self._ids if self._ids is not None else self._load_ids()
        ref = None if referrer is None else (ids.get(referrer) or self._intern(referrer))
        self._qseq = qseq = self._qseq + 1
        uid = ids.get(url)
        if uid is None:
            uid = self._next_id
            self._next_id = uid + 1
            ids[url] = uid
            self._new[uid] = [uid, url, _QUEUED, depth, ref, qseq]
        elif (row := self._new.get(uid)) is not None:
            row[2:] = (_QUEUED, depth, ref, qseq)
        else:
            self._requeue.append((depth, ref, qseq, uid))
        self._ops += 1

    def lowered(self, url: str, depth: int, referrer: str | None = None) -> None:
        """A queued ``url`` was found again at a smaller depth, so it moves up the frontier.

        It takes a fresh place in the queue order, as the frontier gives it one;
        ``referrer``, when given, replaces the old one, as the frontier's task does.
        """
        ref = None if referrer is None else self._intern(referrer)
        uid = self._intern(url)
        self._qseq += 1
        row = self._new.get(uid)
        if row is None:
            self._lower.append((depth, ref, self._qseq, uid))
        else:
            row[3] = depth
            row[5] = self._qseq
            if ref is not None:
                row[4] = ref
        self._ops += 1

    def decided(
        self,
        url: str,
        status: int | None,
        reason: str,
        detail: str,
        depth: int,
        referrer: str | None,
    ) -> None:
        """``url`` got its decision; it leaves the queue.

        ``url`` must be spelled as it was passed to :meth:`queued`: that is how the state
        knows which queued URL is done.
        """
        ids = self._ids if self._ids is not None else self._load_ids()
        ref = None if referrer is None else (ids.get(referrer) or self._intern(referrer))
        uid = self._done_id(ids, url)
        self._decisions.append(
            _decision_values(
                {
                    "url": uid,
                    "status": status,
                    "reason": reason,
                    "detail": detail,
                    "depth": depth,
                    "referrer": ref,
                }
            )
        )
        self._ops += 1

    def _done_id(self, ids: dict[str, int], url: str) -> int:
        """The id of url, which leaves the queue now."""
        uid = ids.get(url)
        if uid is None:  # decided without being queued: screened out when found
            uid = self._next_id
            self._next_id = uid + 1
            ids[url] = uid
            self._new[uid] = [uid, url, _DONE, None, None, None]
        elif (row := self._new.get(uid)) is not None:
            row[2] = _DONE
        else:
            self._done.append((uid,))
        return uid

    def listed(self, listing: Listing) -> None:
        """``listing.url`` would be listed, unless a twin wins (journal.Journal): it leaves
        the queue with its listing, which a resumed crawl puts back in the spool."""
        ids = self._ids if self._ids is not None else self._load_ids()
        stored = {
            **{name: getattr(listing, name) for name in _LISTING_FIELDS},
            "url": self._done_id(ids, listing.url),
            "loc": None if listing.loc == listing.url else listing.loc,  # the same, mostly
            "referrer": None if listing.referrer is None else self._intern(listing.referrer),
        }
        self._listings.append(tuple(stored[name] for name in _LISTING_STORED))
        self._ops += 1

    def unlisted(self, url: str) -> None:
        """A listing lost to a better twin (its decision follows, with :meth:`decided`)."""
        self._unlisted.append((self._intern(url),))
        self._ops += 1

    def referred(self, url: str, referrer: str) -> None:
        """One more page links to ``url`` (kept for the broken-links report)."""
        self._referrers.append((self._intern(url), self._intern(referrer)))
        self._ops += 1

    def body(self, digest: bytes, url: str) -> None:
        """The first URL seen with a body whose hash is ``digest`` (duplicate detection)."""
        self._bodies.append((bytes(digest), self._intern(url)))
        self._ops += 1

    def counter(self, name: str, value: int) -> None:
        """The current value of a named counter; only the last value set is kept."""
        self._counters[name] = value
        self._ops += 1

    # -- writing -------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Operations recorded since the last checkpoint."""
        return self._ops

    def maybe_checkpoint(self) -> None:
        """Checkpoint when enough work is buffered to be worth a transaction, or when it
        has been buffered long enough that a crash would cost noticeable refetching."""
        if self._ops and (
            self._ops >= self._checkpoint_ops
            or self._clock() - self._last_checkpoint >= self._checkpoint_seconds
        ):
            self.checkpoint()

    def checkpoint(self) -> None:
        """Write everything recorded since the last checkpoint, in one transaction.

        Call it only between pages (the engine's consistent points): everything buffered
        becomes durable together, and a crash after it loses nothing recorded before it.
        On failure the buffers are kept, so a later checkpoint can still write them.
        """
        if not self._ops:
            self._last_checkpoint = self._clock()
            return
        self._write(finished=False)

    def finish(self, common: frozenset[int] = frozenset()) -> None:
        """Checkpoint and mark the crawl complete (its sitemap is published): it is no
        longer resumed, and its history is the baseline of the next run. `common`: the
        blocks common to most pages in this run (crawler.core.lastmod), which the next run
        leaves out of the content fingerprints of both runs."""
        self._write(finished=True, common=common)

    def _write(self, *, finished: bool, common: frozenset[int] = frozenset()) -> None:
        conn = self._open_conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            if self._new:
                conn.executemany(
                    "INSERT INTO urls (id, url, state, depth, referrer, qseq)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    self._new.values(),
                )
            if self._requeue:
                conn.executemany(
                    f"UPDATE urls SET state = {_QUEUED}, depth = ?, referrer = ?, qseq = ?"
                    " WHERE id = ?",
                    self._requeue,
                )
            if self._lower:
                conn.executemany(
                    "UPDATE urls SET depth = ?, referrer = coalesce(?, referrer), qseq = ?"
                    " WHERE id = ?",
                    self._lower,
                )
            if self._done:
                conn.executemany(f"UPDATE urls SET state = {_DONE} WHERE id = ?", self._done)
            if self._decisions:
                conn.executemany(_DECISION_INSERT, self._decisions)
            if self._listings:
                conn.executemany(_LISTING_INSERT, self._listings)
            if self._unlisted:
                conn.executemany("DELETE FROM listings WHERE url = ?", self._unlisted)
            if self._referrers:
                conn.executemany(
                    "INSERT INTO referrers (url, referrer) VALUES (?, ?)", self._referrers
                )
            if self._bodies:
                # The engine keeps the first URL per body; a repeat here is a replay of one.
                conn.executemany(
                    "INSERT OR IGNORE INTO bodies (digest, url) VALUES (?, ?)", self._bodies
                )
            if self._counters:
                conn.executemany(
                    "INSERT OR REPLACE INTO counters (name, value) VALUES (?, ?)",
                    self._counters.items(),
                )
            if self._history:
                conn.executemany(_FRESH_INSERT, self._history.values())
            if self._published:
                conn.executemany(
                    "UPDATE fresh_history SET changed = ?, lastmod = ?, source = ? WHERE url = ?",
                    self._published,
                )
            if finished:
                # this run becomes the baseline of the next: its rows replace the old ones,
                # in the transaction that ends it. A URL it met but did not fetch (a limit
                # came first) keeps its row; one it never met (no link leads there any more)
                # leaves the history, which so follows the site instead of growing for ever
                conn.execute(
                    "DELETE FROM history WHERE url NOT IN"
                    " (SELECT id FROM urls WHERE state IS NOT NULL)"
                )
                names = ", ".join(_HISTORY_NAMES)
                conn.execute(
                    f"INSERT OR REPLACE INTO history ({names}) SELECT {names} FROM fresh_history"
                )
                conn.execute("DELETE FROM fresh_history")
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('common', ?)",
                    (pack_blocks(sorted(common)),),
                )
            meta = [("updated", _now()), ("next_id", self._next_id), ("qseq", self._qseq)]
            if finished or self._finished:
                # New work after a finished crawl was resumed means it is running again.
                meta.append(("finished", int(finished)))
            conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", meta)
            conn.execute("COMMIT")
        except BaseException as exc:
            # Also on KeyboardInterrupt/CancelledError: an open transaction would make every
            # later checkpoint fail. The buffers are kept, so nothing recorded is lost.
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StateWriteError(f"cannot write state file {self.path}: {exc}") from exc
            raise
        self._finished = finished
        self._reset_buffers()
        self._last_checkpoint = self._clock()

    # -- reading -------------------------------------------------------------------------

    def load(self) -> Snapshot:
        """The state as of the last checkpoint, to seed the engine on ``--resume``.

        URLs that were queued and had no decision when the crawl stopped come back in
        ``queued``, in the order they were queued, so in-flight work is redone and the
        frontier pops them in the same order as before.
        """
        conn = self._open_conn()
        try:
            # One scan of urls, joined and ordered in Python: on a million rows this is about
            # twice as fast as letting SQLite join the referrers and sort by qseq.
            (max_id,) = conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
            names: list[str | None] = [None] * (max_id + 1)
            ids: dict[str, int] = {}
            seen: list[str] = []
            # Rows are indexed, not unpacked: a list per row for *rest costs a second a
            # million, mostly in the garbage collector.
            waiting: list[tuple[Any, ...]] = []
            for row in conn.execute(_URLS_SELECT):
                uid, state, url = row[0], row[1], row[_URLS_URL]
                ids[url] = uid
                names[uid] = url
                if state is not None:
                    seen.append(url)
                    if state == _QUEUED:
                        waiting.append(row)
            waiting.sort(key=_URLS_QSEQ)
            queued = [_queued_row(row, names) for row in waiting]
            del waiting
            if self._ids is None:
                self._ids = ids
            bodies = {
                digest: names[uid] for digest, uid in conn.execute("SELECT digest, url FROM bodies")
            }
            referrers: dict[str, list[str]] = {}
            for uid, ref in conn.execute("SELECT url, referrer FROM referrers ORDER BY seq"):
                referrers.setdefault(names[uid], []).append(names[ref])  # type: ignore[arg-type]
            del names
            counters = dict(conn.execute("SELECT name, value FROM counters"))
            (last_decision,) = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM decisions"
            ).fetchone()
            (last_listing,) = conn.execute("SELECT coalesce(max(seq), 0) FROM listings").fetchone()
            (finished,) = conn.execute(
                "SELECT coalesce((SELECT value FROM meta WHERE key = 'finished'), 0)"
            ).fetchone()
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        return Snapshot(
            queued=queued,
            seen=seen,
            decisions=self._stream(
                f"SELECT d.seq, {_DECISION_SELECT}"
                " FROM decisions d JOIN urls u ON u.id = d.url"
                " LEFT JOIN urls r ON r.id = d.referrer",
                last_decision,
                _decision_row,
            ),
            listings=self._stream(
                f"SELECT l.seq, {_LISTING_SELECT}"
                " FROM listings l JOIN urls u ON u.id = l.url"
                " LEFT JOIN urls r ON r.id = l.referrer"
                " LEFT JOIN fresh_history f ON f.url = l.url",
                last_listing,
                _listing_row,
            ),
            bodies=bodies,
            referrers=referrers,
            counters=counters,
            finished=bool(finished),
        )

    def _stream(
        self, select: str, last: int, make: Callable[[tuple[object, ...]], _T]
    ) -> Iterator[_T]:
        """Rows ``seq <= last`` in seq order, one keyset-paged query per chunk: each chunk
        is a fresh statement, so checkpoints made while the engine replays do not show up
        in (or disturb) what it reads."""
        query = f"{select} WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT {_CHUNK}"
        after = 0
        while after < last:
            try:
                rows = self._open_conn().execute(query, (after, last)).fetchall()
            except sqlite3.Error as exc:
                raise StateError(f"cannot read state file {self.path}: {exc}") from exc
            if not rows:
                return
            for row in rows:
                yield make(row)
            after = rows[-1][0]

    def _load_ids(self) -> dict[str, int]:
        try:
            ids = dict(self._open_conn().execute("SELECT url, id FROM urls"))
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        self._ids = ids
        return ids

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file and release the lock, dropping anything not checkpointed.

        Nothing is written implicitly: only the engine knows whether the buffers end on a
        page boundary, and writing half a page (a decision without its links) would make a
        resumed crawl miss those links for good.
        """
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            _unlock(fd)

    def __enter__(self) -> CrawlState:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _open_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StateError(f"state file {self.path} is already closed")
        return self._conn


# -- helpers ---------------------------------------------------------------------------------


def _queued_row(row: tuple[Any, ...], names: list[str | None]) -> QueuedRow:
    """A row of _URLS_SELECT as a QueuedRow: positional, because the columns after id, state
    and qseq are the fields in order by construction; the referrer is an id until named."""
    values = list(row[3:])
    ref = values[_QUEUED_REFERRER]
    if ref is not None:
        values[_QUEUED_REFERRER] = names[ref]
    return QueuedRow(*values)


def _decision_row(row: tuple[object, ...]) -> DecisionRecord:
    # Positional, in field order by construction (_DECISION_SELECT): a keyword dict per row
    # would add about a microsecond, a second per million decisions on resume.
    return DecisionRecord(*row[1:])  # type: ignore[arg-type]


def _listing_row(row: tuple[object, ...]) -> Listing:
    return Listing(**dict(zip(_LISTING_FIELDS, row[1:], strict=True)))  # type: ignore[arg-type]


def _packed(directives: Directives) -> bytes | None:
    return None if directives == NO_DIRECTIVES else pack(directives)


def _directives(packed: bytes | None) -> Directives:
    return NO_DIRECTIVES if packed is None else unpack(Directives, packed)


def _read_only(path: Path) -> sqlite3.Connection | None:
    """path opened read-only (no lock, no write, no journal), or None."""
    if not path.is_file():
        return None
    try:
        return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None


def _identity(conn: sqlite3.Connection) -> tuple[int, int]:
    """The file's application id and schema version."""
    (app_id,) = conn.execute("PRAGMA application_id").fetchone()
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    return app_id, version


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


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


def _unlock(fd: int) -> None:
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


def _connect(path: Path) -> sqlite3.Connection:
    try:
        # Autocommit mode: transactions are begun and committed explicitly by checkpoint().
        return sqlite3.connect(path, isolation_level=None, check_same_thread=False)
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
        # Checkpoints are bulk writes; a larger page cache keeps the b-trees' inner pages hot.
        conn.execute("PRAGMA cache_size = -65536")
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


def _run_meta(
    fingerprint: str, settings: str | None, history_key: str, started: int | None
) -> list[tuple[str, object]]:
    """The meta rows a run starts with, in a new file and in one holding a history. Meta
    keys are free-form, so one added later needs no new schema version (a file whose
    "settings" is missing or null is refused on a mismatch without naming them)."""
    return [
        ("fingerprint", fingerprint),
        ("settings", settings),
        ("updated", _now()),
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
    now = _now()
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
        for table in ("decisions", "listings", "referrers", "bodies", "counters", "fresh_history"):
            conn.execute(f"DELETE FROM {table}")
        conn.execute(
            "UPDATE urls SET state = NULL, depth = NULL, referrer = NULL, qseq = NULL"
            " WHERE state IS NOT NULL OR referrer IS NOT NULL"
        )
        old = conn.execute("SELECT value FROM meta WHERE key = 'history_key'").fetchone()
        if old is None or old[0] != history_key:
            # links and directives were read with other settings: ask for whole pages again
            conn.execute("UPDATE history SET etag = NULL, modified = NULL")
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
    if meta.get("fingerprint") != fingerprint:
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
