"""Error types for the crawl. The CLI catches them once; each carries its exit code, from the
one table of crawler/exit_codes.py."""

from crawler.exit_codes import Exit


class SitemapCrawlerError(Exception):
    """Base of every error the crawler reports to the user as one line."""

    exit_code: int = Exit.FAILURE


class ConfigError(SitemapCrawlerError):
    """Bad command line, TOML config or option value; raised before any request."""

    exit_code: int = Exit.USAGE


class RenderUnavailable(ConfigError):
    """Rendering is on (`render = "auto"` or `"always"`) but Playwright or a Chromium to
    drive is missing: found before any request, so a nightly job fails at once, saying what
    to install."""


class BusyError(SitemapCrawlerError):
    """Another live run holds the output folder or the state file: nothing was fetched and
    nothing of the other run was touched. Not a usage error: the same command works once
    that run ends (75 is sysexits' EX_TEMPFAIL, "try again later")."""

    exit_code: int = Exit.BUSY


class InvalidURLError(SitemapCrawlerError, ValueError):
    """A URL that cannot be parsed or normalised."""

    exit_code: int = Exit.USAGE


class NothingListedError(SitemapCrawlerError):
    """The crawl ended with no indexable page; the previous sitemap is left alone."""

    exit_code: int = Exit.NOTHING


class PublishRefused(SitemapCrawlerError):
    """The crawl went wrong in a way a sitemap must not repeat: the site failed (too many
    5xx or network errors, an outage) or the new sitemap would drop too much of the one
    published. The previous sitemap is kept; --force publishes anyway."""

    exit_code: int = Exit.REFUSED


class OutputError(SitemapCrawlerError):
    """A file the crawl writes (sitemap, state, decisions, report) could not be written
    while it ran: a full disk, a lost mount. Not a usage error: the same command can work
    once the disk is fixed, and a crawl with --state can be resumed."""

    exit_code: int = Exit.IO


class OnPublishError(SitemapCrawlerError):
    """The sitemap was published, but the --on-publish command failed (non-zero exit, not
    found, timed out). The published files are as the publish left them."""

    exit_code: int = Exit.ON_PUBLISH


class UploadError(SitemapCrawlerError):
    """The sitemap was published locally, but copying it to publish_to failed after its
    retries (the store down, a bucket that does not exist, credentials refused). The local
    set is whole; the bucket holds an index whose parts are all there (the old set, or a
    mix of old and new parts under the old index), and the next run completes it."""

    exit_code: int = Exit.UPLOAD


class InterruptedCrawl(SitemapCrawlerError):
    """SIGINT or SIGTERM stopped the crawl; the previous sitemap is untouched."""

    exit_code: int = Exit.INTERRUPTED


class AuditInputError(SitemapCrawlerError):
    """`audit`: the local file to audit cannot be read (missing, unreadable)."""

    exit_code: int = Exit.USAGE
