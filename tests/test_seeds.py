"""Seeds beyond one start URL (issue #17): more start URLs in one crawl, and --seed-sitemaps,
which also starts from the URLs of the site's own sitemaps (robots.txt `Sitemap:` lines, else
/sitemap.xml). The real CLI against real servers on 127.0.0.1; every sitemap it publishes is
read back and validated against the XSD."""

from __future__ import annotations

import asyncio
import gzip
import json
import signal
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli import main
from tests.procs import Watched, wait_for
from tests.sites import (
    Page,
    Site,
    crawl_process,
    html,
    read_decisions,
    read_published,
    redirect,
)

XMLNS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str) -> Page:
    body = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return Page(f'<?xml version="1.0"?>\n<urlset {XMLNS}>{body}</urlset>', content_type="text/xml")


def index(*locs: str) -> Page:
    body = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    xml = f'<?xml version="1.0"?>\n<sitemapindex {XMLNS}>{body}</sitemapindex>'
    return Page(xml, content_type="application/xml")


def robots(*lines: str) -> Page:
    return Page(
        "User-agent: *\n" + "".join(f"{line}\n" for line in lines), content_type="text/plain"
    )


@pytest.fixture
def crawl(tmp_path, capsys, xsd):
    """crawl(*args) -> (exit code, published locs or None, decisions by URL, stderr)."""

    def run(*args: str, out: Path | None = None):
        out = out or tmp_path / "out"
        decisions = tmp_path / "decisions.jsonl"
        code = main(["crawl", *args, "-o", str(out), "--decisions", str(decisions)])
        err = capsys.readouterr().err
        published = read_published(out, xsd) if code == 0 else None
        found = read_decisions(decisions) if decisions.exists() else {}
        return code, sorted(published.locs) if published else None, found, err

    return run


# -- more start URLs -------------------------------------------------------------------------


def test_several_start_urls_reach_disjoint_parts_of_a_site(serve, crawl):
    site = Site(
        {
            "/": html("/a"),
            "/a": html("/"),
            "/b/": html("c"),  # no page of the first part links here
            "/b/c": html(),
            "/d": html(),
        }
    )
    srv = serve(site.app)
    u = srv.url
    code, locs, decisions, _ = crawl(u + "/", u + "/b/", u + "/d", u + "/")
    assert code == 0
    assert locs == sorted(u + p for p in ["/", "/a", "/b/", "/b/c", "/d"])
    assert sorted(site.paths) == sorted(["/robots.txt", "/", "/a", "/b/", "/b/c", "/d"])
    for start in ("/", "/b/", "/d"):
        assert decisions[u + start]["seed"] == "start"
        assert decisions[u + start]["depth"] == 0 and decisions[u + start]["referrer"] is None
    assert decisions[u + "/b/c"]["referrer"] == u + "/b/" and "seed" not in decisions[u + "/b/c"]


def test_a_start_url_robots_txt_forbids_is_not_fetched(serve, crawl):
    site = Site({"/robots.txt": robots("Disallow: /private/"), "/": html(), "/private/x": html()})
    srv = serve(site.app)
    code, locs, decisions, _ = crawl(srv.url + "/", srv.url + "/private/x")
    assert code == 0 and locs == [srv.url + "/"]
    assert "/private/x" not in site.paths
    seed = decisions[srv.url + "/private/x"]
    assert seed["reason"] == "robots_txt" and seed["seed"] == "start"


@pytest.mark.parametrize(
    ("seed", "message"),
    [
        ("/other/page", "seed URL {u}/other/page is outside the sitemap's scope {u}/docs/"),
        ("http://127.0.0.1:1/docs/x", "outside the sitemap's scope"),
        ("ftp://127.0.0.1/docs/x", "seed URL: invalid URL 'ftp://127.0.0.1/docs/x'"),
    ],
)
def test_a_seed_outside_the_scope_is_a_usage_error_before_any_request(serve, crawl, seed, message):
    site = Site({"/docs/": html()})
    srv = serve(site.app)
    u = srv.url
    target = u + seed if seed.startswith("/") else seed
    code, locs, _, err = crawl(u + "/docs/", target)
    assert code == 2 and locs is None
    assert err.count("\n") == 1 and message.format(u=u) in err, err
    assert site.requests == []


def test_seeds_and_seed_sitemaps_from_the_toml_config(serve, tmp_path, capsys, xsd):
    site = Site(
        {
            "/robots.txt": robots(),
            "/": html(),
            "/b": html(),
            "/sitemap.xml": Page(""),  # set below: it names the server's own address
            "/orphan": html(),
        }
    )
    srv = serve(site.app)
    site.pages["/sitemap.xml"] = urlset(srv.url + "/orphan")
    config = tmp_path / "c.toml"
    config.write_text(
        f'url = "{srv.url}/"\nseeds = ["{srv.url}/b"]\nseed_sitemaps = true\n'
        f'output = "{tmp_path / "out"}"\nquiet = true\n'
    )
    assert main(["crawl", "-c", str(config)]) == 0
    capsys.readouterr()
    locs = read_published(tmp_path / "out", xsd).locs
    assert sorted(locs) == sorted(srv.url + p for p in ["/", "/b", "/orphan"])
    # more URLs on the command line replace the file's seeds
    assert main(["crawl", "-c", str(config), srv.url + "/", srv.url + "/orphan"]) == 0
    assert "/b" not in read_published(tmp_path / "out", xsd).locs


# -- seed sitemaps ---------------------------------------------------------------------------


def _tcpdump_like(base: str) -> Site:
    """A site whose /linktypes/ only its own sitemap names: robots.txt names an index of two
    sitemaps, one of them gzipped; /gone is in a sitemap and answers 404."""
    part2 = urlset(base + "/linktypes/", base + "/gone", base + "/linktypes/")
    return Site(
        {
            "/robots.txt": robots("Disallow: /private/", f"Sitemap: {base}/sitemap_index.xml"),
            "/": html("/a"),
            "/a": html("/"),
            "/linktypes/": html("/linktypes/LINKTYPE_ETHERNET.html"),
            "/linktypes/LINKTYPE_ETHERNET.html": html(),
            "/sitemap_index.xml": index(base + "/sitemaps/one.xml", base + "/sitemaps/two.xml.gz"),
            "/sitemaps/one.xml": urlset(base + "/", base + "/a"),
            "/sitemaps/two.xml.gz": Page(
                gzip.compress(str(part2.body).encode()), content_type="application/x-gzip"
            ),
        }
    )


def _serve_on_own_address(serve, make) -> tuple[Site, str]:
    """A site whose pages name its own address, known once it is served."""
    holder = Site({})
    srv = serve(holder.app)
    site = make(srv.url)
    holder.pages = site.pages
    holder.fallback = site.fallback
    return holder, srv.url


def test_seed_sitemaps_from_robots_txt_find_a_page_no_link_leads_to(serve, crawl, tmp_path):
    site, u = _serve_on_own_address(serve, _tcpdump_like)
    report = tmp_path / "report.json"
    code, locs, decisions, err = crawl(u + "/", "--seed-sitemaps", "--report", str(report))
    assert code == 0, err
    assert locs == sorted(
        u + p for p in ["/", "/a", "/linktypes/", "/linktypes/LINKTYPE_ETHERNET.html"]
    )
    # marked: the page only the sitemap names, with the sitemap that names it
    orphan = decisions[u + "/linktypes/"]
    assert orphan["listed"] and orphan["depth"] == 0
    assert orphan["seed"] == u + "/sitemaps/two.xml.gz" and orphan["referrer"] is None
    # not marked: what the links reach, though the sitemap names it too, and links from a seed
    assert "seed" not in decisions[u + "/a"] and decisions[u + "/a"]["referrer"] == u + "/"
    child = decisions[u + "/linktypes/LINKTYPE_ETHERNET.html"]
    assert "seed" not in child and child["referrer"] == u + "/linktypes/"
    assert decisions[u + "/"]["seed"] == "start"
    # the sitemaps robots.txt names, not the guess; the links first, then the seeds
    paths = site.paths
    assert "/sitemap.xml" not in paths
    assert paths[:4] == ["/robots.txt", "/sitemap_index.xml", "/sitemaps/one.xml",
                         "/sitemaps/two.xml.gz"]  # fmt: skip
    assert paths.index("/linktypes/") > paths.index("/a")
    assert paths.count("/linktypes/") == 1
    # a broken URL only a sitemap names says so in the report
    data = json.loads(report.read_text())
    assert data["broken_links"] == [
        {"url": u + "/gone", "status": 404, "linked_from": [u + "/sitemaps/two.xml.gz"]}
    ]
    assert decisions[u + "/gone"]["seed"] == u + "/sitemaps/two.xml.gz"
    assert f"seed sitemap {u}/sitemaps/two.xml.gz: 2 URLs" in data["seed_sitemaps"]
    assert "warning" not in err


def test_without_a_robots_sitemap_line_sitemap_xml_is_read(serve, crawl):
    def make(u: str) -> Site:
        return Site(
            {
                "/docs/": html("a"),
                "/docs/a": html(),
                "/docs/orphan": html(),
                "/docs/sitemap.xml": urlset(u + "/docs/orphan"),
                # /robots.txt and /sitemap.xml answer 404
            }
        )

    site, u = _serve_on_own_address(serve, make)
    code, locs, decisions, err = crawl(u + "/docs/", "--seed-sitemaps")
    assert code == 0
    assert locs == sorted(u + p for p in ["/docs/", "/docs/a", "/docs/orphan"])
    assert decisions[u + "/docs/orphan"]["seed"] == u + "/docs/sitemap.xml"
    # the site's /sitemap.xml, then the start folder's; a missing guess is a quiet note
    assert site.paths[:3] == ["/robots.txt", "/sitemap.xml", "/docs/sitemap.xml"]
    assert f"seed sitemap {u}/sitemap.xml: HTTP 404" in err and "warning" not in err


def test_a_sitemap_redirect_on_the_site_is_followed(serve, crawl):
    def make(u: str) -> Site:
        return Site(
            {
                "/": html(),
                "/sitemap.xml": redirect("/sitemap_index.xml"),
                "/sitemap_index.xml": index(u + "/post-sitemap.xml"),
                "/post-sitemap.xml": urlset(u + "/hello-world/"),
                "/hello-world/": html(),
            }
        )

    _, u = _serve_on_own_address(serve, make)
    code, locs, decisions, _ = crawl(u + "/", "--seed-sitemaps")
    assert code == 0
    assert locs == [u + "/", u + "/hello-world/"]
    assert decisions[u + "/hello-world/"]["seed"] == u + "/post-sitemap.xml"


def _bomb() -> Page:
    """A gzipped sitemap of 51 MiB, over the protocol's 50 MiB (about 50 KB on the wire)."""
    head = f'<?xml version="1.0"?>\n<urlset {XMLNS}>'.encode()
    return Page(gzip.compress(head + b" " * (51 << 20), 9), content_type="application/gzip")


@pytest.mark.parametrize(
    ("page", "why"),
    [
        (Page(f"<urlset {XMLNS}>\n<url><loc>x</url>\n</urlset>", content_type="text/xml"),
         "not XML (line 2)"),
        (Page("oops", 500, "text/plain"), "HTTP 500"),
        (Page("", 404, "text/plain"), "HTTP 404"),
        (Page("<html><body>Welcome</body></html>", content_type="text/html"),
         "an HTML page, not a sitemap"),
        (Page(b"\x1f\x8b\x08\x00garbage", content_type="application/gzip"),
         "gzip data ends early (truncated file)"),
        (Page("not a sitemap\n", content_type="text/plain"),
         "none of its 1 entries is an absolute http(s) URL"),
        (_bomb(), "more than 52428800 bytes uncompressed, the protocol's limit"),
    ],
    ids=["malformed", "500", "404", "html", "bad-gzip", "text", "huge"],
)  # fmt: skip
def test_a_bad_seed_sitemap_is_one_warning_and_the_crawl_publishes(serve, crawl, page, why):
    def make(u: str) -> Site:
        return Site(
            {
                "/robots.txt": robots(f"Sitemap: {u}/bad.xml", f"Sitemap: {u}/good.xml"),
                "/": html("/a"),
                "/a": html(),
                "/bad.xml": page,
                "/good.xml": urlset(u + "/orphan"),
                "/orphan": html(),
            }
        )

    _, u = _serve_on_own_address(serve, make)
    code, locs, _, err = crawl(u + "/", "--seed-sitemaps", "--retries", "0")
    assert code == 0, err
    assert locs == sorted(u + p for p in ["/", "/a", "/orphan"])
    lines = [line for line in err.splitlines() if "/bad.xml" in line]
    assert lines == [f"warning: seed sitemap {u}/bad.xml: {why}: skipped"], err
    assert "Traceback" not in err


def test_a_larger_sitemap_than_the_protocol_allows_is_not_read_past_it(serve, crawl):
    """Uncompressed: the fetch stops at 50 MiB and the sitemap is skipped."""

    async def huge(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/xml"})
        await resp.prepare(request)
        await resp.write(f"<urlset {XMLNS}>".encode())
        chunk = b" " * (1 << 20)
        try:
            for _ in range(60):
                await resp.write(chunk)
        except (ConnectionError, asyncio.CancelledError):
            pass
        return resp

    site = Site({"/": html(), "/sitemap.xml": huge})
    srv = serve(site.app)
    code, locs, _, err = crawl(srv.url + "/", "--seed-sitemaps", "--retries", "0")
    assert code == 0 and locs == [srv.url + "/"]
    expected = f"seed sitemap {srv.url}/sitemap.xml: more than 52428800 bytes, the protocol's limit"
    assert f"warning: {expected}: skipped" in err


def test_sitemap_urls_elsewhere_are_recorded_and_never_requested(serve, crawl):
    other = Site({"/docs/x": html()})
    other_srv = serve(other.app)

    def make(u: str) -> Site:
        return Site(
            {
                "/robots.txt": robots(
                    "Disallow: /docs/private/",
                    f"Sitemap: {u}/sitemap.xml",
                    f"Sitemap: {other_srv.url}/sitemap.xml",  # another origin: not read
                ),
                "/docs/": html(),
                "/docs/in": html(),
                "/docs/private/page": html(),
                "/other/page": html(),
                "/sitemap.xml": urlset(
                    u + "/docs/in",
                    u + "/other/page",  # out of the scope /docs/
                    other_srv.url + "/docs/x",  # another host
                    u + "/docs/private/page",  # robots.txt forbids it
                ),
            }
        )

    site, u = _serve_on_own_address(serve, make)
    code, locs, decisions, err = crawl(u + "/docs/", "--seed-sitemaps")
    assert code == 0
    assert locs == [u + "/docs/", u + "/docs/in"]
    assert other.requests == []
    assert not {"/other/page", "/docs/private/page"} & set(site.paths)
    sitemap = u + "/sitemap.xml"
    for url, reason in [
        (u + "/other/page", "out_of_scope"),
        (other_srv.url + "/docs/x", "out_of_scope"),
        (u + "/docs/private/page", "robots_txt"),
    ]:
        assert decisions[url]["reason"] == reason and decisions[url]["seed"] == sitemap
    assert (
        f"warning: seed sitemap {other_srv.url}/sitemap.xml: not on the crawled origin {u}: skipped"
    ) in err


def test_a_sitemap_on_the_public_origin_is_read_from_the_crawled_server(serve, crawl, tmp_path):
    public = "https://www.example.com"
    site = Site(
        {
            "/robots.txt": robots(
                f"Sitemap: {public}/sitemap.xml", "Sitemap: https://cdn.example.net/sitemap.xml"
            ),
            "/": html(),
            "/sitemap.xml": urlset(f"{public}/orphan"),
            "/orphan": html(),
        }
    )
    srv = serve(site.app)
    report = tmp_path / "report.json"
    args = ("--seed-sitemaps", "--public-url", public, "--report", str(report))
    code, locs, decisions, err = crawl(srv.url + "/", *args)
    assert code == 0
    assert locs == [public + "/", public + "/orphan"]
    assert decisions[public + "/orphan"]["seed"] == public + "/sitemap.xml"
    assert "/sitemap.xml" in site.paths
    assert (
        "warning: seed sitemap https://cdn.example.net/sitemap.xml: neither under "
        "https://www.example.com/ nor on the crawled server: skipped"
    ) in err
    # as everywhere but the robots.txt note, only the public origin is named
    notes = json.loads(report.read_text())["seed_sitemaps"]
    assert f"seed sitemap {public}/sitemap.xml: 1 URLs" in notes
    assert srv.url.removeprefix("http://") not in json.dumps(notes)


def test_max_pages_bounds_the_urls_taken_and_the_rest_are_limit(serve, crawl):
    def make(u: str) -> Site:
        return Site(
            {
                "/": html("/a", "/b"),
                "/a": html(),
                "/b": html(),
                "/sitemap.xml": urlset(*(f"{u}/s{i}" for i in range(10))),
            },
            fallback=lambda request: _page(request),
        )

    _, u = _serve_on_own_address(serve, make)
    code, locs, decisions, err = crawl(u + "/", "--seed-sitemaps", "--max-pages", "5")
    assert code == 0
    assert len(locs) == 5
    assert f"seed sitemap {u}/sitemap.xml: 5 URLs; no more taken" in err
    limited = [d for d in decisions.values() if d["reason"] == "limit"]
    assert len(limited) == 3 and all(d["seed"] == u + "/sitemap.xml" for d in limited)


async def _page(request: web.Request) -> web.Response:
    return web.Response(text=html() + request.path, content_type="text/html")


# -- resume ----------------------------------------------------------------------------------


def _slow_site(base: str) -> Site:
    """/ links /l0../l29; the sitemap names /s0../s29 too, which no link leads to. Every
    page takes 50 ms, so a crawl can be stopped in either half."""

    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(0.05)
        return web.Response(text=html() + request.path, content_type="text/html")

    return Site(
        {
            "/robots.txt": robots(f"Sitemap: {base}/sitemap.xml"),
            "/": html(*(f"/l{i}" for i in range(30))),
            "/sitemap.xml": urlset(*(f"{base}/s{i}" for i in range(30)), base + "/l3"),
        },
        fallback=page,
    )


@pytest.mark.parametrize("stop_in", ["/l", "/s"], ids=["links", "seeds"])
def test_a_resumed_crawl_keeps_its_seed_marks(serve, tmp_path, xsd, capsys, stop_in):
    """Stopped while the links are crawled (the sitemaps are read again on resume) or while
    the seeds are (they are in the state): the same marks as an uninterrupted crawl."""
    site, u = _serve_on_own_address(serve, _slow_site)
    out, state, decisions = tmp_path / "out", tmp_path / "s.sqlite", tmp_path / "d.jsonl"
    args = [u + "/", "-o", str(out), "--state", str(state), "--seed-sitemaps",
            "--concurrency", "2", "--workers", "0"]  # fmt: skip
    proc = Watched(crawl_process(*args))
    wait_for(
        lambda: sum(p.startswith(stop_in) for p in site.paths) >= 4,
        f"4 requests for {stop_in}*",
        proc=proc,
    )
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    code = main(["crawl", *args, "--resume", "--decisions", str(decisions)])
    capsys.readouterr()
    assert code == 0
    assert len(read_published(out, xsd).locs) == 61
    found = read_decisions(decisions)
    assert {url for url, d in found.items() if "seed" in d} == {u + "/"} | {
        f"{u}/s{i}" for i in range(30)
    }
    assert all(found[f"{u}/s{i}"]["seed"] == u + "/sitemap.xml" for i in range(30))
    assert found[u + "/l3"]["referrer"] == u + "/"
    assert sum(p == "/sitemap.xml" for p in site.paths) == (2 if stop_in == "/l" else 1)


def test_start_urls_and_seed_sitemap_urls_lose_strip_params_as_links_do(serve, crawl):
    def make(u: str) -> Site:
        return Site(
            {
                "/robots.txt": robots(f"Sitemap: {u}/sitemap.xml"),
                "/": html(),
                "/orphan.html": html(),
                "/landing.html": html(),
                "/landing.html?id=7": html(),
                "/sitemap.xml": urlset(u + "/landing.html?utm_source=news&amp;id=7"),
            }
        )

    site, u = _serve_on_own_address(serve, make)
    code, locs, decisions, err = crawl(
        u + "/?utm_source=x", u + "/orphan.html?utm_source=x", "--seed-sitemaps"
    )
    assert code == 0, err
    assert locs == sorted(u + p for p in ["/", "/orphan.html", "/landing.html?id=7"])
    assert decisions[u + "/orphan.html"]["seed"] == "start"
    assert decisions[u + "/landing.html?id=7"]["seed"] == u + "/sitemap.xml"
    assert not any("utm_source" in path for path in site.paths)


def test_a_resume_does_not_read_again_seed_sitemaps_that_gave_nothing(serve, tmp_path, xsd):
    """The sitemap names no URL: nothing waits for the links to run out, so the state says
    it was read, and a resumed crawl does not ask for it again."""
    site, u = _serve_on_own_address(serve, _slow_site)
    site.pages["/sitemap.xml"] = urlset()  # lists nothing: one warning
    out, state = tmp_path / "out", tmp_path / "s.sqlite"
    args = [u + "/", "-o", str(out), "--state", str(state), "--seed-sitemaps",
            "--concurrency", "2", "--workers", "0"]  # fmt: skip
    proc = Watched(crawl_process(*args))
    wait_for(lambda: sum(p.startswith("/l") for p in site.paths) >= 4, "4 pages", proc=proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert main(["crawl", *args, "--resume", "-q"]) == 0
    assert len(read_published(out, xsd).locs) == 31
    assert site.paths.count("/sitemap.xml") == 1
