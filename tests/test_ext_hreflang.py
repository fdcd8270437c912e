"""hreflang alternates (xhtml:link) derived from the crawl, on a multilingual fixture site with
a complete cluster, a broken one, a one-way one, bad values and Link headers."""

from __future__ import annotations

import json

import pytest

from crawler.core.directives import link_header_alternates
from crawler.core.media import valid_hreflang
from tests.sites import Page, Site, html, parse_xml

SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
XHTML = "{http://www.w3.org/1999/xhtml}"


def alternates_by_loc(path) -> dict[str, list[tuple[str, str]]]:
    return {
        url.findtext(f"{SM}loc"): [
            (link.get("hreflang"), link.get("href")) for link in url.iter(f"{XHTML}link")
        ]
        for url in parse_xml(path).iter(f"{SM}url")
    }


@pytest.mark.parametrize(
    "value", ["en", "de-CH", "zh-Hant", "zh-Hant-TW", "es-419", "x-default", "X-Default", "fil"]
)
def test_valid_hreflang(value: str) -> None:
    assert valid_hreflang(value)


@pytest.mark.parametrize("value", ["english", "en_US", "e", "en-", "de-CHE-x", "", "x-whatever"])
def test_invalid_hreflang(value: str) -> None:
    assert not valid_hreflang(value)


def test_link_header_alternates() -> None:
    header = (
        '<https://e.com/de/>; rel="alternate"; hreflang="de", '
        '<https://e.com/>; rel="canonical", <https://e.com/fr/>; rel=alternate; hreflang=fr, '
        '<https://e.com/x>; rel="alternate"; hreflang="es"; anchor="#a"'
    )
    assert link_header_alternates([header]) == [
        ("de", "https://e.com/de/"),
        ("fr", "https://e.com/fr/"),
    ]


def _links(pairs: dict[str, str]) -> str:
    return "".join(
        f'<link rel="alternate" hreflang="{lang}" href="{href}">' for lang, href in pairs.items()
    )


COMPLETE = {"en": "/en/a", "de": "/de/a", "x-default": "/a"}
BROKEN = {
    "en": "/en/b",
    "de": "/de/b",  # noindex
    "fr": "/fr/b",  # 404
    "es": "/es/b",  # canonical elsewhere
    "it": "/it/b",  # redirects
    "pt": "/pt/b",  # byte-identical to /pt/a, which is closer to the start: listed
}


def multilingual_site() -> Site:
    pages: dict[str, Page | str] = {
        "/": html(*COMPLETE.values(), "/en/b", "/en/c", "/en/d", "/doc.pdf", "/pt/a"),
        # complete: every page names every other, itself and x-default included
        **{path: html(head=_links(COMPLETE)) for path in COMPLETE.values()},
        # broken: alternates that are not listed
        "/en/b": html(head=_links(BROKEN)),
        "/de/b": html(head='<meta name="robots" content="noindex">' + _links(BROKEN)),
        "/fr/b": Page("gone", status=404),
        "/es/b": html(head='<link rel="canonical" href="/es/other">' + _links(BROKEN)),
        "/es/other": html(),
        # bytes: a str page gets its path in a comment (Site), so it would have no twin
        "/pt/a": Page(html(head="<title>twin</title>").encode()),
        "/pt/b": Page(html(head="<title>twin</title>").encode()),
        "/it/b": Page("", status=301, headers={"Location": "/it/c"}),
        "/it/c": html(),
        # one-way: /en/c names /de/c, which does not name it back
        "/en/c": html(head=_links({"en": "/en/c", "de": "/de/c"})),
        "/de/c": html(head=_links({"de": "/de/c"})),
        # bad values are dropped and reported; the good one next to them is kept
        "/en/d": html(
            head=_links({"english": "/de/d", "en_US": "/de/d", "en": "/en/d", "de": "/de/d"})
        ),
        "/de/d": html(head=_links({"en": "/en/d", "de": "/de/d"})),
        # Link headers: how a PDF names its language versions
        "/doc.pdf": Page(
            b"%PDF-1.4",
            content_type="application/pdf",
            headers={
                "Link": '</doc.pdf>; rel="alternate"; hreflang="en", '
                '</doc-de.pdf>; rel="alternate"; hreflang="de"'
            },
        ),
        "/doc-de.pdf": Page(
            b"%PDF-1.4",
            content_type="application/pdf",
            headers={
                "Link": '</doc.pdf>; rel="alternate"; hreflang="en", '
                '</doc-de.pdf>; rel="alternate"; hreflang="de"'
            },
        ),
    }
    return Site(pages)


def test_multilingual_site(serve, crawl, tmp_path) -> None:
    srv = serve(multilingual_site().app)
    u = srv.url
    report_path = tmp_path / "report.json"
    code, pub, _, _ = crawl(u + "/", "--report", str(report_path))
    assert code == 0
    alternates = alternates_by_loc(pub.files[0])
    # complete cluster: each page carries the whole set, itself and x-default included
    full = [(lang, u + path) for lang, path in COMPLETE.items()]
    for path in COMPLETE.values():
        assert alternates[u + path] == full
    # broken cluster: only listed alternates are written
    assert alternates[u + "/en/b"] == [("en", u + "/en/b")][:0]  # only itself: none written
    assert u + "/de/b" not in alternates and u + "/es/b" not in alternates
    # one-way: written (both pages are listed), reported as a missing return link
    assert alternates[u + "/en/c"] == [("en", u + "/en/c"), ("de", u + "/de/c")]
    assert alternates[u + "/de/c"] == []  # only itself
    # bad values dropped
    assert alternates[u + "/en/d"] == [("en", u + "/en/d"), ("de", u + "/de/d")]
    # Link headers
    assert alternates[u + "/doc.pdf"] == [("en", u + "/doc.pdf"), ("de", u + "/doc-de.pdf")]

    block = json.loads(report_path.read_text())["hreflang"]
    assert block["invalid_values"] == {"english": 1, "en_US": 1}
    not_listed = {(x["page"], x["href"]): x["reason"] for x in block["not_listed"]}
    assert not_listed == {
        (u + "/en/b", u + "/de/b"): "meta_noindex",
        (u + "/en/b", u + "/fr/b"): "http_error",
        (u + "/en/b", u + "/es/b"): "canonicalised",
        (u + "/en/b", u + "/it/b"): "redirect",
        (u + "/en/b", u + "/pt/b"): "duplicate_of",
    }
    assert block["not_listed_count"] == 5
    missing = {(x["page"], x["alternate"]) for x in block["missing_return_links"]}
    assert missing == {(u + "/en/c", u + "/de/c")}
    assert block["missing_return_link_count"] == 1
    assert b"xmlns:xhtml" in pub.files[0].read_bytes()


def test_alternates_are_still_links_to_follow(serve, crawl) -> None:
    """A page reached only through an hreflang link is crawled and listed."""
    site = Site({"/": html(head=_links({"en": "/", "de": "/de/"})), "/de/": html()})
    srv = serve(site.app)
    code, pub, _, _ = crawl(srv.url + "/")
    assert code == 0
    assert sorted(pub.locs) == [srv.url + "/", srv.url + "/de/"]
    assert alternates_by_loc(pub.files[0])[srv.url + "/"] == [
        ("en", srv.url + "/"),
        ("de", srv.url + "/de/"),
    ]
