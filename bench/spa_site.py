"""A generated single-page app of N routes, served on 127.0.0.1 by aiohttp, for
bench/render_bench.py.

Run: python3 bench/spa_site.py --pages 500 --port 8099

Every route (/, /p/1 ... /p/N-1) answers the same empty shell; /static/app.js fetches
/api/page/<i>.json and writes the page's title, a paragraph and its links (to 2i+1, 2i+2 and
i+1: every route is reachable, at depth log2 N), as a client-rendered React or Vue build does.
The raw HTML holds no link at all. Each page also calls /api/private/track, which robots.txt
disallows: the server counts those requests (GET /stats), so a crawler whose browser does
not obey robots.txt shows it. The server logs nothing per request.
"""

from __future__ import annotations

import argparse
import json

from aiohttp import web

SHELL = (
    "<!doctype html><html><head><meta charset=utf-8><title>App</title>"
    '<script src="/static/app.js" defer></script><link rel=stylesheet href="/static/app.css">'
    '</head><body><div id="app"></div></body></html>'
)

APP_JS = """
const app = document.getElementById('app');
const path = location.pathname;
const id = path === '/' ? 0 : Number(path.split('/').pop());
fetch('/api/private/track?id=' + id).catch(() => {});
fetch('/api/page/' + id + '.json').then(r => r.json()).then(page => {
  document.title = page.title;
  const h = document.createElement('h1'); h.textContent = page.title; app.append(h);
  const p = document.createElement('p'); p.textContent = page.text; app.append(p);
  for (const href of page.links) {
    const a = document.createElement('a'); a.href = href; a.textContent = href;
    app.append(a, document.createElement('br'));
  }
});
"""


def route(i: int) -> str:
    return "/" if i == 0 else f"/p/{i}"


def make_app(pages: int) -> web.Application:
    counts = {"private": 0, "requests": 0}

    @web.middleware
    async def count(request: web.Request, handler):  # type: ignore[no-untyped-def]
        counts["requests"] += 1
        return await handler(request)

    async def shell(request: web.Request) -> web.Response:
        i = int(request.match_info.get("i", "0"))
        if not 0 <= i < pages:
            raise web.HTTPNotFound()
        return web.Response(text=SHELL, content_type="text/html")

    async def data(request: web.Request) -> web.Response:
        i = int(request.match_info["i"])
        if not 0 <= i < pages:
            raise web.HTTPNotFound()
        links = [route(j) for j in (2 * i + 1, 2 * i + 2, i + 1) if j < pages]
        text = f"Page {i} of the generated app. " * 8
        return web.json_response({"title": f"Page {i}", "text": text, "links": links})

    async def private(request: web.Request) -> web.Response:
        counts["private"] += 1
        return web.json_response({})

    async def stats(request: web.Request) -> web.Response:
        return web.Response(text=json.dumps(counts), content_type="application/json")

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nDisallow: /api/private/\n")

    async def script(request: web.Request) -> web.Response:
        return web.Response(text=APP_JS, content_type="application/javascript")

    async def style(request: web.Request) -> web.Response:
        return web.Response(text="body{font-family:sans-serif}", content_type="text/css")

    app = web.Application(middlewares=[count])
    app.router.add_get("/", shell)
    app.router.add_get("/p/{i:\\d+}", shell)
    app.router.add_get("/api/page/{i:\\d+}.json", data)
    app.router.add_get("/api/private/track", private)
    app.router.add_get("/stats", stats)
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/static/app.js", script)
    app.router.add_get("/static/app.css", style)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args()
    web.run_app(make_app(args.pages), host="127.0.0.1", port=args.port, access_log=None)


if __name__ == "__main__":
    main()
