"""The stable layout's probe (sitemap_out.probe, #26): an entry routed to an old part that is
the next entry of its published file is not written to a scratch file, and a part all of
whose entries are its file's is staged as that file. What is published must be exactly what
the layout publishes without it, run after run, and a published file that is not the one
read first is never taken for the part."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
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
from sitemap_out.previous import part_digest
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

    def files() -> dict[str, tuple[int, bytes]]:
        # a published file kept is the same file (its inode); the manifest, rewritten by
        # every publish, only the same bytes: its inode is whichever the kernel gives it
        # (the one freed by the publish before, unless another process took it meanwhile)
        return {
            p.name: (0 if p.name.startswith(".") else p.stat().st_ino, p.read_bytes())
            for p in tmp_path.iterdir()
        }

    before = files()
    with mock.patch.object(Bucket, "write", side_effect=AssertionError("written")):
        parts = publish(tmp_path, night, 2, max_urls=10)
    assert all(kept for _, _, kept in parts) and len(parts) == 4
    assert files() == before


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
    digest = hashlib.sha256(raw).digest()  # the file's, as the publish digests it first
    return parts, path, data, ns, digest


def _probe(parts: Parts, path: Path, digest: bytes, chunk: int = 1 << 16, count: int = 5):
    return PartProbe(path, digest, count, parts.headers, parts.footer, parts.loc_of, chunk)


ENTRIES = [
    Entry(loc(i), lastmod=day(1), images=(f"{BASE}i{i}.png",) if i == 2 else ()) for i in range(5)
]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("chunk", [7, 1 << 16])
def test_the_probe_matches_its_file_and_reads_the_entries_back(tmp_path, gz, chunk):
    parts, path, data, ns, digest = _part(tmp_path, ENTRIES, gz=gz)
    probe = _probe(parts, path, digest, chunk)
    for entry, serialised in zip(ENTRIES, data, strict=True):
        assert probe.feed(serialised, entry.namespaces)
    assert not probe.reading  # its last entry matched: the file's end read, its reader gone
    assert probe.complete(parts.headers[ns]) and ns == NS_IMAGE
    assert not probe.complete(parts.headers[0])  # another header than the file's
    assert list(probe.prefix()) == [
        (e.loc, d, e.namespaces) for e, d in zip(ENTRIES, data, strict=True)
    ]
    assert not probe.feed(data[0], 0)  # more than the file held: no longer matched
    assert part_digest(path) == digest


def test_the_first_entry_that_differs_ends_the_match(tmp_path):
    parts, path, data, _, digest = _part(tmp_path, ENTRIES)
    probe = _probe(parts, path, digest)
    assert probe.feed(data[0], 0) and probe.feed(data[1], 0) and probe.reading
    assert not probe.feed(data[3], 0)  # an entry left out
    assert not probe.feed(data[3], 0)  # and no later one matches
    assert not probe.reading
    assert [r[0] for r in probe.prefix()] == [loc(0), loc(1)]
    assert not probe.complete(parts.headers[NS_IMAGE])


@pytest.mark.parametrize("tail", [b"\n", b"<!-- more -->", b"x"])
@pytest.mark.parametrize("chunk", [64, 1 << 16])
@pytest.mark.parametrize("gz", [False, True])
def test_a_file_with_more_after_its_end_is_not_the_part(tmp_path, tail, chunk, gz):
    """Its digest is its own (the tail's bytes in it) and every entry matches: what follows
    the footer still tells it from the part (a gzipped file's last read holds it all)."""
    parts, path, data, ns, digest = _part(tmp_path, ENTRIES, tail=tail, gz=gz)
    probe = _probe(parts, path, digest, chunk)
    assert all(probe.feed(d, e.namespaces) for d, e in zip(data, ENTRIES, strict=True))
    assert not probe.complete(parts.headers[ns])


@pytest.mark.parametrize("gz", [False, True])
def test_a_file_whose_bytes_are_not_its_digest_is_not_the_part(tmp_path, gz):
    """The bytes the publish digested first are the part, not a file since put in their
    place: every entry matches, the digest does not."""
    parts, path, data, ns, _ = _part(tmp_path, ENTRIES, gz=gz)
    probe = _probe(parts, path, hashlib.sha256(b"what was read first").digest())
    assert all(probe.feed(d, e.namespaces) for d, e in zip(data, ENTRIES, strict=True))
    assert not probe.complete(parts.headers[ns])


def test_a_gzipped_file_with_a_second_member_is_not_the_part(tmp_path):
    parts, path, data, ns, digest = _part(tmp_path, ENTRIES, gz=True)
    with open(path, "ab") as fh:
        fh.write(gzip.compress(b"<!-- more -->", mtime=0))
    probe = _probe(parts, path, digest)
    assert all(probe.feed(d, e.namespaces) for d, e in zip(data, ENTRIES, strict=True))
    assert not probe.complete(parts.headers[ns])
    assert part_digest(path) != digest  # (both members read: not the first's bytes)


def test_a_truncated_gzipped_file_is_not_the_part(tmp_path):
    parts, path, data, ns, digest = _part(tmp_path, ENTRIES, gz=True)
    path.write_bytes(path.read_bytes()[:-12])  # its trailer cut: the member never ends
    probe = _probe(parts, path, digest, 16)
    matched = [probe.feed(d, e.namespaces) for d, e in zip(data, ENTRIES, strict=True)]
    assert not (all(matched) and probe.complete(parts.headers[ns]))


def test_a_file_touched_is_still_the_part_and_one_rewritten_fails_the_publish(tmp_path):
    """A file touched while the run publishes (its bytes the same) is read back as they
    were; one rewritten after entries matched it fails the publish (SitemapOutError, one
    line) rather than lend other bytes, and so does one gone."""
    parts, path, data, _, digest = _part(tmp_path, ENTRIES)
    probe = _probe(parts, path, digest)
    assert probe.feed(data[0], 0) and probe.feed(data[1], 0)
    os.utime(path, ns=(1, 1))
    assert [r[1] for r in probe.prefix()] == data[:2]
    path.write_bytes(path.read_bytes().replace(b"p/0001", b"p/0009"))
    with pytest.raises(SitemapOutError, match=r"part\.xml changed while this run published"):
        list(probe.prefix())
    path.unlink()
    assert not probe.feed(data[2], 0)  # (gone: no more matched)
    with pytest.raises(SitemapOutError, match="changed while this run published"):
        list(probe.prefix())


def test_a_part_published_with_another_header_is_not_matched(tmp_path):
    """A stylesheet added since (the header differs): no entry is taken for the file's."""
    _, path, data, _, digest = _part(tmp_path, ENTRIES)
    other = Parts(
        tmp_path, xml=True, gzip=False, max_urls=100, max_bytes=50_000, compresslevel=6,
        stylesheet="/s.xsl",
    )  # fmt: skip
    assert not _probe(other, path, digest).feed(data[0], 0)


def test_a_probe_of_no_entry_reads_nothing_back(tmp_path):
    parts, path, _, _, digest = _part(tmp_path, ENTRIES)
    empty = _probe(parts, path, digest)
    assert list(empty.prefix()) == [] and not empty.complete(parts.headers[0])


def test_a_layout_of_interleaved_parts_reads_few_at_once(tmp_path):
    """Parts that each hold URLs from across the site (a layout grown night after night):
    no more than _MAX_READING probes read at once, and the set is published as without
    them."""
    from sitemap_out import layout

    night = {i: (1, False) for i in range(60)}
    with mock.patch.object(layout, "_MAX_READING", 3):
        for out in (tmp_path / "a", tmp_path / "b"):
            for n in range(1, 8):  # each night's new URLs (every 7th) fill a new last part
                publish(out, {i: v for i, v in night.items() if i % 7 < n}, n, max_urls=8)
    reading: list[int] = []
    real = layout.StableLayout.route

    def route(self, number, loc, data, ns):
        real(self, number, loc, data, ns)
        reading.append(sum(p.reading for p in self._probes.values()))

    with mock.patch.object(layout, "_MAX_READING", 3):
        with mock.patch.object(layout.StableLayout, "route", route):
            first = publish(tmp_path / "a", night, 9, max_urls=8)
        with unprobed():
            second = publish(tmp_path / "b", night, 9, max_urls=8)
    assert max(reading) <= 3 < len(first)
    assert first == second and published(tmp_path / "a") == published(tmp_path / "b")


def test_an_index_listing_no_part_stays_an_index(tmp_path, xsd):
    """A published index whose one entry left is the news sitemap (its part taken out by
    hand; the manifest still says the layout): the next set is an index still, its layout
    kept, though nothing was published to compare with (the first-night shortcut, #26)."""
    from sitemap_out.entry import News

    when = day(1)
    with SitemapWriter(tmp_path, BASE, stable=True, now=when) as w:
        w.add(Entry(loc(1), lastmod=when))
        w.add_news(Entry(loc(1), news=News("The Paper", "en", when, "A title")))
        w.publish()
    index = tmp_path / "sitemap.xml"
    text = index.read_text()
    index.write_text(re.sub(r"<sitemap><loc>[^<]*sitemap-1\.xml</loc>.*?</sitemap>\n?", "", text))
    with SitemapWriter(tmp_path, BASE, stable=True, now=day(2)) as w:
        w.add(Entry(loc(1), lastmod=when))
        w.add(Entry(loc(2), lastmod=when))
        result = w.publish()
    assert result.is_index and result.changes.added == 2
    xsd.index(index)
    assert [p.name for p in result.parts] == ["sitemap-1.xml"]


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


def test_a_read_error_at_a_parts_end_lists_its_last_url_once(tmp_path):
    """The file's end unreadable once its last entry matched (a transient EIO): that entry
    stays matched, the part is not taken for the file, and it is published once, as
    without the probe (it was counted matched and written to scratch too, #26's review)."""
    night = {i: (1, False) for i in range(30)}
    kw = {"max_urls": 40, "max_bytes": 600}  # parts of 5, some under a quarter
    outs = tmp_path / "probed", tmp_path / "plain"
    for out in outs:
        publish(out, night, 1, **kw)
    real, failed = PartProbe._finish, []

    def finish(self):
        if not failed:
            failed.append(self)
            raise OSError(5, "Input/output error")
        real(self)

    with mock.patch.object(PartProbe, "_finish", finish):
        first = publish(outs[0], night, 2, **kw)
    with unprobed():
        second = publish(outs[1], night, 2, **kw)
    assert failed and first == second
    assert published(outs[0]) == published(outs[1])
