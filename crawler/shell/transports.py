"""Which HTTP client a crawl's pages go through: the one place that chooses.

The lean client (crawler.shell.http1) carries every crawl without a proxy; a proxy (its
CONNECT tunnels and credentials) stays with aiohttp's HttpTransport, as do the commands that
make a few requests (robots, audit, submit), where the client's cost per request is no
figure.
"""

from __future__ import annotations

from crawler.core.access import Access
from crawler.shell.fetch import HttpTransport
from crawler.shell.http1 import LeanTransport

CrawlTransport = HttpTransport | LeanTransport


def crawl_transport(
    *, user_agent: str, concurrency: int, timeout: float, max_bytes: int, access: Access
) -> CrawlTransport:
    """The transport of a crawl's pages (in the crawl's process and in each worker)."""
    kind = HttpTransport if access.proxy is not None else LeanTransport
    return kind(
        user_agent=user_agent,
        concurrency=concurrency,
        timeout=timeout,
        max_bytes=max_bytes,
        access=access,
    )
