"""The engine's policy over an in-memory transport (tests/memory.py): no server, so whole
families of orders and options run in milliseconds. The same engine runs over HTTP in the
other crawl tests."""

from __future__ import annotations

import itertools

import pytest

from crawler.errors import PublishRefused
from tests.memory import Answer, crawl
from tests.sites import html

SITE = "http://site.test/"
TWIN = "<!doctype html><p>the same bytes</p>"


TWINS = ["zz/long-name", "b", "a", "deep/c"]


@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_the_best_twin_wins_in_every_order(tmp_path, concurrency):
    """24 link orders x 3 concurrencies: /a (depth 1, shortest, smallest) is always listed,
    and every other twin, /deep/c (depth 2) included, is duplicate_of it."""
    for i, order in enumerate(itertools.permutations(TWINS)):
        pages: dict = {SITE: html(*(f"/{p}" for p in order if p != "deep/c"), "/deep/")}
        pages.update({SITE + p: TWIN for p in TWINS})
        pages[SITE + "deep/"] = html("/deep/c")
        result, _, decided = crawl(pages, tmp_path / str(i), concurrency=concurrency)
        assert decided[SITE + "a"] == ("listed", "")
        for loser in ("b", "zz/long-name", "deep/c"):
            assert decided[SITE + loser] == ("duplicate_of", SITE + "a"), (order, decided)
        assert result.published.url_count == 3  # /, /deep/ and /a


def test_only_listable_pages_compete(tmp_path):
    canonical = TWIN.replace("<p>", '<link rel="canonical" href="/p"><p>')
    pages: dict = {
        SITE: html("/p?ref=home", "/print", "/p", "/article"),
        SITE + "p?ref=home": canonical,
        SITE + "p": canonical,
        SITE + "print": Answer(
            TWIN, headers={"Content-Type": "text/html", "X-Robots-Tag": "noindex"}
        ),
        SITE + "article": TWIN,
    }
    _, _, decided = crawl(pages, tmp_path / "o", concurrency=1)
    assert decided[SITE + "p?ref=home"][0] == "canonicalised"
    assert decided[SITE + "p"] == ("listed", "")
    assert decided[SITE + "print"][0] == "header_noindex"
    assert decided[SITE + "article"] == ("listed", "")


def test_a_twin_is_named_by_its_public_url(tmp_path):
    pages: dict = {"http://staging.test/": html("/b", "/a"), "http://staging.test/a": TWIN}
    pages["http://staging.test/b"] = TWIN
    _, _, decided = crawl(pages, tmp_path / "o", public_url="https://www.example.com/")
    assert decided["https://www.example.com/b"] == ("duplicate_of", "https://www.example.com/a")


def test_the_soft_404_defence_still_holds(tmp_path):
    """Every made-up path answers the same page with a relative link: its links are followed
    once, from the first URL that answered it, so the crawl ends."""

    class Everything(dict):
        def get(self, url, default=None):
            return super().get(url) or '<a href="more/x">x</a>'

    pages = Everything({SITE: html("/a/")})
    result, transport, _decided = crawl(pages, tmp_path / "o")
    assert len(transport.requested) < 6
    assert result.published.url_count == 1 + 1  # / and /a/; /a/more/x is its twin


def test_redirect_hops_count_against_max_pages(tmp_path):
    pages: dict = {SITE: html(*(f"/r{k}" for k in range(5)))}
    for k in range(5):
        pages[f"{SITE}r{k}"] = Answer(b"", 301, {"Location": f"/p{k}"})
        pages[f"{SITE}p{k}"] = f"<p>{k}</p>"
    _, transport, decided = crawl(pages, tmp_path / "o", max_pages=6, concurrency=1)
    assert len([u for u in transport.requested if not u.endswith("robots.txt")]) == 6
    assert [u for u, d in decided.items() if d[0] == "limit"]


def test_the_guard_refuses_a_gutted_sitemap(tmp_path):
    pages: dict = {SITE: html(*(f"/p{k}" for k in range(9)))}
    pages.update({f"{SITE}p{k}": f"<p>{k}</p>" for k in range(9)})
    out = tmp_path / "o"
    result, _, _ = crawl(pages, out)
    assert result.published.url_count == 10
    gutted = {SITE: pages[SITE]}
    with pytest.raises(PublishRefused, match="max_shrink"):
        crawl(gutted, out)
    result, _, _ = crawl(gutted, out, force=True)
    assert result.published.url_count == 1
