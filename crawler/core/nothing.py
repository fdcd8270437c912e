"""Why a crawl listed nothing: the message a site owner reads first, from the run's facts.
Pure: the crawl engine gathers the facts (NothingFacts), this says what they mean."""

from __future__ import annotations

from dataclasses import dataclass, field

from crawler.core.decide import (
    CREDENTIALS_REFUSED,
    EXCLUDED_BY_PATTERN,
    FETCH_ERROR,
    HTTP_ERROR,
    OUT_OF_SCOPE,
    REDIRECT,
    ROBOTS_TXT,
    STATUS_HINTS,
)
from crawler.core.report import DecisionRecord, Tally
from crawler.core.robots import RobotsTxt

__all__ = ["NothingFacts", "why_nothing"]


@dataclass(slots=True)
class NothingFacts:
    """What a run that listed nothing knew: its figures, robots.txt as read, the start URL's
    decisions (each hop of its redirects) and how a message names it."""

    tally: Tally
    robots: RobotsTxt
    site_answered: bool  # any HTTP answer to the robots.txt requests
    robots_from: bool  # --robots-from gave the rules
    auth: bool  # credentials were given (--auth)
    start_named: str  # crawl space, and the sitemap's name for it when another
    scope_root: str
    start_chain: list[DecisionRecord] = field(default_factory=list)


def why_nothing(facts: NothingFacts) -> str:
    """Why a crawl listed nothing, said plainly: the one line the CLI prints (exit 3)."""
    start = facts.start_named
    if facts.tally.reasons[ROBOTS_TXT] and not facts.tally.fetched:
        note = facts.tally.robots_note.removesuffix(", everything disallowed")
        if facts.robots.denial is not None and not facts.site_answered:
            return (
                f"nothing crawled: the site could not be reached (robots.txt fetch "
                f"failed: {note}); RFC 9309 allows no crawl until robots.txt can be read"
            )
        if facts.robots.denial is not None:
            return (
                f"nothing crawled: robots.txt could not be read ({note}); RFC 9309 allows "
                f"no crawl until it can be"
            )
        if facts.robots_from:
            return f"nothing listed: robots.txt forbids {start} ({note})"
        return (
            f"nothing listed: robots.txt forbids {start} ({note}; a staging site's "
            f"rules can be replaced by production's: --robots-from URL|FILE)"
        )
    if (why := _why_not_the_start(facts)) is not None:
        return why
    met = sum(facts.tally.reasons.values())
    return (
        f"nothing listed: no indexable page among {met} URLs met from {start} "
        f"({facts.tally.summary()})"
    )


def _why_not_the_start(facts: NothingFacts) -> str | None:
    """The start URL's own problem, said plainly: the most common reasons a first crawl
    lists nothing are a start URL that moved (http to https, apex to www) or is gone."""
    chain = facts.start_chain
    if not chain:
        return None
    start = facts.start_named
    last = chain[-1]
    if len(chain) > 1 and chain[-2].reason == REDIRECT and last.reason == OUT_OF_SCOPE:
        return (
            f"nothing listed: the start URL {start} redirects to {last.url}, outside the "
            f"sitemap's scope {facts.scope_root}: start there"
        )
    where = "" if len(chain) == 1 else f" (redirected to {last.url})"
    if last.reason == HTTP_ERROR and last.status is not None:
        if last.status == 401 and facts.auth:
            hint = CREDENTIALS_REFUSED
        else:
            hint = STATUS_HINTS.get(last.status, "")
        said = f"HTTP {last.status}" + (f": {hint}" if hint else "")
        return f"nothing listed: the start URL {start}{where} answered {said}"
    if last.reason == EXCLUDED_BY_PATTERN and last.detail.startswith("exclude "):
        return f"nothing listed: the start URL {start}{where} is excluded by --{last.detail}"
    if last.reason == FETCH_ERROR and len(chain) == 1:
        return f"nothing listed: the start URL {start} could not be fetched: {last.detail}"
    return None
