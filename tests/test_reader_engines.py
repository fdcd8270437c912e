"""The reader reads what search engines read, and flags what they would (issue #23, item 6):
RSS 2.0 and Atom 1.0 feeds as sitemaps (in the audit and for --seed-sitemaps), separate
mobile URLs, unknown elements and another field order as warnings with every URL read,
xhtml:link without href or rel, a loc with a fragment, whitespace or no scheme, and an index
that lists itself."""

from __future__ import annotations

import json
from pathlib import Path

from crawler.cli import main
from sitemap_out.reader import read_sitemap
from tests.sites import Page, Site, html, read_published

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
XHTML = 'xmlns:xhtml="http://www.w3.org/1999/xhtml"'
DECL = '<?xml version="1.0" encoding="UTF-8"?>\n'


def rss(*items: tuple[str, str | None]) -> str:
    body = "".join(
        f"<item><title>t</title><link>{link}</link>"
        + (f"<pubDate>{date}</pubDate>" if date else "")
        + "</item>\n"
        for link, date in items
    )
    channel = f"<channel><title>News</title><link>x</link>\n{body}</channel>"
    return f'{DECL}<rss version="2.0">{channel}</rss>'


def atom(*entries: tuple[str, str]) -> str:
    body = "".join(
        f'<entry><title>t</title><link rel="edit" href="{link}edit"/><link href="{link}"/>'
        f"<id>{link}</id><updated>{updated}</updated></entry>\n"
        for link, updated in entries
    )
    return (
        f'{DECL}<feed xmlns="http://www.w3.org/2005/Atom"><title>f</title>'
        f"<updated>2024-01-01T00:00:00Z</updated>\n{body}</feed>"
    )


def test_rss_and_atom_feeds_are_read_as_sitemaps() -> None:
    read = read_sitemap(
        rss(
            ("https://e.com/a", "Tue, 02 Jan 2024 10:00:00 GMT"),
            ("https://e.com/b", None),
            ("https://e.com/c", "Tue, 02 Jan 2024 10:00:00 +0200"),
        ).encode()
    )
    assert read.kind == "feed" and read.ok, read.problems
    assert [(e.loc, e.lastmod) for e in read.entries] == [
        ("https://e.com/a", "2024-01-02T10:00:00+00:00"),
        ("https://e.com/b", None),
        ("https://e.com/c", "2024-01-02T10:00:00+02:00"),
    ]
    read = read_sitemap(atom(("https://e.com/x", "2024-03-04T05:06:07Z")).encode())
    assert read.kind == "feed" and read.ok, read.problems
    assert [(e.loc, e.lastmod) for e in read.entries] == [
        ("https://e.com/x", "2024-03-04T05:06:07Z")
    ]
    bad = read_sitemap(rss(("https://e.com/a", "someday")).encode())
    assert bad.codes == {"bad_lastmod"} and bad.entries[0].loc == "https://e.com/a"


def test_mobile_alternates_and_xhtml_links_missing_an_attribute() -> None:
    links = (
        '<xhtml:link rel="alternate" media="only screen and (max-width: 640px)" '
        'href="https://m.e.com/a"/>'
        '<xhtml:link rel="alternate" hreflang="de" href="https://e.com/de/a"/>'
    )
    doc = f"{DECL}<urlset {NS} {XHTML}><url><loc>https://e.com/a</loc>{links}</url></urlset>"
    read = read_sitemap(doc.encode())
    assert read.ok and not read.problems, read.problems
    assert read.entries[0].mobile == ("https://m.e.com/a",)
    assert read.entries[0].alternates == (("de", "https://e.com/de/a"),)
    for link, missing in (
        (
            '<xhtml:link rel="alternate" media="only screen" />',
            "without href",
        ),
        ('<xhtml:link hreflang="de" href="https://e.com/de/a"/>', 'without rel="alternate"'),
    ):
        doc = f"{DECL}<urlset {NS} {XHTML}><url><loc>https://e.com/a</loc>{link}</url></urlset>"
        read = read_sitemap(doc.encode())
        assert read.codes == {"bad_alternate_link"}  # not "not a language code"
        assert missing in read.problems[0].message
        assert read.entries[0].loc == "https://e.com/a"


def _audit(tmp_path: Path, target: str, *args: str) -> tuple[int, list[dict]]:
    out = tmp_path / "audit.json"
    code = main(["audit", target, "-q", "--json", str(out), "--fail-on", "notice", *args])
    return code, json.loads(out.read_text())["findings"]


def test_the_audit_flags_what_engines_would_and_reads_every_url(serve, tmp_path, capsys):
    site = Site({"/robots.txt": Page("", status=404)})
    srv = serve(site.app)
    b = srv.url
    body = (
        f"<url><lastmod>2024-01-01</lastmod><loc>{b}/a</loc></url>\n"  # loc not first
        f"<url><loc>{b}/b</loc><mobile:mobile/><title>x</title></url>\n"  # unknown
        f"<url><loc>{b}/c#part</loc></url>\n"
        f"<url><loc>\n  {b}/d\n</loc></url>\n"
        "<url><loc>page.html</loc></url>\n"
    )
    mobile = 'xmlns:mobile="http://www.google.com/schemas/sitemap-mobile/1.0"'
    site.pages.update(
        {
            "/sitemap.xml": Page(
                f"{DECL}<urlset {NS} {mobile}>\n{body}</urlset>", content_type="text/xml"
            ),
            "/index.xml": Page(
                f"{DECL}<sitemapindex {NS}><sitemap><loc>{b}/index.xml</loc></sitemap>"
                f"<sitemap><loc>{b}/sitemap.xml</loc></sitemap></sitemapindex>",
                content_type="text/xml",
            ),
        }
    )
    code, findings = _audit(tmp_path, b + "/index.xml", "--no-fetch")
    assert code == 1
    got = {(f["code"], f["url"], f["severity"]) for f in findings}
    assert ("field_order", f"{b}/a", "warning") in got
    assert ("unknown_element", f"{b}/b", "warning") in got
    assert ("loc_fragment", f"{b}/c#part", "warning") in got
    assert ("loc_whitespace", f"{b}/d", "notice") in got
    relative = [f for f in findings if f["code"] == "invalid_url"]
    assert len(relative) == 1 and "is relative" in relative[0]["detail"]
    assert not [f for f in findings if f["code"] == "parse_error"]
    itself = [f for f in findings if f["code"] == "nested_index"]
    assert len(itself) == 1 and "lists itself" in itself[0]["detail"]
    assert itself[0]["sitemap"] == b + "/index.xml"
    capsys.readouterr()


def test_a_feed_is_audited_and_seeds_a_crawl(serve, tmp_path, capsys, xsd):
    site = Site({"/": html("/a"), "/a": html(), "/orphan": html(), "/gone": Page("x", 404)})
    srv = serve(site.app)
    b = srv.url
    site.pages["/feed.xml"] = Page(
        rss((f"{b}/orphan", "Tue, 02 Jan 2024 10:00:00 GMT"), (f"{b}/gone", None)),
        content_type="application/rss+xml",
    )
    site.pages["/robots.txt"] = Page(
        f"User-agent: *\nAllow: /\nSitemap: {b}/feed.xml\n", content_type="text/plain"
    )
    code, findings = _audit(tmp_path, b + "/feed.xml", "--retries", "0")
    assert code == 1
    assert {(f["code"], f["url"]) for f in findings if f["severity"] == "error"} == {
        ("http_error", f"{b}/gone")
    }
    out = tmp_path / "out"
    assert main(["crawl", b + "/", "-o", str(out), "--seed-sitemaps", "-q", "--retries", "0"]) == 0
    assert sorted(read_published(out, xsd).locs) == sorted(b + p for p in ("/", "/a", "/orphan"))
    capsys.readouterr()
