"""A failed or failing crawl never replaces a good sitemap (issue #11): the publish guard
(max_shrink, max_error_rate, --force), the outage cap on backing off, the exit codes of
runtime failures, and what an unreachable site is told."""

from __future__ import annotations

import json
import resource
import signal
import socket
import subprocess
import time
from pathlib import Path

from aiohttp import web

from crawler.cli import main
from tests.procs import CLI, child_env
from tests.sites import Page, Site, html, read_published


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


class Switchable:
    """A 31-page site whose pages (all but the home page) can be made to answer `status`."""

    def __init__(self) -> None:
        self.status = 200
        self.paths = [f"/p{i}" for i in range(30)]
        self.requests: list[str] = []
        self.app = web.Application()
        self.app.router.add_get("/{tail:.*}", self._handle)

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(status=404)
        if request.path == "/":
            return web.Response(text=html(*self.paths), content_type="text/html")
        if self.status != 200:
            return web.Response(status=self.status, text="down")
        return web.Response(text=f"<p>{request.path}</p>", content_type="text/html")


def _crawl(url: str, out: Path, *args: str) -> int:
    return main(["crawl", url, "-o", str(out), "--quiet", "--retries", "0", *args])


def test_a_sitemap_that_would_shrink_too_much_is_not_published(serve, tmp_path, xsd, capsys):
    site = Switchable()
    srv = serve(site.app)
    out, report = tmp_path / "out", tmp_path / "r.json"
    assert _crawl(srv.url + "/", out) == 0
    assert len(read_published(out, xsd).locs) == 31
    before = _files(out)
    capsys.readouterr()

    site.status = 404  # 30 pages gone: a broken deploy, not a smaller site
    assert _crawl(srv.url + "/", out, "--report", str(report)) == 4
    line = _one_line(capsys.readouterr().err)
    assert "not published" in line and "1 URLs" in line and "31" in line
    assert "max_shrink" in line and "--force" in line
    assert _files(out) == before
    assert json.loads(report.read_text())["published"] is False

    assert _crawl(srv.url + "/", out, "--max-shrink", "0.99") == 0  # 97% fewer is allowed
    assert len(read_published(out, xsd).locs) == 1


def test_a_published_sitemap_that_cannot_be_read_back_is_said_to_skip_max_shrink(
    serve, tmp_path, xsd, capsys
):
    site = Switchable()
    srv = serve(site.app)
    out = tmp_path / "out"
    assert _crawl(srv.url + "/", out) == 0
    (out / "sitemap.xml").write_text("<urlset", encoding="utf-8")  # damaged by hand
    capsys.readouterr()

    site.status = 404  # would shrink 31 -> 1, but there is nothing to compare with
    assert main(["crawl", srv.url + "/", "-o", str(out), "--retries", "0"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "max_shrink" in line]
    assert len(warned) == 1 and "not checked" in warned[0] and "read back" in warned[0]
    assert read_published(out, xsd).locs == [srv.url + "/"]


def test_force_publishes_what_the_guard_refuses(serve, tmp_path, xsd):
    site = Switchable()
    srv = serve(site.app)
    out = tmp_path / "out"
    assert _crawl(srv.url + "/", out) == 0
    site.status = 404
    assert _crawl(srv.url + "/", out, "--force") == 0
    assert read_published(out, xsd).locs == [srv.url + "/"]


def test_too_many_failed_requests_are_not_published(serve, tmp_path, xsd, capsys):
    site = Switchable()
    srv = serve(site.app)
    out = tmp_path / "out"
    assert _crawl(srv.url + "/", out) == 0
    before = _files(out)
    site.paths += ["/e1", "/e2", "/e3", "/e4"]
    capsys.readouterr()
    site.status = 500  # no slow-down for 500s: the guard, not the outage cap, stops this
    assert _crawl(srv.url + "/", out, "--max-shrink", "1") == 4
    line = _one_line(capsys.readouterr().err)
    assert "34 of 35 requests failed" in line and "max_error_rate" in line
    assert _files(out) == before
    assert _crawl(srv.url + "/", out, "--max-error-rate", "1", "--max-shrink", "1") == 0


def test_a_site_that_goes_down_stops_the_crawl_within_bounds(serve, tmp_path, capsys):
    """Every page but the home page answers 503: the adaptive slow-down reaches its slowest
    rate and, after OUTAGE_AFTER failures there, the crawl stops instead of backing off for
    hours; nothing is published."""
    site = Switchable()
    site.paths = [f"/p{i}" for i in range(300)]
    site.status = 503
    srv = serve(site.app)
    out = tmp_path / "out"
    started = time.monotonic()
    assert _crawl(srv.url + "/", out, "--max-crawl-delay", "0") == 4
    assert time.monotonic() - started < 30
    line = _one_line(capsys.readouterr().err)
    assert "site looks down" in line and "nothing written" in line  # there was none to keep
    assert "previous sitemap" not in line
    assert len(site.requests) < 60
    assert not (out / "sitemap.xml").exists()


def test_an_unreachable_site_is_said_to_be_unreachable(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: connections are refused
    assert _crawl(f"http://127.0.0.1:{port}/", tmp_path / "out") == 3
    line = _one_line(capsys.readouterr().err)
    assert "could not be reached" in line and "robots.txt fetch failed" in line
    assert "cannot connect: connection refused" in line
    assert "forbids" not in line


def test_a_robots_txt_answering_503_is_said_so(serve, tmp_path, capsys):
    srv = serve(Site({"/robots.txt": Page("busy", status=503), "/": html()}).app)
    assert _crawl(srv.url + "/", tmp_path / "out") == 3
    line = _one_line(capsys.readouterr().err)
    assert "robots.txt could not be read" in line and "HTTP 503" in line


# -- runtime failures: exit 5 -----------------------------------------------------------------


def _limited(limit: int) -> None:
    """In the child: files may not grow past `limit` bytes; a write past it fails with EFBIG
    (SIGXFSZ ignored) as on a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_state_file_that_cannot_be_written_exits_5(serve, tmp_path, xsd):
    """A real SQLite write failure: the crawl's files may not grow past 96 KiB (as on a full
    disk), the state file is the first to need more, the crawl stops with exit 5 and one
    line, and the published sitemap is untouched."""

    async def page(request: web.Request) -> web.Response:
        n = int(request.path.strip("/") or 0)
        links = "".join(f'<a href="/{m}">x</a>' for m in range(10 * n + 1, 10 * n + 11))
        headers = {"X-Robots-Tag": "noindex"} if n else {}  # few listings: the state grows
        return web.Response(text=links, content_type="text/html", headers=headers)

    srv = serve(Site({"/robots.txt": Page("", status=404)}, fallback=page).app)
    out = tmp_path / "out"
    out.mkdir()
    (out / "sitemap.xml").write_bytes(b"<previously published/>")
    child = subprocess.run(
        [*CLI, "crawl", srv.url + "/", "-o", str(out),
         "--state", str(tmp_path / "s.sqlite"), "--quiet", "--max-pages", "3000"],
        capture_output=True, text=True, timeout=120, preexec_fn=lambda: _limited(96 * 1024),
        env=child_env(),
    )  # fmt: skip
    assert child.returncode == 5, child.stderr
    line = _one_line(child.stderr)
    assert "cannot write state file" in line
    assert _files(out) == {"sitemap.xml": b"<previously published/>"}


def test_a_decisions_file_that_cannot_be_written_exits_5_naming_it(serve, tmp_path):
    async def page(request: web.Request) -> web.Response:
        n = int(request.path.strip("/") or 0)
        links = "".join(f'<a href="/{m}">x</a>' for m in range(10 * n + 1, 10 * n + 11))
        headers = {"X-Robots-Tag": "noindex"} if n else {}  # few listings, many decisions
        return web.Response(text=links, content_type="text/html", headers=headers)

    srv = serve(Site({"/robots.txt": Page("", status=404)}, fallback=page).app)
    out, decisions = tmp_path / "out", tmp_path / "d.jsonl"
    child = subprocess.run(
        [*CLI, "crawl", srv.url + "/", "-o", str(out),
         "--decisions", str(decisions), "--quiet", "--max-pages", "3000"],
        capture_output=True, text=True, timeout=120, preexec_fn=lambda: _limited(64 * 1024),
        env=child_env(),
    )  # fmt: skip
    assert child.returncode == 5, child.stderr
    line = _one_line(child.stderr)
    assert f"cannot write the decisions file {decisions}" in line
    assert not (out / "sitemap.xml").exists()


def test_a_report_that_cannot_be_written_after_publishing_exits_5(serve, tmp_path, xsd, capsys):
    """The report's folder passes the check before the first request, then becomes a file
    while the crawl runs (a lost mount, say): the sitemap is published, the report is not."""
    folder = tmp_path / "reports"
    folder.mkdir()

    async def home(request: web.Request) -> web.Response:
        folder.rmdir()
        folder.write_text("not a folder")
        return web.Response(text=html(), content_type="text/html")

    srv = serve(Site({"/": home}).app)
    out = tmp_path / "out"
    assert _crawl(srv.url + "/", out, "--report", str(folder / "r.json")) == 5
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("sitemap-crawler: published 1 URL to") and "cannot write report" in line
    assert read_published(out, xsd).locs == [srv.url + "/"]


# -- the nightly job and the guard ---------------------------------------------------------


def _job(data: Path, url: str) -> subprocess.CompletedProcess[str]:
    env = child_env(SITEMAP_CRAWLER_URL=url, SITEMAP_CRAWLER_RETRIES="0")
    return subprocess.run(
        [*CLI, "job", "--data", str(data)], env=env, capture_output=True, text=True, timeout=60
    )


def test_the_job_keeps_the_sitemap_a_refused_crawl_would_shrink_and_starts_afresh_next(
    serve, tmp_path, xsd
):
    site = Switchable()
    srv = serve(site.app)
    data = tmp_path / "data"
    assert _job(data, srv.url + "/").returncode == 0
    before = _files(data / "out")
    assert len(read_published(data / "out", xsd).locs) == 31

    site.status = 404  # a broken deploy: refused, the published sitemap stays
    job = _job(data, srv.url + "/")
    assert job.returncode == 4, job.stderr
    assert "not published" in job.stderr
    assert _files(data / "out") == before

    site.status = 200  # a refused crawl is over: the next night crawls afresh, not resumes
    job = _job(data, srv.url + "/")
    assert job.returncode == 0, job.stderr
    assert "job: crawling" in job.stderr and "resuming" not in job.stderr
    assert len(read_published(data / "out", xsd).locs) == 31
