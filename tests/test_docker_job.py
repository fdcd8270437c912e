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


def test_stopped_job_resumes_next_time(serve, tmp_path, xsd):
    site = tree_site(PAGES, 0.01)
    srv = serve(site.app)
    config = tmp_path / "job.toml"
    config.write_text(f'url = "{srv.url}/"\nconcurrency = 2\nquiet = true\n')
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
