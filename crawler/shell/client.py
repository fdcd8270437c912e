"""The crawl's polite client: every request a crawl makes (pages, robots.txt, sitemaps, the
browser's assets) goes through the throttle and the retries here, to the Pages strategy the
run opened (pages.LocalPages, or pool.PoolPages with worker processes)."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TypeVarTuple

from crawler.config import Config
from crawler.core.page import PagePolicy
from crawler.core.urls import join_parts
from crawler.core.validators import Validators
from crawler.shell.fetch import Response, Transport
from crawler.shell.pages import Fetched, LocalPages, Pages
from crawler.shell.pool import PoolPages, Spare
from crawler.shell.retry import (
    Raised,
    RetryPolicy,
    connection_errors,
    fetch_with_retries,
    needs_retry,
)
from crawler.shell.throttle import Throttle, ThrottleClosed
from crawler.shell.transports import crawl_transport

#: Fraction added to any requested spacing between requests: starts are timed here, and a
#: send delayed by a busy machine must not bring two requests closer than --delay at the
#: server (5% of 0.2 s is 10 ms).
SPACING_MARGIN = 0.05

#: what a fetch given to _retried takes, checked against the arguments given with it
_Args = TypeVarTuple("_Args")


class PoliteClient:
    """Requests through the throttle and the retries. `on_outage`: told once the throttle
    finds the site down (the loop stops taking URLs)."""

    def __init__(
        self,
        config: Config,
        start: str,
        page_policy: PagePolicy,
        *,
        transport: Transport | None = None,
        on_outage: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.config = config
        self.start = start
        self.page_policy = page_policy
        self.on_outage = on_outage
        self.throttle = self._new_throttle()
        self._home = join_parts(start)[1] + "/"
        self._throttles: dict[str, Throttle] = {}  # other hosts' (allowed_hosts), by origin
        self.retry = RetryPolicy(retries=config.retries, max_retry_after=config.max_retry_after)
        self._transport = transport  # given (tests: in memory): its owner opens and closes it
        self.pages: Pages | None = None  # while open

    def _new_throttle(self) -> Throttle:
        c = self.config
        return Throttle(
            concurrency=c.concurrency,
            delay=c.delay,
            max_rps=c.max_rps or None,
            max_crawl_delay=c.max_crawl_delay,
            margin=SPACING_MARGIN,
        )

    def throttle_for(self, url: str) -> Throttle:
        """The throttle of url's origin: each host is spaced on its own (allowed_hosts),
        with the same settings; another host's closes with the start's."""
        if url.startswith(self._home):
            return self.throttle
        origin = join_parts(url)[1]
        throttle = self._throttles.get(origin)
        if throttle is None:
            throttle = self._throttles[origin] = self._new_throttle()
            self.throttle.followers.append(throttle)  # closed with it (max_time, a signal)
            if self.throttle.closed:
                throttle.close()
        return throttle

    @contextlib.asynccontextmanager
    async def opened(
        self,
        known: Mapping[str, object],
        workers: list[Spare] | None = None,
        *,
        log: Callable[[str], None] = lambda _: None,
        all_links: bool = False,
        set_depth: Callable[[int], None],
    ) -> AsyncIterator[Pages]:
        """The transport and the pages fetched with it (by workers too, when given).
        `known`: the crawl's seen set; `all_links`: workers send every link back (a page's
        links are its history); `set_depth`: the crawl loop's (CrawlLoop.set_depth), told
        the jobs per request the workers pipeline: it runs as many, and tells the throttle."""
        if self._transport is not None:
            self.pages = LocalPages(self._transport, self.page_policy, known)
            try:
                yield self.pages
            finally:
                self.pages = None
            return
        c = self.config
        http = crawl_transport(
            user_agent=c.user_agent,
            concurrency=c.concurrency,
            timeout=c.timeout,
            max_bytes=c.max_page_bytes,
            access=c.access(join_parts(self.start)[1]),  # credentials: the start's origin
        )
        async with http:
            pages: Pages = (
                PoolPages(
                    workers,
                    http,
                    self.page_policy,
                    known,
                    log=log,
                    set_depth=set_depth,
                    in_flight=lambda: self.throttle.in_flight,
                    all_links=all_links,
                )
                if workers
                else LocalPages(http, self.page_policy, known)
            )
            self.pages = pages
            try:
                yield pages
            finally:
                self.pages = None
                await pages.close()

    def take_workers(self) -> bool:
        """Let worker processes take pages, when there are some and requests are not
        spaced (a spaced crawl waits, it does not compute). True when they may."""
        assert self.pages is not None
        return self.throttle.requested_interval == 0 and self.pages.allow_workers()

    async def request(self, url: str, max_bytes: int | None = None) -> Response:
        """One plain GET (robots.txt, a sitemap) through the throttle and the retries."""
        assert self.pages is not None
        pages = self.pages
        fetched = await self._retried(url, _as_fetched, pages, url, max_bytes)
        return fetched.response

    def fetch(
        self, url: str, depth: int, validators: Validators | None = None
    ) -> Awaitable[Fetched]:
        """One page through the throttle and the retries, analysed. `depth`: of the links on
        the page; `validators`: ask conditionally (crawler.shell.revalidation). The retried
        request itself, not a coroutine around it: a page's every await passes each layer."""
        pages = self.pages
        assert pages is not None
        return self._retried(url, pages.fetch, url, depth, validators)

    async def unthrottled(self, url: str, max_bytes: int) -> Response:
        """A GET of another host's (--robots-from URL): with retries, outside the site's
        throttle, without the site's credentials (the transport sends them to it only)."""
        assert self.pages is not None
        pages = self.pages
        resp, _ = await fetch_with_retries(
            lambda: pages.get(url, max_bytes),
            self.retry,
            status_of=lambda r: r.status or None,
            retry_after_of=lambda r: r.headers.get("Retry-After"),
            error_of=lambda r: r.error,
        )
        return resp

    async def asset(self, url: str) -> Response:
        """A request of the browser's, made by the crawl: its transport, its throttle."""
        assert self.pages is not None
        pages = self.pages
        try:
            async with self.throttle.slot():
                return await pages.get(url)
        except ThrottleClosed as closed:
            return Response(url, error=str(closed))

    def _retried(
        self, url: str, fetch: Callable[[*_Args], Awaitable[Fetched]], *args: *_Args
    ) -> Awaitable[Fetched]:
        """fetch(*args) through url's throttle, retried as the policy says; fetch given with
        its arguments, not in a closure made for every request (#26). The first try itself,
        not a coroutine around it: every await of every request passes each layer."""
        return self._attempt(self.throttle_for(url), fetch, args, first=True)

    async def _attempt(
        self,
        throttle: Throttle,
        fetch: Callable[[*_Args], Awaitable[Fetched]],
        args: tuple[*_Args],
        *,
        first: bool = False,
    ) -> Fetched:
        """One try in a throttle's slot, its outcome observed. `first`: the request's first
        try, which hands an outcome to be retried (`needs_retry`, or a connection error
        raised) to fetch_with_retries; the retries it makes are tries of their own."""
        try:
            # the slot as `throttle.slot()` holds it, without its two coroutines when free
            if not throttle.admit():
                await throttle.wait()
            try:
                started = time.monotonic()
                fetched = await fetch(*args)
            finally:
                throttle.release()
            resp = fetched.response
            seconds = resp.seconds if resp.seconds is not None else time.monotonic() - started
            if (outage := throttle.observe(resp.status or None, seconds, resp.error)) is not None:
                self.on_outage(outage)
        except Exception as exc:
            if not (first and self.retry.retries and isinstance(exc, connection_errors())):
                raise
            raised = Raised(exc)
        else:
            if first and needs_retry(self.retry, _retry_status(fetched)):
                return await self._retry(throttle, fetch, args, fetched)
            return fetched
        # retried outside the handler: a retry's own error is not chained to the first one's
        return await self._retry(throttle, fetch, args, raised)

    async def _retry(
        self,
        throttle: Throttle,
        fetch: Callable[[*_Args], Awaitable[Fetched]],
        args: tuple[*_Args],
        first: Fetched | Raised,
    ) -> Fetched:
        """The tries after a first one whose outcome is to be retried, as the policy says."""
        fetched, notes = await fetch_with_retries(
            functools.partial(self._attempt, throttle, fetch, args),
            self.retry,
            status_of=_retry_status,
            retry_after_of=_retry_after,
            error_of=_error,
            first=first,
        )
        if notes:
            fetched.response.notes = tuple(notes)
        return fetched


def _retry_status(fetched: Fetched) -> int | None:
    """The status retries go by. A bot wall's answer is final, whatever its status (a 503 or
    429 challenge would be retried): asking again only asks the wall again."""
    if fetched.walled is not None:
        return 403
    return fetched.response.status or None


def _retry_after(fetched: Fetched) -> str | None:
    return fetched.response.headers.get("Retry-After")


def _error(fetched: Fetched) -> str | None:
    return fetched.response.error


async def _as_fetched(pages: Pages, url: str, max_bytes: int | None) -> Fetched:
    """A plain GET's answer as a page's, unanalysed (robots.txt, a sitemap)."""
    return Fetched(await pages.get(url, max_bytes), None)
