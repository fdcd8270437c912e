"""The history read ahead (crawler.shell.state_history): prior() by ranges of ids and
last_run() by chunks give exactly the rows a point query gives, in any order asked."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from crawler.core.page import PageResult
from crawler.shell.state import CrawlState
from crawler.shell.state_history import WARM_CHUNK

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
            state.warm(chunk)
            for url in chunk:
                last = state.last_run(url)
                row = expected[url]
                got = None if last is None else (last.lastmod, last.source)
                assert got == (None if row is None else (row[1], row[2])), url
        assert state.last_run(urls[0]) is not None  # past the warmed: a point query
