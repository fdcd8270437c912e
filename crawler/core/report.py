"""The crawl's figures: counts by reason, broken links, the summary line and the JSON report.

Plain data and pure functions; the engine owns the files they end up in.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any, Final

from crawler.core.canonicals import BrokenCanonical, ForeignCanonicals
from crawler.core.decide import HTTP_ERROR, LISTED, REASONS
from sitemap_out.changes import KINDS
from sitemap_out.groups import DEFAULT_GROUP

MAX_REFERRERS = 10
#: Broken canonicals named in the report (all are counted).
MAX_CANONICAL_BROKEN = 1000
#: The ``seed`` of a start URL (and of the URLs its redirects lead to) in the decisions file.
SEED_START: Final = "start"


@dataclass(slots=True)
class DecisionRecord:
    """What became of one URL the crawl met: a line of the --decisions file, and a row of
    the crawl's state file, where each field is a column of the same name (crawler.shell.state
    reads and writes it by field name, so a field added here needs its column there). Not
    frozen: one is made for every URL met, and a frozen __init__ (an object.__setattr__
    call a field) cost about four times a plain one's."""

    url: str
    status: int | None
    reason: str
    detail: str
    depth: int
    referrer: str | None

    @property
    def seed(self) -> str | None:
        """How a URL the links did not lead to was reached: "start" (a start URL, or where
        one redirects), or the sitemap that names it (--seed-sitemaps); None for a URL found
        by a link. Read from the depth, as no link is 0 hops from the start, so that it
        costs no column in the state file and survives a resume as the depth does."""
        if self.depth != 0:
            return None
        return self.referrer if self.referrer is not None else SEED_START

    def to_json(self, lastmod_source: str | None = None) -> str:
        """Every field by name, and ``listed`` after ``status``, where readers of the
        decisions file have always found it; a URL reached from a seed has ``seed`` after
        ``referrer``, which is then null (no page links to it). A listed page has
        ``lastmod_source`` last: where its <lastmod> came from (crawler.core.lastmod)."""
        line: dict[str, object] = {}
        for name in _DECISION_FIELDS:
            line[name] = getattr(self, name)
            if name == "status":
                line["listed"] = self.reason == LISTED
        seed = self.seed
        if seed is not None:
            line["referrer"] = None
            line["seed"] = seed
        if lastmod_source is not None:
            line["lastmod_source"] = lastmod_source
        return json.dumps(line, ensure_ascii=False)


_DECISION_FIELDS: Final = tuple(f.name for f in fields(DecisionRecord))


#: Examples kept per kind of problem in the report's extension blocks (the count is exact).
MAX_EXAMPLES: Final = 100


@dataclass(slots=True)
class ExtensionTally:
    """What the sitemap extensions made of the listed pages: images and videos written,
    hreflang clusters that are broken, videos and news articles left out and why."""

    pages_with_images: int = 0
    images: int = 0
    pages_with_alternates: int = 0
    alternates: int = 0  # xhtml:link written
    alternates_dropped: int = 0  # named by a listed page, not written: the target is not listed
    bad_hreflang: Counter[str] = field(default_factory=Counter)  # value -> pages giving it
    not_listed: list[dict[str, Any]] = field(default_factory=list)  # examples
    missing_return: int = 0
    missing_return_examples: list[dict[str, Any]] = field(default_factory=list)
    videos: int = 0
    videos_left_out: Counter[str] = field(default_factory=Counter)  # by missing field
    video_examples: list[dict[str, Any]] = field(default_factory=list)
    news: int = 0  # in sitemap-news.xml
    news_left_out: Counter[str] = field(default_factory=Counter)  # by why

    def left_out_video(self, page: str, missing: str) -> None:
        self.videos_left_out[missing] += 1
        if len(self.video_examples) < MAX_EXAMPLES:
            self.video_examples.append({"page": page, "missing": missing})

    def to_json(self) -> dict[str, Any]:
        return {
            "images": {"pages": self.pages_with_images, "images": self.images},
            "hreflang": {
                "pages": self.pages_with_alternates,
                "alternates_written": self.alternates,
                "invalid_values": dict(self.bad_hreflang.most_common(MAX_EXAMPLES)),
                "invalid_value_count": sum(self.bad_hreflang.values()),
                "not_listed_count": self.alternates_dropped,
                "not_listed": self.not_listed,
                "missing_return_link_count": self.missing_return,
                "missing_return_links": self.missing_return_examples,
            },
            "videos": {
                "listed": self.videos,
                "left_out_count": sum(self.videos_left_out.values()),
                "left_out_by_missing_field": dict(sorted(self.videos_left_out.items())),
                "left_out": self.video_examples,
            },
            "news": {
                "listed": self.news,
                "left_out": dict(sorted(self.news_left_out.items())),
            },
        }


@dataclass(slots=True)
class Tally:
    """The crawl's counts as it goes: the report and the metrics are read from them."""

    fetched: int = 0  # HTTP requests for pages, redirect hops included, by every run of the crawl
    fetched_before: int = 0  # of those, by the runs a resumed crawl goes on from
    failed: int = 0  # of those, failed with a 5xx or a network error (after retries)
    not_modified: int = 0  # answered 304 to a conditional request (no body), as fetched
    lastmods: Counter[str] = field(default_factory=Counter)  # listed pages by lastmod source
    reasons: Counter[str] = field(default_factory=Counter)
    broken: dict[str, tuple[int, list[str]]] = field(default_factory=dict)  # url -> status, refs
    seconds: float = 0.0
    robots_note: str = ""
    seed_notes: list[str] = field(default_factory=list)  # a line per seed sitemap read or not
    requests: dict[str, Any] = field(default_factory=dict)  # the throttle's figures
    # URLs added, removed and changed against the sitemap published before (once published)
    changes: dict[str, int] | None = None
    feed_url: str | None = None  # changes.atom, when published
    # grouped sitemaps (once published): each group's URLs, files and changes, by name
    groups: dict[str, dict[str, int]] | None = None
    llms_url: str | None = None  # llms.txt, when published
    extensions: ExtensionTally = field(default_factory=ExtensionTally)  # images, hreflang, ...
    render: dict[str, Any] = field(default_factory=dict)  # the browser's, when rendering
    # pages listed although their canonical names another URL, which search engines ignore
    # (crawler.core.canonicals): the first MAX_CANONICAL_BROKEN, and how many in all
    canonical_broken: list[BrokenCanonical] = field(default_factory=list)
    canonical_broken_count: int = 0
    # canonicals naming another origin: a crawl of a copy of a site (--public-url hint)
    foreign: ForeignCanonicals = field(default_factory=ForeignCanonicals)

    @property
    def listed(self) -> int:
        return self.reasons[LISTED]

    def counters(self) -> dict[str, int]:
        """What a resumed crawl goes on from, as the state's named counters (the publish
        guard's figures and the report's): restore() reads them back. `fetched` is the
        engine's (requests answered, whatever was in flight)."""
        return {"failed": self.failed, "not_modified": self.not_modified,
                **self.foreign.counters()}  # fmt: skip

    def restore(self, counters: dict[str, int]) -> None:
        """The figures of the runs a resumed crawl goes on from (counters())."""
        self.fetched = self.fetched_before = counters.get("fetched", 0)  # not in pages/s
        self.failed = counters.get("failed", 0)
        self.not_modified = counters.get("not_modified", 0)
        self.foreign.restore(counters)

    @property
    def fetched_this_run(self) -> int:
        return self.fetched - self.fetched_before

    @property
    def pages_per_second(self) -> float:
        """This run's: `seconds` are this run's, and so must the requests be."""
        return self.fetched_this_run / self.seconds if self.seconds > 0 else 0.0

    def count(self, reason: str) -> None:
        self.reasons[reason] += 1

    def add_broken(self, url: str, status: int, referrers: list[str]) -> None:
        self.broken[url] = (status, referrers[:MAX_REFERRERS])

    def refer_broken(self, url: str, referrer: str) -> bool:
        """Note one more page linking to a known broken URL; True when it was noted (url is
        broken, and the page neither named already nor one past MAX_REFERRERS)."""
        entry = self.broken.get(url)
        if entry is None:
            return False
        refs = entry[1]
        if len(refs) < MAX_REFERRERS and referrer not in refs:
            refs.append(referrer)
            return True
        return False

    def add_canonical_broken(self, broken: BrokenCanonical) -> None:
        self.canonical_broken_count += 1
        if len(self.canonical_broken) < MAX_CANONICAL_BROKEN:
            self.canonical_broken.append(broken)

    def summary(self) -> str:
        excluded = ", ".join(
            f"{self.reasons[r]} {r}" for r in REASONS if r != LISTED and self.reasons[r]
        )
        fetched = f"fetched {self.fetched} pages"
        if self.fetched_before:
            fetched = f"fetched {self.fetched_this_run} pages this run ({self.fetched} in all)"
        return (
            f"{fetched} in {self.seconds:.1f} s "
            f"({_rate(self.pages_per_second)} pages/s): {self.listed} URLs listed; "
            f"excluded: {excluded or 'none'}; "
            f"{self.failed} requests failed (5xx or no answer, after retries)"
            + (f"; render {self.render['mode']}: {self.render['decision']}" if self.render else "")
            + self._changes_summary()
            + self._groups_summary()
            + (f"; {self.not_modified} not modified (304)" if self.not_modified else "")
            + self._canonical_summary()
        )

    def _canonical_summary(self) -> str:
        n = self.canonical_broken_count
        if not n:
            return ""
        return f"; {n} listed although {'its' if n == 1 else 'their'} canonical is broken " + (
            "(canonical_broken: a 4xx/5xx, blocked or noindex target, which search engines ignore)"
        )

    def _changes_summary(self) -> str:
        if self.changes is None:
            return ""
        c = self.changes
        return f"; {c['added']} added, {c['removed']} removed, {c['changed']} changed"

    def _groups_summary(self) -> str:
        if not self.groups:
            return ""
        shown = []
        for name, figures in self.groups.items():
            moved = ", ".join(f"{figures[k]} {k}" for k in KINDS if figures.get(k))
            shown.append(f"{name} {figures['urls']}" + (f" ({moved})" if moved else ""))
        return f"; URLs by group: {', '.join(shown)}"

    def empty_groups(self) -> list[str]:
        """The configured groups that list no URL: a pattern that matches nothing (a typo,
        or a path written without its folder) is worth a warning, not a silent empty file."""
        groups = self.groups or {}
        return [
            name
            for name, figures in groups.items()
            if name != DEFAULT_GROUP and not figures["urls"]
        ]

    def to_json(self, extra: dict[str, Any]) -> dict[str, Any]:
        return {
            **extra,
            "pages_fetched": self.fetched,  # by every run of the crawl, as requests_failed
            "pages_fetched_this_run": self.fetched_this_run,  # as seconds and pages_per_second
            "requests_failed": self.failed,
            "pages_not_modified": self.not_modified,  # 304s (--state's history), as fetched
            "urls_listed": self.listed,
            "lastmod_sources": {s: self.lastmods[s] for s in ("header", "content", "none")},
            "seconds": round(self.seconds, 3),
            "pages_per_second": round(self.pages_per_second, 1),
            "robots_txt": self.robots_note,
            "seed_sitemaps": self.seed_notes,
            "requests": self.requests,
            "changes": self.changes,
            "groups": self.groups,
            "feed_url": self.feed_url,
            "llms_txt_url": self.llms_url,
            "render": self.render or None,
            "reasons": {r: self.reasons[r] for r in REASONS},
            "broken_links": [
                {"url": url, "status": status, "linked_from": refs}
                for url, (status, refs) in sorted(self.broken.items())
            ],
            "canonical_broken": [b.to_json() for b in self.canonical_broken],
            "canonical_broken_count": self.canonical_broken_count,
            "public_url_hint": self.foreign.hint(),
            **self.extensions.to_json(),
        }


def is_broken(reason: str, status: int | None) -> bool:
    """4xx and 5xx answers are broken links; other exclusions are not."""
    return reason == HTTP_ERROR and status is not None and status >= 400


def _rate(per_second: float) -> str:
    """Whole pages per second, but not 0 for a slow crawl that fetched something."""
    return f"{per_second:.0f}" if per_second >= 10 or per_second == 0 else f"{per_second:.2g}"
