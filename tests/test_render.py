"""Rendering single-page apps in headless Chromium (Playwright): what the raw crawl cannot
see, found by the same extraction, under the crawl's own rules.

Every test here drives Debian's chromium through Playwright; without either, they skip
locally and fail in CI (tests/procs.py missing), where .ci/run installs both.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from aiohttp import web

from tests.sites import assert_spaced
from tests.spa import FEED_PAGES, as_json, feed_items, paths, spa_app

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("a_browser")]


def _decisions(path: Path) -> dict[str, dict]:
    return {line["url"].split("/", 3)[3]: line for line in as_json(path)}


def test_raw_crawl_of_an_app_finds_one_page(serve, crawl, tmp_path):
    srv = serve(spa_app())
    code, pub, _, _ = crawl(srv.url + "/", "--workers", "0")
    assert code == 0
    assert pub.locs == [srv.url + "/"]


def test_rendered_crawl_finds_every_route_with_the_right_decisions(
    serve, crawl, tmp_path, monkeypatch
):
    # the scroll waits 0.1 s for the feed's request to begin, then 0.5 s of quiet: a
    # chromium starved by the other test process fired its scroll handler later, and the
    # feed was judged finished early (CI dry runs under -n 2). What is tested here is what
    # a scroll finds, not how soon: the waits get the time a starved browser takes
    from crawler.shell import browser

    monkeypatch.setattr(browser, "SETTLE_SECONDS", 0.5)
    monkeypatch.setattr(browser, "QUIET_SECONDS", 1.0)
    log: list[tuple[float, str]] = []
    srv = serve(spa_app(log))
    report, decisions = tmp_path / "report.json", tmp_path / "decisions.jsonl"
    code, pub, out, _ = crawl(
        srv.url + "/",
        "--render", "always", "--render-timeout", "12",
        "--report", str(report), "--decisions", str(decisions),
    )  # fmt: skip
    assert code == 0, out
    scrolled = [item for page in range(4) for item in feed_items(page)]  # 1 + 3 scrolls
    expected = {
        "", "about", "products", "products/1", "products/2", "feed", "poll", "polled",
        *(item.lstrip("/") for item in scrolled),
    }  # fmt: skip
    assert {loc.split("/", 3)[3] for loc in pub.locs} == expected
    judged = _decisions(decisions)
    assert judged["hidden"]["reason"] == "meta_noindex"
    assert "robots meta differs once rendered" in judged["hidden"]["detail"]
    assert judged["about-us"]["reason"] == "canonicalised"
    assert judged["about-us"]["detail"].endswith("/about")
    assert "did not settle within render_timeout 12 s" in judged["poll"]["detail"], [
        (round(t - log[0][0], 2), p) for t, p in log if "ping" in p or "poll" in p
    ]
    # the bounded scroll: the feed's later pages were never asked for
    asked = paths(log)
    assert "/api/feed?page=3" in asked
    assert f"/api/feed?page={FEED_PAGES - 1}" not in asked and "/api/feed?page=4" not in asked
    # robots.txt's disallowed endpoint and the image never left the browser
    assert not [p for p in asked if p.startswith("/private/")]
    assert "/logo.png" not in asked
    # the document is the crawl's own answer (one request per page), the bundle is cached
    assert asked.count("/") == 1 and asked.count("/products") == 1
    assert asked.count("/static/app.js") == 1
    render = json.loads(report.read_text())["render"]
    assert render["mode"] == "always"
    assert render["blocked_robots_txt"] >= 1 and render["blocked_resource_type"] >= 1
    # the poll never settles; on a machine too slow for 12 s another page may not either: each
    # is counted once, and its decision says so (how many is the machine's, not the crawl's)
    unsettled = [u for u, d in judged.items() if "did not settle within" in d["detail"]]
    assert "poll" in unsettled and render["unsettled"] == len(unsettled), unsettled
    assert "render always" in out


def test_auto_renders_an_app_and_says_why(serve, crawl, tmp_path):
    srv = serve(spa_app())
    report = tmp_path / "report.json"
    code, pub, out, _ = crawl(
        srv.url + "/", "--render", "auto", "--render-timeout", "3", "--report", str(report)
    )
    assert code == 0
    assert srv.url + "/products/2" in pub.locs
    decision = json.loads(report.read_text())["render"]["decision"]
    assert decision.startswith("rendering every page: over the first 5 pages")
    assert "render auto: rendering every page" in out


def _static_site(app_shell: bool) -> web.Application:
    """Twelve plain pages linking to each other; with `app_shell`, /app is an app shell
    whose script links to /app-only."""
    pages = [f"/p{i}" for i in range(12)]

    async def page(request: web.Request) -> web.Response:
        links = "".join(f'<a href="{p}">{p}</a> ' for p in pages)
        more = '<a href="/app">app</a>' if app_shell else ""
        text = "Some words of real content on a server-rendered page. " * 5
        return web.Response(
            text=f"<html><body><h1>{request.path}</h1><p>{text}</p>{links}{more}</body></html>",
            content_type="text/html",
        )

    async def shell(request: web.Request) -> web.Response:
        return web.Response(
            text='<html><head><script src="/app.js"></script></head><body><div id="r">'
            "</div></body></html>",
            content_type="text/html",
        )

    async def script(request: web.Request) -> web.Response:
        return web.Response(
            text="document.addEventListener('DOMContentLoaded', () => {"
            "const a = document.createElement('a'); a.href = '/app-only'; a.textContent = 'x';"
            "document.getElementById('r').append(a); });",
            content_type="application/javascript",
        )

    app = web.Application()
    app.router.add_get("/", page)
    for p in [*pages, "/app-only"]:
        app.router.add_get(p, page)
    app.router.add_get("/app", shell)
    app.router.add_get("/app.js", script)
    return app


def test_auto_stops_rendering_a_server_rendered_site_but_renders_its_app_shells(
    serve, crawl, tmp_path
):
    srv = serve(_static_site(app_shell=True))
    report = tmp_path / "report.json"
    code, pub, out, _ = crawl(srv.url + "/", "--render", "auto", "--report", str(report))
    assert code == 0
    assert srv.url + "/app-only" in pub.locs  # found only by rendering the shell
    render = json.loads(report.read_text())["render"]
    assert render["decision"].startswith("rendering only app shells")
    assert "the raw HTML had 13 in-scope links, the rendered pages 0 more" in render["decision"]
    assert render["pages"] < len(pub.locs)  # not every page was rendered
    assert "render auto: rendering only app shells" in out


def test_a_browser_crash_costs_one_retry(serve, crawl, tmp_path):
    srv = serve(spa_app(crashes=1))
    decisions = tmp_path / "decisions.jsonl"
    code, pub, _, err = crawl(  # the crash and the page after it: none of the app's slow ones
        srv.url + "/crash", "--render", "always", "--decisions", str(decisions), "--max-depth", "1"
    )
    assert code == 0, err
    assert srv.url + "/after-crash" in pub.locs
    assert "second try: the browser crashed" in _decisions(decisions)["crash"]["detail"]
    assert "the browser crashed: starting it again" in err


def test_a_browser_crashing_twice_is_a_fetch_error(serve, crawl, tmp_path):
    srv = serve(spa_app(crashes=2))
    decisions = tmp_path / "decisions.jsonl"
    code, _, _, err = crawl(
        srv.url + "/crash", "--render", "always", "--decisions", str(decisions), "--max-depth", "1"
    )
    assert code == 3, err  # nothing listed
    crash = _decisions(decisions)["crash"]
    assert crash["reason"] == "fetch_error"
    assert "the browser crashed rendering it, twice" in crash["detail"]


def test_browser_requests_obey_the_delay(serve, crawl):
    log: list[tuple[float, str]] = []
    srv = serve(spa_app(log))
    code, _, _, _ = crawl(
        srv.url + "/products", "--render", "always", "--delay", "0.15", "--max-pages", "3",
        "--concurrency", "1",  # the browser's requests wait for the one slot: no deadlock
    )  # fmt: skip
    assert code == 0
    assert {"/static/app.js"} <= set(paths(log))
    assert_spaced([t for t, _ in log], 0.15)


def test_no_playwright_stops_before_any_request(serve, crawl, monkeypatch):
    log: list[tuple[float, str]] = []
    srv = serve(spa_app(log))
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "playwright" else real(name, *a),
    )
    code, _, _, err = crawl(srv.url + "/", "--render", "auto")
    assert code == 2
    assert "pip install 'sitemap-crawler[render]'" in err
    assert len(err.strip().splitlines()) == 1
    assert log == []


def test_no_chromium_stops_before_any_request(serve, crawl, tmp_path):
    log: list[tuple[float, str]] = []
    srv = serve(spa_app(log))
    code, _, _, err = crawl(
        srv.url + "/", "--render", "always", "--chromium-path", str(tmp_path / "nope")
    )
    assert code == 2
    assert "chromium_path: no executable at" in err
    assert log == []


def test_a_script_that_never_yields_is_a_fetch_error_not_a_hang(serve, crawl, tmp_path):
    srv = serve(spa_app())
    decisions = tmp_path / "decisions.jsonl"
    code, _, _, _ = crawl(
        srv.url + "/busy", "--render", "always", "--render-timeout", "2",
        "--decisions", str(decisions),
    )  # fmt: skip
    assert code == 3
    busy = _decisions(decisions)["busy"]
    assert busy["reason"] == "fetch_error"
    assert "kept the browser busy" in busy["detail"]


def test_the_browser_reaches_another_origin_only_when_render_hosts_names_it(serve, crawl):
    cdn_log: list[tuple[float, str]] = []

    @web.middleware
    async def record(request: web.Request, handler):  # type: ignore[no-untyped-def]
        cdn_log.append((0.0, request.path))
        return await handler(request)

    async def bundle(request: web.Request) -> web.Response:
        script = (
            "document.addEventListener('DOMContentLoaded', () => {"
            "const a = document.createElement('a'); a.href = '/from-cdn'; a.textContent = 'x';"
            "document.body.append(a); });"
        )
        return web.Response(text=script, content_type="application/javascript")

    cdn_app = web.Application(middlewares=[record])
    cdn_app.router.add_get("/bundle.js", bundle)
    cdn = serve(cdn_app)

    def shell_from_cdn(app: web.Application) -> None:
        async def page(request: web.Request) -> web.Response:
            return web.Response(
                text=f'<html><head><script src="{cdn.url}/bundle.js"></script></head>'
                f"<body><p>{request.path}</p></body></html>",
                content_type="text/html",
            )

        app.router.add_get("/cdn-app", page)
        app.router.add_get("/from-cdn", page)

    srv = serve(spa_app(extra=shell_from_cdn))
    code, pub, _, _ = crawl(srv.url + "/cdn-app", "--render", "always")
    assert code == 0
    assert pub.locs == [srv.url + "/cdn-app"] and cdn_log == []  # never asked
    code, pub, _, _ = crawl(srv.url + "/cdn-app", "--render", "always", "--render-hosts", cdn.url)
    assert code == 0
    assert srv.url + "/from-cdn" in pub.locs
    assert [path for _, path in cdn_log] == ["/bundle.js"]  # cached for the second page
