"""The limits of the sitemap protocol (sitemaps.org 0.9) and of Google's news sitemaps.

A module of its own, importing nothing, so that the writer, the reader, the audit and the
crawler all take the same numbers from one place without importing one another.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_BYTES", "MAX_NEWS_URLS", "MAX_SITEMAPS_PER_INDEX", "MAX_URLS"]

MAX_URLS: Final = 50_000
MAX_BYTES: Final = 52_428_800
MAX_SITEMAPS_PER_INDEX: Final = 50_000
#: Google reads at most 1,000 URLs in a news sitemap.
MAX_NEWS_URLS: Final = 1000
