"""What the URLs a sitemap lists say about it: the crawl's decisions mapped to audit findings.

Pure. The engine judges each listed URL exactly as a crawl would (Crawl.check) and hands back
every decision it made and the facts of each final page; this module turns them into the
URL-level findings of `sitemap-crawler audit`, checks the listed lastmods against the pages,
and compares a whole crawl with the sitemaps (--crawl). A finding names the URL as the
sitemap wrote it, and the place (file and line) it was listed first.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from crawler.core.canonicals import BrokenCanonical
from crawler.core.decide import (
    BLOCKED_BY_BOT_PROTECTION,
    CANONICALISED,
    CONTENT_TYPE,
    FETCH_ERROR,
    HEADER_NOINDEX,
    HTML_TYPES,
    HTTP_ERROR,
    LISTED,
    META_NOINDEX,
    REDIRECT,
    ROBOTS_TXT,
)
from crawler.core.duplicates import rank
from crawler.core.findings import Finding, ListedUrl
from crawler.core.httpdate import parse_http_date
from crawler.core.report import DecisionRecord

__all__ = [
    "ALL_SAME_MIN",
    "CLOCK_SLACK",
    "Checked",
    "PageSeen",
    "crawl_findings",
    "lastmod_findings",
    "parse_w3c",
    "soft_404_finding",
    "url_findings",
]

#: A lastmod up to this far ahead of our clock is a clock difference, not an error.
CLOCK_SLACK: Final = timedelta(days=1)
#: lastmod_all_same: files with fewer URLs may well have been changed all at once.
ALL_SAME_MIN: Final = 10

#: The decisions a listed URL's own answer ends in that are a finding, and its code.
_CODES: Final = {
    ROBOTS_TXT: "blocked_by_robots",
    HTTP_ERROR: "http_error",
    FETCH_ERROR: "http_error",
    REDIRECT: "redirect",
    META_NOINDEX: "noindex",
    HEADER_NOINDEX: "noindex",
    CANONICALISED: "canonicalised",
    CONTENT_TYPE: "not_a_page",
    BLOCKED_BY_BOT_PROTECTION: "blocked_by_bot_protection",
}


@dataclass(slots=True, frozen=True)
class PageSeen:
    """What a final answer says beyond its decision: the dates and body the audit compares."""

    status: int
    mime: str
    last_modified: str | None  # the Last-Modified header as sent
    body_key: int | None  # the body's key (HTML only), as the crawl finds twins


@dataclass(slots=True)
class Checked:
    """What the engine learnt (Crawl.check), keyed by public URL: a URL is decided once, so a
    redirect's hops can be followed from decision to decision (a hop's detail is its target).
    `reached`: URLs a crawl met through links, redirects and canonicals (--crawl only);
    `outage`: why the engine stopped early, the site looking down."""

    decisions: dict[str, DecisionRecord] = field(default_factory=dict)
    pages: dict[str, PageSeen] = field(default_factory=dict)
    reached: set[str] = field(default_factory=set)
    outage: str | None = None
    blocked: str | None = None  # why a bot wall stopped the engine (crawler.core.botwall)
    # pages listable although their canonical names another URL, which is broken (#24)
    canonical_broken: dict[str, BrokenCanonical] = field(default_factory=dict)


# -- the answers ---------------------------------------------------------------------------


def url_findings(
    listed: Iterable[ListedUrl], keys: Mapping[str, str], checked: Checked
) -> list[Finding]:
    """The findings on each URL judged. `keys`: a listed loc -> the public URL the engine
    judged it as (normalised); locs without one were not fetched (out of scope: the file
    checks' business). A URL listed twice is judged once, and named where first listed."""
    first: dict[str, ListedUrl] = {}
    for item in listed:
        key = keys.get(item.loc)
        if key is not None:
            first.setdefault(key, item)
    findings: list[Finding] = []
    listable: list[str] = []  # keys answered by a page that could be listed
    for key, item in first.items():
        record = checked.decisions.get(key)
        if record is None:  # never judged: the check was cut short (max_time)
            continue
        if record.reason == LISTED:
            listable.append(key)
            broken = checked.canonical_broken.get(key)
            if broken is not None:
                detail = f"its canonical {broken.canonical} is ignored: {broken.why}"
                findings.append(_finding("canonical_broken", item, detail))
            continue
        code = _CODES.get(record.reason)
        if code is None:  # out of scope, too long, too large...: no finding of this table
            continue
        if record.reason == REDIRECT or (
            record.reason == HTTP_ERROR and record.status is not None and record.status < 400
        ):
            code, detail = "redirect", _redirect_detail(record, checked.decisions)
        else:
            detail = _detail(record)
        findings.append(_finding(code, item, detail))
    findings += _duplicates([first[k] for k in listable], keys, checked.pages)
    return findings


def _detail(record: DecisionRecord) -> str:
    reason, detail = record.reason, record.detail
    if reason == ROBOTS_TXT:
        return f"disallowed by robots.txt: {detail}"
    if reason == FETCH_ERROR and record.status is None:
        return f"no answer: {detail}"
    if reason in (HEADER_NOINDEX, META_NOINDEX):
        return detail  # names its source already: `meta robots "noindex"`, `X-Robots-Tag ...`
    if reason == CONTENT_TYPE:
        return f"Content-Type {detail}"
    return detail


def _redirect_detail(record: DecisionRecord, decisions: Mapping[str, DecisionRecord]) -> str:
    """Where a redirect ends: its hops followed to the final answer, or why they stopped."""
    first_status = record.status
    chain = [record.url]
    while record.reason == REDIRECT:
        target = record.detail
        if target in chain:  # a loop through URLs each judged on their own (both listed)
            return f"redirect loop: {' -> '.join([*chain, target])}"
        following = decisions.get(target)
        if following is None:
            if target.startswith(("http://", "https://")):  # not judged: the check was cut
                return f"HTTP {first_status} to {target}"
            return target  # a loop or too many hops, as the engine says it
        chain.append(target)
        record = following
    if record.reason == HTTP_ERROR and record.status is not None and record.status < 400:
        return f"HTTP {first_status} to {record.url}, which answers {record.detail}"
    hops = f" ({len(chain) - 1} hops)" if len(chain) > 2 else ""
    where = f"HTTP {first_status} to {record.url}{hops}"
    if record.reason == LISTED:
        return where
    return f"{where}, which is not listable: {record.reason} ({_detail(record)})"


def _duplicates(
    items: Iterable[ListedUrl], keys: Mapping[str, str], pages: Mapping[str, PageSeen]
) -> list[Finding]:
    """Listed pages answering byte-identical bodies: the URL a crawl would list (shortest,
    then first in code-point order) is fine; each other one names it."""
    groups: dict[int, list[ListedUrl]] = defaultdict(list)
    for item in items:
        page = pages.get(keys[item.loc])
        if page is not None and page.body_key is not None:
            groups[page.body_key].append(item)
    findings = []
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda item: rank(0, keys[item.loc]))
        kept = group[0].loc
        for item in group[1:]:
            findings.append(_finding("duplicate_content", item, f"same body as {kept}"))
    return findings


def soft_404_finding(probe: str, checked: Checked, sitemap: str) -> Finding | None:
    """`probe`: a made-up URL under the sitemap's folder (public). The site should say 404;
    a 200 with an HTML page (not noindex) tells search engines it is a page."""
    record = checked.decisions.get(probe)
    chain = [probe]
    while record is not None and record.reason == REDIRECT and record.detail not in chain:
        chain.append(record.detail)
        record = checked.decisions.get(record.detail)
    if record is None or record.reason in (META_NOINDEX, HEADER_NOINDEX):
        return None
    page = checked.pages.get(record.url)
    if page is None or page.status != 200 or page.mime not in HTML_TYPES:
        return None
    via = f" (redirected to {record.url})" if record.url != probe else ""
    detail = f"{probe} does not exist, yet answers HTTP 200 with an HTML page{via}"
    return Finding("soft_404", sitemap, None, detail)


# -- lastmod -------------------------------------------------------------------------------

_W3C: Final = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?"
)


@dataclass(slots=True, frozen=True)
class Lastmod:
    """A sitemap's lastmod, to its precision: a date alone matches any time of its day."""

    when: datetime  # UTC; the start of the period for a date without a time
    has_time: bool

    def same(self, other: datetime) -> bool:
        """Says the same moment as `other`, to its precision (a date: the same UTC day)."""
        if self.has_time:
            return self.when.replace(microsecond=0) == other.replace(microsecond=0)
        return self.when.date() == other.astimezone(UTC).date()

    def later_than(self, other: datetime) -> bool:
        if self.has_time:
            return self.when.replace(microsecond=0) > other
        return self.when.date() > other.astimezone(UTC).date()


def parse_w3c(text: str | None) -> Lastmod | None:
    """A W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, or with a time); None when it is not one:
    the file checks report that. A time without a zone is taken as UTC."""
    if not text:
        return None
    m = _W3C.fullmatch(text.strip())
    if m is None:
        return None
    year, month, day, hour, minute, second, zone = m.groups()
    try:
        when = datetime(
            int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0),
            int(second or 0), tzinfo=UTC,
        )  # fmt: skip
        if zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            when -= sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    except (ValueError, OverflowError):
        return None
    return Lastmod(when, hour is not None)


def lastmod_findings(
    listed: Iterable[ListedUrl],
    keys: Mapping[str, str],
    checked: Checked,
    *,
    now: datetime,
) -> list[Finding]:
    """The listed lastmods against our clock and against the pages' own Last-Modified."""
    findings: list[Finding] = []
    limit = now + CLOCK_SLACK
    by_file: dict[str, list[tuple[ListedUrl, Lastmod | None]]] = defaultdict(list)
    for item in listed:
        lastmod = parse_w3c(item.lastmod)
        by_file[item.sitemap].append((item, lastmod))
        if lastmod is None:
            continue
        if lastmod.when > limit:
            findings.append(
                _finding(
                    "lastmod_in_future",
                    item,
                    f"lastmod {item.lastmod} is later than now ({_show(now)}) plus a day",
                )
            )
            continue
        header = _page_date(item, keys, checked)
        if header is not None and lastmod.later_than(header):
            findings.append(
                _finding(
                    "lastmod_newer_than_page",
                    item,
                    f"lastmod {item.lastmod} is later than the page's Last-Modified "
                    f"{_show(header)}",
                )
            )
    for sitemap, items in by_file.items():
        finding = _all_same(sitemap, items, keys, checked)
        if finding is not None:
            findings.append(finding)
    return findings


def _page_date(item: ListedUrl, keys: Mapping[str, str], checked: Checked) -> datetime | None:
    """The Last-Modified of the page the listed URL answers itself (no redirect), if any."""
    key = keys.get(item.loc)
    page = checked.pages.get(key) if key is not None else None
    if page is None or page.status != 200:
        return None
    return parse_http_date(page.last_modified)


def _all_same(
    sitemap: str,
    items: list[tuple[ListedUrl, Lastmod | None]],
    keys: Mapping[str, str],
    checked: Checked,
) -> Finding | None:
    """One finding for a file whose URLs all carry one lastmod, unless the pages' own
    Last-Modified headers say the same: some send one, and all that do agree."""
    if len(items) < ALL_SAME_MIN:
        return None
    first = items[0][1]
    if first is None or any(lastmod is None or lastmod != first for _, lastmod in items):
        return None
    dates = [(item, _page_date(item, keys, checked)) for item, _ in items]
    sent = [(item, when) for item, when in dates if when is not None]
    differs = [(item, when) for item, when in sent if not first.same(when)]
    if sent and not differs:
        return None
    raw = items[0][0].lastmod
    if not sent:
        why = "no page sends a Last-Modified header to confirm it"
    else:
        item, when = differs[0]
        why = (
            f"the pages' Last-Modified headers differ ({len(differs)} of {len(sent)}, "
            f"e.g. {item.loc}: {_show(when)})"
        )
    detail = f"all {len(items)} URLs have lastmod {raw}: a generation time? ({why})"
    return Finding("lastmod_all_same", sitemap, None, detail)


def _show(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- compared with a crawl -----------------------------------------------------------------


def crawl_findings(
    listed: Iterable[ListedUrl],
    keys: Mapping[str, str],
    crawled: Checked,
    *,
    start: str,
) -> list[Finding]:
    """A crawl from `start` (public) against the sitemaps: the pages it lists that no
    sitemap does (of byte-identical pages, the one it lists, and none when a sitemap lists
    one of them), and the listed URLs no link of it reached (the start excepted: it is where
    a visitor, and the crawl, begins)."""
    in_sitemaps = set(keys.values())
    findings: list[Finding] = []
    twins: dict[int, list[DecisionRecord]] = defaultdict(list)
    for url, record in crawled.decisions.items():
        if record.reason != LISTED:
            continue
        page = crawled.pages.get(url)
        if page is not None and page.body_key is not None:
            twins[page.body_key].append(record)
        elif url not in in_sitemaps:
            findings.append(_missing(record, start))
    for group in twins.values():
        if any(record.url in in_sitemaps for record in group):
            continue
        findings.append(_missing(min(group, key=lambda r: rank(r.depth, r.url)), start))
    met = len(crawled.decisions)
    done: set[str] = set()
    for item in listed:
        key = keys.get(item.loc)
        if key is None or key in done or key == start:
            continue
        done.add(key)
        if key not in crawled.reached:
            detail = f"no page of the crawl from {start} links to it ({met} URLs met)"
            findings.append(_finding("orphan", item, detail))
    return findings


def _missing(record: DecisionRecord, start: str) -> Finding:
    if record.referrer:
        hops = "1 link" if record.depth == 1 else f"{record.depth} links"
        via = f"linked from {record.referrer}; {hops} from {start}"
    else:
        via = "the start URL"
    return Finding("missing_from_sitemap", None, record.url, f"the crawl lists it ({via})")


def _finding(code: str, item: ListedUrl, detail: str) -> Finding:
    return Finding(code, item.sitemap, item.loc, detail, item.line)
