"""What ``--resume`` rebuilds the engine from: the URL table (ids, the frontier's queue) and
every decision, listing, referrer, body hash and counter, buffered in memory between
checkpoints (crawler.shell.state).

* Recording is on the crawler's hot path, so every call only appends to in-memory buffers
  (about a microsecond); a checkpoint writes them in one transaction with ``executemany``.
* Each URL string is stored once, in ``urls`` with an integer id; decisions, listings, body
  hashes, referrers and the history's links point at ids (the first URL of each body as a
  log: a row a checkpoint of keys and ids packed in the order met). Ids are assigned in
  memory (the engine's URL universe is in memory anyway), so recording never asks SQLite for
  one, and a checkpoint is pure bulk insert/update by primary key.
* Rows are read and written by field name (QueuedRow, DecisionRecord, Listing): a field
  added to a record that the table lacks fails loudly, at once.
"""

from __future__ import annotations

import dataclasses
import operator
import sqlite3
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from pathlib import Path
from typing import Any, Final, TypeVar

from crawler.core.report import DecisionRecord
from crawler.shell.listings import Listing
from crawler.shell.state_file import (
    CARRIED_LISTED,
    DONE,
    QUEUED,
    StateError,
    insert_rows,
    read_only,
    write_rows,
)
from sitemap_out import EntryError

#: The URLs queued ahead of the crawl whose order is kept for the history's reads, at most
#: (8 bytes each, beside a frontier's few hundred a URL): past it the order is dropped, and
#: rows are read by ranges of ids (state_history.HistoryStore._ahead_row)
UPCOMING_MOST: Final = 1 << 20

__all__ = ["QueuedRow", "ResumeQueue", "SavedCrawl", "unlistable"]

#: Rows read per query when streaming decisions and listings back; bounds memory on resume.
_CHUNK: Final = 10_000

#: A listing's column in the listings table, by Listing field: rows are read and written by
#: field name, so a field added to Listing that the table lacks fails loudly, at once.
_LISTING_FIELDS: Final = tuple(f.name for f in dataclasses.fields(Listing))
#: Fields kept elsewhere: a listing's content blocks are its page's, in fresh_history
#: (written with it: engine._judge records the page before its listing), or in history
#: for a page whose row is carried (state_history.HistoryStore.carry), not twice.
_LISTING_JOINED: Final = frozenset({"blocks"})
_LISTING_STORED: Final = tuple(n for n in _LISTING_FIELDS if n not in _LISTING_JOINED)
#: A listing's stored values in column order (one C call), and where the three kept as
#: ids or left out when the same as the URL are
_listing_values: Final = operator.attrgetter(*_LISTING_STORED)
_AT_URL, _AT_LOC, _AT_REFERRER = map(_LISTING_STORED.index, ("url", "loc", "referrer"))
_LISTING_SELECT: Final = ", ".join(
    {
        "url": "u.url",
        "loc": "coalesce(l.loc, u.url)",
        "referrer": "r.url",
        "depth": "min(l.depth, coalesce(u.depth, l.depth))",  # lowered() after it was listed
        "blocks": "CASE WHEN f.url IS NULL AND c.url IS NOT NULL THEN h.blocks ELSE f.blocks END",
    }.get(name, f"l.{name}")
    for name in _LISTING_FIELDS
)
#: The listings with all a Listing needs, as resume reads them (load() pages it by seq)
_LISTINGS_READ: Final = (
    f"SELECT l.seq, {_LISTING_SELECT}"
    " FROM listings l JOIN urls u ON u.id = l.url"
    " LEFT JOIN urls r ON r.id = l.referrer"
    " LEFT JOIN fresh_history f ON f.url = l.url"
    " LEFT JOIN carried c ON c.url = l.url LEFT JOIN history h ON h.url = l.url"
)
#: The listings kept in their pages' carried rows, as _LISTINGS_READ gives a listing row's:
#: the fields state_history.CarriedRows.keeps holds to the history's row or to constants,
#: read from that row or as those constants, the others from the carried row; by URL id
_CARRIED_LISTINGS_READ: Final = (
    "SELECT * FROM (SELECT c.url AS seq, "
    + ", ".join(
        {
            "url": "u.url",
            "loc": "u.url",
            "status": "200",
            "detail": "''",
            "depth": "min(c.depth, coalesce(u.depth, c.depth))",  # as _LISTING_SELECT's
            "referrer": "r.url",
            "lastmod": "c.lastmod",
            "changefreq": "NULL",
            "priority": "NULL",
            "body": "h.body",
            "extras": "h.extras",
            "blocks": "h.blocks",
            "stamped": "h.stamped",
        }[name]  # a Listing field it lacks fails at import
        for name in _LISTING_FIELDS
    )
    + " FROM carried c JOIN urls u ON u.id = c.url JOIN history h ON h.url = c.url"
    " LEFT JOIN urls r ON r.id = c.referrer WHERE c.depth IS NOT NULL)"
)
_LISTING_INSERT: Final = f"INSERT INTO listings ({', '.join(_LISTING_STORED)}) VALUES {{}}"
#: Likewise a decision's column in the decisions table, by DecisionRecord field (url and
#: referrer hold ids into urls, joined back to their strings on load).
_DECISION_FIELDS: Final = tuple(f.name for f in dataclasses.fields(DecisionRecord))
_DECISION_SELECT: Final = ", ".join(
    {"url": "u.url", "referrer": "r.url"}.get(name, f"d.{name}") for name in _DECISION_FIELDS
)
#: decided()'s buffered row is a tuple in this order, the insert's columns named in the
#: same order (a dict by field name a row cost two thirds of the call, a decision per URL
#: screened out, #26); a DecisionRecord field it lacks fails at import, never a value
#: written into another column.
_DECIDED: Final = ("url", "status", "reason", "detail", "depth", "referrer")
if sorted(_DECIDED) != sorted(_DECISION_FIELDS):
    raise TypeError(f"decided() writes {_DECIDED}, a DecisionRecord has {_DECISION_FIELDS}")
_DECISION_INSERT: Final = f"INSERT INTO decisions ({', '.join(_DECIDED)}) VALUES {{}}"
#: URLs on disk queued again (queued(): depth, referrer, qseq, id), many a statement as an
#: upsert of rows that are there, which updates them as the UPDATE by id executemany ran
#: once a row did, in half the instructions; the url in the row proposed ('') is never
#: written, as the id is always taken: only ids read from the file or written by a
#: checkpoint are in the list. UPSERT needs SQLite 3.24 (2018): an older one runs the UPDATE
_UPSERT: Final = sqlite3.sqlite_version_info >= (3, 24, 0)
_REQUEUE_UPDATE: Final = (
    f"UPDATE urls SET state = {QUEUED}, depth = ?, referrer = ?, qseq = ? WHERE id = ?"
)
_REQUEUE: Final = (
    "INSERT INTO urls (depth, referrer, qseq, id, url, state) VALUES {} ON CONFLICT (id)"
    " DO UPDATE SET state = excluded.state, depth = excluded.depth,"
    " referrer = excluded.referrer, qseq = excluded.qseq"
)
_REQUEUE_GROUP: Final = f"(?, ?, ?, ?, '', {QUEUED})"
#: A new URL's row, as _add() buffers it
_URLS_COLUMNS: Final = ("id", "url", "state", "depth", "referrer", "qseq")
_URLS_INSERT: Final = f"INSERT INTO urls ({', '.join(_URLS_COLUMNS)}) VALUES {{}}"
#: The columns whose value, when every row of a statement holds it, is bound once a
#: statement, not a row (state_file.insert_rows' constants: INTEGER columns or texts)
_URLS_CONSTANTS: Final = ("state",)
_DECISION_CONSTANTS: Final = ("status", "reason", "detail")
_LISTING_CONSTANTS: Final = ("status", "detail", "stamped")


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


@dataclass(slots=True)  # plain, not frozen: nothing hashes or changes it (#26)
class SavedCrawl:
    """Everything the engine needs to rebuild its memory, as of the last checkpoint.

    ``decisions`` and ``listings`` are streamed from the file in chunks (a big crawl has
    millions), so consume them before closing the state; each can be iterated once.
    ``referrers``: more pages linking to a URL, besides the one its decision names.
    """

    queued: list[QueuedRow]
    seen: list[str]
    decisions: Iterator[DecisionRecord]
    listings: Iterator[Listing]
    bodies: dict[int, str]  # body key -> the first URL met with it
    referrers: dict[str, list[str]]
    counters: dict[str, int]
    finished: bool


_T = TypeVar("_T")


class ResumeQueue:
    """The URL table and the crawl's record, buffered until the next checkpoint."""

    def __init__(
        self,
        path: Path,
        conn: Callable[[], sqlite3.Connection],
        *,
        loaded: bool,
        next_id: int = 1,
        qseq: int = 0,
    ) -> None:
        self.path = path
        self._conn = conn  # the open connection (raises once the state is closed)
        # url -> id for every interned URL. Loaded lazily from a file that holds some:
        # load() builds it in the same pass as the seen set, so the table is scanned once.
        self._ids: dict[str, int] | None = {} if loaded else None
        self._names: list[str | None] | None = None  # id -> URL, made once when asked
        self.unnamed = True  # whether names() has a None past id 0 (known once it is made)
        self.next_id = next_id
        self.qseq = qseq
        #: the ids of URLs of earlier runs queued, in the order queued (which is the order
        #: the frontier asks for them), for the history to read their rows in that order
        #: (state_history.HistoryStore.prior); None when it has no use for them
        self.upcoming: deque[int] | None = None
        #: the URL ids listed by this process and not unlisted, a byte each, up to the
        #: history's largest (the history's pages only are carried, and a carried listed
        #: page's lastmod, when its row holds it, is not written again:
        #: state_history.HistoryStore.published_by); None when it has no use for them
        self.listed_ids: bytearray | None = None
        #: the history's rule, set by the state: a listing kept in its carried row, or not
        self.keeps_listing: Callable[[int, Listing, int | None], bool] = _keeps_no_listing
        self.unlisted_carried: Callable[[int], None] = _unlists_nothing
        #: a byte a URL id, 1 for a URL this process queued (QUEUED on disk once written)
        #: or load() found waiting (QUEUED on disk): done by its decision's or listing's row
        self._queued = bytearray()
        self.reset()

    def reset(self) -> None:
        """Drop the buffers: they were written (or the state is closed)."""
        # Rows for URLs interned since the last checkpoint, mutated in place by later calls,
        # so a URL queued and decided within one checkpoint costs a single INSERT.
        self._new: dict[int, list[object]] = {}
        # Changes to URLs already on disk, applied in this order (which is the only order
        # the frontier allows: requeued before lowered before done). A URL queued by this
        # process (_queued) is done by its decision's or listing's row (state_file.QUEUED);
        # any other, only referred to until now, is written DONE.
        self._requeue: list[tuple[int, int | None, int, int]] = []
        self._lower: list[tuple[int, int | None, int, int]] = []
        self._done: list[tuple[int]] = []
        self._decisions: list[tuple[object, ...]] = []
        self._listings: list[list[object]] = []
        self._unlisted: list[tuple[int]] = []
        self._referrers: list[tuple[int, int]] = []
        # the first URL of each body since: its key, its id (one row a checkpoint, packed)
        self._body_keys = array("q")
        self._body_urls = array("I")
        self._counters: dict[str, int] = {}
        self.ops = 0

    # -- URL ids (shared with the history) ---------------------------------------------

    def ids(self) -> dict[str, int]:
        """url -> id of every URL interned."""
        return self._ids if self._ids is not None else self._load_ids()

    def names(self) -> list[str | None]:
        """id -> URL, made once from the ids dict (its strings, not copies): 8 bytes a URL,
        where a query per 304 page to name its links cost a fifth of a 304 run's time."""
        names = self._names
        if names is None:
            ids = self.ids()
            names = self._names = [None] * (max(ids.values(), default=0) + 1)
            for name, uid in ids.items():
                names[uid] = name
            # an id of 1 up to the last without a name (ids are given from 1, one a URL)
            self.unnamed = len(ids) < len(names) - 1
        return names

    def intern(self, url: str) -> int:
        """url's id, given now if it has none (a URL only referred to is not "seen")."""
        ids = self._ids
        if ids is None:
            ids = self._load_ids()
        uid = ids.get(url)
        if uid is None:
            uid = self._add(ids, url, None, None, None, None)
        return uid

    def _add(
        self,
        ids: dict[str, int],
        url: str,
        state: int | None,
        depth: int | None,
        ref: int | None,
        qseq: int | None,
    ) -> int:
        """A new URL's id, and its row in the urls table (written at the next checkpoint)."""
        uid = self.next_id
        self.next_id = uid + 1
        ids[url] = uid
        self._new[uid] = [uid, url, state, depth, ref, qseq]
        return uid

    def queued(self, url: str, depth: int, referrer: str | None) -> int:
        """``url`` entered the frontier; it stays queued until :meth:`decided`. Its id."""
        # Interning inlined for a URL met before: this runs once per link found, the
        # hottest call of all.
        ids = self._ids if self._ids is not None else self._load_ids()
        ref = None if referrer is None else (ids.get(referrer) or self.intern(referrer))
        self.qseq = qseq = self.qseq + 1
        uid = ids.get(url)
        if uid is None:
            uid = self._add(ids, url, QUEUED, depth, ref, qseq)
        elif (row := self._new.get(uid)) is not None:
            row[2:] = (QUEUED, depth, ref, qseq)
        else:
            self._requeue.append((depth, ref, qseq, uid))
            if (upcoming := self.upcoming) is not None:
                upcoming.append(uid)
                if len(upcoming) > UPCOMING_MOST:  # bounded whether or not prior() reads
                    self.upcoming = None
        if uid < len(marks := self._queued):  # _mark_queued inlined but for a resize
            marks[uid] = 1
        else:
            self._mark_queued(uid)
        self.ops += 1
        return uid

    def _mark_queued(self, uid: int) -> None:
        queued = self._queued
        if uid >= len(queued):  # doubled: a few resizes a crawl
            queued.extend(bytes(max(uid + 1, 2 * len(queued)) - len(queued)))
        queued[uid] = 1

    def lowered(self, url: str, depth: int, referrer: str | None = None) -> None:
        """A queued ``url`` was found again at a smaller depth, so it moves up the frontier.

        It takes a fresh place in the queue order, as the frontier gives it one;
        ``referrer``, when given, replaces the old one, as the frontier's task does.
        """
        ref = None if referrer is None else self.intern(referrer)
        uid = self.intern(url)
        self.qseq += 1
        row = self._new.get(uid)
        if row is None:
            self._lower.append((depth, ref, self.qseq, uid))
        else:
            row[3] = depth
            row[5] = self.qseq
            if ref is not None:
                row[4] = ref
        self.ops += 1

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
        ref = None if referrer is None else (ids.get(referrer) or self.intern(referrer))
        uid = self._done_id(ids, url)
        # _DECIDED's order, as the parameters are (tests/test_state_rows.py holds them to it)
        self._decisions.append((uid, status, reason, detail, depth, ref))
        self.ops += 1

    def _done_id(self, ids: dict[str, int], url: str) -> int:
        """The id of url, which leaves the queue now: by the row the caller writes alone
        when this process queued it (QUEUED on disk, or once written: state_file.QUEUED),
        else its state written DONE too (a row not written yet, at once)."""
        uid = ids.get(url)
        if uid is None:  # decided without being queued: screened out when found
            uid = self._add(ids, url, DONE, None, None, None)
        elif (row := self._new.get(uid)) is not None:
            row[2] = DONE
        elif uid >= len(self._queued) or not self._queued[uid]:  # NULL on disk: not queued
            self._done.append((uid,))
        return uid

    def listed(self, listing: Listing) -> None:
        """``listing.url`` would be listed, unless a twin wins (journal.Journal): it leaves
        the queue with its listing, which a resumed crawl puts back in the spool."""
        ids = self._ids if self._ids is not None else self._load_ids()
        uid = self._done_id(ids, listing.url)
        if (marks := self.listed_ids) is not None and uid < len(marks):
            marks[uid] = 1
        # the referrer interned after the URL, as ids are given in order (one met: no call)
        rid = None if (ref := listing.referrer) is None else (ids.get(ref) or self.intern(ref))
        self.ops += 1
        if not self.keeps_listing(uid, listing, rid):  # kept in its carried row: no row here
            stored = list(_listing_values(listing))
            stored[_AT_URL], stored[_AT_REFERRER] = uid, rid
            if listing.loc == listing.url:  # the same, mostly
                stored[_AT_LOC] = None
            self._listings.append(stored)

    def unlisted(self, url: str) -> None:
        """A listing lost to a better twin (its decision follows, with :meth:`decided`)."""
        self._unlisted.append((uid := self.intern(url),))
        if (marks := self.listed_ids) is not None and uid < len(marks):
            marks[uid] = 0
        self.unlisted_carried(uid)
        self.ops += 1

    def referred(self, url: str, referrer: str) -> None:
        """One more page links to ``url`` (kept for the broken-links report)."""
        # interning inlined for URLs met before (all but a few)
        ids = self._ids if self._ids is not None else self._load_ids()
        uid = ids.get(url) or self.intern(url)
        self._referrers.append((uid, ids.get(referrer) or self.intern(referrer)))
        self.ops += 1

    def referred_by(self, urls: Sequence[str], referrer: str) -> None:
        """More pages link to each of ``urls``: one page, ``referrer``, links to them all
        (a page's early referrers, Journal.early_referrers, in a crawl without a history:
        on one with a history they are read back at the end, crawler.shell.referrers).
        The rows are those referred() would add one call each, in order, with the same ids
        given: a URL still queued has its id (queued() gave it), so only the referrer may
        be interned, as referred() would at its first row; else row by row as it does."""
        if not urls:
            return  # no row: the referrer is not interned either
        ids = self._ids if self._ids is not None else self._load_ids()
        try:
            uids = list(map(ids.__getitem__, urls))
        except KeyError:  # a URL never queued: interned in referred()'s order
            for url in urls:
                self.referred(url, referrer)
            return
        self._referrers.extend(zip(uids, repeat(ids.get(referrer) or self.intern(referrer))))
        self.ops += len(uids)

    def body(self, key: int, url: str) -> None:
        """The first URL seen with a body whose key is ``key`` (duplicate detection): two
        array appends, no row object (a page a 304 night)."""
        ids = self._ids if self._ids is not None else self._load_ids()
        self._body_keys.append(key)
        self._body_urls.append(ids.get(url) or self.intern(url))
        self.ops += 1

    def counter(self, name: str, value: int) -> None:
        """The current value of a named counter; only the last value set is kept."""
        self._counters[name] = value
        self.ops += 1

    # -- writing and reading -------------------------------------------------------------

    def write(self, conn: sqlite3.Connection) -> None:
        """Everything buffered, inside the checkpoint's transaction (the caller's), a
        statement for hundreds of rows (state_file.write_rows); the URLs on disk queued
        again as an upsert (_REQUEUE), and those lowered, rarer, by executemany."""
        if self._new:
            insert_rows(
                conn, _URLS_INSERT, _URLS_COLUMNS, self._new.values(), constants=_URLS_CONSTANTS
            )
        if self._requeue:
            if _UPSERT:
                write_rows(conn, _REQUEUE, 4, self._requeue, group=_REQUEUE_GROUP)
            else:
                conn.executemany(_REQUEUE_UPDATE, self._requeue)
        if self._lower:
            conn.executemany(
                "UPDATE urls SET depth = ?, referrer = coalesce(?, referrer), qseq = ?"
                " WHERE id = ?",
                self._lower,
            )
        if self._done:
            write_rows(conn, f"UPDATE urls SET state = {DONE} WHERE id IN ({{}})", 1, self._done)
        if self._decisions:
            insert_rows(
                conn, _DECISION_INSERT, _DECIDED, self._decisions, constants=_DECISION_CONSTANTS
            )
        if self._listings:
            insert_rows(
                conn, _LISTING_INSERT, _LISTING_STORED, self._listings,
                constants=_LISTING_CONSTANTS,
            )  # fmt: skip
        if self._unlisted:
            conn.executemany("DELETE FROM listings WHERE url = ?", self._unlisted)
        if self._referrers:
            write_rows(conn, "INSERT INTO referrers (url, referrer) VALUES {}", 2, self._referrers)
        if self._body_keys:  # a replay may log a key again: load() keeps the first
            conn.execute(
                "INSERT INTO first_bodies (keys, urls) VALUES (?, ?)",
                (self._body_keys.tobytes(), self._body_urls.tobytes()),
            )
        if self._counters:
            conn.executemany(
                "INSERT OR REPLACE INTO counters (name, value) VALUES (?, ?)",
                self._counters.items(),
            )

    def load(self) -> SavedCrawl:
        """The state as of the last checkpoint, to seed the engine on ``--resume``.

        URLs that were queued and had no decision when the crawl stopped come back in
        ``queued``, in the order they were queued, so in-flight work is redone and the
        frontier pops them in the same order as before.
        """
        conn = self._conn()
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
            done = _done_marks(conn, max_id)
            for row in conn.execute(_URLS_SELECT):
                uid, state, url = row[0], row[1], row[_URLS_URL]
                ids[url] = uid
                names[uid] = url
                if state is not None:
                    seen.append(url)
                    if state == QUEUED and not done[uid]:
                        waiting.append(row)
            waiting.sort(key=_URLS_QSEQ)
            for row in waiting:  # QUEUED on disk: done by their decision's or listing's row
                self._mark_queued(row[0])
            queued = [_queued_row(row, names) for row in waiting]
            del waiting
            if self._ids is None:
                self._ids = ids
            bodies = _first_bodies(conn, names)
            referrers = _referrers(conn, names)
            del names
            counters = dict(conn.execute("SELECT name, value FROM counters"))
            (last_decision,) = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM decisions"
            ).fetchone()
            (last_listing,) = conn.execute("SELECT coalesce(max(seq), 0) FROM listings").fetchone()
            (last_carried,) = conn.execute(
                f"SELECT coalesce(max(url), 0) FROM ({CARRIED_LISTED})"
            ).fetchone()
            (finished,) = conn.execute(
                "SELECT coalesce((SELECT value FROM meta WHERE key = 'finished'), 0)"
            ).fetchone()
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        return SavedCrawl(
            queued=queued,
            seen=seen,
            decisions=self._stream(
                f"SELECT d.seq, {_DECISION_SELECT}"
                " FROM decisions d JOIN urls u ON u.id = d.url"
                " LEFT JOIN urls r ON r.id = d.referrer",
                last_decision,
                _decision_row,
            ),
            listings=chain(
                self._stream(_LISTINGS_READ, last_listing, _listing_row),
                self._stream(_CARRIED_LISTINGS_READ, last_carried, _listing_row),
            ),
            bodies=bodies,
            referrers=referrers,
            counters=counters,
            finished=bool(finished),
        )

    def _stream(
        self, select: str, last: int, make: Callable[[tuple[object, ...]], _T]
    ) -> Iterator[_T]:
        """Rows ``seq <= last`` in seq order, one keyset-paged query per chunk: each chunk is
        a fresh statement, so checkpoints made while the engine replays do not show up in (or
        disturb) what it reads (the carried rows' seq is their URL id: replay carries none)."""
        query = f"{select} WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT {_CHUNK}"
        after = 0
        while after < last:
            try:
                rows = self._conn().execute(query, (after, last)).fetchall()
            except sqlite3.Error as exc:
                raise StateError(f"cannot read state file {self.path}: {exc}") from exc
            if not rows:
                return
            for row in rows:
                yield make(row)
            after = rows[-1][0]

    def _load_ids(self) -> dict[str, int]:
        try:
            ids = dict(self._conn().execute("SELECT url, id FROM urls"))
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        self._ids = ids
        return ids


def unlistable(path: Path) -> str | None:
    """Why a listing saved in the state file at ``path`` is one the sitemap cannot hold (the
    entry's check, `Listing.entry`, which replay makes), or None, also for a file it cannot
    read. For the nightly job: a stopped crawl holding one can't be resumed, and the job
    starts afresh rather than refuse it every night. Read-only, row by row."""
    conn = read_only(path)
    if conn is None:
        return None
    try:
        for row in chain(conn.execute(_LISTINGS_READ), conn.execute(_CARRIED_LISTINGS_READ)):
            try:
                _listing_row(row).entry()
            except EntryError as exc:
                return str(exc)
    except (sqlite3.Error, TypeError, ValueError):
        return None  # not ours to judge here: the crawl that opens it says what is wrong
    finally:
        conn.close()
    return None


def _done_marks(conn: sqlite3.Connection, max_id: int) -> bytearray:
    """A byte a URL id, 1 for a URL a decision's or listing's row names: done, whatever its
    state (state_file.QUEUED). A byte, not a set of ints: a million URLs take 1 MB."""
    done = bytearray(max_id + 1)
    for table, select in (
        ("decisions", "SELECT url FROM decisions"),
        ("listings", "SELECT url FROM listings"),
        ("carried", CARRIED_LISTED),  # a page listed by its carried row
    ):
        for (uid,) in conn.execute(select):
            if not isinstance(uid, int) or not 0 < uid <= max_id:
                raise sqlite3.DatabaseError(f"a row of {table} names no URL of the file")
            done[uid] = 1
    return done


def _first_bodies(conn: sqlite3.Connection, names: list[str | None]) -> dict[int, str]:
    """Body key -> the first URL met with it, from the log in order (the `bodies` table of
    an older version is never read: a crawl it stopped is not resumed, RECORD_FORMAT)."""
    first: dict[int, str] = {}
    keep = first.setdefault
    for keys, urls in conn.execute("SELECT keys, urls FROM first_bodies ORDER BY seq"):
        body_keys, body_urls = array("q"), array("I")
        try:
            body_keys.frombytes(keys)
            body_urls.frombytes(urls)
        except (TypeError, ValueError):  # not blobs, or cut inside a value
            body_keys = array("q")
        if not body_keys or len(body_keys) != len(body_urls):
            raise sqlite3.DatabaseError("a row of first_bodies is not a list of keys and URLs")
        for key, uid in zip(body_keys, body_urls, strict=True):
            name = names[uid] if uid < len(names) else None
            if name is None:
                raise sqlite3.DatabaseError("a row of first_bodies names no URL of the file")
            keep(key, name)
    return first


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


def _referrers(conn: sqlite3.Connection, names: list[str | None]) -> dict[str, list[str]]:
    """The referrers table by URL, in the order recorded. An id without its URL row (a
    damaged file) names nothing: left out, not None among the names."""
    referrers: dict[str, list[str]] = {}
    for uid, ref in conn.execute("SELECT url, referrer FROM referrers ORDER BY seq"):
        url, by = names[uid], names[ref]
        if url is not None and by is not None:
            referrers.setdefault(url, []).append(by)
    return referrers


def _listing_row(row: tuple[object, ...]) -> Listing:
    values = dict(zip(_LISTING_FIELDS, row[1:], strict=True))
    values["stamped"] = bool(values["stamped"])  # an INTEGER column: 0 or 1, not a bool
    return Listing(**values)  # type: ignore[arg-type]


def _keeps_no_listing(uid: int, listing: Listing, referrer: int | None) -> bool:
    """ResumeQueue.keeps_listing without a history: every listing in a listing row."""
    return False


def _unlists_nothing(uid: int) -> None:
    """ResumeQueue.unlisted_carried without a history: no carried row lists a page."""
