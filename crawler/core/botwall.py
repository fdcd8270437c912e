"""Bot walls: a CDN's bot protection answering instead of the site. Pure.

A challenge or block page of Cloudflare, Akamai, Imperva (Incapsula), AWS WAF or DataDome is
not the site's content: listed, it would be a sitemap of interstitials; counted as the
site's 403s and 503s, it would make a healthy site look broken; compared for duplicates,
every page would be a twin of every other. So an answer is screened here before it is
analysed, in the process that analyses it (crawler.shell.pages), and recognised by what each
service documents or always sends, never by a 403 alone: a site's own "Access denied" page
is the site's answer, and is judged as one (http_error).

The markers (checked against the services' documentation and captured answers):
- Cloudflare: `cf-mitigated: challenge` on every challenge page, whatever its status (403,
  503, 429); else a 403/429/503 from Cloudflare (a `cf-ray` header, or `Server: cloudflare`)
  whose page is the challenge (`/cdn-cgi/challenge-platform/`, `_cf_chl_opt`, "Just a
  moment...") or the firewall's block page ("Attention Required! | Cloudflare"). Its 5xx
  error pages (520-526: the origin is down) are not walls.
- Akamai: a 403 "Access Denied" page (a few hundred bytes) with a "Reference #" and its
  errors.edgesuite.net link (an HTTP client gets both HTML-entity encoded). Its other error
  pages (a 503 "Zero size object", a timeout) carry the same reference: they are outages,
  not walls.
- Imperva (Incapsula): an answer through Imperva (its `X-Iinfo` or `X-CDN` header, or its
  `visid_incap_`/`incap_ses_` cookies) saying "Incapsula incident ID" (block page, and the
  challenge iframe's text), or loading the challenge script `/_Incapsula_Resource?SWJIYLWA=`.
  Imperva answers these with 200 as often as not, so a 200 carrying `X-Iinfo` is looked at
  too; its real pages load other `_Incapsula_Resource` scripts, which are no marker.
- AWS WAF: `x-amzn-waf-action: challenge` (HTTP 202) or `captcha` (405); without the header,
  a 202/405 whose page holds the challenge's `gokuProps` or `awsWafCookieDomainList` (a
  real page may load the token script from awswaf.com: not a marker).
- DataDome: an `x-dd-b` header on a refusal, or a 403/429 page loading its captcha from
  captcha-delivery.com with its `datadome` cookie or `x-datadome` header (sent on every
  answer of a protected site, so never a marker alone).

Cost (bench/botwall_bench.py): a 200 answer, nearly every page, costs a comparison and one
header lookup (0.2-0.5 µs measured on the shared two-core machine); another answer a few
header lookups, and a scan of its first SCAN_BYTES only when its status is one the
services' pages come with (202, 403, 405, 429, 503) and the service's own headers (or
Akamai's tiny page's size) point to it, or when it came through Imperva (a few µs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from crawler.core.page import Headers

__all__ = [
    "AKAMAI",
    "AWS_WAF",
    "CLOUDFLARE",
    "DATADOME",
    "IMPERVA",
    "SCAN_BYTES",
    "SERVICES",
    "Walls",
    "bot_wall",
    "how_to_allow",
]

CLOUDFLARE: Final = "Cloudflare"
AKAMAI: Final = "Akamai"
IMPERVA: Final = "Imperva (Incapsula)"
AWS_WAF: Final = "AWS WAF"
DATADOME: Final = "DataDome"

#: Where each service lets a site owner allow a crawler, for the line that stops a crawl.
SERVICES: Final = {
    CLOUDFLARE: "a WAF custom rule that skips Bot Fight Mode and managed challenges for it "
    "(Security > WAF), or its verified-bot settings",
    AKAMAI: "an allow rule in Bot Manager or App & API Protector (Security Configuration)",
    IMPERVA: "an allow rule in Imperva's Bot Protection (Client Classification) or "
    "Security > WAF settings",
    AWS_WAF: "a rule allowing it before the Bot Control or CAPTCHA/Challenge rule of the web ACL",
    DATADOME: "an allow rule in DataDome's dashboard (Protection > Custom Rules)",
}

#: Requests a crawl makes before max_bot_blocked is judged: a few walled pages among the
#: first are no proof the crawler is blocked (a login page behind a challenge), and the
#: start URL has a rule of its own.
MIN_REQUESTS: Final = 20

#: How much of a body is looked at: every challenge and block page says what it is early.
SCAN_BYTES: Final = 8192

_REDIRECTS: Final = frozenset({301, 302, 303, 304, 307, 308})

_CLOUDFLARE_PAGES: Final = (
    b"/cdn-cgi/challenge-platform/",
    b"_cf_chl_opt",
    b"<title>just a moment...</title>",
    b"<title>attention required! | cloudflare</title>",
)
_AKAMAI_LINKS: Final = (b"errors.edgesuite.net", b"errors&#46;edgesuite&#46;net")
_AKAMAI_REFERENCES: Final = (b"reference #", b"reference&#32;&#35;")
#: Akamai's Access Denied page is a few hundred bytes: a site's own 403 page is larger.
_AKAMAI_SIZE: Final = 2048
#: Imperva's markers, in the case its pages always write them: looked for in every answer
#: that is not a 200, so without lower-casing the body first.
_INCAPSULA: Final = (b"Incapsula incident ID", b"/_Incapsula_Resource?SWJIYLWA=")
_AWS_PAGES: Final = (b"gokuprops", b"awswafcookiedomainlist")
#: The statuses the other services' pages come with: only these bodies are lower-cased.
_SCANNED: Final = frozenset({202, 403, 405, 429, 503})


def bot_wall(status: int, headers: Headers, body: bytes) -> str | None:
    """The service whose bot protection answered, or None when the site did (or may have).
    `body`: as received (only its first SCAN_BYTES are read)."""
    if status == 200:  # the hot path: one lookup
        if headers.get("X-Iinfo") is None:
            return None
        return IMPERVA if _imperva(body) else None
    if status in _REDIRECTS or status == 0:
        return None
    if (headers.get("cf-mitigated") or "").strip().lower() == "challenge":
        return CLOUDFLARE
    if (headers.get("x-amzn-waf-action") or "").strip().lower() in ("challenge", "captcha"):
        return AWS_WAF
    if status >= 400 and headers.get("x-dd-b") is not None:
        return DATADOME
    # (a body first: none has no marker, and a 304, every page of an unchanged night,
    # has none: then not five more header look-ups, #26)
    if body and _through_imperva(headers) and _imperva(body):
        return IMPERVA
    if status not in _SCANNED:
        return None
    # each service's own signs first (headers, a size), so most bodies are never lowered
    if status in (403, 429, 503) and _from_cloudflare(headers):
        head = body[:SCAN_BYTES].lower()
        if any(marker in head for marker in _CLOUDFLARE_PAGES):
            return CLOUDFLARE
    if status == 403 and len(body) <= _AKAMAI_SIZE:
        head = body.lower()
        if (
            b"access denied" in head
            and any(link in head for link in _AKAMAI_LINKS)
            and any(ref in head for ref in _AKAMAI_REFERENCES)
        ):
            return AKAMAI
    if status in (202, 405):
        head = body[:SCAN_BYTES].lower()
        if any(marker in head for marker in _AWS_PAGES):
            return AWS_WAF
    if (
        status in (403, 429)
        and _from_datadome(headers)
        and b"captcha-delivery.com" in body[:SCAN_BYTES].lower()
    ):
        return DATADOME
    return None


def how_to_allow(service: str, user_agent: str) -> str:
    """What the site's owner does so the crawler gets the site's pages: its words for it."""
    where = SERVICES.get(service, "the bot protection's allow list")
    return f'allow our User-Agent "{user_agent}" in {service}: {where}'


def _imperva(body: bytes) -> bool:
    if body.find(b"Incapsula", 0, SCAN_BYTES) < 0:  # one pass over the body, mostly
        return False
    return any(body.find(marker, 0, SCAN_BYTES) >= 0 for marker in _INCAPSULA)


def _through_imperva(headers: Headers) -> bool:
    """Imperva's headers, on everything it serves (its block pages too): only then is a body
    looked at for its markers, which a scan of every 404 would cost more to find."""
    if headers.get("X-Iinfo") is not None:
        return True
    cdn = (headers.get("X-CDN") or "").lower()
    if "incapsula" in cdn or "imperva" in cdn:
        return True
    return any(
        cookie.lstrip().startswith(("visid_incap_", "incap_ses_"))
        for cookie in headers.getall("Set-Cookie", ())
    )


def _from_cloudflare(headers: Headers) -> bool:
    server = (headers.get("Server") or "").lower()
    return headers.get("cf-ray") is not None or server == "cloudflare"


def _from_datadome(headers: Headers) -> bool:
    if headers.get("x-datadome") is not None or headers.get("x-datadome-cid") is not None:
        return True
    return any(
        cookie.lstrip().lower().startswith("datadome=")
        for cookie in headers.getall("Set-Cookie", ())
    )


@dataclass(slots=True)
class Walls:
    """The walled answers of a run, and when they are too many to go on (the lines say so,
    and how to let the crawler in; the caller adds what became of the sitemap): at the start URL
    (no page of the site was seen, so there is nothing to crawl from), or once more than
    `max_share` of at least MIN_REQUESTS requests were (max_bot_blocked). 1 lets a crawl
    go on whatever the share; the start URL still stops it."""

    max_share: float
    user_agent: str
    counts: dict[str, int] = field(default_factory=dict)  # service -> walled answers

    def met(self, service: str) -> None:
        self.counts[service] = self.counts.get(service, 0) + 1

    @property
    def blocked(self) -> int:
        return sum(self.counts.values())

    def at_start(self, service: str, url: str) -> str:
        """The line that stops a crawl whose start URL a wall answered."""
        return self.line(service, f"the start URL {url} answered with its challenge page")

    def verdict(self, requests: int) -> str | None:
        """The line that stops the run when too many of its `requests` were walled."""
        blocked = self.blocked
        if not blocked or requests < MIN_REQUESTS or blocked / requests <= self.max_share:
            return None
        service = max(self.counts, key=lambda name: self.counts[name])
        share = (
            f"{blocked} of {requests} requests answered with a challenge or block page, "
            f"max_bot_blocked is {self.max_share:.0%}"
        )
        return self.line(service, share)

    def answered(self, service: str, url: str) -> str:
        """The line that stops a crawl whose robots.txt a wall answered, or an audit whose
        every sitemap it looked for."""
        return self.line(service, f"{url} answered with its challenge page")

    def line(self, service: str, why: str | None = None) -> str:
        """The one wording of "a wall blocks us, and how to let us in"; `why`: what showed
        it (the answer that stopped the run), None when the wall is simply named."""
        blocked = f"the crawler is being blocked by {service}'s bot protection"
        if why is None:
            return f"{blocked}: {how_to_allow(service, self.user_agent)}"
        return f"{blocked} ({why}); {how_to_allow(service, self.user_agent)}"
