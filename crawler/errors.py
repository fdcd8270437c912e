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


class BlockedByBotProtection(SitemapCrawlerError):
    """A CDN's bot protection answers instead of the site: at the start URL or robots.txt,
    or for more than max_bot_blocked of the requests. What the crawl saw is challenge pages,
    not the site, so nothing is published and the previous sitemap is kept; the line names
    the service and how to let the crawler in (crawler.core.botwall)."""

    exit_code: int = Exit.BLOCKED


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


class SubmitRefused(SitemapCrawlerError):
    """`submit`: a search engine's API said no in a way only a change of settings or of the
    account cures (401, 403, 404, 400: no access to the property, an unknown site, a bad
    key)."""

    exit_code: int = Exit.REFUSED


class SubmitLater(SitemapCrawlerError):
    """`submit`: a search engine's API was rate-limiting (429), failing (5xx) or out of
    reach, still after the retries: the same command may work later."""

    exit_code: int = Exit.BUSY


class SubmitFailed(SitemapCrawlerError):
    """The sitemap was published (and --on-publish ran), but submitting it to a search
    engine (`submit = [...]`) failed. The published files are as the publish left them."""

    exit_code: int = Exit.SUBMIT
