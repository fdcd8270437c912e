"""The engine's policy over an in-memory transport (tests/memory.py): no server, so whole
families of orders and options run in milliseconds. The same engine runs over HTTP in the
other crawl tests."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from lxml import etree

from crawler.config import build
from crawler.errors import PublishRefused
from crawler.shell import eventloop
from crawler.shell.engine import Crawl
from crawler.shell.fetch import Response
from crawler.shell.state import StateError
from tests.memory import Answer, Crash, MemoryTransport, crawl, crawl_until_crash
from tests.sites import html, read_published

SITE = "http://site.test/"
TWIN = "<!doctype html><p>the same bytes</p>"


TWINS = ["zz/long-name", "b", "a", "deep/c"]


@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_the_best_twin_wins_in_every_order(tmp_path, concurrency):
    """24 link orders x 3 concurrencies: /a (depth 1, shortest, smallest) is always listed,
    and every other twin, /deep/c (depth 2) included, is duplicate_of it."""
    for i, order in enumerate(itertools.permutations(TWINS)):
        pages: dict = {SITE: html(*(f"/{p}" for p in order if p != "deep/c"), "/deep/")}
        pages.update({SITE + p: TWIN for p in TWINS})
        pages[SITE + "deep/"] = html("/deep/c")
        result, _, decided = crawl(pages, tmp_path / str(i), concurrency=concurrency)
        assert decided[SITE + "a"] == ("listed", "")
        for loser in ("b", "zz/long-name", "deep/c"):
            assert decided[SITE + loser] == ("duplicate_of", SITE + "a"), (order, decided)
        assert result.published.url_count == 3  # /, /deep/ and /a


def test_only_listable_pages_compete(tmp_path):
    canonical = TWIN.replace("<p>", '<link rel="canonical" href="/p"><p>')
    pages: dict = {
        SITE: html("/p?ref=home", "/print", "/p", "/article"),
        SITE + "p?ref=home": canonical,
        SITE + "p": canonical,
        SITE + "print": Answer(
            TWIN, headers={"Content-Type": "text/html", "X-Robots-Tag": "noindex"}
        ),
        SITE + "article": TWIN,
    }
    _, _, decided = crawl(pages, tmp_path / "o", concurrency=1)
    assert decided[SITE + "p?ref=home"][0] == "canonicalised"
    assert decided[SITE + "p"] == ("listed", "")
    assert decided[SITE + "print"][0] == "header_noindex"
    assert decided[SITE + "article"] == ("listed", "")


def test_a_twin_is_named_by_its_public_url(tmp_path):
    pages: dict = {"http://staging.test/": html("/b", "/a"), "http://staging.test/a": TWIN}
    pages["http://staging.test/b"] = TWIN
    _, _, decided = crawl(pages, tmp_path / "o", public_url="https://www.example.com/")
    assert decided["https://www.example.com/b"] == ("duplicate_of", "https://www.example.com/a")


def test_the_soft_404_defence_still_holds(tmp_path):
    """Every made-up path answers the same page with a relative link: its links are followed
    once, from the first URL that answered it, so the crawl ends."""

    class Everything(dict):
        def get(self, url, default=None):
            return super().get(url) or '<a href="more/x">x</a>'

    pages = Everything({SITE: html("/a/")})
    result, transport, _decided = crawl(pages, tmp_path / "o")
    assert len(transport.requested) < 6
    assert result.published.url_count == 1 + 1  # / and /a/; /a/more/x is its twin


def test_redirect_hops_count_against_max_pages(tmp_path):
    pages: dict = {SITE: html(*(f"/r{k}" for k in range(5)))}
    for k in range(5):
        pages[f"{SITE}r{k}"] = Answer(b"", 301, {"Location": f"/p{k}"})
        pages[f"{SITE}p{k}"] = f"<p>{k}</p>"
    _, transport, decided = crawl(pages, tmp_path / "o", max_pages=6, concurrency=1)
    assert len([u for u in transport.requested if not u.endswith("robots.txt")]) == 6
    assert [u for u, d in decided.items() if d[0] == "limit"]


def test_the_guard_refuses_a_gutted_sitemap(tmp_path):
    pages: dict = {SITE: html(*(f"/p{k}" for k in range(9)))}
    pages.update({f"{SITE}p{k}": f"<p>{k}</p>" for k in range(9)})
    out = tmp_path / "o"
    result, _, _ = crawl(pages, out)
    assert result.published.url_count == 10
    gutted = {SITE: pages[SITE]}
    with pytest.raises(PublishRefused, match="max_shrink"):
        crawl(gutted, out)
    result, _, _ = crawl(gutted, out, force=True)
    assert result.published.url_count == 1


# -- what no test exercised before (issue #11) -------------------------------------------------


def test_a_last_modified_in_the_future_gives_no_lastmod(tmp_path, xsd):
    def page(date: str) -> Answer:
        return Answer("<p>x</p>", headers={"Content-Type": "text/html", "Last-Modified": date})

    pages: dict = {
        SITE: html("/past", "/future"),
        SITE + "past": page("Tue, 01 Jan 2019 00:00:00 GMT"),
        SITE + "future": page("Fri, 01 Jan 2100 00:00:00 GMT"),
    }
    crawl(pages, tmp_path / "o")
    lastmods = read_published(tmp_path / "o", xsd).lastmods
    assert lastmods[SITE + "past"] == "2019-01-01T00:00:00+00:00"
    assert lastmods.get(SITE + "future") is None


def test_pages_linking_to_an_already_broken_url_are_named(tmp_path):
    pages: dict = {SITE: html("/gone", "/a", "/b")}
    pages[SITE + "a"] = html("/gone", body="a")  # fetched after /gone was judged broken
    pages[SITE + "b"] = html("/gone", body="b")
    result, _, _ = crawl(pages, tmp_path / "o", concurrency=1)
    assert result.tally.broken[SITE + "gone"] == (404, [SITE, SITE + "a", SITE + "b"])


def _depth_site() -> dict:
    """/u is first found at depth 3 (/ -> /a -> /c -> /u) while /b, at depth 1, is still in
    flight; /b then links to it at depth 2, so the queued /u moves up. /w is the URL the
    crawl dies at, after /b and before /u."""
    release = asyncio.Event()

    class Pages(dict):
        pass

    pages = Pages({SITE: html("/a", "/b"), SITE + "a": html("/c", "/d1", "/d2", "/d3")})
    pages[SITE + "c"] = html("/u")
    pages.update({f"{SITE}d{i}": f"<p>{i}</p>" for i in (1, 2, 3)})  # keep the other worker busy
    pages[SITE + "b"] = html("/w", "/u")
    pages[SITE + "w"] = "<p>w</p>"
    pages[SITE + "u"] = "<p>u</p>"
    pages.release = release  # type: ignore[attr-defined]
    return pages


class _SlowB(MemoryTransport):
    """/b answers only once /c has been answered: /u is queued deep first."""

    def __init__(self, pages: dict) -> None:
        super().__init__(pages)
        self.c_done = asyncio.Event()

    async def get(self, url: str, max_bytes: int | None = None) -> Response:
        if url == SITE + "b":
            await self.c_done.wait()
        resp = await super().get(url, max_bytes)
        if url == SITE + "c":
            for _ in range(5):
                await asyncio.sleep(0)  # /c is processed: /u is queued at depth 3
            self.c_done.set()
        return resp


def test_a_queued_url_moved_up_keeps_its_depth_across_a_crash(tmp_path, xsd):
    state = tmp_path / "s.sqlite"
    options = {"state": state, "priority_by_depth": True, "concurrency": 2}
    pages = _depth_site()
    transport = _SlowB(pages)
    config = build({}, {"url": SITE, "output": tmp_path / "o", "quiet": True, **options})
    engine = Crawl(config, transport=transport)
    original = _SlowB.get

    async def get(url: str, max_bytes: int | None = None) -> Response:
        if url == SITE + "w":  # after /b, before /u: the state holds /u queued
            assert engine.state is not None
            engine.state.checkpoint()
            raise Crash(url)
        return await original(transport, url, max_bytes)

    transport.get = get  # type: ignore[method-assign]
    with pytest.raises(Crash):
        eventloop.run(engine.run())
    # /u may be in flight when the crawl dies, but it has no decision: the state holds it
    # queued, at the depth it moved up to
    _, resumed, _ = crawl(pages, tmp_path / "o", resume=True, **options)
    assert resumed.requested[-1] == SITE + "u"
    published = read_published(tmp_path / "o", xsd)
    priorities = dict(zip(published.locs, _priorities(tmp_path / "o"), strict=True))
    assert priorities[SITE + "u"] == "0.64"  # depth 2 (0.8 ** 2), not depth 3


def _priorities(out: Path) -> list[str]:
    tree = etree.parse(str(out / "sitemap.xml"))
    return [p.text for p in tree.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}priority")]


def test_a_redirect_target_is_saved_queued_and_fetched_after_a_crash(tmp_path, xsd):
    pages: dict = {SITE: html("/old"), SITE + "old": Answer(b"", 301, {"Location": "/new"})}
    pages[SITE + "new"] = "<p>new</p>"
    options = {"state": tmp_path / "s.sqlite", "concurrency": 1}
    crashed = crawl_until_crash(pages, tmp_path / "o", SITE + "new", **options)
    assert crashed.requested[-1] == SITE + "old"
    _, resumed, decided = crawl(pages, tmp_path / "o", resume=True, **options)
    assert resumed.requested == [SITE + "robots.txt", SITE + "new"]
    assert decided[SITE + "old"] == ("redirect", SITE + "new")
    assert decided[SITE + "new"] == ("listed", "")
    assert sorted(read_published(tmp_path / "o", xsd).locs) == [SITE, SITE + "new"]


class _Delayed(MemoryTransport):
    def __init__(self, pages: dict, delays: dict[str, float]) -> None:
        super().__init__(pages)
        self.delays = delays

    async def get(self, url: str, max_bytes: int | None = None) -> Response:
        await asyncio.sleep(self.delays.get(url, 0))
        return await super().get(url, max_bytes)


@pytest.mark.parametrize("slow", [0.0, 0.05])
def test_twins_are_ranked_by_their_fewest_links_from_the_start(tmp_path, slow):
    """/t is 2 links from the start through /x and 3 through /y -> /y1; /longer-twin is 2.
    When /x is slow, /t is fetched at depth 3 before /x links to it; it still wins (it is
    as close as its twin, and shorter)."""
    pages: dict = {SITE: html("/x", "/y"), SITE + "x": html("/t", body="x")}
    pages[SITE + "y"] = html("/y1", "/longer-twin", body="y")
    pages[SITE + "y1"] = html("/t", body="y1")
    pages[SITE + "t"] = pages[SITE + "longer-twin"] = TWIN
    transport = _Delayed(pages, {SITE + "x": slow})
    config = build({}, {"url": SITE, "output": tmp_path / "o", "quiet": True})
    engine = Crawl(config, transport=transport)
    records: list = []
    engine.journal.echo = records.append
    eventloop.run(engine.run())
    decided = {r.url: (r.reason, r.detail) for r in records}
    assert decided[SITE + "t"] == ("listed", "")
    assert decided[SITE + "longer-twin"] == ("duplicate_of", SITE + "t")


def test_a_refused_crawl_resumed_without_force_is_refused_again(tmp_path):
    pages: dict = {SITE: html(*[f"/p{i}" for i in range(5)])}
    pages.update({f"{SITE}p{i}": Answer("down", status=500) for i in range(3)})
    pages.update({f"{SITE}p{i}": f"<p>{i}</p>" for i in range(3, 5)})
    options = {"state": tmp_path / "s.sqlite", "retries": 0}
    with pytest.raises(PublishRefused, match="3 of 6 requests failed"):
        crawl(pages, tmp_path / "o", **options)
    with pytest.raises(PublishRefused, match="3 of 6 requests failed"):
        crawl(pages, tmp_path / "o", resume=True, **options)
    result, _, _ = crawl(pages, tmp_path / "o", resume=True, force=True, **options)
    assert result.published.url_count == 3


def test_a_crawl_an_outage_cut_short_is_neither_published_nor_resumed(tmp_path):
    pages: dict = {SITE: html(*[f"/p{i}" for i in range(40)])}
    pages.update({f"{SITE}p{i}": Answer("down", status=503) for i in range(40)})
    options = {"state": tmp_path / "s.sqlite", "retries": 0, "max_crawl_delay": 0.0}
    with pytest.raises(PublishRefused, match="site looks down"):
        crawl(pages, tmp_path / "o", force=True, **options)
    with pytest.raises(StateError, match="looked down"):
        crawl(pages, tmp_path / "o", resume=True, **options)


def _twin_decisions(pages: dict, delays: dict[str, float], out: Path) -> dict:
    transport = _Delayed(pages, delays)
    config = build({}, {"url": SITE, "output": out, "quiet": True})
    engine = Crawl(config, transport=transport)
    records: list = []
    engine.journal.echo = records.append
    eventloop.run(engine.run())
    return {r.url: (r.reason, r.detail) for r in records}


@pytest.mark.parametrize("slow_t", [0.0, 0.3])
def test_a_closer_link_found_while_a_twin_is_fetched_counts(tmp_path, slow_t):
    pages: dict = {SITE: html("/x", "/y"), SITE + "x": html("/t", body="x")}
    pages[SITE + "y"] = html("/y1", "/longer-twin", body="y")
    pages[SITE + "y1"] = html("/t", body="y1")
    pages[SITE + "t"] = pages[SITE + "longer-twin"] = TWIN
    delays = {SITE + "x": 0.1, SITE + "t": slow_t}
    decided = _twin_decisions(pages, delays, tmp_path / "o")
    assert decided[SITE + "t"] == ("listed", "")


@pytest.mark.parametrize("slow_r", [0.0, 0.1])
def test_a_redirect_to_a_listed_twin_brings_it_closer(tmp_path, slow_r):
    """/r (depth 1) redirects to /t: /t is 1 link away, /longer-twin 2; /t is also found
    3 links away (through /y1), and fetched from there first when /r is slow."""
    pages: dict = {SITE: html("/r", "/y"), SITE + "r": Answer("", 301, {"Location": "/t"})}
    pages[SITE + "y"] = html("/y1", "/longer-twin", body="y")
    pages[SITE + "y1"] = html("/t", body="y1")
    pages[SITE + "t"] = pages[SITE + "longer-twin"] = TWIN
    decided = _twin_decisions(pages, {SITE + "r": slow_r}, tmp_path / "o")
    assert decided[SITE + "t"] == ("listed", "")
