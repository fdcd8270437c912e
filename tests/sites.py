"""Fixture sites for crawl tests: a dict of path -> page served by a real aiohttp app.

Each test describes its site as data, so what is being tested is visible in the test.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path

from aiohttp import web
from lxml import etree

from tests.procs import CLI, child_env

NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@dataclass
class Page:
    body: str | bytes = ""
    status: int = 200
    content_type: str | None = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


def urlset(base: str, paths: Iterable[str]) -> Page:
    """A hand-written sitemap listing base + each path, served as XML (the audit's input)."""
    urls = "".join(f"<url><loc>{base}{p}</loc></url>" for p in paths)
    return Page(
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>',
        content_type="application/xml",
    )


def html(*links: str, head: str = "", body: str = "") -> str:
    anchors = "".join(f'<a href="{href}">{href}</a>\n' for href in links)
    return (
        f"<!doctype html><html><head><title>t</title>{head}</head><body>{anchors}{body}"
        f"</body></html>"
    )


def tree_site(pages: int, delay: float = 0.0, *, lastmod: bool = False) -> Site:
    """Pages /0 (also /) to /<pages-1> as a binary tree: page n links to 2n+1 and 2n+2.

    Each page answers after `delay` seconds (so a crawl can be interrupted mid-way) and, with
    lastmod, carries its own Last-Modified. robots.txt is a 404.
    """

    async def page(request: web.Request) -> web.Response:
        if delay:
            await asyncio.sleep(delay)
        n = int(request.path.strip("/") or 0)
        links = "".join(f'<a href="/{m}">{m}</a>' for m in (2 * n + 1, 2 * n + 2) if m < pages)
        headers = (
            {"Last-Modified": formatdate(1_600_000_000 + n * 3600, usegmt=True)} if lastmod else {}
        )
        return web.Response(
            text=f"<html><body><p>{n}</p>{links}</body></html>",
            content_type="text/html",
            headers=headers,
        )

    return Site({"/robots.txt": Page("", status=404)}, fallback=page)


def crawl_process(*args: str) -> subprocess.Popen[str]:
    """`sitemap-crawler crawl ARGS` in its own process (for signals, and for timestamps at a
    server in this process that must not wait for the crawler to release the GIL): this
    checkout's CLI, run by the interpreter running the tests, whatever is on PATH."""
    return subprocess.Popen(
        [*CLI, "crawl", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


#: How far a loaded machine can move one request's arrival at a test server from its start at
#: the crawler (the two processes wait for the CPU in turn; 60 ms seen on two busy cores). The
#: exact spacing of starts is asserted at the client, the throttle, on a virtual clock
#: (tests/test_throttle.py); at the server a gap may be short by this much, never a run.
SERVER_JITTER = 0.15


def assert_spaced(times: list[float], interval: float) -> None:
    """Requests seen by a server at `times` were started `interval` apart: no gap is shorter
    than that but for the arrival jitter, and the n requests spread over (n - 1) intervals
    (the count a clock noise cannot change: the jitter moves both ends by at most itself)."""
    times = sorted(times)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(gap >= interval - SERVER_JITTER for gap in gaps), (interval, gaps)
    assert times[-1] - times[0] >= (len(times) - 1) * interval - SERVER_JITTER, (interval, gaps)


def tagged(request: web.Request, body: bytes, night: int = 0) -> web.Response:
    """An HTML page whose ETag is its body's hash and `night` (a site whose every page
    changed: a night more), or a 304 when the request's If-None-Match is that tag."""
    tag = '"' + hashlib.sha256(body).hexdigest()[:16] + f'-{night}"'
    if request.headers.get("If-None-Match") == tag:
        return web.Response(status=304, headers={"ETag": tag})
    return web.Response(body=body, content_type="text/html", headers={"ETag": tag})


def redirect(location: str, status: int = 301) -> Page:
    return Page("", status, None, {"Location": location})


class Site:
    """A web.Application serving a dict of pages; records every request it sees."""

    def __init__(
        self,
        pages: dict[str, Page | str | Callable[[web.Request], object]],
        fallback: Callable[[web.Request], object] | None = None,
    ) -> None:
        self.pages = pages
        self.fallback = fallback  # answers paths not in pages (default: 404)
        self.requests: list[tuple[float, str, dict[str, str]]] = []
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self._handle)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((time.monotonic(), request.raw_path, dict(request.headers)))
        page = self.pages.get(request.raw_path, self.fallback)
        if callable(page):
            return await page(request)  # type: ignore[misc]
        if page is None:
            return web.Response(status=404, text="not found", content_type="text/plain")
        if isinstance(page, str):
            page = Page(page)
        body = page.body
        if isinstance(body, str):
            if (page.content_type or "").startswith("text/html"):
                # distinct pages must not be byte-identical, or they are (rightly) duplicates
                body += f"<!-- {request.raw_path} -->"
            body = body.encode()
        headers = dict(page.headers)
        if page.content_type is not None:
            headers["Content-Type"] = page.content_type
        return web.Response(status=page.status, body=body, headers=headers)

    @property
    def paths(self) -> list[str]:
        return [path for _, path, _ in self.requests]


@dataclass
class Published:
    """What a crawl published: every file validated, the locs and lastmods read back."""

    files: list[Path]
    locs: list[str]
    lastmods: dict[str, str | None]


def read_published(out: Path, xsd, base: str | None = None) -> Published:
    files = sorted(
        p
        for p in out.iterdir()
        if p.is_file()
        and not p.name.startswith(".")
        and p.suffix != ".atom"  # the feed
        and p.name != "llms.txt"
    )
    locs: list[str] = []
    lastmods: dict[str, str | None] = {}
    for path in files:
        if path.suffix == ".txt":
            locs += path.read_text(encoding="utf-8").splitlines()
            continue
        if path.suffix == ".xsl":  # the stylesheet (stylesheet = true): a valid XSLT
            etree.XSLT(etree.parse(str(path)))
            continue
        tree = xsd.any(path)
        root = tree.getroot()
        if root.tag == f"{NS}sitemapindex":
            continue
        for url in root.iter(f"{NS}url"):
            loc = url.findtext(f"{NS}loc")
            locs.append(loc)
            lastmods[loc] = url.findtext(f"{NS}lastmod")
    return Published(files, locs, lastmods)


def urls(base: str, paths: Iterable[str]) -> set[str]:
    return {base + p for p in paths}


def read_decisions(path: Path) -> dict[str, dict]:
    return {rec["url"]: rec for rec in map(json.loads, path.read_text().splitlines())}


def parse_xml(path: Path) -> etree._Element:
    return etree.parse(str(path)).getroot()
