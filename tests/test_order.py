"""Stable URL order (issue #17): the published files list their URLs sorted by loc, so that
identical crawls publish identical bytes whatever the order the pages were fetched in (worker
processes, concurrency, rollover, gzip); the listings are sorted by an external merge sort
that holds at most one run of them in memory."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.cli import main
from crawler.shell import listings
from crawler.shell.listings import Listing, Spool, from_micros
from tests.sites import NS, Page, html, read_decisions, read_published, tree_site

# -- the external sort ------------------------------------------------------------------------


def _listing(loc: str, detail: str = "") -> Listing:
    return Listing(
        "crawl:" + loc, loc, 200, detail, len(loc) % 7, None, None, None, None, hash(loc)
    )


@settings(max_examples=60)
@given(
    st.lists(st.text(max_size=12), unique=True, max_size=60),
    st.integers(1, 7),
    st.integers(1, 40),
    st.lists(st.integers(0, 300), max_size=60),
)
def test_the_spool_hands_listings_back_in_loc_order(
    tmp_path_factory, locs, run_size, chunk, details
):
    """Tiny runs (many of them) read back through tiny chunks, so that listings straddle
    chunks and some are longer than one: every listing comes back once, whole, in code-point
    order of its loc, as often as the spool is read."""
    made = [
        _listing(loc, "d" * (details[i] if i < len(details) else 0)) for i, loc in enumerate(locs)
    ]
    folder = tmp_path_factory.mktemp("spool")
    with mock.patch.multiple(listings, _MIN_CHUNK=chunk, _MAX_CHUNK=chunk):
        spool = Spool(folder, run_size=run_size)
        try:
            for listing in made:
                spool.add(listing)
            assert spool.count == len(made)
            expected = sorted(made, key=lambda listing: listing.loc)
            assert list(spool) == expected
            assert list(spool) == expected  # twins are ranked in a first pass over the spool
        finally:
            spool.close()
    assert list(folder.iterdir()) == []  # the runs' file has no name


def test_the_spool_keeps_at_most_one_run_in_memory(tmp_path):
    spool = Spool(tmp_path, run_size=10)
    for i in range(95):
        spool.add(_listing(f"https://example.com/{(i * 37) % 95:03d}"))
    assert len(spool._pending) == 5 and len(spool._runs) == 9
    locs = [listing.loc for listing in spool]
    assert locs == [f"https://example.com/{i:03d}" for i in range(95)]
    spool.close()


# -- identical crawls publish identical files -------------------------------------------------

PAGES = 600  # well past the pool's START_AFTER (100): most pages are fetched by the workers
TWIN = b"<!doctype html><html><head><title>twin</title></head><body>same</body></html>"


def _site():
    site = tree_site(PAGES, lastmod=True)
    # byte-identical twins, so the end of the crawl ranks them before it lists
    site.pages["/"] = html("/1", "/2", "/twin-c", "/twin-b", "/twin-a")
    for name in ("a", "b", "c"):
        site.pages[f"/twin-{name}"] = Page(TWIN)
    return site


def _published(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}


@pytest.mark.parametrize("gzip", [False, True])
def test_three_identical_crawls_publish_identical_files(serve, tmp_path, xsd, gzip):
    srv = serve(_site().app)
    runs = []
    for run in range(3):
        out, report = tmp_path / f"out{run}", tmp_path / f"report{run}.json"
        decisions = tmp_path / f"decisions{run}.jsonl"
        args = ["--workers", "2", "--concurrency", "8", "--max-urls-per-file", "70"]
        args += ["--report", str(report), "--decisions", str(decisions), "-q"]
        assert main(["crawl", srv.url + "/", "-o", str(out), *args, *(["--gzip"] * gzip)]) == 0
        assert json.loads(report.read_text())["requests"]["workers"] == 2
        runs.append(_published(out))
        published = read_published(out, xsd)  # every file validated against the XSD
        assert published.locs == sorted(published.locs)  # parts in order, each sorted
        assert len(published.locs) == PAGES + 1  # the tree, and one of the twins
        assert srv.url + "/twin-a" in published.locs
        # the listings' lines come last in the decisions file, in the same order
        lines = [json.loads(line) for line in decisions.read_text().splitlines()]
        tail = [d["url"] for d in lines[-len(published.locs) - 2 :]]
        assert tail == sorted(tail) and set(tail) == {*published.locs, *_losers(srv.url)}
        assert read_decisions(decisions)[srv.url + "/twin-b"]["reason"] == "duplicate_of"
    assert runs[0] == runs[1] == runs[2]
    names = sorted(runs[0])
    suffix = ".xml.gz" if gzip else ".xml"
    assert names == sorted(["sitemap.xml", *(f"sitemap-{n}{suffix}" for n in range(1, 10))])


def _losers(origin: str) -> set[str]:
    return {origin + "/twin-b", origin + "/twin-c"}


def test_parts_hold_contiguous_ranges_of_urls(serve, tmp_path, xsd):
    """A fresh crawl's parts are consecutive slices of the sorted list: a part's first loc
    follows the previous part's last (what #14's kept parts will build on)."""
    srv = serve(tree_site(300).app)
    out = tmp_path / "out"
    assert main(["crawl", srv.url + "/", "-o", str(out), "-q", "--max-urls-per-file", "40"]) == 0
    parts = []
    for n in range(1, 9):
        root = xsd.any(out / f"sitemap-{n}.xml").getroot()
        parts.append([el.text for el in root.iter(f"{NS}loc")])
    assert [len(p) for p in parts] == [40] * 7 + [20]
    flat = [loc for part in parts for loc in part]
    assert flat == sorted(flat) and len(set(flat)) == 300


@given(
    st.sampled_from(["https://example.com/a", "http://h.test/b?x=1&y=%41", "https://x.org/"]),
    st.none() | st.integers(-(2**40), 2**52),
    st.none() | st.sampled_from(["daily", "weekly"]),
    st.none() | st.floats(0.0, 1.0),
    st.none() | st.integers(-(2**40), 2**52),
)
def test_a_listing_dated_at_the_publish_is_its_checked_entry(
    loc: str,
    header: int | None,
    changefreq: str | None,
    priority: float | None,
    lastmod: int | None,
) -> None:
    """#26: the entry the publish writes (Listing.dated: only the lastmod checked again)
    is the one the constructor makes from the listing's values, as entry() (checked in
    full when the page was listed) is with its header's date."""
    from sitemap_out import Entry

    listing = Listing(loc, loc, 200, "", 1, None, header, changefreq, priority, None)
    assert listing.entry() == Entry(loc, from_micros(header), changefreq, priority)
    assert listing.dated(lastmod) == Entry(loc, from_micros(lastmod), changefreq, priority)
