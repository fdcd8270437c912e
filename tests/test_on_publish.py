"""--on-publish COMMAND: run after a successful publish only, through the real CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from crawler.shell.on_publish import TIMED_OUT, run
from tests.procs import CLI, child_env, wait_for
from tests.sites import Page, Site, tree_site

WRITE_ENV = (
    'printf "%s\\n%s\\n%s\\n" "$SITEMAP_CRAWLER_PUBLISHED_DIR" "$SITEMAP_CRAWLER_PUBLISHED_URL" '
    '"$SITEMAP_CRAWLER_PUBLISHED_FILES" > "$MARKER"; echo hook-says-hi'
)


def _crawl(marker: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "crawl", *args],
        capture_output=True,
        text=True,
        env=child_env(MARKER=str(marker)),
        timeout=120,
    )


def test_the_command_runs_after_a_publish_with_what_was_published(serve, tmp_path):
    url = serve(tree_site(3).app).url + "/"
    out, marker = tmp_path / "o", tmp_path / "marker"
    proc = _crawl(marker, url, "-o", str(out), "--on-publish", WRITE_ENV, "--gzip")
    assert proc.returncode == 0, proc.stderr
    assert "hook-says-hi" in proc.stdout  # its output passes through
    lines = marker.read_text().splitlines()
    assert lines[0] == str(out.resolve())
    assert lines[1] == url + "sitemap.xml"
    files = [Path(line) for line in lines[2:]]
    assert files[-1] == out.resolve() / "sitemap.xml" and len(files) == 2
    assert all(f.is_file() for f in files)


def test_a_failing_command_exits_6_and_the_sitemap_stays_published(serve, tmp_path):
    url = serve(tree_site(3).app).url + "/"
    out, report, metrics = tmp_path / "o", tmp_path / "r.json", tmp_path / "m.prom"
    proc = _crawl(
        tmp_path / "marker", url, "-o", str(out), "--on-publish", "exit 3",
        "--report", str(report), "--metrics", str(metrics),
    )  # fmt: skip
    assert proc.returncode == 6
    err = proc.stderr.strip().splitlines()
    assert err[-1] == (
        f"sitemap-crawler: published 3 URLs to {out}, but the on-publish command failed: exit 3"
    )
    assert (out / "sitemap.xml").read_text().count("<loc>") == 3
    data = json.loads(report.read_text())
    assert data["published"] is True and data["on_publish_exit_code"] == 3
    text = metrics.read_text()
    assert f'sitemap_crawler_exit_code{{site="{url}"}} 6.0' in text
    assert f'sitemap_crawler_on_publish_exit_code{{site="{url}"}} 3.0' in text
    assert "sitemap_crawler_last_publish_timestamp_seconds" in text


def test_a_command_not_found_exits_6_and_json_logs_stay_json(serve, tmp_path):
    url = serve(tree_site(3).app).url + "/"
    proc = _crawl(
        tmp_path / "marker", url, "-o", str(tmp_path / "o"), "--log-format", "json",
        "--on-publish", "no-such-command-here --upload",
    )  # fmt: skip
    assert proc.returncode == 6
    events = [json.loads(line) for line in proc.stderr.splitlines()]
    assert any(
        e["event"] == "log" and e["message"].startswith("on-publish: ") for e in events
    )  # sh's own "not found" line, as a log event
    error, summary = events[-2], events[-1]
    assert error["event"] == "error" and error["exit_code"] == 6
    assert "not found (exit 127)" in error["message"]
    assert summary["exit_code"] == 6 and summary["on_publish_exit_code"] == 127


def test_not_run_when_nothing_is_published(serve, tmp_path):
    url = serve(Site({"/robots.txt": Page("", status=404)}).app).url + "/"
    marker = tmp_path / "marker"
    proc = _crawl(marker, url, "-o", str(tmp_path / "o"), "--on-publish", WRITE_ENV)
    assert proc.returncode == 3
    assert not marker.exists() and "hook-says-hi" not in proc.stdout


def test_a_command_past_its_timeout_is_killed():
    outcome = run("sleep 30", {}, capture=True, timeout=0.5)
    assert outcome.exit_code == TIMED_OUT and not outcome.ok
    assert outcome.why(0.5) == "timed out after 0.5 s and was killed"


def test_sigterm_while_the_command_runs_kills_it_and_exits_6(serve, tmp_path):
    url = serve(tree_site(3).app).url + "/"
    out, marker = tmp_path / "o", tmp_path / "marker"
    started = tmp_path / "started"
    proc = subprocess.Popen(
        [*CLI, "crawl", url, "-o", str(out), "-q", "--on-publish",
         f'echo $$ > "{started}"; sleep 60; echo done > "$MARKER"'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=child_env(MARKER=str(marker)),
    )  # fmt: skip
    wait_for(lambda: started.exists() and started.read_text().strip(), "the command", proc=proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 6, err  # published locally: not 130's "untouched"
    assert "but the on-publish command was interrupted (killed)" in err
    assert "published" in err and (out / "sitemap.xml").is_file()
    pid = int(started.read_text())
    wait_for(lambda: not _alive(pid), "the command to be gone")
    assert not marker.exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # not a zombie
    except (ProcessLookupError, FileNotFoundError):
        return False


def test_a_hook_may_run_sitemap_crawler_again(tmp_path):
    """What a hook is told is no setting: a hook running `sitemap-crawler audit` is neither
    refused for these variables nor handed the crawl's output and sitemap URL as its own."""
    from crawler.config import from_env
    from crawler.shell.on_publish import environment

    env = environment(tmp_path, "https://example.com/sitemap.xml", [tmp_path / "sitemap.xml"])
    assert set(env) == {
        "SITEMAP_CRAWLER_PUBLISHED_DIR",
        "SITEMAP_CRAWLER_PUBLISHED_URL",
        "SITEMAP_CRAWLER_PUBLISHED_FILES",
    }
    assert from_env(env) == {}


def test_the_credentials_and_their_origin_are_withheld_from_the_hook(serve, tmp_path):
    url = serve(tree_site(2).app).url + "/"
    marker = tmp_path / "marker"
    proc = subprocess.run(
        [*CLI, "crawl", url, "-o", str(tmp_path / "o"), "--on-publish", 'env > "$MARKER"'],
        capture_output=True,
        text=True,
        env=child_env(
            MARKER=str(marker),
            SITEMAP_CRAWLER_AUTH="u:pw-secret",
            SITEMAP_CRAWLER_AUTH_ORIGIN=url.rstrip("/"),
        ),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    hook_env = marker.read_text()
    assert "SITEMAP_CRAWLER_AUTH" not in hook_env  # neither AUTH nor AUTH_ORIGIN
    assert "pw-secret" not in hook_env
    assert "SITEMAP_CRAWLER_PUBLISHED_DIR=" in hook_env
