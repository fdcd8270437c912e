"""The engine's three drivers over the in-memory transport (tests/memory.py): `run` crawls and
publishes, `check` judges given URLs for the audit, `judge` judges one URL for `explain`.
Each composes the same loop and page judge (issue #22); and the loop's stop grace."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from crawler.config import build
from crawler.core.frontier import Frontier
from crawler.core.report import Tally
from crawler.shell import eventloop
from crawler.shell.engine import Crawl
from crawler.shell.explain import explain
from crawler.shell.loop import CrawlLoop
from crawler.shell.throttle import Throttle
from tests.memory import Answer, MemoryTransport, crawl
from tests.sites import html

SITE = "http://site.test/"
PAGES: dict[str, Answer | str] = {
    SITE: html("/a", "/b", "/gone"),
    SITE + "a": html("/a/deeper", body="<p>a</p>"),
    SITE + "a/deeper": html(body="<p>deeper</p>"),
    SITE + "b": Answer(html(body="<p>b</p>"), headers={"Content-Type": "text/html",
                                                      "X-Robots-Tag": "noindex"}),
    SITE + "moved": Answer("", 301, {"Location": "/a"}),
}  # fmt: skip


def _engine(tmp_path: Path, **options: object) -> tuple[Crawl, MemoryTransport]:
    transport = MemoryTransport(PAGES)
    config = build({}, {"url": SITE, "output": tmp_path / "out", "quiet": True, **options})
    return Crawl(config, transport=transport), transport


def test_the_crawl_driver_follows_links_and_publishes(tmp_path):
    result, transport, decided = crawl(PAGES, tmp_path / "out")
    assert decided[SITE + "a/deeper"] == ("listed", "")
    assert decided[SITE + "b"][0] == "header_noindex"
    assert decided[SITE + "gone"][0] == "http_error"
    assert result.published.url_count == 3
    assert transport.requested[0] == SITE + "robots.txt"


def test_the_check_driver_judges_the_urls_given_and_follows_nothing(tmp_path):
    engine, transport = _engine(tmp_path)
    urls = [SITE + "a", SITE + "b", SITE + "moved"]
    checked = eventloop.run(engine.check(urls))
    assert checked.decisions[SITE + "a"].reason == "listed"
    assert checked.decisions[SITE + "b"].reason == "header_noindex"
    assert checked.decisions[SITE + "moved"].reason == "redirect"
    assert SITE + "a/deeper" not in transport.requested  # links are not followed
    assert checked.pages[SITE + "a"].status == 200
    assert not (tmp_path / "out").exists()  # nothing published
    assert checked.outage is None


def test_the_check_driver_with_follow_crawls_from_the_urls(tmp_path):
    engine, _ = _engine(tmp_path)
    checked = eventloop.run(engine.check([SITE], follow=True))
    assert checked.decisions[SITE + "a/deeper"].reason == "listed"
    assert SITE + "a/deeper" in checked.reached
    assert not (tmp_path / "out").exists()


def test_the_judge_driver_judges_one_url_and_follows_nothing(tmp_path):
    engine, transport = _engine(tmp_path)
    records = eventloop.run(explain(engine, SITE + "moved"))
    assert [(r.url, r.reason) for r in records] == [
        (SITE + "moved", "redirect"),
        (SITE + "a", "listed"),
    ]
    assert transport.requested == [SITE + "robots.txt", SITE + "moved", SITE + "a"]


def test_the_stop_grace_timer_ends_with_the_run():
    async def run() -> asyncio.TimerHandle | None:
        throttle = Throttle(concurrency=1, delay=0.0)
        loop = CrawlLoop(Frontier(), Tally(), throttle, concurrency=1)
        with loop.signals():
            loop._on_signal(signal.SIGTERM)  # the first signal: the grace starts
            grace = loop._grace
            assert grace is not None and not grace.cancelled()
        return grace

    grace = eventloop.run(run())
    assert grace is not None and grace.cancelled()


def test_a_304_with_no_history_behind_it_is_asked_for_whole(tmp_path):
    """A server answering 304 to a request without validators: nothing to revive, so the
    page is asked for once more, whole, and judged as what it then is."""
    pages: dict[str, Answer | str] = {
        SITE: html("/cached"),
        SITE + "cached": Answer("", 304, {}),
    }
    _, transport, decided = crawl(pages, tmp_path / "out")
    assert transport.requested.count(SITE + "cached") == 2
    assert decided[SITE + "cached"][0] == "http_error"


def _loop_with(urls: int, concurrency: int) -> CrawlLoop:
    frontier = Frontier()
    for i in range(urls):
        frontier.add(f"{SITE}{i}", 1, None)
    throttle = Throttle(concurrency=concurrency, delay=0.0)
    return CrawlLoop(frontier, Tally(), throttle, concurrency=concurrency)


def test_the_loop_takes_as_many_urls_at_once_as_the_depth_admits():
    """Workers pipelining (depth 2) double the URLs taken at once; back at depth 1 the
    workers past --concurrency stop after their URL rather than wait in the throttle for
    every one (#26), and more start when the depth grows again. Every URL is worked on
    once, and the run ends."""
    loop = _loop_with(200, 3)
    at_once: list[tuple[int, int]] = []  # (depth, URLs worked on at once) as each starts
    depth, working, done = 1, 0, []

    async def process(task: object) -> None:
        nonlocal depth, working
        working += 1
        at_once.append((depth, working))
        try:
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        finally:
            working -= 1
        done.append(task)
        if len(done) in (40, 120):  # deeper, for a while
            depth = 2
            loop.set_depth(2)
        elif len(done) in (80, 160):
            depth = 1
            loop.set_depth(1)

    eventloop.run(loop.run(process))
    assert len(done) == 200 and len({t.url for t in done}) == 200
    assert max(n for d, n in at_once if d == 1) == 3
    assert max(n for d, n in at_once if d == 2) == 6
    assert loop.throttle._depth == 1 and not loop._workers and loop._running == 0
    loop.set_depth(2)  # after the run: nothing to start, nothing raised
    assert loop._running == 0


def test_a_depth_told_as_the_run_fails_raises_nothing_there():
    """The pool tells the depth from its own tasks too (a worker process ready): told as
    the run fails, it raises nothing there, and the run ends with the page's error."""
    loop = _loop_with(5, 2)

    async def process(task: object) -> None:
        await asyncio.sleep(0)
        if task.url.endswith("3"):  # type: ignore[attr-defined]
            asyncio.get_running_loop().call_soon(loop.set_depth, 2)  # as the group fails
            raise ValueError("a page's error")

    with pytest.raises(ValueError, match="a page's error"):
        eventloop.run(loop.run(process))
    assert loop._running == 0 and not loop._workers
