"""The whole audit through the real CLI (#12): the file checks, the URL checks by the crawl
engine and the --crawl comparison together, and our own output auditing clean."""

from __future__ import annotations

import json
from pathlib import Path

from crawler.cli import main
from tests.sites import Page, Site, html, redirect

ROBOTS = Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain")


def _fixture_site() -> Site:
    """noindex, canonicals, redirects, errors, duplicates, a robots.txt rule: everything a
    crawl must leave out of the sitemap."""
    return Site(
        {
            "/robots.txt": ROBOTS,
            "/": html(
                "/a",
                "/b",
                "/moved",
                "/gone",
                "/private/x",
                "/noindex",
                "/print",
                "/copy",
                "/feed.xml",
                "/boom",
            ),
            "/a": html("/"),
            "/b": html("/a"),
            "/moved": redirect("/a"),
            "/gone": Page("gone", status=404),
            "/boom": Page("boom", status=500),
            "/noindex": html(head='<meta name="robots" content="noindex">'),
            "/print": html(head='<link rel="canonical" href="/b">'),
            "/copy": Page(b"<html><body>same body</body></html>"),
            "/copy2": Page(b"<html><body>same body</body></html>"),
            "/feed.xml": Page("<rss/>", content_type="application/rss+xml"),
        }
    )


def _audit(tmp_path: Path, *args: str) -> tuple[int, dict]:
    out = tmp_path / f"audit{len(list(tmp_path.glob('audit*.json')))}.json"
    code = main(["audit", *args, "-q", "--report", str(out), "--retries", "0"])
    return code, json.loads(out.read_text())


def test_a_sitemap_we_publish_audits_clean_against_its_site(serve, tmp_path, capsys):
    site = _fixture_site()
    srv = serve(site.app)
    out = tmp_path / "out"
    code = main(["crawl", srv.url + "/", "-o", str(out), "--retries", "0",
                 "--max-error-rate", "1"])  # fmt: skip
    assert code == 0
    site.pages["/sitemap.xml"] = Page(
        (out / "sitemap.xml").read_bytes(), content_type="application/xml"
    )
    code, report = _audit(tmp_path, srv.url + "/sitemap.xml")
    found = {(f["code"], f["url"]) for f in report["findings"]}
    bad = {f for f in report["findings"] if f["severity"] in ("error", "warning")}
    assert code == 0, found
    assert not bad, found
    assert report["summary"]["urls_checked"] == report["summary"]["urls_listed"] >= 3
    # the local copy audits the same, with --no-fetch
    assert main(["audit", str(out / "sitemap.xml"), "--no-fetch", "-q"]) == 0
    capsys.readouterr()


def test_a_hand_written_sitemap_gets_the_url_findings_and_the_crawl_comparison(
    serve, tmp_path, capsys
):
    site = _fixture_site()
    srv = serve(site.app)
    listed = ["/", "/moved", "/gone", "/private/x", "/noindex", "/print", "/feed.xml",
              "/copy", "/copy2", "/orphan"]  # fmt: skip
    site.pages["/orphan"] = html()
    urls = "".join(f"<url><loc>{srv.url}{p}</loc></url>" for p in listed)
    site.pages["/sitemap.xml"] = Page(
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>',
        content_type="application/xml",
    )
    code, report = _audit(tmp_path, srv.url + "/", "--crawl")
    assert code == 1  # errors
    found = {(f["code"], f["url"]) for f in report["findings"]}
    u = srv.url
    for expected in [
        ("redirect", u + "/moved"),
        ("http_error", u + "/gone"),
        ("blocked_by_robots", u + "/private/x"),
        ("noindex", u + "/noindex"),
        ("canonicalised", u + "/print"),
        ("not_a_page", u + "/feed.xml"),
        ("duplicate_content", u + "/copy2"),
        ("missing_from_sitemap", u + "/a"),
        ("missing_from_sitemap", u + "/b"),
        ("orphan", u + "/orphan"),
        ("not_in_robots_txt", None),
    ]:
        assert expected in found, (expected, sorted(found, key=str))
    text = capsys.readouterr().out
    assert "http_error" in text and "errors" in text
    # the sitemaps, the URL checks and the crawl comparison share one reading of robots.txt
    assert site.paths.count("/robots.txt") == 1
