"""Crawl settings: one table of options drives the TOML loader, the CLI flags and validation.

Precedence is defaults < TOML file (`-c`) < environment (`SITEMAP_CRAWLER_<KEY>`) < command
line. Every value is checked here, before any request is sent, so a typo in a nightly job's
config fails fast with exit code 2.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import ssl
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawler.core.access import AUTH_ENV, Access, header_safe, redact, secrets_of
from crawler.core.groups import Groups, group_items
from crawler.core.hosts import parse_host_pattern
from crawler.core.patterns import Patterns
from crawler.core.urls import join_parts, normalize
from crawler.errors import ConfigError, InvalidURLError
from sitemap_out.stylesheet import check_href

from . import DEFAULT_USER_AGENT

#: Where <lastmod> comes from (crawler.core.lastmod.MODES).
LASTMOD_MODES = ("auto", "header", "content", "none")
CHANGEFREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
DEFAULT_LISTED_TYPES = ("text/html", "application/xhtml+xml", "application/pdf")
DEFAULT_STRIP_PARAMS = ("jsessionid", "phpsessid", "sid", "utm_*", "gclid", "fbclid")
#: The engines that read sitemaps and report the URLs of one they may not index.
DEFAULT_SEARCH_ENGINES = ("googlebot", "bingbot")
#: A robots.txt product token (RFC 9309 2.2.1), as a search engine's is written.
_ENGINE_TOKEN_RE = re.compile(r"[A-Za-z_-]+")
PROTOCOL_MAX_URLS = 50_000
PROTOCOL_MAX_BYTES = 52_428_800
RENDER_MODES = ("never", "auto", "always")
NOTIFY_FORMATS = ("json", "slack")
#: The search engines `submit` knows (IndexNow is not one: it takes URLs, not sitemaps).
SUBMIT_ENGINES = ("google", "bing")
# Compiled (and cached by re) when the option is given: a start without it pays no compile
_IMAGE_HOST_PATTERN = r"\*|(?:\*?\.)?[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?"
# Google News: ISO 639 two or three letters, and zh-cn / zh-tw
_NEWS_LANGUAGE_PATTERN = r"[a-z]{2,3}|zh-cn|zh-tw"


def _opt(
    default: Any,
    help: str,
    *,
    metavar: str | None = None,
    choices: tuple = (),
    repeat: bool = False,
) -> Any:
    """A config field: its default and the one line of help shared by --help and the docs.
    `repeat`: a list given on the command line one flag per item (`--exclude A --exclude B`),
    for values that may contain commas (patterns, headers); other lists are comma-separated."""
    meta = {"help": help, "metavar": metavar, "choices": choices, "repeat": repeat}
    if isinstance(default, (list, tuple)):
        return field(default_factory=lambda: tuple(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(slots=True, repr=False)  # its own __repr__, without the secrets
class Config:
    """A run's settings, a field a key: the command line, TOML and environment fill them."""

    url: str | None = _opt(None, "start URL; its folder is the sitemap's scope", metavar="URL")
    seeds: tuple[str, ...] = _opt(
        (), "more start URLs in the same scope (on the command line: more URLs)", metavar="URL"
    )
    output: Path = _opt(
        Path("sitemap-out"), "folder the sitemap files are published to", metavar="DIR"
    )
    sitemap_url: str | None = _opt(
        None,
        "where the sitemap will be published (default: <start folder>/sitemap.xml)",
        metavar="URL",
    )
    seed_sitemaps: bool = _opt(
        False,
        "also start from the URLs of the site's own sitemaps (robots.txt Sitemap lines, "
        "else /sitemap.xml)",
    )
    public_url: str | None = _opt(
        None,
        "write locs under this public origin while crawling the start URL's server",
        metavar="URL",
    )
    concurrency: int = _opt(8, "requests in flight at once", metavar="N")
    workers: int = _opt(
        -1,
        "processes fetching and parsing pages beside the main one on big crawls "
        "(-1: one per CPU core beyond the first; 0: none)",
        metavar="N",
    )
    max_pages: int = _opt(
        5_000_000,
        "stop after fetching this many pages (0: no limit; the default ends a URL space "
        "no other rule catches)",
        metavar="N",
    )
    max_time: float = _opt(
        0.0,
        "stop taking new URLs after this many seconds and publish what was found, if the "
        "publish guard allows (0: no limit)",
        metavar="SECONDS",
    )
    max_depth: int = _opt(
        -1, "follow links at most this many hops from the start (-1: no limit)", metavar="N"
    )
    gzip: bool = _opt(False, "write sitemap-N.xml.gz parts behind a sitemap.xml index")
    max_urls_per_file: int = _opt(
        PROTOCOL_MAX_URLS, "roll over to a new file after this many URLs", metavar="N"
    )
    max_bytes_per_file: int = _opt(
        PROTOCOL_MAX_BYTES, "roll over before a file's uncompressed size passes this", metavar="N"
    )
    format: str = _opt("xml", "sitemap format", choices=("xml", "txt"))
    user_agent: str = _opt(
        DEFAULT_USER_AGENT,
        "User-Agent header; its first token is the robots.txt product token",
        metavar="UA",
    )
    auth: str | None = _opt(
        None,
        f"basic auth for the start URL's origin only (default: ${AUTH_ENV}; never printed)",
        metavar="USER:PASSWORD",
    )
    header: tuple[str, ...] = _opt(
        (), "a request header for the start URL's origin only", metavar="'NAME: VALUE'", repeat=True
    )
    cookie: tuple[str, ...] = _opt(
        (), "a cookie for the start URL's origin only", metavar="NAME=VALUE", repeat=True
    )
    auth_origin: str | None = _opt(
        None,
        "the origin auth, header and cookie from a config or the environment are for "
        "(default: the configured url's); a command aimed elsewhere does not send them",
        metavar="ORIGIN",
    )
    allowed_hosts: tuple[str, ...] = _opt(
        (),
        "more hosts the crawl follows links to and lists, from their root, with the start "
        "URL's scheme and port: blog.example.com, or *.example.com for its subdomains",
        metavar="HOST",
    )
    cross_host: bool = _opt(
        False,
        "with allowed_hosts: one sitemap set in --output for every host, not one per host "
        "(valid when the hosts are verified together, or each host's robots.txt names it)",
    )
    resolve: tuple[str, ...] = _opt(
        (),
        "connect to this address for HOST:PORT, as curl --resolve (staging, a host not yet "
        "in DNS): blog.example.com:443:10.0.0.5",
        metavar="HOST:PORT:ADDRESS",
    )
    proxy: str | None = _opt(
        None,
        "send every request through this http:// proxy (USER:PASSWORD@ allowed)",
        metavar="URL",
    )
    ca_bundle: Path | None = _opt(
        None, "also trust the CA certificates in this PEM file (TLS)", metavar="FILE"
    )
    insecure: bool = _opt(False, "do not check TLS certificates at all (with a warning)")
    robots_from: str | None = _opt(
        None,
        "apply the robots.txt rules of this URL or file instead of the site's own "
        "(a staging site's Disallow: /)",
        metavar="URL|FILE",
    )
    report: Path | None = _opt(
        None, "write the crawl's figures and broken links as JSON", metavar="FILE.json"
    )
    decisions: Path | None = _opt(
        None, "write one JSON line per URL met: listed or why not", metavar="FILE.jsonl"
    )
    changes: Path | None = _opt(
        None,
        "write the URLs added, removed and changed since the last published sitemap as JSON",
        metavar="FILE.json",
    )
    feed: bool = _opt(
        False, "also publish changes.atom: an Atom feed of the URLs added or changed lately"
    )
    feed_days: int = _opt(7, "how many days of changes changes.atom covers", metavar="N")
    llms_txt: bool = _opt(
        False,
        "also publish llms.txt: the listed pages' titles and descriptions by section, for "
        "language models (llmstxt.org)",
    )
    llms_txt_max_links: int = _opt(
        1000, "pages llms.txt names, the first in sitemap order; the rest are counted", metavar="N"
    )
    stylesheet: bool = _opt(
        False, "publish sitemap.xsl and name it in every XML file, so a browser shows a table"
    )
    stylesheet_url: str | None = _opt(
        None, "with --stylesheet: name this XSL (same origin) instead of publishing ours",
        metavar="URL",
    )  # fmt: skip
    quiet: bool = _opt(False, "print only errors")
    log_format: str = _opt(
        "text", "stderr as plain text, or one JSON event a line", choices=("text", "json")
    )
    metrics: Path | None = _opt(
        None, "write the run's figures here for Prometheus (textfile collector)", metavar="FILE"
    )
    on_publish: str | None = _opt(
        None, "run this shell command after a successful publish (exit 6 if it fails)",
        metavar="COMMAND",
    )  # fmt: skip
    # telling the operator, and the search engines (#28): after the run, never part of it
    on_failure: str | None = _opt(
        None,
        "run this shell command when the run fails (any exit code but 0), told the exit code, "
        "the reason and a summary file; its own failure is a warning",
        metavar="COMMAND",
    )
    notify_url: str | None = _opt(
        None,
        "POST the run's outcome (summary, exit code, reason) as JSON to this webhook when it "
        "fails (a secret: never printed)",
        metavar="URL",
    )
    notify_on_success: bool = _opt(False, "also POST to notify_url when the run succeeds")
    notify_format: str = _opt(
        "json", "the webhook's body: our JSON, or Slack's {\"text\": ...}", choices=NOTIFY_FORMATS
    )
    submit: tuple[str, ...] = _opt(
        (),
        "after a successful publish, submit the sitemap to these search engines' APIs "
        "(google: Search Console, bing: Bing Webmaster Tools)",
        metavar="ENGINE",
    )
    google_key_file: Path | None = _opt(
        None,
        "the Google service account's JSON key file, for submit (default: "
        "$GOOGLE_APPLICATION_CREDENTIALS)",
        metavar="FILE.json",
    )
    google_property: str | None = _opt(
        None,
        "the Search Console property: https://www.example.com/ or sc-domain:example.com "
        "(default: the sitemap's origin, a URL-prefix property)",
        metavar="PROPERTY",
    )
    bing_api_key: str | None = _opt(
        None, "the Bing Webmaster Tools API key, for submit (never printed)", metavar="KEY"
    )
    bing_site: str | None = _opt(
        None, "the site as Bing Webmaster Tools knows it (default: the sitemap's origin)",
        metavar="URL",
    )  # fmt: skip
    publish_to: str | None = _opt(
        None,
        "after the local publish, copy the set to object storage: s3://BUCKET/PREFIX/, "
        "gs://BUCKET/PREFIX/ or az://CONTAINER/PREFIX/ (credentials from the provider's own "
        "environment; exit 7 if it fails)",
        metavar="URL",
    )
    publish_endpoint: str | None = _opt(
        None,
        "publish_to's endpoint, for an S3-compatible store (MinIO, Cloudflare R2)",
        metavar="URL",
    )
    publish_region: str | None = _opt(
        None, "publish_to's S3 region (default: $AWS_REGION, else us-east-1; R2: auto)",
        metavar="REGION",
    )  # fmt: skip
    timeout: float = _opt(30.0, "seconds allowed for one whole response", metavar="SECONDS")
    max_page_bytes: int = _opt(
        10 * 1024 * 1024,
        "read at most this many (decompressed) bytes "
        "of a page; larger pages are recorded as too large",
        metavar="N",
    )
    delay: float = _opt(0.0, "minimum seconds between two requests to the site", metavar="SECONDS")
    max_rps: float = _opt(0.0, "at most this many requests per second (0: no cap)", metavar="N")
    max_crawl_delay: float = _opt(
        10.0, "longest robots.txt Crawl-delay honoured; above it, this is used", metavar="SECONDS"
    )
    retries: int = _opt(
        2,
        "retries per URL after the first try, on connection errors, timeouts, 429 and 5xx "
        "(0: no retry)",
        metavar="N",
    )
    max_retry_after: float = _opt(
        60.0, "longest Retry-After honoured before a retry", metavar="SECONDS"
    )
    state: Path | None = _opt(
        None, "SQLite file holding the crawl's progress, so it can be resumed", metavar="FILE"
    )
    resume: bool = _opt(False, "continue the crawl saved in --state instead of starting over")
    fresh: bool = _opt(
        False,
        "ignore the history in --state: fetch every page in full and date none by its content",
    )
    max_redirects: int = _opt(10, "longest redirect chain followed before giving up", metavar="N")
    follow_nofollow: bool = _opt(False, "also follow rel=nofollow links and nofollow pages")
    respect_noindex: bool = _opt(True, "leave out pages that say noindex (meta or header)")
    search_engines: tuple[str, ...] = _opt(
        DEFAULT_SEARCH_ENGINES,
        "robots.txt product tokens of the search engines reading the sitemap: a URL is "
        "listed only if each one's robots.txt group allows it and no noindex names it",
        metavar="TOKEN",
    )
    respect_canonical: bool = _opt(True, "leave out pages whose canonical names another URL")
    skip_duplicates: bool = _opt(True, "leave out pages byte-identical to one already listed")
    listed_types: tuple[str, ...] = _opt(
        DEFAULT_LISTED_TYPES, "Content-Types that may be listed", metavar="TYPE"
    )
    strip_params: tuple[str, ...] = _opt(
        DEFAULT_STRIP_PARAMS, "query parameters removed from links (* globs)", metavar="NAME"
    )
    include: tuple[str, ...] = _opt(
        (),
        "fetch and list only URLs whose path and query match one of these (repeatable; the "
        "start URL is fetched anyway): a glob, * any text and ? literal, or re:REGEX",
        metavar="PATTERN",
        repeat=True,
    )
    exclude: tuple[str, ...] = _opt(
        (),
        "never fetch nor list URLs whose path and query match (repeatable; e.g. '/tag/*', "
        "'/search?*')",
        metavar="PATTERN",
        repeat=True,
    )
    exclude_listing_only: tuple[str, ...] = _opt(
        (),
        "fetch matching pages and follow their links, but never list them (repeatable; hub pages)",
        metavar="PATTERN",
        repeat=True,
    )
    max_url_length: int = _opt(2048, "longer URLs are neither fetched nor listed", metavar="N")
    max_segment_repeats: int = _opt(
        3, "skip paths repeating one segment more often (trap)", metavar="N"
    )
    max_pages_per_folder: int = _opt(
        0, "fetch at most this many URLs of one folder (0: no limit)", metavar="N"
    )
    max_pages_per_param: int = _opt(
        1000,
        "fetch at most this many URLs of one path that differ only in their query "
        "(a calendar, facets; 0: no limit)",
        metavar="N",
    )
    priority_by_depth: bool = _opt(False, "write priority = max(0.1, 0.8 ** depth)")
    images: bool = _opt(True, "list the images each page shows (image sitemap extension)")
    image_hosts: tuple[str, ...] = _opt(
        (),
        "hosts listed images may live on: a host, or .example.com / *.example.com for it and "
        "its subdomains, or * (default: the page's host and its subdomains)",
        metavar="HOST",
    )
    news_name: str | None = _opt(
        None,
        "news sitemap: the publication's name ([news] name); set with news_language and "
        "news_articles to write sitemap-news.xml",
        metavar="NAME",
    )
    news_language: str | None = _opt(
        None, "news sitemap: the publication's language, e.g. en ([news] language)", metavar="LANG"
    )
    news_articles: tuple[str, ...] = _opt(
        (),
        "news sitemap: the pages that are articles, by path pattern like include's "
        "([news] articles; repeatable)",
        metavar="PATTERN",
        repeat=True,
    )
    # grouped sitemaps (#27): Search Console reports indexing per submitted sitemap
    groups: tuple[str, ...] = _opt(
        (),
        "sitemap groups: URLs whose path matches PATTERN (like include's) go in "
        "sitemap-NAME-N.xml, the first group matching wins, the rest keep sitemap-N.xml "
        "([[groups]] name and include; repeatable: one NAME=PATTERN each, a comma is part "
        "of the pattern)",
        metavar="NAME=PATTERN",
        repeat=True,
    )
    changefreq: str | None = _opt(None, "write this changefreq for every URL", choices=CHANGEFREQS)
    lastmod: str = _opt(
        "auto",
        "where <lastmod> comes from: auto (Last-Modified when believable, else content), "
        "header, content (the run in which the page's text last changed; needs --state) "
        "or none",
        choices=LASTMOD_MODES,
    )
    max_shrink: float = _opt(
        0.5,
        "refuse to publish a sitemap that drops more than this fraction of the URLs "
        "in the one published in the output folder",
        metavar="FRACTION",
    )
    max_error_rate: float = _opt(
        0.1,
        "refuse to publish when more than this fraction of the requests failed "
        "with 5xx or network errors",
        metavar="FRACTION",
    )
    force: bool = _opt(False, "publish even when max_shrink or max_error_rate would refuse")
    max_bot_blocked: float = _opt(
        0.2,
        "stop (exit 8, nothing published) when a CDN's bot protection answers more than this "
        "fraction of the requests, once 20 were made (its answer at the start URL always "
        "stops); 1: never for the fraction",
        metavar="FRACTION",
    )
    render: str = _opt(
        "never",
        "load HTML pages in headless Chromium and read their links from the rendered DOM "
        "(auto: only when the first pages show it finds more, and for app shells)",
        choices=RENDER_MODES,
    )
    render_timeout: float = _opt(
        10.0,
        "seconds one page may take to render (network idle, then a short settle); a page "
        "that never settles is judged on what it shows then",
        metavar="SECONDS",
    )
    render_concurrency: int = _opt(2, "pages rendered at once, in one browser", metavar="N")
    render_hosts: tuple[str, ...] = _opt(
        (),
        "origins besides the start URL's that the browser may fetch scripts and data from "
        "(a CDN: https://cdn.example.com)",
        metavar="ORIGIN",
    )
    chromium_path: str | None = _opt(
        None, "the Chromium executable rendering uses (default: chromium on PATH)", metavar="FILE"
    )

    def validate(self) -> Config:
        """Check every value; raise ConfigError naming the key. Returns self for chaining."""
        return _validate(self)

    def access(self, origin: str = "") -> Access:
        """How requests reach the site; credentials, headers, cookies go to `origin` only."""
        return Access.make(
            origin,
            auth=self.auth,
            headers=self.header,
            cookies=self.cookie,
            proxy=self.proxy,
            ca_bundle=str(self.ca_bundle) if self.ca_bundle is not None else None,
            insecure=self.insecure,
            resolve=self.resolve,
        )

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secrets in these settings, for `access.redact`: valid or not."""
        return secrets_of(self.auth, self.header, self.cookie, self.proxy) + tuple(
            value for value in (self.notify_url, self.bing_api_key) if value
        )

    def __repr__(self) -> str:
        """The dataclass's repr less the secrets: no password, header or cookie in a log."""
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields())
        return redact(f"Config({shown})", self.secrets)


def _validate(self: Config) -> Config:
    """Every value checked, before any request; ConfigError naming the key. A function,
    not a method, so the Config class stays its fields."""
    if not self.url:
        raise ConfigError(
            "no start URL: give one on the command line, as SITEMAP_CRAWLER_URL or as "
            "`url` in the config"
        )
    _check_ranges(self)
    self.render_hosts = tuple(origin_key("render_hosts", v) for v in self.render_hosts)
    if self.auth_origin is not None:
        self.auth_origin = origin_key("auth_origin", self.auth_origin)
    self.allowed_hosts = tuple(parse_host_pattern(p) for p in self.allowed_hosts)
    if self.cross_host and not self.allowed_hosts:
        raise ConfigError("cross_host lists several hosts in one sitemap: give allowed_hosts")
    if self.publish_to and self.allowed_hosts and not self.cross_host:
        raise ConfigError(
            "publish_to copies one sitemap set, and allowed_hosts without cross_host makes one "
            "per host: give cross_host, or run one crawl per host with its own publish_to"
        )
    if self.resume and self.state is None:
        raise ConfigError("--resume needs --state FILE: the saved crawl to continue")
    if self.state is None and (self.fresh or self.lastmod == "content"):
        what = "--fresh" if self.fresh else "lastmod = content"
        raise ConfigError(
            f"{what} needs --state FILE: the site's history across runs, where content "
            "dates are kept (without it, every run is fresh)"
        )
    for host in self.image_hosts:
        if not re.fullmatch(_IMAGE_HOST_PATTERN, host):
            raise ConfigError(
                f"image_hosts: {host!r} is not a host, .host or *.host pattern (or *)"
            )
    _check_news(self)
    _check_publish_to(self)
    Groups.parse(self.groups)  # a bad group fails before any request
    _check_submit(self)
    if self.resume and self.fresh:
        raise ConfigError(
            "--resume continues a stopped crawl, --fresh starts from nothing: give one"
        )
    if not self.user_agent.strip() or not header_safe(self.user_agent):
        raise ConfigError("user_agent must be one non-empty line, without control characters")
    self.access()  # auth, header, cookie, proxy: the error names which, never the value
    _check_tls(self.ca_bundle, self.insecure)
    _check_robots_from(self.robots_from)
    _check_stylesheet(
        self.stylesheet, self.stylesheet_url, self.sitemap_url or self.public_url or self.url
    )
    if not self.listed_types:
        raise ConfigError("listed_types must name at least one Content-Type")
    self.listed_types = tuple(t.strip().lower() for t in self.listed_types)
    engines = tuple(dict.fromkeys(e.strip().lower() for e in self.search_engines if e.strip()))
    for engine in engines:
        if not _ENGINE_TOKEN_RE.fullmatch(engine):
            raise ConfigError(
                f"search_engines: {engine!r} is not a robots.txt product token "
                f"(letters, '-' and '_', such as googlebot)"
            )
    self.search_engines = engines
    for key in ("include", "exclude", "exclude_listing_only"):
        Patterns.compile(getattr(self, key), key)  # a bad pattern fails before any request
    for spec in fields():
        if (
            spec.metadata["choices"]
            and getattr(self, spec.name) is not None
            and getattr(self, spec.name) not in spec.metadata["choices"]
        ):
            raise ConfigError(
                f"{spec.name} must be one of {', '.join(spec.metadata['choices'])}"
                f", got {getattr(self, spec.name)!r}"
            )
    return self


def _check_ranges(config: Config) -> None:
    """Numbers out of their range fail here, before any request, naming the key."""
    for key, low in (
        ("concurrency", 1),
        ("workers", -1),
        ("max_pages", 0),
        ("max_depth", -1),
        ("max_urls_per_file", 1),
        ("max_bytes_per_file", 1024),
        ("max_page_bytes", 1024),
        ("max_redirects", 0),
        ("retries", 0),
        ("max_url_length", 16),
        ("max_segment_repeats", 1),
        ("max_pages_per_folder", 0),
        ("max_pages_per_param", 0),
    ):
        if getattr(config, key) < low:
            raise ConfigError(f"{key} must be at least {low}, got {getattr(config, key)}")
    if config.max_urls_per_file > PROTOCOL_MAX_URLS:
        raise ConfigError(f"max_urls_per_file may not exceed the protocol's {PROTOCOL_MAX_URLS}")
    if config.max_bytes_per_file > PROTOCOL_MAX_BYTES:
        raise ConfigError(f"max_bytes_per_file may not exceed the protocol's {PROTOCOL_MAX_BYTES}")
    if not config.timeout > 0:
        raise ConfigError(f"timeout must be positive, got {config.timeout}")
    if not 0 <= config.max_time < 366 * 86_400:
        raise ConfigError(
            f"max_time must be between 0 and a year of seconds, got {config.max_time}"
        )
    for key in ("delay", "max_rps", "max_crawl_delay", "max_retry_after"):
        if not 0 <= getattr(config, key) < 86_400:
            raise ConfigError(f"{key} must be between 0 and 86400, got {getattr(config, key)}")
    if not 1 <= config.feed_days <= 3650:
        raise ConfigError(f"feed_days must be from 1 to 3650, got {config.feed_days}")
    if not 0 <= config.llms_txt_max_links <= 100_000:
        raise ConfigError(
            f"llms_txt_max_links must be from 0 to 100000, got {config.llms_txt_max_links}"
        )
    for key in ("max_shrink", "max_error_rate", "max_bot_blocked"):
        if not 0 <= getattr(config, key) <= 1:
            raise ConfigError(f"{key} must be between 0 and 1, got {getattr(config, key)}")
    if config.render_concurrency < 1:
        raise ConfigError(f"render_concurrency must be at least 1, got {config.render_concurrency}")
    if not 0 < config.render_timeout <= 600:
        raise ConfigError(
            f"render_timeout must be between 0 and 600 seconds, got {config.render_timeout}"
        )


def _check_stylesheet(on: bool, url: str | None, site: str | None) -> None:
    """A stylesheet URL without the stylesheet would be dropped without a word, and one on
    another origin than the sitemap's (`site`) is refused by every browser."""
    if url is None:
        return
    problem = check_href(url)
    if problem is not None:
        raise ConfigError(f"stylesheet_url {url!r} {problem}")
    if site is not None and (url.startswith("//") or re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", url)):
        try:
            ours = join_parts(normalize(site))[1]
            scheme = ours[: ours.index(":") + 1]
            theirs = join_parts(normalize(scheme + url if url.startswith("//") else url))[1]
        except InvalidURLError:
            return  # the start URL's own check says what is wrong with it
        if theirs != ours:
            raise ConfigError(
                f"stylesheet_url {url!r} is on {theirs}, not on the sitemap's origin {ours}: "
                "browsers refuse a stylesheet from another origin (serve it from the site, "
                "or give a path such as /sitemap.xsl)"
            )
    if not on:
        raise ConfigError(
            "stylesheet_url needs stylesheet = true (--stylesheet, "
            f"{env_var('stylesheet')}=true): the files name it only then"
        )


def _check_news(config: Config) -> None:
    """The news sitemap is all or nothing: a partial [news] table is a mistake, not a choice."""
    news = (config.news_name, config.news_language, config.news_articles)
    if any(news) and not all(news):
        raise ConfigError(
            "the news sitemap needs all of [news] name, language and articles "
            "(news_name, news_language, news_articles)"
        )
    language = config.news_language
    if language is not None and not re.fullmatch(_NEWS_LANGUAGE_PATTERN, language):
        raise ConfigError(
            f"news_language must be an ISO 639 code (en, de, zh-cn, zh-tw), "
            f"got {config.news_language!r}"
        )
    if config.news_articles:
        Patterns.compile(config.news_articles, "news_articles")
        if config.format == "txt":
            raise ConfigError("the news sitemap is XML: it cannot be written with format = txt")


def _check_submit(config: Config) -> None:
    """The notification and submission settings, checked before any request: a nightly job
    learns of a typo now, not after hours of crawling."""
    if config.notify_url is not None and not robots_from_is_url(config.notify_url.strip()):
        raise ConfigError("notify_url must be an http(s):// URL (the value is not shown)")
    engines = tuple(dict.fromkeys(e.strip().lower() for e in config.submit if e.strip()))
    for engine in engines:
        if engine not in SUBMIT_ENGINES:
            raise ConfigError(
                f"submit: {engine!r} is not an engine submit knows ({', '.join(SUBMIT_ENGINES)})"
            )
    config.submit = engines
    if "google" in engines:
        named = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
        if config.google_key_file is None and named:
            config.google_key_file = Path(named)


def _check_publish_to(config: Config) -> None:
    """publish_to and its companions, checked now: a typo in a bucket URL fails the nightly
    job before the crawl, not after it."""
    if config.publish_to is None:
        for key in ("publish_endpoint", "publish_region"):
            if getattr(config, key) is not None:
                raise ConfigError(f"{key} needs publish_to: the bucket to publish to")
        return
    from crawler.core.uploads import check_endpoint, parse_target  # with publish_to only

    target = parse_target(config.publish_to)
    config.publish_to = target.url
    if config.publish_endpoint is not None:
        config.publish_endpoint = check_endpoint(config.publish_endpoint, target)
    if config.publish_region is not None:
        if target.scheme != "s3":
            raise ConfigError(f"publish_region is for s3:// only, not {target.scheme}://")
        if not re.fullmatch(r"[a-z0-9-]{1,40}", config.publish_region):
            raise ConfigError(
                f"publish_region must be a region name (us-east-1, auto), "
                f"got {config.publish_region!r}"
            )


def origin_key(key: str, value: str) -> str:
    """An origin setting (render_hosts, auth_origin) as the origin it names
    (scheme://host[:port]); a bare host is https. A path or a typo fails now, before any
    request."""
    text = value.strip()
    if "://" not in text:
        text = "https://" + text
    try:
        url = normalize(text.rstrip("/") + "/")
    except ValueError:
        raise ConfigError(f"{key}: {value!r} is not an origin (https://host[:port])") from None
    origin, path = url.split("/", 3)[:3], url.split("/", 3)[3:]
    if path and path[0]:
        raise ConfigError(f"{key}: {value!r} has a path; give an origin (https://host)")
    return "/".join(origin)


def robots_from_is_url(value: str) -> bool:
    """--robots-from names a URL (fetched once) rather than a file."""
    return value.lower().startswith(("http://", "https://"))


def _check_tls(ca_bundle: Path | None, insecure: bool) -> None:
    """The CA bundle is read now, so a typo fails before any request."""
    if ca_bundle is None:
        return
    if insecure:
        raise ConfigError("give ca_bundle or insecure, not both: insecure checks no certificate")
    if not ca_bundle.is_file():
        raise ConfigError(f"ca_bundle: no such file: {ca_bundle}")
    try:
        ssl.create_default_context().load_verify_locations(cafile=str(ca_bundle))
    except ssl.SSLError:
        raise ConfigError(f"ca_bundle {ca_bundle} holds no PEM certificate") from None
    except OSError as exc:
        raise ConfigError(f"ca_bundle: cannot read {ca_bundle}: {exc.strerror or exc}") from None


def _check_robots_from(value: str | None) -> None:
    """A --robots-from file must be readable now; a URL is fetched when the crawl starts."""
    if value is None:
        return
    if not value.strip():
        raise ConfigError("robots_from must name a URL or a file")
    if robots_from_is_url(value):
        normalize(value)  # InvalidURLError (exit 2) naming what is wrong
        return
    path = Path(value)
    if not path.is_file():
        raise ConfigError(f"robots_from: no such file: {value} (or give an http(s):// URL)")
    if not os.access(path, os.R_OK):
        raise ConfigError(f"robots_from: cannot read {value}: permission denied")


#: Keys whose values are secrets: an error about one never quotes its value.
SECRET_KEYS = frozenset({"auth", "header", "cookie", "proxy", "notify_url", "bing_api_key"})


#: Keys whose values go to one origin only: from a config or the environment, auth_origin's
#: (else the configured url's); from the command line, the command's target's.
BOUND_KEYS = ("auth", "header", "cookie")


def withhold_secrets(
    config: Config,
    layers: Sequence[tuple[Mapping[str, Any], Callable[[str], str]]],
    given: Mapping[str, Any],
    target: str,
) -> str | None:
    """Clear the credentials the config file or the environment gave for another origin
    than `target`'s, and say so in one line (None: nothing withheld). An exported staging
    password must not follow the operator to whatever host a later command names.
    `layers`: (values, how a key of them is named), lowest first; `given`: the command
    line's values, whose credentials are for its target whatever it is."""
    named: dict[str, str] = {}
    for values, name in layers:
        named.update({key: name(key) for key in BOUND_KEYS if values.get(key)})
    named = {key: text for key, text in named.items() if key not in given}
    if not named:
        return None
    bound = config.auth_origin
    if bound is None:
        urls = [values["url"] for values, _ in layers if values.get("url")]
        bound = _origin_of(urls[-1]) if urls else None
    to = _origin_of(target)
    if bound == to:
        return None
    for key in named:
        setattr(config, key, None if key == "auth" else ())
    what = ", ".join(named.values())
    verb = "is" if len(named) == 1 else "are"
    if bound is None:
        return (
            f"{what} {verb} for no origin (give auth_origin or url beside it, e.g. "
            f"{env_var('auth_origin')}), not sent to {to}"
        )
    return f"{what} {verb} for {bound}, not sent to {to}"


def _origin_of(url: str) -> str:
    return join_parts(normalize(url))[1]


#: Settings that change neither which URLs are met nor how they are judged: a crawl saved
#: with --state may be resumed with other values for these.
_NOT_FINGERPRINTED = frozenset(
    {
        "output",
        "max_shrink",
        "max_error_rate",
        "max_bot_blocked",
        "force",
        "gzip",
        "format",
        "max_urls_per_file",
        "max_bytes_per_file",
        "groups",
        "report",
        "decisions",
        "changes",
        "feed",
        "feed_days",
        "llms_txt_max_links",
        "stylesheet",
        "stylesheet_url",
        "quiet",
        "log_format",
        "metrics",
        "on_publish",
        "on_failure",
        "notify_url",
        "notify_on_success",
        "notify_format",
        "submit",
        "google_key_file",
        "google_property",
        "bing_api_key",
        "bing_site",
        "publish_to",
        "publish_endpoint",
        "publish_region",
        "state",
        "resume",
        "fresh",
        "lastmod",
        "concurrency",
        "workers",
        "delay",
        "max_rps",
        "max_crawl_delay",
        "retries",
        "max_retry_after",
        "timeout",
        # how the site is reached, not what is on it; secrets are never stored anywhere
        "auth",
        "header",
        "cookie",
        "proxy",
        "ca_bundle",
        "insecure",
        "auth_origin",
        "resolve",
        "cross_host",
        "max_time",
        # how pages are rendered, not which: the browser, its pace
        "render_timeout",
        "render_concurrency",
        "chromium_path",
    }
)


def fingerprint(config: Config) -> str:
    """A digest of the settings that decide a crawl's result, stored in its state file so a
    resume with another configuration is refused instead of mixing two crawls."""
    return hashlib.sha256(settings(config).encode()).hexdigest()


def settings(config: Config) -> str:
    """The settings fingerprint() digests, as JSON text: stored beside it, so that a refused
    resume can name the settings that differ. Secrets are never among them (see above)."""
    values = {f.name: getattr(config, f.name) for f in fields() if f.name not in _NOT_FINGERPRINTED}
    return json.dumps(values, sort_keys=True, default=str)


def default_of(spec: dataclasses.Field) -> Any:
    """The default value of a Config field (for --help and the docs)."""
    if spec.default is not dataclasses.MISSING:
        return spec.default
    if spec.default_factory is not dataclasses.MISSING:
        return spec.default_factory()
    return None


def fields() -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(Config)


def _kind(spec: dataclasses.Field) -> str:
    """The value kind of a field, from its annotation: bool, int, float, path, list or str."""
    text = str(spec.type)
    for kind in ("bool", "int", "float", "tuple"):
        if text.startswith(kind):
            return kind
    return "path" if "Path" in text else "str"


def coerce(name: str, value: Any) -> Any:
    """Convert a TOML or CLI value to the field's type, or raise ConfigError naming the key."""
    spec = next((f for f in fields() if f.name == name), None)
    if spec is None:
        raise ConfigError(f"unknown config key {name!r}")
    kind = _kind(spec)
    optional = "None" in str(spec.type)
    if value is None and optional:
        return None
    ok = {
        "bool": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "tuple": lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v),
        "path": lambda v: isinstance(v, (str, Path)) and str(v) != "",
        "str": lambda v: isinstance(v, str),
    }[kind]
    if not ok(value):
        wanted = {
            "bool": "true or false",
            "int": "a whole number",
            "float": "a number",
            "tuple": "a list of strings",
            "path": "a path",
            "str": "a string",
        }[kind]
        got = "(the value is not shown)" if name in SECRET_KEYS else f"got {value!r}"
        raise ConfigError(f"{name} must be {wanted}, {got}")
    if kind == "float":
        return float(value)
    if kind == "tuple":
        return tuple(value)
    if kind == "path":
        return Path(value)
    return value


def load_toml(path: Path) -> dict[str, Any]:
    """Read a config file into {key: value}; unknown keys and bad types are errors."""
    import tomllib  # only with a config file: not a start-up import of every crawl

    try:
        text = path.read_text(encoding="utf-8")
        raw = tomllib.loads(text)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not valid TOML: {exc}{_table_hint(text)}"
        ) from None
    known = {spec.name for spec in fields()}
    if "groups" in raw:
        _no_keys_in_groups(raw["groups"], known - {"include"})
        raw["groups"] = group_items(raw["groups"])
    news = raw.pop("news", None)
    if news is not None:
        if not isinstance(news, dict):
            raise ConfigError(
                f"news must be a table ([news] with name, language, articles), got {news!r}"
            )
        for key, value in news.items():
            if key not in NEWS_KEYS:
                raise ConfigError(f"unknown key {key!r} in [news] (known: {', '.join(NEWS_KEYS)})")
            name = f"news_{key}"
            if name in raw:
                raise ConfigError(f"{name} is set twice: as a key and in [news]")
            raw[name] = value
    for key in raw:
        if key not in known:
            raise ConfigError(f"unknown key {key!r} in {path}{did_you_mean(key, known)}")
    return {key: coerce(key, value) for key, value in raw.items()}


def _no_keys_in_groups(tables: object, known: set[str]) -> None:
    """A top-level key written after a [[groups]] header lands in that table: say so, rather
    than call it an unknown key of the group."""
    for table in tables if isinstance(tables, list) else ():
        stray = sorted(set(table) & known) if isinstance(table, dict) else []
        if stray:
            raise ConfigError(
                f"{stray[0]} is inside a [[groups]] table: put [[groups]] tables at the end of"
                " the file, after every top-level key"
            )


def _table_hint(text: str) -> str:
    """A hint for the likeliest cause of a cryptic TOML error in a file with tables: a key
    after a ``[[groups]]`` or ``[news]`` header belongs to that table, and a ``groups = []``
    key cannot take ``[[groups]]`` tables too."""
    if not re.search(r"^\s*\[\[?\s*(groups|news)\b", text, re.MULTILINE):
        return ""
    return (
        " (hint: put [[groups]] and [news] tables at the end of the file, after every"
        " top-level key, and drop any groups = [] line)"
    )


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """'; did you mean 'x'?' for the closest known name, or '' when none is close: a typo in
    a config file is the likeliest reason for an unknown key."""
    import difflib  # a typo's suggestion only

    close = difflib.get_close_matches(word, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


#: The keys of the config file's [news] table: [news] name = ... is the key news_name.
NEWS_KEYS = ("name", "language", "articles")


#: The prefix of the environment variables that set config keys: SITEMAP_CRAWLER_<KEY>.
ENV_PREFIX = "SITEMAP_CRAWLER_"
#: SITEMAP_CRAWLER_* variables that are not config keys: the tool's own switches
#: (a traceback, the event loop, the job's config file), what --on-publish tells its
#: command (named so that none is a key: a hook that runs sitemap-crawler again must not
#: take the crawl's output or sitemap URL for its own settings), and the test suite's
#: (SHARED, and TEST_*), which a crawl run by a test inherits.
ENV_NOT_KEYS = frozenset(
    ENV_PREFIX + name
    for name in (
        "DEBUG", "LOOP", "CONFIG", "PUBLISHED_DIR", "PUBLISHED_URL", "PUBLISHED_FILES", "SHARED",
        "FAILED_EXIT_CODE", "FAILED_REASON", "FAILED_SUMMARY",  # what --on-failure is told
    )
)  # fmt: skip
ENV_NOT_KEYS_PREFIX = ENV_PREFIX + "TEST_"
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def env_var(key: str) -> str:
    """The environment variable that sets a config key."""
    return ENV_PREFIX + key.upper()


def from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The config keys set in `environ` as SITEMAP_CRAWLER_<KEY>, parsed to each key's type.
    Lists: one item a line, for every list key (a newline is the one separator no item can
    hold); the lists of plain words (listed_types, strip_params, ...) take commas too, and the
    repeatable keys, whose items may hold commas (header, cookie, include, exclude,
    exclude_listing_only, news_articles, groups), only lines. An empty list variable (or `[]`) is
    the empty list, as an empty list option on the command line is (SEARCH_ENGINES='' says
    none, in an env-only container job); any other empty variable counts as unset. A bad value
    or an unknown SITEMAP_CRAWLER_* variable is a ConfigError
    naming the variable (never quoting a secret's value)."""
    specs = {env_var(spec.name): spec for spec in fields()}
    values: dict[str, Any] = {}
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in ENV_NOT_KEYS:
            continue
        if name.startswith(ENV_NOT_KEYS_PREFIX):
            continue
        spec = specs.get(name)
        if spec is None:
            raise ConfigError(
                f"unknown environment variable {name}: no config key "
                f"{name[len(ENV_PREFIX) :].lower()!r}{did_you_mean(name, specs)} (unset it, "
                "or see docs/reference.md)"
            )
        text = environ[name]
        if text.strip() in ("", "[]") and _kind(spec) == "tuple":
            values[spec.name] = ()
            continue
        if text.strip() == "":
            continue
        values[spec.name] = _parse_env(name, spec, text)
    return values


def _parse_env(name: str, spec: dataclasses.Field, text: str) -> Any:
    kind = _kind(spec)
    shown = "(the value is not shown)" if spec.name in SECRET_KEYS else f"got {text!r}"
    word = text.strip()
    if kind == "bool":
        if word.lower() in _TRUE:
            return True
        if word.lower() in _FALSE:
            return False
        raise ConfigError(f"{name} must be true or false, {shown}")
    if kind == "int":
        try:
            return int(word)
        except ValueError:
            raise ConfigError(f"{name} must be a whole number, {shown}") from None
    if kind == "float":
        try:
            number = float(word)
        except ValueError:
            raise ConfigError(f"{name} must be a number, {shown}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ConfigError(f"{name} must be a finite number, {shown}")
        return number
    if kind == "tuple":  # one item a line; a list of plain words may use commas too
        lines = text.splitlines()
        parts = lines if spec.metadata["repeat"] else [p for line in lines for p in line.split(",")]
        return tuple(part.strip() for part in parts if part.strip())
    if kind == "path":
        return Path(word)
    return text if spec.name in SECRET_KEYS else word


def build(file_values: dict[str, Any], cli_values: dict[str, Any]) -> Config:
    """Defaults < file (and the environment, merged over it by the caller) < command line,
    then validated."""
    values = {**file_values, **{k: coerce(k, v) for k, v in cli_values.items()}}
    return Config(**values).validate()
