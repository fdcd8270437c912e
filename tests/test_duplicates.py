"""Byte-identical pages (issue #11): only pages that would be listed compete, and the one
listed is the same whatever the fetch order, the worker count or a resume."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import sqlite3

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from crawler.cli import main
from crawler.core.duplicates import Twins, rank
from tests.procs import wait_for
from tests.sites import Page, Site, crawl_process, html, read_decisions, read_published

# -- the pure policy --------------------------------------------------------------------------


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.text("ab/", min_size=1, max_size=6)),
        min_size=1,
        max_size=8,
        unique_by=lambda c: c[1],
    ),
    st.randoms(),
)
def test_the_winner_does_not_depend_on_the_order_of_claims(claims, random):
    expected = min(claims, key=lambda c: rank(*c))[1]
    random.shuffle(claims)
    twins = Twins()
    for depth, url in claims:
        twins.claim(7, depth, url)
    assert twins.winner(7) == expected


def test_the_shallowest_then_the_shortest_then_the_smallest_wins():
    twins = Twins()
    twins.claim(1, 2, "/a")
    twins.claim(1, 1, "/a-much-longer-url")
    assert twins.winner(1) == "/a-much-longer-url"
    twins.claim(1, 1, "/zz")
    assert twins.winner(1) == "/zz"
    twins.claim(1, 1, "/aa")
    assert twins.winner(1) == "/aa"
    assert twins.winner(2) is None


def test_a_body_met_first_names_its_first_url():
    twins = Twins()
    assert twins.met(5, "/print") is None
    assert twins.met(5, "/print") is None  # the same URL again: not a twin
    assert twins.met(5, "/page") == "/print"
    assert len(twins) == 1


# -- crawls of sites with twins ---------------------------------------------------------------

BODY = b"<!doctype html><html><head><title>same</title></head><body>same bytes</body></html>"


def _crawl(url: str, out, *args: str) -> int:
    return main(["crawl", url, "-o", str(out), "--quiet", *args])


def test_a_canonical_twin_fetched_first_does_not_hide_its_canonical(serve, tmp_path, xsd):
    """/p?ref=home (canonical /p, the same bytes) is linked and fetched first: it is
    canonicalised, and /p itself is listed (it used to become a duplicate of its twin)."""
    body = BODY.replace(b"<title>", b'<link rel="canonical" href="/p"><title>')
    site = Site({"/": html("/p?ref=home", "/p"), "/p?ref=home": Page(body), "/p": Page(body)})
    srv = serve(site.app)
    decisions = tmp_path / "d.jsonl"
    assert (
        _crawl(srv.url + "/", tmp_path / "o", "--concurrency", "1", "--decisions", str(decisions))
        == 0
    )
    assert site.paths.index("/p?ref=home") < site.paths.index("/p")
    assert sorted(read_published(tmp_path / "o", xsd).locs) == [srv.url + "/", srv.url + "/p"]
    d = read_decisions(decisions)
    assert d[srv.url + "/p?ref=home"]["reason"] == "canonicalised"
    assert d[srv.url + "/p"]["reason"] == "listed"


def test_a_noindex_twin_does_not_hide_its_indexable_twin(serve, tmp_path, xsd):
    site = Site(
        {
            "/": html("/print", "/article"),
            "/print": Page(BODY, headers={"X-Robots-Tag": "noindex"}),
            "/article": Page(BODY),
        }
    )
    srv = serve(site.app)
    decisions = tmp_path / "d.jsonl"
    assert (
        _crawl(srv.url + "/", tmp_path / "o", "--concurrency", "1", "--decisions", str(decisions))
        == 0
    )
    assert sorted(read_published(tmp_path / "o", xsd).locs) == [srv.url + "/", srv.url + "/article"]
    assert read_decisions(decisions)[srv.url + "/print"]["reason"] == "header_noindex"


TWINS = ["/zz/long-name", "/b", "/a", "/deep/"]  # /a wins: depth 1, shortest, smallest


def _twin_site(order: tuple[str, ...], delays: dict[str, float], filler: int = 0) -> Site:
    """Home links to the twins in `order` (and /deep/ links to /c, a twin at depth 2), each
    twin answering after its delay; `filler` distinct pages make the crawl big enough for
    worker processes to start."""

    def twin(path: str):
        async def handler(request: web.Request) -> web.Response:
            await asyncio.sleep(delays.get(path, 0))
            extra = html("/c") if path == "/deep/" else ""
            return web.Response(
                body=BODY if not extra else extra.encode(), content_type="text/html"
            )

        return handler

    pages: dict = {path: twin(path) for path in TWINS}
    pages["/"] = html(*order, *[f"/f{i}" for i in range(filler)])
    pages["/c"] = Page(BODY)
    pages.update({f"/f{i}": html() for i in range(filler)})
    return Site(pages)


def _winner(decisions) -> set[str]:
    d = read_decisions(decisions)
    twins = {u for u in d if u.rsplit("/", 1)[-1] in ("a", "b", "c", "long-name")}
    listed = {u for u in twins if d[u]["reason"] == "listed"}
    losers = {d[u]["detail"] for u in twins - listed}
    assert all(d[u]["reason"] == "duplicate_of" for u in twins - listed), d
    assert len(listed) == 1 and losers == listed, (listed, losers)
    return listed


@pytest.mark.parametrize("order", list(itertools.permutations(TWINS[:3]))[::2])
@pytest.mark.parametrize("slow", ["/a", "/zz/long-name"])
def test_the_same_twin_is_listed_whatever_the_fetch_order(serve, tmp_path, xsd, order, slow):
    site = _twin_site((*order, "/deep/"), {slow: 0.2})
    srv = serve(site.app)
    decisions = tmp_path / "d.jsonl"
    assert _crawl(srv.url + "/", tmp_path / "o", "--decisions", str(decisions)) == 0
    assert _winner(decisions) == {srv.url + "/a"}
    locs = read_published(tmp_path / "o", xsd).locs
    assert srv.url + "/a" in locs and srv.url + "/b" not in locs and srv.url + "/c" not in locs


def test_the_same_twin_is_listed_with_workers(serve, tmp_path, xsd):
    site = _twin_site(("/zz/long-name", "/b", "/deep/", "/a"), {"/a": 0.3}, filler=300)
    srv = serve(site.app)
    decisions = tmp_path / "d.jsonl"
    report = tmp_path / "r.json"
    args = ["--workers", "2", "--decisions", str(decisions), "--report", str(report)]
    assert _crawl(srv.url + "/", tmp_path / "o", *args) == 0
    assert _winner(decisions) == {srv.url + "/a"}
    assert '"workers": 2' in report.read_text()


def _listings(state) -> int:
    try:
        with contextlib.closing(sqlite3.connect(state)) as conn:
            return conn.execute("SELECT count(*) FROM listings").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


def test_the_same_twin_is_listed_after_a_resume(serve, tmp_path, xsd):
    """The better twin is fetched only after the crawl is killed and resumed: the listing
    made before the kill, read back from the state file, loses to it."""
    gate = {"open": False}

    async def late_a(request: web.Request) -> web.Response:
        while not gate["open"]:
            await asyncio.sleep(0.05)
        return web.Response(body=BODY, content_type="text/html")

    async def later(request: web.Request) -> web.Response:
        await asyncio.sleep(2.2)  # its end is a page boundary past the 2 s checkpoint interval
        return web.Response(text="<p>later</p>", content_type="text/html")

    site = Site(
        {
            "/": html("/b", "/zz/long-name", "/a", "/later"),
            "/b": Page(BODY),
            "/zz/long-name": Page(BODY),
            "/a": late_a,
            "/later": later,
        }
    )
    srv = serve(site.app)
    out, state, decisions = tmp_path / "o", tmp_path / "s.sqlite", tmp_path / "d.jsonl"
    args = [srv.url + "/", "-o", str(out), "--state", str(state), "--quiet"]
    proc = crawl_process(*args)
    wait_for(lambda: _listings(state) == 4, "every listing but /a checkpointed", proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    gate["open"] = True
    assert main(["crawl", *args, "--resume", "--decisions", str(decisions)]) == 0
    assert _winner(decisions) == {srv.url + "/a"}
    assert srv.url + "/a" in read_published(out, xsd).locs


def test_a_closer_link_to_a_twin_counts_when_workers_parse_the_pages(serve, tmp_path):
    """Workers leave out links to settled URLs, but not a closer link to a listing that
    may have twins: /t is listed (2 links away, through the slow /x), not /longer-twin."""

    async def slow_x(request: web.Request) -> web.Response:
        await asyncio.sleep(2.0)
        return web.Response(text=html("/t", body="x"), content_type="text/html")

    fill = [f"/f{i}" for i in range(150)]  # past the workers' start
    pages: dict = {"/": html(*fill, "/x", "/y"), "/x": slow_x}
    pages.update({f: html(body=f) for f in fill})
    pages["/y"] = html("/y1", "/longer-twin", body="y")
    pages["/y1"] = html("/t", *[f"/g{i}" for i in range(200)], body="y1")
    pages.update({f"/g{i}": html(body=f"g{i}") for i in range(200)})
    pages["/t"] = pages["/longer-twin"] = Page(BODY)
    srv = serve(Site(pages).app)
    decisions = tmp_path / "d.jsonl"
    args = ["--workers", "2", "--concurrency", "4", "--decisions", str(decisions)]
    assert _crawl(srv.url + "/", tmp_path / "o", *args) == 0
    d = read_decisions(decisions)
    assert d[srv.url + "/t"]["reason"] == "listed"
    assert d[srv.url + "/longer-twin"]["detail"] == srv.url + "/t"
