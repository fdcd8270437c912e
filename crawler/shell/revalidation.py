"""Revalidation: the one owner of what a crawl with a history (--state) asks again and what a
304 means. It keeps the validators a page is asked with, sends them (or not), turns a 304
into the page the history holds, writes the page's history row and keys the history by
the settings a page's facts depend on.

The rule it keeps: a page revived from a 304 is judged exactly as its full answer would be
(type, directives, canonical with analyse()'s precedence, links followed and rel=nofollow
targets, body key, extension facts; crawler.core.history.revive rebuilds it). Which
answers keep validators is decided here alone (keeps_validators: a whole 200, not a
redirect stub), and so is when a revived page's row is the history's as it is (carries):
then it is carried, not written again; crawler.shell.state_history stores the row it is
given, or keeps the history's where told to. The history key
(history_key) is computed here; the state file stores it with the history and, on a new
run whose key differs, drops the history's validators so that every page is asked whole.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Final

from crawler.config import Config
from crawler.core.history import HistoryLinks, Prior, revive
from crawler.core.httpdate import parse_http_date
from crawler.core.lastmod import stamped
from crawler.core.page import PagePolicy, PageResult
from crawler.core.validators import Validators
from crawler.shell.fetch import Response
from crawler.shell.state import CrawlState

#: lastmod.stamped, memoised (#26): parse_http_date hands back one object per date, and a
#: crawl meets the same few (a Date a second, the Last-Modified of files written together)
#: on page after page; the same two instants, the same answer.
_stamped = lru_cache(maxsize=1024)(stamped)


def history_key(page_policy: PagePolicy, config: Config) -> str:
    """The settings a page's facts depend on (every PagePolicy field, so a new one cannot
    be forgotten; rendering; the byte cap, which decides whether a page is too large): a
    history kept with others is not reused for a 304 (crawler.shell.state). A run with
    --no-images must not revive last night's images, nor a rendered run last night's raw
    links, nor a larger cap last night's too-large verdict."""
    policy = dataclasses.asdict(page_policy)
    return json.dumps([policy, config.render, config.max_page_bytes], sort_keys=True)


@dataclass(slots=True)
class Answer:
    """A final answer as judged: the page (revived, for a 304), its status (200 for a
    revived page) and the dates and validators of its headers (the history's where a 304
    leaves them out)."""

    page: PageResult
    status: int
    etag: str | None
    modified: str | None  # Last-Modified as sent
    # modified as a date (parse_http_date), None when it is none: parsed here for the
    # stamp, and the judge's lastmod is the same date (parsed once, not twice a page, #26)
    modified_at: datetime | None
    stamped: bool  # Last-Modified was the response's Date: not a believable date
    too_large: bool  # the body passed max_page_bytes
    revived: bool = False


class Revalidation:
    """Validators out, 304s in, history rows written. `state`: the crawl's, None without
    --state (then nothing is asked conditionally); `conditional`: False while pages are
    rendered (an app serves one shell, one ETag, on every route)."""

    def __init__(self, state: CrawlState | None = None, *, conditional: bool = True) -> None:
        self.state = state
        self.conditional = conditional

    def ask(self, url: str) -> tuple[Prior | None, Validators | None]:
        """url's history, and the validators to ask with (None: ask for the whole page)."""
        state = self.state
        if state is None:
            return None, None
        prior = state.prior(url)
        if prior is None or not self.conditional:
            return prior, None
        return prior, prior.validators

    def answer(
        self,
        url: str,
        prior: Prior | None,
        resp: Response,
        page: PageResult,
        *,
        asked_whole: bool = False,
    ) -> Answer | None:
        """The answer as a full one; None for a 304 there is no history to revive it
        from: then the page is to be asked for whole. A 304 to a request for the whole
        page (`asked_whole`) is judged as the bodiless answer it is."""
        headers = resp.headers
        etag, modified = headers.get("ETag"), headers.get("Last-Modified")
        # a 304 need not repeat Last-Modified (RFC 9110 15.4.5): then last night's stamp,
        # compared with tonight's Date, would pass for a believable date
        if modified is not None:
            modified_at = parse_http_date(modified)
            is_stamped = _stamped(modified_at, parse_http_date(headers.get("Date")))
        else:
            modified_at = None
            is_stamped = page.not_modified and prior is not None and prior.stamped
        if not page.not_modified or ((prior is None or self.state is None) and asked_whole):
            return Answer(
                page, resp.status, etag, modified, modified_at, is_stamped, resp.truncated
            )
        if prior is None or self.state is None:
            return None
        # no body: the page is the history's, its links followed as the full answer's; a
        # page with validators was read whole (record), so it is not too large
        targets, nofollow = self.state.links_of(prior)
        page = revive(
            prior, page, header_given="X-Robots-Tag" in headers, targets=targets,
            nofollow=nofollow,
        )  # fmt: skip
        if not modified:  # the history's Last-Modified, and its date
            modified = prior.modified
            modified_at = parse_http_date(modified)
        etag = etag or prior.etag
        return Answer(
            page, 200, etag, modified, modified_at, is_stamped, False, True
        )  # too_large, revived

    def record(self, url: str, prior: Prior | None, answer: Answer, reason: str) -> None:
        """The page's history row: its facts, and validators only when a 304 can revive it
        as its full answer (keeps_validators); the state stores what it is given."""
        state = self.state
        if state is None:
            return
        if prior is not None and answer.revived and carries(prior, answer, reason):
            state.carry(url, prior)
            return
        keep = keeps_validators(answer)
        state.page(
            url, prior, etag=answer.etag if keep else None,
            modified=answer.modified if keep else None, status=answer.status,
            reason=reason, result=answer.page, stamped=answer.stamped,
        )  # fmt: skip


def keeps_validators(answer: Answer) -> bool:
    """Whether a page is asked conditionally next time: only a whole 200 (or a 304 revived
    from one). A page cut at max_page_bytes is asked whole, so judged too large again and
    never revived as if it were whole; a redirect stub (#24) too, as the history keeps no
    stub's target; any other status has no page to revive."""
    return answer.status == 200 and not answer.too_large and answer.page.moved_to is None


#: The history row's columns carries() vouches for: all but its id and the lastmod columns
#: the finish sets (tests/test_carried.py holds this to the row's fields, so that a column
#: added to the row is compared here too, never carried from last night unseen)
CARRIED_COLUMNS: Final = (
    "etag", "modified", "mime", "meta", "header", "canonical", "canonical_in_html",
    "targets", "nofollow", "body", "blocks", "status", "reason", "first_seen", "extras",
    "stamped",
)  # fmt: skip


def carries(prior: Prior, answer: Answer, reason: str) -> bool:
    """Whether a page revived from `prior` would be stored as the row prior was read from,
    column for column (crawler.shell.state_history.HistoryStore.page): then the history's
    row is carried to the next run as it is, but for the lastmod published. What revive
    takes from the 304 (its validators, type, X-Robots-Tag, Link canonical) and what the
    judge decides (the reason) must be the history's; the links must be the ids the history
    holds, every one named (HistoryLinks); the first date seen is kept only with blocks on
    both sides; a type the history does not hold ("") is not carried (page() would store
    ""). The extras are revive's unpacking of prior's, which pack back as they were."""
    page = answer.page
    return (
        reason == prior.reason
        and prior.status == 200
        and keeps_validators(answer)
        and answer.etag == prior.etag
        and answer.modified == prior.modified
        and answer.stamped == prior.stamped
        and bool(prior.mime)
        and page.mime == prior.mime
        # (at once when revive took the history's own, the usual case: a dataclass's
        # __eq__ is a Python call; so was a helper saying so, twice a page, #26)
        and (page.header is prior.header or page.header == prior.header)
        and (page.meta is prior.meta or page.meta == prior.meta)
        and page.canonical == prior.canonical
        and page.canonical_in_html == prior.canonical_in_html
        and page.body_key == prior.body_key
        and page.blocks is not None
        and page.blocks == prior.blocks
        and prior.first_seen is not None
        and (page.extras is None) == (prior.extras is None)
        and _as_held(page.targets, prior.targets)
        and _as_held(page.nofollow, prior.nofollow)
    )


def _as_held(links: Sequence[str], held: bytes | None) -> bool:
    """Whether links, as page() stores them, are `held`: the same ids, or none on both."""
    # (the exact type revive is given, not isinstance: Sequence's ABC check of a plain
    # list, a revived page's usual nofollow, cost a tenth of carries(), #26)
    if type(links) is HistoryLinks:  # its ids, which it cannot change
        return links.ids == held
    return not links and not held
