"""allowed_hosts in a crawl: another host's robots.txt is read once, before its first
request, and sets that host's screen rules and its throttle's Crawl-delay. The start host's
is read before the crawl (crawler.shell.engine); these are met as links lead to them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from crawler.core.decide import Decision
from crawler.core.screen import Screen
from crawler.core.urls import join_parts
from crawler.shell.client import PoliteClient
from crawler.shell.sources import read_own_robots

__all__ = ["HostGate", "HostRules"]


class HostGate(Protocol):
    """What the page judge asks before a request: may this host's robots.txt have it. The
    usual crawl has none: one host, whose robots.txt was read before the crawl (the judge
    then asks nothing: an await a page that always said yes, #26)."""

    async def admit(self, url: str) -> Decision | None: ...


class HostRules:
    """Reads each allowed host's robots.txt when the crawl first asks for one of its URLs
    (once: later URLs of the host wait for that read), and says when its rules forbid it."""

    def __init__(
        self,
        screen: Callable[[], Screen],
        client: PoliteClient,
        user_agent: str,
        log: Callable[[str], None],
    ) -> None:
        self._screen = screen  # the links' screen, which `check` may replace
        self._client = client
        self._agent = user_agent
        self._home = join_parts(client.start)[1] + "/"
        self._log = log
        self._reads: dict[str, asyncio.Task[None]] = {}

    async def admit(self, url: str) -> Decision | None:
        """Why url (crawl space, screened already) may not be fetched by its host's
        robots.txt, reading that first when it is another host's; None: it may."""
        if url.startswith(self._home):
            return None  # the start host's, read before the crawl
        origin = join_parts(url)[1]
        read = self._reads.get(origin)
        if read is None:
            read = self._reads[origin] = asyncio.ensure_future(self._read(origin))
        await asyncio.shield(read)
        return self._screen().robots_denial(url)

    async def _read(self, origin: str) -> None:
        robots = await read_own_robots(self._client, origin + "/")
        self._log(f"robots.txt of {origin}: {robots.note}")
        self._screen().host_robots[origin] = robots.rules
        throttle = self._client.throttle_for(origin + "/")
        throttle.set_crawl_delay(robots.rules.crawl_delay(self._agent))
