"""crawler.state: round trips, ordering, resume refusals, locking and crash safety."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler import state as state_module
from crawler.errors import SitemapCrawlerError
from crawler.report import DecisionRecord
from crawler.state import (
    CrawlState,
    EntryRow,
    QueuedRow,
    Snapshot,
    StateError,
)
from tests.procs import child_env

REPO = Path(__file__).resolve().parents[1]
START = "https://example.com/"
FP = "config-hash-1"


def fresh(path: Path, **kwargs: object) -> CrawlState:
    return CrawlState.open(path, fingerprint=FP, start_url=START, resume=False, **kwargs)


def resumed(path: Path, **kwargs: object) -> CrawlState:
    return CrawlState.open(path, fingerprint=FP, start_url=START, resume=True, **kwargs)


def reload(
    path: Path, start_url: str = START, fingerprint: str = FP
) -> tuple[Snapshot, list[DecisionRecord], list[EntryRow]]:
    with CrawlState.open(path, fingerprint=fingerprint, start_url=start_url, resume=True) as state:
        snap = state.load()
        return snap, list(snap.decisions), list(snap.entries)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "crawl.state"


# -- round trips ------------------------------------------------------------------------------


def test_every_kind_of_record_round_trips(path: Path) -> None:
    paris = timezone(timedelta(hours=2))
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.queued("https://example.com/ünïcödé/日本?q=ä", 1, START)
        state.queued("https://example.com/b", 1, START)
        state.decided(
            START,
            200,
            "listed",
            "",
            0,
            None,
            (START, datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC), "weekly", 1.0),
        )
        state.decided(
            "https://example.com/b",
            301,
            "redirect",
            "https://example.com/ç",
            1,
            START,
            None,
        )
        state.decided("https://other.example/x", None, "out_of_scope", "outside /", 1, START)
        state.decided(
            "https://example.com/ünïcödé/日本?q=ä",
            200,
            "listed",
            "",
            1,
            START,
            (
                "https://example.com/%C3%BCn%C3%AFc%C3%B6d%C3%A9/%E6%97%A5%E6%9C%AC?q=%C3%A4",
                datetime(2023, 12, 31, 23, 0, tzinfo=paris),
                None,
                None,
            ),
        )
        state.body(b"\x00" * 16, START)
        state.body(bytes(range(16)), "https://example.com/ünïcödé/日本?q=ä")
        state.counter("pages", 1)
        state.counter("pages", 3)
        state.counter("bytes", 12_345_678_901)
        state.checkpoint()

    snap, decisions, entries = reload(path)
    assert snap.queued == []
    assert set(snap.seen) == {
        START,
        "https://example.com/ünïcödé/日本?q=ä",
        "https://example.com/b",
        "https://other.example/x",
    }
    assert decisions == [
        DecisionRecord(START, 200, "listed", "", 0, None),
        DecisionRecord("https://example.com/b", 301, "redirect", "https://example.com/ç", 1, START),
        DecisionRecord("https://other.example/x", None, "out_of_scope", "outside /", 1, START),
        DecisionRecord("https://example.com/ünïcödé/日本?q=ä", 200, "listed", "", 1, START),
    ]
    assert entries == [
        EntryRow(START, datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC), "weekly", 1.0),
        EntryRow(
            "https://example.com/%C3%BCn%C3%AFc%C3%B6d%C3%A9/%E6%97%A5%E6%9C%AC?q=%C3%A4",
            datetime(2023, 12, 31, 21, 0, tzinfo=UTC),
            None,
            None,
        ),
    ]
    assert entries[1].lastmod is not None and entries[1].lastmod.tzinfo is UTC
    assert snap.bodies == {
        b"\x00" * 16: START,
        bytes(range(16)): "https://example.com/ünïcödé/日本?q=ä",
    }
    assert snap.counters == {"pages": 3, "bytes": 12_345_678_901}
    assert snap.finished is False


def test_queued_rows_keep_depth_and_referrer(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.queued("https://example.com/a", 1, START)
        state.checkpoint()
    snap, _, _ = reload(path)
    assert snap.queued == [QueuedRow(START, 0, None), QueuedRow("https://example.com/a", 1, START)]
    assert isinstance(snap.queued[0], tuple)


def test_priority_and_lastmod_edge_values(path: Path) -> None:
    old = datetime(1970, 1, 1, tzinfo=UTC) - timedelta(microseconds=1)
    far = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    with fresh(path) as state:
        state.decided("https://example.com/1", 200, "listed", "", 1, None, (START, old, None, 0.0))
        state.decided("https://example.com/2", 200, "listed", "", 1, None, (START, far, None, 0.1))
        state.checkpoint()
    _, _, entries = reload(path)
    assert [(e.lastmod, e.priority) for e in entries] == [(old, 0.0), (far, 0.1)]


def test_naive_lastmod_is_rejected_where_it_is_recorded(path: Path) -> None:
    with fresh(path) as state, pytest.raises(ValueError, match="timezone-aware"):
        state.decided(START, 200, "listed", "", 0, None, (START, datetime(2024, 1, 1), None, None))


# -- order, lowering, decisions ---------------------------------------------------------------


def test_queue_and_entry_order_survive_many_checkpoints(path: Path) -> None:
    urls = [f"https://example.com/p{i}" for i in range(500)]
    with fresh(path) as state:
        for i, url in enumerate(urls):
            state.queued(url, 1 + i % 3, START)
            if i % 7 == 0:
                state.checkpoint()
        # decide every third URL, in an order unrelated to queue order, listing them all
        decided = urls[::3][::-1]
        for url in decided:
            state.decided(url, 200, "listed", "", 1, START, (url, None, None, None))
            if len(url) % 2:
                state.checkpoint()
        state.checkpoint()
    snap, decisions, entries = reload(path)
    assert [q.url for q in snap.queued] == [u for u in urls if u not in set(decided)]
    assert [q.depth for q in snap.queued] == [
        1 + i % 3 for i, u in enumerate(urls) if u not in set(decided)
    ]
    assert [e.loc for e in entries] == decided
    assert [d.url for d in decisions] == decided


def test_lowered_moves_a_queued_url_up_with_a_new_place_in_queue_order(path: Path) -> None:
    a, b, c = (f"https://example.com/{n}" for n in "abc")
    with fresh(path) as state:
        state.queued(a, 3, START)
        state.queued(b, 3, START)
        state.queued(c, 3, START)
        state.checkpoint()
        state.lowered(a, 1, "https://example.com/hub")  # already on disk
        state.queued("https://example.com/d", 2, START)
        state.lowered("https://example.com/d", 1)  # same checkpoint, referrer kept
        state.lowered(b, 2)  # on disk, referrer kept
        state.checkpoint()
    snap, _, _ = reload(path)
    assert snap.queued == [
        QueuedRow(c, 3, START),
        QueuedRow(a, 1, "https://example.com/hub"),
        QueuedRow("https://example.com/d", 1, START),
        QueuedRow(b, 2, START),
    ]


def test_decided_url_leaves_the_queue_but_stays_seen(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.queued("https://example.com/a", 1, START)
        state.checkpoint()
        state.decided(START, 200, "listed", "", 0, None, (START, None, None, None))
        state.checkpoint()
    snap, decisions, _ = reload(path)
    assert snap.queued == [QueuedRow("https://example.com/a", 1, START)]
    assert sorted(snap.seen) == [START, "https://example.com/a"]
    assert decisions == [DecisionRecord(START, 200, "listed", "", 0, None)]


def test_referrer_that_was_never_met_is_not_seen(path: Path) -> None:
    """A referrer spelled differently from any crawled URL (a public URL, say) is stored, but
    must not be taken for a URL already met, or a resumed crawl would skip it."""
    with fresh(path) as state:
        state.queued("https://example.com/a", 1, "https://www.example.com/")
        state.checkpoint()
        state.queued("https://www.example.com/", 0, None)  # later queued itself
        state.checkpoint()
        state.queued("https://example.com/b", 1, "https://cdn.example.com/")
        state.checkpoint()
    snap, _, _ = reload(path)
    assert "https://cdn.example.com/" not in snap.seen
    assert [q.url for q in snap.queued] == [
        "https://example.com/a",
        "https://www.example.com/",
        "https://example.com/b",
    ]
    assert snap.queued[2].referrer == "https://cdn.example.com/"


def test_entry_loc_may_differ_from_the_crawled_url(path: Path) -> None:
    crawl_url = "http://127.0.0.1:8080/page"
    public = "https://www.example.com/page"
    with fresh(path) as state:
        state.queued(crawl_url, 1, None)
        state.decided(crawl_url, 200, "listed", "", 1, None, (public, None, "daily", 0.8))
        state.checkpoint()
    _, decisions, entries = reload(path)
    assert decisions[0].url == crawl_url
    assert entries == [EntryRow(public, None, "daily", 0.8)]


def test_first_body_wins(path: Path) -> None:
    digest = b"d" * 16
    with fresh(path) as state:
        state.body(digest, "https://example.com/first")
        state.checkpoint()
        state.body(digest, "https://example.com/second")
        state.checkpoint()
    snap, _, _ = reload(path)
    assert snap.bodies == {digest: "https://example.com/first"}


def test_streams_page_through_large_tables_in_order(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state_module, "_CHUNK", 7)
    urls = [f"https://example.com/{i}" for i in range(100)]
    with fresh(path) as state:
        for url in urls:
            state.decided(url, 200, "listed", "", 1, None, (url, None, None, None))
        state.checkpoint()
    _, decisions, entries = reload(path)
    assert [d.url for d in decisions] == urls
    assert [e.loc for e in entries] == urls


def test_streams_ignore_records_checkpointed_while_replaying(path: Path) -> None:
    with fresh(path) as state:
        state.decided(START, 200, "listed", "", 0, None, (START, None, None, None))
        state.checkpoint()
    with resumed(path) as state:
        snap = state.load()
        state.decided("https://example.com/new", 200, "listed", "", 1, START, ("x", None, None, 1))
        state.checkpoint()
        assert [d.url for d in snap.decisions] == [START]
        assert [e.loc for e in snap.entries] == [START]


# -- checkpoints ------------------------------------------------------------------------------


def test_nothing_is_written_before_a_checkpoint_and_close_drops_the_buffer(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.checkpoint()
        state.queued("https://example.com/lost", 1, START)
        state.counter("pages", 9)
        assert state.pending == 2
    snap, _, _ = reload(path)
    assert snap.queued == [QueuedRow(START, 0, None)]
    assert snap.seen == [START]
    assert snap.counters == {}


def test_maybe_checkpoint_by_operation_count(path: Path) -> None:
    with fresh(path, checkpoint_ops=3, checkpoint_seconds=1e9) as state:
        state.queued("https://example.com/1", 1, None)
        state.queued("https://example.com/2", 1, None)
        state.maybe_checkpoint()
        assert state.pending == 2
        state.queued("https://example.com/3", 1, None)
        state.maybe_checkpoint()
        assert state.pending == 0
    snap, _, _ = reload(path)
    assert len(snap.queued) == 3


def test_maybe_checkpoint_by_elapsed_time(path: Path) -> None:
    now = [100.0]
    with fresh(path, checkpoint_ops=10**9, checkpoint_seconds=2.0, clock=lambda: now[0]) as state:
        state.maybe_checkpoint()  # nothing buffered: nothing to do
        state.queued("https://example.com/1", 1, None)
        now[0] = 101.9
        state.maybe_checkpoint()
        assert state.pending == 1
        now[0] = 102.0
        state.maybe_checkpoint()
        assert state.pending == 0
        state.queued("https://example.com/2", 1, None)
        now[0] = 103.0
        state.maybe_checkpoint()
        assert state.pending == 1  # the clock restarted at the last checkpoint


def test_finish_marks_the_crawl_complete_and_it_can_be_resumed(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.decided(START, 200, "listed", "", 0, None, (START, None, None, None))
        state.finish()
    snap, _, entries = reload(path)
    assert snap.finished is True
    assert snap.queued == []
    assert [e.loc for e in entries] == [START]


def test_new_work_after_resuming_a_finished_crawl_clears_finished(path: Path) -> None:
    with fresh(path) as state:
        state.finish()
    with resumed(path) as state:
        assert state.load().finished is True
        state.checkpoint()  # nothing buffered: still finished
    assert reload(path)[0].finished is True
    with resumed(path) as state:
        state.load()
        state.queued("https://example.com/more", 1, START)
        state.checkpoint()
    assert reload(path)[0].finished is False


def test_resume_continues_ids_and_queue_order(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.queued("https://example.com/a", 1, START)
        state.checkpoint()
    with resumed(path) as state:
        snap = state.load()
        assert [q.url for q in snap.queued] == [START, "https://example.com/a"]
        state.decided(START, 200, "listed", "", 0, None, (START, None, None, None))
        state.queued("https://example.com/b", 1, START)
        state.checkpoint()
    # recording straight after opening, without load(), must not collide with stored ids
    with resumed(path) as state:
        state.queued("https://example.com/c", 1, "https://example.com/a")
        state.decided("https://example.com/a", 404, "http_error", "HTTP 404", 1, START)
        state.checkpoint()
    snap, decisions, entries = reload(path)
    assert snap.queued == [
        QueuedRow("https://example.com/b", 1, START),
        QueuedRow("https://example.com/c", 1, "https://example.com/a"),
    ]
    assert [d.url for d in decisions] == [START, "https://example.com/a"]
    assert [e.loc for e in entries] == [START]
    assert len(snap.seen) == len(set(snap.seen)) == 4


def test_closed_state_refuses_work(path: Path) -> None:
    state = fresh(path)
    state.close()
    state.close()  # idempotent
    state.queued(START, 0, None)  # buffering needs no file ...
    with pytest.raises(StateError, match="closed"):
        state.checkpoint()  # ... writing does


# -- opening and refusals ---------------------------------------------------------------------


def test_state_error_is_a_usage_error() -> None:
    assert issubclass(StateError, SitemapCrawlerError)
    assert StateError.exit_code == 2


def test_file_is_wal_and_tagged(path: Path) -> None:
    with fresh(path):
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x534D4353
            meta = dict(conn.execute("SELECT key, value FROM meta"))
        finally:
            conn.close()
    assert meta["fingerprint"] == FP
    assert meta["start_url"] == START
    assert meta["schema_version"] == state_module.SCHEMA_VERSION
    assert {"created", "updated"} <= meta.keys()


def test_urls_are_stored_once(path: Path) -> None:
    url = "https://example.com/" + "x" * 200
    with fresh(path) as state:
        state.queued(url, 1, START)
        state.decided(url, 200, "listed", "", 1, START, (url, None, None, None))
        state.body(b"b" * 16, url)
        state.queued("https://example.com/child", 2, url)
        state.checkpoint()
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("SELECT count(*) FROM urls WHERE url = ?", (url,)).fetchone() == (
                1,
            )
            assert conn.execute("SELECT count(*) FROM entries WHERE loc IS NULL").fetchone() == (1,)
        finally:
            conn.close()


def test_resume_refuses_another_start_url(path: Path) -> None:
    fresh(path).close()
    with pytest.raises(StateError) as err:
        CrawlState.open(path, fingerprint=FP, start_url="https://other.example/", resume=True)
    message = str(err.value)
    assert START in message and "https://other.example/" in message
    assert "\n" not in message


def test_resume_refuses_another_configuration(path: Path) -> None:
    fresh(path).close()
    with pytest.raises(StateError, match="the state file was made with a different configuration"):
        CrawlState.open(path, fingerprint="other", start_url=START, resume=True)


def test_resume_refuses_a_missing_file(path: Path) -> None:
    with pytest.raises(StateError, match="nothing to resume") as err:
        resumed(path)
    assert str(path) in str(err.value)
    assert not path.exists()


@pytest.mark.parametrize(
    "content",
    [b"this is not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 4000],
)
def test_resume_refuses_a_garbage_file(path: Path, content: bytes) -> None:
    path.write_bytes(content)
    with pytest.raises(StateError, match="not a sitemap-crawler state file") as err:
        resumed(path)
    assert str(path) in str(err.value)
    assert path.read_bytes() == content  # untouched


def test_resume_refuses_an_empty_file(path: Path) -> None:
    path.write_bytes(b"")
    with pytest.raises(StateError, match="not a sitemap-crawler state file"):
        resumed(path)


def test_resume_refuses_another_sqlite_database(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match="not a sitemap-crawler state file"):
        resumed(path)
    conn = sqlite3.connect(path)
    try:  # not converted to WAL behind its owner's back
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        conn.close()


def test_resume_refuses_a_state_file_with_missing_tables(path: Path) -> None:
    fresh(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE entries")
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match="not a sitemap-crawler state file"):
        resumed(path)


def test_resume_refuses_another_schema_version(path: Path) -> None:
    fresh(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(StateError, match="schema version 99"):
        resumed(path)


def test_fresh_crawl_replaces_an_old_state_file(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.checkpoint()
    with CrawlState.open(path, fingerprint="new", start_url="https://new.example/", resume=False):
        pass
    with CrawlState.open(
        path, fingerprint="new", start_url="https://new.example/", resume=True
    ) as state:
        snap = state.load()
    assert snap.queued == [] and snap.seen == []


def test_fresh_crawl_refuses_to_replace_a_file_that_is_not_a_state_file(path: Path) -> None:
    path.write_text("<urlset>precious</urlset>")
    with pytest.raises(StateError, match="refusing to replace"):
        fresh(path)
    assert path.read_text() == "<urlset>precious</urlset>"


def test_fresh_crawl_creates_missing_directories(tmp_path: Path) -> None:
    with fresh(tmp_path / "a" / "b" / "crawl.state") as state:
        state.checkpoint()
    assert (tmp_path / "a" / "b" / "crawl.state").is_file()


def test_refusals_release_the_lock(path: Path) -> None:
    fresh(path).close()
    with pytest.raises(StateError):
        CrawlState.open(path, fingerprint="other", start_url=START, resume=True)
    resumed(path).close()


def test_second_open_in_the_same_process_is_refused(path: Path) -> None:
    with fresh(path), pytest.raises(StateError, match="in use by another running crawl"):
        resumed(path)
    resumed(path).close()


_HOLDER = """
import sys
from pathlib import Path
from crawler.state import CrawlState
state = CrawlState.open(Path(sys.argv[1]), fingerprint=sys.argv[2], start_url=sys.argv[3],
                        resume=True)
print("locked", flush=True)
sys.stdin.read()
"""


def test_a_live_process_holding_the_file_is_refused_until_it_dies(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.checkpoint()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), FP, START],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=child_env(),
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(
            StateError, match=rf"in use by another running crawl \(pid {holder.pid}\)"
        ):
            resumed(path)
        with pytest.raises(StateError, match="in use"):
            fresh(path)  # a fresh crawl must not delete a running crawl's file either
    finally:
        holder.kill()  # SIGKILL: the OS, not the holder, releases the lock
        holder.wait()
    snap, _, _ = reload(path)
    assert snap.queued == [QueuedRow(START, 0, None)]


# -- crash safety -----------------------------------------------------------------------------

_CRASHER = """
import os, signal, sys
from datetime import UTC, datetime
from pathlib import Path
from crawler.state import CrawlState

state = CrawlState.open(Path(sys.argv[1]), fingerprint="fp", start_url="https://ex.com/",
                        resume=False)
urls = [f"https://ex.com/p{i}/é" for i in range(3000)]
state.queued("https://ex.com/", 0, None)
state.decided("https://ex.com/", 200, "listed", "", 0, None,
              ("https://ex.com/", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "daily", 0.9))
for url in urls:
    state.queued(url, 1, "https://ex.com/")
state.body(b"\\x01" * 16, "https://ex.com/")
state.counter("pages", 1)
state.checkpoint()
# Pages 0..9 were fetched and decided, with their links, in checkpointed batches ...
for i in range(10):
    state.decided(urls[i], 200, "listed", "", 1, "https://ex.com/", (urls[i], None, None, None))
    state.queued(f"https://ex.com/p{i}/child", 2, urls[i])
    state.counter("pages", 2 + i)
    state.checkpoint()
# ... then more work is recorded but never checkpointed: pages 10..2999 are in flight.
for i in range(10, 3000):
    state.decided(urls[i], 200, "noindex", "", 1, "https://ex.com/", None)
    state.queued(f"https://ex.com/p{i}/child", 2, urls[i])
    state.body(i.to_bytes(16, "big"), urls[i])
state.counter("pages", 3000)
print("killing", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_sigkill_loses_only_what_was_not_checkpointed(path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CRASHER, str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=child_env(),
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.strip() == "killing"
    assert path.with_name(path.name + "-wal").exists()  # the crash left the WAL behind

    urls = [f"https://ex.com/p{i}/é" for i in range(3000)]
    with CrawlState.open(path, fingerprint="fp", start_url="https://ex.com/", resume=True) as st:
        snap = st.load()
        decisions = list(snap.decisions)
        entries = list(snap.entries)
        # the crawl goes on after the crash, and its next checkpoint is sound
        st.decided(urls[10], 200, "listed", "", 1, "https://ex.com/", (urls[10], None, None, None))
        st.checkpoint()

    assert snap.queued == [QueuedRow(u, 1, "https://ex.com/") for u in urls[10:]] + [
        QueuedRow(f"https://ex.com/p{i}/child", 2, urls[i]) for i in range(10)
    ]
    assert len(snap.seen) == 1 + 3000 + 10
    assert [d.url for d in decisions] == ["https://ex.com/", *urls[:10]]
    assert entries == [
        EntryRow("https://ex.com/", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "daily", 0.9),
        *(EntryRow(u, None, None, None) for u in urls[:10]),
    ]
    assert snap.bodies == {b"\x01" * 16: "https://ex.com/"}
    assert snap.counters == {"pages": 11}

    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()
    _, decisions, _ = reload(path, "https://ex.com/", "fp")
    assert decisions[-1].url == urls[10]


# -- model-based property ---------------------------------------------------------------------

_URLS = [f"https://example.com/{name}" for name in ("a", "b", "c", "d", "é", "f/g", "h?i=1")]
_op = st.one_of(
    st.tuples(st.just("queued"), st.sampled_from(_URLS), st.integers(0, 5), st.sampled_from(_URLS)),
    st.tuples(st.just("lowered"), st.sampled_from(_URLS), st.integers(0, 5)),
    st.tuples(st.just("decided"), st.sampled_from(_URLS), st.booleans()),
    st.tuples(st.just("body"), st.binary(min_size=16, max_size=16), st.sampled_from(_URLS)),
    st.tuples(st.just("counter"), st.sampled_from(["pages", "bytes"]), st.integers(0, 2**40)),
    st.just(("checkpoint",)),
)


class _Model:
    """What the state must give back: the frontier's rules, applied in call order."""

    def __init__(self) -> None:
        self.queue: dict[str, tuple[int, str | None, int]] = {}  # url -> depth, ref, order
        self.done: set[str] = set()
        self.decisions: list[str] = []
        self.entries: list[str] = []
        self.bodies: dict[bytes, str] = {}
        self.counters: dict[str, int] = {}
        self.order = 0

    def apply(self, state: CrawlState, op: tuple[object, ...]) -> None:
        kind = op[0]
        if kind == "queued":
            _, url, depth, ref = op
            if url in self.queue or url in self.done:
                return  # the frontier never queues a URL twice
            self.order += 1
            self.queue[url] = (depth, ref, self.order)
            state.queued(url, depth, ref)
        elif kind == "lowered":
            _, url, depth = op
            if url not in self.queue or depth >= self.queue[url][0]:
                return
            self.order += 1
            self.queue[url] = (depth, self.queue[url][1], self.order)
            state.lowered(url, depth)
        elif kind == "decided":
            _, url, listed = op
            if url in self.done:
                return
            self.queue.pop(url, None)
            self.done.add(url)
            self.decisions.append(url)
            if listed:
                self.entries.append(url)
            state.decided(url, 200, "r", "", 1, None, (url, None, None, None) if listed else None)
        elif kind == "body":
            _, digest, url = op
            self.bodies.setdefault(digest, url)
            state.body(digest, url)
        elif kind == "counter":
            _, name, value = op
            self.counters[name] = value
            state.counter(name, value)

    def snapshot(self) -> tuple[object, ...]:
        queued = sorted(self.queue.items(), key=lambda item: item[1][2])
        return (
            [QueuedRow(url, depth, ref) for url, (depth, ref, _) in queued],
            set(self.queue) | self.done,
            list(self.decisions),
            list(self.entries),
            dict(self.bodies),
            dict(self.counters),
        )


@settings(max_examples=60, deadline=None)
@given(first=st.lists(_op, max_size=40), second=st.lists(_op, max_size=40))
def test_state_matches_a_model_at_the_last_checkpoint(
    tmp_path_factory: pytest.TempPathFactory,
    first: list[tuple[object, ...]],
    second: list[tuple[object, ...]],
) -> None:
    """Random frontier traffic with checkpoints anywhere, in two runs (the second resumed),
    each stopping with unwritten work: what comes back is the model as of the last
    checkpoint, the uncheckpointed tail of each run is lost."""
    path = tmp_path_factory.mktemp("model") / "crawl.state"
    model = _Model()
    expected = model.snapshot()
    with fresh(path) as state:
        for op in first:
            if op[0] == "checkpoint":
                state.checkpoint()
                expected = model.snapshot()
            else:
                model.apply(state, op)
    got = _observed(path)
    assert got == expected
    model = _rebuild(expected)
    with resumed(path) as state:
        state.load()
        for op in second:
            if op[0] == "checkpoint":
                state.checkpoint()
                expected = model.snapshot()
            else:
                model.apply(state, op)
    assert _observed(path) == expected


def _observed(path: Path) -> tuple[object, ...]:
    snap, decisions, entries = reload(path)
    assert len(snap.seen) == len(set(snap.seen))
    return (
        snap.queued,
        set(snap.seen),
        [d.url for d in decisions],
        [e.loc for e in entries],
        snap.bodies,
        snap.counters,
    )


def _rebuild(snapshot: tuple[object, ...]) -> _Model:
    queued, seen, decisions, entries, bodies, counters = snapshot
    model = _Model()
    for row in queued:  # type: ignore[attr-defined]
        model.order += 1
        model.queue[row.url] = (row.depth, row.referrer, model.order)
    model.done = set(seen) - set(model.queue)  # type: ignore[call-overload]
    model.decisions = list(decisions)  # type: ignore[call-overload]
    model.entries = list(entries)  # type: ignore[call-overload]
    model.bodies = dict(bodies)  # type: ignore[call-overload]
    model.counters = dict(counters)  # type: ignore[call-overload]
    return model


def test_timestamps_are_updated_by_checkpoints(path: Path) -> None:
    with fresh(path) as state:
        state.counter("pages", 1)
        state.checkpoint()
    conn = sqlite3.connect(path)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    finally:
        conn.close()
    created = datetime.fromisoformat(meta["created"])
    updated = datetime.fromisoformat(meta["updated"])
    assert created.tzinfo is not None and updated >= created


def test_lock_file_names_the_holder_only_while_held(path: Path) -> None:
    lock = path.with_name(path.name + ".lock")
    with fresh(path):
        assert lock.read_text().strip() == str(os.getpid())
    assert lock.read_text() == ""


def test_relative_path_and_replacing_a_crashed_state_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", _CRASHER, "crawl.state"],
        capture_output=True,
        cwd=tmp_path,
        env=child_env(),
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL
    with fresh(Path("crawl.state")) as state:
        state.queued(START, 0, None)
        state.checkpoint()
    snap, decisions, _ = reload(Path("crawl.state"))
    assert snap.queued == [QueuedRow(START, 0, None)] and decisions == []


def test_a_failed_checkpoint_keeps_its_buffers(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.checkpoint()
        state.queued("https://example.com/a", 1, START)
        state.counter("pages", 1)
        blocker = sqlite3.connect(path, isolation_level=None, timeout=0)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the database
        state._conn.execute("PRAGMA busy_timeout = 0")  # type: ignore[union-attr]
        with pytest.raises(StateError, match="cannot write state file"):
            state.checkpoint()
        blocker.execute("ROLLBACK")
        blocker.close()
        assert state.pending == 2
        state.checkpoint()
    snap, _, _ = reload(path)
    assert [q.url for q in snap.queued] == [START, "https://example.com/a"]
    assert snap.counters == {"pages": 1}
