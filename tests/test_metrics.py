"""--metrics FILE: the run's figures in the Prometheus text format, through the real CLI."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from crawler.core.metrics import last_publish_of, render
from tests.procs import CLI, child_env
from tests.sites import Page, Site, html, tree_site


def _crawl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "crawl", *args], capture_output=True, text=True, env=child_env(), timeout=120
    )


def _samples(path: Path, site: str) -> dict[tuple[str, tuple], float]:
    """{(name, labels): value}, without the `site` label every sample carries (asserted)."""
    text = path.read_text()
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    assert all(s.labels.pop("site") == site for s in samples)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}


def test_a_published_then_a_failed_run_keep_the_last_publish_time(serve, tmp_path):
    pages: dict = {"/robots.txt": Page("", status=404), "/": html("/a", "/gone"), "/a": html()}
    site = Site(pages)
    url = serve(site.app).url + "/"
    metrics = tmp_path / "m" / "sitemap.prom"
    metrics.parent.mkdir()  # the node exporter's textfile folder
    before = time.time()
    first = _crawl(url, "-o", str(tmp_path / "o"), "--metrics", str(metrics), "-q")
    assert first.returncode == 0, first.stderr
    got = _samples(metrics, url)
    assert got[("sitemap_crawler_exit_code", ())] == 0
    assert got[("sitemap_crawler_published", ())] == 1
    assert got[("sitemap_crawler_pages_fetched", ())] == 3
    assert got[("sitemap_crawler_urls_listed", ())] == 2
    assert got[("sitemap_crawler_urls_excluded", (("reason", "http_error"),))] == 1
    assert got[("sitemap_crawler_requests_failed", ())] == 0
    assert got[("sitemap_crawler_urls_changed", (("change", "added"),))] == 2
    assert got[("sitemap_crawler_urls_changed", (("change", "removed"),))] == 0
    assert got[("sitemap_crawler_duration_seconds", ())] > 0
    published_at = got[("sitemap_crawler_last_publish_timestamp_seconds", ())]
    assert before <= published_at <= time.time()
    assert got[("sitemap_crawler_last_run_timestamp_seconds", ())] == published_at
    assert not list(metrics.parent.glob("*.tmp"))

    pages["/"] = Page("gone", status=404)  # the start URL fails: exit 3, nothing published
    second = _crawl(url, "-o", str(tmp_path / "o"), "--metrics", str(metrics), "-q")
    assert second.returncode == 3, second.stderr
    got = _samples(metrics, url)
    assert got[("sitemap_crawler_exit_code", ())] == 3
    assert got[("sitemap_crawler_published", ())] == 0
    assert got[("sitemap_crawler_urls_listed", ())] == 0
    assert ("sitemap_crawler_urls_changed", (("change", "added"),)) not in got
    assert got[("sitemap_crawler_last_publish_timestamp_seconds", ())] == published_at
    assert got[("sitemap_crawler_last_run_timestamp_seconds", ())] > published_at


def test_a_run_that_never_published_has_no_last_publish_time(serve, tmp_path):
    url = serve(Site({"/robots.txt": Page("", status=404)}).app).url + "/"
    metrics = tmp_path / "sitemap.prom"
    proc = _crawl(url, "-o", str(tmp_path / "o"), "--metrics", str(metrics), "-q")
    assert proc.returncode == 3
    got = _samples(metrics, url)
    assert got[("sitemap_crawler_exit_code", ())] == 3
    assert ("sitemap_crawler_last_publish_timestamp_seconds", ()) not in got


def test_a_metrics_path_that_cannot_be_written_is_refused_before_any_request(serve, tmp_path):
    site = tree_site(3)
    url = serve(site.app).url + "/"
    folder = tmp_path / "prom"
    folder.mkdir()
    proc = _crawl(url, "-o", str(tmp_path / "o"), "--metrics", str(folder), "-q")
    assert proc.returncode == 2
    assert f"metrics file {folder} is a folder" in proc.stderr
    assert proc.stderr.count("\n") == 1 and site.requests == []


def test_render_and_read_back():
    text = render(
        {"urls_listed": 5, "reasons": {"robots_txt": 2}, "published": True},
        exit_code=0, seconds=1.5, ended=1000.0, last_publish=1000.0,
    )  # fmt: skip
    assert last_publish_of(text) == 1000.0
    assert 'sitemap_crawler_urls_excluded{reason="robots_txt"} 2.0' in text
    labelled = render(
        {"reasons": {"robots_txt": 2}}, exit_code=0, seconds=1, ended=5, last_publish=5,
        labels={"site": "https://example.com/", "index": "3"},
    )  # fmt: skip
    assert 'sitemap_crawler_exit_code{index="3",site="https://example.com/"} 0.0' in labelled
    assert (
        'sitemap_crawler_urls_excluded{index="3",reason="robots_txt",site="https://example.com/"}'
        " 2.0" in labelled
    )
    assert last_publish_of(labelled) == 5
    assert last_publish_of(render({}, exit_code=2, seconds=0, ended=5, last_publish=None)) is None
    assert last_publish_of("not {the format") is None
