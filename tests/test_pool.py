"""Worker processes (crawler/pool.py): a pooled crawl judges every URL exactly as an
in-process one, holds the requests at the server to --concurrency, survives a worker's
death and a SIGTERM, and is not used when requests are spaced."""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import gc
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from crawler import cli
from crawler.cli import main
from crawler.config import Config
from crawler.core import urls as urls_module
from crawler.core.access import Access
from crawler.core.directives import NO_DIRECTIVES, Directives
from crawler.core.page import PagePolicy, PageResult
from crawler.core.urls import UNSETTLED, LinkResolver, resolve, resolve_links
from crawler.core.validators import Validators
from crawler.core.wire import WireError, pack, unpack, unpack_any
from crawler.shell import eventloop, pool
from crawler.shell.fetch import HttpTransport, Response
from crawler.shell.loop import CrawlLoop
from crawler.shell.pages import Fetched, analysed
from crawler.shell.pool import (
    REVALIDATION_BLOCK,
    SPAWN_AFTER,
    START_AFTER,
    Job,
    PoolPages,
    Result,
    Settings,
    Settled,
    Spare,
    _cgroup_cpus,
    _fetched,
    _frame,
    _Frames,
    _result,
    default_workers,
    main_share,
    revalidate_here,
)
from crawler.shell.state import CrawlState
from tests.procs import Watched, child_env, wait_for
from tests.sites import Page, Site, crawl_process, read_decisions, read_published, tree_site

GENERIC = 300  # pages /p/0 .. /p/299: well past START_AFTER, so most pages go to the workers
assert GENERIC > 2 * START_AFTER


def feature_site() -> Site:
    """Every kind of page the crawl judges, all met late (from /p/250), when workers run."""

    async def generic(request: web.Request) -> web.Response:
        n = int(request.path.rsplit("/", 1)[1])
        hrefs = [f"/p/{m}" for m in (n + 1, n + 2, 2 * n) if m < GENERIC]
        hrefs += [
            "../p/0",  # relative, up a folder
            f"{n + 3}#frag",  # relative, with a fragment
            f"http://{request.host}/p/1",  # absolute
            "/p/%30",  # normalised to /p/0
            f"/p/{n}?utm_source=x",  # a tracking parameter, stripped: the page itself
            "mailto:a@b.example",
        ]
        if n == 250:
            hrefs += ["/noindex", "/hdr-noindex", "/canon-a", "/dup-1", "/old", "/gone"]
            hrefs += ["/file.pdf", "/nofollow", "/link-header", "/based/", "/image.png"]
        anchors = "".join(f'<a href="{h}">x</a>' for h in hrefs)
        anchors += '<a rel="nofollow" href="/never">x</a>'
        head = '<link rel="alternate" hreflang="de" href="/de/p">' if n == 7 else ""
        if n % 5 == 0:  # a two-page hreflang cluster, made in a worker or not (issue #15)
            head += (
                f'<link rel="alternate" hreflang="en" href="/p/{n}">'
                f'<link rel="alternate" hreflang="fr" href="/p/{n + 1}">'
            )
        if n % 5 == 1:
            head += (
                f'<link rel="alternate" hreflang="en" href="/p/{n - 1}">'
                f'<link rel="alternate" hreflang="fr" href="/p/{n}">'
            )
        anchors += f'<img src="/img/{n}.png" srcset="/img/{n}@2x.png 2x">'
        if n % 50 == 3:
            anchors += f'<video src="/v/{n}.mp4" poster="/v/{n}.jpg" title="Video {n}"></video>'
            head += '<meta name="description" content="A page with a video.">'
        return web.Response(
            text=f"<html><head>{head}</head><body><p>{n}</p>{anchors}</body></html>",
            content_type="text/html",
            headers={"Last-Modified": formatdate(1_600_000_000 + n * 60, usegmt=True)},
        )

    duplicate = b"<html><body><p>same</p><a href='/dup-2'>next</a></body></html>"
    pages: dict[str, object] = {
        "/robots.txt": Page("User-agent: *\nDisallow: /p/13\n", content_type="text/plain"),
        "/": '<a href="/p/0">start</a>',
        "/de/p": "<p>deutsch</p>",
        "/noindex": '<meta name="robots" content="noindex"><a href="/after-noindex">x</a>',
        "/after-noindex": "<p>listed: reached through a noindex page</p>",
        "/hdr-noindex": Page("<p>x</p>", headers={"X-Robots-Tag": "noindex"}),
        "/canon-a": '<link rel="canonical" href="/canon-b"><p>a</p>',
        "/canon-b": "<p>b</p>",
        "/dup-1": Page(duplicate),
        "/dup-2": Page(duplicate),
        "/old": Page("", 301, None, {"Location": "/p/5"}),
        "/file.pdf": Page(
            b"%PDF-1.4", content_type="application/pdf",
            headers={"Last-Modified": "Sun, 06 Nov 1994 08:49:37 GMT"},
        ),
        "/nofollow": '<meta name="robots" content="nofollow"><a href="/unreached">x</a>',
        "/link-header": Page("<p>x</p>", headers={"Link": '</canon-b>; rel="canonical"'}),
        "/based/": '<base href="/p/"><a href="260">relative to the base</a>',
        "/image.png": Page(b"\x89PNG", content_type="image/png"),
    }  # fmt: skip
    site = Site(pages, fallback=None)  # type: ignore[arg-type]

    async def route(request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/p/") and request.path[3:].isdigit():
            site.requests.append((time.monotonic(), request.raw_path, dict(request.headers)))
            return await generic(request)
        return await site._handle(request)

    site.app = web.Application()
    site.app.router.add_route("*", "/{tail:.*}", route)
    return site


def _crawl(url: str, out: Path, *args: str) -> tuple[dict, dict]:
    report, decisions = out.with_suffix(".report.json"), out.with_suffix(".jsonl")
    code = main(
        ["crawl", url, "-o", str(out), "-q", "--report", str(report),
         "--decisions", str(decisions), *args]
    )  # fmt: skip
    assert code == 0
    return json.loads(report.read_text()), read_decisions(decisions)


@pytest.mark.parametrize(
    ("workers", "concurrency"),
    [(2, 4), (1, 8)],  # (1, 8): the main process makes a share of the pages too
)
def test_pooled_crawl_judges_every_url_as_an_in_process_one(
    serve, tmp_path, xsd, workers, concurrency
):
    srv = serve(feature_site().app)
    alone_report, alone = _crawl(srv.url + "/", tmp_path / "alone", "--workers", "0")
    pooled_report, pooled = _crawl(
        srv.url + "/",
        tmp_path / "pooled",
        "--workers",
        str(workers),
        "--concurrency",
        str(concurrency),
    )
    assert alone_report["requests"]["workers"] == 0
    assert pooled_report["requests"]["workers"] == workers

    def judged(decisions: dict) -> dict:
        return {url: (d["status"], d["reason"], d["detail"]) for url, d in decisions.items()}

    assert judged(pooled) == judged(alone)
    reasons = {d["reason"] for d in pooled.values()}
    assert reasons >= {"listed", "robots_txt", "meta_noindex", "header_noindex"}
    assert reasons >= {"canonicalised", "duplicate_of", "redirect", "http_error", "content_type"}
    base = srv.url
    assert pooled[f"{base}/after-noindex"]["reason"] == "listed"
    assert pooled[f"{base}/dup-2"]["detail"] == f"{base}/dup-1"
    # met only through nofollow links: never fetched, decided nofollow (#24)
    assert pooled[f"{base}/unreached"]["reason"] == "nofollow"
    assert pooled[f"{base}/never"]["reason"] == "nofollow"
    assert pooled[f"{base}/de/p"]["reason"] == "listed"
    assert f"{base}/p/%30" not in pooled
    assert pooled[f"{base}/p/13"]["reason"] == "robots_txt"

    alone_pub = read_published(tmp_path / "alone", xsd)
    pooled_pub = read_published(tmp_path / "pooled", xsd)
    assert sorted(pooled_pub.locs) == sorted(alone_pub.locs)
    assert pooled_pub.lastmods == alone_pub.lastmods
    assert pooled_pub.lastmods[f"{base}/p/299"] == "2020-09-13T17:25:40+00:00"  # + 299 min
    assert pooled_pub.lastmods[f"{base}/file.pdf"] == "1994-11-06T08:49:37+00:00"
    # images, alternates and videos come out of the workers the same (issue #15)
    for name in ("sitemap.xml",):
        pooled_bytes = (tmp_path / "pooled" / name).read_bytes()
        assert pooled_bytes == (tmp_path / "alone" / name).read_bytes()
    assert pooled_bytes.count(b"<image:image>") > GENERIC
    assert b'hreflang="fr"' in pooled_bytes and b"<video:video>" in pooled_bytes
    assert pooled_report["hreflang"] == alone_report["hreflang"]


class CountingTree:
    """A binary-tree site (page n links to 2n+1 and 2n+2) that answers after `delay` and
    records the most requests it had in flight at once since `mark()`, and which connections
    (by the client's port) they came on."""

    def __init__(self, pages: int, delay: float) -> None:
        self.pages, self.delay = pages, delay
        self.in_flight = self.peak = 0
        self.site = Site({"/robots.txt": Page("", 404)}, fallback=self._page)
        self._from: dict[int, int] = {}  # client port -> its requests in flight
        self._connections: dict[int, asyncio.BaseTransport] = {}  # client port -> connection

    def mark(self) -> None:
        self.peak = self.in_flight

    def over(self, ports: set[int]) -> bool:
        """Whether the connections from these client ports are closed here, with no request
        of theirs in flight (or were never seen)."""
        return not any(
            self._from.get(port) or not self._connections[port].is_closing()
            for port in ports
            if port in self._connections
        )

    async def _page(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        transport = request.transport
        port = transport.get_extra_info("peername")[1] if transport is not None else 0
        if transport is not None:
            self._connections[port] = transport
        self._from[port] = self._from.get(port, 0) + 1
        try:
            await asyncio.sleep(self.delay)
            n = int(request.path.strip("/") or 0)
            children = (m for m in (2 * n + 1, 2 * n + 2) if m < self.pages)
            links = "".join(f'<a href="/{m}">x</a>' for m in children)
            return web.Response(text=f"<p>{n}</p>{links}", content_type="text/html")
        finally:
            self.in_flight -= 1
            self._from[port] -= 1


@pytest.mark.parametrize(
    ("workers", "concurrency"),
    [(2, 3), (1, 8)],  # (1, 8): the main process makes pages too, with a share of 2
)
def test_workers_hold_requests_at_the_server_to_concurrency(
    serve, tmp_path, xsd, workers, concurrency
):
    tree = CountingTree(400, 0.005)
    srv = serve(tree.site.app)
    report, _ = _crawl(
        srv.url + "/",
        tmp_path / "out",
        "--workers",
        str(workers),
        "--concurrency",
        str(concurrency),
    )
    requests = report["requests"]
    assert requests["workers"] == workers
    after_start = requests["requests"] - START_AFTER  # the first pages are the main process's
    assert 0 < requests["by_workers"] <= after_start
    if workers == 1:  # a share of 2 of 8: the main process makes about a quarter of the rest
        assert requests["by_workers"] < after_start * 0.9
    assert len(read_published(tmp_path / "out", xsd).locs) == 400
    assert 1 <= tree.peak <= concurrency  # twice as many jobs in flight, never more requests


def test_a_worker_parks_its_runners_between_jobs_rather_than_make_a_task_a_job(serve):
    """Jobs sent one at a time, each after the last one's result, as a crawl's come when
    the worker keeps up: its runner waits for the next job rather than end, so the worker
    makes a task a runner (at most its share), not one a job, each a step and a done
    callback through the loop. The same results, in the same order."""
    tree = CountingTree(40, 0.0)
    srv = serve(tree.site.app)
    jobs = 12

    async def drive() -> tuple[int, list[int]]:
        loop = asyncio.get_running_loop()
        made = 0

        def counted(loop, coro, **kwargs):  # type: ignore[no-untyped-def]
            nonlocal made
            made += 1
            return asyncio.Task(coro, loop=loop, **kwargs)

        jobs_read, jobs_write = os.pipe()
        results_read, results_write = os.pipe()
        settings = pool.Settings("bot/1", 3, 10.0, 1 << 20, PagePolicy("bot"), Access())
        worker = loop.create_task(pool._serve(settings, jobs_read, results_write))
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(results_read, "rb", 0)
        )
        sender, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(jobs_write, "wb", 0))
        frames = pool._Frames()
        assert not frames.feed(await reader.readexactly(4))[0]  # ready
        loop.set_task_factory(counted)
        statuses = []
        for n in range(jobs):
            sender.write(pool._frame(pack(pool.Job(n, f"{srv.url}/{n}", 1, None))))
            payloads: list[bytes] = []
            while not payloads:
                payloads = frames.feed(await reader.read(1 << 16))
            (result,) = [unpack(pool.Result, p) for p in payloads]
            assert result.job == n and result.page is not None
            statuses.append(result.status)
        sender.close()
        await asyncio.wait_for(worker, 10)
        loop.set_task_factory(None)
        return made, statuses

    made, statuses = eventloop.run(drive())
    assert statuses == [200] * jobs
    assert made <= 3 + 1, made  # a runner each at most (the share), and one connection's


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            kids += [int(c) for c in f.read().split()]
    return kids


def _connections_to(pid: int, port: int) -> set[int]:
    """The local ports of process pid's TCP connections to `port` on 127.0.0.1 (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    with open(f"/proc/{pid}/net/tcp") as table:
        next(table)  # the heading
        for row in table:
            fields = row.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if inode in inodes and remote == f"0100007F:{port:04X}":
                ports.add(int(local.split(":")[1], 16))
    return ports


def test_a_dead_worker_costs_nothing_but_a_warning(serve, tmp_path, xsd):
    site = tree_site(600, 0.01)
    srv = serve(site.app)
    out = tmp_path / "out"
    proc = crawl_process(srv.url + "/", "-o", str(out), "--workers", "2", "--log-format", "json")
    wait_for(
        lambda: len(site.requests) > START_AFTER + 50,
        f"the crawl to make {START_AFTER + 50} requests",
        proc=proc,
    )
    workers = _children(proc.pid)
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"worker process {workers[0]} ended" in err
    assert "Traceback" not in err
    assert len(read_published(out, xsd).locs) == 600


def test_a_crawl_and_its_workers_leave_nothing_open(serve, tmp_path, xsd):
    """Python's development mode warns of a file or transport left to the collector or the
    event loop's close to close: a worker left its end of the jobs pipe so. The command
    keeps its last collection in that mode (crawler.cli.console_main), so the crawl's own
    process is looked at too."""
    site = tree_site(START_AFTER + 300)
    srv = serve(site.app)
    out, report = tmp_path / "out", tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-m", "crawler.cli", "crawl", srv.url + "/", "-o",
         str(out), "--workers", "2", "-q", "--report", str(report)],
        env=child_env(PYTHONWARNINGS="always"), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr
    assert len(read_published(out, xsd).locs) == START_AFTER + 300
    assert json.loads(report.read_text())["requests"]["by_workers"] > 0  # they took pages


def test_sigterm_stops_workers_too(serve, tmp_path, xsd):
    site = tree_site(2000, 0.01)
    srv = serve(site.app)
    out = tmp_path / "out"
    proc = crawl_process(srv.url + "/", "-o", str(out), "--workers", "2", "-q")
    wait_for(
        lambda: len(site.requests) > START_AFTER + 100,
        f"the crawl to make {START_AFTER + 100} requests",
        proc=proc,
    )
    workers = _children(proc.pid)
    assert len(workers) == 2
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert not out.exists() or not list(out.glob("sitemap*"))
    for pid in workers:  # reaped by the crawl, not left running or as zombies
        assert not Path(f"/proc/{pid}").exists()


def test_no_workers_for_spaced_requests(serve, tmp_path):
    site = tree_site(START_AFTER + 60)
    site.pages["/robots.txt"] = Page(
        "User-agent: *\nCrawl-delay: 0.001\n", content_type="text/plain"
    )
    srv = serve(site.app)
    report, _ = _crawl(srv.url + "/", tmp_path / "a", "--workers", "2")
    assert report["requests"]["workers"] == 0  # Crawl-delay
    site.pages["/robots.txt"] = Page("", 404)
    report, _ = _crawl(srv.url + "/", tmp_path / "b", "--workers", "2", "--delay", "0.001")
    assert report["requests"]["workers"] == 0
    report, _ = _crawl(srv.url + "/", tmp_path / "c", "--workers", "2")
    assert report["requests"]["workers"] == 2


# --- the wire -------------------------------------------------------------------------------


@given(st.lists(st.binary(max_size=300), max_size=20), st.lists(st.integers(1, 64), min_size=1))
def test_frames_come_back_whole_however_the_stream_is_cut(payloads, cuts):
    stream = b"".join(_frame(p) for p in payloads)
    frames, got, at, i = _Frames(), [], 0, 0
    while at < len(stream):
        step = cuts[i % len(cuts)]
        got += frames.feed(stream[at : at + step])
        at, i = at + step, i + 1
    assert got == payloads


def test_a_result_crosses_the_pipe_with_what_the_crawl_reads():
    headers = CIMultiDictProxy(
        CIMultiDict(
            [("Content-Type", "text/html"), ("X-Robots-Tag", "noindex"),
             ("X-Robots-Tag", "nofollow"), ("Set-Cookie", "dropped"), ("Link", "<a>; rel=x")]
        )
    )  # fmt: skip
    page = PageResult(
        "text/html", Directives(True, True, "X-Robots-Tag"), Directives(True, False, "meta"),
        "http://h/c", ["http://h/u"], -(2**63) + 5,
    )  # fmt: skip
    sent = Response("http://h/", 200, headers, b"body", truncated=False)
    wire = _result(7, Fetched(sent, page))
    (payload,) = _Frames().feed(wire)
    result = unpack(Result, payload)
    assert result.job == 7
    got = _fetched("http://h/", result)
    resp = got.response
    assert (resp.status, resp.error, resp.truncated, resp.body) == (200, None, False, b"")
    assert resp.headers.getall("x-robots-tag") == ["noindex", "nofollow"]
    assert "Set-Cookie" not in resp.headers
    assert got.page == page


_SPELLINGS = st.sampled_from([*pool.KEPT_HEADERS, "Server", "Set-Cookie", "Lin\u212a", "ß"])


@given(
    st.lists(
        st.tuples(
            _SPELLINGS.flatmap(lambda n: st.sampled_from([n, n.lower(), n.upper(), n.swapcase()])),
            st.text(max_size=3),
        ),
        max_size=12,
    )
)
def test_the_kept_headers_are_what_a_case_insensitive_search_finds(fields):
    """One pass over the answer's headers keeps what `getall` of each kept name would:
    the same names as the crawl asks for them, each name's values in their order."""
    headers = CIMultiDictProxy(CIMultiDict(fields))
    got = CIMultiDict(pool._kept(headers))
    for name in pool.KEPT_HEADERS:
        assert got.getall(name, []) == headers.getall(name, [])
    assert {name for name, _ in pool._kept(headers)} <= set(pool.KEPT_HEADERS)


def test_a_nested_record_at_its_shared_default_crosses_as_that_instance():
    """NO_DIRECTIVES, nearly every page's two Directives, is packed by identity and built
    back as itself, not made again per result; any other value crosses field by field."""
    said = Directives(True, False, "meta", (("googlebot", "meta"),))
    for page in (PageResult("text/html"), PageResult("text/html", said, Directives())):
        got = unpack(PageResult, pack(page))
        assert got == page
        assert got.header == page.header
    plain = unpack(PageResult, pack(PageResult("text/html", Directives())))
    assert plain.header is NO_DIRECTIVES and plain.meta is NO_DIRECTIVES
    assert unpack(PageResult, pack(PageResult("text/html", said))).header is not NO_DIRECTIVES


def test_every_message_crosses_the_pipe_field_by_field():
    policy = PagePolicy("bot", True, ("utm_*", "sid"))
    messages = (
        Settings("bot/1", 3, 2.5, 1024, policy, Access("http://h", ("u", "p"), (("X", "y"),))),
        Job(3, "http://h/", 2, None),
        Job(4, "http://h/a", 1, Validators('"e1"', "Sun, 06 Nov 1994 08:49:37 GMT")),
        Settled(["a"], [0]),
    )
    for message in messages:
        assert unpack_any((Settings, Job, Settled), pack(message)) == message
    assert unpack(Result, pack(Result(1, 0, [], "refused", False, 0.5, None, None))).page is None
    with pytest.raises(WireError):
        unpack(Job, pack(Settled(["a"], [0])))  # another record is never read as this one


def test_a_settled_listing_still_gets_links_that_bring_it_closer():
    links = LinkResolver()
    links.settle(["http://h/twin", "http://h/done"], [3, 0])
    targets = ["http://h/twin", "http://h/done", "http://h/new"]
    assert links.unsettled(targets, 3) == ["http://h/new"]
    assert links.unsettled(targets, 2) == ["http://h/twin", "http://h/new"]


def test_a_resolver_keeping_every_link_remembers_them_all():
    """With a state a worker sends every link back (Settings.all_links): none is filtered,
    each is remembered as produced, and forgotten all at once when full, as unsettled()
    does (#26)."""
    links = LinkResolver(capacity=3)
    links.remember(["http://h/a", "http://h/b", "http://h/a"])
    assert links.known == {"http://h/a": UNSETTLED, "http://h/b": UNSETTLED}
    links.remember(["http://h/b", "http://h/c"])  # b is known: only c is new, and fits
    assert list(links.known) == ["http://h/a", "http://h/b", "http://h/c"]
    links.remember(["http://h/d"])  # full: all forgotten first
    assert links.known == {"http://h/d": UNSETTLED}


@pytest.mark.interpreted
@pytest.mark.parametrize("remembered", [True, False])
def test_links_remembered_are_found_again_without_normalising(monkeypatch, remembered):
    """A worker keeping every link once normalised each of a page's relative links on every
    page (a tenth of a first night's CPU): remembered, they are found by their exact join,
    and resolve() is not asked again; not remembered (the control), it is."""
    links, base = LinkResolver(), "http://h/dir/page"
    hrefs = ["b", "../c", "sub/f"]
    first = resolve_links(base, hrefs, (), links.known)
    assert first == ["http://h/dir/b", "http://h/c", "http://h/dir/sub/f"]
    if remembered:
        links.remember(first)
    asked: list[str] = []
    monkeypatch.setattr(urls_module, "resolve", lambda b, h, s: asked.append(h) or resolve(b, h, s))
    assert resolve_links(base, hrefs, (), links.known) == first
    assert asked == ([] if remembered else hrefs)


# --- the workers' link resolution -----------------------------------------------------------

hrefs = st.lists(
    st.sampled_from(
        ["/a", "/a#x", "b", "../c", "./d", "//h:1/e", "http://h:1/a", "?q", "#f", "",
         "/%7eu", "/~u", "mailto:x@y", "/a?utm_source=z", "/A", "e/../f", " /a "]
    ),
    max_size=30,
)  # fmt: skip


settled_urls = st.lists(
    st.sampled_from(["http://h:1/a", "http://h:1/x/b", "http://h:1/c", "http://h:1/~u"]),
    max_size=3,
)


@given(st.lists(st.tuples(hrefs, settled_urls), min_size=1, max_size=6), st.integers(3, 50))
def test_link_resolver_agrees_with_resolve_less_what_is_settled(pages, capacity):
    bases = ["http://h:1/x/y.html", "http://h:1/", "http://h:1/x/"]
    strip = ("utm_*",)
    links = LinkResolver(capacity)  # small: the forgetting is exercised too
    settled: set[str] = set()
    for i, (page, newly_settled) in enumerate(pages):
        base = bases[i % len(bases)]
        expected = [t for t in (resolve(base, h, strip) for h in page) if t is not None]
        got = links.unsettled(resolve_links(base, page, strip, links.known), 1)
        unsettled = list(dict.fromkeys(t for t in expected if t not in settled))
        assert [t for t in got if t not in settled] == unsettled  # nothing lost, in order
        assert set(got) <= set(expected)  # settled ones may come back once forgotten
        links.settle(newly_settled, [0] * len(newly_settled))
        settled.update(newly_settled)


@given(st.lists(st.tuples(hrefs, settled_urls), min_size=1, max_size=6))
def test_settled_urls_never_come_back_below_capacity(pages):
    links, settled = LinkResolver(), set()
    for page, newly_settled in pages:
        base = "http://h:1/x/y.html"
        got = links.unsettled(resolve_links(base, page, ("utm_*",), links.known), 1)
        assert not set(got) & settled
        links.settle(newly_settled, [0] * len(newly_settled))
        settled.update(newly_settled)


@given(st.lists(hrefs, min_size=1, max_size=6), st.integers(3, 50))
def test_a_resolver_remembering_every_link_agrees_with_resolve(pages, capacity):
    """What a worker sending every link back answers, found among the links it remembers
    or not (forgotten at a small capacity): each page's links as resolve() makes them."""
    bases = ["http://h:1/x/y.html", "http://h:1/", "http://h:1/x/"]
    strip = ("utm_*",)
    links = LinkResolver(capacity)
    for i, page in enumerate(pages):
        base = bases[i % len(bases)]
        made = (resolve(base, href, strip) for href in page)
        expected = list(dict.fromkeys(t for t in made if t is not None))
        got = resolve_links(base, page, strip, links.known)
        assert got == expected
        links.remember(got)
        assert len(links.known) <= capacity


@pytest.mark.interpreted
def test_a_worker_sending_every_link_finds_its_next_pages_links_without_normalising(
    serve, monkeypatch
):
    """#26: with a state (Settings.all_links) a worker filters no link, but remembers each
    it sends back: the next page's links to them are found by their exact join, not
    normalised again by resolve(), and every link comes back from both pages. A real worker
    loop (pool._serve) on real pipes, a real server."""
    hrefs = '<a href="b">b</a> <a href="../c">c</a> <a href="sub/f">f</a>'
    site = Site({"/x/1": hrefs, "/x/2": hrefs})
    srv = serve(site.app)
    settings = Settings("bot/1", 1, 10.0, 8 << 20, PagePolicy("bot"), Access(), all_links=True)
    asked: list[str] = []
    real = urls_module.resolve
    monkeypatch.setattr(urls_module, "resolve", lambda b, h, s: asked.append(h) or real(b, h, s))
    errors: list[dict[str, Any]] = []
    answers: list[tuple[list[str], list[str]]] = []  # each page's links, and what it asked

    async def scenario() -> None:
        worker, jobs, results, _ = await _serving(settings, errors)
        frames = _Frames()
        for n in (1, 2):
            asked.clear()
            os.write(jobs, _frame(pack(Job(n, f"{srv.url}/x/{n}", 1, None))))
            payloads: list[bytes] = []
            while not payloads:
                await _until(lambda: _unread(results) > 0, "a result")
                payloads = frames.feed(os.read(results, 1 << 16))
            page = unpack(Result, payloads[0]).page
            assert page is not None
            answers.append((list(page.targets), list(asked)))
        os.close(jobs)
        await asyncio.wait_for(worker, 10.0)
        os.close(results)

    eventloop.run(scenario())
    links = [f"{srv.url}/x/b", f"{srv.url}/c", f"{srv.url}/x/sub/f"]
    assert answers[0] == (links, ["b", "../c", "sub/f"])  # the first page: each normalised
    assert answers[1] == (links, [])  # the next: all found, none filtered
    assert errors == []


def test_a_second_signal_stops_workers_at_once(serve, tmp_path):
    slow = START_AFTER + 50  # pages from here on answer after 30 s

    async def page(request: web.Request) -> web.Response:
        n = int(request.path.strip("/") or 0)
        if n >= slow:
            await asyncio.sleep(30)  # requests that would hold the crawl for the whole grace
        links = "".join(f'<a href="/{m}">x</a>' for m in (2 * n + 1, 2 * n + 2))
        return web.Response(text=f"<p>{n}</p>{links}", content_type="text/html")

    site = Site({"/robots.txt": Page("", 404)}, fallback=page)
    srv = serve(site.app)
    # not --quiet: the crawl's line on the first signal is the sign that it was taken
    proc = Watched(crawl_process(srv.url + "/", "-o", str(tmp_path / "out"), "--workers", "2"))

    def slow_in_flight() -> bool:
        return any(int(p.strip("/") or 0) >= slow for p in site.paths if p != "/robots.txt")

    wait_for(slow_in_flight, f"a request for page {slow} or later", proc=proc)
    workers = _children(proc.pid)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.stderr_line("SIGTERM: finishing requests in flight")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 5
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists()


def test_workers_left_by_a_killed_crawl_end_quietly(serve, tmp_path):
    """SIGKILL (the OOM killer, a container's kill) gives the crawl no time to stop its
    workers. Each finds the jobs pipe closed, ends the requests in flight, and leaves: its
    results go nowhere, and it writes nothing to the stderr it shares with the crawl. A
    result written to the closed pipe raised in every runner, and the worker printed a
    traceback a runner ("Task exception was never retrieved") into the job's log."""
    slow = START_AFTER + 200  # pages from here on answer after a second: in flight at the kill

    async def page(request: web.Request) -> web.Response:
        n = int(request.path.strip("/") or 0)
        if n >= slow:
            await asyncio.sleep(1)
        links = "".join(f'<a href="/{m}">x</a>' for m in (2 * n + 1, 2 * n + 2))
        return web.Response(text=f"<p>{n}</p>{links}", content_type="text/html")

    site = Site({"/robots.txt": Page("", 404)}, fallback=page)
    srv = serve(site.app)
    proc = crawl_process(srv.url + "/", "-o", str(tmp_path / "out"), "--workers", "2", "-q")

    def slow_in_flight() -> bool:
        return sum(int(p.strip("/") or 0) >= slow for p in site.paths if p != "/robots.txt") > 6

    wait_for(slow_in_flight, f"requests for page {slow} or later", proc=proc)
    workers = _children(proc.pid)
    assert len(workers) == 2
    proc.kill()
    _, err = proc.communicate(timeout=30)  # to the end of the pipe: the workers hold it too
    assert err == ""
    for pid in workers:
        wait_for(lambda pid=pid: _gone(pid), f"worker {pid} to end")


def _gone(pid: int) -> bool:
    """Whether pid has ended (a zombie until whoever adopted it reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_the_main_process_takes_a_share_only_beside_few_workers():
    assert [main_share(8, n) for n in (1, 2, 3, 4, 8)] == [2, 1, 0, 0, 0]
    assert main_share(32, 1) == 11
    for concurrency in range(1, 65):
        for workers in range(1, concurrency + 1):
            share = main_share(concurrency, workers)
            assert 0 <= share <= concurrency - workers  # every worker keeps a request
            if workers < concurrency:
                assert main_share(concurrency, workers + 1) <= share  # less with more workers


class _Told:
    """A worker's end as PoolPages makes it, keeping what it is told."""

    def __init__(
        self, spare: Spare, share: int, on_lost: object, on_ready: object, settled: list
    ) -> None:
        self.settled: list[tuple[str, int]] = list(settled)
        self.alive, self.lost, self.share = True, False, share

    def start(self, settings: bytes) -> None:
        pass

    def settle(self, url: str, depth: int) -> None:
        self.settled.append((url, depth))


def test_workers_started_late_are_told_the_urls_settled_before_in_order(monkeypatch):
    """Settled before the workers start, in order, a URL settled twice twice, a broken one
    as UNSETTLED (-1): each worker is handed them all, then told the later ones itself. No
    more than a worker keeps (RESOLVER_CAPACITY): the latest."""
    monkeypatch.setattr(pool, "_Worker", _Told)
    transport = HttpTransport(user_agent="a", concurrency=4, timeout=1, max_bytes=1)
    spares = [Spare(1, -1, -1), Spare(2, -1, -1)]
    fetcher = PoolPages(spares, transport, PagePolicy("a"), set_depth=lambda _: None)
    for url, depth in (("a", 0), ("b", UNSETTLED), ("a", 3)):
        fetcher.settle(url, depth)
    fetcher._start()
    fetcher.settle("c", 0)
    told = [w.settled for w in fetcher._workers]  # type: ignore[attr-defined]
    assert told == [[("a", 0), ("b", UNSETTLED), ("a", 3), ("c", 0)]] * 2

    monkeypatch.setattr(pool, "RESOLVER_CAPACITY", 3)
    fetcher = PoolPages(spares, transport, PagePolicy("a"), set_depth=lambda _: None)
    for n in range(8):  # trimmed to the latest 3 at 6, then 5 kept: the latest 3 handed
        fetcher.settle(f"u{n}", n)
    fetcher._start()
    told = [w.settled for w in fetcher._workers]  # type: ignore[attr-defined]
    assert told == [[("u5", 5), ("u6", 6), ("u7", 7)]] * 2


def test_frames_split_however_the_reads_cut_them():
    """A frame in many reads (the settled URLs handed to a worker: megabytes), several in
    one, a length cut in two: the payloads come out whole, in order."""
    payloads = [b"x" * 200_000, b"", b"ab", b"y" * 70_000]
    stream = b"".join(pool._frame(p) for p in payloads)
    for cut in (1, 3, 5, 4096, 65_536, len(stream)):
        frames, got = pool._Frames(), []
        for at in range(0, len(stream), cut):
            got += frames.feed(stream[at : at + cut])
        assert got == payloads and all(type(p) is bytes for p in got)


def test_jobs_go_to_the_worker_with_the_most_room_for_its_share():
    transport = HttpTransport(user_agent="a", concurrency=7, timeout=1, max_bytes=1)
    fetcher = PoolPages([], transport, PagePolicy("a"), set_depth=lambda _: None)
    big, small, dead = (SimpleNamespace(alive=True, share=4, pending={}),
                        SimpleNamespace(alive=True, share=3, pending={}),
                        SimpleNamespace(alive=False, share=9, pending={}))  # fmt: skip
    fetcher._workers = [small, dead, big]  # type: ignore[list-item]
    picked = []
    for job in range(14):  # twice the shares, as pipelining keeps in flight
        worker = fetcher._pick()
        worker.pending[job] = None
        picked.append(worker)
    assert picked.count(big) == 8 and picked.count(small) == 6
    big.alive = small.alive = False
    assert fetcher._pick() is None


def test_default_workers_leave_one_core_to_the_main_process(monkeypatch):
    for cores, quota, workers in [(1, None, 0), (2, None, 1), (8, None, 7), (8, 2, 1)]:
        monkeypatch.setattr(os, "sched_getaffinity", lambda _, n=cores: set(range(n)))
        monkeypatch.setattr(pool, "_cgroup_cpus", lambda q=quota: q)
        assert default_workers() == workers


def test_a_container_cpu_quota_bounds_the_default_workers(tmp_path):
    cpu_max = tmp_path / "cpu.max"
    for text, cores in [("max 100000\n", None), ("150000 100000\n", 2), ("50000 100000\n", 1)]:
        cpu_max.write_text(text)
        assert _cgroup_cpus(str(cpu_max)) == cores
    assert _cgroup_cpus(str(tmp_path / "missing")) is None


# --- found in review: each compares a pooled crawl with an in-process one -----------------------


def _both(url: str, tmp_path: Path, *args: str) -> dict[str, tuple[dict, dict]]:
    return {w: _crawl(url, tmp_path / f"w{w}", "--workers", w, *args) for w in ("0", "2")}


def test_public_url_inside_the_crawl_root_pooled_as_in_process(serve, tmp_path):
    """Crawl / published under /docs/: a link to /docs/x is the crawl URL /x, mapped once."""

    async def page(request: web.Request) -> web.Response:
        path = request.path
        if path == "/r":
            return web.Response(status=301, headers={"Location": "/docs/docs/special"})
        if path in ("/docs/special", "/special"):
            return web.Response(text=f"<p>{path}</p>", content_type="text/html")
        if not path.strip("/").isdigit() and path != "/":
            return web.Response(status=404)
        n = int(path.strip("/") or 0)
        links = [f"/docs/{m}" for m in (n + 1, n + 2) if m < GENERIC]
        links += {200: ["/docs/docs/special", "/docs/r"], 280: ["/docs/special"]}.get(n, [])
        body = "".join(f'<a href="{h}">x</a>' for h in links)
        return web.Response(text=f"<p>{n}</p>{body}", content_type="text/html")

    srv = serve(Site({"/robots.txt": Page("", 404)}, fallback=page).app)
    runs = _both(srv.url + "/", tmp_path, "--public-url", srv.url + "/docs/")
    (_, alone), (pooled_report, pooled) = runs["0"], runs["2"]
    assert pooled_report["requests"]["workers"] == 2
    assert {u: d["reason"] for u, d in pooled.items()} == {u: d["reason"] for u, d in alone.items()}
    assert pooled[f"{srv.url}/docs/docs/special"]["reason"] == "listed"
    assert pooled[f"{srv.url}/docs/special"]["reason"] == "listed"


def test_broken_link_referrers_pooled_as_in_process(serve, tmp_path):
    async def page(request: web.Request) -> web.Response:
        n = int(request.path.strip("/") or 0)
        body = f'<a href="/{n + 1}">x</a>' if n + 1 < GENERIC else ""
        if n == 250:
            body += '<a href="/gone">a</a><a href="/gone">b</a>'  # twice on one page
        return web.Response(text=f"<p>{n}</p>{body}", content_type="text/html")

    site = Site({"/robots.txt": Page("", 404), "/gone": Page("", 404)}, fallback=page)
    srv = serve(site.app)
    runs = _both(srv.url + "/", tmp_path)
    assert runs["2"][0]["requests"]["workers"] == 2
    assert runs["0"][0]["broken_links"] == runs["2"][0]["broken_links"]
    (gone,) = runs["2"][0]["broken_links"]
    assert gone["linked_from"] == [f"{srv.url}/250"]


@pytest.mark.parametrize(
    ("workers", "concurrency"),
    [(2, 4), (1, 8)],  # (1, 8): the only worker is lost; the main process takes all 8
)
def test_requests_stay_within_concurrency_when_a_worker_dies(
    serve, tmp_path, xsd, workers, concurrency
):
    tree = CountingTree(500, 0.05)
    srv = serve(tree.site.app)
    out = tmp_path / "out"
    args = ("--workers", str(workers), "--concurrency", str(concurrency))
    proc = Watched(crawl_process(srv.url + "/", "-o", str(out), *args))
    wait_for(
        lambda: len(tree.site.requests) > START_AFTER + 100,
        f"the crawl to make {START_AFTER + 100} requests",
        proc=proc,
    )
    lost = _children(proc.pid)[0]
    os.kill(lost, signal.SIGSTOP)  # so it opens no connection while its own are listed
    lost_connections = _connections_to(lost, srv.port)
    os.kill(lost, signal.SIGKILL)
    # the loss is noticed, and the requests it had in flight are over
    proc.stderr_line(f"worker process {lost} ended")
    wait_for(
        lambda: tree.over(lost_connections),
        f"the server to see the end of the lost worker's connections {sorted(lost_connections)}",
        proc=proc,
    )
    tree.mark()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert len(read_published(out, xsd).locs) == 500
    # the lost jobs go to another worker, or wait; its share of requests is not lost with it
    assert concurrency - 1 <= tree.peak <= concurrency


def test_workers_that_send_nonsense_are_stopped_and_their_pages_made_here(
    serve, tmp_path, xsd, monkeypatch, capsys
):
    """A result the main process cannot read costs the worker (killed, as its requests are
    made again elsewhere), never the crawl, and never hangs it."""
    tree = CountingTree(400, 0.002)
    srv = serve(tree.site.app)
    read = 0

    def garbled(url: str, result: Result) -> Fetched:
        nonlocal read
        read += 1
        if read > 50:
            raise IndexError("a result the crawl cannot read")
        return _fetched(url, result)

    monkeypatch.setattr(pool, "_fetched", garbled)
    out = tmp_path / "out"
    args = ["--workers", "3", "--concurrency", "8", "--log-format", "json"]  # 0 of 8 for us
    assert main(["crawl", srv.url + "/", "-o", str(out), *args]) == 0
    err = capsys.readouterr().err
    warnings = [e for e in map(json.loads, err.splitlines()) if e.get("level") == "warning"]
    lost = [e for e in warnings if e["message"].startswith("worker process")]
    assert len(lost) == 3  # all lost: their shares are ours
    assert "Traceback" not in err
    assert len(read_published(out, xsd).locs) == 400
    # no bound on tree.peak here: a killed worker's requests may still run at the server for
    # a moment after its share passes on (the other tests check the bound once that is over)


def test_max_pages_counts_redirect_hops(serve, tmp_path):
    pages: dict[str, object] = {"/robots.txt": Page("", 404)}
    pages["/"] = "".join(f'<a href="/r{k}">x</a>' for k in range(10))
    for k in range(10):
        pages[f"/r{k}"] = Page("", 301, None, {"Location": f"/p{k}"})
        pages[f"/p{k}"] = f"<p>{k}</p>"
    site = Site(pages)  # type: ignore[arg-type]
    srv = serve(site.app)
    report, decisions = _crawl(srv.url + "/", tmp_path / "out", "--max-pages", "5")
    assert len([p for p in site.paths if p != "/robots.txt"]) <= 5
    assert report["pages_fetched"] <= 5
    assert any(d["reason"] == "limit" for d in decisions.values())


def _failing_analysis(monkeypatch, suffix: str) -> None:
    """analyse() raises for the URL ending in suffix, as a bug of ours would."""
    from crawler.shell import pages as pages_module

    real = pages_module.analyse

    def analyse(url, *args, **kwargs):
        if url.endswith(suffix):
            raise RuntimeError("a bug in the analysis")
        return real(url, *args, **kwargs)

    monkeypatch.setattr(pages_module, "analyse", analyse)


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_page_the_analysis_fails_on_costs_that_page_alone_either_way(
    serve, tmp_path, xsd, monkeypatch, workers
):
    """In this process or in a worker (forked after the patch), the same decision: the page
    is a fetch_error that says why, it is asked for once (not retried), the crawl goes on."""
    _failing_analysis(monkeypatch, "/250")
    tree = CountingTree(400, 0.0)
    srv = serve(tree.site.app)
    decisions = tmp_path / "d.jsonl"
    args = ["--workers", workers, "--decisions", str(decisions), "--quiet"]
    assert main(["crawl", srv.url + "/", "-o", str(tmp_path / "o"), *args]) == 0
    d = read_decisions(decisions)[srv.url + "/250"]
    assert d["reason"] == "fetch_error" and "cannot analyse the page" in d["detail"]
    assert tree.site.paths.count("/250") == 1
    assert len(read_published(tmp_path / "o", xsd).locs) == 399


def test_an_html_parser_that_cannot_be_imported_fails_the_run_not_its_pages(monkeypatch):
    """The parser is imported at the first HTML page (crawler.core.page): a broken install
    is the run's failure, as it was at the run's start, never a fetch_error a page that
    would blame the site (nor, on a night of 304s, a sitemap without the changed pages)."""
    monkeypatch.setitem(sys.modules, "crawler.core.extract", None)  # import raises
    resp = Response("https://example.com/", 200, CIMultiDictProxy(CIMultiDict(
        {"Content-Type": "text/html"}
    )), b"<a href=/a>a</a>")  # fmt: skip
    with pytest.raises(ImportError):
        analysed(resp.url, resp, PagePolicy("a"))


def test_a_result_that_cannot_cross_the_pipe_fails_its_url_and_never_hangs(
    serve, tmp_path, xsd, monkeypatch
):
    """A worker's result that cannot be packed fails its URL alone. The pages /300 to /399
    fail so: which of them a worker makes, and which the main process makes itself (on a
    fast machine, or compiled, it goes on making pages until the workers are ready), is the
    machine's timing; the workers make some of the last hundred of 400."""
    real = pool._result

    def result(job: int, fetched: Fetched) -> bytes:
        if re.search(r"/3\d\d$", fetched.response.url) and fetched.page is not None:
            raise ValueError("unmarshallable object")
        return real(job, fetched)

    monkeypatch.setattr(pool, "_result", result)
    tree = CountingTree(400, 0.0)
    srv = serve(tree.site.app)
    decisions = tmp_path / "d.jsonl"
    args = ["--workers", "2", "--concurrency", "4", "--decisions", str(decisions), "--quiet"]
    assert main(["crawl", srv.url + "/", "-o", str(tmp_path / "o"), *args]) == 0
    made = read_decisions(decisions)
    failed = [url for url, d in made.items() if d["reason"] == "fetch_error"]
    assert failed and all(re.search(r"/3\d\d$", url) for url in failed)
    assert all("cannot send the result" in made[url]["detail"] for url in failed)


@dataclass
class _Image:
    loc: str


@dataclass
class _WithImages:
    images: list[_Image]


def test_a_collection_of_dataclasses_is_refused_when_its_shape_is_made():
    with pytest.raises(TypeError, match="collection of dataclasses"):
        pack(_WithImages([_Image("a")]))


@dataclass
class _Gallery:
    title: str
    images: tuple[_Image, ...]
    cover: _Image | None = None


def test_a_tuple_of_dataclasses_crosses_field_by_field():
    gallery = _Gallery("g", (_Image("a"), _Image("b")), _Image("c"))
    assert unpack(_Gallery, pack(gallery)) == gallery
    assert unpack(_Gallery, pack(_Gallery("empty", ()))) == _Gallery("empty", ())
    with pytest.raises(WireError):  # another shape: the tag says so
        unpack(_Image, pack(gallery))


# --- where conditional requests are made (#26): here while 304s answer, workers for pages -------


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.integers(1, 100))
def test_more_304s_never_send_conditional_requests_back_to_the_workers(not_modified, whole, more):
    if revalidate_here(not_modified, whole):
        assert revalidate_here(not_modified + more, whole)
    else:
        assert not revalidate_here(not_modified, whole + more)


def test_conditional_requests_are_made_here_once_most_are_answered_304():
    block = REVALIDATION_BLOCK
    assert revalidate_here(block, 0) and not revalidate_here(0, block)
    assert not revalidate_here(0, 0)  # nothing said yet: the workers, as for any page
    assert revalidate_here(90, 10)  # a night where a tenth changed: cheaper here
    assert not revalidate_here(75, 25) and not revalidate_here(40, 60)  # more changed


def test_the_place_of_conditional_requests_is_chosen_again_each_block():
    revalidations = pool._Revalidations()
    assert revalidations.here is None  # nothing said yet: here while no worker runs
    changes = [revalidations.answered(200) for _ in range(REVALIDATION_BLOCK)]
    assert changes == [False] * (REVALIDATION_BLOCK - 1) + [True] and not revalidations.here
    changes = [revalidations.answered(304) for _ in range(REVALIDATION_BLOCK)]
    assert changes == [False] * (REVALIDATION_BLOCK - 1) + [True] and revalidations.here
    for status in (301, 404, 503):  # neither a 304 nor a whole page: not counted
        assert not revalidations.answered(status)
    changes = [revalidations.answered(200 if i % 2 else 304) for i in range(REVALIDATION_BLOCK)]
    assert changes[-1] and sum(changes) == 1 and not revalidations.here


class ChangingTree(CountingTree):
    """CountingTree with an ETag per page that answers If-None-Match with 304, and records
    each answer's status and whether the crawl's own process (the test's) made the request
    or a worker did (whose connection it is, from /proc)."""

    def __init__(self, pages: int) -> None:
        super().__init__(pages, 0.005)
        self.versions = [0] * pages  # each page's, the night it last changed
        self.answers: list[tuple[int, bool]] = []  # (status, made by the main process)
        self._ours: dict[int, bool] = {}  # client port -> the main process's connection

    async def _page(self, request: web.Request) -> web.Response:
        n = int(request.path.strip("/") or 0)
        etag = f'"{n}-{self.versions[n]}"'
        transport = request.transport
        assert transport is not None
        port = transport.get_extra_info("peername")[1]
        if port not in self._ours:
            server = transport.get_extra_info("sockname")[1]
            self._ours[port] = port in _connections_to(os.getpid(), server)
        if request.headers.get("If-None-Match") == etag:
            self.in_flight += 1  # counted as the pages are
            self.peak = max(self.peak, self.in_flight)
            try:
                await asyncio.sleep(self.delay)
            finally:
                self.in_flight -= 1
            self.answers.append((304, self._ours[port]))
            return web.Response(status=304, headers={"ETag": etag})
        response = await super()._page(request)
        response.headers["ETag"] = etag
        self.answers.append((200, self._ours[port]))
        return response

    def night(self, changed: range) -> None:
        """The next night: the pages in `changed` get a new ETag."""
        night = max(self.versions) + 1
        for n in changed:
            self.versions[n] = night
        self.answers = []
        self.mark()


def _settled_told(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[list[tuple[str, int]]], list[str]]:
    """What the crawl's workers are told of the URLs settled: each worker's backlog as it
    starts (handed), and every URL told to a started one (told), in order."""
    handed: list[list[tuple[str, int]]] = []
    told: list[str] = []

    class Worker(pool._Worker):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            handed.append(list(args[-1]))

        def settle(self, url: str, depth: int) -> None:
            told.append(url)
            super().settle(url, depth)

    monkeypatch.setattr(pool, "_Worker", Worker)
    return handed, told


def test_304s_are_made_here_and_whole_pages_in_workers_within_concurrency(
    serve, tmp_path, xsd, monkeypatch
):
    handed, told = _settled_told(monkeypatch)
    # forked before the loop, ready at once (a night with a history spawns them once its
    # pages change, as the test below has it): where the requests are made, not how
    monkeypatch.setattr(cli, "_revalidates", lambda config, start: False)
    depths: list[int] = []  # as the pool tells the crawl loop
    set_depth = CrawlLoop.set_depth
    monkeypatch.setattr(
        CrawlLoop, "set_depth", lambda loop, depth: (depths.append(depth), set_depth(loop, depth))
    )
    tree = ChangingTree(600)
    srv = serve(tree.site.app)
    state = str(tmp_path / "state.db")
    args = ("--workers", "2", "--concurrency", "4", "--state", state)  # main_share(4, 2) == 0
    report, _ = _crawl(srv.url + "/", tmp_path / "full", *args, "--fresh")
    assert report["requests"]["by_workers"] > 300  # a first night: whole pages, in workers
    assert tree.peak <= 4
    # started at once, and handed no URL settled: with a state, a worker leaves none out
    assert handed == [[], []]
    assert depths == [2]  # and pipelined, from when both were ready to the end
    handed.clear()
    depths.clear()

    tree.night(changed=range(0))  # nothing changed: 304s only, all of them made here
    report, _ = _crawl(srv.url + "/", tmp_path / "unchanged", *args)
    # and no worker started: it would have had nothing to take (#26)
    assert report["requests"]["workers"] == 0 and report["requests"]["by_workers"] == 0
    assert len(tree.answers) == 600 and tree.answers == [(304, True)] * 600
    assert 1 <= tree.peak <= 4

    assert not handed and not depths  # none started, nothing pipelined
    tree.night(changed=range(300, 600))  # the later half changed: back to the workers
    report, _ = _crawl(srv.url + "/", tmp_path / "half", *args)
    # started late, and told no URL settled before it: with a state a worker sends every
    # link of a page back (the page's history), and leaves none out (#26)
    assert handed == [[], []]
    made_here = {status: [ours for s, ours in tree.answers if s == status] for status in (200, 304)}
    # 304s are made here; the place is chosen a block of answers at a time, and the pages
    # of one depth are asked for in the order their parents answered: the block in which
    # the changed pages' 200s come in may send the 304s still to ask for to the workers
    # (seen once, beside other test processes), never more than that block
    assert len(made_here[304]) == 300 and made_here[304].count(False) <= REVALIDATION_BLOCK
    assert all(made_here[304][: 300 - REVALIDATION_BLOCK])  # those before it: here
    assert len(made_here[200]) == 300 and made_here[200].count(False) > 150  # most in workers
    assert report["requests"]["by_workers"] == made_here[200].count(False)
    assert 1 <= tree.peak <= 4  # pipelined again, never more requests at the server

    # the earlier half changed: pipelined in the workers first, then 304s made here once
    # the jobs over --concurrency have drained
    tree.night(changed=range(300))
    report, _ = _crawl(srv.url + "/", tmp_path / "first-half", *args)
    made_here = {status: [ours for s, ours in tree.answers if s == status] for status in (200, 304)}
    assert made_here[200].count(False) > 150 and made_here[304].count(True) > 150
    assert 1 <= tree.peak <= 4
    runs = ("full", "unchanged", "half", "first-half")
    published = {tuple(read_published(tmp_path / run, xsd).locs) for run in runs}
    assert len(published) == 1 and len(next(iter(published))) == 600
    assert told == []  # on no night, early or late, was a worker told a URL settled


def _process_starts(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Spare]]:
    """The worker processes the crawl makes, by how: forked (before the loop) or spawned
    (once a crawl with a history has pages for them); each one's Spare, its exit code set
    once reaped."""
    made: dict[str, list[Spare]] = {"forked": [], "spawned": []}
    fork, spawn = pool._fork, pool._spawn

    def forked(siblings: list[Spare]) -> Spare | None:
        spare = fork(siblings)
        if spare is not None:
            made["forked"].append(spare)
        return spare

    def spawned(spare: Spare) -> None:
        spawn(spare)
        made["spawned"].append(spare)

    monkeypatch.setattr(pool, "_fork", forked)
    monkeypatch.setattr(pool, "_spawn", spawned)
    return made


def test_a_night_with_a_history_spawns_workers_only_once_its_pages_change(
    serve, tmp_path, xsd, monkeypatch
):
    """A first night forks its workers before the loop. A night with a history makes no
    process until it has whole pages to hand over (#26: a forked worker it never started
    cost an unchanged night 2% of its CPU); then they are spawned, take the pages as forked
    ones do, hold the requests to --concurrency, and leave nothing running."""
    made = _process_starts(monkeypatch)
    tree = ChangingTree(600)
    srv = serve(tree.site.app)
    args = ("--workers", "2", "--concurrency", "4", "--state", str(tmp_path / "state.db"))
    report, first = _crawl(srv.url + "/", tmp_path / "first", *args)
    assert len(made["forked"]) == 2 and not made["spawned"]
    assert report["requests"]["by_workers"] > 300

    # the first pages changed, all answered before a block of answers says where conditional
    # requests go: each counted, one short of SPAWN_AFTER
    for night, changed in (("unchanged", range(0)), ("few", range(1, SPAWN_AFTER))):
        made["forked"].clear()
        tree.night(changed=changed)
        report, _ = _crawl(srv.url + "/", tmp_path / night, *args)
        assert made == {"forked": [], "spawned": []}, night  # no process at all
        assert report["requests"]["workers"] == 0

    # SPAWN_AFTER of them: spawned, never started (under START_AFTER); they leave at the end
    tree.night(changed=range(1, SPAWN_AFTER + 1))
    report, _ = _crawl(srv.url + "/", tmp_path / "spawned", *args)
    assert len(made["spawned"]) == 2 and report["requests"]["workers"] == 0
    assert [spare.exit_code for spare in made["spawned"]] == [0, 0]
    made["spawned"].clear()

    tree.night(changed=range(300, 600))
    tree.delay = 0.02  # time for their imports: the pages they take are the next test's
    tree.mark()
    report, decisions = _crawl(srv.url + "/", tmp_path / "half", *args)
    assert not made["forked"] and len(made["spawned"]) == 2
    assert report["requests"]["workers"] == 2  # started (how many pages they took: timing)
    assert 1 <= tree.peak <= 4
    # each left when told to, and was reaped: none crashed, none killed as a laggard
    assert [spare.exit_code for spare in made["spawned"]] == [0, 0]
    assert {u: d["reason"] for u, d in decisions.items()} == {
        u: d["reason"] for u, d in first.items()
    }
    runs = ("first", "unchanged", "few", "spawned", "half")
    assert len({tuple(read_published(tmp_path / run, xsd).locs) for run in runs}) == 1


def test_workers_are_spawned_later_only_on_a_history_of_the_start_url(serve, tmp_path):
    """Read before the crawl opens its state file (read-only, never raising): a state file
    holding a history of this start URL's; no file, another file, another site's: forked."""
    tree = ChangingTree(20)
    srv = serve(tree.site.app)
    state, start = tmp_path / "state.db", srv.url + "/"
    assert not CrawlState.revalidates(state, start)
    assert not CrawlState.revalidates(tmp_path / ("x" * 300), start)  # a name too long
    state.write_bytes(b"not a state file")
    assert not CrawlState.revalidates(state, start)
    state.unlink()
    _crawl(start, tmp_path / "first", "--state", str(state))
    assert CrawlState.revalidates(state, start)
    assert not CrawlState.revalidates(state, srv.url + "/other/")
    config = Config(url=start, state=state)
    assert cli._revalidates(config, start)
    assert not cli._revalidates(dataclasses.replace(config, fresh=True), start)


def _worker_payload(spare: Spare, frames: _Frames) -> bytes:
    """The next frame a worker sends, waited for (30 s at most)."""
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, "timed out waiting for the worker"
        readable, _, _ = select.select([spare.results], [], [], 0.5)
        if readable and (got := frames.feed(os.read(spare.results, 1 << 16))):
            return got[0]


def test_a_spawned_worker_serves_jobs_as_a_forked_one_and_leaves_at_the_end(serve):
    async def page(request: web.Request) -> web.Response:
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        return web.Response(text='<a href="/b">b</a><p>a</p>', content_type="text/html")

    app = web.Application()
    app.router.add_get("/a", page)
    srv = serve(app)
    settings = Settings("bot/1", 1, 10.0, 8 << 20, PagePolicy("bot"), Access())
    frames = _Frames()
    with pool.worker_processes(1, spawn_later=True) as spares:
        (spare,) = spares
        assert spare.pid is None  # no process until the crawl has pages for it
        pool._spawn(spare)
        assert spare.pid is not None and spare.pid > 0
        os.write(spare.jobs, _frame(pack(settings)))
        assert _worker_payload(spare, frames) == b""  # ready
        os.write(spare.jobs, _frame(pack(Job(1, srv.url + "/a", 1, None))))
        fetched = _fetched(srv.url + "/a", unpack(Result, _worker_payload(spare, frames)))
        assert fetched.response.status == 200 and fetched.page is not None
        assert list(fetched.page.targets) == [srv.url + "/b"]
        validators = Validators('"v1"', None)  # a conditional request, as a changed night's
        os.write(spare.jobs, _frame(pack(Job(2, srv.url + "/a", 1, validators))))
        result = unpack(Result, _worker_payload(spare, frames))
        assert (result.job, result.status) == (2, 304)
        assert os.getsid(spare.pid) == spare.pid  # a session of its own: a Ctrl-C is ours
    assert spare.exit_code == 0  # its jobs pipe closed at the end: it left, and was reaped


def test_a_spawned_worker_runs_with_the_crawls_interpreter_options(monkeypatch):
    flags = SimpleNamespace(
        isolated=0, ignore_environment=1, no_user_site=1, no_site=0, dont_write_bytecode=1,
        bytes_warning=2, optimize=1,
    )  # fmt: skip
    monkeypatch.setattr(sys, "flags", flags)
    monkeypatch.setattr(sys, "warnoptions", ["error::ResourceWarning"])
    monkeypatch.setattr(sys, "_xoptions", {"dev": True, "importtime": True, "utf8": "1"})
    assert pool._interpreter_flags() == [
        "-E", "-s", "-B", "-b", "-b", "-O", "-Werror::ResourceWarning", "-Xdev", "-Xutf8=1"
    ]  # fmt: skip
    monkeypatch.setattr(sys, "flags", SimpleNamespace(**{**vars(flags), "isolated": 1}))
    assert pool._interpreter_flags()[0] == "-I" and "-E" not in pool._interpreter_flags()


def test_a_worker_that_cannot_import_the_crawler_says_so_in_a_line(monkeypatch, capfd):
    failing = pool._SPAWNED.replace("crawler.shell.pool import", "crawler.shell.nowhere import")
    monkeypatch.setattr(pool, "_SPAWNED", failing)
    with pool.worker_processes(1, spawn_later=True) as spares:
        pool._spawn(spares[0])
    assert spares[0].exit_code == 1
    err = capfd.readouterr().err
    assert "sitemap-crawler worker: cannot start: ModuleNotFoundError" in err
    assert "Traceback" not in err


def test_a_worker_that_cannot_be_spawned_leaves_the_pages_to_the_crawl(
    serve, tmp_path, xsd, monkeypatch, capsys
):
    tree = ChangingTree(300)
    srv = serve(tree.site.app)
    args = ("--workers", "2", "--state", str(tmp_path / "state.db"))
    _crawl(srv.url + "/", tmp_path / "first", *args)
    tree.night(changed=range(300))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    capsys.readouterr()
    code = main(["crawl", srv.url + "/", "-o", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert code == 0, err
    # one line, however many could not start
    assert err.count("warning: cannot start a worker process") == 1
    assert "the crawl goes on with 0 workers" in err and "Traceback" not in err
    assert len(read_published(tmp_path / "out", xsd).locs) == 300
    assert [status for status, _ in tree.answers] == [200] * 300


def test_workers_of_a_crawl_without_state_are_handed_then_told_the_urls_settled(
    serve, tmp_path, monkeypatch, xsd
):
    """Without a state a worker leaves out the links to settled URLs: started once the crawl
    shows it is big, it is handed the URLs settled before it, then told the later ones (the
    engine's rule, the other side of the test above)."""
    handed, told = _settled_told(monkeypatch)
    site = tree_site(START_AFTER + 300)
    srv = serve(site.app)
    out = tmp_path / "out"
    assert main(["crawl", srv.url + "/", "-o", str(out), "--workers", "1", "-q"]) == 0
    assert len(read_published(out, xsd).locs) == START_AFTER + 300
    assert len(handed) == 1 and len(handed[0]) >= START_AFTER // 2  # started late
    assert len(told) > 100  # and told as the crawl went on


async def _until(condition: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    """Poll `condition` on the running loop (the worker's coroutines go on meanwhile)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def _serving(
    settings: Settings, errors: list[dict[str, Any]]
) -> tuple[asyncio.Task[None], int, int, int]:
    """A real worker loop (pool._serve) on real pipes, ready: its task, the crawl's ends of
    the jobs and results pipes, and the worker's end of the jobs pipe. The loop's reports
    (a task's exception never retrieved) go to `errors`."""
    asyncio.get_running_loop().set_exception_handler(lambda _, context: errors.append(context))
    jobs_read, jobs = os.pipe()
    results, results_write = os.pipe()
    worker = asyncio.create_task(pool._serve(settings, jobs_read, results_write))
    await _until(lambda: _unread(results) == 4, "the worker's ready frame")
    os.read(results, 4)
    return worker, jobs, results, jobs_read


def _unread(fd: int) -> int:
    """Bytes waiting in a pipe, unread."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def test_a_runner_whose_crawl_is_gone_ends_and_the_jobs_waiting_are_not_asked_for(serve):
    """A worker's runner whose result cannot be written (the crawl's end of the results
    pipe closed while the result waits in the pipe's buffer: drain raises) ends, its place
    given back (run's finally), and quietly: an exception of a runner's was reported as
    never retrieved, a traceback in the job's log. The jobs left waiting for it, at a share
    of one, are not asked for: nobody would read their results. The worker ends when the
    jobs pipe closes, rather than waiting for good. A real worker loop (pool._serve) on
    real pipes, a real server."""
    links = "".join(f'<a href="/l/{i:05d}/{"x" * 60}">x</a>' for i in range(8_000))
    site = Site({"/big": links, "/a": "<p>a</p>", "/b": "<p>b</p>"})
    srv = serve(site.app)
    settings = Settings("bot/1", 1, 10.0, 8 << 20, PagePolicy("bot"), Access())

    errors: list[dict[str, Any]] = []

    async def scenario() -> None:
        worker, jobs, results, jobs_read = await _serving(settings, errors)
        os.write(jobs, _frame(pack(Job(1, srv.url + "/big", 1, None))))
        # its result (about 600 KB) fills the pipe, the rest waits in the transport's buffer:
        # the runner awaits drain, holding the only place
        await _until(lambda: _unread(results) >= 4096 * 16, "the big result in the pipe")
        os.write(
            jobs,
            b"".join(_frame(pack(Job(n, srv.url + p, 1, None))) for n, p in ((2, "/a"), (3, "/b"))),
        )
        await _until(lambda: _unread(jobs_read) == 0, "the jobs read")
        await asyncio.sleep(0.2)  # read, and left waiting: no place is free
        assert site.paths == ["/big"]
        os.close(results)  # the crawl is gone: the write fails, drain raises in the runner
        os.close(jobs)  # and so is its end of the jobs pipe: the worker ends
        await asyncio.wait_for(worker, 10.0)
        gc.collect()  # a task's exception never retrieved is reported as the task goes

    eventloop.run(scenario())
    assert site.paths == ["/big"]
    assert errors == []


def test_a_worker_whose_runner_fails_leaves_with_the_reason(serve, monkeypatch):
    """A bug of ours that escapes a runner (here: no result of its job can be made at all)
    leaves that job unanswered, and the crawl waits for every job it sent. So the worker
    reads no more jobs, starts none of those waiting, finishes the requests in flight and
    leaves, raising the bug (which _worker_main says in one line): the crawl then asks its
    URLs again, as for a worker that dies. Not left to the loop to report as a task's
    exception never retrieved, a traceback. A real worker loop (pool._serve) on real pipes,
    a real server, a share of one."""

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.3)  # the jobs after it are read while it is fetched
        return web.Response(text="<p>slow</p>", content_type="text/html")

    site = Site({"/a": "<p>a</p>", "/b": "<p>b</p>"}, fallback=slow)
    srv = serve(site.app)
    settings = Settings("bot/1", 1, 10.0, 8 << 20, PagePolicy("bot"), Access())
    made = pool._result

    def result(job: int, fetched: Any) -> bytes:
        if job == 1:
            raise RuntimeError("a bug")
        return made(job, fetched)

    monkeypatch.setattr(pool, "_result", result)
    errors: list[dict[str, Any]] = []

    async def scenario() -> bytes:
        worker, jobs, results, _ = await _serving(settings, errors)
        os.write(
            jobs,
            b"".join(
                _frame(pack(Job(n, srv.url + p, 1, None)))
                for n, p in ((1, "/slow"), (2, "/a"), (3, "/b"))
            ),
        )
        with pytest.raises(RuntimeError, match="a bug"):  # without the jobs pipe closed
            await asyncio.wait_for(worker, 10.0)
        with pytest.raises(BrokenPipeError):  # it reads no more jobs: its end is closed
            os.write(jobs, _frame(pack(Job(4, srv.url + "/a", 1, None))))
        sent = os.read(results, 1 << 16) if _unread(results) else b""
        os.close(jobs)
        os.close(results)
        gc.collect()
        return sent

    assert eventloop.run(scenario()) == b""  # no answer, nor a result half written
    assert site.paths == ["/slow"]
    assert errors == []


def test_a_crawl_asks_again_the_urls_of_a_worker_that_failed(
    serve, tmp_path, monkeypatch, xsd, capfd
):
    """End to end: a worker whose runner fails leaves with one line, and the crawl asks its
    URLs again itself: the sitemap holds every page, and nothing is a traceback."""
    site = tree_site(START_AFTER + 300)
    srv = serve(site.app)
    made, crawl = pool._result, os.getpid()
    failing: list[int] = []  # in a worker, its own (forked) copy

    def result(job: int, fetched: Any) -> bytes:
        """No result at all, its fallbacks' neither, for a worker's first job."""
        if os.getpid() != crawl and failing in ([], [job]):
            failing[:] = [job]
            raise RuntimeError("a bug")
        return made(job, fetched)

    monkeypatch.setattr(pool, "_result", result)
    out = tmp_path / "out"
    code = main(["crawl", srv.url + "/", "-o", str(out), "--workers", "1", "-q"])
    assert code == 0
    assert len(read_published(out, xsd).locs) == START_AFTER + 300
    err = capfd.readouterr().err
    assert "sitemap-crawler worker: RuntimeError: a bug" in err
    assert "Traceback" not in err and "never retrieved" not in err


def test_a_worker_that_closed_its_jobs_pipe_is_handed_no_more_pages(monkeypatch):
    """A worker leaving on its own (a runner of its ended by a bug) closes its end of the
    jobs pipe at once, and its results pipe only once its requests in flight are answered,
    up to --timeout later. Once the loop sees the jobs pipe closed (at once, or at a write
    in the air) it is not picked, and a job written to it is asked again (WorkerLost) when
    its results pipe closes. Real pipes; the worker's side played here."""
    lost: list[object] = []
    killed: list[object] = []  # no process is: the pid below is none
    monkeypatch.setattr(pool._Worker, "_signal_kill", killed.append)

    async def scenario() -> None:
        jobs_read, jobs_write = os.pipe()
        results_read, results_write = os.pipe()
        worker = pool._Worker(Spare(-1, jobs_write, results_read), 1, lost.append, lambda: None, [])
        worker.start(b"settings")
        os.write(results_write, _frame(b""))  # ready
        await _until(lambda: worker.alive, "the worker ready")
        os.close(jobs_read)  # leaving: its end of the jobs pipe closed first
        job = asyncio.ensure_future(worker.fetch("http://127.0.0.1:9/a", 1, None))
        await _until(lambda: not worker.alive and worker.leaving, "the closed end seen")
        await asyncio.sleep(0.05)
        assert not job.done() and not worker.lost  # its requests in flight still answer
        os.close(results_write)  # it has left
        with pytest.raises(pool.WorkerLost):
            await asyncio.wait_for(job, 10.0)
        assert worker.lost

    eventloop.run(scenario())
    assert len(lost) == 1 and killed == []  # it left: not killed


def test_pages_made_here_while_a_worker_leaves_wait_for_this_process_share(monkeypatch):
    """A worker leaving (its jobs pipe closed, its requests in flight still its share) is
    handed no page: the pages are made here, within this process's share, as when every
    worker is lost, not beside it (then up to --concurrency more requests at the server)."""
    transport = HttpTransport(user_agent="a", concurrency=4, timeout=1, max_bytes=1)
    fetcher = PoolPages([Spare(-1, -1, -1)], transport, PagePolicy("a"), set_depth=lambda _: None)
    leaving = SimpleNamespace(alive=False, leaving=True, lost=False, pending={}, share=3)
    fetcher._workers = [leaving]  # type: ignore[list-item]
    fetcher._here = pool.Slots(1)
    in_flight, most = 0, 0

    async def made_here(self: object, url: str, validators: object = None) -> Response:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return Response(url, 200)

    monkeypatch.setattr(pool.LocalPages, "response", made_here)  # the request of a page made here

    async def scenario() -> None:
        await asyncio.gather(*(fetcher.fetch(f"http://127.0.0.1:9/{n}") for n in range(6)))

    eventloop.run(scenario())
    assert most == 1
