"""Hostile and broken servers, and stopping a crawl (issue #5): every case ends with the right
reason and a finished crawl, and an interrupted crawl leaves the published sitemap alone."""

from __future__ import annotations

import asyncio
import gzip
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli import main
from tests.procs import Watched, wait_for
from tests.sites import (
    Page,
    Site,
    crawl_process,
    html,
    read_decisions,
    read_published,
    redirect,
    tree_site,
)


@pytest.fixture
def crawl(tmp_path, capsys, xsd):
    runs = iter(range(1000))

    def run(srv_url: str, *args: str):
        n = next(runs)
        out, dec = tmp_path / f"out{n}", tmp_path / f"d{n}.jsonl"
        code = main(["crawl", srv_url + "/", "-o", str(out), "--decisions", str(dec), *args])
        err = capsys.readouterr().err
        locs = sorted(read_published(out, xsd).locs) if code == 0 else []
        return code, locs, read_decisions(dec) if dec.exists() else {}, err

    return run


class RawServer:
    """A TCP server on 127.0.0.1 that answers every connection with handler(reader, writer),
    for responses no HTTP library would send."""

    def __init__(self, handler) -> None:
        self.handler = handler
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        self.ready.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self.handler, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


def raw_site(pages: dict[bytes, bytes]):
    """A handler answering 'GET <path>' with the raw bytes given for that path."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                path = request.split(b" ", 2)[1]
                answer = pages.get(path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                if answer == b"RESET":
                    writer.transport.abort()
                    return
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return handle


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n"
        + extra
        + b"\r\n"
        + body
    )


# -- slow and broken servers ---------------------------------------------------------------


async def never_answers(request: web.Request) -> web.Response:
    await asyncio.sleep(3600)
    raise AssertionError


async def trickles(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/html"})
    await resp.prepare(request)
    for _ in range(3600):
        await resp.write(b"<p>")
        await asyncio.sleep(0.05)
    return resp


async def resets_mid_body(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/html", "Content-Length": "100000"})
    await resp.prepare(request)
    await resp.write(b"<html>" * 100)
    request.transport.abort()
    return resp


def test_slow_and_broken_servers(serve, crawl):
    site = Site(
        {
            "/": html("/never", "/trickle", "/reset", "/fine"),
            "/never": never_answers,
            "/trickle": trickles,
            "/reset": resets_mid_body,
            "/fine": html(),
        }
    )
    srv = serve(site.app)
    started = time.monotonic()
    code, locs, d, _ = crawl(srv.url, "--timeout", "1", "--retries", "0", "--max-error-rate", "1")
    assert time.monotonic() - started < 15
    assert code == 0
    assert locs == [srv.url + "/", srv.url + "/fine"]
    for path in ("/never", "/trickle"):
        assert d[srv.url + path]["reason"] == "fetch_error"
        assert "within 1 s" in d[srv.url + path]["detail"]
    assert d[srv.url + "/reset"]["reason"] == "fetch_error"


def test_gzip_bomb_and_huge_page(serve, crawl):
    bomb = gzip.compress(b"<p>" * (200 * 1024 * 1024 // 3), compresslevel=9)  # 200 MiB inflated
    assert len(bomb) < 1024 * 1024
    huge = b"<p>x</p>" * (50 * 1024 * 1024 // 8)  # 50 MiB

    async def serve_bomb(request: web.Request) -> web.Response:
        return web.Response(
            body=bomb, headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
        )

    site = Site(
        {
            "/": html("/bomb", "/huge", "/fine"),
            "/bomb": serve_bomb,
            "/huge": Page(huge),
            "/fine": html(),
        }
    )
    srv = serve(site.app)
    code, locs, d, _ = crawl(srv.url, "--max-page-bytes", str(2 * 1024 * 1024))
    assert code == 0
    assert locs == [srv.url + "/", srv.url + "/fine"]
    assert d[srv.url + "/bomb"]["reason"] == "too_large"
    assert d[srv.url + "/huge"]["reason"] == "too_large"


def test_odd_responses(serve, crawl):
    site = Site(
        {
            "/": html(
                "/bad-type",
                "/binary",
                "/empty",
                "/bad-location",
                "/other-host",
                "/wrong-charset",
                "/endless",
            ),
            "/bad-type": Page(html(), content_type="text/html; charset"),
            "/binary": Page(os.urandom(4096), content_type="text/html"),
            "/empty": Page(b"", content_type="text/html"),
            "/bad-location": redirect("http://[::1:bad/"),
            "/other-host": redirect("http://127.0.0.2:1/"),
            "/wrong-charset": Page(
                "<a href='/fine'>é</a>".encode(), content_type="text/html; charset=klingon"
            ),
            "/endless": redirect("/endless?x"),
            "/endless?x": redirect("/endless?xx"),
            "/fine": html(),
        }
    )
    for i in range(3, 20):  # a redirect chain that never ends
        site.pages[f"/endless?{'x' * (i - 1)}"] = redirect(f"/endless?{'x' * i}")
    srv = serve(site.app)
    code, locs, d, _ = crawl(srv.url)
    u = srv.url
    assert code == 0
    assert {u + "/", u + "/bad-type", u + "/fine", u + "/wrong-charset"} <= set(locs)
    assert d[u + "/bad-location"]["reason"] == "http_error"
    assert d["http://127.0.0.2:1/"]["reason"] == "out_of_scope"
    assert any("more than 10 redirects" in r["detail"] for r in d.values())
    assert all(r["reason"] != "fetch_error" for r in d.values())


def test_malformed_headers_and_truncated_body(crawl):
    server = RawServer(
        raw_site(
            {
                b"/robots.txt": b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
                b"/": ok(
                    b'<a href="/garbled">1</a><a href="/short">2</a><a href="/reset">3</a>'
                    b'<a href="/fine">4</a>'
                ),
                b"/garbled": b"HTTP/1.1 200 OK\r\nContent-Type text/html\r\nX: \x00\x01\r\n\r\nhi",
                b"/short": (
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 500\r\n\r\nhi"
                ),
                b"/reset": b"RESET",
                b"/fine": ok(b"<p>fine</p>"),
            }
        )
    )
    try:
        args = ("--timeout", "2", "--retries", "0", "--max-error-rate", "1")
        code, locs, d, _ = crawl(server.url, *args)
    finally:
        server.stop()
    u = server.url
    assert code == 0
    assert locs == [u + "/", u + "/fine"]
    for path in ("/garbled", "/short", "/reset"):
        assert d[u + path]["reason"] in {"fetch_error", "http_error"}, path
        assert d[u + path]["detail"]


@pytest.mark.parametrize(
    "robots",
    [
        b"User-agent: *\nDisallow: /a\n" + b"# filler\n" * (2 * 1024 * 1024 // 9),  # 2 MB
        os.urandom(20000),
        b"<html><body><h1>Welcome</h1><p>Disallow: /a</p></body></html>",
    ],
)
def test_odd_robots_txt(serve, crawl, robots):
    site = Site(
        {
            "/robots.txt": Page(robots, content_type="text/plain"),
            "/": html("/a", "/b"),
            "/a": html(),
            "/b": html(),
        }
    )
    srv = serve(site.app)
    code, locs, _, _ = crawl(srv.url)
    assert code == 0
    assert srv.url + "/b" in locs


# -- stopping --------------------------------------------------------------------------------


def _published(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_crawl_and_keeps_previous_sitemap(serve, tmp_path, sig):
    site = tree_site(2000, 0.02)
    srv = serve(site.app)
    out = tmp_path / "out"
    out.mkdir()
    (out / "sitemap.xml").write_bytes(b"<previous/>")
    before = _published(out)
    proc = crawl_process(srv.url + "/", "-o", str(out), "--concurrency", "4")
    # mid-crawl: pages are being fetched (and the crawl's signal handlers are in place)
    wait_for(lambda: len(site.requests) > 100, "the crawl to make 100 requests", proc=proc)
    started = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 5  # in-flight requests finish quickly
    assert proc.returncode == 130, err
    assert f"stopped by {signal.Signals(sig).name}" in err
    assert "Traceback" not in err
    assert _published(out) == before
    assert not [p for p in out.iterdir() if "staging" in p.name]


def test_second_signal_stops_at_once(serve, tmp_path):
    site = tree_site(2000, 5.0)  # every request takes 5 s
    srv = serve(site.app)
    proc = Watched(crawl_process(srv.url + "/", "-o", str(tmp_path / "out"), "--concurrency", "4"))
    # a page request is in flight (robots.txt, a 404, answers at once)
    wait_for(lambda: "/" in site.paths, "the crawl to request /", proc=proc)
    proc.send_signal(signal.SIGTERM)
    proc.stderr_line("SIGTERM: finishing requests in flight")  # the first signal is taken
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 3
    assert proc.returncode == 130, err
