"""HTTP transport: one aiohttp session, one hop per call, bodies read under a hard cap.

Redirects are never followed here: the engine follows them one hop at a time so every hop
is checked against scope and robots.txt. Every failure comes back as a Response with
`error` set instead of an exception, so one bad page never stops a crawl. A `Transport` is
anything with that `get`: the engine runs as well over an in-memory one (tests).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from crawler.core.robots import RobotsTxt, robots_from_response

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 2.5: parse at least 500 KiB; we read no more
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2

_EMPTY_HEADERS: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())


@dataclass(slots=True)
class Response:
    """One HTTP answer as received: plain data, never parsed here."""

    url: str
    status: int = 0  # 0: no HTTP response at all (see error)
    headers: CIMultiDictProxy[str] = field(default_factory=lambda: _EMPTY_HEADERS)
    body: bytes = b""
    error: str | None = None
    truncated: bool = False  # the body passed the byte cap; what we have is incomplete
    notes: tuple[str, ...] = ()  # one line per retry that led to this response
    seconds: float | None = None  # how long the exchange took, where the request was made

    @property
    def location(self) -> str | None:
        return self.headers.get("Location")


def describe_error(exc: BaseException, timeout: float) -> str:
    """A one-line, user-facing description of why a request failed."""
    if isinstance(exc, TimeoutError):
        return f"no complete response within {timeout:g} s"
    if isinstance(exc, aiohttp.ClientConnectorError):
        error = exc.os_error
        # a positive errno has the C library's words ("Connection refused"); a resolver's
        # error (socket.gaierror, errno < 0) carries its own strerror
        errno = error.errno if isinstance(error.errno, int) else 0
        reason = os.strerror(errno) if errno > 0 else error.strerror or str(error)
        return f"cannot connect: {reason.lower() if reason else error}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "server closed the connection without a response"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "response body cut short (connection reset or bad encoding)"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"malformed response: {exc.message}"
    if isinstance(exc, aiohttp.InvalidURL):
        return f"invalid URL: {exc}"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Transport(Protocol):
    async def get(self, url: str, max_bytes: int | None = None) -> Response:
        """GET url as it is, without following redirects; failures as Response.error."""
        ...


class HttpTransport:
    """Owns the aiohttp session. Use as an async context manager."""

    def __init__(
        self, *, user_agent: str, concurrency: int, timeout: float, max_bytes: int
    ) -> None:
        self.user_agent = user_agent
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> HttpTransport:
        connector = aiohttp.TCPConnector(limit=self.concurrency, ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": self.user_agent},
            cookie_jar=aiohttp.DummyCookieJar(),  # a crawler keeps no session state
            # total covers the whole exchange, body included: a server that trickles bytes
            # is cut off at the deadline however often it sends one. No sock_read: it could
            # never fire first, and re-arming it on every chunk read costs a timer each time
            timeout=aiohttp.ClientTimeout(total=self.timeout, connect=min(10.0, self.timeout)),
            auto_decompress=True,
            max_line_size=16 * 1024,
            max_field_size=16 * 1024,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def get(self, url: str, max_bytes: int | None = None) -> Response:
        """GET url (already normalised: sent as is), without following redirects."""
        assert self._session is not None, "use HttpTransport as an async context manager"
        cap = self.max_bytes if max_bytes is None else max_bytes
        started = time.monotonic()
        try:
            async with self._session.get(URL(url, encoded=True), allow_redirects=False) as resp:
                if resp.status in REDIRECT_STATUSES or resp.status == 204:
                    answer = Response(url, resp.status, resp.headers)
                else:
                    body, truncated = await _read_capped(resp, cap)
                    answer = Response(url, resp.status, resp.headers, body, truncated=truncated)
        except (aiohttp.ClientError, TimeoutError, ValueError, OSError) as exc:
            answer = Response(url, error=describe_error(exc, self.timeout))
        answer.seconds = time.monotonic() - started
        return answer


async def fetch_robots(
    page_url: str, get: Callable[[str, int], Awaitable[Response]]
) -> tuple[RobotsTxt, str]:
    """Fetch the robots.txt of page_url's origin, following up to 5 redirects
    (RFC 9309 2.3.1.2) as long as they stay on that origin.

    A redirect to another scheme, host or port is not followed: rules found there are
    not known to speak for this site, and the crawl sends no request off its origin.
    It counts as an unreachable robots.txt, everything disallowed (the safe reading of
    RFC 9309 2.3.1.2 and 2.3.1.4), so the crawl stops rather than guessing.

    Returns the rules and a one-line note of how they were obtained, for the report.
    `get(url, max_bytes)` makes one request: the engine sends it through its throttle
    and retries like any other.
    """
    home = URL(page_url, encoded=True).origin()
    url = str(home) + "/robots.txt"
    for _ in range(ROBOTS_MAX_REDIRECTS + 1):
        resp = await get(url, ROBOTS_MAX_BYTES)
        if resp.status not in REDIRECT_STATUSES or not resp.location:
            break
        try:
            target = URL(url).join(URL(resp.location))
        except ValueError:
            break
        if not _same_origin(target, home):
            reason = f"redirects to another origin ({target})"
            robots = robots_from_response(None, None, error=reason)
            return robots, f"{url}: {reason}, everything disallowed"
        url = str(target)
    else:
        return robots_from_response(
            None, None, error="more than 5 redirects"
        ), f"{url}: more than {ROBOTS_MAX_REDIRECTS} redirects, everything disallowed"
    if resp.status in REDIRECT_STATUSES:  # a redirect without a usable Location
        return robots_from_response(
            404, None
        ), f"{url}: redirect without a usable Location, everything allowed"
    robots = robots_from_response(resp.status or None, resp.body, error=resp.error)
    note = f"{url}: {resp.error or f'HTTP {resp.status}'}"
    if robots.denial:
        note += ", everything disallowed"
    elif resp.status >= 300:
        note += ", everything allowed"
    else:
        note += f", {len(resp.body)} bytes"
        if resp.truncated:
            note += f" (only the first {ROBOTS_MAX_BYTES} are read)"
    return robots, note


def _same_origin(url: URL, origin: URL) -> bool:
    """Scheme, host and port compared the way yarl normalises them: case-insensitive, with
    the default port filled in, so http://A.test:80 is http://a.test."""
    return (url.scheme, url.host, url.port) == (origin.scheme, origin.host, origin.port)


async def _read_capped(resp: aiohttp.ClientResponse, cap: int) -> tuple[bytes, bool]:
    """Read the decompressed body up to cap bytes; stop (and drop the connection) past it.

    Counting decompressed bytes as they arrive is also the defence against compression
    bombs: we never hold more than cap plus one chunk.
    """
    length = resp.content_length
    if length is not None and length <= cap and "Content-Encoding" not in resp.headers:
        body = await resp.content.read()
        return body, False
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_any():
        size += len(chunk)
        if size > cap:
            chunks.append(chunk[: cap - (size - len(chunk))])
            resp.close()
            return b"".join(chunks), True
        chunks.append(chunk)
    return b"".join(chunks), False
