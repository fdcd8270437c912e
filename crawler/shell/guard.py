"""The publish guard: refuse to publish what a failing site or a broken crawl produced; the
previous sitemap is a better answer to search engines than a gutted one.

Parts are compared with parts: the published count is the one the writer read back once at
the start for its stable layout (sitemap_out.previous), which leaves the news sitemap out. The
news sitemap has no shrink rule: it lists the last two days' articles only, so it shrinks and
grows with the news, and holding it back would only make the most time-sensitive file stale.
"""

from __future__ import annotations

from collections.abc import Callable

from crawler.config import Config
from crawler.core.report import Tally
from crawler.errors import PublishRefused


def check_publish(
    config: Config,
    tally: Tally,
    previous: int | None,
    count: int,
    unread: str = "",
    log: Callable[[str], None] = lambda _: None,
) -> None:
    """Raise PublishRefused when too many requests failed (max_error_rate) or the new parts
    list too few URLs beside the published parts (max_shrink). `previous`: None when
    nothing readable was published; `unread`, then, why a published set could not be read
    back (the writer's layout note): max_shrink cannot compare with it, and says so rather
    than pass silently. --force skips the guard (the caller's)."""
    if (copied := tally.foreign.refusal()) is not None:  # #24: a crawl of a copy of a site
        raise PublishRefused(copied)
    failed = tally.failed
    if tally.fetched and failed / tally.fetched > config.max_error_rate:
        raise PublishRefused(
            f"not published: {failed} of {tally.fetched} requests failed with 5xx or "
            f"network errors ({failed / tally.fetched:.0%}, max_error_rate is "
            f"{config.max_error_rate:.0%}); {kept(previous)} (--force publishes anyway)"
        )
    if config.max_shrink < 1 and previous is None and unread:
        log(f"warning: max_shrink not checked: {unread}")
    if config.max_shrink < 1 and previous and count < previous * (1 - config.max_shrink):
        raise PublishRefused(
            f"not published: the new sitemap lists {count} URLs, the published one "
            f"{previous} ({(previous - count) / previous:.0%} fewer, max_shrink is "
            f"{config.max_shrink:.0%}); the previous sitemap is kept "
            f"(--force publishes anyway)"
        )


def kept(previous: int | None) -> str:
    """What became of the sitemap when a run publishes nothing: the previous one stays when
    there is one (`previous`: the URLs it lists, None when nothing readable was published)."""
    return "the previous sitemap is kept" if previous is not None else "nothing written"


def outage_message(outage: str, fetched: int, previous: int | None) -> str:
    return (
        f"not published: the site looks down ({outage}); stopped after {fetched} requests, "
        f"{kept(previous)} (try again later: --force does not publish a crawl cut short)"
    )


def blocked_message(walled: str, previous: int | None) -> str:
    """A crawl a bot wall stopped (crawler.core.botwall) is never published, --force or not:
    what it saw are challenge pages, not the site."""
    return f"{walled}; nothing published" + (f", {kept(previous)}" if previous is not None else "")
