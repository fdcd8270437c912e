"""The container job's entrypoint (docker/entrypoint.sh), run here without Docker: a run
stopped by SIGTERM is resumed by the next one, which publishes the full sitemap."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.procs import child_env, cli_shim, wait_for
from tests.sites import read_published, tree_site

ENTRYPOINT = Path(__file__).resolve().parents[1] / "docker" / "entrypoint.sh"
PAGES = 400


def _job_env(url: str, tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """The entrypoint's environment for a crawl of url: (env, out, state folder)."""
    config = tmp_path / "job.toml"
    config.write_text(f'url = "{url}/"\nconcurrency = 2\nquiet = true\n')
    out, state = tmp_path / "out", tmp_path / "state"
    out.mkdir()
    state.mkdir()
    # The entrypoint calls `sitemap-crawler` by name: a shim first on PATH makes that this
    # checkout's CLI under the interpreter running the tests, installed script or not.
    shim = cli_shim(tmp_path / "bin")
    env = child_env(
        PATH=os.pathsep.join([str(shim), os.environ.get("PATH", "")]),
        SITEMAP_CRAWLER_CONFIG=str(config),
        SITEMAP_CRAWLER_OUT=str(out),
        SITEMAP_CRAWLER_STATE_DIR=str(state),
    )
    return env, out, state


def test_stopped_job_resumes_next_time(serve, tmp_path, xsd):
    site = tree_site(PAGES, 0.01)
    srv = serve(site.app)
    env, out, state = _job_env(srv.url, tmp_path)

    job = subprocess.Popen(["sh", str(ENTRYPOINT)], env=env, stderr=subprocess.PIPE, text=True)
    wait_for(
        lambda: len(site.requests) >= PAGES // 3,
        f"the job's crawl to make {PAGES // 3} requests",
        proc=job,
    )
    job.send_signal(signal.SIGTERM)
    _, err = job.communicate(timeout=30)
    assert job.returncode == 130, err
    assert (state / "crawl.sqlite.unfinished").exists()
    assert not (out / "sitemap.xml").exists()
    first = len(site.requests)

    job = subprocess.run(
        ["sh", str(ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=60
    )
    assert job.returncode == 0, job.stderr
    assert len(read_published(out, xsd).locs) == PAGES
    assert not (state / "crawl.sqlite.unfinished").exists()
    assert (state / "last-report.json").exists()
    assert len(site.requests) - first < PAGES  # resumed, not started over


def test_a_job_started_while_one_runs_leaves_it_alone(serve, tmp_path, xsd):
    """Two overlapping jobs: the second finds the first busy (exit 75) and goes, leaving the
    first's marker, so that the first, stopped later, is still resumed, not started over."""
    site = tree_site(PAGES, 0.01)
    srv = serve(site.app)
    env, out, state = _job_env(srv.url, tmp_path)
    marker = state / "crawl.sqlite.unfinished"

    first = subprocess.Popen(["sh", str(ENTRYPOINT)], env=env, stderr=subprocess.PIPE, text=True)
    wait_for(
        lambda: len(site.requests) >= PAGES // 4,
        f"the first job's crawl to make {PAGES // 4} requests",
        proc=first,
    )
    second = subprocess.run(
        ["sh", str(ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 75, second.stderr
    assert "another sitemap-crawler run is writing to" in second.stderr
    assert "another run is still going" in second.stderr
    assert marker.exists() and (state / "crawl.sqlite").exists()
    assert first.poll() is None, "the first job ended before the second one started"

    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=30)
    assert first.returncode == 130, err
    assert marker.exists()
    stopped = len(site.requests)

    job = subprocess.run(
        ["sh", str(ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=60
    )
    assert job.returncode == 0, job.stderr
    assert len(read_published(out, xsd).locs) == PAGES
    assert not marker.exists()
    assert len(site.requests) - stopped < PAGES  # resumed, not started over
