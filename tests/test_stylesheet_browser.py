"""The published set in headless Chromium (Debian's), served over HTTP from 127.0.0.1 as a
web server serves a sitemap: a urlset, an index, gzipped parts and the news sitemap, each
shown by sitemap.xsl as a table whose rows, links and counts are checked, then sorted and
searched as a person would (real clicks, real typing). Screenshots go to /tmp/xsl-shots/.

What Chromium does with a gzipped part depends on how it is served, and both ways are
checked: sent as XML with ``Content-Encoding: gzip`` it is inflated and transformed like any
XML file; sent as ``application/gzip`` (what most servers do for a .gz file) it is a
download, not a page.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web

from crawler.shell import eventloop
from sitemap_out import Alternate, Entry, SitemapWriter
from sitemap_out.entry import News
from sitemap_out.stylesheet import xsl_bytes
from tests.browser import CdpError, Chromium, Page

SHOTS = Path("/tmp/xsl-shots")
ROWS = "#sitemap tbody tr"
NAMES = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima",
]  # fmt: skip


def _app(root: Path, asked: list[str]) -> web.Application:
    """/<set>/<name>: a file of root/<set> (plain, gz, own), as a server configured for
    sitemaps sends it: XML as application/xml, a .gz part as XML with Content-Encoding:
    gzip. /moved/deeper/<name>: the plain set under another prefix. /download/<name>: a .gz
    part as most servers send it, application/gzip."""

    async def handle(request: web.Request) -> web.StreamResponse:
        folder, name = request.match_info["set"], request.match_info["name"]
        asked.append(request.path_qs)
        if folder == "moved/deeper":
            folder = "plain"
        if name == "own.xsl":  # one's own stylesheet: ours, under another name
            return web.Response(body=xsl_bytes(), content_type="text/xsl")
        path = root / ("gz" if folder == "download" else folder) / name
        if not path.is_file():
            raise web.HTTPNotFound()
        headers = {"Content-Type": "application/xml"}
        if name.endswith(".xsl"):
            headers["Content-Type"] = "text/xsl"
        elif name.endswith(".gz"):
            if folder == "download":
                headers["Content-Type"] = "application/gzip"
            else:
                headers["Content-Encoding"] = "gzip"
        return web.Response(body=path.read_bytes(), headers=headers)

    async def no_icon(request: web.Request) -> web.Response:
        return web.Response(status=204)

    app = web.Application()
    app.router.add_get("/favicon.ico", no_icon)
    app.router.add_get("/{set:plain|gz|own|many|download|moved/deeper}/{name}", handle)
    return app


def _publish(root: Path, base: str) -> list[Entry]:
    """Four sets: plain (one urlset of 12 URLs), gz (an index of gzipped parts and a news
    sitemap), many (2,500 URLs: more than a page of rows), own (a urlset naming one's own
    stylesheet by a URL with a query)."""
    made = [
        Entry(
            f"{base}/page/{name}",
            lastmod=datetime(2026, 5, (i * 7) % 12 + 1, tzinfo=UTC),
            images=tuple(f"{base}/img/{i}-{k}.png" for k in range((i * 5) % 12)),
            alternates=(Alternate("de", f"{base}/de/page/{name}"),) if i % 3 == 0 else (),
        )
        for i, name in enumerate(NAMES)
    ]
    with SitemapWriter(root / "plain", stylesheet=True) as writer:
        for entry in made:
            writer.add(entry)
        writer.publish()
    with SitemapWriter(root / "gz", f"{base}/gz/", gzip=True, max_urls=5, stylesheet=True) as w:
        for entry in made:
            w.add(entry)
        story = News("The Example Times", "en", datetime(2026, 5, 9, tzinfo=UTC), "A <b>story</b>")
        w.add_news(Entry(f"{base}/news/1", news=story))
        w.publish()
    with SitemapWriter(root / "many", stylesheet=True) as writer:
        for i in range(2500):
            writer.add(Entry(f"{base}/many/{i:04d}"))
        writer.publish()
    with SitemapWriter(root / "own", stylesheet="own.xsl?v=1&x=2") as writer:
        for entry in made[:2]:
            writer.add(entry)
        writer.publish()
    return made


def test_a_published_set_reads_as_tables_in_chromium(tmp_path: Path, serve) -> None:
    asked: list[str] = []
    srv = serve(_app(tmp_path, asked))
    made = _publish(tmp_path, srv.url)
    SHOTS.mkdir(exist_ok=True)
    eventloop.run(_drive(tmp_path, srv.url, made, asked))


async def _rows(page: Page, column: int) -> list[str]:
    return await page.evaluate(
        f"[...document.querySelectorAll({json.dumps(ROWS)})]"
        f".map(r => r.cells[{column}].textContent)"
    )


async def _head(page: Page, label: str) -> None:
    """Click the sort button of the column headed `label`."""
    index = await page.evaluate(
        "[...document.querySelectorAll('#sitemap thead th')]"
        f".findIndex(th => th.textContent.trim() === {json.dumps(label)})"
    )
    assert index >= 0, label
    await page.click(f"#sitemap thead th:nth-child({index + 1}) button")


async def _load(page: Page, url: str) -> None:
    """Open a sitemap file; its table is drawn by the time the load event fires."""
    await page.goto(url)
    assert await page.evaluate("document.contentType") == "text/html", url  # transformed


async def _drive(root: Path, base: str, made: list[Entry], asked: list[str]) -> None:
    async with Chromium(root) as browser:
        page = await browser.page()

        # -- a urlset: title, count, every row with its link and counts
        await _load(page, f"{base}/plain/sitemap.xml")
        await page.screenshot(SHOTS / "urlset-with-chromium-banner.png", full_page=False)
        assert await page.evaluate("document.title") == "Sitemap: 12 URLs"
        assert await page.evaluate("document.getElementById('total').textContent") == "12"
        heads = await page.evaluate(
            "[...document.querySelectorAll('#sitemap thead th')].map(th => th.textContent.trim())"
        )
        assert heads == ["#", "URL", "Last modified", "Images", "Alternates"]
        links = await page.evaluate(
            f"[...document.querySelectorAll({json.dumps(ROWS + ' a')})].map(a => a.href)"
        )
        assert links == [e.loc for e in made]
        assert await _rows(page, 3) == [str(len(e.images)) for e in made]
        assert await _rows(page, 4) == [str(len(e.alternates)) for e in made]
        assert await page.evaluate("document.querySelectorAll('script[src], link').length") == 0

        # -- sorting: dates as text, counts as numbers (11 after 9), both ways, and back
        await _head(page, "Last modified")
        dates = await _rows(page, 2)
        assert dates == sorted(e.lastmod.isoformat() for e in made)  # type: ignore[union-attr]
        await _head(page, "Last modified")
        assert await _rows(page, 2) == dates[::-1]
        assert (
            await page.evaluate("document.querySelector('th[aria-sort]').textContent.trim()")
            == "Last modified"
        )
        await _head(page, "Images")
        counts = [int(n) for n in await _rows(page, 3)]
        assert counts == sorted(counts) and max(counts) == 11
        await _head(page, "Images")
        await page.screenshot(SHOTS / "urlset-sorted-by-images.png")
        await _head(page, "#")
        assert await _rows(page, 0) == [str(n) for n in range(1, 13)]

        # -- searching: typed words filter the rows, the count says how many are left
        await page.type_into("#search", "el")
        assert await _rows(page, 1) == [f"{base}/page/{n}" for n in ("delta", "hotel")]
        assert await page.evaluate("document.getElementById('shown').textContent") == (
            "2 of 12 match"
        )
        await page.screenshot(SHOTS / "urlset-searched.png", full_page=False)
        await page.evaluate(
            "(() => { const s = document.getElementById('search'); s.value = '';"
            " s.dispatchEvent(new Event('input')); })()"
        )
        assert len(await _rows(page, 1)) == 12
        await page.type_into("#search", "2026-05-0 charlie")  # every word must match
        assert await _rows(page, 1) == [f"{base}/page/charlie"]

        # -- many rows: a page of 1,000 drawn at a time; sort and search see every row
        await _load(page, f"{base}/many/sitemap.xml")
        shown = "document.getElementById('shown').textContent"
        assert len(await _rows(page, 1)) == 1000
        assert await page.evaluate(shown) == "showing 1,000 of 2,500"
        await page.click("#more")
        assert len(await _rows(page, 1)) == 2000
        await page.click("#more")
        assert len(await _rows(page, 1)) == 2500
        assert await page.evaluate("document.getElementById('more').hidden") is True
        assert await page.evaluate(shown) == ""
        await _load(page, f"{base}/many/sitemap.xml")
        await _head(page, "URL")
        await _head(page, "URL")
        assert (await _rows(page, 1))[:2] == [f"{base}/many/2499", f"{base}/many/2498"]
        await page.type_into("#search", "many/24")
        assert len(await _rows(page, 1)) == 100
        assert await page.evaluate(shown) == "100 of 2,500 match"
        await page.screenshot(SHOTS / "many-sorted-searched.png", full_page=False)

        # -- a narrow window (a phone): still a table, no error
        await page.set_viewport(420, 800)
        await _load(page, f"{base}/plain/sitemap.xml")
        await page.evaluate("document.querySelector('xslt-warning-banner')?.remove()")
        await page.screenshot(SHOTS / "urlset-420px.png", full_page=False)
        assert await page.evaluate("document.documentElement.scrollWidth") <= 420  # it scrolls
        await page.set_viewport(1280, 900)

        # -- the same files under another prefix: the relative href still finds the XSL
        await _load(page, f"{base}/moved/deeper/sitemap.xml")
        assert len(await _rows(page, 1)) == 12
        assert "/moved/deeper/sitemap.xsl" in asked

        # -- the index: its parts with links and lastmod; a click opens a gzipped part
        await _load(page, f"{base}/gz/sitemap.xml")
        await page.evaluate("document.querySelector('xslt-warning-banner')?.remove()")
        await page.screenshot(SHOTS / "index.png")
        assert await page.evaluate("document.title") == "Sitemap index: 4 sitemaps"
        parts = ["sitemap-1.xml.gz", "sitemap-2.xml.gz", "sitemap-3.xml.gz", "sitemap-news.xml.gz"]
        assert await _rows(page, 1) == [f"{base}/gz/{name}" for name in parts]
        assert await _rows(page, 2) == [
            "2026-05-10T00:00:00+00:00", "2026-05-12T00:00:00+00:00",
            "2026-05-11T00:00:00+00:00", "",
        ]  # fmt: skip
        loaded = page.expect("Page.loadEventFired")
        await page.click(ROWS + ":nth-child(2) a")
        await asyncio.wait_for(loaded, 15)
        assert await page.evaluate("location.pathname") == "/gz/sitemap-2.xml.gz"
        assert await page.evaluate("document.title") == "Sitemap: 5 URLs"
        assert await _rows(page, 1) == [e.loc for e in made[5:10]]
        await page.evaluate("document.querySelector('xslt-warning-banner')?.remove()")
        await page.screenshot(SHOTS / "gzipped-part.png")

        # -- the news sitemap: its titles (markup in a title is text) and dates
        await _load(page, f"{base}/gz/sitemap-news.xml.gz")
        assert await page.evaluate("document.querySelector('h1').textContent") == "News sitemap"
        assert await _rows(page, 2) == ["A <b>story</b>"]
        assert await page.evaluate("document.querySelectorAll('#sitemap b').length") == 0

        # -- a .gz part sent as application/gzip is a download, never a page
        try:
            await page.goto(f"{base}/download/sitemap-1.xml.gz")
        except CdpError as exc:
            assert "ERR_ABORTED" in str(exc)
        else:
            raise AssertionError("a .gz sent as application/gzip opened as a page")

        # -- one's own stylesheet, named by a URL whose & is escaped in the instruction
        await _load(page, f"{base}/own/sitemap.xml")
        assert len(await _rows(page, 1)) == 2
        assert "/own/own.xsl?v=1&x=2" in asked

        # what the page threw or logged as an error (Chromium's XSLT notice is a warning)
        assert page.errors == [], page.errors
