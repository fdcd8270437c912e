"""What an audit finds: one closed set of codes, each with its severity and plain words.

Pure data, shared by every part of `sitemap-crawler audit`: the sitemap file checks, the
checks of the URLs a sitemap lists, the comparison with a crawl, and the terminal, JSON and
HTML outputs. Code names follow Search Console's sitemap report where it has one, so a user
can match a finding here with what a search engine will say weeks later.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "CODES",
    "SEVERITIES",
    "AuditSummary",
    "Code",
    "Finding",
    "ListedUrl",
    "at_or_above",
    "ordered",
]

Severity = Literal["error", "warning", "notice"]

#: Worst first: the order findings are shown in, and the scale of --fail-on.
SEVERITIES: Final[tuple[Severity, ...]] = ("error", "warning", "notice")


@dataclass(frozen=True, slots=True)
class Code:
    """What a finding code means: its severity, what it is about, and its group's heading."""

    severity: Severity
    scope: Literal["file", "url", "crawl"]
    text: str  # what it means, in a line: the heading of its group in every output


CODES: Final[dict[str, Code]] = {
    # -- the sitemap files -------------------------------------------------------------------
    "sitemap_unreachable": Code("error", "file", "the sitemap could not be fetched or read"),
    "sitemap_blocked": Code("error", "file", "robots.txt disallows the sitemap URL itself"),
    "parse_error": Code("error", "file", "not well-formed XML, or not a sitemap"),
    "leading_whitespace": Code("error", "file", "something comes before the XML declaration"),
    "wrong_namespace": Code("error", "file", "the root is not in the sitemaps.org 0.9 namespace"),
    "compression_error": Code("error", "file", "a .gz file that is not valid gzip"),
    "empty_sitemap": Code("error", "file", "the sitemap lists no URL"),
    "too_many_urls": Code("error", "file", "more than 50,000 URLs in one file"),
    "too_large": Code("error", "file", "more than 52,428,800 bytes uncompressed"),
    "nested_index": Code("error", "file", "a sitemap index lists another index"),
    "too_many_sitemaps": Code("error", "file", "a sitemap index with more than 50,000 entries"),
    "missing_tag": Code("error", "file", "a <url> or <sitemap> without <loc>"),
    "invalid_url": Code("error", "file", "a loc that is not a valid absolute http(s) URL"),
    "invalid_date": Code("error", "file", "a lastmod that is not a W3C datetime"),
    "invalid_tag_value": Code("error", "file", "a changefreq or priority the protocol forbids"),
    "unknown_element": Code(
        "warning", "file", "an element the protocol does not define (engines skip it)"
    ),
    "field_order": Code(
        "warning", "file", "the fields of an entry in another order than the schema's"
    ),
    "loc_fragment": Code("warning", "file", "a loc with a #fragment, which engines drop"),
    "loc_whitespace": Code("notice", "file", "a loc with whitespace around the URL"),
    "url_not_allowed": Code(
        "error", "file", "a loc outside the sitemap's scheme, host, port and folder"
    ),
    "invalid_hreflang": Code(
        "error", "file", "an hreflang that is not a language code (BCP 47) or x-default"
    ),
    "invalid_alternate_link": Code(
        "error",
        "file",
        'an xhtml:link engines ignore: no href, no rel="alternate", or neither hreflang nor media',
    ),
    "hreflang_no_return": Code(
        "warning", "file", "an hreflang alternate that does not name the page back"
    ),
    "video_missing_field": Code(
        "error",
        "file",
        "a video without a field Google requires (thumbnail, title, description, location)",
    ),
    "news_too_old": Code("warning", "file", "a news entry published more than two days ago"),
    "too_many_news_urls": Code("error", "file", "more than 1,000 URLs in a news sitemap"),
    "duplicate_url": Code(
        "warning", "file", "the same URL listed more than once, or twice but for tracking"
    ),
    "tracking_parameter": Code(
        "warning", "file", "a loc carrying a session or tracking parameter (strip_params)"
    ),
    "not_in_robots_txt": Code(
        "notice", "file", "robots.txt has no Sitemap: line naming this sitemap"
    ),
    "robots_sitemap_relative": Code(
        "warning",
        "file",
        "a robots.txt Sitemap: line with a relative URL (engines want a full one)",
    ),
    # -- the URLs listed ---------------------------------------------------------------------
    "blocked_by_robots": Code("error", "url", "robots.txt disallows a listed URL"),
    "http_error": Code("error", "url", "a listed URL answers 4xx or 5xx"),
    "redirect": Code("warning", "url", "a listed URL redirects"),
    "noindex": Code("error", "url", "a listed page says noindex"),
    "canonicalised": Code("warning", "url", "a listed page names another URL as canonical"),
    "canonical_broken": Code(
        "warning",
        "url",
        "a listed page's canonical answers 4xx/5xx, is blocked or noindex: search engines "
        "ignore it",
    ),
    "not_a_page": Code("warning", "url", "a listed URL is not HTML, XHTML or PDF"),
    "duplicate_content": Code("warning", "url", "listed URLs answer byte-identical bodies"),
    "lastmod_in_future": Code("error", "url", "a lastmod later than now"),
    "lastmod_newer_than_page": Code(
        "warning", "url", "a lastmod later than the page's own Last-Modified"
    ),
    "lastmod_all_same": Code(
        "warning", "url", "every URL of a file has the same lastmod (a generation time?)"
    ),
    "blocked_by_bot_protection": Code(
        "warning",
        "url",
        "a CDN's bot protection answered instead of the site (the crawler is blocked, the "
        "page is not broken): allow our User-Agent in that service",
    ),
    "soft_404": Code("warning", "url", "the site answers 200 for a page that does not exist"),
    # -- compared with a crawl (--crawl) -----------------------------------------------------
    "missing_from_sitemap": Code(
        "warning", "crawl", "an indexable page the crawl found is in no sitemap"
    ),
    "orphan": Code("notice", "crawl", "a listed URL no crawled page links to"),
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a search engine would complain about. `sitemap`: the file it came from
    (None for a crawl comparison); `url`: the listed URL it concerns, None for a file-level
    finding; `line`: 1-based, where known."""

    code: str
    sitemap: str | None
    url: str | None
    detail: str
    line: int | None = None

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown finding code {self.code!r}")

    @property
    def severity(self) -> Severity:
        return CODES[self.code].severity

    def to_json(self) -> dict[str, Any]:
        """The stable fields of --json: code, severity, sitemap, line, url, detail."""
        return {
            "code": self.code,
            "severity": self.severity,
            "sitemap": self.sitemap,
            "line": self.line,
            "url": self.url,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class ListedUrl:
    """A URL as a sitemap lists it: what the URL checks need, and where to point the user."""

    loc: str
    sitemap: str
    line: int | None = None
    lastmod: str | None = None  # as written: checked as a W3C datetime by the file checks
    news: bool = False  # a news:news entry, which names a page its sitemaps list too


@dataclass(slots=True)
class AuditSummary:
    """The figures at the top of every output."""

    target: str
    sitemaps_read: int = 0
    urls_listed: int = 0
    urls_checked: int = 0
    seconds: float = 0.0
    counts: Counter[str] = field(default_factory=Counter)  # code -> findings

    def count(self, findings: Iterable[Finding]) -> None:
        for finding in findings:
            self.counts[finding.code] += 1

    def by_severity(self) -> dict[str, int]:
        totals: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
        for code, n in self.counts.items():
            totals[CODES[code].severity] += n
        return totals

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 3)
        data["counts"] = dict(sorted(self.counts.items(), key=lambda kv: _rank(kv[0])))
        data["by_severity"] = self.by_severity()
        return data


def _rank(code: str) -> tuple[int, int]:
    return SEVERITIES.index(CODES[code].severity), list(CODES).index(code)


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Worst first, then in the table's order of codes, then by file, line and URL: the order
    of every output, so two audits of one site compare line by line."""
    return sorted(
        findings,
        key=lambda f: (*_rank(f.code), f.sitemap or "", f.line or 0, f.url or ""),
    )


def at_or_above(findings: Iterable[Finding], severity: Severity) -> list[Finding]:
    """The findings that fail an audit run with --fail-on `severity`."""
    limit = SEVERITIES.index(severity)
    return [f for f in findings if SEVERITIES.index(f.severity) <= limit]
