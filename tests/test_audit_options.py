"""The audit takes the crawl's options that change a verdict (issue #23, item 4): --render,
--robots-from, --max-crawl-delay, --max-retry-after (--strip-params: test_audit_as_written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli import main
from tests.sites import Page, Site, html
from tests.spa import spa_app

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def _urlset(*locs: str) -> str:
    urls = "".join(f"<url><loc>{loc}</loc></url>\n" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n{urls}</urlset>\n'


def _run(tmp_path: Path, *args: str) -> tuple[int, set[tuple[str, str | None]]]:
    out = tmp_path / "audit.json"
    code = main(["audit", *args, "-q", "--json", str(out), "--retries", "0"])
    findings = json.loads(out.read_text())["findings"]
    return code, {(f["code"], f["url"]) for f in findings}


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("a_browser")
def test_render_judges_an_app_as_the_rendering_crawl_would(serve, tmp_path):
    base: list[str] = []

    def sitemap(app: web.Application) -> None:
        async def answer(request: web.Request) -> web.Response:
            text = _urlset(*(base[0] + p for p in ("/", "/about", "/about-us", "/hidden")))
            return web.Response(text=text, content_type="application/xml")

        app.router.add_get("/sitemap.xml", answer)

    srv = serve(spa_app(extra=sitemap))
    base.append(srv.url)
    code, raw = _run(tmp_path, srv.url + "/sitemap.xml")
    assert ("noindex", srv.url + "/hidden") not in raw
    code, rendered = _run(
        tmp_path, srv.url + "/sitemap.xml", "--render", "always", "--render-timeout", "4"
    )
    assert code == 1
    assert ("noindex", srv.url + "/hidden") in rendered
    assert ("canonicalised", srv.url + "/about-us") in rendered


def test_robots_from_and_the_politeness_caps_are_the_audits_too(serve, tmp_path):
    site = Site({"/robots.txt": Page("User-agent: *\nDisallow: /a\n", content_type="text/plain")})
    srv = serve(site.app)
    site.pages.update(
        {
            "/a": html(),
            "/b": html(),
            "/sitemap.xml": Page(_urlset(srv.url + "/a", srv.url + "/b"), content_type="text/xml"),
        }
    )
    code, found = _run(tmp_path, srv.url + "/sitemap.xml")
    assert ("blocked_by_robots", srv.url + "/a") in found
    rules = tmp_path / "production-robots.txt"
    rules.write_text("User-agent: *\nAllow: /\nCrawl-delay: 0.01\n")
    site.requests.clear()
    code, found = _run(
        tmp_path, srv.url + "/sitemap.xml", "--robots-from", str(rules),
        "--max-crawl-delay", "0", "--max-retry-after", "1",
    )  # fmt: skip
    assert code == 0, found
    assert not {c for c, _ in found} & {"blocked_by_robots", "sitemap_blocked"}
    assert "/robots.txt" not in site.paths and "/a" in site.paths


def test_output_paths_are_checked_before_the_first_request(serve, tmp_path, capsys):
    site = Site({"/sitemap.xml": Page(_urlset("http://127.0.0.1/a"), content_type="text/xml")})
    srv = serve(site.app)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for option, path in (
        ("--report", blocker / "audit.json"),
        ("--html", tmp_path / "folder"),
        ("--report", tmp_path / "no-such-folder" / "audit.json"),
    ):
        (tmp_path / "folder").mkdir(exist_ok=True)
        code = main(["audit", srv.url + "/sitemap.xml", "-q", option, str(path)])
        err = capsys.readouterr().err
        assert code == 2, err
        assert err.count("\n") == 1 and f"{option} file {path}" in err
        assert site.requests == []
