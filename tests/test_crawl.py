"""End to end: the real CLI against real aiohttp servers on 127.0.0.1 (issue #3)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp import web

from crawler import DEFAULT_USER_AGENT
from crawler.cli import main
from sitemap_out import Entry, EntryError, SitemapWriter
from tests.sites import Page, Site, html, read_decisions, read_published, redirect


def test_crawls_site_and_publishes_valid_sitemap(serve, crawl, tmp_path):
    site = Site(
        {
            "/": html("/a", "b", "./c/", "http://127.0.0.1:1/external"),
            "/a": html("/"),
            "/b": html("/a"),
            "/c/": html("../"),
        }
    )
    srv = serve(site.app)
    code, pub, out, _ = crawl(srv.url + "/")
    assert code == 0
    assert sorted(pub.locs) == sorted(srv.url + p for p in ["/", "/a", "/b", "/c/"])
    assert [p.name for p in pub.files] == ["sitemap.xml"]
    assert f"Sitemap: {srv.url}/sitemap.xml" in out
    assert "4 URLs listed" in out
    # each page fetched once, robots.txt first
    assert site.paths[0] == "/robots.txt"
    assert sorted(site.paths[1:]) == ["/", "/a", "/b", "/c/"]


def test_user_agent_header(serve, crawl):
    site = Site({"/": html()})
    srv = serve(site.app)
    crawl(srv.url + "/")
    assert {h["User-Agent"] for _, _, h in site.requests} == {DEFAULT_USER_AGENT}
    assert DEFAULT_USER_AGENT.startswith("sitemap-crawler/")


# -- scope -----------------------------------------------------------------------------------


def test_scope_is_the_start_folder(serve, crawl):
    site = Site(
        {
            "/docs/index.html": html("/docs/a", "/docs2/page", "/docs", "/other", "/docs/sub/b"),
            "/docs/a": html(),
            "/docs/sub/b": html(),
            "/docs2/page": html(),
            "/docs": html(),
            "/other": html(),
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/docs/index.html")
    assert code == 0
    assert sorted(pub.locs) == sorted(
        srv.url + p for p in ["/docs/index.html", "/docs/a", "/docs/sub/b"]
    )
    assert not {"/docs2/page", "/docs", "/other"} & set(site.paths)


def test_sitemap_url_overrides_scope(serve, crawl):
    site = Site({"/docs/": html("/other", "/docs/a"), "/docs/a": html(), "/other": html()})
    srv = serve(site.app)
    code, pub, out, _ = crawl(srv.url + "/docs/", "--sitemap-url", srv.url + "/sitemap.xml")
    assert code == 0
    assert sorted(pub.locs) == sorted(srv.url + p for p in ["/docs/", "/docs/a", "/other"])
    assert f"Sitemap: {srv.url}/sitemap.xml" in out


def test_start_outside_sitemap_url_scope_is_usage_error(serve, crawl):
    site = Site({"/": html()})
    srv = serve(site.app)
    code, _, _, err = crawl(srv.url + "/", "--sitemap-url", srv.url + "/docs/sitemap.xml")
    assert code == 2
    assert "outside the sitemap's scope" in err
    assert site.requests == []


def test_public_url_rewrites_locs_and_maps_public_links(serve, crawl, tmp_path):
    site = Site(
        {
            "/": html("/a", "https://www.example.com/docs/b", "https://www.example.com/other/c"),
            "/a": html(),
            "/b": html(),
            "/other/c": html(),
        }
    )
    srv = serve(site.app)
    code, pub, out, _ = crawl(
        srv.url + "/", "--public-url", "https://www.example.com/docs/", "--gzip"
    )
    assert code == 0
    assert sorted(pub.locs) == sorted("https://www.example.com/docs/" + p for p in ["", "a", "b"])
    assert "Sitemap: https://www.example.com/docs/sitemap.xml" in out
    index = (tmp_path / "out" / "sitemap.xml").read_text()
    assert "https://www.example.com/docs/sitemap-1.xml.gz" in index
    assert "/other/c" not in site.paths


# -- robots.txt ------------------------------------------------------------------------------

ROBOTS = """\
User-agent: *
Disallow: /

User-agent: googlebot
User-agent: sitemap-crawler
Disallow: /private/
Allow: /private/open
Disallow: /*.php$
Disallow: /tie
Allow: /tie
"""


def test_robots_rules(serve, crawl, tmp_path):
    site = Site(
        {
            "/robots.txt": Page(ROBOTS, content_type="text/plain"),
            "/": html("/private/x", "/private/open", "/page.php", "/page.php?x=1", "/tie", "/ok"),
            "/private/x": html(),
            "/private/open": html(),
            "/page.php": html(),
            "/page.php?x=1": html(),
            "/tie": html(),
            "/ok": html(),
        }
    )
    srv = serve(site.app)
    decisions = tmp_path / "d.jsonl"
    code, pub, _, _ = crawl(
        srv.url + "/", "--decisions", str(decisions), "--search-engines", "googlebot"
    )  # bingbot, which has no group, would be refused everything by *
    assert code == 0
    assert sorted(pub.locs) == sorted(
        srv.url + p for p in ["/", "/private/open", "/page.php?x=1", "/tie", "/ok"]
    )
    assert "/private/x" not in site.paths and "/page.php" not in site.paths
    d = read_decisions(decisions)
    assert d[srv.url + "/private/x"]["reason"] == "robots_txt"
    assert "Disallow: /private/" in d[srv.url + "/private/x"]["detail"]


def test_robots_product_token_follows_user_agent(serve, crawl):
    site = Site(
        {
            "/robots.txt": Page("User-agent: mybot\nDisallow: /a\n", content_type="text/plain"),
            "/": html("/a", "/b"),
            "/a": html(),
            "/b": html(),
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/", "--user-agent", "MyBot/2.0 (+https://x.example)")
    assert code == 0
    assert sorted(pub.locs) == [srv.url + "/", srv.url + "/b"]


def test_robots_404_allows_everything(serve, crawl):
    site = Site({"/": html("/a"), "/a": html()})  # /robots.txt answers 404
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0 and len(pub.locs) == 2


def test_robots_redirect_is_followed(serve, crawl):
    site = Site(
        {
            "/robots.txt": redirect("/real-robots.txt"),
            "/real-robots.txt": Page("User-agent: *\nDisallow: /a\n", content_type="text/plain"),
            "/": html("/a", "/b"),
            "/a": html(),
            "/b": html(),
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert sorted(pub.locs) == [srv.url + "/", srv.url + "/b"]


def _publish_previous(out: Path) -> dict[str, bytes]:
    out.mkdir(parents=True)
    (out / "sitemap.xml").write_bytes(b"previous sitemap")
    return _published_files(out)


def _published_files(out: Path) -> dict[str, bytes]:
    """The folder's files but the writer's own hidden lock and manifest."""
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}


@pytest.mark.parametrize(
    "robots",
    [
        Page("oops", status=500, content_type="text/plain"),
        Page("busy", status=503, content_type="text/plain"),
    ],
)
def test_robots_5xx_lists_nothing_and_keeps_previous_sitemap(serve, crawl, tmp_path, robots):
    site = Site({"/robots.txt": robots, "/": html("/a"), "/a": html()})
    srv = serve(site.app)
    out = tmp_path / "out"
    before = _publish_previous(out)
    code, _, _, err = crawl(srv.url + "/", out=out)
    assert code == 3
    assert "robots.txt" in err and str(robots.status) in err
    assert set(site.paths) == {"/robots.txt"}  # retried, and no page fetched
    assert _published_files(out) == before


def test_robots_unreachable_lists_nothing(serve, crawl, tmp_path):
    async def drop(request: web.Request) -> web.Response:
        request.transport.close()
        raise web.HTTPInternalServerError

    site = Site({"/robots.txt": drop, "/": html()})
    srv = serve(site.app)
    code, _, _, err = crawl(srv.url + "/")
    assert code == 3
    assert "robots.txt" in err
    assert "/" not in site.paths


def test_unreachable_site_exits_3(crawl, tmp_path):
    code, _, _, err = crawl("http://127.0.0.1:9/")
    assert code == 3
    assert "cannot connect" in err or "robots.txt" in err


# -- links -----------------------------------------------------------------------------------

LINK_FORMS = """<!doctype html><html><head>
<link rel="alternate" hreflang="de" href="/de/">
<link rel="stylesheet" href="/style.css">
<link rel="canonical" href="/">
</head><body>
<a href="  /spaced  ">spaced</a>
<a href="/frag#section">fragment</a>
<a href="mailto:a@example.com">m</a><a href="javascript:void(0)">j</a>
<a href="tel:+123">t</a><a href="data:text/html,hi">d</a><a href="ftp://x/y">f</a>
<map><area href="/area" alt="x"></map>
<!-- <a href="/in-comment">c</a> -->
<script>document.write('<a href="/in-script">s</a>')</script>
<template><a href="/in-template">t</a></template>
<a href="/nofollowed" rel="nofollow">n</a>
<a href="/~user/">tilde</a><a href="/%7euser/">encoded tilde</a><a href="./~user/">dot tilde</a>
<a href="/x/../dotted">dots</a>
<a href="/%c3%bcml">lower hex</a>
</body></html>"""


def test_link_forms(serve, crawl, tmp_path):
    site = Site(
        {
            "/": LINK_FORMS,
            "/de/": html(),
            "/spaced": html(),
            "/frag": html(),
            "/area": html(),
            "/nofollowed": html(),
            "/~user/": html(),
            "/dotted": html(),
            "/%C3%BCml": html(),
            "/style.css": Page("x", content_type="text/css"),
            "/in-comment": html(),
            "/in-script": html(),
            "/in-template": html(),
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert sorted(pub.locs) == sorted(
        srv.url + p
        for p in ["/", "/de/", "/spaced", "/frag", "/area", "/~user/", "/dotted", "/%C3%BCml"]
    )
    assert site.paths.count("/~user/") == 1
    for never in ("/in-comment", "/in-script", "/in-template", "/nofollowed"):
        assert never not in site.paths


def test_a_legacy_page_links_with_its_own_encoding_in_queries(serve, crawl):
    page = '<meta charset="windows-1252"><a href="/s?q=café">q</a><a href="/café">p</a>'
    site = Site(
        {
            "/": Page(page.encode("cp1252"), content_type="text/html"),
            "/s?q=caf%E9": html(),
            "/caf%C3%A9": html(),
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert sorted(pub.locs) == [srv.url + p for p in ("/", "/caf%C3%A9", "/s?q=caf%E9")]
    assert "/s?q=caf%E9" in site.paths  # what a browser asks for, not q=caf%C3%A9


def test_follow_nofollow_option(serve, crawl):
    site = Site({"/": '<a href="/n" rel="nofollow">n</a>', "/n": html()})
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/", "--follow-nofollow")
    assert code == 0
    assert sorted(pub.locs) == [srv.url + "/", srv.url + "/n"]


def test_base_href(serve, crawl):
    site = Site(
        {
            "/": '<head><base href="/sub/"></head><a href="page">p</a>',
            "/sub/page": html(),
            "/page": html(),
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert sorted(pub.locs) == [srv.url + "/", srv.url + "/sub/page"]


def test_meta_nofollow_page_links_not_followed(serve, crawl):
    site = Site(
        {
            "/": html("/nf"),
            "/nf": html("/hidden", head='<meta name="robots" content="nofollow">'),
            "/hidden": html(),
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert sorted(pub.locs) == [srv.url + "/", srv.url + "/nf"]
    assert "/hidden" not in site.paths


# -- redirects -------------------------------------------------------------------------------


def test_redirects_each_hop_checked(serve, crawl, tmp_path):
    site = Site(
        {
            "/robots.txt": Page("User-agent: *\nDisallow: /secret\n", content_type="text/plain"),
            "/": html("/moved", "/away", "/to-secret", "/chain", "/also-new"),
            "/also-new": redirect("/new"),  # a redirect to a URL met before
            "/moved": redirect("/new"),
            "/new": html(),
            "/away": redirect("http://127.0.0.1:1/elsewhere"),
            "/to-secret": redirect("/secret", 302),
            "/secret": html(),
            "/chain": redirect("/c2", 307),
            "/c2": redirect("/c3", 308),
            "/c3": html(),
        }
    )
    srv = serve(site.app)
    decisions = tmp_path / "d.jsonl"
    code, pub, _, _ = crawl(srv.url + "/", "--decisions", str(decisions))
    assert code == 0
    assert sorted(pub.locs) == sorted(srv.url + p for p in ["/", "/new", "/c3"])
    assert "/secret" not in site.paths
    d = read_decisions(decisions)
    assert d[srv.url + "/moved"]["reason"] == "redirect"
    assert d[srv.url + "/moved"]["detail"] == srv.url + "/new"
    assert d[srv.url + "/secret"]["reason"] == "robots_txt"
    assert d["http://127.0.0.1:1/elsewhere"]["reason"] == "out_of_scope"


def test_redirect_loop_recorded(serve, crawl, tmp_path):
    site = Site({"/": html("/l1"), "/l1": redirect("/l2"), "/l2": redirect("/l1")})
    srv = serve(site.app)
    decisions = tmp_path / "d.jsonl"
    code, pub, _, _ = crawl(srv.url + "/", "--decisions", str(decisions))
    assert code == 0
    assert pub.locs == [srv.url + "/"]
    d = read_decisions(decisions)
    assert "loop" in d[srv.url + "/l2"]["detail"]


# -- content types, status, lastmod ------------------------------------------------------------


def test_only_html_and_pdf_200s_listed(serve, crawl):
    site = Site(
        {
            "/": html("/doc.pdf", "/img.png", "/style", "/gone", "/err", "/xhtml"),
            "/doc.pdf": Page(b"%PDF-1.4", content_type="application/pdf"),
            "/img.png": Page(b"\x89PNG", content_type="image/png"),
            "/style": Page("a{}", content_type="text/css"),
            "/gone": Page("gone", status=410),
            "/err": Page("err", status=500),
            "/xhtml": Page(
                "<html xmlns='http://www.w3.org/1999/xhtml'><body/></html>",
                content_type="application/xhtml+xml",
            ),
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/", "--max-error-rate", "1")  # /err: 1 of 7 failed
    assert code == 0
    assert sorted(pub.locs) == sorted(srv.url + p for p in ["/", "/doc.pdf", "/xhtml"])


def test_lastmod_from_last_modified(serve, crawl):
    site = Site(
        {
            "/": Page(
                html("/good", "/bad", "/date-only"),
                headers={"Last-Modified": "Tue, 15 Nov 1994 12:45:26 GMT"},
            ),
            "/good": Page(html(), headers={"Last-Modified": "Sunday, 06-Nov-94 08:49:37 GMT"}),
            "/bad": Page(html(), headers={"Last-Modified": "yesterday-ish"}),
            "/date-only": html(),  # aiohttp sends a Date header: it must not become lastmod
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert pub.lastmods == {
        srv.url + "/": "1994-11-15T12:45:26+00:00",
        srv.url + "/good": "1994-11-06T08:49:37+00:00",
        srv.url + "/bad": None,
        srv.url + "/date-only": None,
    }


def test_priority_by_depth_and_changefreq(serve, crawl, tmp_path):
    site = Site({"/": html("/a"), "/a": html("/b"), "/b": html()})
    srv = serve(site.app)
    code, _, _, _ = crawl(srv.url + "/", "--priority-by-depth", "--changefreq", "weekly")
    assert code == 0
    text = (tmp_path / "out" / "sitemap.xml").read_text()
    assert "<priority>1.0</priority>" in text or "<priority>1</priority>" in text
    assert "<priority>0.64</priority>" in text
    assert text.count("<changefreq>weekly</changefreq>") == 3


# -- limits, output options ------------------------------------------------------------------


def _chain_site(n: int) -> Site:
    return Site({("/" if i == 0 else f"/p{i}"): html(f"/p{i + 1}") for i in range(n)})


def test_max_depth_and_max_pages(serve, crawl, tmp_path):
    srv = serve(_chain_site(10).app)
    code, pub, _, _ = crawl(srv.url + "/", "--max-depth", "2")
    assert sorted(pub.locs) == sorted(srv.url + p for p in ["/", "/p1", "/p2"])
    code, pub, _, _ = crawl(srv.url + "/", "--max-pages", "4", out=tmp_path / "o2")
    assert code == 0
    assert len(pub.locs) == 4


def test_rollover_gzip_and_index(serve, crawl, tmp_path, xsd):
    pages = {"/": html(*[f"/p{i}" for i in range(25)])}
    pages.update({f"/p{i}": html() for i in range(25)})
    srv = serve(Site(pages).app)
    code, pub, _, _ = crawl(srv.url + "/", "--gzip", "--max-urls-per-file", "10")
    assert code == 0
    names = sorted(p.name for p in pub.files)
    assert names == ["sitemap-1.xml.gz", "sitemap-2.xml.gz", "sitemap-3.xml.gz", "sitemap.xml"]
    assert len(pub.locs) == len(set(pub.locs)) == 26
    xsd.index(tmp_path / "out" / "sitemap.xml")


def test_text_format(serve, crawl, tmp_path):
    srv = serve(Site({"/": html("/a"), "/a": html()}).app)
    code, _, _, _ = crawl(srv.url + "/", "--format", "txt")
    assert code == 0
    assert (tmp_path / "out" / "sitemap.txt").read_text().splitlines() == [
        srv.url + "/",
        srv.url + "/a",
    ]


def test_report_json_with_broken_links(serve, crawl, tmp_path):
    site = Site(
        {
            "/": html("/a", "/missing"),
            "/a": html("/missing", "/boom"),
            "/boom": Page("x", status=500),
        }
    )
    srv = serve(site.app)
    report = tmp_path / "r.json"
    code, _, _, _ = crawl(srv.url + "/", "--report", str(report), "--max-error-rate", "1")
    assert code == 0
    data = json.loads(report.read_text())
    assert data["urls_listed"] == 2
    assert data["reasons"]["http_error"] == 2
    broken = {b["url"]: b for b in data["broken_links"]}
    assert broken[srv.url + "/missing"]["status"] == 404
    assert sorted(broken[srv.url + "/missing"]["linked_from"]) == [srv.url + "/", srv.url + "/a"]
    assert broken[srv.url + "/boom"]["linked_from"] == [srv.url + "/a"]


def test_no_indexable_page_exits_3_and_keeps_previous(serve, crawl, tmp_path):
    srv = serve(Site({"/": Page("x", status=404)}).app)
    out = tmp_path / "out"
    before = _publish_previous(out)
    report = tmp_path / "r.json"
    code, _, _, err = crawl(srv.url + "/", "--report", str(report), out=out)
    assert code == 3
    assert "nothing listed" in err
    assert _published_files(out) == before
    data = json.loads(report.read_text())  # the report says why
    assert data["published"] is False and "nothing listed" in data["error"]
    assert data["reasons"]["http_error"] == 1


# -- config ----------------------------------------------------------------------------------


def test_toml_config_and_cli_override(serve, tmp_path, capsys, xsd):
    srv = serve(_chain_site(6).app)
    cfg = tmp_path / "c.toml"
    out = tmp_path / "out"
    cfg.write_text(f'url = "{srv.url}/"\noutput = "{out}"\nmax_depth = 1\nquiet = true\n')
    assert main(["crawl", "-c", str(cfg)]) == 0
    assert len(read_published(out, xsd).locs) == 2
    assert capsys.readouterr().out == ""
    assert main(["crawl", "-c", str(cfg), "--max-depth", "3"]) == 0
    assert len(read_published(out, xsd).locs) == 4


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("max_dept = 3", "unknown key 'max_dept' in {cfg}; did you mean 'max_depth'?"),
        ("concurrency = 0", "concurrency must be at least 1"),
        ("concurrency = 'many'", "concurrency must be a whole number, got 'many'"),
        ("format = 'html'", "format must be one of xml, txt"),
        ("max_urls_per_file = 60000", "max_urls_per_file may not exceed"),
        ("gzip = 'yes'", "gzip must be true or false, got 'yes'"),
        ("this is not toml", "not valid TOML"),
    ],
)
def test_bad_config_is_exit_2_before_any_request(serve, tmp_path, capsys, toml, message):
    site = Site({"/": html()})
    srv = serve(site.app)
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml + "\n")
    assert main(["crawl", srv.url + "/", "-c", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert message.format(cfg=cfg) in err and len(err.strip().splitlines()) == 1
    assert site.requests == []


def _exit_code(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exc:  # argparse's own errors
        return int(exc.code or 0)


@pytest.mark.parametrize(
    "args",
    [
        ["crawl", "not a url"],
        ["crawl", "ftp://example.com/"],
        ["crawl"],
        ["crawl", "http://127.0.0.1:1/", "--concurrency", "x"],
        ["crawl", "--bogus"],
        ["crawl", "http://127.0.0.1:1/", "-c", "/nonexistent.toml"],
        ["crawl", "http://user:pw@127.0.0.1:1/"],
    ],
)
def test_bad_usage_is_one_line_exit_2(capsys, args):
    assert _exit_code(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("sitemap-crawler ")
    with pytest.raises(SystemExit):
        main(["crawl", "--help"])
    text = capsys.readouterr().out
    assert "--max-urls-per-file" in text and "examples:" in text


def test_a_url_the_protocol_cannot_hold_is_recorded_not_fatal(serve, crawl, tmp_path):
    site = Site({"/": html("/page"), "/page": html()})
    srv = serve(site.app)
    decisions = tmp_path / "d.jsonl"
    # the public home page, http://a.b/, is shorter than the 12 characters the XSD allows
    code, pub, _, _ = crawl(
        srv.url + "/", "--public-url", "http://a.b/", "--decisions", str(decisions)
    )
    assert code == 0
    assert pub.locs == ["http://a.b/page"]
    d = read_decisions(decisions)["http://a.b/"]
    assert d["reason"] == "fetch_error" and "cannot be listed" in d["detail"]


def test_a_loc_too_big_for_any_file_fails_alone(serve, crawl, tmp_path):
    """With a small byte limit, one URL too long for a file of its own is recorded as not
    listed at its own page; every other page is still in the sitemap (none lost in a batch)."""
    long_path = "/" + "x" * 900
    pages = {"/": html(long_path, *[f"/p{i}" for i in range(2100)]), long_path: html()}
    pages.update({f"/p{i}": html() for i in range(2100)})
    srv = serve(Site(pages).app)
    decisions = tmp_path / "d.jsonl"
    code, pub, _, _ = crawl(
        srv.url + "/", "--max-bytes-per-file", "1024", "--decisions", str(decisions)
    )
    assert code == 0
    d = read_decisions(decisions)
    listed = {u for u, r in d.items() if r["listed"]}
    assert set(pub.locs) == listed
    assert len(listed) == 2101
    assert d[srv.url + long_path]["reason"] == "fetch_error"
    assert "cannot be listed" in d[srv.url + long_path]["detail"]


def test_a_loc_too_big_with_its_lastmod_is_not_listed(serve, crawl, tmp_path):
    """The judge checks a listing's entry with its lastmod (the header's, as published
    with --lastmod header): at a small byte limit, a loc that would fit without its
    <lastmod> but not with it is recorded as not listed, and the publish still succeeds.
    Locs of every length across that edge, each page with a Last-Modified."""
    stamp = {"Last-Modified": "Tue, 15 Nov 1994 08:12:31 GMT"}
    paths = ["/" + "y" * n for n in range(790, 880)]
    pages: dict[str, Page | str] = {"/": html(*paths)}
    pages.update({path: Page(html(), headers=stamp) for path in paths})
    srv = serve(Site(pages).app)
    decisions = tmp_path / "d.jsonl"
    code, pub, _, _ = crawl(
        srv.url + "/", "--max-bytes-per-file", "1024", "--lastmod", "header",
        "--decisions", str(decisions),
    )  # fmt: skip
    assert code == 0
    d = read_decisions(decisions)
    listed = {u for u, r in d.items() if r["listed"]}
    assert set(pub.locs) == listed
    refused = sorted(len(u) for u, r in d.items() if "cannot be listed" in r["detail"])
    longest = max(len(u) for u in listed if u != srv.url + "/")
    assert refused and longest < refused[0]  # one edge: every loc below it listed
    fits_bare = Entry(srv.url + "/" + "y" * (refused[0] - len(srv.url) - 1))
    with pytest.raises(EntryError):  # the first refused fails with its lastmod ...
        SitemapWriter(tmp_path / "w", max_bytes=1024).check(
            Entry(fits_bare.loc, datetime(1994, 11, 15, 8, 12, 31, tzinfo=UTC))
        )
    SitemapWriter(tmp_path / "w2", max_bytes=1024).check(fits_bare)  # ... not without


def test_canonical_with_a_session_id_is_the_page_itself(serve, crawl, tmp_path):
    """Servlet sites put a fresh ;jsessionid in every canonical when no cookie is kept: it is
    stripped like any link's, so the page is self-canonical, not an endless chain."""
    site = Site(
        {
            "/": html("/a", head='<link rel="canonical" href="/;jsessionid=S0">'),
            "/a": html(head='<link rel="canonical" href="/a;jsessionid=S1?x=1&utm_source=y">'),
            "/a?x=1": html(),
        }
    )
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert sorted(pub.locs) == [srv.url + "/", srv.url + "/a?x=1"]
    assert not any("jsessionid" in p for p in site.paths)


def test_public_url_never_fetches_the_public_host(serve, crawl, tmp_path):
    production = Site({"/blog": html()})
    prod = serve(production.app)
    staging = Site({"/": html(prod.url + "/blog", prod.url + "/docs/a"), "/a": html()})
    srv = serve(staging.app)
    decisions = tmp_path / "d.jsonl"
    code, pub, _, _ = crawl(
        srv.url + "/",
        "--public-url",
        prod.url + "/docs/",
        "--sitemap-url",
        prod.url + "/sitemap.xml",
        "--decisions",
        str(decisions),
    )
    assert code == 0
    assert sorted(pub.locs) == [prod.url + "/docs/", prod.url + "/docs/a"]
    assert production.requests == []
    assert read_decisions(decisions)[prod.url + "/blog"]["reason"] == "out_of_scope"


def test_an_error_in_a_worker_keeps_its_exit_code(serve, crawl, tmp_path, monkeypatch):
    from crawler.shell.state import CrawlState, StateError

    def disk_full(self):
        raise StateError("cannot write the state file: No space left on device")

    monkeypatch.setattr(CrawlState, "maybe_checkpoint", disk_full)
    srv = serve(Site({"/": html("/a"), "/a": html()}).app)
    code, _, _, err = crawl(srv.url + "/", "--state", str(tmp_path / "s.sqlite"))
    assert code == 2
    assert "No space left on device" in err and "ExceptionGroup" not in err


def test_a_signal_during_publish_lets_the_publish_finish(serve, crawl, tmp_path, monkeypatch):
    import os
    import signal
    import threading

    from crawler.shell.loop import CrawlLoop
    from sitemap_out.writer import SitemapWriter

    publish, on_signal = SitemapWriter.publish, CrawlLoop._on_signal
    taken = threading.Event()

    def noting_signal(self, sig):
        on_signal(self, sig)
        taken.set()

    def interrupted_publish(self):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the files are being installed
        # publish() runs in a thread: go on once the crawl's loop has taken the signal
        if not taken.wait(30):
            pytest.fail("the crawl did not take the SIGINT within 30 s", pytrace=False)
        return publish(self)

    monkeypatch.setattr(CrawlLoop, "_on_signal", noting_signal)
    monkeypatch.setattr(SitemapWriter, "publish", interrupted_publish)
    srv = serve(Site({"/": html("/a"), "/a": html()}).app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert len(pub.locs) == 2


def test_base_href_with_a_fragment(serve, crawl):
    site = Site({"/": '<head><base href="/x/#/y/"></head><a href="c">c</a>', "/x/c": html()})
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert sorted(pub.locs) == [srv.url + "/", srv.url + "/x/c"]


@pytest.mark.parametrize(
    ("args", "entry"),
    [([], "sitemap.xml"), (["--format", "txt"], "sitemap.txt"), (["--gzip"], "sitemap.xml")],
)
def test_the_robots_txt_line_names_the_file_published(serve, tmp_path, capsys, args, entry):
    srv = serve(Site({"/": html("/a"), "/a": html()}).app)
    out, report = tmp_path / "out", tmp_path / "r.json"
    assert main(["crawl", srv.url + "/", "-o", str(out), "--report", str(report), *args]) == 0
    assert (out / entry).is_file()
    assert f"Sitemap: {srv.url}/{entry}" in capsys.readouterr().out
    assert json.loads(report.read_text())["sitemap_url"] == f"{srv.url}/{entry}"


# -- the start URL's own problems, said plainly (#17) ----------------------------------------


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (404, ": no page there, check the URL"),
        (401, ": the site wants credentials (--auth"),
        (403, ": forbidden"),
        (410, ": gone"),
        (500, ""),
    ],
)
def test_a_start_url_that_fails_says_so(serve, crawl, tmp_path, status, hint):
    srv = serve(Site({"/docs/": Page("x", status=status), "/docs/a": html()}).app)
    code, _, _, err = crawl(srv.url + "/docs/", "--retries", "0", "--max-error-rate", "1")
    assert code == 3
    assert f"the start URL {srv.url}/docs/ answered HTTP {status}{hint}" in err
    assert "no indexable page" not in err


def test_an_excluded_start_url_names_the_pattern(serve, crawl):
    srv = serve(Site({"/x/": html("/x/a"), "/x/a": html()}).app)
    code, _, _, err = crawl(srv.url + "/x/", "--exclude", "/x/*")
    assert code == 3
    assert f"the start URL {srv.url}/x/ is excluded by --exclude /x/*" in err
    assert "no indexable page" not in err


def test_a_start_url_redirecting_to_another_origin_says_start_there(serve, crawl):
    other = serve(Site({"/": html()}).app)
    srv = serve(Site({"/": redirect(other.url + "/")}).app)
    code, _, _, err = crawl(srv.url + "/")
    assert code == 3
    assert (
        f"the start URL {srv.url}/ redirects to {other.url}/, outside the sitemap's scope "
        f"{srv.url}/: start there" in err
    )


def test_a_start_url_redirecting_within_scope_to_a_404(serve, crawl):
    srv = serve(Site({"/": redirect("/home"), "/home": Page("x", status=404)}).app)
    code, _, _, err = crawl(srv.url + "/")
    assert code == 3
    assert f"the start URL {srv.url}/ (redirected to {srv.url}/home) answered HTTP 404" in err


def test_public_url_is_the_only_origin_in_decisions_and_report(serve, crawl, tmp_path):
    """Every URL written anywhere is the public one (#17); only the robots.txt note names
    the server that was actually asked for its robots.txt."""
    site = Site(
        {
            "/": html("/a", "/moved", "/missing", "/copy", "/print"),
            "/a": Page(b"<html><body>same</body></html>"),
            "/copy": Page(b"<html><body>same</body></html>"),
            "/moved": redirect("/a"),
            "/print": html(head='<link rel="canonical" href="/a">'),
        }
    )
    srv = serve(site.app)
    report, decisions = tmp_path / "r.json", tmp_path / "d.jsonl"
    code, _, out, _ = crawl(
        srv.url + "/", "--public-url", "https://www.example.com/", "--report", str(report),
        "--decisions", str(decisions),
    )  # fmt: skip
    assert code == 0
    staging = srv.url.removeprefix("http://")
    got = read_decisions(decisions)
    assert {d["reason"] for d in got.values()} >= {
        "listed", "redirect", "http_error", "duplicate_of", "canonicalised",
    }  # fmt: skip
    assert staging not in decisions.read_text()
    data = json.loads(report.read_text())
    data.pop("robots_txt")
    assert data.pop("start_url") == srv.url + "/"  # as the user gave it
    assert staging not in json.dumps(data)
    assert staging not in out
