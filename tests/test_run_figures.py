"""A run's figures (issue #17): the report of an interrupted run or of one an outage cut short
gives its true duration; after a resume the summary and the report give this run's requests,
seconds and pages/s, and the crawl's requests in all; a refused resume names the settings
that differ, old and new."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli import main
from crawler.config import _NOT_FINGERPRINTED, Config, settings
from crawler.shell.progress import ProgressFigures, format_json
from tests.procs import wait_for
from tests.sites import Page, Site, crawl_process, html, tree_site


def _report(path: Path) -> dict:
    return json.loads(path.read_text())


def _pages(site: Site) -> int:
    return sum(1 for path in site.paths if path != "/robots.txt")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_run_reports_how_long_it_ran(serve, tmp_path, sig):
    site = tree_site(400, 0.05)
    srv = serve(site.app)
    report = tmp_path / "r.json"
    proc = crawl_process(
        srv.url + "/", "-o", str(tmp_path / "out"), "--report", str(report),
        "--concurrency", "2", "-q",
    )  # fmt: skip
    # 20 pages answering after 0.05 s each, 2 at a time: the run has lasted 0.5 s at least
    wait_for(lambda: _pages(site) >= 21, "20 pages answered", proc=proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    data = _report(report)
    assert data["published"] is False and "stopped by" in data["error"]
    assert data["seconds"] >= 0.5
    assert data["pages_fetched"] == data["pages_fetched_this_run"] >= 20
    # (seconds rounded to the millisecond in the report)
    assert data["pages_per_second"] == pytest.approx(
        data["pages_fetched"] / data["seconds"], rel=0.01
    )


def test_a_run_an_outage_cut_short_reports_how_long_it_ran(serve, tmp_path):
    """Every page but the home page answers 503: the crawl slows down (a quarter of a second
    of delay at least), then stops; its report has the run's duration."""

    async def down(request: web.Request) -> web.Response:
        return web.Response(status=503, text="down")

    pages: dict = {"/": html(*[f"/p{i}" for i in range(300)]), "/robots.txt": Page("", 404)}
    site = Site(pages, fallback=down)
    srv = serve(site.app)
    report = tmp_path / "r.json"
    code = main(
        ["crawl", srv.url + "/", "-o", str(tmp_path / "out"), "-q", "--retries", "0",
         "--max-crawl-delay", "0", "--report", str(report)]
    )  # fmt: skip
    assert code == 4
    data = _report(report)
    assert data["published"] is False and "site looks down" in data["error"]
    assert data["seconds"] >= 0.25
    assert data["pages_per_second"] > 0


def test_a_resumed_run_reports_its_own_pages_per_second(serve, tmp_path, capsys):
    site = tree_site(600, 0.002)
    srv = serve(site.app)
    out, state, report = tmp_path / "out", tmp_path / "s.sqlite", tmp_path / "r.json"
    args = [srv.url + "/", "-o", str(out), "--state", str(state), "--concurrency", "4"]
    proc = crawl_process(*args, "-q")
    wait_for(lambda: _pages(site) >= 200, "200 pages", proc=proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    first = _pages(site)

    assert main(["crawl", *args, "--resume", "--report", str(report)]) == 0
    summary = capsys.readouterr().out
    this_run = _pages(site) - first
    assert 0 < this_run < 600 and first + this_run == 600  # nothing fetched twice
    data = _report(report)
    assert data["pages_fetched"] == 600 and data["pages_fetched_this_run"] == this_run
    assert data["pages_per_second"] == pytest.approx(this_run / data["seconds"], rel=0.01)
    assert f"fetched {this_run} pages this run (600 in all) in " in summary
    per_second = summary.split(" pages/s)")[0].rsplit("(", 1)[1]
    assert int(per_second) == pytest.approx(this_run / data["seconds"], rel=0.01, abs=1)


# -- a refused resume --------------------------------------------------------------------------


def _meta(state: Path) -> dict[str, object]:
    with contextlib.closing(sqlite3.connect(state)) as conn:
        return dict(conn.execute("SELECT key, value FROM meta"))


def test_a_refused_resume_names_the_settings_that_differ(serve, tmp_path, capsys):
    site = Site({"/": html(head='<meta name="robots" content="noindex">')})
    srv = serve(site.app)
    state = tmp_path / "s.sqlite"

    def crawl(*extra: str) -> tuple[int, str]:
        code = main(
            ["crawl", srv.url + "/", "-o", str(tmp_path / "out"), "--state", str(state), "-q",
             "--max-depth", "3", *extra]
        )  # fmt: skip
        return code, capsys.readouterr().err

    code, _ = crawl()  # nothing listed: the crawl is saved, unfinished
    assert code == 3
    requests = len(site.requests)
    code, err = crawl("--resume", "--max-depth", "5", "--strip-params", "sid,ref_*")
    assert code == 2
    defaults = json.dumps(list(Config().strip_params))
    assert err == (
        f"sitemap-crawler: --resume refused: {state} was saved with max_depth=3, "
        f'strip_params={defaults}; now max_depth=5, strip_params=["sid", "ref_*"] '
        "(start a fresh crawl without --resume, or use the same settings)\n"
    )
    assert len(site.requests) == requests

    # a state file from before the settings were kept: refused without naming them
    with contextlib.closing(sqlite3.connect(state)) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'settings'")
        conn.commit()
    code, err = crawl("--resume", "--max-depth", "5")
    assert code == 2 and "made with a different configuration" in err and err.count("\n") == 1
    assert len(site.requests) == requests


def test_the_settings_kept_are_those_fingerprinted_and_never_a_secret(serve, tmp_path):
    srv = serve(Site({"/": html("/a"), "/a": Page("", 404)}).app)
    state = tmp_path / "s.sqlite"
    args = ["crawl", srv.url + "/", "-o", str(tmp_path / "out"), "--state", str(state), "-q"]
    assert main([*args, "--max-pages", "7"]) == 0
    kept = json.loads(str(_meta(state)["settings"]))
    config = Config(url=srv.url + "/", output=tmp_path / "out", state=state, max_pages=7)
    assert kept == json.loads(settings(config.validate()))
    assert not kept.keys() & _NOT_FINGERPRINTED
    assert not kept.keys() & {"auth", "header", "cookie", "proxy"}  # secrets, never stored


def test_the_progress_rate_of_a_resumed_crawl_counts_this_run_only():
    resumed = ProgressFigures(1200, 0, 0, 0, elapsed=10.0, fetched_before=1000)
    assert resumed.pages_per_second == 20.0
    assert json.loads(format_json(resumed))["fetched_before"] == 1000
    assert "fetched_before" not in json.loads(format_json(ProgressFigures(1, 1, 1, 0, 1.0)))
