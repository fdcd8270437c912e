"""Error types for the crawl. The CLI catches them once and maps them to exit codes."""


class SitemapCrawlerError(Exception):
    """Base of every error the crawler reports to the user as one line."""

    exit_code = 1


class ConfigError(SitemapCrawlerError):
    """Bad command line, TOML config or option value; raised before any request."""

    exit_code = 2


class InvalidURLError(SitemapCrawlerError, ValueError):
    """A URL that cannot be parsed or normalised."""

    exit_code = 2


class NothingListedError(SitemapCrawlerError):
    """The crawl ended with no indexable page; the previous sitemap is left alone."""

    exit_code = 3


class InterruptedCrawl(SitemapCrawlerError):
    """SIGINT or SIGTERM stopped the crawl; the previous sitemap is untouched."""

    exit_code = 130
