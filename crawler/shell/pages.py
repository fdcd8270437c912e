"""Where pages come from: a transport's answer and its analysis, as one step.

`LocalPages` fetches with a transport and analyses in this process; `pool.PoolPages` hands the
same step to worker processes, which run `LocalPages` themselves. The crawl sees only the
`Pages` protocol both satisfy: it never asks which of the two it has. Either way a page goes
transport -> page.analyse by the one path here, and the engine gets a `Fetched`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Protocol

from crawler.core.botwall import bot_wall
from crawler.core.page import PagePolicy, PageResult, analyse
from crawler.core.validators import Validators
from crawler.shell.fetch import REDIRECT_STATUSES, Response, Transport

__all__ = ["Fetched", "LocalPages", "Pages", "analysed"]


@dataclass(slots=True)
class Fetched:
    """One answer and what it says about its page (None: a redirect, no answer at all, a
    page that could not be analysed, as `unreadable` says, or a bot wall's answer, `walled`
    naming the service: not the site's page, so never analysed)."""

    response: Response
    page: PageResult | None
    unreadable: str | None = None
    walled: str | None = None


def analysed(
    url: str, resp: Response, policy: PagePolicy, known: Mapping[str, object] | None = None
) -> Fetched:
    """The answer and its analysis. A page our analysis fails on (a bug of ours, never the
    page's fault: analyse takes any bytes) costs that page alone, the same way in this
    process and in a worker, and is not retried: asking again would fail again."""
    if resp.error or resp.status in REDIRECT_STATUSES:
        return Fetched(resp, None)
    walled = bot_wall(resp.status, resp.headers, resp.body)  # a 200: one header lookup
    if walled is not None:
        return Fetched(resp, None, walled=walled)
    try:
        page = analyse(url, resp.status, resp.headers, resp.body, resp.truncated, policy, known)
    except ImportError:  # the HTML parser, imported at the first HTML page: the install's
        raise  # fault, not the page's (the run fails, as it did at its start before #26)
    except Exception as exc:
        return Fetched(resp, None, f"cannot analyse the page: {type(exc).__name__}: {exc}")
    return Fetched(resp, page)


class Pages(Protocol):
    """The Pages strategy: what the client and the engine ask of where pages come from."""

    async def fetch(
        self, url: str, depth: int = 0, validators: Validators | None = None
    ) -> Fetched: ...

    async def get(self, url: str, max_bytes: int | None = None) -> Response: ...

    def allow_workers(self) -> bool: ...

    @property
    def worker_count(self) -> int: ...

    @property
    def worker_requests(self) -> int: ...

    def settle(self, url: str, depth: int = 0) -> None: ...

    def abort(self) -> None: ...

    async def close(self) -> None: ...


class LocalPages:
    """Pages fetched with a transport and analysed in this process. `known`: URLs known to be
    normalised (the crawl's seen set), which makes resolving links cheap."""

    def __init__(
        self, transport: Transport, policy: PagePolicy, known: Mapping[str, object] | None = None
    ) -> None:
        self.transport = transport
        self.policy = policy
        self.known = known

    async def fetch(
        self, url: str, depth: int = 0, validators: Validators | None = None
    ) -> Fetched:
        """url's answer, analysed; `depth`: of the links on its page (for PoolPages);
        `validators`: from the crawl's history, to ask conditionally (a 304 may answer)."""
        return analysed(url, await self.response(url, validators), self.policy, self.known)

    def response(self, url: str, validators: Validators | None = None) -> Awaitable[Response]:
        """The transport's answer to url (fetch's request, before the analysis): PoolPages
        awaits it in its own frame, analysing as fetch does, so that a page made in the
        main process passes one coroutine layer fewer (every await of a page passes each
        layer, #26)."""
        transport = self.transport
        return transport.get(url) if validators is None else transport.get(url, None, validators)

    async def get(self, url: str, max_bytes: int | None = None) -> Response:
        """A plain GET (robots.txt): nothing to analyse."""
        return await self.transport.get(url, max_bytes)

    def allow_workers(self) -> bool:
        """Let worker processes take pages, if there are any (PoolPages); True when so."""
        return False

    @property
    def worker_count(self) -> int:
        """Workers started: the crawl report's figure (none here)."""
        return 0

    worker_requests = 0  # GETs workers made: the crawl report's figure

    def settle(self, url: str, depth: int = 0) -> None:
        """The crawl judged url for good: nothing to tell when pages are made here."""

    def abort(self) -> None:
        """Stop at once (a second signal): nothing runs outside this process here."""

    async def close(self) -> None:
        """Nothing to release here; the pool stops its workers."""
