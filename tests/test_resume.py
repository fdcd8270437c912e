"""Stop, crash, resume (issue #5): a crawl stopped by SIGTERM or killed by SIGKILL and then
resumed from its state file publishes the same sitemap as an uninterrupted crawl (the same
bytes, #17), without refetching what it had already fetched, and the previously published
sitemap survives."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import signal
import sqlite3
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli import main
from tests.procs import wait_for
from tests.sites import (
    Page,
    Site,
    crawl_process,
    html,
    read_decisions,
    read_published,
    tree_site,
)

PAGES = 3000


def _site() -> Site:
    return tree_site(PAGES, 0.002, lastmod=True)


def _crawl_args(url: str, out: Path, state: Path) -> list[str]:
    return [
        "crawl",
        url + "/",
        "-o",
        str(out),
        "--state",
        str(state),
        "--concurrency",
        "4",
        "--max-urls-per-file",
        "700",  # several parts: each holds the same URLs after a resume
        "--quiet",
    ]


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}


def _site_files(out: Path, origin: str) -> dict[str, bytes]:
    """The published files, with the test server's origin (its port) taken out."""
    return {name: data.replace(origin.encode(), b"ORIGIN") for name, data in _files(out).items()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, xsd):
    """An uninterrupted crawl of the same site: the URL set and lastmods to match, and the
    published files (the origin taken out)."""
    from tests.conftest import LiveServer

    server = LiveServer(_site().app).start()
    try:
        tmp = tmp_path_factory.mktemp("reference")
        assert main(_crawl_args(server.url, tmp / "out", tmp / "state.sqlite")) == 0
        published = read_published(tmp / "out", xsd)
    finally:
        server.stop()
    base = server.url
    lastmods = {loc.replace(base, ""): lastmod for loc, lastmod in published.lastmods.items()}
    return lastmods, _site_files(tmp / "out", base)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_interrupted_crawl_resumes_to_the_same_sitemap(serve, tmp_path, xsd, reference, sig):
    site = _site()
    srv = serve(site.app)
    out, state = tmp_path / "out", tmp_path / "state.sqlite"
    out.mkdir()
    (out / "sitemap.xml").write_bytes(b"<previously published/>")
    before = _files(out)

    proc = crawl_process(*_crawl_args(srv.url, out, state)[1:])
    wait_for(  # killed, after a checkpoint: the resume goes on from it
        lambda: (
            len(site.requests) >= PAGES // 2
            and (sig == signal.SIGTERM or _rows(state, "listings") > 0)
        ),
        f"the crawl to make {PAGES // 2} requests",
        proc=proc,
    )
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == (130 if sig == signal.SIGTERM else -signal.SIGKILL), err
    assert _files(out) == before, "the interrupted run touched the published sitemap"
    fetched_first = collections.Counter(site.paths)
    assert PAGES // 3 < sum(fetched_first.values()) < PAGES
    asked = sum(n for path, n in fetched_first.items() if path != "/robots.txt")
    saved = _rows(state, "listings") + _rows(state, "decisions")  # pages judged, kept

    code = main([*_crawl_args(srv.url, out, state), "--resume"])
    assert code == 0
    published = read_published(out, xsd)
    got = {loc.replace(srv.url, ""): lastmod for loc, lastmod in published.lastmods.items()}
    assert got == reference[0]
    assert len(published.locs) == PAGES
    assert _site_files(out, srv.url) == reference[1]

    counts = collections.Counter(path for path in site.paths if path != "/robots.txt")
    refetched = sum(n - 1 for n in counts.values() if n > 1)
    if sig == signal.SIGTERM:
        assert refetched == 0, "a gracefully stopped crawl refetched pages"
    else:
        # only the pages not yet checkpointed (at most 2 s of work) are asked for again
        assert saved > 0 and refetched <= asked - saved


def test_a_crawl_killed_before_its_first_checkpoint_resumes_from_the_start(
    serve, tmp_path, xsd, reference
):
    """Killed while robots.txt is read, the crawl saved its run and nothing of it: a resume
    crawls the site as a new crawl would, where it listed nothing."""
    site = _site()

    async def never(request: web.Request) -> web.Response:
        await asyncio.sleep(60)
        return web.Response(status=404)

    site.pages["/robots.txt"] = never
    srv = serve(site.app)
    out, state = tmp_path / "out", tmp_path / "state.sqlite"
    proc = crawl_process(*_crawl_args(srv.url, out, state)[1:])
    wait_for(lambda: site.paths == ["/robots.txt"], "the request for robots.txt", proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert state.exists() and _rows(state, "urls") == 0  # the run began; nothing was saved

    site.pages["/robots.txt"] = Page("", 404)
    assert main([*_crawl_args(srv.url, out, state), "--resume"]) == 0
    published = read_published(out, xsd)
    assert len(published.locs) == PAGES
    assert _site_files(out, srv.url) == reference[1]


def test_resume_refuses_another_start_url_or_config(serve, tmp_path, capsys):
    site = Site({"/": html("/docs/", "/err"), "/docs/": "<p>docs</p>", "/err": Page("", 500)})
    srv = serve(site.app)
    state = tmp_path / "s.sqlite"

    def crawl(start: str, *extra: str) -> int:
        code = main(
            ["crawl", srv.url + start, "-o", str(tmp_path / "o"), "--state", str(state), *extra]
        )
        return code

    # refused by the publish guard: the crawl is saved, unfinished, and may be resumed
    assert crawl("/", "--retries", "0") == 4
    assert "max_error_rate" in capsys.readouterr().err
    assert crawl("/docs/", "--resume") == 2
    assert "is for a crawl of" in capsys.readouterr().err
    assert crawl("/", "--resume", "--max-depth", "1") == 2
    err = capsys.readouterr().err
    assert "--resume refused" in err and "max_depth=-1; now max_depth=1 " in err
    # settings that do not change the result may differ; nothing is fetched again
    fetched = len(site.requests)
    assert crawl("/", "--resume", "--concurrency", "2", "--gzip", "--force") == 0
    assert len(site.requests) == fetched + 1  # robots.txt
    capsys.readouterr()
    # a finished crawl is not resumed: it was published
    assert crawl("/", "--resume") == 2
    err = capsys.readouterr().err
    assert "finished" in err and "without --resume" in err and err.count("\n") == 1
    assert len(site.requests) == fetched + 1


def test_a_refused_resume_leaves_the_decisions_file_alone(serve, tmp_path, capsys):
    """The decisions file is opened at the first decision: a --resume refused before any
    (exit 2, nothing fetched) leaves the last run's file byte for byte."""
    site = Site({"/": html("/a"), "/a": html()})
    srv = serve(site.app)
    state, decisions = tmp_path / "s.sqlite", tmp_path / "d.jsonl"
    args = ["crawl", srv.url + "/", "-o", str(tmp_path / "o"), "-q", "--state", str(state)]
    assert main([*args, "--decisions", str(decisions)]) == 0
    before = decisions.read_bytes()
    assert before.count(b"\n") == 2
    fetched = len(site.requests)
    # a finished crawl, then another config: each refused before anything is decided
    for extra in ([], ["--max-depth", "1"]):
        assert main([*args, "--resume", "--decisions", str(decisions), *extra]) == 2
        assert "resume" in capsys.readouterr().err
        assert decisions.read_bytes() == before
    assert len(site.requests) == fetched


def test_a_resume_refuses_a_listing_the_sitemap_cannot_hold(serve, tmp_path, capsys):
    """#26: the publish checks only a listing's lastmod (Listing.dated), trusting what was
    checked when it was listed; a listing read back from the state file is checked when
    replayed, so a damaged one stops the resume with one line (exit 2), never a traceback
    nor a sitemap the schema refuses."""
    site = Site({"/": html("/docs/", "/err"), "/docs/": "<p>docs</p>", "/err": Page("", 500)})
    srv = serve(site.app)
    state = tmp_path / "s.sqlite"
    args = ["crawl", srv.url + "/", "-o", str(tmp_path / "o"), "-q", "--state", str(state)]
    assert main([*args, "--retries", "0"]) == 4  # refused by the publish guard: resumable
    capsys.readouterr()
    with contextlib.closing(sqlite3.connect(state)) as conn, conn:
        assert conn.execute("UPDATE listings SET loc = 'http://a b/page'").rowcount == 2
    assert main([*args, "--resume"]) == 2
    err = capsys.readouterr().err
    assert "holds a listing the sitemap cannot hold" in err and "http://a b/page" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "o" / "sitemap.xml").exists()


def test_resume_needs_state(capsys):
    assert main(["crawl", "http://127.0.0.1:1/", "--resume"]) == 2
    assert "--state" in capsys.readouterr().err


def test_a_resumed_max_pages_crawl_fetches_exactly_max_pages(serve, tmp_path):
    """The state's "fetched" counter counts only requests whose outcome it holds, so a
    resumed --max-pages crawl makes up what the killed one lost, no more, no less."""
    site = tree_site(PAGES, 0.01, lastmod=True)  # 400 pages/s at most: the 2 s checkpoint
    srv = serve(site.app)  # comes halfway, before the 1,200th page
    out, state, decisions = tmp_path / "out", tmp_path / "state.sqlite", tmp_path / "d.jsonl"
    args = [*_crawl_args(srv.url, out, state)[1:], "--max-pages", "1200"]
    proc = crawl_process(*args)
    wait_for(  # and a checkpoint made: the resume goes on from it
        lambda: len(site.requests) >= 500 and _rows(state, "listings") > 0,
        "500 requests and a checkpoint",
        proc=proc,
    )
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert sum(path != "/robots.txt" for path in site.paths) < 1200  # killed mid-way
    assert main(["crawl", *args, "--resume", "--decisions", str(decisions)]) == 0
    fetched = [d for d in read_decisions(decisions).values() if d["status"] is not None]
    assert len(fetched) == 1200


def _rows(state: Path, table: str) -> int:
    try:
        with contextlib.closing(sqlite3.connect(state)) as conn:
            return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except sqlite3.Error:
        return 0


def _referrers(state: Path) -> int:
    return _rows(state, "referrers")


def _linking_site() -> Site:
    """Pages /0../39 (a binary tree), each after 0.1 s, every one linking to /broken (404)."""

    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(0.1)
        n = int(request.path.strip("/") or 0)
        links = "".join(f'<a href="/{m}">{m}</a>' for m in (2 * n + 1, 2 * n + 2) if m < 40)
        return web.Response(text=f'{links}<a href="/broken">x</a>', content_type="text/html")

    return Site({"/robots.txt": Page("", 404), "/broken": Page("", 404)}, fallback=page)


def _broken(report: Path) -> list[tuple[str, list[str]]]:
    return [(b["url"], b["linked_from"]) for b in json.loads(report.read_text())["broken_links"]]


def test_a_resumed_night_with_a_history_names_pages_linking_to_a_broken_url(serve, tmp_path):
    """#26: on a night with a history the pages that linked to a URL while it waited are
    read back at the end (crawler.shell.referrers) from the order pages were followed in,
    which each checkpoint saves (crawler.shell.state_follows): a night killed and resumed
    names the same pages as an uninterrupted one."""
    srv = serve(_linking_site().app)
    out, state, report = tmp_path / "out", tmp_path / "state.sqlite", tmp_path / "r.json"
    args = [*_crawl_args(srv.url, out, state)[1:], "--concurrency", "1", "--report", str(report)]
    assert main(["crawl", *args]) == 0  # the history
    assert main(["crawl", *args]) == 0
    ((url, whole),) = _broken(report)
    proc = crawl_process(*args)

    def started() -> bool:  # this night's, not the last one's (a finished file)
        try:
            with contextlib.closing(sqlite3.connect(state)) as conn:
                done = conn.execute("SELECT value FROM meta WHERE key = 'finished'").fetchone()
        except sqlite3.Error:
            return False
        return (done is None or not int(done[0])) and _rows(state, "listings") >= 3

    wait_for(started, "3 listings of the night checkpointed", proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert main(["crawl", *args, "--resume"]) == 0
    ((again, resumed),) = _broken(report)
    assert again == url == srv.url + "/broken"
    assert resumed == whole and len(whole) == 10


def test_pages_linking_to_a_broken_url_survive_a_resume(serve, tmp_path):
    """Every page links to /broken (404); the crawl is killed after a few of them were
    noted and resumed: the report names the same linking pages as an uninterrupted crawl."""

    def broken_links(report: Path, origin: str) -> list[tuple[str, list[str]]]:
        found = json.loads(report.read_text())["broken_links"]
        strip = lambda url: url.removeprefix(origin)  # noqa: E731
        return [(strip(b["url"]), [strip(u) for u in b["linked_from"]]) for b in found]

    def args(srv, name: str) -> list[str]:
        out, state = tmp_path / name, tmp_path / f"{name}.sqlite"
        return [*_crawl_args(srv.url, out, state)[1:], "--concurrency", "1"]

    srv = serve(_linking_site().app)
    report = tmp_path / "whole.json"
    assert main(["crawl", *args(srv, "whole"), "--report", str(report)]) == 0
    expected = broken_links(report, srv.url)
    assert expected[0][0] == "/broken" and len(expected[0][1]) == 10

    srv = serve(_linking_site().app)
    proc = crawl_process(*args(srv, "cut"))
    state = tmp_path / "cut.sqlite"
    wait_for(lambda: _referrers(state) >= 3, "3 referrers checkpointed", proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    report = tmp_path / "cut.json"
    assert main(["crawl", *args(srv, "cut"), "--resume", "--report", str(report)]) == 0
    assert broken_links(report, srv.url) == expected


def test_sigterm_while_robots_txt_never_answers_stops_within_the_grace(serve, tmp_path):
    """The stop grace cuts what runs before the workers too: a robots.txt that never
    answers would otherwise hold a SIGTERM for its retries' whole timeouts (3 x 30 s),
    longer than a container's stop timeout (#13)."""
    import signal
    import subprocess

    from aiohttp import web

    from crawler.shell.engine import STOP_GRACE_SECONDS

    asked: list[str] = []

    async def hang(request: web.Request) -> web.Response:
        asked.append(request.path)
        await asyncio.sleep(3600)
        return web.Response()

    app = web.Application()
    app.router.add_get("/{tail:.*}", hang)
    srv = serve(app)
    out, state = tmp_path / "out", tmp_path / "s.sqlite"
    proc = crawl_process(srv.url + "/", "-o", str(out), "--state", str(state), "--timeout", "30")
    wait_for(lambda: asked, "the robots.txt request", proc=proc)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_SECONDS + 15)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("SIGTERM was not honoured within the stop grace") from None
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 130, err
    assert "stopped by SIGTERM" in err
    assert asked == ["/robots.txt"]
    assert not (out / "sitemap.xml").exists()


def test_a_resumed_crawl_keeps_issue_24_s_state(serve, tmp_path, capsys):
    """#24's figures survive a resume (review #5): a copy of a site (its pages canonicalised
    to the live one) is refused by the publish guard with the same counts, the URLs only
    nofollow links lead to get their decision, and canonical_broken is the same, as after
    a crawl never stopped."""
    live = "https://www.example.com"

    def make_site() -> Site:
        async def page(request: web.Request) -> web.Response:
            await asyncio.sleep(0.15)
            n = int(request.path.strip("/") or 0)
            links = "".join(f'<a href="/{m}">{m}</a>' for m in (2 * n + 1, 2 * n + 2) if m < 40)
            first = '<a href="/gone">g</a><a href="/cb">c</a>' if n == 0 else ""
            body = (
                f'<html><head><link rel="canonical" href="{live}/{n}"></head><body>{first}'
                f'{links}<a rel="nofollow" href="/nf{n}">nf</a></body></html>'
            )
            return web.Response(text=body, content_type="text/html")

        cb = html(head='<link rel="canonical" href="/gone">')
        return Site({"/robots.txt": Page("", 404), "/gone": Page("", 404), "/cb": cb},
                    fallback=page)  # fmt: skip

    def run(srv, name: str, *more: str) -> tuple[int, str, dict, dict]:
        out, state = tmp_path / name, tmp_path / f"{name}.sqlite"
        report, decisions = tmp_path / f"{name}.json", tmp_path / f"{name}.jsonl"
        args = [*_crawl_args(srv.url, out, state), "--concurrency", "1", *more]
        code = main([*args, "--report", str(report), "--decisions", str(decisions)])
        err = capsys.readouterr().err.replace(srv.url, "ORIGIN")
        got = json.loads(report.read_text().replace(srv.url, "ORIGIN"))
        decided = {
            url.replace(srv.url, "ORIGIN"): (d["reason"], d["detail"].replace(srv.url, "ORIGIN"),
                                             d["depth"])
            for url, d in read_decisions(decisions).items()
        }  # fmt: skip
        return code, err, got, decided

    srv = serve(make_site().app)
    code, err, whole, decided = run(srv, "whole")
    assert code == 4 and "40 of 41 fetched pages are canonicalised to another origin" in err
    assert decided["ORIGIN/nf39"][0] == "nofollow"
    assert whole["canonical_broken_count"] == 1

    site = make_site()
    srv = serve(site.app)
    state = tmp_path / "cut.sqlite"
    proc = crawl_process(*_crawl_args(srv.url, tmp_path / "cut", state)[1:], "--concurrency", "1")
    wait_for(lambda: _rows(state, "decisions") >= 8, "8 decisions checkpointed", proc=proc)
    proc.send_signal(signal.SIGTERM)
    _, cut_err = proc.communicate(timeout=30)
    assert proc.returncode == 130, cut_err
    assert len(site.requests) < 40, "the crawl was not stopped mid-way"
    code, err, resumed, decided_after = run(srv, "cut", "--resume")
    assert code == 4 and "40 of 41 fetched pages are canonicalised to another origin" in err
    assert decided_after == decided
    for key in ("canonical_broken", "canonical_broken_count", "public_url_hint", "error"):
        assert resumed[key] == whole[key], key
    assert sorted(p for p in site.paths if p.startswith("/nf")) == []


def test_a_resumed_crawl_judges_the_engines_by_tonight_s_robots_txt(serve, tmp_path):
    """#26: the judge takes the engines' robots.txt verdict from ours, known without
    matching, only for URLs screened in this run. A resume fetches the URLs the stopped run
    queued as they were screened then: after robots.txt came to disallow them, they are
    still judged by the rules read now, for the engines, and not listed."""
    robots = {"text": "User-agent: *\nAllow: /\n"}

    async def robots_txt(request: web.Request) -> web.Response:
        return web.Response(text=robots["text"], content_type="text/plain")

    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(0.2)
        links = "" if request.path != "/" else "".join(
            f'<a href="{p}">{p}</a>' for p in [*(f"/p{n}" for n in range(12)), "/late/a", "/late/b"]
        )  # fmt: skip
        return web.Response(text=f"<p>{request.path}</p>{links}", content_type="text/html")

    srv = serve(Site({"/robots.txt": robots_txt}, fallback=page).app)
    out, state, decisions = tmp_path / "out", tmp_path / "state.sqlite", tmp_path / "d.jsonl"
    args = [*_crawl_args(srv.url, out, state)[1:], "--concurrency", "1"]
    proc = crawl_process(*args)
    wait_for(lambda: _rows(state, "urls") >= 10, "the queue checkpointed", proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    robots["text"] = "User-agent: *\nDisallow: /late/\n"
    assert main(["crawl", *args, "--resume", "--decisions", str(decisions)]) == 0
    d = read_decisions(decisions)
    late = {url: d[url] for url in (srv.url + "/late/a", srv.url + "/late/b")}
    for decision in late.values():
        assert not decision["listed"] and decision["reason"] == "robots_txt"
    published = {p.name: p.read_text() for p in out.iterdir() if p.suffix == ".xml"}
    assert not any("/late/" in text for text in published.values())
    assert any("/p11<" in text for text in published.values())
