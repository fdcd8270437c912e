"""crawler.shell.state: round trips, ordering, resume refusals, locking and crash safety."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crawler.core.report as report_module
import crawler.shell.state as state_module
import crawler.shell.state_queue as queue_module
from crawler.core.media import PageExtras, RawVideo
from crawler.core.report import DecisionRecord
from crawler.core.wire import pack
from crawler.errors import BusyError, SitemapCrawlerError
from crawler.shell import state_file
from crawler.shell.listings import Listing, from_micros, to_micros
from crawler.shell.state import (
    CrawlState,
    QueuedRow,
    SavedCrawl,
    StateError,
    StateWriteError,
)
from tests.procs import child_env

REPO = Path(__file__).resolve().parents[1]
START = "https://example.com/"
FP = "config-hash-1"


def fresh(path: Path, **kwargs: object) -> CrawlState:
    return CrawlState.open(path, fingerprint=FP, start_url=START, resume=False, **kwargs)


def resumed(path: Path, **kwargs: object) -> CrawlState:
    return CrawlState.open(path, fingerprint=FP, start_url=START, resume=True, **kwargs)


class EntryRow(NamedTuple):
    """What a listing puts in the sitemap."""

    loc: str
    lastmod: datetime | None
    changefreq: str | None
    priority: float | None


def entry_row(listing: Listing) -> EntryRow:
    return EntryRow(listing.loc, from_micros(listing.lastmod), listing.changefreq, listing.priority)


def listed(
    state: CrawlState,
    url: str,
    depth: int,
    referrer: str | None,
    entry: tuple[str, datetime | None, str | None, float | None],
    body: int | None = None,
) -> None:
    loc, lastmod, changefreq, priority = entry
    state.listed(
        Listing(url, loc, 200, "", depth, referrer, to_micros(lastmod), changefreq, priority, body)
    )


def reload_listings(
    path: Path, start_url: str = START, fingerprint: str = FP
) -> tuple[SavedCrawl, list[DecisionRecord], list[Listing]]:
    """Everything in the file, finished or not, with the listings as they were recorded."""
    with CrawlState.open(
        path, fingerprint=fingerprint, start_url=start_url, resume=True, reopen_finished=True
    ) as state:
        snap = state.load()
        return snap, list(snap.decisions), list(snap.listings)


def reload(
    path: Path, start_url: str = START, fingerprint: str = FP
) -> tuple[SavedCrawl, list[DecisionRecord], list[EntryRow]]:
    """Like reload_listings, with each listing reduced to the sitemap entry it makes."""
    snap, decisions, listings = reload_listings(path, start_url, fingerprint)
    return snap, decisions, [entry_row(x) for x in listings]


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
        listed(
            state,
            START,
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
        )
        state.decided("https://other.example/x", None, "out_of_scope", "outside /", 1, START)
        listed(
            state,
            "https://example.com/ünïcödé/日本?q=ä",
            1,
            START,
            (
                "https://example.com/%C3%BCn%C3%AFc%C3%B6d%C3%A9/%E6%97%A5%E6%9C%AC?q=%C3%A4",
                datetime(2023, 12, 31, 23, 0, tzinfo=paris),
                None,
                None,
            ),
        )
        state.referred("https://example.com/b", "https://example.com/ünïcödé/日本?q=ä")
        state.body(0, START)
        state.body(-(2**63), "https://example.com/ünïcödé/日本?q=ä")
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
    # a listed page has its listing, not a decision: that is made when the crawl publishes
    assert decisions == [
        DecisionRecord("https://example.com/b", 301, "redirect", "https://example.com/ç", 1, START),
        DecisionRecord("https://other.example/x", None, "out_of_scope", "outside /", 1, START),
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
    assert snap.bodies == {0: START, -(2**63): "https://example.com/ünïcödé/日本?q=ä"}
    assert snap.referrers == {"https://example.com/b": ["https://example.com/ünïcödé/日本?q=ä"]}
    assert snap.counters == {"pages": 3, "bytes": 12_345_678_901}
    assert snap.finished is False


def test_listed_round_trips_every_listing_field(path: Path) -> None:
    unicode_url = "https://example.com/ünïcödé/日本?q=ä"
    listings = [
        # the loc is the crawled URL: stored once, read back the same
        Listing(START, START, 200, "", 0, None, 0, "always", 1.0, 0),
        # a public loc for a crawl-space URL, a retry detail, the extreme body keys
        Listing(
            "http://127.0.0.1:8080/a",
            "https://www.example.com/a",
            203,
            "after 2 retries (HTTP 503)",
            3,
            START,
            to_micros(datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)),
            "weekly",
            0.1,
            -(2**63),
            # the page's images, alternates, videos: packed, kept for a resumed publish
            pack(
                PageExtras(
                    images=("https://www.example.com/i.png",),
                    alternates=(("de", "https://www.example.com/de/a"),),
                    videos=(RawVideo("https://www.example.com/t.jpg", "T", "D", None, "p", 60),),
                    published="2024-05-01T12:00:00Z",
                )
            ),
        ),
        Listing(
            unicode_url,
            "https://example.com/%C3%BCn%C3%AFc%C3%B6d%C3%A9/%E6%97%A5%E6%9C%AC?q=%C3%A4",
            200,
            "",
            1,
            "https://example.com/ü/référent",
            -1,  # a microsecond before the epoch
            None,
            0.0,
            2**63 - 1,
        ),
        # a page that never competes with twins (not HTML): no body key, nothing optional
        Listing(
            "https://example.com/doc.pdf",
            "https://example.com/doc.pdf",
            200,
            "",
            2,
            unicode_url,
            None,
            None,
            None,
            None,
        ),
        Listing(
            "https://example.com/neg",
            "https://example.com/neg",
            200,
            "",
            1,
            None,
            None,
            None,
            None,
            -1,
        ),
    ]
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.queued(unicode_url, 1, START)
        for listing in listings[:2]:
            state.listed(listing)
        state.checkpoint()
        for listing in listings[2:]:
            state.listed(listing)
        state.checkpoint()
    snap, decisions, got = reload_listings(path)
    assert got == listings
    assert all(type(x) is Listing for x in got)
    assert all(type(x.body) is int for x in got if x.body is not None)
    assert decisions == []
    assert snap.queued == []
    # listed URLs are seen; their referrers are stored but, never met themselves, are not
    assert set(snap.seen) == {x.url for x in listings}
    assert "https://example.com/ü/référent" not in snap.seen
    assert [entry_row(x) for x in got][1] == EntryRow(
        "https://www.example.com/a",
        datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC),
        "weekly",
        0.1,
    )


def _by_name(record: object) -> dict[str, object]:
    """A record's fields by name, for the state's calls whose parameters are named alike."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}  # type: ignore[arg-type]


def test_decision_records_and_queued_rows_round_trip_field_by_field(path: Path) -> None:
    unicode_url = "https://example.com/ünïcödé/日本?q=ä"
    decisions = [
        DecisionRecord("https://example.com/b", 301, "redirect", unicode_url, 1, START),
        DecisionRecord("https://other.example/x", None, "out_of_scope", "", 0, None),
        DecisionRecord(unicode_url, 599, "http_error", "HTTP 599 after 3 retries", 2**31, START),
        DecisionRecord("https://example.com/c", 200, "duplicate_of", START, 7, unicode_url),
    ]
    queued = [
        QueuedRow(START, 0, None),
        QueuedRow("https://example.com/q", 2**31, unicode_url),
        QueuedRow(unicode_url + "/q", 1, "https://example.com/never-met"),
    ]
    with fresh(path) as state:
        for row in queued:
            state.queued(**_by_name(row))  # type: ignore[arg-type]
        for record in decisions[:2]:
            state.decided(**_by_name(record))  # type: ignore[arg-type]
        state.checkpoint()
        for record in decisions[2:]:
            state.decided(**_by_name(record))  # type: ignore[arg-type]
        state.checkpoint()
    snap, got, _ = reload(path)
    assert [type(x) for x in got] == [DecisionRecord] * len(decisions)
    assert [type(x) for x in snap.queued] == [QueuedRow] * len(queued)
    assert [_by_name(x) for x in got] == [_by_name(x) for x in decisions]
    assert [_by_name(x) for x in snap.queued] == [_by_name(x) for x in queued]
    assert all(type(x.status) is int for x in got if x.status is not None)


def _queue_module_copy(
    monkeypatch: pytest.MonkeyPatch, replace: tuple[str, str] | None = None
) -> object:
    """A fresh crawler.shell.state_queue (the records' SQL), as a separate module, reading
    crawler.core.report as it is now (patched or not), its source edited by `replace`: the
    state as a developer would have it after changing a record. CrawlState uses it."""
    source = Path(queue_module.__file__).read_text(encoding="utf-8")
    if replace is not None:
        assert source.count(replace[0]) == 1, f"{replace[0]!r} is no longer in state_queue.py"
        source = source.replace(*replace)
    name = "crawler._state_queue_under_test"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__file__ = queue_module.__file__
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up
    exec(compile(source, queue_module.__file__, "exec"), module.__dict__)
    monkeypatch.setattr(state_module, "ResumeQueue", module.ResumeQueue)
    return module


@pytest.mark.interpreted
def test_a_decision_field_without_a_column_fails_loudly(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows are written and read by field name: a field added to DecisionRecord that
    decided() does not write fails at import, and one the decisions table lacks fails the
    load, never a value in the next column."""

    @dataclasses.dataclass(slots=True)  # as DecisionRecord: not frozen
    class Extended(DecisionRecord):
        extra: int = 0

    with fresh(path) as state:
        state.decided("https://example.com/gone", 404, "http_error", "HTTP 404", 1, START)
        state.checkpoint()
    monkeypatch.setattr(report_module, "DecisionRecord", Extended)
    with pytest.raises(TypeError, match="extra"):
        _queue_module_copy(monkeypatch)
    written = '_DECIDED: Final = ("url", "status", "reason", "detail", "depth", "referrer")'
    copy = _queue_module_copy(monkeypatch, (written, written.replace(")", ', "extra")')))
    assert "d.extra" in copy._DECISION_SELECT  # type: ignore[attr-defined]
    assert "extra" in copy._DECISION_INSERT  # type: ignore[attr-defined]
    with (
        CrawlState.open(path, fingerprint=FP, start_url=START, resume=True) as state,
        pytest.raises(SitemapCrawlerError, match=r"no such column: d\.extra"),
    ):
        list(state.load().decisions)


@pytest.mark.interpreted
def test_a_queued_row_field_without_a_column_fails_loudly(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QueuedRow is read from the urls columns named by its fields: one the table lacks
    fails the load instead of coming back as a default or another column's value."""
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.checkpoint()
    copy = _queue_module_copy(
        monkeypatch,
        ("    depth: int\n    referrer: str | None\n\n\n#: load() reads",
         "    depth: int\n    referrer: str | None\n    extra: int = 0\n\n\n#: load() reads"),
    )  # fmt: skip
    assert [f.name for f in dataclasses.fields(copy.QueuedRow)] == [  # type: ignore[attr-defined]
        "url",
        "depth",
        "referrer",
        "extra",
    ]
    crawl_state = CrawlState
    with (
        crawl_state.open(path, fingerprint=FP, start_url=START, resume=True) as state,
        pytest.raises(SitemapCrawlerError, match="no such column: extra"),
    ):
        state.load()


def test_the_state_names_every_field_of_its_records(path: Path) -> None:
    """The SQL is generated from the records' fields, and decided() buffers its values in
    the order of the INSERT's columns."""
    fields = [f.name for f in dataclasses.fields(DecisionRecord)]
    insert = queue_module._DECISION_INSERT
    assert insert.startswith(f"INSERT INTO decisions ({', '.join(fields)}) VALUES")
    assert queue_module._DECISION_SELECT.count(",") == len(fields) - 1
    queued = [f.name for f in dataclasses.fields(QueuedRow)]
    assert queue_module._URLS_SELECT.endswith(f"{', '.join(queued)} FROM urls")
    with fresh(path) as state:
        state.queued("https://example.com/r", 1, None)
        state.decided(
            "https://example.com/a", 404, "http_error", "HTTP 404", 3, "https://example.com/r"
        )
        (buffered,) = state._queue._decisions
    assert dict(zip(fields, buffered, strict=True)) == {
        "url": 2,
        "status": 404,
        "reason": "http_error",
        "detail": "HTTP 404",
        "depth": 3,
        "referrer": 1,
    }


def test_unlisted_removes_the_listing_and_the_url_stays_done(path: Path) -> None:
    a, b, c, d = (f"https://example.com/{n}" for n in "abcd")
    with fresh(path) as state:
        for url in (a, b, c, d):
            state.queued(url, 1, START)
        for url in (a, b, c):
            listed(state, url, 1, START, (url, None, None, None), body=7)
        state.checkpoint()
        # a listing on disk loses to a twin, and gets its decision
        state.unlisted(b)
        state.decided(b, 200, "duplicate_of", a, 1, START)
        # one listed and unlisted within a single checkpoint
        listed(state, d, 1, START, (d, None, None, None), body=7)
        state.unlisted(d)
        state.decided(d, 200, "duplicate_of", a, 1, START)
        state.checkpoint()
        # recorded but never checkpointed: lost, so c keeps its listing
        state.unlisted(c)
    snap, decisions, listings = reload_listings(path)
    assert [x.url for x in listings] == [a, c]
    assert decisions == [
        DecisionRecord(b, 200, "duplicate_of", a, 1, START),
        DecisionRecord(d, 200, "duplicate_of", a, 1, START),
    ]
    assert snap.queued == []  # unlisting does not put a URL back in the queue
    assert set(snap.seen) == {a, b, c, d}
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM listings").fetchone() == (2,)
    finally:
        conn.close()


def test_referred_round_trips_in_order(path: Path) -> None:
    broken = "https://example.com/gone/ü"
    refs = [f"https://example.com/p{i}/é" for i in range(5)]
    with fresh(path) as state:
        state.queued(broken, 1, START)
        state.referred(broken, refs[0])
        state.referred(START, refs[1])
        state.referred(broken, refs[2])
        state.checkpoint()
        state.referred(broken, refs[1])
        state.referred(broken, refs[2])  # a repeat is kept: the journal decides what repeats
        state.checkpoint()
    with resumed(path) as state:
        assert state.load().referrers == {
            broken: [refs[0], refs[2], refs[1], refs[2]],
            START: [refs[1]],
        }
        state.referred(broken, refs[3])
        state.checkpoint()
        state.referred(broken, refs[4])  # never checkpointed: lost
    snap, _, _ = reload(path)
    assert snap.referrers == {
        broken: [refs[0], refs[2], refs[1], refs[2], refs[3]],
        START: [refs[1]],
    }
    # a referrer, or a URL only referred to, is stored without being taken as met
    assert snap.seen == [broken]


def test_queued_rows_keep_depth_and_referrer(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.queued("https://example.com/a", 1, START)
        state.checkpoint()
    snap, _, _ = reload(path)
    assert snap.queued == [QueuedRow(START, 0, None), QueuedRow("https://example.com/a", 1, START)]
    assert all(type(row) is QueuedRow for row in snap.queued)


def test_priority_and_lastmod_edge_values(path: Path) -> None:
    old = datetime(1970, 1, 1, tzinfo=UTC) - timedelta(microseconds=1)
    far = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    with fresh(path) as state:
        listed(state, "https://example.com/1", 1, None, (START, old, None, 0.0))
        listed(state, "https://example.com/2", 1, None, (START, far, None, 0.1))
        state.checkpoint()
    _, _, entries = reload(path)
    assert [(e.lastmod, e.priority) for e in entries] == [(old, 0.0), (far, 0.1)]


def test_naive_lastmod_is_rejected_where_it_is_recorded(path: Path) -> None:
    with fresh(path) as state, pytest.raises(ValueError, match="timezone-aware"):
        listed(state, START, 0, None, (START, datetime(2024, 1, 1), None, None))


# -- order, lowering, decisions ---------------------------------------------------------------


def test_queue_and_entry_order_survive_many_checkpoints(path: Path) -> None:
    urls = [f"https://example.com/p{i}" for i in range(500)]
    with fresh(path) as state:
        for i, url in enumerate(urls):
            state.queued(url, 1 + i % 3, START)
            if i % 7 == 0:
                state.checkpoint()
        # decide every third URL, in an order unrelated to queue order, listing every other
        decided = urls[::3][::-1]
        for i, url in enumerate(decided):
            if i % 2:
                state.decided(url, 200, "noindex", "", 1, START)
            else:
                listed(state, url, 1, START, (url, None, None, None))
            if len(url) % 2:
                state.checkpoint()
        state.checkpoint()
    snap, decisions, entries = reload(path)
    assert [q.url for q in snap.queued] == [u for u in urls if u not in set(decided)]
    assert [q.depth for q in snap.queued] == [
        1 + i % 3 for i, u in enumerate(urls) if u not in set(decided)
    ]
    assert [e.loc for e in entries] == decided[::2]
    assert [d.url for d in decisions] == decided[1::2]


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


def test_decided_and_listed_urls_leave_the_queue_but_stay_seen(path: Path) -> None:
    a, b = "https://example.com/a", "https://example.com/b"
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.queued(a, 1, START)
        state.queued(b, 1, START)
        state.checkpoint()
        listed(state, START, 0, None, (START, None, None, None))
        state.decided(b, 404, "http_error", "HTTP 404", 1, START)
        state.checkpoint()
    snap, decisions, entries = reload(path)
    assert snap.queued == [QueuedRow(a, 1, START)]
    assert sorted(snap.seen) == [START, a, b]
    assert decisions == [DecisionRecord(b, 404, "http_error", "HTTP 404", 1, START)]
    assert entries == [EntryRow(START, None, None, None)]


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
        listed(state, crawl_url, 1, None, (public, None, "daily", 0.8))
        state.checkpoint()
    _, decisions, listings = reload_listings(path)
    assert decisions == []
    assert [(x.url, x.loc) for x in listings] == [(crawl_url, public)]
    assert [entry_row(x) for x in listings] == [EntryRow(public, None, "daily", 0.8)]


def test_first_body_wins(path: Path) -> None:
    digest = 0x6464_6464_6464_6464
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
    monkeypatch.setattr(queue_module, "_CHUNK", 7)
    urls = [f"https://example.com/{i}" for i in range(100)]
    gone = [f"https://example.com/gone/{i}" for i in range(100)]
    with fresh(path) as state:
        for url, lost in zip(urls, gone, strict=True):
            listed(state, url, 1, None, (url, None, None, None))
            state.decided(lost, 404, "http_error", "HTTP 404", 1, url)
        state.checkpoint()
    _, decisions, entries = reload(path)
    assert [d.url for d in decisions] == gone
    assert [d.referrer for d in decisions] == urls
    assert [e.loc for e in entries] == urls


def test_streams_ignore_records_checkpointed_while_replaying(path: Path) -> None:
    with fresh(path) as state:
        listed(state, START, 0, None, (START, None, None, None))
        state.decided("https://example.com/old", 404, "http_error", "HTTP 404", 1, START)
        state.checkpoint()
    with resumed(path) as state:
        snap = state.load()
        listed(state, "https://example.com/new", 1, START, ("x", None, None, 1))
        state.decided("https://example.com/gone", 404, "http_error", "HTTP 404", 1, START)
        state.checkpoint()
        assert [d.url for d in snap.decisions] == ["https://example.com/old"]
        assert [x.loc for x in snap.listings] == [START]


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


def test_finish_marks_the_crawl_complete_and_it_can_be_reopened(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        listed(state, START, 0, None, (START, None, None, None))
        state.finish()
    snap, _, entries = reload(path)
    assert snap.finished is True
    assert snap.queued == []
    assert [e.loc for e in entries] == [START]


def test_new_work_after_reopening_a_finished_crawl_clears_finished(path: Path) -> None:
    with fresh(path) as state:
        state.finish()
    with resumed(path, reopen_finished=True) as state:
        assert state.load().finished is True
        state.checkpoint()  # nothing buffered: still finished
    assert reload(path)[0].finished is True
    with pytest.raises(StateError, match="nothing to resume"):
        resumed(path)
    with resumed(path, reopen_finished=True) as state:
        state.load()
        state.queued("https://example.com/more", 1, START)
        state.checkpoint()
    assert reload(path)[0].finished is False
    resumed(path).close()  # running again, so an ordinary resume takes it


def test_resume_refuses_a_finished_crawl_unless_reopened(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        listed(state, START, 0, None, (START, None, None, None))
        state.finish()
    before = path.read_bytes()
    with pytest.raises(StateError) as err:
        resumed(path)
    message = str(err.value)
    assert type(err.value) is StateError and err.value.exit_code == 2
    assert "finished and was published" in message and "nothing to resume" in message
    assert str(path) in message
    assert "\n" not in message
    assert path.read_bytes() == before  # refused without a write
    # the refusal released the lock: the file can be reopened at once, on request
    with resumed(path, reopen_finished=True) as state:
        snap = state.load()
        assert snap.finished is True
        assert [x.url for x in snap.listings] == [START]
    # and a fresh crawl may still replace it
    with fresh(path) as state:
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
        listed(state, START, 0, None, (START, None, None, None))
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
    assert [d.url for d in decisions] == ["https://example.com/a"]
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


def test_state_error_is_a_usage_error_and_a_write_error_is_not() -> None:
    assert issubclass(StateError, SitemapCrawlerError)
    assert StateError.exit_code == 2
    assert issubclass(StateWriteError, StateError)
    assert StateWriteError.exit_code == 5


def test_file_is_wal_and_tagged(path: Path) -> None:
    with fresh(path):
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x534D4353
            meta = dict(conn.execute("SELECT key, value FROM meta"))
        finally:
            conn.close()
    assert meta["fingerprint"] == f"{FP}+{state_file.RECORD_FORMAT}"  # the record kept: 2
    assert meta["start_url"] == START
    assert meta["schema_version"] == state_module.SCHEMA_VERSION
    assert {"created", "updated"} <= meta.keys()


def test_urls_are_stored_once(path: Path) -> None:
    url = "https://example.com/" + "x" * 200
    with fresh(path) as state:
        state.queued(url, 1, START)
        listed(state, url, 1, START, (url, None, None, None))
        state.body(0x6262_6262_6262_6262, url)
        state.queued("https://example.com/child", 2, url)
        state.checkpoint()
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("SELECT count(*) FROM urls WHERE url = ?", (url,)).fetchone() == (
                1,
            )
            # a listing whose loc is its URL does not store the string again
            assert conn.execute("SELECT count(*) FROM listings WHERE loc IS NULL").fetchone() == (
                1,
            )
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


def test_a_referrers_row_naming_a_url_without_its_row_is_left_out(path: Path) -> None:
    """A damaged state file (a URL's row gone, its referrers' rows kept) resumes with the
    referrers it can still name: not a None among the URLs, which the compiled journal
    would refuse as a TypeError (#26)."""
    gone, kept = "https://example.com/gone", "https://example.com/kept"
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.queued("https://example.com/b", 1, START)
        state.referred("https://example.com/b", gone)
        state.referred("https://example.com/b", kept)
        state.checkpoint()
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM urls WHERE url = ?", (gone,))
    conn.commit()
    conn.close()
    snap, _, _ = reload(path)
    assert snap.referrers == {"https://example.com/b": [kept]}


@pytest.mark.parametrize("table", ["listings", "referrers", "decisions"])
def test_resume_refuses_a_state_file_with_missing_tables(path: Path, table: str) -> None:
    fresh(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"DROP TABLE {table}")
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


def test_a_missing_folder_is_refused_not_made(tmp_path: Path) -> None:
    """Review-user #8: a typo in --state is not a folder to make (the CLI says so first)."""
    path = tmp_path / "a" / "b" / "crawl.state"
    with pytest.raises(StateError, match="no folder"):
        fresh(path)
    assert sorted(tmp_path.iterdir()) == []


def test_refusals_release_the_lock(path: Path) -> None:
    fresh(path).close()
    with pytest.raises(StateError):
        CrawlState.open(path, fingerprint="other", start_url=START, resume=True)
    resumed(path).close()


def test_second_open_in_the_same_process_is_refused(path: Path) -> None:
    with fresh(path), pytest.raises(BusyError, match="in use by another running crawl"):
        resumed(path)
    resumed(path).close()


_HOLDER = """
import sys
from pathlib import Path
from crawler.shell.state import CrawlState
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
            BusyError, match=rf"in use by another running crawl \(pid {holder.pid}\)"
        ):
            resumed(path)
        with pytest.raises(BusyError, match="in use"):
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
from crawler.shell.listings import Listing, to_micros
from crawler.shell.state import CrawlState

state = CrawlState.open(Path(sys.argv[1]), fingerprint="fp", start_url="https://ex.com/",
                        resume=False)
urls = [f"https://ex.com/p{i}/é" for i in range(3000)]
state.queued("https://ex.com/", 0, None)
state.listed(Listing("https://ex.com/", "https://ex.com/", 200, "", 0, None,
                     to_micros(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)), "daily", 0.9, -1))
for url in urls:
    state.queued(url, 1, "https://ex.com/")
state.body(0x0101_0101_0101_0101, "https://ex.com/")
state.counter("pages", 1)
state.checkpoint()
# Pages 0..9 were fetched and decided, with their links, in checkpointed batches ...
for i in range(10):
    state.listed(Listing(urls[i], urls[i], 200, "", 1, "https://ex.com/", None, None, None, i))
    state.queued(f"https://ex.com/p{i}/child", 2, urls[i])
    state.decided(f"https://other.ex/{i}", None, "out_of_scope", "", 2, urls[i])
    state.referred(urls[20], urls[i])
    state.counter("pages", 2 + i)
    state.checkpoint()
# ... then more work is recorded but never checkpointed: pages 10..2999 are in flight.
for i in range(10, 3000):
    state.decided(urls[i], 200, "noindex", "", 1, "https://ex.com/")
    state.queued(f"https://ex.com/p{i}/child", 2, urls[i])
    state.referred(urls[20], urls[i])
    state.body(i, urls[i])
state.unlisted(urls[0])
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
        listings = list(snap.listings)
        # the crawl goes on after the crash, and its next checkpoint is sound
        listed(st, urls[10], 1, "https://ex.com/", (urls[10], None, None, None))
        st.decided(urls[11], 200, "noindex", "", 1, "https://ex.com/")
        st.checkpoint()

    assert snap.queued == [QueuedRow(u, 1, "https://ex.com/") for u in urls[10:]] + [
        QueuedRow(f"https://ex.com/p{i}/child", 2, urls[i]) for i in range(10)
    ]
    assert len(snap.seen) == 1 + 3000 + 10 + 10
    assert decisions == [
        DecisionRecord(f"https://other.ex/{i}", None, "out_of_scope", "", 2, urls[i])
        for i in range(10)
    ]
    assert listings == [
        Listing(
            "https://ex.com/",
            "https://ex.com/",
            200,
            "",
            0,
            None,
            to_micros(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
            "daily",
            0.9,
            -1,
        ),
        *(
            Listing(u, u, 200, "", 1, "https://ex.com/", None, None, None, i)
            for i, u in enumerate(urls[:10])
        ),
    ]
    assert snap.referrers == {urls[20]: urls[:10]}
    assert snap.bodies == {0x0101_0101_0101_0101: "https://ex.com/"}
    assert snap.counters == {"pages": 11}

    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()
    _, decisions, listings = reload_listings(path, "https://ex.com/", "fp")
    assert decisions[-1].url == urls[11]
    assert listings[-1].url == urls[10]


# -- model-based property ---------------------------------------------------------------------

_URLS = [f"https://example.com/{name}" for name in ("a", "b", "c", "d", "é", "f/g", "h?i=1")]
_op = st.one_of(
    st.tuples(st.just("queued"), st.sampled_from(_URLS), st.integers(0, 5), st.sampled_from(_URLS)),
    st.tuples(st.just("lowered"), st.sampled_from(_URLS), st.integers(0, 5)),
    st.tuples(st.just("decided"), st.sampled_from(_URLS), st.sampled_from([None, 200, 404])),
    st.tuples(
        st.just("listed"),
        st.sampled_from(_URLS),
        st.booleans(),  # listed under another loc
        st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),  # body key
        st.one_of(st.none(), st.integers(-(2**62), 2**62)),  # lastmod
    ),
    st.tuples(st.just("unlisted"), st.sampled_from(_URLS)),
    st.tuples(st.just("referred"), st.sampled_from(_URLS), st.sampled_from(_URLS)),
    st.tuples(st.just("body"), st.integers(-(2**63), 2**63 - 1), st.sampled_from(_URLS)),
    st.tuples(st.just("counter"), st.sampled_from(["pages", "bytes"]), st.integers(0, 2**40)),
    st.just(("checkpoint",)),
)


class _Model:
    """What the state must give back: the frontier's and the journal's rules, applied in
    call order."""

    def __init__(self) -> None:
        self.queue: dict[str, tuple[int, str | None, int]] = {}  # url -> depth, ref, order
        self.done: set[str] = set()
        self.decisions: list[DecisionRecord] = []
        self.listings: list[Listing] = []
        self.referrers: dict[str, list[str]] = {}
        self.bodies: dict[int, str] = {}
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
            _, url, status = op
            if url in self.done:
                return  # a URL is judged once
            self.queue.pop(url, None)
            self.done.add(url)
            self.decisions.append(DecisionRecord(url, status, "r", "", 1, None))
            state.decided(url, status, "r", "", 1, None)
        elif kind == "listed":
            _, url, moved, body, lastmod = op
            if url in self.done:
                return
            depth = self.queue.pop(url, (2, None, 0))[0]
            self.done.add(url)
            loc = f"{url}#public" if moved else url
            listing = Listing(url, loc, 200, "", depth, _URLS[0], lastmod, "daily", 0.5, body)
            self.listings.append(listing)
            state.listed(listing)
        elif kind == "unlisted":
            # a listing lost to a twin: it is unlisted, then gets its decision (the journal)
            _, url = op
            lost = [x for x in self.listings if x.url == url]
            if not lost:
                return
            (listing,) = lost
            self.listings.remove(listing)
            self.decisions.append(
                DecisionRecord(url, 200, "duplicate_of", _URLS[0], listing.depth, None)
            )
            state.unlisted(url)
            state.decided(url, 200, "duplicate_of", _URLS[0], listing.depth, None)
        elif kind == "referred":
            _, url, ref = op
            self.referrers.setdefault(url, []).append(ref)
            state.referred(url, ref)
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
            list(self.listings),
            {url: list(refs) for url, refs in self.referrers.items()},
            dict(self.bodies),
            dict(self.counters),
        )


@settings(max_examples=60)
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
    snap, decisions, listings = reload_listings(path)
    assert len(snap.seen) == len(set(snap.seen))
    return (
        snap.queued,
        set(snap.seen),
        decisions,
        listings,
        snap.referrers,
        snap.bodies,
        snap.counters,
    )


def _rebuild(snapshot: tuple[object, ...]) -> _Model:
    queued, seen, decisions, listings, referrers, bodies, counters = snapshot
    model = _Model()
    for row in queued:  # type: ignore[attr-defined]
        model.order += 1
        model.queue[row.url] = (row.depth, row.referrer, model.order)
    model.done = set(seen) - set(model.queue)  # type: ignore[call-overload]
    model.decisions = list(decisions)  # type: ignore[call-overload]
    model.listings = list(listings)  # type: ignore[call-overload]
    model.referrers = {url: list(refs) for url, refs in referrers.items()}  # type: ignore[attr-defined]
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


_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from crawler.shell.state import CrawlState, StateWriteError

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
path = Path(sys.argv[1])
state = CrawlState.open(path, fingerprint="fp", start_url="https://ex.com/", resume=False)
state.queued("https://ex.com/", 0, None)
state.checkpoint()
# The disk fills up: no file of this process may grow past what is already written.
biggest = max(p.stat().st_size for p in path.parent.iterdir())
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (biggest, hard))
for i in range(5000):
    state.queued(f"https://ex.com/{i}/" + "x" * 200, 1, "https://ex.com/")
try:
    state.checkpoint()
except StateWriteError as exc:
    print(type(exc).__name__, exc.exit_code, state.pending, exc, sep="|", flush=True)
else:
    print("checkpoint succeeded", flush=True)
    sys.exit(1)
# Space is freed: the same buffers are written by the next checkpoint.
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
state.checkpoint()
print("pending", state.pending, flush=True)
state.close()
"""


def test_a_checkpoint_on_a_full_disk_raises_state_write_error(path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    failure, after = done.stdout.splitlines()
    name, exit_code, pending, message = failure.split("|")
    assert (name, exit_code, pending) == ("StateWriteError", "5", "5000")
    assert message.startswith(f"cannot write state file {path}: ")
    assert after == "pending 0"
    snap, _, _ = reload(path, "https://ex.com/", "fp")
    assert len(snap.queued) == 5001
    assert snap.queued[-1].url == "https://ex.com/4999/" + "x" * 200
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def test_a_failed_checkpoint_keeps_its_buffers(path: Path) -> None:
    with fresh(path) as state:
        state.queued(START, 0, None)
        state.checkpoint()
        state.queued("https://example.com/a", 1, START)
        state.counter("pages", 1)
        blocker = sqlite3.connect(path, isolation_level=None, timeout=0)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the database
        state._conn.execute("PRAGMA busy_timeout = 0")  # type: ignore[union-attr]
        with pytest.raises(StateWriteError, match="cannot write state file") as err:
            state.checkpoint()
        assert err.value.exit_code == 5
        blocker.execute("ROLLBACK")
        blocker.close()
        assert state.pending == 2
        state.checkpoint()
    snap, _, _ = reload(path)
    assert [q.url for q in snap.queued] == [START, "https://example.com/a"]
    assert snap.counters == {"pages": 1}


@settings(max_examples=40, deadline=None)
@given(
    queued=st.lists(st.integers(0, 7), unique=True, max_size=8),
    pages=st.lists(
        st.tuples(st.lists(st.integers(0, 9), max_size=6), st.integers(0, 11)), max_size=8
    ),
)
def test_a_page_s_referrers_kept_at_once_are_the_rows_and_ids_of_one_at_a_time(
    tmp_path_factory: pytest.TempPathFactory,
    queued: list[int],
    pages: list[tuple[list[int], int]],
) -> None:
    """#26: referred_by (a page's early referrers in one call) writes the rows referred
    writes one call each, in order, and gives the same ids to URLs and referrers met for the
    first time (a URL never queued, 8 and 9 here, takes referred's own path), so that a
    state written either way is the same file to read."""
    urls = [f"https://example.com/u{i}/é" for i in range(10)]
    refs = [f"https://example.com/r{i}" for i in range(12)]
    folder = tmp_path_factory.mktemp("referred_by")
    tables = []
    for at_once in (False, True):
        path = folder / f"{at_once}.db"
        with fresh(path) as state:
            for i in queued:
                state.queued(urls[i], 1, START)
            for linked, referrer in pages:
                if at_once:
                    state.referred_by([urls[i] for i in linked], refs[referrer])
                else:
                    for i in linked:
                        state.referred(urls[i], refs[referrer])
            state.checkpoint()
        conn = sqlite3.connect(path)
        try:
            tables.append(
                (
                    conn.execute("SELECT id, url, state FROM urls ORDER BY id").fetchall(),
                    conn.execute("SELECT seq, url, referrer FROM referrers").fetchall(),
                )
            )
        finally:
            conn.close()
    assert tables[1] == tables[0]


def test_the_follow_log_is_read_back_by_its_run_and_one_of_another_shape_is_dropped(
    path: Path,
) -> None:
    """#26: the rows a night with a history checkpoints (crawler.shell.state_follows) are
    read back by a resume of that run only; a follows table of another shape (a development
    build's) is dropped and made again when the file is opened, never a failed checkpoint."""
    from crawler.shell.state_follows import FollowRow

    with fresh(path) as state:
        others = '[["https://example.com/é", 0, "r"]]'
        row = FollowRow(state.run_started, b"\x01\x00\x00\x00", b"", b"", others)
        state.log_follows(row)
        state.checkpoint()
    with resumed(path) as state:
        assert state.follows() == [row]
        state.log_follows(FollowRow(state.run_started + 1, b"", b"", b"", "[]"))
        state.checkpoint()
        assert state.follows() == [row]  # another run's row is not read
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE follows")
        conn.execute("CREATE TABLE follows (seq INTEGER PRIMARY KEY, pages BLOB, others TEXT)")
    with resumed(path) as state:
        assert state.follows() == []
        state.log_follows(row)
        state.checkpoint()
        assert state.follows() == [row]
