"""Submitting a published sitemap to the search engines' APIs, and reading back what they
made of it (#28): `sitemap-crawler submit [--status]`, and `submit = [...]` after a publish.

Google retired the sitemap ping in 2023 (Bing followed): a sitemap reaches Google through
robots.txt or Search Console. Search Console's Sitemaps API (webmasters/v3) takes a
submission (PUT .../sitemaps/{feedpath}) and tells its status (GET, the same path), for a
service account that is a user of the property; its OAuth2 token comes from google-auth,
from the account's JSON key file (the JWT-bearer grant, signed with the key). Bing
Webmaster Tools' JSON API takes SubmitFeed (POST {siteUrl, feedUrl}) and GetFeeds, with the
account's API key. IndexNow is another thing (URLs, not sitemaps) and not here.

Every request is retried on a connection error, 429 or 5xx with a bounded backoff (the
engine's Retry-After honoured up to a minute) and cut off after the crawl's `timeout`. The
key file's contents, the token and the API key are never printed: no message quotes a
request URL (Bing's carries the key) and every one is redacted of them besides.

The base URLs are the engines' own; the test suite points them at a server on 127.0.0.1 with
SITEMAP_CRAWLER_TEST_GOOGLE_API and SITEMAP_CRAWLER_TEST_BING_API (no config key: from_env
skips the TEST_ prefix, and no setting of a user's can send a key elsewhere).
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
from yarl import URL

from crawler.core.access import redact
from crawler.core.submissions import (
    BING_BASE,
    GOOGLE_BASE,
    GOOGLE_SCOPE,
    Refusal,
    Status,
    bing_error,
    bing_status,
    default_site,
    google_error,
    google_path,
    google_status,
)
from crawler.errors import ConfigError
from crawler.shell.retry import Reply, RetryPolicy, call

#: Retries after a first request that failed for a reason that may pass.
RETRIES: Final = 3
MAX_RETRY_AFTER: Final = 60.0
TEST_GOOGLE: Final = "SITEMAP_CRAWLER_TEST_GOOGLE_API"
TEST_BING: Final = "SITEMAP_CRAWLER_TEST_BING_API"


@dataclass(slots=True, frozen=True)
class Settings:
    """Which engines, and how to reach each (the submit keys of a Config)."""

    engines: tuple[str, ...]
    google_key_file: Path | None = None
    google_property: str | None = None
    bing_api_key: str | None = None
    bing_site: str | None = None
    timeout: float = 30.0

    @classmethod
    def of(cls, config: Any) -> Settings:
        return cls(
            config.submit,
            config.google_key_file,
            config.google_property,
            (config.bing_api_key or "").strip() or None,
            config.bing_site,
            config.timeout,
        )


class _Client:
    """One session's requests, retried; secrets never in what is raised."""

    def __init__(self, session: aiohttp.ClientSession, secrets: list[str]) -> None:
        self.session = session
        self.secrets = secrets

    async def request(
        self, engine: str, method: str, url: str, *, headers: dict[str, str], body: Any = None
    ) -> Reply:
        policy = RetryPolicy(retries=RETRIES, max_retry_after=MAX_RETRY_AFTER, base=1.0)
        answer = await call(
            self.session, method, URL(url, encoded=True), policy, headers=headers, json=body
        )
        if answer.status is None:
            raise Refusal(
                f"{engine}: no answer from its API ({answer.error or 'timeout'}), still after "
                "retries: try again later",
                later=True,
            )
        return answer


class Google:
    """Search Console's Sitemaps API, as a service account."""

    name = "google"

    def __init__(
        self, client: _Client, key_file: Path, site: str | None, timeout: float, credentials: Any
    ) -> None:
        self.client = client
        self.site = site
        self.base = os.environ.get(TEST_GOOGLE, GOOGLE_BASE).rstrip("/")
        # read by check_ready, before a crawl: a key rotated during it is not read again
        self.credentials = credentials if credentials is not None else _credentials(key_file)
        self.account = str(getattr(self.credentials, "service_account_email", "the account"))
        self.timeout = timeout

    def site_of(self, sitemap: str) -> str:
        return self.site or default_site(sitemap)

    async def _headers(self) -> dict[str, str]:
        if not self.credentials.valid:
            await self._refresh()
        token = self.credentials.token
        self.client.secrets.append(token)
        return {"Authorization": f"Bearer {token}", "Accept": "application/json"}

    async def _refresh(self) -> None:
        from google.auth import exceptions

        try:
            await asyncio.to_thread(self.credentials.refresh, _Transport(self.timeout))
        except exceptions.RefreshError as exc:
            said = " ".join(str(exc.args[0] if exc.args else exc).split())[:300]
            later = bool(getattr(exc, "retryable", False))
            raise Refusal(
                f"google: the token endpoint refused the service account {self.account}: "
                f"{said} (a deleted or disabled key, or a wrong clock)"
                + ("; try again later" if later else ""),
                later=later,
            ) from None
        except exceptions.TransportError as exc:
            raise Refusal(
                f"google: no token: the token endpoint could not be reached ({exc}); "
                "try again later",
                later=True,
            ) from None

    async def _call(self, method: str, sitemap: str, *, absent_ok: bool = False) -> Reply:
        site = self.site_of(sitemap)
        url = self.base + google_path(site, sitemap)
        answer = await self.client.request(self.name, method, url, headers=await self._headers())
        if absent_ok and answer.status == 404:
            return answer
        if not 200 <= (answer.status or 0) < 300:
            raise google_error(
                answer.status or 0, answer.text, site=site, sitemap=sitemap, account=self.account
            )
        return answer

    async def submit(self, sitemap: str) -> str:
        await self._call("PUT", sitemap)
        return f"google: submitted {sitemap} to the Search Console property {self.site_of(sitemap)}"

    async def status(self, sitemap: str) -> Status:
        answer = await self._call("GET", sitemap, absent_ok=True)
        if answer.status == 404:  # no such sitemap in the property (or no such property)
            return Status(self.name, sitemap, known=False, site=self.site_of(sitemap))
        try:
            data = json.loads(answer.text or "{}")
        except ValueError:
            raise Refusal("google: the Sitemaps API's answer is not JSON", later=True) from None
        return google_status(sitemap, data if isinstance(data, dict) else {})


class Bing:
    """Bing Webmaster Tools' JSON API, with the account's API key."""

    name = "bing"

    def __init__(self, client: _Client, api_key: str, site: str | None) -> None:
        self.client = client
        self.key = api_key
        self.site = site
        self.base = os.environ.get(TEST_BING, BING_BASE).rstrip("/") + "/webmaster/api.svc/json/"
        client.secrets.append(api_key)

    def site_of(self, sitemap: str) -> str:
        return self.site or default_site(sitemap)

    def _url(self, method: str, **params: str) -> str:
        return str(URL(self.base + method).with_query({**params, "apikey": self.key}))

    async def submit(self, sitemap: str) -> str:
        site = self.site_of(sitemap)
        answer = await self.client.request(
            self.name,
            "POST",
            self._url("SubmitFeed"),
            headers={"Content-Type": "application/json; charset=utf-8"},
            body={"siteUrl": site, "feedUrl": sitemap},
        )
        if answer.status != 200:
            raise bing_error(answer.status or 0, answer.text, site=site)
        return f"bing: submitted {sitemap} for the site {site}"

    async def status(self, sitemap: str) -> Status:
        site = self.site_of(sitemap)
        answer = await self.client.request(
            self.name, "GET", self._url("GetFeeds", siteUrl=site), headers={}
        )
        if answer.status != 200:
            raise bing_error(answer.status or 0, answer.text, site=site)
        try:
            data = json.loads(answer.text or "{}")
        except ValueError:
            raise Refusal("bing: the API's answer is not JSON", later=True) from None
        return bing_status(sitemap, data, site)


async def run(
    settings: Settings,
    sitemaps: Sequence[str],
    *,
    status: bool,
    say: Callable[[str], None],
    credentials: Any = None,
) -> tuple[list[Status], list[Refusal]]:
    """Submit each sitemap to each engine (or, with `status`, read what each says of it),
    saying a line for each submission. An engine that refuses is not asked again in this
    run; the others still are. Returns the statuses read and the refusals met.
    `credentials`: Google's, as check_ready read them (else read from the key file now)."""
    secrets: list[str] = []
    statuses: list[Status] = []
    refusals: list[Refusal] = []
    timeout = aiohttp.ClientTimeout(total=settings.timeout)
    headers = {"User-Agent": "sitemap-crawler"}
    async with aiohttp.ClientSession(timeout=timeout, headers=headers, trust_env=True) as session:
        client = _Client(session, secrets)
        for engine in _engines(settings, client, credentials):
            try:
                for sitemap in sitemaps:
                    if status:
                        statuses.append(await engine.status(sitemap))
                    else:
                        say(await engine.submit(sitemap))
            except Refusal as refusal:
                refusals.append(Refusal(redact(str(refusal), secrets), later=refusal.later))
    return statuses, refusals


def _engines(settings: Settings, client: _Client, credentials: Any) -> list[Google | Bing]:
    engines: list[Google | Bing] = []
    for name in settings.engines:
        if name == "google":
            assert settings.google_key_file is not None  # the config's checks
            engines.append(
                Google(
                    client,
                    settings.google_key_file,
                    settings.google_property,
                    settings.timeout,
                    credentials,
                )
            )
        elif name == "bing":
            assert settings.bing_api_key is not None
            engines.append(Bing(client, settings.bing_api_key, settings.bing_site))
    return engines


def check_ready(settings: Settings) -> Any:
    """Each engine's credentials, now, before a crawl or a request: a key file that is
    missing or no service account's key, or no API key, fails at once with exit 2, not
    after a night's crawl. (Checked by the commands that submit, not with the other
    settings: an audit of a config naming engines need not hold their keys.) Returns
    Google's credentials (None without google), for run(): read once, kept."""
    credentials = None
    if "google" in settings.engines:
        if settings.google_key_file is None:
            raise ConfigError(
                "submit = google needs google_key_file (or $GOOGLE_APPLICATION_CREDENTIALS): "
                "the service account's JSON key file"
            )
        if not settings.google_key_file.is_file():
            raise ConfigError(f"google_key_file: no such file: {settings.google_key_file}")
        credentials = _credentials(settings.google_key_file)
    if "bing" in settings.engines and not settings.bing_api_key:
        raise ConfigError(
            "submit = bing needs bing_api_key (best as SITEMAP_CRAWLER_BING_API_KEY): the "
            "API key from Bing Webmaster Tools' settings"
        )
    return credentials


def _credentials(key_file: Path) -> Any:
    """The service account's credentials from its JSON key file, or a ConfigError naming the
    file (never quoting it: it holds the private key)."""
    from google.oauth2 import service_account

    try:
        return service_account.Credentials.from_service_account_file(
            str(key_file), scopes=[GOOGLE_SCOPE]
        )
    except OSError as exc:
        raise ConfigError(
            f"google_key_file: cannot read {key_file}: {exc.strerror or type(exc).__name__}"
        ) from None
    except (ValueError, KeyError, TypeError):
        raise ConfigError(
            f"google_key_file {key_file} is not a service account's JSON key (create one in "
            "Google Cloud: IAM > Service accounts > Keys > Add key > JSON)"
        ) from None


class _Transport:
    """google-auth's transport for the token request, on the standard library: the one
    request google-auth makes itself, run in a thread beside the event loop."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def __call__(
        self,
        url: str,
        method: str = "GET",
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> _TokenResponse:
        from google.auth import exceptions

        request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                return _TokenResponse(response.status, dict(response.headers), response.read())
        except urllib.error.HTTPError as exc:  # an answer: google-auth reads its error
            return _TokenResponse(exc.code, dict(exc.headers or {}), exc.read())
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", None) or type(exc).__name__
            raise exceptions.TransportError(str(reason)) from None


@dataclass(slots=True, frozen=True)
class _TokenResponse:
    """google-auth's answer from our transport: it reads these three fields only."""

    status: int
    headers: dict[str, str]
    data: bytes
