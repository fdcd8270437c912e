"""`sitemap-crawler diff OLD NEW`: what a release gate decides on, as pure functions.

The comparison itself runs in SQL over two spooled sets (crawler.shell.diff_spool); what is
decided here is what its rows mean: which URLs count as moved, what a --fetch check says of a
removed or added URL, and whether a --fail-on threshold is crossed. Keys are the audit's: a
loc as the protocol reads it (crawler.core.urls.normalize: host case, escaping, default port
and fragment do not make another URL; query parameters and trailing slashes do).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Final, Literal

from crawler.core.findings import CODES, Finding, ordered
from crawler.errors import ConfigError

__all__ = [
    "INDEXABLE",
    "KINDS",
    "NOT_CHECKED",
    "NOT_MET",
    "Change",
    "Crossed",
    "DiffSummary",
    "Threshold",
    "crossed",
    "lastmod_instant",
    "measure",
    "parse_thresholds",
    "tally",
    "verdict",
]

Kind = Literal["added", "removed", "moved"]
#: The lists of every output, in this order.
KINDS: Final[tuple[Kind, ...]] = ("removed", "added", "moved")
#: A --fetch verdict: the URL answers 200 and may be listed (no URL finding of the audit).
INDEXABLE: Final = "indexable"
#: A --fetch verdict: not fetched (another site or folder than the one checked, or cut short).
NOT_CHECKED: Final = "not_checked"
#: A removed URL NEW's crawl never met (its --decisions file has no line for it).
NOT_MET: Final = "not_met"
#: The audit's URL findings that do not say whether a page may be listed.
_NOT_A_VERDICT: Final = frozenset(
    {
        "lastmod_in_future",
        "lastmod_newer_than_page",
        "lastmod_all_same",
        "soft_404",
        "duplicate_content",
    }
)

_DAY: Final = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])")
_THRESHOLD: Final = re.compile(r"\s*(added|removed|moved)\s*>\s*(\d+(?:\.\d+)?)\s*(%?)\s*")


@dataclass(frozen=True, slots=True)
class Threshold:
    """`removed>N` (a count) or `removed>P%` (a share of OLD's URLs)."""

    kind: Kind
    limit: float
    percent: bool = False

    def __str__(self) -> str:
        limit = f"{self.limit:g}"
        return f"{self.kind}>{limit}{'%' if self.percent else ''}"


def parse_thresholds(specs: Iterable[str]) -> tuple[Threshold, ...]:
    """Each --fail-on value, repeated or comma-separated; a bad one is a usage error."""
    found: list[Threshold] = []
    for spec in specs:
        for part in spec.split(","):
            match = _THRESHOLD.fullmatch(part)
            kind, limit, percent = match.groups() if match is not None else ("", "", "")
            if match is None or ("." in limit and not percent):
                raise ConfigError(
                    f"--fail-on {part.strip()!r}: expected KIND>N or KIND>P% with KIND removed, "
                    "added or moved (N a whole count, P a percentage of OLD's URLs)"
                )
            if percent and float(limit) > 100:
                raise ConfigError(f"--fail-on {part.strip()!r}: a percentage is at most 100")
            found.append(Threshold(kind, float(limit), bool(percent)))  # type: ignore[arg-type]
    return tuple(found)


@dataclass(slots=True)
class DiffSummary:
    """The figures at the top of every output."""

    old: str
    new: str
    old_urls: int = 0
    new_urls: int = 0
    removed: int = 0
    added: int = 0
    moved: int = 0
    unchanged: int = 0
    lastmods_compared: int = 0  # URLs in both with a lastmod on both sides
    fetched: bool = False
    # what the verdicts come from: "fetch" (--fetch: the audit's URL checks), "decisions"
    # (NEW is a crawl's decisions file: why it left each removed URL out), or None
    explained_by: str | None = None
    # kind -> verdict (INDEXABLE, a finding code or a crawl's reason, NOT_CHECKED, NOT_MET)
    # -> URLs
    verdicts: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0

    def count(self, kind: str) -> int:
        return int(getattr(self, kind))

    def to_json(self) -> dict[str, Any]:
        return {
            "old": self.old,
            "new": self.new,
            "old_urls": self.old_urls,
            "new_urls": self.new_urls,
            "removed": self.removed,
            "added": self.added,
            "moved": self.moved,
            "unchanged": self.unchanged,
            "lastmods_compared": self.lastmods_compared,
            "fetched": self.fetched,
            "explained_by": self.explained_by,
            "verdicts": self.verdicts,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True, slots=True)
class Change:
    """One URL in one list. `url`: as written (removed: in OLD; added and moved: in NEW).
    `verdict`/`detail`: what --fetch found (None without it)."""

    kind: Kind
    url: str
    old_lastmod: str | None = None
    new_lastmod: str | None = None
    verdict: str | None = None
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"url": self.url}
        if self.kind != "added":
            data["old_lastmod"] = self.old_lastmod
        if self.kind != "removed":
            data["new_lastmod"] = self.new_lastmod
        if self.verdict is not None:
            data["verdict"] = self.verdict
            data["detail"] = self.detail
        return data


@dataclass(frozen=True, slots=True)
class Crossed:
    """A --fail-on threshold the diff went past, and the value it read."""

    threshold: Threshold
    value: float  # the count, or the share of OLD in percent

    def __str__(self) -> str:
        if math.isinf(self.value):  # a share of an empty OLD (measure)
            return f"{self.threshold} (OLD is empty)"
        said = f"{self.value:.1f}%" if self.threshold.percent else f"{self.value:,.0f}"
        return f"{self.threshold} ({said})"


def measure(threshold: Threshold, summary: DiffSummary) -> float:
    """What a threshold is compared with: a count, or a share of OLD's URLs in percent. A
    share of an empty OLD: 0% if the list is empty, else all of it (a first release that
    adds 10 URLs to none has added "infinitely" many)."""
    n = summary.count(threshold.kind)
    if not threshold.percent:
        return float(n)
    if not summary.old_urls:
        return math.inf if n else 0.0
    return 100.0 * n / summary.old_urls


def crossed(thresholds: Sequence[Threshold], summary: DiffSummary) -> list[Crossed]:
    """The thresholds crossed: exit 1."""
    found = []
    for threshold in thresholds:
        value = measure(threshold, summary)
        if value > threshold.limit:
            found.append(Crossed(threshold, value))
    return found


def verdict(findings: Iterable[Finding]) -> tuple[str, str]:
    """What --fetch says of one URL, from the audit's findings on it: the worst that says
    whether a search engine may list it (a 404, a redirect, noindex, robots.txt...), else
    INDEXABLE. Lastmod findings and the site's soft 404 say nothing of this URL's fate."""
    relevant = [
        f for f in findings if CODES[f.code].scope == "url" and f.code not in _NOT_A_VERDICT
    ]
    if not relevant:
        return INDEXABLE, "answers 200 and may be listed"
    worst = ordered(relevant)[0]
    return worst.code, worst.detail


def lastmod_instant(raw: str | None) -> str | None:
    """A lastmod as the instant it names (UTC, to the second), so that `2026-01-02` and
    `2026-01-02T00:00:00+00:00` are one date and not a move; a value that is not a W3C date
    is kept as written (two such values differ when their text does)."""
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    if _DAY.fullmatch(text):  # the usual form, and a million of them: no datetime made
        return f"{text}T00:00:00Z"
    try:
        if "T" not in text:
            day = date.fromisoformat(text)
            when = datetime(day.year, day.month, day.day, tzinfo=UTC)
        else:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
    except ValueError:
        return text
    return when.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def tally(verdicts: dict[str, dict[str, int]], kind: str, label: str) -> None:
    """Count one URL's verdict in the summary's table."""
    counts = verdicts.setdefault(kind, {})
    counts[label] = counts.get(label, 0) + 1
