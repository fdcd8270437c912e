"""The nightly job, `sitemap-crawler job` (what the container runs), through the CLI in child
processes against a slow local site: a run stopped by SIGTERM or killed is resumed by the
next one, which publishes the full sitemap; a finished run, a run of other settings and a run
that ended without publishing are not resumed; a run started while one is going exits 75
and leaves it alone. The resume decision is asked of the state file (CrawlState.peek)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from crawler.config import Config, fingerprint
from crawler.shell.state import CrawlState
from tests.procs import CLI, child_env, missing, wait_for
from tests.sites import Site, html, read_published, tree_site

PAGES = 400


def _env(url: str, **extra: str) -> dict[str, str]:
    """A job configured by the environment only."""
    return child_env(
        SITEMAP_CRAWLER_URL=url + "/",
        SITEMAP_CRAWLER_CONCURRENCY="2",
        SITEMAP_CRAWLER_WORKERS="0",
        **extra,
    )


def _start(data: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "job", "--data", str(data), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _job(data: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "job", "--data", str(data), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _stop_midway(site: Site, job: subprocess.Popen[str], sig: int = signal.SIGTERM) -> None:
    start = len(site.requests)
    wait_for(
        lambda: len(site.requests) - start >= PAGES // 3,
        f"the job's crawl to make {PAGES // 3} requests",
        proc=job,
    )
    job.send_signal(sig)
    _, err = job.communicate(timeout=30)
    assert job.returncode == (130 if sig == signal.SIGTERM else -sig), err


def test_stopped_job_resumes_next_time(serve, tmp_path, xsd):
    site = tree_site(PAGES, 0.01)
    srv = serve(site.app)
    data, env = tmp_path / "data", _env(srv.url)

    _stop_midway(site, _start(data, env))
    assert (data / "state" / "crawl.sqlite").is_file()
    assert not (data / "out" / "sitemap.xml").exists()
    first = len(site.requests)

    job = _job(data, env)
    assert job.returncode == 0, job.stderr
    assert "job: resuming the stopped crawl saved in" in job.stderr
    assert len(read_published(data / "out", xsd).locs) == PAGES
    assert (data / "state" / "last-report.json").is_file()
    assert (data / "state" / "last-decisions.jsonl").is_file()
    assert len(site.requests) - first < PAGES  # resumed, not started over

    # a finished crawl is not resumed: the next night crawls afresh
    before = len(site.requests)
    job = _job(data, env)
    assert job.returncode == 0, job.stderr
    assert "job: crawling" in job.stderr and "from its history" in job.stderr
    assert len(site.requests) - before >= PAGES
    assert len(read_published(data / "out", xsd).locs) == PAGES


def test_a_resumed_job_says_so_in_its_json_logs(serve, tmp_path, xsd):
    """With JSON logs (the container's) the start event's settings are the only record of a
    resume: they say resume true on the run that resumes, false on the fresh one after it,
    and the job's line is a log event."""
    site = tree_site(PAGES, 0.01)
    srv = serve(site.app)
    data, env = tmp_path / "data", _env(srv.url, SITEMAP_CRAWLER_LOG_FORMAT="json")
    _stop_midway(site, _start(data, env))

    for resumed in (True, False):
        job = _job(data, env)
        assert job.returncode == 0, job.stderr
        events = [json.loads(line) for line in job.stderr.splitlines()]
        assert events[0]["event"] == "start" and events[0]["settings"]["resume"] is resumed
        said = [e["message"] for e in events if e["event"] == "log"]
        assert any(m.startswith("job: resuming" if resumed else "job: crawling") for m in said)
        summary = events[-1]
        assert (summary["pages_fetched_this_run"] < summary["pages_fetched"]) is resumed
        assert len(read_published(data / "out", xsd).locs) == PAGES


def test_a_killed_job_resumes_and_other_settings_start_afresh(serve, tmp_path, xsd):
    site = tree_site(PAGES, 0.03)
    srv = serve(site.app)
    data, env = tmp_path / "data", _env(srv.url)
    state = data / "state" / "crawl.sqlite"
    config = Config(url=srv.url + "/", concurrency=2, workers=0, state=state)

    job = _start(data, env)
    # the state file says it holds a stopped crawl once its first checkpoint is written
    wait_for(lambda: CrawlState.peek(state, fingerprint(config)), "a checkpoint", proc=job)
    job.kill()  # as the OOM killer does: no last checkpoint, no clean-up
    job.communicate(timeout=30)
    assert CrawlState.peek(state, fingerprint(config))
    assert not CrawlState.peek(state, fingerprint(Config(url=srv.url + "/", max_depth=3)))
    assert not CrawlState.peek(tmp_path / "missing.sqlite", fingerprint(config))
    killed = len(site.requests)
    done = _job(data, env)
    assert done.returncode == 0, done.stderr
    assert "job: resuming the stopped crawl" in done.stderr
    assert len(read_published(data / "out", xsd).locs) == PAGES
    assert len(site.requests) - killed < PAGES

    # stopped again, then run with other settings (on the command line here): a fresh
    # crawl of those, not a refused resume
    _stop_midway(site, _start(data, env))
    before = len(site.requests)
    done = _job(data, env, "--max-depth", "3", "--force")  # --force: the sitemap shrinks
    assert done.returncode == 0, done.stderr
    assert "job: crawling" in done.stderr and "resuming" not in done.stderr
    assert len(read_published(data / "out", xsd).locs) == 15  # 1 + 2 + 4 + 8
    assert site.paths[before:].count("/") == 1  # started over from the start URL


def test_a_stopped_job_holding_a_listing_the_sitemap_cannot_hold_starts_afresh(
    serve, tmp_path, xsd
):
    """A stopped crawl whose state holds a listing the sitemap cannot hold (a damaged file)
    can't be resumed (replay refuses it, exit 2): the job, which no one watches, starts
    afresh instead of failing every night (CrawlState.peek says no resume)."""
    site = tree_site(PAGES, 0.01)
    srv = serve(site.app)
    data, env = tmp_path / "data", _env(srv.url)
    state = data / "state" / "crawl.sqlite"
    config = Config(url=srv.url + "/", concurrency=2, workers=0, state=state)
    _stop_midway(site, _start(data, env))
    assert CrawlState.peek(state, fingerprint(config))
    with contextlib.closing(sqlite3.connect(state)) as conn, conn:
        damaged = "UPDATE listings SET priority = 5.0 WHERE seq = (SELECT min(seq) FROM listings)"
        assert conn.execute(damaged).rowcount == 1
    assert not CrawlState.peek(state, fingerprint(config))
    before = len(site.requests)
    job = _job(data, env)
    assert job.returncode == 0, job.stderr
    assert "job: crawling" in job.stderr and "resuming" not in job.stderr
    assert len(site.requests) - before >= PAGES  # started over
    assert len(read_published(data / "out", xsd).locs) == PAGES


def test_a_job_that_published_nothing_is_not_resumed(serve, tmp_path, xsd):
    site = Site({"/": html("/a"), "/a": html("/"), "/robots.txt": ""})
    srv = serve(site.app)
    data, env = tmp_path / "data", _env(srv.url, SITEMAP_CRAWLER_QUIET="true")
    site.pages["/"] = html(head='<meta name="robots" content="noindex, nofollow">')
    job = _job(data, env)
    assert job.returncode == 3, job.stderr
    site.pages["/"] = html("/a")
    job = _job(data, env)
    assert job.returncode == 0, job.stderr
    assert len(read_published(data / "out", xsd).locs) == 2


def test_a_job_started_while_one_runs_leaves_it_alone(serve, tmp_path, xsd):
    """Two overlapping jobs: the second finds the first busy (exit 75) and goes, leaving the
    first's state, so that the first, stopped later, is still resumed, not started over."""
    site = tree_site(PAGES, 0.03)
    srv = serve(site.app)
    data, env = tmp_path / "data", _env(srv.url)

    first = _start(data, env)
    wait_for(
        lambda: len(site.requests) >= PAGES // 4,
        f"the first job's crawl to make {PAGES // 4} requests",
        proc=first,
    )
    second = _job(data, env)
    assert second.returncode == 75, second.stderr
    assert "another sitemap-crawler run is writing to" in second.stderr
    assert second.stderr.count("\n") == 1, second.stderr  # refused, not "resuming" first
    assert first.poll() is None, "the first job ended before the second one started"

    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=30)
    assert first.returncode == 130, err
    assert "; the next job run resumes it" in err and "--resume" not in err, err
    stopped = len(site.requests)
    job = _job(data, env)
    assert job.returncode == 0, job.stderr
    assert "resuming" in job.stderr
    assert len(read_published(data / "out", xsd).locs) == PAGES
    assert len(site.requests) - stopped < PAGES  # resumed, not started over


def test_the_job_reads_its_config_file_under_the_environment(serve, tmp_path, xsd):
    site = tree_site(31)
    srv = serve(site.app)
    config = tmp_path / "job.toml"
    config.write_text(f'url = "{srv.url}/"\nmax_depth = 1\ngzip = true\nquiet = true\n')
    data = tmp_path / "data"
    env = child_env(SITEMAP_CRAWLER_CONFIG=str(config), SITEMAP_CRAWLER_MAX_DEPTH="2")
    job = _job(data, env)
    assert job.returncode == 0, job.stderr
    published = read_published(data / "out", xsd)
    assert len(published.locs) == 7  # the environment's max_depth over the file's
    assert any(f.name.endswith(".gz") for f in published.files)  # the file's gzip
    job = _job(data, env, "--max-depth", "0", "--force")  # the command line over both
    assert job.returncode == 0, job.stderr
    assert len(read_published(data / "out", xsd).locs) == 1


def test_a_data_folder_that_is_a_file_is_named_in_one_line(tmp_path):
    data = tmp_path / "data"
    data.write_text("not a folder")
    done = _job(data, child_env(SITEMAP_CRAWLER_URL="http://127.0.0.1:9/"))
    assert done.returncode == 5, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"data folder {data / 'out'}" in lines[0] and "--user" in lines[0]


def test_an_unwritable_out_folder_says_to_chown_it_or_run_as_its_owner(
    tmp_path, monkeypatch, capsys
):
    """As root here permissions are not enforced: the check (os.access) is made to say no."""
    from crawler.cli import main

    real = os.access
    out = tmp_path / "data" / "out"
    monkeypatch.setattr(os, "access", lambda p, m, **kw: Path(p) != out and real(p, m, **kw))
    code = main(["job", "--data", str(tmp_path / "data"), "http://127.0.0.1:9/", "--quiet"])
    assert code == 5
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"data folder {out} (Permission denied)" in err
    assert "chown it" in err and "--user UID:GID" in err and f"uid {os.getuid()}" in err


def test_the_job_writes_json_logs_and_metrics_as_crawl_does(serve, tmp_path):
    """The container's config sets log_format = "json": the job's stderr is JSON lines only,
    from the start event to the summary, and --metrics is written."""
    site = Site({"/": html("/a"), "/a": html()})
    srv = serve(site.app)
    data, metrics = tmp_path / "data", tmp_path / "metrics.prom"
    env = _env(srv.url, SITEMAP_CRAWLER_LOG_FORMAT="json")
    done = _job(data, env, "--metrics", str(metrics))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines()]
    assert events[0]["event"] == "start" and events[-1]["event"] == "summary"
    assert events[0]["settings"]["output"] == str(data / "out")
    assert events[-1]["exit_code"] == 0
    assert "_last_publish_timestamp_seconds" in metrics.read_text()

    (tmp_path / "file").write_text("")
    failed = _job(tmp_path / "file", env)
    assert failed.returncode == 5
    events = [json.loads(line) for line in failed.stderr.splitlines()]
    assert [e["event"] for e in events] == ["start", "error", "summary"], failed.stderr
    assert "data folder" in events[1]["message"]


def test_the_job_writes_nothing_outside_its_data_folder(serve, tmp_path):
    """The image runs with a read-only root filesystem: here the whole root (even /tmp) is
    made read-only in a mount namespace of its own (root and unshare(1) needed), with only
    the data folder, on a separate tmpfs, writable."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        missing("needs root and unshare(1) to make a read-only root (apt-get install util-linux)")
    site = Site({"/": html("/a"), "/a": html()})
    srv = serve(site.app)
    data = f"/dev/shm/sitemap-crawler-ro-test-{os.getpid()}"
    script = (
        f"mount -t tmpfs tmpfs {data} && mount -o remount,bind,ro / && cd / && "
        f"! touch /tmp/probe 2>/dev/null && {sys.executable} -m crawler.cli job "
        f"--data {data} --metrics {data}/state/metrics.prom"
    )
    os.makedirs(data, exist_ok=True)
    try:
        probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
        if probe.returncode != 0:
            missing(f"unshare -m refused: {probe.stderr.decode().strip()}")
        env = _env(srv.url, PYTHONDONTWRITEBYTECODE="1", HOME="/nonexistent")
        done = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c",
             script + f" ; ls -A {data}/out {data}/state >&2"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert "published 2 URLs" in done.stdout, done.stderr
        assert ".sitemap-manifest.json" in done.stderr and "metrics.prom" in done.stderr
    finally:
        os.rmdir(data)


def test_a_data_folder_it_cannot_make_its_out_folder_in_is_the_one_named(
    tmp_path, monkeypatch, capsys
):
    """A host folder owned by another user, mounted at /data: /data is named, not /data/out."""
    from crawler.cli import main

    data = tmp_path / "data"
    data.mkdir()
    real = Path.mkdir

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        if self.parent == data:
            raise PermissionError(13, "Permission denied", str(self))
        real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refuse)
    code = main(["job", "--data", str(data), "http://127.0.0.1:9/", "--quiet"])
    assert code == 5
    err = capsys.readouterr().err.strip()
    assert f"data folder {data} (Permission denied)" in err and "chown it" in err, err
