"""Rendering when asked (render = auto | always): the browser's life in a run, and a page's
raw answer replaced by its rendered DOM, analysed by the same path as raw HTML. Which pages
are rendered under `auto` is crawler.core.rendering's rule (AutoRender.wants)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from multidict import CIMultiDict, CIMultiDictProxy

from crawler.config import Config
from crawler.core.decide import HTML_TYPES
from crawler.core.page import PagePolicy
from crawler.core.rendering import (
    NAVIGATED,
    AutoRender,
    directives_note,
    is_app_shell,
    navigated_to,
    refused,
)
from crawler.core.report import Tally
from crawler.core.robots import RobotsTxt
from crawler.shell.fetch import Response
from crawler.shell.pages import Fetched, analysed

if TYPE_CHECKING:  # the browser's module is loaded when a run renders: few do
    from crawler.shell.browser import Browser


class PageRenderer:
    """The browser while a run renders (None with render = never), and auto's choice."""

    def __init__(
        self,
        config: Config,
        page_policy: PagePolicy,
        known: Mapping[str, object],
        in_scope: Callable[[Sequence[str]], set[str]],
        log: Callable[[str], None],
    ) -> None:
        self.config = config
        self.page_policy = page_policy
        self.known = known
        self.in_scope = in_scope
        self.log = log
        self.auto = AutoRender() if config.render == "auto" else None
        self.browser: Browser | None = None

    @property
    def rendering(self) -> bool:
        """Pages may be rendered in this run (render = auto or always)."""
        return self.config.render != "never"

    @contextlib.asynccontextmanager
    async def opened(
        self,
        origin: str,
        robots: Callable[[], RobotsTxt],
        fetch: Callable[[str], Awaitable[Response]],
        tally: Tally,
    ) -> AsyncIterator[None]:
        """The browser, started before the first request (without Playwright or Chromium the
        crawl stops here, RenderUnavailable), closed at the end, its figures in the report.
        `fetch`: the browser's requests, by the crawl's client."""
        config = self.config
        if not self.rendering:
            yield
            return
        from crawler.shell.browser import Browser, find_chromium

        executable = find_chromium(config.chromium_path)
        hosts, agent = config.render_hosts, config.user_agent

        def refuse(url: str, method: str, resource_type: str) -> str | None:
            return refused(url, method, resource_type, origin, hosts, robots(), agent)

        browser = Browser(
            executable,
            concurrency=config.render_concurrency,
            timeout=config.render_timeout,
            user_agent=agent,
            fetch=fetch,
            refuse=refuse,
            log=self.log,
        )
        await browser.start()
        self.browser = browser
        try:
            yield
        finally:
            self.browser = None
            await browser.close()
            auto = self.auto
            if auto is not None and auto.seen:
                auto.settle()  # the crawl ended before the sample was full
            tally.render = {
                "mode": config.render,
                "decision": auto.why if auto is not None else "rendering every HTML page",
                **dict(sorted(browser.stats.items())),
            }

    async def render(self, url: str, fetched: Fetched) -> tuple[Fetched, str | None]:
        """The page as the browser renders it, and notes for its decision; the raw answer,
        when the page is not to be rendered (not a whole HTML 200 answer, or auto's
        choice). A render that fails is a fetch_error."""
        resp, page = fetched.response, fetched.page
        browser = self.browser
        if browser is None:
            return fetched, None
        if page is None or resp.status != 200 or resp.truncated or page.mime not in HTML_TYPES:
            return fetched, None
        auto = self.auto
        content_type = resp.headers.get("Content-Type")
        if auto is not None and not auto.wants(lambda: is_app_shell(resp.body, content_type)):
            return fetched, None
        out = await browser.render(url, resp)
        if out.html is None:
            return Fetched(resp, None, f"cannot render it: {out.error}"), None
        headers = CIMultiDict(resp.headers)
        headers["Content-Type"] = f"{page.mime}; charset=utf-8"  # the DOM, serialised
        shown = Response(
            resp.url, resp.status, CIMultiDictProxy(headers), out.html, notes=resp.notes
        )
        rendered = analysed(url, shown, self.page_policy, self.known)
        if rendered.page is None:
            return rendered, None
        moved = navigated_to(url, out.navigated, self.config.strip_params)
        if moved is not None and rendered.page.moved_to is None:  # #24: a redirect, as a stub
            how = page.moved_by if page.moved_to else NAVIGATED  # a meta refresh is named so
            rendered.page.moved_to, rendered.page.moved_by = moved, how
        notes = out.notes
        if (note := directives_note(page.meta, rendered.page.meta)) is not None:
            notes.append(note)
        if auto is not None and auto.sampling:
            raw, seen = self.in_scope(page.targets), self.in_scope(rendered.page.targets)
            if auto.observe(raw, seen):
                self.log(f"render auto: {auto.why}")
        return rendered, "; ".join(notes) or None
