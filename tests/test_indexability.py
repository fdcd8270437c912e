"""Exactly the indexable pages, and a reason for every URL (issue #4), against live servers.

Every crawl here also checks the decisions file against the sitemap: each listed URL is in
the decisions as `listed`, and no other URL is.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest
from aiohttp import web

from crawler.cli import main
from crawler.core.decide import REASONS
from tests.sites import Page, Site, html, read_decisions, read_published, redirect


@dataclass
class Result:
    code: int
    locs: list[str]
    decisions: dict[str, dict]
    report: dict
    paths: list[str]

    def reason(self, url: str) -> str:
        return self.decisions[url]["reason"]


@pytest.fixture
def crawl(tmp_path, capsys, xsd):
    runs = iter(range(1000))

    def run(site: Site, srv, *args: str, start: str = "/") -> Result:
        n = next(runs)
        out, dec, rep = tmp_path / f"out{n}", tmp_path / f"d{n}.jsonl", tmp_path / f"r{n}.json"
        code = main(
            [
                "crawl",
                srv.url + start,
                "-o",
                str(out),
                "--decisions",
                str(dec),
                "--report",
                str(rep),
                *args,
            ]
        )
        capsys.readouterr()
        locs = read_published(out, xsd).locs if code == 0 else []
        decisions = read_decisions(dec)
        listed = {u for u, d in decisions.items() if d["listed"]}
        assert listed == set(locs), "decisions and sitemap disagree"
        assert len(locs) == len(set(locs)), "a URL is listed twice"
        assert all(d["reason"] in REASONS for d in decisions.values())
        report = json.loads(rep.read_text()) if rep.exists() else {}
        return Result(code, sorted(locs), decisions, report, list(site.paths))

    return run


def test_robots_meta_directives(serve, crawl):
    site = Site(
        {
            "/": html("/upper", "/two", "/ours", "/google", "/none", "/via-noindex"),
            "/upper": html(head='<META NAME="ROBOTS" CONTENT="NOINDEX, FOLLOW">'),
            "/two": html(
                "/from-two",
                head='<meta name="robots" content="index"><meta name="robots" content="nofollow">',
            ),
            "/from-two": html(),
            "/ours": html(head='<meta name="sitemap-crawler" content="noindex">'),
            "/google": html(head='<meta name="googlebot" content="noindex">'),
            "/none": html("/from-none", head='<meta name="robots" content="none">'),
            "/from-none": html(),
            "/via-noindex": html("/only-here", head='<meta name="robots" content="noindex">'),
            "/only-here": html(),
        }
    )
    srv = serve(site.app)
    r = crawl(site, srv)
    u = srv.url
    assert r.locs == sorted(u + p for p in ["/", "/two", "/only-here"])
    # googlebot reads the sitemap (search_engines): what it may not index is not listed
    assert r.reason(u + "/google") == "meta_noindex"
    assert r.decisions[u + "/google"]["detail"] == 'for googlebot: meta googlebot "noindex"'
    assert r.reason(u + "/upper") == "meta_noindex"
    assert "NOINDEX" in r.decisions[u + "/upper"]["detail"].upper()
    assert r.reason(u + "/ours") == "meta_noindex"
    assert r.reason(u + "/none") == "meta_noindex"
    # nofollow and none: links not followed, so never met
    assert "/from-two" not in r.paths and "/from-none" not in r.paths
    # met all the same: their decision says why they were not fetched (#24)
    assert r.reason(u + "/from-two") == "nofollow"
    assert (
        r.decisions[u + "/from-two"]["detail"]
        == f"linked only by nofollow links, e.g. from {u}/two"
    )
    assert r.reason(u + "/from-none") == "nofollow"


def test_x_robots_tag(serve, crawl):
    async def two_headers(request: web.Request) -> web.Response:
        resp = web.Response(text=html(), content_type="text/html")
        resp.headers.add("X-Robots-Tag", "noarchive")
        resp.headers.add("X-Robots-Tag", "nosnippet, noindex")
        return resp

    site = Site(
        {
            "/": html("/plain", "/list", "/two", "/ours", "/theirs", "/nf"),
            "/plain": Page(html(), headers={"X-Robots-Tag": "noindex"}),
            "/list": Page(html(), headers={"X-Robots-Tag": "noarchive, NoIndex"}),
            "/two": two_headers,
            "/ours": Page(html(), headers={"X-Robots-Tag": "sitemap-crawler: noindex"}),
            "/theirs": Page(html(), headers={"X-Robots-Tag": "otherbot: noindex"}),
            "/nf": Page(html("/hidden"), headers={"X-Robots-Tag": "nofollow"}),
            "/hidden": html(),
        }
    )
    srv = serve(site.app)
    r = crawl(site, srv)
    u = srv.url
    assert r.locs == sorted(u + p for p in ["/", "/theirs", "/nf"])
    for p in ("/plain", "/list", "/two", "/ours"):
        assert r.reason(u + p) == "header_noindex", p
    assert "/hidden" not in r.paths


def test_canonicals(serve, crawl):
    site = Site(
        {
            "/": html("/self", "/dup-a", "/rel", "/away", "/hdr"),
            "/self": html(head='<link rel="canonical" href="/self">'),
            "/dup-a": html(head='<link rel="canonical" href="http://HOST/target-a">'),
            "/target-a": html(),
            "/rel": html(head='<link rel="canonical" href="target-b">'),
            "/target-b": html(),
            "/away": html(head='<link rel="canonical" href="http://elsewhere.example/x">'),
            "/hdr": Page(html(), headers={"Link": '</target-c>; rel="canonical"'}),
            "/target-c": html(),
        }
    )
    srv = serve(site.app)
    site.pages["/dup-a"] = html(head=f'<link rel="canonical" href="{srv.url}/target-a">')
    r = crawl(site, srv)
    u = srv.url
    assert r.locs == sorted(u + p for p in ["/", "/self", "/target-a", "/target-b", "/target-c"])
    assert r.reason(u + "/dup-a") == "canonicalised"
    assert r.decisions[u + "/dup-a"]["detail"].endswith(u + "/target-a")
    assert r.reason(u + "/rel") == "canonicalised"
    assert r.reason(u + "/away") == "canonicalised"
    assert "out of scope" in r.decisions[u + "/away"]["detail"]
    assert r.reason(u + "/hdr") == "canonicalised"


def test_exact_duplicates(serve, crawl):
    same = "<html><body><a href='/x'>same page</a></body></html>"
    site = Site(
        {"/": html("/a", "/b"), "/a": Page(same.encode()), "/b": Page(same.encode()), "/x": html()}
    )
    srv = serve(site.app)
    r = crawl(site, srv)
    u = srv.url
    dup = {u + "/a", u + "/b"} - {loc for loc in r.locs}
    assert len(dup) == 1
    (url,) = dup
    assert r.reason(url) == "duplicate_of"
    assert r.decisions[url]["detail"] in {u + "/a", u + "/b"}


def test_soft_404_site_ends_quickly_with_one_url(serve, crawl):
    async def anything(request: web.Request) -> web.Response:
        return web.Response(
            text='<a href="deeper/">more</a><a href="x?page=2">next</a>', content_type="text/html"
        )

    site = Site({}, fallback=anything)
    srv = serve(site.app)
    started = time.monotonic()
    r = crawl(site, srv)
    assert time.monotonic() - started < 10
    assert r.locs == [srv.url + "/"]
    assert r.report["reasons"]["duplicate_of"] >= 1


def test_latin1_page_with_non_ascii_link(serve, crawl):
    body = '<html><body><a href="/café">café</a></body></html>'.encode("latin-1")
    site = Site(
        {"/": Page(body, content_type="text/html; charset=iso-8859-1"), "/caf%C3%A9": html()}
    )
    srv = serve(site.app)
    r = crawl(site, srv)
    assert r.locs == sorted([srv.url + "/", srv.url + "/caf%C3%A9"])


def test_content_types(serve, crawl):
    site = Site(
        {
            "/": html("/doc.pdf", "/pic.jpg", "/page.png"),
            "/doc.pdf": Page(
                b"%PDF-1.4 <a href='/never'>",
                content_type="application/pdf",
                headers={"Last-Modified": "Tue, 15 Nov 1994 12:45:26 GMT"},
            ),
            "/pic.jpg": Page(b"\xff\xd8\xff", content_type="image/jpeg"),
            "/page.png": html(),  # the type comes from Content-Type, not the extension
            "/never": html(),
        }
    )
    srv = serve(site.app)
    r = crawl(site, srv)
    u = srv.url
    assert r.locs == sorted(u + p for p in ["/", "/doc.pdf", "/page.png"])
    assert r.reason(u + "/pic.jpg") == "content_type"
    assert "image/jpeg" in r.decisions[u + "/pic.jpg"]["detail"]
    assert "/never" not in r.paths  # a PDF is listed, not parsed


def test_statuses(serve, crawl):
    chain = {f"/r{i}": redirect(f"/r{i + 1}") for i in range(12)}
    site = Site(
        {
            "/": html("/empty", "/no-location", "/gone", "/r0", "/loop"),
            "/empty": Page("", status=204, content_type=None),
            "/no-location": Page("", status=302, content_type=None),
            "/gone": Page("gone", status=410),
            "/loop": redirect("/loop"),
            "/r12": html(),
            **chain,
        }
    )
    srv = serve(site.app)
    r = crawl(site, srv)
    u = srv.url
    assert r.locs == [u + "/"]
    assert r.reason(u + "/empty") == "http_error"
    assert r.reason(u + "/no-location") == "http_error"
    assert "Location" in r.decisions[u + "/no-location"]["detail"]
    assert r.reason(u + "/gone") == "http_error"
    assert r.reason(u + "/loop") == "redirect" and "loop" in r.decisions[u + "/loop"]["detail"]
    # r0 -> ... -> r10 is ten hops; the eleventh is not followed
    assert r.decisions[u + "/r10"]["detail"] == u + "/r11"
    assert "more than 10 redirects" in r.decisions[u + "/r11"]["detail"]
    assert "/r11" not in r.paths


def test_traps(serve, crawl):
    long = "/" + "x" * 2100
    site = Site(
        {
            "/": html(
                long,
                "/a/b/a/b/a/b/a/b/",
                "/tracked?utm_source=news&id=1&gclid=9",
                "/s;jsessionid=ABC",
                *[f"/cal/{i}" for i in range(8)],
                *[f"/shop/list?sort={i}" for i in range(8)],
            ),
            "/tracked?id=1": html(),
            "/s": html(),
            **{f"/cal/{i}": html() for i in range(8)},
            **{f"/shop/list?sort={i}": html() for i in range(8)},
        }
    )
    srv = serve(site.app)
    r = crawl(site, srv, "--max-pages-per-folder", "5", "--max-pages-per-param", "3")
    u = srv.url
    assert r.reason(u + long) == "too_long"
    assert r.reason(u + "/a/b/a/b/a/b/a/b/") == "trap"
    assert u + "/tracked?id=1" in r.locs and u + "/s" in r.locs
    assert not any("utm_source" in p or "jsessionid" in p for p in r.paths)
    cal = [p for p in r.paths if p.startswith("/cal/")]
    assert len(cal) == 5
    assert len([p for p in r.paths if p.startswith("/shop/list?")]) == 3
    assert r.report["reasons"]["trap"] == 1 + 3 + 5
    assert not any(len(p) > 2048 for p in r.paths)


def test_report_counts_every_reason(serve, crawl):
    site = Site({"/": html("/a", "/missing"), "/a": html()})
    srv = serve(site.app)
    r = crawl(site, srv)
    assert set(r.report["reasons"]) == set(REASONS)
    assert sum(r.report["reasons"].values()) == len(r.decisions)


def test_explain(serve, capsys):
    site = Site(
        {
            "/": html("/a"),
            "/a": html(head='<meta name="robots" content="noindex">'),
            "/robots.txt": Page("User-agent: *\nDisallow: /private", content_type="text/plain"),
            "/moved": redirect("/"),
        }
    )
    srv = serve(site.app)
    assert main(["explain", srv.url + "/"]) == 0
    assert "listed" in capsys.readouterr().out
    assert main(["explain", srv.url + "/a"]) == 3
    out = capsys.readouterr().out
    assert "noindex" in out and "not listed" in out
    assert main(["explain", srv.url + "/private/x"]) == 3
    assert "robots.txt" in capsys.readouterr().out
    assert main(["explain", srv.url + "/moved"]) == 3  # the URL asked about is not listed
    out = capsys.readouterr().out
    assert "redirects" in out and f"would list {srv.url}/ instead" in out


def test_explain_judges_the_url_a_crawl_would_know(serve, capsys):
    site = Site({"/": html("/a"), "/a?id=3": html(), "/index.html": Page(b"same")})
    srv = serve(site.app)
    assert main(["explain", srv.url + "/a?utm_source=news&id=3"]) == 0
    out = capsys.readouterr().out
    assert f"knows this URL as {srv.url}/a?id=3" in out
    assert "utm_source" not in out.split("knows this URL as")[1]
    # a duplicate needs the whole crawl: explain says so rather than pretend
    assert main(["explain", srv.url + "/index.html"]) == 0
    assert "only a whole crawl can tell" in capsys.readouterr().out


def test_explain_ignores_a_crawl_configs_output_settings(serve, capsys, tmp_path):
    srv = serve(Site({"/": html()}).app)
    cfg = tmp_path / "nightly.toml"
    cfg.write_text(
        f'url = "{srv.url}/"\noutput = "{tmp_path / "out"}"\ngzip = true\n'
        f'state = "{tmp_path / "s.db"}"\nrespect_noindex = true\n'
    )
    assert main(["explain", "-c", str(cfg), srv.url + "/"]) == 0
    assert not (tmp_path / "out").exists() and not (tmp_path / "s.db").exists()
    with pytest.raises(SystemExit) as exited:
        main(["explain", srv.url + "/", "--gzip"])  # not an explain option
    assert exited.value.code == 2
    assert "unrecognized arguments: --gzip" in capsys.readouterr().err


def test_explain_judges_in_the_scope_of_a_crawl_from_the_sites_root(serve, capsys, tmp_path):
    about = html(head='<link rel="canonical" href="/about.html">')
    srv = serve(Site({"/": html(), "/about.html": html(), "/print/about.html": about}).app)
    assert main(["explain", srv.url + "/print/about.html"]) == 3
    out = capsys.readouterr().out
    assert (
        out.splitlines()[0] == f"scope: {srv.url}/ (the site's root; -c CONFIG for a crawl's own)"
    )
    assert f"canonical is {srv.url}/about.html" in out and "out of scope" not in out
    # a crawl's own scope, from its config
    cfg = tmp_path / "print.toml"
    cfg.write_text(f'url = "{srv.url}/print/"\n')
    assert main(["explain", "-c", str(cfg), srv.url + "/print/about.html"]) == 3
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"scope: {srv.url}/print/ (the start URL of {cfg})"
    assert f"canonical is {srv.url}/about.html (out of scope)" in out
