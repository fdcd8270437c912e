"""What the search engines' sitemap APIs say, read and put in words (#28). Pure: the requests
are crawler.shell.submit's.

Google's Search Console (Sitemaps API, webmasters/v3) and Bing Webmaster Tools (its JSON API)
each keep, per sitemap, when it was last submitted and read and what they made of it. Both
answers become one `Status`, printed as one line per engine and sitemap. An error answer
becomes one line saying what to do, and whether trying again later can help (`later`): a
403 will not pass by itself, a 429 or a 503 may.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final
from urllib.parse import quote

from crawler.core.urls import join_parts, normalize

GOOGLE_BASE: Final = "https://www.googleapis.com"
BING_BASE: Final = "https://ssl.bing.com"
#: The one scope the Sitemaps API's submit needs (get would do with .readonly).
GOOGLE_SCOPE: Final = "https://www.googleapis.com/auth/webmasters"


@dataclass(slots=True, frozen=True)
class Status:
    """What one engine last said about one sitemap; None where it said nothing."""

    engine: str  # google or bing
    sitemap: str
    known: bool = True  # False: the engine has no such sitemap for the site
    site: str = ""  # the property or site asked about (said when the sitemap is not known)
    last_submitted: str | None = None  # ISO 8601
    last_read: str | None = None  # Google's lastDownloaded, Bing's LastCrawled
    pending: bool | None = None  # Google: not processed yet
    state: str | None = None  # Bing's Status (Success, Pending, ...)
    errors: int | None = None
    warnings: int | None = None
    urls: dict[str, int] = field(default_factory=dict)  # per content type (web, image, ...)

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "sitemap": self.sitemap,
            "known": self.known,
            "last_submitted": self.last_submitted,
            "last_read": self.last_read,
            "pending": self.pending,
            "state": self.state,
            "errors": self.errors,
            "warnings": self.warnings,
            "urls": self.urls,
        }

    @property
    def has_errors(self) -> bool:
        return bool(self.errors) or (self.state or "").lower() in ("failed", "error")


class Refusal(Exception):
    """An engine's answer that says no: `later` when trying again may help (429, 5xx, no
    answer), else the settings or the account need fixing (401, 403, 404, 400)."""

    def __init__(self, message: str, *, later: bool = False) -> None:
        super().__init__(message)
        self.later = later


def default_site(sitemap_url: str) -> str:
    """The site a sitemap belongs to as both consoles name a URL-prefix property: its
    origin and a slash."""
    return join_parts(normalize(sitemap_url))[1] + "/"


def google_path(site: str, sitemap: str) -> str:
    """The Sitemaps API's path for one sitemap of one property: both are path segments,
    percent-encoded whole (slashes and colons too), as the API's own clients send them."""
    return f"/webmasters/v3/sites/{quote(site, safe='')}/sitemaps/{quote(sitemap, safe='')}"


def google_status(sitemap: str, data: dict[str, Any]) -> Status:
    """A Sitemaps API `Sitemap` resource (sitemaps.get): path, lastSubmitted, isPending,
    lastDownloaded, warnings and errors (int64 as strings), contents[] of type and
    submitted."""
    urls: dict[str, int] = {}
    for item in data.get("contents") or []:
        if isinstance(item, dict) and item.get("type"):
            urls[str(item["type"])] = _int(item.get("submitted")) or 0
    return Status(
        "google",
        str(data.get("path") or sitemap),
        last_submitted=_iso(data.get("lastSubmitted")),
        last_read=_iso(data.get("lastDownloaded")),
        pending=bool(data["isPending"]) if "isPending" in data else None,
        errors=_int(data.get("errors")),
        warnings=_int(data.get("warnings")),
        urls=urls,
    )


def bing_status(sitemap: str, data: Any, site: str = "") -> Status:
    """Bing's GetFeeds answer ({"d": [Feed, ...]}: Url, Status, Submitted, LastCrawled,
    UrlCount, Type, ...) read for one sitemap; not among them: not known."""
    feeds = data.get("d") if isinstance(data, dict) else None
    for feed in feeds or []:
        if isinstance(feed, dict) and _same_url(str(feed.get("Url") or ""), sitemap):
            count = _int(feed.get("UrlCount"))
            return Status(
                "bing",
                sitemap,
                last_submitted=_bing_date(feed.get("Submitted")),
                last_read=_bing_date(feed.get("LastCrawled")),
                state=str(feed["Status"]) if feed.get("Status") is not None else None,
                urls={"web": count} if count is not None else {},
            )
    return Status("bing", sitemap, known=False, site=site)


def line(status: Status) -> str:
    """One line per engine and sitemap, what `submit --status` prints."""
    head = f"{status.engine:<6} {status.sitemap}: "
    if not status.known:
        where = f" {status.site}" if status.site else ""
        return head + (
            f"not known for the site{where} (submit it first; or the site or property setting "
            "names another site than the one the engine knows)"
        )
    parts = []
    parts.append(f"last read {status.last_read}" if status.last_read else "never read yet")
    if status.last_submitted:
        parts.append(f"submitted {status.last_submitted}")
    if status.pending:
        parts.append("pending")
    if status.state:
        parts.append(f"status {status.state}")
    if status.errors is not None:
        parts.append(_count(status.errors, "error"))
    if status.warnings is not None:
        parts.append(_count(status.warnings, "warning"))
    if status.urls:
        parts.append(", ".join(f"{kind} {n} URLs" for kind, n in status.urls.items()))
    return head + "; ".join(parts)


def google_error(status: int, text: str, *, site: str, sitemap: str, account: str) -> Refusal:
    """A Sitemaps API error answer ({"error": {"code", "message", "status"}}) as one line
    saying what to fix."""
    said = _google_message(text)
    tail = f" (Google said: {said})" if said else ""
    if status == 401:
        return Refusal(f"google: the access token was refused (HTTP 401){tail}")
    if status == 403:
        return Refusal(
            f"google: {account} may not use the Search Console property {site} (HTTP 403): add "
            f"it as a user (Full or Owner) of that property, and check the key's project has "
            f"the Search Console API enabled{tail}"
        )
    if status == 404:
        return Refusal(
            f"google: Search Console has no property {site} or no sitemap {sitemap} in it "
            f"(HTTP 404): set google_property to the property's exact name "
            f"(https://www.example.com/ or sc-domain:example.com){tail}"
        )
    if status == 429 or status >= 500:
        return Refusal(
            f"google: HTTP {status}, still after retries: try again later{tail}", later=True
        )
    return Refusal(f"google: the request was refused (HTTP {status}){tail}")


#: Bing's ApiErrorCode values that trying again later may cure (internal, throttled).
_BING_LATER: Final = {1: "InternalError", 2: "UnknownError", 4: "ThrottleUser", 5: "ThrottleHost"}
_BING_CODES: Final = {
    3: "InvalidApiKey: check bing_api_key (Bing Webmaster Tools, Settings > API access)",
    6: "UserBlocked",
    7: "InvalidUrl: the sitemap's URL is not one Bing takes for this site",
    8: "InvalidParameter",
    9: "TooManySites",
    10: "UserNotFound",
    11: "NotFound",
    13: "NotAllowed",
    14: "NotAuthorized: the key's account has not verified this site in Bing Webmaster Tools",
    16: "Deprecated",
}


def bing_error(status: int, text: str, *, site: str) -> Refusal:
    """A Bing Webmaster API error answer (an ApiFault: {"ErrorCode": n, "Message": ...})
    as one line saying what to fix."""
    code, message = _bing_fault(text)
    if code in _BING_LATER:
        return Refusal(
            f"bing: {_BING_LATER[code]} (HTTP {status}), still after retries: try again later",
            later=True,
        )
    if code is not None:
        what = _BING_CODES.get(code, f"error code {code}")
        said = f" (Bing said: {message})" if message else ""
        return Refusal(f"bing: the request for site {site} was refused: {what}{said}")
    if status == 429 or status >= 500:
        return Refusal(f"bing: HTTP {status}, still after retries: try again later", later=True)
    return Refusal(f"bing: the request for site {site} was refused (HTTP {status})")


def _google_message(text: str) -> str:
    try:
        error = json.loads(text).get("error") or {}
    except (ValueError, AttributeError):
        return ""
    message = error.get("message") if isinstance(error, dict) else None
    return " ".join(str(message).split())[:300] if message else ""


def _bing_fault(text: str) -> tuple[int | None, str]:
    try:
        data = json.loads(text)
    except ValueError:
        return None, ""
    if isinstance(data, dict) and isinstance(data.get("d"), dict):  # some faults are wrapped
        data = data["d"]
    if not isinstance(data, dict):
        return None, ""
    message = " ".join(str(data.get("Message") or "").split())[:300]
    return _int(data.get("ErrorCode")), message


def _same_url(a: str, b: str) -> bool:
    try:
        return normalize(a) == normalize(b)
    except ValueError:
        return a == b


def _int(value: Any) -> int | None:
    """int64 fields come as strings in Google's JSON; anything else unreadable is None."""
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _iso(value: Any) -> str | None:
    return str(value) if value else None


_BING_DATE: Final = re.compile(r"/Date\((-?\d+)([+-]\d{4})?\)/")


def _bing_date(value: Any) -> str | None:
    """WCF's JSON date, "/Date(1316156400000-0700)/" (ms since the epoch, UTC, and the
    server's offset), as ISO 8601 in that offset."""
    match = _BING_DATE.fullmatch(str(value or ""))
    if match is None:
        return None
    when = datetime.fromtimestamp(int(match[1]) / 1000, UTC)
    if when.year < 1971:  # .NET's DateTime.MinValue: never
        return None
    if match[2]:
        sign = -1 if match[2][0] == "-" else 1
        offset = timedelta(hours=int(match[2][1:3]), minutes=int(match[2][3:]))
        when = when.astimezone(timezone(sign * offset))
    return when.isoformat(timespec="seconds")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
