"""The container job's entrypoint (docker/entrypoint.sh), run here without Docker: a run
stopped by SIGTERM is resumed by the next one, which publishes the full sitemap."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

from aiohttp import web

from tests.sites import Page, Site, read_published

ENTRYPOINT = Path(__file__).resolve().parents[1] / "docker" / "entrypoint.sh"
PAGES = 400


def _site() -> Site:
    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(0.01)
        n = int(request.path.strip("/") or 0)
        links = "".join(f'<a href="/{m}">{m}</a>' for m in (2 * n + 1, 2 * n + 2) if m < PAGES)
        return web.Response(text=f"<p>{n}</p>{links}", content_type="text/html")

    return Site({"/robots.txt": Page("", status=404)}, fallback=page)


def test_stopped_job_resumes_next_time(serve, tmp_path, xsd):
    site = _site()
    srv = serve(site.app)
    config = tmp_path / "job.toml"
    config.write_text(f'url = "{srv.url}/"\nconcurrency = 2\nquiet = true\n')
    out, state = tmp_path / "out", tmp_path / "state"
    out.mkdir()
    state.mkdir()
    env = {
        **os.environ,
        "SITEMAP_CRAWLER_CONFIG": str(config),
        "SITEMAP_CRAWLER_OUT": str(out),
        "SITEMAP_CRAWLER_STATE_DIR": str(state),
    }

    job = subprocess.Popen(["sh", str(ENTRYPOINT)], env=env, stderr=subprocess.PIPE, text=True)
    while len(site.requests) < PAGES // 3:
        time.sleep(0.05)
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
