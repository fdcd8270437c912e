"""The audit's checks of sitemap FILES: the reader's problems as findings, plus the rules
the reader cannot know (where the file lives, what robots.txt names, the other files of an
index). Pure: a ReadResult and plain strings in, Findings out; crawler.shell.audit fetches.

sitemap_out's reader speaks for any caller (the crawl's own publish check, --seed-sitemaps),
so its codes are its own; one table here says which audit code each one is, so a search
engine's wording (Search Console's sitemap report) is decided in one place.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Final, Protocol
from urllib.parse import urlsplit

from crawler.core.findings import Finding, ListedUrl
from crawler.core.hosts import AllowedHosts
from crawler.core.urls import DEFAULT_PORTS, Scope, known, normalize, params_matching
from crawler.errors import InvalidURLError
from sitemap_out.reader import MAX_PROBLEMS_PER_CODE, ReadResult

__all__ = [
    "PROBLEM_CODES",
    "Cluster",
    "SitemapFile",
    "duplicates",
    "file_findings",
    "hreflang_return_links",
    "index_problem",
    "listed_urls",
    "location_problem",
    "news_findings",
    "not_in_robots",
    "tracking_findings",
]

#: The reader's problem codes -> the audit's. `too_many_urls` depends on the file's kind
#: (an index's is too_many_sitemaps); `duplicate_loc` is None: duplicates are found over all
#: the files of an audit at once (duplicates()), so one in a single file is not said twice.
#: A code missing here (a reader newer than this table) becomes a parse_error naming it:
#: never dropped.
PROBLEM_CODES: Final[dict[str, str | None]] = {
    "too_large": "too_large",
    "bad_gzip": "compression_error",
    "not_well_formed": "parse_error",
    "wrong_root": "parse_error",
    "doctype": "parse_error",
    "unexpected_element": "parse_error",
    "unknown_element": "unknown_element",
    "field_order": "field_order",
    "loc_fragment": "loc_fragment",
    "loc_whitespace": "loc_whitespace",
    "unexpected_text": "parse_error",
    "bad_encoding": "parse_error",
    "missing_namespace": "wrong_namespace",
    "wrong_namespace": "wrong_namespace",
    "empty": "empty_sitemap",
    "too_many_urls": "too_many_urls",
    "missing_loc": "missing_tag",
    "loc_too_long": "invalid_url",
    "loc_too_short": "invalid_url",
    "loc_not_absolute": "invalid_url",
    "loc_not_encoded": "invalid_url",
    "bad_lastmod": "invalid_date",
    "lastmod_no_timezone": "invalid_date",  # W3C Datetime needs a zone with a time
    "bad_changefreq": "invalid_tag_value",
    "bad_priority": "invalid_tag_value",
    "duplicate_loc": None,
    "bad_hreflang": "invalid_hreflang",
    "bad_alternate_link": "invalid_alternate_link",
    "video_missing_field": "video_missing_field",
    "too_many_news": "too_many_news_urls",
}
#: Codes whose finding names the URL of the entry on the problem's line, when known.
_ENTRY_CODES: Final = frozenset(
    {
        "invalid_url", "invalid_date", "invalid_tag_value", "invalid_hreflang",
        "invalid_alternate_link", "video_missing_field", "unknown_element", "field_order",
        "loc_fragment", "loc_whitespace",
    }
)  # fmt: skip
#: Google News reads the articles of the last two days.
NEWS_WINDOW: Final = timedelta(days=2)

#: libxml2's words for text before `<?xml ...?>`: the one not-well-formed case with a code.
_DECLARATION_NOT_FIRST: Final = "XML declaration allowed only at the start"


@dataclass(frozen=True, slots=True)
class SitemapFile:
    """One sitemap as read: what to call it, where it lives, how it came."""

    name: str  # the `sitemap` of its findings: the public URL, or a local path
    location: str | None  # its public URL, for the location rule; None: a local file
    named_gz: bool = False  # its name ends in .gz
    gzipped: bool = False  # its bytes (after any Content-Encoding) are a gzip stream


def file_findings(
    sitemap: SitemapFile, result: ReadResult, hosts: AllowedHosts | None = None
) -> list[Finding]:
    """Everything wrong with one file on its own: the reader's problems, a .gz that is not
    gzip, and the locs outside where the file may speak for (urlset and text: scheme, host,
    port and folder; an index: scheme, host and port). `hosts` (allowed_hosts): other hosts
    the operator says this sitemap speaks for too (cross-submission: verified together, or
    named in each host's robots.txt), whose locs are not flagged."""
    name = sitemap.name
    found: list[Finding] = []
    if sitemap.named_gz and not sitemap.gzipped:
        found.append(Finding("compression_error", name, None, "named .gz but not gzip-compressed"))
    # a problem names its line, not its entry: a URL is named only when its line holds one
    # entry (a minified sitemap has them all on line 1, where a URL would be a guess)
    per_line = Counter(entry.line for entry in result.entries)
    locs = {e.line: e.loc for e in result.entries if e.loc and per_line[e.line] == 1}
    broken_gzip = (sitemap.named_gz and not sitemap.gzipped) or "bad_gzip" in result.problem_counts
    for problem in result.problems:
        code = _audit_code(problem.code, problem.message, result.kind)
        if code is None:
            continue
        if broken_gzip and code not in ("compression_error", "too_large"):
            continue  # what was read is not what the file meant: the gzip is the one problem
        detail = problem.message
        if code == "parse_error" and problem.code not in PROBLEM_CODES:
            detail = f"{detail} (reader code {problem.code})"
        url = None
        if code in _ENTRY_CODES:
            url = locs.get(problem.line)
        found.append(Finding(code, name, url, detail, problem.line))
    for code, total in result.problem_counts.items():
        if total > MAX_PROBLEMS_PER_CODE and (audit := _audit_code(code, "", result.kind)):
            more = total - MAX_PROBLEMS_PER_CODE
            found.append(
                Finding(audit, name, None, f"{more} more like the above ({code}) in this file")
            )
    if sitemap.location is not None and not broken_gzip:
        check = index_problem if result.kind == "sitemapindex" else location_problem
        for entry in result.entries:
            if not entry.loc:
                continue
            why = check(entry.loc, sitemap.location)
            if why is not None and not _covered(entry.loc, hosts):
                found.append(Finding("url_not_allowed", name, entry.loc, why, entry.line))
    return found


def _covered(loc: str, hosts: AllowedHosts | None) -> bool:
    if hosts is None:
        return False
    try:
        return hosts.covers(normalize(loc))
    except InvalidURLError:
        return False


def _audit_code(code: str, message: str, kind: str) -> str | None:
    if code == "not_well_formed" and _DECLARATION_NOT_FIRST in message:
        return "leading_whitespace"
    if code == "too_many_urls" and kind == "sitemapindex":
        return "too_many_sitemaps"
    return PROBLEM_CODES.get(code, "parse_error")


def _parts(url: str) -> tuple[str, str, int, str] | None:
    """(scheme, host, port, path) of a URL in normal form, or None if it has none."""
    try:
        url = normalize(url)
    except InvalidURLError:
        return None
    split = urlsplit(url)
    try:
        port = split.port or DEFAULT_PORTS[split.scheme]
    except (ValueError, KeyError):
        return None
    return split.scheme, split.hostname or "", port, split.path or "/"


def _origin_problem(loc: tuple[str, str, int, str], scope: Scope) -> str | None:
    scheme, host, port, _ = loc
    if host != scope.host:
        if host.removeprefix("www.") == scope.host.removeprefix("www."):
            return f"path mismatch: www (host {host}, the sitemap's is {scope.host})"
        return f"host differs: {host}, the sitemap's is {scope.host}"
    if scheme != scope.scheme:
        return f"scheme differs: {scheme}, the sitemap's is {scope.scheme}"
    if port != scope.port:
        return f"port differs: {port}, the sitemap's is {scope.port}"
    return None


def location_problem(loc: str, sitemap_url: str) -> str | None:
    """Why a sitemap at `sitemap_url` may not list `loc` (the sitemaps.org location rule: same
    scheme, host and port, and under the sitemap's folder), or None when it may. A loc that
    is no URL at all is invalid_url's, not this rule's."""
    parts = _parts(loc)
    if parts is None:
        return None
    scope = Scope.from_url(normalize(sitemap_url))
    why = _origin_problem(parts, scope)
    if why is None and not parts[3].startswith(scope.prefix):
        why = f"outside the sitemap's folder {scope.prefix}"
    return why


def index_problem(loc: str, index_url: str) -> str | None:
    """Why an index at `index_url` may not name the sitemap `loc`: an index may name sitemaps
    anywhere on its own site (scheme, host, port), not elsewhere; those are not fetched."""
    parts = _parts(loc)
    if parts is None:
        return None
    return _origin_problem(parts, Scope.from_url(normalize(index_url)))


def listed_urls(sitemap: SitemapFile, result: ReadResult) -> list[ListedUrl]:
    """The URLs a urlset, text sitemap or feed lists that are URLs at all (what the URL checks can
    fetch); the others are invalid_url findings already."""
    if result.kind not in ("urlset", "text", "feed"):
        return []
    listed: list[ListedUrl] = []
    for entry in result.entries:
        if entry.loc and _parts(entry.loc) is not None:
            news = entry.news_date is not None
            listed.append(ListedUrl(entry.loc, sitemap.name, entry.line, entry.lastmod, news))
    return listed


def duplicates(listed: Iterable[ListedUrl]) -> list[Finding]:
    """duplicate_url for each listing of a loc after its first, in one file or across the
    files of an audit: the detail names the first."""
    first: dict[str, ListedUrl] = {}
    found: list[Finding] = []
    for item in listed:
        seen = first.setdefault(_as_read(item.loc), item)
        if seen is item or (item.news != seen.news and item.sitemap != seen.sitemap):
            continue  # an article in the news sitemap is in the main sitemap too, rightly
        where = "this file" if seen.sitemap == item.sitemap else seen.sitemap
        at = f", line {seen.line}" if seen.line is not None else ""
        detail = f"listed first in {where}{at}"
        found.append(Finding("duplicate_url", item.sitemap, item.loc, detail, item.line))
    return found


def _as_read(loc: str) -> str:
    """A loc as the protocol reads it (escaping, host case), the key of duplicates."""
    try:
        return normalize(loc)
    except InvalidURLError:
        return loc


def tracking_findings(listed: Iterable[ListedUrl], strip: tuple[str, ...]) -> list[Finding]:
    """tracking_parameter for each loc carrying a parameter of `strip` (a session or
    tracking parameter: a search engine fetches the URL as written, and indexes the page
    under it), and duplicate_url for a loc that differs from an earlier one only in such
    parameters (the same page listed under two URLs), naming both; each loc judged once.
    The duplicate is the URL carrying the parameters, whichever came first: the clean one is
    the page's own. A loc read as an earlier one (a #fragment, host case) is duplicates()'s
    to report, once."""
    found: list[Finding] = []
    first: dict[str, tuple[ListedUrl, bool]] = {}  # loc less them -> first listing, tracked
    seen: set[str] = set()
    for item in listed:
        key = _as_read(item.loc)
        if key in seen:
            continue  # the same loc twice, as read: duplicates() says so
        seen.add(key)
        names = params_matching(item.loc, strip)
        try:
            bare = known(item.loc, strip)
        except InvalidURLError:
            continue
        if names:
            found.append(
                Finding(
                    "tracking_parameter",
                    item.sitemap,
                    item.loc,
                    f"carries {', '.join(names)} (strip_params): search engines fetch and "
                    "index it as written",
                    item.line,
                )
            )
        earlier, tracked = first.setdefault(bare, (item, bool(names)))
        if earlier is not item and (names or tracked):
            twin, clean = (earlier, item) if tracked and not names else (item, earlier)
            where = "the same file" if clean.sitemap == twin.sitemap else clean.sitemap
            at = f", line {clean.line}" if clean.line is not None else ""
            detail = f"the same page as {clean.loc} ({where}{at}) but for tracking parameters"
            found.append(Finding("duplicate_url", twin.sitemap, twin.loc, detail, twin.line))
    return found


def not_in_robots(name: str, parents: Sequence[str], named: Sequence[str]) -> Finding | None:
    """not_in_robots_txt for the sitemap `name` (a public URL) when robots.txt's Sitemap:
    lines (`named`) name neither it nor an index that lists it (`parents`)."""
    known = set()
    for raw in named:
        try:
            known.add(normalize(raw))
        except InvalidURLError:
            continue
    for url in (name, *parents):
        try:
            if normalize(url) in known:
                return None
        except InvalidURLError:
            continue
    via = f" nor the index that lists it ({parents[0]})" if parents else ""
    return Finding(
        "not_in_robots_txt", name, None, f"robots.txt has no Sitemap: line naming it{via}"
    )


def news_findings(sitemap: SitemapFile, result: ReadResult, now: datetime) -> list[Finding]:
    """news_too_old for each news entry published more than two days before now (Google
    News reads only those of the last two days; an older one should leave the file)."""
    found: list[Finding] = []
    for entry in result.entries:
        if not entry.news_date:
            continue
        published = _when(entry.news_date)
        if published is None:
            found.append(
                Finding(
                    "invalid_date",
                    sitemap.name,
                    entry.loc or None,
                    f"news:publication_date {entry.news_date[:40]!r} is not a W3C datetime",
                    entry.line,
                )
            )
        elif now - published > NEWS_WINDOW:
            age = (now - published).total_seconds() / 86400
            found.append(
                Finding(
                    "news_too_old",
                    sitemap.name,
                    entry.loc or None,
                    f"published {entry.news_date} ({age:.1f} days ago)",
                    entry.line,
                )
            )
    return found


def _when(text: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            day = date.fromisoformat(text)
        except ValueError:
            return None
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class ClusterMap(Protocol):
    """loc -> its Cluster: a dict, or the audit's spool on disk."""

    def items(self) -> Iterable[tuple[str, Cluster]]: ...

    def get(self, page: str) -> Cluster | None: ...


@dataclass(frozen=True, slots=True)
class Cluster:
    """A listed URL's hreflang alternates, as a sitemap gives them."""

    sitemap: str
    line: int | None
    alternates: tuple[tuple[str, str], ...]


def hreflang_return_links(clusters: ClusterMap, listed: Container[str]) -> list[Finding]:
    """hreflang_no_return where page A names B, B is listed (`listed`: every loc read) and B
    does not name A (`clusters`: the alternates of the locs that have some): search engines
    ignore a one-way annotation. An alternate listed in none of the files read is not
    judged: it may be in another sitemap."""
    found: list[Finding] = []
    for page, cluster in clusters.items():
        for hreflang, href in cluster.alternates:
            if href == page:
                continue
            other = clusters.get(href)
            if other is None and href not in listed:
                continue
            if other is not None and any(back == page for _, back in other.alternates):
                continue
            found.append(
                Finding(
                    "hreflang_no_return",
                    cluster.sitemap,
                    page,
                    f"names {href} ({hreflang}), which does not name it back",
                    cluster.line,
                )
            )
    return found
