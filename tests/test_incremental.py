"""Incremental nightly runs (issue #14): the state file is the site's history across runs.
Conditional requests (a 304 reuses the page's history), honest lastmods (the date a page's
main text last changed, the template left out), --fresh. Real servers on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from aiohttp import web

from crawler import cli
from crawler.cli import main
from crawler.shell import pool
from crawler.shell.state import SCHEMA_VERSION
from sitemap_out.feed import FEED_NAME, read_feed
from tests.memory import Answer, crawl_until_crash
from tests.memory import crawl as memory_crawl
from tests.sites import html, read_decisions, read_published, tagged


class HistorySite:
    """A small CMS-like site whose pages can be edited between runs: every page has the
    same nav, header, footer and newsletter box around its own text. Counts the requests,
    the conditional ones and the bodies sent."""

    def __init__(self, pages: int = 6, *, etag: bool = True, honour: bool = True) -> None:
        self.year = 2025
        self.nav = ["/p/0", "/p/1"]
        self.boxes: dict[str, str] = {}  # path -> an extra block of text on that page
        self.texts = {
            f"/p/{i}": [f"Page {i} first paragraph.", f"Page {i} second."] for i in range(pages)
        }
        self.links = {"/": [f"/p/{i}" for i in range(pages // 2)]}
        # the other half is behind page 0 and 1 only: discovered through them alone
        for i in range(pages // 2, pages):
            self.links.setdefault(f"/p/{i % 2}", []).append(f"/p/{i}")
        self.texts["/"] = ["Welcome home."]
        self.etag, self.honour = etag, honour
        self.last_modified: str | None = None  # "now": stamped with the response's Date
        self.robots_tag: dict[str, str] = {}  # path -> X-Robots-Tag, sent with a 304 too
        self.bare_304 = False  # a 304 without Last-Modified
        self.newsletter = "Subscribe to our newsletter"  # on every page: template
        self.pdf = False  # a PDF linked from the home page: no content blocks
        self.requests = self.conditional = self.bodies = self.not_modified = 0

    def render(self, path: str) -> str:
        nav = "".join(f'<a href="{href}">{href}</a>' for href in self.nav)
        hrefs = self.links.get(path, []) + (["/doc.pdf"] if self.pdf and path == "/" else [])
        links = "".join(f'<a href="{href}">more</a>' for href in hrefs)
        text = "".join(f"<p>{t}</p>" for t in self.texts[path])
        box = f"<div>{self.boxes[path]}</div>" if path in self.boxes else ""
        # the sitemap extensions' facts too: a 304 must publish them as the full answer did
        name = path.replace("/", "-")
        image = f'<img src="/img{name}.png" alt="">'
        head = ""
        if path in ("/p/0", "/p/1"):
            head = '<link rel=alternate hreflang=en href="/p/0">'
            head += '<link rel=alternate hreflang=de href="/p/1">'
        return (
            f"<!doctype html><html><head><title>{path}</title>{head}</head><body>"
            f"<header>Acme Corp</header><nav>{nav}</nav>"
            f"<div class=content>{text}{image}{links}{box}</div>"
            f"<div class=newsletter>{self.newsletter}</div>"
            f"<footer>(c) {self.year} Acme</footer></body></html>"
        )

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.StreamResponse:
            pdf = self.pdf and request.path == "/doc.pdf"
            if request.path not in self.texts and not pdf:
                return web.Response(status=404, text="no")
            self.requests += 1
            body = b"%PDF-1.4 a report" if pdf else self.render(request.path).encode()
            tag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            headers = {"Content-Type": "application/pdf" if pdf else "text/html; charset=utf-8"}
            if self.etag:
                headers["ETag"] = tag
            if self.last_modified == "now":
                headers["Last-Modified"] = format_datetime(datetime.now(UTC), usegmt=True)
            elif self.last_modified is not None:
                headers["Last-Modified"] = self.last_modified
            if request.path in self.robots_tag:
                headers["X-Robots-Tag"] = self.robots_tag[request.path]
            asked = request.headers.get("If-None-Match")
            if asked or request.headers.get("If-Modified-Since"):
                self.conditional += 1
            since = request.headers.get("If-Modified-Since")
            if self.honour and not self.etag and since and since == self.last_modified:
                self.not_modified += 1  # If-Modified-Since alone: a server without ETags
                del headers["Content-Type"]
                return web.Response(status=304, headers=headers)
            if self.honour and asked == tag:
                self.not_modified += 1
                del headers["Content-Type"]
                if self.bare_304:  # RFC 9110 lets a 304 leave Last-Modified out
                    headers.pop("Last-Modified", None)
                return web.Response(status=304, headers=headers)
            self.bodies += 1
            return web.Response(body=body, headers=headers)

        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        return app

    def reset(self) -> None:
        self.requests = self.conditional = self.bodies = self.not_modified = 0


def _run(url: str, tmp: Path, state: Path, xsd, *args: str, name: str = "out"):
    out, decisions = tmp / name, tmp / f"{name}.jsonl"
    code = main(
        ["crawl", url + "/", "-o", str(out), "-q", "--state", str(state),
         "--decisions", str(decisions), *args]
    )  # fmt: skip
    assert code == 0
    return read_published(out, xsd), read_decisions(decisions)


class _Clock:
    """The runs' clock: a test's runs are seconds apart, and a content date is the start
    of a run, so each run is moved `day` days on (crawler.shell.state reads the time)."""

    day = 0


class _Shifted(datetime):
    @classmethod
    def now(cls, tz=None):  # type: ignore[no-untyped-def,override]
        return datetime.now(tz) + timedelta(days=_Clock.day)


@pytest.fixture(autouse=True)
def _clock(monkeypatch):
    import crawler.shell.state

    _Clock.day = 0
    monkeypatch.setattr(crawler.shell.state, "datetime", _Shifted)


def _age(state: Path | None = None, days: int = 1) -> None:
    """The next run starts `days` later."""
    _Clock.day += days


def _day(lastmod: str | None) -> str | None:
    return None if lastmod is None else lastmod[:10]


@pytest.fixture
def site_run(serve, tmp_path, xsd) -> Callable[..., tuple]:
    def make(site: HistorySite) -> Callable[..., tuple]:
        srv = serve(site.app())
        state = tmp_path / "state.sqlite"

        def run(*args: str, name: str = "out") -> tuple:
            site.reset()
            return _run(srv.url, tmp_path, state, xsd, *args, name=name)

        run.state = state  # type: ignore[attr-defined]
        run.url = srv.url  # type: ignore[attr-defined]
        return run

    return make


def test_content_lastmods_from_the_second_run_and_template_changes_move_none(site_run):
    site = HistorySite(etag=False)  # no Last-Modified, no ETag: most CMS pages
    run = site_run(site)
    first, decisions = run()
    assert first.locs and all(v is None for v in first.lastmods.values())
    assert {d["lastmod_source"] for d in decisions.values() if d["listed"]} == {"none"}
    _age(run.state)
    yesterday = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()  # the edit's run
    today = (datetime.now(UTC) + timedelta(days=4)).date().isoformat()  # the last run's

    # the same text: no date is known yet, and none is made up (nor any URL "changed")
    second, decisions = run()
    assert second.locs == first.locs
    assert all(v is None for v in second.lastmods.values())
    assert {d["lastmod_source"] for d in decisions.values() if d["listed"]} == {"none"}
    site.texts["/p/2"][0] = "Page 2 first paragraph, reworded."
    _age(run.state)
    second, _ = run()  # /p/2's text changed: dated by this run, the others still unknown
    assert {k: _day(v) for k, v in second.lastmods.items() if v} == {run.url + "/p/2": yesterday}

    # the template changes on every page: footer year, a nav link, the newsletter box
    site.year, site.nav = 2026, [*site.nav, "/p/2"]
    _age(run.state)
    third, _ = run()
    assert third.lastmods == second.lastmods  # nothing moved

    # one paragraph of one page is reworded: that page's lastmod only
    site.texts["/p/3"][1] = "Page 3 second, reworded."
    _age(run.state)
    fourth, _ = run()
    moved = {loc for loc in fourth.locs if fourth.lastmods[loc] != third.lastmods[loc]}
    assert moved == {run.url + "/p/3"}
    assert _day(fourth.lastmods[run.url + "/p/3"]) == today


def test_a_block_crossing_the_threshold_moves_no_lastmod(site_run):
    site = HistorySite(pages=6, etag=False)
    paths = ["/", *(f"/p/{i}" for i in range(6))]
    for path in paths:  # a promotion on every page: template
        site.boxes[path] = "Summer sale: 20% off"
    run = site_run(site)
    run()
    _age(run.state)
    second, _ = run()
    # the promotion leaves most pages: it is no longer common, on the rest it is content
    for path in paths[:5]:
        del site.boxes[path]
    _age(run.state)
    third, _ = run()
    assert third.lastmods == second.lastmods
    # and becomes common again, on other pages
    for path in paths[:5]:
        site.boxes[path] = "Summer sale: 20% off"
    _age(run.state)
    fourth, _ = run()
    assert fourth.lastmods == second.lastmods


@pytest.mark.parametrize(
    ("workers", "pages"),
    [("0", 8), ("1", 600)],  # 600: well past pool.START_AFTER: the worker takes pages
)
def test_a_304_run_publishes_what_a_full_run_does_without_a_body(
    site_run, tmp_path, monkeypatch, workers, pages
):
    # 304s in a worker, as on a night where much changed: the switch that makes them in the
    # main process while the site answers 304s (pool.revalidate_here) says "the workers"
    # from the first answer on, and they start at once (not after whole pages)
    monkeypatch.setattr(pool, "REVALIDATION_BLOCK", 1)
    monkeypatch.setattr(pool, "revalidate_here", lambda not_modified, whole: False)
    monkeypatch.setattr(pool, "START_AFTER", 0)
    # forked before the loop, ready at once, as a night with a history's are not (spawned
    # once pages change, cli._revalidates): the 304 path in a worker is the same either way
    monkeypatch.setattr(cli, "_revalidates", lambda config, start: False)
    site = HistorySite(pages=pages)
    run = site_run(site)
    first, _ = run("--workers", workers)
    assert site.conditional == 0 and site.bodies == site.requests
    site.texts["/p/1"][0] = "Page 1 first paragraph, reworded."
    _age(run.state)
    run("--workers", workers, name="edited")  # /p/1's content date: this run's
    _age(run.state)
    baseline = tmp_path / "baseline.sqlite"
    shutil.copy(run.state, baseline)

    # a server answering 304: asked with validators, sends no body, publishes the same
    report = tmp_path / "report.json"
    second, decisions = run("--workers", workers, "--report", str(report), name="second")
    if workers != "0":  # the 304 path is the workers' too
        assert json.loads(report.read_text())["requests"]["by_workers"] > 0
    assert site.requests == len(first.locs) and site.conditional == site.requests
    assert site.bodies == 0 and site.not_modified == site.requests
    sources = {url: d["lastmod_source"] for url, d in decisions.items() if d["listed"]}
    assert set(sources.values()) == {"content", "none"}
    assert sources[run.url + "/p/1"] == "content"  # the edited run's date, kept by a 304

    # the same baseline, against a server that ignores validators: the same sitemap, and
    # not one request more than the first run made
    shutil.copy(baseline, run.state)
    site.honour = False
    full, _ = run("--workers", workers, name="full")
    assert site.requests == len(first.locs) and site.bodies == site.requests
    assert full.locs == second.locs == first.locs
    assert full.lastmods == second.lastmods
    assert second.lastmods[run.url + "/p/1"] is not None
    # images and hreflang alternates too: the 304 run's files are the full run's, byte for byte
    published = (tmp_path / "second" / "sitemap.xml").read_bytes()
    assert published == (tmp_path / "full" / "sitemap.xml").read_bytes()
    assert b"<image:loc>" in published and b'hreflang="de"' in published


def test_a_304_page_is_still_judged_by_the_directives_of_its_headers(site_run):
    site = HistorySite(pages=4)
    run = site_run(site)
    first, _ = run()
    url = run.url + "/p/1"
    assert url in first.locs
    site.robots_tag["/p/1"] = "noindex"  # sent with the 304 too
    second, decisions = run()
    assert site.bodies == 0
    assert url not in second.locs and decisions[url]["reason"] == "header_noindex"
    # its links are still followed (noindex, not nofollow): what only /p/1 leads to
    assert run.url + "/p/3" in second.locs


def test_fresh_ignores_the_history(site_run):
    site = HistorySite(pages=4)
    run = site_run(site)
    run()
    _age(run.state)
    second, _ = run("--fresh")
    assert site.conditional == 0 and site.bodies == site.requests
    assert all(v is None for v in second.lastmods.values())
    # and the history is the fresh run's: the next run starts from it
    run()
    assert site.conditional == site.requests and site.bodies == 0


def test_a_state_of_an_older_version_is_refused_with_what_to_do(site_run, capsys):
    site = HistorySite(pages=2)
    run = site_run(site)
    run()
    conn = sqlite3.connect(run.state)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.close()
    out = run.state.parent / "old"
    code = main(["crawl", run.url + "/", "-o", str(out), "-q", "--state", str(run.state)])
    assert code == 2
    err = capsys.readouterr().err
    assert "schema version" in err and "--fresh" in err and "delete it" in err
    run("--fresh")  # replaces it


def test_a_stamped_last_modified_is_not_believed(site_run):
    site = HistorySite(pages=4, etag=False)
    site.last_modified = "now"  # every answer stamped with the time of the request
    run = site_run(site)
    first, decisions = run()
    assert all(v is None for v in first.lastmods.values())  # auto: not believable
    _age(run.state)
    site.texts["/p/1"][0] = "Page 1 first paragraph, reworded."
    _, decisions = run()  # dated by the content that changed, never by the stamp
    sources = {url: d["lastmod_source"] for url, d in decisions.items() if d["listed"]}
    assert set(sources.values()) == {"content", "none"} and sources[run.url + "/p/1"] == "content"
    header, decisions = run("--lastmod", "header", name="header")
    assert all(v is not None for v in header.lastmods.values())
    assert {d["lastmod_source"] for d in decisions.values() if d["listed"]} == {"header"}
    none, decisions = run("--lastmod", "none", name="none")
    assert all(v is None for v in none.lastmods.values())
    assert json.dumps(sorted({d["lastmod_source"] for d in decisions.values() if d["listed"]}))


def test_a_resumed_run_still_dates_by_the_last_finished_run(tmp_path, xsd):
    """A run that crashes and is resumed compares with the last finished run, as an
    uninterrupted one does: its own pages fetched before the crash do not become the
    baseline (they wait in fresh_history until it finishes)."""
    pages: dict[str, Answer | str] = {"http://s.test/": html(*(f"/p/{i}" for i in range(8)))}
    for i in range(8):
        pages[f"http://s.test/p/{i}"] = f"<body><nav>menu</nav><p>Text of page {i}</p></body>"
    state = tmp_path / "state.sqlite"
    memory_crawl(pages, tmp_path / "one", state=state)
    _age()
    pages["http://s.test/p/2"] = "<body><nav>menu</nav><p>Page 2, rewritten</p></body>"
    pages["http://s.test/p/6"] = "<body><nav>menu</nav><p>Page 6, rewritten</p></body>"
    crawl_until_crash(pages, tmp_path / "two", "http://s.test/p/5", state=state)
    _age()  # resumed the next day: the run's date is still its start
    memory_crawl(pages, tmp_path / "two", state=state, resume=True)
    lastmods = read_published(tmp_path / "two", xsd).lastmods
    second_day = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    changed = {"http://s.test/p/2", "http://s.test/p/6"}
    assert {_day(v) for k, v in lastmods.items() if k in changed} == {second_day}
    assert {v for k, v in lastmods.items() if k not in changed} == {None}  # not known


def test_the_job_starts_from_the_history_and_fresh_passes_through(serve, tmp_path, capsys):
    site = HistorySite(pages=4)
    srv = serve(site.app())
    data = tmp_path / "data"

    def job(*args: str) -> str:
        site.reset()
        assert main(["job", srv.url + "/", "--data", str(data), *args]) == 0
        return capsys.readouterr().err

    assert "a first run" in job()
    said = job()
    assert "from its history" in said
    assert site.conditional == site.requests and site.bodies == 0
    said = job("--fresh")
    assert "ignoring its history" in said
    assert site.conditional == 0 and site.bodies == site.requests


@pytest.mark.parametrize("args", [["--fresh"], ["--lastmod", "content"]])
def test_history_options_without_a_state_are_refused(tmp_path, capsys, args):
    code = main(["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "o"), *args])
    assert code == 2
    err = capsys.readouterr().err
    assert "needs --state FILE" in err and len(err.strip().splitlines()) == 1


def test_fresh_and_resume_together_are_refused(tmp_path, capsys):
    code = main(
        ["crawl", "http://127.0.0.1:9/", "--state", str(tmp_path / "s"), "--resume", "--fresh"]
    )
    assert code == 2
    assert "--fresh" in capsys.readouterr().err


def test_the_history_of_another_site_or_other_link_settings_is_not_used(site_run, serve, xsd):
    site = HistorySite(pages=4)
    run = site_run(site)
    run()
    run("--strip-params", "ref")  # links may be read otherwise: no validators sent
    assert site.conditional == 0 and site.bodies == site.requests
    run("--strip-params", "ref")  # the history is now of these settings
    assert site.conditional == site.requests and site.bodies == 0
    other = HistorySite(pages=4)
    srv = serve(other.app())
    _run(srv.url, run.state.parent, run.state, xsd, name="other")  # replaces the file
    assert other.conditional == 0 and other.bodies == other.requests


def test_a_server_without_etags_is_asked_with_if_modified_since(site_run):
    site = HistorySite(pages=4, etag=False)
    site.last_modified = "Sun, 06 Nov 1994 08:49:37 GMT"
    run = site_run(site)
    first, _ = run()
    second, decisions = run()
    assert site.conditional == site.requests and site.bodies == 0
    assert second.locs == first.locs and second.lastmods == first.lastmods
    assert {_day(v) for v in second.lastmods.values()} == {"1994-11-06"}
    assert {d["lastmod_source"] for d in decisions.values() if d["listed"]} == {"header"}


def test_other_page_settings_or_rendering_ask_for_whole_pages_again(site_run):
    """The history is keyed by every setting a page's facts depend on: --no-images must not
    revive last night's images from a 304 (nor --render last night's raw links)."""
    site = HistorySite(pages=4)
    run = site_run(site)

    def images(published) -> bool:
        return any(b"<image:loc>" in path.read_bytes() for path in published.files)

    first, _ = run()
    assert images(first)
    second, _ = run("--no-images")
    assert site.conditional == 0 and site.bodies == site.requests
    assert not images(second)
    run("--no-images")
    assert site.conditional == site.requests and site.bodies == 0


def test_a_304_without_last_modified_keeps_a_stamped_date_unbelieved(site_run):
    site = HistorySite(pages=4)
    site.last_modified = "now"  # every answer stamped with the time of the request
    site.bare_304 = True
    run = site_run(site)
    run()
    _age(run.state)
    _, decisions = run()
    assert site.not_modified == site.requests
    # last night's stamp, compared with tonight's Date, is not a believable header
    assert {d["lastmod_source"] for d in decisions.values() if d["listed"]} == {"none"}


def test_a_page_no_longer_linked_leaves_the_history(site_run):
    site = HistorySite(pages=4)
    run = site_run(site)
    run()
    site.links["/p/1"].remove("/p/3")  # the only link to /p/3: gone from the site
    run()
    conn = sqlite3.connect(run.state)
    kept = {
        url for (url,) in conn.execute("SELECT u.url FROM history h JOIN urls u ON u.id = h.url")
    }
    conn.close()
    assert run.url + "/p/3" not in kept and run.url + "/p/1" in kept


def test_the_job_starts_afresh_on_a_state_of_an_older_version(serve, tmp_path, capsys):
    """A crawl refuses it (above); the nightly job, which no one watches, starts afresh
    rather than failing every night until someone deletes the file."""
    site = HistorySite(pages=2)
    srv = serve(site.app())
    data = tmp_path / "data"
    assert main(["job", srv.url + "/", "--data", str(data)]) == 0
    conn = sqlite3.connect(data / "state" / "crawl.sqlite")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.close()
    capsys.readouterr()
    assert main(["job", srv.url + "/", "--data", str(data)]) == 0
    assert "another version" in capsys.readouterr().err
    assert main(["job", srv.url + "/", "--data", str(data)]) == 0
    assert "from its history" in capsys.readouterr().err


def _changed(path: Path) -> list[str]:
    report = json.loads(path.read_text())
    assert report["counts"]["added"] == report["counts"]["removed"] == 0
    return [change["loc"] for change in report["changed"]]


@pytest.mark.parametrize("rebuilt", ["Sun, 01 Jun 2025 08:00:00 GMT", None])
@pytest.mark.parametrize("mode", ["auto", "content"])
def test_a_rebuild_moves_the_lastmod_of_the_one_page_whose_text_moved(
    site_run, tmp_path, mode, rebuilt
):
    """Issue #22, defect 2: a new footer and newsletter on every page moves every ETag and
    Last-Modified; one page's main text moved. That page's lastmod moves (to its believable
    Last-Modified, else the run's date), and it alone is reported changed."""
    site = HistorySite(pages=6)
    site.last_modified = "Wed, 01 Jan 2025 08:00:00 GMT"
    run = site_run(site)
    changes = tmp_path / "changes.json"
    args = ("--lastmod", mode, "--changes", str(changes), "--feed")
    first, decisions = run(*args)
    assert {_day(v) for v in first.lastmods.values()} == {"2025-01-01"}  # believable
    _age(run.state)
    second, _ = run(*args)  # nothing changed: 304s, the same lastmods
    assert site.not_modified == site.requests
    assert second.lastmods == first.lastmods and _changed(changes) == []

    site.year, site.newsletter = 2026, "Our new newsletter: weekly"
    site.last_modified = rebuilt
    edited = run.url + "/p/3"
    site.texts["/p/3"][0] = "Page 3 first paragraph, reworded."
    _age(run.state)
    third, decisions = run(*args)
    assert site.bodies == site.requests  # every ETag moved: every page answered in full
    moved = {loc for loc in third.locs if third.lastmods[loc] != second.lastmods[loc]}
    assert moved == {edited}
    run_day = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    assert _day(third.lastmods[edited]) == ("2025-06-01" if rebuilt else run_day)
    assert decisions[edited]["lastmod_source"] == ("header" if rebuilt else "content")
    assert _changed(changes) == [edited]
    feed, _ = read_feed(tmp_path / "out" / FEED_NAME)
    assert [entry.loc for entry in feed if entry.kind == "changed"] == [edited]

    _age(run.state)
    fourth, _ = run(*args)  # the rebuilt site again: nothing moves
    assert fourth.lastmods == third.lastmods and _changed(changes) == []


@pytest.mark.parametrize("mode", ["auto", "content"])
def test_no_lastmod_comes_and_goes_on_an_unchanged_site(site_run, tmp_path, mode):
    """A server whose Last-Modified is the response's Date one night and a fixed date the
    next: the believability test flips, and no published lastmod follows it."""
    site = HistorySite(pages=6, etag=False)
    run = site_run(site)
    changes = tmp_path / "changes.json"
    args = ("--lastmod", mode, "--changes", str(changes))
    nights = []
    for modified in ("Wed, 01 Jan 2025 08:00:00 GMT", "now", "Wed, 01 Jan 2025 08:00:00 GMT"):
        site.last_modified = modified
        published, _ = run(*args)
        nights.append(published.lastmods)
        if len(nights) > 1:
            assert _changed(changes) == []
        _age(run.state)
    assert {_day(v) for v in nights[0].values()} == {"2025-01-01"}
    assert nights[1] == nights[0] and nights[2] == nights[0]

    # and the other way round: nothing published while the stamp is not believed, then
    # the header, once believable, dates the pages (a lastmod appears; none disappears)
    site.last_modified = "now"
    run("--fresh", *args)
    _age(run.state)
    site.last_modified = "Wed, 01 Jan 2025 08:00:00 GMT"
    believed, _ = run(*args)
    assert {_day(v) for v in believed.lastmods.values()} == {"2025-01-01"}
    site.last_modified = "now"
    _age(run.state)
    kept, _ = run(*args)
    assert kept.lastmods == believed.lastmods and _changed(changes) == []


@pytest.mark.parametrize("mode", ["auto", "content"])
def test_a_pdf_keeps_its_lastmod_when_its_server_starts_stamping(site_run, tmp_path, mode):
    """Review #3: a PDF has no content blocks, so nothing but its header dates it. Once
    published with its Last-Modified, it keeps that lastmod on the nights its server sends
    the response's Date instead (the believability test flips), and gets it back after."""
    site = HistorySite(pages=4, etag=False)
    site.pdf = True
    site.last_modified = "Wed, 01 Jan 2025 08:00:00 GMT"
    run = site_run(site)
    pdf = run.url + "/doc.pdf"
    args = ("--lastmod", mode)
    first, _ = run(*args)
    assert _day(first.lastmods[pdf]) == "2025-01-01"
    for modified in ("now", "now", "Wed, 01 Jan 2025 08:00:00 GMT"):
        _age(run.state)
        site.last_modified = modified
        published, decisions = run(*args)
        assert published.lastmods[pdf] == first.lastmods[pdf], modified
        assert decisions[pdf]["lastmod_source"] == "header"


def test_a_page_unlisted_across_a_rebuild_is_not_dated_by_it_once_listed(site_run):
    """Review #4: the content date has one owner (crawler.core.lastmod), which dates only
    listed pages. A page noindex on the night the site is rebuilt (new footer, newsletter)
    is listed again the next night: the rebuild is not its content change."""
    site = HistorySite(pages=4, etag=False)  # no Last-Modified: dated by content only
    run = site_run(site)
    hidden = run.url + "/p/2"
    site.robots_tag["/p/2"] = "noindex"
    args = ("--lastmod", "content")
    run(*args)
    _age(run.state)
    site.year, site.newsletter = 2026, "Our new newsletter: weekly"  # the rebuild
    rebuilt, _ = run(*args)
    assert hidden not in rebuilt.locs
    _age(run.state)
    del site.robots_tag["/p/2"]
    listed, decisions = run(*args)
    assert hidden in listed.locs
    assert listed.lastmods[hidden] is None and decisions[hidden]["lastmod_source"] == "none"
    assert all(v is None for v in listed.lastmods.values())  # nothing's text moved


def _history_links(state: Path) -> dict[str, tuple[bytes | None, bytes | None]]:
    """Each page's links in the history (packed URL ids, followed and nofollow), by URL."""
    with sqlite3.connect(state) as conn:
        rows = conn.execute(
            "SELECT u.url, h.targets, h.nofollow FROM history h JOIN urls u ON u.id = h.url"
        ).fetchall()
    return {url: (targets, nofollow) for url, targets, nofollow in rows}


@pytest.mark.parametrize("workers", ["0", "1"])
def test_a_304_night_keeps_each_page_s_links_as_the_full_night_stored_them(site_run, workers):
    # #26: a revived page's row stores the link ids its history row was read with, not the
    # ids of its links named and packed again: they must be the same bytes
    site = HistorySite(pages=8)
    run = site_run(site)
    first, _ = run("--workers", workers)
    before = _history_links(run.state)
    assert sum(1 for targets, _ in before.values() if targets) >= 3
    _age(run.state)
    second, _ = run("--workers", workers, name="second")
    assert site.not_modified == site.requests and second.locs == first.locs
    assert _history_links(run.state) == before
    _age(run.state)
    third, _ = run("--workers", workers, name="third")  # a 304 again, from the 304's rows
    assert site.not_modified == site.requests and third.locs == first.locs
    assert _history_links(run.state) == before


@pytest.mark.parametrize("night", ["unchanged", "changed"])
def test_a_broken_url_s_referrers_are_the_same_when_revived_pages_link_to_it(
    serve, tmp_path, xsd, night
):
    """#26: a URL waiting is skipped by revived pages' links (hushed as it is queued, its
    early referrers read back at the end: crawler.shell.referrers); judged broken, it is
    looked at again, so the pages judged after it still name it: the broken-links report
    of a 304 night is the full night's.
    The same on a night whose every page changed (its ETag, not its links): a changed
    page's links, by name, are skipped by the same rule (SettledIds, by the names' ids)."""
    pages = {"/": ["/deep", *(f"/p/{i}" for i in range(8))], "/deep": ["/gone"]}
    pages["/deep"] += [f"/q/{i}" for i in range(8)]  # after /gone: judged after it
    pages.update({f"/p/{i}": ["/", "/gone"] for i in range(8)})  # before it: early referrers
    pages.update({f"/q/{i}": ["/", "/gone"] for i in range(8)})  # after it: late referrers
    nights = [0]  # in the ETag: a changed night is a new one for every page

    async def handle(request: web.Request) -> web.Response:
        if request.path not in pages:
            return web.Response(status=404, text="gone")
        links = "".join(f'<a href="{href}">{href}</a>' for href in pages[request.path])
        body = f"<!doctype html><title>{request.path}</title><p>{links}</p>".encode()
        return tagged(request, body, nights[0])

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    srv = serve(app)
    state, report = tmp_path / "state.sqlite", tmp_path / "report.json"
    order = ("--concurrency", "1", "--workers", "0", "--report", str(report))

    def broken() -> list[str]:
        (gone,) = json.loads(report.read_text())["broken_links"]
        assert gone["url"] == srv.url + "/gone"
        return gone["linked_from"]

    _run(srv.url, tmp_path, state, xsd, *order)
    full = broken()
    if night == "changed":
        nights[0] += 1
    _run(srv.url, tmp_path, state, xsd, *order)
    revived = json.loads(report.read_text())["pages_not_modified"]
    assert revived == (len(pages) if night == "unchanged" else 0)
    assert broken() == full
    assert len(full) == 10 and srv.url + "/q/0" in full  # late referrers among them


def _meta(state: Path, key: str) -> object:
    with sqlite3.connect(state) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


@pytest.fixture
def counts(monkeypatch) -> list[int]:
    """One item for each count of a run's template (count_candidates)."""
    import crawler.shell.journal

    calls: list[int] = []
    real = crawler.shell.journal.count_candidates

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(crawler.shell.journal, "count_candidates", spy)
    return calls


def test_an_unchanged_night_keeps_its_template_without_counting_it(
    site_run, tmp_path, monkeypatch, counts
):
    """#26: on a night whose listed pages are the last run's, each with the blocks its
    history row holds, no lastmod depends on the template and the count would be the last
    run's: it is kept, not counted. The files and the template kept are those of the same
    night counted."""
    from crawler.core.lastmod import NightTemplate

    site = HistorySite(pages=8)
    site.pdf = True  # a listed page without blocks
    run = site_run(site)
    run()
    assert len(counts) == 1  # no last run to keep from
    site.texts["/p/2"][0] = "Page 2 first paragraph, reworded."
    _age(run.state)
    edited, _ = run()
    assert len(counts) == 2  # a page's blocks moved: its lastmod needs the template
    assert edited.lastmods[run.url + "/p/2"] is not None
    _age(run.state)
    night = tmp_path / "night.sqlite"
    shutil.copy(run.state, night)

    kept, _ = run(name="kept")
    assert len(counts) == 2 and site.bodies == 0  # not counted
    assert kept.lastmods == edited.lastmods
    template, ids = _meta(run.state, "common"), _meta(run.state, "counted")
    assert template == _meta(night, "common") and ids == _meta(night, "counted")

    shutil.copy(night, run.state)  # the same night, counted
    monkeypatch.setattr(NightTemplate, "kept", lambda self, before: False)
    run(name="counted")
    assert len(counts) == 3
    assert _meta(run.state, "common") == template and _meta(run.state, "counted") == ids
    for published in kept.files:
        assert published.read_bytes() == (tmp_path / "counted" / published.name).read_bytes()


def test_a_night_with_other_pages_or_after_another_run_counts_its_template(site_run, counts):
    """#26: the template is kept only from the run that finished last and only for the
    same pages: a limited night, the full night after it, a night with a page more, a
    night after a run that did not keep the pages (an unfinished one, another version)
    count it."""
    site = HistorySite(pages=8)
    run = site_run(site)
    run()
    _age(run.state)
    run("--max-pages", "4", "--max-shrink", "1")
    assert len(counts) == 2  # fewer pages
    _age(run.state)
    run()
    assert len(counts) == 3  # more pages than the limited night's
    _age(run.state)
    run()
    assert len(counts) == 3  # the same: kept
    site.texts["/p/8"] = ["Page 8, new."]
    site.links["/"].append("/p/8")
    _age(run.state)
    more, _ = run()
    assert len(counts) == 4 and run.url + "/p/8" in more.locs
    with sqlite3.connect(run.state) as conn:  # as a run since would leave it
        conn.execute("UPDATE meta SET value = 'later' WHERE key = 'updated'")
    _age(run.state)
    run()
    assert len(counts) == 5
    _age(run.state)
    run()
    assert len(counts) == 5
    with sqlite3.connect(run.state) as conn:  # another version's finish in the same second
        conn.execute(
            "UPDATE meta SET value = substr(value, 1, 19) || '+00:00' WHERE key = 'updated'"
        )
    _age(run.state)
    run()
    assert len(counts) == 6


def test_a_resumed_night_counts_its_template_as_an_uninterrupted_one_would(tmp_path, xsd, counts):
    """#26: a resumed run cannot tell which run wrote the history last (the one stopped may
    be a version that leaves the counted ids as they were, its history another night's), so
    it counts its template: the same one an uninterrupted night keeps or counts, unchanged
    or with a page rewritten before the crash."""
    pages: dict[str, Answer | str] = {"http://s.test/": html(*(f"/p/{i}" for i in range(8)))}
    for i in range(8):
        pages[f"http://s.test/p/{i}"] = f"<body><nav>menu</nav><p>Text of page {i}</p></body>"
    state = tmp_path / "state.sqlite"
    memory_crawl(pages, tmp_path / "one", state=state)
    assert len(counts) == 1
    template = _meta(state, "common")
    for night, rewritten in (("two", False), ("three", True)):
        if rewritten:
            pages["http://s.test/p/2"] = "<body><nav>menu</nav><p>Page 2, rewritten</p></body>"
        _age()
        before = len(counts)
        crawl_until_crash(pages, tmp_path / night, "http://s.test/p/5", state=state)
        memory_crawl(pages, tmp_path / night, state=state, resume=True)
        assert len(counts) == before + 1
        assert _meta(state, "common") == template and _meta(state, "counted") is not None
    published = read_published(tmp_path / "two", xsd)
    assert published.locs == read_published(tmp_path / "one", xsd).locs
