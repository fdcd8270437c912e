"""Nightly runs (issue #14): a crawl of a site that changed keeps the part files that did
not change byte-for-byte, says what changed (--changes, the summary line, the report), and
publishes changes.atom (--feed), an Atom 1.0 feed of the URLs added or changed lately."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from lxml import etree

import sitemap_out.writer as writer_mod
from crawler.cli import main
from sitemap_out import read_sitemap
from sitemap_out.feed import ATOM_NS, FEED_NAME, FeedEntry, feed_document, read_feed
from tests.sites import Page, Site, html, read_published

A = "{" + ATOM_NS + "}"


def day(n: int) -> datetime:
    return datetime(2026, 3, 1, 6, 0, tzinfo=UTC) + timedelta(days=n - 1)


def page(n: int, modified: datetime) -> Page:
    return Page(f"<p>page {n}</p>", headers={"Last-Modified": format_datetime(modified, True)})


class Nightly:
    """A site of 25 pages the test changes between runs, crawled with a clock it sets."""

    def __init__(self, serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths = [f"/p/{n:02d}" for n in range(25)]
        self.pages: dict[str, Page | str] = {"/robots.txt": Page("", 404)}
        for n, path in enumerate(self.paths):
            self.pages[path] = page(n, day(1) - timedelta(hours=n))
        self.link()
        self.site = Site(self.pages)  # type: ignore[arg-type]
        self.srv = serve(self.site.app)
        self.out = tmp_path / "out"
        self.tmp = tmp_path
        self.monkeypatch = monkeypatch

    def link(self) -> None:
        self.pages["/"] = html(*self.paths)

    def run(self, n: int, *extra: str, capsys=None) -> tuple[dict, dict, str]:
        self.monkeypatch.setattr(writer_mod, "_clock", lambda: day(n))
        changes, report = self.tmp / f"changes{n}.json", self.tmp / f"report{n}.json"
        args = ["crawl", self.srv.url + "/", "-o", str(self.out), "--max-urls-per-file", "10"]
        args += ["--changes", str(changes), "--report", str(report), *extra]
        assert main(args) == 0
        printed = capsys.readouterr().out if capsys is not None else ""
        return json.loads(changes.read_text()), json.loads(report.read_text()), printed

    def files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in self.out.iterdir() if not p.name.startswith(".")}

    def url(self, path: str) -> str:
        return self.srv.url + path


def test_three_nights_keep_unchanged_parts_and_say_what_changed(
    serve, tmp_path, monkeypatch, capsys, xsd
):
    night = Nightly(serve, tmp_path, monkeypatch)
    changes, report, printed = night.run(1, capsys=capsys)
    assert changes["counts"] == {"added": 26, "removed": 0, "changed": 0}
    assert changes["previous"] is False and len(changes["added"]) == 26
    assert report["changes"] == changes["counts"]
    assert "; 26 added, 0 removed, 0 changed" in printed.splitlines()[0]
    first = night.files()
    assert sorted(first) == ["sitemap-1.xml", "sitemap-2.xml", "sitemap-3.xml", "sitemap.xml"]
    mtimes = {p.name: p.stat().st_mtime_ns for p in night.out.iterdir()}
    read_published(night.out, xsd)

    # night 2: nothing changed on the site, nothing changes in the output folder
    changes, report, printed = night.run(2, capsys=capsys)
    assert changes["counts"] == {"added": 0, "removed": 0, "changed": 0}
    assert changes["previous"] is True
    assert "; 0 added, 0 removed, 0 changed" in printed.splitlines()[0]
    assert night.files() == first
    for path in night.out.iterdir():
        if not path.name.startswith("."):
            assert path.stat().st_mtime_ns == mtimes[path.name], path.name

    # night 3: a page added, one gone, one changed
    night.paths.append("/p/99")
    night.pages["/p/99"] = page(99, day(3))
    night.paths.remove("/p/05")
    del night.pages["/p/05"]
    night.pages["/p/20"] = page(20, day(3))
    night.link()
    index_before = {e.loc: e.lastmod for e in read_sitemap(night.out / "sitemap.xml").entries}
    changes, report, _ = night.run(3, capsys=capsys)
    assert changes["counts"] == {"added": 1, "removed": 1, "changed": 1}
    assert [r["loc"] for r in changes["added"]] == [night.url("/p/99")]
    assert [r["loc"] for r in changes["removed"]] == [night.url("/p/05")]
    (changed,) = changes["changed"]
    assert changed["loc"] == night.url("/p/20")
    assert changed["lastmod"] == "2026-03-03T06:00:00+00:00"
    assert changed["previous_lastmod"] == "2026-02-28T10:00:00+00:00"  # 06:00 - 20 h
    published = read_published(night.out, xsd)
    assert sorted(published.locs) == sorted([night.url("/"), *map(night.url, night.paths)])
    # "/" and /p/00-/p/08 in part 1; /p/09-/p/18 in part 2; /p/19-/p/24 in part 3
    after = night.files()
    assert {n for n in after if after[n] != first.get(n)} == {
        "sitemap-1.xml",  # /p/05 left
        "sitemap-3.xml",  # /p/20 changed, and /p/99 joined the last part
        "sitemap.xml",
    }
    index_after = {e.loc: e.lastmod for e in read_sitemap(night.out / "sitemap.xml").entries}
    part2 = night.url("/sitemap-2.xml")
    assert index_after[part2] == index_before[part2]  # untouched: its lastmod is kept
    assert index_after[night.url("/sitemap-1.xml")] == "2026-03-03T06:00:00+00:00"


def test_the_job_writes_last_changes(serve, tmp_path, monkeypatch):
    night = Nightly(serve, tmp_path, monkeypatch)
    monkeypatch.setattr(writer_mod, "_clock", lambda: day(1))
    data = tmp_path / "data"
    assert main(["job", night.srv.url + "/", "--data", str(data), "-q"]) == 0
    changes = json.loads((data / "state" / "last-changes.json").read_text())
    assert changes["counts"]["added"] == 26


# -- the feed ----------------------------------------------------------------------------------

#: RFC 3339 date-time, as Atom's dates must be (section 3.3).
RFC3339 = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+\-]\d{2}:\d{2})"

#: RFC 4287's structure, as RELAX NG (the subset of appendix B a feed of ours may use: every
#: element the RFC requires, in any order, with the cardinalities it gives).
ATOM_RNG = f"""
<grammar xmlns="http://relaxng.org/ns/structure/1.0" ns="{ATOM_NS}"
         datatypeLibrary="http://www.w3.org/2001/XMLSchema-datatypes">
  <start>
    <element name="feed">
      <interleave>
        <element name="id"><data type="anyURI"/></element>
        <element name="title"><text/></element>
        <element name="updated"><ref name="date"/></element>
        <oneOrMore><ref name="author"/></oneOrMore>
        <zeroOrMore><ref name="link"/></zeroOrMore>
        <optional><element name="generator"><text/></element></optional>
        <zeroOrMore><ref name="entry"/></zeroOrMore>
      </interleave>
    </element>
  </start>
  <define name="date">
    <data type="string">
      <param name="pattern">{RFC3339}</param>
    </data>
  </define>
  <define name="author">
    <element name="author">
      <interleave>
        <element name="name"><text/></element>
        <optional><element name="uri"><data type="anyURI"/></element></optional>
      </interleave>
    </element>
  </define>
  <define name="link">
    <element name="link">
      <attribute name="href"><data type="anyURI"/></attribute>
      <optional><attribute name="rel"><text/></attribute></optional>
      <optional><attribute name="type"><text/></attribute></optional>
      <empty/>
    </element>
  </define>
  <define name="category">
    <element name="category">
      <attribute name="term"><text/></attribute>
      <optional><attribute name="scheme"><data type="anyURI"/></attribute></optional>
      <optional><attribute name="label"><text/></attribute></optional>
      <empty/>
    </element>
  </define>
  <define name="entry">
    <element name="entry">
      <interleave>
        <element name="id"><data type="anyURI"/></element>
        <element name="title"><text/></element>
        <element name="updated"><ref name="date"/></element>
        <optional><element name="published"><ref name="date"/></element></optional>
        <zeroOrMore><ref name="category"/></zeroOrMore>
        <oneOrMore><ref name="link"/></oneOrMore>
      </interleave>
    </element>
  </define>
</grammar>
"""


def check_atom(path: Path) -> list[tuple[str, str]]:
    """Validate against the RNG and the rules it cannot say (RFC 4287 4.1.1: at most one
    alternate link per type; unique entry ids; the feed's updated is the newest of its
    entries' updated and published); returns (id, updated) of each entry, in order."""
    schema = etree.RelaxNG(etree.fromstring(ATOM_RNG.encode()))
    tree = etree.parse(str(path))
    schema.assertValid(tree)
    root = tree.getroot()
    entries = [(e.findtext(A + "id"), e.findtext(A + "updated")) for e in root.iter(A + "entry")]
    assert len({i for i, _ in entries}) == len(entries)
    for entry in root.iter(A + "entry"):
        alternates = [
            ln for ln in entry.iter(A + "link") if ln.get("rel", "alternate") == "alternate"
        ]
        assert len(alternates) == 1 and alternates[0].get("href") == entry.findtext(A + "id")
    stamps = [u for _, u in entries]
    assert stamps == sorted(stamps, reverse=True)  # newest first
    if entries:
        published = [e.findtext(A + "published") or "" for e in root.iter(A + "entry")]
        assert root.findtext(A + "updated") == max(stamps[0], *published)
    return entries


def test_the_feed_across_three_runs_keeps_a_window_of_days(
    serve, tmp_path, monkeypatch, capsys, xsd
):
    night = Nightly(serve, tmp_path, monkeypatch)
    _, report, printed = night.run(1, "--feed", "--feed-days", "2", capsys=capsys)
    feed = night.out / FEED_NAME
    feed_url = night.url("/" + FEED_NAME)
    assert report["feed_url"] == feed_url and feed_url in printed
    entries = check_atom(feed)
    assert len(entries) == 26  # a first run: every URL is added
    assert etree.parse(str(feed)).getroot().findtext(A + "id") == feed_url
    first_id = feed_url

    # day 2: one page changed, one added; day 1's entries are still in the 2-day window
    night.pages["/p/03"] = page(3, day(2))
    night.paths.append("/p/50")
    night.pages["/p/50"] = page(50, day(2) - timedelta(hours=1))
    night.link()
    night.run(2, "--feed", "--feed-days", "2")
    read_published(night.out, xsd)  # the sitemap files beside the feed, against the XSDs
    entries = check_atom(feed)
    assert entries[:2] == [
        (night.url("/p/03"), "2026-03-02T06:00:00Z"),
        (night.url("/p/50"), "2026-03-02T05:00:00Z"),
    ]
    assert len(entries) == 27  # /p/03 once, with its newer date
    assert etree.parse(str(feed)).getroot().findtext(A + "id") == first_id  # stable id

    # day 5: one page changed; what happened on days 1 and 2 is past the window
    night.pages["/p/04"] = page(4, day(5))
    night.run(5, "--feed", "--feed-days", "2")
    read_published(night.out, xsd)
    assert check_atom(feed) == [(night.url("/p/04"), "2026-03-05T06:00:00Z")]
    manifest = json.loads((night.out / ".sitemap-manifest.json").read_text())
    assert FEED_NAME in manifest["files"]

    # day 6: nothing changed; the feed keeps day 5's entry, byte for byte
    before = feed.read_bytes()
    night.run(6, "--feed", "--feed-days", "2")
    assert feed.read_bytes() == before


def test_a_run_without_feed_leaves_the_published_feed_and_says_so(
    serve, tmp_path, monkeypatch, capsys
):
    """A submitted feed must not turn into a 404 because an option was left off."""
    night = Nightly(serve, tmp_path, monkeypatch)
    night.run(1, "--feed")
    feed = night.out / FEED_NAME
    before = feed.read_bytes()
    capsys.readouterr()
    night.run(2)
    said = capsys.readouterr()
    assert feed.read_bytes() == before
    assert f"{FEED_NAME} left as published, no longer updated" in said.out + said.err
    manifest = night.out / ".sitemap-manifest.json"
    assert FEED_NAME in json.loads(manifest.read_text())["files"]
    feed.unlink()  # withdrawn by hand: the next run takes it off the record, silently
    night.run(3)
    assert FEED_NAME not in json.loads(manifest.read_text())["files"]
    assert "left as published" not in "".join(capsys.readouterr())


def test_the_feed_holds_at_most_1000_entries_newest_first(tmp_path):
    from sitemap_out import Entry, SitemapWriter

    base = "https://example.com/"
    with SitemapWriter(tmp_path, base, stable=True, feed_days=7, now=day(9)) as w:
        for i in range(1500):
            w.add(Entry(f"{base}{i:05d}", lastmod=day(1) + timedelta(minutes=i)))
        result = w.publish()
    assert result.feed_url == base + FEED_NAME
    entries = check_atom(tmp_path / FEED_NAME)
    assert len(entries) == 1000
    assert entries[0][0] == f"{base}01499" and entries[-1][0] == f"{base}00500"


def test_a_news_or_video_page_is_titled_in_the_feed_by_its_title(tmp_path):
    """The kind is a category; the title is the page's where the crawl has it (a news
    article's, given after the page's own entry as the crawl does; a video's), else the
    path. Nothing else is fetched for a title."""
    from sitemap_out import Entry, SitemapWriter
    from sitemap_out.entry import News, Video

    base = "https://example.com/"
    video = Video(base + "v.jpg", "A film", "About it", content_loc=base + "v.mp4")
    with SitemapWriter(tmp_path, base, stable=True, feed_days=7, now=day(2)) as w:
        w.add(Entry(base + "a", lastmod=day(1)))
        w.add(Entry(base + "n", lastmod=day(1)))
        w.add(Entry(base + "v", lastmod=day(1), videos=(video,)))
        w.add_news(Entry(base + "n", news=News("The Example Times", "en", day(1), "Rates rise")))
        w.publish()
    check_atom(tmp_path / FEED_NAME)
    root = etree.parse(str(tmp_path / FEED_NAME)).getroot()
    titles = {
        e.findtext(A + "id"): (e.findtext(A + "title"), e.find(A + "category").get("term"))
        for e in root.iter(A + "entry")
    }
    assert titles == {
        base + "a": ("Added: /a", "added"),
        base + "n": ("Rates rise", "added"),
        base + "v": ("A film", "added"),
    }


def test_a_removed_url_leaves_the_feed(tmp_path):
    from sitemap_out import Entry, SitemapWriter

    base = "https://example.com/"
    for n, locs in ((1, ["a", "b"]), (2, ["a"])):
        with SitemapWriter(tmp_path, base, stable=True, feed_days=7, now=day(n)) as w:
            for loc in locs:
                w.add(Entry(base + loc))
            w.publish()
    assert [i for i, _ in check_atom(tmp_path / FEED_NAME)] == [base + "a"]


def test_a_hostile_previous_feed_is_not_expanded(tmp_path):
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        f'<feed xmlns="{ATOM_NS}"><entry><id>&b;</id>'
        "<updated>2026-03-01T00:00:00Z</updated></entry></feed>"
    )
    (tmp_path / FEED_NAME).write_text(bomb)
    assert read_feed(tmp_path / FEED_NAME) == ([], None)
    (tmp_path / FEED_NAME).write_text("<feed")
    assert read_feed(tmp_path / FEED_NAME) == ([], None)


def test_feed_document_escapes_and_round_trips(tmp_path):
    loc = "https://example.com/?a=1&b=<2>"
    entries = [
        FeedEntry(day(2), loc, "changed", day(3)),
        FeedEntry(day(1), "https://example.com/news", "added", day(3), "Rates & <Rises>"),
    ]
    (tmp_path / FEED_NAME).write_text(
        feed_document("https://example.com/changes.atom", "https://example.com/", entries, day(3))
    )
    check_atom(tmp_path / FEED_NAME)
    back, _ = read_feed(tmp_path / FEED_NAME)
    assert back == [replace(entries[0], title="Changed: /?a=1&b=<2>"), entries[1]]
    text = (tmp_path / FEED_NAME).read_text()
    assert '<title>Changed: /?a=1&amp;b=&lt;2&gt;</title><category term="changed"/>' in text
    assert '<title>Rates &amp; &lt;Rises&gt;</title><category term="added"/>' in text
    assert "<published>2026-03-03T06:00:00Z</published>" in text


def test_a_feed_of_the_version_before_is_read_by_its_titles(tmp_path):
    """Its kind was the title's prefix, and its window went by updated (no published)."""
    (tmp_path / FEED_NAME).write_text(
        f'<feed xmlns="{ATOM_NS}"><updated>2026-03-02T06:00:00Z</updated>'
        "<entry><id>https://example.com/a</id><title>added: https://example.com/a</title>"
        "<updated>2026-03-02T06:00:00Z</updated></entry>"
        "<entry><id>https://example.com/b</id><title>changed: https://example.com/b</title>"
        "<updated>2026-03-01T06:00:00Z</updated></entry></feed>"
    )
    assert read_feed(tmp_path / FEED_NAME)[0] == [
        FeedEntry(day(2), "https://example.com/a", "added", day(2)),
        FeedEntry(day(1), "https://example.com/b", "changed", day(1)),
    ]


def test_a_change_with_an_old_lastmod_stays_feed_days_after_the_run_that_saw_it(
    serve, tmp_path, monkeypatch
):
    """The window goes by when a change was seen, not by the page's lastmod: pages whose
    Last-Modified is a month old, new on night 1, stay in the feed for feed_days."""
    night = Nightly(serve, tmp_path, monkeypatch)
    for n, path in enumerate(night.paths):
        night.pages[path] = page(n, day(1) - timedelta(days=30, hours=n))
    night.run(1, "--feed", "--feed-days", "2")
    feed = night.out / FEED_NAME
    entries = check_atom(feed)
    assert len(entries) == 26
    assert entries[1] == (night.url("/p/00"), "2026-01-30T06:00:00Z")  # the page's lastmod
    root = etree.parse(str(feed)).getroot()
    assert {e.findtext(A + "published") for e in root.iter(A + "entry")} == {
        "2026-03-01T06:00:00Z"  # the run that saw them
    }
    assert root.findtext(A + "updated") == "2026-03-01T06:00:00Z"
    read = read_sitemap(feed)  # as a search engine reads a feed: its dates are the lastmods
    assert read.kind == "feed" and read.ok, read.problems
    assert (read.entries[1].loc, read.entries[1].lastmod) == (
        night.url("/p/00"),
        "2026-01-30T06:00:00Z",
    )
    before = feed.read_bytes()
    for n in (2, 3):  # unchanged nights within the window: the same feed, byte for byte
        night.run(n, "--feed", "--feed-days", "2")
        assert feed.read_bytes() == before, n
    night.run(4, "--feed", "--feed-days", "2")  # seen on day 1, past the 2-day window
    assert check_atom(feed) == []
