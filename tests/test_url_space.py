"""URL spaces are bounded by default (issue #23, item 5): a calendar whose next-month links
go on forever, each page different, ends on its own under max_pages_per_param's default,
every cut recorded as a `trap` decision, counted in the report and said in one line."""

from __future__ import annotations

import json

from aiohttp import web

from crawler.config import Config
from crawler.core.decide import TrapBudgets
from tests.sites import Site, html


def _calendar_site() -> Site:
    async def month(request: web.Request) -> web.Response:
        if request.path != "/calendar":
            return web.Response(status=404, text="not found")
        n = int(request.query.get("month", "0"))
        body = html(f"/calendar?month={n + 1}", body=f"<p>events of month {n}</p>")
        return web.Response(text=body, content_type="text/html")

    pages = {"/": html("/a", "/b", "/calendar?month=0"), "/a": html("/b"), "/b": html()}
    return Site(pages, fallback=month)


def test_a_calendar_trap_ends_on_its_own(serve, crawl, tmp_path):
    site = _calendar_site()
    srv = serve(site.app)
    report, decisions = tmp_path / "report.json", tmp_path / "decisions.jsonl"
    code, pub, _, err = crawl(
        srv.url + "/", "--report", str(report), "--decisions", str(decisions), "--retries", "0"
    )
    assert code == 0, err
    months = [loc for loc in pub.locs if "/calendar" in loc]
    assert {srv.url + p for p in ("/", "/a", "/b")} <= set(pub.locs)
    assert len(months) == 1000
    assert len(site.paths) < 1010  # the 1,001st month was met, never fetched
    figures = json.loads(report.read_text())
    assert figures["reasons"]["trap"] == 1
    trapped = [
        line for line in map(json.loads, decisions.read_text().splitlines())
        if line["reason"] == "trap"
    ]  # fmt: skip
    assert [d["url"] for d in trapped] == [srv.url + "/calendar?month=1000"]
    line = (
        f"warning: trap: more than 1000 URLs of {srv.url}/calendar that differ only in their "
        "query (max_pages_per_param): 1 URL not fetched; the 1000 fetched before the cut are "
        "listed as usual (to leave them all out: --exclude '/calendar?*')"
    )
    assert line in err


def test_the_defaults_are_finite_and_a_budget_is_per_path():
    config = Config(url="https://e.com/")
    assert config.max_pages == 5_000_000 and config.max_pages_per_param == 1000
    budgets = TrapBudgets(per_param=2)
    for n in range(2):
        assert budgets.spend(f"https://e.com/cal?m={n}") is None
        assert budgets.spend(f"https://e.com/shop/{n}?sort=price") is None  # other paths
    assert budgets.spend("https://e.com/cal") is None  # no query: not this budget's
    assert "differ only in their query" in (budgets.spend("https://e.com/cal?m=9") or "")
    assert budgets.warnings() == [
        "trap: more than 2 URLs of https://e.com/cal that differ only in their query "
        "(max_pages_per_param): 1 URL not fetched; the 2 fetched before the cut are listed as "
        "usual (to leave them all out: --exclude '/cal?*')"
    ]


def test_max_pages_cut_is_a_limit_with_a_line(serve, crawl, tmp_path):
    site = _calendar_site()
    srv = serve(site.app)
    report = tmp_path / "report.json"
    code, pub, _, err = crawl(srv.url + "/", "--max-pages", "5", "--report", str(report))
    assert code == 0, err
    assert len(pub.locs) <= 5
    figures = json.loads(report.read_text())
    assert figures["reasons"]["limit"] >= 1
    assert "warning: limit: max_pages reached (max_pages 5): " in err


def test_the_exclude_a_trap_line_names_leaves_the_calendar_out(serve, crawl, tmp_path):
    """The pattern the warning names is the one that works: with it the calendar's months
    are neither requested nor listed, and the real pages are."""
    site = _calendar_site()
    srv = serve(site.app)
    code, pub, _, err = crawl(srv.url + "/", "--exclude", "/calendar?*", "--retries", "0")
    assert code == 0, err
    assert {srv.url + p for p in ("/", "/a", "/b")} <= set(pub.locs)
    assert not [loc for loc in pub.locs if "/calendar?" in loc]
    assert "trap:" not in err
    assert len(site.paths) < 20
