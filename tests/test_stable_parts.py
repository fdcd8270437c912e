"""Stable part files across runs (issue #14): URLs keep their part, new URLs go to the last
part, a part that did not change is left byte-for-byte as published with its index lastmod,
and a part that shrinks below a quarter of max_urls gives its URLs to the last part."""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sitemap_out.writer as writer_mod
from sitemap_out import Entry, SitemapWriter, read_sitemap
from sitemap_out.changes import ChangeLog
from sitemap_out.writer import MANIFEST_NAME

BASE = "https://example.com/"


def day(n: int) -> datetime:
    return datetime(2026, 3, n, 4, 0, tzinfo=UTC)


def loc(i: int) -> str:
    return f"{BASE}p/{i:04d}"


def run(out: Path, locs, n: int, *, lastmods=None, log=None, **kw):
    kw.setdefault("max_urls", 10)
    with SitemapWriter(out, BASE, stable=True, now=day(n), changes=log, **kw) as w:
        for url in sorted(locs):
            lastmod = (lastmods or {}).get(url)
            w.add(Entry(url, lastmod=lastmod))
        return w.publish()


def files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}


def index_lastmods(out: Path) -> dict[str, str | None]:
    top = read_sitemap(out / "sitemap.xml")
    assert top.kind == "sitemapindex" and top.ok, top.problems
    return {e.loc.removeprefix(BASE): e.lastmod for e in top.entries}


def part_locs(out: Path, xsd) -> dict[str, list[str]]:
    xsd.index(out / "sitemap.xml")
    parts = {}
    for name in index_lastmods(out):
        xsd.urlset(out / name)
        read = read_sitemap(out / name)
        assert read.ok, read.problems
        parts[name] = [e.loc for e in read.entries]
    return parts


def changed_files(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}


LASTMODS = {loc(i): day(1) for i in range(35)}


@pytest.mark.parametrize("gz", [False, True])
def test_an_unchanged_set_leaves_every_file_untouched(tmp_path, xsd, gz):
    first = run(tmp_path, LASTMODS, 1, lastmods=LASTMODS, gzip=gz)
    assert first.changes.added == 35 and first.changes.removed == 0
    before = files(tmp_path)
    mtimes = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    lastmods = index_lastmods(tmp_path)
    second = run(tmp_path, LASTMODS, 2, lastmods=LASTMODS, gzip=gz)
    assert files(tmp_path) == before
    assert all(p.kept for p in second.parts)
    for p in tmp_path.iterdir():  # not even rewritten: a web server's ETag stays
        if not p.name.startswith("."):
            assert p.stat().st_mtime_ns == mtimes[p.name]
    assert index_lastmods(tmp_path) == lastmods
    assert (second.changes.added, second.changes.removed, second.changes.changed) == (0, 0, 0)
    part_locs(tmp_path, xsd)


def test_one_url_added_changes_only_the_last_part(tmp_path, xsd):
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS)
    before, lastmods = files(tmp_path), index_lastmods(tmp_path)
    more = {**LASTMODS, loc(5) + "a": day(2)}  # sorts inside part 1, goes to the last part
    result = run(tmp_path, more, 2, lastmods=more)
    assert changed_files(before, files(tmp_path)) == {"sitemap-4.xml", "sitemap.xml"}
    after = index_lastmods(tmp_path)
    assert after["sitemap-4.xml"] == "2026-03-02T04:00:00+00:00"  # the run's time
    assert {k: v for k, v in after.items() if k != "sitemap-4.xml"} == {
        k: v for k, v in lastmods.items() if k != "sitemap-4.xml"
    }
    parts = part_locs(tmp_path, xsd)
    assert loc(5) + "a" in parts["sitemap-4.xml"]
    assert parts["sitemap-4.xml"] == sorted(parts["sitemap-4.xml"])  # each part in loc order
    assert result.changes.added == 1


def test_one_url_removed_changes_only_its_part_and_the_index(tmp_path, xsd):
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS)
    before = files(tmp_path)
    fewer = {k: v for k, v in LASTMODS.items() if k != loc(13)}
    log = ChangeLog()
    result = run(tmp_path, fewer, 2, lastmods=fewer, log=log)
    assert changed_files(before, files(tmp_path)) == {"sitemap-2.xml", "sitemap.xml"}
    assert result.changes.removed == 1
    assert [json.loads(r)["loc"] for r in log.rows("removed")] == [loc(13)]
    log.close()


def test_a_changed_lastmod_is_a_changed_url_and_rewrites_its_part(tmp_path):
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS)
    before = files(tmp_path)
    newer = {**LASTMODS, loc(22): day(2)}
    log = ChangeLog(keep=5)
    result = run(tmp_path, newer, 2, lastmods=newer, log=log)
    assert changed_files(before, files(tmp_path)) == {"sitemap-3.xml", "sitemap.xml"}
    assert (result.changes.added, result.changes.changed) == (0, 1)
    (row,) = [json.loads(r) for r in log.rows("changed")]
    assert row == {
        "loc": loc(22),
        "lastmod": "2026-03-02T04:00:00+00:00",
        "previous_lastmod": "2026-03-01T04:00:00+00:00",
    }
    assert log.newest() == [(day(2), loc(22), "changed", "")]
    log.close()


def test_a_log_without_urls_counts_as_one_with_them(tmp_path, xsd):
    """A crawl without a changes file keeps the counts only: the same counts (per group
    too), the same files published, and no list to write by mistake."""
    counted = {}
    for urls in (True, False):
        out = tmp_path / str(urls)
        first = {k: v for k, v in LASTMODS.items() if int(k[-4:]) % 3}  # a third added later
        run(out, first, 1, lastmods=first)
        later = {**{k: v for k, v in LASTMODS.items() if k != loc(13)}, loc(22): day(2)}
        log = ChangeLog(urls=urls)
        log.groups = {}  # counted per group as they come
        result = run(out, later, 2, lastmods=later, log=log)
        part_locs(out, xsd)
        counted[urls] = (result.changes, log.counts, log.groups, files(out))
        if not urls:
            assert list(log.rows("added")) == []
            with pytest.raises(ValueError, match="counts only"):
                log.write_json(tmp_path / "changes.json", {})
        log.close()
    assert counted[True] == counted[False]
    assert counted[True][1] == {"added": 12, "removed": 1, "changed": 1}


def test_a_part_below_a_quarter_gives_its_urls_to_the_last_part(tmp_path, xsd):
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS, max_urls=8)  # 5 parts: 8 8 8 8 3
    left = {k: v for k, v in LASTMODS.items() if not 9 <= int(k[-4:]) <= 15}  # part 2: 1 left
    before = files(tmp_path)
    run(tmp_path, left, 2, lastmods=left, max_urls=8)
    parts = part_locs(tmp_path, xsd)
    assert list(parts) == ["sitemap-1.xml", "sitemap-3.xml", "sitemap-4.xml", "sitemap-5.xml"]
    assert loc(8) in parts["sitemap-5.xml"]  # part 2's last URL moved to the last part
    assert not (tmp_path / "sitemap-2.xml").exists()  # a gap: numbers are not reused
    assert changed_files(before, files(tmp_path)) == {
        "sitemap-2.xml",
        "sitemap-5.xml",
        "sitemap.xml",
    }
    # a later new part is numbered after the highest
    more = {**left, **{loc(100 + i): day(3) for i in range(10)}}
    run(tmp_path, more, 3, lastmods=more, max_urls=8)
    assert list(part_locs(tmp_path, xsd)) == [
        "sitemap-1.xml",
        "sitemap-3.xml",
        "sitemap-4.xml",
        "sitemap-5.xml",
        "sitemap-6.xml",
    ]


def test_gzip_parts_are_deterministic(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run(a, LASTMODS, 1, lastmods=LASTMODS, gzip=True)
    run(b, LASTMODS, 9, lastmods=LASTMODS, gzip=True)
    assert files(a) == files(b)
    with gzip.open(a / "sitemap-1.xml.gz") as fh:
        assert fh.read().startswith(b"<?xml")


def test_other_settings_mean_a_fresh_layout_said_once(tmp_path, xsd):
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS)
    more = {**LASTMODS, loc(5) + "a": day(2)}
    with SitemapWriter(tmp_path, BASE, stable=True, now=day(2), max_urls=20) as w:
        assert "max_urls" in w.layout_note and "fresh layout" in w.layout_note
        for url in sorted(more):
            w.add(Entry(url, lastmod=more[url]))
        result = w.publish()
    assert result.changes.added == 1 and "max_urls" in result.changes.layout
    parts = part_locs(tmp_path, xsd)
    flat = [u for p in parts.values() for u in p]
    assert flat == sorted(more)  # consecutive slices again, as a first run
    layout = json.loads((tmp_path / MANIFEST_NAME).read_text())["layout"]
    assert layout["max_urls"] == 20


def test_an_unreadable_previous_part_means_a_fresh_layout(tmp_path, xsd):
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS)
    (tmp_path / "sitemap-2.xml").write_text("<urlset")
    with SitemapWriter(tmp_path, BASE, stable=True, now=day(2), max_urls=10) as w:
        assert "cannot be read back" in w.layout_note
        for url in sorted(LASTMODS):
            w.add(Entry(url, lastmod=LASTMODS[url]))
        w.publish()
    assert len(part_locs(tmp_path, xsd)) == 4


def test_entries_out_of_order_are_refused(tmp_path):
    with SitemapWriter(tmp_path, BASE, stable=True) as w:
        w.add(Entry(loc(2)))
        with pytest.raises(writer_mod.SitemapOutError, match="increasing loc order"):
            w.add(Entry(loc(1)))


def test_a_small_site_stays_one_file_and_is_left_untouched(tmp_path, xsd):
    few = [loc(i) for i in range(5)]
    run(tmp_path, few, 1)
    before = files(tmp_path)
    assert list(before) == ["sitemap.xml"]
    xsd.urlset(tmp_path / "sitemap.xml")
    result = run(tmp_path, few, 2)
    assert result.parts[0].kept and files(tmp_path) == before
    # grows past one file: part 1 keeps the five, the new ones fill it, then part 2
    run(tmp_path, [*few, *(loc(100 + i) for i in range(10))], 3)
    parts = part_locs(tmp_path, xsd)
    assert parts["sitemap-1.xml"][:5] == few and len(parts["sitemap-2.xml"]) == 5


def test_a_failed_publish_of_a_stable_layout_leaves_the_previous_set(
    tmp_path, xsd, monkeypatch: pytest.MonkeyPatch
):
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS)
    before = files(tmp_path)
    real_replace = os.replace

    def failing(src, dst):
        if Path(dst).parent == tmp_path and Path(dst).name == "sitemap.xml":
            raise OSError("simulated crash")
        return real_replace(src, dst)

    monkeypatch.setattr(writer_mod.os, "replace", failing)
    more = {**LASTMODS, loc(5) + "a": day(2)}
    with pytest.raises(OSError, match="simulated"):
        run(tmp_path, more, 2, lastmods=more)
    monkeypatch.setattr(writer_mod.os, "replace", real_replace)
    # the old index is in charge, every file it names is valid; only the last part is new
    assert changed_files(before, files(tmp_path)) == {"sitemap-4.xml"}
    assert len(part_locs(tmp_path, xsd)) == 4
    # the manifest has no layout yet: the next run lays out afresh, and is whole again
    assert "layout" not in json.loads((tmp_path / MANIFEST_NAME).read_text())
    run(tmp_path, more, 3, lastmods=more)
    assert sorted(u for p in part_locs(tmp_path, xsd).values() for u in p) == sorted(more)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.sets(st.integers(0, 80), max_size=60),
        min_size=2,
        max_size=4,
    ),
    st.integers(3, 12),
)
def test_every_url_in_exactly_one_part_within_the_limits(tmp_path_factory, xsd, runs, max_urls):
    """Across runs: every URL is listed once, no part passes max_urls, every part is in loc
    order, and a part whose URLs did not change is left byte-for-byte."""
    out = tmp_path_factory.mktemp("stable")
    previous: dict[str, list[str]] = {}
    before: dict[str, bytes] = {}
    for n, numbers in enumerate(runs, start=1):
        locs = {loc(i) for i in numbers} or {loc(999)}
        run(out, locs, n, max_urls=max_urls)
        top = read_sitemap(out / "sitemap.xml")
        if top.kind == "sitemapindex":
            names = [e.loc.removeprefix(BASE) for e in top.entries]
        else:
            names = ["sitemap.xml"]
        parts = {}
        xsd.any(out / "sitemap.xml")
        for name in names:
            xsd.urlset(out / name)
            read = read_sitemap(out / name)
            assert read.ok, read.problems
            parts[name] = [e.loc for e in read.entries]
        flat = [u for p in parts.values() for u in p]
        assert sorted(flat) == sorted(locs)
        for name, urls in parts.items():
            assert 0 < len(urls) <= max_urls and urls == sorted(urls)
            if previous.get(name) == urls:
                assert (out / name).read_bytes() == before[name]
        for name, urls in previous.items():  # a URL kept stays in its part, unless moved
            for url in urls:
                if url in locs and name in parts and len(parts[name]) >= max_urls // 4:
                    assert url in parts[name] or name == names[-1]
        previous = parts
        before = files(out)


def test_many_parts_with_few_files_open(tmp_path, xsd, monkeypatch: pytest.MonkeyPatch):
    """Scratch files are opened as needed, at most _MAX_OPEN_BUCKETS at a time, and read a
    chunk at a time: a layout of thousands of parts needs no descriptor per part."""
    monkeypatch.setattr(writer_mod, "_MAX_OPEN_BUCKETS", 2)
    monkeypatch.setattr(writer_mod, "_SCRATCH_CHUNK", 7)
    first = {loc(i): day(1) for i in range(0, 80, 2)}
    run(tmp_path, first, 1, lastmods=first, max_urls=4)  # 10 parts
    before = files(tmp_path)
    second = {**first, **{loc(i): day(2) for i in range(1, 80, 8)}, loc(40): day(2)}
    result = run(tmp_path, second, 2, lastmods=second, max_urls=4)
    assert (result.changes.added, result.changes.changed) == (10, 1)
    parts = part_locs(tmp_path, xsd)
    assert sorted(u for p in parts.values() for u in p) == sorted(second)
    assert all(len(p) <= 4 and p == sorted(p) for p in parts.values())
    for n in (1, 2, 3, 4, 5, 7, 8, 9):  # part 6 holds loc(40); new URLs fill 10, then 11..
        assert files(tmp_path)[f"sitemap-{n}.xml"] == before[f"sitemap-{n}.xml"]


@pytest.mark.parametrize(
    "body, why",
    [
        (b"<urlset", "not well-formed"),
        (
            b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>',
            "not a urlset",
        ),
        (
            b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://example.com/a</loc></url>'
            b"<url><loc>https://example.com/a</loc></url></urlset>",
            "listed twice",
        ),
        (
            b'<!DOCTYPE u [<!ENTITY e "x">]><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<url><loc>https://example.com/&e;</loc></url></urlset>",
            "DOCTYPE",
        ),
    ],
)
def test_a_part_edited_by_hand_means_a_fresh_layout(tmp_path, xsd, body, why):
    """The published parts are read back fast but bounded (no DTD, no entities expanded):
    anything but a urlset of distinct URLs is unreadable, and the run starts afresh."""
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS)
    (tmp_path / "sitemap-2.xml").write_bytes(body)
    with SitemapWriter(tmp_path, BASE, stable=True, now=day(2), max_urls=10) as w:
        assert "cannot be read back" in w.layout_note and why in w.layout_note
        for url in sorted(LASTMODS):
            w.add(Entry(url, lastmod=LASTMODS[url]))
        w.publish()
    assert sorted(u for p in part_locs(tmp_path, xsd).values() for u in p) == sorted(LASTMODS)


def test_when_every_old_url_is_gone_numbering_starts_again(tmp_path, xsd):
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS)
    others = {f"{BASE}q/{i}": day(2) for i in range(15)}
    result = run(tmp_path, others, 2, lastmods=others)
    assert (result.changes.added, result.changes.removed) == (15, 35)
    assert list(part_locs(tmp_path, xsd)) == ["sitemap-1.xml", "sitemap-2.xml"]
    assert not (tmp_path / "sitemap-3.xml").exists()


def test_another_base_url_lays_out_afresh_but_still_counts_the_changes(tmp_path, xsd):
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS)
    more = {**LASTMODS, loc(5) + "a": day(2)}
    with SitemapWriter(tmp_path, BASE + "maps/", stable=True, now=day(2), max_urls=10) as w:
        assert "base_url" in w.layout_note
        for url in sorted(more):
            w.add(Entry(url, lastmod=more[url]))
        result = w.publish()
    assert (result.changes.added, result.changes.removed, result.changes.changed) == (1, 0, 0)


def test_a_news_sitemap_in_the_index_keeps_the_layout_stable(tmp_path, xsd):
    """sitemap-news.xml is listed by the index beside the parts but is not one of them:
    the next run reads the published set back without laying it out afresh."""
    from sitemap_out.entry import News

    def with_news(n: int):
        with SitemapWriter(tmp_path, BASE, stable=True, now=day(n), max_urls=10) as w:
            for url in sorted(LASTMODS):
                w.add(Entry(url, lastmod=LASTMODS[url]))
            news = News("The Example Times", "en", day(n), "An article")
            w.add_news(Entry(loc(3), lastmod=LASTMODS[loc(3)], news=news))
            return w.publish()

    first = with_news(1)
    assert first.news is not None
    xsd.index(tmp_path / "sitemap.xml")
    before = files(tmp_path)
    second = with_news(2)
    assert second.changes.layout == "" and second.changes.added == 0
    assert all(p.kept for p in second.parts)
    assert changed_files(before, files(tmp_path)) <= {"sitemap.xml", "sitemap-news.xml"}
    assert "sitemap-news.xml" in {n for n in index_lastmods(tmp_path)}


def test_a_night_without_news_keeps_the_index_and_its_part(tmp_path, xsd):
    """One part and a news sitemap make an index; the next night has no article: the index
    stays (listing the untouched part), rather than sitemap-1.xml becoming sitemap.xml."""
    from sitemap_out.entry import News

    locs = sorted(LASTMODS)[:8]  # one part
    with SitemapWriter(tmp_path, BASE, stable=True, now=day(1), max_urls=10) as w:
        for url in locs:
            w.add(Entry(url, lastmod=LASTMODS[url]))
        w.add_news(Entry(locs[0], news=News("The Example Times", "en", day(1), "An article")))
        w.publish()
    part = (tmp_path / "sitemap-1.xml").read_bytes()
    second = run(tmp_path, locs, 2, lastmods=LASTMODS)
    assert second.is_index and [p.name for p in second.parts] == ["sitemap-1.xml"]
    assert second.parts[0].kept and (tmp_path / "sitemap-1.xml").read_bytes() == part
    assert not (tmp_path / "sitemap-news.xml").exists()
    xsd.index(tmp_path / "sitemap.xml")


@pytest.mark.parametrize("fmt", ["xml", "txt"])
def test_a_single_file_is_read_back_as_a_part(tmp_path, xsd, fmt):
    """A set of one file is read back once, as a part is (not by the validating reader as
    well): its URLs count as unchanged, and the same edits by hand mean a fresh layout."""
    name = f"sitemap.{fmt}"
    run(tmp_path, LASTMODS, 1, lastmods=LASTMODS, max_urls=100, fmt=fmt)
    log = ChangeLog()
    result = run(tmp_path, LASTMODS, 2, lastmods=LASTMODS, max_urls=100, fmt=fmt, log=log)
    assert (result.changes.added, result.changes.removed) == (0, 0) and log.previous
    if fmt == "xml":
        xsd.urlset(tmp_path / name)
    (tmp_path / name).write_text(f"{loc(1)}\n{loc(1)}\n" if fmt == "txt" else "<urlset")
    with SitemapWriter(tmp_path, BASE, stable=True, now=day(3), fmt=fmt, max_urls=100) as w:
        why = "listed twice" if fmt == "txt" else "not well-formed"
        assert "cannot be read back" in w.layout_note and why in w.layout_note
        assert name in w.layout_note


def _both_readings(path: Path) -> tuple[object, object]:
    """_read_part (the fast reading of our own parts, lxml's for any other file) and lxml's
    reading alone: each the rows and digest, or the reason the layout cannot use the file."""
    from sitemap_out import previous

    def outcome(read) -> object:
        try:
            return read(path, xml=True)
        except previous._Unreadable as exc:
            return type(exc), str(exc)

    return outcome(previous._read_part), outcome(previous._checked_lxml)


_LOC_TAIL = st.lists(
    st.sampled_from([*"aZ9-._~/?#[]@!$&'()*+,;=", "%41", "&amp;"]), max_size=12
).map("".join)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tails=st.lists(_LOC_TAIL, min_size=1, max_size=8, unique=True),
    when=st.sampled_from([None, day(1), day(2).date()]),
    changefreq=st.sampled_from([None, "daily"]),
    priority=st.sampled_from([None, 0.5, 1.0]),
    images=st.booleans(),
    stylesheet=st.sampled_from([False, True, "/s.xsl?a=1&b=2"]),
    gz=st.booleans(),
    cut=st.integers(min_value=0, max_value=10_000),
    edit=st.sampled_from(["none", "drop", "insert <", "insert &", "insert space", "swap"]),
)
def test_our_parts_read_fast_as_lxml_reads_them(
    tmp_path_factory, tails, when, changefreq, priority, images, stylesheet, gz, cut, edit
):
    """The fast reading of a part of our own shape gives what lxml's gives, for any part
    the writer makes (escaped characters, lastmods or none, a stylesheet line, gzip, image
    tags that only lxml reads), and for the same part with one byte dropped, inserted or
    swapped: the same rows and digest, or the same reason it is unreadable."""
    out = tmp_path_factory.mktemp("read")
    base = "https://ex.com/" if gz else None
    with SitemapWriter(out, base, gzip=gz, stylesheet=stylesheet) as w:
        for tail in sorted(tails):
            img = (f"https://ex.com/i/{tail}.png",) if images else ()
            w.add(Entry.normalised(f"https://ex.com/{tail}", when, changefreq, priority, img))
        result = w.publish()
    path = out / result.parts[0].name
    data = gzip.decompress(path.read_bytes()) if gz else path.read_bytes()
    at = cut % (len(data) + 1)
    if edit == "drop":
        data = data[:at] + data[at + 1 :]
    elif edit.startswith("insert"):
        data = data[:at] + {"<": b"<", "&": b"&", "space": b" "}[edit.split()[1]] + data[at:]
    elif edit == "swap" and at + 1 < len(data):
        data = data[:at] + data[at + 1 : at + 2] + data[at : at + 1] + data[at + 2 :]
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    fast, slow = _both_readings(path)
    assert fast == slow


@pytest.mark.parametrize(
    ("line", "rows"),
    [
        ("<url><loc>https://ex.com/b</loc></url>", [("https://ex.com/b", None)]),
        (
            "<url><loc>https://ex.com/b?x=1&amp;y=&lt;</loc><lastmod>2024-01-02</lastmod></url>",
            [("https://ex.com/b?x=1&y=<", "2024-01-02")],
        ),
        ("<url><loc>https://ex.com/b</loc><lastmod></lastmod></url>", [("https://ex.com/b", "")]),
        ("x<url><loc>https://ex.com/b</loc></url>", [("https://ex.com/b", None)]),
        ("<url><loc>https://ex.com/b</loc></url><url><loc>https://ex.com/c</loc></url>", None),
    ],
)
def test_a_line_of_another_shape_is_read_as_lxml_reads_it(
    tmp_path: Path, line: str, rows: list[tuple[str, str | None]] | None
) -> None:
    """#26: the fast reading takes a part's values a line at a time, a match a line; a line
    of any other shape (an empty lastmod our writer never writes, text before the <url>,
    two URLs on one line) makes lxml read the part, and both readings agree."""
    path = tmp_path / "sitemap.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<url><loc>https://ex.com/a</loc><lastmod>2024-01-01</lastmod></url>\n{line}\n"
        "</urlset>\n"
    )
    fast, slow = _both_readings(path)
    assert fast == slow
    if rows is not None:
        assert fast[0] == [("https://ex.com/a", "2024-01-01"), *rows]  # type: ignore[index]


def test_parts_whose_entries_grew_past_max_bytes_give_the_rest_on(tmp_path, xsd):
    """A night whose entries are longer (a lastmod each, where there was none) than the
    published parts' fills each old part up to max_bytes and moves the rest on: every part
    within the limit, every URL once (a part that still holds all its entries is known by
    its totals, without reading them: Parts.holds)."""
    locs = [loc(i) for i in range(35)]
    max_bytes = 800  # 10 URLs a part without a lastmod fit, with one they do not
    run(tmp_path, locs, 1, max_bytes=max_bytes)
    first = part_locs(tmp_path, xsd)
    assert [len(urls) for urls in first.values()] == [10, 10, 10, 5]
    dated = dict.fromkeys(locs, day(2))
    run(tmp_path, locs, 2, lastmods=dated, max_bytes=max_bytes)
    second = part_locs(tmp_path, xsd)
    assert sorted(u for urls in second.values() for u in urls) == locs
    assert len(second) > len(first)
    for name in second:
        assert 0 < (tmp_path / name).stat().st_size <= max_bytes


@pytest.mark.parametrize(
    "tail",
    [
        "<url><loc>https://ex.com/b</loc></url></urlset>\n",
        "<<not xml & at all</urlset>\n",
        "<url><loc>https://ex.com/b</loc><lastmod>2024-01-02</lastmod></url></urlset>\n",
    ],
)
def test_text_before_the_end_on_its_line_is_read_as_lxml_reads_it(tmp_path: Path, tail: str):
    """#26: the end of a part of our own shape is `</urlset>` on a line of its own; a file
    with anything before it on that line (a last URL, garbage) is lxml's to read, and both
    readings agree: the URL kept, or the file unreadable."""
    path = tmp_path / "sitemap.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<url><loc>https://ex.com/a</loc></url>\n{tail}"
    )
    fast, slow = _both_readings(path)
    assert fast == slow


class _ByLastDigit:
    """Two groups: the URLs ending in an even digit, and the rest (the default group)."""

    names = ("default", "even")

    def group_of(self, loc: str) -> str:
        return "even" if int(loc[-1]) % 2 == 0 else "default"


@pytest.mark.parametrize("listed", [False, True])
def test_a_first_night_counts_every_url_added_in_its_group(tmp_path, listed):
    """Nothing published before: every URL is added, in its group, whether or not the
    URLs are listed in a changes log (then none is compared with anything: #26)."""
    log = ChangeLog(urls=listed)
    with SitemapWriter(tmp_path, BASE, stable=True, groups=_ByLastDigit(), changes=log) as w:
        for i in range(13):
            w.add(Entry(loc(i)))
        result = w.publish()
    assert log.counts == {"added": 13, "removed": 0, "changed": 0} and not log.previous
    assert log.groups == {
        "default": {"added": 6, "removed": 0, "changed": 0},
        "even": {"added": 7, "removed": 0, "changed": 0},
    }
    assert result.changes.added == 13
    if listed:
        assert [json.loads(r)["loc"] for r in log.rows("added")] == [loc(i) for i in range(13)]
