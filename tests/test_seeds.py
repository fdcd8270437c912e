"""Seeds beyond one start URL (issue #17): more start URLs in one crawl, and --seed-sitemaps,
which also starts from the URLs of the site's own sitemaps (robots.txt `Sitemap:` lines, else
/sitemap.xml). The real CLI against real servers on 127.0.0.1; every sitemap it publishes is
read back and validated against the XSD."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.cli import main
from tests.sites import (
    Page,
    Site,
    html,
    read_decisions,
    read_published,
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
