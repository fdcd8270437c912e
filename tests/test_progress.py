"""Live progress (issue #6): in place on a terminal, lines in a log, JSON on request."""

from __future__ import annotations

import io
import json

from crawler.cli import main
from crawler.config import Config
from crawler.shell import eventloop
from crawler.shell.engine import Crawl
from crawler.shell.progress import ProgressFigures, ProgressLine, format_text
from tests.sites import Page, Site, html, tree_site

SNAP = ProgressFigures(fetched=1200, listed=1100, queued=300, failed=2, elapsed=65.0)


def test_text_line():
    assert format_text(SNAP) == (
        "1200 fetched, 1100 listed, 300 queued, 2 failed, 18 pages/s, 1:05 elapsed, "
        ">= 0:16 left for the queue"
    )


def test_the_line_fits_a_narrow_terminal_dropping_the_least_important_parts():
    snap = ProgressFigures(12, 10, 3000, 0, 12.0, "Crawl-delay 1 s from robots.txt", 1.0)
    full = format_text(snap)
    assert full == (
        "12 fetched, 10 listed, 3000 queued, 1 pages/s, 0:12 elapsed, "
        ">= 50:00 left for the queue, Crawl-delay 1 s from robots.txt"
    )
    for width in (20, 40, 60, 79):
        text = format_text(snap, width)
        assert len(text) <= width and full.startswith(text)
    assert format_text(snap, 5) == "12 fe"  # a last resort


def test_the_pace_says_what_holds_the_crawl_back():
    from crawler.shell.throttle import Throttle

    throttle = Throttle(concurrency=4)
    assert throttle.pace == ""
    throttle.set_crawl_delay(2)
    assert throttle.pace == "Crawl-delay 2 s from robots.txt"
    assert Throttle(concurrency=4, delay=0.5).pace == "--delay 0.5 s"
    assert Throttle(concurrency=4, max_rps=3).pace == "--max-rps 3"


def test_the_terminal_line_is_cut_to_the_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    out = io.StringIO()
    r = ProgressLine(out, tty=True)
    r(SNAP)
    assert len(out.getvalue().lstrip("\r")) <= 39


def test_terminal_rewrites_one_line_and_clears_it():
    out = io.StringIO()
    r = ProgressLine(out, tty=True)
    r(SNAP)
    r(ProgressFigures(1, 1, 1, 0, 1.0))
    r.finish()
    text = out.getvalue()
    assert "\n" not in text and text.count("\r") == 4
    assert r.interval == 0.5


def test_log_lines_every_ten_seconds_and_json():
    out = io.StringIO()
    r = ProgressLine(out, tty=False)
    r(SNAP)
    assert out.getvalue().startswith("progress: 1200 fetched") and r.interval == 10.0
    out = io.StringIO()
    ProgressLine(out, tty=True, json_lines=True)(SNAP)
    data = json.loads(out.getvalue())
    assert data == {
        "event": "progress",
        "fetched": 1200,
        "listed": 1100,
        "queued": 300,
        "failed": 2,
        "elapsed": 65.0,
        "pages_per_second": 18.5,
        "pace": "",
        "interval": 0.0,
        "seconds_left": 16.2,
    }


def test_crawl_reports_progress_while_it_runs(serve, tmp_path):
    srv = serve(tree_site(40, 0.05).app)
    out = io.StringIO()
    renderer = ProgressLine(out, tty=False, json_lines=True, interval=0.1)
    config = Config(url=srv.url + "/", output=tmp_path / "o", concurrency=2).validate()
    eventloop.run(Crawl(config, progress=renderer).run())
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) >= 3
    fetched = [line["fetched"] for line in lines]
    assert fetched == sorted(fetched) and fetched[-1] > fetched[0]


def test_quiet_prints_nothing(serve, tmp_path, capsys):
    srv = serve(tree_site(3, 0.05).app)
    assert main(["crawl", srv.url + "/", "-o", str(tmp_path / "o"), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_a_log_line_clears_the_status_line_first():
    out = io.StringIO()
    r = ProgressLine(out, tty=True)
    r(SNAP)
    r.log("warning: something")
    text = out.getvalue()
    status = text.split("\r")[1]
    assert text.endswith("\r" + " " * len(status) + "\r" + "warning: something\n")


def test_urls_waiting_on_a_crawl_delay_count_as_queued_with_the_time_left(serve, tmp_path):
    """Workers take URLs from the queue, then wait for their turn: those are still to do."""
    pages = {f"/{n}": html() for n in range(6)}
    robots = Page("User-agent: *\nCrawl-delay: 0.5\n", content_type="text/plain")
    site = Site({"/robots.txt": robots, "/": html(*pages), **pages})
    srv = serve(site.app)
    out = io.StringIO()
    renderer = ProgressLine(out, tty=False, json_lines=True, interval=0.3)
    config = Config(url=srv.url + "/", output=tmp_path / "o", concurrency=8).validate()
    eventloop.run(Crawl(config, progress=renderer).run())
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    waiting = [line for line in lines if 1 <= line["fetched"] <= 4]
    assert waiting, lines
    for line in waiting:
        assert line["queued"] > 0
        assert line["interval"] >= 0.5
        assert abs(line["seconds_left"] - line["queued"] * line["interval"]) <= 0.1


def test_an_audit_says_checked_not_fetched_or_listed():
    from crawler.shell.progress import AUDIT_WORDS

    assert format_text(SNAP, words=AUDIT_WORDS).startswith("1200 checked, 1100 indexable, ")
