"""--log-format json: every line of stderr is one JSON event, through the real CLI."""

from __future__ import annotations

import json
import subprocess

from crawler.config import Config
from crawler.core.events import log_line, start_line, summary_line
from tests.procs import CLI, child_env
from tests.sites import Page, Site, tree_site


def _run(*args: str) -> tuple[int, str, list[dict]]:
    proc = subprocess.run(
        [*CLI, "crawl", *args], capture_output=True, text=True, env=child_env(), timeout=120
    )
    events = [json.loads(line) for line in proc.stderr.splitlines()]  # each line parses
    return proc.returncode, proc.stdout, events


def test_a_crawl_logs_only_json_events(serve, tmp_path):
    srv = serve(tree_site(7).app)
    code, out, events = _run(
        srv.url + "/", "-o", str(tmp_path / "o"), "--log-format", "json",
        "--auth", "alice:s3cret-pass", "--insecure",
    )  # fmt: skip
    assert code == 0
    assert out == ""  # the summary event says what the human lines would
    assert events[0]["event"] == "start"
    settings = events[0]["settings"]
    assert settings["url"] == srv.url + "/" and settings["log_format"] == "json"
    assert "s3cret-pass" not in json.dumps(events)
    kinds = {e["event"] for e in events}
    assert kinds <= {"start", "progress", "log", "summary"}
    logs = [e for e in events if e["event"] == "log"]
    assert any(e["message"].startswith("robots.txt:") and e["level"] == "info" for e in logs)
    assert any(e["level"] == "warning" and "--insecure" in e["message"] for e in logs)
    last = events[-1]
    assert last["event"] == "summary" and last["exit_code"] == 0
    assert last["published"] is True and last["urls_listed"] == 7
    assert last["sitemap_url"].endswith("/sitemap.xml") and last["files"]


def test_a_failed_crawl_ends_with_an_error_and_its_exit_code(serve, tmp_path):
    srv = serve(Site({"/robots.txt": Page("", status=404)}).app)  # the start URL: 404
    code, out, events = _run(srv.url + "/", "-o", str(tmp_path / "o"), "--log-format", "json")
    assert code == 3 and out == ""
    assert events[0]["event"] == "start"
    error, summary = events[-2], events[-1]
    assert error["event"] == "error" and error["exit_code"] == 3 and error["message"]
    assert summary == {**summary, "event": "summary", "exit_code": 3, "published": False}
    assert "pages_fetched" in summary


def test_a_config_error_is_an_error_event(tmp_path):
    code, _, events = _run(
        "http://127.0.0.1:9/", "--concurrency", "0", "-o", str(tmp_path / "o"),
        "--log-format", "json",
    )  # fmt: skip
    assert code == 2
    assert [e["event"] for e in events] == ["error", "summary"]
    assert "concurrency" in events[0]["message"]
    assert events[0]["exit_code"] == 2 and events[1] == {"event": "summary", "exit_code": 2}


def test_text_logs_are_unchanged(serve, tmp_path):
    srv = serve(tree_site(3).app)
    code, out, _ = (lambda p: (p.returncode, p.stdout, None))(
        subprocess.run(
            [*CLI, "crawl", srv.url + "/", "-o", str(tmp_path / "o")],
            capture_output=True, text=True, env=child_env(), timeout=120,
        )
    )  # fmt: skip
    assert code == 0 and "published 3 URLs" in out


def test_event_lines():
    warning = {"event": "log", "level": "warning", "message": "x"}
    assert json.loads(log_line("warning: x")) == warning
    assert json.loads(log_line("robots.txt: none")) == {
        "event": "log", "level": "info", "message": "robots.txt: none",
    }  # fmt: skip
    config = Config(url="http://127.0.0.1/", header=("X-Token: abcdefghijkl",))
    start = json.loads(start_line(config, "1.0", ["abcdefghijkl"]))
    assert start["settings"]["header"] == ["X-Token: ***"]
    assert start["settings"]["output"] == str(config.output)
    summary = json.loads(summary_line({"urls_listed": 2, "broken_links": [{}, {}]}, 0))
    assert summary == {"event": "summary", "urls_listed": 2, "broken_links": 2, "exit_code": 0}
