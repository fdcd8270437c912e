"""HTTP transport: one aiohttp session, one hop per call, bodies read under a hard cap.

Redirects are never followed here: the engine follows them one hop at a time so every hop
is checked against scope and robots.txt. Every failure comes back as a Response with
`error` set instead of an exception, so one bad page never stops a crawl. A `Transport` is
anything with that `get`: the engine runs as well over an in-memory one (tests).
"""

from __future__ import annotations

import base64
import os
import re
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, cast

from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from crawler.core.access import Access, redact
from crawler.core.robots import RobotsTxt, parse_robots, robots_from_response
from crawler.core.urls import join_parts, normalize, resolve
from crawler.core.validators import Validators
from crawler.errors import ConfigError

if TYPE_CHECKING:  # aiohttp is imported where it runs: a crawl without a proxy never loads it
    import aiohttp
    from aiohttp.abc import AbstractResolver, ResolveResult

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


def conditional(validators: Validators) -> dict[str, str]:
    """The headers of a conditional GET (RFC 9110 13.1): If-None-Match, which a server
    checks first, and If-Modified-Since for servers that send no ETag."""
    headers = {}
    if validators.etag is not None:
        headers["If-None-Match"] = validators.etag
    if validators.modified is not None:
        headers["If-Modified-Since"] = validators.modified
    return headers


def describe_error(exc: BaseException, timeout: float) -> str:
    """A one-line, user-facing description of why a request failed."""
    import aiohttp

    if isinstance(exc, TimeoutError):
        return f"no complete response within {timeout:g} s"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return certificate_problem(exc.certificate_error)
    if isinstance(exc, aiohttp.ClientConnectorSSLError):
        return f"TLS handshake failed: {ssl_reason(exc.os_error)}"
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return f"cannot connect to the proxy: {connect_reason(exc.os_error)}"
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        hint = " (--proxy http://USER:PASSWORD@HOST:PORT)" if exc.status == 407 else ""
        return f"the proxy refused: HTTP {exc.status} {exc.message}{hint}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect: {connect_reason(exc.os_error)}"
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


def connect_reason(error: OSError) -> str:
    # a positive errno has the C library's words ("Connection refused"); a resolver's
    # error (socket.gaierror, errno < 0) carries its own strerror
    errno = error.errno if isinstance(error.errno, int) else 0
    reason = os.strerror(errno) if errno > 0 else error.strerror or str(error)
    return reason.lower() if reason else str(error)


def certificate_problem(error: BaseException) -> str:
    """The certificate's problem in OpenSSL's words ("self-signed certificate", "Hostname
    mismatch"), and the two ways round it: a staging site's own CA is the usual cause."""
    reason = getattr(error, "verify_message", None) or ssl_reason(error)
    return (
        f"TLS certificate not trusted: {reason} "
        f"(--ca-bundle FILE trusts its CA; --insecure checks no certificate)"
    )


def ssl_reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    if isinstance(reason, str) and reason:
        return reason.lower().replace("_", " ")
    text = str(error).splitlines()[0] if str(error) else ""
    return text or type(error).__name__


def basic_auth(user: str, password: str) -> str:
    """An Authorization value for HTTP basic auth (RFC 7617, in UTF-8)."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def home_of(access: Access) -> tuple[str, str | None, int | None] | None:
    """The crawled origin as (scheme, host, port), what a request's URL is compared with
    before the credentials, headers and cookies go with it."""
    home = URL(access.origin) if access.origin else None
    return (home.scheme, home.host, home.port) if home is not None else None


def home_headers(access: Access) -> dict[str, str]:
    """The headers for the crawled origin only: the user's, Authorization (built here, as
    aiohttp 4 wants) and the cookies."""
    headers = dict(access.headers)
    if access.auth is not None:
        headers["Authorization"] = basic_auth(*access.auth)
    if access.cookie_header is not None:
        headers["Cookie"] = access.cookie_header
    return headers


def tls_context(access: Access) -> ssl.SSLContext | bool:
    """What the connector checks certificates with: the system's CAs (True), those plus a
    --ca-bundle (a staging site's own CA; the system's stay trusted for a production
    --robots-from URL), or nothing at all (--insecure)."""
    if access.insecure:
        return False
    if access.ca_bundle is None:
        return True
    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=access.ca_bundle)
    except (OSError, ssl.SSLError) as exc:  # checked with the config: only if it changed since
        raise ConfigError(f"ca_bundle: cannot load {access.ca_bundle}: {exc}") from None
    return context


class Transport(Protocol):
    async def get(
        self, url: str, max_bytes: int | None = None, validators: Validators | None = None
    ) -> Response:
        """GET url as it is, without following redirects; failures as Response.error.
        `validators`: ask conditionally (If-None-Match, If-Modified-Since): a 304 may answer."""
        ...


class PinnedResolver:
    """--resolve: these (host, port) pairs connect to the given address, as curl's
    --resolve; any other name is resolved as usual. The request keeps its own Host header
    and TLS server name, so a staging server answers as the public one would.
    aiohttp's AbstractResolver in all but name (its base class would import aiohttp)."""

    def __init__(self, pinned: tuple[tuple[str, int, str], ...]) -> None:
        from aiohttp.resolver import DefaultResolver

        self._pinned = {(host, port): address for host, port, address in pinned}
        self._default = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = self._pinned.get((host.lower().rstrip("."), port))
        if address is None:
            return await self._default.resolve(host, port, family)
        six = ":" in address
        result: ResolveResult = {
            "hostname": host,
            "host": address,
            "port": port,
            "family": socket.AF_INET6 if six else socket.AF_INET,
            "proto": 0,
            "flags": socket.AI_NUMERICHOST,
        }
        return [result]

    async def close(self) -> None:
        await self._default.close()


class BaseTransport:
    """What a transport of the crawl is made from, and what it tells: both transports
    (aiohttp's here, the lean one in http1.py) and the worker pool read these."""

    def __init__(
        self,
        *,
        user_agent: str,
        concurrency: int,
        timeout: float,
        max_bytes: int,
        access: Access | None = None,
    ) -> None:
        """`access`: credentials, headers and cookies (sent to `access.origin` only), the
        proxy and the TLS trust; the default reaches a public site."""
        self.user_agent = user_agent
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.access = access = access or Access()
        self._secrets = access.secrets
        self._home = home_of(access)
        self._prepare()

    def _prepare(self) -> None:
        """A transport's own state, made from the settings."""

    def redact(self, text: str) -> str:
        """text without the secrets of `access`: for every message that leaves the process."""
        return redact(text, self._secrets) if self._secrets else text


class HttpTransport(BaseTransport):
    """Owns the aiohttp session. Use as an async context manager."""

    def _prepare(self) -> None:
        access = self.access
        self._session: aiohttp.ClientSession | None = None
        self._headers = home_headers(access) or None
        self._proxy_headers = (
            {"Proxy-Authorization": basic_auth(*access.proxy_auth)}
            if access.proxy_auth is not None
            else None
        )

    async def __aenter__(self) -> HttpTransport:
        import aiohttp

        access = self.access
        resolver = PinnedResolver(access.pinned) if access.pinned else None
        connector = aiohttp.TCPConnector(
            limit=self.concurrency,
            ttl_dns_cache=300,
            ssl=tls_context(access),
            resolver=cast("AbstractResolver | None", resolver),
        )
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

    async def get(
        self, url: str, max_bytes: int | None = None, validators: Validators | None = None
    ) -> Response:
        """GET url (already normalised: sent as is), without following redirects."""
        import aiohttp

        assert self._session is not None, "use HttpTransport as an async context manager"
        cap = self.max_bytes if max_bytes is None else max_bytes
        started = time.monotonic()
        target = URL(url, encoded=True)
        # credentials, headers and cookies for the crawled origin only: never for another
        # host, whatever asks for it (a --robots-from URL, a bug in scope checks)
        home = self._home is not None and (target.scheme, target.host, target.port) == self._home
        headers = self._headers if home else None
        if self._proxy_headers is not None and target.scheme == "http":
            # plain HTTP goes to the proxy as is: its credentials ride in the request itself
            # (for https they go in the CONNECT, as proxy_headers)
            headers = {**(headers or {}), **self._proxy_headers}
        if validators is not None:
            headers = {**(headers or {}), **conditional(validators)}
        try:
            async with self._session.get(
                target,
                allow_redirects=False,
                headers=headers,
                proxy=self.access.proxy,
                proxy_headers=self._proxy_headers,
            ) as resp:
                if resp.status in REDIRECT_STATUSES or resp.status in (204, 304):
                    answer = Response(url, resp.status, resp.headers)
                else:
                    body, truncated = await _read_capped(resp, cap)
                    answer = Response(url, resp.status, resp.headers, body, truncated=truncated)
        except (aiohttp.ClientError, TimeoutError, ValueError, OSError) as exc:
            answer = Response(url, error=self.redact(describe_error(exc, self.timeout)))
        answer.seconds = time.monotonic() - started
        return answer


#: A URL with a scheme of its own (another origin, when resolve() takes no such URL).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


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
    home = join_parts(normalize(page_url))[1]  # scheme, host lower-cased; no default port
    url = home + "/robots.txt"
    for _ in range(ROBOTS_MAX_REDIRECTS + 1):
        resp = await get(url, ROBOTS_MAX_BYTES)
        if resp.status not in REDIRECT_STATUSES or not resp.location:
            break
        location = resp.location.strip()
        target = resolve(url, location)  # the crawl's own URL semantics: http(s) only
        if target is None and _SCHEME.match(location) is None:
            break  # no URL at all
        if target is None or join_parts(target)[1] != home:
            reason = f"redirects to another origin ({target or location})"
            robots = robots_from_response(None, None, error=reason)
            return robots, f"{url}: {reason}, everything disallowed"
        url = target
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


async def fetch_rules(url: str, get: Callable[[str, int], Awaitable[Response]]) -> RobotsTxt:
    """The robots.txt rules at a --robots-from URL (production's, applied to a staging
    site), following up to 5 redirects anywhere on http(s): the user named this source, so
    unlike a site's own robots.txt it need not live on the crawled origin.

    Anything but a final 200 raises ConfigError (exit 2) naming the URL: the rules asked
    for cannot be applied, and neither "allow everything" nor "nothing" would be them.
    """
    first = url
    for _ in range(ROBOTS_MAX_REDIRECTS + 1):
        resp = await get(url, ROBOTS_MAX_BYTES)
        if resp.status not in REDIRECT_STATUSES:
            break
        location = (resp.location or "").strip()
        target = resolve(url, location) if location else None  # http(s) only
        if target is None:
            raise ConfigError(
                f"robots_from {first}: HTTP {resp.status} without a usable Location; "
                "nothing was crawled"
            )
        url = target
    else:
        raise ConfigError(
            f"robots_from {first}: more than {ROBOTS_MAX_REDIRECTS} redirects; nothing was crawled"
        )
    if resp.error or resp.status != 200:
        raise ConfigError(
            f"robots_from {url}: {resp.error or f'HTTP {resp.status}'}; nothing was crawled "
            "(the rules to apply could not be read)"
        )
    return parse_robots(resp.body)


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
