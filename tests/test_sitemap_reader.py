"""The reader/validator: agreement with the XSDs, every problem code, hostile input."""

from __future__ import annotations

import asyncio
import gzip
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from crawler.shell import eventloop
from sitemap_out import AsyncSitemapWriter, Entry, read_sitemap

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
DECL = '<?xml version="1.0" encoding="UTF-8"?>\n'


def urlset(body: str, ns: str = NS) -> bytes:
    return f"{DECL}<urlset {ns}>{body}</urlset>".encode()


def url(loc: str = "https://example.com/", extra: str = "") -> str:
    return f"<url><loc>{loc}</loc>{extra}</url>"


def xsd_valid(xsd, data: bytes) -> bool:
    try:
        xsd.any(data)
    except (AssertionError, etree.XMLSyntaxError):
        return False
    return True


def test_shared_examples_agree_with_the_xsds(schemas_dir: Path, xsd) -> None:
    expected = {
        "protocol-urlset.xml": set(),
        "protocol-sitemapindex.xml": set(),
        "extensions-urlset.xml": set(),
        "invalid-priority-1.5.xml": {"bad_priority"},
        "invalid-changefreq-sometimes.xml": {"bad_changefreq"},
    }
    for path in sorted((schemas_dir / "examples").glob("*.xml")):
        rr = read_sitemap(path)
        assert rr.codes == expected[path.name], (path.name, rr.problems)
        assert rr.ok == xsd_valid(xsd, path.read_bytes()), path.name
    index = read_sitemap(schemas_dir / "examples" / "protocol-sitemapindex.xml")
    assert index.kind == "sitemapindex"
    assert [e.loc for e in index.entries] == [
        "http://www.example.com/sitemap1.xml.gz",
        "http://www.example.com/sitemap2.xml.gz",
    ]


CASES = [
    # (document, problem codes, severity of the worst: the XSD must agree on errors)
    (urlset(url()), set()),
    (urlset(url(extra="<lastmod>2024-02-29</lastmod>")), set()),
    (urlset(url(extra="<lastmod>2024-01-02T03:04:05.5Z</lastmod>")), set()),
    (urlset(url(extra="<lastmod> 2024-01-02T03:04:05+14:00 </lastmod>")), set()),
    (urlset(url(extra="<lastmod>2023-02-29</lastmod>")), {"bad_lastmod"}),
    (urlset(url(extra="<lastmod>2024-01-02T03:04</lastmod>")), {"bad_lastmod"}),
    (urlset(url(extra="<lastmod>2024</lastmod>")), {"bad_lastmod"}),
    (urlset(url(extra="<lastmod>yesterday</lastmod>")), {"bad_lastmod"}),
    (urlset(url(extra="<lastmod>2024-01-02T03:04:05</lastmod>")), {"lastmod_no_timezone"}),
    (urlset(url(extra="<changefreq>Daily</changefreq>")), {"bad_changefreq"}),
    (urlset(url(extra="<changefreq> daily</changefreq>")), {"bad_changefreq"}),
    (urlset(url(extra="<priority>1.0</priority>")), set()),
    (urlset(url(extra="<priority> .5 </priority>")), set()),
    (urlset(url(extra="<priority>-0.1</priority>")), {"bad_priority"}),
    (urlset(url(extra="<priority>1e-1</priority>")), {"bad_priority"}),
    (urlset(url(extra="<priority>high</priority>")), {"bad_priority"}),
    (urlset("<url><lastmod>2024-01-01</lastmod></url>"), {"missing_loc"}),
    (urlset(url(loc="https://a.b/")), set()),
    (urlset(url(loc="http://a.io")), {"loc_too_short"}),
    (urlset(url(loc="https://example.com/" + "a" * 2029)), {"loc_too_long"}),
    (urlset(url(loc="/relative/path/page")), {"loc_not_absolute"}),
    (
        urlset(url(extra="<priority>0.5</priority><lastmod>2024-01-01</lastmod>")),
        {"field_order"},
    ),
    (urlset(url(extra="<loc>https://example.com/x</loc>")), {"unexpected_element"}),
    (urlset(url(extra="<title>x</title>")), {"unknown_element"}),
    (
        urlset(url() + "<sitemap><loc>https://example.com/s.xml</loc></sitemap>"),
        {"unknown_element"},
    ),
    (
        urlset("<url><lastmod>2024-01-01</lastmod><loc>https://example.com/</loc></url>"),
        {"field_order"},
    ),
    (urlset(url(loc="https://example.com/a#top")), {"loc_fragment"}),
    (urlset(url(loc=" https://example.com/a\n")), {"loc_whitespace"}),
    (urlset(url(loc="page.html")), {"loc_not_absolute"}),
    (urlset(""), {"empty"}),
    (urlset(url() + url()), {"duplicate_loc"}),
    (urlset(url(), ns='xmlns="http://www.google.com/schemas/sitemap/0.84"'), {"wrong_namespace"}),
    (f"{DECL}<html><body/></html>".encode(), {"wrong_root"}),
    (
        b"<urlset " + NS.encode() + b"><url><loc>https://example.com/</url></urlset>",
        {"not_well_formed"},
    ),
]


# Protocol rules sitemap.xsd cannot express (anyURI admits relative and unencoded URIs).
PROTOCOL_ONLY = {"duplicate_loc", "loc_not_absolute", "loc_not_encoded"}
#: What the XSD rejects and every engine reads past: warnings, the URLs read.
ENGINES_READ = {"field_order", "unknown_element"}


@pytest.mark.parametrize(("doc", "codes"), CASES)
def test_problem_codes_and_xsd_agreement(xsd, doc: bytes, codes: set[str]) -> None:
    rr = read_sitemap(doc)
    assert rr.codes == codes, rr.problems
    if codes & ENGINES_READ:
        assert rr.ok and not xsd_valid(xsd, doc) and rr.entries[0].loc, rr.problems
    elif not codes & PROTOCOL_ONLY:
        assert rr.ok == xsd_valid(xsd, doc), rr.problems


def test_problem_lines_and_entries() -> None:
    doc = urlset("\n" + url() + "\n" + url(extra="<priority>2</priority>") + "\n")
    rr = read_sitemap(doc)
    assert [p.line for p in rr.problems] == [4, 4]  # duplicate + priority on line 4
    assert [e.line for e in rr.entries] == [3, 4]
    assert rr.entries[1].priority == "2"


def test_namespace_less_file_is_tolerated_with_a_warning() -> None:
    rr = read_sitemap(urlset(url(extra="<priority>0.5</priority>"), ns=""))
    assert rr.ok and rr.codes == {"missing_namespace"}
    assert rr.problems[0].severity == "warning"
    assert rr.entries[0].priority == "0.5"


def test_index_checks() -> None:
    doc = (
        f"{DECL}<sitemapindex {NS}><sitemap><loc>https://example.com/1.xml</loc>"
        "<lastmod>2024-13-01</lastmod></sitemap><sitemap><changefreq>daily</changefreq>"
        "</sitemap></sitemapindex>"
    ).encode()
    rr = read_sitemap(doc)
    assert rr.kind == "sitemapindex"
    assert rr.codes == {"bad_lastmod", "missing_loc", "unknown_element"}


def test_too_many_urls_and_too_large(tmp_path: Path) -> None:
    doc = urlset("".join(url(f"https://example.com/{i}") for i in range(11)))
    rr = read_sitemap(doc, max_urls=10)
    assert rr.codes == {"too_many_urls"} and len(rr.entries) == 10 and rr.past_limit == 1
    rr = read_sitemap(doc, max_bytes=200)
    assert "too_large" in rr.codes and "not_well_formed" not in rr.codes
    assert rr.uncompressed_bytes == 200


def test_gzip_bomb_is_cut_at_the_limit(tmp_path: Path) -> None:
    bomb = gzip.compress(urlset(url()) + b" " * (60 << 20), compresslevel=9)
    assert len(bomb) < 200_000
    (tmp_path / "bomb.xml.gz").write_bytes(bomb)
    rr = read_sitemap(tmp_path / "bomb.xml.gz")
    assert "too_large" in rr.codes
    assert rr.uncompressed_bytes == 52_428_800


def test_gzip_damage() -> None:
    data = gzip.compress(urlset(url()))
    assert read_sitemap(data).codes == set()
    assert "bad_gzip" in read_sitemap(data[:-12]).codes
    assert "bad_gzip" in read_sitemap(data[:10] + b"\x00" * 20 + data[30:]).codes
    assert read_sitemap(data[:12]).codes == {"bad_gzip"}  # cut before any data: not "empty"
    two_members = gzip.compress(urlset(url())[:50]) + gzip.compress(urlset(url())[50:])
    assert read_sitemap(two_members).codes == set()


def test_entities_are_never_expanded() -> None:
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]>'
        b"<urlset " + NS.encode() + b"><url><loc>https://example.com/&c;</loc></url></urlset>"
    )
    rr = read_sitemap(laughs)
    assert "doctype" in rr.codes
    assert all("aaaa" not in e.loc for e in rr.entries)
    external = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<urlset " + NS.encode() + b"><url><loc>https://example.com/&x;</loc></url></urlset>"
    )
    rr = read_sitemap(external)
    assert all("root:" not in e.loc for e in rr.entries)


def test_text_sitemaps() -> None:
    rr = read_sitemap("\ufeffhttps://example.com/a\r\n\nhttps://example.com/b\n".encode())
    assert rr.kind == "text" and rr.codes == set()
    assert [(e.loc, e.line) for e in rr.entries] == [
        ("https://example.com/a", 1),
        ("https://example.com/b", 3),
    ]
    rr = read_sitemap(b"https://example.com/a\nhttps://example.com/a\nnot a url\n/rel\n")
    assert rr.codes == {"duplicate_loc", "loc_not_encoded", "loc_not_absolute"}
    assert read_sitemap(b"https://example.com/\xff\n").codes >= {"bad_encoding"}
    many = "".join(f"https://example.com/{i}\n" for i in range(6)).encode()
    assert read_sitemap(many, max_urls=5).codes == {"too_many_urls"}
    assert read_sitemap(gzip.compress(many)).kind == "text"


def test_empty_inputs() -> None:
    assert read_sitemap(b"").codes == {"empty"}
    assert read_sitemap(b"  \n").codes == {"empty"}
    assert read_sitemap(b"\n\n", max_bytes=1).codes == {"too_large"}


def test_problem_lists_are_capped_but_counted() -> None:
    doc = urlset("".join(url("/relative/path/" + str(i)) for i in range(300)))
    rr = read_sitemap(doc)
    assert rr.problem_counts == {"loc_not_absolute": 300}
    assert len(rr.problems) == 100


def test_io_errors_raise(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_sitemap(tmp_path / "missing.xml")


def test_async_writer_round_trip(tmp_path: Path, xsd) -> None:
    async def run() -> None:
        async with AsyncSitemapWriter(tmp_path, "https://example.com/", max_urls=700) as aw:

            async def producer(k: int) -> None:
                for i in range(1000):
                    await aw.add(Entry(f"https://example.com/{k}/{i}"))

            await asyncio.gather(*(producer(k) for k in range(3)))
            assert aw.count == 3000
            res = await aw.publish()
        assert res.url_count == 3000 and len(res.parts) == 5
        seen: Counter[str] = Counter()
        xsd.index(res.entry_point)
        for part in res.parts:
            xsd.urlset(tmp_path / part.name)
            rr = read_sitemap(tmp_path / part.name)
            assert rr.ok
            seen.update(e.loc for e in rr.entries)
        assert seen == Counter(
            f"https://example.com/{k}/{i}" for k in range(3) for i in range(1000)
        )

    eventloop.run(run())


def test_async_writer_aborts_on_error(tmp_path: Path) -> None:
    async def run() -> None:
        with pytest.raises(RuntimeError):
            async with AsyncSitemapWriter(tmp_path, "https://example.com/") as aw:
                await aw.add(Entry("https://example.com/x"))
                raise RuntimeError

    eventloop.run(run())
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert not list(tmp_path.glob(".sitemap-staging-*"))
