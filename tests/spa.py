"""A single-page app served on 127.0.0.1, for the rendering tests: every route answers the
same empty shell, and a script writes the page from JSON, as a React or Vue build does.

- `/`: its navigation comes from /api/nav.json (links inserted after a fetch); it also
  calls /private/track, which robots.txt disallows (the crawl must never request it), and
  shows /logo.png (an image: never requested).
- `/products`: a client-side router; its links are hrefs that history.pushState handles.
- `/about-us`: a canonical to /about set by script; `/hidden`: a noindex set by script.
- `/feed`: an infinite scroll: each scroll to the bottom fetches the next page of items,
  FEED_PAGES in all (a crawl scrolls a bounded number of times).
- `/poll`: its script asks /api/ping every 100 ms forever: the network never settles.
- `/busy`: its script loops forever: the DOM cannot even be read.
- `/crash`: asks /api/crash, whose handler kills the crawl's browser (`crashes` times).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

FEED_PAGES = 10

SHELL = """<!doctype html>
<html><head><meta charset="utf-8"><title>App</title>
<script src="/static/app.js" defer></script></head>
<body><div id="app"></div></body></html>
"""

APP_JS = r"""
const app = document.getElementById('app');
function link(href, text) {
  const a = document.createElement('a');
  a.href = href; a.textContent = text || href;
  app.append(a, document.createElement('br'));
  return a;
}
function head(tag, attrs) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  document.head.append(el);
}
const path = location.pathname;
async function main() {
  if (path === '/') {
    const nav = await (await fetch('/api/nav.json')).json();
    for (const item of nav) link(item.href, item.title);
    fetch('/private/track?page=' + encodeURIComponent(path)).catch(() => {});
    const img = document.createElement('img'); img.src = '/logo.png'; app.append(img);
  } else if (path === '/products' || path.startsWith('/products/')) {
    for (const id of [1, 2]) {
      const a = link('/products/' + id, 'Product ' + id);
      a.addEventListener('click', (e) => {
        e.preventDefault(); history.pushState({}, '', a.href);
      });
    }
    const p = document.createElement('p'); p.textContent = 'Page ' + path; app.append(p);
  } else if (path === '/about-us') {
    head('link', {rel: 'canonical', href: '/about'});
    link('/', 'home');
  } else if (path === '/hidden') {
    head('meta', {name: 'robots', content: 'noindex'});
    link('/', 'home');
  } else if (path === '/feed') {
    let page = 0;
    async function more() {
      const items = await (await fetch('/api/feed?page=' + page)).json();
      page += 1;
      for (const item of items) {
        const a = link(item, item); a.style.display = 'block'; a.style.height = '400px';
      }
    }
    await more();
    window.addEventListener('scroll', () => {
      if (window.innerHeight + window.scrollY >= document.body.scrollHeight - 10) more();
    });
  } else if (path === '/poll') {
    setInterval(() => fetch('/api/ping'), 100);
    const answer = await (await fetch('/api/ping')).json();
    link(answer.next, 'polled');
  } else if (path === '/busy') {
    link('/after-busy', 'never shown');
    setTimeout(() => { for (;;) {} }, 0);
  } else if (path === '/crash') {
    const answer = await (await fetch('/api/crash')).json();
    link(answer.next, 'after the crash');
  } else {
    link('/', 'home');
    const p = document.createElement('p'); p.textContent = 'Page ' + path; app.append(p);
  }
}
main();
"""

NAV = [
    {"href": "/about", "title": "About"},
    {"href": "/about-us", "title": "About us (old)"},
    {"href": "/products", "title": "Products"},
    {"href": "/hidden", "title": "Hidden"},
    {"href": "/feed", "title": "Feed"},
    {"href": "/poll", "title": "Live"},
]

ROUTES = (
    "/", "/about", "/about-us", "/products", "/products/1", "/products/2", "/hidden",
    "/feed", "/poll", "/polled", "/crash", "/after-crash", "/busy",
)  # fmt: skip


def feed_items(page: int) -> list[str]:
    return [f"/feed/item-{page}-{k}" for k in range(3)]


def browser_pids() -> list[int]:
    """Chromium browser processes (not its renderers) descended from this process: the
    crawl's, started by this test, and no one else's."""
    parents: dict[int, int] = {}
    names: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        names[int(entry.name)] = cmdline
    me = os.getpid()

    def ours(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == me:
                return True
        return False

    return [
        pid
        for pid, cmd in names.items()
        if b"chromium" in cmd.split(b"\0")[0] and b"--type=" not in cmd and ours(pid)
    ]


def spa_app(
    log: list[tuple[float, str]] | None = None,
    *,
    crashes: int = 0,
    extra: Callable[[web.Application], None] | None = None,
) -> web.Application:
    """The app; `log` gets (time, path?query) of every request, as the server saw it."""
    seen = log if log is not None else []
    left = {"crashes": crashes}

    @web.middleware
    async def record(request: web.Request, handler):  # type: ignore[no-untyped-def]
        seen.append((time.monotonic(), request.path_qs))
        return await handler(request)

    async def shell(request: web.Request) -> web.Response:
        return web.Response(text=SHELL, content_type="text/html")

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nDisallow: /private/\n")

    async def app_js(request: web.Request) -> web.Response:
        return web.Response(text=APP_JS, content_type="application/javascript")

    async def nav(request: web.Request) -> web.Response:
        return web.json_response(NAV)

    async def feed(request: web.Request) -> web.Response:
        page = int(request.query.get("page", "0"))
        return web.json_response(feed_items(page) if page < FEED_PAGES else [])

    async def ping(request: web.Request) -> web.Response:
        return web.json_response({"next": "/polled"})

    async def crash(request: web.Request) -> web.Response:
        if left["crashes"] > 0:
            left["crashes"] -= 1
            for pid in browser_pids():
                os.kill(pid, signal.SIGKILL)
        return web.json_response({"next": "/after-crash"})

    async def anything(request: web.Request) -> web.Response:
        return web.Response(text="not here", status=404)

    app = web.Application(middlewares=[record])
    for route in ROUTES:
        app.router.add_get(route, shell)
    app.router.add_get("/feed/{item}", shell)
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/static/app.js", app_js)
    app.router.add_get("/api/nav.json", nav)
    app.router.add_get("/api/feed", feed)
    app.router.add_get("/api/ping", ping)
    app.router.add_get("/api/crash", crash)
    if extra is not None:
        extra(app)
    app.router.add_get("/{tail:.*}", anything)
    return app


def paths(log: list[tuple[float, str]]) -> list[str]:
    return [path for _, path in log]


def as_json(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
