"""The site's history in the state file: per URL, what the last finished run learnt of it.

The file outlives a finished crawl as the site's history (#14): per URL its validators, the
facts of its last answer (for a 304), its links (ids into the URL table) and its content
blocks and dates. `history` holds the last finished run's rows, read as the baseline and
never written during a run; this run's rows gather in `fresh_history` and replace them only
when it publishes (:meth:`HistoryStore.write` with ``finished``), so a resumed or abandoned
run never changes what the next one compares with. A point query by URL id per page keeps
the history of a site of millions of URLs on disk, not in Python objects.

What a lastmod means is not decided here (crawler.core.lastmod owns that, content date
included): this keeps the facts it is decided from (a page's content blocks), and what was
published (:meth:`HistoryStore.published`: the lastmod, its source and the content date
date_page gave). A page not listed tonight (noindex, a duplicate, ...) is never dated, so
its row keeps its blocks and no content date: a content date needs the site's template,
known only for listed pages, and one guessed without it would announce a rebuild as that
page's change the night it is listed again. Its date is then not known until a run that
lists it sees its text differ.
"""

from __future__ import annotations

import operator
import sqlite3
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, Final

from crawler.core.directives import NO_DIRECTIVES, Directives
from crawler.core.history import HistoryLinks, HistoryRow, Prior
from crawler.core.lastmod import SOURCES, LastRun, pack_blocks, unpack_blocks
from crawler.core.page import PageResult
from crawler.core.wire import pack, unpack
from crawler.shell.listings import Listing
from crawler.shell.state_file import (
    CARRIED_LISTING,
    FINISH_EMPTIED,
    HISTORY_NAMES,
    StateError,
    insert_rows,
    write_rows,
)
from crawler.shell.state_queue import UPCOMING_MOST, ResumeQueue

__all__ = ["CarriedRows", "HistoryStore"]

#: A HistoryRow's values in column order (operator.attrgetter: one C call on the hot path).
_history_values: Final = operator.attrgetter(*HISTORY_NAMES)
_AT_TARGETS: Final = HISTORY_NAMES.index("targets")
_FRESH_INSERT: Final = (
    f"INSERT OR REPLACE INTO fresh_history ({', '.join(HISTORY_NAMES)}) VALUES {{}}"
)
#: published rows' column bound once a statement when every row holds it (as
#: crawler.shell.state_queue's constants; fresh_history has none: on a night of changes
#: its columns are shared in some statements and not others, each pattern one more
#: statement to prepare, and the 304 night writes no fresh rows)
_PUBLISHED_CONSTANTS: Final = ("source",)
#: prior()'s columns, in the order prior() takes them (with the lastmod published, kept
#: with `changed` for the publish's dating: _LastDates)
_PRIOR_COLUMNS: Final = (
    "url, etag, modified, mime, meta, header, canonical, body, blocks, first_seen,"
    " changed, extras, stamped, canonical_in_html, targets, nofollow, status, reason,"
    " lastmod, source"
)
#: prior()'s rows: the one asked for and those after it by id, `?` at most (see _ahead_row)
_PRIOR_AHEAD: Final = f"SELECT {_PRIOR_COLUMNS} FROM history WHERE url >= ? ORDER BY url LIMIT ?"
#: prior()'s rows of the URLs queued next, UPCOMING_READ at most at once (see _upcoming_row)
UPCOMING_READ: Final = 256
#: Rows read for URLs queued but not asked for yet (one a limit or a stop leaves unfetched
#: is never asked): the oldest dropped past this many, read again if asked after all
_UPCOMING_KEPT: Final = 4 * UPCOMING_READ
#: The most and the fewest rows prior() reads at once
_AHEAD_MOST: Final = 256
_AHEAD_FEWEST: Final = 4
#: last_run()'s columns, and the listings warm() reads them for at once
_LAST_RUN: Final = "blocks, changed, lastmod, source"
WARM_CHUNK: Final = 256
#: The lastmods published, by URL (the table `published`): joined to this run's rows and
#: to the rows carried as they are copied into the history at the finish
_PUBLISHED_COLUMNS: Final = ("changed", "lastmod", "source", "url")
_PUBLISHED_INSERT: Final = (
    f"INSERT OR REPLACE INTO published ({', '.join(_PUBLISHED_COLUMNS)}) VALUES {{}}"
)
#: What published() gives (published() appends in this order)
_PUBLISHED: Final = _PUBLISHED_COLUMNS[:3]
#: fresh_history into history, a listed page's published columns (all three, NULLs
#: included) taken from `published`
_HISTORY_COPY: Final = (
    f"INSERT OR REPLACE INTO history ({', '.join(HISTORY_NAMES)}) SELECT "
    + ", ".join(
        f"CASE WHEN p.url IS NULL THEN f.{name} ELSE p.{name} END"
        if name in _PUBLISHED
        else f"f.{name}"
        for name in HISTORY_NAMES
    )
    + " FROM fresh_history f LEFT JOIN published p ON p.url = f.url"
)
#: A carried row's published columns, where they differ from what it holds: the lastmod
#: published, or none for a page not listed tonight (as a row page() writes has none). A
#: listed page (a listing row, or its carried row listing it) without a published row is
#: one whose row held the lastmod published already (HistoryStore.published_by; a version
#: before never leaves one without): kept as it is, told by its listing before its history
#: row is read (on an unchanged night, every carried row: 7.4 ms to read them all, 2.9
#: without, #26). A row-value subquery (SQLite 3.15), not UPDATE ... FROM, which needs
#: 3.33 (2020): Pythons linked against an older SQLite (RHEL 8, Ubuntu 20.04) would fail
#: every finish
_CARRIED_PUBLISHED: Final = (
    f"UPDATE history SET ({', '.join(_PUBLISHED)}) = (SELECT"
    f" {', '.join(f'p.{n}' for n in _PUBLISHED)} FROM published p WHERE p.url = history.url)"
    " WHERE url IN (SELECT c.url FROM carried c LEFT JOIN published p ON p.url = c.url"
    " WHERE (p.url IS NOT NULL OR (c.depth IS NULL"
    " AND NOT EXISTS (SELECT 1 FROM listings l WHERE l.url = c.url)))"
    " AND EXISTS (SELECT 1 FROM history h WHERE h.url = c.url AND ("
    + " OR ".join(f"h.{n} IS NOT p.{n}" for n in _PUBLISHED)
    + ")))"
)


#: A carried row replaces one the file holds: a URL judged again (a resumed run's) is not
#: done, so its row written before lists nothing, and this judgement's listing (or none)
#: is the one to keep (OR IGNORE would drop a listing kept in it: listed by no row)
_CARRIED_INSERT: Final = (
    f"INSERT OR REPLACE INTO carried (url, {', '.join(CARRIED_LISTING)}) VALUES {{}}"
)
#: A carried row written listing its page, whose page then lost to a twin (unlisted)
_CARRIED_UNLIST: Final = (
    f"UPDATE carried SET {', '.join(f'{n} = NULL' for n in CARRIED_LISTING)} WHERE url IN ({{}})"
)

#: _LastDates' codes of the published lastmod's sources, by index (0: not known, 1: no
#: source recorded), from their owner's list; an int64 no microsecond date is, for NULL
_SOURCES: Final = (None, None, *SOURCES)
_SOURCE_CODES: Final = {source: code for code, source in enumerate(_SOURCES) if code}
_NULL: Final = -(2**63)
#: _LastDates' mark, beside a code, of a row carried this run (HistoryStore.carry)
_CARRIED: Final = 0x80
if len(_SOURCES) >= _CARRIED:
    raise TypeError("too many lastmod sources for _LastDates' codes")


class _LastDates:
    """The dating facts of the history rows of the pages this run recorded with the row's
    own blocks (their content date, the lastmod published and its source, as prior() read
    them), by URL id, for last_run_of(): the publish then dates such a page without reading
    its row a second time (the blocks, about 290 bytes a page on the bench, are the one fact
    too large to keep: the listing's are the same bytes). 17 bytes a URL id up to the
    history's largest (two int64s and a byte; ids are every URL the state ever named, so
    17 MB at 1M of them, a tenth of the URL-to-id map the state already holds, against the
    frontier's 170 to 200 bytes a URL), none without a history. A fact it cannot hold
    exactly (a source it does not know, an int out of range) leaves the id unknown: its
    row is read again."""

    __slots__ = ("_changed", "_codes", "_lastmod", "given")

    def __init__(self, largest: int) -> None:
        size = largest + 1
        self._changed = array("q", (0,)) * size  # no temporary bytes of the same size
        self._lastmod = array("q", (0,)) * size
        self._codes = bytearray(size)  # _SOURCE_CODES', 0: not known
        #: the id and facts (changed, lastmod, source) of() gave last for a row carried
        #: this run, None when it gave none since: the publish dates a listing by them
        #: (last_run_by) and then publishes its lastmod (published_by), which so compares
        #: one tuple (the facts read again from the arrays cost as much as the row saved)
        self.given: tuple[int, int | None, int | None, str | None] | None = None

    def keep(self, uid: int, prior: Prior, carried: int = 0) -> None:
        """The page recorded this run had the blocks of `prior`, uid's row: its facts.
        `carried`: _CARRIED when its row is carried as it is (HistoryStore.carry), else 0."""
        changed, lastmod = prior.changed, prior.lastmod
        try:
            self._changed[uid] = _NULL if changed is None else changed
            self._lastmod[uid] = _NULL if lastmod is None else lastmod
            code = _SOURCE_CODES[prior.source] | carried
        except (IndexError, KeyError, TypeError, OverflowError):  # not to be held exactly
            code = 0
        if changed == _NULL or lastmod == _NULL:
            code = 0
        if uid < len(self._codes):
            self._codes[uid] = code
        self.given = None

    def drop(self, uid: int) -> None:
        """The page recorded this run (again) had other blocks than its row's."""
        if uid < len(self._codes):
            self._codes[uid] = 0
        self.given = None

    def of(self, uid: int, blocks: bytes | None) -> LastRun | None:
        """uid's LastRun, its blocks given as the page's recorded ones; None: not known."""
        try:
            code = self._codes[uid]
        except IndexError:
            return None
        if not code:
            return None
        held, kept = self._changed[uid], self._lastmod[uid]
        changed = None if held == _NULL else held
        lastmod = None if kept == _NULL else kept
        source = _SOURCES[code & ~_CARRIED]
        if code & _CARRIED:  # carried, its facts known (an id's facts hold until kept again)
            self.given = (uid, changed, lastmod, source)
        return LastRun(blocks, changed, lastmod, source)

    def unknown(self, uids: list[int | None]) -> list[int]:
        """The ids of `uids` of() does not know (None, a URL without an id, left out)."""
        codes, size = self._codes, len(self._codes)
        return [uid for uid in uids if uid is not None and (uid >= size or not codes[uid])]


class CarriedRows:
    """This run's carried rows (HistoryStore.carry), by URL id until the next checkpoint: a
    page whose history row is kept as it is, and the listing it keeps when the page is
    listed as that row says (`keeps`: no listing row then, a row a page fewer on an
    unchanged night, #26)."""

    __slots__ = ("_last", "_rows", "_unlisted")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Drop the buffers: they were written (or the state is closed)."""
        self._rows: dict[int, list[int | None]] = {}  # the URL, then CARRIED_LISTING's
        self._unlisted: list[tuple[int]] = []  # rows written listing a page, to list none
        self._last: tuple[int, Prior] | None = None  # the last carried: `keeps`' to keep

    def add(self, uid: int, prior: Prior) -> None:
        """uid's row, `prior`, is carried (HistoryStore.carry)."""
        # (a URL judged again in one buffer, which the engine never does: its last judgement)
        self._rows[uid] = [uid, None, None, None]
        self._last = (uid, prior)

    def keeps(self, uid: int, listing: Listing, referrer: int | None) -> bool:
        """Keep `listing` (its URL's id `uid`, its referrer's `referrer`) in its page's
        carried row, when that row was the last carried (this page's, judged now) and every
        field of the listing but its depth, referrer and lastmod is the row's or a constant
        (ResumeQueue.load rebuilds it so: state_queue._CARRIED_LISTINGS_READ, which holds the
        same fields to the same values). False for any other listing, which the caller keeps
        in a listing row."""
        last = self._last
        if last is None or last[0] != uid:
            return False
        self._last = None
        prior = last[1]
        if not (
            listing.status == 200
            and not listing.detail
            and listing.loc == listing.url
            and listing.changefreq is None
            and listing.priority is None
            and listing.body == prior.body_key
            and listing.stamped == prior.stamped
            and listing.extras == prior.extras
            and listing.blocks == prior.blocks
        ):
            return False
        self._rows[uid][1:] = (listing.depth, referrer, listing.lastmod)
        return True

    def unlisted(self, uid: int) -> None:
        """uid's page lost to a twin: a carried row listing it lists nothing."""
        row = self._rows.get(uid)
        if row is not None:
            row[1:] = (None, None, None)
        else:  # written already (or never carried: then the update finds no row)
            self._unlisted.append((uid,))

    def write(self, conn: sqlite3.Connection) -> None:
        """The rows buffered, inside the checkpoint's transaction (the caller's)."""
        if self._rows:
            write_rows(conn, _CARRIED_INSERT, 1 + len(CARRIED_LISTING), self._rows.values())
        if self._unlisted:
            write_rows(conn, _CARRIED_UNLIST, 1, self._unlisted)


class HistoryStore:
    """The baseline read by URL, this run's rows buffered until the next checkpoint."""

    def __init__(
        self, path: Path, conn: Callable[[], sqlite3.Connection], urls: ResumeQueue
    ) -> None:
        self.path = path
        self._conn = conn
        self._urls = urls  # the URL ids the rows point at
        #: the start of this run (kept by a resume): the date a content change is given
        self.run_started = 0
        #: the blocks common to most pages in the previous finished run (crawler.core.lastmod)
        self.template_before: frozenset[int] = frozenset()
        #: the URL ids of the pages that template was counted on (lastmod.NightTemplate),
        #: None when not known (a file of a version that did not keep them, or a run that
        #: did not finish since they were kept: crawler.shell.state_file._restart)
        self.counted_before: bytes | None = None
        self._counted: bytes | None = None  # this run's, kept when it finishes
        #: whether earlier runs left a history to ask with validators and date content by
        self.has_history = False
        # history rows read ahead (the history is not written during a run): prior()'s,
        # by id from _ahead_from up to _ahead_to (an id between without a row has none),
        # and how many of them were asked for; last_run()'s, for the listings being dated
        self._ahead: dict[int, tuple[Any, ...]] = {}
        self._ahead_from = self._ahead_to = self._ahead_used = 0
        # prior()'s rows read in the queue's order and not asked for yet (None: no row)
        self._upcoming: dict[int, tuple[Any, ...] | None] = {}
        self._last: dict[int, LastRun | None] = {}
        # the dating facts of the rows prior() read, for last_run_of (None: no history)
        self._dates: _LastDates | None = None
        self.carried = CarriedRows()
        self.reset()

    def reset(self) -> None:
        """Drop the buffers: they were written (or the state is closed)."""
        self._rows: dict[int, tuple[object, ...]] = {}
        self.carried.reset()
        self._published: list[tuple[object, ...]] = []
        self.ops = 0

    def read_meta(self, *, resumed: bool = False) -> None:
        """The run's start and the last run's template, and whether there is a history.
        `resumed`: the counted ids are not taken (which run wrote the history last is not
        known: the one stopped may be a version that leaves them as they were), so a
        resumed run counts its template (crawler.core.lastmod.NightTemplate)."""
        conn = self._conn()
        try:
            meta = dict(
                conn.execute(
                    "SELECT key, value FROM meta WHERE key IN ('run_started', 'common', 'counted')"
                )
            )
            largest = conn.execute("SELECT max(url) FROM history").fetchone()[0]
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        self.run_started = int(meta.get("run_started") or 0)
        self.template_before = frozenset(unpack_blocks(meta.get("common")))
        counted = meta.get("counted")
        self.counted_before = counted if isinstance(counted, bytes) and not resumed else None
        self.has_history = has = largest is not None
        if has:
            self._urls.upcoming = deque()
            self._dates = _LastDates(largest)
            self._urls.listed_ids = bytearray(largest + 1)  # only a row's page is carried

    # -- the baseline --------------------------------------------------------------------

    def prior(self, url: str) -> Prior | None:
        """url's row of the history (the last finished run), or None: a point query by id
        (see the module doc). Its links are named by links_of(), for a 304 only."""
        if not self.has_history:
            return None
        uid = self._urls.ids().get(url)
        if uid is None:
            return None
        row = self._upcoming_row(uid)
        if row is None:
            return None
        # one unpacking of the row, the directives unpacked here (no slices, no calls: a
        # page's row is decoded once a night, #26)
        (
            _, etag, modified, mime, meta, header, canonical, body, blocks, first, changed,
            extras, stamped, in_html, targets, nofollow, status, reason, lastmod, source,
        ) = row  # fmt: skip
        return Prior(
            etag, modified, mime or "",
            NO_DIRECTIVES if meta is None else unpack(Directives, meta),
            NO_DIRECTIVES if header is None else unpack(Directives, header),
            canonical, bool(in_html), body, blocks, first, changed, extras, bool(stamped),
            targets, nofollow, status, reason, lastmod, source, uid,
        )  # fmt: skip

    def _upcoming_row(self, uid: int) -> tuple[Any, ...] | None:
        """uid's row (its id first), read with those of the URLs queued after it: the
        frontier asks for its URLs in the order they were queued, so one statement serves
        the next UPCOMING_READ asks (a statement costs several times a row). Ids follow
        that order only in runs (they were given in last night's order of discovery, by
        pages in flight at once): the bench site's 304 night read by ranges of ids made
        2,183 reads of 37,050 rows for 18,973 asked. A resumed run's queue (not queued
        again) and a frontier past UPCOMING_MOST are read by ranges (_ahead_row)."""
        read = self._upcoming
        if uid in read:
            return read.pop(uid)
        upcoming = self._urls.upcoming
        if not upcoming:
            return self._ahead_row(uid)
        if len(upcoming) > UPCOMING_MOST:
            self._urls.upcoming = None  # see UPCOMING_MOST; the ranges serve all alike
            return self._ahead_row(uid)
        if len(read) > _UPCOMING_KEPT:  # the oldest first: the likeliest never asked for
            for stale in list(islice(read, len(read) - _UPCOMING_KEPT)):
                del read[stale]
        batch = [uid]
        take = upcoming.popleft
        while upcoming and len(batch) < UPCOMING_READ:
            batch.append(take())
        marks = ", ".join("?" * len(batch))
        select = f"SELECT {_PRIOR_COLUMNS} FROM history WHERE url IN ({marks})"
        try:
            rows = self._conn().execute(select, batch).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        read.update(dict.fromkeys(batch))
        read.update({row[0]: row for row in rows})
        return read.pop(uid)

    def _ahead_row(self, uid: int) -> tuple[Any, ...] | None:
        """uid's row (its id first), read with the rows after it. Ids are given as URLs
        are met, and a crawl meets and asks for its URLs breadth-first every night, so the
        pages asked next are mostly the next ids: one read by a range of keys serves many
        point queries (a statement costs several times a row: a 304 night's largest
        SQLite cost). Each read is twice as long as the rows of the last one asked for, so
        a crawl in another order reads only a few rows more than it asks."""
        if self._ahead_from <= uid < self._ahead_to:
            row = self._ahead.get(uid)
            self._ahead_used += row is not None
            return row
        size = min(_AHEAD_MOST, max(_AHEAD_FEWEST, 2 * self._ahead_used))
        try:
            rows = self._conn().execute(_PRIOR_AHEAD, (uid, size)).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        self._ahead = ahead = {row[0]: row for row in rows}
        self._ahead_from = uid
        # past the last row read: the next ones, unless there are none
        self._ahead_to = rows[-1][0] + 1 if len(rows) == size else 2**63
        row = ahead.get(uid)
        self._ahead_used = row is not None
        return row

    def links_of(self, prior: Prior) -> tuple[Sequence[str], Sequence[str]]:
        """The links of prior's page, in their order: those followed, and those only its
        rel=nofollow links reach (for a 304: named only then, from the ids prior() read
        with the rest of the row). HistoryLinks, named only when asked (most of a revived
        page's links never are: crawler.shell.settled), when every id is named."""
        return self._names(prior.targets), self._names(prior.nofollow)

    def _names(self, packed: bytes | None) -> Sequence[str]:
        if not packed:
            return []
        urls = self._urls
        links = HistoryLinks(packed, urls.names())
        # an id never names "" (URLs are absolute): only the unnamed are dropped, looked for
        # only when some id below the last has no name (never, as the URL table is kept)
        if urls.unnamed and None in links.named():
            return list(filter(None, links.named()))
        return links

    def last_run(self, url: str) -> LastRun | None:
        """What the last finished run kept of url's page for its lastmod (its content
        blocks and date, the lastmod published and its source), None when it has no row."""
        last = self._last
        if last:
            uid = self._urls.ids().get(url)
            if uid in last:
                return last.pop(uid)
        row = self._row(url, f"SELECT {_LAST_RUN} FROM history WHERE url = ?")
        return None if row is None else LastRun(*row)

    def last_run_of(self, url: str, blocks: bytes | None) -> LastRun | None:
        """last_run(url) for a listing: `blocks` are its page's as this run recorded it.
        When that record found them the row's own, the row is not read again (prior() read
        it for the request): its dating facts were kept, and its blocks are these."""
        uid = None if self._dates is None else self._urls.ids().get(url)
        return self.last_run_by(uid, url, blocks)

    def last_run_by(self, uid: int | None, url: str, blocks: bytes | None) -> LastRun | None:
        """last_run_of(url, blocks) for a caller that looked url's id up already (`uid`,
        None when it has none): the publish asks for it, then publishes by it (#26)."""
        dates = self._dates
        if dates is not None and uid is not None:
            before = dates.of(uid, blocks)
            if before is not None:
                return before
        return self.last_run(url)

    def warm_ids(self, asked: list[int | None]) -> None:
        """Read the last_run() rows of the URLs asked for next (the listings being dated at
        the end of the crawl, WARM_CHUNK at most), by their ids (None: a URL without one),
        in one statement, not one each: the publish looks each id up once and dates its
        listing by it (#26)."""
        if not self.has_history:
            return
        dates = self._dates
        if dates is not None:  # those last_run_of() has: not read again
            uids = dates.unknown(asked)
        else:
            uids = [uid for uid in asked if uid is not None]
        self._last = last = dict.fromkeys(uids)  # None: no row
        if not uids:
            return
        select = f"SELECT url, {_LAST_RUN} FROM history WHERE url IN ({', '.join('?' * len(uids))})"
        try:
            for uid, *row in self._conn().execute(select, uids):
                last[uid] = LastRun(*row)
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc

    def targets_by_id(self, uids: list[int]) -> dict[int, bytes]:
        """The links (packed ids) of this run's pages by id, as they were followed, for
        the early referrers of URLs judged broken (crawler.shell.referrers)."""
        return _targets_by_id(self._conn(), self._rows, uids, self.path)

    def _row(self, url: str, select: str) -> tuple[Any, ...] | None:
        """url's row of the history as `select` (by url id) reads it, or None."""
        if not self.has_history:
            return None
        uid = self._urls.ids().get(url)
        if uid is None:
            return None
        try:
            row: tuple[Any, ...] | None = self._conn().execute(select, (uid,)).fetchone()
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc
        return row

    # -- this run ------------------------------------------------------------------------

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
        validators as given (crawler.shell.revalidation decides which answers keep any)
        and the facts of a 200 (or a 304 revived from `prior`), or only the status of any
        other answer (a page gone has no facts to revive)."""
        urls = self._urls
        ids = urls.ids()
        uid = ids.get(url) or urls.intern(url)
        started = self.run_started
        if result is None or status != 200:
            row = HistoryRow(uid, status=status, reason=reason)
            if self._dates is not None:
                self._dates.drop(uid)
        else:
            dates = self._dates
            if dates is not None:
                if prior is not None and result.blocks == prior.blocks:
                    dates.keep(uid, prior)
                else:
                    dates.drop(uid)
            targets = _packed_ids(result.targets) or self._ids(result.targets)
            nofollow = _packed_ids(result.nofollow) or (
                self._ids(result.nofollow) if result.nofollow else b""
            )
            blocks = result.blocks
            first: int | None = started
            if prior is not None and prior.blocks is not None and blocks is not None:
                first = prior.first_seen if prior.first_seen is not None else started
            # only the blocks: its content date is crawler.core.lastmod's, set by published()
            # for a listed page; an unlisted one has none (see the module doc)
            row = HistoryRow(
                uid, etag=etag, modified=modified, mime=result.mime,
                meta=_packed(result.meta), header=_packed(result.header),
                canonical=result.canonical, canonical_in_html=result.canonical_in_html,
                targets=targets or None, nofollow=nofollow or None, body=result.body_key,
                blocks=blocks, status=status, reason=reason, first_seen=first,
                extras=None if result.extras is None else pack(result.extras), stamped=stamped,
            )  # fmt: skip
        self._rows[uid] = _history_values(row)
        self.ops += 1

    def carry(self, url: str, prior: Prior) -> None:
        """url's row of the history is the one this run would write (the caller decides:
        crawler.shell.revalidation.carries): it is kept as it is at the finish, its
        published columns set as a written row's would be, instead of written again."""
        uid = prior.uid or self._urls.ids().get(url)  # the row's, known when prior() read it
        if uid is None:  # revived from a row, so interned: never here
            raise StateError(f"no history row to carry for {url}")
        if self._dates is not None:  # carries() found its blocks prior's, the row's
            self._dates.keep(uid, prior, _CARRIED)
        self.carried.add(uid, prior)
        self.ops += 1

    def _ids(self, links: Sequence[str]) -> bytes:
        """links as packed URL ids (every link is met, so interned, but for a few)."""
        urls = self._urls
        found = list(map(urls.ids().get, links))
        if None in found:
            intern = urls.intern
            found = [i if i is not None else intern(t) for i, t in zip(found, links, strict=True)]
        return array("I", found).tobytes()  # type: ignore[type-var]  # no None left

    def counted(self, ids: bytes) -> None:
        """The URL ids of the pages this run's template is counted on, packed
        (lastmod.NightTemplate.counted), kept with the history when the run finishes."""
        self._counted = ids

    def published(self, url: str, changed: int | None, lastmod: int | None, source: str) -> None:
        """The lastmod a listed page was published with, and its content date, decided at
        the end of the crawl (crawler.core.lastmod)."""
        self.published_by(self._urls.ids().get(url), changed, lastmod, source)

    def published_by(
        self, uid: int | None, changed: int | None, lastmod: int | None, source: str
    ) -> None:
        """published() for a caller that looked the URL's id up already (None: it has none).
        A page listed and carried this run whose row holds these facts already writes no
        row: the finish keeps a carried row of a listed page (a listing's row) without one as
        it is (_CARRIED_PUBLISHED), which is what the row would set (on an unchanged night,
        every page: a row a page written, then joined, for nothing, #26)."""
        if uid is not None:
            dates = self._dates
            if dates is not None and dates.given == (uid, changed, lastmod, source):
                listed = self._urls.listed_ids
                if listed is not None and uid < len(listed) and listed[uid]:
                    return
            self._published.append((changed, lastmod, source, uid))
            self.ops += 1

    def write(self, conn: sqlite3.Connection, *, finished: bool, common: frozenset[int]) -> None:
        """Everything buffered, inside the checkpoint's transaction (the caller's); with
        `finished`, this run's rows become the baseline of the next, and `common` its
        template."""
        if self._rows:
            insert_rows(conn, _FRESH_INSERT, HISTORY_NAMES, self._rows.values())
        self.carried.write(conn)
        if self._published:
            insert_rows(
                conn,
                _PUBLISHED_INSERT,
                _PUBLISHED_COLUMNS,
                self._published,
                constants=_PUBLISHED_CONSTANTS,
            )
        if not finished:
            return
        self._ahead, self._ahead_from, self._ahead_to = {}, 0, 0  # the history changes now
        self._upcoming, self._urls.upcoming = {}, None
        self._dates = self._urls.listed_ids = None
        # A URL this run met but did not fetch (a limit came first) keeps its row; one it
        # never met (no link leads there any more) leaves the history, which so follows the
        # site instead of growing for ever. The URLs not met are read off `urls` (small rows;
        # every history row's id is there: urls rows are never deleted) and their rows
        # deleted by id, not the history scanned for them (a page's facts a row: 8.8 ms of
        # an unchanged 20,000-page night that deletes none, against 0.7, #26)
        conn.execute("DELETE FROM history WHERE url IN (SELECT id FROM urls WHERE state IS NULL)")
        # A carried row stays, its published columns rewritten only where they changed (on
        # an unchanged night, none); then this run's rows replace theirs, published joined
        conn.execute(_CARRIED_PUBLISHED)
        conn.execute(_HISTORY_COPY)
        for table in FINISH_EMPTIED:  # (`carried` is the record, as the listing rows are)
            conn.execute(f"DELETE FROM {table}")
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('common', ?)",
            (pack_blocks(sorted(common)),),
        )
        if self._counted is None:
            conn.execute("DELETE FROM meta WHERE key = 'counted'")
        else:
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('counted', ?)", (self._counted,)
            )


def _targets_by_id(
    conn: sqlite3.Connection, rows: dict[int, tuple[object, ...]], uids: list[int], path: Path
) -> dict[int, bytes]:
    """HistoryStore.targets_by_id: a row written this run (buffered in `rows`, or in
    fresh_history since a checkpoint), else the history's (a carried row). A page with
    neither has none."""
    found: dict[int, bytes] = {}
    rest = []
    for uid in uids:
        row = rows.get(uid)
        if row is None:
            rest.append(uid)
        elif row[_AT_TARGETS]:
            found[uid] = row[_AT_TARGETS]  # type: ignore[assignment]  # bytes when set
    try:
        for table in ("fresh_history", "history"):
            if not rest:
                break
            marks = ", ".join("?" * len(rest))
            select = f"SELECT url, targets FROM {table} WHERE url IN ({marks})"
            got = dict(conn.execute(select, rest).fetchall())
            found.update((uid, targets) for uid, targets in got.items() if targets)
            rest = [uid for uid in rest if uid not in got]
    except sqlite3.Error as exc:
        raise StateError(f"cannot read state file {path}: {exc}") from exc
    return found


def _packed_ids(links: Sequence[str]) -> bytes | None:
    """A revived page's links as the history holds them (links_of()), stored again as
    they are instead of being packed anew from their names (a HistoryLinks is its ids: it
    cannot change); None for any other list."""
    return links.ids if isinstance(links, HistoryLinks) else None


def _packed(directives: Directives) -> bytes | None:
    return None if directives == NO_DIRECTIVES else pack(directives)
