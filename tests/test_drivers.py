"""The engine's three drivers over the in-memory transport (tests/memory.py): `run` crawls and
publishes, `check` judges given URLs for the audit, `judge` judges one URL for `explain`.
Each composes the same loop and page judge (issue #22); and the loop's stop grace."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

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
