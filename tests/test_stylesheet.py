"""A sitemap a person can read (issue #27, part 1): with ``stylesheet``, the writer publishes
sitemap.xsl with the set and names it in every XML file; the files stay what search engines,
the XSDs, our reader and the audit read. The XSL is run here with lxml (libxslt, the XSLT
engine Chromium uses too); tests/test_stylesheet_browser.py shows it in Chromium."""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import lxml.html
import pytest
from lxml import etree

import sitemap_out.writer as writer_mod
from crawler.cli import main
from crawler.config import build, from_env
from crawler.errors import ConfigError
from sitemap_out import Alternate, Entry, SitemapWriter, WriterConfigError, read_sitemap
from sitemap_out.entry import News, Video
from sitemap_out.manifest import read_manifest
from sitemap_out.stylesheet import XSL_NAME, xsl_bytes
from sitemap_out.xml import stylesheet_pi
from tests.sites import Page, Site, html, read_published

BASE = "https://example.com/"
DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'
PI = b'<?xml-stylesheet type="text/xsl" href="sitemap.xsl"?>\n'


def day(n: int) -> datetime:
    return datetime(2026, 3, n, 4, 0, tzinfo=UTC)


def entries(n: int = 7) -> list[Entry]:
    """Plain URLs and URLs with each extension, so every part declares other namespaces."""
    made = []
    for i in range(n):
        made.append(
            Entry(
                f"{BASE}p/{i:02d}",
                lastmod=day(i + 1),
                changefreq="daily" if i % 2 else None,
                priority=0.5 if i == 3 else None,
                images=tuple(f"{BASE}img/{i}-{k}.png" for k in range(i % 3)),
                alternates=(Alternate("de", f"{BASE}de/p/{i:02d}"),) if i % 2 else (),
                videos=(Video(f"{BASE}t/{i}.jpg", f"Video {i}", "A video", f"{BASE}v/{i}.mp4"),)
                if i == 4
                else (),
            )
        )
    return made


def news(i: int) -> Entry:
    story = News("The Example Times", "en", day(20), f"Story {i} & more")
    return Entry(f"{BASE}news/{i}", lastmod=day(20), news=story)


def xml_of(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def publish(out: Path, made: list[Entry], *, with_news: bool = False, **kw):
    with SitemapWriter(out, kw.pop("base_url", BASE), **kw) as writer:
        for entry in made:
            writer.add(entry)
        if with_news:
            for i in range(3):
                writer.add_news(news(i))
        return writer.publish()


def render(path: Path) -> lxml.html.HtmlElement:
    """What a browser shows for path: our XSL applied by libxslt, parsed as HTML."""
    transform = etree.XSLT(etree.fromstring(xsl_bytes()))
    result = transform(etree.fromstring(xml_of(path)))
    return lxml.html.fromstring(str(result))


def table(page: lxml.html.HtmlElement) -> tuple[list[str], list[list[str]]]:
    heads = [th.text_content().strip() for th in page.xpath("//table[@id='sitemap']/thead//th")]
    rows = [
        [td.text_content().strip() for td in tr.xpath("td")]
        for tr in page.xpath("//table[@id='sitemap']/tbody/tr")
    ]
    return heads, rows


# -- the files ------------------------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
def test_every_xml_file_names_the_stylesheet_and_still_validates(tmp_path, xsd, gz):
    plain = publish(tmp_path / "plain", entries())
    result = publish(
        tmp_path / "out", entries(), with_news=True, stylesheet=True, max_urls=3, gzip=gz
    )
    names = [p.name for p in result.files]
    suffix = ".xml.gz" if gz else ".xml"
    assert names == [
        XSL_NAME, *(f"sitemap-{i}{suffix}" for i in (1, 2, 3)), f"sitemap-news{suffix}",
        "sitemap.xml",
    ]  # fmt: skip
    assert read_manifest(tmp_path / "out") == names
    assert (tmp_path / "out" / XSL_NAME).read_bytes() == xsl_bytes()
    for path in result.files[1:]:
        data = xml_of(path)
        assert data.startswith(DECLARATION + PI), path.name
        xsd.any(data)  # urlset with image, video, xhtml and news tags, and the index
        read = read_sitemap(path)
        assert read.ok and not read.problems, (path.name, read.problems)
        assert read.kind == ("sitemapindex" if path.name == "sitemap.xml" else "urlset")
    # nothing else changes: the same locs, and the PI is a part's only extra bytes
    assert [p.url_count for p in result.parts] == [3, 3, 1]
    assert plain.url_count == result.url_count == 7
    assert etree.XSLT(etree.parse(str(tmp_path / "out" / XSL_NAME)))  # a valid XSLT 1.0


def test_a_single_file_sitemap_and_its_limits_count_the_line(tmp_path, xsd):
    result = publish(tmp_path / "one", entries(3), stylesheet=True, base_url=None)
    assert [p.name for p in result.files] == [XSL_NAME, "sitemap.xml"]
    data = (tmp_path / "one" / "sitemap.xml").read_bytes()
    assert data.startswith(DECLARATION + PI)
    xsd.urlset(data)
    assert result.parts[0].uncompressed_bytes == len(data)
    # max_bytes is exact with the line: a file of exactly the limit, then a rollover
    size = len(data)
    fits = publish(tmp_path / "fits", entries(3), stylesheet=True, max_bytes=size)
    assert [p.url_count for p in fits.parts] == [3]
    assert (tmp_path / "fits" / fits.parts[0].name).stat().st_size == size
    over = publish(tmp_path / "over", entries(3), stylesheet=True, max_bytes=size - 1)
    assert len(over.parts) == 2
    for part in over.parts:
        assert (tmp_path / "over" / part.name).stat().st_size == part.uncompressed_bytes


def test_the_line_costs_this_many_bytes_per_file(tmp_path):
    """The figure the README gives: the PI line, uncompressed and after gzip."""
    assert len(stylesheet_pi("sitemap.xsl").encode()) == len(PI) == 54
    made = [Entry(f"{BASE}p/{i:05d}", lastmod=day(1)) for i in range(2000)]
    without = publish(tmp_path / "a", made, gzip=True)
    with_pi = publish(tmp_path / "b", made, gzip=True, stylesheet=True)
    raw = [p.uncompressed_bytes for p in with_pi.parts]
    assert [r - p.uncompressed_bytes for r, p in zip(raw, without.parts, strict=True)] == [54]
    grown = (tmp_path / "b" / "sitemap-1.xml.gz").stat().st_size - (
        tmp_path / "a" / "sitemap-1.xml.gz"
    ).stat().st_size
    assert 0 < grown <= 64  # deflate shifts a little: 31 to 57 bytes measured


def test_ones_own_stylesheet_is_named_and_ours_not_published(tmp_path, xsd):
    out = tmp_path / "out"
    publish(out, entries(), stylesheet=True, max_urls=3)
    assert (out / XSL_NAME).is_file()
    own = "/assets/sitemap.xsl?v=2&x=1"
    result = publish(out, entries(), stylesheet=own, max_urls=3)
    assert XSL_NAME not in [p.name for p in result.files]
    assert not (out / XSL_NAME).exists()  # ours, published before, is withdrawn
    assert XSL_NAME not in read_manifest(out)
    line = b'<?xml-stylesheet type="text/xsl" href="/assets/sitemap.xsl?v=2&amp;x=1"?>\n'
    for path in result.files:
        assert xml_of(path).startswith(DECLARATION + line)
        xsd.any(path)
    # the PI's pseudo-attributes, read as a start tag's attributes (as browsers read them),
    # give the reference as given
    pi = etree.fromstring(xml_of(out / "sitemap.xml")).getprevious()
    assert etree.fromstring(f"<pi {pi.text}/>").get("href") == own


@pytest.mark.parametrize(
    "href", ["", "a b.xsl", 'x".xsl', "x?>.xsl", "javascript:alert(1)", "file:///etc/x.xsl"]
)
def test_an_unusable_href_is_refused_before_any_write(tmp_path, href):
    with pytest.raises(WriterConfigError, match="stylesheet"):
        SitemapWriter(tmp_path / "out", BASE, stylesheet=href)
    assert not (tmp_path / "out" / XSL_NAME).exists()


def test_a_text_sitemap_gets_no_stylesheet(tmp_path, xsd):
    for out, kw in ((tmp_path / "one", {}), (tmp_path / "split", {"max_urls": 3})):
        result = publish(out, entries(), stylesheet=True, fmt="txt", **kw)
        assert XSL_NAME not in [p.name for p in result.files]
        assert not (out / XSL_NAME).exists()
        for path in result.files:
            assert b"xml-stylesheet" not in path.read_bytes()
    xsd.index(tmp_path / "split" / "sitemap.xml")  # a split text set's index: as before


def test_a_sitemap_xsl_we_did_not_publish_is_left_alone_and_named(tmp_path, xsd):
    out = tmp_path / "out"
    out.mkdir()
    mine = b"<!-- the site's own stylesheet -->\n"
    (out / XSL_NAME).write_bytes(mine)
    result = publish(out, entries(), stylesheet=True, max_urls=3)
    assert (out / XSL_NAME).read_bytes() == mine
    assert XSL_NAME not in [p.name for p in result.files]
    assert xml_of(out / "sitemap.xml").startswith(DECLARATION + PI)


def test_an_unchanged_stylesheet_is_not_rewritten(tmp_path):
    out = tmp_path / "out"
    publish(out, entries(), stylesheet=True, max_urls=3)
    stat = (out / XSL_NAME).stat()
    publish(out, entries(5), stylesheet=True, max_urls=3)
    again = (out / XSL_NAME).stat()
    assert (again.st_ino, again.st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)


def test_a_failed_run_leaves_the_previous_set_and_its_stylesheet(tmp_path, xsd, monkeypatch):
    out = tmp_path / "out"
    publish(out, entries(), stylesheet=True, max_urls=3)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(RuntimeError), SitemapWriter(out, BASE, max_urls=3) as writer:
        writer.add(entries(1)[0])
        raise RuntimeError("the crawl failed")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # a run without a stylesheet before: an aborted run with one publishes none
    other = tmp_path / "other"
    publish(other, entries())
    with pytest.raises(RuntimeError), SitemapWriter(other, BASE, stylesheet=True) as writer:
        writer.add(entries(1)[0])
        raise RuntimeError("the crawl failed")
    assert not (other / XSL_NAME).exists()
    # killed while placing files: the stylesheet is placed first, so no file names a
    # stylesheet that is not there
    real_replace = os.replace

    def failing(src, dst):
        if Path(dst) == other / "sitemap.xml":
            raise OSError("simulated crash")
        return real_replace(src, dst)

    monkeypatch.setattr(writer_mod.os, "replace", failing)
    with pytest.raises(OSError, match="simulated"):
        publish(other, entries(), stylesheet=True, max_urls=3)
    monkeypatch.setattr(writer_mod.os, "replace", real_replace)
    for path in other.iterdir():
        if path.name.endswith(".xml") and b"xml-stylesheet" in path.read_bytes():
            assert (other / XSL_NAME).is_file()
    assert XSL_NAME in read_manifest(other)  # on record: the next run owns it


# -- the stable nightly layout ----------------------------------------------------------------


def test_the_first_night_with_the_stylesheet_rewrites_the_parts_once(tmp_path, xsd):
    out = tmp_path / "out"
    locs = {f"{BASE}p/{i:04d}": day(1) for i in range(35)}

    def night(n: int, **kw):
        with SitemapWriter(out, BASE, stable=True, now=day(n), max_urls=10, **kw) as writer:
            for url in sorted(locs):
                writer.add(Entry(url, lastmod=locs[url]))
            return writer.publish()

    def assignment() -> dict[str, list[str]]:
        index = read_sitemap(out / "sitemap.xml")
        xsd.index(out / "sitemap.xml")
        found = {}
        for item in index.entries:
            name = item.loc.removeprefix(BASE)
            xsd.urlset(out / name)
            found[name] = [e.loc for e in read_sitemap(out / name).entries]
        return found

    night(1)
    parts = assignment()
    first = night(2, stylesheet=True)
    assert assignment() == parts  # the layout is kept: each URL stays in its part
    assert not any(p.kept for p in first.parts)  # each part rewritten once, with the line
    assert first.changes is not None and first.changes.layout == ""
    assert (first.changes.added, first.changes.removed, first.changes.changed) == (0, 0, 0)
    assert all(xml_of(out / name).startswith(DECLARATION + PI) for name in parts)

    def published() -> dict[str, tuple[bytes, int]]:
        return {
            p.name: (p.read_bytes(), p.stat().st_mtime_ns)
            for p in out.iterdir()
            if not p.name.startswith(".")
        }

    files = published()
    assert XSL_NAME in files
    second = night(3, stylesheet=True)
    assert all(p.kept for p in second.parts)  # stable again: not even rewritten
    assert published() == files
    off = night(4)
    assert assignment() == parts and not any(p.kept for p in off.parts)
    assert not (out / XSL_NAME).exists() and XSL_NAME not in read_manifest(out)


# -- what a browser shows (libxslt) --------------------------------------------------------


def test_a_urlset_shows_as_a_table_with_the_extension_counts(tmp_path):
    result = publish(tmp_path, entries(), stylesheet=True, base_url=None)
    page = render(result.entry_point)
    assert page.findtext(".//title") == "Sitemap: 7 URLs"
    assert page.get_element_by_id("total").text == "7"
    heads, rows = table(page)
    assert heads == [
        "#", "URL", "Last modified", "Change frequency", "Priority", "Images", "Videos",
        "Alternates",
    ]  # fmt: skip
    assert len(rows) == 7
    assert rows[4] == ["5", f"{BASE}p/04", "2026-03-05T04:00:00+00:00", "", "", "1", "1", "0"]
    assert [r[5] for r in rows] == ["0", "1", "2", "0", "1", "2", "0"]  # images
    assert [r[7] for r in rows] == ["0", "1", "0", "1", "0", "1", "0"]  # alternates
    assert rows[3][4] == "0.5" and rows[1][3] == "daily"
    links = [a.get("href") for a in page.xpath("//table[@id='sitemap']/tbody//a")]
    assert links == [e.loc for e in entries()]
    assert not page.xpath(
        "//link[@href] | //script[@src] | //img | //*[@style[contains(., 'url(')]]"
    )


def test_a_plain_urlset_shows_only_the_columns_it_has(tmp_path):
    result = publish(tmp_path, [Entry(f"{BASE}a"), Entry(f"{BASE}b")], stylesheet=True)
    heads, rows = table(render(result.entry_point))
    assert heads == ["#", "URL"] and rows == [["1", f"{BASE}a"], ["2", f"{BASE}b"]]


def test_an_index_lists_its_parts_with_links_and_lastmod(tmp_path):
    result = publish(tmp_path, entries(), stylesheet=True, max_urls=3, with_news=True)
    page = render(result.entry_point)
    assert page.findtext(".//title") == "Sitemap index: 4 sitemaps"
    heads, rows = table(page)
    assert heads == ["#", "Sitemap", "Last modified"]
    names = ["sitemap-1.xml", "sitemap-2.xml", "sitemap-3.xml", "sitemap-news.xml"]
    assert [r[1] for r in rows] == [BASE + n for n in names]
    assert rows[0][2] == "2026-03-03T04:00:00+00:00"
    assert [a.get("href") for a in page.xpath("//table[@id='sitemap']/tbody//a")] == [
        BASE + n for n in names
    ]
    news_page = render(tmp_path / "sitemap-news.xml")
    assert news_page.findtext(".//h1") == "News sitemap"
    heads, rows = table(news_page)
    assert heads[-2:] == ["News title", "Published"]
    assert rows[0][-2:] == ["Story 0 & more", "2026-03-20T04:00:00+00:00"]


def test_hostile_locs_are_text_never_markup_or_script_links(tmp_path):
    doc = (
        DECLARATION + PI + b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>javascript:alert(1)</loc></url>"
        b"<url><loc>https://example.com/&lt;script&gt;alert(1)&lt;/script&gt;</loc></url>"
        b"</urlset>"
    )
    path = tmp_path / "evil.xml"
    path.write_bytes(doc)
    page = render(path)
    assert [a.get("href") for a in page.xpath("//table[@id='sitemap']//a")] == [
        "https://example.com/<script>alert(1)</script>"
    ]
    assert len(page.xpath("//script")) == 1  # ours only
    assert page.xpath("//td[@class='url']")[0].text_content() == "javascript:alert(1)"


def test_another_root_says_it_is_not_a_sitemap(tmp_path):
    path = tmp_path / "other.xml"
    path.write_bytes(DECLARATION + b"<rss/>")
    assert render(path).findtext(".//h1") == "Not a sitemap"


# -- configuration and the crawl ------------------------------------------------------------


def test_config_keys_env_and_checks():
    url = {"url": "https://example.com/"}
    assert build({}, url).stylesheet is False
    assert build({"stylesheet": True}, url).stylesheet is True
    env = from_env(
        {"SITEMAP_CRAWLER_STYLESHEET": "yes", "SITEMAP_CRAWLER_STYLESHEET_URL": "/s.xsl"}
    )
    assert env == {"stylesheet": True, "stylesheet_url": "/s.xsl"}
    assert build(env, url).stylesheet_url == "/s.xsl"
    with pytest.raises(ConfigError, match="stylesheet_url needs stylesheet = true"):
        build({"stylesheet_url": "/s.xsl"}, url)
    with pytest.raises(ConfigError, match="stylesheet_url 'javascript:x' must be http"):
        build({"stylesheet": True, "stylesheet_url": "javascript:x"}, url)
    # browsers refuse a stylesheet from another origin than the sitemap's: so do we
    on = {"stylesheet": True}
    for other in ("https://other.example/s.xsl", "//other.example/s.xsl", "http://example.com/s"):
        with pytest.raises(ConfigError, match=r"not on the sitemap's origin https://example\.com"):
            build({**on, "stylesheet_url": other}, url)
    same = "HTTPS://Example.com:443/x/s.xsl"
    assert build({**on, "stylesheet_url": same}, url).stylesheet_url == same
    # the sitemap's origin is where it is published: sitemap_url, else public_url
    cdn = "https://cdn.example/s.xsl"
    assert build({**on, "stylesheet_url": cdn, "public_url": "https://cdn.example/"}, url)
    assert build({**on, "stylesheet_url": cdn, "sitemap_url": "https://cdn.example/sm.xml"}, url)


def test_a_text_sitemap_with_the_stylesheet_says_it_is_dropped_once(serve, tmp_path, crawl):
    srv = serve(_site().app)
    code, published, _, err = crawl(srv.url + "/", "--stylesheet", "--format", "txt")
    assert code == 0 and XSL_NAME not in [p.name for p in published.files]
    assert err.count("names no stylesheet") == 1, err
    code, _, _, err = crawl(srv.url + "/", "--format", "txt", out=tmp_path / "plain")
    assert code == 0 and "stylesheet" not in err


def _site() -> Site:
    pages = {f"/{i}": html(f"/{i + 1}") for i in range(6)}
    pages["/"] = html("/0")
    pages["/robots.txt"] = Page("", status=404)
    return Site(pages)


def _findings(tmp_path: Path, sitemap: Path, name: str) -> list[tuple[str, str | None]]:
    report = tmp_path / f"{name}.json"
    assert main(["audit", str(sitemap), "-q", "--json", str(report), "--retries", "0"]) in (0, 1)
    found = json.loads(report.read_text())["findings"]
    return sorted((f["code"], f["url"]) for f in found)


def test_a_crawl_with_stylesheet_publishes_it_and_the_audit_finds_nothing_new(
    serve, tmp_path, crawl, xsd
):
    srv = serve(_site().app)
    code, plain, _, _ = crawl(srv.url + "/", "--gzip", out=tmp_path / "plain")
    assert code == 0
    code, styled, out, _ = crawl(
        srv.url + "/", "--gzip", "--stylesheet", "--max-urls-per-file", "3", out=tmp_path / "s"
    )
    assert code == 0, out
    assert sorted(styled.locs) == sorted(plain.locs) and len(plain.locs) == 7
    names = [p.name for p in styled.files]
    assert XSL_NAME in names and "sitemap-3.xml.gz" in names
    for path in styled.files:
        if path.name != XSL_NAME:
            assert xml_of(path).startswith(DECLARATION + PI)
    code, _, _, _ = crawl(srv.url + "/", "--gzip", "--max-urls-per-file", "3", out=tmp_path / "p3")
    assert code == 0
    assert _findings(tmp_path, tmp_path / "s" / "sitemap.xml", "s") == _findings(
        tmp_path, tmp_path / "p3" / "sitemap.xml", "p3"
    )
    # the flag that names one's own, and --no-stylesheet overriding the environment
    code, own, _, _ = crawl(
        srv.url + "/", "--stylesheet", "--stylesheet-url", "/x/site.xsl", out=tmp_path / "own"
    )
    assert code == 0 and XSL_NAME not in [p.name for p in own.files]
    assert b'href="/x/site.xsl"' in (tmp_path / "own" / "sitemap.xml").read_bytes()
    code, _, _, err = crawl(srv.url + "/", "--stylesheet-url", "/x.xsl", out=tmp_path / "bad")
    assert code == 2 and "stylesheet_url needs stylesheet = true" in err


def test_published_reads_back_the_same_with_and_without(tmp_path, xsd):
    publish(tmp_path / "a", entries(), max_urls=3)
    publish(tmp_path / "b", entries(), max_urls=3, stylesheet=True)
    a, b = read_published(tmp_path / "a", xsd), read_published(tmp_path / "b", xsd)
    assert a.locs == b.locs and a.lastmods == b.lastmods
    assert [p.name for p in b.files] == [p.name for p in a.files] + [XSL_NAME]
