"""The checks of the URLs the audited sitemaps list, and the --crawl comparison.

PLACEHOLDER: the audit-urls branch of #12 replaces this module whole (same interface). Until
then it checks nothing, and says so honestly: no finding, no URL counted as checked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from crawler.config import Config
from crawler.core.findings import Finding, ListedUrl
from crawler.shell.progress import Renderer

__all__ = ["UrlChecks", "check_urls", "compare_with_crawl"]


@dataclass(slots=True)
class UrlChecks:
    findings: list[Finding]
    checked: int  # listed URLs judged (fetched, or refused by robots.txt)


async def check_urls(
    config: Config,
    listed: Sequence[ListedUrl],
    *,
    log: Callable[[str], None],
    progress: Renderer | None,
) -> UrlChecks:
    """Placeholder: no URL is checked yet."""
    return UrlChecks(findings=[], checked=0)


async def compare_with_crawl(
    config: Config,
    listed: Sequence[ListedUrl],
    *,
    log: Callable[[str], None],
    progress: Renderer | None,
) -> list[Finding]:
    """Placeholder: no crawl is compared yet."""
    return []
