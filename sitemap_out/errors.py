"""Error types of the sitemap format library (usable without the crawler)."""


class SitemapOutError(Exception):
    """Base of every error raised by sitemap_out."""


class EntryError(SitemapOutError, ValueError):
    """An entry value breaks the protocol; names the URL and the field."""

    def __init__(self, loc: str, field: str, message: str) -> None:
        self.loc = loc
        self.field = field
        super().__init__(f"{field} of {loc!r}: {message}")


class WriterLockedError(SitemapOutError):
    """Another run holds the output folder's lock."""


class IndexLimitError(SitemapOutError):
    """More sitemaps than one index may list (indexes must not nest)."""


class EmptySitemapError(SitemapOutError):
    """publish() with no entries: an empty urlset is invalid, so nothing is written."""
