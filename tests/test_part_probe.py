"""The stable layout's probe (sitemap_out.probe, #26): an entry routed to an old part that is
the next entry of its published file is not written to a scratch file, and a part all of
whose entries are its file's is staged as that file. What is published must be exactly what
the layout publishes without it, run after run, and a published file that is not the one
read first is never taken for the part."""

from __future__ import annotations

import gzip
import os
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_out import Entry, SitemapWriter
from sitemap_out.errors import SitemapOutError
from sitemap_out.parts import Parts
from sitemap_out.previous import file_stamp
from sitemap_out.probe import PartProbe
from sitemap_out.scratch import Bucket
from sitemap_out.xml import NS_IMAGE

BASE = "https://example.com/"


def day(n: int) -> datetime:
    return datetime(2026, 3, n, 4, 0, tzinfo=UTC)


def loc(i: int) -> str:
    return f"{BASE}p/{i:04d}" + ("?a=1&b='2'" if i % 7 == 3 else "")


@contextmanager
def unprobed():
    """The layout as it was without the probe: every entry written to its scratch file."""
    with mock.patch.object(PartProbe, "feed", lambda self, data, ns: False):
        yield


def publish(out: Path, night: dict[int, tuple[int, bool]], n: int, **kw) -> list[tuple]:
    """One run: each URL number with its lastmod day and whether it has an image."""
    with SitemapWriter(out, BASE, stable=True, now=day(n), **kw) as w:
        for i in sorted(night, key=loc):
            when, image = night[i]
            images = (f"{BASE}img/{i}.png",) if image else ()
            w.add(Entry(loc(i), lastmod=day(when), images=images))
        result = w.publish()
    return [(p.name, p.url_count, p.kept) for p in result.parts]


def published(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}


nights = st.lists(
    st.dictionaries(
        st.integers(0, 60), st.tuples(st.integers(1, 3), st.booleans()),
        max_size=50,
    ),
    min_size=2,
    max_size=5,
)  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    nights,
    st.integers(2, 12),
    st.sampled_from([1200, 2000, 50_000]),
    st.sampled_from([(True, False), (True, True), (False, False)]),
)
def test_probed_nights_publish_what_unprobed_ones_do(
    tmp_path_factory, runs, max_urls, max_bytes, kind
):
    """Night after night (URLs added, removed, redated, given an image or not; parts that
    fill, shrink below a quarter or grow past max_bytes), the files published and the
    parts kept are those of the layout that writes every entry to scratch, byte for byte."""
    xml, gz = kind
    probed, plain = tmp_path_factory.mktemp("probed"), tmp_path_factory.mktemp("plain")
    kw = {"max_urls": max_urls, "max_bytes": max_bytes, "gzip": gz, "fmt": "xml" if xml else "txt"}
    for n, night in enumerate(runs, start=1):
        night = night or {0: (1, False)}
        if not xml:  # a text sitemap has no lastmod or image to differ by
            night = {i: (1, False) for i in night}
        first = publish(probed, night, n, **kw)
        with unprobed():
            second = publish(plain, night, n, **kw)
        assert first == second
        assert published(probed) == published(plain)


def test_an_unchanged_night_writes_no_scratch_record(tmp_path):
    """Every entry of an unchanged night is its part's published entry: none is written to
    a scratch file, every part is kept, the files are left as they were."""
    night = {i: (1, i % 3 == 0) for i in range(40)}
    publish(tmp_path, night, 1, max_urls=10)
    before = {p.name: (p.stat().st_ino, p.read_bytes()) for p in tmp_path.iterdir()}
    with mock.patch.object(Bucket, "write", side_effect=AssertionError("written")):
        parts = publish(tmp_path, night, 2, max_urls=10)
    assert all(kept for _, _, kept in parts) and len(parts) == 4
    assert {p.name: (p.stat().st_ino, p.read_bytes()) for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("fmt", ["xml", "txt"])
def test_a_single_file_left_unchanged_is_not_rewritten(tmp_path, fmt):
    """A single sitemap.xml (staged as sitemap-1.xml, renamed back) is kept as published."""
    night = {i: (1, False) for i in range(8)}
    publish(tmp_path, night, 1, fmt=fmt)
    name = f"sitemap.{fmt}"
    inode = (tmp_path / name).stat().st_ino
    with mock.patch.object(Bucket, "write", side_effect=AssertionError("written")):
        assert publish(tmp_path, night, 2, fmt=fmt) == [(name, 8, True)]
    assert (tmp_path / name).stat().st_ino == inode


def test_a_single_file_that_becomes_an_index_keeps_its_urls_in_part_one(tmp_path, xsd):
    """New URLs past max_urls make an index: part 1, the old single file's URLs as they
    were, is written under its new name (a copy of the published file)."""
    publish(tmp_path, {i: (1, False) for i in range(5)}, 1, max_urls=5)
    old = (tmp_path / "sitemap.xml").read_bytes()
    parts = publish(tmp_path, {i: (1, False) for i in range(8)}, 2, max_urls=5)
    assert parts == [("sitemap-1.xml", 5, False), ("sitemap-2.xml", 3, False)]
    assert (tmp_path / "sitemap-1.xml").read_bytes() == old
    xsd.index(tmp_path / "sitemap.xml")
    xsd.urlset(tmp_path / "sitemap-1.xml")


def _part(tmp_path: Path, entries: list[Entry], *, gz: bool = False, tail: bytes = b""):
    parts = Parts(tmp_path, xml=True, gzip=False, max_urls=100, max_bytes=50_000, compresslevel=6)
    data = [parts.serialise(e).encode() for e in entries]
    ns = 0
    for e in entries:
        ns |= e.namespaces
    raw = parts.headers[ns] + b"".join(data) + parts.footer + tail
    path = tmp_path / ("part.xml.gz" if gz else "part.xml")
    path.write_bytes(gzip.compress(raw, mtime=0) if gz else raw)
    return parts, path, data, ns


ENTRIES = [
    Entry(loc(i), lastmod=day(1), images=(f"{BASE}i{i}.png",) if i == 2 else ()) for i in range(5)
]


@pytest.mark.parametrize("gz", [False, True])
def test_the_probe_matches_its_file_and_reads_the_entries_back(tmp_path, gz):
    parts, path, data, ns = _part(tmp_path, ENTRIES, gz=gz)
    probe = PartProbe(path, file_stamp(path), parts.headers, parts.loc_of, 7)  # tiny reads
    for entry, serialised in zip(ENTRIES, data, strict=True):
        assert probe.feed(serialised, entry.namespaces)
    assert [(r[0], r[1], r[2]) for r in probe.prefix()] == [
        (e.loc, d, e.namespaces) for e, d in zip(ENTRIES, data, strict=True)
    ]
    assert not probe.complete(parts.headers[0], parts.footer)  # the image's header
    probe = PartProbe(path, file_stamp(path), parts.headers, parts.loc_of, 7)
    for entry, serialised in zip(ENTRIES, data, strict=True):
        probe.feed(serialised, entry.namespaces)
    assert probe.complete(parts.headers[ns], parts.footer)
    assert ns == NS_IMAGE


def test_the_first_entry_that_differs_ends_the_match(tmp_path):
    parts, path, data, _ = _part(tmp_path, ENTRIES)
    probe = PartProbe(path, file_stamp(path), parts.headers, parts.loc_of, 64)
    assert probe.feed(data[0], 0) and probe.feed(data[1], 0)
    assert not probe.feed(data[3], 0)  # an entry left out
    assert not probe.feed(data[3], 0)  # and no later one matches
    assert [r[0] for r in probe.prefix()] == [loc(0), loc(1)]
    assert not probe.complete(parts.headers[NS_IMAGE], parts.footer)


@pytest.mark.parametrize("tail", [b"\n", b"<!-- more -->", b"x"])
def test_a_file_with_more_after_its_end_is_not_the_part(tmp_path, tail):
    parts, path, data, ns = _part(tmp_path, ENTRIES, tail=tail)
    probe = PartProbe(path, file_stamp(path), parts.headers, parts.loc_of, 64)
    assert all(probe.feed(d, e.namespaces) for d, e in zip(data, ENTRIES, strict=True))
    assert not probe.complete(parts.headers[ns], parts.footer)


def test_a_gzipped_file_with_a_second_member_is_not_the_part(tmp_path):
    parts, path, data, ns = _part(tmp_path, ENTRIES, gz=True)
    with open(path, "ab") as fh:
        fh.write(gzip.compress(b"<!-- more -->", mtime=0))
    probe = PartProbe(path, file_stamp(path), parts.headers, parts.loc_of, 64)
    assert all(probe.feed(d, e.namespaces) for d, e in zip(data, ENTRIES, strict=True))
    assert not probe.complete(parts.headers[ns], parts.footer)


def test_a_file_that_is_not_the_one_read_first_is_never_matched(tmp_path):
    """A published file replaced or touched since the publish read it: nothing matches
    (then every entry is written as before); one changed after entries matched fails the
    publish rather than read other bytes for them."""
    parts, path, data, _ = _part(tmp_path, ENTRIES)
    stamp = file_stamp(path)
    os.utime(path, ns=(stamp[1] + 1, stamp[1] + 1))
    probe = PartProbe(path, stamp, parts.headers, parts.loc_of, 64)
    assert not probe.feed(data[0], 0) and probe.count == 0
    assert not PartProbe(path, None, parts.headers, parts.loc_of, 64).feed(data[0], 0)
    probe = PartProbe(path, file_stamp(path), parts.headers, parts.loc_of, 64)
    assert probe.feed(data[0], 0)
    path.write_bytes(path.read_bytes())  # rewritten in place: another mtime
    os.utime(path, ns=(stamp[1] + 5, stamp[1] + 5))
    with pytest.raises(SitemapOutError, match="changed while this run published"):
        list(probe.prefix())


def test_a_part_published_with_another_header_is_not_matched(tmp_path):
    """A stylesheet added since (the header differs): no entry is taken for the file's."""
    _, path, data, _ = _part(tmp_path, ENTRIES)
    other = Parts(
        tmp_path, xml=True, gzip=False, max_urls=100, max_bytes=50_000, compresslevel=6,
        stylesheet="/s.xsl",
    )  # fmt: skip
    probe = PartProbe(path, file_stamp(path), other.headers, other.loc_of, 64)
    assert not probe.feed(data[0], 0)


def test_a_truncated_gzipped_file_is_not_the_part(tmp_path):
    parts, path, data, ns = _part(tmp_path, ENTRIES, gz=True)
    path.write_bytes(path.read_bytes()[:-12])  # its trailer cut: the member never ends
    probe = PartProbe(path, file_stamp(path), parts.headers, parts.loc_of, 16)
    matched = [probe.feed(d, e.namespaces) for d, e in zip(data, ENTRIES, strict=True)]
    assert not (all(matched) and probe.complete(parts.headers[ns], parts.footer))


def test_a_file_gone_before_its_end_ends_the_match(tmp_path):
    """Removed while it is read: the match ends there, and the entries matched cannot be
    read again (the publish fails; the file is what was published, and it is gone)."""
    parts, path, data, _ = _part(tmp_path, ENTRIES)
    probe = PartProbe(path, file_stamp(path), parts.headers, parts.loc_of, 16)
    assert probe.feed(data[0], 0)
    path.unlink()
    assert not probe.feed(data[1], 0)
    with pytest.raises(OSError):
        list(probe.prefix())
    empty = PartProbe(path, None, parts.headers, parts.loc_of, 16)
    assert list(empty.prefix()) == [] and not empty.complete(parts.headers[0], parts.footer)


@pytest.mark.parametrize("grow", [range(0, 12), range(0, 12, 3), range(9, 12)])
def test_a_last_part_grown_past_max_bytes_publishes_as_unprobed(tmp_path, grow):
    """The last part's own entries, given images, no longer fit: those that do stay (the
    first ones, matched or not), the rest move on to a new part, as without the probe."""
    plain_night = {i: (1, False) for i in range(12)}
    grown = {i: (1, i in grow) for i in range(12)}
    kw = {"max_urls": 12, "max_bytes": 1400}
    outs = tmp_path / "probed", tmp_path / "plain"
    for out in outs:
        publish(out, plain_night, 1, **kw)
    first = publish(outs[0], grown, 2, **kw)
    with unprobed():
        second = publish(outs[1], grown, 2, **kw)
    assert first == second and len(first) == 2
    assert published(outs[0]) == published(outs[1])
