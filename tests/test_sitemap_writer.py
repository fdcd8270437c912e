"""The streaming writer: layout, exact rollover, gzip, text, index; every file read back."""

from __future__ import annotations

import gzip
import tempfile
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sitemap_out.writer as writer_mod
from crawler.shell import eventloop
from sitemap_out import (
    Alternate,
    EmptySitemapError,
    Entry,
    EntryError,
    IndexLimitError,
    PublishResult,
    SitemapOutError,
    SitemapWriter,
    WriterConfigError,
    read_sitemap,
)
from sitemap_out.writer import MAX_BYTES, MAX_URLS

BASE = "https://example.com/docs/"
NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}


def published_names(out: Path) -> set[str]:
    return {p.name for p in out.iterdir() if not p.name.startswith(".")}


def raw_size(path: Path) -> int:
    data = path.read_bytes()
    return len(gzip.decompress(data)) if path.name.endswith(".gz") else len(data)


def read_back(res: PublishResult, xsd, *, max_urls: int = MAX_URLS, max_bytes: int = MAX_BYTES):
    """Validate every published file (XSD + our reader, which must agree) and return the
    multiset of locs, following the index when there is one."""
    out = res.entry_point.parent
    assert published_names(out) == {p.name for p in res.files}
    assert res.files[-1] == res.entry_point
    assert not list(out.glob(".sitemap-staging-*"))

    def urlset(path: Path) -> list[str]:
        assert raw_size(path) <= max_bytes
        rr = read_sitemap(path)
        assert rr.problems == [], rr.problems
        if ".txt" in path.name:
            assert rr.kind == "text"
        else:
            assert rr.kind == "urlset"
            tree = xsd.urlset(path)
            assert [el.text for el in tree.iterfind("s:url/s:loc", NS)] == [
                e.loc for e in rr.entries
            ]
        assert len(rr.entries) <= max_urls
        return [e.loc for e in rr.entries]

    top = read_sitemap(res.entry_point)
    if top.kind != "sitemapindex":
        assert not res.is_index
        return Counter(urlset(res.entry_point))
    assert res.is_index and res.entry_point.name == "sitemap.xml"
    xsd.index(res.entry_point)
    assert top.problems == []
    locs: Counter[str] = Counter()
    for item in top.entries:
        assert item.loc.startswith(BASE)
        locs.update(urlset(out / item.loc.removeprefix(BASE)))
    assert len(top.entries) == len(res.parts)
    return locs


def urls(n: int, start: int = 0) -> list[Entry]:
    return [Entry(f"https://example.com/p/{i}?a=1&b='{i % 7}'") for i in range(start, start + n)]


def write(tmp: Path, entries: list[Entry], **kw) -> PublishResult:
    with SitemapWriter(tmp, kw.pop("base_url", BASE), **kw) as w:
        for e in entries:
            w.add(e)
        assert w.count == len(entries)
        return w.publish()


def test_zero_urls_writes_nothing_and_says_so(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, BASE) as w, pytest.raises(EmptySitemapError, match="no URLs"):
        w.publish()
    assert published_names(tmp_path) == set()
    assert not list(tmp_path.glob(".sitemap-staging-*"))


def test_one_url_is_the_urlset_itself(tmp_path: Path, xsd) -> None:
    res = write(tmp_path, urls(1), base_url=None)
    assert res.entry_point == tmp_path / "sitemap.xml"
    assert res.sitemap_url is None and not res.is_index and res.url_count == 1
    assert read_back(res, xsd) == Counter(e.loc for e in urls(1))
    assert res.entry_point.read_bytes() == (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        b"<url><loc>https://example.com/p/0?a=1&amp;b=&apos;0&apos;</loc></url>\n"
        b"</urlset>\n"
    )


@pytest.mark.parametrize(
    ("n", "parts"), [(49_999, 1), (50_000, 1), (50_001, 2), (120_000, 3)], ids=str
)
def test_real_count_limits(tmp_path: Path, xsd, n: int, parts: int) -> None:
    entries = urls(n)
    res = write(tmp_path, entries)
    assert len(res.parts) == parts and res.is_index == (parts > 1)
    assert [p.url_count for p in res.parts][:-1] == [50_000] * (parts - 1)
    assert res.sitemap_url == BASE + "sitemap.xml"
    assert read_back(res, xsd) == Counter(e.loc for e in entries)


@pytest.mark.parametrize(("n", "parts"), [(99, 1), (100, 1), (101, 2), (240, 3)], ids=str)
@pytest.mark.parametrize("fmt", ["xml", "txt"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_lowered_count_limits(tmp_path: Path, xsd, n: int, parts: int, fmt: str, gz: bool) -> None:
    entries = urls(n)
    res = write(tmp_path, entries, max_urls=100, fmt=fmt, gzip=gz)
    assert len(res.parts) == parts
    if parts == 1 and not gz:
        assert res.entry_point.name == f"sitemap.{fmt}" and not res.is_index
    else:
        assert res.entry_point.name == "sitemap.xml" and res.is_index
        suffix = f".{fmt}" + (".gz" if gz else "")
        assert sorted(p.name for p in res.files[:-1]) == sorted(
            f"sitemap-{i}{suffix}" for i in range(1, parts + 1)
        )
    if gz:
        assert all(p.read_bytes()[:2] == b"\x1f\x8b" for p in res.files[:-1])
    assert read_back(res, xsd, max_urls=100) == Counter(e.loc for e in entries)


def _long_urls(n: int, length: int) -> list[Entry]:
    out = []
    for i in range(n):
        head = f"https://example.com/{i}/"
        out.append(Entry(head + "x" * (length - len(head))))
    return out


def test_real_byte_limit_triggers_before_count(tmp_path: Path, xsd) -> None:
    entries = _long_urls(30_000, 2048)
    res = write(tmp_path, entries, gzip=True, compresslevel=1)
    assert len(res.parts) == 2
    first = res.parts[0]
    assert first.url_count < 50_000
    line = len(b"<url><loc></loc></url>\n") + 2048
    assert first.uncompressed_bytes <= MAX_BYTES < first.uncompressed_bytes + line
    assert raw_size(tmp_path / first.name) == first.uncompressed_bytes
    assert read_back(res, xsd) == Counter(e.loc for e in entries)


@pytest.mark.parametrize("fmt", ["xml", "txt"])
def test_lowered_byte_limit_is_exact(tmp_path: Path, xsd, fmt: str) -> None:
    entries = _long_urls(60, 300)
    res = write(tmp_path, entries, max_bytes=3_000, fmt=fmt)
    assert len(res.parts) > 1
    for info in res.parts:
        assert raw_size(tmp_path / info.name) == info.uncompressed_bytes <= 3_000
    # Rolled over only when needed: one more line would not have fitted.
    line = len(f"<url><loc>{entries[0].loc}</loc></url>\n") if fmt == "xml" else 301
    for info in res.parts[:-1]:
        assert info.uncompressed_bytes + line > 3_000
    assert read_back(res, xsd, max_bytes=3_000) == Counter(e.loc for e in entries)


def test_extension_namespaces_per_file(tmp_path: Path, xsd) -> None:
    plain = urls(3)
    img = Entry("https://example.com/img", images=("https://example.com/a.png",) * 2)
    alt = Entry(
        "https://example.com/en",
        alternates=(
            Alternate("en", "https://example.com/en"),
            Alternate("x-default", "https://example.com/"),
        ),
    )
    res = write(tmp_path, [*plain, img, *urls(2, 10), alt, *urls(2, 20)], max_urls=3)
    texts = [(tmp_path / p.name).read_text() for p in res.parts]
    assert ["xmlns:image" in t for t in texts] == [False, True, False]
    assert ["xmlns:xhtml" in t for t in texts] == [False, False, True]
    read_back(res, xsd, max_urls=3)
    part2 = read_sitemap(tmp_path / res.parts[1].name)
    assert part2.entries[0].images == ("https://example.com/a.png",) * 2
    part3 = read_sitemap(tmp_path / res.parts[2].name)
    assert part3.entries[0].alternates == (
        ("en", "https://example.com/en"),
        ("x-default", "https://example.com/"),
    )


def test_namespace_switch_counts_the_bigger_header(tmp_path: Path, xsd) -> None:
    """An image entry that would fit with the plain header, but not with the image one."""
    first = Entry("https://example.com/aaaaaaaaaa")
    img = Entry("https://example.com/b", images=("https://example.com/i.png",))
    with SitemapWriter(tmp_path, BASE, max_bytes=10_000) as probe:
        fixed_plain = probe._fixed[0]
        fixed_img = probe._fixed[1]  # xml.NS_IMAGE
        probe.abort()
    from sitemap_out.xml import url_element

    size = fixed_plain + len(url_element(first)) + len(url_element(img))
    limit = size + (fixed_img - fixed_plain) - 1  # fits plain, not with xmlns:image
    res = write(tmp_path, [first, img], max_bytes=limit)
    assert len(res.parts) == 2
    read_back(res, xsd, max_bytes=limit)


def test_index_lastmod_is_newest_per_file(tmp_path: Path, xsd) -> None:
    entries = [
        Entry("https://example.com/a", lastmod=date(2024, 3, 1)),
        Entry("https://example.com/b", lastmod=datetime(2024, 2, 1, 12, tzinfo=UTC)),
        Entry("https://example.com/c", lastmod=datetime(2024, 3, 1, 0, 0, 1, tzinfo=UTC)),
        Entry("https://example.com/d"),
        Entry("https://example.com/e"),
    ]
    res = write(tmp_path, entries, max_urls=2)
    index = read_sitemap(res.entry_point)
    assert [e.lastmod for e in index.entries] == ["2024-03-01", "2024-03-01T00:00:01+00:00", None]
    read_back(res, xsd, max_urls=2)


def test_gzip_output_is_deterministic(tmp_path: Path) -> None:
    a = write(tmp_path / "a", urls(10), gzip=True)
    b = write(tmp_path / "b", urls(10), gzip=True)
    assert (tmp_path / "a" / "sitemap-1.xml.gz").read_bytes() == (
        tmp_path / "b" / "sitemap-1.xml.gz"
    ).read_bytes()
    assert a.sitemap_url == b.sitemap_url == BASE + "sitemap.xml"


def test_gzip_needs_base_url_up_front(tmp_path: Path) -> None:
    with pytest.raises(WriterConfigError, match="base_url"):
        SitemapWriter(tmp_path, gzip=True)
    SitemapWriter(tmp_path, BASE, gzip=True).abort()  # the lock was not left behind


def test_rollover_without_base_url_fails_at_publish(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, max_urls=2) as w:
        w.add_many(urls(3))
        with pytest.raises(WriterConfigError, match="pass base_url"):
            w.publish()
    assert published_names(tmp_path) == set()


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"fmt": "html"}, "fmt"),
        ({"max_urls": 0}, "max_urls"),
        ({"max_urls": 50_001}, "max_urls"),
        ({"max_bytes": MAX_BYTES + 1}, "max_bytes"),
        ({"base_url": "/docs/"}, "base_url"),
        ({"base_url": "https://example.com/?q"}, "folder"),
        ({"compresslevel": 10}, "compresslevel"),
    ],
)
def test_bad_arguments(tmp_path: Path, kw: dict, match: str) -> None:
    base = kw.pop("base_url", BASE)
    with pytest.raises(WriterConfigError, match=match):
        SitemapWriter(tmp_path, base, **kw)


def test_base_url_gets_its_slash(tmp_path: Path) -> None:
    res = write(tmp_path, urls(3), base_url="https://example.com/docs", max_urls=2)
    assert res.sitemap_url == "https://example.com/docs/sitemap.xml"
    assert read_sitemap(res.entry_point).entries[0].loc == BASE + "sitemap-1.xml"


def test_index_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_mod, "MAX_SITEMAPS_PER_INDEX", 3)
    with SitemapWriter(tmp_path, BASE, max_urls=1) as w:
        w.add_many(urls(3))
        with pytest.raises(IndexLimitError, match="indexes must not nest"):
            w.add(urls(1, 99)[0])
    assert published_names(tmp_path) == set()


def test_entry_larger_than_max_bytes(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, BASE, max_bytes=200) as w:
        w.add(Entry("https://example.com/short"))
        with pytest.raises(EntryError, match="over max_bytes"):
            w.add(_long_urls(1, 200)[0])
        assert w.count == 1
        w.add(Entry("https://example.com/short2"))
        assert w.publish().url_count == 2


def test_closed_writer_and_wrong_type(tmp_path: Path) -> None:
    w = SitemapWriter(tmp_path, BASE)
    with pytest.raises(TypeError):
        w.add("https://example.com/")  # type: ignore[arg-type]
    w.add(urls(1)[0])
    w.publish()
    with pytest.raises(SitemapOutError, match="already"):
        w.add(urls(1)[0])
    with pytest.raises(SitemapOutError, match="already"):
        w.publish()
    w.abort()  # idempotent


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    paths=st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=60),
    max_urls=st.integers(min_value=1, max_value=12),
    max_bytes=st.integers(min_value=450, max_value=4_000),
    fmt=st.sampled_from(["xml", "txt"]),
    dup=st.booleans(),
)
def test_rollover_arithmetic(
    xsd, paths: list[int], max_urls: int, max_bytes: int, fmt: str, dup: bool
) -> None:
    """No file passes either limit, each rollover was needed, no URL is lost or doubled."""
    entries = [Entry(f"https://example.com/{i}/" + "&" * n) for i, n in enumerate(paths)]
    if dup:
        entries += entries[:3]  # the writer keeps duplicates: it writes what it is given
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        with SitemapWriter(out, BASE, fmt=fmt, max_urls=max_urls, max_bytes=max_bytes) as w:
            for e in entries:
                try:
                    w.add(e)
                except EntryError:
                    # Only an entry too big for an empty file may be refused.
                    alone = w._fixed[0] + len(w._serialise(e).encode())
                    assert alone > max_bytes
                    entries = [x for x in entries if x != e]
                    continue
            if not entries:
                return
            res = w.publish()
        assert sum(p.url_count for p in res.parts) == len(entries)
        for info in res.parts:
            assert raw_size(out / info.name) == info.uncompressed_bytes <= max_bytes
            assert info.url_count <= max_urls
        locs = Counter(e.loc for e in entries)
        if not dup:
            assert read_back(res, xsd, max_urls=max_urls, max_bytes=max_bytes) == locs
        else:  # duplicates are flagged by the reader; count the raw lines instead
            seen: Counter[str] = Counter()
            for info in res.parts:
                seen.update(e.loc for e in read_sitemap(out / info.name).entries)
            assert seen == locs


def test_async_add_rejects_an_entry_that_can_never_fit_at_once(tmp_path, xsd):
    """A batching caller learns of an impossible entry at its own add(), and no entry
    batched before or after it is lost."""

    from sitemap_out import AsyncSitemapWriter, Entry, EntryError

    async def run() -> list[str]:
        w = AsyncSitemapWriter(tmp_path / "out", "https://example.com/", max_bytes=1024)
        bad = 0
        for i in range(50):
            loc = f"https://example.com/{'x' * 900}" if i == 7 else f"https://example.com/p{i}"
            try:
                await w.add(Entry(loc))
            except EntryError as exc:
                bad += 1
                assert exc.loc.endswith("x" * 900)
        assert bad == 1
        await w.publish()
        return []

    eventloop.run(run())
    locs = []
    for path in sorted((tmp_path / "out").glob("sitemap*.xml")):
        tree = xsd.any(path)
        locs += [
            el.text
            for el in tree.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")
            if "sitemap-" not in (el.text or "")
        ]
    assert sorted(locs) == sorted(f"https://example.com/p{i}" for i in range(50) if i != 7)


def test_async_add_many_is_add_for_each_entry(tmp_path: Path, xsd) -> None:
    """add_many (a crawl's publish, a chunk at a time) writes what add() one entry at a time
    writes, byte for byte, across batches; an impossible entry fails at itself, those
    before it added, and a non-entry is refused."""
    from sitemap_out import AsyncSitemapWriter, Entry, EntryError

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    entries = [Entry(f"https://example.com/p{i:03}", when) for i in range(120)]

    async def run(out: Path, chunked: bool) -> None:
        w = AsyncSitemapWriter(out, "https://example.com/", batch_size=16)
        if chunked:
            for at in range(0, len(entries), 25):
                await w.add_many(entries[at : at + 25])
        else:
            for entry in entries:
                await w.add(entry)
        await w.publish()

    eventloop.run(run(tmp_path / "one", False))
    eventloop.run(run(tmp_path / "many", True))
    one, many = (tmp_path / "one" / "sitemap.xml"), (tmp_path / "many" / "sitemap.xml")
    xsd.urlset(many)
    assert one.read_bytes() == many.read_bytes()

    async def refused() -> int:
        w = AsyncSitemapWriter(tmp_path / "bad", "https://example.com/", max_bytes=1024)
        good = [Entry("https://example.com/a"), Entry("https://example.com/b")]
        with pytest.raises(EntryError):
            await w.add_many([*good, Entry(f"https://example.com/{'x' * 900}"), good[0]])
        with pytest.raises(TypeError):
            await w.add_many(["https://example.com/c"])  # type: ignore[list-item]
        count = (await w.publish()).url_count
        return count

    assert eventloop.run(refused()) == 2


@given(
    st.lists(st.text(alphabet="a/&'<>\"%2F", max_size=30), max_size=8),
    st.lists(st.text(alphabet="a/&'%2F", max_size=30), max_size=3),
)
@settings(max_examples=300)
def test_size_bound_of_an_extension_entry_is_never_below_its_size(
    images: list[str], alternates: list[str]
) -> None:
    """check() skips serialising an entry whose bound fits: the bound must hold."""
    from sitemap_out import encode_uri
    from sitemap_out.writer import _size_bound
    from sitemap_out.xml import url_element

    def url(tail: str) -> str:
        return encode_uri("https://example.com/" + tail)

    entry = Entry(
        url("page'&"),
        datetime(2026, 1, 1, tzinfo=UTC),
        "daily",
        0.5,
        images=tuple(url(i) for i in images),
        alternates=tuple(Alternate("zh-Hant-TW", url(a)) for a in alternates),
    )
    bound = _size_bound(entry)
    assert bound is not None and bound >= len(url_element(entry).encode())


def test_check_still_refuses_an_extension_entry_too_big_for_any_file(tmp_path) -> None:
    images = tuple(f"https://example.com/{n}.jpg" for n in range(200))
    with SitemapWriter(tmp_path, BASE, max_bytes=4000) as writer:
        with pytest.raises(EntryError):
            writer.check(Entry("https://example.com/page", images=images))
        writer.check(Entry("https://example.com/page", images=images[:2]))
        writer.add(Entry("https://example.com/page", images=images[:2]))


def test_check_plain_is_the_check_of_the_entry_it_would_make(tmp_path) -> None:
    """#26: check_plain (the crawl's check when a page is listed, the entry not made unless
    a plain one may not fit) raises where check(Entry(...)) or the Entry itself does: a bad
    value at any size, and at a tiny max_bytes a loc that fits only without its lastmod; and
    so does plain_checker(), what the crawl calls (Entry.check_values when plain entries
    always fit)."""
    from sitemap_out import AsyncSitemapWriter

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    locs = ["https://example.com/page"] + [
        "https://example.com/" + "a" * n for n in (700, 780, 850)
    ]
    for max_bytes in (1024, 50_000):
        writer = AsyncSitemapWriter(tmp_path / str(max_bytes), BASE, max_bytes=max_bytes)
        assert writer._writer.plain_fits == (max_bytes == 50_000)
        for loc in locs:
            for lastmod in (None, when):
                for check in (writer.check_plain, writer.plain_checker()):
                    try:
                        writer.check(Entry(loc, lastmod, "daily", 0.5))
                    except EntryError as exc:
                        with pytest.raises(EntryError) as caught:
                            check(loc, lastmod, "daily", 0.5)
                        assert str(caught.value) == str(exc)
                    else:
                        check(loc, lastmod, "daily", 0.5)
        for check in (writer.check_plain, writer.plain_checker()):  # the crawl's: #26
            with pytest.raises(EntryError) as caught:
                check("http://a.io", when, None, None)
            assert caught.value.field == "loc"
            with pytest.raises(EntryError):
                check("https://example.com/page", when, "sometimes", None)
        eventloop.run(writer.abort())
