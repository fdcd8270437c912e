"""Stop, crash, resume (issue #5): a crawl stopped by SIGTERM or killed by SIGKILL and then
resumed from its state file publishes the same sitemap as an uninterrupted crawl, without
refetching what it had already fetched, and the previously published sitemap survives."""

from __future__ import annotations

import collections
import signal
from pathlib import Path

import pytest

from crawler.cli import main
from tests.procs import wait_for
from tests.sites import Site, crawl_process, read_published, tree_site

PAGES = 3000


def _site() -> Site:
    return tree_site(PAGES, 0.002, lastmod=True)


def _crawl_args(url: str, out: Path, state: Path) -> list[str]:
    return [
        "crawl",
        url + "/",
        "-o",
        str(out),
        "--state",
        str(state),
        "--concurrency",
        "4",
        "--quiet",
    ]


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, xsd):
    """An uninterrupted crawl of the same site: the URL set and lastmods to match."""
    from tests.conftest import LiveServer

    server = LiveServer(_site().app).start()
    try:
        tmp = tmp_path_factory.mktemp("reference")
        assert main(_crawl_args(server.url, tmp / "out", tmp / "state.sqlite")) == 0
        published = read_published(tmp / "out", xsd)
    finally:
        server.stop()
    base = server.url
    return {loc.replace(base, ""): lastmod for loc, lastmod in published.lastmods.items()}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_interrupted_crawl_resumes_to_the_same_sitemap(serve, tmp_path, xsd, reference, sig):
    site = _site()
    srv = serve(site.app)
    out, state = tmp_path / "out", tmp_path / "state.sqlite"
    out.mkdir()
    (out / "sitemap.xml").write_bytes(b"<previously published/>")
    before = _files(out)

    proc = crawl_process(*_crawl_args(srv.url, out, state)[1:])
    wait_for(
        lambda: len(site.requests) >= PAGES // 2,
        f"the crawl to make {PAGES // 2} requests",
        proc=proc,
    )
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == (130 if sig == signal.SIGTERM else -signal.SIGKILL), err
    assert _files(out) == before, "the interrupted run touched the published sitemap"
    fetched_first = collections.Counter(site.paths)
    assert PAGES // 3 < sum(fetched_first.values()) < PAGES

    code = main([*_crawl_args(srv.url, out, state), "--resume"])
    assert code == 0
    published = read_published(out, xsd)
    got = {loc.replace(srv.url, ""): lastmod for loc, lastmod in published.lastmods.items()}
    assert got == reference
    assert len(published.locs) == PAGES

    counts = collections.Counter(path for path in site.paths if path != "/robots.txt")
    refetched = sum(n - 1 for n in counts.values() if n > 1)
    if sig == signal.SIGTERM:
        assert refetched == 0, "a gracefully stopped crawl refetched pages"
    else:
        # only work not yet checkpointed (at most ~2 s of it) is done again
        assert refetched < PAGES // 4


def test_resume_refuses_another_start_url_or_config(serve, tmp_path, capsys):
    site = Site({"/": "<p>home</p>", "/docs/": "<p>docs</p>"})
    srv = serve(site.app)
    state = tmp_path / "s.sqlite"

    def crawl(start: str, *extra: str) -> int:
        code = main(
            ["crawl", srv.url + start, "-o", str(tmp_path / "o"), "--state", str(state), *extra]
        )
        return code

    assert crawl("/") == 0
    capsys.readouterr()
    assert crawl("/docs/", "--resume") == 2
    assert "is for a crawl of" in capsys.readouterr().err
    assert crawl("/", "--resume", "--max-depth", "1") == 2
    assert "configuration" in capsys.readouterr().err
    # settings that do not change the result may differ
    assert crawl("/", "--resume", "--concurrency", "2", "--gzip") == 0


def test_resume_needs_state(capsys):
    assert main(["crawl", "http://127.0.0.1:1/", "--resume"]) == 2
    assert "--state" in capsys.readouterr().err
