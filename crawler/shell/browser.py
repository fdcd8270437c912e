"""Pages rendered in headless Chromium, driven by Playwright: the only module importing it.

The crawl has fetched the page already (status, headers, redirects, robots.txt, size limits,
retries: all its own); the browser is given that answer for the document, so rendering costs
the site no second request for it. Every other request the page makes is intercepted: the
crawl's rules (crawler.core.rendering.refused) decide whether it may leave at all, and those
that may are fetched by the crawl's own transport inside its throttle (`fetch`), so they
count toward concurrency, delay, max_rps and Crawl-delay, and carry the crawl's User-Agent
and staging credentials. The browser itself never touches the network.

One browser serves the crawl, in a fresh context (no cookies, storage or service worker) per
page, `concurrency` pages at once. A browser that crashes is started again; the page it was
rendering gets one more try, then fails with the reason.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import importlib.util
import os
import shutil
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from crawler.core.rendering import CACHED_TYPES
from crawler.errors import RenderUnavailable
from crawler.shell.fetch import Response

__all__ = ["Browser", "Rendered", "find_chromium"]

#: Chromium's switches: no sandbox (it runs as root in containers), and none of its own
#: traffic (updates, sync, field trials, QUIC probes): a crawl's browser talks to no one.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--disable-default-apps",
    "--disable-extensions",
    "--dns-prefetch-disable",
    "--metrics-recording-only",
    "--mute-audio",
)
#: The network is idle once no request has been in flight for this long (Playwright's
#: networkidle's 500 ms, but exact: every request of the page passes through us).
QUIET_SECONDS = 0.5
#: How often the network is looked at while waiting for it to be idle.
POLL_SECONDS = 0.05
#: After the network is idle: time for the last answers' scripts to write the DOM.
SETTLE_SECONDS = 0.1
#: Times a tall page is scrolled to its bottom to load more (infinite scroll), at most.
SCROLLS = 3
#: Pages made ahead of need (see Browser._fresh_page).
SPARE_PAGES = 1
#: Seconds to read the DOM once the page is judged: a script looping forever blocks it.
CONTENT_SECONDS = 5.0
#: Seconds Chromium gets to start.
LAUNCH_SECONDS = 30.0
#: Bytes of scripts and stylesheets kept for the crawl (see CACHED_TYPES).
CACHE_BYTES = 64 * 1024 * 1024
#: Headers describing the bytes on the wire, which the transport has already decoded.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})

INSTALL_PLAYWRIGHT = "pip install 'sitemap-crawler[render]'"
INSTALL_CHROMIUM = "apt-get install chromium"


def find_chromium(path: str | None) -> str:
    """Playwright importable and the Chromium to drive, or RenderUnavailable saying what to
    install. Checked before any request."""
    if importlib.util.find_spec("playwright") is None:
        raise RenderUnavailable(
            f"rendering needs Playwright for Python: {INSTALL_PLAYWRIGHT} "
            f"(and Chromium: {INSTALL_CHROMIUM}), or render = never"
        )
    if path:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise RenderUnavailable(f"chromium_path: no executable at {path}")
        return path
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise RenderUnavailable(
        f"rendering needs Chromium and none is on PATH: {INSTALL_CHROMIUM} "
        f"(or set chromium_path; it is never downloaded)"
    )


@dataclass(slots=True)
class Rendered:
    """A page as the browser left it: its DOM serialised (None when it could not be
    rendered: `error` says why), and notes for the decision's detail."""

    html: bytes | None
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    navigated: str | None = None  # where its script sent the browser (refused) while loading


class _Crashed(Exception):
    """The browser or the page's renderer process died under us."""


class _Watch:
    """One render's requests in flight, and whether its browser or page died."""

    def __init__(self, browser: Any) -> None:
        self.browser = browser
        self.in_flight = 0
        self.changed = time.monotonic()
        self.crashed: str | None = None
        self.document_served = False
        self.navigated: str | None = None  # where the page's script tried to go

    def begin(self) -> None:
        self.in_flight += 1
        self.changed = time.monotonic()

    def end(self) -> None:
        self.in_flight -= 1
        self.changed = time.monotonic()

    def check(self) -> None:
        if self.crashed is None and not self.browser.is_connected():
            self.crashed = "the browser closed"
        if self.crashed is not None:
            raise _Crashed(self.crashed)

    async def idle(self, deadline: float) -> bool:
        """Wait for QUIET_SECONDS without a request in flight; False at the deadline. Quiet
        is time this loop saw pass: when the crawl's own event loop stalls (a busy process),
        requests the page made meanwhile wait undispatched, so the stall is no evidence of
        quiet, and the count starts again."""
        quiet = 0.0
        last = time.monotonic()
        while True:
            self.check()
            now = time.monotonic()
            step, last = now - last, now
            if self.in_flight or now - self.changed < step or step > 4 * POLL_SECONDS:
                quiet = 0.0  # busy, changed since the last look, or we were not looking
            else:
                quiet += step
            if quiet >= QUIET_SECONDS:
                return True
            if now >= deadline:
                return False
            await asyncio.sleep(min(POLL_SECONDS, max(0.0, deadline - now)))


class Browser:
    """The crawl's browser. `fetch(url)`: a GET by the crawl's transport inside its throttle;
    `refuse(url, method, resource_type)`: why a request may not leave, or None."""

    def __init__(
        self,
        executable: str,
        *,
        concurrency: int,
        timeout: float,
        user_agent: str,
        fetch: Callable[[str], Awaitable[Response]],
        refuse: Callable[[str, str, str], str | None],
        log: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.executable = executable
        self.timeout = timeout
        self.user_agent = user_agent
        self._fetch = fetch
        self._refuse = refuse
        self._log = log
        self._slots = asyncio.Semaphore(concurrency)
        self._launching = asyncio.Lock()
        self._playwright: Any = None
        self._browser: Any = None
        self._spares: collections.deque[asyncio.Future[tuple[Any, Any, Any]]] = collections.deque()
        self._cache: dict[str, Response] = {}
        self._cached_bytes = 0
        self.stats: Counter[str] = Counter()

    async def start(self) -> None:
        """Start Playwright's driver and Chromium, before any request of the crawl: a
        browser that cannot start stops the crawl with RenderUnavailable."""
        from playwright.async_api import async_playwright

        self._playwright = await async_playwright().start()
        try:
            await self._launch()
        except Exception:
            await self.close()
            raise

    async def _launch(self) -> None:
        from playwright.async_api import Error

        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.executable,
                args=list(CHROMIUM_ARGS),
                headless=True,
                timeout=LAUNCH_SECONDS * 1000,
            )
        except Error as exc:
            first = (exc.message or str(exc)).strip().splitlines()[0]
            raise RenderUnavailable(f"cannot start Chromium {self.executable}: {first}") from None

    async def close(self) -> None:
        await self._drop_spares()
        with contextlib.suppress(Exception):
            if self._browser is not None:
                await self._browser.close()
        with contextlib.suppress(Exception):
            if self._playwright is not None:
                await self._playwright.stop()
        self._browser = self._playwright = None

    async def _live_browser(self, dead: Any = None) -> Any:
        """The browser, started again if it died (`dead`: the one seen dying)."""
        async with self._launching:
            browser = self._browser
            if browser is not None and browser is not dead and browser.is_connected():
                return browser
            await self._drop_spares()
            if browser is not None:
                with contextlib.suppress(Exception):
                    await browser.close()
            self.stats["restarts"] += 1
            self._log("warning: the browser crashed: starting it again")
            await self._launch()
            return self._browser

    async def render(self, url: str, document: Response) -> Rendered:
        """The page at url, its document being the crawl's answer `document`. A crash costs
        one more try; a second is the page's fetch_error."""
        async with self._slots:
            browser = self._browser
            if browser is None or not browser.is_connected():
                browser = await self._live_browser(browser)
            try:
                return await self._render_once(browser, url, document)
            except _Crashed as exc:
                self.stats["crashes"] += 1
                first = str(exc)
            browser = await self._live_browser(browser)
            try:
                rendered = await self._render_once(browser, url, document)
            except _Crashed as exc:
                self.stats["crashes"] += 1
                return Rendered(
                    None, error=f"the browser crashed rendering it, twice ({first}; {exc})"
                )
            rendered.notes.append(f"rendered on a second try: the browser crashed ({first})")
            return rendered

    async def _render_once(self, browser: Any, url: str, document: Response) -> Rendered:
        from playwright.async_api import Error

        watch = _Watch(browser)
        try:
            context, page = await self._fresh_page(browser)
        except Error as exc:
            raise _Crashed(_first_line(exc)) from None
        try:
            page.on("crash", lambda _: setattr(watch, "crashed", "the page's renderer crashed"))

            async def route(route: Any, request: Any) -> None:
                await self._route(route, request, page, url, document, watch)

            await page.route("**/*", route)
            # WebSockets are answered by nobody: routed, never connected to the server
            await page.route_web_socket("**/*", lambda _ws: None)
            # every step is bounded on its own; this bounds their sum, whatever hangs
            bound = self.timeout + 2 * CONTENT_SECONDS
            return await asyncio.wait_for(self._load(page, url, watch), bound)
        except TimeoutError:
            watch.check()
            self.stats["unreadable"] += 1
            return Rendered(
                None,
                error=f"its script kept the browser busy past render_timeout {self.timeout:g} s",
            )
        except Error as exc:
            watch.check()  # a crash shows as an Error from whatever call was waiting
            if _is_crash(exc):
                raise _Crashed(_first_line(exc)) from None
            # what a page's own script made of the browser is that page's answer, never
            # the crawl's end (it was an unexpected failure, exit 70)
            self.stats["unreadable"] += 1
            return Rendered(None, error=f"the browser could not render it: {_first_line(exc)}")
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(context.close(), CONTENT_SECONDS)

    async def _new_page(self, browser: Any) -> tuple[Any, Any, Any]:
        """A page in a fresh context: no cookies, storage or service worker of another."""
        context = await browser.new_context(
            service_workers="block", user_agent=self.user_agent, java_script_enabled=True
        )
        try:
            return browser, context, await context.new_page()
        except BaseException:
            with contextlib.suppress(Exception):
                await context.close()
            raise

    async def _fresh_page(self, browser: Any) -> tuple[Any, Any]:
        """A fresh (context, page), made ahead of need when one is ready: a new page costs
        Chromium a renderer process (0.2 to 0.4 s here), which it starts while the
        previous page waits for its network to go quiet, the CPU idle."""
        while self._spares:
            spare = self._spares.popleft()
            try:
                owner, context, page = await spare
            except Exception:
                continue
            if owner is browser and browser.is_connected():
                self._warm(browser)
                return context, page
            with contextlib.suppress(Exception):
                await context.close()
        self._warm(browser)
        _, context, page = await self._new_page(browser)
        return context, page

    def _warm(self, browser: Any) -> None:
        if len(self._spares) < SPARE_PAGES:
            self._spares.append(asyncio.ensure_future(self._new_page(browser)))

    async def _drop_spares(self) -> None:
        spares, self._spares = self._spares, collections.deque()
        for spare in spares:
            spare.cancel()
            with contextlib.suppress(BaseException):
                _, context, _ = await spare
                await context.close()

    async def _load(self, page: Any, url: str, watch: _Watch) -> Rendered:
        from playwright.async_api import Error

        deadline = time.monotonic() + self.timeout
        notes: list[str] = []
        self.stats["pages"] += 1
        try:
            await page.goto(url, wait_until="commit", timeout=self.timeout * 1000)
        except Error as exc:
            watch.check()
            return Rendered(None, error=f"the browser could not load it: {_first_line(exc)}")
        settled = await watch.idle(deadline)
        if settled:
            settled = await self._scroll(page, watch, deadline)
        if settled:
            await asyncio.sleep(SETTLE_SECONDS)
        else:
            self.stats["unsettled"] += 1
            notes.append(
                f"rendering did not settle within render_timeout {self.timeout:g} s "
                f"({watch.in_flight} requests still in flight): judged on what it showed then"
            )
        watch.check()
        try:
            html = await asyncio.wait_for(self._content(page), CONTENT_SECONDS)
        except TimeoutError:
            watch.check()
            self.stats["unreadable"] += 1
            return Rendered(
                None,
                error=f"its script kept the browser busy: the DOM could not be read within "
                f"{CONTENT_SECONDS:g} s of render_timeout",
            )
        return Rendered(html.encode("utf-8", "surrogatepass"), notes, navigated=watch.navigated)

    @staticmethod
    async def _content(page: Any) -> str:
        """The DOM serialised. A page whose script navigated (refused, recorded by _route)
        may be between documents when asked: asked again once it has settled."""
        from playwright.async_api import Error

        try:
            return str(await page.content())
        except Error as exc:
            if not _navigated_away(exc):
                raise
        await asyncio.sleep(SETTLE_SECONDS)
        return str(await page.content())

    async def _scroll(self, page: Any, watch: _Watch, deadline: float) -> bool:
        """Scroll a page taller than the window to its bottom, up to SCROLLS times, while
        that brings more: infinite scroll loads its next items so, and a crawl must stop
        somewhere. False when the network did not settle again before the deadline. A
        page whose script navigates while it is scrolled has no more to show: done."""
        from playwright.async_api import Error

        try:
            return await self._scrolled(page, watch, deadline)
        except Error as exc:
            if _navigated_away(exc):
                return True
            raise

    async def _scrolled(self, page: Any, watch: _Watch, deadline: float) -> bool:
        script = "document.documentElement.scrollHeight - window.innerHeight"
        for _ in range(SCROLLS):
            left = await asyncio.wait_for(page.evaluate(script), CONTENT_SECONDS)
            if not isinstance(left, int | float) or left <= 0:
                return True
            await page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
            self.stats["scrolls"] += 1
            await asyncio.sleep(SETTLE_SECONDS)  # the scroll handler's requests begin
            if not await watch.idle(deadline):
                return False
            if await page.evaluate(script) <= 0:
                return True
        return True

    async def _route(
        self, route: Any, request: Any, page: Any, url: str, document: Response, watch: _Watch
    ) -> None:
        """Every request the page makes: the document from the crawl's answer, the rest
        fetched by the crawl when its rules allow, refused otherwise."""
        watch.begin()
        try:
            if request.is_navigation_request() and request.frame == page.main_frame:
                if not watch.document_served:
                    watch.document_served = True
                    await route.fulfill(
                        status=document.status, headers=_headers(document), body=document.body
                    )
                    return
                watch.navigated = watch.navigated or request.url
                self.stats["blocked_navigation"] += 1
                await route.abort("blockedbyclient")
                return
            why = self._refuse(request.url, request.method, request.resource_type)
            if why is not None:
                self.stats[f"blocked_{why}"] += 1
                await route.abort("blockedbyclient")
                return
            answer = await self._get(request.url, request.resource_type)
            if answer is None:
                await route.abort("failed")
                return
            await route.fulfill(status=answer.status, headers=_headers(answer), body=answer.body)
        except Exception:  # the page went away, the crawl's time ran out: the request ends
            with contextlib.suppress(Exception):
                await route.abort("failed")
        finally:
            watch.end()

    async def _get(self, url: str, resource_type: str) -> Response | None:
        """The crawl's answer to url (the cache's, for a script or stylesheet met before);
        None when there is no whole answer to give the page."""
        cached = self._cache.get(url)
        if cached is not None:
            self.stats["cached"] += 1
            return cached
        answer = await self._fetch(url)
        self.stats["requests"] += 1
        if answer.error is not None or answer.truncated or not answer.status:
            self.stats["failed"] += 1
            return None
        if (
            resource_type in CACHED_TYPES
            and answer.status == 200
            and self._cached_bytes + len(answer.body) <= CACHE_BYTES
        ):
            self._cache[url] = answer
            self._cached_bytes += len(answer.body)
        return answer


def _headers(resp: Response) -> dict[str, str]:
    """The answer's headers for the browser: repeated ones joined as Playwright wants, and
    none about the wire encoding (the body is decoded already)."""
    headers: dict[str, str] = {}
    for name, value in resp.headers.items():
        key = name.lower()
        if key in _WIRE_HEADERS:
            continue
        headers[key] = f"{headers[key]}\n{value}" if key in headers else value
    return headers


def _first_line(exc: BaseException) -> str:
    text = (getattr(exc, "message", None) or str(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _navigated_away(exc: BaseException) -> bool:
    """A call the page's own navigation cut short: the document it ran in went away."""
    text = _first_line(exc).lower()
    return "execution context was destroyed" in text or "page is navigating" in text


def _is_crash(exc: BaseException) -> bool:
    text = _first_line(exc).lower()
    return any(word in text for word in ("crash", "has been closed", "disconnected"))
