"""A canonical whose target answers 4xx/5xx, is blocked or is itself noindex is ignored, as
Google ignores it (#24): the page is judged on its own, whatever order the two are fetched
in, and the report lists it as canonical_broken, in crawl, explain and audit."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.cli import main
from crawler.core.canonicals import BrokenCanonical, Canonicals, broken_target
from crawler.core.decide import (
    CANONICALISED,
    LISTED,
    REASONS,
    Decision,
    PageFacts,
    Policy,
    awaits_canonical,
    canonical_ignored,
    decide_page,
)
from crawler.core.report import Tally
from tests.sites import Page, Site, html, read_decisions, read_published, redirect, urlset


def test_which_targets_break_a_canonical():
    assert broken_target("http_error", 404) == "it answers HTTP 404"
    assert broken_target("http_error", 503) == "it answers HTTP 503"
    assert broken_target("robots_txt", None) == "robots.txt blocks it"
    assert broken_target("meta_noindex", 200) == "it is noindex"
    assert broken_target("header_noindex", 200) == "it is noindex"
    for reason, status in [("listed", 200), ("redirect", 301), ("http_error", 304),
                           ("canonicalised", 200), ("out_of_scope", None)]:  # fmt: skip
        assert broken_target(reason, status) is None


def test_pages_wait_for_their_targets_whichever_comes_first():
    canonicals: Canonicals[str] = Canonicals()
    canonicals.judged("http://h/gone", "http_error", 404)  # judged before the page
    assert canonicals.broken("http://h/gone") == ("it answers HTTP 404", 404)
    assert canonicals.decided("http://h/gone") and not canonicals.decided("http://h/later")
    canonicals.wait("http://h/later", "page-a")
    canonicals.wait("http://h/fine", "page-b")
    canonicals.judged("http://h/later", "meta_noindex", 200)  # judged after
    canonicals.judged("http://h/fine", "listed", 200)
    assert len(canonicals) == 2
    assert sorted(canonicals.settle(), key=str) == [
        ("http://h/fine", "page-b", None),
        ("http://h/later", "page-a", ("it is noindex", 200)),
    ]
    assert len(canonicals) == 0


@settings(max_examples=200, deadline=None)
@given(
    before=st.lists(
        st.tuples(
            st.sampled_from(["http://h/a", "http://h/b", "http://h/c"]),
            st.sampled_from(REASONS),
            st.one_of(st.none(), st.integers(100, 599)),
        ),
        max_size=6,
    ),
    url=st.sampled_from(["http://h/a", "http://h/b", "http://h/d"]),
    status=st.one_of(st.none(), st.integers(100, 599)),
)
def test_a_listing_is_judged_listed(
    before: list[tuple[str, str, int | None]], url: str, status: int | None
) -> None:
    """#26: listed(url), the journal's call for a page that would be listed, leaves the
    table judged(url, LISTED, status) leaves, whatever was judged before."""
    by_reason: Canonicals[str] = Canonicals()
    by_listing: Canonicals[str] = Canonicals()
    for target, reason, code in before:
        by_reason.judged(target, reason, code)
        by_listing.judged(target, reason, code)
    by_reason.judged(url, LISTED, status)
    by_listing.listed(url)
    assert by_listing._decided == by_reason._decided
    assert by_listing._broken == by_reason._broken


def test_only_a_page_listable_on_its_own_awaits_its_canonical():
    policy = Policy(frozenset({"text/html"}))
    facts = PageFacts("http://h/a", 200, "text/html", canonical="http://h/b")
    decision = decide_page(facts, policy)
    assert decision.reason == CANONICALISED and awaits_canonical(facts, decision, policy)
    facts.canonical_in_scope = False  # never fetched: it cannot be judged
    assert not awaits_canonical(facts, decision, policy)
    pdf = PageFacts("http://h/a", 200, "application/pdf", canonical="http://h/b")
    assert not awaits_canonical(pdf, decide_page(pdf, policy), policy)
    assert not awaits_canonical(facts, Decision(LISTED), policy)


def _site() -> Site:
    return Site(
        {
            "/robots.txt": Page("User-agent: *\nDisallow: /blocked\n", content_type="text/plain"),
            # the broken targets are linked first, so some are judged before their pages
            "/": html(
                "/gone",
                "/to-gone",
                "/to-later-gone",
                "/to-blocked",
                "/to-noindex",
                "/to-fine",
                "/to-error",
            ),
            "/to-gone": html(head='<link rel="canonical" href="/gone">'),
            "/to-later-gone": html(head='<link rel="canonical" href="/later-gone">'),
            "/to-blocked": html(head='<link rel="canonical" href="/blocked">'),
            "/to-noindex": html(head='<link rel="canonical" href="/noindex">'),
            "/noindex": html(head='<meta name="robots" content="noindex">'),
            "/to-fine": html(head='<link rel="canonical" href="/fine">'),
            "/fine": html(),
            "/to-error": html(head='<link rel="canonical" href="/error">'),
            "/error": Page("boom", status=500),
        }
    )


def test_a_crawl_ignores_broken_canonicals_and_reports_them(serve, tmp_path, xsd):
    srv = serve(_site().app)
    u = srv.url
    out, dec, rep = tmp_path / "out", tmp_path / "d.jsonl", tmp_path / "r.json"
    code = main(["crawl", u + "/", "-o", str(out), "-q", "--decisions", str(dec),
                 "--report", str(rep), "--retries", "0", "--max-error-rate", "1"])  # fmt: skip
    assert code == 0
    locs = sorted(read_published(out, xsd).locs)
    decisions = read_decisions(dec)
    listed = ["/", "/fine", "/to-blocked", "/to-error", "/to-gone", "/to-later-gone",
              "/to-noindex"]  # fmt: skip
    assert locs == [u + p for p in listed]
    assert decisions[u + "/to-fine"]["reason"] == "canonicalised"
    assert decisions[u + "/to-gone"]["detail"] == (
        f"its canonical {u}/gone is ignored: it answers HTTP 404 (canonical_broken)"
    )
    report = json.loads(rep.read_text())
    assert report["canonical_broken_count"] == 5
    broken = {b["url"]: b for b in report["canonical_broken"]}
    assert broken[u + "/to-later-gone"] == {
        "url": u + "/to-later-gone",
        "canonical": u + "/later-gone",
        "status": 404,
        "why": "it answers HTTP 404",
    }
    assert broken[u + "/to-blocked"]["status"] is None
    assert broken[u + "/to-noindex"]["why"] == "it is noindex"
    assert broken[u + "/to-error"]["status"] == 500


def test_explain_judges_the_canonical_too(serve, capsys):
    srv = serve(_site().app)
    assert main(["explain", srv.url + "/to-gone"]) == 0
    out = capsys.readouterr().out
    assert "its canonical" in out and "is ignored: it answers HTTP 404" in out
    assert main(["explain", srv.url + "/to-fine"]) != 0
    assert f"canonical is {srv.url}/fine" in capsys.readouterr().out


def test_the_audit_reports_canonical_broken(serve, tmp_path, capsys):
    site = _site()
    srv = serve(site.app)
    u = srv.url
    listed = ["/", "/to-gone", "/to-fine", "/gone"]
    site.pages["/sitemap.xml"] = urlset(u, listed)
    out = tmp_path / "audit.json"
    main(["audit", u + "/sitemap.xml", "-q", "--report", str(out), "--retries", "0"])
    found = {(f["code"], f["url"]): f for f in json.loads(out.read_text())["findings"]}
    assert ("canonical_broken", u + "/to-gone") in found
    assert "it answers HTTP 404" in found[("canonical_broken", u + "/to-gone")]["detail"]
    assert ("canonicalised", u + "/to-fine") in found
    capsys.readouterr()


# -- a crawl of a copy of a site: canonicals on another origin, at the same paths ----------------


def test_same_path_elsewhere():
    from crawler.core.canonicals import ForeignCanonicals, same_path_elsewhere

    live = "https://www.example.com"
    assert same_path_elsewhere("http://127.0.0.1:8000/a/b?x=1", live + "/a/b?x=1") == live
    assert same_path_elsewhere("http://127.0.0.1:8000/a/b", live + "/a/c") is None
    assert same_path_elsewhere("http://127.0.0.1:8000/a", "http://127.0.0.1:8000/b") is None
    seen = ForeignCanonicals()
    for path in ("/", "/a", "/b"):
        seen.saw("http://127.0.0.1:8000" + path, live + path)
    seen.saw("http://127.0.0.1:8000/c", None)
    assert seen.hint() == (
        f"3 of 4 fetched pages name their canonical at the same path on {live}: a copy of "
        f"that site? crawl it with --public-url {live}/"
    )
    refusal = seen.refusal()
    assert refusal is not None and refusal.startswith("not published: 3 of 4 fetched pages")
    seen.saw("http://127.0.0.1:8000/d", None)
    seen.saw("http://127.0.0.1:8000/e", None)
    assert seen.refusal() is None and seen.hint() is None  # 3 of 6: not most


def _copy_site(live: str) -> Site:
    pages = {p: html("/a", "/b", "/c", head=f'<link rel="canonical" href="{live}{p}">')
             for p in ("/", "/a", "/b")}  # fmt: skip
    return Site({**pages, "/c": html(), "/old": html(head='<meta http-equiv="refresh" '
                                                         'content="0; url=/a">')})  # fmt: skip


def test_a_crawl_of_a_copy_is_refused_with_a_hint(serve, tmp_path, xsd, capsys):
    live = "https://www.example.com"
    srv = serve(_copy_site(live).app)
    out = tmp_path / "out"
    code = main(["crawl", srv.url + "/", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 4 and not (out / "sitemap.xml").exists()
    assert "3 of 4 fetched pages are canonicalised to another origin" in err
    assert f"--public-url {live}/" in err
    # --force publishes what is left, and says so in one line
    assert main(["crawl", srv.url + "/", "-o", str(out), "--force"]) == 0
    assert f"crawl it with --public-url {live}/" in capsys.readouterr().out
    assert read_published(out, xsd).locs == [srv.url + "/c"]
    # as suggested: the canonicals are the pages' own, all listed
    code = main(["crawl", srv.url + "/", "-o", str(tmp_path / "pub"), "--public-url", live + "/"])
    assert code == 0
    assert "a copy of that site" not in capsys.readouterr().out
    assert len(read_published(tmp_path / "pub", xsd).locs) == 4


def test_explain_suggests_public_url(serve, capsys):
    live = "https://www.example.com"
    srv = serve(_copy_site(live).app)
    assert main(["explain", srv.url + "/a"]) != 0
    assert f"crawl it with --public-url {live}/" in capsys.readouterr().out


def _hop_site() -> Site:
    """/page names /target as its canonical; /target is met first as the last hop of /hop's
    redirect, and answers 404 only after /page is fetched (and a little later): marked seen,
    neither queued nor a task of its own meanwhile."""
    page_asked = asyncio.Event()

    async def page(_: web.Request) -> web.Response:
        page_asked.set()
        body = html(head='<link rel="canonical" href="/target">')
        return web.Response(text=body, content_type="text/html")

    async def target(_: web.Request) -> web.Response:
        with contextlib.suppress(TimeoutError):  # one at a time: /page comes after
            await asyncio.wait_for(page_asked.wait(), 1.0)
        await asyncio.sleep(0.2)  # the slow hop: /page is judged meanwhile
        return web.Response(status=404, text="gone")

    return Site({"/": html("/hop", "/page"), "/hop": redirect("/target"),
                 "/page": page, "/target": target})  # fmt: skip


@pytest.mark.parametrize("concurrency", ["1", "2", "4"])
def test_a_canonical_target_in_flight_as_a_redirect_hop_is_awaited(
    serve, tmp_path, xsd, concurrency
):
    srv = serve(_hop_site().app)
    u = srv.url
    out, dec, rep = tmp_path / "out", tmp_path / "d.jsonl", tmp_path / "r.json"
    code = main(["crawl", u + "/", "-o", str(out), "-q", "--decisions", str(dec),
                 "--report", str(rep), "--retries", "0", "--concurrency", concurrency,
                 "--max-error-rate", "1"])  # fmt: skip
    assert code == 0
    assert sorted(read_published(out, xsd).locs) == [u + "/", u + "/page"]
    decisions = read_decisions(dec)
    assert decisions[u + "/target"]["status"] == 404
    assert decisions[u + "/page"]["detail"] == (
        f"its canonical {u}/target is ignored: it answers HTTP 404 (canonical_broken)"
    )
    report = json.loads(rep.read_text())
    assert report["canonical_broken_count"] == 1
    assert [b["url"] for b in report["canonical_broken"]] == [u + "/page"]


def test_what_a_resumed_crawl_rebuilds_of_canonicals():
    """--resume: a listing's detail names its broken canonical; the copy-site figures are
    the state's counters (crawler.shell.replay)."""
    detail = canonical_ignored("http://h/gone", broken_target("http_error", 404) or "")
    assert BrokenCanonical.from_detail("http://h/a", f"{detail}; more") == BrokenCanonical(
        "http://h/a", "http://h/gone", 404, "it answers HTTP 404"
    )
    blocked = canonical_ignored("http://h/b", "robots.txt blocks it")
    assert BrokenCanonical.from_detail("http://h/a", blocked).status is None  # type: ignore[union-attr]
    assert BrokenCanonical.from_detail("http://h/a", "") is None
    tally = Tally(failed=2, not_modified=3)
    tally.foreign.saw("http://h/a", "https://live/a")
    tally.foreign.saw("http://h/b", "https://other/x")
    tally.foreign.saw("http://h/c", None)
    again = Tally()
    again.restore({**tally.counters(), "fetched": 9})
    assert (again.fetched, again.fetched_before, again.failed, again.not_modified) == (9, 9, 2, 3)
    assert again.foreign == tally.foreign
