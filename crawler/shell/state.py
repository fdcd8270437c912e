"""The crawl's resumable state: one SQLite file, written in checkpoints.

A crawl of a large site runs for hours; losing it to a crash, a deploy or a SIGKILL and
starting over costs every request again. So the engine reports each change here (a URL
queued, a URL's decision or listing, a body hash, a referrer, a counter) and this module keeps
enough to rebuild the engine's memory exactly: ``--resume`` then continues where the last
checkpoint left off and publishes the same sitemap an uninterrupted crawl would have. The
file outlives a finished crawl as the site's history (#14), which the next run starts from.

:class:`CrawlState` is the one object the engine, the journal and the job hold; each of its
jobs is a component of its own:

* crawler.shell.state_file: the file: schema, identity, lock, and how a run opens it (new,
  resumed, or a new run on the file's history); ``peek`` and ``outdated`` for the job.
* crawler.shell.state_queue: the URL table and the crawl's record (queue, decisions,
  listings, referrers, bodies, counters), and reading it back for ``--resume``.
* crawler.shell.state_history: the site's history: the baseline read by URL, this run's rows.

Every record only appends to in-memory buffers (the crawler's hot path); a checkpoint
writes every component's buffers in ONE transaction. A crash therefore loses whole
checkpoints, never half of one, and because the engine records a page's decision together
with the links it found, the state on disk always ends on page boundaries: the pages lost
since the last checkpoint are simply still "queued" and are fetched again.

Threads: the state is opened, recorded into, checkpointed and closed on the event loop's
thread only (worker processes never see it; the writer's threads never call it), so its
connection keeps sqlite3's same-thread check.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from crawler.shell import state_file
from crawler.shell.listings import to_micros
from crawler.shell.state_file import SCHEMA_VERSION, StateError, StateWriteError, now_iso
from crawler.shell.state_follows import FollowLog, FollowRow
from crawler.shell.state_history import HistoryStore
from crawler.shell.state_queue import QueuedRow, ResumeQueue, SavedCrawl, unlistable

__all__ = [
    "SCHEMA_VERSION",
    "CrawlState",
    "QueuedRow",
    "SavedCrawl",
    "StateError",
    "StateWriteError",
]

#: Rows buffered before a checkpoint writes them, unless DEFAULT_CHECKPOINT_SECONDS comes
#: first (the bound on what a crash loses). Part of a checkpoint's cost does not depend on
#: its rows: each table's last pages, and the pages random keys land on (a night's `bodies`,
#: a row a page keyed by hash, until it became a log: state_file's first_bodies), are written
#: again at every commit. At 2,000 the unchanged 20,000-page night made 77 checkpoints and
#: 14,857 page writes; at 10,000 it made 17 and 8,885 (20,000: 9 and 8,386): the kernel's
#: work, and 0.5% of the night's instructions (#26; measured with `bodies`). The buffers
#: stay a few MB (about 25 MB where every page holds thousands of links: a history row
#: keeps 4 bytes a link).
DEFAULT_CHECKPOINT_OPS: Final = 10_000
DEFAULT_CHECKPOINT_SECONDS: Final = 2.0


class CrawlState:
    """The open state file of one crawl. Not thread-safe: one event loop records into it."""

    def __init__(
        self,
        path: Path,
        opened: state_file.OpenedFile,
        *,
        checkpoint_ops: int,
        checkpoint_seconds: float,
        clock: Callable[[], float],
    ) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = opened.conn
        self._lock_fd: int | None = opened.lock_fd
        self._checkpoint_ops = checkpoint_ops
        self._checkpoint_seconds = checkpoint_seconds
        self._clock = clock
        self._last_checkpoint = clock()
        self._finished = opened.finished
        #: what a checkpoint records first (the engine's counters: set once a checkpoint,
        #: not after every page, they cost no call a page; every checkpoint has them, so a
        #: crash after one never leaves a file that looks unused: state_file.discard_unused)
        self.before_checkpoint: Callable[[], object] | None = None
        self._queue = ResumeQueue(
            path, self._open_conn, loaded=not opened.kept, next_id=opened.next_id,
            qseq=opened.qseq,
        )  # fmt: skip
        self._history = history = HistoryStore(path, self._open_conn, self._queue)
        queue = self._queue
        # a listing the history's carried row can keep is kept there (the history's rule)
        carried = history.carried
        queue.keeps_listing, queue.unlisted_carried = carried.keeps, carried.unlisted
        # Records go straight to the component that keeps them (bound methods: no extra
        # call on the hot path, and one signature each, the component's).
        # The history (crawler.shell.state_history): the last finished run's row of a URL
        # (prior, links_of for a 304, last_run for its lastmod), this run's (page, or carry
        # the history's as it is; published).
        self.prior = history.prior
        self.links_of = history.links_of
        self.last_run = history.last_run
        self.last_run_of = history.last_run_of
        self.last_run_by = history.last_run_by
        self.warm_ids = history.warm_ids
        self.page = history.page
        self.carry = history.carry
        self.published = history.published
        self.published_by = history.published_by
        self.targets_by_id = history.targets_by_id
        # The crawl's record (crawler.shell.state_queue), memory only until a checkpoint.
        self.queued = queue.queued
        self.lowered = queue.lowered
        self.decided = queue.decided
        self.listed = queue.listed
        self.unlisted = queue.unlisted
        self.referred = queue.referred
        self.referred_by = queue.referred_by
        self.body = queue.body
        self.counter = queue.counter
        self.load = queue.load
        # The follow log of a night with a history (crawler.shell.state_follows)
        self._follows = FollowLog()
        self.log_follows = self._follows.add

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
        opened = state_file.open_file(
            path, fingerprint=fingerprint, start_url=start_url, resume=resume,
            settings=settings, fresh=fresh, history_key=history_key,
            started=to_micros(now().replace(microsecond=0)) or 0,
        )  # fmt: skip
        try:
            if opened.finished and resume and not reopen_finished:
                raise StateError(
                    f"the crawl saved in {path} finished and was published; there is "
                    "nothing to resume (run without --resume to crawl again)"
                )
            state = cls(
                path,
                opened,
                checkpoint_ops=checkpoint_ops,
                checkpoint_seconds=checkpoint_seconds,
                clock=clock,
            )
            state._history.read_meta(resumed=resume)
            return state
        except BaseException:
            opened.close()
            raise

    @staticmethod
    def peek(path: Path, fingerprint: str) -> bool:
        """Read-only, for the nightly job: whether ``path`` holds a stopped crawl of this
        configuration that a resume would continue (crawler.shell.state_file.peek), and
        whose listings the sitemap can hold (replay refuses a resume of one that holds one
        it cannot: crawler.shell.state_queue.unlistable)."""
        return state_file.peek(path, fingerprint) and unlistable(path) is None

    @staticmethod
    def revalidates(path: Path, start_url: str) -> bool:
        """Read-only, before a crawl opens ``path``: whether it holds a history of
        start_url's, so that the crawl asks its pages conditionally (a guess: the crawl's
        worker processes are planned by it; crawler.shell.state_file.has_history)."""
        return state_file.has_history(path, start_url)

    @staticmethod
    def outdated(path: Path) -> bool:
        """Read-only, for the nightly job: whether ``path`` is a state file of ours written
        by another schema version (crawler.shell.state_file.outdated)."""
        return state_file.outdated(path)

    # -- history (the baseline of a new run): crawler.shell.state_history ----------------

    @property
    def run_started(self) -> int:
        """The start of this run (kept by a resume): the date a content change is given."""
        return self._history.run_started

    @property
    def template_before(self) -> frozenset[int]:
        """The blocks common to most pages in the previous finished run."""
        return self._history.template_before

    @property
    def counted_before(self) -> bytes | None:
        """The URL ids the previous finished run's template was counted on, packed (None:
        not known): crawler.core.lastmod.NightTemplate."""
        return self._history.counted_before

    def counted(self, ids: bytes) -> None:
        """The URL ids this run's template is counted on, packed, for the next run."""
        self._history.counted(ids)

    @property
    def has_history(self) -> bool:
        """Whether earlier runs left a history to ask with validators and date content by."""
        return self._history.has_history

    def follows(self) -> list[FollowRow]:
        """The follow log as of the last checkpoint (a resumed night's, oldest first)."""
        try:
            return FollowLog.load(self._open_conn(), self._history.run_started)
        except sqlite3.Error as exc:
            raise StateError(f"cannot read state file {self.path}: {exc}") from exc

    def url_ids(self) -> dict[str, int]:
        """url -> its id in the file, for every URL interned (the history's links are ids)."""
        return self._queue.ids()

    # -- writing -------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Operations recorded since the last checkpoint (a follow log row is one)."""
        return self._queue.ops + self._history.ops + len(self._follows.rows)

    def maybe_checkpoint(self) -> None:
        """Checkpoint when enough work is buffered to be worth a transaction, or when it
        has been buffered long enough that a crash would cost noticeable refetching (what
        before_checkpoint records does not count as work buffered)."""
        ops = self._queue.ops + self._history.ops
        if ops and (
            ops >= self._checkpoint_ops
            or self._clock() - self._last_checkpoint >= self._checkpoint_seconds
        ):
            self.checkpoint()

    def checkpoint(self) -> None:
        """Write everything recorded since the last checkpoint, in one transaction.

        Call it only between pages (the engine's consistent points): everything buffered
        becomes durable together, and a crash after it loses nothing recorded before it.
        On failure the buffers are kept, so a later checkpoint can still write them.
        """
        if self.before_checkpoint is not None:
            self.before_checkpoint()
        if not self.pending:
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
        queue = self._queue
        try:
            conn.execute("BEGIN IMMEDIATE")
            # The queue's rows first: the finish's SQL keeps a carried row whose page has a
            # listing (its row, or the carried row's) and no published row
            # (state_history._CARRIED_PUBLISHED), so a twin's listing deleted in this
            # checkpoint must be gone before it runs (the carried row's is, in history.write)
            queue.write(conn)
            self._follows.write(conn)
            self._history.write(conn, finished=finished, common=common)
            updated = now_iso(precise=finished)  # a finish's stamp: state_file._restart
            meta = [("updated", updated), ("next_id", queue.next_id), ("qseq", queue.qseq)]
            if finished or self._finished:
                # New work after a finished crawl was resumed means it is running again.
                meta.append(("finished", int(finished)))
            if finished:  # the history's counted ids are this finish's (state_file._restart)
                meta.append(("counted_at", updated))
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
        queue.reset()
        self._history.reset()
        self._follows.reset()
        self._last_checkpoint = self._clock()

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
            state_file.unlock(fd)

    def __enter__(self) -> CrawlState:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _open_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StateError(f"state file {self.path} is already closed")
        return self._conn
