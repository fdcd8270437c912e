"""The URL checks of `audit` (crawler/shell/audit_urls.py, crawler/core/url_checks.py): each
listed URL judged by the crawl engine against a real local site, each URL-level finding code
on exactly the faulty URL, politeness as a crawl's, --public-url, workers, and --crawl."""

from __future__ import annotations

import asyncio
import multiprocessing
from datetime import UTC, datetime
from email.utils import formatdate

import pytest
from aiohttp import web

from crawler.config import Config
from crawler.core.findings import Finding, ListedUrl
from crawler.core.url_checks import Checked, PageSeen, lastmod_findings, parse_w3c
from crawler.shell import eventloop
from crawler.shell.audit_urls import SOFT_404_SUFFIX, check_urls, compare_with_crawl
from crawler.shell.engine import Crawl
from crawler.shell.pool import START_AFTER, worker_processes
from tests.sites import Page, Site, assert_spaced, html, redirect

PNG = Page(b"\x89PNG\r\n\x1a\n", content_type="image/png")
SAME = Page(b"<html><body><p>the same bytes</p></body></html>")
OLD = formatdate(1_600_000_000, usegmt=True)  # 2020-09-13T12:26:40Z


def config(base: str, **options: object) -> Config:
    """An audit's crawl config: the site's root, its sitemap at /sitemap.xml."""
    settings: dict[str, object] = {"retries": 0, "sitemap_url": base + "/sitemap.xml"}
    settings.update(options)
    return Config(url=base + "/", **settings).validate()  # type: ignore[arg-type]


def listed(base: str, *paths: str, lastmod: str | None = None) -> list[ListedUrl]:
    sitemap = base + "/sitemap.xml"
    return [ListedUrl(base + p, sitemap, line, lastmod) for line, p in enumerate(paths, 3)]


def check(conf: Config, items: list[ListedUrl], **kw: object) -> tuple[list[Finding], int]:
    result = eventloop.run(check_urls(conf, items, log=lambda _: None, progress=None, **kw))  # type: ignore[arg-type]
    return result.findings, result.checked


def codes(findings: list[Finding]) -> set[tuple[str, str | None]]:
    return {(f.code, f.url) for f in findings}


FINE = {"/": html(), "/a": html(), "/b": html()}

#: code -> (the faulty page(s), the faulty path, words its detail must hold)
CASES: dict[str, tuple[dict[str, Page | str], str, str]] = {
    "blocked_by_robots": (
        {"/robots.txt": Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain")},
        "/private/x",
        "Disallow: /private/ (line 2)",
    ),
    "http_error": ({"/gone": Page("gone", 410, "text/plain")}, "/gone", "HTTP 410"),
    "redirect": ({"/old": redirect("/new"), "/new": html()}, "/old", "HTTP 301 to http"),
    "noindex": (
        {"/hidden": html(head='<meta name="robots" content="noindex">')},
        "/hidden",
        "noindex",
    ),
    "canonicalised": (
        {"/print": html(head='<link rel="canonical" href="/a">')},
        "/print",
        "/a",
    ),
    "not_a_page": ({"/logo.png": PNG}, "/logo.png", "image/png"),
}


@pytest.mark.parametrize("code", CASES)
def test_each_code_on_exactly_the_faulty_url(serve, code):
    pages, path, words = CASES[code]
    site = Site({**FINE, **pages})
    srv = serve(site.app)
    findings, checked = check(config(srv.url), listed(srv.url, "/", "/a", path, "/b"))
    assert codes(findings) == {(code, srv.url + path)}, findings
    (finding,) = findings
    assert words in finding.detail, finding.detail
    assert finding.sitemap == srv.url + "/sitemap.xml" and finding.line == 5
    assert checked == 4


def test_a_clean_site_yields_nothing(serve):
    site = Site({**FINE, "/doc.pdf": Page(b"%PDF-1.4", content_type="application/pdf")})
    srv = serve(site.app)
    findings, checked = check(
        config(srv.url), listed(srv.url, "/", "/a", "/b", "/doc.pdf", lastmod="2020-01-01")
    )
    assert findings == [] and checked == 4
    probes = [p for p in site.paths if p.endswith(SOFT_404_SUFFIX)]
    assert len(probes) == 1 and probes[0].count("/") == 1  # under the sitemap's folder


def test_header_noindex_and_a_5xx_after_retries(serve):
    site = Site(
        {
            **FINE,
            "/x": Page(html(), headers={"X-Robots-Tag": "noindex"}),
            "/down": Page("down", 503, "text/plain"),
        }
    )
    srv = serve(site.app)
    findings, _ = check(config(srv.url, retries=1), listed(srv.url, "/a", "/x", "/down"))
    assert codes(findings) == {("noindex", srv.url + "/x"), ("http_error", srv.url + "/down")}
    by_code = {f.code: f.detail for f in findings}
    assert "X-Robots-Tag" in by_code["noindex"]
    assert "HTTP 503" in by_code["http_error"] and "after 1 retries" in by_code["http_error"]
    assert site.paths.count("/down") == 2


def test_no_answer_is_an_http_error_that_says_so(serve):
    async def hang_up(request: web.Request) -> web.Response:
        assert request.transport is not None
        request.transport.close()
        return web.Response()

    site = Site({**FINE, "/cut": hang_up})
    srv = serve(site.app)
    findings, _ = check(config(srv.url), listed(srv.url, "/a", "/cut"))
    assert codes(findings) == {("http_error", srv.url + "/cut")}
    assert findings[0].detail.startswith("no answer")


def test_redirect_chains_loops_and_the_final_target(serve):
    site = Site(
        {
            **FINE,
            "/one": redirect("/two"),
            "/two": redirect("/three", 302),
            "/three": html(),
            "/loop-a": redirect("/loop-b"),
            "/loop-b": redirect("/loop-a"),
            "/to-gone": redirect("/nowhere"),
        }
    )
    srv = serve(site.app)
    findings, _ = check(config(srv.url), listed(srv.url, "/a", "/one", "/loop-a", "/to-gone"))
    detail = {f.url: f.detail for f in findings}
    assert {f.code for f in findings} == {"redirect"}
    assert set(detail) == {srv.url + p for p in ("/one", "/loop-a", "/to-gone")}
    assert detail[srv.url + "/one"] == f"HTTP 301 to {srv.url}/three (2 hops)"
    assert "redirect loop" in detail[srv.url + "/loop-a"]
    assert "/nowhere" in detail[srv.url + "/to-gone"] and "404" in detail[srv.url + "/to-gone"]


def test_two_listed_urls_redirecting_to_each_other_make_a_loop(serve):
    site = Site({**FINE, "/x": redirect("/y"), "/y": redirect("/x")})
    srv = serve(site.app)
    findings, _ = check(config(srv.url), listed(srv.url, "/x", "/y"))
    assert codes(findings) == {("redirect", srv.url + "/x"), ("redirect", srv.url + "/y")}
    assert all("redirect loop" in f.detail for f in findings)


def test_duplicate_content_names_the_url_kept(serve):
    site = Site({**FINE, "/d": SAME, "/d-copy": SAME})
    srv = serve(site.app)
    findings, _ = check(config(srv.url), listed(srv.url, "/a", "/d-copy", "/d", "/b"))
    assert codes(findings) == {("duplicate_content", srv.url + "/d-copy")}
    assert findings[0].detail == f"same body as {srv.url}/d"


def test_a_url_listed_twice_is_fetched_once_and_named_where_first_listed(serve):
    site = Site({**FINE, "/gone": Page("gone", 404, "text/plain")})
    srv = serve(site.app)
    findings, checked = check(config(srv.url), listed(srv.url, "/gone", "/a", "/gone"))
    assert [(f.code, f.line) for f in findings] == [("http_error", 3)]
    assert site.paths.count("/gone") == 1 and checked == 2


def test_lastmod_in_future_and_newer_than_the_page(serve):
    site = Site({**FINE, "/dated": Page(html(), headers={"Last-Modified": OLD})})
    srv = serve(site.app)
    sitemap = srv.url + "/sitemap.xml"
    items = [
        ListedUrl(srv.url + "/a", sitemap, 3, "2999-01-01"),
        ListedUrl(srv.url + "/b", sitemap, 4, "2020-01-01T00:00:00Z"),
        ListedUrl(srv.url + "/dated", sitemap, 5, "2021-05-01"),
        ListedUrl(srv.url + "/", sitemap, 6, "not a date"),  # the file checks' business
    ]
    findings, _ = check(config(srv.url), items)
    assert codes(findings) == {
        ("lastmod_in_future", srv.url + "/a"),
        ("lastmod_newer_than_page", srv.url + "/dated"),
    }
    newer = next(f for f in findings if f.code == "lastmod_newer_than_page")
    assert "2021-05-01" in newer.detail and "2020-09-13T12:26:40Z" in newer.detail


def test_a_lastmod_equal_to_the_page_is_fine(serve):
    site = Site({**FINE, "/dated": Page(html(), headers={"Last-Modified": OLD})})
    srv = serve(site.app)
    items = listed(srv.url, "/dated", lastmod="2020-09-13T12:26:40+00:00")
    items += listed(srv.url, "/dated", lastmod="2020-09-13")  # a date: that day
    assert check(config(srv.url), items)[0] == []


def test_lastmod_all_same_once_per_file_unless_the_pages_confirm_it(serve):
    paths = [f"/p{i}" for i in range(10)]
    site = Site({**FINE, **{p: html() for p in paths}})
    dated = Site({**FINE, **{p: Page(html(), headers={"Last-Modified": OLD}) for p in paths}})
    srv, confirmed = serve(site.app), serve(dated.app)
    findings, _ = check(config(srv.url), listed(srv.url, *paths, lastmod="2024-03-01"))
    assert codes(findings) == {("lastmod_all_same", None)}
    assert findings[0].sitemap == srv.url + "/sitemap.xml"
    assert "all 10 URLs have lastmod 2024-03-01" in findings[0].detail
    nine = listed(srv.url, *paths[:9], lastmod="2024-03-01")
    assert check(config(srv.url), nine)[0] == []
    same = listed(confirmed.url, *paths, lastmod="2020-09-13T12:26:40Z")
    assert check(config(confirmed.url), same)[0] == []


def test_soft_404_once_per_site(serve):
    async def anything(request: web.Request) -> web.Response:
        return web.Response(text="<html><body>Sorry!</body></html>", content_type="text/html")

    site = Site(dict(FINE), fallback=anything)
    srv = serve(site.app)
    findings, _ = check(config(srv.url), listed(srv.url, "/", "/a"))
    assert codes(findings) == {("soft_404", None)}
    probes = [p for p in site.paths if p.endswith(SOFT_404_SUFFIX)]
    assert len(probes) == 1 and probes[0] in findings[0].detail


def _spaced_check(base: str, paths: list[str], options: dict, done) -> None:
    findings, _ = check(config(base, **options), listed(base, *paths))
    done.put(len(findings))


def _check_in_a_child(base: str, paths: list[str], **options: object) -> None:
    """Spacing is measured at the server, in this process: the checks run in another, so
    the server's timestamps never wait for them to release the GIL."""
    context = multiprocessing.get_context("fork")
    done = context.Queue()
    child = context.Process(target=_spaced_check, args=(base, paths, options, done))
    child.start()
    assert done.get(timeout=60) == 0
    child.join(10)


def test_crawl_delay_and_delay_space_the_checks(serve):
    robots = Page("User-agent: *\nCrawl-delay: 1\n", content_type="text/plain")
    site = Site({**FINE, "/robots.txt": robots, "/c": html()})
    srv = serve(site.app)
    _check_in_a_child(srv.url, ["/a", "/b", "/c"], concurrency=8)
    times = sorted(t for t, path, _ in site.requests if path != "/robots.txt")
    assert len(times) == 4  # three listed URLs and the soft-404 probe
    assert_spaced(times, 1.0)

    plain = Site({**FINE, "/c": html(), "/d": html()})
    srv = serve(plain.app)
    _check_in_a_child(srv.url, ["/a", "/b", "/c", "/d"], concurrency=8, delay=0.3)
    times = sorted(t for t, _, _ in plain.requests)
    assert len(times) == 6  # robots.txt, four listed URLs, the probe
    assert_spaced(times, 0.3)


def test_public_url_fetches_from_staging_and_never_another_host(serve):
    public = "https://www.example.com"
    staging = Site(
        {
            **FINE,
            "/gone": Page("gone", 404, "text/plain"),
            "/old": redirect(public + "/a"),  # a link to the public site leads back here
        }
    )
    other = Site(dict(FINE))
    srv, elsewhere = serve(staging.app), serve(other.app)
    conf = config(srv.url, public_url=public + "/", sitemap_url=public + "/sitemap.xml")
    items = listed(public, "/", "/a", "/gone", "/old") + listed(elsewhere.url, "/a")
    findings, checked = check(conf, items)
    assert codes(findings) == {("http_error", public + "/gone"), ("redirect", public + "/old")}
    assert next(f for f in findings if f.code == "redirect").detail == f"HTTP 301 to {public}/a"
    assert {"/", "/a", "/gone", "/old"} <= set(staging.paths)
    assert other.requests == [] and checked == 4


def _mixed_site(count: int, slow_from: int | None = None) -> Site:
    """Pages /p/0 .. /p/<count-1>, every kind of fault among them; from /p/<slow_from> on,
    each answered after 20 ms (time for a worker started then to be ready, on a busy
    machine, before the check is over)."""

    async def page(request: web.Request) -> web.StreamResponse:
        last = request.path.rsplit("/", 1)[1]
        if not last.isdigit():
            return web.Response(status=404, text="no such page")
        n = int(last)
        if slow_from is not None and n >= slow_from:
            await asyncio.sleep(0.02)
        if n % 17 == 3:
            return web.Response(status=404, text="gone")
        if n % 19 == 5:
            raise web.HTTPMovedPermanently(f"/p/{n - 1}")
        head = '<meta name="robots" content="noindex">' if n % 23 == 7 else ""
        if n % 29 == 11:
            head = f'<link rel="canonical" href="/p/{n - 1}">'
        body = "twin" if n % 31 == 13 else str(n)
        headers = {"Last-Modified": formatdate(1_600_000_000 + n, usegmt=True)}
        return web.Response(
            text=f"<html><head>{head}</head><body>{body}</body></html>",
            content_type="text/html",
            headers=headers,
        )

    return Site(
        {"/robots.txt": Page("User-agent: *\nDisallow: /p/9\n", content_type="text/plain")},
        fallback=page,
    )


def test_workers_give_the_same_findings_as_none(serve):
    count = START_AFTER + 200
    srv = serve(_mixed_site(count, slow_from=START_AFTER).app)
    paths = [f"/p/{n}" for n in range(count)]
    items = listed(srv.url, *paths, lastmod="2020-09-13T12:30:00Z")  # after /p/0-/p/199's
    alone, checked_alone = check(config(srv.url), items)
    with worker_processes(1) as spares:
        crawl = Crawl(config(srv.url))
        keys = {srv.url + p: srv.url + p for p in paths}
        pooled = eventloop.run(crawl.check(list(keys), spares))
        assert crawl._pages is not None and crawl._pages.worker_requests > 0
    with worker_processes(1) as spares:
        together, checked_together = check(config(srv.url), items, workers=spares)
    assert sorted(map(Finding.to_json, alone), key=str) == sorted(
        map(Finding.to_json, together), key=str
    )
    assert checked_alone == checked_together == count
    assert {f.code for f in alone} >= {
        "blocked_by_robots", "http_error", "redirect", "noindex", "canonicalised",
        "duplicate_content", "lastmod_newer_than_page",
    }  # fmt: skip
    assert len(pooled.decisions) >= count


def test_crawl_finds_missing_and_orphan_pages(serve):
    site = Site(
        {
            "/": html("/a", "/b", "/hidden", "/t", "/t-copy", "/moved"),
            "/a": html("/"),
            "/b": html(),  # linked, indexable, in no sitemap: missing
            "/hidden": html(head='<meta name="robots" content="noindex">'),
            "/t": SAME,
            "/t-copy": SAME,  # a twin of a listed page: the sitemap lists one of them
            "/moved": redirect("/c"),  # a link reaches /c through a redirect
            "/c": html(),
            "/lonely": html(),  # listed, no link: orphan
        }
    )
    srv = serve(site.app)
    items = listed(srv.url, "/", "/a", "/t", "/c", "/lonely")
    findings = eventloop.run(
        compare_with_crawl(config(srv.url), items, log=lambda _: None, progress=None)
    )
    assert codes(findings) == {
        ("missing_from_sitemap", srv.url + "/b"),
        ("orphan", srv.url + "/lonely"),
    }
    missing = next(f for f in findings if f.code == "missing_from_sitemap")
    assert missing.sitemap is None and f"linked from {srv.url}/" in missing.detail
    assert "/lonely" not in site.paths  # the crawl fetches what links reach, nothing else


# -- the pure part -------------------------------------------------------------------------


def test_w3c_dates_parse_to_their_precision():
    assert parse_w3c("2024-03-01").when == datetime(2024, 3, 1, tzinfo=UTC)  # type: ignore[union-attr]
    assert parse_w3c("2024-03-01T10:00+02:00").when == datetime(2024, 3, 1, 8, tzinfo=UTC)  # type: ignore[union-attr]
    assert parse_w3c("2024-03-01T10:00:05.5Z").has_time  # type: ignore[union-attr]
    for bad in ("", "yesterday", "2024-13-01", "2024-03-01 10:00", None):
        assert parse_w3c(bad) is None


def test_a_day_of_clock_slack():
    now = datetime(2024, 3, 1, 12, tzinfo=UTC)
    items = [
        ListedUrl("https://e.com/a", "https://e.com/sitemap.xml", 3, "2024-03-02T11:00:00Z"),
        ListedUrl("https://e.com/b", "https://e.com/sitemap.xml", 4, "2024-03-02T13:00:00Z"),
    ]
    found = lastmod_findings(items, {}, Checked(), now=now)
    assert [(f.code, f.url) for f in found] == [("lastmod_in_future", "https://e.com/b")]


def test_the_pages_dates_confirm_a_lastmod_only_when_all_agree():
    sitemap = "https://e.com/sitemap.xml"
    items = [ListedUrl(f"https://e.com/{i}", sitemap, i, "2020-09-13") for i in range(12)]
    keys = {item.loc: item.loc for item in items}
    checked = Checked()
    for item in items:
        checked.pages[item.loc] = PageSeen(200, "text/html", OLD, None)
    now = datetime(2024, 1, 1, tzinfo=UTC)
    assert lastmod_findings(items, keys, checked, now=now) == []
    checked.pages[items[5].loc] = PageSeen(200, "text/html", None, None)  # one sends none
    assert lastmod_findings(items, keys, checked, now=now) == []
    later = formatdate(1_700_000_000, usegmt=True)
    checked.pages[items[6].loc] = PageSeen(200, "text/html", later, None)
    (finding,) = lastmod_findings(items, keys, checked, now=now)
    assert finding.code == "lastmod_all_same" and "1 of 11" in finding.detail


def test_too_many_hops_and_a_target_outside_the_folder_are_said(serve):
    site = Site(
        {
            **FINE,
            "/r0": redirect("/r1"),
            "/r1": redirect("/r2"),
            "/r2": redirect("/r3"),
            "/r3": html(),
            "/docs/away": redirect("/a"),
        }
    )
    srv = serve(site.app)
    conf = config(srv.url + "/docs", max_redirects=2)  # the folder /docs/ audited
    findings, _ = check(conf, listed(srv.url, "/r0", "/docs/away"))
    detail = {f.url: f.detail for f in findings}
    assert detail == {srv.url + "/docs/away": detail[srv.url + "/docs/away"]}  # /r0: outside
    assert "out_of_scope" in detail[srv.url + "/docs/away"]
    assert "/r0" not in site.paths and "/a" not in site.paths
    findings, _ = check(config(srv.url, max_redirects=2), listed(srv.url, "/r0"))
    assert findings[0].detail == f"more than 2 redirects from {srv.url}/r0"
    assert "/r3" not in site.paths


def test_a_canonical_target_not_listed_is_judged_once_for_canonical_broken(serve):
    """#24: a listed page whose canonical (not itself listed) answers 404 is canonical_broken
    with the target's status, not canonicalised: the target is requested once, however many
    pages name it; a working target not listed keeps the page canonicalised."""
    site = Site(
        {
            **FINE,
            "/brokencanon": html(head='<link rel="canonical" href="/missing">'),
            "/brokentoo": html(head='<link rel="canonical" href="/missing">'),
            "/print": html(head='<link rel="canonical" href="/real">'),
            "/real": html(),
        }
    )
    srv = serve(site.app)
    items = listed(srv.url, "/", "/brokencanon", "/brokentoo", "/print")
    findings, checked = check(config(srv.url), items)
    assert codes(findings) == {
        ("canonical_broken", srv.url + "/brokencanon"),
        ("canonical_broken", srv.url + "/brokentoo"),
        ("canonicalised", srv.url + "/print"),
    }, findings
    broken = next(f for f in findings if f.url == srv.url + "/brokencanon")
    assert "/missing" in broken.detail and "404" in broken.detail
    assert site.paths.count("/missing") == 1 and site.paths.count("/real") == 1
    assert checked == 4  # the listed URLs, not the targets
