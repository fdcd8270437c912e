"""`sitemap-crawler robots`: the I/O behind the tester, reading each origin's robots.txt once.

The fetch is the crawl's own (`fetch_robots`: RFC 9309's redirects, 4xx and 5xx handling,
the 500 KiB cap) over the crawl's transport and retries, so the tester reports what a crawl
with the same settings would obey. Only the origins of the URLs given are contacted, one
robots.txt each (its redirects on that origin aside), all at once: they are different sites.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from yarl import URL

from crawler.config import Config
from crawler.core.robots import RobotsTxt, parse_robots
from crawler.core.robots_check import RobotsSource
from crawler.errors import ConfigError
from crawler.shell.fetch import (
    ROBOTS_MAX_BYTES,
    HttpTransport,
    Response,
    fetch_robots,
    fetch_rules,
)
from crawler.shell.retry import RetryPolicy, fetch_with_retries

_HEAD = 1024  # bytes of the body kept to tell an HTML page or binary data from rules


def origin_of(url: str) -> str:
    """The origin whose robots.txt speaks for ``url`` (a normalised absolute URL)."""
    return str(URL(url, encoded=True).origin())


async def read_sources(urls: Sequence[str], config: Config) -> dict[str, RobotsSource]:
    """{origin: RobotsSource} for the origins of ``urls``. Credentials, headers and cookies go to
    the first URL's origin only, as a crawl sends them to its start URL's."""
    origins = list(dict.fromkeys(origin_of(url) for url in urls))
    http = HttpTransport(
        user_agent=config.user_agent,
        concurrency=max(1, min(config.concurrency, len(origins))),
        timeout=config.timeout,
        max_bytes=ROBOTS_MAX_BYTES,
        access=config.access(origins[0]),
    )
    policy = RetryPolicy(retries=config.retries, max_retry_after=config.max_retry_after)
    async with http:
        sources = await asyncio.gather(*(_read(origin, http, policy) for origin in origins))
    return dict(zip(origins, sources, strict=True))


class _Fetcher:
    """One request at a time through the transport, with the crawl's retries; it keeps the
    answers (the last one is the RobotsSource's) and a note per retry."""

    def __init__(self, http: HttpTransport, policy: RetryPolicy) -> None:
        self.http, self.policy = http, policy
        self.answers: list[Response] = []
        self.notes: list[str] = []

    async def get(self, url: str, max_bytes: int) -> Response:
        resp, retried = await fetch_with_retries(
            lambda: self.http.get(url, max_bytes),
            self.policy,
            status_of=lambda r: r.status or None,
            retry_after_of=lambda r: r.headers.get("Retry-After"),
            error_of=lambda r: r.error,
        )
        self.answers.append(resp)
        self.notes.extend(retried)
        return resp

    def source(self, robots: RobotsTxt) -> RobotsSource:
        last = self.answers[-1]
        return RobotsSource(
            url=last.url,
            robots=robots,
            status=last.status or None,
            size=len(last.body),
            content_type=last.headers.get("Content-Type"),
            head=last.body[:_HEAD],
            truncated=last.truncated,
            notes=tuple(self.http.redact(note) for note in self.notes),
        )


async def _read(origin: str, http: HttpTransport, policy: RetryPolicy) -> RobotsSource:
    fetcher = _Fetcher(http, policy)
    robots, _ = await fetch_robots(origin + "/", fetcher.get)
    return fetcher.source(robots)


async def read_url_source(rules_url: str, urls: Sequence[str], config: Config) -> RobotsSource:
    """--robots-from URL: the rules at that URL, applied to URLs of any origin, read as a
    crawl's --robots-from reads them (fetch_rules: redirects anywhere, anything but a final
    200 is a usage error). Credentials go to the first URL's origin only, as for a crawl."""
    http = HttpTransport(
        user_agent=config.user_agent,
        concurrency=1,
        timeout=config.timeout,
        max_bytes=ROBOTS_MAX_BYTES,
        access=config.access(origin_of(urls[0])),
    )
    policy = RetryPolicy(retries=config.retries, max_retry_after=config.max_retry_after)
    fetcher = _Fetcher(http, policy)
    async with http:
        robots = await fetch_rules(rules_url, fetcher.get)
    return fetcher.source(robots)


def read_file_source(path: Path) -> RobotsSource:
    """--robots-from FILE: the rules to test, from a draft or a copy; unreadable is a usage
    error."""
    try:
        with open(path, "rb") as file:  # once, small: no need for the event loop
            body = file.read(ROBOTS_MAX_BYTES + 1)
            size = os.fstat(file.fileno()).st_size
    except OSError as exc:
        raise ConfigError(f"--robots-from: cannot read {path}: {exc.strerror or exc}") from None
    return RobotsSource(
        url=str(path),
        robots=parse_robots(body),
        size=max(size, len(body)),
        head=body[:_HEAD],
        from_file=True,
    )
