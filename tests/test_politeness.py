"""Polite and persistent (issue #5): retries, Retry-After, 429 bursts, and request spacing
measured where it matters, at the server."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli import main
from tests.sites import (
    Page,
    Site,
    assert_spaced,
    crawl_process,
    html,
    read_decisions,
    read_published,
)


@pytest.fixture
def crawl(tmp_path, capsys, xsd):
    runs = itertools.count()

    def run(url: str, *args: str):
        n = next(runs)
        out, dec, rep = tmp_path / f"o{n}", tmp_path / f"d{n}.jsonl", tmp_path / f"r{n}.json"
        code = main(
            [
                "crawl",
                url + "/",
                "-o",
                str(out),
                "--decisions",
                str(dec),
                "--report",
                str(rep),
                *args,
            ]
        )
        err = capsys.readouterr().err
        locs = sorted(read_published(out, xsd).locs) if code == 0 else []
        report = json.loads(rep.read_text()) if rep.exists() else {}
        return code, locs, read_decisions(dec), report, err

    return run


def _flaky(failures: list[web.Response], then: str):
    """A handler answering failures in turn, then 200 with `then`."""
    answers = iter(failures)

    async def handle(request: web.Request) -> web.Response:
        answer = next(answers, None)
        return answer if answer is not None else web.Response(text=then, content_type="text/html")

    return handle


def test_503_with_retry_after_then_200(serve, crawl):
    site = Site(
        {
            "/": html("/flaky"),
            "/flaky": _flaky([web.Response(status=503, headers={"Retry-After": "1"})], html()),
        }
    )
    srv = serve(site.app)
    code, locs, d, _, _ = crawl(srv.url)
    assert code == 0
    assert srv.url + "/flaky" in locs
    assert site.paths.count("/flaky") == 2
    detail = d[srv.url + "/flaky"]["detail"]
    assert "HTTP 503" in detail and "Retry-After" in detail
    assert_spaced([t for t, path, _ in site.requests if path == "/flaky"], 1.0)


def test_always_500_is_bounded(serve, crawl):
    site = Site({"/": html("/broken"), "/broken": Page("no", status=500)})
    srv = serve(site.app)
    code, locs, d, report, _ = crawl(srv.url, "--retries", "2", "--max-error-rate", "1")
    assert code == 0 and locs == [srv.url + "/"]
    assert site.paths.count("/broken") == 3
    assert d[srv.url + "/broken"]["reason"] == "http_error"
    assert "after 2 retries" in d[srv.url + "/broken"]["detail"]
    assert report["broken_links"][0]["status"] == 500


def test_404_is_not_retried(serve, crawl):
    site = Site({"/": html("/missing")})
    srv = serve(site.app)
    crawl(srv.url)
    assert site.paths.count("/missing") == 1


def test_429_bursts_slow_the_crawl_down_and_it_finishes(serve, crawl):
    """A rate limiter: more than 20 requests in any 0.5 s window are refused with 429."""
    window: list[float] = []
    refused = []

    async def limited(request: web.Request) -> web.Response:
        now = time.monotonic()
        window[:] = [t for t in window if now - t < 0.5]
        if len(window) >= 20:
            refused.append(now)
            return web.Response(status=429, text="slow down")
        window.append(now)
        n = int(request.path.strip("/") or 0)
        links = "".join(f'<a href="/{m}">{m}</a>' for m in (2 * n + 1, 2 * n + 2) if m < 120)
        return web.Response(text=f"<p>{n}</p>{links}", content_type="text/html")

    site = Site({"/robots.txt": Page("", status=404)}, fallback=limited)
    srv = serve(site.app)
    code, locs, _, report, _ = crawl(srv.url, "--concurrency", "16", "--retries", "4")
    assert code == 0
    assert refused, "the test server never pushed back"
    assert len(locs) == 120
    assert report["requests"]["slowdowns"] >= 1
    assert report["requests"]["effective_rate"] > 0


def _crawl_in_subprocess(url: str, out: Path, *args: str) -> None:
    """Spacing is measured at the server, which runs in this process: the crawler runs in
    its own, so the server's timestamps never wait for the crawler to release the GIL."""
    proc = crawl_process(url + "/", "-o", str(out), *args)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def test_delay_spaces_requests_at_the_server(serve, tmp_path):
    site = Site({"/": html(*[f"/p{i}" for i in range(8)]), **{f"/p{i}": html() for i in range(8)}})
    srv = serve(site.app)
    _crawl_in_subprocess(srv.url, tmp_path / "o", "--delay", "0.2", "--concurrency", "8")
    times = [t for t, _, _ in site.requests]
    assert len(times) == 10  # robots.txt and nine pages
    assert_spaced(times, 0.2)


def test_crawl_delay_caps_the_rate(serve, tmp_path):
    site = Site(
        {
            "/robots.txt": Page("User-agent: *\nCrawl-delay: 1\n", content_type="text/plain"),
            "/": html("/a", "/b", "/c"),
            "/a": html(),
            "/b": html(),
            "/c": html(),
        }
    )
    srv = serve(site.app)
    _crawl_in_subprocess(srv.url, tmp_path / "o", "--concurrency", "8")
    times = [t for t, path, _ in site.requests if path != "/robots.txt"]
    assert len(times) == 4
    assert_spaced(times, 1.0)


def test_crawl_delay_above_cap_warns(serve, crawl):
    site = Site(
        {
            "/robots.txt": Page("User-agent: *\nCrawl-delay: 60\n", content_type="text/plain"),
            "/": html("/a"),
            "/a": html(),
        }
    )
    srv = serve(site.app)
    code, _, _, _, err = crawl(srv.url, "--max-crawl-delay", "0.3")
    assert code == 0
    assert "Crawl-delay" in err and "max_crawl_delay" in err
    assert_spaced([t for t, path, _ in site.requests if path != "/robots.txt"], 0.3)


# -- --max-time (#17) --------------------------------------------------------------------------


def test_max_time_stops_taking_urls_and_publishes_what_was_found(serve, tmp_path):
    """With --delay 2 and --max-time 3, robots.txt goes at 0 s, the start page at 2 s, and
    the request due at 4 s is never sent: the queue is recorded as max_time reached, and the
    start page is published."""
    from crawler.cli import main
    from tests.sites import Site, html, read_decisions

    site = Site({"/": html("/a", "/b", "/c"), "/a": html(), "/b": html(), "/c": html()})
    srv = serve(site.app)
    out, decisions = tmp_path / "out", tmp_path / "d.jsonl"
    args = ["crawl", srv.url + "/", "-o", str(out), "--decisions", str(decisions)]
    code = main([*args, "--delay", "2", "--max-time", "3", "--concurrency", "4"])
    assert code == 0
    assert site.paths == ["/robots.txt", "/"]
    got = read_decisions(decisions)
    assert got[srv.url + "/"]["reason"] == "listed"
    for page in ("/a", "/b", "/c"):
        assert got[srv.url + page]["reason"] == "limit"
        assert got[srv.url + page]["detail"] == "max_time reached"


def test_max_time_counts_robots_txt_and_the_seed_sitemaps(serve, tmp_path, capsys):
    """With --delay 1 and --max-time 1.5, robots.txt goes at 0 s and /sitemap.xml at 1 s:
    the time is up before the start page's turn at 2 s, so it is recorded as the limit, and
    so is the URL the sitemap named, said as such."""
    site = Site({"/": html(), "/orphan": html()})
    srv = serve(site.app)
    sitemap = (
        '<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{srv.url}/orphan</loc></url></urlset>"
    )
    site.pages["/sitemap.xml"] = Page(sitemap, content_type="application/xml")
    out, decisions = tmp_path / "out", tmp_path / "d.jsonl"
    args = ["crawl", srv.url + "/", "-o", str(out), "--decisions", str(decisions)]
    code = main([*args, "--seed-sitemaps", "--delay", "1", "--max-time", "1.5"])
    assert code == 3  # nothing listed
    assert site.paths == ["/robots.txt", "/sitemap.xml"]
    got = read_decisions(decisions)
    for page in ("/", "/orphan"):
        assert got[srv.url + page]["reason"] == "limit"
        assert got[srv.url + page]["detail"] == "max_time reached"
    err = capsys.readouterr().err
    assert "seed sitemaps: 1 URLs no link led to, not crawled (max_time reached)" in err
    assert "crawled from the sitemaps" not in err
