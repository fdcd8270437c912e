"""The history read ahead (crawler.shell.state_history): prior() by ranges of ids and
last_run() by chunks give exactly the rows a point query gives, in any order asked."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from crawler.core.page import PageResult
from crawler.shell import state_history, state_queue
from crawler.shell.state import CrawlState
from crawler.shell.state_history import UPCOMING_READ, WARM_CHUNK

START = "http://example.com/"
FP = "fp"


def _open(path: Path) -> CrawlState:
    return CrawlState.open(path, fingerprint=FP, start_url=START, resume=False)


def _history(path: Path, pages: int) -> list[str]:
    """A finished run that fetched every other URL of `pages` met (ids in between: none)."""
    urls = [f"{START}p{i}" for i in range(pages)]
    with _open(path) as state:
        for i, url in enumerate(urls):
            state.queued(url, 1, None)
            if i % 2 == 0:
                result = PageResult("text/html", targets=[urls[(i + 1) % pages]])
                state.page(url, None, etag=f'"e{i}"', modified=None, status=200,
                           reason="listed", result=result)  # fmt: skip
                state.published(url, i, i * 10, "header")
        state.finish()
    return urls


def _point(path: Path, url: str) -> tuple[object, ...] | None:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT h.etag, h.lastmod, h.source FROM history h JOIN urls u ON u.id = h.url"
            " WHERE u.url = ?",
            (url,),
        ).fetchone()
    finally:
        conn.close()


def test_prior_and_last_run_read_ahead_give_each_url_its_own_row(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    urls = _history(path, 700)
    expected = {url: _point(path, url) for url in urls}
    asked = urls[:]  # in order, as a breadth-first night mostly asks, then shuffled
    shuffled = urls[:]
    random.Random(1).shuffle(shuffled)
    with _open(path) as state:
        for order in (asked, shuffled, asked[::-1]):
            for url in order:
                prior = state.prior(url)
                row = expected[url]
                assert (prior.etag if prior else None) == (row[0] if row else None), url
        state.prior(f"{START}never-met")  # no id: no row, no read
        for chunk in (shuffled[:WARM_CHUNK], shuffled[WARM_CHUNK:]):
            state.warm_ids(list(map(state.url_ids().get, chunk)))  # as the publish warms
            for url in chunk:
                last = state.last_run(url)
                row = expected[url]
                got = None if last is None else (last.lastmod, last.source)
                assert got == (None if row is None else (row[1], row[2])), url
        assert state.last_run(urls[0]) is not None  # past the warmed: a point query


def test_prior_reads_the_rows_of_urls_queued_in_the_order_queued(tmp_path: Path) -> None:
    """The URLs of earlier runs queued tonight are read in the order queued, UPCOMING_READ
    a statement, whatever their ids; asked in another order, each still gets its own row
    (read again by id), and so does one asked twice."""
    path = tmp_path / "state.sqlite"
    urls = _history(path, 700)
    expected = {url: _point(path, url) for url in urls}
    order = urls[:]
    random.Random(2).shuffle(order)  # ids no guide: last night met them in another order
    with _open(path) as state:
        reads: list[str] = []
        state._open_conn().set_trace_callback(
            lambda sql: reads.append(sql) if "FROM history" in sql else None
        )
        for url in order[:500]:
            state.queued(url, 1, None)
        for url in order[:400]:  # as the frontier asks: in the order queued
            prior = state.prior(url)
            row = expected[url]
            assert (prior.etag if prior else None) == (row[0] if row else None), url
        assert len(reads) == -(-400 // UPCOMING_READ)
        state.queued(f"{START}new", 1, None)  # no row: nothing to read for it
        rest = order[400:]
        random.Random(3).shuffle(rest)  # asked out of order, some never queued, one twice
        for url in [*rest, order[0]]:
            prior = state.prior(url)
            row = expected[url]
            assert (prior.etag if prior else None) == (row[0] if row else None), url


@pytest.mark.interpreted
def test_a_queue_past_its_bound_is_read_by_ranges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past UPCOMING_MOST URLs queued ahead the order is no longer kept (memory), as soon
    as they are queued, whether prior() reads or not: every row still comes, by ranges of
    ids."""
    monkeypatch.setattr(state_history, "UPCOMING_MOST", 10)
    monkeypatch.setattr(state_queue, "UPCOMING_MOST", 10)
    path = tmp_path / "state.sqlite"
    urls = _history(path, 100)
    expected = {url: _point(path, url) for url in urls}
    with _open(path) as state:
        for url in urls:
            state.queued(url, 1, None)
        assert state._queue.upcoming is None
        for url in urls:
            prior = state.prior(url)
            row = expected[url]
            assert (prior.etag if prior else None) == (row[0] if row else None), url


def test_a_checkpoint_between_prior_and_its_links_costs_no_read_again(tmp_path: Path) -> None:
    """The links prior() read are a 304's when links_of() names them, across a checkpoint
    made while the page is in flight (a read of the history, not a buffer to write)."""
    path = tmp_path / "state.sqlite"
    urls = _history(path, 10)
    with _open(path) as state:
        for url in urls:
            state.queued(url, 1, None)
        prior = state.prior(urls[0])
        assert prior is not None
        reads: list[str] = []
        state._open_conn().set_trace_callback(
            lambda sql: reads.append(sql) if "FROM history" in sql else None
        )
        state.counter("fetched", 1)
        state.checkpoint()
        assert state.links_of(prior) == ([urls[1]], [])
        assert reads == []


@pytest.mark.interpreted
def test_rows_read_for_urls_never_asked_for_are_dropped_oldest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """URLs queued and never asked for (a limit, a stop) leave their rows read ahead: the
    oldest are dropped past the bound, and the rows asked for still come, each once read,
    without a read per ask."""
    monkeypatch.setattr(state_history, "_UPCOMING_KEPT", 300)
    path = tmp_path / "state.sqlite"
    urls = _history(path, 1400)
    expected = {url: _point(path, url) for url in urls}
    with _open(path) as state:
        reads: list[str] = []
        state._open_conn().set_trace_callback(
            lambda sql: reads.append(sql) if "FROM history" in sql else None
        )
        for url in urls:
            state.queued(url, 1, None)
        asked = urls[::5]
        for url in asked:
            prior = state.prior(url)
            row = expected[url]
            assert (prior.etag if prior else None) == (row[0] if row else None), url
            assert len(state._history._upcoming) <= 300 + UPCOMING_READ
        assert len(reads) <= -(-len(urls) // UPCOMING_READ)


def test_a_page_recorded_with_its_rows_blocks_is_dated_without_reading_its_row(
    tmp_path: Path,
) -> None:
    """The publish's last_run_of() gives what last_run() reads: for a page this run recorded
    with its row's own blocks (carried, or written with the same bytes) from the facts
    prior() read, without a read; for a page recorded with other blocks, not recorded, or
    whose row holds a source the store cannot keep, by reading its row, as before."""
    path = tmp_path / "state.sqlite"
    urls = [f"{START}p{i}" for i in range(40)]
    sources = ["header", "content", "none", None, ""]  # None: never published; "": unknown
    with _open(path) as state:
        for i, url in enumerate(urls):
            state.queued(url, 1, None)
            blocks = None if i % 7 == 0 else bytes([i, 1, 2, 3]) * 3
            result = PageResult("text/html", blocks=blocks)
            state.page(url, None, etag=f'"e{i}"', modified=None, status=200,
                       reason="listed", result=result)  # fmt: skip
            source = sources[i % len(sources)]
            if source is not None:
                state.published(url, None if i % 3 else i, None if i % 4 else 10 * i, source)
        state.finish()
    with _open(path) as state:
        expected = {url: state.last_run(url) for url in urls}
    with _open(path) as state:
        for url in urls:
            state.queued(url, 1, None)
        given: dict[str, bytes | None] = {}
        for i, url in enumerate(urls):
            prior = state.prior(url)
            assert prior is not None
            held = None if prior.blocks is None else bytes(bytearray(prior.blocks))  # a copy
            if i % 4 == 0:
                state.carry(url, prior)
                given[url] = held
            elif i % 4 in (1, 2):
                other = i % 4 == 2
                blocks = b"\x09" * 8 if other else held
                result = PageResult("text/html", blocks=blocks)
                state.page(url, prior, etag=prior.etag, modified=None, status=200,
                           reason="listed", result=result)  # fmt: skip
                given[url] = blocks
            else:  # not recorded tonight (a replayed listing): its blocks are the row's
                given[url] = held
        redone = {1: b"\x0a" * 8, 5: None, 8: b"\x0b" * 8}  # recorded again: other blocks, 404
        for i, blocks in redone.items():
            result = None if blocks is None else PageResult("text/html", blocks=blocks)
            state.page(urls[i], None, etag=None, modified=None, status=200 if blocks else 404,
                       reason="listed" if blocks else "broken", result=result)  # fmt: skip
            given[urls[i]] = blocks
        new = f"{START}new"  # an id past the history's largest
        state.queued(new, 1, None)
        state.page(new, None, etag=None, modified=None, status=200, reason="listed",
                   result=PageResult("text/html", blocks=b"\x0c" * 8))  # fmt: skip
        reads: list[str] = []
        state._open_conn().set_trace_callback(
            lambda sql: reads.append(sql) if "FROM history" in sql else None
        )
        ids = state.url_ids()
        state.warm_ids([ids.get(url) for url in urls])
        for i, url in enumerate(urls):
            if i % 2:
                assert state.last_run_of(url, given[url]) == expected[url], url
            else:  # the publish's, by the id it looked up (#26): the same, as few reads
                assert state.last_run_by(ids.get(url), url, given[url]) == expected[url], url
        assert len(reads) == 1  # the warm of those recorded otherwise, or unknown
        assert state.last_run_of(new, b"\x0c" * 8) is None
        kept = [
            i for i in range(40) if i % 4 in (0, 1) and sources[i % 5] != "" and i not in redone
        ]
        assert reads[0].split(" IN (")[1].count(",") + 1 == 40 - len(kept)
        assert state.last_run(urls[0]) == expected[urls[0]]  # the row itself: a read


def test_published_by_id_is_published_by_url(tmp_path: Path) -> None:
    """#26: the publish looks a listing's URL id up once and records its lastmod by it
    (published_by): the rows are those published() by URL writes, and a URL without an id
    (None) records nothing, as published() of a URL never interned."""
    written = {}
    for by_id in (False, True):
        path = tmp_path / f"{by_id}.sqlite"
        with _open(path) as state:
            urls = [f"{START}p{i}" for i in range(12)]
            for i, url in enumerate(urls):
                state.queued(url, 1, None)
                state.page(url, None, etag=f'"e{i}"', modified=None, status=200,
                           reason="listed", result=PageResult("text/html"))  # fmt: skip
            ids = state.url_ids()
            for i, url in enumerate([*urls, f"{START}never"]):
                facts = (None if i % 3 else i, None if i % 4 else 10 * i, "header")
                if by_id:
                    state.published_by(ids.get(url), *facts)
                else:
                    state.published(url, *facts)
            state.finish()
        conn = sqlite3.connect(path)
        try:
            written[by_id] = conn.execute(
                "SELECT u.url, h.changed, h.lastmod, h.source FROM history h"
                " JOIN urls u ON u.id = h.url ORDER BY u.url"
            ).fetchall()
        finally:
            conn.close()
    assert written[True] == written[False]
    assert len(written[False]) == 12 and any(row[2] is not None for row in written[False])
